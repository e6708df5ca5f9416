// onyx's CUDA kernels for ONNX Runtime's transformer operators (transformer.hpp): elementwise
// GELUs, row-per-block Skip / Simplified layer normalisation, rotary embedding, the head
// gathering and GroupQueryAttention cache append, one attention core (a block per query row:
// scores, masks, softmax, weighted values) and MatMulNBits' dequantisation and warp-per-column
// matrix-vector product. Written against dialect.hpp, so it also runs over the host emulator.
#include <cfloat>

#include "dialect.hpp"
#include "half.hpp"
#include "transformer.hpp"

namespace onyx::cuda {
namespace {

constexpr int kBlock = 256;
constexpr int kCoreThreads = 128;
constexpr int64_t kCoreRows = 2048;  // query rows in flight: blocks of the attention grid
constexpr int kQShared = 256;        // query rows up to this head size are staged in shared memory

unsigned grid_for(int64_t n) { return grid_blocks(n, kBlock); }

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Sum (max = false) or max of v over the block (blockDim.x a multiple of 32); every thread gets it.
__device__ float block_combine(float v, bool max) {
  __shared__ float part[32];
  __shared__ float result;
  v = max ? warp_max(v) : warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int nw = blockDim.x >> 5;
    float w = lane < nw ? part[lane] : (max ? -INFINITY : 0.f);
    w = max ? warp_max(w) : warp_sum(w);
    if (lane == 0) result = w;
  }
  __syncthreads();
  const float r = result;
  __syncthreads();  // part / result are reused by the next call
  return r;
}

// ---------------------------------------------------------------------------------------------
// GELUs

template <class T>
__global__ void gelu_kernel(GeluKind kind, const T* x, const T* bias, T* y, int64_t n, int64_t cols, float alpha) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    float v = ld(x, i);
    if (bias) v += ld(bias, i % cols);
    float r;
    switch (kind) {
      case GeluKind::kErf: r = 0.5f * v * (1.f + erff(v * 0.70710678118654752f)); break;
      case GeluKind::kTanh: r = 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v))); break;
      default: r = v / (1.f + expf(-alpha * v)); break;
    }
    st(y, i, r);
  }
}

// ---------------------------------------------------------------------------------------------
// Skip / Simplified layer normalisation

template <class T>
__device__ __forceinline__ float skip_sum(const SkipNormArgs& a, int64_t r, int64_t j) {
  float v = ld(static_cast<const T*>(a.x), r * a.cols + j);
  if (a.skip) v += ld(static_cast<const T*>(a.skip), (r % a.skip_rows) * a.cols + j);
  if (a.bias) v += ld(static_cast<const T*>(a.bias), j);
  return v;
}

template <class T>
__global__ void skip_norm_rows(SkipNormArgs a) {
  const int64_t r = blockIdx.x;
  float mean = 0.f;
  if (!a.rms) {
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < a.cols; j += blockDim.x) s += skip_sum<T>(a, r, j);
    mean = block_combine(s, false) / static_cast<float>(a.cols);
  }
  float sq = 0.f;
  for (int64_t j = threadIdx.x; j < a.cols; j += blockDim.x) {
    const float d = skip_sum<T>(a, r, j) - mean;
    sq += d * d;
  }
  const float inv = rsqrtf(block_combine(sq, false) / static_cast<float>(a.cols) + a.eps);
  for (int64_t j = threadIdx.x; j < a.cols; j += blockDim.x) {
    const float v = skip_sum<T>(a, r, j);
    if (a.sum) st(static_cast<T*>(a.sum), r * a.cols + j, v);
    float o = (v - mean) * inv * ld(static_cast<const T*>(a.gamma), j);
    if (a.beta) o += ld(static_cast<const T*>(a.beta), j);
    st(static_cast<T*>(a.y), r * a.cols + j, o);
  }
  if (threadIdx.x == 0) {
    if (a.mean) a.mean[r] = mean;
    if (a.inv_std) a.inv_std[r] = inv;
  }
}

// ---------------------------------------------------------------------------------------------
// Rotary embedding

