// CPU kernels: loss family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> loss_kernels() { return {}; }

}  // namespace onyx::cpu
