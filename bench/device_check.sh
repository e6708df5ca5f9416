#!/usr/bin/env bash
# Vulkan EP device check, for a machine with a GPU (written for NVIDIA): builds onyx with the
# Vulkan EP, checks that it opens the GPU (not lavapipe), runs the Vulkan provider tests and the
# ONNX conformance suite on the Vulkan EP (the float16 tests among them: which float16 path the GPU
# takes is on the `onyx providers` line), runs ResNet-50, MobileNetV2 and the BERT-like model on
# the Vulkan EP against the CPU EP (rtol 1e-3; with fp16_storage=true, rtol 1e-2) and benchmarks
# both EPs. Everything lands in $OUT,
# report.md first. Sized for a few minutes on 16 cores.
#
#   OUT=/path/to/out bench/device_check.sh
#
# Needs: CMake, ninja, a C++20 compiler, the Vulkan loader and headers (libvulkan-dev),
# glslangValidator (glslang-tools), the GPU's Vulkan driver (for NVIDIA: the driver's
# nvidia_icd.json), python3 with numpy and onnx; torch and torchvision to export the models
# (or MODELS=dir holding <model>/model.onnx and <model>/test_data_set_0, as the e2e test writes).
#
# Environment: OUT (default out/vulkan-check), BUILD (default build-vulkan-device), JOBS (default:
# all cores), PYTHON (default: the first python3 with numpy and onnx), ONYX_TEST_DATA (ONNX backend test data; default: the
# Debian package's, else the onnx Python package's), MODELS, MODEL_SIZE (full|small, default
# full), DEVICE_ID (the EP's device_id option, default -1: the best device), SKIP_BUILD=1 (use
# the binaries already in $BUILD, e.g. for a second run).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$REPO/out/vulkan-check}
BUILD=${BUILD:-$REPO/build-vulkan-device}
JOBS=${JOBS:-$(nproc)}
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  # The first python3 that has numpy and onnx (compare.py and the exporter need them).
  for c in python3 /usr/bin/python3; do
    if "$c" -c 'import numpy, onnx' 2>/dev/null; then PY=$c; break; fi
  done
  PY=${PY:-python3}
fi
SIZE=${MODEL_SIZE:-full}
DEVICE_ID=${DEVICE_ID:--1}
WORK=$BUILD/device-check
mkdir -p "$OUT" "$WORK"
REPORT=$OUT/report.md
T0=$(date +%s)
say() { echo "$*" | tee -a "$REPORT"; }
: >"$REPORT"
say "# Vulkan EP device check"
say ""
say "- date: $(date -u +%FT%TZ), host $(hostname), $(nproc) cores"
say "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || echo 'nvidia-smi not available')"
say "- Vulkan ICDs: $(ls /usr/share/vulkan/icd.d/ /etc/vulkan/icd.d/ 2>/dev/null | grep json | tr '\n' ' ' || echo none)"
say "- glslangValidator: $(command -v glslangValidator || echo 'not found (install glslang-tools)')"
if ! command -v glslangValidator >/dev/null || ! [ -f /usr/include/vulkan/vulkan.h ]; then
  say "FAIL: the Vulkan headers (libvulkan-dev) and glslangValidator (glslang-tools) are needed to build the EP"
  exit 1
fi

# ------------------------------------------------------------------------------------------------
# 1. Build
CMAKE_ARGS=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DONYX_EP_VULKAN=ON -DONYX_EP_CUDA=OFF -DONYX_EP_ONEDNN=OFF
            -DONYX_EP_XNNPACK=OFF -DONYX_BUILD_EXAMPLES=OFF)
TESTS=ON
if [ "${SKIP_BUILD:-0}" = 1 ]; then
  [ -x "$BUILD/bin/onyx" ] || { say "FAIL: SKIP_BUILD=1 but $BUILD/bin/onyx does not exist"; exit 1; }
  [ -x "$BUILD/bin/onyx_conformance" ] && [ -x "$BUILD/bin/onyx_provider_tests" ] || TESTS=OFF
  say "- build: skipped (SKIP_BUILD=1), using $BUILD"
