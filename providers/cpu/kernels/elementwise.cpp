// CPU kernels: binary arithmetic with broadcasting, comparisons and logic, variadic
// Max/Min/Sum/Mean, Where, PRelu.
#include <cmath>
#include <limits>
#include <string>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "ops/elementwise.hpp"

namespace onyx::cpu {
namespace {

template <class T, class Out, class Op>
void binary_loop(const Tensor& a, const Shape& as, const Tensor& b, const Shape& bs, Tensor& out, ThreadPool& pool, Op op) {
  const Broadcast<2> bc(out.shape(), {&as, &bs});
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  Out* po = static_cast<Out*>(out.raw_data());
  bc.run(pool, out.numel(), [&](int64_t o, std::array<int64_t, 2> off, int64_t n, std::array<int64_t, 2> st) {
    const T* x = pa + off[0];
    const T* y = pb + off[1];
    Out* z = po + o;
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t i = 0; i < n; ++i) z[i] = from_acc<Out>(op(to_acc(x[i]), to_acc(y[i])));
    } else if (st[0] == 0 && st[1] == 1) {
      const auto xv = to_acc(x[0]);
      for (int64_t i = 0; i < n; ++i) z[i] = from_acc<Out>(op(xv, to_acc(y[i])));
    } else if (st[0] == 1 && st[1] == 0) {
      const auto yv = to_acc(y[0]);
      for (int64_t i = 0; i < n; ++i) z[i] = from_acc<Out>(op(to_acc(x[i]), yv));
    } else {
      for (int64_t i = 0; i < n; ++i) z[i] = from_acc<Out>(op(to_acc(x[i * st[0]]), to_acc(y[i * st[1]])));
    }
  });
}

enum class BinOp { kAdd, kSub, kMul, kDiv, kMod, kFMod, kShl, kShr, kBitAnd, kBitOr, kBitXor, kMax, kMin };

// Integer add, subtract and multiply wrap around on overflow, as ORT's do (two's complement),
// computed in an unsigned type at least as wide as unsigned int (narrower ones would be promoted
// to int and could overflow it), so that no input makes them undefined behaviour.
template <class A>
constexpr bool kWraps = std::is_integral_v<A> && !std::is_same_v<A, bool>;
template <class A>
using WrapT = std::conditional_t<(sizeof(A) < sizeof(unsigned)), unsigned, std::make_unsigned_t<A>>;
template <class A>
A wrap_add(A x, A y) {
  if constexpr (kWraps<A>)
    return static_cast<A>(static_cast<WrapT<A>>(x) + static_cast<WrapT<A>>(y));
  else
    return x + y;
}
template <class A>
A wrap_sub(A x, A y) {
  if constexpr (kWraps<A>)
    return static_cast<A>(static_cast<WrapT<A>>(x) - static_cast<WrapT<A>>(y));
  else
    return x - y;
}
template <class A>
A wrap_mul(A x, A y) {
  if constexpr (kWraps<A>)
    return static_cast<A>(static_cast<WrapT<A>>(x) * static_cast<WrapT<A>>(y));
  else
    return x * y;
}

