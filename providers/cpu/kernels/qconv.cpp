// CPU kernels for 8-bit convolutions channels-last (the onyx.nhwc form of QLinearConv, and the
// int8 MaxPool form): x [N, H, W, C] and y [N, OH, OW, M], uint8 or int8, weights int8 or uint8
// per tensor or per output channel.
// - Group 1: one integer GEMM (qgemm.hpp) with pixels as rows, the windows read in place from the
//   input (a copy padded with the input's zero point only where windows reach outside it, or
//   where C is not a multiple of 4), the requantisation in the GEMM's epilogue.
// - Depthwise: per output pixel, a vector of channels at a time, in float32 (every partial sum
//   of at most 258 taps of products of 9-bit integers is an integer below 2^24, so exact); the
//   bias is added as an integer and the result requantised as the GEMM's epilogue does.
// Requantisation: q = clamp(round_half_even((acc + bias) * x_scale * w_scale / y_scale) + y_zp),
// the multiplier computed in float32 in that order (as ONNX Runtime does).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/qconv_add.hpp"
#include "kernels/qgemm.hpp"
#include "kernels/qmath.hpp"
#include "kernels/vmath.hpp"
#include "ops/layout.hpp"
#if defined(__SSSE3__)
#include <tmmintrin.h>
#endif
#include "ops/nn.hpp"

namespace onyx::cpu {

namespace {

using vmath::kLanes;
using vmath::vf;
using vmath::vi;

const TypeInfo* type_at(const std::vector<const TypeInfo*>& types, size_t i) {
  return i < types.size() ? types[i] : nullptr;
}

bool accepts_qconv(const Node& node, const std::vector<const TypeInfo*>& in, Decline* why) {
  const TypeInfo* x = type_at(in, 0);
  const TypeInfo* w = type_at(in, 3);
  if (!x || !x->has_shape || x->shape.size() != 4)
    return decline(why, DeclineCode::kUnsupportedType, "channels-last QLinearConv on the CPU is 2-D only (rank-4 input)");
  if (x->shape[3] <= 0) return decline(why, DeclineCode::kDynamicShape, "channels-last QLinearConv needs its channel count");
  if (!w || !w->has_shape || w->shape.size() != 4 || w->shape[0] <= 0 || w->shape[1] <= 0)
    return decline(why, DeclineCode::kDynamicShape, "channels-last QLinearConv on the CPU needs a 4-d weight of known shape");
  const int64_t group = node.attr_int("group", 1), C = x->shape[3];
  if (group == 1 || (w->shape[1] == 1 && group == C && w->shape[0] == C)) return true;
  return decline(why, DeclineCode::kUnsupportedAttribute,
                 str("channels-last QLinearConv on the CPU: group 1 or depthwise only (group ", group, ")"));
}

bool accepts_qpool(const Node& node, const std::vector<const TypeInfo*>& in, Decline* why) {
  const TypeInfo* x = type_at(in, 0);
  if (!x || !x->has_shape || x->shape.size() != 4)
    return decline(why, DeclineCode::kUnsupportedType, "channels-last 8-bit MaxPool on the CPU is 2-D only (rank-4 input)");
  if (x->shape[3] <= 0) return decline(why, DeclineCode::kDynamicShape, "channels-last MaxPool needs its channel count");
  return true;
}

/// A scalar or per-channel float parameter (scales) as `count` values.
void read_params(const Tensor& t, int64_t count, float* out, const char* name, int idx, const Node& node) {
  if (!(t.numel() == 1 || (t.rank() == 1 && t.numel() == count)))
    fail(ErrorCode::kInvalidArgument, node.label(), ": ", name, " (input ", idx, ") must be a scalar or have ", count,
         " values, got shape ", t.shape().to_string());
  for (int64_t i = 0; i < count; ++i) {
    const int64_t k = t.numel() == 1 ? 0 : i;
    switch (t.dtype()) {
      case DType::kFloat: out[i] = t.data<float>()[k]; break;
      case DType::kFloat16: out[i] = Float16::to_float(t.data<Float16>()[k]); break;
      case DType::kBFloat16: out[i] = BFloat16::to_float(t.data<BFloat16>()[k]); break;
      default: fail(ErrorCode::kInvalidArgument, node.label(), ": ", name, " (input ", idx, ") must be float, got ", dtype_name(t.dtype()));
    }
  }
}

/// A scalar or per-channel 8-bit zero point (of `dt`) as int32 values.
void read_zps(const Tensor* t, DType dt, int64_t count, int32_t* out, const char* name, int idx, const Node& node) {
  if (!t) {
    std::fill(out, out + count, 0);
    return;
  }
  if (t->dtype() != dt)
    fail(ErrorCode::kInvalidArgument, node.label(), ": ", name, " (input ", idx, ") has type ", dtype_name(t->dtype()),
         ", its tensor ", dtype_name(dt));
  if (!(t->numel() == 1 || (t->rank() == 1 && t->numel() == count)))
    fail(ErrorCode::kInvalidArgument, node.label(), ": ", name, " (input ", idx, ") must be a scalar or have ", count,
         " values, got shape ", t->shape().to_string());
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t raw = static_cast<const uint8_t*>(t->raw_data())[t->numel() == 1 ? 0 : i];
    out[i] = dt == DType::kInt8 ? static_cast<int32_t>(static_cast<int8_t>(raw)) : static_cast<int32_t>(raw);
  }
}

bool is_q8(DType t) { return t == DType::kUInt8 || t == DType::kInt8; }

/// The zero-padded input of a channels-last window: the rows and columns the windows span from
/// (-top, -left), channels rounded up to `cp`, filled with the zero point; `needed` when the
/// windows reach outside the input or the channels are rounded up (else the input is read as it
/// is, H and W its own).
struct QPadded {
  int64_t H = 0, W = 0, top = 0, left = 0, cp = 0;
  bool needed = false;
  static QPadded of(const WindowGeometry& g, int64_t in_h, int64_t in_w, int64_t c, int64_t cp) {
    QPadded p;
    p.H = (g.out[0] - 1) * g.stride[0] + (g.kernel[0] - 1) * g.dilation[0] + 1;
    p.W = (g.out[1] - 1) * g.stride[1] + (g.kernel[1] - 1) * g.dilation[1] + 1;
    p.top = g.pad_begin[0];
    p.left = g.pad_begin[1];
    p.cp = cp;
    p.needed = p.top > 0 || p.left > 0 || p.H > in_h || p.W > in_w || cp != c;
    if (!p.needed) {
      p.H = in_h;
      p.W = in_w;
    }
    return p;
  }
  /// Writes the copy of n_images images [h, w, c] to dst ([n_images, H, W, cp]).
  void copy(const uint8_t* src, int64_t n_images, int64_t h, int64_t w, int64_t c, uint8_t fill, uint8_t* dst,
            ThreadPool& pool) const {
    // Columns [lo, hi) of a padded row come from the input (column j is input column j - left).
    const int64_t lo = std::min(left, W), hi = std::clamp(w + left, lo, W);
    parallel_range(pool, n_images * H, W * cp, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / H, ih = r % H - top;
        uint8_t* d = dst + r * W * cp;
        if (ih < 0 || ih >= h || cp != c) std::memset(d, fill, static_cast<size_t>(W * cp));
        if (ih < 0 || ih >= h) continue;
        const uint8_t* s = src + ((n * h + ih) * w + lo - left) * c;
        if (cp == c) {
          std::memset(d, fill, static_cast<size_t>(lo * cp));
          std::memcpy(d + lo * cp, s, static_cast<size_t>((hi - lo) * c));
          std::memset(d + hi * cp, fill, static_cast<size_t>((W - hi) * cp));
          continue;
        }
        if (c == 3 && cp == 4) {  // an image's 3 channels (the stem convolution)
          int64_t j = lo;
#if defined(__SSSE3__)
          // 4 pixels at a time: their 12 bytes spread to 16, the fourth byte of each the fill.
          const __m128i spread = _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
          const __m128i fourth = _mm_setr_epi8(0, 0, 0, static_cast<char>(fill), 0, 0, 0, static_cast<char>(fill), 0, 0, 0,
                                               static_cast<char>(fill), 0, 0, 0, static_cast<char>(fill));
          for (; j + 6 <= hi; j += 4) {  // (reads 16 bytes: 4 pixels and 4 of the next ones)
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + (j - lo) * 3));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + j * 4), _mm_or_si128(_mm_shuffle_epi8(v, spread), fourth));
          }
#endif
          for (; j < hi; ++j)
            for (int64_t k = 0; k < 3; ++k) d[j * 4 + k] = s[(j - lo) * 3 + k];
        } else {
          for (int64_t j = lo; j < hi; ++j) std::memcpy(d + j * cp, s + (j - lo) * c, static_cast<size_t>(c));
        }
      }
    });
  }
};

