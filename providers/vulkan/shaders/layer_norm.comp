#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// LayerNormalization over the last d elements of each row: one work group per row.
layout(local_size_x = 256) in;
DATA_IN(0, X, x);
DATA_IN(1, G, gamma);
DATA_IN(2, Bt, beta);
DATA_OUT(3, Y, y);
layout(push_constant) uniform P { uint rows; uint d; float eps; int has_beta; } p;
shared float part[256];

void main() {
  uint row = flat_group();
  if (row >= p.rows) return;
  uint t = gl_LocalInvocationID.x;
  uint base = row * p.d;
  float s = 0.0;
  for (uint k = t; k < p.d; k += 256) s += LOAD(x, base + k);
  part[t] = s;
  barrier();
  for (uint h = 128; h > 0; h >>= 1) {
    if (t < h) part[t] += part[t + h];
    barrier();
  }
  float mean = part[0] / float(p.d);
  barrier();
  float q = 0.0;
  for (uint k = t; k < p.d; k += 256) {
    float c = LOAD(x, base + k) - mean;
    q += c * c;
  }
  part[t] = q;
  barrier();
  for (uint h = 128; h > 0; h >>= 1) {
    if (t < h) part[t] += part[t + h];
    barrier();
  }
  float inv = inversesqrt(part[0] / float(p.d) + p.eps);
  for (uint k = t; k < p.d; k += 256) {
    float v = (LOAD(x, base + k) - mean) * inv * LOAD(gamma, k);
    if (p.has_beta != 0) v += LOAD(beta, k);
    STORE(y, base + k, v);
  }
}
