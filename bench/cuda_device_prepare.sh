#!/usr/bin/env bash
# Prepares a folder for bench/cuda_device_check.sh on a GPU machine that should not spend its time
# building: portable binaries (no -march=native: the GPU machine's CPU may differ) of onyx, the CUDA
# EP module, the conformance runner and the provider tests, and Debian's ONNX backend test data as
# a tarball. Run here (CUDA toolkit and cuDNN installed, no GPU needed), carry DIR to the GPU
# machine, then there:
#
#   bench/cuda_device_prepare.sh DIR                       # here
#   PREBUILT=DIR/bin ONYX_TEST_DATA=DIR/onnx-testdata.tgz OUT=out bench/cuda_device_check.sh   # there
#
# The binaries find libonyx.so.0 through PREBUILT (the check script puts it on LD_LIBRARY_PATH),
# the module beside it, and cuBLAS / cuDNN through the module's RUNPATH, the system loader or
# PyTorch's nvidia-* wheels (the check script adds those). The check's float16 / bfloat16 model
# variants are made on the GPU machine from its exports: its python3 needs onnxconverter_common and
# ml_dtypes beside torch, torchvision and onnx. Environment: BUILD (default build-cuda-prebuilt), JOBS.
set -euo pipefail
DIR=${1:?usage: bench/cuda_device_prepare.sh DIR}
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$REPO/build-cuda-prebuilt}
DATA=/usr/share/libonnx-testdata/data
cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DONYX_NATIVE=OFF -DONYX_EP_CUDA=ON -DONYX_EP_ONEDNN=OFF \
  -DONYX_EP_XNNPACK=OFF -DONYX_EP_VULKAN=OFF -DONYX_BUILD_EXAMPLES=OFF >/dev/null
ninja -C "$BUILD" -j "${JOBS:-$(nproc)}" onyx_cli onyx_ep_cuda onyx_conformance onyx_provider_tests
mkdir -p "$DIR/bin"
for f in onyx libonyx_ep_cuda.so onyx_conformance onyx_provider_tests; do cp "$BUILD/bin/$f" "$DIR/bin/"; done
cp -L "$BUILD/bin/libonyx.so.0" "$DIR/bin/libonyx.so.0"
if [ -d "$DATA/node" ]; then
  tar czf "$DIR/onnx-testdata.tgz" -C "$DATA" node pytorch-converted pytorch-operator simple
else
  echo "no $DATA (Debian's libonnx-testdata): the check script writes PyPI onnx's node tests instead" >&2
fi
du -sh "$DIR"
