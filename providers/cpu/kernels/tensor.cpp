// CPU kernels: tensor manipulation (views, Transpose, Concat, Split, Slice, Gather, Expand,
// Tile, Pad, ConstantOfShape, Range, Shape, Size, Constant, Identity).
#include <cmath>
#include <string>

#include "core/narrow.hpp"
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/vmath.hpp"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__SSSE3__)
#include <tmmintrin.h>
#endif
#include "ops/tensor.hpp"

namespace onyx::cpu {
namespace {

/// Output 0 as a view of `in` with `shape`, or a copy when the executor already gave it a buffer
/// (graph outputs must own their memory).
void view_or_copy(KernelContext& ctx, const Tensor& in, const Shape& shape) {
  if (ctx.output_ready(0)) {
    Tensor& out = ctx.output(0);
    if (out.raw_data() != in.raw_data()) copy_elements(in.dtype(), in.raw_data(), out.raw_data(), in.numel());
  } else {
    ctx.set_output(0, Value(in.reshaped(shape)));
  }
}

class ViewKernel : public Kernel {
 public:
  int alias_input(size_t out) const override { return out == 0 ? 0 : -1; }
};

class ConstantKernel final : public Kernel {
 public:
  explicit ConstantKernel(Tensor t) : t_(std::move(t)) {}
  void compute(KernelContext& ctx) const override { ctx.set_output(0, Value(t_)); }

 private:
  Tensor t_;
};

std::unique_ptr<Kernel> make_constant(const KernelCreateInfo& info) {
  return std::make_unique<ConstantKernel>(constant_node_value(info.node));
}

class IdentityKernel final : public ViewKernel {
 public:
  void compute(KernelContext& ctx) const override {
    const Value& v = ctx.input_value(0);
    if (v.is_tensor())
      view_or_copy(ctx, v.tensor(), v.tensor().shape());
    else
      ctx.set_output(0, v);
  }
};

std::unique_ptr<Kernel> make_identity(const KernelCreateInfo&) { return std::make_unique<IdentityKernel>(); }

void shape_compute(const int&, KernelContext& ctx) {
  const Shape& s = ctx.input(0).shape();
  const int64_t r = static_cast<int64_t>(s.size());
  int64_t b = ctx.node().opset >= 15 ? ctx.node().attr_int("start", 0) : 0;
  int64_t e = ctx.node().opset >= 15 ? ctx.node().attr_int("end", r) : r;
  if (b < 0) b += r;
  if (e < 0) e += r;
  b = std::clamp<int64_t>(b, 0, r);
  e = std::clamp<int64_t>(e, 0, r);
  const int64_t n = std::max<int64_t>(0, e - b);
  Tensor& out = ctx.allocate_output(0, DType::kInt64, Shape{n});
  for (int64_t k = 0; k < n; ++k) out.data<int64_t>()[k] = s[b + k];
}

void size_compute(const int&, KernelContext& ctx) {
  ctx.allocate_output(0, DType::kInt64, Shape{}).data<int64_t>()[0] = ctx.input(0).numel();
}

class ReshapeKernel final : public ViewKernel {
 public:
  void compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    const Node& n = ctx.node();
    const Shape spec = n.opset < 5 ? Shape(n.attr_ints("shape")) : read_dims(ctx.input(1), "Reshape shape");
    const bool allowzero = n.opset >= 14 && n.attr_int("allowzero", 0) != 0;
    view_or_copy(ctx, in, reshape_shape(n, in.shape(), spec, allowzero));
  }
};

class FlattenKernel final : public ViewKernel {
 public:
  void compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    view_or_copy(ctx, in, flatten_shape(ctx.node(), in.shape(), ctx.node().attr_int("axis", 1)));
  }
};

class SqueezeKernel final : public ViewKernel {
 public:
  explicit SqueezeKernel(const KernelCreateInfo& info) : attr_axes_(info.node.attr_ints("axes")) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    const Node& n = ctx.node();
    Shape axes;
    if (n.opset < 13) axes = attr_axes_;
    else if (ctx.has_input(1)) axes = read_dims(ctx.input(1), "Squeeze axes");
    const bool squeeze = n.op_type == "Squeeze";
    view_or_copy(ctx, in, squeeze ? squeeze_shape(n, in.shape(), axes) : unsqueeze_shape(n, in.shape(), axes));
  }

 private:
  Shape attr_axes_;
};

std::unique_ptr<Kernel> make_squeeze(const KernelCreateInfo& info) { return std::make_unique<SqueezeKernel>(info); }

template <class K>
std::unique_ptr<Kernel> make_kernel(const KernelCreateInfo&) {
  return std::make_unique<K>();
}

