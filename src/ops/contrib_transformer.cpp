// com.microsoft transformer operators, as ONNX Runtime's transformers optimizer and LLM tools write
// them (version 1, the one ONNX Runtime defines): the Gelu family (Gelu, BiasGelu, FastGelu,
// QuickGelu, BiasSplitGelu, GemmFastGelu), BiasAdd, FusedMatMul, the normalisations
// (SkipLayerNormalization, SkipSimplifiedLayerNormalization, EmbedLayerNormalization, and ONNX
// Runtime's ai.onnx-domain SimplifiedLayerNormalization), Attention and MultiHeadAttention.
#include "ops/families.hpp"
#include "ops/nn.hpp"
#include "ops/schema.hpp"

namespace onyx {

namespace {

constexpr const char* kMs = "com.microsoft";

int64_t dim_or_fresh(InferContext& ctx, const Shape& s, size_t k) { return k < s.size() && s[k] >= 0 ? s[k] : ctx.fresh(); }

/// Input i is float (the CPU EP computes float16 and bfloat16 graphs in float).
void require_float(InferContext& ctx, size_t i, const char* name) {
  if (!ctx.has_input(i)) return;
  const DType t = ctx.input_dtype(i);
  if (t != DType::kFloat && t != DType::kFloat16 && t != DType::kBFloat16 && t != DType::kDouble)
    ctx.fail_node(name, " (input ", i, ") has type ", dtype_name(t), "; expected a float type");
}

/// Input i, when given with a known shape, is 1-D of `n` values (n < 0: any).
void require_vector(InferContext& ctx, size_t i, const char* name, int64_t n) {
  if (!ctx.input_has_shape(i)) return;
  const Shape& s = ctx.input_shape(i);
  if (s.size() != 1) ctx.fail_node(name, " (input ", i, ") must be 1-D, got ", s.to_string());
  if (n >= 0 && s[0] >= 0 && s[0] != n) ctx.fail_node(name, " (input ", i, ") has ", s[0], " values; expected ", n);
}

/// Gelu, QuickGelu, FastGelu(X, bias), BiasGelu(A, B): Y has X's type and shape; a bias is 1-D
/// over the last dim.
void infer_gelu_like(InferContext& ctx) {
  require_float(ctx, 0, "X");
  if (ctx.num_inputs() > 1 && ctx.has_input(1)) {
    if (ctx.input_dtype(1) != ctx.input_dtype(0)) ctx.fail_node("the bias must have X's type");
    const TypeInfo& x = ctx.input_type(0);
    require_vector(ctx, 1, "bias", x.has_shape && !x.shape.empty() ? x.shape[x.shape.size() - 1] : -1);
  }
  ctx.propagate(0, 0);
}

/// BiasAdd(X [N, S, C], bias [C], skip [N, S, C]): Y like X.
void infer_bias_add(InferContext& ctx) {
  require_float(ctx, 0, "X");
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape && x.shape.size() != 3) ctx.fail_node("X must be 3-D [N, S, C], got ", x.shape.to_string());
  require_vector(ctx, 1, "bias", x.has_shape ? x.shape[2] : -1);
  if (x.has_shape && ctx.input_has_shape(2) && ctx.input_shape(2).size() != 3)
    ctx.fail_node("skip must be 3-D like X, got ", ctx.input_shape(2).to_string());
  ctx.propagate(0, 0);
}

/// BiasSplitGelu(X [N, S, D], bias [D]): Y [N, S, D / 2].
void infer_bias_split_gelu(InferContext& ctx) {
  require_float(ctx, 0, "X");
  const TypeInfo& x = ctx.input_type(0);
  if (!x.has_shape) return ctx.set_output_unranked(0, x.elem_dtype());
  if (x.shape.size() != 3) ctx.fail_node("X must be 3-D [N, S, D], got ", x.shape.to_string());
  const int64_t d = x.shape[2];
  if (d >= 0 && d % 2 != 0) ctx.fail_node("X's last dim (", d, ") must be even");
  require_vector(ctx, 1, "bias", d);
  ctx.set_output(0, x.elem_dtype(), Shape{x.shape[0], x.shape[1], d >= 0 ? d / 2 : ctx.fresh()});
}

/// GemmFastGelu(X [.., K], W [K, N], bias [N]): Y [.., N].
void infer_gemm_fast_gelu(InferContext& ctx) {
  require_float(ctx, 0, "X");
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& w = ctx.input_type(1);
  if (w.elem_dtype() != x.elem_dtype()) ctx.fail_node("W must have X's type");
  if (w.has_shape && w.shape.size() != 2) ctx.fail_node("W must be 2-D [K, N], got ", w.shape.to_string());
  if (!x.has_shape || !w.has_shape) return ctx.set_output_unranked(0, x.elem_dtype());
  if (x.shape.empty()) ctx.fail_node("X must have rank >= 1");
  const int64_t k = x.shape[x.shape.size() - 1];
  if (k >= 0 && w.shape[0] >= 0 && k != w.shape[0]) ctx.fail_node("X ", x.shape.to_string(), " and W ", w.shape.to_string(), " do not chain");
  if (ctx.num_inputs() > 2) require_vector(ctx, 2, "bias", w.shape[1]);
  Shape out = x.shape;
  out[out.size() - 1] = w.shape[1];
  ctx.set_output(0, x.elem_dtype(), out);
}

/// FusedMatMul(A, B): alpha * op(A) x op(B), where transBatchX moves X's first dim behind its
/// other batch dims and transX swaps its last two dims (rank >= 2; a 1-D operand is as in MatMul).
void infer_fused_matmul(InferContext& ctx) {
  const TypeInfo& a = ctx.input_type(0);
  const TypeInfo& b = ctx.input_type(1);
  require_float(ctx, 0, "A");
  if (a.elem_dtype() != b.elem_dtype()) ctx.fail_node("A and B have different types: ", dtype_name(a.elem_dtype()), " and ", dtype_name(b.elem_dtype()));
  if (!a.has_shape || !b.has_shape) return ctx.set_output_unranked(0, a.elem_dtype());
  const Node& n = ctx.node();
  auto operand = [&](const Shape& s, bool trans_batch, bool trans, bool is_a) {
    Shape r = s;
    if (r.empty()) ctx.fail_node("inputs must have rank >= 1");
    if (r.size() == 1) {
      if (is_a) r.insert(0, 1); else r.push_back(1);
      return r;
    }
    if (trans_batch && r.size() > 2) {
      const int64_t first = r[0];
      for (size_t k = 0; k + 2 < r.size(); ++k) r[k] = r[k + 1];
      r[r.size() - 2] = first;
    }
    if (trans) std::swap(r[r.size() - 1], r[r.size() - 2]);
    return r;
  };
  const bool va = a.shape.size() == 1, vb = b.shape.size() == 1;
  const Shape sa = operand(a.shape, n.attr_int("transBatchA", 0) != 0, n.attr_int("transA", 0) != 0, true);
  const Shape sb = operand(b.shape, n.attr_int("transBatchB", 0) != 0, n.attr_int("transB", 0) != 0, false);
  const int64_t ka = sa[sa.size() - 1], kb = sb[sb.size() - 2];
  if (ka >= 0 && kb >= 0 && ka != kb) ctx.fail_node("inner dimensions differ: ", a.shape.to_string(), " x ", b.shape.to_string(), " (after the transposes)");
  Shape out = shape_util::broadcast(ctx, Shape(std::span<const int64_t>(sa.data(), sa.size() - 2)),
                                    Shape(std::span<const int64_t>(sb.data(), sb.size() - 2)));
  if (!va) out.push_back(sa[sa.size() - 2]);
  if (!vb) out.push_back(sb[sb.size() - 1]);
  ctx.set_output(0, a.elem_dtype(), out);
}

/// X's shape with the last dim 1 (the per-row statistics of the Skip*LayerNormalization ops).
Shape row_stat_shape(const Shape& x) {
  Shape s = x;
  if (!s.empty()) s[s.size() - 1] = 1;
  return s;
}

/// SkipLayerNormalization(input, skip, gamma, beta, bias) and SkipSimplifiedLayerNormalization
/// (input, skip, gamma, bias): output and input_skip_bias_sum like input, mean and inv_std_var
/// [.., 1] in float.
void infer_skip_layer_norm(InferContext& ctx) {
  const bool simplified = ctx.node().op_type == "SkipSimplifiedLayerNormalization";
  require_float(ctx, 0, "input");
  const TypeInfo& x = ctx.input_type(0);
  const DType t = x.elem_dtype();
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.input_dtype(i) != t) ctx.fail_node("input ", i, " must have the input's type ", dtype_name(t));
  if (x.has_shape && (x.shape.size() < 2 || x.shape.size() > 3)) ctx.fail_node("input must be 2-D or 3-D, got ", x.shape.to_string());
  const int64_t d = x.has_shape ? x.shape[x.shape.size() - 1] : -1;
  require_vector(ctx, 2, "gamma", d);
  if (!simplified) require_vector(ctx, 3, "beta", d);
  require_vector(ctx, simplified ? 3 : 4, "bias", d);
  ctx.propagate(0, 0);
  for (size_t o : {1, 2}) {
    if (!ctx.has_output(o)) continue;
    if (x.has_shape)
      ctx.set_output(o, DType::kFloat, row_stat_shape(x.shape));
    else
      ctx.set_output_unranked(o, DType::kFloat);
  }
  if (ctx.has_output(3)) ctx.propagate(3, 0);
}

