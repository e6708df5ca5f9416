// The CUDA EP's library kernels: MatMul and Gemm on cuBLASLt (Gemm's bias fused as an epilogue),
// Conv, ConvTranspose, pooling and BatchNormalization on cuDNN 9 (its legacy descriptor API);
// a Conv's pads that cuDNN cannot express (asymmetric, SAME_*) are a zero border copied first,
// and pooling that cuDNN cannot express (ceil_mode, dilations, such pads, Indices) is onyx's kernel.
// float16 and bfloat16: cuBLASLt and cuDNN with 16-bit operands (tensor cores), fp32 accumulation
// and fp32 alpha / beta; what cuDNN's legacy API does not take in bfloat16 (pooling, batch
// normalisation) runs on onyx's kernels, computing in fp32 registers.
#include <algorithm>
#include <map>
#include <mutex>

#include "ops/layout.hpp"
#include "ops/nn.hpp"
#include "runtime.hpp"

namespace onyx::cuda {

bool is_dnn_op(const std::string& op) {
  return op == "MatMul" || op == "FusedMatMul" || op == "Gemm" || op == "FusedGemm" || op == "Conv" || op == "FusedConv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool" ||
         op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "LpPool" || op == "GlobalLpPool" || op == "BatchNormalization";
}

namespace {

Tensor& out0(KernelContext& ctx, const Node& n) {
  if (!ctx.output_ready(0)) fail(ErrorCode::kRuntime, "cuda: ", n.label(), ": output 0 was not shaped by inference");
  return ctx.output(0);
}

/// The activation the optimizer fused into a FusedConv / FusedGemm / FusedMatMul node.
struct FusedActivation {
  std::string kind;  // "", "Relu", "Clip", "Gelu"
  float lo = 0, hi = 0;
  static FusedActivation of(const Node& n) {
    FusedActivation a;
    a.kind = n.attr_string("activation");
    const std::vector<float> p = n.attr_floats("activation_params");
    if (a.kind == "Clip" && p.size() == 2) {
      a.lo = p[0];
      a.hi = p[1];
    } else if (!a.kind.empty() && a.kind != "Relu" && a.kind != "Gelu") {
      fail(ErrorCode::kNotImplemented, "cuda: ", n.label(), ": activation '", a.kind, "'");
    }
    return a;
  }
  bool any() const { return !kind.empty(); }
  bool relu() const { return kind == "Relu"; }
  /// For the bias pass after a convolution (Relu or Clip).
  ConvAct conv() const { return relu() ? ConvAct::kRelu : kind == "Clip" ? ConvAct::kClip : ConvAct::kNone; }
  /// For a pass of its own after a product.
  UnaryOp unary() const { return relu() ? UnaryOp::kRelu : kind == "Clip" ? UnaryOp::kClip : UnaryOp::kGelu; }
};

constexpr size_t kLtWorkspace = size_t(32) << 20;

// ---------------------------------------------------------------------------------------------
// cuBLASLt

struct LtMatmul {
  bool trans_a = false, trans_b = false;  // of the row-major operands
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  float alpha = 1.f, beta = 0.f;  // fp32 scale type for every data type
  const void* bias = nullptr;     // [n] of the data type, fused as the epilogue
  bool relu = false;              // max(x, 0) in the epilogue (after the bias)
  cudaDataType_t type = CUDA_R_32F;  // of A, B, C and the bias
};

/// cuBLASLt's type of A, B, C, D (and the bias) for a tensor element type.
cudaDataType_t lt_type(DType t) {
  switch (t) {
    case DType::kFloat: return CUDA_R_32F;
    case DType::kFloat16: return CUDA_R_16F;
    case DType::kBFloat16: return CUDA_R_16BF;
    default: fail(ErrorCode::kNotImplemented, "cuda: no cuBLASLt product for ", dtype_name(t));
  }
}
size_t lt_size(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }

struct LtHandles {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  ~LtHandles() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

void set_batch(cublasLtMatrixLayout_t l, int64_t batch, int64_t stride) {
  if (batch <= 1) return;
  const int32_t b = static_cast<int32_t>(batch);
  ONYX_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof(b)));
  ONYX_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
}

/// Row-major C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C (+ bias[n]), computed as the
/// column-major C^T = op(B)^T * op(A)^T. A, B, C and the bias are of one type (float32, float16
/// or bfloat16); 16-bit products accumulate in fp32 on tensor cores (CUBLAS_COMPUTE_32F).
class LtRunner {
 public:
  explicit LtRunner(bool tf32) : tf32_(tf32) {}
  void run(RunState& rs, const LtMatmul& p, const void* A, const void* B, void* C) const {
    if (p.m == 0 || p.n == 0) return;
    if (p.batch > 0x7fffffff || p.m > 0x7fffffff || p.n > 0x7fffffff || p.k > 0x7fffffff)
      fail(ErrorCode::kNotImplemented, "cuda: matrix product too large for cuBLASLt");
    LtHandles h;
    const cudaDataType_t type = p.type;
    const bool f32 = type == CUDA_R_32F;
    ONYX_CUBLAS_CHECK(cublasLtMatmulDescCreate(&h.op, f32 && tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
    // First operand of the column-major product: B's storage; second: A's.
    const cublasOperation_t op1 = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op2 = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    ONYX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(h.op, CUBLASLT_MATMUL_DESC_TRANSA, &op1, sizeof(op1)));
    ONYX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(h.op, CUBLASLT_MATMUL_DESC_TRANSB, &op2, sizeof(op2)));
    if (p.bias || p.relu) {
      const cublasLtEpilogue_t epi = p.bias ? (p.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS) : CUBLASLT_EPILOGUE_RELU;
      ONYX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(h.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
      if (p.bias) {
        ONYX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(h.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias, sizeof(p.bias)));
        ONYX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(h.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof(type)));
      }
    }
    // B stored row-major as [k,n] (or [n,k] when transposed): column-major (n x k, ld n) or (k x n, ld k).
    ONYX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&h.b, type, p.trans_b ? p.k : p.n, p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n));
    ONYX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&h.a, type, p.trans_a ? p.m : p.k, p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k));
    ONYX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&h.c, type, p.n, p.m, p.n));
    set_batch(h.b, p.batch, p.stride_b);
    set_batch(h.a, p.batch, p.stride_a);
    set_batch(h.c, p.batch, p.stride_c);
    void* ws = rs.workspace(kLtWorkspace);
    // The heuristic assumes 256-byte aligned operands unless told otherwise (batch offsets and
    // sliced operands may be less aligned).
    uint32_t align = 256;
    const size_t elem = lt_size(type);
    auto lower = [&](uint64_t x) {
      while (align > elem && x % align) align >>= 1;
    };
    lower(reinterpret_cast<uintptr_t>(A));
    lower(reinterpret_cast<uintptr_t>(B));
    lower(reinterpret_cast<uintptr_t>(C));
    if (p.batch > 1) {
      lower(static_cast<uint64_t>(p.stride_a) * elem);
      lower(static_cast<uint64_t>(p.stride_b) * elem);
      lower(static_cast<uint64_t>(p.stride_c) * elem);
    }
    cublasLtMatmulAlgo_t algo = heuristic(rs, p, h, align);
    ONYX_CUBLAS_CHECK(cublasLtMatmul(rs.lt, h.op, &p.alpha, B, h.b, A, h.a, &p.beta, C, h.c, C, h.c, &algo, ws, kLtWorkspace, rs.stream));
  }

 private:
  cublasLtMatmulAlgo_t heuristic(RunState& rs, const LtMatmul& p, const LtHandles& h, uint32_t align) const {
    const std::vector<int64_t> key{p.m, p.n, p.k, p.batch, p.trans_a, p.trans_b, p.bias != nullptr, p.relu, p.beta != 0.f,
                                   p.stride_a, p.stride_b, align, static_cast<int64_t>(p.type)};
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) return it->second;
    }
    cublasLtMatmulPreference_t pref = nullptr;
    ONYX_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = kLtWorkspace;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(rs.lt, h.op, h.b, h.a, h.c, h.c, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0)
      fail(ErrorCode::kEpFailure, "cuda: cuBLASLt has no algorithm for a ", p.m, "x", p.k, " by ", p.k, "x", p.n, " product (batch ", p.batch, ")");
    std::lock_guard<std::mutex> lock(mu_);
    cache_[key] = result.algo;
    return result.algo;
  }
  bool tf32_;
  mutable std::mutex mu_;
  mutable std::map<std::vector<int64_t>, cublasLtMatmulAlgo_t> cache_;
};

