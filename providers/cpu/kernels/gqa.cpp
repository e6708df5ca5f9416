// CPU kernels: com.microsoft GroupQueryAttention and RotaryEmbedding (ONNX Runtime's LLM ops).
//
// GroupQueryAttention: causal attention of each query token over its batch entry's keys (the
// past ones, then the new ones), query head h reading kv head h / (N / Nkv). seqlens_k[b] + 1 is
// entry b's total length; the first prompt (sequence length == total_sequence_length) has no
// past, later calls have total - S past tokens. The new keys (rotated when do_rotary) and values
// are written into present at the entry's past length; the present buffer is
// max(total_sequence_length, past buffer) long. When the past buffer already holds the whole
// sequence, present may share it (Kernel::inplace_input): the kernel then only writes the new
// rows. Unshared, it copies the whole past buffer in that case (so the result is the same either
// way), and otherwise zero-fills what the entry does not define, as ONNX Runtime does.
//
// Prefill: blocks of query rows of all the query heads of one kv head stacked into one matrix,
// scores by sgemm, softmax in place, values by sgemm; threaded over (batch, kv head, row block).
// Decode (one query token): per (batch, head), scores vectorised over keys (a block of keys'
// dot products reduced by a transpose), threaded over (batch, head). float16 computes in float,
// rounding the rotated query and key to float16 as ONNX Runtime does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/attention_rows.hpp"
#include "kernels/common.hpp"
#include "kernels/gemm.hpp"
#include "kernels/manifest.hpp"
#include "kernels/qmath.hpp"
#include "kernels/reduce_math.hpp"
#include "kernels/vmath.hpp"

namespace onyx::cpu {

namespace {

using vmath::kLanes;
using vmath::vf;

using attn_rows::to_f;
template <class T>
inline T from_f(float v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else return T(v);
}

/// y[0, n) = x[0, n) as float.
template <class T>
void to_float_row(const T* x, float* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
  } else {
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) vmath::store(y + i, qmath::load_float(x + i));
    for (; i < n; ++i) y[i] = to_f(x[i]);
  }
}
/// y[0, n) = x[0, n) rounded to T.
template <class T>
void from_float_row(const float* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
  } else {
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) qmath::store_float(y + i, vmath::load(x + i));
    for (; i < n; ++i) y[i] = from_f<T>(x[i]);
  }
}

/// Rotates the first rd values of one head (halves, or interleaved pairs) by the angles of one
/// cache row, in float, rounding each result to T; values [rd, H) are copied.
template <class T>
void rope_row(const T* x, T* y, int64_t H, int64_t rd, bool interleaved, const T* cosr, const T* sinr) {
  const int64_t half = rd / 2;
  for (int64_t e = 0; e < half; ++e) {
    const int64_t i1 = interleaved ? 2 * e : e, i2 = interleaved ? 2 * e + 1 : e + half;
    const float a = to_f(x[i1]), b = to_f(x[i2]), c = to_f(cosr[e]), s = to_f(sinr[e]);
    const float r1 = a * c - b * s, r2 = a * s + b * c;
    y[i1] = from_f<T>(r1);
    y[i2] = from_f<T>(r2);
  }
  if (x != y)
    for (int64_t e = rd; e < H; ++e) y[e] = x[e];
}

/// Checks every position id lies in [0, rows) of the caches.
void check_positions(const Tensor& pos, int64_t rows, const Node& node) {
  const int64_t* p = pos.data<int64_t>();
  for (int64_t i = 0; i < pos.numel(); ++i)
    if (p[i] < 0 || p[i] >= rows)
      fail(ErrorCode::kInvalidArgument, node.label(), ": position_ids value ", p[i], " at index ", i,
           " is outside the cos/sin cache's ", rows, " positions");
}

// ---------------------------------------------------------------------------------------------
// GroupQueryAttention

struct GqaAttrs {
  int64_t heads = 0, kv_heads = 0;
  float scale = 0, softcap = 0;
  int64_t window = -1;
  bool rotary = false, interleaved = false, smooth = false;
  int qk_mode = 0;
};