elif ! cmake -S "$REPO" -B "$BUILD" "${CMAKE_ARGS[@]}" >"$OUT/build.log" 2>&1; then
  say "- configure with tests failed (GTest missing?): building without tests"
  TESTS=OFF
  cmake -S "$REPO" -B "$BUILD" "${CMAKE_ARGS[@]}" -DONYX_BUILD_TESTS=OFF >>"$OUT/build.log" 2>&1 \
    || { say "FAIL: cmake configure (build.log)"; exit 1; }
fi
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  TARGETS=(onyx_cli onyx_ep_vulkan)
  [ "$TESTS" = ON ] && TARGETS+=(onyx_conformance onyx_provider_tests)
  B0=$(date +%s)
  if ! ninja -C "$BUILD" -j"$JOBS" "${TARGETS[@]}" >>"$OUT/build.log" 2>&1; then
    say "FAIL: build (tail of build.log):"
    tail -30 "$OUT/build.log" | tee -a "$REPORT"
    exit 1
  fi
  say "- build: ${TARGETS[*]} in $(( $(date +%s) - B0 )) s"
fi
ONYX=$BUILD/bin/onyx
EPOPT=(--ep vulkan --ep-option "vulkan.device_id=$DEVICE_ID")
FAILS=0

say ""
say "## Provider"
say '```'
"$ONYX" providers 2>&1 | grep -A4 '^vulkan' | tee -a "$REPORT"
command -v vulkaninfo >/dev/null && vulkaninfo --summary 2>/dev/null | grep -E 'deviceName|deviceType|driverName|apiVersion' | tee -a "$REPORT"
say '```'
if ! "$ONYX" providers --json | "$PY" -c "import json,sys; sys.exit(0 if any(p['name']=='vulkan' and p['usable'] for p in json.load(sys.stdin)) else 1)"; then
  say "FAIL: the Vulkan EP is not usable here (reason above)"
  exit 1
fi
if "$ONYX" providers 2>&1 | grep '^vulkan' | grep -q '(CPU'; then
  say "WARNING: the Vulkan EP picked a CPU implementation (lavapipe): is the GPU's Vulkan driver installed?"
fi

# ------------------------------------------------------------------------------------------------
# 2. Provider tests: every Vulkan kernel family against the CPU EP, copies, errors
if [ "$TESTS" = ON ]; then
  say ""
  say "## Provider tests (onyx_provider_tests --gtest_filter='Vulkan.*')"
  timeout 300 "$BUILD/bin/onyx_provider_tests" --gtest_filter='Vulkan.*' >"$OUT/provider_tests.log" 2>&1 || FAILS=$((FAILS + 1))
  say '```'
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]' "$OUT/provider_tests.log" | tee -a "$REPORT"
  say '```'
  say "float16 (float16 models, both float16 paths, fp16_storage on float32 models, declines):"
  say '```'
  grep -E '^\[ +(OK|FAILED|SKIPPED) +\] Vulkan\.(Float16|Fp16|HalfPrecision)|^\[ fp16_storage \]' "$OUT/provider_tests.log" \
    | tee -a "$REPORT"
  say '```'
fi

