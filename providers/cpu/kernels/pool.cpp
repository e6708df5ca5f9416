// CPU kernels: MaxPool (with Indices), AveragePool, LpPool and their Global forms, for 1 to 3
// spatial dims (padded internally to 3).
#include <cmath>
#include <limits>

#include "kernels/common.hpp"
#include "kernels/conv.hpp"
#include "kernels/manifest.hpp"
#include "kernels/vmath.hpp"
#include "ops/nn.hpp"

namespace onyx::cpu {
namespace {

/// A 2-D input plane laid out for vectorised sliding windows (MaxPool): copied into a buffer
/// padded with `pad` values and split by column phase for column stride sw
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

PhasePlane PhasePlane::make(int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
                            int64_t dh, int64_t dw, int64_t ph, int64_t pw, int64_t lanes) {
  PhasePlane p;
  p.H = h, p.W = w, p.ph = ph, p.pw = pw, p.sw = sw;
  const int64_t owr = (ow + lanes - 1) / lanes * lanes;
  p.rows = (oh - 1) * sh + (kh - 1) * dh + 1;
  p.cols = owr + ((kw - 1) * dw) / sw + 1;
  if (sw == 1) p.cols = (p.cols + 15) / 16 * 16;  // whole 16-float vectors per row (the masked fill)
  p.row_stride = sw * p.cols;
  return p;
}

void PhasePlane::fill(const float* x, float pad, float* buf) const {
  // The input columns of one padded row: [a, e) holds src[j - pw].
  const int64_t a = std::clamp<int64_t>(pw, 0, row_stride), e = std::clamp<int64_t>(pw + W, a, row_stride);
  float* prow = buf + rows * row_stride;  // one padded row before the phase split (stride > 2)
  for (int64_t r = 0; r < rows; ++r) {
    float* rb = buf + r * row_stride;
    const int64_t ih = r - ph;
    if (ih < 0 || ih >= H) {
      std::fill(rb, rb + row_stride, pad);
      continue;
    }
    const float* src = x + ih * W;
    if (sw == 2) {
      // Straight from the input: d0[j] = src[2j - pw], d1[j] = src[2j + 1 - pw], `pad` outside
      // the row; the interior (both inside) is one interleaved loop the compiler vectorises.
      float* d0 = rb;
      float* d1 = rb + cols;
      const int64_t j0 = std::min<int64_t>((pw + 1) / 2, cols);
      const int64_t j1 = std::clamp<int64_t>((W + pw - 1) / 2, j0, cols);  // 2j + 1 - pw < W
      auto at = [&](int64_t i) { return i >= 0 && i < W ? src[i] : pad; };
      for (int64_t j = 0; j < j0; ++j) d0[j] = at(2 * j - pw), d1[j] = at(2 * j + 1 - pw);
      const float* si = src + 2 * j0 - pw;
      for (int64_t j = 0; j < j1 - j0; ++j) {
        d0[j0 + j] = si[2 * j];
        d1[j0 + j] = si[2 * j + 1];
      }
      for (int64_t j = j1; j < cols; ++j) d0[j] = at(2 * j - pw), d1[j] = at(2 * j + 1 - pw);
      continue;
    }
#ifdef __AVX512F__
    if (sw == 1) {
      // 16 columns at a time, the lanes outside the input row masked (read nothing, get `pad`):
      // no calls and no branches per row, which is most of the cost for small planes.
      const __m512 padv = _mm512_set1_ps(pad);
      const float* s0 = src - pw;
      for (int64_t j = 0; j < row_stride; j += 16) {
        const int64_t lo = std::clamp<int64_t>(a - j, 0, 16), hi = std::clamp<int64_t>(e - j, 0, 16);
        const __mmask16 m = static_cast<__mmask16>(((1u << hi) - 1u) & ~((1u << lo) - 1u));
        _mm512_storeu_ps(rb + j, _mm512_mask_loadu_ps(padv, m, s0 + j));
      }
      continue;
    }
#endif
    float* dst = sw == 1 ? rb : prow;
    std::fill(dst, dst + a, pad);
    std::memcpy(dst + a, src + (a - pw), static_cast<size_t>(e - a) * sizeof(float));
    std::fill(dst + e, dst + row_stride, pad);
    if (sw > 2)
      for (int64_t q = 0; q < sw; ++q)
        for (int64_t j = 0; j < cols; ++j) rb[q * cols + j] = prow[j * sw + q];
  }
}

enum class PoolKind { kMax, kAvg, kLp };

/// Geometry padded to exactly 3 spatial dims.
struct Geo3 {
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
};

Geo3 to3(const Shape& in, const WindowGeometry& g) {
  Geo3 r;
  const size_t n = in.size();
  if (n > 3) fail(ErrorCode::kNotImplemented, "pooling over more than 3 spatial dims is not supported");
  for (size_t i = 0; i < 3; ++i) {
    const bool real = i >= 3 - n;
    const size_t j = real ? i - (3 - n) : 0;
    r.in[i] = real ? in[j] : 1;
    r.out[i] = real ? g.out[j] : 1;
    r.k[i] = real ? g.kernel[j] : 1;
    r.s[i] = real ? g.stride[j] : 1;
    r.d[i] = real ? g.dilation[j] : 1;
    r.pb[i] = real ? g.pad_begin[j] : 0;
    r.pe[i] = real ? g.pad_end[j] : 0;
  }
  return r;
}

struct PoolState {
  PoolKind kind;
  bool global = false;
  bool count_include_pad = false;
  int64_t storage_order = 0;
  float p = 2;
  WindowAttrs attrs;  // read once (no attribute lookups per run)
  Shape kernel_shape;
};

template <class T>
void pool_planes(const PoolState& st, const T* x, T* y, int64_t* idx, int64_t planes, const Geo3& g, ThreadPool& pool) {
  using A = Acc<T>;
  const int64_t in_size = g.in[0] * g.in[1] * g.in[2], out_size = g.out[0] * g.out[1] * g.out[2];
  parallel_range(pool, planes, work_of({out_size, g.k[0], g.k[1], g.k[2]}), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T* xp = x + p * in_size;
      T* yp = y + p * out_size;
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
            const int64_t b0 = o0 * g.s[0] - g.pb[0], b1 = o1 * g.s[1] - g.pb[1], b2 = o2 * g.s[2] - g.pb[2];
            A best = std::numeric_limits<A>::lowest();
            if constexpr (std::is_floating_point_v<A>) best = -std::numeric_limits<A>::infinity();
            int64_t best_at = -1;
            double sum = 0;
            // Only the taps that land in the input are visited (a kernel may be far larger).
            const TapRange r0 = tap_range(b0, g.d[0], g.k[0], 0, g.in[0]), r1 = tap_range(b1, g.d[1], g.k[1], 0, g.in[1]),
                           r2 = tap_range(b2, g.d[2], g.k[2], 0, g.in[2]);
            const int64_t count = r0.size() * r1.size() * r2.size();
            const int64_t padded_count =
                tap_range(b0, g.d[0], g.k[0], -static_cast<__int128>(g.pb[0]), static_cast<__int128>(g.in[0]) + g.pe[0]).size() *
                tap_range(b1, g.d[1], g.k[1], -static_cast<__int128>(g.pb[1]), static_cast<__int128>(g.in[1]) + g.pe[1]).size() *
                tap_range(b2, g.d[2], g.k[2], -static_cast<__int128>(g.pb[2]), static_cast<__int128>(g.in[2]) + g.pe[2]).size();
            for (int64_t k0 = r0.begin; k0 < r0.end; ++k0) {
              const int64_t i0 = b0 + k0 * g.d[0];
              for (int64_t k1 = r1.begin; k1 < r1.end; ++k1) {
                const int64_t i1 = b1 + k1 * g.d[1];
                for (int64_t k2 = r2.begin; k2 < r2.end; ++k2) {
                  const int64_t i2 = b2 + k2 * g.d[2];
                  const int64_t off = (i0 * g.in[1] + i1) * g.in[2] + i2;
                  const A v = to_acc(xp[off]);
                  if (st.kind == PoolKind::kMax) {
                    if (v > best || best_at < 0 || (std::is_floating_point_v<A> && v != v)) {
                      best = v;
                      best_at = off;
                    }
                  } else if (st.kind == PoolKind::kAvg) {
                    sum += static_cast<double>(v);
                  } else {
                    sum += std::pow(std::fabs(static_cast<double>(v)), static_cast<double>(st.p));
                  }
                }
              }
            }
            const int64_t o = (o0 * g.out[1] + o1) * g.out[2] + o2;
            if (st.kind == PoolKind::kMax) {
              yp[o] = from_acc<T>(best);
              if (idx) {
                int64_t flat = best_at;
                if (st.storage_order == 1 && best_at >= 0) {
                  // Column-major index over the spatial dims.
                  const int64_t i2 = best_at % g.in[2], i1 = (best_at / g.in[2]) % g.in[1], i0 = best_at / (g.in[1] * g.in[2]);
                  flat = (i2 * g.in[1] + i1) * g.in[0] + i0;
                }
                idx[p * out_size + o] = p * in_size + flat;
              }
            } else if (st.kind == PoolKind::kAvg) {
              const int64_t div = st.count_include_pad ? padded_count : count;
              yp[o] = from_acc<T>(static_cast<A>(div ? sum / static_cast<double>(div) : 0.0));
            } else {
              yp[o] = from_acc<T>(static_cast<A>(std::pow(sum, 1.0 / static_cast<double>(st.p))));
            }
          }
    }
  });
}

