// Shared helpers for onyx's Vulkan compute shaders.

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
