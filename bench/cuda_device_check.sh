#!/usr/bin/env bash
# CUDA EP device check, for a machine with an NVIDIA GPU, the CUDA toolkit (nvcc, cuBLAS), cuDNN 9
# (toolkit, system or PyTorch's nvidia-cudnn wheel), CMake, ninja and python3 with torch, torchvision
# and onnx. Builds the CUDA EP, runs its provider tests, the ONNX conformance suite on the CUDA EP,
# three exported models (ResNet-50, MobileNetV2, BERT-like) against the CPU EP, float16 and
# bfloat16 variants of ResNet-50 and the BERT-like encoder (onnxconverter_common's
# convert_float_to_float16 with keep_io_types false and true; tests/models/make_quant_corpus.py's
# to_bfloat16, which needs ml_dtypes) against the fp32 CPU outputs, benchmarks them against PyTorch
# (fp32, and torch.autocast float16 / bfloat16) on the same GPU, and runs ONNX Runtime's transformer operators (their single-node
# tests, greedy generation on decoders). Everything lands in $OUT (report.md first). With prebuilt
# binaries it took about 6 minutes on the 16-core H200 machine (provider tests, models and
# benchmarks ~90 s, conformance ~250 s); a build there comes on top (not measured).
#
#   OUT=/path/to/out bench/cuda_device_check.sh
#
# Environment: OUT (default out/cuda-check), BUILD (build dir, default build-cuda-device), PREBUILT
# (a directory of binaries built elsewhere, used when they run here; else the script builds), JOBS
# (default: all cores), PYTHON (default python3), ONYX_TEST_DATA (ONNX backend test data; default:
# the Debian package's, else the onnx Python package's), GTEST_SRC (googletest sources, built
# when no installed GTest is found), MODEL_SIZE (full|small, default full), TRANSFORMER_TESTS (the
# transformer single-node tests, default .cache/transformer-node-tests). For a dry run of the
# script's steps on a machine without a GPU: CHECK_EP=cpu SKIP_CONFORMANCE=1.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$REPO/out/cuda-check}
BUILD=${BUILD:-$REPO/build-cuda-device}
JOBS=${JOBS:-$(nproc)}
PY=${PYTHON:-python3}
SIZE=${MODEL_SIZE:-full}
EP=${CHECK_EP:-cuda}
WORK=$BUILD/device-check
mkdir -p "$OUT" "$WORK"
REPORT=$OUT/report.md
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }
say() { echo "$*" | tee -a "$REPORT"; }
: >"$REPORT"
say "# CUDA EP device check"
say ""
say "- date: $(date -u +%FT%TZ), host $(hostname), $(nproc) cores"
say "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || echo 'nvidia-smi not available')"
say "- nvcc: $(command -v nvcc >/dev/null && nvcc --version | tail -1 || echo 'not on PATH')"
say "- torch: $("$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>/dev/null || echo 'not importable')"

# The toolkit's runtime libraries: where the module's RUNPATH does not hold libcublasLt.so.13 or
# libcudnn.so.9, those of PyTorch's nvidia-* wheels (nvidia/cublas/lib, nvidia/cudnn/lib).
wheel_dir() { "$PY" -c "import importlib, sys; m = importlib.import_module('nvidia.' + sys.argv[1]); print(list(m.__path__)[0])" "$1" 2>/dev/null; }
for pkg in cublas cudnn; do
  d=$(wheel_dir "$pkg")
  [ -n "$d" ] && [ -d "$d/lib" ] && export LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
say "- LD_LIBRARY_PATH: ${LD_LIBRARY_PATH:-(unset)}"

# ------------------------------------------------------------------------------------------------
# 1. Build (or, with PREBUILT=dir, the onyx, libonyx.so.0, libonyx_ep_cuda.so, onyx_conformance and
#    onyx_provider_tests built elsewhere, when they run here)
CMAKE_ARGS=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DONYX_EP_CUDA=ON -DONYX_EP_ONEDNN=OFF -DONYX_EP_XNNPACK=OFF
            -DONYX_EP_VULKAN=OFF -DONYX_BUILD_EXAMPLES=OFF)
