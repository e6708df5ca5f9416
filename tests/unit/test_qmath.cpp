// The vectorised quantization helpers (providers/cpu/kernels/qmath.hpp) against scalar
// references, at every length around the vector width (tails), with guard bytes after each
// output. Built into onyx_unit_tests (this machine's ISA) and again for AVX2 (x86-64-v3) and for
// plain x86-64 (SSE2), so each intrinsic path and its fallback run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/qmath.hpp"

namespace onyx::cpu {
namespace {

using qmath::kLanes;

/// QuantizeLinear's definition, element by element: saturate(round_half_even(x / s) + zp), NaN to zp.
template <class S>
S ref_quantize(float x, float s, float zp) {
  float q = x / s;
  if (std::isnan(q)) q = 0.0f;
  const double r = std::nearbyint(static_cast<double>(q)) + zp;
  const double lo = std::numeric_limits<S>::lowest(), hi = std::numeric_limits<S>::max();
  return static_cast<S>(r < lo ? lo : r > hi ? hi : r);
}

/// Lengths that cover empty rows, every tail length of one to three vectors, and a long row.
std::vector<int64_t> lengths() {
  std::vector<int64_t> n;
  for (int64_t i = 0; i <= 3 * kLanes + 1; ++i) n.push_back(i);
  n.push_back(1000 + kLanes / 2 + 1);
  return n;
}

std::vector<float> test_floats(int64_t n, float s, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-300.0f * s, 300.0f * s);
  std::uniform_int_distribution<int> k(-200, 200);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    switch (i % 11) {
      case 3: v[i] = (static_cast<float>(k(rng)) + 0.5f) * s; break;  // a rounding tie
      case 5: v[i] = std::numeric_limits<float>::quiet_NaN(); break;
      case 7: v[i] = (i & 1) ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity(); break;
      case 9: v[i] = (i & 1) ? 3e38f : -3e38f; break;
      default: v[i] = u(rng);
    }
  }
  return v;
}

template <class S>
void check_quantize_rows(float zp) {
  std::mt19937 rng(7);
  const float s = 0.25f;  // a power of two: x / s is exact, so ties stay ties
  for (int64_t n : lengths()) {
    const std::vector<float> x = test_floats(n + 1, s, rng);
    std::vector<S> y(static_cast<size_t>(n) + 4, S(77));
    qmath::quantize_row(x.data() + 1, y.data(), n, s, zp);  // an unaligned start
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(static_cast<int64_t>(y[i]), static_cast<int64_t>(ref_quantize<S>(x[i + 1], s, zp))) << "n " << n << " at " << i << " x " << x[i + 1];
    for (int64_t i = n; i < n + 4; ++i) ASSERT_EQ(y[i], S(77)) << "wrote past the row at n " << n;
  }
}

TEST(QMath, QuantizeRowMatchesScalarDefinition) {
  check_quantize_rows<uint8_t>(128.0f);
  check_quantize_rows<uint8_t>(0.0f);
  check_quantize_rows<int8_t>(-5.0f);
  check_quantize_rows<uint16_t>(30000.0f);
  check_quantize_rows<int16_t>(-7.0f);
}

TEST(QMath, QuantizeRowFromFloat16) {
  std::mt19937 rng(3);
  for (int64_t n : lengths()) {
    const std::vector<float> f = test_floats(n, 0.5f, rng);
    std::vector<Float16> x;
    for (float v : f) x.push_back(Float16(v));
    std::vector<uint8_t> y(static_cast<size_t>(n) + 3, 9);
    qmath::quantize_row(x.data(), y.data(), n, 0.5f, 100.0f);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], ref_quantize<uint8_t>(static_cast<float>(x[i]), 0.5f, 100.0f)) << i;
    for (int64_t i = n; i < n + 3; ++i) ASSERT_EQ(y[i], 9);
  }
}

template <class S, class Y>
void check_dequantize_rows(float s, int32_t zp) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> d(std::numeric_limits<S>::lowest(), std::numeric_limits<S>::max());
  for (int64_t n : lengths()) {
    std::vector<S> x(static_cast<size_t>(n));
    for (auto& v : x) v = static_cast<S>(d(rng));
    if (n > 1) x[0] = std::numeric_limits<S>::lowest(), x[1] = std::numeric_limits<S>::max();
    std::vector<Y> y(static_cast<size_t>(n) + 2, Y(42.0f));
    qmath::dequantize_row(x.data(), y.data(), n, s, zp);
    for (int64_t i = 0; i < n; ++i) {
      const Y want(static_cast<float>(static_cast<int32_t>(x[i]) - zp) * s);
      ASSERT_EQ(std::memcmp(&y[i], &want, sizeof(Y)), 0) << "n " << n << " at " << i << ": " << static_cast<float>(y[i])
                                                          << " vs " << static_cast<float>(want);
    }
    for (int64_t i = n; i < n + 2; ++i) ASSERT_EQ(static_cast<float>(y[i]), 42.0f);
  }
}

