// Shared definitions of the quant family (QuantizeLinear / DequantizeLinear granularity), used
// by shape inference and by the CPU kernels so both accept the same scale shapes.
#pragma once

#include <cstdint>

#include "ir/graph.hpp"
#include "onyx/shape.hpp"

namespace onyx {

enum class QuantKind : uint8_t { kPerTensor, kPerAxis, kBlocked };

/// How a scale (and zero point) maps onto x, seen as [outer, dim, inner] around the axis:
/// per-tensor: one value; per-axis: scale[d]; blocked: scale[(o * nblocks + d / block) * inner + i].
struct QuantSplit {
  QuantKind kind = QuantKind::kPerTensor;
  int64_t axis = 0;
  int64_t outer = 1, dim = 1, inner = 1;
  int64_t block = 1, nblocks = 1;
};

/// Classifies and checks the scale (input `scale_idx`) and the zero point (input `scale_idx + 1`,
/// null when omitted) of QuantizeLinear / DequantizeLinear against x, following the node's
/// opset, `axis` and `block_size`. Unknown (negative) dims are not checked; the split's sizes are
/// only meaningful for concrete shapes. Throws onyx::Error naming the input on a mismatch.
QuantSplit quant_split(const Node& node, const Shape& x, const Shape& scale, const Shape* zero_point);

}  // namespace onyx
