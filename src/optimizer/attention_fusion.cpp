// Decomposed scaled dot-product attention -> onyx::Attention.
//
//   Y = MatMul(Softmax(Add(Mul(MatMul(Q', KT), c2), Bias), axis = last), V),   Q' = Q / c1
//
// becomes Attention(Q, KT, V, Bias; scale = c2 / c1): scores, bias, softmax and the second
// product in one kernel, without the [.., Sq, Sk] intermediates. The scalar Mul/Div steps are
// optional (any number of them, on either side of the first MatMul), so is the Add.
#include "optimizer/fusion.hpp"

namespace onyx {

namespace {

bool float_ranked(const Graph& g, int v, size_t min_rank) {
  if (v < 0) return false;
  const TypeInfo& t = g.values[v].type;
  return t.is_tensor() && t.dtype == DType::kFloat && t.has_shape && t.shape.size() >= min_rank;
}

struct Matcher : FusionView {
  /// If v = Mul(x, c), Mul(c, x) or Div(x, c) with c a constant scalar and v read once, the step
  /// (x and the factor); else false.
  bool scalar_step(int v, const Node** step, int* x, float* factor) const {
    const Node* n = sole_producer(v);
    if (!n || n->inputs.size() != 2) return false;
    const size_t rank = g.values[v].type.has_shape ? g.values[v].type.shape.size() : 0;
    float c = 0;
    if (n->op_type == "Mul") {
      for (int k = 0; k < 2; ++k)
        if (scalar_float_constant(g, n->inputs[1 - k], rank, &c) && same_shape(g.values[n->inputs[k]].type, g.values[v].type)) {
          *step = n;
          *x = n->inputs[k];
          *factor = c;
          return true;
        }
    } else if (n->op_type == "Div" && scalar_float_constant(g, n->inputs[1], rank, &c) && c != 0.0f &&
               same_shape(g.values[n->inputs[0]].type, g.values[v].type)) {
      *step = n;
      *x = n->inputs[0];
      *factor = 1.0f / c;
      return true;
    }
    return false;
  }

  /// Follows scalar steps back from v, multiplying their factors into *scale.
  int strip_scales(int v, float* scale, std::vector<const Node*>& members) const {
    for (int guard = 0; guard < 8; ++guard) {
      const Node* step = nullptr;
      int x = -1;
      float f = 1;
      if (!scalar_step(v, &step, &x, &f)) break;
      *scale *= f;
      members.push_back(step);
      v = x;
    }
    return v;
  }
};

int softmax_axis(const Node& sm, size_t rank) {
  int64_t axis = sm.attr_int("axis", sm.opset < 13 ? 1 : -1);
  if (axis < 0) axis += static_cast<int64_t>(rank);
  return static_cast<int>(axis);
}

}  // namespace

int fuse_attention(Graph& g, PassContext& ctx) {
  const UseInfo u = compute_uses(g);
  std::vector<char> dead(g.nodes.size(), 0);
  const Matcher m{{g, u, dead}};
  int changed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (dead[i]) continue;
    const Node& mm2 = g.nodes[i];
    if (mm2.op_type != "MatMul" || !mm2.domain.empty() || mm2.inputs.size() != 2 || mm2.outputs.size() != 1) continue;
    const int p = mm2.inputs[0], v = mm2.inputs[1];
    if (!float_ranked(g, p, 2) || !float_ranked(g, v, 2)) continue;
    std::vector<const Node*> members{&mm2};
    const Node* sm = m.sole_producer(p);
    if (!sm || sm->op_type != "Softmax" || softmax_axis(*sm, g.values[p].type.shape.size()) + 1 !=
                                               static_cast<int>(g.values[p].type.shape.size()))
      continue;
    members.push_back(sm);
    // Softmax input: scores (+ bias).
    int x = sm->inputs[0], bias = -1;
    float scale = 1.0f;
    if (const Node* add = m.sole_producer(x); add && add->op_type == "Add" && add->inputs.size() == 2) {
      // The scores side is the one that leads (through scalar steps) to a MatMul read only here;
      // the bias must not widen the scores (the Add's output has the scores' shape).
      int chosen = -1;
      for (int k = 0; k < 2 && chosen < 0; ++k) {
        float s = 1.0f;
        std::vector<const Node*> tmp;
        const int base = m.strip_scales(add->inputs[k], &s, tmp);
        const Node* mm = m.sole_producer(base);
        if (mm && mm->op_type == "MatMul" && same_shape(g.values[add->inputs[k]].type, g.values[x].type) &&
            float_ranked(g, add->inputs[1 - k], 0))
          chosen = k;
      }
      if (chosen < 0) continue;
      members.push_back(add);
      bias = add->inputs[1 - chosen];
      x = add->inputs[chosen];
    }
    const int scores = m.strip_scales(x, &scale, members);
    const Node* mm1 = m.sole_producer(scores);
    if (!mm1 || mm1->op_type != "MatMul" || mm1->inputs.size() != 2) continue;
    members.push_back(mm1);
    int q = mm1->inputs[0];
    const int kt = mm1->inputs[1];
    q = m.strip_scales(q, &scale, members);
    if (!float_ranked(g, q, 2) || !float_ranked(g, kt, 2)) continue;

    Node fused = onyx_node(mm2.name.empty() ? sm->name : mm2.name, "Attention", {q, kt, v}, mm2.outputs);
    if (bias >= 0) fused.inputs.push_back(bias);
    Attribute a;
    a.name = "scale";
    a.type = AttrType::kFloat;
    a.f = scale;
    fused.attrs.push_back(a);
    if (commit_fusion(g, dead, i, members, std::move(fused), ctx)) ++changed;
  }
  if (changed) remove_nodes(g, dead);
  return changed;
}

}  // namespace onyx
