#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Softmax / LogSoftmax along an axis of length d with `inner` elements after it: one work group
// per (outer, inner) row.
layout(local_size_x = 256) in;
DATA_IN(0, X, x);
DATA_OUT(1, Y, y);
layout(push_constant) uniform P { uint rows; uint d; uint inner; int log_softmax; } p;
shared float part[256];

void main() {
  uint row = flat_group();
  if (row >= p.rows) return;
  uint t = gl_LocalInvocationID.x;
  uint o = row / p.inner, in_ = row % p.inner;
  uint base = o * p.d * p.inner + in_;
  float m = -3.402823466e38;
  for (uint k = t; k < p.d; k += 256) m = max(m, LOAD(x, base + k * p.inner));
  part[t] = m;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) part[t] = max(part[t], part[t + s]);
    barrier();
  }
  m = part[0];
  barrier();
  float sum = 0.0;
  for (uint k = t; k < p.d; k += 256) sum += exp(LOAD(x, base + k * p.inner) - m);
  part[t] = sum;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    barrier();
  }
  sum = part[0];
  if (p.log_softmax != 0) {
    float ls = log(sum);
    for (uint k = t; k < p.d; k += 256) STORE(y, base + k * p.inner, LOAD(x, base + k * p.inner) - m - ls);
  } else {
    float inv = 1.0 / sum;
    for (uint k = t; k < p.d; k += 256) STORE(y, base + k * p.inner, exp(LOAD(x, base + k * p.inner) - m) * inv);
  }
}
