// The im2col blocks the CPU convolutions hand to the GEMM, in both panel layouts, against the
// definition: element (k, p) of the im2col matrix is the input under tap k of output position p
// (zero in the padding). Built into the main unit tests and, for AVX2, into the isa_fallback
// tests (the AVX-512 build writes B panels directly, the others through a row-major block).
#include <gtest/gtest.h>

#include <random>

#include "kernels/conv.hpp"
#include "kernels/gemm.hpp"

using namespace onyx;
using namespace onyx::cpu;

namespace {

struct Im2colCase {
  int64_t c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
};

WindowGeometry geometry(const Im2colCase& c) {
  WindowGeometry g;
  g.kernel = Shape{c.kh, c.kw};
  g.stride = Shape{c.sh, c.sw};
  g.dilation = Shape{c.dh, c.dw};
  g.pad_begin = Shape{c.pt, c.pl};
  g.pad_end = Shape{c.pb, c.pr};
  g.out = Shape{(c.h + c.pt + c.pb - ((c.kh - 1) * c.dh + 1)) / c.sh + 1, (c.w + c.pl + c.pr - ((c.kw - 1) * c.dw + 1)) / c.sw + 1};
  return g;
}

float tap(const std::vector<float>& x, const Im2colCase& c, const WindowGeometry& g, int64_t k, int64_t p) {
  const int64_t ch = k / (c.kh * c.kw), ki = (k / c.kw) % c.kh, kj = k % c.kw;
  const int64_t ih = (p / g.out[1]) * c.sh - c.pt + ki * c.dh, iw = (p % g.out[1]) * c.sw - c.pl + kj * c.dw;
  return ih >= 0 && ih < c.h && iw >= 0 && iw < c.w ? x[(ch * c.h + ih) * c.w + iw] : 0.0f;
}

}  // namespace

TEST(Im2col, PanelBlocksMatchTheDefinition) {
  const Im2colCase cases[] = {
      {3, 17, 23, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  // 3x3 pad 1
      {2, 30, 41, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3},  // a stem: stride 2, pad 3
      {4, 19, 23, 3, 3, 1, 1, 2, 2, 2, 1, 0, 2},  // dilation 2, asymmetric pads
      {3, 20, 31, 3, 3, 1, 3, 1, 1, 1, 1, 1, 1},  // column stride 3
      {2, 5, 4, 3, 2, 1, 1, 1, 1, 2, 2, 2, 2},    // pads wider than the plane
  };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1, 1);
  for (const Im2colCase& c : cases) {
    const WindowGeometry g = geometry(c);
    const int64_t K = c.c * c.kh * c.kw, P = g.out[0] * g.out[1];
    std::vector<float> x(c.c * c.h * c.w);
    for (float& v : x) v = d(rng);
    const Shape in{c.h, c.w};
    // B blocks: rows [k0, k0 + kc) x positions [p0, p0 + cols), panels of kPanelCols.
    for (const auto [k0, kc, p0, cols] : {std::array<int64_t, 4>{0, K, 0, P}, {1, std::min<int64_t>(K - 1, 17), 5, P - 5}}) {
      const int64_t panels = (cols + kPanelCols - 1) / kPanelCols;
      std::vector<float> b(panels * kPanelCols * kc, NAN);
      im2col_pack_b(x.data(), in, g, k0, kc, p0, cols, b.data());
      for (int64_t q = 0; q < panels * kPanelCols; ++q)
        for (int64_t k = 0; k < kc; ++k) {
          const float got = b[(q / kPanelCols) * kPanelCols * kc + k * kPanelCols + q % kPanelCols];
          const float want = q < cols ? tap(x, c, g, k0 + k, p0 + q) : 0.0f;
          ASSERT_EQ(got, want) << c.kh << "x" << c.kw << " B block at k " << k << " column " << q;
        }
    }
    // A blocks: positions [r0, r0 + rows) x rows [k0, k0 + kc), panels of kPanelRows.
    for (const auto [r0, rows, k0, kc] : {std::array<int64_t, 4>{0, P, 0, K}, {7, std::min<int64_t>(P - 7, 29), 2, K - 2}}) {
      const int64_t panels = (rows + kPanelRows - 1) / kPanelRows;
      std::vector<float> a(panels * kPanelRows * kc, NAN);
      im2col_pack_a(x.data(), in, g, r0, rows, k0, kc, a.data());
      for (int64_t r = 0; r < panels * kPanelRows; ++r)
        for (int64_t k = 0; k < kc; ++k) {
          const float got = a[(r / kPanelRows) * kPanelRows * kc + k * kPanelRows + r % kPanelRows];
          const float want = r < rows ? tap(x, c, g, k0 + k, r0 + r) : 0.0f;
          ASSERT_EQ(got, want) << c.kh << "x" << c.kw << " A block at row " << r << " k " << k;
        }
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
