// CPU kernels: index family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> index_kernels() { return {}; }

}  // namespace onyx::cpu
