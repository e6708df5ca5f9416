#!/usr/bin/env python3
"""Writes single-node tests of the com.microsoft transformer operators (and ONNX Runtime's
ai.onnx-domain contrib ones: LayerNormalization-1, SimplifiedLayerNormalization), with outputs from
ONNX Runtime.

    python make_transformer_tests.py OUT_DIR [MODULE...]

Run with a Python that has onnxruntime, onnx and numpy (the ORT venv, .cache/ort-venv). Each test
is OUT_DIR/node/<name>/model.onnx with test_data_set_0/{input_K.pb,output_K.pb}, the layout of the
ONNX backend's node tests, so tests/conformance/runner.cpp (onyx_conformance) runs them; the
expected outputs are what ONNX Runtime's CPU EP computes (graph optimisations off, one thread), or
a numpy reference for the few operators ONNX Runtime runs only on CUDA. The cases are in the
modules transformer_cases_*.py (all of them, or the MODULEs named, e.g. `basic`); their data are
drawn from a fixed seed per module, so the same ONNX Runtime gives the same files.
"""
import importlib
import os
import shutil
import sys
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transformer_common import ELEM_OF, MS, run_ort  # noqa: E402

MODULES = ("basic", "attention", "gqa", "nbits", "rnn")


def build_model(case):
    node_inputs, graph_inputs, inits, feeds, values = [], [], [], {}, {}
    for item in case.inputs:
        if item is None:
            node_inputs.append("")
            continue
        name, value, is_feed = item
        node_inputs.append(name)
        values[name] = value
        if is_feed:
            graph_inputs.append(helper.make_tensor_value_info(name, ELEM_OF[value.dtype], list(value.shape)))
            feeds[name] = value
        else:
            inits.append(numpy_helper.from_array(value, name))
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    node = helper.make_node(case.op, node_inputs, case.outputs, domain=case.domain, name=case.name, **case.attrs)
    outs = [onnx.ValueInfoProto(name=o) for o in case.outputs if o]
    graph = helper.make_graph([node], case.name, graph_inputs, outs, inits)
    opsets = [helper.make_opsetid("", case.opset)]
    if case.domain == MS:
        opsets.append(helper.make_opsetid(MS, 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model, feeds, values


def write_case(out_dir, case):
    model, feeds, values = build_model(case)
    ys = case.reference(values) if case.reference else run_ort(model, feeds)
    outs = [o for o in case.outputs if o]
    if len(ys) != len(outs):
        sys.exit(f"{case.name}: {len(ys)} reference outputs for {len(outs)} graph outputs")
    # The outputs' types, now known, go into the model (the runner reads them from the data).
    for vi, y in zip(model.graph.output, ys):
        vi.CopyFrom(helper.make_tensor_value_info(vi.name, ELEM_OF[np.asarray(y).dtype], list(np.shape(y))))
    d = os.path.join(out_dir, "node", case.name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for k, gi in enumerate(model.graph.input):
        with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[gi.name], gi.name).SerializeToString())
    for k, (name, y) in enumerate(zip(outs, ys)):
        with open(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(y), name).SerializeToString())


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make_transformer_tests.py OUT_DIR [MODULE...]")
    out = sys.argv[1]
    names = sys.argv[2:] or MODULES
    count = 0
    for m in names:
        mod = importlib.import_module(f"transformer_cases_{m}")
        rng = np.random.default_rng(zlib.crc32(m.encode()))
        seen = set()
        for case in mod.cases(rng):
            if case.name in seen:
                sys.exit(f"two cases named {case.name}")
            seen.add(case.name)
            write_case(out, case)
            count += 1
    print(f"onnxruntime {ort.__version__}: wrote {count} com.microsoft transformer node tests to {out}")


if __name__ == "__main__":
    main()
