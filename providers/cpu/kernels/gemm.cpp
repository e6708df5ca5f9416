// SGEMM: BLIS-style blocking (kc x nc panels of B, mc x kc blocks of A), packed operands, and an
// MR x NR register-blocked micro-kernel over GCC vector extensions.
#include "kernels/gemm.hpp"
#include "kernels/vmath.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>

#include "core/common.hpp"
#include "ir/graph.hpp"

namespace onyx::cpu {
namespace {

#if defined(__AVX512F__)
constexpr int kVec = 16;
constexpr int kMR = 12;
#elif defined(__AVX__)
constexpr int kVec = 8;
constexpr int kMR = 6;
#else
constexpr int kVec = 4;
constexpr int kMR = 4;
#endif
constexpr int kNV = 2;  // vectors per micro-tile row
constexpr int kNR = kVec * kNV;
constexpr int64_t kKC = 512;
constexpr int64_t kMC = kMR * 16;
constexpr int64_t kNC = kNR * 8;  // columns of B packed at a time (a multiple of kNR): kKC x kNC floats, 512 KiB
constexpr double kSharedAFloats = 1 << 20;  // the most of A packed once for all tasks (4 MiB)
constexpr double kBigABytes = 256 << 10;  // an A streamed once per thread, not per task (bytes)
// A pre-packed B whose k-block of the region's whole width is bigger than this (a vocabulary
// projection: 512 x 50257 floats) is taken in column blocks, like an unpacked one: else every row
// tile reads the block back from memory. Where A is packed once for all the blocks (Operands::
// a_all: a prompt's 128 rows), the blocks are taken from kPackedL2Bytes on: then every row tile
// reads a block that L2 keeps, not one from L3 (a Llama FFN's 512 x 2048 floats: 4 MiB, 11 passes
// of 12 rows; on a 2 MiB-L2 Xeon it ran at 134 GFLOP/s, in blocks at 158).
constexpr int64_t kPackedBlockBytes = 8 << 20;
constexpr int64_t kPackedL2Bytes = 1 << 20;
// Steps of k per cache line of the next block of a pre-packed B that the micro-kernel prefetches.
constexpr int64_t kPrefetchEvery = 4;

/// Whether a pre-packed B's k-block over `cols` columns is that wide; a_once: A is packed once
/// for every block.
bool packed_too_wide(const PackedMatrix* pb, int64_t k, int64_t cols, bool a_once) {
  return pb && std::min(pb->k_block(), k) * cols * static_cast<int64_t>(sizeof(float)) >
                   (a_once ? kPackedL2Bytes : kPackedBlockBytes);
}
static_assert(kMR == kPanelRows, "the panel height APackers write");
static_assert(kNR == kPanelCols, "the panel width BPackers write");

typedef float vf __attribute__((vector_size(kVec * sizeof(float))));

inline vf loadu(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void storeu(float* p, vf v) { std::memcpy(p, &v, sizeof(v)); }

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

float* aligned_floats(size_t n) {
  void* p = std::aligned_alloc(64, std::max<size_t>(64, (n * sizeof(float) + 63) / 64 * 64));
  if (!p) fail(ErrorCode::kRuntime, "out of memory allocating ", n * sizeof(float), " bytes of GEMM workspace");
  return static_cast<float*>(p);
}

/// A per-thread scratch buffer that only grows.
/// A thread's packing buffer. Its first use takes at least `floor` floats (a whole block), so that
/// a thread that met only partial blocks so far does not allocate mid-run when a full one comes.
struct Scratch {
  float* p = nullptr;
  size_t n = 0;
  ~Scratch() { std::free(p); }
  float* get(size_t want, size_t floor = 0) {
    want = std::max(want, floor);
    if (want > n) {
      std::free(p);
      p = aligned_floats(want);
      n = want;
    }
    return p;
  }
};

// ---- packing ----

/// Packs rows [r0, r0+rows) x k-range [k0, k0+kc) of op(A) into MR-row panels (zero padded).
void pack_a_block(bool trans, const float* a, int64_t lda, int64_t m, int64_t r0, int64_t rows, int64_t k0, int64_t kc,
                  float scale, float* dst) {
  for (int64_t p = 0; p < rows; p += kMR) {
    float* panel = dst + (p / kMR) * kMR * kc;
    const int64_t mr = std::min<int64_t>({kMR, rows - p, std::max<int64_t>(0, m - (r0 + p))});
    if (trans) {
      // op(A) = A^T: row r of op(A) is column r of A; the panel's MR rows are MR consecutive
      // floats of each row of A, read along it.
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = a + (k0 + k) * lda + r0 + p;
        float* d = panel + k * kMR;
        for (int64_t i = 0; i < mr; ++i) d[i] = src[i] * scale;
        for (int64_t i = mr; i < kMR; ++i) d[i] = 0.0f;
      }
      continue;
    }
    for (int64_t i = 0; i < kMR; ++i) {
      const int64_t r = r0 + p + i;
      if (i >= mr || r >= m) {
        for (int64_t k = 0; k < kc; ++k) panel[k * kMR + i] = 0.0f;
        continue;
      }
      const float* src = a + r * lda + k0;
      for (int64_t k = 0; k < kc; ++k) panel[k * kMR + i] = src[k] * scale;
    }
  }
}

/// Packs k-range [k0, k0+kc) x cols [c0, c0+cols) of op(B) into NR-column panels (zero padded).
void pack_b_block(bool trans, const float* b, int64_t ldb, int64_t n, int64_t k0, int64_t kc, int64_t c0, int64_t cols,
                  float scale, float* dst) {
  if (!trans) {
    // In strips of 16 rows of B: the strip is read along its rows (a wide B is not walked down
    // a column of pages 32 floats at a time) and each panel gets 16 consecutive rows (the panels
    // lie kc * 32 floats apart, and writing one row into each of them in turn would keep
    // evicting the same cache sets).
    constexpr int64_t kStrip = 16;
    for (int64_t ks = 0; ks < kc; ks += kStrip) {
      const int64_t ke = std::min(kc, ks + kStrip);
      for (int64_t q = 0; q < cols; q += kNR) {
        const int64_t nr = std::min<int64_t>({kNR, cols - q, n - (c0 + q)});
        float* panel = dst + (q / kNR) * kNR * kc;
        for (int64_t k = ks; k < ke; ++k) {
          const float* src = b + (k0 + k) * ldb + c0 + q;
          float* d = panel + k * kNR;
          if (nr == kNR && scale == 1.0f) {
            for (int v = 0; v < kNV; ++v) storeu(d + v * kVec, loadu(src + v * kVec));
          } else {
            for (int64_t j = 0; j < nr; ++j) d[j] = src[j] * scale;
            for (int64_t j = nr; j < kNR; ++j) d[j] = 0.0f;
          }
        }
      }
    }
    return;
  }
  for (int64_t q = 0; q < cols; q += kNR) {
    float* panel = dst + (q / kNR) * kNR * kc;
    const int64_t nr = std::min<int64_t>({kNR, cols - q, n - (c0 + q)});
    for (int64_t j = 0; j < kNR; ++j) {
      if (j >= nr) {
        for (int64_t k = 0; k < kc; ++k) panel[k * kNR + j] = 0.0f;
        continue;
      }
      const float* src = b + (c0 + q + j) * ldb + k0;
      for (int64_t k = 0; k < kc; ++k) panel[k * kNR + j] = src[k] * scale;
    }
  }
}

// ---- micro-kernel ----

inline vf apply_act(vf v, const GemmEpilogue* ep) {
  if (!ep) return v;
  const vf zero = {};
  switch (ep->act) {
    case GemmEpilogue::Act::kRelu: return v > zero ? v : zero;
    case GemmEpilogue::Act::kClip: {
      const vf lo = zero + ep->lo, hi = zero + ep->hi;
      v = v < lo ? lo : v;
      return v > hi ? hi : v;
    }
    default: return v;
  }
}

inline float apply_act(float v, const GemmEpilogue* ep) {
  if (!ep) return v;
  switch (ep->act) {
    case GemmEpilogue::Act::kRelu: return v > 0 ? v : 0;
    case GemmEpilogue::Act::kClip: return std::min(std::max(v, ep->lo), ep->hi);
    case GemmEpilogue::Act::kGelu: return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    default: return v;
  }
}

/// GELU over n finished outputs of a tile row (after bias), vectorised.
inline void gelu_row(float* p, int64_t n) {
  vmath::map(p, p, n, [](vmath::vf v) { return 0.5f * v * (1.0f + vmath::erf(v * 0.70710678118654752f)); });
}

/// Stores an MR x NR tile transposed: element (i, j) to c[j * ldc + i] (C (+)= acc, then the
/// epilogue), j < nr. Each 16-column half is transposed in registers, so that every column of
/// the tile is one masked store of MR consecutive floats.
template <int MR>
void store_tile_transposed(vf (&acc)[MR][kNV], float* c, int64_t ldc, int64_t nr, bool accumulate,
                           const GemmEpilogue* ep, int64_t row0, int64_t col0) {
#if defined(__AVX512F__)
  static_assert(kVec == vmath::kLanes);
  {
    for (int v = 0; v < kNV; ++v) {
      const int64_t cols = std::clamp<int64_t>(nr - v * kVec, 0, kVec);
      if (cols == 0) break;
      float* cv = c + v * kVec * ldc;
      vmath::vf t[vmath::kLanes];
      for (int i = 0; i < vmath::kLanes; ++i) t[i] = i < MR ? acc[i][v] : vmath::vf{};
      if (accumulate) {
        vmath::vf old[vmath::kLanes];
        for (int j = 0; j < vmath::kLanes; ++j) old[j] = j < cols ? vmath::load_n(cv + j * ldc, MR) : vmath::vf{};
        vmath::transpose(old);
        for (int i = 0; i < MR; ++i) t[i] += old[i];
      }
      if (ep && ep->sum) {
        // The sum's tile, in C's (transposed) layout: like the accumulation above.
        const float* sv = ep->sum + (col0 + v * kVec) * ldc + row0;
        vmath::vf z[vmath::kLanes];
        for (int j = 0; j < vmath::kLanes; ++j) z[j] = j < cols ? vmath::load_n(sv + j * ldc, MR) : vmath::vf{};
        vmath::transpose(z);
        for (int i = 0; i < MR; ++i) t[i] += z[i];
      }
      if (ep) {
        const vmath::vf bias_col = ep->bias && !ep->bias_per_row ? vmath::load_n(ep->bias + col0 + v * kVec, cols) : vmath::vf{};
        for (int i = 0; i < MR; ++i) {
          vmath::vf x = t[i];
          if (ep->bias) x += ep->bias_per_row ? vmath::splat(ep->bias[row0 + i]) : bias_col;
          if (ep->act == GemmEpilogue::Act::kGelu)
            x = 0.5f * x * (1.0f + vmath::erf(x * 0.70710678118654752f));
          else
            x = apply_act(x, ep);
          t[i] = x;
        }
      }
      vmath::transpose(t);
      for (int64_t j = 0; j < cols; ++j) vmath::store_n(cv + j * ldc, t[j], MR);
    }
  }
#else
  {
    float tmp[MR][kNR];
    for (int i = 0; i < MR; ++i)
      for (int v = 0; v < kNV; ++v) storeu(tmp[i] + v * kVec, acc[i][v]);
    for (int64_t j = 0; j < nr; ++j)
      for (int i = 0; i < MR; ++i) {
        float x = tmp[i][j];
        float& d = c[j * ldc + i];
        if (accumulate) x += d;
        if (ep) {
          if (ep->bias) x += ep->bias_per_row ? ep->bias[row0 + i] : ep->bias[col0 + j];
          if (ep->sum) x += ep->sum[(col0 + j) * ldc + row0 + i];
          x = ep->act == GemmEpilogue::Act::kGelu ? 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)) : apply_act(x, ep);
        }
        d = x;
      }
  }
#endif
}