// ---- Transpose ----

struct TransposeState {
  std::vector<int64_t> perm;  // empty = reverse
};

#if defined(__SSE2__)
/// A block of 16 x 16 bytes (or 8 x 8 16-bit values) transposed in registers: kN rows of src
/// (stride ss elements) into kN rows of dst (stride ds). log2(kN) rounds that each interleave row
/// i with row i + kN / 2 element by element (unpack low into row 2i, high into 2i + 1) leave row i
/// holding column i.
template <class T>
inline void transpose_block_sse(const T* src, int64_t ss, T* dst, int64_t ds) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2);
  constexpr int kN = 16 / sizeof(T);
  __m128i r[kN];
  for (int i = 0; i < kN; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * ss));
  for (int round = 0; round < (sizeof(T) == 1 ? 4 : 3); ++round) {
    __m128i t[kN];
    for (int i = 0; i < kN / 2; ++i) {
      if constexpr (sizeof(T) == 1) {
        t[2 * i] = _mm_unpacklo_epi8(r[i], r[i + kN / 2]);
        t[2 * i + 1] = _mm_unpackhi_epi8(r[i], r[i + kN / 2]);
      } else {
        t[2 * i] = _mm_unpacklo_epi16(r[i], r[i + kN / 2]);
        t[2 * i + 1] = _mm_unpackhi_epi16(r[i], r[i + kN / 2]);
      }
    }
    for (int i = 0; i < kN; ++i) r[i] = t[i];
  }
  for (int i = 0; i < kN; ++i) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i * ds), r[i]);
}
#endif

