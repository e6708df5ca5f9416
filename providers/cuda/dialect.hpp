// What onyx's .cu files use beyond C++: launches, thread and block indices, block barriers, warp
// shuffles and device-to-device copies. Under nvcc these are CUDA's own. Compiled as plain C++
// (the GPU-free kernel tests in tests/unit/cuda_emu) the same kernel code runs on host threads
// through testing/emulator.hpp, so its logic is checked on machines without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace onyx::cuda {
/// Blocks of `block` threads for a grid-stride loop over n elements (capped: the loop covers the
/// rest).
inline unsigned grid_blocks(int64_t n, int block) {
  const int64_t g = (n + block - 1) / block;
  return static_cast<unsigned>(g < 65535 * 8 ? g : 65535 * 8);
}
}  // namespace onyx::cuda

#ifdef __CUDACC__

/// ONYX_LAUNCH(grid, block, stream, kernel)(args...): the kernel comes last so template
/// arguments with commas need no parentheses.
#define ONYX_LAUNCH(grid, block, stream, ...) __VA_ARGS__<<<(grid), (block), 0, (stream)>>>

namespace onyx::cuda {
inline void copy_d2d_async(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s);
}
}  // namespace onyx::cuda

#else

#include "testing/emulator.hpp"

#endif
