// The decomposed scaled dot-product attention pattern as torch exports it, for the tests of the
// attention fusion (test_optimizer.cpp) and of the EPs that run onyx::Attention.
#pragma once

#include "model_builder.hpp"

namespace onyx::test {

struct AttentionCase {
  Shape q, k, v, bias;  // k is given as [S, BH, D] and transposed (perm 1,2,0) to KT, as torch exports it
  bool scales = true;
  bool scores_output = false;  // the scores are also a graph output (so they must be kept)
  int64_t softmax_axis = -1;
};

// Q / 8 -> MatMul(Q, Transpose(K)) -> * 0.5 -> + bias -> Softmax -> MatMul(., V)
inline GraphSpec attention_graph(const AttentionCase& c) {
  GraphSpec g;
  std::string q = "q", s = "s";
  if (c.scales) {
    g.nodes.push_back({"Div", {"q", "eight"}, {"q8"}, {}, "q_scale"});
    q = "q8";
  }
  g.nodes.push_back({"Transpose", {"k"}, {"kt"}, {attr_ints("perm", {1, 2, 0})}, "k_t"});
  g.nodes.push_back({"MatMul", {q, "kt"}, {"s"}, {}, "scores"});
  if (c.scales) {
    g.nodes.push_back({"Mul", {"half", "s"}, {"s2"}, {}, "s_scale"});
    s = "s2";
  }
  std::string x = s;
  if (!c.bias.empty()) {
    g.nodes.push_back({"Add", {s, "bias"}, {"x"}, {}, "add_bias"});
    x = "x";
  }
  g.nodes.push_back({"Softmax", {x}, {"p"}, {attr_int("axis", c.softmax_axis)}, "softmax"});
  g.nodes.push_back({"MatMul", {"p", "v"}, {"y"}, {}, "context"});
  g.inputs.push_back({"q", DType::kFloat, std::vector<int64_t>(c.q.begin(), c.q.end())});
  g.inputs.push_back({"k", DType::kFloat, std::vector<int64_t>(c.k.begin(), c.k.end())});
  g.inputs.push_back({"v", DType::kFloat, std::vector<int64_t>(c.v.begin(), c.v.end())});
  if (!c.bias.empty()) g.inputs.push_back({"bias", DType::kFloat, std::vector<int64_t>(c.bias.begin(), c.bias.end())});
  g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  if (c.scores_output) g.outputs.push_back({s, DType::kFloat, {}, {}, true});
  g.initializers.emplace_back("eight", Tensor::scalar<float>(8.0f));
  g.initializers.emplace_back("half", Tensor::scalar<float>(0.5f));
  return g;
}

}  // namespace onyx::test
