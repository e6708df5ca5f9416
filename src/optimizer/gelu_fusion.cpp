// The exact GELU written out as torch exports it before opset 20,
//   y = (x * (erf(x / sqrt(2)) + 1)) * 0.5      (or with x * 0.5 first, or x * (1/sqrt(2)) inside)
// becomes one Gelu (opset 20, approximate = "none"): one pass over the tensor instead of five. The
// constants may be those values rounded to float16 or bfloat16 (a half-precision model run in
// float32): the fused GELU then uses the exact ones, a difference far below half precision's.
#include <cmath>

#include "optimizer/fusion.hpp"

namespace onyx {

namespace {

/// v is `want` (to float32 precision), or `want` rounded to float16 or bfloat16: the constants of a
/// half-precision model that half_in_float runs in float32 (its sqrt(2) is 1.4140625 in float16).
bool near(float v, double want) {
  if (std::fabs(static_cast<double>(v) - want) <= 1e-5 * std::fabs(want)) return true;
  const float w = static_cast<float>(want);
  return v == Float16::to_float(Float16::from_float(w)) || v == BFloat16::to_float(BFloat16::from_float(w));
}

struct GeluMatch : FusionView {
  bool constant(int v, double want) const {
    float c = 0;
    return scalar_float_constant(g, v, 1, &c) && near(c, want);
  }
  /// For a binary node n = op(a, b) with a constant `want` on one side: the other input, else -1.
  int other_than_constant(const Node& n, const char* op, double want, bool commutes) const {
    if (n.op_type != op || n.inputs.size() != 2) return -1;
    if (constant(n.inputs[1], want)) return n.inputs[0];
    if (commutes && constant(n.inputs[0], want)) return n.inputs[1];
    return -1;
  }
  /// v = erf(x / sqrt 2) + 1 (read once): x, and the three nodes; else -1.
  int erf_plus_one(int v, std::vector<const Node*>& members) const {
    const Node* add = sole_producer(v);
    if (!add) return -1;
    const int e = other_than_constant(*add, "Add", 1.0, true);
    const Node* erf = sole_producer(e);
    if (!erf || erf->op_type != "Erf") return -1;
    const Node* scale = sole_producer(erf->inputs[0]);
    if (!scale) return -1;
    int x = other_than_constant(*scale, "Div", std::sqrt(2.0), false);
    if (x < 0) x = other_than_constant(*scale, "Mul", std::sqrt(0.5), true);
    if (x < 0) return -1;
    members.insert(members.end(), {add, erf, scale});
    return x;
  }
};

bool float_tensor(const Graph& g, int v) { return v >= 0 && g.values[v].type.is_tensor() && g.values[v].type.dtype == DType::kFloat; }

}  // namespace

int fuse_gelu(Graph& g, PassContext& ctx) {
  const UseInfo u = compute_uses(g);
  std::vector<char> dead(g.nodes.size(), 0);
  const GeluMatch m{{g, u, dead}};
  int changed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (dead[i]) continue;
    const Node& outer = g.nodes[i];
    if (!outer.domain.empty() || outer.op_type != "Mul" || outer.inputs.size() != 2 || outer.outputs.size() != 1) continue;
    if (!float_tensor(g, outer.outputs[0])) continue;
    std::vector<const Node*> members{&outer};
    int x = -1;
    // (a) outer = Mul(Mul(x, erf(..) + 1), 0.5)
    if (const int inner_v = m.other_than_constant(outer, "Mul", 0.5, true); inner_v >= 0) {
      if (const Node* inner = m.sole_producer(inner_v); inner && inner->op_type == "Mul" && inner->inputs.size() == 2) {
        for (int k = 0; k < 2 && x < 0; ++k) {
          std::vector<const Node*> tmp{inner};
          const int xe = m.erf_plus_one(inner->inputs[1 - k], tmp);
          if (xe >= 0 && xe == inner->inputs[k]) {
            x = xe;
            members.insert(members.end(), tmp.begin(), tmp.end());
          }
        }
      }
    }
    // (b) outer = Mul(Mul(x, 0.5), erf(..) + 1)
    for (int k = 0; k < 2 && x < 0; ++k) {
      const Node* half = m.sole_producer(outer.inputs[k]);
      if (!half) continue;
      const int xh = m.other_than_constant(*half, "Mul", 0.5, true);
      if (xh < 0) continue;
      std::vector<const Node*> tmp{half};
      const int xe = m.erf_plus_one(outer.inputs[1 - k], tmp);
      if (xe >= 0 && xe == xh) {
        x = xe;
        members.insert(members.end(), tmp.begin(), tmp.end());
      }
    }
    if (x < 0 || !float_tensor(g, x)) continue;
    Node gelu;
    gelu.name = outer.name;
    gelu.op_type = "Gelu";
    gelu.opset = 20;
    gelu.inputs = {x};
    gelu.outputs = outer.outputs;
    if (commit_fusion(g, dead, i, members, std::move(gelu), ctx)) ++changed;
  }
  if (changed) remove_nodes(g, dead);
  return changed;
}

int fuse_silu(Graph& g, PassContext& ctx) {
  const UseInfo u = compute_uses(g);
  std::vector<char> dead(g.nodes.size(), 0);
  const FusionView view{g, u, dead};
  int changed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (dead[i]) continue;
    const Node& mul = g.nodes[i];
    if (!mul.domain.empty() || mul.op_type != "Mul" || mul.inputs.size() != 2 || mul.outputs.size() != 1) continue;
    if (!float_tensor(g, mul.outputs[0]) || !same_shape(g.values[mul.outputs[0]].type, g.values[mul.inputs[0]].type) ||
        !same_shape(g.values[mul.inputs[0]].type, g.values[mul.inputs[1]].type))
      continue;  // (no broadcasting: y has x's shape)
    for (int k = 0; k < 2; ++k) {
      const int x = mul.inputs[k];
      const Node* sig = view.sole_producer(mul.inputs[1 - k]);
      if (!sig || sig->op_type != "Sigmoid" || sig->inputs.size() != 1 || !float_tensor(g, x)) continue;
      std::vector<const Node*> members{&mul, sig};
      float alpha = 1.0f;
      if (sig->inputs[0] != x) {  // Sigmoid(alpha * x)
        const Node* scale = view.sole_producer(sig->inputs[0]);
        if (!scale || scale->op_type != "Mul" || scale->inputs.size() != 2) continue;
        bool scaled = false;
        for (int j = 0; j < 2 && !scaled; ++j)
          scaled = scale->inputs[j] == x && scalar_float_constant(g, scale->inputs[1 - j], 1, &alpha);
        if (!scaled) continue;
        members.push_back(scale);
      }
      Node fused;
      fused.name = mul.name;
      fused.op_type = "QuickGelu";
      fused.domain = "com.microsoft";
      fused.opset = 1;
      fused.inputs = {x};
      fused.outputs = mul.outputs;
      Attribute a;
      a.name = "alpha";
      a.type = AttrType::kFloat;
      a.f = alpha;
      fused.attrs.push_back(a);
      if (commit_fusion(g, dead, i, members, std::move(fused), ctx)) ++changed;
      break;
    }
  }
  if (changed) remove_nodes(g, dead);
  return changed;
}

}  // namespace onyx
