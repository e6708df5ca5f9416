"""Writes the models the EP plugin tests run, each with a test data set whose outputs numpy
computes: model.onnx (a MatMul, which the example plugin vecfuse does not take, followed by chains
of float32 elementwise nodes it fuses) and custom/model.onnx (vecfuse's custom op Swish of domain
com.example.vecfuse, then a Mul).

Usage: make_model.py OUT_DIR   (writes OUT_DIR/model.onnx, OUT_DIR/test_data_set_0/ and OUT_DIR/custom/)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(out, model, arrays):
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    for i, (name, arr) in enumerate(arrays):
        kind = "input" if i == 0 else "output"
        index = 0 if i == 0 else i - 1
        t = numpy_helper.from_array(arr.astype(np.float32), name=name)
        with open(os.path.join(out, "test_data_set_0", f"{kind}_{index}.pb"), "wb") as f:
            f.write(t.SerializeToString())


def custom_model(out):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 8)).astype(np.float32)
    two = np.array(2.0, dtype=np.float32)
    nodes = [
        helper.make_node("Swish", ["x"], ["s"], name="swish", domain="com.example.vecfuse"),
        helper.make_node("Mul", ["s", "two"], ["y"], name="mul"),
    ]
    graph = helper.make_graph(
        nodes, "vecfuse_custom", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [numpy_helper.from_array(two, "two")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example.vecfuse", 1)],
                              producer_name="onyx-tests")
    model.ir_version = 8
    save(out, model, [("x", x), ("y", x / (1 + np.exp(-x)) * two)])


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
    a = x @ w + half
    y = np.tanh(np.maximum(a * two, 0) - x)
    z = np.maximum(1 / (1 + np.exp(-x)), a)
    save(out, model, [("x", x), ("y", y), ("z", z)])
    custom_model(os.path.join(out, "custom"))

if __name__ == "__main__":
    main(sys.argv[1])
