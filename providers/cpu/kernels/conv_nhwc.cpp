// CPU kernels for the channels-last forms (domain onyx.nhwc, ops/layout.hpp) of 2-D float32
// convolutions and pools. Their data input and output are [N, H, W, C]:
// - a convolution (group 1) is one GEMM whose rows are output pixels and whose columns are output
//   channels; its A operand, the im2col matrix, is never written: the micro-kernel reads each
//   pixel's window in place from the (zero-padded) input through a gather (sgemm_a_gather), and
//   the output, bias, residual sum and activation are in the GEMM's own layout;
// - a depthwise convolution and a pool compute a vector of channels of an output pixel at once
//   (16 channels with AVX-512, 8 with AVX2).
// The layout pass gives the CPU EP these forms when it prefers channels-last (docs/optimizer.md).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/common.hpp"
#include "kernels/conv.hpp"
#include "kernels/conv_winograd.hpp"
#include "kernels/gemm.hpp"
#include "kernels/manifest.hpp"
#include "kernels/vmath.hpp"
#include "ops/layout.hpp"
#include "ops/nn.hpp"

namespace onyx::cpu {

namespace {

using vmath::kLanes;
using vmath::vf;

const TypeInfo* type_at(const std::vector<const TypeInfo*>& types, size_t i) {
  return i < types.size() ? types[i] : nullptr;
}

/// The 2-D data input these kernels are written for: rank 4 with its channel count known.
bool accepts_2d(const std::vector<const TypeInfo*>& in, Decline* why, const char* what) {
  const TypeInfo* x = type_at(in, 0);
  if (!x || !x->has_shape || x->shape.size() != 4)
    return decline(why, DeclineCode::kUnsupportedType,
                  str("channels-last ", what, " on the CPU is 2-D only (rank-4 input)"));
  if (x->shape[3] <= 0)
    return decline(why, DeclineCode::kDynamicShape, str("channels-last ", what, " needs its channel count"));
  return true;
}

/// Conv, FusedConv and FusedConvAdd forms: group 1 or depthwise (one filter per channel).
bool accepts_conv(const Node& node, const std::vector<const TypeInfo*>& in, Decline* why) {
  if (!accepts_2d(in, why, "Conv")) return false;
  const TypeInfo* w = type_at(in, 1);
  if (!w || !w->has_shape || w->shape.size() != 4 || w->shape[0] <= 0 || w->shape[1] <= 0)
    return decline(why, DeclineCode::kDynamicShape, "channels-last Conv on the CPU needs a 4-d weight of known shape");
  const int64_t group = node.attr_int("group", 1), C = in[0]->shape[3];
  if (group == 1 || (w->shape[1] == 1 && group == C && w->shape[0] == C)) return true;
  return decline(why, DeclineCode::kUnsupportedAttribute,
                str("channels-last Conv on the CPU: group 1 or depthwise only (group ", group, ")"));
}

bool accepts_pool(const Node& node, const std::vector<const TypeInfo*>& in, Decline* why) {
  return accepts_2d(in, why, node.op_type.c_str());
}

/// The input rows and columns a 2-D window geometry's windows span, from (-pad_top, -pad_left):
/// H x W. A zero-padded copy of the input is `needed` when they reach outside it; in the copy,
/// window (oh, ow) starts at row oh * stride_h and column ow * stride_w.
struct PaddedInput {
  int64_t H = 0, W = 0, top = 0, left = 0;
  bool needed = false;

  static PaddedInput of(const WindowGeometry& g, int64_t in_h, int64_t in_w) {
    PaddedInput p;
    p.H = (g.out[0] - 1) * g.stride[0] + (g.kernel[0] - 1) * g.dilation[0] + 1;
    p.W = (g.out[1] - 1) * g.stride[1] + (g.kernel[1] - 1) * g.dilation[1] + 1;
    p.top = g.pad_begin[0];
    p.left = g.pad_begin[1];
    p.needed = p.top > 0 || p.left > 0 || p.H > in_h || p.W > in_w;
    return p;
  }

  /// Writes the copy of N images [h, w, c] to dst ([N, H, W, c]).
  void copy(const float* src, int64_t n_images, int64_t h, int64_t w, int64_t c, float* dst, ThreadPool& pool) const {
    // Columns [lo, hi) of a padded row come from the input (column j is input column j - left).
    const int64_t lo = std::min(left, W), hi = std::clamp(w + left, lo, W);
    parallel_range(pool, n_images * H, W * c, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / H, ih = r % H - top;
        float* d = dst + r * W * c;
        if (ih < 0 || ih >= h) {
          std::fill(d, d + W * c, 0.0f);
          continue;
        }
        std::fill(d, d + lo * c, 0.0f);
        std::copy(src + ((n * h + ih) * w + lo - left) * c, src + ((n * h + ih) * w + hi - left) * c, d + lo * c);
        std::fill(d + hi * c, d + W * c, 0.0f);
      }
    });
  }
};

