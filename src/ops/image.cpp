// image family schemas: Resize, Upsample, GridSample, RoiAlign, NonMaxSuppression, MaxUnpool,
// AffineGrid, ImageDecoder.
#include "ops/image.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ops/schema.hpp"

namespace onyx {

namespace {

[[noreturn]] void bad_attr(const Node& n, std::string_view attr, const std::string& value, std::string_view allowed) {
  fail(ErrorCode::kInvalidGraph, n.label(), ": attribute '", attr, "' is '", value, "'; expected one of ", allowed);
}

// Values above this are rejected as output sizes (they could never be allocated anyway).
constexpr double kMaxDim = 4.0e18;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Resize / Upsample

ResizeAttrs parse_resize_attrs(const Node& n) {
  ResizeAttrs a;
  a.upsample = n.op_type == "Upsample";
  const int opset = n.opset;
  const std::string mode = n.attr_string("mode", "nearest");
  if (mode == "nearest") {
    a.mode = ResizeMode::kNearest;
  } else if (mode == "linear" || (a.upsample && mode == "bilinear")) {
    a.mode = ResizeMode::kLinear;
  } else if (mode == "cubic" && !a.upsample && opset >= 11) {
    a.mode = ResizeMode::kCubic;
  } else {
    bad_attr(n, "mode", mode, a.upsample || opset < 11 ? "nearest, linear" : "nearest, linear, cubic");
  }
  if (a.upsample || opset < 11) {
    // Upsample-7/9 and Resize-10: asymmetric coordinates, legacy nearest rounding.
    a.coord = ResizeCoord::kAsymmetric;
    a.nearest = ResizeNearest::kLegacy;
    if (a.upsample && opset < 9) {
      const Attribute* s = n.attr("scales");
      if (!s) fail(ErrorCode::kInvalidGraph, n.label(), ": attribute 'scales' is required");
      a.attr_scales = n.attr_floats("scales");
    } else {
      a.scales_input = 1;
    }
    return a;
  }
  a.roi_input = 1;
  a.scales_input = 2;
  a.sizes_input = 3;
  const std::string ctm = n.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm == "half_pixel")
    a.coord = ResizeCoord::kHalfPixel;
  else if (ctm == "half_pixel_symmetric")
    a.coord = ResizeCoord::kHalfPixelSymmetric;
  else if (ctm == "pytorch_half_pixel")
    a.coord = ResizeCoord::kPytorchHalfPixel;
  else if (ctm == "align_corners")
    a.coord = ResizeCoord::kAlignCorners;
  else if (ctm == "asymmetric")
    a.coord = ResizeCoord::kAsymmetric;
  else if (ctm == "tf_half_pixel_for_nn")
    a.coord = ResizeCoord::kTfHalfPixelForNN;
  else if (ctm == "tf_crop_and_resize")
    a.coord = ResizeCoord::kTfCropAndResize;
  else
    bad_attr(n, "coordinate_transformation_mode", ctm,
             "half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn, "
             "tf_crop_and_resize");
  const std::string nm = n.attr_string("nearest_mode", "round_prefer_floor");
  if (nm == "round_prefer_floor")
    a.nearest = ResizeNearest::kRoundPreferFloor;
  else if (nm == "round_prefer_ceil")
    a.nearest = ResizeNearest::kRoundPreferCeil;
  else if (nm == "floor")
    a.nearest = ResizeNearest::kFloor;
  else if (nm == "ceil")
    a.nearest = ResizeNearest::kCeil;
  else
    bad_attr(n, "nearest_mode", nm, "round_prefer_floor, round_prefer_ceil, floor, ceil");
  a.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  a.extrapolation = n.attr_float("extrapolation_value", 0.0f);
  if (opset >= 18) {
    a.antialias = n.attr_int("antialias", 0) != 0;
    if (n.has_attr("axes")) {
      a.has_axes = true;
      a.axes = n.attr_ints("axes");
    }
    const std::string p = n.attr_string("keep_aspect_ratio_policy", "stretch");
    if (p == "stretch")
      a.policy = AspectPolicy::kStretch;
    else if (p == "not_larger")
      a.policy = AspectPolicy::kNotLarger;
    else if (p == "not_smaller")
      a.policy = AspectPolicy::kNotSmaller;
    else
      bad_attr(n, "keep_aspect_ratio_policy", p, "stretch, not_larger, not_smaller");
  }
  return a;
}

std::vector<int64_t> resize_axes(const Node& n, const ResizeAttrs& a, size_t rank) {
  std::vector<int64_t> axes;
  if (!a.has_axes) {
    for (size_t k = 0; k < rank; ++k) axes.push_back(static_cast<int64_t>(k));
    return axes;
  }
  std::vector<char> seen(rank, 0);
  for (int64_t x : a.axes) {
    const int64_t d = normalize_axis(x, static_cast<int64_t>(rank), n.label());
    if (seen[d]) fail(ErrorCode::kInvalidGraph, n.label(), ": axis ", x, " is repeated in 'axes'");
    seen[d] = 1;
    axes.push_back(d);
  }
  return axes;
}

void resize_roi(const Node& n, const ResizeAttrs& a, size_t rank, const std::vector<double>& roi,
                std::vector<double>& roi_s, std::vector<double>& roi_e) {
  roi_s.assign(rank, 0.0);
  roi_e.assign(rank, 1.0);
  const std::vector<int64_t> axes = resize_axes(n, a, rank);
  const size_t na = axes.size();
  if (roi.size() != 2 * na)
    fail(ErrorCode::kInvalidArgument, n.label(), ": tf_crop_and_resize needs 'roi' with ", 2 * na, " values, got ",
         roi.size());
  for (size_t i = 0; i < na; ++i) {
    roi_s[static_cast<size_t>(axes[i])] = roi[i];
    roi_e[static_cast<size_t>(axes[i])] = roi[na + i];
  }
}

void resize_geometry(const Node& n, const ResizeAttrs& a, const Shape& in, const float* scales, int64_t nscales,
                     const int64_t* sizes, int64_t nsizes, Shape& out, std::vector<double>& axis_scale) {
  const size_t r = in.size();
  const std::vector<int64_t> axes = resize_axes(n, a, r);
  const int64_t na = static_cast<int64_t>(axes.size());
  out = in;
  axis_scale.assign(r, 1.0);
  if ((scales != nullptr) == (sizes != nullptr))
    fail(ErrorCode::kInvalidArgument, n.label(),
         scales ? ": both 'scales' and 'sizes' are given; exactly one must be"
                : ": one of 'scales' and 'sizes' must be given");
  const char* what = a.has_axes ? "the length of 'axes'" : "the input rank";
  if (scales) {
    if (nscales != na)
      fail(ErrorCode::kInvalidArgument, n.label(), ": 'scales' has ", nscales, " entries but ", what, " is ", na);
    for (int64_t i = 0; i < na; ++i) {
      const float s = scales[i];
      if (!(s > 0.0f) || !std::isfinite(s))
        fail(ErrorCode::kInvalidArgument, n.label(), ": scales[", i, "] is ", s,
             "; scales must be positive and finite");
      if (a.upsample && s < 1.0f)
        fail(ErrorCode::kInvalidArgument, n.label(), ": scales[", i, "] is ", s, "; Upsample scales must be >= 1");
      const int64_t d = axes[i];
      // Computed in float, as ONNX's shape inference and onnxruntime do.
      const float prod = static_cast<float>(in[d]) * s;
      if (!(static_cast<double>(prod) < kMaxDim))
        fail(ErrorCode::kInvalidArgument, n.label(), ": output dim ", d, " (", in[d], " * ", s, ") is too large");
      out[d] = static_cast<int64_t>(std::floor(prod));
      axis_scale[d] = s;
    }
  } else {
    if (nsizes != na)
      fail(ErrorCode::kInvalidArgument, n.label(), ": 'sizes' has ", nsizes, " entries but ", what, " is ", na);
    for (int64_t i = 0; i < na; ++i)
      if (sizes[i] < 0) fail(ErrorCode::kInvalidArgument, n.label(), ": sizes[", i, "] is negative (", sizes[i], ")");
    if (a.policy == AspectPolicy::kStretch) {
      for (int64_t i = 0; i < na; ++i) {
        const int64_t d = axes[i];
        out[d] = sizes[i];
        axis_scale[d] = in[d] > 0 ? static_cast<double>(sizes[i]) / static_cast<double>(in[d]) : 1.0;
      }
    } else {
      const bool not_larger = a.policy == AspectPolicy::kNotLarger;
      double scale = not_larger ? std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t i = 0; i < na; ++i) {
        const int64_t d = axes[i];
        if (in[d] == 0)
          fail(ErrorCode::kInvalidArgument, n.label(), ": cannot keep the aspect ratio of empty axis ", d);
        const double s = static_cast<double>(sizes[i]) / static_cast<double>(in[d]);
        scale = not_larger ? std::min(scale, s) : std::max(scale, s);
      }
      for (int64_t i = 0; i < na; ++i) {
        const int64_t d = axes[i];
        const double v = std::floor(scale * static_cast<double>(in[d]) + 0.5);  // round half up
        if (!(v < kMaxDim)) fail(ErrorCode::kInvalidArgument, n.label(), ": output dim ", d, " is too large");
        out[d] = static_cast<int64_t>(v);
        axis_scale[d] = scale;
      }
    }
  }
  for (int64_t d : axes)
    if (in[d] == 0 && out[d] > 0)
      fail(ErrorCode::kInvalidArgument, n.label(), ": cannot resize empty axis ", d, " to ", out[d]);
}

