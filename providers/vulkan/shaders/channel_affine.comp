#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// y = x * scale[c] + shift[c] over [N, C, inner] (BatchNormalization folded at prepare time).
layout(local_size_x = 256) in;
DATA_IN(0, X, x);
layout(std430, binding = 1) readonly buffer S { float scale[]; };
layout(std430, binding = 2) readonly buffer T { float shift[]; };
DATA_OUT(3, Y, y);
layout(push_constant) uniform P { uint n; uint c; uint inner; } p;

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  uint ch = (i / p.inner) % p.c;
  STORE(y, i, fma(LOAD(x, i), scale[ch], shift[ch]));
}
