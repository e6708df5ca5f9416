// CPU kernels: image family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> image_kernels() { return {}; }

}  // namespace onyx::cpu
