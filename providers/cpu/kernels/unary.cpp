// CPU kernels: unary math and activations, Clip, Shrink, IsNaN/IsInf, Not, Cast/CastLike.
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "core/narrow.hpp"
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/vmath.hpp"

namespace onyx::cpu {
namespace {

enum class UOp {
  kAbs, kNeg, kExp, kLog, kSqrt, kReciprocal, kFloor, kCeil, kRound, kSign, kSin, kCos, kTan, kAsin, kAcos, kAtan,
  kSinh, kCosh, kAsinh, kAcosh, kAtanh, kErf, kSigmoid, kTanh, kRelu, kLeakyRelu, kElu, kSelu, kCelu, kHardSigmoid,
  kHardSwish, kSoftplus, kSoftsign, kThresholdedRelu, kGelu, kGeluTanh, kMish, kShrink, kNot, kBitwiseNot, kSwish
};

struct UnaryState {
  UOp op;
  float alpha = 0, beta = 0, gamma = 0;
};

template <class A>
__attribute__((always_inline)) inline A unary_apply(const UnaryState& s, A x) {
  if constexpr (std::is_floating_point_v<A>) {
    switch (s.op) {
      case UOp::kAbs: return std::fabs(x);
      case UOp::kNeg: return -x;
      case UOp::kExp: return std::exp(x);
      case UOp::kLog: return std::log(x);
      case UOp::kSqrt: return std::sqrt(x);
      case UOp::kReciprocal: return A(1) / x;
      case UOp::kFloor: return std::floor(x);
      case UOp::kCeil: return std::ceil(x);
      case UOp::kRound: return std::nearbyint(x);
      case UOp::kSign: return x > 0 ? A(1) : x < 0 ? A(-1) : A(0);
      case UOp::kSin: return std::sin(x);
      case UOp::kCos: return std::cos(x);
      case UOp::kTan: return std::tan(x);
      case UOp::kAsin: return std::asin(x);
      case UOp::kAcos: return std::acos(x);
      case UOp::kAtan: return std::atan(x);
      case UOp::kSinh: return std::sinh(x);
      case UOp::kCosh: return std::cosh(x);
      case UOp::kAsinh: return std::asinh(x);
      case UOp::kAcosh: return std::acosh(x);
      case UOp::kAtanh: return std::atanh(x);
      case UOp::kErf: return std::erf(x);
      case UOp::kSigmoid: return x >= 0 ? A(1) / (A(1) + std::exp(-x)) : std::exp(x) / (A(1) + std::exp(x));
      case UOp::kTanh: return std::tanh(x);
      case UOp::kRelu: return x > 0 ? x : A(0);
      case UOp::kLeakyRelu: return x >= 0 ? x : x * A(s.alpha);
      case UOp::kElu: return x >= 0 ? x : A(s.alpha) * (std::exp(x) - A(1));
      case UOp::kSelu: return x > 0 ? A(s.gamma) * x : A(s.gamma) * (A(s.alpha) * std::exp(x) - A(s.alpha));
      case UOp::kCelu: return std::max(A(0), x) + std::min(A(0), A(s.alpha) * (std::exp(x / A(s.alpha)) - A(1)));
      case UOp::kHardSigmoid: return std::max(A(0), std::min(A(1), A(s.alpha) * x + A(s.beta)));
      case UOp::kHardSwish: return x * std::max(A(0), std::min(A(1), x / A(6) + A(0.5)));
      case UOp::kSoftplus: return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
      case UOp::kSoftsign: return x / (A(1) + std::fabs(x));
      case UOp::kThresholdedRelu: return x > A(s.alpha) ? x : A(0);
      case UOp::kGelu: return A(0.5) * x * (A(1) + std::erf(x / std::sqrt(A(2))));
      case UOp::kGeluTanh: {
        const A c = std::sqrt(A(2) / A(M_PI));
        return A(0.5) * x * (A(1) + std::tanh(c * (x + A(0.044715) * x * x * x)));
      }
      case UOp::kSwish: return x / (A(1) + std::exp(-A(s.alpha) * x));  // x * sigmoid(alpha x)
      case UOp::kMish: {
        const A sp = x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
        return x * std::tanh(sp);
      }
      case UOp::kShrink: return x < -A(s.alpha) ? x + A(s.beta) : x > A(s.alpha) ? x - A(s.beta) : A(0);
      default: return x;
    }
  } else {
    switch (s.op) {
      case UOp::kAbs:
        if constexpr (std::is_signed_v<A>) return x < 0 ? static_cast<A>(-x) : x;
        return x;
      case UOp::kNeg: return static_cast<A>(-x);
      case UOp::kSign:
        if constexpr (std::is_signed_v<A>) return x > 0 ? A(1) : x < 0 ? A(-1) : A(0);
        return x > 0 ? A(1) : A(0);
      case UOp::kRelu: return x > 0 ? x : A(0);
      case UOp::kShrink: {
        const double v = static_cast<double>(x);
        return static_cast<A>(v < -s.alpha ? v + s.beta : v > s.alpha ? v - s.beta : 0.0);
      }
      case UOp::kNot: return !x;
      case UOp::kBitwiseNot:
        if constexpr (std::is_same_v<A, bool>) return !x;  // not registered for bool; keeps the template total
        else return static_cast<A>(~x);
      case UOp::kFloor:
      case UOp::kCeil:
      case UOp::kRound: return x;
      default: return x;
    }
  }
}

/// float32 ops with a vectorised implementation (vmath); false if `op` has none.
bool unary_float_fast(const UnaryState& s, const float* x, float* y, int64_t n, ThreadPool& pool) {
  using vmath::vf;
  auto run = [&](auto f) {
    parallel_range(pool, n, 8, [&](int64_t b, int64_t e) { vmath::map(x + b, y + b, e - b, f); });
    return true;
  };
  // std::min / std::max as the scalar forms compute them (the same result for NaN).
  auto smin = [](vf a, vf b) { return b < a ? b : a; };
  auto smax = [](vf a, vf b) { return a < b ? b : a; };
  const float alpha = s.alpha, beta = s.beta;
  switch (s.op) {
    case UOp::kAbs:
      return run([](vf v) {
        vmath::vi bits;
        std::memcpy(&bits, &v, sizeof bits);
        bits &= 0x7fffffff;
        std::memcpy(&v, &bits, sizeof v);
        return v;
      });
    case UOp::kLeakyRelu:
      return run([=](vf v) { return v >= 0 ? v : v * alpha; });
    case UOp::kThresholdedRelu:
      return run([=](vf v) { return v > alpha ? v : vf{}; });
    case UOp::kHardSigmoid:
      return run([=](vf v) { return smax(vf{}, smin(vmath::splat(1.0f), alpha * v + beta)); });
    case UOp::kHardSwish:
      return run([=](vf v) { return v * smax(vf{}, smin(vmath::splat(1.0f), v / 6.0f + 0.5f)); });
    case UOp::kSoftsign:
      return run([](vf v) { return v / (1.0f + vmath::vabs(v)); });
    case UOp::kExp: return run([](vf v) { return vmath::exp(v); });
    case UOp::kErf: return run([](vf v) { return vmath::erf(v); });
    case UOp::kSigmoid: return run([](vf v) { return vmath::sigmoid(v); });
    case UOp::kSqrt:
      return run([](vf v) { return vmath::vsqrt(v); });
    case UOp::kTanh:
      return run([](vf v) { return vmath::tanh(v); });
    case UOp::kGelu: return run([](vf v) { return 0.5f * v * (1.0f + vmath::erf(v * 0.70710678118654752f)); });
    case UOp::kRelu: return run([](vf v) { return vmath::vmax(v, vf{}); });
    default: return false;
  }
}

/// Calls f.template operator()<op>() with the run-time op as a constant.
template <class F, int... I>
void with_op(UOp op, F& f, std::integer_sequence<int, I...>) {
  ((static_cast<int>(op) == I ? (f.template operator()<static_cast<UOp>(I)>(), true) : false) || ...);
}

template <class T>
void unary_typed(const UnaryState& s, const Tensor& in, Tensor& out, ThreadPool& pool) {
  const T* x = static_cast<const T*>(in.raw_data());
  T* y = static_cast<T*>(out.raw_data());
  const int64_t n = in.numel();
  if constexpr (std::is_same_v<T, float>)
    if (unary_float_fast(s, x, y, n, pool)) return;
  auto body = [&](int64_t b, int64_t e) {
    switch (s.op) {
      // Hot activations get dedicated loops so the compiler can vectorise them.
      case UOp::kRelu:
        for (int64_t i = b; i < e; ++i) y[i] = from_acc<T>(std::max(to_acc(x[i]), Acc<T>(0)));
        break;
      case UOp::kNeg:
        for (int64_t i = b; i < e; ++i) y[i] = from_acc<T>(-to_acc(x[i]));
        break;
      default:
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          // One loop per op, its switch folded away (a switch per element kept the loop scalar).
          auto loop = [&]<UOp kOp>() {
            UnaryState c = s;
            c.op = kOp;
            for (int64_t i = b; i < e; ++i) y[i] = unary_apply(c, x[i]);
          };
          with_op(s.op, loop, std::make_integer_sequence<int, static_cast<int>(UOp::kSwish) + 1>{});
        } else {
          for (int64_t i = b; i < e; ++i) y[i] = from_acc<T>(unary_apply(s, to_acc(x[i])));
        }
    }
  };
  parallel_range(pool, n, 16, body);
}

void unary_compute(const UnaryState& s, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  dispatch_numeric(in.dtype(), [&]<class T>() { unary_typed<T>(s, in, out, ctx.pool()); }, ctx.node().op_type.c_str());
}

std::unique_ptr<Kernel> make_unary(const KernelCreateInfo& info) {
  static const std::pair<const char*, UOp> names[] = {
      {"Abs", UOp::kAbs},         {"Neg", UOp::kNeg},           {"Exp", UOp::kExp},
      {"Log", UOp::kLog},         {"Sqrt", UOp::kSqrt},         {"Reciprocal", UOp::kReciprocal},
      {"Floor", UOp::kFloor},     {"Ceil", UOp::kCeil},         {"Round", UOp::kRound},
      {"Sign", UOp::kSign},       {"Sin", UOp::kSin},           {"Cos", UOp::kCos},
      {"Tan", UOp::kTan},         {"Asin", UOp::kAsin},         {"Acos", UOp::kAcos},
      {"Atan", UOp::kAtan},       {"Sinh", UOp::kSinh},         {"Cosh", UOp::kCosh},
      {"Asinh", UOp::kAsinh},     {"Acosh", UOp::kAcosh},       {"Atanh", UOp::kAtanh},
      {"Erf", UOp::kErf},         {"Sigmoid", UOp::kSigmoid},   {"Tanh", UOp::kTanh},
      {"Relu", UOp::kRelu},       {"LeakyRelu", UOp::kLeakyRelu}, {"Elu", UOp::kElu},
      {"Selu", UOp::kSelu},       {"Celu", UOp::kCelu},         {"HardSigmoid", UOp::kHardSigmoid},
      {"HardSwish", UOp::kHardSwish}, {"Softplus", UOp::kSoftplus}, {"Softsign", UOp::kSoftsign},
      {"ThresholdedRelu", UOp::kThresholdedRelu}, {"Gelu", UOp::kGelu}, {"Mish", UOp::kMish},
      {"Shrink", UOp::kShrink},   {"Not", UOp::kNot},           {"BitwiseNot", UOp::kBitwiseNot},
      {"Swish", UOp::kSwish},
  };
  UnaryState s{UOp::kAbs};
  bool found = false;
  for (auto& [n, op] : names)
    if (info.node.op_type == n) {
      s.op = op;
      found = true;
    }
  if (!found) fail(ErrorCode::kNotImplemented, "no unary kernel for ", info.node.op_type);
  const Node& n = info.node;
  switch (s.op) {
    case UOp::kLeakyRelu: s.alpha = n.attr_float("alpha", 0.01f); break;
    case UOp::kElu: s.alpha = n.attr_float("alpha", 1.0f); break;
    case UOp::kCelu: s.alpha = n.attr_float("alpha", 1.0f); break;
    case UOp::kSelu:
      s.alpha = n.attr_float("alpha", 1.67326319217681884765625f);
      s.gamma = n.attr_float("gamma", 1.05070102214813232421875f);
      break;
    case UOp::kHardSigmoid:
      s.alpha = n.attr_float("alpha", 0.2f);
      s.beta = n.attr_float("beta", 0.5f);
      break;
    case UOp::kThresholdedRelu: s.alpha = n.attr_float("alpha", 1.0f); break;
    case UOp::kSwish: s.alpha = n.attr_float("alpha", 1.0f); break;
    case UOp::kShrink:
      s.alpha = n.attr_float("lambd", 0.5f);
      s.beta = n.attr_float("bias", 0.0f);
      break;
    case UOp::kGelu: {
      const std::string approx = n.attr_string("approximate", "none");
      if (approx == "tanh") s.op = UOp::kGeluTanh;
      else if (approx != "none") fail(ErrorCode::kInvalidGraph, n.label(), ": approximate must be 'none' or 'tanh'");
      break;
    }
    default: break;
  }
  return make_fn_kernel(s, unary_compute);
}

// Clip: bounds from attributes (opset < 11) or optional scalar inputs.
struct ClipState {
  float min_attr, max_attr;
};

void clip_compute(const ClipState& s, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  const Tensor* tmin = ctx.node().opset >= 11 ? ctx.optional_input(1) : nullptr;
  const Tensor* tmax = ctx.node().opset >= 11 ? ctx.optional_input(2) : nullptr;
  dispatch_numeric(in.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      unsupported_dtype("Clip", in.dtype());
    } else {
      using A = Acc<T>;
      A lo, hi;
      if (ctx.node().opset >= 11) {
        lo = tmin ? to_acc(*static_cast<const T*>(tmin->raw_data())) : std::numeric_limits<A>::lowest();
        hi = tmax ? to_acc(*static_cast<const T*>(tmax->raw_data())) : std::numeric_limits<A>::max();
        if (tmin && tmin->numel() != 1) fail(ErrorCode::kInvalidArgument, "Clip: min must be a scalar");
        if (tmax && tmax->numel() != 1) fail(ErrorCode::kInvalidArgument, "Clip: max must be a scalar");
      } else {
        lo = static_cast<A>(s.min_attr);
        hi = static_cast<A>(s.max_attr);
      }
      const T* x = static_cast<const T*>(in.raw_data());
      T* y = static_cast<T*>(out.raw_data());
      parallel_range(ctx.pool(), in.numel(), 2, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          // max(x, min) then min(., max): with min > max every value becomes max (numpy's clip).
          const A v = to_acc(x[i]);
          const A above = v < lo ? lo : v;
          y[i] = from_acc<T>(above > hi ? hi : above);
        }
      });
    }
  });
}

