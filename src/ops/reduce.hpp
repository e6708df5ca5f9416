// Shared definitions of the reduce family (shape inference and the CPU kernels compute output
// shapes and axes with the same functions).
#pragma once

#include <cstdint>

#include "ir/graph.hpp"
#include "onyx/shape.hpp"

namespace onyx {

/// Reduce* ops take `axes` as input 1 (with `noop_with_empty_axes`) from ReduceSum-13 and from
/// version 18 for the others; before that `axes` is an attribute.
bool reduce_axes_from_input(const Node& node);

/// Bit k set = dim k of an input of rank `rank` is reduced. Empty `axes` reduce every dim, or
/// none (the mask is 0) when `noop_with_empty_axes` is set. Throws on an axis out of range or
/// repeated. Rank must be <= 64.
uint64_t reduce_axes_mask(const Node& node, int64_t rank, const Shape& axes, bool noop_with_empty_axes);

/// Output shape of reducing `in` over the dims in `mask` (kept as 1 with keepdims, else dropped).
Shape reduce_shape(const Shape& in, uint64_t mask, bool keepdims);

/// A tensor seen as [outer, dim, inner] around one axis.
struct AxisSplit {
  int64_t outer = 1, dim = 1, inner = 1;
};
/// Split of a concrete shape around `axis` (already normalised to [0, rank)).
AxisSplit split_at_axis(const Shape& s, int64_t axis);

/// Softmax / LogSoftmax / Hardmax axis, normalised: before opset 13 in [0, rank] (default 1, the
/// dim where the input is cut into 2-D), from 13 in [0, rank) (default -1; 0 for a scalar).
int64_t softmax_axis(const Node& node, int64_t rank);
/// Softmax / LogSoftmax / Hardmax: before opset 13 the input is coerced to 2-D at `axis`
/// (default 1), so the split is [prod(dims[:axis]), prod(dims[axis:]), 1]; from 13 the op works
/// along the single `axis` (default -1). Throws on an axis out of range.
AxisSplit softmax_split(const Node& node, const Shape& s);

/// TopK's output shape: `in` with dim `axis` replaced by k. Throws when k is negative or larger
/// than the dim (when the dim is known).
Shape topk_shape(const Node& node, const Shape& in, int64_t axis, int64_t k);

}  // namespace onyx
