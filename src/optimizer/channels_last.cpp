// The channels-last pass: a layout-sensitive node that an EP preferring channels-last takes is
// rewritten to its onyx.nhwc form between Transpose(to channels-last) and Transpose(back). On its
// own that only adds transposes; optimize_transposes then cancels the pairs between neighbours,
// so a chain of such nodes (and the elementwise ops between them) runs channels-last throughout.
#include "core/common.hpp"
#include "ops/layout.hpp"
#include "optimizer/passes.hpp"

namespace onyx {

namespace {

int add_typed_value(Graph& g, const std::string& base, const TypeInfo& t, const std::vector<int64_t>& perm) {
  const int v = g.add_value(unused_value_name(g, base));
  g.values[v].type = permute_type(t, perm);
  return v;
}

void drop_last_value(Graph& g) {
  g.by_name.erase(g.values.back().name);
  g.values.pop_back();
}

}  // namespace

int assign_channels_last(Graph& g, PassContext& ctx) {
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size());
  int changed = 0;
  for (Node& n : g.nodes) {
    if (!has_channels_last_form(n)) {
      nodes.push_back(std::move(n));
      continue;
    }
    const int x = n.inputs[0], y = n.outputs[0];
    const TypeInfo xt = g.values[x].type, yt = g.values[y].type;  // (copies: values grow below)
    const bool ranked = xt.is_tensor() && xt.has_shape && yt.is_tensor() && yt.has_shape && yt.shape.size() == xt.shape.size();
    // 2-d and 3-d spatial ops (rank 4 and 5): what channels-last kernels are written for.
    if (!ranked || xt.shape.size() < 4 || xt.shape.size() > 5) {
      nodes.push_back(std::move(n));
      continue;
    }
    const size_t rank = xt.shape.size();
    const std::vector<int64_t> to_last = to_channels_last_perm(rank), to_first = to_channels_first_perm(rank);
    // Every channels-last input (the data, FusedConvAdd's sum) needs the rank of the data.
    std::vector<size_t> moved;
    bool fits = true;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] < 0 || !is_channels_last_input(n, i)) continue;
      const TypeInfo& t = g.values[n.inputs[i]].type;
      fits &= t.is_tensor() && t.has_shape && t.shape.size() == rank;
      moved.push_back(i);
    }
    if (!fits) {
      nodes.push_back(std::move(n));
      continue;
    }
    Node form = n;
    if (has_native_channels_last(n)) {
      bool set = false;
      for (Attribute& a : form.attrs)
        if (a.name == "channels_last") a.i = 1, set = true;
      if (!set) {
        Attribute a;
        a.name = "channels_last";
        a.type = AttrType::kInt;
        a.i = 1;
        form.attrs.push_back(a);
      }
    } else {
      form.domain = std::string(kChannelsLastDomain);
    }
    for (size_t i : moved) {
      const int v = n.inputs[i];
      const TypeInfo t = g.values[v].type;  // (a copy: values grow)
      form.inputs[i] = add_typed_value(g, g.values[v].name + "_nhwc", t, to_last);
    }
    const int yl = add_typed_value(g, g.values[y].name + "_nhwc", yt, to_last);
    form.outputs[0] = yl;
    if (!ctx.may_use_channels_last(n, form)) {
      for (size_t k = 0; k <= moved.size(); ++k) drop_last_value(g);  // the values added: moved inputs, output
      nodes.push_back(std::move(n));
      continue;
    }
    ctx.log.push_back(str(n.label(), " runs channels-last (", form.domain, "::", n.op_type, ")"));
    for (size_t i : moved)
      nodes.push_back(transpose_node(n.name + (i == 0 ? "_to_nhwc" : "_sum_to_nhwc"), n.inputs[i], form.inputs[i], to_last));
    nodes.push_back(std::move(form));
    nodes.push_back(transpose_node(n.name + "_to_nchw", yl, y, to_first));
    ++changed;
  }
  g.nodes = std::move(nodes);
  recompute_producers(g);
  return changed;
}

}  // namespace onyx
