// onyx's own CUDA kernels: elementwise (unary, binary with broadcast, Where, Cast) and data
// movement (strided copies, Gather, GatherElements, Pad, fill), CumSum, and Resize's separable
// passes. One kernel per element type with the op chosen at run
// time keeps the number of instantiations (and nvcc's time) small. The math kernels take float,
// float16 and bfloat16 storage (half.hpp), computing in fp32 registers.
#include <cstring>

#include "dialect.hpp"
#include "half.hpp"
#include "launch.hpp"

namespace onyx::cuda {
namespace {

constexpr int kBlock = 256;

inline unsigned grid_for(int64_t n) { return grid_blocks(n, kBlock); }

/// Calls f with a value of the unsigned integer type of `elem` bytes (1, 2, 4 or 8; nothing for
/// other sizes): the kernels that only move elements are instantiated per size, not per type.
template <class F>
void by_element_size(size_t elem, F&& f) {
  switch (elem) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    case 8: f(uint64_t{}); break;
    default: break;
  }
}

__device__ __forceinline__ float unary_f(UnaryOp op, float x, float a, float b) {
  switch (op) {
    case UnaryOp::kRelu: return x > 0.f ? x : 0.f;
    case UnaryOp::kSigmoid: return 1.f / (1.f + expf(-x));
    case UnaryOp::kTanh: return tanhf(x);
    case UnaryOp::kExp: return expf(x);
    case UnaryOp::kLog: return logf(x);
    case UnaryOp::kSqrt: return sqrtf(x);
    case UnaryOp::kReciprocal: return 1.f / x;
    case UnaryOp::kAbs: return fabsf(x);
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kErf: return erff(x);
    case UnaryOp::kFloor: return floorf(x);
    case UnaryOp::kCeil: return ceilf(x);
    case UnaryOp::kRound: return rintf(x);
    case UnaryOp::kSoftplus: return x > 20.f ? x : log1pf(expf(x));
    case UnaryOp::kSoftsign: return x / (1.f + fabsf(x));
    case UnaryOp::kLeakyRelu: return x >= 0.f ? x : a * x;
    case UnaryOp::kElu: return x >= 0.f ? x : a * (expf(x) - 1.f);
    case UnaryOp::kSelu: return x > 0.f ? b * x : b * a * (expf(x) - 1.f);
    case UnaryOp::kCelu: return fmaxf(0.f, x) + fminf(0.f, a * (expf(x / a) - 1.f));
    case UnaryOp::kHardSigmoid: return fmaxf(0.f, fminf(1.f, a * x + b));
    case UnaryOp::kHardSwish: return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
    case UnaryOp::kClip: return fminf(fmaxf(x, a), b);
    case UnaryOp::kGelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case UnaryOp::kGeluTanh: return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case UnaryOp::kSin: return sinf(x);
    case UnaryOp::kCos: return cosf(x);
    case UnaryOp::kSign: return x > 0.f ? 1.f : (x < 0.f ? -1.f : 0.f);
    case UnaryOp::kMish: return x * tanhf(x > 20.f ? x : log1pf(expf(x)));
    case UnaryOp::kThresholdedRelu: return x > a ? x : 0.f;
  }
  return x;
}

template <class T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* y, int64_t n, float a, float b) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    st(y, i, unary_f(op, ld(x, i), a, b));
}

__global__ void not_kernel(const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    y[i] = x[i] ? 0 : 1;
}

template <class T>
__device__ __forceinline__ T ipow(T b, T e) {
  if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);
  T r = 1;
  while (e) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return r;
}

template <class T>
__device__ __forceinline__ T arith(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return b == T(0) ? T(0) : a / b;  // integer division by zero: 0, never a trap
    case BinaryOp::kPow: return ipow(a, b);
    case BinaryOp::kMax: return a > b ? a : b;
    case BinaryOp::kMin: return a < b ? a : b;
    case BinaryOp::kMod: {
      if (b == T(0)) return T(0);
      T r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
    case BinaryOp::kFmod: return b == T(0) ? T(0) : a % b;
    case BinaryOp::kPRelu: return a < 0 ? a * b : a;
    default: return T(0);
  }
}
template <>
__device__ __forceinline__ float arith<float>(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
    case BinaryOp::kPow: return powf(a, b);
    case BinaryOp::kMax: return fmaxf(a, b);
    case BinaryOp::kMin: return fminf(a, b);
    case BinaryOp::kMod:
    case BinaryOp::kFmod: return fmodf(a, b);
    case BinaryOp::kPRelu: return a < 0.f ? a * b : a;
    default: return 0.f;
  }
}

