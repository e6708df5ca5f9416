// CPU kernels: transformer family (opsets 23+): Attention, RotaryEmbedding, TensorScatter,
// CausalConvWithState, LinearAttention, FlexAttention (ai.onnx.preview).
//
// Attention runs one query row at a time: its scores over every key (past keys first), the mask
// (attn_mask, causal, sliding window, padding) as an additive bias, softmax, and the weighted sum
// of values. For float16 / bfloat16 the arithmetic is in float with each intermediate that the
// operator's definition produces as a tensor (Q and K scaled by sqrt(scale), the scores, the
// softcapped and the biased scores, the probabilities) rounded to the element type, as the
// definition's ops would round them.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// v rounded to the precision of `t` (float, double, float16 or bfloat16).
template <class A>
A round_to(DType t, A v) {
  switch (t) {
    case DType::kFloat16: return static_cast<A>(Float16::to_float(Float16::from_float(static_cast<float>(v))));
    case DType::kBFloat16: return static_cast<A>(BFloat16::to_float(BFloat16::from_float(static_cast<float>(v))));
    case DType::kFloat: return static_cast<A>(static_cast<float>(v));
    default: return v;
  }
}

struct AttentionState {
  float scale = 0;  // 0: 1 / sqrt(head size)
  float softcap = 0;
  bool causal = false;
  int64_t q_heads = 0, kv_heads = 0;  // 3-D inputs
  int mode = 0;                       // qk_matmul_output_mode
  DType softmax_type = DType::kUndefined;
  int64_t left = -1, right = -1;      // sliding window (opset 25)
};

/// Element (b, h, s, :) of a [B, H, S, D] tensor, or of a [B, S, H D] one (3-D).
struct HeadView {
  int64_t sb = 0, sh = 0, ss = 0;
  static HeadView of(const Shape& s, bool three_d, int64_t heads) {
    HeadView v;
    if (three_d) {
      v.ss = s[2];
      v.sh = s[2] / heads;
      v.sb = s[1] * s[2];
    } else {
      v.ss = s[3];
      v.sh = s[2] * s[3];
      v.sb = s[1] * s[2] * s[3];
    }
    return v;
  }
  int64_t at(int64_t b, int64_t h, int64_t s) const { return b * sb + h * sh + s * ss; }
};