/// Asks for the cache lines of the C tile (and of the sum's tile) the micro-kernel will read and
/// write once its k-loop is done, so that they arrive during it: C's rows are written as a dozen
/// (or, stored transposed, 32) streams at once, more than the hardware prefetchers follow.
template <int MR, bool TC>
inline void prefetch_tile(const float* c, int64_t ldc, int64_t nr, const float* sum) {
  const int rows = TC ? static_cast<int>(nr) : MR;
  const int64_t bytes = (TC ? MR : nr) * static_cast<int64_t>(sizeof(float));
  for (int i = 0; i < rows; ++i)
    for (int64_t b = 0; b < bytes; b += 64) {
      __builtin_prefetch(reinterpret_cast<const char*>(c + i * ldc) + b, 1);
      if (sum) __builtin_prefetch(reinterpret_cast<const char*>(sum + i * ldc) + b, 0);
    }
}

/// C (+)= acc for an MR x NR tile at c (row stride ldc; nr columns kept), then the epilogue
/// (bias, the sum, the activation) when ep is given: the last k-block.
template <int MR>
inline void store_tile(vf (&acc)[MR][kNV], float* __restrict c, int64_t ldc, int64_t nr, bool accumulate,
                       const GemmEpilogue* ep, int64_t row0, int64_t col0) {
  const bool full = nr == kNR;
  const bool gelu = ep && ep->act == GemmEpilogue::Act::kGelu;
  for (int i = 0; i < MR; ++i) {
    float* crow = c + i * ldc;
    const float* srow = ep && ep->sum ? ep->sum + (row0 + i) * ldc + col0 : nullptr;
    if (full) {
      for (int v = 0; v < kNV; ++v) {
        vf x = acc[i][v];
        if (accumulate) x += loadu(crow + v * kVec);
        if (ep) {
          if (ep->bias) x += ep->bias_per_row ? (vf{} + ep->bias[row0 + i]) : loadu(ep->bias + col0 + v * kVec);
          if (srow) x += loadu(srow + v * kVec);
          x = apply_act(x, ep);
        }
        storeu(crow + v * kVec, x);
      }
      if (gelu) gelu_row(crow, kNR);
    } else {
#if defined(__AVX512F__)
      static_assert(kVec == vmath::kLanes);
      if (!gelu) {
        // Masked vectors: a partial panel (a convolution's 16 or 24 output channels) is not
        // stored one float at a time.
        for (int v = 0; v < kNV; ++v) {
          const int64_t cols = std::clamp<int64_t>(nr - v * kVec, 0, kVec);
          if (cols == 0) break;
          vf x = acc[i][v];
          if (accumulate) x += vmath::load_n(crow + v * kVec, cols);
          if (ep) {
            if (ep->bias)
              x += ep->bias_per_row ? (vf{} + ep->bias[row0 + i]) : vmath::load_n(ep->bias + col0 + v * kVec, cols);
            if (srow) x += vmath::load_n(srow + v * kVec, cols);
            x = apply_act(x, ep);
          }
          vmath::store_n(crow + v * kVec, x, cols);
        }
        continue;
      }
#endif
      float tmp[kNR];
      storeu(tmp, acc[i][0]);
      storeu(tmp + kVec, acc[i][1]);
      for (int64_t j = 0; j < nr; ++j) {
        float x = tmp[j];
        if (accumulate) x += crow[j];
        if (ep) {
          if (ep->bias) x += ep->bias_per_row ? ep->bias[row0 + i] : ep->bias[col0 + j];
          if (srow) x += srow[j];
          if (!gelu) x = apply_act(x, ep);
        }
        crow[j] = x;
      }
      if (gelu) gelu_row(crow, nr);
    }
  }
}

