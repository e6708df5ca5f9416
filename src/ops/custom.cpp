#include "ops/custom.hpp"

#include <deque>
#include <mutex>

namespace onyx {
namespace {

struct Entry {
  OpSchema schema;
  std::function<void(InferContext&)> infer;
  std::string provider;
};

std::mutex& mu() {
  static std::mutex m;
  return m;
}
std::deque<Entry>& entries() {  // a deque: entries never move
  static std::deque<Entry> e;
  return e;
}

const Entry* find_entry(std::string_view domain, std::string_view name) {
  for (const Entry& e : entries())
    if (e.schema.domain == domain && e.schema.name == name) return &e;
  return nullptr;
}

/// The InferFn of every custom schema: finds the op's own function by the node's domain and name.
void infer_custom(InferContext& ctx) {
  const Entry* e;
  {
    std::lock_guard<std::mutex> lock(mu());
    e = find_entry(ctx.node().domain, ctx.node().op_type);
  }
  if (!e) ctx.fail_node("the custom op ", ctx.node().domain, "::", ctx.node().op_type, " is not registered");
  e->infer(ctx);
}

}  // namespace

bool is_builtin_domain(std::string_view d) {
  return d.empty() || d == "ai.onnx" || d == "ai.onnx.ml" || d == "com.microsoft" || d == "onyx" || d == "onyx.nhwc" ||
         d == "ai.onnx.preview.training";
}

void add_custom_schema(const std::string& domain, const std::string& name, int since, std::function<void(InferContext&)> infer,
                       const std::string& provider) {
  if (is_builtin_domain(domain))
    fail(ErrorCode::kInvalidArgument, provider, ": custom op ", name, " may not be added to domain '", domain,
         "', which onyx implements itself (a custom op needs a domain of its own)");
  if (name.empty()) fail(ErrorCode::kInvalidArgument, provider, ": a custom op of domain '", domain, "' has no name");
  if (!infer) fail(ErrorCode::kInvalidArgument, provider, ": custom op ", domain, "::", name, " has no type inference");
  if (since < 1) fail(ErrorCode::kInvalidArgument, provider, ": custom op ", domain, "::", name, " has since_version ", since);
  std::lock_guard<std::mutex> lock(mu());
  if (const Entry* e = find_entry(domain, name))
    fail(ErrorCode::kInvalidArgument, provider, ": custom op ", domain, "::", name, " is already registered by ", e->provider);
  Entry e;
  e.schema.domain = domain;
  e.schema.name = name;
  e.schema.versions = {since};
  e.schema.infer = &infer_custom;
  e.infer = std::move(infer);
  e.provider = provider;
  entries().push_back(std::move(e));
}

const OpSchema* find_custom_schema(std::string_view domain, std::string_view name) {
  std::lock_guard<std::mutex> lock(mu());
  const Entry* e = find_entry(domain, name);
  return e ? &e->schema : nullptr;
}

std::string custom_op_provider(std::string_view domain, std::string_view name) {
  std::lock_guard<std::mutex> lock(mu());
  const Entry* e = find_entry(domain, name);
  return e ? e->provider : "";
}

}  // namespace onyx
