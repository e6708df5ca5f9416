// Shared definitions of the elementwise family (used by shape inference and by kernels).
#pragma once

#include "ir/graph.hpp"
#include "onyx/shape.hpp"

namespace onyx {

/// Legacy (opset < 7) binary ops with broadcast=1 align B's dims to A starting at `axis`
/// (trailing alignment when axis is absent). Returns the shape B must be viewed as for numpy
/// broadcasting; for opset >= 7 (or broadcast=0) returns `b` unchanged.
Shape legacy_broadcast_shape(const Node& node, const Shape& a, const Shape& b);

/// Legacy PRelu (opset < 7): a 1-D slope of size C applies per channel (dim 1) of X.
Shape legacy_prelu_slope_shape(const Node& node, const Shape& x, const Shape& slope);

}  // namespace onyx
