// What the XNNPACK EP takes, and why it declines the rest. Every rule here mirrors what the
// region compiler (region.cpp) can build from the 2022-02-16 operator API in xnnpack.h, so a
// claimed node never fails to compile for a reason known at claim time.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/elementwise.hpp"
#include "ops/image.hpp"
#include "ops/nn.hpp"
#include "xnnpack_ep.hpp"

namespace onyx::xnnpack {

const Tensor* constant_value(const Graph& g, int v) {
  if (v < 0) return nullptr;
  const ValueSlot& s = g.values[v];
  if (s.has_initializer) return s.is_graph_input ? nullptr : &s.initializer;
  if (s.producer >= 0) {
    const Node& p = g.nodes[s.producer];
    if (p.op_type == "Constant" && p.domain.empty() && p.outputs.size() == 1) return p.attr_tensor("value");
  }
  return nullptr;
}

namespace {

const TypeInfo* type_of(const Graph& g, const Node& n, size_t i) {
  return n.has_input(i) ? &g.values[n.inputs[i]].type : nullptr;
}
/// Rank of input i, or -1 when unknown.
int rank_of(const Graph& g, const Node& n, size_t i) {
  const TypeInfo* t = type_of(g, n, i);
  return t && t->is_tensor() && t->has_shape ? static_cast<int>(t->shape.size()) : -1;
}
const Shape* shape_of(const Graph& g, const Node& n, size_t i) {
  const TypeInfo* t = type_of(g, n, i);
  return t && t->is_tensor() && t->has_shape ? &t->shape : nullptr;
}

/// Inputs `count` first inputs (and output 0) must be float32 tensors.
bool float_only(const Graph& g, const Node& n, size_t count, Decline* why) {
  for (size_t i = 0; i < count && i < n.inputs.size(); ++i) {
    const TypeInfo* t = type_of(g, n, i);
    if (!t) continue;
    if (!t->is_tensor())
      return decline(why, DeclineCode::kUnsupportedType, str("float32 tensors only (input ", i, " is not a tensor)"));
    if (t->dtype != DType::kFloat)
      return decline(why, DeclineCode::kUnsupportedType,
                     str("float32 only (input ", i, " is ", dtype_name(t->dtype), ")"));
  }
  if (n.has_output(0)) {
    const TypeInfo& t = g.values[n.outputs[0]].type;
    if (t.elem_dtype() != DType::kFloat)
      return decline(why, DeclineCode::kUnsupportedType, str("float32 only (output is ", dtype_name(t.elem_dtype()), ")"));
  }
  return true;
}

bool only_first_output(const Node& n, Decline* why) {
  for (size_t o = 1; o < n.outputs.size(); ++o)
    if (n.has_output(o))
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("output ", o, " of ", n.op_type, " (XNNPACK computes only the first)"));
  return true;
}

bool opset_in(const Node& n, int since, int until, Decline* why) {
  if (n.opset >= since && n.opset <= until) return true;
  return decline(why, DeclineCode::kOpsetOutOfRange,
                 str(n.op_type, " opset ", n.opset, " is outside the versions this EP maps to XNNPACK (", since, "..",
                     until, ")"));
}

/// A geometry check that may throw (bad attributes): declined as kOther with the message.
template <class F>
bool geometry_ok(Decline* why, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    return decline(why, DeclineCode::kOther, e.what());
  }
}

bool spatial_known(const Shape* x) { return x && x->size() == 4 && (*x)[2] >= 0 && (*x)[3] >= 0; }

bool auto_pad_ok(const Node& n, Decline* why) {
  const std::string ap = n.attr_string("auto_pad", "NOTSET");
  if (ap == "NOTSET" || ap == "VALID" || ap == "SAME_UPPER" || ap == "SAME_LOWER") return true;
  return decline(why, DeclineCode::kUnsupportedAttribute, str("auto_pad '", ap, "'"));
}

// ---- convolutions ----

