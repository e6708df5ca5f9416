#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Gather along an axis of length d: out[o, j, i] = data[o, idx[j], i]. Indices are int32, or int64
// (idx64 != 0, the low word read; the host checks the range when it sees the indices).
// Out-of-range indices (only possible for indices computed on the device) give 0.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer I { int idx[]; };
layout(std430, binding = 2) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P { uint n; uint nidx; int d; uint inner; int idx64; } p;

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  uint in_ = i % p.inner;
  uint j = (i / p.inner) % p.nidx;
  uint o = i / (p.inner * p.nidx);
  int k = p.idx64 != 0 ? idx[2 * j] : idx[j];
  if (k < 0) k += p.d;
  y[i] = (k < 0 || k >= p.d) ? 0u : x[(o * uint(p.d) + uint(k)) * p.inner + in_];
}
