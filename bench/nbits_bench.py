#!/usr/bin/env python3
"""com.microsoft MatMulNBits alone: onyx beside ONNX Runtime, and beside an fp32 MatMul.

    ortvenv/bin/python bench/nbits_bench.py ONYX_CLI [--threads 1 2] [--runs 100]
        [--shapes 768x768 768x3072 3072x768 4096x4096] [--blocks 32 128] [--rows 1 128]
        [--levels 0 4] [--bits 4]

Writes single-node models of LLM sizes (K x N weights, uint8 zero points, A a float32 input of
M rows: M=1 a decoding step, M=128 a prefill) and the fp32 MatMul with the same weights as an
initializer. onyx's time is the median of `onyx bench MODEL --json --threads T`; ONNX Runtime's
the median of as many runs of a session with intra_op_num_threads=T. Prints per case the times,
onyx / ONNX Runtime (below 1: onyx faster) and onyx's 4-bit time / its own fp32 MatMul time.
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


def nbits_model(K, N, M, bits, block, level, path, rng):
    kb = (K + block - 1) // block
    b = rng.integers(0, 256, (N, kb, block * bits // 8), dtype=np.uint8)
    scales = rng.uniform(0.001, 0.02, N * kb).astype(np.float32)
    zp = rng.integers(0, 256, N * ((kb * bits + 7) // 8), dtype=np.uint8)
    inits = [numpy_helper.from_array(b, "B"), numpy_helper.from_array(scales, "scales"), numpy_helper.from_array(zp, "zp")]
    node = helper.make_node("MatMulNBits", ["A", "B", "scales", "zp"], ["Y"], domain=MS, K=K, N=N, bits=bits,
                            block_size=block, accuracy_level=level)
    g = helper.make_graph([node], "nbits", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [M, K])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [M, N])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def matmul_model(K, N, M, path, rng):
    w = (rng.standard_normal((K, N)) * 0.02).astype(np.float32)
    node = helper.make_node("MatMul", ["A", "W"], ["Y"])
    g = helper.make_graph([node], "mm", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [M, K])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [M, N])], [numpy_helper.from_array(w, "W")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def ort_ms(path, K, M, threads, runs):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feeds = {"A": np.random.default_rng(0).standard_normal((M, K)).astype(np.float32)}
    for _ in range(5):
        s.run(None, feeds)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def onyx_ms(cli, path, threads, runs):
    out = subprocess.run([cli, "bench", path, "--json", "--no-progress", "--threads", str(threads), "--runs", str(runs)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("onyx")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--shapes", nargs="+", default=["768x768", "768x3072", "3072x768", "4096x4096"])
    ap.add_argument("--blocks", type=int, nargs="+", default=[32, 128])
    ap.add_argument("--rows", type=int, nargs="+", default=[1, 128])
    ap.add_argument("--levels", type=int, nargs="+", default=[0, 4])
    ap.add_argument("--bits", type=int, default=4)
    args = ap.parse_args()
    if not os.access(args.onyx, os.X_OK):
        sys.exit(f"{args.onyx}: not an executable (give the onyx CLI, e.g. build/bin/onyx)")
    rng = np.random.default_rng(0)
    print(f"onnxruntime {ort.__version__}; MatMulNBits bits={args.bits}, uint8 zero points; median ms of {args.runs} runs")
    print(f"{'K x N':>10} {'M':>4} {'blk':>4} {'lvl':>3} {'T':>2} {'onyx':>9} {'ORT':>9} {'onyx/ORT':>8} "
          f"{'onyx fp32':>9} {'ORT fp32':>9} {'nbits/fp32':>10}")
    with tempfile.TemporaryDirectory() as d:
        for shape in args.shapes:
            K, N = (int(x) for x in shape.split("x"))
            for M in args.rows:
                fp = matmul_model(K, N, M, os.path.join(d, f"mm_{K}_{N}_{M}.onnx"), rng)
                fp_times = {t: (onyx_ms(args.onyx, fp, t, args.runs), ort_ms(fp, K, M, t, args.runs)) for t in args.threads}
                for block in args.blocks:
                    for level in args.levels:
                        path = nbits_model(K, N, M, args.bits, block, level, os.path.join(d, f"nb_{K}_{N}_{M}_{block}_{level}.onnx"), rng)
                        for t in args.threads:
                            o, r = onyx_ms(args.onyx, path, t, args.runs), ort_ms(path, K, M, t, args.runs)
                            of, rf = fp_times[t]
                            print(f"{shape:>10} {M:>4} {block:>4} {level:>3} {t:>2} {o:9.4f} {r:9.4f} {o / r:8.2f} "
                                  f"{of:9.4f} {rf:9.4f} {o / of:10.2f}", flush=True)


if __name__ == "__main__":
    main()
