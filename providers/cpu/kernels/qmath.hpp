// Vectorised helpers for the 8- and 16-bit quantized kernels (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, the com.microsoft QLinear* ops): integers to and from float lanes at
// vmath's register width, rounding half to even, saturation, byte-table lookups and byte sums.
// Every intrinsic path has a portable form beside it (AVX-512, AVX2, SSE2 or none).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/vmath.hpp"
#include "onyx/dtype.hpp"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace onyx {
class ThreadPool;
}

namespace onyx::cpu {

/// DynamicQuantizeLinear's uint8 quantization of n floats: the scale spans the values' range
/// with 0 in it (NaNs skipped) over 255 steps, the zero point maps 0 exactly; y (when not null)
/// gets saturate(round_half_even(x / scale) + zero_point), all zeros when the scale is 0
/// (kernels/quant.cpp; DynamicQuantizeMatMul quantizes its A with it too).
struct DynamicQuant {
  float scale = 0.0f;
  int32_t zero_point = 0;
};
DynamicQuant dynamic_quantize_u8(const float* x, int64_t n, uint8_t* y, ThreadPool& pool);

}  // namespace onyx::cpu

namespace onyx::cpu::qmath {

using vmath::kLanes;
using vmath::vf;
using vmath::vi;

#if defined(__AVX512F__)
/// Every lane. The AVX-512 conversions below are written in their zero-masked forms with it:
/// the plain forms pass GCC 12 an undefined source it warns about (-Wmaybe-uninitialized).
inline constexpr __mmask16 kAll = 0xffff;
#endif

/// kLanes integers of type S at p, widened to int32 lanes. (GCC 12 lowers the generic
/// __builtin_convertvector between these widths element by element, hence the intrinsics.)
template <class S>
inline vi load_int(const S* p) {
  static_assert(sizeof(S) <= 2);
#if defined(__AVX512F__)
  if constexpr (sizeof(S) == 1) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return reinterpret_cast<vi>(std::is_signed_v<S> ? _mm512_maskz_cvtepi8_epi32(kAll, b) : _mm512_maskz_cvtepu8_epi32(kAll, b));
  } else {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return reinterpret_cast<vi>(std::is_signed_v<S> ? _mm512_maskz_cvtepi16_epi32(kAll, b) : _mm512_maskz_cvtepu16_epi32(kAll, b));
  }
#elif defined(__AVX2__)
  if constexpr (sizeof(S) == 1) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return reinterpret_cast<vi>(std::is_signed_v<S> ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b));
  } else {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return reinterpret_cast<vi>(std::is_signed_v<S> ? _mm256_cvtepi16_epi32(b) : _mm256_cvtepu16_epi32(b));
  }
#else
  vi r;
  for (int l = 0; l < kLanes; ++l) r[l] = p[l];
  return r;
#endif
}

/// Narrows int32 lanes (already in S's range) to S and stores kLanes of them at p.
template <class S>
inline void store_int(S* p, vi v) {
  static_assert(sizeof(S) <= 2);
#if defined(__AVX512F__)
  if constexpr (sizeof(S) == 1)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_maskz_cvtepi32_epi8(kAll, reinterpret_cast<__m512i>(v)));
  else
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_maskz_cvtepi32_epi16(kAll, reinterpret_cast<__m512i>(v)));
#elif defined(__AVX2__)
  // In-range values: the saturating packs do not change them.
  const __m256i w = reinterpret_cast<__m256i>(v);
  const __m128i lo = _mm256_castsi256_si128(w), hi = _mm256_extracti128_si256(w, 1);
  if constexpr (sizeof(S) == 1) {
    const __m128i h = _mm_packs_epi32(lo, hi);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), std::is_signed_v<S> ? _mm_packs_epi16(h, h) : _mm_packus_epi16(h, h));
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), std::is_signed_v<S> ? _mm_packs_epi32(lo, hi) : _mm_packus_epi32(lo, hi));
  }
#else
  for (int l = 0; l < kLanes; ++l) p[l] = static_cast<S>(v[l]);
#endif
}