template <class A>
A apply(BinOp op, A x, A y) {
  switch (op) {
    case BinOp::kAdd: return wrap_add(x, y);
    case BinOp::kSub: return wrap_sub(x, y);
    case BinOp::kMul: return wrap_mul(x, y);
    case BinOp::kDiv:
      if constexpr (std::is_integral_v<A>) {
        if (y == 0) return 0;  // integer division by zero is undefined in ONNX; onyx gives 0
        if constexpr (std::is_signed_v<A>)
          if (y == -1) return wrap_sub(A(0), x);
      }
      return x / y;
    case BinOp::kFMod:
      if constexpr (std::is_floating_point_v<A>) {
        return std::fmod(x, y);
      } else {
        if (y == 0) return 0;
        if constexpr (std::is_signed_v<A>)
          if (y == -1) return 0;
        return x % y;
      }
    case BinOp::kMod:
      if constexpr (std::is_floating_point_v<A>) {
        // Floor modulo (opset 28): the sign of y, also for a zero result.
        A r = std::fmod(x, y);
        if (r == 0) return std::copysign(A(0), y);
        if ((r < 0) != (y < 0)) r += y;
        return r;
      } else {
        if (y == 0) return 0;
        if constexpr (std::is_signed_v<A>) {
          if (y == -1) return 0;
          A r = x % y;
          if (r != 0 && ((r < 0) != (y < 0))) r += y;
          return r;
        } else {
          return x % y;
        }
      }
    case BinOp::kShl:
      // Signed types (opset 28): bits shifted past the sign bit are dropped; a shift that is
      // negative or the width or more gives 0.
      if constexpr (std::is_integral_v<A>) {
        using U = std::make_unsigned_t<A>;
        if (y < 0 || y >= A(sizeof(A) * 8)) return A(0);
        return static_cast<A>(static_cast<U>(static_cast<U>(x) << y));
      }
      return x;
    case BinOp::kShr:
      // Signed types: arithmetic (sign-extending); out-of-range shifts leave only the sign fill.
      if constexpr (std::is_integral_v<A>) {
        if (y < 0 || y >= A(sizeof(A) * 8)) return std::is_signed_v<A> && x < 0 ? A(-1) : A(0);
        return static_cast<A>(x >> y);
      }
      return x;
    case BinOp::kBitAnd:
      if constexpr (std::is_integral_v<A>) return x & y;
      return x;
    case BinOp::kBitOr:
      if constexpr (std::is_integral_v<A>) return x | y;
      return x;
    case BinOp::kBitXor:
      if constexpr (std::is_integral_v<A>) return x ^ y;
      return x;
    case BinOp::kMax:
      if constexpr (std::is_floating_point_v<A>)
        if (std::isnan(x)) return x;
      return x > y ? x : y;
    case BinOp::kMin:
      if constexpr (std::is_floating_point_v<A>)
        if (std::isnan(x)) return x;
      return x < y ? x : y;
  }
  return x;
}

template <class T>
void run_binop(BinOp op, const Tensor& a, const Shape& as, const Tensor& b, const Shape& bs, Tensor& out, ThreadPool& pool) {
  using A = Acc<T>;
  switch (op) {
    // Specialised loops for the hot arithmetic ops so they vectorise.
    case BinOp::kAdd: return binary_loop<T, T>(a, as, b, bs, out, pool, [](A x, A y) { return wrap_add(x, y); });
    case BinOp::kSub: return binary_loop<T, T>(a, as, b, bs, out, pool, [](A x, A y) { return wrap_sub(x, y); });
    case BinOp::kMul: return binary_loop<T, T>(a, as, b, bs, out, pool, [](A x, A y) { return wrap_mul(x, y); });
    case BinOp::kDiv:
      if constexpr (std::is_floating_point_v<A>)
        return binary_loop<T, T>(a, as, b, bs, out, pool, [](A x, A y) { return x / y; });
      [[fallthrough]];
    default: return binary_loop<T, T>(a, as, b, bs, out, pool, [op](A x, A y) { return apply(op, x, y); });
  }
}

struct BinaryState {
  BinOp op;
};

void binary_compute(const BinaryState& s, KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.output(0);
  const Shape bs = legacy_broadcast_shape(ctx.node(), a.shape(), b.shape());
  dispatch_numeric(a.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>)
      unsupported_dtype(ctx.node().op_type.c_str(), a.dtype());
    else
      run_binop<T>(s.op, a, a.shape(), b, bs, out, ctx.pool());
  });
}

std::unique_ptr<Kernel> make_binary(const KernelCreateInfo& info) {
  const std::string& op = info.node.op_type;
  BinOp b = BinOp::kAdd;
  if (op == "Add") b = BinOp::kAdd;
  else if (op == "Sub") b = BinOp::kSub;
  else if (op == "Mul") b = BinOp::kMul;
  else if (op == "Div") b = BinOp::kDiv;
  else if (op == "Mod") b = info.node.attr_int("fmod", 0) ? BinOp::kFMod : BinOp::kMod;
  else if (op == "BitwiseAnd") b = BinOp::kBitAnd;
  else if (op == "BitwiseOr") b = BinOp::kBitOr;
  else if (op == "BitwiseXor") b = BinOp::kBitXor;
  else if (op == "BitShift") {
    const std::string dir = info.node.attr_string("direction");
    if (dir != "LEFT" && dir != "RIGHT")
      fail(ErrorCode::kInvalidGraph, info.node.label(), ": direction must be LEFT or RIGHT, got '", dir, "'");
    b = dir == "LEFT" ? BinOp::kShl : BinOp::kShr;
  }
  if (b == BinOp::kMod && dtype_is_float(info.input_dtype(0)) && info.node.opset < 28)
    fail(ErrorCode::kInvalidGraph, info.node.label(), ": Mod on floating-point inputs requires fmod=1 before opset 28");
  return make_fn_kernel(BinaryState{b}, binary_compute);
}

