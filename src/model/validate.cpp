#include "model/validate.hpp"

#include <algorithm>
#include <vector>

#include "core/common.hpp"
#include "model/op_signatures.hpp"

namespace onyx {
namespace {

std::string count_range(int lo, int hi) {
  if (lo == hi) return str("exactly ", lo);
  if (hi == OpSignature::kUnbounded) return str("at least ", lo);
  return str(lo, " to ", hi);
}

std::string plural(size_t n, const char* word) { return str(n, " ", word, n == 1 ? "" : "s"); }

/// "Relu-14", "com.microsoft::QLinearAdd-1": the schema a node is checked against.
std::string schema_name(const OpSignature& s) {
  return str(*s.domain ? str(s.domain, "::") : std::string(), s.name, "-", s.since);
}

void check_count(const OpSignature& s, const std::vector<int>& ids, int lo, int hi, const char* what,
                 const std::string& who) {
  const size_t given = ids.size();
  if (given >= static_cast<size_t>(lo) && given <= static_cast<size_t>(hi)) return;
  const size_t empty = static_cast<size_t>(std::count(ids.begin(), ids.end(), -1));
  fail(ErrorCode::kInvalidGraph, who, ": ", plural(given, what), " given",
       empty ? str(" (", empty, " of them empty names, which count)") : std::string(), "; ", schema_name(s), " takes ",
       count_range(lo, hi));
}

/// A single (required) formal given as "": only optional and variadic ones may be omitted.
void check_not_omitted(const std::vector<int>& ids, std::span<const OpFormal> formals, const OpSignature& s,
                       const char* what, const std::string& who) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= 0 || formals.empty()) continue;
    const OpFormal& f = i < formals.size() ? formals[i] : formals.back();
    if (f.option == 'S')
      fail(ErrorCode::kInvalidGraph, who, ": ", what, " ", i, " ('", f.name, "') is given as an empty name, but ",
           schema_name(s), " requires it (only optional ", what, "s may be omitted)");
  }
}

/// "float, double, float16": the tensor element types a constraint allows.
std::string allowed_names(const OpTypeConstraint& c) {
  std::vector<std::string_view> names;
  for (int d = 0; d <= kMaxDType; ++d)
    if (c.allows(static_cast<DType>(d))) names.push_back(dtype_name(static_cast<DType>(d)));
  return names.empty() ? std::string("no tensor type") : join(names, ", ");
}

}  // namespace

void check_input_types(const Node& n, std::span<const TypeInfo* const> in_types) {
  if (!op_signature_domain(n.domain)) return;
  const OpSignature* sig = find_op_signature(n.domain, n.op_type, n.opset);
  if (!sig || sig->deprecated()) return;
  const OpSignature& s = *sig;
  const std::span<const OpFormal> formals = s.inputs();
  if (formals.empty()) return;
  struct Binding {
    std::string_view var;
    size_t input;
    DType type;
  };
  std::vector<Binding> bound;
  for (size_t i = 0; i < n.inputs.size() && i < in_types.size(); ++i) {
    if (n.inputs[i] < 0 || !in_types[i]) continue;
    const TypeInfo& t = *in_types[i];
    if (!t.is_tensor() || t.dtype == DType::kUndefined) continue;
    if (i >= formals.size() && formals.back().option != 'V') continue;  // too many inputs: validate_node's
    const OpFormal& f = i < formals.size() ? formals[i] : formals.back();
    const OpTypeConstraint* c = s.constraint(f.type);
    if (!c) continue;
    if (c->tensors_only && !c->allows(t.dtype)) {
      const bool fixed = std::string_view(f.type).find('(') != std::string_view::npos;
      fail(ErrorCode::kInvalidGraph, "node ", n.label(), ": input ", i, " ('", f.name, "') is ", dtype_name(t.dtype),
           ", but ", schema_name(s),
           fixed ? str(" takes it as ", f.type) : str(" binds it to type ", f.type, ", which allows only ", allowed_names(*c)));
    }
    if (f.option == 'V' && !f.homogeneous) continue;  // each value its own type (Loop's, If's, ...)
    const std::string_view var = f.type;
    auto it = std::find_if(bound.begin(), bound.end(), [&](const Binding& b) { return b.var == var; });
    if (it == bound.end()) {
      bound.push_back({var, i, t.dtype});
      continue;
    }
    if (it->type != t.dtype) {
      const OpFormal& first = it->input < formals.size() ? formals[it->input] : formals.back();
      fail(ErrorCode::kInvalidGraph, "node ", n.label(), ": input ", i, " ('", f.name, "') is ", dtype_name(t.dtype),
           ", but ", schema_name(s), " binds it to type ", f.type, " with input ", it->input, " ('", first.name,
           "'), which is ", dtype_name(it->type));
    }
  }
}

void validate_node(const Node& n, size_t index, std::string_view where) {
  if (!op_signature_domain(n.domain)) return;  // onyx's own forms, custom domains: the session decides
  const OpSignature* sig = find_op_signature(n.domain, n.op_type, n.opset);
  if (!sig || sig->deprecated()) return;  // unknown op, or one newer than the opset: the session says so
  const OpSignature& s = *sig;
  const std::string who = str(where, ": node ", n.label(), n.name.empty() ? str(" (node ", index, ", unnamed)") : "");

  check_count(s, n.inputs, s.min_inputs, s.max_inputs, "input", who);
  check_count(s, n.outputs, s.min_outputs, s.max_outputs, "output", who);
  check_not_omitted(n.inputs, s.inputs(), s, "input", who);
  check_not_omitted(n.outputs, s.outputs(), s, "output", who);

  for (const Attribute& a : n.attrs) {
    if (a.name.starts_with("__")) continue;  // implementation details by convention, never checked
    const OpAttrSpec* spec = s.attr(a.name);
    if (!spec) {
      if (s.accepts_undeclared_attrs()) continue;
      std::vector<std::string_view> names;
      for (const OpAttrSpec& d : s.attrs()) names.push_back(d.name);
      fail(ErrorCode::kInvalidGraph, who, ": attribute '", a.name, "' is not an attribute of ", schema_name(s), " (",
           names.empty() ? std::string("it has none") : str("it has ", join(names, ", ")), ")");
    }
    if (a.type != spec->type)
      fail(ErrorCode::kInvalidGraph, who, ": attribute '", a.name, "' is given as ", attr_type_name(a.type), ", but ",
           schema_name(s), " declares it ", attr_type_name(spec->type));
  }
  for (const OpAttrSpec& spec : s.attrs())
    if (spec.required && !n.has_attr(spec.name))
      fail(ErrorCode::kInvalidGraph, who, ": attribute '", spec.name, "' is required by ", schema_name(s), " (an ",
           attr_type_name(spec.type), ") but missing");
}

void validate_nodes(const Graph& g, std::string_view where) {
  for (size_t i = 0; i < g.nodes.size(); ++i) validate_node(g.nodes[i], i, where);
}

}  // namespace onyx