/// acc(MR x NR) = A-panel * B-panel over kc; then C (+)= acc, epilogue on the last k-block
/// (C transposed when TC: see store_tile_transposed).
/// With SHIFT, B is not a packed panel but a shifted view (see sgemm_b_shifted): row k of the
/// panel is the kNR floats at b + koff[k].
/// pf, when not null, is memory the caller will read soon (the next block of a pre-packed B):
/// one cache line of it is asked into L2 every kPrefetchEvery steps of k, kc / kPrefetchEvery
/// lines in all, so that a B streamed from memory arrives while this tile computes.
template <int MR, bool TC, bool SHIFT = false>
void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b, const int64_t* __restrict koff,
                  float* __restrict c, int64_t ldc, int64_t nr, bool accumulate, const GemmEpilogue* ep, int64_t row0,
                  int64_t col0, const char* pf) {
  vf acc[MR][kNV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < kNV; ++v) acc[i][v] = vf{};
  prefetch_tile<MR, TC>(c, ldc, nr, ep && ep->sum ? ep->sum + (TC ? col0 * ldc + row0 : row0 * ldc + col0) : nullptr);
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const float* bk = SHIFT ? b + koff[k] : b + k * kNR;
    const vf b0 = loadu(bk);
    const vf b1 = loadu(bk + kVec);
    const float* ak = a + k * kMR;
    for (int i = 0; i < MR; ++i) {
      const float ai = ak[i];
      acc[i][0] += b0 * ai;
      acc[i][1] += b1 * ai;
    }
    if (pf && k % kPrefetchEvery == 0) __builtin_prefetch(pf + (k / kPrefetchEvery) * 64, 0, 2);
  }
  if constexpr (TC)
    store_tile_transposed<MR>(acc, c, ldc, nr, accumulate, ep, row0, col0);
  else
    store_tile<MR>(acc, c, ldc, nr, accumulate, ep, row0, col0);
}

/// The micro-kernel with A read in place through a gather (see AGather): element (i, k) of the
/// tile's A is rows[i][aoff[k]]; B a packed panel.
/// With NV = 1 only the panel's first kVec columns are computed (a last panel of at most kVec).
template <int MR, int NV = kNV>
void micro_kernel_gather(int64_t kc, const float* const* rows, const int64_t* __restrict aoff, const float* __restrict b,
                         float* __restrict c, int64_t ldc, int64_t nr, bool accumulate, const GemmEpilogue* ep,
                         int64_t row0, int64_t col0) {
  const float* r[MR];
  for (int i = 0; i < MR; ++i) r[i] = rows[i];
  vf acc[MR][kNV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < kNV; ++v) acc[i][v] = vf{};
  prefetch_tile<MR, false>(c, ldc, nr, ep && ep->sum ? ep->sum + row0 * ldc + col0 : nullptr);
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const float* bk = b + k * kNR;
    const int64_t o = aoff[k];
    if constexpr (NV == 1) {
      const vf b0 = loadu(bk);
      for (int i = 0; i < MR; ++i) acc[i][0] += b0 * r[i][o];
    } else {
      const vf b0 = loadu(bk);
      const vf b1 = loadu(bk + kVec);
      for (int i = 0; i < MR; ++i) {
        const float ai = r[i][o];
        acc[i][0] += b0 * ai;
        acc[i][1] += b1 * ai;
      }
    }
  }
  store_tile<MR>(acc, c, ldc, nr, accumulate, ep, row0, col0);
}

using GatherFn = void (*)(int64_t, const float* const*, const int64_t*, const float*, float*, int64_t, int64_t, bool,
                          const GemmEpilogue*, int64_t, int64_t);
template <int NV, int... I>
constexpr auto make_gather_table(std::integer_sequence<int, I...>) {
  return std::array<GatherFn, sizeof...(I)>{&micro_kernel_gather<I + 1, NV>...};
}
constexpr auto kMicroGather = make_gather_table<kNV>(std::make_integer_sequence<int, kMR>{});
constexpr auto kMicroGatherHalf = make_gather_table<1>(std::make_integer_sequence<int, kMR>{});

/// Rows of the wide gathered-A micro-kernel's tile (AVX-512), and the shortest k-block it takes.
constexpr int kWideMR = 6;
constexpr int64_t kWideMinK = 160;
/// The longest single k-block the short gathered kernels take (the 12 x 32 tile's range).
constexpr int64_t kShortMaxK = kWideMinK - 1;

/// The first n (0..kVec) floats at p in a vector, zeros in the other lanes (nothing past p + n
/// is read), and the store of a vector's first n lanes: vmath's where its vectors are these
/// (AVX-512, AVX), else (kVec = 4 under SSE) through memcpy.
inline vf loadu_n(const float* p, int64_t n) {
#if defined(__AVX__)
  static_assert(kVec == vmath::kLanes);
  return vmath::load_n(p, n);
#else
  vf v{};
  std::memcpy(&v, p, static_cast<size_t>(n) * sizeof(float));
  return v;
#endif
}
inline void storeu_n(float* p, vf v, int64_t n) {
#if defined(__AVX__)
  vmath::store_n(p, v, n);
#else
  std::memcpy(p, &v, static_cast<size_t>(n) * sizeof(float));
#endif
}

/// A gathered product's epilogue resolved once per block for micro_kernel_gather_short: the bias
/// per column (or null), the sum (or null), and the activation as a clamp (Relu: [0, inf), none:
/// (-inf, inf)); NaN passes through.
struct ShortEpilogue {
  const float* bias = nullptr;
  const float* sum = nullptr;
  vf lo, hi;

  /// The epilogue of ep (null: none), or nothing when the short kernel cannot apply it (GELU, a
  /// bias per row).
  static std::optional<ShortEpilogue> of(const GemmEpilogue* ep) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    ShortEpilogue e;
    e.lo = vf{} - kInf;
    e.hi = vf{} + kInf;
    if (!ep) return e;
    if (ep->act == GemmEpilogue::Act::kGelu || (ep->bias && ep->bias_per_row)) return std::nullopt;
    e.bias = ep->bias;
    e.sum = ep->sum;
    if (ep->act == GemmEpilogue::Act::kRelu) e.lo = vf{};
    if (ep->act == GemmEpilogue::Act::kClip) {
      e.lo = vf{} + ep->lo;
      e.hi = vf{} + ep->hi;
    }
    return e;
  }
};

/// The short kernels' accumulators at the start: the bias of each column vector (zeros past nr).
template <int MR, int NV>
__attribute__((always_inline)) inline void short_start(vf (&acc)[MR][NV], int64_t nr, const ShortEpilogue& e,
                                                       int64_t col0) {
  vf bias[NV] = {};
  if (e.bias && nr == NV * kVec)
    for (int v = 0; v < NV; ++v) bias[v] = loadu(e.bias + col0 + v * kVec);
  else if (e.bias)
    for (int v = 0; v < NV; ++v)
      bias[v] = loadu_n(e.bias + col0 + v * kVec, std::clamp<int64_t>(nr - v * kVec, 0, kVec));
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = bias[v];
}

/// The short kernels' epilogue over the tile's nr columns: C when accumulating, the sum (sum: the
/// tile's, or null), the clamp, the store. The loops unroll so that every index into acc is a
/// constant (the accumulators stay in registers), and the rows' pointers advance by ldc.
template <int MR, int NV>
__attribute__((always_inline)) inline void short_finish(vf (&acc)[MR][NV], int64_t nr, float* c, int64_t ldc,
                                                        bool accumulate, const ShortEpilogue& e, const float* sum) {
  const vf lo = e.lo, hi = e.hi;
  auto rows = [&](auto load, auto store) __attribute__((always_inline)) {
    float* cp = c;
    const float* sp = sum;
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i, cp += ldc) {
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) {
        vf x = acc[i][v];
        if (accumulate) x += load(cp + v * kVec, v);
        if (sp) x += load(sp + v * kVec, v);
        x = x < lo ? lo : x;
        store(cp + v * kVec, x > hi ? hi : x, v);
      }
      if (sp) sp += ldc;
    }
  };
  if (nr == NV * kVec) {  // whole vectors: plain loads and stores (masked ones cost more)
    rows([](const float* p, int) { return loadu(p); }, [](float* p, vf x, int) { storeu(p, x); });
  } else {
    int64_t cols[NV];
    for (int v = 0; v < NV; ++v) cols[v] = std::clamp<int64_t>(nr - v * kVec, 0, kVec);
    rows([&](const float* p, int v) { return loadu_n(p, cols[v]); },
         [&](float* p, vf x, int v) { storeu_n(p, x, cols[v]); });
  }
}