void transpose_compute(const TransposeState& st, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  const size_t r = in.rank();
  if (!st.perm.empty() && st.perm.size() != r)
    fail(ErrorCode::kInvalidArgument, "perm has ", st.perm.size(), " entries for an input of rank ", r);
  if (in.numel() == 0) return;
  // Input strides, then collapse output dims that are also adjacent in the input.
  Shape istride = Shape::filled(r, 1);
  for (size_t k = r; k-- > 1;) istride[k - 1] = istride[k] * in.dim(k);
  Shape dims, strides;
  for (size_t k = 0; k < r; ++k) {
    int64_t p = st.perm.empty() ? static_cast<int64_t>(r - 1 - k) : st.perm[k];
    if (p < 0) p += static_cast<int64_t>(r);
    const int64_t d = in.dim(p);
    if (d == 1) continue;
    if (!dims.empty() && strides.back() == istride[p] * d) {
      dims[dims.size() - 1] *= d;
      strides[strides.size() - 1] = istride[p];
    } else {
      dims.push_back(d);
      strides.push_back(istride[p]);
    }
  }
  if (dims.empty()) {
    copy_elements(in.dtype(), in.raw_data(), out.raw_data(), in.numel());
    return;
  }
  const size_t nd = dims.size();
  const int64_t inner = dims[nd - 1], inner_stride = strides[nd - 1];
  const int64_t rows = in.numel() / inner;
  // A batch of 2-D transposes (NCHW <-> NHWC: [C, HW] <-> [HW, C] per image): output element
  // (b, i, j) is input (b, j, i). Copied in square tiles, so that both sides are read and written
  // in runs of a tile's width instead of one strided element per row step.
  const bool batched_2d = nd >= 2 && nd <= 3 && strides[nd - 2] == 1 && inner_stride == dims[nd - 2] &&
                          (nd == 2 || strides[0] == dims[1] * dims[2]) && in.dtype() != DType::kString;
  if (batched_2d) {
    const int64_t R = dims[nd - 2], Cn = inner, batch = nd == 3 ? dims[0] : 1;
    constexpr int64_t kTile = 32;
    const int64_t row_tiles = (R + kTile - 1) / kTile;
    dispatch_bytes(in.dtype(), [&]<class T>() {
      const T* src = static_cast<const T*>(in.raw_data());
      T* dst = static_cast<T*>(out.raw_data());
      if constexpr (sizeof(T) == sizeof(float)) {
#if !defined(__AVX512F__) && !defined(__AVX__)
        // Without AVX (SSE alone, where vmath's 16-lane two-source shuffles below would be
        // lowered to element moves): a plain loop, Cn input rows read in step.
        if (Cn >= 2 && Cn <= 4) {
          parallel_range(ctx.pool(), batch * R, Cn, [&](int64_t q0, int64_t q1) {
            for (int64_t q = q0; q < q1; ++q) {
              const int64_t b = q / R, i = q % R;
              for (int64_t j = 0; j < Cn; ++j) dst[q * Cn + j] = src[(b * Cn + j) * R + i];
            }
          });
          return;
        }
#endif
        if (Cn >= 2 && Cn <= 4) {
          // Few columns (an image's 3 channels into [HW, 3]): kLanes rows at a time, the Cn input
          // rows' vectors interleaved by two-source shuffles into Cn output vectors (a kLanes x kLanes
          // register block would be mostly padding, its stores 3 floats each). Output vector j,
          // lane e holds flat element q = kLanes j + e: row q / Cn of input row q % Cn; it is built
          // over Cn steps, step s bringing in input row s's lanes and keeping those placed.
          using vmath::vi;
          vi idx[4][4];
          for (int64_t j = 0; j < Cn; ++j)
            for (int e = 0; e < vmath::kLanes; ++e) {
              const int64_t q = vmath::kLanes * j + e, p = q / Cn, c = q % Cn;
              for (int64_t st = 0; st < Cn; ++st)
                idx[j][st][e] = static_cast<int32_t>(c < st ? e : c == st ? (st ? vmath::kLanes : 0) + p : 0);
            }
          const int64_t groups = R / vmath::kLanes;
          parallel_range(ctx.pool(), batch * groups, vmath::kLanes * Cn, [&](int64_t g0, int64_t g1) {
            for (int64_t gi = g0; gi < g1; ++gi) {
              const int64_t b = gi / groups, i = gi % groups * vmath::kLanes;
              const float* sb = reinterpret_cast<const float*>(src + b * R * Cn) + i;
              float* db = reinterpret_cast<float*>(dst + b * R * Cn) + i * Cn;
              vmath::vf v[4];
              for (int64_t c = 0; c < Cn; ++c) v[c] = vmath::load(sb + c * R);
              for (int64_t j = 0; j < Cn; ++j) {
                vmath::vf t = __builtin_shuffle(v[0], v[0], idx[j][0]);
                for (int64_t st = 1; st < Cn; ++st) t = __builtin_shuffle(t, v[st], idx[j][st]);
                vmath::store(db + vmath::kLanes * j, t);
              }
            }
          });
          for (int64_t b = 0; b < batch; ++b)
            for (int64_t i = groups * vmath::kLanes; i < R; ++i)
              for (int64_t j = 0; j < Cn; ++j) dst[(b * R + i) * Cn + j] = src[(b * Cn + j) * R + i];
          return;
        }
      }
      if constexpr (sizeof(T) <= 2) {
        // Few columns of 8- or 16-bit values (a quantized image's 3 channels into [HW, 3]): the
        // Cn input rows interleaved in one pass, the column count a constant of the loop.
        if (Cn >= 2 && Cn <= 4) {
          // Work items: blocks of 4096 positions of an image.
          constexpr int64_t kSpan = 4096;
          const int64_t spans = (R + kSpan - 1) / kSpan;
          auto interleave = [&]<int kC>() {
            parallel_range(ctx.pool(), batch * spans, kSpan * kC, [&](int64_t t0, int64_t t1) {
              for (int64_t t = t0; t < t1; ++t) {
                const int64_t b = t / spans, i0 = t % spans * kSpan, i1 = std::min(R, i0 + kSpan);
                const T* sb = src + b * R * kC;
                T* db = dst + b * R * kC;
                int64_t i = i0;
#if defined(__SSSE3__)
                if constexpr (kC == 3 && sizeof(T) == 1) {
                  // 16 positions at a time: the three planes' 16 bytes spread into 48 by shuffles
                  // (byte k of output block o is plane (16 o + k) % 3, position (16 o + k) / 3).
                  __m128i pick[3][3];
                  for (int o = 0; o < 3; ++o)
                    for (int j = 0; j < 3; ++j) {
                      alignas(16) int8_t idx[16];
                      for (int k = 0; k < 16; ++k) {
                        const int q = 16 * o + k;
                        idx[k] = static_cast<int8_t>(q % 3 == j ? q / 3 : -1);
                      }
                      pick[o][j] = _mm_load_si128(reinterpret_cast<const __m128i*>(idx));
                    }
                  for (; i + 16 <= i1; i += 16) {
                    const __m128i p[3] = {_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + i)),
                                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + R + i)),
                                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 2 * R + i))};
                    for (int o = 0; o < 3; ++o) {
                      const __m128i v = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(p[0], pick[o][0]), _mm_shuffle_epi8(p[1], pick[o][1])),
                                                     _mm_shuffle_epi8(p[2], pick[o][2]));
                      _mm_storeu_si128(reinterpret_cast<__m128i*>(db + 3 * i + 16 * o), v);
                    }
                  }
                }
#endif
                for (; i < i1; ++i)
                  for (int j = 0; j < kC; ++j) db[i * kC + j] = sb[j * R + i];
              }
            });
          };
          if (Cn == 2) interleave.template operator()<2>();
          else if (Cn == 3) interleave.template operator()<3>();
          else interleave.template operator()<4>();
          return;
        }
      }
      parallel_range(ctx.pool(), batch * row_tiles, kTile * Cn, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t b = t / row_tiles, i0 = t % row_tiles * kTile, i1 = std::min(R, i0 + kTile);
          const T* sb = src + b * R * Cn;
          T* db = dst + b * R * Cn;
          for (int64_t j0 = 0; j0 < Cn; j0 += kTile) {
            const int64_t j1 = std::min(Cn, j0 + kTile);
            int64_t done_i = i0;  // rows [i0, done_i) of the tile finished by the vector path
            if constexpr (sizeof(T) == sizeof(float)) {
              // Full kLanes x kLanes blocks (16 with AVX-512, 8 with AVX2), transposed in registers.
              using vmath::kLanes;
              for (; done_i + kLanes <= i1; done_i += kLanes) {
                // Blocks of kLanes columns; the last, partial one (an image's 3 channels) with its
                // missing rows zero and its output rows stored masked.
                for (int64_t j = j0; j < j1; j += kLanes) {
                  const int64_t cols = std::min<int64_t>(kLanes, j1 - j);
                  vmath::vf m[kLanes];
                  for (int r = 0; r < kLanes; ++r)
                    m[r] = r < cols ? vmath::load(reinterpret_cast<const float*>(sb + (j + r) * R + done_i)) : vmath::vf{};
                  vmath::transpose(m);
                  for (int r = 0; r < kLanes; ++r) {
                    float* out = reinterpret_cast<float*>(db + (done_i + r) * Cn + j);
                    if (cols == kLanes)
                      vmath::store(out, m[r]);
                    else
                      vmath::store_n(out, m[r], cols);
                  }
                }
              }
            }
#if defined(__SSE2__)
            if constexpr (sizeof(T) <= 2) {
              // 8- and 16-bit values (quantized, half-precision tensors): register blocks.
              constexpr int64_t kN = 16 / sizeof(T);
              for (; done_i + kN <= i1; done_i += kN) {
                int64_t j = j0;
                for (; j + kN <= j1; j += kN) transpose_block_sse(sb + j * R + done_i, R, db + done_i * Cn + j, Cn);
                for (; j < j1; ++j)
                  for (int64_t i = done_i; i < done_i + kN; ++i) db[i * Cn + j] = sb[j * R + i];
              }
            }
#endif
            for (int64_t i = done_i; i < i1; ++i)
              for (int64_t j = j0; j < j1; ++j) db[i * Cn + j] = sb[j * R + i];
          }
        }
      });
    });
    return;
  }
  auto run = [&]<class T>(const T* src, T* dst) {
    auto body = [&](int64_t r0, int64_t r1) {
      Shape idx = Shape::filled(nd, 0);
      int64_t rem = r0, off = 0;
      for (size_t d = nd - 1; d-- > 0;) {
        idx[d] = rem % dims[d];
        rem /= dims[d];
        off += idx[d] * strides[d];
      }
      for (int64_t row = r0; row < r1; ++row) {
        T* o = dst + row * inner;
        const T* s = src + off;
        if (inner_stride == 1)
          for (int64_t i = 0; i < inner; ++i) o[i] = s[i];
        else
          for (int64_t i = 0; i < inner; ++i) o[i] = s[i * inner_stride];
        for (size_t d = nd - 1; d-- > 0;) {
          off += strides[d];
          if (++idx[d] < dims[d]) break;
          off -= strides[d] * dims[d];
          idx[d] = 0;
        }
      }
    };
    parallel_range(ctx.pool(), rows, inner, body);
  };
  if (in.dtype() == DType::kString) {
    run(static_cast<const std::string*>(in.raw_data()), static_cast<std::string*>(out.raw_data()));
    return;
  }
  dispatch_bytes(in.dtype(), [&]<class T>() { run(static_cast<const T*>(in.raw_data()), static_cast<T*>(out.raw_data())); });
}

