// CPU kernels for 8-bit matrix products on the integer GEMM (qgemm.hpp): MatMulInteger and
// QLinearMatMul with a 2-D B (other shapes keep quant.cpp's loops), and ONNX Runtime's
// com.microsoft QGemm, DynamicQuantizeMatMul and MatMulIntegerToFloat. A constant B (with a
// constant zero point) is packed once when the kernel is made.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/qgemm.hpp"
#include "kernels/qmath.hpp"
#include "kernels/vmath.hpp"

namespace onyx::cpu {

std::unique_ptr<Kernel> make_matmul_integer_reference(const KernelCreateInfo& info);   // quant.cpp
std::unique_ptr<Kernel> make_qlinear_matmul_reference(const KernelCreateInfo& info);   // quant.cpp

namespace {

bool is_q8(DType t) { return t == DType::kUInt8 || t == DType::kInt8; }

int32_t q8_value(const Tensor& t, int64_t i) {
  const uint8_t raw = static_cast<const uint8_t*>(t.raw_data())[i];
  return t.dtype() == DType::kInt8 ? static_cast<int32_t>(static_cast<int8_t>(raw)) : static_cast<int32_t>(raw);
}

/// One float of a scale tensor (float16/bfloat16 too).
float float_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat: return t.data<float>()[i];
    case DType::kFloat16: return Float16::to_float(t.data<Float16>()[i]);
    case DType::kBFloat16: return BFloat16::to_float(t.data<BFloat16>()[i]);
    default: fail(ErrorCode::kInvalidArgument, "a scale must be a float tensor, got ", dtype_name(t.dtype()));
  }
}

/// A per-tensor or per-column parameter: count 1 or n, else an error naming it.
int64_t per_column_count(const Tensor& t, int64_t n, const Node& node, const char* name, int idx) {
  if (t.numel() == 1 && t.rank() <= 1) return 1;
  if (t.rank() == 1 && t.numel() == n) return n;
  fail(ErrorCode::kInvalidArgument, node.label(), ": ", name, " (input ", idx, ") must be a scalar or have ", n,
       " values (one per column of B), got shape ", t.shape().to_string());
}

void require_one(const Tensor& t, const Node& node, const char* name, int idx) {
  if (t.numel() != 1 || t.rank() > 1)
    fail(ErrorCode::kInvalidArgument, node.label(), ": ", name, " (input ", idx, ") must be a scalar, got shape ",
         t.shape().to_string());
}

/// B of a product (k x n, or n x k when transposed) packed for qgemm: once at creation when B
/// and its zero point are constants, else at each run.
class QMatB {
 public:
  QMatB(const KernelCreateInfo& info, int b_idx, int zp_idx, bool trans) : b_idx_(b_idx), zp_idx_(zp_idx), trans_(trans) {
    const Tensor* b = info.constant(b_idx);
    const bool zp_given = zp_idx >= 0 && info.node.has_input(zp_idx);
    const Tensor* zp = zp_given ? info.constant(zp_idx) : nullptr;
    if (b && b->rank() == 2 && is_q8(b->dtype()) && (!zp_given || zp)) {
      const int64_t n = b->dim(trans ? 0 : 1);
      if (!zp || zp->numel() == 1 || zp->numel() == n) packed_ = pack(*b, zp, info.node);
    }
  }
  /// B's packed form for this run (`scratch` holds it when packed now).
  const QPackedB& get(KernelContext& ctx, QPackedB& scratch) const {
    const Tensor& b = ctx.input(static_cast<size_t>(b_idx_));
    const Tensor* zp = zp_idx_ >= 0 ? ctx.optional_input(static_cast<size_t>(zp_idx_)) : nullptr;
    if (!packed_.empty() && b.rank() == 2 && packed_.k() == b.dim(trans_ ? 1 : 0) && packed_.n() == b.dim(trans_ ? 0 : 1))
      return packed_;
    scratch = pack(b, zp, ctx.node());
    return scratch;
  }

