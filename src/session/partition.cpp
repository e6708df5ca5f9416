#include "session/partition.hpp"

#include <algorithm>
#include <numeric>

#include "core/common.hpp"
#include "ops/layout.hpp"

namespace onyx {
namespace {

ClaimInfo claim_info(const Graph& g, const Node& n) {
  ClaimInfo c{n, g, {}, {}};
  for (int v : n.inputs) c.input_types.push_back(v >= 0 ? &g.values[v].type : nullptr);
  for (int v : n.outputs) c.output_types.push_back(v >= 0 ? &g.values[v].type : nullptr);
  return c;
}

/// An EP's reason for not taking a channels-last form (ops/layout.hpp) is its reason for the op
/// the form stands for: the layout pass gave the form to a later EP because every EP before it
/// declined that op, and "no kernel for onyx.nhwc::Conv" would hide why.
Decline channels_first_reason(const Graph& g, const Node& form, const ExecutionProvider& ep, Decline why) {
  Node first = form;
  first.domain = std::string(channels_first_domain(form.op_type));
  const size_t rank = form.inputs.empty() || form.inputs[0] < 0 ? 0 : g.values[form.inputs[0]].type.shape.size();
  if (rank < 3) return why;
  std::vector<TypeInfo> types;  // the permuted types (reserved: pointers into it are kept)
  types.reserve(form.inputs.size() + form.outputs.size());
  ClaimInfo c{first, g, {}, {}};
  for (size_t i = 0; i < form.inputs.size(); ++i) {
    const int v = form.inputs[i];
    if (v >= 0 && is_channels_last_input(form, i)) {
      types.push_back(permute_type(g.values[v].type, to_channels_first_perm(rank)));
      c.input_types.push_back(&types.back());
    } else {
      c.input_types.push_back(v >= 0 ? &g.values[v].type : nullptr);
    }
  }
  for (size_t i = 0; i < form.outputs.size(); ++i) {
    const int v = form.outputs[i];
    if (v >= 0 && i == 0) {
      types.push_back(permute_type(g.values[v].type, to_channels_first_perm(rank)));
      c.output_types.push_back(&types.back());
    } else {
      c.output_types.push_back(v >= 0 ? &g.values[v].type : nullptr);
    }
  }
  Decline first_why;
  return ep.claim(c, &first_why) ? why : first_why;
}

bool has_subgraph(const Node& n) {
  for (const auto& a : n.attrs)
    if (a.type == AttrType::kGraph || a.type == AttrType::kGraphs) return true;
  return false;
}

/// Successor lists (node -> nodes reading any of its outputs, including implicit reads).
std::vector<std::vector<int>> successors(const Graph& g) {
  std::vector<std::vector<int>> succ(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto add = [&](int v) {
      if (v >= 0 && g.values[v].producer >= 0) succ[g.values[v].producer].push_back(static_cast<int>(i));
    };
    for (int v : g.nodes[i].inputs) add(v);
    for (int v : g.nodes[i].implicit_inputs) add(v);
  }
  for (auto& s : succ) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  return succ;
}

/// Groups `members` (nodes of one EP) into regions: merge along edges unless the merge would
/// create a path leaving the region and coming back (a cycle between regions).
std::vector<std::vector<int>> form_regions(const Graph& g, const std::vector<int>& members,
                                           const std::vector<std::vector<int>>& succ) {
  const size_t n = g.nodes.size();
  std::vector<int> group(n, -1);
  for (int m : members) group[m] = m;
  auto root = [&](int v) {
    while (group[v] != v) v = group[v] = group[group[v]];
    return v;
  };
  std::vector<int> mark(n, 0);
  int stamp = 0;
  // Would merging roots a and b let a path leave {a, b} and re-enter it?
  auto creates_cycle = [&](int a, int b) {
    ++stamp;
    std::vector<int> stack;
    // Start from nodes outside the merged set that members of the set feed.
    for (int m : members) {
      const int r = root(m);
      if (r != a && r != b) continue;
      for (int s : succ[m]) {
        const bool inside = group[s] >= 0 && (root(s) == a || root(s) == b);
        if (!inside && mark[s] != stamp) {
          mark[s] = stamp;
          stack.push_back(s);
        }
      }
    }
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      for (int s : succ[x]) {
        if (group[s] >= 0 && (root(s) == a || root(s) == b)) return true;
        if (mark[s] != stamp) {
          mark[s] = stamp;
          stack.push_back(s);
        }
      }
    }
    return false;
  };
  for (int u : members)
    for (int v : succ[u]) {
      if (group[v] < 0) continue;
      const int a = root(u), b = root(v);
      if (a == b || creates_cycle(a, b)) continue;
      group[std::max(a, b)] = std::min(a, b);
    }
  std::vector<std::vector<int>> regions;
  std::vector<int> index(n, -1);
  for (int m : members) {
    const int r = root(m);
    if (index[r] < 0) {
      index[r] = static_cast<int>(regions.size());
      regions.emplace_back();
    }
    regions[index[r]].push_back(m);
  }
  for (auto& r : regions) std::sort(r.begin(), r.end());
  return regions;
}

/// New node order: topological over groups (a region counts as one node), stable by the
/// smallest original index; returns old indices in new order.
std::vector<int> grouped_order(const Graph& g, const std::vector<int>& region_of,
                               const std::vector<std::vector<int>>& succ, const std::vector<std::vector<int>>& regions) {
  const size_t n = g.nodes.size();
  // Unit of each node: region id, or n + node index.
  auto unit = [&](int i) { return region_of[i] >= 0 ? region_of[i] : static_cast<int>(regions.size()) + i; };
  const size_t units = regions.size() + n;
  std::vector<int> indeg(units, 0);
  std::vector<std::vector<int>> usucc(units);
  for (size_t i = 0; i < n; ++i)
    for (int s : succ[i]) {
      const int a = unit(static_cast<int>(i)), b = unit(s);
      if (a != b) usucc[a].push_back(b);
    }
  for (auto& v : usucc) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    for (int b : v) ++indeg[b];
  }
  auto key = [&](int u) { return u < static_cast<int>(regions.size()) ? regions[u].front() : u - static_cast<int>(regions.size()); };
  std::vector<int> ready;
  std::vector<char> present(units, 0);
  for (size_t i = 0; i < n; ++i) present[unit(static_cast<int>(i))] = 1;
  for (size_t u = 0; u < units; ++u)
    if (present[u] && indeg[u] == 0) ready.push_back(static_cast<int>(u));
  std::vector<int> order;
  while (!ready.empty()) {
    auto it = std::min_element(ready.begin(), ready.end(), [&](int a, int b) { return key(a) < key(b); });
    const int u = *it;
    ready.erase(it);
    if (u < static_cast<int>(regions.size()))
      for (int i : regions[u]) order.push_back(i);
    else
      order.push_back(u - static_cast<int>(regions.size()));
    for (int b : usucc[u])
      if (--indeg[b] == 0) ready.push_back(b);
  }
  if (order.size() != n) fail(ErrorCode::kInvalidGraph, "internal error: regions made the graph cyclic");
  return order;
}

}  // namespace

