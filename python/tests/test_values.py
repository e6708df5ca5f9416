"""numpy interop: element types, strings, layouts, lists, zero-size and 0-d tensors, OrtValue,
IOBinding, sequences and optionals."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onyx

RNG = np.random.default_rng(99)


def sample(dtype, shape=(2, 3)):
    """Values of `dtype` covering its range (negatives for signed types)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype == np.bool_:
        return (RNG.integers(0, 2, n) == 1).reshape(shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        vals = RNG.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        vals[0], vals[-1] = info.min, info.max
        return vals.reshape(shape)
    if dtype.kind == "c":
        return (RNG.standard_normal(n) + 1j * RNG.standard_normal(n)).astype(dtype).reshape(shape)
    return (RNG.standard_normal(n) * 100).astype(dtype).reshape(shape)


NUMERIC = [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64, np.bool_]


# --- element types ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda t: np.dtype(t).name)
def test_identity_round_trip(identity_model, ort, ort_run, dtype):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    path = identity_model(elem, [2, 3])
    sess = onyx.InferenceSession(str(path))
    ref_sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert sess.get_inputs()[0].type == ref_sess.get_inputs()[0].type
    x = sample(dtype)
    (y,) = sess.run(None, {"X": x})
    assert isinstance(y, np.ndarray)
    assert y.dtype == x.dtype
    assert y.shape == x.shape
    np.testing.assert_array_equal(y, x)
    (ref,) = ort_run(path, {"X": x})
    assert ref.dtype == y.dtype
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=lambda t: np.dtype(t).name)
def test_identity_complex(identity_model, dtype):
    # onnxruntime has no complex tensors; numpy is the reference
    path = identity_model(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), [2, 3])
    x = sample(dtype)
    (y,) = onyx.InferenceSession(str(path)).run(None, {"X": x})
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("src,dst", [(np.float32, np.int32), (np.int64, np.float64), (np.float32, np.float16),
                                     (np.uint8, np.float32), (np.float64, np.bool_)],
                         ids=lambda t: np.dtype(t).name)
def test_cast(cast_model, ort_run, src, dst):
    path = cast_model(helper.np_dtype_to_tensor_dtype(np.dtype(src)), helper.np_dtype_to_tensor_dtype(np.dtype(dst)))
    x = (sample(np.float32, (3, 4)) / 10).astype(src) if np.dtype(src).kind == "f" else sample(src, (3, 4))
    (y,) = onyx.InferenceSession(str(path)).run(None, {"X": x})
    (ref,) = ort_run(path, {"X": x})
    assert y.dtype == ref.dtype == np.dtype(dst)
    np.testing.assert_array_equal(y, ref)


def test_bfloat16(identity_model, cast_model, ort_run):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = np.dtype(ml_dtypes.bfloat16)
    x = np.array([[1.5, -2.0, 3.25], [0.0, -0.0, 1e10]], dtype=np.float32).astype(bf16)
    path = identity_model(TensorProto.BFLOAT16, [2, 3])
    sess = onyx.InferenceSession(str(path))
    assert sess.get_inputs()[0].type == "tensor(bfloat16)"
    (y,) = sess.run(None, {"X": x})
    assert y.dtype == bf16
    np.testing.assert_array_equal(y.view(np.uint16), x.view(np.uint16))

    # bfloat16 -> float: onnxruntime computes the reference from the float side
    to_float = cast_model(TensorProto.BFLOAT16, TensorProto.FLOAT)
    (f,) = onyx.InferenceSession(str(to_float)).run(None, {"X": x})
    np.testing.assert_array_equal(f, x.astype(np.float32))
    from_float = cast_model(TensorProto.FLOAT, TensorProto.BFLOAT16)
    xf = sample(np.float32, (4, 5))
    (b,) = onyx.InferenceSession(str(from_float)).run(None, {"X": xf})
    assert b.dtype == bf16
    np.testing.assert_array_equal(b.astype(np.float32), xf.astype(bf16).astype(np.float32))

    with pytest.raises(onyx.InvalidArgument, match="'X'"):
        sess.run(None, {"X": x.astype(np.float32)})