template <class T>
void attention_typed(const AttentionState& st, KernelContext& ctx) {
  using A = Acc<T>;  // float, or double for double
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  const Tensor* mask = ctx.optional_input(3);
  const Tensor* past_k = ctx.optional_input(4);
  const Tensor* past_v = ctx.optional_input(5);
  const Tensor* nonpad = ctx.node().opset >= 24 ? ctx.optional_input(6) : nullptr;
  const DType t1 = q.dtype();
  if (k.dtype() != t1 || v.dtype() != t1 || (past_k && past_k->dtype() != t1) || (past_v && past_v->dtype() != t1))
    fail(ErrorCode::kNotImplemented, "Attention with V of another type than Q and K (", dtype_name(v.dtype()), ")");
  if (!past_k != !past_v) fail(ErrorCode::kInvalidArgument, "past_key and past_value must be given together");
  const bool three = q.rank() == 3;
  if ((q.rank() != 3 && q.rank() != 4) || k.rank() != q.rank() || v.rank() != q.rank())
    fail(ErrorCode::kInvalidArgument, "Q, K and V must all be 3-D or all 4-D");
  const int64_t B = q.dim(0);
  const int64_t hq = three ? st.q_heads : q.dim(1), hkv = three ? st.kv_heads : k.dim(1);
  const int64_t sq = three ? q.dim(1) : q.dim(2), skv = three ? k.dim(1) : k.dim(2);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    fail(ErrorCode::kInvalidArgument, "q heads (", hq, ") must be a positive multiple of kv heads (", hkv, ")");
  const int64_t d = three ? q.dim(2) / hq : q.dim(3), dk = three ? k.dim(2) / hkv : k.dim(3);
  const int64_t dv = three ? v.dim(2) / hkv : v.dim(3);
  if (d != dk) fail(ErrorCode::kInvalidArgument, "Q's head size ", d, " differs from K's ", dk);
  if (k.dim(0) != B || v.dim(0) != B || (three ? v.dim(1) : v.dim(2)) != skv || (!three && v.dim(1) != hkv))
    fail(ErrorCode::kInvalidArgument, "K ", k.shape().to_string(), " and V ", v.shape().to_string(), " do not match");
  const int64_t P = past_k ? past_k->dim(2) : 0;
  if (past_k && !(past_k->shape() == Shape{B, hkv, P, d} && past_v->shape() == Shape{B, hkv, P, dv}))
    fail(ErrorCode::kInvalidArgument, "past_key ", past_k->shape().to_string(), " / past_value ", past_v->shape().to_string(),
         " do not match K and V");
  if (nonpad && past_k) fail(ErrorCode::kInvalidArgument, "nonpad_kv_seqlen cannot be combined with past_key / past_value");
  const int64_t total = P + skv;
  if (nonpad) {
    if (nonpad->numel() != B) fail(ErrorCode::kInvalidArgument, "nonpad_kv_seqlen has ", nonpad->numel(), " values for batch ", B);
    for (int64_t b = 0; b < B; ++b)
      if (int_at(*nonpad, b) < 0 || int_at(*nonpad, b) > total)
        fail(ErrorCode::kRuntime, "nonpad_kv_seqlen[", b, "] = ", int_at(*nonpad, b), " is outside [0, ", total, "]");
  }
  // The mask, right-aligned to [B, Hq, Sq, total]; its last dim may be shorter (the rest masked).
  Shape ms = Shape::filled(4, 0);
  int64_t mask_cols = 0;
  if (mask) {
    if (mask->rank() < 1 || mask->rank() > 4) fail(ErrorCode::kInvalidArgument, "attn_mask must have rank 1 to 4");
    const int64_t want[4] = {B, hq, sq, total};
    int64_t stride = 1;
    for (int64_t kx = static_cast<int64_t>(mask->rank()) - 1, dx = 3; kx >= 0; --kx, --dx) {
      const int64_t m = mask->dim(kx);
      if (dx == 3) {
        if (m > total) fail(ErrorCode::kInvalidArgument, "attn_mask has ", m, " key columns for ", total, " keys");
        mask_cols = m;
      } else if (m != 1 && m != want[dx]) {
        fail(ErrorCode::kInvalidArgument, "attn_mask ", mask->shape().to_string(), " does not broadcast to [", B, ",", hq, ",", sq, ",",
             total, "]");
      }
      if (m != 1 || dx == 3) ms[dx] = stride;
      stride *= m;
    }
  }
  const bool bool_mask = mask && mask->dtype() == DType::kBool;
  const int64_t group = hq / hkv;
  const HeadView qv = HeadView::of(q.shape(), three, hq), kv = HeadView::of(k.shape(), three, hkv), vv = HeadView::of(v.shape(), three, hkv);
  const A sqrt_scale = round_to<A>(t1, std::sqrt(static_cast<A>(st.scale > 0 ? st.scale : 1.0 / std::sqrt(static_cast<double>(d)))));
  const DType smt = st.softmax_type == DType::kUndefined ? t1 : st.softmax_type;
  const T* pq = q.data<T>();
  const T* pk = k.data<T>();
  const T* pv = v.data<T>();
  const T* ppk = past_k ? past_k->data<T>() : nullptr;
  const T* ppv = past_v ? past_v->data<T>() : nullptr;
  auto key_row = [&](int64_t b, int64_t kh, int64_t j) { return j < P ? ppk + ((b * hkv + kh) * P + j) * d : pk + kv.at(b, kh, j - P); };
  auto value_row = [&](int64_t b, int64_t kh, int64_t j) { return j < P ? ppv + ((b * hkv + kh) * P + j) * dv : pv + vv.at(b, kh, j - P); };
  // The present key and value (past, then the new ones), when asked for.
  for (int o : {1, 2}) {
    if (!ctx.has_output(o) || !ctx.output_ready(o)) continue;
    T* dst = ctx.output(o).data<T>();
    const int64_t w = o == 1 ? d : dv;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t kh = 0; kh < hkv; ++kh)
        for (int64_t j = 0; j < total; ++j)
          std::memcpy(dst + ((b * hkv + kh) * total + j) * w, o == 1 ? key_row(b, kh, j) : value_row(b, kh, j), sizeof(T) * w);
  }
  T* py = ctx.output(0).data<T>();
  T* pqk = ctx.has_output(3) && ctx.output_ready(3) ? ctx.output(3).data<T>() : nullptr;
  const bool* mb = bool_mask ? mask->data<bool>() : nullptr;
  auto mask_value = [&](int64_t off) -> A {
    if (bool_mask) return mb[off] ? A(0) : A(kNegInf);
    return static_cast<A>(mask->element_as_double(off));
  };
  const HeadView yv = HeadView::of(ctx.output(0).shape(), three, hq);
  parallel_range(ctx.pool(), B * hq * sq, total * (d + dv), [&](int64_t r0, int64_t r1) {
    A* qs = reinterpret_cast<A*>(thread_workspace(Workspace::kAttention, sizeof(A) * static_cast<size_t>(d + total + dv + 3 * 16)));
    A* sc = qs + d + 16;
    A* acc = sc + total + 16;
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t i = row % sq, h = (row / sq) % hq, b = row / (sq * hq), kh = h / group;
      const T* qr = pq + qv.at(b, h, i);
      for (int64_t x = 0; x < d; ++x) qs[x] = round_to<A>(t1, static_cast<A>(to_acc(qr[x])) * sqrt_scale);
      // Where the causal frontier and the window are, for this batch entry.
      const int64_t offset = past_k ? P : nonpad ? int_at(*nonpad, b) - sq : 0;
      const int64_t valid = nonpad ? int_at(*nonpad, b) : total;
      bool all_masked = true;
      for (int64_t j = 0; j < total; ++j) {
        const T* kr = key_row(b, kh, j);
        A dot = 0;
        for (int64_t x = 0; x < d; ++x) dot += qs[x] * round_to<A>(t1, static_cast<A>(to_acc(kr[x])) * sqrt_scale);
        const A raw = round_to<A>(t1, dot);
        A capped = raw;
        if (st.softcap > 0) {
          const A c = static_cast<A>(st.softcap);
          capped = round_to<A>(t1, round_to<A>(t1, std::tanh(round_to<A>(t1, raw / c))) * c);
        }
        A bias = 0;
        if (mask) bias = j < mask_cols ? mask_value(b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]) : A(kNegInf);
        if (st.causal && j > i + offset) bias = kNegInf;
        const int64_t diff = i + offset - j;
        if ((st.left >= 0 && diff > st.left) || (st.right >= 0 && -diff > st.right)) bias = kNegInf;
        if (j >= valid) bias = kNegInf;
        all_masked = all_masked && std::isinf(bias) && bias < 0;
        const A with_bias = round_to<A>(t1, capped + bias);
        sc[j] = with_bias;
        if (pqk && st.mode != 3) {
          const A out = st.mode == 0 ? raw : st.mode == 1 ? capped : with_bias;
          pqk[((b * hq + h) * sq + i) * total + j] = from_acc<T>(static_cast<Acc<T>>(out));
        }
      }
      // Softmax in the softmax precision; a row whose bias masks every key is all zeros.
      A mx = A(kNegInf);
      for (int64_t j = 0; j < total; ++j) {
        sc[j] = round_to<A>(smt, sc[j]);
        mx = std::max(mx, sc[j]);
      }
      if (std::isinf(mx) && mx < 0) mx = 0;
      A sum = 0;
      for (int64_t j = 0; j < total; ++j) {
        sc[j] = round_to<A>(smt, std::exp(round_to<A>(smt, sc[j] - mx)));
        // numpy (the definition's reference) sums float16 in float, but rounds a bfloat16 sum at
        // every step (an ml_dtypes reduction).
        sum = smt == DType::kBFloat16 ? round_to<A>(smt, sum + sc[j]) : sum + sc[j];
      }
      sum = round_to<A>(smt, sum);
      if (sum == 0) sum = 1;
      for (int64_t j = 0; j < total; ++j) {
        sc[j] = all_masked ? A(0) : round_to<A>(t1, round_to<A>(smt, sc[j] / sum));
        if (pqk && st.mode == 3) pqk[((b * hq + h) * sq + i) * total + j] = from_acc<T>(static_cast<Acc<T>>(sc[j]));
      }
      for (int64_t x = 0; x < dv; ++x) acc[x] = 0;
      for (int64_t j = 0; j < total; ++j) {
        if (sc[j] == 0) continue;
        const T* vr = value_row(b, kh, j);
        for (int64_t x = 0; x < dv; ++x) acc[x] += sc[j] * static_cast<A>(to_acc(vr[x]));
      }
      T* yr = py + yv.at(b, h, i);
      for (int64_t x = 0; x < dv; ++x) yr[x] = from_acc<T>(static_cast<Acc<T>>(acc[x]));
    }
  });
}

