// CPU kernels: quant family. QuantizeLinear / DequantizeLinear (per-tensor, per-axis, blocked;
// 8/16-bit and 4-bit integers, the four float8 types), DynamicQuantizeLinear, and the integer
// products QLinearMatMul, MatMulInteger, QLinearConv, ConvInteger (int32 accumulation of
// zero-point-corrected operands; float8 QLinearMatMul dequantizes and uses the float GEMM).
// Rounding is round-half-to-even; integer results saturate. 4-bit values are one per byte.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/narrow.hpp"
#include "kernels/common.hpp"
#include "kernels/conv.hpp"
#include "kernels/gemm.hpp"
#include "kernels/manifest.hpp"
#include "kernels/qconv_add.hpp"
#include "kernels/qmath.hpp"
#include "ops/nn.hpp"
#include "ops/quant.hpp"

namespace onyx::cpu {
namespace {

// ---- quantized element codecs ----

/// Integer type stored as S, saturating to [Lo, Hi].
template <class S, int64_t Lo, int64_t Hi>
struct IntQ {
  using storage = S;
  static constexpr bool kIsF8 = false;
  /// saturate(round_half_even(q) + zp).
  template <class A>
  static S quantize(A q, A zp, bool) {
    A r = std::nearbyint(q);
    if (r != r) r = A(0);  // NaN
    r += zp;
    if (r <= static_cast<A>(Lo)) return static_cast<S>(Lo);
    if (r >= static_cast<A>(Hi)) return static_cast<S>(Hi);
    return static_cast<S>(r);
  }
  static float value(S v) { return static_cast<float>(v); }
  static int32_t ivalue(S v) { return static_cast<int32_t>(v); }
};

/// A narrow float type (float8, float4e2m1), by its DType value.
template <int K>
struct F8Q {
  using storage = uint8_t;
  static constexpr bool kIsF8 = true;
  template <class A>
  static uint8_t quantize(A q, A zp, bool saturate) {
    // A zero zero point is not added, so that -0 stays -0. Infinities follow Cast before opset
    // 24 (NaN for the FNUZ types), as onyx always has.
    const double v = zp == A(0) ? static_cast<double>(q) : static_cast<double>(q) + static_cast<double>(zp);
    NarrowCast how;
    how.saturate = saturate;
    how.fnuz_inf_saturates = false;
    return narrow_float_from_double(static_cast<DType>(K), v, how);
  }
  static float value(uint8_t v) { return narrow_float_table(static_cast<DType>(K))[v]; }
  static int32_t ivalue(uint8_t) { return 0; }  // unused
};

using QU8 = IntQ<uint8_t, 0, 255>;
using QI8 = IntQ<int8_t, -128, 127>;

template <class F>
void dispatch_q(DType dt, F&& f, const char* what) {
  switch (dt) {
    case DType::kUInt8: f.template operator()<QU8>(); break;
    case DType::kInt8: f.template operator()<QI8>(); break;
    case DType::kUInt16: f.template operator()<IntQ<uint16_t, 0, 65535>>(); break;
    case DType::kInt16: f.template operator()<IntQ<int16_t, -32768, 32767>>(); break;
    case DType::kUInt4: f.template operator()<IntQ<uint8_t, 0, 15>>(); break;
    case DType::kInt4: f.template operator()<IntQ<int8_t, -8, 7>>(); break;
    case DType::kInt32:
      f.template operator()<IntQ<int32_t, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()>>();
      break;
    case DType::kUInt2: f.template operator()<IntQ<uint8_t, 0, 3>>(); break;
    case DType::kInt2: f.template operator()<IntQ<int8_t, -2, 1>>(); break;
    case DType::kFloat8E4M3FN: f.template operator()<F8Q<static_cast<int>(DType::kFloat8E4M3FN)>>(); break;
    case DType::kFloat8E4M3FNUZ: f.template operator()<F8Q<static_cast<int>(DType::kFloat8E4M3FNUZ)>>(); break;
    case DType::kFloat8E5M2: f.template operator()<F8Q<static_cast<int>(DType::kFloat8E5M2)>>(); break;
    case DType::kFloat8E5M2FNUZ: f.template operator()<F8Q<static_cast<int>(DType::kFloat8E5M2FNUZ)>>(); break;
    case DType::kFloat4E2M1: f.template operator()<F8Q<static_cast<int>(DType::kFloat4E2M1)>>(); break;
    default: unsupported_dtype(what, dt);
  }
}

/// Only the 8-bit integers (the integer products).
template <class F>
void dispatch_q8(DType dt, F&& f, const char* what) {
  switch (dt) {
    case DType::kUInt8: f.template operator()<QU8>(); break;
    case DType::kInt8: f.template operator()<QI8>(); break;
    default: unsupported_dtype(what, dt);
  }
}

/// Converts every element of a numeric tensor to A.
template <class A>
void load_values(const Tensor& t, A* dst) {
  if (dtype_is_narrow_float(t.dtype())) {  // a float8e8m0 scale (opset 24, microscaling)
    const auto* p = static_cast<const uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<A>(narrow_float_to_double(t.dtype(), p[i]));
    return;
  }
  dispatch_numeric(t.dtype(), [&]<class T>() {
    const T* p = static_cast<const T*>(t.raw_data());
    for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<A>(to_acc(p[i]));
  }, "scale");
}

/// Values of a quantized tensor (zero points) as A.
template <class Q, class A>
void load_q(const Tensor& t, A* dst) {
  const auto* p = static_cast<const typename Q::storage*>(t.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<A>(Q::value(p[i]));
}

/// Scalar scale or zero point check (x_scale, y_scale...).
void require_one(const Tensor& t, const char* name, int idx) {
  if (t.numel() != 1 || t.rank() > 1)
    fail(ErrorCode::kInvalidArgument, name, " (input ", idx, ") must be a scalar, got shape ", t.shape().to_string());
}

// ---- QuantizeLinear ----

struct QuantizeState {
  bool saturate;
  DType precision;  // the type x / y_scale is rounded to (float: no further rounding)
};

/// x / scale rounded to the division's precision (float16 or bfloat16 at opset 23+; float
/// division of two such values rounded once more is their correctly rounded quotient).
template <class A>
inline A divide_in(DType precision, A x, A s) {
  const A q = x / s;
  if (precision == DType::kFloat16) return static_cast<A>(Float16::to_float(Float16::from_float(static_cast<float>(q))));
  if (precision == DType::kBFloat16) return static_cast<A>(BFloat16::to_float(BFloat16::from_float(static_cast<float>(q))));
  return q;
}

/// Codecs the vectorised rows (qmath::quantize_row / dequantize_row) handle: 8- and 16-bit integers.
template <class Q>
constexpr bool kVectorQ = std::is_same_v<Q, QU8> || std::is_same_v<Q, QI8> || std::is_same_v<Q, IntQ<uint16_t, 0, 65535>> ||
                          std::is_same_v<Q, IntQ<int16_t, -32768, 32767>>;
/// ... from float or float16 x with the division in float.
template <class X, class Q, class A>
constexpr bool kVectorQuantize = kVectorQ<Q> && std::is_same_v<A, float> && (std::is_same_v<X, float> || std::is_same_v<X, Float16>);

template <class X, class Q, class A>
void quantize_loop(const X* x, typename Q::storage* y, const A* sc, const A* zp, const QuantSplit& qs, int64_t n,
                   bool sat, DType pr, ThreadPool& pool) {
  if (qs.kind == QuantKind::kPerTensor) {
    const A s = sc[0], z = zp ? zp[0] : A(0);
    if constexpr (kVectorQuantize<X, Q, A>) {
      if (pr == DType::kFloat) {
        parallel_range(pool, n, 1, [&](int64_t i0, int64_t i1) { qmath::quantize_row(x + i0, y + i0, i1 - i0, s, z); });
        return;
      }
    }
    parallel_range(pool, n, 8, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) y[i] = Q::quantize(divide_in(pr, static_cast<A>(to_acc(x[i])), s), z, sat);
    });
    return;
  }
  const int64_t rows = qs.outer * qs.dim, inner = qs.inner;
  const bool blocked = qs.kind == QuantKind::kBlocked;
  parallel_range(pool, rows, inner * 8, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t o = r / qs.dim, d = r % qs.dim;
      const X* xr = x + r * inner;
      auto* yr = y + r * inner;
      if (!blocked) {
        const A s = sc[d], z = zp ? zp[d] : A(0);
        if constexpr (kVectorQuantize<X, Q, A>) {
          if (pr == DType::kFloat && inner >= qmath::kLanes) {
            qmath::quantize_row(xr, yr, inner, s, z);
            continue;
          }
        }
        for (int64_t i = 0; i < inner; ++i) yr[i] = Q::quantize(divide_in(pr, static_cast<A>(to_acc(xr[i])), s), z, sat);
      } else {
        const int64_t base = (o * qs.nblocks + d / qs.block) * inner;
        for (int64_t i = 0; i < inner; ++i)
          yr[i] = Q::quantize(divide_in(pr, static_cast<A>(to_acc(xr[i])), sc[base + i]), zp ? zp[base + i] : A(0), sat);
      }
    }
  });
}