// ---- depthwise, in float32 ----

/// kLanes (or `lanes` < kLanes) bytes at p as floats, read as int8 when kSigned.
template <bool kSigned>
inline vf load_bytes(const uint8_t* p, int64_t lanes) {
  using S = std::conditional_t<kSigned, int8_t, uint8_t>;
  const S* q = reinterpret_cast<const S*>(p);
  return __builtin_convertvector(lanes == kLanes ? qmath::load_int(q) : qmath::load_int_n(q, lanes), vf);
}

struct DwArgs {
  const float* taps;     // [T][C]: w - w_zp
  const float* tap_sum;  // [C]: x_zp * sum over taps (taken off the raw sum)
  const int32_t* bias;   // [C] or null
  const float* mult;     // [C]
  int32_t y_zp, lo, hi;
  int32_t x_zp;  // the padding's value
};

/// The requantisation of `lanes` channels from c, its constants loaded once for a run of pixels
/// (the stores through uint8_t pointers would otherwise make the compiler reload them from
/// DwArgs at every pixel).
struct DwQuant {
  vi bias;
  vf mult, lo, hi;
  vi zp;
  DwQuant(const DwArgs& a, int64_t c, int64_t lanes) {
    bias = vi{};
    if (a.bias) std::memcpy(&bias, a.bias + c, static_cast<size_t>(lanes) * 4);
    mult = lanes == kLanes ? vmath::load(a.mult + c) : vmath::load_n(a.mult + c, lanes);
    lo = vmath::splat(static_cast<float>(a.lo - a.y_zp));
    hi = vmath::splat(static_cast<float>(a.hi - a.y_zp));
    zp = vi{} + a.y_zp;
  }
};

/// Requantises kLanes (or `lanes`) exact sums and stores them at y.
template <bool kYSigned>
inline void dw_store(const DwQuant& k, vf acc, int64_t lanes, uint8_t* y) {
  const vf f = qmath::clamp(__builtin_convertvector(__builtin_convertvector(acc, vi) + k.bias, vf) * k.mult, k.lo, k.hi);
  const vi q = qmath::round_even(f) + k.zp;
  using S = std::conditional_t<kYSigned, int8_t, uint8_t>;
  S* dst = reinterpret_cast<S*>(y);
  if (lanes == kLanes)
    qmath::store_int(dst, q);
  else
    qmath::store_int_n(dst, q, lanes);
}

