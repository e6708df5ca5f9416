// MatMul(A, W) + b [+ Relu | Clip | Gelu], W a constant matrix and b a constant row of W's width
// (a Linear layer on 3-D activations, as torch exports it), becomes onyx::FusedMatMul: the bias
// and the activation are applied in the GEMM's epilogue instead of two more passes.
#include "optimizer/fusion.hpp"

namespace onyx {

namespace {

const ValueSlot* constant_float(const Graph& g, int v) {
  if (v < 0) return nullptr;
  const ValueSlot& s = g.values[v];
  if (!s.has_initializer || s.is_graph_input || s.initializer.dtype() != DType::kFloat) return nullptr;
  return &s;
}

}  // namespace

int fuse_matmul_bias(Graph& g, PassContext& ctx) {
  const UseInfo u = compute_uses(g);
  std::vector<char> dead(g.nodes.size(), 0);
  const FusionView view{g, u, dead};
  int changed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (dead[i]) continue;
    const Node& mm = g.nodes[i];
    if (mm.op_type != "MatMul" || !mm.domain.empty() || mm.inputs.size() != 2 || mm.outputs.size() != 1) continue;
    const TypeInfo& ta = g.values[mm.inputs[0]].type;
    const ValueSlot* w = constant_float(g, mm.inputs[1]);
    if (!w || w->initializer.rank() != 2 || ta.dtype != DType::kFloat || !ta.has_shape || ta.shape.size() < 2) continue;
    const int64_t n_cols = w->initializer.dim(1);
    const int y = mm.outputs[0];
    const Node* add = view.sole_consumer(y);
    if (!add || add->op_type != "Add" || add->inputs.size() != 2) continue;
    const int bias = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
    const ValueSlot* b = constant_float(g, bias);
    if (!b || b->initializer.numel() != n_cols || b->initializer.rank() > static_cast<int64_t>(ta.shape.size()) ||
        (b->initializer.rank() > 0 && b->initializer.dim(b->initializer.rank() - 1) != n_cols) ||
        !same_shape(g.values[add->outputs[0]].type, g.values[y].type))
      continue;
    std::vector<const Node*> members{&mm, add};
    std::string act;
    std::vector<float> params;
    int out = add->outputs[0];
    if (const Node* a = view.sole_consumer(out); a && !a->inputs.empty() && a->inputs[0] == out) {
      if (a->op_type == "Gelu" && a->domain.empty() && a->attr_string("approximate", "none") == "none")
        act = "Gelu";
      else if (!epilogue_activation(g, *a, &act, &params))
        act.clear();
      if (!act.empty()) {
        members.push_back(a);
        out = a->outputs[0];
      }
    }
    Node fused = onyx_node(mm.name, "FusedMatMul", {mm.inputs[0], mm.inputs[1], bias}, {out});
    set_activation(fused, act, params);
    if (commit_fusion(g, dead, i, members, std::move(fused), ctx)) ++changed;
  }
  if (changed) remove_nodes(g, dead);
  return changed;
}

}  // namespace onyx