bool claim_conv(const Graph& g, const Node& n, bool fused, Decline* why) {
  if (!float_only(g, n, 3, why)) return false;
  if (!n.has_input(1)) return decline(why, DeclineCode::kOther, "Conv without weights");
  const Tensor* w = constant_input(g, n, 1);
  if (!w) return decline(why, DeclineCode::kDynamicShape, "weights must be constant");
  if (w->dtype() != DType::kFloat) return decline(why, DeclineCode::kUnsupportedType, "float32 weights only");
  const int xr = rank_of(g, n, 0);
  if (w->rank() != 4 || (xr >= 0 && xr != 4))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("only 2-D convolution (XNNPACK's convolution2d); this one is ", (xr >= 0 ? xr : w->rank()) - 2, "-D"));
  if (n.has_input(2)) {
    const Tensor* b = constant_input(g, n, 2);
    if (!b) return decline(why, DeclineCode::kDynamicShape, "bias must be constant");
    if (b->numel() != w->dim(0)) return decline(why, DeclineCode::kOther, "bias size does not match the weights");
  }
  const int64_t group = n.attr_int("group", 1);
  if (group <= 0 || w->dim(0) % group != 0) return decline(why, DeclineCode::kOther, str("group ", group, " does not divide the output channels"));
  const Shape* x = shape_of(g, n, 0);
  if (x && (*x)[1] >= 0 && (*x)[1] != w->dim(1) * group)
    return decline(why, DeclineCode::kOther, "input channels do not match the weights and group");
  const std::vector<int64_t> ks = n.attr_ints("kernel_shape");
  if (!ks.empty() && (ks.size() != 2 || ks[0] != w->dim(2) || ks[1] != w->dim(3)))
    return decline(why, DeclineCode::kUnsupportedAttribute, "kernel_shape differs from the weight shape");
  if (!auto_pad_ok(n, why)) return false;
  if (fused) {
    const std::string act = n.attr_string("activation");
    const std::vector<float> p = n.attr_floats("activation_params");
    if (act == "Clip") {
      if (p.size() != 2) return decline(why, DeclineCode::kUnsupportedAttribute, "FusedConv Clip needs 2 activation_params");
      if (!(p[0] < p[1]))
        return decline(why, DeclineCode::kUnsupportedAttribute, "FusedConv Clip with min >= max (XNNPACK needs min < max)");
    } else if (act != "Relu") {
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("FusedConv activation '", act, "' (XNNPACK folds only Relu and Clip)"));
    }
  }
  return geometry_ok(why, [&] {
    const Shape in = spatial_known(x) ? Shape{(*x)[2], (*x)[3]} : Shape{-1, -1};
    window_geometry(n, in, Shape{w->dim(2), w->dim(3)}, false);
    return true;
  });
}

bool claim_conv_transpose(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 3, why)) return false;
  const Tensor* w = constant_input(g, n, 1);
  if (!w) return decline(why, DeclineCode::kDynamicShape, "weights must be constant");
  if (w->dtype() != DType::kFloat) return decline(why, DeclineCode::kUnsupportedType, "float32 weights only");
  const int xr = rank_of(g, n, 0);
  if (w->rank() != 4 || (xr >= 0 && xr != 4))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("only 2-D ConvTranspose (XNNPACK's deconvolution2d); this one is ", (xr >= 0 ? xr : w->rank()) - 2, "-D"));
  const int64_t group = n.attr_int("group", 1);
  if (group <= 0 || w->dim(0) % group != 0) return decline(why, DeclineCode::kOther, str("group ", group, " does not divide the input channels"));
  if (n.has_input(2)) {
    const Tensor* b = constant_input(g, n, 2);
    if (!b) return decline(why, DeclineCode::kDynamicShape, "bias must be constant");
    if (b->numel() != w->dim(1) * group) return decline(why, DeclineCode::kOther, "bias size does not match the weights");
  }
  const std::vector<int64_t> ks = n.attr_ints("kernel_shape");
  if (!ks.empty() && (ks.size() != 2 || ks[0] != w->dim(2) || ks[1] != w->dim(3)))
    return decline(why, DeclineCode::kUnsupportedAttribute, "kernel_shape differs from the weight shape");
  const std::string ap = n.attr_string("auto_pad", "NOTSET");
  if (ap != "NOTSET" && ap != "VALID" && ap != "SAME_UPPER" && ap != "SAME_LOWER")
    return decline(why, DeclineCode::kUnsupportedAttribute, str("auto_pad '", ap, "'"));
  const std::vector<int64_t> strides = n.attr_ints("strides", {1, 1});
  const std::vector<int64_t> opad = n.attr_ints("output_padding", {0, 0});
  if (strides.size() != 2 || opad.size() != 2) return decline(why, DeclineCode::kOther, "strides / output_padding need 2 values");
  for (size_t k = 0; k < 2; ++k)
    if (opad[k] >= strides[k])
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("output_padding ", opad[k], " >= stride ", strides[k], " (XNNPACK's adjustment must be below the stride)"));
  const Shape* x = shape_of(g, n, 0);
  return geometry_ok(why, [&] {
    if (!spatial_known(x)) {
      if (n.has_attr("output_shape"))
        return decline(why, DeclineCode::kDynamicShape, "output_shape with an input of unknown spatial size");
      return true;
    }
    const WindowGeometry geo = conv_transpose_geometry(n, Shape{(*x)[2], (*x)[3]}, Shape{w->dim(2), w->dim(3)});
    for (size_t k = 0; k < 2; ++k) {
      if (geo.pad_begin[k] < 0)
        return decline(why, DeclineCode::kUnsupportedAttribute, "output_shape needs negative leading padding");
      const int64_t span = (w->dim(2 + k) - 1) * geo.dilation[k] + 1;
      const int64_t full = geo.stride[k] * ((*x)[2 + k] - 1) + span - geo.pad_begin[k] - std::max<int64_t>(0, geo.pad_end[k]);
      const int64_t adj = geo.out[k] - full;
      if (adj < 0 || adj >= geo.stride[k])
        return decline(why, DeclineCode::kUnsupportedAttribute,
                       str("output size needs an adjustment of ", adj, " in spatial dim ", k,
                           " (XNNPACK's must be in [0, stride))"));
    }
    return true;
  });
}

