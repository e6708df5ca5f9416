// CPU kernels: Conv and ConvTranspose. float32 goes through im2col (or directly, for 1x1) and the
// packed SGEMM with weights packed at session creation and bias fused into the GEMM epilogue;
// depthwise 2-D convolutions use a direct kernel (depthwise.cpp); other types a direct reference loop.
#include <cmath>
#include <cstdlib>

#include "kernels/common.hpp"
#include "kernels/conv.hpp"
#include "kernels/gemm.hpp"
#include "kernels/manifest.hpp"
#include "kernels/vmath.hpp"
#include "ops/nn.hpp"

namespace onyx::cpu {

float* conv_scratch(size_t floats) {
  return reinterpret_cast<float*>(thread_workspace(Workspace::kConv, floats * sizeof(float)));
}

namespace {

Shape spatial_of(const Shape& s) { return Shape(std::span<const int64_t>(s.data() + 2, s.size() - 2)); }

/// Direct depthwise 2-D convolution (one input channel per output channel), the general loop:
/// kernels with more taps than depthwise2d_blocked() keeps weight vectors for.
void depthwise2d_loop(const float* x, const float* w, const float* bias, float* y, int64_t planes, int64_t channels,
                      const Shape& in, const WindowGeometry& g, const GemmEpilogue& ep, ThreadPool& pool) {
  const int64_t H = in[0], W = in[1], KH = g.kernel[0], KW = g.kernel[1], OH = g.out[0], OW = g.out[1];
  const int64_t sh = g.stride[0], sw = g.stride[1], dh = g.dilation[0], dw = g.dilation[1];
  const int64_t ph = g.pad_begin[0], pw = g.pad_begin[1];
  parallel_range(pool, planes, work_of({OH, OW, KH, KW}), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t c = p % channels;
      const float* xp = x + p * H * W;
      const float* wc = w + c * KH * KW;
      float* yp = y + p * OH * OW;
      const float b = bias ? bias[c] : 0.0f;
      for (int64_t oh = 0; oh < OH; ++oh) {
        float* yr = yp + oh * OW;
        for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = b;
        for (int64_t ki = 0; ki < KH; ++ki) {
          const int64_t ih = oh * sh - ph + ki * dh;
          if (ih < 0 || ih >= H) continue;
          const float* xr = xp + ih * W;
          for (int64_t kj = 0; kj < KW; ++kj) {
            const float wv = wc[ki * KW + kj];
            const int64_t off = kj * dw - pw;
            // ow range with 0 <= ow*sw + off < W.
            const int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
            const int64_t hi = std::min<int64_t>(OW, W - off > 0 ? (W - off + sw - 1) / sw : 0);
            for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xr[ow * sw + off];
          }
        }
        if (ep.act == GemmEpilogue::Act::kRelu)
          for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = std::max(yr[ow], 0.0f);
        else if (ep.act == GemmEpilogue::Act::kClip)
          for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = std::min(std::max(yr[ow], ep.lo), ep.hi);
      }
    }
  });
}

}  // namespace

