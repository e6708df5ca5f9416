#!/usr/bin/env python3
"""Writes single-node tests of the com.microsoft quantized operators, with outputs from ONNX Runtime.

    python make_contrib_tests.py OUT_DIR

Run with a Python that has onnxruntime, onnx and numpy (the ORT venv, .cache/ort-venv). Each
test is OUT_DIR/node/<name>/model.onnx with test_data_set_0/{input_K.pb,output_K.pb}, the
layout of the ONNX backend's node tests, so tests/conformance/runner.cpp (onyx_conformance) runs
them; the expected outputs are what ONNX Runtime's CPU EP computes (graph optimisations off, one
thread). Cases cover QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax,
QLinearAveragePool, QLinearGlobalAveragePool and QLinearConcat over uint8 and int8: shapes that
broadcast, sizes that are not multiples of a vector, random scales and zero points (omitted
optional zero points too), channels_last both ways, padding, ceil_mode, count_include_pad, and
scales given as graph inputs rather than initializers (the kernels' per-run paths). Then the 8-bit
products: QGemm (transA / transB, alpha, C absent or of each shape ONNX Runtime broadcasts, 8-bit
and float Y, y_scale without y_zero_point, per-column B parameters, B packed once or per run,
ties), DynamicQuantizeMatMul (A of rank 1 to 3, all zero, all positive or negative, per-tensor and
per-column B parameters, bias, B int8 and uint8, A values at and near rounding ties),
MatMulIntegerToFloat (zero points absent or given, bias, per-column B parameters) and the 2-D-B
paths of ai.onnx MatMulInteger and QLinearMatMul, over the type pairs ONNX Runtime's CPU kernels
take. Float outputs are compared exactly too (contrib_node_tests.sh). The data are drawn from a
fixed seed, so the same ONNX Runtime gives the same files.
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transformer_common import run_ort  # noqa: E402

MS = "com.microsoft"
rng = np.random.default_rng(20261204)

NP_OF = {TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8, TensorProto.FLOAT: np.float32}
ELEM_OF = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8, np.dtype(np.float32): TensorProto.FLOAT,
           np.dtype(np.int32): TensorProto.INT32}


def qdata(dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


def zero_point(dtype):
    info = np.iinfo(dtype)
    return np.array(rng.integers(info.min, info.max + 1), dtype=dtype)


def scale(lo=0.002, hi=0.1):
    return np.array(rng.uniform(lo, hi), dtype=np.float32)


class Case:
    """One node; `feeds` become graph inputs (with data), `consts` initializers."""

    def __init__(self, name, op, inputs, attrs=None, out_dtype=None, domain=MS):
        self.name = name
        self.op = op
        self.inputs = inputs  # list of (name, array, is_feed) or None for an omitted input
        self.attrs = attrs or {}
        self.out_dtype = out_dtype
        self.domain = domain


def build_model(case):
    node_inputs, graph_inputs, inits, feeds = [], [], [], {}
    for item in case.inputs:
        if item is None:
            node_inputs.append("")
            continue
        name, value, is_feed = item
        node_inputs.append(name)
        if is_feed:
            graph_inputs.append(helper.make_tensor_value_info(name, ELEM_OF[value.dtype], list(value.shape)))
            feeds[name] = value
        else:
            inits.append(numpy_helper.from_array(value, name))
    node = helper.make_node(case.op, node_inputs, ["y"], domain=case.domain, **case.attrs)
    out = helper.make_tensor_value_info("y", case.out_dtype, None)
    graph = helper.make_graph([node], case.name, graph_inputs, [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return model, feeds




def write_case(out_dir, case):
    model, feeds = build_model(case)
    y = run_ort(model, feeds)[0]
    d = os.path.join(out_dir, "node", case.name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for k, gi in enumerate(model.graph.input):
        with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[gi.name], gi.name).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "y").SerializeToString())


def tname(dtype):
    return "u8" if dtype == np.uint8 else "s8"


def binary_cases():
    shapes = [
        ("same", [2, 3, 5, 7], [2, 3, 5, 7]),
        ("long", [1, 1037], [1, 1037]),
        ("big", [3, 40000], [3, 40000]),  # split over threads where onyx has several
        ("scalar_b", [4, 9, 33], []),
        ("scalar_a", [1], [4, 9, 33]),
        ("row_b", [2, 3, 4, 37], [37]),
        ("col_b", [5, 19, 6], [5, 1, 6]),
        ("col_a", [6, 1], [6, 45]),
        ("outer", [7, 1, 23], [1, 5, 1]),
        ("single", [1], [1]),
        ("empty", [0, 5], [1, 5]),
        ("grid_a_scalar_rows", [256, 1], [1, 256]),
        ("grid_b_scalar_rows", [1, 256], [256, 1]),
    ]
    for op in ("QLinearAdd", "QLinearMul"):
        for dt in (np.uint8, np.int8):
            for tag, sa, sb in shapes:
                a, b = qdata(dt, sa), qdata(dt, sb)
                if tag.startswith("grid"):  # every pair of values, one operand a single value per row
                    every = np.arange(256, dtype=np.uint8).view(dt)
                    a, b = every.reshape(sa), every.reshape(sb)
                lo, hi = (0.01, 0.2) if op == "QLinearAdd" else (0.02, 0.3)
                sc = scale(0.02, 0.4) if op == "QLinearAdd" else scale(0.5, 3.0)
                yield Case(f"test_{op.lower()}_{tname(dt)}_{tag}", op,
                           [("a", a, True), ("as", scale(lo, hi), False), ("az", zero_point(dt), False),
                            ("b", b, True), ("bs", scale(lo, hi), False), ("bz", zero_point(dt), False),
                            ("cs", sc, False), ("cz", zero_point(dt), False)], out_dtype=ELEM_OF[np.dtype(dt)])
            # An omitted zero point (ONNX Runtime accepts only C's, the last input, omitted); scales as
            # graph inputs.
            a, b = qdata(dt, [3, 70]), qdata(dt, [70])
            yield Case(f"test_{op.lower()}_{tname(dt)}_no_zero_point", op,
                       [("a", a, True), ("as", scale(), False), ("az", zero_point(dt), False), ("b", b, True),
                        ("bs", scale(), False), ("bz", zero_point(dt), False), ("cs", scale(0.05, 0.5), False)],
                       out_dtype=ELEM_OF[np.dtype(dt)])
            yield Case(f"test_{op.lower()}_{tname(dt)}_runtime_scales", op,
                       [("a", a, True), ("as", scale(), True), ("az", zero_point(dt), True), ("b", b, True),
                        ("bs", scale(), True), ("bz", zero_point(dt), True), ("cs", scale(0.05, 0.5), True),
                        ("cz", zero_point(dt), True)], out_dtype=ELEM_OF[np.dtype(dt)])
            # Saturation both ways: a small output scale.
            yield Case(f"test_{op.lower()}_{tname(dt)}_saturate", op,
                       [("a", qdata(dt, [2, 50]), True), ("as", scale(0.2, 0.3), False), ("az", zero_point(dt), False),
                        ("b", qdata(dt, [2, 50]), True), ("bs", scale(0.2, 0.3), False), ("bz", zero_point(dt), False),
                        ("cs", np.array(0.01, np.float32), False), ("cz", zero_point(dt), False)],
                       out_dtype=ELEM_OF[np.dtype(dt)])
            # Rounding ties: equal scales, so many sums land on .5.
            s = np.array(0.125, np.float32)
            yield Case(f"test_{op.lower()}_{tname(dt)}_ties", op,
                       [("a", qdata(dt, [4, 65]), True), ("as", s, False), ("az", zero_point(dt), False),
                        ("b", qdata(dt, [4, 65]), True), ("bs", s, False), ("bz", zero_point(dt), False),
                        ("cs", np.array(0.25, np.float32) if op == "QLinearAdd" else np.array(2.0, np.float32), False),
                        ("cz", zero_point(dt), False)], out_dtype=ELEM_OF[np.dtype(dt)])


def fma32(a, b, c):
    """float32 a * b + c rounded once (the product is exact in float64; the float64 sum may round
    before the float32 rounding, a rare slip that only affects which parameters are picked)."""
    return (np.float64(a) * np.float64(b) + np.float64(c)).astype(np.float32)


def add_ort_and_variants(a, b, sa, za, sb, zb, sc, zc, kind):
    """QLinearAdd as ONNX Runtime computes it on an FMA machine, and the same with one rounding
    step changed (a product rounded instead of fused). `kind`: both operands rows, or B (A) one
    value per row."""
    f = np.float32
    a, b = a.astype(np.int32).astype(f), b.astype(np.int32).astype(f)
    ra, rb = f(sa) / f(sc), f(sb) / f(sc)
    if kind == "a_scalar":  # the row operand first
        (a, ra, za), (b, rb, zb) = (b, rb, zb), (a, ra, za)
        kind = "b_scalar"
    fixed = f(zc) - fma32(ra, f(za), rb * f(zb))
    fixed_rounded = f(zc) - (ra * f(za) + rb * f(zb))
    if kind == "both":
        ort_v = fma32(a, ra, fma32(b, rb, fixed))
        variants = [fma32(a, ra, fma32(b, rb, fixed_rounded))]
    else:
        ort_v = fma32(a, ra, fma32(b, rb, fixed))
        variants = [fma32(a, ra, fixed + b * rb), fma32(a, ra, fma32(b, rb, fixed_rounded))]
    return ort_v, variants


def rounding_sensitive_cases():
    """QLinearAdd / QLinearMul over every pair of byte values, with scales and zero points picked
    (from the seeded generator) where one rounding step decides some result: where a product
    that ONNX Runtime rounds would be fused, or one it fuses rounded, some output changes. Random
    parameters almost never show such a difference (about one element in a million)."""
    for dt in (np.uint8, np.int8):
        every = np.arange(256, dtype=np.uint8).view(dt)
        grids = {"both": (np.repeat(every, 256).reshape(1, -1), np.tile(every, 256).reshape(1, -1)),
                 "b_scalar": (every.reshape(1, 256), every.reshape(256, 1)),
                 "a_scalar": (every.reshape(256, 1), every.reshape(1, 256))}
        info = np.iinfo(dt)
        for kind, (a, b) in grids.items():
            ab, bb = np.broadcast_arrays(a, b)
            found = 0
            for _ in range(5000):
                sa, sb = np.float32(rng.uniform(0.005, 0.2)), np.float32(rng.uniform(0.005, 0.2))
                sc = np.float32(rng.uniform(0.01, 0.4))
                za, zb, zc = (int(v) for v in rng.integers(info.min, info.max + 1, 3))
                ort_v, variants = add_ort_and_variants(ab, bb, sa, za, sb, zb, sc, zc, kind)
                q = lambda v: np.clip(np.rint(v), info.min, info.max)
                if all((q(v) != q(ort_v)).any() for v in variants):
                    yield Case(f"test_qlinearadd_{tname(dt)}_rounding_{kind}_{found}", "QLinearAdd",
                               [("a", a, True), ("as", sa, False), ("az", np.array(za, dt), False), ("b", b, True),
                                ("bs", sb, False), ("bz", np.array(zb, dt), False), ("cs", sc, False),
                                ("cz", np.array(zc, dt), False)], out_dtype=ELEM_OF[np.dtype(dt)])
                    found += 1
                    if found == 2:
                        break
        # QLinearMul: ONNX Runtime rounds the product by the scale ratio before adding zc.
        a, b = grids["both"]
        found = 0
        for _ in range(5000):
            sa, sb, sc = (np.float32(v) for v in rng.uniform(0.01, 0.3, 3))
            za, zb, zc = (int(v) for v in rng.integers(info.min, info.max + 1, 3))
            p = ((a.astype(np.int32) - za) * (b.astype(np.int32) - zb)).astype(np.float32)
            ratio = sa * sb / sc
            rounded = np.clip(np.rint(p * ratio + np.float32(zc)), info.min, info.max)
            fused = np.clip(np.rint(fma32(p, ratio, np.float32(zc))), info.min, info.max)
            if (rounded != fused).any():
                yield Case(f"test_qlinearmul_{tname(dt)}_rounding_{found}", "QLinearMul",
                           [("a", a, True), ("as", sa, False), ("az", np.array(za, dt), False), ("b", b, True),
                            ("bs", sb, False), ("bz", np.array(zb, dt), False), ("cs", sc, False),
                            ("cz", np.array(zc, dt), False)], out_dtype=ELEM_OF[np.dtype(dt)])
                found += 1
                if found == 2:
                    break


def lookup_cases():
    for op in ("QLinearSigmoid", "QLinearLeakyRelu"):
        for dt in (np.uint8, np.int8):
            # Every byte value, and a long odd-sized tensor.
            every = np.arange(256, dtype=np.uint8).view(dt).reshape(16, 16)
            for tag, x in (("all_values", every), ("long", qdata(dt, [3, 1111]))):
                attrs = {"alpha": float(rng.uniform(0.01, 0.3))} if op == "QLinearLeakyRelu" else {}
                ys = scale(0.003, 0.006) if op == "QLinearSigmoid" else scale(0.02, 0.08)
                yield Case(f"test_{op.lower()}_{tname(dt)}_{tag}", op,
                           [("x", x, True), ("xs", scale(0.02, 0.08), False), ("xz", zero_point(dt), False),
                            ("ys", ys, False), ("yz", zero_point(dt), False)], attrs, ELEM_OF[np.dtype(dt)])
            yield Case(f"test_{op.lower()}_{tname(dt)}_runtime_params", op,
                       [("x", every, True), ("xs", scale(0.02, 0.08), True), ("xz", zero_point(dt), True),
                        ("ys", scale(0.003, 0.05), True), ("yz", zero_point(dt), True)], {}, ELEM_OF[np.dtype(dt)])
            # X's zero point omitted (ONNX Runtime reads Y's even when it is omitted: it stays).
            yield Case(f"test_{op.lower()}_{tname(dt)}_no_zero_point", op,
                       [("x", every, True), ("xs", scale(0.02, 0.08), False), None, ("ys", scale(0.003, 0.05), False),
                        ("yz", zero_point(dt), False)], {}, ELEM_OF[np.dtype(dt)])


def softmax_emulated_max(x, xs, ys, yz, opset, axis):
    """Largest value before saturation of ONNX Runtime's QLinearSoftmax (it wraps int8 results above 127)."""
    xf = x.astype(np.float64)
    if opset < 13:
        ax = axis % x.ndim
        xf = xf.reshape(int(np.prod(x.shape[:ax])), -1)
        ax = 1
    else:
        ax = axis % x.ndim
    e = np.exp((xf - xf.max(axis=ax, keepdims=True)) * float(xs))
    p = e / e.sum(axis=ax, keepdims=True)
    return float((p * np.floor(1.0 / float(ys))).max()) + float(yz)


