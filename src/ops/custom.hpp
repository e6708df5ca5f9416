// Custom operators: schemas of ops outside onyx's domains, registered at run time by C++ code
// (onyx::register_custom_op) or by an EP plugin that implements them (include/onyx/ep_c_api.h).
// Process-wide and never removed, so the pointers find_custom_schema returns stay valid.
#pragma once

#include <functional>
#include <string>

#include "ops/schema.hpp"

namespace onyx {

/// Registers (domain, name) from version `since` on, its type inference done by `infer`.
/// `provider` says who implements it, for messages ("onyx::register_custom_op",
/// "the EP plugin 'vecfuse' (/opt/lib/libonyx_ep_vecfuse.so)"). Throws onyx::Error
/// (kInvalidArgument) when the domain is one of onyx's own or the op is already registered.
void add_custom_schema(const std::string& domain, const std::string& name, int since, std::function<void(InferContext&)> infer,
                       const std::string& provider);

/// The schema of a registered custom op, or null.
const OpSchema* find_custom_schema(std::string_view domain, std::string_view name);

/// The schema of an op: onyx's own (OpRegistry), else a registered custom op's; null for neither.
inline const OpSchema* find_schema(std::string_view domain, std::string_view name) {
  const OpSchema* s = OpRegistry::global().find(domain, name);
  return s ? s : find_custom_schema(domain, name);
}

/// Who registered a custom op ("" when none did).
std::string custom_op_provider(std::string_view domain, std::string_view name);

/// Whether `domain` is one onyx implements itself ("", "ai.onnx", "ai.onnx.ml", "com.microsoft",
/// "onyx", "onyx.nhwc"): custom ops may not be added to those.
bool is_builtin_domain(std::string_view domain);

}  // namespace onyx
