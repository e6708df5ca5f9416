// com.microsoft MatMulNBits (ONNX Runtime's weight-only quantized MatMul): Y = A W (+ bias) with
// W[k, n] = (q - zp) scale, q the `bits`-bit integers of B (N x k_blocks x blob, low bits first),
// scale and zero point per block of block_size values of a column along K.
//
// The weights are repacked (once when B, scales and zero points are constants) into panels of
// kPanelCols columns, the GEMM's panel width: per group of 4 rows of K, one 32-bit word per
// column holds its 4 values as bytes (4-bit and 2-bit values: two columns per byte, low and high
// nibble, the panel's first and second half), so that
//  - the matrix-vector kernel (few rows of A) converts a word vector to floats row by row and
//    multiplies by a broadcast element of A, applying scale and zero point once per block;
//  - accuracy_level 4 (as ONNX Runtime on x86) quantizes A to int8 per block (of at most 256)
//    with scale max|a| / 127 and multiplies with integer dot products (VNNI where available);
//  - more rows of A run on the fp32 GEMM, whose B panels are dequantized from this layout.
// g_idx (act-order: column k uses block g_idx[k]) dequantizes W to fp32 and uses the GEMM.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "kernels/common.hpp"
#include "kernels/gemm.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

namespace {

constexpr int64_t P = kPanelCols;  // columns per panel
constexpr int64_t W = P / 2;       // 32-bit lanes per vector (half a panel)

// ---------------------------------------------------------------------------------------------
// A few vector operations on W lanes of int32 / float, for the build target.
// ---------------------------------------------------------------------------------------------
#if defined(__AVX512F__)
static_assert(W == 16);
using VF = __m512;
using VI = __m512i;
// Zero-masked forms over every lane: the plain ones pass GCC 12 an undefined source it warns about.
inline constexpr __mmask16 kAll16 = 0xffff;
inline VF vf_zero() { return _mm512_setzero_ps(); }
inline VF vf_set1(float x) { return _mm512_set1_ps(x); }
inline VF vf_load(const float* p) { return _mm512_loadu_ps(p); }
inline void vf_store(float* p, VF v) { _mm512_storeu_ps(p, v); }
inline VF vf_fma(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
inline VF vf_fnma(VF a, VF b, VF c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a b
inline VF vf_mul(VF a, VF b) { return _mm512_mul_ps(a, b); }
inline VF vf_sub(VF a, VF b) { return _mm512_sub_ps(a, b); }
inline VF vf_add(VF a, VF b) { return _mm512_add_ps(a, b); }
inline VF vf_from_int(VI v) { return _mm512_maskz_cvtepi32_ps(kAll16, v); }
inline VI vi_from_float(VF v) { return _mm512_maskz_cvtps_epi32(kAll16, v); }
inline VI vi_zero() { return _mm512_setzero_si512(); }
inline VI vi_set1(int32_t x) { return _mm512_set1_epi32(x); }
inline VI vi_load(const void* p) { return _mm512_loadu_si512(p); }
inline VI vi_and(VI a, VI b) { return _mm512_and_si512(a, b); }
inline VI vi_sub(VI a, VI b) { return _mm512_sub_epi32(a, b); }
inline VI vi_add(VI a, VI b) { return _mm512_add_epi32(a, b); }
inline VI vi_mullo(VI a, VI b) { return _mm512_mullo_epi32(a, b); }
inline VI vi_srl(VI a, int n) { return _mm512_maskz_srl_epi32(kAll16, a, _mm_cvtsi32_si128(n)); }
template <int S>
inline VI vi_srli(VI a) {
  return _mm512_maskz_srli_epi32(kAll16, a, S);
}
/// acc + per lane sum of 4 products u8 (of u) x s8 (of s); u's bytes at most `kMaxU`.
template <int kMaxU>
inline VI dot4(VI acc, VI u, VI s) {
#if defined(__AVX512VNNI__)
  return _mm512_dpbusd_epi32(acc, u, s);
#elif defined(__AVX512BW__)
  const __m512i ones = _mm512_set1_epi16(1);
  if constexpr (kMaxU <= 127) {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), ones));
  } else {  // split u into nibbles so that the 16-bit pair sums cannot saturate
    const __m512i m = _mm512_set1_epi8(0x0F);
    const __m512i lo = _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_and_si512(u, m), s), ones);
    const __m512i hi = _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(u, 4), m), s), ones);
    return _mm512_add_epi32(acc, _mm512_add_epi32(lo, _mm512_maskz_slli_epi32(kAll16, hi, 4)));
  }
#else
  alignas(64) uint8_t ub[64];
  alignas(64) int8_t sb[64];
  alignas(64) int32_t ab[16];
  _mm512_store_si512(ub, u);
  _mm512_store_si512(sb, s);
  _mm512_store_si512(ab, acc);
  for (int l = 0; l < 16; ++l)
    for (int j = 0; j < 4; ++j) ab[l] += int32_t(ub[4 * l + j]) * int32_t(sb[4 * l + j]);
  return _mm512_load_si512(ab);