command -v nvcc >/dev/null || { [ -x /usr/local/cuda/bin/nvcc ] && CMAKE_ARGS+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc); }
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CUDA_ROOT=$(dirname "$(dirname "$NVCC")")
if ! ls "$CUDA_ROOT"/include/cudnn.h /usr/include/cudnn.h /usr/include/x86_64-linux-gnu/cudnn.h >/dev/null 2>&1; then
  # cuDNN from PyTorch's wheel (nvidia-cudnn-cu13): headers and libcudnn.so.9 without the dev symlink.
  CUDNN_DIR=$("$PY" -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) if nvidia.cudnn.__file__ else list(nvidia.cudnn.__path__)[0])' 2>/dev/null)
  if [ -n "$CUDNN_DIR" ] && [ -f "$CUDNN_DIR/include/cudnn.h" ]; then
    CMAKE_ARGS+=(-DCUDNN_INCLUDE_DIR="$CUDNN_DIR/include" -DCUDNN_LIBRARY="$CUDNN_DIR/lib/libcudnn.so.9")
    say "- cuDNN: from the Python wheel at $CUDNN_DIR"
  fi
fi
TESTS=ON
[ -n "${PREBUILT:-}" ] && export LD_LIBRARY_PATH="$PREBUILT${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -n "${PREBUILT:-}" ] && "$PREBUILT/onyx" --version >"$OUT/build.log" 2>&1; then
  BIN=$PREBUILT
  [ -x "$BIN/onyx_conformance" ] && [ -x "$BIN/onyx_provider_tests" ] || TESTS=OFF
  say "- build: prebuilt binaries from $PREBUILT ($("$BIN/onyx" --version 2>&1 | head -1))"
else
[ -n "${PREBUILT:-}" ] && say "- prebuilt binaries in $PREBUILT do not run here ($(tail -1 "$OUT/build.log")): building"
if [ -n "${GTEST_SRC:-}" ] && [ -d "$GTEST_SRC" ] && [ ! -d "$BUILD/gtest-install" ]; then
  (cmake -S "$GTEST_SRC" -B "$BUILD/gtest-build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$BUILD/gtest-install" \
     -DBUILD_GMOCK=OFF && ninja -C "$BUILD/gtest-build" -j"$JOBS" install) >"$OUT/build.log" 2>&1 || true
fi
[ -d "$BUILD/gtest-install" ] && CMAKE_ARGS+=(-DCMAKE_PREFIX_PATH="$BUILD/gtest-install")
if ! cmake -S "$REPO" -B "$BUILD" "${CMAKE_ARGS[@]}" >>"$OUT/build.log" 2>&1; then
  say "- GTest not found: building without tests (no provider tests, no conformance runner)"
  TESTS=OFF
  cmake -S "$REPO" -B "$BUILD" "${CMAKE_ARGS[@]}" -DONYX_BUILD_TESTS=OFF >>"$OUT/build.log" 2>&1 || { say "FAIL: cmake configure (build.log)"; exit 1; }
fi
TARGETS=(onyx_cli onyx_ep_cuda)
[ "$TESTS" = ON ] && TARGETS+=(onyx_conformance onyx_provider_tests)
B0=$(date +%s)
if ! ninja -C "$BUILD" -j"$JOBS" "${TARGETS[@]}" >>"$OUT/build.log" 2>&1; then
  say "FAIL: build (tail of build.log):"; tail -30 "$OUT/build.log" | tee -a "$REPORT"; exit 1
fi
say "- build: ${TARGETS[*]} in $(( $(date +%s) - B0 )) s"
BIN=$BUILD/bin
fi
ONYX=$BIN/onyx
say ""
say "## Provider"
say '```'
"$ONYX" providers 2>&1 | awk -v ep="$EP" '$1 == ep { on = 1; print; next } on && /^    / { print; next } { on = 0 }' | tee -a "$REPORT"
say '```'
if ! "$ONYX" providers --json | "$PY" -c "import json,sys; sys.exit(0 if any(p['name']=='$EP' and p['usable'] for p in json.load(sys.stdin)) else 1)"; then
  say "FAIL: the $EP EP is not usable here (reason above)"
  { echo '```'; ldd "$BIN/libonyx_ep_$EP.so" 2>&1; nvidia-smi 2>&1 | head -15; echo '```'; } | tee -a "$REPORT"
  exit 1
fi
FAILS=0

# ------------------------------------------------------------------------------------------------
# 2. Provider tests (every CUDA op family against the CPU EP)
if [ "$TESTS" = ON ]; then
  say ""
  say "## Provider tests (onyx_provider_tests --gtest_filter='Cuda*')"
  timeout 120 "$BIN/onyx_provider_tests" --gtest_filter='Cuda*' >"$OUT/provider_tests.log" 2>&1 || FAILS=$((FAILS + 1))
  say '```'
  grep -E '^\[==========\] .* ran|^\[  PASSED  \]|^\[  SKIPPED \] [0-9]|^\[  FAILED  \]' "$OUT/provider_tests.log" | tee -a "$REPORT"
  say '```'
