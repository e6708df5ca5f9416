// The 8-bit integer GEMM (qgemm.hpp): packing, the micro-kernels per ISA, the epilogue, and the
// blocking and threading around them.
//
// Sums are exact. With A's values as the kernel reads them, v (uint8, or int8 + 128 where VNNI
// needs an unsigned operand, or A minus its zero point already where A is packed to int16), and
// B's stored values s with residual zero point d (qgemm.hpp):
//   sum (v - za)(s - d) = sum v s - za colsum(s) - d rowsum(v) + kp za d,
// so the kernel computes sum v s and the epilogue adds a per-column constant (and, only with a
// residual zero point, d times the row's sum).
#include "kernels/qgemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/common.hpp"
#include "kernels/common.hpp"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace onyx::cpu {

namespace {

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define ONYX_QGEMM_VNNI512 1
constexpr int64_t kVec = 16;  // int32 lanes of a register
#elif defined(__AVXVNNI__) && defined(__AVX2__)
#define ONYX_QGEMM_AVXVNNI 1
constexpr int64_t kVec = 8;
#elif defined(__AVX2__)
#define ONYX_QGEMM_AVX2 1
constexpr int64_t kVec = 8;
#else
constexpr int64_t kVec = 8;
#endif
/// VNNI reads A's bytes in place; the int16 paths pack each tile of A to int16 first.
constexpr bool kPacksA = kQGroup == 2;
// Rows of a micro-tile: 6 with VNNI (its dot products accumulate in place: 6 x 4 registers of 32,
// or 6 x 2 of 16), 4 for the int16 kernels (each vpmaddwd needs a register before its add: 6 x 2
// accumulators spilled).
constexpr int kMR = kQGroup == 4 ? 6 : 4;
constexpr int64_t kMaxNV = kQPanel / kVec;

inline int32_t load_quad(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

/// The rows and k-quads of one micro-tile: row pointers (rows past the tile repeat its last row,
/// computed and dropped), or A packed to int16 (kPacksA).
struct TileA {
  const uint8_t* rows[kMR];
  const int64_t* quad_off;  // null: 4 q
  const int16_t* packed;    // kPacksA: [kMR][kp]
};

// ---- micro-kernels: acc[r][v] = sum over the kp rows of A(r, kk) * B(kk, 16 v + lane) ----

#if defined(ONYX_QGEMM_VNNI512)
using AccV = __m512i;
template <int NV, bool kFlip, bool kPlain>
__attribute__((always_inline)) inline void micro(const TileA& t, int64_t kp, const int8_t* bp, AccV (&acc)[kMR][kMaxNV]) {
#pragma GCC unroll 8
  for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_si512();
  const __m512i flip = _mm512_set1_epi32(static_cast<int32_t>(0x80808080u));
  const int64_t nq = kp / 4;
  const uint8_t* rows[kMR];
#pragma GCC unroll 8
  for (int r = 0; r < kMR; ++r) rows[r] = t.rows[r];
  for (int64_t q = 0; q < nq; ++q) {
    const int64_t o = kPlain ? 4 * q : t.quad_off[q];
    __m512i b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b[v] = _mm512_loadu_si512(bp + (q * NV + v) * 64);
#pragma GCC unroll 8
    for (int r = 0; r < kMR; ++r) {
      __m512i a = _mm512_set1_epi32(load_quad(rows[r] + o));
      if constexpr (kFlip) a = _mm512_xor_si512(a, flip);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], a, b[v]);
    }
  }
}
#elif defined(ONYX_QGEMM_AVXVNNI)
using AccV = __m256i;
template <int NV, bool kFlip, bool kPlain>
__attribute__((always_inline)) inline void micro(const TileA& t, int64_t kp, const int8_t* bp, AccV (&acc)[kMR][kMaxNV]) {
#pragma GCC unroll 8
  for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_si256();
  const __m256i flip = _mm256_set1_epi32(static_cast<int32_t>(0x80808080u));
  const int64_t nq = kp / 4;
  for (int64_t q = 0; q < nq; ++q) {
    const int64_t o = kPlain ? 4 * q : t.quad_off[q];
    __m256i b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + (q * NV + v) * 32));
