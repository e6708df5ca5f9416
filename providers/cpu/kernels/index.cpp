// CPU kernels: index family (GatherElements, GatherND, ScatterElements, ScatterND, Scatter,
// OneHot, NonZero, Compress, Trilu, EyeLike, DepthToSpace, SpaceToDepth, ReverseSequence, Unique,
// Col2Im, CenterCropPad).
//
// Indices read from data are validated before any parallel loop (the thread pool does not carry
// exceptions across threads), so compute bodies never throw and never touch memory out of bounds.
#include "ops/index.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {
namespace {

using namespace types;
constexpr TypeMask kComplex = type_mask({DType::kComplex64, DType::kComplex128});
/// Every type the data-movement kernels can move (numeric, bool, string, complex).
constexpr TypeMask kData = kAll | kComplex;
constexpr TypeMask kBoolOnly = type_mask({DType::kBool});
constexpr TypeMask kInt64Only = type_mask({DType::kInt64});

// ---------------------------------------------------------------------------------------------
// Helpers

/// Calls f.template operator()<T>() with std::string for strings, else an unsigned type of the
/// element size (kernels that only move elements).
template <class F>
void dispatch_move(DType dt, F&& f) {
  if (dt == DType::kString)
    f.template operator()<std::string>();
  else
    dispatch_bytes(dt, f);
}

/// Calls f(const I*) with the typed data of an int32/int64 index tensor.
template <class F>
void dispatch_index(const Tensor& t, const char* what, F&& f) {
  if (t.dtype() == DType::kInt64)
    f(static_cast<const int64_t*>(t.raw_data()));
  else if (t.dtype() == DType::kInt32)
    f(static_cast<const int32_t*>(t.raw_data()));
  else
    fail(ErrorCode::kInvalidArgument, what, " must be int32 or int64, got ", dtype_name(t.dtype()));
}

inline int64_t wrap(int64_t v, int64_t dim) { return v < 0 ? v + dim : v; }

/// Position of the first of p[0, n) outside [-dim(j), dim(j)) (or [0, dim(j)) without negative
/// indices), or -1. Runs over the pool for large n; never throws inside the pool.
template <class I, class Dim>
int64_t first_bad_index(ThreadPool& pool, const I* p, int64_t n, const Dim& dim_of, bool allow_negative) {
  std::atomic<int64_t> first{n};
  parallel_range(pool, n, 1, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      if (j >= first.load(std::memory_order_relaxed)) return;
      const int64_t v = static_cast<int64_t>(p[j]), d = dim_of(j);
      if (v >= d || v < (allow_negative ? -d : 0)) {
        int64_t cur = first.load();
        while (j < cur && !first.compare_exchange_weak(cur, j)) {
        }
        return;
      }
    }
  });
  const int64_t f = first.load();
  return f == n ? -1 : f;
}

[[noreturn]] void index_error(const char* input, int64_t pos, int64_t value, int64_t dim, int64_t axis,
                              bool allow_negative) {
  fail(ErrorCode::kRuntime, input, ": index ", value, " at position ", pos, " is out of range [",
       allow_negative ? -dim : 0, ", ", dim - 1, "] for axis ", axis, " of size ", dim);
}

/// Validates every entry of an index tensor against `dim_of(j)` (the size of the axis entry j
/// addresses, `axis_of(j)` names it), throwing kRuntime on the first bad one.
template <class Dim, class Axis>
void check_indices(ThreadPool& pool, const Tensor& ind, const char* input, const Dim& dim_of, const Axis& axis_of,
                   bool allow_negative) {
  dispatch_index(ind, input, [&](const auto* p) {
    const int64_t bad = first_bad_index(pool, p, ind.numel(), dim_of, allow_negative);
    if (bad >= 0) index_error(input, bad, static_cast<int64_t>(p[bad]), dim_of(bad), axis_of(bad), allow_negative);
  });
}

Shape strides_of(const Shape& s) {
  Shape st = Shape::filled(s.size(), 1);
  for (size_t k = s.size(); k-- > 1;) st[k - 1] = st[k] * s[k];
  return st;
}

int64_t prod(const Shape& s, size_t b, size_t e) {
  int64_t n = 1;
  for (size_t k = b; k < e; ++k) n *= s[k];
  return n;
}

/// Rows [r0, r1) of shape `s` (rows = all dims but the last): calls f(row, base) where base is
/// the sum of coord_k * stride[k] over the row's dims k != skip.
template <class F>
void for_rows(const Shape& s, const Shape& stride, int64_t skip, int64_t r0, int64_t r1, F&& f) {
  const int64_t r = static_cast<int64_t>(s.size());
  Shape c = Shape::filled(static_cast<size_t>(std::max<int64_t>(r - 1, 0)), 0);
  int64_t rem = r0, base = 0;
  for (int64_t k = r - 2; k >= 0; --k) {
    c[k] = rem % s[k];
    rem /= s[k];
    if (k != skip) base += c[k] * stride[k];
  }
  for (int64_t row = r0; row < r1; ++row) {
    f(row, base);
    for (int64_t k = r - 2; k >= 0; --k) {
      ++c[k];
      if (k != skip) base += stride[k];
      if (c[k] < s[k]) break;
      if (k != skip) base -= stride[k] * s[k];
      c[k] = 0;
    }
  }
}

/// Output 0 holds a copy of input 0 (the scatter ops start from the data).
void copy_input(KernelContext& ctx, const Tensor& in, Tensor& out) {
  if (out.raw_data() == in.raw_data() || in.numel() == 0) return;
  if (in.dtype() == DType::kString) {
    copy_elements(in.dtype(), in.raw_data(), out.raw_data(), in.numel());
    return;
  }
  const auto* s = static_cast<const uint8_t*>(in.raw_data());
  auto* d = static_cast<uint8_t*>(out.raw_data());
  constexpr int64_t kChunk = 1 << 16;
  const int64_t bytes = static_cast<int64_t>(in.nbytes());
  parallel_range(ctx.pool(), (bytes + kChunk - 1) / kChunk, kChunk / 4, [&](int64_t b, int64_t e) {
    const int64_t lo = b * kChunk, hi = std::min(bytes, e * kChunk);
    std::memcpy(d + lo, s + lo, static_cast<size_t>(hi - lo));
  });
}

