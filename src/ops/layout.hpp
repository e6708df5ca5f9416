// Channels-last forms of the layout-sensitive ops (domain onyx.nhwc), for EPs that prefer that
// layout (ExecutionProvider::preferred_layout). The optimizer's channels-last pass rewrites such a
// node into this domain between two Transposes; the transpose optimizer then cancels the pairs
// between neighbouring nodes (docs/optimizer.md).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ir/graph.hpp"

namespace onyx {

/// Domain of the channels-last forms. A node there has the op type, attributes and opset of the
/// op it stands for; only its data input 0 (and the sum of FusedConvAdd, input 3, and of
/// QLinearConvAdd, input 9) and output 0 are channels-last ([N, spatial..., C] instead of
/// [N, C, spatial...]). Weights, bias and the other inputs keep their ONNX layout.
inline constexpr std::string_view kChannelsLastDomain = "onyx.nhwc";

/// Whether `node` (ai.onnx or onyx) has a channels-last form: Conv, ConvTranspose, MaxPool
/// (without its Indices output), AveragePool, GlobalAveragePool, GlobalMaxPool,
/// BatchNormalization (inference), QLinearConv, onyx::FusedConv, onyx::FusedConvAdd and
/// onyx::QLinearConvAdd, and the com.microsoft 8-bit average pools (has_native_channels_last).
bool has_channels_last_form(const Node& node);
/// Whether `node` is an op whose channels-last form is itself with an attribute
/// (com.microsoft::QLinearAveragePool and QLinearGlobalAveragePool, channels_last = 1) rather than
/// a node of domain onyx.nhwc.
bool has_native_channels_last(const Node& node);
/// Whether input `i` of a node of this op (or of its channels-last form) is channels-last in the
/// form: the data input 0, and the sum of FusedConvAdd (input 3) and QLinearConvAdd (input 9), laid
/// out as the output.
bool is_channels_last_input(const Node& node, size_t i);
/// The domain of the op that a channels-last node of type `op` stands for ("" or "onyx").
std::string_view channels_first_domain(std::string_view op);

/// Transpose perms between [N, C, d1..dk] and [N, d1..dk, C] for a tensor of `rank` >= 3.
std::vector<int64_t> to_channels_last_perm(size_t rank);
std::vector<int64_t> to_channels_first_perm(size_t rank);

/// The type of a tensor of type `t` transposed by `perm` (t itself when its rank is unknown or
/// differs from the perm's).
TypeInfo permute_type(const TypeInfo& t, const std::vector<int64_t>& perm);

/// ONNX Transpose of a host tensor of fixed-size elements: output dim i is x's dim perm[i]
/// (weights permuted for a channels-last kernel, constants the transpose optimizer moves).
Tensor permute_tensor(const Tensor& x, const std::vector<int64_t>& perm);

}  // namespace onyx