class MatMulKernel final : public CudaKernel {
 public:
  MatMulKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, s), lt_(s->opt.use_tf32) {
    if (info.node.op_type == "FusedMatMul") {  // onyx::FusedMatMul: bias (and Relu) in the epilogue
      fused_ = true;
      act_ = FusedActivation::of(info.node);
    }
  }
  void compute(KernelContext& ctx) const override {
    Shape a = in(ctx, 0).shape(), b = in(ctx, 1).shape();
    Tensor& y = out0(ctx, node_);
    if (a.size() == 0 || b.size() == 0) fail(ErrorCode::kInvalidArgument, node_.label(), ": MatMul of a scalar");
    if (a.size() == 1) a = Shape{1, a[0]};
    if (b.size() == 1) b = Shape{b[0], 1};
    const int64_t m = a[a.size() - 2], k = a[a.size() - 1], n = b[b.size() - 1];
    if (b[b.size() - 2] != k) fail(ErrorCode::kInvalidArgument, node_.label(), ": inner dimensions differ");
    const int64_t batch_a = a.numel() / std::max<int64_t>(1, m * k), batch_b = b.numel() / std::max<int64_t>(1, k * n);
    const int64_t batch_y = y.numel() / std::max<int64_t>(1, m * n);
    RunState& rs = run(ctx);
    const Ty ty = to_ty(y.dtype());
    const size_t elem = dtype_size(y.dtype());
    const char* A = static_cast<const char*>(dev(ctx, 0));
    const char* B = static_cast<const char*>(dev(ctx, 1));
    char* Y = static_cast<char*>(y.raw_data());
    if (y.numel() == 0) return;
    if (k == 0) {
      if (fused_) fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": FusedMatMul with K = 0");
      ONYX_CUDA_CHECK(cudaMemsetAsync(Y, 0, y.nbytes(), rs.stream));
      return;
    }
    LtMatmul p;
    p.type = lt_type(y.dtype());
    p.k = k;
    p.n = n;
    if (batch_b == 1) {
      // Every batch uses the same B: one product with the batches stacked as rows.
      p.m = m * batch_y;
      if (batch_a != batch_y) fail(ErrorCode::kInvalidArgument, node_.label(), ": batch shapes do not broadcast");
      if (fused_) {
        if (in(ctx, 2).numel() != n) fail(ErrorCode::kInvalidArgument, "cuda: ", node_.label(), ": bias must hold one value per column");
        p.bias = dev(ctx, 2);
        p.relu = act_.relu();
      }
      lt_.run(rs, p, A, B, Y);
      if (act_.any() && !p.relu) {
        unary(ty, act_.unary(), Y, Y, y.numel(), act_.lo, act_.hi, rs.stream);
        ONYX_CUDA_LAUNCHED();
      }
      return;
    }
    if (fused_) fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": FusedMatMul with a batched B");
    p.m = m;
    // Batch dims (numpy broadcast): strided batches when A and B have the output's batch shape.
    Shape ab, bb;
    const Shape batch_shape = matmul_batch_shape(a, b, node_, &ab, &bb);
    if (batch_shape.numel() != batch_y) fail(ErrorCode::kInvalidArgument, node_.label(), ": output has the wrong size");
    if (batch_a == batch_y && batch_b == batch_y) {
      p.batch = batch_y;
      p.stride_a = m * k;
      p.stride_b = k * n;
      p.stride_c = m * n;
      lt_.run(rs, p, A, B, Y);
      return;
    }
    // General broadcast: one product per output batch.
    const Strided va = broadcast_view(ab, batch_shape), vb = broadcast_view(bb, batch_shape);
    for (int64_t i = 0; i < batch_y; ++i) {
      const int64_t oa = offset_of(va, i), ob = offset_of(vb, i);  // the operands' batch indices
      lt_.run(rs, p, A + oa * m * k * elem, B + ob * k * n * elem, Y + i * m * n * elem);
    }
  }

 private:
  LtRunner lt_;
  bool fused_ = false;
  FusedActivation act_;
};

