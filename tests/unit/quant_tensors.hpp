// Tensors for the 8-bit tests: random integers of a quantized type, zero points, random floats.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "onyx/onyx.hpp"

namespace onyx::test {

/// Random integers in [lo, hi] stored as `dt` (uint8 or int8: two's complement).
inline Tensor ints8(DType dt, const Shape& s, int lo, int hi, uint32_t seed) {
  Tensor t(dt, s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  auto* p = static_cast<uint8_t*>(t.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<uint8_t>(d(rng));
  return t;
}

/// A scalar zero point of type `dt` (uint8 or int8).
inline Tensor zero_point(DType dt, int v) {
  Tensor t(dt, Shape{});
  *static_cast<uint8_t*>(t.raw_data()) = static_cast<uint8_t>(v);
  return t;
}

/// One zero point per channel.
inline Tensor zero_points(DType dt, const std::vector<int>& v) {
  Tensor t(dt, Shape{static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) static_cast<uint8_t*>(t.raw_data())[i] = static_cast<uint8_t>(v[i]);
  return t;
}

/// Random floats in [lo, hi).
inline Tensor floats(const Shape& s, float lo, float hi, uint32_t seed) {
  Tensor t(DType::kFloat, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

/// Random int32 values in [lo, hi] (biases).
inline Tensor int32s(const Shape& s, int lo, int hi, uint32_t seed) {
  Tensor t(DType::kInt32, s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int32_t>()[i] = d(rng);
  return t;
}

/// A 1-D float tensor of these values.
inline Tensor vec(const std::vector<float>& v) { return Tensor::from_vector<float>(Shape{static_cast<int64_t>(v.size())}, v); }

}  // namespace onyx::test