#endif
}
#elif defined(__AVX2__)
static_assert(W == 8);
using VF = __m256;
using VI = __m256i;
inline VF vf_zero() { return _mm256_setzero_ps(); }
inline VF vf_set1(float x) { return _mm256_set1_ps(x); }
inline VF vf_load(const float* p) { return _mm256_loadu_ps(p); }
inline void vf_store(float* p, VF v) { _mm256_storeu_ps(p, v); }
#if defined(__FMA__)
inline VF vf_fma(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
inline VF vf_fnma(VF a, VF b, VF c) { return _mm256_fnmadd_ps(a, b, c); }
#else
inline VF vf_fma(VF a, VF b, VF c) { return _mm256_add_ps(_mm256_mul_ps(a, b), c); }
inline VF vf_fnma(VF a, VF b, VF c) { return _mm256_sub_ps(c, _mm256_mul_ps(a, b)); }
#endif
inline VF vf_mul(VF a, VF b) { return _mm256_mul_ps(a, b); }
inline VF vf_sub(VF a, VF b) { return _mm256_sub_ps(a, b); }
inline VF vf_add(VF a, VF b) { return _mm256_add_ps(a, b); }
inline VF vf_from_int(VI v) { return _mm256_cvtepi32_ps(v); }
inline VI vi_from_float(VF v) { return _mm256_cvtps_epi32(v); }
inline VI vi_zero() { return _mm256_setzero_si256(); }
inline VI vi_set1(int32_t x) { return _mm256_set1_epi32(x); }
inline VI vi_load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline VI vi_and(VI a, VI b) { return _mm256_and_si256(a, b); }
inline VI vi_sub(VI a, VI b) { return _mm256_sub_epi32(a, b); }
inline VI vi_add(VI a, VI b) { return _mm256_add_epi32(a, b); }
inline VI vi_mullo(VI a, VI b) { return _mm256_mullo_epi32(a, b); }
inline VI vi_srl(VI a, int n) { return _mm256_srl_epi32(a, _mm_cvtsi32_si128(n)); }
template <int S>
inline VI vi_srli(VI a) {
  return _mm256_srli_epi32(a, S);
}
template <int kMaxU>
inline VI dot4(VI acc, VI u, VI s) {
#if defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
  return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (kMaxU <= 127) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones));
  } else {
    const __m256i m = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(u, m), s), ones);
    const __m256i hi = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(u, 4), m), s), ones);
    return _mm256_add_epi32(acc, _mm256_add_epi32(lo, _mm256_slli_epi32(hi, 4)));
  }
#endif
}
#else
// Portable: W lanes in plain arrays (the compiler vectorizes what it can).
struct VF {
  float v[W];
};
struct VI {
  int32_t v[W];
};
inline VF vf_zero() { return VF{}; }
inline VF vf_set1(float x) {
  VF r;
  for (int64_t l = 0; l < W; ++l) r.v[l] = x;
  return r;
}
inline VF vf_load(const float* p) {
  VF r;
  std::memcpy(r.v, p, sizeof r.v);
  return r;
}
inline void vf_store(float* p, VF v) { std::memcpy(p, v.v, sizeof v.v); }
#define ONYX_NBITS_LANES(expr) \
  for (int64_t l = 0; l < W; ++l) r.v[l] = (expr)
inline VF vf_fma(VF a, VF b, VF c) {
  VF r;
  ONYX_NBITS_LANES(std::fma(a.v[l], b.v[l], c.v[l]));
  return r;
}
inline VF vf_fnma(VF a, VF b, VF c) {
  VF r;
  ONYX_NBITS_LANES(std::fma(-a.v[l], b.v[l], c.v[l]));
  return r;
}
inline VF vf_mul(VF a, VF b) {
  VF r;
  ONYX_NBITS_LANES(a.v[l] * b.v[l]);
  return r;
}
inline VF vf_sub(VF a, VF b) {
  VF r;
  ONYX_NBITS_LANES(a.v[l] - b.v[l]);
  return r;
}
inline VF vf_add(VF a, VF b) {
  VF r;
  ONYX_NBITS_LANES(a.v[l] + b.v[l]);
  return r;
}
inline VF vf_from_int(VI a) {
  VF r;
  ONYX_NBITS_LANES(static_cast<float>(a.v[l]));
  return r;
}
inline VI vi_from_float(VF a) {
  VI r;
  ONYX_NBITS_LANES(static_cast<int32_t>(std::nearbyint(a.v[l])));
  return r;
}
inline VI vi_zero() { return VI{}; }
inline VI vi_set1(int32_t x) {
  VI r;
  ONYX_NBITS_LANES(x);
  return r;
}
inline VI vi_load(const void* p) {
  VI r;
  std::memcpy(r.v, p, sizeof r.v);
  return r;
}
inline VI vi_and(VI a, VI b) {
  VI r;
  ONYX_NBITS_LANES(a.v[l] & b.v[l]);
  return r;
}
inline VI vi_sub(VI a, VI b) {
  VI r;
  ONYX_NBITS_LANES(static_cast<int32_t>(static_cast<uint32_t>(a.v[l]) - static_cast<uint32_t>(b.v[l])));
  return r;
}
inline VI vi_add(VI a, VI b) {
  VI r;
  ONYX_NBITS_LANES(static_cast<int32_t>(static_cast<uint32_t>(a.v[l]) + static_cast<uint32_t>(b.v[l])));
  return r;
}
inline VI vi_mullo(VI a, VI b) {
  VI r;
  ONYX_NBITS_LANES(static_cast<int32_t>(static_cast<uint32_t>(a.v[l]) * static_cast<uint32_t>(b.v[l])));
  return r;
}
inline VI vi_srl(VI a, int n) {
  VI r;
  ONYX_NBITS_LANES(static_cast<int32_t>(static_cast<uint32_t>(a.v[l]) >> n));
  return r;
}
template <int S>
inline VI vi_srli(VI a) {
  return vi_srl(a, S);
}
template <int kMaxU>
inline VI dot4(VI acc, VI u, VI s) {
  VI r;
  for (int64_t l = 0; l < W; ++l) {
    const uint32_t uu = static_cast<uint32_t>(u.v[l]), ss = static_cast<uint32_t>(s.v[l]);
    int32_t sum = acc.v[l];
    for (int j = 0; j < 4; ++j)
      sum += static_cast<int32_t>((uu >> (8 * j)) & 0xFF) * static_cast<int32_t>(static_cast<int8_t>((ss >> (8 * j)) & 0xFF));
    r.v[l] = sum;
  }
  return r;
}
#undef ONYX_NBITS_LANES
#endif

