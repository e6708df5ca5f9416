// onyx's int8 CUDA kernels: QuantizeLinear and DequantizeLinear (one elementwise pass each,
// per-tensor or per-axis, float32 / float16 / bfloat16 on the float side), and the passes around
// cuBLASLt's int8 product: 8-bit operands moved to int8 (uint8 shifted by 128, padded to a
// multiple of 4), row sums, and one epilogue that applies the zero points and stores int32 or
// requantises to 8 bits. Rounding is half to even (rintf), results saturate, as ONNX specifies.
// Names here are prefixed q_ so that the file can share a translation unit with elementwise.cu
// (tests/unit/cuda_emu compiles both into one).
#include "dialect.hpp"
#include "half.hpp"
#include "quant.hpp"

namespace onyx::cuda {
namespace {

constexpr int kQBlock = 256;

inline unsigned q_grid(int64_t n) { return grid_blocks(n, kQBlock); }

/// Element i of an 8-bit integer tensor (kI8 signed, else unsigned), or 0 for a null pointer.
__device__ __forceinline__ int32_t q_int(const void* p, bool sgn, int64_t i) {
  if (!p) return 0;
  return sgn ? static_cast<int32_t>(static_cast<const int8_t*>(p)[i]) : static_cast<int32_t>(static_cast<const uint8_t*>(p)[i]);
}

/// round_half_even(q) + zp saturated to [lo, hi]: the clamp comes first (the bounds are
/// integers, so clamping before rounding gives the same result) and NaN gives the zero point.
__device__ __forceinline__ int32_t q_saturate(float q, int32_t zp, bool sgn) {
  const float lo = static_cast<float>((sgn ? -128 : 0) - zp), hi = static_cast<float>((sgn ? 127 : 255) - zp);
  if (q != q) q = 0.f;
  q = q < lo ? lo : q;
  q = q > hi ? hi : q;
  return static_cast<int32_t>(rintf(q)) + zp;
}

__device__ __forceinline__ void q_store(void* y, bool sgn, int64_t i, int32_t v) {
  if (sgn) static_cast<int8_t*>(y)[i] = static_cast<int8_t>(v);
  else static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(v);
}

template <class T>
__global__ void q_quantize_kernel(const T* x, const T* scale, const void* zp, bool sgn, void* y, int64_t dim, int64_t inner, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t d = dim == 1 ? 0 : (i / inner) % dim;
    const float q = ld(x, i) / ld(scale, d);
    q_store(y, sgn, i, q_saturate(q, q_int(zp, sgn, d), sgn));
  }
}

template <class T>
__global__ void q_dequantize_kernel(const void* x, const void* zp, bool sgn, const T* scale, T* y, int64_t dim, int64_t inner,
                                    int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t d = dim == 1 ? 0 : (i / inner) % dim;
    const int32_t v = q_int(x, sgn, i) - q_int(zp, sgn, d);
    st(y, i, static_cast<float>(v) * ld(scale, d));
  }
}

constexpr int kQMinMaxBlocks = 256;  // block partials of the min / max (one block folds them)

/// Folds the block's threads' (lo, hi) pairs in shared memory; thread 0 gets the block's.
__device__ __forceinline__ void q_block_min_max(float& lo, float& hi) {
  __shared__ float s_lo[kQBlock], s_hi[kQBlock];
  s_lo[threadIdx.x] = lo;
  s_hi[threadIdx.x] = hi;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      const float l = s_lo[threadIdx.x + w], h = s_hi[threadIdx.x + w];
      if (l < s_lo[threadIdx.x]) s_lo[threadIdx.x] = l;
      if (s_hi[threadIdx.x] < h) s_hi[threadIdx.x] = h;
    }
    __syncthreads();
  }
  lo = s_lo[0];
  hi = s_hi[0];
}