/// SimplifiedLayerNormalization(X, scale): Y like X; inv_std_var with the dims from `axis` on
/// set to 1, in float (stash_type 1).
void infer_simplified_layer_norm(InferContext& ctx) {
  require_float(ctx, 0, "X");
  const TypeInfo& x = ctx.input_type(0);
  ctx.propagate(0, 0);
  if (!ctx.has_output(1)) return;
  const DType st = ctx.node().attr_int("stash_type", 1) == 1 ? DType::kFloat : x.elem_dtype();
  if (!x.has_shape) return ctx.set_output_unranked(1, st);
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), static_cast<int64_t>(x.shape.size()), ctx.node().label());
  ctx.set_output(1, st, layer_norm_stat_shape(x.shape, axis));
}

/// EmbedLayerNormalization(input_ids [B, S], segment_ids, word_embedding [V, D], position_embedding
/// [P, D], segment_embedding [G, D], gamma [D], beta [D], mask [B, S], position_ids): output
/// [B, S, D], mask_index int32 [B], embedding_sum [B, S, D].
void infer_embed_layer_norm(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kInt32});
  if (ctx.has_input(1)) ctx.require_dtype(1, {DType::kInt32});
  if (ctx.num_inputs() > 7 && ctx.has_input(7)) ctx.require_dtype(7, {DType::kInt32});
  if (ctx.num_inputs() > 8 && ctx.has_input(8)) ctx.require_dtype(8, {DType::kInt32});
  require_float(ctx, 2, "word_embedding");
  const DType t = ctx.input_dtype(2);
  for (size_t i : {3, 4, 5, 6})
    if (ctx.has_input(i) && ctx.input_dtype(i) != t) ctx.fail_node("input ", i, " must have word_embedding's type ", dtype_name(t));
  if (ctx.has_input(1) != ctx.has_input(4)) ctx.fail_node("segment_ids and segment_embedding must be given together");
  const TypeInfo& ids = ctx.input_type(0);
  if (ids.has_shape && ids.shape.size() != 2) ctx.fail_node("input_ids must be 2-D [batch, sequence], got ", ids.shape.to_string());
  int64_t d = -1;
  for (size_t i : {2, 3, 4}) {
    if (!ctx.input_has_shape(i)) continue;
    const Shape& s = ctx.input_shape(i);
    if (s.size() != 2) ctx.fail_node("input ", i, " (an embedding table) must be 2-D, got ", s.to_string());
    if (s[1] >= 0) {
      if (d >= 0 && d != s[1]) ctx.fail_node("the embedding tables have different widths (", d, " and ", s[1], ")");
      d = s[1];
    }
  }
  require_vector(ctx, 5, "gamma", d);
  require_vector(ctx, 6, "beta", d);
  const int64_t B = ids.has_shape ? dim_or_fresh(ctx, ids.shape, 0) : ctx.fresh();
  const int64_t S = ids.has_shape ? dim_or_fresh(ctx, ids.shape, 1) : ctx.fresh();
  const int64_t D = d >= 0 ? d : ctx.fresh();
  ctx.set_output(0, t, Shape{B, S, D});
  if (ctx.has_output(1)) ctx.set_output(1, DType::kInt32, Shape{B});
  if (ctx.has_output(2)) ctx.set_output(2, t, Shape{B, S, D});
}

