// CPU kernels: signal family (DFT, STFT, HannWindow / HammingWindow / BlackmanWindow,
// MelWeightMatrix). Transforms are computed in double: an iterative radix-2 FFT for powers of
// two, a direct DFT over an exact twiddle table for short other lengths, and Bluestein's
// chirp-z algorithm (a power-of-two convolution) for long other lengths.
#include <cmath>
#include <complex>
#include <memory>
#include <mutex>
#include <numbers>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "ops/signal.hpp"

namespace onyx::cpu {
namespace {

using cd = std::complex<double>;

// ---- FFT plans ----

constexpr int64_t kDirectMax = 64;  // non-power-of-two lengths up to this use the direct DFT
constexpr int64_t kMaxFft = int64_t(1) << 40;

bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

/// exp(-2 pi i k / n) for k in [0, n), computed from the reduced angle (exact at the quadrants).
cd unit_root(int64_t k, int64_t n) {
  k %= n;
  if (k == 0) return {1, 0};
  if (4 * k == n) return {0, -1};
  if (2 * k == n) return {-1, 0};
  if (4 * k == 3 * n) return {0, 1};
  const double a = -2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
  return {std::cos(a), std::sin(a)};
}

struct FftPlan {
  enum class Kind { kPow2, kDirect, kBluestein } kind = Kind::kPow2;
  int64_t n = 0;
  std::vector<cd> tw;        // kPow2: roots for k < n/2; kDirect: roots for k < n
  std::vector<uint32_t> rev; // kPow2: bit-reversal permutation
  // kBluestein: chirp[k] = exp(-i pi k^2 / n), the transformed conjugate chirp, and the
  // power-of-two plan of the convolution length m.
  std::vector<cd> chirp, bconv;
  std::shared_ptr<const FftPlan> sub;
  /// Complex scratch a transform of this plan needs.
  int64_t scratch() const { return kind == Kind::kPow2 ? 0 : kind == Kind::kDirect ? n : sub->n; }
};

std::shared_ptr<const FftPlan> get_plan(int64_t n);

/// a * b without the inf / NaN recovery of std::complex's operator* (a library call).
inline cd mul(cd a, cd b) {
  return cd(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
}

/// In-place forward FFT of a power-of-two length.
void fft_pow2(const FftPlan& p, cd* x) {
  const int64_t n = p.n;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t j = p.rev[i];
    if (i < j) std::swap(x[i], x[j]);
  }
  // Plain doubles (std::complex<double> is layout-compatible with double[2]): keeps the
  // twiddles in registers instead of a store/reload through the stack.
  double* d = reinterpret_cast<double*>(x);
  const double* tw = reinterpret_cast<const double*>(p.tw.data());
  for (int64_t len = 2; len <= n; len <<= 1) {
    const int64_t half = len >> 1, step = n / len;
    for (int64_t s = 0; s < n; s += len) {
      double* a = d + 2 * s;
      double* b = d + 2 * (s + half);
      for (int64_t k = 0; k < half; ++k) {
        const double wr = tw[2 * k * step], wi = tw[2 * k * step + 1];
        const double br = b[2 * k], bi = b[2 * k + 1];
        const double tr = wr * br - wi * bi, ti = wr * bi + wi * br;
        const double ar = a[2 * k], ai = a[2 * k + 1];
        b[2 * k] = ar - tr;
        b[2 * k + 1] = ai - ti;
        a[2 * k] = ar + tr;
        a[2 * k + 1] = ai + ti;
      }
    }
  }
}

/// In-place forward DFT of x (length p.n); `scratch` holds p.scratch() values.
void fft_forward(const FftPlan& p, cd* x, cd* scratch) {
  switch (p.kind) {
    case FftPlan::Kind::kPow2: fft_pow2(p, x); return;
    case FftPlan::Kind::kDirect: {
      const int64_t n = p.n;
      for (int64_t k = 0; k < n; ++k) {
        double re = 0, im = 0;
        int64_t idx = 0;  // k * j mod n
        for (int64_t j = 0; j < n; ++j) {
          const cd w = p.tw[idx];
          re += w.real() * x[j].real() - w.imag() * x[j].imag();
          im += w.real() * x[j].imag() + w.imag() * x[j].real();
          idx += k;
          if (idx >= n) idx -= n;
        }
        scratch[k] = cd(re, im);
      }
      for (int64_t k = 0; k < n; ++k) x[k] = scratch[k];
      return;
    }
    case FftPlan::Kind::kBluestein: {
      const int64_t n = p.n, m = p.sub->n;
      cd* a = scratch;
      for (int64_t k = 0; k < n; ++k) a[k] = mul(x[k], p.chirp[k]);
      for (int64_t k = n; k < m; ++k) a[k] = 0;
      fft_pow2(*p.sub, a);
      // Inverse transform of the product through conjugation: ifft(y) = conj(fft(conj(y))) / m.
      for (int64_t k = 0; k < m; ++k) a[k] = std::conj(mul(a[k], p.bconv[k]));
      fft_pow2(*p.sub, a);
      const double inv_m = 1.0 / static_cast<double>(m);
      for (int64_t k = 0; k < n; ++k) x[k] = mul(std::conj(a[k]) * inv_m, p.chirp[k]);
      return;
    }
  }
}

std::shared_ptr<const FftPlan> build_plan(int64_t n) {
  auto p = std::make_shared<FftPlan>();
  p->n = n;
  if (is_pow2(n)) {
    p->kind = FftPlan::Kind::kPow2;
    p->tw.resize(static_cast<size_t>(std::max<int64_t>(1, n / 2)));
    for (int64_t k = 0; k < n / 2; ++k) p->tw[k] = unit_root(k, n);
    p->rev.resize(static_cast<size_t>(n));
    int bits = 0;
    while ((int64_t(1) << bits) < n) ++bits;
    for (int64_t i = 0; i < n; ++i) {
      uint32_t r = 0;
      for (int b = 0; b < bits; ++b)
        if (i & (int64_t(1) << b)) r |= uint32_t(1) << (bits - 1 - b);
      p->rev[i] = r;
    }
  } else if (n <= kDirectMax) {
    p->kind = FftPlan::Kind::kDirect;
    p->tw.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) p->tw[k] = unit_root(k, n);
  } else {
    p->kind = FftPlan::Kind::kBluestein;
    int64_t m = 1;
    while (m < 2 * n - 1) m <<= 1;
    p->sub = get_plan(m);
    p->chirp.resize(static_cast<size_t>(n));
    const int64_t two_n = 2 * n;
    for (int64_t k = 0; k < n; ++k) {
      // k^2 mod 2n without overflow: (k mod 2n)^2 fits for n < 2^31; use 128-bit otherwise.
      const int64_t q = static_cast<int64_t>((static_cast<__int128>(k) * k) % two_n);
      const double a = -std::numbers::pi * static_cast<double>(q) / static_cast<double>(n);
      p->chirp[k] = cd(std::cos(a), std::sin(a));
    }
    std::vector<cd> b(static_cast<size_t>(m), cd(0, 0));
    b[0] = std::conj(p->chirp[0]);
    for (int64_t k = 1; k < n; ++k) b[k] = b[m - k] = std::conj(p->chirp[k]);
    fft_pow2(*p->sub, b.data());
    p->bconv = std::move(b);
  }
  return p;
}

/// Plans are shared by every kernel (a small cache of recently used lengths).
std::shared_ptr<const FftPlan> get_plan(int64_t n) {
  static std::mutex mu;
  static std::vector<std::shared_ptr<const FftPlan>> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& p : cache)
      if (p->n == n) return p;
  }
  auto p = build_plan(n);  // outside the lock: a Bluestein plan asks for its sub-plan
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& q : cache)
    if (q->n == n) return q;
  if (cache.size() >= 32) cache.erase(cache.begin());
  cache.push_back(p);
  return p;
}

