#!/usr/bin/env python3
"""Compares output_K.pb files of two directories: max |got - want| <= rtol * max |want| per output.

    /usr/bin/python3 tests/models/compare.py GOT_DIR WANT_DIR [--rtol 1e-4]
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
    ap.add_argument("--rtol", type=float, default=1e-4)
    a = ap.parse_args()
    wants = sorted(glob.glob(os.path.join(a.want, "output_*.pb")))
    if not wants:
        print("no expected outputs in", a.want)
        return 1
    bad = 0
    for w in wants:
        g = os.path.join(a.got, os.path.basename(w))
        want = numpy_helper.to_array(onnx.load_tensor(w)).astype(np.float64)
        got = numpy_helper.to_array(onnx.load_tensor(g)).astype(np.float64)
        if got.shape != want.shape:
            print(f"{os.path.basename(w)}: shape {got.shape}, expected {want.shape}")
            bad += 1
            continue
        diff = float(np.max(np.abs(got - want))) if want.size else 0.0
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        rel = diff / scale if scale > 0 else diff
        ok = rel <= a.rtol
        print(f"{os.path.basename(w)}: max abs diff {diff:.3g}, max |want| {scale:.3g}, relative {rel:.3g} "
              f"{'ok' if ok else 'FAIL'} (rtol {a.rtol:g})")
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