// Pow: base and exponent may have different types; the result has the base's type.
void pow_compute(const int& /*unused*/, KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.output(0);
  const Shape bs = legacy_broadcast_shape(ctx.node(), a.shape(), b.shape());
  dispatch_numeric(a.dtype(), [&]<class T>() {
    dispatch_numeric(b.dtype(), [&]<class E>() {
      if constexpr (std::is_same_v<T, bool> || std::is_same_v<E, bool>) {
        unsupported_dtype("Pow", DType::kBool);
      } else {
        const Broadcast<2> bc(out.shape(), {&a.shape(), &bs});
        const T* pa = static_cast<const T*>(a.raw_data());
        const E* pb = static_cast<const E*>(b.raw_data());
        T* po = static_cast<T*>(out.raw_data());
        bc.run(ctx.pool(), out.numel(), [&](int64_t o, std::array<int64_t, 2> off, int64_t n, std::array<int64_t, 2> st) {
          for (int64_t i = 0; i < n; ++i) {
            const double x = static_cast<double>(to_acc(pa[off[0] + i * st[0]]));
            const double y = static_cast<double>(to_acc(pb[off[1] + i * st[1]]));
            if constexpr (std::is_same_v<T, float>) {
              // Keep float precision behaviour (and speed) for the common float case.
              po[o + i] = (st[1] == 0 && pb[off[1]] == E(2)) ? static_cast<float>(x * x)
                                                             : std::pow(static_cast<float>(x), static_cast<float>(y));
            } else {
              po[o + i] = from_acc<T>(static_cast<Acc<T>>(std::pow(x, y)));
            }
          }
        });
      }
    });
  });
}

std::unique_ptr<Kernel> make_pow(const KernelCreateInfo&) { return make_fn_kernel(0, pow_compute); }

// SwiGLU (opset 28): Y = A * sigmoid(alpha A) * B, A and B of one shape (no broadcasting).
void swiglu_compute(const float& alpha, KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (!(a.shape() == b.shape()))
    fail(ErrorCode::kInvalidArgument, "A ", a.shape().to_string(), " and B ", b.shape().to_string(), " must have the same shape");
  Tensor& y = ctx.output(0);
  dispatch_float(a.dtype(), [&]<class T>() {
    using A = Acc<T>;
    const T* pa = static_cast<const T*>(a.raw_data());
    const T* pb = static_cast<const T*>(b.raw_data());
    T* py = static_cast<T*>(y.raw_data());
    parallel_range(ctx.pool(), a.numel(), 16, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const A g = to_acc(pa[i]);
        py[i] = from_acc<T>(g / (A(1) + std::exp(-A(alpha) * g)) * to_acc(pb[i]));
      }
    });
  }, "SwiGLU");
}

std::unique_ptr<Kernel> make_swiglu(const KernelCreateInfo& info) {
  return make_fn_kernel(info.node.attr_float("alpha", 1.0f), swiglu_compute);
}

// Comparisons and logic: bool outputs.
enum class CmpOp { kEq, kLt, kGt, kLe, kGe, kAnd, kOr, kXor };

