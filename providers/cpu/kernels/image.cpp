// CPU kernels: image family (Resize, Upsample, GridSample, RoiAlign, NonMaxSuppression,
// MaxUnpool, AffineGrid).
//
// Interpolation on integer (and bool) tensors is computed in floating point (double for 32- and
// 64-bit integers, float otherwise) and converted back rounding half away from zero and
// saturating to the type's range.
#include "ops/image.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {
namespace {

// ---------------------------------------------------------------------------------------------
// Value conversion to and from the working type.

template <class T>
using Work =
    std::conditional_t<std::is_same_v<T, double> || std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t> ||
                           std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>,
                       double, float>;

template <class W, class T>
inline W to_work(T v) {
  if constexpr (std::is_same_v<T, bool>)
    return v ? W(1) : W(0);
  else if constexpr (is_half_v<T>)
    return static_cast<W>(static_cast<float>(v));
  else
    return static_cast<W>(v);
}

template <class T, class W>
inline T from_work(W v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else if constexpr (is_half_v<T>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v >= W(0.5) || v <= W(-0.5);
  } else {
    if (std::isnan(v)) return T(0);
    const W r = std::round(v);
    if (r <= static_cast<W>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (r >= static_cast<W>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(r);
  }
}

/// Row-major strides of a shape.
Shape strides_of(const Shape& s) {
  Shape st = Shape::filled(s.size(), 1);
  for (size_t k = s.size(); k-- > 1;) st[k - 1] = st[k] * s[k];
  return st;
}

using namespace types;
constexpr TypeMask kComplex = type_mask({DType::kComplex64, DType::kComplex128});

// =============================================================================================
// Resize / Upsample
// =============================================================================================

/// Rows of a pass along the innermost axis; NT > 0 fixes the number of taps at compile time.
template <int NT, class W>
void resize_rows(const W* src, W* dst, int64_t r0, int64_t r1, const ResizeAxisPlan<W>& p, W ev) {
  const int64_t in = p.in, out = p.out;
  const int T = NT > 0 ? NT : p.taps;
  const int64_t* idx = p.idx.data();
  const W* wt = p.w.data();
  const uint8_t* ex = p.extrap.data();
  for (int64_t r = r0; r < r1; ++r) {
    const W* s = src + r * in;
    W* d = dst + r * out;
    for (int64_t o = 0; o < out; ++o) {
      if (ex[o]) {
        d[o] = ev;
        continue;
      }
      const int64_t* ix = idx + o * T;
      const W* w = wt + o * T;
      W acc = 0;
      for (int k = 0; k < T; ++k) acc += w[k] * s[ix[k]];
      d[o] = acc;
    }
  }
}

/// One separable pass: resizes the middle axis of src viewed as [outer, p.in, inner] into dst
/// [outer, p.out, inner].
template <class W>
void resize_pass(const W* src, W* dst, int64_t outer, int64_t inner, const ResizeAxisPlan<W>& p, W ev, ThreadPool& pool) {
  const int64_t in = p.in, out = p.out;
  const int T = p.taps;
  const int64_t* idx = p.idx.data();
  const W* wt = p.w.data();
  const uint8_t* ex = p.extrap.data();
  if (inner == 1) {
    parallel_range(pool, outer, out * T, [&](int64_t b, int64_t e) {
      if (T == 2)
        resize_rows<2>(src, dst, b, e, p, ev);
      else if (T == 4)
        resize_rows<4>(src, dst, b, e, p, ev);
      else
        resize_rows<0>(src, dst, b, e, p, ev);
    });
    return;
  }
  parallel_range(pool, outer * out, inner * T, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t oo = r / out, o = r % out;
      W* d = dst + r * inner;
      if (ex[o]) {
        std::fill(d, d + inner, ev);
        continue;
      }
      const int64_t* ix = idx + o * T;
      const W* w = wt + o * T;
      const W* base = src + oo * in * inner;
      if (T == 2) {
        const W* s0 = base + ix[0] * inner;
        const W* s1 = base + ix[1] * inner;
        const W w0 = w[0], w1 = w[1];
        for (int64_t i = 0; i < inner; ++i) d[i] = w0 * s0[i] + w1 * s1[i];
        continue;
      }
      {
        const W* s = base + ix[0] * inner;
        const W w0 = w[0];
        for (int64_t i = 0; i < inner; ++i) d[i] = w0 * s[i];
      }
      for (int k = 1; k < T; ++k) {
        const W wk = w[k];
        if (wk == W(0)) continue;
        const W* s = base + ix[k] * inner;
        for (int64_t i = 0; i < inner; ++i) d[i] += wk * s[i];
      }
    }
  });
}

/// Nearest-neighbour gather with per-axis index tables (no arithmetic: any element type).
template <class T>
void nearest_gather(const T* src, T* dst, const Shape& in_shape, const Shape& out_shape,
                    const std::vector<ResizeAxisPlan<double>>& plans, const T& ev, ThreadPool& pool) {
  const size_t r = out_shape.size();
  const Shape ist = strides_of(in_shape);
  // Offset tables (-1 = extrapolate).
  std::vector<std::vector<int64_t>> off(r);
  for (size_t k = 0; k < r; ++k) {
    off[k].resize(static_cast<size_t>(out_shape[k]));
    for (int64_t o = 0; o < out_shape[k]; ++o) off[k][o] = plans[k].extrap[o] ? -1 : plans[k].idx[o] * ist[k];
  }
  const int64_t inner = out_shape[r - 1];
  const int64_t rows = out_shape.numel() / inner;
  const int64_t* last = off[r - 1].data();
  const bool last_ex = std::any_of(off[r - 1].begin(), off[r - 1].end(), [](int64_t v) { return v < 0; });
  parallel_range(pool, rows, inner, [&](int64_t b, int64_t e) {
    int64_t pos[kMaxRank] = {};
    int64_t rem = b;
    for (size_t k = r - 1; k-- > 0;) {
      pos[k] = rem % out_shape[k];
      rem /= out_shape[k];
    }
    for (int64_t row = b; row < e; ++row) {
      int64_t base = 0;
      bool outside = false;
      for (size_t k = 0; k + 1 < r; ++k) {
        const int64_t v = off[k][pos[k]];
        if (v < 0) outside = true;
        base += v;
      }
      T* d = dst + row * inner;
      if (outside) {
        for (int64_t j = 0; j < inner; ++j) d[j] = ev;
      } else if (!last_ex) {
        const T* sb = src + base;
        for (int64_t j = 0; j < inner; ++j) d[j] = sb[last[j]];
      } else {
        for (int64_t j = 0; j < inner; ++j) d[j] = last[j] < 0 ? ev : src[base + last[j]];
      }
      for (size_t k = r - 1; k-- > 0;) {
        if (++pos[k] < out_shape[k]) break;
        pos[k] = 0;
      }
    }
  });
}

struct ResizeState {
  ResizeAttrs a;
};

/// Interpolating resize (linear / cubic) of a numeric tensor, by separable passes.
template <class T>
void resize_interp(const ResizeState& st, const Tensor& X, Tensor& Y, const std::vector<double>& scale,
                   const std::vector<double>& roi_s, const std::vector<double>& roi_e, ThreadPool& pool,
                   const char* label) {
  using W = Work<T>;
  const Shape& in = X.shape();
  const Shape& out = Y.shape();
  const size_t r = in.size();
  std::vector<ResizeAxisPlan<W>> plans(r);
  std::vector<size_t> active;
  for (size_t k = 0; k < r; ++k) {
    build_resize_axis(st.a, plans[k], in[k], out[k], scale[k], roi_s[k], roi_e[k], label);
    if (!plans[k].identity) active.push_back(k);
  }
  const T* src = X.data<T>();
  T* dst = Y.data<T>();
  if (active.empty()) {
    std::copy(src, src + X.numel(), dst);
    return;
  }
  // Pass order: most-shrinking axes first (later passes then work on less data); with few active
  // axes, the order with the least estimated work (a pass along the innermost axis gathers, so
  // it counts double).
  std::stable_sort(active.begin(), active.end(), [&](size_t p, size_t q) {
    return static_cast<double>(out[p]) * static_cast<double>(in[q]) <
           static_cast<double>(out[q]) * static_cast<double>(in[p]);
  });
  if (active.size() > 1 && active.size() <= 4) {
    auto cost = [&](const std::vector<size_t>& order) {
      Shape cs = in;
      double c = 0;
      for (size_t k : order) {
        cs[k] = out[k];
        c += static_cast<double>(cs.numel()) * plans[k].taps * (k + 1 == r ? 2.0 : 1.0);
      }
      return c;
    };
    std::vector<size_t> order = active;
    std::sort(order.begin(), order.end());
    double best = cost(active);
    do {
      const double c = cost(order);
      if (c < best) {
        best = c;
        active = order;
      }
    } while (std::next_permutation(order.begin(), order.end()));
  }
  const W ev = static_cast<W>(st.a.extrapolation);
  constexpr bool same = std::is_same_v<T, W>;
  std::unique_ptr<W[]> conv, buf[2];
  const W* cur;
  if constexpr (same) {
    cur = src;
  } else {
    conv.reset(new W[static_cast<size_t>(X.numel())]);
    for (int64_t i = 0; i < X.numel(); ++i) conv[i] = to_work<W>(src[i]);
    cur = conv.get();
  }
  Shape cs = in;
  for (size_t p = 0; p < active.size(); ++p) {
    const size_t k = active[p];
    int64_t outer = 1, inner = 1;
    for (size_t j = 0; j < k; ++j) outer *= cs[j];
    for (size_t j = k + 1; j < r; ++j) inner *= cs[j];
    cs[k] = out[k];
    W* next;
    if (same && p + 1 == active.size()) {
      next = reinterpret_cast<W*>(dst);
    } else {
      buf[p % 2].reset(new W[static_cast<size_t>(cs.numel())]);  // every element is written
      next = buf[p % 2].get();
    }
    resize_pass<W>(cur, next, outer, inner, plans[k], ev, pool);
    cur = next;
  }
  if constexpr (!same) {
    const int64_t n = Y.numel();
    for (int64_t i = 0; i < n; ++i) dst[i] = from_work<T>(cur[i]);
  }
}

void resize_compute(const ResizeState& st, KernelContext& ctx) {
  const Node& node = ctx.node();
  const ResizeAttrs& a = st.a;
  const Tensor& X = ctx.input(0);
  const size_t r = X.rank();
  // Parameters.
  const float* scales = nullptr;
  const int64_t* sizes = nullptr;
  int64_t ns = 0, nz = 0;
  if (a.upsample && a.scales_input < 0) {
    scales = a.attr_scales.data();
    ns = static_cast<int64_t>(a.attr_scales.size());
  } else {
    if (const Tensor* s = ctx.optional_input(a.scales_input); s && s->numel() > 0) {
      if (s->dtype() != DType::kFloat)
        fail(ErrorCode::kInvalidArgument, "'scales' must be float, got ", dtype_name(s->dtype()));
      scales = s->data<float>();
      ns = s->numel();
    }
    if (a.sizes_input >= 0)
      if (const Tensor* s = ctx.optional_input(a.sizes_input); s && s->numel() > 0) {
        if (s->dtype() != DType::kInt64)
          fail(ErrorCode::kInvalidArgument, "'sizes' must be int64, got ", dtype_name(s->dtype()));
        sizes = s->data<int64_t>();
        nz = s->numel();
      }
  }
  Shape out_shape;
  std::vector<double> axis_scale;
  resize_geometry(node, a, X.shape(), scales, ns, sizes, nz, out_shape, axis_scale);
  Tensor& Y = ctx.allocate_output(0, X.dtype(), out_shape);
  if (Y.numel() == 0) return;
  if (r == 0) {
    copy_elements(X.dtype(), X.raw_data(), Y.raw_data(), 1);
    return;
  }
  if (r > kMaxRank) fail(ErrorCode::kNotImplemented, "Resize supports rank <= ", kMaxRank);
  std::vector<double> roi_s(r, 0.0), roi_e(r, 1.0);
  if (a.coord == ResizeCoord::kTfCropAndResize) {
    std::vector<double> roi;
    if (const Tensor* t = ctx.optional_input(a.roi_input))
      for (int64_t k = 0; k < t->numel(); ++k) roi.push_back(t->element_as_double(k));
    resize_roi(node, a, r, roi, roi_s, roi_e);
  }
  const std::string label = node.label();
  if (a.mode == ResizeMode::kNearest) {
    std::vector<ResizeAxisPlan<double>> plans(r);
    for (size_t k = 0; k < r; ++k)
      build_resize_axis(a, plans[k], X.dim(k), out_shape[k], axis_scale[k], roi_s[k], roi_e[k], label.c_str());
    const DType dt = X.dtype();
    if (dt == DType::kString) {
      nearest_gather<std::string>(X.data<std::string>(), Y.data<std::string>(), X.shape(), out_shape, plans,
                                  std::string(), ctx.pool());
    } else if (mask_has(kComplex, dt)) {
      dispatch_bytes(dt, [&]<class U>() {
        nearest_gather<U>(static_cast<const U*>(X.raw_data()), static_cast<U*>(Y.raw_data()), X.shape(), out_shape,
                          plans, U{}, ctx.pool());
      });
    } else {
      dispatch_numeric(
          dt,
          [&]<class T>() {
            nearest_gather<T>(X.data<T>(), Y.data<T>(), X.shape(), out_shape, plans,
                              from_work<T>(static_cast<double>(a.extrapolation)), ctx.pool());
          },
          "Resize");
    }
    return;
  }
  if (X.dtype() == DType::kString || mask_has(kComplex, X.dtype()))
    fail(ErrorCode::kInvalidArgument, "mode '", node.attr_string("mode"), "' cannot interpolate ",
         dtype_name(X.dtype()), " values (only 'nearest' can)");
  dispatch_numeric(
      X.dtype(), [&]<class T>() { resize_interp<T>(st, X, Y, axis_scale, roi_s, roi_e, ctx.pool(), label.c_str()); },
      "Resize");
}

std::unique_ptr<Kernel> make_resize(const KernelCreateInfo& info) {
  return make_fn_kernel(ResizeState{parse_resize_attrs(info.node)}, resize_compute);
}

// =============================================================================================
// GridSample
// =============================================================================================

/// Reflects x into [lo, hi] (repeatedly, as a mirror at each border).
double reflect(double x, double lo, double hi) {
  const double rng = hi - lo;
  if (!(rng > 0.0)) return lo;
  if (x >= lo && x <= hi) return x;
  const double dx = x < lo ? lo - x : x - hi;
  const double n = std::floor(dx / rng);
  const double rem = dx - n * rng;
  const bool even = std::fmod(n, 2.0) == 0.0;
  if (x < lo) return even ? lo + rem : hi - rem;
  return even ? hi - rem : lo + rem;
}

struct GridState {
  GridSampleAttrs a;
};

/// Taps of one spatial dim for one sampling point: input index (or -1: contributes zero) and weight.
struct DimTaps {
  int n = 0;
  int64_t idx[4];
  double w[4];
};

void grid_dim_taps(const GridSampleAttrs& a, double g, int64_t d, DimTaps& t) {
  const double lo = a.align_corners ? 0.0 : -0.5;
  const double hi = a.align_corners ? static_cast<double>(d - 1) : static_cast<double>(d) - 0.5;
  double x =
      a.align_corners ? (g + 1.0) / 2.0 * static_cast<double>(d - 1) : ((g + 1.0) * static_cast<double>(d) - 1.0) / 2.0;
  const int n = a.mode == GridMode::kNearest ? 1 : a.mode == GridMode::kLinear ? 2 : 4;
  t.n = n;
  auto all_zero = [&] {
    for (int k = 0; k < n; ++k) {
      t.idx[k] = -1;
      t.w[k] = 0.0;
    }
  };
  if (std::isnan(x) || (std::isinf(x) && a.padding != GridPadding::kBorder)) return all_zero();
  if (a.mode == GridMode::kNearest) x = std::nearbyint(x);
  if (x < lo || x > hi) {
    if (a.padding == GridPadding::kBorder)
      x = std::clamp(x, 0.0, static_cast<double>(d - 1));
    else if (a.padding == GridPadding::kReflection)
      x = reflect(x, lo, hi);
  }
  // Far outside (zeros padding): every tap is outside anyway; keep the integers small.
  x = std::clamp(x, -8.0, static_cast<double>(d) + 8.0);
  auto pixel = [&](int64_t i) -> int64_t {
    switch (a.padding) {
      case GridPadding::kZeros:
        return (i >= 0 && i < d) ? i : -1;
      case GridPadding::kBorder:
        return std::clamp<int64_t>(i, 0, d - 1);
      case GridPadding::kReflection:
        return std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<double>(i), lo, hi)), 0, d - 1);
    }
    return -1;
  };
  if (a.mode == GridMode::kNearest) {
    t.idx[0] = pixel(static_cast<int64_t>(x));  // x is integral here
    t.w[0] = 1.0;
    return;
  }
  const double f = std::floor(x), fr = x - f;
  const int64_t x0 = static_cast<int64_t>(f);
  if (a.mode == GridMode::kLinear) {
    t.idx[0] = pixel(x0);
    t.idx[1] = pixel(x0 + 1);
    t.w[0] = 1.0 - fr;
    t.w[1] = fr;
  } else {
    constexpr double A = -0.75;
    for (int k = 0; k < 4; ++k) t.idx[k] = pixel(x0 - 1 + k);
    t.w[0] = cubic_weight(fr + 1.0, A);
    t.w[1] = cubic_weight(fr, A);
    t.w[2] = cubic_weight(1.0 - fr, A);
    t.w[3] = cubic_weight(2.0 - fr, A);
  }
}

