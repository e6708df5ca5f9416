// Single-precision GEMM for the CPU EP: packed panels, a register-blocked micro-kernel written
// with GCC vector extensions (AVX-512, AVX2 or SSE depending on the build target), a fused
// epilogue (bias, activation), and pre-packing of constant operands.
#pragma once

#include <cstdint>
#include <memory>

#include "core/thread_pool.hpp"

namespace onyx {
struct Node;
}

namespace onyx::cpu {

/// Applied to each output element after accumulation (on the final k-block).
struct GemmEpilogue {
  const float* bias = nullptr;  // bias[row] when bias_per_row, else bias[col]
  bool bias_per_row = false;
  enum class Act : uint8_t { kNone, kRelu, kClip, kGelu } act = Act::kNone;  // kGelu: the exact (erf) form
  float lo = 0, hi = 0;  // kClip bounds
  /// Added before the activation: a matrix laid out as C (same ldc, element (i, j) where C has
  /// it; transposed too when C is stored transposed). A residual connection, in a convolution.
  const float* sum = nullptr;
};

/// The epilogue activation of an optimizer-fused node (FusedConv, FusedGemm, FusedMatMul) from
/// its `activation` / `activation_params` attributes (none when absent); Gelu only where
/// `allow_gelu`. Throws naming the node for anything else.
GemmEpilogue fused_epilogue(const Node& node, bool allow_gelu);

/// An operand packed once (constant weights), in the micro-kernel's panel layout.
class PackedMatrix {
 public:
  int64_t rows() const { return rows_; }   // M for A, K for B
  int64_t cols() const { return cols_; }   // K for A, N for B
  const float* data() const { return data_.get(); }
  bool is_a() const { return is_a_; }
  /// The k-block its panels were packed in (gather_k_block for sgemm_a_gather's B).
  int64_t k_block() const { return k_block_; }

 private:
  friend PackedMatrix pack_a(bool, int64_t, int64_t, const float*, int64_t, float);
  friend PackedMatrix pack_b(bool, int64_t, int64_t, const float*, int64_t, float, int64_t);
  int64_t rows_ = 0, cols_ = 0, k_block_ = 0;
  bool is_a_ = false;
  std::shared_ptr<float> data_;
};

/// Packs A (m x k, or its transpose when trans) for sgemm_packed, multiplied by `scale`.
PackedMatrix pack_a(bool trans, int64_t m, int64_t k, const float* a, int64_t lda, float scale = 1.0f);
/// Packs B (k x n, or its transpose when trans), in k-blocks of `k_block` rows (0: the GEMM's
/// own; another size only for sgemm_a_gather, see gather_k_block).
PackedMatrix pack_b(bool trans, int64_t k, int64_t n, const float* b, int64_t ldb, float scale = 1.0f,
                    int64_t k_block = 0);

/// Row-major C[m,n] = alpha * op(A) * op(B) + beta * C, then the epilogue. `pool` may be null.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool,
           const GemmEpilogue* epilogue = nullptr);

/// Same with one or both operands pre-packed (pass null for the unpacked one's PackedMatrix and
/// its pointer/ld for the other). alpha is 1.
void sgemm_packed(const PackedMatrix* pa, bool trans_a, const float* a, int64_t lda, const PackedMatrix* pb, bool trans_b,
                  const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k, float beta, float* c, int64_t ldc,
                  ThreadPool* pool, const GemmEpilogue* epilogue = nullptr);

/// C^T computed as op(A) * op(B) and stored transposed: element (i, j) of the m x n product goes
/// to c[j * ldc + i] (bias per column of the product, i.e. per row of what is stored). For an
/// output whose natural GEMM has a dimension the micro-kernel tiles badly (a 1x1 convolution
/// over 7 x 7 pixels: 49 columns in panels of 32), the transposed product tiles it as rows.
void sgemm_packed_tc(const PackedMatrix* pa, bool trans_a, const float* a, int64_t lda, const PackedMatrix* pb, bool trans_b,
                     const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k, float* c, int64_t ldc, ThreadPool* pool,
                     const GemmEpilogue* epilogue = nullptr);

/// Whether an m x n product is cheaper computed as its transpose (n x m, then stored transposed
/// by sgemm_packed_tc): by the micro-tiles each form fills.
bool gemm_prefers_transposed(int64_t m, int64_t n);

/// The micro-kernel's panel layouts (what packers write; 32 and 12 under AVX-512):
/// - B (a BPacker's `dst`): rows [k0, k0 + kc) of columns [c0 + kPanelCols q, + kPanelCols) are
///   panel q, kc rows of kPanelCols floats at dst + q * kPanelCols * kc; a last partial panel is
///   zero past `cols`.
/// - A (an APacker's `dst`): rows [r0 + kPanelRows p, + kPanelRows) x k-range [k0, k0 + kc) are
///   panel p, element (i, k) at dst + p * kPanelRows * kc + k * kPanelRows + i; rows past `rows`
///   are zero.
#if defined(__AVX512F__)
inline constexpr int64_t kPanelCols = 32, kPanelRows = 12;
#elif defined(__AVX__)
inline constexpr int64_t kPanelCols = 16, kPanelRows = 6;
#else
inline constexpr int64_t kPanelCols = 8, kPanelRows = 4;
#endif

