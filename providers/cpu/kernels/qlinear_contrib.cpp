// CPU kernels: the com.microsoft quantized operators ONNX Runtime's quantizer writes in its
// QOperator format (QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax,
// QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat), over uint8 and int8.
//
// The arithmetic follows ONNX Runtime's CPU kernels step by step (which products are rounded,
// in which order sums are taken, the integer path of the global pool), so that the results are
// ONNX Runtime's to the bit but for rare rounding ties (docs/quantization.md); where its
// definition differs from a plain dequantize-compute-quantize, this file says so next to the
// code. Elementwise ops and pools are vectorised (qmath.hpp); lookup-table ops build their
// 256-entry table once when the scales and zero points are constants.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/qmath.hpp"
#include "ops/nn.hpp"

namespace onyx::cpu {
namespace {

using qmath::kLanes;
using qmath::kMax;
using qmath::kMin;
using qmath::load_int;
using qmath::load_int_n;
using qmath::qadd_fixed;
using qmath::qadd_rows;
using qmath::rounded;
using qmath::round_even;
using qmath::store_int;
using qmath::store_int_n;
using qmath::store_rounded;
using qmath::vf;
using qmath::vi;
using vmath::splat;

using qmath::to_float;

template <class F>
void dispatch_q8(DType dt, F&& f, const char* what) {
  switch (dt) {
    case DType::kUInt8: f.template operator()<uint8_t>(); break;
    case DType::kInt8: f.template operator()<int8_t>(); break;
    default: unsupported_dtype(what, dt);
  }
}

// ---- scales and zero points ----

/// One quantized operand's parameters.
struct QParam {
  float scale = 1.0f;
  int32_t zp = 0;
};

bool single(const Tensor& t) { return t.numel() == 1 && t.rank() <= 1; }

float scale_of(const Tensor& t, const char* name, size_t idx) {
  if (t.dtype() != DType::kFloat)
    fail(ErrorCode::kInvalidArgument, name, " (input ", idx, ") must be float, got ", dtype_name(t.dtype()));
  if (!single(t))
    fail(ErrorCode::kInvalidArgument, name, " (input ", idx, ") must be a scalar or a 1-element 1-D tensor, got shape ",
         t.shape().to_string());
  return *t.data<float>();
}

/// A zero point of the data's type `dt` (0 when the optional input is omitted).
int32_t zero_point_of(const Tensor* t, DType dt, const char* name, size_t idx) {
  if (!t) return 0;
  if (t->dtype() != dt)
    fail(ErrorCode::kInvalidArgument, name, " (input ", idx, ") has type ", dtype_name(t->dtype()), " but the data is ",
         dtype_name(dt));
  if (!single(*t))
    fail(ErrorCode::kInvalidArgument, name, " (input ", idx, ") must be a scalar or a 1-element 1-D tensor, got shape ",
         t->shape().to_string());
  return dt == DType::kInt8 ? static_cast<int32_t>(*static_cast<const int8_t*>(t->raw_data()))
                            : static_cast<int32_t>(*static_cast<const uint8_t*>(t->raw_data()));
}

QParam qparam(const KernelContext& ctx, size_t si, size_t zi, DType dt, const char* sname, const char* zname) {
  return {scale_of(ctx.input(si), sname, si), zero_point_of(ctx.optional_input(zi), dt, zname, zi)};
}

/// The same read once at kernel creation, when the scale and the zero point (if given) are
/// constants; false otherwise.
bool const_qparam(const KernelCreateInfo& info, size_t si, size_t zi, DType dt, const char* sname, const char* zname,
                  QParam& out) {
  const Tensor* s = info.constant(si);
  if (!s) return false;
  const Tensor* z = nullptr;
  if (info.node.has_input(zi) && !(z = info.constant(zi))) return false;
  out = {scale_of(*s, sname, si), zero_point_of(z, dt, zname, zi)};
  return true;
}

void require_type(const Tensor& t, DType dt, const char* name, size_t idx) {
  if (t.dtype() != dt)
    fail(ErrorCode::kInvalidArgument, name, " (input ", idx, ") has type ", dtype_name(t.dtype()), "; expected ",
         dtype_name(dt));
}

/// saturate(round_half_even(v / scale) + zp), the quotient clamped first (a NaN gives the
/// type's minimum): ONNX Runtime's QuantizeLinear as its lookup tables use it.
template <class S>
S quantize_value(float v, float scale, int32_t zp) {
  float q = v / scale;
  const float lo = kMin<S> - static_cast<float>(zp), hi = kMax<S> - static_cast<float>(zp);
  q = q > lo ? q : lo;
  q = q < hi ? q : hi;
  return static_cast<S>(round_even(q) + zp);
}

/// saturate(round_half_even(t)) for t already in the quantized domain (NaN gives the minimum).
template <class S>
S saturate_round(float t) {
  t = t > kMin<S> ? t : kMin<S>;
  t = t < kMax<S> ? t : kMax<S>;
  return static_cast<S>(round_even(t));
}

// ---- QLinearAdd / QLinearMul ----
//
// ONNX Runtime computes C = saturate(round(fixed + A * (sa / sc) + B * (sb / sc))) with
// fixed = zc - (sa / sc * za + sb / sc * zb) in float (qmath::qadd_fixed): on an FMA machine as
// fma(A, ra, fma(B, rb, fixed)), else with each product rounded and added left to right; an
// operand that is one value along the row is folded into `fixed` first (add_fold).
// QLinearMul: C = saturate(round((A - za) * (B - zb) [an exact integer] * (sa * sb / sc)
// [rounded] + zc)).

/// `fixed` with the term of an operand that is one value `v` along the row folded in: fused
/// where there is FMA (ONNX Runtime's compiler fuses its product and sum), else rounded first.
float add_fold(float fixed, float v, float r) {
#if defined(__FMA__) || defined(__AVX512F__)
  return std::fma(v, r, fixed);
#else
  return fixed + rounded(v * r);
#endif
}

/// c = saturate(round(x * rx + fixed)) over n elements (`fixed` holds the other operand's term).
template <class S>
void add_row_scalar(const S* x, S* c, int64_t n, float rx, float fixed) {
  const vf vrx = splat(rx), vfix = splat(fixed);
  auto one = [&](vi v) {
#if defined(__FMA__) || defined(__AVX512F__)
    return qmath::fmadd(to_float(v), vrx, vfix);
#else
    return vfix + rounded(to_float(v) * vrx);
#endif
  };
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store_rounded(c + i, one(load_int(x + i)));
  if (i < n) store_rounded(c + i, one(load_int_n(x + i, n - i)), n - i);
}

/// c = saturate(round((a - za) * (b - zb) * ratio + zc)) over n elements; B is one value
/// (b[0]) when `b_scalar`.
template <class S>
void mul_rows(const S* a, const S* b, bool b_scalar, S* c, int64_t n, int32_t za, int32_t zb, float ratio, float zc) {
  const vi vza = vi{} + za, vzb = vi{} + zb;
  const vi bs = vi{} + (static_cast<int32_t>(b[0]) - zb);
  const vf vr = splat(ratio), vzc = splat(zc);
  auto one = [&](vi x, vi y) { return rounded(to_float((x - vza) * y) * vr) + vzc; };
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store_rounded(c + i, one(load_int(a + i), b_scalar ? bs : load_int(b + i) - vzb));
  if (i < n) store_rounded(c + i, one(load_int_n(a + i, n - i), b_scalar ? bs : load_int_n(b + i, n - i) - vzb), n - i);
}

class QBinaryKernel final : public Kernel {
 public:
  explicit QBinaryKernel(bool mul) : mul_(mul) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(3);
    Tensor& c = ctx.output(0);
    const DType dt = a.dtype();
    require_type(b, dt, "B", 3);
    if (c.dtype() != dt) fail(ErrorCode::kInvalidArgument, "C has type ", dtype_name(c.dtype()), " but A has type ", dtype_name(dt));
    const QParam pa = qparam(ctx, 1, 2, dt, "A_scale", "A_zero_point");
    const QParam pb = qparam(ctx, 4, 5, dt, "B_scale", "B_zero_point");
    const QParam pc = qparam(ctx, 6, 7, dt, "C_scale", "C_zero_point");
    if (c.numel() == 0) return;
    const Broadcast<2> bc(c.shape(), {&a.shape(), &b.shape()});
    dispatch_q8(dt, [&]<class S>() {
      const S* pa_d = static_cast<const S*>(a.raw_data());
      const S* pb_d = static_cast<const S*>(b.raw_data());
      S* pc_d = static_cast<S*>(c.raw_data());
      const float ra = pa.scale / pc.scale, rb = pb.scale / pc.scale;
      const float ratio = pa.scale * pb.scale / pc.scale;
      // Per row: both operands rows, or one of them a single value.
      auto row = [&](int64_t out, const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
        const S* x = pa_d + off[0];
        const S* y = pb_d + off[1];
        S* z = pc_d + out;
        if (!mul_) {
          if (st[0] && st[1]) {
            qadd_rows(x, y, z, n, ra, rb, qadd_fixed(ra, pa.zp, rb, pb.zp, pc.zp));
          } else if (st[0]) {
            add_row_scalar(x, z, n, ra, add_fold(qadd_fixed(ra, pa.zp, rb, pb.zp, pc.zp), static_cast<float>(y[0]), rb));
          } else {
            const float fixed = add_fold(qadd_fixed(rb, pb.zp, ra, pa.zp, pc.zp), static_cast<float>(x[0]), ra);
            if (st[1]) {
              add_row_scalar(y, z, n, rb, fixed);
            } else {  // one value for the whole row
              add_row_scalar(y, z, 1, rb, fixed);
              std::memset(z + 1, static_cast<int>(static_cast<uint8_t>(z[0])), static_cast<size_t>(n - 1));
            }
          }
        } else if (st[0]) {
          mul_rows(x, y, st[1] == 0, z, n, pa.zp, pb.zp, ratio, static_cast<float>(pc.zp));
        } else {
          mul_rows(y, x, true, z, st[1] ? n : 1, pb.zp, pa.zp, ratio, static_cast<float>(pc.zp));
          if (!st[1]) std::memset(z + 1, static_cast<int>(static_cast<uint8_t>(z[0])), static_cast<size_t>(n - 1));
        }
      };
      bc.run(ctx.pool(), c.numel(), row);  // (one long row, same shapes or a single value: split too)
    }, mul_ ? "QLinearMul" : "QLinearAdd");
  }