// ---- fully connected ----

bool claim_gemm(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 3, why)) return false;
  if (n.attr_int("transA", 0) != 0)
    return decline(why, DeclineCode::kUnsupportedAttribute, "transA=1 (XNNPACK's fully connected takes A untransposed)");
  const Tensor* b = constant_input(g, n, 1);
  if (!b) return decline(why, DeclineCode::kDynamicShape, "weights must be constant (B is computed at run time)");
  if (b->rank() != 2 || b->dtype() != DType::kFloat) return decline(why, DeclineCode::kOther, "B must be a float32 matrix");
  const int64_t N = n.attr_int("transB", 0) ? b->dim(0) : b->dim(1);
  if (n.has_input(2)) {
    const Tensor* c = constant_input(g, n, 2);
    if (!c) return decline(why, DeclineCode::kDynamicShape, "C (the bias) must be constant");
    if (c->dtype() != DType::kFloat) return decline(why, DeclineCode::kUnsupportedType, "float32 C only");
    const bool row = c->numel() == 1 || (c->rank() == 1 && c->dim(0) == N) || (c->rank() == 2 && c->dim(0) == 1 && c->dim(1) == N);
    if (!row)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("C of shape ", c->shape().to_string(), " (XNNPACK's bias is one row: [N], [1,N] or a scalar)"));
  }
  return true;
}

bool claim_matmul(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 2, why)) return false;
  const Tensor* b = constant_input(g, n, 1);
  if (!b) return decline(why, DeclineCode::kDynamicShape, "weights must be constant (B is computed at run time)");
  if (b->rank() != 2)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("B of rank ", b->rank(), " (XNNPACK's fully connected needs a 2-D weight matrix)"));
  const int ar = rank_of(g, n, 0);
  if (ar == 0) return decline(why, DeclineCode::kOther, "A is a scalar");
  return true;
}

// ---- pooling ----

bool claim_pool(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  const bool max = n.op_type == "MaxPool";
  if (max && !only_first_output(n, why)) return false;
  const std::vector<int64_t> ks = n.attr_ints("kernel_shape");
  const int xr = rank_of(g, n, 0);
  if (ks.size() != 2 || (xr >= 0 && xr != 4))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("only 2-D pooling (XNNPACK's pooling2d); this one is ", xr >= 0 ? xr - 2 : static_cast<int>(ks.size()), "-D"));
  if (ks[0] * ks[1] == 1)
    return decline(why, DeclineCode::kUnsupportedAttribute, "1x1 pooling (XNNPACK rejects 1-element windows)");
  if (!max) {
    for (int64_t d : n.attr_ints("dilations"))
      if (d != 1) return decline(why, DeclineCode::kUnsupportedAttribute, "dilated pooling (XNNPACK's average pooling has no dilation)");
  }
  if (!auto_pad_ok(n, why)) return false;
  const Shape* x = shape_of(g, n, 0);
  return geometry_ok(why, [&] {
    const Shape in = spatial_known(x) ? Shape{(*x)[2], (*x)[3]} : Shape{-1, -1};
    window_geometry(n, in, Shape(ks), true);
    return true;
  });
}