/// partial[2 b], partial[2 b + 1]: block b's min and max over its grid-stride share of x,
/// starting from 0 (NaNs fail both comparisons and are skipped).
__global__ void q_min_max_kernel(const float* x, int64_t n, float* partial) {
  float lo = 0.f, hi = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const float v = x[i];
    lo = v < lo ? v : lo;
    hi = hi < v ? v : hi;
  }
  q_block_min_max(lo, hi);
  if (threadIdx.x == 0) {
    partial[2 * blockIdx.x] = lo;
    partial[2 * blockIdx.x + 1] = hi;
  }
}

/// One block: the partials folded, then the scale and zero point (as the CPU EP computes them).
__global__ void q_dynamic_params_kernel(const float* partial, int blocks, float* scale_out, uint8_t* zp_out, float* params) {
  float lo = 0.f, hi = 0.f;
  for (int b = static_cast<int>(threadIdx.x); b < blocks; b += static_cast<int>(blockDim.x)) {
    lo = partial[2 * b] < lo ? partial[2 * b] : lo;
    hi = hi < partial[2 * b + 1] ? partial[2 * b + 1] : hi;
  }
  q_block_min_max(lo, hi);
  if (threadIdx.x == 0) {
    const float scale = (hi - lo) / 255.0f;
    float zp = 0.f;
    if (scale > 0.f && scale <= 3.40282347e+38f) {  // positive and finite
      float z = 0.0f - lo / scale;
      z = z < 0.f ? 0.f : (z > 255.f ? 255.f : z);
      zp = rintf(z);
    }
    params[0] = scale;
    params[1] = zp;
    *scale_out = scale;
    *zp_out = static_cast<uint8_t>(zp);
  }
}

__global__ void q_dynamic_quantize_kernel(const float* x, int64_t n, const float* params, uint8_t* y) {
  const float scale = params[0];
  const int32_t zp = static_cast<int32_t>(params[1]);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    y[i] = scale > 0.f ? static_cast<uint8_t>(q_saturate(x[i] / scale, zp, false)) : uint8_t{0};
}

__global__ void q_to_s8_kernel(const void* src, bool u8, Strided view, int8_t* dst, int64_t cols, int64_t ld, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t r = i / ld, j = i - r * ld;
    int32_t v = 0;
    if (j < cols) {
      const int64_t o = offset_of(view, r * cols + j);
      v = u8 ? static_cast<int32_t>(static_cast<const uint8_t*>(src)[o]) - 128 : static_cast<int32_t>(static_cast<const int8_t*>(src)[o]);
    }
    dst[i] = static_cast<int8_t>(v);
  }
}

/// A warp per row (rows of a few thousand bytes: A's k, B's k); the lanes' sums meet by shuffles.
/// The row index is the same for the whole warp, so every lane takes part in each shuffle.
__global__ void q_row_sums_kernel(const int8_t* x, int64_t rows, int64_t cols, int64_t ld, int32_t* sums) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  for (int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32; r < rows; r += warps) {
    const int8_t* p = x + r * ld;
    int32_t s = 0;
    for (int64_t j = lane; j < cols; j += 32) s += p[j];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) sums[r] = s;
  }
}

template <class S>
__global__ void q_epilogue_kernel(QGemmEpilogue e, const S* sa, const S* sb, const S* sy) {
  const int64_t total = e.rows * e.n;
  const bool a_sgn = e.a_ty == Ty::kI8, b_sgn = e.b_ty == Ty::kI8;
  const int64_t a_shift = a_sgn ? 0 : 128, b_shift = b_sgn ? 0 : 128;
  const int64_t za = e.za ? q_int(e.za, a_sgn, 0) - a_shift : 0;
  const bool y_sgn = e.y_ty == Ty::kI8;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t r = i / e.n, j = i - r * e.n;
    const int64_t zb = e.zb ? q_int(e.zb, b_sgn, e.zb_count == 1 ? 0 : j) - b_shift : 0;
    int64_t sum = e.acc[r * e.ld_acc + j];
    if (zb != 0) sum -= zb * e.row_sum_a[r];
    if (za != 0) sum -= za * e.col_sum_b[j];
    sum += e.k * za * zb;
    const int32_t v = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(sum)));  // int32, wrapping
    if (e.y_ty == Ty::kI32) {
      static_cast<int32_t*>(e.y)[i] = v;
      continue;
    }
    const float mult = to_f(sa[0]) * to_f(sb[e.sb_count == 1 ? 0 : j]) / to_f(sy[0]);
    q_store(e.y, y_sgn, i, q_saturate(static_cast<float>(v) * mult, q_int(e.zy, y_sgn, 0), y_sgn));
  }
}

}  // namespace