TEST(QMath, DequantizeRowMatchesScalarDefinition) {
  check_dequantize_rows<uint8_t, float>(0.0173f, 131);
  check_dequantize_rows<int8_t, float>(0.5f, -3);
  check_dequantize_rows<uint16_t, float>(1e-3f, 32768);
  check_dequantize_rows<int16_t, float>(3.0f, 0);
  // To float16: the hardware conversion rounds as onyx's Float16 does (ties, subnormals, overflow).
  check_dequantize_rows<uint8_t, Float16>(0.0173f, 131);
  check_dequantize_rows<int8_t, Float16>(1e-6f, 0);       // float16 subnormals
  check_dequantize_rows<int16_t, Float16>(4.0f, 0);       // beyond float16's range: infinities
  check_dequantize_rows<uint16_t, Float16>(0.999f, 1);
}

TEST(QMath, MinMaxSkipsNaNsAndKeepsZero) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-50.0f, 80.0f);
  for (int64_t n : lengths()) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[i] = i % 13 == 4 ? std::numeric_limits<float>::quiet_NaN() : u(rng);
    float lo = 0.0f, hi = 0.0f, rlo = 0.0f, rhi = 0.0f;
    qmath::min_max(x.data(), n, lo, hi);
    for (float v : x) {
      rlo = std::min(rlo, v);
      rhi = std::max(rhi, v);
    }
    ASSERT_EQ(lo, rlo) << n;
    ASSERT_EQ(hi, rhi) << n;
  }
  // All positive: the range still starts at 0; -0.0 never replaces +0.0.
  std::vector<float> pos(37, 2.5f);
  pos[3] = -0.0f;
  float lo = 0.0f, hi = 0.0f;
  qmath::min_max(pos.data(), 37, lo, hi);
  EXPECT_EQ(lo, 0.0f);
  EXPECT_FALSE(std::signbit(lo));
  EXPECT_EQ(hi, 2.5f);
}

TEST(QMath, RoundEvenTiesAndClamp) {
  float in[kLanes];
  for (int l = 0; l < kLanes; ++l) in[l] = static_cast<float>(l - kLanes / 2) + 0.5f;  // every lane a tie
  const vmath::vi r = qmath::round_even(vmath::load(in));
  for (int l = 0; l < kLanes; ++l) EXPECT_EQ(r[l], static_cast<int32_t>(std::nearbyint(in[l]))) << in[l];
  in[0] = std::numeric_limits<float>::quiet_NaN();
  in[1] = 1e30f;
  in[2] = -1e30f;
  const vmath::vf c = qmath::clamp(vmath::load(in), vmath::splat(-128.0f), vmath::splat(127.0f));
  EXPECT_EQ(c[0], -128.0f);  // NaN lanes take the lower bound
  EXPECT_EQ(c[1], 127.0f);
  EXPECT_EQ(c[2], -128.0f);
  EXPECT_EQ(qmath::round_even(2.5f), 2);
  EXPECT_EQ(qmath::round_even(-3.5f), -4);
}

TEST(QMath, LookupBytesEveryLength) {
  uint8_t table[256];
  for (int i = 0; i < 256; ++i) table[i] = static_cast<uint8_t>((i * 37 + 11) ^ 0x5a);
  std::vector<int64_t> ns = lengths();
  for (int64_t n : {63, 64, 65, 127, 128, 129, 4099}) ns.push_back(n);
  for (int64_t n : ns) {
    std::vector<uint8_t> x(static_cast<size_t>(n) + 1), y(static_cast<size_t>(n) + 5, 0xee);
    for (int64_t i = 0; i <= n; ++i) x[i] = static_cast<uint8_t>(i * 101 + 7);
    qmath::lookup_bytes(x.data() + 1, y.data(), n, table);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], table[x[i + 1]]) << "n " << n << " at " << i;
    for (int64_t i = n; i < n + 5; ++i) ASSERT_EQ(y[i], 0xee) << "wrote past the row at n " << n;
  }
}

TEST(QMath, SumBytesSignedAndUnsigned) {
  std::mt19937 rng(9);
  std::vector<int64_t> ns = lengths();
  for (int64_t n : {15, 16, 17, 31, 32, 33, 63, 64, 65, 12544}) ns.push_back(n);
  for (int64_t n : ns) {
    std::vector<uint8_t> x(static_cast<size_t>(n) + 1);
    for (auto& v : x) v = static_cast<uint8_t>(rng());
    int64_t su = 0, ss = 0;
    for (int64_t i = 0; i < n; ++i) {
      su += x[i + 1];
      ss += static_cast<int8_t>(x[i + 1]);
    }
    ASSERT_EQ(qmath::sum_bytes<false>(x.data() + 1, n), su) << n;
    ASSERT_EQ(qmath::sum_bytes<true>(x.data() + 1, n), ss) << n;
  }
}

}  // namespace
}  // namespace onyx::cpu
