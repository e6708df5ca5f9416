// Shared helpers for onyx's Vulkan compute shaders.

// Storage of float tensors. Every shader that reads or writes float tensors is compiled three ways
// (providers/vulkan/CMakeLists.txt): float32 (the default); STORAGE_F16, float16 in 16-bit storage
// buffers (VK_KHR_16bit_storage's storageBuffer16BitAccess); STORAGE_F16_PACKED, float16 packed two
// to a 32-bit word for devices without 16-bit storage (a store is an atomic read-modify-write of its
// half of the word, so neighbouring invocations never overwrite each other's element). Arithmetic
// is float32 in every case; float16 values are converted on load and rounded to nearest even on
// store, by the integer code below (the same rule as the CPU EP's, whatever the driver's own
// conversion rounding is).
//   DATA_IN / DATA_OUT(binding, Block, name): a float tensor binding;
//   LOAD(name, i) the element as float, STORE(name, i, v) writes float v;
//   BITS_IN / BITS_OUT, LOAD_BITS / STORE_BITS: the same bindings as raw 32- or 16-bit elements,
//   for the data-movement shaders (bit-exact copies).
#if defined(STORAGE_F16)
#extension GL_EXT_shader_16bit_storage : require
#define HALF_STORAGE 1
#define DATA_IN(b, B, n) layout(std430, binding = b) readonly buffer B { uint16_t n[]; }
#define DATA_OUT(b, B, n) layout(std430, binding = b) writeonly buffer B { uint16_t n[]; }
#define LOAD_BITS(n, i) uint(n[i])
#define STORE_BITS(n, i, v) n[i] = uint16_t(v)
#elif defined(STORAGE_F16_PACKED)
#define HALF_STORAGE 1
#define DATA_IN(b, B, n) layout(std430, binding = b) readonly buffer B { uint n[]; }
#define DATA_OUT(b, B, n) layout(std430, binding = b) buffer B { uint n[]; }
#define LOAD_BITS(n, i) ((n[uint(i) >> 1] >> ((uint(i) & 1u) << 4)) & 0xffffu)
#define STORE_BITS(n, i, v)                                  \
  do {                                                       \
    uint w_ = uint(i) >> 1, s_ = (uint(i) & 1u) << 4;        \
    uint h_ = (uint(v) & 0xffffu) << s_;                     \
    atomicAnd(n[w_], ~(0xffffu << s_));                      \
    atomicOr(n[w_], h_);                                     \
  } while (false)
#else
#define DATA_IN(b, B, n) layout(std430, binding = b) readonly buffer B { float n[]; }
#define DATA_OUT(b, B, n) layout(std430, binding = b) writeonly buffer B { float n[]; }
#define LOAD(n, i) n[i]
#define STORE(n, i, v) n[i] = (v)
#define BITS_IN(b, B, n) layout(std430, binding = b) readonly buffer B { uint n[]; }
#define BITS_OUT(b, B, n) layout(std430, binding = b) writeonly buffer B { uint n[]; }
#define LOAD_BITS(n, i) n[i]
#define STORE_BITS(n, i, v) n[i] = (v)
#endif

// float16 bits -> float (exact, denormals included).
float half_to_float(uint h) {
  uint s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0u) return uintBitsToFloat(s | floatBitsToUint(float(m) * 5.9604644775390625e-8));  // m * 2^-24
  if (e == 31u) return uintBitsToFloat(s | 0x7f800000u | (m << 13));
  return uintBitsToFloat(s | ((e + 112u) << 23) | (m << 13));
}

// float -> float16 bits, rounded to nearest even; overflow to infinity, NaN stays NaN (quiet).
uint float_to_half(float v) {
  uint x = floatBitsToUint(v);
  uint s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return s | (a > 0x7f800000u ? 0x7e00u | ((a >> 13) & 0x3ffu) : 0x7c00u);
  if (a >= 0x477ff000u) return s | 0x7c00u;  // >= 65520 rounds to infinity
  if (a < 0x38800000u) {                      // below 2^-14: a denormal half, or zero
    if (a <= 0x33000000u) return s;           // <= 2^-25 rounds to zero
    uint m = (a & 0x7fffffu) | 0x800000u, sh = 126u - (a >> 23);
    uint h = m >> sh, rem = m & ((1u << sh) - 1u), half_ = 1u << (sh - 1u);
    if (rem > half_ || (rem == half_ && (h & 1u) != 0u)) h += 1u;
    return s | h;
  }
  uint r = a - 0x38000000u;  // rebias the exponent (127 -> 15)
  uint h = r >> 13, rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) h += 1u;
  return s | h;
}

#ifdef HALF_STORAGE
#define BITS_IN DATA_IN
#define BITS_OUT DATA_OUT
#define LOAD(n, i) half_to_float(LOAD_BITS(n, i))
#define STORE(n, i, v) STORE_BITS(n, i, float_to_half(v))
#endif

// Flat invocation index of a 1-D dispatch spread over x and y (Stream::dispatch_1d).
uint flat_id(uint local_size) {
  return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * local_size + gl_LocalInvocationID.x;
}

// Flat work-group index of a dispatch of one group per item spread over x and y.
uint flat_group() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// erf with |error| < 1.2e-7 (Numerical Recipes' erfc Chebyshev fit).
float erf_approx(float x) {
  float z = abs(x);
  float t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
            t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
            t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0.0 ? 1.0 - r : r - 1.0;
}

// tanh that stays finite for large |x|.
float tanh_safe(float x) {
  float t = exp(-2.0 * abs(x));
  float y = (1.0 - t) / (1.0 + t);
  return x < 0.0 ? -y : y;
}