class GemmKernel final : public CudaKernel {
 public:
  GemmKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s)
      : CudaKernel(info, s),
        lt_(s->opt.use_tf32),
        alpha_(info.node.attr_float("alpha", 1.f)),
        beta_(info.node.attr_float("beta", 1.f)),
        ta_(info.node.attr_int("transA", 0) != 0),
        tb_(info.node.attr_int("transB", 0) != 0) {
    if (info.node.op_type == "FusedGemm") act_ = FusedActivation::of(info.node);  // Relu in cuBLASLt's epilogue, Clip after
  }
  void compute(KernelContext& ctx) const override {
    const Shape& a = in(ctx, 0).shape();
    const Shape& b = in(ctx, 1).shape();
    Tensor& y = out0(ctx, node_);
    if (y.numel() == 0) return;
    LtMatmul p;
    p.type = lt_type(y.dtype());
    p.trans_a = ta_;
    p.trans_b = tb_;
    p.m = ta_ ? a[1] : a[0];
    p.k = ta_ ? a[0] : a[1];
    p.n = tb_ ? b[0] : b[1];
    p.alpha = alpha_;
    RunState& rs = run(ctx);
    void* Y = y.raw_data();
    const bool has_c = has(ctx, 2) && beta_ != 0.f;
    if (has_c) {
      const Tensor& c = in(ctx, 2);
      const bool row_bias = c.numel() == p.n && (c.rank() == 1 || (c.rank() == 2 && c.shape()[0] == 1)) && beta_ == 1.f;
      if (row_bias && p.k > 0) {
        p.bias = dev(ctx, 2);
      } else {
        strided_copy(dev(ctx, 2), broadcast_view(c.shape(), y.shape()), Y, contiguous(y.shape()), dtype_size(y.dtype()), y.numel(),
                     rs.stream);
        ONYX_CUDA_LAUNCHED();
        p.beta = beta_;
      }
    }
    if (p.k == 0) {  // Y = beta * C
      if (!has_c) ONYX_CUDA_CHECK(cudaMemsetAsync(Y, 0, y.nbytes(), rs.stream));
      else if (beta_ != 1.f) fail(ErrorCode::kNotImplemented, "cuda: Gemm with K = 0 and beta != 1");
    } else {
      // Relu goes into the epilogue when the product is plain or has the fused bias; after a
      // general C (copied into Y, beta) it runs as its own pass, like Clip.
      p.relu = act_.relu() && p.beta == 0.f;
      lt_.run(rs, p, dev(ctx, 0), dev(ctx, 1), Y);
      if (p.relu) return;
    }
    if (act_.any()) {
      unary(to_ty(y.dtype()), act_.unary(), Y, Y, y.numel(), act_.lo, act_.hi, rs.stream);
      ONYX_CUDA_LAUNCHED();
    }
  }

 private:
  LtRunner lt_;
  float alpha_, beta_;
  bool ta_, tb_;
  FusedActivation act_;
};

