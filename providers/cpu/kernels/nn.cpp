// CPU kernels: nn family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> nn_kernels() { return {}; }

}  // namespace onyx::cpu