void attention_compute(const AttentionState& st, KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&]<class T>() { attention_typed<T>(st, ctx); }, "Attention");
}

std::unique_ptr<Kernel> make_attention(const KernelCreateInfo& info) {
  const Node& n = info.node;
  AttentionState st;
  st.scale = n.attr_float("scale", 0.0f);
  st.softcap = n.attr_float("softcap", 0.0f);
  st.causal = n.attr_int("is_causal", 0) != 0;
  st.q_heads = n.attr_int("q_num_heads", 0);
  st.kv_heads = n.attr_int("kv_num_heads", 0);
  st.mode = static_cast<int>(n.attr_int("qk_matmul_output_mode", 0));
  if (st.mode < 0 || st.mode > 3) fail(ErrorCode::kInvalidGraph, n.label(), ": qk_matmul_output_mode must be 0 to 3, got ", st.mode);
  if (n.has_attr("softmax_precision")) {
    const int64_t p = n.attr_int("softmax_precision", 0);
    if (p != 1 && p != 10 && p != 11 && p != 16)
      fail(ErrorCode::kInvalidGraph, n.label(), ": softmax_precision must be 1, 10, 11 or 16, got ", p);
    st.softmax_type = static_cast<DType>(p);
  }
  if (n.opset >= 25) {
    st.left = n.attr_int("left_window_size", -1);
    st.right = n.attr_int("right_window_size", -1);
  }
  return make_fn_kernel(st, attention_compute);
}

// ---------------------------------------------------------------------------------------------
// RotaryEmbedding: rotates the first rotary_embedding_dim values of each head by the cached
// angles of the token's position (halves, or interleaved pairs).

struct RotaryState {
  int64_t heads = 0, rotary_dim = 0;
  bool interleaved = false;
};