// ---------------------------------------------------------------------------------------------
// cuDNN

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc() { ONYX_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  /// Packed descriptor of `dims` (given in [N, C, spatial...] order, padded with trailing 1s to
  /// at least 4 dims), stored channels-first, or with channels_last as [N, spatial..., C].
  void set(std::vector<int> dims, bool channels_last = false, cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    while (dims.size() < 4) dims.push_back(1);
    std::vector<int> strides(dims.size());
    const int r = static_cast<int>(dims.size());
    if (channels_last) {
      strides[1] = 1;
      int s = dims[1];
      for (int k = r - 1; k >= 2; --k) {
        strides[k] = s;
        s *= dims[k];
      }
      strides[0] = s;
    } else {
      int s = 1;
      for (int k = r - 1; k >= 0; --k) {
        strides[k] = s;
        s *= dims[k];
      }
    }
    ONYX_CUDNN_CHECK(cudnnSetTensorNdDescriptor(d, type, r, dims.data(), strides.data()));
  }
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc() { ONYX_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d)); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
  /// dims in ONNX order [K, C, spatial...]; channels_last: the weights are stored [K, spatial..., C].
  void set(std::vector<int> dims, bool channels_last = false, cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    while (dims.size() < 4) dims.push_back(1);
    ONYX_CUDNN_CHECK(cudnnSetFilterNdDescriptor(d, type, channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                                static_cast<int>(dims.size()), dims.data()));
  }
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc() { ONYX_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d)); }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
};
struct PoolDesc {
  cudnnPoolingDescriptor_t d = nullptr;
  PoolDesc() { ONYX_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&d)); }
  ~PoolDesc() { cudnnDestroyPoolingDescriptor(d); }
};

std::vector<int> dims_of(const Shape& s) {
  std::vector<int> d;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] > 0x7fffffff) fail(ErrorCode::kNotImplemented, "cuda: dimension too large for cuDNN");
    d.push_back(static_cast<int>(s[k]));
  }
  return d;
}

/// Spatial attributes of Conv/ConvTranspose/pooling, padded to at least 2 spatial dims (cuDNN's
/// Nd API wants 4-d tensors; a 1-d op gets a trailing unit dim).
struct Spatial {
  std::vector<int> kernel, pads, strides, dilations;
  static Spatial of(const Node& n, size_t sp, const std::vector<int64_t>& kernel_shape) {
    Spatial s;
    const std::vector<int64_t> pads = n.attr_string("auto_pad", "NOTSET") == "VALID" ? std::vector<int64_t>{} : n.attr_ints("pads");
    const std::vector<int64_t> st = n.attr_ints("strides"), dil = n.attr_ints("dilations");
    for (size_t k = 0; k < sp; ++k) {
      s.kernel.push_back(k < kernel_shape.size() ? static_cast<int>(kernel_shape[k]) : 1);
      s.pads.push_back(k < pads.size() ? static_cast<int>(pads[k]) : 0);
      s.strides.push_back(k < st.size() ? static_cast<int>(st[k]) : 1);
      s.dilations.push_back(k < dil.size() ? static_cast<int>(dil[k]) : 1);
    }
    while (s.kernel.size() < 2) {
      s.kernel.push_back(1);
      s.pads.push_back(0);
      s.strides.push_back(1);
      s.dilations.push_back(1);
    }
    return s;
  }
};

/// A channels-last node's data shape [N, spatial..., C] in [N, C, spatial...] order (the order
/// cuDNN's descriptors and the window geometry take); other nodes' shapes as they are.
Shape first_order(const Shape& s, bool channels_last) {
  if (!channels_last) return s;
  Shape r;
  for (int64_t p : to_channels_first_perm(s.size())) r.push_back(s[static_cast<size_t>(p)]);
  return r;
}
bool is_channels_last(const Node& n) { return n.domain == kChannelsLastDomain; }

cudnnMathType_t math_type(bool tf32) { return tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH; }

/// cuDNN's data type for a tensor element type (its legacy API: float, half, bfloat16).
cudnnDataType_t dnn_type(DType t) {
  switch (t) {
    case DType::kFloat: return CUDNN_DATA_FLOAT;
    case DType::kFloat16: return CUDNN_DATA_HALF;
    case DType::kBFloat16: return CUDNN_DATA_BFLOAT16;
    default: fail(ErrorCode::kNotImplemented, "cuda: no cuDNN data type for ", dtype_name(t));
  }
}

/// A float copy of BatchNormalization's parameters (cuDNN takes float scale, bias, mean and
/// variance for 16-bit data, as onyx's kernel does): float inputs are used as they are.
Tensor widen_host(const Tensor& t) {
  Tensor f(DType::kFloat, t.shape());
  float* d = f.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = static_cast<float>(t.element_as_double(i));
  return f;
}