bool claim_global_pool(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  const int xr = rank_of(g, n, 0);
  if (xr < 0) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known (2-D pooling only)");
  if (xr != 4)
    return decline(why, DeclineCode::kUnsupportedAttribute, str("only 2-D pooling (input rank 4); this one is ", xr - 2, "-D"));
  return true;
}

// ---- elementwise ----

bool rank_ok(const Graph& g, const Node& n, Decline* why) {
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (rank_of(g, n, i) > XNN_MAX_TENSOR_DIMS)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("input ", i, " has ", rank_of(g, n, i), " dims (XNNPACK's limit is ", XNN_MAX_TENSOR_DIMS, ")"));
  return true;
}

bool claim_binary(const Graph& g, const Node& n, Decline* why) {
  const bool variadic = n.op_type == "Max" || n.op_type == "Min" || n.op_type == "Sum" || n.op_type == "Mean";
  const size_t count = n.num_inputs();
  if (!float_only(g, n, variadic ? count : 2, why)) return false;
  if (count == 0) return decline(why, DeclineCode::kOther, "no inputs");
  for (size_t i = 0; i < count; ++i)
    if (!n.has_input(i)) return decline(why, DeclineCode::kOther, str("input ", i, " is missing"));
  if (!variadic && count != 2) return decline(why, DeclineCode::kOther, str(n.op_type, " needs 2 inputs"));
  if (!rank_ok(g, n, why)) return false;
  if (n.opset < 7 && n.attr_int("broadcast", 0) != 0 && n.has_attr("axis")) {
    const Shape* a = shape_of(g, n, 0);
    const Shape* b = shape_of(g, n, 1);
    if (!a || !b) return decline(why, DeclineCode::kDynamicShape, "legacy broadcast with an axis needs known ranks");
    return geometry_ok(why, [&] {
      legacy_broadcast_shape(n, *a, *b);
      return true;
    });
  }
  return true;
}

bool claim_batch_norm(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  if (n.opset >= 14 && n.attr_int("training_mode", 0) != 0)
    return decline(why, DeclineCode::kUnsupportedAttribute, "training_mode=1 (inference statistics only)");
  if (!only_first_output(n, why)) return false;
  if (n.opset < 9 && n.attr_int("spatial", 1) == 0)
    return decline(why, DeclineCode::kUnsupportedAttribute, "spatial=0 (per-activation statistics)");
  const int r = rank_of(g, n, 0);
  if (r < 0) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known");
  if (r < 2 || r > XNN_MAX_TENSOR_DIMS)
    return decline(why, DeclineCode::kUnsupportedAttribute, str("input rank ", r, " (2 to ", XNN_MAX_TENSOR_DIMS, " supported)"));
  const Shape& x = *shape_of(g, n, 0);
  static const char* const names[] = {"", "scale", "B", "mean", "var"};
  for (size_t i = 1; i <= 4; ++i) {
    const Tensor* t = constant_input(g, n, i);
    if (!t) return decline(why, DeclineCode::kDynamicShape, str(names[i], " must be constant"));
    if (t->dtype() != DType::kFloat) return decline(why, DeclineCode::kUnsupportedType, str("float32 ", names[i], " only"));
    if (x[1] < 0) return decline(why, DeclineCode::kDynamicShape, "the channel count must be known");
    if (t->numel() != x[1]) return decline(why, DeclineCode::kOther, str(names[i], " does not have one value per channel"));
  }
  return true;
}

bool claim_pow(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  const Tensor* e = constant_input(g, n, 1);
  if (!e || e->numel() != 1 || !(mask_has(types::kNumeric, e->dtype())))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   "Pow exponent must be a constant scalar 2 or 0.5 (XNNPACK has square and square root only)");
  const double p = e->element_as_double(0);
  if (p != 2.0 && p != 0.5)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("Pow exponent ", p, " (XNNPACK has square and square root only)"));
  const Shape* x = shape_of(g, n, 0);
  if (!x) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known");
  if (e->rank() > x->size())
    return decline(why, DeclineCode::kUnsupportedAttribute, "the exponent has more dims than the base");
  return rank_ok(g, n, why);
}

