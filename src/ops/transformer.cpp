// Transformer family (opsets 23+): Attention, RotaryEmbedding, TensorScatter, and the recurrent
// pieces of opset 27: CausalConvWithState, LinearAttention.
#include "ops/families.hpp"
#include "ops/schema.hpp"

namespace onyx {

namespace {

int64_t dim(const TypeInfo& t, size_t k) { return t.has_shape && k < t.shape.size() ? t.shape[k] : -1; }

/// a / b when both are known (a must divide), else a fresh symbol.
int64_t div_dim(InferContext& ctx, int64_t a, int64_t b, const char* what) {
  if (a < 0 || b <= 0) return ctx.fresh();
  if (a % b != 0) ctx.fail_node(what, " (", a, ") is not divisible by the number of heads (", b, ")");
  return a / b;
}

// Attention: Q [B, Hq, Sq, D] or [B, Sq, Hq D]; K, V [B, Hkv, Skv, D / Dv] or [B, Skv, Hkv D / Dv];
// past_key / past_value [B, Hkv, P, D / Dv]. Outputs Y [B, Hq, Sq, Dv] (or [B, Sq, Hq Dv]),
// present_key [B, Hkv, P + Skv, D], present_value [B, Hkv, P + Skv, Dv], qk [B, Hq, Sq, P + Skv].
void infer_attention(InferContext& ctx) {
  const Node& n = ctx.node();
  const TypeInfo& q = ctx.input_type(0);
  const TypeInfo& k = ctx.input_type(1);
  const TypeInfo& v = ctx.input_type(2);
  const DType t1 = q.elem_dtype(), t2 = v.elem_dtype();
  if (k.elem_dtype() != t1) ctx.fail_node("K has type ", dtype_name(k.elem_dtype()), " but Q has ", dtype_name(t1));
  if (ctx.has_input(4) != ctx.has_input(5)) ctx.fail_node("past_key and past_value must be given together");
  if (ctx.opset() >= 24 && ctx.has_input(6) && ctx.has_input(4))
    ctx.fail_node("nonpad_kv_seqlen cannot be combined with past_key / past_value");
  for (const char* a : {"left_window_size", "right_window_size"})
    if (n.attr_int(a, -1) < -1) ctx.fail_node(a, " must be -1 or non-negative, got ", n.attr_int(a, -1));
  if (!q.has_shape || !k.has_shape || !v.has_shape) {
    for (size_t o = 0; o < 4; ++o)
      if (ctx.has_output(o)) ctx.set_output_unranked(o, o == 2 ? t2 : t1);
    return;
  }
  const size_t r = q.shape.size();
  if ((r != 3 && r != 4) || k.shape.size() != r || v.shape.size() != r)
    ctx.fail_node("Q, K and V must all be 3-D or all 4-D, got ", q.shape.to_string(), ", ", k.shape.to_string(), ", ",
                  v.shape.to_string());
  const int64_t B = q.shape[0];
  int64_t hq, hkv, sq, skv, d, dv;
  if (r == 4) {
    if (n.has_attr("q_num_heads") || n.has_attr("kv_num_heads")) ctx.fail_node("q_num_heads and kv_num_heads are for 3-D inputs");
    hq = q.shape[1], hkv = k.shape[1], sq = q.shape[2], skv = k.shape[2], d = q.shape[3], dv = v.shape[3];
  } else {
    hq = n.attr_int("q_num_heads", 0), hkv = n.attr_int("kv_num_heads", 0);
    if (hq <= 0 || hkv <= 0) ctx.fail_node("3-D inputs need positive q_num_heads and kv_num_heads attributes");
    sq = q.shape[1], skv = k.shape[1];
    d = div_dim(ctx, q.shape[2], hq, "Q's hidden size");
    dv = div_dim(ctx, v.shape[2], hkv, "V's hidden size");
    (void)div_dim(ctx, k.shape[2], hkv, "K's hidden size");
  }
  if (hq > 0 && hkv > 0 && hq % hkv != 0) ctx.fail_node("q heads (", hq, ") must be a multiple of kv heads (", hkv, ")");
  int64_t total = skv;
  if (ctx.has_input(4)) {
    const int64_t p = dim(ctx.input_type(4), 2);
    total = p >= 0 && skv >= 0 ? p + skv : ctx.fresh();
  }
  if (r == 4)
    ctx.set_output(0, t1, Shape{B, hq, sq, dv});
  else
    ctx.set_output(0, t1, Shape{B, sq, hq > 0 && dv >= 0 ? hq * dv : ctx.fresh()});
  if (ctx.has_output(1)) ctx.set_output(1, t1, Shape{B, hkv, total, d});
  if (ctx.has_output(2)) ctx.set_output(2, t2, Shape{B, hkv, total, dv});
  if (ctx.has_output(3)) ctx.set_output(3, t1, Shape{B, hq, sq, total});
}

// RotaryEmbedding: Y has X's type and shape.
void infer_rotary_embedding(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape && x.shape.size() != 3 && x.shape.size() != 4)
    ctx.fail_node("X must be 3-D [batch, sequence, hidden] or 4-D [batch, heads, sequence, head], got ", x.shape.to_string());
  if (x.has_shape && x.shape.size() == 3 && ctx.node().attr_int("num_heads", 0) <= 0)
    ctx.fail_node("a 3-D X needs the num_heads attribute");
  ctx.propagate(0, 0);
}

// TensorScatter: the present cache has the past cache's type and shape.
void infer_tensor_scatter(InferContext& ctx) {
  const std::string mode = ctx.node().attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") ctx.fail_node("mode must be 'linear' or 'circular', got '", mode, "'");
  if (ctx.input_dtype(1) != ctx.input_dtype(0)) ctx.fail_node("update and past_cache have different types");
  ctx.propagate(0, 0);
}

// CausalConvWithState: output like the input [B, C, L]; present_state [B, C, k - 1].
void infer_causal_conv(InferContext& ctx) {
  const std::string act = ctx.node().attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish") ctx.fail_node("activation must be none, silu or swish, got '", act, "'");
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& w = ctx.input_type(1);
  if (x.has_shape && x.shape.size() != 3) ctx.fail_node("input must be 3-D [batch, channels, length], got ", x.shape.to_string());
  if (w.has_shape && w.shape.size() != 3) ctx.fail_node("weight must be 3-D [channels, 1, k], got ", w.shape.to_string());
  ctx.propagate(0, 0);
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) {
    const int64_t k = dim(w, 2);
    ctx.set_output(1, x.elem_dtype(), Shape{dim(x, 0), dim(x, 1), k > 0 ? k - 1 : ctx.fresh()});
  }
}

