// CPU kernels: reduce family (Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax, CumSum, TopK,
// LpNormalization).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/reduce_math.hpp"
#include "ops/reduce.hpp"

namespace onyx::cpu {
namespace {

/// Columns processed together when the reduced (or scanned) axis is not the innermost one:
/// per-column accumulators live on the stack, rows are read contiguously.
constexpr int64_t kChunk = 256;

/// Floating accumulator: float for float and the 16-bit floats, double otherwise (double, and
/// integers going through sqrt / log / exp).
template <class T>
using FAcc = std::conditional_t<std::is_same_v<T, float> || is_half_v<T>, float, double>;
/// Summing accumulator: 64-bit integers for integer types (wrapping back on store), else FAcc.
template <class T>
using SAcc = std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                                std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>, FAcc<T>>;
/// Comparing accumulator: the type itself, float for the 16-bit floats.
template <class T>
using MAcc = std::conditional_t<is_half_v<T>, float, T>;

template <class A, class T>
inline A load(T v) {
  return static_cast<A>(to_acc(v));
}

/// Stores an accumulator as T: integers from floating values saturate (NaN gives 0).
template <class T, class A>
inline T store(A v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != A(0);
  } else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<A>) {
    if (v != v) return T(0);
    if (v <= static_cast<A>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<A>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return from_acc<T>(v);
  }
}

template <class A>
inline A lowest_of() {
  if constexpr (std::is_same_v<A, bool>) return false;
  else if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
  else return std::numeric_limits<A>::lowest();
}
template <class A>
inline A highest_of() {
  if constexpr (std::is_same_v<A, bool>) return true;
  else if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
  else return std::numeric_limits<A>::max();
}

template <class A>
inline bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>) return v != v;
  else return false;
}

// ---- Reduce* ----
//
// Each op: accumulator type A, init(), step(acc, x, shift), merge(a, b), fin(acc, count, shift).
// `shift` is only used by the two-pass LogSumExp (its first pass, Pre, finds the max).

template <class T>
struct OpSum {
  using A = SAcc<T>;
  static constexpr bool kTwoPass = false;
  static constexpr int kExtreme = 0;  // 1: max, -1: min (rows use the vectorised row_extreme)
  static A init() { return A(0); }
  static A step(A a, T x, A) { return a + load<A>(x); }
  static A merge(A a, A b) { return a + b; }
  static T fin(A a, int64_t, A) { return store<T>(a); }
};

template <class T>
struct OpSumSquare : OpSum<T> {
  using A = SAcc<T>;
  static A step(A a, T x, A) {
    const A v = load<A>(x);
    return a + v * v;
  }
};

template <class T>
struct OpL1 : OpSum<T> {
  using A = SAcc<T>;
  static A step(A a, T x, A) {
    const A v = load<A>(x);
    if constexpr (std::is_unsigned_v<A>) return a + v;
    else return a + (v < A(0) ? -v : v);
  }
};

template <class T>
struct OpMean : OpSum<T> {
  using A = SAcc<T>;
  static T fin(A a, int64_t n, A) {
    if constexpr (std::is_integral_v<A>) return n == 0 ? T(0) : store<T>(a / static_cast<A>(n));
    else return store<T>(a / static_cast<A>(n));  // 0 / 0 = NaN for an empty set
  }
};

template <class T>
struct OpProd {
  using A = SAcc<T>;
  static constexpr bool kTwoPass = false;
  static constexpr int kExtreme = 0;
  static A init() { return A(1); }
  static A step(A a, T x, A) { return a * load<A>(x); }
  static A merge(A a, A b) { return a * b; }
  static T fin(A a, int64_t, A) { return store<T>(a); }
};

template <class T>
struct OpMax {
  using A = MAcc<T>;
  static constexpr bool kTwoPass = false;
  static constexpr int kExtreme = 1;
  static A init() { return lowest_of<A>(); }
  static A merge(A a, A b) {
    if constexpr (std::is_same_v<A, bool>) return a || b;
    else return (b > a || is_nan(b)) ? b : a;
  }
  static A step(A a, T x, A) { return merge(a, load<A>(x)); }
  static T fin(A a, int64_t, A) { return store<T>(a); }
};

template <class T>
struct OpMin {
  using A = MAcc<T>;
  static constexpr bool kTwoPass = false;
  static constexpr int kExtreme = -1;
  static A init() { return highest_of<A>(); }
  static A merge(A a, A b) {
    if constexpr (std::is_same_v<A, bool>) return a && b;
    else return (b < a || is_nan(b)) ? b : a;
  }
  static A step(A a, T x, A) { return merge(a, load<A>(x)); }
  static T fin(A a, int64_t, A) { return store<T>(a); }
};

template <class T>
struct OpL2 {
  using A = FAcc<T>;
  static constexpr bool kTwoPass = false;
  static constexpr int kExtreme = 0;
  static A init() { return A(0); }
  static A step(A a, T x, A) {
    const A v = load<A>(x);
    return a + v * v;
  }
  static A merge(A a, A b) { return a + b; }
  static T fin(A a, int64_t, A) { return store<T>(std::sqrt(a)); }
};

