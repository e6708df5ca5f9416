// Elementwise family: unary math and activations, binary arithmetic with broadcasting,
// comparisons and logic, variadic Max/Min/Sum/Mean, Where, Clip, Cast/CastLike.
#include "ops/elementwise.hpp"

#include "ops/schema.hpp"

namespace onyx {

Shape legacy_broadcast_shape(const Node& node, const Shape& a, const Shape& b) {
  if (node.opset >= 7 || node.attr_int("broadcast", 0) == 0) return b;
  const Attribute* ax = node.attr("axis");
  if (!ax) return b;  // trailing alignment is numpy alignment
  int64_t axis = ax->i;
  const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  if (axis < 0) axis += ra;
  if (axis < 0 || axis > ra - rb)
    fail(ErrorCode::kInvalidGraph, node.label(), ": broadcast axis ", ax->i, " does not fit B of rank ", rb,
         " into A of rank ", ra);
  Shape out;
  for (int64_t k = 0; k < axis; ++k) out.push_back(1);
  for (int64_t d : b) out.push_back(d);
  while (static_cast<int64_t>(out.size()) < ra) out.push_back(1);
  return out;
}

Shape legacy_prelu_slope_shape(const Node& node, const Shape& x, const Shape& slope) {
  if (node.opset >= 7 || slope.size() != 1 || x.size() < 2 || slope[0] == 1) return slope;
  Shape out = {slope[0]};
  for (size_t k = 2; k < x.size(); ++k) out.push_back(1);
  return out;
}

namespace {

void infer_unary(InferContext& ctx) { ctx.propagate(0, 0); }

void infer_unary_bool(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  if (t.has_shape)
    ctx.set_output(0, DType::kBool, t.shape);
  else
    ctx.set_output_unranked(0, DType::kBool);
}

void infer_binary_as(InferContext& ctx, DType out) {
  const TypeInfo& a = ctx.input_type(0);
  const TypeInfo& b = ctx.input_type(1);
  if (!a.has_shape || !b.has_shape) return ctx.set_output_unranked(0, out);
  ctx.set_output(0, out, shape_util::broadcast(ctx, a.shape, legacy_broadcast_shape(ctx.node(), a.shape, b.shape)));
}

void infer_binary(InferContext& ctx) {
  if (ctx.input_dtype(0) != ctx.input_dtype(1) && ctx.node().op_type != "Pow" && ctx.node().op_type != "BitShift")
    ctx.fail_node("inputs have different types: ", dtype_name(ctx.input_dtype(0)), " and ", dtype_name(ctx.input_dtype(1)));
  infer_binary_as(ctx, ctx.input_dtype(0));
}

void infer_swiglu(InferContext& ctx) {
  if (ctx.input_dtype(0) != ctx.input_dtype(1))
    ctx.fail_node("A and B have different types: ", dtype_name(ctx.input_dtype(0)), " and ", dtype_name(ctx.input_dtype(1)));
  const TypeInfo& a = ctx.input_type(0);
  const TypeInfo& b = ctx.input_type(1);
  if (a.has_shape && b.has_shape) {
    bool same = a.shape.size() == b.shape.size();
    for (size_t k = 0; same && k < a.shape.size(); ++k) same = a.shape[k] < 0 || b.shape[k] < 0 || a.shape[k] == b.shape[k];
    if (!same) ctx.fail_node("A ", a.shape.to_string(), " and B ", b.shape.to_string(), " must have the same shape (no broadcasting)");
  }
  ctx.propagate(0, a.has_shape ? 0 : 1);
}

void infer_compare(InferContext& ctx) {
  if (ctx.input_dtype(0) != ctx.input_dtype(1))
    ctx.fail_node("inputs have different types: ", dtype_name(ctx.input_dtype(0)), " and ", dtype_name(ctx.input_dtype(1)));
  infer_binary_as(ctx, DType::kBool);
}

void infer_variadic(InferContext& ctx) {
  Shape out;
  const DType dt = ctx.input_dtype(0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.input_dtype(i) != dt)
      ctx.fail_node("input ", i, " has type ", dtype_name(ctx.input_dtype(i)), ", input 0 has ", dtype_name(dt));
  if (ctx.opset() < 8) {
    // Before opset 8 these ops required equal shapes.
    if (!ctx.input_has_shape(0)) return ctx.set_output_unranked(0, dt);
    const Shape& s0 = ctx.input_shape(0);
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      if (!ctx.input_has_shape(i)) continue;
      const Shape& si = ctx.input_shape(i);
      bool same = si.size() == s0.size();
      for (size_t d = 0; same && d < si.size(); ++d) same = si[d] < 0 || s0[d] < 0 || si[d] == s0[d];
      if (!same)
        ctx.fail_node("input ", i, " has shape ", si.to_string(), " but input 0 has ", s0.to_string(),
                      " (before opset 8 the inputs must have one shape)");
    }
    return ctx.set_output(0, dt, s0);
  }
  if (!shape_util::broadcast_inputs(ctx, 0, ctx.num_inputs(), out)) return ctx.set_output_unranked(0, dt);
  ctx.set_output(0, dt, out);
}

void infer_where(InferContext& ctx) {
  Shape out;
  const DType dt = ctx.input_dtype(1);
  if (ctx.input_dtype(0) != DType::kBool) ctx.fail_node("condition must be bool, got ", dtype_name(ctx.input_dtype(0)));
  if (ctx.input_dtype(2) != dt) ctx.fail_node("X and Y have different types");
  if (!shape_util::broadcast_inputs(ctx, 0, 3, out)) return ctx.set_output_unranked(0, dt);
  ctx.set_output(0, dt, out);
}

void infer_prelu(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& s = ctx.input_type(1);
  if (!x.has_shape || !s.has_shape) return ctx.propagate(0, 0);
  Shape b = shape_util::broadcast(ctx, x.shape, legacy_prelu_slope_shape(ctx.node(), x.shape, s.shape));
  ctx.set_output(0, x.dtype, b);
}

void infer_cast(InferContext& ctx) {
  const int64_t to = ctx.node().attr_int("to", 0);
  if (!dtype_valid(static_cast<int32_t>(to))) ctx.fail_node("attribute 'to' is not a valid type (", to, ")");
  const TypeInfo& t = ctx.input_type(0);
  if (t.has_shape)
    ctx.set_output(0, static_cast<DType>(to), t.shape);
  else
    ctx.set_output_unranked(0, static_cast<DType>(to));
}

void infer_cast_like(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  const DType to = ctx.input_dtype(1);
  if (t.has_shape)
    ctx.set_output(0, to, t.shape);
  else
    ctx.set_output_unranked(0, to);
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  // Unary, same type out.
  struct U {
    const char* name;
    std::vector<int> versions;
  };
  const U unary[] = {
      {"Abs", {1, 6, 13}},           {"Neg", {1, 6, 13}},           {"Exp", {1, 6, 13}},           {"Log", {1, 6, 13}},
      {"Sqrt", {1, 6, 13}},          {"Reciprocal", {1, 6, 13}},    {"Floor", {1, 6, 13}},         {"Ceil", {1, 6, 13}},
      {"Round", {11, 22}},           {"Sign", {9, 13}},             {"Sin", {7, 22}},              {"Cos", {7, 22}},
      {"Tan", {7, 22}},              {"Asin", {7, 22}},             {"Acos", {7, 22}},             {"Atan", {7, 22}},
      {"Sinh", {9, 22}},             {"Cosh", {9, 22}},             {"Asinh", {9, 22}},            {"Acosh", {9, 22}},
      {"Atanh", {9, 22}},            {"Erf", {9, 13}},              {"Sigmoid", {1, 6, 13}},       {"Tanh", {1, 6, 13}},
      {"Relu", {1, 6, 13, 14}},      {"LeakyRelu", {1, 6, 16}},     {"Elu", {1, 6, 22}},           {"Selu", {1, 6, 22}},
      {"Celu", {12, 28}},            {"HardSigmoid", {1, 6, 22}},   {"HardSwish", {14, 22}},       {"Softplus", {1, 22}},
      {"Softsign", {1, 22}},         {"ThresholdedRelu", {10, 22}}, {"Gelu", {20}},                {"Mish", {18, 22}},
      {"Not", {1}},                  {"BitwiseNot", {18}},          {"Clip", {1, 6, 11, 12, 13}},  {"Shrink", {9}},
  };
  for (const auto& u : unary) r.add("", u.name, u.versions, infer_unary);
  r.add("", "Swish", {24}, infer_unary);
  r.add("", "SwiGLU", {28}, infer_swiglu);
  r.add("", "IsNaN", {9, 13, 20}, infer_unary_bool);
  r.add("", "IsInf", {10, 20}, infer_unary_bool);

  const U binary[] = {
      {"Add", {1, 6, 7, 13, 14}},  {"Sub", {1, 6, 7, 13, 14}},  {"Mul", {1, 6, 7, 13, 14}},  {"Div", {1, 6, 7, 13, 14}},
      {"Pow", {1, 7, 12, 13, 15}}, {"Mod", {10, 13, 28}},       {"BitShift", {11, 28}},      {"BitwiseAnd", {18}},
      {"BitwiseOr", {18}},         {"BitwiseXor", {18}},
  };
  for (const auto& b : binary) r.add("", b.name, b.versions, infer_binary);
  const U compare[] = {
      {"Equal", {1, 7, 11, 13, 19}}, {"Less", {1, 7, 9, 13}}, {"Greater", {1, 7, 9, 13}},
      {"LessOrEqual", {12, 16}},     {"GreaterOrEqual", {12, 16}}, {"And", {1, 7}},
      {"Or", {1, 7}},                {"Xor", {1, 7}},
  };
  for (const auto& c : compare) r.add("", c.name, c.versions, infer_compare);
  r.add("", "Max", {1, 6, 8, 12, 13}, infer_variadic);
  r.add("", "Min", {1, 6, 8, 12, 13}, infer_variadic);
  r.add("", "Sum", {1, 6, 8, 13}, infer_variadic);
  r.add("", "Mean", {1, 6, 8, 13}, infer_variadic);
  r.add("", "Where", {9, 16}, infer_where);
  r.add("", "PRelu", {1, 6, 7, 9, 16}, infer_prelu);
  r.add("", "Cast", {1, 6, 9, 13, 19, 21, 23, 24, 25, 28}, infer_cast);
  r.add("", "CastLike", {15, 19, 21, 23, 24, 25}, infer_cast_like);
}

}  // namespace onyx
