// onyx's own CUDA kernels that reduce: Softmax/LogSoftmax, LayerNormalization (and RMS), Reduce*,
// ArgMax/ArgMin, fused attention (onyx::Attention), direct MaxPool / AveragePool (what cuDNN's
// pooling cannot express), plus the per-channel bias and activation that follow convolutions.
// Each kernel is instantiated for float, float16 and bfloat16 storage (half.hpp): loads widen to
// fp32, reductions and arithmetic run in fp32, stores round to the storage type.
#include <cfloat>

#include "dialect.hpp"
#include "half.hpp"
#include "launch.hpp"

namespace onyx::cuda {
namespace {

constexpr int kBlock = 256;

enum class Combine { kSum, kMax, kMin, kProd };

__device__ __forceinline__ float combine(Combine c, float a, float b) {
  switch (c) {
    case Combine::kSum: return a + b;
    case Combine::kMax: return fmaxf(a, b);
    case Combine::kMin: return fminf(a, b);
    case Combine::kProd: return a * b;
  }
  return a;
}

__device__ __forceinline__ float identity(Combine c) {
  switch (c) {
    case Combine::kSum: return 0.f;
    case Combine::kMax: return -INFINITY;
    case Combine::kMin: return INFINITY;
    case Combine::kProd: return 1.f;
  }
  return 0.f;
}

/// Reduces v over the block (blockDim.x a multiple of 32, <= 1024); every thread gets the result.
__device__ float block_reduce(Combine c, float v) {
  __shared__ float part[32];
  __shared__ float result;
  for (int o = 16; o > 0; o >>= 1) v = combine(c, v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int nw = blockDim.x >> 5;
    float w = lane < nw ? part[lane] : identity(c);
    for (int o = 16; o > 0; o >>= 1) w = combine(c, w, __shfl_xor_sync(0xffffffffu, w, o));
    if (lane == 0) result = w;
  }
  __syncthreads();
  const float r = result;
  __syncthreads();  // part/result may be reused by the next call
  return r;
}

template <class T>
__global__ void softmax_rows(const T* x, T* y, int64_t cols, bool log) {
  const T* xr = x + blockIdx.x * cols;
  T* yr = y + blockIdx.x * cols;
  float m = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, ld(xr, j));
  m = block_reduce(Combine::kMax, m);
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += expf(ld(xr, j) - m);
  s = block_reduce(Combine::kSum, s);
  if (log) {
    const float ls = logf(s);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) st(yr, j, ld(xr, j) - m - ls);
  } else {
    const float inv = 1.f / s;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) st(yr, j, expf(ld(xr, j) - m) * inv);
  }
}

template <class T>
__global__ void softmax_strided(const T* x, T* y, int64_t outer, int64_t axis, int64_t inner, bool log) {
  const int64_t n = outer * inner;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < n; t += int64_t(blockDim.x) * gridDim.x) {
    const int64_t o = t / inner, k = t % inner;
    const T* xr = x + o * axis * inner + k;
    T* yr = y + o * axis * inner + k;
    float m = -FLT_MAX;
    for (int64_t j = 0; j < axis; ++j) m = fmaxf(m, ld(xr, j * inner));
    float s = 0.f;
    for (int64_t j = 0; j < axis; ++j) s += expf(ld(xr, j * inner) - m);
    if (log) {
      const float ls = logf(s);
      for (int64_t j = 0; j < axis; ++j) st(yr, j * inner, ld(xr, j * inner) - m - ls);
    } else {
      for (int64_t j = 0; j < axis; ++j) st(yr, j * inner, expf(ld(xr, j * inner) - m) / s);
    }
  }
}

template <class T>
__global__ void layernorm_rows(const T* x, const T* scale, const T* bias, T* y, float* mean_out, float* inv_out, int64_t cols,
                               float eps, bool rms) {
  const T* xr = x + blockIdx.x * cols;
  T* yr = y + blockIdx.x * cols;
  float mean = 0.f;
  if (!rms) {
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += ld(xr, j);
    mean = block_reduce(Combine::kSum, s) / static_cast<float>(cols);
  }
  float v = 0.f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float d = ld(xr, j) - mean;
    v += d * d;
  }
  const float var = block_reduce(Combine::kSum, v) / static_cast<float>(cols);
  const float inv = rsqrtf(var + eps);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float r = (ld(xr, j) - mean) * inv;
    if (scale) r *= ld(scale, j);
    if (bias) r += ld(bias, j);
    st(yr, j, r);
  }
  if (threadIdx.x == 0) {
    if (mean_out) mean_out[blockIdx.x] = mean;
    if (inv_out) inv_out[blockIdx.x] = inv;
  }
}