template <class T>
struct OpLogSum {
  using A = FAcc<T>;
  static constexpr bool kTwoPass = false;
  static constexpr int kExtreme = 0;
  static A init() { return A(0); }
  static A step(A a, T x, A) { return a + load<A>(x); }
  static A merge(A a, A b) { return a + b; }
  static T fin(A a, int64_t, A) { return store<T>(std::log(a)); }
};

template <class T>
struct OpLogSumExp {
  using A = FAcc<T>;
  static constexpr bool kTwoPass = true;
  static constexpr int kExtreme = 0;
  /// First pass: the max (NaN propagates), in the same accumulator type.
  struct Pre {
    using A = FAcc<T>;
    static constexpr int kExtreme = 1;
    static A init() { return -std::numeric_limits<A>::infinity(); }
    static A merge(A a, A b) { return (b > a || b != b) ? b : a; }
    static A step(A a, T x, A) { return merge(a, load<A>(x)); }
  };
  static A init() { return A(0); }
  static A step(A a, T x, A m) { return a + exp_shifted(load<A>(x) - m); }
  static A merge(A a, A b) { return a + b; }
  static T fin(A a, int64_t, A m) {
    // An infinite or NaN max decides the result (and would make x - m NaN).
    if (!std::isfinite(m)) return store<T>(m);
    return store<T>(std::log(a) + m);
  }
};

/// Reduces a contiguous row into acc, with 8 independent partial accumulators so the loop
/// vectorises without reassociation flags.
template <class Op, class T, class A>
inline A row_reduce(A acc, const T* p, int64_t n, A shift) {
  if constexpr (Op::kExtreme != 0 && !std::is_same_v<A, bool>) {
    if (n == 0) return acc;
    return Op::merge(acc, row_extreme<A>(p, n, Op::kExtreme > 0));
  }
  int64_t i = 0;
  if (n >= 32) {
    A l[8];
    for (auto& v : l) v = Op::init();
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k) l[k] = Op::step(l[k], p[i + k], shift);
    A m = l[0];
    for (int k = 1; k < 8; ++k) m = Op::merge(m, l[k]);
    acc = Op::merge(acc, m);
  }
  for (; i < n; ++i) acc = Op::step(acc, p[i], shift);
  return acc;
}

