// Builders of the strided views the CUDA EP's data-movement kernels use (no CUDA here, so they
// are tested without a GPU).
#pragma once

#include <string>
#include <vector>

#include "launch.hpp"
#include "onyx/shape.hpp"
#include "ops/nn.hpp"
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

/// Tile: the output, iterated as dims [r_k, d_k] for each input dim k repeated r_k > 1 times
/// ([d_k] for the others), reads the input at stride 0 across the repeats. The same dims serve as
/// the (contiguous) destination view: `dst` gets it. Fails past kMaxRank split dims.
Strided tile_view(const Shape& in, const std::vector<int64_t>& repeats, const Shape& out, Strided* dst);
/// DepthToSpace and SpaceToDepth (mode DCR or CRD) of a [N, C, H, W] input by `block`: the
/// source view of the output iterated as 6 dims (also the destination dims, given in `dst`).
Strided depth_to_space_view(const Shape& in, int64_t block, bool crd, const Shape& out, Strided* dst);
Strided space_to_depth_view(const Shape& in, int64_t block, bool crd, const Shape& out, Strided* dst);

/// The batch shape of a matrix product of A and B (their dims before the last two, numpy
/// broadcast), with their own batch dims in *ab / *bb; fails naming `node` when they do not
/// broadcast.
Shape matmul_batch_shape(const Shape& a, const Shape& b, const Node& node, Shape* ab, Shape* bb);

/// Pad's `mode` attribute as the kernel's PadMode; false for a mode the kernel does not know.
bool pad_mode_of(const std::string& name, PadMode* mode);

/// The direct pooling kernel's arguments for input `x` ([N, C, up to 3 spatial dims]) and its
/// window geometry (ops/nn's window_geometry, as the CPU EP and shape inference resolve it).
PoolArgs pool_args(const Shape& x, const WindowGeometry& g, bool max, bool count_include_pad, bool column_major_indices, float p = 0);

}  // namespace onyx::cuda