std::unique_ptr<Kernel> make_clip(const KernelCreateInfo& info) {
  return make_fn_kernel(ClipState{info.node.attr_float("min", -std::numeric_limits<float>::max()),
                                  info.node.attr_float("max", std::numeric_limits<float>::max())},
                        clip_compute);
}

struct IsState {
  bool nan;
  bool pos, neg;
};

void is_compute(const IsState& s, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  bool* y = ctx.output(0).data<bool>();
  if (mask_has(kFloat8Types, in.dtype())) {
    const auto* x = static_cast<const uint8_t*>(in.raw_data());
    for (int64_t i = 0; i < in.numel(); ++i) {
      const double v = narrow_float_to_double(in.dtype(), x[i]);
      y[i] = s.nan ? std::isnan(v) : (std::isinf(v) && ((v > 0 && s.pos) || (v < 0 && s.neg)));
    }
    return;
  }
  dispatch_float(in.dtype(), [&]<class T>() {
    const T* x = static_cast<const T*>(in.raw_data());
    for (int64_t i = 0; i < in.numel(); ++i) {
      const auto v = to_acc(x[i]);
      y[i] = s.nan ? std::isnan(v) : (std::isinf(v) && ((v > 0 && s.pos) || (v < 0 && s.neg)));
    }
  }, ctx.node().op_type.c_str());
}

