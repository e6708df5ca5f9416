// Custom operators (include/onyx/custom_op.hpp): the kernels C++ code registers for the CPU EP,
// and the hint a model with an unknown op gets.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "ep/kernel.hpp"
#include "onyx/custom_op.hpp"

namespace onyx {

/// The CPU kernel of a custom op registered with register_custom_op, or null.
std::unique_ptr<Kernel> create_custom_cpu_kernel(const Node& node);
/// Whether register_custom_op registered (domain, name).
bool has_custom_cpu_kernel(std::string_view domain, std::string_view name);

/// What to add to "onyx does not know the operator D::X": for a domain of someone else's, which EP
/// plugin on the module search path implements the op (loading those plugins to ask), or how a
/// custom op is registered. "" for onyx's own domains.
std::string unknown_op_hint(const std::string& domain, const std::string& op);

}  // namespace onyx
