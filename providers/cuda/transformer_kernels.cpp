// The CUDA EP's kernels for ONNX Runtime's transformer operators: the host side (shape checks as
// the CPU EP makes them, buffers, cuBLASLt products) around transformer.cu's device code.
//  - Gelu / BiasGelu / FastGelu / QuickGelu: one elementwise pass (bias added in it).
//  - Skip(Simplified)LayerNormalization, SimplifiedLayerNormalization: a block per row.
//  - RotaryEmbedding: an elementwise pass; position_ids are read on the host, checked and uploaded.
//  - MatMulNBits: up to 4 rows of A, a warp-per-column GEMV dequantising on the fly; more rows,
//    W dequantised into fp32 scratch and multiplied on cuBLASLt (bias in its epilogue).
//  - MultiHeadAttention / Attention: keys and values gathered per head (into the presents when
//    asked for), then the attention core; Attention's packed projection on cuBLASLt first.
//  - GroupQueryAttention: the new keys (rotated) and values appended into the present buffer (in
//    place when it is the past buffer), then the core with grouped heads; seqlens_k and
//    total_sequence_length read on the host and checked as the CPU EP does.
#include "transformer_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

#include "transformer.hpp"

namespace onyx::cuda {
namespace {

[[noreturn]] void bad(const Node& n, const std::string& what) { fail(ErrorCode::kInvalidArgument, n.label(), ": ", what); }

Tensor& out_at(KernelContext& ctx, size_t i, const Node& n) {
  if (!ctx.output_ready(i)) fail(ErrorCode::kRuntime, "cuda: ", n.label(), ": output ", i, " was not shaped by inference");
  return ctx.output(i);
}
float* out_or_null(KernelContext& ctx, size_t i, const Node& n) {
  return i < ctx.num_outputs() && ctx.has_output(i) ? dptr<float>(out_at(ctx, i, n)) : nullptr;
}

// ---------------------------------------------------------------------------------------------
// cuBLASLt: row-major C[m, n] = A[m, k] op(B) (+ bias[n]); B is [k, n], or [n, k] when trans_b.
// Computed as the column-major C^T = op(B)^T A^T. A, B, C and the bias are float32 (TF32 with
// use_tf32), or float16 / bfloat16 with fp32 accumulation (CUBLAS_COMPUTE_32F, fp32 alpha / beta).

class Gemm {
 public:
  explicit Gemm(bool tf32) : tf32_(tf32) {}
  void run(RunState& rs, int64_t m, int64_t n, int64_t k, const float* A, const float* B, bool trans_b, const float* bias, float* C) const {
    run(rs, DType::kFloat, m, n, k, A, B, trans_b, bias, C);
  }
  void run(RunState& rs, DType dt, int64_t m, int64_t n, int64_t k, const void* A, const void* B, bool trans_b, const void* bias,
           void* C) const {
    if (m == 0 || n == 0) return;
    if (m > 0x7fffffff || n > 0x7fffffff || k > 0x7fffffff) fail(ErrorCode::kNotImplemented, "cuda: matrix product too large for cuBLASLt");
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t lb = nullptr, la = nullptr, lc = nullptr;
    struct Guard {
      cublasLtMatmulDesc_t& op;
      cublasLtMatrixLayout_t &a, &b, &c;
      ~Guard() {
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (c) cublasLtMatrixLayoutDestroy(c);
        if (op) cublasLtMatmulDescDestroy(op);
      }
    } guard{op, la, lb, lc};
    const cudaDataType_t type = dt == DType::kFloat16 ? CUDA_R_16F : dt == DType::kBFloat16 ? CUDA_R_16BF : CUDA_R_32F;
    const bool f32 = type == CUDA_R_32F;
    ONYX_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, f32 && tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t op1 = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op2 = CUBLAS_OP_N;
    ONYX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &op1, sizeof(op1)));
    ONYX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &op2, sizeof(op2)));
    if (bias) {
      const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
      ONYX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
      ONYX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
      ONYX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof(type)));
    }
    ONYX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, type, trans_b ? k : n, trans_b ? n : k, trans_b ? k : n));
    ONYX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, type, k, m, k));
    ONYX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc, type, n, m, n));
    uint32_t align = 256;
    const uint32_t elem = f32 ? 4 : 2;
    for (const void* p : {A, B, static_cast<const void*>(C), bias})
      while (p && align > elem && reinterpret_cast<uintptr_t>(p) % align) align >>= 1;
    void* ws = rs.workspace(kWorkspace);
    const cublasLtMatmulAlgo_t algo =
        heuristic(rs, {m, n, k, trans_b, bias != nullptr, align, static_cast<int64_t>(type)}, op, la, lb, lc, align);
    const float alpha = 1.f, beta = 0.f;
    ONYX_CUBLAS_CHECK(cublasLtMatmul(rs.lt, op, &alpha, B, lb, A, la, &beta, C, lc, C, lc, &algo, ws, kWorkspace, rs.stream));
  }

 private:
  static constexpr size_t kWorkspace = size_t(32) << 20;
  cublasLtMatmulAlgo_t heuristic(RunState& rs, const std::vector<int64_t>& key, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                                 cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc, uint32_t align) const {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) return it->second;
    }
    cublasLtMatmulPreference_t pref = nullptr;
    ONYX_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = kWorkspace;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(rs.lt, op, lb, la, lc, lc, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0)
      fail(ErrorCode::kEpFailure, "cuda: cuBLASLt has no algorithm for a ", key[0], "x", key[2], " by ", key[2], "x", key[1], " product");
    std::lock_guard<std::mutex> lock(mu_);
    cache_[key] = result.algo;
    return result.algo;
  }
  bool tf32_;
  mutable std::mutex mu_;
  mutable std::map<std::vector<int64_t>, cublasLtMatmulAlgo_t> cache_;
};