void compare_compute(const CmpOp& op, KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.output(0);
  const Shape bs = legacy_broadcast_shape(ctx.node(), a.shape(), b.shape());
  if (a.dtype() == DType::kString) {
    if (op != CmpOp::kEq) unsupported_dtype(ctx.node().op_type.c_str(), a.dtype());
    const Broadcast<2> bc(out.shape(), {&a.shape(), &bs});
    const auto* pa = static_cast<const std::string*>(a.raw_data());
    const auto* pb = static_cast<const std::string*>(b.raw_data());
    bool* po = out.data<bool>();
    bc.run(ctx.pool(), 0, [&](int64_t o, std::array<int64_t, 2> off, int64_t n, std::array<int64_t, 2> st) {
      for (int64_t i = 0; i < n; ++i) po[o + i] = pa[off[0] + i * st[0]] == pb[off[1] + i * st[1]];
    });
    return;
  }
  dispatch_numeric(a.dtype(), [&]<class T>() {
    using A = Acc<T>;
    switch (op) {
      case CmpOp::kEq: return binary_loop<T, bool>(a, a.shape(), b, bs, out, ctx.pool(), [](A x, A y) { return x == y; });
      case CmpOp::kLt: return binary_loop<T, bool>(a, a.shape(), b, bs, out, ctx.pool(), [](A x, A y) { return x < y; });
      case CmpOp::kGt: return binary_loop<T, bool>(a, a.shape(), b, bs, out, ctx.pool(), [](A x, A y) { return x > y; });
      case CmpOp::kLe: return binary_loop<T, bool>(a, a.shape(), b, bs, out, ctx.pool(), [](A x, A y) { return x <= y; });
      case CmpOp::kGe: return binary_loop<T, bool>(a, a.shape(), b, bs, out, ctx.pool(), [](A x, A y) { return x >= y; });
      case CmpOp::kAnd: return binary_loop<T, bool>(a, a.shape(), b, bs, out, ctx.pool(), [](A x, A y) { return bool(x) && bool(y); });
      case CmpOp::kOr: return binary_loop<T, bool>(a, a.shape(), b, bs, out, ctx.pool(), [](A x, A y) { return bool(x) || bool(y); });
      case CmpOp::kXor: return binary_loop<T, bool>(a, a.shape(), b, bs, out, ctx.pool(), [](A x, A y) { return bool(x) != bool(y); });
    }
  });
}

std::unique_ptr<Kernel> make_compare(const KernelCreateInfo& info) {
  const std::string& op = info.node.op_type;
  CmpOp c = CmpOp::kEq;
  if (op == "Less") c = CmpOp::kLt;
  else if (op == "Greater") c = CmpOp::kGt;
  else if (op == "LessOrEqual") c = CmpOp::kLe;
  else if (op == "GreaterOrEqual") c = CmpOp::kGe;
  else if (op == "And") c = CmpOp::kAnd;
  else if (op == "Or") c = CmpOp::kOr;
  else if (op == "Xor") c = CmpOp::kXor;
  return make_fn_kernel(c, compare_compute);
}

// Variadic Max / Min / Sum / Mean.
enum class VarOp { kMax, kMin, kSum, kMean };

void variadic_compute(const VarOp& op, KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) ins.push_back(&ctx.input(i));
  if (ins.empty()) fail(ErrorCode::kInvalidGraph, "needs at least one input");
  dispatch_numeric(out.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      unsupported_dtype(ctx.node().op_type.c_str(), out.dtype());
    } else {
      using A = Acc<T>;
      const BinOp b = op == VarOp::kMax ? BinOp::kMax : op == VarOp::kMin ? BinOp::kMin : BinOp::kAdd;
      if (ins.size() == 1) {
        // Broadcast copy of the single input.
        binary_loop<T, T>(*ins[0], ins[0]->shape(), *ins[0], ins[0]->shape(), out, ctx.pool(), [](A x, A) { return x; });
      } else {
        run_binop<T>(b, *ins[0], ins[0]->shape(), *ins[1], ins[1]->shape(), out, ctx.pool());
        for (size_t k = 2; k < ins.size(); ++k) run_binop<T>(b, out, out.shape(), *ins[k], ins[k]->shape(), out, ctx.pool());
      }
      if (op == VarOp::kMean) {
        T* p = out.data<T>();
        const A n = static_cast<A>(ins.size());
        for (int64_t i = 0; i < out.numel(); ++i) p[i] = from_acc<T>(to_acc(p[i]) / n);
      }
    }
  });
}

std::unique_ptr<Kernel> make_variadic(const KernelCreateInfo& info) {
  const std::string& op = info.node.op_type;
  const VarOp v = op == "Max" ? VarOp::kMax : op == "Min" ? VarOp::kMin : op == "Sum" ? VarOp::kSum : VarOp::kMean;
  return make_fn_kernel(v, variadic_compute);
}

