// CPU kernels: text family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> text_kernels() { return {}; }

}  // namespace onyx::cpu
