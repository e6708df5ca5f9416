// com.microsoft GroupQueryAttention and RotaryEmbedding (ONNX Runtime's LLM attention ops).
#include <algorithm>

#include "ops/families.hpp"
#include "ops/schema.hpp"

namespace onyx {

namespace {

/// Dim k of t: its value, a symbol (negative), or a fresh symbol when the rank is unknown.
int64_t dim_of(InferContext& ctx, const TypeInfo& t, size_t k) {
  return t.is_tensor() && t.has_shape && k < t.shape.size() ? t.shape[k] : ctx.fresh();
}

// GroupQueryAttention: query [B, S, N H] (or packed QKV [B, S, (N + 2 Nkv) H] without key and
// value), key / value [B, S, Nkv H], past_key / past_value [B, Nkv, P, H] (BNSH), seqlens_k [B],
// total_sequence_length (scalar). Outputs: output [B, S, N H]; present_key / present_value
// [B, Nkv, max(total_sequence_length, P), H] (the past buffer's length when it already holds the
// whole sequence: ONNX Runtime's shared past / present buffer); output_qk [B, N, S,
// total_sequence_length].
void infer_group_query_attention(InferContext& ctx) {
  const Node& n = ctx.node();
  const int64_t heads = n.attr_int("num_heads", 0), kv_heads = n.attr_int("kv_num_heads", 0);
  if (heads <= 0 || kv_heads <= 0) ctx.fail_node("num_heads (", heads, ") and kv_num_heads (", kv_heads, ") must be positive");
  if (heads % kv_heads != 0) ctx.fail_node("num_heads (", heads, ") must be a multiple of kv_num_heads (", kv_heads, ")");
  const int64_t qk_mode = n.attr_int("qk_output", 0);
  if (qk_mode < 0 || qk_mode > 2) ctx.fail_node("qk_output must be 0, 1 or 2, got ", qk_mode);
  const bool packed = !ctx.has_input(1);
  if (ctx.has_input(1) != ctx.has_input(2)) ctx.fail_node("key and value must be given together (or neither, for packed QKV)");
  if (ctx.has_input(3) != ctx.has_input(4)) ctx.fail_node("past_key and past_value must be given together");
  ctx.require_dtype(0, {DType::kFloat, DType::kFloat16, DType::kBFloat16});
  const DType t = ctx.input_dtype(0);
  for (size_t i : {1, 2})
    if (ctx.has_input(i) && ctx.input_dtype(i) != t)
      ctx.fail_node("input ", i, " has type ", dtype_name(ctx.input_dtype(i)), " but query has ", dtype_name(t));
  ctx.require_dtype(5, {DType::kInt32});
  ctx.require_dtype(6, {DType::kInt32});
  const TypeInfo& q = ctx.input_type(0);
  if (q.has_shape && q.shape.size() != 3) ctx.fail_node("query must be 3-D [batch, sequence, hidden], got ", q.shape.to_string());
  for (size_t i : {1, 2})
    if (ctx.input_has_shape(i) && ctx.input_shape(i).size() != 3)
      ctx.fail_node("input ", i, " must be 3-D [batch, sequence, kv_hidden], got ", ctx.input_shape(i).to_string());
  for (size_t i : {3, 4})
    if (ctx.input_has_shape(i) && ctx.input_shape(i).size() != 4)
      ctx.fail_node("input ", i, " must be 4-D [batch, kv_num_heads, sequence, head_size], got ", ctx.input_shape(i).to_string());
  const int64_t B = dim_of(ctx, q, 0), S = dim_of(ctx, q, 1), D = dim_of(ctx, q, 2);
  int64_t head = -1;
  if (D >= 0) {
    const int64_t parts = packed ? heads + 2 * kv_heads : heads;
    if (D % parts != 0)
      ctx.fail_node("query's hidden size ", D, " is not divisible by ", parts, packed ? " (num_heads + 2 kv_num_heads)" : " (num_heads)");
    head = D / parts;
  }
  if (head < 0 && ctx.has_input(1)) {
    const int64_t kd = dim_of(ctx, ctx.input_type(1), 2);
    if (kd >= 0 && kd % kv_heads == 0) head = kd / kv_heads;
  }
  // The present length: max(total_sequence_length, the past buffer's length) when both are known.
  std::vector<int64_t> total_v;
  const int64_t total = ctx.input_ints(6, total_v) && total_v.size() == 1 ? total_v[0] : -1;
  const int64_t past = ctx.has_input(3) ? dim_of(ctx, ctx.input_type(3), 2) : 0;
  const int64_t present = total >= 0 && past >= 0 ? std::max(total, past) : ctx.fresh();
  ctx.set_output(0, t, Shape{B, S, head >= 0 ? heads * head : ctx.fresh()});
  const DType cache_t = ctx.has_input(3) ? ctx.input_dtype(3) : t;
  for (size_t o : {1, 2})
    if (ctx.has_output(o))
      ctx.set_output(o, cache_t, Shape{B, kv_heads, present, head >= 0 ? head : ctx.fresh()});
  if (ctx.num_outputs() > 3 && ctx.has_output(3))
    ctx.set_output(3, t, Shape{B, heads, S, total >= 0 ? total : ctx.fresh()});
}

// RotaryEmbedding (com.microsoft): input [B, S, hidden] or [B, N, S, H], position_ids int64 [B, S]
// or one start offset, cos_cache / sin_cache [max_position, rotary_dim / 2]; the output has the
// input's type and shape.
void infer_ms_rotary_embedding(InferContext& ctx) {
  const Node& n = ctx.node();
  ctx.require_dtype(0, {DType::kFloat, DType::kFloat16, DType::kBFloat16});
  ctx.require_dtype(1, {DType::kInt64});
  for (size_t i : {2, 3})
    if (ctx.input_dtype(i) != ctx.input_dtype(0))
      ctx.fail_node("input ", i, " has type ", dtype_name(ctx.input_dtype(i)), " but the input has ", dtype_name(ctx.input_dtype(0)));
  if (ctx.input_has_shape(0) && ctx.input_shape(0).size() != 3 && ctx.input_shape(0).size() != 4)
    ctx.fail_node("input must be 3-D [batch, sequence, hidden] or 4-D [batch, heads, sequence, head_size], got ",
                  ctx.input_shape(0).to_string());
  for (size_t i : {2, 3})
    if (ctx.input_has_shape(i) && ctx.input_shape(i).size() != 2)
      ctx.fail_node("input ", i, " must be 2-D [max_position, rotary_dim / 2], got ", ctx.input_shape(i).to_string());
  if (n.attr_int("rotary_embedding_dim", 0) > 0 && n.attr_int("num_heads", 0) <= 0)
    ctx.fail_node("rotary_embedding_dim needs the num_heads attribute");
  ctx.propagate(0, 0);
}

}  // namespace

void register_contrib_gqa_ops(OpRegistry& r) {
  r.add("com.microsoft", "GroupQueryAttention", {1}, infer_group_query_attention);
  r.add("com.microsoft", "RotaryEmbedding", {1}, infer_ms_rotary_embedding);
}

}  // namespace onyx
