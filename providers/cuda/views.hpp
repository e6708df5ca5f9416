// Builders of the strided views the CUDA EP's data-movement kernels use (no CUDA here, so they
// are tested without a GPU).
#pragma once

#include <vector>

#include "onyx/shape.hpp"
#include "ops/tensor.hpp"
#include "strided.hpp"

namespace onyx::cuda {

/// Contiguous (row-major) view of `shape`.
Strided contiguous(const Shape& shape);
/// View of a contiguous tensor of `shape` broadcast (numpy rules) to `out`.
Strided broadcast_view(const Shape& shape, const Shape& out);
/// Source view of Transpose: iterating `out` (= in permuted by perm) reads `in`.
Strided transpose_view(const Shape& in, const std::vector<int64_t>& perm, const Shape& out);
/// Source view of Slice: iterating `out` reads `in` at the starts and steps that
/// resolve_slice (ops/tensor, the rule of shape inference and the CPU EP) gives.
Strided slice_view(const Shape& in, const SliceSpec& spec, const Shape& out);
/// View of the part of a contiguous `whole` tensor that has `part`'s shape and starts at `at`
/// along `axis` (Concat's destination for one input, Split's source for one output).
Strided part_view(const Shape& whole, const Shape& part, int64_t axis, int64_t at);

}  // namespace onyx::cuda
