// Constant folding: nodes whose inputs are all constants become initializers.
#include "optimizer/passes.hpp"

namespace onyx {

int fold_constants(Graph& g, PassContext& ctx) {
  if (!ctx.evaluate) return 0;
  std::vector<char> dead(g.nodes.size(), 0);
  int changed = 0;
  auto constant = [&](int v) { return v < 0 || (g.values[v].has_initializer && !g.values[v].is_graph_input); };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!n.implicit_inputs.empty()) continue;
    bool all = true;
    for (int v : n.inputs) all &= constant(v);
    for (const auto& a : n.attrs) all &= a.type != AttrType::kGraph && a.type != AttrType::kGraphs;
    if (!all) continue;
    std::vector<Value> outs;
    if (!ctx.evaluate(g, i, outs)) continue;
    bool tensors = outs.size() == n.outputs.size();
    for (const Value& v : outs) tensors &= v.is_tensor();
    if (!tensors) continue;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const int v = n.outputs[o];
      if (v < 0) continue;
      ValueSlot& s = g.values[v];
      s.has_initializer = true;
      s.initializer = outs[o].tensor();
      s.type = TypeInfo::tensor(s.initializer.dtype(), s.initializer.shape());
      s.producer = -1;
    }
    dead[i] = 1;
    ++changed;
    ctx.log.push_back("folded " + n.label());
  }
  if (changed) remove_nodes(g, dead);
  return changed;
}

}  // namespace onyx