bool claim_prelu(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 2, why)) return false;
  const Tensor* s = constant_input(g, n, 1);
  if (!s) return decline(why, DeclineCode::kDynamicShape, "the slope must be constant");
  const Shape* x = shape_of(g, n, 0);
  if (!x) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known");
  if (s->numel() == 1) return true;
  Shape sl = legacy_prelu_slope_shape(n, *x, s->shape());
  if (sl.size() > x->size()) return decline(why, DeclineCode::kOther, "the slope has more dims than the input");
  while (sl.size() < x->size()) sl.insert(0, 1);
  auto ones_except = [&](size_t keep) {
    for (size_t k = 0; k < sl.size(); ++k)
      if (k != keep && sl[k] != 1) return false;
    return true;
  };
  const size_t r = x->size();
  if (r == 4 && ones_except(1) && (*x)[1] == sl[1]) return true;  // per channel, NHWC
  if (r >= 1 && ones_except(r - 1) && (*x)[r - 1] == sl[r - 1]) return true;  // over the last axis
  return decline(why, DeclineCode::kUnsupportedAttribute,
                 str("slope of shape ", s->shape().to_string(), " for input ", x->to_string(),
                     " (XNNPACK's PReLU is per channel of a 4-D input or over the last axis)"));
}

bool claim_clip(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  float lo, hi;
  std::string reason;
  if (!activation_bounds(g, n, &lo, &hi, &reason)) return decline(why, DeclineCode::kDynamicShape, reason);
  if (!(lo < hi))
    return decline(why, DeclineCode::kUnsupportedAttribute, str("Clip with min ", lo, " >= max ", hi, " (XNNPACK needs min < max)"));
  return true;
}

bool claim_softmax(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  const int r = rank_of(g, n, 0);
  const int64_t axis = n.attr_int("axis", n.opset >= 13 ? -1 : 1);
  if (n.opset < 13) {
    // Softmax-1/11 flattens to 2-D at `axis`: a softmax over all the trailing dims.
    if (axis < 0 && r < 0) return decline(why, DeclineCode::kDynamicShape, "a negative axis needs a known rank");
    if (r >= 0 && (axis < -r || axis > r)) return decline(why, DeclineCode::kOther, "axis out of range");
    return true;
  }
  if (axis == -1 || (r >= 0 && axis == r - 1)) return true;
  if (r < 0) return decline(why, DeclineCode::kDynamicShape, str("axis ", axis, " needs a known rank"));
  return decline(why, DeclineCode::kUnsupportedAttribute,
                 str("Softmax over axis ", axis, " of ", r, " (XNNPACK's softmax is over the last axis)"));
}

