// CPU kernels: linalg family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> linalg_kernels() { return {}; }

}  // namespace onyx::cpu
