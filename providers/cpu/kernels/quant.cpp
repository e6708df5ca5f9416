// CPU kernels: quant family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> quant_kernels() { return {}; }

}  // namespace onyx::cpu