/// What one call computes, after the checks.
struct GqaShape {
  int64_t B = 0, S = 0, N = 0, Nkv = 0, H = 0, group = 1;
  int64_t P = 0, L = 0, total = 0;  // past buffer, present buffer, total_sequence_length
  int64_t rd = 0;                   // rotary dims
  bool packed = false, first_prompt = false;
  int64_t q_row = 0;                // elements between query tokens (N H, or (N + 2 Nkv) H packed)
  int64_t kv_row = 0;               // between key (value) tokens
};

/// The row extras the softmax of one query row needs.
template <class T>
struct RowCtx {
  const T* bias = nullptr;  // the row's attention_bias, indexed by absolute key position
  float sink = 0;
  bool has_sink = false;
  T* qk = nullptr;          // the row's output_qk (total_sequence_length values), or null
};

/// Scores of one query row for keys [k0, k0 + n) in sc (already scaled); the row attends to keys
/// [a, e). Leaves the probabilities in sc (zeros outside [a, e)) and fills the qk row.
template <class T>
void softmax_row(const GqaAttrs& at, float* sc, int64_t k0, int64_t n, int64_t a, int64_t e, int64_t total, const RowCtx<T>& rc) {
  const int64_t lo = std::clamp<int64_t>(a - k0, 0, n), hi = std::clamp<int64_t>(e - k0, lo, n);
  for (int64_t j = 0; j < lo; ++j) sc[j] = 0;
  for (int64_t j = hi; j < n; ++j) sc[j] = 0;
  float* r = sc + lo;
  const int64_t m = hi - lo;
  auto write_qk = [&]() {
    if (!rc.qk) return;
    for (int64_t j = 0; j < total; ++j) rc.qk[j] = from_f<T>(0.0f);
    for (int64_t j = 0; j < m; ++j) rc.qk[k0 + lo + j] = from_f<T>(r[j]);
  };
  if (m <= 0) {
    write_qk();
    return;
  }
  if (at.softcap > 0) {
    const float c = at.softcap, inv = 1.0f / at.softcap;
    vmath::map(r, r, m, [&](vf v) { return vmath::tanh(v * inv) * c; });
  }
  if (rc.bias)
    for (int64_t j = 0; j < m; ++j) r[j] += to_f(rc.bias[k0 + lo + j]);
  if (at.qk_mode == 1) write_qk();
  float mx = row_max_plain(r, m);
  const bool sink = rc.has_sink || at.smooth;
  const float sv = rc.has_sink ? rc.sink : 0.0f;
  if (sink) mx = std::max(mx, sv);
  exp_le0_row(r, mx, r, m);
  float sum = row_sum(r, m);
  if (sink) sum += std::exp(sv - mx);
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < m; ++j) r[j] *= inv;
  if (at.qk_mode == 2) write_qk();
}

class GqaKernel final : public Kernel {
 public:
  GqaKernel(const Node& node, GqaAttrs at) : node_(node), at_(at) {}

  void compute(KernelContext& ctx) const override {
    const DType t = ctx.input(0).dtype();
    if (t == DType::kFloat) run<float>(ctx);
    else if (t == DType::kFloat16) run<Float16>(ctx);
    else fail(ErrorCode::kNotImplemented, node_.label(), ": GroupQueryAttention on ", dtype_name(t), " (float and float16 only)");
  }
  // present_key / present_value may be computed in the past buffers (equal shapes: the past
  // buffer holds the whole sequence).
  int inplace_input(size_t out) const override { return out == 1 ? 3 : out == 2 ? 4 : -1; }

 private:
  template <class... A>
  [[noreturn]] void bad(const A&... args) const {
    fail(ErrorCode::kInvalidArgument, node_.label(), ": ", args...);
  }

  GqaShape check(KernelContext& ctx) const;
  template <class T>
  void run(KernelContext& ctx) const;

  const Node& node_;
  GqaAttrs at_;
};

