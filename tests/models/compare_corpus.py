#!/usr/bin/env python3
"""Compares a run's outputs with a corpus variant's ORT reference, at the variant's tolerance.

    .cache/ort-venv/bin/python tests/models/compare_corpus.py GOT_DIR VARIANT_DIR [--label NAME]

VARIANT_DIR is one of make_quant_corpus.py's: meta.json gives the tolerance (max |got - ref| /
max |ref| per output, the largest over the outputs), test_data_set_0/output_K.pb the reference.
Prints one line, `NAME  metric M  tolerance T  ok|FAIL` (with each output's figure and the mean
relative difference), and exits 0 within the tolerance, 1 outside it or when an output is missing
or of another shape or type. With --negative (the outputs of a corrupted model) the verdict is
`caught` (exit 0) outside the tolerance and `NOT CAUGHT` (exit 1) within it.
"""
import argparse
import glob
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_quant_corpus import mean_metric, metric  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("got")
    ap.add_argument("variant")
    ap.add_argument("--label", default=None)
    ap.add_argument("--negative", action="store_true",
                    help="the outputs of a corrupted model: succeed when they fall outside the tolerance")
    a = ap.parse_args()
    with open(os.path.join(a.variant, "meta.json")) as f:
        meta = json.load(f)
    label = a.label or meta["name"]
    tol = meta["tolerance"]["value"]
    wants = sorted(glob.glob(os.path.join(a.variant, "test_data_set_0", "output_*.pb")))
    problems, parts, worst, worst_mean = [], [], 0.0, 0.0
    for w in wants:
        base = os.path.basename(w)
        g = os.path.join(a.got, base)
        want_t = onnx.load_tensor(w)
        if not os.path.exists(g):
            problems.append(f"{base} missing")
            continue
        got_t = onnx.load_tensor(g)
        want, got = numpy_helper.to_array(want_t), numpy_helper.to_array(got_t)
        if got_t.data_type != want_t.data_type or got.shape != want.shape:
            problems.append(f"{base}: {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}")
            continue
        m = metric([got], [want])
        worst = max(worst, m)
        worst_mean = max(worst_mean, mean_metric([got], [want]))
        parts.append(f"{want_t.name or base} {m:.3g}")
    if not wants:
        problems.append("no reference outputs")
    within = not problems and worst <= tol
    detail = "; ".join(problems) if problems else ", ".join(parts)
    if a.negative:
        verdict = "NOT CAUGHT (within the tolerance)" if within else "caught"
    else:
        verdict = "ok" if within else "FAIL"
    print(f"{label:<26} metric {worst:9.3g}  tolerance {tol:<6g} {verdict}   (mean rel {worst_mean:.3g}; {detail})",
          flush=True)
    return 0 if within != a.negative else 1


if __name__ == "__main__":
    sys.exit(main())