// ---- Scatter reductions ----

enum class Red { kNone, kAdd, kMul, kMax, kMin };

Red parse_reduction(const Node& n) {
  const std::string r = n.attr_string("reduction", "none");
  if (r == "none") return Red::kNone;
  if (r == "add") return Red::kAdd;
  if (r == "mul") return Red::kMul;
  if (r == "max") return Red::kMax;
  if (r == "min") return Red::kMin;
  fail(ErrorCode::kInvalidGraph, n.label(), ": unknown reduction '", r, "'");
}

/// a + b and a * b; integers wrap (computed in uint64_t, so overflow is defined), 16-bit floats
/// go through float.
template <class T>
inline T add_values(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return from_acc<T>(static_cast<Acc<T>>(to_acc(a) + to_acc(b)));
}
template <class T>
inline T mul_values(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return from_acc<T>(static_cast<Acc<T>>(to_acc(a) * to_acc(b)));
}

template <Red R, class T>
inline void reduce_into(T& d, const T& u) {
  if constexpr (R == Red::kNone) {
    d = u;
  } else if constexpr (std::is_same_v<T, bool>) {
    if constexpr (R == Red::kAdd || R == Red::kMax)
      d = d || u;
    else
      d = d && u;
  } else {
    const Acc<T> a = to_acc(d), b = to_acc(u);
    if constexpr (R == Red::kAdd) {
      d = add_values(d, u);
    } else if constexpr (R == Red::kMul) {
      d = mul_values(d, u);
    } else if constexpr (R == Red::kMax) {
      if (!(a != a) && (b != b || b > a)) d = u;  // NaN propagates, as numpy's maximum
    } else {
      if (!(a != a) && (b != b || b < a)) d = u;
    }
  }
}

template <class F>
void dispatch_reduction(Red r, F&& f) {
  switch (r) {
    case Red::kNone:
      f.template operator()<Red::kNone>();
      break;
    case Red::kAdd:
      f.template operator()<Red::kAdd>();
      break;
    case Red::kMul:
      f.template operator()<Red::kMul>();
      break;
    case Red::kMax:
      f.template operator()<Red::kMax>();
      break;
    case Red::kMin:
      f.template operator()<Red::kMin>();
      break;
  }
}

/// Runs f.template operator()<T, R>() for the data type: any type when there is no reduction
/// (moved as bytes), numeric types and bool for reductions.
template <class F>
void dispatch_scatter(DType dt, Red r, F&& f) {
  if (r == Red::kNone) {
    dispatch_move(dt, [&]<class T>() { f.template operator()<T, Red::kNone>(); });
    return;
  }
  if (dt == DType::kString || dt == DType::kComplex64 || dt == DType::kComplex128)
    fail(ErrorCode::kNotImplemented, "scatter reductions are not defined for ", dtype_name(dt));
  dispatch_numeric(
      dt, [&]<class T>() { dispatch_reduction(r, [&]<Red R>() { f.template operator()<T, R>(); }); }, "scatter");
}

// ---------------------------------------------------------------------------------------------
// GatherElements

void gather_elements_compute(const int&, KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const int64_t axis = check_elements_shapes(ctx.node(), data.shape(), ind.shape(), nullptr);
  Tensor& out = ctx.allocate_output(0, data.dtype(), ind.shape());
  const int64_t total = ind.numel();
  if (total == 0) return;
  const int64_t r = static_cast<int64_t>(data.rank()), dim = data.dim(axis);
  check_indices(
      ctx.pool(), ind, "input 1 (indices)", [dim](int64_t) { return dim; }, [axis](int64_t) { return axis; }, true);
  const Shape ds = strides_of(data.shape());
  const int64_t inner = ind.dim(r - 1), rows = total / inner, astride = ds[axis];
  dispatch_move(data.dtype(), [&]<class T>() {
    const T* src = static_cast<const T*>(data.raw_data());
    T* dst = static_cast<T*>(out.raw_data());
    dispatch_index(ind, "indices", [&](const auto* ip) {
      parallel_range(ctx.pool(), rows, inner, [&](int64_t r0, int64_t r1) {
        for_rows(ind.shape(), ds, axis, r0, r1, [&](int64_t row, int64_t base) {
          const auto* irow = ip + row * inner;
          T* orow = dst + row * inner;
          if (axis == r - 1) {
            for (int64_t j = 0; j < inner; ++j) orow[j] = src[base + wrap(irow[j], dim)];
          } else {
            for (int64_t j = 0; j < inner; ++j) orow[j] = src[base + j + wrap(irow[j], dim) * astride];
          }
        });
      });
    });
  });
}

// ---------------------------------------------------------------------------------------------
// ScatterElements / Scatter

struct ScatterState {
  Red red = Red::kNone;
  bool allow_negative = true;
};

void scatter_elements_compute(const ScatterState& st, KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  if (upd.dtype() != data.dtype())
    fail(ErrorCode::kInvalidArgument, "updates has type ", dtype_name(upd.dtype()), " but data has ",
         dtype_name(data.dtype()));
  const int64_t axis = check_elements_shapes(ctx.node(), data.shape(), ind.shape(), &upd.shape());
  Tensor& out = ctx.allocate_output(0, data.dtype(), data.shape());
  copy_input(ctx, data, out);
  const int64_t total = ind.numel();
  if (total == 0) return;
  const int64_t r = static_cast<int64_t>(data.rank()), dim = data.dim(axis);
  check_indices(
      ctx.pool(), ind, "input 1 (indices)", [dim](int64_t) { return dim; }, [axis](int64_t) { return axis; },
      st.allow_negative);
  const Shape ds = strides_of(data.shape());
  const int64_t inner = ind.dim(r - 1), astride = ds[axis];
  // Updates that differ in a coordinate before the axis never write the same element, so blocks
  // of the leading dims run in parallel; inside a block updates apply in index order.
  const int64_t outer = prod(ind.shape(), 0, static_cast<size_t>(axis));
  const int64_t rows_per_outer = total / inner / outer;
  dispatch_scatter(data.dtype(), st.red, [&]<class T, Red R>() {
    const T* up = static_cast<const T*>(upd.raw_data());
    T* dst = static_cast<T*>(out.raw_data());
    dispatch_index(ind, "indices", [&](const auto* ip) {
      parallel_range(ctx.pool(), outer, rows_per_outer * inner, [&](int64_t o0, int64_t o1) {
        for_rows(ind.shape(), ds, axis, o0 * rows_per_outer, o1 * rows_per_outer, [&](int64_t row, int64_t base) {
          const auto* irow = ip + row * inner;
          const T* urow = up + row * inner;
          if (axis == r - 1) {
            for (int64_t j = 0; j < inner; ++j) reduce_into<R>(dst[base + wrap(irow[j], dim)], urow[j]);
          } else {
            for (int64_t j = 0; j < inner; ++j) reduce_into<R>(dst[base + j + wrap(irow[j], dim) * astride], urow[j]);
          }
        });
      });
    });
  });
}

