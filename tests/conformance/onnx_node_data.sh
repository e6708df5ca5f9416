#!/usr/bin/env bash
# Makes the node tests of PyPI's onnx (newer than Debian's libonnx-testdata: opsets up to 28) in
# .cache/onnx-node-tests/<version>/node, from a venv with that onnx (.cache/onnx-venv). Idempotent.
# Called by scripts/setup.sh; the CTest conformance_cpu_onnx_pypi skips (saying why) when the
# data is missing, e.g. when PyPI cannot be reached.
set -uo pipefail
cd "$(dirname "$0")/../.."
VERSION=1.23.2
VENV=.cache/onnx-venv
DATA=.cache/onnx-node-tests/$VERSION
LOG=.cache/onnx-node-tests/setup.log
mkdir -p .cache/onnx-node-tests
[ -f "$DATA/.complete" ] && { echo "onnx node tests: $DATA present"; exit 0; }
{
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import onnx, sys; sys.exit(onnx.__version__ != '$VERSION')" 2>/dev/null; then
    rm -rf "$VENV"
    python3 -m venv "$VENV" && "$VENV/bin/pip" install -q --disable-pip-version-check "onnx==$VERSION" numpy
  fi
  rm -rf "$DATA"
  "$VENV/bin/python" tests/conformance/generate_node_tests.py "$DATA" && touch "$DATA/.complete"
} >"$LOG" 2>&1
if [ -f "$DATA/.complete" ]; then
  echo "onnx node tests: $(tail -1 "$LOG")"
else
  echo "onnx node tests: not generated (the conformance_cpu_onnx_pypi test will be skipped); see $LOG:"
  tail -5 "$LOG"
fi
exit 0
