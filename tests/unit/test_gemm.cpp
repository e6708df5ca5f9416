// SGEMM against a naive reference: odd sizes, transposes, alpha/beta, packed operands, epilogues.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/gemm.hpp"

using namespace onyx;
using namespace onyx::cpu;

namespace {

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

void reference(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
               int64_t ldb, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = static_cast<float>(alpha * s + (beta == 0 ? 0.0 : beta * c[i * ldc + j]));
    }
}

}  // namespace

TEST(Gemm, MatchesReference) {
  ThreadPool pool(2);
  const int64_t sizes[][3] = {{1, 1, 1}, {1, 1000, 64}, {13, 17, 19}, {64, 64, 64}, {100, 3, 300}, {37, 129, 520}, {2, 200, 7}, {300, 1, 33}};
  uint32_t seed = 1;
  for (auto& s : sizes) {
    const int64_t m = s[0], n = s[1], k = s[2];
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const auto a = random_vec(m * k, seed++), b = random_vec(k * n, seed++);
      auto c = random_vec(m * n, seed++);
      auto want = c;
      const int64_t lda = ta ? m : k, ldb = tb ? k : n;
      reference(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, want.data(), n);
      sgemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c.data(), n, &pool);
      for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(c[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << m << "x" << n << "x" << k << " t" << t;
      // beta = 0 ignores C (even NaN garbage).
      std::vector<float> c0(m * n, NAN), w0(m * n);
      reference(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, w0.data(), n);
      sgemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c0.data(), n, &pool);
      for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(c0[i], w0[i], 1e-4 * (1 + std::fabs(w0[i])));
    }
  }
}

TEST(Gemm, ShortKWideBlocks) {
  // A short K widens the column blocks of B (up to 16 x 256 columns): several blocks per call,
  // the last partial, on one thread and split across two.
  ThreadPool pool(2);
  const int64_t sizes[][3] = {{30, 9000, 12}, {13, 5000, 40}, {25, 4100, 256}};
  uint32_t seed = 100;
  for (auto& s : sizes)
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      const int64_t m = s[0], n = s[1], k = s[2];
      const auto a = random_vec(m * k, seed++), b = random_vec(k * n, seed++);
      std::vector<float> c(m * n, NAN), want(m * n);
      reference(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, want.data(), n);
      sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n, p);
      for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(c[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << m << "x" << n << "x" << k;
    }
}

TEST(Gemm, TransposedOutput) {
  // sgemm_packed_tc stores the m x n product transposed (c[j * ldc + i]): partial row tiles and
  // column panels, several K blocks (accumulated through the transposed store), both operands
  // packed or not, each epilogue; one thread and two. ldc > m leaves the gaps alone.
  ThreadPool pool(2);
  const int64_t sizes[][3] = {{49, 160, 960}, {49, 960, 160}, {196, 64, 384}, {5, 17, 3}, {13, 33, 600}, {1, 40, 7}};
  uint32_t seed = 300;
  for (auto& s : sizes) {
    const int64_t m = s[0], n = s[1], k = s[2], ldc = m + 3;
    // A given as its transpose (k x m, as a 1x1 convolution's input), B as its transpose (the weights, n x k).
    const auto at = random_vec(k * m, seed++), bt = random_vec(n * k, seed++), bias = random_vec(n, seed++);
    std::vector<float> want(m * n);
    reference(true, true, m, n, k, 1.0f, at.data(), m, bt.data(), k, 0.0f, want.data(), n);
    const PackedMatrix pb = pack_b(true, k, n, bt.data(), k);
    for (int act = 0; act < 4; ++act)
      for (int variant = 0; variant < 2; ++variant) {
        GemmEpilogue ep;
        ep.bias = bias.data();
        ep.act = static_cast<GemmEpilogue::Act>(act);
        ep.lo = -0.3f;
        ep.hi = 0.4f;
        std::vector<float> c(n * ldc, 7.0f);
        ThreadPool* p = variant ? &pool : nullptr;
        if (variant == 0)
          sgemm_packed_tc(nullptr, true, at.data(), m, &pb, false, nullptr, 0, m, n, k, c.data(), ldc, p, &ep);
        else
          sgemm_packed_tc(nullptr, true, at.data(), m, nullptr, true, bt.data(), k, m, n, k, c.data(), ldc, p, &ep);
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < ldc; ++i) {
            const float got = c[j * ldc + i];
            if (i >= m) {
              ASSERT_EQ(got, 7.0f) << "gap written at " << j << "," << i;
              continue;
            }
            float x = want[i * n + j] + bias[j];
            if (ep.act == GemmEpilogue::Act::kRelu) x = std::max(x, 0.0f);
            if (ep.act == GemmEpilogue::Act::kClip) x = std::clamp(x, -0.3f, 0.4f);
            if (ep.act == GemmEpilogue::Act::kGelu) x = 0.5f * x * (1.0f + std::erf(x * 0.70710678f));
            ASSERT_NEAR(got, x, 1e-4 * (1 + std::fabs(x))) << m << "x" << n << "x" << k << " act " << act << " at " << i << "," << j;
          }
      }
  }
  // The choice: 49 columns fill two panels of 32, 49 rows four tiles of 12 and a one-row tile.
  EXPECT_TRUE(gemm_prefers_transposed(960, 49));
  EXPECT_FALSE(gemm_prefers_transposed(96, 3136));
  EXPECT_FALSE(gemm_prefers_transposed(16, 12544));
}

