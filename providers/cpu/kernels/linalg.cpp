// CPU kernels: MatMul (numpy semantics, batched), Gemm (with fused bias), Det.
#include <cmath>

#include "kernels/common.hpp"
#include "kernels/gemm.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {
namespace {

/// Naive GEMM for the non-float32 types: C[m,n] = sum_k A[m,k] * B[k,n] (strided).
template <class T>
void gemm_naive(int64_t m, int64_t n, int64_t k, const T* a, int64_t as_m, int64_t as_k, const T* b, int64_t bs_k,
                int64_t bs_n, T* c, int64_t ldc, double alpha = 1.0) {
  using A = std::conditional_t<std::is_floating_point_v<Acc<T>>, double, Acc<T>>;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      A s = 0;
      for (int64_t p = 0; p < k; ++p) s += static_cast<A>(to_acc(a[i * as_m + p * as_k])) * static_cast<A>(to_acc(b[p * bs_k + j * bs_n]));
      if (alpha != 1.0) s = static_cast<A>(static_cast<double>(s) * alpha);
      c[i * ldc + j] = from_acc<T>(static_cast<Acc<T>>(s));
    }
}

// ---- MatMul ----

class MatMulKernel final : public Kernel {
 public:
  explicit MatMulKernel(const KernelCreateInfo& info) : node_(info.node) {
    if (info.node.domain == "onyx") {  // onyx::FusedMatMul: bias row (input 2) and activation in the epilogue
      fused_ = true;
      act_ = fused_epilogue(info.node, true);
    }
    // A constant 2-D float B (the usual weight matrix) is packed once.
    const Tensor* b = info.constant(1);
    if (b && b->dtype() == DType::kFloat && b->rank() == 2)
      packed_b_ = std::make_shared<PackedMatrix>(pack_b(false, b->dim(0), b->dim(1), b->data<float>(), b->dim(1)));
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& y = ctx.output(0);
    if (y.numel() == 0) return;
    Shape sa = a.shape(), sb = b.shape();
    if (sa.size() == 1) sa.insert(0, 1);
    if (sb.size() == 1) sb.push_back(1);
    const int64_t m = sa[sa.size() - 2], k = sa[sa.size() - 1], n = sb[sb.size() - 1];
    if (k == 0 && !fused_) {
      std::memset(y.raw_data(), 0, y.nbytes());
      return;
    }
    const size_t ra = sa.size() - 2, rb = sb.size() - 2;
    const size_t rbatch = std::max(ra, rb);
    // Batch dims broadcast; strides of each operand per batch dim (0 where broadcast).
    Shape bdims, sta, stb;
    int64_t batch = 1;
    {
      int64_t ma = m * k, mb = k * n;
      Shape da = Shape::filled(rbatch, 1), db = Shape::filled(rbatch, 1);
      for (size_t i = 0; i < ra; ++i) da[rbatch - ra + i] = sa[i];
      for (size_t i = 0; i < rb; ++i) db[rbatch - rb + i] = sb[i];
      sta = Shape::filled(rbatch, 0);
      stb = Shape::filled(rbatch, 0);
      for (size_t d = rbatch; d-- > 0;) {
        if (da[d] != 1) sta[d] = ma;
        if (db[d] != 1) stb[d] = mb;
        ma *= da[d];
        mb *= db[d];
      }
      bdims = Shape::filled(rbatch, 1);
      for (size_t d = 0; d < rbatch; ++d) bdims[d] = std::max(da[d], db[d]);
      batch = bdims.numel();
    }
    if (a.dtype() == DType::kFloat) {
      const float* pa = a.data<float>();
      const float* pb = b.data<float>();
      float* py = y.data<float>();
      GemmEpilogue ep;
      const GemmEpilogue* use_ep = nullptr;
      if (fused_) {
        const Tensor& bias = ctx.input(2);
        if (bias.dtype() != DType::kFloat || bias.numel() != n)
          fail(ErrorCode::kInvalidArgument, node_.label(), ": bias ", bias.shape().to_string(), " must hold one float per column (", n, ")");
        ep = act_;
        ep.bias = bias.data<float>();
        use_ep = &ep;
      }
      // B shared by every batch (2-D, or broadcast): one tall GEMM when A's batches are contiguous.
      bool b_shared = true;
      for (size_t d = 0; d < rbatch; ++d) b_shared &= stb[d] == 0;
      const PackedMatrix* pk = packed_b_ && b.rank() == 2 ? packed_b_.get() : nullptr;
      if (b_shared) {
        sgemm_packed(nullptr, false, pa, k, pk, false, pb, n, batch * m, n, k, 0.0f, py, n, &ctx.pool(), use_ep);
        return;
      }
      for (int64_t t = 0; t < batch; ++t) {
        int64_t oa = 0, ob = 0, rem = t;
        for (size_t d = rbatch; d-- > 0;) {
          const int64_t i = rem % bdims[d];
          rem /= bdims[d];
          oa += i * sta[d];
          ob += i * stb[d];
        }
        sgemm(false, false, m, n, k, 1.0f, pa + oa, k, pb + ob, n, 0.0f, py + t * m * n, n, &ctx.pool(), use_ep);
      }
      return;
    }
    dispatch_numeric(a.dtype(), [&]<class T>() {
      if constexpr (std::is_same_v<T, bool>) {
        unsupported_dtype("MatMul", a.dtype());
      } else {
        const T* pa = static_cast<const T*>(a.raw_data());
        const T* pb = static_cast<const T*>(b.raw_data());
        T* py = static_cast<T*>(y.raw_data());
        for (int64_t t = 0; t < batch; ++t) {
          int64_t oa = 0, ob = 0, rem = t;
          for (size_t d = rbatch; d-- > 0;) {
            const int64_t i = rem % bdims[d];
            rem /= bdims[d];
            oa += i * sta[d];
            ob += i * stb[d];
          }
          gemm_naive<T>(m, n, k, pa + oa, k, 1, pb + ob, n, 1, py + t * m * n, n);
        }
      }
    }, "MatMul");
  }