void quantize_compute(const QuantizeState& st, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zpt = ctx.optional_input(2);
  Tensor& y = ctx.output(0);
  if (zpt && zpt->dtype() != y.dtype())
    fail(ErrorCode::kInvalidArgument, "y_zero_point (input 2) has type ", dtype_name(zpt->dtype()), " but y has type ",
         dtype_name(y.dtype()));
  const QuantSplit qs = quant_split(ctx.node(), x.shape(), scale.shape(), zpt ? &zpt->shape() : nullptr);
  const int64_t n = x.numel();
  if (n == 0) return;
  const int64_t ns = scale.numel();
  auto run = [&]<class X, class A>() {
    A* sc = nullptr;
    A* zp = nullptr;
    carve(Workspace::kQuant, [&](Carver& c) {
      sc = c.take<A>(ns);
      zp = zpt ? c.take<A>(ns) : nullptr;
    });
    load_values<A>(scale, sc);
    dispatch_q(y.dtype(), [&]<class Q>() {
      if (zp) load_q<Q, A>(*zpt, zp);
      quantize_loop<X, Q, A>(static_cast<const X*>(x.raw_data()), static_cast<typename Q::storage*>(y.raw_data()), sc, zp, qs,
                             n, st.saturate, st.precision, ctx.pool());
    }, "QuantizeLinear");
  };
  switch (x.dtype()) {
    case DType::kFloat: run.template operator()<float, float>(); break;
    case DType::kFloat16: run.template operator()<Float16, float>(); break;
    case DType::kBFloat16: run.template operator()<BFloat16, float>(); break;
    case DType::kInt32: run.template operator()<int32_t, double>(); break;
    default: unsupported_dtype("QuantizeLinear", x.dtype());
  }
}

std::unique_ptr<Kernel> make_quantize(const KernelCreateInfo& info) {
  const Node& n = info.node;
  // Opset 23+: the division in the precision attribute's type, else in y_scale's.
  DType precision = DType::kFloat;
  if (n.opset >= 23) {
    const int64_t p = n.attr_int("precision", 0);
    precision = p != 0 ? static_cast<DType>(p) : info.input_dtype(1);
  }
  if (precision == DType::kInt32) precision = DType::kFloat;  // (int32 x: the scale's float type)
  return make_fn_kernel(QuantizeState{n.opset < 19 || n.attr_int("saturate", 1) != 0, precision}, quantize_compute);
}