#pragma GCC unroll 8
    for (int r = 0; r < kMR; ++r) {
      __m256i a = _mm256_set1_epi32(load_quad(t.rows[r] + o));
      if constexpr (kFlip) a = _mm256_xor_si256(a, flip);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_dpbusd_avx_epi32(acc[r][v], a, b[v]);
    }
  }
}
#elif defined(ONYX_QGEMM_AVX2)
using AccV = __m256i;
template <int NV, bool kFlip, bool kPlain>
__attribute__((always_inline)) inline void micro(const TileA& t, int64_t kp, const int16_t* bp, AccV (&acc)[kMR][kMaxNV]) {
#pragma GCC unroll 8
  for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_si256();
  const int64_t np = kp / 2;
  for (int64_t p = 0; p < np; ++p) {
    __m256i b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + (p * NV + v) * 16));
#pragma GCC unroll 8
    for (int r = 0; r < kMR; ++r) {
      int32_t pair;
      std::memcpy(&pair, t.packed + r * kp + 2 * p, 4);
      const __m256i a = _mm256_set1_epi32(pair);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(a, b[v]));
    }
  }
}
#else
struct AccV {
  int32_t x[kVec];
};
template <int NV, bool kFlip, bool kPlain>
inline void micro(const TileA& t, int64_t kp, const int16_t* bp, AccV (&acc)[kMR][kMaxNV]) {
  for (int r = 0; r < kMR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = AccV{};
  const int64_t np = kp / 2;
  for (int64_t p = 0; p < np; ++p)
    for (int r = 0; r < kMR; ++r) {
      const int32_t a0 = t.packed[r * kp + 2 * p], a1 = t.packed[r * kp + 2 * p + 1];
      for (int v = 0; v < NV; ++v)
        for (int64_t l = 0; l < kVec; ++l) {
          const int16_t* bb = bp + ((p * NV + v) * kVec + l) * 2;
          acc[r][v].x[l] += a0 * bb[0] + a1 * bb[1];
        }
    }
}
#endif

// ---- the epilogue, one register of kVec columns at a time ----

struct EpiArgs {
  const QGemmOut* out;
  const int32_t* corr;    // per column: bias_i - za colsum + kp za d
  const int32_t* d;       // residual zero point per column, or null
  const int32_t* rowsum;  // per tile row (with d)
  /// kQuant8: every acc * scale is far inside int32 (|x| < 2^30), so the saturating packs may do
  /// the clamping (packed_quant8_tile).
  bool packs_saturate = false;
};

#if defined(ONYX_QGEMM_VNNI512)
// (The conversions, min and max in their zero-masked forms: the plain ones pass GCC 12 an
// undefined source it warns about.)
inline void epilogue(const EpiArgs& e, AccV acc, int64_t i, int64_t j, int64_t cols, int rr) {
  const __mmask16 mask = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
  __m512i s = _mm512_add_epi32(acc, _mm512_maskz_loadu_epi32(mask, e.corr + j));
  if (e.d) s = _mm512_sub_epi32(s, _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(mask, e.d + j), _mm512_set1_epi32(e.rowsum[rr])));
  const QGemmOut& o = *e.out;
  switch (o.kind) {
    case QGemmOut::Kind::kInt32:
      _mm512_mask_storeu_epi32(static_cast<int32_t*>(o.c) + i * o.ldc + j, mask, s);
      return;
    case QGemmOut::Kind::kFloat: {
      __m512 f = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(mask, s), _mm512_maskz_loadu_ps(mask, o.scale + j));
      if (o.row_scale) f = _mm512_mul_ps(f, _mm512_set1_ps(o.row_scale[i]));
      if (o.bias_f) f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(mask, o.bias_f + j));
      _mm512_mask_storeu_ps(static_cast<float*>(o.c) + i * o.ldc + j, mask, f);
      return;
    }
    case QGemmOut::Kind::kQuant8: {
      __m512 f = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(mask, s), _mm512_maskz_loadu_ps(mask, o.scale + j));
      f = _mm512_maskz_max_ps(mask, f, _mm512_set1_ps(static_cast<float>(o.lo - o.out_zp)));
      f = _mm512_maskz_min_ps(mask, f, _mm512_set1_ps(static_cast<float>(o.hi - o.out_zp)));
      const __m512i q = _mm512_add_epi32(_mm512_maskz_cvtps_epi32(mask, f), _mm512_set1_epi32(o.out_zp));
      _mm512_mask_cvtepi32_storeu_epi8(static_cast<uint8_t*>(o.c) + i * o.ldc + j, mask, q);
      return;
    }
  }
}
#elif defined(ONYX_QGEMM_AVXVNNI) || defined(ONYX_QGEMM_AVX2)
inline __m256i mask8(int64_t cols) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(std::min<int64_t>(cols, 8))), idx);
}
inline void epilogue(const EpiArgs& e, AccV acc, int64_t i, int64_t j, int64_t cols, int rr) {
  const __m256i mask = mask8(cols);
  __m256i s = _mm256_add_epi32(acc, _mm256_maskload_epi32(e.corr + j, mask));
  if (e.d) s = _mm256_sub_epi32(s, _mm256_mullo_epi32(_mm256_maskload_epi32(e.d + j, mask), _mm256_set1_epi32(e.rowsum[rr])));
  const QGemmOut& o = *e.out;
  switch (o.kind) {
    case QGemmOut::Kind::kInt32:
      _mm256_maskstore_epi32(static_cast<int32_t*>(o.c) + i * o.ldc + j, mask, s);
      return;
    case QGemmOut::Kind::kFloat: {
      __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_maskload_ps(o.scale + j, mask));
      if (o.row_scale) f = _mm256_mul_ps(f, _mm256_set1_ps(o.row_scale[i]));
      if (o.bias_f) f = _mm256_add_ps(f, _mm256_maskload_ps(o.bias_f + j, mask));
      _mm256_maskstore_ps(static_cast<float*>(o.c) + i * o.ldc + j, mask, f);
      return;
    }
    case QGemmOut::Kind::kQuant8: {
      __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_maskload_ps(o.scale + j, mask));
      f = _mm256_min_ps(_mm256_max_ps(f, _mm256_set1_ps(static_cast<float>(o.lo - o.out_zp))),
                        _mm256_set1_ps(static_cast<float>(o.hi - o.out_zp)));
      const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(f), _mm256_set1_epi32(o.out_zp));
      // 8 int32 in [lo, hi] to bytes: pack to int16, then to 8-bit (values already in range).
      const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      const __m128i b = o.out_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
      uint8_t* dst = static_cast<uint8_t*>(o.c) + i * o.ldc + j;
      if (cols >= 8) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), b);
      } else {
        uint8_t tmp[16];
        _mm_storeu_si128(reinterpret_cast<__m128i*>(tmp), b);
        std::memcpy(dst, tmp, static_cast<size_t>(cols));
      }
      return;
    }
  }
}
#else
inline void epilogue(const EpiArgs& e, const AccV& acc, int64_t i, int64_t j, int64_t cols, int rr) {
  const QGemmOut& o = *e.out;
  for (int64_t l = 0; l < std::min<int64_t>(cols, kVec); ++l) {
    const int64_t jj = j + l;
    int32_t s = static_cast<int32_t>(static_cast<uint32_t>(acc.x[l]) + static_cast<uint32_t>(e.corr[jj]));
    if (e.d) s -= e.d[jj] * e.rowsum[rr];
    switch (o.kind) {
      case QGemmOut::Kind::kInt32: static_cast<int32_t*>(o.c)[i * o.ldc + jj] = s; break;
      case QGemmOut::Kind::kFloat: {
        float f = static_cast<float>(s) * o.scale[jj];
        if (o.row_scale) f *= o.row_scale[i];
        if (o.bias_f) f += o.bias_f[jj];
        static_cast<float*>(o.c)[i * o.ldc + jj] = f;
        break;
      }
      case QGemmOut::Kind::kQuant8: {
        float f = static_cast<float>(s) * o.scale[jj];
        f = std::min(std::max(f, static_cast<float>(o.lo - o.out_zp)), static_cast<float>(o.hi - o.out_zp));
        const int32_t q = static_cast<int32_t>(std::nearbyint(f)) + o.out_zp;
        static_cast<uint8_t*>(o.c)[i * o.ldc + jj] = static_cast<uint8_t>(q);
        break;
      }
    }
  }
}
#endif

