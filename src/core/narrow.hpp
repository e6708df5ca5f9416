// The narrow element types: float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0), float4 (E2M1) and
// the 4- and 2-bit integers. In memory onyx keeps one value per byte: a float8 or float4 code,
// or the integer sign- or zero-extended; files pack the 4- and 2-bit ones (tensor_proto.cpp).
#pragma once

#include <cstdint>

#include "onyx/dtype.hpp"

namespace onyx {

/// Float8 / float4 types (their values are codes decoded by narrow_float_to_double).
bool dtype_is_narrow_float(DType t);
/// Bits per value of the packed integer and float4 types (4 or 2), else 0.
int packed_bits(DType t);

/// How a value becomes float8e8m0 (a power of two): to the next power up, down, or the nearest
/// (ties up). Cast's round_mode.
enum class E8M0Rounding { kUp, kDown, kNearest };

/// How a value becomes a narrow float (Cast's attributes, and its rules by opset).
struct NarrowCast {
  bool saturate = true;
  E8M0Rounding rounding = E8M0Rounding::kUp;
  /// Infinity to an FNUZ float8 with saturate: the largest finite value (Cast 24+), or NaN (19-23).
  bool fnuz_inf_saturates = true;
};

/// The value of `code` in narrow float type `t`.
double narrow_float_to_double(DType t, uint8_t code);
/// The code of `v` in narrow float type `t`: nearest, ties to even (E8M0: `how.rounding`); out of
/// range, saturated to the largest finite value when `how.saturate`, else infinity (E5M2) or NaN
/// (the others; float4, which has neither, always saturates and maps NaN to -0).
uint8_t narrow_float_from_double(DType t, double v, const NarrowCast& how = {});
/// Decoding table of a narrow float type (256 entries; 16 for float4), exact in float.
const float* narrow_float_table(DType t);

}  // namespace onyx