// ---- DequantizeLinear ----

template <class Q, class Y>
void dequantize_loop(const typename Q::storage* x, Y* y, const float* sc, const float* zp, const QuantSplit& qs, int64_t n,
                     ThreadPool& pool) {
  auto one = [](typename Q::storage v, float s, float z) {
    if constexpr (Q::kIsF8) {
      return from_acc<Y>((Q::value(v) - z) * s);
    } else {
      // Exact integer difference, then the scale.
      return from_acc<Y>(static_cast<float>(static_cast<int64_t>(v) - static_cast<int64_t>(z)) * s);
    }
  };
  // 8- and 16-bit integers to float or float16: the vectorised rows.
  constexpr bool vec = kVectorQ<Q> && (std::is_same_v<Y, float> || std::is_same_v<Y, Float16>);
  if (qs.kind == QuantKind::kPerTensor) {
    const float s = sc[0], z = zp ? zp[0] : 0.0f;
    if constexpr (vec) {
      parallel_range(pool, n, 1, [&](int64_t i0, int64_t i1) {
        qmath::dequantize_row(x + i0, y + i0, i1 - i0, s, static_cast<int32_t>(z));
      });
      return;
    }
    parallel_range(pool, n, 4, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) y[i] = one(x[i], s, z);
    });
    return;
  }
  const int64_t rows = qs.outer * qs.dim, inner = qs.inner;
  const bool blocked = qs.kind == QuantKind::kBlocked;
  parallel_range(pool, rows, inner * 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t o = r / qs.dim, d = r % qs.dim;
      const auto* xr = x + r * inner;
      Y* yr = y + r * inner;
      if (!blocked) {
        const float s = sc[d], z = zp ? zp[d] : 0.0f;
        if constexpr (vec) {
          if (inner >= qmath::kLanes) {
            qmath::dequantize_row(xr, yr, inner, s, static_cast<int32_t>(z));
            continue;
          }
        }
        for (int64_t i = 0; i < inner; ++i) yr[i] = one(xr[i], s, z);
      } else {
        const int64_t base = (o * qs.nblocks + d / qs.block) * inner;
        for (int64_t i = 0; i < inner; ++i) yr[i] = one(xr[i], sc[base + i], zp ? zp[base + i] : 0.0f);
      }
    }
  });
}

void dequantize_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zpt = ctx.optional_input(2);
  Tensor& y = ctx.output(0);
  if (zpt && zpt->dtype() != x.dtype())
    fail(ErrorCode::kInvalidArgument, "x_zero_point (input 2) has type ", dtype_name(zpt->dtype()), " but x has type ",
         dtype_name(x.dtype()));
  const QuantSplit qs = quant_split(ctx.node(), x.shape(), scale.shape(), zpt ? &zpt->shape() : nullptr);
  const int64_t n = x.numel();
  if (n == 0) return;
  const int64_t ns = scale.numel();
  float* sc = nullptr;
  float* zp = nullptr;
  carve(Workspace::kQuant, [&](Carver& c) {
    sc = c.take<float>(ns);
    zp = zpt ? c.take<float>(ns) : nullptr;
  });
  load_values<float>(scale, sc);
  dispatch_q(x.dtype(), [&]<class Q>() {
    if (zp) load_q<Q, float>(*zpt, zp);
    const auto* px = static_cast<const typename Q::storage*>(x.raw_data());
    dispatch_float(y.dtype(), [&]<class Y>() {
      if constexpr (std::is_same_v<Y, double>)
        unsupported_dtype("DequantizeLinear output", y.dtype());
      else
        dequantize_loop<Q, Y>(px, static_cast<Y*>(y.raw_data()), sc, zp, qs, n, ctx.pool());
    }, "DequantizeLinear");
  }, "DequantizeLinear");
}

std::unique_ptr<Kernel> make_dequantize(const KernelCreateInfo&) { return make_fn_kernel(0, dequantize_compute); }

// ---- DynamicQuantizeLinear ----

void dynamic_quantize_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  uint8_t* py = ctx.has_output(0) ? ctx.output(0).data<uint8_t>() : nullptr;
  const DynamicQuant q = dynamic_quantize_u8(x.data<float>(), x.numel(), py, ctx.pool());
  if (ctx.has_output(1)) *ctx.output(1).data<float>() = q.scale;
  if (ctx.has_output(2)) *ctx.output(2).data<uint8_t>() = static_cast<uint8_t>(q.zero_point);
}

std::unique_ptr<Kernel> make_dynamic_quantize(const KernelCreateInfo&) { return make_fn_kernel(0, dynamic_quantize_compute); }

// ---- integer matrix products ----

/// C[m, n] (ldc) = A[m, k] (lda) * B[k, n] (ldb) over int16 operands (zero points already taken
/// off), accumulated in 32 bits (wrapping, as the spec allows).
void igemm(int64_t m, int64_t n, int64_t k, const int16_t* a, int64_t lda, const int16_t* b, int64_t ldb, int32_t* c,
           int64_t ldc, ThreadPool& pool) {
  parallel_range(pool, m, std::max<int64_t>(1, n * k), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      uint32_t* cr = reinterpret_cast<uint32_t*>(c + i * ldc);
      for (int64_t j = 0; j < n; ++j) cr[j] = 0;
      const int16_t* ar = a + i * lda;
      for (int64_t p = 0; p < k; ++p) {
        const int32_t av = ar[p];
        if (av == 0) continue;
        const int16_t* br = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) cr[j] += static_cast<uint32_t>(av * static_cast<int32_t>(br[j]));
      }
    }
  });
}