def softmax_cases():
    configs = [
        ("opset13_last", 13, -1, [3, 5, 67]),
        ("opset13_middle", 13, 1, [2, 21, 5]),
        ("opset13_first", 13, 0, [9, 4]),
        ("opset12_axis1", 12, 1, [2, 3, 11]),
        ("opset12_last", 12, -1, [4, 1000]),
        ("wide", 13, -1, [2, 5000]),
    ]
    for dt in (np.uint8, np.int8):
        for tag, opset, axis, shape in configs:
            yz = np.array(0 if dt == np.uint8 else -128, dtype=dt)
            ys = np.array(1.0 / 256.0, np.float32)
            for _ in range(200):
                x = qdata(dt, shape)
                xs = scale(0.01, 0.05)
                # ONNX Runtime wraps int8 results past 127 around (onyx saturates): keep int8 cases below.
                if dt == np.uint8 or softmax_emulated_max(x, xs, ys, yz, opset, axis) < 126.5:
                    break
            else:
                sys.exit(f"no int8 softmax case {tag} without wrap-around")
            yield Case(f"test_qlinearsoftmax_{tname(dt)}_{tag}", "QLinearSoftmax",
                       [("x", x, True), ("xs", xs, False), ("xz", zero_point(dt), False), ("ys", ys, False),
                        ("yz", yz, False)], {"opset": opset, "axis": axis}, ELEM_OF[np.dtype(dt)])
        # Parameters as graph inputs (the per-run table) and another output scale.
        x = qdata(dt, [6, 33])
        yield Case(f"test_qlinearsoftmax_{tname(dt)}_runtime_params", "QLinearSoftmax",
                   [("x", x, True), ("xs", scale(0.01, 0.03), True), None, ("ys", np.array(1 / 255.0, np.float32), True),
                    ("yz", np.array(0 if dt == np.uint8 else -128, dtype=dt), True)], {"opset": 13},
                   ELEM_OF[np.dtype(dt)])


