#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer C { uint c[]; };  // bool bytes
BITS_IN(1, X, x);
BITS_IN(2, Yi, yv);
BITS_OUT(3, O, o);
layout(push_constant) uniform P { uint n; int rank; int dims[6]; int sc[6]; int sx[6]; int sy[6]; } p;

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  uint r = i, ic = 0, ix = 0, iy = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    uint q = r % uint(p.dims[d]);
    r /= uint(p.dims[d]);
    ic += q * uint(p.sc[d]);
    ix += q * uint(p.sx[d]);
    iy += q * uint(p.sy[d]);
  }
  bool cond = ((c[ic >> 2] >> ((ic & 3u) * 8u)) & 0xffu) != 0u;
  STORE_BITS(o, i, cond ? LOAD_BITS(x, ix) : LOAD_BITS(yv, iy));
}
