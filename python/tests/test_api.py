"""onyx's onnxruntime-shaped API: sessions, options, providers, metadata, errors; and onyx's
additions (placement, registration, providers(), explain(), init())."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import onnx
from onnx import TensorProto, helper

import onyx

RNG = np.random.default_rng(1234)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def usable(ort_name: str) -> bool:
    return ort_name in onyx.get_available_providers()


def need(ort_name: str) -> None:
    if not usable(ort_name):
        pytest.skip(f"{ort_name} is not usable on this machine")


def cli_binary() -> Path | None:
    """The onyx CLI of the build this package came from (<build>/bin/onyx), or of the repo's build/."""
    candidates = [Path(onyx.__file__).resolve().parents[2] / "bin" / "onyx",
                  Path(__file__).resolve().parents[2] / "build" / "bin" / "onyx"]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    return None


@pytest.fixture
def add_feed():
    return {"A": rand(2, 3), "B": rand(2, 3)}


@pytest.fixture
def reset_environment():
    """Resets onyx.init()'s environment providers after the test."""
    yield
    onyx.init(providers=[])


# --- creating sessions ---------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["str", "path", "bytes", "bytearray"])
def test_session_from_path_str_bytes(add_path, add_feed, ort_run, form):
    src = {"str": str(add_path), "path": Path(add_path), "bytes": add_path.read_bytes(),
           "bytearray": bytearray(add_path.read_bytes())}[form]
    sess = onyx.InferenceSession(src)
    (c,) = sess.run(None, add_feed)
    (ref,) = ort_run(add_path, add_feed)
    assert isinstance(c, np.ndarray)
    assert c.dtype == np.float32
    np.testing.assert_array_equal(c, ref)
    np.testing.assert_array_equal(c, add_feed["A"] + add_feed["B"])


def test_session_from_unsupported_type():
    with pytest.raises(TypeError):
        onyx.InferenceSession(12345)


def test_session_unknown_keyword(add_path):
    with pytest.raises(TypeError):
        onyx.InferenceSession(str(add_path), no_such_keyword=1)


# --- inputs, outputs, initializers, metadata -----------------------------------------------------


def _io(args):
    return [(a.name, a.type, list(a.shape)) for a in args]


def test_inputs_outputs_named_dims(add_path, ort):
    sess = onyx.InferenceSession(str(add_path))
    ref = ort.InferenceSession(str(add_path), providers=["CPUExecutionProvider"])
    assert _io(sess.get_inputs()) == [("A", "tensor(float)", ["batch", 3]), ("B", "tensor(float)", ["batch", 3])]
    assert _io(sess.get_outputs()) == [("C", "tensor(float)", ["batch", 3])]
    assert _io(sess.get_inputs()) == _io(ref.get_inputs())
    assert _io(sess.get_outputs()) == _io(ref.get_outputs())
    assert sess.get_overridable_initializers() == []
    a = sess.get_inputs()[0]
    assert isinstance(a.shape[0], str) and isinstance(a.shape[1], int)
    assert "A" in repr(a)


def test_inputs_outputs_unknown_dims(multi_out_path, ort):
    sess = onyx.InferenceSession(str(multi_out_path))
    ref = ort.InferenceSession(str(multi_out_path), providers=["CPUExecutionProvider"])
    assert _io(sess.get_inputs()) == _io(ref.get_inputs())
    assert _io(sess.get_outputs()) == _io(ref.get_outputs())
    for arg in sess.get_inputs() + sess.get_outputs():
        assert arg.shape[0] is None and arg.shape[1] == 4


@pytest.mark.parametrize("elem", ["INT64", "BOOL", "DOUBLE", "FLOAT16", "UINT8", "STRING"])
def test_type_strings(identity_model, ort, elem):
    from onnx import TensorProto

    path = identity_model(getattr(TensorProto, elem), [2])
    sess = onyx.InferenceSession(str(path))
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert _io(sess.get_inputs()) == _io(ref.get_inputs())
    assert _io(sess.get_outputs()) == _io(ref.get_outputs())


def test_sequence_and_optional_type_strings(sequence_path, optional_path, ort):
    for path in (sequence_path, optional_path):
        sess = onyx.InferenceSession(str(path))
        ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        assert [(a.name, a.type) for a in sess.get_inputs()] == [(a.name, a.type) for a in ref.get_inputs()]
        assert [(a.name, a.type) for a in sess.get_outputs()] == [(a.name, a.type) for a in ref.get_outputs()]
    assert onyx.InferenceSession(str(sequence_path)).get_inputs()[0].type == "seq(tensor(float))"
    assert onyx.InferenceSession(str(optional_path)).get_inputs()[0].type == "optional(tensor(float))"


def test_overridable_initializers(overridable_path, ort_run):
    sess = onyx.InferenceSession(str(overridable_path))
    assert _io(sess.get_inputs()) == [("X", "tensor(float)", [2, 3])]
    assert _io(sess.get_overridable_initializers()) == [("W", "tensor(float)", [2, 3])]
    x, w = rand(2, 3), rand(2, 3)
    (default,) = sess.run(None, {"X": x})
    np.testing.assert_array_equal(default, ort_run(overridable_path, {"X": x})[0])
    (overridden,) = sess.run(None, {"X": x, "W": w})
    np.testing.assert_array_equal(overridden, x * w)
    np.testing.assert_array_equal(overridden, ort_run(overridable_path, {"X": x, "W": w})[0])
    assert not np.array_equal(default, overridden)
    # the override is per run: the default comes back
    np.testing.assert_array_equal(sess.run(None, {"X": x})[0], default)