namespace {

/// y = act(y + z) over n floats (a sum input the convolution could not take in its epilogue).
void add_and_activate(float* y, const float* z, int64_t n, const GemmEpilogue& ep) {
  using namespace vmath;
  int64_t i = 0;
  auto f = [&](vf v) { return epilogue_activation(v, ep); };
  for (; i + kLanes <= n; i += kLanes) store(y + i, f(load(y + i) + load(z + i)));
  if (i < n) store_n(y + i, f(load_n(y + i, n - i) + load_n(z + i, n - i)), n - i);
}

/// Output channels (per group) up to which a pointwise convolution reads its input in place as
/// the GEMM's B instead of packing it: two row tiles of the micro-kernel.
constexpr int64_t kFewRows = 2 * kPanelRows;

/// Whether a 2-D convolution is computed as an implicit GEMM over its zero-padded input (see
/// conv2d_shifted): a stride no longer than the dilated kernel (else some phase planes would go
/// unread), and the columns it computes and drops per row at most an eighth of those it keeps.
/// The phase planes' copy of the input is kept within 64 MiB (a thread's workspace keeps it).
bool shifted_gemm_fits(const WindowGeometry& g, int64_t channels) {
  if (g.out.size() != 2 || g.out[0] <= 0 || g.out[1] <= 0) return false;
  for (size_t d = 0; d < 2; ++d)
    if (g.stride[d] > (g.kernel[d] - 1) * g.dilation[d] + 1) return false;
  const int64_t extra = (g.kernel[1] - 1) * g.dilation[1] / g.stride[1];
  const int64_t Hq = g.out[0] + (g.kernel[0] - 1) * g.dilation[0] / g.stride[0], Wq = g.out[1] + extra;
  const double floats = static_cast<double>(channels) * static_cast<double>(g.stride[0] * g.stride[1]) * static_cast<double>(Hq * Wq);
  return extra * 8 <= g.out[1] + extra && floats <= static_cast<double>(int64_t{1} << 24);
}

/// A 2-D convolution of one image and group as an implicit GEMM. The zero-padded input is split
/// once into sh x sw phase planes per channel (phase (a, b) holds padded pixels (r sh + a, q sw + b)
/// at (r, q); with stride 1, the padded plane itself), Hq x Wq each. Tap (c, ki, kj) of output
/// (oh, ow) is then pixel (oh + ki dh / sh, ow + kj dw / sw) of phase (ki dh % sh, kj dw % sw) of
/// channel c: with positions numbered along the phase planes' rows (oh Wq + ow), the im2col matrix
/// is a shifted view of the planes (B of sgemm_b_shifted, no im2col copy). The columns at
/// ow >= OW are computed into the padded result and dropped when it is copied into Y (with the
/// sum input and the activation, when there is a sum).
void conv2d_shifted(const PackedMatrix& wa, const float* x, int64_t channels, const Shape& in, const WindowGeometry& g,
                    float* y, int64_t m, const GemmEpilogue* ep, ThreadPool& pool) {
  const int64_t H = in[0], W = in[1], KH = g.kernel[0], KW = g.kernel[1], dh = g.dilation[0], dw = g.dilation[1];
  const int64_t sh = g.stride[0], sw = g.stride[1];
  const int64_t OH = g.out[0], OW = g.out[1], pt = g.pad_begin[0], pl = g.pad_begin[1];
  const int64_t Hq = OH + (KH - 1) * dh / sh, Wq = OW + (KW - 1) * dw / sw, plane = Hq * Wq, phases = sh * sw;
  const int64_t k = channels * KH * KW;
  // Bands of output rows, so that the padded result (m x band positions) stays within 512 KiB:
  // still in L2 when it is copied into Y.
  const int64_t band = std::clamp<int64_t>((int64_t{1} << 17) / std::max<int64_t>(1, m * Wq), 1, OH);
  const int64_t cols = (band - 1) * Wq + OW;  // positions of a band
  Carver sizes;
  sizes.take<int64_t>(k);
  // Reads reach one panel (kPanelCols floats) past the last plane: see sgemm_b_shifted.
  sizes.take<float>(channels * phases * plane + kPanelCols);
  sizes.take<float>(m * cols);
  Carver carve{thread_workspace(Workspace::kConv, sizes.off)};
  int64_t* koff = carve.take<int64_t>(k);
  float* xp = carve.take<float>(channels * phases * plane + kPanelCols);
  float* cp = carve.take<float>(m * cols);
  for (int64_t c = 0, t = 0; c < channels; ++c)
    for (int64_t ki = 0; ki < KH; ++ki)
      for (int64_t kj = 0; kj < KW; ++kj) {
        const int64_t phase = (ki * dh % sh) * sw + kj * dw % sw;
        koff[t++] = (c * phases + phase) * plane + (ki * dh / sh) * Wq + kj * dw / sw;
      }
  parallel_range(pool, channels * phases, plane, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t c = p / phases, a = p % phases / sw, b = p % sw;
      float* d = xp + p * plane;
      const float* s = x + c * H * W;
      // Columns q of the phase with input column q sw + b - pl in [0, W): [lo, hi).
      auto first_at_least = [&](int64_t v) { return v <= 0 ? 0 : (v + sw - 1) / sw; };
      const int64_t lo = std::min(Wq, first_at_least(pl - b)), hi = std::clamp(first_at_least(W + pl - b), lo, Wq);
      for (int64_t r = 0; r < Hq; ++r, d += Wq) {
        const int64_t ih = r * sh + a - pt;
        if (ih < 0 || ih >= H) {
          std::fill(d, d + Wq, 0.0f);
          continue;
        }
        std::fill(d, d + lo, 0.0f);
        if (hi > lo) strided_copy(s + ih * W + lo * sw + b - pl, sw, d + lo, hi - lo);
        std::fill(d + hi, d + Wq, 0.0f);
      }
    }
  });
  std::fill(xp + channels * phases * plane, xp + channels * phases * plane + kPanelCols, 0.0f);
  // The GEMM applies the bias and the activation, unless a sum has to come before the activation.
  GemmEpilogue gep;
  if (ep) {
    gep = *ep;
    gep.sum = nullptr;
    if (ep->sum) gep.act = GemmEpilogue::Act::kNone;
  }
  const bool any = ep && (gep.bias || gep.act != GemmEpilogue::Act::kNone);
  for (int64_t oh0 = 0; oh0 < OH; oh0 += band) {
    const int64_t rows = std::min(band, OH - oh0), n = (rows - 1) * Wq + OW;
    sgemm_b_shifted(&wa, xp + oh0 * Wq, koff, m, n, k, cp, n, &pool, any ? &gep : nullptr, true);
    parallel_range(pool, m * rows, OW, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t i = r / rows, oh = r % rows;
        const int64_t at = i * OH * OW + (oh0 + oh) * OW;
        std::copy(cp + i * n + oh * Wq, cp + i * n + oh * Wq + OW, y + at);
        if (ep && ep->sum) add_and_activate(y + at, ep->sum + at, OW, *ep);
      }
    });
  }
}

/// Reference direct convolution for every type (N-D, groups).
template <class T>
void conv_direct(const T* x, const T* w, const T* bias, T* y, int64_t N, int64_t C, int64_t M, int64_t group,
                 const Shape& in, const WindowGeometry& g) {
  using A = std::conditional_t<std::is_floating_point_v<Acc<T>>, double, Acc<T>>;
  const size_t r = in.size();
  const int64_t Cg = C / group, Mg = M / group, kvol = g.kernel.numel(), out_size = g.out.numel(), in_size = in.numel();
  Shape oidx = Shape::filled(r, 0), kidx = Shape::filled(r, 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t grp = m / Mg;
      for (int64_t o = 0; o < out_size; ++o) {
        int64_t rem = o;
        for (size_t d = r; d-- > 0;) {
          oidx[d] = rem % g.out[d];
          rem /= g.out[d];
        }
        A acc = bias ? static_cast<A>(to_acc(bias[m])) : A(0);
        for (int64_t c = 0; c < Cg; ++c) {
          const T* xc = x + (n * C + grp * Cg + c) * in_size;
          const T* wc = w + (m * Cg + c) * kvol;
          for (int64_t kk = 0; kk < kvol; ++kk) {
            int64_t kr = kk, off = 0;
            bool inside = true;
            for (size_t d = r; d-- > 0;) {
              kidx[d] = kr % g.kernel[d];
              kr /= g.kernel[d];
            }
            for (size_t d = 0; d < r && inside; ++d) {
              const int64_t i = oidx[d] * g.stride[d] - g.pad_begin[d] + kidx[d] * g.dilation[d];
              inside = i >= 0 && i < in[d];
              off = off * in[d] + i;
            }
            if (inside) acc += static_cast<A>(to_acc(xc[off])) * static_cast<A>(to_acc(wc[kk]));
          }
        }
        y[(n * M + m) * out_size + o] = from_acc<T>(static_cast<Acc<T>>(acc));
      }
    }
}

}  // namespace

