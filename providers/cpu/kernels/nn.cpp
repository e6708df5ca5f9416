// CPU kernels: BatchNormalization, InstanceNormalization, LayerNormalization,
// GroupNormalization, MeanVarianceNormalization, LRN, Dropout.
#include <cmath>
#include <random>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/vmath.hpp"
#include "ops/nn.hpp"

namespace onyx::cpu {
namespace {

/// Reads element i of any float tensor as double.
inline double fget(const Tensor& t, int64_t i) { return t.element_as_double(i); }

template <class T>
inline void fset(Tensor& t, int64_t i, double v) {
  static_cast<T*>(t.raw_data())[i] = from_acc<T>(static_cast<Acc<T>>(v));
}

void set_double(Tensor& t, int64_t i, double v) {
  dispatch_float(t.dtype(), [&]<class T>() { fset<T>(t, i, v); }, "normalisation");
}

// ---- BatchNormalization ----

void batch_norm_compute(const int&, KernelContext& ctx) {
  const Node& n = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor& bias = ctx.input(2);
  const Tensor& mean = ctx.input(3);
  const Tensor& var = ctx.input(4);
  Tensor& y = ctx.output(0);
  const double eps = n.attr_float("epsilon", 1e-5f);
  const bool training = n.opset >= 14 && n.attr_int("training_mode", 0) != 0;
  const int64_t N = x.dim(0), C = x.rank() > 1 ? x.dim(1) : 1;
  const int64_t inner = x.rank() > 2 ? (N * C > 0 ? x.numel() / (N * C) : 0) : 1;
  // Legacy spatial=0: statistics per activation (C x spatial values).
  const bool per_activation = n.opset < 9 && n.attr_int("spatial", 1) == 0;
  const int64_t stats = per_activation ? C * inner : C;
  if (scale.numel() != stats || bias.numel() != stats || mean.numel() != stats || var.numel() != stats)
    fail(ErrorCode::kInvalidArgument, "scale, B, mean and var must have ", stats, " values (got ", scale.numel(), ", ",
         bias.numel(), ", ", mean.numel(), ", ", var.numel(), ")");
  std::vector<double> m(stats), v(stats);
  for (int64_t c = 0; c < stats; ++c) {
    m[c] = fget(mean, c);
    v[c] = fget(var, c);
  }
  if (training) {
    const double momentum = n.attr_float("momentum", 0.9f);
    std::vector<double> bm(C, 0.0), bv(C, 0.0);
    for (int64_t b = 0; b < N; ++b)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) bm[c] += fget(x, (b * C + c) * inner + i);
    for (auto& s : bm) s /= static_cast<double>(N * inner);
    for (int64_t b = 0; b < N; ++b)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) {
          const double d = fget(x, (b * C + c) * inner + i) - bm[c];
          bv[c] += d * d;
        }
    for (auto& s : bv) s /= static_cast<double>(N * inner);
    if (ctx.num_outputs() > 1 && ctx.has_output(1))
      for (int64_t c = 0; c < C; ++c) set_double(ctx.output(1), c, m[c] * momentum + bm[c] * (1 - momentum));
    if (ctx.num_outputs() > 2 && ctx.has_output(2))
      for (int64_t c = 0; c < C; ++c) set_double(ctx.output(2), c, v[c] * momentum + bv[c] * (1 - momentum));
    m = bm;
    v = bv;
  } else {
    // Inference: optional extra outputs (older opsets) carry the statistics through.
    for (size_t o = 1; o < ctx.num_outputs(); ++o) {
      if (!ctx.has_output(o)) continue;
      Tensor& t = ctx.output(o);
      for (int64_t c = 0; c < std::min<int64_t>(t.numel(), stats); ++c) set_double(t, c, (o % 2 == 1) ? m[c] : v[c]);
    }
  }
  std::vector<float> a(stats), b(stats);
  for (int64_t c = 0; c < stats; ++c) {
    const double s = fget(scale, c) / std::sqrt(v[c] + eps);
    a[c] = static_cast<float>(s);
    b[c] = static_cast<float>(fget(bias, c) - m[c] * s);
  }
  dispatch_float(x.dtype(), [&]<class T>() {
    const T* px = static_cast<const T*>(x.raw_data());
    T* py = static_cast<T*>(y.raw_data());
    parallel_range(ctx.pool(), N * C, inner, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t c = p % C;
        const T* xi = px + p * inner;
        T* yi = py + p * inner;
        if (per_activation) {
          for (int64_t i = 0; i < inner; ++i) yi[i] = from_acc<T>(to_acc(xi[i]) * a[c * inner + i] + b[c * inner + i]);
        } else {
          const float ac = a[c], bc = b[c];
          for (int64_t i = 0; i < inner; ++i) yi[i] = from_acc<T>(to_acc(xi[i]) * ac + bc);
        }
      }
    });
  }, "BatchNormalization");
}

