// One query row's attention over contiguous rows of keys and values, vectorised: the decode step
// of the attention kernels (GroupQueryAttention, Attention, MultiHeadAttention), where a GEMM would
// pack the keys and values only to read them once.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/qmath.hpp"
#include "kernels/vmath.hpp"

namespace onyx::cpu::attn_rows {

template <class T>
inline float to_f(T v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else
    return Float16::to_float(v.bits);
}

/// sc[j] = scale * <q, k_j> for the n key rows k_j = k + j * H (float32 or float16 keys; q is H
/// floats). kLanes keys at a time, one accumulator per key, reduced by a transpose.
template <class T>
void key_scores(const float* q, const T* k, int64_t n, int64_t H, float scale, float* sc) {
  using vmath::kLanes;
  using vmath::vf;
  int64_t j = 0;
  if (H % kLanes == 0) {
    for (; j + kLanes <= n; j += kLanes) {
      vf m[kLanes];
      for (int l = 0; l < kLanes; ++l) m[l] = vf{};
      for (int64_t x = 0; x < H; x += kLanes) {
        const vf qx = vmath::load(q + x);
        for (int l = 0; l < kLanes; ++l) m[l] += qmath::load_float(k + (j + l) * H + x) * qx;
      }
      vmath::transpose(m);
      vf s = m[0];
      for (int l = 1; l < kLanes; ++l) s += m[l];
      vmath::store(sc + j, s * scale);
    }
  }
  for (; j < n; ++j) {
    const T* kj = k + j * H;
    vf s{};
    int64_t x = 0;
    for (; x + kLanes <= H; x += kLanes) s += vmath::load(q + x) * qmath::load_float(kj + x);
    float d = 0;
    for (int l = 0; l < kLanes; ++l) d += s[l];
    for (; x < H; ++x) d += q[x] * to_f(kj[x]);
    sc[j] = d * scale;
  }
}

/// acc[0, H) = sum over j of p[j] * v_j, for the n value rows v_j = v + j * H.
template <class T>
void weighted_values(const float* p, const T* v, int64_t n, int64_t H, float* acc) {
  using vmath::kLanes;
  for (int64_t x = 0; x < H; ++x) acc[x] = 0;
  for (int64_t j = 0; j < n; ++j) {
    const float pj = p[j];
    const T* vj = v + j * H;
    const vmath::vf pv = vmath::splat(pj);
    int64_t x = 0;
    for (; x + kLanes <= H; x += kLanes) vmath::store(acc + x, vmath::load(acc + x) + pv * qmath::load_float(vj + x));
    for (; x < H; ++x) acc[x] += pj * to_f(vj[x]);
  }
}

}  // namespace onyx::cpu::attn_rows