/// Attention(input [B, S, In], weights [In, Dq + Dk + Dv], bias, mask_index, past [2, B, N, P, H],
/// attention_bias, past_sequence_length): output [B, S, Dv]; present [2, B, N, P + S, H].
void infer_ms_attention(InferContext& ctx) {
  require_float(ctx, 0, "input");
  const Node& n = ctx.node();
  const DType t = ctx.input_dtype(0);
  if (ctx.input_dtype(1) != t) ctx.fail_node("weights must have the input's type");
  if (ctx.has_input(2) && ctx.input_dtype(2) != t) ctx.fail_node("bias must have the input's type");
  const int64_t heads = n.attr_int("num_heads", 0);
  if (heads <= 0) ctx.fail_node("num_heads must be positive, got ", heads);
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& w = ctx.input_type(1);
  if (x.has_shape && x.shape.size() != 3) ctx.fail_node("input must be 3-D [batch, sequence, hidden], got ", x.shape.to_string());
  if (w.has_shape && w.shape.size() != 2) ctx.fail_node("weights must be 2-D, got ", w.shape.to_string());
  if (x.has_shape && w.has_shape && x.shape[2] >= 0 && w.shape[0] >= 0 && x.shape[2] != w.shape[0])
    ctx.fail_node("input ", x.shape.to_string(), " and weights ", w.shape.to_string(), " do not chain");
  const std::vector<int64_t> sizes = n.attr_ints("qkv_hidden_sizes");
  int64_t dq = -1, dk = -1, dv = -1;
  if (!sizes.empty()) {
    if (sizes.size() != 3) ctx.fail_node("qkv_hidden_sizes must have 3 values, got ", sizes.size());
    dq = sizes[0], dk = sizes[1], dv = sizes[2];
    if (dq <= 0 || dk <= 0 || dv <= 0 || dq != dk) ctx.fail_node("qkv_hidden_sizes must be positive with Q's size equal to K's");
    if (w.has_shape && w.shape[1] >= 0 && w.shape[1] != dq + dk + dv)
      ctx.fail_node("weights have ", w.shape[1], " columns; qkv_hidden_sizes sum to ", dq + dk + dv);
  } else if (w.has_shape && w.shape[1] >= 0) {
    if (w.shape[1] % 3 != 0) ctx.fail_node("weights' ", w.shape[1], " columns are not 3 equal parts (Q, K, V)");
    dq = dk = dv = w.shape[1] / 3;
  }
  for (int64_t s : {dq, dv})
    if (s >= 0 && s % heads != 0) ctx.fail_node("a hidden size (", s, ") is not divisible by num_heads (", heads, ")");
  if (ctx.has_input(2) && dq >= 0) require_vector(ctx, 2, "bias", dq + dk + dv);
  const int64_t B = x.has_shape ? dim_or_fresh(ctx, x.shape, 0) : ctx.fresh();
  const int64_t S = x.has_shape ? dim_or_fresh(ctx, x.shape, 1) : ctx.fresh();
  ctx.set_output(0, t, Shape{B, S, dv >= 0 ? dv : ctx.fresh()});
  if (!ctx.has_output(1)) return;
  if (dq != dv && dq >= 0 && dv >= 0) ctx.fail_node("present needs Q, K and V of one hidden size");
  int64_t total = S;
  if (ctx.has_input(4)) {
    const TypeInfo& past = ctx.input_type(4);
    if (past.elem_dtype() != t) ctx.fail_node("past must have the input's type");
    if (past.has_shape && past.shape.size() != 5) ctx.fail_node("past must be 5-D [2, B, N, P, H], got ", past.shape.to_string());
    const int64_t p = past.has_shape ? past.shape[3] : -1;
    total = p >= 0 && S >= 0 ? p + S : ctx.fresh();
  }
  ctx.set_output(1, t, Shape{2, B, heads, total, dq >= 0 ? dq / heads : ctx.fresh()});
}