// ---------------------------------------------------------------------------------------------
// MaxUnpool / AffineGrid / GridSample helpers

Shape maxunpool_default_shape(const Node& n, const Shape& x) {
  const size_t r = x.size();
  if (r < 3) fail(ErrorCode::kInvalidArgument, n.label(), ": X must have rank >= 3, got ", r);
  const size_t sp = r - 2;
  const std::vector<int64_t> kernel = n.attr_ints("kernel_shape");
  if (kernel.size() != sp)
    fail(ErrorCode::kInvalidGraph, n.label(), ": 'kernel_shape' has ", kernel.size(), " entries for ", sp,
         " spatial dims");
  const std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(sp, 1));
  const std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  if (strides.size() != sp)
    fail(ErrorCode::kInvalidGraph, n.label(), ": 'strides' has ", strides.size(), " entries for ", sp, " spatial dims");
  if (pads.size() != 2 * sp)
    fail(ErrorCode::kInvalidGraph, n.label(), ": 'pads' has ", pads.size(), " entries for ", sp, " spatial dims");
  Shape out = x;
  for (size_t k = 0; k < sp; ++k) {
    if (kernel[k] <= 0 || strides[k] <= 0 || pads[k] < 0 || pads[k + sp] < 0)
      fail(ErrorCode::kInvalidGraph, n.label(), ": invalid kernel_shape / strides / pads for spatial dim ", k);
    const int64_t in = x[k + 2];
    int64_t d =
        in == 0 ? 0 : checked_mul(in - 1, strides[k], "MaxUnpool output shape") + kernel[k] - pads[k] - pads[k + sp];
    if (d < 0)
      fail(ErrorCode::kInvalidArgument, n.label(), ": the pads make spatial dim ", k, " of the output negative (", d,
           ")");
    out[k + 2] = d;
  }
  return out;
}

