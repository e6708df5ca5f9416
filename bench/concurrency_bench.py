#!/usr/bin/env python3
"""Throughput of one session run from many threads, onyx beside ONNX Runtime, on an idle or a
busy machine: the intra-op pool's behaviour under oversubscription.

    python bench/concurrency_bench.py ONYX_BINARY MODEL_DIR [--threads 1,2] [--concurrent 1,8]
                                      [--runs 200] [--busy 0,2] [--reps 3]

Both runtimes run in this process through the same code: onyx through its Python module
(docs/python.md), which has onnxruntime's API and releases the GIL while a run computes, as
onnxruntime does. ONYX_BINARY locates the module: the package the build assembles beside it
(build/python for build/bin/onyx) when there is one, else the `onyx` that Python imports
(installed, or on PYTHONPATH); its extension must be built for the Python running this script.

For each intra-op thread count, each number of concurrent callers (Python threads calling
`run` on one shared session, --runs / callers runs each, after 3 warm-up runs) and each
background load (--busy N: N processes spinning on the CPU while the pair runs, the "busy
machine" case), ORT runs (allow_spinning on, then off) and then onyx (the same, through the
session config entry `session.intra_op.allow_spinning`); each reports runs per second over all
callers. The table gives the median over --reps repetitions, and per row the 2-thread/1-thread
ratio is what the pool costs or gains. Needs the PyPI `onnxruntime`, `onnx` and `numpy`
packages (e.g. the set-up's venv).
"""
import argparse
import glob
import multiprocessing
import os
import statistics
import sys
import threading
import time

from onyx_module import import_onyx


def spin(stop):
    x = 0
    while not stop.is_set():
        x += 1


def load_inputs(model_dir):
    import numpy as np
    from onnx import numpy_helper, TensorProto
    files = sorted(glob.glob(os.path.join(model_dir, "test_data_set_0", "input_*.pb")),
                   key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))
    out = []
    for f in files:
        t = TensorProto()
        with open(f, "rb") as fh:
            t.ParseFromString(fh.read())
        out.append(np.asarray(numpy_helper.to_array(t)))
    return out


def rps(rt, model, inputs, threads, concurrent, runs, spinning):
    """Runs per second over `concurrent` threads sharing one session of runtime module `rt`
    (onnxruntime or onyx): the same options, inputs and timing for both."""
    so = rt.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    s = rt.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feeds = {i.name: v for i, v in zip(s.get_inputs(), inputs)}
    for _ in range(3):
        s.run(None, feeds)
    per = max(1, runs // concurrent)

    def work():
        for _ in range(per):
            s.run(None, feeds)

    ts = [threading.Thread(target=work) for _ in range(concurrent)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return per * concurrent / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onyx")
    ap.add_argument("model_dir")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--concurrent", default="1,8")
    ap.add_argument("--busy", default="0,2")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    model = os.path.join(a.model_dir, "model.onnx")
    if a.runs < 1 or a.reps < 1:
        sys.exit("--runs and --reps must be >= 1")
    onyx = import_onyx(a.onyx)
    import onnxruntime as ort
    inputs = load_inputs(a.model_dir)
    threads = [int(x) for x in a.threads.split(",")]
    conc = [int(x) for x in a.concurrent.split(",")]
    busy = [int(x) for x in a.busy.split(",")]
    print(f"model: {model}  ({a.runs} runs per measurement, median of {a.reps}; "
          f"onyx {onyx.__version__}, onnxruntime {ort.__version__})")
    print("| busy | callers | threads | ORT spin | ORT no-spin | onyx spin | onyx no-spin | onyx/ORT (spin) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for b in busy:
        stop = multiprocessing.Event()
        procs = [multiprocessing.Process(target=spin, args=(stop,)) for _ in range(b)]
        for p in procs:
            p.start()
        try:
            for c in conc:
                for t in threads:
                    res = {k: [] for k in ("os", "on", "xs", "xn")}
                    for _ in range(a.reps):
                        res["os"].append(rps(ort, model, inputs, t, c, a.runs, True))
                        res["on"].append(rps(ort, model, inputs, t, c, a.runs, False))
                        res["xs"].append(rps(onyx, model, inputs, t, c, a.runs, True))
                        res["xn"].append(rps(onyx, model, inputs, t, c, a.runs, False))
                    m = {k: statistics.median(v) for k, v in res.items()}
                    print(f"| {b} | {c} | {t} | {m['os']:.1f} | {m['on']:.1f} | {m['xs']:.1f} | {m['xn']:.1f} | "
                          f"{m['xs'] / m['os']:.2f} |", flush=True)
        finally:
            stop.set()
            for p in procs:
                p.join()
    print("runs per second over all callers (higher is better)")


if __name__ == "__main__":
    main()
