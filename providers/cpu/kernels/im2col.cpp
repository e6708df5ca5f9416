// im2col for the CPU EP's 2-D convolutions, built block by block in the GEMM's panel layouts
// (declared in conv.hpp), and the strided copies they and the strided 1x1 gathers use.
#include <algorithm>
#include <cstring>

#include "kernels/common.hpp"
#include "kernels/conv.hpp"
#include "kernels/gemm.hpp"
#include "kernels/vmath.hpp"

namespace onyx::cpu {

void strided_copy(const float* src, int64_t stride, float* dst, int64_t n) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  int64_t i = 0;
  if (stride == 2) {
    using vmath::vf;
    using vmath::vi;
    vi even;  // lanes 0, 2, 4, ... of the two vectors
    for (int l = 0; l < vmath::kLanes; ++l) even[l] = 2 * l;
    // The last vector reads src[2i + 2 kLanes - 1], one past the last element used: stop one
    // vector early.
    for (; i + vmath::kLanes < n; i += vmath::kLanes)
      vmath::store(dst + i, __builtin_shuffle(vmath::load(src + 2 * i), vmath::load(src + 2 * i + vmath::kLanes), even));
  }
  for (; i < n; ++i) dst[i] = src[i * stride];
}

namespace {

#ifndef __AVX512F__
/// Rows [k0, k0 + kc) x output positions [p0, p0 + cols) of the 2-D im2col matrix of one image
/// and group, row-major (row stride cols): the block of B the GEMM packs next, built in cache.
void im2col_block_2d(const float* x, const Shape& in, const WindowGeometry& g, int64_t k0, int64_t kc, int64_t p0,
                     int64_t cols, float* dst) {
  const int64_t H = in[0], W = in[1], KH = g.kernel[0], KW = g.kernel[1], OW = g.out[1];
  const int64_t sh = g.stride[0], sw = g.stride[1], dh = g.dilation[0], dw = g.dilation[1];
  const int64_t ph = g.pad_begin[0], pw = g.pad_begin[1];
  const int64_t kvol = KH * KW;
  for (int64_t kk = 0; kk < kc; ++kk) {
    const int64_t row = k0 + kk, c = row / kvol, ki = (row % kvol) / KW, kj = row % KW;
    const float* xc = x + c * H * W;
    float* d = dst + kk * cols;
    const int64_t off = kj * dw - pw;
    // Valid ow range (0 <= ow * sw + off < W).
    const int64_t vlo = off >= 0 ? 0 : (-off + sw - 1) / sw;
    const int64_t vhi = std::min<int64_t>(OW, W - off > 0 ? (W - off + sw - 1) / sw : 0);
    for (int64_t p = p0; p < p0 + cols;) {
      const int64_t oh = p / OW, ow0 = p % OW;
      const int64_t ow1 = std::min<int64_t>(OW, ow0 + (p0 + cols - p));
      float* dd = d + (p - p0) - ow0;  // dd[ow] is position (oh, ow)
      const int64_t ih = oh * sh - ph + ki * dh;
      if (ih < 0 || ih >= H) {
        std::fill(dd + ow0, dd + ow1, 0.0f);
      } else {
        const float* src = xc + ih * W + off;
        const int64_t lo = std::clamp(vlo, ow0, ow1), hi = std::clamp(vhi, lo, ow1);
        std::fill(dd + ow0, dd + lo, 0.0f);
        strided_copy(src + lo * sw, sw, dd + lo, hi - lo);
        std::fill(dd + hi, dd + ow1, 0.0f);
      }
      p += ow1 - ow0;
    }
  }
}
#endif

#ifdef __AVX512F__
/// n (<= 32) floats src[0], src[stride], ... to dst (unit and 2 strides by masked vector loads
/// and stores, which read and write nothing outside the run).
inline void copy_run(const float* src, int64_t stride, int64_t n, float* dst) {
  if (stride == 1) {
    const int64_t a = std::min<int64_t>(n, 16);
    _mm512_mask_storeu_ps(dst, static_cast<__mmask16>((1u << a) - 1u), _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << a) - 1u), src));
    if (n > 16) {
      const __mmask16 m = static_cast<__mmask16>((1u << (n - 16)) - 1u);
      _mm512_mask_storeu_ps(dst + 16, m, _mm512_maskz_loadu_ps(m, src + 16));
    }
    return;
  }
  if (stride == 2) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t h = 0; h * 16 < n; ++h) {
      const int64_t outs = std::min<int64_t>(16, n - h * 16);
      const int64_t reads = 2 * outs - 1;  // src[0 .. 2 (outs - 1)] of this half
      const __mmask16 ma = static_cast<__mmask16>((1u << std::min<int64_t>(16, reads)) - 1u);
      const __mmask16 mb = static_cast<__mmask16>(reads > 16 ? (1u << (reads - 16)) - 1u : 0u);
      const float* s = src + h * 32;
      const __m512 v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(ma, s), even, _mm512_maskz_loadu_ps(mb, s + 16));
      _mm512_mask_storeu_ps(dst + h * 16, static_cast<__mmask16>((1u << outs) - 1u), v);
    }
    return;
  }
  for (int64_t t = 0; t < n; ++t) dst[t] = src[t * stride];
}