Shape affine_grid_shape(const Node& n, const Shape& size) {
  if (size.size() != 4 && size.size() != 5)
    fail(ErrorCode::kInvalidArgument, n.label(), ": 'size' has ", size.size(),
         " entries; expected 4 (N, C, H, W) or 5 (N, C, D, H, W)");
  for (size_t i = 0; i < size.size(); ++i)
    if (size[i] < 0) fail(ErrorCode::kInvalidArgument, n.label(), ": size[", i, "] is negative (", size[i], ")");
  if (size.size() == 4) return Shape{size[0], size[2], size[3], 2};
  return Shape{size[0], size[2], size[3], size[4], 3};
}

GridSampleAttrs parse_grid_sample_attrs(const Node& n) {
  GridSampleAttrs a;
  const bool v20 = n.opset >= 20;
  const std::string mode = n.attr_string("mode", v20 ? "linear" : "bilinear");
  if (mode == (v20 ? "linear" : "bilinear"))
    a.mode = GridMode::kLinear;
  else if (mode == "nearest")
    a.mode = GridMode::kNearest;
  else if (mode == (v20 ? "cubic" : "bicubic"))
    a.mode = GridMode::kCubic;
  else
    bad_attr(n, "mode", mode, v20 ? "linear, nearest, cubic" : "bilinear, nearest, bicubic");
  const std::string pad = n.attr_string("padding_mode", "zeros");
  if (pad == "zeros")
    a.padding = GridPadding::kZeros;
  else if (pad == "border")
    a.padding = GridPadding::kBorder;
  else if (pad == "reflection")
    a.padding = GridPadding::kReflection;
  else
    bad_attr(n, "padding_mode", pad, "zeros, border, reflection");
  a.align_corners = n.attr_int("align_corners", 0) != 0;
  return a;
}

// ---------------------------------------------------------------------------------------------
// Inference

