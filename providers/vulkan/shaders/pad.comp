#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Pad over 32-bit elements (16-bit in the float16 variants; rank <= 6): per output dim d,
// map[moff[d] + index] is the input index it reads along d, or -1 where the element is the constant
// (the host computes the maps for the mode: constant, reflect, edge or wrap; negative pads crop).
// `value` holds the constant's bits.
layout(local_size_x = 256) in;
BITS_IN(0, X, x);
layout(std430, binding = 1) readonly buffer M { int map[]; };
BITS_OUT(2, Y, y);
layout(push_constant) uniform P { uint n; int rank; uint value; int pad; int dims[6]; int moff[6]; int str[6]; } p;

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  uint r = i;
  int off = 0;
  bool constant = false;
  for (int d = p.rank - 1; d >= 0; --d) {
    int q = int(r % uint(p.dims[d]));
    r /= uint(p.dims[d]);
    int m = map[p.moff[d] + q];
    if (m < 0) constant = true;
    else off += m * p.str[d];
  }
  STORE_BITS(y, i, constant ? p.value : LOAD_BITS(x, off));
}
