// The CUDA EP's int8 kernels: ai.onnx QuantizeLinear and DequantizeLinear (quant.cu, one pass
// each), DynamicQuantizeLinear (a device reduction, then one pass), MatMulInteger and
// QLinearMatMul on cuBLASLt's int8 product. claim.cpp decides which
// nodes come here.
//
// The product: cuBLASLt's int8 kernels (IMMA) with the regular column-major order take only the
// "TN" form (its A transposed, its B not), int8 operands (CUDA_R_8I) with CUBLAS_COMPUTE_32I and
// an int32 result and int32 alpha / beta, leading dimensions that are multiples of 4, m and k
// multiples of 4, and 4-byte aligned pointers. Row-major Y[rows, n] = A[rows, k] B[k, n] is the
// column-major Y^T = B^T A^T, so cuBLASLt's A is B stored by columns ([n, k] row-major, read
// transposed) and its B is A as it is ([rows, k] row-major = k x rows column-major): the TN form.
// k and n are padded to kp, np (multiples of 4) with zero rows / columns, which add nothing to the
// sums. B is moved into that form once when it is constant (with its column sums), else per run
// by to_s8; A is used in place when it is int8 with k a multiple of 4 and 4-byte aligned, else
// moved to int8 too. uint8 operands are shifted to int8 by subtracting 128 (their zero points
// shift with them); the zero points are applied after the product by the row-sum / column-sum
// correction of quant.hpp's QGemmEpilogue, which also requantises QLinearMatMul's result.
#include <algorithm>
#include <map>
#include <mutex>

#include "quant.hpp"
#include "quant_kernels.hpp"