/// Calls f(offset) for every combination of the given dims (an odometer); once when n == 0.
template <class F>
inline void for_each_offset(int n, const int64_t* dims, const int64_t* strides, F&& f) {
  if (n == 0) {
    f(int64_t(0));
    return;
  }
  if (n == 1) {
    for (int64_t i = 0; i < dims[0]; ++i) f(i * strides[0]);
    return;
  }
  int64_t idx[64];
  for (int d = 0; d < n; ++d) idx[d] = 0;
  int64_t off = 0;
  for (;;) {
    f(off);
    int d = n - 1;
    for (; d >= 0; --d) {
      off += strides[d];
      if (++idx[d] < dims[d]) break;
      off -= strides[d] * dims[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/// Input offset of the i-th combination of dims (row-major).
inline int64_t offset_of(int64_t i, int n, const int64_t* dims, const int64_t* strides) {
  int64_t off = 0;
  for (int d = n - 1; d >= 0; --d) {
    off += (i % dims[d]) * strides[d];
    i /= dims[d];
  }
  return off;
}

/// The input's dims (size-1 dims dropped) merged into alternating kept / reduced groups.
struct ReduceLayout {
  int nk = 0, nr = 0;                  // kept / reduced groups, excluding the innermost group
  int64_t kd[64], ks[64], rd[64], rs[64];
  bool inner_reduced = true;           // the innermost (contiguous) group is reduced
  int64_t inner = 1;                   // its size
  int64_t red_count = 1;               // elements reduced into each output

  ReduceLayout(const Shape& in, uint64_t mask) {
    int64_t gd[64];
    bool gr[64];
    int ng = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      const int64_t d = in[k];
      const bool red = (mask >> k) & 1;
      if (red) red_count *= d;
      if (d == 1) continue;
      if (ng > 0 && gr[ng - 1] == red) {
        gd[ng - 1] *= d;
      } else {
        gd[ng] = d;
        gr[ng] = red;
        ++ng;
      }
    }
    if (ng == 0) return;  // a single element
    int64_t gs[64];
    int64_t stride = 1;
    for (int g = ng - 1; g >= 0; --g) {
      gs[g] = stride;
      stride *= gd[g];
    }
    inner_reduced = gr[ng - 1];
    inner = gd[ng - 1];
    for (int g = 0; g + 1 < ng; ++g) {
      if (gr[g]) {
        rd[nr] = gd[g];
        rs[nr++] = gs[g];
      } else {
        kd[nk] = gd[g];
        ks[nk++] = gs[g];
      }
    }
  }
};

template <class Op, class T>
void reduce_typed(const Tensor& x, uint64_t mask, Tensor& out, ThreadPool& pool) {
  using A = typename Op::A;
  const T* px = static_cast<const T*>(x.raw_data());
  T* py = static_cast<T*>(out.raw_data());
  const int64_t n_out = out.numel();
  if (n_out == 0) return;
  const ReduceLayout L(x.shape(), mask);
  const int64_t count = L.red_count;
  if (count == 0) {
    // Reduction over an empty set: the op's identity (Sum 0, Prod 1, Max -inf, Mean NaN...).
    A shift = A(0);
    if constexpr (Op::kTwoPass) shift = Op::Pre::init();
    const T v = Op::fin(Op::init(), 0, shift);
    for (int64_t i = 0; i < n_out; ++i) py[i] = v;
    return;
  }
  const int64_t len = L.inner;
  if (L.inner_reduced) {
    // Each output reduces rows of `len` contiguous elements, one per combination of the outer
    // reduced groups.
    if (n_out == 1 && L.nr == 0 && len >= (int64_t(1) << 17) && pool.num_threads() > 1) {
      // One long contiguous reduction: fixed partials (deterministic for any thread count).
      const int64_t parts = std::min<int64_t>(64, len / 65536);
      A partial[64];
      A shift = A(0);
      auto part_range = [&](int64_t p, int64_t& lo, int64_t& hi) {
        lo = len * p / parts;
        hi = len * (p + 1) / parts;
      };
      if constexpr (Op::kTwoPass) {
        using Pre = typename Op::Pre;
        pool.parallel_for(parts, 1, [&](int64_t b, int64_t e) {
          for (int64_t p = b; p < e; ++p) {
            int64_t lo, hi;
            part_range(p, lo, hi);
            partial[p] = row_reduce<Pre>(Pre::init(), px + lo, hi - lo, A(0));
          }
        });
        shift = partial[0];
        for (int64_t p = 1; p < parts; ++p) shift = Pre::merge(shift, partial[p]);
      }
      pool.parallel_for(parts, 1, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          int64_t lo, hi;
          part_range(p, lo, hi);
          partial[p] = row_reduce<Op>(Op::init(), px + lo, hi - lo, shift);
        }
      });
      A acc = partial[0];
      for (int64_t p = 1; p < parts; ++p) acc = Op::merge(acc, partial[p]);
      py[0] = Op::fin(acc, count, shift);
      return;
    }
    auto body = [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        const T* base = px + offset_of(o, L.nk, L.kd, L.ks);
        A shift = A(0);
        if constexpr (Op::kTwoPass) {
          using Pre = typename Op::Pre;
          A m = Pre::init();
          for_each_offset(L.nr, L.rd, L.rs, [&](int64_t off) { m = row_reduce<Pre>(m, base + off, len, A(0)); });
          shift = m;
        }
        A acc = Op::init();
        for_each_offset(L.nr, L.rd, L.rs, [&](int64_t off) { acc = row_reduce<Op>(acc, base + off, len, shift); });
        py[o] = Op::fin(acc, count, shift);
      }
    };
    parallel_range(pool, n_out, count, body);
    return;
  }
  // The innermost group is kept: output rows of `len` elements accumulate whole input rows,
  // `kChunk` columns at a time.
  const int64_t rows = n_out / len;
  const int64_t chunks = (len + kChunk - 1) / kChunk;
  auto body = [&](int64_t i0, int64_t i1) {
    A acc[kChunk];
    A sh[kChunk];
    for (int64_t it = i0; it < i1; ++it) {
      const int64_t row = it / chunks, j0 = (it % chunks) * kChunk;
      const int64_t n = std::min(kChunk, len - j0);
      const T* base = px + offset_of(row, L.nk, L.kd, L.ks) + j0;
      if constexpr (Op::kTwoPass) {
        using Pre = typename Op::Pre;
        for (int64_t j = 0; j < n; ++j) sh[j] = Pre::init();
        for_each_offset(L.nr, L.rd, L.rs, [&](int64_t off) {
          const T* p = base + off;
          for (int64_t j = 0; j < n; ++j) sh[j] = Pre::step(sh[j], p[j], A(0));
        });
      }
      for (int64_t j = 0; j < n; ++j) acc[j] = Op::init();
      for_each_offset(L.nr, L.rd, L.rs, [&](int64_t off) {
        const T* p = base + off;
        if constexpr (Op::kTwoPass)
          for (int64_t j = 0; j < n; ++j) acc[j] = Op::step(acc[j], p[j], sh[j]);
        else
          for (int64_t j = 0; j < n; ++j) acc[j] = Op::step(acc[j], p[j], A(0));
      });
      T* y = py + row * len + j0;
      if constexpr (Op::kTwoPass)
        for (int64_t j = 0; j < n; ++j) y[j] = Op::fin(acc[j], count, sh[j]);
      else
        for (int64_t j = 0; j < n; ++j) y[j] = Op::fin(acc[j], count, A(0));
    }
  };
  parallel_range(pool, rows * chunks, count * std::min(kChunk, len), body);
}

enum class RKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

struct ReduceState {
  RKind kind;
  bool keepdims;
  bool axes_input;
  bool noop_with_empty_axes;
  Shape attr_axes;
};