# --- strings ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["object", "unicode", "list"])
def test_string_round_trip(string_path, ort_run, kind):
    words = ["alpha", "", "bé ta", "日本語", "x" * 100]
    x = {"object": np.array(words, dtype=object), "unicode": np.array(words), "list": words}[kind]
    sess = onyx.InferenceSession(str(string_path))
    assert sess.get_inputs()[0].type == "tensor(string)"
    (y,) = sess.run(None, {"X": x})
    assert y.dtype == object
    assert all(type(s) is str for s in y)
    assert y.tolist() == words
    (ref,) = ort_run(string_path, {"X": np.array(words, dtype=object)})
    assert y.tolist() == ref.tolist()


def test_string_output_from_cast(cast_model, ort_run):
    path = cast_model(TensorProto.FLOAT, TensorProto.STRING)
    x = np.array([[1.5, -2.0], [0.25, 100.0]], dtype=np.float32)
    (y,) = onyx.InferenceSession(str(path)).run(None, {"X": x})
    (ref,) = ort_run(path, {"X": x})
    assert y.dtype == object and y.shape == (2, 2)
    assert [float(s) for s in y.ravel()] == x.ravel().tolist()
    assert [float(s) for s in y.ravel()] == [float(s) for s in ref.ravel()]


def test_string_input_wrong_type(string_path, identity_model):
    sess = onyx.InferenceSession(str(string_path))
    with pytest.raises(onyx.InvalidArgument, match="'X'"):
        sess.run(None, {"X": np.array([1.0, 2.0], dtype=np.float32)})
    fsess = onyx.InferenceSession(str(identity_model(TensorProto.FLOAT, [2])))
    with pytest.raises(onyx.InvalidArgument, match="'X'"):
        fsess.run(None, {"X": np.array(["a", "b"], dtype=object)})


# --- layouts, lists, shapes ------------------------------------------------------------------------


def test_non_contiguous_inputs(add_path):
    sess = onyx.InferenceSession(str(add_path))
    base = sample(np.float32, (3, 2))
    b = sample(np.float32, (2, 3))
    views = {
        "transposed": base.T,
        "sliced": sample(np.float32, (4, 6))[::2, 1::2],
        "fortran": np.asfortranarray(sample(np.float32, (2, 3))),
        "negative stride": sample(np.float32, (2, 3))[::-1, ::-1],
    }
    for label, view in views.items():
        assert view.shape == (2, 3)
        assert not view.flags.c_contiguous, label
        got = sess.run(None, {"A": view, "B": b})[0]
        want = sess.run(None, {"A": np.ascontiguousarray(view), "B": b})[0]
        np.testing.assert_array_equal(got, want, err_msg=label)
        np.testing.assert_array_equal(got, view + b, err_msg=label)


def test_big_endian_input(add_path):
    sess = onyx.InferenceSession(str(add_path))
    a = sample(np.float32)
    b = sample(np.float32)
    (c,) = sess.run(None, {"A": a.astype(">f4"), "B": b})
    np.testing.assert_array_equal(c, a + b)


def test_list_input_converted(add_path, identity_model, ort_run):
    sess = onyx.InferenceSession(str(add_path))
    a = [[1, 2, 3], [4, 5, 6]]  # ints: converted to the input's float
    b = sample(np.float32)
    (c,) = sess.run(None, {"A": a, "B": b})
    assert c.dtype == np.float32
    np.testing.assert_array_equal(c, np.asarray(a, dtype=np.float32) + b)
    np.testing.assert_array_equal(c, ort_run(add_path, {"A": np.asarray(a, np.float32), "B": b})[0])

    ipath = identity_model(TensorProto.INT64, [3])
    (y,) = onyx.InferenceSession(str(ipath)).run(None, {"X": [7, -8, 9]})
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, np.array([7, -8, 9], dtype=np.int64))


def test_float64_into_float_input_raises(add_path):
    sess = onyx.InferenceSession(str(add_path))
    with pytest.raises(onyx.InvalidArgument, match="'A'") as info:
        sess.run(None, {"A": np.zeros((2, 3)), "B": np.zeros((2, 3), np.float32)})
    assert "float" in str(info.value)