fi

# ------------------------------------------------------------------------------------------------
# 3. Models against the CPU EP (and PyTorch's outputs), rtol 1e-3
say ""
say "## Models ($SIZE size): $EP EP vs CPU EP, --rtol 1e-3"
MODELS=$WORK/models
: >"$OUT/models.log"
for m in resnet50 mobilenet_v2 bert_like; do
  if [ ! -f "$MODELS/$m/model.onnx" ]; then
    timeout 150 "$PY" "$REPO/tests/models/export_models.py" "$MODELS" --size "$SIZE" --only "$m" >>"$OUT/models.log" 2>&1 \
      || { say "- $m: export failed (models.log)"; FAILS=$((FAILS + 1)); continue; }
  fi
  D=$MODELS/$m
  {
    echo "== $m"
    "$ONYX" explain "$D/model.onnx" --ep "$EP" 2>&1 | tail -3
  } >>"$OUT/models.log" 2>&1
  rm -rf "$D/out_ep" "$D/out_cpu"
  if ! timeout 60 "$ONYX" run "$D/model.onnx" --ep "$EP" --require-ep --inputs "$D/test_data_set_0" --save "$D/out_ep" --quiet >>"$OUT/models.log" 2>&1; then
    say "- $m: FAIL, onyx run --ep $EP failed (models.log)"; FAILS=$((FAILS + 1)); continue
  fi
  timeout 60 "$ONYX" run "$D/model.onnx" --inputs "$D/test_data_set_0" --save "$D/out_cpu" --quiet >>"$OUT/models.log" 2>&1
  if "$PY" "$REPO/tests/models/compare.py" "$D/out_ep" "$D/out_cpu" --rtol 1e-3 >"$WORK/cmp_$m.txt" 2>&1; then r=ok; else r=FAIL; FAILS=$((FAILS + 1)); fi
  "$PY" "$REPO/tests/models/compare.py" "$D/out_ep" "$D/test_data_set_0" --rtol 1e-3 >"$WORK/cmp_torch_$m.txt" 2>&1 && t=ok || t=FAIL
  cat "$WORK/cmp_$m.txt" "$WORK/cmp_torch_$m.txt" >>"$OUT/models.log"
  placement=$("$ONYX" explain "$D/model.onnx" --ep "$EP" 2>/dev/null | tail -1)
  say "- $m: vs CPU EP $r, vs PyTorch $t; $(grep -h relative "$WORK/cmp_$m.txt" | sed 's/.*relative \([^ ]*\).*/\1/' | tr '\n' ' ')(relative); placement: $placement"
done
# Every model again with enable_cuda_graph: three runs (warm-up, recorded and replayed, replayed
# only); the last run's outputs against the CPU EP's.
if [ "$EP" = cuda ]; then
  for m in resnet50 mobilenet_v2 bert_like; do
    D=$MODELS/$m
    [ -d "$D/out_cpu" ] || continue
    rm -rf "$D/out_graph"
    if ! timeout 60 "$ONYX" run "$D/model.onnx" --ep cuda --ep-option cuda.enable_cuda_graph=true --require-ep --runs 3 \
           --inputs "$D/test_data_set_0" --save "$D/out_graph" --quiet >>"$OUT/models.log" 2>&1; then
      say "- $m (enable_cuda_graph): FAIL, onyx run failed (models.log)"; FAILS=$((FAILS + 1)); continue
    fi
    if "$PY" "$REPO/tests/models/compare.py" "$D/out_graph" "$D/out_cpu" --rtol 1e-3 >"$WORK/cmp_graph_$m.txt" 2>&1; then r=ok; else r=FAIL; FAILS=$((FAILS + 1)); fi
    cat "$WORK/cmp_graph_$m.txt" >>"$OUT/models.log"
    recorded=$(grep -c "could not record" "$OUT/models.log" || true)
    say "- $m (enable_cuda_graph, 3rd run): vs CPU EP $r; $(grep -h relative "$WORK/cmp_graph_$m.txt" | sed 's/.*relative \([^ ]*\).*/\1/' | tr '\n' ' ')(relative); 'could not record' warnings so far: $recorded"
  done
