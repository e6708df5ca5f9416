#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Sums split-K partial products [split][item][M][N] and applies the matrix kernels' epilogue
// (alpha, bias or beta * C, activation), writing C in the layout the unsplit kernel would.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer P_ { float Pt[]; };
DATA_IN(1, Bias_, bias);
DATA_OUT(2, C_, C);
layout(push_constant) uniform P {
  uint total; int M, N, splits;   // total = items * M * N
  int conv, groups, has_bias, act;
  int bias_b, bias_m, bias_n, pad;
  float alpha, beta, lo, hi;
} p;

void main() {
  uint i = flat_id(256);
  if (i >= p.total) return;
  float acc = 0.0;
  for (int s = 0; s < p.splits; ++s) acc += Pt[uint(s) * p.total + i];
  int n = int(i % uint(p.N));
  int m = int((i / uint(p.N)) % uint(p.M));
  int z = int(i / uint(p.M * p.N));
  float v;
  if (p.conv != 0) {
    v = acc;
    if (p.has_bias != 0) v += LOAD(bias, (z % p.groups) * p.M + m);
  } else {
    v = p.alpha * acc;
    if (p.has_bias != 0) v += p.beta * LOAD(bias, z * p.bias_b + m * p.bias_m + n * p.bias_n);
  }
  if (p.act == 1) v = max(v, 0.0);
  else if (p.act == 2) v = min(max(v, p.lo), p.hi);
  STORE(C, i, v);
}