def test_modelmeta(metadata_path, metadata, ort):
    meta = onyx.InferenceSession(str(metadata_path)).get_modelmeta()
    ref = ort.InferenceSession(str(metadata_path), providers=["CPUExecutionProvider"]).get_modelmeta()
    for field in ("producer_name", "graph_name", "domain", "description", "graph_description", "version",
                  "custom_metadata_map"):
        assert getattr(meta, field) == getattr(ref, field), field
    assert meta.producer_name == metadata["producer_name"]
    assert meta.graph_name == metadata["graph_name"]
    assert meta.domain == metadata["domain"]
    assert meta.description == metadata["doc_string"]
    assert meta.graph_description == metadata["graph_doc_string"]
    assert meta.version == metadata["model_version"]
    assert meta.custom_metadata_map == metadata["custom"]
    # onyx's additions
    assert meta.producer_version == metadata["producer_version"]
    import onnx

    model = onnx.load(str(metadata_path))
    assert meta.ir_version == model.ir_version
    assert meta.opsets == {(o.domain or "ai.onnx"): o.version for o in model.opset_import}


# --- run -----------------------------------------------------------------------------------------


def test_run_output_names(multi_out_path, ort_run):
    sess = onyx.InferenceSession(str(multi_out_path))
    feed = {"A": rand(3, 4), "B": rand(3, 4)}
    ref = ort_run(multi_out_path, feed)
    for names in (None, []):
        out = sess.run(names, feed)
        assert len(out) == 3
        for got, want in zip(out, ref):
            np.testing.assert_array_equal(got, want)
    sub = sess.run(["N", "S"], feed)
    assert len(sub) == 2
    np.testing.assert_array_equal(sub[0], ort_run(multi_out_path, feed, ["N"])[0])
    np.testing.assert_array_equal(sub[1], ort_run(multi_out_path, feed, ["S"])[0])
    (p,) = sess.run(["P"], feed)
    np.testing.assert_array_equal(p, feed["A"] * feed["B"])


def test_run_unknown_output_name(add_path, add_feed):
    sess = onyx.InferenceSession(str(add_path))
    with pytest.raises(onyx.Error, match="no_such_output"):
        sess.run(["no_such_output"], add_feed)


def test_run_unknown_input_name(add_path, add_feed):
    sess = onyx.InferenceSession(str(add_path))
    with pytest.raises(onyx.Error, match="no_such_input"):
        sess.run(None, dict(add_feed, no_such_input=rand(2, 3)))


def test_run_with_run_options(add_path, add_feed):
    sess = onyx.InferenceSession(str(add_path))
    ro = onyx.RunOptions()
    ro.log_severity_level = 3
    ro.run_tag = "tagged"
    ro.add_run_config_entry("some.key", "v")
    assert ro.get_run_config_entry("some.key") == "v"
    with pytest.raises(onyx.Error):
        ro.get_run_config_entry("missing.key")
    assert ro.terminate is False
    (c,) = sess.run(None, add_feed, ro)
    np.testing.assert_array_equal(c, add_feed["A"] + add_feed["B"])
    (c2,) = sess.run(None, add_feed, run_options=ro)
    np.testing.assert_array_equal(c2, c)


def _loop_feed(n):
    return {"trip_count": np.array(n, dtype=np.int64), "V": np.zeros(4, dtype=np.float32)}


def test_terminate_stops_long_loop(loop_path, ort_run):
    sess = onyx.InferenceSession(str(loop_path))
    # the model is right: a short loop
    np.testing.assert_array_equal(sess.run(None, _loop_feed(7))[0], ort_run(loop_path, _loop_feed(7))[0])

    ro = onyx.RunOptions()
    stopper = threading.Timer(0.3, lambda: setattr(ro, "terminate", True))
    stopper.start()
    try:
        with pytest.raises(onyx.Cancelled) as info:
            # ~10^7 iterations: tens of seconds when not cancelled
            sess.run(None, _loop_feed(10_000_000), ro)
    finally:
        stopper.cancel()
        stopper.join()
    err = info.value
    assert isinstance(err, onyx.Fail)
    assert isinstance(err, onyx.Error)
    assert isinstance(err, RuntimeError)
    assert isinstance(err.code, str) and err.code
    assert ro.terminate is True

    # still terminated: a new run stops too
    with pytest.raises(onyx.Cancelled):
        sess.run(None, _loop_feed(3), ro)

    ro.terminate = False
    assert ro.terminate is False
    (v,) = sess.run(None, _loop_feed(5), ro)
    np.testing.assert_array_equal(v, ort_run(loop_path, _loop_feed(5))[0])


def test_terminate_catchable_as_fail_and_runtime_error(loop_path):
    sess = onyx.InferenceSession(str(loop_path))
    ro = onyx.RunOptions()
    ro.terminate = True
    for cls in (onyx.Fail, RuntimeError, onyx.Cancelled):
        with pytest.raises(cls):
            sess.run(None, _loop_feed(1000), ro)
    # other run options are unaffected
    np.testing.assert_array_equal(sess.run(None, _loop_feed(4), onyx.RunOptions())[0], np.full(4, 4, np.float32))


