// CPU kernels: signal family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> signal_kernels() { return {}; }

}  // namespace onyx::cpu
