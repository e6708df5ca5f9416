// CPU kernels: loss family (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/reduce_math.hpp"

namespace onyx::cpu {
namespace {

constexpr int64_t kChunk = 256;

enum class Reduction { kNone, kSum, kMean };

struct LossState {
  Reduction reduction;
  bool has_ignore;
  int64_t ignore_index;
  bool softmax;  // SoftmaxCrossEntropyLoss: log-softmax over the class axis first
};

template <class T>
using LAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

/// Loss for input [N, C, S] (S = product of the spatial dims), target [N, S], weights [C].
template <class T>
void loss_typed(const LossState& st, const Tensor& x, const Tensor& target, const Tensor* weight, Tensor& out,
                Tensor* log_prob, int64_t N, int64_t C, int64_t S, ThreadPool& pool) {
  using A = LAcc<T>;
  const T* px = static_cast<const T*>(x.raw_data());
  const T* pw = weight ? static_cast<const T*>(weight->raw_data()) : nullptr;
  T* py = static_cast<T*>(out.raw_data());
  T* plp = log_prob ? static_cast<T*>(log_prob->raw_data()) : nullptr;
  const int64_t chunks = (S + kChunk - 1) / kChunk;
  // Per (n, chunk of S): each element's loss and weight into lv / wv.
  auto item = [&](int64_t it, A* lv, A* wv) {
    const int64_t n = it / chunks, s0 = (it % chunks) * kChunk;
    const int64_t len = std::min(kChunk, S - s0);
    const T* xb = px + n * C * S + s0;
    A lse[kChunk];
    if (st.softmax) {
      for (int64_t j = 0; j < len; ++j) lse[j] = C > 0 ? to_acc(xb[j]) : A(0);
      for (int64_t c = 1; c < C; ++c)
        for (int64_t j = 0; j < len; ++j) lse[j] = std::max<A>(lse[j], to_acc(xb[c * S + j]));
      A sum[kChunk];
      for (int64_t j = 0; j < len; ++j) sum[j] = 0;
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < len; ++j) sum[j] += exp_shifted(A(to_acc(xb[c * S + j])) - lse[j]);
      for (int64_t j = 0; j < len; ++j) lse[j] += std::log(sum[j]);
      if (plp) {
        T* lb = plp + n * C * S + s0;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t j = 0; j < len; ++j) lb[c * S + j] = from_acc<T>(A(to_acc(xb[c * S + j])) - lse[j]);
      }
    }
    for (int64_t j = 0; j < len; ++j) {
      const int64_t t = int_at(target, n * S + s0 + j);
      if (st.has_ignore && t == st.ignore_index) {
        lv[j] = 0;
        wv[j] = 0;
        continue;
      }
      const A w = pw ? A(to_acc(pw[t])) : A(1);
      A lp = to_acc(xb[t * S + j]);
      if (st.softmax) lp -= lse[j];
      lv[j] = -lp * w;
      wv[j] = w;
    }
    return std::pair<int64_t, int64_t>(n * S + s0, len);
  };
  const int64_t items = N * chunks;
  if (st.reduction == Reduction::kNone) {
    parallel_range(pool, items, std::min(kChunk, S) * (C + 1), [&](int64_t i0, int64_t i1) {
      A lv[kChunk], wv[kChunk];
      for (int64_t it = i0; it < i1; ++it) {
        const auto [off, len] = item(it, lv, wv);
        for (int64_t j = 0; j < len; ++j) py[off + j] = from_acc<T>(lv[j]);
      }
    });
    return;
  }
  // Sum / mean: one sequential pass (deterministic), accumulated in double.
  A lv[kChunk], wv[kChunk];
  double total = 0, wsum = 0;
  for (int64_t it = 0; it < items; ++it) {
    const auto [off, len] = item(it, lv, wv);
    (void)off;
    for (int64_t j = 0; j < len; ++j) {
      total += lv[j];
      wsum += wv[j];
    }
  }
  // Mean over zero weight (every target ignored) is 0 / 0 = NaN, as in the reference.
  const double r = st.reduction == Reduction::kSum ? total : total / wsum;
  py[0] = from_acc<T>(static_cast<A>(r));
}