/// float32 2-D max / average pooling without dilation or indices: window bounds are clipped once
/// per output row and column instead of checked per element.
bool pool2d_float(const PoolState& st, const float* x, float* y, int64_t planes, const Geo3& g, ThreadPool& pool) {
  if (st.kind == PoolKind::kLp || g.in[0] != 1 || g.k[0] != 1 || g.d[1] != 1 || g.d[2] != 1) return false;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], KH = g.k[1], KW = g.k[2];
  const int64_t sh = g.s[1], sw = g.s[2], ph = g.pb[1], pw = g.pb[2], peh = g.pe[1], pew = g.pe[2];
  const bool is_max = st.kind == PoolKind::kMax;
  parallel_range(pool, planes, work_of({OH, OW, KH, KW}), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* xp = x + p * H * W;
      float* yp = y + p * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t h0 = oh * sh - ph;
        const int64_t hs = std::max<int64_t>(h0, 0), he = std::min<int64_t>(h0 + KH, H);
        const int64_t pad_h = std::min<int64_t>(h0 + KH, H + peh) - h0;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w0 = ow * sw - pw;
          const int64_t ws = std::max<int64_t>(w0, 0), we = std::min<int64_t>(w0 + KW, W);
          float r;
          if (is_max) {
            r = -INFINITY;
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w) {
                const float v = xp[h * W + w];
                r = (v > r || v != v) ? v : r;
              }
          } else {
            float sum = 0;
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w) sum += xp[h * W + w];
            const int64_t count = st.count_include_pad ? pad_h * (std::min<int64_t>(w0 + KW, W + pew) - w0)
                                                       : (he - hs) * (we - ws);
            r = count > 0 ? sum / static_cast<float>(count) : 0.0f;
          }
          yp[oh * OW + ow] = r;
        }
      }
    }
  });
  return true;
}

