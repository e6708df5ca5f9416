#!/usr/bin/env bash
# CTest generate: `onyx generate` (onyx::Generator) against ONNX Runtime's greedy loop
# (tests/models/ort_generate.py): the same tokens over 32 steps, for the example decoder
# (examples/models/tiny_decoder.onnx) and every decoder model made by
# tests/models/transformer_models_data.sh (.cache/transformer-models/*/generate.json names its
# prompt and the onyx options to run it with: --share-buffer for GroupQueryAttention models too).
# The example GQA decoder (examples/models/tiny_decoder_gqa.onnx) runs both ways too, and with
# --share-buffer no cache byte may be copied between steps. Then the errors a wrong use gets. Skips (77) without the ONNX Runtime venv.
# Usage: generate_test.sh ONYX REPO
set -uo pipefail
ONYX=$1
REPO=$2
PY=$REPO/.cache/ort-venv/bin/python
if [ ! -x "$PY" ] || ! "$PY" -c "import onnxruntime" 2>/dev/null; then
  echo "skipped: no ONNX Runtime venv in .cache/ort-venv (scripts/ort_venv.sh makes it) for the reference tokens"
  exit 77
fi
failures=0
check() {  # check NAME MODEL PROMPT [ONYX OPTIONS...]
  local name=$1 model=$2 prompt=$3
  shift 3
  local want got
  want=$("$PY" "$REPO/tests/models/ort_generate.py" "$model" --prompt-ids "$prompt" --max-new-tokens 32 | "$PY" -c "import json,sys; print(json.load(sys.stdin)['tokens'])") || {
    echo "FAIL $name: ONNX Runtime's loop failed"; failures=$((failures + 1)); return; }
  got=$("$ONYX" generate "$model" --prompt-ids "$prompt" --max-new-tokens 32 --json "$@" | "$PY" -c "import json,sys; print(json.load(sys.stdin)['tokens'])") || {
    echo "FAIL $name: onyx generate failed"; failures=$((failures + 1)); return; }
  if [ "$want" = "$got" ]; then echo "ok   $name: 32 tokens as ONNX Runtime's"; else
    echo "FAIL $name: onyx $got, ONNX Runtime $want"; failures=$((failures + 1)); fi
}
check tiny_decoder "$REPO/examples/models/tiny_decoder.onnx" 1,2,3,4,5
check tiny_decoder_one_token_prompt "$REPO/examples/models/tiny_decoder.onnx" 7
check tiny_decoder_2_threads "$REPO/examples/models/tiny_decoder.onnx" 3,1,4,1,5,9,2,6 --threads 2
check tiny_decoder_gqa "$REPO/examples/models/tiny_decoder_gqa.onnx" 1,2,3,4,5
check "tiny_decoder_gqa (--share-buffer)" "$REPO/examples/models/tiny_decoder_gqa.onnx" 1,2,3,4,5 --share-buffer
copied=$("$ONYX" generate "$REPO/examples/models/tiny_decoder_gqa.onnx" --prompt-ids 1,2,3 --max-new-tokens 8 --share-buffer --json |
         "$PY" -c "import json,sys; print(json.load(sys.stdin)['cache_copy_bytes'])")
if [ "$copied" = 0 ]; then echo "ok   tiny_decoder_gqa (--share-buffer): no cache bytes copied between steps"; else
  echo "FAIL tiny_decoder_gqa (--share-buffer): $copied cache bytes copied between steps"; failures=$((failures + 1)); fi
for spec in "$REPO"/.cache/transformer-models/*/generate.json; do
  [ -f "$spec" ] || continue
  dir=$(dirname "$spec")
  prompt=$("$PY" -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['prompt_ids'])))" "$spec")
  while IFS= read -r extra; do
    # shellcheck disable=SC2086
    check "$(basename "$dir")${extra:+ ($extra)}" "$dir/model.onnx" "$prompt" $extra
  done < <("$PY" -c "import json,sys; [print(' '.join(v)) for v in json.load(open(sys.argv[1]))['variants']]" "$spec")
done

# Wrong uses: a clear error, exit 1.
expect_error() {  # expect_error NAME TEXT COMMAND...
  local name=$1 text=$2
  shift 2
  local err
  if err=$("$@" 2>&1 >/dev/null); then echo "FAIL $name: succeeded"; failures=$((failures + 1)); return; fi
  if grep -q -- "$text" <<<"$err"; then echo "ok   $name: $err"; else echo "FAIL $name: '$err' does not say '$text'"; failures=$((failures + 1)); fi
}
expect_error no_cache "none the generator fills" "$ONYX" generate "$REPO/examples/models/tiny_cnn.onnx" --prompt-ids 1
expect_error share_buffer_mha "generate with share_buffer" "$ONYX" generate "$REPO/examples/models/tiny_decoder.onnx" --prompt-ids 1,2 --share-buffer
expect_error bad_ids "non-negative integers" "$ONYX" generate "$REPO/examples/models/tiny_decoder.onnx" --prompt-ids 1,x
expect_error token_out_of_range "out of" "$ONYX" generate "$REPO/examples/models/tiny_decoder.onnx" --prompt-ids 1,4800
[ "$failures" -eq 0 ] || { echo "$failures failed"; exit 1; }
echo "all passed"
