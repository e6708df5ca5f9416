#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Direct 2-D transposed convolution, one output element per invocation: the sum over the input
// positions and taps that land on it (oy = iy * sh - ph + ky * dh). Weights [cin, cout_g, kh, kw].
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
  int dh, dw, has_bias, pad;
} p;

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  int idx = int(i);
  int ox = idx % p.wo; idx /= p.wo;
  int oy = idx % p.ho; idx /= p.ho;
  int co = idx % p.cout;
  int b = idx / p.cout;
  int g = co / p.cout_g, m = co % p.cout_g;
  float acc = p.has_bias != 0 ? LOAD(bias, co) : 0.0;
  for (int ky = 0; ky < p.kh; ++ky) {
    int ty = oy + p.ph - ky * p.dh;
    if (ty < 0 || ty % p.sh != 0) continue;
    int iy = ty / p.sh;
    if (iy >= p.h) continue;
    for (int kx = 0; kx < p.kw; ++kx) {
      int tx = ox + p.pw - kx * p.dw;
      if (tx < 0 || tx % p.sw != 0) continue;
      int ix = tx / p.sw;
      if (ix >= p.w) continue;
      for (int ci = 0; ci < p.cin_g; ++ci) {
        int c = g * p.cin_g + ci;
        float wv = LOAD(wt, ((c * p.cout_g + m) * p.kh + ky) * p.kw + kx);
        acc = fma(LOAD(x, ((b * p.cin + c) * p.h + iy) * p.w + ix), wv, acc);
      }
    }
  }
  STORE(y, i, acc);
}