ConvKernel::ConvKernel(const KernelCreateInfo& info, GemmEpilogue::Act act, float lo, float hi, bool with_sum)
    : node_(info.node), attrs_(WindowAttrs::of(info.node, false)), with_sum_(with_sum) {
  group_ = info.node.attr_int("group", 1);
  if (group_ <= 0) fail(ErrorCode::kInvalidGraph, info.node.label(), ": group must be positive, got ", group_);
  act_.act = act;
  act_.lo = lo;
  act_.hi = hi;
  const Tensor* w = info.constant(1);
  if (w && w->dtype() == DType::kFloat && w->rank() >= 3) {
    const int64_t M = w->dim(0), Mg = M / group_;
    const int64_t kg = w->numel() / M;
    const bool depthwise = w->dim(1) == 1 && Mg == 1 && w->rank() == 4;
    // Over a known, small number of output pixels (a 1x1 kernel of any rank, or a 2-D one), the
    // product is computed transposed (pixels as the micro-kernel's rows), so the weights are
    // packed as its B operand; see compute().
    bool one_by_one = true;
    for (size_t d = 2; d < w->rank(); ++d) one_by_one &= w->dim(d) == 1;
    for (int64_t p : info.node.attr_ints("pads")) one_by_one &= p == 0;
    const TypeInfo* xt = info.input_types.empty() ? nullptr : info.input_types[0];
    int64_t pixels = -1;
    if (group_ == 1 && !depthwise && (one_by_one || w->rank() == 4) && xt && xt->has_shape && xt->shape.size() == w->rank()) {
      const Shape xs = spatial_of(xt->shape), ks = spatial_of(w->shape());
      bool known = true;
      for (int64_t d : xs) known &= d > 0;
      if (known) {
        const WindowGeometry wg = window_geometry(info.node, xs, ks, false);
        pixels = wg.out.numel();
      }
    }
    if (pixels > 0 && gemm_prefers_transposed(M, pixels)) {
      packed_t_ = pack_b(true, kg, M, w->data<float>(), kg);
    } else if (!depthwise && M % group_ == 0) {
      for (int64_t g = 0; g < group_; ++g)
        packed_.push_back(pack_a(false, Mg, kg, w->data<float>() + g * Mg * kg, kg));
    }
  }
}