/// numpy matmul geometry of A and B (1-D operands promoted), with broadcast batch dims.
struct MatGeom {
  int64_t m = 1, k = 1, n = 1;
  int64_t batch = 1;          // output batches
  int64_t batch_a = 1, batch_b = 1;  // batches stored in A, B
  size_t rbatch = 0;
  Shape bdims, sta, stb;      // output batch dims and per-dim batch strides (in matrices) of A, B
  /// Matrix index of A and B for output batch t.
  void offsets(int64_t t, int64_t& ia, int64_t& ib) const {
    ia = 0;
    ib = 0;
    for (size_t d = rbatch; d-- > 0;) {
      const int64_t i = t % bdims[d];
      t /= bdims[d];
      ia += i * sta[d];
      ib += i * stb[d];
    }
  }
};

MatGeom mat_geom(const Shape& a_shape, const Shape& b_shape, const char* an, const char* bn, int bi) {
  Shape sa = a_shape, sb = b_shape;
  if (sa.empty() || sb.empty()) fail(ErrorCode::kInvalidArgument, "matrix inputs must have rank >= 1");
  if (sa.size() == 1) sa.insert(0, 1);
  if (sb.size() == 1) sb.push_back(1);
  MatGeom g;
  g.m = sa[sa.size() - 2];
  g.k = sa[sa.size() - 1];
  g.n = sb[sb.size() - 1];
  if (sb[sb.size() - 2] != g.k)
    fail(ErrorCode::kInvalidArgument, "inner dimensions differ: ", an, " (input 0) ", a_shape.to_string(), " x ", bn, " (input ",
         bi, ") ", b_shape.to_string());
  const size_t ra = sa.size() - 2, rb = sb.size() - 2;
  g.rbatch = std::max(ra, rb);
  Shape da = Shape::filled(g.rbatch, 1), db = Shape::filled(g.rbatch, 1);
  for (size_t i = 0; i < ra; ++i) da[g.rbatch - ra + i] = sa[i];
  for (size_t i = 0; i < rb; ++i) db[g.rbatch - rb + i] = sb[i];
  g.sta = Shape::filled(g.rbatch, 0);
  g.stb = Shape::filled(g.rbatch, 0);
  g.bdims = Shape::filled(g.rbatch, 1);
  int64_t ma = 1, mb = 1;
  for (size_t d = g.rbatch; d-- > 0;) {
    if (da[d] != db[d] && da[d] != 1 && db[d] != 1)
      fail(ErrorCode::kInvalidArgument, "batch dims of ", an, " ", a_shape.to_string(), " and ", bn, " ", b_shape.to_string(),
           " do not broadcast");
    g.bdims[d] = std::max(da[d], db[d]);
    if (da[d] == 0 || db[d] == 0) g.bdims[d] = 0;
    if (da[d] != 1) g.sta[d] = ma;
    if (db[d] != 1) g.stb[d] = mb;
    ma *= da[d];
    mb *= db[d];
  }
  g.batch_a = ma;
  g.batch_b = mb;
  g.batch = g.bdims.numel();
  return g;
}

/// How a per-row (A side) or per-column (B side) scale / zero point indexes: 0 = one value,
/// 1 = one per row (column), 2 = one per row (column) of every stored batch.
int param_mode(const Tensor& t, int64_t per, int64_t batches, const char* name, int idx) {
  const int64_t c = t.numel();
  if (c == 1) return 0;
  if (c == per) return 1;
  if (c == per * batches) return 2;
  fail(ErrorCode::kInvalidArgument, name, " (input ", idx, ") has shape ", t.shape().to_string(), "; expected a scalar, ", per,
       " values, or ", per * batches, " values (one per row/column of each matrix)");
}

inline int64_t param_index(int mode, int64_t batch, int64_t i, int64_t per) {
  return mode == 0 ? 0 : mode == 1 ? i : batch * per + i;
}

/// A (stored batches x m x k) minus its per-row zero point, as int16.
template <class Q>
void sub_rows(const typename Q::storage* a, const float* zp, int mode, int64_t batches, int64_t m, int64_t k, int16_t* out) {
  for (int64_t bt = 0; bt < batches; ++bt)
    for (int64_t i = 0; i < m; ++i) {
      const int32_t z = zp ? static_cast<int32_t>(zp[param_index(mode, bt, i, m)]) : 0;
      const auto* src = a + (bt * m + i) * k;
      int16_t* dst = out + (bt * m + i) * k;
      for (int64_t p = 0; p < k; ++p) dst[p] = static_cast<int16_t>(Q::ivalue(src[p]) - z);
    }
}

/// B (stored batches x k x n) minus its per-column zero point, as int16.
template <class Q>
void sub_cols(const typename Q::storage* b, const float* zp, int mode, int64_t batches, int64_t k, int64_t n, int16_t* out) {
  for (int64_t bt = 0; bt < batches; ++bt)
    for (int64_t p = 0; p < k; ++p) {
      const auto* src = b + (bt * k + p) * n;
      int16_t* dst = out + (bt * k + p) * n;
      for (int64_t j = 0; j < n; ++j) {
        const int32_t z = zp ? static_cast<int32_t>(zp[param_index(mode, bt, j, n)]) : 0;
        dst[j] = static_cast<int16_t>(Q::ivalue(src[j]) - z);
      }
    }
}

// ---- MatMulInteger ----