fi
# The CNNs again with prefer_nhwc (channels-last convolutions, pooling, BatchNormalization).
if [ "$EP" = cuda ]; then
  for m in resnet50 mobilenet_v2; do
    D=$MODELS/$m
    [ -d "$D/out_cpu" ] || continue
    rm -rf "$D/out_nhwc"
    if ! timeout 60 "$ONYX" run "$D/model.onnx" --ep cuda --ep-option cuda.prefer_nhwc=true --require-ep --inputs "$D/test_data_set_0" \
           --save "$D/out_nhwc" --quiet >>"$OUT/models.log" 2>&1; then
      say "- $m (prefer_nhwc): FAIL, onyx run failed (models.log)"; FAILS=$((FAILS + 1)); continue
    fi
    if "$PY" "$REPO/tests/models/compare.py" "$D/out_nhwc" "$D/out_cpu" --rtol 1e-3 >"$WORK/cmp_nhwc_$m.txt" 2>&1; then r=ok; else r=FAIL; FAILS=$((FAILS + 1)); fi
    cat "$WORK/cmp_nhwc_$m.txt" >>"$OUT/models.log"
    layout=$("$ONYX" explain "$D/model.onnx" --ep cuda --ep-option cuda.prefer_nhwc=true --json 2>/dev/null | "$PY" -c \
      'import json,sys; n=json.load(sys.stdin)["nodes"]; print(sum(x.get("domain")=="onyx.nhwc" for x in n), "channels-last nodes,", sum(x["op_type"]=="Transpose" for x in n), "transposes")')
    say "- $m (prefer_nhwc): vs CPU EP $r; $(grep -h relative "$WORK/cmp_nhwc_$m.txt" | sed 's/.*relative \([^ ]*\).*/\1/' | tr '\n' ' ')(relative); $layout"
  done
fi

# ------------------------------------------------------------------------------------------------
# 3b. float16 / bfloat16: ResNet-50 and the BERT-like encoder converted to 16 bits (fp16: weights and
#     activations float16, interface float16 or, keep_io_types, float32; bf16: every float tensor
#     bfloat16, float interface, opset 22). Each runs wholly on the EP (--require-ep), and its outputs
#     are checked against the fp32 model's CPU EP outputs (max |got - ref| / max |ref|): float16
#     within RTOL_FP16 (default 1e-2); bfloat16 within RTOL_BF16 (default 5e-2: bfloat16 storage alone
#     moves the encoder's outputs by 0.015-0.031, docs/quantization.md), its figure against 1e-2 shown
#     too; and against the CPU EP running the same 16-bit model within 1e-2.
say ""
say "## float16 / bfloat16 variants: $EP EP vs the fp32 model on the CPU EP"
HALF_VARIANTS=()
if "$PY" - "$REPO" "$MODELS" >>"$OUT/models.log" 2>&1 <<'PYEOF'
import os, shutil, sys
import numpy as np
import onnx
from onnx import numpy_helper
repo, models = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(repo, "tests", "models"))
from onnxconverter_common import float16
import make_quant_corpus as mqc

def write_inputs(model, src_dir, dst_dir):
    # the fp32 inputs as the variant's input types
    os.makedirs(dst_dir, exist_ok=True)
    types = {i.name: i.type.tensor_type.elem_type for i in model.graph.input}
    for f in sorted(os.listdir(src_dir)):
        if not f.startswith("input_"):
            continue
        t = onnx.load_tensor(os.path.join(src_dir, f))
        a = numpy_helper.to_array(t)
        want = types.get(t.name, t.data_type)
        if want != t.data_type and want == onnx.TensorProto.FLOAT16:
            a = a.astype(np.float16)
        onnx.save_tensor(numpy_helper.from_array(a, t.name), os.path.join(dst_dir, f))

for m in ("resnet50", "bert_like"):
    src = os.path.join(models, m)
    if not os.path.isfile(os.path.join(src, "model.onnx")):
        print(m, ": no fp32 export, no 16-bit variants")
        continue
    base = onnx.load(os.path.join(src, "model.onnx"))
    made = {}
    for io in (False, True):
        made[m + ("_fp16_io" if io else "_fp16")] = lambda io=io: float16.convert_float_to_float16(base, keep_io_types=io)
    made[m + "_bf16"] = lambda: mqc.to_bfloat16(base)
    for name, make in made.items():
        d = os.path.join(models, name)
        try:
            v = make()
        except Exception as ex:  # noqa: BLE001 - reported, the other variants still run
            print(name, ": conversion failed:", ex)
            continue
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        onnx.save(v, os.path.join(d, "model.onnx"))
        write_inputs(v, os.path.join(src, "test_data_set_0"), os.path.join(d, "test_data_set_0"))
        print(name, ": made")