/// Element e of a head rotated: x points at the head's first value, c / sn at the angle row.
__device__ __forceinline__ float rope_at(const float* x, int64_t e, int64_t rd, bool interleaved, const float* c, const float* sn) {
  if (e >= rd) return x[e];
  const int64_t half = rd / 2;
  int64_t i, i1, i2;
  bool second;
  if (interleaved) {
    i = e / 2;
    i1 = 2 * i;
    i2 = i1 + 1;
    second = (e & 1) != 0;
  } else {
    second = e >= half;
    i = second ? e - half : e;
    i1 = i;
    i2 = i + half;
  }
  const float va = x[i1], vb = x[i2], cv = c[i], sv = sn[i];
  return second ? va * sv + vb * cv : va * cv - vb * sv;
}

__device__ __forceinline__ int64_t past_of(const int32_t* seqlens, bool first_prompt, int64_t b, int64_t S) {
  return first_prompt ? 0 : static_cast<int64_t>(seqlens[b]) + 1 - S;
}

__global__ void rotary_kernel(RotaryArgs a, int64_t n) {
  const int64_t half = a.rd / 2;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t e = i % a.H, h = (i / a.H) % a.N, s = (i / (a.H * a.N)) % a.S, b = i / (a.H * a.N * a.S);
    int64_t p;
    switch (a.pos_kind) {
      case RotaryPos::kIds: p = a.pos[b * a.S + s]; break;
      case RotaryPos::kOffset: p = a.pos[0] + s; break;
      default: p = past_of(a.seqlens, a.first_prompt, b, a.S) + s; break;
    }
    const float* x = a.x + b * a.xb + s * a.xs + h * a.xh;
    a.y[b * a.yb + s * a.ys + h * a.yh + e] = rope_at(x, e, a.rd, a.interleaved, a.cos + p * half, a.sin + p * half);
  }
}

// ---------------------------------------------------------------------------------------------
// Keys, values and queries per head

template <class T>
__global__ void gather_heads_kernel(GatherHeadsArgs a, int64_t n) {
  const int64_t L = a.P + a.L;
  const T* past = static_cast<const T*>(a.past);
  const T* x = static_cast<const T*>(a.x);
  const T* bias = static_cast<const T*>(a.bias);
  T* dst = static_cast<T*>(a.dst);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t w = i % a.W, t = (i / a.W) % L, h = (i / (a.W * L)) % a.N, b = i / (a.W * L * a.N);
    if (t < a.P) {
      dst[i] = past[((b * a.N + h) * a.P + t) * a.W + w];  // a copy: no rounding
    } else {
      float v = ld(x, b * a.xb + (t - a.P) * a.xl + h * a.xh + w);
      if (bias) v += ld(bias, h * a.W + w);
      st(dst, i, v);
    }
  }
}

