// Winograd F(R x R, 3x3), R = 2 or 4, for channels-last 2-D convolutions (3x3 kernel, stride 1,
// no dilation, group 1): each R x R block of output pixels is computed from the (R + 2)^2 input
// tile under it as (R + 2)^2 products of transformed input and transformed weights, one per point
// of the transformed tile, summed over the input channels as (R + 2)^2 GEMMs. Per output and
// input channel that is 4 (R = 2) or 2.25 (R = 4) multiplications where the direct convolution
// takes 9, for the cost of transforming the input tiles and the products (docs/performance.md).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/gemm.hpp"

namespace onyx {
class ThreadPool;
}

namespace onyx::cpu {

/// A 3x3 convolution's weights transformed for F(R x R, 3x3): for each of the (R + 2)^2 points of
/// the transformed tile, the [C, M] matrix of its products' weights, packed as a gathered
/// product's B.
struct WinogradWeights {
  int64_t C = 0, M = 0;
  int tile = 2;                 // R of F(R x R, 3x3): 2 or 4
  std::vector<PackedMatrix> u;  // (R + 2)^2, or none
  bool empty() const { return u.empty(); }
};

/// The transformed weights of w ([M, C, 3, 3]) for F(tile x tile, 3x3), computed in double.
WinogradWeights winograd_weights(const float* w, int64_t M, int64_t C, int tile);

/// y[N, OH, OW, M] = the convolution of x[N, H, W, C] by u's weights, windows starting pt rows
/// above and pl columns left of the input (zeros outside it), then the bias (or null), the sum
/// (or null; it may be y's own buffer: each output is written after its sum is read) and the
/// activation (act's Relu or Clip).
void winograd_conv(const WinogradWeights& u, const float* x, int64_t N, int64_t H, int64_t W, int64_t pt, int64_t pl,
                   int64_t OH, int64_t OW, const float* bias, const float* sum, const GemmEpilogue& act, float* y,
                   ThreadPool& pool);

}  // namespace onyx::cpu