#if defined(ONYX_QGEMM_VNNI512) || defined(ONYX_QGEMM_AVXVNNI)
using BElem = int8_t;
#else
using BElem = int16_t;
#endif

/// One micro-tile: `rows` valid rows from i0, the panel's `pcols` columns from j0 (NV registers).
#if defined(ONYX_QGEMM_VNNI512)
/// The requantising epilogue of a whole tile, the column registers' constants (mask, correction,
/// multiplier) loaded once for all its rows: with a short k (a 1x1 convolution over 16 to 32
/// channels) the epilogue is most of a tile's work.
template <int NV>
__attribute__((always_inline)) inline void quant8_tile(const EpiArgs& e, AccV (&acc)[kMR][kMaxNV], int64_t i0, int rows,
                                                       int64_t j0, int64_t n) {
  const QGemmOut& o = *e.out;
  __mmask16 mask[NV];
  __m512i corr[NV];
  __m512 scale[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const int64_t cols = n - (j0 + v * kVec);
    mask[v] = cols >= 16 ? __mmask16(0xFFFF) : cols <= 0 ? __mmask16(0) : __mmask16((1u << cols) - 1);
    corr[v] = _mm512_maskz_loadu_epi32(mask[v], e.corr + j0 + v * kVec);
    scale[v] = _mm512_maskz_loadu_ps(mask[v], o.scale + j0 + v * kVec);
  }
  const __m512 lo = _mm512_set1_ps(static_cast<float>(o.lo - o.out_zp)), hi = _mm512_set1_ps(static_cast<float>(o.hi - o.out_zp));
  const __m512i zp = _mm512_set1_epi32(o.out_zp);
#pragma GCC unroll 8
  for (int r = 0; r < kMR; ++r) {
    if (r >= rows) break;
    uint8_t* c = static_cast<uint8_t*>(o.c) + (i0 + r) * o.ldc + j0;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      __m512 f = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_add_epi32(acc[r][v], corr[v])), scale[v]);
      f = _mm512_maskz_min_ps(0xFFFF, _mm512_maskz_max_ps(0xFFFF, f, lo), hi);
      const __m512i q = _mm512_add_epi32(_mm512_maskz_cvtps_epi32(0xFFFF, f), zp);
      _mm512_mask_cvtepi32_storeu_epi8(c + v * kVec, mask[v], q);
    }
  }
}
#endif