/// `lanes` (1..kLanes) floats at p: a whole vector when all lanes, else masked.
inline vf load_k(const float* p, int64_t lanes) { return lanes == kLanes ? vmath::load(p) : vmath::load_n(p, lanes); }
inline void store_k(float* p, vf v, int64_t lanes) {
  if (lanes == kLanes)
    vmath::store(p, v);
  else
    vmath::store_n(p, v, lanes);
}

struct DwGeometry {
  int64_t C, H, W, KH, KW, sh, sw, dh, dw, pt, pl;
};

/// R output pixels of one row, kLanes channels from c0, all of whose taps' columns are inside the
/// input (no per-pixel checks): each tap's weight vector serves the R accumulators.
/// With K3 the kernel is 3x3 (its loops unrolled).
template <int R, bool K3>
inline void dw_run(const DwGeometry& d, const float* xi, const float* wt, int64_t oh, int64_t ow0, int64_t c0, vf b,
                   vf (&out)[R]) {
  vf acc[R];
  for (int p = 0; p < R; ++p) acc[p] = b;
  const int64_t KH = K3 ? 3 : d.KH, KW = K3 ? 3 : d.KW;
  for (int64_t kh = 0; kh < KH; ++kh) {
    const int64_t ih = oh * d.sh - d.pt + kh * d.dh;
    if (ih < 0 || ih >= d.H) continue;
    const float* xrow = xi + ih * d.W * d.C + c0;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const vf wv = vmath::load(wt + (kh * KW + kw) * d.C + c0);
      const float* xs = xrow + (ow0 * d.sw - d.pl + kw * d.dw) * d.C;
      const int64_t step = d.sw * d.C;
      for (int p = 0; p < R; ++p) acc[p] += vmath::load(xs + p * step) * wv;
    }
  }
  for (int p = 0; p < R; ++p) out[p] = acc[p];
}

/// The 3 x 3, undilated form of dw_run at stride S, `lanes` channels (all kLanes when kFull): each
/// input vector of a row is loaded once and serves every output of the run whose window covers it
/// (3 of them at stride 1), so a run of R pixels loads 3 ((R - 1) S + 3) input vectors, not 9 R.
/// `row[kh]` is the input row under tap row kh at the run's first window column and the block's
/// first channel, or null when that row is in the padding; w: the block's taps.
template <int R, int S, bool kFull>
inline void dw3_run(const float* const (&row)[3], int64_t C, const vf (&w)[9], int64_t lanes, vf b, vf (&out)[R]) {
  constexpr int kCols = (R - 1) * S + 3;
  vf acc[R];
  for (int p = 0; p < R; ++p) acc[p] = b;
  for (int kh = 0; kh < 3; ++kh) {
    const float* x = row[kh];
    if (!x) continue;
#pragma GCC unroll 32
    for (int j = 0; j < kCols; ++j, x += C) {
      const vf v = kFull ? vmath::load(x) : load_k(x, lanes);
      // Column j is tap kw of output p where j = p S + kw.
      if (j % S == 0 && j / S < R) acc[j / S] += v * w[kh * 3];
      if (j >= 1 && (j - 1) % S == 0 && (j - 1) / S < R) acc[(j - 1) / S] += v * w[kh * 3 + 1];
      if (j >= 2 && (j - 2) % S == 0 && (j - 2) / S < R) acc[(j - 2) / S] += v * w[kh * 3 + 2];
    }
  }
  for (int p = 0; p < R; ++p) out[p] = acc[p];
}

/// A channel block's 9 taps and bias (zeros past `lanes`).
inline void dw3_block(const float* wt, const float* bias, int64_t C, int64_t c0, int64_t lanes, vf (&w)[9], vf& b) {
  for (int t = 0; t < 9; ++t) w[t] = load_k(wt + t * C + c0, lanes);
  b = bias ? load_k(bias + c0, lanes) : vf{};
}

