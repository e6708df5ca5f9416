#!/usr/bin/env python3
"""Side-by-side latency of onyx and ONNX Runtime (CPU EP) on the same model and inputs.

    python bench/compare_ort.py ONYX_BINARY MODEL_DIR... [--threads 1,2] [--runs 30] [--warmup 5] [--reps 3]
                                [--eps cpu,onednn,xnnpack]

Needs the PyPI `onnxruntime`, `onnx` and `numpy` packages (e.g. in a venv). MODEL_DIR holds
model.onnx and test_data_set_0/input_K.pb. Each repetition runs ORT and then onyx, one process
each, and reports medians; the table gives the median over repetitions and the ratio onyx/ORT
(below 1 = onyx faster). With --eps, onyx runs once per EP list entry (`cpu` = the CPU EP alone;
any other name = that EP first, the CPU EP as fallback), each beside the same ORT runs. An entry
may carry EP options, NAME:KEY=VALUE[:KEY=VALUE...] (e.g. `cpu:prefer_nhwc=false`, the CPU EP
channels-first). A model ORT cannot run (bf16 on its CPU EP) is timed in onyx alone.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time


def ort_median(model, inputs, threads, runs, warmup):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    t0 = time.perf_counter()
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    load = (time.perf_counter() - t0) * 1e3
    names = [i.name for i in s.get_inputs()]
    feeds = {n: v for n, v in zip(names, inputs)}
    for _ in range(warmup):
        s.run(None, feeds)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        s.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), load


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onyx")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--eps", default="cpu")
    a = ap.parse_args()
    eps = a.eps.split(",")
    import onnx
    from onnx import numpy_helper
    rows = []
    for d in a.models:
        model = os.path.join(d, "model.onnx")
        data = os.path.join(d, "test_data_set_0")
        inputs = [numpy_helper.to_array(onnx.load_tensor(p)) for p in sorted(glob.glob(os.path.join(data, "input_*.pb")))]
        for t in [int(x) for x in a.threads.split(",")]:
            ort_meds, onyx_meds, ort_error = [], {e: [] for e in eps}, None
            for _ in range(a.reps):
                if ort_error is None:
                    try:
                        ort_meds.append(ort_median(model, inputs, t, a.runs, a.warmup)[0])
                    except Exception as ex:  # noqa: BLE001 - ORT cannot run it (bf16 on its CPU EP): onyx alone
                        ort_error = str(ex).splitlines()[0][:200]
                        print(f"{os.path.basename(os.path.normpath(d))}: ORT cannot run it ({ort_error})", flush=True)
                for e in eps:
                    cmd = [a.onyx, "bench", model, "--inputs", data, "--threads", str(t), "--runs", str(a.runs),
                           "--warmup", str(a.warmup), "--json", "--no-progress"]
                    name, *opts = e.split(":")
                    if name != "cpu" or opts:
                        cmd += ["--ep", name, "--require-ep"]
                    for o in opts:
                        cmd += ["--ep-option", f"{name}.{o}"]
                    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
                    onyx_meds[e].append(json.loads(out.stdout)["median_ms"])
            r = statistics.median(ort_meds) if ort_meds else None
            for e in eps:
                o = statistics.median(onyx_meds[e])
                rows.append((os.path.basename(os.path.normpath(d)), e, t, o, r, o / r if r else None))
                ort_s, q_s = (f"{r:9.3f} ms", f"{o / r:5.2f}") if r else ("      n/a   ", "  n/a")
                print(f"{rows[-1][0]:<16} ep={e:<8} threads={t}  onyx {o:9.3f} ms  ort {ort_s}  ratio {q_s}", flush=True)
    print("\n| model | onyx EP | threads | onyx median ms | ORT median ms | onyx/ORT |\n|---|---|---|---|---|---|")
    for m, e, t, o, r, q in rows:
        print(f"| {m} | {e} | {t} | {o:.2f} | {f'{r:.2f}' if r else 'n/a'} | {f'{q:.2f}' if q else 'n/a'} |")

if __name__ == "__main__":
    sys.exit(main())