/// Device scratch of n floats, released (to the arena) after the run.
float* scratch_floats(const std::shared_ptr<Shared>& s, int64_t n, std::vector<Tensor>& keep) {
  keep.push_back(s->allocate(DType::kFloat, Shape{std::max<int64_t>(n, 1)}));
  return dptr<float>(keep.back());
}
/// Device scratch of n elements of dt.
void* scratch_of(const std::shared_ptr<Shared>& s, DType dt, int64_t n, std::vector<Tensor>& keep) {
  keep.push_back(s->allocate(dt, Shape{std::max<int64_t>(n, 1)}));
  return keep.back().raw_data();
}
/// p advanced by n elements of dt.
const void* at(const void* p, int64_t n, DType dt) { return static_cast<const char*>(p) + n * static_cast<int64_t>(dtype_size(dt)); }
void* at(void* p, int64_t n, DType dt) { return static_cast<char*>(p) + n * static_cast<int64_t>(dtype_size(dt)); }
/// Output i's device memory, or null when the node does not produce it.
void* out_raw_or_null(KernelContext& ctx, size_t i, const Node& n) {
  return i < ctx.num_outputs() && ctx.has_output(i) ? out_at(ctx, i, n).raw_data() : nullptr;
}

/// Uploads per-run host values (position ids, seqlens) through the run's pinned staging.
template <class T>
const T* upload_values(RunState& rs, const std::shared_ptr<Shared>& s, const std::vector<T>& v, DType dt, std::vector<Tensor>& keep) {
  rs.forbid_while_capturing("the upload of host values that change between runs (position ids, sequence lengths)");
  keep.push_back(s->allocate(dt, Shape{static_cast<int64_t>(std::max<size_t>(v.size(), 1))}));
  if (!v.empty()) {
    void* stage = rs.staging(v.size() * sizeof(T));
    std::memcpy(stage, v.data(), v.size() * sizeof(T));
    ONYX_CUDA_CHECK(cudaMemcpyAsync(keep.back().raw_data(), stage, v.size() * sizeof(T), cudaMemcpyHostToDevice, rs.stream));
  }
  return static_cast<const T*>(keep.back().raw_data());
}

// ---------------------------------------------------------------------------------------------
// GELUs

