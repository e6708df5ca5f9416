// The optimisation pipeline: which passes run at which level.
#include "optimizer/passes.hpp"

namespace onyx {

int optimize_graph(Graph& g, GraphOptimizationLevel level, PassContext& ctx) {
  if (level == GraphOptimizationLevel::kDisabled) return 0;
  int changed = 0;
  changed += fold_constants(g, ctx);
  changed += eliminate_identities(g, ctx);
  changed += eliminate_dead_nodes(g, ctx);
  if (level == GraphOptimizationLevel::kAll) {
    changed += fuse_activations(g, ctx);
    changed += fuse_conv_add(g, ctx);
    changed += fuse_attention(g, ctx);
    changed += fuse_gelu(g, ctx);
    changed += fuse_matmul_bias(g, ctx);
  }
  return changed;
}

}  // namespace onyx
