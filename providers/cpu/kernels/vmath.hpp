// Vectorised float32 math for the CPU kernels: exp, erf, sigmoid, GELU over arrays, written with
// GCC vector extensions: 16 lanes with AVX-512 (or SSE alone), 8 with AVX/AVX2, the register's
// width (16-lane vectors split in two on AVX2 spilled, and their selects were compiled into long
// sequences or element by element: exp, erf, sigmoid 7-12x slower than ORT's on a Zen 3).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

namespace onyx::cpu::vmath {

#if !defined(__AVX512F__) && defined(__AVX__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 16;
#endif
typedef float vf __attribute__((vector_size(kLanes * sizeof(float))));
typedef int32_t vi __attribute__((vector_size(kLanes * sizeof(int32_t))));

inline vf splat(float x) { return vf{} + x; }
inline vf load(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
inline vf vmin(vf a, vf b) { return a < b ? a : b; }
inline vf vmax(vf a, vf b) { return a > b ? a : b; }
inline vf vabs(vf a) { return a < 0 ? -a : a; }
/// The sum of v's lanes, in lane order.
inline float hsum(vf v) {
  float s = 0;
  for (int i = 0; i < kLanes; ++i) s += v[i];
  return s;
}

/// The larger of best and v per lane, a NaN in v winning and a NaN in best kept (max pooling's
/// running maximum). With AVX (8 lanes) as compares and a blend: the compiler would fuse the two
/// tests of the plain form into one mask and lower it element by element there.
inline vf max_nan(vf best, vf v) {
#if !defined(__AVX512F__) && defined(__AVX__)
  const __m256 b = reinterpret_cast<__m256>(best), x = reinterpret_cast<__m256>(v);
  const __m256 take = _mm256_or_ps(_mm256_cmp_ps(x, b, _CMP_GT_OQ), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  return reinterpret_cast<vf>(_mm256_blendv_ps(b, x, take));
#else
  return (v > best) | (v != v) ? v : best;
#endif
}

/// e^x, relative error about 2 ulp where the result is a normal float; +inf above 88.72, 0 below
/// -87.33 (results that would be denormal flush to zero).
inline vf exp(vf x) {
  const vf hi = splat(88.7228f), lo = splat(-87.3365f);
  const vi over = x > hi, under = x < lo;
  x = vmin(vmax(x, splat(-87.3365f)), hi);
  // x = n ln2 + r, |r| <= ln2 / 2.
  vf n = x * 1.44269504088896341f;
  n = n + (n >= 0 ? splat(0.5f) : splat(-0.5f));
  const vi ni = __builtin_convertvector(n, vi);
  n = __builtin_convertvector(ni, vf);
  vf r = x - n * 0.693359375f;  // ln2 split in two for accuracy
  r = r - n * -2.12194440e-4f;
  // e^r by a degree-6 polynomial (Taylor coefficients, accurate to < 1e-7 on the range).
  vf p = splat(1.0f / 720);
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // Scale by 2^n through the exponent bits.
  vi bits;
  std::memcpy(&bits, &p, sizeof bits);
  bits += ni << 23;
  vf y;
  std::memcpy(&y, &bits, sizeof y);
  y = over ? splat(INFINITY) : y;
  return under ? splat(0.0f) : y;
}

/// erf(x): a series for |x| <= 0.5, and 1 - poly(t) e^{-x^2} (t = 1/(1 + p|x|)) beyond; absolute
/// error below 2e-7 everywhere, relative error below 1e-6 near zero.
inline vf erf(vf x) {
  const vf ax = vabs(x);
  // Series: erf(x) = 2/sqrt(pi) * (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320 + x^13/9360).
  const vf x2 = x * x;
  vf s = splat(1.0f / 9360);
  s = s * x2 - 1.0f / 1320;
  s = s * x2 + 1.0f / 216;
  s = s * x2 - 1.0f / 42;
  s = s * x2 + 1.0f / 10;
  s = s * x2 - 1.0f / 3;
  s = s * x2 + 1.0f;
  const vf small = s * x * 1.12837916709551257f;
  // Tail (Abramowitz & Stegun 7.1.26 form).
  const vf t = 1.0f / (1.0f + 0.3275911f * ax);
  vf q = splat(1.061405429f);
  q = q * t - 1.453152027f;
  q = q * t + 1.421413741f;
  q = q * t - 0.284496736f;
  q = q * t + 0.254829592f;
  q = q * t;
  vf big = 1.0f - q * exp(-x2);
  big = x < 0 ? -big : big;
  return ax <= 0.5f ? small : big;
}

/// 1 / (1 + e^-x), without overflow or cancellation for large |x|.
inline vf sigmoid(vf x) {
  const vf e = exp(-vabs(x));
  const vf r = 1.0f / (1.0f + e);
  return x >= 0 ? r : e * r;
}

/// Square root per lane (correctly rounded, NaN below zero, as std::sqrt).
inline vf vsqrt(vf x) {
#if defined(__AVX512F__)
  return _mm512_maskz_sqrt_ps(0xffff, x);  // (the masked form: the plain one passes GCC 12 an undefined source it warns about)
#elif defined(__AVX__)
  return reinterpret_cast<vf>(_mm256_sqrt_ps(reinterpret_cast<__m256>(x)));
#else
  for (int l = 0; l < kLanes; ++l) x[l] = std::sqrt(x[l]);
  return x;
#endif
}

/// tanh(x): (1 - e^{-2|x|}) / (1 + e^{-2|x|}) with x's sign, and its Taylor series below
/// |x| = 0.1 (where the difference would cancel; the series' first omitted term is below 3e-11
/// relative there); relative error about 1e-6, +-1 past |x| = 9, NaN for NaN.
inline vf tanh(vf x) {
  const vf ax = vabs(x);
  const vf e = exp(-2.0f * ax);
  vf big = (1.0f - e) / (1.0f + e);
  big = x < 0 ? -big : big;
  const vf x2 = x * x;
  vf s = splat(-17.0f / 315);
  s = s * x2 + 2.0f / 15;
  s = s * x2 - 1.0f / 3;
  const vf small = x + x * x2 * s;
  const vf r = ax < 0.1f ? small : big;
  return x != x ? x : r;
}

#if !defined(__AVX512F__) && defined(__AVX2__)
/// Lanes [0, n) set.
inline __m256i lane_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif

/// The first n (0..kLanes) floats at p, zeros in the other lanes (reads nothing past p + n).
inline vf load_n(const float* p, int64_t n) {
#ifdef __AVX512F__
  return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1u), p);
#elif defined(__AVX2__)
  return reinterpret_cast<vf>(_mm256_maskload_ps(p, lane_mask(n)));
#else
  float buf[kLanes] = {};
  std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(float));
  return load(buf);
#endif
}

