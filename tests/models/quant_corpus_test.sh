#!/usr/bin/env bash
# The quantized and reduced-precision corpus (docs/quantization.md): exports the fp32 models into
# WORK_DIR/SIZE/fp32, makes the corpus into WORK_DIR/SIZE/corpus (tests/models/make_quant_corpus.py;
# variants already made are kept), runs every variant with `onyx run` and compares its outputs with
# ORT's at the variant's tolerance (one line each), runs `onyx bench --runs 3` on each, and runs the
# corrupted models (one scale or weight x1.5), which must fall outside the tolerance.
# tests/models/quant_corpus.expect lists the variants expected to fail, with the reason; one that
# passes is an error too. Skipped (exit 77), saying why, when the ORT venv (.cache/ort-venv, made by
# scripts/ort_venv.sh) is missing.
# Usage: quant_corpus_test.sh ONYX_BINARY REPO_DIR WORK_DIR [small|full]
set -uo pipefail
ONYX=$1
REPO=$2
WORK=$3
SIZE=${4:-small}
PY=$REPO/.cache/ort-venv/bin/python
TORCH_PY=/usr/bin/python3
EXPECT=$REPO/tests/models/quant_corpus.expect

if ! "$PY" -c "import onnxruntime, onnx, onnxconverter_common, sympy, ml_dtypes" 2>/dev/null; then
  echo "skipped: no ORT venv with onnxruntime, onnx and onnxconverter-common at $REPO/.cache/ort-venv" \
       "(scripts/ort_venv.sh makes it; its log .cache/ort-venv.log says why it is missing)"
  exit 77
fi

FP32=$WORK/$SIZE/fp32
CORPUS=$WORK/$SIZE/corpus
mkdir -p "$FP32" "$CORPUS"
for m in resnet50 mobilenet_v2 bert_like; do
  if [ ! -f "$FP32/$m/test_data_set_0/output_0.pb" ]; then
    "$TORCH_PY" "$REPO/tests/models/export_models.py" "$FP32" --size "$SIZE" --only "$m" 2>&1 | grep -v -i warn
  fi
done

errors=0
echo "== making the corpus ($SIZE)"
if ! "$PY" -W ignore "$REPO/tests/models/make_quant_corpus.py" "$FP32" "$CORPUS"; then
  echo "FAIL: make_quant_corpus.py reported errors (above)"
  errors=$((errors + 1))
fi

# expectations: "<variant> <reason>" per line, # comments
declare -A expected
while read -r name reason; do
  [ -z "$name" ] && continue
  case "$name" in \#*) continue ;; esac
  expected[$name]=$reason
done < "$EXPECT"
variants=$("$PY" "$REPO/tests/models/make_quant_corpus.py" --list | awk '{print $1}')
for name in "${!expected[@]}"; do
  if ! grep -qx "$name" <<< "$variants"; then
    echo "ERROR: quant_corpus.expect names $name, which is not a variant"
    errors=$((errors + 1))
  fi
done

echo "== onyx against ORT (metric: max |onyx - ORT| / max |ORT|, largest over the outputs)"
passed=0
xfailed=0
declare -a negatives
for v in $variants; do
  dir=$CORPUS/$v
  if [ ! -f "$dir/meta.json" ]; then
    echo "$v: FAIL (not made)"
    errors=$((errors + 1))
    continue
  fi
  rm -rf "$dir/onyx_out"
  ok=0
  if out=$("$ONYX" run "$dir/model.onnx" --inputs "$dir/test_data_set_0" --save "$dir/onyx_out" --quiet 2>&1 >/dev/null); then
    "$PY" "$REPO/tests/models/compare_corpus.py" "$dir/onyx_out" "$dir" && ok=1
  else
    printf '%-26s onyx run failed: %s\n' "$v" "$(tail -1 <<< "$out")"
  fi
  if [ -n "${expected[$v]+x}" ]; then
    if [ "$ok" -eq 1 ]; then
      echo "    UNEXPECTED PASS: $v is listed in tests/models/quant_corpus.expect (${expected[$v]}); remove it"
      errors=$((errors + 1))
    else
      echo "    expected failure: ${expected[$v]}"
      xfailed=$((xfailed + 1))
    fi
  elif [ "$ok" -eq 1 ]; then
    passed=$((passed + 1))
    [ -f "$dir/corrupt/model.onnx" ] && negatives+=("$v")
  else
    echo "    FAIL: $v"
    errors=$((errors + 1))
  fi
  if [ -d "$dir/onyx_out" ]; then
    if b=$("$ONYX" bench "$dir/model.onnx" --inputs "$dir/test_data_set_0" --runs 3 --warmup 1 --json --no-progress 2>/dev/null); then
      printf '    latency: onyx median %s ms (3 runs after 1 warm-up)\n' \
        "$("$PY" -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["median_ms"])' <<< "$b")"
    fi
  fi
done

echo "== negative check: one scale or weight x1.5 must fall outside the tolerance"
if [ "${#negatives[@]}" -eq 0 ]; then
  echo "no variant with a corrupted model passed above: nothing shows that the tolerances discriminate"
  errors=$((errors + 1))
fi
for v in "${negatives[@]}"; do
  dir=$CORPUS/$v
  rm -rf "$dir/onyx_out_corrupt"
  what=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["negative"]["corruption"])' "$dir/meta.json")
  if ! out=$("$ONYX" run "$dir/corrupt/model.onnx" --inputs "$dir/test_data_set_0" --save "$dir/onyx_out_corrupt" --quiet 2>&1 >/dev/null); then
    echo "$v (corrupted): onyx run failed where the clean model ran: $(tail -1 <<< "$out")"
    errors=$((errors + 1))
  elif "$PY" "$REPO/tests/models/compare_corpus.py" "$dir/onyx_out_corrupt" "$dir" --label "$v (corrupted)" --negative; then
    echo "    ($what)"
  else
    echo "    FAIL: the corrupted model ($what) is within the tolerance: it does not discriminate"
    errors=$((errors + 1))
  fi
done

echo "== $passed variants within tolerance, $xfailed expected failures, $errors errors"
[ "$errors" -eq 0 ]
