// Graph optimisation: every level gives the same results; passes do what they say.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "fusion_graphs.hpp"
#include "model_builder.hpp"
#include "ops/layout.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

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

/// Model m run on x (input "x") unoptimised and fully optimised: both outputs, the op types the
/// optimised session placed other than Transposes, and how many of those there were.
struct LevelRuns {
  std::vector<float> plain, optimized;
  std::vector<std::string> ops;
  int transposes = 0;
};
/// `nhwc`: the CPU EP's prefer_nhwc option (its default, on, for the optimised session; the
/// unoptimised one has no layout pass either way).
LevelRuns run_both_levels(const std::string& m, const Tensor& x, bool nhwc = true) {
  LevelRuns r;
  for (auto level : {GraphOptimizationLevel::kDisabled, GraphOptimizationLevel::kAll}) {
    Session s = Session::builder()
                    .with_optimization_level(level)
                    .with_execution_providers({ep::CPU().with_prefer_nhwc(nhwc).build()})
                    .commit_from_memory(m.data(), m.size());
    const Tensor y = s.run({{"x", Value(x)}})[0].tensor();
    (level == GraphOptimizationLevel::kAll ? r.optimized : r.plain).assign(y.data<float>(), y.data<float>() + y.numel());
    if (level == GraphOptimizationLevel::kAll)
      for (const auto& p : s.placement().nodes) {
        if (p.op_type == "Transpose")
          ++r.transposes;
        else
          r.ops.push_back(p.op_type);
      }
  }
  return r;
}

}  // namespace

TEST(Optimizer, LevelsAgree) {
  const std::string m = encode_model(conv_graph(), 13);
  const Tensor x = random_tensor(Shape{1, 3, 8, 8}, 4);
  std::vector<std::vector<float>> results;
  std::vector<size_t> node_counts;
  // The CPU EP channels-first, so that the counts are the fusions' alone.
  const auto cpu_nchw = ep::CPU().with_prefer_nhwc(false).build();
  for (auto level : {GraphOptimizationLevel::kDisabled, GraphOptimizationLevel::kBasic, GraphOptimizationLevel::kAll}) {
    Session s = Session::builder().with_optimization_level(level).with_execution_providers({cpu_nchw}).commit_from_memory(m.data(), m.size());
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
  Session s = Session::builder().with_execution_providers({cpu_nchw}).commit_from_memory(m.data(), m.size());
  for (const auto& p : s.placement().nodes) EXPECT_EQ(p.op_type, "FusedConv");
  // By default the CPU EP runs both fused convolutions channels-last, between one Transpose in
  // and one out, with the same result.
  Session d = Session::builder().commit_from_memory(m.data(), m.size());
  std::vector<std::string> ops;
  for (const auto& p : d.placement().nodes) ops.push_back(p.domain.empty() ? p.op_type : p.domain + "::" + p.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"Transpose", "onyx.nhwc::FusedConv", "onyx.nhwc::FusedConv", "Transpose"}));
  const Tensor y = d.run({{"x", x}})[0].tensor();
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(y.data<float>()[i], results[0][static_cast<size_t>(i)], 1e-5);
}

namespace {

/// Runs the case unoptimised and fully optimised; returns the number of onyx::Attention nodes.
size_t check_attention(const AttentionCase& c) {
  const std::string m = encode_model(attention_graph(c), 17);
  std::vector<std::pair<std::string, Tensor>> feeds = {
      {"q", random_tensor(c.q, 11)}, {"k", random_tensor(c.k, 12)}, {"v", random_tensor(c.v, 13)}};
  if (!c.bias.empty()) {
    Tensor b = random_tensor(c.bias, 14);
    b.data<float>()[0] = -std::numeric_limits<float>::infinity();  // a masked key
    feeds.emplace_back("bias", b);
  }
  std::vector<std::vector<float>> results;
  size_t fused = 0;
  for (auto level : {GraphOptimizationLevel::kDisabled, GraphOptimizationLevel::kAll}) {
    Session s = Session::builder().with_optimization_level(level).commit_from_memory(m.data(), m.size());
    std::vector<std::pair<std::string, Value>> in;
    for (const auto& [n, t] : feeds) in.emplace_back(n, Value(t));
    const Tensor y = s.run(in)[0].tensor();
    results.emplace_back(y.data<float>(), y.data<float>() + y.numel());
    if (level == GraphOptimizationLevel::kAll)
      for (const auto& p : s.placement().nodes) fused += p.op_type == "Attention";
  }
  EXPECT_EQ(results[0].size(), results[1].size());
  for (size_t i = 0; i < results[0].size() && i < results[1].size(); ++i) EXPECT_NEAR(results[1][i], results[0][i], 1e-5) << i;
  return fused;
}

}  // namespace

