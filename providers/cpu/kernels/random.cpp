// CPU kernels: random family (RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike,
// Bernoulli, Multinomial).
//
// Numbers come from a counter-based generator: element i of a run takes the SplitMix64 output
// for (key, i), so a result depends only on the key and the element's index, never on how the
// work is split over threads. With a `seed` attribute the key is a hash of the seed and every
// run gives the same numbers; without one, each run draws a fresh key from a per-kernel base
// (seeded from std::random_device when the kernel is made) and an atomic run counter.
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {
namespace {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

/// The i-th 64-bit output of the stream `key`.
inline uint64_t draw(uint64_t key, uint64_t i) { return mix64(key + (i + 1) * kGolden); }
/// Uniform in [0, 1) with 53 random bits.
inline double uniform01(uint64_t key, uint64_t i) { return static_cast<double>(draw(key, i) >> 11) * 0x1.0p-53; }

/// Key source of one node: a fixed key (seeded) or a fresh key per run.
class KeySource {
 public:
  explicit KeySource(const Node& n) {
    if (const Attribute* a = n.attr("seed")) {
      seeded_ = true;
      float f = a->f;
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      key_ = mix64(0x6f6e79782d726e67ULL ^ bits);
    } else {
      std::random_device rd;
      key_ = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ reinterpret_cast<uintptr_t>(this);
    }
  }
  uint64_t next() const {
    if (seeded_) return key_;
    return mix64(key_ + counter_.fetch_add(1, std::memory_order_relaxed) * kGolden);
  }

 private:
  bool seeded_ = false;
  uint64_t key_ = 0;
  mutable std::atomic<uint64_t> counter_{0};
};

/// The largest value of T below `hi` (for keeping uniform samples in [low, high)).
template <class T>
T below(T hi) {
  if constexpr (is_half_v<T>) {
    T r = hi;
    const float f = static_cast<float>(hi);
    if (f > 0) r.bits = static_cast<uint16_t>(hi.bits - 1);
    else if (f < 0) r.bits = static_cast<uint16_t>(hi.bits + 1);
    else r.bits = 0x8001;  // -0 / +0: the negative subnormal of least magnitude
    return r;
  } else {
    return std::nextafter(hi, -std::numeric_limits<T>::infinity());
  }
}

enum class Dist { kUniform, kNormal };

struct RandomParams {
  Dist dist;
  double a, b;  // uniform: low, high; normal: mean, scale
  DType out;
  bool like;    // *Like: the shape of input 0, else the `shape` attribute
  Shape shape;
};

template <class T>
void fill_typed(const RandomParams& p, uint64_t key, T* y, int64_t n, ThreadPool& pool) {
  if (p.dist == Dist::kUniform) {
    const double lo = p.a, span = p.b - p.a;
    const T hi_t = from_acc<T>(p.b);
    const double hi_d = static_cast<double>(to_acc(hi_t));
    parallel_range(pool, n, 8, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        T v = from_acc<T>(lo + span * uniform01(key, static_cast<uint64_t>(i)));
        // Rounding to T may reach `high`; the interval is half-open.
        if (span > 0 && static_cast<double>(to_acc(v)) >= hi_d) v = below(hi_t);
        y[i] = v;
      }
    });
    return;
  }
  // Box-Muller: elements 2j and 2j + 1 are the cosine and sine halves of pair j.
  const double mean = p.a, scale = p.b;
  parallel_range(pool, n, 24, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const uint64_t j = static_cast<uint64_t>(i) >> 1;
      const double u1 = 1.0 - uniform01(key, 2 * j);  // (0, 1]
      const double u2 = uniform01(key, 2 * j + 1);
      const double r = std::sqrt(-2.0 * std::log(u1));
      const double t = 2.0 * std::numbers::pi * u2;
      y[i] = from_acc<T>(mean + scale * r * ((i & 1) ? std::sin(t) : std::cos(t)));
    }
  });
}

class RandomKernel final : public Kernel {
 public:
  RandomKernel(const Node& n, RandomParams p) : keys_(n), p_(p) {}
  void compute(KernelContext& ctx) const override {
    Tensor& y = ctx.allocate_output(0, p_.out, p_.like ? ctx.input(0).shape() : p_.shape);
    const int64_t n = y.numel();
    if (n == 0) return;
    const uint64_t key = keys_.next();
    dispatch_float(p_.out, [&]<class T>() { fill_typed<T>(p_, key, static_cast<T*>(y.raw_data()), n, ctx.pool()); },
                   ctx.node().op_type.c_str());
  }

 private:
  KeySource keys_;
  RandomParams p_;
};

std::unique_ptr<Kernel> make_random(const KernelCreateInfo& info) {
  const Node& n = info.node;
  const bool uniform = n.op_type == "RandomUniform" || n.op_type == "RandomUniformLike";
  RandomParams p;
  p.dist = uniform ? Dist::kUniform : Dist::kNormal;
  p.a = uniform ? n.attr_float("low", 0.0f) : n.attr_float("mean", 0.0f);
  p.b = uniform ? n.attr_float("high", 1.0f) : n.attr_float("scale", 1.0f);
  if (uniform && !(p.b >= p.a))
    fail(ErrorCode::kInvalidGraph, n.label(), ": high (", p.b, ") must not be below low (", p.a, ")");
  p.out = info.output_dtype(0);
  p.like = n.op_type == "RandomUniformLike" || n.op_type == "RandomNormalLike";
  if (!p.like) p.shape = Shape(n.attr_ints("shape"));
  return std::make_unique<RandomKernel>(n, p);
}

