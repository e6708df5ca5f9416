// Shared definitions of the index family (shape inference and CPU kernels compute output shapes
// with the same functions). Every function takes concrete shapes and throws naming the node.
#pragma once

#include "ir/graph.hpp"
#include "onyx/shape.hpp"

namespace onyx {

/// GatherND: indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:].
Shape gather_nd_shape(const Node& node, const Shape& data, const Shape& indices, int64_t batch_dims);

/// ScatterND: checks that updates.shape == indices.shape[:-1] + data.shape[indices.shape[-1]:].
void check_scatter_nd_shapes(const Node& node, const Shape& data, const Shape& indices, const Shape& updates);

/// GatherElements / ScatterElements / Scatter: equal ranks, indices no larger than data off the
/// axis, and (scatter) updates shaped like indices. Returns the normalized axis.
int64_t check_elements_shapes(const Node& node, const Shape& data, const Shape& indices, const Shape* updates);

/// OneHot: indices.shape with `depth` inserted at `axis` (in [-r-1, r]).
Shape onehot_shape(const Node& node, const Shape& indices, int64_t depth);

/// DepthToSpace / SpaceToDepth on [N, C, H, W].
Shape depth_to_space_shape(const Node& node, const Shape& in, int64_t blocksize);
Shape space_to_depth_shape(const Node& node, const Shape& in, int64_t blocksize);

/// Col2Im parameters resolved against a concrete input shape and the image/block shapes.
struct Col2ImSpec {
  int64_t batch = 0, channels = 0, kernel = 0, blocks = 0;      // N, C, prod(block_shape), L
  Shape image, block, dilations, pads_begin, strides, nblocks;  // per spatial dim
  Shape out;                                                    // [N, C, image...]
};
/// Attributes dilations, strides (default 1 per spatial dim) and pads (default 0).
struct Col2ImAttrs {
  Shape dilations, pads, strides;  // empty = default
};
Col2ImAttrs col2im_attrs(const Node& node);
Col2ImSpec col2im_spec(const Node& node, const Shape& in, const Shape& image, const Shape& block,
                       const Col2ImAttrs& attrs);

/// CenterCropPad: per input dim, the output size, and the overlapping region (start in the
/// input, start in the output, count).
struct CropPadSpec {
  Shape out, in_start, out_start, count;
};
/// `axes` null means every axis.
CropPadSpec center_crop_pad_spec(const Node& node, const Shape& in, const Shape& target, const Shape* axes);

/// Unique / Compress / DepthToSpace attribute helpers.
int64_t blocksize_attr(const Node& node);
/// DepthToSpace / SpaceToDepth mode: true for CRD, false for DCR (the default, and the only mode
/// of DepthToSpace before opset 11 and of SpaceToDepth before opset 28). Validates the attribute.
bool depth_to_space_crd(const Node& node);

/// EyeLike output dtype (the `dtype` attribute or the input's).
DType eyelike_dtype(const Node& node, DType input);

}  // namespace onyx