/// float32 2-D MaxPool without indices, vectorised: each plane is laid out padded with -inf and
/// split by column phase (PhasePlane), then every output vector is the max of one contiguous
/// load per tap; four vectors at a time so the max chains overlap. NaN inputs propagate.
bool maxpool2d_vec(const float* x, float* y, int64_t planes, const Geo3& g, ThreadPool& pool) {
  using namespace vmath;
  constexpr int kMaxTaps = 64, kGroup = 4;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], KH = g.k[1], KW = g.k[2];
  const int64_t taps = KH * KW;
  if (g.in[0] != 1 || g.k[0] != 1 || taps > kMaxTaps || OH <= 0 || OW <= 0) return false;
  const PhasePlane pp = PhasePlane::make(H, W, KH, KW, OH, OW, g.s[1], g.s[2], g.d[1], g.d[2], g.pb[1], g.pb[2], kGroup * kLanes);
  int64_t offs[kMaxTaps];
  for (int64_t ki = 0; ki < KH; ++ki)
    for (int64_t kj = 0; kj < KW; ++kj) offs[ki * KW + kj] = pp.tap(ki, kj, g.d[1], g.d[2]);
  const int64_t rstep = g.s[1] * pp.row_stride;
  parallel_range(pool, planes, OH * OW * taps, [&](int64_t p0, int64_t p1) {
    float* buf = reinterpret_cast<float*>(thread_workspace(Workspace::kWindow, pp.floats() * sizeof(float)));
    for (int64_t p = p0; p < p1; ++p) {
      pp.fill(x + p * H * W, -INFINITY, buf);
      float* yp = y + p * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const float* base = buf + oh * rstep;
        for (int64_t ow = 0; ow < OW; ow += kGroup * kLanes) {  // the plane's columns are rounded up to whole groups
          vf r[kGroup];
          for (int v = 0; v < kGroup; ++v) r[v] = splat(-INFINITY);
          for (int64_t t = 0; t < taps; ++t) {
            const float* src = base + offs[t] + ow;
            for (int v = 0; v < kGroup; ++v) {
              const vf a = load(src + v * kLanes);
              r[v] = vmath::max_nan(r[v], a);
            }
          }
          for (int v = 0; v < kGroup; ++v) {
            const int64_t at = ow + v * kLanes, left = OW - at;
            if (left <= 0) break;
            if (left >= kLanes) {
              store(yp + oh * OW + at, r[v]);
            } else {
              float tail[kLanes];
              store(tail, r[v]);
              std::memcpy(yp + oh * OW + at, tail, static_cast<size_t>(left) * sizeof(float));
            }
          }
        }
      }
    }
  });
  return true;
}

