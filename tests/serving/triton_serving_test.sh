#!/usr/bin/env bash
# The triton_serving CTest (docs/serving.md): the onyx Triton backend on a real server on loopback.
# Skips (77), saying why, without .cache/triton-venv (scripts/triton_venv.sh). Exports the
# end-to-end models it serves when missing, as tests/models/e2e_test.sh does.
# Usage: triton_serving_test.sh ONYX_CLI BACKEND_SO REPO_DIR E2E_MODELS_DIR WORK_DIR
set -uo pipefail
ONYX=$1 BACKEND=$2 REPO=$3 E2E=$4 WORK=$5
PY="$REPO/.cache/triton-venv/bin/python"
if [ ! -x "$PY" ]; then
  echo "skipped: no Triton venv .cache/triton-venv (scripts/triton_venv.sh)"; exit 77
fi
if ! "$PY" -c "import pytriton, tritonclient.grpc, tritonclient.http, onnxruntime" 2>/dev/null; then
  echo "skipped: .cache/triton-venv lacks nvidia-pytriton, tritonclient or onnxruntime (scripts/triton_venv.sh)"; exit 77
fi
for m in resnet50 bert_like; do
  if [ ! -f "$E2E/$m/model.onnx" ]; then
    /usr/bin/python3 "$REPO/tests/models/export_models.py" "$E2E" --size small --only "$m" 2>&1 | grep -v -i warn || true
  fi
  [ -f "$E2E/$m/model.onnx" ] || { echo "FAIL: could not export $m into $E2E"; exit 1; }
done
exec "$PY" "$REPO/tests/serving/triton_serving_test.py" "$ONYX" "$BACKEND" "$E2E" "$WORK"
