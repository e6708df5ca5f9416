#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// MaxPool / AveragePool over 2-D windows (1-D pools run with h = 1), one output per invocation.
layout(local_size_x = 256) in;
DATA_IN(0, X, x);
DATA_OUT(1, Y, y);
layout(push_constant) uniform P {
  uint n; int mode; int h, w;      // mode 0: max, 1: average without pads, 2: average counting pads
  int ho, wo, kh, kw;
  int sh, sw, ph, pw;
  int dh, dw, ph_end, pw_end;
} p;

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  int idx = int(i);
  int ox = idx % p.wo; idx /= p.wo;
  int oy = idx % p.ho;
  int plane = idx / p.ho;
  int base = plane * p.h * p.w;
  float acc = p.mode == 0 ? -3.402823466e38 : 0.0;
  int count = 0;
  for (int ky = 0; ky < p.kh; ++ky) {
    int iy = oy * p.sh - p.ph + ky * p.dh;
    if (iy < 0 || iy >= p.h) continue;
    for (int kx = 0; kx < p.kw; ++kx) {
      int ix = ox * p.sw - p.pw + kx * p.dw;
      if (ix < 0 || ix >= p.w) continue;
      float v = LOAD(x, base + iy * p.w + ix);
      if (p.mode == 0) acc = max(acc, v);
      else acc += v;
      ++count;
    }
  }
  if (p.mode == 1) acc /= float(max(count, 1));
  if (p.mode == 2) {
    int y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
    int y1 = min(y0 + p.kh, p.h + p.ph_end), x1 = min(x0 + p.kw, p.w + p.pw_end);
    acc /= float(max((y1 - y0) * (x1 - x0), 1));
  }
  STORE(y, i, acc);
}