TEST(Optimizer, FusesDecomposedAttention) {
  // BERT-shaped: [B*H, S, D] operands, a key-padding bias broadcast over heads and queries.
  EXPECT_EQ(check_attention({Shape{6, 5, 4}, Shape{7, 6, 4}, Shape{6, 7, 3}, Shape{1, 1, 7}}), 1u);
  // No scalar steps, no bias, a batch of one.
  AttentionCase plain{Shape{1, 5, 4}, Shape{9, 1, 4}, Shape{1, 9, 3}, Shape{}};
  plain.scales = false;
  EXPECT_EQ(check_attention(plain), 1u);
  // 4-D with broadcast batch dims: K/V shared by the batch, a per-query bias.
  EXPECT_EQ(check_attention({Shape{2, 3, 5, 4}, Shape{6, 3, 4}, Shape{1, 3, 6, 2}, Shape{5, 6}}), 1u);
  // Longer key sequences than one scores block holds (rows per block shrink to fit).
  EXPECT_EQ(check_attention({Shape{2, 70, 8}, Shape{300, 2, 8}, Shape{2, 300, 8}, Shape{2, 70, 300}}), 1u);
}

TEST(Optimizer, KeepsAttentionWhoseIntermediatesAreUsed) {
  AttentionCase c{Shape{6, 5, 4}, Shape{7, 6, 4}, Shape{6, 7, 3}, Shape{1, 1, 7}};
  c.scores_output = true;
  EXPECT_EQ(check_attention(c), 0u);
  AttentionCase axis{Shape{6, 5, 4}, Shape{5, 6, 4}, Shape{6, 5, 3}, Shape{}};
  axis.softmax_axis = 1;  // over the queries: not attention
  EXPECT_EQ(check_attention(axis), 0u);
}

TEST(Optimizer, FusesGemmActivations) {
  // Gemm (bias row) + Relu, and Gemm (general C, beta 0.5, transposed B) + Clip: onyx::FusedGemm
  // on the CPU EP gives what the two nodes give.
  for (const char* act : {"Relu", "Clip"}) {
    SCOPED_TRACE(act);
    const std::string m = encode_model(product_activation_graph("Gemm", act, 31), 13);
    const Tensor a = random_tensor(Shape{33, 70}, 33);
    const LevelRuns r = run_both_levels(m, a);
    EXPECT_EQ(r.ops, std::vector<std::string>{"FusedGemm"});
    for (size_t i = 0; i < r.plain.size(); ++i) EXPECT_NEAR(r.optimized[i], r.plain[i], 1e-5) << i;
  }
}

TEST(Optimizer, FusesGeluAndMatMulBias) {
  // torch's Linear on 3-D activations + exact GELU (opset 17 export) + Linear.
  const GraphSpec g = gelu_mlp_graph(Shape{2, 5, 8}, 40, 6, 51);
  const std::string m = encode_model(g, 17);
  Tensor x = random_tensor(Shape{2, 5, 8}, 55);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= 3.0f;  // across GELU's bend
  const LevelRuns r = run_both_levels(m, x);
  EXPECT_EQ(r.ops, (std::vector<std::string>{"FusedMatMul", "FusedMatMul"}));  // GELU in the first one's epilogue
  for (size_t i = 0; i < r.plain.size(); ++i) EXPECT_NEAR(r.optimized[i], r.plain[i], 1e-5) << i;
}

