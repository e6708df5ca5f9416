// Graph optimisation: every level gives the same results; passes do what they say.
#include <gtest/gtest.h>

#include <random>

#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

Tensor random_tensor(Shape s, uint32_t seed) {
  Tensor t(DType::kFloat, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// y = Clip(Conv(x, Transpose(Wt)) , 0, 6) -> Identity -> Relu(Conv(...))
GraphSpec conv_graph() {
  GraphSpec g;
  g.nodes.push_back({"Transpose", {"wt"}, {"w"}, {attr_ints("perm", {1, 0, 2, 3})}, "wt_transpose"});
  g.nodes.push_back({"Conv", {"x", "w", "b"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv1"});
  g.nodes.push_back({"Clip", {"c1", "lo", "hi"}, {"a1"}, {}, "clip"});
  g.nodes.push_back({"Identity", {"a1"}, {"i1"}, {}, "ident"});
  g.nodes.push_back({"Conv", {"i1", "w2"}, {"c2"}, {}, "conv2"});
  g.nodes.push_back({"Relu", {"c2"}, {"y"}, {}, "relu"});
  g.inputs.push_back({"x", DType::kFloat, {1, 3, 8, 8}});
  g.outputs.push_back({"y", DType::kFloat, {1, 5, 8, 8}});
  g.initializers.emplace_back("wt", random_tensor(Shape{3, 4, 3, 3}, 1));
  g.initializers.emplace_back("b", random_tensor(Shape{4}, 2));
  g.initializers.emplace_back("lo", Tensor::scalar<float>(0.0f));
  g.initializers.emplace_back("hi", Tensor::scalar<float>(0.5f));
  g.initializers.emplace_back("w2", random_tensor(Shape{5, 4, 1, 1}, 3));
  return g;
}

}  // namespace

TEST(Optimizer, LevelsAgree) {
  const std::string m = encode_model(conv_graph(), 13);
  const Tensor x = random_tensor(Shape{1, 3, 8, 8}, 4);
  std::vector<std::vector<float>> results;
  std::vector<size_t> node_counts;
  for (auto level : {GraphOptimizationLevel::kDisabled, GraphOptimizationLevel::kBasic, GraphOptimizationLevel::kAll}) {
    Session s = Session::builder().with_optimization_level(level).commit_from_memory(m.data(), m.size());
    const Tensor y = s.run({{"x", x}})[0].tensor();
    results.emplace_back(y.data<float>(), y.data<float>() + y.numel());
    node_counts.push_back(s.placement().nodes.size());
  }
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_NEAR(results[1][i], results[0][i], 1e-5);
    EXPECT_NEAR(results[2][i], results[0][i], 1e-5);
  }
  EXPECT_EQ(node_counts[0], 6u);  // as written
  EXPECT_EQ(node_counts[1], 4u);  // Transpose folded, Identity removed
  EXPECT_EQ(node_counts[2], 2u);  // Clip and Relu fused into the convolutions
  Session s = Session::builder().commit_from_memory(m.data(), m.size());
  for (const auto& p : s.placement().nodes) EXPECT_EQ(p.op_type, "FusedConv");
}