// ---------------------------------------------------------------------------------------------
// Attributes and the repacked weights.
// ---------------------------------------------------------------------------------------------

struct Attrs {
  int64_t K = 0, N = 0, bits = 4, bs = 0, level = 0;
  int64_t kb = 0, blob = 0, zp_blob = 0;
};

Attrs read_attrs(const Node& node) {
  Attrs a;
  if (!node.has_attr("K") || !node.has_attr("N")) fail(ErrorCode::kInvalidGraph, node.label(), ": attributes K and N are required");
  a.K = node.attr_int("K", 0);
  a.N = node.attr_int("N", 0);
  a.bits = node.attr_int("bits", 4);
  a.bs = node.attr_int("block_size", 0);
  a.level = node.attr_int("accuracy_level", 0);
  if (a.K <= 0 || a.N <= 0 || a.K > (int64_t(1) << 40) || a.N > (int64_t(1) << 40))
    fail(ErrorCode::kInvalidGraph, node.label(), ": K (", a.K, ") and N (", a.N, ") must be positive (and below 2^40)");
  if (a.bits != 2 && a.bits != 4 && a.bits != 8) fail(ErrorCode::kInvalidGraph, node.label(), ": bits must be 2, 4 or 8, got ", a.bits);
  if (a.bs < 16 || a.bs > (int64_t(1) << 30) || (a.bs & (a.bs - 1)) != 0)
    fail(ErrorCode::kInvalidGraph, node.label(), ": block_size must be a power of 2 and at least 16, got ", a.bs);
  if (a.level < 0 || a.level > 4) fail(ErrorCode::kInvalidGraph, node.label(), ": accuracy_level must be in [0, 4], got ", a.level);
  if (node.attr_int("weight_prepacked", 0) != 0)
    fail(ErrorCode::kNotImplemented, node.label(), ": weight_prepacked=1 (weights in an execution provider's own layout) is not supported");
  a.kb = (a.K + a.bs - 1) / a.bs;
  a.blob = a.bs * a.bits / 8;
  a.zp_blob = (a.kb * a.bits + 7) / 8;
  return a;
}

/// Tensor t is 1-D [rows cols] or 2-D [rows, cols].
bool flat_or_2d(const Tensor& t, int64_t rows, int64_t cols) {
  return (t.rank() == 1 && t.dim(0) == rows * cols) || (t.rank() == 2 && t.dim(0) == rows && t.dim(1) == cols);
}

/// Checks the quantized operands' types and shapes (ONNX Runtime's rules); throws naming the node.
void check_weights(const Node& node, const Attrs& a, DType t, const Tensor& b, const Tensor& scales, const Tensor* zp,
                   const Tensor* g_idx, const Tensor* bias) {
  auto bad = [&](const char* what, int idx, const Tensor& x, const auto&... want) {
    fail(ErrorCode::kInvalidArgument, node.label(), ": ", what, " (input ", idx, ") must be ", want..., ", got ", dtype_name(x.dtype()), " ",
         x.shape().to_string());
  };
  const std::string_view tn = dtype_name(t);
  if (b.dtype() != DType::kUInt8 || b.rank() != 3 || b.dim(0) != a.N || b.dim(1) != a.kb || b.dim(2) != a.blob)
    bad("B", 1, b, "uint8 [", a.N, ", ", a.kb, ", ", a.blob, "]");
  if (scales.dtype() != t || !flat_or_2d(scales, a.N, a.kb))
    bad("scales", 2, scales, tn, " [", a.N * a.kb, "] or [", a.N, ", ", a.kb, "]");
  if (zp) {
    if (zp->dtype() == DType::kUInt8) {
      if (!flat_or_2d(*zp, a.N, a.zp_blob)) bad("zero_points", 3, *zp, "uint8 [", a.N * a.zp_blob, "] or [", a.N, ", ", a.zp_blob, "]");
    } else if (zp->dtype() != t || !flat_or_2d(*zp, a.N, a.kb)) {
      bad("zero_points", 3, *zp, "uint8 [", a.N * a.zp_blob, "] or [", a.N, ", ", a.zp_blob, "], or ", tn, " [", a.N * a.kb, "] or [",
          a.N, ", ", a.kb, "]");
    }
  }
  if (g_idx) {
    if (g_idx->dtype() != DType::kInt32 || g_idx->rank() != 1 || (g_idx->dim(0) != a.K && g_idx->dim(0) != a.kb * a.bs))
      bad("g_idx", 4, *g_idx, "int32 [", a.K, "] or [", a.kb * a.bs, "]");
    const int32_t* g = g_idx->data<int32_t>();
    for (int64_t k = 0; k < g_idx->numel(); ++k)
      if (g[k] < 0 || g[k] >= a.kb)
        fail(ErrorCode::kInvalidArgument, node.label(), ": g_idx[", k, "] = ", g[k], " is not a block index in [0, ", a.kb, ")");
  }
  if (bias && (bias->dtype() != t || bias->rank() != 1 || bias->dim(0) != a.N))
    bad("bias", 5, *bias, tn, " [", a.N, "]");
}