/// The im2col block rows [k0, k0 + kc) x output positions [p0, p0 + cols), written straight into
/// the GEMM's panels of P positions each (no row-major copy in between): as B (P = kPanelCols:
/// im2col_block_2d then pack_b_rows) or, its transpose, as A (P = kPanelRows: pixels as rows) —
/// both layouts put element (k, position p0 + P q + lane) at dst[q * P * kc + k * P + lane]. A
/// panel's P output positions fall into runs within output rows, and each row of the panel copies
/// each run's taps from one input row. Panel by panel, so that each is written as one sequential
/// run (its input rows are in L1 from the panel before); nothing is kept between calls (what a
/// call needs is on the stack: the GEMM's threads allocate nothing).
template <int64_t P>
void im2col_block_panels(const float* x, const Shape& in, const WindowGeometry& g, int64_t k0, int64_t kc, int64_t p0,
                         int64_t cols, float* dst) {
  static_assert(P <= 32, "copy_run copies at most 32 floats");
  constexpr int64_t kTaps = 512;  // rows whose plane and tap offsets are tabulated at a time
  const int64_t H = in[0], W = in[1], KW = g.kernel[1], OW = g.out[1], kvol = g.kernel[0] * KW;
  const int64_t sh = g.stride[0], sw = g.stride[1], dh = g.dilation[0], dw = g.dilation[1];
  struct Run {
    int64_t lane, len, ih0, iw0;  // first lane in the panel, pixels, input row / column of the first tap
  };
  const int64_t panels = (cols + P - 1) / P;
  // ceil(v / sw) for v >= 0, without a division for the usual strides (and without v + sw - 1,
  // which overflows for a hostile stride).
  auto ceil_div = [sw](int64_t v) { return sw == 1 ? v : sw == 2 ? (v + 1) >> 1 : v / sw + (v % sw != 0); };
  const __m512 zero = _mm512_setzero_ps();
  int64_t plane[kTaps], tap_h[kTaps], tap_w[kTaps];
  Run runs[P];
  for (int64_t kt = 0; kt < kc; kt += kTaps) {
    const int64_t kn = std::min(kTaps, kc - kt);
    for (int64_t kk = 0; kk < kn; ++kk) {
      const int64_t row = k0 + kt + kk;
      plane[kk] = (row / kvol) * H * W;
      tap_h[kk] = ((row % kvol) / KW) * dh;
      tap_w[kk] = (row % KW) * dw;
    }
    for (int64_t q = 0; q < panels; ++q) {
      // The panel's runs: its positions split at the ends of output rows.
      const int64_t width = std::min(P, cols - q * P);
      int64_t nruns = 0;
      for (int64_t lane = 0; lane < width;) {
        const int64_t p = p0 + q * P + lane, oh = p / OW, ow = p % OW;
        const int64_t len = std::min(OW - ow, width - lane);
        runs[nruns++] = {lane, len, oh * sh - g.pad_begin[0], ow * sw - g.pad_begin[1]};
        lane += len;
      }
      float* panel = dst + q * P * kc;
      for (int64_t kk = 0; kk < kn; ++kk) {
        const float* xc = x + plane[kk];
        float* d = panel + (kt + kk) * P;
        for (int64_t o = 0; o < P; o += 16)
          _mm512_mask_storeu_ps(d + o, static_cast<__mmask16>((1u << std::min<int64_t>(16, P - o)) - 1u), zero);
        for (int64_t r = 0; r < nruns; ++r) {
          const Run& run = runs[r];
          const int64_t ih = run.ih0 + tap_h[kk];
          if (ih < 0 || ih >= H) continue;
          const int64_t iw = run.iw0 + tap_w[kk];
          // Pixels t of the run whose tap is inside the row: 0 <= iw + t * sw < W.
          const int64_t lo = iw >= 0 ? 0 : ceil_div(-iw);
          const int64_t hi = std::min<int64_t>(run.len, iw < W ? ceil_div(W - iw) : 0);
          if (lo < hi) copy_run(xc + ih * W + iw + lo * sw, sw, hi - lo, d + run.lane + lo);
        }
      }
    }
  }
}
#endif

}  // namespace

void im2col_pack_b(const float* x, const Shape& in, const WindowGeometry& g, int64_t k0, int64_t kc, int64_t p0,
                   int64_t cols, float* dst) {
#ifdef __AVX512F__
  static_assert(kPanelCols == 32);
  im2col_block_panels<kPanelCols>(x, in, g, k0, kc, p0, cols, dst);
#else
  float* tmp = reinterpret_cast<float*>(thread_workspace(Workspace::kIm2col, static_cast<size_t>(kc * cols) * sizeof(float)));
  im2col_block_2d(x, in, g, k0, kc, p0, cols, tmp);
  pack_b_rows(tmp, cols, kc, cols, dst);
#endif
}

void im2col_pack_a(const float* x, const Shape& in, const WindowGeometry& g, int64_t r0, int64_t rows, int64_t k0,
                   int64_t kc, float* dst) {
#ifdef __AVX512F__
  im2col_block_panels<kPanelRows>(x, in, g, k0, kc, r0, rows, dst);
#else
  // The block of im2col (kc x rows, built row by row as for B), then its columns as A panels.
  float* tmp = reinterpret_cast<float*>(thread_workspace(Workspace::kIm2col, static_cast<size_t>(kc * rows) * sizeof(float)));
  im2col_block_2d(x, in, g, k0, kc, r0, rows, tmp);
  pack_a_cols(tmp, rows, kc, rows, dst);
#endif
}

}  // namespace onyx::cpu