namespace {

constexpr std::initializer_list<DType> kFloatTypes = {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16};

/// Whether an optional 1-D parameter input (scales, sizes) is given, and its values.
enum class Given { kAbsent, kKnown, kUnknown };
template <class T>
Given probe_input(InferContext& ctx, int i, std::vector<T>& values) {
  if (i < 0 || !ctx.has_input(static_cast<size_t>(i))) return Given::kAbsent;
  if (const Tensor* t = ctx.input_tensor(static_cast<size_t>(i))) {
    if (t->numel() == 0) return Given::kAbsent;
    if (t->dtype() != dtype_of<T>)
      ctx.fail_node("input ", i, " has type ", dtype_name(t->dtype()), "; expected ", dtype_name(dtype_of<T>));
    values.assign(t->data<T>(), t->data<T>() + t->numel());
    return Given::kKnown;
  }
  if (ctx.input_has_shape(static_cast<size_t>(i))) {
    const Shape& s = ctx.input_shape(static_cast<size_t>(i));
    if (s.is_concrete() && s.numel() == 0) return Given::kAbsent;
  }
  return Given::kUnknown;
}

void infer_resize(InferContext& ctx) {
  const Node& n = ctx.node();
  if (n.op_type == "Upsample" && ctx.opset() >= 10)
    ctx.fail_node("Upsample is deprecated since opset 10 (the model imports opset ", ctx.opset(), "); use Resize");
  const ResizeAttrs a = parse_resize_attrs(n);
  const TypeInfo& t = ctx.input_type(0);
  if (a.mode != ResizeMode::kNearest && t.dtype == DType::kString)
    ctx.fail_node("mode '", n.attr_string("mode"), "' cannot interpolate strings (only 'nearest' can)");
  if (a.roi_input >= 0 && ctx.has_input(a.roi_input)) ctx.require_dtype(a.roi_input, kFloatTypes);
  if (a.scales_input >= 0 && ctx.has_input(a.scales_input)) ctx.require_dtype(a.scales_input, {DType::kFloat});
  if (a.sizes_input >= 0 && ctx.has_input(a.sizes_input)) ctx.require_dtype(a.sizes_input, {DType::kInt64});
  if (a.scales_input >= 0 && a.sizes_input < 0 && !ctx.has_input(a.scales_input))
    ctx.fail_node("input 'scales' is required");
  if (!t.has_shape) return ctx.set_output_unranked(0, t.dtype);
  const Shape& in = t.shape;
  const size_t r = in.size();
  const std::vector<int64_t> axes = resize_axes(n, a, r);

  std::vector<float> sc;
  std::vector<int64_t> sz;
  Given gs = Given::kAbsent, gz = Given::kAbsent;
  if (a.upsample && a.scales_input < 0) {
    sc = a.attr_scales;
    gs = Given::kKnown;
  } else {
    gs = probe_input(ctx, a.scales_input, sc);
    gz = probe_input(ctx, a.sizes_input, sz);
  }
  if (gs == Given::kKnown && gz == Given::kKnown)
    ctx.fail_node("both 'scales' and 'sizes' are given; exactly one must be");
  if (gs == Given::kAbsent && gz == Given::kAbsent) ctx.fail_node("one of 'scales' and 'sizes' must be given");
  // A known input wins over an unknown one (the kernel fails if both turn out non-empty).
  const bool use_scales = gs == Given::kKnown;
  const bool use_sizes = !use_scales && gz == Given::kKnown;
  if ((use_scales || use_sizes) && in.is_concrete()) {
    Shape out;
    std::vector<double> axis_scale;
    resize_geometry(n, a, in, use_scales ? sc.data() : nullptr, static_cast<int64_t>(sc.size()),
                    use_sizes ? sz.data() : nullptr, static_cast<int64_t>(sz.size()), out, axis_scale);
    return ctx.set_output(0, t.dtype, out);
  }
  if (use_scales)
    for (size_t i = 0; i < sc.size(); ++i)
      if (!(sc[i] > 0.0f) || !std::isfinite(sc[i]))
        ctx.fail_node("scales[", i, "] is ", sc[i], "; scales must be positive");
  if (use_sizes)
    for (size_t i = 0; i < sz.size(); ++i)
      if (sz[i] < 0) ctx.fail_node("sizes[", i, "] is negative (", sz[i], ")");
  if (use_scales && sc.size() != axes.size())
    ctx.fail_node("'scales' has ", sc.size(), " entries for ", axes.size(), " axes");
  if (use_sizes && sz.size() != axes.size())
    ctx.fail_node("'sizes' has ", sz.size(), " entries for ", axes.size(), " axes");
  Shape out = in;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t d = axes[i];
    if (use_scales && in[d] >= 0)
      out[d] = static_cast<int64_t>(std::floor(static_cast<float>(in[d]) * sc[i]));
    else if (use_sizes && a.policy == AspectPolicy::kStretch)
      out[d] = sz[i];
    else
      out[d] = ctx.fresh();
  }
  ctx.set_output(0, t.dtype, out);
}