class GeluKernel final : public CudaKernel {
 public:
  GeluKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, std::move(s)) {
    const std::string& op = info.node.op_type;
    kind_ = op == "FastGelu" ? GeluKind::kTanh : op == "QuickGelu" ? GeluKind::kQuick : GeluKind::kErf;
    alpha_ = info.node.attr_float("alpha", 1.702f);
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out_at(ctx, 0, node_);
    const int64_t cols = x.rank() ? x.shape()[x.rank() - 1] : 1;
    const void* bias = nullptr;
    if (node_.inputs.size() > 1 && has(ctx, 1)) {
      const Tensor& b = in(ctx, 1);
      if (b.rank() != 1 || b.shape()[0] != cols)
        bad(node_, str("the bias ", b.shape().to_string(), " must be 1-D with X's last dim (", cols, ")"));
      bias = dev(ctx, 1);
    }
    gelu(to_ty(x.dtype()), kind_, dev(ctx, 0), bias, y.raw_data(), x.numel(), cols, alpha_, stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  GeluKind kind_;
  float alpha_;
};

// ---------------------------------------------------------------------------------------------
// Layer normalisations

class SkipNormKernel final : public CudaKernel {
 public:
  SkipNormKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, std::move(s)) {
    const std::string& op = info.node.op_type;
    plain_ = op == "SimplifiedLayerNormalization";
    rms_ = plain_ || op == "SkipSimplifiedLayerNormalization";
    eps_ = info.node.attr_float("epsilon", plain_ ? 1e-5f : 1e-12f);
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    SkipNormArgs a;
    a.rms = rms_;
    a.eps = eps_;
    a.x = dev(ctx, 0);
    a.y = out_at(ctx, 0, node_).raw_data();
    if (plain_) {  // SimplifiedLayerNormalization(X, scale): outputs Y, inv_std_var
      const int64_t r = static_cast<int64_t>(x.rank());
      const int64_t axis = normalize_axis(node_.attr_int("axis", -1), r, node_.label());
      a.rows = prod(x.shape(), 0, axis);
      a.cols = prod(x.shape(), axis, r);
      if (in(ctx, 1).numel() != a.cols)
        bad(node_, str("scale ", in(ctx, 1).shape().to_string(), " must have the ", a.cols, " values of the normalised dims"));
      a.gamma = dev(ctx, 1);
      a.inv_std = out_or_null(ctx, 1, node_);
    } else {
      const Tensor& skip = in(ctx, 1);
      if (x.rank() < 2 || x.rank() > 3) bad(node_, "input must be 2-D or 3-D, got " + x.shape().to_string());
      const int64_t d = x.shape()[x.rank() - 1];
      a.cols = d;
      a.rows = d ? x.numel() / d : 0;
      const size_t beta_at = rms_ ? 0 : 3, bias_at = rms_ ? 3 : 4;
      for (size_t i : {size_t(2), beta_at, bias_at}) {
        if (i == 0 || i >= node_.inputs.size() || !has(ctx, i)) continue;
        const Tensor& t = in(ctx, i);
        if (t.rank() != 1 || t.shape()[0] != d)
          bad(node_, str("gamma, beta and bias must be 1-D of the hidden size ", d, ", got ", t.shape().to_string()));
      }
      const int64_t skip_rows = d ? skip.numel() / d : 0;
      const bool skip_ok = skip.shape() == x.shape() || (x.rank() == 3 && skip.rank() >= 1 && skip.shape()[skip.rank() - 1] == d &&
                                                         skip_rows == x.shape()[1] && (skip.rank() == 2 || (skip.rank() == 3 && skip.shape()[0] == 1)));
      if (!skip_ok) bad(node_, "skip " + skip.shape().to_string() + " does not match input " + x.shape().to_string());
      a.skip = dev(ctx, 1);
      a.skip_rows = std::max<int64_t>(skip_rows, 1);
      a.gamma = dev(ctx, 2);
      if (beta_at && beta_at < node_.inputs.size() && has(ctx, beta_at)) a.beta = dev(ctx, beta_at);
      if (bias_at < node_.inputs.size() && has(ctx, bias_at)) a.bias = dev(ctx, bias_at);
      a.mean = out_or_null(ctx, 1, node_);
      a.inv_std = out_or_null(ctx, 2, node_);
      // input_skip_bias_sum has the data's type (mean and inv_std_var are float)
      a.sum = out_raw_or_null(ctx, 3, node_);
    }
    skip_norm(to_ty(x.dtype()), a, stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  static int64_t prod(const Shape& s, int64_t b, int64_t e) {
    int64_t p = 1;
    for (int64_t k = b; k < e; ++k) p *= s[static_cast<size_t>(k)];
    return p;
  }
  bool plain_ = false, rms_ = false;
  float eps_;
};

// ---------------------------------------------------------------------------------------------
// RotaryEmbedding

class RotaryKernel final : public CudaKernel {
 public:
  RotaryKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s)
      : CudaKernel(info, std::move(s)),
        heads_(info.node.attr_int("num_heads", 0)),
        rotary_dim_(info.node.attr_int("rotary_embedding_dim", 0)),
        interleaved_(info.node.attr_int("interleaved", 0) == 1) {
    if (rotary_dim_ > 0 && heads_ <= 0) fail(ErrorCode::kInvalidGraph, info.node.label(), ": rotary_embedding_dim needs the num_heads attribute");
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    const Tensor& cc = in(ctx, 2);
    const Tensor& sc = in(ctx, 3);
    if (x.rank() != 3 && x.rank() != 4) bad(node_, "input must be 3-D or 4-D, got " + x.shape().to_string());
    if (cc.rank() != 2 || !(cc.shape() == sc.shape())) bad(node_, "cos_cache and sin_cache must be 2-D of one shape");
    const bool four = x.rank() == 4;
    const Shape& xs = x.shape();
    const int64_t B = xs[0], S = four ? xs[2] : xs[1], hidden = four ? xs[1] * xs[3] : xs[2];
    const int64_t half_cache = cc.shape()[1], max_pos = cc.shape()[0];
    int64_t H;
    if (four) H = xs[3];
    else if (rotary_dim_ > 0) {
      if (hidden % heads_ != 0) bad(node_, str("hidden size ", hidden, " is not divisible by num_heads ", heads_));
      H = hidden / heads_;
    } else {
      H = 2 * half_cache;
    }
    if (H <= 0 || hidden % H != 0) bad(node_, str("hidden size ", hidden, " is not a multiple of the head size ", H));
    const int64_t N = hidden / H;
    if (!four && heads_ > 0 && heads_ != N) bad(node_, str("num_heads ", heads_, " does not match the cache's head size ", H));
    const int64_t rd = rotary_dim_ > 0 ? rotary_dim_ : H;
    if (rd > H || rd % 2 != 0) bad(node_, str("rotary_embedding_dim ", rd, " must be even and at most the head size ", H));
    if (half_cache != rd / 2) bad(node_, str("the caches' ", half_cache, " columns must be rotary dim / 2 = ", rd / 2));
    const Tensor& pt = in(ctx, 1);
    const std::vector<int64_t> pos = host_ints(ctx, 1);
    const bool offset = pt.numel() == 1 && pt.rank() <= 1;
    if (!offset && !(pt.shape() == Shape{B, S})) bad(node_, str("position_ids must be [", B, ",", S, "] or one start offset, got ", pt.shape().to_string()));
    if (offset) {
      if (pos[0] < 0 || pos[0] + S > max_pos)
        bad(node_, str("position_ids start ", pos[0], " with ", S, " tokens exceeds the cos/sin cache's ", max_pos, " positions"));
    } else {
      for (size_t i = 0; i < pos.size(); ++i)
        if (pos[i] < 0 || pos[i] >= max_pos)
          bad(node_, str("position_ids value ", pos[i], " at index ", i, " is outside the cos/sin cache's ", max_pos, " positions"));
    }
    RunState& rs = run(ctx);
    std::vector<Tensor> keep;
    RotaryArgs a;
    a.x = devf(ctx, 0);
    a.y = dptr<float>(out_at(ctx, 0, node_));
    a.B = B, a.S = S, a.N = N, a.H = H, a.rd = rd;
    a.xb = a.yb = S * hidden;
    a.xs = a.ys = four ? H : hidden;
    a.xh = a.yh = four ? S * H : H;
    a.interleaved = interleaved_;
    a.cos = devf(ctx, 2);
    a.sin = devf(ctx, 3);
    a.pos_kind = offset ? RotaryPos::kOffset : RotaryPos::kIds;
    a.pos = upload_values<int64_t>(rs, shared_, pos, DType::kInt64, keep);
    rotary_f32(a, rs.stream);
    ONYX_CUDA_LAUNCHED();
  }

 private:
  int64_t heads_, rotary_dim_;
  bool interleaved_;
};

// ---------------------------------------------------------------------------------------------
// MatMulNBits

class MatMulNBitsKernel final : public CudaKernel {
 public:
  MatMulNBitsKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, s), gemm_(s->opt.use_tf32) {
    const Node& n = info.node;
    w_.K = n.attr_int("K", 0);
    w_.N = n.attr_int("N", 0);
    w_.bits = n.attr_int("bits", 4);
    w_.block = n.attr_int("block_size", 0);
    if (w_.K <= 0 || w_.N <= 0 || (w_.bits != 2 && w_.bits != 4 && w_.bits != 8) || w_.block < 16 || (w_.block & (w_.block - 1)) != 0)
      fail(ErrorCode::kInvalidGraph, n.label(), ": K, N must be positive, bits 2, 4 or 8, block_size a power of 2 >= 16");
    w_.kb = (w_.K + w_.block - 1) / w_.block;
    w_.blob = w_.block * w_.bits / 8;
    w_.zp_blob = (w_.kb * w_.bits + 7) / 8;
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& A = in(ctx, 0);
    const Tensor& b = in(ctx, 1);
    const Tensor& sc = in(ctx, 2);
    NBitsWeights w = w_;
    auto flat_or_2d = [](const Tensor& t, int64_t r, int64_t c) {
      return (t.rank() == 1 && t.shape()[0] == r * c) || (t.rank() == 2 && t.shape()[0] == r && t.shape()[1] == c);
    };
    if (A.rank() < 1 || A.shape()[A.rank() - 1] != w.K) bad(node_, str("A must be [..., ", w.K, "], got ", A.shape().to_string()));
    if (b.dtype() != DType::kUInt8 || !(b.shape() == Shape{w.N, w.kb, w.blob}))
      bad(node_, str("B must be uint8 [", w.N, ", ", w.kb, ", ", w.blob, "], got ", b.shape().to_string()));
    if (!flat_or_2d(sc, w.N, w.kb)) bad(node_, str("scales must be [", w.N * w.kb, "] or [", w.N, ", ", w.kb, "]"));
    w.b = static_cast<const uint8_t*>(dev(ctx, 1));
    w.scales = devf(ctx, 2);
    if (node_.inputs.size() > 3 && has(ctx, 3)) {
      const Tensor& z = in(ctx, 3);
      if (z.dtype() == DType::kUInt8) {
        if (!flat_or_2d(z, w.N, w.zp_blob)) bad(node_, str("uint8 zero_points must be [", w.N * w.zp_blob, "] or [", w.N, ", ", w.zp_blob, "]"));
        w.zp_u8 = static_cast<const uint8_t*>(dev(ctx, 3));
      } else {
        if (!flat_or_2d(z, w.N, w.kb)) bad(node_, str("float zero_points must be [", w.N * w.kb, "] or [", w.N, ", ", w.kb, "]"));
        w.zp_f = devf(ctx, 3);
      }
    }
    if (node_.inputs.size() > 4 && has(ctx, 4)) {
      const Tensor& g = in(ctx, 4);
      if (g.dtype() != DType::kInt32 || g.rank() != 1 || (g.shape()[0] != w.K && g.shape()[0] != w.kb * w.block))
        bad(node_, str("g_idx must be int32 [", w.K, "]"));
      // Block indices are checked on the host once (a constant) or per run.
      const std::vector<int64_t> gi = host_ints(ctx, 4);
      for (size_t k = 0; k < gi.size(); ++k)
        if (gi[k] < 0 || gi[k] >= w.kb) bad(node_, str("g_idx[", k, "] = ", gi[k], " is not a block index in [0, ", w.kb, ")"));
      w.g_idx = static_cast<const int32_t*>(dev(ctx, 4));
    }
    const float* bias = nullptr;
    if (node_.inputs.size() > 5 && has(ctx, 5)) {
      if (in(ctx, 5).numel() != w.N) bad(node_, str("bias must have ", w.N, " values"));
      bias = devf(ctx, 5);
    }
    Tensor& y = out_at(ctx, 0, node_);
    const int64_t M = w.K ? A.numel() / w.K : 0;
    if (M == 0) return;
    RunState& rs = run(ctx);
    if (M <= kNBitsGemvRows) {
      nbits_gemv_f32(w, devf(ctx, 0), M, bias, dptr<float>(y), rs.stream);
      ONYX_CUDA_LAUNCHED();
      return;
    }
    std::vector<Tensor> keep;
    float* wt = scratch_floats(shared_, w.N * w.K, keep);
    nbits_dequantize_f32(w, wt, rs.stream);
    ONYX_CUDA_LAUNCHED();
    gemm_.run(rs, M, w.N, w.K, devf(ctx, 0), wt, true, bias, dptr<float>(y));
  }

 private:
  NBitsWeights w_;
  Gemm gemm_;
};