constexpr size_t kConvSearchWorkspace = size_t(256) << 20;

/// Conv (forward) and ConvTranspose (cuDNN's backward data), algorithms chosen once per input shape.
class ConvKernel final : public CudaKernel {
 public:
  ConvKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s)
      : CudaKernel(info, s),
        transpose_(info.node.op_type == "ConvTranspose"),
        last_(is_channels_last(info.node)),
        attrs_(WindowAttrs::of(info.node, false)) {
    group_ = static_cast<int>(info.node.attr_int("group", 1));
    if (last_) {  // cuDNN's channels-last filter layout: [K, spatial..., C], permuted once here
      const Tensor* w = host_constant(1);
      if (!w) fail(ErrorCode::kNotImplemented, "cuda: ", info.node.label(), ": channels-last convolution needs constant weights");
      w_last_ = shared_->upload(permute_tensor(*w, to_channels_last_perm(w->rank())));
    }
    kernel_shape_ = info.node.attr_ints("kernel_shape");
    if (info.node.op_type == "FusedConv") {  // the activation joins the bias pass
      act_ = FusedActivation::of(info.node);
      if (act_.conv() == ConvAct::kNone) fail(ErrorCode::kNotImplemented, "cuda: ", info.node.label(), ": activation '", act_.kind, "'");
    }
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    const Tensor& w = in(ctx, 1);
    Tensor& y = out0(ctx, node_);
    if (y.numel() == 0) return;
    const size_t sp = x.rank() - 2;
    const size_t sp0 = last_ ? 1 : 2;  // where the spatial dims start in memory
    std::vector<int64_t> ks = kernel_shape_;
    if (ks.empty())
      for (size_t k = 0; k < sp; ++k) ks.push_back(w.shape()[k + 2]);
    Spatial s = Spatial::of(node_, sp, ks);
    RunState& rs = run(ctx);
    const void* X = dev(ctx, 0);
    Shape xs = first_order(x.shape(), last_);  // [N, C, spatial...]
    Tensor padded;  // the input with the pads cuDNN cannot express (one side's excess) made explicit
    if (!transpose_) {
      // Pads from auto_pad or the pads attribute, as the CPU EP and shape inference resolve them.
      // cuDNN pads both sides of a dim equally: the common part is its padding, the rest of the
      // larger side is a zero border copied around the input first.
      const WindowGeometry g = window_geometry(attrs_, node_, Shape(std::span<const int64_t>(xs.data() + 2, sp)), Shape(ks));
      PadGeometry pg;
      bool asymmetric = false;
      pg.rank = static_cast<int>(xs.size());
      for (size_t k = 0; k < xs.size(); ++k) pg.in[k] = pg.out[k] = x.shape()[k];  // (as stored)
      for (size_t k = 0; k < sp; ++k) {
        const int64_t common = std::min(g.pad_begin[k], g.pad_end[k]);
        s.pads[k] = static_cast<int>(common);
        pg.begin[k + sp0] = g.pad_begin[k] - common;
        pg.out[k + sp0] = xs[k + 2] + g.pad_begin[k] + g.pad_end[k] - 2 * common;
        asymmetric |= g.pad_begin[k] != g.pad_end[k];
      }
      if (asymmetric) {
        Shape stored;
        for (size_t k = 0; k < xs.size(); ++k) stored.push_back(pg.out[k]);
        xs = first_order(stored, last_);
        padded = shared_->allocate(x.dtype(), stored);
        const uint32_t zero_value = 0;  // +0 in every float type's bits
        pad(X, padded.raw_data(), pg, PadMode::kConstant, &zero_value, dtype_size(x.dtype()), padded.numel(), rs.stream);
        ONYX_CUDA_LAUNCHED();
        X = padded.raw_data();
      }
    }
    TensorDesc xd, yd;
    FilterDesc wd;
    ConvDesc cd;
    const Shape ys = first_order(y.shape(), last_);
    // float16 / bfloat16 data and filters with FLOAT compute (fp32 accumulation) on tensor cores.
    const cudnnDataType_t dt = dnn_type(x.dtype());
    const bool half = dt != CUDNN_DATA_FLOAT;
    xd.set(dims_of(xs), last_, dt);
    yd.set(dims_of(ys), last_, dt);
    wd.set(dims_of(w.shape()), last_, dt);
    ONYX_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(cd.d, static_cast<int>(s.pads.size()), s.pads.data(), s.strides.data(),
                                                     s.dilations.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    ONYX_CUDNN_CHECK(cudnnSetConvolutionGroupCount(cd.d, group_));
    ONYX_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.d, half ? CUDNN_TENSOR_OP_MATH : math_type(shared_->opt.use_tf32)));
    const float one = 1.f, zero = 0.f;
    const void* W = last_ ? w_last_.raw_data() : dev(ctx, 1);
    void* Y = y.raw_data();
    const Choice c = choose(rs, xs, xd, wd, cd, yd, X, W, Y, half);
    ONYX_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.d, c.math));
    void* ws = c.workspace ? rs.workspace(c.workspace) : nullptr;
    if (!transpose_)
      ONYX_CUDNN_CHECK(cudnnConvolutionForward(rs.cudnn, &one, xd.d, X, wd.d, W, cd.d, static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), ws,
                                               c.workspace, &zero, yd.d, Y));
    else
      ONYX_CUDNN_CHECK(cudnnConvolutionBackwardData(rs.cudnn, &one, wd.d, W, xd.d, X, cd.d,
                                                    static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo), ws, c.workspace, &zero, yd.d, Y));
    const int64_t c_out = ys[1];
    const void* bias = nullptr;
    if (has(ctx, 2)) {
      const Tensor& b = in(ctx, 2);
      if (b.numel() != c_out) fail(ErrorCode::kInvalidArgument, node_.label(), ": bias has ", b.numel(), " values for ", c_out, " channels");
      bias = dev(ctx, 2);
    }
    if (bias || act_.any()) {
      // Channels-last: every pixel is a row of c_out channels. 16-bit output: fp32 registers.
      const int64_t rows = last_ ? y.numel() / std::max<int64_t>(1, c_out) : ys[0];
      channel_bias_act(to_ty(y.dtype()), y.raw_data(), bias, rows, c_out, last_ ? 1 : y.numel() / std::max<int64_t>(1, ys[0] * c_out),
                       act_.conv(), act_.lo, act_.hi, rs.stream);
      ONYX_CUDA_LAUNCHED();
    }
  }

 private:
  struct Choice {
    int algo = 0;
    size_t workspace = 0;
    cudnnMathType_t math = CUDNN_FMA_MATH;
  };
  Choice choose(RunState& rs, const Shape& xs, const TensorDesc& xd, const FilterDesc& wd, const ConvDesc& cd, const TensorDesc& yd,
                const void* X, const void* W, void* Y, bool half) const {
    std::vector<int64_t> key(xs.begin(), xs.end());
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) return it->second;
    }
    Choice c;
    // 16-bit data: tensor-core math is what it is for; float32 takes it only with TF32 allowed.
    c.math = half ? CUDNN_TENSOR_OP_MATH : math_type(shared_->opt.use_tf32);
    const bool tensor_ops = half || shared_->opt.use_tf32;
    ConvAlgoSearch mode = shared_->opt.conv_algo_search;
    if (mode == ConvAlgoSearch::kDefault) {
      // The fixed algorithm may not take every layout (channels-last tensors and filters): then
      // cuDNN's heuristics choose instead.
      size_t probe = 0;
      const cudnnStatus_t st =
          transpose_ ? cudnnGetConvolutionBackwardDataWorkspaceSize(rs.cudnn, wd.d, xd.d, cd.d, yd.d, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, &probe)
                     : cudnnGetConvolutionForwardWorkspaceSize(rs.cudnn, xd.d, wd.d, cd.d, yd.d, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                                               &probe);
      if (st != CUDNN_STATUS_SUCCESS) mode = ConvAlgoSearch::kHeuristic;
    }
    if (!transpose_) {
      if (mode == ConvAlgoSearch::kDefault) {
        c.algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
      } else {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int found = 0;
        if (mode == ConvAlgoSearch::kExhaustive) {
          void* ws = rs.workspace(kConvSearchWorkspace);
          ONYX_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(rs.cudnn, xd.d, X, wd.d, W, cd.d, yd.d, Y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                                  &found, perf, ws, kConvSearchWorkspace));
        } else {
          ONYX_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(rs.cudnn, xd.d, wd.d, cd.d, yd.d, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf));
        }
        c.algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
        for (int i = 0; i < found; ++i)
          if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kConvSearchWorkspace &&
              (tensor_ops || perf[i].mathType != CUDNN_TENSOR_OP_MATH)) {
            c.algo = perf[i].algo;
            c.math = perf[i].mathType;
            break;
          }
      }
      ONYX_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.d, c.math));  // the workspace size depends on it
      ONYX_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(rs.cudnn, xd.d, wd.d, cd.d, yd.d,
                                                               static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), &c.workspace));
    } else {
      if (mode == ConvAlgoSearch::kDefault) {
        c.algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
      } else {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        int found = 0;
        if (mode == ConvAlgoSearch::kExhaustive) {
          void* ws = rs.workspace(kConvSearchWorkspace);
          ONYX_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(rs.cudnn, wd.d, W, xd.d, X, cd.d, yd.d, Y,
                                                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, perf, ws,
                                                                       kConvSearchWorkspace));
        } else {
          ONYX_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(rs.cudnn, wd.d, xd.d, cd.d, yd.d, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                                       &found, perf));
        }
        c.algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
        for (int i = 0; i < found; ++i)
          if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kConvSearchWorkspace &&
              (tensor_ops || perf[i].mathType != CUDNN_TENSOR_OP_MATH)) {
            c.algo = perf[i].algo;
            c.math = perf[i].mathType;
            break;
          }
      }
      ONYX_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.d, c.math));
      ONYX_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(rs.cudnn, wd.d, xd.d, cd.d, yd.d,
                                                                    static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo), &c.workspace));
    }
    std::lock_guard<std::mutex> lock(mu_);
    cache_[key] = c;
    return c;
  }

  bool transpose_;
  bool last_;      // channels-last form (onyx.nhwc): data [N, spatial..., C], weights w_last_
  Tensor w_last_;  // the weights as cuDNN's channels-last filter layout wants them
  WindowAttrs attrs_;  // pads / auto_pad / strides / dilations, read once
  FusedActivation act_;
  int group_ = 1;
  std::vector<int64_t> kernel_shape_;
  mutable std::mutex mu_;
  mutable std::map<std::vector<int64_t>, Choice> cache_;
};

