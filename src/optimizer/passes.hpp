// Graph optimisation passes (one per file) and the pipeline that runs them by level.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.hpp"
#include "ir/rewrite.hpp"
#include "onyx/session.hpp"

namespace onyx {

/// Evaluates node `index` of `g`, whose inputs are all constant, returning its outputs; or
/// returns false (op not evaluable, result too large). Supplied by the session (it has kernels).
using NodeEvaluator = std::function<bool(const Graph& g, size_t index, std::vector<Value>& outputs)>;

struct PassContext {
  NodeEvaluator evaluate;
  /// Whether `members` may be replaced by the one node `fused`: the session allows it when the EP
  /// that would run every member (the first to claim it) is the same and also claims `fused`, so
  /// a fusion never moves work to another EP. Compiling EPs (regions) are left their nodes.
  std::function<bool(std::span<const Node* const> members, const Node& fused)> may_fuse_group =
      [](std::span<const Node* const>, const Node&) { return true; };
  /// The same question for the QDQ fusion (qdq_fusion.cpp), whose fused ops are the 8-bit form
  /// of what the QDQ nodes say: compiling EPs are asked too (an EP that takes QLinearConv is
  /// better given one than left to find the DequantizeLinear / QuantizeLinear pattern itself).
  std::function<bool(std::span<const Node* const> members, const Node& fused)> may_quantize_group =
      [](std::span<const Node* const>, const Node&) { return true; };
  /// Whether `node` may be replaced by `channels_last`, its form in domain onyx.nhwc (whose input
  /// 0 and output 0 are values of the graph, typed): the session allows it when the EP that
  /// would run `node` prefers channels-last and claims the form. Default: never.
  std::function<bool(const Node& node, const Node& channels_last)> may_use_channels_last = [](const Node&, const Node&) {
    return false;
  };
  /// Whether float16 / bfloat16 `node` may be replaced by `float_form`, its float32 form: the
  /// session allows it when the EP that would run `node` computes half precision in float32
  /// (ExecutionProvider::computes_half_in_float) and claims the form. Default: never.
  std::function<bool(const Node& node, const Node& float_form)> may_compute_in_float = [](const Node&, const Node&) {
    return false;
  };
  std::vector<std::string> log;  // one line per change, for verbose logging
};

/// float16 / bfloat16 nodes whose EP prefers it run as float32 nodes, with Casts where such a
/// region meets the rest of the graph (half_in_float.cpp). Runs first.
int compute_half_in_float(Graph& g, PassContext& ctx);
/// DequantizeLinear -> op -> QuantizeLinear groups (the QDQ form of 8-bit models) become 8-bit
/// ops, and dynamic quantization's MatMulInteger chains com.microsoft::DynamicQuantizeMatMul
/// (qdq_fusion.cpp). Runs before constant folding.
int fuse_qdq(Graph& g, PassContext& ctx);
/// Replaces nodes computed only from constants by initializers.
int fold_constants(Graph& g, PassContext& ctx);
/// Removes Identity (and inference-mode Dropout without a used mask) by rewiring their readers.
int eliminate_identities(Graph& g, PassContext& ctx);
/// Conv / Gemm followed by Relu / Clip (constant bounds) becomes onyx::FusedConv / onyx::FusedGemm.
int fuse_activations(Graph& g, PassContext& ctx);
/// Conv + same-shape Add [+ Relu/Clip] -> onyx::FusedConvAdd (conv_add_fusion.cpp).
int fuse_conv_add(Graph& g, PassContext& ctx);
/// QLinearConv + com.microsoft::QLinearAdd of a same-shape tensor -> onyx::QLinearConvAdd (the sum
/// in the convolution's epilogue; qconv_add_fusion.cpp).
int fuse_qconv_add(Graph& g, PassContext& ctx);
/// MatMul -> (scalar Mul/Div) -> (Add bias) -> Softmax(last axis) -> MatMul becomes onyx::Attention.
int fuse_attention(Graph& g, PassContext& ctx);
/// The exact GELU written out (Div by sqrt 2, Erf, Add 1, Mul x, Mul 0.5) becomes one Gelu (opset 20).
int fuse_gelu(Graph& g, PassContext& ctx);
/// x * Sigmoid(x) (SiLU) and x * Sigmoid(alpha * x) become com.microsoft::QuickGelu (gelu_fusion.cpp).
int fuse_silu(Graph& g, PassContext& ctx);
/// MatMul by a constant 2-D B, + a constant bias row, optionally followed by Relu / Clip / Gelu,
/// becomes onyx::FusedMatMul (bias and activation in the GEMM's epilogue).
int fuse_matmul_bias(Graph& g, PassContext& ctx);
/// Rewrites the layout-sensitive nodes that an EP preferring channels-last takes into their
/// channels-last forms (ops/layout.hpp), each between a Transpose to channels-last and one back
/// (channels_last.cpp). Run optimize_transposes after it.
int assign_channels_last(Graph& g, PassContext& ctx);
/// Removes Transposes that undo one another, merges chains and repeats, and moves a Transpose
/// past layout-agnostic ops (elementwise, Concat, Softmax, Reduce* keeping dims) where that does
/// not add transposes, so that pairs meet and cancel (transpose_optimizer.cpp). Leaves dead
/// Transposes for eliminate_dead_nodes.
int optimize_transposes(Graph& g, PassContext& ctx);
/// Removes nodes none of whose outputs are used.
int eliminate_dead_nodes(Graph& g, PassContext& ctx);

/// Runs the passes the level asks for, on the main graph. Returns the number of changes.
int optimize_graph(Graph& g, GraphOptimizationLevel level, PassContext& ctx);

}  // namespace onyx