TEST(Optimizer, FusesSiluIntoQuickGelu) {
  // Llama's MLP: h = (g * Sigmoid(g)) * u, g = x W1, u = x W2; and CLIP's x * Sigmoid(1.702 x).
  // Each sigmoid-weighted product becomes com.microsoft::QuickGelu (alpha 1 and 1.702); a product
  // whose other factor is not the Sigmoid's input (the gating Mul by u) stays a Mul.
  for (bool scaled : {false, true}) {
    SCOPED_TRACE(scaled);
    GraphSpec g;
    g.nodes.push_back({"MatMul", {"x", "w1"}, {"g"}, {}, "up_gate"});
    g.nodes.push_back({"MatMul", {"x", "w2"}, {"u"}, {}, "up"});
    if (scaled) {
      g.nodes.push_back({"Mul", {"g", "k"}, {"gk"}, {}, "scale"});
      g.nodes.push_back({"Sigmoid", {"gk"}, {"s"}, {}, "sig"});
    } else {
      g.nodes.push_back({"Sigmoid", {"g"}, {"s"}, {}, "sig"});
    }
    g.nodes.push_back({"Mul", {"s", "g"}, {"a"}, {}, "silu"});
    g.nodes.push_back({"Mul", {"a", "u"}, {"y"}, {}, "gate"});
    g.inputs.push_back({"x", DType::kFloat, {3, 7, 16}});
    g.outputs.push_back({"y", DType::kFloat, {3, 7, 24}});
    g.initializers.emplace_back("w1", random_tensor(Shape{16, 24}, 61));
    g.initializers.emplace_back("w2", random_tensor(Shape{16, 24}, 62));
    g.initializers.emplace_back("k", Tensor::scalar<float>(1.702f));
    const std::string m = encode_model(g, 17);
    Tensor x = random_tensor(Shape{3, 7, 16}, 63);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= 4.0f;
    const LevelRuns r = run_both_levels(m, x);
    EXPECT_EQ(r.ops, (std::vector<std::string>{"MatMul", "MatMul", "QuickGelu", "Mul"}));
    for (size_t i = 0; i < r.plain.size(); ++i) EXPECT_NEAR(r.optimized[i], r.plain[i], 1e-5 * (1 + std::fabs(r.plain[i]))) << i;
  }
  // Sigmoid's output also read elsewhere (a graph output): not fused.
  GraphSpec g;
  g.nodes.push_back({"Sigmoid", {"x"}, {"s"}, {}, "sig"});
  g.nodes.push_back({"Mul", {"x", "s"}, {"y"}, {}, "silu"});
  g.inputs.push_back({"x", DType::kFloat, {4, 9}});
  g.outputs.push_back({"y", DType::kFloat, {4, 9}});
  g.outputs.push_back({"s", DType::kFloat, {4, 9}});
  const LevelRuns r = run_both_levels(encode_model(g, 17), random_tensor(Shape{4, 9}, 64));
  EXPECT_EQ(r.ops, (std::vector<std::string>{"Sigmoid", "Mul"}));
}