 private:
  bool mul_;
};

std::unique_ptr<Kernel> make_qlinear_add(const KernelCreateInfo&) { return std::make_unique<QBinaryKernel>(false); }
std::unique_ptr<Kernel> make_qlinear_mul(const KernelCreateInfo&) { return std::make_unique<QBinaryKernel>(true); }

// ---- QLinearSigmoid / QLinearLeakyRelu: a 256-entry table ----

using ByteTable = std::array<uint8_t, 256>;

/// table[b] = quantize(f(dequantize(b))) for every byte b (read as S), with ONNX Runtime's
/// dequantization x_scale * (b - x_zero_point) in float.
template <class S, class F>
void build_table(uint8_t* table, QParam x, QParam y, F&& f) {
  for (int i = 0; i < 256; ++i) {
    const S q = static_cast<S>(i);
    const float v = x.scale * static_cast<float>(static_cast<int32_t>(q) - x.zp);
    const S r = quantize_value<S>(f(v), y.scale, y.zp);
    std::memcpy(&table[i], &r, 1);
  }
}

/// Applies a byte table to n bytes, split over the pool.
void apply_table(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table, ThreadPool& pool) {
  parallel_range(pool, n, 1, [&](int64_t i0, int64_t i1) { qmath::lookup_bytes(x + i0, y + i0, i1 - i0, table); });
}

class QLookupKernel final : public Kernel {
 public:
  QLookupKernel(const KernelCreateInfo& info, bool sigmoid)
      : sigmoid_(sigmoid), alpha_(sigmoid ? 0.0f : info.node.attr_float("alpha", 0.01f)) {
    const DType dt = info.input_dtype(0);
    QParam x, y;
    if ((dt == DType::kUInt8 || dt == DType::kInt8) && const_qparam(info, 1, 2, dt, "X_scale", "X_zero_point", x) &&
        const_qparam(info, 3, 4, dt, "Y_scale", "Y_zero_point", y)) {
      build(dt, x, y, table_.data());
      fixed_ = true;
    }
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const DType dt = x.dtype();
    if (dt != DType::kUInt8 && dt != DType::kInt8) unsupported_dtype(sigmoid_ ? "QLinearSigmoid" : "QLinearLeakyRelu", dt);
    if (y.dtype() != dt) fail(ErrorCode::kInvalidArgument, "Y has type ", dtype_name(y.dtype()), " but X has type ", dtype_name(dt));
    const QParam px = qparam(ctx, 1, 2, dt, "X_scale", "X_zero_point");
    const QParam py = qparam(ctx, 3, 4, dt, "Y_scale", "Y_zero_point");
    ByteTable local;
    const uint8_t* table = table_.data();
    if (!fixed_) {
      build(dt, px, py, local.data());
      table = local.data();
    }
    apply_table(static_cast<const uint8_t*>(x.raw_data()), static_cast<uint8_t*>(y.raw_data()), x.numel(), table, ctx.pool());
  }

