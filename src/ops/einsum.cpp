// Einsum (12): equation parsing, label resolution and shape inference.
#include "ops/einsum.hpp"

#include <algorithm>

#include "ops/schema.hpp"

namespace onyx {

namespace {

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string label_name(int l) {
  if (l < kEinsumEllipsisBase) return std::string("'") + static_cast<char>(l) + "'";
  return "'...' dim " + std::to_string(l - kEinsumEllipsisBase);
}

/// Parses one term [begin, end) of `eq` (spaces already removed).
EinsumTerm parse_term(const Node& node, const std::string& eq, size_t begin, size_t end, const std::string& what) {
  EinsumTerm t;
  for (size_t i = begin; i < end;) {
    const char c = eq[i];
    if (is_letter(c)) {
      t.labels.push_back(static_cast<unsigned char>(c));
      ++i;
    } else if (c == '.') {
      if (end - i < 3 || eq[i + 1] != '.' || eq[i + 2] != '.')
        fail(ErrorCode::kInvalidGraph, node.label(), ": equation '", eq, "': a '.' at position ", i,
             " is not part of an ellipsis '...'");
      if (t.has_ellipsis())
        fail(ErrorCode::kInvalidGraph, node.label(), ": equation '", eq, "': ", what, " has more than one ellipsis");
      t.ellipsis = static_cast<int>(t.labels.size());
      i += 3;
    } else {
      fail(ErrorCode::kInvalidGraph, node.label(), ": equation '", eq, "': unexpected character '", c, "' at position ", i,
           " (expected letters, '...', ',' or '->')");
    }
  }
  return t;
}

}  // namespace

EinsumEquation parse_einsum(const Node& node, size_t num_inputs) {
  if (!node.has_attr("equation")) fail(ErrorCode::kInvalidGraph, node.label(), ": attribute 'equation' is required");
  std::string eq;
  for (char c : node.attr_string("equation"))
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') eq.push_back(c);
  EinsumEquation e;
  const size_t arrow = eq.find("->");
  if (arrow != std::string::npos && eq.find("->", arrow + 2) != std::string::npos)
    fail(ErrorCode::kInvalidGraph, node.label(), ": equation '", eq, "' has more than one '->'");
  const size_t lhs_end = arrow == std::string::npos ? eq.size() : arrow;
  size_t start = 0;
  for (;;) {
    const size_t comma = eq.find(',', start);
    const size_t stop = comma == std::string::npos || comma > lhs_end ? lhs_end : comma;
    e.inputs.push_back(parse_term(node, eq, start, stop, "input term " + std::to_string(e.inputs.size())));
    if (stop == lhs_end) break;
    start = stop + 1;
  }
  if (e.inputs.size() != num_inputs)
    fail(ErrorCode::kInvalidGraph, node.label(), ": equation '", eq, "' has ", e.inputs.size(), " input terms but the node has ",
         num_inputs, " inputs");
  int count[128] = {};
  for (const auto& t : e.inputs) {
    for (int l : t.labels) ++count[l];
    e.any_ellipsis = e.any_ellipsis || t.has_ellipsis();
  }
  if (arrow != std::string::npos) {
    e.explicit_output = true;
    if (eq.find(',', arrow) != std::string::npos)
      fail(ErrorCode::kInvalidGraph, node.label(), ": equation '", eq, "': the output (after '->') cannot contain ','");
    e.output = parse_term(node, eq, arrow + 2, eq.size(), "the output");
    bool seen[128] = {};
    for (int l : e.output.labels) {
      if (seen[l])
        fail(ErrorCode::kInvalidGraph, node.label(), ": equation '", eq, "': output label ", label_name(l),
             " appears more than once");
      seen[l] = true;
      if (count[l] == 0)
        fail(ErrorCode::kInvalidGraph, node.label(), ": equation '", eq, "': output label ", label_name(l),
             " does not appear in any input");
    }
  } else {
    // Implicit output: the broadcast dims, then the letters that occur exactly once, sorted.
    if (e.any_ellipsis) e.output.ellipsis = 0;
    for (int l = 0; l < 128; ++l)
      if (count[l] == 1) e.output.labels.push_back(l);
  }
  return e;
}

EinsumDims resolve_einsum(const Node& node, const EinsumEquation& eq, const std::vector<Shape>& shapes) {
  EinsumDims d;
  const size_t n = eq.inputs.size();
  for (size_t k = 0; k < n; ++k) {
    const EinsumTerm& t = eq.inputs[k];
    const int64_t r = static_cast<int64_t>(shapes[k].size());
    const int64_t nl = static_cast<int64_t>(t.labels.size());
    if (t.has_ellipsis() ? r < nl : r != nl)
      fail(ErrorCode::kInvalidArgument, node.label(), ": input ", k, " has rank ", r, " but its equation term has ", nl,
           " letters", t.has_ellipsis() ? " and an ellipsis" : "");
    if (t.has_ellipsis()) d.ell_rank = std::max<int>(d.ell_rank, static_cast<int>(r - nl));
  }
  const size_t nlab = static_cast<size_t>(kEinsumEllipsisBase + d.ell_rank);
  d.size.assign(nlab, 1);
  d.used.assign(nlab, 0);
  std::vector<int> first_input(nlab, -1);
  d.axes.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const EinsumTerm& t = eq.inputs[k];
    const Shape& s = shapes[k];
    const int64_t r = static_cast<int64_t>(s.size());
    const int e = t.has_ellipsis() ? static_cast<int>(r - static_cast<int64_t>(t.labels.size())) : 0;
    auto& axes = d.axes[k];
    for (int i = 0; i < static_cast<int>(t.labels.size()); ++i) {
      if (i == t.ellipsis)
        for (int j = 0; j < e; ++j) axes.push_back(kEinsumEllipsisBase + d.ell_rank - e + j);
      axes.push_back(t.labels[i]);
    }
    if (t.ellipsis == static_cast<int>(t.labels.size()))
      for (int j = 0; j < e; ++j) axes.push_back(kEinsumEllipsisBase + d.ell_rank - e + j);
    // Repeated letters within one term (diagonals) need equal dims.
    for (int64_t a = 0; a < r; ++a)
      for (int64_t b = 0; b < a; ++b)
        if (axes[a] == axes[b] && s[a] != s[b] && s[a] >= 0 && s[b] >= 0)
          fail(ErrorCode::kInvalidArgument, node.label(), ": label ", label_name(axes[a]), " is repeated in input ", k,
               " over dims of different sizes (", s[b], " at axis ", b, ", ", s[a], " at axis ", a, ")");
    for (int64_t a = 0; a < r; ++a) {
      const int l = axes[a];
      const int64_t dim = s[a];
      if (!d.used[l]) {
        d.used[l] = 1;
        d.size[l] = dim;
        first_input[l] = static_cast<int>(k);
        continue;
      }
      int64_t& cur = d.size[l];
      if (cur == dim || dim == 1) continue;
      if (cur == 1) {
        cur = dim;
        continue;
      }
      if (cur >= 0 && dim >= 0)
        fail(ErrorCode::kInvalidArgument, node.label(), ": label ", label_name(l), " has size ", cur, " in input ",
             first_input[l], " but size ", dim, " in input ", k, " (axis ", a, ", shape ", s.to_string(), ")");
      if (cur < 0 && dim >= 0) cur = dim;
    }
  }
  const EinsumTerm& o = eq.output;
  for (int i = 0; i <= static_cast<int>(o.labels.size()); ++i) {
    if (i == o.ellipsis)
      for (int j = 0; j < d.ell_rank; ++j) d.out.push_back(kEinsumEllipsisBase + j);
    if (i < static_cast<int>(o.labels.size())) d.out.push_back(o.labels[i]);
  }
  return d;
}