template <class T>
void rotary_typed(const RotaryState& st, KernelContext& ctx) {
  using A = Acc<T>;
  const Tensor& x = ctx.input(0);
  const Tensor& cc = ctx.input(1);
  const Tensor& sc = ctx.input(2);
  const Tensor* pos = ctx.optional_input(3);
  const DType t = x.dtype();
  if (cc.dtype() != t || sc.dtype() != t) fail(ErrorCode::kInvalidArgument, "cos_cache and sin_cache must have X's type");
  const bool three = x.rank() == 3;
  const int64_t B = x.dim(0), H = three ? st.heads : x.dim(1), S = three ? x.dim(1) : x.dim(2);
  if (H <= 0 || (three && x.dim(2) % H != 0)) fail(ErrorCode::kInvalidArgument, "num_heads ", H, " does not divide X's hidden size");
  const int64_t D = three ? x.dim(2) / H : x.dim(3);
  const int64_t rd = st.rotary_dim > 0 ? st.rotary_dim : D;
  if (rd > D || rd % 2 != 0) fail(ErrorCode::kInvalidArgument, "rotary_embedding_dim ", rd, " must be even and at most the head size ", D);
  const int64_t half = rd / 2;
  if (cc.dim(cc.rank() - 1) != half || !(cc.shape() == sc.shape()))
    fail(ErrorCode::kInvalidArgument, "cos_cache ", cc.shape().to_string(), " / sin_cache ", sc.shape().to_string(),
         " must end in rotary_embedding_dim / 2 = ", half);
  if (pos) {
    if (cc.rank() != 2) fail(ErrorCode::kInvalidArgument, "with position_ids the caches must be 2-D [positions, ", half, "]");
    if (!(pos->shape() == Shape{B, S})) fail(ErrorCode::kInvalidArgument, "position_ids ", pos->shape().to_string(), " must be [", B, ",", S, "]");
    for (int64_t e = 0; e < pos->numel(); ++e)
      if (int_at(*pos, e) < 0 || int_at(*pos, e) >= cc.dim(0))
        fail(ErrorCode::kRuntime, "position_ids value ", int_at(*pos, e), " is outside the cache's ", cc.dim(0), " positions");
  } else if (!(cc.shape() == Shape{B, S, half})) {
    fail(ErrorCode::kInvalidArgument, "without position_ids the caches must be [", B, ",", S, ",", half, "], got ", cc.shape().to_string());
  }
  const HeadView xv = HeadView::of(x.shape(), three, H);
  const T* px = x.data<T>();
  const T* pc = cc.data<T>();
  const T* ps = sc.data<T>();
  T* py = ctx.output(0).data<T>();
  auto R = [&](A a) { return round_to<A>(t, a); };
  parallel_range(ctx.pool(), B * H * S, D * 4, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t s = row % S, h = (row / S) % H, b = row / (S * H);
      const int64_t cache = pos ? int_at(*pos, b * S + s) * half : (b * S + s) * half;
      const T* xr = px + xv.at(b, h, s);
      T* yr = py + xv.at(b, h, s);
      for (int64_t e = 0; e < half; ++e) {
        const int64_t i1 = st.interleaved ? 2 * e : e, i2 = st.interleaved ? 2 * e + 1 : e + half;
        const A x1 = to_acc(xr[i1]), x2 = to_acc(xr[i2]), c = to_acc(pc[cache + e]), sn = to_acc(ps[cache + e]);
        yr[i1] = from_acc<T>(static_cast<Acc<T>>(R(R(c * x1) - R(sn * x2))));
        yr[i2] = from_acc<T>(static_cast<Acc<T>>(R(R(sn * x1) + R(c * x2))));
      }
      for (int64_t e = rd; e < D; ++e) yr[e] = xr[e];
    }
  });
}

void rotary_compute(const RotaryState& st, KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&]<class T>() { rotary_typed<T>(st, ctx); }, "RotaryEmbedding");
}

std::unique_ptr<Kernel> make_rotary(const KernelCreateInfo& info) {
  const Node& n = info.node;
  return make_fn_kernel(RotaryState{n.attr_int("num_heads", 0), n.attr_int("rotary_embedding_dim", 0), n.attr_int("interleaved", 0) != 0},
                        rotary_compute);
}

// ---------------------------------------------------------------------------------------------
// TensorScatter: the past cache with the update written at each batch entry's write index along
// the sequence axis (linear, or wrapping around in circular mode).

struct ScatterState {
  int64_t axis = -2;
  bool circular = false;
};

