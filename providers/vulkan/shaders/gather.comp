#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Gather along an axis of length d: out[o, j, i] = data[o, idx[j], i]. Indices are int32, or int64
// (idx64 != 0: an index whose high word is not the low word's sign is out of range). An
// out-of-range index (the host checks the ones it sees; these were computed on the device) writes
// 0 and sets the error word to `code`, which fails the run naming the node.
layout(local_size_x = 256) in;
BITS_IN(0, X, x);
layout(std430, binding = 1) readonly buffer I { int idx[]; };
BITS_OUT(2, Y, y);
layout(std430, binding = 3) buffer E { uint error_code; };
layout(push_constant) uniform P { uint n; uint nidx; int d; uint inner; int idx64; uint code; } p;

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  uint in_ = i % p.inner;
  uint j = (i / p.inner) % p.nidx;
  uint o = i / (p.inner * p.nidx);
  int k = p.idx64 != 0 ? idx[2 * j] : idx[j];
  bool bad = p.idx64 != 0 && idx[2 * j + 1] != (k < 0 ? -1 : 0);
  if (k < 0) k += p.d;
  bad = bad || k < 0 || k >= p.d;
  if (bad) {
    atomicMax(error_code, p.code);
    STORE_BITS(y, i, 0u);
    return;
  }
  STORE_BITS(y, i, LOAD_BITS(x, (o * uint(p.d) + uint(k)) * p.inner + in_));
}