 private:
  QPackedB pack(const Tensor& b, const Tensor* zp, const Node& node) const {
    if (b.rank() != 2) fail(ErrorCode::kInvalidArgument, node.label(), ": B (input ", b_idx_, ") must be 2-D here");
    const int64_t k = b.dim(trans_ ? 1 : 0), n = b.dim(trans_ ? 0 : 1);
    std::vector<int32_t> z;
    if (zp) {
      if (zp->dtype() != b.dtype())
        fail(ErrorCode::kInvalidArgument, node.label(), ": b_zero_point (input ", zp_idx_, ") must have B's type");
      const int64_t c = per_column_count(*zp, n, node, "b_zero_point", zp_idx_);
      for (int64_t i = 0; i < c; ++i) z.push_back(q8_value(*zp, i));
    }
    return qpack_b(b.raw_data(), b.dtype() == DType::kUInt8, k, n, trans_ ? 1 : n, trans_ ? k : 1, z.empty() ? nullptr : z.data(),
                   static_cast<int64_t>(z.size()));
  }

  int b_idx_, zp_idx_;
  bool trans_;
  QPackedB packed_;
};

/// The rows of A ([..., m, k], contiguous) against a 2-D B: A's leading dims flatten into rows.
int64_t rows_of(const Tensor& a, int64_t k, const Node& node, const Shape& b_shape) {
  if (a.rank() < 1 || a.dim(static_cast<int>(a.rank()) - 1) != k)
    fail(ErrorCode::kInvalidArgument, node.label(), ": inner dimensions differ: A ", a.shape().to_string(), " x B ",
         b_shape.to_string());
  return a.numel() / std::max<int64_t>(1, k);
}

// ---- MatMulInteger (2-D B) ----

class MatMulIntegerKernel final : public Kernel {
 public:
  explicit MatMulIntegerKernel(const KernelCreateInfo& info) : b_(info, 1, 3, false), ref_(make_matmul_integer_reference(info)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor* za = ctx.optional_input(2);
    if (b.rank() != 2 || a.rank() < 2 || (za && za->numel() != 1)) return ref_->compute(ctx);  // batched B, per-row a_zero_point
    QPackedB scratch;
    const QPackedB& pb = b_.get(ctx, scratch);
    Tensor& y = ctx.output(0);
    const int64_t m = rows_of(a, pb.k(), ctx.node(), b.shape());
    if (za && za->dtype() != a.dtype()) fail(ErrorCode::kInvalidArgument, ctx.node().label(), ": a_zero_point (input 2) must have A's type");
    if (y.numel() == 0) return;
    const QGemmA qa = QGemmA::matrix(a.raw_data(), pb.k(), a.dtype() == DType::kInt8, za ? q8_value(*za, 0) : 0);
    qgemm(qa, pb, m, QGemmOut::int32(y.raw_data(), pb.n()), &ctx.pool());
  }

 private:
  QMatB b_;
  std::unique_ptr<Kernel> ref_;
};

// ---- QLinearMatMul (8-bit, 2-D B) ----

class QLinearMatMulKernel final : public Kernel {
 public:
  explicit QLinearMatMulKernel(const KernelCreateInfo& info) : b_(info, 3, 5, false), ref_(make_qlinear_matmul_reference(info)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& as = ctx.input(1);
    const Tensor& az = ctx.input(2);
    const Tensor& b = ctx.input(3);
    const Tensor& bs = ctx.input(4);
    const Tensor& ys = ctx.input(6);
    const Tensor& yz = ctx.input(7);
    Tensor& y = ctx.output(0);
    if (b.rank() != 2 || a.rank() < 2 || !is_q8(a.dtype()) || !is_q8(b.dtype()) || !is_q8(y.dtype()) || as.numel() != 1 ||
        az.numel() != 1)
      return ref_->compute(ctx);  // batched B, per-row A parameters, float8
    QPackedB scratch;
    const QPackedB& pb = b_.get(ctx, scratch);
    const int64_t m = rows_of(a, pb.k(), ctx.node(), b.shape()), n = pb.n();
    if (az.dtype() != a.dtype()) fail(ErrorCode::kInvalidArgument, ctx.node().label(), ": a_zero_point (input 2) must have a's type");
    if (yz.dtype() != y.dtype()) fail(ErrorCode::kInvalidArgument, ctx.node().label(), ": y_zero_point (input 7) must have y's type");
    require_one(ys, ctx.node(), "y_scale", 6);
    require_one(yz, ctx.node(), "y_zero_point", 7);
    const int64_t nbs = per_column_count(bs, n, ctx.node(), "b_scale", 4);
    if (y.numel() == 0) return;
    float* mult = nullptr;
    carve(Workspace::kQuant, [&](Carver& c) { mult = c.take<float>(n); });
    const float a_scale = float_at(as, 0), y_scale = float_at(ys, 0);
    for (int64_t j = 0; j < n; ++j) mult[j] = a_scale * float_at(bs, nbs == 1 ? 0 : j) / y_scale;
    const QGemmA qa = QGemmA::matrix(a.raw_data(), pb.k(), a.dtype() == DType::kInt8, q8_value(az, 0));
    qgemm(qa, pb, m, QGemmOut::quant8(y.raw_data(), n, mult, q8_value(yz, 0), y.dtype() == DType::kInt8), &ctx.pool());
  }