/// Output rows [oh0, oh1) of one image for a 3 x 3 undilated kernel at stride S (the columns
/// [lo, hi) are those whose windows are inside the input's columns), in bands of rows whose input rows fit
/// in half of a 512 KiB L2 (every channel block of a band reads them; the whole plane, on a
/// 112 x 112 x 96 layer 4.8 MB, would be streamed from memory once per block); within a band
/// channel block by channel block, and within a block strip by strip of R = 8, 7, 4, 2, 1
/// columns, down the band's rows, then the band's edge columns. A strip's input rows stay in L1
/// for the 3 output rows that read them, and the block's taps in registers. xi, y, sum: the
/// image's input, output and sum (or null).
template <int S>
void dw3_strips(const DwGeometry& d, const float* xi, const float* wt, const float* bias, const float* sum, float* y,
                int64_t OW, int64_t oh0, int64_t oh1, int64_t lo, int64_t hi, ActClamp act) {
  const int64_t C = d.C;
  constexpr int64_t kBandFloats = 32 * 1024;
  const int64_t fit_rows = std::max<int64_t>(3, kBandFloats / std::max<int64_t>(1, d.W * C));
  const int64_t band = (fit_rows - 3) / S + 1;
  for (int64_t b0 = oh0; b0 < oh1; b0 += band) {
    const int64_t b1 = std::min(oh1, b0 + band);
    for (int64_t c0 = 0; c0 < C; c0 += kLanes) {
      const int64_t lanes = std::min<int64_t>(kLanes, C - c0);
      vf w[9], b;
      dw3_block(wt, bias, C, c0, lanes, w, b);
      auto strips = [&]<int R, bool kFull>(int64_t ow) {
        for (; ow + R <= hi; ow += R) {
          const int64_t xo = (ow * S - d.pl) * C + c0;
          for (int64_t oh = b0; oh < b1; ++oh) {
            const float* rc[3];
            for (int kh = 0; kh < 3; ++kh) {
              const int64_t ih = oh * d.sh - d.pt + kh;
              rc[kh] = ih >= 0 && ih < d.H ? xi + ih * d.W * C + xo : nullptr;
            }
            vf out[R];
            dw3_run<R, S, kFull>(rc, C, w, lanes, b, out);
            const int64_t at = (oh * OW + ow) * C + c0;
            for (int p = 0; p < R; ++p) {
              vf v = out[p];
              if (sum) v += kFull ? vmath::load(sum + at + p * C) : load_k(sum + at + p * C, lanes);
              if constexpr (kFull)
                vmath::store(y + at + p * C, act(v));
              else
                store_k(y + at + p * C, act(v), lanes);
            }
          }
        }
        return ow;
      };
      auto all = [&]<bool kFull>() {
        int64_t ow = lo;
        ow = strips.template operator()<8, kFull>(ow);
        ow = strips.template operator()<7, kFull>(ow);
        ow = strips.template operator()<4, kFull>(ow);
        ow = strips.template operator()<2, kFull>(ow);
        strips.template operator()<1, kFull>(ow);
      };
      if (lanes == kLanes)
        all.template operator()<true>();
      else
        all.template operator()<false>();
      // The edge columns [0, lo) and [hi, OW), whose windows reach into the padding: only the
      // taps inside the input, with the block's taps still in registers.
      for (int64_t oh = b0; oh < b1; ++oh) {
        const float* rows[3];
        for (int kh = 0; kh < 3; ++kh) {
          const int64_t ih = oh * d.sh - d.pt + kh;
          rows[kh] = ih >= 0 && ih < d.H ? xi + ih * d.W * C + c0 : nullptr;
        }
        auto edge = [&](int64_t ow) {
          const int64_t iw0 = ow * S - d.pl;
          const int kw0 = static_cast<int>(std::max<int64_t>(0, -iw0)),
                    kw1 = static_cast<int>(std::clamp<int64_t>(d.W - iw0, 0, 3));
          vf acc = b;
          for (int kh = 0; kh < 3; ++kh) {
            if (!rows[kh]) continue;
            for (int kw = kw0; kw < kw1; ++kw) acc += load_k(rows[kh] + (iw0 + kw) * C, lanes) * w[kh * 3 + kw];
          }
          const int64_t at = (oh * OW + ow) * C + c0;
          if (sum) acc += load_k(sum + at, lanes);
          store_k(y + at, act(acc), lanes);
        };
        for (int64_t ow = 0; ow < lo; ++ow) edge(ow);
        for (int64_t ow = hi; ow < OW; ++ow) edge(ow);
      }
    }
  }
}

/// One output pixel, `lanes` channels from c0, taps checked against the input's bounds.
inline vf dw_pixel(const DwGeometry& d, const float* xi, const float* wt, int64_t oh, int64_t ow, int64_t c0,
                   int64_t lanes, vf b) {
  vf acc = b;
  for (int64_t kh = 0; kh < d.KH; ++kh) {
    const int64_t ih = oh * d.sh - d.pt + kh * d.dh;
    if (ih < 0 || ih >= d.H) continue;
    for (int64_t kw = 0; kw < d.KW; ++kw) {
      const int64_t iw = ow * d.sw - d.pl + kw * d.dw;
      if (iw < 0 || iw >= d.W) continue;
      acc += load_k(xi + (ih * d.W + iw) * d.C + c0, lanes) * load_k(wt + (kh * d.KW + kw) * d.C + c0, lanes);
    }
  }
  return acc;
}