# ------------------------------------------------------------------------------------------------
# 3. Conformance on the Vulkan EP, strict placement, against the expectation file from lavapipe
if [ "$TESTS" = ON ]; then
  DATA=${ONYX_TEST_DATA:-/usr/share/libonnx-testdata/data}
  [ -d "$DATA/node" ] || DATA=$("$PY" -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data"))' 2>/dev/null)
  say ""
  say "## Conformance (onyx_conformance --ep vulkan, data: $DATA)"
  if [ -d "$DATA/node" ]; then
    DIRS=()
    for d in node pytorch-converted pytorch-operator simple; do [ -d "$DATA/$d" ] && DIRS+=("$DATA/$d"); done
    C0=$(date +%s)
    timeout 300 "$BUILD/bin/onyx_conformance" --ep vulkan --jobs "$JOBS" --timeout 60 --results "$OUT/conformance_results.txt" \
      --expect "$REPO/tests/conformance/vulkan.expect" "${DIRS[@]}" >"$OUT/conformance.log" 2>&1 || FAILS=$((FAILS + 1))
    # The same run's own expectation file, to diff against lavapipe's.
    timeout 300 "$BUILD/bin/onyx_conformance" --ep vulkan --jobs "$JOBS" --timeout 60 --write-expect "$OUT/vulkan.expect" \
      "${DIRS[@]}" >"$WORK/conformance_write.log" 2>&1
    say '```'
    tail -6 "$OUT/conformance.log" | tee -a "$REPORT"
    say "($(( $(date +%s) - C0 )) s; diff against lavapipe's expectations:)"
    diff <(grep -v '^#' "$REPO/tests/conformance/vulkan.expect" | cut -d' ' -f1) <(grep -v '^#' "$OUT/vulkan.expect" | cut -d' ' -f1) \
      | head -20 | tee -a "$REPORT"
    say '```'
  else
    say "skipped: no ONNX backend test data found"
  fi
fi

# ------------------------------------------------------------------------------------------------
# 4. Models: Vulkan EP vs CPU EP (rtol 1e-3) and vs PyTorch's outputs
say ""
say "## Models ($SIZE size): Vulkan EP vs CPU EP, --rtol 1e-3"
MODELS=${MODELS:-$WORK/models}
: >"$OUT/models.log"
for m in resnet50 mobilenet_v2 bert_like; do
  if [ ! -f "$MODELS/$m/model.onnx" ]; then
    timeout 200 "$PY" "$REPO/tests/models/export_models.py" "$MODELS" --size "$SIZE" --only "$m" >>"$OUT/models.log" 2>&1 \
      || { say "- $m: export failed (models.log)"; FAILS=$((FAILS + 1)); continue; }
  fi
  D=$MODELS/$m
  rm -rf "$D/out_vulkan" "$D/out_cpu"
  "$ONYX" explain "$D/model.onnx" "${EPOPT[@]}" --json >"$WORK/explain_$m.json" 2>>"$OUT/models.log"
  if ! timeout 200 "$ONYX" run "$D/model.onnx" "${EPOPT[@]}" --require-ep --inputs "$D/test_data_set_0" --save "$D/out_vulkan" --quiet \
       >>"$OUT/models.log" 2>&1; then
    say "- $m: FAIL, onyx run --ep vulkan failed (models.log)"
    FAILS=$((FAILS + 1))
    continue
  fi
  timeout 200 "$ONYX" run "$D/model.onnx" --inputs "$D/test_data_set_0" --save "$D/out_cpu" --quiet >>"$OUT/models.log" 2>&1
  if "$PY" "$REPO/tests/models/compare.py" "$D/out_vulkan" "$D/out_cpu" --rtol 1e-3 >"$WORK/cmp_$m.txt" 2>&1; then r=ok; else r=FAIL; FAILS=$((FAILS + 1)); fi
  "$PY" "$REPO/tests/models/compare.py" "$D/out_vulkan" "$D/test_data_set_0" --rtol 1e-3 >"$WORK/cmp_torch_$m.txt" 2>&1 && t=ok || t=FAIL
  cat "$WORK/cmp_$m.txt" "$WORK/cmp_torch_$m.txt" >>"$OUT/models.log"
  # Every Conv / MatMul / Gemm must be on the Vulkan EP.
  off=$("$PY" -c "
import json, sys
d = json.load(open(sys.argv[1]))
print(' '.join(n['name'] for n in d['nodes'] if n['op_type'] in ('Conv', 'FusedConv', 'MatMul', 'Gemm') and n['ep'] != 'vulkan'))
print(d['summary'])" "$WORK/explain_$m.json" 2>/dev/null)
  [ -n "$(echo "$off" | head -1)" ] && { say "- $m: FAIL, matrix nodes not on vulkan: $(echo "$off" | head -1)"; FAILS=$((FAILS + 1)); }
  say "- $m: vs CPU EP $r, vs PyTorch $t; relative $(grep -h relative "$WORK/cmp_$m.txt" | sed 's/.*relative \([^ ]*\).*/\1/' | tr '\n' ' '); placement: $(echo "$off" | tail -1)"
  # fp16_storage=true: every stored value rounded to float16, so rtol 1e-2 against the CPU EP.
  rm -rf "$D/out_vulkan_fp16"
  if timeout 200 "$ONYX" run "$D/model.onnx" "${EPOPT[@]}" --ep-option vulkan.fp16_storage=true --require-ep \
       --inputs "$D/test_data_set_0" --save "$D/out_vulkan_fp16" --quiet >>"$OUT/models.log" 2>&1 &&
     "$PY" "$REPO/tests/models/compare.py" "$D/out_vulkan_fp16" "$D/out_cpu" --rtol 1e-2 >"$WORK/cmp_fp16_$m.txt" 2>&1; then
    r=ok
  else
    r=FAIL
    FAILS=$((FAILS + 1))
  fi
  cat "$WORK/cmp_fp16_$m.txt" >>"$OUT/models.log" 2>/dev/null
  say "  - fp16_storage=true: vs CPU EP $r; relative $(grep -h relative "$WORK/cmp_fp16_$m.txt" 2>/dev/null | sed 's/.*relative \([^ ]*\).*/\1/' | tr '\n' ' ')"
done

# ------------------------------------------------------------------------------------------------
# 5. Benchmarks: Vulkan EP vs CPU EP, batch 1, fp32, and where the Vulkan time goes
say ""
say "## Benchmarks (median ms, batch 1, fp32)"
say ""
say "| model | onyx vulkan | onyx vulkan fp16_storage | onyx cpu | cpu / vulkan |"
say "| --- | --- | --- | --- | --- |"
: >"$OUT/bench.json"
for m in resnet50 mobilenet_v2 bert_like; do
  D=$MODELS/$m
  [ -f "$D/model.onnx" ] || continue
  timeout 200 "$ONYX" bench "$D/model.onnx" "${EPOPT[@]}" --runs 30 --warmup 5 --json --inputs "$D/test_data_set_0" \
    >"$WORK/bench_vk_$m.json" 2>>"$OUT/models.log"
  timeout 200 "$ONYX" bench "$D/model.onnx" "${EPOPT[@]}" --ep-option vulkan.fp16_storage=true --runs 30 --warmup 5 --json \
    --inputs "$D/test_data_set_0" >"$WORK/bench_vkh_$m.json" 2>>"$OUT/models.log"
  timeout 200 "$ONYX" bench "$D/model.onnx" --runs 10 --warmup 2 --json --inputs "$D/test_data_set_0" \
    >"$WORK/bench_cpu_$m.json" 2>>"$OUT/models.log"
  for ep in vk vkh cpu; do
    sed "s/^/{\"model\":\"$m\",\"ep\":\"$ep\",\"result\":/; s/$/}/" "$WORK/bench_${ep}_$m.json" >>"$OUT/bench.json"
  done
  v=$("$PY" -c "import json,sys; print('%.3f' % json.load(open(sys.argv[1]))['median_ms'])" "$WORK/bench_vk_$m.json" 2>/dev/null || echo "-")
  h=$("$PY" -c "import json,sys; print('%.3f' % json.load(open(sys.argv[1]))['median_ms'])" "$WORK/bench_vkh_$m.json" 2>/dev/null || echo "-")
  c=$("$PY" -c "import json,sys; print('%.3f' % json.load(open(sys.argv[1]))['median_ms'])" "$WORK/bench_cpu_$m.json" 2>/dev/null || echo "-")
  r=$("$PY" -c "print('%.2f' % (float('$c') / float('$v')))" 2>/dev/null || echo "-")
  say "| $m | $v | $h | $c | $r |"
done
# Per-node device time (ONYX_VULKAN_SYNC=1 waits after every node, so each node's time is its own).
for m in resnet50 bert_like; do
  D=$MODELS/$m
  [ -f "$D/model.onnx" ] || continue
  say ""
  say "### $m: slowest nodes on the device (ONYX_VULKAN_SYNC=1)"
  say '```'
  ONYX_VULKAN_SYNC=1 timeout 200 "$ONYX" bench "$D/model.onnx" "${EPOPT[@]}" --runs 1 --warmup 1 --per-node \
    --inputs "$D/test_data_set_0" 2>&1 | head -24 | tee -a "$REPORT"
  say '```'
done

say ""
say "total: $(( $(date +%s) - T0 )) s, failures: $FAILS"
[ "$FAILS" -eq 0 ]