/// The n (< kLanes) integers of type S at p in the low lanes, zeros above (reads nothing past p + n).
template <class S>
inline vi load_int_n(const S* p, int64_t n) {
  S buf[kLanes] = {};
  std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(S));
  return load_int(buf);
}

/// Stores the low n (< kLanes) lanes of v, narrowed to S, at p (writes nothing past p + n).
template <class S>
inline void store_int_n(S* p, vi v, int64_t n) {
  S buf[kLanes];
  store_int(buf, v);
  std::memcpy(p, buf, static_cast<size_t>(n) * sizeof(S));
}

/// Hides v's value from the optimiser so that a product is rounded before it is added: with
/// FMA, GCC contracts a * b + c into one fused operation (even in ISO mode), which rounds
/// differently. A no-op where there is no FMA to contract to.
inline vf rounded(vf v) {
#if defined(__FMA__) || defined(__AVX512F__)
  asm("" : "+v"(v));
#endif
  return v;
}
inline float rounded(float v) {
#if defined(__FMA__) || defined(__AVX512F__)
  asm("" : "+v"(v));
#endif
  return v;
}

/// a * b + c, fused (one rounding) where the target has FMA, else a rounded product plus c.
inline vf fmadd(vf a, vf b, vf c) {
#if defined(__AVX512F__)
  return _mm512_fmadd_ps(a, b, c);
#elif defined(__FMA__)
  return reinterpret_cast<vf>(
      _mm256_fmadd_ps(reinterpret_cast<__m256>(a), reinterpret_cast<__m256>(b), reinterpret_cast<__m256>(c)));
#else
  return rounded(a * b) + c;
#endif
}

/// x limited to [lo, hi]; NaN lanes become lo.
inline vf clamp(vf x, vf lo, vf hi) {
  x = x > lo ? x : lo;
  return x < hi ? x : hi;
}

/// Round half to even (the default rounding mode), per lane, to int32. The portable form adds
/// and subtracts 1.5 * 2^23, exact for |x| < 2^22: callers clamp to a quantized range first.
inline vi round_even(vf x) {
#if defined(__AVX512F__)
  return reinterpret_cast<vi>(_mm512_maskz_cvtps_epi32(kAll, x));
#elif defined(__AVX__)
  return reinterpret_cast<vi>(_mm256_cvtps_epi32(reinterpret_cast<__m256>(x)));
#else
  const vf magic = vmath::splat(12582912.0f);
  return __builtin_convertvector((x + magic) - magic, vi);
#endif
}

/// Scalar round half to even (clamped input, as round_even).
inline int32_t round_even(float x) { return static_cast<int32_t>(std::nearbyint(x)); }

/// Smallest and largest value of the quantized type S, as float.
template <class S>
inline constexpr float kMin = static_cast<float>(std::numeric_limits<S>::lowest());
template <class S>
inline constexpr float kMax = static_cast<float>(std::numeric_limits<S>::max());

/// kLanes int32 lanes as floats.
inline vf to_float(vi v) { return __builtin_convertvector(v, vf); }

/// Stores the kLanes (or the first n) lanes of t, each saturate(round_half_even(t)), as S.
template <class S>
inline void store_rounded(S* p, vf t, int64_t n = kLanes) {
  const vi r = round_even(clamp(t, vmath::splat(kMin<S>), vmath::splat(kMax<S>)));
  if (n == kLanes)
    store_int(p, r);
  else
    store_int_n(p, r, n);
}

// ---- the sum of two quantized tensors (QLinearAdd, and a convolution's residual sum) ----
//
// ONNX Runtime computes C = saturate(round(fixed + A * (sa / sc) + B * (sb / sc))) with
// fixed = zc - (sa / sc * za + sb / sc * zb) in float; on an FMA machine as
// fma(A, ra, fma(B, rb, fixed)), else with each product rounded and added left to right. Both the
// com.microsoft QLinearAdd kernel and the fused QLinearConvAdd (a convolution whose output goes
// only into such a sum) compute it here, so that the fused form gives the same bytes.