template <class T>
__device__ __forceinline__ uint8_t compare(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::kEqual: return a == b;
    case BinaryOp::kLess: return a < b;
    case BinaryOp::kGreater: return a > b;
    case BinaryOp::kLessEqual: return a <= b;
    case BinaryOp::kGreaterEqual: return a >= b;
    case BinaryOp::kAnd: return (a != 0) && (b != 0);
    case BinaryOp::kOr: return (a != 0) || (b != 0);
    case BinaryOp::kXor: return (a != 0) != (b != 0);
    default: return 0;
  }
}

template <class T, class Out, bool kCompare>
__global__ void binary_kernel(BinaryOp op, const T* a, Strided sa, const T* b, Strided sb, Out* y, int64_t n, bool flat) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const T x = flat ? a[i] : a[offset_of(sa, i)];
    const T z = flat ? b[i] : b[offset_of(sb, i)];
    if constexpr (kCompare) y[i] = compare(op, x, z);
    else y[i] = arith(op, x, z);
  }
}

/// 16-bit floats: both operands widened to fp32, the result rounded back (or a bool).
template <class T, bool kCompare>
__global__ void binary_half_kernel(BinaryOp op, const T* a, Strided sa, const T* b, Strided sb, void* y, int64_t n, bool flat) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const float x = to_f(flat ? a[i] : a[offset_of(sa, i)]);
    const float z = to_f(flat ? b[i] : b[offset_of(sb, i)]);
    if constexpr (kCompare) static_cast<uint8_t*>(y)[i] = compare(op, x, z);
    else st(static_cast<T*>(y), i, arith(op, x, z));
  }
}

template <class T>
void binary_half(BinaryOp op, const void* a, const Strided& sa, const void* b, const Strided& sb, void* y, int64_t n, cudaStream_t s) {
  const bool flat = is_flat(sa, n) && is_flat(sb, n);
  if (op >= BinaryOp::kEqual)
    ONYX_LAUNCH(grid_for(n), kBlock, s, binary_half_kernel<T, true>)(op, static_cast<const T*>(a), sa, static_cast<const T*>(b), sb, y, n, flat);
  else
    ONYX_LAUNCH(grid_for(n), kBlock, s, binary_half_kernel<T, false>)(op, static_cast<const T*>(a), sa, static_cast<const T*>(b), sb, y, n, flat);
}

template <class T>
void binary_t(BinaryOp op, const void* a, const Strided& sa, const void* b, const Strided& sb, void* y, int64_t n,
              cudaStream_t s) {
  const bool flat = is_flat(sa, n) && is_flat(sb, n);
  const bool cmp = op >= BinaryOp::kEqual;
  if constexpr (sizeof(T) == 1) {
    (void)cmp;  // bools: logical and comparison ops only
    ONYX_LAUNCH(grid_for(n), kBlock, s, binary_kernel<T, uint8_t, true>)(op, static_cast<const T*>(a), sa, static_cast<const T*>(b),
                                                                    sb, static_cast<uint8_t*>(y), n, flat);
  } else if (cmp)
    ONYX_LAUNCH(grid_for(n), kBlock, s, binary_kernel<T, uint8_t, true>)(op, static_cast<const T*>(a), sa, static_cast<const T*>(b),
                                                                    sb, static_cast<uint8_t*>(y), n, flat);
  else
    ONYX_LAUNCH(grid_for(n), kBlock, s, binary_kernel<T, T, false>)(op, static_cast<const T*>(a), sa, static_cast<const T*>(b), sb,
                                                               static_cast<T*>(y), n, flat);
}

template <class T>
__global__ void where_kernel(const uint8_t* c, Strided sc, const T* x, Strided sx, const T* z, Strided sz, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    y[i] = c[offset_of(sc, i)] ? x[offset_of(sx, i)] : z[offset_of(sz, i)];
}

template <class T>
__global__ void copy_kernel(const T* src, Strided s, T* dst, Strided d, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    dst[offset_of(d, i)] = src[offset_of(s, i)];
}

