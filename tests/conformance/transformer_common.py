"""The shared part of the com.microsoft transformer-op node tests (make_transformer_tests.py).

A case is one node (or a few) in a model, its inputs' data, and the outputs ONNX Runtime's CPU EP
computes for them (graph optimisations off, one thread); for an operator ONNX Runtime runs only on
CUDA, the case gives a numpy reference instead (`reference`). Each case module
(transformer_cases_*.py) has a `cases(rng)` generator of Case objects.
"""
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper  # noqa: F401 (re-exported for case modules)

MS = "com.microsoft"

ELEM_OF = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.bool_): TensorProto.BOOL,
}


class Case:
    """One node of `op` (domain `domain`, default com.microsoft) with `inputs`: a list of
    (name, array, is_feed) (feeds become graph inputs with data, the others initializers) or None
    for an omitted optional input; `outputs`: the node's output names, "" for an omitted optional
    one (the graph outputs are the non-empty ones); `attrs`: the node's attributes. `opset` is the
    ai.onnx opset the model imports. `reference`, when given, is a function of the feeds and
    initializers (a dict name -> array) returning the outputs (a list of arrays, in order) instead
    of ONNX Runtime's."""

    def __init__(self, name, op, inputs, outputs=("y",), attrs=None, domain=MS, opset=17, reference=None):
        self.name = name
        self.op = op
        self.inputs = inputs
        self.outputs = list(outputs)
        self.attrs = attrs or {}
        self.domain = domain
        self.opset = opset
        self.reference = reference


def randn(rng, shape, dtype=np.float32, scale=1.0):
    return (rng.standard_normal(size=shape) * scale).astype(dtype)


def uniform(rng, shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def run_ort(model, feeds):
    """Every output of `model` for `feeds` on ONNX Runtime's CPU EP: graph optimisations off, one
    thread (the reference of the com.microsoft node tests, make_contrib_tests.py's too)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)
