#!/usr/bin/env bash
# Makes .cache/triton-venv: Triton Inference Server (PyPI's nvidia-pytriton wheel bundles the
# tritonserver binary, libtritonserver and the Python backend with its stubs), the tritonclient
# (HTTP and gRPC), and ONNX Runtime with numpy for the Python backend model that serving's
# comparison runs, all at pinned versions, for the triton_serving test and
# bench/triton_throughput.py (docs/serving.md). Idempotent: a venv that already holds these
# versions is kept. Called by scripts/setup.sh; never fails the set-up: the triton_serving test
# skips (saying why) when the venv is missing. About 130 MB to download, 600 MB installed.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=.cache/triton-venv
LOG=.cache/triton-venv.log
PINS=(
  nvidia-pytriton==0.7.0 tritonclient==2.73.0
  onnxruntime==1.32.0 numpy==1.26.4   # nvidia-pytriton needs numpy < 2
  # tritonclient[http,grpc]
  gevent==26.9.0 geventhttpclient==2.6.1 greenlet==3.3.2 grpcio==1.85.3 brotli==1.2.1 certifi==2026.10.19.post1
  python-rapidjson==1.25 urllib3==2.8.0 zope.event==6.2 zope.interface==8.7 protobuf==6.33.6 packaging==26.4
  # nvidia-pytriton's own dependencies
  aiohappyeyeballs==2.7.1 aiohttp==3.14.5 aiosignal==1.4.0 annotated-doc==0.0.7 annotated-types==0.8.0 attrs==26.1.0
  frozenlist==1.8.0 idna==3.21 importlib_metadata==10.2.0 lazy-importer==0.1.0 markdown-it-py==4.3.0 mdurl==0.1.2
  multidict==7.2.1 mypy_extensions==1.2.0 propcache==0.5.4 pydantic==2.14.4 pydantic_core==2.50.5 Pygments==2.21.0
  pyzmq==27.3.0 rich==15.0.0 sh==2.4.0 shellingham==1.5.4 typer==0.29.2 typing-inspect==0.9.0
  typing-inspection==0.4.5 typing_extensions==4.16.0 wrapt==2.5.2 yarl==1.25.1 zipp==4.1.2
  # onnxruntime's
  flatbuffers==25.12.19 ml_dtypes==0.5.4
)
mkdir -p .cache

pinned() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "${PINS[@]}" 2>/dev/null <<'PY'
import importlib.metadata as md
import sys
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    if md.version(name) != version:
        sys.exit(1)
PY
}

if pinned; then
  echo "triton venv: $VENV present"
  exit 0
fi
{
  rm -rf "$VENV"
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps "${PINS[@]}" &&
    "$VENV/bin/pip" check
} >"$LOG" 2>&1
if pinned; then
  echo "triton venv: made $VENV ($(du -sh "$VENV" | cut -f1))"
else
  echo "triton venv: not made (the triton_serving test will be skipped); see $LOG:"
  tail -5 "$LOG"
fi
exit 0