def nhwc(x):
    return np.ascontiguousarray(np.moveaxis(x, 1, -1))


def pool_cases():
    configs = [
        # tag, channels-first input shape, attributes
        ("k3s1p1", [2, 19, 9, 11], {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1]}),
        ("k3s1p1_count_pad", [1, 5, 9, 40], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
        ("k2s2", [1, 37, 12, 10], {"kernel_shape": [2, 2], "strides": [2, 2]}),
        ("k3s2_ceil", [2, 6, 11, 13], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
        ("k3s2_ceil_pad_count", [1, 6, 10, 10],
         {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "pads": [1, 1, 1, 1], "count_include_pad": 1}),
        ("same_upper", [1, 4, 9, 9], {"kernel_shape": [4, 4], "auto_pad": "SAME_UPPER"}),
        ("asym_pads", [1, 3, 8, 21], {"kernel_shape": [2, 5], "pads": [0, 2, 1, 4], "strides": [1, 1]}),
        ("1d", [2, 7, 50], {"kernel_shape": [5], "pads": [2, 2]}),
        ("3d", [1, 3, 5, 6, 7], {"kernel_shape": [2, 3, 2], "pads": [1, 1, 0, 0, 1, 1], "strides": [1, 2, 1]}),
        ("whole_image", [2, 20, 7, 7], {"kernel_shape": [7, 7]}),
        ("wide_row", [1, 2, 3, 130], {"kernel_shape": [1, 3], "pads": [0, 1, 0, 1]}),
    ]
    for dt in (np.uint8, np.int8):
        for tag, shape, attrs in configs:
            x = qdata(dt, shape)
            for last in (0, 1):
                xin = nhwc(x) if last else x
                a = dict(attrs)
                a["channels_last"] = last
                yield Case(f"test_qlinearaveragepool_{tname(dt)}_{tag}{'_nhwc' if last else ''}", "QLinearAveragePool",
                           [("x", xin, True), ("xs", scale(0.01, 0.1), False), ("xz", zero_point(dt), False),
                            ("ys", scale(0.01, 0.1), False), ("yz", zero_point(dt), False)], a, ELEM_OF[np.dtype(dt)])
        # Same scales in and out (many windows average to exact .5: ties).
        x = qdata(dt, [1, 8, 6, 6])
        s = np.array(0.05, np.float32)
        yield Case(f"test_qlinearaveragepool_{tname(dt)}_ties", "QLinearAveragePool",
                   [("x", x, True), ("xs", s, False), ("xz", zero_point(dt), False), ("ys", s, False),
                    ("yz", zero_point(dt), False)], {"kernel_shape": [2, 2], "strides": [1, 1]}, ELEM_OF[np.dtype(dt)])
        # y's zero point omitted (ONNX Runtime's type inference wants x's).
        yield Case(f"test_qlinearaveragepool_{tname(dt)}_no_zero_point", "QLinearAveragePool",
                   [("x", qdata(dt, [1, 3, 7, 7]), True), ("xs", scale(), False), ("xz", zero_point(dt), False),
                    ("ys", scale(), False)],
                   {"kernel_shape": [3, 3], "strides": [2, 2]}, ELEM_OF[np.dtype(dt)])


def global_pool_cases():
    configs = [("small", [2, 19, 7, 9]), ("wide", [1, 70, 5, 5]), ("big_image", [1, 3, 112, 112]), ("1d", [3, 5, 33]),
               ("one_channel", [2, 1, 6, 6]), ("3d", [1, 4, 3, 5, 6])]
    for dt in (np.uint8, np.int8):
        for tag, shape in configs:
            x = qdata(dt, shape)
            for last in (0, 1):
                yield Case(f"test_qlinearglobalaveragepool_{tname(dt)}_{tag}{'_nhwc' if last else ''}",
                           "QLinearGlobalAveragePool",
                           [("x", nhwc(x) if last else x, True), ("xs", scale(0.01, 0.1), False),
                            ("xz", zero_point(dt), False), ("ys", scale(0.01, 0.1), False), ("yz", zero_point(dt), False)],
                           {"channels_last": last}, ELEM_OF[np.dtype(dt)])


def concat_cases():
    for dt in (np.uint8, np.int8):
        ys, yz = scale(0.02, 0.05), zero_point(dt)
        for tag, axis, shapes in (("axis1", 1, [[2, 3, 5], [2, 7, 5], [2, 1, 5]]), ("last", -1, [[4, 3], [4, 70], [4, 1]]),
                                  ("axis0", 0, [[1, 6, 2], [3, 6, 2]])):
            inputs = [("ys", ys, False), ("yz", yz, False)]
            for k, shp in enumerate(shapes):
                # The first input shares Y's parameters (a byte copy); the others are requantized.
                xs, xz = (ys, yz) if k == 0 else (scale(0.01, 0.1), zero_point(dt))
                inputs += [(f"x{k}", qdata(dt, shp), True), (f"x{k}s", xs, False), (f"x{k}z", xz, False)]
            yield Case(f"test_qlinearconcat_{tname(dt)}_{tag}", "QLinearConcat", inputs, {"axis": axis}, ELEM_OF[np.dtype(dt)])
        inputs = [("ys", ys, True), ("yz", yz, True)]
        for k in range(3):
            xs, xz = (ys, yz) if k == 1 else (scale(0.01, 0.1), zero_point(dt))
            inputs += [(f"x{k}", qdata(dt, [2, 3 + k, 17]), True), (f"x{k}s", xs, True), (f"x{k}z", xz, True)]
        yield Case(f"test_qlinearconcat_{tname(dt)}_runtime_params", "QLinearConcat", inputs, {"axis": 1},
                   ELEM_OF[np.dtype(dt)])


# ---- 8-bit matrix products: com.microsoft QGemm, DynamicQuantizeMatMul, MatMulIntegerToFloat, and
# the 2-D-B paths of ai.onnx MatMulInteger and QLinearMatMul ----

F32 = np.float32


def f32(v):
    return np.array(v, dtype=F32)


def centered(q):
    """The quantized values as int64, for the exact integer products."""
    return q.astype(np.int64)


def q_params(dtype, n=None):
    """A zero point (one, or n per column) of `dtype`."""
    info = np.iinfo(dtype)
    if n is None:
        return zero_point(dtype)
    return rng.integers(info.min, info.max + 1, size=n).astype(dtype)


def col_scales(n, lo=0.002, hi=0.02):
    return rng.uniform(lo, hi, size=n).astype(F32)


def int_product(a, za, b, zb):
    """(A - za)(B - zb) exactly, B 2-D, za a scalar, zb a scalar or one per column."""
    return np.matmul(centered(a) - int(za), centered(b) - np.asarray(zb, np.int64))


def fit_scale(values, steps=40.0):
    """An output scale putting most of `values` within +-steps of the zero point (some saturate)."""
    return f32(max(float(np.std(values)), 1e-3) / steps)


QGEMM_TYPES = [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)]  # ONNX Runtime's CPU kernels