bool claim_resize(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  ResizeAttrs a;
  try {
    a = parse_resize_attrs(n);
  } catch (const Error& e) {
    return decline(why, DeclineCode::kOther, e.what());
  }
  if (a.mode != ResizeMode::kLinear)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("mode '", n.attr_string("mode", "nearest"), "' (XNNPACK has only bilinear resize)"));
  if (a.antialias) return decline(why, DeclineCode::kUnsupportedAttribute, "antialias (XNNPACK's bilinear resize has none)");
  if (a.exclude_outside) return decline(why, DeclineCode::kUnsupportedAttribute, "exclude_outside=1");
  if (a.has_axes) return decline(why, DeclineCode::kUnsupportedAttribute, "the axes attribute");
  if (a.policy != AspectPolicy::kStretch) return decline(why, DeclineCode::kUnsupportedAttribute, "keep_aspect_ratio_policy other than stretch");
  if (a.coord != ResizeCoord::kHalfPixel && a.coord != ResizeCoord::kPytorchHalfPixel &&
      a.coord != ResizeCoord::kAlignCorners && a.coord != ResizeCoord::kAsymmetric)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("coordinate_transformation_mode '", n.attr_string("coordinate_transformation_mode"),
                       "' (XNNPACK has half_pixel, align_corners and asymmetric)"));
  const Shape* x = shape_of(g, n, 0);
  if (x && x->size() != 4)
    return decline(why, DeclineCode::kUnsupportedAttribute, str("only 2-D resize (input rank 4); this input has rank ", x->size()));
  if (!x) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known");
  const float* scales = nullptr;
  const int64_t* sizes = nullptr;
  int64_t ns = 0, nz = 0;
  if (a.upsample && a.scales_input < 0) {
    scales = a.attr_scales.data();
    ns = static_cast<int64_t>(a.attr_scales.size());
  } else {
    const Tensor* s = a.scales_input >= 0 ? constant_input(g, n, a.scales_input) : nullptr;
    const Tensor* z = a.sizes_input >= 0 ? constant_input(g, n, a.sizes_input) : nullptr;
    if (n.has_input(a.scales_input) && !s) return decline(why, DeclineCode::kDynamicShape, "scales must be constant");
    if (a.sizes_input >= 0 && n.has_input(a.sizes_input) && !z) return decline(why, DeclineCode::kDynamicShape, "sizes must be constant");
    if (s && s->numel() > 0 && s->dtype() == DType::kFloat) {
      scales = s->data<float>();
      ns = s->numel();
    }
    if (z && z->numel() > 0 && z->dtype() == DType::kInt64) {
      sizes = z->data<int64_t>();
      nz = z->numel();
    }
    if (!scales && !sizes) return decline(why, DeclineCode::kOther, "neither scales nor sizes is given");
  }
  if (scales) {
    if (ns != 4) return decline(why, DeclineCode::kOther, "scales needs 4 values");
    if (scales[0] != 1.0f || scales[1] != 1.0f)
      return decline(why, DeclineCode::kUnsupportedAttribute, "scaling the batch or channel dims (XNNPACK resizes H and W only)");
    if ((*x)[2] < 0 || (*x)[3] < 0)
      return decline(why, DeclineCode::kDynamicShape,
                     "scales with an input of unknown H, W (XNNPACK derives its scale from the output size)");
  } else {
    if (nz != 4) return decline(why, DeclineCode::kOther, "sizes needs 4 values");
    if (((*x)[0] >= 0 && sizes[0] != (*x)[0]) || ((*x)[1] >= 0 && sizes[1] != (*x)[1]))
      return decline(why, DeclineCode::kUnsupportedAttribute, "resizing the batch or channel dims (XNNPACK resizes H and W only)");
    if ((*x)[0] < 0 || (*x)[1] < 0)
      return decline(why, DeclineCode::kDynamicShape, "sizes with an input of unknown batch or channels");
  }
  if (!x->is_concrete()) {
    if (sizes) return true;
  }
  return geometry_ok(why, [&] {
    Shape in = *x;
    for (size_t k = 0; k < 2; ++k)
      if (in[k] < 0) in[k] = 1;
    Shape out;
    std::vector<double> sc;
    resize_geometry(n, a, in, scales, ns, sizes, nz, out, sc);
    for (size_t k = 2; k < 4; ++k) {
      // XNNPACK's scale is in/out; ONNX's coordinates use the given scale.
      const double onnx = sc[k], xnn = static_cast<double>(out[k]) / static_cast<double>(in[k]);
      if (std::fabs(onnx - xnn) > 1e-6 * xnn)
        return decline(why, DeclineCode::kUnsupportedAttribute,
                       str("scale ", onnx, " is not output/input size (", out[k], "/", in[k],
                           "); XNNPACK derives its scale from the sizes"));
      if (out[k] == 1 && (a.coord == ResizeCoord::kPytorchHalfPixel || a.coord == ResizeCoord::kAlignCorners))
        return decline(why, DeclineCode::kUnsupportedAttribute, "an output size of 1 with pytorch_half_pixel or align_corners");
      if (out[k] == 0) return decline(why, DeclineCode::kOther, "empty output");
    }
    return true;
  });
}

bool claim_depth_to_space(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  if (n.attr_string("mode", "DCR") != "DCR")
    return decline(why, DeclineCode::kUnsupportedAttribute, "mode CRD (XNNPACK's depth_to_space is DCR)");
  const int64_t b = n.attr_int("blocksize", 0);
  if (b < 2) return decline(why, DeclineCode::kUnsupportedAttribute, str("blocksize ", b, " (XNNPACK needs >= 2)"));
  const int r = rank_of(g, n, 0);
  if (r < 0) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known");
  if (r != 4) return decline(why, DeclineCode::kOther, "input must have rank 4");
  return true;
}