TEST(Optimizer, FusesGeluWhoseConstantIsSqrt2InHalfPrecision) {
  // A float16 / bfloat16 model run in float32 (half_in_float) carries sqrt(2) rounded to its type
  // (1.4140625 in float16, 1.4140625 in bfloat16 too): still the exact GELU, fused; an unrelated
  // approximation (1.41) is not.
  const Tensor x = random_tensor(Shape{2, 5, 8}, 57);
  for (float c : {Float16::to_float(Float16::from_float(1.41421356f)), BFloat16::to_float(BFloat16::from_float(1.41421356f)), 1.41f}) {
    SCOPED_TRACE(c);
    GraphSpec g = gelu_mlp_graph(Shape{2, 5, 8}, 40, 6, 51);
    for (auto& [name, t] : g.initializers)
      if (name == "sqrt2") t = Tensor::scalar<float>(c);
    const std::string m = encode_model(g, 17);
    const LevelRuns r = run_both_levels(m, x);
    const bool fused = r.ops == std::vector<std::string>{"FusedMatMul", "FusedMatMul"};
    EXPECT_EQ(fused, c != 1.41f) << ::testing::PrintToString(r.ops);
    for (size_t i = 0; i < r.plain.size(); ++i) EXPECT_NEAR(r.optimized[i], r.plain[i], 1e-3 * (1 + std::fabs(r.plain[i]))) << i;
  }
}

namespace {

/// A residual block: Conv (kernel k, pads k/2, `group`) of x, + a shortcut (x itself, or a 1x1
/// Conv of x written before the main one, as ResNet's downsampling branch), then an optional
/// activation; or a sum that broadcasts ([1, C, 1, 1]), which must not fuse.
struct ResidualCase {
  const char* what;
  Shape x;  // [N, C, spatial...]
  int64_t k = 1, group = 1;
  const char* act = nullptr;     // "Relu", "Clip" or none
  bool conv_shortcut = false;    // the sum is another Conv's output, computed first
  bool broadcast_sum = false;    // Add(conv, [1, C, 1, 1] constant): not a residual
  bool conv_operand_second = false;
};

GraphSpec residual_graph(const ResidualCase& c) {
  GraphSpec g;
  const int64_t C = c.x[1];
  const size_t spatial = c.x.size() - 2;
  Shape w{C, C / c.group};
  for (size_t d = 0; d < spatial; ++d) w.push_back(c.k);
  std::vector<int64_t> pads(2 * spatial, c.k / 2);
  std::string sum = "x";
  if (c.conv_shortcut) {
    Shape ws{C, C};
    for (size_t d = 0; d < spatial; ++d) ws.push_back(1);
    g.nodes.push_back({"Conv", {"x", "ws"}, {"s"}, {}, "shortcut"});
    g.initializers.emplace_back("ws", random_tensor(ws, 71));
    sum = "s";
  }
  if (c.broadcast_sum) {
    Shape bs{1, C};
    for (size_t d = 0; d < spatial; ++d) bs.push_back(1);
    g.initializers.emplace_back("bsum", random_tensor(bs, 72));
    sum = "bsum";
  }
  g.nodes.push_back({"Conv", {"x", "w", "b"}, {"c"}, {attr_ints("pads", pads), attr_int("group", c.group)}, "conv"});
  g.initializers.emplace_back("w", random_tensor(w, 73));
  g.initializers.emplace_back("b", random_tensor(Shape{C}, 74));
  const std::string out = c.act ? "a" : "y";
  g.nodes.push_back({"Add", c.conv_operand_second ? std::vector<std::string>{sum, "c"} : std::vector<std::string>{"c", sum},
                     {out}, {}, "residual"});
  if (c.act && std::string(c.act) == "Relu") g.nodes.push_back({"Relu", {"a"}, {"y"}, {}, "act"});
  if (c.act && std::string(c.act) == "Clip") {
    g.nodes.push_back({"Clip", {"a", "lo", "hi"}, {"y"}, {}, "act"});
    g.initializers.emplace_back("lo", Tensor::scalar<float>(-0.3f));
    g.initializers.emplace_back("hi", Tensor::scalar<float>(0.6f));
  }
  g.inputs.push_back({"x", DType::kFloat, std::vector<int64_t>(c.x.begin(), c.x.end())});
  g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  return g;
}

}  // namespace