#if defined(ONYX_QGEMM_AVXVNNI) || defined(ONYX_QGEMM_AVX2)
/// The requantising epilogue of a tile on 256-bit registers (as quant8_tile): column constants
/// once, then each row's registers converted, clamped, packed to bytes and stored.
template <int NV>
__attribute__((always_inline)) inline void quant8_tile(const EpiArgs& e, AccV (&acc)[kMR][kMaxNV], int64_t i0, int rows,
                                                       int64_t j0, int64_t n) {
  const QGemmOut& o = *e.out;
  __m256i corr[NV];
  __m256 scale[NV];
  int64_t cols[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    cols[v] = std::clamp<int64_t>(n - (j0 + v * kVec), 0, 8);
    const __m256i mask = mask8(cols[v]);
    corr[v] = _mm256_maskload_epi32(e.corr + j0 + v * kVec, mask);
    scale[v] = _mm256_maskload_ps(o.scale + j0 + v * kVec, mask);
  }
  const __m256 lo = _mm256_set1_ps(static_cast<float>(o.lo - o.out_zp)), hi = _mm256_set1_ps(static_cast<float>(o.hi - o.out_zp));
  const __m256i zp = _mm256_set1_epi32(o.out_zp);
#pragma GCC unroll 8
  for (int r = 0; r < kMR; ++r) {
    if (r >= rows) break;
    uint8_t* c = static_cast<uint8_t*>(o.c) + (i0 + r) * o.ldc + j0;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(acc[r][v], corr[v])), scale[v]);
      f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
      const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(f), zp);
      const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      const __m128i b = o.out_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
      if (cols[v] == 8) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(c + v * kVec), b);
      } else if (cols[v] > 0) {
        uint8_t tmp[16];
        _mm_storeu_si128(reinterpret_cast<__m128i*>(tmp), b);
        std::memcpy(c + v * kVec, tmp, static_cast<size_t>(cols[v]));
      }
    }
  }
}
#endif

#if defined(ONYX_QGEMM_VNNI512)
/// quant8_tile for a whole panel of 64 columns, four registers a row, when the scaled sums fit
/// int32 (EpiArgs::packs_saturate): each register converted to int32 (rounded half to even), the
/// four packed to int16 with saturation, the zero point added with saturation, packed to bytes
/// with saturation (the type's range), and a narrower clamp applied to the bytes; the packs work
/// within 128-bit lanes, so one dword permutation restores the column order. About 23
/// instructions per 64 outputs where quant8_tile takes 32.
__attribute__((always_inline)) inline void packed_quant8_tile(const EpiArgs& e, AccV (&acc)[kMR][kMaxNV], int64_t i0, int rows,
                                                              int64_t j0) {
  const QGemmOut& o = *e.out;
  __m512i corr[4];
  __m512 scale[4];
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v) {
    corr[v] = _mm512_loadu_si512(e.corr + j0 + v * kVec);
    scale[v] = _mm512_loadu_ps(o.scale + j0 + v * kVec);
  }
  const __m512i zp = _mm512_set1_epi16(static_cast<int16_t>(o.out_zp));
  // Lane L of the packed bytes holds dword L of each register in turn: dword d of the output
  // (columns 4d..4d+3) is dword 4 (d % 4) + d / 4 of the packed vector.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const bool narrow = o.out_signed ? (o.lo > -128 || o.hi < 127) : (o.lo > 0 || o.hi < 255);
  const __m512i lo = _mm512_set1_epi8(static_cast<char>(o.lo)), hi = _mm512_set1_epi8(static_cast<char>(o.hi));
