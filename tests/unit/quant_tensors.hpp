// The 8-bit tests' tensors (random integers of a quantized type, zero points, random floats) and
// their graph builder (QDQ pairs, com.microsoft nodes, generated names).
#pragma once

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model_builder.hpp"
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

/// A graph under construction: generated value names, nodes named by the caller or generated.
class QuantGraph {
 public:
  GraphSpec g;

  std::string constant(const std::string& base, Tensor t) {
    std::string name = fresh(base);
    g.initializers.emplace_back(name, std::move(t));
    return name;
  }
  std::string input(const std::string& name, DType dt, std::vector<int64_t> dims) {
    g.inputs.push_back({name, dt, std::move(dims)});
    return name;
  }
  void output(const std::string& value, DType dt) { g.outputs.push_back(any_out(value, dt)); }
  /// A node with `outputs` fresh outputs; returns the first (last_outputs() has them all).
  std::string node(const std::string& op, std::vector<std::string> inputs, std::vector<AttrSpec> attrs = {},
                   const std::string& name = "", const std::string& domain = "", int outputs = 1) {
    NodeSpec n{op, std::move(inputs), {}, std::move(attrs), name.empty() ? fresh(op) : name, domain};
    for (int k = 0; k < outputs; ++k) n.outputs.push_back(fresh(n.name + "_y"));
    g.nodes.push_back(std::move(n));
    return g.nodes.back().outputs[0];
  }
  /// A com.microsoft node.
  std::string ms(const std::string& op, std::vector<std::string> inputs, std::vector<AttrSpec> attrs = {},
                 const std::string& name = "") {
    return node(op, std::move(inputs), std::move(attrs), name, "com.microsoft");
  }
  const std::vector<std::string>& last_outputs() const { return g.nodes.back().outputs; }

  std::string scale(float s) { return constant("scale", Tensor::scalar(s)); }
  std::string zp(DType dt, int v) { return constant("zp", zero_point(dt, v)); }
  /// DequantizeLinear of `data` (of type dt) at a per-tensor scale and zero point.
  std::string dq(const std::string& data, float s, int z, DType dt) {
    return node("DequantizeLinear", {data, scale(s), zp(dt, z)});
  }
  /// DequantizeLinear along `axis`.
  std::string dq_axis(const std::string& data, Tensor scales, Tensor zps, int64_t axis) {
    return node("DequantizeLinear", {data, constant("scale", std::move(scales)), constant("zp", std::move(zps))},
                {attr_int("axis", axis)});
  }
  /// QuantizeLinear of `x` to type dt at a per-tensor scale and zero point.
  std::string q(const std::string& x, float s, int z, DType dt) {
    return node("QuantizeLinear", {x, scale(s), zp(dt, z)});
  }
  /// The model at `opset`, importing version 1 of every other domain its nodes use.
  std::string model(int64_t opset = 17) const {
    std::set<std::string> used;
    for (const auto& n : g.nodes)
      if (!n.domain.empty()) used.insert(n.domain);
    std::vector<std::pair<std::string, int64_t>> domains;
    for (const auto& d : used) domains.emplace_back(d, 1);
    return encode_model(g, opset, opset >= 21 ? 10 : 8, domains);
  }

 private:
  int count_ = 0;
  std::string fresh(const std::string& base) { return base + "_" + std::to_string(count_++); }
};

}  // namespace onyx::test
