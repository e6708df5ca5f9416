#!/usr/bin/env bash
# Makes .cache/ort-venv: ONNX Runtime, onnx and onnxconverter-common from PyPI at pinned versions,
# for the quantized and reduced-precision corpus (tests/models/make_quant_corpus.py, the CTest
# quant_corpus) and for bench/compare_ort.py; nanobind, scikit-build-core and pytest for the
# Python package (python/, docs/python.md), which the build makes with this venv's Python; OpenVINO
# for the OpenVINO EP, whose CMake package the build finds here. Idempotent: a venv that already holds these versions
# is kept. Called by scripts/setup.sh; never fails the set-up: the quant_corpus test skips (saying
# why) when the venv is missing, e.g. when PyPI cannot be reached. About 120 MB to download, 550 MB
# installed.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=.cache/ort-venv
LOG=.cache/ort-venv.log
PINS=(
  onnxruntime==1.32.0 onnx==1.23.2 onnxconverter-common==1.16.0 numpy==2.4.6
  sympy==1.14.0      # ORT's quant_pre_process (symbolic shape inference)
  onnx_ir==1.1.0     # ORT's MatMulNBitsQuantizer (the 4-bit weight quantizer)
  ml_dtypes==0.7.0 protobuf==7.36.2 flatbuffers==25.12.19 packaging==26.4 mpmath==1.3.0 typing_extensions==4.16.0
  # the Python package (python/): its build (nanobind, scikit-build-core) and its tests (pytest)
  nanobind==3.1.0 scikit-build-core==1.1.2 pathspec==1.1.1
  pytest==9.2.0 iniconfig==2.3.1 pluggy==1.7.0 pygments==2.21.0
  # the OpenVINO EP (providers/openvino, docs/openvino.md): the wheel's runtime, plugins, ONNX
  # frontend, headers and CMake package
  openvino==2026.4.1 openvino-telemetry==2025.2.0
  # the WebGPU EP (providers/webgpu, docs/webgpu.md): the wheel's wgpu-native library and headers
  # (wgpu/resources/); the rest are its Python-side dependencies
  wgpu==0.32.0 cffi==2.1.1 pycparser==3.12 rendercanvas==2.7.2
)
mkdir -p .cache

pinned() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "${PINS[@]}" 2>/dev/null <<'EOF'
import importlib.metadata as md
import sys
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    if md.version(name) != version:
        sys.exit(1)
EOF
}

if pinned; then
  echo "ort venv: $VENV present"
  exit 0
fi
{
  rm -rf "$VENV"
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q --disable-pip-version-check "${PINS[@]}"
} >"$LOG" 2>&1
if pinned; then
  echo "ort venv: made $VENV ($(du -sh "$VENV" | cut -f1))"
else
  echo "ort venv: not made (the quant_corpus test will be skipped, the Python package not built); see $LOG:"
  tail -5 "$LOG"
fi
exit 0
