// CPU kernels: com.microsoft Attention (BERT / GPT-2: the input projected by packed Q, K, V
// weights; past and present as one [2, B, N, T, H] tensor) and MultiHeadAttention (Q, K, V given;
// past_key / past_value; cross attention with K and V as [B, N, L, H]).
//
// Both gather the keys and values of every head into [B, N, T, H] buffers (the present outputs
// when asked for: past first, then the new ones; else a workspace), then run one attention core:
// per (batch, head, block of query rows), the scores of the block against every key on the fp32
// GEMM, the mask as ONNX Runtime applies it (mask_filter_value added where padding hides a key;
// then the attention bias), softmax over the keys causality leaves, and the weighted sum of values
// on the GEMM, written straight into the output's [B, S, N * Hv] layout. Causal attention stops
// each block at its last row's last key.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/attention_rows.hpp"
#include "kernels/common.hpp"
#include "kernels/gemm.hpp"
#include "kernels/manifest.hpp"
#include "kernels/reduce_math.hpp"

namespace onyx::cpu {

namespace {

/// Which keys a padding mask hides, in one of the forms ONNX Runtime takes.
struct KeyMask {
  enum Kind { kNone, kEnds, kEndsStarts, kRaw2d, kRaw3d, kRaw4d } kind = kNone;
  const Tensor* t = nullptr;
  int64_t max_seq = 0;  // kRaw4d: [B, 1, max, max]

  bool hides(int64_t b, int64_t s, int64_t j, int64_t B, int64_t S, int64_t T, int64_t P) const {
    switch (kind) {
      case kNone: return false;
      case kEnds: return j >= int_at(*t, b);
      case kEndsStarts: return j >= int_at(*t, b) || j < int_at(*t, B + b);
      case kRaw2d: return int_at(*t, b * T + j) == 0;
      case kRaw3d: return int_at(*t, (b * S + s) * T + j) == 0;
      case kRaw4d: return int_at(*t, (b * max_seq + P + s) * max_seq + j) == 0;
    }
    return false;
  }
};

/// Reads a mask input: 1-D [B] (ends) or [2B] (ends then starts), 2-D [B, T], 3-D [B, S, T] or 4-D
/// [B, 1, M, M] with M >= T (`allow` limits the forms: MultiHeadAttention's key_padding_mask
/// takes the first and the 2-D one).
KeyMask read_mask(const Tensor* m, int64_t B, int64_t S, int64_t T, int64_t P, bool attention_forms, const Node& node) {
  KeyMask k;
  if (!m) return k;
  if (m->dtype() != DType::kInt32) fail(ErrorCode::kInvalidArgument, node.label(), ": the mask must be int32, got ", dtype_name(m->dtype()));
  k.t = m;
  const Shape& s = m->shape();
  if (s.size() == 1 && s[0] == B) {
    k.kind = KeyMask::kEnds;
  } else if (attention_forms && s.size() == 1 && s[0] == 2 * B) {
    k.kind = KeyMask::kEndsStarts;
  } else if (s.size() == 2 && s[0] == B && s[1] == T) {
    k.kind = KeyMask::kRaw2d;
  } else if (attention_forms && s.size() == 3 && s[0] == B && s[1] == S && s[2] == T) {
    k.kind = KeyMask::kRaw3d;
  } else if (attention_forms && s.size() == 4 && s[0] == B && s[1] == 1 && s[2] == s[3] && s[2] >= T) {
    k.kind = KeyMask::kRaw4d;
    k.max_seq = s[2];
  } else {
    fail(ErrorCode::kInvalidArgument, node.label(), ": mask ", s.to_string(), " is none of the forms taken: [", B, "] (key lengths)",
         attention_forms ? ", [2B] (ends, starts), " : ", ", "[", B, ",", T, "]",
         attention_forms ? ", [B, S, T], [B, 1, M, M]" : "", " (total keys T = ", T, ")");
  }
  if (k.kind == KeyMask::kEnds || k.kind == KeyMask::kEndsStarts)
    for (int64_t e = 0; e < m->numel(); ++e)
      if (int_at(*m, e) < 0 || int_at(*m, e) > T)
        fail(ErrorCode::kInvalidArgument, node.label(), ": mask value ", int_at(*m, e), " at ", e, " is outside [0, ", T, "]");
  return k;
}

struct AttnProblem {
  int64_t B = 0, N = 0, S = 0, T = 0, P = 0, H = 0, Hv = 0;
  float scale = 1, mask_filter = -10000.0f;
  bool causal = false;
  const float* q = nullptr;  // Q(b, n, s) = q + b*q_sb + n*q_sn + s*q_ss (H values)
  int64_t q_sb = 0, q_sn = 0, q_ss = 0;
  const float* k = nullptr;  // [B, N, T, H]
  const float* v = nullptr;  // [B, N, T, Hv]
  float* y = nullptr;        // Y(b, n, s) = y + b*y_sb + n*y_sn + s*y_ss (Hv values)
  int64_t y_sb = 0, y_sn = 0, y_ss = 0;
  KeyMask mask;
  const float* bias = nullptr;  // attention_bias, element (b, n, s, j) at b*ab_b + n*ab_n + s*ab_s + j
  int64_t ab_b = 0, ab_n = 0, ab_s = 0;
  float* qk = nullptr;  // [B, N, S, T] raw scaled scores (MultiHeadAttention's qk output), or null
};

/// The attributes Attention and MultiHeadAttention share, read once.
struct AttnAttrs {
  int64_t heads = 0;
  bool causal = false;
  float scale = 0, mask_filter = -10000.0f;