def test_outputs_writable_and_independent(add_path):
    sess = onyx.InferenceSession(str(add_path))
    a, b = sample(np.float32), sample(np.float32)
    (first,) = sess.run(None, {"A": a, "B": b})
    kept = first.copy()
    assert first.flags.writeable
    assert not np.shares_memory(first, a) and not np.shares_memory(first, b)
    (second,) = sess.run(None, {"A": a * 2, "B": b * 2})
    np.testing.assert_array_equal(first, kept)
    np.testing.assert_array_equal(second, (a * 2) + (b * 2))
    assert not np.shares_memory(first, second)
    first[...] = -1
    (third,) = sess.run(None, {"A": a, "B": b})
    np.testing.assert_array_equal(third, kept)
    np.testing.assert_array_equal(second, (a * 2) + (b * 2))


def test_outputs_outlive_session(add_path):
    a, b = sample(np.float32), sample(np.float32)
    sess = onyx.InferenceSession(str(add_path))
    (c,) = sess.run(None, {"A": a, "B": b})
    del sess
    import gc

    gc.collect()
    np.testing.assert_array_equal(c, a + b)


def test_zero_size(add_path, identity_model, ort_run):
    sess = onyx.InferenceSession(str(add_path))
    empty = np.zeros((0, 3), np.float32)
    (c,) = sess.run(None, {"A": empty, "B": empty})
    assert c.shape == (0, 3) and c.dtype == np.float32
    path = identity_model(TensorProto.INT32, None)
    for shape in [(0,), (2, 0, 4), (0, 0)]:
        x = np.zeros(shape, np.int32)
        (y,) = onyx.InferenceSession(str(path)).run(None, {"X": x})
        assert y.shape == shape and y.dtype == np.int32


def test_scalars(identity_model, ort_run):
    path = identity_model(TensorProto.FLOAT, [])
    sess = onyx.InferenceSession(str(path))
    assert list(sess.get_inputs()[0].shape) == []
    x = np.array(3.25, dtype=np.float32)
    (y,) = sess.run(None, {"X": x})
    assert y.shape == () and y.dtype == np.float32
    assert y == x
    np.testing.assert_array_equal(y, ort_run(path, {"X": x})[0])
    (y2,) = sess.run(None, {"X": 1.5})  # a Python float
    assert y2.shape == () and y2 == np.float32(1.5)
    (y3,) = sess.run(None, {"X": np.float32(-2.0)})  # a numpy scalar
    assert y3.shape == () and y3 == np.float32(-2.0)


def test_rank_free_input(identity_model):
    sess = onyx.InferenceSession(str(identity_model(TensorProto.FLOAT, None)))
    for shape in [(), (5,), (2, 3, 4), (1, 1, 1, 1, 2)]:
        x = sample(np.float32, shape)
        (y,) = sess.run(None, {"X": x})
        np.testing.assert_array_equal(y, x)


# --- OrtValue --------------------------------------------------------------------------------------


def test_ortvalue_from_numpy_shares_memory():
    arr = sample(np.float32, (2, 3))
    v = onyx.OrtValue.ortvalue_from_numpy(arr)
    assert v.data_ptr() == arr.ctypes.data
    out = v.numpy()
    np.testing.assert_array_equal(out, arr)
    assert np.shares_memory(out, arr)
    arr[0, 0] = 12345.0
    assert v.numpy()[0, 0] == 12345.0
    assert v.shape() == [2, 3]
    assert v.data_type() == "tensor(float)"
    assert v.device_name() == "cpu"
    assert v.is_tensor()
    assert v.has_value()
    assert not v.is_tensor_sequence()
    assert not v.is_sparse_tensor()
    assert v.element_type() == np.float32


@pytest.mark.parametrize("dtype,type_string", [(np.float64, "double"), (np.int64, "int64"), (np.uint8, "uint8"),
                                               (np.bool_, "bool"), (np.float16, "float16"), (np.int32, "int32")])
def test_ortvalue_data_type(dtype, type_string):
    arr = sample(dtype, (3,))
    v = onyx.OrtValue.ortvalue_from_numpy(arr)
    assert v.data_type() == f"tensor({type_string})"
    assert v.numpy().dtype == arr.dtype
    np.testing.assert_array_equal(v.numpy(), arr)