PYEOF
then
  for m in resnet50 bert_like; do
    for v in "${m}_fp16" "${m}_fp16_io" "${m}_bf16"; do
      D=$MODELS/$v
      [ -f "$D/model.onnx" ] || { say "- $v: not made (models.log)"; FAILS=$((FAILS + 1)); continue; }
      HALF_VARIANTS+=("$v")
      REF=$MODELS/$m/out_cpu
      case $v in *bf16) tol=${RTOL_BF16:-5e-2} ;; *) tol=${RTOL_FP16:-1e-2} ;; esac
      rm -rf "$D/out_ep" "$D/out_cpu"
      if ! timeout 120 "$ONYX" run "$D/model.onnx" --ep "$EP" --require-ep --inputs "$D/test_data_set_0" --save "$D/out_ep" --quiet \
             >>"$OUT/models.log" 2>&1; then
        say "- $v: FAIL, onyx run --ep $EP --require-ep failed (models.log; onyx explain names the node the EP declined)"
        "$ONYX" explain "$D/model.onnx" --ep "$EP" >>"$OUT/models.log" 2>&1
        FAILS=$((FAILS + 1)); continue
      fi
      timeout 300 "$ONYX" run "$D/model.onnx" --inputs "$D/test_data_set_0" --save "$D/out_cpu" --quiet >>"$OUT/models.log" 2>&1
      if "$PY" "$REPO/tests/models/compare.py" "$D/out_ep" "$REF" --rtol "$tol" >"$WORK/cmp_$v.txt" 2>&1; then r=ok; else r=FAIL; FAILS=$((FAILS + 1)); fi
      if "$PY" "$REPO/tests/models/compare.py" "$D/out_ep" "$D/out_cpu" --rtol 1e-2 >"$WORK/cmp_cpu16_$v.txt" 2>&1; then c=ok; else c=FAIL; FAILS=$((FAILS + 1)); fi
      cat "$WORK/cmp_$v.txt" "$WORK/cmp_cpu16_$v.txt" >>"$OUT/models.log"
      rel=$(grep -h relative "$WORK/cmp_$v.txt" | sed 's/.*relative \([^ ]*\).*/\1/' | tr '\n' ' ')
      within=$("$PY" -c "import sys; print('within 1e-2' if all(float(x) <= 1e-2 for x in sys.argv[1:]) else 'above 1e-2')" $rel 2>/dev/null)
      placement=$("$ONYX" explain "$D/model.onnx" --ep "$EP" 2>/dev/null | tail -1)
      say "- $v: vs fp32 CPU EP $r (rtol $tol; ${rel}relative, $within); vs the CPU EP on the same model $c; placement: $placement"
    done
  done
else
  say "- the 16-bit variants could not be made (onnxconverter_common, ml_dtypes: models.log)"
  FAILS=$((FAILS + 1))
fi

# ------------------------------------------------------------------------------------------------
# 4. Benchmarks: onyx on the CUDA EP vs PyTorch (fp32, TF32 off in both) on the same GPU, batch 1
say ""
say "## Benchmarks ($EP EP vs PyTorch on CUDA; median ms, batch 1, fp32, TF32 off)"
: >"$OUT/bench.json"
# bench_json NAME LABEL DIR FILE [EP OPTIONS...]: `onyx bench` of DIR's model on the EP into
# $WORK/FILE, its JSON also appended to bench.json as {"model": NAME, "ep": LABEL, "result": ...}.
bench_json() {
  local name=$1 label=$2 dir=$3 file=$WORK/$4
  shift 4
  timeout 60 "$ONYX" bench "$dir/model.onnx" --ep "$EP" "$@" --runs 50 --warmup 10 --json --inputs "$dir/test_data_set_0" \
    >"$file" 2>>"$OUT/models.log" || true
  sed "s/^/{\"model\":\"$name\",\"ep\":\"$label\",\"result\":/; s/$/}/" "$file" >>"$OUT/bench.json"
}
for m in resnet50 mobilenet_v2 bert_like; do
  D=$MODELS/$m
  [ -f "$D/model.onnx" ] || continue
  bench_json "$m" "$EP" "$D" "bench_$m.json"
  if [ "$EP" = cuda ] && [ "$m" != bert_like ]; then
    bench_json "$m" cuda-nhwc "$D" "bench_nhwc_$m.json" --ep-option cuda.prefer_nhwc=true
  fi
  if [ "$EP" = cuda ]; then bench_json "$m" cuda-graph "$D" "bench_graph_$m.json" --ep-option cuda.enable_cuda_graph=true; fi
done
for v in ${HALF_VARIANTS[@]+"${HALF_VARIANTS[@]}"}; do
  D=$MODELS/$v
  [ -d "$D/out_ep" ] || continue
  bench_json "$v" "$EP" "$D" "bench_$v.json"
  if [ "$EP" = cuda ]; then bench_json "$v" cuda-graph "$D" "bench_graph_$v.json" --ep-option cuda.enable_cuda_graph=true; fi