void ConvKernel::compute(KernelContext& ctx) const {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.optional_input(2);
  Tensor& y = ctx.output(0);
  const int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0);
  if (C % group_ != 0 || M % group_ != 0 || w.dim(1) * group_ != C)
    fail(ErrorCode::kInvalidArgument, "input channels ", C, " and weight ", w.shape().to_string(), " do not fit group ", group_);
  if (b && b->numel() != M) fail(ErrorCode::kInvalidArgument, "bias has ", b->numel(), " values for ", M, " output channels");
  const Shape in = spatial_of(x.shape());
  Shape kernel = spatial_of(w.shape());
  const WindowGeometry g = window_geometry(attrs_, node_, in, kernel);
  const Tensor* z = with_sum_ ? &ctx.input(3) : nullptr;
  if (z && (z->dtype() != DType::kFloat || !(z->shape() == y.shape())))
    fail(ErrorCode::kInvalidArgument, node_.label(), ": the sum input is ", dtype_name(z->dtype()), z->shape().to_string(),
         ", the output float", y.shape().to_string());
  if (y.numel() == 0) return;
  if (x.dtype() != DType::kFloat) {
    dispatch_numeric(x.dtype(), [&]<class T>() {
      if constexpr (std::is_same_v<T, bool>)
        unsupported_dtype("Conv", x.dtype());
      else
        conv_direct<T>(static_cast<const T*>(x.raw_data()), static_cast<const T*>(w.raw_data()),
                       b ? static_cast<const T*>(b->raw_data()) : nullptr, static_cast<T*>(y.raw_data()), N, C, M, group_, in, g);
    }, "Conv");
    return;
  }
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  const float* pb = b ? b->data<float>() : nullptr;
  float* py = y.data<float>();
  const int64_t Cg = C / group_, Mg = M / group_, kvol = kernel.numel(), Kg = Cg * kvol;
  const int64_t in_size = in.numel(), out_size = g.out.numel();
  // The GEMM epilogue of image n, group grp: bias (per output channel: per row of Y, or per
  // column of the transposed product), the sum input, the activation; null when there is none.
  GemmEpilogue ep_storage;
  auto epilogue = [&](int64_t n, int64_t grp, bool per_row) -> const GemmEpilogue* {
    ep_storage = act_;
    ep_storage.bias = pb ? pb + grp * Mg : nullptr;
    ep_storage.bias_per_row = per_row;
    ep_storage.sum = z ? z->data<float>() + (n * M + grp * Mg) * out_size : nullptr;
    const bool any = ep_storage.bias || ep_storage.sum || ep_storage.act != GemmEpilogue::Act::kNone;
    return any ? &ep_storage : nullptr;
  };
  if (Cg == 1 && Mg == 1 && in.size() == 2) {
    // With a sum, the activation waits for it: one pass over the output after the convolution.
    GemmEpilogue act = z ? GemmEpilogue{} : act_;
    if (depthwise2d_blocked_fits(g))
      depthwise2d_blocked(px, pw, pb, py, N, C, in, g, act, ctx.pool());
    else
      depthwise2d_loop(px, pw, pb, py, N * C, C, in, g, act, ctx.pool());
    if (z) add_and_activate(py, z->data<float>(), y.numel(), act_);
    return;
  }
  bool pointwise = true, strided_1x1 = in.size() == 2;
  for (size_t d = 0; d < in.size(); ++d) {
    pointwise &= kernel[d] == 1 && g.stride[d] == 1 && g.pad_begin[d] == 0 && g.pad_end[d] == 0;
    strided_1x1 &= kernel[d] == 1 && g.pad_begin[d] == 0 && g.pad_end[d] == 0;
  }
  const float* xin = px;  // the GEMM's B: the input, or its strided pixels gathered
  int64_t x_plane = in_size;
  if (!pointwise && strided_1x1) {
    // A 1x1 kernel with strides (ResNet's downsampling): the pixels it reads, gathered once into
    // contiguous [channels, pixels] planes, make it a pointwise product (no per-tap im2col).
    float* gathered = conv_scratch(static_cast<size_t>(N * C * out_size));
    const int64_t H = in[0], W = in[1], OH = g.out[0], OW = g.out[1], sh = g.stride[0], sw = g.stride[1];
    parallel_range(ctx.pool(), N * C, out_size, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t oh = 0; oh < OH; ++oh) {
          strided_copy(px + p * H * W + oh * sh * W, sw, gathered + p * out_size + oh * OW, OW);
        }
    });
    xin = gathered;
    x_plane = out_size;
    pointwise = true;
  }
  if (!pointwise && in.size() == 2 && packed_t_.data() && group_ == 1 && gemm_prefers_transposed(M, out_size)) {
    // Few output pixels: Y^T = im2col^T W^T, the im2col blocks packed as A (pixels as rows).
    for (int64_t n = 0; n < N; ++n) {
      const float* xn = px + n * C * in_size;
      auto pack = [&](int64_t r0, int64_t rows, int64_t k0, int64_t kc, float* dst) {
        im2col_pack_a(xn, in, g, r0, rows, k0, kc, dst);
      };
      const APacker packer(pack);
      sgemm_a_packer_tc(packer, &packed_t_, out_size, M, Kg, py + n * M * out_size, out_size, &ctx.pool(),
                        epilogue(n, 0, false));
    }
    return;
  }
  // The implicit GEMM trades the im2col matrix (K x pixels) for a copy of the output (M x pixels):
  // only with K at least M (MobileNetV2's stem, 27 taps to 32 channels, is faster through im2col).
  if (!pointwise && !packed_.empty() && Kg >= Mg && shifted_gemm_fits(g, Cg)) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t grp = 0; grp < group_; ++grp)
        conv2d_shifted(packed_[grp], px + (n * C + grp * Cg) * in_size, Cg, in, g, py + (n * M + grp * Mg) * out_size, Mg,
                       epilogue(n, grp, true), ctx.pool());
    return;
  }
  if (!pointwise && in.size() == 2) {
    // 2-D: the GEMM asks for B (the im2col matrix) one block at a time, built into a cache-sized
    // buffer and packed from there; the whole matrix never goes through memory.
    for (int64_t n = 0; n < N; ++n)
      for (int64_t grp = 0; grp < group_; ++grp) {
        const float* xg = px + (n * C + grp * Cg) * in_size;
        auto pack = [&](int64_t k0, int64_t kc, int64_t c0, int64_t cols, float* dst) {
          im2col_pack_b(xg, in, g, k0, kc, c0, cols, dst);
        };
        const BPacker packer(pack);
        const PackedMatrix* pa = packed_.empty() ? nullptr : &packed_[grp];
        sgemm_b_packer(pa, pw + grp * Mg * Kg, Kg, packer, Mg, out_size, Kg, py + (n * M + grp * Mg) * out_size, out_size,
                       &ctx.pool(), epilogue(n, grp, true));
      }
    return;
  }
  float* col = pointwise ? nullptr : conv_scratch(static_cast<size_t>(Kg * out_size));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t grp = 0; grp < group_; ++grp) {
      const float* xg = xin + (n * C + grp * Cg) * x_plane;
      const float* bmat = xg;
      if (!pointwise) {
        im2col_mapped(xg, Cg, in, g, col, ctx.pool(), [](float v) { return v; });  // 1-D and 3-D (2-D: the packer above)
        bmat = col;
      }
      float* yg = py + (n * M + grp * Mg) * out_size;
      if (packed_t_.data() && pointwise && gemm_prefers_transposed(Mg, out_size)) {
        // Y^T (pixels x M) = X^T W^T, stored transposed into Y; the bias is per column of Y^T.
        sgemm_packed_tc(nullptr, true, bmat, out_size, &packed_t_, false, nullptr, 0, out_size, Mg, Kg, yg, out_size,
                        &ctx.pool(), epilogue(n, grp, false));
        continue;
      }
      const PackedMatrix* pa = packed_.empty() ? nullptr : &packed_[grp];
      if (pa && pointwise && Mg <= kFewRows && Kg >= 64) {
        // A couple of row tiles would not repay packing B (the input) first: it is read in place,
        // row k of B at offset k * out_size. (With K below 64, packing measured faster still:
        // MobileNetV2's 32 -> 16 channels at 112 x 112.)
        int64_t* koff = reinterpret_cast<int64_t*>(thread_workspace(Workspace::kGemmView, static_cast<size_t>(Kg) * sizeof(int64_t)));
        for (int64_t k = 0; k < Kg; ++k) koff[k] = k * out_size;
        sgemm_b_shifted(pa, bmat, koff, Mg, out_size, Kg, yg, out_size, &ctx.pool(), epilogue(n, grp, true));
        continue;
      }
      sgemm_packed(pa, false, pw + grp * Mg * Kg, Kg, nullptr, false, bmat, out_size, Mg, out_size, Kg, 0.0f, yg, out_size,
                   &ctx.pool(), epilogue(n, grp, true));
    }
}