template <class T>
__global__ void reduce_kernel(ReduceOp op, const T* x, Strided kept, Strided red, T* y, int64_t n_red) {
  const int64_t base = offset_of(kept, blockIdx.x);
  Combine c = Combine::kSum;
  float init = 0.f;
  if (op == ReduceOp::kMax) c = Combine::kMax, init = -INFINITY;
  if (op == ReduceOp::kMin) c = Combine::kMin, init = INFINITY;
  if (op == ReduceOp::kProd) c = Combine::kProd, init = 1.f;
  float m = 0.f;
  if (op == ReduceOp::kLogSumExp) {
    m = -INFINITY;
    for (int64_t j = threadIdx.x; j < n_red; j += blockDim.x) m = fmaxf(m, ld(x, base + offset_of(red, j)));
    m = block_reduce(Combine::kMax, m);
    if (m == -INFINITY) m = 0.f;
  }
  float acc = init;
  for (int64_t j = threadIdx.x; j < n_red; j += blockDim.x) {
    float v = ld(x, base + offset_of(red, j));
    switch (op) {
      case ReduceOp::kL1: v = fabsf(v); break;
      case ReduceOp::kL2:
      case ReduceOp::kSumSquare: v = v * v; break;
      case ReduceOp::kLogSumExp: v = expf(v - m); break;
      default: break;
    }
    acc = combine(c, acc, v);
  }
  acc = block_reduce(c, acc);
  if (threadIdx.x == 0) {
    switch (op) {
      case ReduceOp::kMean: acc /= static_cast<float>(n_red); break;
      case ReduceOp::kL2: acc = sqrtf(acc); break;
      case ReduceOp::kLogSum: acc = logf(acc); break;
      case ReduceOp::kLogSumExp: acc = logf(acc) + m; break;
      default: break;
    }
    st(y, blockIdx.x, acc);
  }
}

template <class T>
__global__ void arg_kernel(bool max, bool last, const T* x, int64_t* y, int64_t outer, int64_t axis, int64_t inner) {
  const int64_t n = outer * inner;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < n; t += int64_t(blockDim.x) * gridDim.x) {
    const int64_t o = t / inner, k = t % inner;
    const T* xr = x + o * axis * inner + k;
    float best = ld(xr, 0);
    int64_t bi = 0;
    for (int64_t j = 1; j < axis; ++j) {
      const float v = ld(xr, j * inner);
      const bool better = max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
      if (better) best = v, bi = j;
    }
    y[t] = bi;
  }
}

template <class T>
__global__ void channel_bias_act(T* y, const T* bias, int64_t c, int64_t spatial, int64_t n, ConvAct act, float lo, float hi) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    float v = ld(y, i);
    if (bias) v += ld(bias, (i / spatial) % c);
    if (act == ConvAct::kRelu) v = v > 0.f ? v : 0.f;
    else if (act == ConvAct::kClip) v = fminf(fmaxf(v, lo), hi);
    st(y, i, v);
  }
}

template <class T>
__global__ void channel_scale_bias(T* y, const float* scale, const float* bias, int64_t c, int64_t spatial, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t ch = (i / spatial) % c;
    st(y, i, ld(y, i) * scale[ch] + bias[ch]);
  }
}

template <class T>
__global__ void batch_norm_kernel(const T* x, T* y, const float* scale, const float* bias, const float* mean, const float* var,
                                  float eps, int64_t c, int64_t spatial, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t ch = (i / spatial) % c;
    st(y, i, (ld(x, i) - mean[ch]) * (scale[ch] * rsqrtf(var[ch] + eps)) + bias[ch]);
  }
}

constexpr int64_t kAttentionRows = 4096;  // query rows in flight: blocks of the attention grid

