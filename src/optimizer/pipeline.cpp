// The optimisation pipeline: which passes run at which level.
#include "core/common.hpp"
#include "optimizer/passes.hpp"

namespace onyx {

namespace {

/// A pass must leave the nodes in topological order (the executor runs them as listed): every
/// input of a node is made by an earlier node, or by none (graph input, initializer, outer value).
void check_order(const Graph& g, const char* pass) {
  std::vector<char> made(g.values.size(), 0);
  std::vector<char> produced(g.values.size(), 0);
  for (const Node& n : g.nodes)
    for (int v : n.outputs)
      if (v >= 0) produced[v] = 1;
  for (const Node& n : g.nodes) {
    std::vector<int> reads(n.inputs);
    reads.insert(reads.end(), n.implicit_inputs.begin(), n.implicit_inputs.end());
    for (int v : reads)
      if (v >= 0 && produced[v] && !made[v])
        fail(ErrorCode::kInvalidGraph, "optimizer pass ", pass, " placed ", n.label(), " before the node making its input '",
             g.values[v].name, "'");
    for (int v : n.outputs)
      if (v >= 0) made[v] = 1;
  }
}

int run_pass(int (*pass)(Graph&, PassContext&), const char* name, Graph& g, PassContext& ctx) {
  const int changed = pass(g, ctx);
  if (changed) check_order(g, name);
  return changed;
}

}  // namespace

int optimize_graph(Graph& g, GraphOptimizationLevel level, PassContext& ctx) {
  if (level == GraphOptimizationLevel::kDisabled) return 0;
  int changed = 0;
  // Half precision as float32 first: the passes after it (folding, fusions) see float32 nodes.
  changed += run_pass(compute_half_in_float, "compute_half_in_float", g, ctx);
  // Before folding, which would turn the weights' DequantizeLinear into float initializers.
  // The weights' DequantizeLinear nodes the fused ops no longer read go first.
  if (level == GraphOptimizationLevel::kAll && run_pass(fuse_qdq, "fuse_qdq", g, ctx) > 0)
    changed += 1 + run_pass(eliminate_dead_nodes, "eliminate_dead_nodes", g, ctx);
  changed += run_pass(fold_constants, "fold_constants", g, ctx);
  changed += run_pass(eliminate_identities, "eliminate_identities", g, ctx);
  changed += run_pass(eliminate_dead_nodes, "eliminate_dead_nodes", g, ctx);
  if (level == GraphOptimizationLevel::kAll) {
    changed += run_pass(fuse_activations, "fuse_activations", g, ctx);
    changed += run_pass(fuse_conv_add, "fuse_conv_add", g, ctx);
    changed += run_pass(fuse_qconv_add, "fuse_qconv_add", g, ctx);
    changed += run_pass(fuse_attention, "fuse_attention", g, ctx);
    changed += run_pass(fuse_gelu, "fuse_gelu", g, ctx);
    changed += run_pass(fuse_silu, "fuse_silu", g, ctx);
    changed += run_pass(fuse_matmul_bias, "fuse_matmul_bias", g, ctx);
    // What the fusions left unread (a DequantizeLinear whose readers were all fused).
    changed += run_pass(eliminate_dead_nodes, "eliminate_dead_nodes", g, ctx);
  }
  // Layouts last, so that fused nodes (FusedConv) are offered channels-last as a whole.
  int moved = run_pass(assign_channels_last, "assign_channels_last", g, ctx);
  moved += run_pass(optimize_transposes, "optimize_transposes", g, ctx);
  if (moved) changed += moved + run_pass(eliminate_dead_nodes, "eliminate_dead_nodes", g, ctx);
  return changed;
}

}  // namespace onyx