void matmul_integer_compute(const int&, KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor* za = ctx.optional_input(2);
  const Tensor* zb = ctx.optional_input(3);
  const MatGeom g = mat_geom(a.shape(), b.shape(), "A", "B", 1);
  if (za && za->dtype() != a.dtype()) fail(ErrorCode::kInvalidArgument, "a_zero_point (input 2) must have A's type");
  if (zb && zb->dtype() != b.dtype()) fail(ErrorCode::kInvalidArgument, "b_zero_point (input 3) must have B's type");
  const int ma = za ? param_mode(*za, g.m, g.batch_a, "a_zero_point", 2) : 0;
  const int mb = zb ? param_mode(*zb, g.n, g.batch_b, "b_zero_point", 3) : 0;
  Tensor& y = ctx.output(0);
  int32_t* py = y.data<int32_t>();
  if (y.numel() == 0) return;
  int16_t *a16 = nullptr, *b16 = nullptr;
  float *zaf = nullptr, *zbf = nullptr;
  carve(Workspace::kQuant, [&](Carver& c) {
    a16 = c.take<int16_t>(a.numel());
    b16 = c.take<int16_t>(b.numel());
    zaf = za ? c.take<float>(za->numel()) : nullptr;
    zbf = zb ? c.take<float>(zb->numel()) : nullptr;
  });
  dispatch_q8(a.dtype(), [&]<class QA>() {
    if (za) load_q<QA, float>(*za, zaf);
    sub_rows<QA>(static_cast<const typename QA::storage*>(a.raw_data()), zaf, ma, g.batch_a, g.m, g.k, a16);
  }, "MatMulInteger");
  dispatch_q8(b.dtype(), [&]<class QB>() {
    if (zb) load_q<QB, float>(*zb, zbf);
    sub_cols<QB>(static_cast<const typename QB::storage*>(b.raw_data()), zbf, mb, g.batch_b, g.k, g.n, b16);
  }, "MatMulInteger");
  for (int64_t t = 0; t < g.batch; ++t) {
    int64_t ia, ib;
    g.offsets(t, ia, ib);
    igemm(g.m, g.n, g.k, a16 + ia * g.m * g.k, g.k, b16 + ib * g.k * g.n, g.n, py + t * g.m * g.n, g.n, ctx.pool());
  }
}

std::unique_ptr<Kernel> make_matmul_integer(const KernelCreateInfo&) { return make_fn_kernel(0, matmul_integer_compute); }

// ---- QLinearMatMul ----

void qlinear_matmul_compute(const int&, KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& as = ctx.input(1);
  const Tensor& az = ctx.input(2);
  const Tensor& b = ctx.input(3);
  const Tensor& bs = ctx.input(4);
  const Tensor& bz = ctx.input(5);
  const Tensor& ys = ctx.input(6);
  const Tensor& yz = ctx.input(7);
  Tensor& y = ctx.output(0);
  const MatGeom g = mat_geom(a.shape(), b.shape(), "a", "b", 3);
  if (az.dtype() != a.dtype()) fail(ErrorCode::kInvalidArgument, "a_zero_point (input 2) must have a's type");
  if (bz.dtype() != b.dtype()) fail(ErrorCode::kInvalidArgument, "b_zero_point (input 5) must have b's type");
  if (yz.dtype() != y.dtype()) fail(ErrorCode::kInvalidArgument, "y_zero_point (input 7) must have y's type");
  const int mas = param_mode(as, g.m, g.batch_a, "a_scale", 1), maz = param_mode(az, g.m, g.batch_a, "a_zero_point", 2);
  const int mbs = param_mode(bs, g.n, g.batch_b, "b_scale", 4), mbz = param_mode(bz, g.n, g.batch_b, "b_zero_point", 5);
  require_one(ys, "y_scale", 6);
  require_one(yz, "y_zero_point", 7);
  if (y.numel() == 0) return;
  const bool int_path = (a.dtype() == DType::kUInt8 || a.dtype() == DType::kInt8) &&
                        (b.dtype() == DType::kUInt8 || b.dtype() == DType::kInt8) &&
                        (y.dtype() == DType::kUInt8 || y.dtype() == DType::kInt8);
  const int64_t MN = g.m * g.n;
  float *asf = nullptr, *azf = nullptr, *bsf = nullptr, *bzf = nullptr;
  int16_t *a16 = nullptr, *b16 = nullptr;
  int32_t* acc = nullptr;
  float *af = nullptr, *bf = nullptr, *cf = nullptr;
  carve(Workspace::kQuant, [&](Carver& c) {
    asf = c.take<float>(as.numel());
    azf = c.take<float>(az.numel());
    bsf = c.take<float>(bs.numel());
    bzf = c.take<float>(bz.numel());
    if (int_path) {
      a16 = c.take<int16_t>(a.numel());
      b16 = c.take<int16_t>(b.numel());
      acc = c.take<int32_t>(MN);
    } else {
      af = c.take<float>(a.numel());
      bf = c.take<float>(b.numel());
      cf = c.take<float>(MN);
    }
  });
  load_values<float>(as, asf);
  load_values<float>(bs, bsf);
  float ysf;
  load_values<float>(ys, &ysf);
  float yzf = 0;
  dispatch_q(yz.dtype(), [&]<class Q>() { load_q<Q, float>(yz, &yzf); }, "QLinearMatMul");
  if (int_path) {
    dispatch_q8(a.dtype(), [&]<class QA>() {
      load_q<QA, float>(az, azf);
      sub_rows<QA>(static_cast<const typename QA::storage*>(a.raw_data()), azf, maz, g.batch_a, g.m, g.k, a16);
    }, "QLinearMatMul");
    dispatch_q8(b.dtype(), [&]<class QB>() {
      load_q<QB, float>(bz, bzf);
      sub_cols<QB>(static_cast<const typename QB::storage*>(b.raw_data()), bzf, mbz, g.batch_b, g.k, g.n, b16);
    }, "QLinearMatMul");
  } else {
    // Dequantize both operands to float.
    auto deq = [&](const Tensor& t, const Tensor& zt, const float* sf, float* zf, int ms, int mz, bool rows, int64_t batches,
                   float* out) {
      dispatch_q(t.dtype(), [&]<class Q>() {
        load_q<Q, float>(zt, zf);
        const auto* p = static_cast<const typename Q::storage*>(t.raw_data());
        const int64_t r = rows ? g.m : g.k, c = rows ? g.k : g.n, per = rows ? g.m : g.n;
        for (int64_t bt = 0; bt < batches; ++bt)
          for (int64_t i = 0; i < r; ++i)
            for (int64_t j = 0; j < c; ++j) {
              const int64_t e = (bt * r + i) * c + j;
              const int64_t q = rows ? i : j;
              out[e] = (Q::value(p[e]) - zf[param_index(mz, bt, q, per)]) * sf[param_index(ms, bt, q, per)];
            }
      }, "QLinearMatMul");
    };
    deq(a, az, asf, azf, mas, maz, true, g.batch_a, af);
    deq(b, bz, bsf, bzf, mbs, mbz, false, g.batch_b, bf);
  }
  dispatch_q(y.dtype(), [&]<class QY>() {
    auto* py = static_cast<typename QY::storage*>(y.raw_data());
    for (int64_t t = 0; t < g.batch; ++t) {
      int64_t ia, ib;
      g.offsets(t, ia, ib);
      auto* yt = py + t * MN;
      if (int_path) {
        igemm(g.m, g.n, g.k, a16 + ia * g.m * g.k, g.k, b16 + ib * g.k * g.n, g.n, acc, g.n, ctx.pool());
        for (int64_t i = 0; i < g.m; ++i) {
          const float sa = asf[param_index(mas, ia, i, g.m)];
          for (int64_t j = 0; j < g.n; ++j) {
            const float mult = sa * bsf[param_index(mbs, ib, j, g.n)] / ysf;
            yt[i * g.n + j] = QY::quantize(static_cast<float>(acc[i * g.n + j]) * mult, yzf, true);
          }
        }
      } else {
        sgemm(false, false, g.m, g.n, g.k, 1.0f, af + ia * g.m * g.k, g.k, bf + ib * g.k * g.n, g.n, 0.0f, cf, g.n,
              &ctx.pool());
        for (int64_t i = 0; i < MN; ++i) yt[i] = QY::quantize(cf[i] / ysf, yzf, true);
      }
    }
  }, "QLinearMatMul");
}