std::unique_ptr<Kernel> make_scatter_elements(const KernelCreateInfo& info) {
  ScatterState st;
  st.red = info.node.opset >= 16 ? parse_reduction(info.node) : Red::kNone;
  st.allow_negative = !(info.node.op_type == "Scatter" && info.node.opset < 11);
  return make_fn_kernel(st, scatter_elements_compute);
}

// ---------------------------------------------------------------------------------------------
// GatherND / ScatterND

void gather_nd_compute(const int64_t& batch_dims, KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Shape out_shape = gather_nd_shape(ctx.node(), data.shape(), ind.shape(), batch_dims);
  Tensor& out = ctx.allocate_output(0, data.dtype(), out_shape);
  if (out.numel() == 0) return;
  const size_t q = ind.rank(), r = data.rank(), b = static_cast<size_t>(batch_dims);
  const int64_t k = ind.dim(q - 1);
  const int64_t slice = prod(data.shape(), b + k, r);
  const int64_t tuples = prod(ind.shape(), 0, q - 1);
  const int64_t per_batch = prod(ind.shape(), b, q - 1);
  const int64_t batch_stride = prod(data.shape(), b, r);
  const Shape ds = strides_of(data.shape());
  if (k > 0)
    check_indices(
        ctx.pool(), ind, "input 1 (indices)", [&](int64_t j) { return data.dim(b + j % k); },
        [&](int64_t j) { return static_cast<int64_t>(b + j % k); }, true);
  dispatch_move(data.dtype(), [&]<class T>() {
    const T* src = static_cast<const T*>(data.raw_data());
    T* dst = static_cast<T*>(out.raw_data());
    dispatch_index(ind, "indices", [&](const auto* ip) {
      parallel_range(ctx.pool(), tuples, slice + k, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          int64_t off = (t / per_batch) * batch_stride;
          for (int64_t i = 0; i < k; ++i) off += wrap(ip[t * k + i], data.dim(b + i)) * ds[b + i];
          if (slice == 1)
            dst[t] = src[off];
          else
            std::copy_n(src + off, slice, dst + t * slice);
        }
      });
    });
  });
}

std::unique_ptr<Kernel> make_gather_nd(const KernelCreateInfo& info) {
  const int64_t b = info.node.opset >= 12 ? info.node.attr_int("batch_dims", 0) : 0;
  return make_fn_kernel(b, gather_nd_compute);
}

void scatter_nd_compute(const ScatterState& st, KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  if (upd.dtype() != data.dtype())
    fail(ErrorCode::kInvalidArgument, "updates has type ", dtype_name(upd.dtype()), " but data has ",
         dtype_name(data.dtype()));
  check_scatter_nd_shapes(ctx.node(), data.shape(), ind.shape(), upd.shape());
  Tensor& out = ctx.allocate_output(0, data.dtype(), data.shape());
  copy_input(ctx, data, out);
  const size_t q = ind.rank(), r = data.rank();
  const int64_t k = ind.dim(q - 1);
  const int64_t slice = prod(data.shape(), k, r);
  const int64_t tuples = prod(ind.shape(), 0, q - 1);
  if (tuples == 0 || slice == 0) return;
  const Shape ds = strides_of(data.shape());
  if (k > 0)
    check_indices(
        ctx.pool(), ind, "input 1 (indices)", [&](int64_t j) { return data.dim(j % k); },
        [&](int64_t j) { return j % k; }, true);
  dispatch_scatter(data.dtype(), st.red, [&]<class T, Red R>() {
    const T* up = static_cast<const T*>(upd.raw_data());
    T* dst = static_cast<T*>(out.raw_data());
    dispatch_index(ind, "indices", [&](const auto* ip) {
      // Tuples apply in order (later ones win on duplicates); large slices split over the pool.
      for (int64_t t = 0; t < tuples; ++t) {
        int64_t off = 0;
        for (int64_t i = 0; i < k; ++i) off += wrap(ip[t * k + i], data.dim(i)) * ds[i];
        T* d = dst + off;
        const T* u = up + t * slice;
        parallel_range(ctx.pool(), slice, 1, [&](int64_t e0, int64_t e1) {
          if constexpr (R == Red::kNone) {
            std::copy(u + e0, u + e1, d + e0);
          } else {
            for (int64_t e = e0; e < e1; ++e) reduce_into<R>(d[e], u[e]);
          }
        });
      }
    });
  });
}

std::unique_ptr<Kernel> make_scatter_nd(const KernelCreateInfo& info) {
  ScatterState st;
  st.red = info.node.opset >= 16 ? parse_reduction(info.node) : Red::kNone;
  return make_fn_kernel(st, scatter_nd_compute);
}

// ---------------------------------------------------------------------------------------------
// OneHot

/// An index value of any numeric type as int64; values that do not fit (NaN, huge) map to
/// INT64_MIN, which is out of range for every depth.
template <class T>
inline int64_t as_index(T v) {
  if constexpr (std::is_floating_point_v<Acc<T>>) {
    const double x = static_cast<double>(to_acc(v));
    if (!(x > -9.2e18 && x < 9.2e18)) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(x);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::min()
                                                                          : static_cast<int64_t>(v);
  } else {
    return static_cast<int64_t>(v);
  }
}