/// A whole vector of channels from c along one output row: the taps' weights stay in registers
/// (kT of them; 0: T at run time) while the row's pixels go by.
template <bool kXSigned, bool kYSigned, int kT>
inline void dw_row_block(const DwArgs& a, const uint8_t* row, int64_t sw, const int64_t* toff, int64_t T, int64_t C, int64_t c,
                         int64_t OW, uint8_t* y) {
  constexpr int kMax = kT > 0 ? kT : 1;
  vf w[kMax];
  if constexpr (kT > 0)
    for (int t = 0; t < kT; ++t) w[t] = vmath::load(a.taps + t * C + c);
  const vf ts = vmath::load(a.tap_sum + c);
  const DwQuant k(a, c, kLanes);
  for (int64_t ow = 0; ow < OW; ++ow) {
    const uint8_t* win = row + ow * sw * C + c;
    vf acc = -ts;
    if constexpr (kT > 0) {
      for (int t = 0; t < kT; ++t) acc += load_bytes<kXSigned>(win + toff[t], kLanes) * w[t];
    } else {
      for (int64_t t = 0; t < T; ++t) acc += load_bytes<kXSigned>(win + toff[t], kLanes) * vmath::load(a.taps + t * C + c);
    }
    dw_store<kYSigned>(k, acc, kLanes, y + ow * C + c);
  }
}

/// R output pixels of a 3 x 3 undilated kernel at stride S, a whole vector of channels from c:
/// each input vector of a tap row is loaded and converted once and serves every output whose
/// window covers it (3 at stride 1), the 9 taps' weights in registers. `row`: the window row of the
/// run's first output at channel 0; `W`: the padded input's width.
template <bool kXSigned, int S, int R>
__attribute__((always_inline)) inline void dw3_run(const uint8_t* row, int64_t W, int64_t C, int64_t c, const vf (&w)[9], vf ts,
                                                   vf (&out)[8]) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = -ts;
#pragma GCC unroll 3
  for (int kh = 0; kh < 3; ++kh) {
    const uint8_t* p = row + kh * W * C + c;
#pragma GCC unroll 24
    for (int q = 0; q < (R - 1) * S + 3; ++q) {
      const vf x = load_bytes<kXSigned>(p + q * C, kLanes);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const int kw = q - r * S;
        if (kw >= 0 && kw < 3) out[r] += x * w[kh * 3 + kw];
      }
    }
  }
}

/// A whole vector of channels from c along one output row of a 3 x 3 undilated kernel at stride
/// S: runs of 8 outputs, then of 4, 2, 1 (dw3_run).
template <bool kXSigned, bool kYSigned, int S>
void dw3_row_block(const DwArgs& a, const uint8_t* row, int64_t W, int64_t C, int64_t c, int64_t OW, uint8_t* y) {
  vf w[9];
  for (int t = 0; t < 9; ++t) w[t] = vmath::load(a.taps + t * C + c);
  const vf ts = vmath::load(a.tap_sum + c);
  const DwQuant k(a, c, kLanes);
  vf out[8];
  int64_t ow = 0;
  auto run = [&]<int R>() {
    for (; ow + R <= OW; ow += R) {
      dw3_run<kXSigned, S, R>(row + ow * S * C, W, C, c, w, ts, out);
      for (int r = 0; r < R; ++r) dw_store<kYSigned>(k, out[r], kLanes, y + (ow + r) * C + c);
    }
  };
  run.template operator()<8>();
  run.template operator()<4>();
  run.template operator()<2>();
  run.template operator()<1>();
}

/// The residual sum of a QLinearConvAdd applied to each block of the GEMM's output as it is
/// written (QGemmOut::after_block): rows are output pixels of the chunk of images whose output
/// starts `offset` elements into y (and Z).
struct BlockSum {
  const QConvAddSum* sum;
  uint8_t* y;  // the output
  int64_t offset, ldc;
};

void add_block_sum(const void* arg, int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
  const BlockSum& a = *static_cast<const BlockSum*>(arg);
  if (j0 == 0 && cols == a.ldc) {  // whole rows: one run
    a.sum->apply(a.y, a.offset + i0 * a.ldc, rows * cols);
    return;
  }
  for (int64_t r = 0; r < rows; ++r) a.sum->apply(a.y, a.offset + (i0 + r) * a.ldc + j0, cols);
}

/// One output pixel's `lanes` channels from c, its window (top-left input pixel (ih0, iw0)) read
/// from the unpadded input with bounds: a tap in the padding counts as the zero point it stands
/// for (the sums are exact integers, so the result is the padded copy's to the bit).
template <bool kXSigned, bool kYSigned>
inline void dw_edge_pixel(const DwArgs& a, const uint8_t* x, int64_t H, int64_t W, int64_t C, int64_t n, int64_t ih0, int64_t iw0,
                          const WindowGeometry& g, int64_t c, int64_t lanes, uint8_t* y) {
  const int64_t KH = g.kernel[0], KW = g.kernel[1];
  auto ld = [&](const float* p) { return lanes == kLanes ? vmath::load(p) : vmath::load_n(p, lanes); };
  vf acc = -ld(a.tap_sum + c), pad_w{};
  for (int64_t kh = 0; kh < KH; ++kh) {
    const int64_t ih = ih0 + kh * g.dilation[0];
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t iw = iw0 + kw * g.dilation[1];
      const vf w = ld(a.taps + (kh * KW + kw) * C + c);
      if (ih >= 0 && ih < H && iw >= 0 && iw < W)
        acc += load_bytes<kXSigned>(x + ((n * H + ih) * W + iw) * C + c, lanes) * w;
      else
        pad_w += w;
    }
  }
  acc += vmath::splat(static_cast<float>(a.x_zp)) * pad_w;
  dw_store<kYSigned>(DwQuant(a, c, lanes), acc, lanes, y + c);
}