TEST(Gemm, PackedOperandsAndEpilogue) {
  ThreadPool pool(2);
  const int64_t m = 45, n = 77, k = 300;
  const auto a = random_vec(m * k, 7), b = random_vec(k * n, 8), bias_r = random_vec(m, 9), bias_c = random_vec(n, 10);
  std::vector<float> want(m * n), c(m * n);
  reference(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, want.data(), n);
  const PackedMatrix pa = pack_a(false, m, k, a.data(), k);
  const PackedMatrix pb = pack_b(false, k, n, b.data(), n);
  GemmEpilogue ep;
  ep.bias = bias_r.data();
  ep.bias_per_row = true;
  ep.act = GemmEpilogue::Act::kRelu;
  sgemm_packed(&pa, false, nullptr, 0, nullptr, false, b.data(), n, m, n, k, 0.0f, c.data(), n, &pool, &ep);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) ASSERT_NEAR(c[i * n + j], std::max(0.0f, want[i * n + j] + bias_r[i]), 1e-4);
  ep.bias = bias_c.data();
  ep.bias_per_row = false;
  ep.act = GemmEpilogue::Act::kClip;
  ep.lo = -0.5f;
  ep.hi = 0.5f;
  sgemm_packed(nullptr, false, a.data(), k, &pb, false, nullptr, 0, m, n, k, 0.0f, c.data(), n, &pool, &ep);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) ASSERT_NEAR(c[i * n + j], std::clamp(want[i * n + j] + bias_c[j], -0.5f, 0.5f), 1e-4);
  sgemm_packed(&pa, false, nullptr, 0, &pb, false, nullptr, 0, m, n, k, 0.0f, c.data(), n, &pool, nullptr);
  for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(c[i], want[i], 1e-4);
}

// A pre-packed B whose k-block is far wider than the caches (a vocabulary projection) is taken in
// column blocks with A packed once for all of them: one thread and two, with a bias epilogue,
// the last partial panel included.
TEST(Gemm, WidePackedBInColumnBlocks) {
  const int64_t m = 40, n = 4500, k = 600;  // 512 x 4500 floats per k-block: 9 MB
  const auto a = random_vec(m * k, 21), b = random_vec(k * n, 22), bias = random_vec(n, 23);
  std::vector<float> want(m * n);
  reference(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, want.data(), n);
  const PackedMatrix pb = pack_b(false, k, n, b.data(), n);
  GemmEpilogue ep;
  ep.bias = bias.data();
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    std::vector<float> c(m * n, NAN);
    sgemm_packed(nullptr, false, a.data(), k, &pb, false, nullptr, 0, m, n, k, 0.0f, c.data(), n, threads > 1 ? &pool : nullptr, &ep);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        ASSERT_NEAR(c[i * n + j], want[i * n + j] + bias[j], 1e-4 * (1 + std::fabs(want[i * n + j]))) << threads << " threads, " << i << "," << j;
  }
}