template <class T, class G>
void grid_sample_typed(const GridSampleAttrs& a, const Tensor& X, const Tensor& Gr, Tensor& Y, ThreadPool& pool) {
  using W = std::conditional_t<std::is_same_v<T, std::string>, double, Work<T>>;
  const size_t r = X.rank() - 2;
  const int64_t N = X.dim(0), C = X.dim(1);
  Shape dims, xst;
  int64_t S = 1, P = 1;
  for (size_t k = 0; k < r; ++k) {
    dims.push_back(X.dim(k + 2));
    S *= X.dim(k + 2);
    P *= Gr.dim(k + 1);
  }
  xst = strides_of(dims);
  const T* x = X.data<T>();
  const G* g = Gr.data<G>();
  T* y = Y.data<T>();
  const int per = a.mode == GridMode::kNearest ? 1 : a.mode == GridMode::kLinear ? 2 : 4;
  int64_t combos = 1;
  for (size_t k = 0; k < r; ++k) combos = checked_mul(combos, per, "GridSample taps");
  if (combos > (int64_t(1) << 20)) fail(ErrorCode::kNotImplemented, "GridSample: too many spatial dims (", r, ")");
  parallel_range(pool, N * P, combos * C, [&](int64_t b, int64_t e) {
    std::vector<int64_t> off(static_cast<size_t>(combos));
    std::vector<W> wt(static_cast<size_t>(combos));
    std::vector<DimTaps> taps(r);
    for (int64_t q = b; q < e; ++q) {
      const int64_t n = q / P, p = q % P;
      const G* gp = g + q * static_cast<int64_t>(r);
      // The grid lists coordinates innermost dim first.
      for (size_t k = 0; k < r; ++k) {
        double gv;
        if constexpr (is_half_v<G>)
          gv = static_cast<float>(gp[r - 1 - k]);
        else
          gv = static_cast<double>(gp[r - 1 - k]);
        grid_dim_taps(a, gv, dims[k], taps[k]);
      }
      int64_t m = 0;
      for (int64_t c = 0; c < combos; ++c) {
        int64_t rem = c, o = 0;
        double w = 1.0;
        bool valid = true;
        for (size_t k = r; k-- > 0;) {
          const int t = static_cast<int>(rem % per);
          rem /= per;
          const int64_t i = taps[k].idx[t];
          if (i < 0) {
            valid = false;
            break;
          }
          o += i * xst[k];
          w *= taps[k].w[t];
        }
        if (!valid || w == 0.0) continue;
        off[m] = o;
        wt[m] = static_cast<W>(w);
        ++m;
      }
      for (int64_t c = 0; c < C; ++c) {
        const T* base = x + (n * C + c) * S;
        T& out = y[(n * C + c) * P + p];
        if constexpr (std::is_same_v<T, std::string>) {
          out = m > 0 ? base[off[0]] : std::string();
        } else {
          W acc = 0;
          for (int64_t j = 0; j < m; ++j) acc += wt[j] * to_work<W>(base[off[j]]);
          out = from_work<T>(acc);
        }
      }
    }
  });
}