template <class T, class I>
__global__ void gather_kernel(const T* data, const I* idx, T* out, int64_t axis_dim, int64_t nidx, int64_t inner, int64_t n,
                              int* error) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t k = i % inner;
    const int64_t j = (i / inner) % nidx;
    const int64_t o = i / (inner * nidx);
    int64_t g = static_cast<int64_t>(idx[j]);
    if (g < 0) g += axis_dim;
    if (g < 0 || g >= axis_dim) {
      *error = 1;
      out[i] = T(0);
      continue;
    }
    out[i] = data[(o * axis_dim + g) * inner + k];
  }
}

template <class T>
__global__ void pad_kernel(const T* x, T* y, PadGeometry g, PadMode mode, T value, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    int64_t rem = i, src = 0, stride = 1;
    bool constant = false;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t o = rem % g.out[d];
      rem /= g.out[d];
      const int64_t j = pad_source(o - g.begin[d], g.in[d], mode);
      constant |= j < 0;
      src += j * stride;
      stride *= g.in[d];
    }
    y[i] = constant ? value : x[src];
  }
}

template <class T>
__global__ void resize_pass_kernel(const T* src, T* dst, int64_t in, int64_t out, int64_t inner, int taps, const int64_t* idx,
                                   const float* w, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t ii = i % inner, o = (i / inner) % out, oo = i / (inner * out);
    const T* base = src + oo * in * inner + ii;
    const int64_t* ix = idx + o * taps;
    if (!w) {
      dst[i] = base[ix[0] * inner];
      continue;
    }
    const float* wt = w + o * taps;
    float acc = 0.f;
    for (int t = 0; t < taps; ++t) acc += wt[t] * ld(base, ix[t] * inner);
    st(dst, i, acc);
  }
}

template <class T, class I>
__global__ void gather_elements_kernel(const T* data, const I* idx, T* out, GatherElementsArgs a, int64_t n, int* error) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    int64_t g = static_cast<int64_t>(idx[i]);
    if (g < 0) g += a.axis_dim;
    if (g < 0 || g >= a.axis_dim) {
      *error = 1;
      out[i] = T(0);
      continue;
    }
    int64_t rem = i, off = 0;
    for (int d = a.rank - 1; d >= 0; --d) {
      const int64_t c = rem % a.out[d];
      rem /= a.out[d];
      off += (d == a.axis ? g : c) * a.data_strides[d];
    }
    out[i] = data[off];
  }
}

template <class T>
__global__ void cumsum_kernel(const T* x, T* y, int64_t len, int64_t inner, int64_t lines, bool exclusive, bool reverse) {
  for (int64_t l = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; l < lines; l += int64_t(blockDim.x) * gridDim.x) {
    const int64_t base = (l / inner) * len * inner + l % inner;
    T acc = T(0);
    for (int64_t t = 0; t < len; ++t) {
      const int64_t at = base + (reverse ? len - 1 - t : t) * inner;
      const T v = x[at];
      if (exclusive) {
        y[at] = acc;
        acc += v;
      } else {
        acc += v;
        y[at] = acc;
      }
    }
  }
}

template <class T>
__global__ void fill_kernel(T* y, T v, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) y[i] = v;
}

struct Num {
  double d;
  int64_t i;
  bool is_int;
};

__device__ __forceinline__ Num load(Ty t, const void* p, int64_t k) {
  switch (t) {
    case Ty::kF32: return {static_cast<const float*>(p)[k], 0, false};
    case Ty::kF16: return {to_f(static_cast<const f16*>(p)[k]), 0, false};
    case Ty::kBF16: return {to_f(static_cast<const bf16*>(p)[k]), 0, false};
    case Ty::kF64: return {static_cast<const double*>(p)[k], 0, false};
    case Ty::kI8: return {0, static_cast<const int8_t*>(p)[k], true};
    case Ty::kU8: return {0, static_cast<const uint8_t*>(p)[k], true};
    case Ty::kI16: return {0, static_cast<const int16_t*>(p)[k], true};
    case Ty::kI32: return {0, static_cast<const int32_t*>(p)[k], true};
    case Ty::kI64: return {0, static_cast<const int64_t*>(p)[k], true};
    case Ty::kBool: return {0, static_cast<const uint8_t*>(p)[k] ? 1 : 0, true};
  }
  return {0, 0, true};
}