def qgemm_case(name, a, b, trans_a=0, trans_b=0, alpha=None, c=None, out="quant", per_column=False, feed_b=False,
               scales=None, zps=None):
    """QGemm(A, a_scale, a_zp, B, b_scale, b_zp[, C][, y_scale[, y_zp]]). `out`: "quant" (y_scale and
    y_zero_point: 8-bit Y of A's type), "float" (neither), "scaled" (y_scale alone: float Y in units of
    y_scale). b_zero_point is always given (ONNX Runtime requires it) with b_scale's shape."""
    ta, tb = a.dtype, b.dtype
    n = b.shape[0] if trans_b else b.shape[1]
    if scales is None:
        a_s = scale(0.01, 0.05)
        b_s = col_scales(n) if per_column else scale(0.002, 0.02)
    else:
        a_s, b_s = scales
    if zps is None:
        za, zb = zero_point(ta), q_params(tb, n if per_column else None)
    else:
        za, zb = zps
    attrs = {}
    if trans_a:
        attrs["transA"] = 1
    if trans_b:
        attrs["transB"] = 1
    if alpha is not None:
        attrs["alpha"] = float(alpha)
    inputs = [("a", a, True), ("a_scale", a_s, False), ("a_zero_point", za, False), ("b", b, feed_b),
              ("b_scale", b_s, False), ("b_zero_point", zb, False)]
    inputs.append(("c", c, False) if c is not None else None)
    if out == "float":
        return Case(name, "QGemm", inputs, attrs, TensorProto.FLOAT)
    am, bm = (a.T if trans_a else a), (b.T if trans_b else b)
    acc = int_product(am, za, bm, zb)
    if c is not None:
        acc = acc + c.astype(np.int64)
    y_s = fit_scale(acc * float(alpha or 1.0) * float(a_s) * np.asarray(b_s, np.float64))
    inputs.append(("y_scale", y_s, False))
    if out == "scaled":
        return Case(name, "QGemm", inputs, attrs, TensorProto.FLOAT)
    inputs.append(("y_zero_point", zero_point(ta), False))
    return Case(name, "QGemm", inputs, attrs, ELEM_OF[np.dtype(ta)])


