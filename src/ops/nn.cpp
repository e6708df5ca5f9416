// nn family: Conv, ConvTranspose, pooling, normalisations, LRN, Dropout.
#include "ops/nn.hpp"

#include <algorithm>
#include <string_view>

#include "ops/schema.hpp"

namespace onyx {

namespace {
Shape attr_or(const Node& n, const Shape& v, const char* name, size_t rank, int64_t dflt) {
  if (v.empty()) return Shape::filled(rank, dflt);
  if (v.size() != rank)
    fail(ErrorCode::kInvalidGraph, n.label(), ": attribute '", name, "' has ", v.size(), " values for ", rank, " spatial dims");
  return v;
}
Shape attr_or(const Node& n, const char* name, size_t rank, int64_t dflt) {
  return attr_or(n, Shape(n.attr_ints(name)), name, rank, dflt);
}
}  // namespace

void check_window_attr_sizes(const Node& node, int64_t spatial_rank) {
  auto count = [](const Attribute& a) { return a.type == AttrType::kInts ? a.ints.size() : size_t(1); };
  if (spatial_rank < 0) {
    const Attribute* ks = node.attr("kernel_shape");
    if (!ks) return;
    if (count(*ks) == 0)
      fail(ErrorCode::kInvalidGraph, node.label(), ": attribute 'kernel_shape' is empty; it needs one value per spatial dim");
    spatial_rank = static_cast<int64_t>(count(*ks));
  }
  const size_t r = static_cast<size_t>(spatial_rank);
  static constexpr struct {
    const char* name;
    size_t per_dim;
  } kAttrs[] = {{"kernel_shape", 1}, {"strides", 1}, {"dilations", 1}, {"pads", 2}, {"output_padding", 1}, {"output_shape", 1}};
  for (const auto& [name, per_dim] : kAttrs) {
    const Attribute* a = node.attr(name);
    if (!a) continue;
    const size_t have = count(*a);
    // ConvTranspose's output_shape may also list N and C first (onyx reads the spatial tail).
    if (std::string_view(name) == "output_shape" && have == r + 2) continue;
    if (have != per_dim * r)
      fail(ErrorCode::kInvalidGraph, node.label(), ": attribute '", name, "' has ", have, " value", have == 1 ? "" : "s",
           "; with ", r, " spatial dim", r == 1 ? "" : "s", " it needs ", per_dim * r,
           per_dim == 2 ? " (the begins, then the ends)" : " (one per spatial dim)");
  }
}

WindowAttrs WindowAttrs::of(const Node& node, bool is_pool) {
  WindowAttrs a;
  a.strides = Shape(node.attr_ints("strides"));
  a.dilations = Shape(node.attr_ints("dilations"));
  a.pads = Shape(node.attr_ints("pads"));
  a.auto_pad = node.attr_string("auto_pad", "NOTSET");
  a.ceil_mode = is_pool && node.attr_int("ceil_mode", 0) != 0;
  return a;
}

WindowGeometry window_geometry(const Node& node, const Shape& in, const Shape& kernel, bool is_pool) {
  return window_geometry(WindowAttrs::of(node, is_pool), node, in, kernel);
}

namespace {
/// A window quantity computed in 128 bits, refused beyond 2^60 (hostile kernel_shape, strides,
/// dilations, pads or output_shape must give an error, not a signed overflow; the headroom keeps
/// the kernels' sums of two such values in range).
int64_t window_value(__int128 v, const Node& node, const char* what) {
  constexpr __int128 kLimit = __int128(1) << 60;
  if (v > kLimit || v < -kLimit)
    fail(ErrorCode::kInvalidGraph, node.label(), ": the ", what, " overflows (kernel_shape, strides, dilations or pads too large)");
  return static_cast<int64_t>(v);
}
}  // namespace

WindowGeometry window_geometry(const WindowAttrs& attrs, const Node& node, const Shape& in, const Shape& kernel) {
  const size_t r = in.size();
  WindowGeometry g;
  g.kernel = kernel;
  if (kernel.size() != r)
    fail(ErrorCode::kInvalidGraph, node.label(), ": kernel has ", kernel.size(), " spatial dims, input has ", r);
  g.stride = attr_or(node, attrs.strides, "strides", r, 1);
  g.dilation = attr_or(node, attrs.dilations, "dilations", r, 1);
  const std::string& auto_pad = attrs.auto_pad;
  const bool ceil_mode = attrs.ceil_mode;
  g.pad_begin = Shape::filled(r, 0);
  g.pad_end = Shape::filled(r, 0);
  g.out = Shape::filled(r, 0);
  const Shape& pads = attrs.pads;
  if (auto_pad == "NOTSET" && !pads.empty()) {
    if (pads.size() != 2 * r)
      fail(ErrorCode::kInvalidGraph, node.label(), ": pads has ", pads.size(), " values for ", r, " spatial dims");
    for (size_t k = 0; k < r; ++k) {
      g.pad_begin[k] = pads[k];
      g.pad_end[k] = pads[k + r];
      if (pads[k] < 0 || pads[k + r] < 0) fail(ErrorCode::kInvalidGraph, node.label(), ": negative pads");
    }
  }
  for (size_t k = 0; k < r; ++k) {
    if (g.stride[k] <= 0 || g.dilation[k] <= 0 || kernel[k] <= 0)
      fail(ErrorCode::kInvalidGraph, node.label(), ": strides, dilations and kernel sizes must be positive");
    const int64_t span = window_value(__int128(kernel[k] - 1) * g.dilation[k] + 1, node, "dilated kernel");
    if (in[k] < 0) {
      g.out[k] = -1;
      continue;
    }
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = window_value((__int128(in[k]) + g.stride[k] - 1) / g.stride[k], node, "output size");
      const int64_t total =
          std::max<int64_t>(0, window_value(__int128(out - 1) * g.stride[k] + span - in[k], node, "padding"));
      g.pad_begin[k] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[k] = total - g.pad_begin[k];
      g.out[k] = out;
      continue;
    }
    if (auto_pad != "NOTSET" && auto_pad != "VALID")
      fail(ErrorCode::kInvalidGraph, node.label(), ": unknown auto_pad '", auto_pad, "'");
    const int64_t padded = window_value(__int128(in[k]) + g.pad_begin[k] + g.pad_end[k], node, "padded input");
    if (padded < span)
      fail(ErrorCode::kInvalidArgument, node.label(), ": the window (", span, ") is larger than the padded input (", padded,
           ") in spatial dim ", k);
    int64_t out;
    if (ceil_mode) {
      out = window_value((__int128(padded) - span + g.stride[k] - 1) / g.stride[k] + 1, node, "output size");
      // The last window must start inside the input or its leading padding.
      if ((out - 1) * g.stride[k] >= in[k] + g.pad_begin[k]) --out;
    } else {
      out = (padded - span) / g.stride[k] + 1;
    }
    g.out[k] = out;
  }
  return g;
}