std::unique_ptr<Kernel> make_transpose(const KernelCreateInfo& info) {
  return make_fn_kernel(TransposeState{info.node.attr_ints("perm")}, transpose_compute);
}

// ---- Concat / Split ----

void concat_compute(const int&, KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  const int64_t r = static_cast<int64_t>(out.rank());
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 1), r, "Concat");
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= out.dim(k);
  for (int64_t k = axis + 1; k < r; ++k) inner *= out.dim(k);
  const int64_t out_row = out.dim(axis) * inner;
  int64_t pos = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Tensor& in = ctx.input(i);
    const int64_t row = (r ? in.dim(axis) : 1) * inner;
    for (int64_t o = 0; o < outer; ++o) copy_elements(in.dtype(), in.raw_data(), out.raw_data(), row, o * row, o * out_row + pos);
    pos += row;
  }
}

void split_compute(const int&, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Node& n = ctx.node();
  const int64_t r = static_cast<int64_t>(in.rank());
  const int64_t axis = normalize_axis(n.attr_int("axis", 0), r, "Split");
  Shape split;
  if (n.opset < 13) split = Shape(n.attr_ints("split"));
  else if (ctx.has_input(1)) split = read_dims(ctx.input(1), "Split split");
  const Shape sizes = split_sizes(n, in.dim(axis), ctx.num_outputs(), &split);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= in.dim(k);
  for (int64_t k = axis + 1; k < r; ++k) inner *= in.dim(k);
  const int64_t in_row = in.dim(axis) * inner;
  int64_t pos = 0;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    Shape s = in.shape();
    s[axis] = sizes[i];
    const int64_t row = sizes[i] * inner;
    if (ctx.has_output(i)) {
      Tensor& out = ctx.allocate_output(i, in.dtype(), s);
      for (int64_t o = 0; o < outer; ++o) copy_elements(in.dtype(), in.raw_data(), out.raw_data(), row, o * in_row + pos, o * row);
    }
    pos += row;
  }
}