void where_compute(const int&, KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  Tensor& out = ctx.output(0);
  const Broadcast<3> bc(out.shape(), {&c.shape(), &x.shape(), &y.shape()});
  const bool* pc = c.data<bool>();
  if (x.dtype() == DType::kString) {
    const auto* px = static_cast<const std::string*>(x.raw_data());
    const auto* py = static_cast<const std::string*>(y.raw_data());
    auto* po = static_cast<std::string*>(out.raw_data());
    bc.run(ctx.pool(), 0, [&](int64_t o, std::array<int64_t, 3> off, int64_t n, std::array<int64_t, 3> st) {
      for (int64_t i = 0; i < n; ++i)
        po[o + i] = pc[off[0] + i * st[0]] ? px[off[1] + i * st[1]] : py[off[2] + i * st[2]];
    });
    return;
  }
  dispatch_bytes(x.dtype(), [&]<class T>() {
    const T* px = static_cast<const T*>(x.raw_data());
    const T* py = static_cast<const T*>(y.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    bc.run(ctx.pool(), out.numel(), [&](int64_t o, std::array<int64_t, 3> off, int64_t n, std::array<int64_t, 3> st) {
      for (int64_t i = 0; i < n; ++i)
        po[o + i] = pc[off[0] + i * st[0]] ? px[off[1] + i * st[1]] : py[off[2] + i * st[2]];
    });
  });
}

std::unique_ptr<Kernel> make_where(const KernelCreateInfo&) { return make_fn_kernel(0, where_compute); }

void prelu_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& s = ctx.input(1);
  Tensor& out = ctx.output(0);
  const Shape ss = legacy_prelu_slope_shape(ctx.node(), x.shape(), s.shape());
  dispatch_numeric(x.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      unsupported_dtype("PRelu", x.dtype());
    } else {
      using A = Acc<T>;
      binary_loop<T, T>(x, x.shape(), s, ss, out, ctx.pool(), [](A v, A a) { return v < A(0) ? v * a : v; });
    }
  });
}

std::unique_ptr<Kernel> make_prelu(const KernelCreateInfo&) { return make_fn_kernel(0, prelu_compute); }

using namespace types;
constexpr TypeMask kBool = type_mask({DType::kBool});

const KernelDef kDefs[] = {
    {"", "Add", 1, 99, {{0, kNumeric}}, make_binary},
    {"", "Sub", 1, 99, {{0, kNumeric}}, make_binary},
    {"", "Mul", 1, 99, {{0, kNumeric}}, make_binary},
    {"", "Div", 1, 99, {{0, kNumeric}}, make_binary},
    {"", "Mod", 10, 99, {{0, kNumeric}}, make_binary},
    {"", "BitShift", 11, 27, {{0, kUnsignedInts}}, make_binary},
    {"", "BitShift", 28, 99, {{0, kInts}}, make_binary},
    {"", "SwiGLU", 28, 99, {{0, kFloats}}, make_swiglu},
    {"", "BitwiseAnd", 18, 99, {{0, kInts}}, make_binary},
    {"", "BitwiseOr", 18, 99, {{0, kInts}}, make_binary},
    {"", "BitwiseXor", 18, 99, {{0, kInts}}, make_binary},
    {"", "Pow", 1, 99, {{0, kNumeric}, {1, kNumeric}}, make_pow},
    {"", "Equal", 1, 99, {{0, kNumericBool | type_mask({DType::kString})}}, make_compare},
    {"", "Less", 1, 99, {{0, kNumeric}}, make_compare},
    {"", "Greater", 1, 99, {{0, kNumeric}}, make_compare},
    {"", "LessOrEqual", 12, 99, {{0, kNumeric}}, make_compare},
    {"", "GreaterOrEqual", 12, 99, {{0, kNumeric}}, make_compare},
    {"", "And", 1, 99, {{0, kBool}}, make_compare},
    {"", "Or", 1, 99, {{0, kBool}}, make_compare},
    {"", "Xor", 1, 99, {{0, kBool}}, make_compare},
    {"", "Max", 1, 99, {{0, kNumeric}}, make_variadic},
    {"", "Min", 1, 99, {{0, kNumeric}}, make_variadic},
    {"", "Sum", 1, 99, {{0, kNumeric}}, make_variadic},
    {"", "Mean", 1, 99, {{0, kNumeric}}, make_variadic},
    {"", "Where", 9, 99, {{0, kBool}, {1, kAll}}, make_where},
    {"", "PRelu", 1, 99, {{0, kNumeric}}, make_prelu},
};

}  // namespace

std::span<const KernelDef> elementwise_kernels() { return kDefs; }

}  // namespace onyx::cpu
