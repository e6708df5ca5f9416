"""Fixtures for onyx's Python tests: small ONNX models built with onnx.helper, and the repo's
example models.

Run with the build's package on the path, e.g.
    PYTHONPATH=build/python python -m pytest python/tests -q
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_MODELS = REPO / "examples" / "models"

OPSET = 17
IR_VERSION = 8


def make_model(graph, opset=OPSET, ir_version=IR_VERSION, check=True, **kwargs) -> onnx.ModelProto:
    """A model of `graph`; `check` runs onnx's checker (which wants every graph input and output to
    have a shape, so rank-free models skip it)."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kwargs)
    model.ir_version = ir_version
    if check:
        onnx.checker.check_model(model)
    return model


def save(model: onnx.ModelProto, directory: Path, name: str) -> Path:
    path = directory / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def example_models() -> Path:
    return EXAMPLE_MODELS


@pytest.fixture(scope="session")
def tiny_cnn(example_models) -> Path:
    path = example_models / "tiny_cnn.onnx"
    if not path.exists():
        pytest.skip(f"example model {path.name} is missing")
    return path


# --- Add: C = A + B with a symbolic batch dim --------------------------------------------------


def add_model() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Add", ["A", "B"], ["C"], name="add")],
        "add_graph",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("B", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("C", TensorProto.FLOAT, ["batch", 3])],
    )
    return make_model(graph)


@pytest.fixture(scope="session")
def add_path(models_dir) -> Path:
    return save(add_model(), models_dir, "add")


# --- two outputs: S = A + B, P = A * B, N = Neg(A); A has an unknown (unnamed) dim ---------------


@pytest.fixture(scope="session")
def multi_out_path(models_dir) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Add", ["A", "B"], ["S"], name="add"),
         helper.make_node("Mul", ["A", "B"], ["P"], name="mul"),
         helper.make_node("Neg", ["A"], ["N"], name="neg")],
        "multi_out",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [None, 4]),
         helper.make_tensor_value_info("B", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("S", TensorProto.FLOAT, [None, 4]),
         helper.make_tensor_value_info("P", TensorProto.FLOAT, [None, 4]),
         helper.make_tensor_value_info("N", TensorProto.FLOAT, [None, 4])],
    )
    return save(make_model(graph), models_dir, "multi_out")


# --- an initializer that is also a graph input (overridable), IR version 4 ----------------------


@pytest.fixture(scope="session")
def overridable_path(models_dir) -> Path:
    w = np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1.0
    graph = helper.make_graph(
        [helper.make_node("Mul", ["X", "W"], ["Y"], name="mul")],
        "overridable",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("W", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])],
        initializer=[onnx.numpy_helper.from_array(w, "W")],
    )
    return save(make_model(graph, opset=9, ir_version=4), models_dir, "overridable")


# --- Identity per element type -------------------------------------------------------------------


@pytest.fixture(scope="session")
def identity_model(models_dir):
    """identity_model(elem_type, shape=None) -> path of Identity X -> Y of that ONNX element type
    (shape None: rank-free)."""
    cache = {}

    def make(elem_type: int, shape=None) -> Path:
        key = (elem_type, None if shape is None else tuple(shape))
        if key not in cache:
            graph = helper.make_graph(
                [helper.make_node("Identity", ["X"], ["Y"], name="identity")],
                "identity",
                [helper.make_tensor_value_info("X", elem_type, shape)],
                [helper.make_tensor_value_info("Y", elem_type, shape)],
            )
            name = f"identity_{TensorProto.DataType.Name(elem_type).lower()}_{len(cache)}"
            cache[key] = save(make_model(graph, check=shape is not None), models_dir, name)
        return cache[key]

    return make


@pytest.fixture(scope="session")
def cast_model(models_dir):
    """cast_model(from_type, to_type) -> path of Cast X -> Y."""
    cache = {}

    def make(src: int, dst: int) -> Path:
        if (src, dst) not in cache:
            graph = helper.make_graph(
                [helper.make_node("Cast", ["X"], ["Y"], to=dst, name="cast")],
                "cast",
                [helper.make_tensor_value_info("X", src, None)],
                [helper.make_tensor_value_info("Y", dst, None)],
            )
            cache[(src, dst)] = save(make_model(graph, check=False), models_dir, f"cast_{src}_{dst}")
        return cache[(src, dst)]

    return make


# --- Loop with a trip count given as an input (a long one for cancellation) ----------------------


