#!/usr/bin/env bash
# WebGPU EP device check, for a machine with a GPU (written for NVIDIA, whose Vulkan driver
# wgpu-native's Vulkan backend then uses): checks that the EP opens the GPU (not lavapipe), runs
# the WebGPU unit tests and the ONNX conformance suite on it (against the expectation file written
# on lavapipe), runs ResNet-50, MobileNetV2 and the BERT-like model on it against the CPU EP
# (rtol 1e-3, every Conv/MatMul/Gemm on the EP) and benchmarks both EPs. Everything lands in $OUT,
# report.md first. A few minutes on 16 cores.
#
#   OUT=/path/to/out MODELS=/path/to/models bench/webgpu_device_check.sh
#
# Binaries: BUILD (default build) must hold bin/onyx, bin/onyx_conformance, bin/onyx_unit_tests
# and bin/libonyx_ep_webgpu.so (built here with ONYX_NATIVE=OFF and carried, or built there);
# the module finds libwgpu_native-release.so through its RUNPATH or LD_LIBRARY_PATH (WGPU_DIR is
# added to LD_LIBRARY_PATH when given). MODELS holds <model>/model.onnx and
# <model>/test_data_set_0 (what tests/models/e2e_test.sh writes). PYTHON: a python3 with numpy and
# onnx (default: the first found). DEVICE_ID: the EP's device_id option (default -1).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$REPO/out/webgpu-check}
BUILD=${BUILD:-$REPO/build}
MODELS=${MODELS:-$BUILD/e2e-models}
DEVICE_ID=${DEVICE_ID:--1}
[ -n "${WGPU_DIR:-}" ] && export LD_LIBRARY_PATH=$WGPU_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for c in python3 /usr/bin/python3; do
    if "$c" -c 'import numpy, onnx' 2>/dev/null; then PY=$c; break; fi
  done
  PY=${PY:-python3}
fi
mkdir -p "$OUT"
REPORT=$OUT/report.md
: >"$REPORT"
say() { echo "$*" | tee -a "$REPORT"; }
ONYX=$BUILD/bin/onyx
EPOPT=(--ep webgpu --ep-option "webgpu.device_id=$DEVICE_ID")
FAILS=0

say "# WebGPU EP device check"
say ""
say "- date: $(date -u +%FT%TZ), host $(hostname), $(nproc) cores"
say "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || echo 'nvidia-smi not available')"
[ -x "$ONYX" ] || { say "FAIL: $ONYX not found (set BUILD)"; exit 1; }
say ""
say "## Provider"
say '```'
"$ONYX" providers 2>/dev/null | grep -A3 '^webgpu' | tee -a "$REPORT"
say '```'
if ! "$ONYX" providers --json 2>/dev/null | "$PY" -c "import json,sys; sys.exit(0 if any(p['name']=='webgpu' and p['usable'] for p in json.load(sys.stdin)) else 1)"; then
  say "FAIL: the WebGPU EP is not usable here (reason above)"
  exit 1
fi
"$ONYX" providers 2>/dev/null | grep '^webgpu' | grep -q '(CPU' &&
  say "WARNING: the WebGPU EP picked a CPU adapter (lavapipe): is the GPU's Vulkan driver (ICD) installed?"

say ""
say "## Unit tests (onyx_unit_tests --gtest_filter='WebGpu*')"
if [ -x "$BUILD/bin/onyx_unit_tests" ]; then
  timeout 300 "$BUILD/bin/onyx_unit_tests" --gtest_filter='WebGpu*' >"$OUT/unit_tests.log" 2>&1 || FAILS=$((FAILS + 1))
  say '```'
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]' "$OUT/unit_tests.log" | tee -a "$REPORT"
  say '```'
else
  say "skipped: $BUILD/bin/onyx_unit_tests not found"
fi

