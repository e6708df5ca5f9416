#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// out[i] = in[base + sum_d idx_d * stride_d] over the output's dims (rank <= 6) for 32-bit elements
// (16-bit in the float16 variants): Transpose, Slice, Expand.
layout(local_size_x = 256) in;
BITS_IN(0, X, x);
BITS_OUT(1, Y, y);
layout(push_constant) uniform P { uint n; int rank; int base; int pad; int dims[6]; int str[6]; } p;

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  uint r = i;
  int off = p.base;
  for (int d = p.rank - 1; d >= 0; --d) {
    int q = int(r % uint(p.dims[d]));
    r /= uint(p.dims[d]);
    off += q * p.str[d];
  }
  STORE_BITS(y, i, LOAD_BITS(x, off));
}