# --- SessionOptions ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cnn_input(tiny_cnn):
    sess = onyx.InferenceSession(str(tiny_cnn))
    (inp,) = sess.get_inputs()
    shape = [1 if not isinstance(d, int) else d for d in inp.shape]
    return inp.name, np.random.default_rng(5).random(shape, dtype=np.float32)


@pytest.mark.parametrize("threads", [0, 1, 2])
def test_intra_op_num_threads(tiny_cnn, cnn_input, ort_run, threads):
    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    assert so.intra_op_num_threads == threads
    sess = onyx.InferenceSession(str(tiny_cnn), so)
    name, x = cnn_input
    (y,) = sess.run(None, {name: x})
    (ref,) = ort_run(tiny_cnn, {name: x})
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_graph_optimization_levels_agree(tiny_cnn, cnn_input, ort_run):
    name, x = cnn_input
    (ref,) = ort_run(tiny_cnn, {name: x})
    outs = {}
    for level in onyx.GraphOptimizationLevel:
        so = onyx.SessionOptions()
        so.graph_optimization_level = level
        assert so.graph_optimization_level == level
        (outs[level],) = onyx.InferenceSession(str(tiny_cnn), so).run(None, {name: x})
        np.testing.assert_allclose(outs[level], ref, rtol=1e-5, atol=1e-6, err_msg=str(level))
    base = outs[onyx.GraphOptimizationLevel.ORT_DISABLE_ALL]
    for level, y in outs.items():
        np.testing.assert_allclose(y, base, rtol=1e-5, atol=1e-6, err_msg=str(level))
    names = {lv.name for lv in onyx.GraphOptimizationLevel}
    assert {"ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"} <= names


def test_free_dimension_override(add_path):
    so = onyx.SessionOptions()
    so.add_free_dimension_override_by_name("batch", 5)
    sess = onyx.InferenceSession(str(add_path), so)
    assert [list(i.shape) for i in sess.get_inputs()] == [[5, 3], [5, 3]]
    a, b = rand(5, 3), rand(5, 3)
    np.testing.assert_array_equal(sess.run(None, {"A": a, "B": b})[0], a + b)
    with pytest.raises(onyx.Error, match="'A'"):
        sess.run(None, {"A": rand(2, 3), "B": rand(2, 3)})


def test_session_config_entries():
    so = onyx.SessionOptions()
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    so.add_session_config_entry("session.intra_op.allow_spinning", "1")
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "1"
    with pytest.raises(onyx.Error):
        so.get_session_config_entry("no.such.key")


def test_allow_spinning_off_runs(add_path, add_feed):
    so = onyx.SessionOptions()
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = onyx.InferenceSession(str(add_path), so)
    np.testing.assert_array_equal(sess.run(None, add_feed)[0], add_feed["A"] + add_feed["B"])


def test_disable_cpu_ep_fallback_without_other_ep(add_path):
    so = onyx.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    with pytest.raises(onyx.Error):
        onyx.InferenceSession(str(add_path), so)
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "0")
    onyx.InferenceSession(str(add_path), so)


def test_profiling_writes_chrome_trace(add_path, add_feed, tmp_path):
    so = onyx.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "onyx_prof")
    sess = onyx.InferenceSession(str(add_path), so)
    assert sess.get_profiling_start_time_ns() > 0
    for _ in range(2):
        np.testing.assert_array_equal(sess.run(None, add_feed)[0], add_feed["A"] + add_feed["B"])
    path = Path(sess.end_profiling())
    try:
        assert path.is_file()
        assert path.name.startswith("onyx_prof") and path.suffix == ".json"
        events = json.loads(path.read_text())
        assert isinstance(events, list) and events
        for e in events:
            assert e["ph"] == "X"
            assert {"name", "ts", "dur", "pid", "tid"} <= set(e)
            assert e["dur"] >= 0
        runs = [e for e in events if e["name"] == "model_run"]
        assert len(runs) == 2
        nodes = [e for e in events if e.get("cat") == "Node"]
        assert nodes
        for e in nodes:
            assert e["args"]["op_name"] == "Add"
            assert e["args"]["provider"] == "CPUExecutionProvider"
            assert "add" in e["name"]
    finally:
        if path.is_file():
            path.unlink()


def test_profiling_off_end_profiling_empty(add_path):
    sess = onyx.InferenceSession(str(add_path))
    assert sess.end_profiling() == ""


@pytest.mark.parametrize("level", [onyx.GraphOptimizationLevel.ORT_DISABLE_ALL, onyx.GraphOptimizationLevel.ORT_ENABLE_ALL])
def test_optimized_model_filepath(tiny_cnn, tmp_path, level):
    """The model as onyx runs it is written when the session is made; it loads again (in onyx and
    in the onnx package's reader) and gives the same outputs."""
    import onnx

    so = onyx.SessionOptions()
    so.graph_optimization_level = level
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    sess = onyx.InferenceSession(str(tiny_cnn), so)
    assert (tmp_path / "opt.onnx").is_file()
    written = onnx.load(str(tmp_path / "opt.onnx"))
    ops = {(n.domain, n.op_type) for n in written.graph.node}
    if level == onyx.GraphOptimizationLevel.ORT_ENABLE_ALL:
        assert any(d.startswith("onyx") for d, _ in ops), ops  # the optimizer's fused forms
    else:
        original = onnx.load(str(tiny_cnn))
        assert [n.op_type for n in written.graph.node] == [n.op_type for n in original.graph.node]
    again = onyx.InferenceSession(str(tmp_path / "opt.onnx"))
    assert [(i.name, i.type, i.shape) for i in again.get_inputs()] == [(i.name, i.type, i.shape) for i in sess.get_inputs()]
    x = rand(2, 3, 32, 32)
    for a, b in zip(sess.run(None, {"image": x}), again.run(None, {"image": x})):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_optimized_model_filepath_unwritable(add_path, tmp_path):
    so = onyx.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "no_such_dir" / "opt.onnx")
    with pytest.raises(onyx.NoSuchFile, match="optimized model"):
        onyx.InferenceSession(str(add_path), so)


