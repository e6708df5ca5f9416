// Random family: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike, Bernoulli,
// Multinomial. These nodes are never folded or evaluated while planning (see the executor's
// list of non-deterministic ops).
#include "ops/schema.hpp"

namespace onyx {

namespace {

bool is_float_type(DType d) {
  return d == DType::kFloat || d == DType::kDouble || d == DType::kFloat16 || d == DType::kBFloat16;
}

/// The `dtype` attribute as a DType, or `dflt` when absent; validated by `ok`.
DType dtype_attr(InferContext& ctx, DType dflt, bool (*ok)(DType), const char* expected) {
  const Node& n = ctx.node();
  if (!n.has_attr("dtype")) {
    if (!ok(dflt)) ctx.fail_node("output type ", dtype_name(dflt), " (from the input) is not ", expected, "; set dtype");
    return dflt;
  }
  const int64_t v = n.attr_int("dtype", 0);
  if (v <= 0 || !dtype_valid(static_cast<int32_t>(v)) || !ok(static_cast<DType>(v)))
    ctx.fail_node("dtype ", v, " is not ", expected);
  return static_cast<DType>(v);
}

void infer_random(InferContext& ctx) {
  const Node& n = ctx.node();
  const DType dt = dtype_attr(ctx, DType::kFloat, is_float_type, "a floating-point type");
  if (!n.has_attr("shape")) ctx.fail_node("attribute 'shape' is required");
  const std::vector<int64_t> shape = n.attr_ints("shape");
  for (int64_t d : shape)
    if (d < 0) ctx.fail_node("shape ", Shape(shape).to_string(), " has a negative dim");
  ctx.set_output(0, dt, Shape(shape));
}

void infer_random_like(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  const DType dt = dtype_attr(ctx, t.elem_dtype(), is_float_type, "a floating-point type");
  if (!t.has_shape) return ctx.set_output_unranked(0, dt);
  ctx.set_output(0, dt, t.shape);
}

bool bernoulli_out_ok(DType d) { return d != DType::kString && (dtype_is_float(d) || dtype_is_int(d) || d == DType::kBool); }

void infer_bernoulli(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  const DType dt = dtype_attr(ctx, t.elem_dtype(), bernoulli_out_ok, "a numeric or bool type");
  if (!t.has_shape) return ctx.set_output_unranked(0, dt);
  ctx.set_output(0, dt, t.shape);
}

bool index_type(DType d) { return d == DType::kInt32 || d == DType::kInt64; }

void infer_multinomial(InferContext& ctx) {
  const Node& n = ctx.node();
  const DType dt = dtype_attr(ctx, DType::kInt32, index_type, "int32 or int64");
  const int64_t samples = n.attr_int("sample_size", 1);
  if (samples < 0) ctx.fail_node("sample_size must be non-negative, got ", samples);
  int64_t batch = -1;
  if (ctx.input_has_shape(0)) {
    const Shape& s = ctx.input_shape(0);
    if (s.size() != 2) ctx.fail_node("the input must have shape [batch_size, class_size], got rank ", s.size());
    batch = s[0];
  }
  ctx.set_output(0, dt, Shape{batch >= 0 || ctx.input_has_shape(0) ? batch : ctx.fresh(), samples});
}

}  // namespace

void register_random_ops(OpRegistry& r) {
  r.add("", "RandomUniform", {1, 22}, infer_random);
  r.add("", "RandomNormal", {1, 22}, infer_random);
  r.add("", "RandomUniformLike", {1, 22}, infer_random_like);
  r.add("", "RandomNormalLike", {1, 22}, infer_random_like);
  r.add("", "Bernoulli", {15, 22}, infer_bernoulli);
  r.add("", "Multinomial", {7, 22}, infer_multinomial);
}

}  // namespace onyx