float scalar_at(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kFloat16 ? Float16::to_float(t.data<Float16>()[i].bits) : t.data<float>()[i];
}

/// Quantized value (n, k) of B (k below kb * bs).
inline uint32_t q_at(const uint8_t* b, const Attrs& a, int64_t n, int64_t k) {
  const int64_t bit = k * a.bits;  // bit offset within the column's blocks (blocks are whole bytes)
  const uint8_t byte = b[n * a.kb * a.blob + (bit >> 3)];
  return (byte >> (bit & 7)) & ((1u << a.bits) - 1);
}

/// Zero point of (n, block) as float: uint8 packed, A's type, or the default 2^(bits-1).
inline float zp_at(const Tensor* zp, const Attrs& a, int64_t n, int64_t blk) {
  if (!zp) return static_cast<float>(1 << (a.bits - 1));
  if (zp->dtype() == DType::kUInt8) {
    const int64_t bit = blk * a.bits;
    const uint8_t byte = zp->data<uint8_t>()[n * a.zp_blob + (bit >> 3)];
    return static_cast<float>((byte >> (bit & 7)) & ((1u << a.bits) - 1));
  }
  return scalar_at(*zp, n * a.kb + blk);
}

/// B repacked in column panels (see the file comment).
struct Packed {
  int64_t K = 0, N = 0, bs = 0, kb = 0, kp = 0, groups = 0, panels = 0;
  bool nib = true;            // 2- or 4-bit values (nibbles), else bytes
  int64_t group_bytes = 0;    // bytes of one group of 4 rows of a panel
  int32_t max_q = 15;
  std::vector<uint8_t> q;     // panels x groups x group_bytes
  std::vector<float> meta;    // panels x kb x [P scales, P zero points]
  const uint8_t* panel(int64_t p) const { return q.data() + p * groups * group_bytes; }
  const float* block_meta(int64_t p, int64_t b) const { return meta.data() + (p * kb + b) * 2 * P; }
};

std::shared_ptr<Packed> pack_weights(const Attrs& a, const Tensor& bt, const Tensor& scales, const Tensor* zp) {
  auto pk = std::make_shared<Packed>();
  Packed& w = *pk;
  w.K = a.K;
  w.N = a.N;
  w.bs = a.bs;
  w.kb = a.kb;
  w.kp = a.kb * a.bs;
  w.groups = w.kp / 4;
  w.panels = (a.N + P - 1) / P;
  w.nib = a.bits <= 4;
  w.max_q = (1 << a.bits) - 1;
  w.group_bytes = w.nib ? 4 * W : 8 * W;
  w.q.assign(static_cast<size_t>(w.panels * w.groups * w.group_bytes), 0);
  w.meta.assign(static_cast<size_t>(w.panels * w.kb * 2 * P), 0.0f);
  const uint8_t* b = bt.data<uint8_t>();
  for (int64_t n = 0; n < a.N; ++n) {
    const int64_t p = n / P, c = n % P;
    uint8_t* dst = w.q.data() + p * w.groups * w.group_bytes;
    // Column c: word (c % W) of the group, low nibble for the first half of the panel (or the
    // first W words for bytes).
    const int64_t word = w.nib ? c % W : c;
    const int shift = w.nib && c >= W ? 4 : 0;
    for (int64_t k = 0; k < w.kp; ++k) {
      const uint32_t v = q_at(b, a, n, k);
      dst[(k / 4) * w.group_bytes + word * 4 + (k % 4)] |= static_cast<uint8_t>(v << shift);
    }
    for (int64_t blk = 0; blk < a.kb; ++blk) {
      float* m = w.meta.data() + (p * a.kb + blk) * 2 * P;
      m[c] = scalar_at(scales, n * a.kb + blk);
      m[P + c] = zp_at(zp, a, n, blk);
    }
  }
  return pk;
}

/// The 4 rows of a group as two word vectors (columns [0, W) and [W, P) of the panel), each byte
/// one value.
template <bool kNib>
inline void load_group(const uint8_t* g, VI& lo, VI& hi) {
  if constexpr (kNib) {
    const VI v = vi_load(g), m = vi_set1(0x0F0F0F0F);
    lo = vi_and(v, m);
    hi = vi_and(vi_srli<4>(v), m);
  } else {
    lo = vi_load(g);
    hi = vi_load(g + 4 * W);
  }
}

/// Row j (0..3) of a group's word vector as floats.
template <int J>
inline VF row_of(VI v) {
  if constexpr (J == 3)
    return vf_from_int(vi_srli<24>(v));
  else
    return vf_from_int(vi_and(vi_srli<8 * J>(v), vi_set1(0xFF)));
}