void onehot_compute(const int&, KernelContext& ctx) {
  const Tensor& ind = ctx.input(0);
  const Tensor& dep = ctx.input(1);
  const Tensor& vals = ctx.input(2);
  if (dep.numel() != 1)
    fail(ErrorCode::kInvalidArgument, "input 1 (depth) must have exactly one element, got ", dep.shape().to_string());
  const double dv = read_scalar(dep);
  if (!(dv >= 0) || dv > 9.0e15)
    fail(ErrorCode::kInvalidArgument, "input 1 (depth) value ", dv, " is not a valid size");
  const int64_t depth = static_cast<int64_t>(dv);
  if (vals.numel() != 2)
    fail(ErrorCode::kInvalidArgument, "input 2 (values) must hold [off_value, on_value], got shape ",
         vals.shape().to_string());
  const Shape out_shape = onehot_shape(ctx.node(), ind.shape(), depth);
  Tensor& out = ctx.allocate_output(0, vals.dtype(), out_shape);
  if (out.numel() == 0) return;
  const int64_t r = static_cast<int64_t>(ind.rank());
  int64_t axis = ctx.node().attr_int("axis", -1);
  if (axis < 0) axis += r + 1;
  const int64_t outer = prod(ind.shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = prod(ind.shape(), static_cast<size_t>(axis), ind.rank());
  const bool negative = ctx.node().opset >= 11;
  dispatch_move(vals.dtype(), [&]<class V>() {
    const V* vp = static_cast<const V*>(vals.raw_data());
    V* dst = static_cast<V*>(out.raw_data());
    dispatch_numeric(
        ind.dtype(),
        [&]<class I>() {
          const I* ip = static_cast<const I*>(ind.raw_data());
          parallel_range(ctx.pool(), outer, depth * inner, [&](int64_t o0, int64_t o1) {
            for (int64_t o = o0; o < o1; ++o) {
              V* block = dst + o * depth * inner;
              std::fill(block, block + depth * inner, vp[0]);
              for (int64_t i = 0; i < inner; ++i) {
                int64_t v = as_index(ip[o * inner + i]);
                if (v < 0 && negative && v >= -depth) v += depth;
                if (v >= 0 && v < depth) block[v * inner + i] = vp[1];
              }
            }
          });
        },
        "OneHot indices");
  });
}

// ---------------------------------------------------------------------------------------------
// NonZero

template <class NZ>
void nonzero_run(KernelContext& ctx, const Tensor& x, const NZ& nz) {
  const int64_t n = x.numel();
  const size_t r = x.rank();
  const int64_t rows = std::max<size_t>(r, 1);
  constexpr int64_t kBlock = 1 << 14;
  const int64_t nb = std::max<int64_t>(1, (n + kBlock - 1) / kBlock);
  std::vector<int64_t> counts(static_cast<size_t>(nb) + 1, 0);
  parallel_range(ctx.pool(), nb, kBlock, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      int64_t c = 0;
      for (int64_t i = b * kBlock, e = std::min(n, (b + 1) * kBlock); i < e; ++i) c += nz(i) ? 1 : 0;
      counts[b + 1] = c;
    }
  });
  for (int64_t b = 0; b < nb; ++b) counts[b + 1] += counts[b];
  const int64_t total = counts[nb];
  Tensor& out = ctx.allocate_output(0, DType::kInt64, Shape{rows, total});
  if (total == 0) return;
  int64_t* o = out.data<int64_t>();
  if (r == 0) {
    o[0] = 0;
    return;
  }
  // Coordinates of each block's first element, then counted up; the innermost coordinate is the
  // loop variable of a row, so the per-element work is one test and, for hits, r stores.
  const int64_t last = x.dim(r - 1);
  std::vector<int64_t> dims(x.shape().begin(), x.shape().end());
  parallel_range(ctx.pool(), nb, kBlock, [&](int64_t b0, int64_t b1) {
    std::vector<int64_t> c(r, 0);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t start = b * kBlock, end = std::min(n, (b + 1) * kBlock);
      int64_t rem = start;
      for (size_t k = r; k-- > 0;) {
        c[k] = rem % dims[k];
        rem /= dims[k];
      }
      int64_t pos = counts[b];
      int64_t* const lastrow = o + (r - 1) * total;
      for (int64_t i = start; i < end;) {
        const int64_t j0 = c[r - 1], stop = std::min(end, i + (last - j0));
        for (int64_t j = j0; i < stop; ++i, ++j) {
          if (!nz(i)) continue;
          for (size_t k = 0; k + 1 < r; ++k) o[k * total + pos] = c[k];
          lastrow[pos++] = j;
        }
        // Next row.
        c[r - 1] = 0;
        for (size_t k = r - 1; k-- > 0;) {
          if (++c[k] < dims[k]) break;
          c[k] = 0;
        }
      }
    }
  });
}

void nonzero_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  switch (x.dtype()) {
    case DType::kString: {
      const auto* p = static_cast<const std::string*>(x.raw_data());
      return nonzero_run(ctx, x, [p](int64_t i) { return !p[i].empty(); });
    }
    case DType::kComplex64: {
      const auto* p = static_cast<const float*>(x.raw_data());
      return nonzero_run(ctx, x, [p](int64_t i) { return p[2 * i] != 0 || p[2 * i + 1] != 0; });
    }
    case DType::kComplex128: {
      const auto* p = static_cast<const double*>(x.raw_data());
      return nonzero_run(ctx, x, [p](int64_t i) { return p[2 * i] != 0 || p[2 * i + 1] != 0; });
    }
    default:
      dispatch_numeric(
          x.dtype(),
          [&]<class T>() {
            const T* p = static_cast<const T*>(x.raw_data());
            nonzero_run(ctx, x, [p](int64_t i) { return to_acc(p[i]) != Acc<T>(0); });
          },
          "NonZero");
  }
}

// ---------------------------------------------------------------------------------------------
// Compress

struct CompressState {
  bool has_axis = false;
  int64_t axis = 0;
};

