// Loss family: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
#include "ops/schema.hpp"

namespace onyx {

namespace {

/// Checks input 0 ([N, C, d1..dk]) against input 1 ([N, d1..dk]) and the optional weights ([C]),
/// sets output 0 (the loss: [N, d1..dk] for reduction "none", else a scalar) and returns the
/// input's type.
const TypeInfo& infer_loss_common(InferContext& ctx) {
  const Node& n = ctx.node();
  const std::string reduction = n.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    ctx.fail_node("reduction must be 'none', 'sum' or 'mean', got '", reduction, "'");
  ctx.require_dtype(1, {DType::kInt32, DType::kInt64});
  const TypeInfo& x = ctx.input_type(0);
  const DType dt = x.elem_dtype();
  if (ctx.has_input(2) && ctx.input_dtype(2) != dt)
    ctx.fail_node("weights have type ", dtype_name(ctx.input_dtype(2)), ", input 0 has ", dtype_name(dt));
  const bool have_x = x.has_shape;
  const bool have_t = ctx.input_has_shape(1);
  if (have_x && x.shape.size() < 2) ctx.fail_node("input 0 must have rank >= 2 ([N, C, ...]), got ", x.shape.to_string());
  Shape loss;  // [N, d1..dk], as far as known
  if (have_x && have_t) {
    const Shape& t = ctx.input_shape(1);
    if (t.size() + 1 != x.shape.size())
      ctx.fail_node("target of shape ", t.to_string(), " does not match input of shape ", x.shape.to_string());
    for (size_t k = 0; k < t.size(); ++k) {
      const int64_t a = x.shape[k == 0 ? 0 : k + 1], b = t[k];
      if (a >= 0 && b >= 0 && a != b)
        ctx.fail_node("target of shape ", t.to_string(), " does not match input of shape ", x.shape.to_string());
      loss.push_back(a >= 0 ? a : b);
    }
    if (ctx.has_input(2) && ctx.input_has_shape(2)) {
      const Shape& w = ctx.input_shape(2);
      if (w.size() != 1 || (w[0] >= 0 && x.shape[1] >= 0 && w[0] != x.shape[1]))
        ctx.fail_node("weights of shape ", w.to_string(), " do not match ", x.shape[1], " classes");
    }
  } else if (have_x) {
    for (size_t k = 0; k < x.shape.size(); ++k)
      if (k != 1) loss.push_back(x.shape[k]);
  } else if (have_t) {
    loss = ctx.input_shape(1);
  }
  if (reduction != "none")
    ctx.set_output(0, dt, Shape{});
  else if (have_x || have_t)
    ctx.set_output(0, dt, loss);
  else
    ctx.set_output_unranked(0, dt);
  return x;
}

void infer_nll(InferContext& ctx) { (void)infer_loss_common(ctx); }

void infer_sce(InferContext& ctx) {
  const TypeInfo& x = infer_loss_common(ctx);
  if (ctx.num_outputs() > 1) ctx.set_output_type(1, x);
}

}  // namespace

void register_loss_ops(OpRegistry& r) {
  r.add("", "NegativeLogLikelihoodLoss", {12, 13, 22}, infer_nll);
  r.add("", "SoftmaxCrossEntropyLoss", {12, 13}, infer_sce);
}

}  // namespace onyx