void grid_sample_compute(const GridState& st, KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& G = ctx.input(1);
  const size_t rank = X.rank();
  if (rank < 3) fail(ErrorCode::kInvalidArgument, "X must have rank >= 3, got ", X.shape().to_string());
  if (ctx.node().opset < 20 && rank != 4)
    fail(ErrorCode::kInvalidArgument, "GridSample-16 takes 4-D input, got ", X.shape().to_string());
  if (G.rank() != rank || G.dim(0) != X.dim(0) || G.dim(rank - 1) != static_cast<int64_t>(rank - 2))
    fail(ErrorCode::kInvalidArgument, "grid has shape ", G.shape().to_string(), "; expected [", X.dim(0),
         ", ...spatial..., ", rank - 2, "] for X of shape ", X.shape().to_string());
  Shape out{X.dim(0), X.dim(1)};
  for (size_t k = 1; k + 1 < rank; ++k) out.push_back(G.dim(k));
  Tensor& Y = ctx.allocate_output(0, X.dtype(), out);
  if (Y.numel() == 0) return;
  for (size_t k = 2; k < rank; ++k)
    if (X.dim(k) == 0)
      fail(ErrorCode::kInvalidArgument, "cannot sample X of shape ", X.shape().to_string(), " (empty spatial dim)");
  if (X.dtype() == DType::kString && st.a.mode != GridMode::kNearest)
    fail(ErrorCode::kInvalidArgument, "only mode 'nearest' can sample strings");
  auto run = [&]<class G2>() {
    if (X.dtype() == DType::kString) {
      grid_sample_typed<std::string, G2>(st.a, X, G, Y, ctx.pool());
      return;
    }
    dispatch_numeric(
        X.dtype(), [&]<class T>() { grid_sample_typed<T, G2>(st.a, X, G, Y, ctx.pool()); }, "GridSample");
  };
  switch (G.dtype()) {
    case DType::kFloat:
      run.template operator()<float>();
      break;
    case DType::kDouble:
      run.template operator()<double>();
      break;
    case DType::kFloat16:
      run.template operator()<Float16>();
      break;
    case DType::kBFloat16:
      run.template operator()<BFloat16>();
      break;
    default:
      unsupported_dtype("GridSample grid", G.dtype());
  }
}