template <class T>
void reduce_dispatch_kind(RKind k, const Tensor& x, uint64_t mask, Tensor& out, ThreadPool& pool) {
  if constexpr (std::is_same_v<T, bool>) {
    if (k == RKind::kMax) return reduce_typed<OpMax<T>, T>(x, mask, out, pool);
    if (k == RKind::kMin) return reduce_typed<OpMin<T>, T>(x, mask, out, pool);
    unsupported_dtype("reduction", DType::kBool);
  } else {
    switch (k) {
      case RKind::kSum: return reduce_typed<OpSum<T>, T>(x, mask, out, pool);
      case RKind::kMean: return reduce_typed<OpMean<T>, T>(x, mask, out, pool);
      case RKind::kMax: return reduce_typed<OpMax<T>, T>(x, mask, out, pool);
      case RKind::kMin: return reduce_typed<OpMin<T>, T>(x, mask, out, pool);
      case RKind::kProd: return reduce_typed<OpProd<T>, T>(x, mask, out, pool);
      case RKind::kL1: return reduce_typed<OpL1<T>, T>(x, mask, out, pool);
      case RKind::kL2: return reduce_typed<OpL2<T>, T>(x, mask, out, pool);
      case RKind::kLogSum: return reduce_typed<OpLogSum<T>, T>(x, mask, out, pool);
      case RKind::kLogSumExp: return reduce_typed<OpLogSumExp<T>, T>(x, mask, out, pool);
      case RKind::kSumSquare: return reduce_typed<OpSumSquare<T>, T>(x, mask, out, pool);
    }
  }
}

void reduce_compute(const ReduceState& st, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Node& n = ctx.node();
  Shape axes;
  if (!st.axes_input) {
    axes = st.attr_axes;
  } else if (const Tensor* a = ctx.optional_input(1)) {
    if (a->dtype() != DType::kInt64 && a->dtype() != DType::kInt32)
      fail(ErrorCode::kInvalidArgument, "axes (input 1) must be int64, got ", dtype_name(a->dtype()));
    for (int64_t i = 0; i < a->numel(); ++i) axes.push_back(int_at(*a, i));
  }
  const uint64_t mask = reduce_axes_mask(n, static_cast<int64_t>(x.rank()), axes, st.noop_with_empty_axes);
  // The output shape is known at planning unless axes are computed at run time.
  Tensor& out = ctx.allocate_output(0, x.dtype(), reduce_shape(x.shape(), mask, st.keepdims));
  dispatch_numeric(x.dtype(), [&]<class T>() { reduce_dispatch_kind<T>(st.kind, x, mask, out, ctx.pool()); },
                   n.op_type.c_str());
}

std::unique_ptr<Kernel> make_reduce(const KernelCreateInfo& info) {
  const Node& n = info.node;
  const std::string& op = n.op_type;
  ReduceState st{};
  if (op == "ReduceSum") st.kind = RKind::kSum;
  else if (op == "ReduceMean") st.kind = RKind::kMean;
  else if (op == "ReduceMax") st.kind = RKind::kMax;
  else if (op == "ReduceMin") st.kind = RKind::kMin;
  else if (op == "ReduceProd") st.kind = RKind::kProd;
  else if (op == "ReduceL1") st.kind = RKind::kL1;
  else if (op == "ReduceL2") st.kind = RKind::kL2;
  else if (op == "ReduceLogSum") st.kind = RKind::kLogSum;
  else if (op == "ReduceLogSumExp") st.kind = RKind::kLogSumExp;
  else st.kind = RKind::kSumSquare;
  st.keepdims = n.attr_int("keepdims", 1) != 0;
  st.axes_input = reduce_axes_from_input(n);
  st.noop_with_empty_axes = st.axes_input && n.attr_int("noop_with_empty_axes", 0) != 0;
  if (!st.axes_input) st.attr_axes = Shape(n.attr_ints("axes"));
  return make_fn_kernel(std::move(st), reduce_compute);
}

// ---- ArgMax / ArgMin ----

struct ArgState {
  bool is_max;
  bool keepdims;
  bool select_last;
  int64_t axis;
};

template <class A>
inline bool arg_better(bool is_max, bool last, A v, A best) {
  if (is_nan(v)) return last || !is_nan(best);  // the first (or last) NaN wins, as in numpy
  if (is_nan(best)) return false;
  if (is_max) return last ? v >= best : v > best;
  return last ? v <= best : v < best;
}