/// Per-thread scratch (grows once, then reused: no allocation on later runs).
cd* thread_scratch(int64_t n) {
  thread_local std::vector<cd> buf;
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

int64_t fft_cost(int64_t n) {
  int64_t lg = 1;
  while ((int64_t(1) << lg) < n) ++lg;
  return std::max<int64_t>(1, n * lg * 4);
}

void check_length(int64_t n, const char* what) {
  if (n > kMaxFft) fail(ErrorCode::kNotImplemented, what, " of length ", n, " is too large");
}

template <class T>
inline double ld(const T* p, int64_t i) {
  return static_cast<double>(to_acc(p[i]));
}

// ---- DFT ----

/// Scalar int input (int32 / int64) `i`, or `dflt` when omitted.
int64_t scalar_int(const KernelContext& ctx, size_t i, const char* what, int64_t dflt) {
  const Tensor* t = ctx.optional_input(i);
  if (!t) return dflt;
  if (t->dtype() != DType::kInt64 && t->dtype() != DType::kInt32)
    fail(ErrorCode::kInvalidArgument, what, " (input ", i, ") must be int32 or int64, got ", dtype_name(t->dtype()));
  if (t->numel() != 1) fail(ErrorCode::kInvalidArgument, what, " (input ", i, ") must be a scalar, got ", t->numel(), " values");
  return int_at(*t, 0);
}

template <class T>
void dft_typed(const DftPlan& p, const Shape& in_shape, const T* x, T* y, ThreadPool& pool) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < p.axis; ++d) outer *= in_shape[d];
  for (int64_t d = p.axis + 1; d + 1 < static_cast<int64_t>(in_shape.size()); ++d) inner *= in_shape[d];
  const std::shared_ptr<const FftPlan> plan = get_plan(p.n);
  const int64_t n = p.n, L = p.in_len, OL = p.out_len, ic = p.in_comp, oc = p.out_comp;
  const double scale = p.inverse ? 1.0 / static_cast<double>(n) : 1.0;
  const int64_t used = std::min(L, n);
  parallel_range(pool, outer * inner, fft_cost(n), [&](int64_t r0, int64_t r1) {
    cd* buf = thread_scratch(n + plan->scratch());
    cd* scratch = buf + n;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t o = r / inner, i = r % inner;
      const T* src = x + (o * L * inner + i) * ic;
      const int64_t sstride = inner * ic;
      for (int64_t k = 0; k < n; ++k) buf[k] = 0;
      if (p.irfft()) {
        // A one-sided spectrum: bins [0, n/2], the rest by conjugate symmetry.
        const int64_t h = std::min(L, n / 2 + 1);
        for (int64_t k = 0; k < h; ++k) buf[k] = cd(ld(src, k * sstride), ld(src, k * sstride + 1));
        for (int64_t k = 1; k < h && k < n - k; ++k) buf[n - k] = std::conj(buf[k]);
      } else if (ic == 2) {
        for (int64_t k = 0; k < used; ++k) buf[k] = cd(ld(src, k * sstride), ld(src, k * sstride + 1));
      } else {
        for (int64_t k = 0; k < used; ++k) buf[k] = cd(ld(src, k * sstride), 0);
      }
      if (p.inverse) {
        for (int64_t k = 0; k < n; ++k) buf[k] = std::conj(buf[k]);
        fft_forward(*plan, buf, scratch);
        for (int64_t k = 0; k < n; ++k) buf[k] = std::conj(buf[k]) * scale;
      } else {
        fft_forward(*plan, buf, scratch);
      }
      T* dst = y + (o * OL * inner + i) * oc;
      const int64_t dstride = inner * oc;
      if (oc == 2) {
        for (int64_t k = 0; k < OL; ++k) {
          dst[k * dstride] = from_acc<T>(buf[k].real());
          dst[k * dstride + 1] = from_acc<T>(buf[k].imag());
        }
      } else {
        for (int64_t k = 0; k < OL; ++k) dst[k * dstride] = from_acc<T>(buf[k].real());
      }
    }
  });
}

