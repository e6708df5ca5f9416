// The built-in CPU execution provider: every node no other EP claims runs here.
#include "ep/provider.hpp"
#include "kernels/manifest.hpp"

namespace onyx {
namespace {

class CpuProvider final : public KernelEp {
 public:
  std::string name() const override { return "cpu"; }
  std::string device() const override { return "cpu:0"; }
  const KernelRegistry& registry() const override { return registry_instance(); }

  static const KernelRegistry& registry_instance() {
    static const KernelRegistry r = [] {
      KernelRegistry reg;
      for (auto family : cpu::kKernelFamilies) reg.add(family());
      return reg;
    }();
    return r;
  }
};

}  // namespace

std::unique_ptr<ExecutionProvider> create_cpu_provider() { return std::make_unique<CpuProvider>(); }

}  // namespace onyx