 private:
  void build(DType dt, QParam x, QParam y, uint8_t* table) const {
    dispatch_q8(dt, [&]<class S>() {
      if (sigmoid_)
        build_table<S>(table, x, y, [](float v) { return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(v)))); });
      else
        build_table<S>(table, x, y, [a = alpha_](float v) { return v >= 0.0f ? v : a * v; });
    }, sigmoid_ ? "QLinearSigmoid" : "QLinearLeakyRelu");
  }

  bool sigmoid_;
  float alpha_;
  bool fixed_ = false;
  ByteTable table_{};
};

std::unique_ptr<Kernel> make_qlinear_sigmoid(const KernelCreateInfo& info) { return std::make_unique<QLookupKernel>(info, true); }
std::unique_ptr<Kernel> make_qlinear_leaky_relu(const KernelCreateInfo& info) {
  return std::make_unique<QLookupKernel>(info, false);
}

// ---- QLinearSoftmax ----
//
// ONNX Runtime's definition: over each row of D values (D = the dims from `axis` on for opset
// attribute < 13, else dim `axis`), e[d] = exp((x[d] - max) * x_scale) from a 256-entry float
// table (scaled by a constant that keeps sums of D entries finite; the constant is part of the
// definition, as it decides how sums round), s = the float sum of e in order, and
// y[d] = saturate(round_half_even(e[d] * floor(1 / y_scale) / s) + y_zero_point). Two departures
// from the plain definition, both ONNX Runtime's: the output scale enters as floor(1 / y_scale),
// and x_zero_point plays no part (it cancels). ONNX Runtime lets int8 results above 127 wrap
// around (a row whose maximum dominates gives -128 rather than 127); onyx saturates them.

/// table[k] = the scaled exp(-k * x_scale) for k = max - x in [0, 255], for rows of d values.
void softmax_table(float x_scale, int64_t d, float* table) {
  const double shift_log = std::log(static_cast<double>(std::numeric_limits<float>::max() / static_cast<float>(d)));
  const double shift = std::max(0.0, shift_log - 5.0) / static_cast<double>(x_scale);
  for (int k = 0; k < 256; ++k)
    table[k] = static_cast<float>(std::exp((shift - static_cast<double>(k)) * static_cast<double>(x_scale)));
}