void dft_compute(const int&, KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const int64_t axis = node.opset < 20 ? node.attr_int("axis", 1) : scalar_int(ctx, 2, "axis", -2);
  const int64_t len = scalar_int(ctx, 1, "dft_length", -1);
  if (ctx.has_input(1) && len <= 0) fail(ErrorCode::kInvalidArgument, "dft_length must be positive, got ", len);
  const DftPlan p = dft_plan(node, x.shape(), axis, len);
  check_length(p.n, "DFT");
  Tensor& y = ctx.allocate_output(0, x.dtype(), dft_output_shape(x.shape(), p));
  if (y.numel() == 0) return;
  dispatch_float(x.dtype(), [&]<class T>() {
    dft_typed<T>(p, x.shape(), static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()), ctx.pool());
  }, "DFT");
}

std::unique_ptr<Kernel> make_dft(const KernelCreateInfo&) { return make_fn_kernel(0, dft_compute); }

// ---- STFT ----

template <class T>
void stft_typed(const StftPlan& p, const T* x, const T* w, T* y, ThreadPool& pool) {
  const int64_t n = p.frame_length;
  const std::shared_ptr<const FftPlan> plan = get_plan(n);
  const int64_t rows = p.batch * p.frames;
  parallel_range(pool, rows, fft_cost(n), [&](int64_t r0, int64_t r1) {
    cd* buf = thread_scratch(n + plan->scratch());
    cd* scratch = buf + n;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / p.frames, f = r % p.frames;
      const T* src = x + (b * p.length + f * p.step) * p.comp;
      for (int64_t k = 0; k < n; ++k) {
        const double wk = w ? ld(w, k) : 1.0;
        buf[k] = p.comp == 2 ? cd(ld(src, 2 * k) * wk, ld(src, 2 * k + 1) * wk) : cd(ld(src, k) * wk, 0);
      }
      fft_forward(*plan, buf, scratch);
      T* dst = y + r * p.bins * 2;
      for (int64_t k = 0; k < p.bins; ++k) {
        dst[2 * k] = from_acc<T>(buf[k].real());
        dst[2 * k + 1] = from_acc<T>(buf[k].imag());
      }
    }
  });
}