  explicit AttnAttrs(const Node& n)
      : heads(n.attr_int("num_heads", 0)),
        causal(n.attr_int("unidirectional", 0) != 0),
        scale(n.attr_float("scale", 0.0f)),
        mask_filter(n.attr_float("mask_filter_value", -10000.0f)) {
    if (heads <= 0) fail(ErrorCode::kInvalidGraph, n.label(), ": num_heads must be positive");
  }

  /// A problem of these sizes under these attributes; its operands are the caller's to set.
  AttnProblem problem(int64_t B, int64_t S, int64_t T, int64_t P, int64_t H, int64_t Hv) const {
    AttnProblem p;
    p.B = B, p.N = heads, p.S = S, p.T = T, p.P = P, p.H = H, p.Hv = Hv;
    p.scale = scale > 0 ? scale : 1.0f / std::sqrt(static_cast<float>(H));
    p.mask_filter = mask_filter;
    p.causal = causal;
    return p;
  }
};

void run_attention(const AttnProblem& p, ThreadPool& pool) {
  const int64_t T = p.T, S = p.S;
  if (p.B * p.N * S == 0) return;
  if (T == 0) {  // no keys: zeros
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t n = 0; n < p.N; ++n)
        for (int64_t s = 0; s < S; ++s) std::fill_n(p.y + b * p.y_sb + n * p.y_sn + s * p.y_ss, p.Hv, 0.0f);
    return;
  }
  // A padding mask the same for every query row (key lengths, [B, T]) as an additive row per
  // batch: 0, or mask_filter_value where it hides the key.
  const bool per_batch = p.mask.kind == KeyMask::kEnds || p.mask.kind == KeyMask::kEndsStarts || p.mask.kind == KeyMask::kRaw2d;
  std::vector<float> pad;
  if (per_batch) {
    pad.assign(static_cast<size_t>(p.B * T), 0.0f);
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t j = 0; j < T; ++j)
        if (p.mask.hides(b, 0, j, p.B, S, T, p.P)) pad[b * T + j] = p.mask_filter;
  }
  // Causal attention leaves out the keys after a row's position (ONNX Runtime's softmax takes only
  // the keys up to it), so each block reads the keys up to its last row's position only; the raw
  // scores output (qk) has every key.
  const bool trim = p.causal && !p.qk;
  const int64_t block = std::clamp<int64_t>(16384 / T, 1, 64);
  const int64_t blocks = (S + block - 1) / block;
  parallel_range(pool, p.B * p.N * blocks, block * T * (p.H + p.Hv + 8), [&](int64_t t0, int64_t t1) {
    float* sc = reinterpret_cast<float*>(thread_workspace(Workspace::kAttention, static_cast<size_t>(block * T) * sizeof(float)));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t blk = t % blocks, n = (t / blocks) % p.N, b = t / (blocks * p.N);
      const int64_t s0 = blk * block, rows = std::min(block, S - s0);
      const int64_t tk = trim ? std::min(T, p.P + s0 + rows) : T;  // keys this block reads
      const float* pad_row = per_batch ? pad.data() + b * T : nullptr;
      const float* kb = p.k + (b * p.N + n) * T * p.H;
      const float* vb = p.v + (b * p.N + n) * T * p.Hv;
      const float* qb = p.q + b * p.q_sb + n * p.q_sn + s0 * p.q_ss;
      // A few query rows (a decode step): the scores and the weighted sums row by row, straight
      // from the keys and values (a GEMM would pack them to read them once).
      const bool by_rows = rows < 4;
      if (p.H == 0)
        std::fill_n(sc, rows * tk, 0.0f);
      else if (by_rows)
        for (int64_t r = 0; r < rows; ++r) attn_rows::key_scores(qb + r * p.q_ss, kb, tk, p.H, p.scale, sc + r * tk);
      else
        sgemm(false, true, rows, tk, p.H, p.scale, qb, p.q_ss, kb, p.H, 0.0f, sc, tk, nullptr);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t s = s0 + r;
        float* row = sc + r * tk;
        if (p.qk) std::memcpy(p.qk + ((b * p.N + n) * S + s) * T, row, sizeof(float) * tk);
        // As ONNX Runtime: mask_filter_value added where the padding mask hides a key, the
        // attention bias, and a softmax over the keys causality leaves (those up to the row's
        // position); the others weigh 0.
        const int64_t visible = p.causal ? std::clamp<int64_t>(p.P + s + 1, 0, tk) : tk;
        if (pad_row) {
          for (int64_t j = 0; j < visible; ++j) row[j] += pad_row[j];
        } else if (p.mask.kind != KeyMask::kNone) {
          for (int64_t j = 0; j < visible; ++j)
            if (p.mask.hides(b, s, j, p.B, S, T, p.P)) row[j] += p.mask_filter;
        }
        if (p.bias) {
          const float* br = p.bias + b * p.ab_b + n * p.ab_n + s * p.ab_s;
          for (int64_t j = 0; j < visible; ++j) row[j] += br[j];
        }
        if (visible > 0) {
          const float m = row_max_plain(row, visible);
          exp_le0_row(row, m, row, visible);
          const float inv = 1.0f / row_sum(row, visible);
          for (int64_t j = 0; j < visible; ++j) row[j] *= inv;
        }
        std::fill(row + visible, row + tk, 0.0f);
      }
      float* yb = p.y + b * p.y_sb + n * p.y_sn + s0 * p.y_ss;
      if (by_rows)
        for (int64_t r = 0; r < rows; ++r) attn_rows::weighted_values(sc + r * tk, vb, tk, p.Hv, yb + r * p.y_ss);
      else
        sgemm(false, false, rows, p.Hv, tk, 1.0f, sc, tk, vb, p.Hv, 0.0f, yb, p.y_ss, nullptr);
    }
  });
}

