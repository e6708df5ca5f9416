#!/usr/bin/env bash
# Installs every Debian package onyx's build and tests need. Idempotent: installs only what is
# missing, and runs apt-get update only when something is.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libgtest-dev            # unit tests
  clang                   # the example EP plugin is built with it, as a vendor would (tests/ep_plugin)
  libdnnl-dev libxnnpack-dev libpthreadpool-dev   # oneDNN and XNNPACK EP modules
  libvulkan-dev glslang-tools mesa-vulkan-drivers   # Vulkan EP module (lavapipe runs its tests on the CPU)
  libpng-dev libjpeg-dev libopenjp2-7-dev libtiff-dev libwebp-dev   # ImageDecoder's codec module
  libonnx-testdata        # ONNX backend conformance data
  python3 python3-numpy python3-onnx python3-torch python3-torchvision   # end-to-end test models
  python3-venv python3-requests python3-yaml   # the transformers venv (scripts/hf_venv.sh) on that Python
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The newer ONNX node tests (PyPI's onnx, in a venv under .cache/): never fails the set-up.
"$(dirname "$0")/../tests/conformance/onnx_node_data.sh"

# ONNX Runtime and its quantization tools (PyPI, in .cache/ort-venv) for the quantized model
# corpus and bench/compare_ort.py: never fails the set-up.
"$(dirname "$0")/ort_venv.sh"

# The com.microsoft quantized-op node tests, their outputs from that ONNX Runtime (in
# .cache/contrib-node-tests): never fails the set-up.
"$(dirname "$0")/../tests/conformance/contrib_node_data.sh"

# Hugging Face transformers on Debian's torch (PyPI, in .cache/hf-venv), then the transformer
# end-to-end models exported with it and rewritten and run by that ONNX Runtime (in
# .cache/transformer-models): neither fails the set-up.
"$(dirname "$0")/hf_venv.sh"
"$(dirname "$0")/../tests/models/transformer_models_data.sh"
"$(dirname "$0")/triton_venv.sh"   # Triton server, client, ORT for its Python backend (.cache/triton-venv; docs/serving.md)