void infer_grid_sample(InferContext& ctx) {
  const GridSampleAttrs a = parse_grid_sample_attrs(ctx.node());
  const TypeInfo& x = ctx.input_type(0);
  ctx.require_dtype(1, kFloatTypes);
  if (a.mode != GridMode::kNearest && x.dtype == DType::kString)
    ctx.fail_node("only mode 'nearest' can sample strings");
  const TypeInfo& g = ctx.input_type(1);
  if (!x.has_shape && !g.has_shape) return ctx.set_output_unranked(0, x.dtype);
  const size_t r = x.has_shape ? x.shape.size() : g.shape.size();
  if (r < 3) ctx.fail_node("X must have rank >= 3 (N, C and at least one spatial dim), got ", r);
  if (ctx.opset() < 20 && r != 4) ctx.fail_node("GridSample-16 takes 4-D input (N, C, H, W), got rank ", r);
  if (x.has_shape && g.has_shape && g.shape.size() != r)
    ctx.fail_node("grid has rank ", g.shape.size(), " but X has rank ", r, "; they must be equal");
  if (g.has_shape && g.shape[r - 1] >= 0 && g.shape[r - 1] != static_cast<int64_t>(r - 2))
    ctx.fail_node("the last dim of grid is ", g.shape[r - 1], "; expected ", r - 2, " (the number of spatial dims)");
  Shape out = ctx.fresh_shape(r);
  if (x.has_shape) {
    out[0] = x.shape[0];
    out[1] = x.shape[1];
  }
  if (g.has_shape) {
    if (out[0] < 0 && g.shape[0] >= 0) out[0] = g.shape[0];
    if (x.has_shape && x.shape[0] >= 0 && g.shape[0] >= 0 && x.shape[0] != g.shape[0])
      ctx.fail_node("X has batch ", x.shape[0], " but grid has batch ", g.shape[0]);
    for (size_t k = 2; k < r; ++k) out[k] = g.shape[k - 1];
  }
  ctx.set_output(0, x.dtype, out);
}

void infer_roi_align(InferContext& ctx) {
  const Node& n = ctx.node();
  ctx.require_dtype(0, kFloatTypes);
  const DType dt = ctx.input_dtype(0);
  if (ctx.input_dtype(1) != dt)
    ctx.fail_node("rois has type ", dtype_name(ctx.input_dtype(1)), " but X has type ", dtype_name(dt));
  ctx.require_dtype(2, {DType::kInt64});
  const std::string mode = n.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") bad_attr(n, "mode", mode, "avg, max");
  if (ctx.opset() >= 16) {
    const std::string ctm = n.attr_string("coordinate_transformation_mode", "half_pixel");
    if (ctm != "half_pixel" && ctm != "output_half_pixel")
      bad_attr(n, "coordinate_transformation_mode", ctm, "half_pixel, output_half_pixel");
  }
  const int64_t oh = n.attr_int("output_height", 1), ow = n.attr_int("output_width", 1);
  if (oh <= 0 || ow <= 0) ctx.fail_node("output_height and output_width must be positive, got ", oh, " and ", ow);
  if (n.attr_int("sampling_ratio", 0) < 0) ctx.fail_node("sampling_ratio must be >= 0");
  Shape out{ctx.fresh(), ctx.fresh(), oh, ow};
  if (ctx.input_has_shape(0)) {
    const Shape& x = ctx.input_shape(0);
    if (x.size() != 4) ctx.fail_node("X must be 4-D (N, C, H, W), got rank ", x.size());
    out[1] = x[1];
  }
  if (ctx.input_has_shape(1)) {
    const Shape& rs = ctx.input_shape(1);
    if (rs.size() != 2 || (rs[1] >= 0 && rs[1] != 4))
      ctx.fail_node("rois must have shape [num_rois, 4], got ", rs.to_string());
    out[0] = rs[0];
  }
  if (ctx.input_has_shape(2)) {
    const Shape& bs = ctx.input_shape(2);
    if (bs.size() != 1) ctx.fail_node("batch_indices must be 1-D, got ", bs.to_string());
    if (out[0] >= 0 && bs[0] >= 0 && out[0] != bs[0])
      ctx.fail_node("rois has ", out[0], " rows but batch_indices has ", bs[0], " entries");
    if (out[0] < 0) out[0] = bs[0];
  }
  ctx.set_output(0, dt, out);
}

