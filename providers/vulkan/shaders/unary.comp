#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
DATA_IN(0, X, x);
DATA_OUT(1, Y, y);
layout(push_constant) uniform P { uint n; int op; float alpha; float beta; } p;

float softplus(float v) { return v > 20.0 ? v : log(1.0 + exp(v)); }

void main() {
  uint i = flat_id(256);
  if (i >= p.n) return;
  float v = LOAD(x, i);
  float a = p.alpha, b = p.beta, r = v;
  switch (p.op) {
    case 0: r = max(v, 0.0); break;                                    // Relu
    case 1: r = v >= 0.0 ? v : a * v; break;                           // LeakyRelu
    case 2: r = 1.0 / (1.0 + exp(-v)); break;                          // Sigmoid
    case 3: r = tanh_safe(v); break;                                   // Tanh
    case 4: r = exp(v); break;                                         // Exp
    case 5: r = log(v); break;                                         // Log
    case 6: r = sqrt(v); break;                                        // Sqrt
    case 7: r = -v; break;                                             // Neg
    case 8: r = abs(v); break;                                         // Abs
    case 9: r = erf_approx(v); break;                                  // Erf
    case 10: r = min(max(v, a), b); break;                             // Clip
    case 11: r = clamp(a * v + b, 0.0, 1.0); break;                    // HardSigmoid
    case 12: r = v * clamp(v / 6.0 + 0.5, 0.0, 1.0); break;            // HardSwish
    case 13: r = v >= 0.0 ? v : a * (exp(v) - 1.0); break;             // Elu
    case 14: r = v > 0.0 ? b * v : b * a * (exp(v) - 1.0); break;      // Selu (alpha, gamma)
    case 15: r = softplus(v); break;                                   // Softplus
    case 16: r = 1.0 / v; break;                                       // Reciprocal
    case 17: r = floor(v); break;                                      // Floor
    case 18: r = ceil(v); break;                                       // Ceil
    case 19: r = 0.5 * v * (1.0 + erf_approx(v * 0.70710678118654752)); break;  // Gelu
    case 20: r = sin(v); break;                                        // Sin
    case 21: r = cos(v); break;                                        // Cos
    case 22: r = v; break;                                             // Identity
    case 23: r = roundEven(v); break;                                  // Round
    case 24: r = sign(v); break;                                       // Sign
    case 25: r = v / (1.0 + abs(v)); break;                            // Softsign
    case 26: r = v * tanh_safe(softplus(v)); break;                    // Mish
    case 27: r = v > a ? v : 0.0; break;                               // ThresholdedRelu
    case 28: r = max(0.0, v) + min(0.0, a * (exp(v / a) - 1.0)); break;  // Celu
    case 29: r = 0.5 * v * (1.0 + tanh_safe(0.7978845608028654 * (v + 0.044715 * v * v * v))); break;  // Gelu tanh
    case 30: r = v * (1.0 / (1.0 + exp(-a * v))); break;               // x * sigmoid(alpha x) (Swish)
    case 31: r = tan(v); break;
    case 32: r = atan(v, sqrt(max(1.0 - v * v, 0.0))); if (abs(v) > 1.0) r = 0.0 / 0.0; break;  // Asin (builtin is imprecise on some drivers)
    case 33: r = atan(sqrt(max(1.0 - v * v, 0.0)), v); if (abs(v) > 1.0) r = 0.0 / 0.0; break;  // Acos
    case 34: r = atan(v); break;
    case 35: r = 0.5 * (exp(v) - exp(-v)); break;                      // Sinh
    case 36: r = 0.5 * (exp(v) + exp(-v)); break;                      // Cosh
    case 37: r = log(v + sqrt(v * v + 1.0)); break;                    // Asinh
    case 38: r = log(v + sqrt(v * v - 1.0)); break;                    // Acosh
    case 39: r = 0.5 * log((1.0 + v) / (1.0 - v)); break;              // Atanh
  }
  STORE(y, i, r);
}
