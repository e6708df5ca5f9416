// CPU kernels: einsum family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> einsum_kernels() { return {}; }

}  // namespace onyx::cpu