def test_log_severity_level(add_path, add_feed, capfd):
    so = onyx.SessionOptions()
    assert so.log_severity_level == 2
    so.log_severity_level = 3
    assert so.log_severity_level == 3
    so.log_verbosity_level = 1
    so.logid = "test"
    try:
        sess = onyx.InferenceSession(str(add_path), so)
        np.testing.assert_array_equal(sess.run(None, add_feed)[0], add_feed["A"] + add_feed["B"])
        if not usable("CUDAExecutionProvider"):
            # an EP skipped: onyx logs a warning at severity 2, none at severity 3 ("error")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                capfd.readouterr()
                onyx.InferenceSession(str(add_path), so, providers=["CUDAExecutionProvider"])
                assert "warning" not in capfd.readouterr().err
                so.log_severity_level = 2
                onyx.InferenceSession(str(add_path), so, providers=["CUDAExecutionProvider"])
                assert "warning" in capfd.readouterr().err
    finally:
        onyx.set_default_logger_severity(2)


def test_session_options_kept(add_path):
    so = onyx.SessionOptions()
    so.intra_op_num_threads = 1
    sess = onyx.InferenceSession(str(add_path), so)
    assert sess.get_session_options() is so


# --- providers -----------------------------------------------------------------------------------


def test_default_providers(add_path):
    sess = onyx.InferenceSession(str(add_path))
    assert sess.get_providers() == ["CPUExecutionProvider"]
    opts = sess.get_provider_options()
    assert list(opts) == ["CPUExecutionProvider"]
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in opts["CPUExecutionProvider"].items())


@pytest.mark.parametrize("providers", [["CPUExecutionProvider"], ["cpu"], [("CPUExecutionProvider", {})],
                                       [("cpu", {"prefer_nhwc": False})], "CPUExecutionProvider"])
def test_cpu_provider_forms(add_path, add_feed, providers):
    sess = onyx.InferenceSession(str(add_path), providers=providers)
    assert sess.get_providers() == ["CPUExecutionProvider"]
    np.testing.assert_array_equal(sess.run(None, add_feed)[0], add_feed["A"] + add_feed["B"])


def test_cpu_provider_option_applied(add_path):
    sess = onyx.InferenceSession(str(add_path), providers=[("cpu", {"prefer_nhwc": False})])
    assert sess.get_provider_options()["CPUExecutionProvider"]["prefer_nhwc"] == "false"
    sess = onyx.InferenceSession(str(add_path), providers=["CPUExecutionProvider"],
                                 provider_options=[{"prefer_nhwc": True}])
    assert sess.get_provider_options()["CPUExecutionProvider"]["prefer_nhwc"] == "true"


def test_provider_options_length_mismatch(add_path):
    with pytest.raises(ValueError):
        onyx.InferenceSession(str(add_path), providers=["cpu"], provider_options=[{}, {}])


@pytest.mark.parametrize("providers", [["XnnpackExecutionProvider"], ["xnnpack"], [("xnnpack", {"threads": 1})],
                                       [("XnnpackExecutionProvider", {"intra_op_num_threads": 1})]])
def test_xnnpack_provider_forms(add_path, add_feed, ort_run, providers):
    need("XnnpackExecutionProvider")
    sess = onyx.InferenceSession(str(add_path), providers=providers)
    assert sess.get_providers() == ["XnnpackExecutionProvider", "CPUExecutionProvider"]
    assert [n.ep for n in sess.placement().nodes] == ["xnnpack"]
    np.testing.assert_allclose(sess.run(None, add_feed)[0], ort_run(add_path, add_feed)[0], rtol=1e-6)
    if isinstance(providers[0], tuple):
        assert sess.get_provider_options()["XnnpackExecutionProvider"]["threads"] == "1"


@pytest.mark.parametrize("providers", [["OpenVINOExecutionProvider"], [("OpenVINOExecutionProvider", {"precision": "FP32"})]])
def test_openvino_provider(tiny_cnn, cnn_input, ort_run, providers):
    need("OpenVINOExecutionProvider")
    sess = onyx.InferenceSession(str(tiny_cnn), providers=providers)
    assert sess.get_providers() == ["OpenVINOExecutionProvider", "CPUExecutionProvider"]
    assert {n.ep for n in sess.placement().nodes} == {"openvino"}
    name, x = cnn_input
    np.testing.assert_allclose(sess.run(None, {name: x})[0], ort_run(tiny_cnn, {name: x})[0], rtol=1e-4, atol=1e-6)


def test_provider_options_list(add_path):
    need("XnnpackExecutionProvider")
    sess = onyx.InferenceSession(str(add_path), providers=["XnnpackExecutionProvider", "CPUExecutionProvider"],
                                 provider_options=[{"threads": 2}, {}])
    assert sess.get_providers() == ["XnnpackExecutionProvider", "CPUExecutionProvider"]
    assert sess.get_provider_options()["XnnpackExecutionProvider"]["threads"] == "2"