template <class S>
void softmax_row(const S* x, S* y, int64_t d, const float* table, float y_mult, int32_t yz) {
  S m = x[0];
  for (int64_t i = 1; i < d; ++i) m = x[i] > m ? x[i] : m;
  const int32_t mx = m;
  float sum = 0.0f;
  for (int64_t i = 0; i < d; ++i) sum += table[mx - static_cast<int32_t>(x[i])];
  const vf vm = splat(y_mult), vs = splat(sum);
  const vf lo = splat(kMin<S> - static_cast<float>(yz)), hi = splat(kMax<S> - static_cast<float>(yz));
  const vi vzi = vi{} + yz;
  for (int64_t i = 0; i < d; i += kLanes) {
    const int64_t n = std::min<int64_t>(kLanes, d - i);
    float e[kLanes] = {};
    for (int64_t l = 0; l < n; ++l) e[l] = table[mx - static_cast<int32_t>(x[i + l])];
    const vf q = rounded(vmath::load(e) * vm) / vs;
    const vi r = round_even(qmath::clamp(q, lo, hi)) + vzi;
    if (n == kLanes)
      store_int(y + i, r);
    else
      store_int_n(y + i, r, n);
  }
}

class QSoftmaxKernel final : public Kernel {
 public:
  explicit QSoftmaxKernel(const KernelCreateInfo& info)
      : opset_(info.node.attr_int("opset", 13)), axis_(info.node.attr_int("axis", opset_ < 13 ? 1 : -1)) {
    // The table depends on x_scale and on the row length: built now when both are known.
    const Tensor* xs = info.constant(1);
    const TypeInfo* xt = info.input_types.empty() ? nullptr : info.input_types[0];
    if (!xs || !xt || !xt->has_shape || xt->shape.empty()) return;
    const Shape& s = xt->shape;
    const int64_t axis = normalize_axis(axis_, static_cast<int64_t>(s.size()), info.node.label());
    int64_t d = 1;
    for (size_t k = static_cast<size_t>(axis); k < (opset_ < 13 ? s.size() : static_cast<size_t>(axis) + 1); ++k) {
      if (s[k] < 0) return;
      d *= s[k];
    }
    if (d <= 0) return;
    softmax_table(scale_of(*xs, "X_scale", 1), d, table_.data());
    table_d_ = d;
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const DType dt = x.dtype();
    if (dt != DType::kUInt8 && dt != DType::kInt8) unsupported_dtype("QLinearSoftmax", dt);
    if (y.dtype() != dt) fail(ErrorCode::kInvalidArgument, "Y has type ", dtype_name(y.dtype()), " but X has type ", dtype_name(dt));
    const float xs = scale_of(ctx.input(1), "X_scale", 1);
    (void)zero_point_of(ctx.optional_input(2), dt, "x_zero_point", 2);
    const float ys = scale_of(ctx.input(3), "y_scale", 3);
    if (!ctx.optional_input(4)) fail(ErrorCode::kInvalidArgument, "y_zero_point (input 4) is required");
    const int32_t yz = zero_point_of(ctx.optional_input(4), dt, "y_zero_point", 4);
    const int64_t n = x.numel();
    if (n == 0) return;
    const int64_t r = static_cast<int64_t>(x.rank());
    if (r == 0) fail(ErrorCode::kInvalidArgument, "X must have rank >= 1");
    const int64_t axis = normalize_axis(axis_, r, "QLinearSoftmax");
    int64_t d = 1, inner = 1;
    for (int64_t k = axis; k < r; ++k) (opset_ < 13 || k == axis ? d : inner) *= x.dim(static_cast<size_t>(k));
    std::array<float, 256> local;
    const float* table = table_.data();
    if (d != table_d_) {
      softmax_table(xs, d, local.data());
      table = local.data();
    }
    const float y_mult = std::floor(1.0f / ys);
    const int64_t rows = n / d;
    dispatch_q8(dt, [&]<class S>() {
      const S* px = static_cast<const S*>(x.raw_data());
      S* py = static_cast<S*>(y.raw_data());
      parallel_range(ctx.pool(), rows, d * 4, [&](int64_t r0, int64_t r1) {
        if (inner == 1) {
          for (int64_t row = r0; row < r1; ++row) softmax_row(px + row * d, py + row * d, d, table, y_mult, yz);
          return;
        }
        // A strided row (the axis is not the last dim): gathered, computed, scattered.
        S* buf = nullptr;
        carve(Workspace::kQuant, [&](Carver& c) { buf = c.take<S>(2 * d); });
        for (int64_t row = r0; row < r1; ++row) {
          const int64_t base = (row / inner) * d * inner + row % inner;
          for (int64_t i = 0; i < d; ++i) buf[i] = px[base + i * inner];
          softmax_row(buf, buf + d, d, table, y_mult, yz);
          for (int64_t i = 0; i < d; ++i) py[base + i * inner] = buf[d + i];
        }
      });
    }, "QLinearSoftmax");
  }

 private:
  int64_t opset_;
  int64_t axis_;
  int64_t table_d_ = -1;  // the row length table_ was built for (-1: none)
  std::array<float, 256> table_{};
};

std::unique_ptr<Kernel> make_qlinear_softmax(const KernelCreateInfo& info) { return std::make_unique<QSoftmaxKernel>(info); }

// ---- QLinearGlobalAveragePool (and QLinearAveragePool over the whole image) ----
//
// ONNX Runtime's integer path: acc = sum(x) - x_zero_point * image (exact), then
// y = saturate(round_half_even(acc * (x_scale / (y_scale * image))) + y_zero_point), the
// product in float.