WindowGeometry conv_transpose_geometry(const Node& node, const Shape& in, const Shape& kernel) {
  const size_t r = in.size();
  WindowGeometry g;
  g.kernel = kernel;
  g.stride = attr_or(node, "strides", r, 1);
  g.dilation = attr_or(node, "dilations", r, 1);
  const Shape out_pad = attr_or(node, "output_padding", r, 0);
  g.pad_begin = Shape::filled(r, 0);
  g.pad_end = Shape::filled(r, 0);
  g.out = Shape::filled(r, 0);
  std::vector<int64_t> pads = node.attr_ints("pads");
  std::vector<int64_t> out_shape = node.attr_ints("output_shape");
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (!out_shape.empty() && out_shape.size() == r + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != r)
    fail(ErrorCode::kInvalidGraph, node.label(), ": output_shape has ", out_shape.size(), " values for ", r, " spatial dims");
  if (!pads.empty() && pads.size() != 2 * r)
    fail(ErrorCode::kInvalidGraph, node.label(), ": pads has ", pads.size(), " values for ", r, " spatial dims");
  for (size_t k = 0; k < r; ++k) {
    const int64_t span = window_value(__int128(kernel[k] - 1) * g.dilation[k] + 1, node, "dilated kernel");
    if (in[k] < 0) {
      g.out[k] = -1;
      continue;
    }
    const int64_t full = window_value(__int128(g.stride[k]) * (in[k] - 1) + out_pad[k] + span, node, "output size");
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t target =
          !out_shape.empty() ? out_shape[k] : window_value(__int128(in[k]) * g.stride[k], node, "output size");
      const int64_t total = window_value(__int128(full) - target, node, "padding");
      // Floor division: a negative total (output_shape larger than the full result) pads the end.
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      if (auto_pad == "SAME_UPPER") {
        g.pad_begin[k] = half;
        g.pad_end[k] = total - half;
      } else {
        g.pad_begin[k] = total - half;
        g.pad_end[k] = half;
      }
      if (!out_shape.empty() && !pads.empty() && auto_pad == "NOTSET") {
        g.pad_begin[k] = pads[k];
        g.pad_end[k] = pads[k + r];
      }
      g.out[k] = target;
    } else {
      if (!pads.empty()) {
        g.pad_begin[k] = pads[k];
        g.pad_end[k] = pads[k + r];
      }
      g.out[k] = window_value(__int128(full) - g.pad_begin[k] - g.pad_end[k], node, "output size");
    }
    if (g.out[k] < 0) fail(ErrorCode::kInvalidArgument, node.label(), ": negative output size in spatial dim ", k);
  }
  return g;
}