// LinearAttention: output [B, T, Hq dv]; present_state [B, Hkv, dk, dv] of past_state's type (or
// the query's).
void infer_linear_attention(InferContext& ctx) {
  const Node& n = ctx.node();
  const int64_t hq = n.attr_int("q_num_heads", 0), hkv = n.attr_int("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    ctx.fail_node("q_num_heads (", hq, ") must be a positive multiple of kv_num_heads (", hkv, ")");
  const std::string rule = n.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    ctx.fail_node("update_rule must be linear, gated, delta or gated_delta, got '", rule, "'");
  const bool gated = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (gated != ctx.has_input(4)) ctx.fail_node("update_rule '", rule, gated ? "' needs" : "' takes no", " decay (input 4)");
  if (delta != ctx.has_input(5)) ctx.fail_node("update_rule '", rule, delta ? "' needs" : "' takes no", " beta (input 5)");
  const TypeInfo& q = ctx.input_type(0);
  const TypeInfo& v = ctx.input_type(2);
  for (size_t i = 0; i < 3; ++i)
    if (ctx.input_type(i).has_shape && ctx.input_type(i).shape.size() != 3)
      ctx.fail_node("query, key and value must be 3-D [batch, time, heads * size]");
  const int64_t dk = div_dim(ctx, dim(q, 2), hq, "query's last dim"), dv = div_dim(ctx, dim(v, 2), hkv, "value's last dim");
  ctx.set_output(0, q.elem_dtype(), Shape{dim(q, 0), dim(q, 1), dv >= 0 ? hq * dv : ctx.fresh()});
  if (ctx.num_outputs() > 1 && ctx.has_output(1))
    ctx.set_output(1, ctx.has_input(3) ? ctx.input_dtype(3) : q.elem_dtype(), Shape{dim(q, 0), hkv, dk, dv});
}

}  // namespace

