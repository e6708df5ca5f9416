#!/usr/bin/env python3
"""Compares onyx's outputs (GOT_DIR/output_K.pb) with ONNX Runtime's (WANT_DIR/output_K.pb) for the
transformer end-to-end models: each output passes when its dtype and shape match, it has no NaN
that the expected output lacks, and

    max |got - want| <= tol

(absolute: the hidden states, logits and key/value caches of these models are of magnitude about 1,
at most 4). Prints one line per output; exit status 1 when one fails.

    python3 tests/models/compare_transformer.py GOT_DIR WANT_DIR --tol 1e-3 [--label NAME]
"""
import argparse
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("got")
    ap.add_argument("want")
    ap.add_argument("--tol", type=float, required=True)
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    wants = sorted(glob.glob(os.path.join(a.want, "output_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
    if not wants:
        print(f"{a.label}: no expected outputs in {a.want}")
        return 1
    bad = 0
    for w in wants:
        base = os.path.basename(w)
        t = onnx.load_tensor(w)
        want = numpy_helper.to_array(t)
        g = os.path.join(a.got, base)
        if not os.path.exists(g):
            print(f"{a.label} {t.name}: FAIL (onyx wrote no {base})")
            bad += 1
            continue
        got = numpy_helper.to_array(onnx.load_tensor(g))
        if got.dtype != want.dtype or got.shape != want.shape:
            print(f"{a.label} {t.name}: FAIL (onyx {got.dtype}{list(got.shape)}, ORT {want.dtype}{list(want.shape)})")
            bad += 1
            continue
        got64, want64 = got.astype(np.float64), want.astype(np.float64)
        new_nan = bool(np.any(np.isnan(got64) & ~np.isnan(want64)))
        diff = float(np.nanmax(np.abs(got64 - want64))) if want.size else 0.0
        scale = float(np.nanmax(np.abs(want64))) if want.size else 0.0
        ok = not new_nan and diff <= a.tol
        print(f"{a.label} {t.name}: max |onyx - ORT| {diff:.3g} (bound {a.tol:g}), max |ORT| {scale:.3g}"
              f"{', NaN where ORT has none' if new_nan else ''} {'ok' if ok else 'FAIL'}")
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
