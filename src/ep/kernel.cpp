#include "ep/kernel.hpp"

#include <optional>

namespace onyx {

std::string_view decline_code_name(DeclineCode c) {
  switch (c) {
    case DeclineCode::kUnsupportedOp: return "UnsupportedOp";
    case DeclineCode::kUnsupportedType: return "UnsupportedType";
    case DeclineCode::kUnsupportedAttribute: return "UnsupportedAttribute";
    case DeclineCode::kDynamicShape: return "DynamicShape";
    case DeclineCode::kOpsetOutOfRange: return "OpsetOutOfRange";
    case DeclineCode::kNotWorthOffloading: return "NotWorthOffloading";
    case DeclineCode::kOther: return "Other";
  }
  return "Other";
}

namespace {
std::string mask_names(TypeMask m) {
  std::vector<std::string_view> names;
  for (int t = 1; t <= kMaxDType; ++t)
    if (mask_has(m, static_cast<DType>(t))) names.push_back(dtype_name(static_cast<DType>(t)));
  return join(names, ", ");
}
}  // namespace

const KernelDef* KernelRegistry::find(const Node& node, const std::vector<const TypeInfo*>& in_types,
                                      const std::vector<const TypeInfo*>& out_types, Decline* why) const {
  bool op_seen = false, version_seen = false;
  std::vector<std::string> ranges;
  std::string type_problem;
  std::optional<Decline> condition;  // the last refusal of a kernel's own conditions
  for (const KernelDef& d : defs_) {
    if (node.op_type != d.op || node.domain != d.domain) continue;
    op_seen = true;
    if (node.opset < d.since || node.opset > d.until) {
      ranges.push_back(str(d.since, "-", d.until));
      continue;
    }
    version_seen = true;
    bool ok = true;
    for (const TypeConstraint& c : d.types) {
      if (!c.mask) continue;
      const TypeInfo* t = nullptr;
      if (c.io >= 0 && static_cast<size_t>(c.io) < in_types.size()) t = in_types[c.io];
      if (c.io < 0 && static_cast<size_t>(-1 - c.io) < out_types.size()) t = out_types[-1 - c.io];
      if (!t) continue;  // omitted optional input
      const DType dt = t->elem_dtype();
      if (!mask_has(c.mask, dt)) {
        ok = false;
        type_problem = str(c.io >= 0 ? "input " : "output ", c.io >= 0 ? c.io : -1 - c.io, " has type ", dtype_name(dt),
                           "; supported: ", mask_names(c.mask));
        break;
      }
    }
    if (!ok) continue;
    if (d.accepts) {
      Decline refusal;
      if (!d.accepts(node, in_types, &refusal)) {
        condition = std::move(refusal);
        continue;
      }
    }
    return &d;
  }
  if (why) {
    if (!op_seen) {
      *why = {DeclineCode::kUnsupportedOp, str("no kernel for ", node.domain.empty() ? "" : node.domain + "::", node.op_type)};
    } else if (!version_seen) {
      *why = {DeclineCode::kOpsetOutOfRange,
              str("no kernel for ", node.op_type, " at opset ", node.opset, " (kernels cover opsets ", join(ranges, ", "), ")")};
    } else if (condition && type_problem.empty()) {
      *why = std::move(*condition);
    } else {
      *why = {DeclineCode::kUnsupportedType, str(node.op_type, ": ", type_problem)};
    }
  }
  return nullptr;
}

}  // namespace onyx
