// The CUDA EP's int8 kernels (quant_kernels.cpp): ai.onnx QuantizeLinear, DequantizeLinear,
// MatMulInteger and QLinearMatMul. claim.cpp decides which nodes come here.
#pragma once

#include <memory>

#include "runtime.hpp"

namespace onyx::cuda {

/// The kernel for an int8 node, or null when the node is not one of these ops.
std::unique_ptr<Kernel> create_quant_kernel(const KernelCreateInfo& info, const std::shared_ptr<Shared>& shared);

}  // namespace onyx::cuda
