// Launchers of the CUDA EP's kernels for ONNX Runtime's transformer operators (transformer.cu):
// the GELU family, Skip / Simplified layer normalisation, rotary embedding, MatMulNBits'
// dequantisation and matrix-vector product, and one attention core shared by MultiHeadAttention,
// Attention and GroupQueryAttention. Plain types only, as launch.hpp: the .cu file includes
// nothing of onyx and compiles as C++ over the emulator for the GPU-free tests.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "launch.hpp"  // Ty

namespace onyx::cuda {

/// com.microsoft Gelu / BiasGelu (erf), FastGelu (tanh), QuickGelu (x sigmoid(alpha x)).
enum class GeluKind : int { kErf, kTanh, kQuick };
/// y[i] = act(x[i] + bias[i % cols]) over n elements (bias null: no bias); x, bias and y of `ty`
/// (kF32, kF16, kBF16: 16-bit storage computed in fp32).
void gelu(Ty ty, GeluKind kind, const void* x, const void* bias, void* y, int64_t n, int64_t cols, float alpha, cudaStream_t s);
inline void gelu_f32(GeluKind kind, const float* x, const float* bias, float* y, int64_t n, int64_t cols, float alpha, cudaStream_t s) {
  gelu(Ty::kF32, kind, x, bias, y, n, cols, alpha, s);
}

/// Skip(Simplified)LayerNormalization and SimplifiedLayerNormalization, one block per row:
///   sum = x[r] + skip[r % skip_rows] + bias   (skip and bias may be null)
///   y[r] = (sum - mean) * inv_std * gamma + beta   (rms: mean 0, inv_std over mean(sum^2); beta may be null)
/// mean / inv_std get one value per row and sum_out the sums (each may be null). x, skip, gamma,
/// beta, bias, y and sum are of the type given to skip_norm (float32, float16 or bfloat16; the
/// statistics are computed in fp32), mean and inv_std float.
struct SkipNormArgs {
  const void* x = nullptr;
  const void* skip = nullptr;
  const void* gamma = nullptr;
  const void* beta = nullptr;
  const void* bias = nullptr;
  void* y = nullptr;
  float* mean = nullptr;
  float* inv_std = nullptr;
  void* sum = nullptr;
  int64_t rows = 0, cols = 0, skip_rows = 1;
  float eps = 1e-12f;
  bool rms = false;
};
void skip_norm(Ty ty, const SkipNormArgs& a, cudaStream_t s);
inline void skip_norm_f32(const SkipNormArgs& a, cudaStream_t s) { skip_norm(Ty::kF32, a, s); }

/// Where a token's rotary angles come from: position_ids [B, S], one start offset (token s at
/// pos[0] + s), or the entry's past length (GroupQueryAttention: seqlens_k[b] + 1 - S, or 0 on
/// the first prompt) plus s.
enum class RotaryPos : int { kIds, kOffset, kPast };
/// Rotates heads of x into y (RotaryEmbedding, and GroupQueryAttention's query): element (b, s,
/// h, e) of x at b xb + s xs + h xh + e, of y at b yb + s ys + h yh + e. The first rd values of
/// each head are rotated (halves, or interleaved pairs) by cos / sin row p (rd / 2 values each),
/// the rest copied. Positions are checked on the host before the launch.
struct RotaryArgs {
  const float* x = nullptr;
  float* y = nullptr;
  int64_t B = 0, S = 0, N = 0, H = 0, rd = 0;
  int64_t xb = 0, xs = 0, xh = 0, yb = 0, ys = 0, yh = 0;
  bool interleaved = false;
  const float* cos = nullptr;
  const float* sin = nullptr;
  RotaryPos pos_kind = RotaryPos::kIds;
  const int64_t* pos = nullptr;     // kIds: [B, S]; kOffset: one value
  const int32_t* seqlens = nullptr; // kPast
  bool first_prompt = false;        // kPast: no past
};
void rotary_f32(const RotaryArgs& a, cudaStream_t s);

/// Gathers per-head rows into dst [B, N, P + L, W]: rows t < P from past [B, N, P, W], the
/// others from x's token t - P (element (b, l, h, w) at b xb + l xl + h xh + w) plus bias[h W + w]
/// (bias may be null). MultiHeadAttention's and Attention's keys, values and biased queries. Every
/// tensor is of the type given to gather_heads (float32, float16, bfloat16).
struct GatherHeadsArgs {
  const void* past = nullptr;
  const void* x = nullptr;
  const void* bias = nullptr;
  void* dst = nullptr;
  int64_t B = 0, N = 0, P = 0, L = 0, W = 0;
  int64_t xb = 0, xl = 0, xh = 0;
};
void gather_heads(Ty ty, const GatherHeadsArgs& a, cudaStream_t s);
inline void gather_heads_f32(const GatherHeadsArgs& a, cudaStream_t s) { gather_heads(Ty::kF32, a, s); }

/// GroupQueryAttention's present: for each (b, kv head), rows [0, past_b) from the past buffer
/// (when it is not the present itself), the S new rows at past_b (keys rotated when rot.rd > 0),
/// zeros after them up to L. New key / value token s of (b, kh) at knew + b kb + s ks + kh H.
struct GqaAppendArgs {
  const float* past_k = nullptr;
  const float* past_v = nullptr;
  const float* knew = nullptr;
  const float* vnew = nullptr;
  float* pk = nullptr;  // present [B, Nkv, L, H]
  float* pv = nullptr;
  int64_t B = 0, S = 0, Nkv = 0, H = 0, P = 0, L = 0;
  int64_t kb = 0, ks = 0;
  const int32_t* seqlens = nullptr;
  bool first_prompt = false;
  // Rotary of the new keys (rd 0: none); positions as RotaryArgs (kIds or kPast).
  int64_t rd = 0;
  bool interleaved = false;
  const float* cos = nullptr;
  const float* sin = nullptr;
  const int64_t* pos = nullptr;
};
void gqa_append_f32(const GqaAppendArgs& a, cudaStream_t s);

/// Which keys a MultiHeadAttention / Attention mask hides (ONNX Runtime's forms): key lengths [B],
/// ends then starts [2B], [B, T], [B, S, T], [B, 1, M, M] (row P + s).
enum class MaskKind : int { kNone, kEnds, kEndsStarts, kRaw2d, kRaw3d, kRaw4d };

/// The attention core: for each batch b, query head n and query token s,
///   scores_j = scale q(b, n, s) . k(b, n / group, j)
/// then, in MultiHeadAttention / Attention mode, mask_filter added to keys hidden by causality
/// (j > P + s) or the mask, the attention bias added, softmax over all T keys; in
/// GroupQueryAttention mode (seqlens non-null) only keys [a, e) take part (causal up to the token's
/// position past_b + s, at most seqlens[b]; local window), softcap, bias, sink / smooth softmax.
/// y(b, n, s) gets the probability-weighted sum of v rows. qk (may be null): the raw scaled
/// scores [B, N, S, T] (MultiHeadAttention's output_qk, float32 runs only). q, k, v, y and the
/// attention bias are of the type given to attn_core (float32, float16, bfloat16: scores, softmax
/// and sums in fp32); qk and the sinks are float.
struct AttnCoreArgs {
  int64_t B = 0, N = 0, S = 0, T = 0, H = 0, Hv = 0, group = 1;
  const void* q = nullptr;
  int64_t q_sb = 0, q_sn = 0, q_ss = 0;
  const void* k = nullptr;  // k(b, kh, j) = k + b k_sb + kh k_sn + j H
  int64_t k_sb = 0, k_sn = 0;
  const void* v = nullptr;  // v(b, kh, j) = v + b v_sb + kh v_sn + j Hv
  int64_t v_sb = 0, v_sn = 0;
  void* y = nullptr;
  int64_t y_sb = 0, y_sn = 0, y_ss = 0;
  float scale = 1.f, mask_filter = -10000.f;
  bool causal = false;
  int64_t P = 0;
  MaskKind mask_kind = MaskKind::kNone;
  const int32_t* mask = nullptr;
  int64_t mask_max = 0;
  const void* bias = nullptr;  // element (b, n, s, j) at b ab_b + n ab_n + s ab_s + j
  int64_t ab_b = 0, ab_n = 0, ab_s = 0;
  float* qk = nullptr;
  // GroupQueryAttention mode
  const int32_t* seqlens = nullptr;
  bool first_prompt = false;
  int64_t window = -1;
  float softcap = 0.f;
  bool smooth = false;
  const float* sink = nullptr;  // [N]
};
/// Device scratch (floats) the core needs.
int64_t attn_core_scratch_floats(const AttnCoreArgs& a);
void attn_core(Ty ty, const AttnCoreArgs& a, float* scratch, cudaStream_t s);
inline void attn_core_f32(const AttnCoreArgs& a, float* scratch, cudaStream_t s) { attn_core(Ty::kF32, a, scratch, s); }

/// MatMulNBits' weights: B [N, kb, blob] of `bits`-bit values (low bits first), scales [N, kb],
/// zero points packed uint8 [N, zp_blob] (zp_u8), float [N, kb] (zp_f), or none (2^(bits-1));
/// g_idx (may be null): column k uses block g_idx[k], else k / block.
struct NBitsWeights {
  const uint8_t* b = nullptr;
  const float* scales = nullptr;
  const uint8_t* zp_u8 = nullptr;
  const float* zp_f = nullptr;
  const int32_t* g_idx = nullptr;
  int64_t K = 0, N = 0, bits = 4, block = 32, kb = 0, blob = 0, zp_blob = 0;
};
/// W [N, K] fp32 (row n is output column n), for the GEMM path.
void nbits_dequantize_f32(const NBitsWeights& w, float* wt, cudaStream_t s);
/// Few rows (1..kNBitsGemvRows) of A [M, K]: y[M, N] = A W^T (+ bias[N]), dequantising on the fly.
constexpr int64_t kNBitsGemvRows = 4;
void nbits_gemv_f32(const NBitsWeights& w, const float* a, int64_t M, const float* bias, float* y, cudaStream_t s);
/// y[M, N] += bias[N] (after the GEMM of the dequantised weights).
void add_row_bias_f32(float* y, const float* bias, int64_t M, int64_t N, cudaStream_t s);

}  // namespace onyx::cuda