/// The short kernels' prefetch of the tile's C lines (and the sum's): a line per 16 columns.
template <int MR, int NV>
inline void short_prefetch(const float* c, int64_t ldc, const float* sum) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) {
      __builtin_prefetch(c + i * ldc + v * kVec, 1);
      if (sum) __builtin_prefetch(sum + i * ldc + v * kVec, 0);
    }
}

/// One step of k of the short kernels: acc(i, :) += A(i, k) (from a_at(i)) times B's row k (bk).
template <int MR, int NV, class AAt>
__attribute__((always_inline)) inline void short_step(vf (&acc)[MR][NV], const float* bk, AAt a_at) {
  vf bv[NV];
  for (int v = 0; v < NV; ++v) bv[v] = loadu(bk + v * kVec);
  for (int i = 0; i < MR; ++i) {
    const float ai = a_at(i);
    for (int v = 0; v < NV; ++v) acc[i][v] += bv[v] * ai;
  }
}

/// micro_kernel_gather for a product whose only k-block is short (1x1 convolutions over few
/// channels), where the generic kernel's per-tile work outweighs its 16-144 steps of k: the
/// accumulators start from the bias, and the epilogue (C when accumulating, the sum, the clamp)
/// is applied in registers with no per-vector decisions.
template <int MR, int NV>
void micro_kernel_gather_short(int64_t kc, const float* const* rows, const int64_t* __restrict aoff,
                               const float* __restrict b, float* __restrict c, int64_t ldc, int64_t nr, bool accumulate,
                               const ShortEpilogue& e, int64_t row0, int64_t col0) {
  const float* r[MR];
  for (int i = 0; i < MR; ++i) r[i] = rows[i];
  vf acc[MR][NV];
  short_start(acc, nr, e, col0);
  const float* sum = e.sum ? e.sum + row0 * ldc + col0 : nullptr;
  short_prefetch<MR, NV>(c, ldc, sum);
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const int64_t o = aoff[k];
    short_step(acc, b + k * kNR, [&](int i) { return r[i][o]; });
  }
  short_finish(acc, nr, c, ldc, accumulate, e, sum);
}

/// The short kernel for a whole tile (kMR rows) of a plain A (AGather::lda) of K columns: row i
/// of the tile is a + i K, so each broadcast is addressed from one pointer at a constant offset
/// (the gathered form's twelve row pointers outnumber the free general registers and spill), and
/// the k-loop has a known count: as bare loops over 12000 rows x 96 columns, one row pointer
/// each, the compiled K took 0.72-0.87 of a run-time K's time at K = 24, 0.85 at 32, 0.90 at 64.
template <int K, int NV>
void micro_kernel_plain(const float* __restrict a, const float* __restrict b, float* __restrict c, int64_t ldc,
                        int64_t nr, bool accumulate, const ShortEpilogue& e, int64_t row0, int64_t col0) {
  vf acc[kMR][NV];
  short_start(acc, nr, e, col0);
  const float* sum = e.sum ? e.sum + row0 * ldc + col0 : nullptr;
  short_prefetch<kMR, NV>(c, ldc, sum);
#pragma GCC unroll 16
  for (int k = 0; k < K; ++k) short_step(acc, b + k * kNR, [&](int i) { return a[i * K + k]; });
  short_finish(acc, nr, c, ldc, accumulate, e, sum);
}

using PlainFn = void (*)(const float*, const float*, float*, int64_t, int64_t, bool, const ShortEpilogue&, int64_t,
                         int64_t);
/// The K a plain kernel is compiled for (the channel counts of common CNNs' 1x1 convolutions
/// below kWideMinK), and its two forms (one column vector, two).
constexpr int kPlainK[] = {16, 24, 32, 40, 48, 64, 80, 96, 112, 128, 144};
template <int... I>
constexpr auto make_plain_table(std::integer_sequence<int, I...>) {
  return std::array<std::array<PlainFn, 2>, sizeof...(I)>{
      std::array<PlainFn, 2>{&micro_kernel_plain<kPlainK[I], 1>, &micro_kernel_plain<kPlainK[I], 2>}...};
}
constexpr auto kMicroPlain = make_plain_table(std::make_integer_sequence<int, std::size(kPlainK)>{});

/// The plain kernel for K and nv column vectors, or null.
PlainFn plain_kernel(int64_t k, int nv) {
  for (size_t i = 0; i < std::size(kPlainK); ++i)
    if (kPlainK[i] == k) return kMicroPlain[i][nv - 1];
  return nullptr;
}

using GatherShortFn = void (*)(int64_t, const float* const*, const int64_t*, const float*, float*, int64_t, int64_t,
                               bool, const ShortEpilogue&, int64_t, int64_t);
template <int NV, int... I>
constexpr auto make_gather_short_table(std::integer_sequence<int, I...>) {
  return std::array<GatherShortFn, sizeof...(I)>{&micro_kernel_gather_short<I + 1, NV>...};
}
constexpr auto kMicroGatherShort = make_gather_short_table<kNV>(std::make_integer_sequence<int, kMR>{});
constexpr auto kMicroGatherShortHalf = make_gather_short_table<1>(std::make_integer_sequence<int, kMR>{});

#if defined(__AVX512F__)
/// The gathered-A micro-kernel over two adjacent B panels: MR (at most kWideMR) rows x 2 kNR
/// columns, b the first panel and b + kNR kc the second (nr > kNR; the second panel's columns
/// past nr are zero in the packing, computed and dropped). Per k it loads MR broadcasts and four
/// vectors for 4 MR FMAs, where the 12 x 32 tile loads twelve and two for 24: with A's rows as
/// pointers (kept in general registers, twelve of which do not fit beside the loop's own: some
/// spill), the narrow tile ran ~15% below this one as bare loops over cached panels, and took
/// 12-30% longer on ResNet-50's layers over 512 and more input channels.
template <int MR>
void micro_kernel_gather_wide(int64_t kc, const float* const* rows, const int64_t* __restrict aoff,
                              const float* __restrict b, float* __restrict c, int64_t ldc, int64_t nr, bool accumulate,
                              const GemmEpilogue* ep, int64_t row0, int64_t col0) {
  static_assert(MR <= kWideMR);
  const float* r[MR];
  for (int i = 0; i < MR; ++i) r[i] = rows[i];
  const float* b2 = b + kNR * kc;
  vf acc[MR][2 * kNV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < 2 * kNV; ++v) acc[i][v] = vf{};
  auto step = [&](int64_t k) __attribute__((always_inline)) {
    const float* bk = b + k * kNR;
    const float* bk2 = b2 + k * kNR;
    const int64_t o = aoff[k];
    const vf b0 = loadu(bk), b1 = loadu(bk + kVec), b2v = loadu(bk2), b3 = loadu(bk2 + kVec);
    for (int i = 0; i < MR; ++i) {
      const float ai = r[i][o];
      acc[i][0] += b0 * ai;
      acc[i][1] += b1 * ai;
      acc[i][2] += b2v * ai;
      acc[i][3] += b3 * ai;
    }
  };
  // The lines of the C tile (and of the sum's) the epilogue will touch, asked for one every
  // `every` steps of the first part of the loop rather than all at once: issued together, the 48
  // of a tile whose rows are not cached stall the loop's own loads (3136 x 256 x 64 with a
  // residual sum, its operands not cached: ~10% slower). Callers pass kc of at least kWideMinK.
  const int per_row = static_cast<int>((nr * static_cast<int64_t>(sizeof(float)) + 63) / 64);
  const int lines = MR * per_row;
  const int64_t every = std::max<int64_t>(1, kc / (lines + 1));
  const char* pc = reinterpret_cast<const char*>(c);
  const char* ps = ep && ep->sum ? reinterpret_cast<const char*>(ep->sum + row0 * ldc + col0) : nullptr;
  const int64_t ld = ldc * static_cast<int64_t>(sizeof(float));
  int64_t k = 0;
  for (int l = 0; l < lines && k + every <= kc; ++l) {
    const int64_t off = (l / per_row) * ld + (l % per_row) * 64;
    __builtin_prefetch(pc + off, 1);
    if (ps) __builtin_prefetch(ps + off, 0);
    for (int64_t e = 0; e < every; ++e, ++k) step(k);
  }
#pragma GCC unroll 4
  for (; k < kc; ++k) step(k);
  vf lo[MR][kNV], hi[MR][kNV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < kNV; ++v) {
      lo[i][v] = acc[i][v];
      hi[i][v] = acc[i][kNV + v];
    }
  store_tile<MR>(lo, c, ldc, kNR, accumulate, ep, row0, col0);
  store_tile<MR>(hi, c + kNR, ldc, nr - kNR, accumulate, ep, row0, col0 + kNR);
}

