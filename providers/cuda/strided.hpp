// Strided views: how onyx's CUDA kernels address broadcast, transposed, sliced and concatenated
// tensors. Plain C++ usable on host and device (the same offset_of runs in the kernels and in the
// GPU-free tests).
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define ONYX_HD __host__ __device__ __forceinline__
#else
#define ONYX_HD inline
#endif

namespace onyx::cuda {

constexpr int kMaxRank = 8;

/// A strided view over an iteration space `dims` (the output's shape, rank <= 8): element at
/// index (i0..ir) lives at offset + sum(i_k * strides[k]). A stride of 0 broadcasts.
struct Strided {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  int64_t offset = 0;
};

/// Offset of the i-th element (row-major order over dims) of view s.
ONYX_HD int64_t offset_of(const Strided& s, int64_t i) {
  int64_t off = s.offset;
  for (int k = s.rank - 1; k >= 0; --k) {
    const int64_t d = s.dims[k];
    const int64_t q = i / d;
    off += (i - q * d) * s.strides[k];
    i = q;
  }
  return off;
}

/// True when the view is the plain contiguous layout of n elements.
ONYX_HD bool is_flat(const Strided& s, int64_t n) {
  if (s.offset != 0) return false;
  int64_t expect = 1;
  for (int k = s.rank - 1; k >= 0; --k) {
    if (s.dims[k] != 1 && s.strides[k] != expect) return false;
    expect *= s.dims[k];
  }
  return expect == n;
}

/// How Pad fills positions outside the input (onyx::cuda::pad).
enum class PadMode : int { kConstant, kReflect, kEdge, kWrap };

/// The input index output position `j` (already shifted by the leading pad: j = o - begin) of a
/// dim of n elements reads, or -1 for the constant. reflect mirrors without repeating the edge
/// element (periodically, for pads longer than the dim), edge repeats it, wrap is periodic.
/// n >= 1 for every mode but kConstant.
ONYX_HD int64_t pad_source(int64_t j, int64_t n, PadMode mode) {
  if (j >= 0 && j < n) return j;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return j < 0 ? 0 : n - 1;
    case PadMode::kWrap: return ((j % n) + n) % n;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      const int64_t r = ((j % period) + period) % period;
      return r < n ? r : period - r;
    }
  }
  return -1;
}

}  // namespace onyx::cuda