done
SIZE=$SIZE timeout 300 "$PY" - "$REPO" "$WORK" >"$WORK/torch_bench.txt" 2>>"$OUT/models.log" <<'PYEOF'
import json, os, sys, time
import torch
repo, work = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(repo, "tests", "models"))
import export_models as em
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
small = os.environ.get("SIZE") == "small"
dev = torch.device("cuda")
def timeit(model, inputs, runs=50, warmup=10, dtype=None):
    # dtype: torch.autocast('cuda', dtype=...) around the calls (float16 / bfloat16 tensor cores)
    import contextlib
    ctx = torch.autocast("cuda", dtype=dtype) if dtype is not None else contextlib.nullcontext()
    with torch.no_grad(), ctx:
        for _ in range(warmup): model(*inputs)
        torch.cuda.synchronize()
        ts = []
        for _ in range(runs):
            t = time.perf_counter(); model(*inputs); torch.cuda.synchronize(); ts.append((time.perf_counter() - t) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]
import torchvision
res = 64 if small else 224
out = {}
for name, ctor in (("resnet50", "resnet50"), ("mobilenet_v2", "mobilenet_v2")):
    m = getattr(torchvision.models, ctor)(weights=None).eval().to(dev)
    x = torch.rand(1, 3, res, res, device=dev)
    out[name] = timeit(m, [x])
    if name == "resnet50":
        out[name + "_fp16"] = timeit(m, [x], dtype=torch.float16)
        out[name + "_bf16"] = timeit(m, [x], dtype=torch.bfloat16)
layers, seq = (2, 32) if small else (12, 128)
b = em.BertLike(layers, 768, 12, 3072).eval().to(dev)
ids = torch.randint(0, 30522, (1, seq), device=dev)
mask = torch.ones(1, seq, dtype=torch.int64, device=dev)
out["bert_like"] = timeit(b, [ids, mask])
out["bert_like_fp16"] = timeit(b, [ids, mask], dtype=torch.float16)
out["bert_like_bf16"] = timeit(b, [ids, mask], dtype=torch.bfloat16)
print(json.dumps(out))
PYEOF
TORCH=$(tail -1 "$WORK/torch_bench.txt" 2>/dev/null)
echo "{\"ep\":\"pytorch\",\"result\":${TORCH:-null}}" >>"$OUT/bench.json"
# median_ms FILE: the median of `onyx bench --json` output in FILE, or "-".
median_ms() { "$PY" -c "import json,sys; print('%.3f' % json.load(open(sys.argv[1]))['median_ms'])" "$1" 2>/dev/null || echo "-"; }
# torch_ms KEY: PyTorch's median for KEY, or "-"; ratio A B: A / B, or "-".
torch_ms() { "$PY" -c "import json,sys; print('%.3f' % json.loads(sys.argv[1])[sys.argv[2]])" "$TORCH" "$1" 2>/dev/null || echo "-"; }
ratio() { "$PY" -c "print('%.2f' % (float('$1') / float('$2')))" 2>/dev/null || echo "-"; }
say ""
say "| model | onyx $EP | onyx $EP, prefer_nhwc | onyx $EP, CUDA graph | PyTorch | onyx / PyTorch |"
say "| --- | --- | --- | --- | --- | --- |"
for m in resnet50 mobilenet_v2 bert_like; do
  o=$(median_ms "$WORK/bench_$m.json")
  h=$(median_ms "$WORK/bench_nhwc_$m.json")
  c=$(median_ms "$WORK/bench_graph_$m.json")
  t=$(torch_ms "$m")
  r=$(ratio "$o" "$t")
  say "| $m | $o | $h | $c | $t | $r |"
done
say ""
say "16-bit: onyx on the 16-bit models (cuBLASLt / cuDNN tensor cores, fp32 accumulation) beside PyTorch's"
say "fp32 model under torch.autocast('cuda', dtype=torch.float16 / torch.bfloat16); median ms, batch 1"
say ""
say "| model | onyx $EP | onyx $EP, CUDA graph | PyTorch autocast | onyx / PyTorch |"
say "| --- | --- | --- | --- | --- |"
for v in ${HALF_VARIANTS[@]+"${HALF_VARIANTS[@]}"}; do
  case $v in *_bf16) key=${v} ;; *) key=${v%_io}; key=${key%_fp16}_fp16 ;; esac
  o=$(median_ms "$WORK/bench_$v.json")
  c=$(median_ms "$WORK/bench_graph_$v.json")
  t=$(torch_ms "$key")
  r=$(ratio "$o" "$t")
  say "| $v | $o | $c | $t ($key) | $r |"