__global__ void gqa_append_kernel(GqaAppendArgs a, int64_t n) {
  const int64_t half = a.rd / 2;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t e = i % a.H, t = (i / a.H) % a.L, kh = (i / (a.H * a.L)) % a.Nkv, b = i / (a.H * a.L * a.Nkv);
    const int64_t past = past_of(a.seqlens, a.first_prompt, b, a.S);
    const int64_t src_row = ((b * a.Nkv + kh) * a.P + t) * a.H + e;
    if (t >= past && t < past + a.S) {
      const int64_t s = t - past;
      const int64_t off = b * a.kb + s * a.ks + kh * a.H;
      float kv = a.knew[off + e];
      if (a.rd > 0) {
        const int64_t p = a.pos ? a.pos[b * a.S + s] : past + s;
        kv = rope_at(a.knew + off, e, a.rd, a.interleaved, a.cos + p * half, a.sin + p * half);
      }
      a.pk[i] = kv;
      a.pv[i] = a.vnew[off + e];
    } else if (a.past_k && a.past_k != a.pk) {
      // The past rows (all of them when the past buffer is as long as the present), zeros after.
      const bool keep = a.P == a.L || t < past;
      a.pk[i] = keep ? a.past_k[src_row] : 0.f;
      a.pv[i] = keep ? a.past_v[src_row] : 0.f;
    } else if (!a.past_k) {
      a.pk[i] = 0.f;
      a.pv[i] = 0.f;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Attention core

__device__ __forceinline__ bool mask_hides(const AttnCoreArgs& a, int64_t b, int64_t s, int64_t j) {
  switch (a.mask_kind) {
    case MaskKind::kNone: return false;
    case MaskKind::kEnds: return j >= a.mask[b];
    case MaskKind::kEndsStarts: return j >= a.mask[b] || j < a.mask[a.B + b];
    case MaskKind::kRaw2d: return a.mask[b * a.T + j] == 0;
    case MaskKind::kRaw3d: return a.mask[(b * a.S + s) * a.T + j] == 0;
    case MaskKind::kRaw4d: return a.mask[(b * a.mask_max + a.P + s) * a.mask_max + j] == 0;
  }
  return false;
}

/// One block per query row (grid-stride over B N S rows); its scores go to a scratch row. T: the
/// storage type of q, k, v, y and the bias (scores and sums in fp32).
template <class T>
__global__ void attn_core_kernel(AttnCoreArgs a, float* scratch) {
  __shared__ float qs[kQShared];
  __shared__ float part[kCoreThreads];
  float* sc = scratch + static_cast<int64_t>(blockIdx.x) * a.T;
  const int64_t rows = a.B * a.N * a.S;
  const bool gqa = a.seqlens != nullptr;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t s = r % a.S, n = (r / a.S) % a.N, b = r / (a.S * a.N), kh = n / a.group;
    T* y = static_cast<T*>(a.y) + b * a.y_sb + n * a.y_sn + s * a.y_ss;
    // Keys [k0, k1) take part.
    int64_t k0 = 0, k1 = a.T;
    if (gqa) {
      const int64_t pos = past_of(a.seqlens, a.first_prompt, b, a.S) + s, tot = static_cast<int64_t>(a.seqlens[b]) + 1;
      k1 = (pos < tot - 1 ? pos : tot - 1) + 1;
      k0 = a.window > 0 && pos - a.window + 1 > 0 ? pos - a.window + 1 : 0;
    } else if (a.causal && !a.qk) {
      k1 = a.P + s + 1 < a.T ? a.P + s + 1 : a.T;  // causality leaves out the later keys (as ORT's softmax)
    }
    const int64_t nk = k1 - k0;
    if (nk <= 0) {
      for (int64_t c = threadIdx.x; c < a.Hv; c += blockDim.x) st(y, c, 0.f);
      continue;
    }
    const T* q = static_cast<const T*>(a.q) + b * a.q_sb + n * a.q_sn + s * a.q_ss;
    const bool staged = a.H <= kQShared;
    if (staged) {
      for (int64_t k = threadIdx.x; k < a.H; k += blockDim.x) qs[k] = ld(q, k);
      __syncthreads();
    }
    const T* kb = static_cast<const T*>(a.k) + b * a.k_sb + kh * a.k_sn;
    const T* vb = static_cast<const T*>(a.v) + b * a.v_sb + kh * a.v_sn;
    const T* bias = a.bias ? static_cast<const T*>(a.bias) + b * a.ab_b + n * a.ab_n + s * a.ab_s : nullptr;
    float* qk = a.qk ? a.qk + ((b * a.N + n) * a.S + s) * a.T : nullptr;
    float m = -INFINITY;
    for (int64_t jj = threadIdx.x; jj < nk; jj += blockDim.x) {
      const int64_t j = k0 + jj;
      const T* kr = kb + j * a.H;
      float acc = 0.f;
      if (staged)
        for (int64_t k = 0; k < a.H; ++k) acc = fmaf(qs[k], ld(kr, k), acc);
      else
        for (int64_t k = 0; k < a.H; ++k) acc = fmaf(ld(q, k), ld(kr, k), acc);
      float v = a.scale * acc;
      if (gqa) {
        if (a.softcap > 0.f) v = tanhf(v / a.softcap) * a.softcap;
      } else {
        if (qk) qk[j] = v;
        if (a.causal && j > a.P + s)
          v = -INFINITY;  // left out of the softmax (only when the raw scores keep every key)
        else if (mask_hides(a, b, s, j))
          v += a.mask_filter;
      }
      if (bias) v += ld(bias, j);
      sc[jj] = v;
      m = fmaxf(m, v);
    }
    m = block_combine(m, true);
    const bool sink = gqa && (a.sink || a.smooth);
    const float sink_v = a.sink ? a.sink[n] : 0.f;
    if (sink) m = fmaxf(m, sink_v);
    float sum = 0.f;
    for (int64_t jj = threadIdx.x; jj < nk; jj += blockDim.x) {
      const float e = expf(sc[jj] - m);
      sc[jj] = e;
      sum += e;
    }
    sum = block_combine(sum, false);  // ends with a barrier: every e of the row is written
    if (sink) sum += expf(sink_v - m);
    const float inv = 1.f / sum;
    const T* vr = vb + k0 * a.Hv;
    if (a.Hv <= static_cast<int64_t>(blockDim.x)) {
      // Hv columns by `parts` groups of threads, each over every parts-th key, then summed.
      const int64_t parts = blockDim.x / a.Hv;
      const int64_t c = threadIdx.x % a.Hv, p = threadIdx.x / a.Hv;
      float acc = 0.f;
      if (p < parts)
        for (int64_t jj = p; jj < nk; jj += parts) acc = fmaf(sc[jj], ld(vr, jj * a.Hv + c), acc);
      part[threadIdx.x] = acc;
      __syncthreads();
      if (p == 0) {
        float t = 0.f;
        for (int64_t g = 0; g < parts; ++g) t += part[g * a.Hv + c];
        st(y, c, t * inv);
      }
    } else {
      for (int64_t c = threadIdx.x; c < a.Hv; c += blockDim.x) {
        float acc = 0.f;
        for (int64_t jj = 0; jj < nk; ++jj) acc = fmaf(sc[jj], ld(vr, jj * a.Hv + c), acc);
        st(y, c, acc * inv);
      }
    }
    __syncthreads();  // the scratch row, qs and part are rewritten for the next row
  }
}

// ---------------------------------------------------------------------------------------------
// MatMulNBits

__device__ __forceinline__ float nbits_weight(const NBitsWeights& w, int64_t n, int64_t k) {
  const int64_t blk = w.g_idx ? w.g_idx[k] : k / w.block;
  const unsigned mask = (1u << w.bits) - 1u;
  const int64_t bit = k * w.bits;
  const unsigned q = (static_cast<unsigned>(w.b[n * w.kb * w.blob + (bit >> 3)]) >> (bit & 7)) & mask;
  float zp;
  if (w.zp_u8) {
    const int64_t zb = blk * w.bits;
    zp = static_cast<float>((static_cast<unsigned>(w.zp_u8[n * w.zp_blob + (zb >> 3)]) >> (zb & 7)) & mask);
  } else if (w.zp_f) {
    zp = w.zp_f[n * w.kb + blk];
  } else {
    zp = static_cast<float>(1u << (w.bits - 1));
  }
  return (static_cast<float>(q) - zp) * w.scales[n * w.kb + blk];
}

__global__ void nbits_dequant_kernel(NBitsWeights w, float* wt, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    wt[i] = nbits_weight(w, i / w.K, i % w.K);
}

/// A warp per output column n: lanes stride over K, the M (<= 4) row sums reduced by shuffles.
__global__ void nbits_gemv_kernel(NBitsWeights w, const float* a, int64_t M, const float* bias, float* y) {
  const int64_t n = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (n >= w.N) return;  // the whole warp leaves together
  float acc[kNBitsGemvRows] = {0.f, 0.f, 0.f, 0.f};
  for (int64_t k = lane; k < w.K; k += 32) {
    const float wv = nbits_weight(w, n, k);
    for (int64_t r = 0; r < M; ++r) acc[r] = fmaf(a[r * w.K + k], wv, acc[r]);
  }
  for (int64_t r = 0; r < M; ++r) {
    const float t = warp_sum(acc[r]);
    if (lane == 0) y[r * w.N + n] = t + (bias ? bias[n] : 0.f);
  }
}

__global__ void row_bias_kernel(float* y, const float* bias, int64_t n, int64_t cols) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) y[i] += bias[i % cols];
}