/// The attention_bias input: [B or 1, N or 1, S, T], float; its strides (0 where broadcast).
void read_attention_bias(const Tensor* ab, AttnProblem& p, const Node& node) {
  if (!ab) return;
  if (ab->dtype() != DType::kFloat) fail(ErrorCode::kInvalidArgument, node.label(), ": attention_bias must be float32");
  const Shape& s = ab->shape();
  if (s.size() != 4 || (s[0] != 1 && s[0] != p.B) || (s[1] != 1 && s[1] != p.N) || s[2] != p.S || s[3] != p.T)
    fail(ErrorCode::kInvalidArgument, node.label(), ": attention_bias ", s.to_string(), " must be [", p.B, " or 1, ", p.N, " or 1, ", p.S, ", ",
         p.T, "]");
  p.bias = ab->data<float>();
  p.ab_s = p.T;
  p.ab_n = s[1] == 1 ? 0 : p.S * p.T;
  p.ab_b = s[0] == 1 ? 0 : s[1] * p.S * p.T;
}

/// Copies `rows` rows of `width` floats from src (row stride `ld`) to dst (dense).
void copy_rows(const float* src, int64_t ld, float* dst, int64_t rows, int64_t width) {
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * width, src + r * ld, sizeof(float) * width);
}

void require_f32(const Tensor* t, const Node& node, const char* what) {
  if (t && t->dtype() != DType::kFloat) fail(ErrorCode::kInvalidArgument, node.label(), ": ", what, " must be float32, got ", dtype_name(t->dtype()));
}