 private:
  QMatB b_;
  std::unique_ptr<Kernel> ref_;
};

// ---- com.microsoft::QGemm ----

class QGemmKernel final : public Kernel {
 public:
  explicit QGemmKernel(const KernelCreateInfo& info)
      : trans_a_(info.node.attr_int("transA", 0) != 0),
        alpha_(info.node.attr_float("alpha", 1.0f)),
        b_(info, 3, 5, info.node.attr_int("transB", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& a = ctx.input(0);
    const Tensor& as = ctx.input(1);
    const Tensor& az = ctx.input(2);
    const Tensor& bs = ctx.input(4);
    const Tensor* c = ctx.optional_input(6);
    const Tensor* ys = ctx.optional_input(7);
    const Tensor* yz = ctx.optional_input(8);
    Tensor& y = ctx.output(0);
    if (a.rank() != 2) fail(ErrorCode::kInvalidArgument, node.label(), ": A must be 2-D, got ", a.shape().to_string());
    if (az.dtype() != a.dtype()) fail(ErrorCode::kInvalidArgument, node.label(), ": a_zero_point (input 2) must have A's type");
    require_one(as, node, "a_scale", 1);
    require_one(az, node, "a_zero_point", 2);
    QPackedB scratch;
    const QPackedB& pb = b_.get(ctx, scratch);
    const int64_t m = a.dim(trans_a_ ? 1 : 0), k = a.dim(trans_a_ ? 0 : 1), n = pb.n();
    if (k != pb.k())
      fail(ErrorCode::kInvalidArgument, node.label(), ": inner dimensions differ: A ", a.shape().to_string(), " and B ",
           ctx.input(3).shape().to_string());
    const int64_t nbs = per_column_count(bs, n, node, "b_scale", 4);
    // As in ONNX Runtime: Y is requantised when y_zero_point is given; y_scale alone divides a
    // float Y.
    const bool quantized = yz != nullptr;
    if (ys) require_one(*ys, node, "y_scale", 7);
    if (yz) {
      if (!ys) fail(ErrorCode::kInvalidArgument, node.label(), ": y_zero_point (input 8) is given without y_scale (input 7)");
      require_one(*yz, node, "y_zero_point", 8);
    }
    // C: int32, one value, one per column, a whole (m, n) matrix, or one per row (m, 1).
    int c_mode = 0;  // 0 none, 1 scalar, 2 per column, 3 matrix, 4 per row
    if (c) {
      if (c->dtype() != DType::kInt32) fail(ErrorCode::kInvalidArgument, node.label(), ": C (input 6) must be int32");
      if (c->numel() == 1 && c->rank() <= 2) c_mode = 1;
      else if (c->numel() == n && c->dim(static_cast<int>(c->rank()) - 1) == n && (c->rank() == 1 || c->dim(0) == 1)) c_mode = 2;
      else if (c->rank() == 2 && c->dim(0) == m && c->dim(1) == n) c_mode = 3;
      else if (c->rank() == 2 && c->dim(0) == m && c->dim(1) == 1) c_mode = 4;
      else
        fail(ErrorCode::kInvalidArgument, node.label(), ": C (input 6) of shape ", c->shape().to_string(),
             " does not broadcast to (", m, ", ", n, ")");
    }
    if (y.numel() == 0) return;
    float* mult = nullptr;
    int32_t* bias = nullptr;
    uint8_t* at = nullptr;
    int32_t* acc = nullptr;
    carve(Workspace::kQuant, [&](Carver& cv) {
      mult = cv.take<float>(n);
      bias = cv.take<int32_t>(n);
      at = trans_a_ ? cv.take<uint8_t>(m * k) : nullptr;
      acc = c_mode >= 3 ? cv.take<int32_t>(m * n) : nullptr;
    });
    const float a_scale = float_at(as, 0);
    const float y_scale = ys ? float_at(*ys, 0) : 1.0f;
    for (int64_t j = 0; j < n; ++j) {
      const float s = alpha_ * a_scale * float_at(bs, nbs == 1 ? 0 : j);
      mult[j] = ys ? s / y_scale : s;
      bias[j] = c_mode == 1 ? c->data<int32_t>()[0] : c_mode == 2 ? c->data<int32_t>()[j] : 0;
    }
    const auto* pa = static_cast<const uint8_t*>(a.raw_data());
    if (trans_a_) {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p) at[i * k + p] = pa[p * m + i];
      pa = at;
    }
    const QGemmA qa = QGemmA::matrix(pa, k, a.dtype() == DType::kInt8, q8_value(az, 0));
    const bool y_signed = y.dtype() == DType::kInt8;
    const int32_t zy = yz ? q8_value(*yz, 0) : 0;
    if (c_mode >= 3) {
      // A whole C matrix or a column: int32 sums first, then C and the epilogue element by element.
      qgemm(qa, pb, m, QGemmOut::int32(acc, n, bias), &ctx.pool());
      const int32_t* pc = c->data<int32_t>();
      for (int64_t i = 0; i < m * n; ++i) {
        const int32_t ci = pc[c_mode == 3 ? i : i / n];
        const int32_t s = static_cast<int32_t>(static_cast<uint32_t>(acc[i]) + static_cast<uint32_t>(ci));
        const float f = static_cast<float>(s) * mult[i % n];
        if (!quantized) {
          y.data<float>()[i] = f;
          continue;
        }
        const float lo = y_signed ? -128.0f : 0.0f, hi = y_signed ? 127.0f : 255.0f;
        const float r = std::clamp(std::nearbyint(f) + static_cast<float>(zy), lo, hi);
        static_cast<uint8_t*>(y.raw_data())[i] = static_cast<uint8_t>(static_cast<int32_t>(r));
      }
      return;
    }
    QGemmOut o = quantized ? QGemmOut::quant8(y.raw_data(), n, mult, zy, y_signed) : QGemmOut::to_float(y.raw_data(), n, mult);
    o.bias_i = bias;
    qgemm(qa, pb, m, o, &ctx.pool());
  }