/// Stores the two halves of a panel's output row (cols valid columns) plus bias.
inline void store_row(float* y, int64_t cols, VF lo, VF hi, const float* bias) {
  if (bias) {
    alignas(64) float bb[P] = {};
    std::memcpy(bb, bias, static_cast<size_t>(cols) * sizeof(float));
    lo = vf_add(lo, vf_load(bb));
    hi = vf_add(hi, vf_load(bb + W));
  }
  if (cols == P) {
    vf_store(y, lo);
    vf_store(y + W, hi);
  } else {
    alignas(64) float t[P];
    vf_store(t, lo);
    vf_store(t + W, hi);
    std::memcpy(y, t, static_cast<size_t>(cols) * sizeof(float));
  }
}

// ---------------------------------------------------------------------------------------------
// fp32: R rows of A (zero padded to kp) times panels [p0, p1).
// ---------------------------------------------------------------------------------------------
template <int R, bool kNib>
void gemv_f32(const Packed& w, const float* a, int64_t lda, const float* asum, int64_t p0, int64_t p1, float* y, int64_t ldy,
              const float* bias) {
  const int64_t gpb = w.bs / 4;  // groups per block
  for (int64_t p = p0; p < p1; ++p) {
    VF ylo[R], yhi[R];
    for (int r = 0; r < R; ++r) ylo[r] = yhi[r] = vf_zero();
    const uint8_t* qp = w.panel(p);
    for (int64_t b = 0; b < w.kb; ++b) {
      // One row: an accumulator pair per row of the group (FMA latency, not throughput, would
      // bound a single chain); more rows: one pair per row.
      constexpr int U = R == 1 ? 4 : 1;
      VF alo[R][U], ahi[R][U];
      for (int r = 0; r < R; ++r)
        for (int u = 0; u < U; ++u) alo[r][u] = ahi[r][u] = vf_zero();
      for (int64_t g = b * gpb; g < (b + 1) * gpb; ++g) {
        VI lo, hi;
        load_group<kNib>(qp + g * w.group_bytes, lo, hi);
        const float* ak = a + 4 * g;
        auto row = [&](auto jc) {
          constexpr int J = decltype(jc)::value;
          constexpr int u = J % U;
          const VF fl = row_of<J>(lo), fh = row_of<J>(hi);
          for (int r = 0; r < R; ++r) {
            const VF av = vf_set1(ak[r * lda + J]);
            alo[r][u] = vf_fma(av, fl, alo[r][u]);
            ahi[r][u] = vf_fma(av, fh, ahi[r][u]);
          }
        };
        row(std::integral_constant<int, 0>{});
        row(std::integral_constant<int, 1>{});
        row(std::integral_constant<int, 2>{});
        row(std::integral_constant<int, 3>{});
      }
      for (int r = 0; r < R; ++r)
        for (int u = 1; u < U; ++u) {
          alo[r][0] = vf_add(alo[r][0], alo[r][u]);
          ahi[r][0] = vf_add(ahi[r][0], ahi[r][u]);
        }
      // y += scale (sum a q - zp sum a)
      const float* m = w.block_meta(p, b);
      const VF s0 = vf_load(m), s1 = vf_load(m + W), z0 = vf_load(m + P), z1 = vf_load(m + P + W);
      for (int r = 0; r < R; ++r) {
        const VF as = vf_set1(asum[r * w.kb + b]);
        ylo[r] = vf_fma(s0, vf_fnma(z0, as, alo[r][0]), ylo[r]);
        yhi[r] = vf_fma(s1, vf_fnma(z1, as, ahi[r][0]), yhi[r]);
      }
    }
    const int64_t cols = std::min(P, w.N - p * P);
    for (int r = 0; r < R; ++r) store_row(y + r * ldy + p * P, cols, ylo[r], yhi[r], bias ? bias + p * P : nullptr);
  }
}

// ---------------------------------------------------------------------------------------------
// accuracy_level 4: A quantized to int8 per block of qbl (min(block_size, 256)) values.
// ---------------------------------------------------------------------------------------------
struct QuantA {
  const int8_t* q;       // rows x kp, zero padded
  const float* scale;    // rows x nsub
  const int32_t* qsum;   // rows x nsub: sum of the block's int8 values
  int64_t kp, nsub, qbl;
};

/// Quantizes one row of K floats as ONNX Runtime's x86 kernels do: per block, scale =
/// max|a| / 127 and q = round_half_even(a * (127 / max|a|)).
void quantize_row(const float* a, int64_t K, int64_t kp, int64_t qbl, int8_t* q, float* scale, int32_t* qsum) {
  for (int64_t s = 0, k0 = 0; k0 < kp; ++s, k0 += qbl) {
    const int64_t n = std::clamp<int64_t>(K - k0, 0, qbl);
    float amax = 0.0f;
    for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(a[k0 + i]));
    scale[s] = amax / 127.0f;
    const float inv = amax != 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float t = a[k0 + i] * inv;
      const int32_t v = static_cast<int32_t>(std::nearbyint(t));
      q[k0 + i] = static_cast<int8_t>(v);
      sum += v;
    }
    for (int64_t i = n; i < qbl; ++i) q[k0 + i] = 0;
    qsum[s] = sum;
  }
}