std::unique_ptr<Kernel> make_is(const KernelCreateInfo& info) {
  const bool nan = info.node.op_type == "IsNaN";
  return make_fn_kernel(IsState{nan, info.node.attr_int("detect_positive", 1) != 0, info.node.attr_int("detect_negative", 1) != 0},
                        is_compute);
}

// ---- Cast ----

std::string float_to_string(double v, bool is_double) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  char buf[64];
  std::to_chars_result r = is_double ? std::to_chars(buf, buf + sizeof(buf), v)
                                     : std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v));
  return std::string(buf, r.ptr);
}

double string_to_double(const std::string& s) {
  std::string t;
  for (char c : s) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t == "nan" || t == "+nan" || t == "-nan") return std::numeric_limits<double>::quiet_NaN();
  if (t == "inf" || t == "+inf" || t == "infinity" || t == "+infinity") return INFINITY;
  if (t == "-inf" || t == "-infinity") return -INFINITY;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) fail(ErrorCode::kInvalidArgument, "Cast: cannot convert string '", s, "' to a number");
  return v;
}

template <class S, class D>
inline D cast_one(S v) {
  if constexpr (std::is_same_v<D, bool>) {
    return static_cast<float>(to_acc(v)) != 0.0f || to_acc(v) != Acc<S>(0);
  } else if constexpr (is_half_v<D>) {
    return D(static_cast<float>(to_acc(v)));
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<Acc<S>>) {
    const auto f = to_acc(v);
    if (std::isnan(f)) return D(0);
    // Out-of-range float to int conversion is undefined in C++; saturate instead.
    if (f <= static_cast<Acc<S>>(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
    if (f >= static_cast<Acc<S>>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(f);
  } else {
    return static_cast<D>(to_acc(v));
  }
}

bool is_narrow(DType t) { return mask_has(kFloat8Types | kInt4Types | kNarrow25, t); }

/// The range of a packed integer type (4- or 2-bit).
void packed_int_range(DType t, double* lo, double* hi) {
  switch (t) {
    case DType::kInt4: *lo = -8, *hi = 7; break;
    case DType::kUInt4: *lo = 0, *hi = 15; break;
    case DType::kInt2: *lo = -2, *hi = 1; break;
    default: *lo = 0, *hi = 3; break;  // uint2
  }
}

/// Calls put(i, value, integer) for every element of `in`: float8 codes decoded, strings parsed;
/// `integer` points at the exact value of an integer or bool element, else is null.
template <class Put>
void for_each_source(const Tensor& in, Put&& put) {
  const int64_t n = in.numel();
  const DType from = in.dtype();
  if (dtype_is_narrow_float(from)) {
    const auto* s = static_cast<const uint8_t*>(in.raw_data());
    for (int64_t i = 0; i < n; ++i) put(i, narrow_float_to_double(from, s[i]), static_cast<const int64_t*>(nullptr));
  } else if (packed_bits(from)) {
    // One value per byte: int4 / int2 sign-extended, uint4 / uint2 zero-extended.
    const auto* s = static_cast<const uint8_t*>(in.raw_data());
    const bool sgn = from == DType::kInt4 || from == DType::kInt2;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = sgn ? static_cast<int8_t>(s[i]) : s[i];
      put(i, static_cast<double>(k), &k);
    }
  } else if (from == DType::kString) {
    const auto* s = static_cast<const std::string*>(in.raw_data());
    for (int64_t i = 0; i < n; ++i) put(i, string_to_double(s[i]), static_cast<const int64_t*>(nullptr));
  } else {
    dispatch_numeric(from, [&]<class S>() {
      const S* s = static_cast<const S*>(in.raw_data());
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<S>) {
          const int64_t k = static_cast<int64_t>(s[i]);
          put(i, static_cast<double>(s[i]), &k);
        } else {
          put(i, static_cast<double>(to_acc(s[i])), static_cast<const int64_t*>(nullptr));
        }
      }
    }, "Cast");
  }
}

