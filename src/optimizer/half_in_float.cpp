// Half precision in float32: a float16 or bfloat16 node whose EP prefers it (the CPU EP:
// ExecutionProvider::computes_half_in_float) becomes its float32 form: its half-precision
// constant inputs are converted once into float32 initializers, its other half inputs are read
// through a Cast to float32, and each half output is made in float32 and Cast back for the readers
// that still want the half value (graph outputs, nodes left as they are). A converted node reads
// a float32 value directly when one already stands for its input: the float32 output of the
// converted node before it, so a chain of such nodes runs in float32 throughout, with Casts only
// at the edges of the region (as ONNX Runtime's CPU EP does for the float16 nodes it has no
// kernel for). Rounding to half precision then happens where the region ends, not between its
// nodes, so results are at least as close to the float32 model as the half one computed node by
// node. Casts the model writes itself (mixed precision) stay, rounding as written.
//
// Ops that only move data (Reshape, Transpose, Concat, ...) are converted only inside a region
// (an input already has a float32 stand-in), so they neither start a region nor add Casts; ops
// whose meaning depends on a type attribute or on their input's type (Cast, CastLike, the random
// ops, QuantizeLinear / DequantizeLinear, Range, a stash_type other than float), that read only
// a shape (Shape, Size), or that have subgraphs are left as written.
#include <cstring>
#include <map>
#include <set>

#include "core/common.hpp"
#include "optimizer/passes.hpp"

namespace onyx {

namespace {

bool is_half(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

bool half_tensor(const Graph& g, int v) { return v >= 0 && g.values[v].type.is_tensor() && is_half(g.values[v].type.elem_dtype()); }

bool is_constant(const Graph& g, int v) { return v >= 0 && g.values[v].has_initializer && !g.values[v].is_graph_input; }

bool left_as_written(const Node& n) {
  static const std::set<std::string> ops = {
      "Cast", "CastLike", "Constant", "ConstantOfShape", "Shape", "Size", "EyeLike", "RandomNormal", "RandomNormalLike",
      "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli", "QuantizeLinear", "DequantizeLinear",
      "DynamicQuantizeLinear", "Identity", "Optional", "OptionalGetElement", "OptionalHasElement", "Range"};
  if (ops.count(n.op_type) || !n.implicit_inputs.empty()) return true;
  for (const Attribute& a : n.attrs)
    if (a.type == AttrType::kGraph || a.type == AttrType::kGraphs || a.name == "to" || a.name == "dtype" ||
        a.name == "output_dtype" || (a.name == "stash_type" && a.i != static_cast<int64_t>(DType::kFloat)))
      return true;
  return false;
}

bool moves_data(const Node& n) {
  static const std::set<std::string> ops = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Concat",
                                            "Split", "Slice", "Gather", "GatherElements", "GatherND", "Expand",
                                            "Tile", "Pad", "DepthToSpace", "SpaceToDepth", "ReverseSequence"};
  return n.domain.empty() && ops.count(n.op_type) > 0;
}

Tensor to_float(const Tensor& h) {
  Tensor f(DType::kFloat, h.shape());
  float* d = f.data<float>();
  const auto* s = static_cast<const uint16_t*>(h.raw_data());
  if (h.dtype() == DType::kFloat16)
    for (int64_t i = 0; i < h.numel(); ++i) d[i] = Float16::to_float(s[i]);
  else
    for (int64_t i = 0; i < h.numel(); ++i) d[i] = BFloat16::to_float(s[i]);
  return f;
}

}  // namespace

int compute_half_in_float(Graph& g, PassContext& ctx) {
  std::map<int, int> twin;  // half value -> the float32 value standing for it
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size());
  int changed = 0;
  // The nodes are copied, not moved, into the new list: EPs asked through ctx.may_compute_in_float
  // look at a node's producers in g (a Clip's Constant bounds, a Conv's weights), which must stay intact.
  for (const Node& n : g.nodes) {
    bool half = false, inside = false;
    for (int v : n.inputs) {
      half |= half_tensor(g, v);
      inside |= half_tensor(g, v) && twin.count(v);
    }
    for (int v : n.outputs) half |= half_tensor(g, v);
    if (!half || left_as_written(n) || (moves_data(n) && !inside)) {
      nodes.push_back(n);
      continue;
    }
    // The float32 form, with new values for the inputs and outputs that have no stand-in yet.
    const size_t first_new = g.values.size();
    Node f = n;
    std::vector<std::pair<int, int>> made_inputs;  // (half value, new float value)
    for (int& v : f.inputs) {
      if (!half_tensor(g, v)) continue;
      auto t = twin.find(v);
      if (t != twin.end()) {
        v = t->second;
        continue;
      }
      bool again = false;  // the same half value read twice by this node
      for (const auto& [h, fl] : made_inputs)
        if (h == v) {
          v = fl;
          again = true;
        }
      if (again) continue;
      const TypeInfo ht = g.values[v].type;
      const int fv = g.add_value(unused_value_name(g, g.values[v].name + "_float"));
      g.values[fv].type = ht.has_shape ? TypeInfo::tensor(DType::kFloat, ht.shape) : TypeInfo::tensor(DType::kFloat);
      made_inputs.emplace_back(v, fv);
      v = fv;
    }
    std::vector<std::pair<int, int>> made_outputs;  // (half value, new float value)
    for (int& v : f.outputs) {
      if (!half_tensor(g, v)) continue;
      const TypeInfo ht = g.values[v].type;
      const int fv = g.add_value(unused_value_name(g, g.values[v].name + "_float"));
      g.values[fv].type = ht.has_shape ? TypeInfo::tensor(DType::kFloat, ht.shape) : TypeInfo::tensor(DType::kFloat);
      made_outputs.emplace_back(v, fv);
      v = fv;
    }
    if (!ctx.may_compute_in_float(n, f)) {
      while (g.values.size() > first_new) {
        g.by_name.erase(g.values.back().name);
        g.values.pop_back();
      }
      nodes.push_back(n);
      continue;
    }
    for (const auto& [h, fv] : made_inputs) {
      if (is_constant(g, h)) {
        g.values[fv].has_initializer = true;
        g.values[fv].initializer = to_float(g.values[h].initializer);
      } else {
        nodes.push_back(cast_node(g.values[h].name + "_to_float", h, fv, DType::kFloat));
      }
      twin[h] = fv;
    }
    const std::string label = n.label();
    nodes.push_back(std::move(f));
    for (const auto& [h, fv] : made_outputs) {
      nodes.push_back(cast_node(g.values[h].name + "_to_half", fv, h, g.values[h].type.elem_dtype()));
      twin[h] = fv;
    }
    ctx.log.push_back(str(label, " runs in float32"));
    ++changed;
  }
  g.nodes = std::move(nodes);
  recompute_producers(g);
  return changed;
}

}  // namespace onyx
