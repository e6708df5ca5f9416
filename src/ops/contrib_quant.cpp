// Quantized operators of domain com.microsoft (version 1), as ONNX Runtime's quantizer writes them
// in its QOperator format: QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
// QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat and QLinearSoftmax. Each takes
// 8-bit tensors (uint8 or int8) with float scales and zero points of the data's type, one of each
// per tensor (a scalar or a one-element 1-D tensor).
#include <limits>

#include "ops/families.hpp"
#include "ops/nn.hpp"
#include "ops/schema.hpp"

namespace onyx {

namespace {

constexpr const char* kMs = "com.microsoft";

/// Input i is a quantized 8-bit tensor.
DType require_q8(InferContext& ctx, size_t i, const char* name) {
  const DType dt = ctx.input_dtype(i);
  if (dt != DType::kUInt8 && dt != DType::kInt8)
    ctx.fail_node(name, " (input ", i, ") has type ", dtype_name(dt), "; expected uint8 or int8");
  return dt;
}

/// Input i (a scale, or a zero point when `zp_type` is given) is one value: a scalar or a
/// one-element 1-D tensor, of type float (scale) or `zp_type` (zero point). Absent optional
/// inputs are skipped.
void require_param(InferContext& ctx, size_t i, const char* name, DType zp_type = DType::kUndefined) {
  if (!ctx.has_input(i)) return;
  const DType want = zp_type == DType::kUndefined ? DType::kFloat : zp_type;
  if (ctx.input_dtype(i) != want)
    ctx.fail_node(name, " (input ", i, ") has type ", dtype_name(ctx.input_dtype(i)), "; expected ", dtype_name(want));
  if (!ctx.input_has_shape(i)) return;
  const Shape& s = ctx.input_shape(i);
  if (s.size() > 1 || (s.size() == 1 && s[0] >= 0 && s[0] != 1))
    ctx.fail_node(name, " (input ", i, ") must be a scalar or a 1-element 1-D tensor, got shape ", s.to_string());
}

/// Required input i (omitted optional inputs are legal elsewhere, not here).
void require_input(InferContext& ctx, size_t i, const char* name) {
  if (!ctx.has_input(i)) ctx.fail_node(name, " (input ", i, ") is required");
}

/// Output 0: type dt, input 0's shape.
void output_like_x(InferContext& ctx, DType dt) {
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape)
    ctx.set_output(0, dt, x.shape);
  else
    ctx.set_output_unranked(0, dt);
}

// QLinearAdd / QLinearMul: A, A_scale, A_zero_point?, B, B_scale, B_zero_point?, C_scale,
// C_zero_point?; C is the numpy broadcast of A and B.
void infer_qlinear_binary(InferContext& ctx) {
  const DType dt = require_q8(ctx, 0, "A");
  if (ctx.input_dtype(3) != dt)
    ctx.fail_node("B (input 3) has type ", dtype_name(ctx.input_dtype(3)), " but A has type ", dtype_name(dt));
  require_input(ctx, 1, "A_scale");
  require_input(ctx, 4, "B_scale");
  require_input(ctx, 6, "C_scale");
  require_param(ctx, 1, "A_scale");
  require_param(ctx, 2, "A_zero_point", dt);
  require_param(ctx, 4, "B_scale");
  require_param(ctx, 5, "B_zero_point", dt);
  require_param(ctx, 6, "C_scale");
  require_param(ctx, 7, "C_zero_point", dt);
  const TypeInfo& a = ctx.input_type(0);
  const TypeInfo& b = ctx.input_type(3);
  if (!a.has_shape || !b.has_shape) return ctx.set_output_unranked(0, dt);
  ctx.set_output(0, dt, shape_util::broadcast(ctx, a.shape, b.shape));
}

// QLinearSigmoid / QLinearLeakyRelu / QLinearSoftmax: X, X_scale, X_zero_point?, Y_scale,
// Y_zero_point?; Y has X's type and shape.
void infer_qlinear_unary(InferContext& ctx) {
  const DType dt = require_q8(ctx, 0, "X");
  require_input(ctx, 1, "X_scale");
  require_input(ctx, 3, "Y_scale");
  require_param(ctx, 1, "X_scale");
  require_param(ctx, 2, "X_zero_point", dt);
  require_param(ctx, 3, "Y_scale");
  require_param(ctx, 4, "Y_zero_point", dt);
  output_like_x(ctx, dt);
}

void infer_qlinear_softmax(InferContext& ctx) {
  const Node& n = ctx.node();
  if (!n.has_attr("opset")) ctx.fail_node("attribute 'opset' (the Softmax opset the node follows) is required");
  require_input(ctx, 4, "y_zero_point");
  infer_qlinear_unary(ctx);
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape && !x.shape.empty()) {
    const int64_t dflt = n.attr_int("opset", 13) < 13 ? 1 : -1;
    (void)normalize_axis(n.attr_int("axis", dflt), static_cast<int64_t>(x.shape.size()), n.label());
  }
}