def test_ortvalue_strings():
    words = np.array(["a", "bc", ""], dtype=object)
    v = onyx.OrtValue.ortvalue_from_numpy(words)
    assert v.data_type() == "tensor(string)"
    assert v.numpy().tolist() == words.tolist()


def test_ortvalue_from_shape_and_type_and_update_inplace():
    v = onyx.OrtValue.ortvalue_from_shape_and_type([2, 4], np.int64)
    assert v.shape() == [2, 4]
    assert v.data_type() == "tensor(int64)"
    assert v.numpy().dtype == np.int64
    src = sample(np.int64, (2, 4))
    v.update_inplace(src)
    np.testing.assert_array_equal(v.numpy(), src)
    src2 = sample(np.int64, (2, 4))
    view = v.numpy()
    v.update_inplace(src2)
    np.testing.assert_array_equal(view, src2)  # in place: the earlier view sees it
    with pytest.raises(onyx.Error):
        v.update_inplace(src2.astype(np.float32))
    with pytest.raises(onyx.Error):
        v.update_inplace(src2[:, :2])


def test_ortvalue_update_inplace_reaches_numpy_source():
    arr = np.zeros((3,), np.float32)
    v = onyx.OrtValue.ortvalue_from_numpy(arr)
    new = sample(np.float32, (3,))
    v.update_inplace(new)
    np.testing.assert_array_equal(arr, new)


def test_ortvalue_device_cuda_rejected():
    arr = sample(np.float32, (2,))
    with pytest.raises(onyx.InvalidArgument):
        onyx.OrtValue.ortvalue_from_numpy(arr, "cuda", 0)
    with pytest.raises(onyx.InvalidArgument):
        onyx.OrtValue.ortvalue_from_shape_and_type([2], np.float32, "cuda", 0)


def test_run_with_ort_values(add_path, ort_run):
    sess = onyx.InferenceSession(str(add_path))
    a, b = sample(np.float32), sample(np.float32)
    outs = sess.run_with_ort_values(None, {"A": onyx.OrtValue.ortvalue_from_numpy(a),
                                           "B": onyx.OrtValue.ortvalue_from_numpy(b)})
    assert len(outs) == 1
    assert isinstance(outs[0], onyx.OrtValue)
    assert outs[0].shape() == [2, 3]
    np.testing.assert_array_equal(outs[0].numpy(), ort_run(add_path, {"A": a, "B": b})[0])
    (named,) = sess.run_with_ort_values(["C"], {"A": onyx.OrtValue.ortvalue_from_numpy(a),
                                                "B": onyx.OrtValue.ortvalue_from_numpy(b)})
    np.testing.assert_array_equal(named.numpy(), a + b)
    with pytest.raises(onyx.InvalidArgument, match="'A'"):
        sess.run_with_ort_values(None, {"A": onyx.OrtValue.ortvalue_from_numpy(a.astype(np.float64)),
                                        "B": onyx.OrtValue.ortvalue_from_numpy(b)})


def test_run_accepts_ortvalue_in_feed(add_path):
    """onnxruntime's run() takes OrtValues in input_feed as well as arrays."""
    sess = onyx.InferenceSession(str(add_path))
    a, b = sample(np.float32), sample(np.float32)
    (c,) = sess.run(None, {"A": onyx.OrtValue.ortvalue_from_numpy(a), "B": b})
    np.testing.assert_array_equal(c, a + b)


# --- IOBinding -------------------------------------------------------------------------------------


def test_iobinding_cpu_input_and_output(add_path, ort_run):
    sess = onyx.InferenceSession(str(add_path))
    a, b = sample(np.float32), sample(np.float32)
    binding = sess.io_binding()
    binding.bind_cpu_input("A", a)
    binding.bind_cpu_input("B", b)
    binding.bind_output("C")
    binding.synchronize_inputs()
    sess.run_with_iobinding(binding)
    binding.synchronize_outputs()
    (c,) = binding.copy_outputs_to_cpu()
    np.testing.assert_array_equal(c, ort_run(add_path, {"A": a, "B": b})[0])
    (ov,) = binding.get_outputs()
    assert isinstance(ov, onyx.OrtValue)
    assert ov.shape() == [2, 3]
    np.testing.assert_array_equal(ov.numpy(), a + b)