TEST(Optimizer, FusesResidualAddIntoTheConvolution) {
  // Every CPU convolution path takes the sum: a 1x1 GEMM (normal and transposed), im2col (3x3,
  // with the sum from a Conv that comes earlier in the graph), depthwise (a pass after it), 1-D.
  const ResidualCase cases[] = {
      {"1x1 on 8x8, Relu", Shape{2, 20, 8, 8}, 1, 1, "Relu"},
      {"1x1 on 7x7 (transposed product), Clip", Shape{1, 64, 7, 7}, 1, 1, "Clip", false, false, true},
      {"3x3, the sum a 1x1 Conv written first, no activation", Shape{1, 6, 9, 8}, 3, 1, nullptr, true},
      {"depthwise 3x3, Relu", Shape{1, 20, 10, 10}, 3, 20, "Relu", false, false, true},
      {"1-D kernel 3, Relu", Shape{2, 5, 17}, 3, 1, "Relu"},
  };
  // Channels-first and channels-last (the CPU EP's default: 2-D convolutions only; the sum comes
  // in through its own Transpose, which cancels against the producer's where it is a conv).
  for (const ResidualCase& c : cases)
    for (bool nhwc : {false, true}) {
      SCOPED_TRACE(str(c.what, nhwc ? ", channels-last" : ", channels-first"));
      const GraphSpec g = residual_graph(c);
      const std::string m = encode_model(g, 13);
      const Tensor x = random_tensor(c.x, 75);
      const LevelRuns r = run_both_levels(m, x, nhwc);
      EXPECT_EQ(std::count(r.ops.begin(), r.ops.end(), "FusedConvAdd"), 1);
      EXPECT_EQ(r.ops.size(), c.conv_shortcut ? 2u : 1u);
      const bool two_d = c.x.size() == 4;
      EXPECT_EQ(r.transposes, nhwc && two_d ? 2 : 0);  // one in (shared by the sum), one out
      ASSERT_EQ(r.plain.size(), r.optimized.size());
      for (size_t i = 0; i < r.plain.size(); ++i) ASSERT_NEAR(r.optimized[i], r.plain[i], 1e-4) << i;
    }
  // A broadcasting Add is not a residual: Conv and Add stay.
  ResidualCase b{"broadcast", Shape{1, 4, 6, 6}, 1, 1, "Relu"};
  b.broadcast_sum = true;
  const std::string m = encode_model(residual_graph(b), 13);
  Session s = Session::builder().commit_from_memory(m.data(), m.size());
  for (const auto& p : s.placement().nodes) EXPECT_NE(p.op_type, "FusedConvAdd");
}

// ---------------------------------------------------------------------------------------------
// Transpose optimizer

namespace {

/// Runs `g` with random inputs unoptimised and at `level`: the outputs must agree; returns the
/// number of Transpose nodes the optimised session kept.
int transposes_after(const GraphSpec& g, GraphOptimizationLevel level = GraphOptimizationLevel::kBasic, int opset = 17) {
  const std::string m = encode_model(g, opset);
  const Inputs in = random_inputs(g, 7);
  Session plain = Session::builder().with_optimization_level(GraphOptimizationLevel::kDisabled).commit_from_memory(m.data(), m.size());
  Session opt = Session::builder().with_optimization_level(level).commit_from_memory(m.data(), m.size());
  const auto want = plain.run(in);
  const auto got = opt.run(in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) EXPECT_TRUE(close(got[i], want[i], 1e-5, 1e-6)) << "output " << i;
  int n = 0;
  for (const auto& p : opt.placement().nodes) n += p.op_type == "Transpose";
  return n;
}

NodeSpec transpose(const std::string& in, const std::string& out, std::vector<int64_t> perm, const std::string& name) {
  return {"Transpose", {in}, {out}, {attr_ints("perm", std::move(perm))}, name};
}

}  // namespace

