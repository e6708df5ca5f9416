// The built-in CPU execution provider: every node no other EP claims runs here.
#include "core/common.hpp"
#include "ep/custom_ops.hpp"
#include "ep/provider.hpp"
#include "ops/custom.hpp"
#include "kernels/manifest.hpp"

namespace onyx {
namespace {

class CpuProvider final : public KernelEp {
 public:
  explicit CpuProvider(const CpuOptions& o) : options_(o) {}
  std::string name() const override { return "cpu"; }
  DataLayout preferred_layout() const override {
    return options_.prefer_nhwc ? DataLayout::kChannelsLast : DataLayout::kChannelsFirst;
  }
  bool computes_half_in_float() const override { return options_.half_in_float; }
  std::string device() const override { return "cpu:0"; }
  const KernelRegistry& registry() const override { return registry_instance(); }
  // Custom ops registered in the process (onyx::register_custom_op) run here too.
  bool claim(const ClaimInfo& info, Decline* why) const override {
    if (KernelEp::claim(info, why)) return true;
    if (has_custom_cpu_kernel(info.node.domain, info.node.op_type)) return true;
    const std::string provider = custom_op_provider(info.node.domain, info.node.op_type);
    if (!provider.empty())
      return decline(why, DeclineCode::kUnsupportedOp,
                     str("the custom op ", info.node.domain, "::", info.node.op_type, " is implemented by ", provider,
                         ": add that EP to the session's EPs"));
    return false;
  }
  std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const override {
    if (auto k = create_custom_cpu_kernel(info.node)) return k;
    return KernelEp::create_kernel(info);
  }

  static const KernelRegistry& registry_instance() {
    static const KernelRegistry r = [] {
      KernelRegistry reg;
      for (auto family : cpu::kKernelFamilies) reg.add(family());
      return reg;
    }();
    return r;
  }

 private:
  CpuOptions options_;
};

}  // namespace

std::vector<ep::OptionInfo> cpu_option_schema() {
  return {
      {"prefer_nhwc", "bool", CpuOptions{}.prefer_nhwc ? "true" : "false",
       "run 2-d float Conv (group 1 or depthwise, with its fused forms), MaxPool, AveragePool and the global pools "
       "channels-last (NHWC): the optimizer gives them to this EP in that layout and cancels the transposes between "
       "neighbours"},
      {"half_in_float", "bool", CpuOptions{}.half_in_float ? "true" : "false",
       "run float16 and bfloat16 nodes as float32 ones (weights converted once, Casts where a region of them meets "
       "the rest of the model), on the float32 kernels; off: as the model wrote them (slow reference loops)"},
  };
}

CpuOptions parse_cpu_options(const std::vector<std::pair<std::string, std::string>>& options) {
  CpuOptions r;
  for (const auto& [k, v] : options)
    if (k == "prefer_nhwc") r.prefer_nhwc = v == "true" || v == "1";
    else if (k == "half_in_float") r.half_in_float = v == "true" || v == "1";
  return r;
}

std::unique_ptr<ExecutionProvider> create_cpu_provider(const CpuOptions& options) {
  return std::make_unique<CpuProvider>(options);
}

}  // namespace onyx