int threads_for(int64_t cols) {
  int t = 32;
  while (t < 1024 && t < cols) t <<= 1;
  return t;
}

}  // namespace

void gelu(Ty ty, GeluKind kind, const void* x, const void* bias, void* y, int64_t n, int64_t cols, float alpha, cudaStream_t s) {
  if (n <= 0) return;
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(grid_for(n), kBlock, s, gelu_kernel<T>)(kind, static_cast<const T*>(x), static_cast<const T*>(bias), static_cast<T*>(y), n,
                                                        cols > 0 ? cols : 1, alpha);
  });
}

void skip_norm(Ty ty, const SkipNormArgs& a, cudaStream_t s) {
  if (a.rows <= 0 || a.cols <= 0) return;
  const int t = threads_for(a.cols);
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(static_cast<unsigned>(a.rows), t > 512 ? 512 : t, s, skip_norm_rows<T>)(a);
  });
}

void rotary_f32(const RotaryArgs& a, cudaStream_t s) {
  const int64_t n = a.B * a.S * a.N * a.H;
  if (n <= 0) return;
  ONYX_LAUNCH(grid_for(n), kBlock, s, rotary_kernel)(a, n);
}

void gather_heads(Ty ty, const GatherHeadsArgs& a, cudaStream_t s) {
  const int64_t n = a.B * a.N * (a.P + a.L) * a.W;
  if (n <= 0) return;
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(grid_for(n), kBlock, s, gather_heads_kernel<T>)(a, n);
  });
}