/// A depthwise convolution over x [images, H, W, C], whose windows start at (oh s0 - top,
/// ow s1 - left): the outputs of a row whose windows lie inside x go through the row kernels
/// above, reading x at its own width; those whose windows reach into the padding (or that hold
/// the channels past the last whole vector) take dw_edge_pixel. Over a padded copy (top = left =
/// 0) every window lies inside; over the input itself (large strided convolutions, where the copy
/// reads and writes four times the output's plane) the first and last rows and columns are edges.
template <bool kXSigned, bool kYSigned>
void depthwise_q(const DwArgs& a, const uint8_t* x, int64_t H, int64_t W, int64_t top, int64_t left, int64_t images, int64_t C,
                 const WindowGeometry& g, uint8_t* y, ThreadPool& pool) {
  const int64_t OH = g.out[0], OW = g.out[1], KH = g.kernel[0], KW = g.kernel[1], T = KH * KW;
  const int64_t s0 = g.stride[0], s1 = g.stride[1];
  int64_t toff[64];
  for (int64_t kh = 0; kh < KH; ++kh)
    for (int64_t kw = 0; kw < KW; ++kw) toff[kh * KW + kw] = (kh * g.dilation[0] * W + kw * g.dilation[1]) * C;
  // 3 x 3 without dilation (MobileNet's) slides along the rows (dw3_row_block).
  const bool dw3 = KH == 3 && KW == 3 && g.dilation[0] == 1 && g.dilation[1] == 1;
  // The output columns whose windows lie inside x's columns: [ow_lo, ow_hi).
  const int64_t span = (KW - 1) * g.dilation[1];
  const int64_t ow_lo = std::min(OW, (left + s1 - 1) / s1);
  const int64_t ow_hi = std::clamp<int64_t>(W - 1 - span + left >= 0 ? (W - 1 - span + left) / s1 + 1 : 0, ow_lo, OW);
  // Tasks: an output row's channels in groups of up to 4 vectors, so that a small plane (14 x 14
  // over 576 channels: 14 rows) still splits evenly over the threads.
  const int64_t vectors = C / kLanes, group = std::min<int64_t>(4, std::max<int64_t>(1, vectors));
  const int64_t groups = std::max<int64_t>(1, (vectors + group - 1) / group) + (C % kLanes ? 1 : 0);
  parallel_range(pool, images * OH * groups, OW * std::min(C, group * kLanes) * T, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t / groups, gi = t % groups;
      const int64_t n = r / OH, oh = r % OH, ih0 = oh * s0 - top;
      const bool row_inside = ih0 >= 0 && ih0 + (KH - 1) * g.dilation[0] <= H - 1;
      uint8_t* yr = y + r * OW * C;
      auto edge = [&](int64_t ow, int64_t c, int64_t lanes) {
        dw_edge_pixel<kXSigned, kYSigned>(a, x, H, W, C, n, ih0, ow * s1 - left, g, c, lanes, yr + ow * C);
      };
      const int64_t c0 = gi * group * kLanes;
      if (c0 >= vectors * kLanes) {  // the channels past the last whole vector
        for (int64_t ow = 0; ow < OW; ++ow) edge(ow, vectors * kLanes, C - vectors * kLanes);
        continue;
      }
      const int64_t c1 = std::min(vectors * kLanes, c0 + group * kLanes);
      const int64_t lo = row_inside ? ow_lo : OW, hi = row_inside ? ow_hi : OW;
      for (int64_t c = c0; c < c1; c += kLanes) {
        for (int64_t ow = 0; ow < lo; ++ow) edge(ow, c, kLanes);
        if (lo < hi) {
          const uint8_t* row = x + ((n * H + ih0) * W + lo * s1 - left) * C;
          if (dw3 && s1 == 1)
            dw3_row_block<kXSigned, kYSigned, 1>(a, row, W, C, c, hi - lo, yr + lo * C);
          else if (dw3 && s1 == 2)
            dw3_row_block<kXSigned, kYSigned, 2>(a, row, W, C, c, hi - lo, yr + lo * C);
          else if (T == 9)
            dw_row_block<kXSigned, kYSigned, 9>(a, row, s1, toff, T, C, c, hi - lo, yr + lo * C);
          else
            dw_row_block<kXSigned, kYSigned, 0>(a, row, s1, toff, T, C, c, hi - lo, yr + lo * C);
        }
        for (int64_t ow = hi; ow < OW; ++ow) edge(ow, c, kLanes);
      }
    }
  });
}

/// Strided depthwise convolutions over planes of at least this many pixels run without the
/// padded copy (MobileNetV2's 112x112 -> 56x56 one: 196 -> 142 us on a Xeon, 1 thread). At stride
/// 1, and on smaller planes, the copy costs less than the edges' bounded windows (at stride 1 on
/// 56x56 and 28x28: 10-25% slower without it).
constexpr int64_t kDwDirectPixels = 28 * 28;

/// Largest kernel volume of the float32 depthwise path (exact sums; the tap pointer array).
constexpr int64_t kMaxDwTaps = 64;