def test_iobinding_rebind_in_place(add_path):
    """Inputs bound from arrays are used in place: changing the array changes the next run."""
    sess = onyx.InferenceSession(str(add_path))
    a, b = sample(np.float32), sample(np.float32)
    binding = sess.io_binding()
    binding.bind_cpu_input("A", a)
    binding.bind_cpu_input("B", b)
    binding.bind_output("C")
    sess.run_with_iobinding(binding)
    first = binding.copy_outputs_to_cpu()[0].copy()
    np.testing.assert_array_equal(first, a + b)
    a[...] = sample(np.float32)
    sess.run_with_iobinding(binding)
    second = binding.copy_outputs_to_cpu()[0]
    np.testing.assert_array_equal(second, a + b)
    assert not np.array_equal(first, second)


def test_iobinding_output_into_ortvalue(add_path):
    sess = onyx.InferenceSession(str(add_path))
    a, b = sample(np.float32), sample(np.float32)
    out = np.zeros((2, 3), np.float32)
    target = onyx.OrtValue.ortvalue_from_numpy(out)
    binding = sess.io_binding()
    binding.bind_cpu_input("A", a)
    binding.bind_cpu_input("B", b)
    binding.bind_ortvalue_output("C", target)
    sess.run_with_iobinding(binding)
    np.testing.assert_array_equal(out, a + b)  # the result landed in the array's memory
    (got,) = binding.get_outputs()
    assert got.data_ptr() == out.ctypes.data
    a[...] = 1.0
    sess.run_with_iobinding(binding)
    np.testing.assert_array_equal(out, 1.0 + b)


def test_iobinding_output_into_raw_buffer(add_path):
    sess = onyx.InferenceSession(str(add_path))
    a, b = sample(np.float32), sample(np.float32)
    out = np.zeros((2, 3), np.float32)
    binding = sess.io_binding()
    binding.bind_cpu_input("A", a)
    binding.bind_cpu_input("B", b)
    binding.bind_output("C", "cpu", 0, np.float32, [2, 3], out.ctypes.data)
    sess.run_with_iobinding(binding)
    np.testing.assert_array_equal(out, a + b)


def test_iobinding_input_from_pointer(add_path):
    sess = onyx.InferenceSession(str(add_path))
    a, b = sample(np.float32), sample(np.float32)
    binding = sess.io_binding()
    binding.bind_input("A", "cpu", 0, np.float32, list(a.shape), a.ctypes.data)
    binding.bind_cpu_input("B", b)
    binding.bind_output("C")
    sess.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], a + b)
    a[...] = -3.0  # the pointer is read at run time
    sess.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], -3.0 + b)


def test_iobinding_ortvalue_input(add_path):
    sess = onyx.InferenceSession(str(add_path))
    a, b = sample(np.float32), sample(np.float32)
    binding = sess.io_binding()
    binding.bind_ortvalue_input("A", onyx.OrtValue.ortvalue_from_numpy(a))
    binding.bind_ortvalue_input("B", onyx.OrtValue.ortvalue_from_numpy(b))
    binding.bind_output("C")
    sess.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], a + b)


def test_iobinding_clear(add_path):
    sess = onyx.InferenceSession(str(add_path))
    a, b = sample(np.float32), sample(np.float32)
    binding = sess.io_binding()
    binding.bind_cpu_input("A", a)
    binding.bind_cpu_input("B", b)
    out = np.zeros((2, 3), np.float32)
    binding.bind_ortvalue_output("C", onyx.OrtValue.ortvalue_from_numpy(out))
    sess.run_with_iobinding(binding)
    np.testing.assert_array_equal(out, a + b)

    # outputs cleared: the inputs stay, the result no longer goes to `out`
    binding.clear_binding_outputs()
    out[...] = 0
    binding.bind_output("C")
    sess.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], a + b)
    np.testing.assert_array_equal(out, 0)

    # inputs cleared: a run without them fails; bound again, it works
    binding.clear_binding_inputs()
    with pytest.raises(onyx.Error, match="'A'"):
        sess.run_with_iobinding(binding)
    a2, b2 = sample(np.float32), sample(np.float32)
    binding.bind_cpu_input("A", a2)
    binding.bind_cpu_input("B", b2)
    sess.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], a2 + b2)