/// QLinearAveragePool / QLinearGlobalAveragePool: x's shape with the channels moved first when
/// channels_last is set (the pools' geometry is then the usual channels-first one).
bool channels_last(const Node& n) { return n.attr_int("channels_last", 0) != 0; }
Shape to_channels_first(const Shape& s) {
  Shape r{s[0], s[s.size() - 1]};
  for (size_t k = 1; k + 1 < s.size(); ++k) r.push_back(s[k]);
  return r;
}
Shape to_channels_last(const Shape& s) {
  Shape r{s[0]};
  for (size_t k = 2; k < s.size(); ++k) r.push_back(s[k]);
  r.push_back(s[1]);
  return r;
}

void infer_qlinear_pool_params(InferContext& ctx, bool zp_required) {
  const DType dt = require_q8(ctx, 0, "X");
  require_input(ctx, 1, "x_scale");
  require_input(ctx, 3, "y_scale");
  if (zp_required) {
    require_input(ctx, 2, "x_zero_point");
    require_input(ctx, 4, "y_zero_point");
  }
  require_param(ctx, 1, "x_scale");
  require_param(ctx, 2, "x_zero_point", dt);
  require_param(ctx, 3, "y_scale");
  require_param(ctx, 4, "y_zero_point", dt);
}

void infer_qlinear_average_pool(InferContext& ctx) {
  infer_qlinear_pool_params(ctx, false);
  const Node& n = ctx.node();
  const DType dt = ctx.input_dtype(0);
  const std::vector<int64_t> ks = n.attr_ints("kernel_shape");
  if (ks.empty()) ctx.fail_node("attribute 'kernel_shape' is required");
  if (ks.size() > 3) ctx.fail_node("kernel_shape has ", ks.size(), " dims; 1 to 3 spatial dims are supported");
  const TypeInfo& x0 = ctx.input_type(0);
  check_window_attr_sizes(n, x0.has_shape && x0.shape.size() >= 3 ? static_cast<int64_t>(x0.shape.size()) - 2
                                                                    : static_cast<int64_t>(ks.size()));
  const std::vector<int64_t> pads = n.attr_ints("pads");
  if (pads.size() == 2 * ks.size())
    for (size_t k = 0; k < ks.size(); ++k)
      if (pads[k] >= ks[k] || pads[k + ks.size()] >= ks[k])
        ctx.fail_node("pads ", Shape(pads).to_string(), " must be smaller than kernel_shape ", Shape(ks).to_string());
  const TypeInfo& x = ctx.input_type(0);
  if (!x.has_shape) return ctx.set_output_unranked(0, dt);
  if (x.shape.size() != ks.size() + 2)
    ctx.fail_node("X has shape ", x.shape.to_string(), "; kernel_shape ", Shape(ks).to_string(), " needs rank ", ks.size() + 2);
  const bool last = channels_last(n);
  const Shape xf = last ? to_channels_first(x.shape) : x.shape;
  WindowAttrs wa = WindowAttrs::of(n, true);
  wa.dilations = Shape();  // not an attribute of this op
  const WindowGeometry g = window_geometry(wa, n, Shape(std::span<const int64_t>(xf.data() + 2, xf.size() - 2)), Shape(ks));
  Shape out{xf[0], xf[1]};
  for (int64_t d : g.out) out.push_back(d < 0 ? ctx.fresh() : d);
  ctx.set_output(0, dt, last ? to_channels_last(out) : out);
}

