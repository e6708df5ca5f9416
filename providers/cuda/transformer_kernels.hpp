// The CUDA EP's kernels for ONNX Runtime's transformer operators (transformer_kernels.cpp):
// com.microsoft Gelu, BiasGelu, FastGelu, QuickGelu, SkipLayerNormalization,
// SkipSimplifiedLayerNormalization, RotaryEmbedding, MatMulNBits, MultiHeadAttention, Attention,
// GroupQueryAttention, and ai.onnx SimplifiedLayerNormalization (ONNX Runtime's). claim.cpp
// decides which nodes come here.
#pragma once

#include <memory>

#include "runtime.hpp"

namespace onyx::cuda {

/// The kernel for a transformer node, or null when the node is not one of these ops.
std::unique_ptr<Kernel> create_transformer_kernel(const KernelCreateInfo& info, const std::shared_ptr<Shared>& shared);

}  // namespace onyx::cuda