class QConvNhwcKernel final : public Kernel {
 public:
  explicit QConvNhwcKernel(const KernelCreateInfo& info)
      : node_(info.node),
        sum_(info.node.op_type == "QLinearConvAdd"),
        attrs_(WindowAttrs::of(info.node, false)),
        group_(info.node.attr_int("group", 1)),
        kernel_shape_(info.node.attr_ints("kernel_shape")) {
    if (group_ <= 0) fail(ErrorCode::kInvalidGraph, node_.label(), ": group must be positive");
    const Tensor* w = info.constant(3);
    const Tensor* wz = info.node.has_input(5) ? info.constant(5) : nullptr;
    const bool wz_ok = !info.node.has_input(5) || wz;
    if (w && w->rank() == 4 && is_q8(w->dtype()) && wz_ok) prepared_ = prepare(*w, wz);
    // With constant scales and zero points (as quantizers write them), what each run would
    // compute from them is computed here once: per output channel C to M of them, a loop (and
    // for depthwise C x taps more) that ran on one thread before every run's parallel work.
    const Tensor* xs = info.constant(1);
    const Tensor* ws = info.constant(4);
    const Tensor* ys = info.constant(6);
    const bool xz_ok = !info.node.has_input(2) || info.constant(2);
    const bool yz_ok = !info.node.has_input(7) || info.constant(7);
    if (prepared_.M > 0 && xs && ws && ys && xz_ok && yz_ok) {
      const int64_t M = prepared_.M;
      const DType x_dt = info.input_dtype(0), y_dt = info.output_dtype(0);
      if (is_q8(x_dt) && is_q8(y_dt)) {
        read_zps(info.node.has_input(2) ? info.constant(2) : nullptr, x_dt, 1, &consts_.x_zp, "x_zero_point", 2, node_);
        read_zps(info.node.has_input(7) ? info.constant(7) : nullptr, y_dt, 1, &consts_.y_zp, "y_zero_point", 7, node_);
        consts_.mult.resize(static_cast<size_t>(M));
        multipliers(*xs, *ws, *ys, M, consts_.mult.data());
        if (group_ != 1) consts_.tap_sum = tap_sums(prepared_, consts_.x_zp);
        consts_.x_dtype = x_dt;
        consts_.y_dtype = y_dt;
      }
    }
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& xs = ctx.input(1);
    const Tensor* xz = ctx.optional_input(2);
    const Tensor& w = ctx.input(3);
    const Tensor& ws = ctx.input(4);
    const Tensor* wz = ctx.optional_input(5);
    const Tensor& ys = ctx.input(6);
    const Tensor* yz = ctx.optional_input(7);
    const Tensor* bias = ctx.optional_input(8);
    Tensor& y = ctx.output(0);
    if (x.rank() != 4 || w.rank() != 4)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": channels-last QLinearConv needs a 4-d input and weight, got ",
           x.shape().to_string(), " and ", w.shape().to_string());
    if (!is_q8(x.dtype()) || !is_q8(w.dtype()) || !is_q8(y.dtype()))
      fail(ErrorCode::kInvalidArgument, node_.label(), ": x, w and y must be uint8 or int8");
    const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3), M = w.dim(0);
    if (w.dim(1) * group_ != C || (group_ != 1 && (group_ != C || M != C)))
      fail(ErrorCode::kInvalidArgument, node_.label(), ": input channels ", C, " and weight ", w.shape().to_string(),
           " do not fit group ", group_);
    if (bias && (bias->dtype() != DType::kInt32 || bias->rank() != 1 || bias->dim(0) != M))
      fail(ErrorCode::kInvalidArgument, node_.label(), ": B (input 8) must be int32 with ", M, " values, got ",
           dtype_name(bias->dtype()), bias->shape().to_string());
    const int64_t KH = w.dim(2), KW = w.dim(3);
    if (!kernel_shape_.empty() && !(kernel_shape_ == Shape{KH, KW}))
      fail(ErrorCode::kInvalidArgument, node_.label(), ": kernel_shape ", kernel_shape_.to_string(), " does not match w (input 3) ",
           w.shape().to_string());
    const WindowGeometry g = window_geometry(attrs_, node_, Shape{H, W}, Shape{KH, KW});
    // Weights prepared at creation (constant) when they fit, else prepared below; the constants
    // of creation when they are for those weights and these types, else read now.
    const bool prepared_fits = prepared_.M == M && prepared_.C == C && prepared_.KH == KH && prepared_.KW == KW &&
                               prepared_.w_dtype == w.dtype();
    const bool use_cached =
        prepared_fits && !consts_.mult.empty() && consts_.x_dtype == x.dtype() && consts_.y_dtype == y.dtype();
    int32_t xzv = consts_.x_zp, yzv = consts_.y_zp;
    if (!use_cached) {
      read_zps(xz, x.dtype(), 1, &xzv, "x_zero_point", 2, node_);
      read_zps(yz, y.dtype(), 1, &yzv, "y_zero_point", 7, node_);
    }
    if (y.numel() == 0) return;
    QConvAddSum sum;
    if (sum_) sum = qconv_add_sum(ctx, y);
    const bool depthwise = group_ != 1;
    if (depthwise && KH * KW > kMaxDwTaps)
      fail(ErrorCode::kNotImplemented, node_.label(), ": channels-last depthwise QLinearConv takes at most ", kMaxDwTaps,
           " taps, got ", KH, "x", KW);
    Prepared now;
    const Prepared* p = &prepared_;
    if (!prepared_fits) {
      now = prepare(w, wz);
      p = &now;
    }
    const float* mult = consts_.mult.data();
    const float* tap_sum = consts_.tap_sum.data();
    if (!use_cached) {
      float *m_now = nullptr, *t_now = nullptr;
      carve(Workspace::kQuant, [&](Carver& c) {
        m_now = c.take<float>(M);
        t_now = depthwise ? c.take<float>(M) : nullptr;
      });
      multipliers(xs, ws, ys, M, m_now);
      if (depthwise) tap_sums(*p, xzv, t_now);
      mult = m_now;
      tap_sum = t_now;
    }
    const bool y_signed = y.dtype() == DType::kInt8, x_signed = x.dtype() == DType::kInt8;
    const int32_t lo = y_signed ? -128 : 0, hi = y_signed ? 127 : 255;
    const int32_t* pb = bias ? bias->data<int32_t>() : nullptr;
    const auto* px = static_cast<const uint8_t*>(x.raw_data());
    auto* py = static_cast<uint8_t*>(y.raw_data());
    const int64_t OH = g.out[0], OW = g.out[1], pixels = OH * OW;
    const int64_t cp = depthwise ? C : (C + 3) / 4 * 4;
    QPadded pad = QPadded::of(g, H, W, C, cp);
    const bool dw_direct = depthwise && pad.needed && H * W >= kDwDirectPixels && (g.stride[0] > 1 || g.stride[1] > 1);
    if (dw_direct) pad.needed = false;  // (the windows are read with bounds instead)
    // Images in groups whose padded copy and pixel offsets stay within about 64 MiB.
    const int64_t per_image = (pad.needed ? pad.H * pad.W * cp : 0) + 8 * pixels;
    const int64_t chunk = std::clamp<int64_t>((int64_t{1} << 26) / std::max<int64_t>(1, per_image), 1, N);
    const int64_t quads = KH * KW * cp / 4;
    uint8_t* xp = nullptr;
    int64_t* row_off = nullptr;
    int64_t* quad_off = nullptr;
    carve(Workspace::kConv, [&](Carver& c) {
      xp = pad.needed ? c.take<uint8_t>(chunk * pad.H * pad.W * cp) : nullptr;
      row_off = depthwise ? nullptr : c.take<int64_t>(chunk * pixels);
      quad_off = depthwise ? nullptr : c.take<int64_t>(quads);
    });
    if (!depthwise) {
      for (int64_t q = 0, kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          for (int64_t c4 = 0; c4 < cp; c4 += 4) quad_off[q++] = (kh * g.dilation[0] * pad.W + kw * g.dilation[1]) * cp + c4;
    }
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t images = std::min(chunk, N - n0);
      const uint8_t* base = px + n0 * H * W * C;
      if (pad.needed) {
        pad.copy(base, images, H, W, C, static_cast<uint8_t>(xzv), xp, ctx.pool());
        base = xp;
      }
      uint8_t* yb = py + n0 * pixels * M;
      if (depthwise) {
        const DwArgs a{p->taps.data(), tap_sum, pb, mult, yzv, lo, hi, xzv};
        // Over the padded copy (or an input that needs none) every window lies inside.
        const int64_t xh = dw_direct ? H : pad.H, xw = dw_direct ? W : pad.W;
        const int64_t top = dw_direct ? g.pad_begin[0] : 0, left = dw_direct ? g.pad_begin[1] : 0;
        auto run = [&]<bool XS, bool YS>() { depthwise_q<XS, YS>(a, base, xh, xw, top, left, images, C, g, yb, ctx.pool()); };
        if (x_signed)
          y_signed ? run.template operator()<true, true>() : run.template operator()<true, false>();
        else
          y_signed ? run.template operator()<false, true>() : run.template operator()<false, false>();
        continue;
      }
      // A 1x1 window at stride 1 over an unpadded input: A is the input itself, [pixels, C].
      QGemmA a = QGemmA::matrix(base, cp, x_signed, xzv);
      if (!(KH == 1 && KW == 1 && g.stride[0] == 1 && g.stride[1] == 1 && !pad.needed)) {
        for (int64_t i = 0, n = 0; n < images; ++n)
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) row_off[i++] = ((n * pad.H + oh * g.stride[0]) * pad.W + ow * g.stride[1]) * cp;
        a.row_off = row_off;
        a.quad_off = quad_off;
      }
      QGemmOut o = QGemmOut::quant8(yb, M, mult, yzv, y_signed, pb);
      const BlockSum block_sum{&sum, py, n0 * pixels * M, M};
      if (sum_) {
        o.after_block = add_block_sum;
        o.after_block_arg = &block_sum;
      }
      qgemm(a, p->packed, images * pixels, o, &ctx.pool());
    }
    if (sum_ && depthwise) qconv_add_in_place(sum, y, ctx.pool());
  }

 private:
  struct Prepared {
    int64_t M = -1, C = -1, KH = -1, KW = -1;
    DType w_dtype = DType::kUndefined;
    QPackedB packed;          // group 1: B[(kh KW + kw) cp + c][m]
    std::vector<float> taps;  // depthwise: taps[(kh KW + kw) C + c] = w - w_zp
  };

  /// The requantisation multipliers x_scale w_scale[m] / y_scale of the M output channels (in
  /// that order, as ONNX Runtime computes them), into out.
  void multipliers(const Tensor& xs, const Tensor& ws, const Tensor& ys, int64_t M, float* out) const {
    float xsv = 0, ysv = 0;
    read_params(xs, 1, &xsv, "x_scale", 1, node_);
    read_params(ys, 1, &ysv, "y_scale", 6, node_);
    read_params(ws, M, out, "w_scale", 4, node_);
    for (int64_t m = 0; m < M; ++m) out[m] = xsv * out[m] / ysv;
  }

  /// Per channel, x_zp times the sum of the depthwise taps (w - w_zp), into out (p.M values).
  static void tap_sums(const Prepared& p, int32_t x_zp, float* out) {
    const int64_t C = p.M, T = p.KH * p.KW;
    for (int64_t ch = 0; ch < C; ++ch) {
      float s = 0;
      for (int64_t t = 0; t < T; ++t) s += p.taps[static_cast<size_t>(t * C + ch)];
      out[ch] = static_cast<float>(x_zp) * s;  // exact: integers below 2^24
    }
  }
  static std::vector<float> tap_sums(const Prepared& p, int32_t x_zp) {
    std::vector<float> v(static_cast<size_t>(p.M));
    tap_sums(p, x_zp, v.data());
    return v;
  }

  Prepared prepare(const Tensor& w, const Tensor* wz) const {
    Prepared p;
    p.M = w.dim(0);
    p.KH = w.dim(2);
    p.KW = w.dim(3);
    p.w_dtype = w.dtype();
    const int64_t M = p.M, Cg = w.dim(1), T = p.KH * p.KW;
    p.C = Cg * group_;
    std::vector<int32_t> zp(static_cast<size_t>(M));
    read_zps(wz, w.dtype(), M, zp.data(), "w_zero_point", 5, node_);
    const auto* pw = static_cast<const uint8_t*>(w.raw_data());
    const bool w_signed = w.dtype() == DType::kInt8;
    if (group_ != 1) {
      p.taps.assign(static_cast<size_t>(T * M), 0.0f);
      for (int64_t c = 0; c < M; ++c)
        for (int64_t t = 0; t < T; ++t) {
          const int32_t v = w_signed ? static_cast<int8_t>(pw[c * T + t]) : pw[c * T + t];
          p.taps[static_cast<size_t>(t * M + c)] = static_cast<float>(v - zp[static_cast<size_t>(c)]);
        }
      return p;
    }
    // B[k][m] with k = (tap, channel rounded up to 4): the padded channels' rows hold the
    // weights' zero point (their value minus it is 0).
    const int64_t cp = (Cg + 3) / 4 * 4, K = T * cp;
    std::vector<uint8_t> b(static_cast<size_t>(K * M));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < cp; ++c)
          b[static_cast<size_t>((t * cp + c) * M + m)] =
              c < Cg ? pw[(m * Cg + c) * T + t] : static_cast<uint8_t>(zp[static_cast<size_t>(m)]);
    const bool per_channel = wz && wz->numel() != 1;
    p.packed = qpack_b(b.data(), !w_signed, K, M, M, 1, zp.data(), per_channel ? M : 1);
    return p;
  }

  const Node& node_;
  bool sum_;  // QLinearConvAdd: the residual sum fused in (qconv_add.hpp)
  WindowAttrs attrs_;
  int64_t group_ = 1;
  Shape kernel_shape_;  // the attribute (empty when absent)
  Prepared prepared_;
  /// From constant scales and zero points, for prepared_ (mult empty: none).
  struct Consts {
    std::vector<float> mult;     // x_scale w_scale[m] / y_scale
    std::vector<float> tap_sum;  // depthwise: tap_sums(prepared_, x_zp)
    int32_t x_zp = 0, y_zp = 0;
    DType x_dtype = DType::kUndefined, y_dtype = DType::kUndefined;
  } consts_;
};

