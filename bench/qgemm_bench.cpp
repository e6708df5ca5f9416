// The 8-bit integer GEMM (kernels/qgemm.hpp) beside the float32 GEMM on the same shapes: median of
// repeated runs, in GOP/s (2 operations per multiply-add), and the ratio of their times.
//   qgemm_bench [threads]
// The shapes are the products of MobileNetV2's and ResNet-50's channels-last convolutions (pixels
// x output channels x input channels times taps) and of BERT's linear layers; the 8-bit product
// requantises to uint8 in its epilogue, the float32 one writes floats. The build's -march picks
// the integer kernels (AVX-512 VNNI, AVX-VNNI, AVX2 int16 pairs): CMake builds this file for the
// build machine (onyx_qgemm_bench) and, on x86-64, for AVX2 alone (onyx_qgemm_bench_avx2).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/qgemm.hpp"

namespace {

template <class F>
double median_seconds(F&& f) {
  f();  // warm-up (and the first touch of the buffers)
  std::vector<double> t;
  for (int r = 0; r < 25; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace onyx::cpu;
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  onyx::ThreadPool pool(threads);
  std::printf("integer GEMM: %d-row tiles, B grouped by %d, panels of %lld columns\n", kQGroup == 4 ? 6 : 4, kQGroup,
              static_cast<long long>(kQPanel));
  const int64_t shapes[][3] = {{12544, 96, 16}, {12544, 16, 32},  {3136, 144, 24},  {3136, 24, 144}, {784, 192, 32},
                               {3136, 64, 576}, {3136, 256, 64},  {784, 128, 1152}, {196, 256, 2304}, {49, 512, 4608},
                               {128, 768, 768}, {128, 3072, 768}};
  for (const auto& s : shapes) {
    const int64_t m = s[0], n = s[1], k = s[2];
    std::vector<uint8_t> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)), c(static_cast<size_t>(m * n));
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7 % 251);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 13 % 253);
    std::vector<float> af(a.size(), 0.5f), bf(b.size(), 0.25f), cf(c.size()), scale(static_cast<size_t>(n), 1e-4f);
    const QPackedB pb = qpack_b(b.data(), false, k, n, n, 1, nullptr, 0);
    const PackedMatrix pbf = pack_b(false, k, n, bf.data(), n);
    const QGemmA qa = QGemmA::matrix(a.data(), k, false, 128);
    const QGemmOut out = QGemmOut::quant8(c.data(), n, scale.data(), 128, false);
    const double tq = median_seconds([&] { qgemm(qa, pb, m, out, &pool); });
    const double tf = median_seconds(
        [&] { sgemm_packed(nullptr, false, af.data(), k, &pbf, false, nullptr, 0, m, n, k, 0.0f, cf.data(), n, &pool); });
    const double ops = 2.0 * static_cast<double>(m * n * k);
    std::printf("M=%-6lld N=%-5lld K=%-5lld  int8 %8.3f ms %7.1f GOP/s   float32 %8.3f ms %7.1f GFLOP/s   float32/int8 %.2f\n",
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), tq * 1e3, ops / tq * 1e-9,
                tf * 1e3, ops / tf * 1e-9, tf / tq);
  }
  return 0;
}