// ---------------------------------------------------------------------------------------------
// Attention family

struct AttnAttrs {
  int64_t heads = 0;
  bool causal = false;
  float scale = 0, mask_filter = -10000.0f;
  explicit AttnAttrs(const Node& n)
      : heads(n.attr_int("num_heads", 0)),
        causal(n.attr_int("unidirectional", 0) != 0),
        scale(n.attr_float("scale", 0.0f)),
        mask_filter(n.attr_float("mask_filter_value", -10000.0f)) {
    if (heads <= 0) fail(ErrorCode::kInvalidGraph, n.label(), ": num_heads must be positive");
  }
  void fill(AttnCoreArgs& c, int64_t B, int64_t S, int64_t T, int64_t P, int64_t H, int64_t Hv) const {
    c.B = B, c.N = heads, c.S = S, c.T = T, c.P = P, c.H = H, c.Hv = Hv;
    c.scale = scale > 0 ? scale : 1.0f / std::sqrt(static_cast<float>(H));
    c.mask_filter = mask_filter;
    c.causal = causal;
  }
};

/// The mask forms: [B] key lengths, [2B] ends and starts (Attention only), [B, T], and for
/// Attention [B, S, T] and [B, 1, M, M] with M >= T.
void set_mask(AttnCoreArgs& c, const Tensor& m, const int32_t* data, bool attention_forms, const Node& n) {
  if (m.dtype() != DType::kInt32) bad(n, "the mask must be int32");
  const Shape& s = m.shape();
  const int64_t B = c.B, S = c.S, T = c.T;
  if (s.size() == 1 && s[0] == B) c.mask_kind = MaskKind::kEnds;
  else if (attention_forms && s.size() == 1 && s[0] == 2 * B) c.mask_kind = MaskKind::kEndsStarts;
  else if (s.size() == 2 && s[0] == B && s[1] == T) c.mask_kind = MaskKind::kRaw2d;
  else if (attention_forms && s.size() == 3 && s[0] == B && s[1] == S && s[2] == T) c.mask_kind = MaskKind::kRaw3d;
  else if (attention_forms && s.size() == 4 && s[0] == B && s[1] == 1 && s[2] == s[3] && s[2] >= T) {
    c.mask_kind = MaskKind::kRaw4d;
    c.mask_max = s[2];
  } else {
    bad(n, str("mask ", s.to_string(), " is none of the forms taken (total keys T = ", T, ")"));
  }
  c.mask = data;
}

