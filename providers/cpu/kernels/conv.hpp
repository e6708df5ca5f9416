// The Conv kernel, shared with fusion-created kernels (Conv + activation).
#pragma once

#include <limits>
#include <vector>

#include "ep/kernel.hpp"
#include "kernels/common.hpp"
#include "kernels/gemm.hpp"
#include "kernels/vmath.hpp"
#include "ops/nn.hpp"

namespace onyx::cpu {

/// An epilogue's activation (Relu or Clip; none otherwise) on one vector, for kernels that apply
/// it outside the GEMM (a sum added after a depthwise convolution, the channels-last depthwise).
inline vmath::vf epilogue_activation(vmath::vf v, const GemmEpilogue& ep) {
  if (ep.act == GemmEpilogue::Act::kRelu) return vmath::vmax(v, vmath::vf{});
  if (ep.act == GemmEpilogue::Act::kClip) return vmath::vmin(vmath::vmax(v, vmath::splat(ep.lo)), vmath::splat(ep.hi));
  return v;
}

/// An epilogue's activation (none, Relu or Clip) as one clamp to [lo, hi], NaN passing through:
/// the channels-last depthwise and Winograd kernels' epilogue.
struct ActClamp {
  vmath::vf lo, hi;
  static ActClamp of(const GemmEpilogue& ep) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    if (ep.act == GemmEpilogue::Act::kRelu) return {vmath::vf{}, vmath::splat(kInf)};
    if (ep.act == GemmEpilogue::Act::kClip) return {vmath::splat(ep.lo), vmath::splat(ep.hi)};
    return {vmath::splat(-kInf), vmath::splat(kInf)};
  }
  vmath::vf operator()(vmath::vf v) const { return vmath::vmin(hi, vmath::vmax(lo, v)); }
};

class ConvKernel final : public Kernel {
 public:
  /// `act` is fused after the bias (kNone for a plain Conv); with_sum: input 3 is added before it
  /// (onyx::FusedConvAdd).
  ConvKernel(const KernelCreateInfo& info, GemmEpilogue::Act act, float lo, float hi, bool with_sum = false);
  void compute(KernelContext& ctx) const override;

 private:
  const Node& node_;
  WindowAttrs attrs_;  // read once: no attribute lookups on the run path
  bool with_sum_ = false;
  int64_t group_ = 1;
  GemmEpilogue act_;
  std::vector<PackedMatrix> packed_;  // per group, when the weights are constant float32
  PackedMatrix packed_t_;             // W^T as a B operand (empty unless packed): the transposed product
};

/// Depthwise 2-D convolution (one filter per channel, channel multiplier 1) of `images` NCHW
/// images with the vector lanes across 16 channels at a time (see depthwise.cpp); `ep` is the
/// bias-free epilogue activation. Kernels of more taps than depthwise2d_blocked_fits() allows
/// are refused.
bool depthwise2d_blocked_fits(const WindowGeometry& g);
void depthwise2d_blocked(const float* x, const float* w, const float* bias, float* y, int64_t images, int64_t channels,
                         const Shape& in, const WindowGeometry& g, const GemmEpilogue& ep, ThreadPool& pool);

/// dst[i] = src[i * stride], i < n; stride 2 (the common strided window) 16 at a time by a
/// two-vector shuffle instead of one element at a time.
void strided_copy(const float* src, int64_t stride, float* dst, int64_t n);

/// Rows [k0, k0 + kc) x output positions [p0, p0 + cols) of the 2-D im2col matrix of one image
/// and group (x: its channels' planes; in: H, W), in the GEMM's B panel layout: a BPacker's block,
/// built in cache (im2col.cpp).
void im2col_pack_b(const float* x, const Shape& in, const WindowGeometry& g, int64_t k0, int64_t kc, int64_t p0,
                   int64_t cols, float* dst);
/// Output positions [r0, r0 + rows) x im2col rows [k0, k0 + kc): the im2col matrix transposed,
/// in the A panel layout (an APacker's block, for the transposed product).
void im2col_pack_a(const float* x, const Shape& in, const WindowGeometry& g, int64_t r0, int64_t rows, int64_t k0,
                   int64_t kc, float* dst);

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
