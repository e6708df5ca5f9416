// Patterns the optimizer fuses, written out as torch exports them: decomposed scaled dot-product
// attention, and Linear + exact GELU + Linear. For the fusion tests (test_optimizer.cpp) and the
// tests of the EPs that run the fused ops.
#pragma once

#include "ep_test_util.hpp"
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

/// Linear (MatMul by W1 + b1) -> GELU written out (Div sqrt 2, Erf, Add 1, Mul x, Mul 0.5) ->
/// Linear (W2, b2), on x of shape `x` ([.., in]); random constants from `seed`.
inline GraphSpec gelu_mlp_graph(const Shape& x, int64_t hidden, int64_t out, uint32_t seed) {
  GraphSpec g;
  g.nodes.push_back({"MatMul", {"x", "w1"}, {"h"}, {}, "fc1"});
  g.nodes.push_back({"Add", {"b1", "h"}, {"hb"}, {}, "fc1_bias"});
  g.nodes.push_back({"Div", {"hb", "sqrt2"}, {"d"}, {}, "gelu_div"});
  g.nodes.push_back({"Erf", {"d"}, {"e"}, {}, "gelu_erf"});
  g.nodes.push_back({"Add", {"e", "one"}, {"e1"}, {}, "gelu_add"});
  g.nodes.push_back({"Mul", {"hb", "e1"}, {"m"}, {}, "gelu_mul"});
  g.nodes.push_back({"Mul", {"m", "half"}, {"a"}, {}, "gelu_half"});
  g.nodes.push_back({"MatMul", {"a", "w2"}, {"o"}, {}, "fc2"});
  g.nodes.push_back({"Add", {"o", "b2"}, {"y"}, {}, "fc2_bias"});
  g.inputs.push_back({"x", DType::kFloat, std::vector<int64_t>(x.begin(), x.end())});
  std::vector<int64_t> y(x.begin(), x.end());
  y.back() = out;
  g.outputs.push_back({"y", DType::kFloat, y});
  auto rnd = [&](Shape sh, uint32_t k) { return random_tensor(sh, seed + k); };
  g.initializers.emplace_back("w1", rnd(Shape{x[x.size() - 1], hidden}, 1));
  g.initializers.emplace_back("b1", rnd(Shape{hidden}, 2));
  g.initializers.emplace_back("w2", rnd(Shape{hidden, out}, 3));
  g.initializers.emplace_back("b2", rnd(Shape{out}, 4));
  g.initializers.emplace_back("sqrt2", Tensor::scalar<float>(1.4142135f));
  g.initializers.emplace_back("one", Tensor::scalar<float>(1.0f));
  g.initializers.emplace_back("half", Tensor::scalar<float>(0.5f));
  return g;
}

/// Conv or Gemm followed by Relu or Clip (constant bounds), the optimizer's FusedConv / FusedGemm:
/// Conv (pads 1) of x [2,3,9,8] by w [5,3,3,3], with a bias for Relu; Gemm of a [33,70] with a
/// bias row for Relu, and for Clip a general C [33,1] (beta 0.5) and a transposed B.
inline GraphSpec product_activation_graph(const std::string& op, const std::string& act, uint32_t seed) {
  GraphSpec g;
  const bool relu = act == "Relu", conv = op == "Conv";
  auto rnd = [&](Shape sh, uint32_t k) { return random_tensor(sh, seed + k); };
  if (conv) {
    std::vector<std::string> in{"x", "w"};
    if (relu) in.push_back("b");
    g.nodes.push_back({"Conv", in, {"t"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv"});
    g.inputs.push_back({"x", DType::kFloat, {2, 3, 9, 8}});
    g.outputs.push_back({"y", DType::kFloat, {2, 5, 9, 8}});
    g.initializers.emplace_back("w", rnd(Shape{5, 3, 3, 3}, 1));
    g.initializers.emplace_back("b", rnd(Shape{5}, 2));
  } else {
    std::vector<AttrSpec> attrs;
    if (!relu) attrs = {attr_float("beta", 0.5f), attr_int("transB", 1)};
    g.nodes.push_back({"Gemm", {"x", "w", "c"}, {"t"}, attrs, "fc"});
    g.inputs.push_back({"x", DType::kFloat, {33, 70}});
    g.outputs.push_back({"y", DType::kFloat, {33, 20}});
    g.initializers.emplace_back("w", rnd(relu ? Shape{70, 20} : Shape{20, 70}, 1));
    g.initializers.emplace_back("c", rnd(relu ? Shape{20} : Shape{33, 1}, 2));
  }
  g.nodes.push_back({act, relu ? std::vector<std::string>{"t"} : std::vector<std::string>{"t", "lo", "hi"}, {"y"}, {}, "act"});
  g.initializers.emplace_back("lo", Tensor::scalar<float>(-0.2f));
  g.initializers.emplace_back("hi", Tensor::scalar<float>(0.4f));
  return g;
}

}  // namespace onyx::test