template <class T>
void arg_typed(const ArgState& st, const AxisSplit& s, const T* px, int64_t* py, ThreadPool& pool) {
  using A = MAcc<T>;
  const int64_t D = s.dim, I = s.inner;
  if (I == 1) {
    parallel_range(pool, s.outer, D, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        // The extreme (NaN if any) by a vectorised pass, then the first / last index holding it.
        const T* p = px + o * D;
        const A m = row_extreme<A>(p, D, st.is_max);
        const bool nan = is_nan(m);
        int64_t bi = 0;
        if (st.select_last) {
          for (int64_t d = D - 1; d >= 0; --d) {
            const A v = load<A>(p[d]);
            if (nan ? is_nan(v) : v == m) {
              bi = d;
              break;
            }
          }
        } else {
          for (int64_t d = 0; d < D; ++d) {
            const A v = load<A>(p[d]);
            if (nan ? is_nan(v) : v == m) {
              bi = d;
              break;
            }
          }
        }
        py[o] = bi;
      }
    });
    return;
  }
  const int64_t chunks = (I + kChunk - 1) / kChunk;
  parallel_range(pool, s.outer * chunks, D * std::min(kChunk, I), [&](int64_t i0, int64_t i1) {
    A best[kChunk];
    for (int64_t it = i0; it < i1; ++it) {
      const int64_t o = it / chunks, j0 = (it % chunks) * kChunk;
      const int64_t n = std::min(kChunk, I - j0);
      const T* p = px + o * D * I + j0;
      int64_t* y = py + o * I + j0;
      for (int64_t j = 0; j < n; ++j) {
        best[j] = load<A>(p[j]);
        y[j] = 0;
      }
      for (int64_t d = 1; d < D; ++d) {
        const T* q = p + d * I;
        for (int64_t j = 0; j < n; ++j) {
          const A v = load<A>(q[j]);
          if (arg_better(st.is_max, st.select_last, v, best[j])) {
            best[j] = v;
            y[j] = d;
          }
        }
      }
    }
  });
}

void arg_compute(const ArgState& st, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t axis = normalize_axis(st.axis, static_cast<int64_t>(x.rank()), ctx.node().op_type);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return;
  const AxisSplit s = split_at_axis(x.shape(), axis);
  if (s.dim == 0)
    fail(ErrorCode::kRuntime, ctx.node().op_type, ": cannot take the index of an extreme over axis ", axis, " of size 0");
  int64_t* py = out.data<int64_t>();
  dispatch_numeric(x.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>)
      unsupported_dtype(ctx.node().op_type.c_str(), x.dtype());
    else
      arg_typed<T>(st, s, static_cast<const T*>(x.raw_data()), py, ctx.pool());
  });
}

std::unique_ptr<Kernel> make_arg(const KernelCreateInfo& info) {
  const Node& n = info.node;
  ArgState st{n.op_type == "ArgMax", n.attr_int("keepdims", 1) != 0,
              n.opset >= 12 && n.attr_int("select_last_index", 0) != 0, n.attr_int("axis", 0)};
  return make_fn_kernel(st, arg_compute);
}

// ---- Softmax / LogSoftmax / Hardmax ----

enum class SmKind { kSoftmax, kLogSoftmax, kHardmax };

template <class T>
void softmax_rows(SmKind kind, const T* px, T* py, int64_t rows, int64_t D, ThreadPool& pool) {
  using A = FAcc<T>;
  parallel_range(pool, rows, D * 4, [&](int64_t r0, int64_t r1) {
    A buf[kChunk];  // 16-bit floats: exp() values of one chunk of the row
    for (int64_t r = r0; r < r1; ++r) {
      const T* p = px + r * D;
      T* q = py + r * D;
      if (kind == SmKind::kHardmax) {
        A best = load<A>(p[0]);
        int64_t bi = 0;
        for (int64_t d = 1; d < D; ++d) {
          const A v = load<A>(p[d]);
          if (v > best) {
            best = v;
            bi = d;
          }
        }
        for (int64_t d = 0; d < D; ++d) q[d] = from_acc<T>(A(d == bi ? 1 : 0));
        continue;
      }
      if constexpr (!is_half_v<T>) {
        // float / double: the output row holds exp(x - max) between passes.
        const A m = row_max_plain(p, D);
        if constexpr (std::is_same_v<A, float>)
          exp_le0_row(p, m, q, D);
        else
          for (int64_t d = 0; d < D; ++d) q[d] = exp_shifted(p[d] - m);
        const A sum = row_sum(q, D);
        if (kind == SmKind::kLogSoftmax) {
          const A lse = m + std::log(sum);
          for (int64_t d = 0; d < D; ++d) q[d] = p[d] - lse;
        } else {
          const A inv = A(1) / sum;
          for (int64_t d = 0; d < D; ++d) q[d] *= inv;
        }
      } else {
        // 16-bit floats: compute in float chunk by chunk (exp twice rather than round it).
        A m = load<A>(p[0]);
        for (int64_t d = 1; d < D; ++d) m = std::max(m, load<A>(p[d]));
        A sum = 0;
        for (int64_t d0 = 0; d0 < D; d0 += kChunk) {
          const int64_t n = std::min(kChunk, D - d0);
          for (int64_t j = 0; j < n; ++j) buf[j] = exp_shifted(load<A>(p[d0 + j]) - m);
          sum += row_sum(buf, n);
        }
        if (kind == SmKind::kLogSoftmax) {
          const A lse = m + std::log(sum);
          for (int64_t d = 0; d < D; ++d) q[d] = from_acc<T>(load<A>(p[d]) - lse);
        } else {
          const A inv = A(1) / sum;
          for (int64_t d = 0; d < D; ++d) q[d] = from_acc<T>(exp_shifted(load<A>(p[d]) - m) * inv);
        }
      }
    }
  });
}