template <class S>
void global_pool(const S* x, S* y, int64_t batch, int64_t channels, int64_t image, bool channels_last, QParam px, QParam py,
                 ThreadPool& pool) {
  const float scale = px.scale / (py.scale * static_cast<float>(image));
  const int64_t bias = -static_cast<int64_t>(px.zp) * image;
  const float lo = kMin<S> - static_cast<float>(py.zp), hi = kMax<S> - static_cast<float>(py.zp);
  auto requant = [&](int64_t acc) {
    float v = static_cast<float>(acc) * scale;
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    return static_cast<S>(round_even(v) + py.zp);
  };
  constexpr bool kSigned = std::is_signed_v<S>;
  if (!channels_last || channels == 1) {
    parallel_range(pool, batch * channels, image, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c)
        y[c] = requant(qmath::sum_bytes<kSigned>(reinterpret_cast<const uint8_t*>(x + c * image), image) + bias);
    });
    return;
  }
  // Channels last: int32 sums per channel, a block of channels at a time, over every pixel.
  constexpr int64_t kBlock = 4 * kLanes;
  const int64_t blocks = (channels + kBlock - 1) / kBlock;
  const bool fits32 = image < (int64_t(1) << 23);  // |sum| stays below 2^31
  parallel_range(pool, batch * blocks, image * kBlock, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / blocks, c0 = (t % blocks) * kBlock, cn = std::min(kBlock, channels - c0);
      const S* xb = x + n * image * channels + c0;
      S* yb = y + n * channels + c0;
      if (!fits32) {
        for (int64_t c = 0; c < cn; ++c) {
          int64_t acc = bias;
          for (int64_t p = 0; p < image; ++p) acc += xb[p * channels + c];
          yb[c] = requant(acc);
        }
        continue;
      }
      vi acc[4];
      for (auto& a : acc) a = vi{} + static_cast<int32_t>(bias);
      const int64_t full = cn / kLanes, rest = cn % kLanes;
      for (int64_t p = 0; p < image; ++p) {
        const S* xp = xb + p * channels;
        for (int64_t k = 0; k < full; ++k) acc[k] += load_int(xp + k * kLanes);
        if (rest) acc[full] += load_int_n(xp + full * kLanes, rest);
      }
      const vf vscale = splat(scale), vlo = splat(lo), vhi = splat(hi);
      const vi vz = vi{} + py.zp;
      for (int64_t k = 0; k * kLanes < cn; ++k) {
        const vi q = round_even(qmath::clamp(to_float(acc[k]) * vscale, vlo, vhi)) + vz;
        const int64_t m = std::min<int64_t>(kLanes, cn - k * kLanes);
        if (m == kLanes)
          store_int(yb + k * kLanes, q);
        else
          store_int_n(yb + k * kLanes, q, m);
      }
    }
  });
}