namespace {

std::unique_ptr<Kernel> make_conv(const KernelCreateInfo& info) {
  return std::make_unique<ConvKernel>(info, GemmEpilogue::Act::kNone, 0.0f, 0.0f);
}

std::unique_ptr<Kernel> make_fused_conv(const KernelCreateInfo& info) {
  const GemmEpilogue ep = fused_epilogue(info.node, false);
  if (ep.act == GemmEpilogue::Act::kNone) fail(ErrorCode::kInvalidGraph, info.node.label(), ": FusedConv without an activation");
  return std::make_unique<ConvKernel>(info, ep.act, ep.lo, ep.hi);
}

std::unique_ptr<Kernel> make_fused_conv_add(const KernelCreateInfo& info) {
  const GemmEpilogue ep = fused_epilogue(info.node, false);
  if (info.node.inputs.size() != 4 || info.node.inputs[3] < 0)
    fail(ErrorCode::kInvalidGraph, info.node.label(), ": FusedConvAdd needs its sum as input 3");
  return std::make_unique<ConvKernel>(info, ep.act, ep.lo, ep.hi, true);
}

// ---- com.microsoft FusedConv: Conv [+ Z] then an activation ----

/// The activation of ONNX Runtime's FusedConv that the GEMM epilogue does not take, applied to
/// the convolution's output in place.
class ActivationAfterKernel final : public Kernel {
 public:
  enum class Act { kTanh, kSigmoid, kLeakyRelu, kHardSigmoid };
  ActivationAfterKernel(std::unique_ptr<Kernel> conv, Act act, float a, float b) : conv_(std::move(conv)), act_(act), a_(a), b_(b) {}

  void compute(KernelContext& ctx) const override {
    conv_->compute(ctx);
    Tensor& y = ctx.output(0);
    float* p = y.data<float>();
    const int64_t n = y.numel(), chunk = 4096;
    parallel_range(ctx.pool(), (n + chunk - 1) / chunk, chunk * 8, [&](int64_t c0, int64_t c1) {
      const int64_t e = std::min(n, c1 * chunk);
      for (int64_t i = c0 * chunk; i < e; ++i) {
        const float v = p[i];
        switch (act_) {
          case Act::kTanh: p[i] = std::tanh(v); break;
          case Act::kSigmoid: p[i] = 1.0f / (1.0f + std::exp(-v)); break;
          case Act::kLeakyRelu: p[i] = v >= 0 ? v : a_ * v; break;
          case Act::kHardSigmoid: p[i] = std::clamp(a_ * v + b_, 0.0f, 1.0f); break;
        }
      }
    });
  }
  int inplace_input(size_t out) const override { return conv_->inplace_input(out); }

 private:
  std::unique_ptr<Kernel> conv_;
  Act act_;
  float a_, b_;
};

std::unique_ptr<Kernel> make_ms_fused_conv(const KernelCreateInfo& info) {
  const Node& n = info.node;
  const bool with_z = n.inputs.size() > 3 && n.inputs[3] >= 0;
  const std::string act = n.attr_string("activation");
  const std::vector<float> p = n.attr_floats("activation_params");
  auto param = [&](size_t i, float dflt) { return i < p.size() ? p[i] : dflt; };
  if (act.empty()) return std::make_unique<ConvKernel>(info, GemmEpilogue::Act::kNone, 0.0f, 0.0f, with_z);
  if (act == "Relu") return std::make_unique<ConvKernel>(info, GemmEpilogue::Act::kRelu, 0.0f, 0.0f, with_z);
  if (act == "Clip") {
    if (p.size() != 2) fail(ErrorCode::kInvalidGraph, n.label(), ": activation Clip needs activation_params [min, max]");
    return std::make_unique<ConvKernel>(info, GemmEpilogue::Act::kClip, p[0], p[1], with_z);
  }
  using A = ActivationAfterKernel::Act;
  A a;
  float pa = 0, pb = 0;
  if (act == "Tanh") {
    a = A::kTanh;
  } else if (act == "Sigmoid") {
    a = A::kSigmoid;
  } else if (act == "LeakyRelu") {
    a = A::kLeakyRelu, pa = param(0, 0.01f);
  } else if (act == "HardSigmoid") {
    a = A::kHardSigmoid, pa = param(0, 0.2f), pb = param(1, 0.5f);
  } else {
    fail(ErrorCode::kInvalidGraph, n.label(), ": FusedConv activation '", act, "' is not one of Relu, Tanh, Sigmoid, LeakyRelu, Clip, HardSigmoid");
  }
  return std::make_unique<ActivationAfterKernel>(std::make_unique<ConvKernel>(info, GemmEpilogue::Act::kNone, 0.0f, 0.0f, with_z), a, pa, pb);
}

// ---- com.microsoft NhwcConv: a 2-D convolution of [N, H, W, C] data with [M, kH, kW, C / group]
// weights, giving [N, OH, OW, M]. Output pixels in blocks: each block's windows are gathered into
// rows (kH, kW, C / group: the weights' order), and one GEMM per group against the weights
// writes the block's output channels in place.

class NhwcConvKernel final : public Kernel {
 public:
  explicit NhwcConvKernel(const KernelCreateInfo& info) : node_(info.node), attrs_(WindowAttrs::of(info.node, false)) {
    group_ = info.node.attr_int("group", 1);
    if (group_ <= 0) fail(ErrorCode::kInvalidGraph, info.node.label(), ": group must be positive, got ", group_);
  }