void compress_compute(const CompressState& st, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  if (cond.dtype() != DType::kBool) fail(ErrorCode::kInvalidArgument, "input 1 (condition) must be bool");
  if (cond.rank() != 1)
    fail(ErrorCode::kInvalidArgument, "input 1 (condition) must be 1-D, got ", cond.shape().to_string());
  int64_t outer = 1, dim = in.numel(), inner = 1, axis = 0;
  if (st.has_axis) {
    if (in.rank() == 0) fail(ErrorCode::kInvalidArgument, "axis is given but the input is a scalar");
    axis = normalize_axis(st.axis, static_cast<int64_t>(in.rank()), "Compress");
    outer = prod(in.shape(), 0, static_cast<size_t>(axis));
    dim = in.dim(axis);
    inner = prod(in.shape(), static_cast<size_t>(axis) + 1, in.rank());
  }
  const bool* c = cond.data<bool>();
  const int64_t len = cond.numel();
  std::vector<int64_t> sel;
  for (int64_t j = 0; j < len; ++j) {
    if (!c[j]) continue;
    if (j >= dim)
      fail(ErrorCode::kRuntime, "input 1 (condition): entry ", j, " is true but the input has ", dim,
           st.has_axis ? " entries along the axis" : " elements");
    sel.push_back(j);
  }
  const int64_t cnt = static_cast<int64_t>(sel.size());
  Shape out_shape{cnt};
  if (st.has_axis) {
    out_shape = in.shape();
    out_shape[axis] = cnt;
  }
  Tensor& out = ctx.allocate_output(0, in.dtype(), out_shape);
  if (out.numel() == 0) return;
  dispatch_move(in.dtype(), [&]<class T>() {
    const T* src = static_cast<const T*>(in.raw_data());
    T* dst = static_cast<T*>(out.raw_data());
    parallel_range(ctx.pool(), outer, cnt * inner, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        T* d = dst + o * cnt * inner;
        const T* s = src + o * dim * inner;
        if (inner == 1)
          for (int64_t i = 0; i < cnt; ++i) d[i] = s[sel[i]];
        else
          for (int64_t i = 0; i < cnt; ++i) std::copy_n(s + sel[i] * inner, inner, d + i * inner);
      }
    });
  });
}

std::unique_ptr<Kernel> make_compress(const KernelCreateInfo& info) {
  CompressState st;
  st.has_axis = info.node.has_attr("axis");
  st.axis = info.node.attr_int("axis", 0);
  return make_fn_kernel(st, compress_compute);
}

// ---------------------------------------------------------------------------------------------
// Trilu

void trilu_compute(const bool& upper, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (in.rank() < 2) fail(ErrorCode::kInvalidArgument, "input must have rank >= 2, got ", in.shape().to_string());
  int64_t k = 0;
  if (const Tensor* kt = ctx.optional_input(1)) {
    if (kt->numel() != 1)
      fail(ErrorCode::kInvalidArgument, "input 1 (k) must be a scalar, got ", kt->shape().to_string());
    if (kt->dtype() != DType::kInt64 && kt->dtype() != DType::kInt32)
      fail(ErrorCode::kInvalidArgument, "input 1 (k) must be int64");
    k = int_at(*kt, 0);
  }
  Tensor& out = ctx.allocate_output(0, in.dtype(), in.shape());
  if (out.numel() == 0) return;
  const int64_t M = in.dim(in.rank() - 2), N = in.dim(in.rank() - 1);
  k = std::clamp<int64_t>(k, -M - 1, N + 1);
  const int64_t rows = in.numel() / N;
  dispatch_move(in.dtype(), [&]<class T>() {
    const T* src = static_cast<const T*>(in.raw_data());
    T* dst = static_cast<T*>(out.raw_data());
    parallel_range(ctx.pool(), rows, N, [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        const int64_t i = row % M;
        const T* s = src + row * N;
        T* d = dst + row * N;
        if (upper) {  // keep j >= i + k
          const int64_t lo = std::clamp<int64_t>(i + k, 0, N);
          std::fill(d, d + lo, T{});
          std::copy(s + lo, s + N, d + lo);
        } else {  // keep j <= i + k
          const int64_t hi = std::clamp<int64_t>(i + k + 1, 0, N);
          std::copy(s, s + hi, d);
          std::fill(d + hi, d + N, T{});
        }
      }
    });
  });
}

std::unique_ptr<Kernel> make_trilu(const KernelCreateInfo& info) {
  return make_fn_kernel(info.node.attr_int("upper", 1) != 0, trilu_compute);
}

// ---------------------------------------------------------------------------------------------
// EyeLike

struct EyeLikeState {
  int64_t k = 0;
};

void eyelike_compute(const EyeLikeState& st, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (in.rank() != 2) fail(ErrorCode::kInvalidArgument, "input must be 2-D, got ", in.shape().to_string());
  const DType dt = eyelike_dtype(ctx.node(), in.dtype());
  Tensor& out = ctx.allocate_output(0, dt, in.shape());
  if (out.numel() == 0) return;
  std::memset(out.raw_data(), 0, out.nbytes());
  const int64_t M = in.dim(0), N = in.dim(1), k = st.k;
  if (k >= N || k <= -M) return;
  const int64_t i0 = std::max<int64_t>(0, -k), i1 = std::min<int64_t>(M, N - k);
  dispatch_numeric(
      dt,
      [&]<class T>() {
        T* d = static_cast<T*>(out.raw_data());
        const T one = from_acc<T>(static_cast<Acc<T>>(1));
        for (int64_t i = i0; i < i1; ++i) d[i * N + i + k] = one;
      },
      "EyeLike");
}

std::unique_ptr<Kernel> make_eyelike(const KernelCreateInfo& info) {
  return make_fn_kernel(EyeLikeState{info.node.attr_int("k", 0)}, eyelike_compute);
}

// ---------------------------------------------------------------------------------------------
// DepthToSpace / SpaceToDepth

struct BlockState {
  int64_t b = 1;
  bool crd = false;
};

void depth_to_space_compute(const BlockState& st, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const int64_t b = st.b;
  const Shape os = depth_to_space_shape(ctx.node(), in.shape(), b);
  Tensor& out = ctx.allocate_output(0, in.dtype(), os);
  if (out.numel() == 0) return;
  const int64_t C = in.dim(1), H = in.dim(2), W = in.dim(3), C2 = os[1], OH = os[2], OW = os[3];
  const int64_t rows = os[0] * C2 * H * b;  // (n, c, y, by)
  dispatch_move(in.dtype(), [&]<class T>() {
    const T* src = static_cast<const T*>(in.raw_data());
    T* dst = static_cast<T*>(out.raw_data());
    parallel_range(ctx.pool(), rows, OW, [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        const int64_t by = row % b, y = (row / b) % H, c = (row / (b * H)) % C2, n = row / (b * H * C2);
        T* orow = dst + ((n * C2 + c) * OH + y * b + by) * OW;
        for (int64_t bx = 0; bx < b; ++bx) {
          const int64_t ch = st.crd ? (c * b + by) * b + bx : (by * b + bx) * C2 + c;
          const T* irow = src + ((n * C + ch) * H + y) * W;
          for (int64_t x = 0; x < W; ++x) orow[x * b + bx] = irow[x];
        }
      }
    });
  });
}