/// The precision FlexAttention's softmax runs in: softmax_precision, else float for the half
/// types and the input's own type for float and double.
DType flex_softmax_dtype(InferContext& ctx, DType q) {
  const int64_t p = ctx.node().attr_int("softmax_precision", 0);
  if (p != 0) {
    const DType d = static_cast<DType>(p);
    if (d != DType::kFloat && d != DType::kFloat16 && d != DType::kBFloat16 && d != DType::kDouble)
      ctx.fail_node("softmax_precision must be float, float16, bfloat16 or double (1, 10, 16, 11), got ", p);
    return d;
  }
  return q == DType::kFloat16 || q == DType::kBFloat16 ? DType::kFloat : q;
}

// FlexAttention (ai.onnx.preview 1): Q [B, Hq, L, E], K [B, Hkv, S, E], V [B, Hkv, S, Ev] ->
// [B, Hq, L, Ev]; the score_mod / prob_mod graphs map a [B, Hq, L, S] tensor of the softmax's
// precision to one of the same type and shape.
void infer_flex_attention(InferContext& ctx) {
  const TypeInfo& q = ctx.input_type(0);
  const TypeInfo& k = ctx.input_type(1);
  const TypeInfo& v = ctx.input_type(2);
  for (size_t i = 0; i < 3; ++i)
    if (ctx.input_type(i).has_shape && ctx.input_type(i).shape.size() != 4)
      ctx.fail_node("Q, K and V must be 4-D [batch, heads, sequence, size], got ", ctx.input_type(i).shape.to_string(),
                    " for input ", i);
  const int64_t hq = dim(q, 1), hkv = dim(k, 1);
  if (hq > 0 && hkv > 0 && hq % hkv != 0) ctx.fail_node("Q's ", hq, " heads are not a multiple of K's ", hkv);
  if (dim(q, 3) > 0 && dim(k, 3) > 0 && dim(q, 3) != dim(k, 3))
    ctx.fail_node("Q and K have head sizes ", dim(q, 3), " and ", dim(k, 3));
  ctx.set_output(0, q.elem_dtype(), Shape{dim(q, 0), hq, dim(q, 2), dim(v, 3)});
  const DType sd = flex_softmax_dtype(ctx, q.elem_dtype());
  const TypeInfo scores = TypeInfo::tensor(sd, Shape{dim(q, 0), hq, dim(q, 2), dim(k, 2)});
  for (const char* name : {"score_mod", "prob_mod"}) {
    const Graph* g = ctx.node().attr_graph(name);
    if (!g) continue;
    if (g->inputs.size() != 1 || g->outputs.size() != 1)
      ctx.fail_node(name, " must take one input and return one output, it takes ", g->inputs.size(), " and returns ",
                    g->outputs.size());
    const std::vector<TypeInfo> out = ctx.infer_subgraph(*g, {scores});
    if (out[0].is_tensor() && out[0].elem_dtype() != DType::kUndefined && out[0].elem_dtype() != sd)
      ctx.fail_node(name, " returns ", dtype_name(out[0].elem_dtype()), " for a ", dtype_name(sd), " input");
  }
}

void register_transformer_ops(OpRegistry& r) {
  r.add("", "Attention", {23, 24, 25}, infer_attention);
  r.add("", "RotaryEmbedding", {23}, infer_rotary_embedding);
  r.add("", "TensorScatter", {24}, infer_tensor_scatter);
  r.add("", "CausalConvWithState", {27}, infer_causal_conv);
  r.add("", "LinearAttention", {27}, infer_linear_attention);
  r.add("ai.onnx.preview", "FlexAttention", {1}, infer_flex_attention);
}

}  // namespace onyx