std::unique_ptr<Kernel> make_qconv_nhwc(const KernelCreateInfo& info) { return std::make_unique<QConvNhwcKernel>(info); }

// ---- MaxPool over 8-bit values, channels-last ----

struct QMaxPoolNhwc {
  WindowAttrs attrs;
  Shape kernel;
};

/// The maximum over a window's taps (tap t at x + off[t]) of `lanes` bytes from channel c, as T
/// (uint8 or int8): R registers of 32 bytes kept across the taps and stored once.
template <class T, int R>
inline void max_taps(const T* x, const int64_t* off, int64_t taps, int64_t c, T* y) {
  typedef T vb __attribute__((vector_size(32)));
  vb acc[R];
  for (int r = 0; r < R; ++r)
    for (int l = 0; l < 32; ++l) acc[r][l] = std::numeric_limits<T>::lowest();
  for (int64_t t = 0; t < taps; ++t) {
    const T* p = x + off[t] + c;
    for (int r = 0; r < R; ++r) {
      vb v;
      std::memcpy(&v, p + 32 * r, 32);
      acc[r] = acc[r] > v ? acc[r] : v;
    }
  }
  std::memcpy(y + c, acc, 32 * R);
}

template <class T>
void qmaxpool(const QMaxPoolNhwc& st, const Node& node, const Tensor& x, Tensor& y, ThreadPool& pool) {
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  const WindowGeometry g = window_geometry(st.attrs, node, Shape{H, W}, st.kernel);
  const int64_t OH = g.out[0], OW = g.out[1], KH = g.kernel[0], KW = g.kernel[1];
  const T* px = static_cast<const T*>(x.raw_data());
  T* py = static_cast<T*>(y.raw_data());
  parallel_range(pool, N * OH, OW * C * g.kernel.numel(), [&](int64_t r0, int64_t r1) {
    int64_t* off = nullptr;
    carve(Workspace::kWindow, [&](Carver& c) { off = c.take<int64_t>(KH * KW); });
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / OH, oh = r % OH;
      for (int64_t ow = 0; ow < OW; ++ow) {
        // The taps inside the input (padding is never the maximum: an empty window gives the
        // type's lowest value).
        int64_t taps = 0;
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t ih = oh * g.stride[0] - g.pad_begin[0] + kh * g.dilation[0];
          if (ih < 0 || ih >= H) continue;
          for (int64_t kw = 0; kw < KW; ++kw) {
            const int64_t iw = ow * g.stride[1] - g.pad_begin[1] + kw * g.dilation[1];
            if (iw >= 0 && iw < W) off[taps++] = ((n * H + ih) * W + iw) * C;
          }
        }
        T* yp = py + (r * OW + ow) * C;
        int64_t c = 0;
        for (; c + 64 <= C; c += 64) max_taps<T, 2>(px, off, taps, c, yp);
        for (; c + 32 <= C; c += 32) max_taps<T, 1>(px, off, taps, c, yp);
        for (; c < C; ++c) {
          T m = std::numeric_limits<T>::lowest();
          for (int64_t t = 0; t < taps; ++t) m = std::max(m, px[off[t] + c]);
          yp[c] = m;
        }
      }
    }
  });
}