void space_to_depth_compute(const BlockState& st, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const int64_t b = st.b;
  const Shape os = space_to_depth_shape(ctx.node(), in.shape(), b);
  Tensor& out = ctx.allocate_output(0, in.dtype(), os);
  if (out.numel() == 0) return;
  const int64_t C = in.dim(1), H = in.dim(2), W = in.dim(3), OC = os[1], OH = os[2], OW = os[3];
  const int64_t rows = os[0] * OC * OH;  // (n, oc, y)
  dispatch_move(in.dtype(), [&]<class T>() {
    const T* src = static_cast<const T*>(in.raw_data());
    T* dst = static_cast<T*>(out.raw_data());
    parallel_range(ctx.pool(), rows, OW, [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        const int64_t y = row % OH, oc = (row / OH) % OC, n = row / (OH * OC);
        // Output channel (by b + bx) C + c (DCR) or (c b + by) b + bx (CRD).
        const int64_t c = st.crd ? oc / (b * b) : oc % C, bb = st.crd ? oc % (b * b) : oc / C, by = bb / b, bx = bb % b;
        const T* irow = src + ((n * C + c) * H + y * b + by) * W + bx;
        T* orow = dst + row * OW;
        for (int64_t x = 0; x < OW; ++x) orow[x] = irow[x * b];
      }
    });
  });
}

std::unique_ptr<Kernel> make_depth_to_space(const KernelCreateInfo& info) {
  return make_fn_kernel(BlockState{blocksize_attr(info.node), depth_to_space_crd(info.node)}, depth_to_space_compute);
}
std::unique_ptr<Kernel> make_space_to_depth(const KernelCreateInfo& info) {
  return make_fn_kernel(BlockState{blocksize_attr(info.node), depth_to_space_crd(info.node)}, space_to_depth_compute);
}

// ---------------------------------------------------------------------------------------------
// ReverseSequence

struct ReverseState {
  int64_t batch_axis = 1, time_axis = 0;
};

void reverse_sequence_compute(const ReverseState& st, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Tensor& lens = ctx.input(1);
  if (in.rank() < 2) fail(ErrorCode::kInvalidArgument, "input must have rank >= 2, got ", in.shape().to_string());
  const int64_t T = in.dim(st.time_axis), B = in.dim(st.batch_axis);
  if (lens.rank() != 1 || lens.numel() != B)
    fail(ErrorCode::kInvalidArgument, "input 1 (sequence_lens) has shape ", lens.shape().to_string(),
         " for batch size ", B);
  for (int64_t i = 0; i < B; ++i) {
    const int64_t v = int_at(lens, i);
    if (v < 0 || v > T)
      fail(ErrorCode::kRuntime, "input 1 (sequence_lens): value ", v, " at position ", i, " is out of range [0, ", T,
           "]");
  }
  Tensor& out = ctx.allocate_output(0, in.dtype(), in.shape());
  if (out.numel() == 0) return;
  const int64_t inner = prod(in.shape(), 2, in.rank());
  const bool time_first = st.time_axis == 0;
  dispatch_move(in.dtype(), [&]<class E>() {
    const E* src = static_cast<const E*>(in.raw_data());
    E* dst = static_cast<E*>(out.raw_data());
    parallel_range(ctx.pool(), T * B, inner, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t t = p / B, bb = p % B;
        const int64_t len = int_at(lens, bb);
        const int64_t to = t < len ? len - 1 - t : t;
        const int64_t so = time_first ? (t * B + bb) * inner : (bb * T + t) * inner;
        const int64_t d = time_first ? (to * B + bb) * inner : (bb * T + to) * inner;
        std::copy_n(src + so, inner, dst + d);
      }
    });
  });
}

std::unique_ptr<Kernel> make_reverse_sequence(const KernelCreateInfo& info) {
  ReverseState st{info.node.attr_int("batch_axis", 1), info.node.attr_int("time_axis", 0)};
  if ((st.batch_axis != 0 && st.batch_axis != 1) || (st.time_axis != 0 && st.time_axis != 1) ||
      st.batch_axis == st.time_axis)
    fail(ErrorCode::kInvalidGraph, info.node.label(), ": batch_axis and time_axis must be 0 and 1 in some order");
  return make_fn_kernel(st, reverse_sequence_compute);
}

// ---------------------------------------------------------------------------------------------
// Unique

/// Three-way comparison; NaNs are equal to each other and greater than every number.
template <class T>
inline int compare3(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, std::string>) {
    const int c = a.compare(b);
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  } else {
    const auto x = to_acc(a), y = to_acc(b);
    if constexpr (std::is_floating_point_v<decltype(x)>) {
      const bool nx = x != x, ny = y != y;
      if (nx || ny) return nx == ny ? 0 : (nx ? 1 : -1);
    }
    return x < y ? -1 : (y < x ? 1 : 0);
  }
}

struct UniqueState {
  bool has_axis = false;
  int64_t axis = 0;
  bool sorted = true;
};