  void compute(KernelContext& ctx) const override {
    const Node& n = node_;
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.optional_input(2);
    for (const Tensor* t : {&x, &w, b})
      if (t && t->dtype() != DType::kFloat) fail(ErrorCode::kInvalidArgument, n.label(), ": NhwcConv takes float32, got ", dtype_name(t->dtype()));
    if (x.rank() != 4 || w.rank() != 4)
      fail(ErrorCode::kNotImplemented, n.label(), ": NhwcConv on the CPU is 2-D: X [N, H, W, C] and W [M, kH, kW, C/group], got ", x.shape().to_string(),
           " and ", w.shape().to_string());
    const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3), M = w.dim(0), kh = w.dim(1), kw = w.dim(2), cg = w.dim(3);
    if (C % group_ != 0 || M % group_ != 0 || cg * group_ != C)
      fail(ErrorCode::kInvalidArgument, n.label(), ": input channels ", C, " and weight ", w.shape().to_string(), " do not fit group ", group_);
    if (b && b->numel() != M) fail(ErrorCode::kInvalidArgument, n.label(), ": bias has ", b->numel(), " values for ", M, " output channels");
    const WindowGeometry g = window_geometry(attrs_, n, Shape{H, W}, Shape{kh, kw});
    const int64_t OH = g.out[0], OW = g.out[1], Mg = M / group_, K = kh * kw * cg;
    Tensor& y = ctx.output(0);
    if (!(y.shape() == Shape{N, OH, OW, M}))
      fail(ErrorCode::kInvalidArgument, n.label(), ": output ", y.shape().to_string(), " is not [", N, ",", OH, ",", OW, ",", M, "]");
    const int64_t pixels = N * OH * OW;
    if (pixels == 0 || M == 0) return;
    const float *px = x.data<float>(), *pw = w.data<float>(), *pb = b ? b->data<float>() : nullptr;
    float* py = y.data<float>();
    const int64_t block = std::clamp<int64_t>(65536 / std::max<int64_t>(1, K), 1, 256);
    const int64_t blocks = (pixels + block - 1) / block;
    parallel_range(ctx.pool(), blocks, block * K * Mg * group_, [&](int64_t b0, int64_t b1) {
      float* a = reinterpret_cast<float*>(thread_workspace(Workspace::kIm2col, static_cast<size_t>(block * K) * sizeof(float)));
      for (int64_t bi = b0; bi < b1; ++bi) {
        const int64_t p0 = bi * block, rows = std::min(block, pixels - p0);
        for (int64_t grp = 0; grp < group_; ++grp) {
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t p = p0 + r, ow = p % OW, oh = (p / OW) % OH, img = p / (OW * OH);
            float* row = a + r * K;
            for (int64_t i = 0; i < kh; ++i) {
              const int64_t ih = oh * g.stride[0] - g.pad_begin[0] + i * g.dilation[0];
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t iw = ow * g.stride[1] - g.pad_begin[1] + j * g.dilation[1];
                float* dst = row + (i * kw + j) * cg;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                  std::fill_n(dst, cg, 0.0f);
                else
                  std::memcpy(dst, px + ((img * H + ih) * W + iw) * C + grp * cg, sizeof(float) * cg);
              }
            }
          }
          float* yb = py + p0 * M + grp * Mg;
          sgemm(false, true, rows, Mg, K, 1.0f, a, K, pw + grp * Mg * K, K, 0.0f, yb, M, nullptr);
          if (pb)
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t m = 0; m < Mg; ++m) yb[r * M + m] += pb[grp * Mg + m];
        }
      }
    });
  }

 private:
  const Node& node_;
  WindowAttrs attrs_;
  int64_t group_ = 1;
};

std::unique_ptr<Kernel> make_nhwc_conv(const KernelCreateInfo& info) { return std::make_unique<NhwcConvKernel>(info); }

// ---- ConvTranspose ----