TEST(TransposeOptimizer, PairAcrossAnElementwiseOpCancels) {
  // Transpose to NHWC, Relu, Transpose back, + x: the Transpose moves past Relu and meets its inverse.
  GraphSpec g;
  g.nodes.push_back(transpose("x", "t", {0, 2, 3, 1}, "to_last"));
  g.nodes.push_back({"Relu", {"t"}, {"r"}, {}, "relu"});
  g.nodes.push_back(transpose("r", "b", {0, 3, 1, 2}, "to_first"));
  g.nodes.push_back({"Add", {"b", "x"}, {"y"}, {}, "add"});
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 4, 5}});
  g.outputs.push_back({"y", DType::kFloat, {2, 3, 4, 5}});
  EXPECT_EQ(transposes_after(g), 0);
  EXPECT_EQ(transposes_after(g, GraphOptimizationLevel::kAll), 0);
}

TEST(TransposeOptimizer, ChainsMergeAndRepeatsAreShared) {
  GraphSpec g;
  g.nodes.push_back(transpose("x", "a", {1, 0, 2}, "t1"));
  g.nodes.push_back(transpose("a", "y", {0, 2, 1}, "t2"));  // one Transpose (1, 2, 0) of x
  g.nodes.push_back(transpose("x", "p", {2, 0, 1}, "t3"));
  g.nodes.push_back(transpose("x", "q", {2, 0, 1}, "t4"));  // a repeat of t3
  g.nodes.push_back({"Sub", {"p", "q"}, {"z"}, {}, "sub"});  // then the Sub runs on x, one Transpose after
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 4}});
  g.outputs.push_back({"y", DType::kFloat, {3, 4, 2}});
  g.outputs.push_back({"z", DType::kFloat, {4, 2, 3}});
  EXPECT_EQ(transposes_after(g), 2);
  // A repeat's readers count as the first one's: Relu may not move the shared Transpose away.
  GraphSpec r;
  r.nodes.push_back(transpose("x", "a", {0, 2, 1}, "t1"));
  r.nodes.push_back(transpose("x", "b", {0, 2, 1}, "t2"));
  r.nodes.push_back({"Relu", {"a"}, {"y1"}, {}, "relu"});
  r.nodes.push_back({"Sigmoid", {"b"}, {"y2"}, {}, "sigmoid"});
  r.inputs.push_back({"x", DType::kFloat, {2, 3, 4}});
  r.outputs.push_back({"y1", DType::kFloat, {2, 4, 3}});
  r.outputs.push_back({"y2", DType::kFloat, {2, 4, 3}});
  EXPECT_EQ(transposes_after(r), 1);
}

TEST(TransposeOptimizer, NeverAddsTransposes) {
  // The transposed value is also a graph output, or has two readers: moving the Transpose past
  // a reader would add one, so nothing moves.
  GraphSpec g;
  g.nodes.push_back(transpose("x", "t", {0, 2, 1}, "t"));
  g.nodes.push_back({"Relu", {"t"}, {"y"}, {}, "relu"});
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 4}});
  g.outputs.push_back({"y", DType::kFloat, {2, 4, 3}});
  g.outputs.push_back({"t", DType::kFloat, {2, 4, 3}});
  EXPECT_EQ(transposes_after(g), 1);
  GraphSpec h;
  h.nodes.push_back(transpose("x", "t", {0, 2, 1}, "t"));
  h.nodes.push_back({"Relu", {"t"}, {"y1"}, {}, "relu"});
  h.nodes.push_back({"Sigmoid", {"t"}, {"y2"}, {}, "sigmoid"});
  h.inputs.push_back({"x", DType::kFloat, {2, 3, 4}});
  h.outputs.push_back({"y1", DType::kFloat, {2, 4, 3}});
  h.outputs.push_back({"y2", DType::kFloat, {2, 4, 3}});
  EXPECT_EQ(transposes_after(h), 1);
  // A broadcast that makes the output bigger than the transposed input: the Transpose stays small.
  GraphSpec b;
  b.nodes.push_back(transpose("x", "t", {0, 2, 3, 1}, "t"));
  b.nodes.push_back({"Add", {"t", "z"}, {"y"}, {}, "add"});
  b.inputs.push_back({"x", DType::kFloat, {1, 1, 4, 5}});
  b.inputs.push_back({"z", DType::kFloat, {1, 4, 5, 3}});
  b.outputs.push_back({"y", DType::kFloat, {1, 4, 5, 3}});
  EXPECT_EQ(transposes_after(b), 1);
}