def c_input(kind, m, n):
    """QGemm's C (int32, at the scale a_scale * b_scale) of each shape ONNX Runtime broadcasts."""
    shapes = {"scalar": [], "one": [1], "row": [n], "row2d": [1, n], "col": [m, 1], "matrix": [m, n]}
    return rng.integers(-20000, 20000, size=shapes[kind]).astype(np.int32)


def qgemm_cases():
    for ta, tb in QGEMM_TYPES:
        tag = tname(ta) + tname(tb)
        m, k, n = 5, 37, 19
        for trans_a in (0, 1):
            for trans_b in (0, 1):
                a = qdata(ta, [k, m] if trans_a else [m, k])
                b = qdata(tb, [n, k] if trans_b else [k, n])
                yield qgemm_case(f"test_qgemm_{tag}_trans{trans_a}{trans_b}", a, b, trans_a, trans_b, c=c_input("row", m, n))
        a, b = qdata(ta, [m, k]), qdata(tb, [k, n])
        # C of every shape, with an 8-bit and a float Y.
        for kind in ("scalar", "one", "row", "row2d", "col", "matrix"):
            for out in ("quant", "float"):
                yield qgemm_case(f"test_qgemm_{tag}_c_{kind}_{out}", a, b, c=c_input(kind, m, n), out=out)
        yield qgemm_case(f"test_qgemm_{tag}_no_c_quant", a, b)
        yield qgemm_case(f"test_qgemm_{tag}_no_c_float", a, b, out="float")
        # y_scale without y_zero_point: ONNX Runtime gives a float Y divided by y_scale.
        yield qgemm_case(f"test_qgemm_{tag}_y_scale_only", a, b, c=c_input("row", m, n), out="scaled")
        yield qgemm_case(f"test_qgemm_{tag}_alpha_quant", a, b, alpha=rng.uniform(0.2, 3.0), c=c_input("row", m, n))
        yield qgemm_case(f"test_qgemm_{tag}_alpha_float", a, b, alpha=rng.uniform(0.2, 3.0), c=c_input("matrix", m, n),
                         out="float")
        # Per-column b_scale and b_zero_point, B as written and transposed.
        for trans_b in (0, 1):
            bt = qdata(tb, [n, k] if trans_b else [k, n])
            for out in ("quant", "float"):
                yield qgemm_case(f"test_qgemm_{tag}_per_column_trans{trans_b}_{out}", a, bt, trans_b=trans_b,
                                 c=c_input("row", m, n), out=out, per_column=True)
        # B a graph input (packed at each run), one row, and a product of several k-blocks and panels.
        yield qgemm_case(f"test_qgemm_{tag}_b_fed", a, b, trans_b=0, c=c_input("col", m, n), feed_b=True)
        yield qgemm_case(f"test_qgemm_{tag}_one_row", qdata(ta, [1, 300]), qdata(tb, [300, 33]), c=c_input("row", 1, 33))
        big_a, big_b = qdata(ta, [64, 300]), qdata(tb, [70, 300])
        yield qgemm_case(f"test_qgemm_{tag}_big", big_a, big_b, trans_b=1, c=c_input("row", 64, 70), per_column=True)
        yield qgemm_case(f"test_qgemm_{tag}_big_float", big_a, big_b, trans_b=1, alpha=0.5, out="float")
    yield from qgemm_rounding_cases()