bool claim_pad(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  const std::string mode = n.attr_string("mode", "constant");
  if (mode != "constant")
    return decline(why, DeclineCode::kUnsupportedAttribute, str("mode '", mode, "' (XNNPACK pads with a constant only)"));
  const int r = rank_of(g, n, 0);
  if (r < 0) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known");
  if (r > XNN_MAX_TENSOR_DIMS || r == 0)
    return decline(why, DeclineCode::kUnsupportedAttribute, str("rank ", r, " (XNNPACK pads 1 to ", XNN_MAX_TENSOR_DIMS, " dims)"));
  std::vector<int64_t> pads;
  if (n.opset < 11) {
    pads = n.attr_ints(n.opset < 2 ? "paddings" : "pads");
  } else {
    if (n.has_input(3)) return decline(why, DeclineCode::kUnsupportedAttribute, "the axes input");
    const Tensor* p = constant_input(g, n, 1);
    if (!p) return decline(why, DeclineCode::kDynamicShape, "pads must be constant");
    for (int64_t i = 0; i < p->numel(); ++i) pads.push_back(static_cast<int64_t>(p->element_as_double(i)));
    if (n.has_input(2)) {
      const Tensor* v = constant_input(g, n, 2);
      if (!v) return decline(why, DeclineCode::kDynamicShape, "constant_value must be constant");
      if (v->numel() != 1 || v->dtype() != DType::kFloat) return decline(why, DeclineCode::kOther, "constant_value must be a float scalar");
    }
  }
  if (pads.size() != static_cast<size_t>(2 * r)) return decline(why, DeclineCode::kOther, "pads does not match the rank");
  for (int64_t p : pads)
    if (p < 0) return decline(why, DeclineCode::kUnsupportedAttribute, "negative pads (cropping)");
  return true;
}

bool claim_unary(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  if (n.op_type == "Elu") {
    const float alpha = n.attr_float("alpha", 1.0f);
    if (!(alpha > 0.0f) || !std::isnormal(alpha))
      return decline(why, DeclineCode::kUnsupportedAttribute, str("Elu alpha ", alpha, " (XNNPACK needs a positive normal alpha)"));
  }
  if (n.op_type == "LeakyRelu" && !std::isfinite(n.attr_float("alpha", 0.01f)))
    return decline(why, DeclineCode::kUnsupportedAttribute, "a non-finite alpha");
  return true;
}

bool is_reshape_like(const Node& n) {
  return n.domain.empty() && (n.op_type == "Reshape" || n.op_type == "Flatten" || n.op_type == "Squeeze" ||
                              n.op_type == "Unsqueeze" || n.op_type == "Identity");
}

struct OpRule {
  const char* op;
  int since, until;
  bool (*claim)(const Graph&, const Node&, Decline*);
};

bool claim_conv_plain(const Graph& g, const Node& n, Decline* why) { return claim_conv(g, n, false, why); }

const OpRule kRules[] = {
    {"Conv", 1, kMaxOpset, claim_conv_plain},
    {"ConvTranspose", 1, kMaxOpset, claim_conv_transpose},
    {"Gemm", 1, kMaxOpset, claim_gemm},
    {"MatMul", 1, kMaxOpset, claim_matmul},
    {"MaxPool", 1, kMaxOpset, claim_pool},
    {"AveragePool", 1, kMaxOpset, claim_pool},
    {"GlobalAveragePool", 1, kMaxOpset, claim_global_pool},
    {"Add", 1, kMaxOpset, claim_binary},
    {"Sub", 1, kMaxOpset, claim_binary},
    {"Mul", 1, kMaxOpset, claim_binary},
    {"Div", 1, kMaxOpset, claim_binary},
    {"Max", 1, kMaxOpset, claim_binary},
    {"Min", 1, kMaxOpset, claim_binary},
    {"Sum", 1, kMaxOpset, claim_binary},
    {"Mean", 1, kMaxOpset, claim_binary},
    {"BatchNormalization", 1, kMaxOpset, claim_batch_norm},
    {"Pow", 1, kMaxOpset, claim_pow},
    {"PRelu", 1, kMaxOpset, claim_prelu},
    {"Relu", 1, kMaxOpset, claim_unary},
    {"Clip", 1, kMaxOpset, claim_clip},
    {"LeakyRelu", 1, kMaxOpset, claim_unary},
    {"Elu", 1, kMaxOpset, claim_unary},
    {"Sigmoid", 1, kMaxOpset, claim_unary},
    {"HardSwish", 14, kMaxOpset, claim_unary},
    {"Abs", 1, kMaxOpset, claim_unary},
    {"Neg", 1, kMaxOpset, claim_unary},
    {"Floor", 1, kMaxOpset, claim_unary},
    {"Ceil", 1, kMaxOpset, claim_unary},
    {"Round", 11, kMaxOpset, claim_unary},
    {"Sqrt", 1, kMaxOpset, claim_unary},
    {"Softmax", 1, kMaxOpset, claim_softmax},
    {"Resize", 10, kMaxOpset, claim_resize},
    {"Upsample", 7, 9, claim_resize},
    {"DepthToSpace", 1, kMaxOpset, claim_depth_to_space},
    {"Pad", 1, kMaxOpset, claim_pad},
};