template <int... I>
constexpr auto make_gather_wide_table(std::integer_sequence<int, I...>) {
  return std::array<GatherFn, sizeof...(I)>{&micro_kernel_gather_wide<I + 1>...};
}
constexpr auto kMicroGatherWide = make_gather_wide_table(std::make_integer_sequence<int, kWideMR>{});
#endif

using MicroFn = void (*)(int64_t, const float*, const float*, const int64_t*, float*, int64_t, int64_t, bool,
                         const GemmEpilogue*, int64_t, int64_t, const char*);

template <bool TC, bool SHIFT, int... I>
constexpr auto make_table(std::integer_sequence<int, I...>) {
  return std::array<MicroFn, sizeof...(I)>{&micro_kernel<I + 1, TC, SHIFT>...};
}
constexpr auto kMicro = make_table<false, false>(std::make_integer_sequence<int, kMR>{});
constexpr auto kMicroT = make_table<true, false>(std::make_integer_sequence<int, kMR>{});
constexpr auto kMicroShifted = make_table<false, true>(std::make_integer_sequence<int, kMR>{});

// ---- driver ----

struct Operands {
  const PackedMatrix* pa;
  bool ta;
  const float* a;
  int64_t lda;
  float alpha;
  const PackedMatrix* pb;
  bool tb;
  const float* b;
  int64_t ldb;
  int64_t m, n, k;
  float* c;
  int64_t ldc;
  const GemmEpilogue* ep;
  bool c_initialized;  // accumulate into C on the first k-block
  const BPacker* pack_b = nullptr;  // B block by block (instead of pb / b)
  const APacker* pack_a = nullptr;  // A block by block (instead of pa / a)
  bool c_trans = false;             // C stored transposed: element (i, j) at c[j * ldc + i]
  const float* a_all = nullptr;     // all of A packed up front (pa's layout), shared by the tasks
  const int64_t* b_koff = nullptr;  // B is a shifted view: element (k, j) at b[b_koff[k] + j]
  bool b_readable_past_n = false;   // the view's reads may go on to the end of its last panel
  const AGather* a_gather = nullptr;  // A read in place through a gather (B pre-packed, C plain)
};

/// Rows [r0, r0 + rows) x k-range [p0, p0 + kc) of an A that is not pre-packed, in panels at dst:
/// from the caller's packer, or packed from the matrix.
void pack_a_rows(const Operands& o, int64_t r0, int64_t rows, int64_t p0, int64_t kc, float* dst) {
  if (o.pack_a)
    (*o.pack_a)(r0, rows, p0, kc, dst);
  else
    pack_a_block(o.ta, o.a, o.lda, o.m, r0, rows, p0, kc, o.alpha, dst);
}

/// The kMR x kNR tiles of a gathered-A product over one k-block [p0, p0 + kc): a short product's
/// only k-block (its epilogue resolved here once) takes the short kernels, whole tiles of a plain
/// A of a compiled K the plain one, the rest the general gathered kernel.
struct GatherTiles {
  const Operands& o;
  int64_t p0, kc;
  const GemmEpilogue* ep;
  std::optional<ShortEpilogue> short_ep;
  PlainFn plain[2] = {nullptr, nullptr};

  GatherTiles(const Operands& ops, int64_t k0, int64_t kcount, const GemmEpilogue* epilogue)
      : o(ops), p0(k0), kc(kcount), ep(epilogue) {
    if (p0 == 0 && kc == o.k && kc <= kShortMaxK) short_ep = ShortEpilogue::of(ep);
    if (short_ep && o.a_gather->lda == kc) plain[0] = plain_kernel(kc, 1), plain[1] = plain_kernel(kc, 2);
  }

  /// Tile (i, j), mr x nr, with bp its packed panel of B and c its first element of C.
  void tile(int64_t i, int64_t j, int64_t mr, int64_t nr, const float* bp, float* c, bool accumulate) const {
    const AGather& g = *o.a_gather;
    if (mr == kMR && plain[0]) {
      plain[nr <= kVec ? 0 : 1](g.base + g.row_off[i], bp, c, o.ldc, nr, accumulate, *short_ep, i, j);
      return;
    }
    const float* rows[kMR];
    for (int64_t r = 0; r < mr; ++r) rows[r] = g.base + g.row_off[i + r];
    if (short_ep)
      (nr <= kVec ? kMicroGatherShortHalf : kMicroGatherShort)[mr - 1](kc, rows, g.koff + p0, bp, c, o.ldc, nr,
                                                                       accumulate, *short_ep, i, j);
    else
      (nr <= kVec ? kMicroGatherHalf : kMicroGather)[mr - 1](kc, rows, g.koff + p0, bp, c, o.ldc, nr, accumulate, ep, i,
                                                             j);
  }
};

#if defined(__AVX512F__)
/// Rows [i0, i0 + mc) x columns [jc, jc + nc) of a gathered-A product over the k-range
/// [p0, p0 + kc), bblock its block of packed B: the columns in pairs of panels by the wide
/// micro-kernel, kWideMR rows at a time (rows outer, or pairs of panels outer when cols_outer),
/// and a last panel that is alone (nc an odd number of panels, or a pair's second one empty), or
/// all of them when the k-block is short, by the kMR x kNR kernel.
void gather_tiles(const Operands& o, int64_t i0, int64_t mc, int64_t jc, int64_t nc, int64_t p0, int64_t kc,
                  const float* bblock, bool accumulate, const GemmEpilogue* ep, bool cols_outer) {
  const AGather& g = *o.a_gather;
  const int64_t* aoff = g.koff + p0;
  const int64_t iend = i0 + mc, jend = jc + nc;
  // Short k-blocks (1x1 convolutions over up to 144 channels) run faster 12 rows at a time: with
  // the 6 x 64 tile MobileNetV2's K = 64 and 96 expansions took 4-15% longer, ResNet-50's K = 64
  // and 128 layers 2-6% (K = 32: 7-11%); from K = 160 on it is the faster.
  const int64_t rem = nc % (2 * kNR);
  const int64_t wide_end = kc < kWideMinK ? jc : rem == 0 || rem > kNR ? jend : jend - rem;
  auto wide = [&](int64_t i, int64_t j) {
    const int64_t mr = std::min<int64_t>(kWideMR, iend - i), nr = std::min<int64_t>(2 * kNR, jend - j);
    const float* rows[kWideMR];
    for (int64_t r = 0; r < mr; ++r) rows[r] = g.base + g.row_off[i + r];
    kMicroGatherWide[mr - 1](kc, rows, aoff, bblock + ((j - jc) / kNR) * kNR * kc, o.c + i * o.ldc + j, o.ldc, nr,
                             accumulate, ep, i, j);
  };
  if (cols_outer) {
    for (int64_t j = jc; j < wide_end; j += 2 * kNR)
      for (int64_t i = i0; i < iend; i += kWideMR) wide(i, j);
  } else {
    for (int64_t i = i0; i < iend; i += kWideMR)
      for (int64_t j = jc; j < wide_end; j += 2 * kNR) wide(i, j);
  }
  const GatherTiles tiles(o, p0, kc, ep);
  auto narrow = [&](int64_t i, int64_t j) {
    const int64_t mr = std::min<int64_t>(kMR, iend - i), nr = std::min<int64_t>(kNR, jend - j);
    tiles.tile(i, j, mr, nr, bblock + ((j - jc) / kNR) * kNR * kc, o.c + i * o.ldc + j, accumulate);
  };
  if (cols_outer) {
    for (int64_t j = wide_end; j < jend; j += kNR)
      for (int64_t i = i0; i < iend; i += kMR) narrow(i, j);
  } else {
    for (int64_t i = i0; i < iend; i += kMR)
      for (int64_t j = wide_end; j < jend; j += kNR) narrow(i, j);
  }
}
#endif