Shape layer_norm_stat_shape(const Shape& x, int64_t axis) {
  Shape s = x;
  for (size_t k = static_cast<size_t>(axis); k < s.size(); ++k) s[k] = 1;
  return s;
}

namespace {

Shape spatial(const Shape& s) { return Shape(std::span<const int64_t>(s.data() + 2, s.size() - 2)); }

/// The kernel's spatial shape: W's spatial dims; a kernel_shape attribute must agree with them
/// (the kernels take the taps from W, so a disagreeing attribute would size the output for
/// another kernel than the one computed).
Shape kernel_of(InferContext& ctx, const Shape& w) {
  Shape kernel = spatial(w);
  const std::vector<int64_t> ks = ctx.node().attr_ints("kernel_shape");
  if (ks.empty()) return kernel;
  bool ok = ks.size() == kernel.size();
  for (size_t i = 0; ok && i < ks.size(); ++i) ok = ks[i] > 0 && (kernel[i] < 0 || ks[i] == kernel[i]);
  if (!ok) ctx.fail_node("kernel_shape ", Shape(ks).to_string(), " is not compatible with W's shape ", w.to_string());
  return Shape(ks);
}

/// The spatial rank of a Conv-like node: X's rank (or W's) less two, or -1 when neither is known
/// (or has no spatial dims: the inference refuses that itself).
int64_t spatial_rank_of(const TypeInfo& x, const TypeInfo& w) {
  if (x.has_shape && x.shape.size() >= 3) return static_cast<int64_t>(x.shape.size()) - 2;
  if (w.has_shape && w.shape.size() >= 3) return static_cast<int64_t>(w.shape.size()) - 2;
  return -1;
}

void infer_conv(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& w = ctx.input_type(1);
  check_window_attr_sizes(ctx.node(), spatial_rank_of(x, w));
  if (!x.has_shape || !w.has_shape) return ctx.set_output_unranked(0, x.dtype);
  if (x.shape.size() < 3) ctx.fail_node("input must have rank >= 3 (N, C, spatial...), got ", x.shape.to_string());
  if (w.shape.size() != x.shape.size())
    ctx.fail_node("weight rank ", w.shape.size(), " does not match input rank ", x.shape.size());
  const int64_t group = ctx.node().attr_int("group", 1);
  if (group <= 0) ctx.fail_node("group must be positive");
  if (x.shape[1] >= 0 && w.shape[1] >= 0 && x.shape[1] != ctx.checked_dim(__int128(w.shape[1]) * group))
    ctx.fail_node("input has ", x.shape[1], " channels but weight ", w.shape.to_string(), " with group ", group, " expects ",
                  w.shape[1] * group);
  const Shape kernel = kernel_of(ctx, w.shape);
  for (auto& d : kernel)
    if (d < 0) return ctx.set_output(0, x.dtype, ctx.fresh_shape(x.shape.size()));
  const WindowGeometry g = window_geometry(ctx.node(), spatial(x.shape), kernel, false);
  Shape out{x.shape[0], w.shape[0]};
  for (int64_t d : g.out) out.push_back(d < 0 ? ctx.fresh() : d);
  ctx.set_output(0, x.dtype, out);
}

/// FusedConvAdd: Conv's output, which the sum (input 3) must match exactly (no broadcasting).
void infer_conv_add(InferContext& ctx) {
  infer_conv(ctx);
  if (!ctx.has_input(3)) ctx.fail_node("the sum input (3) is required");
  const TypeInfo& z = ctx.input_type(3);
  const TypeInfo& x = ctx.input_type(0);
  if (z.has_shape && x.has_shape && z.shape.size() != x.shape.size())
    ctx.fail_node("the sum has rank ", z.shape.size(), ", the output ", x.shape.size());
}

/// com.microsoft FusedConv: Conv's output; Z (input 3), when given, is added before the activation
/// and must have the output's shape.
void infer_ms_fused_conv(InferContext& ctx) {
  infer_conv(ctx);
  if (!ctx.has_input(3)) return;
  const TypeInfo& z = ctx.input_type(3);
  const TypeInfo& y = ctx.output(0);
  if (z.elem_dtype() != y.elem_dtype()) ctx.fail_node("Z must have X's type");
  if (z.has_shape && y.has_shape && z.shape.size() != y.shape.size())
    ctx.fail_node("Z has rank ", z.shape.size(), ", the output ", y.shape.size());
}

/// com.microsoft NhwcConv: X [N, spatial.., C], W [M, kernel.., C / group]; Y [N, out.., M].
/// Conv's rule on the channels-first forms of X and W.
void infer_nhwc_conv(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& w = ctx.input_type(1);
  if (!x.has_shape || !w.has_shape) return ctx.set_output_unranked(0, x.dtype);
  auto to_first = [](const Shape& s) {  // [A, d.., B] -> [A, B, d..]
    Shape r{s[0], s[s.size() - 1]};
    for (size_t k = 1; k + 1 < s.size(); ++k) r.push_back(s[k]);
    return r;
  };
  if (x.shape.size() < 3 || w.shape.size() != x.shape.size())
    ctx.fail_node("X and W must have one rank >= 3 (N, spatial.., C and M, kernel.., C / group), got ", x.shape.to_string(), " and ",
                  w.shape.to_string());
  const Shape xs = to_first(x.shape), ws = to_first(w.shape);
  check_window_attr_sizes(ctx.node(), static_cast<int64_t>(xs.size()) - 2);
  const int64_t group = ctx.node().attr_int("group", 1);
  if (group <= 0) ctx.fail_node("group must be positive");
  if (xs[1] >= 0 && ws[1] >= 0 && xs[1] != ctx.checked_dim(__int128(ws[1]) * group))
    ctx.fail_node("input has ", xs[1], " channels but weight ", w.shape.to_string(), " with group ", group, " expects ", ws[1] * group);
  const Shape kernel = kernel_of(ctx, ws);
  Shape out{x.shape[0]};
  bool known = true;
  for (int64_t d : kernel) known &= d >= 0;
  if (known) {
    const WindowGeometry g = window_geometry(ctx.node(), spatial(xs), kernel, false);
    for (int64_t d : g.out) out.push_back(d < 0 ? ctx.fresh() : d);
  } else {
    for (size_t k = 2; k < xs.size(); ++k) out.push_back(ctx.fresh());
  }
  out.push_back(ws[0]);
  ctx.set_output(0, x.dtype, out);
}

/// DeformConv: Conv's output shape; the offsets (and mask) must cover every tap of every offset
/// group at every output position.
void infer_deform_conv(InferContext& ctx) {
  infer_conv(ctx);
  if (!ctx.has_input(2)) ctx.fail_node("the offset input is required");
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& w = ctx.input_type(1);
  const TypeInfo& off = ctx.input_type(2);
  const int64_t og = ctx.node().attr_int("offset_group", 1);
  if (og <= 0) ctx.fail_node("offset_group must be positive");
  if (x.has_shape && x.shape.size() >= 2 && x.shape[1] >= 0 && x.shape[1] % og != 0)
    ctx.fail_node(x.shape[1], " input channels are not divisible by offset_group ", og);
  if (w.has_shape && off.has_shape && w.shape.is_concrete() && off.shape.size() == w.shape.size() && off.shape[1] >= 0) {
    int64_t taps = 1;
    for (size_t k = 2; k < w.shape.size(); ++k) taps *= w.shape[k];
    const int64_t want = og * taps * static_cast<int64_t>(w.shape.size() - 2);
    if (off.shape[1] != want)
      ctx.fail_node("offset has ", off.shape[1], " channels; offset_group ", og, " and kernel ", spatial(w.shape).to_string(),
                    " need ", want);
  }
}

void infer_conv_transpose(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& w = ctx.input_type(1);
  check_window_attr_sizes(ctx.node(), spatial_rank_of(x, w));
  if (!x.has_shape || !w.has_shape) return ctx.set_output_unranked(0, x.dtype);
  if (x.shape.size() < 3 || w.shape.size() != x.shape.size()) ctx.fail_node("input and weight ranks must match and be >= 3");
  const int64_t group = ctx.node().attr_int("group", 1);
  if (group <= 0) ctx.fail_node("group must be positive, got ", group);
  if (x.shape[1] >= 0 && w.shape[0] >= 0 && x.shape[1] != w.shape[0])
    ctx.fail_node("input has ", x.shape[1], " channels but weight ", w.shape.to_string(), " expects ", w.shape[0]);
  if (w.shape[0] >= 0 && w.shape[0] % group != 0)
    ctx.fail_node("weight ", w.shape.to_string(), " has ", w.shape[0], " input channels, not a multiple of group ", group);
  const Shape kernel = kernel_of(ctx, w.shape);
  const WindowGeometry g = conv_transpose_geometry(ctx.node(), spatial(x.shape), kernel);
  Shape out{x.shape[0], w.shape[1] >= 0 ? w.shape[1] * group : ctx.fresh()};
  for (int64_t d : g.out) out.push_back(d < 0 ? ctx.fresh() : d);
  ctx.set_output(0, x.dtype, out);
}

void infer_pool(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  check_window_attr_sizes(ctx.node(), x.has_shape && x.shape.size() >= 3 ? static_cast<int64_t>(x.shape.size()) - 2 : -1);
  if (!x.has_shape) {
    ctx.set_output_unranked(0, x.dtype);
    if (ctx.num_outputs() > 1) ctx.set_output_unranked(1, DType::kInt64);
    return;
  }
  if (x.shape.size() < 3) ctx.fail_node("input must have rank >= 3, got ", x.shape.to_string());
  std::vector<int64_t> ks = ctx.node().attr_ints("kernel_shape");
  if (ks.empty()) ctx.fail_node("attribute 'kernel_shape' is required");
  const WindowGeometry g = window_geometry(ctx.node(), spatial(x.shape), Shape(ks), true);
  Shape out{x.shape[0], x.shape[1]};
  for (int64_t d : g.out) out.push_back(d < 0 ? ctx.fresh() : d);
  ctx.set_output(0, x.dtype, out);
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kInt64, out);
}

