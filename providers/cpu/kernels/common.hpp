// Helpers shared by the CPU kernels: dtype dispatch, broadcasting loops, parallel loops.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include "ep/kernel.hpp"

namespace onyx::cpu {

/// The product of sizes as a work estimate for parallel_range, saturating at 2^62 (hostile
/// kernel sizes must not overflow it; the loops themselves visit only what exists).
inline int64_t work_of(std::initializer_list<int64_t> sizes) {
  __int128 w = 1;
  for (int64_t s : sizes) {
    w *= s < 0 ? 0 : s;
    if (w > (__int128(1) << 62)) return int64_t(1) << 62;
  }
  return static_cast<int64_t>(w);
}

/// The taps k in [0, K) of a window starting at `base` with dilation `d` > 0 whose position
/// base + k * d lies in [lo, hi): [begin, end). Computed by division (in 128 bits), so a hostile
/// kernel or padding of 2^63 costs nothing and loops visit only the taps that land in range.
struct TapRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end > begin ? end - begin : 0; }
};
inline TapRange tap_range(int64_t base, int64_t d, int64_t K, __int128 lo, __int128 hi) {
  auto floordiv = [](__int128 a, __int128 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
  if (K <= 0 || d <= 0 || hi <= lo) return {};
  const __int128 first = -floordiv(-(lo - base), d);  // ceil((lo - base) / d)
  const __int128 last = floordiv(hi - 1 - base, d);   // floor((hi - 1 - base) / d)
  const __int128 b = first < 0 ? 0 : first, e = last + 1 > K ? K : last + 1;
  return e > b ? TapRange{static_cast<int64_t>(b), static_cast<int64_t>(e)} : TapRange{};
}

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

/// Arithmetic type used to compute on T (float for the 16-bit floats).
template <class T>
using Acc = std::conditional_t<is_half_v<T>, float, T>;

template <class T>
inline Acc<T> to_acc(T v) {
  return static_cast<Acc<T>>(v);
}
template <class T, class A>
inline T from_acc(A v) {
  if constexpr (is_half_v<T>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

[[noreturn]] void unsupported_dtype(const char* what, DType dt);

/// The four float8 types and the two 4-bit integer types (stored one value per byte).
inline constexpr TypeMask kFloat8Types =
    type_mask({DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ});
inline constexpr TypeMask kInt4Types = type_mask({DType::kInt4, DType::kUInt4});
/// onnx 1.23's narrow types: float4e2m1 (opset 23), float8e8m0 (24), uint2 and int2 (25).
inline constexpr TypeMask kNarrow23 = type_mask({DType::kFloat4E2M1});
inline constexpr TypeMask kNarrow24 = kNarrow23 | type_mask({DType::kFloat8E8M0});
inline constexpr TypeMask kNarrow25 = kNarrow24 | type_mask({DType::kUInt2, DType::kInt2});


/// Calls f.template operator()<T>() for the C++ type of dt among the numeric types (and bool).
template <class F>
void dispatch_numeric(DType dt, F&& f, const char* what = "kernel") {
  switch (dt) {
    case DType::kFloat: f.template operator()<float>(); break;
    case DType::kDouble: f.template operator()<double>(); break;
    case DType::kFloat16: f.template operator()<Float16>(); break;
    case DType::kBFloat16: f.template operator()<BFloat16>(); break;
    case DType::kInt8: f.template operator()<int8_t>(); break;
    case DType::kInt16: f.template operator()<int16_t>(); break;
    case DType::kInt32: f.template operator()<int32_t>(); break;
    case DType::kInt64: f.template operator()<int64_t>(); break;
    case DType::kUInt8: f.template operator()<uint8_t>(); break;
    case DType::kUInt16: f.template operator()<uint16_t>(); break;
    case DType::kUInt32: f.template operator()<uint32_t>(); break;
    case DType::kUInt64: f.template operator()<uint64_t>(); break;
    case DType::kBool: f.template operator()<bool>(); break;
    default: unsupported_dtype(what, dt);
  }
}

/// Floating types only.
template <class F>
void dispatch_float(DType dt, F&& f, const char* what = "kernel") {
  switch (dt) {
    case DType::kFloat: f.template operator()<float>(); break;
    case DType::kDouble: f.template operator()<double>(); break;
    case DType::kFloat16: f.template operator()<Float16>(); break;
    case DType::kBFloat16: f.template operator()<BFloat16>(); break;
    default: unsupported_dtype(what, dt);
  }
}

/// Every type by element size, for kernels that only move bytes (Transpose, Gather, Concat...).
template <class F>
void dispatch_bytes(DType dt, F&& f) {
  switch (dtype_size(dt)) {
    case 1: f.template operator()<uint8_t>(); break;
    case 2: f.template operator()<uint16_t>(); break;
    case 4: f.template operator()<uint32_t>(); break;
    case 8: f.template operator()<uint64_t>(); break;
    case 16: f.template operator()<std::array<uint64_t, 2>>(); break;
    default: unsupported_dtype("data movement", dt);
  }
}

/// Copies `n` elements of dtype dt (strings by value).
void copy_elements(DType dt, const void* src, void* dst, int64_t n, int64_t src_off = 0, int64_t dst_off = 0);

constexpr int kMaxRank = 16;

/// Strides of N inputs broadcast to an output shape, with dims collapsed where every input is
/// contiguous across them. Dims: [0, rank), innermost last.
template <size_t N>
struct Broadcast {
  int rank = 0;
  int64_t dims[kMaxRank];
  int64_t strides[N][kMaxRank];

  Broadcast(const Shape& out, const std::array<const Shape*, N>& ins) {
    const int r = static_cast<int>(out.size());
    if (r > kMaxRank) fail(ErrorCode::kNotImplemented, "broadcasting supports rank <= ", kMaxRank);
    int64_t s[N][kMaxRank];
    for (size_t k = 0; k < N; ++k) {
      const Shape& in = *ins[k];
      // Every input must broadcast to the output (a model whose declared shapes were trusted,
      // e.g. Min-6's equal shapes, must not make the index walk read past an input).
      bool fits = in.size() <= out.size();
      for (size_t j = 0; fits && j < in.size(); ++j) {
        const int64_t dim = in[j], want = out[out.size() - in.size() + j];
        fits = dim == want || dim == 1;
      }
      if (!fits)
        fail(ErrorCode::kInvalidArgument, "input ", k, " of shape ", in.to_string(), " does not broadcast to the output shape ",
             out.to_string());
      int64_t stride = 1;
      for (int d = r - 1; d >= 0; --d) {
        const int id = d - (r - static_cast<int>(in.size()));
        const int64_t dim = id >= 0 ? in[id] : 1;
        s[k][d] = (dim == 1 && out[d] != 1) ? 0 : stride;
        stride *= dim;
      }
    }
    // Collapse, dropping size-1 dims.
    for (int d = 0; d < r; ++d) {
      if (out[d] == 1) continue;
      bool merge = rank > 0;
      for (size_t k = 0; merge && k < N; ++k) merge = strides[k][rank - 1] == s[k][d] * out[d];
      if (merge) {
        dims[rank - 1] *= out[d];
        for (size_t k = 0; k < N; ++k) strides[k][rank - 1] = s[k][d];
      } else {
        dims[rank] = out[d];
        for (size_t k = 0; k < N; ++k) strides[k][rank] = s[k][d];
        ++rank;
      }
    }
    if (rank == 0) {
      rank = 1;
      dims[0] = 1;
      for (size_t k = 0; k < N; ++k) strides[k][0] = 0;
    }
  }

  int64_t inner() const { return dims[rank - 1]; }
  int64_t outer() const {
    int64_t n = 1;
    for (int d = 0; d + 1 < rank; ++d) n *= dims[d];
    return n;
  }

  /// Calls f(out_offset, {in offsets}, count, {inner strides}) for every inner row, rows split
  /// over the pool when the work is large.
  template <class F>
  void run(ThreadPool& pool, int64_t total, F&& f) const {
    const int64_t rows = outer();
    const int64_t len = inner();
    if (rows <= 0 || len <= 0) return;  // an empty output (a zero-size dim: nothing to compute)
    std::array<int64_t, N> istr;
    for (size_t k = 0; k < N; ++k) istr[k] = strides[k][rank - 1];
    auto body = [&](int64_t r0, int64_t r1) {
      int64_t idx[kMaxRank] = {};
      int64_t rem = r0;
      for (int d = rank - 2; d >= 0; --d) {
        idx[d] = rem % dims[d];
        rem /= dims[d];
      }
      std::array<int64_t, N> off{};
      for (size_t k = 0; k < N; ++k)
        for (int d = 0; d + 1 < rank; ++d) off[k] += idx[d] * strides[k][d];
      for (int64_t row = r0; row < r1; ++row) {
        f(row * len, off, len, istr);
        for (int d = rank - 2; d >= 0; --d) {
          ++idx[d];
          for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
          if (idx[d] < dims[d]) break;
          for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * dims[d];
          idx[d] = 0;
        }
      }
    };
    if (total < 65536) {
      body(0, rows);
    } else if (rows == 1) {
      // One long row (operands of one shape, merged): pieces of it, each its own call of f.
      constexpr int64_t kPiece = 16384;
      pool.parallel_for((len + kPiece - 1) / kPiece, 1, [&](int64_t p0, int64_t p1) {
        const int64_t e0 = p0 * kPiece, e1 = std::min(len, p1 * kPiece);
        std::array<int64_t, N> off{};
        for (size_t k = 0; k < N; ++k) off[k] = e0 * istr[k];
        f(e0, off, e1 - e0, istr);
      });
    } else {
      pool.parallel_for(rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, len)), body);
    }
  }
};

/// Parallel loop over [0, n) when n * cost_per_item is large enough to be worth threads.
template <class F>
void parallel_range(ThreadPool& pool, int64_t n, int64_t cost_per_item, F&& f) {
  if (n <= 1 || n * cost_per_item < 32768) {
    f(int64_t(0), n);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cost_per_item));
  pool.parallel_for(n, grain, f);
}

