#!/usr/bin/env python3
"""Makes the small models of the CLI test (tests/cli/cli_test.sh).

Run with Debian's python3 (python3-onnx): /usr/bin/python3 tests/cli/data/make_models.py
  unnamed_dim.onnx  y = Relu(x), x: float[batch, ?, 4] (dim 1 has neither a name nor a value)
  custom_op.onnx    y = com.example::Frobnicate(x), an op no EP runs (onyx info must still read it)
"""
import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def unnamed_dim():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", None, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", None, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "unnamed_dim", [x], [y])
    model = helper.make_model(graph, producer_name="onyx-cli-test", opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(HERE, "unnamed_dim.onnx"))


def custom_op():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])
    node = helper.make_node("Frobnicate", ["x"], ["y"], name="frob", domain="com.example")
    graph = helper.make_graph([node], "custom_op", [x], [y])
    model = helper.make_model(graph, producer_name="onyx-cli-test",
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    onnx.save(model, os.path.join(HERE, "custom_op.onnx"))


if __name__ == "__main__":
    unnamed_dim()
    custom_op()
