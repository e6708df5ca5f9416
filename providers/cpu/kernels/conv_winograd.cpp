// Winograd F(R x R, 3x3), channels-last (see conv_winograd.hpp), with the transforms of Lavin
// and Gray's "Fast Algorithms for Convolutional Neural Networks":
//   input   V = B^T d B   (d: an (R + 2) x (R + 2) input tile)
//   weights U = G g G^T   (g: a 3x3 filter)
//   output  Y = A^T M A   (M: the sum over c of U V, elementwise)
// R = 2: B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2;
//        0 0 1], A^T = [1 1 1 0; 0 1 -1 -1].
// R = 4: B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0;
//        0 4 0 -5 0 1], G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6;
//        1/24 -1/12 1/6; 0 0 1], A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1].
// The tiles of an image are taken in blocks; for a block, the input tiles are transformed into
// V[point][tile][c], the products M[point] = V[point] U[point] are GEMMs (A plain, B packed
// once), and the output transform adds the bias and the sum and applies the activation as it
// stores each R x R block. A block's V and M stay in L2.
#include "kernels/conv_winograd.hpp"

#include <algorithm>

#include "core/common.hpp"
#include "core/thread_pool.hpp"
#include "kernels/common.hpp"
#include "kernels/conv.hpp"
#include "kernels/vmath.hpp"