class QGlobalAvgPoolKernel final : public Kernel {
 public:
  explicit QGlobalAvgPoolKernel(const KernelCreateInfo& info) : channels_last_(info.node.attr_int("channels_last", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const DType dt = x.dtype();
    if (dt != DType::kUInt8 && dt != DType::kInt8) unsupported_dtype("QLinearGlobalAveragePool", dt);
    if (x.rank() < 3) fail(ErrorCode::kInvalidArgument, "X must have rank >= 3, got shape ", x.shape().to_string());
    if (!ctx.optional_input(2)) fail(ErrorCode::kInvalidArgument, "x_zero_point (input 2) is required");
    if (!ctx.optional_input(4)) fail(ErrorCode::kInvalidArgument, "y_zero_point (input 4) is required");
    const QParam px = qparam(ctx, 1, 2, dt, "x_scale", "x_zero_point");
    const QParam py = qparam(ctx, 3, 4, dt, "y_scale", "y_zero_point");
    const int64_t batch = x.dim(0), channels = channels_last_ ? x.dim(x.rank() - 1) : x.dim(1);
    const int64_t image = batch * channels == 0 ? 0 : x.numel() / (batch * channels);
    if (y.numel() == 0) return;
    if (image == 0) fail(ErrorCode::kInvalidArgument, "X has shape ", x.shape().to_string(), ": an empty image has no average");
    dispatch_q8(dt, [&]<class S>() {
      global_pool(static_cast<const S*>(x.raw_data()), static_cast<S*>(y.raw_data()), batch, channels, image, channels_last_, px,
                  py, ctx.pool());
    }, "QLinearGlobalAveragePool");
  }

 private:
  bool channels_last_;
};

std::unique_ptr<Kernel> make_qlinear_global_average_pool(const KernelCreateInfo& info) {
  return std::make_unique<QGlobalAvgPoolKernel>(info);
}

// ---- QLinearAveragePool ----
//
// ONNX Runtime's float path: x is dequantized (x_scale * (x - x_zero_point), rounded), each
// window summed in float in row-major order, divided by the window's element count (the
// kernel's size with count_include_pad), and y = saturate(round_half_even(v / y_scale +
// y_zero_point)), the zero point added before rounding. Windows are clipped to the input at both
// ends (padding at the end only counts through count_include_pad). A window covering the whole
// unpadded image takes the integer path of QLinearGlobalAveragePool instead.

/// Pooling geometry over exactly three spatial dims (fewer are padded in front with size 1).
struct Geo3 {
  int64_t in[3], out[3], k[3], s[3], p[3];
  int64_t ksize = 1;
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  /// Window [b, e) of output position o in dim j, clipped to the input.
  void bounds(int j, int64_t o, int64_t& b, int64_t& e) const {
    const int64_t start = o * s[j] - p[j];
    e = std::min(start + k[j], in[j]);
    b = std::max<int64_t>(start, 0);
  }
};

template <class S>
struct PoolArgs {
  const S* x;
  S* y;
  Geo3 g;
  int64_t batch, channels;
  bool count_pad;
  QParam px, py;
};

template <class S>
inline int64_t window_count(const PoolArgs<S>& a, const int64_t (&b)[3], const int64_t (&e)[3]) {
  return a.count_pad ? a.g.ksize : (e[0] - b[0]) * (e[1] - b[1]) * (e[2] - b[2]);
}

/// Finalises one window sum (scalar).
template <class S>
inline S pool_out(float sum, int64_t count, const QParam& py) {
  const float v = sum / static_cast<float>(count);
  return saturate_round<S>(v / py.scale + static_cast<float>(py.zp));
}

/// Channels last: one output pixel at a time, vectors of channels.
template <class S>
void avg_pool_nhwc(const PoolArgs<S>& a, ThreadPool& pool) {
  const Geo3& g = a.g;
  const int64_t C = a.channels, pixels = a.batch * g.out_size();
  const vf vxs = splat(a.px.scale), vys = splat(a.py.scale), vyz = splat(static_cast<float>(a.py.zp));
  const vi vxz = vi{} + a.px.zp;
  parallel_range(pool, pixels, C * g.ksize, [&](int64_t p0, int64_t p1) {
    for (int64_t pix = p0; pix < p1; ++pix) {
      int64_t rem = pix % g.out_size();
      const int64_t n = pix / g.out_size();
      int64_t o[3];
      for (int j = 2; j >= 0; --j) {
        o[j] = rem % g.out[j];
        rem /= g.out[j];
      }
      int64_t b[3], e[3];
      for (int j = 0; j < 3; ++j) g.bounds(j, o[j], b[j], e[j]);
      const vf vcount = splat(static_cast<float>(window_count(a, b, e)));
      const S* xn = a.x + n * g.in_size() * C;
      S* yp = a.y + pix * C;
      for (int64_t c0 = 0; c0 < C; c0 += kLanes) {
        const int64_t m = std::min<int64_t>(kLanes, C - c0);
        vf acc{};
        for (int64_t i0 = b[0]; i0 < e[0]; ++i0)
          for (int64_t i1 = b[1]; i1 < e[1]; ++i1)
            for (int64_t i2 = b[2]; i2 < e[2]; ++i2) {
              const S* xp = xn + ((i0 * g.in[1] + i1) * g.in[2] + i2) * C + c0;
              const vi q = m == kLanes ? load_int(xp) : load_int_n(xp, m);
              acc += rounded(to_float(q - vxz) * vxs);
            }
        store_rounded(yp + c0, (acc / vcount) / vys + vyz, m);
      }
    }
  });
}

/// Channels first: one output row (along the last spatial dim) at a time; vectors of outputs
/// where the row's windows lie inside the input and the stride is 1, scalars elsewhere.
template <class S>
void avg_pool_nchw(const PoolArgs<S>& a, ThreadPool& pool) {
  const Geo3& g = a.g;
  float deq[256];  // x_scale * (b - x_zero_point) for every byte b, as the vector path computes it
  for (int i = 0; i < 256; ++i) {
    const S q = static_cast<S>(i);
    deq[i] = rounded(a.px.scale * static_cast<float>(static_cast<int32_t>(q) - a.px.zp));
  }
  const int64_t rows = a.batch * a.channels * g.out[0] * g.out[1];
  const int64_t k2 = g.k[2], s2 = g.s[2], p2 = g.p[2], in2 = g.in[2];
  // Outputs whose window along dim 2 lies inside the input: [v0, v1).
  const int64_t v0 = s2 == 1 ? std::min(p2, g.out[2]) : 0;
  const int64_t v1 = s2 == 1 ? std::clamp<int64_t>(in2 - k2 + p2 + 1, v0, g.out[2]) : 0;
  const vf vxs = splat(a.px.scale), vys = splat(a.py.scale), vyz = splat(static_cast<float>(a.py.zp));
  const vi vxz = vi{} + a.px.zp;
  parallel_range(pool, rows, g.out[2] * g.ksize, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t o1 = row % g.out[1], o0 = (row / g.out[1]) % g.out[0], plane = row / (g.out[0] * g.out[1]);
      const S* xp = a.x + plane * g.in_size();
      S* yr = a.y + plane * g.out_size() + (o0 * g.out[1] + o1) * g.out[2];
      int64_t b[3], e[3];
      g.bounds(0, o0, b[0], e[0]);
      g.bounds(1, o1, b[1], e[1]);
      auto scalar = [&](int64_t o2) {
        g.bounds(2, o2, b[2], e[2]);
        float sum = 0.0f;
        for (int64_t i0 = b[0]; i0 < e[0]; ++i0)
          for (int64_t i1 = b[1]; i1 < e[1]; ++i1) {
            const S* xr = xp + (i0 * g.in[1] + i1) * in2;
            for (int64_t i2 = b[2]; i2 < e[2]; ++i2) sum += deq[static_cast<uint8_t>(xr[i2])];
          }
        yr[o2] = pool_out<S>(sum, window_count(a, b, e), a.py);
      };
      int64_t o2 = 0;
      for (; o2 < v0; ++o2) scalar(o2);
      if (o2 + kLanes <= v1) {
        int64_t bb[3] = {b[0], b[1], 0}, ee[3] = {e[0], e[1], k2};
        const vf vcount = splat(static_cast<float>(window_count(a, bb, ee)));
        for (; o2 + kLanes <= v1; o2 += kLanes) {
          vf acc{};
          for (int64_t i0 = b[0]; i0 < e[0]; ++i0)
            for (int64_t i1 = b[1]; i1 < e[1]; ++i1) {
              const S* xr = xp + (i0 * g.in[1] + i1) * in2 + o2 - p2;
              for (int64_t j = 0; j < k2; ++j) acc += rounded(to_float(load_int(xr + j) - vxz) * vxs);
            }
          store_rounded(yr + o2, (acc / vcount) / vys + vyz);
        }
      }
      for (; o2 < g.out[2]; ++o2) scalar(o2);
    }
  });
}

