#include "onyx/explain.hpp"

#include <cstdio>
#include <string>

namespace onyx {

namespace {

/// printf into a string (the table's columns are printf widths).
template <class... A>
void put(std::string& out, const char* format, A... args) {
  const int n = std::snprintf(nullptr, 0, format, args...);
  if (n <= 0) return;
  std::string s(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(s.data(), s.size(), format, args...);
  s.pop_back();
  out += s;
}

}  // namespace

std::string placement_op_label(const Placement::NodeInfo& node) {
  return node.domain == "onyx.nhwc" ? node.op_type + " (NHWC)" : node.op_type;
}

std::string explain_text(const Session& session, const std::string& model) {
  std::string out;
  put(out, "model: %s\n\nexecution providers:\n", model.c_str());
  for (const auto& r : session.registration()) {
    put(out, "  %-10s %-10s %-11s", r.name.c_str(), registration_outcome_name(r.outcome).data(),
        registration_source_name(r.source).data());
    if (r.outcome == EpRegistration::Outcome::kRegistered)
      put(out, " priority %d, %s", r.priority, r.device.c_str());
    else
      put(out, " %s", r.reason.c_str());
    out += "\n";
  }
  const Placement p = session.placement();
  put(out, "\n%-32s %-22s %-10s %s\n", "node", "op", "ep", "declined by");
  for (const auto& n : p.nodes) {
    std::string why;
    for (const auto& d : n.declined) why += (why.empty() ? "" : "; ") + d.ep + " (" + d.code + ": " + d.message + ")";
    put(out, "%-32s %-22s %-10s %s\n", n.name.c_str(), placement_op_label(n).c_str(), n.ep.c_str(), why.c_str());
  }
  put(out, "\ncopies: %zu\n", p.copies.size());
  for (const auto& c : p.copies)
    put(out, "  %s: %s -> %s (%lld bytes)\n", c.value.c_str(), c.from.c_str(), c.to.c_str(), static_cast<long long>(c.bytes));
  put(out, "\nsummary: %s\n", p.summary.c_str());
  return out;
}

}  // namespace onyx
