#include "ir/rewrite.hpp"

#include "core/common.hpp"

namespace onyx {

UseInfo compute_uses(const Graph& g) {
  UseInfo u;
  u.uses.assign(g.values.size(), 0);
  u.is_output.assign(g.values.size(), 0);
  u.consumers.resize(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int v : g.nodes[i].inputs)
      if (v >= 0) {
        ++u.uses[v];
        u.consumers[v].push_back(static_cast<int>(i));
      }
    for (int v : g.nodes[i].implicit_inputs) {
      ++u.uses[v];
      u.consumers[v].push_back(static_cast<int>(i));
    }
  }
  for (int o : g.outputs) u.is_output[o] = 1;
  return u;
}

void replace_uses(Graph& g, int from, int to) {
  for (Node& n : g.nodes) {
    for (int& v : n.inputs)
      if (v == from) v = to;
  }
}

void remove_nodes(Graph& g, const std::vector<char>& dead) {
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!dead[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  recompute_producers(g);
}

std::string unused_value_name(const Graph& g, const std::string& base) {
  std::string n = base;
  for (int k = 1; g.find(n) >= 0; ++k) n = str(base, "_", k);
  return n;
}

Node transpose_node(std::string name, int in, int out, std::vector<int64_t> perm) {
  Node t;
  t.name = std::move(name);
  t.op_type = "Transpose";
  t.opset = 13;
  t.inputs = {in};
  t.outputs = {out};
  Attribute a;
  a.name = "perm";
  a.type = AttrType::kInts;
  a.ints = std::move(perm);
  t.attrs.push_back(std::move(a));
  return t;
}

Node cast_node(std::string name, int in, int out, DType to) {
  Node c;
  c.name = std::move(name);
  c.op_type = "Cast";
  c.opset = 13;
  c.inputs = {in};
  c.outputs = {out};
  Attribute a;
  a.name = "to";
  a.type = AttrType::kInt;
  a.i = static_cast<int64_t>(to);
  c.attrs.push_back(std::move(a));
  return c;
}

void recompute_producers(Graph& g) {
  for (auto& v : g.values) v.producer = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].outputs)
      if (v >= 0) g.values[v].producer = static_cast<int>(i);
}

}  // namespace onyx