// ---- Instance / Layer / Group normalisation (one helper) ----

/// Normalises each of `rows` contiguous groups of `cols` values; per-value affine parameters
/// come from `affine(row, col, &scale, &bias)`. Writes mean / inverse std per row if asked.
template <class T, class F>
void normalize_rows(const T* x, T* y, int64_t rows, int64_t cols, double eps, F affine, Tensor* mean_out, Tensor* inv_out,
                    ThreadPool& pool) {
  parallel_range(pool, rows, cols * 3, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * cols;
      T* yr = y + r * cols;
      double s = 0, ss = 0;
      for (int64_t j = 0; j < cols; ++j) s += static_cast<double>(to_acc(xr[j]));
      const double mu = cols ? s / static_cast<double>(cols) : 0;
      for (int64_t j = 0; j < cols; ++j) {
        const double d = static_cast<double>(to_acc(xr[j])) - mu;
        ss += d * d;
      }
      const double inv = 1.0 / std::sqrt((cols ? ss / static_cast<double>(cols) : 0) + eps);
      for (int64_t j = 0; j < cols; ++j) {
        double sc, bi;
        affine(r, j, &sc, &bi);
        yr[j] = from_acc<T>(static_cast<Acc<T>>((static_cast<double>(to_acc(xr[j])) - mu) * inv * sc + bi));
      }
      if (mean_out) set_double(*mean_out, r, mu);
      if (inv_out) set_double(*inv_out, r, inv);
    }
  });
}

void instance_norm_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor& bias = ctx.input(2);
  Tensor& y = ctx.output(0);
  const int64_t N = x.dim(0), C = x.dim(1), inner = x.numel() / std::max<int64_t>(1, N * C);
  if (scale.numel() != C || bias.numel() != C) fail(ErrorCode::kInvalidArgument, "scale and B must have ", C, " values");
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  dispatch_float(x.dtype(), [&]<class T>() {
    normalize_rows<T>(static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()), N * C, inner, eps,
                      [&](int64_t r, int64_t, double* s, double* b) {
                        *s = fget(scale, r % C);
                        *b = fget(bias, r % C);
                      }, nullptr, nullptr, ctx.pool());
  }, "InstanceNormalization");
}