void qmaxpool_compute(const QMaxPoolNhwc& st, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (x.rank() != 4) fail(ErrorCode::kInvalidArgument, ctx.node().label(), ": channels-last MaxPool needs a 4-d input");
  if (y.numel() == 0) return;
  if (x.dtype() == DType::kUInt8)
    qmaxpool<uint8_t>(st, ctx.node(), x, y, ctx.pool());
  else
    qmaxpool<int8_t>(st, ctx.node(), x, y, ctx.pool());
}

std::unique_ptr<Kernel> make_qmaxpool_nhwc(const KernelCreateInfo& info) {
  QMaxPoolNhwc st{WindowAttrs::of(info.node, true), Shape(info.node.attr_ints("kernel_shape"))};
  if (st.kernel.size() != 2)
    fail(ErrorCode::kInvalidGraph, info.node.label(), ": kernel_shape must have 2 values for a 2-d MaxPool");
  return make_fn_kernel(st, qmaxpool_compute);
}

using namespace types;
constexpr TypeMask kQ8 = type_mask({DType::kUInt8, DType::kInt8});
constexpr const char* kNhwc = "onyx.nhwc";

const KernelDef kDefs[] = {
    {kNhwc, "QLinearConv", 10, 99, {{0, kQ8}, {3, kQ8}}, make_qconv_nhwc, accepts_qconv},
    {kNhwc, "QLinearConvAdd", 1, 1, {{0, kQ8}, {3, kQ8}}, make_qconv_nhwc, accepts_qconv},
    {kNhwc, "MaxPool", 12, 99, {{0, kQ8}}, make_qmaxpool_nhwc, accepts_qpool},
};

}  // namespace