void set_attention_bias(AttnCoreArgs& c, const Tensor& ab, const void* data, int64_t row_len, const Node& n) {
  const Shape& s = ab.shape();
  if (s.size() != 4 || (s[0] != 1 && s[0] != c.B) || (s[1] != 1 && s[1] != c.N) || s[2] != c.S || s[3] != row_len)
    bad(n, str("attention_bias ", s.to_string(), " must be [", c.B, " or 1, ", c.N, " or 1, ", c.S, ", ", row_len, "]"));
  c.bias = data;
  c.ab_s = row_len;
  c.ab_n = s[1] == 1 ? 0 : c.S * row_len;
  c.ab_b = s[0] == 1 ? 0 : s[1] * c.S * row_len;
}

void run_core(RunState& rs, const std::shared_ptr<Shared>& sh, AttnCoreArgs& c, std::vector<Tensor>& keep, Ty ty = Ty::kF32) {
  float* scratch = scratch_floats(sh, attn_core_scratch_floats(c), keep);
  attn_core(ty, c, scratch, rs.stream);
  ONYX_CUDA_LAUNCHED();
}

class MhaKernel final : public CudaKernel {
 public:
  MhaKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, std::move(s)), at_(info.node) {}
  void compute(KernelContext& ctx) const override {
    const Node& n = node_;
    auto opt = [&](size_t i) { return i < n.inputs.size() && has(ctx, i); };
    if (!opt(1) || !opt(2)) bad(n, "key and value are required (packed QKV is declined by the CUDA EP)");
    const Tensor& q = in(ctx, 0);
    const Tensor& k = in(ctx, 1);
    const Tensor& v = in(ctx, 2);
    if (q.rank() != 3) bad(n, "query must be 3-D [B, S, D], got " + q.shape().to_string());
    if (opt(6) != opt(7)) bad(n, "past_key and past_value must be given together");
    const int64_t B = q.shape()[0], S = q.shape()[1], D = q.shape()[2], N = at_.heads;
    if (D % N != 0) bad(n, str("query's hidden size ", D, " is not divisible by ", N, " heads"));
    const int64_t H = D / N;
    const bool bnsh = k.rank() == 4;
    if (k.rank() != v.rank() || (k.rank() != 3 && !bnsh)) bad(n, "key and value must both be [B, L, D] or both [B, N, L, H]");
    int64_t L, Hv;
    if (bnsh) {
      L = k.shape()[2], Hv = v.shape()[3];
      if (!(k.shape() == Shape{B, N, L, H}) || v.shape()[0] != B || v.shape()[1] != N || v.shape()[2] != L)
        bad(n, "key / value must be [B, N, L, H]");
      if (opt(6)) bad(n, "key and value as [B, N, L, H] are the whole cache; past_key is not taken with them");
      if (opt(3)) fail(ErrorCode::kNotImplemented, n.label(), ": a bias with key and value as [B, N, L, H] is not supported");
    } else {
      L = k.shape()[1];
      if (!(k.shape() == Shape{B, L, D}) || v.shape()[0] != B || v.shape()[1] != L || v.shape()[2] % N != 0)
        bad(n, "key / value must be [B, L, D] / [B, L, Dv] with Dv divisible by num_heads");
      Hv = v.shape()[2] / N;
    }
    const int64_t Dv = Hv * N;
    const DType dt = q.dtype();  // float32, float16 or bfloat16 (the claim takes one type)
    const Ty ty = to_ty(dt);
    const void* pb = nullptr;
    if (opt(3)) {
      if (in(ctx, 3).numel() != 2 * D + Dv || in(ctx, 3).rank() != 1) bad(n, str("bias must have ", 2 * D + Dv, " values"));
      pb = dev(ctx, 3);
    }
    const int64_t P = opt(6) ? in(ctx, 6).shape()[2] : 0;
    if (opt(6) && (!(in(ctx, 6).shape() == Shape{B, N, P, H}) || !(in(ctx, 7).shape() == Shape{B, N, P, Hv})))
      bad(n, "past_key / past_value must be [B, N, P, H] / [B, N, P, Hv]");
    const int64_t T = P + L;
    RunState& rs = run(ctx);
    std::vector<Tensor> keep;
    AttnCoreArgs c;
    at_.fill(c, B, S, T, P, H, Hv);
    c.q = dev(ctx, 0), c.q_sb = S * D, c.q_sn = H, c.q_ss = D;
    if (pb) {  // Q plus its bias, as [B, N, S, H]
      GatherHeadsArgs g;
      g.x = c.q, g.bias = pb, g.B = B, g.N = N, g.L = S, g.W = H, g.xb = S * D, g.xl = D, g.xh = H;
      g.dst = scratch_of(shared_, dt, B * N * S * H, keep);
      gather_heads(ty, g, rs.stream);
      c.q = g.dst, c.q_sb = N * S * H, c.q_sn = S * H, c.q_ss = H;
    }
    void* pk = out_raw_or_null(ctx, 1, n);
    void* pv = out_raw_or_null(ctx, 2, n);
    if (bnsh && !pk && !pv) {
      c.k = dev(ctx, 1), c.v = dev(ctx, 2);
    } else {
      void* kd = pk ? pk : scratch_of(shared_, dt, B * N * T * H, keep);
      void* vd = pv ? pv : scratch_of(shared_, dt, B * N * T * Hv, keep);
      GatherHeadsArgs g;
      g.B = B, g.N = N, g.P = P, g.L = L;
      for (int which = 0; which < 2; ++which) {
        const int64_t W = which ? Hv : H, stride = which ? Dv : D;
        g.past = P ? dev(ctx, which ? 7 : 6) : nullptr;
        g.x = dev(ctx, which ? 2 : 1);
        g.bias = pb ? at(pb, which ? 2 * D : D, dt) : nullptr;
        g.dst = which ? vd : kd;
        g.W = W;
        if (bnsh) g.xb = N * L * W, g.xl = W, g.xh = L * W;
        else g.xb = L * stride, g.xl = stride, g.xh = W;
        gather_heads(ty, g, rs.stream);
      }
      c.k = kd, c.v = vd;
    }
    ONYX_CUDA_LAUNCHED();
    c.k_sb = N * T * H, c.k_sn = T * H, c.v_sb = N * T * Hv, c.v_sn = T * Hv;
    c.y = out_at(ctx, 0, n).raw_data(), c.y_sb = S * Dv, c.y_sn = Hv, c.y_ss = Dv;
    if (opt(4)) set_mask(c, in(ctx, 4), static_cast<const int32_t*>(dev(ctx, 4)), false, n);
    if (opt(5)) set_attention_bias(c, in(ctx, 5), dev(ctx, 5), T, n);
    if (ctx.num_outputs() > 3 && ctx.has_output(3)) {
      if (dt != DType::kFloat) fail(ErrorCode::kNotImplemented, "cuda: ", n.label(), ": output_qk in ", dtype_name(dt), " (the claim declines it)");
      c.qk = out_or_null(ctx, 3, n);
    }
    if (T == 0) {
      ONYX_CUDA_CHECK(cudaMemsetAsync(c.y, 0, static_cast<size_t>(B * S * Dv) * dtype_size(dt), rs.stream));
      return;
    }
    run_core(rs, shared_, c, keep, ty);
  }

 private:
  AttnAttrs at_;
};

