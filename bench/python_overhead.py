#!/usr/bin/env python3
"""Per-call overhead of `session.run` from Python, onyx beside ONNX Runtime, on a model whose work is
negligible (an Add of two [1, 4] floats): what the Python binding costs.

    PYTHONPATH=build/python .cache/ort-venv/bin/python bench/python_overhead.py [--calls 10000] [--reps 7]

Each repetition times --calls runs of ORT's session and then --calls of onyx's (one intra-op
thread each, after 1,000 warm-up calls), alternating, and reports the median over repetitions of
the mean microseconds per call, and the ratio onyx/ORT (below 1: onyx's call costs less). Also
timed: the same call through IOBinding (inputs bound once), and run() with a numpy input that
needs a copy (a transposed view). The model is made with onnx.helper in a temporary folder.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np


def make_model(path):
    import onnx
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("x", "y")]
    out = helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "tiny_add", inputs, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def per_call_us(fn, calls):
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    import onnxruntime as ort

    import onyx

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "add.onnx")
        make_model(path)
        feed = {"x": np.ones((1, 4), np.float32), "y": np.full((1, 4), 2, np.float32)}
        strided = {"x": np.ones((1, 8), np.float32)[:, ::2], "y": feed["y"]}  # every other element
        cases = {}
        for name, mod in (("ort", ort), ("onyx", onyx)):
            so = mod.SessionOptions()
            so.intra_op_num_threads = 1
            s = mod.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            assert np.array_equal(s.run(None, feed)[0], feed["x"] + feed["y"])
            b = s.io_binding()
            b.bind_cpu_input("x", feed["x"])
            b.bind_cpu_input("y", feed["y"])
            b.bind_output("z")
            cases[name] = {
                "run": lambda s=s: s.run(None, feed),
                "run(['z'])": lambda s=s: s.run(["z"], feed),
                "run, strided input": lambda s=s: s.run(None, strided),
                "run_with_iobinding": lambda s=s, b=b: s.run_with_iobinding(b),
            }
            for fn in cases[name].values():
                per_call_us(fn, 1000)
        results = {k: {"ort": [], "onyx": []} for k in cases["ort"]}
        for _ in range(a.reps):
            for k in results:
                for name in ("ort", "onyx"):
                    results[k][name].append(per_call_us(cases[name][k], a.calls))
    print(f"onyx {onyx.__version__}, onnxruntime {ort.__version__}; {a.calls} calls x {a.reps} repetitions, "
          f"median of the per-repetition means\n")
    print("| call | ORT us/call | onyx us/call | onyx/ORT |\n|---|---|---|---|")
    for k, r in results.items():
        o, n = statistics.median(r["ort"]), statistics.median(r["onyx"])
        print(f"| {k} | {o:.2f} | {n:.2f} | {n / o:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
