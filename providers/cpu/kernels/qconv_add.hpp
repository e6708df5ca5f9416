// The residual sum of an 8-bit convolution, fused into it: onyx::QLinearConvAdd, which the
// optimizer makes of a QLinearConv whose output goes only into a com.microsoft::QLinearAdd with a
// tensor of the same shape (qconv_add_fusion.cpp). The convolution's output T is requantised as
// QLinearConv does (y_scale, y_zero_point: inputs 6, 7), then summed with Z (input 9) as
// QLinearAdd sums them (qmath::qadd_rows), tile by tile while T is still in the cache, instead of
// being written out and read back by one more pass.
//
// Inputs 9..15: Z, Z_scale, Z_zero_point (optional), T_scale, T_zero_point (optional: the sum's
// view of the convolution's output), C_scale, C_zero_point (optional: the output's). Attribute
// conv_is_b (default 0): whether T was the sum's input B (the order the terms are added in).
#pragma once

#include <cstdint>

#include "kernels/qmath.hpp"

namespace onyx {
class KernelContext;
class Tensor;
class ThreadPool;
}  // namespace onyx

namespace onyx::cpu {

/// The sum's constants, and Z.
struct QConvAddSum {
  const uint8_t* z = nullptr;  // Z's bytes, laid out as the output
  float ra = 0, rb = 0, fixed = 0;
  bool conv_is_b = false;
  bool is_signed = false;  // int8 data (else uint8)

  /// c = T + Z in place over n elements at `offset` of the output c (holding T) and of Z.
  void apply(uint8_t* c, int64_t offset, int64_t n) const {
    if (is_signed)
      apply_as(reinterpret_cast<int8_t*>(c + offset), reinterpret_cast<const int8_t*>(z + offset), n);
    else
      apply_as(c + offset, z + offset, n);
  }

 private:
  template <class S>
  void apply_as(S* c, const S* zz, int64_t n) const {
    if (conv_is_b)
      qmath::qadd_rows(zz, c, c, n, ra, rb, fixed);
    else
      qmath::qadd_rows(c, zz, c, n, ra, rb, fixed);
  }
};

/// Reads inputs 9..15 of a QLinearConvAdd node running with `ctx`, whose output (already of the
/// convolution's shape) is y: Z must have y's type and shape.
QConvAddSum qconv_add_sum(const KernelContext& ctx, const Tensor& y);

/// y = T + Z in place over the whole output y (holding T), on the pool's threads.
void qconv_add_in_place(const QConvAddSum& sum, Tensor& y, ThreadPool& pool);

}  // namespace onyx::cpu
