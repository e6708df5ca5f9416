#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Reduce* over any set of axes: one output per invocation. The input is described by its kept
// dims (kd, with strides ks) and its reduced dims (rd, with strides rs), each up to 6.
layout(local_size_x = 256) in;
DATA_IN(0, X, x);
DATA_OUT(1, Y, y);
layout(push_constant) uniform P {
  uint n; int op; int nk; int nr;
  int kd[6]; int ks[6]; int rd[6]; int rs[6];
  uint count; float init;
} p;

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  uint r = i, base = 0;
  for (int d = p.nk - 1; d >= 0; --d) {
    uint q = r % uint(p.kd[d]);
    r /= uint(p.kd[d]);
    base += q * uint(p.ks[d]);
  }
  float acc = p.init;
  float mx = -3.402823466e38;
  if (p.op == 9) {  // LogSumExp: find the max first
    for (uint e = 0; e < p.count; ++e) {
      uint rr = e, off = base;
      for (int d = p.nr - 1; d >= 0; --d) { uint q = rr % uint(p.rd[d]); rr /= uint(p.rd[d]); off += q * uint(p.rs[d]); }
      mx = max(mx, LOAD(x, off));
    }
  }
  for (uint e = 0; e < p.count; ++e) {
    uint rr = e, off = base;
    for (int d = p.nr - 1; d >= 0; --d) { uint q = rr % uint(p.rd[d]); rr /= uint(p.rd[d]); off += q * uint(p.rs[d]); }
    float v = LOAD(x, off);
    switch (p.op) {
      case 0: case 1: case 8: acc += v; break;          // Sum, Mean, LogSum
      case 2: acc = max(acc, v); break;                 // Max
      case 3: acc = min(acc, v); break;                 // Min
      case 4: acc *= v; break;                          // Prod
      case 5: acc += abs(v); break;                     // L1
      case 6: case 7: acc += v * v; break;              // L2, SumSquare
      case 9: acc += exp(v - mx); break;                // LogSumExp
    }
  }
  if (p.op == 1) acc /= float(max(p.count, 1u));
  if (p.op == 6) acc = sqrt(acc);
  if (p.op == 8) acc = log(acc);
  if (p.op == 9) acc = log(acc) + mx;
  STORE(y, i, acc);
}