std::unique_ptr<Kernel> make_qlinear_matmul(const KernelCreateInfo&) { return make_fn_kernel(0, qlinear_matmul_compute); }

// ---- QLinearConv / ConvInteger ----

/// im2col of one image and group over int16 (x minus its zero point; padding gives 0).
template <class S>
void im2col_q(const S* x, int32_t zp, int64_t channels, const Shape& in, const WindowGeometry& g, int16_t* col,
              ThreadPool& pool) {
  im2col_mapped(x, channels, in, g, col, pool,
                [zp](S v) { return static_cast<int16_t>(static_cast<int32_t>(v) - zp); });
}

class QConvKernel final : public Kernel {
 public:
  QConvKernel(const KernelCreateInfo& info, bool qlinear)
      : node_(info.node), attrs_(WindowAttrs::of(info.node, false)), qlinear_(qlinear), group_(info.node.attr_int("group", 1)) {
    if (group_ <= 0) fail(ErrorCode::kInvalidGraph, info.node.label(), ": group must be positive");
    const std::vector<int64_t> ks = info.node.attr_ints("kernel_shape");
    has_kernel_shape_ = !ks.empty();
    kernel_shape_ = Shape(ks);
  }

  void compute(KernelContext& ctx) const override {
    const size_t wi = qlinear_ ? 3 : 1;
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(wi);
    const Tensor* xz = ctx.optional_input(2);
    const Tensor* wz = ctx.optional_input(qlinear_ ? 5 : 3);
    const Tensor* xs = qlinear_ ? &ctx.input(1) : nullptr;
    const Tensor* ws = qlinear_ ? &ctx.input(4) : nullptr;
    const Tensor* ys = qlinear_ ? &ctx.input(6) : nullptr;
    const Tensor* yz = qlinear_ ? &ctx.input(7) : nullptr;
    const Tensor* bias = qlinear_ ? ctx.optional_input(8) : nullptr;
    Tensor& y = ctx.output(0);
    if (x.rank() < 3 || w.rank() != x.rank())
      fail(ErrorCode::kInvalidArgument, "x ", x.shape().to_string(), " and w (input ", wi, ") ", w.shape().to_string(),
           " must have the same rank >= 3");
    const int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0);
    if (C % group_ != 0 || M % group_ != 0 || w.dim(1) * group_ != C)
      fail(ErrorCode::kInvalidArgument, "x has ", C, " channels; w (input ", wi, ") ", w.shape().to_string(), " does not fit group ",
           group_);
    const Shape in(std::span<const int64_t>(x.shape().data() + 2, x.rank() - 2));
    const Shape kernel(std::span<const int64_t>(w.shape().data() + 2, w.rank() - 2));
    if (has_kernel_shape_ && kernel_shape_ != kernel)
      fail(ErrorCode::kInvalidArgument, "kernel_shape ", kernel_shape_.to_string(), " does not match w (input ", wi, ") ",
           w.shape().to_string());
    const WindowGeometry g = window_geometry(attrs_, node_, in, kernel);
    if (xz && xz->dtype() != x.dtype()) fail(ErrorCode::kInvalidArgument, "x_zero_point (input 2) must have x's type");
    if (wz && wz->dtype() != w.dtype())
      fail(ErrorCode::kInvalidArgument, "w_zero_point (input ", qlinear_ ? 5 : 3, ") must have w's type");
    if (xz) require_one(*xz, "x_zero_point", 2);
    auto per_channel = [&](const Tensor* t, const char* name, int idx) {
      if (t && !(t->numel() == 1 && t->rank() <= 1) && !(t->rank() == 1 && t->dim(0) == M))
        fail(ErrorCode::kInvalidArgument, name, " (input ", idx, ") must be a scalar or have ", M, " values (one per output channel), got shape ",
             t->shape().to_string());
    };
    per_channel(wz, "w_zero_point", qlinear_ ? 5 : 3);
    if (qlinear_) {
      require_one(*xs, "x_scale", 1);
      per_channel(ws, "w_scale", 4);
      require_one(*ys, "y_scale", 6);
      require_one(*yz, "y_zero_point", 7);
      if (yz->dtype() != y.dtype()) fail(ErrorCode::kInvalidArgument, "y_zero_point (input 7) must have y's type");
      if (bias && (bias->rank() != 1 || bias->dim(0) != M))
        fail(ErrorCode::kInvalidArgument, "B (input 8) must have ", M, " values, got shape ", bias->shape().to_string());
      if (bias && bias->dtype() != DType::kInt32) fail(ErrorCode::kInvalidArgument, "B (input 8) must be int32");
    }
    if (y.numel() == 0) return;
    const int64_t Cg = C / group_, Mg = M / group_, kvol = kernel.numel(), Kg = Cg * kvol;
    const int64_t in_size = in.numel(), out_size = g.out.numel();
    int16_t *w16 = nullptr, *col = nullptr;
    int32_t* acc = nullptr;
    float *wzf = nullptr, *mult = nullptr;
    carve(Workspace::kQuant, [&](Carver& c) {
      w16 = c.take<int16_t>(M * Kg);
      col = c.take<int16_t>(Kg * out_size);
      acc = qlinear_ ? c.take<int32_t>(Mg * out_size) : nullptr;
      wzf = wz ? c.take<float>(wz->numel()) : nullptr;
      mult = qlinear_ ? c.take<float>(M) : nullptr;
    });
    // Weights minus their (per output channel) zero point.
    dispatch_q8(w.dtype(), [&]<class QW>() {
      if (wz) load_q<QW, float>(*wz, wzf);
      const auto* pw = static_cast<const typename QW::storage*>(w.raw_data());
      for (int64_t m = 0; m < M; ++m) {
        const int32_t z = wz ? static_cast<int32_t>(wzf[wz->numel() == 1 ? 0 : m]) : 0;
        for (int64_t p = 0; p < Kg; ++p) w16[m * Kg + p] = static_cast<int16_t>(QW::ivalue(pw[m * Kg + p]) - z);
      }
    }, ctx.node().op_type.c_str());
    float ysf = 1, yzf = 0;
    if (qlinear_) {
      float xsf;
      load_values<float>(*xs, &xsf);
      load_values<float>(*ys, &ysf);
      dispatch_q8(yz->dtype(), [&]<class Q>() { load_q<Q, float>(*yz, &yzf); }, "QLinearConv");
      float* wsf = mult;  // w_scale values, then turned into multipliers in place
      if (ws->numel() == 1) {
        load_values<float>(*ws, wsf);
        for (int64_t m = 1; m < M; ++m) wsf[m] = wsf[0];
      } else {
        load_values<float>(*ws, wsf);
      }
      for (int64_t m = 0; m < M; ++m) mult[m] = xsf * wsf[m] / ysf;
    }
    const int32_t* pb = bias ? bias->data<int32_t>() : nullptr;
    dispatch_q8(x.dtype(), [&]<class QX>() {
      int32_t xzv = 0;
      if (xz) xzv = QX::ivalue(*static_cast<const typename QX::storage*>(xz->raw_data()));
      const auto* px = static_cast<const typename QX::storage*>(x.raw_data());
      for (int64_t n = 0; n < N; ++n)
        for (int64_t grp = 0; grp < group_; ++grp) {
          im2col_q(px + (n * C + grp * Cg) * in_size, xzv, Cg, in, g, col, ctx.pool());
          const int16_t* wg = w16 + grp * Mg * Kg;
          if (!qlinear_) {
            int32_t* yg = y.data<int32_t>() + (n * M + grp * Mg) * out_size;
            igemm(Mg, out_size, Kg, wg, Kg, col, out_size, yg, out_size, ctx.pool());
            continue;
          }
          igemm(Mg, out_size, Kg, wg, Kg, col, out_size, acc, out_size, ctx.pool());
          dispatch_q8(y.dtype(), [&]<class QY>() {
            auto* yg = static_cast<typename QY::storage*>(y.raw_data()) + (n * M + grp * Mg) * out_size;
            parallel_range(ctx.pool(), Mg, out_size * 4, [&](int64_t m0, int64_t m1) {
              for (int64_t mm = m0; mm < m1; ++mm) {
                const int64_t m = grp * Mg + mm;
                const int32_t bv = pb ? pb[m] : 0;
                const float mu = mult[m];
                const int32_t* ar = acc + mm * out_size;
                auto* yr = yg + mm * out_size;
                for (int64_t o = 0; o < out_size; ++o) {
                  const int32_t v = static_cast<int32_t>(static_cast<uint32_t>(ar[o]) + static_cast<uint32_t>(bv));
                  yr[o] = QY::quantize(static_cast<float>(v) * mu, yzf, true);
                }
              }
            });
          }, "QLinearConv");
        }
    }, ctx.node().op_type.c_str());
  }

 private:
  const Node& node_;
  WindowAttrs attrs_;  // read once (no attribute lookups per run)
  bool qlinear_;
  int64_t group_;
  bool has_kernel_shape_ = false;
  Shape kernel_shape_;
};