void infer_qlinear_global_average_pool(InferContext& ctx) {
  infer_qlinear_pool_params(ctx, true);
  const DType dt = ctx.input_dtype(0);
  const TypeInfo& x = ctx.input_type(0);
  if (!x.has_shape) return ctx.set_output_unranked(0, dt);
  if (x.shape.size() < 3) ctx.fail_node("X must have rank >= 3 (N, C and spatial dims), got ", x.shape.to_string());
  Shape out = x.shape;
  const bool last = channels_last(ctx.node());
  for (size_t k = last ? 1 : 2; k < (last ? out.size() - 1 : out.size()); ++k) out[k] = 1;
  ctx.set_output(0, dt, out);
}

// QLinearConcat: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input.
void infer_qlinear_concat(InferContext& ctx) {
  const Node& n = ctx.node();
  const size_t count = ctx.num_inputs();
  if (count < 5 || (count - 2) % 3 != 0)
    ctx.fail_node("has ", count, " inputs; expected Y_scale, Y_zero_point and one (X, X_scale, X_zero_point) triple per input");
  require_input(ctx, 0, "Y_scale");
  require_input(ctx, 1, "Y_zero_point");
  require_param(ctx, 0, "Y_scale");
  const DType dt = ctx.input_dtype(1);
  if (dt != DType::kUInt8 && dt != DType::kInt8)
    ctx.fail_node("Y_zero_point (input 1) has type ", dtype_name(dt), "; expected uint8 or int8");
  require_param(ctx, 1, "Y_zero_point", dt);
  if (!n.has_attr("axis")) ctx.fail_node("attribute 'axis' is required");
  const int64_t axis = n.attr_int("axis", 0);
  Shape out;
  bool have = false, ranked = true;
  int64_t a = 0;
  for (size_t i = 2; i < count; i += 3) {
    for (size_t j = i; j < i + 3; ++j)
      if (!ctx.has_input(j)) ctx.fail_node("input ", j, " is required (each X, X_scale, X_zero_point triple is complete)");
    if (ctx.input_dtype(i) != dt)
      ctx.fail_node("input ", i, " has type ", dtype_name(ctx.input_dtype(i)), " but Y_zero_point (input 1) has type ",
                    dtype_name(dt));
    require_param(ctx, i + 1, "X_scale");
    require_param(ctx, i + 2, "X_zero_point", dt);
    if (!ctx.input_has_shape(i)) {
      ranked = false;
      continue;
    }
    const Shape& s = ctx.input_shape(i);
    if (!have) {
      a = normalize_axis(axis, static_cast<int64_t>(s.size()), n.label());
      out = s;
      have = true;
      continue;
    }
    if (s.size() != out.size())
      ctx.fail_node("input ", i, " has rank ", s.size(), " but input 2 has rank ", out.size());
    for (size_t k = 0; k < s.size(); ++k) {
      if (static_cast<int64_t>(k) == a) {
        out[k] = out[k] >= 0 && s[k] >= 0 ? out[k] + s[k] : ctx.fresh();
      } else if (out[k] < 0) {
        out[k] = s[k];
      } else if (s[k] >= 0 && s[k] != out[k]) {
        ctx.fail_node("input ", i, " has shape ", s.to_string(), ", which differs from ", out.to_string(), " off axis ", a);
      }
    }
  }
  if (!ranked || !have) return ctx.set_output_unranked(0, dt);
  ctx.set_output(0, dt, out);
}

}  // namespace

void register_contrib_quant_ops(OpRegistry& r) {
  r.add(kMs, "QLinearAdd", {1}, infer_qlinear_binary);
  r.add(kMs, "QLinearMul", {1}, infer_qlinear_binary);
  r.add(kMs, "QLinearSigmoid", {1}, infer_qlinear_unary);
  r.add(kMs, "QLinearLeakyRelu", {1}, infer_qlinear_unary);
  r.add(kMs, "QLinearSoftmax", {1}, infer_qlinear_softmax);
  r.add(kMs, "QLinearAveragePool", {1}, infer_qlinear_average_pool);
  r.add(kMs, "QLinearGlobalAveragePool", {1}, infer_qlinear_global_average_pool);
  r.add(kMs, "QLinearConcat", {1}, infer_qlinear_concat);
}

}  // namespace onyx