GqaShape GqaKernel::check(KernelContext& ctx) const {
  GqaShape g;
  const Tensor& q = ctx.input(0);
  const Tensor* k = ctx.optional_input(1);
  const Tensor* v = ctx.optional_input(2);
  const Tensor* pk = ctx.optional_input(3);
  const Tensor* pv = ctx.optional_input(4);
  const Tensor& seqlens = ctx.input(5);
  const Tensor& total = ctx.input(6);
  const DType t = q.dtype();
  g.N = at_.heads;
  g.Nkv = at_.kv_heads;
  g.group = g.N / g.Nkv;
  if (q.rank() != 3) bad("query must be 3-D [batch, sequence, hidden], got ", q.shape().to_string());
  g.B = q.dim(0);
  g.S = q.dim(1);
  g.packed = k == nullptr;
  if (!k != !v) bad("key and value must be given together (or neither, for packed QKV)");
  const int64_t parts = g.packed ? g.N + 2 * g.Nkv : g.N;
  if (q.dim(2) % parts != 0 || q.dim(2) == 0)
    bad("query's hidden size ", q.dim(2), " is not a positive multiple of ", parts, g.packed ? " (num_heads + 2 kv_num_heads)" : " (num_heads)");
  g.H = q.dim(2) / parts;
  g.q_row = q.dim(2);
  g.kv_row = g.packed ? q.dim(2) : g.Nkv * g.H;
  if (!g.packed)
    for (const Tensor* x : {k, v})
      if (!(x->shape() == Shape{g.B, g.S, g.Nkv * g.H}) || x->dtype() != t)
        bad(x == k ? "key " : "value ", dtype_name(x->dtype()), x->shape().to_string(), " must be ", dtype_name(t), " [", g.B, ",", g.S,
            ",", g.Nkv * g.H, "]");
  if (!pk != !pv) bad("past_key and past_value must be given together");
  if (pk) {
    if (pk->dtype() != t || pv->dtype() != t)
      fail(ErrorCode::kNotImplemented, node_.label(), ": a past cache of type ", dtype_name(pk->dtype()),
           " (quantized KV caches are not supported; the cache must have the query's type ", dtype_name(t), ")");
    g.P = pk->rank() == 4 ? pk->dim(2) : -1;
    if (!(pk->shape() == Shape{g.B, g.Nkv, g.P, g.H}) || !(pv->shape() == pk->shape()))
      bad("past_key ", pk->shape().to_string(), " and past_value ", pv->shape().to_string(), " must both be [", g.B, ",", g.Nkv,
          ", past length, ", g.H, "]");
  }
  // [B], or [B, 1] as ONNX Runtime's LLM tools make it (a ReduceSum keeping its axis).
  if (seqlens.dtype() != DType::kInt32 || seqlens.numel() != g.B || seqlens.rank() < 1 || seqlens.rank() > 2 || seqlens.dim(0) != g.B)
    bad("seqlens_k must be int32 [", g.B, "] (or [", g.B, ", 1]), got ", dtype_name(seqlens.dtype()), seqlens.shape().to_string());
  if (total.dtype() != DType::kInt32 || total.numel() != 1)
    bad("total_sequence_length must be one int32, got ", dtype_name(total.dtype()), total.shape().to_string());
  g.total = total.data<int32_t>()[0];
  if (g.total < 1) bad("total_sequence_length must be positive, got ", g.total);
  g.L = std::max(g.total, g.P);
  // The first prompt (no past), a later prompt chunk (one batch entry), or token generation.
  if (g.S > 1 && g.S != g.total && g.B != 1)
    bad("with ", g.S, " new tokens and total_sequence_length ", g.total, " (a prompt after past context) the batch size must be 1, got ", g.B);
  g.first_prompt = g.S == g.total;
  const int32_t* sl = seqlens.data<int32_t>();
  for (int64_t b = 0; b < g.B; ++b) {
    const int64_t tot = static_cast<int64_t>(sl[b]) + 1;
    if (tot < 1 || tot > g.total) bad("seqlens_k[", b, "] = ", sl[b], " is outside [0, total_sequence_length - 1 = ", g.total - 1, "]");
    if (!g.first_prompt) {
      const int64_t past = tot - g.S;
      if (past < 0) bad("seqlens_k[", b, "] = ", sl[b], " leaves no room for the ", g.S, " new tokens");
      if (past > g.P) bad("seqlens_k[", b, "] = ", sl[b], " needs ", past, " past tokens but the past buffer holds ", g.P);
    }
  }
  if (at_.rotary) {
    const Tensor* cc = ctx.optional_input(7);
    const Tensor* sc = ctx.optional_input(8);
    if (!cc || !sc) bad("do_rotary needs cos_cache and sin_cache");
    if (cc->rank() != 2 || !(cc->shape() == sc->shape()) || cc->dtype() != t || sc->dtype() != t)
      bad("cos_cache ", dtype_name(cc->dtype()), cc->shape().to_string(), " and sin_cache ", dtype_name(sc->dtype()), sc->shape().to_string(),
          " must be ", dtype_name(t), " [max_position, rotary_dim / 2] of one shape");
    g.rd = 2 * cc->dim(1);
    if (g.rd <= 0 || g.rd > g.H) bad("cos_cache's ", cc->dim(1), " columns give a rotary dim of ", g.rd, " for a head size of ", g.H);
    if (cc->dim(0) < g.total) bad("cos_cache has ", cc->dim(0), " positions for a total_sequence_length of ", g.total);
    if (const Tensor* pos = ctx.optional_input(9)) {
      if (pos->dtype() != DType::kInt64 || !(pos->shape() == Shape{g.B, g.S}))
        bad("position_ids must be int64 [", g.B, ",", g.S, "], got ", dtype_name(pos->dtype()), pos->shape().to_string());
      check_positions(*pos, cc->dim(0), node_);
    }
  }
  if (const Tensor* bias = ctx.optional_input(10)) {
    if (bias->rank() != 4 || (bias->dim(0) != 1 && bias->dim(0) != g.B) || (bias->dim(1) != 1 && bias->dim(1) != g.N) ||
        bias->dim(2) != g.S || bias->dim(3) != g.total || bias->dtype() != t)
      bad("attention_bias ", dtype_name(bias->dtype()), bias->shape().to_string(), " must be ", dtype_name(t), " [", g.B, " or 1, ", g.N,
          " or 1, ", g.S, ", ", g.total, "]");
  }
  if (const Tensor* sink = ctx.optional_input(11))
    if (sink->numel() != g.N || sink->rank() != 1 || sink->dtype() != t)
      bad("head_sink ", dtype_name(sink->dtype()), sink->shape().to_string(), " must be ", dtype_name(t), " [", g.N, "]");
  return g;
}