/// onyx::QLinearConvAdd channels-first (qconv_add.hpp): the convolution, then the residual sum
/// over its output in place.
class QConvAddKernel final : public Kernel {
 public:
  explicit QConvAddKernel(const KernelCreateInfo& info) : conv_(info, true) {}

  void compute(KernelContext& ctx) const override {
    conv_.compute(ctx);
    Tensor& y = ctx.output(0);
    if (y.numel() != 0) qconv_add_in_place(qconv_add_sum(ctx, y), y, ctx.pool());
  }

 private:
  QConvKernel conv_;
};

std::unique_ptr<Kernel> make_qlinear_conv(const KernelCreateInfo& info) { return std::make_unique<QConvKernel>(info, true); }
std::unique_ptr<Kernel> make_qlinear_conv_add(const KernelCreateInfo& info) { return std::make_unique<QConvAddKernel>(info); }
std::unique_ptr<Kernel> make_conv_integer(const KernelCreateInfo& info) { return std::make_unique<QConvKernel>(info, false); }

using namespace types;
constexpr TypeMask kQ8 = type_mask({DType::kUInt8, DType::kInt8});
constexpr TypeMask kF8 =
    type_mask({DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ});
constexpr TypeMask kQ21Extra = type_mask({DType::kUInt16, DType::kInt16, DType::kUInt4, DType::kInt4, DType::kFloat4E2M1, DType::kUInt2, DType::kInt2});
constexpr TypeMask kInt32 = type_mask({DType::kInt32});
constexpr TypeMask kQuantIn10 = type_mask({DType::kFloat, DType::kInt32});
constexpr TypeMask kQuantIn19 = type_mask({DType::kFloat, DType::kFloat16, DType::kBFloat16, DType::kInt32});
constexpr TypeMask kDeqOut = type_mask({DType::kFloat, DType::kFloat16, DType::kBFloat16});

