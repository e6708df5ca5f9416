#!/usr/bin/env python3
"""Side-by-side latency of onyx and ONNX Runtime (CPU EP) on the same model and inputs.

    python bench/compare_ort.py ONYX_BINARY MODEL_DIR... [--threads 1,2] [--runs 30] [--warmup 5] [--reps 3]
                                [--eps cpu,onednn,xnnpack]

Needs the PyPI `onnxruntime`, `onnx` and `numpy` packages (e.g. in a venv) and onyx's Python
module (docs/python.md). ONYX_BINARY locates the module: the package the build assembles beside
it (ONYX_BINARY/../../python, e.g. build/python for build/bin/onyx) when there is one, else the
`onyx` that Python imports (installed, or on PYTHONPATH); the module's extension must be built
for the Python running this script. MODEL_DIR holds model.onnx and test_data_set_0/input_K.pb.

Both runtimes run in this process through the same code (onyx's module has onnxruntime's API):
a session with the same SessionOptions (intra-op threads, all graph optimisations), --warmup
runs, then --runs runs of `session.run` on the same numpy inputs, each timed with
time.perf_counter; the median of those is one repetition's figure. Each repetition runs ORT
and then onyx, and the table gives the median over repetitions and the ratio onyx/ORT (below
1 = onyx faster). With --eps, onyx runs once per EP list entry (`cpu` = the CPU EP alone; any
other name = that EP first, the CPU EP as fallback, and an error when that EP cannot register),
each beside the same ORT runs. An entry may carry EP options, NAME:KEY=VALUE[:KEY=VALUE...]
(e.g. `cpu:prefer_nhwc=false`, the CPU EP channels-first). A model ORT cannot run (bf16 on its
CPU EP) is timed in onyx alone.
"""
import argparse
import glob
import os
import statistics
import sys
import time

from onyx_module import import_onyx


def load_inputs(data_dir):
    """(stored name, array) of each input_K.pb, in the order of K."""
    import onnx
    from onnx import numpy_helper
    files = sorted(glob.glob(os.path.join(data_dir, "input_*.pb")),
                   key=lambda p: int(os.path.basename(p)[len("input_"):-len(".pb")]))
    return [(t.name, numpy_helper.to_array(t)) for t in (onnx.load_tensor(p) for p in files)]


def feeds_for(session, inputs):
    """The inputs by their stored names when those are the model's, else in the model's order."""
    names = [i.name for i in session.get_inputs()]
    if all(n in names for n, _ in inputs):
        return {n: v for n, v in inputs}
    return {n: v for n, (_, v) in zip(names, inputs)}


def median_ms(rt, model, inputs, threads, runs, warmup, providers, **kwargs):
    """Median latency (ms) of `runs` runs after `warmup`, with runtime module `rt` (onnxruntime or
    onyx): the same options, inputs and timing for both."""
    so = rt.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = rt.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = rt.InferenceSession(model, so, providers=providers, **kwargs)
    feeds = feeds_for(s, inputs)
    for _ in range(warmup):
        s.run(None, feeds)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        s.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def onyx_providers(entry):
    """--eps entry NAME[:KEY=VALUE...] -> (providers, require_providers)."""
    name, *opts = entry.split(":")
    options = {}
    for o in opts:
        key, eq, value = o.partition("=")
        if not eq or not key:
            sys.exit(f"--eps {entry}: an option is KEY=VALUE, got '{o}'")
        options[key] = value
    return [(name, options)], name != "cpu"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onyx", help="the onyx binary (e.g. build/bin/onyx): its build's Python package is used")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--eps", default="cpu")
    a = ap.parse_args()
    if a.runs < 1 or a.warmup < 0 or a.reps < 1:
        sys.exit("--runs and --reps must be >= 1, --warmup >= 0")
    eps = a.eps.split(",")
    onyx = import_onyx(a.onyx)
    import onnxruntime as ort
    print(f"onyx {onyx.__version__} ({os.path.dirname(onyx.__file__)}), onnxruntime {ort.__version__}", flush=True)
    rows = []
    for d in a.models:
        model = os.path.join(d, "model.onnx")
        inputs = load_inputs(os.path.join(d, "test_data_set_0"))
        for t in [int(x) for x in a.threads.split(",")]:
            ort_meds, onyx_meds, ort_error = [], {e: [] for e in eps}, None
            for _ in range(a.reps):
                if ort_error is None:
                    try:
                        ort_meds.append(median_ms(ort, model, inputs, t, a.runs, a.warmup, ["CPUExecutionProvider"]))
                    except Exception as ex:  # noqa: BLE001 - ORT cannot run it (bf16 on its CPU EP): onyx alone
                        ort_error = str(ex).splitlines()[0][:200]
                        print(f"{os.path.basename(os.path.normpath(d))}: ORT cannot run it ({ort_error})", flush=True)
                for e in eps:
                    providers, require = onyx_providers(e)
                    onyx_meds[e].append(median_ms(onyx, model, inputs, t, a.runs, a.warmup, providers,
                                                  require_providers=require))
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
