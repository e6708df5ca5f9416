// What the fusion passes share: finding single-use producers and consumers, reading scalar
// constants and activations, and replacing a matched group of nodes by its fused node.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "optimizer/passes.hpp"

namespace onyx {

/// The graph as a fusion pass walks it: use counts and the nodes already fused away.
struct FusionView {
  const Graph& g;
  const UseInfo& u;
  const std::vector<char>& dead;

  /// The plain ai.onnx single-output node producing v, when v is read once and is not a graph
  /// output (so a fusion may swallow it); else null.
  const Node* sole_producer(int v) const;
  /// The single-output node of `domain` (default ai.onnx) that is v's only reader (v not a graph
  /// output); else null.
  const Node* sole_consumer(int v, std::string_view domain = "") const;
};

/// The value of a constant float initializer holding one element, of rank <= max_rank.
bool scalar_float_constant(const Graph& g, int v, size_t max_rank, float* out);
/// Same ranks and dims (symbolic dims compare by id).
bool same_shape(const TypeInfo& a, const TypeInfo& b);
/// `act` as an epilogue activation reading its input 0: "Relu", or "Clip" with constant bounds
/// (params {lo, hi}); false for anything else.
bool epilogue_activation(const Graph& g, const Node& act, std::string* kind, std::vector<float>* params);
/// A node of onyx's domain (opset 1), the fused op `op`.
Node onyx_node(std::string name, const char* op, std::vector<int> inputs, std::vector<int> outputs);
/// Gives `n` the attributes activation (and activation_params when there are any).
void set_activation(Node& n, const std::string& kind, const std::vector<float>& params);
/// When the session allows it (ctx.may_fuse_group), puts `fused` in place of node `at` (one of
/// `members`), marks the other members dead, logs, and returns true; else changes nothing.
/// With `quantized_form` the session is asked through ctx.may_quantize_group instead.
bool commit_fusion(Graph& g, std::vector<char>& dead, size_t at, std::span<const Node* const> members, Node fused,
                   PassContext& ctx, bool quantized_form = false);

}  // namespace onyx
