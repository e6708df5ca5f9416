// Training family (domain ai.onnx.preview.training, version 1): the optimizers Adagrad, Adam and
// Momentum in their multi-tensor form. Inputs are R (learning rate), T (update count), then
// `groups` lists of n tensors each (X..., G..., and the optimizer's state tensors); outputs are
// the new X... followed by the new state tensors. Gradient: the gradients of `y` with respect to
// the tensors named by `xs` (inputs: the values of xs then zs), each of its x's type.
#include "ops/schema.hpp"

namespace onyx {

namespace {

/// Input groups after R and T (X, G and the state tensors) and output groups per optimizer.
struct OptimizerLayout {
  int in_groups;
  int out_groups;
};

OptimizerLayout layout_of(const Node& n) {
  if (n.op_type == "Adam") return {4, 3};  // X, G, V, H -> X_new, V_new, H_new
  return {3, 2};                           // Adagrad: X, G, H; Momentum: X, G, V
}

void infer_optimizer(InferContext& ctx) {
  const Node& n = ctx.node();
  const OptimizerLayout L = layout_of(n);
  const size_t nin = n.inputs.size();
  if (nin < 2 + static_cast<size_t>(L.in_groups) || (nin - 2) % L.in_groups != 0)
    ctx.fail_node("expects R, T and ", L.in_groups, " lists of equal length (2 + ", L.in_groups, " * N inputs), got ",
                  nin, " inputs");
  const size_t count = (nin - 2) / L.in_groups;
  if (n.outputs.size() > count * L.out_groups)
    ctx.fail_node("optimizes ", count, " tensors, so it has at most ", count * L.out_groups, " outputs, got ",
                  n.outputs.size());
  for (size_t i = 0; i < nin; ++i)
    if (!ctx.has_input(i)) ctx.fail_node("input ", i, " is required but missing");
  ctx.require_dtype(0, {DType::kFloat, DType::kDouble});
  ctx.require_dtype(1, {DType::kInt64});
  for (size_t s = 0; s < 2; ++s)
    if (ctx.input_has_shape(s) && ctx.input_shape(s).numel() != 1 && ctx.input_shape(s).is_concrete())
      ctx.fail_node(s == 0 ? "R" : "T", " (input ", s, ") must be a scalar, got shape ", ctx.input_shape(s).to_string());
  const DType dt = ctx.input_dtype(2);
  if (dt != DType::kFloat && dt != DType::kDouble)
    ctx.fail_node("optimized tensors must be float or double, got ", dtype_name(dt));
  for (size_t i = 0; i < count; ++i) {
    const TypeInfo& x = ctx.input_type(2 + i);
    for (int g = 0; g < L.in_groups; ++g) {
      const size_t k = 2 + g * count + i;
      if (ctx.input_dtype(k) != dt)
        ctx.fail_node("input ", k, " has type ", dtype_name(ctx.input_dtype(k)), " but the optimized tensors have type ",
                      dtype_name(dt));
      if (g > 0 && x.has_shape && ctx.input_has_shape(k) && x.shape.is_concrete() && ctx.input_shape(k).is_concrete() &&
          !(x.shape == ctx.input_shape(k)))
        ctx.fail_node("input ", k, " has shape ", ctx.input_shape(k).to_string(), " but the tensor it belongs to (input ",
                      2 + i, ") has shape ", x.shape.to_string());
    }
    // Outputs: X_new for group 0, then the state tensors (input groups 2...) in order.
    for (int g = 0; g < L.out_groups; ++g) {
      const size_t in = g == 0 ? 2 + i : 2 + (g + 1) * count + i;
      ctx.set_output_type(g * count + i, ctx.input_type(in));
    }
  }
  if (n.op_type == "Momentum") {
    for (const char* a : {"alpha", "beta", "norm_coefficient", "mode"})
      if (!n.has_attr(a)) ctx.fail_node("attribute '", a, "' is required");
    const std::string mode = n.attr_string("mode");
    if (mode != "standard" && mode != "nesterov")
      ctx.fail_node("mode must be \"standard\" or \"nesterov\", got \"", mode, "\"");
  }
}

void infer_gradient(InferContext& ctx) {
  const Node& n = ctx.node();
  const auto xs = n.attr_strings("xs");
  const auto zs = n.attr_strings("zs");
  if (xs.empty()) ctx.fail_node("attribute 'xs' is required");
  if (n.attr_string("y").empty()) ctx.fail_node("attribute 'y' is required");
  if (n.inputs.size() != xs.size() + zs.size())
    ctx.fail_node("has ", n.inputs.size(), " inputs but xs and zs name ", xs.size() + zs.size(), " tensors");
  if (n.outputs.size() > xs.size()) ctx.fail_node("has ", n.outputs.size(), " outputs but xs names ", xs.size());
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (!ctx.has_input(i)) ctx.fail_node("input ", i, " is required");
    ctx.require_dtype(i, {DType::kFloat, DType::kDouble});
    ctx.set_output_type(i, ctx.input_type(i));
  }
}

}  // namespace

void register_training_ops(OpRegistry& r) {
  r.add("ai.onnx.preview.training", "Adagrad", {1}, infer_optimizer);
  r.add("ai.onnx.preview.training", "Adam", {1}, infer_optimizer);
  r.add("ai.onnx.preview.training", "Momentum", {1}, infer_optimizer);
  r.add("ai.onnx.preview.training", "Gradient", {1}, infer_gradient);
}

}  // namespace onyx