std::unique_ptr<Kernel> make_grid_sample(const KernelCreateInfo& info) {
  return make_fn_kernel(GridState{parse_grid_sample_attrs(info.node)}, grid_sample_compute);
}

// =============================================================================================
// RoiAlign
// =============================================================================================

struct RoiAlignState {
  bool max_mode = false;
  bool half_pixel = false;
  int64_t out_h = 1, out_w = 1;
  int64_t sampling_ratio = 0;
  float spatial_scale = 1.0f;
};

std::unique_ptr<Kernel> make_roi_align(const KernelCreateInfo& info) {
  const Node& n = info.node;
  RoiAlignState s;
  s.max_mode = n.attr_string("mode", "avg") == "max";
  s.half_pixel = n.opset >= 16 && n.attr_string("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  s.out_h = n.attr_int("output_height", 1);
  s.out_w = n.attr_int("output_width", 1);
  s.sampling_ratio = n.attr_int("sampling_ratio", 0);
  s.spatial_scale = n.attr_float("spatial_scale", 1.0f);
  if (s.out_h <= 0 || s.out_w <= 0 || s.sampling_ratio < 0)
    fail(ErrorCode::kInvalidGraph, n.label(), ": invalid output_height / output_width / sampling_ratio");
  return make_fn_kernel(
      s, +[](const RoiAlignState& st, KernelContext& ctx) {
        const Tensor& X = ctx.input(0);
        const Tensor& rois = ctx.input(1);
        const Tensor& bi = ctx.input(2);
        if (X.rank() != 4) fail(ErrorCode::kInvalidArgument, "X must be 4-D, got ", X.shape().to_string());
        if (rois.rank() != 2 || rois.dim(1) != 4)
          fail(ErrorCode::kInvalidArgument, "rois must have shape [num_rois, 4], got ", rois.shape().to_string());
        if (bi.rank() != 1 || bi.dim(0) != rois.dim(0))
          fail(ErrorCode::kInvalidArgument, "batch_indices must have shape [", rois.dim(0), "], got ",
               bi.shape().to_string());
        if (rois.dtype() != X.dtype())
          fail(ErrorCode::kInvalidArgument, "rois has type ", dtype_name(rois.dtype()), " but X has ",
               dtype_name(X.dtype()));
        const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), Wd = X.dim(3), R = rois.dim(0);
        const int64_t PH = st.out_h, PW = st.out_w;
        Tensor& Y = ctx.allocate_output(0, X.dtype(), Shape{R, C, PH, PW});
        if (Y.numel() == 0) return;
        if (H == 0 || Wd == 0) fail(ErrorCode::kInvalidArgument, "cannot pool from X of shape ", X.shape().to_string());
        const int64_t* bidx = bi.data<int64_t>();
        for (int64_t i = 0; i < R; ++i)
          if (bidx[i] < 0 || bidx[i] >= N)
            fail(ErrorCode::kRuntime, "batch_indices[", i, "] = ", bidx[i], " is out of range [0, ", N - 1, "]");
        dispatch_float(
            X.dtype(),
            [&]<class T>() {
              using A = Acc<T>;
              const T* x = X.data<T>();
              const T* rp = rois.data<T>();
              T* y = Y.data<T>();
              struct Sample {
                int64_t p[4];
                A w[4];
              };
              std::vector<Sample> pre;
              for (int64_t ri = 0; ri < R; ++ri) {
                const double off = st.half_pixel ? 0.5 : 0.0;
                double c4[4];
                for (int k = 0; k < 4; ++k) {
                  c4[k] = static_cast<double>(to_acc(rp[ri * 4 + k])) * st.spatial_scale - off;
                  if (!std::isfinite(c4[k])) fail(ErrorCode::kRuntime, "rois[", ri, "] has a non-finite coordinate");
                }
                const double sw = c4[0], sh = c4[1];
                double rw = c4[2] - c4[0], rh = c4[3] - c4[1];
                if (!st.half_pixel) {
                  rw = std::max(rw, 1.0);
                  rh = std::max(rh, 1.0);
                }
                const double bh = rh / static_cast<double>(PH), bw = rw / static_cast<double>(PW);
                const double gh_d = st.sampling_ratio > 0 ? static_cast<double>(st.sampling_ratio)
                                                          : std::ceil(rh / static_cast<double>(PH));
                const double gw_d = st.sampling_ratio > 0 ? static_cast<double>(st.sampling_ratio)
                                                          : std::ceil(rw / static_cast<double>(PW));
                if (!(gh_d * gw_d * static_cast<double>(PH * PW) <= 1.0e8))
                  fail(ErrorCode::kRuntime, "rois[", ri, "] needs too many samples (", gh_d * gw_d, " per bin)");
                const int64_t gh = std::max<int64_t>(0, static_cast<int64_t>(gh_d));
                const int64_t gw = std::max<int64_t>(0, static_cast<int64_t>(gw_d));
                const A count = static_cast<A>(std::max<int64_t>(gh * gw, 1));
                pre.assign(static_cast<size_t>(PH * PW * gh * gw), Sample{});
                size_t pi = 0;
                for (int64_t ph = 0; ph < PH; ++ph)
                  for (int64_t pw = 0; pw < PW; ++pw)
                    for (int64_t iy = 0; iy < gh; ++iy) {
                      const double yy = sh + static_cast<double>(ph) * bh +
                                        (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
                      for (int64_t ix = 0; ix < gw; ++ix, ++pi) {
                        double xx = sw + static_cast<double>(pw) * bw +
                                    (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
                        double yv = yy;
                        Sample& s = pre[pi];
                        if (yv < -1.0 || yv > static_cast<double>(H) || xx < -1.0 || xx > static_cast<double>(Wd))
                          continue;  // zero
                        yv = std::max(yv, 0.0);
                        xx = std::max(xx, 0.0);
                        int64_t yl = static_cast<int64_t>(yv), xl = static_cast<int64_t>(xx), yh, xh;
                        if (yl >= H - 1) {
                          yh = yl = H - 1;
                          yv = static_cast<double>(yl);
                        } else {
                          yh = yl + 1;
                        }
                        if (xl >= Wd - 1) {
                          xh = xl = Wd - 1;
                          xx = static_cast<double>(xl);
                        } else {
                          xh = xl + 1;
                        }
                        const double ly = yv - static_cast<double>(yl), lx = xx - static_cast<double>(xl);
                        const double hy = 1.0 - ly, hx = 1.0 - lx;
                        s.p[0] = yl * Wd + xl;
                        s.p[1] = yl * Wd + xh;
                        s.p[2] = yh * Wd + xl;
                        s.p[3] = yh * Wd + xh;
                        s.w[0] = static_cast<A>(hy * hx);
                        s.w[1] = static_cast<A>(hy * lx);
                        s.w[2] = static_cast<A>(ly * hx);
                        s.w[3] = static_cast<A>(ly * lx);
                      }
                    }
                const int64_t per_bin = gh * gw;
                const T* xb = x + bidx[ri] * C * H * Wd;
                T* yb = y + ri * C * PH * PW;
                parallel_range(ctx.pool(), C, PH * PW * std::max<int64_t>(per_bin, 1) * 4, [&](int64_t c0, int64_t c1) {
                  for (int64_t c = c0; c < c1; ++c) {
                    const T* xc = xb + c * H * Wd;
                    T* yc = yb + c * PH * PW;
                    const Sample* sp = pre.data();
                    for (int64_t bin = 0; bin < PH * PW; ++bin) {
                      A v = 0;
                      if (!st.max_mode) {
                        for (int64_t k = 0; k < per_bin; ++k, ++sp)
                          v += sp->w[0] * to_acc(xc[sp->p[0]]) + sp->w[1] * to_acc(xc[sp->p[1]]) +
                               sp->w[2] * to_acc(xc[sp->p[2]]) + sp->w[3] * to_acc(xc[sp->p[3]]);
                        v /= count;
                      } else {
                        for (int64_t k = 0; k < per_bin; ++k, ++sp) {
                          const A m =
                              std::max(std::max(sp->w[0] * to_acc(xc[sp->p[0]]), sp->w[1] * to_acc(xc[sp->p[1]])),
                                       std::max(sp->w[2] * to_acc(xc[sp->p[2]]), sp->w[3] * to_acc(xc[sp->p[3]])));
                          v = k == 0 ? m : std::max(v, m);
                        }
                      }
                      yc[bin] = from_acc<T>(v);
                    }
                  }
                });
              }
            },
            "RoiAlign");
      });
}

// =============================================================================================
// NonMaxSuppression
// =============================================================================================

struct NmsState {
  bool center = false;
};

void nms_compute(const NmsState& st, KernelContext& ctx) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (boxes.rank() != 3 || boxes.dim(2) != 4)
    fail(ErrorCode::kInvalidArgument, "boxes must have shape [batches, boxes, 4], got ", boxes.shape().to_string());
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    fail(ErrorCode::kInvalidArgument, "scores must have shape [", boxes.dim(0), ", classes, ", boxes.dim(1), "], got ",
         scores.shape().to_string());
  int64_t max_out = 0;
  if (const Tensor* t = ctx.optional_input(2); t && t->numel() > 0) max_out = int_at(*t, 0);
  float iou_thr = 0.0f;
  if (const Tensor* t = ctx.optional_input(3); t && t->numel() > 0) iou_thr = t->data<float>()[0];
  bool has_score_thr = false;
  float score_thr = 0.0f;
  if (const Tensor* t = ctx.optional_input(4); t && t->numel() > 0) {
    has_score_thr = true;
    score_thr = t->data<float>()[0];
  }
  if (!(iou_thr >= 0.0f && iou_thr <= 1.0f))
    fail(ErrorCode::kInvalidArgument, "iou_threshold must be in [0, 1], got ", iou_thr);
  const int64_t B = boxes.dim(0), S = boxes.dim(1), K = scores.dim(1);
  const float* bx = boxes.data<float>();
  const float* sc = scores.data<float>();
  std::vector<int64_t> result;  // triplets
  if (max_out > 0 && S > 0) {
    // Corners (y1, x1, y2, x2 with y1 <= y2, x1 <= x2) and areas of every box.
    std::vector<float> corner(static_cast<size_t>(B * S * 4)), area(static_cast<size_t>(B * S));
    for (int64_t i = 0; i < B * S; ++i) {
      const float* p = bx + i * 4;
      float y1, x1, y2, x2;
      if (st.center) {
        x1 = p[0] - p[2] / 2.0f;
        x2 = p[0] + p[2] / 2.0f;
        y1 = p[1] - p[3] / 2.0f;
        y2 = p[1] + p[3] / 2.0f;
      } else {
        y1 = std::min(p[0], p[2]);
        y2 = std::max(p[0], p[2]);
        x1 = std::min(p[1], p[3]);
        x2 = std::max(p[1], p[3]);
      }
      float* c = &corner[i * 4];
      c[0] = std::min(y1, y2);
      c[1] = std::min(x1, x2);
      c[2] = std::max(y1, y2);
      c[3] = std::max(x1, x2);
      area[i] = (c[2] - c[0]) * (c[3] - c[1]);
    }
    auto suppress = [&](int64_t a, int64_t b) {
      const float* p = &corner[a * 4];
      const float* q = &corner[b * 4];
      const float aa = area[a], ab = area[b];
      if (!(aa > 0.0f) || !(ab > 0.0f)) return false;
      const float ih = std::min(p[2], q[2]) - std::max(p[0], q[0]);
      const float iw = std::min(p[3], q[3]) - std::max(p[1], q[1]);
      if (!(ih > 0.0f) || !(iw > 0.0f)) return false;
      const float inter = ih * iw;
      const float uni = aa + ab - inter;
      if (!(uni > 0.0f)) return false;
      return inter / uni > iou_thr;
    };
    std::vector<int64_t> cand, kept;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < K; ++k) {
        const float* s = sc + (b * K + k) * S;
        cand.clear();
        for (int64_t i = 0; i < S; ++i)
          if (!std::isnan(s[i]) && (!has_score_thr || s[i] > score_thr)) cand.push_back(i);
        std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) { return s[p] > s[q]; });
        kept.clear();
        for (int64_t i : cand) {
          if (static_cast<int64_t>(kept.size()) >= max_out) break;
          bool drop = false;
          for (int64_t j : kept)
            if (suppress(b * S + i, b * S + j)) {
              drop = true;
              break;
            }
          if (drop) continue;
          kept.push_back(i);
          result.push_back(b);
          result.push_back(k);
          result.push_back(i);
        }
      }
  }
  const int64_t n = static_cast<int64_t>(result.size() / 3);
  Tensor& Y = ctx.allocate_output(0, DType::kInt64, Shape{n, 3});
  std::copy(result.begin(), result.end(), Y.data<int64_t>());
}