class MsAttentionKernel final : public CudaKernel {
 public:
  MsAttentionKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s)
      : CudaKernel(info, s), at_(info.node), sizes_(info.node.attr_ints("qkv_hidden_sizes")), gemm_(s->opt.use_tf32) {}
  void compute(KernelContext& ctx) const override {
    const Node& n = node_;
    auto opt = [&](size_t i) { return i < n.inputs.size() && has(ctx, i); };
    const Tensor& x = in(ctx, 0);
    const Tensor& w = in(ctx, 1);
    if (x.rank() != 3 || w.rank() != 2 || x.shape()[2] != w.shape()[0])
      bad(n, "input " + x.shape().to_string() + " must be [B, S, In] and weights " + w.shape().to_string() + " [In, .]");
    const int64_t B = x.shape()[0], S = x.shape()[1], In = x.shape()[2], Dt = w.shape()[1];
    int64_t dq = Dt / 3, dk = dq, dv = dq;
    if (!sizes_.empty()) dq = sizes_[0], dk = sizes_[1], dv = sizes_[2];
    if (dq + dk + dv != Dt || dq != dk || dq % at_.heads != 0 || dv % at_.heads != 0)
      bad(n, str("weights' ", Dt, " columns do not split into Q, K, V hidden sizes divisible by ", at_.heads, " heads"));
    const DType dt = x.dtype();  // float32, float16 or bfloat16 (the claim takes one type)
    const Ty ty = to_ty(dt);
    const void* bias = nullptr;
    if (opt(2)) {
      if (in(ctx, 2).rank() != 1 || in(ctx, 2).shape()[0] != Dt) bad(n, str("bias must have ", Dt, " values"));
      bias = dev(ctx, 2);
    }
    const int64_t N = at_.heads, H = dq / N, Hv = dv / N;
    int64_t P = 0;
    if (opt(4)) {
      const Shape& ps = in(ctx, 4).shape();
      if (ps.size() != 5 || ps[0] != 2 || ps[1] != B || ps[2] != N || ps[4] != H || H != Hv) bad(n, "past must be [2, B, N, P, H]");
      P = ps[3];
    }
    const int64_t T = P + S;
    RunState& rs = run(ctx);
    std::vector<Tensor> keep;
    void* qkv = scratch_of(shared_, dt, B * S * Dt, keep);
    if (B * S > 0 && Dt > 0) {
      if (In == 0) {  // the product is zero: qkv is the bias row repeated
        if (!bias) ONYX_CUDA_CHECK(cudaMemsetAsync(qkv, 0, static_cast<size_t>(B * S * Dt) * dtype_size(dt), rs.stream));
        else
          strided_copy(bias, broadcast_view(Shape{Dt}, Shape{B * S, Dt}), qkv, contiguous(Shape{B * S, Dt}), dtype_size(dt), B * S * Dt,
                       rs.stream);
      } else {
        gemm_.run(rs, dt, B * S, Dt, In, dev(ctx, 0), dev(ctx, 1), false, bias, qkv);
      }
    }
    void* present = out_raw_or_null(ctx, 1, n);
    void* kv = present ? present : scratch_of(shared_, dt, B * N * T * (H + Hv), keep);
    void* kd = kv;
    void* vd = at(kv, B * N * T * H, dt);
    GatherHeadsArgs g;
    g.B = B, g.N = N, g.P = P, g.L = S, g.xb = S * Dt, g.xl = Dt;
    for (int which = 0; which < 2; ++which) {
      g.W = which ? Hv : H;
      g.xh = g.W;
      g.past = P ? at(dev(ctx, 4), which ? B * N * P * H : 0, dt) : nullptr;
      g.x = at(qkv, which ? dq + dk : dq, dt);
      g.dst = which ? vd : kd;
      gather_heads(ty, g, rs.stream);
    }
    ONYX_CUDA_LAUNCHED();
    AttnCoreArgs c;
    at_.fill(c, B, S, T, P, H, Hv);
    c.q = qkv, c.q_sb = S * Dt, c.q_ss = Dt, c.q_sn = H;
    c.k = kd, c.k_sb = N * T * H, c.k_sn = T * H;
    c.v = vd, c.v_sb = N * T * Hv, c.v_sn = T * Hv;
    c.y = out_at(ctx, 0, n).raw_data(), c.y_sb = S * dv, c.y_ss = dv, c.y_sn = Hv;
    if (opt(3)) set_mask(c, in(ctx, 3), static_cast<const int32_t*>(dev(ctx, 3)), true, n);
    if (opt(5)) set_attention_bias(c, in(ctx, 5), dev(ctx, 5), T, n);
    run_core(rs, shared_, c, keep, ty);
  }

 private:
  AttnAttrs at_;
  std::vector<int64_t> sizes_;
  Gemm gemm_;
};

