#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// GlobalAveragePool / GlobalMaxPool: one work group per (n, c) plane.
layout(local_size_x = 256) in;
DATA_IN(0, X, x);
DATA_OUT(1, Y, y);
layout(push_constant) uniform P { uint planes; uint size; int mode; } p;  // mode 0: average, 1: max
shared float part[256];

void main() {
  uint plane = flat_group();
  if (plane >= p.planes) return;
  uint t = gl_LocalInvocationID.x;
  float acc = p.mode == 1 ? -3.402823466e38 : 0.0;
  for (uint k = t; k < p.size; k += 256) {
    float v = LOAD(x, plane * p.size + k);
    acc = p.mode == 1 ? max(acc, v) : acc + v;
  }
  part[t] = acc;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) part[t] = p.mode == 1 ? max(part[t], part[t + s]) : part[t] + part[t + s];
    barrier();
  }
  if (t == 0) STORE(y, plane, p.mode == 1 ? part[0] : part[0] / float(p.size));
}
