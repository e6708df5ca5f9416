// MatMul(A, W) + b [+ Relu | Clip | Gelu], W a constant matrix and b a constant row of W's width
// (a Linear layer on 3-D activations, as torch exports it), becomes onyx::FusedMatMul: the bias
// and the activation are applied in the GEMM's epilogue instead of two more passes.
#include <limits>

#include "optimizer/passes.hpp"

namespace onyx {

namespace {

const ValueSlot* constant_float(const Graph& g, int v) {
  if (v < 0) return nullptr;
  const ValueSlot& s = g.values[v];
  if (!s.has_initializer || s.is_graph_input || s.initializer.dtype() != DType::kFloat) return nullptr;
  return &s;
}

bool same_shape(const TypeInfo& a, const TypeInfo& b) {
  if (!a.has_shape || !b.has_shape || a.shape.size() != b.shape.size()) return false;
  for (size_t i = 0; i < a.shape.size(); ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

}  // namespace

int fuse_matmul_bias(Graph& g, PassContext& ctx) {
  const UseInfo u = compute_uses(g);
  std::vector<char> dead(g.nodes.size(), 0);
  // The one plain node reading v (v not a graph output), else null.
  auto sole_consumer = [&](int v) -> const Node* {
    if (v < 0 || u.uses[v] != 1 || u.is_output[v]) return nullptr;
    const int c = u.consumers[v][0];
    if (dead[c]) return nullptr;
    const Node& n = g.nodes[c];
    if (!n.domain.empty() || !n.implicit_inputs.empty() || n.outputs.size() != 1) return nullptr;
    return &n;
  };
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
    const Node* add = sole_consumer(y);
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
    if (const Node* a = sole_consumer(out); a && !a->inputs.empty() && a->inputs[0] == out) {
      if (a->op_type == "Relu") {
        act = "Relu";
      } else if (a->op_type == "Gelu" && a->attr_string("approximate", "none") == "none") {
        act = "Gelu";
      } else if (a->op_type == "Clip") {
        float lo = -std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::max();
        bool ok = true;
        if (a->opset < 11) {
          lo = a->attr_float("min", lo);
          hi = a->attr_float("max", hi);
        } else {
          for (size_t k = 1; k < 3 && ok; ++k) {
            if (!a->has_input(k)) continue;
            const ValueSlot* c = constant_float(g, a->inputs[k]);
            ok = c && c->initializer.numel() == 1;
            if (ok) (k == 1 ? lo : hi) = c->initializer.data<float>()[0];
          }
        }
        if (ok) {
          act = "Clip";
          params = {lo, hi};
        }
      }
      if (!act.empty()) {
        members.push_back(a);
        out = a->outputs[0];
      }
    }
    Node fused;
    fused.name = mm.name;
    fused.op_type = "FusedMatMul";
    fused.domain = "onyx";
    fused.opset = 1;
    fused.inputs = {mm.inputs[0], mm.inputs[1], bias};
    fused.outputs = {out};
    if (!act.empty()) {
      Attribute at;
      at.name = "activation";
      at.type = AttrType::kString;
      at.s = act;
      fused.attrs.push_back(at);
    }
    if (!params.empty()) {
      Attribute p;
      p.name = "activation_params";
      p.type = AttrType::kFloats;
      p.floats = params;
      fused.attrs.push_back(p);
    }
    if (!ctx.may_fuse_group(std::span<const Node* const>(members), fused)) continue;
    for (const Node* n : members)
      if (n != &mm) dead[static_cast<size_t>(n - g.nodes.data())] = 1;
    ctx.log.push_back("fused " + std::to_string(members.size()) + " nodes into onyx::FusedMatMul " + fused.label());
    g.nodes[i] = std::move(fused);
    ++changed;
  }
  if (changed) remove_nodes(g, dead);
  return changed;
}

}  // namespace onyx
