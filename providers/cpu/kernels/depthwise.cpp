// Depthwise 2-D convolution with the vector lanes across channels: 16 channels of a band of
// input rows are transposed into a zero-padded [row][column][channel] tile, every output pixel is
// then one vector accumulating its taps (a weight vector per tap), and the band's outputs are
// transposed back to NCHW. Nothing depends on the plane's width fitting a vector, so small
// planes and strided windows run at the same rate as large ones.
#include <algorithm>

#include "kernels/common.hpp"
#include "kernels/conv.hpp"
#include "kernels/vmath.hpp"

namespace onyx::cpu {
namespace {

using vmath::vf;
constexpr int64_t kL = vmath::kLanes;
constexpr int64_t kMaxTaps = 64;
/// Floats of the transposed input tile a band aims for (fits L2 beside its output).
constexpr int64_t kTileFloats = 24 * 1024;

struct Band {
  const float* x;   // the image's first input plane
  float* y;         // the image's first output plane
  int64_t c0, nc;   // channels [c0, c0 + nc), nc <= kL
  int64_t oh0, oh1; // output rows
};

struct Geometry {
  int64_t H, W, KH, KW, OH, OW, sh, sw, dh, dw, ph, pw;
  int64_t Wp;  // padded columns the windows read
};

inline vf activate(vf a, const GemmEpilogue& ep, vf lo, vf hi) {
  if (ep.act == GemmEpilogue::Act::kRelu) return vmath::vmax(a, vf{});
  if (ep.act == GemmEpilogue::Act::kClip) return vmath::vmin(vmath::vmax(a, lo), hi);
  return a;
}

/// P output pixels (any rows of the band): base[p] points at the tile cell of pixel p's first
/// tap, off[t] is tap t's offset from there. KH x KW fixed at compile time where it is 3 x 3.
template <int P, int64_t KT>
inline void dw_pixels(const float* const* base, const int64_t* off, const vf* wv, int64_t taps, vf bias,
                      const GemmEpilogue& ep, vf lo, vf hi, float* o) {
  const int64_t nt = KT > 0 ? KT : taps;
  vf acc[P];
  for (int p = 0; p < P; ++p) acc[p] = bias;
#pragma GCC unroll 9
  for (int64_t t = 0; t < nt; ++t) {
    const vf w = wv[t];
    const int64_t d = off[t];
    for (int p = 0; p < P; ++p) acc[p] += w * vmath::load(base[p] + d);
  }
  for (int p = 0; p < P; ++p) vmath::store(o + p * kL, activate(acc[p], ep, lo, hi));
}

/// Every output pixel of the band in runs of 8 (a run may span rows), then 4, then singles.
template <int64_t KT>
void dw_band_pixels(const float* tile, const Geometry& g, int64_t oh0, int64_t oh1, const int64_t* off, const vf* wv,
                    vf bias, const GemmEpilogue& ep, vf lo, vf hi, float* out) {
  const int64_t taps = g.KH * g.KW, row_floats = g.Wp * kL, pixels = (oh1 - oh0) * g.OW;
  const int64_t OW = g.OW, rstep = g.sh * row_floats, cstep = g.sw * kL;
  // The tile cell of the next pixel, stepped along rows (no division per pixel).
  int64_t r = 0, c = 0;
  auto next_cell = [&]() {
    const float* p = tile + r * rstep + c * cstep;
    if (++c == OW) c = 0, ++r;
    return p;
  };
  const float* base[8];
  int64_t f = 0;
  for (; f + 8 <= pixels; f += 8) {
    for (int p = 0; p < 8; ++p) base[p] = next_cell();
    dw_pixels<8, KT>(base, off, wv, taps, bias, ep, lo, hi, out + f * kL);
  }
  if (f + 4 <= pixels) {
    for (int p = 0; p < 4; ++p) base[p] = next_cell();
    dw_pixels<4, KT>(base, off, wv, taps, bias, ep, lo, hi, out + f * kL);
    f += 4;
  }
  for (; f < pixels; ++f) {
    base[0] = next_cell();
    dw_pixels<1, KT>(base, off, wv, taps, bias, ep, lo, hi, out + f * kL);
  }
}

void run_band(const Band& b, const Geometry& g, const float* w, const float* bias, const GemmEpilogue& ep, float* tile,
              float* out) {
  const int64_t HW = g.H * g.W, OHW = g.OH * g.OW, taps = g.KH * g.KW;
  const int64_t rows = (b.oh1 - b.oh0 - 1) * g.sh + (g.KH - 1) * g.dh + 1;
  const int64_t ih_base = b.oh0 * g.sh - g.ph;  // input row of tile row 0
  const int64_t row_floats = g.Wp * kL;
  // Padding: rows outside the input, and the columns left and right of it.
  const int64_t ih_a = std::clamp<int64_t>(ih_base, 0, g.H), ih_b = std::clamp<int64_t>(ih_base + rows, ih_a, g.H);
  const int64_t left = std::min(g.pw, g.Wp), right = std::clamp<int64_t>(g.pw + g.W, left, g.Wp);
  for (int64_t r = 0; r < rows; ++r) {
    float* tr = tile + r * row_floats;
    const int64_t ih = ih_base + r;
    if (ih < ih_a || ih >= ih_b) {
      std::fill(tr, tr + row_floats, 0.0f);
      continue;
    }
    std::fill(tr, tr + left * kL, 0.0f);
    std::fill(tr + right * kL, tr + row_floats, 0.0f);
  }
  // Interior: the band's input rows are one contiguous run per channel; kL positions of kL
  // channels at a time, transposed so that each position's channels are one vector.
  {
    const int64_t W = g.W, Wp = g.Wp, pw = g.pw, f_end = ih_b * W;
    const float* xc = b.x + b.c0 * HW;
    vf m[kL];
    for (int64_t f0 = ih_a * W; f0 < f_end; f0 += kL) {
      const int64_t n = std::min(kL, f_end - f0);
      if (b.nc == kL) {
        for (int64_t l = 0; l < kL; ++l) m[l] = vmath::load_n(xc + l * HW + f0, n);
      } else {
        for (int64_t l = 0; l < kL; ++l) m[l] = l < b.nc ? vmath::load_n(xc + l * HW + f0, n) : vf{};
      }
      vmath::transpose(m);
      int64_t ih = f0 / W, iw = f0 % W;
      float* trow = tile + (ih - ih_base) * Wp * kL;
      if (n == kL && iw + kL <= W && iw + pw + kL <= Wp) {
        // All kL positions in one row and inside the tile: consecutive cells.
        float* d = trow + (iw + pw) * kL;
#pragma GCC unroll 16
        for (int64_t j = 0; j < kL; ++j) vmath::store(d + j * kL, m[j]);
        continue;
      }
      for (int64_t j = 0; j < n; ++j) {
        const int64_t pc = iw + pw;
        if (pc < Wp) vmath::store(trow + pc * kL, m[j]);
        if (++iw == W) iw = 0, trow += Wp * kL;
      }
    }
  }
  // Weights and bias of the block's channels, one vector per tap.
  vf wv[kMaxTaps];
  float tmp[kL];
  for (int64_t t = 0; t < taps; ++t) {
    for (int64_t l = 0; l < kL; ++l) tmp[l] = l < b.nc ? w[(b.c0 + l) * taps + t] : 0.0f;
    wv[t] = vmath::load(tmp);
  }
  for (int64_t l = 0; l < kL; ++l) tmp[l] = bias && l < b.nc ? bias[b.c0 + l] : 0.0f;
  const vf bv = vmath::load(tmp), lo = vmath::splat(ep.lo), hi = vmath::splat(ep.hi);
  int64_t off[kMaxTaps];
  for (int64_t ki = 0; ki < g.KH; ++ki)
    for (int64_t kj = 0; kj < g.KW; ++kj) off[ki * g.KW + kj] = ki * g.dh * row_floats + kj * g.dw * kL;
  if (taps == 9)
    dw_band_pixels<9>(tile, g, b.oh0, b.oh1, off, wv, bv, ep, lo, hi, out);
  else
    dw_band_pixels<0>(tile, g, b.oh0, b.oh1, off, wv, bv, ep, lo, hi, out);
  // Back to NCHW: the band's outputs are one contiguous run per channel.
  vf m[kL];
  const int64_t f_begin = b.oh0 * g.OW, f_end = b.oh1 * g.OW;
  for (int64_t f0 = f_begin; f0 < f_end; f0 += kL) {
    const int64_t n = std::min(kL, f_end - f0);
    for (int64_t j = 0; j < kL; ++j) m[j] = j < n ? vmath::load(out + (f0 - f_begin + j) * kL) : vf{};
    vmath::transpose(m);
    for (int64_t l = 0; l < b.nc; ++l) vmath::store_n(b.y + (b.c0 + l) * OHW + f0, m[l], n);
  }
}

}  // namespace

bool depthwise2d_blocked_fits(const WindowGeometry& g) { return g.kernel[0] * g.kernel[1] <= kMaxTaps; }

void depthwise2d_blocked(const float* x, const float* w, const float* bias, float* y, int64_t images, int64_t channels,
                         const Shape& in, const WindowGeometry& wg, const GemmEpilogue& ep, ThreadPool& pool) {
  Geometry g{in[0], in[1], wg.kernel[0], wg.kernel[1], wg.out[0], wg.out[1], wg.stride[0], wg.stride[1],
             wg.dilation[0], wg.dilation[1], wg.pad_begin[0], wg.pad_begin[1], 0};
  if (g.OH <= 0 || g.OW <= 0) return;
  if (g.KH * g.KW > kMaxTaps) fail(ErrorCode::kRuntime, "depthwise kernel of ", g.KH * g.KW, " taps (at most ", kMaxTaps, ")");
  g.Wp = (g.OW - 1) * g.sw + (g.KW - 1) * g.dw + 1;
  // Output rows per band: as many as keep the transposed input tile near kTileFloats.
  const int64_t row_floats = g.Wp * kL;
  const int64_t fit_rows = std::max<int64_t>(1, kTileFloats / row_floats);
  const int64_t band_rows = std::clamp<int64_t>((fit_rows - (g.KH - 1) * g.dh - 1) / g.sh + 1, 1, g.OH);
  const int64_t bands = (g.OH + band_rows - 1) / band_rows, blocks = (channels + kL - 1) / kL;
  const int64_t max_rows = (band_rows - 1) * g.sh + (g.KH - 1) * g.dh + 1;
  const size_t tile_floats = static_cast<size_t>(max_rows * row_floats), out_floats = static_cast<size_t>(band_rows * g.OW * kL);
  const int64_t cost = band_rows * g.OW * kL * g.KH * g.KW;
  parallel_range(pool, images * blocks * bands, cost, [&](int64_t t0, int64_t t1) {
    float* tile = nullptr;
    float* out = nullptr;
    carve(Workspace::kWindow, [&](Carver& c) {
      tile = c.take<float>(static_cast<int64_t>(tile_floats));
      out = c.take<float>(static_cast<int64_t>(out_floats));
    });
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / (blocks * bands), blk = (t / bands) % blocks, band = t % bands;
      Band b{x + n * channels * g.H * g.W, y + n * channels * g.OH * g.OW, blk * kL, std::min(kL, channels - blk * kL),
             band * band_rows, std::min(g.OH, (band + 1) * band_rows)};
      run_band(b, g, w, bias, ep, tile, out);
    }
  });
}

}  // namespace onyx::cpu