class GqaKernel final : public CudaKernel {
 public:
  GqaKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, std::move(s)) {
    const Node& n = info.node;
    heads_ = n.attr_int("num_heads", 0);
    kv_heads_ = n.attr_int("kv_num_heads", 0);
    if (heads_ <= 0 || kv_heads_ <= 0 || heads_ % kv_heads_ != 0)
      fail(ErrorCode::kInvalidGraph, n.label(), ": num_heads must be a positive multiple of kv_num_heads");
    scale_ = n.attr_float("scale", 0.0f);
    softcap_ = n.attr_float("softcap", 0.0f);
    window_ = n.attr_int("local_window_size", -1);
    rotary_ = n.attr_int("do_rotary", 0) == 1;
    interleaved_ = n.attr_int("rotary_interleaved", 0) == 1;
    smooth_ = n.attr_int("smooth_softmax", 0) == 1;
  }
  // The presents may be computed in the past buffers (equal shapes: the past buffer holds the
  // whole sequence); the kernel then writes only the new rows.
  int inplace_input(size_t out) const override { return out == 1 ? 3 : out == 2 ? 4 : -1; }

  void compute(KernelContext& ctx) const override {
    const Node& n = node_;
    auto opt = [&](size_t i) { return i < n.inputs.size() && has(ctx, i); };
    const Tensor& q = in(ctx, 0);
    const int64_t N = heads_, Nkv = kv_heads_, G = N / Nkv;
    if (q.rank() != 3) bad(n, "query must be 3-D [batch, sequence, hidden], got " + q.shape().to_string());
    const int64_t B = q.shape()[0], S = q.shape()[1];
    const bool packed = !opt(1);
    if (opt(1) != opt(2)) bad(n, "key and value must be given together (or neither, for packed QKV)");
    const int64_t parts = packed ? N + 2 * Nkv : N;
    if (q.shape()[2] % parts != 0 || q.shape()[2] == 0) bad(n, str("query's hidden size ", q.shape()[2], " is not a positive multiple of ", parts));
    const int64_t H = q.shape()[2] / parts, q_row = q.shape()[2], kv_row = packed ? q_row : Nkv * H;
    if (!packed)
      for (size_t i : {size_t(1), size_t(2)})
        if (!(in(ctx, i).shape() == Shape{B, S, Nkv * H})) bad(n, str(i == 1 ? "key" : "value", " must be [", B, ",", S, ",", Nkv * H, "]"));
    if (opt(3) != opt(4)) bad(n, "past_key and past_value must be given together");
    int64_t P = 0;
    if (opt(3)) {
      P = in(ctx, 3).rank() == 4 ? in(ctx, 3).shape()[2] : -1;
      if (!(in(ctx, 3).shape() == Shape{B, Nkv, P, H}) || !(in(ctx, 4).shape() == in(ctx, 3).shape()))
        bad(n, str("past_key and past_value must both be [", B, ",", Nkv, ", past length, ", H, "]"));
    }
    const Tensor& sl_t = in(ctx, 5);
    if (sl_t.dtype() != DType::kInt32 || sl_t.numel() != B || sl_t.rank() < 1 || sl_t.rank() > 2 || sl_t.shape()[0] != B)
      bad(n, str("seqlens_k must be int32 [", B, "] (or [", B, ", 1])"));
    const std::vector<int64_t> sl = host_ints(ctx, 5);
    const std::vector<int64_t> tv = host_ints(ctx, 6);
    if (in(ctx, 6).dtype() != DType::kInt32 || tv.size() != 1) bad(n, "total_sequence_length must be one int32");
    const int64_t total = tv[0];
    if (total < 1) bad(n, str("total_sequence_length must be positive, got ", total));
    const int64_t L = std::max(total, P);
    if (S > 1 && S != total && B != 1)
      bad(n, str("with ", S, " new tokens and total_sequence_length ", total, " (a prompt after past context) the batch size must be 1, got ", B));
    const bool first = S == total;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t tot = sl[b] + 1;
      if (tot < 1 || tot > total) bad(n, str("seqlens_k[", b, "] = ", sl[b], " is outside [0, total_sequence_length - 1 = ", total - 1, "]"));
      if (!first) {
        const int64_t past = tot - S;
        if (past < 0) bad(n, str("seqlens_k[", b, "] = ", sl[b], " leaves no room for the ", S, " new tokens"));
        if (past > P) bad(n, str("seqlens_k[", b, "] = ", sl[b], " needs ", past, " past tokens but the past buffer holds ", P));
      }
    }
    int64_t rd = 0, max_pos = 0;
    std::vector<int64_t> pos;
    if (rotary_) {
      if (!opt(7) || !opt(8)) bad(n, "do_rotary needs cos_cache and sin_cache");
      const Tensor& cc = in(ctx, 7);
      if (cc.rank() != 2 || !(cc.shape() == in(ctx, 8).shape())) bad(n, "cos_cache and sin_cache must be [max_position, rotary_dim / 2] of one shape");
      rd = 2 * cc.shape()[1];
      max_pos = cc.shape()[0];
      if (rd <= 0 || rd > H) bad(n, str("cos_cache's ", cc.shape()[1], " columns give a rotary dim of ", rd, " for a head size of ", H));
      if (max_pos < total) bad(n, str("cos_cache has ", max_pos, " positions for a total_sequence_length of ", total));
      if (opt(9)) {
        if (in(ctx, 9).dtype() != DType::kInt64 || !(in(ctx, 9).shape() == Shape{B, S})) bad(n, str("position_ids must be int64 [", B, ",", S, "]"));
        pos = host_ints(ctx, 9);
        for (size_t i = 0; i < pos.size(); ++i)
          if (pos[i] < 0 || pos[i] >= max_pos)
            bad(n, str("position_ids value ", pos[i], " at index ", i, " is outside the cos/sin cache's ", max_pos, " positions"));
      }
    }
    RunState& rs = run(ctx);
    std::vector<Tensor> keep;
    std::vector<int32_t> sl32(sl.begin(), sl.end());
    const int32_t* d_sl = upload_values<int32_t>(rs, shared_, sl32, DType::kInt32, keep);
    const int64_t* d_pos = pos.empty() ? nullptr : upload_values<int64_t>(rs, shared_, pos, DType::kInt64, keep);
    Tensor& y = ctx.allocate_output(0, DType::kFloat, Shape{B, S, N * H});
    const Shape cache{B, Nkv, L, H};
    float* pk = ctx.has_output(1) ? dptr<float>(ctx.allocate_output(1, DType::kFloat, cache)) : scratch_floats(shared_, B * Nkv * L * H, keep);
    float* pv = ctx.num_outputs() > 2 && ctx.has_output(2) ? dptr<float>(ctx.allocate_output(2, DType::kFloat, cache))
                                                           : scratch_floats(shared_, B * Nkv * L * H, keep);
    const float* qd = devf(ctx, 0);
    // 1. The present buffers: past rows, the new keys (rotated) and values.
    GqaAppendArgs ap;
    ap.past_k = opt(3) ? devf(ctx, 3) : nullptr;
    ap.past_v = opt(4) ? devf(ctx, 4) : nullptr;
    ap.knew = packed ? qd + N * H : devf(ctx, 1);
    ap.vnew = packed ? qd + (N + Nkv) * H : devf(ctx, 2);
    ap.pk = pk, ap.pv = pv;
    ap.B = B, ap.S = S, ap.Nkv = Nkv, ap.H = H, ap.P = P, ap.L = L, ap.kb = S * kv_row, ap.ks = kv_row;
    ap.seqlens = d_sl, ap.first_prompt = first;
    if (rotary_) {
      ap.rd = rd, ap.interleaved = interleaved_, ap.cos = devf(ctx, 7), ap.sin = devf(ctx, 8), ap.pos = d_pos;
    }
    gqa_append_f32(ap, rs.stream);
    ONYX_CUDA_LAUNCHED();
    // 2. The queries, rotated into [B, S, N, H] scratch.
    AttnCoreArgs c;
    c.q = qd, c.q_sb = S * q_row, c.q_ss = q_row, c.q_sn = H;
    if (rotary_) {
      RotaryArgs r;
      r.x = qd, r.B = B, r.S = S, r.N = N, r.H = H, r.rd = rd;
      r.xb = S * q_row, r.xs = q_row, r.xh = H;
      float* qr = scratch_floats(shared_, B * S * N * H, keep);
      r.y = qr, r.yb = S * N * H, r.ys = N * H, r.yh = H;
      r.interleaved = interleaved_, r.cos = devf(ctx, 7), r.sin = devf(ctx, 8);
      r.pos_kind = d_pos ? RotaryPos::kIds : RotaryPos::kPast;
      r.pos = d_pos, r.seqlens = d_sl, r.first_prompt = first;
      rotary_f32(r, rs.stream);
      ONYX_CUDA_LAUNCHED();
      c.q = qr, c.q_sb = S * N * H, c.q_ss = N * H, c.q_sn = H;
    }
    // 3. The core over grouped heads.
    c.B = B, c.N = N, c.S = S, c.T = L, c.H = H, c.Hv = H, c.group = G;
    c.k = pk, c.k_sb = Nkv * L * H, c.k_sn = L * H;
    c.v = pv, c.v_sb = Nkv * L * H, c.v_sn = L * H;
    c.y = dptr<float>(y), c.y_sb = S * N * H, c.y_ss = N * H, c.y_sn = H;
    c.scale = scale_ != 0 ? scale_ : 1.0f / std::sqrt(static_cast<float>(H));
    c.seqlens = d_sl, c.first_prompt = first, c.window = window_, c.softcap = softcap_, c.smooth = smooth_;
    if (opt(10)) set_attention_bias(c, in(ctx, 10), devf(ctx, 10), total, n);
    if (opt(11)) {
      if (in(ctx, 11).numel() != N || in(ctx, 11).rank() != 1) bad(n, str("head_sink must be [", N, "]"));
      c.sink = devf(ctx, 11);
    }
    run_core(rs, shared_, c, keep);
  }

 private:
  int64_t heads_ = 0, kv_heads_ = 0, window_ = -1;
  float scale_ = 0, softcap_ = 0;
  bool rotary_ = false, interleaved_ = false, smooth_ = false;
};

}  // namespace