void layer_norm_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* bias = ctx.optional_input(2);
  Tensor& y = ctx.output(0);
  const int64_t r = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), r, "LayerNormalization");
  int64_t rows = 1, cols = 1;
  for (int64_t k = 0; k < r; ++k) (k < axis ? rows : cols) *= x.dim(k);
  const int64_t sn = scale.numel(), bn = bias ? bias->numel() : 1;
  if (sn == 0 || cols % sn != 0 || (bias && (bn == 0 || cols % bn != 0)))
    fail(ErrorCode::kInvalidArgument, "Scale ", scale.shape().to_string(), " and B do not broadcast to the normalised shape");
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  Tensor* mean = ctx.num_outputs() > 1 && ctx.has_output(1) ? &ctx.output(1) : nullptr;
  Tensor* inv = ctx.num_outputs() > 2 && ctx.has_output(2) ? &ctx.output(2) : nullptr;
  dispatch_float(x.dtype(), [&]<class T>() {
    const T* ps = static_cast<const T*>(scale.raw_data());
    const T* pb = bias ? static_cast<const T*>(bias->raw_data()) : nullptr;
    if constexpr (std::is_same_v<T, float>) {
      // Fast path: float32 with per-column scale and bias.
      if (sn == cols && (!bias || bn == cols)) {
        const float* px = x.data<float>();
        float* py = y.data<float>();
        parallel_range(ctx.pool(), rows, cols * 3, [&](int64_t r0, int64_t r1) {
          for (int64_t row = r0; row < r1; ++row) {
            const float* xr = px + row * cols;
            float* yr = py + row * cols;
            // Two passes over the row (in L1): the mean, then the squared deviations from it
            // (not E[x^2] - mean^2, which cancels when the mean is large against the spread).
            using vmath::vf;
            constexpr int64_t L = vmath::kLanes;
            vf vs = vf{};
            for (int64_t j = 0; j < cols; j += L) vs += vmath::load_n(xr + j, std::min(L, cols - j));
            const float mu = vmath::hsum(vs) / static_cast<float>(cols);
            const vf vmu = vmath::splat(mu);
            vf vss = vf{};
            int64_t j = 0;
            for (; j + L <= cols; j += L) {
              const vf d = vmath::load(xr + j) - vmu;
              vss += d * d;
            }
            for (; j < cols; ++j) vss[0] += (xr[j] - mu) * (xr[j] - mu);
            const float inv_std = 1.0f / std::sqrt(vmath::hsum(vss) / static_cast<float>(cols) + static_cast<float>(eps));
            vmath::normalize_row(xr, yr, cols, mu, inv_std, ps, pb);
            if (mean) set_double(*mean, row, mu);
            if (inv) set_double(*inv, row, inv_std);
          }
        });
        return;
      }
    }
    normalize_rows<T>(static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()), rows, cols, eps,
                      [&](int64_t, int64_t j, double* s, double* b) {
                        *s = static_cast<double>(to_acc(ps[j % sn]));
                        *b = pb ? static_cast<double>(to_acc(pb[j % bn])) : 0.0;
                      }, mean, inv, ctx.pool());
  }, "LayerNormalization");
}

// RMSNormalization (opset 23): y = x / sqrt(mean(x^2 over dims axis..) + epsilon) * scale, the
// scale broadcast to X (unidirectionally), accumulated in float (double for double X).
void rms_norm_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  Tensor& y = ctx.output(0);
  const int64_t r = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), r, "RMSNormalization");
  const int64_t stash = ctx.node().attr_int("stash_type", 1);
  if (stash != 1 && !(stash == static_cast<int64_t>(DType::kDouble) && x.dtype() == DType::kDouble))
    fail(ErrorCode::kNotImplemented, "RMSNormalization with stash_type ", stash, " (onyx accumulates in float, or double for double)");
  if (scale.rank() > x.rank()) fail(ErrorCode::kInvalidArgument, "scale ", scale.shape().to_string(), " has a higher rank than X");
  // Scale strides over X's dims (right-aligned; 0 where it broadcasts).
  Shape sst = Shape::filled(static_cast<size_t>(r), 0);
  int64_t stride = 1;
  for (int64_t k = static_cast<int64_t>(scale.rank()) - 1, d = r - 1; k >= 0; --k, --d) {
    if (scale.dim(k) != 1 && scale.dim(k) != x.dim(d))
      fail(ErrorCode::kInvalidArgument, "scale ", scale.shape().to_string(), " does not broadcast to X ", x.shape().to_string());
    if (scale.dim(k) != 1) sst[d] = stride;
    stride *= scale.dim(k);
  }
  int64_t rows = 1, cols = 1;
  for (int64_t k = 0; k < r; ++k) (k < axis ? rows : cols) *= x.dim(k);
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  dispatch_float(x.dtype(), [&]<class T>() {
    dispatch_float(scale.dtype(), [&]<class V>() {
      using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const T* px = static_cast<const T*>(x.raw_data());
      const V* ps = static_cast<const V*>(scale.raw_data());
      V* py = static_cast<V*>(y.raw_data());
      parallel_range(ctx.pool(), rows, cols * 3, [&](int64_t r0, int64_t r1) {
        for (int64_t row = r0; row < r1; ++row) {
          const T* xr = px + row * cols;
          V* yr = py + row * cols;
          A ss = 0;
          for (int64_t j = 0; j < cols; ++j) {
            const A v = static_cast<A>(to_acc(xr[j]));
            ss += v * v;
          }
          const A inv = A(1) / std::sqrt(ss / static_cast<A>(cols) + static_cast<A>(eps));
          // The scale's offset: the row's part, then an odometer over the normalised dims.
          int64_t base = 0, rem = row;
          for (int64_t k = axis - 1; k >= 0; --k) {
            base += (rem % x.dim(k)) * sst[k];
            rem /= x.dim(k);
          }
          Shape idx = Shape::filled(static_cast<size_t>(r - axis), 0);
          int64_t off = base;
          for (int64_t j = 0; j < cols; ++j) {
            yr[j] = from_acc<V>(static_cast<Acc<V>>(static_cast<A>(to_acc(xr[j])) * inv * static_cast<A>(to_acc(ps[off]))));
            for (int64_t k = r - 1; k >= axis; --k) {
              off += sst[k];
              if (++idx[k - axis] < x.dim(k)) break;
              off -= sst[k] * x.dim(k);
              idx[k - axis] = 0;
            }
          }
        }
      });
    }, "RMSNormalization scale");
  }, "RMSNormalization");
}

