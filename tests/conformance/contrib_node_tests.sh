#!/usr/bin/env bash
# CTest conformance_cpu_contrib: the com.microsoft node tests with ONNX Runtime's outputs
# (tests/conformance/contrib_node_data.sh makes them) against tests/conformance/cpu-contrib.expect.
# Skipped (exit 77), with the reason, when the data was not made. Outputs must match ONNX Runtime's
# exactly, the float ones (QGemm without y_zero_point, DynamicQuantizeMatMul, MatMulIntegerToFloat)
# too: --rtol 0 --atol 0 (docs/conformance.md says why that is the bar).
# Usage: contrib_node_tests.sh RUNNER REPO_DIR [RUNNER OPTIONS...]
set -u
RUNNER=$1
REPO=$2
shift 2
DATA=$REPO/.cache/contrib-node-tests
if [ ! -f "$DATA/.complete" ]; then
  echo "skipped: no com.microsoft node tests in $DATA (tests/conformance/contrib_node_data.sh makes them with the ONNX Runtime venv .cache/ort-venv)"
  exit 77
fi
exec "$RUNNER" --expect "$REPO/tests/conformance/cpu-contrib.expect" --rtol 0 --atol 0 "$@" "$DATA/node"
