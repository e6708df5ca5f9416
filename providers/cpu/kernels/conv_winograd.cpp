// Winograd F(2x2, 3x3), channels-last (see conv_winograd.hpp). With the transforms of Lavin and
// Gray's "Fast Algorithms for Convolutional Neural Networks":
//   input   V = B^T d B,  B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   (d: a 4x4 input tile)
//   weights U = G g G^T,  G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] (g: a 3x3 filter)
//   output  Y = A^T M A,  A^T = [1 1 1 0; 0 1 -1 -1]                      (M: sum over c of U V)
// The tiles of an image are taken in blocks; for a block, the input tiles are transformed into
// V[point][tile][c], the 16 products M[point] = V[point] U[point] are GEMMs (A plain, B packed
// once), and the output transform adds the bias and the sum and applies the activation as it
// stores each 2x2 block. A block's V and M stay in L2.
#include "kernels/conv_winograd.hpp"

#include <algorithm>
#include <limits>

#include "core/thread_pool.hpp"
#include "kernels/common.hpp"
#include "kernels/vmath.hpp"

namespace onyx::cpu {

namespace {

using vmath::kLanes;
using vmath::vf;

constexpr int kPoints = 16;  // of a transformed 4x4 tile

inline vf load_lanes(const float* p, int64_t lanes) { return lanes == kLanes ? vmath::load(p) : vmath::load_n(p, lanes); }
inline void store_lanes(float* p, vf v, int64_t lanes) {
  if (lanes == kLanes)
    vmath::store(p, v);
  else
    vmath::store_n(p, v, lanes);
}

/// Tiles [t0, t0 + tb) of image xi (tile t: output rows 2 (t / TW) + 0..1, columns 2 (t % TW)
/// + 0..1) transformed into v[point][t - t0][c].
void transform_input(const float* xi, int64_t H, int64_t W, int64_t C, int64_t pt, int64_t pl, int64_t TW, int64_t t0,
                     int64_t tb, float* v) {
  const int64_t stride = tb * C;  // between points
  for (int64_t t = 0; t < tb; ++t) {
    const int64_t ty = (t0 + t) / TW, tx = (t0 + t) % TW;
    const int64_t ih0 = 2 * ty - pt, iw0 = 2 * tx - pl;
    const bool inside = ih0 >= 0 && ih0 + 4 <= H && iw0 >= 0 && iw0 + 4 <= W;
    const float* rows[4];
    bool row_in[4], col_in[4];
    for (int i = 0; i < 4; ++i) {
      row_in[i] = ih0 + i >= 0 && ih0 + i < H;
      col_in[i] = iw0 + i >= 0 && iw0 + i < W;
      rows[i] = xi + ((ih0 + i) * W + iw0) * C;  // used only where inside the input
    }
    float* vt = v + t * C;
    for (int64_t c0 = 0; c0 < C; c0 += kLanes) {
      const int64_t lanes = std::min<int64_t>(kLanes, C - c0);
      vf d[4][4];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          d[i][j] = inside || (row_in[i] && col_in[j]) ? load_lanes(rows[i] + j * C + c0, lanes) : vf{};
      // Columns (d B), then rows (B^T (d B)).
      vf r[4][4];
      for (int i = 0; i < 4; ++i) {
        r[i][0] = d[i][0] - d[i][2];
        r[i][1] = d[i][1] + d[i][2];
        r[i][2] = d[i][2] - d[i][1];
        r[i][3] = d[i][1] - d[i][3];
      }
      for (int j = 0; j < 4; ++j) {
        store_lanes(vt + (0 * 4 + j) * stride + c0, r[0][j] - r[2][j], lanes);
        store_lanes(vt + (1 * 4 + j) * stride + c0, r[1][j] + r[2][j], lanes);
        store_lanes(vt + (2 * 4 + j) * stride + c0, r[2][j] - r[1][j], lanes);
        store_lanes(vt + (3 * 4 + j) * stride + c0, r[1][j] - r[3][j], lanes);
      }
    }
  }
}

/// The products m[point][t - t0][M] of tiles [t0, t0 + tb) turned into their 2x2 output blocks
/// of image yi, with the bias, the sum (si: the image's, or null) and the clamp [lo, hi].
void transform_output(const float* m, int64_t M, int64_t OH, int64_t OW, int64_t TW, int64_t t0, int64_t tb,
                      const float* bias, const float* si, vf lo, vf hi, float* yi) {
  const int64_t stride = tb * M;
  for (int64_t t = 0; t < tb; ++t) {
    const int64_t ty = (t0 + t) / TW, tx = (t0 + t) % TW;
    const int64_t oh0 = 2 * ty, ow0 = 2 * tx;
    const bool row1 = oh0 + 1 < OH, col1 = ow0 + 1 < OW;
    const float* mt = m + t * M;
    for (int64_t m0 = 0; m0 < M; m0 += kLanes) {
      const int64_t lanes = std::min<int64_t>(kLanes, M - m0);
      vf s[4][2];
      for (int i = 0; i < 4; ++i) {
        const vf a0 = load_lanes(mt + (i * 4 + 0) * stride + m0, lanes), a1 = load_lanes(mt + (i * 4 + 1) * stride + m0, lanes),
                 a2 = load_lanes(mt + (i * 4 + 2) * stride + m0, lanes), a3 = load_lanes(mt + (i * 4 + 3) * stride + m0, lanes);
        s[i][0] = a0 + a1 + a2;
        s[i][1] = a1 - a2 - a3;
      }
      const vf b = bias ? load_lanes(bias + m0, lanes) : vf{};
      vf out[2][2];
      for (int j = 0; j < 2; ++j) {
        out[0][j] = s[0][j] + s[1][j] + s[2][j] + b;
        out[1][j] = s[1][j] - s[2][j] - s[3][j] + b;
      }
      for (int i = 0; i < 2; ++i) {
        if (i == 1 && !row1) break;
        for (int j = 0; j < 2; ++j) {
          if (j == 1 && !col1) break;
          const int64_t at = ((oh0 + i) * OW + ow0 + j) * M + m0;
          vf x = out[i][j];
          if (si) x += load_lanes(si + at, lanes);
          x = vmath::vmax(lo, x);  // lo, hi first: NaN passes through
          store_lanes(yi + at, vmath::vmin(hi, x), lanes);
        }
      }
    }
  }
}

}  // namespace

WinogradWeights winograd_weights(const float* w, int64_t M, int64_t C) {
  WinogradWeights r;
  r.C = C;
  r.M = M;
  std::vector<float> u(static_cast<size_t>(kPoints * C * M));
  const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (m * C + c) * 9;
      double gg[4][3];  // G g
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j) gg[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const double x = gg[i][0] * G[j][0] + gg[i][1] * G[j][1] + gg[i][2] * G[j][2];  // (G g) G^T
          u[static_cast<size_t>(((i * 4 + j) * C + c) * M + m)] = static_cast<float>(x);
        }
    }
  r.u.reserve(kPoints);
  for (int p = 0; p < kPoints; ++p)
    r.u.push_back(pack_b(false, C, M, u.data() + static_cast<size_t>(p) * C * M, M, 1.0f, gather_k_block(C)));
  return r;
}