void infer_global_pool(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  if (!x.has_shape) return ctx.set_output_unranked(0, x.dtype);
  if (x.shape.size() < 2) ctx.fail_node("input must have rank >= 2");
  Shape out = x.shape;
  for (size_t k = 2; k < out.size(); ++k) out[k] = 1;
  ctx.set_output(0, x.dtype, out);
}

void infer_batch_norm(InferContext& ctx) {
  ctx.propagate(0, 0);
  // Optional outputs (running / saved mean and variance) have the shape of the mean input.
  for (size_t i = 1; i < ctx.num_outputs(); ++i)
    if (ctx.has_output(i)) ctx.propagate(i, 3);
}

void infer_same(InferContext& ctx) { ctx.propagate(0, 0); }

void infer_layer_norm(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  ctx.propagate(0, 0);
  const int64_t stash = ctx.node().attr_int("stash_type", 1);
  const DType sd = stash == 1 ? DType::kFloat : x.dtype;
  for (size_t i = 1; i < ctx.num_outputs() && i < 3; ++i) {
    if (!x.has_shape) {
      ctx.set_output_unranked(i, sd);
      continue;
    }
    const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), static_cast<int64_t>(x.shape.size()), ctx.node().label());
    ctx.set_output(i, sd, layer_norm_stat_shape(x.shape, axis));
  }
}