template <int R, bool kNib>
void gemv_int8(const Packed& w, const QuantA& qa, int64_t row0, int64_t p0, int64_t p1, float* y, int64_t ldy, const float* bias) {
  const int64_t gps = qa.qbl / 4;  // groups per A block
  for (int64_t p = p0; p < p1; ++p) {
    VF ylo[R], yhi[R];
    for (int r = 0; r < R; ++r) ylo[r] = yhi[r] = vf_zero();
    const uint8_t* qp = w.panel(p);
    for (int64_t s = 0; s < qa.nsub; ++s) {
      // One row: several accumulator pairs over alternate groups (dot-product latency).
      constexpr int U = R == 1 ? 4 : 1;
      VI ilo[R][U], ihi[R][U];
      for (int r = 0; r < R; ++r)
        for (int u = 0; u < U; ++u) ilo[r][u] = ihi[r][u] = vi_zero();
      for (int64_t g0 = s * gps; g0 < (s + 1) * gps; g0 += U) {  // gps is a multiple of 4
        for (int u = 0; u < U; ++u) {
          const int64_t g = g0 + u;
          VI lo, hi;
          load_group<kNib>(qp + g * w.group_bytes, lo, hi);
          for (int r = 0; r < R; ++r) {
            int32_t a4;
            std::memcpy(&a4, qa.q + (row0 + r) * qa.kp + 4 * g, 4);
            const VI av = vi_set1(a4);
            if constexpr (kNib) {
              ilo[r][u] = dot4<15>(ilo[r][u], lo, av);
              ihi[r][u] = dot4<15>(ihi[r][u], hi, av);
            } else {
              ilo[r][u] = dot4<255>(ilo[r][u], lo, av);
              ihi[r][u] = dot4<255>(ihi[r][u], hi, av);
            }
          }
        }
      }
      for (int r = 0; r < R; ++r)
        for (int u = 1; u < U; ++u) {
          ilo[r][0] = vi_add(ilo[r][0], ilo[r][u]);
          ihi[r][0] = vi_add(ihi[r][0], ihi[r][u]);
        }
      const float* m = w.block_meta(p, s * qa.qbl / w.bs);
      const VF s0 = vf_load(m), s1 = vf_load(m + W);
      const VI z0 = vi_from_float(vf_load(m + P)), z1 = vi_from_float(vf_load(m + P + W));
      for (int r = 0; r < R; ++r) {
        const int64_t at = (row0 + r) * qa.nsub + s;
        const VI qs = vi_set1(qa.qsum[at]);
        const VF sa = vf_set1(qa.scale[at]);
        const VF d0 = vf_from_int(vi_sub(ilo[r][0], vi_mullo(z0, qs))), d1 = vf_from_int(vi_sub(ihi[r][0], vi_mullo(z1, qs)));
        ylo[r] = vf_fma(d0, vf_mul(sa, s0), ylo[r]);
        yhi[r] = vf_fma(d1, vf_mul(sa, s1), yhi[r]);
      }
    }
    const int64_t cols = std::min(P, w.N - p * P);
    for (int r = 0; r < R; ++r) store_row(y + (row0 + r) * ldy + p * P, cols, ylo[r], yhi[r], bias ? bias + p * P : nullptr);
  }
}

/// Rows [k0, k0 + kc) x columns [c0, c0 + cols) of the dequantized W in the GEMM's B panel layout.
/// A group holds rows 4g .. 4g + 3 and never crosses a block (block sizes are multiples of 4): its
/// words are loaded once for its four rows.
template <bool kNib>
void dequant_panels(const Packed& w, int64_t k0, int64_t kc, int64_t c0, int64_t cols, float* dst) {
  const int64_t np = (cols + P - 1) / P, k1 = k0 + kc;
  for (int64_t q = 0; q < np; ++q) {
    const int64_t p = c0 / P + q;
    const uint8_t* qp = w.panel(p);
    float* d = dst + q * P * kc;
    int64_t blk = -1;
    VF s0 = vf_zero(), s1 = vf_zero(), z0 = vf_zero(), z1 = vf_zero();
    auto meta = [&](int64_t k) {
      if (k / w.bs == blk) return;
      blk = k / w.bs;
      const float* m = w.block_meta(p, blk);
      s0 = vf_load(m);
      s1 = vf_load(m + W);
      z0 = vf_load(m + P);
      z1 = vf_load(m + P + W);
    };
    auto put = [&](int64_t k, VF fl, VF fh) {
      vf_store(d + (k - k0) * P, vf_mul(vf_sub(fl, z0), s0));
      vf_store(d + (k - k0) * P + W, vf_mul(vf_sub(fh, z1), s1));
    };
    auto single = [&](int64_t k) {  // one row of a group
      meta(k);
      VI lo, hi;
      load_group<kNib>(qp + (k / 4) * w.group_bytes, lo, hi);
      const int sh = 8 * static_cast<int>(k % 4);
      const VI mask = vi_set1(0xFF);
      put(k, vf_from_int(vi_and(vi_srl(lo, sh), mask)), vf_from_int(vi_and(vi_srl(hi, sh), mask)));
    };
    int64_t k = k0;
    for (; k < k1 && k % 4 != 0; ++k) single(k);
    for (; k + 4 <= k1; k += 4) {
      meta(k);
      VI lo, hi;
      load_group<kNib>(qp + (k / 4) * w.group_bytes, lo, hi);
      put(k, row_of<0>(lo), row_of<0>(hi));
      put(k + 1, row_of<1>(lo), row_of<1>(hi));
      put(k + 2, row_of<2>(lo), row_of<2>(hi));
      put(k + 3, row_of<3>(lo), row_of<3>(hi));
    }
    for (; k < k1; ++k) single(k);
  }
}

// ---------------------------------------------------------------------------------------------
// The kernel.
// ---------------------------------------------------------------------------------------------