/// Supplies A block by block: fills `dst` with rows [r0, r0 + rows) x k-range [k0, k0 + kc) of A
/// in the A panel layout above. Called from the GEMM's threads (must be reentrant).
using APacker = FunctionRef<void(int64_t r0, int64_t rows, int64_t k0, int64_t kc, float* dst)>;

/// sgemm_packed_tc with A from a packer (a convolution's im2col matrix, transposed: pixels as
/// rows) and B pre-packed.
void sgemm_a_packer_tc(const APacker& pack_a, const PackedMatrix* pb, int64_t m, int64_t n, int64_t k, float* c, int64_t ldc,
                       ThreadPool* pool, const GemmEpilogue* epilogue = nullptr);

/// Supplies B block by block instead of as a matrix: fills `dst` with rows [k0, k0 + kc) x
/// columns [c0, c0 + cols) of B in the micro-kernel's panel layout, as pack_b_rows() writes it.
/// Called from the GEMM's threads (must be reentrant); lets a caller build B (im2col) one
/// cache-sized block at a time.
using BPacker = FunctionRef<void(int64_t k0, int64_t kc, int64_t c0, int64_t cols, float* dst)>;

/// Packs a row-major kc x cols matrix (row stride ld) into the panel layout a BPacker writes.
void pack_b_rows(const float* b, int64_t ld, int64_t kc, int64_t cols, float* dst);
/// Packs the transpose of a row-major kc x rows matrix (row stride ld), i.e. its columns as rows
/// of A, into the panel layout an APacker writes.
void pack_a_cols(const float* b, int64_t ld, int64_t kc, int64_t rows, float* dst);

/// C[m,n] = A * B + epilogue with A pre-packed and B a shifted view of one buffer: element (k, j)
/// of B is b[koff[k] + j], read in place (no packing). Reads stay below column n, unless
/// `readable_past_n` says every b[koff[k] + j] for j below n rounded up to kPanelCols may be read
/// (then the last panel is read in place too, its columns past n computed and dropped). A
/// stride-1 convolution over a zero-padded input is such a product (column j a position of the
/// padded plane, koff[k] the offset of tap k: conv.cpp's implicit GEMM), and so is a row-major B
/// (koff[k] = k ldb) that is not worth packing.
void sgemm_b_shifted(const PackedMatrix* pa, const float* b, const int64_t* koff, int64_t m, int64_t n, int64_t k, float* c,
                     int64_t ldc, ThreadPool* pool, const GemmEpilogue* epilogue = nullptr, bool readable_past_n = false);

/// An A operand read in place through a gather, never packed: element (i, k) of A is
/// base[row_off[i] + koff[k]] (row_off: m entries, koff: k entries). A convolution over a
/// channels-last input is such a product: row i an output pixel (row_off[i] where its window
/// starts in the zero-padded input), k a (tap, input channel) pair (koff[k] its offset from the
/// window's start), so neither an im2col matrix nor a packed A is ever written.
struct AGather {
  const float* base;
  const int64_t* row_off;
  const int64_t* koff;
  /// Nonzero where A is a plain matrix of row stride lda: row_off[i] = i lda and koff[k] = k (a
  /// 1x1 convolution at stride 1 without padding), which faster kernels may rely on.
  int64_t lda = 0;
};

/// The k-block for a gathered product's B of k rows: k split evenly into blocks of at most
/// 1024 (the wide micro-kernel's six rows of A stay in L1), where the GEMM's own blocks of 512
/// would leave a short last block (576 = 512 + 64: a second pass over C whose tiles are mostly
/// overhead).
int64_t gather_k_block(int64_t k);

/// C[m,n] = A * B + epilogue with A gathered in place and B pre-packed (conv_nhwc.cpp), in any
/// k-block (pack_b's `k_block`; gather_k_block is the one to use).
/// With `accumulate`, C += A * B (then the epilogue): C already holds a sum to add, such as a
/// residual computed in place (the epilogue's sum is then null).
void sgemm_a_gather(const AGather& a, const PackedMatrix* pb, int64_t m, int64_t n, int64_t k, float* c, int64_t ldc,
                    ThreadPool* pool, const GemmEpilogue* epilogue = nullptr, bool accumulate = false);

/// C[m,n] = op(A) * B + epilogue with A pre-packed (or plain, pa null) and B from `pack_b`.
void sgemm_b_packer(const PackedMatrix* pa, const float* a, int64_t lda, const BPacker& pack_b, int64_t m, int64_t n,
                    int64_t k, float* c, int64_t ldc, ThreadPool* pool, const GemmEpilogue* epilogue = nullptr);

}  // namespace onyx::cpu