 private:
  bool trans_a_;
  float alpha_;
  QMatB b_;
};

// ---- com.microsoft::DynamicQuantizeMatMul and MatMulIntegerToFloat ----

/// The float epilogue of both ops: bias per column (B's last dim).
const float* float_bias(const Tensor* bias, int64_t n, const Node& node, int idx) {
  if (!bias) return nullptr;
  if (bias->dtype() != DType::kFloat || bias->numel() != n || bias->rank() != 1)
    fail(ErrorCode::kInvalidArgument, node.label(), ": bias (input ", idx, ") must be float with ", n, " values, got ",
         dtype_name(bias->dtype()), bias->shape().to_string());
  return bias->data<float>();
}

class DynamicQuantizeMatMulKernel final : public Kernel {
 public:
  explicit DynamicQuantizeMatMulKernel(const KernelCreateInfo& info) : b_(info, 1, 3, false) {}
  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor& bs = ctx.input(2);
    if (b.rank() != 2)
      fail(ErrorCode::kNotImplemented, node.label(), ": B (input 1) of rank ", b.rank(), "; only a 2-D B is supported");
    QPackedB scratch;
    const QPackedB& pb = b_.get(ctx, scratch);
    const int64_t k = pb.k(), n = pb.n(), m = rows_of(a, k, node, b.shape());
    const int64_t nbs = per_column_count(bs, n, node, "b_scale", 2);
    const float* bias = float_bias(ctx.optional_input(4), n, node, 4);
    Tensor& y = ctx.output(0);
    if (y.numel() == 0) return;
    float* mult = nullptr;
    uint8_t* aq = nullptr;
    carve(Workspace::kQuant, [&](Carver& c) {
      mult = c.take<float>(n);
      aq = c.take<uint8_t>(m * k);
    });
    const DynamicQuant q = dynamic_quantize_u8(a.data<float>(), a.numel(), aq, ctx.pool());
    for (int64_t j = 0; j < n; ++j) mult[j] = q.scale * float_at(bs, nbs == 1 ? 0 : j);
    qgemm(QGemmA::matrix(aq, k, false, q.zero_point), pb, m, QGemmOut::to_float(y.raw_data(), n, mult, bias), &ctx.pool());
  }

 private:
  QMatB b_;
};