void stft_compute(const int&, KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const int64_t step = scalar_int(ctx, 1, "frame_step", 0);
  const Tensor* w = ctx.optional_input(2);
  if (w && w->rank() != 1) fail(ErrorCode::kInvalidArgument, "the window (input 2) must have rank 1, got ", w->shape().to_string());
  if (w && w->dtype() != x.dtype())
    fail(ErrorCode::kInvalidArgument, "the window (input 2) has type ", dtype_name(w->dtype()), " but the signal has type ",
         dtype_name(x.dtype()));
  const int64_t flen = scalar_int(ctx, 3, "frame_length", -1);
  if (ctx.has_input(3) && flen <= 0) fail(ErrorCode::kInvalidArgument, "frame_length must be positive, got ", flen);
  const StftPlan p = stft_plan(node, x.shape(), step, w ? w->dim(0) : -1, flen);
  check_length(p.frame_length, "STFT frame");
  Tensor& y = ctx.allocate_output(0, x.dtype(), Shape{p.batch, p.frames, p.bins, 2});
  if (y.numel() == 0) return;
  dispatch_float(x.dtype(), [&]<class T>() {
    stft_typed<T>(p, static_cast<const T*>(x.raw_data()), w ? static_cast<const T*>(w->raw_data()) : nullptr,
                  static_cast<T*>(y.raw_data()), ctx.pool());
  }, "STFT");
}

std::unique_ptr<Kernel> make_stft(const KernelCreateInfo&) { return make_fn_kernel(0, stft_compute); }

// ---- Windows ----

/// Generalised cosine window a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic)
/// or size - 1 (symmetric).
struct WindowState {
  double a0, a1, a2;
  bool periodic;
  DType out;
};

template <class T>
T store_value(double v) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(v);  // values lie in [-1, 1]
  else return from_acc<T>(v);
}

void window_compute(const WindowState& st, KernelContext& ctx) {
  const int64_t size = scalar_int(ctx, 0, "size", 0);
  if (size <= 0) fail(ErrorCode::kInvalidArgument, "size (input 0) must be positive, got ", size);
  Tensor& y = ctx.allocate_output(0, st.out, Shape{size});
  const double N = static_cast<double>(st.periodic ? size : size - 1);
  dispatch_numeric(st.out, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      unsupported_dtype("window output", st.out);
    } else {
      T* py = static_cast<T*>(y.raw_data());
      if (N == 0) {  // a symmetric window of one sample
        py[0] = store_value<T>(1.0);
        return;
      }
      const int64_t M = st.periodic ? size : size - 1;
      for (int64_t i = 0; i < size; ++i) {
        // Angles reduced exactly: 2 pi i / N and 4 pi i / N.
        const double c1 = std::cos(2.0 * std::numbers::pi * static_cast<double>(i % M) / N);
        const double c2 = std::cos(2.0 * std::numbers::pi * static_cast<double>((2 * i) % M) / N);
        py[i] = store_value<T>(st.a0 - st.a1 * c1 + st.a2 * c2);
      }
    }
  }, "window");
}