template <class T>
void GqaKernel::run(KernelContext& ctx) const {
  const GqaShape g = check(ctx);
  const GqaAttrs& at = at_;
  const int64_t B = g.B, S = g.S, N = g.N, Nkv = g.Nkv, H = g.H, L = g.L, P = g.P, G = g.group;
  const T* pq = ctx.input(0).data<T>();
  // Where query / key / value token s of entry b and head h starts.
  const T* pk_new = g.packed ? pq + N * H : ctx.input(1).data<T>();
  const T* pv_new = g.packed ? pq + (N + Nkv) * H : ctx.input(2).data<T>();
  const Tensor* past_k = ctx.optional_input(3);
  const Tensor* past_v = ctx.optional_input(4);
  const int32_t* sl = ctx.input(5).data<int32_t>();
  const T* cosc = at.rotary ? ctx.input(7).data<T>() : nullptr;
  const T* sinc = at.rotary ? ctx.input(8).data<T>() : nullptr;
  const int64_t half = g.rd / 2;
  const Tensor* pos = at.rotary ? ctx.optional_input(9) : nullptr;
  const int64_t* pos_ids = pos ? pos->data<int64_t>() : nullptr;
  const Tensor* bias = ctx.optional_input(10);
  const Tensor* sink = ctx.optional_input(11);

  Tensor& y = ctx.allocate_output(0, ctx.input(0).dtype(), Shape{B, S, N * H});
  const Shape cache_shape{B, Nkv, L, H};
  Tensor local_k, local_v;
  Tensor* pres_k;
  Tensor* pres_v;
  if (ctx.has_output(1)) pres_k = &ctx.allocate_output(1, y.dtype(), cache_shape);
  else pres_k = &(local_k = Tensor(y.dtype(), cache_shape));
  if (ctx.num_outputs() > 2 && ctx.has_output(2)) pres_v = &ctx.allocate_output(2, y.dtype(), cache_shape);
  else pres_v = &(local_v = Tensor(y.dtype(), cache_shape));
  T* qk_out = nullptr;
  if (ctx.num_outputs() > 3 && ctx.has_output(3)) {
    Tensor& qk = ctx.allocate_output(3, y.dtype(), Shape{B, N, S, g.total});
    qk_out = qk.data<T>();
    if (at.qk_mode == 0) std::memset(qk.raw_data(), 0, qk.nbytes());
    if (at.qk_mode == 0) qk_out = nullptr;
  }
  T* ck = pres_k->data<T>();
  T* cv = pres_v->data<T>();
  const T* ppk = past_k ? past_k->data<T>() : nullptr;
  const T* ppv = past_v ? past_v->data<T>() : nullptr;

  auto past_len = [&](int64_t b) { return g.first_prompt ? int64_t(0) : static_cast<int64_t>(sl[b]) + 1 - S; };
  auto position = [&](int64_t b, int64_t s) { return pos_ids ? pos_ids[b * S + s] : past_len(b) + s; };

  // 1. present: the past rows, then the new keys (rotated) and values at the past length.
  parallel_range(ctx.pool(), B * Nkv, L * H * 2, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / Nkv, kh = r % Nkv, past = past_len(b);
      for (int which = 0; which < 2; ++which) {
        T* dst = (which == 0 ? ck : cv) + r * L * H;
        const T* src = ppk ? (which == 0 ? ppk : ppv) + r * P * H : nullptr;
        if (src != dst) {
          if (src && P == L) {
            std::memcpy(dst, src, sizeof(T) * static_cast<size_t>(L * H));
          } else {
            if (src && past > 0) std::memcpy(dst, src, sizeof(T) * static_cast<size_t>(past * H));
            std::memset(static_cast<void*>(dst + (past + S) * H), 0, sizeof(T) * static_cast<size_t>((L - past - S) * H));
          }
        }
        const T* base = (which == 0 ? pk_new : pv_new) + b * S * g.kv_row + kh * H;
        for (int64_t s = 0; s < S; ++s) {
          const T* x = base + s * g.kv_row;
          T* d = dst + (past + s) * H;
          if (which == 0 && at.rotary) {
            const int64_t p = position(b, s);
            rope_row(x, d, H, g.rd, at.interleaved, cosc + p * half, sinc + p * half);
          } else {
            std::memcpy(d, x, sizeof(T) * static_cast<size_t>(H));
          }
        }
      }
    }
  });

  const float scale = at.scale != 0 ? at.scale : 1.0f / std::sqrt(static_cast<float>(H));
  const int64_t bias_b = bias ? (bias->dim(0) == 1 ? 0 : 1) : 0, bias_h = bias ? (bias->dim(1) == 1 ? 0 : 1) : 0;
  const T* pbias = bias ? bias->data<T>() : nullptr;
  const T* psink = sink ? sink->data<T>() : nullptr;
  auto row_ctx = [&](int64_t b, int64_t h, int64_t s) {
    RowCtx<T> rc;
    if (pbias) rc.bias = pbias + ((b * bias_b * (bias_h ? N : 1) + h * bias_h) * S + s) * g.total;
    if (psink) {
      rc.has_sink = true;
      rc.sink = to_f(psink[h]);
    }
    if (qk_out) rc.qk = qk_out + ((b * N + h) * S + s) * g.total;
    return rc;
  };
  // Keys [a, e) that query token s of entry b attends to: causal up to its position (at most the
  // entry's last key), and the local window.
  auto key_range = [&](int64_t b, int64_t s, int64_t& a, int64_t& e) {
    const int64_t p = past_len(b) + s, tot = static_cast<int64_t>(sl[b]) + 1;
    e = std::min(p, tot - 1) + 1;
    a = at.window > 0 ? std::max<int64_t>(0, p - at.window + 1) : 0;
  };
  // Query token s of entry b, head h, as float (rotated, rounded to T as ONNX Runtime's buffer).
  auto load_query = [&](int64_t b, int64_t s, int64_t h, float* dst, T* tmp) {
    const T* x = pq + (b * S + s) * g.q_row + h * H;
    if (at.rotary) {
      const int64_t p = position(b, s);
      rope_row(x, tmp, H, g.rd, at.interleaved, cosc + p * half, sinc + p * half);
      x = tmp;
    }
    to_float_row(x, dst, H);
  };
  T* py = y.data<T>();

  if (S == 1) {
    // 2a. Decode: one query row per (batch, head).
    parallel_range(ctx.pool(), B * N, L * H * 2, [&](int64_t t0, int64_t t1) {
      float *qv = nullptr, *sc = nullptr, *acc = nullptr;
      T* tmp = nullptr;
      carve(Workspace::kAttention, [&](Carver& c) {
        qv = c.take<float>(H + kLanes);
        acc = c.take<float>(H + kLanes);
        sc = c.take<float>(L + kLanes);
        tmp = c.take<T>(H);
      });
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / N, h = t % N, kh = h / G;
        int64_t a, e;
        key_range(b, 0, a, e);
        load_query(b, 0, h, qv, tmp);
        const T* kr = ck + (b * Nkv + kh) * L * H;
        const T* vr = cv + (b * Nkv + kh) * L * H;
        const int64_t n = std::max<int64_t>(e - a, 0);
        attn_rows::key_scores(qv, kr + a * H, n, H, scale, sc);
        softmax_row(at, sc, a, n, a, e, g.total, row_ctx(b, h, 0));
        attn_rows::weighted_values(sc, vr + a * H, n, H, acc);  // the probability-weighted sum of the values
        from_float_row(acc, py + b * N * H + h * H, H);
      }
    });
    return;
  }

  // 2b. Prefill: blocks of R query rows of the G heads sharing a kv head.
  int64_t R = std::min<int64_t>(S, std::max<int64_t>(8, 64 / G));
  const int64_t want_tasks = 4 * static_cast<int64_t>(ctx.pool().num_threads());
  while (R > 8 && B * Nkv * ((S + R - 1) / R) < want_tasks) R = (R + 1) / 2;
  const int64_t blocks = (S + R - 1) / R;
  const int64_t M = G * R;
  parallel_range(ctx.pool(), B * Nkv * blocks, M * L * H * 4, [&](int64_t t0, int64_t t1) {
    float *qb = nullptr, *sc = nullptr, *ob = nullptr, *kf = nullptr, *vfl = nullptr;
    T* tmp = nullptr;
    const bool half_t = !std::is_same_v<T, float>;
    carve(Workspace::kAttention, [&](Carver& c) {
      qb = c.take<float>(M * H);
      ob = c.take<float>(M * H);
      sc = c.take<float>(M * L);
      tmp = c.take<T>(H);
      if (half_t) {
        kf = c.take<float>(L * H);
        vfl = c.take<float>(L * H);
      }
    });
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t blk = t % blocks, kh = (t / blocks) % Nkv, b = t / (blocks * Nkv);
      const int64_t r0 = blk * R, rows = std::min(R, S - r0), m = G * rows;
      // The block's key columns: from the first row's window start to the last row's end.
      int64_t k0, unused, k1;
      key_range(b, r0, k0, unused);
      key_range(b, r0 + rows - 1, unused, k1);
      const int64_t n = k1 - k0;
      if (n <= 0) {
        for (int64_t gi = 0; gi < G; ++gi)
          for (int64_t i = 0; i < rows; ++i) {
            const int64_t h = kh * G + gi;
            T* yr = py + (b * S + r0 + i) * N * H + h * H;
            for (int64_t x = 0; x < H; ++x) yr[x] = from_f<T>(0.0f);
            const RowCtx<T> rc = row_ctx(b, h, r0 + i);
            if (rc.qk)
              for (int64_t j = 0; j < g.total; ++j) rc.qk[j] = from_f<T>(0.0f);
          }
        continue;
      }
      for (int64_t gi = 0; gi < G; ++gi)
        for (int64_t i = 0; i < rows; ++i) load_query(b, r0 + i, kh * G + gi, qb + (gi * rows + i) * H, tmp);
      const T* kr = ck + ((b * Nkv + kh) * L + k0) * H;
      const T* vr = cv + ((b * Nkv + kh) * L + k0) * H;
      const float* kp;
      const float* vp;
      if constexpr (std::is_same_v<T, float>) {
        kp = kr;
        vp = vr;
      } else {
        to_float_row(kr, kf, n * H);
        to_float_row(vr, vfl, n * H);
        kp = kf;
        vp = vfl;
      }
      sgemm(false, true, m, n, H, scale, qb, H, kp, H, 0.0f, sc, n, nullptr);
      for (int64_t gi = 0; gi < G; ++gi)
        for (int64_t i = 0; i < rows; ++i) {
          int64_t a, e;
          key_range(b, r0 + i, a, e);
          softmax_row(at, sc + (gi * rows + i) * n, k0, n, a, e, g.total, row_ctx(b, kh * G + gi, r0 + i));
        }
      sgemm(false, false, m, H, n, 1.0f, sc, n, vp, H, 0.0f, ob, H, nullptr);
      for (int64_t gi = 0; gi < G; ++gi)
        for (int64_t i = 0; i < rows; ++i)
          from_float_row(ob + (gi * rows + i) * H, py + (b * S + r0 + i) * N * H + (kh * G + gi) * H, H);
    }
  });
}

