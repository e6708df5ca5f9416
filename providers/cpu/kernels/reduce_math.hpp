// Small math helpers shared by the reduce and loss kernels: a vectorisable exp for the shifted
// arguments of softmax / logsumexp, and row reductions written so they vectorise without
// reassociation flags (several independent partial accumulators).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/vmath.hpp"

namespace onyx::cpu {

/// exp_le0's reduction and polynomial for V = float or vmath::vf: e^r for xc = n ln2 + r (xc
/// already clamped to [-87.3, 88]), n returned through `n`.
template <class V>
inline V exp_le0_core(V xc, V& n) {
  // x = n ln2 + r, |r| <= ln2 / 2; n by round-to-nearest through the float mantissa.
  const V t = xc * 1.44269504088896341f + 12582912.0f;
  n = t - 12582912.0f;
  V r = xc - n * 0.693359375f;  // ln2 split in two for an exact first product
  r = r - n * -2.12194440e-4f;
  // e^r by its minimax polynomial of degree 7 (as in Cephes expf).
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

/// e^x for x <= 0 (the x - max of softmax and logsumexp), branch-free so loops over it
/// vectorise. Relative error about 1e-7 (a float ulp) down to -87.3, where e^x leaves the
/// normal range; below that it returns 0 (e^-inf = 0), and NaN for NaN. Arguments above 88 are
/// clamped (not meant for them).
inline float exp_le0(float x) {
  float xc = x > -87.3f ? x : -87.3f;  // also maps NaN to a number, so the int conversion is defined
  xc = xc < 88.0f ? xc : 88.0f;
  float n;
  const float p = exp_le0_core(xc, n);
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n, n in [-126, 127]
  const float res = p * std::bit_cast<float>(bits);
  return x != x ? x : (x < -87.3f ? 0.0f : res);
}

/// y[i] = exp_le0(x[i] - m) for i < n, vmath's vectors for the whole ones (the same operations
/// as exp_le0, lane by lane: the scalar loop did not vectorise), exp_le0 for the rest. The
/// Softmax kernel and the fused attention both use it, so they agree.
inline void exp_le0_row(const float* x, float m, float* y, int64_t n) {
  using vmath::vf;
  using vmath::vi;
  const vf mv = vmath::splat(m);
  int64_t i = 0;
  for (; i + vmath::kLanes <= n; i += vmath::kLanes) {
    const vf v = vmath::load(x + i) - mv;
    vf xc = v > -87.3f ? v : vmath::splat(-87.3f);
    xc = xc < 88.0f ? xc : vmath::splat(88.0f);
    vf nn;
    const vf p = exp_le0_core(xc, nn);
    const vi bits = (__builtin_convertvector(nn, vi) + 127) << 23;
    vf scale;
    std::memcpy(&scale, &bits, sizeof scale);
    const vf res = p * scale;
    const vf low = v < -87.3f ? vf{} : res;
    vmath::store(y + i, v != v ? v : low);
  }
  for (; i < n; ++i) y[i] = exp_le0(x[i] - m);
}

/// e^x for the shifted arguments (x <= 0) in float or double.
template <class A>
inline A exp_shifted(A x) {
  if constexpr (std::is_same_v<A, float>) return exp_le0(x);
  else return std::exp(x);
}

/// Largest (or smallest, with `is_max` false) of p[0..n) as A, NaN when any element is NaN;
/// n >= 1. Vectorises: plain comparisons in 8 lanes plus an is-NaN flag per lane.
template <class A, class T>
inline A row_extreme(const T* p, int64_t n, bool is_max) {
  A l[8];
  int32_t f[8];
  for (int k = 0; k < 8; ++k) {
    l[k] = static_cast<A>(p[0]);
    f[k] = 0;
  }
  int64_t i = 0;
  if (is_max) {
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k) {
        const A x = static_cast<A>(p[i + k]);
        l[k] = x > l[k] ? x : l[k];
        f[k] |= (x != x);
      }
  } else {
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k) {
        const A x = static_cast<A>(p[i + k]);
        l[k] = x < l[k] ? x : l[k];
        f[k] |= (x != x);
      }
  }
  A m = l[0];
  int32_t any = f[0];
  for (int k = 1; k < 8; ++k) {
    m = is_max ? (l[k] > m ? l[k] : m) : (l[k] < m ? l[k] : m);
    any |= f[k];
  }
  for (; i < n; ++i) {
    const A x = static_cast<A>(p[i]);
    m = is_max ? (x > m ? x : m) : (x < m ? x : m);
    any |= (x != x);
  }
  if constexpr (std::is_floating_point_v<A>)
    if (any) return std::numeric_limits<A>::quiet_NaN();
  return m;
}

/// Largest element of p[0..n) ignoring NaN ordering subtleties (a NaN input makes every later
/// exp(x - max) NaN anyway); n >= 1.
template <class A>
inline A row_max_plain(const A* p, int64_t n) {
  A l[8];
  for (auto& v : l) v = p[0];
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) l[k] = p[i + k] > l[k] ? p[i + k] : l[k];
  A m = l[0];
  for (int k = 1; k < 8; ++k) m = l[k] > m ? l[k] : m;
  for (; i < n; ++i) m = p[i] > m ? p[i] : m;
  return m;
}

/// Sum of p[0..n) in 8 lanes.
template <class A>
inline A row_sum(const A* p, int64_t n) {
  A l[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) l[k] += p[i + k];
  A s = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
  for (; i < n; ++i) s += p[i];
  return s;
}

}  // namespace onyx::cpu
