// CPU kernels: reduce family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> reduce_kernels() { return {}; }

}  // namespace onyx::cpu