template <class T>
void softmax_strided(SmKind kind, const AxisSplit& s, const T* px, T* py, ThreadPool& pool) {
  using A = FAcc<T>;
  constexpr bool kStore = !is_half_v<T>;
  const int64_t D = s.dim, I = s.inner;
  const int64_t chunks = (I + kChunk - 1) / kChunk;
  parallel_range(pool, s.outer * chunks, D * std::min(kChunk, I) * 4, [&](int64_t i0, int64_t i1) {
    A m[kChunk], sum[kChunk];
    int64_t bi[kChunk];
    for (int64_t it = i0; it < i1; ++it) {
      const int64_t o = it / chunks, j0 = (it % chunks) * kChunk;
      const int64_t n = std::min(kChunk, I - j0);
      const T* p = px + o * D * I + j0;
      T* q = py + o * D * I + j0;
      for (int64_t j = 0; j < n; ++j) m[j] = load<A>(p[j]);
      if (kind == SmKind::kHardmax) {
        for (int64_t j = 0; j < n; ++j) bi[j] = 0;
        for (int64_t d = 1; d < D; ++d)
          for (int64_t j = 0; j < n; ++j) {
            const A v = load<A>(p[d * I + j]);
            if (v > m[j]) {
              m[j] = v;
              bi[j] = d;
            }
          }
        for (int64_t d = 0; d < D; ++d)
          for (int64_t j = 0; j < n; ++j) q[d * I + j] = from_acc<T>(A(d == bi[j] ? 1 : 0));
        continue;
      }
      // A NaN input makes its column NaN through exp(x - max) whatever the max is.
      for (int64_t d = 1; d < D; ++d)
        for (int64_t j = 0; j < n; ++j) {
          const A v = load<A>(p[d * I + j]);
          m[j] = v > m[j] ? v : m[j];
        }
      for (int64_t j = 0; j < n; ++j) sum[j] = 0;
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < n; ++j) {
          const A e = exp_shifted(load<A>(p[d * I + j]) - m[j]);
          if constexpr (kStore)
            if (kind == SmKind::kSoftmax) q[d * I + j] = e;
          sum[j] += e;
        }
      if (kind == SmKind::kLogSoftmax) {
        for (int64_t j = 0; j < n; ++j) sum[j] = m[j] + std::log(sum[j]);
        for (int64_t d = 0; d < D; ++d)
          for (int64_t j = 0; j < n; ++j) q[d * I + j] = from_acc<T>(load<A>(p[d * I + j]) - sum[j]);
        continue;
      }
      for (int64_t j = 0; j < n; ++j) sum[j] = A(1) / sum[j];
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < n; ++j) {
          if constexpr (kStore)
            q[d * I + j] *= sum[j];
          else
            q[d * I + j] = from_acc<T>(exp_shifted(load<A>(p[d * I + j]) - m[j]) * sum[j]);
        }
    }
  });
}

void softmax_compute(const SmKind& kind, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (x.numel() == 0) return;
  const AxisSplit s = softmax_split(ctx.node(), x.shape());
  dispatch_float(x.dtype(), [&]<class T>() {
    const T* px = static_cast<const T*>(x.raw_data());
    T* py = static_cast<T*>(out.raw_data());
    if (s.inner == 1)
      softmax_rows<T>(kind, px, py, s.outer, s.dim, ctx.pool());
    else
      softmax_strided<T>(kind, s, px, py, ctx.pool());
  }, ctx.node().op_type.c_str());
}

std::unique_ptr<Kernel> make_softmax(const KernelCreateInfo& info) {
  const std::string& op = info.node.op_type;
  const SmKind k = op == "Softmax" ? SmKind::kSoftmax : op == "LogSoftmax" ? SmKind::kLogSoftmax : SmKind::kHardmax;
  return make_fn_kernel(k, softmax_compute);
}

// ---- CumSum ----

struct CumSumState {
  bool exclusive;
  bool reverse;
  bool product = false;  // CumProd (opset 26)
};

template <class T>
void cumsum_typed(const CumSumState& st, const AxisSplit& s, const T* px, T* py, ThreadPool& pool) {
  using A = SAcc<T>;
  const int64_t D = s.dim, I = s.inner;
  const int64_t chunks = (I + kChunk - 1) / kChunk;
  parallel_range(pool, s.outer * chunks, D * std::min(kChunk, I), [&](int64_t i0, int64_t i1) {
    A acc[kChunk];
    for (int64_t it = i0; it < i1; ++it) {
      const int64_t o = it / chunks, j0 = (it % chunks) * kChunk;
      const int64_t n = std::min(kChunk, I - j0);
      for (int64_t j = 0; j < n; ++j) acc[j] = A(st.product ? 1 : 0);
      for (int64_t k = 0; k < D; ++k) {
        const int64_t d = st.reverse ? D - 1 - k : k;
        const T* p = px + (o * D + d) * I + j0;
        T* q = py + (o * D + d) * I + j0;
        if (st.product) {
          for (int64_t j = 0; j < n; ++j) {
            if (st.exclusive) q[j] = store<T>(acc[j]);
            acc[j] *= load<A>(p[j]);
            if (!st.exclusive) q[j] = store<T>(acc[j]);
          }
        } else if (st.exclusive) {
          for (int64_t j = 0; j < n; ++j) {
            q[j] = store<T>(acc[j]);
            acc[j] += load<A>(p[j]);
          }
        } else {
          for (int64_t j = 0; j < n; ++j) {
            acc[j] += load<A>(p[j]);
            q[j] = store<T>(acc[j]);
          }
        }
      }
    }
  });
}

