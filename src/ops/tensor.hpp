// Shared definitions of the tensor-manipulation family (shape inference and kernels use the
// same functions, so output shapes are computed in one place).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.hpp"
#include "onyx/shape.hpp"

namespace onyx {

/// The tensor a Constant node produces (value, sparse_value, value_float(s), value_int(s),
/// value_string(s)).
Tensor constant_node_value(const Node& node);

/// Reshape's output shape for concrete `in` and target `spec` (0 copies a dim unless allowzero,
/// -1 is inferred). Throws naming the node when the shapes disagree.
Shape reshape_shape(const Node& node, const Shape& in, const Shape& spec, bool allowzero);
/// Flatten to 2-D at `axis`.
Shape flatten_shape(const Node& node, const Shape& in, int64_t axis);
/// Squeeze `axes` (all size-1 dims when empty).
Shape squeeze_shape(const Node& node, const Shape& in, const Shape& axes);
/// Unsqueeze: insert size-1 dims at `axes` (positions in the output).
Shape unsqueeze_shape(const Node& node, const Shape& in, const Shape& axes);

/// Slice parameters resolved against a concrete input shape: per input dim, start, step and
/// count of selected elements.
/// (Small integer lists use Shape for its inline storage: no allocation on the run path.)
struct SliceSpec {
  Shape start, step, count;
};
SliceSpec resolve_slice(const Node& node, const Shape& in, const Shape& starts, const Shape& ends, const Shape& axes,
                        const Shape& steps);

/// Split sizes along `axis` for a dim of size `dim` (from the split list, num_outputs, or even split).
Shape split_sizes(const Node& node, int64_t dim, size_t num_outputs, const Shape* split);

/// Pads per dim [begin..., end...] for the legacy and current Pad forms.
Shape pad_amounts(const Node& node, size_t rank, const Shape& pads, const Shape* axes);

/// For one dim of Pad (mode "constant", "reflect", "edge" or "wrap"): the input index each of
/// the `out_dim` output indices reads, or -1 where it takes the constant; `before` is the pad
/// before the data (negative: cropped). Throws naming `node` for an unknown mode, or for a
/// non-constant mode on an empty dim.
std::vector<int64_t> pad_index_map(const Node& node, const std::string& mode, int64_t dim, int64_t out_dim, int64_t before);


}  // namespace onyx
