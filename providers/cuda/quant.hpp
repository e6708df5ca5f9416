// Launchers of onyx's int8 CUDA kernels (quant.cu): QuantizeLinear / DequantizeLinear, and the
// passes around cuBLASLt's int8 product of MatMulInteger and QLinearMatMul (operands moved to
// int8, row sums, the zero-point correction and the requantisation). Plain types only, so
// quant.cu includes nothing of onyx and the host code includes only the runtime API.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "launch.hpp"
#include "strided.hpp"

namespace onyx::cuda {

/// Where the scale and zero point of element i come from: index (i / inner) % dim (per-tensor:
/// dim 1; per-axis: dim the axis's length, inner the product of the dims after it).
struct QuantAxis {
  int64_t dim = 1, inner = 1;
};

/// QuantizeLinear: y[i] = saturate(round_half_even(x[i] / scale[d]) + zp[d]) over n elements.
/// x and scale are of `xt` (kF32, kF16, kBF16; the division in fp32); y and zp (may be null: 0) of
/// `yt` (kI8 or kU8). NaN quantizes to the zero point.
void quantize_linear(Ty xt, const void* x, const void* scale, Ty yt, const void* zp, void* y, const QuantAxis& ax, int64_t n,
                     cudaStream_t s);
/// DequantizeLinear: y[i] = (x[i] - zp[d]) * scale[d] (the integer difference exact, one
/// rounding to y's type). x and zp (may be null) of `xt` (kI8, kU8); y and scale of `yt` (kF32,
/// kF16, kBF16).
void dequantize_linear(Ty xt, const void* x, const void* zp, Ty yt, const void* scale, void* y, const QuantAxis& ax, int64_t n,
                       cudaStream_t s);

/// DynamicQuantizeLinear (uint8) of n floats, in three launches: the min / max over the tensor
/// (a grid of block partials, then one block; the range always includes 0, NaNs are skipped),
/// scale = (max - min) / 255 and zero point = round_half_even(clamp(-min / scale, 0, 255))
/// written to `scale` and `zp` (device, one value each), and y = saturate(round_half_even(x /
/// scale) + zp) (all zeros when the scale is 0). `scratch` holds dynamic_quantize_scratch_floats()
/// floats.
int64_t dynamic_quantize_scratch_floats();
void dynamic_quantize_u8(const float* x, int64_t n, uint8_t* y, float* scale, uint8_t* zp, float* scratch, cudaStream_t s);

/// An 8-bit matrix moved to int8 for cuBLASLt: dst[r, j] (rows x ld, row-major) is
/// src[view(r cols + j)] - 128 for uint8 (0 for int8) for j < cols, and 0 for cols <= j < ld (the
/// padding that makes ld a multiple of 4). `view` addresses src over [rows, cols] (a transposed
/// view turns B [k, n] into its columns).
void to_s8(const void* src, bool u8, const Strided& view, int8_t* dst, int64_t rows, int64_t cols, int64_t ld, cudaStream_t s);
/// On the host: a constant B [k, n] (uint8 when `u8`, else int8) moved into the form to_s8 gives
/// the device (dst [np, kp]: B's columns shifted to int8, zero padded; np, kp >= n, k) with its
/// column sums (sums [n]), once when the kernel is prepared.
inline void pack_b_host(const void* src, bool u8, int64_t k, int64_t n, int64_t kp, int64_t np, int8_t* dst, int32_t* sums) {
  const auto* b = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < np * kp; ++i) dst[i] = 0;
  for (int64_t j = 0; j < n; ++j) {
    int32_t sum = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      const uint8_t raw = b[kk * n + j];
      const int32_t v = u8 ? static_cast<int32_t>(raw) - 128 : static_cast<int32_t>(static_cast<int8_t>(raw));
      dst[j * kp + kk] = static_cast<int8_t>(v);
      sum += v;
    }
    sums[j] = sum;
  }
}
/// sums[r] = the sum of x[r ld + j] over j < cols (int8 rows).
void row_sums_s8(const int8_t* x, int64_t rows, int64_t cols, int64_t ld, int32_t* sums, cudaStream_t s);

/// The pass after the int8 product acc = A' B' (A' = A - a_shift, B' = B - b_shift, the operands
/// in int8): the zero points applied by the row-sum / column-sum correction
///   sum_k (a - za)(b - zb) = acc - zb' rowsum(A') - za' colsum(B') + k za' zb'
/// (za' = za - a_shift, zb' = zb - b_shift), then either stored as int32 (MatMulInteger) or
/// requantised (QLinearMatMul): saturate(round_half_even(float(sum) * (sa * sb / sy)) + zy).
/// Every pointer is device memory; zero points and scales are read in the kernel.
struct QGemmEpilogue {
  const int32_t* acc = nullptr;  // [rows, ld_acc]; may be y itself (int32 output, ld_acc == n)
  int64_t ld_acc = 0, rows = 0, n = 0, k = 0;
  const int32_t* row_sum_a = nullptr;  // [rows] sums of A' (needed when B has a zero point)
  const int32_t* col_sum_b = nullptr;  // [n] sums of B' (needed when A has a zero point)
  Ty a_ty = Ty::kI8, b_ty = Ty::kI8;   // the original types (kU8: shift 128)
  const void* za = nullptr;            // A's zero point (one, of a_ty) or null: 0
  const void* zb = nullptr;            // B's zero points (zb_count: 1 or n, of b_ty) or null: 0
  int64_t zb_count = 1;
  // Requantisation (y_ty kI8 / kU8); kI32: the corrected sum is stored.
  Ty y_ty = Ty::kI32;
  Ty scale_ty = Ty::kF32;  // of the three scales (kF32, kF16, kBF16)
  const void* sa = nullptr;
  const void* sb = nullptr;  // sb_count values: 1 or n
  int64_t sb_count = 1;
  const void* sy = nullptr;
  const void* zy = nullptr;  // of y_ty, or null: 0
  void* y = nullptr;         // [rows, n]
};
void qgemm_epilogue(const QGemmEpilogue& e, cudaStream_t s);

}  // namespace onyx::cuda
