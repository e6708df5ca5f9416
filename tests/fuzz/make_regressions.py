#!/usr/bin/env python3
"""Writes tests/fuzz/regressions/*.onnx: one small model per crash class the fuzz campaigns found
(each crashed onyx before its fix). CTest's fuzz_regressions replays them through the fuzz target,
which must end each with a result or an onyx::Error. Run with Debian's python3 (python3-onnx):

    /usr/bin/python3 tests/fuzz/make_regressions.py

Crashers found by a campaign are kept as they were written (crash-<hash>.onnx), beside these.
"""
import os

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regressions")


def save(name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="onyx-fuzz-regressions")
    m.ir_version = 8
    with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


F = TensorProto.FLOAT
I64 = TensorProto.INT64

# MeanVarianceNormalization of a rank-0 input: wrote into an empty axes vector (SIGSEGV).
save("mvn_rank0", [helper.make_node("MeanVarianceNormalization", ["x"], ["y"])], [vi("x", F, [])], [vi("y", F, None)])

# Broadcasting binary ops over a zero-size dim: `%` by zero in the index walk (SIGFPE).
for op, dt in [("PRelu", F), ("Mod", I64), ("Max", F), ("Min", F), ("BitShift", TensorProto.UINT8), ("Xor", TensorProto.BOOL)]:
    attrs = {"direction": "LEFT"} if op == "BitShift" else {}
    save(f"broadcast_zero_size_{op.lower()}", [helper.make_node(op, ["a", "b"], ["y"], **attrs)],
         [vi("a", dt, [0, 3]), vi("b", dt, [1, 3])], [vi("y", dt, None)])

# Conv / ConvTranspose whose kernel_shape disagrees with W's spatial dims (heap corruption).
w = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")
save("conv_kernel_shape_mismatch", [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[5, 5])],
     [vi("x", F, [1, 1, 8, 8])], [vi("y", F, None)], [w])
wt = numpy_helper.from_array(np.ones((1, 2, 3, 3), np.float32), "w")
save("conv_transpose_kernel_shape_mismatch", [helper.make_node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[1, 1])],
     [vi("x", F, [1, 1, 4, 4])], [vi("y", F, None)], [wt])

# A shape input with a huge static dim: the loader allocated it before failing.
save("huge_static_dim_input", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [1 << 40, 1 << 30])], [vi("y", F, None)])
# Integer Add/Sub/Mul/Neg-by-Div(-1) that overflow int64/int32 (signed overflow: undefined
# behaviour, reported by UBSan); they wrap around now, as ORT's do. Constant operands (folded when
# the session is made) and a graph input (computed at run time).
for op in ("Add", "Sub", "Mul", "Div"):
    for dt, np_t in ((I64, np.int64), (TensorProto.INT32, np.int32)):
        lo, hi = np.iinfo(np_t).min, np.iinfo(np_t).max
        c = numpy_helper.from_array(np.array([lo, hi, lo, -1], np_t), "c")
        d = numpy_helper.from_array(np.array([lo, hi, -1, lo], np_t), "d")
        name = f"int_overflow_{op.lower()}_{'i64' if dt == I64 else 'i32'}"
        save(name, [helper.make_node(op, ["c", "d"], ["folded"]), helper.make_node(op, ["x", "folded"], ["y"])],
             [vi("x", dt, [4])], [vi("y", dt, None), vi("folded", dt, None)], [c, d])
print("wrote", len(os.listdir(OUT)), "models to", OUT)
