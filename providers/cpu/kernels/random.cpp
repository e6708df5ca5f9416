// CPU kernels: random family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> random_kernels() { return {}; }

}  // namespace onyx::cpu