/// One block per query row (grid-stride over rows): its scores go to a scratch row, then
/// softmax, then the row of the output. Reads of kt and v are coalesced across the block's
/// threads (consecutive keys, consecutive output columns); q and the scratch row are broadcast.
template <class T>
__global__ void attention_kernel(AttentionArgs a, float* scratch) {
  const int64_t rows = a.batch * a.sq;
  float* sc = scratch + static_cast<int64_t>(blockIdx.x) * a.sk;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t b = r / a.sq, i = r % a.sq;
    const T* q = static_cast<const T*>(a.q) + offset_of(a.bq, b) + i * a.d;
    const T* kt = static_cast<const T*>(a.kt) + offset_of(a.bk, b);
    const T* v = static_cast<const T*>(a.v) + offset_of(a.bv, b);
    const T* bias = a.bias ? static_cast<const T*>(a.bias) + offset_of(a.bb, b) + i * a.bias_row : nullptr;
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < a.sk; j += blockDim.x) {
      float acc = 0.f;
      for (int64_t k = 0; k < a.d; ++k) acc = fmaf(ld(q, k), ld(kt, k * a.sk + j), acc);
      float s = a.scale * acc;
      if (bias) s += ld(bias, j * a.bias_col);
      sc[j] = s;
      m = fmaxf(m, s);
    }
    m = block_reduce(Combine::kMax, m);
    float sum = 0.f;
    for (int64_t j = threadIdx.x; j < a.sk; j += blockDim.x) {
      const float e = expf(sc[j] - m);
      sc[j] = e;
      sum += e;
    }
    sum = block_reduce(Combine::kSum, sum);  // ends with a barrier: every e of the row is written
    const float inv = 1.f / sum;
    T* y = static_cast<T*>(a.y) + r * a.dv;
    for (int64_t c = threadIdx.x; c < a.dv; c += blockDim.x) {
      float acc = 0.f;
      for (int64_t j = 0; j < a.sk; ++j) acc = fmaf(sc[j], ld(v, j * a.dv + c), acc);
      st(y, c, acc * inv);
    }
    __syncthreads();  // the scratch row is rewritten for the next row
  }
}

unsigned grid_for(int64_t n) { return grid_blocks(n, kBlock); }

int threads_for(int64_t cols) {
  int t = 32;
  while (t < 1024 && t < cols) t <<= 1;
  return t;
}

template <class T>
__global__ void pool_kernel(const T* x, T* y, int64_t* indices, PoolArgs a, int64_t n) {
  const int64_t in_size = a.in[0] * a.in[1] * a.in[2], out_size = a.out[0] * a.out[1] * a.out[2];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t plane = i / out_size, o = i % out_size;
    const int64_t o2 = o % a.out[2], o1 = (o / a.out[2]) % a.out[1], o0 = o / (a.out[2] * a.out[1]);
    const int64_t b0 = o0 * a.s[0] - a.pad_begin[0], b1 = o1 * a.s[1] - a.pad_begin[1], b2 = o2 * a.s[2] - a.pad_begin[2];
    const T* xp = x + plane * in_size;
    float best = -INFINITY, sum = 0.f;
    int64_t best_at = -1, count = 0, padded = 0;
    for (int64_t k0 = 0; k0 < a.k[0]; ++k0) {
      const int64_t i0 = b0 + k0 * a.d[0];
      const bool in0 = i0 >= 0 && i0 < a.in[0], pad0 = i0 >= -a.pad_begin[0] && i0 < a.in[0] + a.pad_end[0];
      for (int64_t k1 = 0; k1 < a.k[1]; ++k1) {
        const int64_t i1 = b1 + k1 * a.d[1];
        const bool in1 = i1 >= 0 && i1 < a.in[1], pad1 = i1 >= -a.pad_begin[1] && i1 < a.in[1] + a.pad_end[1];
        for (int64_t k2 = 0; k2 < a.k[2]; ++k2) {
          const int64_t i2 = b2 + k2 * a.d[2];
          const bool in2 = i2 >= 0 && i2 < a.in[2], pad2 = i2 >= -a.pad_begin[2] && i2 < a.in[2] + a.pad_end[2];
          if (pad0 && pad1 && pad2) ++padded;
          if (!(in0 && in1 && in2)) continue;
          const int64_t off = (i0 * a.in[1] + i1) * a.in[2] + i2;
          const float v = ld(xp, off);
          ++count;
          if (a.p > 0.f) {
            sum += a.p == 2.f ? v * v : a.p == 1.f ? fabsf(v) : powf(fabsf(v), a.p);
          } else if (a.max) {
            if (v > best || best_at < 0 || v != v) {
              best = v;
              best_at = off;
            }
          } else {
            sum += v;
          }
        }
      }
    }
    if (a.p > 0.f) {
      st(y, i, a.p == 2.f ? sqrtf(sum) : a.p == 1.f ? sum : powf(sum, 1.f / a.p));
    } else if (a.max) {
      st(y, i, best);
      if (indices) {
        int64_t flat = best_at;
        if (a.column_major_indices && best_at >= 0) {
          const int64_t j2 = best_at % a.in[2], j1 = (best_at / a.in[2]) % a.in[1], j0 = best_at / (a.in[1] * a.in[2]);
          flat = (j2 * a.in[1] + j1) * a.in[0] + j0;
        }
        indices[i] = plane * in_size + flat;
      }
    } else {
      const int64_t div = a.count_include_pad ? padded : count;
      st(y, i, div ? sum / static_cast<float>(div) : 0.f);
    }
  }
}

}  // namespace