class QAvgPoolKernel final : public Kernel {
 public:
  explicit QAvgPoolKernel(const KernelCreateInfo& info)
      : node_(info.node),
        attrs_(WindowAttrs::of(info.node, true)),
        kernel_(Shape(info.node.attr_ints("kernel_shape"))),
        count_pad_(info.node.attr_int("count_include_pad", 0) != 0),
        channels_last_(info.node.attr_int("channels_last", 0) != 0) {
    attrs_.dilations = Shape();  // not an attribute of this op
    if (kernel_.empty() || kernel_.size() > 3)
      fail(ErrorCode::kInvalidGraph, node_.label(), ": kernel_shape must have 1 to 3 dims, got ", kernel_.to_string());
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const DType dt = x.dtype();
    if (dt != DType::kUInt8 && dt != DType::kInt8) unsupported_dtype("QLinearAveragePool", dt);
    const size_t r = kernel_.size();
    if (x.rank() != r + 2)
      fail(ErrorCode::kInvalidArgument, "X has shape ", x.shape().to_string(), "; kernel_shape ", kernel_.to_string(),
           " needs rank ", r + 2);
    const QParam px = qparam(ctx, 1, 2, dt, "x_scale", "x_zero_point");
    const QParam py = qparam(ctx, 3, 4, dt, "y_scale", "y_zero_point");
    const int64_t batch = x.dim(0), channels = channels_last_ ? x.dim(r + 1) : x.dim(1);
    Shape spatial;
    for (size_t k = 0; k < r; ++k) spatial.push_back(x.dim(channels_last_ ? k + 1 : k + 2));
    const WindowGeometry wg = window_geometry(attrs_, node_, spatial, kernel_);
    if (y.numel() == 0) return;
    bool whole = spatial == kernel_;
    for (size_t k = 0; k < r; ++k) whole = whole && wg.pad_begin[k] == 0 && wg.pad_end[k] == 0;
    dispatch_q8(dt, [&]<class S>() {
      const S* px_d = static_cast<const S*>(x.raw_data());
      S* py_d = static_cast<S*>(y.raw_data());
      if (whole) return global_pool(px_d, py_d, batch, channels, spatial.numel(), channels_last_, px, py, ctx.pool());
      PoolArgs<S> a{px_d, py_d, {}, batch, channels, count_pad_, px, py};
      for (int j = 0; j < 3; ++j) {
        const int k = j - (3 - static_cast<int>(r));
        a.g.in[j] = k < 0 ? 1 : spatial[k];
        a.g.out[j] = k < 0 ? 1 : wg.out[k];
        a.g.k[j] = k < 0 ? 1 : wg.kernel[k];
        a.g.s[j] = k < 0 ? 1 : wg.stride[k];
        a.g.p[j] = k < 0 ? 0 : wg.pad_begin[k];
        if (k >= 0 && (wg.pad_begin[k] >= wg.kernel[k] || wg.pad_end[k] >= wg.kernel[k]))
          fail(ErrorCode::kInvalidArgument, "pads must be smaller than kernel_shape ", kernel_.to_string());
      }
      a.g.ksize = a.g.k[0] * a.g.k[1] * a.g.k[2];
      if (channels_last_)
        avg_pool_nhwc(a, ctx.pool());
      else
        avg_pool_nchw(a, ctx.pool());
    }, "QLinearAveragePool");
  }

 private:
  const Node& node_;
  WindowAttrs attrs_;
  Shape kernel_;
  bool count_pad_;
  bool channels_last_;
};

std::unique_ptr<Kernel> make_qlinear_average_pool(const KernelCreateInfo& info) { return std::make_unique<QAvgPoolKernel>(info); }

// ---- QLinearConcat ----
//
// Each input is requantized to Y's scale and zero point through a 256-entry table
// (quantize(dequantize(b))), or copied as bytes where its scale and zero point equal Y's.

class QConcatKernel final : public Kernel {
 public:
  explicit QConcatKernel(const KernelCreateInfo& info) : axis_(info.node.attr_int("axis", 0)) {
    const size_t count = info.node.inputs.size() >= 2 ? (info.node.inputs.size() - 2) / 3 : 0;
    modes_.assign(count, kUnknown);
    tables_.resize(count);
    const DType dt = info.output_dtype(0);
    QParam py;
    if ((dt != DType::kUInt8 && dt != DType::kInt8) || !const_qparam(info, 0, 1, dt, "Y_scale", "Y_zero_point", py)) return;
    if (!info.constant(1)) return;  // the zero point is required
    for (size_t k = 0; k < count; ++k) {
      QParam px;
      const size_t i = 2 + 3 * k;
      if (!info.constant(i + 2) || !const_qparam(info, i + 1, i + 2, dt, "X_scale", "X_zero_point", px)) continue;
      modes_[k] = plan(dt, px, py, tables_[k].data());
    }
  }

