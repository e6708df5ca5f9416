#!/usr/bin/env bash
# CTest conformance_cpu_onnx_pypi: the node tests of PyPI's onnx (tests/conformance/onnx_node_data.sh
# makes them) against tests/conformance/cpu-onnx-pypi.expect. Skipped (exit 77), with the reason,
# when the data was not made. Usage: pypi_node_tests.sh RUNNER REPO_DIR [RUNNER OPTIONS...]
set -u
RUNNER=$1
REPO=$2
shift 2
DATA=$REPO/.cache/onnx-node-tests/1.23.2
if [ ! -f "$DATA/.complete" ]; then
  echo "skipped: no onnx 1.23.2 node tests in $DATA (run tests/conformance/onnx_node_data.sh; its log says why they are missing)"
  exit 77
fi
exec "$RUNNER" --expect "$REPO/tests/conformance/cpu-onnx-pypi.expect" "$@" "$DATA/node"