/// Depthwise 2-D convolution, channels-last: taps wt[(kh KW + kw) C + c]. Each task takes output
/// rows. A 3 x 3 undilated kernel at stride 1 or 2 computes them in sliding strips and edge
/// columns (dw3_strips); other kernels go along each row in runs of interior pixels (8, 7, 4, 2, 1)
/// that take every block of kLanes channels in turn, each tap's weight vector serving the run's
/// accumulators, and compute the pixels whose windows reach into the padding one at a time.
void depthwise_nhwc(const float* x, const float* wt, const float* bias, const float* sum, float* y, int64_t N, int64_t C,
                    int64_t H, int64_t W, const WindowGeometry& g, const GemmEpilogue& ep, ThreadPool& pool) {
  DwGeometry d{C, H, W, g.kernel[0], g.kernel[1], g.stride[0], g.stride[1], g.dilation[0], g.dilation[1],
               g.pad_begin[0], g.pad_begin[1]};
  const int64_t OH = g.out[0], OW = g.out[1];
  // Narrow stride-1 planes (7 x 7: two of every seven pixels at an edge) are computed from a
  // zero-padded copy, so that every pixel is interior; the copy costs more than it saves on wider
  // planes, and on strided ones (whose input is 4x their output).
  const PaddedInput pad = PaddedInput::of(g, H, W);
  if (OW <= 8 && d.sh == 1 && d.sw == 1 && pad.needed && N * pad.H * pad.W * C <= (int64_t{1} << 18)) {
    float* xp = reinterpret_cast<float*>(thread_workspace(Workspace::kConv, static_cast<size_t>(N * pad.H * pad.W * C) * sizeof(float)));
    pad.copy(x, N, H, W, C, xp, pool);
    x = xp;
    d.H = pad.H;
    d.W = pad.W;
    d.pt = d.pl = 0;
  }
  constexpr int kRun = 8;
  const bool k3x3 = d.KH == 3 && d.KW == 3;
  // 3 x 3 at stride 1 or 2 without dilation (MobileNet's): sliding-window strips (dw3_strips).
  const bool slide = k3x3 && d.dh == 1 && d.dw == 1 && (d.sw == 1 || d.sw == 2);
  // Output columns whose taps all fall inside the input: [lo, hi).
  const int64_t lo = std::min(OW, (d.pl + d.sw - 1) / d.sw);
  const int64_t span = (d.KW - 1) * d.dw;  // ow sw - pl + span < W
  const int64_t hi = std::clamp<int64_t>(d.W - span + d.pl > 0 ? (d.W - span + d.pl - 1) / d.sw + 1 : 0, lo, OW);
  const ActClamp clamp = ActClamp::of(ep);
  parallel_range(pool, N * OH, OW * C * d.KH * d.KW, [&](int64_t r0, int64_t r1) {
    if (slide) {
      // The interiors, image by image: channel blocks outer, strips down the task's rows.
      for (int64_t r = r0; r < r1;) {
        const int64_t n = r / OH, oh0 = r % OH, oh1 = std::min(OH, oh0 + (r1 - r));
        const float* xi = x + n * d.H * d.W * C;
        float* yi = y + n * OH * OW * C;
        const float* si = sum ? sum + n * OH * OW * C : nullptr;
        if (d.sw == 1)
          dw3_strips<1>(d, xi, wt, bias, si, yi, OW, oh0, oh1, lo, hi, clamp);
        else
          dw3_strips<2>(d, xi, wt, bias, si, yi, OW, oh0, oh1, lo, hi, clamp);
        r += oh1 - oh0;
      }
    }
    for (int64_t r = slide ? r1 : r0; r < r1; ++r) {  // (sliding strips did every column)
      const int64_t n = r / OH, oh = r % OH;
      const float* xi = x + n * d.H * d.W * C;
      float* yr = y + r * OW * C;
      const float* sr = sum ? sum + r * OW * C : nullptr;
      auto put = [&](int64_t ow, int64_t c0, int64_t lanes, vf v) {
        const int64_t at = ow * C + c0;
        if (sr) v += load_k(sr + at, lanes);
        store_k(yr + at, clamp(v), lanes);
      };
      // Pixel by pixel across the row, all channels of each before the next (a run of pixels
      // takes every block of kLanes channels in turn): the input rows and the output row are each
      // read or written once, in order, where block by block along the row they were walked
      // C / kLanes times in vector-sized pieces a pixel apart.
      auto edge = [&](int64_t ow) {
        for (int64_t c0 = 0; c0 < C; c0 += kLanes) {
          const int64_t lanes = std::min<int64_t>(kLanes, C - c0);
          const vf b = bias ? load_k(bias + c0, lanes) : vf{};
          put(ow, c0, lanes, dw_pixel(d, xi, wt, oh, ow, c0, lanes, b));
        }
      };
      auto runs = [&]<int R>(int64_t ow) {
        for (; ow + R <= hi; ow += R) {
          int64_t c0 = 0;
          for (; c0 + kLanes <= C; c0 += kLanes) {
            const vf b = bias ? vmath::load(bias + c0) : vf{};
            vf out[R];
            if (k3x3)
              dw_run<R, true>(d, xi, wt, oh, ow, c0, b, out);
            else
              dw_run<R, false>(d, xi, wt, oh, ow, c0, b, out);
            for (int p = 0; p < R; ++p) put(ow + p, c0, kLanes, out[p]);
          }
          if (c0 < C) {
            const int64_t lanes = C - c0;
            const vf b = bias ? load_k(bias + c0, lanes) : vf{};
            for (int p = 0; p < R; ++p) put(ow + p, c0, lanes, dw_pixel(d, xi, wt, oh, ow + p, c0, lanes, b));
          }
        }
        return ow;
      };
      int64_t ow = 0;
      for (; ow < lo; ++ow) edge(ow);
      ow = runs.template operator()<kRun>(ow);
      ow = runs.template operator()<7>(ow);  // a 7 x 7 plane's rows in one run
      ow = runs.template operator()<4>(ow);
      ow = runs.template operator()<2>(ow);
      ow = runs.template operator()<1>(ow);
      for (; ow < OW; ++ow) edge(ow);
    }
  });
}

