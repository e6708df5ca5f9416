"""Writes the model the EP plugin tests run (a MatMul, which the example plugin vecfuse does not
take, followed by chains of float32 elementwise nodes it fuses) and a test data set whose outputs
numpy computes.

Usage: make_model.py OUT_DIR   (writes OUT_DIR/model.onnx and OUT_DIR/test_data_set_0/)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(out):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 64, 64)).astype(np.float32)
    w = (rng.standard_normal((64, 64)) / 8).astype(np.float32)
    two = np.array(2.0, dtype=np.float32)
    half = np.array(0.5, dtype=np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
        helper.make_node("Add", ["mm", "half"], ["a"], name="add"),
        helper.make_node("Mul", ["a", "two"], ["m"], name="mul"),
        helper.make_node("Relu", ["m"], ["r"], name="relu"),
        helper.make_node("Sub", ["r", "x"], ["s"], name="sub"),
        helper.make_node("Tanh", ["s"], ["y"], name="tanh"),
        helper.make_node("Sigmoid", ["x"], ["g"], name="sigmoid"),
        helper.make_node("Max", ["g", "a"], ["z"], name="max"),
    ]
    graph = helper.make_graph(
        nodes, "vecfuse_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64, 64]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 64, 64])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(two, "two"), numpy_helper.from_array(half, "half")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onyx-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    a = x @ w + half
    y = np.tanh(np.maximum(a * two, 0) - x)
    z = np.maximum(1 / (1 + np.exp(-x)), a)
    for name, arr in [("input_0", x), ("output_0", y), ("output_1", z)]:
        t = numpy_helper.from_array(arr.astype(np.float32), name="x" if name == "input_0" else name[-1] == "0" and "y" or "z")
        with open(os.path.join(out, "test_data_set_0", name + ".pb"), "wb") as f:
            f.write(t.SerializeToString())


if __name__ == "__main__":
    main(sys.argv[1])