class ConvTransposeKernel final : public Kernel {
 public:
  explicit ConvTransposeKernel(const KernelCreateInfo& info) : node_(info.node), group_(info.node.attr_int("group", 1)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.optional_input(2);
    Tensor& y = ctx.output(0);
    const int64_t N = x.dim(0), C = x.dim(1);
    if (group_ <= 0) fail(ErrorCode::kInvalidArgument, "group must be positive, got ", group_);
    if (C % group_ != 0 || w.dim(0) != C)
      fail(ErrorCode::kInvalidArgument, "input channels ", C, " do not match weight ", w.shape().to_string());
    const int64_t Cg = C / group_, Mg = w.dim(1), M = Mg * group_;
    const Shape in = spatial_of(x.shape());
    Shape kernel = spatial_of(w.shape());
    const WindowGeometry g = conv_transpose_geometry(node_, in, kernel);
    const int64_t kvol = kernel.numel(), in_size = in.numel(), out_size = g.out.numel();
    const size_t r = in.size();
    if (y.numel() == 0) return;
    dispatch_float(x.dtype(), [&]<class T>() {
      const T* px = static_cast<const T*>(x.raw_data());
      const T* pw = static_cast<const T*>(w.raw_data());
      T* py = static_cast<T*>(y.raw_data());
      float* col = conv_scratch(static_cast<size_t>(Mg * kvol * in_size));
      Shape kidx = Shape::filled(r, 0), iidx = Shape::filled(r, 0);
      // The image's accumulator, from a workspace (no allocation per run once warm).
      float* acc = reinterpret_cast<float*>(thread_workspace(Workspace::kConvTranspose, static_cast<size_t>(M * out_size) * sizeof(float)));
      for (int64_t n = 0; n < N; ++n) {
        std::fill(acc, acc + M * out_size, 0.0f);
        for (int64_t grp = 0; grp < group_; ++grp) {
          // col[Mg*kvol, in] = W_g^T [Mg*kvol, Cg] x X_g [Cg, in]
          const int64_t cols = Mg * kvol;
          if constexpr (std::is_same_v<T, float>) {
            sgemm(true, false, cols, in_size, Cg, 1.0f, pw + grp * Cg * cols, cols, px + (n * C + grp * Cg) * in_size, in_size,
                  0.0f, col, in_size, &ctx.pool());
          } else {
            for (int64_t i = 0; i < cols; ++i)
              for (int64_t j = 0; j < in_size; ++j) {
                double s = 0;
                for (int64_t c = 0; c < Cg; ++c)
                  s += static_cast<double>(to_acc(pw[(grp * Cg + c) * cols + i])) *
                       static_cast<double>(to_acc(px[(n * C + grp * Cg + c) * in_size + j]));
                col[i * in_size + j] = static_cast<float>(s);
              }
          }
          // col2im: scatter-add into the output.
          for (int64_t row = 0; row < cols; ++row) {
            const int64_t m = row / kvol;
            int64_t rem = row % kvol;
            for (size_t d = r; d-- > 0;) {
              kidx[d] = rem % kernel[d];
              rem /= kernel[d];
            }
            float* dst = acc + (grp * Mg + m) * out_size;
            const float* src = col + row * in_size;
            for (size_t d = 0; d < r; ++d) iidx[d] = 0;
            for (int64_t i = 0; i < in_size; ++i) {
              int64_t off = 0;
              bool inside = true;
              for (size_t d = 0; d < r && inside; ++d) {
                const int64_t o = iidx[d] * g.stride[d] - g.pad_begin[d] + kidx[d] * g.dilation[d];
                inside = o >= 0 && o < g.out[d];
                off = off * g.out[d] + o;
              }
              if (inside) dst[off] += src[i];
              for (size_t d = r; d-- > 0;) {
                if (++iidx[d] < in[d]) break;
                iidx[d] = 0;
              }
            }
          }
        }
        for (int64_t m = 0; m < M; ++m) {
          const float bv = b ? static_cast<float>(to_acc(static_cast<const T*>(b->raw_data())[m])) : 0.0f;
          for (int64_t o = 0; o < out_size; ++o) py[(n * M + m) * out_size + o] = from_acc<T>(acc[m * out_size + o] + bv);
        }
      }
    }, "ConvTranspose");
  }

 private:
  const Node& node_;
  int64_t group_;
};

std::unique_ptr<Kernel> make_conv_transpose(const KernelCreateInfo& info) { return std::make_unique<ConvTransposeKernel>(info); }

using namespace types;

// ---- DeformConv (opset 19) ----
//
// Each kernel tap samples the input at its regular position plus a learned offset, bilinearly
// (align_corners, zeros outside the input, as GridSample), scaled by the mask. The samples of
// one image form a column matrix [C * kH * kW, oH * oW] (offsets shared by the channels of an
// offset group); each group's output is then W_g x columns_g + B.

