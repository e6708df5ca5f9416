// Shared definitions of the nn family: convolution and pooling geometry, used by shape
// inference and by kernels so both agree on pads and output sizes.
#pragma once

#include <string>

#include "ir/graph.hpp"
#include "onyx/shape.hpp"

namespace onyx {

/// Resolved geometry of a convolution or pooling window over the spatial dims.
struct WindowGeometry {
  Shape kernel;     // per spatial dim
  Shape stride;
  Shape dilation;
  Shape pad_begin;
  Shape pad_end;
  Shape out;        // output spatial size
};

/// A Conv / pooling node's window attributes, read once: a kernel keeps them, so that computing
/// the geometry on each run looks nothing up and allocates nothing.
struct WindowAttrs {
  Shape strides, dilations, pads;  // as given (empty when absent)
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;          // pools only
  static WindowAttrs of(const Node& node, bool is_pool);
};

/// Conv / pooling geometry from the node's attributes (auto_pad, pads, strides, dilations,
/// ceil_mode for pools) and concrete input spatial dims. `kernel` comes from the weight shape
/// (Conv) or the kernel_shape attribute (pools). `node` names the node in errors.
WindowGeometry window_geometry(const WindowAttrs& attrs, const Node& node, const Shape& in_spatial, const Shape& kernel);
WindowGeometry window_geometry(const Node& node, const Shape& in_spatial, const Shape& kernel, bool is_pool);

/// ConvTranspose geometry: output size from output_shape, or from strides/pads/output_padding.
WindowGeometry conv_transpose_geometry(const Node& node, const Shape& in_spatial, const Shape& kernel);

/// ONNX's rule for the window attributes of Conv, ConvTranspose, the pools and the ops like them:
/// when present (even empty), kernel_shape, strides, dilations, output_padding and output_shape
/// hold one value per spatial dim and pads two (the begins, then the ends). Throws naming the node,
/// the attribute and the count the rank needs. `spatial_rank` < 0: not known (X and W unranked);
/// kernel_shape, when given, then stands for it (it must not be empty).
void check_window_attr_sizes(const Node& node, int64_t spatial_rank);

/// Shape of LayerNormalization's Mean / InvStdDev outputs: X's dims, those from `axis` on set to 1.
Shape layer_norm_stat_shape(const Shape& x, int64_t axis);

}  // namespace onyx
