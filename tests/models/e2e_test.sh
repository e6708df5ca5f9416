#!/usr/bin/env bash
# End-to-end: models exported from PyTorch (random weights, opset 17) run with `onyx run` and
# match torch's outputs (max |diff| <= 1e-4 * max |torch|); `onyx bench` reports their latency.
# Usage: e2e_test.sh ONYX_BINARY REPO_DIR MODEL_DIR [small|full]
set -euo pipefail
ONYX=$1
REPO=$2
DIR=$3
SIZE=${4:-small}
PY=/usr/bin/python3
mkdir -p "$DIR"
for m in resnet50 mobilenet_v2 bert_like; do
  if [ ! -f "$DIR/$m/model.onnx" ]; then
    "$PY" "$REPO/tests/models/export_models.py" "$DIR" --size "$SIZE" --only "$m" 2>&1 | grep -v -i warn || true
  fi
done
failures=0
for m in resnet50 mobilenet_v2 bert_like; do
  echo "== $m ($SIZE)"
  rm -rf "$DIR/$m/onyx_out"
  if ! "$ONYX" run "$DIR/$m/model.onnx" --inputs "$DIR/$m/test_data_set_0" --save "$DIR/$m/onyx_out" --quiet >/dev/null; then
    echo "FAIL $m: onyx run failed"; failures=$((failures + 1)); continue
  fi
  if ! "$PY" "$REPO/tests/models/compare.py" "$DIR/$m/onyx_out" "$DIR/$m/test_data_set_0" --rtol 1e-4; then
    failures=$((failures + 1))
  fi
  "$ONYX" bench "$DIR/$m/model.onnx" --runs 5 --warmup 1 --json --inputs "$DIR/$m/test_data_set_0"
  # The same model on each shipped EP that is usable here: every Conv (on vulkan, openvino and
  # webgpu also every MatMul and Gemm) placed on it, outputs within the same tolerance.
  for ep in onednn xnnpack vulkan openvino webgpu; do
    "$ONYX" providers --json | "$PY" -c "import json,sys; sys.exit(0 if any(p['name']=='$ep' and p['usable'] for p in json.load(sys.stdin)) else 1)" \
      || { echo "skip $m on $ep: not usable here"; continue; }
    "$ONYX" explain "$DIR/$m/model.onnx" --ep "$ep" --json > "$DIR/$m/explain_$ep.json"
    if ! "$PY" -c "
import json, sys
d = json.load(open(sys.argv[1]))
ops = ('Conv', 'FusedConv', 'MatMul', 'Gemm') if sys.argv[2] in ('vulkan', 'openvino', 'webgpu') else ('Conv', 'FusedConv')
off = [n['name'] for n in d['nodes'] if n['op_type'] in ops and n['ep'] != sys.argv[2]]
print(d['summary'])
sys.exit('Conv nodes not on ' + sys.argv[2] + ': ' + ', '.join(off) if off else 0)" "$DIR/$m/explain_$ep.json" "$ep"; then
      failures=$((failures + 1)); continue
    fi
    rm -rf "$DIR/$m/onyx_out_$ep"
    if ! "$ONYX" run "$DIR/$m/model.onnx" --ep "$ep" --inputs "$DIR/$m/test_data_set_0" --save "$DIR/$m/onyx_out_$ep" --quiet >/dev/null; then
      echo "FAIL $m: onyx run --ep $ep failed"; failures=$((failures + 1)); continue
    fi
    "$PY" "$REPO/tests/models/compare.py" "$DIR/$m/onyx_out_$ep" "$DIR/$m/test_data_set_0" --rtol 1e-4 \
      || failures=$((failures + 1))
  done
done
[ "$failures" -eq 0 ] || { echo "$failures models failed"; exit 1; }
echo "all models match torch"
