// CPU kernels: training family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> training_kernels() { return {}; }

}  // namespace onyx::cpu