void pool_compute(const PoolState& st, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Shape in(std::span<const int64_t>(x.shape().data() + 2, x.rank() - 2));
  WindowGeometry g;
  if (st.global) {
    g.kernel = in;
    g.out = Shape::filled(in.size(), 1);
    g.stride = g.dilation = Shape::filled(in.size(), 1);
    g.pad_begin = g.pad_end = Shape::filled(in.size(), 0);
  } else {
    g = window_geometry(st.attrs, ctx.node(), in, st.kernel_shape);
  }
  const Geo3 g3 = to3(in, g);
  const int64_t planes = x.dim(0) * x.dim(1);
  int64_t* idx = nullptr;
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) idx = ctx.output(1).data<int64_t>();
  if (y.numel() == 0) return;
  if (x.dtype() == DType::kFloat && !idx && st.kind == PoolKind::kMax && !st.global &&
      maxpool2d_vec(x.data<float>(), y.data<float>(), planes, g3, ctx.pool()))
    return;
  if (x.dtype() == DType::kFloat && !idx && pool2d_float(st, x.data<float>(), y.data<float>(), planes, g3, ctx.pool())) return;
  dispatch_numeric(x.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>)
      unsupported_dtype("pooling", x.dtype());
    else
      pool_planes<T>(st, static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()), idx, planes, g3, ctx.pool());
  }, ctx.node().op_type.c_str());
}

std::unique_ptr<Kernel> make_pool(const KernelCreateInfo& info) {
  const std::string& op = info.node.op_type;
  PoolState st;
  st.global = op.rfind("Global", 0) == 0;
  st.kind = op.find("Max") != std::string::npos ? PoolKind::kMax : op.find("Lp") != std::string::npos ? PoolKind::kLp : PoolKind::kAvg;
  st.count_include_pad = info.node.attr_int("count_include_pad", 0) != 0;
  st.storage_order = info.node.attr_int("storage_order", 0);
  st.p = static_cast<float>(info.node.attr_int("p", 2));
  if (info.node.opset < 2 && st.kind == PoolKind::kLp) st.p = info.node.attr_float("p", 2.0f);
  st.attrs = WindowAttrs::of(info.node, true);
  st.kernel_shape = Shape(info.node.attr_ints("kernel_shape"));
  return make_fn_kernel(st, pool_compute);
}

using namespace types;
constexpr TypeMask kMaxPoolTypes = kFloats | type_mask({DType::kInt8, DType::kUInt8});

const KernelDef kDefs[] = {
    {"", "MaxPool", 1, 99, {{0, kMaxPoolTypes}}, make_pool},
    {"", "AveragePool", 1, 99, {{0, kFloats}}, make_pool},
    {"", "LpPool", 1, 99, {{0, kFloats}}, make_pool},
    {"", "GlobalAveragePool", 1, 99, {{0, kFloats}}, make_pool},
    {"", "GlobalMaxPool", 1, 99, {{0, kFloats}}, make_pool},
    {"", "GlobalLpPool", 1, 99, {{0, kFloats}}, make_pool},
};

}  // namespace

std::span<const KernelDef> pool_kernels() { return kDefs; }

}  // namespace onyx::cpu