/// Stores the first n (0..kLanes) lanes of v at p (writes nothing past p + n).
inline void store_n(float* p, vf v, int64_t n) {
#ifdef __AVX512F__
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1u), v);
#elif defined(__AVX2__)
  _mm256_maskstore_ps(p, lane_mask(n), reinterpret_cast<__m256>(v));
#else
  float buf[kLanes];
  store(buf, v);
  std::memcpy(p, buf, static_cast<size_t>(n) * sizeof(float));
#endif
}

/// Transposes the kLanes x kLanes block m (m[i][j] becomes m[j][i]) element by element: the
/// definition, and the fallback where there are no AVX-512 shuffles.
inline void transpose_scalar(vf (&m)[kLanes]) {
  float t[kLanes][kLanes];
  for (int i = 0; i < kLanes; ++i) store(t[i], m[i]);
  for (int i = 0; i < kLanes; ++i) {
    float r[kLanes];
    for (int j = 0; j < kLanes; ++j) r[j] = t[j][i];
    m[i] = load(r);
  }
}

#if !defined(__AVX512F__) && defined(__AVX__)
/// Same as transpose_scalar where there is AVX but no AVX-512 (8 lanes), in registers:
/// unpacks, 64-bit shuffles, 128-bit lane swaps.
inline void transpose(vf (&m)[kLanes]) {
  static_assert(kLanes == 8);
  __m256 r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i) r[i] = reinterpret_cast<__m256>(m[i]);
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int c = 0; c < 4; ++c) {
    m[c] = reinterpret_cast<vf>(_mm256_permute2f128_ps(u[c], u[4 + c], 0x20));
    m[4 + c] = reinterpret_cast<vf>(_mm256_permute2f128_ps(u[c], u[4 + c], 0x31));
  }
}
#else
/// Same as transpose_scalar, in four rounds of two-source shuffles (32-bit pairs, 64-bit pairs,
/// then 128-bit quarters twice), which the compiler maps to the target's permutes.
inline void transpose(vf (&m)[kLanes]) {
  static_assert(kLanes == 16);
  const vi lo32 = {0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29};
  const vi hi32 = lo32 + 2;
  const vi lo64 = {0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29};
  const vi hi64 = lo64 + 2;
  const vi even128 = {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27};  // quarters a0 a2 b0 b2
  const vi odd128 = even128 + 4;                                                 // quarters a1 a3 b1 b3
  vf t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = __builtin_shuffle(m[2 * i], m[2 * i + 1], lo32);
    t[2 * i + 1] = __builtin_shuffle(m[2 * i], m[2 * i + 1], hi32);
  }
  // u[4i + c], quarter k: column 4k + c of rows 4i .. 4i + 3.
  for (int i = 0; i < 4; ++i) {
    u[4 * i] = __builtin_shuffle(t[4 * i], t[4 * i + 2], lo64);
    u[4 * i + 1] = __builtin_shuffle(t[4 * i], t[4 * i + 2], hi64);
    u[4 * i + 2] = __builtin_shuffle(t[4 * i + 1], t[4 * i + 3], lo64);
    u[4 * i + 3] = __builtin_shuffle(t[4 * i + 1], t[4 * i + 3], hi64);
  }
  for (int c = 0; c < 4; ++c) {
    t[c] = __builtin_shuffle(u[c], u[4 + c], even128);
    t[4 + c] = __builtin_shuffle(u[c], u[4 + c], odd128);
    t[8 + c] = __builtin_shuffle(u[8 + c], u[12 + c], even128);
    t[12 + c] = __builtin_shuffle(u[8 + c], u[12 + c], odd128);
  }
  for (int c = 0; c < 4; ++c) {
    m[c] = __builtin_shuffle(t[c], t[8 + c], even128);
    m[8 + c] = __builtin_shuffle(t[c], t[8 + c], odd128);
    m[4 + c] = __builtin_shuffle(t[4 + c], t[12 + c], even128);
    m[12 + c] = __builtin_shuffle(t[4 + c], t[12 + c], odd128);
  }
}
#endif

/// Applies f to n floats (vector body, scalar-safe tail through a padded block).
template <class F>
inline void map(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(y + i, f(load(x + i)));
  if (i < n) {
    float buf[kLanes] = {};
    std::memcpy(buf, x + i, (n - i) * sizeof(float));
    store(buf, f(load(buf)));
    std::memcpy(y + i, buf, (n - i) * sizeof(float));
  }
}

/// y = (x - mean) * inv_std * gamma [+ beta] over one row of n values (a normalisation's affine
/// step: LayerNormalization, the skip and simplified normalisations).
inline void normalize_row(const float* x, float* y, int64_t n, float mean, float inv_std, const float* gamma,
                          const float* beta) {
  const vf m = splat(mean), is = splat(inv_std);
  for (int64_t j = 0; j < n; j += kLanes) {
    const int64_t c = n - j < kLanes ? n - j : kLanes;
    vf v = (load_n(x + j, c) - m) * is * load_n(gamma + j, c);
    if (beta) v += load_n(beta + j, c);
    store_n(y + j, v, c);
  }
}

}  // namespace onyx::cpu::vmath