/// `fixed`, zc - (r_row * z_row + r_other * z_other), the row operand's term first (the order
/// ONNX Runtime adds them): where there is FMA, its compiler fuses that first product with the
/// sum (measured against its results), else both products are rounded.
inline float qadd_fixed(float r_row, int32_t z_row, float r_other, int32_t z_other, int32_t zc) {
  const float other = rounded(r_other * static_cast<float>(z_other));
#if defined(__FMA__) || defined(__AVX512F__)
  return static_cast<float>(zc) - std::fma(r_row, static_cast<float>(z_row), other);
#else
  return static_cast<float>(zc) - (rounded(r_row * static_cast<float>(z_row)) + other);
#endif
}

/// c = saturate(round(a * ra + b * rb + fixed)) over n elements (c may be a or b: each element
/// is read before it is written).
template <class S>
inline void qadd_rows(const S* a, const S* b, S* c, int64_t n, float ra, float rb, float fixed) {
  const vf vra = vmath::splat(ra), vrb = vmath::splat(rb), vfix = vmath::splat(fixed);
  auto one = [&](vi x, vi y) {
#if defined(__FMA__) || defined(__AVX512F__)
    return fmadd(to_float(x), vra, fmadd(to_float(y), vrb, vfix));
#else
    return (vfix + rounded(to_float(x) * vra)) + rounded(to_float(y) * vrb);
#endif
  };
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store_rounded(c + i, one(load_int(a + i), load_int(b + i)));
  if (i < n) store_rounded(c + i, one(load_int_n(a + i, n - i), load_int_n(b + i, n - i)), n - i);
}

/// y[i] = table[x[i]] for n bytes (a 256-entry table indexed by the byte's bit pattern).
inline void lookup_bytes(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) {
  int64_t i = 0;
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
  // Four 64-byte table quarters: two 128-entry permutes, the index's top bit picks between them.
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  auto one = [&](__m512i idx) {
    const __m512i lo = _mm512_permutex2var_epi8(t0, idx, t1);
    const __m512i hi = _mm512_permutex2var_epi8(t2, idx, t3);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi);
  };
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(y + i, one(_mm512_loadu_si512(x + i)));
  if (i < n) {
    const __mmask64 m = (~__mmask64(0)) >> (64 - (n - i));
    _mm512_mask_storeu_epi8(y + i, m, one(_mm512_maskz_loadu_epi8(m, x + i)));
  }
  return;
#endif
  for (; i + 4 <= n; i += 4) {
    const uint8_t a = table[x[i]], b = table[x[i + 1]], c = table[x[i + 2]], d = table[x[i + 3]];
    y[i] = a;
    y[i + 1] = b;
    y[i + 2] = c;
    y[i + 3] = d;
  }
  for (; i < n; ++i) y[i] = table[x[i]];
}

/// Sum of n bytes read as uint8 (Signed: as int8).
template <bool Signed>
inline int64_t sum_bytes(const uint8_t* p, int64_t n) {
  int64_t i = 0, s = 0;
#if defined(__SSE2__)
  // Sums of absolute differences against zero add bytes into 64-bit lanes; int8 values are
  // biased by 128 (x ^ 0x80) and the bias taken off at the end.
  const uint8_t bias = Signed ? 0x80 : 0;
#if defined(__AVX512BW__)
  {
    const __m512i b = _mm512_set1_epi8(static_cast<char>(bias)), z = _mm512_setzero_si512();
    __m512i acc = z;
    for (; i + 64 <= n; i += 64) acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_xor_si512(_mm512_loadu_si512(p + i), b), z));
    int64_t l[8];
    _mm512_storeu_si512(l, acc);
    for (int64_t v : l) s += v;
  }
#elif defined(__AVX2__)
  {
    const __m256i b = _mm256_set1_epi8(static_cast<char>(bias)), z = _mm256_setzero_si256();
    __m256i acc = z;
    for (; i + 32 <= n; i += 32)
      acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)), b), z));
    int64_t l[4];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(l), acc);
    s += l[0] + l[1] + l[2] + l[3];
  }
#endif
  {
    const __m128i b = _mm_set1_epi8(static_cast<char>(bias)), z = _mm_setzero_si128();
    __m128i acc = z;
    for (; i + 16 <= n; i += 16)
      acc = _mm_add_epi64(acc, _mm_sad_epu8(_mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)), b), z));
    int64_t l[2];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(l), acc);
    s += l[0] + l[1];
  }
  if constexpr (Signed) s -= 128 * i;