// ---- Slice ----

void slice_compute(const int&, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Node& n = ctx.node();
  Shape starts, ends, axes, steps;
  if (n.opset < 10) {
    starts = Shape(n.attr_ints("starts"));
    ends = Shape(n.attr_ints("ends"));
    axes = Shape(n.attr_ints("axes"));
  } else {
    starts = read_dims(ctx.input(1), "Slice starts");
    ends = read_dims(ctx.input(2), "Slice ends");
    if (ctx.has_input(3)) axes = read_dims(ctx.input(3), "Slice axes");
    if (ctx.has_input(4)) steps = read_dims(ctx.input(4), "Slice steps");
  }
  const SliceSpec s = resolve_slice(n, in.shape(), starts, ends, axes, steps);
  Tensor& out = ctx.allocate_output(0, in.dtype(), Shape(s.count));
  const int64_t total = out.numel();
  if (total == 0) return;
  const size_t r = in.rank();
  if (r == 0) {
    copy_elements(in.dtype(), in.raw_data(), out.raw_data(), 1);
    return;
  }
  Shape istride = Shape::filled(r, 1);
  for (size_t k = r; k-- > 1;) istride[k - 1] = istride[k] * in.dim(k);
  const int64_t inner = s.count[r - 1];
  const int64_t rows = total / inner;
  const int64_t inner_step = s.step[r - 1];
  Shape idx = Shape::filled(r, 0);
  int64_t base = 0;
  for (size_t k = 0; k < r; ++k) base += s.start[k] * istride[k];
  int64_t off = base;
  const bool contiguous = inner_step == 1;
  auto advance = [&]() {
    for (size_t d = r - 1; d-- > 0;) {
      off += s.step[d] * istride[d];
      if (++idx[d] < s.count[d]) return;
      off -= s.step[d] * istride[d] * s.count[d];
      idx[d] = 0;
    }
  };
  if (in.dtype() == DType::kString || !contiguous) {
    const size_t es = dtype_size(in.dtype());
    for (int64_t row = 0; row < rows; ++row) {
      for (int64_t i = 0; i < inner; ++i) {
        if (in.dtype() == DType::kString)
          copy_elements(in.dtype(), in.raw_data(), out.raw_data(), 1, off + i * inner_step, row * inner + i);
        else
          std::memcpy(static_cast<uint8_t*>(out.raw_data()) + (row * inner + i) * es,
                      static_cast<const uint8_t*>(in.raw_data()) + (off + i * inner_step) * es, es);
      }
      advance();
    }
    return;
  }
  const size_t es = dtype_size(in.dtype());
  for (int64_t row = 0; row < rows; ++row) {
    std::memcpy(static_cast<uint8_t*>(out.raw_data()) + row * inner * es, static_cast<const uint8_t*>(in.raw_data()) + off * es,
                inner * es);
    advance();
  }
}

// ---- Gather ----