// ---- Attention ----------------------------------------------------------------------------------

class MsAttentionKernel final : public Kernel {
 public:
  explicit MsAttentionKernel(const KernelCreateInfo& info) : node_(info.node), attrs_(info.node) {
    const Node& n = info.node;
    if (n.attr_int("do_rotary", 0) != 0) fail(ErrorCode::kNotImplemented, n.label(), ": do_rotary is not supported on the CPU EP");
    if (n.attr_int("past_present_share_buffer", 0) != 0)
      fail(ErrorCode::kNotImplemented, n.label(), ": past_present_share_buffer is not supported on the CPU EP (give past and take present)");
    sizes_ = n.attr_ints("qkv_hidden_sizes");
    const Tensor* w = info.constant(1);
    if (w && w->dtype() == DType::kFloat && w->rank() == 2)
      packed_w_ = std::make_shared<PackedMatrix>(pack_b(false, w->dim(0), w->dim(1), w->data<float>(), w->dim(1)));
  }

  void compute(KernelContext& ctx) const override {
    const Node& n = node_;
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* bias = ctx.optional_input(2);
    const Tensor* mask = ctx.num_inputs() > 3 ? ctx.optional_input(3) : nullptr;
    const Tensor* past = ctx.num_inputs() > 4 ? ctx.optional_input(4) : nullptr;
    const Tensor* ab = ctx.num_inputs() > 5 ? ctx.optional_input(5) : nullptr;
    for (const Tensor* t : {&x, &w, bias, past}) require_f32(t, n, "input, weights, bias and past");
    if (x.rank() != 3 || w.rank() != 2 || x.dim(2) != w.dim(0))
      fail(ErrorCode::kInvalidArgument, n.label(), ": input ", x.shape().to_string(), " must be [B, S, In] and weights ", w.shape().to_string(), " [In, .]");
    const int64_t B = x.dim(0), S = x.dim(1), In = x.dim(2), Dt = w.dim(1);
    int64_t dq = Dt / 3, dk = dq, dv = dq;
    if (!sizes_.empty()) dq = sizes_[0], dk = sizes_[1], dv = sizes_[2];
    if (dq + dk + dv != Dt || dq != dk || dq % attrs_.heads != 0 || dv % attrs_.heads != 0)
      fail(ErrorCode::kInvalidArgument, n.label(), ": weights' ", Dt, " columns do not split into Q, K, V hidden sizes divisible by ", attrs_.heads, " heads");
    if (bias && (bias->rank() != 1 || bias->dim(0) != Dt))
      fail(ErrorCode::kInvalidArgument, n.label(), ": bias ", bias->shape().to_string(), " must have ", Dt, " values");
    const int64_t N = attrs_.heads, H = dq / N, Hv = dv / N;
    int64_t P = 0;
    if (past) {
      if (past->rank() != 5 || past->dim(0) != 2 || past->dim(1) != B || past->dim(2) != N || past->dim(4) != H || H != Hv)
        fail(ErrorCode::kInvalidArgument, n.label(), ": past ", past->shape().to_string(), " must be [2, ", B, ", ", N, ", P, ", H, "]");
      P = past->dim(3);
    }
    const int64_t T = P + S;
    // QKV = input x weights + bias: [B * S, Dt].
    float* qkv = reinterpret_cast<float*>(thread_workspace(Workspace::kAttentionQkv, static_cast<size_t>(B * S * Dt) * sizeof(float)));
    if (B * S > 0 && Dt > 0) {
      GemmEpilogue ep;  // the bias per column, in the GEMM's epilogue
      ep.bias = bias ? bias->data<float>() : nullptr;
      const GemmEpilogue* epi = bias ? &ep : nullptr;
      if (In == 0)
        for (int64_t r = 0; r < B * S; ++r)
          for (int64_t c = 0; c < Dt; ++c) qkv[r * Dt + c] = ep.bias ? ep.bias[c] : 0.0f;
      else if (packed_w_)  // a constant: packed when the kernel was made
        sgemm_packed(nullptr, false, x.data<float>(), In, packed_w_.get(), false, nullptr, 0, B * S, Dt, In, 0.0f, qkv, Dt, &ctx.pool(), epi);
      else
        sgemm(false, false, B * S, Dt, In, 1.0f, x.data<float>(), In, w.data<float>(), Dt, 0.0f, qkv, Dt, &ctx.pool(), epi);
    }
    // Keys and values per head: present [2, B, N, T, H] when asked for, else a workspace.
    const bool want_present = ctx.num_outputs() > 1 && ctx.has_output(1);
    float* kv = want_present ? ctx.output(1).data<float>()
                             : reinterpret_cast<float*>(thread_workspace(Workspace::kAttentionKv, static_cast<size_t>(B * N * T * (H + Hv)) * sizeof(float)));
    float* kbuf = kv;
    float* vbuf = kv + B * N * T * H;
    parallel_range(ctx.pool(), B * N, T * (H + Hv), [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / N, h = t % N;
        float* kd = kbuf + t * T * H;
        float* vd = vbuf + t * T * Hv;
        if (P) {
          std::memcpy(kd, past->data<float>() + t * P * H, sizeof(float) * P * H);
          std::memcpy(vd, past->data<float>() + (B * N + t) * P * H, sizeof(float) * P * Hv);
        }
        copy_rows(qkv + b * S * Dt + dq + h * H, Dt, kd + P * H, S, H);
        copy_rows(qkv + b * S * Dt + dq + dk + h * Hv, Dt, vd + P * Hv, S, Hv);
      }
    });
    AttnProblem p = attrs_.problem(B, S, T, P, H, Hv);
    p.q = qkv, p.q_sb = S * Dt, p.q_ss = Dt, p.q_sn = H;
    p.k = kbuf, p.v = vbuf;
    p.y = ctx.output(0).data<float>(), p.y_sb = S * dv, p.y_ss = dv, p.y_sn = Hv;
    p.mask = read_mask(mask, B, S, T, P, true, n);
    read_attention_bias(ab, p, n);
    run_attention(p, ctx.pool());
  }

 private:
  const Node& node_;
  AttnAttrs attrs_;
  std::vector<int64_t> sizes_;
  std::shared_ptr<PackedMatrix> packed_w_;
};