void loss_compute(const LossState& st, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& target = ctx.input(1);
  const Tensor* weight = ctx.optional_input(2);
  const char* const op = st.softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss";
  if (x.rank() < 2) fail(ErrorCode::kInvalidArgument, op, ": input 0 must have rank >= 2, got ", x.shape().to_string());
  if (target.dtype() != DType::kInt64 && target.dtype() != DType::kInt32)
    fail(ErrorCode::kInvalidArgument, op, ": target (input 1) must be int32 or int64, got ", dtype_name(target.dtype()));
  bool match = target.rank() + 1 == x.rank();
  for (size_t k = 0; match && k < target.rank(); ++k) match = target.dim(k) == x.dim(k == 0 ? 0 : k + 1);
  if (!match)
    fail(ErrorCode::kInvalidArgument, op, ": target of shape ", target.shape().to_string(), " does not match input of shape ",
         x.shape().to_string());
  const int64_t N = x.dim(0), C = x.dim(1);
  const int64_t S = target.numel() / std::max<int64_t>(1, N);
  if (weight) {
    if (weight->dtype() != x.dtype())
      fail(ErrorCode::kInvalidArgument, op, ": weights have type ", dtype_name(weight->dtype()), ", input 0 has ",
           dtype_name(x.dtype()));
    if (weight->rank() != 1 || weight->dim(0) != C)
      fail(ErrorCode::kInvalidArgument, op, ": weights of shape ", weight->shape().to_string(), " do not match ", C,
           " classes");
  }
  // Validate every target before computing (kernels must not read out of bounds).
  const int64_t nt = target.numel();
  for (int64_t i = 0; i < nt; ++i) {
    const int64_t t = int_at(target, i);
    if (st.has_ignore && t == st.ignore_index) continue;
    if (t < 0 || t >= C)
      fail(ErrorCode::kRuntime, op, ": target value ", t, " at position ", i, " of input 1 is out of range [0, ", C, ")",
           st.has_ignore ? str(" and is not ignore_index ", st.ignore_index) : std::string());
  }
  Tensor& out = ctx.output(0);
  Tensor* log_prob = st.softmax && ctx.num_outputs() > 1 && ctx.has_output(1) ? &ctx.output(1) : nullptr;
  dispatch_float(x.dtype(), [&]<class T>() {
    loss_typed<T>(st, x, target, weight, out, log_prob, N, C, S, ctx.pool());
  }, op);
}

std::unique_ptr<Kernel> make_loss(const KernelCreateInfo& info) {
  const Node& n = info.node;
  const std::string red = n.attr_string("reduction", "mean");
  LossState st{};
  if (red == "none") st.reduction = Reduction::kNone;
  else if (red == "sum") st.reduction = Reduction::kSum;
  else if (red == "mean") st.reduction = Reduction::kMean;
  else fail(ErrorCode::kInvalidGraph, n.label(), ": reduction must be 'none', 'sum' or 'mean', got '", red, "'");
  st.has_ignore = n.has_attr("ignore_index");
  st.ignore_index = n.attr_int("ignore_index", 0);
  st.softmax = n.op_type == "SoftmaxCrossEntropyLoss";
  return make_fn_kernel(st, loss_compute);
}

using namespace types;

const KernelDef kDefs[] = {
    {"", "NegativeLogLikelihoodLoss", 12, 99, {{0, kFloats}, {1, kIndex}}, make_loss},
    {"", "SoftmaxCrossEntropyLoss", 12, 99, {{0, kFloats}, {1, kIndex}}, make_loss},
};

}  // namespace

std::span<const KernelDef> loss_kernels() { return kDefs; }

}  // namespace onyx::cpu