void tensor_scatter_compute(const ScatterState& st, KernelContext& ctx) {
  const Tensor& past = ctx.input(0);
  const Tensor& upd = ctx.input(1);
  const Tensor* wi = ctx.optional_input(2);
  Tensor& out = ctx.output(0);
  const int64_t r = static_cast<int64_t>(past.rank());
  const int64_t axis = normalize_axis(st.axis, r, "TensorScatter");
  if (axis == 0) fail(ErrorCode::kInvalidArgument, "axis must not be the batch dim (0)");
  if (upd.rank() != past.rank()) fail(ErrorCode::kInvalidArgument, "update and past_cache must have the same rank");
  for (int64_t k = 0; k < r; ++k)
    if (k != axis && upd.dim(k) != past.dim(k))
      fail(ErrorCode::kInvalidArgument, "update ", upd.shape().to_string(), " and past_cache ", past.shape().to_string(),
           " differ outside the sequence axis ", axis);
  const int64_t B = past.dim(0), maxs = past.dim(axis), S = upd.dim(axis);
  if (S > maxs) fail(ErrorCode::kInvalidArgument, "update has ", S, " positions for a cache of ", maxs);
  if (wi && wi->numel() != B) fail(ErrorCode::kInvalidArgument, "write_indices has ", wi->numel(), " values for batch ", B);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 1; k < axis; ++k) outer *= past.dim(k);
  for (int64_t k = axis + 1; k < r; ++k) inner *= past.dim(k);
  const size_t es = dtype_size(past.dtype());
  for (int64_t b = 0; b < B; ++b) {
    const int64_t w = wi ? int_at(*wi, b) : 0;
    if (w < 0 || (!st.circular && w + S > maxs))
      fail(ErrorCode::kRuntime, "write index ", w, " of batch entry ", b, " with ", S, " positions does not fit a cache of ", maxs);
  }
  if (past.nbytes() && out.raw_data() != past.raw_data()) std::memcpy(out.raw_data(), past.raw_data(), past.nbytes());
  const auto* src = static_cast<const uint8_t*>(upd.raw_data());
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  for (int64_t b = 0; b < B; ++b) {
    const int64_t w = wi ? int_at(*wi, b) : 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t c = st.circular ? (w + s) % maxs : w + s;
        std::memcpy(dst + (((b * outer + o) * maxs + c) * inner) * es, src + (((b * outer + o) * S + s) * inner) * es, inner * es);
      }
  }
}

std::unique_ptr<Kernel> make_tensor_scatter(const KernelCreateInfo& info) {
  const Node& n = info.node;
  return make_fn_kernel(ScatterState{n.attr_int("axis", -2), n.attr_string("mode", "linear") == "circular"}, tensor_scatter_compute);
}

// ---------------------------------------------------------------------------------------------
// CausalConvWithState: a depthwise 1-D convolution over [past_state (or zeros), input] along the
// length, with an optional bias and SiLU; present_state is the last k - 1 positions of that.

void causal_conv_compute(const bool& silu, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* bias = ctx.optional_input(2);
  const Tensor* past = ctx.optional_input(3);
  if (x.rank() != 3 || w.rank() != 3) fail(ErrorCode::kInvalidArgument, "input and weight must be 3-D");
  const int64_t B = x.dim(0), C = x.dim(1), L = x.dim(2), k = w.dim(2);
  if (w.dim(0) != C || w.dim(1) != 1 || k < 1)
    fail(ErrorCode::kInvalidArgument, "weight ", w.shape().to_string(), " must be [", C, ", 1, k] (depthwise)");
  if (bias && bias->numel() != C) fail(ErrorCode::kInvalidArgument, "bias has ", bias->numel(), " values for ", C, " channels");
  if (past && !(past->shape() == Shape{B, C, k - 1}))
    fail(ErrorCode::kInvalidArgument, "past_state ", past->shape().to_string(), " must be [", B, ", ", C, ", ", k - 1, "]");
  for (const Tensor* t : {&w, bias, past})
    if (t && t->dtype() != x.dtype()) fail(ErrorCode::kInvalidArgument, "every input must have the input's type");
  Tensor* present = ctx.num_outputs() > 1 && ctx.has_output(1) && ctx.output_ready(1) ? &ctx.output(1) : nullptr;
  dispatch_float(x.dtype(), [&]<class T>() {
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* px = x.data<T>();
    const T* pw = w.data<T>();
    const T* pp = past ? past->data<T>() : nullptr;
    T* py = ctx.output(0).data<T>();
    // Position p of the padded sequence [past (k - 1), input (L)] of row (b, c).
    auto padded = [&](int64_t row, int64_t p) -> A {
      if (p >= k - 1) return static_cast<A>(to_acc(px[row * L + p - (k - 1)]));
      return pp ? static_cast<A>(to_acc(pp[row * (k - 1) + p])) : A(0);
    };
    parallel_range(ctx.pool(), B * C, L * k, [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        const int64_t c = row % C;
        const A b0 = bias ? static_cast<A>(to_acc(bias->data<T>()[c])) : A(0);
        for (int64_t l = 0; l < L; ++l) {
          A acc = b0;
          for (int64_t t = 0; t < k; ++t) acc += static_cast<A>(to_acc(pw[c * k + t])) * padded(row, l + t);
          // The convolution's result in T, then SiLU (computed in float) back to T.
          acc = static_cast<A>(to_acc(from_acc<T>(static_cast<Acc<T>>(acc))));
          if (silu) acc = acc / (A(1) + std::exp(-acc));
          py[row * L + l] = from_acc<T>(static_cast<Acc<T>>(acc));
        }
        if (present) {
          T* ps = present->data<T>() + row * (k - 1);
          for (int64_t p = 0; p < k - 1; ++p) ps[p] = from_acc<T>(static_cast<Acc<T>>(padded(row, L + p)));
        }
      }
    });
  }, "CausalConvWithState");
}

std::unique_ptr<Kernel> make_causal_conv(const KernelCreateInfo& info) {
  const std::string act = info.node.attr_string("activation", "none");
  return make_fn_kernel(act == "silu" || act == "swish", causal_conv_compute);
}