std::unique_ptr<Kernel> make_nms(const KernelCreateInfo& info) {
  const int64_t c = info.node.attr_int("center_point_box", 0);
  if (c != 0 && c != 1) fail(ErrorCode::kInvalidGraph, info.node.label(), ": center_point_box must be 0 or 1");
  return make_fn_kernel(NmsState{c == 1}, nms_compute);
}

// =============================================================================================
// MaxUnpool
// =============================================================================================

void max_unpool_compute(const int&, KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& X = ctx.input(0);
  const Tensor& I = ctx.input(1);
  if (I.shape() != X.shape())
    fail(ErrorCode::kInvalidArgument, "I has shape ", I.shape().to_string(), " but X has ", X.shape().to_string());
  Shape out;
  if (const Tensor* os = ctx.optional_input(2)) {
    out = read_dims(*os, "output_shape");
    if (out.size() != X.rank())
      fail(ErrorCode::kInvalidArgument, "output_shape has ", out.size(), " entries but X has rank ", X.rank());
    for (int64_t d : out)
      if (d < 0) fail(ErrorCode::kInvalidArgument, "output_shape ", out.to_string(), " has a negative dim");
  } else {
    out = maxunpool_default_shape(node, X.shape());
  }
  Tensor& Y = ctx.allocate_output(0, X.dtype(), out);
  const int64_t total = Y.numel();
  std::memset(Y.raw_data(), 0, Y.nbytes());
  const int64_t* ix = I.data<int64_t>();
  const int64_t n = X.numel();
  // Indices are flat positions in the whole output tensor (as MaxPool's Indices are in its
  // input), so MaxUnpool inverts MaxPool when output_shape is MaxPool's input shape; the spec
  // says output_shape makes the pads implicit, not that pads are appended. This is
  // onnxruntime's and PyTorch's reading (onnx/onnx#2398, onnxruntime#2193). The ONNX 1.12 test
  // maxunpool_export_with_output_shape instead scatters into the shape kernel_shape / strides
  // imply and pads that at the end, so onyx does not match its expected output.
  for (int64_t i = 0; i < n; ++i)
    if (ix[i] < 0 || ix[i] >= total)
      fail(ErrorCode::kRuntime, "I[", i, "] = ", ix[i], " is out of range [0, ", total - 1, "] for an output of shape ",
           out.to_string());
  dispatch_float(
      X.dtype(),
      [&]<class T>() {
        const T* x = X.data<T>();
        T* y = Y.data<T>();
        for (int64_t i = 0; i < n; ++i) y[ix[i]] = x[i];
      },
      "MaxUnpool");
}

