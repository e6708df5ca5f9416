#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Direct 2-D convolution, one output element per invocation: for depthwise and other
// convolutions with few input channels per group.
layout(local_size_x = 256) in;
DATA_IN(0, X, x);
DATA_IN(1, Wt, wt);
DATA_IN(2, Bias_, bias);
DATA_OUT(3, Y, y);
layout(push_constant) uniform P {
  uint n; int cout, cout_g, groups;
  int cin, h, w, cin_g;
  int ho, wo, kh, kw;
  int sh, sw, ph, pw;
  int dh, dw, has_bias, act;
  float lo, hi;
} p;

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  int idx = int(i);
  int ox = idx % p.wo; idx /= p.wo;
  int oy = idx % p.ho; idx /= p.ho;
  int co = idx % p.cout;
  int b = idx / p.cout;
  int g = co / p.cout_g;
  float acc = p.has_bias != 0 ? LOAD(bias, co) : 0.0;
  for (int ci = 0; ci < p.cin_g; ++ci) {
    int xc = (b * p.cin + g * p.cin_g + ci) * p.h;
    int wc = (co * p.cin_g + ci) * p.kh;
    for (int ky = 0; ky < p.kh; ++ky) {
      int iy = oy * p.sh - p.ph + ky * p.dh;
      if (iy < 0 || iy >= p.h) continue;
      for (int kx = 0; kx < p.kw; ++kx) {
        int ix = ox * p.sw - p.pw + kx * p.dw;
        if (ix < 0 || ix >= p.w) continue;
        acc = fma(LOAD(x, (xc + iy) * p.w + ix), LOAD(wt, (wc + ky) * p.kw + kx), acc);
      }
    }
  }
  if (p.act == 1) acc = max(acc, 0.0);
  else if (p.act == 2) acc = min(max(acc, p.lo), p.hi);
  STORE(y, i, acc);
}