void infer_nms(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kFloat});
  ctx.require_dtype(1, {DType::kFloat});
  if (ctx.has_input(2)) ctx.require_dtype(2, {DType::kInt64});
  if (ctx.has_input(3)) ctx.require_dtype(3, {DType::kFloat});
  if (ctx.has_input(4)) ctx.require_dtype(4, {DType::kFloat});
  const int64_t cpb = ctx.node().attr_int("center_point_box", 0);
  if (cpb != 0 && cpb != 1) ctx.fail_node("center_point_box must be 0 or 1, got ", cpb);
  if (ctx.input_has_shape(0) && ctx.input_shape(0).size() != 3)
    ctx.fail_node("boxes must be 3-D [batches, boxes, 4], got ", ctx.input_shape(0).to_string());
  if (ctx.input_has_shape(1) && ctx.input_shape(1).size() != 3)
    ctx.fail_node("scores must be 3-D [batches, classes, boxes], got ", ctx.input_shape(1).to_string());
  ctx.set_output(0, DType::kInt64, Shape{ctx.fresh(), 3});
}

void infer_max_unpool(InferContext& ctx) {
  const Node& n = ctx.node();
  ctx.require_dtype(0, kFloatTypes);
  ctx.require_dtype(1, {DType::kInt64});
  const DType dt = ctx.input_dtype(0);
  if (ctx.has_input(2)) {
    ctx.require_dtype(2, {DType::kInt64});
    std::vector<int64_t> v;
    if (ctx.input_ints(2, v)) {
      if (ctx.input_has_shape(0) && v.size() != ctx.input_shape(0).size())
        ctx.fail_node("output_shape has ", v.size(), " entries but X has rank ", ctx.input_shape(0).size());
      for (int64_t d : v)
        if (d < 0) ctx.fail_node("output_shape has a negative dim (", d, ")");
      return ctx.set_output(0, dt, Shape(v));
    }
    if (ctx.input_has_shape(0)) return ctx.set_output(0, dt, ctx.fresh_shape(ctx.input_shape(0).size()));
    if (ctx.input_has_shape(2) && ctx.input_shape(2).size() == 1 && ctx.input_shape(2)[0] >= 0)
      return ctx.set_output(0, dt, ctx.fresh_shape(ctx.input_shape(2)[0]));
    return ctx.set_output_unranked(0, dt);
  }
  if (!ctx.input_has_shape(0)) return ctx.set_output_unranked(0, dt);
  const Shape& x = ctx.input_shape(0);
  Shape probe = x;
  for (auto& d : probe)
    if (d < 0) d = 1;
  Shape out = maxunpool_default_shape(n, probe);
  for (size_t k = 0; k < x.size(); ++k)
    if (x[k] < 0) out[k] = k < 2 ? x[k] : ctx.fresh();
  ctx.set_output(0, dt, out);
}

void infer_affine_grid(InferContext& ctx) {
  ctx.require_dtype(0, kFloatTypes);
  ctx.require_dtype(1, {DType::kInt64});
  const DType dt = ctx.input_dtype(0);
  std::vector<int64_t> size;
  if (ctx.input_ints(1, size)) {
    const Shape out = affine_grid_shape(ctx.node(), Shape(size));
    if (ctx.input_has_shape(0)) {
      const Shape& th = ctx.input_shape(0);
      const int64_t sp = static_cast<int64_t>(size.size()) - 2;
      if (th.size() != 3 || (th[1] >= 0 && th[1] != sp) || (th[2] >= 0 && th[2] != sp + 1))
        ctx.fail_node("theta has shape ", th.to_string(), "; expected [N, ", sp, ", ", sp + 1, "] for a ", sp,
                      "-D size");
      if (th[0] >= 0 && th[0] != size[0]) ctx.fail_node("theta has batch ", th[0], " but size[0] is ", size[0]);
    }
    return ctx.set_output(0, dt, out);
  }
  int64_t sp = -1;
  if (ctx.input_has_shape(1) && ctx.input_shape(1).size() == 1 && ctx.input_shape(1)[0] >= 0)
    sp = ctx.input_shape(1)[0] - 2;
  if (sp < 0 && ctx.input_has_shape(0) && ctx.input_shape(0).size() == 3 && ctx.input_shape(0)[1] >= 0)
    sp = ctx.input_shape(0)[1];
  if (sp != 2 && sp != 3) return ctx.set_output_unranked(0, dt);
  Shape out = ctx.fresh_shape(static_cast<size_t>(sp) + 2);
  out[out.size() - 1] = sp;
  if (ctx.input_has_shape(0) && ctx.input_shape(0).size() == 3) out[0] = ctx.input_shape(0)[0];
  ctx.set_output(0, dt, out);
}