std::unique_ptr<Kernel> make_ms_attention(const KernelCreateInfo& info) { return std::make_unique<MsAttentionKernel>(info); }

// ---- MultiHeadAttention ---------------------------------------------------------------------

class MhaKernel final : public Kernel {
 public:
  explicit MhaKernel(const KernelCreateInfo& info) : node_(info.node), attrs_(info.node) {
    const Node& n = info.node;
    for (size_t i = 8; i < n.inputs.size(); ++i)
      if (n.has_input(i))
        fail(ErrorCode::kNotImplemented, n.label(), ": ", i == 8 ? "past_sequence_length" : "cache_indirection",
             " (beam-search buffers) is not supported on the CPU EP");
  }

  void compute(KernelContext& ctx) const override {
    const Node& n = node_;
    const Tensor& q = ctx.input(0);
    const Tensor* k = ctx.optional_input(1);
    const Tensor* v = ctx.num_inputs() > 2 ? ctx.optional_input(2) : nullptr;
    const Tensor* bias = ctx.num_inputs() > 3 ? ctx.optional_input(3) : nullptr;
    const Tensor* kpm = ctx.num_inputs() > 4 ? ctx.optional_input(4) : nullptr;
    const Tensor* ab = ctx.num_inputs() > 5 ? ctx.optional_input(5) : nullptr;
    const Tensor* pk = ctx.num_inputs() > 6 ? ctx.optional_input(6) : nullptr;
    const Tensor* pv = ctx.num_inputs() > 7 ? ctx.optional_input(7) : nullptr;
    for (const Tensor* t : {&q, k, v, bias, pk, pv}) require_f32(t, n, "query, key, value, bias and the pasts");
    if (!k || !v) fail(ErrorCode::kNotImplemented, n.label(), ": key and value are required (packed QKV is not supported on the CPU EP)");
    if (q.rank() != 3) fail(ErrorCode::kNotImplemented, n.label(), ": query must be 3-D [B, S, D], got ", q.shape().to_string());
    if (!pk != !pv) fail(ErrorCode::kInvalidArgument, n.label(), ": past_key and past_value must be given together");
    const int64_t B = q.dim(0), S = q.dim(1), D = q.dim(2), N = attrs_.heads;
    if (D % N != 0) fail(ErrorCode::kInvalidArgument, n.label(), ": query's hidden size ", D, " is not divisible by ", N, " heads");
    const int64_t H = D / N;
    const bool bnsh = k->rank() == 4;
    if (k->rank() != v->rank() || (k->rank() != 3 && !bnsh))
      fail(ErrorCode::kInvalidArgument, n.label(), ": key ", k->shape().to_string(), " and value ", v->shape().to_string(),
           " must both be [B, L, D] or both [B, N, L, H]");
    int64_t L, Hv;
    if (bnsh) {
      L = k->dim(2), Hv = v->dim(3);
      if (!(k->shape() == Shape{B, N, L, H}) || v->dim(0) != B || v->dim(1) != N || v->dim(2) != L)
        fail(ErrorCode::kInvalidArgument, n.label(), ": key ", k->shape().to_string(), " / value ", v->shape().to_string(), " must be [", B, ", ", N,
             ", L, ", H, "]");
      if (pk) fail(ErrorCode::kInvalidArgument, n.label(), ": key and value as [B, N, L, H] are the whole cache; past_key is not taken with them");
      if (bias) fail(ErrorCode::kNotImplemented, n.label(), ": a bias with key and value as [B, N, L, H] is not supported");
    } else {
      L = k->dim(1);
      if (!(k->shape() == Shape{B, L, D}) || v->dim(0) != B || v->dim(1) != L || v->dim(2) % N != 0)
        fail(ErrorCode::kInvalidArgument, n.label(), ": key ", k->shape().to_string(), " / value ", v->shape().to_string(), " must be [", B,
             ", L, ", D, "] / [", B, ", L, Dv] with Dv divisible by ", N);
      Hv = v->dim(2) / N;
    }
    const int64_t Dv = Hv * N;
    if (bias && (bias->rank() != 1 || bias->dim(0) != 2 * D + Dv))
      fail(ErrorCode::kInvalidArgument, n.label(), ": bias ", bias->shape().to_string(), " must have ", 2 * D + Dv, " values");
    const int64_t P = pk ? pk->dim(2) : 0;
    if (pk && (!(pk->shape() == Shape{B, N, P, H}) || !(pv->shape() == Shape{B, N, P, Hv})))
      fail(ErrorCode::kInvalidArgument, n.label(), ": past_key ", pk->shape().to_string(), " / past_value ", pv->shape().to_string(), " must be [", B,
           ", ", N, ", P, ", H, "] / [", B, ", ", N, ", P, ", Hv, "]");
    const int64_t T = P + L;
    const float* pb = bias ? bias->data<float>() : nullptr;
    // Q (with its bias) read in place, or copied once with the bias added.
    const float* qd = q.data<float>();
    if (pb) {
      float* qs = reinterpret_cast<float*>(thread_workspace(Workspace::kAttentionQkv, static_cast<size_t>(B * S * D) * sizeof(float)));
      for (int64_t r = 0; r < B * S; ++r)
        for (int64_t j = 0; j < D; ++j) qs[r * D + j] = qd[r * D + j] + pb[j];
      qd = qs;
    }
    // Keys and values per head, in the presents when asked for.
    const bool want_k = ctx.num_outputs() > 1 && ctx.has_output(1), want_v = ctx.num_outputs() > 2 && ctx.has_output(2);
    const float* kbuf;
    const float* vbuf;
    if (bnsh && !want_k && !want_v) {
      kbuf = k->data<float>();
      vbuf = v->data<float>();
    } else {
      float* ws = (want_k && want_v) ? nullptr
                                     : reinterpret_cast<float*>(thread_workspace(Workspace::kAttentionKv, static_cast<size_t>(B * N * T * (H + Hv)) * sizeof(float)));
      float* kd = want_k ? ctx.output(1).data<float>() : ws;
      float* vd = want_v ? ctx.output(2).data<float>() : (ws ? ws + B * N * T * H : nullptr);
      gather_heads(pk, k, bnsh, pb ? pb + D : nullptr, kd, B, N, P, L, H, D, ctx.pool());
      gather_heads(pv, v, bnsh, pb ? pb + 2 * D : nullptr, vd, B, N, P, L, Hv, Dv, ctx.pool());
      kbuf = kd;
      vbuf = vd;
    }
    AttnProblem p = attrs_.problem(B, S, T, P, H, Hv);
    p.q = qd, p.q_sb = S * D, p.q_ss = D, p.q_sn = H;
    p.k = kbuf, p.v = vbuf;
    p.y = ctx.output(0).data<float>(), p.y_sb = S * Dv, p.y_ss = Dv, p.y_sn = Hv;
    p.mask = read_mask(kpm, B, S, T, P, false, n);
    read_attention_bias(ab, p, n);
    if (ctx.num_outputs() > 3 && ctx.has_output(3)) p.qk = ctx.output(3).data<float>();
    run_attention(p, ctx.pool());
  }

