// CPU kernels: control_flow family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> control_flow_kernels() { return {}; }

}  // namespace onyx::cpu