  void compute(KernelContext& ctx) const override {
    Tensor& y = ctx.output(0);
    const DType dt = y.dtype();
    if (dt != DType::kUInt8 && dt != DType::kInt8) unsupported_dtype("QLinearConcat", dt);
    if (!ctx.optional_input(1)) fail(ErrorCode::kInvalidArgument, "Y_zero_point (input 1) is required");
    const QParam py = qparam(ctx, 0, 1, dt, "Y_scale", "Y_zero_point");
    const size_t count = modes_.size();
    const int64_t r = static_cast<int64_t>(y.rank());
    if (r == 0) fail(ErrorCode::kInvalidArgument, "the inputs must have rank >= 1");
    const int64_t axis = normalize_axis(axis_, r, "QLinearConcat");
    // Check every input against Y's shape before writing anything.
    int64_t along = 0;
    for (size_t k = 0; k < count; ++k) {
      const size_t i = 2 + 3 * k;
      const Tensor& xk = ctx.input(i);
      require_type(xk, dt, "X", i);
      if (!ctx.optional_input(i + 2)) fail(ErrorCode::kInvalidArgument, "X_zero_point (input ", i + 2, ") is required");
      bool ok = static_cast<int64_t>(xk.rank()) == r;
      for (int64_t d = 0; ok && d < r; ++d) ok = d == axis || xk.dim(static_cast<size_t>(d)) == y.dim(static_cast<size_t>(d));
      if (!ok)
        fail(ErrorCode::kInvalidArgument, "input ", i, " has shape ", xk.shape().to_string(), ", which does not fit output ",
             y.shape().to_string(), " off axis ", axis);
      along += xk.dim(static_cast<size_t>(axis));
    }
    if (along != y.dim(static_cast<size_t>(axis)))
      fail(ErrorCode::kInvalidArgument, "the inputs add up to ", along, " along axis ", axis, ", the output has ",
           y.dim(static_cast<size_t>(axis)));
    if (y.numel() == 0) return;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= y.dim(static_cast<size_t>(d));
    for (int64_t d = axis + 1; d < r; ++d) inner *= y.dim(static_cast<size_t>(d));
    const int64_t out_pitch = y.dim(static_cast<size_t>(axis)) * inner;
    auto* py_d = static_cast<uint8_t*>(y.raw_data());
    int64_t offset = 0;
    for (size_t k = 0; k < count; ++k) {
      const size_t i = 2 + 3 * k;
      const Tensor& xk = ctx.input(i);
      const int64_t pitch = xk.dim(static_cast<size_t>(axis)) * inner;
      Mode mode = modes_[k];
      ByteTable local;
      const uint8_t* table = tables_[k].data();
      const QParam px = qparam(ctx, i + 1, i + 2, dt, "X_scale", "X_zero_point");
      if (mode == kUnknown) {
        mode = plan(dt, px, py, local.data());
        table = local.data();
      }
      if (pitch > 0) {
        const auto* src = static_cast<const uint8_t*>(xk.raw_data());
        parallel_range(ctx.pool(), outer, pitch, [&](int64_t r0, int64_t r1) {
          for (int64_t row = r0; row < r1; ++row) {
            uint8_t* dst = py_d + row * out_pitch + offset;
            if (mode == kCopy)
              std::memcpy(dst, src + row * pitch, static_cast<size_t>(pitch));
            else
              qmath::lookup_bytes(src + row * pitch, dst, pitch, table);
          }
        });
      }
      offset += pitch;
    }
  }

 private:
  enum Mode : uint8_t { kUnknown, kCopy, kTable };

  static Mode plan(DType dt, QParam px, QParam py, uint8_t* table) {
    if (px.scale == py.scale && px.zp == py.zp) return kCopy;
    dispatch_q8(dt, [&]<class S>() { build_table<S>(table, px, py, [](float v) { return v; }); }, "QLinearConcat");
    return kTable;
  }

  int64_t axis_;
  std::vector<Mode> modes_;
  std::vector<ByteTable> tables_;
};

std::unique_ptr<Kernel> make_qlinear_concat(const KernelCreateInfo& info) { return std::make_unique<QConcatKernel>(info); }

using namespace types;
constexpr TypeMask kQ8 = type_mask({DType::kUInt8, DType::kInt8});
constexpr const char* kMs = "com.microsoft";

const KernelDef kDefs[] = {
    {kMs, "QLinearAdd", 1, 99, {{0, kQ8}, {3, kQ8}}, make_qlinear_add},
    {kMs, "QLinearMul", 1, 99, {{0, kQ8}, {3, kQ8}}, make_qlinear_mul},
    {kMs, "QLinearSigmoid", 1, 99, {{0, kQ8}}, make_qlinear_sigmoid},
    {kMs, "QLinearLeakyRelu", 1, 99, {{0, kQ8}}, make_qlinear_leaky_relu},
    {kMs, "QLinearSoftmax", 1, 99, {{0, kQ8}}, make_qlinear_softmax},
    {kMs, "QLinearAveragePool", 1, 99, {{0, kQ8}}, make_qlinear_average_pool},
    {kMs, "QLinearGlobalAveragePool", 1, 99, {{0, kQ8}}, make_qlinear_global_average_pool},
    {kMs, "QLinearConcat", 1, 99, {{-1, kQ8}}, make_qlinear_concat},
};

}  // namespace

std::span<const KernelDef> qlinear_contrib_kernels() { return kDefs; }

}  // namespace onyx::cpu