// ---------------------------------------------------------------------------------------------
// LinearAttention: the recurrence S_t = decay * S_{t-1} + k_t (x) v'_t (v'_t = v_t, or for the
// delta rules beta_t (v_t - S^T k_t)), o_t = scale q_t^T S_t, run token by token in float, one
// [dk, dv] state per (batch, kv head) shared by its group of query heads.

struct LinearAttentionState {
  int64_t q_heads = 0, kv_heads = 0;
  float scale = 0;
  bool gated = true, delta = true;
};

void linear_attention_compute(const LinearAttentionState& st, KernelContext& ctx) {
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  const Tensor* past = ctx.optional_input(3);
  const Tensor* decay = ctx.optional_input(4);
  const Tensor* beta = ctx.optional_input(5);
  if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3) fail(ErrorCode::kInvalidArgument, "query, key and value must be 3-D");
  const int64_t B = q.dim(0), steps = q.dim(1), hq = st.q_heads, hkv = st.kv_heads;
  const int64_t dk = q.dim(2) / hq, dv = v.dim(2) / hkv, group = hq / hkv;
  if (q.dim(2) % hq != 0 || v.dim(2) % hkv != 0 || !(k.shape() == Shape{B, steps, hkv * dk}) || v.dim(0) != B || v.dim(1) != steps)
    fail(ErrorCode::kInvalidArgument, "query ", q.shape().to_string(), ", key ", k.shape().to_string(), " and value ",
         v.shape().to_string(), " do not match ", hq, " query and ", hkv, " kv heads");
  if (st.gated != (decay != nullptr) || st.delta != (beta != nullptr))
    fail(ErrorCode::kInvalidArgument, "decay / beta do not match the update rule");
  const bool decay_per_key = decay && decay->dim(2) == hkv * dk;
  if (decay && (!(decay->rank() == 3 && decay->dim(0) == B && decay->dim(1) == steps) || (!decay_per_key && decay->dim(2) != hkv)))
    fail(ErrorCode::kInvalidArgument, "decay ", decay->shape().to_string(), " must be [", B, ", ", steps, ", ", hkv, " or ", hkv * dk, "]");
  if (beta && (!(beta->rank() == 3 && beta->dim(0) == B && beta->dim(1) == steps) || (beta->dim(2) != hkv && beta->dim(2) != 1)))
    fail(ErrorCode::kInvalidArgument, "beta ", beta->shape().to_string(), " must be [", B, ", ", steps, ", ", hkv, " or 1]");
  if (past && !(past->shape() == Shape{B, hkv, dk, dv}))
    fail(ErrorCode::kInvalidArgument, "past_state ", past->shape().to_string(), " must be [", B, ", ", hkv, ", ", dk, ", ", dv, "]");
  const float scale = st.scale != 0 ? st.scale : 1.0f / std::sqrt(static_cast<float>(dk));
  for (const Tensor* t : {&k, &v, decay, beta})
    if (t && t->dtype() != q.dtype()) fail(ErrorCode::kInvalidArgument, "key, value, decay and beta must have the query's type");
  Tensor& y = ctx.output(0);
  Tensor* present = ctx.num_outputs() > 1 && ctx.has_output(1) && ctx.output_ready(1) ? &ctx.output(1) : nullptr;
  const DType state_type = past ? past->dtype() : q.dtype();
  dispatch_float(q.dtype(), [&]<class T>() {
    dispatch_float(state_type, [&]<class SS>() {
      auto f = [](const T& x) { return static_cast<float>(to_acc(x)); };
      const T* pq = q.data<T>();
      const T* pk = k.data<T>();
      const T* pv = v.data<T>();
      const T* pd = decay ? decay->data<T>() : nullptr;
      const T* pb = beta ? beta->data<T>() : nullptr;
      const SS* pp = past ? past->data<SS>() : nullptr;
      T* py = y.data<T>();
      SS* pst = present ? present->data<SS>() : nullptr;
      parallel_range(ctx.pool(), B * hkv, steps * dk * dv * (group + 2), [&](int64_t r0, int64_t r1) {
        float* S = reinterpret_cast<float*>(thread_workspace(Workspace::kAttention, sizeof(float) * static_cast<size_t>(dk * dv + dv + 32)));
        float* vt = S + dk * dv + 16;
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t b = r / hkv, kh = r % hkv;
          for (int64_t e = 0; e < dk * dv; ++e) S[e] = pp ? static_cast<float>(to_acc(pp[r * dk * dv + e])) : 0.0f;
          for (int64_t t = 0; t < steps; ++t) {
            const int64_t kbase = (b * steps + t) * hkv * dk + kh * dk, vbase = (b * steps + t) * hkv * dv + kh * dv;
            if (pd) {
              // One gate per key dimension, or one for the head (its exp taken once).
              const float head_gate = decay_per_key ? 0.0f : std::exp(f(pd[(b * steps + t) * hkv + kh]));
              for (int64_t d = 0; d < dk; ++d) {
                const float g = decay_per_key ? std::exp(f(pd[kbase + d])) : head_gate;
                for (int64_t m = 0; m < dv; ++m) S[d * dv + m] *= g;
              }
            }
            for (int64_t m = 0; m < dv; ++m) vt[m] = f(pv[vbase + m]);
            if (pb) {
              const float bt = f(pb[(b * steps + t) * beta->dim(2) + (beta->dim(2) == 1 ? 0 : kh)]);
              for (int64_t m = 0; m < dv; ++m) {
                float retrieved = 0;
                for (int64_t d = 0; d < dk; ++d) retrieved += S[d * dv + m] * f(pk[kbase + d]);
                vt[m] = bt * (vt[m] - retrieved);
              }
            }
            for (int64_t d = 0; d < dk; ++d) {
              const float kd = f(pk[kbase + d]);
              for (int64_t m = 0; m < dv; ++m) S[d * dv + m] += kd * vt[m];
            }
            for (int64_t g = 0; g < group; ++g) {
              const int64_t h = kh * group + g;
              const int64_t qbase = (b * steps + t) * hq * dk + h * dk, ybase = (b * steps + t) * hq * dv + h * dv;
              for (int64_t m = 0; m < dv; ++m) {
                float o = 0;
                for (int64_t d = 0; d < dk; ++d) o += f(pq[qbase + d]) * S[d * dv + m];
                py[ybase + m] = from_acc<T>(static_cast<Acc<T>>(scale * o));
              }
            }
          }
          if (pst)
            for (int64_t e = 0; e < dk * dv; ++e) pst[r * dk * dv + e] = from_acc<SS>(static_cast<Acc<SS>>(S[e]));
        }
      });
    }, "LinearAttention past_state");
  }, "LinearAttention");
}

