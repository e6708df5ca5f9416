// Conv + Relu / Clip -> onyx::FusedConv and Gemm + Relu / Clip -> onyx::FusedGemm (the activation
// runs in the producer's epilogue), when the EP that would run both nodes also takes the fused one.
#include <limits>

#include "optimizer/passes.hpp"

namespace onyx {

namespace {
/// Constant scalar float value of input i of n, or false.
bool const_scalar(const Graph& g, const Node& n, size_t i, float* out) {
  if (!n.has_input(i)) return false;
  const ValueSlot& s = g.values[n.inputs[i]];
  if (!s.has_initializer || s.is_graph_input || s.initializer.numel() != 1 || s.initializer.dtype() != DType::kFloat) return false;
  *out = s.initializer.data<float>()[0];
  return true;
}
}  // namespace

int fuse_activations(Graph& g, PassContext& ctx) {
  const UseInfo u = compute_uses(g);
  std::vector<char> dead(g.nodes.size(), 0);
  int changed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& conv = g.nodes[i];
    const bool is_conv = conv.op_type == "Conv", is_gemm = conv.op_type == "Gemm";
    if ((!is_conv && !is_gemm) || !conv.domain.empty() || conv.outputs.size() != 1) continue;
    const int y = conv.outputs[0];
    if (y < 0 || u.uses[y] != 1 || u.is_output[y]) continue;
    if (g.values[conv.inputs[0]].type.elem_dtype() != DType::kFloat) continue;
    const int ci = u.consumers[y][0];
    if (dead[ci]) continue;
    const Node& act = g.nodes[ci];
    if (!act.domain.empty() || act.inputs.empty() || act.inputs[0] != y || !act.implicit_inputs.empty()) continue;
    std::string kind;
    std::vector<float> params;
    if (act.op_type == "Relu") {
      kind = "Relu";
    } else if (act.op_type == "Clip") {
      float lo = -std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::max();
      if (act.opset < 11) {
        lo = act.attr_float("min", lo);
        hi = act.attr_float("max", hi);
      } else {
        if (act.has_input(1) && !const_scalar(g, act, 1, &lo)) continue;
        if (act.has_input(2) && !const_scalar(g, act, 2, &hi)) continue;
      }
      kind = "Clip";
      params = {lo, hi};
    } else {
      continue;
    }
    Node fused = conv;
    Attribute a;
    a.name = "activation";
    a.type = AttrType::kString;
    a.s = kind;
    fused.attrs.push_back(a);
    if (!params.empty()) {
      Attribute p;
      p.name = "activation_params";
      p.type = AttrType::kFloats;
      p.floats = params;
      fused.attrs.push_back(p);
    }
    fused.op_type = is_conv ? "FusedConv" : "FusedGemm";
    fused.domain = "onyx";
    fused.opset = 1;
    fused.outputs[0] = act.outputs[0];
    if (fused.name.empty()) fused.name = act.name;
    const Node* members[] = {&conv, &act};
    if (!ctx.may_fuse_group(members, fused)) continue;
    conv = std::move(fused);
    dead[ci] = 1;
    ++changed;
    ctx.log.push_back("fused " + kind + " into " + conv.label());
  }
  if (changed) remove_nodes(g, dead);
  return changed;
}

}  // namespace onyx
