// CPU kernels: rnn family.
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

std::span<const KernelDef> rnn_kernels() { return {}; }

}  // namespace onyx::cpu