void quantize_linear(Ty xt, const void* x, const void* scale, Ty yt, const void* zp, void* y, const QuantAxis& ax, int64_t n,
                     cudaStream_t s) {
  if (n <= 0) return;
  by_float_type(xt, [&](auto t) {
    using T = decltype(t);
    ONYX_LAUNCH(q_grid(n), kQBlock, s, q_quantize_kernel<T>)(static_cast<const T*>(x), static_cast<const T*>(scale), zp, yt == Ty::kI8, y,
                                                             ax.dim, ax.inner, n);
  });
}

void dequantize_linear(Ty xt, const void* x, const void* zp, Ty yt, const void* scale, void* y, const QuantAxis& ax, int64_t n,
                       cudaStream_t s) {
  if (n <= 0) return;
  by_float_type(yt, [&](auto t) {
    using T = decltype(t);
    ONYX_LAUNCH(q_grid(n), kQBlock, s, q_dequantize_kernel<T>)(x, zp, xt == Ty::kI8, static_cast<const T*>(scale), static_cast<T*>(y),
                                                               ax.dim, ax.inner, n);
  });
}

int64_t dynamic_quantize_scratch_floats() { return 2 * kQMinMaxBlocks + 2; }

void dynamic_quantize_u8(const float* x, int64_t n, uint8_t* y, float* scale, uint8_t* zp, float* scratch, cudaStream_t s) {
  const unsigned g = q_grid(n);
  const int blocks = static_cast<int>(g < 1 ? 1 : (g > unsigned(kQMinMaxBlocks) ? unsigned(kQMinMaxBlocks) : g));
  float* params = scratch + 2 * kQMinMaxBlocks;
  ONYX_LAUNCH(blocks, kQBlock, s, q_min_max_kernel)(x, n, scratch);
  ONYX_LAUNCH(1, kQBlock, s, q_dynamic_params_kernel)(scratch, blocks, scale, zp, params);
  if (n > 0 && y) ONYX_LAUNCH(q_grid(n), kQBlock, s, q_dynamic_quantize_kernel)(x, n, params, y);
}

void to_s8(const void* src, bool u8, const Strided& view, int8_t* dst, int64_t rows, int64_t cols, int64_t ld, cudaStream_t s) {
  const int64_t n = rows * ld;
  if (n <= 0) return;
  ONYX_LAUNCH(q_grid(n), kQBlock, s, q_to_s8_kernel)(src, u8, view, dst, cols, ld, n);
}

void row_sums_s8(const int8_t* x, int64_t rows, int64_t cols, int64_t ld, int32_t* sums, cudaStream_t s) {
  if (rows <= 0) return;
  ONYX_LAUNCH(q_grid(rows * 32), kQBlock, s, q_row_sums_kernel)(x, rows, cols, ld, sums);
}

void qgemm_epilogue(const QGemmEpilogue& e, cudaStream_t s) {
  const int64_t n = e.rows * e.n;
  if (n <= 0) return;
  if (e.y_ty == Ty::kI32) {
    ONYX_LAUNCH(q_grid(n), kQBlock, s, q_epilogue_kernel<float>)(e, nullptr, nullptr, nullptr);
    return;
  }
  by_float_type(e.scale_ty, [&](auto t) {
    using S = decltype(t);
    ONYX_LAUNCH(q_grid(n), kQBlock, s, q_epilogue_kernel<S>)(e, static_cast<const S*>(e.sa), static_cast<const S*>(e.sb),
                                                             static_cast<const S*>(e.sy));
  });
}

}  // namespace onyx::cuda
