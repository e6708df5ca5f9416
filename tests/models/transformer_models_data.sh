#!/usr/bin/env bash
# Makes .cache/transformer-models, the transformer end-to-end models and their ONNX Runtime
# outputs (tests/models/make_transformer_models.py): exported with torch + transformers in
# .cache/hf-venv (scripts/hf_venv.sh), optimized, converted, quantized and run by ONNX Runtime in
# .cache/ort-venv (scripts/ort_venv.sh). Idempotent: made again only when the generator or a version
# (torch, transformers, onnxruntime) changes. Never fails: when a venv is missing or a stage fails it
# says so, and the CTest transformer_models skips (saying why) while the data is missing.
# Log: .cache/transformer-models.log.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 0
HF_PY=.cache/hf-venv/bin/python
ORT_PY=.cache/ort-venv/bin/python
DATA=.cache/transformer-models
LOG=.cache/transformer-models.log
GEN=tests/models/make_transformer_models.py
mkdir -p .cache

if [ ! -x "$HF_PY" ] || ! "$HF_PY" -c "import torch, transformers" 2>/dev/null; then
  echo "transformer models: not made (no transformers venv in .cache/hf-venv, which scripts/hf_venv.sh makes;" \
       "the transformer_models test will be skipped)"
  exit 0
fi
if [ ! -x "$ORT_PY" ] || ! "$ORT_PY" -c "import onnxruntime, onnx, numpy, sympy, onnx_ir" 2>/dev/null; then
  echo "transformer models: not made (no ONNX Runtime venv in .cache/ort-venv, which scripts/ort_venv.sh makes;" \
       "the transformer_models test will be skipped)"
  exit 0
fi
versions="$("$HF_PY" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' 2>/dev/null)"
versions="$versions $("$ORT_PY" -c 'import onnxruntime; print("onnxruntime", onnxruntime.__version__)')"
stamp="$versions generator $(sha256sum "$GEN" | cut -c1-16)"
if [ -f "$DATA/.complete" ] && [ "$(cat "$DATA/.complete")" = "$stamp" ]; then
  echo "transformer models: $DATA present ($stamp)"
  exit 0
fi

rm -rf "$DATA"
start=$(date +%s)
# Warnings of the tracer and of ORT's symbolic shape inference are kept in the log only.
if "$HF_PY" -W ignore "$GEN" export "$DATA" >"$LOG" 2>&1 &&
   "$ORT_PY" -W ignore "$GEN" finish "$DATA" >>"$LOG" 2>&1; then
  rm -rf "$DATA/export"
  echo "$stamp" >"$DATA/.complete"
  models=$(find "$DATA" -name model.onnx | wc -l)
  echo "transformer models: made $models models in $DATA in $(( $(date +%s) - start )) s ($(du -sh "$DATA" | cut -f1))"
else
  rm -rf "$DATA"
  echo "transformer models: not made (the transformer_models test will be skipped); see $LOG:"
  grep -E "ERROR|Error|error" "$LOG" | tail -5
fi
exit 0