def qgemm_rounding_cases():
    """QGemm's requantisation at ties: the multiplier a power of two and the sums odd, so that half
    of the outputs are exact halves (rounded half to even). The order in which the multiplier
    alpha * a_scale * b_scale / y_scale is computed (ONNX Runtime: (((alpha a_scale) b_scale) /
    y_scale)) is checked by the float outputs, compared exactly: another order moves them by an
    ulp (an 8-bit output only where a product lands on a tie, about one in a million)."""
    for ta, tb in QGEMM_TYPES:
        tag = tname(ta) + tname(tb)
        ia, ib = np.iinfo(ta), np.iinfo(tb)
        za, zb = np.array(ia.min + 100, ta), np.array(ib.min + 120, tb)
        a = (rng.integers(-6, 7, size=[9, 8]) + int(za)).astype(ta)
        b = (rng.integers(-6, 7, size=[8, 23]) + int(zb)).astype(tb)
        # multiplier 0.5: (2^-3 * 2^-4) / 2^-6; C none, per column, and a whole matrix (its own path)
        for kind in (None, "row", "matrix"):
            c = None if kind is None else rng.integers(-20, 21, size=[9, 23] if kind == "matrix" else [23]).astype(np.int32)
            case = qgemm_case(f"test_qgemm_{tag}_ties{'_c_' + kind if kind else ''}", a, b, c=c,
                              scales=(f32(0.125), f32(0.0625)), zps=(za, zb))
            case.inputs[-2] = ("y_scale", f32(0.015625), False)
            yield case


def ort_dynamic_quantize(x):
    """DynamicQuantizeMatMul's quantization of A as ONNX Runtime computes it (float32 steps): scale,
    zero point, and x / scale rounded half to even."""
    lo, hi = min(F32(x.min()) if x.size else F32(0), F32(0)), max(F32(x.max()) if x.size else F32(0), F32(0))
    s = F32(1) if hi == lo else F32(F32(hi - lo) / F32(255))
    zp = np.rint(np.clip(F32(F32(0) - F32(lo / s)), 0, 255))
    return s, zp, np.clip(np.rint((x / s).astype(F32)), -zp, 255 - zp) + zp