 private:
  const Node& node_;
  std::shared_ptr<PackedMatrix> packed_b_;
  bool fused_ = false;
  GemmEpilogue act_;  // FusedMatMul's activation (bias set per run)
};

std::unique_ptr<Kernel> make_matmul(const KernelCreateInfo& info) { return std::make_unique<MatMulKernel>(info); }

// ---- Gemm ----

class GemmKernel final : public Kernel {
 public:
  explicit GemmKernel(const KernelCreateInfo& info) {
    const Node& n = info.node;
    ta_ = n.attr_int("transA", 0) != 0;
    tb_ = n.attr_int("transB", 0) != 0;
    alpha_ = n.attr_float("alpha", 1.0f);
    beta_ = n.attr_float("beta", 1.0f);
    if (n.domain == "onyx") act_ = fused_epilogue(n, false);  // onyx::FusedGemm: the activation in the GEMM's epilogue
    const Tensor* b = info.constant(1);
    if (b && b->dtype() == DType::kFloat && b->rank() == 2) {
      const int64_t kb = tb_ ? b->dim(1) : b->dim(0), nb = tb_ ? b->dim(0) : b->dim(1);
      packed_b_ = std::make_shared<PackedMatrix>(pack_b(tb_, kb, nb, b->data<float>(), b->dim(1), alpha_));
    }
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor* c = ctx.optional_input(2);
    Tensor& y = ctx.output(0);
    const int64_t m = y.dim(0), n = y.dim(1);
    const int64_t k = ta_ ? a.dim(0) : a.dim(1);
    if (y.numel() == 0) return;
    if (a.dtype() == DType::kFloat) {
      float* py = y.data<float>();
      GemmEpilogue ep = act_;
      const GemmEpilogue* use_ep = act_.act != GemmEpilogue::Act::kNone ? &ep : nullptr;
      float beta = 0.0f;
      if (c && beta_ != 0.0f && c->numel() > 0) {
        const float* pc = c->data<float>();
        const Shape& cs = c->shape();
        const bool per_col = beta_ == 1.0f && c->numel() == n && (cs.size() == 1 || (cs.size() == 2 && cs[0] == 1)) && n > 1;
        const bool per_row = beta_ == 1.0f && !per_col && cs.size() == 2 && cs[0] == m && cs[1] == 1 && m > 1;
        if (per_col || per_row) {
          ep.bias = pc;
          ep.bias_per_row = per_row;
          use_ep = &ep;
        } else {
          // General C: broadcast it into Y, then accumulate.
          const Shape ys = y.shape();
          const Broadcast<1> bc(ys, {&cs});
          bc.run(ctx.pool(), 0, [&](int64_t o, std::array<int64_t, 1> off, int64_t len, std::array<int64_t, 1> st) {
            for (int64_t i = 0; i < len; ++i) py[o + i] = pc[off[0] + i * st[0]] * beta_;
          });
          beta = 1.0f;
        }
      }
      const bool packed = packed_b_ && packed_b_->rows() == k && packed_b_->cols() == n;
      if (packed)
        sgemm_packed(nullptr, ta_, a.data<float>(), a.dim(1), packed_b_.get(), false, nullptr, 0, m, n, k, beta, py, n,
                     &ctx.pool(), use_ep);
      else
        sgemm(ta_, tb_, m, n, k, alpha_, a.data<float>(), a.dim(1), b.data<float>(), b.dim(1), beta, py, n, &ctx.pool(), use_ep);
      return;
    }
    dispatch_numeric(a.dtype(), [&]<class T>() {
      if constexpr (std::is_same_v<T, bool>) {
        unsupported_dtype("Gemm", a.dtype());
      } else {
        const T* pa = static_cast<const T*>(a.raw_data());
        const T* pb = static_cast<const T*>(b.raw_data());
        T* py = static_cast<T*>(y.raw_data());
        const int64_t lda = a.dim(1), ldb = b.dim(1);
        gemm_naive<T>(m, n, k, pa, ta_ ? 1 : lda, ta_ ? lda : 1, pb, tb_ ? 1 : ldb, tb_ ? ldb : 1, py, n, alpha_);
        if (c && beta_ != 0.0f) {
          const Shape ys = y.shape();
          const Broadcast<1> bc(ys, {&c->shape()});
          const T* pc = static_cast<const T*>(c->raw_data());
          bc.run(ctx.pool(), 0, [&](int64_t o, std::array<int64_t, 1> off, int64_t len, std::array<int64_t, 1> st) {
            for (int64_t i = 0; i < len; ++i)
              py[o + i] = from_acc<T>(static_cast<Acc<T>>(to_acc(py[o + i]) + to_acc(pc[off[0] + i * st[0]]) * beta_));
          });
        }
      }
    }, "Gemm");
  }

