// 8-bit integer GEMM for the CPU EP: C[m, n] from A (m x k, uint8 or int8, read in place through
// row and k-quad offsets: a matrix, or a channels-last convolution's windows) times B (k x n,
// int8 or uint8, packed once), accumulated exactly in int32, with the zero points taken off and an
// epilogue that writes int32, float (scaled, plus a bias) or requantized 8-bit values.
//
// Code paths by the build's ISA: AVX-512 VNNI (u8 x s8 dot products of four, 16 columns a
// register), AVX-VNNI (the same on 256-bit registers), AVX2 (int16 pairs: vpmaddwd, exact: the
// u8 x s8 vpmaddubsw would saturate its int16 sums), and portable C++ on the int16 layout.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/thread_pool.hpp"

namespace onyx::cpu {

/// How B's k rows are grouped in its panels (4: VNNI's u8 x s8 quads; 2: int16 pairs), and the
/// columns of a panel.
#if (defined(__AVX512VNNI__) && defined(__AVX512BW__)) || defined(__AVXVNNI__)
inline constexpr int kQGroup = 4;
#else
inline constexpr int kQGroup = 2;
#endif
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
inline constexpr int64_t kQPanel = 64;
#else
inline constexpr int64_t kQPanel = 16;
#endif

/// B packed for qgemm: k padded to a multiple of 4 (kp; its extra rows are zero), panels of
/// kQPanel columns (the last one narrower: a multiple of the vector width), each kp / kQGroup
/// groups of kQPanel columns of kQGroup values: int8 with kQGroup 4, int16 (B minus its zero
/// point) with 2. With the values as stored s[kk][j], B's value is s[kk][j] - d[j]; `d` is zero
/// unless 8-bit storage could not take the zero point off (VNNI: an int8 B with a nonzero zero
/// point, or a uint8 B, stored minus 128, whose zero point is not 128).
class QPackedB {
 public:
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  int64_t kp() const { return kp_; }
  bool empty() const { return n_ == 0; }
  const void* data() const { return data_.get(); }
  /// Sum over the kp rows of the stored values, per column.
  const int32_t* col_sums() const { return col_sums_.data(); }
  /// The residual zero point d per column, or null when it is zero everywhere.
  const int32_t* residual_zp() const { return has_d_ ? d_.data() : nullptr; }
  /// Byte offset of panel p (columns [p kQPanel, ...)) and its column count (a multiple of the
  /// vector width).
  int64_t panel_offset(int64_t p) const { return p * kQPanel * kp_ * elem_; }
  int64_t panel_cols(int64_t p) const;

 private:
  friend QPackedB qpack_b(const void*, bool, int64_t, int64_t, int64_t, int64_t, const int32_t*, int64_t);
  int64_t k_ = 0, n_ = 0, kp_ = 0, elem_ = 1;
  bool has_d_ = false;
  std::shared_ptr<void> data_;
  std::vector<int32_t> col_sums_, d_;
};

/// Packs B: element (kk, j) at b[kk * row_stride + j * col_stride], uint8 when `b_unsigned`
/// (else int8), minus its zero point `zp` (zp_count 1: one for all columns; n: per column; 0:
/// none).
QPackedB qpack_b(const void* b, bool b_unsigned, int64_t k, int64_t n, int64_t row_stride, int64_t col_stride,
                 const int32_t* zp, int64_t zp_count);

/// The A operand: element (i, kk) is the byte at base + row(i) + quad(kk / 4) + kk % 4, where
/// row(i) = row_off ? row_off[i] : i * lda and quad(q) = quad_off ? quad_off[q] : 4 q, for kk
/// below B's kp (so the bytes of the last quad must be readable, and those past k hold the zero
/// point: they meet B's zero rows, and with a residual zero point would otherwise count).
struct QGemmA {
  const uint8_t* base = nullptr;
  const int64_t* row_off = nullptr;
  int64_t lda = 0;
  const int64_t* quad_off = nullptr;
  bool is_signed = false;  // int8 values (else uint8)
  int32_t zero_point = 0;

  /// A plain row-major matrix of row stride lda.
  static QGemmA matrix(const void* base, int64_t lda, bool is_signed, int32_t zero_point) {
    QGemmA a;
    a.base = static_cast<const uint8_t*>(base);
    a.lda = lda;
    a.is_signed = is_signed;
    a.zero_point = zero_point;
    return a;
  }
};

/// What qgemm writes. With acc(i, j) the exact sum over k of (A - a_zp)(B - b_zp) plus bias_i[j]:
/// - kInt32: c[i ldc + j] = acc (int32, wrapping);
/// - kFloat: c = acc * scale[j] * row_scale[i] (row_scale null: 1) + bias_f[j] (null: 0);
/// - kQuant8: c = clamp(round_half_even(acc * scale[j]) + out_zp, lo, hi), 8-bit (int8 when
///   out_signed), [lo, hi] within the type's range (a fused Relu or Clip narrows it).
struct QGemmOut {
  enum class Kind : uint8_t { kInt32, kFloat, kQuant8 } kind = Kind::kInt32;
  void* c = nullptr;
  int64_t ldc = 0;
  const int32_t* bias_i = nullptr;  // per column, added to the int32 sum
  const float* scale = nullptr;     // per column (kFloat, kQuant8)
  const float* row_scale = nullptr; // per row (kFloat)
  const float* bias_f = nullptr;    // per column (kFloat)
  int32_t out_zp = 0, lo = 0, hi = 255;
  bool out_signed = false;
  /// Called once a block of C is written (rows [i0, i0 + rows), columns [j0, j0 + cols): a
  /// chunk of rows of a thread by the panels of B it keeps in L2), while it is still in the
  /// cache: a further elementwise step fused into the product (an 8-bit convolution's residual
  /// sum). Null: none.
  void (*after_block)(const void* arg, int64_t i0, int64_t rows, int64_t j0, int64_t cols) = nullptr;
  const void* after_block_arg = nullptr;

  static QGemmOut int32(void* c, int64_t ldc, const int32_t* bias_i = nullptr) {
    QGemmOut o;
    o.c = c;
    o.ldc = ldc;
    o.bias_i = bias_i;
    return o;
  }
  static QGemmOut to_float(void* c, int64_t ldc, const float* scale, const float* bias_f = nullptr) {
    QGemmOut o = int32(c, ldc);
    o.kind = Kind::kFloat;
    o.scale = scale;
    o.bias_f = bias_f;
    return o;
  }
  /// Requantised to the whole range of the 8-bit type.
  static QGemmOut quant8(void* c, int64_t ldc, const float* scale, int32_t zp, bool out_signed,
                         const int32_t* bias_i = nullptr) {
    QGemmOut o = int32(c, ldc, bias_i);
    o.kind = Kind::kQuant8;
    o.scale = scale;
    o.out_zp = zp;
    o.out_signed = out_signed;
    o.lo = out_signed ? -128 : 0;
    o.hi = out_signed ? 127 : 255;
    return o;
  }
};

/// C = A B for m rows, with B's k and n, and the epilogue `out`. `pool` may be null.
void qgemm(const QGemmA& a, const QPackedB& b, int64_t m, const QGemmOut& out, ThreadPool* pool);

}  // namespace onyx::cpu
