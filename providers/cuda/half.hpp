// 16-bit floating-point storage for onyx's CUDA kernels: f16 (IEEE binary16) and bf16 (bfloat16)
// hold the bits; kernels load them into fp32 registers (to_f), compute in fp32 and round back on
// store (from_f, round to nearest even). Under nvcc the conversions are CUDA's intrinsics; compiled
// as plain C++ (the emulator, tests/unit/cuda_emu) they are software conversions that give the
// same bits as the hardware: NaN becomes the canonical quiet NaN 0x7fff, overflow goes to
// infinity, subnormals are kept. Plain types only, as launch.hpp.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#else
#include <cmath>
#include <cstring>
#endif

#include "launch.hpp"
#include "strided.hpp"  // ONYX_HD

namespace onyx::cuda {

/// IEEE half precision, stored as its bits.
struct f16 {
  uint16_t bits;
};
/// bfloat16 (the upper half of a float32), stored as its bits.
struct bf16 {
  uint16_t bits;
};

#ifdef __CUDACC__

ONYX_HD float to_f(f16 h) { return __half2float(__ushort_as_half(h.bits)); }
ONYX_HD float to_f(bf16 h) { return __bfloat162float(__ushort_as_bfloat16(h.bits)); }
ONYX_HD uint16_t f16_bits(float x) { return __half_as_ushort(__float2half_rn(x)); }
ONYX_HD uint16_t bf16_bits(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }

#else

inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float to_f(f16 h) {
  const uint32_t sign = (static_cast<uint32_t>(h.bits) & 0x8000u) << 16;
  const uint32_t e = (h.bits >> 10) & 0x1fu, m = h.bits & 0x3ffu;
  if (e == 0) {  // zero or subnormal: m * 2^-24, exact in float
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (e == 31) return bits_to_float(sign | 0x7f800000u | (m << 13));  // Inf, NaN (payload kept)
  return bits_to_float(sign | ((e + 112u) << 23) | (m << 13));
}
inline float to_f(bf16 h) { return bits_to_float(static_cast<uint32_t>(h.bits) << 16); }

inline uint16_t f16_bits(float x) {
  const uint32_t u = float_to_bits(x);
  const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fffu;                                    // NaN: canonical
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);     // >= 65520 rounds to Inf
  if (a < 0x38800000u) {                                                  // below 2^-14: subnormal
    // |x| * 2^24 is exact and below 1024; rounding it to an integer (ties to even) is the
    // subnormal's mantissa, and 1024 is the smallest normal's encoding.
    const float scaled = bits_to_float(a) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits, ties to
  // even; a carry moves into the exponent.
  const uint32_t r = a - (112u << 23);
  return static_cast<uint16_t>(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
}
inline uint16_t bf16_bits(float x) {
  const uint32_t u = float_to_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;  // NaN: canonical
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#endif

ONYX_HD float to_f(float x) { return x; }

/// Rounds an fp32 value to the storage type T (float, f16 or bf16).
template <class T>
ONYX_HD T from_f(float x);
template <>
ONYX_HD float from_f<float>(float x) {
  return x;
}
template <>
ONYX_HD f16 from_f<f16>(float x) {
  return f16{f16_bits(x)};
}
template <>
ONYX_HD bf16 from_f<bf16>(float x) {
  return bf16{bf16_bits(x)};
}

/// Element i of p as fp32, and the store of an fp32 value into element i.
template <class T>
ONYX_HD float ld(const T* p, int64_t i) {
  return to_f(p[i]);
}
template <class T>
ONYX_HD void st(T* p, int64_t i, float v) {
  p[i] = from_f<T>(v);
}

/// Calls f with a value of the storage type of `t` (float, f16, bf16; nothing for other types):
/// the math kernels are instantiated once per storage type, their op chosen at run time.
template <class F>
void by_float_type(Ty t, F&& f) {
  switch (t) {
    case Ty::kF32: f(float{}); break;
    case Ty::kF16: f(f16{}); break;
    case Ty::kBF16: f(bf16{}); break;
    default: break;
  }
}

}  // namespace onyx::cuda