void winograd_conv(const WinogradWeights& u, const float* x, int64_t N, int64_t H, int64_t W, int64_t pt, int64_t pl,
                   int64_t OH, int64_t OW, const float* bias, const float* sum, const GemmEpilogue& act, float* y,
                   ThreadPool& pool) {
  const int64_t C = u.C, M = u.M;
  const int64_t TH = (OH + 1) / 2, TW = (OW + 1) / 2, T = TH * TW;
  // Tiles per block: V and M of a block (16 (C + M) floats a tile) within ~768 KB of L2, at least
  // a row tile of the GEMM, or all of an image's when that is at most twice as many (each block
  // reads all of the transformed weights: 16 MB over 512 channels in and out, where 7x7's 16
  // tiles in two blocks took 10% longer than in one); and at least as many blocks as threads
  // where the tiles allow, a multiple of them (the threads take equal shares of blocks: 49 tiles
  // in 3 blocks on 2 threads left one idle a third of the time).
  const int64_t fit = std::clamp<int64_t>((int64_t{768} << 10) / (kPoints * (C + M) * int64_t{sizeof(float)}), 12, 192);
  int64_t blocks = T <= 2 * fit ? 1 : (T + fit - 1) / fit;
  const int64_t threads = pool.num_threads();
  while ((N * blocks) % threads != 0 && blocks < T) ++blocks;
  const int64_t per = (T + blocks - 1) / blocks;
  blocks = (T + per - 1) / per;
  const int64_t items = N * blocks;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  vf lo = vmath::splat(-kInf), hi = vmath::splat(kInf);
  if (act.act == GemmEpilogue::Act::kRelu) lo = vf{};
  if (act.act == GemmEpilogue::Act::kClip) {
    lo = vmath::splat(act.lo);
    hi = vmath::splat(act.hi);
  }
  pool.parallel_for(items, (items + threads - 1) / threads, [&](int64_t b0, int64_t b1) {
    Carver sizes;
    sizes.take<float>(kPoints * per * C);
    sizes.take<float>(kPoints * per * M);
    sizes.take<int64_t>(per);
    sizes.take<int64_t>(C);
    Carver carve{thread_workspace(Workspace::kWinograd, sizes.off)};
    float* v = carve.take<float>(kPoints * per * C);
    float* m = carve.take<float>(kPoints * per * M);
    int64_t* row_off = carve.take<int64_t>(per);
    int64_t* koff = carve.take<int64_t>(C);
    for (int64_t i = 0; i < per; ++i) row_off[i] = i * C;
    for (int64_t k = 0; k < C; ++k) koff[k] = k;
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t n = b / blocks, t0 = (b % blocks) * per, tb = std::min(per, T - t0);
      transform_input(x + n * H * W * C, H, W, C, pt, pl, TW, t0, tb, v);
      for (int p = 0; p < kPoints; ++p)
        sgemm_a_gather(AGather{v + p * tb * C, row_off, koff, C}, &u.u[static_cast<size_t>(p)], tb, M, C,
                       m + p * tb * M, M, nullptr);
      transform_output(m, M, OH, OW, TW, t0, tb, bias, sum ? sum + n * OH * OW * M : nullptr, lo, hi,
                       y + n * OH * OW * M);
    }
  });
}

}  // namespace onyx::cpu