void group_norm_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor& bias = ctx.input(2);
  Tensor& y = ctx.output(0);
  const int64_t groups = ctx.node().attr_int("num_groups", 0);
  const int64_t N = x.dim(0), C = x.dim(1), inner = x.numel() / std::max<int64_t>(1, N * C);
  if (groups <= 0 || C % groups != 0) fail(ErrorCode::kInvalidArgument, "num_groups ", groups, " must divide the ", C, " channels");
  const int64_t cpg = C / groups;
  const bool per_channel = ctx.node().opset >= 21;
  const int64_t want = per_channel ? C : groups;
  if (scale.numel() != want || bias.numel() != want)
    fail(ErrorCode::kInvalidArgument, "scale and bias must have ", want, " values at opset ", ctx.node().opset);
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  dispatch_float(x.dtype(), [&]<class T>() {
    normalize_rows<T>(static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()), N * groups, cpg * inner, eps,
                      [&](int64_t r, int64_t j, double* s, double* b) {
                        const int64_t g = r % groups;
                        const int64_t i = per_channel ? g * cpg + j / inner : g;
                        *s = fget(scale, i);
                        *b = fget(bias, i);
                      }, nullptr, nullptr, ctx.pool());
  }, "GroupNormalization");
}

void mvn_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t r = static_cast<int64_t>(x.rank());
  std::vector<int64_t> axes = ctx.node().attr_ints("axes", {0, 2, 3});
  std::vector<char> red(r, 0);
  for (int64_t a : axes) {
    // (normalize_axis lets axis 0 through for a scalar, which has no dim 0 to reduce here.)
    if (r == 0) fail(ErrorCode::kInvalidArgument, ctx.node().label(), ": axis ", a, " is out of range for a rank-0 input");
    red[normalize_axis(a, r, "MeanVarianceNormalization")] = 1;
  }
  // Statistics per position of the kept dims.
  Shape kept = x.shape();
  for (int64_t k = 0; k < r; ++k)
    if (red[k]) kept[k] = 1;
  const int64_t groups = kept.numel(), n = x.numel();
  std::vector<double> sum(groups, 0), sq(groups, 0);
  std::vector<int64_t> gi(n);
  Shape idx = Shape::filled(r, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t g = 0;
    for (int64_t k = 0; k < r; ++k) g = g * kept[k] + (red[k] ? 0 : idx[k]);
    gi[i] = g;
    for (int64_t k = r; k-- > 0;) {
      if (++idx[k] < x.dim(k)) break;
      idx[k] = 0;
    }
  }
  for (int64_t i = 0; i < n; ++i) sum[gi[i]] += fget(x, i);
  const double cnt = groups ? static_cast<double>(n) / static_cast<double>(groups) : 1;
  for (auto& s : sum) s /= cnt;
  for (int64_t i = 0; i < n; ++i) {
    const double d = fget(x, i) - sum[gi[i]];
    sq[gi[i]] += d * d;
  }
  for (int64_t i = 0; i < n; ++i) set_double(y, i, (fget(x, i) - sum[gi[i]]) / std::sqrt(sq[gi[i]] / cnt + 1e-9));
}