/// Computes C rows [m0, m1) x cols [n0, n1) (n0 multiple of NR, m0 multiple of MR).
void gemm_region(const Operands& o, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  thread_local Scratch sa, sb, se;
  const int64_t mpad = round_up(o.m, kMR), npad = round_up(o.n, kNR);
  // Column blocks of kNC, so that a packed kc x nc block of B stays in L2 while every row block
  // of A passes over it (a B block of the whole width would be packed to, and read back from,
  // memory).
  // A pre-packed B needs no packing, so it is not blocked (A would be packed once per block) unless
  // its k-block of the whole width is far bigger than the caches (kPackedBlockBytes; the caller
  // then packs A once for all blocks, Operands::a_all), or, with A packed once, bigger than L2
  // keeps (kPackedL2Bytes).
  // With a short K the block is wider (up to 16x, the same floats): longer runs of C per row.
  const int64_t widen = std::clamp<int64_t>(kKC / std::max<int64_t>(1, std::min(kKC, o.k)), 1, 16);
  const int64_t kb = o.pb ? o.pb->k_block() : kKC;  // a gathered product's B may be blocked otherwise
  const bool big_packed = packed_too_wide(o.pb, o.k, n1 - n0, o.a_all != nullptr);
  const int64_t block = (o.pb && !big_packed) || o.b_koff ? n1 - n0 : kNC * widen;
  for (int64_t jc = n0; jc < n1; jc += block) {
    const int64_t nc = std::min(block, n1 - jc);
    for (int64_t p0 = 0; p0 < o.k; p0 += kb) {
      const int64_t kc = std::min(kb, o.k - p0);
      const bool first = p0 == 0, last = p0 + kc >= o.k;
      const float* bblock;
      float* edge = nullptr;  // a shifted view's last panel, when partial, copied (zero padded)
      if (o.b_koff) {
        bblock = o.b + jc;  // panels are not packed: panel q starts kNR q columns on
        const int64_t tail = o.n % kNR;
        if (tail && jc + nc == o.n && !o.b_readable_past_n) {
          edge = se.get(static_cast<size_t>(kc * kNR), static_cast<size_t>(kKC * kNR));
          const float* src = o.b + (o.n - tail);
          for (int64_t kk = 0; kk < kc; ++kk) {
            const float* r = src + o.b_koff[p0 + kk];
            float* d = edge + kk * kNR;
            for (int64_t t = 0; t < kNR; ++t) d[t] = t < tail ? r[t] : 0.0f;
          }
        }
      } else if (o.pb) {
        bblock = o.pb->data() + p0 * npad + (jc / kNR) * kNR * kc;
      } else if (o.pack_b) {
        float* buf = sb.get(static_cast<size_t>(round_up(nc, kNR) * kc), static_cast<size_t>(kNC * kKC));
        (*o.pack_b)(p0, kc, jc, nc, buf);
        bblock = buf;
      } else {
        float* buf = sb.get(static_cast<size_t>(round_up(nc, kNR) * kc), static_cast<size_t>(kNC * kKC));
        pack_b_block(o.tb, o.b, o.ldb, o.n, p0, kc, jc, nc, 1.0f, buf);
        bblock = buf;
      }
      // The block of a pre-packed B that comes next (the next k-block of these columns, else
      // the first of the next columns), prefetched by the tiles after their first pass.
      const char* next_b = nullptr;
      int64_t next_bytes = 0, calls = 0;
      const int64_t first_pass = (nc + kNR - 1) / kNR;
      if (o.pb && !o.a_gather && !o.c_trans) {
        int64_t q0 = p0 + kc, qc0 = jc, qnc = nc;
        if (q0 >= o.k) q0 = 0, qc0 = jc + block, qnc = std::min(block, n1 - qc0);
        if (qc0 < n1) {
          const int64_t qkc = std::min(kb, o.k - q0);
          next_b = reinterpret_cast<const char*>(o.pb->data() + q0 * npad + (qc0 / kNR) * kNR * qkc);
          next_bytes = round_up(qnc, kNR) * qkc * static_cast<int64_t>(sizeof(float));
        }
      }
      for (int64_t i0 = m0; i0 < m1; i0 += kMC) {
        const int64_t mc = std::min(kMC, m1 - i0);
        const float* ablock;
        if (o.a_gather) {
          ablock = nullptr;  // read in place by the tiles
        } else if (o.pa || o.a_all) {
          ablock = (o.pa ? o.pa->data() : o.a_all) + p0 * mpad + (i0 / kMR) * kMR * kc;
        } else {
          float* buf = sa.get(static_cast<size_t>(round_up(mc, kMR) * kc), static_cast<size_t>(kMC * kKC));
          pack_a_rows(o, i0, mc, p0, kc, buf);
          ablock = buf;
        }
        // Row tiles outer, column panels inner: C is written MR rows at a time, each a long
        // sequential run (the other order writes all mc rows 32 columns at a time, mc streams
        // at once, which the prefetchers do not follow: twice the time when C is not cached).
        const auto& micro = o.b_koff ? kMicroShifted : o.c_trans ? kMicroT : kMicro;
        const int64_t* koff = o.b_koff ? o.b_koff + p0 : nullptr;
        // C is written in long sequential runs of its rows: row tiles outer, column panels inner
        // (the other order writes all mc rows 32 columns at a time, mc streams at once, which the
        // prefetchers do not follow: twice the time when C is not cached). Stored transposed, C's
        // rows are the product's columns: column panels outer then (and each panel of B, the
        // weights, serves every row tile in turn).
        // A gathered A is read in place by every tile; where the block of B is bigger than L2
        // can keep while every row tile passes over it (few pixels, many channels), the column
        // panels go outer too: each panel of B is then read once per row block, not per tile.
        const bool cols_outer = o.c_trans || (o.a_gather && kc * nc * static_cast<int64_t>(sizeof(float)) > (512 << 10));
#if defined(__AVX512F__)
        if (o.a_gather) {
          gather_tiles(o, i0, mc, jc, nc, p0, kc, bblock, !first || o.c_initialized, last ? o.ep : nullptr, cols_outer);
          continue;
        }
#endif
        // Without AVX-512 a gathered product's tiles all run here.
        const std::optional<GatherTiles> tiles =
            o.a_gather ? std::optional<GatherTiles>(std::in_place, o, p0, kc, last ? o.ep : nullptr) : std::nullopt;
        const int64_t outer_end = cols_outer ? jc + nc : i0 + mc, inner_end = cols_outer ? i0 + mc : jc + nc;
        for (int64_t u = cols_outer ? jc : i0; u < outer_end; u += cols_outer ? kNR : kMR)
          for (int64_t v = cols_outer ? i0 : jc; v < inner_end; v += cols_outer ? kMR : kNR) {
            const int64_t i = cols_outer ? v : u, j = cols_outer ? u : v;
            const int64_t mr = std::min<int64_t>(kMR, i0 + mc - i);
            const float* ap = ablock + ((i - i0) / kMR) * kMR * kc;
            const int64_t nr = std::min<int64_t>(kNR, jc + nc - j);
            float* ct = o.c_trans ? o.c + j * o.ldc + i : o.c + i * o.ldc + j;
            const bool accumulate = !first || o.c_initialized;
            if (o.b_koff && edge && j + kNR > o.n) {
              // The view's last, partial panel: its copy (reads stop at column n).
              kMicro[mr - 1](kc, ap, edge, nullptr, ct, o.ldc, nr, accumulate, last ? o.ep : nullptr, i, j, nullptr);
              continue;
            }
            const float* bp = o.b_koff ? bblock + (j - jc) : bblock + ((j - jc) / kNR) * kNR * kc;
            if (tiles) {
              tiles->tile(i, j, mr, nr, bp, ct, accumulate);
              continue;
            }
            // After the first pass of row tiles over this block of a pre-packed B (which reads
            // it in, from memory for a big model), each tile asks for its share of the next
            // block: it is then in L2 when its first pass starts.
            const char* pf = nullptr;
            if (next_b && ++calls > first_pass) {
              const int64_t at = (calls - first_pass - 1) * kc / kPrefetchEvery * 64;
              if (at < next_bytes) pf = next_b + at;
            }
            micro[mr - 1](kc, ap, bp, koff, ct, o.ldc, nr, accumulate, last ? o.ep : nullptr, i, j, pf);
          }
      }
    }
  }
}