/// Per-thread scratch of floats / bytes (grows, never shrinks).
template <class T>
T* scratch(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

class MatMulNBitsKernel final : public Kernel {
 public:
  explicit MatMulNBitsKernel(const KernelCreateInfo& info) : a_(read_attrs(info.node)) {
    const Node& node = info.node;
    t_ = info.input_dtype(0);
    has_zp_ = node.has_input(3);
    has_gidx_ = node.has_input(4);
    const Tensor* b = info.constant(1);
    const Tensor* s = info.constant(2);
    const Tensor* z = has_zp_ ? info.constant(3) : nullptr;
    const Tensor* g = has_gidx_ ? info.constant(4) : nullptr;
    const bool all_const = b && s && (!has_zp_ || z) && (!has_gidx_ || g);
    if (all_const) {
      const Tensor* bias = nullptr;  // checked at run time
      check_weights(node, a_, t_, *b, *s, z, g, bias);
      if (has_gidx_)
        gpacked_ = std::make_shared<PackedMatrix>(pack_b(false, a_.K, a_.N, dequant_gidx(*b, *s, z, *g).data(), a_.N));
      else
        packed_ = pack_weights(a_, *b, *s, z);
    }
    // accuracy_level 4 multiplies in int8 where ONNX Runtime's x86 kernels do: 4- and 8-bit
    // weights (2-bit in blocks of 32 to 128), uint8 or no zero points, no g_idx, and weights
    // that are constants (ONNX Runtime prepacks only those; others run in fp32).
    const bool eligible = a_.bits != 2 || (a_.bs >= 32 && a_.bs <= 128);
    int8_ = a_.level == 4 && eligible && packed_ && (!z || z->dtype() == DType::kUInt8);
  }

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& A = ctx.input(0);
    const Tensor& B = ctx.input(1);
    const Tensor& S = ctx.input(2);
    const Tensor* Z = ctx.optional_input(3);
    const Tensor* G = ctx.optional_input(4);
    const Tensor* bias_t = ctx.optional_input(5);
    if (A.dtype() != t_ || A.rank() == 0 || A.dim(A.rank() - 1) != a_.K)
      fail(ErrorCode::kInvalidArgument, node.label(), ": A (input 0) must be ", dtype_name(t_), " [..., ", a_.K, "], got ",
           dtype_name(A.dtype()), " ", A.shape().to_string());
    if ((Z != nullptr) != has_zp_ || (G != nullptr) != has_gidx_)
      fail(ErrorCode::kInvalidArgument, node.label(), ": optional inputs zero_points / g_idx must be tensors when given");
    if (!packed_ && !gpacked_) check_weights(node, a_, t_, B, S, Z, G, bias_t);
    else if (bias_t && (bias_t->dtype() != t_ || bias_t->rank() != 1 || bias_t->dim(0) != a_.N))
      fail(ErrorCode::kInvalidArgument, node.label(), ": bias (input 5) must be ", dtype_name(t_), " [", a_.N, "], got ",
           bias_t->shape().to_string());
    Tensor& Y = ctx.output(0);
    const int64_t M = A.numel() / a_.K, K = a_.K, N = a_.N;
    if (Y.numel() != M * N) fail(ErrorCode::kRuntime, node.label(), ": output has ", Y.numel(), " elements, expected ", M * N);
    if (M == 0) return;
    ThreadPool& pool = ctx.pool();

    // fp32 views of A, Y and bias.
    thread_local std::vector<float> a_buf, y_buf, bias_buf;
    const bool half = t_ == DType::kFloat16;
    const float* a = nullptr;
    float* y = nullptr;
    const float* bias = nullptr;
    if (half) {
      float* af = scratch(a_buf, M * K);
      const Float16* ah = A.data<Float16>();
      for (int64_t i = 0; i < M * K; ++i) af[i] = Float16::to_float(ah[i].bits);
      a = af;
      y = scratch(y_buf, M * N);
      if (bias_t) {
        float* bf = scratch(bias_buf, N);
        for (int64_t i = 0; i < N; ++i) bf[i] = Float16::to_float(bias_t->data<Float16>()[i].bits);
        bias = bf;
      }
    } else {
      a = A.data<float>();
      y = Y.data<float>();
      bias = bias_t ? bias_t->data<float>() : nullptr;
    }

    if (has_gidx_) {
      GemmEpilogue ep;
      ep.bias = bias;
      if (gpacked_) {
        sgemm_packed(nullptr, false, a, K, gpacked_.get(), false, nullptr, 0, M, N, K, 0.0f, y, N, &pool, &ep);
      } else {
        const std::vector<float> wf = dequant_gidx(B, S, Z, *G);
        sgemm(false, false, M, N, K, 1.0f, a, K, wf.data(), N, 0.0f, y, N, &pool, &ep);
      }
    } else {
      std::shared_ptr<Packed> now;
      const Packed& w = packed_ ? *packed_ : *(now = pack_weights(a_, B, S, Z));
      if (int8_)
        run_int8(w, a, M, y, bias, pool);
      else
        run_f32(w, a, M, y, bias, pool);
    }
    if (half) {
      Float16* yh = Y.data<Float16>();
      for (int64_t i = 0; i < M * N; ++i) yh[i].bits = Float16::from_float(y[i]);
    }
  }

 private:
  /// W as a K x N fp32 matrix, column k of B scaled with block g_idx[k].
  std::vector<float> dequant_gidx(const Tensor& b, const Tensor& s, const Tensor* z, const Tensor& g) const {
    std::vector<float> wf(static_cast<size_t>(a_.K * a_.N));
    const uint8_t* bd = b.data<uint8_t>();
    const int32_t* gi = g.data<int32_t>();
    for (int64_t n = 0; n < a_.N; ++n)
      for (int64_t k = 0; k < a_.K; ++k) {
        const int64_t blk = gi[k];
        const float q = static_cast<float>(q_at(bd, a_, n, k));
        wf[static_cast<size_t>(k * a_.N + n)] = (q - zp_at(z, a_, n, blk)) * scalar_at(s, n * a_.kb + blk);
      }
    return wf;
  }

  void run_f32(const Packed& w, const float* a, int64_t M, float* y, const float* bias, ThreadPool& pool) const {
    const int64_t K = a_.K, N = a_.N, kp = w.kp;
    if (M > kGemvRows) {
      auto packer = [&](int64_t k0, int64_t kc, int64_t c0, int64_t cols, float* dst) {
        if (w.nib)
          dequant_panels<true>(w, k0, kc, c0, cols, dst);
        else
          dequant_panels<false>(w, k0, kc, c0, cols, dst);
      };
      GemmEpilogue ep;
      ep.bias = bias;
      sgemm_b_packer(nullptr, a, K, BPacker(packer), M, N, K, y, N, &pool, &ep);
      return;
    }
    // Few rows: A zero padded to kp, and its sums per block.
    thread_local std::vector<float> pad_buf, sum_buf;
    float* ap = scratch(pad_buf, M * kp);
    float* as = scratch(sum_buf, M * w.kb);
    for (int64_t r = 0; r < M; ++r) {
      std::memcpy(ap + r * kp, a + r * K, static_cast<size_t>(K) * sizeof(float));
      std::fill(ap + r * kp + K, ap + (r + 1) * kp, 0.0f);
      for (int64_t b = 0; b < w.kb; ++b) {
        float sum = 0.0f;
        for (int64_t k = b * w.bs; k < (b + 1) * w.bs; ++k) sum += ap[r * kp + k];
        as[r * w.kb + b] = sum;
      }
    }
    parallel_range(pool, w.panels, kp * P * M, [&](int64_t p0, int64_t p1) {
      int64_t r = 0;
      for (; r + 2 <= M; r += 2) gemv_f32_rows<2>(w, ap + r * kp, kp, as + r * w.kb, p0, p1, y + r * N, N, bias);
      if (r < M) gemv_f32_rows<1>(w, ap + r * kp, kp, as + r * w.kb, p0, p1, y + r * N, N, bias);
    });
  }

  template <int R>
  static void gemv_f32_rows(const Packed& w, const float* a, int64_t lda, const float* asum, int64_t p0, int64_t p1, float* y,
                            int64_t ldy, const float* bias) {
    if (w.nib)
      gemv_f32<R, true>(w, a, lda, asum, p0, p1, y, ldy, bias);
    else
      gemv_f32<R, false>(w, a, lda, asum, p0, p1, y, ldy, bias);
  }

  void run_int8(const Packed& w, const float* a, int64_t M, float* y, const float* bias, ThreadPool& pool) const {
    const int64_t K = a_.K, N = a_.N, kp = w.kp, qbl = std::min<int64_t>(a_.bs, 256), nsub = kp / qbl;
    thread_local std::vector<int8_t> q_buf;
    thread_local std::vector<float> s_buf;
    thread_local std::vector<int32_t> sum_buf;
    int8_t* q = scratch(q_buf, M * kp);
    float* sc = scratch(s_buf, M * nsub);
    int32_t* qs = scratch(sum_buf, M * nsub);
    parallel_range(pool, M, kp, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) quantize_row(a + r * K, K, kp, qbl, q + r * kp, sc + r * nsub, qs + r * nsub);
    });
    const QuantA qa{q, sc, qs, kp, nsub, qbl};
    parallel_range(pool, w.panels, kp * P * M / 4, [&](int64_t p0, int64_t p1) {
      int64_t r = 0;
      for (; r + 4 <= M; r += 4) gemv_int8_rows<4>(w, qa, r, p0, p1, y, N, bias);
      for (; r < M; ++r) gemv_int8_rows<1>(w, qa, r, p0, p1, y, N, bias);
    });
  }

  template <int R>
  static void gemv_int8_rows(const Packed& w, const QuantA& qa, int64_t row0, int64_t p0, int64_t p1, float* y, int64_t ldy,
                             const float* bias) {
    if (w.nib)
      gemv_int8<R, true>(w, qa, row0, p0, p1, y, ldy, bias);
    else
      gemv_int8<R, false>(w, qa, row0, p0, p1, y, ldy, bias);
  }

  static constexpr int64_t kGemvRows = 4;  // up to this many rows of A: matrix-vector kernels

  Attrs a_;
  DType t_ = DType::kFloat;
  bool has_zp_ = false, has_gidx_ = false, int8_ = false;
  std::shared_ptr<const Packed> packed_;
  std::shared_ptr<const PackedMatrix> gpacked_;
};

std::unique_ptr<Kernel> make_matmul_nbits(const KernelCreateInfo& info) { return std::make_unique<MatMulNBitsKernel>(info); }

constexpr KernelDef kDefs[] = {
    {"com.microsoft", "MatMulNBits", 1, 1, {{0, type_mask({DType::kFloat, DType::kFloat16})}}, make_matmul_nbits},
};

}  // namespace

std::span<const KernelDef> matmul_nbits_kernels() { return kDefs; }

}  // namespace onyx::cpu