void gqa_append_f32(const GqaAppendArgs& a, cudaStream_t s) {
  const int64_t n = a.B * a.Nkv * a.L * a.H;
  if (n <= 0) return;
  ONYX_LAUNCH(grid_for(n), kBlock, s, gqa_append_kernel)(a, n);
}

int64_t attn_core_scratch_floats(const AttnCoreArgs& a) {
  const int64_t rows = a.B * a.N * a.S;
  return (rows < kCoreRows ? rows : kCoreRows) * (a.T > 0 ? a.T : 1);
}

void attn_core(Ty ty, const AttnCoreArgs& a, float* scratch, cudaStream_t s) {
  const int64_t rows = a.B * a.N * a.S;
  if (rows <= 0 || a.Hv <= 0) return;
  const unsigned grid = static_cast<unsigned>(rows < kCoreRows ? rows : kCoreRows);
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(grid, kCoreThreads, s, attn_core_kernel<T>)(a, scratch);
  });
}

void nbits_dequantize_f32(const NBitsWeights& w, float* wt, cudaStream_t s) {
  const int64_t n = w.N * w.K;
  if (n <= 0) return;
  ONYX_LAUNCH(grid_for(n), kBlock, s, nbits_dequant_kernel)(w, wt, n);
}

void nbits_gemv_f32(const NBitsWeights& w, const float* a, int64_t M, const float* bias, float* y, cudaStream_t s) {
  if (M <= 0 || w.N <= 0) return;
  constexpr int kWarps = 4;
  const unsigned grid = static_cast<unsigned>((w.N + kWarps - 1) / kWarps);
  ONYX_LAUNCH(grid, kWarps * 32, s, nbits_gemv_kernel)(w, a, M > kNBitsGemvRows ? kNBitsGemvRows : M, bias, y);
}

void add_row_bias_f32(float* y, const float* bias, int64_t M, int64_t N, cudaStream_t s) {
  const int64_t n = M * N;
  if (n <= 0 || !bias) return;
  ONYX_LAUNCH(grid_for(n), kBlock, s, row_bias_kernel)(y, bias, n, N);
}

}  // namespace onyx::cuda