class MatMulIntegerToFloatKernel final : public Kernel {
 public:
  explicit MatMulIntegerToFloatKernel(const KernelCreateInfo& info) : b_(info, 1, 5, false) {}
  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor& as = ctx.input(2);
    const Tensor& bs = ctx.input(3);
    const Tensor* az = ctx.optional_input(4);
    if (b.rank() != 2)
      fail(ErrorCode::kNotImplemented, node.label(), ": B (input 1) of rank ", b.rank(), "; only a 2-D B is supported");
    QPackedB scratch;
    const QPackedB& pb = b_.get(ctx, scratch);
    const int64_t k = pb.k(), n = pb.n(), m = rows_of(a, k, node, b.shape());
    require_one(as, node, "a_scale", 2);
    if (az) {
      require_one(*az, node, "a_zero_point", 4);
      if (az->dtype() != a.dtype()) fail(ErrorCode::kInvalidArgument, node.label(), ": a_zero_point (input 4) must have A's type");
    }
    const int64_t nbs = per_column_count(bs, n, node, "b_scale", 3);
    const float* bias = float_bias(ctx.optional_input(6), n, node, 6);
    Tensor& y = ctx.output(0);
    if (y.numel() == 0) return;
    float* mult = nullptr;
    carve(Workspace::kQuant, [&](Carver& c) { mult = c.take<float>(n); });
    const float a_scale = float_at(as, 0);
    for (int64_t j = 0; j < n; ++j) mult[j] = a_scale * float_at(bs, nbs == 1 ? 0 : j);
    const QGemmA qa = QGemmA::matrix(a.raw_data(), k, a.dtype() == DType::kInt8, az ? q8_value(*az, 0) : 0);
    qgemm(qa, pb, m, QGemmOut::to_float(y.raw_data(), n, mult, bias), &ctx.pool());
  }

 private:
  QMatB b_;
};

std::unique_ptr<Kernel> make_matmul_integer(const KernelCreateInfo& info) { return std::make_unique<MatMulIntegerKernel>(info); }
std::unique_ptr<Kernel> make_qlinear_matmul(const KernelCreateInfo& info) { return std::make_unique<QLinearMatMulKernel>(info); }
std::unique_ptr<Kernel> make_qgemm(const KernelCreateInfo& info) { return std::make_unique<QGemmKernel>(info); }
std::unique_ptr<Kernel> make_dynamic_quantize_matmul(const KernelCreateInfo& info) {
  return std::make_unique<DynamicQuantizeMatMulKernel>(info);
}
std::unique_ptr<Kernel> make_matmul_integer_to_float(const KernelCreateInfo& info) {
  return std::make_unique<MatMulIntegerToFloatKernel>(info);
}

using namespace types;
constexpr TypeMask kQ8 = type_mask({DType::kUInt8, DType::kInt8});
constexpr TypeMask kF8 =
    type_mask({DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ});
constexpr const char* kMs = "com.microsoft";

const KernelDef kDefs[] = {
    {"", "MatMulInteger", 10, 99, {{0, kQ8}, {1, kQ8}}, make_matmul_integer},
    {"", "QLinearMatMul", 10, 20, {{0, kQ8}, {3, kQ8}}, make_qlinear_matmul},
    {"", "QLinearMatMul", 21, 99, {{0, kQ8 | kF8}, {3, kQ8 | kF8}}, make_qlinear_matmul},
    {kMs, "QGemm", 1, 1, {{0, kQ8}, {3, kQ8}}, make_qgemm},
    {kMs, "DynamicQuantizeMatMul", 1, 1, {{0, kFloat}, {1, kQ8}}, make_dynamic_quantize_matmul},
    {kMs, "MatMulIntegerToFloat", 1, 1, {{0, kQ8}, {1, kQ8}}, make_matmul_integer_to_float},
};

}  // namespace

std::span<const KernelDef> qmatmul_kernels() { return kDefs; }

}  // namespace onyx::cpu