TEST(Gemm, ShiftedViewOfB) {
  // B as a shifted view of one buffer (element (k, j) at b[koff[k] + j]): offsets out of order
  // and overlapping, K over several blocks, n not a multiple of the panel width (its last panel
  // copied, or read in place where the buffer allows), with the epilogue (bias per row, Relu),
  // one thread and two.
  ThreadPool pool(2);
  const int64_t sizes[][2] = {{13, 37}, {40, 300}, {5, 600}};
  for (auto& s : sizes) {
    const int64_t m = s[0], k = s[1];
    for (int64_t n : {int64_t{1}, int64_t{45}, int64_t{200}}) {
      const std::vector<float> a = random_vec(static_cast<size_t>(m * k), 3);
      std::vector<int64_t> koff(static_cast<size_t>(k));
      for (int64_t p = 0; p < k; ++p) koff[p] = (p * 37) % 251;
      // Readable up to every offset plus n rounded up to a panel.
      const std::vector<float> base = random_vec(static_cast<size_t>(251 + n + kPanelCols), 4);
      std::vector<float> bmat(static_cast<size_t>(k * n)), bias = random_vec(static_cast<size_t>(m), 5);
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j) bmat[p * n + j] = base[koff[p] + j];
      std::vector<float> want(static_cast<size_t>(m * n));
      reference(false, false, m, n, k, 1.0f, a.data(), k, bmat.data(), n, 0.0f, want.data(), n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) want[i * n + j] = std::max(0.0f, want[i * n + j] + bias[i]);
      const PackedMatrix pa = pack_a(false, m, k, a.data(), k);
      GemmEpilogue ep;
      ep.bias = bias.data();
      ep.bias_per_row = true;
      ep.act = GemmEpilogue::Act::kRelu;
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool})
        for (bool readable : {false, true}) {
          // Not readable past n: the buffer ends at the last column read (a copy, so that
          // reading further is out of bounds: a -DONYX_SANITIZE=address build reports it).
          const int64_t end = readable ? static_cast<int64_t>(base.size()) : 251 + n;
          const std::vector<float> view(base.begin(), base.begin() + end);
          std::vector<float> c(static_cast<size_t>(m * n), NAN);
          sgemm_b_shifted(&pa, view.data(), koff.data(), m, n, k, c.data(), n, p, &ep, readable);
          for (int64_t i = 0; i < m * n; ++i)
            ASSERT_NEAR(c[i], want[i], 1e-4) << m << "x" << n << "x" << k << (readable ? " readable" : "") << " at " << i;
        }
    }
  }
}

