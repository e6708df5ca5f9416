#!/usr/bin/env python3
"""Per-convolution times of onyx beside ONNX Runtime's, for CNNs.

    ortvenv/bin/python bench/compare_nodes.py build/bin/onyx models/resnet50/model.onnx [--threads 1] [--rounds 3]
                       [--ep-option cpu.prefer_nhwc=false]

Each round profiles onyx (`onyx bench --profile`, 5 runs) and then ORT (its profiler, 5 runs) on
random inputs; a node's time is its minimum over all rounds (the least disturbed by other tenants
of the machine). Both runtimes fuse activations and residual adds into their convolutions but
name the results differently, so the convolutions are matched by order: the i-th convolution
node of onyx's plan beside the i-th `Conv` (or `QLinearConv`) kernel of ORT's. The script stops with an error when
the two counts differ (a model whose graphs the two optimise differently). `--ep-option
NAME.KEY=VALUE` (repeatable) passes an option to onyx's EP NAME (`cpu.prefer_nhwc=false`: the CPU
EP channels-first).
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort


def onyx_profile(onyx, model, threads, path, ep_options):
    cmd = [onyx, "bench", model, "--threads", str(threads), "--runs", "2", "--warmup", "2", "--profile", path,
           "--profile-runs", "5"]
    for o in ep_options:
        cmd += ["--ep", o.split(".", 1)[0], "--ep-option", o]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    nodes = collections.OrderedDict()
    for e in json.load(open(path))["traceEvents"]:
        if e.get("ph") == "X":
            nodes.setdefault(e["name"], (e["cat"], []))[1].append(e["dur"] / 1000)
    return nodes


def ort_profile(model, threads, workdir):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(workdir, "ort")
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in s.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = np.ones(shape, np.int64) if "int" in i.type else rng.random(shape, dtype=np.float32)
    for _ in range(7):  # 2 warm-up runs, 5 profiled (all are in the file; the minimum is taken)
        s.run(None, feeds)
    path = s.end_profiling()
    nodes = collections.OrderedDict()
    for e in json.load(open(path)):
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            nodes.setdefault(e["name"][: -len("_kernel_time")], (e["args"].get("op_name"), []))[1].append(e["dur"] / 1000)
    os.remove(path)
    return nodes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("onyx")
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ep-option", action="append", default=[])
    a = ap.parse_args()
    mine, theirs = collections.OrderedDict(), collections.OrderedDict()
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.rounds):
            for k, (cat, t) in onyx_profile(a.onyx, a.model, a.threads, os.path.join(d, "onyx.json"), a.ep_option).items():
                mine.setdefault(k, (cat, []))[1].extend(t)
            for k, (op, t) in ort_profile(a.model, a.threads, d).items():
                theirs.setdefault(k, (op, []))[1].extend(t)
    oc = [(k, c, min(t)) for k, (c, t) in mine.items() if "Conv" in c]
    rc = [(k, c, min(t)) for k, (c, t) in theirs.items() if c in ("Conv", "QLinearConv")]
    if len(oc) != len(rc):
        sys.exit(f"onyx has {len(oc)} convolution nodes, ORT {len(rc)} Conv kernels: they cannot be matched by order")
    print(f"{'onyx ms':>8} {'ORT ms':>8} {'ratio':>6}  onyx node")
    for (name, cat, t), (_, _, u) in zip(oc, rc):
        print(f"{t:8.3f} {u:8.3f} {t / u:6.2f}  {cat} {name}")
    so, sr = sum(x[2] for x in oc), sum(x[2] for x in rc)
    print(f"{so:8.3f} {sr:8.3f} {so / sr:6.2f}  all convolutions")
    print(f"{sum(min(t) for _, t in mine.values()):8.3f} {sum(min(t) for _, t in theirs.values()):8.3f}"
          f"          every node (sum of minima)")
    layout_mine = sum(min(t) for c, t in mine.values() if c == "Transpose")
    layout_theirs = sum(min(t) for c, t in theirs.values() if c in ("ReorderInput", "ReorderOutput"))
    print(f"{layout_mine:8.3f} {layout_theirs:8.3f}          layout changes (onyx's Transposes, ORT's Reorder kernels)")


if __name__ == "__main__":
    main()
