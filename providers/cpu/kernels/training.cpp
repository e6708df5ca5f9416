// CPU kernels: training family (ai.onnx.preview.training: Adagrad, Adam, Momentum). Updates are
// computed in double and stored in the tensors' type.
#include <cmath>
#include <string>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {
namespace {

constexpr const char* kDomain = "ai.onnx.preview.training";

enum class Opt { kAdagrad, kAdam, kMomentum, kNesterov };

struct OptState {
  Opt opt;
  double epsilon = 0, decay_factor = 0, norm_coefficient = 0, norm_coefficient_post = 0, alpha = 0, beta = 0;
  int in_groups = 3, out_groups = 2;
};

/// Per-tensor update coefficients derived from R and T.
struct Step {
  double r;         // effective learning rate
  double beta_adj;  // Momentum: beta, or 1 on the first iteration
};

template <class T>
void update_typed(const OptState& st, const Step& s, int64_t n, const T* x, const T* g, const T* v, const T* h, T* xo,
                  T* vo, T* ho, ThreadPool& pool) {
  parallel_range(pool, n, 16, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const double xi = x[i];
      const double gr = st.norm_coefficient * xi + static_cast<double>(g[i]);
      switch (st.opt) {
        case Opt::kAdagrad: {
          // v holds H (the accumulated squared gradient) for Adagrad.
          const double hn = static_cast<double>(v[i]) + gr * gr;
          if (xo) xo[i] = static_cast<T>(xi - s.r * gr / (std::sqrt(hn) + st.epsilon));
          if (vo) vo[i] = static_cast<T>(hn);
          break;
        }
        case Opt::kAdam: {
          const double vn = st.alpha * static_cast<double>(v[i]) + (1.0 - st.alpha) * gr;
          const double hn = st.beta * static_cast<double>(h[i]) + (1.0 - st.beta) * gr * gr;
          const double xn = xi - s.r * vn / (std::sqrt(hn) + st.epsilon);
          if (xo) xo[i] = static_cast<T>((1.0 - st.norm_coefficient_post) * xn);
          if (vo) vo[i] = static_cast<T>(vn);
          if (ho) ho[i] = static_cast<T>(hn);
          break;
        }
        case Opt::kMomentum:
        case Opt::kNesterov: {
          const double vn = st.alpha * static_cast<double>(v[i]) + s.beta_adj * gr;
          const double dir = st.opt == Opt::kMomentum ? vn : gr + st.alpha * vn;
          if (xo) xo[i] = static_cast<T>(xi - s.r * dir);
          if (vo) vo[i] = static_cast<T>(vn);
          break;
        }
      }
    }
  });
}

void optimizer_compute(const OptState& st, KernelContext& ctx) {
  const size_t nin = ctx.num_inputs();
  const size_t count = (nin - 2) / st.in_groups;
  const Tensor& rt = ctx.input(0);
  const Tensor& tt = ctx.input(1);
  if (rt.numel() != 1) fail(ErrorCode::kInvalidArgument, "R (input 0) must be a scalar, got shape ", rt.shape().to_string());
  if (tt.numel() != 1 || tt.dtype() != DType::kInt64)
    fail(ErrorCode::kInvalidArgument, "T (input 1) must be an int64 scalar, got ", dtype_name(tt.dtype()),
         tt.shape().to_string());
  const double R = read_scalar(rt);
  const int64_t T = tt.data<int64_t>()[0];
  Step s{R, st.beta};
  switch (st.opt) {
    case Opt::kAdagrad: s.r = R / (1.0 + static_cast<double>(T) * st.decay_factor); break;
    case Opt::kAdam:
      if (T > 0)
        s.r = R * std::sqrt(1.0 - std::pow(st.beta, static_cast<double>(T))) /
              (1.0 - std::pow(st.alpha, static_cast<double>(T)));
      break;
    case Opt::kMomentum:
    case Opt::kNesterov: s.beta_adj = T > 0 ? st.beta : 1.0; break;
  }
  // Validate every tensor group before computing anything.
  for (size_t i = 0; i < count; ++i) {
    const Tensor& x = ctx.input(2 + i);
    for (int g = 1; g < st.in_groups; ++g) {
      const size_t k = 2 + g * count + i;
      const Tensor& t = ctx.input(k);
      if (t.dtype() != x.dtype())
        fail(ErrorCode::kInvalidArgument, "input ", k, " has type ", dtype_name(t.dtype()), " but input ", 2 + i,
             " has type ", dtype_name(x.dtype()));
      if (!(t.shape() == x.shape()))
        fail(ErrorCode::kInvalidArgument, "input ", k, " has shape ", t.shape().to_string(), " but input ", 2 + i,
             " (the tensor it belongs to) has shape ", x.shape().to_string());
    }
  }
  for (size_t i = 0; i < count; ++i) {
    const Tensor& x = ctx.input(2 + i);
    const Tensor& g = ctx.input(2 + count + i);
    const Tensor& v = ctx.input(2 + 2 * count + i);
    const Tensor* h = st.in_groups > 3 ? &ctx.input(2 + 3 * count + i) : nullptr;
    Tensor* outs[3] = {nullptr, nullptr, nullptr};
    for (int o = 0; o < st.out_groups; ++o)
      if (ctx.has_output(o * count + i)) outs[o] = &ctx.allocate_output(o * count + i, x.dtype(), x.shape());
    dispatch_float(x.dtype(), [&]<class T>() {
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        auto p = [](const Tensor* t) { return t ? static_cast<const T*>(t->raw_data()) : nullptr; };
        auto q = [](Tensor* t) { return t ? static_cast<T*>(t->raw_data()) : nullptr; };
        update_typed<T>(st, s, x.numel(), p(&x), p(&g), p(&v), p(h), q(outs[0]), q(outs[1]), q(outs[2]), ctx.pool());
      } else {
        unsupported_dtype(ctx.node().op_type.c_str(), x.dtype());
      }
    }, ctx.node().op_type.c_str());
  }
}