class ConvNhwcKernel final : public Kernel {
 public:
  /// FusedConvAdd's sum may be the output's buffer: each output element is written once, after
  /// its own sum element is read (the depthwise kernel), or the product accumulates onto it.
  int inplace_input(size_t out) const override { return out == 0 && with_sum_ ? 3 : -1; }

  ConvNhwcKernel(const KernelCreateInfo& info, GemmEpilogue::Act act, float lo, float hi, bool with_sum)
      : node_(info.node), attrs_(WindowAttrs::of(info.node, false)), with_sum_(with_sum) {
    group_ = info.node.attr_int("group", 1);
    if (group_ <= 0) fail(ErrorCode::kInvalidGraph, info.node.label(), ": group must be positive, got ", group_);
    act_.act = act;
    act_.lo = lo;
    act_.hi = hi;
    if (const Tensor* w = info.constant(1); w && w->dtype() == DType::kFloat && w->rank() == 4) {
      // Weights for Winograd need no direct form: the attributes fix the geometry it takes.
      if (winograd_fits(*w))
        wino_ = winograd_weights(w->data<float>(), w->dim(0), w->dim(1), winograd_tile(info, *w));
      else
        prepare(*w, &packed_, &taps_);
    }
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.optional_input(2);
    const Tensor* z = with_sum_ ? &ctx.input(3) : nullptr;
    Tensor& y = ctx.output(0);
    if (x.rank() != 4 || w.rank() != 4)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": channels-last Conv needs a 4-d input and weight, got ",
           x.shape().to_string(), " and ", w.shape().to_string());
    const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3), M = w.dim(0);
    if (w.dim(1) * group_ != C || M % group_ != 0 || (group_ != 1 && (group_ != C || M != C)))
      fail(ErrorCode::kInvalidArgument, node_.label(), ": input channels ", C, " and weight ", w.shape().to_string(),
           " do not fit group ", group_);
    if (b && b->numel() != M)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": bias has ", b->numel(), " values for ", M,
           " output channels");
    if (z && (z->dtype() != DType::kFloat || !(z->shape() == y.shape())))
      fail(ErrorCode::kInvalidArgument, node_.label(), ": the sum input is ", dtype_name(z->dtype()),
           z->shape().to_string(), ", the output float", y.shape().to_string());
    const int64_t KH = w.dim(2), KW = w.dim(3);
    const WindowGeometry g = window_geometry(attrs_, node_, Shape{H, W}, Shape{KH, KW});
    if (y.numel() == 0) return;
    const float* pb = b ? b->data<float>() : nullptr;
    const float* ps = z ? z->data<float>() : nullptr;
    // The sum in the output's buffer (inplace_input): the product is added to it.
    const bool in_place = ps && ps == y.data<float>();
    if (x.data<float>() == y.data<float>() || w.data<float>() == y.data<float>())
      fail(ErrorCode::kRuntime, node_.label(), ": the output shares a buffer with the input or the weights");
    // 3x3 at stride 1 with transformed weights: Winograd F(R x R, 3x3) (conv_winograd.hpp).
    if (!wino_.empty() && wino_.C == C && wino_.M == M && g.stride[0] == 1 && g.stride[1] == 1 &&
        g.dilation[0] == 1 && g.dilation[1] == 1) {
      winograd_conv(wino_, x.data<float>(), N, H, W, g.pad_begin[0], g.pad_begin[1], g.out[0], g.out[1], pb, ps, act_,
                    y.data<float>(), ctx.pool());
      return;
    }
    const bool depthwise = group_ != 1;
    PackedMatrix packed_now;
    std::vector<float> taps_now;
    if (depthwise ? taps_.empty() : packed_.rows() == 0) prepare(w, &packed_now, &taps_now);
    if (depthwise) {
      const float* wt = taps_.empty() ? taps_now.data() : taps_.data();
      depthwise_nhwc(x.data<float>(), wt, pb, ps, y.data<float>(), N, C, H, W, g, act_, ctx.pool());
      return;
    }
    const PackedMatrix& wb = packed_.rows() ? packed_ : packed_now;
    const int64_t OH = g.out[0], OW = g.out[1], sh = g.stride[0], sw = g.stride[1], dh = g.dilation[0], dw = g.dilation[1];
    const PaddedInput pad = PaddedInput::of(g, H, W);
    const int64_t Hp = pad.needed ? pad.H : H, Wp = pad.needed ? pad.W : W, k = KH * KW * C;
    // Images in groups whose padded copy (and pixel offsets) stay within ~64 MiB of workspace.
    const int64_t per_image = (pad.needed ? Hp * Wp * C : 0) + 2 * OH * OW;  // floats (offsets: 2 each)
    const int64_t chunk = std::clamp<int64_t>((int64_t{1} << 24) / std::max<int64_t>(1, per_image), 1, N);
    const int64_t pixels = OH * OW;
    Carver sizes;
    sizes.take<int64_t>(chunk * pixels);
    sizes.take<int64_t>(k);
    if (pad.needed) sizes.take<float>(chunk * Hp * Wp * C);
    Carver carve{thread_workspace(Workspace::kConv, sizes.off)};
    int64_t* row_off = carve.take<int64_t>(chunk * pixels);
    int64_t* koff = carve.take<int64_t>(k);
    float* xp = pad.needed ? carve.take<float>(chunk * Hp * Wp * C) : nullptr;
    for (int64_t t = 0, kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw)
        for (int64_t c = 0; c < C; ++c) koff[t++] = (kh * dh * Wp + kw * dw) * C + c;
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t images = std::min(chunk, N - n0);
      const float* base = x.data<float>() + n0 * H * W * C;
      if (pad.needed) {
        pad.copy(base, images, H, W, C, xp, ctx.pool());
        base = xp;
      }
      for (int64_t i = 0, n = 0; n < images; ++n)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) row_off[i++] = ((n * Hp + oh * sh) * Wp + ow * sw) * C;
      GemmEpilogue ep = act_;
      ep.bias = pb;
      ep.sum = ps && !in_place ? ps + n0 * pixels * M : nullptr;
      const bool any = pb || ep.sum || ep.act != GemmEpilogue::Act::kNone;
      // A 1x1 window at stride 1 over an unpadded input: A is the input itself, [pixels, C].
      const bool plain = KH == 1 && KW == 1 && sh == 1 && sw == 1 && !pad.needed;
      sgemm_a_gather(AGather{base, row_off, koff, plain ? C : 0}, &wb, images * pixels, M, k, y.data<float>() + n0 * pixels * M, M,
                     &ctx.pool(), any ? &ep : nullptr, in_place);
    }
  }

 private:
  /// The weights in the kernel's layout: for group 1, B[(kh KW + kw) C + c][m] packed; for a
  /// depthwise convolution, taps[(kh KW + kw) C + c].
  void prepare(const Tensor& w, PackedMatrix* packed, std::vector<float>* taps) const {
    const int64_t M = w.dim(0), Cg = w.dim(1), KH = w.dim(2), KW = w.dim(3), T = KH * KW;
    const float* pw = w.data<float>();
    if (group_ != 1) {
      taps->assign(static_cast<size_t>(T * M), 0.0f);
      for (int64_t c = 0; c < M; ++c)
        for (int64_t t = 0; t < T; ++t) (*taps)[static_cast<size_t>(t * M + c)] = pw[c * T + t];
      return;
    }
    std::vector<float> b(static_cast<size_t>(T * Cg * M));
    for (int64_t mm = 0; mm < M; ++mm)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t t = 0; t < T; ++t) b[static_cast<size_t>((t * Cg + c) * M + mm)] = pw[(mm * Cg + c) * T + t];
    *packed = pack_b(false, T * Cg, M, b.data(), M, 1.0f, gather_k_block(T * Cg));
  }

  /// Whether constant weights w are worth transforming for Winograd F(R x R, 3x3): 3x3, group 1,
  /// stride 1 and no dilation in the attributes (the run checks the geometry again), and enough
  /// channels in and out for the GEMMs to dominate the transforms.
  bool winograd_fits(const Tensor& w) const {
    auto ones = [](const Shape& s) { return std::all_of(s.begin(), s.end(), [](int64_t v) { return v == 1; }); };
    return group_ == 1 && w.dim(2) == 3 && w.dim(3) == 3 && w.dim(0) >= 16 && w.dim(1) >= 16 && ones(attrs_.strides) &&
           ones(attrs_.dilations);
  }

  /// The output tile of the Winograd form: 4 x 4 (F(4x4, 3x3): 36 multiplications per 16
  /// outputs and channel, where F(2x2) takes 64) on planes of at least 14 x 14 (known from the
  /// inferred input shape) over at most 256 channels in and out; 2 x 2 otherwise. On ResNet-50's
  /// layers F(4x4) took 0.59-0.68 of F(2x2)'s time on 56 x 56 and 28 x 28, 0.88-0.92 on 14 x 14,
  /// and 1.04 on 7 x 7 over 512 channels, whose 36 weight matrices (36 MB) each 4-tile block
  /// reads.
  static int winograd_tile(const KernelCreateInfo& info, const Tensor& w) {
    const TypeInfo* x = type_at(info.input_types, 0);
    const bool big = x && x->has_shape && x->shape.size() == 4 && x->shape[1] >= 14 && x->shape[2] >= 14;
    return big && w.dim(0) <= 256 && w.dim(1) <= 256 ? 4 : 2;
  }

  const Node& node_;
  WindowAttrs attrs_;
  bool with_sum_ = false;
  int64_t group_ = 1;
  GemmEpilogue act_;
  PackedMatrix packed_;      // group 1, constant weights
  std::vector<float> taps_;  // depthwise, constant weights
  WinogradWeights wino_;     // 3x3 at stride 1 (winograd_fits), constant weights
};