std::unique_ptr<Kernel> make_window(const KernelCreateInfo& info) {
  const Node& n = info.node;
  WindowState st{0.5, 0.5, 0.0, n.attr_int("periodic", 1) != 0, signal_output_dtype(n)};
  if (n.op_type == "HammingWindow") {
    st.a0 = 25.0 / 46.0;
    st.a1 = 21.0 / 46.0;
  } else if (n.op_type == "BlackmanWindow") {
    st.a0 = 0.42;
    st.a1 = 0.5;
    st.a2 = 0.08;
  }
  return make_fn_kernel(st, window_compute);
}

// ---- MelWeightMatrix ----

/// Python's float floor division a // b (b > 0).
double py_floordiv(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0;
  double fl = std::floor(div);
  if (div - fl > 0.5) fl += 1.0;
  return fl;
}

void mel_compute(const DType& out_dt, KernelContext& ctx) {
  const Node& node = ctx.node();
  const int64_t mel = scalar_int(ctx, 0, "num_mel_bins", 0);
  const int64_t len = scalar_int(ctx, 1, "dft_length", 0);
  const int64_t rate = scalar_int(ctx, 2, "sample_rate", 0);
  mel_check(node, mel, len, rate);
  const double lo_hz = read_scalar(ctx.input(3)), hi_hz = read_scalar(ctx.input(4));
  const int64_t spec = len / 2 + 1;
  Tensor& y = ctx.allocate_output(0, out_dt, Shape{spec, mel});
  // Bin edges: num_mel_bins + 2 points evenly spaced on the mel scale, mapped to DFT bins.
  std::vector<int64_t> edge(static_cast<size_t>(mel + 2));
  const double lo_mel = 2595.0 * std::log10(1.0 + lo_hz / 700.0);
  const double hi_mel = 2595.0 * std::log10(1.0 + hi_hz / 700.0);
  const double step = (hi_mel - lo_mel) / static_cast<double>(mel + 2);
  for (int64_t i = 0; i < mel + 2; ++i) {
    const double m = static_cast<double>(i) * step + lo_mel;
    const double hz = 700.0 * (std::pow(10.0, m / 2595.0) - 1.0);
    const double b = py_floordiv(static_cast<double>(len + 1) * hz, static_cast<double>(rate));
    edge[i] = std::isfinite(b) ? static_cast<int64_t>(std::clamp(b, -1e15, 1e15)) : -1;
  }
  std::vector<double> w(static_cast<size_t>(spec * mel), 0.0);
  auto put = [&](int64_t j, int64_t i, double v) {
    if (j >= 0 && j < spec) w[j * mel + i] = v;
  };
  for (int64_t i = 0; i < mel; ++i) {
    const int64_t lo = edge[i], c = edge[i + 1], hi = edge[i + 2];
    if (c == lo) {
      put(c, i, 1.0);
    } else {
      for (int64_t j = std::max<int64_t>(lo, 0); j <= c && j < spec; ++j)
        put(j, i, static_cast<double>(j - lo) / static_cast<double>(c - lo));
    }
    if (hi > c)
      for (int64_t j = std::max<int64_t>(c, 0); j < hi && j < spec; ++j)
        put(j, i, static_cast<double>(hi - j) / static_cast<double>(hi - c));
  }
  dispatch_numeric(out_dt, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      unsupported_dtype("MelWeightMatrix output", out_dt);
    } else {
      T* py = static_cast<T*>(y.raw_data());
      for (size_t k = 0; k < w.size(); ++k) py[k] = store_value<T>(w[k]);
    }
  }, "MelWeightMatrix");
}

std::unique_ptr<Kernel> make_mel(const KernelCreateInfo& info) {
  return make_fn_kernel(signal_output_dtype(info.node), mel_compute);
}

using namespace types;

const KernelDef kDefs[] = {
    {"", "DFT", 17, 99, {{0, kFloats}, {1, kIndex}}, make_dft},
    {"", "STFT", 17, 99, {{0, kFloats}, {1, kIndex}}, make_stft},
    {"", "HannWindow", 17, 99, {{0, kIndex}, {-1, kNumeric}}, make_window},
    {"", "HammingWindow", 17, 99, {{0, kIndex}, {-1, kNumeric}}, make_window},
    {"", "BlackmanWindow", 17, 99, {{0, kIndex}, {-1, kNumeric}}, make_window},
    {"", "MelWeightMatrix", 17, 99, {{0, kIndex}, {3, kFloats}}, make_mel},
};

}  // namespace

std::span<const KernelDef> signal_kernels() { return kDefs; }

}  // namespace onyx::cpu