double required_float(const Node& n, const char* name) {
  if (!n.has_attr(name)) fail(ErrorCode::kInvalidGraph, n.label(), ": attribute '", name, "' is required");
  return n.attr_float(name, 0.0f);
}

std::unique_ptr<Kernel> make_optimizer(const KernelCreateInfo& info) {
  const Node& n = info.node;
  OptState st;
  if (n.op_type == "Adagrad") {
    st.opt = Opt::kAdagrad;
    st.epsilon = n.attr_float("epsilon", 1e-6f);
    st.decay_factor = n.attr_float("decay_factor", 0.0f);
    st.norm_coefficient = n.attr_float("norm_coefficient", 0.0f);
  } else if (n.op_type == "Adam") {
    st.opt = Opt::kAdam;
    st.in_groups = 4;
    st.out_groups = 3;
    st.alpha = n.attr_float("alpha", 0.9f);
    st.beta = n.attr_float("beta", 0.999f);
    st.epsilon = n.attr_float("epsilon", 1e-6f);
    st.norm_coefficient = n.attr_float("norm_coefficient", 0.0f);
    st.norm_coefficient_post = n.attr_float("norm_coefficient_post", 0.0f);
  } else {
    st.alpha = required_float(n, "alpha");
    st.beta = required_float(n, "beta");
    st.norm_coefficient = required_float(n, "norm_coefficient");
    if (!n.has_attr("mode")) fail(ErrorCode::kInvalidGraph, n.label(), ": attribute 'mode' is required");
    const std::string mode = n.attr_string("mode");
    if (mode == "standard") st.opt = Opt::kMomentum;
    else if (mode == "nesterov") st.opt = Opt::kNesterov;
    else fail(ErrorCode::kInvalidGraph, n.label(), ": mode must be \"standard\" or \"nesterov\", got \"", mode, "\"");
  }
  const size_t nin = n.inputs.size();
  if (nin < 2 + static_cast<size_t>(st.in_groups) || (nin - 2) % st.in_groups != 0)
    fail(ErrorCode::kInvalidGraph, n.label(), ": expects 2 + ", st.in_groups, " * N inputs, got ", nin);
  return make_fn_kernel(st, optimizer_compute);
}

using namespace types;
constexpr TypeMask kFD = type_mask({DType::kFloat, DType::kDouble});

const KernelDef kDefs[] = {
    {kDomain, "Adagrad", 1, 99, {{0, kFD}, {2, kFD}}, make_optimizer},
    {kDomain, "Adam", 1, 99, {{0, kFD}, {2, kFD}}, make_optimizer},
    {kDomain, "Momentum", 1, 99, {{0, kFD}, {2, kFD}}, make_optimizer},
};

}  // namespace

std::span<const KernelDef> training_kernels() { return kDefs; }

}  // namespace onyx::cpu