// RMSNormalization (opset 23): Y has X's shape and the scale's type.
void infer_rms_norm(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  const DType out = ctx.input_dtype(1);
  if (!x.has_shape) return ctx.set_output_unranked(0, out);
  (void)normalize_axis(ctx.node().attr_int("axis", -1), static_cast<int64_t>(x.shape.size()), ctx.node().label());
  ctx.set_output(0, out, x.shape);
}

void infer_dropout(InferContext& ctx) {
  ctx.propagate(0, 0);
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) {
    const TypeInfo& x = ctx.input_type(0);
    const DType mask = ctx.opset() >= 10 ? DType::kBool : x.dtype;
    if (x.has_shape)
      ctx.set_output(1, mask, x.shape);
    else
      ctx.set_output_unranked(1, mask);
  }
}

}  // namespace

void register_nn_ops(OpRegistry& r) {
  r.add("", "Conv", {1, 11, 22}, infer_conv);
  r.add("", "ConvTranspose", {1, 11, 22}, infer_conv_transpose);
  r.add("", "DeformConv", {19, 22}, infer_deform_conv);
  r.add("", "MaxPool", {1, 8, 10, 11, 12, 22}, infer_pool);
  r.add("", "AveragePool", {1, 7, 10, 11, 19, 22}, infer_pool);
  r.add("", "LpPool", {1, 2, 11, 18, 22}, infer_pool);
  r.add("", "GlobalAveragePool", {1, 22}, infer_global_pool);
  r.add("", "GlobalMaxPool", {1, 22}, infer_global_pool);
  r.add("", "GlobalLpPool", {1, 2, 22}, infer_global_pool);
  r.add("", "BatchNormalization", {1, 6, 7, 9, 14, 15}, infer_batch_norm);
  r.add("", "InstanceNormalization", {1, 6, 22}, infer_same);
  r.add("", "LRN", {1, 13}, infer_same);
  r.add("", "LayerNormalization", {1, 17}, infer_layer_norm);  // 1: ONNX Runtime's contrib form, before opset 17
  r.add("", "RMSNormalization", {23}, infer_rms_norm);
  r.add("", "GroupNormalization", {18, 21}, infer_same);
  r.add("", "MeanVarianceNormalization", {9, 13}, infer_same);
  r.add("", "Dropout", {1, 6, 7, 10, 12, 13, 22}, infer_dropout);
  // onyx's own fused ops (made by the optimizer): Conv with an activation applied in its
  // epilogue, and Conv + a same-shape sum (input 3) + an optional activation.
  r.add("onyx", "FusedConv", {1}, infer_conv);
  r.add("onyx", "FusedConvAdd", {1}, infer_conv_add);
  // ONNX Runtime's forms (com.microsoft): Conv with an activation and a sum; channels-last Conv.
  r.add("com.microsoft", "FusedConv", {1}, infer_ms_fused_conv);
  r.add("com.microsoft", "NhwcConv", {1}, infer_nhwc_conv);
}

}  // namespace onyx