def dqmm_case(name, a, b, per_column=False, b_zp="scalar", bias=True, feed_b=False):
    """DynamicQuantizeMatMul(A, B, b_scale[, b_zero_point][, bias]); b_zp: None, "scalar" or "column"."""
    n = b.shape[-1]
    inputs = [("a", a, True), ("b", b, feed_b), ("b_scale", col_scales(n) if per_column else scale(0.002, 0.02), False)]
    if b_zp is None:
        inputs.append(None)
    else:
        inputs.append(("b_zero_point", q_params(b.dtype, n if b_zp == "column" else None), False))
    inputs.append(("bias", rng.uniform(-2, 2, size=n).astype(F32), False) if bias else None)
    while inputs[-1] is None:
        inputs.pop()
    return Case(name, "DynamicQuantizeMatMul", inputs, {}, TensorProto.FLOAT)


def floats(shape, lo=-3.0, hi=3.0):
    return rng.uniform(lo, hi, size=shape).astype(F32)


def dqmm_cases():
    for tb in (np.int8, np.uint8):
        t = tname(tb)
        k, n = 37, 19
        b = qdata(tb, [k, n])
        yield dqmm_case(f"test_dynamicquantizematmul_{t}_2d", floats([5, k]), b, b_zp=None, bias=False)
        yield dqmm_case(f"test_dynamicquantizematmul_{t}_2d_zero_point_bias", floats([5, k]), b)
        yield dqmm_case(f"test_dynamicquantizematmul_{t}_3d_per_column", floats([2, 5, k]), b, per_column=True, b_zp="column")
        yield dqmm_case(f"test_dynamicquantizematmul_{t}_per_column_scale_only", floats([4, k]), b, per_column=True, b_zp=None)
        yield dqmm_case(f"test_dynamicquantizematmul_{t}_per_column_scalar_zero_point", floats([4, k]), b, per_column=True)
        yield dqmm_case(f"test_dynamicquantizematmul_{t}_1d_a", floats([k]), b)
        yield dqmm_case(f"test_dynamicquantizematmul_{t}_b_fed", floats([3, k]), b, per_column=True, b_zp="column", feed_b=True)
        # A all zero (ONNX Runtime's scale is then 1: Y is the bias), all positive (zero point 0),
        # all negative (zero point 255).
        yield dqmm_case(f"test_dynamicquantizematmul_{t}_zero_a", np.zeros([3, k], F32), b)
        yield dqmm_case(f"test_dynamicquantizematmul_{t}_positive_a", floats([3, k], 0.5, 4.0), b)
        yield dqmm_case(f"test_dynamicquantizematmul_{t}_negative_a", floats([3, k], -4.0, -0.5), b)
        yield dqmm_case(f"test_dynamicquantizematmul_{t}_big", floats([64, 300]), qdata(tb, [300, 70]), per_column=True,
                        b_zp="column")
    yield from dqmm_rounding_cases()


def tie_neighbours(s, zp, lo, hi):
    """float32 values within (lo, hi), a few ulps either side of the rounding ties (j + 1/2) s of a
    quantization at scale s with zero point zp."""
    j = np.arange(-int(zp), 256 - int(zp))
    bits = ((j + 0.5) * np.float64(s)).astype(F32).view(np.int32)
    c = np.concatenate([(bits + d).view(F32) for d in range(-3, 4)])
    return c[(c > lo) & (c < hi)]


def dqmm_rounding_cases():
    """DynamicQuantizeMatMul where A's quantization decides: (1) every value of A a rounding tie
    (scale 1/32, values (j + 1/2) / 32: half to even); (2) A drawn (from the seeded generator), with
    a few values near ties put in where computing ONNX Runtime's float32 steps another way moves
    the quantized value: x times 1 / scale instead of x / scale, or the scale as (max - min) times
    1/255 instead of divided by 255."""
    b = qdata(np.int8, [40, 17])
    j = rng.integers(-96, 159, size=[6, 40])
    a = ((j + 0.5) / 32.0).astype(F32)
    a[0, 0], a[0, 1] = F32(-3.0), F32(255 / 32 - 3.0)  # min -3, max 4.96875: scale exactly 1/32, zero point 96
    yield dqmm_case("test_dynamicquantizematmul_s8_ties", a, b)
    for vname in ("reciprocal", "scale_times_inverse"):
        for _ in range(2000):
            x = floats([8, 40], -2.5, 2.5)
            s, zp, q = ort_dynamic_quantize(x)
            lo, hi = min(F32(x.min()), F32(0)), max(F32(x.max()), F32(0))
            if vname == "reciprocal":
                other = lambda v: np.rint((v * F32(F32(1) / s)).astype(F32))
            else:
                s2 = F32(F32(hi - lo) * F32(1 / 255))
                if s2 == s:
                    continue
                other = lambda v: np.rint((v / s2).astype(F32))
            c = tie_neighbours(s, zp, lo, hi)
            c = c[np.rint((c / s).astype(F32)) != other(c)]
            if c.size == 0:
                continue
            flat = x.reshape(-1)
            keep = {int(np.argmin(flat)), int(np.argmax(flat))}
            spots = [i for i in rng.permutation(flat.size) if i not in keep][:min(8, c.size)]
            flat[spots] = rng.choice(c, size=len(spots), replace=False)
            s_check, _, q = ort_dynamic_quantize(x)
            assert s_check == s
            if vname == "reciprocal":
                moved = np.clip(other(x), -zp, 255 - zp) + zp
            else:
                zp2 = np.rint(np.clip(F32(F32(0) - F32(lo / s2)), 0, 255))
                moved = np.clip(other(x), -zp2, 255 - zp2) + zp2
            if (moved != q).any():
                yield dqmm_case(f"test_dynamicquantizematmul_s8_rounding_{vname}", x, b)
                break
        else:
            sys.exit(f"no DynamicQuantizeMatMul rounding case for {vname}")