const KernelDef kDefs[] = {
    {"", "QuantizeLinear", 10, 18, {{0, kQuantIn10}, {-1, kQ8}}, make_quantize},
    {"", "QuantizeLinear", 19, 20, {{0, kQuantIn19}, {-1, kQ8 | kF8}}, make_quantize},
    {"", "QuantizeLinear", 21, 99, {{0, kQuantIn19}, {-1, kQ8 | kF8 | kQ21Extra}}, make_quantize},
    {"", "DequantizeLinear", 10, 18, {{0, kQ8 | kInt32}, {-1, kFloat}}, make_dequantize},
    {"", "DequantizeLinear", 19, 20, {{0, kQ8 | kInt32 | kF8}, {-1, kDeqOut}}, make_dequantize},
    {"", "DequantizeLinear", 21, 99, {{0, kQ8 | kInt32 | kF8 | kQ21Extra}, {-1, kDeqOut}}, make_dequantize},
    {"", "DynamicQuantizeLinear", 11, 99, {{0, kFloat}}, make_dynamic_quantize},
    {"", "QLinearConv", 10, 99, {{0, kQ8}, {3, kQ8}}, make_qlinear_conv},
    {"onyx", "QLinearConvAdd", 1, 1, {{0, kQ8}, {3, kQ8}}, make_qlinear_conv_add},
    {"", "ConvInteger", 10, 99, {{0, kQ8}, {1, kQ8}}, make_conv_integer},
};

}  // namespace

DynamicQuant dynamic_quantize_u8(const float* x, int64_t n, uint8_t* y, ThreadPool& pool) {
  // The range always includes 0 so that 0 is exactly representable (NaNs are skipped). Per
  // part of the input, then over the parts.
  constexpr int64_t kParts = 64;
  const int64_t per = std::max<int64_t>(1, (n + kParts - 1) / kParts);
  float part_lo[kParts], part_hi[kParts];
  parallel_range(pool, kParts, per, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      part_lo[p] = part_hi[p] = 0.0f;
      const int64_t b = p * per;
      if (b < n) qmath::min_max(x + b, std::min(per, n - b), part_lo[p], part_hi[p]);
    }
  });
  float lo = 0.0f, hi = 0.0f;
  for (int64_t p = 0; p < kParts; ++p) {
    lo = std::min(lo, part_lo[p]);
    hi = std::max(hi, part_hi[p]);
  }
  DynamicQuant q;
  q.scale = (hi - lo) / 255.0f;
  float zp = 0.0f;
  if (q.scale > 0.0f && std::isfinite(q.scale)) zp = std::nearbyint(std::clamp(0.0f - lo / q.scale, 0.0f, 255.0f));
  q.zero_point = static_cast<int32_t>(zp);
  if (!y) return q;
  if (!(q.scale > 0.0f)) {
    std::memset(y, 0, static_cast<size_t>(n));
    return q;
  }
  parallel_range(pool, n, 1, [&](int64_t i0, int64_t i1) { qmath::quantize_row(x + i0, y + i0, i1 - i0, q.scale, zp); });
  return q;
}

// The loops behind qmatmul.cpp's kernels, for what those do not take (a batched B, per-row A
// parameters, float8).
std::unique_ptr<Kernel> make_matmul_integer_reference(const KernelCreateInfo& info) { return make_matmul_integer(info); }
std::unique_ptr<Kernel> make_qlinear_matmul_reference(const KernelCreateInfo& info) { return make_qlinear_matmul(info); }

std::span<const KernelDef> quant_kernels() { return kDefs; }

}  // namespace onyx::cpu
