#!/usr/bin/env bash
# Makes the com.microsoft node tests (tests/conformance/make_contrib_tests.py: single-node
# QLinear* models whose expected outputs ONNX Runtime computes) in .cache/contrib-node-tests/node,
# with the Python of the ONNX Runtime venv (.cache/ort-venv). Idempotent: made again only when
# the generator or the onnxruntime version changes. Never fails: without the venv it says so, and
# the CTest conformance_cpu_contrib skips (saying why) while the data is missing.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=.cache/ort-venv/bin/python
DATA=.cache/contrib-node-tests
LOG=.cache/contrib-node-tests.log
GEN=tests/conformance/make_contrib_tests.py
mkdir -p .cache
if [ ! -x "$PY" ] || ! "$PY" -c "import onnxruntime, onnx, numpy" 2>/dev/null; then
  echo "com.microsoft node tests: not generated (no ONNX Runtime venv in .cache/ort-venv; the conformance_cpu_contrib test will be skipped)"
  exit 0
fi
STAMP="onnxruntime $("$PY" -c 'import onnxruntime; print(onnxruntime.__version__)') generator $(sha256sum "$GEN" | cut -c1-16)"
if [ -f "$DATA/.complete" ] && [ "$(cat "$DATA/.complete")" = "$STAMP" ]; then
  echo "com.microsoft node tests: $DATA present ($STAMP)"
  exit 0
fi
rm -rf "$DATA"
if "$PY" "$GEN" "$DATA" >"$LOG" 2>&1; then
  echo "$STAMP" >"$DATA/.complete"
  echo "com.microsoft node tests: $(tail -1 "$LOG")"
else
  rm -rf "$DATA"
  echo "com.microsoft node tests: not generated (the conformance_cpu_contrib test will be skipped); see $LOG:"
  tail -5 "$LOG"
fi
exit 0