def mmitf_cases():
    """MatMulIntegerToFloat(A, B, a_scale, b_scale[, a_zero_point][, b_zero_point][, bias]): ONNX
    Runtime's CPU kernels take uint8 A with uint8 or int8 B, and int8 A with int8 B."""
    for ta, tb in QGEMM_TYPES:
        tag = tname(ta) + tname(tb)
        k, n = 37, 19
        a, b = qdata(ta, [5, k]), qdata(tb, [k, n])
        for za in (False, True):
            for zb in (False, True):
                for bias in (False, True):
                    inputs = [("a", a, True), ("b", b, False), ("a_scale", scale(0.01, 0.05), False),
                              ("b_scale", scale(0.002, 0.02), False),
                              ("a_zero_point", zero_point(ta), False) if za else None,
                              ("b_zero_point", zero_point(tb), False) if zb else None,
                              ("bias", floats([n]), False) if bias else None]
                    while inputs[-1] is None:
                        inputs.pop()
                    yield Case(f"test_matmulintegertofloat_{tag}_{'az' if za else 'no_az'}_{'bz' if zb else 'no_bz'}"
                               f"{'_bias' if bias else ''}", "MatMulIntegerToFloat", inputs, {}, TensorProto.FLOAT)
        yield Case(f"test_matmulintegertofloat_{tag}_3d_per_column", "MatMulIntegerToFloat",
                   [("a", qdata(ta, [2, 3, k]), True), ("b", b, False), ("a_scale", scale(0.01, 0.05), False),
                    ("b_scale", col_scales(n), False), ("a_zero_point", zero_point(ta), False),
                    ("b_zero_point", q_params(tb, n), False), ("bias", floats([n]), False)], {}, TensorProto.FLOAT)
        yield Case(f"test_matmulintegertofloat_{tag}_b_fed", "MatMulIntegerToFloat",
                   [("a", qdata(ta, [6, 300]), True), ("b", qdata(tb, [300, 70]), True), ("a_scale", scale(0.01, 0.05), False),
                    ("b_scale", col_scales(70), False), ("a_zero_point", zero_point(ta), False),
                    ("b_zero_point", q_params(tb, 70), False), ("bias", floats([70]), False)], {}, TensorProto.FLOAT)


def onnx_matmul_cases():
    """The 2-D-B paths of ai.onnx MatMulInteger and QLinearMatMul: A of rank 2 and 3, per-column
    parameters of B, B a graph input."""
    for ta, tb in QGEMM_TYPES + [(np.int8, np.uint8)]:
        tag = tname(ta) + tname(tb)
        k, n = 37, 19
        b = qdata(tb, [k, n])
        for rank in (2, 3):
            a = qdata(ta, [5, k] if rank == 2 else [2, 3, k])
            yield Case(f"test_matmulinteger_{tag}_{rank}d_per_column", "MatMulInteger",
                       [("a", a, True), ("b", b, False), ("a_zero_point", zero_point(ta), False),
                        ("b_zero_point", q_params(tb, n), False)], {}, TensorProto.INT32, domain="")
        yield Case(f"test_matmulinteger_{tag}_b_fed", "MatMulInteger",
                   [("a", qdata(ta, [4, k]), True), ("b", b, True), ("a_zero_point", zero_point(ta), False),
                    ("b_zero_point", zero_point(tb), False)], {}, TensorProto.INT32, domain="")
        if ta == np.int8 and tb == np.uint8:
            continue  # (ONNX Runtime has no int8 x uint8 QLinearMatMul)
        for rank, per_column in ((2, False), (2, True), (3, True)):
            a = qdata(ta, [5, k] if rank == 2 else [2, 3, k])
            za = zero_point(ta)
            bs = col_scales(n) if per_column else scale(0.002, 0.02)
            zb = q_params(tb, n if per_column else None)
            a_s = scale(0.01, 0.05)
            y = int_product(a.reshape(-1, k), za, b, zb) * float(a_s) * np.asarray(bs, np.float64)
            yield Case(f"test_qlinearmatmul_{tag}_{rank}d{'_per_column' if per_column else ''}", "QLinearMatMul",
                       [("a", a, True), ("a_scale", a_s, False), ("a_zero_point", za, False), ("b", b, False),
                        ("b_scale", bs, False), ("b_zero_point", zb, False), ("y_scale", fit_scale(y), False),
                        ("y_zero_point", zero_point(ta), False)], {}, ELEM_OF[np.dtype(ta)], domain="")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_contrib_tests.py OUT_DIR")
    out = sys.argv[1]
    count = 0
    for gen in (binary_cases, rounding_sensitive_cases, lookup_cases, softmax_cases, pool_cases, global_pool_cases,
                concat_cases, qgemm_cases, dqmm_cases, mmitf_cases, onnx_matmul_cases):
        for case in gen():
            write_case(out, case)
            count += 1
    print(f"onnxruntime {ort.__version__}: wrote {count} com.microsoft node tests to {out}")


if __name__ == "__main__":
    main()