done

# ------------------------------------------------------------------------------------------------
# 5. Conformance on the EP (strict placement: a test passes only where all its nodes run on it), last: it
#    gets what is left of the time budget (BUDGET_S, default 600 s from the start). The tests run in
#    CHUNKS runner calls (default 8), so a budget that runs out still leaves the finished chunks'
#    results. On the H200 machine the 1072 tests of Debian's data took about 250 s with 32 jobs,
#    mostly each test process's CUDA, cuBLASLt and cuDNN start-up.
if [ "$TESTS" = ON ] && [ -z "${SKIP_CONFORMANCE:-}" ]; then
  DATA=${ONYX_TEST_DATA:-/usr/share/libonnx-testdata/data}
  if [ -f "$DATA" ]; then  # a tarball of the data directories
    mkdir -p "$WORK/testdata" && tar xzf "$DATA" -C "$WORK/testdata" && DATA=$WORK/testdata
  fi
  if [ ! -d "$DATA/node" ]; then
    DATA=$("$PY" -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data"))' 2>/dev/null)
    # PyPI's onnx wheels carry the node test cases but not their data files: write them.
    if [ ! -d "$DATA/node" ] && "$PY" "$REPO/tests/conformance/generate_node_tests.py" "$WORK/onnx-node-tests" >"$WORK/generate.log" 2>&1; then
      DATA=$WORK/onnx-node-tests
    fi
  fi
  say ""
  say "## Conformance (onyx_conformance --ep $EP, data: $DATA)"
  if [ -d "$DATA/node" ]; then
    C0=$(date +%s)
    CONF=$WORK/conformance
    rm -rf "$CONF" && mkdir -p "$CONF"
    for d in node pytorch-converted pytorch-operator simple; do [ -d "$DATA/$d" ] && ls -d "$DATA/$d"/*/; done | sed 's:/$::' >"$CONF/tests.txt"
    split -n "l/${CHUNKS:-8}" "$CONF/tests.txt" "$CONF/chunk_"
    ran=0; total=0
    for c in "$CONF"/chunk_*; do
      total=$((total + 1))
      LEFT=$(( ${BUDGET_S:-600} - $(elapsed) ))
      [ "$LEFT" -lt 20 ] && continue
      mapfile -t dirs <"$c"
      timeout "$LEFT" "$BIN/onyx_conformance" --ep "$EP" --jobs $((JOBS * 2)) --timeout 60 --results "$c.res" \
        --write-expect "$c.exp" "${dirs[@]}" >"$c.log" 2>&1 && ran=$((ran + 1))
    done
    cat "$CONF"/chunk_*.res >"$OUT/conformance_results.txt" 2>/dev/null
    { head -2 "$(ls "$CONF"/chunk_*.exp | head -1)"; cat "$CONF"/chunk_*.exp | grep -v '^#' | LC_ALL=C sort; } >"$OUT/$EP.expect" 2>/dev/null
    "$PY" "$REPO/tests/conformance/annotate_expect.py" "$OUT/$EP.expect" 2>/dev/null
    say '```'
    say "$ran of $total chunks finished in $(( $(date +%s) - C0 )) s ($(wc -l <"$CONF/tests.txt") tests; raise BUDGET_S if some did not)"
    awk -F'\t' '{ n[$2]++ } END { for (s in n) printf "%s %d\n", s, n[s] }' "$OUT/conformance_results.txt" | sort | tee -a "$REPORT"
    say "failing with every node on $EP:"
    awk -F'\t' '$2 != "pass" && $2 != "fallback" { print "  " $1 ": " substr($4, 1, 160) }' "$OUT/conformance_results.txt" | tee -a "$REPORT"
    if [ -f "$REPO/tests/conformance/$EP.expect" ] && [ "$ran" -eq "$total" ] && [ -d "$DATA/pytorch-converted" ]; then
      say "against tests/conformance/$EP.expect:"
      diff <(grep -v '^#' "$REPO/tests/conformance/$EP.expect" | cut -d' ' -f1 | sort) <(grep -v '^#' "$OUT/$EP.expect" | cut -d' ' -f1 | sort) \
        | sed -n 's/^< /  now passes: /p; s/^> /  now fails or falls back: /p' | tee -a "$REPORT"
    fi
    say "(expectation file: $EP.expect, per-test results: conformance_results.txt)"
    say '```'
  else
    say "skipped: no ONNX backend test data found (set ONYX_TEST_DATA; see $WORK/generate.log)"
  fi
fi

# ONNX Runtime's transformer operators on the EP: the single-node tests with ONNX Runtime's outputs
# (tests/conformance/make_transformer_tests.py; TRANSFORMER_TESTS, default .cache/transformer-node-tests,
# carried along when the binaries come prebuilt), then greedy generation on decoders, its tokens
# against the CPU EP's (GroupQueryAttention decoders also with --share-buffer).
say ""
say "## Transformer operators (onyx_conformance --ep $EP --rtol 1e-3 --atol 1e-4)"
TDATA=${TRANSFORMER_TESTS:-$REPO/.cache/transformer-node-tests}
say '```'
if [ "$TESTS" = ON ] && [ -d "$TDATA/node" ]; then
  T1=$(date +%s)
  timeout 300 "$BIN/onyx_conformance" --ep "$EP" --rtol 1e-3 --atol 1e-4 --jobs "$JOBS" --timeout 60 \
    --results "$OUT/transformer_results.txt" "$TDATA/node" >"$OUT/transformer_conformance.log" 2>&1
  say "$(wc -l <"$OUT/transformer_results.txt" 2>/dev/null || echo 0) tests in $(( $(date +%s) - T1 )) s (per-test results: transformer_results.txt)"
  awk -F'\t' '{ n[$2]++ } END { for (s in n) printf "%s %d\n", s, n[s] }' "$OUT/transformer_results.txt" 2>/dev/null | sort | tee -a "$REPORT"
  say "failing with every node on $EP:"
  awk -F'\t' '$2 != "pass" && $2 != "fallback" { print "  " $1 ": " substr($4, 1, 160) }' "$OUT/transformer_results.txt" 2>/dev/null | tee -a "$REPORT"
  say "falling back (some node on the CPU):"
  awk -F'\t' '$2 == "fallback" { print "  " $1 ": " substr($4, 1, 160) }' "$OUT/transformer_results.txt" 2>/dev/null | tee -a "$REPORT"
else
  say "skipped: no onyx_conformance or no $TDATA/node (tests/conformance/contrib_node_data.sh makes it)"
fi
say '```'
say ""
say "## Generation (onyx generate --ep $EP vs --ep cpu, 16 greedy tokens)"
for m in "$REPO/examples/models/tiny_decoder.onnx" "$REPO/examples/models/tiny_decoder_gqa.onnx" \
         "$REPO"/.cache/transformer-models/{llama_tiny,llama_tiny_int4,llama_mha_tiny,gpt2_tiny_opt}/model.onnx; do
  [ -f "$m" ] || continue
  name=$(basename "$(dirname "$m")"); [ "$name" = models ] && name=$(basename "$m" .onnx)
  modes=(""); case "$name" in *gqa*|llama_tiny|llama_tiny_int4) modes+=(--share-buffer) ;; esac
  for mode in "${modes[@]}"; do
    tag=$name${mode:+-shared}
    "$ONYX" generate "$m" --prompt-ids 1,2,3,4,5 --max-new-tokens 16 --runs 3 --json $mode --ep cpu >"$OUT/generate_${tag}_cpu.json" 2>>"$OUT/generate.log"
    if ! "$ONYX" generate "$m" --prompt-ids 1,2,3,4,5 --max-new-tokens 16 --runs 3 --json $mode --ep "$EP" --require-ep \
         >"$OUT/generate_${tag}_$EP.json" 2>>"$OUT/generate.log"; then
      say "- $tag: FAIL, onyx generate --ep $EP failed (generate.log)"; FAILS=$((FAILS + 1)); continue
    fi
    verdict=$("$PY" - "$OUT/generate_${tag}_cpu.json" "$OUT/generate_${tag}_$EP.json" <<'PYEOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
same = a.get("tokens") == b.get("tokens")
print(("tokens agree" if same else "tokens DIFFER %s vs %s" % (a.get("tokens"), b.get("tokens"))) +
      "; decode %.1f tok/s (cpu %.1f), first token %.2f ms, cache copy bytes %s" %
      (b.get("decode_tokens_per_s", 0), a.get("decode_tokens_per_s", 0), b.get("time_to_first_token_ms", 0), b.get("cache_copy_bytes")))
PYEOF
)
    say "- $tag: $verdict"
    case "$verdict" in *DIFFER*) FAILS=$((FAILS + 1)) ;; esac
  done
  "$ONYX" explain "$m" --ep "$EP" >"$OUT/explain_$name.txt" 2>&1 || true
done

say ""
say "total: $(elapsed) s, failures: $FAILS"
[ "$FAILS" -eq 0 ]
