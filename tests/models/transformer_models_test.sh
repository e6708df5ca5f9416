#!/usr/bin/env bash
# The transformer end-to-end models (tests/models/make_transformer_models.py: tiny Hugging Face BERT,
# RoBERTa, GPT-2 and Llama models rewritten by ONNX Runtime's optimizer, fp16 converter and 4-bit
# quantizer into com.microsoft Attention, MultiHeadAttention, GroupQueryAttention, RotaryEmbedding,
# EmbedLayerNormalization, SkipLayerNormalization, SkipSimplifiedLayerNormalization, BiasGelu,
# FastGelu and MatMulNBits): each data set of each model run with `onyx run` and compared with ONNX
# Runtime's outputs (tests/models/compare_transformer.py) by the rule
#     max |onyx - ORT| <= tol   for every output (absolute; the outputs are of magnitude 1 to 4),
# tol = 5e-3 for the fp16 models (name ending _fp16), 1e-3 for the others (fp32, and the 4-bit one,
# whose activations are fp32). Skipped (exit 77), saying why, when the data (.cache/transformer-models,
# made by tests/models/transformer_models_data.sh from scripts/setup.sh) is missing.
# Usage: transformer_models_test.sh ONYX_BINARY REPO_DIR
set -uo pipefail
ONYX=$1
REPO=$2
DATA=$REPO/.cache/transformer-models
PY=/usr/bin/python3
MODELS=(bert_tiny_opt bert_tiny_opt_fp16 roberta_tiny_opt roberta_tiny_opt_fp16 gpt2_tiny_opt gpt2_tiny_opt_fp16
        llama_tiny llama_tiny_fp16 llama_tiny_int4 llama_mha_tiny)

if [ ! -f "$DATA/.complete" ]; then
  echo "skipped: no transformer models in $DATA (tests/models/transformer_models_data.sh makes them with the venvs" \
       ".cache/hf-venv and .cache/ort-venv; its log .cache/transformer-models.log, or what scripts/setup.sh" \
       "printed, says why they are missing)"
  exit 77
fi
if ! "$PY" -c "import numpy, onnx" 2>/dev/null; then
  echo "skipped: $PY lacks numpy or onnx (python3-numpy, python3-onnx) for the comparison"
  exit 77
fi
echo "data: $(cat "$DATA/.complete")"

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
passed=0
failed=0
for m in "${MODELS[@]}"; do
  dir=$DATA/$m
  case $m in *_fp16) tol=5e-3 ;; *) tol=1e-3 ;; esac
  if [ ! -f "$dir/model.onnx" ]; then
    echo "$m: FAIL (not made; see .cache/transformer-models.log)"
    failed=$((failed + 1))
    continue
  fi
  echo "== $m (tol $tol) $("$PY" -c 'import json,sys; m=json.load(open(sys.argv[1])); ops = [k.split(":")[1] + " " + str(v) for k, v in m["histogram"].items() if k.startswith("com.microsoft:")]; print(m["how"] + "; " + ", ".join(ops))' "$dir/meta.json")"
  for ds in "$dir"/test_data_set_*; do
    label="$m/$(basename "$ds")"
    got=$OUT/$m/$(basename "$ds")
    mkdir -p "$OUT/$m"
    if ! err=$("$ONYX" run "$dir/model.onnx" --inputs "$ds" --save "$got" --runs 1 --quiet 2>&1 >/dev/null); then
      echo "$label: FAIL (onyx run failed: $(tail -1 <<< "$err"))"
      failed=$((failed + 1))
      continue
    fi
    if "$PY" "$REPO/tests/models/compare_transformer.py" "$got" "$ds" --tol "$tol" --label "$label"; then
      passed=$((passed + 1))
    else
      echo "$label: FAIL"
      failed=$((failed + 1))
    fi
  done
done
echo "transformer_models: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