def test_set_providers(add_path, add_feed):
    sess = onyx.InferenceSession(str(add_path))
    want = add_feed["A"] + add_feed["B"]
    others = [p for p in onyx.get_available_providers() if p != "CPUExecutionProvider"]
    if others:
        sess.set_providers([others[0]])
        assert sess.get_providers() == [others[0], "CPUExecutionProvider"]
        np.testing.assert_allclose(sess.run(None, add_feed)[0], want, rtol=1e-6)
    sess.set_providers(["CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    np.testing.assert_array_equal(sess.run(None, add_feed)[0], want)


def test_unknown_provider_name(add_path):
    with pytest.raises(onyx.Error, match="NoSuchExecutionProvider"):
        onyx.InferenceSession(str(add_path), providers=["NoSuchExecutionProvider"])
    with pytest.raises(onyx.Error):
        onyx.InferenceSession(str(add_path), providers=[("no_such_ep", {})])


def _unavailable_ep():
    if usable("CUDAExecutionProvider"):
        pytest.skip("CUDAExecutionProvider is usable here: no unavailable EP to test with")
    return "CUDAExecutionProvider"


def test_unavailable_provider_skipped_with_warning(add_path, add_feed):
    ep = _unavailable_ep()
    with pytest.warns(UserWarning, match=ep):
        sess = onyx.InferenceSession(str(add_path), providers=[ep])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    regs = sess.registration()
    cuda = [r for r in regs if r.name == "cuda"]
    assert len(cuda) == 1
    assert cuda[0].outcome == "skipped"
    assert cuda[0].source == "session"
    assert cuda[0].reason
    info = {p.name: p for p in onyx.providers()}["cuda"]
    assert not info.usable
    assert info.reason in cuda[0].reason
    np.testing.assert_array_equal(sess.run(None, add_feed)[0], add_feed["A"] + add_feed["B"])


def test_unavailable_provider_error_on_failure(add_path):
    ep = _unavailable_ep()
    with pytest.raises(onyx.Error) as info:
        onyx.InferenceSession(str(add_path), providers=[(ep, {"error_on_failure": True})])
    assert isinstance(info.value, onyx.EPFail)
    with pytest.raises(onyx.EPFail):
        onyx.InferenceSession(str(add_path), providers=[ep], require_providers=True)
    with pytest.raises(onyx.EPFail):
        onyx.InferenceSession(str(add_path), providers=[ep], provider_options=[{"error_on_failure": True}])


def test_malformed_provider_option_raises(add_path):
    need("XnnpackExecutionProvider")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an error, not a skip with a warning
        with pytest.raises(onyx.InvalidArgument, match="no_such_key"):
            onyx.InferenceSession(str(add_path), providers=[("XnnpackExecutionProvider", {"no_such_key": 1})])
        with pytest.raises(onyx.InvalidArgument, match="threads"):
            onyx.InferenceSession(str(add_path), providers=[("XnnpackExecutionProvider", {"threads": "many"})])


def test_malformed_cpu_option_raises(add_path):
    with pytest.raises(onyx.InvalidArgument, match="no_such_key"):
        onyx.InferenceSession(str(add_path), providers=[("CPUExecutionProvider", {"no_such_key": 1})])


def test_strict_without_other_ep(add_path):
    with pytest.raises(onyx.Error):
        onyx.InferenceSession(str(add_path), strict=True)


def test_strict_with_ep_that_declines(loop_path, add_path, add_feed):
    need("XnnpackExecutionProvider")
    with pytest.raises(onyx.EPFail, match="Loop"):
        onyx.InferenceSession(str(loop_path), providers=["xnnpack"], strict=True)
    # an EP that takes every node is fine with strict
    sess = onyx.InferenceSession(str(add_path), providers=["xnnpack"], strict=True)
    assert {n.ep for n in sess.placement().nodes} == {"xnnpack"}
    np.testing.assert_allclose(sess.run(None, add_feed)[0], add_feed["A"] + add_feed["B"], rtol=1e-6)


def test_memory_limit(add_path, add_feed, matmul_chain_path):
    sess = onyx.InferenceSession(str(add_path), memory_limit=1 << 30)
    np.testing.assert_array_equal(sess.run(None, add_feed)[0], add_feed["A"] + add_feed["B"])
    # the chain's activations (64x256 floats, several alive at once) cannot fit in 1 KiB
    tight = onyx.InferenceSession(str(matmul_chain_path), memory_limit=1024)
    with pytest.raises(onyx.OutOfMemory) as info:
        tight.run(None, {"X": rand(64, 256)})
    assert isinstance(info.value, MemoryError)
    assert isinstance(info.value, onyx.RuntimeException)


def test_environment_providers(add_path, add_feed, reset_environment):
    others = [p for p in onyx.get_available_providers() if p != "CPUExecutionProvider"]
    if not others:
        pytest.skip("no EP but the CPU EP is usable here")
    ep = others[0]
    onyx.init(providers=[ep])
    sess = onyx.InferenceSession(str(add_path))
    regs = sess.registration()
    env = [r for r in regs if r.source == "environment"]
    assert len(env) == 1
    assert env[0].outcome == "registered"
    assert sess.get_providers() == [ep, "CPUExecutionProvider"]
    np.testing.assert_allclose(sess.run(None, add_feed)[0], add_feed["A"] + add_feed["B"], rtol=1e-6)

    opted_out = onyx.InferenceSession(str(add_path), environment_providers=False)
    assert all(r.source != "environment" for r in opted_out.registration())
    assert opted_out.get_providers() == ["CPUExecutionProvider"]

    # the session's own EPs come first, the environment's after them
    own = onyx.InferenceSession(str(add_path), providers=["cpu"])
    srcs = [(r.source, r.outcome) for r in own.registration() if r.outcome == "registered"]
    assert srcs[0] == ("session", "registered")

    onyx.init(providers=[])
    after = onyx.InferenceSession(str(add_path))
    assert all(r.source != "environment" for r in after.registration())
    assert after.get_providers() == ["CPUExecutionProvider"]


# --- placement, registration, providers() --------------------------------------------------------


def test_placement(add_path, loop_path):
    sess = onyx.InferenceSession(str(add_path))
    p = sess.placement()
    assert [(n.name, n.op_type, n.ep) for n in p.nodes] == [("add", "Add", "cpu")]
    assert list(p.nodes[0].declined) == []
    assert isinstance(p.summary, str) and "cpu" in p.summary
    assert list(p.copies) == []

    need("XnnpackExecutionProvider")
    sess = onyx.InferenceSession(str(loop_path), providers=["xnnpack"])
    p = sess.placement()
    loops = [n for n in p.nodes if n.op_type == "Loop"]
    assert len(loops) == 1
    assert loops[0].name == "loop" and loops[0].ep == "cpu"
    assert [d.ep for d in loops[0].declined] == ["xnnpack"]
    d = loops[0].declined[0]
    assert isinstance(d.code, str) and d.code
    assert isinstance(d.message, str) and d.message
    assert "declined" in p.summary


def test_registration_fields(add_path):
    sess = onyx.InferenceSession(str(add_path))
    regs = sess.registration()
    assert len(regs) == 1
    r = regs[0]
    assert (r.name, r.outcome, r.source, r.priority) == ("cpu", "registered", "implicit", 0)
    assert r.device.startswith("cpu")
    assert isinstance(r.version, str)
    assert isinstance(r.reason, str)
    assert isinstance(r.module, str)
    assert isinstance(r.options, dict)
    assert r.error_on_failure in (True, False)
    assert "cpu" in repr(r)


def test_registration_priorities(add_path):
    others = [p for p in onyx.get_available_providers() if p != "CPUExecutionProvider"]
    if not others:
        pytest.skip("no EP but the CPU EP is usable here")
    sess = onyx.InferenceSession(str(add_path), providers=others + ["CPUExecutionProvider"])
    regs = [r for r in sess.registration() if r.outcome == "registered"]
    assert [r.priority for r in regs] == list(range(len(regs)))
    assert sess.get_providers() == others + ["CPUExecutionProvider"]
    assert all(r.source == "session" for r in regs)


def test_duplicate_provider(add_path):
    sess = onyx.InferenceSession(str(add_path), providers=["cpu", "CPUExecutionProvider"])
    outcomes = [r.outcome for r in sess.registration()]
    assert outcomes.count("registered") == 1
    assert "duplicate" in outcomes
    assert sess.get_providers() == ["CPUExecutionProvider"]


def test_providers_list():
    infos = onyx.providers()
    by_name = {p.name: p for p in infos}
    assert len(by_name) == len(infos)
    cpu = by_name["cpu"]
    assert cpu.built and cpu.loadable and cpu.usable
    assert cpu.reason == ""
    for p in infos:
        assert isinstance(p.name, str) and p.name
        assert isinstance(p.reason, str) and isinstance(p.version, str)
        if p.usable:
            assert p.loadable and p.built
        else:
            assert p.reason
        if p.loadable:
            assert p.built
        for o in p.options:
            assert isinstance(o.key, str) and o.key
            assert isinstance(o.type, str) and isinstance(o.default, str) and isinstance(o.doc, str)
    usable_names = [p.name for p in infos if p.usable and p.name != "cpu"]
    assert len(onyx.get_available_providers()) == len(usable_names) + 1
    assert {o.key for o in cpu.options} >= {"prefer_nhwc"}


def test_get_available_and_all_providers():
    avail = onyx.get_available_providers()
    assert avail[-1] == "CPUExecutionProvider"
    assert avail.count("CPUExecutionProvider") == 1
    every = onyx.get_all_providers()
    assert "CPUExecutionProvider" in every
    assert set(avail) <= set(every)
    assert len(every) == len(onyx.providers())
    assert all(p.endswith("ExecutionProvider") for p in every)


def test_get_device():
    device = onyx.get_device()
    assert device in ("CPU", "GPU")
    assert (device == "GPU") == usable("CUDAExecutionProvider")


def test_version():
    assert isinstance(onyx.__version__, str)
    assert re.fullmatch(r"\d+\.\d+\.\d+", onyx.__version__)
    assert onyx.get_version_string() == onyx.__version__


def test_version_matches_cli():
    cli = cli_binary()
    if cli is None:
        pytest.skip("the onyx CLI is not built")
    out = subprocess.run([str(cli), "version"], capture_output=True, text=True, timeout=60, check=True).stdout
    assert onyx.__version__ in out


@pytest.mark.parametrize("model", ["tiny_cnn", "loop", "add"])
def test_explain_matches_cli(model, tiny_cnn, loop_path, add_path):
    cli = cli_binary()
    if cli is None:
        pytest.skip("the onyx CLI is not built")
    path = str({"tiny_cnn": tiny_cnn, "loop": loop_path, "add": add_path}[model])
    cli_out = subprocess.run([str(cli), "explain", path], capture_output=True, text=True, timeout=60, check=True).stdout
    buf = io.StringIO()
    text = onyx.explain(path, file=buf)
    assert text == buf.getvalue()
    assert text == cli_out


def test_explain_matches_cli_with_ep(loop_path):
    need("XnnpackExecutionProvider")
    cli = cli_binary()
    if cli is None:
        pytest.skip("the onyx CLI is not built")
    cli_out = subprocess.run([str(cli), "explain", "--ep", "xnnpack", str(loop_path)], capture_output=True, text=True,
                             timeout=60, check=True).stdout
    assert onyx.explain(str(loop_path), providers=["xnnpack"], file=io.StringIO()) == cli_out


def test_explain_prints_to_stdout(add_path, capsys):
    text = onyx.explain(str(add_path))
    assert capsys.readouterr().out == text
    assert "add" in text and "Add" in text


# --- errors --------------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    missing = tmp_path / "no_such_model.onnx"
    with pytest.raises(onyx.NoSuchFile) as info:
        onyx.InferenceSession(str(missing))
    assert "no_such_model.onnx" in str(info.value)
    with pytest.raises(onyx.NoSuchFile):
        onyx.InferenceSession(missing)


def test_corrupt_bytes(add_path, tmp_path):
    with pytest.raises(onyx.InvalidProtobuf):
        onyx.InferenceSession(b"\x07\xff\xff this is not an onnx model \x00\x01")
    truncated = add_path.read_bytes()[:25]
    with pytest.raises(onyx.InvalidProtobuf):
        onyx.InferenceSession(truncated)
    bad = tmp_path / "corrupt.onnx"
    bad.write_bytes(truncated)
    with pytest.raises(onyx.InvalidProtobuf):
        onyx.InferenceSession(str(bad))


def test_wrong_input_dtype(add_path, add_feed):
    sess = onyx.InferenceSession(str(add_path))
    with pytest.raises(onyx.InvalidArgument, match="'A'"):
        sess.run(None, dict(add_feed, A=add_feed["A"].astype(np.float64)))
    with pytest.raises(onyx.InvalidArgument, match="'B'"):
        sess.run(None, dict(add_feed, B=add_feed["B"].astype(np.int32)))


@pytest.mark.parametrize("shape", [(3,), (2, 4), (2, 3, 1), (3, 2)])
def test_wrong_input_shape(add_path, add_feed, shape):
    sess = onyx.InferenceSession(str(add_path))
    with pytest.raises(onyx.Error, match="'B'"):
        sess.run(None, dict(add_feed, B=rand(*shape)))


def test_missing_input(add_path, add_feed):
    sess = onyx.InferenceSession(str(add_path))
    with pytest.raises(onyx.Error, match="'B'"):
        sess.run(None, {"A": add_feed["A"]})
    with pytest.raises(onyx.Error):
        sess.run(None, {})


def test_none_for_a_tensor_input(add_path, add_feed):
    sess = onyx.InferenceSession(str(add_path))
    with pytest.raises(onyx.InvalidArgument, match="'A'"):
        sess.run(None, dict(add_feed, A=None))


def _collect_errors(add_path, loop_path, tmp_path):
    """One error of each kind the suite can provoke."""
    sess = onyx.InferenceSession(str(add_path))
    feed = {"A": rand(2, 3), "B": rand(2, 3)}
    actions = [
        lambda: onyx.InferenceSession(str(tmp_path / "missing.onnx")),
        lambda: onyx.InferenceSession(b"\x07garbage"),
        lambda: sess.run(None, dict(feed, A=feed["A"].astype(np.float64))),
        lambda: sess.run(None, dict(feed, A=rand(4))),
        lambda: sess.run(["nope"], feed),
        lambda: onyx.InferenceSession(str(add_path), providers=["NoSuchExecutionProvider"]),
        lambda: onyx.InferenceSession(str(add_path), strict=True),
    ]
    ro = onyx.RunOptions()
    ro.terminate = True
    loop = onyx.InferenceSession(str(loop_path))
    actions.append(lambda: loop.run(None, _loop_feed(10), ro))
    so = onyx.SessionOptions()
    actions.append(lambda: so.add_free_dimension_override_by_denotation("DATA_BATCH", 1))
    errors = []
    for act in actions:
        with pytest.raises(onyx.Error) as info:
            act()
        errors.append(info.value)
    return errors


def test_every_error_has_code_and_is_runtime_error(add_path, loop_path, tmp_path):
    for e in _collect_errors(add_path, loop_path, tmp_path):
        assert isinstance(e, RuntimeError), type(e)
        assert isinstance(e, onyx.Error), type(e)
        assert isinstance(e.code, str) and e.code, type(e)
        assert str(e)


def test_error_code_matches_class(add_path, loop_path, tmp_path):
    """An error's code is the same whichever layer raised it: every InvalidArgument says
    "InvalidArgument", every NotImplemented "NotImplemented"."""
    by_class = {}
    for e in _collect_errors(add_path, loop_path, tmp_path):
        by_class.setdefault(type(e), set()).add(e.code)
    for cls, codes in by_class.items():
        assert len(codes) == 1, f"{cls.__name__} raised with codes {sorted(codes)}"
    assert by_class[onyx.InvalidArgument] == {"InvalidArgument"}
    assert by_class[onyx.NotImplemented] == {"NotImplemented"}


def test_exception_hierarchy():
    for cls in (onyx.InvalidArgument, onyx.NoSuchFile, onyx.InvalidProtobuf, onyx.NotImplemented,
                onyx.InvalidGraph, onyx.RuntimeException, onyx.EPFail, onyx.NotAvailable, onyx.Cancelled,
                onyx.OutOfMemory, onyx.NoModel, onyx.EngineError, onyx.ModelLoaded):
        assert issubclass(cls, onyx.Fail)
        assert issubclass(cls, onyx.Error)
        assert issubclass(cls, RuntimeError)
    assert issubclass(onyx.NotAvailable, onyx.EPFail)
    assert issubclass(onyx.OutOfMemory, MemoryError)


def test_exceptions_importable_from_capi():
    from onyx.capi.onnxruntime_pybind11_state import (  # noqa: F401
        EngineError,
        EPFail,
        Fail,
        InvalidArgument,
        InvalidGraph,
        InvalidProtobuf,
        ModelLoaded,
        NoModel,
        NoSuchFile,
        NotImplemented,
        RuntimeException,
    )

    assert InvalidArgument is onyx.InvalidArgument
    assert Fail is onyx.Fail
    assert NoSuchFile is onyx.NoSuchFile
    assert InvalidProtobuf is onyx.InvalidProtobuf
    assert NotImplemented is onyx.NotImplemented
    assert EPFail is onyx.EPFail
    assert RuntimeException is onyx.RuntimeException


def test_capi_exception_catches_onyx_error(add_path, add_feed):
    from onyx.capi.onnxruntime_pybind11_state import InvalidArgument

    sess = onyx.InferenceSession(str(add_path))
    with pytest.raises(InvalidArgument):
        sess.run(None, dict(add_feed, A=add_feed["A"].astype(np.float64)))


def test_unsupported_session_options_raise(add_path):
    so = onyx.SessionOptions()
    with pytest.raises(onyx.NotImplemented):
        so.add_free_dimension_override_by_denotation("DATA_BATCH", 1)
    with pytest.raises(onyx.NotImplemented):
        so.register_custom_ops_library("libnothing.so")
    with pytest.raises(onyx.NotImplemented):
        onyx.InferenceSession(str(add_path), disabled_optimizers=["ConstantFolding"])


def test_session_usable_after_error(add_path, add_feed):
    sess = onyx.InferenceSession(str(add_path))
    with pytest.raises(onyx.Error):
        sess.run(None, dict(add_feed, A=rand(7)))
    np.testing.assert_array_equal(sess.run(None, add_feed)[0], add_feed["A"] + add_feed["B"])


def test_plan_count(add_path):
    """One cached plan per input-shape signature seen."""
    sess = onyx.InferenceSession(str(add_path))
    counts = []
    for n in (1, 2, 2, 3, 1):
        a, b = rand(n, 3), rand(n, 3)
        np.testing.assert_array_equal(sess.run(None, {"A": a, "B": b})[0], a + b)
        counts.append(sess.plan_count())
    assert counts == [1, 2, 2, 3, 3]


def test_many_sessions(add_path, add_feed):
    """Creating and dropping sessions repeatedly works (no state leaks between them)."""
    for _ in range(20):
        sess = onyx.InferenceSession(str(add_path))
        np.testing.assert_array_equal(sess.run(None, add_feed)[0], add_feed["A"] + add_feed["B"])


def _custom_model(tmp_path, domain, op, n_out=1):
    nodes = [helper.make_node(op, ["x"], [f"y{i}" for i in range(n_out)], name="custom", domain=domain)]
    graph = helper.make_graph(
        nodes, "custom", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None) for i in range(n_out)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])
    model.ir_version = 8
    path = tmp_path / f"{op}.onnx"
    onnx.save(model, str(path))
    return str(path)


