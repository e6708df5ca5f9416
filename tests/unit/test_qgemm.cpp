// The 8-bit GEMM (kernels/qgemm.hpp) against an exact int64 reference: uint8 and int8 A and B,
// zero points (none, one, per column), k not a multiple of 4, row and column tails, gathered A
// (rows out of order, quads from anywhere), and the three epilogues. Built into the main unit
// tests (the build machine's ISA: AVX-512 VNNI here) and into onyx_isa_fallback_tests (AVX2).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/qgemm.hpp"

using namespace onyx;
using namespace onyx::cpu;

namespace {

struct QCase {
  int64_t m, n, k;
  bool a_signed, b_unsigned;
  int a_zp;
  int zp_mode;  // 0: no B zero point, 1: one, 2: per column
  bool gather;
};

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, 255);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = static_cast<uint8_t>(d(rng));
  return v;
}

int32_t as_int(uint8_t raw, bool is_signed) { return is_signed ? static_cast<int8_t>(raw) : raw; }

/// The exact sums (A - za)(B - zb[j]) for element (i, j), A read as qgemm reads it.
std::vector<int64_t> reference(const QCase& c, const std::vector<uint8_t>& abuf, const std::vector<int64_t>& row_off,
                               const std::vector<int64_t>& koff, const std::vector<uint8_t>& b, const std::vector<int32_t>& zb) {
  std::vector<int64_t> r(static_cast<size_t>(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      int64_t s = 0;
      for (int64_t kk = 0; kk < c.k; ++kk) {
        const int32_t av = as_int(abuf[row_off[i] + koff[kk]], c.a_signed) - c.a_zp;
        const int32_t bz = c.zp_mode == 0 ? 0 : zb[c.zp_mode == 1 ? 0 : j];
        s += int64_t{av} * (as_int(b[kk * c.n + j], !c.b_unsigned) - bz);
      }
      r[i * c.n + j] = s;
    }
  return r;
}

void run_case(const QCase& c, uint32_t seed, ThreadPool* pool) {
  SCOPED_TRACE(testing::Message() << "m " << c.m << " n " << c.n << " k " << c.k << " a_signed " << c.a_signed
                                  << " b_unsigned " << c.b_unsigned << " a_zp " << c.a_zp << " zp_mode " << c.zp_mode
                                  << " gather " << c.gather);
  const int64_t kp = (c.k + 3) / 4 * 4;
  // A: plain rows of lda = k + 3, or windows of a bigger buffer (rows shuffled, quads scattered);
  // a gathered A's quads past k read the zero point, as a padded convolution input does.
  std::vector<uint8_t> abuf;
  std::vector<int64_t> row_off(c.m), koff(kp), quad_off(kp / 4);
  int64_t lda = 0;
  if (!c.gather) {
    lda = c.k + 3;
    abuf = random_bytes(static_cast<size_t>(c.m * lda), seed);
    for (int64_t i = 0; i < c.m; ++i) row_off[i] = i * lda;
    for (int64_t kk = 0; kk < kp; ++kk) koff[kk] = kk;
  } else {
    const int64_t span = kp * 2 + 8;
    abuf = random_bytes(static_cast<size_t>(c.m * span + span), seed);
    for (int64_t i = 0; i < c.m; ++i) row_off[i] = ((i * 7919) % c.m) * span;
    // Even quads in place, odd ones past the first kp bytes at odd (unaligned) offsets.
    for (int64_t q = 0; q < kp / 4; ++q) quad_off[q] = q % 2 == 0 ? 4 * q : 4 * (kp / 4 + q) + 1;
    for (int64_t kk = 0; kk < kp; ++kk) koff[kk] = quad_off[kk / 4] + kk % 4;
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t kk = c.k; kk < kp; ++kk) abuf[row_off[i] + koff[kk]] = static_cast<uint8_t>(c.a_zp);
  }
  const auto b = random_bytes(static_cast<size_t>(c.k * c.n), seed + 1);
  std::vector<int32_t> zb(static_cast<size_t>(c.n));
  std::mt19937 rng(seed + 2);
  for (auto& z : zb) z = c.b_unsigned ? static_cast<int32_t>(rng() % 256) : static_cast<int32_t>(rng() % 256) - 128;
  const auto want = reference(c, abuf, row_off, koff, b, zb);
  const QPackedB pb = qpack_b(b.data(), c.b_unsigned, c.k, c.n, c.n, 1, c.zp_mode ? zb.data() : nullptr,
                              c.zp_mode == 0 ? 0 : c.zp_mode == 1 ? 1 : c.n);
  QGemmA a;
  a.base = abuf.data();
  a.is_signed = c.a_signed;
  a.zero_point = c.a_zp;
  if (c.gather) {
    a.row_off = row_off.data();
    a.quad_off = quad_off.data();
  } else {
    a.lda = lda;
  }
  std::vector<int32_t> bias(static_cast<size_t>(c.n));
  for (auto& x : bias) x = static_cast<int32_t>(rng() % 2001) - 1000;
  // int32 with a bias.
  {
    const int64_t ldc = c.n + 5;
    std::vector<int32_t> out(static_cast<size_t>(c.m * ldc), 12345);
    QGemmOut o;
    o.kind = QGemmOut::Kind::kInt32;
    o.c = out.data();
    o.ldc = ldc;
    o.bias_i = bias.data();
    qgemm(a, pb, c.m, o, pool);
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j)
        ASSERT_EQ(out[i * ldc + j], want[i * c.n + j] + bias[j]) << "int32 at " << i << "," << j;
      for (int64_t j = c.n; j < ldc; ++j) ASSERT_EQ(out[i * ldc + j], 12345) << "wrote past n at " << i << "," << j;
    }
  }
  std::vector<float> scale(static_cast<size_t>(c.n)), row_scale(static_cast<size_t>(c.m)), fbias(static_cast<size_t>(c.n));
  std::uniform_real_distribution<float> ud(0.5f, 2.0f);
  for (auto& s : scale) s = ud(rng) * 1e-3f;
  for (auto& s : row_scale) s = ud(rng);
  for (auto& s : fbias) s = ud(rng) - 1.25f;
  // float, scaled per column and row, plus a bias.
  {
    std::vector<float> out(static_cast<size_t>(c.m * c.n));
    QGemmOut o;
    o.kind = QGemmOut::Kind::kFloat;
    o.c = out.data();
    o.ldc = c.n;
    o.scale = scale.data();
    o.row_scale = row_scale.data();
    o.bias_f = fbias.data();
    qgemm(a, pb, c.m, o, pool);
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        const float w = static_cast<float>(want[i * c.n + j]) * scale[j] * row_scale[i] + fbias[j];
        ASSERT_NEAR(out[i * c.n + j], w, 1e-5f * (1 + std::fabs(w))) << "float at " << i << "," << j;
      }
  }
  // requantized to 8 bits (both signs), with a clamp narrower than the type.
  for (bool out_signed : {false, true}) {
    const int64_t ldc = c.n + 3;
    std::vector<uint8_t> out(static_cast<size_t>(c.m * ldc), 0xAB);
    QGemmOut o;
    o.kind = QGemmOut::Kind::kQuant8;
    o.c = out.data();
    o.ldc = ldc;
    o.scale = scale.data();
    o.bias_i = bias.data();
    o.out_signed = out_signed;
    o.out_zp = out_signed ? -5 : 120;
    o.lo = out_signed ? -100 : 3;
    o.hi = out_signed ? 127 : 250;
    qgemm(a, pb, c.m, o, pool);
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        const float f = static_cast<float>(want[i * c.n + j] + bias[j]) * scale[j];
        const int32_t q = std::clamp(static_cast<int32_t>(std::nearbyint(f)) + o.out_zp, o.lo, o.hi);
        ASSERT_EQ(as_int(out[i * ldc + j], out_signed), q) << "quant8 at " << i << "," << j << " f " << f;
      }
      for (int64_t j = c.n; j < ldc; ++j) ASSERT_EQ(out[i * ldc + j], 0xAB) << "wrote past n at " << i << "," << j;
    }
  }
}

}  // namespace