template <class T>
void unique_run(const UniqueState& st, KernelContext& ctx, const Tensor& in) {
  int64_t outer = 1, dim = in.numel(), inner = 1, axis = 0;
  if (st.has_axis) {
    if (in.rank() == 0) fail(ErrorCode::kInvalidArgument, "axis is given but the input is a scalar");
    axis = normalize_axis(st.axis, static_cast<int64_t>(in.rank()), "Unique");
    outer = prod(in.shape(), 0, static_cast<size_t>(axis));
    dim = in.dim(axis);
    inner = prod(in.shape(), static_cast<size_t>(axis) + 1, in.rank());
  }
  const T* src = static_cast<const T*>(in.raw_data());
  // Items are single elements (no axis) or slices along the axis, compared lexicographically
  // in row-major order of the remaining dims.
  auto item_cmp = [&](int64_t i, int64_t j) {
    for (int64_t o = 0; o < outer; ++o) {
      const T* a = src + (o * dim + i) * inner;
      const T* b = src + (o * dim + j) * inner;
      for (int64_t e = 0; e < inner; ++e)
        if (const int c = compare3(a[e], b[e])) return c;
    }
    return 0;
  };
  std::vector<int64_t> perm(static_cast<size_t>(dim));
  std::iota(perm.begin(), perm.end(), int64_t(0));
  const bool flat = outer == 1 && inner == 1;
  if (flat && !std::is_same_v<T, std::string>) {
    // Single numbers: sort (value, position) pairs in place of an indirect sort.
    using K = std::conditional_t<std::is_same_v<T, std::string>, int, Acc<T>>;
    std::vector<std::pair<K, int64_t>> kv(static_cast<size_t>(dim));
    if constexpr (!std::is_same_v<T, std::string>)
      for (int64_t i = 0; i < dim; ++i) kv[i] = {to_acc(src[i]), i};
    std::sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) {
      const int c = compare3(a.first, b.first);
      return c < 0 || (c == 0 && a.second < b.second);
    });
    for (int64_t p = 0; p < dim; ++p) perm[p] = kv[p].second;
  } else if (flat) {
    std::sort(perm.begin(), perm.end(), [&](int64_t i, int64_t j) {
      const int c = compare3(src[i], src[j]);
      return c < 0 || (c == 0 && i < j);
    });
  } else {
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t i, int64_t j) { return item_cmp(i, j) < 0; });
  }
  // Groups of equal items in sorted order; ties kept in position order make each group's first
  // entry its first occurrence.
  std::vector<int64_t> first, count, group_of(static_cast<size_t>(dim));
  for (size_t p = 0; p < perm.size(); ++p) {
    if (p == 0 || (flat ? compare3(src[perm[p - 1]], src[perm[p]]) : item_cmp(perm[p - 1], perm[p])) != 0) {
      first.push_back(perm[p]);
      count.push_back(0);
    }
    ++count.back();
    group_of[perm[p]] = static_cast<int64_t>(first.size()) - 1;
  }
  const int64_t u = static_cast<int64_t>(first.size());
  std::vector<int64_t> rank(static_cast<size_t>(u));  // group -> output position
  std::iota(rank.begin(), rank.end(), int64_t(0));
  if (!st.sorted) {
    std::vector<int64_t> order(static_cast<size_t>(u));
    std::iota(order.begin(), order.end(), int64_t(0));
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return first[a] < first[b]; });
    for (int64_t p = 0; p < u; ++p) rank[order[p]] = p;
  }
  std::vector<int64_t> at(static_cast<size_t>(u));  // output position -> group
  for (int64_t g = 0; g < u; ++g) at[rank[g]] = g;

  Shape ys{u};
  if (st.has_axis) {
    ys = in.shape();
    ys[axis] = u;
  }
  Tensor& y = ctx.allocate_output(0, in.dtype(), ys);
  T* dst = static_cast<T*>(y.raw_data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < u; ++p)
      std::copy_n(src + (o * dim + first[at[p]]) * inner, inner, dst + (o * u + p) * inner);
  if (ctx.has_output(1)) {
    int64_t* d = ctx.allocate_output(1, DType::kInt64, Shape{u}).data<int64_t>();
    for (int64_t p = 0; p < u; ++p) d[p] = first[at[p]];
  }
  if (ctx.has_output(2)) {
    int64_t* d = ctx.allocate_output(2, DType::kInt64, Shape{dim}).data<int64_t>();
    for (int64_t i = 0; i < dim; ++i) d[i] = rank[group_of[i]];
  }
  if (ctx.has_output(3)) {
    int64_t* d = ctx.allocate_output(3, DType::kInt64, Shape{u}).data<int64_t>();
    for (int64_t p = 0; p < u; ++p) d[p] = count[at[p]];
  }
}

void unique_compute(const UniqueState& st, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (in.dtype() == DType::kString) return unique_run<std::string>(st, ctx, in);
  dispatch_numeric(
      in.dtype(), [&]<class T>() { unique_run<T>(st, ctx, in); }, "Unique");
}

std::unique_ptr<Kernel> make_unique_kernel(const KernelCreateInfo& info) {
  UniqueState st;
  st.has_axis = info.node.has_attr("axis");
  st.axis = info.node.attr_int("axis", 0);
  st.sorted = info.node.attr_int("sorted", 1) != 0;
  return make_fn_kernel(st, unique_compute);
}

// ---------------------------------------------------------------------------------------------
// Col2Im

void col2im_compute(const Col2ImAttrs& attrs, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Shape image = read_dims(ctx.input(1), "input 1 (image_shape)");
  const Shape block = read_dims(ctx.input(2), "input 2 (block_shape)");
  const Col2ImSpec s = col2im_spec(ctx.node(), in.shape(), image, block, attrs);
  Tensor& out = ctx.allocate_output(0, in.dtype(), s.out);
  if (out.numel() == 0) return;
  std::memset(out.raw_data(), 0, out.nbytes());
  const size_t d = image.size();
  const int64_t plane = prod(image, 0, d), K = s.kernel, L = s.blocks;
  const Shape istride = strides_of(image);
  const int64_t last_nb = s.nblocks[d - 1], lead = L / std::max<int64_t>(last_nb, 1);
  dispatch_numeric(
      in.dtype(),
      [&]<class T>() {
        if constexpr (std::is_same_v<T, bool>) {
          unsupported_dtype("Col2Im", in.dtype());
        } else {
          const T* src = static_cast<const T*>(in.raw_data());
          T* dst = static_cast<T*>(out.raw_data());
          parallel_range(ctx.pool(), s.batch * s.channels, K * L, [&](int64_t c0, int64_t c1) {
            Shape kc = Shape::filled(d, 0), lc = Shape::filled(d, 0);
            for (int64_t nc = c0; nc < c1; ++nc) {
              T* o = dst + nc * plane;
              for (int64_t kk = 0; kk < K; ++kk) {
                int64_t rem = kk;
                for (size_t i = d; i-- > 0;) {
                  kc[i] = rem % s.block[i];
                  rem /= s.block[i];
                }
                const T* col = src + (nc * K + kk) * L;
                std::fill(lc.begin(), lc.end(), 0);
                // Blocks in row-major order: leading coords per row, the last spatial dim inner.
                for (int64_t row = 0; row < lead; ++row) {
                  int64_t base = 0;
                  bool inside = true;
                  for (size_t i = 0; i + 1 < d; ++i) {
                    const int64_t p = lc[i] * s.strides[i] - s.pads_begin[i] + kc[i] * s.dilations[i];
                    if (p < 0 || p >= image[i]) inside = false;
                    base += p * istride[i];
                  }
                  if (inside) {
                    const size_t i = d - 1;
                    const int64_t off = kc[i] * s.dilations[i] - s.pads_begin[i];
                    const T* c = col + row * last_nb;
                    for (int64_t l = 0; l < last_nb; ++l) {
                      const int64_t p = l * s.strides[i] + off;
                      if (p >= 0 && p < image[i]) o[base + p] = add_values(o[base + p], c[l]);
                    }
                  }
                  for (size_t i = d - 1; i-- > 0;) {
                    if (++lc[i] < s.nblocks[i]) break;
                    lc[i] = 0;
                  }
                }
              }
            }
          });
        }
      },
      "Col2Im");
}