void cumsum_compute(const CumSumState& st, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& at = ctx.input(1);
  if (at.dtype() != DType::kInt64 && at.dtype() != DType::kInt32)
    fail(ErrorCode::kInvalidArgument, "axis (input 1) must be int32 or int64, got ", dtype_name(at.dtype()));
  if (at.numel() != 1) fail(ErrorCode::kInvalidArgument, "axis (input 1) must have one element, got ", at.numel());
  const int64_t r = static_cast<int64_t>(x.rank());
  const int64_t a = int_at(at, 0);
  if (a < -r || a >= r || r == 0)
    fail(ErrorCode::kRuntime, "axis ", a, " (input 1) is out of range for an input of rank ", r);
  Tensor& out = ctx.output(0);
  if (x.numel() == 0) return;
  const AxisSplit s = split_at_axis(x.shape(), a < 0 ? a + r : a);
  dispatch_numeric(x.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>)
      unsupported_dtype(st.product ? "CumProd" : "CumSum", x.dtype());
    else
      cumsum_typed<T>(st, s, static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), ctx.pool());
  });
}

std::unique_ptr<Kernel> make_cumsum(const KernelCreateInfo& info) {
  return make_fn_kernel(CumSumState{info.node.attr_int("exclusive", 0) != 0, info.node.attr_int("reverse", 0) != 0,
                                    info.node.op_type == "CumProd"},
                        cumsum_compute);
}

// ---- TopK ----

struct TopKState {
  int64_t axis;
  int64_t k_attr;  // opset < 10
  bool largest;
};

template <class A>
inline bool nan_greater(A a, A b) {  // a > b with NaN above everything
  if (is_nan(a)) return !is_nan(b);
  return a > b;
}

template <class T>
void topk_typed(const TopKState& st, const AxisSplit& s, int64_t k, const T* px, T* pv, int64_t* pi, ThreadPool& pool) {
  using A = MAcc<T>;
  const int64_t D = s.dim, I = s.inner;
  using Item = std::pair<A, int64_t>;
  const bool largest = st.largest;
  // Largest: value descending; smallest: ascending; ties: lower index first.
  auto before = [largest](const Item& x, const Item& y) {
    const bool xf = largest ? nan_greater(x.first, y.first) : nan_greater(y.first, x.first);
    const bool yf = largest ? nan_greater(y.first, x.first) : nan_greater(x.first, y.first);
    return xf || (!yf && x.second < y.second);
  };
  parallel_range(pool, s.outer * I, D * 8, [&](int64_t i0, int64_t i1) {
    std::vector<Item> buf(static_cast<size_t>(D));
    for (int64_t it = i0; it < i1; ++it) {
      const int64_t o = it / I, j = it % I;
      const T* p = px + o * D * I + j;
      for (int64_t d = 0; d < D; ++d) buf[d] = Item(load<A>(p[d * I]), d);
      if (k == 1) {
        size_t b = 0;
        for (size_t d = 1; d < buf.size(); ++d)
          if (before(buf[d], buf[b])) b = d;
        std::swap(buf[0], buf[b]);
      } else {
        std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), before);
      }
      T* v = pv + o * k * I + j;
      int64_t* ix = pi + o * k * I + j;
      for (int64_t t = 0; t < k; ++t) {
        v[t * I] = p[buf[t].second * I];
        ix[t * I] = buf[t].second;
      }
    }
  });
}

void topk_compute(const TopKState& st, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Node& n = ctx.node();
  const int64_t r = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(st.axis, r, n.op_type);
  int64_t k = st.k_attr;
  if (n.opset >= 10) {
    const Tensor& kt = ctx.input(1);
    if (kt.dtype() != DType::kInt64 && kt.dtype() != DType::kInt32)
      fail(ErrorCode::kInvalidArgument, "K (input 1) must be int64, got ", dtype_name(kt.dtype()));
    if (kt.numel() != 1) fail(ErrorCode::kInvalidArgument, "K (input 1) must have one element, got ", kt.numel());
    k = int_at(kt, 0);
  }
  if (k < 0 || k > x.dim(axis))
    fail(ErrorCode::kRuntime, "K = ", k, " is out of range [0, ", x.dim(axis), "] for axis ", axis, " of the input");
  const Shape os = topk_shape(n, x.shape(), axis, k);
  Tensor* values = ctx.has_output(0) ? &ctx.allocate_output(0, x.dtype(), os) : nullptr;
  Tensor* indices = ctx.has_output(1) ? &ctx.allocate_output(1, DType::kInt64, os) : nullptr;
  if (os.numel() == 0) return;
  // Missing outputs are computed into scratch.
  Tensor vs, is;
  if (!values) {
    vs = Tensor(x.dtype(), os);
    values = &vs;
  }
  if (!indices) {
    is = Tensor(DType::kInt64, os);
    indices = &is;
  }
  const AxisSplit s = split_at_axis(x.shape(), axis);
  dispatch_numeric(x.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>)
      unsupported_dtype("TopK", x.dtype());
    else
      topk_typed<T>(st, s, k, static_cast<const T*>(x.raw_data()), static_cast<T*>(values->raw_data()),
                    indices->data<int64_t>(), ctx.pool());
  });
}