std::unique_ptr<Kernel> make_linear_attention(const KernelCreateInfo& info) {
  const Node& n = info.node;
  const std::string rule = n.attr_string("update_rule", "gated_delta");
  LinearAttentionState st;
  st.q_heads = n.attr_int("q_num_heads", 0);
  st.kv_heads = n.attr_int("kv_num_heads", 0);
  st.scale = n.attr_float("scale", 0.0f);
  st.gated = rule == "gated" || rule == "gated_delta";
  st.delta = rule == "delta" || rule == "gated_delta";
  if (st.q_heads <= 0 || st.kv_heads <= 0 || st.q_heads % st.kv_heads != 0)
    fail(ErrorCode::kInvalidGraph, n.label(), ": q_num_heads must be a positive multiple of kv_num_heads");
  return make_fn_kernel(st, linear_attention_compute);
}

constexpr TypeMask kFloatsMask = types::kFloats;

// ---------------------------------------------------------------------------------------------
// FlexAttention (ai.onnx.preview 1): softmax(score_mod(Q K^T scaled)) -> prob_mod -> times V, the
// two mods being graphs run once over the whole [B, Hq, L, S] tensor. Arithmetic in double, each
// stage rounded to the type the definition computes it in: Q and K scaled by sqrt(scale) and
// their product in the input type, the mods, softmax and the product with V in the softmax
// precision, the output in the input type.

/// Writes v, rounded to t's element type, as element i of t (a float type).
void put_float(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DType::kFloat: t.data<float>()[i] = static_cast<float>(v); break;
    case DType::kDouble: t.data<double>()[i] = v; break;
    case DType::kFloat16: t.data<Float16>()[i] = Float16(static_cast<float>(v)); break;
    case DType::kBFloat16: t.data<BFloat16>()[i] = BFloat16(static_cast<float>(v)); break;
    default: unsupported_dtype("FlexAttention", t.dtype());
  }
}

