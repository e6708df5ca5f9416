// MatMul and Gemm on the tiled shared-memory matrix-product shader.
#include <algorithm>

#include "vulkan_ep.hpp"

namespace onyx::vulkan {
namespace {

struct MatmulArgs {
  int64_t M = 0, N = 0, K = 0, batch = 1;
  int64_t a_b = 0, a_m = 0, a_k = 0, b_b = 0, b_k = 0, b_n = 0, c_b = 0;
  bool has_bias = false;
  int64_t bias_b = 0, bias_m = 0, bias_n = 0;
  float alpha = 1, beta = 1;
  bool half = false;  // float16 storage
};

void record_matmul(Stream& s, Device& dev, const MatmulArgs& a, const BufRef& A, const BufRef& B, const BufRef& bias,
                   const BufRef& C) {
  Push p;
  p.i(a.M).i(a.N).i(a.K).i(a.batch);
  p.i(a.a_b).i(a.a_m).i(a.a_k).i(a.b_b);
  p.i(a.b_k).i(a.b_n).i(a.c_b).i(a.has_bias ? 1 : 0);
  p.i(a.bias_b).i(a.bias_m).i(a.bias_n).i(0);
  p.f(a.alpha).f(a.beta).f(0).f(0);
  Epilogue e;
  e.half = a.half;
  e.has_bias = a.has_bias;
  e.bias_b = a.bias_b;
  e.bias_m = a.bias_m;
  e.bias_n = a.bias_n;
  e.alpha = a.alpha;
  e.beta = a.beta;
  record_matrix_kernel(s, dev, p, A, B, bias, C, static_cast<uint32_t>((a.N + 63) / 64),
                       static_cast<uint32_t>((a.M + 63) / 64), a.batch, a.M, a.N, a.K, e);
}

}  // namespace

void record_matrix_kernel(Stream& s, Device& dev, Push base, const BufRef& A, const BufRef& B, const BufRef& bias,
                          const BufRef& C, uint32_t gx, uint32_t gy, int64_t items, int64_t M, int64_t N, int64_t K,
                          const Epilogue& e) {
  const char* shader = dev.matmul_shader(e.conv);
  // Split K when the output tiles are too few to fill the device (small M x N, deep K: the last
  // ResNet stages, BERT's projections at batch 1).
  const int64_t tiles = int64_t(gx) * gy * items;
  const int64_t target = dev.info().type == "CPU" ? 8 : 256;
  int64_t splits = 1, kchunk = K;
  if (tiles < target && K >= 512) {
    splits = std::min<int64_t>({(target + tiles - 1) / tiles, K / 256, 64});
    if (splits > 1) {
      kchunk = ((K + splits - 1) / splits + 15) / 16 * 16;
      splits = (K + kchunk - 1) / kchunk;
    }
    if (splits * items > dev.max_groups(2) || splits * items * M * N > (int64_t(1) << 31) - 1) {
      splits = 1;
      kchunk = K;
    }
  }
  Push p = base;
  p.i(splits).i(kchunk);
  const Pipeline& pipe = dev.pipeline(shader, 5, e.half);
  if (splits <= 1) {
    s.dispatch(pipe, {A, B, bias, C, C}, p.w, p.bytes(), gx, gy, static_cast<uint32_t>(items));
    return;
  }
  std::shared_ptr<Buffer> part = dev.buffer(static_cast<uint64_t>(splits * items * M * N) * 4, false);
  Buffer* raw = part.get();
  const BufRef P{raw, std::move(part), 0};
  s.dispatch(pipe, {A, B, bias, C, P}, p.w, p.bytes(), gx, gy, static_cast<uint32_t>(items * splits));
  Push r;
  r.i(items * M * N).i(M).i(N).i(splits);
  r.i(e.conv ? 1 : 0).i(e.groups).i(e.has_bias ? 1 : 0).i(e.act);
  r.i(e.bias_b).i(e.bias_m).i(e.bias_n).i(0);
  r.f(e.alpha).f(e.beta).f(e.lo).f(e.hi);
  s.dispatch_1d(dev.pipeline("splitk_reduce", 3, e.half), {P, bias, C}, r.w, r.bytes(), items * M * N);
}

namespace {

/// Batch dims of one operand: its own count, for an output batch of `out_batch`.
bool batch_stride(const Shape& s, size_t keep, int64_t out_batch, int64_t matrix, int64_t* stride) {
  int64_t n = 1;
  for (size_t d = 0; d + keep < s.size(); ++d) n *= s[d];
  if (n == out_batch)
    *stride = matrix;
  else if (n == 1)
    *stride = 0;
  else
    return false;
  return true;
}

class MatMulKernel final : public VkKernel {
 public:
  MatMulKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d) : VkKernel(info, std::move(d), 0) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Shape& as = ctx.input(0).shape();
    const Shape& bs = ctx.input(1).shape();
    Tensor& y = ctx.output(0);
    check_size(label(), y.numel());
    MatmulArgs a;
    a.half = half_;
    const bool a1 = as.size() == 1, b1 = bs.size() == 1;
    a.M = a1 ? 1 : as[as.size() - 2];
    a.K = as[as.size() - 1];
    a.N = b1 ? 1 : bs[bs.size() - 1];
    const int64_t kb = b1 ? bs[0] : bs[bs.size() - 2];
    if (kb != a.K) fail(ErrorCode::kInvalidArgument, label(), ": MatMul inner dims differ (", a.K, " and ", kb, ")");
    a.batch = a.M * a.N != 0 ? y.numel() / (a.M * a.N) : 0;
    a.a_m = a.K;
    a.a_k = 1;
    a.b_k = b1 ? 1 : a.N;
    a.b_n = 1;
    a.c_b = a.M * a.N;
    if (!batch_stride(as, a1 ? 1 : 2, a.batch, a.M * a.K, &a.a_b) ||
        !batch_stride(bs, b1 ? 1 : 2, a.batch, a.K * a.N, &a.b_b))
      fail(ErrorCode::kNotImplemented, "vulkan: ", label(), ": MatMul batch broadcast of ", as.to_string(), " and ",
           bs.to_string(), " is not supported");
    if (!y.numel()) return;
    if (a.b_b == 0 && a.a_b == a.M * a.K && a.batch > 1) {
      // B is shared by every batch: one product with the batches stacked as rows of A.
      a.M *= a.batch;
      a.batch = 1;
      a.a_b = 0;
    }
    const BufRef A = in(ctx, 0);
    record_matmul(s, *dev_, a, A, in(ctx, 1), A, device_ref(y, "output"));
  }
};