std::unique_ptr<Kernel> make_topk(const KernelCreateInfo& info) {
  const Node& n = info.node;
  TopKState st{n.attr_int("axis", -1), n.attr_int("k", 0), n.opset < 11 || n.attr_int("largest", 1) != 0};
  return make_fn_kernel(st, topk_compute);
}

// ---- LpNormalization ----

struct LpState {
  int64_t axis;
  int p;
};

template <class T>
void lpnorm_typed(int p, const AxisSplit& s, const T* px, T* py, ThreadPool& pool) {
  using A = FAcc<T>;
  const int64_t D = s.dim, I = s.inner;
  const int64_t chunks = (I + kChunk - 1) / kChunk;
  parallel_range(pool, s.outer * chunks, D * std::min(kChunk, I), [&](int64_t i0, int64_t i1) {
    A norm[kChunk];
    for (int64_t it = i0; it < i1; ++it) {
      const int64_t o = it / chunks, j0 = (it % chunks) * kChunk;
      const int64_t n = std::min(kChunk, I - j0);
      const T* x = px + o * D * I + j0;
      T* y = py + o * D * I + j0;
      for (int64_t j = 0; j < n; ++j) norm[j] = 0;
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < n; ++j) {
          const A v = load<A>(x[d * I + j]);
          norm[j] += p == 1 ? std::fabs(v) : v * v;
        }
      // A zero norm (all-zero vector) gives zeros rather than NaN.
      for (int64_t j = 0; j < n; ++j) {
        const A nv = p == 1 ? norm[j] : std::sqrt(norm[j]);
        norm[j] = nv == A(0) ? A(0) : A(1) / nv;
      }
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < n; ++j) y[d * I + j] = from_acc<T>(load<A>(x[d * I + j]) * norm[j]);
    }
  });
}

void lpnorm_compute(const LpState& st, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (x.numel() == 0) return;
  const int64_t r = static_cast<int64_t>(x.rank());
  const AxisSplit s = r == 0 ? AxisSplit{} : split_at_axis(x.shape(), normalize_axis(st.axis, r, ctx.node().op_type));
  dispatch_float(x.dtype(), [&]<class T>() {
    lpnorm_typed<T>(st.p, s, static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), ctx.pool());
  }, "LpNormalization");
}

std::unique_ptr<Kernel> make_lpnorm(const KernelCreateInfo& info) {
  const int64_t p = info.node.attr_int("p", 2);
  if (p != 1 && p != 2) fail(ErrorCode::kInvalidGraph, info.node.label(), ": p must be 1 or 2, got ", p);
  return make_fn_kernel(LpState{info.node.attr_int("axis", -1), static_cast<int>(p)}, lpnorm_compute);
}

using namespace types;
constexpr TypeMask kBool = type_mask({DType::kBool});

const KernelDef kDefs[] = {
    {"", "ReduceSum", 1, 99, {{0, kNumeric}}, make_reduce},
    {"", "ReduceMean", 1, 99, {{0, kNumeric}}, make_reduce},
    {"", "ReduceMax", 1, 19, {{0, kNumeric}}, make_reduce},
    {"", "ReduceMax", 20, 99, {{0, kNumericBool}}, make_reduce},
    {"", "ReduceMin", 1, 19, {{0, kNumeric}}, make_reduce},
    {"", "ReduceMin", 20, 99, {{0, kNumericBool}}, make_reduce},
    {"", "ReduceProd", 1, 99, {{0, kNumeric}}, make_reduce},
    {"", "ReduceL1", 1, 99, {{0, kNumeric}}, make_reduce},
    {"", "ReduceL2", 1, 99, {{0, kNumeric}}, make_reduce},
    {"", "ReduceLogSum", 1, 99, {{0, kNumeric}}, make_reduce},
    {"", "ReduceLogSumExp", 1, 99, {{0, kNumeric}}, make_reduce},
    {"", "ReduceSumSquare", 1, 99, {{0, kNumeric}}, make_reduce},
    {"", "ArgMax", 1, 99, {{0, kNumeric}}, make_arg},
    {"", "ArgMin", 1, 99, {{0, kNumeric}}, make_arg},
    {"", "Softmax", 1, 99, {{0, kFloats}}, make_softmax},
    {"", "LogSoftmax", 1, 99, {{0, kFloats}}, make_softmax},
    {"", "Hardmax", 1, 99, {{0, kFloats}}, make_softmax},
    {"", "CumSum", 11, 99, {{0, kNumeric}, {1, kIndex}}, make_cumsum},
    {"", "CumProd", 26, 99, {{0, kNumeric}, {1, kIndex}}, make_cumsum},
    {"", "TopK", 1, 99, {{0, kNumeric}}, make_topk},
    {"", "LpNormalization", 1, 99, {{0, kFloats}}, make_lpnorm},
};

}  // namespace

std::span<const KernelDef> reduce_kernels() { return kDefs; }

}  // namespace onyx::cpu