void infer_image_decoder(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kUInt8});
  const std::string format = ctx.node().attr_string("pixel_format", "RGB");
  if (format != "RGB" && format != "BGR" && format != "Grayscale")
    ctx.fail_node("attribute 'pixel_format' is '", format, "'; expected one of RGB, BGR, Grayscale");
  if (ctx.input_has_shape(0) && ctx.input_shape(0).size() != 1)
    ctx.fail_node("encoded_stream must be 1-D (the bytes of one image), got rank ", ctx.input_shape(0).size());
  ctx.set_output(0, DType::kUInt8, Shape{ctx.fresh(), ctx.fresh(), format == "Grayscale" ? 1 : 3});
}

}  // namespace

void register_image_ops(OpRegistry& r) {
  r.add("", "ImageDecoder", {20}, infer_image_decoder);
  r.add("", "Resize", {10, 11, 13, 18, 19}, infer_resize);
  r.add("", "Upsample", {7, 9, 10}, infer_resize);  // 10: deprecated, rejected
  r.add("", "GridSample", {16, 20, 22}, infer_grid_sample);
  r.add("", "RoiAlign", {10, 16, 22}, infer_roi_align);
  r.add("", "NonMaxSuppression", {10, 11}, infer_nms);
  r.add("", "MaxUnpool", {9, 11, 22}, infer_max_unpool);
  r.add("", "AffineGrid", {20}, infer_affine_grid);
}

// ---- Resize axis plans ----


/// x_original for output index xr of an axis (ONNX's coordinate_transformation_mode formulas).
/// length_resized is the integer output length `out` (align_corners, pytorch_half_pixel,
/// tf_crop_and_resize), as the spec defines it; the ONNX 1.12 reference implementation used the
/// fractional in * scale instead, which is why the resize_downsample_scales_*_align_corners test
/// data disagree (onnxruntime agrees with onyx).
static double original_coord(const ResizeAttrs& a, int64_t xr, double scale, int64_t in, int64_t out, double rs, double re) {
  const double x = static_cast<double>(xr);
  switch (a.coord) {
    case ResizeCoord::kHalfPixel:
      return (x + 0.5) / scale - 0.5;
    case ResizeCoord::kHalfPixelSymmetric: {
      const double target = scale * static_cast<double>(in);
      const double adjustment = static_cast<double>(out) / target;
      const double center = static_cast<double>(in) / 2.0;
      return center * (1.0 - adjustment) + (x + 0.5) / scale - 0.5;
    }
    case ResizeCoord::kPytorchHalfPixel:
      return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case ResizeCoord::kAlignCorners:
      return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / static_cast<double>(out - 1);
    case ResizeCoord::kAsymmetric:
      return x / scale;
    case ResizeCoord::kTfHalfPixelForNN:
      return (x + 0.5) / scale;
    case ResizeCoord::kTfCropAndResize:
      return out > 1 ? rs * static_cast<double>(in - 1) +
                           x * (re - rs) * static_cast<double>(in - 1) / static_cast<double>(out - 1)
                     : 0.5 * (rs + re) * static_cast<double>(in - 1);
  }
  return x;
}

static int64_t nearest_index(ResizeNearest m, double x, bool downsample) {
  const double f = std::floor(x);
  switch (m) {
    case ResizeNearest::kRoundPreferFloor:
      return static_cast<int64_t>(x - f <= 0.5 ? f : f + 1.0);
    case ResizeNearest::kRoundPreferCeil:
      return static_cast<int64_t>(x - f < 0.5 ? f : f + 1.0);
    case ResizeNearest::kFloor:
      return static_cast<int64_t>(f);
    case ResizeNearest::kCeil:
      return static_cast<int64_t>(std::ceil(x));
    case ResizeNearest::kLegacy:
      return static_cast<int64_t>(downsample ? std::ceil(x) : std::trunc(x));
  }
  return static_cast<int64_t>(f);
}