namespace onyx::cpu {

namespace {

using vmath::kLanes;
using vmath::vf;

inline vf load_lanes(const float* p, int64_t lanes) { return lanes == kLanes ? vmath::load(p) : vmath::load_n(p, lanes); }
inline void store_lanes(float* p, vf v, int64_t lanes) {
  if (lanes == kLanes)
    vmath::store(p, v);
  else
    vmath::store_n(p, v, lanes);
}

/// The 1-d input transform B^T d of F(R, 3) (R + 2 points).
template <int R>
inline void input_1d(const vf (&d)[R + 2], vf (&t)[R + 2]) {
  if constexpr (R == 2) {
    t[0] = d[0] - d[2];
    t[1] = d[1] + d[2];
    t[2] = d[2] - d[1];
    t[3] = d[1] - d[3];
  } else {
    static_assert(R == 4);
    const vf a = d[4] - 4.0f * d[2], b = d[3] - 4.0f * d[1], c = d[4] - d[2], e = 2.0f * (d[3] - d[1]);
    t[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
    t[1] = a + b;
    t[2] = a - b;
    t[3] = c + e;
    t[4] = c - e;
    t[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
  }
}

/// The 1-d output transform A^T m of F(R, 3).
template <int R>
inline void output_1d(const vf (&m)[R + 2], vf (&o)[R]) {
  if constexpr (R == 2) {
    o[0] = m[0] + m[1] + m[2];
    o[1] = m[1] - m[2] - m[3];
  } else {
    const vf p = m[1] + m[2], q = m[1] - m[2], r = m[3] + m[4], s = m[3] - m[4];
    o[0] = m[0] + p + r;
    o[1] = q + 2.0f * s;
    o[2] = p + 4.0f * r;
    o[3] = q + 8.0f * s + m[5];
  }
}

/// Tiles [t0, t0 + tb) of image xi (tile t: output rows R (t / TW) + 0..R-1, columns R (t % TW)
/// + 0..R-1, read from the (R + 2)^2 input tile under them) transformed into v[point][t - t0][c],
/// `stride` floats between points.
template <int R>
void transform_input(const float* xi, int64_t H, int64_t W, int64_t C, int64_t pt, int64_t pl, int64_t TW, int64_t t0,
                     int64_t tb, float* v, int64_t stride) {
  constexpr int T = R + 2;
  for (int64_t t = 0; t < tb; ++t) {
    const int64_t ty = (t0 + t) / TW, tx = (t0 + t) % TW;
    const int64_t ih0 = R * ty - pt, iw0 = R * tx - pl;
    const bool inside = ih0 >= 0 && ih0 + T <= H && iw0 >= 0 && iw0 + T <= W;
    const float* rows[T];
    bool row_in[T], col_in[T];
    for (int i = 0; i < T; ++i) {
      row_in[i] = ih0 + i >= 0 && ih0 + i < H;
      col_in[i] = iw0 + i >= 0 && iw0 + i < W;
      rows[i] = xi + ((ih0 + i) * W + iw0) * C;  // used only where inside the input
    }
    float* vt = v + t * C;
    for (int64_t c0 = 0; c0 < C; c0 += kLanes) {
      const int64_t lanes = std::min<int64_t>(kLanes, C - c0);
      // Each row's columns (d B), then each column's rows (B^T (d B)).
      vf r[T][T];
      for (int i = 0; i < T; ++i) {
        vf d[T];
        for (int j = 0; j < T; ++j)
          d[j] = inside || (row_in[i] && col_in[j]) ? load_lanes(rows[i] + j * C + c0, lanes) : vf{};
        input_1d<R>(d, r[i]);
      }
      for (int j = 0; j < T; ++j) {
        vf col[T], out[T];
        for (int i = 0; i < T; ++i) col[i] = r[i][j];
        input_1d<R>(col, out);
        for (int i = 0; i < T; ++i) store_lanes(vt + (i * T + j) * stride + c0, out[i], lanes);
      }
    }
  }
}

/// The products m[point][t - t0][M] of tiles [t0, t0 + tb) (`stride` floats between points)
/// turned into their R x R output blocks of image yi, with the bias, the sum (si: the image's, or
/// null) and the activation.
template <int R>
void transform_output(const float* m, int64_t M, int64_t OH, int64_t OW, int64_t TW, int64_t t0, int64_t tb,
                      int64_t stride, const float* bias, const float* si, const ActClamp& act, float* yi) {
  constexpr int T = R + 2;
  for (int64_t t = 0; t < tb; ++t) {
    const int64_t ty = (t0 + t) / TW, tx = (t0 + t) % TW;
    const int64_t oh0 = R * ty, ow0 = R * tx;
    const int rows = static_cast<int>(std::min<int64_t>(R, OH - oh0)), cols = static_cast<int>(std::min<int64_t>(R, OW - ow0));
    const float* mt = m + t * M;
    for (int64_t m0 = 0; m0 < M; m0 += kLanes) {
      const int64_t lanes = std::min<int64_t>(kLanes, M - m0);
      // Each row's columns (M A), then each column's rows (A^T (M A)).
      vf s[T][R];
      for (int i = 0; i < T; ++i) {
        vf a[T];
        for (int j = 0; j < T; ++j) a[j] = load_lanes(mt + (i * T + j) * stride + m0, lanes);
        output_1d<R>(a, s[i]);
      }
      const vf b = bias ? load_lanes(bias + m0, lanes) : vf{};
      for (int j = 0; j < cols; ++j) {
        vf col[T], out[R];
        for (int i = 0; i < T; ++i) col[i] = s[i][j];
        output_1d<R>(col, out);
        for (int i = 0; i < rows; ++i) {
          const int64_t at = ((oh0 + i) * OW + ow0 + j) * M + m0;
          vf x = out[i] + b;
          if (si) x += load_lanes(si + at, lanes);
          store_lanes(yi + at, act(x), lanes);
        }
      }
    }
  }
}

}  // namespace

WinogradWeights winograd_weights(const float* w, int64_t M, int64_t C, int tile) {
  if (tile != 2 && tile != 4) fail(ErrorCode::kNotImplemented, "Winograd F(", tile, "x", tile, ", 3x3) is not implemented");
  WinogradWeights r;
  r.C = C;
  r.M = M;
  r.tile = tile;
  const int T = tile + 2, points = T * T;
  std::vector<float> u(static_cast<size_t>(points * C * M));
  const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  const double G4[6][3] = {{1.0 / 4, 0, 0},
                           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                           {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                           {1.0 / 24, 1.0 / 12, 1.0 / 6},
                           {1.0 / 24, -1.0 / 12, 1.0 / 6},
                           {0, 0, 1}};
  auto G = [&](int i, int j) { return tile == 2 ? G2[i][j] : G4[i][j]; };
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (m * C + c) * 9;
      double gg[6][3];  // G g
      for (int i = 0; i < T; ++i)
        for (int j = 0; j < 3; ++j) gg[i][j] = G(i, 0) * g[j] + G(i, 1) * g[3 + j] + G(i, 2) * g[6 + j];
      for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j) {
          const double x = gg[i][0] * G(j, 0) + gg[i][1] * G(j, 1) + gg[i][2] * G(j, 2);  // (G g) G^T
          u[static_cast<size_t>(((i * T + j) * C + c) * M + m)] = static_cast<float>(x);
        }
    }
  r.u.reserve(static_cast<size_t>(points));
  for (int p = 0; p < points; ++p)
    r.u.push_back(pack_b(false, C, M, u.data() + static_cast<size_t>(p) * C * M, M, 1.0f, gather_k_block(C)));
  return r;
}

namespace {

/// A thread's buffers for `tiles` tiles: their transformed input v[point][tile][c] and products
/// m[point][tile][M], and the plain-A gather's row offsets (tile t at t C) and k offsets.
struct TileScratch {
  float* v;
  float* m;
  int64_t* row_off;
  int64_t* koff;
  static TileScratch of(int points, int64_t tiles, int64_t C, int64_t M) {
    Carver sizes;
    sizes.take<float>(points * tiles * C);
    sizes.take<float>(points * tiles * M);
    sizes.take<int64_t>(tiles);
    sizes.take<int64_t>(C);
    Carver carve{thread_workspace(Workspace::kWinograd, sizes.off)};
    TileScratch sc{carve.take<float>(points * tiles * C), carve.take<float>(points * tiles * M), carve.take<int64_t>(tiles),
                   carve.take<int64_t>(C)};
    for (int64_t i = 0; i < tiles; ++i) sc.row_off[i] = i * C;
    for (int64_t k = 0; k < C; ++k) sc.koff[k] = k;
    return sc;
  }
};

template <int R>
void winograd_run(const WinogradWeights& u, const float* x, int64_t N, int64_t H, int64_t W, int64_t pt, int64_t pl,
                  int64_t OH, int64_t OW, const float* bias, const float* sum, const GemmEpilogue& act, float* y,
                  ThreadPool& pool) {
  constexpr int kPoints = (R + 2) * (R + 2);
  const int64_t C = u.C, M = u.M;
  const int64_t TH = (OH + R - 1) / R, TW = (OW + R - 1) / R, T = TH * TW;
  // Tiles per block: V and M of a block ((R + 2)^2 (C + M) floats a tile) within ~768 KB of L2,
  // at least a row tile of the GEMM, or all of an image's when that is at most twice as many
  // (each block reads all of the transformed weights: with F(2x2) 16 MB over 512 channels in and
  // out, where 7x7's 16 tiles in two blocks took 10% longer than in one); and at least as many
  // blocks as threads where the tiles allow, a multiple of them (the threads take equal shares of
  // blocks: 49 tiles in 3 blocks on 2 threads left one idle a third of the time).
  const int64_t fit = std::clamp<int64_t>((int64_t{768} << 10) / (kPoints * (C + M) * int64_t{sizeof(float)}), 12, 192);
  int64_t blocks = T <= 2 * fit ? 1 : (T + fit - 1) / fit;
  const int64_t threads = pool.num_threads();
  while ((N * blocks) % threads != 0 && blocks < T) ++blocks;
  const int64_t per = (T + blocks - 1) / blocks;
  blocks = (T + per - 1) / per;
  const int64_t items = N * blocks;
  const ActClamp clamp = ActClamp::of(act);
  // Every block reads all of the transformed weights. Where the threads' blocks would read them
  // more times over than an image's transformed tiles weigh (few tiles, many channels: ResNet-50's
  // 14 x 14 and 7 x 7 stages, 9.4 and 16.8 MB of weights; on 2 threads they ran 1.3x faster than
  // on one), each image goes in three steps instead: all of its tiles transformed (split by
  // tiles), the points' products (split by points: the weights read once), the output transform.
  const double weight_bytes = static_cast<double>(kPoints) * C * M * sizeof(float);
  const double tile_bytes = static_cast<double>(kPoints) * T * (C + M) * sizeof(float);
  if (threads > 1 && static_cast<double>(blocks) * weight_bytes > weight_bytes + 2 * tile_bytes) {
    const TileScratch sc = TileScratch::of(kPoints, T, C, M);
    float* v = sc.v;
    float* m = sc.m;
    const int64_t* row_off = sc.row_off;
    const int64_t* koff = sc.koff;
    for (int64_t n = 0; n < N; ++n) {
      const float* xn = x + n * H * W * C;
      pool.parallel_for(T, 1, [&](int64_t t0, int64_t t1) {
        transform_input<R>(xn, H, W, C, pt, pl, TW, t0, t1 - t0, v + t0 * C, T * C);
      });
      pool.parallel_for(kPoints, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p)
          sgemm_a_gather(AGather{v + p * T * C, row_off, koff, C}, &u.u[static_cast<size_t>(p)], T, M, C, m + p * T * M, M,
                         nullptr);
      });
      pool.parallel_for(T, 1, [&](int64_t t0, int64_t t1) {
        transform_output<R>(m + t0 * M, M, OH, OW, TW, t0, t1 - t0, T * M, bias, sum ? sum + n * OH * OW * M : nullptr,
                            clamp, y + n * OH * OW * M);
      });
    }
    return;
  }
  pool.parallel_for(items, (items + threads - 1) / threads, [&](int64_t b0, int64_t b1) {
    const TileScratch sc = TileScratch::of(kPoints, per, C, M);
    float* v = sc.v;
    float* m = sc.m;
    const int64_t* row_off = sc.row_off;
    const int64_t* koff = sc.koff;
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t n = b / blocks, t0 = (b % blocks) * per, tb = std::min(per, T - t0);
      transform_input<R>(x + n * H * W * C, H, W, C, pt, pl, TW, t0, tb, v, tb * C);
      for (int p = 0; p < kPoints; ++p)
        sgemm_a_gather(AGather{v + p * tb * C, row_off, koff, C}, &u.u[static_cast<size_t>(p)], tb, M, C,
                       m + p * tb * M, M, nullptr);
      transform_output<R>(m, M, OH, OW, TW, t0, tb, tb * M, bias, sum ? sum + n * OH * OW * M : nullptr, clamp,
                       y + n * OH * OW * M);
    }
  });
}

}  // namespace

void winograd_conv(const WinogradWeights& u, const float* x, int64_t N, int64_t H, int64_t W, int64_t pt, int64_t pl,
                   int64_t OH, int64_t OW, const float* bias, const float* sum, const GemmEpilogue& act, float* y,
                   ThreadPool& pool) {
  if (u.tile == 2)
    winograd_run<2>(u, x, N, H, W, pt, pl, OH, OW, bias, sum, act, y, pool);
  else
    winograd_run<4>(u, x, N, H, W, pt, pl, OH, OW, bias, sum, act, y, pool);
}

}  // namespace onyx::cpu