class PoolKernel final : public CudaKernel {
 public:
  PoolKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, std::move(s)), last_(is_channels_last(info.node)) {
    const std::string& op = info.node.op_type;
    global_ = op.rfind("Global", 0) == 0;
    max_ = op == "MaxPool" || op == "GlobalMaxPool";
    if (op == "LpPool" || op == "GlobalLpPool")
      p_ = info.node.opset < 2 ? info.node.attr_float("p", 2.0f) : static_cast<float>(info.node.attr_int("p", 2));
    include_pad_ = info.node.attr_int("count_include_pad", 0) != 0;
    if (!global_) attrs_ = WindowAttrs::of(info.node, true);
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out0(ctx, node_);
    if (y.numel() == 0) return;
    const size_t sp = x.rank() - 2;
    const Shape xs = first_order(x.shape(), last_), ys = first_order(y.shape(), last_);  // [N, C, spatial...]
    std::vector<int64_t> ks;
    if (global_)
      for (size_t k = 0; k < sp; ++k) ks.push_back(xs[k + 2]);
    else
      ks = node_.attr_ints("kernel_shape");
    if (ks.size() != sp) fail(ErrorCode::kInvalidArgument, node_.label(), ": kernel_shape has ", ks.size(), " values for ", sp, " spatial dims");
    RunState& rs = run(ctx);
    const Ty ty = to_ty(x.dtype());
    // cuDNN's legacy pooling is used for float32 and float16; bfloat16 pooling runs on onyx's
    // direct kernel (channels-first only: the claim declines channels-last bfloat16 pooling).
    const bool own = x.dtype() == DType::kBFloat16;
    if (own && last_) fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": channels-last bfloat16 pooling (the claim declines it)");
    if ((p_ > 0 || own) && global_) {
      // GlobalLpPool (and bfloat16 global pooling): one window over the whole plane, onyx's direct kernel.
      WindowGeometry g;
      g.kernel = Shape(ks);
      g.stride = g.dilation = Shape::filled(sp, 1);
      g.pad_begin = g.pad_end = Shape::filled(sp, 0);
      g.out = Shape::filled(sp, 1);
      const PoolArgs a = pool_args(x.shape(), g, max_ && p_ <= 0, false, false, p_);
      pool(ty, dev(ctx, 0), y.raw_data(), nullptr, a, rs.stream);
      ONYX_CUDA_LAUNCHED();
      return;
    }
    Spatial s = global_ ? Spatial::of(Node{}, sp, ks) : Spatial::of(node_, sp, ks);
    if (!global_) {
      // What cuDNN's pooling cannot express (ceil_mode, dilations, asymmetric pads, the Indices
      // output) goes to onyx's direct kernel; cuDNN gets the pads resolved (auto_pad included).
      const WindowGeometry g = window_geometry(attrs_, node_, Shape(std::span<const int64_t>(xs.data() + 2, sp)), Shape(ks));
      for (size_t k = 0; k < sp; ++k) s.pads[k] = static_cast<int>(g.pad_begin[k]);
      const bool indices = node_.has_output(1) && ctx.output_ready(1);
      bool direct = indices || attrs_.ceil_mode || sp > 3 || p_ > 0 || own;
      for (size_t k = 0; k < sp; ++k) direct |= g.dilation[k] != 1 || g.pad_begin[k] != g.pad_end[k];
      if (direct && last_)
        fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": channels-last pooling that cuDNN cannot express (the claim declines it)");
      if (direct) {
        if (sp > 3) fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": pooling over ", sp, " spatial dims");
        for (size_t k = 0; k < sp; ++k)
          if (g.out[k] != y.shape()[k + 2])
            fail(ErrorCode::kRuntime, "cuda: ", node_.label(), ": output ", y.shape().to_string(), " differs from the window geometry");
        const PoolArgs a = pool_args(x.shape(), g, max_, include_pad_, node_.attr_int("storage_order", 0) != 0, p_);
        int64_t* idx = nullptr;
        if (indices) {
          Tensor& it = ctx.output(1);
          if (it.on_host() && it.nbytes()) fail(ErrorCode::kRuntime, "cuda: internal error: ", node_.label(), " Indices are in host memory");
          idx = dptr<int64_t>(it);
        }
        pool(ty, dev(ctx, 0), y.raw_data(), idx, a, rs.stream);
        ONYX_CUDA_LAUNCHED();
        return;
      }
    }
    const cudnnPoolingMode_t mode = max_ ? CUDNN_POOLING_MAX
                                         : include_pad_ ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                        : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    PoolDesc pd;
    ONYX_CUDNN_CHECK(cudnnSetPoolingNdDescriptor(pd.d, mode, CUDNN_PROPAGATE_NAN, static_cast<int>(s.kernel.size()), s.kernel.data(),
                                                 s.pads.data(), s.strides.data()));
    TensorDesc xd, yd;
    xd.set(dims_of(xs), last_, dnn_type(x.dtype()));
    yd.set(dims_of(ys), last_, dnn_type(x.dtype()));
    const float one = 1.f, zero = 0.f;
    ONYX_CUDNN_CHECK(cudnnPoolingForward(rs.cudnn, pd.d, &one, xd.d, dev(ctx, 0), &zero, yd.d, y.raw_data()));
  }

 private:
  bool global_ = false, max_ = false, include_pad_ = false;
  bool last_;    // channels-last form (onyx.nhwc)
  float p_ = 0;  // LpPool's p (0 for the others)
  WindowAttrs attrs_;
};

