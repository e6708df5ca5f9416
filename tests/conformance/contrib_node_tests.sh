#!/usr/bin/env bash
# CTests conformance_cpu_contrib and conformance_cpu_transformer: the com.microsoft node tests with
# ONNX Runtime's outputs (tests/conformance/contrib_node_data.sh makes them, in .cache/SET-node-tests)
# against tests/conformance/cpu-SET.expect. Skipped (exit 77), with the reason, when the data was
# not made. The runner options (tolerances) come from tests/CMakeLists.txt: the quantized ops must
# match ONNX Runtime exactly, float outputs too (--rtol 0 --atol 0; docs/conformance.md says why).
# Usage: contrib_node_tests.sh RUNNER REPO_DIR SET [RUNNER OPTIONS...]
set -u
RUNNER=$1
REPO=$2
SET=$3
shift 3
DATA=$REPO/.cache/$SET-node-tests
if [ ! -f "$DATA/.complete" ]; then
  echo "skipped: no com.microsoft $SET node tests in $DATA (tests/conformance/contrib_node_data.sh makes them with the ONNX Runtime venv .cache/ort-venv)"
  exit 77
fi
exec "$RUNNER" --expect "$REPO/tests/conformance/cpu-$SET.expect" "$@" "$DATA/node"