template <class T>
__device__ __forceinline__ T to_int(const Num& v) {
  if (v.is_int) return static_cast<T>(v.i);
  if (!(v.d == v.d)) return T(0);  // NaN
  return static_cast<T>(static_cast<int64_t>(v.d));
}

__device__ __forceinline__ void store(Ty t, void* p, int64_t k, const Num& v) {
  const double d = v.is_int ? static_cast<double>(v.i) : v.d;
  switch (t) {
    case Ty::kF32: static_cast<float*>(p)[k] = static_cast<float>(d); break;
    case Ty::kF16: static_cast<f16*>(p)[k] = from_f<f16>(static_cast<float>(d)); break;
    case Ty::kBF16: static_cast<bf16*>(p)[k] = from_f<bf16>(static_cast<float>(d)); break;
    case Ty::kF64: static_cast<double*>(p)[k] = d; break;
    case Ty::kI8: static_cast<int8_t*>(p)[k] = to_int<int8_t>(v); break;
    case Ty::kU8: static_cast<uint8_t*>(p)[k] = to_int<uint8_t>(v); break;
    case Ty::kI16: static_cast<int16_t*>(p)[k] = to_int<int16_t>(v); break;
    case Ty::kI32: static_cast<int32_t*>(p)[k] = to_int<int32_t>(v); break;
    case Ty::kI64: static_cast<int64_t*>(p)[k] = to_int<int64_t>(v); break;
    case Ty::kBool: static_cast<uint8_t*>(p)[k] = v.is_int ? (v.i != 0) : (v.d != 0.0); break;
  }
}

__global__ void cast_kernel(Ty from, const void* x, Ty to, void* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    store(to, y, i, load(from, x, i));
}

}  // namespace

void unary(Ty ty, UnaryOp op, const void* x, void* y, int64_t n, float a, float b, cudaStream_t s) {
  if (n <= 0) return;
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(grid_for(n), kBlock, s, unary_kernel<T>)(op, static_cast<const T*>(x), static_cast<T*>(y), n, a, b);
  });
}

void not_bool(const uint8_t* x, uint8_t* y, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  ONYX_LAUNCH(grid_for(n), kBlock, s, not_kernel)(x, y, n);
}

void binary(BinaryOp op, Ty ty, const void* a, const Strided& sa, const void* b, const Strided& sb, void* y, int64_t n,
            cudaStream_t s) {
  if (n <= 0) return;
  switch (ty) {
    case Ty::kF32: binary_t<float>(op, a, sa, b, sb, y, n, s); break;
    case Ty::kF16: binary_half<f16>(op, a, sa, b, sb, y, n, s); break;
    case Ty::kBF16: binary_half<bf16>(op, a, sa, b, sb, y, n, s); break;
    case Ty::kI32: binary_t<int32_t>(op, a, sa, b, sb, y, n, s); break;
    case Ty::kI64: binary_t<int64_t>(op, a, sa, b, sb, y, n, s); break;
    case Ty::kBool:
    case Ty::kU8: binary_t<uint8_t>(op, a, sa, b, sb, y, n, s); break;
    default: break;  // claim() never lets another type through
  }
}

void where(const uint8_t* cond, const Strided& sc, const void* x, const Strided& sx, const void* z, const Strided& sz,
           void* y, size_t elem, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  const unsigned g = grid_for(n);
  by_element_size(elem, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(g, kBlock, s, where_kernel)(cond, sc, static_cast<const T*>(x), sx, static_cast<const T*>(z), sz, static_cast<T*>(y), n);
  });
}

void strided_copy(const void* src, const Strided& sv, void* dst, const Strided& dv, size_t elem, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  if (is_flat(sv, n) && is_flat(dv, n)) {
    copy_d2d_async(dst, src, static_cast<size_t>(n) * elem, s);
    return;
  }
  const unsigned g = grid_for(n);
  by_element_size(elem, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(g, kBlock, s, copy_kernel)(static_cast<const T*>(src), sv, static_cast<T*>(dst), dv, n);
  });
}

