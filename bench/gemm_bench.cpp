// SGEMM throughput: median of repeated runs, in GFLOP/s.  gemm_bench [threads]
// First B unpacked (packed per call), then pre-packed as a model's weights are.
// Then the gathered-A product of channels-last 1x1 convolutions (MobileNetV2's and ResNet-50's
// shapes: pixels x output channels x input channels), A read in place, without and with the
// residual epilogue.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/gemm.hpp"

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  onyx::ThreadPool pool(threads);
  const int64_t shapes[][3] = {{128, 768, 768}, {128, 3072, 768}, {64, 3136, 576}, {512, 512, 512}, {256, 196, 2304}, {1, 1000, 2048}};
  for (auto& s : shapes) {
    const int64_t m = s[0], n = s[1], k = s[2];
    std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
    std::vector<double> times;
    for (int r = 0; r < 25; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      onyx::cpu::sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n, &pool);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    const double med = times[times.size() / 2];
    std::printf("M=%-5lld N=%-5lld K=%-5lld  %8.3f ms  %7.1f GFLOP/s\n", (long long)m, (long long)n, (long long)k, med * 1e3,
                2.0 * m * n * k / med * 1e-9);
  }
  // B pre-packed once, as a model's constant weights are (the shapes of a decoder's prefill: a
  // 128-token prompt through hidden 768, its FFN and a vocabulary projection).
  const int64_t packed[][3] = {{128, 768, 768}, {128, 256, 768}, {128, 2048, 768}, {128, 768, 2048}, {128, 3072, 768},
                               {128, 32000, 768}};
  for (auto& s : packed) {
    const int64_t m = s[0], n = s[1], k = s[2];
    std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
    const onyx::cpu::PackedMatrix pb = onyx::cpu::pack_b(false, k, n, b.data(), n);
    std::vector<double> times;
    for (int r = 0; r < 25; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      onyx::cpu::sgemm_packed(nullptr, false, a.data(), k, &pb, false, nullptr, 0, m, n, k, 0.0f, c.data(), n, &pool);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    const double med = times[times.size() / 2];
    std::printf("packed B M=%-5lld N=%-5lld K=%-5lld  %8.3f ms  %7.1f GFLOP/s\n", (long long)m, (long long)n, (long long)k,
                med * 1e3, 2.0 * m * n * k / med * 1e-9);
  }
  // Channels-last pointwise convolutions: A is the input, [pixels, K] row-major; then again with
  // a bias, a residual sum (m x n floats read) and Relu in the epilogue.
  const int64_t convs[][3] = {{12544, 16, 32}, {12544, 96, 16}, {3136, 144, 24}, {3136, 24, 144}, {784, 192, 32},
                              {196, 576, 96}, {49, 960, 160}, {3136, 256, 64}, {784, 128, 512}, {196, 1024, 256}, {196, 256, 1024},
                              {49, 512, 2048}, {49, 2048, 512}};
  for (int with_sum : {0, 1})
    for (auto& s : convs) {
    const int64_t m = s[0], n = s[1], k = s[2];
    std::vector<float> sum(m * n, 0.1f), bias(n, 0.2f);
    onyx::cpu::GemmEpilogue ep;
    ep.bias = bias.data();
    ep.sum = sum.data();
    ep.act = onyx::cpu::GemmEpilogue::Act::kRelu;
    std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
    std::vector<int64_t> rows(m), koff(k);
    for (int64_t i = 0; i < m; ++i) rows[i] = i * k;
    for (int64_t i = 0; i < k; ++i) koff[i] = i;
    const onyx::cpu::PackedMatrix pb = onyx::cpu::pack_b(false, k, n, b.data(), n, 1.0f, onyx::cpu::gather_k_block(k));
    std::vector<double> times;
    for (int r = 0; r < 50; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      onyx::cpu::sgemm_a_gather(onyx::cpu::AGather{a.data(), rows.data(), koff.data()}, &pb, m, n, k, c.data(), n, &pool, with_sum ? &ep : nullptr);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    const double med = times[times.size() / 2];
    if (with_sum) std::printf("+bias+sum+relu ");
    std::printf("gather pixels=%-5lld N=%-5lld K=%-5lld  %8.3f ms  %7.1f GFLOP/s\n", (long long)m, (long long)n, (long long)k,
                med * 1e3, 2.0 * m * n * k / med * 1e-9);
  }
}