template <class W>
void build_resize_axis(const ResizeAttrs& a, ResizeAxisPlan<W>& p, int64_t in, int64_t out, double scale, double rs, double re,
                const char* label) {
  p.in = in;
  p.out = out;
  p.extrap.assign(static_cast<size_t>(out), 0);
  const bool crop = a.coord == ResizeCoord::kTfCropAndResize;
  const double last = static_cast<double>(in - 1);
  bool identity = in == out;
  // The input coordinate of output o, or false where tf_crop_and_resize extrapolates there.
  auto source = [&](int64_t o, double* x) {
    *x = original_coord(a, o, scale, in, out, rs, re);
    if (crop && !(*x >= 0.0 && *x <= last)) {
      p.extrap[o] = 1;
      identity = false;
      return false;
    }
    if (!std::isfinite(*x)) *x = 0.0;
    return true;
  };
  if (a.mode == ResizeMode::kNearest) {
    p.taps = 1;
    p.idx.assign(static_cast<size_t>(out), 0);
    for (int64_t o = 0; o < out; ++o) {
      double x;
      if (!source(o, &x)) continue;
      x = std::clamp(x, -2.0, static_cast<double>(in) + 1.0);
      const int64_t i = std::clamp<int64_t>(nearest_index(a.nearest, x, scale < 1.0), 0, in - 1);
      p.idx[o] = i;
      if (i != o) identity = false;
    }
    p.identity = identity;
    return;
  }
  const bool linear = a.mode == ResizeMode::kLinear;
  const double support = linear ? 1.0 : 2.0;
  const bool aa = a.antialias && scale < 1.0;
  const double s_aa = aa ? scale : 1.0;
  int taps = linear ? 2 : 4;
  if (aa) {
    const double t = std::ceil(2.0 * support / s_aa) + 1.0;
    if (!(t <= 65536.0))
      fail(ErrorCode::kInvalidArgument, label, ": the antialiasing filter for scale ", scale, " is too wide");
    taps = static_cast<int>(t);
  }
  p.taps = taps;
  p.idx.assign(static_cast<size_t>(out) * taps, 0);
  p.w.assign(static_cast<size_t>(out) * taps, W(0));
  const double margin = static_cast<double>(taps) + 2.0;
  const double A = a.cubic_a;
  double wbuf[8];
  std::vector<double> wvec(aa ? static_cast<size_t>(taps) : 0);
  double* wt = aa ? wvec.data() : wbuf;
  for (int64_t o = 0; o < out; ++o) {
    double x;
    if (!source(o, &x)) continue;
    x = std::clamp(x, -margin, last + margin);
    if (aa || x != static_cast<double>(o)) identity = false;
    int64_t j0;
    if (!aa) {
      const double f = std::floor(x), t = x - f;
      j0 = static_cast<int64_t>(f);
      if (linear) {
        wt[0] = 1.0 - t;
        wt[1] = t;
      } else {
        j0 -= 1;
        wt[0] = cubic_weight(t + 1.0, A);
        wt[1] = cubic_weight(t, A);
        wt[2] = cubic_weight(1.0 - t, A);
        wt[3] = cubic_weight(2.0 - t, A);
      }
    } else {
      const double R = support / s_aa;
      j0 = static_cast<int64_t>(std::floor(x - R)) + 1;
      for (int k = 0; k < taps; ++k) {
        const double t = (static_cast<double>(j0 + k) - x) * s_aa;
        wt[k] = linear ? std::max(0.0, 1.0 - std::fabs(t)) : cubic_weight(t, A);
      }
    }
    double sum = 0.0;
    int64_t* ix = &p.idx[static_cast<size_t>(o) * taps];
    for (int k = 0; k < taps; ++k) {
      int64_t j = j0 + k;
      if (j < 0 || j >= in) {
        if (a.exclude_outside) wt[k] = 0.0;
        j = std::clamp<int64_t>(j, 0, in - 1);
      }
      ix[k] = j;
      sum += wt[k];
    }
    const bool normalize = aa || a.exclude_outside;
    W* w = &p.w[static_cast<size_t>(o) * taps];
    for (int k = 0; k < taps; ++k) w[k] = static_cast<W>(normalize ? (sum != 0.0 ? wt[k] / sum : 0.0) : wt[k]);
  }
  p.identity = identity;
}

template void build_resize_axis<float>(const ResizeAttrs&, ResizeAxisPlan<float>&, int64_t, int64_t, double, double, double,
                                       const char*);
template void build_resize_axis<double>(const ResizeAttrs&, ResizeAxisPlan<double>&, int64_t, int64_t, double, double, double,
                                        const char*);

}  // namespace onyx