/// NP panels of a row vector times pre-packed B over one k-block: the row is read in place
/// (x[k incx]), and the panels' 2 NP accumulator chains are independent (one panel's two alone
/// are bound by the FMA latency, not by reading B).
template <int NP>
void gemv_panels(const float* x, int64_t incx, const float* b, int64_t kc, float* c, int64_t cols, bool accumulate,
                 const GemmEpilogue* ep, int64_t col0) {
  vf acc[NP][1][kNV];
  for (int q = 0; q < NP; ++q)
    for (int v = 0; v < kNV; ++v) acc[q][0][v] = vf{};
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const float xk = x[k * incx];
    for (int q = 0; q < NP; ++q)
      for (int v = 0; v < kNV; ++v) acc[q][0][v] += loadu(b + q * kNR * kc + k * kNR + v * kVec) * xk;
  }
  for (int q = 0; q < NP; ++q)
    store_tile<1>(acc[q], c + q * kNR, 0, std::min<int64_t>(kNR, cols - q * kNR), accumulate, ep, 0, col0 + q * kNR);
}

using GemvFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, bool, const GemmEpilogue*, int64_t);
constexpr GemvFn kGemv[] = {&gemv_panels<1>, &gemv_panels<2>, &gemv_panels<3>, &gemv_panels<4>};
constexpr int64_t kGemvPanels = std::size(kGemv);  // panels per call, at most

/// Columns [n0, n1) (n0 a multiple of kNR) of a one-row product with B pre-packed.
void gemv_region(const Operands& o, int64_t n0, int64_t n1) {
  const int64_t npad = round_up(o.n, kNR), kb = o.pb->k_block();
  const int64_t incx = o.ta ? o.lda : 1;
  for (int64_t p0 = 0; p0 < o.k; p0 += kb) {
    const int64_t kc = std::min(kb, o.k - p0);
    const bool accumulate = p0 > 0 || o.c_initialized;
    const GemmEpilogue* ep = p0 + kc >= o.k ? o.ep : nullptr;
    for (int64_t j = n0; j < n1; j += kGemvPanels * kNR) {
      const int64_t cols = std::min<int64_t>(kGemvPanels * kNR, n1 - j);
      kGemv[(cols + kNR - 1) / kNR - 1](o.a + p0 * incx, incx, o.pb->data() + p0 * npad + j * kc, kc, o.c + j, cols,
                                        accumulate, ep, j);
    }
  }
}

void run(const Operands& o, ThreadPool* pool) {
  if (o.pb && o.pb->k_block() != kKC && !o.a_gather)
    fail(ErrorCode::kRuntime, "packed B in k-blocks of ", o.pb->k_block(), " (only a gathered product takes other than ", kKC, ")");
  if (o.m <= 0 || o.n <= 0) return;
  if (o.k <= 0) {
    // Nothing to accumulate: C = beta*C (already applied) plus the epilogue.
    for (int64_t i = 0; i < o.m; ++i)
      for (int64_t j = 0; j < o.n; ++j) {
        const int64_t at = o.c_trans ? j * o.ldc + i : i * o.ldc + j;
        float& x = o.c[at];
        if (!o.c_initialized) x = 0;
        if (o.ep) {
          if (o.ep->bias) x += o.ep->bias_per_row ? o.ep->bias[i] : o.ep->bias[j];
          if (o.ep->sum) x += o.ep->sum[at];
          x = apply_act(x, o.ep);
        }
      }
    return;
  }
  const int threads = pool ? pool->num_threads() : 1;
  const double work = static_cast<double>(o.m) * o.n * o.k;
  if (o.m == 1 && o.pb && o.a && o.alpha == 1.0f && !o.pa && !o.c_trans && !o.pack_a && !o.a_gather) {
    // A row vector times pre-packed B (a classifier, a decoding step): read B once, in groups
    // of panels split across threads.
    const int64_t groups = (o.n + kGemvPanels * kNR - 1) / (kGemvPanels * kNR);
    auto cols = [&](int64_t g0, int64_t g1) {
      gemv_region(o, g0 * kGemvPanels * kNR, std::min(o.n, g1 * kGemvPanels * kNR));
    };
    if (threads <= 1 || work < 4e5)
      cols(0, groups);
    else
      pool->parallel_for(groups, 1, cols);
    return;
  }
  const int64_t npan = (o.n + kNR - 1) / kNR, mpan = (o.m + kMR - 1) / kMR;
  const int64_t mpad = mpan * kMR;
  // All of A packed once, its panels in parallel where there is a pool, into the calling thread's
  // buffer (Operands::a_all): for the tasks of a split by columns, which would each pack it, and
  // for the column blocks of a big pre-packed B.
  auto pack_all_a = [&](Operands& into, ThreadPool* with) {
    thread_local Scratch all;
    float* buf = all.get(static_cast<size_t>(mpad * o.k));
    const int64_t kblocks = (o.k + kKC - 1) / kKC;
    auto pack = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t p0 = (t / mpan) * kKC, kc = std::min(kKC, o.k - p0), r0 = (t % mpan) * kMR;
        float* dst = buf + p0 * mpad + r0 * kc;
        pack_a_rows(o, r0, std::min<int64_t>(kMR, o.m - r0), p0, kc, dst);
      }
    };
    if (with)
      with->parallel_for(kblocks * mpan, 1, pack);
    else
      pack(0, kblocks * mpan);
    into.a_all = buf;
  };
  const bool a_fits = !o.pa && !o.a_gather && static_cast<double>(mpad) * static_cast<double>(o.k) <= kSharedAFloats;
  if (threads <= 1 || work < 4e5) {
    // B in column blocks (a big pre-packed B, or one a BPacker makes block by block: 4-bit weights
    // dequantized into panels) would have A packed again for every block: packed once instead.
    if ((packed_too_wide(o.pb, o.k, o.n, true) || (o.pack_b && o.n > kNC)) && a_fits && mpan > 1) {
      Operands once = o;
      pack_all_a(once, nullptr);
      gemm_region(once, 0, o.m, 0, o.n);
      return;
    }
    gemm_region(o, 0, o.m, 0, o.n);
    return;
  }
  // Split the larger dimension in panel units, a few tasks per thread.
  const bool by_cols = npan >= mpan || mpan < 2;
  const int64_t pans = by_cols ? npan : mpan;
  Operands shared = o;
  // Split by columns, every task would pack all of A for itself (a transposed product's few
  // pixels): A is packed once for all of them.
  if (by_cols && a_fits) pack_all_a(shared, pool);
  // Split by rows, every task packs all of B for itself (unless B is pre-packed): one task per
  // thread then, not several; likewise split by columns with A packed by every task.
  const bool own_a = by_cols && o.pack_a && !shared.a_all;
  // Split by columns, every task streams all of A: a pre-packed A bigger than a thread's share of
  // L2 is streamed once per thread then, not three times.
  const bool big_a = static_cast<double>(mpad) * static_cast<double>(o.k) * sizeof(float) > kBigABytes;
  const int64_t per_thread = by_cols ? (own_a || big_a ? 1 : 3) : (o.pb || o.b_koff ? 3 : 1);
  const int64_t tasks = std::min<int64_t>(pans, threads * per_thread);
  pool->parallel_for(tasks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t p0 = pans * t / tasks, p1 = pans * (t + 1) / tasks;
      if (p0 == p1) continue;
      if (by_cols)
        gemm_region(shared, 0, o.m, p0 * kNR, std::min(o.n, p1 * kNR));
      else
        gemm_region(shared, p0 * kMR, std::min(o.m, p1 * kMR), 0, o.n);
    }
  });
}

void scale_c(float beta, int64_t m, int64_t n, float* c, int64_t ldc) {
  if (beta == 1.0f || beta == 0.0f) return;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] *= beta;
}

}  // namespace