void lrn_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Node& n = ctx.node();
  const int64_t size = n.attr_int("size", 0);
  if (size <= 0) fail(ErrorCode::kInvalidGraph, "LRN: size must be positive");
  const double alpha = n.attr_float("alpha", 1e-4f), beta = n.attr_float("beta", 0.75f), bias = n.attr_float("bias", 1.0f);
  const int64_t N = x.dim(0), C = x.dim(1), inner = x.numel() / std::max<int64_t>(1, N * C);
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        double s = 0;
        for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min<int64_t>(C - 1, c + hi); ++k) {
          const double v = fget(x, (b * C + k) * inner + i);
          s += v * v;
        }
        const int64_t at = (b * C + c) * inner + i;
        set_double(y, at, fget(x, at) / std::pow(bias + alpha / static_cast<double>(size) * s, beta));
      }
}

// ---- Dropout ----

void dropout_compute(const int&, KernelContext& ctx) {
  const Node& n = ctx.node();
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  double ratio = n.attr_float("ratio", 0.5f);
  bool training = false;
  if (n.opset >= 12) {
    if (const Tensor* r = ctx.optional_input(1)) ratio = read_scalar(*r);
    if (const Tensor* t = ctx.optional_input(2)) training = t->data<bool>()[0];
  } else if (n.opset < 7) {
    training = n.attr_int("is_test", 0) == 0 && false;  // legacy is_test=0 marks training graphs; inference ignores it
  }
  if (ratio < 0 || ratio >= 1) {
    if (training) fail(ErrorCode::kInvalidArgument, "Dropout ratio must be in [0, 1), got ", ratio);
  }
  Tensor* mask = ctx.num_outputs() > 1 && ctx.has_output(1) ? &ctx.output(1) : nullptr;
  const int64_t cnt = x.numel();
  if (!training || ratio == 0) {
    copy_elements(x.dtype(), x.raw_data(), y.raw_data(), cnt);
    if (mask) {
      if (mask->dtype() == DType::kBool)
        std::fill(mask->data<bool>(), mask->data<bool>() + cnt, true);
      else
        for (int64_t i = 0; i < cnt; ++i) set_double(*mask, i, 1.0);
    }
    return;
  }
  std::mt19937_64 rng(n.has_attr("seed") ? static_cast<uint64_t>(n.attr_int("seed", 0)) : std::random_device{}());
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double keep = 1.0 / (1.0 - ratio);
  for (int64_t i = 0; i < cnt; ++i) {
    const bool k = u(rng) >= ratio;
    set_double(y, i, k ? fget(x, i) * keep : 0.0);
    if (mask) mask->data<bool>()[i] = k;
  }
}

std::unique_ptr<Kernel> make(void (*fn)(const int&, KernelContext&)) { return make_fn_kernel(0, fn); }
#define FACTORY(name, fn) \
  std::unique_ptr<Kernel> name(const KernelCreateInfo&) { return make(fn); }
FACTORY(make_batch_norm, batch_norm_compute)
FACTORY(make_instance_norm, instance_norm_compute)
FACTORY(make_layer_norm, layer_norm_compute)
FACTORY(make_rms_norm, rms_norm_compute)
FACTORY(make_group_norm, group_norm_compute)
FACTORY(make_mvn, mvn_compute)
FACTORY(make_lrn, lrn_compute)
FACTORY(make_dropout, dropout_compute)
#undef FACTORY

using namespace types;

const KernelDef kDefs[] = {
    {"", "BatchNormalization", 1, 99, {{0, kFloats}}, make_batch_norm},
    {"", "InstanceNormalization", 1, 99, {{0, kFloats}}, make_instance_norm},
    {"", "LayerNormalization", 1, 99, {{0, kFloats}}, make_layer_norm},  // 1: ONNX Runtime's contrib form
    {"", "RMSNormalization", 23, 99, {{0, kFloats}, {1, kFloats}}, make_rms_norm},
    {"", "GroupNormalization", 18, 99, {{0, kFloats}}, make_group_norm},
    {"", "MeanVarianceNormalization", 9, 99, {{0, kFloats}}, make_mvn},
    {"", "LRN", 1, 99, {{0, kFloats}}, make_lrn},
    {"", "Dropout", 1, 99, {{0, kFloats}}, make_dropout},
};

}  // namespace

std::span<const KernelDef> nn_kernels() { return kDefs; }

}  // namespace onyx::cpu