void pool(Ty ty, const void* x, void* y, int64_t* indices, const PoolArgs& a, cudaStream_t s) {
  const int64_t n = a.planes * a.out[0] * a.out[1] * a.out[2];
  if (n <= 0) return;
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(grid_for(n), kBlock, s, pool_kernel<T>)(static_cast<const T*>(x), static_cast<T*>(y), indices, a, n);
  });
}

void softmax(Ty ty, const void* x, void* y, int64_t outer, int64_t axis, int64_t inner, bool log, cudaStream_t s) {
  if (outer * axis * inner <= 0) return;
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    const T* xt = static_cast<const T*>(x);
    T* yt = static_cast<T*>(y);
    if (inner == 1 && outer <= 0x7fffffff) ONYX_LAUNCH(static_cast<unsigned>(outer), threads_for(axis), s, softmax_rows<T>)(xt, yt, axis, log);
    else ONYX_LAUNCH(grid_for(outer * inner), kBlock, s, softmax_strided<T>)(xt, yt, outer, axis, inner, log);
  });
}

void layernorm(Ty ty, const void* x, const void* scale, const void* bias, void* y, float* mean, float* inv_std, int64_t rows,
               int64_t cols, float eps, bool rms, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(static_cast<unsigned>(rows), threads_for(cols), s, layernorm_rows<T>)(
        static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<const T*>(bias), static_cast<T*>(y), mean, inv_std, cols, eps, rms);
  });
}

void reduce(Ty ty, ReduceOp op, const void* x, const Strided& kept, const Strided& red, void* y, int64_t n_out, int64_t n_red,
            cudaStream_t s) {
  if (n_out <= 0) return;
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(static_cast<unsigned>(n_out), threads_for(n_red), s, reduce_kernel<T>)(op, static_cast<const T*>(x), kept, red,
                                                                                        static_cast<T*>(y), n_red);
  });
}

void arg_reduce(Ty ty, bool max, bool select_last, const void* x, int64_t* y, int64_t outer, int64_t axis, int64_t inner,
                cudaStream_t s) {
  if (outer * inner <= 0 || axis <= 0) return;
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(grid_for(outer * inner), kBlock, s, arg_kernel<T>)(max, select_last, static_cast<const T*>(x), y, outer, axis, inner);
  });
}

int64_t attention_scratch_floats(int64_t batch, int64_t sq, int64_t sk) {
  const int64_t rows = batch * sq;
  return (rows < kAttentionRows ? rows : kAttentionRows) * sk;
}

void attention(Ty ty, const AttentionArgs& a, float* scratch, cudaStream_t s) {
  const int64_t rows = a.batch * a.sq;
  if (rows <= 0 || a.dv <= 0) return;
  const unsigned grid = static_cast<unsigned>(rows < kAttentionRows ? rows : kAttentionRows);
  const int widest = threads_for(a.sk > a.dv ? a.sk : a.dv);
  const int threads = widest > 256 ? 256 : widest;
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(grid, threads, s, attention_kernel<T>)(a, scratch);
  });
}

void channel_bias_act(Ty ty, void* y, const void* bias, int64_t n, int64_t c, int64_t spatial, ConvAct act, float lo, float hi,
                      cudaStream_t s) {
  const int64_t total = n * c * spatial;
  if (total <= 0 || (!bias && act == ConvAct::kNone)) return;
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(grid_for(total), kBlock, s, channel_bias_act<T>)(static_cast<T*>(y), static_cast<const T*>(bias), c, spatial, total, act,
                                                                 lo, hi);
  });
}

void channel_scale_bias(Ty ty, void* y, const float* scale, const float* bias, int64_t n, int64_t c, int64_t spatial, cudaStream_t s) {
  const int64_t total = n * c * spatial;
  if (total <= 0) return;
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(grid_for(total), kBlock, s, channel_scale_bias<T>)(static_cast<T*>(y), scale, bias, c, spatial, total);
  });
}

void batch_norm(Ty ty, const void* x, void* y, const float* scale, const float* bias, const float* mean, const float* var, float eps,
                int64_t n, int64_t c, int64_t spatial, cudaStream_t s) {
  const int64_t total = n * c * spatial;
  if (total <= 0) return;
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(grid_for(total), kBlock, s, batch_norm_kernel<T>)(static_cast<const T*>(x), static_cast<T*>(y), scale, bias, mean, var,
                                                                  eps, c, spatial, total);
  });
}

}  // namespace onyx::cuda