void gather_compute(const int&, KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  Tensor& out = ctx.output(0);
  const int64_t r = static_cast<int64_t>(data.rank());
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), r, "Gather");
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= data.dim(k);
  for (int64_t k = axis + 1; k < r; ++k) inner *= data.dim(k);
  const int64_t dim = data.dim(axis);
  if (indices.dtype() != DType::kInt64 && indices.dtype() != DType::kInt32)
    fail(ErrorCode::kInvalidArgument, "indices must be int32 or int64");
  const int64_t ni = indices.numel();
  for (int64_t j = 0; j < ni; ++j) {
    const int64_t v = int_at(indices, j);
    if (v < -dim || v >= dim)
      fail(ErrorCode::kRuntime, "index ", v, " at position ", j, " of input 1 is out of range [", -dim, ", ", dim - 1,
           "] for axis ", axis, " of size ", dim);
  }
  auto body = [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / ni, j = t % ni;
      const int64_t v = int_at(indices, j);
      const int64_t i = v < 0 ? v + dim : v;
      copy_elements(data.dtype(), data.raw_data(), out.raw_data(), inner, (o * dim + i) * inner, t * inner);
    }
  };
  parallel_range(ctx.pool(), outer * ni, inner, body);
}

// ---- Expand / Tile ----

void broadcast_copy(const Tensor& in, const Shape& in_view, Tensor& out, const Shape& out_view, ThreadPool& pool) {
  const Broadcast<1> bc(out_view, {&in_view});
  if (in.dtype() == DType::kString) {
    const auto* s = static_cast<const std::string*>(in.raw_data());
    auto* d = static_cast<std::string*>(out.raw_data());
    bc.run(pool, 0, [&](int64_t o, std::array<int64_t, 1> off, int64_t n, std::array<int64_t, 1> st) {
      for (int64_t i = 0; i < n; ++i) d[o + i] = s[off[0] + i * st[0]];
    });
    return;
  }
  dispatch_bytes(in.dtype(), [&]<class T>() {
    const T* s = static_cast<const T*>(in.raw_data());
    T* d = static_cast<T*>(out.raw_data());
    bc.run(pool, out.numel(), [&](int64_t o, std::array<int64_t, 1> off, int64_t n, std::array<int64_t, 1> st) {
      if (st[0] == 0) {
        const T v = s[off[0]];
        for (int64_t i = 0; i < n; ++i) d[o + i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) d[o + i] = s[off[0] + i];
      }
    });
  });
}

void expand_compute(const int&, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return;
  broadcast_copy(in, in.shape(), out, out.shape(), ctx.pool());
}

void tile_compute(const int&, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return;
  // Tile is a broadcast of the input viewed as [1,d0,1,d1,...] to [r0,d0,r1,d1,...].
  Shape iv, ov;
  for (size_t k = 0; k < in.rank(); ++k) {
    iv.push_back(1);
    iv.push_back(in.dim(k));
    ov.push_back(out.dim(k) / std::max<int64_t>(1, in.dim(k)));
    ov.push_back(in.dim(k));
  }
  broadcast_copy(in, iv, out, ov, ctx.pool());
}

// ---- Pad ----

void pad_compute(const int&, KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  const Node& n = ctx.node();
  const size_t r = in.rank();
  Shape pads, axes;
  double value = 0;
  bool has_axes = false;
  if (n.opset < 11) {
    pads = Shape(n.attr_ints(n.opset < 2 ? "paddings" : "pads"));
    value = n.attr_float("value", 0.0f);
  } else {
    pads = read_dims(ctx.input(1), "Pad pads");
    if (const Tensor* cv = ctx.optional_input(2); cv && cv->numel() > 0) value = cv->dtype() == DType::kBool ? cv->data<bool>()[0] : read_scalar(*cv);
    if (ctx.has_input(3)) {
      axes = read_dims(ctx.input(3), "Pad axes");
      has_axes = true;
    }
  }
  const Shape p = pad_amounts(n, r, pads, has_axes ? &axes : nullptr);
  const std::string mode = n.attr_string("mode", "constant");
  // Per dim: output index -> input index (-1 = pad value).
  std::vector<std::vector<int64_t>> map(r);
  for (size_t k = 0; k < r; ++k) map[k] = pad_index_map(n, mode, in.dim(k), out.dim(k), p[k]);
  std::vector<int64_t> istride(r, 1);
  for (size_t k = r; k-- > 1;) istride[k - 1] = istride[k] * in.dim(k);
  const int64_t total = out.numel();
  if (total == 0) return;
  if (r == 0) {
    copy_elements(in.dtype(), in.raw_data(), out.raw_data(), 1);
    return;
  }
  auto run = [&]<class T>(T pad_value) {
    const T* src = static_cast<const T*>(in.raw_data());
    T* dst = static_cast<T*>(out.raw_data());
    const int64_t inner = out.dim(r - 1);
    std::vector<int64_t> idx(r, 0);
    for (int64_t o = 0; o < total; o += inner) {
      int64_t base = 0;
      bool pad_row = false;
      for (size_t k = 0; k + 1 < r; ++k) {
        const int64_t i = map[k][idx[k]];
        if (i < 0) pad_row = true;
        base += i * istride[k];
      }
      const auto& last = map[r - 1];
      for (int64_t j = 0; j < inner; ++j) dst[o + j] = (pad_row || last[j] < 0) ? pad_value : src[base + last[j]];
      for (size_t k = r - 1; k-- > 0;) {
        if (++idx[k] < out.dim(k)) break;
        idx[k] = 0;
      }
    }
  };
  if (in.dtype() == DType::kString) {
    run(std::string());
    return;
  }
  if (mask_has(kFloat8Types | kInt4Types, in.dtype())) {
    // One byte per value: pad with the constant's own code (code 0 is zero in each of these types).
    const Tensor* cv = n.opset >= 11 ? ctx.optional_input(2) : nullptr;
    if (cv && cv->numel() > 0 && cv->dtype() != in.dtype())
      fail(ErrorCode::kInvalidArgument, n.label(), ": constant_value is ", dtype_name(cv->dtype()), " but data is ",
           dtype_name(in.dtype()));
    run(cv && cv->numel() > 0 ? *static_cast<const uint8_t*>(cv->raw_data()) : uint8_t{0});
    return;
  }
  dispatch_numeric(in.dtype(), [&]<class T>() { run(from_acc<T>(static_cast<Acc<T>>(value))); }, "Pad");
}