std::unique_ptr<Kernel> make_gqa(const KernelCreateInfo& info) {
  const Node& n = info.node;
  GqaAttrs at;
  at.heads = n.attr_int("num_heads", 0);
  at.kv_heads = n.attr_int("kv_num_heads", 0);
  if (at.heads <= 0 || at.kv_heads <= 0 || at.heads % at.kv_heads != 0)
    fail(ErrorCode::kInvalidGraph, n.label(), ": num_heads (", at.heads, ") must be a positive multiple of kv_num_heads (", at.kv_heads, ")");
  at.scale = n.attr_float("scale", 0.0f);
  at.softcap = n.attr_float("softcap", 0.0f);
  at.window = n.attr_int("local_window_size", -1);
  at.rotary = n.attr_int("do_rotary", 0) == 1;
  at.interleaved = n.attr_int("rotary_interleaved", 0) == 1;
  at.smooth = n.attr_int("smooth_softmax", 0) == 1;
  at.qk_mode = static_cast<int>(n.attr_int("qk_output", 0));
  if (at.qk_mode < 0 || at.qk_mode > 2) fail(ErrorCode::kInvalidGraph, n.label(), ": qk_output must be 0, 1 or 2, got ", at.qk_mode);
  if (at.window == 0 || at.window < -1) fail(ErrorCode::kInvalidGraph, n.label(), ": local_window_size must be -1 or positive, got ", at.window);
  // What this kernel does not implement: an explicit error naming it.
  auto unsupported = [&](const auto&... what) { fail(ErrorCode::kNotImplemented, n.label(), ": GroupQueryAttention with ", what..., " is not supported on CPU"); };
  if (n.attr_int("causal", 1) != 1) unsupported("causal=", n.attr_int("causal", 1), " (non-causal attention)");
  if (n.attr_int("sliding_window_cache", 0) != 0) unsupported("sliding_window_cache=1 (a windowed KV cache)");
  if (n.has_attr("kv_cache_bit_width")) unsupported("kv_cache_bit_width (a quantized KV cache)");
  for (const char* a : {"k_quant_type", "v_quant_type"})
    if (n.has_attr(a) && n.attr_string(a, "NONE") != "NONE") unsupported(a, "=", n.attr_string(a, "NONE"), " (a quantized KV cache)");
  static const char* const kExtra[] = {"k_scale", "v_scale", "q_norm_weight", "k_norm_weight", "query_seqlens"};
  for (size_t i = 12; i < n.inputs.size(); ++i)
    if (n.inputs[i] >= 0) unsupported("input ", i, " (", i - 12 < 5 ? kExtra[i - 12] : "unknown", ")");
  return std::make_unique<GqaKernel>(n, at);
}