bool check_matmul(const ClaimInfo& c, Decline* why) {
  const int ra = in_rank(c, 0), rb = in_rank(c, 1);
  if (ra < 1 || rb < 1) return decline(why, DeclineCode::kDynamicShape, "MatMul operand ranks must be known");
  const Shape& as = in_type(c, 0)->shape;
  const Shape& bs = in_type(c, 1)->shape;
  // Batch dims: equal, or all 1 (or absent) on one side.
  auto batch = [](const Shape& s, int keep) {
    std::vector<int64_t> b;
    for (int d = 0; d + keep < static_cast<int>(s.size()); ++d) b.push_back(s[d]);
    return b;
  };
  const auto ba = batch(as, ra == 1 ? 1 : 2), bb = batch(bs, rb == 1 ? 1 : 2);
  auto ones = [](const std::vector<int64_t>& b) {
    for (int64_t d : b)
      if (d != 1) return false;
    return true;
  };
  if (!(ones(ba) || ones(bb))) {
    std::vector<int64_t> x = ba, y = bb;
    while (x.size() < y.size()) x.insert(x.begin(), 1);
    while (y.size() < x.size()) y.insert(y.begin(), 1);
    // Equal after dropping leading 1s on both sides.
    if (x != y)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("MatMul batch dims ", as.to_string(), " x ", bs.to_string(),
                         " broadcast partly (vulkan runs equal batch dims or one side without batch)"));
  }
  return true;
}

std::unique_ptr<Kernel> make_matmul(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<MatMulKernel>(info, d);
}

class GemmKernel final : public VkKernel {
 public:
  GemmKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : VkKernel(info, std::move(d), 0),
        alpha_(info.node.attr_float("alpha", 1.0f)),
        beta_(info.node.attr_float("beta", 1.0f)),
        ta_(info.node.attr_int("transA", 0) != 0),
        tb_(info.node.attr_int("transB", 0) != 0) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Shape& as = ctx.input(0).shape();
    const Shape& bs = ctx.input(1).shape();
    Tensor& y = ctx.output(0);
    check_size(label(), y.numel());
    MatmulArgs a;
    a.half = half_;
    a.M = ta_ ? as[1] : as[0];
    a.K = ta_ ? as[0] : as[1];
    a.N = tb_ ? bs[0] : bs[1];
    a.a_m = ta_ ? 1 : as[1];
    a.a_k = ta_ ? as[1] : 1;
    a.b_k = tb_ ? 1 : bs[1];
    a.b_n = tb_ ? bs[1] : 1;
    a.c_b = a.M * a.N;
    a.alpha = alpha_;
    a.beta = beta_;
    const BufRef A = in(ctx, 0);
    BufRef bias = A;
    if (ctx.has_input(2) && beta_ != 0.0f) {
      const Shape& cs = ctx.input(2).shape();
      a.has_bias = true;
      const int64_t cm = cs.size() == 2 ? cs[0] : 1, cn = cs.empty() ? 1 : cs[cs.size() - 1];
      if ((cm != 1 && cm != a.M) || (cn != 1 && cn != a.N))
        fail(ErrorCode::kInvalidArgument, label(), ": Gemm C of shape ", cs.to_string(), " does not broadcast to [",
             a.M, ",", a.N, "]");
      a.bias_m = cm == 1 ? 0 : cn;
      a.bias_n = cn == 1 ? 0 : 1;
      bias = in(ctx, 2);
    }
    if (!y.numel()) return;
    record_matmul(s, *dev_, a, A, in(ctx, 1), bias, device_ref(y, "output"));
  }

 private:
  float alpha_, beta_;
  bool ta_, tb_;
};

bool check_gemm(const ClaimInfo& c, Decline* why) {
  if (in_rank(c, 0) != 2 || in_rank(c, 1) != 2)
    return decline(why, DeclineCode::kDynamicShape, "Gemm operands must be known to be 2-D");
  if (c.node.has_input(2) && (in_rank(c, 2) < 0 || in_rank(c, 2) > 2))
    return decline(why, DeclineCode::kDynamicShape, "Gemm's C must have a known rank of at most 2");
  return true;
}

std::unique_ptr<Kernel> make_gemm(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<GemmKernel>(info, d);
}

}  // namespace

void add_linalg_ops(std::vector<OpDef>& defs) {
  defs.push_back({"", "MatMul", 1, kMaxOpset, 0, 0, check_matmul, make_matmul});
  defs.push_back({"", "Gemm", 7, kMaxOpset, 0, 0, check_gemm, make_gemm});
}

}  // namespace onyx::vulkan