/// Casts from or to a narrow type (float8, float4, 4- or 2-bit integers), through double.
/// Integer to 4- or 2-bit keeps the low bits (the spec's rule for fixed-point targets out of
/// range); floating point to them truncates toward zero and saturates, like onyx's other
/// float-to-integer casts (the spec leaves out-of-range values undefined).
void cast_narrow(const Tensor& in, Tensor& out, const NarrowCast& how) {
  const DType to = out.dtype();
  if (dtype_is_narrow_float(to)) {
    auto* d = static_cast<uint8_t*>(out.raw_data());
    for_each_source(in, [&](int64_t i, double v, const int64_t*) { d[i] = narrow_float_from_double(to, v, how); });
  } else if (const int bits = packed_bits(to)) {
    const bool sgn = to == DType::kInt4 || to == DType::kInt2;
    const int64_t mask = (1 << bits) - 1, top = int64_t(1) << (bits - 1);
    double lo = 0, hi = 0;
    packed_int_range(to, &lo, &hi);
    auto* d = static_cast<uint8_t*>(out.raw_data());
    for_each_source(in, [&](int64_t i, double v, const int64_t* k) {
      int64_t q = 0;
      if (k) q = *k & mask;
      else if (!std::isnan(v)) q = static_cast<int64_t>(std::clamp(std::trunc(v), lo, hi)) & mask;
      d[i] = static_cast<uint8_t>(sgn && (q & top) ? (q | ~mask) : q);
    });
  } else if (to == DType::kString) {
    auto* d = static_cast<std::string*>(out.raw_data());
    for_each_source(in, [&](int64_t i, double v, const int64_t* k) {
      d[i] = k ? std::to_string(*k) : float_to_string(v, false);
    });
  } else {
    dispatch_numeric(to, [&]<class D>() {
      D* d = static_cast<D*>(out.raw_data());
      for_each_source(in, [&](int64_t i, double v, const int64_t* k) {
        d[i] = k ? cast_one<int64_t, D>(*k) : cast_one<double, D>(v);
      });
    }, "Cast");
  }
}

