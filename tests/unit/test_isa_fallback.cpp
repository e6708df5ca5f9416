// The CPU kernels' portable paths: this file, test_gemm.cpp and the GEMM and depthwise kernels are
// compiled again for AVX2 (x86-64-v3, no AVX-512) into their own test binary, so that the code a
// machine without AVX-512 runs (8-lane GEMM panels, the shuffle transpose on half-width vectors,
// the memcpy-based partial loads and stores, the scalar transposed store) is tested here too,
// where the main build uses AVX-512.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/conv.hpp"
#include "kernels/gemm.hpp"
#include "kernels/vmath.hpp"
#include "window_case.hpp"

using namespace onyx;
using namespace onyx::cpu;
using namespace onyx::test;

TEST(IsaFallback, BuiltWithoutAvx512) {
#ifdef __AVX512F__
  FAIL() << "this binary is meant to be built without AVX-512";
#endif
  EXPECT_EQ(kPanelCols, 16);  // the AVX2 micro-kernel's panels
  EXPECT_EQ(kPanelRows, 6);
}

TEST(IsaFallback, VectorTransposeAndPartialAccess) {
  using namespace onyx::cpu::vmath;
  vf a[kLanes];
  for (int i = 0; i < kLanes; ++i) {
    float row[kLanes];
    for (int j = 0; j < kLanes; ++j) row[j] = static_cast<float>(i * 100 + j);
    a[i] = load(row);
  }
  transpose(a);
  for (int i = 0; i < kLanes; ++i)
    for (int j = 0; j < kLanes; ++j) ASSERT_EQ(a[i][j], static_cast<float>(j * 100 + i)) << i << "," << j;
  float src[kLanes], dst[kLanes];
  for (int i = 0; i < kLanes; ++i) src[i] = static_cast<float>(i + 1), dst[i] = -1.0f;
  const vf v = load_n(src, 7);
  store_n(dst, v, 5);
  for (int j = 0; j < kLanes; ++j) {
    ASSERT_EQ(v[j], j < 7 ? src[j] : 0.0f);
    ASSERT_EQ(dst[j], j < 5 ? src[j] : -1.0f);
  }
}

TEST(IsaFallback, DepthwiseMatchesTheDefinition) {
  // depthwise2d_blocked against the convolution written out, in double: channel tails, small
  // and banded planes, strides, dilations, asymmetric pads, Clip.
  struct Case {
    int64_t n;
    WindowCase wc;
  };
  const Case cases[] = {{2, {40, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}},    {1, {17, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}},
                        {1, {16, 120, 120, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}}, {1, {20, 25, 31, 3, 3, 1, 1, 3, 3, 0, 3, 2, 1}},
                        {1, {3, 9, 10, 2, 3, 2, 2, 1, 1, 0, 0, 0, 0}}};
  ThreadPool pool(2);
  uint32_t seed = 1;
  for (const Case& cs : cases) {
    const WindowCase& c = cs.wc;
    const WindowGeometry g = c.geometry();
    const int64_t oh = g.out[0], ow = g.out[1], N = cs.n;
    std::mt19937 rng(seed++);
    std::uniform_real_distribution<float> d(-1, 1);
    std::vector<float> x(N * c.c * c.h * c.w), w(c.c * c.kh * c.kw), b(c.c), y(N * c.c * oh * ow, NAN);
    for (auto* v : {&x, &w, &b})
      for (float& e : *v) e = d(rng);
    GemmEpilogue ep;
    ep.act = GemmEpilogue::Act::kClip;
    ep.lo = -0.5f;
    ep.hi = 0.7f;
    depthwise2d_blocked(x.data(), w.data(), b.data(), y.data(), N, c.c, Shape{c.h, c.w}, g, ep, pool);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ch = 0; ch < c.c; ++ch)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            double s = b[ch];
            for (int64_t ki = 0; ki < c.kh; ++ki)
              for (int64_t kj = 0; kj < c.kw; ++kj)
                s += double(c.tap(x.data() + (n * c.c + ch) * c.h * c.w, i, j, ki, kj)) * w[(ch * c.kh + ki) * c.kw + kj];
            const double want = std::min(std::max(s, -0.5), 0.7);
            ASSERT_NEAR(y[((n * c.c + ch) * oh + i) * ow + j], want, 1e-5) << c.c << "x" << c.h << " at " << n << "," << ch << ","
                                                                          << i << "," << j;
          }
  }
}