#pragma GCC unroll 8
  for (int r = 0; r < kMR; ++r) {
    if (r >= rows) break;
    __m512i q[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      const __m512 f = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_add_epi32(acc[r][v], corr[v])), scale[v]);
      q[v] = _mm512_maskz_cvtps_epi32(0xFFFF, f);
    }
    const __m512i w0 = _mm512_adds_epi16(_mm512_packs_epi32(q[0], q[1]), zp);
    const __m512i w1 = _mm512_adds_epi16(_mm512_packs_epi32(q[2], q[3]), zp);
    __m512i b = o.out_signed ? _mm512_packs_epi16(w0, w1) : _mm512_packus_epi16(w0, w1);
    if (narrow) b = o.out_signed ? _mm512_min_epi8(_mm512_max_epi8(b, lo), hi) : _mm512_min_epu8(_mm512_max_epu8(b, lo), hi);
    _mm512_storeu_si512(static_cast<uint8_t*>(o.c) + (i0 + r) * o.ldc + j0, _mm512_maskz_permutexvar_epi32(0xFFFF, order, b));
  }
}
#endif

template <int NV, bool kFlip, bool kPlain>
void tile(const TileA& t, int64_t kp, const BElem* bp, const EpiArgs& e, int64_t i0, int rows, int64_t j0, int64_t n) {
  AccV acc[kMR][kMaxNV];
  micro<NV, kFlip, kPlain>(t, kp, bp, acc);
#if defined(ONYX_QGEMM_VNNI512)
  if constexpr (NV == 4) {
    if (e.packs_saturate && !e.d && j0 + 64 <= n) {
      packed_quant8_tile(e, acc, i0, rows, j0);
      return;
    }
  }
#endif
#if defined(ONYX_QGEMM_VNNI512) || defined(ONYX_QGEMM_AVXVNNI) || defined(ONYX_QGEMM_AVX2)
  if (e.out->kind == QGemmOut::Kind::kQuant8 && !e.d) {
    quant8_tile<NV>(e, acc, i0, rows, j0, n);
    return;
  }
#endif
#pragma GCC unroll 8
  for (int r = 0; r < kMR; ++r) {
    if (r >= rows) break;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const int64_t j = j0 + v * kVec;
      if (j >= n) break;
      epilogue(e, acc[r][v], i0 + r, j, n - j, r);
    }
  }
}

using TileFn = void (*)(const TileA&, int64_t, const BElem*, const EpiArgs&, int64_t, int, int64_t, int64_t);

template <bool kFlip, bool kPlain>
TileFn tile_for(int64_t nv) {
  static_assert(kMaxNV >= 1 && kMaxNV <= 4);
  switch (nv) {
    case 1: return tile<1, kFlip, kPlain>;
    case 2: if constexpr (kMaxNV >= 2) return tile<2, kFlip, kPlain>; break;
    case 3: if constexpr (kMaxNV >= 3) return tile<3, kFlip, kPlain>; break;
    case 4: if constexpr (kMaxNV >= 4) return tile<4, kFlip, kPlain>; break;
    default: break;
  }
  fail(ErrorCode::kRuntime, "qgemm: no kernel for ", nv, " registers of columns");
}

TileFn pick_tile(bool flip, bool plain, int64_t nv) {
  if (flip) return plain ? tile_for<true, true>(nv) : tile_for<true, false>(nv);
  return plain ? tile_for<false, true>(nv) : tile_for<false, false>(nv);
}