/// float32 <-> float16 / bfloat16, `n` elements, vectorised (F16C / AVX-512 conversions for
/// float16, integer rounding to nearest even for bfloat16: the same bits as Float16::from_float
/// and BFloat16::from_float give, NaN included). False for other type pairs.
bool cast_half(DType from, DType to, const void* src, void* dst, int64_t n, ThreadPool& pool) {
  const bool to_half = from == DType::kFloat && (to == DType::kFloat16 || to == DType::kBFloat16);
  const bool from_half = to == DType::kFloat && (from == DType::kFloat16 || from == DType::kBFloat16);
  if (!to_half && !from_half) return false;
  const bool bf16 = from == DType::kBFloat16 || to == DType::kBFloat16;
  constexpr int64_t kBlock = 1024;
  parallel_range(pool, (n + kBlock - 1) / kBlock, kBlock, [&](int64_t b0, int64_t b1) {
    const int64_t i0 = b0 * kBlock, i1 = std::min(n, b1 * kBlock);
    int64_t i = i0;
    if (from_half) {
      const auto* s = static_cast<const uint16_t*>(src);
      float* d = static_cast<float*>(dst);
      if (bf16) {
        for (; i < i1; ++i) {
          const uint32_t u = static_cast<uint32_t>(s[i]) << 16;  // exact; the compiler vectorises it
          std::memcpy(d + i, &u, 4);
        }
        return;
      }
#if defined(__AVX512F__)
      for (; i + 16 <= i1; i += 16)
        _mm512_storeu_ps(d + i, _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i))));
#elif defined(__F16C__)
      for (; i + 8 <= i1; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
#endif
      for (; i < i1; ++i) d[i] = Float16::to_float(s[i]);
      return;
    }
    const float* s = static_cast<const float*>(src);
    auto* d = static_cast<uint16_t*>(dst);
    if (bf16) {
      for (; i < i1; ++i) {  // BFloat16::from_float, written so that it vectorises
        uint32_t u;
        std::memcpy(&u, s + i, 4);
        const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        const uint32_t nan = ((u >> 16) & 0x8000u) | 0x7fc0u;
        d[i] = static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
      }
      return;
    }
#if defined(__AVX512F__)
    for (; i + 16 <= i1; i += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm512_maskz_cvtps_ph(0xffff, _mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
#elif defined(__F16C__)
    for (; i + 8 <= i1; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
#endif
    for (; i < i1; ++i) d[i] = Float16::from_float(s[i]);
  });
  return true;
}

void cast_tensor(const Tensor& in, Tensor& out, ThreadPool& pool, const NarrowCast& how) {
  const DType from = in.dtype(), to = out.dtype();
  const int64_t n = in.numel();
  if (from == to) {
    copy_elements(from, in.raw_data(), out.raw_data(), n);
    return;
  }
  if (is_narrow(from) || is_narrow(to)) {
    cast_narrow(in, out, how);
    return;
  }
  if (cast_half(from, to, in.raw_data(), out.raw_data(), n, pool)) return;
  if (to == DType::kString) {
    auto* d = static_cast<std::string*>(out.raw_data());
    dispatch_numeric(from, [&]<class S>() {
      const S* s = static_cast<const S*>(in.raw_data());
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<S, bool>)
          d[i].assign(1, s[i] ? '1' : '0');  // (assigning a literal trips GCC 12's -Wrestrict)
        else if constexpr (std::is_integral_v<S>)
          d[i] = std::to_string(s[i]);
        else
          d[i] = float_to_string(static_cast<double>(to_acc(s[i])), std::is_same_v<S, double>);
      }
    }, "Cast");
    return;
  }
  if (from == DType::kString) {
    const auto* s = static_cast<const std::string*>(in.raw_data());
    dispatch_numeric(to, [&]<class D>() {
      D* d = static_cast<D*>(out.raw_data());
      for (int64_t i = 0; i < n; ++i) {
        const double v = string_to_double(s[i]);
        if constexpr (std::is_same_v<D, bool>)
          d[i] = v != 0;
        else if constexpr (std::is_integral_v<D>)
          d[i] = cast_one<double, D>(v);
        else
          d[i] = from_acc<D>(static_cast<Acc<D>>(v));
      }
    }, "Cast");
    return;
  }
  dispatch_numeric(from, [&]<class S>() {
    dispatch_numeric(to, [&]<class D>() {
      const S* s = static_cast<const S*>(in.raw_data());
      D* d = static_cast<D*>(out.raw_data());
      parallel_range(pool, n, 2, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) d[i] = cast_one<S, D>(s[i]);
      });
    }, "Cast");
  }, "Cast");
}

