// Conv + Relu / Clip -> onyx::FusedConv and Gemm + Relu / Clip -> onyx::FusedGemm (the activation
// runs in the producer's epilogue), when the EP that would run both nodes also takes the fused one.
#include "optimizer/fusion.hpp"

namespace onyx {

int fuse_activations(Graph& g, PassContext& ctx) {
  const UseInfo u = compute_uses(g);
  std::vector<char> dead(g.nodes.size(), 0);
  const FusionView view{g, u, dead};
  int changed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& prod = g.nodes[i];
    const bool is_conv = prod.op_type == "Conv", is_gemm = prod.op_type == "Gemm";
    if ((!is_conv && !is_gemm) || !prod.domain.empty() || prod.outputs.size() != 1 || dead[i]) continue;
    const int y = prod.outputs[0];
    if (y < 0 || g.values[prod.inputs[0]].type.elem_dtype() != DType::kFloat) continue;
    const Node* act = view.sole_consumer(y);
    std::string kind;
    std::vector<float> params;
    if (!act || act->inputs[0] != y || !epilogue_activation(g, *act, &kind, &params)) continue;
    Node fused = prod;
    set_activation(fused, kind, params);
    fused.op_type = is_conv ? "FusedConv" : "FusedGemm";
    fused.domain = "onyx";
    fused.opset = 1;
    fused.outputs[0] = act->outputs[0];
    if (fused.name.empty()) fused.name = act->name;
    const Node* members[] = {&prod, act};
    if (commit_fusion(g, dead, i, members, std::move(fused), ctx)) ++changed;
  }
  if (changed) remove_nodes(g, dead);
  return changed;
}

}  // namespace onyx
