// The im2col blocks the CPU convolutions hand to the GEMM, in both panel layouts, against the
// definition: element (k, p) of the im2col matrix is the input under tap k of output position p
// (zero in the padding). Built into the main unit tests and, for AVX2, into the isa_fallback
// tests (the AVX-512 build writes B panels directly, the others through a row-major block).
#include <gtest/gtest.h>

#include <random>

#include "kernels/conv.hpp"
#include "kernels/gemm.hpp"
#include "window_case.hpp"

using namespace onyx;
using namespace onyx::cpu;
using namespace onyx::test;

namespace {

/// Element (k, p) of the im2col matrix: the input under tap k of output position p.
float im2col_at(const std::vector<float>& x, const WindowCase& c, const WindowGeometry& g, int64_t k, int64_t p) {
  const int64_t ch = k / (c.kh * c.kw), ki = (k / c.kw) % c.kh, kj = k % c.kw;
  return c.tap(x.data() + ch * c.h * c.w, p / g.out[1], p % g.out[1], ki, kj);
}

/// A packed block (panels of `width` along `outer`, kc values of each) against `want(o, k)`;
/// positions past `n` are zero.
template <class Want>
void expect_panels(const std::vector<float>& got, int64_t width, int64_t n, int64_t kc, Want want, const char* what) {
  const int64_t panels = (n + width - 1) / width;
  for (int64_t o = 0; o < panels * width; ++o)
    for (int64_t k = 0; k < kc; ++k)
      ASSERT_EQ(got[(o / width) * width * kc + k * width + o % width], o < n ? want(o, k) : 0.0f) << what << " at " << o << ", " << k;
}

}  // namespace

TEST(Im2col, PanelBlocksMatchTheDefinition) {
  const WindowCase cases[] = {
      {3, 17, 23, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  // 3x3 pad 1
      {2, 30, 41, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3},  // a stem: stride 2, pad 3
      {4, 19, 23, 3, 3, 1, 1, 2, 2, 2, 1, 0, 2},  // dilation 2, asymmetric pads
      {3, 20, 31, 3, 3, 1, 3, 1, 1, 1, 1, 1, 1},  // column stride 3
      {2, 5, 4, 3, 2, 1, 1, 1, 1, 2, 2, 2, 2},    // pads wider than the plane
  };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1, 1);
  for (const WindowCase& c : cases) {
    const WindowGeometry g = c.geometry();
    const int64_t K = c.c * c.kh * c.kw, P = g.out[0] * g.out[1];
    std::vector<float> x(c.c * c.h * c.w);
    for (float& v : x) v = d(rng);
    const Shape in{c.h, c.w};
    // B blocks: rows [k0, k0 + kc) x positions [p0, p0 + cols), panels of kPanelCols.
    for (const auto [k0, kc, p0, cols] : {std::array<int64_t, 4>{0, K, 0, P}, {1, std::min<int64_t>(K - 1, 17), 5, P - 5}}) {
      std::vector<float> b(((cols + kPanelCols - 1) / kPanelCols) * kPanelCols * kc, NAN);
      im2col_pack_b(x.data(), in, g, k0, kc, p0, cols, b.data());
      expect_panels(b, kPanelCols, cols, kc, [&](int64_t q, int64_t k) { return im2col_at(x, c, g, k0 + k, p0 + q); }, "B");
    }
    // A blocks: positions [r0, r0 + rows) x rows [k0, k0 + kc), panels of kPanelRows.
    for (const auto [r0, rows, k0, kc] : {std::array<int64_t, 4>{0, P, 0, K}, {7, std::min<int64_t>(P - 7, 29), 2, K - 2}}) {
      std::vector<float> a(((rows + kPanelRows - 1) / kPanelRows) * kPanelRows * kc, NAN);
      im2col_pack_a(x.data(), in, g, r0, rows, k0, kc, a.data());
      expect_panels(a, kPanelRows, rows, kc, [&](int64_t r, int64_t k) { return im2col_at(x, c, g, k0 + k, r0 + r); }, "A");
    }
  }
  // Strided copies: every stride path, lengths around the vector width.
  std::vector<float> src(200);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
  for (int64_t stride : {1, 2, 3})
    for (int64_t n : {1, 15, 16, 17, 33, 66}) {
      std::vector<float> dst(n + 1, -1.0f);
      strided_copy(src.data(), stride, dst.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(dst[i], src[i * stride]) << stride << " " << n;
      ASSERT_EQ(dst[n], -1.0f);
    }
}
