// CPU kernels: sequence family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> sequence_kernels() { return {}; }

}  // namespace onyx::cpu