/// MultiHeadAttention(query [B, S, D], key [B, L, D] or [B, N, L, H], value, bias, key_padding_mask,
/// attention_bias, past_key [B, N, P, H], past_value, ...): output [B, S, Dv], present_key
/// [B, N, P + L, H], present_value [B, N, P + L, Hv], qk [B, N, S, P + L].
void infer_multi_head_attention(InferContext& ctx) {
  require_float(ctx, 0, "query");
  const Node& n = ctx.node();
  const DType t = ctx.input_dtype(0);
  for (size_t i : {1, 2, 3, 6, 7})
    if (ctx.has_input(i) && ctx.input_dtype(i) != t) ctx.fail_node("input ", i, " must have the query's type ", dtype_name(t));
  const int64_t heads = n.attr_int("num_heads", 0);
  if (heads <= 0) ctx.fail_node("num_heads must be positive, got ", heads);
  if (ctx.has_input(6) != ctx.has_input(7)) ctx.fail_node("past_key and past_value must be given together");
  const TypeInfo& q = ctx.input_type(0);
  if (!q.has_shape) {
    for (size_t o = 0; o < 4; ++o)
      if (ctx.has_output(o)) ctx.set_output_unranked(o, t);
    return;
  }
  if (q.shape.size() != 3) ctx.fail_node("query must be 3-D [batch, sequence, hidden] (packed forms are not supported), got ", q.shape.to_string());
  const int64_t B = dim_or_fresh(ctx, q.shape, 0), S = dim_or_fresh(ctx, q.shape, 1);
  const int64_t D = q.shape[2];
  if (D >= 0 && D % heads != 0) ctx.fail_node("query's hidden size (", D, ") is not divisible by num_heads (", heads, ")");
  if (!ctx.has_input(1) || !ctx.has_input(2)) ctx.fail_node("key and value are required (packed QKV is not supported)");
  const TypeInfo& k = ctx.input_type(1);
  const TypeInfo& v = ctx.input_type(2);
  int64_t L = -1, H = D >= 0 ? D / heads : -1, Hv = -1;
  if (k.has_shape && v.has_shape) {
    if (k.shape.size() != v.shape.size() || (k.shape.size() != 3 && k.shape.size() != 4))
      ctx.fail_node("key and value must both be 3-D [B, L, D] or 4-D [B, N, L, H], got ", k.shape.to_string(), " and ", v.shape.to_string());
    if (k.shape.size() == 3) {
      L = k.shape[1];
      Hv = v.shape[2] >= 0 ? v.shape[2] / heads : -1;
      if (v.shape[2] >= 0 && v.shape[2] % heads != 0) ctx.fail_node("value's hidden size is not divisible by num_heads");
    } else {
      L = k.shape[2];
      Hv = v.shape[3];
      if (k.shape[1] >= 0 && k.shape[1] != heads) ctx.fail_node("key has ", k.shape[1], " heads; num_heads is ", heads);
    }
  }
  ctx.set_output(0, t, Shape{B, S, Hv >= 0 ? Hv * heads : ctx.fresh()});
  int64_t total = L;
  if (ctx.has_input(6) && ctx.input_has_shape(6)) {
    const Shape& p = ctx.input_shape(6);
    if (p.size() != 4) ctx.fail_node("past_key must be 4-D [B, N, P, H], got ", p.to_string());
    total = p[2] >= 0 && L >= 0 ? p[2] + L : ctx.fresh();
  }
  if (total < 0) total = ctx.fresh();
  if (ctx.has_output(1)) ctx.set_output(1, t, Shape{B, heads, total, H >= 0 ? H : ctx.fresh()});
  if (ctx.has_output(2)) ctx.set_output(2, t, Shape{B, heads, total, Hv >= 0 ? Hv : ctx.fresh()});
  if (ctx.has_output(3)) ctx.set_output(3, t, Shape{B, heads, S, total});
}

}  // namespace