QConvAddSum qconv_add_sum(const KernelContext& ctx, const Tensor& y) {
  const Node& node = ctx.node();
  const Tensor& z = ctx.input(9);
  if (z.dtype() != y.dtype())
    fail(ErrorCode::kInvalidArgument, node.label(), ": Z (input 9) has type ", dtype_name(z.dtype()), ", the output ",
         dtype_name(y.dtype()));
  if (!(z.shape() == y.shape()))
    fail(ErrorCode::kInvalidArgument, node.label(), ": Z (input 9) has shape ", z.shape().to_string(),
         ", the convolution's output ", y.shape().to_string());
  float zs = 0, ts = 0, cs = 0;
  int32_t zz = 0, tz = 0, cz = 0;
  read_params(ctx.input(10), 1, &zs, "Z_scale", 10, node);
  read_zps(ctx.optional_input(11), y.dtype(), 1, &zz, "Z_zero_point", 11, node);
  read_params(ctx.input(12), 1, &ts, "T_scale", 12, node);
  read_zps(ctx.optional_input(13), y.dtype(), 1, &tz, "T_zero_point", 13, node);
  read_params(ctx.input(14), 1, &cs, "C_scale", 14, node);
  read_zps(ctx.optional_input(15), y.dtype(), 1, &cz, "C_zero_point", 15, node);
  QConvAddSum s;
  s.z = static_cast<const uint8_t*>(z.raw_data());
  s.conv_is_b = node.attr_int("conv_is_b", 0) != 0;
  s.is_signed = y.dtype() == DType::kInt8;
  // As QLinearAdd: the ratios to the output's scale, and the constant term with A's first.
  const float rt = ts / cs, rz = zs / cs;
  if (s.conv_is_b) {
    s.ra = rz;
    s.rb = rt;
    s.fixed = qmath::qadd_fixed(rz, zz, rt, tz, cz);
  } else {
    s.ra = rt;
    s.rb = rz;
    s.fixed = qmath::qadd_fixed(rt, tz, rz, zz, cz);
  }
  return s;
}

void qconv_add_in_place(const QConvAddSum& sum, Tensor& y, ThreadPool& pool) {
  constexpr int64_t kBlock = 4096;
  const int64_t n = y.numel();
  auto* py = static_cast<uint8_t*>(y.raw_data());
  parallel_range(pool, (n + kBlock - 1) / kBlock, kBlock, [&](int64_t b0, int64_t b1) {
    sum.apply(py, b0 * kBlock, std::min(n, b1 * kBlock) - b0 * kBlock);
  });
}

std::span<const KernelDef> qconv_kernels() { return kDefs; }

}  // namespace onyx::cpu
