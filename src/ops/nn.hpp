// Shared definitions of the nn family: convolution and pooling geometry, used by shape
// inference and by kernels so both agree on pads and output sizes.
#pragma once

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

/// Conv / pooling geometry from the node's attributes (auto_pad, pads, strides, dilations,
/// ceil_mode for pools) and concrete input spatial dims. `kernel` comes from the weight shape
/// (Conv) or the kernel_shape attribute (pools).
WindowGeometry window_geometry(const Node& node, const Shape& in_spatial, const Shape& kernel, bool is_pool);

/// ConvTranspose geometry: output size from output_shape, or from strides/pads/output_padding.
WindowGeometry conv_transpose_geometry(const Node& node, const Shape& in_spatial, const Shape& kernel);

/// Shape of LayerNormalization's Mean / InvStdDev outputs: X's dims, those from `axis` on set to 1.
Shape layer_norm_stat_shape(const Shape& x, int64_t axis);

}  // namespace onyx