namespace {

void infer_einsum(InferContext& ctx) {
  const Node& n = ctx.node();
  const size_t nin = n.inputs.size();
  if (nin == 0) ctx.fail_node("needs at least one input");
  const EinsumEquation eq = parse_einsum(n, nin);
  const DType dt = ctx.input_dtype(0);
  std::vector<Shape> shapes;
  bool ranked = true;
  for (size_t k = 0; k < nin; ++k) {
    if (ctx.input_dtype(k) != dt)
      ctx.fail_node("input ", k, " has type ", dtype_name(ctx.input_dtype(k)), " but input 0 has type ", dtype_name(dt));
    if (!ctx.input_has_shape(k)) {
      ranked = false;
      continue;
    }
    shapes.push_back(ctx.input_shape(k));
  }
  if (ranked) {
    const EinsumDims d = resolve_einsum(n, eq, shapes);
    return ctx.set_output(0, dt, d.out_shape());
  }
  // Some rank unknown: the output rank is still known when no ellipsis is involved.
  if (!eq.any_ellipsis && !eq.output.has_ellipsis())
    return ctx.set_output(0, dt, ctx.fresh_shape(eq.output.labels.size()));
  ctx.set_output_unranked(0, dt);
}

}  // namespace

void register_einsum_ops(OpRegistry& r) { r.add("", "Einsum", {12, 28}, infer_einsum); }

}  // namespace onyx
