#!/usr/bin/env bash
# The quantized and reduced-precision corpus at full size beside ONNX Runtime (docs/quantization.md):
# exports the full-size fp32 models into WORK_DIR/fp32 and makes the corpus into WORK_DIR/corpus
# (both kept between runs), then runs bench/compare_ort.py on the variants and on the fp32 models
# they come from (the baselines: int8 ResNet-50 against fp32 ResNet-50). Variants listed in
# tests/models/quant_corpus.expect are left out (onyx cannot run them yet); --only picks variants
# or source models (make_quant_corpus.py's names). Needs .cache/ort-venv (scripts/ort_venv.sh).
# Usage: bench/quant_corpus_bench.sh ONYX_BINARY WORK_DIR [--only NAME,...] [compare_ort.py options]
#        (compare_ort.py's options default to --threads 1,2 --runs 10 --warmup 2 --reps 3)
set -euo pipefail
ONYX=$1
WORK=$2
shift 2
ONLY=""
if [ "${1:-}" = "--only" ]; then
  ONLY=$2
  shift 2
fi
[ $# -gt 0 ] || set -- --threads 1,2 --runs 10 --warmup 2 --reps 3
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=$REPO/.cache/ort-venv/bin/python
[ -x "$PY" ] || { echo "no ORT venv at $REPO/.cache/ort-venv: run scripts/ort_venv.sh" >&2; exit 1; }
mkdir -p "$WORK/fp32" "$WORK/corpus"

# variant, family, source, filtered by --only and by the expectation file
selected=$("$PY" "$REPO/tests/models/make_quant_corpus.py" --list | awk -v only="$ONLY" '
  BEGIN { n = split(only, o, ","); for (i = 1; i <= n; i++) want[o[i]] = 1 }
  only == "" || ($1 in want) || ($3 in want) { print $1, $3 }')
skipped=$(grep -v '^#' "$REPO/tests/models/quant_corpus.expect" | awk 'NF { print $1 }' || true)
variants=()
sources=()
while read -r v src; do
  [ -n "$v" ] || continue
  if grep -qx "$v" <<< "$skipped"; then
    echo "leaving out $v (tests/models/quant_corpus.expect: onyx does not run it yet)"
    continue
  fi
  variants+=("$v")
  [[ " ${sources[*]} " == *" $src "* ]] || sources+=("$src")
done <<< "$selected"
[ ${#variants[@]} -gt 0 ] || { echo "no variant selected" >&2; exit 1; }

for m in "${sources[@]}"; do
  if [ ! -f "$WORK/fp32/$m/test_data_set_0/output_0.pb" ]; then
    /usr/bin/python3 "$REPO/tests/models/export_models.py" "$WORK/fp32" --size full --only "$m" 2>&1 | grep -v -i warn
  fi
done
"$PY" -W ignore "$REPO/tests/models/make_quant_corpus.py" "$WORK/fp32" "$WORK/corpus" --no-negatives \
  --only "$(IFS=,; echo "${variants[*]}")"

dirs=()
for m in "${sources[@]}"; do dirs+=("$WORK/fp32/$m"); done
for v in "${variants[@]}"; do dirs+=("$WORK/corpus/$v"); done
exec "$PY" "$REPO/bench/compare_ort.py" "$ONYX" "${dirs[@]}" "$@"