std::unique_ptr<Kernel> create_transformer_kernel(const KernelCreateInfo& info, const std::shared_ptr<Shared>& s) {
  const Node& n = info.node;
  const std::string& op = n.op_type;
  if (n.domain.empty() || n.domain == "ai.onnx") {
    if (op == "SimplifiedLayerNormalization") return std::make_unique<SkipNormKernel>(info, s);
    return nullptr;
  }
  if (n.domain != "com.microsoft") return nullptr;
  if (op == "Gelu" || op == "BiasGelu" || op == "FastGelu" || op == "QuickGelu") return std::make_unique<GeluKernel>(info, s);
  if (op == "SkipLayerNormalization" || op == "SkipSimplifiedLayerNormalization") return std::make_unique<SkipNormKernel>(info, s);
  if (op == "RotaryEmbedding") return std::make_unique<RotaryKernel>(info, s);
  if (op == "MatMulNBits") return std::make_unique<MatMulNBitsKernel>(info, s);
  if (op == "MultiHeadAttention") return std::make_unique<MhaKernel>(info, s);
  if (op == "Attention") return std::make_unique<MsAttentionKernel>(info, s);
  if (op == "GroupQueryAttention") return std::make_unique<GqaKernel>(info, s);
  return nullptr;
}

}  // namespace onyx::cuda
