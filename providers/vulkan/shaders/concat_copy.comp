#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Writes one Concat input (blocks of `blk` elements) into its place in the output (blocks of
// `out_blk`, starting at `off`).
layout(local_size_x = 256) in;
BITS_IN(0, X, x);
BITS_OUT(1, Y, y);
layout(push_constant) uniform P { uint n; uint blk; uint out_blk; uint off; } p;

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  STORE_BITS(y, (i / p.blk) * p.out_blk + p.off + i % p.blk, LOAD_BITS(x, i));
}