/// NarrowCast from the `saturate` attribute (opset 19; it only changes casts to float8),
/// `round_mode` (opset 24; only casts to float8e8m0) and the opset's rule for infinities.
void cast_compute(const NarrowCast& how, KernelContext& ctx) { cast_tensor(ctx.input(0), ctx.output(0), ctx.pool(), how); }

std::unique_ptr<Kernel> make_cast(const KernelCreateInfo& info) {
  NarrowCast how;
  how.saturate = info.node.attr_int("saturate", 1) != 0;
  how.fnuz_inf_saturates = info.node.opset >= 24;
  if (info.node.opset >= 24) {
    const std::string m = info.node.attr_string("round_mode", "up");
    if (m == "down") how.rounding = E8M0Rounding::kDown;
    else if (m == "nearest") how.rounding = E8M0Rounding::kNearest;
    else if (m != "up") fail(ErrorCode::kInvalidGraph, info.node.label(), ": round_mode must be up, down or nearest, got '", m, "'");
  }
  return make_fn_kernel(how, cast_compute);
}

using namespace types;
constexpr TypeMask kFloatsAndSigned = kFloats | kSignedInts;
constexpr TypeMask kBool = type_mask({DType::kBool});
constexpr TypeMask kNarrow = kFloat8Types | kInt4Types | kNarrow25;  // (the 23-25 types: only models of those opsets have them)