// ---------------------------------------------------------------------------------------------
// RotaryEmbedding (com.microsoft): input [B, S, hidden] (heads of head_size: rotary_embedding_dim
// absent, head_size = 2 x the cache's columns; else hidden / num_heads) or [B, N, S, H];
// position_ids [B, S], or one start offset (token s at offset + s).

struct MsRotaryAttrs {
  int64_t heads = 0, rotary_dim = 0;
  bool interleaved = false;
};

template <class T>
void ms_rotary_typed(const MsRotaryAttrs& st, KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& pos = ctx.input(1);
  const Tensor& cc = ctx.input(2);
  const Tensor& sc = ctx.input(3);
  auto bad = [&](const auto&... a) { fail(ErrorCode::kInvalidArgument, node.label(), ": ", a...); };
  if (x.rank() != 3 && x.rank() != 4) bad("input must be 3-D or 4-D, got ", x.shape().to_string());
  if (cc.rank() != 2 || !(cc.shape() == sc.shape()) || cc.dtype() != x.dtype() || sc.dtype() != x.dtype())
    bad("cos_cache ", cc.shape().to_string(), " and sin_cache ", sc.shape().to_string(), " must be 2-D of one shape and the input's type");
  if (pos.dtype() != DType::kInt64) bad("position_ids must be int64, got ", dtype_name(pos.dtype()));
  const bool four = x.rank() == 4;
  const int64_t B = x.dim(0), S = four ? x.dim(2) : x.dim(1), hidden = four ? x.dim(1) * x.dim(3) : x.dim(2);
  const int64_t half_cache = cc.dim(1), max_pos = cc.dim(0);
  if (st.rotary_dim > 0 && st.heads <= 0) bad("rotary_embedding_dim needs num_heads");
  int64_t H;
  if (four) H = x.dim(3);
  else if (st.rotary_dim > 0) {
    if (hidden % st.heads != 0) bad("hidden size ", hidden, " is not divisible by num_heads ", st.heads);
    H = hidden / st.heads;
  } else {
    H = 2 * half_cache;
  }
  if (H <= 0 || hidden % H != 0) bad("hidden size ", hidden, " is not a multiple of the head size ", H);
  const int64_t N = hidden / H;
  if (!four && st.heads > 0 && st.heads != N) bad("num_heads ", st.heads, " does not match the cache's head size ", H, " (", N, " heads)");
  const int64_t rd = st.rotary_dim > 0 ? st.rotary_dim : H;
  if (rd > H || rd % 2 != 0) bad("rotary_embedding_dim ", rd, " must be even and at most the head size ", H);
  if (half_cache != rd / 2) bad("the caches' ", half_cache, " columns must be rotary dim / 2 = ", rd / 2);
  const bool offset = pos.numel() == 1 && pos.rank() <= 1;
  if (!offset && !(pos.shape() == Shape{B, S})) bad("position_ids must be [", B, ",", S, "] or one start offset, got ", pos.shape().to_string());
  const int64_t* pp = pos.data<int64_t>();
  if (offset) {
    if (pp[0] < 0 || pp[0] + S > max_pos)
      bad("position_ids start ", pp[0], " with ", S, " tokens exceeds the cos/sin cache's ", max_pos, " positions");
  } else {
    check_positions(pos, max_pos, node);
  }
  // Strides of (batch, token, head).
  const int64_t sb = S * hidden, ss = four ? H : hidden, sh = four ? S * H : H;
  const T* px = x.data<T>();
  T* py = ctx.output(0).data<T>();
  const T* pc = cc.data<T>();
  const T* ps = sc.data<T>();
  parallel_range(ctx.pool(), B * S * N, H * 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t h = r % N, s = (r / N) % S, b = r / (N * S);
      const int64_t p = offset ? pp[0] + s : pp[b * S + s];
      const int64_t off = b * sb + s * ss + h * sh;
      rope_row(px + off, py + off, H, rd, st.interleaved, pc + p * half_cache, ps + p * half_cache);
    }
  });
}