void register_contrib_transformer_ops(OpRegistry& r) {
  r.add(kMs, "Gelu", {1}, infer_gelu_like);
  r.add(kMs, "QuickGelu", {1}, infer_gelu_like);
  r.add(kMs, "FastGelu", {1}, infer_gelu_like);
  r.add(kMs, "BiasGelu", {1}, infer_gelu_like);
  r.add(kMs, "BiasAdd", {1}, infer_bias_add);
  r.add(kMs, "BiasSplitGelu", {1}, infer_bias_split_gelu);
  r.add(kMs, "GemmFastGelu", {1}, infer_gemm_fast_gelu);
  r.add(kMs, "FusedMatMul", {1}, infer_fused_matmul);
  r.add(kMs, "SkipLayerNormalization", {1}, infer_skip_layer_norm);
  r.add(kMs, "SkipSimplifiedLayerNormalization", {1}, infer_skip_layer_norm);
  r.add("", "SimplifiedLayerNormalization", {1}, infer_simplified_layer_norm);
  r.add(kMs, "EmbedLayerNormalization", {1}, infer_embed_layer_norm);
  r.add(kMs, "Attention", {1}, infer_ms_attention);
  r.add(kMs, "MultiHeadAttention", {1}, infer_multi_head_attention);
}

}  // namespace onyx
