#!/usr/bin/env python3
"""com.microsoft GroupQueryAttention alone: onyx beside ONNX Runtime, prefill and one decode step.

    ortvenv/bin/python bench/gqa_bench.py build/bin/onyx [--threads 1 2] [--runs 200]

Writes single-node models (float32, do_rotary=1 as ONNX Runtime's model builder writes them;
seqlens_k, total_sequence_length and the cos/sin caches are initializers, the query, key, value
and past are inputs with random data): a prefill of 128 tokens (B=1, N=12, Nkv=4 and 12, H=64)
and a decode step (one token after a past of 128). onyx's time is the median of `onyx bench
MODEL --json --threads T`; ONNX Runtime's the median of as many runs of a session with
intra_op_num_threads=T and graph optimisations off.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"


def model(B, S, N, NK, H, past, path):
    total = past + S
    rd = H
    inv = 1.0 / (10000 ** (np.arange(0, rd, 2) / rd))
    f = np.outer(np.arange(total + 64), inv)
    inits = [numpy_helper.from_array(np.full((B,), total - 1, np.int32), "seqlens_k"),
             numpy_helper.from_array(np.array(total, np.int32), "total_sequence_length"),
             numpy_helper.from_array(np.cos(f).astype(np.float32), "cos_cache"),
             numpy_helper.from_array(np.sin(f).astype(np.float32), "sin_cache")]
    fl = TensorProto.FLOAT
    ins = [helper.make_tensor_value_info("query", fl, [B, S, N * H]),
           helper.make_tensor_value_info("key", fl, [B, S, NK * H]),
           helper.make_tensor_value_info("value", fl, [B, S, NK * H])]
    names = ["query", "key", "value", "", ""]
    if past:
        ins += [helper.make_tensor_value_info("past_key", fl, [B, NK, past, H]),
                helper.make_tensor_value_info("past_value", fl, [B, NK, past, H])]
        names[3:5] = ["past_key", "past_value"]
    names += ["seqlens_k", "total_sequence_length", "cos_cache", "sin_cache"]
    node = helper.make_node("GroupQueryAttention", names, ["y", "present_key", "present_value"], domain=MS,
                            num_heads=N, kv_num_heads=NK, do_rotary=1)
    outs = [helper.make_tensor_value_info("y", fl, None), helper.make_tensor_value_info("present_key", fl, None),
            helper.make_tensor_value_info("present_value", fl, None)]
    g = helper.make_graph([node], "gqa", ins, outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def ort_ms(path, threads, runs):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.standard_normal(i.shape).astype(np.float32) for i in s.get_inputs()}
    for _ in range(10):
        s.run(None, feeds)
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        s.run(None, feeds)
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3


def onyx_ms(onyx, path, threads, runs):
    out = subprocess.run([onyx, "bench", path, "--json", "--no-progress", "--threads", str(threads), "--runs", str(runs)],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    for key in ("median_ms", "latency_median_ms"):
        if key in r:
            return float(r[key])
    lat = r.get("latency", {})
    if "median_ms" in lat:
        return float(lat["median_ms"])
    sys.exit(f"no median in onyx bench's JSON: {out[:300]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onyx")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=200)
    a = ap.parse_args()
    shapes = [("prefill S=128 N=12 Nkv=4", (1, 128, 12, 4, 64, 0)), ("prefill S=128 N=12 Nkv=12", (1, 128, 12, 12, 64, 0)),
              ("decode past=128 N=12 Nkv=4", (1, 1, 12, 4, 64, 128)), ("decode past=128 N=12 Nkv=12", (1, 1, 12, 12, 64, 128))]
    with tempfile.TemporaryDirectory() as d:
        print(f"{'case':32} {'threads':>7} {'onyx ms':>9} {'ORT ms':>9} {'ORT/onyx':>9}")
        for name, shp in shapes:
            path = model(*shp, os.path.join(d, name.replace(" ", "_").replace("=", "") + ".onnx"))
            for t in a.threads:
                o, r = onyx_ms(a.onyx, path, t, a.runs), ort_ms(path, t, a.runs)
                print(f"{name:32} {t:7d} {o:9.4f} {r:9.4f} {r / o:9.2f}")


if __name__ == "__main__":
    main()