/// Per-thread kernel workspaces, one per user so that a kernel family never shares bytes with
/// another it calls; each grows and never shrinks (no allocation per run once warm).
enum class Workspace { kConv, kQuant, kRnn, kAttention, kWindow, kIm2col, kConvTranspose, kGemmView, kWinograd, kQGemm, kQGemmTile,
                       kAttentionQkv, kAttentionKv, kCount };
/// At least `bytes` bytes, 64-byte aligned, of this thread's workspace `w`.
char* thread_workspace(Workspace w, size_t bytes);

/// Cuts 64-byte aligned pieces from a base pointer (a null base only measures).
struct Carver {
  char* base = nullptr;
  size_t off = 0;
  template <class C>
  C* take(int64_t n) {
    C* r = base ? reinterpret_cast<C*>(base + off) : nullptr;
    off += (static_cast<size_t>(std::max<int64_t>(n, 0)) * sizeof(C) + 63) / 64 * 64;
    return r;
  }
};

/// Runs layout(carver) once to measure and once to cut workspace `w`.
template <class F>
void carve(Workspace w, F&& layout) {
  Carver m;
  layout(m);
  Carver c{thread_workspace(w, m.off)};
  layout(c);
}

/// Reads an integer tensor (int32 or int64) as int64 values.
std::vector<int64_t> read_ints(const Tensor& t, const char* what);
/// Same into a Shape (inline storage for up to 8 values: no allocation on the run path).
Shape read_dims(const Tensor& t, const char* what);
/// Integer element i of an int32/int64 tensor.
inline int64_t int_at(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kInt64 ? static_cast<const int64_t*>(t.raw_data())[i]
                                    : static_cast<int64_t>(static_cast<const int32_t*>(t.raw_data())[i]);
}
/// Reads a scalar (or 1-element) tensor of any numeric type as double.
double read_scalar(const Tensor& t);

/// Makes a kernel from a lambda-free function and a state built by `make_state(info)`.
template <class State>
std::unique_ptr<Kernel> make_fn_kernel(State s, void (*fn)(const State&, KernelContext&)) {
  return std::make_unique<FnKernel<State>>(std::move(s), fn);
}

}  // namespace onyx::cpu