const KernelDef kDefs[] = {
    {"", "Abs", 1, 99, {{0, kNumeric}}, make_unary},
    {"", "Neg", 1, 99, {{0, kFloatsAndSigned}}, make_unary},
    {"", "Exp", 1, 99, {{0, kFloats}}, make_unary},
    {"", "Log", 1, 99, {{0, kFloats}}, make_unary},
    {"", "Sqrt", 1, 99, {{0, kFloats}}, make_unary},
    {"", "Reciprocal", 1, 99, {{0, kFloats}}, make_unary},
    {"", "Floor", 1, 99, {{0, kFloats}}, make_unary},
    {"", "Ceil", 1, 99, {{0, kFloats}}, make_unary},
    {"", "Round", 11, 99, {{0, kFloats}}, make_unary},
    {"", "Sign", 9, 99, {{0, kNumeric}}, make_unary},
    {"", "Sin", 7, 99, {{0, kFloats}}, make_unary},
    {"", "Cos", 7, 99, {{0, kFloats}}, make_unary},
    {"", "Tan", 7, 99, {{0, kFloats}}, make_unary},
    {"", "Asin", 7, 99, {{0, kFloats}}, make_unary},
    {"", "Acos", 7, 99, {{0, kFloats}}, make_unary},
    {"", "Atan", 7, 99, {{0, kFloats}}, make_unary},
    {"", "Sinh", 9, 99, {{0, kFloats}}, make_unary},
    {"", "Cosh", 9, 99, {{0, kFloats}}, make_unary},
    {"", "Asinh", 9, 99, {{0, kFloats}}, make_unary},
    {"", "Acosh", 9, 99, {{0, kFloats}}, make_unary},
    {"", "Atanh", 9, 99, {{0, kFloats}}, make_unary},
    {"", "Erf", 9, 99, {{0, kNumeric}}, make_unary},
    {"", "Sigmoid", 1, 99, {{0, kFloats}}, make_unary},
    {"", "Tanh", 1, 99, {{0, kFloats}}, make_unary},
    {"", "Relu", 1, 99, {{0, kFloatsAndSigned}}, make_unary},
    {"", "LeakyRelu", 1, 99, {{0, kFloats}}, make_unary},
    {"", "Elu", 1, 99, {{0, kFloats}}, make_unary},
    {"", "Selu", 1, 99, {{0, kFloats}}, make_unary},
    {"", "Celu", 12, 99, {{0, kFloats}}, make_unary},
    {"", "HardSigmoid", 1, 99, {{0, kFloats}}, make_unary},
    {"", "HardSwish", 14, 99, {{0, kFloats}}, make_unary},
    {"", "Softplus", 1, 99, {{0, kFloats}}, make_unary},
    {"", "Softsign", 1, 99, {{0, kFloats}}, make_unary},
    {"", "ThresholdedRelu", 10, 99, {{0, kFloats}}, make_unary},
    {"", "Gelu", 20, 99, {{0, kFloats}}, make_unary},
    {"", "Mish", 18, 99, {{0, kFloats}}, make_unary},
    {"", "Swish", 24, 99, {{0, kFloats}}, make_unary},
    {"", "Shrink", 9, 99, {{0, kNumeric}}, make_unary},
    {"", "Not", 1, 99, {{0, kBool}}, make_unary},
    {"", "BitwiseNot", 18, 99, {{0, kInts}}, make_unary},
    {"", "Clip", 1, 99, {{0, kNumeric}}, make_clip},
    {"", "IsNaN", 9, 19, {{0, kFloats}}, make_is},
    {"", "IsNaN", 20, 99, {{0, kFloats | kFloat8Types}}, make_is},
    {"", "IsInf", 10, 19, {{0, kFloats}}, make_is},
    {"", "IsInf", 20, 99, {{0, kFloats | kFloat8Types}}, make_is},
    {"", "Cast", 1, 18, {{0, kAll}, {-1, kAll}}, make_cast},
    {"", "Cast", 19, 20, {{0, kAll | kFloat8Types}, {-1, kAll | kFloat8Types}}, make_cast},
    {"", "Cast", 21, 99, {{0, kAll | kNarrow}, {-1, kAll | kNarrow}}, make_cast},
    {"", "CastLike", 15, 18, {{0, kAll}, {1, kAll}}, make_cast},
    {"", "CastLike", 19, 20, {{0, kAll | kFloat8Types}, {1, kAll | kFloat8Types}}, make_cast},
    {"", "CastLike", 21, 99, {{0, kAll | kNarrow}, {1, kAll | kNarrow}}, make_cast},
};

}  // namespace

std::span<const KernelDef> unary_kernels() { return kDefs; }

}  // namespace onyx::cpu