PackedMatrix pack_a(bool trans, int64_t m, int64_t k, const float* a, int64_t lda, float scale) {
  PackedMatrix pm;
  pm.rows_ = m;
  pm.cols_ = k;
  pm.k_block_ = kKC;
  pm.is_a_ = true;
  const int64_t mpad = round_up(m, kMR);
  pm.data_ = std::shared_ptr<float>(aligned_floats(static_cast<size_t>(std::max<int64_t>(1, mpad * k))), std::free);
  for (int64_t p0 = 0; p0 < k; p0 += kKC) {
    const int64_t kc = std::min(kKC, k - p0);
    pack_a_block(trans, a, lda, m, 0, mpad, p0, kc, scale, pm.data_.get() + p0 * mpad);
  }
  return pm;
}

int64_t gather_k_block(int64_t k) {
  constexpr int64_t kMax = 1024;
  const int64_t blocks = std::max<int64_t>(1, (k + kMax - 1) / kMax);
  return std::max<int64_t>(1, (k + blocks - 1) / blocks);
}

PackedMatrix pack_b(bool trans, int64_t k, int64_t n, const float* b, int64_t ldb, float scale, int64_t k_block) {
  PackedMatrix pm;
  pm.rows_ = k;
  pm.cols_ = n;
  pm.k_block_ = k_block > 0 ? k_block : kKC;
  const int64_t npad = round_up(n, kNR);
  pm.data_ = std::shared_ptr<float>(aligned_floats(static_cast<size_t>(std::max<int64_t>(1, npad * k))), std::free);
  for (int64_t p0 = 0; p0 < k; p0 += pm.k_block_) {
    const int64_t kc = std::min(pm.k_block_, k - p0);
    pack_b_block(trans, b, ldb, n, p0, kc, 0, npad, scale, pm.data_.get() + p0 * npad);
  }
  return pm;
}

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool, const GemmEpilogue* epilogue) {
  scale_c(beta, m, n, c, ldc);
  Operands o{nullptr, trans_a, a, lda, alpha, nullptr, trans_b, b, ldb, m, n, k, c, ldc, epilogue, beta != 0.0f};
  run(o, pool);
}

void sgemm_packed(const PackedMatrix* pa, bool trans_a, const float* a, int64_t lda, const PackedMatrix* pb, bool trans_b,
                  const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k, float beta, float* c, int64_t ldc,
                  ThreadPool* pool, const GemmEpilogue* epilogue) {
  if (pa && (pa->rows() != m || pa->cols() != k)) fail(ErrorCode::kRuntime, "packed A has the wrong shape");
  if (pb && (pb->rows() != k || pb->cols() != n)) fail(ErrorCode::kRuntime, "packed B has the wrong shape");
  scale_c(beta, m, n, c, ldc);
  Operands o{pa, trans_a, a, lda, 1.0f, pb, trans_b, b, ldb, m, n, k, c, ldc, epilogue, beta != 0.0f};
  run(o, pool);
}

void sgemm_packed_tc(const PackedMatrix* pa, bool trans_a, const float* a, int64_t lda, const PackedMatrix* pb, bool trans_b,
                     const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k, float* c, int64_t ldc, ThreadPool* pool,
                     const GemmEpilogue* epilogue) {
  if (pa && (pa->rows() != m || pa->cols() != k)) fail(ErrorCode::kRuntime, "packed A has the wrong shape");
  if (pb && (pb->rows() != k || pb->cols() != n)) fail(ErrorCode::kRuntime, "packed B has the wrong shape");
  Operands o{pa, trans_a, a, lda, 1.0f, pb, trans_b, b, ldb, m, n, k, c, ldc, epilogue, false};
  o.c_trans = true;
  run(o, pool);
}

namespace {
/// Micro-tiles a GEMM of m x n computes, in units of a full MR x NR tile: a partial row tile
/// costs its rows' multiply-adds or the B loads, whichever bounds it; a partial column panel
/// costs a whole one (both its vectors are computed).
double tile_cost(int64_t m, int64_t n) {
  const int64_t r = m % kMR;
  const double rows = static_cast<double>(m / kMR) + (r ? std::max(2.0 * r, r + 2.0) / (2.0 * kMR) : 0.0);
  return rows * static_cast<double>((n + kNR - 1) / kNR);
}
}  // namespace

bool gemm_prefers_transposed(int64_t m, int64_t n) {
  // The transposed form pays for its in-register transposes (about 5% of a tile's work).
  return tile_cost(n, m) * 1.05 < tile_cost(m, n);
}

GemmEpilogue fused_epilogue(const Node& node, bool allow_gelu) {
  GemmEpilogue ep;
  const std::string act = node.attr_string("activation");
  const std::vector<float> p = node.attr_floats("activation_params");
  if (act == "Relu") {
    ep.act = GemmEpilogue::Act::kRelu;
  } else if (act == "Gelu" && allow_gelu) {
    ep.act = GemmEpilogue::Act::kGelu;
  } else if (act == "Clip" && p.size() == 2) {
    ep.act = GemmEpilogue::Act::kClip;
    ep.lo = p[0];
    ep.hi = p[1];
  } else if (!act.empty()) {
    fail(ErrorCode::kInvalidGraph, node.label(), ": unsupported fused activation '", act, "'");
  }
  return ep;
}

void pack_b_rows(const float* b, int64_t ld, int64_t kc, int64_t cols, float* dst) {
  pack_b_block(false, b, ld, cols, 0, kc, 0, cols, 1.0f, dst);
}

void pack_a_cols(const float* b, int64_t ld, int64_t kc, int64_t rows, float* dst) {
  pack_a_block(true, b, ld, rows, 0, rows, 0, kc, 1.0f, dst);
}

void sgemm_a_packer_tc(const APacker& pack_a, const PackedMatrix* pb, int64_t m, int64_t n, int64_t k, float* c, int64_t ldc,
                       ThreadPool* pool, const GemmEpilogue* epilogue) {
  if (!pb || pb->rows() != k || pb->cols() != n) fail(ErrorCode::kRuntime, "packed B has the wrong shape");
  Operands o{nullptr, false, nullptr, 0, 1.0f, pb, false, nullptr, 0, m, n, k, c, ldc, epilogue, false};
  o.pack_a = &pack_a;
  o.c_trans = true;
  run(o, pool);
}

void sgemm_a_gather(const AGather& a, const PackedMatrix* pb, int64_t m, int64_t n, int64_t k, float* c, int64_t ldc,
                    ThreadPool* pool, const GemmEpilogue* epilogue, bool accumulate) {
  if (!pb || pb->rows() != k || pb->cols() != n) fail(ErrorCode::kRuntime, "packed B has the wrong shape");
  Operands o{nullptr, false, nullptr, 0, 1.0f, pb, false, nullptr, 0, m, n, k, c, ldc, epilogue, accumulate};
  o.a_gather = &a;
  run(o, pool);
}

void sgemm_b_shifted(const PackedMatrix* pa, const float* b, const int64_t* koff, int64_t m, int64_t n, int64_t k, float* c,
                     int64_t ldc, ThreadPool* pool, const GemmEpilogue* epilogue, bool readable_past_n) {
  if (!pa || pa->rows() != m || pa->cols() != k) fail(ErrorCode::kRuntime, "packed A has the wrong shape");
  Operands o{pa, false, nullptr, 0, 1.0f, nullptr, false, b, 0, m, n, k, c, ldc, epilogue, false};
  o.b_koff = koff;
  o.b_readable_past_n = readable_past_n;
  run(o, pool);
}

void sgemm_b_packer(const PackedMatrix* pa, const float* a, int64_t lda, const BPacker& pack_b, int64_t m, int64_t n,
                    int64_t k, float* c, int64_t ldc, ThreadPool* pool, const GemmEpilogue* epilogue) {
  if (pa && (pa->rows() != m || pa->cols() != k)) fail(ErrorCode::kRuntime, "packed A has the wrong shape");
  Operands o{pa, false, a, lda, 1.0f, nullptr, false, nullptr, 0, m, n, k, c, ldc, epilogue, false, &pack_b};
  run(o, pool);
}

}  // namespace onyx::cpu
