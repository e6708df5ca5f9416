#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Writes one Concat input (blocks of `blk` elements) into its place in the output (blocks of
// `out_blk`, starting at `off`).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) buffer Y { uint y[]; };
layout(push_constant) uniform P { uint n; uint blk; uint out_blk; uint off; } p;

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  y[(i / p.blk) * p.out_blk + p.off + i % p.blk] = x[i];
}