@pytest.fixture(scope="session")
def loop_path(models_dir) -> Path:
    """V_out = V + trip_count * 1 (elementwise), computed one iteration at a time by a Loop.
    Inputs: trip_count (int64 scalar), V (float [4])."""
    one = onnx.numpy_helper.from_array(np.ones(4, dtype=np.float32), "one")
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Add", ["v_in", "one"], ["v_out"], name="step")],
        "loop_body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [4])],
        initializer=[one],
    )
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["cond"], value=helper.make_tensor("c", TensorProto.BOOL, [], [True]),
                          name="cond"),
         helper.make_node("Loop", ["trip_count", "cond", "V"], ["V_out"], body=body, name="loop")],
        "long_loop",
        [helper.make_tensor_value_info("trip_count", TensorProto.INT64, []),
         helper.make_tensor_value_info("V", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("V_out", TensorProto.FLOAT, [4])],
    )
    return save(make_model(graph), models_dir, "long_loop")


# --- strings ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def string_path(identity_model) -> Path:
    return identity_model(TensorProto.STRING, ["n"])


# --- metadata --------------------------------------------------------------------------------------


METADATA = {
    "producer_name": "onyx-tests",
    "producer_version": "4.5.6",
    "domain": "org.onyx.tests",
    "model_version": 42,
    "doc_string": "a model with every metadata field set",
    "graph_name": "metadata_graph",
    "graph_doc_string": "the graph's own description",
    "custom": {"author": "pytest", "license": "MIT", "empty": ""},
}


@pytest.fixture(scope="session")
def metadata():
    return METADATA


@pytest.fixture(scope="session")
def metadata_path(models_dir) -> Path:
    m = METADATA
    graph = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["Y"], name="relu")],
        m["graph_name"],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])],
        doc_string=m["graph_doc_string"],
    )
    model = make_model(graph, producer_name=m["producer_name"], producer_version=m["producer_version"],
                       domain=m["domain"], model_version=m["model_version"], doc_string=m["doc_string"])
    helper.set_model_props(model, m["custom"])
    return save(model, models_dir, "metadata")


# --- sequences and optionals -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def sequence_path(models_dir) -> Path:
    """S: seq(tensor(float) [?, 3]) -> Y = ConcatFromSequence(S, axis=0), L = SequenceLength(S)."""
    graph = helper.make_graph(
        [helper.make_node("ConcatFromSequence", ["S"], ["Y"], axis=0, name="concat"),
         helper.make_node("SequenceLength", ["S"], ["L"], name="length")],
        "sequence",
        [helper.make_tensor_sequence_value_info("S", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 3]),
         helper.make_tensor_value_info("L", TensorProto.INT64, [])],
    )
    return save(make_model(graph), models_dir, "sequence")


@pytest.fixture(scope="session")
def optional_path(models_dir) -> Path:
    """O: optional(tensor(float)) -> H = OptionalHasElement(O) (opset 18)."""
    opt_type = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
    graph = helper.make_graph(
        [helper.make_node("OptionalHasElement", ["O"], ["H"], name="has")],
        "optional",
        [helper.make_value_info("O", opt_type)],
        [helper.make_tensor_value_info("H", TensorProto.BOOL, [])],
    )
    return save(make_model(graph, opset=18), models_dir, "optional")


# --- a heavier model, for threading tests ----------------------------------------------------------


@pytest.fixture(scope="session")
def matmul_chain_path(models_dir) -> Path:
    """Y = Tanh(...Tanh(X @ W) @ W ...) with a 256x256 W, 24 times: a few ms a run."""
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((256, 256)) / 16).astype(np.float32)
    nodes, prev = [], "X"
    for i in range(24):
        nodes.append(helper.make_node("MatMul", [prev, "W"], [f"m{i}"], name=f"matmul{i}"))
        nodes.append(helper.make_node("Tanh", [f"m{i}"], [f"t{i}"], name=f"tanh{i}"))
        prev = f"t{i}"
    nodes.append(helper.make_node("Identity", [prev], ["Y"], name="out"))
    graph = helper.make_graph(
        nodes, "matmul_chain",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [64, 256])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [64, 256])],
        initializer=[onnx.numpy_helper.from_array(w, "W")],
    )
    return save(make_model(graph), models_dir, "matmul_chain")


# --- the onnxruntime reference ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def ort():
    ort = pytest.importorskip("onnxruntime")
    ort.set_default_logger_severity(3)
    return ort


@pytest.fixture(scope="session")
def ort_run(ort):
    """ort_run(path, feed, output_names=None) -> onnxruntime's outputs (CPU EP)."""
    sessions = {}

    def run(path, feed, output_names=None):
        key = str(path)
        if key not in sessions:
            sessions[key] = ort.InferenceSession(key, providers=["CPUExecutionProvider"])
        return sessions[key].run(output_names, feed)

    return run