class DeformConvKernel final : public Kernel {
 public:
  explicit DeformConvKernel(const KernelCreateInfo& info)
      : node_(info.node), attrs_(WindowAttrs::of(info.node, false)), group_(info.node.attr_int("group", 1)),
        offset_group_(info.node.attr_int("offset_group", 1)) {
    if (group_ <= 0 || offset_group_ <= 0)
      fail(ErrorCode::kInvalidGraph, node_.label(), ": group and offset_group must be positive");
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor& off = ctx.input(2);
    const Tensor* b = ctx.optional_input(3);
    const Tensor* mask = ctx.optional_input(4);
    Tensor& y = ctx.output(0);
    if (x.rank() != 4 || w.rank() != 4)
      fail(ErrorCode::kNotImplemented, node_.label(), ": DeformConv is implemented for 2-D inputs (rank 4), got ",
           x.shape().to_string());
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    const int64_t M = w.dim(0), Cg = w.dim(1), kH = w.dim(2), kW = w.dim(3);
    if (C != Cg * group_ || M % group_ != 0)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": input ", x.shape().to_string(), " and weight ",
           w.shape().to_string(), " do not match group ", group_);
    if (C % offset_group_ != 0)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": ", C, " input channels are not divisible by offset_group ",
           offset_group_);
    const int64_t oH = y.dim(2), oW = y.dim(3), K = kH * kW, P = oH * oW;
    const Shape want_off{N, offset_group_ * K * 2, oH, oW};
    if (!(off.shape() == want_off))
      fail(ErrorCode::kInvalidArgument, node_.label(), ": offset has shape ", off.shape().to_string(), ", expected ",
           want_off.to_string());
    const Shape want_mask{N, offset_group_ * K, oH, oW};
    if (mask && !(mask->shape() == want_mask))
      fail(ErrorCode::kInvalidArgument, node_.label(), ": mask has shape ", mask->shape().to_string(), ", expected ",
           want_mask.to_string());
    if (b && b->numel() != M)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": bias has ", b->numel(), " values for ", M, " output channels");
    const WindowGeometry g = window_geometry(attrs_, node_, Shape{H, W}, Shape{kH, kW});
    if (g.out[0] != oH || g.out[1] != oW)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": output ", y.shape().to_string(), " does not match the geometry");
    if (y.numel() == 0) return;
    dispatch_float(x.dtype(), [&]<class T>() {
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        const T* px = x.data<T>();
        const T* pw = w.data<T>();
        const T* po = off.data<T>();
        const T* pm = mask ? mask->data<T>() : nullptr;
        const T* pb = b ? b->data<T>() : nullptr;
        T* py = y.data<T>();
        const int64_t Mg = M / group_, Cog = C / offset_group_;
        std::vector<double> cols(static_cast<size_t>(C * K * P));
        for (int64_t n = 0; n < N; ++n) {
          // Columns: one sample per (channel, tap, output position).
          parallel_range(ctx.pool(), C, K * P * 8, [&](int64_t c0, int64_t c1) {
            for (int64_t c = c0; c < c1; ++c) {
              const int64_t og = c / Cog;
              const T* img = px + (n * C + c) * H * W;
              for (int64_t kh = 0; kh < kH; ++kh)
                for (int64_t kw = 0; kw < kW; ++kw) {
                  const int64_t k = kh * kW + kw;
                  const T* dy = po + ((n * offset_group_ + og) * K * 2 + 2 * k) * P;
                  const T* dx = dy + P;
                  const T* mk = pm ? pm + ((n * offset_group_ + og) * K + k) * P : nullptr;
                  double* col = cols.data() + (c * K + k) * P;
                  for (int64_t i = 0; i < oH; ++i)
                    for (int64_t j = 0; j < oW; ++j) {
                      const int64_t p = i * oW + j;
                      const double hy = static_cast<double>(i * g.stride[0] - g.pad_begin[0] + kh * g.dilation[0]) +
                                        static_cast<double>(dy[p]);
                      const double wx = static_cast<double>(j * g.stride[1] - g.pad_begin[1] + kw * g.dilation[1]) +
                                        static_cast<double>(dx[p]);
                      double v = 0;
                      if (hy > -1 && hy < static_cast<double>(H) && wx > -1 && wx < static_cast<double>(W)) {
                        const double fy = std::floor(hy), fx = std::floor(wx);
                        const int64_t y0 = static_cast<int64_t>(fy), x0 = static_cast<int64_t>(fx);
                        const double ly = hy - fy, lx = wx - fx;
                        auto at = [&](int64_t yy, int64_t xx) {
                          return yy >= 0 && yy < H && xx >= 0 && xx < W ? static_cast<double>(img[yy * W + xx]) : 0.0;
                        };
                        v = (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x0 + 1)) +
                            ly * ((1 - lx) * at(y0 + 1, x0) + lx * at(y0 + 1, x0 + 1));
                      }
                      col[p] = mk ? v * static_cast<double>(mk[p]) : v;
                    }
                }
            }
          });
          // Per group: y[m, p] = b[m] + sum over (c, k) of w[m, c, k] * cols[c, k, p].
          parallel_range(ctx.pool(), M, Cg * K * P, [&](int64_t m0, int64_t m1) {
            std::vector<double> acc(static_cast<size_t>(P));
            for (int64_t m = m0; m < m1; ++m) {
              const int64_t grp = m / Mg;
              std::fill(acc.begin(), acc.end(), pb ? static_cast<double>(pb[m]) : 0.0);
              for (int64_t ck = 0; ck < Cg * K; ++ck) {
                const double wv = static_cast<double>(pw[m * Cg * K + ck]);
                const double* col = cols.data() + (grp * Cg * K + ck) * P;
                for (int64_t p = 0; p < P; ++p) acc[p] += wv * col[p];
              }
              T* out = py + (n * M + m) * P;
              for (int64_t p = 0; p < P; ++p) out[p] = static_cast<T>(acc[p]);
            }
          });
        }
      } else {
        fail(ErrorCode::kNotImplemented, node_.label(), ": DeformConv of ", dtype_name(x.dtype()), " (float and double only)");
      }
    }, "DeformConv");
  }

 private:
  const Node& node_;
  WindowAttrs attrs_;
  int64_t group_, offset_group_;
};

std::unique_ptr<Kernel> make_deform_conv(const KernelCreateInfo& info) { return std::make_unique<DeformConvKernel>(info); }

const KernelDef kDefs[] = {
    {"", "Conv", 1, 99, {{0, kFloats}}, make_conv},
    {"", "ConvTranspose", 1, 99, {{0, kFloats}}, make_conv_transpose},
    {"onyx", "FusedConv", 1, 1, {{0, kFloat}}, make_fused_conv},
    {"onyx", "FusedConvAdd", 1, 1, {{0, kFloat}}, make_fused_conv_add},
    {"com.microsoft", "FusedConv", 1, 1, {{0, kFloat}}, make_ms_fused_conv},
    {"com.microsoft", "NhwcConv", 1, 1, {{0, kFloat}}, make_nhwc_conv},
    {"", "DeformConv", 19, 99, {{0, type_mask({DType::kFloat, DType::kDouble})}}, make_deform_conv},
};

}  // namespace

std::span<const KernelDef> conv_kernels() { return kDefs; }

}  // namespace onyx::cpu