// ---------------------------------------------------------------------------------------------
// CenterCropPad

struct CropPadState {
  bool has_axes = false;
  Shape axes;
};

void center_crop_pad_compute(const CropPadState& st, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Shape target = read_dims(ctx.input(1), "input 1 (shape)");
  const CropPadSpec s = center_crop_pad_spec(ctx.node(), in.shape(), target, st.has_axes ? &st.axes : nullptr);
  Tensor& out = ctx.allocate_output(0, in.dtype(), s.out);
  if (out.numel() == 0) return;
  const size_t r = in.rank();
  const bool padded = !(s.count == s.out);
  dispatch_move(in.dtype(), [&]<class T>() {
    const T* src = static_cast<const T*>(in.raw_data());
    T* dst = static_cast<T*>(out.raw_data());
    if (padded) std::fill(dst, dst + out.numel(), T{});
    if (r == 0) {
      dst[0] = src[0];
      return;
    }
    const int64_t region = s.count.numel();
    if (region == 0) return;
    const Shape is = strides_of(in.shape()), os = strides_of(s.out);
    int64_t ib = 0, ob = 0;
    for (size_t k = 0; k < r; ++k) {
      ib += s.in_start[k] * is[k];
      ob += s.out_start[k] * os[k];
    }
    const int64_t inner = s.count[r - 1];
    parallel_range(ctx.pool(), region / inner, inner, [&](int64_t r0, int64_t r1) {
      Shape c = Shape::filled(r - 1, 0);
      int64_t rem = r0;
      for (size_t k = r - 1; k-- > 0;) {
        c[k] = rem % s.count[k];
        rem /= s.count[k];
      }
      for (int64_t row = r0; row < r1; ++row) {
        int64_t io = ib, oo = ob;
        for (size_t k = 0; k + 1 < r; ++k) {
          io += c[k] * is[k];
          oo += c[k] * os[k];
        }
        std::copy_n(src + io, inner, dst + oo);
        for (size_t k = r - 1; k-- > 0;) {
          if (++c[k] < s.count[k]) break;
          c[k] = 0;
        }
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Manifest

std::unique_ptr<Kernel> make_fn(void (*fn)(const int&, KernelContext&)) { return make_fn_kernel(0, fn); }
#define FN_FACTORY(name, fn) \
  std::unique_ptr<Kernel> name(const KernelCreateInfo&) { return make_fn(fn); }
FN_FACTORY(make_gather_elements, gather_elements_compute)
FN_FACTORY(make_onehot, onehot_compute)
FN_FACTORY(make_nonzero, nonzero_compute)
#undef FN_FACTORY

std::unique_ptr<Kernel> make_col2im(const KernelCreateInfo& info) {
  return make_fn_kernel(col2im_attrs(info.node), col2im_compute);
}
std::unique_ptr<Kernel> make_center_crop_pad(const KernelCreateInfo& info) {
  return make_fn_kernel(CropPadState{info.node.has_attr("axes"), Shape(info.node.attr_ints("axes"))},
                        center_crop_pad_compute);
}

const KernelDef kDefs[] = {
    {"", "GatherElements", 11, 99, {{0, kData}, {1, kIndex}}, make_gather_elements},
    {"", "GatherND", 11, 99, {{0, kData}, {1, kIndex}}, make_gather_nd},
    {"", "ScatterElements", 11, 99, {{0, kData}, {1, kIndex}}, make_scatter_elements},
    {"", "Scatter", 9, 99, {{0, kData}, {1, kIndex}}, make_scatter_elements},
    {"", "ScatterND", 11, 99, {{0, kData}, {1, kIndex}}, make_scatter_nd},
    {"", "OneHot", 9, 99, {{0, kNumeric}, {2, kData}}, make_onehot},
    {"", "NonZero", 9, 99, {{0, kData}}, make_nonzero},
    {"", "Compress", 9, 99, {{0, kData}, {1, kBoolOnly}}, make_compress},
    {"", "Trilu", 14, 99, {{0, kData}}, make_trilu},
    {"", "EyeLike", 9, 99, {{0, kNumericBool}, {-1, kNumericBool}}, make_eyelike},
    {"", "DepthToSpace", 1, 99, {{0, kData}}, make_depth_to_space},
    {"", "SpaceToDepth", 1, 99, {{0, kData}}, make_space_to_depth},
    {"", "ReverseSequence", 10, 99, {{0, kData}, {1, kIndex}}, make_reverse_sequence},
    {"", "Unique", 11, 99, {{0, kAll}}, make_unique_kernel},
    {"", "Col2Im", 18, 99, {{0, kNumeric}, {1, kInt64Only}}, make_col2im},
    {"", "CenterCropPad", 18, 99, {{0, kData}, {1, kIndex}}, make_center_crop_pad},
};

}  // namespace

std::span<const KernelDef> index_kernels() { return kDefs; }

}  // namespace onyx::cpu