def test_iobinding_output_subset_and_order(multi_out_path, ort_run):
    sess = onyx.InferenceSession(str(multi_out_path))
    a, b = sample(np.float32, (3, 4)), sample(np.float32, (3, 4))
    ref = dict(zip(["S", "P", "N"], ort_run(multi_out_path, {"A": a, "B": b})))
    binding = sess.io_binding()
    binding.bind_cpu_input("A", a)
    binding.bind_cpu_input("B", b)
    binding.bind_output("N")
    binding.bind_output("S")
    sess.run_with_iobinding(binding)
    outs = binding.copy_outputs_to_cpu()
    assert len(outs) == 2
    np.testing.assert_array_equal(outs[0], ref["N"])
    np.testing.assert_array_equal(outs[1], ref["S"])


def test_iobinding_errors(add_path):
    sess = onyx.InferenceSession(str(add_path))
    binding = sess.io_binding()
    with pytest.raises(onyx.Error, match="nope"):
        binding.bind_cpu_input("nope", sample(np.float32))
    with pytest.raises(onyx.Error, match="nope"):
        binding.bind_output("nope")
    with pytest.raises(onyx.InvalidArgument):
        binding.bind_output("C", "cuda")
    a = sample(np.float32)
    with pytest.raises(onyx.InvalidArgument):
        binding.bind_input("A", "cuda", 0, np.float32, [2, 3], a.ctypes.data)
    with pytest.raises(onyx.InvalidArgument, match="'A'"):
        binding.bind_cpu_input("A", a.astype(np.float64))


def test_iobinding_with_run_options(loop_path):
    sess = onyx.InferenceSession(str(loop_path))
    binding = sess.io_binding()
    binding.bind_cpu_input("trip_count", np.array(6, np.int64))
    binding.bind_cpu_input("V", np.zeros(4, np.float32))
    binding.bind_output("V_out")
    ro = onyx.RunOptions()
    sess.run_with_iobinding(binding, ro)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], np.full(4, 6, np.float32))
    ro.terminate = True
    with pytest.raises(onyx.Cancelled):
        sess.run_with_iobinding(binding, ro)


# --- sequences and optionals -----------------------------------------------------------------------


def test_sequence_input(sequence_path, ort_run):
    sess = onyx.InferenceSession(str(sequence_path))
    items = [sample(np.float32, (2, 3)), sample(np.float32, (1, 3)), sample(np.float32, (4, 3))]
    y, length = sess.run(None, {"S": items})
    ref_y, ref_len = ort_run(sequence_path, {"S": items})
    np.testing.assert_array_equal(y, np.concatenate(items, axis=0))
    np.testing.assert_array_equal(y, ref_y)
    assert length.dtype == np.int64 and int(length) == len(items) == int(ref_len)
    # a tuple works as a list
    y2, _ = sess.run(None, {"S": tuple(items)})
    np.testing.assert_array_equal(y2, y)


def test_sequence_input_errors(sequence_path):
    sess = onyx.InferenceSession(str(sequence_path))
    with pytest.raises(onyx.InvalidArgument, match="'S'"):
        sess.run(None, {"S": sample(np.float32, (2, 3))})
    with pytest.raises(onyx.InvalidArgument, match="S"):
        sess.run(None, {"S": [sample(np.float32, (2, 3)), sample(np.float64, (2, 3))]})


def test_optional_input(optional_path, ort_run):
    sess = onyx.InferenceSession(str(optional_path))
    x = sample(np.float32, (3,))
    (with_value,) = sess.run(None, {"O": x})
    (without,) = sess.run(None, {"O": None})
    assert with_value.dtype == np.bool_ and without.dtype == np.bool_
    np.testing.assert_array_equal(with_value, ort_run(optional_path, {"O": x})[0])
    np.testing.assert_array_equal(without, ort_run(optional_path, {"O": None})[0])
    assert bool(with_value) != bool(without)