TEST(TransposeOptimizer, ConstantsAxesAndReductionsFollowTheLayout) {
  // x NCHW -> NHWC -> + c[3] (broadcast over channels) -> * s (scalar) -> Concat(axis 3) with
  // itself -> Softmax(axis -1) -> ReduceMean(axes 1, 2) -> back to NCHW: no Transpose left (the
  // last one's output is the graph output: the ReduceMean makes it directly).
  GraphSpec g;
  g.nodes.push_back(transpose("x", "t", {0, 2, 3, 1}, "to_last"));
  g.nodes.push_back({"Add", {"t", "c"}, {"a"}, {}, "bias"});
  g.nodes.push_back({"Mul", {"s", "a"}, {"m"}, {}, "scale"});
  g.nodes.push_back({"Concat", {"m", "m"}, {"cat"}, {attr_int("axis", 3)}, "cat"});
  g.nodes.push_back({"Softmax", {"cat"}, {"sm"}, {attr_int("axis", -1)}, "softmax"});
  g.nodes.push_back({"ReduceMean", {"sm"}, {"r"}, {attr_ints("axes", {1, 2})}, "mean"});
  g.nodes.push_back(transpose("r", "y", {0, 3, 1, 2}, "to_first"));
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 4, 5}});
  g.outputs.push_back({"y", DType::kFloat, {2, 6, 1, 1}});
  g.initializers.emplace_back("c", random_tensor(Shape{3}, 5));
  g.initializers.emplace_back("s", Tensor::scalar<float>(1.5f));
  EXPECT_EQ(transposes_after(g), 0);
  // ReduceSum-13 takes its axes as an input (a constant: remapped into a new one).
  GraphSpec h;
  h.nodes.push_back(transpose("x", "t", {0, 2, 3, 1}, "to_last"));
  h.nodes.push_back({"ReduceSum", {"t", "axes"}, {"r"}, {}, "sum"});
  h.nodes.push_back(transpose("r", "y", {0, 3, 1, 2}, "to_first"));
  h.inputs.push_back({"x", DType::kFloat, {2, 3, 4, 5}});
  h.outputs.push_back({"y", DType::kFloat, {2, 3, 1, 5}});
  h.initializers.emplace_back("axes", Tensor::from_vector<int64_t>(Shape{1}, {1}));
  EXPECT_EQ(transposes_after(h), 0);
}

TEST(TransposeOptimizer, PermuteTensorIsOnnxTranspose) {
  // OIHW weights [2,3,2,2] to OHWI (what a channels-last convolution kernel reads): element
  // (o, h, w, i) of the result is element (o, i, h, w) of the input.
  std::vector<int32_t> v(24);
  for (int k = 0; k < 24; ++k) v[k] = k;
  const Tensor w = Tensor::from_vector<int32_t>(Shape{2, 3, 2, 2}, v);
  const Tensor p = permute_tensor(w, to_channels_last_perm(4));
  ASSERT_EQ(p.shape(), (Shape{2, 2, 2, 3}));
  for (int o = 0; o < 2; ++o)
    for (int h = 0; h < 2; ++h)
      for (int x = 0; x < 2; ++x)
        for (int i = 0; i < 3; ++i) EXPECT_EQ(p.data<int32_t>()[((o * 2 + h) * 2 + x) * 3 + i], ((o * 3 + i) * 2 + h) * 2 + x);
  EXPECT_EQ(permute_tensor(p, to_channels_first_perm(4)).shape(), w.shape());
  EXPECT_EQ(to_channels_last_perm(5), (std::vector<int64_t>{0, 2, 3, 4, 1}));
  EXPECT_EQ(to_channels_first_perm(5), (std::vector<int64_t>{0, 4, 1, 2, 3}));
  EXPECT_THROW(permute_tensor(w, {0, 1}), Error);
}
