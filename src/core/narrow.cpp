#include "core/narrow.hpp"

#include <array>
#include <cmath>
#include <limits>

#include "core/common.hpp"

namespace onyx {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- float8 with a sign, exponent and mantissa (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ) ----

struct F8Fmt {
  int man;        // mantissa bits
  int bias;       // exponent bias
  bool fnuz;      // no infinities, no negative zero, NaN = 0x80
  bool inf;       // IEEE-like infinities (E5M2)
  uint8_t max_code;
  double max_value;
};
// E4M3FN: no infinities, NaN = S.1111.111, max 448. E5M2: IEEE-like, max 57344.
constexpr F8Fmt kF8Fmts[4] = {
    {3, 7, false, false, 0x7E, 448.0},     // float8e4m3fn
    {3, 8, true, false, 0x7F, 240.0},      // float8e4m3fnuz
    {2, 15, false, true, 0x7B, 57344.0},   // float8e5m2
    {2, 16, true, false, 0x7F, 57344.0},   // float8e5m2fnuz
};

const F8Fmt* f8_fmt(DType t) {
  switch (t) {
    case DType::kFloat8E4M3FN: return &kF8Fmts[0];
    case DType::kFloat8E4M3FNUZ: return &kF8Fmts[1];
    case DType::kFloat8E5M2: return &kF8Fmts[2];
    case DType::kFloat8E5M2FNUZ: return &kF8Fmts[3];
    default: return nullptr;
  }
}

double f8_decode(const F8Fmt& f, uint8_t c) {
  const bool neg = (c & 0x80) != 0;
  if (f.fnuz && c == 0x80) return kNaN;
  const int eb = 7 - f.man;
  const int e = (c >> f.man) & ((1 << eb) - 1);
  const int m = c & ((1 << f.man) - 1);
  if (!f.fnuz && !f.inf && (c & 0x7F) == 0x7F) return kNaN;
  if (f.inf && e == (1 << eb) - 1) {
    if (m != 0) return kNaN;
    return neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  const double v = e == 0 ? std::ldexp(static_cast<double>(m), 1 - f.bias - f.man)
                          : std::ldexp(static_cast<double>((1 << f.man) + m), e - f.bias - f.man);
  return neg ? -v : v;
}

uint8_t f8_encode(const F8Fmt& f, double v, bool saturate, bool fnuz_inf_saturates) {
  const uint8_t sign = std::signbit(v) ? 0x80 : 0;
  const uint8_t nan = f.fnuz ? 0x80 : static_cast<uint8_t>(sign | 0x7F);
  if (std::isnan(v)) return nan;
  if (std::isinf(v)) {  // saturated to the largest finite value, else infinity (E5M2) or NaN
    if (f.fnuz && !fnuz_inf_saturates) return 0x80;
    if (saturate) return static_cast<uint8_t>(sign | f.max_code);
    return f.inf ? static_cast<uint8_t>(sign | 0x7C) : nan;
  }
  const double a = std::fabs(v);
  if (a == 0) return f.fnuz ? 0 : sign;
  int e = 0;
  (void)std::frexp(a, &e);
  const int emin = 1 - f.bias;
  const int qe = std::max(e - 1, emin) - f.man;  // exponent of one unit in the last place
  const double q = std::nearbyint(std::ldexp(a, -qe));
  const double r = std::ldexp(q, qe);
  if (r > f.max_value) {
    if (saturate) return static_cast<uint8_t>(sign | f.max_code);
    return f.inf ? static_cast<uint8_t>(sign | 0x7C) : nan;
  }
  if (r == 0) return f.fnuz ? 0 : sign;
  (void)std::frexp(r, &e);
  const int E = e - 1;
  int code;
  if (E < emin) {
    code = static_cast<int>(std::ldexp(r, f.man - emin));  // subnormal: units of 2^(emin - man)
  } else {
    const int mant = static_cast<int>(std::ldexp(r, f.man - E)) - (1 << f.man);
    code = ((E + f.bias) << f.man) | mant;
  }
  return static_cast<uint8_t>(sign | code);
}

// ---- float4e2m1: S.EE.M, bias 1, no infinities or NaN: 0, 0.5, 1, 1.5, 2, 3, 4, 6 ----

constexpr double kF4Values[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};

double f4_decode(uint8_t c) {
  const double v = kF4Values[c & 7];
  return (c & 8) ? -v : v;
}

/// Nearest (ties to the even code); beyond 6 (infinity too) saturates; NaN becomes -0, which is
/// what the ONNX reference gives (float4 has no NaN).
uint8_t f4_encode(double v) {
  if (std::isnan(v)) return 0x8;
  const uint8_t sign = std::signbit(v) ? 0x8 : 0;
  const double a = std::fabs(v);
  int best = 7;
  for (int c = 0; c < 7; ++c) {
    const double mid = (kF4Values[c] + kF4Values[c + 1]) / 2;
    if (a < mid || (a == mid && (c & 1) == 0)) {
      best = c;
      break;
    }
  }
  return static_cast<uint8_t>(sign | best);
}

// ---- float8e8m0: an unsigned power of two 2^(code - 127); 0xFF is NaN ----

double e8m0_decode(uint8_t c) { return c == 0xFF ? kNaN : std::ldexp(1.0, static_cast<int>(c) - 127); }

uint8_t e8m0_encode(double v, bool saturate, E8M0Rounding rounding) {
  constexpr uint8_t kNan = 0xFF, kMax = 0xFE, kMin = 0x00;
  if (std::isnan(v) || (v < 0 && v != 0)) return kNan;  // negative values are unspecified: NaN
  if (std::isinf(v)) return saturate ? kMax : kNan;
  if (v == 0) return saturate ? kMin : kNan;
  int k = 0;
  const double f = std::frexp(v, &k);  // v = f 2^k, f in [0.5, 1): v in [2^(k-1), 2^k)
  int e = k - 1;
  if (f != 0.5) {
    if (rounding == E8M0Rounding::kUp) e = k;
    else if (rounding == E8M0Rounding::kNearest && f >= 0.75) e = k;
  }
  const int biased = e + 127;
  if (biased > 254) return saturate ? kMax : kNan;
  if (biased < 0) return saturate ? kMin : kNan;
  return static_cast<uint8_t>(biased);
}

}  // namespace

bool dtype_is_narrow_float(DType t) { return f8_fmt(t) || t == DType::kFloat4E2M1 || t == DType::kFloat8E8M0; }

int packed_bits(DType t) {
  switch (t) {
    case DType::kInt4:
    case DType::kUInt4:
    case DType::kFloat4E2M1: return 4;
    case DType::kInt2:
    case DType::kUInt2: return 2;
    default: return 0;
  }
}

double narrow_float_to_double(DType t, uint8_t code) {
  if (const F8Fmt* f = f8_fmt(t)) return f8_decode(*f, code);
  if (t == DType::kFloat4E2M1) return f4_decode(code);
  if (t == DType::kFloat8E8M0) return e8m0_decode(code);
  fail(ErrorCode::kInvalidArgument, "narrow_float_to_double: ", dtype_name(t), " is not a narrow float type");
}

uint8_t narrow_float_from_double(DType t, double v, const NarrowCast& how) {
  if (const F8Fmt* f = f8_fmt(t)) return f8_encode(*f, v, how.saturate, how.fnuz_inf_saturates);
  if (t == DType::kFloat4E2M1) return f4_encode(v);
  if (t == DType::kFloat8E8M0) return e8m0_encode(v, how.saturate, how.rounding);
  fail(ErrorCode::kInvalidArgument, "narrow_float_from_double: ", dtype_name(t), " is not a narrow float type");
}

const float* narrow_float_table(DType t) {
  static const auto tables = [] {
    // float8 x4, float4e2m1, float8e8m0
    std::array<std::array<float, 256>, 6> tab{};
    const DType types[6] = {DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2,
                            DType::kFloat8E5M2FNUZ, DType::kFloat4E2M1,   DType::kFloat8E8M0};
    for (int k = 0; k < 6; ++k)
      for (int c = 0; c < (types[k] == DType::kFloat4E2M1 ? 16 : 256); ++c)
        tab[k][c] = static_cast<float>(narrow_float_to_double(types[k], static_cast<uint8_t>(c)));
    return tab;
  }();
  switch (t) {
    case DType::kFloat8E4M3FN: return tables[0].data();
    case DType::kFloat8E4M3FNUZ: return tables[1].data();
    case DType::kFloat8E5M2: return tables[2].data();
    case DType::kFloat8E5M2FNUZ: return tables[3].data();
    case DType::kFloat4E2M1: return tables[4].data();
    case DType::kFloat8E8M0: return tables[5].data();
    default: fail(ErrorCode::kInvalidArgument, "narrow_float_table: ", dtype_name(t), " is not a narrow float type");
  }
}

}  // namespace onyx
