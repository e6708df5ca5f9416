// Helpers shared by the EP-against-CPU tests (oneDNN, Vulkan, CUDA): sessions on one EP or the
// CPU EP, seeded random inputs and an elementwise comparison with a relative and absolute tolerance.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "model_builder.hpp"

namespace onyx::test {

using Inputs = std::vector<std::pair<std::string, Value>>;

/// The model on the CPU EP alone, one thread, no environment defaults.
inline Session cpu_session(const std::string& m) {
  return Session::builder().with_no_environment_execution_providers().with_intra_threads(1).commit_from_memory(
      m.data(), m.size());
}

/// The model with exactly the EP `ep` (error_on_failure), no environment defaults; `strict`
/// forbids CPU fallback, so every node must run on that EP.
inline Session ep_session(const std::string& m, ep::ExecutionProviderDispatch ep, bool strict = true, int threads = 1) {
  return Session::builder()
      .with_no_environment_execution_providers()
      .with_intra_threads(threads)
      .with_execution_providers({ep.error_on_failure()})
      .with_cpu_fallback(!strict)
      .commit_from_memory(m.data(), m.size());
}

/// A float tensor of uniform values in [lo, hi) from a fixed seed.
inline Tensor random_tensor(const Shape& s, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(s.numel()));
  for (float& f : v) f = d(rng);
  return Tensor::from_vector<float>(s, v);
}

/// Inputs for every graph input of `g`, random with seeds seed, seed + 1, ...
inline Inputs random_inputs(const GraphSpec& g, uint32_t seed = 1) {
  Inputs in;
  for (const auto& v : g.inputs) in.emplace_back(v.name, random_tensor(Shape(v.dims), seed++));
  return in;
}

/// Every element within atol + rtol * |want| (NaN matches NaN); same shape and type.
inline ::testing::AssertionResult close(const Value& got, const Value& want, double rtol = 1e-4, double atol = 1e-5) {
  if (!got.is_tensor() || !want.is_tensor()) return ::testing::AssertionFailure() << "not tensors";
  const Tensor& a = got.tensor();
  const Tensor& b = want.tensor();
  if (!(a.shape() == b.shape()))
    return ::testing::AssertionFailure() << "shape " << a.shape().to_string() << " vs " << b.shape().to_string();
  if (a.dtype() != b.dtype()) return ::testing::AssertionFailure() << "dtype differs";
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.element_as_double(i), y = b.element_as_double(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    const double d = std::fabs(x - y);
    if (!(d <= atol + rtol * std::fabs(y)))
      return ::testing::AssertionFailure() << "element " << i << ": " << x << " vs " << y << " (diff " << d << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace onyx::test