TEST(Gemm, RowVectorTimesPackedB) {
  // One row times pre-packed B (a classifier, a decoding step) takes its own path: no A panel,
  // groups of four column panels, split across threads. Widths of one to four panels and a
  // partial last one, several k-blocks, A transposed (its row strided), beta, and the epilogue.
  ThreadPool pool(2);
  const int64_t shapes[][2] = {{1000, 1280}, {31, 40}, {70, 513}, {130, 1100}, {97, 3}};
  uint32_t seed = 50;
  for (auto& sh : shapes) {
    const int64_t n = sh[0], k = sh[1];
    for (bool ta : {false, true}) {
      SCOPED_TRACE(testing::Message() << "1 x " << n << " x " << k << (ta ? " A transposed" : ""));
      const int64_t lda = ta ? 3 : k;  // A^T stored k x 3, its first column the row
      const auto a = random_vec(ta ? k * 3 : k, seed++), b = random_vec(k * n, seed++), bias = random_vec(n, seed++);
      const PackedMatrix pb = pack_b(false, k, n, b.data(), n);
      auto c = random_vec(n, seed++);
      std::vector<float> want = c;
      reference(ta, false, 1, n, k, 1.0f, a.data(), lda, b.data(), n, 0.5f, want.data(), n);
      GemmEpilogue ep;
      ep.bias = bias.data();
      ep.act = GemmEpilogue::Act::kClip;
      ep.lo = -1.0f;
      ep.hi = 1.5f;
      for (int64_t j = 0; j < n; ++j) want[j] = std::clamp(want[j] + bias[j], -1.0f, 1.5f);
      sgemm_packed(nullptr, ta, a.data(), lda, &pb, false, nullptr, 0, 1, n, k, 0.5f, c.data(), n, &pool, &ep);
      for (int64_t j = 0; j < n; ++j) ASSERT_NEAR(c[j], want[j], 1e-4 * (1 + std::fabs(want[j]))) << j;
      // beta 0, no epilogue, one thread.
      std::vector<float> c0(n, NAN), w0(n);
      reference(ta, false, 1, n, k, 1.0f, a.data(), lda, b.data(), n, 0.0f, w0.data(), n);
      sgemm_packed(nullptr, ta, a.data(), lda, &pb, false, nullptr, 0, 1, n, k, 0.0f, c0.data(), n, nullptr, nullptr);
      for (int64_t j = 0; j < n; ++j) ASSERT_NEAR(c0[j], w0[j], 1e-4 * (1 + std::fabs(w0[j]))) << j;
    }
  }
}

TEST(Gemm, GatheredAPlainAndShortKernels) {
  // A gathered A of short K takes the short kernels: a plain one (one row pointer, K compiled
  // in) for whole tiles of a plain A of a listed K, the gathered one otherwise (a partial tile,
  // an unlisted K, rows out of order). Each case: bias, the residual sum and a Clip, or C
  // accumulated onto (a residual in place) with a Relu; 16 columns (one vector), 40 (a partial
  // second vector and panel), 96; rows 12 x 6 + 7 (a partial last tile).
  ThreadPool pool(2);
  uint32_t seed = 500;
  for (int64_t k : {16, 24, 64, 144, 20, 200})
    for (int64_t n : {16, 40, 96})
      for (int variant = 0; variant < 3; ++variant) {
        const int64_t m = 12 * 6 + 7;
        const bool reversed = variant == 2;  // rows out of order: not a plain A
        const auto a = random_vec(m * k, seed++), b = random_vec(k * n, seed++), bias = random_vec(n, seed++),
                   sum = random_vec(m * n, seed++);
        std::vector<int64_t> row_off(m), koff(k);
        for (int64_t i = 0; i < m; ++i) row_off[i] = (reversed ? m - 1 - i : i) * k;
        for (int64_t p = 0; p < k; ++p) koff[p] = p;
        const PackedMatrix pb = pack_b(false, k, n, b.data(), n, 1.0f, gather_k_block(k));
        const bool in_place = variant == 1;
        std::vector<float> c = in_place ? sum : std::vector<float>(m * n, NAN), want(m * n);
        GemmEpilogue ep;
        ep.bias = bias.data();
        ep.sum = in_place ? nullptr : sum.data();
        ep.act = in_place ? GemmEpilogue::Act::kRelu : GemmEpilogue::Act::kClip;
        ep.lo = -0.5f;
        ep.hi = 1.5f;
        sgemm_a_gather(AGather{a.data(), row_off.data(), koff.data(), reversed ? 0 : k}, &pb, m, n, k, c.data(), n, &pool,
                       &ep, in_place);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double s = bias[j] + sum[i * n + j];
            for (int64_t p = 0; p < k; ++p) s += double(a[row_off[i] + p]) * b[p * n + j];
            want[i * n + j] = static_cast<float>(in_place ? std::max(s, 0.0) : std::clamp(s, -0.5, 1.5));
          }
        for (int64_t i = 0; i < m * n; ++i)
          ASSERT_NEAR(c[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "k " << k << " n " << n << " variant " << variant
                                                                      << " at " << i;
      }
}
