// Helpers of the fusion passes (fusion.hpp).
#include "optimizer/fusion.hpp"

#include <limits>

namespace onyx {

const Node* FusionView::sole_producer(int v) const {
  if (v < 0 || u.uses[v] != 1 || u.is_output[v]) return nullptr;
  const int p = g.values[v].producer;
  if (p < 0 || dead[p]) return nullptr;
  const Node& n = g.nodes[p];
  if (!n.domain.empty() || !n.implicit_inputs.empty() || n.outputs.size() != 1) return nullptr;
  return &n;
}

const Node* FusionView::sole_consumer(int v, std::string_view domain) const {
  if (v < 0 || u.uses[v] != 1 || u.is_output[v]) return nullptr;
  const int c = u.consumers[v][0];
  if (dead[c]) return nullptr;
  const Node& n = g.nodes[c];
  if (n.domain != domain || !n.implicit_inputs.empty() || n.outputs.size() != 1) return nullptr;
  return &n;
}

bool scalar_float_constant(const Graph& g, int v, size_t max_rank, float* out) {
  if (v < 0) return false;
  const ValueSlot& s = g.values[v];
  if (!s.has_initializer || s.is_graph_input || s.initializer.numel() != 1 || s.initializer.dtype() != DType::kFloat)
    return false;
  if (static_cast<size_t>(s.initializer.rank()) > max_rank) return false;
  *out = s.initializer.data<float>()[0];
  return true;
}

bool same_shape(const TypeInfo& a, const TypeInfo& b) {
  if (!a.has_shape || !b.has_shape || a.shape.size() != b.shape.size()) return false;
  for (size_t i = 0; i < a.shape.size(); ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

bool epilogue_activation(const Graph& g, const Node& act, std::string* kind, std::vector<float>* params) {
  if (!act.domain.empty() || act.inputs.empty() || !act.implicit_inputs.empty()) return false;
  params->clear();
  if (act.op_type == "Relu") {
    *kind = "Relu";
    return true;
  }
  if (act.op_type != "Clip") return false;
  float lo = -std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::max();
  if (act.opset < 11) {
    lo = act.attr_float("min", lo);
    hi = act.attr_float("max", hi);
  } else {
    if (act.has_input(1) && !scalar_float_constant(g, act.inputs[1], 8, &lo)) return false;
    if (act.has_input(2) && !scalar_float_constant(g, act.inputs[2], 8, &hi)) return false;
  }
  *kind = "Clip";
  *params = {lo, hi};
  return true;
}

Node onyx_node(std::string name, const char* op, std::vector<int> inputs, std::vector<int> outputs) {
  Node n;
  n.name = std::move(name);
  n.op_type = op;
  n.domain = "onyx";
  n.opset = 1;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

void set_activation(Node& n, const std::string& kind, const std::vector<float>& params) {
  if (kind.empty()) return;
  Attribute a;
  a.name = "activation";
  a.type = AttrType::kString;
  a.s = kind;
  n.attrs.push_back(a);
  if (params.empty()) return;
  Attribute p;
  p.name = "activation_params";
  p.type = AttrType::kFloats;
  p.floats = params;
  n.attrs.push_back(p);
}

bool commit_fusion(Graph& g, std::vector<char>& dead, size_t at, std::span<const Node* const> members, Node fused,
                   PassContext& ctx, bool quantized_form) {
  if (!(quantized_form ? ctx.may_quantize_group(members, fused) : ctx.may_fuse_group(members, fused))) return false;
  for (const Node* n : members) {
    const size_t k = static_cast<size_t>(n - g.nodes.data());
    if (k != at) dead[k] = 1;
  }
  std::string what = fused.domain.empty() ? fused.op_type : fused.domain + "::" + fused.op_type;
  ctx.log.push_back("fused " + std::to_string(members.size()) + " nodes into " + what + " '" + fused.name + "'");
  g.nodes[at] = std::move(fused);
  return true;
}

}  // namespace onyx