void gather(const void* data, const void* indices, bool idx64, void* out, size_t elem, int64_t outer, int64_t axis_dim,
            int64_t nidx, int64_t inner, int* error, cudaStream_t s) {
  const int64_t n = outer * nidx * inner;
  if (n <= 0) return;
  const unsigned g = grid_for(n);
  by_element_size(elem, [&](auto tag) {
    using T = decltype(tag);
    if (idx64)
      ONYX_LAUNCH(g, kBlock, s, gather_kernel)(static_cast<const T*>(data), static_cast<const int64_t*>(indices), static_cast<T*>(out),
                                               axis_dim, nidx, inner, n, error);
    else
      ONYX_LAUNCH(g, kBlock, s, gather_kernel)(static_cast<const T*>(data), static_cast<const int32_t*>(indices), static_cast<T*>(out),
                                               axis_dim, nidx, inner, n, error);
  });
}

void pad(const void* x, void* y, const PadGeometry& g, PadMode mode, const void* value, size_t elem, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  const unsigned grid = grid_for(n);
  by_element_size(elem, [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, value, sizeof(T));
    ONYX_LAUNCH(grid, kBlock, s, pad_kernel)(static_cast<const T*>(x), static_cast<T*>(y), g, mode, v, n);
  });
}

void resize_pass(Ty ty, const void* src, void* dst, int64_t outer, int64_t in, int64_t out, int64_t inner, int taps,
                 const int64_t* idx, const float* w, cudaStream_t s) {
  const int64_t n = outer * out * inner;
  if (n <= 0) return;
  by_float_type(ty, [&](auto tag) {
    using T = decltype(tag);
    ONYX_LAUNCH(grid_for(n), kBlock, s, resize_pass_kernel<T>)(static_cast<const T*>(src), static_cast<T*>(dst), in, out, inner, taps,
                                                               idx, w, n);
  });
}

void gather_elements(const void* data, const void* indices, bool idx64, void* out, size_t elem, const GatherElementsArgs& a,
                     int64_t n, int* error, cudaStream_t s) {
  if (n <= 0) return;
  const unsigned g = grid_for(n);
  by_element_size(elem, [&](auto tag) {
    using T = decltype(tag);
    if (idx64)
      ONYX_LAUNCH(g, kBlock, s, gather_elements_kernel)(static_cast<const T*>(data), static_cast<const int64_t*>(indices),
                                                        static_cast<T*>(out), a, n, error);
    else
      ONYX_LAUNCH(g, kBlock, s, gather_elements_kernel)(static_cast<const T*>(data), static_cast<const int32_t*>(indices),
                                                        static_cast<T*>(out), a, n, error);
  });
}

void cumsum(Ty ty, const void* x, void* y, int64_t outer, int64_t len, int64_t inner, bool exclusive, bool reverse, cudaStream_t s) {
  const int64_t lines = outer * inner;
  if (lines <= 0 || len <= 0) return;
  const unsigned g = grid_for(lines);
  switch (ty) {
    case Ty::kF32: ONYX_LAUNCH(g, kBlock, s, cumsum_kernel)(static_cast<const float*>(x), static_cast<float*>(y), len, inner, lines, exclusive, reverse); break;
    case Ty::kI32: ONYX_LAUNCH(g, kBlock, s, cumsum_kernel)(static_cast<const int32_t*>(x), static_cast<int32_t*>(y), len, inner, lines, exclusive, reverse); break;
    case Ty::kI64: ONYX_LAUNCH(g, kBlock, s, cumsum_kernel)(static_cast<const int64_t*>(x), static_cast<int64_t*>(y), len, inner, lines, exclusive, reverse); break;
    default: break;
  }
}

void cast(Ty from, const void* x, Ty to, void* y, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  if (from == to) {
    size_t elem = (from == Ty::kF64 || from == Ty::kI64) ? 8 : (from == Ty::kF32 || from == Ty::kI32) ? 4 : (from == Ty::kF16 || from == Ty::kBF16 || from == Ty::kI16) ? 2 : 1;
    copy_d2d_async(y, x, static_cast<size_t>(n) * elem, s);
    return;
  }
  ONYX_LAUNCH(grid_for(n), kBlock, s, cast_kernel)(from, x, to, y, n);
}

void fill(void* y, const void* value, size_t elem, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  const unsigned g = grid_for(n);
  by_element_size(elem, [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, value, sizeof(T));
    ONYX_LAUNCH(g, kBlock, s, fill_kernel)(static_cast<T*>(y), v, n);
  });
}

}  // namespace onyx::cuda