std::unique_ptr<Kernel> make_conv_nhwc(const KernelCreateInfo& info) {
  const Node& n = info.node;
  if (n.op_type == "Conv") return std::make_unique<ConvNhwcKernel>(info, GemmEpilogue::Act::kNone, 0.0f, 0.0f, false);
  const GemmEpilogue ep = fused_epilogue(n, false);
  if (n.op_type == "FusedConvAdd" && (n.inputs.size() != 4 || n.inputs[3] < 0))
    fail(ErrorCode::kInvalidGraph, n.label(), ": FusedConvAdd needs its sum as input 3");
  return std::make_unique<ConvNhwcKernel>(info, ep.act, ep.lo, ep.hi, n.op_type == "FusedConvAdd");
}

// ---- pools ----

struct PoolNhwc {
  enum class Kind : uint8_t { kMax, kAvg } kind = Kind::kMax;
  bool global = false, count_include_pad = false;
  WindowAttrs attrs;
  Shape kernel_shape;
};

/// Max keeps a NaN it meets (as the channels-first pools do).

void pool_nhwc(const PoolNhwc& st, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (x.rank() != 4)
    fail(ErrorCode::kInvalidArgument, ctx.node().label(), ": channels-last pooling needs a 4-d input, got ",
         x.shape().to_string());
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  WindowGeometry g;
  if (st.global) {
    g.kernel = Shape{H, W};
    g.out = Shape{1, 1};
    g.stride = g.dilation = Shape{1, 1};
    g.pad_begin = g.pad_end = Shape{0, 0};
  } else {
    g = window_geometry(st.attrs, ctx.node(), Shape{H, W}, st.kernel_shape);
  }
  if (y.numel() == 0) return;
  const int64_t KH = g.kernel[0], KW = g.kernel[1], OH = g.out[0], OW = g.out[1];
  const int64_t sh = g.stride[0], sw = g.stride[1], dh = g.dilation[0], dw = g.dilation[1];
  const int64_t pt = g.pad_begin[0], pl = g.pad_begin[1], pe_h = g.pad_end[0], pe_w = g.pad_end[1];
  const bool is_max = st.kind == PoolNhwc::Kind::kMax;
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_range(ctx.pool(), N * OH, work_of({OW, C, KH, KW}), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / OH, oh = r % OH;
      const float* xi = px + n * H * W * C;
      // Taps inside the input, and (count_include_pad) inside input plus pads, along the rows.
      // (only the taps that land in the input are visited: a kernel may be far larger)
      const TapRange rows = tap_range(oh * sh - pt, dh, KH, 0, H);
      const int64_t rows_in = rows.size();
      const int64_t rows_pad = tap_range(oh * sh - pt, dh, KH, -static_cast<__int128>(pt), static_cast<__int128>(H) + pe_h).size();
      for (int64_t ow = 0; ow < OW; ++ow) {
        const TapRange cols = tap_range(ow * sw - pl, dw, KW, 0, W);
        const int64_t cols_in = cols.size();
        const int64_t cols_pad = tap_range(ow * sw - pl, dw, KW, -static_cast<__int128>(pl), static_cast<__int128>(W) + pe_w).size();
        const int64_t count = st.count_include_pad ? rows_pad * cols_pad : rows_in * cols_in;
        const float scale = count > 0 ? 1.0f / static_cast<float>(count) : 0.0f;
        float* yo = py + (r * OW + ow) * C;
        // A vector of channels at a time, its taps in turn; max or
        // sum fixed at compile time (on AVX2 the 16-float form's NaN-aware maximum was compiled
        // element by element: ResNet-50's MaxPool took 7.4 ms).
        auto channels = [&]<bool kMax>() {
          for (int64_t c0 = 0; c0 < C; c0 += kLanes) {
            const int64_t lanes = std::min<int64_t>(kLanes, C - c0);
            vf acc = kMax ? vf{} - INFINITY : vf{};
            for (int64_t kh = rows.begin; kh < rows.end; ++kh) {
              const int64_t ih = oh * sh - pt + kh * dh;
              for (int64_t kw = cols.begin; kw < cols.end; ++kw) {
                const int64_t iw = ow * sw - pl + kw * dw;
                const vf a = load_k(xi + (ih * W + iw) * C + c0, lanes);
                if constexpr (kMax)
                  acc = vmath::max_nan(acc, a);
                else
                  acc += a;
              }
            }
            if constexpr (!kMax) acc *= scale;
            store_k(yo + c0, acc, lanes);
          }
        };
        if (is_max)
          channels.template operator()<true>();
        else
          channels.template operator()<false>();
      }
    }
  });
}