namespace onyx::cuda {
namespace {

constexpr size_t kLtInt8Workspace = size_t(32) << 20;

Tensor& output0(KernelContext& ctx, const Node& n) {
  if (!ctx.output_ready(0)) fail(ErrorCode::kRuntime, "cuda: ", n.label(), ": output 0 was not shaped by inference");
  Tensor& t = ctx.output(0);
  if (t.on_host() && t.nbytes()) fail(ErrorCode::kRuntime, "cuda: internal error: ", n.label(), " output 0 is in host memory");
  return t;
}

bool is_q8(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }
int64_t round4(int64_t v) { return (v + 3) / 4 * 4; }

/// QuantizeLinear / DequantizeLinear, per-tensor or per-axis; scales and zero points are read on
/// the device (they may be computed by the graph).
class QuantizeKernel final : public CudaKernel {
 public:
  QuantizeKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s, bool quantize)
      : CudaKernel(info, std::move(s)), quantize_(quantize), axis_(info.node.attr_int("axis", 1)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    const Tensor& scale = in(ctx, 1);
    Tensor& y = output0(ctx, node_);
    const bool has_zp = has(ctx, 2);
    const Tensor* zp = has_zp ? &in(ctx, 2) : nullptr;
    QuantAxis ax;
    if (scale.rank() > 1)
      fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": blocked quantization (a scale of rank ", scale.rank(), ")");
    if (scale.rank() == 1 && scale.numel() != 1) {
      const int64_t a = normalize_axis(axis_, static_cast<int64_t>(x.rank()), quantize_ ? "QuantizeLinear axis" : "DequantizeLinear axis");
      if (scale.numel() != x.dim(static_cast<size_t>(a)))
        fail(ErrorCode::kInvalidArgument, node_.label(), ": the scale has ", scale.numel(), " values but axis ", a, " has ",
             x.dim(static_cast<size_t>(a)));
      ax.dim = scale.numel();
      for (size_t d = static_cast<size_t>(a) + 1; d < x.rank(); ++d) ax.inner *= x.dim(d);
    }
    if (zp && zp->numel() != scale.numel())
      fail(ErrorCode::kInvalidArgument, node_.label(), ": the zero point has ", zp->numel(), " values, the scale ", scale.numel());
    const DType qt = quantize_ ? y.dtype() : x.dtype();
    if (zp && zp->dtype() != qt)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": the zero point is ", dtype_name(zp->dtype()), ", the quantized tensor ", dtype_name(qt));
    if (x.numel() == 0) return;
    if (quantize_)
      quantize_linear(to_ty(x.dtype()), dev(ctx, 0), dev(ctx, 1), to_ty(y.dtype()), zp ? dev(ctx, 2) : nullptr, y.raw_data(), ax,
                      x.numel(), stream(ctx));
    else
      dequantize_linear(to_ty(x.dtype()), dev(ctx, 0), zp ? dev(ctx, 2) : nullptr, to_ty(y.dtype()), dev(ctx, 1), y.raw_data(), ax,
                        x.numel(), stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  bool quantize_;
  int64_t axis_;
};

/// DynamicQuantizeLinear (uint8): the min / max reduction, scale and zero point on the device
/// (quant.cu), then the quantization; outputs 1 and 2 (scale, zero point) may be unused.
class DynamicQuantizeKernel final : public CudaKernel {
 public:
  using CudaKernel::CudaKernel;
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    if (x.dtype() != DType::kFloat) fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": DynamicQuantizeLinear of ", dtype_name(x.dtype()));
    const int64_t need = dynamic_quantize_scratch_floats();
    Tensor scratch = shared_->allocate(DType::kFloat, Shape{need + 2});
    float* sc = dptr<float>(scratch);
    // Unused outputs go to the scratch's last two floats.
    float* scale = sc + need;
    uint8_t* zp = reinterpret_cast<uint8_t*>(sc + need + 1);
    uint8_t* y = nullptr;
    if (ctx.has_output(0)) y = static_cast<uint8_t*>(output(ctx, 0).raw_data());
    if (ctx.has_output(1)) scale = static_cast<float*>(output(ctx, 1).raw_data());
    if (ctx.has_output(2)) zp = static_cast<uint8_t*>(output(ctx, 2).raw_data());
    dynamic_quantize_u8(static_cast<const float*>(dev(ctx, 0)), x.numel(), y, scale, zp, sc, stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  Tensor& output(KernelContext& ctx, size_t i) const {
    if (!ctx.output_ready(i)) fail(ErrorCode::kRuntime, "cuda: ", node_.label(), ": output ", i, " was not shaped by inference");
    Tensor& t = ctx.output(i);
    if (t.on_host() && t.nbytes()) fail(ErrorCode::kRuntime, "cuda: internal error: ", node_.label(), " output ", i, " is in host memory");
    return t;
  }
};

struct LtInt8Handles {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtInt8Handles() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

/// MatMulInteger (inputs A, B, a_zero_point, b_zero_point) and QLinearMatMul (a, a_scale,
/// a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point) with a 2-D B.
class QMatMulKernel final : public CudaKernel {
 public:
  QMatMulKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, std::move(s)) {
    qlinear_ = info.node.op_type == "QLinearMatMul";
    b_idx_ = qlinear_ ? 3 : 1;
    za_idx_ = 2;
    zb_idx_ = qlinear_ ? 5 : 3;
    // A constant B: moved to int8, transposed and padded once, with its column sums.
    const Tensor* b = info.constant(static_cast<size_t>(b_idx_));
    if (b && b->defined() && b->on_host() && b->rank() == 2 && is_q8(b->dtype())) {
      const int64_t k = b->dim(0), n = b->dim(1), kp = round4(k), np = round4(n);
      Tensor packed(DType::kInt8, Shape{np, kp});
      Tensor sums(DType::kInt32, Shape{n});
      pack_b_host(b->raw_data(), b->dtype() == DType::kUInt8, k, n, kp, np, static_cast<int8_t*>(packed.raw_data()),
                  sums.data<int32_t>());
      b_packed_ = shared_->upload(packed);
      b_sums_ = shared_->upload(sums);
      b_k_ = k;
      b_n_ = n;
      host_keep_[0] = packed;  // upload() caches by host address: keep the host tensors alive
      host_keep_[1] = sums;
    }
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& a = in(ctx, 0);
    const Tensor& b = in(ctx, static_cast<size_t>(b_idx_));
    Tensor& y = output0(ctx, node_);
    const std::string& op = node_.op_type;
    if (b.rank() < 2) fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": ", op, " with a 1-D B");
    const int64_t k = b.dim(b.rank() - 2), n = b.dim(b.rank() - 1);
    if (a.rank() < 1 || a.dim(a.rank() - 1) != k)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": inner dimensions differ: A ", a.shape().to_string(), " x B ", b.shape().to_string());
    const bool has_za = has(ctx, static_cast<size_t>(za_idx_)), has_zb = has(ctx, static_cast<size_t>(zb_idx_));
    const int64_t zb_count = has_zb ? in(ctx, static_cast<size_t>(zb_idx_)).numel() : 1;
    if (has_za && in(ctx, static_cast<size_t>(za_idx_)).numel() != 1)
      fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": a per-row a_zero_point");
    if (zb_count != 1 && zb_count != n)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": b_zero_point must have 1 or ", n, " values, got ", zb_count);
    if (has_za && in(ctx, static_cast<size_t>(za_idx_)).dtype() != a.dtype())
      fail(ErrorCode::kInvalidArgument, node_.label(), ": a_zero_point must have A's type");
    if (has_zb && in(ctx, static_cast<size_t>(zb_idx_)).dtype() != b.dtype())
      fail(ErrorCode::kInvalidArgument, node_.label(), ": b_zero_point must have B's type");
    if (y.numel() == 0) return;
    const char* A = static_cast<const char*>(dev(ctx, 0));
    const char* B = static_cast<const char*>(dev(ctx, static_cast<size_t>(b_idx_)));
    char* Y = static_cast<char*>(y.raw_data());
    if (b.rank() == 2) {
      // A's leading dims stacked as rows.
      const int64_t rows = k > 0 ? a.numel() / k : y.numel() / std::max<int64_t>(1, n);
      if (y.numel() != rows * n) fail(ErrorCode::kInvalidArgument, node_.label(), ": output has the wrong size");
      product_2d(ctx, A, B, Y, rows, k, n, true);
      return;
    }
    // A batched B: one product per output batch, the batch dims broadcast as numpy's matmul does.
    Shape as = a.shape();
    if (as.size() == 1) as = Shape{1, as[0]};
    const int64_t m = as[as.size() - 2];
    Shape ab, bb;
    const Shape batch_shape = matmul_batch_shape(as, b.shape(), node_, &ab, &bb);
    const int64_t batch = batch_shape.numel();
    if (y.numel() != batch * m * n) fail(ErrorCode::kInvalidArgument, node_.label(), ": output has the wrong size");
    const size_t y_elem = dtype_size(y.dtype());
    const Strided va = broadcast_view(ab, batch_shape), vb = broadcast_view(bb, batch_shape);
    for (int64_t i = 0; i < batch; ++i) {
      const int64_t oa = offset_of(va, i), ob = offset_of(vb, i);  // the operands' batch indices
      product_2d(ctx, A + oa * m * k, B + ob * k * n, Y + static_cast<size_t>(i * m * n) * y_elem, m, k, n, false);
    }
  }

 private:
  /// Y[rows, n] (int32, or requantised) = A[rows, k] B[k, n] of one batch; the constant B's
  /// prepared form is used when `whole_b` (B is the whole 2-D input).
  void product_2d(KernelContext& ctx, const void* a_src, const void* b_src, void* y_ptr, int64_t rows, int64_t k, int64_t n,
                  bool whole_b) const {
    const Tensor& a = in(ctx, 0);
    const Tensor& b = in(ctx, static_cast<size_t>(b_idx_));
    const Tensor& y = ctx.output(0);
    const bool has_za = has(ctx, static_cast<size_t>(za_idx_)), has_zb = has(ctx, static_cast<size_t>(zb_idx_));
    const int64_t zb_count = has_zb ? in(ctx, static_cast<size_t>(zb_idx_)).numel() : 1;
    RunState& rs = run(ctx);
    const cudaStream_t st = rs.stream;
    const int64_t kp = round4(k), np = round4(n);
    const bool a_u8 = a.dtype() == DType::kUInt8, b_u8 = b.dtype() == DType::kUInt8;

    // A as int8 [rows, kp].
    const int8_t* A8 = static_cast<const int8_t*>(a_src);
    Tensor a_tmp;
    if (a_u8 || kp != k || reinterpret_cast<uintptr_t>(a_src) % 4 != 0) {
      a_tmp = shared_->allocate(DType::kInt8, Shape{rows, kp});
      to_s8(a_src, a_u8, contiguous(Shape{rows, k}), dptr<int8_t>(a_tmp), rows, k, kp, st);
      ONYX_CUDA_LAUNCHED();
      A8 = dptr<int8_t>(a_tmp);
    }
    // B as int8 [np, kp] (its columns), and its column sums.
    const int8_t* B8 = nullptr;
    const int32_t* b_sums = nullptr;
    Tensor b_tmp, b_sums_tmp;
    if (whole_b && b_packed_.defined() && b_k_ == k && b_n_ == n && host_constant(static_cast<size_t>(b_idx_))) {
      B8 = static_cast<const int8_t*>(b_packed_.raw_data());
      b_sums = static_cast<const int32_t*>(b_sums_.raw_data());
    } else {
      b_tmp = shared_->allocate(DType::kInt8, Shape{np, kp});
      if (np > n) ONYX_CUDA_CHECK(cudaMemsetAsync(dptr<int8_t>(b_tmp) + n * kp, 0, static_cast<size_t>((np - n) * kp), st));
      Strided cols;  // B [k, n] read by columns: element (j, kk) at kk n + j
      cols.rank = 2;
      cols.dims[0] = n;
      cols.dims[1] = k;
      cols.strides[0] = 1;
      cols.strides[1] = n;
      to_s8(b_src, b_u8, cols, dptr<int8_t>(b_tmp), n, k, kp, st);
      ONYX_CUDA_LAUNCHED();
      B8 = dptr<int8_t>(b_tmp);
      if (has_za) {
        b_sums_tmp = shared_->allocate(DType::kInt32, Shape{n});
        row_sums_s8(B8, n, k, kp, dptr<int32_t>(b_sums_tmp), st);
        ONYX_CUDA_LAUNCHED();
        b_sums = dptr<int32_t>(b_sums_tmp);
      }
    }
    // A's row sums when B has a zero point.
    Tensor a_sums;
    if (has_zb) {
      a_sums = shared_->allocate(DType::kInt32, Shape{rows});
      row_sums_s8(A8, rows, k, kp, dptr<int32_t>(a_sums), st);
      ONYX_CUDA_LAUNCHED();
    }
    // The product, into Y itself when it is the int32 result with no padded columns.
    const bool in_place = !qlinear_ && np == n;
    Tensor acc_tmp;
    int32_t* acc = nullptr;
    if (in_place) {
      acc = static_cast<int32_t*>(y_ptr);
    } else {
      acc_tmp = shared_->allocate(DType::kInt32, Shape{rows, np});
      acc = dptr<int32_t>(acc_tmp);
    }
    if (k == 0) ONYX_CUDA_CHECK(cudaMemsetAsync(acc, 0, static_cast<size_t>(rows * np) * sizeof(int32_t), st));
    else product(rs, A8, B8, acc, rows, np, kp);

    const bool shifted = a_u8 || b_u8;
    if (!qlinear_ && in_place && !has_za && !has_zb && !shifted) return;
    QGemmEpilogue e;
    e.acc = acc;
    e.ld_acc = np;
    e.rows = rows;
    e.n = n;
    e.k = k;
    e.row_sum_a = a_sums.defined() ? dptr<int32_t>(a_sums) : nullptr;
    e.col_sum_b = b_sums;
    e.a_ty = to_ty(a.dtype());
    e.b_ty = to_ty(b.dtype());
    e.za = has_za ? dev(ctx, static_cast<size_t>(za_idx_)) : nullptr;
    e.zb = has_zb ? dev(ctx, static_cast<size_t>(zb_idx_)) : nullptr;
    e.zb_count = zb_count;
    // A uint8 operand without a zero point still has one in the int8 domain (-128): the
    // correction needs the other operand's sums.
    Tensor zero_a, zero_b;
    if (a_u8 && !has_za) e.za = zero_point_zero(zero_a, rs);
    if (b_u8 && !has_zb) e.zb = zero_point_zero(zero_b, rs);
    if (e.za && !e.col_sum_b) {
      b_sums_tmp = shared_->allocate(DType::kInt32, Shape{n});
      row_sums_s8(B8, n, k, kp, dptr<int32_t>(b_sums_tmp), st);
      ONYX_CUDA_LAUNCHED();
      e.col_sum_b = dptr<int32_t>(b_sums_tmp);
    }
    if (e.zb && !e.row_sum_a) {
      if (!a_sums.defined()) {
        a_sums = shared_->allocate(DType::kInt32, Shape{rows});
        row_sums_s8(A8, rows, k, kp, dptr<int32_t>(a_sums), st);
        ONYX_CUDA_LAUNCHED();
      }
      e.row_sum_a = dptr<int32_t>(a_sums);
    }
    e.y = y_ptr;
    e.y_ty = qlinear_ ? to_ty(y.dtype()) : Ty::kI32;
    if (qlinear_) {
      const Tensor& sa = in(ctx, 1);
      const Tensor& sb = in(ctx, 4);
      const Tensor& sy = in(ctx, 6);
      if (sa.numel() != 1) fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": a per-row a_scale");
      if (sy.numel() != 1) fail(ErrorCode::kInvalidArgument, node_.label(), ": y_scale must be a scalar");
      if (sb.numel() != 1 && sb.numel() != n)
        fail(ErrorCode::kInvalidArgument, node_.label(), ": b_scale must have 1 or ", n, " values, got ", sb.numel());
      if (sb.dtype() != sa.dtype() || sy.dtype() != sa.dtype())
        fail(ErrorCode::kInvalidArgument, node_.label(), ": a_scale, b_scale and y_scale must have one type");
      e.scale_ty = to_ty(sa.dtype());
      e.sa = dev(ctx, 1);
      e.sb = dev(ctx, 4);
      e.sb_count = sb.numel();
      e.sy = dev(ctx, 6);
      if (has(ctx, 7)) {
        if (in(ctx, 7).numel() != 1 || in(ctx, 7).dtype() != y.dtype())
          fail(ErrorCode::kInvalidArgument, node_.label(), ": y_zero_point must be one value of y's type");
        e.zy = dev(ctx, 7);
      }
    }
    qgemm_epilogue(e, st);
    ONYX_CUDA_LAUNCHED();
  }

  /// A device byte holding the original zero point 0 (for a uint8 operand given without one; the
  /// epilogue shifts it to -128 like a given one).
  const void* zero_point_zero(Tensor& t, RunState& rs) const {
    t = shared_->allocate(DType::kUInt8, Shape{});
    ONYX_CUDA_CHECK(cudaMemsetAsync(t.raw_data(), 0, 1, rs.stream));
    return t.raw_data();
  }

  /// acc[rows, np] (int32) = A8[rows, kp] B8[np, kp]^T on cuBLASLt's int8 kernels (TN form).
  void product(RunState& rs, const int8_t* A8, const int8_t* B8, int32_t* acc, int64_t rows, int64_t np, int64_t kp) const {
    if (rows > 0x7fffffff || np > 0x7fffffff || kp > 0x7fffffff)
      fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": matrix product too large for cuBLASLt");
    LtInt8Handles h;
    ONYX_CUBLAS_CHECK(cublasLtMatmulDescCreate(&h.op, CUBLAS_COMPUTE_32I, CUDA_R_32I));
    const cublasOperation_t tr = CUBLAS_OP_T, nt = CUBLAS_OP_N;
    ONYX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(h.op, CUBLASLT_MATMUL_DESC_TRANSA, &tr, sizeof(tr)));
    ONYX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(h.op, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof(nt)));
    // cuBLASLt's A: B8 as a column-major kp x np matrix (ld kp), read transposed; its B: A8 as a
    // column-major kp x rows matrix (ld kp); C = D: column-major np x rows (ld np) = Y [rows, np].
    ONYX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&h.a, CUDA_R_8I, static_cast<uint64_t>(kp), static_cast<uint64_t>(np), kp));
    ONYX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&h.b, CUDA_R_8I, static_cast<uint64_t>(kp), static_cast<uint64_t>(rows), kp));
    ONYX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&h.c, CUDA_R_32I, static_cast<uint64_t>(np), static_cast<uint64_t>(rows), np));
    uint32_t align = 256;
    auto lower = [&](uint64_t x) {
      while (align > 4 && x % align) align >>= 1;
    };
    lower(reinterpret_cast<uintptr_t>(A8));
    lower(reinterpret_cast<uintptr_t>(B8));
    lower(reinterpret_cast<uintptr_t>(acc));
    const std::vector<int64_t> key{rows, np, kp, align};
    cublasLtMatmulAlgo_t algo{};
    bool cached = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) {
        algo = it->second;
        cached = true;
      }
    }
    if (!cached) {
      ONYX_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&h.pref));
      const uint64_t ws = kLtInt8Workspace;
      ONYX_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(h.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
      for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
        ONYX_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(h.pref, attr, &align, sizeof(align)));
      cublasLtMatmulHeuristicResult_t result{};
      int found = 0;
      const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(rs.lt, h.op, h.a, h.b, h.c, h.c, h.pref, 1, &result, &found);
      if (s != CUBLAS_STATUS_SUCCESS || found == 0)
        fail(ErrorCode::kEpFailure, "cuda: ", node_.label(), ": cuBLASLt has no int8 algorithm for a ", rows, "x", kp, " by ", kp, "x", np,
             " product");
      algo = result.algo;
      std::lock_guard<std::mutex> lock(mu_);
      cache_[key] = algo;
    }
    const int32_t alpha = 1, beta = 0;
    void* ws = rs.workspace(kLtInt8Workspace);
    ONYX_CUBLAS_CHECK(cublasLtMatmul(rs.lt, h.op, &alpha, B8, h.a, A8, h.b, &beta, acc, h.c, acc, h.c, &algo, ws, kLtInt8Workspace, rs.stream));
  }

  bool qlinear_ = false;
  int b_idx_ = 1, za_idx_ = 2, zb_idx_ = 3;
  Tensor b_packed_, b_sums_;  // device: a constant B as int8 [np, kp], its column sums [n]
  Tensor host_keep_[2];
  int64_t b_k_ = -1, b_n_ = -1;
  mutable std::mutex mu_;
  mutable std::map<std::vector<int64_t>, cublasLtMatmulAlgo_t> cache_;
};

}  // namespace

std::unique_ptr<Kernel> create_quant_kernel(const KernelCreateInfo& info, const std::shared_ptr<Shared>& shared) {
  const Node& n = info.node;
  if (!n.domain.empty() && n.domain != "ai.onnx") return nullptr;
  const std::string& op = n.op_type;
  if (op == "QuantizeLinear" || op == "DequantizeLinear") return std::make_unique<QuantizeKernel>(info, shared, op == "QuantizeLinear");
  if (op == "DynamicQuantizeLinear") return std::make_unique<DynamicQuantizeKernel>(info, shared);
  if (op == "MatMulInteger" || op == "QLinearMatMul") return std::make_unique<QMatMulKernel>(info, shared);
  return nullptr;
}

}  // namespace onyx::cuda
