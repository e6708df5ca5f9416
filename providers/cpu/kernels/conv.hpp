// The Conv kernel, shared with fusion-created kernels (Conv + activation).
#pragma once

#include <vector>

#include "ep/kernel.hpp"
#include "kernels/gemm.hpp"

namespace onyx::cpu {

class ConvKernel final : public Kernel {
 public:
  /// `act` is fused after the bias (kNone for a plain Conv).
  ConvKernel(const KernelCreateInfo& info, GemmEpilogue::Act act, float lo, float hi);
  void compute(KernelContext& ctx) const override;

 private:
  const Node& node_;
  int64_t group_ = 1;
  GemmEpilogue act_;
  std::vector<PackedMatrix> packed_;  // per group, when the weights are constant float32
};

/// Per-thread workspace for im2col (grows, never shrinks: no allocation per run).
float* conv_scratch(size_t floats);

}  // namespace onyx::cpu
