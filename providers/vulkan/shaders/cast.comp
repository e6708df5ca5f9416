#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Cast between float32, float16, int32, int64 and bool (one side a float). Each invocation writes
// one 32-bit word of the output: one float32 or int32 element, half an int64 element pair (two
// words), two float16 elements or four bools, so no two invocations share a word and no 16-bit
// storage is needed. Inputs are read as words too.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
// Kinds: 0 float32, 1 float16, 2 int32, 3 int64, 4 bool. n: elements.
layout(push_constant) uniform P { uint n; int src; int dst; } p;

// Element j of the input as float (integers converted as C does, rounding to nearest).
float read_float(uint j) {
  switch (p.src) {
    case 0: return uintBitsToFloat(x[j]);
    case 1: return half_to_float((x[j >> 1] >> ((j & 1u) << 4)) & 0xffffu);
    case 2: return float(int(x[j]));
    case 3: {
      int hi = int(x[2 * j + 1]);
      uint lo = x[2 * j];
      bool small = (hi == 0 && lo < 0x80000000u) || (hi == -1 && lo >= 0x80000000u);
      return small ? float(int(lo)) : float(hi) * 4294967296.0 + float(lo);
    }
    default: return ((x[j >> 2] >> ((j & 3u) * 8u)) & 0xffu) != 0u ? 1.0 : 0.0;
  }
}

void main() {
  uint i = flat_id(256);
  if (p.dst == 4) {  // bool: four per word
    if (i * 4u >= p.n) return;
    uint word = 0u;
    for (uint b = 0u; b < 4u; ++b)
      if (i * 4u + b < p.n && read_float(i * 4u + b) != 0.0) word |= 1u << (8u * b);
    y[i] = word;
    return;
  }
  if (p.dst == 1) {  // float16: two per word (the spare half of an odd count's last word is 0)
    if (i * 2u >= p.n) return;
    uint lo = float_to_half(read_float(2u * i));
    uint hi = 2u * i + 1u < p.n ? float_to_half(read_float(2u * i + 1u)) : 0u;
    y[i] = lo | (hi << 16);
    return;
  }
  if (i >= p.n) return;
  if (p.src == 0 && p.dst == 0) {  // a copy, bit for bit
    y[i] = x[i];
    return;
  }
  float v = read_float(i);
  switch (p.dst) {
    case 0: y[i] = floatBitsToUint(v); break;
    case 2: y[i] = uint(int(trunc(v))); break;
    case 3: {
      int t = int(trunc(v));
      y[2 * i] = uint(t);
      y[2 * i + 1] = t < 0 ? 0xffffffffu : 0u;
      break;
    }
  }
}
