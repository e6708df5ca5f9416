#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Tiled matrix product with shared memory: each 16x16 work group computes a 64x64 tile of C,
// each invocation a 4x4 block, stepping through K 16 at a time. Without CONV: batched
// C[z] = alpha * A[z] B[z] + beta * bias, every operand addressed through strides (so transposed
// and broadcast operands need no copy). With CONV: an implicit GEMM for a 2-D convolution, where
// A is the weight [Cout, Cin/g * kh * kw], B the input gathered on the fly (im2col without the
// buffer) and z = batch * groups + group.
layout(local_size_x = 16, local_size_y = 16) in;
DATA_IN(0, A_, A);
DATA_IN(1, B_, B);
DATA_IN(2, Bias_, bias);
DATA_OUT(3, C_, C);
// Split-K partial sums [split][item][M][N], summed with the epilogue by splitk_reduce.comp.
layout(std430, binding = 4) writeonly buffer P_ { float Pt[]; };
#ifdef CONV
layout(push_constant) uniform P {
  int M, N, K, groups;      // M = Cout / groups, N = Ho * Wo, K = Cin/groups * kh * kw
  int cin, h, w, cin_g;
  int ho, wo, kh, kw;
  int sh, sw, ph, pw;
  int dh, dw, has_bias, act;
  float lo, hi;
  int splits, kchunk;       // split-K: the z work groups are (item, split) pairs, each over kchunk of K
} p;
#else
layout(push_constant) uniform P {
  int M, N, K, batch;
  int a_b, a_m, a_k, b_b;
  int b_k, b_n, c_b, has_bias;
  int bias_b, bias_m, bias_n, act;
  float alpha, beta, lo, hi;
  int splits, kchunk;       // split-K: the z work groups are (item, split) pairs, each over kchunk of K
} p;
#endif

shared float As[16][65];
shared float Bs[16][64];

float load_a(int z, int m, int k) {
#ifdef CONV
  int g = z % p.groups;
  return LOAD(A, (g * p.M + m) * p.K + k);
#else
  return LOAD(A, z * p.a_b + m * p.a_m + k * p.a_k);
#endif
}

float load_b(int z, int k, int n) {
#ifdef CONV
  int b = z / p.groups, g = z % p.groups;
  int khw = p.kh * p.kw;
  int ci = k / khw, r = k - ci * khw;
  int ky = r / p.kw, kx = r - ky * p.kw;
  int oy = n / p.wo, ox = n - oy * p.wo;
  int iy = oy * p.sh - p.ph + ky * p.dh, ix = ox * p.sw - p.pw + kx * p.dw;
  if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) return 0.0;
  return LOAD(B, ((b * p.cin + g * p.cin_g + ci) * p.h + iy) * p.w + ix);
#else
  return LOAD(B, z * p.b_b + k * p.b_k + n * p.b_n);
#endif
}

void store(int z, int m, int n, float acc) {
  if (p.splits > 1) {
    int items = int(gl_NumWorkGroups.z) / p.splits;
    int split = int(gl_WorkGroupID.z) % p.splits;
    Pt[((split * items + z) * p.M + m) * p.N + n] = acc;
    return;
  }
#ifdef CONV
  int b = z / p.groups, g = z % p.groups;
  float v = acc;
  if (p.has_bias != 0) v += LOAD(bias, g * p.M + m);
  if (p.act == 1) v = max(v, 0.0);
  else if (p.act == 2) v = min(max(v, p.lo), p.hi);
  STORE(C, ((b * p.groups + g) * p.M + m) * p.N + n, v);
#else
  float v = p.alpha * acc;
  if (p.has_bias != 0) v += p.beta * LOAD(bias, z * p.bias_b + m * p.bias_m + n * p.bias_n);
  if (p.act == 1) v = max(v, 0.0);
  else if (p.act == 2) v = min(max(v, p.lo), p.hi);
  STORE(C, z * p.c_b + m * p.N + n, v);
#endif
}

#ifdef SIMPLE
// Without shared memory or barriers (for CPU implementations such as lavapipe, where a barrier
// is a context switch): each invocation computes a 4x4 block straight from global memory.
void main() {
  int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
  int mb = int(gl_WorkGroupID.y) * 64 + ty * 4, nb = int(gl_WorkGroupID.x) * 64 + tx * 4;
  int z = int(gl_WorkGroupID.z) / p.splits;
  int kbeg = (int(gl_WorkGroupID.z) % p.splits) * p.kchunk, kend = min(p.K, kbeg + p.kchunk);
  if (mb >= p.M || nb >= p.N) return;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  int mi[4], nj[4];
  for (int i = 0; i < 4; ++i) mi[i] = min(mb + i, p.M - 1);
  for (int j = 0; j < 4; ++j) nj[j] = min(nb + j, p.N - 1);
  for (int k = kbeg; k < kend; ++k) {
    float av[4], bv[4];
    for (int i = 0; i < 4; ++i) av[i] = load_a(z, mi[i], k);
    for (int j = 0; j < 4; ++j) bv[j] = load_b(z, k, nj[j]);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
  }
  for (int i = 0; i < 4; ++i) {
    if (mb + i >= p.M) break;
    for (int j = 0; j < 4; ++j)
      if (nb + j < p.N) store(z, mb + i, nb + j, acc[i][j]);
  }
}
#else
void main() {
  int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
  int tid = ty * 16 + tx;
  int m0 = int(gl_WorkGroupID.y) * 64, n0 = int(gl_WorkGroupID.x) * 64;
  int z = int(gl_WorkGroupID.z) / p.splits;
  int kbeg = (int(gl_WorkGroupID.z) % p.splits) * p.kchunk, kend = min(p.K, kbeg + p.kchunk);
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  for (int k0 = kbeg; k0 < kend; k0 += 16) {
    for (int r = 0; r < 4; ++r) {
      int e = tid + 256 * r;
      int row = e >> 4, kk = e & 15;
      int m = m0 + row, k = k0 + kk;
      As[kk][row] = (m < p.M && k < kend) ? load_a(z, m, k) : 0.0;
      int kb = e >> 6, col = e & 63;
      int n = n0 + col, k2 = k0 + kb;
      Bs[kb][col] = (n < p.N && k2 < kend) ? load_b(z, k2, n) : 0.0;
    }
    barrier();
    for (int kk = 0; kk < 16; ++kk) {
      float av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = As[kk][ty + 16 * i];
      for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
    barrier();
  }
  for (int i = 0; i < 4; ++i) {
    int m = m0 + ty + 16 * i;
    if (m >= p.M) continue;
    for (int j = 0; j < 4; ++j) {
      int n = n0 + tx + 16 * j;
      if (n >= p.N) continue;
      store(z, m, n, acc[i][j]);
    }
  }
}
#endif
