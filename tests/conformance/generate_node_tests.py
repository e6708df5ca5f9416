#!/usr/bin/env python3
"""Writes the ONNX backend's node tests of the installed `onnx` package as test directories.

    python generate_node_tests.py OUT_DIR

PyPI's `onnx` wheels carry the node test *cases* (onnx/backend/test/case/node: models and
inputs, with outputs computed by onnx's reference implementation) but not their data files.
This writes each case as OUT_DIR/node/<test name>/model.onnx with test_data_set_N/input_K.pb and
output_K.pb, the layout of Debian's libonnx-testdata, so onyx_conformance runs them as it runs
those. Sequence, optional and map values are written as SequenceProto / OptionalProto / MapProto,
chosen by the graph input's or output's type, as the backend's own data files are.
"""
import os
import shutil
import sys

import onnx
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node as node_cases


def proto_of(value, info):
    t = info.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, info.name)
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, info.name)
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, info.name)
    if isinstance(value, TensorProto):
        return value
    return numpy_helper.from_array(value, info.name)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: generate_node_tests.py OUT_DIR")
    out = sys.argv[1]
    count = 0
    for case in node_cases.collect_testcases():
        d = os.path.join(out, case.kind, case.name)
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(ds)
            for kind, values, infos in (("input", inputs, case.model.graph.input), ("output", outputs, case.model.graph.output)):
                for k, v in enumerate(values):
                    with open(os.path.join(ds, f"{kind}_{k}.pb"), "wb") as f:
                        f.write(proto_of(v, infos[k]).SerializeToString())
        count += 1
    print(f"onnx {onnx.__version__}: wrote {count} node tests to {out}")


if __name__ == "__main__":
    main()
