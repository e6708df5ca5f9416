// Shared definitions of the image family (Resize, Upsample, GridSample, RoiAlign, MaxUnpool,
// AffineGrid): attribute parsing and output-shape rules used by both shape inference and the
// kernels, so every shape is computed in one place.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.hpp"
#include "onyx/shape.hpp"

namespace onyx {

// ---- Resize / Upsample ----

enum class ResizeMode : uint8_t { kNearest, kLinear, kCubic };
enum class ResizeCoord : uint8_t {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNN,
  kTfCropAndResize,
};
/// kLegacy: Upsample and Resize-10, which had no nearest_mode (truncate when upsampling, ceil
/// when downsampling, as onnxruntime has always done for those versions).
enum class ResizeNearest : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kLegacy };
enum class AspectPolicy : uint8_t { kStretch, kNotLarger, kNotSmaller };

/// The attributes of a Resize (10, 11, 13, 18, 19) or Upsample (7, 9) node, validated.
struct ResizeAttrs {
  bool upsample = false;
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoord coord = ResizeCoord::kAsymmetric;
  ResizeNearest nearest = ResizeNearest::kLegacy;
  AspectPolicy policy = AspectPolicy::kStretch;
  float cubic_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation = 0.0f;
  bool antialias = false;
  bool has_axes = false;
  std::vector<int64_t> axes;       // as written (may be negative), Resize-18+
  std::vector<float> attr_scales;  // Upsample-7's scales attribute
  // Input positions (-1 when the version has no such input).
  int roi_input = -1, scales_input = -1, sizes_input = -1;
};

/// Parses and checks the attributes (throws kInvalidGraph naming the node).
ResizeAttrs parse_resize_attrs(const Node& node);

/// The axes scales/sizes/roi refer to, normalized against `rank` (all axes when not given).
std::vector<int64_t> resize_axes(const Node& node, const ResizeAttrs& a, size_t rank);

/// tf_crop_and_resize's region per input axis, [roi_s[k], roi_e[k]] (0 and 1 on the axes not
/// resized), from the `roi` values (starts of the resized axes, then their ends). Throws naming
/// the node when their count does not match the axes.
void resize_roi(const Node& node, const ResizeAttrs& a, size_t rank, const std::vector<double>& roi,
                std::vector<double>& roi_s, std::vector<double>& roi_e);

/// Output shape and the per-axis scale used by the coordinate transform, for a concrete input
/// shape. `scales` / `sizes` are the given (non-empty) values, or nullptr; exactly one must be
/// given. Throws naming the node on invalid values.
void resize_geometry(const Node& node, const ResizeAttrs& a, const Shape& in, const float* scales, int64_t nscales,
                     const int64_t* sizes, int64_t nsizes, Shape& out, std::vector<double>& axis_scale);

/// Keys cubic convolution kernel with coefficient a (Resize's cubic mode, GridSample's bicubic).
inline double cubic_weight(double t, double a) {
  t = t < 0 ? -t : t;
  if (t <= 1.0) return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
  if (t < 2.0) return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a;
  return 0.0;
}

/// Per output index of one axis: the input taps (clamped indices) and their weights, or an
/// extrapolated value (tf_crop_and_resize outside the input). Shared by the CPU EP's Resize and
/// the CUDA EP's (which uploads the tables).
template <class W>
struct ResizeAxisPlan {
  int64_t in = 0, out = 0;
  int taps = 1;
  bool identity = false;
  std::vector<int64_t> idx;     // out * taps
  std::vector<W> w;             // out * taps (unused for nearest)
  std::vector<uint8_t> extrap;  // out
};

/// The plan of one axis resized from `in` to `out` at `scale` (roi [rs, re] for
/// tf_crop_and_resize), by the node's mode, coordinate transformation, nearest mode, cubic
/// coefficient, exclude_outside and antialias. Defined for W = float and double.
template <class W>
void build_resize_axis(const ResizeAttrs& a, ResizeAxisPlan<W>& p, int64_t in, int64_t out, double scale, double rs, double re,
                       const char* label);

// ---- MaxUnpool ----

/// MaxUnpool's output shape from kernel_shape / strides / pads when no output_shape is given.
Shape maxunpool_default_shape(const Node& node, const Shape& x);

// ---- AffineGrid ----

/// AffineGrid's output shape [N, H, W, 2] or [N, D, H, W, 3] from the `size` values.
Shape affine_grid_shape(const Node& node, const Shape& size);

// ---- GridSample ----

enum class GridMode : uint8_t { kLinear, kNearest, kCubic };
enum class GridPadding : uint8_t { kZeros, kBorder, kReflection };
struct GridSampleAttrs {
  GridMode mode = GridMode::kLinear;
  GridPadding padding = GridPadding::kZeros;
  bool align_corners = false;
};
/// Opset 16 names the modes bilinear / nearest / bicubic and takes 4-D input only; opset 20
/// names them linear / nearest / cubic and takes any spatial rank.
GridSampleAttrs parse_grid_sample_attrs(const Node& node);

}  // namespace onyx