 private:
  /// dst [B, N, P + L, W]: past's rows, then the new ones (x [B, L, N * W] plus the bias, or
  /// x [B, N, L, W] as it is).
  static void gather_heads(const Tensor* past, const Tensor* x, bool bnsh, const float* bias, float* dst, int64_t B, int64_t N, int64_t P,
                           int64_t L, int64_t W, int64_t stride, ThreadPool& pool) {
    const int64_t T = P + L;
    const float* px = x->data<float>();
    parallel_range(pool, B * N, T * W, [&](int64_t t0, int64_t t1) {  // over (batch, head)
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / N, h = t % N;
        float* d = dst + t * T * W;
        if (P) std::memcpy(d, past->data<float>() + t * P * W, sizeof(float) * P * W);
        if (bnsh) {
          std::memcpy(d + P * W, px + t * L * W, sizeof(float) * L * W);
          continue;
        }
        copy_rows(px + b * L * stride + h * W, stride, d + P * W, L, W);
        if (bias)
          for (int64_t r = 0; r < L; ++r)
            for (int64_t j = 0; j < W; ++j) d[(P + r) * W + j] += bias[h * W + j];
      }
    });
  }

  const Node& node_;
  AttnAttrs attrs_;
};

std::unique_ptr<Kernel> make_mha(const KernelCreateInfo& info) { return std::make_unique<MhaKernel>(info); }

const KernelDef kDefs[] = {
    {"com.microsoft", "Attention", 1, 1, {{0, types::kFloat}}, make_ms_attention},
    {"com.microsoft", "MultiHeadAttention", 1, 1, {{0, types::kFloat}}, make_mha},
};

}  // namespace

std::span<const KernelDef> contrib_attention_kernels() { return kDefs; }

}  // namespace onyx::cpu