class FlexAttentionKernel final : public Kernel {
 public:
  explicit FlexAttentionKernel(const KernelCreateInfo& info) : node_(info.node) {
    scale_ = node_.attr_float("scale", 0.0f);
    has_scale_ = node_.has_attr("scale");
    const DType q = info.input_dtype(0);
    const int64_t p = node_.attr_int("softmax_precision", 0);
    softmax_ = p != 0 ? static_cast<DType>(p) : (q == DType::kFloat16 || q == DType::kBFloat16 ? DType::kFloat : q);
    for (int i = 0; i < 2; ++i) {
      const char* name = i == 0 ? "score_mod" : "prob_mod";
      if (const Graph* g = node_.attr_graph(name)) mods_[i] = info.prepare_subgraph(*g);
    }
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& q = ctx.input(0);
    const Tensor& k = ctx.input(1);
    const Tensor& v = ctx.input(2);
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
      fail(ErrorCode::kInvalidArgument, "Q, K and V must be 4-D, got ", q.shape().to_string(), ", ", k.shape().to_string(),
           " and ", v.shape().to_string());
    const int64_t B = q.dim(0), Hq = q.dim(1), L = q.dim(2), E = q.dim(3);
    const int64_t Hkv = k.dim(1), S = k.dim(2), Ev = v.dim(3);
    if (k.dim(0) != B || v.dim(0) != B || v.dim(1) != Hkv || v.dim(2) != S || k.dim(3) != E)
      fail(ErrorCode::kInvalidArgument, "K ", k.shape().to_string(), " and V ", v.shape().to_string(), " do not fit Q ",
           q.shape().to_string());
    if (Hkv <= 0 || Hq % Hkv != 0) fail(ErrorCode::kInvalidArgument, "Q's ", Hq, " heads are not a multiple of K's ", Hkv);
    if (k.dtype() != q.dtype() || v.dtype() != q.dtype())
      fail(ErrorCode::kInvalidArgument, "Q, K and V must have one type");
    const DType t = q.dtype();
    // sqrt(scale) in float, then in the input type.
    const float sc = has_scale_ ? scale_ : static_cast<float>(1.0 / std::sqrt(static_cast<double>(E)));
    const double root = round_to<double>(t, static_cast<double>(std::sqrt(sc)));
    const int64_t group = Hq / Hkv;
    Tensor scores(softmax_, Shape{B, Hq, L, S});
    std::vector<double> qs(static_cast<size_t>(E)), ks(static_cast<size_t>(S * E));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t kh = h / group;
        for (int64_t s = 0; s < S; ++s)
          for (int64_t e = 0; e < E; ++e)
            ks[s * E + e] = round_to<double>(t, k.element_as_double(((b * Hkv + kh) * S + s) * E + e) * root);
        for (int64_t l = 0; l < L; ++l) {
          for (int64_t e = 0; e < E; ++e) qs[e] = round_to<double>(t, q.element_as_double(((b * Hq + h) * L + l) * E + e) * root);
          for (int64_t s = 0; s < S; ++s) {
            double acc = 0;
            for (int64_t e = 0; e < E; ++e) acc += qs[e] * ks[s * E + e];
            put_float(scores, ((b * Hq + h) * L + l) * S + s, round_to<double>(t, acc));
          }
        }
      }
    scores = apply_mod(ctx, 0, std::move(scores));
    // Softmax over the keys, in the softmax precision.
    Tensor probs(softmax_, scores.shape());
    std::vector<double> row(static_cast<size_t>(S));
    for (int64_t r = 0; r < B * Hq * L; ++r) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t s = 0; s < S; ++s) mx = std::max(mx, scores.element_as_double(r * S + s));
      double sum = 0;
      for (int64_t s = 0; s < S; ++s) {
        row[s] = round_to<double>(softmax_, std::exp(round_to<double>(softmax_, scores.element_as_double(r * S + s) - mx)));
        sum += row[s];
      }
      sum = round_to<double>(softmax_, sum);
      for (int64_t s = 0; s < S; ++s) put_float(probs, r * S + s, row[s] / sum);
    }
    probs = apply_mod(ctx, 1, std::move(probs));
    Tensor& y = ctx.allocate_output(0, t, Shape{B, Hq, L, Ev});
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t kh = h / group;
        for (int64_t l = 0; l < L; ++l)
          for (int64_t e = 0; e < Ev; ++e) {
            double acc = 0;
            for (int64_t s = 0; s < S; ++s)
              acc += probs.element_as_double(((b * Hq + h) * L + l) * S + s) *
                     round_to<double>(softmax_, v.element_as_double(((b * Hkv + kh) * S + s) * Ev + e));
            put_float(y, ((b * Hq + h) * L + l) * Ev + e, round_to<double>(softmax_, acc));
          }
      }
  }

 private:
  /// The mod graph's result for `x` (x itself without one): the same type and shape.
  Tensor apply_mod(KernelContext& ctx, int i, Tensor x) const {
    if (!mods_[i]) return x;
    const char* name = i == 0 ? "score_mod" : "prob_mod";
    std::vector<Value> in;
    in.emplace_back(x);
    std::vector<Value> out = ctx.run_subgraph(*mods_[i], std::move(in));
    if (out.size() != 1 || !out[0].is_tensor()) fail(ErrorCode::kRuntime, name, " must return one tensor");
    const Tensor& r = out[0].tensor();
    if (r.dtype() != x.dtype() || !(r.shape() == x.shape()))
      fail(ErrorCode::kRuntime, name, " returned ", dtype_name(r.dtype()), r.shape().to_string(), " for ",
           dtype_name(x.dtype()), x.shape().to_string());
    return r.storage() ? r : r.clone();
  }

  const Node& node_;
  float scale_ = 0;
  bool has_scale_ = false;
  DType softmax_ = DType::kFloat;
  std::shared_ptr<PreparedSubgraph> mods_[2];
};

std::unique_ptr<Kernel> make_flex_attention(const KernelCreateInfo& info) { return std::make_unique<FlexAttentionKernel>(info); }

const KernelDef kDefs[] = {
    {"", "Attention", 23, 99, {{0, kFloatsMask}}, make_attention},
    {"", "RotaryEmbedding", 23, 99, {{0, kFloatsMask}}, make_rotary},
    {"", "TensorScatter", 24, 99, {{0, types::kAll & ~type_mask({DType::kString})}}, make_tensor_scatter},
    {"", "CausalConvWithState", 27, 99, {{0, kFloatsMask}}, make_causal_conv},
    {"", "LinearAttention", 27, 99, {{0, kFloatsMask}}, make_linear_attention},
    {"ai.onnx.preview", "FlexAttention", 1, 99, {{0, kFloatsMask}}, make_flex_attention},
};

}  // namespace

std::span<const KernelDef> transformer_kernels() { return kDefs; }

}  // namespace onyx::cpu