std::unique_ptr<Kernel> make_max_unpool(const KernelCreateInfo& info) {
  if (!info.node.has_attr("kernel_shape"))
    fail(ErrorCode::kInvalidGraph, info.node.label(), ": attribute 'kernel_shape' is required");
  return make_fn_kernel(0, max_unpool_compute);
}

// =============================================================================================
// AffineGrid
// =============================================================================================

void affine_grid_compute(const int&, KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& theta = ctx.input(0);
  const Shape size = read_dims(ctx.input(1), "size");
  const Shape out = affine_grid_shape(node, size);
  const int64_t sp = static_cast<int64_t>(size.size()) - 2;
  if (theta.rank() != 3 || theta.dim(0) != size[0] || theta.dim(1) != sp || theta.dim(2) != sp + 1)
    fail(ErrorCode::kInvalidArgument, "theta has shape ", theta.shape().to_string(), "; expected [", size[0], ", ", sp,
         ", ", sp + 1, "]");
  Tensor& Y = ctx.allocate_output(0, theta.dtype(), out);
  if (Y.numel() == 0) return;
  const bool align = node.attr_int("align_corners", 0) != 0;
  // Base coordinates per spatial dim (x: innermost W, then H, then D).
  auto base = [&](int64_t n) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      if (align)
        v[i] = n == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1);
      else
        v[i] = -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n);
    }
    return v;
  };
  const int64_t N = size[0];
  const int64_t D = sp == 3 ? size[2] : 1, H = size[sp == 3 ? 3 : 2], Wd = size[sp == 3 ? 4 : 3];
  const std::vector<double> bz = base(D), by = base(H), bx = base(Wd);
  dispatch_float(
      theta.dtype(),
      [&]<class T>() {
        const T* th = theta.data<T>();
        T* y = Y.data<T>();
        const int64_t cols = sp + 1;
        parallel_range(ctx.pool(), N * D * H, Wd * sp * cols, [&](int64_t b, int64_t e) {
          for (int64_t q = b; q < e; ++q) {
            const int64_t h = q % H, d = (q / H) % D, n = q / (H * D);
            const T* t = th + n * sp * cols;
            T* o = y + q * Wd * sp;
            for (int64_t w = 0; w < Wd; ++w) {
              const double pt[4] = {bx[w], by[h], bz[d], 1.0};
              for (int64_t rr = 0; rr < sp; ++rr) {
                double acc = 0.0;
                for (int64_t c = 0; c < sp; ++c) acc += static_cast<double>(to_acc(t[rr * cols + c])) * pt[c];
                acc += static_cast<double>(to_acc(t[rr * cols + sp]));
                o[w * sp + rr] = from_acc<T>(static_cast<Acc<T>>(acc));
              }
            }
          }
        });
      },
      "AffineGrid");
}

std::unique_ptr<Kernel> make_affine_grid(const KernelCreateInfo&) { return make_fn_kernel(0, affine_grid_compute); }

constexpr TypeMask kInt64 = type_mask({DType::kInt64});

const KernelDef kDefs[] = {
    {"", "Resize", 10, 99, {{0, kAll | kComplex}}, make_resize},
    {"", "Upsample", 7, 9, {{0, kAll | kComplex}}, make_resize},
    {"", "GridSample", 16, 99, {{0, kAll}, {1, kFloats}}, make_grid_sample},
    {"", "RoiAlign", 10, 99, {{0, kFloats}, {2, kInt64}}, make_roi_align},
    {"", "NonMaxSuppression", 10, 99, {{0, kFloat}, {1, kFloat}}, make_nms},
    {"", "MaxUnpool", 9, 99, {{0, kFloats}, {1, kInt64}}, make_max_unpool},
    {"", "AffineGrid", 20, 99, {{0, kFloats}, {1, kInt64}}, make_affine_grid},
};

}  // namespace

std::span<const KernelDef> image_kernels() { return kDefs; }

}  // namespace onyx::cpu