// ---- Bernoulli ----

class BernoulliKernel final : public Kernel {
 public:
  BernoulliKernel(const Node& n, DType out) : keys_(n), out_(out) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.allocate_output(0, out_, x.shape());
    const int64_t n = x.numel();
    if (n == 0) return;
    const uint64_t key = keys_.next();
    dispatch_float(x.dtype(), [&]<class P>() {
      const P* px = static_cast<const P*>(x.raw_data());
      dispatch_numeric(y.dtype(), [&]<class T>() {
        T* py = static_cast<T*>(y.raw_data());
        parallel_range(ctx.pool(), n, 8, [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) {
            // 1 with probability p: u < p for u uniform in [0, 1).
            const bool one = uniform01(key, static_cast<uint64_t>(i)) < static_cast<double>(to_acc(px[i]));
            if constexpr (std::is_same_v<T, bool>) py[i] = one;
            else py[i] = from_acc<T>(one ? 1.0f : 0.0f);
          }
        });
      }, "Bernoulli output");
    }, "Bernoulli input");
  }

 private:
  KeySource keys_;
  DType out_;
};

std::unique_ptr<Kernel> make_bernoulli(const KernelCreateInfo& info) {
  return std::make_unique<BernoulliKernel>(info.node, info.output_dtype(0));
}

// ---- Multinomial ----

class MultinomialKernel final : public Kernel {
 public:
  MultinomialKernel(const Node& n, int64_t samples, DType out) : keys_(n), samples_(samples), out_(out) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() != 2)
      fail(ErrorCode::kInvalidArgument, "the input must have shape [batch_size, class_size], got ", x.shape().to_string());
    const int64_t batch = x.dim(0), classes = x.dim(1), S = samples_;
    Tensor& y = ctx.allocate_output(0, out_, Shape{batch, S});
    if (batch * S == 0) return;
    if (classes == 0) fail(ErrorCode::kInvalidArgument, "the input has no classes (class_size 0)");
    const uint64_t key = keys_.next();
    const bool i64 = y.dtype() == DType::kInt64;
    dispatch_float(x.dtype(), [&]<class T>() {
      const T* px = static_cast<const T*>(x.raw_data());
      // Check every row before the parallel part: a row needs a finite, positive total mass.
      for (int64_t b = 0; b < batch; ++b) {
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t c = 0; c < classes; ++c) {
          const double v = static_cast<double>(to_acc(px[b * classes + c]));
          if (v != v || v == std::numeric_limits<double>::infinity())
            fail(ErrorCode::kRuntime, "input row ", b, " has a NaN or +inf log-probability at class ", c);
          m = std::max(m, v);
        }
        if (m == -std::numeric_limits<double>::infinity())
          fail(ErrorCode::kRuntime, "input row ", b, " has no class with a finite log-probability");
      }
      parallel_range(ctx.pool(), batch, classes * 8 + S * 16, [&](int64_t b0, int64_t b1) {
        thread_local std::vector<double> cdf;
        if (static_cast<int64_t>(cdf.size()) < classes) cdf.resize(static_cast<size_t>(classes));
        for (int64_t b = b0; b < b1; ++b) {
          const T* row = px + b * classes;
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t c = 0; c < classes; ++c) m = std::max(m, static_cast<double>(to_acc(row[c])));
          double total = 0;
          for (int64_t c = 0; c < classes; ++c) {
            total += std::exp(static_cast<double>(to_acc(row[c])) - m);
            cdf[c] = total;
          }
          for (int64_t s = 0; s < S; ++s) {
            const double u = uniform01(key, static_cast<uint64_t>(b * S + s)) * total;
            // First class whose cumulative mass exceeds u (classes of zero mass are never taken).
            int64_t lo = 0, hi = classes - 1;
            while (lo < hi) {
              const int64_t mid = (lo + hi) / 2;
              if (cdf[mid] > u) hi = mid;
              else lo = mid + 1;
            }
            if (i64) y.data<int64_t>()[b * S + s] = lo;
            else y.data<int32_t>()[b * S + s] = static_cast<int32_t>(lo);
          }
        }
      });
    }, "Multinomial");
  }

 private:
  KeySource keys_;
  int64_t samples_;
  DType out_;
};

std::unique_ptr<Kernel> make_multinomial(const KernelCreateInfo& info) {
  return std::make_unique<MultinomialKernel>(info.node, info.node.attr_int("sample_size", 1), info.output_dtype(0));
}

using namespace types;

const KernelDef kDefs[] = {
    {"", "RandomUniform", 1, 99, {{-1, kFloats}}, make_random},
    {"", "RandomNormal", 1, 99, {{-1, kFloats}}, make_random},
    {"", "RandomUniformLike", 1, 99, {{0, kAll}, {-1, kFloats}}, make_random},
    {"", "RandomNormalLike", 1, 99, {{0, kAll}, {-1, kFloats}}, make_random},
    {"", "Bernoulli", 15, 99, {{0, kFloats}, {-1, kNumericBool}}, make_bernoulli},
    {"", "Multinomial", 7, 99, {{0, kFloats}, {-1, kIndex}}, make_multinomial},
};

}  // namespace

std::span<const KernelDef> random_kernels() { return kDefs; }

}  // namespace onyx::cpu