def test_custom_op_from_python(tmp_path):
    seen = []

    def infer(types):
        seen.append(types)
        (dtype, shape), = types
        return [(dtype, shape), (np.int64, (shape[0],))]

    def compute(x):
        return [x * 3, np.arange(x.shape[0], dtype=np.int64)]

    onyx.register_custom_op("test.python", "TripleAndCount", compute, infer=infer)
    sess = onyx.InferenceSession(_custom_model(tmp_path, "test.python", "TripleAndCount", n_out=2))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y0, y1 = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y0, x * 3)
    np.testing.assert_array_equal(y1, [0, 1])
    assert seen and seen[0][0][1] == (2, 3)
    assert [n.ep for n in sess.placement().nodes] == ["cpu"]


def test_custom_op_errors_from_python(tmp_path):
    with pytest.raises(onyx.InvalidArgument, match="which onyx implements itself"):
        onyx.register_custom_op("", "Relu", lambda x: x)

    def broken(x):
        raise ValueError("the kernel broke")

    onyx.register_custom_op("test.python", "Broken", broken)
    sess = onyx.InferenceSession(_custom_model(tmp_path, "test.python", "Broken"))
    with pytest.raises(onyx.RuntimeException, match="the kernel broke"):
        sess.run(None, {"x": np.zeros((2, 3), np.float32)})
    with pytest.raises(onyx.InvalidArgument, match="already registered"):
        onyx.register_custom_op("test.python", "Broken", broken)