/// ONNX ops people expect here that this XNNPACK snapshot has no operator for.
const char* const kMissing[][2] = {
    {"Tanh", "tanh"},         {"Transpose", "transpose"}, {"Concat", "concatenation"}, {"Exp", "exp"},
    {"Log", "log"},           {"Erf", "erf"},             {"Gelu", "gelu"},            {"HardSigmoid", "hard sigmoid"},
    {"Softplus", "softplus"}, {"LogSoftmax", "log-softmax"}, {"GlobalMaxPool", "global max pooling"},
    {"Split", "split"},       {"Slice", "slice"},         {"ReduceMean", "reduction"},
    {"LayerNormalization", "layer normalization"},
};

/// Claim without the reshape-like ops (they need a neighbour that is claimed this way).
bool claim_core(const Graph& g, const Node& n, Decline* why) {
  if (n.domain == "onyx" && n.op_type == "FusedConv") {
    if (!opset_in(n, 1, 1, why)) return false;
    return claim_conv(g, n, true, why);
  }
  if (!n.domain.empty())
    return decline(why, DeclineCode::kUnsupportedOp, str("no XNNPACK operator for ", n.domain, "::", n.op_type));
  for (const OpRule& r : kRules)
    if (n.op_type == r.op) {
      if (!opset_in(n, r.since, r.until, why)) return false;
      return r.claim(g, n, why);
    }
  for (const auto& m : kMissing)
    if (n.op_type == m[0])
      return decline(why, DeclineCode::kUnsupportedOp, str("XNNPACK (2022-02-16 snapshot) has no ", m[1], " operator"));
  return decline(why, DeclineCode::kUnsupportedOp, str("no XNNPACK operator for ", n.op_type));
}

}  // namespace

bool activation_bounds(const Graph& g, const Node& n, float* lo, float* hi, std::string* why) {
  if (!n.domain.empty()) return false;
  if (n.op_type == "Relu") {
    *lo = 0.0f;
    *hi = std::numeric_limits<float>::infinity();
    return true;
  }
  if (n.op_type != "Clip") return false;
  *lo = -std::numeric_limits<float>::max();
  *hi = std::numeric_limits<float>::max();
  if (n.opset < 11) {
    *lo = n.attr_float("min", *lo);
    *hi = n.attr_float("max", *hi);
    return true;
  }
  for (size_t i = 1; i <= 2; ++i) {
    if (!n.has_input(i)) continue;
    const Tensor* t = constant_input(g, n, i);
    if (!t || t->numel() != 1 || t->dtype() != DType::kFloat) {
      if (why) *why = str("Clip ", i == 1 ? "min" : "max", " must be a constant float scalar");
      return false;
    }
    (i == 1 ? *lo : *hi) = t->data<float>()[0];
  }
  return true;
}

bool claim_node(const Graph& g, const Node& n, Decline* why) {
  if (!is_reshape_like(n)) return claim_core(g, n, why);
  if (!float_only(g, n, 1, why)) return false;
  // A reshape is free inside a region (a view of the same buffer) but only a copy on its own:
  // take it when a neighbour runs on XNNPACK.
  Decline ignored;
  const int x = n.inputs.empty() ? -1 : n.inputs[0];
  if (x >= 0 && g.values[x].producer >= 0 && claim_core(g, g.nodes[g.values[x].producer], &ignored)) return true;
  for (int y : n.outputs) {
    if (y < 0) continue;
    for (const Node& c : g.nodes)
      for (int v : c.inputs)
        if (v == y && claim_core(g, c, &ignored)) return true;
  }
  return decline(why, DeclineCode::kNotWorthOffloading,
                 str(n.op_type, " on its own is a copy; XNNPACK takes it only next to an XNNPACK operator"));
}

}  // namespace onyx::xnnpack