/// BatchNormalization (inference): cuDNN for float32 and float16 data (its scale, bias, mean and
/// variance are float for both), onyx's per-channel kernel for bfloat16 data. 16-bit parameters
/// are widened to float: constant ones once, here, the others by the cast kernel per run.
class BatchNormKernel final : public CudaKernel {
 public:
  BatchNormKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s)
      : CudaKernel(info, std::move(s)), last_(is_channels_last(info.node)), eps_(info.node.attr_float("epsilon", 1e-5f)) {
    for (size_t i = 1; i < 5; ++i) {
      const Tensor* t = host_constant(i);
      if (t && t->dtype() != DType::kFloat) wide_[i - 1] = shared_->upload(widen_host(*t));
    }
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out0(ctx, node_);
    if (y.numel() == 0) return;
    const Shape xs = first_order(x.shape(), last_);  // [N, C, spatial...]
    const int64_t c = xs[1];
    for (size_t i = 1; i < 5; ++i)
      if (in(ctx, i).numel() != c)
        fail(ErrorCode::kInvalidArgument, node_.label(), ": input ", i, " has ", in(ctx, i).numel(), " values for ", c, " channels");
    RunState& rs = run(ctx);
    Tensor widened[4];
    const void* p[4];
    for (size_t i = 1; i < 5; ++i) {
      const Tensor& t = in(ctx, i);
      if (t.dtype() == DType::kFloat) {
        p[i - 1] = dev(ctx, i);
      } else if (wide_[i - 1].defined()) {
        p[i - 1] = wide_[i - 1].raw_data();
      } else {
        widened[i - 1] = shared_->allocate(DType::kFloat, t.shape());
        cast(to_ty(t.dtype()), dev(ctx, i), Ty::kF32, widened[i - 1].raw_data(), t.numel(), rs.stream);
        ONYX_CUDA_LAUNCHED();
        p[i - 1] = widened[i - 1].raw_data();
      }
    }
    if (x.dtype() == DType::kBFloat16) {
      // Channels-last: every pixel is a row of c channels.
      const int64_t rows = last_ ? y.numel() / std::max<int64_t>(1, c) : xs[0];
      const int64_t spatial = last_ ? 1 : y.numel() / std::max<int64_t>(1, xs[0] * c);
      batch_norm(Ty::kBF16, dev(ctx, 0), y.raw_data(), static_cast<const float*>(p[0]), static_cast<const float*>(p[1]),
                 static_cast<const float*>(p[2]), static_cast<const float*>(p[3]), eps_, rows, c, spatial, rs.stream);
      ONYX_CUDA_LAUNCHED();
      return;
    }
    TensorDesc xd, bnd;
    xd.set(dims_of(xs), last_, dnn_type(x.dtype()));
    ONYX_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(bnd.d, xd.d, CUDNN_BATCHNORM_SPATIAL));  // float for half data
    const float one = 1.f, zero = 0.f;
    ONYX_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(rs.cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd.d, dev(ctx, 0), xd.d,
                                                             y.raw_data(), bnd.d, p[0], p[1], p[2], p[3], static_cast<double>(eps_)));
  }

 private:
  bool last_;  // channels-last form (onyx.nhwc)
  float eps_;
  Tensor wide_[4];  // float copies of constant 16-bit scale, bias, mean, var (device)
};

}  // namespace

std::unique_ptr<Kernel> create_dnn_kernel(const KernelCreateInfo& info, const std::shared_ptr<Shared>& s) {
  const std::string& op = info.node.op_type;
  if (op == "MatMul" || op == "FusedMatMul") return std::make_unique<MatMulKernel>(info, s);
  if (op == "Gemm" || op == "FusedGemm") return std::make_unique<GemmKernel>(info, s);
  if (op == "Conv" || op == "FusedConv" || op == "ConvTranspose") return std::make_unique<ConvKernel>(info, s);
  if (op == "BatchNormalization") return std::make_unique<BatchNormKernel>(info, s);
  return std::make_unique<PoolKernel>(info, s);
}

}  // namespace onyx::cuda