PartitionResult partition_graph(Graph& g, const std::vector<std::unique_ptr<ExecutionProvider>>& eps) {
  const size_t n = g.nodes.size();
  PartitionResult r;
  r.node_ep.assign(n, -1);
  r.declines.resize(n);
  std::vector<std::vector<int>> region_nodes;
  std::vector<int> region_ep;
  const auto succ = successors(g);
  for (size_t e = 0; e < eps.size(); ++e) {
    const ExecutionProvider& ep = *eps[e];
    std::vector<int> taken;
    for (size_t i = 0; i < n; ++i) {
      if (r.node_ep[i] >= 0) continue;
      const Node& node = g.nodes[i];
      Decline why;
      bool ok;
      if (ep.compiles_regions() && has_subgraph(node)) {
        ok = false;
        why = {DeclineCode::kUnsupportedOp, "control-flow nodes are not compiled into regions"};
      } else {
        ok = ep.claim(claim_info(g, node), &why);
        if (!ok && node.domain == kChannelsLastDomain) why = channels_first_reason(g, node, ep, std::move(why));
      }
      if (ok) {
        r.node_ep[i] = static_cast<int>(e);
        taken.push_back(static_cast<int>(i));
      } else {
        r.declines[i].push_back({ep.name(), std::string(decline_code_name(why.code)), why.message});
      }
    }
    if (!ep.compiles_regions() || taken.empty()) continue;
    for (auto& reg : form_regions(g, taken, succ)) {
      if (reg.size() < ep.min_region_nodes()) {
        for (int i : reg) {
          r.node_ep[i] = -1;
          r.declines[i].push_back({ep.name(), "NotWorthOffloading",
                                   str("its region has ", reg.size(), " node(s); ", ep.name(), " needs at least ",
                                       ep.min_region_nodes())});
        }
        continue;
      }
      region_nodes.push_back(reg);
      region_ep.push_back(static_cast<int>(e));
    }
  }
  r.region_of.assign(n, -1);
  for (size_t k = 0; k < region_nodes.size(); ++k)
    for (int i : region_nodes[k]) r.region_of[i] = static_cast<int>(k);
  if (!region_nodes.empty()) {
    const std::vector<int> order = grouped_order(g, r.region_of, succ, region_nodes);
    std::vector<int> new_index(n);
    for (size_t k = 0; k < n; ++k) new_index[order[k]] = static_cast<int>(k);
    std::vector<Node> nodes;
    nodes.reserve(n);
    PartitionResult out;
    out.node_ep.resize(n);
    out.declines.resize(n);
    out.region_of.resize(n);
    for (size_t k = 0; k < n; ++k) {
      nodes.push_back(std::move(g.nodes[order[k]]));
      out.node_ep[k] = r.node_ep[order[k]];
      out.declines[k] = std::move(r.declines[order[k]]);
      out.region_of[k] = r.region_of[order[k]];
    }
    g.nodes = std::move(nodes);
    for (auto& v : g.values)
      if (v.producer >= 0) v.producer = new_index[v.producer];
    for (size_t k = 0; k < region_nodes.size(); ++k) {
      PartitionResult::Region reg{region_ep[k], {}};
      for (int i : region_nodes[k]) reg.nodes.push_back(new_index[i]);
      std::sort(reg.nodes.begin(), reg.nodes.end());
      out.regions.push_back(std::move(reg));
    }
    return out;
  }
  return r;
}

}  // namespace onyx