#endif
  for (; i < n; ++i) s += Signed ? static_cast<int64_t>(static_cast<int8_t>(p[i])) : static_cast<int64_t>(p[i]);
  return s;
}

// ---- QuantizeLinear / DequantizeLinear rows (float <-> 8/16-bit integers, one scale) ----

/// kLanes floats from x (float or Float16; F16C/AVX-512 conversions where available).
inline vf load_float(const float* x) { return vmath::load(x); }
inline vf load_float(const Float16* x) {
#if defined(__AVX512F__)
  return _mm512_maskz_cvtph_ps(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
#elif defined(__F16C__) && defined(__AVX__)
  return reinterpret_cast<vf>(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x))));
#else
  float buf[kLanes];
  for (int l = 0; l < kLanes; ++l) buf[l] = Float16::to_float(x[l].bits);
  return vmath::load(buf);
#endif
}

/// Stores kLanes floats at y (float, or Float16 rounded to nearest even).
inline void store_float(float* y, vf v) { vmath::store(y, v); }
inline void store_float(Float16* y, vf v) {
#if defined(__AVX512F__)
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y),
                      _mm512_maskz_cvtps_ph(kAll, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(__F16C__) && defined(__AVX__)
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y),
                   _mm256_cvtps_ph(reinterpret_cast<__m256>(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#else
  float buf[kLanes];
  vmath::store(buf, v);
  for (int l = 0; l < kLanes; ++l) y[l].bits = Float16::from_float(buf[l]);
#endif
}

/// y[i] = saturate(round_half_even(x[i] / scale) + zp) for n values, NaN quotients giving zp
/// (QuantizeLinear's definition, the division in float). X is float or Float16; S an 8- or
/// 16-bit integer type; zp an integer value of S.
template <class X, class S>
inline void quantize_row(const X* x, S* y, int64_t n, float scale, float zp) {
  const vf vs = vmath::splat(scale), lo = vmath::splat(kMin<S> - zp), hi = vmath::splat(kMax<S> - zp), zero{};
  const vi vz = __builtin_convertvector(vmath::splat(zp), vi);
  auto one = [&](vf v) {
    vf q = v / vs;
    q = q == q ? q : zero;
    return round_even(clamp(q, lo, hi)) + vz;
  };
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store_int(y + i, one(load_float(x + i)));
  if (i < n) {
    X buf[kLanes] = {};
    std::memcpy(buf, x + i, static_cast<size_t>(n - i) * sizeof(X));
    store_int_n(y + i, one(load_float(buf)), n - i);
  }
}

/// y[i] = (x[i] - zp) * scale for n values: the exact integer difference, then one rounding.
/// S an 8- or 16-bit integer type; Y float or Float16.
template <class S, class Y>
inline void dequantize_row(const S* x, Y* y, int64_t n, float scale, int32_t zp) {
  const vf vs = vmath::splat(scale);
  const vi vz = vi{} + zp;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store_float(y + i, __builtin_convertvector(load_int(x + i) - vz, vf) * vs);
  if (i < n) {
    Y buf[kLanes];
    store_float(buf, __builtin_convertvector(load_int_n(x + i, n - i) - vz, vf) * vs);
    std::memcpy(y + i, buf, static_cast<size_t>(n - i) * sizeof(Y));
  }
}

/// Folds n floats into [lo, hi] (lo = min(lo, x[i]), hi = max(hi, x[i]); NaNs are skipped, as
/// by std::min / std::max with the running value first).
inline void min_max(const float* x, int64_t n, float& lo, float& hi) {
  vf vlo = vmath::splat(lo), vhi = vmath::splat(hi);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const vf v = vmath::load(x + i);
    vlo = v < vlo ? v : vlo;
    vhi = vhi < v ? v : vhi;
  }
  for (int l = 0; l < kLanes; ++l) {
    lo = std::min(lo, vlo[l]);
    hi = std::max(hi, vhi[l]);
  }
  for (; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
}

}  // namespace onyx::cpu::qmath