std::unique_ptr<Kernel> make_pool_nhwc(const KernelCreateInfo& info) {
  const std::string& op = info.node.op_type;
  PoolNhwc st;
  st.global = op.rfind("Global", 0) == 0;
  st.kind = op.find("Max") != std::string::npos ? PoolNhwc::Kind::kMax : PoolNhwc::Kind::kAvg;
  st.count_include_pad = info.node.attr_int("count_include_pad", 0) != 0;
  st.attrs = WindowAttrs::of(info.node, true);
  st.kernel_shape = Shape(info.node.attr_ints("kernel_shape"));
  return make_fn_kernel(st, pool_nhwc);
}

using namespace types;

constexpr const char* kNhwc = "onyx.nhwc";
static_assert(std::string_view(kNhwc) == kChannelsLastDomain);

// The forms keep the opset of the op they stand for (checked by its schema): any here.
const KernelDef kDefs[] = {
    {kNhwc, "Conv", 1, 99, {{0, kFloat}}, make_conv_nhwc, accepts_conv},
    {kNhwc, "FusedConv", 1, 1, {{0, kFloat}}, make_conv_nhwc, accepts_conv},
    {kNhwc, "FusedConvAdd", 1, 1, {{0, kFloat}}, make_conv_nhwc, accepts_conv},
    {kNhwc, "MaxPool", 1, 99, {{0, kFloat}}, make_pool_nhwc, accepts_pool},
    {kNhwc, "AveragePool", 1, 99, {{0, kFloat}}, make_pool_nhwc, accepts_pool},
    {kNhwc, "GlobalAveragePool", 1, 99, {{0, kFloat}}, make_pool_nhwc, accepts_pool},
    {kNhwc, "GlobalMaxPool", 1, 99, {{0, kFloat}}, make_pool_nhwc, accepts_pool},
};

}  // namespace

std::span<const KernelDef> conv_nhwc_kernels() { return kDefs; }

}  // namespace onyx::cpu