/// One row of A for the int16 kernels: its kp values (quad by quad, read as A reads them) minus
/// the zero point, as int16.
inline void pack_a_row(const uint8_t* row, const int64_t* quad_off, int64_t kp, bool is_signed, int32_t zp, int16_t* dst) {
#if defined(__SSE4_1__)
  const __m128i z = _mm_set1_epi16(static_cast<int16_t>(zp));
  for (int64_t q = 0; q < kp / 4; ++q) {
    const __m128i b = _mm_cvtsi32_si128(load_quad(row + (quad_off ? quad_off[q] : 4 * q)));
    const __m128i w = _mm_sub_epi16(is_signed ? _mm_cvtepi8_epi16(b) : _mm_cvtepu8_epi16(b), z);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + 4 * q), w);
  }
#else
  for (int64_t q = 0; q < kp / 4; ++q) {
    const uint8_t* p = row + (quad_off ? quad_off[q] : 4 * q);
    for (int e = 0; e < 4; ++e)
      dst[4 * q + e] = static_cast<int16_t>((is_signed ? static_cast<int32_t>(static_cast<int8_t>(p[e])) : p[e]) - zp);
  }
#endif
}

/// How many runs of whole panels to split n columns (`panels` panels, the last one narrower) into
/// for `threads` threads taking them in turn: the count, up to 8 per thread, whose busiest thread
/// has the fewest columns (20 panels on 2 threads: 2 runs of 10, where 6 runs of 4 left 12 panels
/// to one thread and 8 to the other; 160 columns: 3 runs of 64, 64 and 32 columns).
int64_t balanced_column_runs(int64_t panels, int64_t n, int threads) {
  if (threads == 1) return 1;
  int64_t best = 1, best_load = INT64_MAX;
  for (int64_t k = 1; k <= std::min<int64_t>(panels, 8 * threads); ++k) {
    const int64_t pps = (panels + k - 1) / k;
    if ((panels + pps - 1) / pps != k) continue;  // (the same runs as a smaller k)
    const int64_t w = pps * kQPanel, last = n - (k - 1) * w, rounds = k / threads, rest = k % threads;
    const int64_t load = rest == 0 ? rounds * w : rest == 1 ? rounds * w + last : (rounds + 1) * w;
    if (load < best_load) best_load = load, best = k;
  }
  return best;
}

}  // namespace

int64_t QPackedB::panel_cols(int64_t p) const {
  const int64_t left = n_ - p * kQPanel;
  return std::min(kQPanel, (left + kVec - 1) / kVec * kVec);
}

QPackedB qpack_b(const void* b, bool b_unsigned, int64_t k, int64_t n, int64_t row_stride, int64_t col_stride,
                 const int32_t* zp, int64_t zp_count) {
  QPackedB pk;
  pk.k_ = k;
  pk.n_ = n;
  pk.kp_ = (k + 3) / 4 * 4;
  pk.elem_ = sizeof(BElem);
  const int64_t panels = (n + kQPanel - 1) / kQPanel;
  const int64_t bytes = std::max<int64_t>(1, panels * kQPanel * pk.kp_ * pk.elem_);
  void* mem = std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64));
  if (!mem) fail(ErrorCode::kRuntime, "qgemm: cannot allocate ", bytes, " bytes of packed weights");
  std::memset(mem, 0, static_cast<size_t>(bytes));
  pk.data_ = std::shared_ptr<void>(mem, [](void* p) { std::free(p); });
  pk.col_sums_.assign(static_cast<size_t>(n), 0);
  pk.d_.assign(static_cast<size_t>(n), 0);
  const auto* b8 = static_cast<const uint8_t*>(b);
  auto value = [&](int64_t kk, int64_t j) -> int32_t {
    const uint8_t raw = b8[kk * row_stride + j * col_stride];
    return b_unsigned ? static_cast<int32_t>(raw) : static_cast<int32_t>(static_cast<int8_t>(raw));
  };
  auto zp_of = [&](int64_t j) -> int32_t { return zp_count == 0 ? 0 : zp[zp_count == 1 ? 0 : j]; };
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t pc = pk.panel_cols(p), j0 = p * kQPanel;
    auto* dst = reinterpret_cast<BElem*>(static_cast<char*>(mem) + pk.panel_offset(p));
    for (int64_t c = 0; c < pc && j0 + c < n; ++c) {
      const int64_t j = j0 + c;
      int32_t d;
      if constexpr (kQGroup == 4) {
        // int8 storage: an int8 B as it is, a uint8 B minus 128; the zero point stays as d.
        d = zp_of(j) - (b_unsigned ? 128 : 0);
      } else {
        d = 0;  // int16 storage takes the zero point off exactly
      }
      int32_t sum = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const int32_t s = kQGroup == 4 ? value(kk, j) - (b_unsigned ? 128 : 0) : value(kk, j) - zp_of(j);
        dst[((kk / kQGroup) * pc + c) * kQGroup + kk % kQGroup] = static_cast<BElem>(s);
        sum += s;
      }
      pk.col_sums_[static_cast<size_t>(j)] = sum;
      pk.d_[static_cast<size_t>(j)] = d;
      pk.has_d_ |= d != 0;
    }
  }
  return pk;
}

