// The Conv kernel, shared with fusion-created kernels (Conv + activation).
#pragma once

#include <vector>

#include "ep/kernel.hpp"
#include "kernels/common.hpp"
#include "kernels/gemm.hpp"
#include "ops/nn.hpp"

namespace onyx::cpu {

class ConvKernel final : public Kernel {
 public:
  /// `act` is fused after the bias (kNone for a plain Conv).
  ConvKernel(const KernelCreateInfo& info, GemmEpilogue::Act act, float lo, float hi);
  void compute(KernelContext& ctx) const override;

 private:
  const Node& node_;
  int64_t group_ = 1;
  GemmEpilogue act_;
  std::vector<PackedMatrix> packed_;  // per group, when the weights are constant float32
};

/// A 2-D input plane laid out for vectorised sliding windows (depthwise Conv, MaxPool): copied
/// into a buffer padded with `pad` values and split by column phase for column stride sw
/// (phase q holds padded columns q, q + sw, q + 2sw, ...), so every tap of a vector of `lanes`
/// consecutive outputs is one contiguous load with no bounds checks.
struct PhasePlane {
  int64_t H = 0, W = 0, ph = 0, pw = 0, sw = 1;
  int64_t rows = 0;        // padded rows the windows read
  int64_t cols = 0;        // columns per phase row (rounded-up output width plus the widest tap, plus slack)
  int64_t row_stride = 0;  // floats per padded input row (sw phase rows)
  /// For a window of kh x kw taps with strides (sh, sw), dilations (dh, dw) and leading pads
  /// (ph, pw) producing oh x ow outputs from an h x w plane.
  static PhasePlane make(int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
                         int64_t dh, int64_t dw, int64_t ph, int64_t pw, int64_t lanes);
  size_t floats() const { return static_cast<size_t>((rows + 1) * row_stride); }  // buffer size fill() needs
  /// Offset of tap (ki, kj) from the first padded row of an output row.
  int64_t tap(int64_t ki, int64_t kj, int64_t dh, int64_t dw) const {
    const int64_t t = kj * dw;
    return ki * dh * row_stride + (t % sw) * cols + t / sw;
  }
  /// Lays out plane x (H x W) into buf (floats() floats).
  void fill(const float* x, float pad, float* buf) const;
};

/// Per-thread workspace for im2col (grows, never shrinks: no allocation per run).
float* conv_scratch(size_t floats);

/// im2col of one image and group, any rank: col[(c, kernel offset), output position] =
/// map(x at that tap), D(0) where the tap falls in the padding.
template <class S, class D, class Map>
void im2col_mapped(const S* x, int64_t channels, const Shape& in, const WindowGeometry& g, D* col, ThreadPool& pool,
                   Map map) {
  const size_t r = in.size();
  const int64_t kvol = g.kernel.numel(), out_size = g.out.numel(), in_size = in.numel();
  if (r == 2) {
    const int64_t H = in[0], W = in[1], KW = g.kernel[1], OH = g.out[0], OW = g.out[1];
    const int64_t sh = g.stride[0], sw = g.stride[1], dh = g.dilation[0], dw = g.dilation[1];
    const int64_t ph = g.pad_begin[0], pw = g.pad_begin[1];
    parallel_range(pool, channels * kvol, out_size, [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        const int64_t c = row / kvol, ki = (row % kvol) / KW, kj = row % KW;
        const S* xc = x + c * in_size;
        D* dst = col + row * out_size;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t ih = oh * sh - ph + ki * dh;
          D* d = dst + oh * OW;
          if (ih < 0 || ih >= H) {
            for (int64_t ow = 0; ow < OW; ++ow) d[ow] = D(0);
            continue;
          }
          const S* src = xc + ih * W;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t iw = ow * sw - pw + kj * dw;
            d[ow] = (iw >= 0 && iw < W) ? map(src[iw]) : D(0);
          }
        }
      }
    });
    return;
  }
  parallel_range(pool, channels * kvol, out_size * static_cast<int64_t>(r), [&](int64_t r0, int64_t r1) {
    Shape kidx = Shape::filled(r, 0), oidx = Shape::filled(r, 0);
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t c = row / kvol;
      int64_t rem = row % kvol;
      for (size_t d = r; d-- > 0;) {
        kidx[d] = rem % g.kernel[d];
        rem /= g.kernel[d];
      }
      const S* xc = x + c * in_size;
      D* dst = col + row * out_size;
      for (size_t d = 0; d < r; ++d) oidx[d] = 0;
      for (int64_t o = 0; o < out_size; ++o) {
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < r; ++d) {
          const int64_t i = oidx[d] * g.stride[d] - g.pad_begin[d] + kidx[d] * g.dilation[d];
          if (i < 0 || i >= in[d]) {
            inside = false;
            break;
          }
          off = off * in[d] + i;
        }
        dst[o] = inside ? map(xc[off]) : D(0);
        for (size_t d = r; d-- > 0;) {
          if (++oidx[d] < g.out[d]) break;
          oidx[d] = 0;
        }
      }
    }
  });
}

}  // namespace onyx::cpu