say ""
DATA=${ONYX_TEST_DATA:-/usr/share/libonnx-testdata/data}
[ -d "$DATA/node" ] || DATA=$("$PY" -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data"))' 2>/dev/null)
say "## Conformance (onyx_conformance --ep webgpu, data: $DATA)"
if [ -x "$BUILD/bin/onyx_conformance" ] && [ -d "$DATA/node" ]; then
  DIRS=()
  for d in node pytorch-converted pytorch-operator simple; do [ -d "$DATA/$d" ] && DIRS+=("$DATA/$d"); done
  timeout 400 "$BUILD/bin/onyx_conformance" --ep webgpu --ep-option "webgpu.device_id=$DEVICE_ID" --jobs "$(nproc)" --timeout 60 \
    --results "$OUT/conformance_results.txt" --expect "$REPO/tests/conformance/webgpu.expect" "${DIRS[@]}" \
    >"$OUT/conformance.log" 2>&1 || FAILS=$((FAILS + 1))
  say '```'
  grep -v XDG_RUNTIME_DIR "$OUT/conformance.log" | tail -6 | tee -a "$REPORT"
  say '```'
else
  say "skipped: no onyx_conformance or no ONNX backend test data"
fi

say ""
say "## Models: WebGPU EP vs CPU EP (--rtol 1e-3), latency (median of 20 runs, batch 1)"
say ""
say "| model | placement | vs CPU EP | webgpu ms | cpu ms | cpu / webgpu |"
say "|---|---|---|---|---|---|"
for m in resnet50 mobilenet_v2 bert_like; do
  D=$MODELS/$m
  [ -f "$D/model.onnx" ] || { say "| $m | missing ($D/model.onnx) | | | | |"; continue; }
  rm -rf "$OUT/out_${m}_webgpu" "$OUT/out_${m}_cpu"
  summary=$("$ONYX" explain "$D/model.onnx" "${EPOPT[@]}" --json 2>/dev/null | "$PY" -c "
import json, sys
d = json.load(sys.stdin)
off = [n['name'] for n in d['nodes'] if n['op_type'] in ('Conv', 'FusedConv', 'MatMul', 'Gemm') and n['ep'] != 'webgpu']
print(d['summary'] + ('; NOT on webgpu: ' + ' '.join(off[:5]) if off else ''))")
  case $summary in *"NOT on webgpu"*) FAILS=$((FAILS + 1)) ;; esac
  cmp=FAIL
  if timeout 300 "$ONYX" run "$D/model.onnx" "${EPOPT[@]}" --require-ep --inputs "$D/test_data_set_0" --save "$OUT/out_${m}_webgpu" --quiet \
       >>"$OUT/models.log" 2>&1 &&
     "$ONYX" run "$D/model.onnx" --inputs "$D/test_data_set_0" --save "$OUT/out_${m}_cpu" --quiet >>"$OUT/models.log" 2>&1 &&
     "$PY" "$REPO/tests/models/compare.py" "$OUT/out_${m}_webgpu" "$OUT/out_${m}_cpu" --rtol 1e-3 >"$OUT/cmp_$m.txt" 2>&1; then
    cmp="ok ($(grep -o 'relative [0-9.e+-]*' "$OUT/cmp_$m.txt" | sort -k2 -g | tail -1))"
  else
    FAILS=$((FAILS + 1))
  fi
  lat() { timeout 300 "$ONYX" bench "$D/model.onnx" "$@" --runs 20 --warmup 3 --json --no-progress --inputs "$D/test_data_set_0" 2>/dev/null |
          "$PY" -c "import json,sys; print('%.2f' % json.load(sys.stdin)['median_ms'])" 2>/dev/null || echo '?'; }
  w=$(lat "${EPOPT[@]}")
  c=$(lat)
  ratio=$("$PY" -c "print('%.3g' % ($c / $w))" 2>/dev/null || echo '?')
  say "| $m | $summary | $cmp | $w | $c | $ratio |"
done
say ""
say "failures: $FAILS"
[ "$FAILS" -eq 0 ]
