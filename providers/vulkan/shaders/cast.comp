#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Cast between float32 and int32 / int64 / bool; one output element per invocation (for bool
// outputs, four bytes per invocation).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
// mode: 0 f32->f32, 1 i32->f32, 2 i64->f32, 3 bool->f32, 4 f32->i32, 5 f32->i64, 6 f32->bool
layout(push_constant) uniform P { uint n; int mode; } p;

void main() {
  uint i = flat_id(256);
  if (p.mode == 6) {
    if (i * 4u >= p.n) return;
    uint word = 0u;
    for (uint b = 0u; b < 4u; ++b)
      if (i * 4u + b < p.n && uintBitsToFloat(x[i * 4u + b]) != 0.0) word |= 1u << (8u * b);
    y[i] = word;
    return;
  }
  if (i >= p.n) return;
  switch (p.mode) {
    case 0: y[i] = x[i]; break;
    case 1: y[i] = floatBitsToUint(float(int(x[i]))); break;
    case 2: {
      int hi = int(x[2 * i + 1]);
      uint lo = x[2 * i];
      bool small = (hi == 0 && lo < 0x80000000u) || (hi == -1 && lo >= 0x80000000u);
      y[i] = floatBitsToUint(small ? float(int(lo)) : float(hi) * 4294967296.0 + float(lo));
      break;
    }
    case 3: y[i] = floatBitsToUint(((x[i >> 2] >> ((i & 3u) * 8u)) & 0xffu) != 0u ? 1.0 : 0.0); break;
    case 4: y[i] = uint(int(trunc(uintBitsToFloat(x[i])))); break;
    case 5: {
      int v = int(trunc(uintBitsToFloat(x[i])));
      y[2 * i] = uint(v);
      y[2 * i + 1] = v < 0 ? 0xffffffffu : 0u;
      break;
    }
  }
}
