#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
DATA_IN(0, A, a);
DATA_IN(1, B, b);
DATA_OUT(2, Y, y);
// dims: output dims (rank <= 6, leading unused dims are 1); sa, sb: element strides of the inputs
// per output dim (0 where an input is broadcast). same != 0: both inputs have the output's shape.
layout(push_constant) uniform P { uint n; int op; int rank; int same; int dims[6]; int sa[6]; int sb[6]; } p;

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  uint ia = i, ib = i;
  if (p.same == 0) {
    uint r = i;
    ia = 0; ib = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      uint q = r % uint(p.dims[d]);
      r /= uint(p.dims[d]);
      ia += q * uint(p.sa[d]);
      ib += q * uint(p.sb[d]);
    }
  }
  float u = LOAD(a, ia), v = LOAD(b, ib), r = 0.0;
  switch (p.op) {
    case 0: r = u + v; break;
    case 1: r = u - v; break;
    case 2: r = u * v; break;
    case 3: r = u / v; break;
    case 4: r = pow(u, v);
      if (u < 0.0 && v == floor(v)) r = (mod(v, 2.0) == 0.0 ? 1.0 : -1.0) * pow(-u, v);
      if (v == 0.0) r = 1.0;
      break;
    case 5: r = max(u, v); break;
    case 6: r = min(u, v); break;
    case 7: r = u < 0.0 ? u * v : u; break;  // PRelu
    case 8: r = 0.5 * (u + v); break;        // Mean of two
  }
  STORE(y, i, r);
}