// ---- ConstantOfShape / Range ----

void constant_of_shape_compute(const int&, KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  const Tensor* v = ctx.node().attr_tensor("value");
  if (!v) {
    std::memset(out.raw_data(), 0, out.nbytes());
    return;
  }
  const size_t es = dtype_size(v->dtype());
  if (v->dtype() == DType::kString) {
    for (int64_t i = 0; i < out.numel(); ++i) copy_elements(v->dtype(), v->raw_data(), out.raw_data(), 1, 0, i);
    return;
  }
  auto* d = static_cast<uint8_t*>(out.raw_data());
  for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(d + i * es, v->raw_data(), es);
}

void range_compute(const int& stash_float, KernelContext& ctx) {
  const Tensor& s = ctx.input(0);
  dispatch_numeric(s.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      unsupported_dtype("Range", s.dtype());
    } else if constexpr (is_half_v<T>) {
      // float16 / bfloat16 (opset 27): start + i * delta in float (stash_type float, the
      // default) or with each step rounded to T (stash_type T).
      if (ctx.node().opset < 27) unsupported_dtype("Range before opset 27", s.dtype());
      auto round = [](float v) { return static_cast<float>(T(v)); };
      const float start = static_cast<float>(*s.data<T>()), limit = static_cast<float>(*ctx.input(1).data<T>()),
                  delta = static_cast<float>(*ctx.input(2).data<T>());
      if (delta == 0) fail(ErrorCode::kInvalidArgument, "Range: delta must not be zero");
      const double cnt = std::ceil((static_cast<double>(limit) - start) / delta);
      const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(cnt));
      Tensor& out = ctx.allocate_output(0, s.dtype(), Shape{n});
      T* d = out.data<T>();
      for (int64_t i = 0; i < n; ++i)
        d[i] = T(stash_float ? start + static_cast<float>(i) * delta : round(start + round(round(static_cast<float>(i)) * delta)));
    } else {
      const T start = *s.data<T>(), limit = *ctx.input(1).data<T>(), delta = *ctx.input(2).data<T>();
      if (delta == 0) fail(ErrorCode::kInvalidArgument, "Range: delta must not be zero");
      const double cnt = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
      const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(cnt));
      Tensor& out = ctx.allocate_output(0, s.dtype(), Shape{n});
      T* d = out.data<T>();
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    }
  }, "Range");
}

std::unique_ptr<Kernel> make_fn(void (*fn)(const int&, KernelContext&)) { return make_fn_kernel(0, fn); }
#define FN_FACTORY(name, fn) \
  std::unique_ptr<Kernel> name(const KernelCreateInfo&) { return make_fn(fn); }
