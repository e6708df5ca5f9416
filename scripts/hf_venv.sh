#!/usr/bin/env bash
# Makes .cache/hf-venv: Hugging Face transformers from PyPI at pinned versions, on top of Debian's
# Python 3 with its python3-torch (1.13), numpy and onnx (--system-site-packages: no PyPI torch),
# for exporting the transformer end-to-end models (tests/models/make_transformer_models.py, the CTest
# transformer_models). transformers 4.37.2 is the release whose Llama export ONNX Runtime's rotary
# attention fusion recognises (RotaryEmbedding from a cos/sin cache indexed by position_ids) and that
# still runs on torch 1.13. Every package pip adds is pinned here (--no-deps: the rest, requests,
# pyyaml, numpy, typing_extensions, are Debian's). Idempotent: a venv that already holds these
# versions and imports is kept. Called by scripts/setup.sh; never fails the set-up: without it the
# transformer_models test skips (saying why). About 15 MB to download, 140 MB installed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 0
VENV=.cache/hf-venv
LOG=.cache/hf-venv.log
PY=/usr/bin/python3
PINS=(
  transformers==4.37.2 tokenizers==0.15.2 safetensors==0.8.0 huggingface-hub==0.23.4
  regex==2026.12.2 tqdm==4.70.1 filelock==4.3.2 fsspec==2026.9.0 packaging==26.4
)
mkdir -p .cache

usable() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "${PINS[@]}" 2>/dev/null <<'EOF'
import importlib.metadata as md
import sys
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    if md.version(name) != version:
        sys.exit(1)
import torch  # noqa: E402,F401  Debian's
import onnx  # noqa: E402,F401
from transformers import BertModel, GPT2LMHeadModel, LlamaForCausalLM, RobertaModel  # noqa: E402,F401
EOF
}

if usable; then
  echo "hf venv: $VENV present"
  exit 0
fi
if ! "$PY" -c "import torch, numpy, onnx" 2>/dev/null; then
  echo "hf venv: not made: $PY lacks torch, numpy or onnx (Debian's python3-torch, python3-numpy, python3-onnx);" \
       "the transformer_models test will be skipped"
  exit 0
fi
{
  rm -rf "$VENV"
  "$PY" -m venv --system-site-packages "$VENV" &&
    "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps "${PINS[@]}"
} >"$LOG" 2>&1
if usable; then
  echo "hf venv: made $VENV ($(du -sh "$VENV" | cut -f1))"
else
  echo "hf venv: not made (the transformer_models test will be skipped); see $LOG:"
  tail -5 "$LOG"
fi
exit 0
