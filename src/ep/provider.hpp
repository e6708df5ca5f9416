// The per-session execution provider interface (DESIGN.md §3). Kernel EPs answer claim() from
// their manifest; the session asks EPs in priority order and the CPU EP last.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ep/kernel.hpp"

namespace onyx {

/// What an EP sees when asked to claim a node.
struct ClaimInfo {
  const Node& node;
  const Graph& graph;
  std::vector<const TypeInfo*> input_types;
  std::vector<const TypeInfo*> output_types;
};

class ExecutionProvider {
 public:
  virtual ~ExecutionProvider() = default;
  /// Lower-case name as `onyx providers` prints it ("cpu", "onednn").
  virtual std::string name() const = 0;
  /// Device the EP's memory and kernels live on ("cpu:0").
  virtual std::string device() const = 0;
  /// True if the EP's tensors live in host memory (no copies needed to and from the CPU EP).
  virtual bool host_memory() const { return true; }
  /// Accept the node (true) or decline it with a reason.
  virtual bool claim(const ClaimInfo& info, Decline* why) const = 0;
  /// Prepares the kernel for a claimed node.
  virtual std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const = 0;
};

/// An EP whose claims come from a kernel manifest.
class KernelEp : public ExecutionProvider {
 public:
  bool claim(const ClaimInfo& info, Decline* why) const override {
    return registry().find(info.node, info.input_types, info.output_types, why) != nullptr;
  }
  std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const override {
    Decline why;
    const KernelDef* def = registry().find(info.node, info.input_types, info.output_types, &why);
    if (!def) fail(ErrorCode::kNotImplemented, info.node.label(), ": ", why.message);
    return def->create(info);
  }
  virtual const KernelRegistry& registry() const = 0;
};

/// The built-in CPU EP (providers/cpu), always present.
std::unique_ptr<ExecutionProvider> create_cpu_provider();

}  // namespace onyx