TEST(QGemm, MatchesExactReference) {
  ThreadPool pool(2);
  const int64_t shapes[][3] = {{1, 1, 1},   {5, 7, 3},    {6, 16, 4},   {7, 17, 9},    {13, 64, 64}, {12, 65, 130},
                               {1, 200, 33}, {40, 24, 27}, {3, 130, 576}, {97, 96, 144}, {300, 40, 12},
                               {30, 1000, 100}};  // (all rows, the columns split in shares of several panels)
  uint32_t seed = 11;
  for (auto& s : shapes)
    for (int variant = 0; variant < 6; ++variant) {
      QCase c{s[0], s[1], s[2], (variant & 1) != 0, variant >= 4, variant % 3 == 0 ? 0 : (variant % 3 == 1 ? 17 : -3),
              variant % 3, variant % 2 == 0};
      if (!c.a_signed && c.a_zp < 0) c.a_zp = 200;
      if (c.a_signed && c.a_zp > 127) c.a_zp = 5;
      run_case(c, seed++, variant % 2 ? &pool : nullptr);
    }
}

TEST(QGemm, BigSumsStayExact) {
  // Extreme values over a long k: every product 255 x -128 (or 127), sums near 2^27.
  ThreadPool pool(2);
  const int64_t m = 9, n = 33, k = 4100;
  std::vector<uint8_t> a(static_cast<size_t>(m * k), 255), b(static_cast<size_t>(k * n), 0x80);
  for (int64_t kk = 0; kk < k; ++kk) b[kk * n + 5] = 127;
  const QPackedB pb = qpack_b(b.data(), false, k, n, n, 1, nullptr, 0);
  QGemmA qa;
  qa.base = a.data();
  qa.lda = k;
  std::vector<int32_t> out(static_cast<size_t>(m * n));
  QGemmOut o;
  o.c = out.data();
  o.ldc = n;
  qgemm(qa, pb, m, o, &pool);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) ASSERT_EQ(out[i * n + j], (j == 5 ? 127 : -128) * 255 * k) << i << "," << j;
}