void ms_rotary_compute(const MsRotaryAttrs& st, KernelContext& ctx) {
  const DType t = ctx.input(0).dtype();
  if (t == DType::kFloat) ms_rotary_typed<float>(st, ctx);
  else if (t == DType::kFloat16) ms_rotary_typed<Float16>(st, ctx);
  else fail(ErrorCode::kNotImplemented, ctx.node().label(), ": RotaryEmbedding on ", dtype_name(t), " (float and float16 only)");
}

std::unique_ptr<Kernel> make_ms_rotary(const KernelCreateInfo& info) {
  const Node& n = info.node;
  MsRotaryAttrs st{n.attr_int("num_heads", 0), n.attr_int("rotary_embedding_dim", 0), n.attr_int("interleaved", 0) == 1};
  if (st.rotary_dim > 0 && st.heads <= 0)
    fail(ErrorCode::kInvalidGraph, n.label(), ": rotary_embedding_dim needs the num_heads attribute");
  if (st.heads < 0 || st.rotary_dim < 0) fail(ErrorCode::kInvalidGraph, n.label(), ": num_heads and rotary_embedding_dim must be >= 0");
  return make_fn_kernel(st, ms_rotary_compute);
}

constexpr TypeMask kGqaTypes = type_mask({DType::kFloat, DType::kFloat16});

const KernelDef kDefs[] = {
    {"com.microsoft", "GroupQueryAttention", 1, 1, {{0, kGqaTypes}}, make_gqa},
    {"com.microsoft", "RotaryEmbedding", 1, 1, {{0, kGqaTypes}}, make_ms_rotary},
};

}  // namespace

std::span<const KernelDef> gqa_kernels() { return kDefs; }

}  // namespace onyx::cpu
