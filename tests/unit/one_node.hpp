// One-node models for the opset unit tests (test_opset18_21.cpp, test_opset22_28.cpp): inputs
// given as graph inputs or initializers, runs, typed tensors from literals, and checks.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "model_builder.hpp"

namespace onyx::test {

struct In {
  std::string name;
  Tensor value;
  bool initializer = false;  // a constant instead of a graph input
};

/// IR version that goes with an opset (IR 10 came with opset 21).
inline int64_t ir_for(int64_t opset) { return opset >= 21 ? 10 : 8; }

inline Session session_of(const GraphSpec& g, int64_t opset) {
  const std::string m = encode_model(g, opset, ir_for(opset));
  return Session::builder().with_intra_threads(1).commit_from_memory(m.data(), m.size());
}

/// One-node model: `op` over `inputs` (an empty name is an omitted optional input), outputs
/// y0, y1, ... of the given dtypes with unknown shapes.
inline GraphSpec one_node(const std::string& op, const std::vector<In>& inputs, const std::vector<DType>& outs,
                   std::vector<AttrSpec> attrs = {}) {
  GraphSpec g;
  NodeSpec n{op, {}, {}, std::move(attrs), "node"};
  for (const auto& in : inputs) {
    n.inputs.push_back(in.name);
    if (in.name.empty()) continue;
    if (in.initializer)
      g.initializers.emplace_back(in.name, in.value);
    else
      g.inputs.push_back({in.name, in.value.dtype(), in.value.shape().to_vector()});
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string y = numbered("y", i);
    n.outputs.push_back(y);
    ValueSpec v{y, outs[i]};
    v.no_shape = true;
    g.outputs.push_back(v);
  }
  g.nodes.push_back(n);
  return g;
}

inline std::vector<Value> run_op(const std::string& op, const std::vector<In>& inputs, const std::vector<DType>& outs,
                          std::vector<AttrSpec> attrs, int64_t opset) {
  Session s = session_of(one_node(op, inputs, outs, std::move(attrs)), opset);
  std::vector<std::pair<std::string, Value>> feeds;
  for (const auto& in : inputs)
    if (!in.name.empty() && !in.initializer) feeds.emplace_back(in.name, Value(in.value));
  return s.run(feeds);
}

/// The single output of a one-output node.
inline Tensor run1(const std::string& op, const std::vector<In>& inputs, DType out, std::vector<AttrSpec> attrs,
            int64_t opset) {
  return run_op(op, inputs, {out}, std::move(attrs), opset)[0].tensor();
}

template <class T>
inline Tensor tensor(Shape s, std::vector<T> v) {
  return Tensor::from_vector<T>(std::move(s), v);
}
inline Tensor f32(Shape s, std::vector<float> v) { return tensor<float>(std::move(s), std::move(v)); }
inline Tensor i64(Shape s, std::vector<int64_t> v) { return tensor<int64_t>(std::move(s), std::move(v)); }

/// A tensor of a one-byte type (float8, 4-bit integers stored one per byte) from its codes.
inline Tensor bytes_tensor(DType dt, const Shape& s, const std::vector<uint8_t>& v) {
  Tensor t(dt, s);
  EXPECT_EQ(t.numel(), static_cast<int64_t>(v.size()));
  std::memcpy(t.raw_data(), v.data(), v.size());
  return t;
}

/// A tensor of a 16-bit float type from its bit patterns.
inline Tensor bits16_tensor(DType dt, const Shape& s, const std::vector<uint16_t>& v) {
  Tensor t(dt, s);
  EXPECT_EQ(t.numel(), static_cast<int64_t>(v.size()));
  std::memcpy(t.raw_data(), v.data(), v.size() * 2);
  return t;
}

inline std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  return std::vector<uint8_t>(p, p + t.numel());
}

template <class T>
inline std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

inline std::vector<bool> bools(const Tensor& t) { return std::vector<bool>(t.data<bool>(), t.data<bool>() + t.numel()); }

inline Tensor strings(Shape s, std::vector<std::string> v) {
  Tensor t(DType::kString, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<std::string>()[i] = v[i];
  return t;
}

inline void expect_near(const Tensor& t, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(t.data<float>()[i], want[i], tol * std::max(1.0f, std::fabs(want[i]))) << "at " << i;
}

/// Expects an onyx::Error whose message holds `needle` (and whose code is *code when given).
inline void expect_error(const std::function<void()>& f, const std::string& needle, const ErrorCode* code = nullptr) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    if (code) {
      EXPECT_EQ(e.code(), *code) << e.what();
    }
  }
}

inline AttrSpec attr_tensor(std::string name, const Tensor& t) {
  AttrSpec a{};
  a.name = std::move(name);
  a.kind = AttrSpec::kTensor;
  a.s = encode_tensor_proto(t, "");
  return a;
}

inline AttrSpec attr_graph(std::string name, const GraphSpec& g) {
  AttrSpec a{};
  a.name = std::move(name);
  a.kind = AttrSpec::kGraph;
  a.s = g.encode();
  return a;
}

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline const std::vector<std::pair<std::string, Value>> kNoFeeds;

}  // namespace onyx::test