TEST(QGemm, HugeMultipliersStillSaturate) {
  // Multipliers so large that the scaled sums leave int32: the epilogue must clamp in float before
  // rounding (the saturating-pack form is only taken where the sums stay far inside int32).
  ThreadPool pool(2);
  const int64_t m = 13, n = 128, k = 300;
  std::vector<uint8_t> a = random_bytes(static_cast<size_t>(m * k), 91), b = random_bytes(static_cast<size_t>(k * n), 92);
  const QPackedB pb = qpack_b(b.data(), false, k, n, n, 1, nullptr, 0);
  const QGemmA qa = QGemmA::matrix(a.data(), k, false, 100);
  std::vector<int32_t> want32(static_cast<size_t>(m * n));
  qgemm(qa, pb, m, QGemmOut::int32(want32.data(), n), &pool);
  for (float scale : {1e3f, 1e6f, -1e6f, 3e-4f}) {
    std::vector<float> sc(static_cast<size_t>(n), scale);
    std::vector<uint8_t> out(static_cast<size_t>(m * n));
    qgemm(qa, pb, m, QGemmOut::quant8(out.data(), n, sc.data(), 7, false), &pool);
    for (int64_t i = 0; i < m * n; ++i) {
      const float ff = static_cast<float>(want32[i]) * scale;
      const int32_t q = ff > 1e9f ? 255 : ff < -1e9f ? 0 : std::clamp(static_cast<int32_t>(std::nearbyint(ff)) + 7, 0, 255);
      ASSERT_EQ(out[i], q) << "scale " << scale << " at " << i << " sum " << want32[i];
    }
  }
}
