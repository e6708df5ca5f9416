#include "session/copies.hpp"

#include <map>

#include "core/common.hpp"

namespace onyx {

namespace {
const std::string kHost = "cpu";

}  // namespace

bool reads_metadata_only(const Node& n) { return n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size"); }

namespace {

int64_t value_bytes(const TypeInfo& t) {
  if (!t.is_tensor() || !t.has_shape || !t.shape.is_concrete() || t.dtype == DType::kString) return -1;
  return t.shape.numel() * static_cast<int64_t>(dtype_size(t.dtype));
}
}  // namespace

std::vector<Placement::CopyInfo> insert_copies(Graph& g, PartitionResult& part,
                                               const std::vector<std::unique_ptr<ExecutionProvider>>& eps) {
  std::vector<Placement::CopyInfo> copies;
  const size_t n = g.nodes.size();
  auto mem_of_node = [&](size_t i) { return eps[part.node_ep[i]]->memory(); };
  bool any_device = false;
  for (size_t i = 0; i < n; ++i) any_device |= mem_of_node(i) != kHost;
  if (!any_device) return copies;

  // Which EP owns each memory (the first EP reporting it).
  std::map<std::string, int> owner;
  for (size_t e = 0; e < eps.size(); ++e)
    if (!owner.count(eps[e]->memory())) owner[eps[e]->memory()] = static_cast<int>(e);

  const size_t nv0 = g.values.size();
  std::vector<std::string> home(nv0, kHost);  // memory each value is produced in
  for (size_t v = 0; v < nv0; ++v)
    if (g.values[v].producer >= 0) home[v] = mem_of_node(g.values[v].producer);

  // Copies to create: (value, target memory) -> new value id; plus nodes to insert after a position.
  std::map<std::pair<int, std::string>, int> made;
  struct Pending {
    int after;  // insert after this node index (-1: at the front)
    Node node;
    int ep;
  };
  std::vector<Pending> pending;
  // Where a copy of value v can go: after its producer's group (a region ends with its last node).
  auto insert_point = [&](int v) {
    const int p = g.values[v].producer;
    if (p < 0) return -1;
    if (part.region_of[p] >= 0) return part.regions[part.region_of[p]].nodes.back();
    return p;
  };
  std::function<int(int, const std::string&)> copy_to = [&](int v, const std::string& mem) -> int {
    if (home[v] == mem) return v;
    if (auto it = made.find({v, mem}); it != made.end()) return it->second;
    // Device -> other device goes through host memory.
    int src = v;
    if (home[v] != kHost && mem != kHost) src = copy_to(v, kHost);
    const std::string from = src == v ? home[v] : kHost;
    const int nv = g.add_value(g.values[v].name + "@" + mem);
    g.values[nv].type = g.values[v].type;
    home.push_back(mem);
    Node c;
    c.name = "copy:" + g.values[v].name + ":" + from + "->" + mem;
    c.op_type = "Copy";
    c.domain = "onyx";
    c.opset = 1;
    c.inputs = {src};
    c.outputs = {nv};
    Attribute a;
    a.name = "to";
    a.type = AttrType::kString;
    a.s = mem;
    c.attrs.push_back(a);
    const int ep = owner[mem == kHost ? from : mem];
    pending.push_back({src == v ? insert_point(v) : -2 - src, std::move(c), ep});
    copies.push_back({g.values[v].name, from, mem, value_bytes(g.values[v].type)});
    made[{v, mem}] = nv;
    return nv;
  };

  // Node inputs in another memory.
  for (size_t i = 0; i < n; ++i) {
    const std::string mem = mem_of_node(i);
    const ExecutionProvider& ep = *eps[part.node_ep[i]];
    for (size_t k = 0; k < g.nodes[i].inputs.size(); ++k) {
      int& v = g.nodes[i].inputs[k];
      if (v < 0 || v >= static_cast<int>(nv0) || home[v] == mem) continue;
      if (home[v] == kHost && ep.reads_host_input(g.nodes[i], k, g)) continue;  // the kernel reads it on the host
      if (mem == kHost && reads_metadata_only(g.nodes[i])) continue;  // a host Shape / Size reads only the dims
      v = copy_to(v, mem);
    }
    // A subgraph reads its outer-scope values by name, in host memory (its own nodes are placed
    // and given copies on their own, with outer values at home on the host). A value produced
    // on a device is copied to the host once, and the name now resolves to the copy, for this
    // node's subgraphs and any other's; device consumers keep reading the original by id.
    for (int& v : g.nodes[i].implicit_inputs) {
      if (v < 0 || v >= static_cast<int>(nv0) || home[v] == kHost) continue;
      const int h = copy_to(v, kHost);
      g.by_name[g.values[v].name] = h;
      v = h;
    }
  }
  // Graph outputs must end in host memory: the producer writes a device value, the copy writes
  // the output's own slot (so names stay what the model says).
  for (int& o : g.outputs) {
    if (home[o] == kHost) continue;
    const int p = g.values[o].producer;
    const int dev = g.add_value(g.values[o].name + "@" + home[o]);
    g.values[dev].type = g.values[o].type;
    g.values[dev].producer = p;
    home.push_back(home[o]);
    for (int& v : g.nodes[p].outputs)
      if (v == o) v = dev;
    for (size_t i = 0; i < n; ++i)
      for (int& v : g.nodes[i].inputs)
        if (v == o) v = dev;
    for (auto& pd : pending)
      for (int& v : pd.node.inputs)
        if (v == o) v = dev;
    Node c;
    c.name = "copy:" + g.values[o].name + ":" + home[o] + "->cpu";
    c.op_type = "Copy";
    c.domain = "onyx";
    c.opset = 1;
    c.inputs = {dev};
    c.outputs = {o};
    Attribute a;
    a.name = "to";
    a.type = AttrType::kString;
    a.s = kHost;
    c.attrs.push_back(a);
    pending.push_back({insert_point(dev), std::move(c), owner[home[o]]});
    copies.push_back({g.values[o].name, home[o], kHost, value_bytes(g.values[o].type)});
    home[o] = kHost;
  }

  // Rebuild the node list with the copies in place (a chained copy goes after the one feeding it).
  std::vector<Node> nodes;
  std::vector<int> node_ep, region_of;
  std::vector<std::vector<Placement::Decline>> declines;
  std::vector<int> new_index(n, -1);
  std::vector<char> placed(pending.size(), 0);
  auto emit_pending = [&](auto& self, int after) -> void {
    for (size_t k = 0; k < pending.size(); ++k) {
      if (placed[k] || pending[k].after != after) continue;
      placed[k] = 1;
      const int out = pending[k].node.outputs[0];
      nodes.push_back(pending[k].node);
      node_ep.push_back(pending[k].ep);
      region_of.push_back(-1);
      declines.emplace_back();
      self(self, -2 - out);  // copies of this copy's output
    }
  };
  emit_pending(emit_pending, -1);
  for (size_t i = 0; i < n; ++i) {
    new_index[i] = static_cast<int>(nodes.size());
    nodes.push_back(std::move(g.nodes[i]));
    node_ep.push_back(part.node_ep[i]);
    region_of.push_back(part.region_of[i]);
    declines.push_back(std::move(part.declines[i]));
    emit_pending(emit_pending, static_cast<int>(i));
  }
  g.nodes = std::move(nodes);
  for (auto& v : g.values) v.producer = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].outputs)
      if (v >= 0) g.values[v].producer = static_cast<int>(i);
  for (auto& reg : part.regions)
    for (int& i : reg.nodes) i = new_index[i];
  part.node_ep = std::move(node_ep);
  part.region_of = std::move(region_of);
  part.declines = std::move(declines);
  return copies;
}

}  // namespace onyx