 private:
  bool ta_, tb_;
  float alpha_, beta_;
  GemmEpilogue act_;  // onyx::FusedGemm's activation (no bias)
  std::shared_ptr<PackedMatrix> packed_b_;
};

std::unique_ptr<Kernel> make_gemm(const KernelCreateInfo& info) { return std::make_unique<GemmKernel>(info); }

// ---- Det ----

void det_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t n = x.dim(x.rank() - 1);
  const int64_t count = y.numel();
  dispatch_float(x.dtype(), [&]<class T>() {
    const T* px = static_cast<const T*>(x.raw_data());
    T* py = static_cast<T*>(y.raw_data());
    std::vector<double> m(static_cast<size_t>(n * n));
    for (int64_t t = 0; t < count; ++t) {
      for (int64_t i = 0; i < n * n; ++i) m[i] = static_cast<double>(to_acc(px[t * n * n + i]));
      double det = 1;
      for (int64_t c = 0; c < n; ++c) {
        int64_t piv = c;
        for (int64_t r = c + 1; r < n; ++r)
          if (std::fabs(m[r * n + c]) > std::fabs(m[piv * n + c])) piv = r;
        if (m[piv * n + c] == 0) {
          det = 0;
          break;
        }
        if (piv != c) {
          for (int64_t j = 0; j < n; ++j) std::swap(m[c * n + j], m[piv * n + j]);
          det = -det;
        }
        det *= m[c * n + c];
        for (int64_t r = c + 1; r < n; ++r) {
          const double f = m[r * n + c] / m[c * n + c];
          for (int64_t j = c; j < n; ++j) m[r * n + j] -= f * m[c * n + j];
        }
      }
      py[t] = from_acc<T>(static_cast<Acc<T>>(det));
    }
  }, "Det");
}

std::unique_ptr<Kernel> make_det(const KernelCreateInfo&) { return make_fn_kernel(0, det_compute); }

using namespace types;
constexpr TypeMask kMatTypes = kFloats | type_mask({DType::kInt32, DType::kInt64, DType::kUInt32, DType::kUInt64});

const KernelDef kDefs[] = {
    {"", "MatMul", 1, 99, {{0, kMatTypes}}, make_matmul},
    {"", "Gemm", 1, 99, {{0, kMatTypes}}, make_gemm},
    {"onyx", "FusedGemm", 1, 1, {{0, kFloat}}, make_gemm},
    {"onyx", "FusedMatMul", 1, 1, {{0, kFloat}}, make_matmul},
    {"", "Det", 11, 99, {{0, kFloats}}, make_det},
};

}  // namespace

std::span<const KernelDef> linalg_kernels() { return kDefs; }

}  // namespace onyx::cpu