void qgemm(const QGemmA& a, const QPackedB& b, int64_t m, const QGemmOut& out, ThreadPool* pool) {
  const int64_t n = b.n(), kp = b.kp();
  if (m <= 0 || n <= 0) return;
  // A plain matrix whose k is not a multiple of 4: its last quad would read past each row (and
  // past the buffer on the last), so the rows are copied, padded with the zero point.
  QGemmA av = a;
  const bool pad_a = !a.row_off && !a.quad_off && b.k() % 4 != 0;
  uint8_t* padded = nullptr;
  int32_t* corr = nullptr;
  carve(Workspace::kQGemm, [&](Carver& c) {
    corr = c.take<int32_t>(n);
    padded = pad_a ? c.take<uint8_t>(m * kp) : nullptr;
  });
  if (pad_a) {
    std::memset(padded, static_cast<uint8_t>(a.zero_point), static_cast<size_t>(m * kp));
    for (int64_t i = 0; i < m; ++i) std::memcpy(padded + i * kp, a.base + i * a.lda, static_cast<size_t>(b.k()));
    av.base = padded;
    av.lda = kp;
  }
  // VNNI multiplies unsigned bytes: int8 A is read with its sign bit flipped (A + 128).
  const bool flip = !kPacksA && a.is_signed;
  const int32_t za = kPacksA ? 0 : a.zero_point + (flip ? 128 : 0);
  const int32_t* d = b.residual_zp();
  // Whether every requantised value is far inside int32 before rounding: |acc + corr| is at most
  // kp 255 255 (|A - za|, |B - zb| <= 255) plus the bias, times the largest |scale|.
  // (Each loop without a branch on the optional pointers: one with such a branch inside ran 4x
  // slower, a large share of a product with few rows.)
  const int32_t* col_sums = b.col_sums();
  const int32_t* bias_i = out.bias_i;
  for (int64_t j = 0; j < n; ++j) corr[j] = static_cast<int32_t>(-int64_t{za} * col_sums[j]);
  if (bias_i)
    for (int64_t j = 0; j < n; ++j) corr[j] = static_cast<int32_t>(int64_t{corr[j]} + bias_i[j]);
  if (d && za != 0)
    for (int64_t j = 0; j < n; ++j) corr[j] = static_cast<int32_t>(int64_t{corr[j]} + kp * int64_t{za} * d[j]);
  double most = 0.0;
  if (out.kind == QGemmOut::Kind::kQuant8)
    for (int64_t j = 0; j < n; ++j)
      most = std::max(most, (static_cast<double>(kp) * 65025.0 + std::fabs(bias_i ? bias_i[j] : 0.0)) * std::fabs(static_cast<double>(out.scale[j])));
  const bool packs_saturate = out.kind == QGemmOut::Kind::kQuant8 && most < 1073741824.0;  // 2^30 (NaN: false)
  const bool plain = !av.row_off && !av.quad_off;
  const int64_t panels = (n + kQPanel - 1) / kQPanel;
  // Blocks of panels whose B fits in about 256 KiB of L2, rows in chunks for the threads.
  const int64_t panel_bytes = kQPanel * kp * static_cast<int64_t>(sizeof(BElem));
  const int64_t block = std::clamp<int64_t>((int64_t{256} << 10) / std::max<int64_t>(1, panel_bytes), 1, panels);
  const int64_t tiles = (m + kMR - 1) / kMR;
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t blocks = (panels + block - 1) / block;
  // Every chunk of rows reads all of B. Where all of A is small beside B (a prompt's or a
  // sentence's 128 rows through a 768 x 3072 weight), one chunk takes every row and the threads
  // split the columns: B is read once (in chunks of rows, a thread read all of it for every 12
  // of its rows, and on 2 threads a BERT encoder's dynamic int8 products ran 1.5x faster than on
  // one). Else chunks of rows, and with few rows the columns split too.
  const int64_t a_bytes = m * kp, b_bytes = panels * panel_bytes;
  const bool all_rows = a_bytes <= (int64_t{256} << 10) && b_bytes >= a_bytes;
  const int64_t chunk_tiles =
      all_rows ? tiles : std::max<int64_t>(1, std::min<int64_t>(32, tiles / (4 * threads)));
  const int64_t chunks = (tiles + chunk_tiles - 1) / chunk_tiles;
  const int64_t col_split = all_rows ? balanced_column_runs(panels, n, threads)
                            : chunks >= 2 * threads ? 1
                                                    : std::min<int64_t>(blocks * block, 2 * threads);
  const int64_t panels_per_split = (panels + col_split - 1) / col_split;
  const auto* bdata = static_cast<const BElem*>(b.data());
  // The step after the product (QGemmOut::after_block) runs on each tile as it is written where
  // the rows are wide (a ResNet block's 256 to 2048 channels: a tile's 6 rows of 64 columns stay
  // in L1, and its whole output would not stay in L2); on narrow rows (MobileNetV2's 24 to 160
  // channels) a call per tile costs more than it saves, and it runs on each block instead.
  const bool after_each_tile = out.after_block && n >= 256;

  auto task = [&](int64_t t0, int64_t t1) {
    int16_t* apack = nullptr;
    int32_t* rowsum = nullptr;
    carve(Workspace::kQGemmTile, [&](Carver& c) {
      apack = kPacksA ? c.take<int16_t>(kMR * kp) : nullptr;
      rowsum = c.take<int32_t>(kMR);
    });
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t ch = t % chunks, sp = t / chunks;
      const int64_t tile0 = ch * chunk_tiles, tile1 = std::min(tiles, tile0 + chunk_tiles);
      const int64_t p_lo = sp * panels_per_split, p_hi = std::min(panels, p_lo + panels_per_split);
      for (int64_t pb0 = p_lo; pb0 < p_hi; pb0 += block) {
        const int64_t pb1 = std::min(p_hi, pb0 + block);
        for (int64_t ti = tile0; ti < tile1; ++ti) {
          const int64_t i0 = ti * kMR;
          const int rows = static_cast<int>(std::min<int64_t>(kMR, m - i0));
          TileA ta{};
          ta.quad_off = av.quad_off;
          for (int r = 0; r < kMR; ++r) {
            const int64_t i = i0 + std::min(r, rows - 1);
            ta.rows[r] = av.base + (av.row_off ? av.row_off[i] : i * av.lda);
          }
          auto byte_at = [&](int r, int64_t kk) -> int32_t {
            const uint8_t raw = ta.rows[r][(av.quad_off ? av.quad_off[kk / 4] : kk / 4 * 4) + kk % 4];
            return a.is_signed ? static_cast<int32_t>(static_cast<int8_t>(raw)) : static_cast<int32_t>(raw);
          };
          if constexpr (kPacksA) {
            for (int r = 0; r < kMR; ++r) pack_a_row(ta.rows[r], av.quad_off, kp, a.is_signed, a.zero_point, apack + r * kp);
            ta.packed = apack;
          }
          if (d)
            for (int r = 0; r < kMR; ++r) {
              int32_t s = 0;
              for (int64_t kk = 0; kk < kp; ++kk) s += byte_at(r, kk) + (flip ? 128 : 0);
              rowsum[r] = s;
            }
          const EpiArgs e{&out, corr, d, rowsum, packs_saturate};
          for (int64_t p = pb0; p < pb1; ++p) {
            const int64_t pc = b.panel_cols(p);
            const TileFn fn = pick_tile(flip, plain, pc / kVec);
            fn(ta, kp, reinterpret_cast<const BElem*>(reinterpret_cast<const char*>(bdata) + b.panel_offset(p)), e, i0, rows,
               p * kQPanel, n);
            if (after_each_tile) out.after_block(out.after_block_arg, i0, rows, p * kQPanel, std::min(pc, n - p * kQPanel));
          }
        }
        if (out.after_block && !after_each_tile) {  // this chunk of rows by this block of panels, written
          const int64_t i0 = tile0 * kMR, j0 = pb0 * kQPanel;
          out.after_block(out.after_block_arg, i0, std::min(m, tile1 * kMR) - i0, j0, std::min(n, pb1 * kQPanel) - j0);
        }
      }
    }
  };
  const int64_t ntasks = chunks * col_split;
  if (!pool || threads == 1 || ntasks == 1 || m * n * kp < (int64_t{1} << 16))
    task(0, ntasks);
  else
    pool->parallel_for(ntasks, 1, task);
}

}  // namespace onyx::cpu
