// onyx::Attention (made by the optimizer, src/optimizer/attention_fusion.cpp):
//   Y = softmax(scale * Q x KT + bias) x V   over the last axis,
// Q [.., Sq, D], KT [.., D, Sk], V [.., Sk, Dv], bias broadcastable to [.., Sq, Sk]; batch dims
// broadcast as in MatMul. A block of query rows at a time: its scores stay in a per-thread
// workspace (never the whole [.., Sq, Sk] tensor), softmax runs on them in place, and the second
// product reads them from cache.
#include <algorithm>
#include <cstring>

#include "kernels/common.hpp"
#include "kernels/gemm.hpp"
#include "kernels/manifest.hpp"
#include "kernels/reduce_math.hpp"

namespace onyx::cpu {

namespace {

/// Per output batch dim (right-aligned), the element stride of one operand (0 where it broadcasts).
struct BatchView {
  Shape strides;
  int64_t row = 0, col = 0;  // strides of the operand's last two dims (bias: 0 where broadcast)
};

class AttentionKernel final : public Kernel {
 public:
  explicit AttentionKernel(const KernelCreateInfo& info) : node_(info.node), scale_(info.node.attr_float("scale", 1.0f)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& q = ctx.input(0);
    const Tensor& kt = ctx.input(1);
    const Tensor& v = ctx.input(2);
    const Tensor* bias = ctx.optional_input(3);
    Tensor& y = ctx.output(0);
    for (const Tensor* t : {&q, &kt, &v, bias})
      if (t && t->dtype() != DType::kFloat)
        fail(ErrorCode::kInvalidArgument, node_.label(), ": every input must be float32, got ", dtype_name(t->dtype()));
    if (q.rank() < 2 || kt.rank() < 2 || v.rank() < 2)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": Q, KT and V must have rank >= 2, got ", q.shape().to_string(), ", ",
           kt.shape().to_string(), ", ", v.shape().to_string());
    const int64_t sq = q.dim(q.rank() - 2), d = q.dim(q.rank() - 1);
    const int64_t sk = kt.dim(kt.rank() - 1), dv = v.dim(v.rank() - 1);
    if (kt.dim(kt.rank() - 2) != d || v.dim(v.rank() - 2) != sk)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": shapes do not chain: Q ", q.shape().to_string(), ", KT ",
           kt.shape().to_string(), ", V ", v.shape().to_string());
    // Output batch dims: broadcast of the three operands' batch dims.
    const int64_t rb = std::max({q.rank(), kt.rank(), v.rank()}) - 2;
    Shape bdims = Shape::filled(static_cast<size_t>(rb), 1);
    for (const Tensor* t : {&q, &kt, &v}) {
      const int64_t r = t->rank() - 2;
      for (int64_t i = 0; i < r; ++i) {
        const int64_t dim = t->dim(i), at = rb - r + i;
        if (dim != 1 && bdims[at] != 1 && bdims[at] != dim)
          fail(ErrorCode::kInvalidArgument, node_.label(), ": batch dims do not broadcast: Q ", q.shape().to_string(), ", KT ",
               kt.shape().to_string(), ", V ", v.shape().to_string());
        if (dim != 1) bdims[at] = dim;
      }
    }
    Shape want = bdims;
    want.push_back(sq);
    want.push_back(dv);
    if (y.shape() != want)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": output is ", y.shape().to_string(), ", inputs give ", want.to_string());
    if (y.numel() == 0) return;
    if (sk == 0) {  // softmax over no keys, times an empty V: zeros (as the unfused MatMul gives)
      std::memset(y.raw_data(), 0, y.nbytes());
      return;
    }
    const BatchView vq = view(q, bdims, false), vk = view(kt, bdims, false), vv = view(v, bdims, false);
    BatchView vb;
    if (bias) {
      if (bias->rank() > rb + 2) fail(ErrorCode::kInvalidArgument, node_.label(), ": bias ", bias->shape().to_string(), " has more dims than the scores");
      Shape sdims = bdims;
      sdims.push_back(sq);
      sdims.push_back(sk);
      for (int64_t i = 0; i < bias->rank(); ++i) {
        const int64_t dim = bias->dim(i), want_dim = sdims[rb + 2 - bias->rank() + i];
        if (dim != 1 && dim != want_dim)
          fail(ErrorCode::kInvalidArgument, node_.label(), ": bias ", bias->shape().to_string(), " does not broadcast to the scores ",
               sdims.to_string());
      }
      vb = view(*bias, bdims, true);
    }
    const int64_t batch = bdims.numel();
    const int64_t block = std::clamp<int64_t>(16384 / sk, 1, 64);  // rows per task: scores <= 64 KiB when Sk allows
    const int64_t blocks = (sq + block - 1) / block;
    const float* pq = q.data<float>();
    const float* pk = kt.data<float>();
    const float* pv = v.data<float>();
    const float* pb = bias ? bias->data<float>() : nullptr;
    float* py = y.data<float>();
    const float scale = scale_;
    parallel_range(ctx.pool(), batch * blocks, block * sk * (d + dv + 8), [&](int64_t t0, int64_t t1) {
      float* sc = reinterpret_cast<float*>(thread_workspace(Workspace::kAttention, static_cast<size_t>(block * sk) * sizeof(float)));
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / blocks, r0 = (t % blocks) * block, rows = std::min(block, sq - r0);
        int64_t oq = 0, ok = 0, ov = 0, ob = 0, rem = b;
        for (int64_t i = rb; i-- > 0;) {
          const int64_t idx = rem % bdims[i];
          rem /= bdims[i];
          oq += idx * vq.strides[i];
          ok += idx * vk.strides[i];
          ov += idx * vv.strides[i];
          if (pb) ob += idx * vb.strides[i];
        }
        if (d > 0)
          sgemm(false, false, rows, sk, d, scale, pq + oq + r0 * d, d, pk + ok, sk, 0.0f, sc, sk, nullptr);
        else
          std::fill(sc, sc + rows * sk, 0.0f);
        for (int64_t r = 0; r < rows; ++r) {
          float* row = sc + r * sk;
          if (pb) {
            const float* br = pb + ob + (r0 + r) * vb.row;
            if (vb.col == 1)
              for (int64_t j = 0; j < sk; ++j) row[j] += br[j];
            else
              for (int64_t j = 0; j < sk; ++j) row[j] += br[0];
          }
          // Softmax as the Softmax kernel computes it (so fused and unfused agree, NaN rows included).
          const float m = row_max_plain(row, sk);
          exp_le0_row(row, m, row, sk);
          const float inv = 1.0f / row_sum(row, sk);
          for (int64_t j = 0; j < sk; ++j) row[j] *= inv;
        }
        sgemm(false, false, rows, dv, sk, 1.0f, sc, sk, pv + ov, dv, 0.0f, py + (b * sq + r0) * dv, dv, nullptr);
      }
    });
  }

 private:
  /// Strides of t's batch dims aligned to `bdims` (0 where t broadcasts), and of its last two
  /// dims (for the bias, 0 where a dim of 1 broadcasts; the operands' matrices are dense).
  static BatchView view(const Tensor& t, const Shape& bdims, bool is_bias) {
    const int64_t rb = static_cast<int64_t>(bdims.size());
    BatchView r;
    r.strides = Shape::filled(static_cast<size_t>(rb), 0);
    const int64_t rank = t.rank();
    const int64_t mat_rank = std::min<int64_t>(rank, 2);
    int64_t stride = 1;
    // Last two dims (the bias may have fewer).
    int64_t last = 1, second = 1;
    if (mat_rank >= 1) last = t.dim(rank - 1);
    if (mat_rank >= 2) second = t.dim(rank - 2);
    r.col = is_bias ? (last == 1 ? 0 : 1) : 1;
    r.row = is_bias ? (second == 1 ? 0 : last) : last;
    stride = last * second;
    for (int64_t i = rank - mat_rank; i-- > 0;) {
      const int64_t at = rb - (rank - mat_rank) + i;
      if (at >= 0 && t.dim(i) != 1) r.strides[at] = stride;
      stride *= t.dim(i);
    }
    return r;
  }

  const Node& node_;
  float scale_;
};

std::unique_ptr<Kernel> make_attention(const KernelCreateInfo& info) { return std::make_unique<AttentionKernel>(info); }

const KernelDef kDefs[] = {
    {"onyx", "Attention", 1, 1, {{0, types::kFloat}}, make_attention},
};

}  // namespace

std::span<const KernelDef> attention_kernels() { return kDefs; }

}  // namespace onyx::cpu