FN_FACTORY(make_shape, shape_compute)
FN_FACTORY(make_size, size_compute)
FN_FACTORY(make_concat, concat_compute)
FN_FACTORY(make_split, split_compute)
FN_FACTORY(make_slice, slice_compute)
FN_FACTORY(make_gather, gather_compute)
FN_FACTORY(make_expand, expand_compute)
FN_FACTORY(make_tile, tile_compute)
FN_FACTORY(make_pad, pad_compute)
FN_FACTORY(make_constant_of_shape, constant_of_shape_compute)
// BitCast (opset 26): the bytes as they are, but for the packed 4- and 2-bit types (kept one per
// byte, signed integers sign-extended) and bool (a byte must be 0 or 1 to be a bool).
void bitcast_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const DType from = x.dtype(), to = y.dtype();
  const auto* src = static_cast<const uint8_t*>(x.raw_data());
  auto* dst = static_cast<uint8_t*>(y.raw_data());
  const int64_t n = x.numel();
  if (const int bits = packed_bits(from)) {
    const uint8_t mask = static_cast<uint8_t>((1 << bits) - 1), top = static_cast<uint8_t>(1 << (bits - 1));
    const bool sgn = to == DType::kInt4 || to == DType::kInt2;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t v = src[i] & mask;
      dst[i] = sgn && (v & top) ? static_cast<uint8_t>(v | ~mask) : v;
    }
    return;
  }
  if (to == DType::kBool)
    for (int64_t i = 0; i < n; ++i)
      if (src[i] > 1) fail(ErrorCode::kRuntime, "BitCast: byte ", static_cast<int>(src[i]), " at element ", i, " is not a bool (0 or 1)");
  if (x.nbytes()) std::memcpy(dst, src, x.nbytes());
}

FN_FACTORY(make_bitcast, bitcast_compute)

std::unique_ptr<Kernel> make_range(const KernelCreateInfo& info) {
  // stash_type (opset 27): 1 (float, the default) or the input's own half type.
  const int64_t stash = info.node.opset >= 27 ? info.node.attr_int("stash_type", 1) : 1;
  if (stash != 1 && stash != static_cast<int64_t>(info.input_dtype(0)))
    fail(ErrorCode::kInvalidGraph, info.node.label(), ": stash_type ", stash, " must be 1 (float) or the input's type");
  return make_fn_kernel(stash == 1 ? 1 : 0, range_compute);
}
#undef FN_FACTORY

using namespace types;
/// Float8 (opset 19 for Reshape, 21 for the other views) and 4-bit integers (opset 21).
constexpr TypeMask kNarrow = kFloat8Types | kInt4Types | kNarrow25;  // (the 23-25 types: only models of those opsets have them)

const KernelDef kDefs[] = {
    {"", "Constant", 1, 99, {}, make_constant},
    {"", "Identity", 1, 99, {}, make_identity},
    {"", "BitCast", 26, 99, {{0, (kAll & ~type_mask({DType::kString})) | kNarrow}}, make_bitcast},
    {"", "Shape", 1, 99, {}, make_shape},
    {"", "Size", 1, 99, {}, make_size},
    {"", "Reshape", 1, 18, {{0, kAll}}, make_kernel<ReshapeKernel>},
    {"", "Reshape", 19, 20, {{0, kAll | kFloat8Types}}, make_kernel<ReshapeKernel>},
    {"", "Reshape", 21, 99, {{0, kAll | kNarrow}}, make_kernel<ReshapeKernel>},
    {"", "Flatten", 1, 20, {{0, kAll}}, make_kernel<FlattenKernel>},
    {"", "Flatten", 21, 99, {{0, kAll | kNarrow}}, make_kernel<FlattenKernel>},
    {"", "Squeeze", 1, 20, {{0, kAll}}, make_squeeze},
    {"", "Squeeze", 21, 99, {{0, kAll | kNarrow}}, make_squeeze},
    {"", "Unsqueeze", 1, 20, {{0, kAll}}, make_squeeze},
    {"", "Unsqueeze", 21, 99, {{0, kAll | kNarrow}}, make_squeeze},
    {"", "Transpose", 1, 20, {{0, kAll}}, make_transpose},
    {"", "Transpose", 21, 99, {{0, kAll | kNarrow}}, make_transpose},
    {"", "Concat", 1, 99, {{0, kAll}}, make_concat},
    {"", "Split", 1, 99, {{0, kAll}}, make_split},
    {"", "Slice", 1, 99, {{0, kAll}}, make_slice},
    {"", "Gather", 1, 99, {{0, kAll}, {1, kIndex}}, make_gather},
    {"", "Expand", 8, 99, {{0, kAll}}, make_expand},
    {"", "Tile", 1, 99, {{0, kAll}}, make_tile},
    {"", "Pad", 1, 20, {{0, kAll}}, make_pad},
    {"", "Pad", 21, 99, {{0, kAll | kNarrow}}, make_pad},
    {"", "ConstantOfShape", 9, 99, {}, make_constant_of_shape},
    {"", "Range", 11, 99, {{0, kNumeric}}, make_range},
};

}  // namespace

std::span<const KernelDef> tensor_kernels() { return kDefs; }

}  // namespace onyx::cpu
