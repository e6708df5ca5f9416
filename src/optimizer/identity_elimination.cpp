// Identity elimination: readers of an Identity's output read its input instead.
#include "optimizer/passes.hpp"

namespace onyx {

namespace {
bool inference_dropout(const Graph& g, const Node& n, const UseInfo& u) {
  if (n.op_type != "Dropout" || !n.domain.empty()) return false;
  if (n.outputs.size() > 1 && n.outputs[1] >= 0 && (u.uses[n.outputs[1]] > 0 || u.is_output[n.outputs[1]])) return false;
  if (n.opset >= 12 && n.has_input(2)) {
    const ValueSlot& t = g.values[n.inputs[2]];
    if (!t.has_initializer || t.is_graph_input || t.initializer.numel() != 1 || t.initializer.dtype() != DType::kBool) return false;
    if (t.initializer.data<bool>()[0]) return false;
  }
  return true;
}
}  // namespace

int eliminate_identities(Graph& g, PassContext& ctx) {
  const UseInfo u = compute_uses(g);
  std::vector<char> dead(g.nodes.size(), 0);
  int changed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const bool identity = n.domain.empty() && n.op_type == "Identity";
    if (!identity && !inference_dropout(g, n, u)) continue;
    if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty() || n.outputs[0] < 0) continue;
    const int in = n.inputs[0], out = n.outputs[0];
    if (u.is_output[out]) continue;  // the graph output keeps its name and its own buffer
    bool read_by_subgraph = false;
    for (int c : u.consumers[out])
      for (int v : g.nodes[c].implicit_inputs) read_by_subgraph |= v == out;
    if (read_by_subgraph) continue;
    replace_uses(g, out, in);
    dead[i] = 1;
    ++changed;
    ctx.log.push_back("removed " + n.label());
  }
  if (changed) remove_nodes(g, dead);
  return changed;
}

int eliminate_dead_nodes(Graph& g, PassContext& ctx) {
  int changed = 0;
  for (;;) {
    const UseInfo u = compute_uses(g);
    std::vector<char> dead(g.nodes.size(), 0);
    int round = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      bool used = false;
      for (int v : g.nodes[i].outputs) used |= v >= 0 && (u.uses[v] > 0 || u.is_output[v]);
      if (!used) {
        dead[i] = 1;
        ++round;
        ctx.log.push_back("removed unused " + g.nodes[i].label());
      }
    }
    if (!round) break;
    remove_nodes(g, dead);
    changed += round;
  }
  return changed;
}

}  // namespace onyx
