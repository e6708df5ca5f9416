// The oneDNN EP (module libonyx_ep_onednn.so) against the CPU EP: every op family on random
// inputs with odd sizes and fixed seeds, region formation, the prepacked-weights path, dynamic
// shapes, strict placement, concurrent runs and decline reasons.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "ep_test_util.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

bool onednn_usable() {
  static const bool usable = ep::OneDNN().availability().usable;
  return usable;
}

#define REQUIRE_ONEDNN()                                                                             \
  do {                                                                                               \
    if (!onednn_usable()) GTEST_SKIP() << "onednn: " << ep::OneDNN().availability().reason; \
  } while (0)

/// Whether /proc/cpuinfo lists CPU flag `f` (false where there is no such file), and oneDNN is
/// not capped below it (ONEDNN_MAX_CPU_ISA).
bool cpu_flag(const std::string& f) {
  if (std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA")) return false;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    std::string w;
    while (words >> w)
      if (w == f) return true;
    return false;
  }
  return false;
}

/// oneDNN's int8 products are exact with VNNI (the EP declines them without).
#define REQUIRE_VNNI()                                                                                                \
  do {                                                                                                                \
    REQUIRE_ONEDNN();                                                                                                 \
    if (!cpu_flag("avx512_vnni") && !cpu_flag("avx_vnni")) GTEST_SKIP() << "no VNNI: the EP declines 8-bit products"; \
  } while (0)

/// ModelProto bytes importing ai.onnx at `opset` and onyx's own domain.
std::string model_bytes(const GraphSpec& g, int64_t opset = 17) {
  ProtoWriter w;
  w.varint(1, 8);
  w.bytes(2, "onyx-tests");
  w.bytes(7, g.encode());
  ProtoWriter os;
  os.bytes(1, "");
  os.varint(2, static_cast<uint64_t>(opset));
  w.bytes(8, os.str());
  ProtoWriter onyx_os;
  onyx_os.bytes(1, "onyx");
  onyx_os.varint(2, 1);
  w.bytes(8, onyx_os.str());
  return w.take();
}

Session onednn_session(const std::string& m, bool strict = true, int threads = 1, int min_nodes = 1) {
  return ep_session(m, ep::OneDNN().with_min_region_nodes(min_nodes).build(), strict, threads);
}



/// Runs `g` on onednn (strict: every node there) and on the CPU EP; compares every output.
void check(const GraphSpec& g, int64_t opset = 17, const Inputs* given = nullptr, double rtol = 1e-4) {
  const std::string m = model_bytes(g, opset);
  Session dnn = onednn_session(m);
  Session cpu = cpu_session(m);
  const Inputs in = given ? *given : random_inputs(g);
  const auto a = dnn.run(in);
  const auto b = cpu.run(in);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(close(a[k], b[k], rtol)) << "output " << k;
  // A second run reuses the compiled entry and its execution context.
  const auto c = dnn.run(in);
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(close(c[k], b[k], rtol)) << "second run, output " << k;
}

NodeSpec node(std::string op, std::vector<std::string> in, std::vector<std::string> out, std::vector<AttrSpec> attrs = {}) {
  return NodeSpec{std::move(op), std::move(in), std::move(out), std::move(attrs), "", ""};
}

/// y = op(x [, w, b]) with weights as initializers.
GraphSpec conv_graph(const std::string& op, Shape x, Shape w, bool bias, std::vector<AttrSpec> attrs, Shape y, uint32_t seed = 7) {
  GraphSpec g;
  std::vector<std::string> in{"x", "w"};
  g.initializers.emplace_back("w", random_tensor(w, seed));
  if (bias) {
    const int64_t m = op == "ConvTranspose" ? w[1] * [&] {
      for (const auto& a : attrs)
        if (a.name == "group") return a.i;
      return int64_t(1);
    }() : w[0];
    g.initializers.emplace_back("b", random_tensor(Shape{m}, seed + 1));
    in.push_back("b");
  }
  g.nodes.push_back(node(op, in, {"y"}, std::move(attrs)));
  g.inputs.push_back({"x", DType::kFloat, x.to_vector()});
  g.outputs.push_back({"y", DType::kFloat, y.to_vector()});
  return g;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Convolutions

TEST(OneDnn, Conv2dPadsStridesGroupsBias) {
  REQUIRE_ONEDNN();
  check(conv_graph("Conv", {2, 6, 11, 9}, {5 * 3, 2, 3, 3}, true,
                   {attr_int("group", 3), attr_ints("pads", {1, 0, 2, 1}), attr_ints("strides", {2, 1})}, {2, 15, 6, 9}));
}

TEST(OneDnn, Conv2dDilationsNoBias) {
  REQUIRE_ONEDNN();
  check(conv_graph("Conv", {1, 3, 13, 10}, {7, 3, 3, 2}, false, {attr_ints("dilations", {2, 3}), attr_ints("pads", {2, 1, 2, 1})},
                   {1, 7, 13, 9}));
}

TEST(OneDnn, Conv2dAutoPad) {
  REQUIRE_ONEDNN();
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(mode);
    const bool valid = std::string(mode) == "VALID";
    check(conv_graph("Conv", {1, 4, 9, 8}, {5, 4, 4, 3}, true, {attr_string("auto_pad", mode), attr_ints("strides", {2, 2})},
                     valid ? Shape{1, 5, 3, 3} : Shape{1, 5, 5, 4}));
  }
}

TEST(OneDnn, Conv2dAutoPadWithDilation) {
  REQUIRE_ONEDNN();
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    SCOPED_TRACE(mode);
    check(conv_graph("Conv", {1, 3, 10, 9}, {4, 3, 3, 2}, true, {attr_string("auto_pad", mode), attr_ints("dilations", {2, 3})},
                     {1, 4, 10, 9}));
    check(conv_graph("Conv", {1, 3, 11, 8}, {4, 3, 4, 3}, false,
                     {attr_string("auto_pad", mode), attr_ints("dilations", {2, 2}), attr_ints("strides", {2, 3})}, {1, 4, 6, 3}));
  }
}

TEST(OneDnn, Conv1dAnd3d) {
  REQUIRE_ONEDNN();
  check(conv_graph("Conv", {2, 3, 17}, {4, 3, 5}, true, {attr_ints("pads", {2, 1}), attr_ints("strides", {2})}, {2, 4, 8}));
  check(conv_graph("Conv", {1, 2, 5, 7, 6}, {3, 2, 3, 3, 3}, true, {attr_ints("pads", {1, 1, 1, 1, 1, 1})}, {1, 3, 5, 7, 6}));
}

TEST(OneDnn, DepthwiseConv) {
  REQUIRE_ONEDNN();
  check(conv_graph("Conv", {1, 8, 15, 13}, {8, 1, 3, 3}, true, {attr_int("group", 8), attr_ints("pads", {1, 1, 1, 1})},
                   {1, 8, 15, 13}));
}

TEST(OneDnn, ConvWithActivationsFused) {
  REQUIRE_ONEDNN();
  struct Act {
    std::string op;
    std::vector<AttrSpec> attrs;
  };
  for (const Act& act : {Act{"Relu", {}}, Act{"LeakyRelu", {attr_float("alpha", 0.2f)}}, Act{"Clip", {}}, Act{"Sigmoid", {}}}) {
    SCOPED_TRACE(act.op);
    GraphSpec g = conv_graph("Conv", {1, 5, 9, 7}, {6, 5, 3, 3}, true, {attr_ints("pads", {1, 1, 1, 1})}, {1, 6, 9, 7});
    g.nodes[0].outputs = {"c"};
    std::vector<std::string> in{"c"};
    if (act.op == "Clip") {
      g.initializers.emplace_back("lo", Tensor::from_vector<float>(Shape{}, {-0.3f}));
      g.initializers.emplace_back("hi", Tensor::from_vector<float>(Shape{}, {0.4f}));
      in = {"c", "lo", "hi"};
    }
    g.nodes.push_back(node(act.op, in, {"y"}, act.attrs));
    check(g);
    // Fused or not, the Conv and its activation form one region.
    const std::string m = model_bytes(g);
    const Placement p = onednn_session(m).placement();
    ASSERT_EQ(p.nodes.size(), 2u);
    EXPECT_EQ(p.nodes[0].region, p.nodes[1].region);
  }
}

TEST(OneDnn, ConvResidualAddRelu) {
  REQUIRE_ONEDNN();
  // y = Relu(Conv2(Relu(Conv1(x))) + Relu(Conv1(x))): the Add rides on Conv2 as a sum post-op.
  GraphSpec g;
  g.initializers.emplace_back("w1", random_tensor(Shape{8, 3, 3, 3}, 11));
  g.initializers.emplace_back("b1", random_tensor(Shape{8}, 12));
  g.initializers.emplace_back("w2", random_tensor(Shape{8, 8, 3, 3}, 13));
  g.initializers.emplace_back("b2", random_tensor(Shape{8}, 14));
  g.nodes.push_back(node("Conv", {"x", "w1", "b1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1})}));
  g.nodes.push_back(node("Relu", {"c1"}, {"r1"}));
  g.nodes.push_back(node("Conv", {"r1", "w2", "b2"}, {"c2"}, {attr_ints("pads", {1, 1, 1, 1})}));
  g.nodes.push_back(node("Add", {"c2", "r1"}, {"s"}));
  g.nodes.push_back(node("Relu", {"s"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 11, 9}});
  g.outputs.push_back({"y", DType::kFloat, {2, 8, 11, 9}});
  check(g);
}

TEST(OneDnn, FusedConvOnyxDomain) {
  REQUIRE_ONEDNN();
  GraphSpec g = conv_graph("FusedConv", {1, 4, 7, 9}, {6, 4, 3, 3}, true,
                           {attr_string("activation", "Relu"), attr_ints("pads", {1, 1, 1, 1})}, {1, 6, 7, 9});
  g.nodes[0].domain = "onyx";
  const std::string m = model_bytes(g);
  const Inputs in = random_inputs(g);
  // The CPU EP runs the same fused op.
  EXPECT_TRUE(close(onednn_session(m).run(in)[0], cpu_session(m).run(in)[0]));
  // (activation_params is a float list the test builder cannot write; Clip is covered by the
  // Conv + Clip fusion in ConvWithActivationsFused.)
}

TEST(OneDnn, ConvTranspose) {
  REQUIRE_ONEDNN();
  check(conv_graph("ConvTranspose", {1, 4, 5, 6}, {4, 3, 3, 3}, true, {attr_ints("strides", {2, 2})}, {1, 3, 11, 13}));
  check(conv_graph("ConvTranspose", {2, 6, 5, 4}, {6, 2, 3, 2}, true,
                   {attr_int("group", 3), attr_ints("strides", {2, 3}), attr_ints("pads", {1, 0, 1, 1}),
                    attr_ints("output_padding", {1, 2})},
                   {2, 6, 8, 10}));
  check(conv_graph("ConvTranspose", {1, 3, 7}, {3, 5, 3}, false, {attr_ints("dilations", {2}), attr_ints("strides", {2})},
                   {1, 5, 17}));
}

// ---------------------------------------------------------------------------------------------
// MatMul and Gemm

TEST(OneDnn, MatMulShapes) {
  REQUIRE_ONEDNN();
  struct Case {
    Shape a, b, y;
  };
  for (const Case& c : {Case{{7, 5}, {5, 3}, {7, 3}}, Case{{3, 7, 5}, {3, 5, 9}, {3, 7, 9}}, Case{{2, 1, 7, 5}, {3, 5, 4}, {2, 3, 7, 4}},
                        Case{{5}, {5, 3}, {3}}, Case{{2, 7, 5}, {5}, {2, 7}}, Case{{4, 1, 6}, {6, 11}, {4, 1, 11}}}) {
    SCOPED_TRACE(c.a.to_string() + " x " + c.b.to_string());
    GraphSpec g;
    g.nodes.push_back(node("MatMul", {"a", "b"}, {"y"}));
    g.inputs.push_back({"a", DType::kFloat, c.a.to_vector()});
    g.inputs.push_back({"b", DType::kFloat, c.b.to_vector()});
    g.outputs.push_back({"y", DType::kFloat, c.y.to_vector()});
    check(g);
    // Constant weights (prepacked) with a following bias Add.
    GraphSpec k;
    k.initializers.emplace_back("b", random_tensor(c.b, 5));
    k.initializers.emplace_back("bias", random_tensor(Shape{c.y.back()}, 6));
    k.nodes.push_back(node("MatMul", {"a", "b"}, {"m"}));
    k.nodes.push_back(node("Add", {"m", "bias"}, {"y"}));
    k.inputs.push_back({"a", DType::kFloat, c.a.to_vector()});
    k.outputs.push_back({"y", DType::kFloat, c.y.to_vector()});
    check(k);
  }
}

TEST(OneDnn, GemmAttributes) {
  REQUIRE_ONEDNN();
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const Shape& cshape : {Shape{9}, Shape{7, 1}, Shape{7, 9}, Shape{}}) {
        SCOPED_TRACE(str("transA ", ta, " transB ", tb, " C ", cshape.to_string()));
        for (bool const_c : {true, false}) {
          GraphSpec g;
          g.initializers.emplace_back("b", random_tensor(tb ? Shape{9, 5} : Shape{5, 9}, 3));
          if (const_c) g.initializers.emplace_back("c", random_tensor(cshape, 4));
          g.nodes.push_back(node("Gemm", {"a", "b", "c"}, {"y"},
                                 {attr_int("transA", ta), attr_int("transB", tb), attr_float("alpha", 0.7f), attr_float("beta", 1.3f)}));
          g.inputs.push_back({"a", DType::kFloat, ta ? std::vector<int64_t>{5, 7} : std::vector<int64_t>{7, 5}});
          if (!const_c) g.inputs.push_back({"c", DType::kFloat, cshape.to_vector()});
          g.outputs.push_back({"y", DType::kFloat, {7, 9}});
          check(g);
        }
      }
}

// ---------------------------------------------------------------------------------------------
// Pooling and normalisation

TEST(OneDnn, Pooling) {
  REQUIRE_ONEDNN();
  struct Case {
    std::string op;
    std::vector<AttrSpec> attrs;
    Shape x, y;
  };
  const std::vector<Case> cases = {
      {"MaxPool", {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})}, {1, 3, 11, 9}, {1, 3, 6, 5}},
      {"MaxPool", {attr_ints("kernel_shape", {3, 2}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)}, {2, 3, 10, 9}, {2, 3, 5, 5}},
      {"MaxPool", {attr_ints("kernel_shape", {2, 2}), attr_ints("dilations", {2, 2})}, {1, 2, 9, 7}, {1, 2, 7, 5}},
      {"MaxPool", {attr_ints("kernel_shape", {3}), attr_string("auto_pad", "SAME_UPPER"), attr_ints("strides", {2})}, {1, 4, 13}, {1, 4, 7}},
      {"AveragePool", {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}, {1, 3, 11, 9}, {1, 3, 6, 5}},
      {"AveragePool",
       {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2}), attr_int("count_include_pad", 1)},
       {1, 3, 11, 9},
       {1, 3, 6, 5}},
      {"AveragePool",
       {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 0, 1, 0}), attr_ints("strides", {2, 2}), attr_int("count_include_pad", 1),
        attr_int("ceil_mode", 1)},
       {1, 2, 10, 8},
       {1, 2, 6, 4}},
      {"AveragePool", {attr_ints("kernel_shape", {2, 3, 2}), attr_ints("strides", {1, 2, 1})}, {1, 2, 5, 7, 4}, {1, 2, 4, 3, 3}},
      {"GlobalAveragePool", {}, {2, 5, 7, 9}, {2, 5, 1, 1}},
      {"GlobalMaxPool", {}, {2, 5, 7, 9}, {2, 5, 1, 1}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op + " " + c.x.to_string());
    GraphSpec g;
    g.nodes.push_back(node(c.op, {"x"}, {"y"}, c.attrs));
    g.inputs.push_back({"x", DType::kFloat, c.x.to_vector()});
    g.outputs.push_back({"y", DType::kFloat, c.y.to_vector()});
    check(g, 19);
  }
}

TEST(OneDnn, BatchNormLrn) {
  REQUIRE_ONEDNN();
  GraphSpec g;
  g.initializers.emplace_back("s", random_tensor(Shape{5}, 3));
  g.initializers.emplace_back("b", random_tensor(Shape{5}, 4));
  g.initializers.emplace_back("m", random_tensor(Shape{5}, 5));
  g.initializers.emplace_back("v", random_tensor(Shape{5}, 6, 0.5f, 2.0f));
  g.nodes.push_back(node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, {attr_float("epsilon", 1e-3f)}));
  g.inputs.push_back({"x", DType::kFloat, {2, 5, 7, 3}});
  g.outputs.push_back({"y", DType::kFloat, {2, 5, 7, 3}});
  check(g);
  for (int64_t size : {3, 5}) {
    SCOPED_TRACE(str("LRN size ", size));
    GraphSpec l;
    l.nodes.push_back(node("LRN", {"x"}, {"y"}, {attr_int("size", size), attr_float("alpha", 0.3f), attr_float("beta", 0.6f), attr_float("bias", 1.5f)}));
    l.inputs.push_back({"x", DType::kFloat, {2, 7, 5, 3}});
    l.outputs.push_back({"y", DType::kFloat, {2, 7, 5, 3}});
    check(l);
  }
  // An even size is declined with the reason (the window would be off by one channel).
  GraphSpec e;
  e.nodes.push_back(NodeSpec{"LRN", {"x"}, {"y"}, {attr_int("size", 4)}, "lrn4", ""});
  e.inputs.push_back({"x", DType::kFloat, {1, 6, 2, 2}});
  e.outputs.push_back({"y", DType::kFloat, {1, 6, 2, 2}});
  const Placement p = onednn_session(model_bytes(e), false).placement();
  ASSERT_EQ(p.nodes.size(), 1u);
  EXPECT_EQ(p.nodes[0].ep, "cpu");
  ASSERT_FALSE(p.nodes[0].declined.empty());
  EXPECT_NE(p.nodes[0].declined[0].message.find("even size"), std::string::npos);
}

TEST(OneDnn, SoftmaxFamilies) {
  REQUIRE_ONEDNN();
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (int64_t opset : {11, 13})
      for (int64_t axis : {0, 1, 2, -1}) {
        SCOPED_TRACE(str(op, " opset ", opset, " axis ", axis));
        GraphSpec g;
        g.nodes.push_back(node(op, {"x"}, {"y"}, {attr_int("axis", axis)}));
        g.inputs.push_back({"x", DType::kFloat, {3, 5, 7}});
        g.outputs.push_back({"y", DType::kFloat, {3, 5, 7}});
        check(g, opset);
      }
}

TEST(OneDnn, LayerNormalization) {
  REQUIRE_ONEDNN();
  for (int64_t axis : {-1, 1}) {
    SCOPED_TRACE(str("axis ", axis));
    GraphSpec g;
    const Shape norm = axis == -1 ? Shape{9} : Shape{5, 9};
    g.initializers.emplace_back("s", random_tensor(norm, 3));
    g.initializers.emplace_back("b", random_tensor(norm, 4));
    g.nodes.push_back(node("LayerNormalization", {"x", "s", "b"}, {"y", "mean", "inv"}, {attr_int("axis", axis), attr_float("epsilon", 1e-4f)}));
    g.inputs.push_back({"x", DType::kFloat, {3, 5, 9}});
    g.outputs.push_back({"y", DType::kFloat, {3, 5, 9}});
    g.outputs.push_back({"mean", DType::kFloat, axis == -1 ? std::vector<int64_t>{3, 5, 1} : std::vector<int64_t>{3, 1, 1}});
    g.outputs.push_back({"inv", DType::kFloat, axis == -1 ? std::vector<int64_t>{3, 5, 1} : std::vector<int64_t>{3, 1, 1}});
    check(g);
  }
}

// ---------------------------------------------------------------------------------------------
// Elementwise

TEST(OneDnn, EltwiseActivations) {
  REQUIRE_ONEDNN();
  struct Case {
    std::string op;
    std::vector<AttrSpec> attrs;
    int64_t opset = 17;
    float lo = -3, hi = 3;
  };
  const std::vector<Case> cases = {
      {"Relu", {}},         {"LeakyRelu", {attr_float("alpha", 0.13f)}}, {"Elu", {attr_float("alpha", 0.7f)}},
      {"Tanh", {}},         {"Sigmoid", {}},                             {"Abs", {}},
      {"Sqrt", {}, 17, 0.1f, 4.0f},                                      {"Exp", {}},
      {"Neg", {}},          {"Reciprocal", {}, 17, 0.5f, 3.0f},           {"Round", {}},
      {"HardSigmoid", {attr_float("alpha", 0.3f), attr_float("beta", 0.4f)}},
      {"HardSwish", {}},    {"Softplus", {}},                            {"Selu", {}},
      {"Celu", {attr_float("alpha", 1.3f)}, 17},                          {"Mish", {}, 18},
      {"Gelu", {}, 20},     {"Gelu", {attr_string("approximate", "tanh")}, 20},
      {"Clip", {attr_float("min", -0.5f), attr_float("max", 0.7f)}, 6},
      {"Softsign", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    GraphSpec g;
    g.nodes.push_back(node(c.op, {"x"}, {"y"}, c.attrs));
    g.inputs.push_back({"x", DType::kFloat, {3, 7, 5}});
    g.outputs.push_back({"y", DType::kFloat, {3, 7, 5}});
    Inputs in{{"x", random_tensor(Shape{3, 7, 5}, 9, c.lo, c.hi)}};
    check(g, c.opset, &in);
  }
}

TEST(OneDnn, ClipConstantAndRuntimeBounds) {
  REQUIRE_ONEDNN();
  GraphSpec g;
  g.initializers.emplace_back("lo", Tensor::from_vector<float>(Shape{}, {-0.25f}));
  g.nodes.push_back(node("Clip", {"x", "lo", "hi"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {4, 9}});
  g.inputs.push_back({"hi", DType::kFloat, {}});
  g.outputs.push_back({"y", DType::kFloat, {4, 9}});
  Inputs in{{"x", random_tensor(Shape{4, 9}, 2)}, {"hi", Tensor::from_vector<float>(Shape{}, {0.3f})}};
  check(g, 13, &in);
}

TEST(OneDnn, BinaryBroadcasting) {
  REQUIRE_ONEDNN();
  struct Case {
    Shape a, b, y;
  };
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"})
    for (const Case& c : {Case{{3, 5, 7}, {3, 5, 7}, {3, 5, 7}}, Case{{3, 5, 7}, {7}, {3, 5, 7}}, Case{{3, 1, 7}, {5, 1}, {3, 5, 7}},
                          Case{{1}, {3, 5}, {3, 5}}, Case{{2, 3, 4, 5}, {3, 1, 1}, {2, 3, 4, 5}}, Case{{}, {4, 3}, {4, 3}}}) {
      SCOPED_TRACE(str(op, " ", c.a.to_string(), " ", c.b.to_string()));
      GraphSpec g;
      g.nodes.push_back(node(op, {"a", "b"}, {"y"}));
      g.inputs.push_back({"a", DType::kFloat, c.a.to_vector()});
      g.inputs.push_back({"b", DType::kFloat, c.b.to_vector()});
      g.outputs.push_back({"y", DType::kFloat, c.y.to_vector()});
      Inputs in{{"a", random_tensor(c.a, 1)}, {"b", random_tensor(c.b, 2, 0.5f, 2.0f)}};
      check(g, 17, &in);
    }
  // Variadic Sum / Mean / Max with broadcasting.
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    SCOPED_TRACE(op);
    GraphSpec g;
    g.nodes.push_back(node(op, {"a", "b", "c"}, {"y"}));
    g.inputs.push_back({"a", DType::kFloat, {3, 1}});
    g.inputs.push_back({"b", DType::kFloat, {3, 4}});
    g.inputs.push_back({"c", DType::kFloat, {4}});
    g.outputs.push_back({"y", DType::kFloat, {3, 4}});
    check(g);
  }
}

TEST(OneDnn, PRelu) {
  REQUIRE_ONEDNN();
  GraphSpec g;
  g.initializers.emplace_back("s", random_tensor(Shape{5, 1, 1}, 3));
  g.nodes.push_back(node("PRelu", {"x", "s"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {2, 5, 3, 7}});
  g.outputs.push_back({"y", DType::kFloat, {2, 5, 3, 7}});
  check(g);
}

// ---------------------------------------------------------------------------------------------
// Reductions and data movement

TEST(OneDnn, Reductions) {
  REQUIRE_ONEDNN();
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                         "ReduceLogSum", "ReduceLogSumExp"})
    for (int keep = 0; keep < 2; ++keep)
      for (const std::vector<int64_t>& axes : {std::vector<int64_t>{1}, std::vector<int64_t>{0, -1}, std::vector<int64_t>{}}) {
        SCOPED_TRACE(str(op, " keepdims ", keep, " axes ", axes.size()));
        GraphSpec g;
        std::vector<std::string> in{"x"};
        if (!axes.empty()) {
          g.initializers.emplace_back("axes", Tensor::from_vector<int64_t>(Shape{static_cast<int64_t>(axes.size())}, axes));
          in.push_back("axes");
        }
        g.nodes.push_back(node(op, in, {"y"}, {attr_int("keepdims", keep)}));
        g.inputs.push_back({"x", DType::kFloat, {3, 5, 4}});
        std::vector<int64_t> out{3, 5, 4};
        std::vector<char> red(3, axes.empty());
        for (int64_t a : axes) red[a < 0 ? a + 3 : a] = 1;
        std::vector<int64_t> y;
        for (int k = 0; k < 3; ++k)
          if (!red[k]) y.push_back(out[k]);
          else if (keep) y.push_back(1);
        g.outputs.push_back({"y", DType::kFloat, y});
        Inputs inp{{"x", random_tensor(Shape{3, 5, 4}, 4, 0.5f, 1.5f)}};
        check(g, 18, &inp);
      }
}

TEST(OneDnn, ConcatTransposeReshape) {
  REQUIRE_ONEDNN();
  GraphSpec g;
  g.initializers.emplace_back("shape", Tensor::from_vector<int64_t>(Shape{2}, {7, -1}));
  g.nodes.push_back(node("Concat", {"a", "b"}, {"c"}, {attr_int("axis", 1)}));
  g.nodes.push_back(node("Transpose", {"c"}, {"t"}, {attr_ints("perm", {2, 0, 1})}));
  g.nodes.push_back(node("Reshape", {"t", "shape"}, {"r"}));
  g.nodes.push_back(node("Relu", {"r"}, {"y"}));
  g.inputs.push_back({"a", DType::kFloat, {3, 2, 7}});
  g.inputs.push_back({"b", DType::kFloat, {3, 5, 7}});
  g.outputs.push_back({"y", DType::kFloat, {7, 21}});
  g.outputs.push_back({"t", DType::kFloat, {7, 3, 7}});
  check(g);
}

// ---------------------------------------------------------------------------------------------
// Regions, weights, shapes, placement

namespace {
GraphSpec conv_relu_conv(bool weights_as_inputs, std::vector<std::string> dim_params = {}) {
  GraphSpec g;
  if (!weights_as_inputs) {
    g.initializers.emplace_back("w1", random_tensor(Shape{6, 3, 3, 3}, 21));
    g.initializers.emplace_back("w2", random_tensor(Shape{4, 6, 1, 1}, 22));
  }
  g.initializers.emplace_back("b1", random_tensor(Shape{6}, 23));
  g.nodes.push_back(NodeSpec{"Conv", {"x", "w1", "b1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv1", ""});
  g.nodes.push_back(NodeSpec{"Relu", {"c1"}, {"r1"}, {}, "relu", ""});
  g.nodes.push_back(NodeSpec{"Conv", {"r1", "w2"}, {"y"}, {}, "conv2", ""});
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 9, 7}, dim_params});
  if (weights_as_inputs) {
    g.inputs.push_back({"w1", DType::kFloat, {6, 3, 3, 3}});
    g.inputs.push_back({"w2", DType::kFloat, {4, 6, 1, 1}});
  }
  g.outputs.push_back({"y", DType::kFloat, {2, 4, 9, 7}, dim_params});
  return g;
}
}  // namespace

TEST(OneDnn, ConvReluConvIsOneRegion) {
  REQUIRE_ONEDNN();
  const std::string m = model_bytes(conv_relu_conv(false));
  const Placement p = onednn_session(m).placement();
  ASSERT_EQ(p.nodes.size(), 3u);
  for (const auto& n : p.nodes) {
    EXPECT_EQ(n.ep, "onednn") << n.name;
    EXPECT_GE(n.region, 0) << n.name;
    EXPECT_EQ(n.region, p.nodes.front().region) << n.name;
  }
  EXPECT_NE(p.summary.find("in 1 region"), std::string::npos) << p.summary;
  check(conv_relu_conv(false));
}

TEST(OneDnn, PrepackedWeightsMatchRuntimeWeights) {
  REQUIRE_ONEDNN();
  // Constant weights are reordered once at session creation; weights given as inputs are
  // reordered on every run. Both must match the CPU EP and each other.
  const GraphSpec packed = conv_relu_conv(false);
  const GraphSpec runtime = conv_relu_conv(true);
  Inputs in{{"x", random_tensor(Shape{2, 3, 9, 7}, 1)}};
  const Value a = onednn_session(model_bytes(packed)).run(in)[0];
  Inputs in2 = in;
  in2.emplace_back("w1", random_tensor(Shape{6, 3, 3, 3}, 21));
  in2.emplace_back("w2", random_tensor(Shape{4, 6, 1, 1}, 22));
  const Value b = onednn_session(model_bytes(runtime)).run(in2)[0];
  EXPECT_TRUE(close(a, b));
  EXPECT_TRUE(close(a, cpu_session(model_bytes(packed)).run(in)[0]));
  check(runtime, 17, &in2);
}

TEST(OneDnn, DynamicBatchTwoSizes) {
  REQUIRE_ONEDNN();
  const std::string m = model_bytes(conv_relu_conv(false, {"N", "", "", ""}));
  Session dnn = onednn_session(m);
  Session cpu = cpu_session(m);
  for (int64_t n : {1, 3, 1}) {
    SCOPED_TRACE(str("batch ", n));
    Inputs in{{"x", random_tensor(Shape{n, 3, 9, 7}, static_cast<uint32_t>(n))}};
    const Value a = dnn.run(in)[0];
    EXPECT_EQ(a.tensor().dim(0), n);
    EXPECT_TRUE(close(a, cpu.run(in)[0]));
  }
  EXPECT_EQ(dnn.plan_count(), 2u);
}

TEST(OneDnn, StrictModeOnSupportedAndUnsupportedModels) {
  REQUIRE_ONEDNN();
  // Entirely supported: commits with no CPU fallback.
  EXPECT_NO_THROW(onednn_session(model_bytes(conv_relu_conv(false)), /*strict=*/true));
  // An int64 Add cannot run on oneDNN: strict mode names the node and the reason.
  GraphSpec g;
  g.nodes.push_back(NodeSpec{"Add", {"a", "b"}, {"y"}, {}, "int_add", ""});
  g.inputs.push_back({"a", DType::kInt64, {3}});
  g.inputs.push_back({"b", DType::kInt64, {3}});
  g.outputs.push_back({"y", DType::kInt64, {3}});
  const std::string m = model_bytes(g);
  try {
    onednn_session(m, true);
    ADD_FAILURE() << "strict mode accepted a node oneDNN declines";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("int_add"), std::string::npos) << w;
    EXPECT_NE(w.find("float32 or bfloat16 only"), std::string::npos) << w;
  }
  // With fallback the decline is recorded with its code.
  const Placement p = onednn_session(m, false).placement();
  ASSERT_EQ(p.nodes.size(), 1u);
  EXPECT_EQ(p.nodes[0].ep, "cpu");
  ASSERT_FALSE(p.nodes[0].declined.empty());
  EXPECT_EQ(p.nodes[0].declined[0].ep, "onednn");
  EXPECT_EQ(p.nodes[0].declined[0].code, "UnsupportedType");
}

TEST(OneDnn, DeclineReasons) {
  REQUIRE_ONEDNN();
  // MaxPool with Indices, a Pow with a run-time exponent, a Conv of unknown rank.
  GraphSpec g;
  g.nodes.push_back(NodeSpec{"MaxPool", {"x"}, {"p", "idx"}, {attr_ints("kernel_shape", {2, 2})}, "pool", ""});
  g.nodes.push_back(NodeSpec{"Pow", {"p", "e"}, {"q"}, {}, "pow", ""});
  g.nodes.push_back(NodeSpec{"Conv", {"z", "w"}, {"c"}, {}, "conv", ""});
  g.initializers.emplace_back("w", random_tensor(Shape{2, 2, 1, 1}, 1));
  g.inputs.push_back({"x", DType::kFloat, {1, 2, 4, 4}});
  g.inputs.push_back({"e", DType::kFloat, {}});
  g.inputs.push_back({"z", DType::kFloat, {}, {}, true});
  g.outputs.push_back({"q", DType::kFloat, {1, 2, 3, 3}});
  g.outputs.push_back({"idx", DType::kInt64, {1, 2, 3, 3}});
  g.outputs.push_back({"c", DType::kFloat, {}, {}, true});
  const Placement p = onednn_session(model_bytes(g), false).placement();
  std::map<std::string, std::string> why;
  for (const auto& n : p.nodes)
    for (const auto& d : n.declined)
      if (d.ep == "onednn") why[n.name] = d.code + ": " + d.message;
  EXPECT_EQ(why["pool"], "UnsupportedAttribute: the Indices output is not produced");
  EXPECT_EQ(why["pow"], "UnsupportedAttribute: the exponent is not a constant");
  EXPECT_EQ(why["conv"], "DynamicShape: the rank of X is unknown");
}

TEST(OneDnn, RunTimeReduceAxesKeyTheCompiledEntry) {
  REQUIRE_ONEDNN();
  GraphSpec g;
  g.nodes.push_back(node("ReduceSum", {"x", "axes"}, {"r"}, {attr_int("keepdims", 1)}));
  g.nodes.push_back(node("Relu", {"r"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {3, 4, 5}});
  g.inputs.push_back({"axes", DType::kInt64, {1}});
  g.outputs.push_back({"y", DType::kFloat, {-1, -1, -1}});
  const std::string m = model_bytes(g);
  Session dnn = onednn_session(m);
  Session cpu = cpu_session(m);
  for (int64_t axis : {1, 2, 1, 0}) {
    SCOPED_TRACE(str("axis ", axis));
    Inputs in{{"x", random_tensor(Shape{3, 4, 5}, 3)}, {"axes", Tensor::from_vector<int64_t>(Shape{1}, {axis})}};
    EXPECT_TRUE(close(dnn.run(in)[0], cpu.run(in)[0]));
  }
}

TEST(OneDnn, RegionAfterADataDependentShape) {
  REQUIRE_ONEDNN();
  // Expand's output shape comes from a run-time input: the onednn region behind it runs in a
  // dynamic plan (its buffers allocated just before it runs).
  GraphSpec g;
  g.nodes.push_back(node("Expand", {"x", "shape"}, {"e"}));
  g.nodes.push_back(node("Relu", {"e"}, {"r"}));
  g.nodes.push_back(node("Sigmoid", {"r"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {1, 5}});
  g.inputs.push_back({"shape", DType::kInt64, {2}});
  g.outputs.push_back({"y", DType::kFloat, {-1, -1}});
  const std::string m = model_bytes(g);
  Session dnn = onednn_session(m, false);
  Session cpu = cpu_session(m);
  const Placement p = dnn.placement();
  ASSERT_EQ(p.nodes.size(), 3u);
  EXPECT_EQ(p.nodes[1].ep, "onednn");
  EXPECT_EQ(p.nodes[2].ep, "onednn");
  for (int64_t rows : {3, 7}) {
    Inputs in{{"x", random_tensor(Shape{1, 5}, 4)}, {"shape", Tensor::from_vector<int64_t>(Shape{2}, {rows, 5})}};
    const Value a = dnn.run(in)[0];
    EXPECT_EQ(a.tensor().dim(0), rows);
    EXPECT_TRUE(close(a, cpu.run(in)[0]));
  }
}

TEST(OneDnn, MinRegionNodesOption) {
  REQUIRE_ONEDNN();
  // One Relu alone is not worth a region of at least 2 nodes: it falls back with the reason.
  GraphSpec g;
  g.nodes.push_back(NodeSpec{"Relu", {"x"}, {"y"}, {}, "relu", ""});
  g.inputs.push_back({"x", DType::kFloat, {3}});
  g.outputs.push_back({"y", DType::kFloat, {3}});
  const Placement p = onednn_session(model_bytes(g), false, 1, 2).placement();
  ASSERT_EQ(p.nodes.size(), 1u);
  EXPECT_EQ(p.nodes[0].ep, "cpu");
  ASSERT_FALSE(p.nodes[0].declined.empty());
  EXPECT_EQ(p.nodes[0].declined[0].code, "NotWorthOffloading");
}

TEST(OneDnn, ConcurrentRunsShareTheCompiledRegion) {
  REQUIRE_ONEDNN();
  const std::string m = model_bytes(conv_relu_conv(false, {"N", "", "", ""}));
  Session dnn = onednn_session(m, true, 2);
  Session cpu = cpu_session(m);
  std::vector<Inputs> ins;
  std::vector<Value> want;
  for (int t = 0; t < 4; ++t) {
    ins.push_back({{"x", random_tensor(Shape{1 + t % 2, 3, 9, 7}, 100 + t)}});
    want.push_back(cpu.run(ins.back())[0]);
  }
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      bool good = true;
      for (int r = 0; r < 10; ++r) good &= static_cast<bool>(close(dnn.run(ins[t])[0], want[t]));
      ok[t] = good;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
}

TEST(OneDnn, ResNetLikeBlockInOneRegion) {
  REQUIRE_ONEDNN();
  // Conv-Relu-MaxPool-Conv-Add-Relu-GlobalAveragePool-Flatten-Gemm: one region, matches CPU.
  GraphSpec g;
  g.initializers.emplace_back("w1", random_tensor(Shape{8, 3, 3, 3}, 31));
  g.initializers.emplace_back("w2", random_tensor(Shape{8, 8, 3, 3}, 32));
  g.initializers.emplace_back("fw", random_tensor(Shape{5, 8}, 33));
  g.initializers.emplace_back("fb", random_tensor(Shape{5}, 34));
  g.nodes.push_back(node("Conv", {"x", "w1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}));
  g.nodes.push_back(node("Relu", {"c1"}, {"r1"}));
  g.nodes.push_back(node("MaxPool", {"r1"}, {"p"}, {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}));
  g.nodes.push_back(node("Conv", {"p", "w2"}, {"c2"}, {attr_ints("pads", {1, 1, 1, 1})}));
  g.nodes.push_back(node("Add", {"c2", "p"}, {"s"}));
  g.nodes.push_back(node("Relu", {"s"}, {"r2"}));
  g.nodes.push_back(node("GlobalAveragePool", {"r2"}, {"gap"}));
  g.nodes.push_back(node("Flatten", {"gap"}, {"f"}));
  g.nodes.push_back(node("Gemm", {"f", "fw", "fb"}, {"y"}, {attr_int("transB", 1)}));
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 23, 19}});
  g.outputs.push_back({"y", DType::kFloat, {2, 5}});
  check(g);
  const Placement p = onednn_session(model_bytes(g)).placement();
  EXPECT_NE(p.summary.find("9 nodes in 1 region"), std::string::npos) << p.summary;
}

TEST(OneDnn, ArenaOptionKeepsResultsAndIsValidated) {
  REQUIRE_ONEDNN();
  // With and without the scratch arena, a multi-primitive region computes the same values.
  const std::string m = model_bytes(conv_relu_conv(false, {"N", "", "", ""}));
  const Inputs in = {{"x", random_tensor(Shape{2, 3, 9, 7}, 77)}};
  const Value want = cpu_session(m).run(in)[0];
  for (const char* arena : {"1", "0", "false"}) {
    Session s = Session::builder()
                    .with_no_environment_execution_providers()
                    .with_intra_threads(1)
                    .with_execution_providers({ep::OneDNN().set("arena", arena).build().error_on_failure()})
                    .with_cpu_fallback(false)
                    .commit_from_memory(m.data(), m.size());
    EXPECT_TRUE(close(s.run(in)[0], want)) << "arena=" << arena;
  }
  // A value that is not a bool is refused when the EP registers.
  try {
    Session::builder()
        .with_no_environment_execution_providers()
        .with_execution_providers({ep::OneDNN().set("arena", "sometimes").build().error_on_failure()})
        .commit_from_memory(m.data(), m.size());
    ADD_FAILURE() << "arena=sometimes was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("arena"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// 8-bit ops: the same bytes as the CPU EP (exact requantisation), and the QDQ form reaching them

namespace {

/// A tensor of `dt` (uint8, int8 or int32) with uniform values in [lo, hi] from a fixed seed.
Tensor random_ints(const Shape& s, DType dt, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  const size_t n = static_cast<size_t>(s.numel());
  if (dt == DType::kUInt8) {
    std::vector<uint8_t> v(n);
    for (auto& x : v) x = static_cast<uint8_t>(d(rng));
    return Tensor::from_vector<uint8_t>(s, v);
  }
  if (dt == DType::kInt8) {
    std::vector<int8_t> v(n);
    for (auto& x : v) x = static_cast<int8_t>(d(rng));
    return Tensor::from_vector<int8_t>(s, v);
  }
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return Tensor::from_vector<int32_t>(s, v);
}

Tensor q8_scalar(DType dt, int v) {
  return dt == DType::kUInt8 ? Tensor::from_vector<uint8_t>(Shape{}, {static_cast<uint8_t>(v)})
                             : Tensor::from_vector<int8_t>(Shape{}, {static_cast<int8_t>(v)});
}

Tensor floats(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

/// Runs `m` on onednn (strict) and on the CPU EP; every output must be equal, element for
/// element. Returns the onednn session's placement.
Placement check_exact(const std::string& m, const Inputs& in) {
  Session dnn = onednn_session(m);
  Session cpu = cpu_session(m);
  const auto a = dnn.run(in);
  const auto b = cpu.run(in);
  EXPECT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) EXPECT_TRUE(close(a[k], b[k], 0, 0)) << "output " << k;
  return dnn.placement();
}

struct QConvCase {
  std::string what;
  DType xt, wt, yt;
  Shape x, w;
  int64_t group;
  std::vector<AttrSpec> attrs;
  float x_scale, y_scale;
  std::vector<float> w_scale;  // 1 or one per output channel
  int x_zp, y_zp, w_zp;
  bool bias;
  int w_range = 0;  // > 0: weights within w_zp +- w_range (small sums, for rounding ties in range)
};

/// A QLinearConv node with its parameters as initializers (x the only input).
GraphSpec qlinear_conv_graph(const QConvCase& c, uint32_t seed) {
  GraphSpec g;
  const int64_t M = c.w[0];
  const int wlo = c.w_range ? c.w_zp - c.w_range : c.wt == DType::kUInt8 ? 0 : -128;
  const int whi = c.w_range ? c.w_zp + c.w_range : c.wt == DType::kUInt8 ? 255 : 127;
  g.initializers.emplace_back("xs", floats(Shape{}, {c.x_scale}));
  g.initializers.emplace_back("xz", q8_scalar(c.xt, c.x_zp));
  g.initializers.emplace_back("w", random_ints(c.w, c.wt, seed, wlo, whi));
  g.initializers.emplace_back("ws", floats(Shape{static_cast<int64_t>(c.w_scale.size())}, c.w_scale));
  g.initializers.emplace_back("wz", c.wt == DType::kUInt8
                                        ? Tensor::from_vector<uint8_t>(Shape{1}, {static_cast<uint8_t>(c.w_zp)})
                                        : Tensor::from_vector<int8_t>(Shape{1}, {static_cast<int8_t>(c.w_zp)}));
  g.initializers.emplace_back("ys", floats(Shape{}, {c.y_scale}));
  g.initializers.emplace_back("yz", q8_scalar(c.yt, c.y_zp));
  std::vector<std::string> in{"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"};
  if (c.bias) {
    g.initializers.emplace_back("b", random_ints(Shape{M}, DType::kInt32, seed + 1, -3000, 3000));
    in.push_back("b");
  }
  std::vector<AttrSpec> attrs = c.attrs;
  attrs.push_back(attr_int("group", c.group));
  g.nodes.push_back(NodeSpec{"QLinearConv", in, {"y"}, attrs, "qconv", ""});
  g.inputs.push_back({"x", c.xt, c.x.to_vector()});
  g.outputs.push_back(any_out("y", c.yt));
  return g;
}

Inputs q8_input(const GraphSpec& g, uint32_t seed) {
  const ValueSpec& v = g.inputs[0];
  return {{v.name, random_ints(Shape(v.dims), v.dtype, seed, v.dtype == DType::kUInt8 ? 0 : -128,
                               v.dtype == DType::kUInt8 ? 255 : 127)}};
}

}  // namespace

TEST(OneDnn, QLinearConvMatchesTheCpuEpExactly) {
  REQUIRE_VNNI();
  const auto U = DType::kUInt8, S = DType::kInt8;
  std::vector<float> pc(12);
  for (size_t m = 0; m < pc.size(); ++m) pc[m] = 0.0021f + 0.00037f * static_cast<float>(m);
  const std::vector<AttrSpec> pads{attr_ints("pads", {1, 1, 1, 1})};
  const QConvCase cases[] = {
      {"u8 per tensor, bias",
       U,
       S,
       U,
       {1, 8, 11, 9},
       {12, 8, 3, 3},
       1,
       pads,
       0.0173f,
       0.0891f,
       {0.0042f},
       117,
       131,
       0,
       true},
      {"u8 per channel, stride 2",
       U,
       S,
       U,
       {2, 8, 12, 10},
       {12, 8, 3, 3},
       1,
       {attr_ints("pads", {1, 0, 1, 2}), attr_ints("strides", {2, 2})},
       0.021f,
       0.07f,
       pc,
       128,
       5,
       0,
       true},
      {"s8 to s8, per channel, no bias",
       S,
       S,
       S,
       {1, 8, 7, 7},
       {12, 8, 1, 1},
       1,
       {},
       0.03f,
       0.11f,
       pc,
       -3,
       7,
       0,
       false},
      {"grouped", U, S, U, {1, 12, 9, 9}, {12, 4, 3, 3}, 3, pads, 0.0173f, 0.05f, pc, 100, 90, 0, true},
      {"depthwise", U, S, U, {1, 12, 10, 9}, {12, 1, 3, 3}, 12, pads, 0.02f, 0.03f, pc, 0, 128, 0, true},
      {"1-d", U, S, U, {2, 6, 17}, {12, 6, 5}, 1, {attr_ints("pads", {2, 2})}, 0.02f, 0.09f, {0.004f}, 120, 3, 0, true},
      {"3-d",
       U,
       S,
       U,
       {1, 4, 5, 6, 7},
       {12, 4, 3, 3, 3},
       1,
       {attr_ints("pads", {1, 1, 1, 1, 1, 1})},
       0.02f,
       0.2f,
       pc,
       128,
       7,
       0,
       true},
      // Power-of-two scales: x_scale * w_scale / y_scale = 0.5, so half the sums are rounding ties,
      // and an odd zero point: rounding after adding it would move those by one step.
      {"ties, odd zero point",
       U,
       S,
       U,
       {1, 8, 9, 9},
       {12, 8, 3, 3},
       1,
       pads,
       0.5f,
       0.25f,
       {0.25f},
       128,
       131,
       0,
       true,
       1},
      {"ties, int8 out", S, S, S, {1, 8, 9, 9}, {12, 8, 3, 3}, 1, pads, 0.5f, 0.5f, {0.5f}, 1, -3, 0, false, 1},
      // uint8 weights: zero point 128 folds into int8 weights; 0 with few products runs in float32.
      {"u8 weights, zero point 128",
       U,
       U,
       U,
       {1, 8, 9, 9},
       {12, 8, 3, 3},
       1,
       pads,
       0.02f,
       0.08f,
       {0.003f},
       128,
       128,
       128,
       true},
      {"u8 weights, zero point 0",
       U,
       U,
       U,
       {1, 2, 9, 9},
       {6, 2, 3, 3},
       1,
       pads,
       0.02f,
       0.5f,
       {0.003f},
       128,
       128,
       0,
       true},
  };
  for (const QConvCase& c : cases) {
    SCOPED_TRACE(c.what);
    const GraphSpec g = qlinear_conv_graph(c, 21);
    const Placement p = check_exact(model_bytes(g), q8_input(g, 22));
    ASSERT_EQ(p.nodes.size(), 1u);
    EXPECT_EQ(p.nodes[0].ep, "onednn");
  }
}

TEST(OneDnn, QLinearConvParametersAsGraphInputsKeyTheCompiledEntry) {
  REQUIRE_VNNI();
  // test_qlinearconv's form: every parameter a graph input, so the requantisation is compiled
  // with the values of the first run and again when they change.
  GraphSpec g;
  g.nodes.push_back(
      node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}, {attr_ints("pads", {1, 1, 1, 1})}));
  g.inputs.push_back({"x", DType::kUInt8, {1, 3, 6, 6}});
  for (const char* s : {"xs", "ys"}) g.inputs.push_back({s, DType::kFloat, {}});
  g.inputs.push_back({"ws", DType::kFloat, {1}});
  for (const char* z : {"xz", "yz"}) g.inputs.push_back({z, DType::kUInt8, {}});
  g.inputs.push_back({"w", DType::kUInt8, {4, 3, 3, 3}});
  g.inputs.push_back({"wz", DType::kUInt8, {1}});
  g.outputs.push_back(any_out("y", DType::kUInt8));
  const std::string m = model_bytes(g);
  Session dnn = onednn_session(m);
  Session cpu = cpu_session(m);
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE(str("run ", k));
    const float ys = k == 1 ? 0.05f : 0.02f;
    Inputs in{{"x", random_ints(Shape{1, 3, 6, 6}, DType::kUInt8, 5, 0, 255)},
              {"xs", floats(Shape{}, {0.01f})},
              {"ys", floats(Shape{}, {ys})},
              {"ws", floats(Shape{1}, {0.004f})},
              {"xz", q8_scalar(DType::kUInt8, 120)},
              {"yz", q8_scalar(DType::kUInt8, k == 2 ? 7 : 128)},
              {"w", random_ints(Shape{4, 3, 3, 3}, DType::kUInt8, 6, 0, 255)},
              // 255: w - w_zero_point does not fit int8, so the float32 path runs
              {"wz", Tensor::from_vector<uint8_t>(Shape{1}, {static_cast<uint8_t>(k == 0 ? 128 : 255)})}};
    EXPECT_TRUE(close(dnn.run(in)[0], cpu.run(in)[0], 0, 0));
  }
}

TEST(OneDnn, QLinearMatMulMatchesTheCpuEpExactly) {
  REQUIRE_VNNI();
  struct Case {
    std::string what;
    DType at, bt, yt;
    Shape a, b;
    bool b_const;
    std::vector<float> b_scale;
    std::vector<int> b_zp;
    int b_range = 0;  // > 0: b within b_zp +- b_range, y_scale twice the products' (rounding ties)
  };
  const auto U = DType::kUInt8, S = DType::kInt8;
  std::vector<float> cols(9);
  for (size_t j = 0; j < cols.size(); ++j) cols[j] = 0.003f + 0.0007f * static_cast<float>(j);
  const Case cases[] = {
      {"u8 x s8, per tensor", U, S, U, {13, 20}, {20, 9}, true, {0.004f}, {0}},
      {"u8 x s8, per column", U, S, U, {13, 20}, {20, 9}, true, cols, {0, 0, 0, 0, 0, 0, 0, 0, 0}},
      {"s8 x u8 constant, zero point 3", S, U, S, {13, 20}, {20, 9}, true, {0.004f}, {3}},
      {"u8 x u8 at run time", U, U, U, {13, 20}, {20, 9}, false, {0.004f}, {114}},
      {"u8 x s8 at run time", U, S, U, {13, 20}, {20, 9}, false, {0.004f}, {-2}},
      {"batched", U, S, U, {2, 3, 7, 20}, {3, 20, 9}, false, {0.004f}, {0}},
      {"shared b", U, S, U, {2, 7, 20}, {20, 9}, true, cols, {0, 0, 0, 0, 0, 0, 0, 0, 0}},
      {"ties", U, S, U, {13, 20}, {20, 9}, true, {0.25f}, {0}, 1},
      {"ties at run time", U, U, U, {13, 20}, {20, 9}, false, {0.25f}, {101}, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    GraphSpec g;
    const int64_t nb = static_cast<int64_t>(c.b_scale.size());
    g.initializers.emplace_back("as", floats(Shape{}, {0.011f}));
    g.initializers.emplace_back("az", q8_scalar(c.at, c.at == U ? 130 : 2));
    g.initializers.emplace_back("bs", floats(nb == 1 ? Shape{} : Shape{nb}, c.b_scale));
    if (c.bt == U) {
      std::vector<uint8_t> z(c.b_zp.begin(), c.b_zp.end());
      g.initializers.emplace_back("bz", Tensor::from_vector<uint8_t>(nb == 1 ? Shape{} : Shape{nb}, z));
    } else {
      std::vector<int8_t> z(c.b_zp.begin(), c.b_zp.end());
      g.initializers.emplace_back("bz", Tensor::from_vector<int8_t>(nb == 1 ? Shape{} : Shape{nb}, z));
    }
    // An odd zero point; with b_range, ties: y_scale twice the products' scale.
    g.initializers.emplace_back("ys", floats(Shape{}, {0.011f * c.b_scale[0] * (c.b_range ? 2.0f : 300.0f)}));
    g.initializers.emplace_back("yz", q8_scalar(c.yt, c.yt == U ? 127 : -5));
    const int blo = c.b_range ? c.b_zp[0] - c.b_range : c.bt == U ? 0 : -128;
    const int bhi = c.b_range ? c.b_zp[0] + c.b_range : c.bt == U ? 255 : 127;
    if (c.b_const)
      g.initializers.emplace_back("b", random_ints(c.b, c.bt, 31, blo, bhi));
    else
      g.inputs.push_back({"b", c.bt, c.b.to_vector()});
    g.nodes.push_back(node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}));
    g.inputs.insert(g.inputs.begin(), {"a", c.at, c.a.to_vector()});
    g.outputs.push_back(any_out("y", c.yt));
    Inputs in{{"a", random_ints(c.a, c.at, 32, c.at == U ? 0 : -128, c.at == U ? 255 : 127)}};
    if (!c.b_const) in.emplace_back("b", random_ints(c.b, c.bt, 33, blo, bhi));
    const Placement p = check_exact(model_bytes(g), in);
    ASSERT_EQ(p.nodes.size(), 1u);
    EXPECT_EQ(p.nodes[0].ep, "onednn");
  }
}

TEST(OneDnn, MatMulIntegerMatchesTheCpuEpExactly) {
  REQUIRE_VNNI();
  // b constant (uint8 with a zero point: folded into int8) or at run time; a's zero point a
  // constant, a graph input, or DynamicQuantizeLinear's (read at run time).
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE(str("variant ", variant));
    GraphSpec g;
    const bool dynamic = variant == 3;
    g.initializers.emplace_back("bz",
                                Tensor::from_vector<uint8_t>(Shape{}, {static_cast<uint8_t>(variant == 1 ? 0 : 131)}));
    if (variant == 0) g.initializers.emplace_back("az", q8_scalar(DType::kUInt8, 119));
    if (variant == 1) g.inputs.push_back({"az", DType::kUInt8, {}});
    if (variant != 2)
      g.initializers.emplace_back("b", random_ints(Shape{24, 10}, DType::kUInt8, 51, 0, 255));
    else
      g.inputs.push_back({"b", DType::kUInt8, {24, 10}});
    if (dynamic) {
      g.nodes.push_back(node("DynamicQuantizeLinear", {"x"}, {"a", "as", "az"}));
      g.inputs.insert(g.inputs.begin(), {"x", DType::kFloat, {2, 9, 24}});
    } else {
      g.inputs.insert(g.inputs.begin(), {"a", DType::kUInt8, {2, 9, 24}});
    }
    g.nodes.push_back(node("MatMulInteger", {"a", "b", variant == 2 ? "" : "az", "bz"}, {"y"}));
    g.outputs.push_back({"y", DType::kInt32, {2, 9, 10}});
    Inputs in;
    if (dynamic)
      in.emplace_back("x", random_tensor(Shape{2, 9, 24}, 52, -3.0f, 5.0f));
    else
      in.emplace_back("a", random_ints(Shape{2, 9, 24}, DType::kUInt8, 53, 0, 255));
    if (variant == 1) in.emplace_back("az", q8_scalar(DType::kUInt8, 77));
    if (variant == 2) in.emplace_back("b", random_ints(Shape{24, 10}, DType::kUInt8, 54, 0, 255));
    const std::string m = model_bytes(g, 13);
    Session dnn = onednn_session(m, !dynamic);
    EXPECT_TRUE(close(dnn.run(in)[0], cpu_session(m).run(in)[0], 0, 0));
    bool on_dnn = false;
    for (const auto& n : dnn.placement().nodes) on_dnn |= n.op_type == "MatMulInteger" && n.ep == "onednn";
    EXPECT_TRUE(on_dnn);
  }
}

TEST(OneDnn, QGemmMatchesTheCpuEpExactly) {
  REQUIRE_VNNI();
  // com.microsoft::QGemm as ONNX Runtime's quantizer writes it (QOperator models' classifiers):
  // 8-bit or float Y, per-tensor or per-column B scales, transB, C a scalar or a row, alpha.
  struct Case {
    std::string what;
    DType bt;
    bool trans_b, per_column, quantized, y_scale, c_row;
    float alpha;
  };
  const Case cases[] = {
      {"u8 Y, per column, transB, C row", DType::kInt8, true, true, true, true, true, 1.0f},
      {"u8 Y, per tensor", DType::kInt8, false, false, true, true, false, 1.0f},
      {"float Y", DType::kInt8, true, true, false, false, true, 1.0f},
      {"float Y over y_scale, alpha", DType::kInt8, false, false, false, true, false, 0.5f},
      {"uint8 B with zero point 131", DType::kUInt8, true, false, true, true, true, 1.0f},
  };
  const int64_t M = 6, K = 40, N = 11;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    GraphSpec g;
    std::vector<float> bs(c.per_column ? N : 1);
    for (size_t j = 0; j < bs.size(); ++j) bs[j] = 0.002f + 0.0003f * static_cast<float>(j);
    g.initializers.emplace_back("as", floats(Shape{}, {0.013f}));
    g.initializers.emplace_back("az", q8_scalar(DType::kUInt8, 121));
    g.initializers.emplace_back("b", random_ints(c.trans_b ? Shape{N, K} : Shape{K, N}, c.bt, 61,
                                                 c.bt == DType::kUInt8 ? 0 : -127, c.bt == DType::kUInt8 ? 255 : 127));
    g.initializers.emplace_back("bs", floats(c.per_column ? Shape{N} : Shape{}, bs));
    g.initializers.emplace_back("bz",
                                c.bt == DType::kUInt8 ? q8_scalar(DType::kUInt8, 131) : q8_scalar(DType::kInt8, 0));
    g.initializers.emplace_back("c", random_ints(c.c_row ? Shape{N} : Shape{}, DType::kInt32, 62, -5000, 5000));
    g.initializers.emplace_back("ys", floats(Shape{}, {0.06f}));
    g.initializers.emplace_back("yz", q8_scalar(DType::kUInt8, 129));
    std::vector<std::string> in{"a", "as", "az", "b", "bs", "bz", "c"};
    if (c.y_scale) in.push_back("ys");
    if (c.quantized) in.push_back("yz");
    std::vector<AttrSpec> attrs{attr_int("transB", c.trans_b), attr_float("alpha", c.alpha)};
    g.nodes.push_back(NodeSpec{"QGemm", in, {"y"}, attrs, "qgemm", "com.microsoft"});
    g.inputs.push_back({"a", DType::kUInt8, {M, K}});
    g.outputs.push_back({"y", c.quantized ? DType::kUInt8 : DType::kFloat, {M, N}});
    const std::string m = encode_model(g, 17, 8, {{"com.microsoft", 1}});
    const Placement p = check_exact(m, {{"a", random_ints(Shape{M, K}, DType::kUInt8, 63, 0, 255)}});
    ASSERT_EQ(p.nodes.size(), 1u);
    EXPECT_EQ(p.nodes[0].ep, "onednn");
  }
}

TEST(OneDnn, EightBitDataMovementAndCasts) {
  REQUIRE_ONEDNN();
  // What QDQ graphs leave on 8-bit tensors between the products (MaxPool, Concat, Transpose, the
  // reshapes), and the exact Casts to float32: the CPU EP's bytes.
  for (DType t : {DType::kUInt8, DType::kInt8}) {
    SCOPED_TRACE(dtype_name(t));
    GraphSpec g;
    g.initializers.emplace_back("shape", Tensor::from_vector<int64_t>(Shape{4}, {2, 6, 4, 5}));
    g.nodes.push_back(node("Transpose", {"x"}, {"t"}, {attr_ints("perm", {0, 1, 3, 2})}));
    g.nodes.push_back(node("Concat", {"t", "y"}, {"c"}, {attr_int("axis", 1)}));
    g.nodes.push_back(
        node("MaxPool", {"c"}, {"p"}, {attr_ints("kernel_shape", {3, 2}), attr_ints("pads", {1, 0, 1, 1})}));
    g.nodes.push_back(node("Reshape", {"p", "shape"}, {"r"}));
    g.nodes.push_back(node("Flatten", {"r"}, {"f"}, {attr_int("axis", 2)}));
    g.nodes.push_back(node("Cast", {"f"}, {"out"}, {attr_int("to", static_cast<int64_t>(DType::kFloat))}));
    g.inputs.push_back({"x", t, {2, 3, 5, 4}});
    g.inputs.push_back({"y", t, {2, 3, 4, 5}});
    g.outputs.push_back({"f", t, {2, 6, 20}});
    g.outputs.push_back({"out", DType::kFloat, {2, 6, 20}});
    const int lo = t == DType::kUInt8 ? 0 : -128, hi = t == DType::kUInt8 ? 255 : 127;
    const Placement p = check_exact(model_bytes(g), {{"x", random_ints(Shape{2, 3, 5, 4}, t, 71, lo, hi)},
                                                     {"y", random_ints(Shape{2, 3, 4, 5}, t, 72, lo, hi)}});
    EXPECT_NE(p.summary.find("onednn: 6 nodes in 1 region"), std::string::npos) << p.summary;
  }
  GraphSpec g;
  g.nodes.push_back(node("Cast", {"i"}, {"f"}, {attr_int("to", static_cast<int64_t>(DType::kFloat))}));
  g.inputs.push_back({"i", DType::kInt32, {50}});
  g.outputs.push_back({"f", DType::kFloat, {50}});
  check_exact(model_bytes(g), {{"i", random_ints(Shape{50}, DType::kInt32, 73, -(1 << 30), 1 << 30)}});
}

TEST(OneDnn, QuantizeAndDequantizeMatchTheCpuEpExactly) {
  REQUIRE_ONEDNN();
  // Per tensor and per axis, with values on rounding ties (x = (k + 0.5) * scale) and beyond
  // the 8-bit range (saturation).
  for (bool per_axis : {false, true}) {
    for (DType qt : {DType::kUInt8, DType::kInt8}) {
      SCOPED_TRACE(str(per_axis ? "per axis " : "per tensor ", dtype_name(qt)));
      GraphSpec g;
      const std::vector<float> s = per_axis ? std::vector<float>{0.5f, 0.25f, 0.125f} : std::vector<float>{0.25f};
      const Shape ss = per_axis ? Shape{3} : Shape{};
      const std::vector<int> z = per_axis ? std::vector<int>{3, 0, 7} : std::vector<int>{5};
      g.initializers.emplace_back("s", floats(ss, s));
      if (qt == DType::kUInt8)
        g.initializers.emplace_back("z", Tensor::from_vector<uint8_t>(ss, std::vector<uint8_t>(z.begin(), z.end())));
      else
        g.initializers.emplace_back("z", Tensor::from_vector<int8_t>(ss, std::vector<int8_t>(z.begin(), z.end())));
      g.nodes.push_back(node("QuantizeLinear", {"x", "s", "z"}, {"q"}, {attr_int("axis", 1)}));
      g.nodes.push_back(node("DequantizeLinear", {"q", "s", "z"}, {"y"}, {attr_int("axis", 1)}));
      g.inputs.push_back({"x", DType::kFloat, {2, 3, 5, 7}});
      g.outputs.push_back({"q", qt, {2, 3, 5, 7}});
      g.outputs.push_back({"y", DType::kFloat, {2, 3, 5, 7}});
      std::vector<float> x(2 * 3 * 5 * 7);
      std::mt19937 rng(9);
      for (size_t i = 0; i < x.size(); ++i) {
        const float sc = s[per_axis ? (i / 35) % 3 : 0];
        x[i] = i % 3 == 0 ? (static_cast<float>(static_cast<int>(rng() % 61) - 30) + 0.5f) * sc
                          : std::uniform_real_distribution<float>(-40.0f, 40.0f)(rng);
      }
      const Placement p = check_exact(model_bytes(g, 13), {{"x", floats(Shape{2, 3, 5, 7}, x)}});
      EXPECT_NE(p.summary.find("onednn: 2 nodes in 1 region"), std::string::npos) << p.summary;
    }
  }
}

namespace {

/// A QDQ model as ONNX Runtime's static quantizer writes it: Q(x) -> DQ -> Conv (DQ weights, DQ
/// int32 bias) -> Q -> DQ -> MaxPool -> Q -> DQ.
GraphSpec qdq_conv_pool(bool per_channel) {
  GraphSpec g;
  const int64_t M = 8;
  auto s = [&](const char* n, float v) { g.initializers.emplace_back(n, floats(Shape{}, {v})); };
  s("xs", 0.02f);
  s("cs", 0.05f);
  g.initializers.emplace_back("xz", q8_scalar(DType::kUInt8, 128));
  g.initializers.emplace_back("cz", q8_scalar(DType::kUInt8, 3));
  std::vector<float> ws(per_channel ? M : 1);
  for (size_t m = 0; m < ws.size(); ++m) ws[m] = 0.004f + 0.0005f * static_cast<float>(m);
  g.initializers.emplace_back("wq", random_ints(Shape{M, 3, 3, 3}, DType::kInt8, 41, -127, 127));
  g.initializers.emplace_back("ws", floats(per_channel ? Shape{M} : Shape{}, ws));
  g.initializers.emplace_back("wz", per_channel ? Tensor::from_vector<int8_t>(Shape{M}, std::vector<int8_t>(M, 0))
                                                : Tensor::from_vector<int8_t>(Shape{}, {0}));
  std::vector<float> bs(ws.size());
  for (size_t m = 0; m < ws.size(); ++m) bs[m] = 0.02f * ws[m];
  g.initializers.emplace_back("bq", random_ints(Shape{M}, DType::kInt32, 42, -2000, 2000));
  g.initializers.emplace_back("bs", floats(per_channel ? Shape{M} : Shape{}, bs));
  g.nodes.push_back(node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"}));
  g.nodes.push_back(node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"}));
  g.nodes.push_back(node("DequantizeLinear", {"wq", "ws", "wz"}, {"wd"}, {attr_int("axis", 0)}));
  g.nodes.push_back(node("DequantizeLinear", {"bq", "bs"}, {"bd"}, {attr_int("axis", 0)}));
  g.nodes.push_back(node("Conv", {"xd", "wd", "bd"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}));
  g.nodes.push_back(node("QuantizeLinear", {"c", "cs", "cz"}, {"cq"}));
  g.nodes.push_back(node("DequantizeLinear", {"cq", "cs", "cz"}, {"cd"}));
  g.nodes.push_back(node("MaxPool", {"cd"}, {"p"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}));
  g.nodes.push_back(node("QuantizeLinear", {"p", "cs", "cz"}, {"pq"}));
  g.nodes.push_back(node("DequantizeLinear", {"pq", "cs", "cz"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {1, 3, 12, 10}});
  g.outputs.push_back({"y", DType::kFloat, {1, M, 6, 5}});
  return g;
}

}  // namespace

TEST(OneDnn, QdqModelReachesOneDnnAsQLinearConv) {
  REQUIRE_VNNI();
  // The QDQ fusion gives a group to oneDNN as QLinearConv only because oneDNN takes the Conv,
  // the QuantizeLinear and QLinearConv: the whole model is one region of 8-bit ops, with the
  // CPU EP's results.
  for (bool per_channel : {false, true}) {
    SCOPED_TRACE(per_channel ? "per channel" : "per tensor");
    const std::string m = model_bytes(qdq_conv_pool(per_channel), 13);
    const Inputs in{{"x", random_tensor(Shape{1, 3, 12, 10}, 43, -2.0f, 2.0f)}};
    const Placement p = check_exact(m, in);
    std::vector<std::string> ops;
    for (const auto& n : p.nodes) {
      ops.push_back(n.op_type);
      EXPECT_EQ(n.ep, "onednn") << n.name;
    }
    EXPECT_EQ(ops, (std::vector<std::string>{"QuantizeLinear", "QLinearConv", "MaxPool", "DequantizeLinear"}));
    EXPECT_NE(p.summary.find("onednn: 4 nodes in 1 region"), std::string::npos) << p.summary;
    // Unfused (kBasic), the float path runs on oneDNN too: within one step of the 8-bit ops.
    Session basic = Session::builder()
                        .with_no_environment_execution_providers()
                        .with_intra_threads(1)
                        .with_optimization_level(GraphOptimizationLevel::kBasic)
                        .with_execution_providers({ep::OneDNN().build().error_on_failure()})
                        .with_cpu_fallback(false)
                        .commit_from_memory(m.data(), m.size());
    bool conv = false;
    for (const auto& n : basic.placement().nodes) conv |= n.op_type == "Conv";
    EXPECT_TRUE(conv);
    EXPECT_TRUE(close(basic.run(in)[0], onednn_session(m).run(in)[0], 0, 0.0501));
  }
}

TEST(OneDnn, EightBitDeclineReasons) {
  REQUIRE_ONEDNN();
  GraphSpec g;
  // A scale computed by the graph, a QLinearMatMul scaled per row of a, a Cast to an integer
  // type, float16.
  g.initializers.emplace_back("two", floats(Shape{}, {2.0f}));
  g.initializers.emplace_back("z", q8_scalar(DType::kUInt8, 0));
  g.initializers.emplace_back("as", floats(Shape{4, 1}, {0.1f, 0.2f, 0.3f, 0.4f}));
  g.initializers.emplace_back("one", floats(Shape{}, {1.0f}));
  g.initializers.emplace_back("b", random_ints(Shape{5, 3}, DType::kInt8, 3, -5, 5));
  g.initializers.emplace_back("bz", q8_scalar(DType::kInt8, 0));
  g.nodes.push_back(NodeSpec{"Mul", {"s", "two"}, {"s2"}, {}, "scale", ""});
  g.nodes.push_back(NodeSpec{"QuantizeLinear", {"x", "s2", "z"}, {"xq"}, {}, "computed_scale", ""});
  g.nodes.push_back(
      NodeSpec{"QLinearMatMul", {"a", "as", "z", "b", "one", "bz", "one", "z"}, {"y"}, {}, "per_row", ""});
  g.nodes.push_back(
      NodeSpec{"Cast", {"x"}, {"xi"}, {attr_int("to", static_cast<int64_t>(DType::kUInt8))}, "to_uint8", ""});
  g.nodes.push_back(NodeSpec{"Relu", {"h"}, {"hr"}, {}, "half", ""});
  g.inputs.push_back({"s", DType::kFloat, {}});
  g.inputs.push_back({"x", DType::kFloat, {3}});
  g.inputs.push_back({"a", DType::kUInt8, {4, 5}});
  g.inputs.push_back({"h", DType::kFloat16, {3}});
  g.outputs.push_back(any_out("xq", DType::kUInt8));
  g.outputs.push_back(any_out("y", DType::kUInt8));
  g.outputs.push_back(any_out("xi", DType::kUInt8));
  g.outputs.push_back(any_out("hr", DType::kFloat16));
  // (the CPU EP listed with half_in_float off, so that the float16 Relu stays float16)
  const std::string m = model_bytes(g, 13);
  Session s = Session::builder()
                  .with_no_environment_execution_providers()
                  .with_execution_providers(
                      {ep::OneDNN().build().error_on_failure(), ep::CPU().with_half_in_float(false).build()})
                  .commit_from_memory(m.data(), m.size());
  std::map<std::string, std::string> why;
  for (const auto& n : s.placement().nodes)
    for (const auto& d : n.declined)
      if (d.ep == "onednn") why[n.name] = d.code + ": " + d.message;
  EXPECT_EQ(why["computed_scale"],
            "UnsupportedAttribute: the scale ('s2') is computed by the graph: oneDNN compiles the QuantizeLinear with "
            "its value (a "
            "constant or a graph input)");
  EXPECT_EQ(why["per_row"], "UnsupportedAttribute: a_scale has 4 values (oneDNN takes one per tensor here)");
  EXPECT_EQ(why["to_uint8"],
            "UnsupportedType: Cast float to uint8: oneDNN's conversions to integers round to nearest and saturate, "
            "ONNX's Cast "
            "truncates");
  EXPECT_EQ(why["half"],
            "UnsupportedType: float16 input 0 ('h'): oneDNN 2.6 has no float16 primitives on CPUs (only on GPUs)");
}

// ---------------------------------------------------------------------------------------------
// bfloat16: the float ops on bfloat16 tensors where the CPU has AVX512_BF16

namespace {

Tensor to_bf16(const Tensor& t) {
  std::vector<BFloat16> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.emplace_back(static_cast<float>(t.element_as_double(i)));
  return Tensor::from_vector<BFloat16>(t.shape(), v);
}

/// `g` with every float tensor (inputs, outputs, initializers) bfloat16.
GraphSpec as_bf16(GraphSpec g) {
  for (auto* vs : {&g.inputs, &g.outputs})
    for (ValueSpec& v : *vs)
      if (v.dtype == DType::kFloat) v.dtype = DType::kBFloat16;
  for (auto& [name, t] : g.initializers)
    if (t.dtype() == DType::kFloat) t = to_bf16(t);
  return g;
}

/// max |got - want| / max |want| over the elements.
double rel_max(const Value& got, const Value& want) {
  const Tensor& a = got.tensor();
  const Tensor& b = want.tensor();
  EXPECT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.dtype(), b.dtype());
  double d = 0, m = 0;
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i) {
    d = std::max(d, std::fabs(a.element_as_double(i) - b.element_as_double(i)));
    m = std::max(m, std::fabs(b.element_as_double(i)));
  }
  return m > 0 ? d / m : d;
}

/// Why oneDNN declines bfloat16 here ("" when it takes it): where the CPU has AVX512_BF16 it
/// must take it.
std::string bf16_refusal() {
  GraphSpec g;
  g.nodes.push_back(node("Relu", {"x"}, {"y"}));
  g.inputs.push_back({"x", DType::kBFloat16, {4}});
  g.outputs.push_back({"y", DType::kBFloat16, {4}});
  const std::string m = model_bytes(g, 22);
  Session s = Session::builder()
                  .with_no_environment_execution_providers()
                  .with_execution_providers(
                      {ep::OneDNN().build().error_on_failure(), ep::CPU().with_half_in_float(false).build()})
                  .commit_from_memory(m.data(), m.size());
  const auto& n = s.placement().nodes.at(0);
  const std::string why = n.ep == "onednn" || n.declined.empty() ? "" : n.declined[0].message;
  EXPECT_TRUE(why.empty() || !cpu_flag("avx512_bf16")) << "declined on a CPU with AVX512_BF16: " << why;
  return why;
}

/// `g` in bfloat16 (opset 22) on onednn, strict, against the CPU EP (which computes bfloat16
/// nodes in float32 and rounds where the region ends): within `tol` of the largest value.
void check_bf16(const GraphSpec& f32, double tol = 0.02) {
  const GraphSpec g = as_bf16(f32);
  const std::string m = model_bytes(g, 22);
  Session dnn = onednn_session(m);
  Session cpu = cpu_session(m);
  Inputs in;
  uint32_t seed = 3;
  for (const ValueSpec& v : g.inputs) in.emplace_back(v.name, to_bf16(random_tensor(Shape(v.dims), seed++)));
  // Every node on oneDNN as written: none given a float32 form between Casts.
  EXPECT_EQ(dnn.placement().nodes.size(), g.nodes.size()) << dnn.placement().summary;
  const auto a = dnn.run(in);
  const auto b = cpu.run(in);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_LE(rel_max(a[k], b[k]), tol) << "output " << k;
}

}  // namespace

TEST(OneDnn, BFloat16OpsMatchTheCpuEp) {
  REQUIRE_ONEDNN();
  const std::string refusal = bf16_refusal();
  if (!refusal.empty()) GTEST_SKIP() << "oneDNN declines bfloat16 here: " << refusal;
  {
    SCOPED_TRACE("convolutions");
    check_bf16(conv_graph("Conv", {2, 6, 11, 9}, {15, 2, 3, 3}, true,
                          {attr_int("group", 3), attr_ints("pads", {1, 0, 2, 1}), attr_ints("strides", {2, 1})},
                          {2, 15, 6, 9}));
    check_bf16(conv_graph("Conv", {1, 8, 15, 13}, {8, 1, 3, 3}, true,
                          {attr_int("group", 8), attr_ints("pads", {1, 1, 1, 1})}, {1, 8, 15, 13}));
    check_bf16(
        conv_graph("ConvTranspose", {1, 4, 5, 6}, {4, 3, 3, 3}, true, {attr_ints("strides", {2, 2})}, {1, 3, 11, 13}));
  }
  {
    SCOPED_TRACE("a ResNet-like block");
    GraphSpec g;
    g.initializers.emplace_back("w1", random_tensor(Shape{8, 3, 3, 3}, 31));
    g.initializers.emplace_back("w2", random_tensor(Shape{8, 8, 3, 3}, 32));
    g.initializers.emplace_back("fw", random_tensor(Shape{5, 8}, 33));
    g.initializers.emplace_back("fb", random_tensor(Shape{5}, 34));
    g.initializers.emplace_back("lo", Tensor::from_vector<float>(Shape{}, {0.0f}));
    g.initializers.emplace_back("hi", Tensor::from_vector<float>(Shape{}, {6.0f}));
    g.nodes.push_back(
        node("Conv", {"x", "w1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}));
    g.nodes.push_back(node("Clip", {"c1", "lo", "hi"}, {"r1"}));
    g.nodes.push_back(
        node("MaxPool", {"r1"}, {"p"},
             {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}));
    g.nodes.push_back(node("Conv", {"p", "w2"}, {"c2"}, {attr_ints("pads", {1, 1, 1, 1})}));
    g.nodes.push_back(node("Add", {"c2", "p"}, {"s"}));
    g.nodes.push_back(node("Relu", {"s"}, {"r2"}));
    g.nodes.push_back(
        node("AveragePool", {"r2"}, {"a"},
             {attr_ints("kernel_shape", {2, 2}), attr_ints("pads", {0, 0, 1, 1}), attr_int("count_include_pad", 1)}));
    g.nodes.push_back(node("GlobalAveragePool", {"a"}, {"gap"}));
    g.nodes.push_back(node("Flatten", {"gap"}, {"f"}));
    g.nodes.push_back(node("Gemm", {"f", "fw", "fb"}, {"y"}, {attr_int("transB", 1), attr_float("alpha", 0.5f)}));
    g.inputs.push_back({"x", DType::kFloat, {2, 3, 23, 19}});
    g.outputs.push_back({"y", DType::kFloat, {2, 5}});
    check_bf16(g);
  }
  {
    SCOPED_TRACE("an encoder-like block");
    GraphSpec g;
    g.initializers.emplace_back("w", random_tensor(Shape{16, 16}, 51));
    g.initializers.emplace_back("bias", random_tensor(Shape{16}, 52));
    g.initializers.emplace_back("gamma", random_tensor(Shape{16}, 53, 0.5f, 1.5f));
    g.initializers.emplace_back("beta", random_tensor(Shape{16}, 54));
    g.initializers.emplace_back("axes", Tensor::from_vector<int64_t>(Shape{1}, {-1}));
    g.nodes.push_back(node("MatMul", {"x", "w"}, {"m"}));
    g.nodes.push_back(node("Add", {"m", "bias"}, {"mb"}));
    g.nodes.push_back(node("Gelu", {"mb"}, {"ge"}));
    g.nodes.push_back(node("Transpose", {"ge"}, {"t"}, {attr_ints("perm", {0, 2, 1})}));
    g.nodes.push_back(node("MatMul", {"ge", "t"}, {"scores"}));
    g.nodes.push_back(node("Softmax", {"scores"}, {"sm"}, {attr_int("axis", -1)}));
    g.nodes.push_back(node("MatMul", {"sm", "x"}, {"ctx"}));
    g.nodes.push_back(node("Add", {"ctx", "x"}, {"res"}));
    g.nodes.push_back(node("LayerNormalization", {"res", "gamma", "beta"}, {"ln"}, {attr_int("axis", -1)}));
    g.nodes.push_back(node("Tanh", {"ln"}, {"th"}));
    g.nodes.push_back(node("ReduceMean", {"th", "axes"}, {"y"}, {attr_int("keepdims", 1)}));
    g.nodes.push_back(node("Concat", {"ln", "th"}, {"cat"}, {attr_int("axis", 2)}));
    g.nodes.push_back(node("Sigmoid", {"cat"}, {"z"}));
    g.inputs.push_back({"x", DType::kFloat, {2, 7, 16}});
    g.outputs.push_back({"y", DType::kFloat, {2, 7, 1}});
    g.outputs.push_back({"z", DType::kFloat, {2, 7, 32}});
    check_bf16(g);
  }
  {
    SCOPED_TRACE("batch normalization, LRN, LogSoftmax, PRelu");
    GraphSpec g;
    for (const char* n : {"scale", "shift", "mean"}) g.initializers.emplace_back(n, random_tensor(Shape{4}, 61));
    g.initializers.emplace_back("var", random_tensor(Shape{4}, 62, 0.5f, 2.0f));
    g.initializers.emplace_back("slope", random_tensor(Shape{4, 1, 1}, 63));
    g.nodes.push_back(node("BatchNormalization", {"x", "scale", "shift", "mean", "var"}, {"bn"}));
    g.nodes.push_back(node("PRelu", {"bn", "slope"}, {"pr"}));
    g.nodes.push_back(node("LRN", {"pr"}, {"lrn"}, {attr_int("size", 3)}));
    g.nodes.push_back(node("LogSoftmax", {"lrn"}, {"y"}, {attr_int("axis", 1)}));
    g.inputs.push_back({"x", DType::kFloat, {2, 4, 5, 6}});
    g.outputs.push_back({"y", DType::kFloat, {2, 4, 5, 6}});
    check_bf16(g);
  }
  {
    SCOPED_TRACE("Cast at the edges, as keep_io_types writes them");
    GraphSpec g;
    g.initializers.emplace_back("w", to_bf16(random_tensor(Shape{6, 3, 3, 3}, 71)));
    g.nodes.push_back(node("Cast", {"x"}, {"xb"}, {attr_int("to", static_cast<int64_t>(DType::kBFloat16))}));
    g.nodes.push_back(node("Conv", {"xb", "w"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}));
    g.nodes.push_back(node("Relu", {"c"}, {"r"}));
    g.nodes.push_back(node("Cast", {"r"}, {"y"}, {attr_int("to", static_cast<int64_t>(DType::kFloat))}));
    g.inputs.push_back({"x", DType::kFloat, {1, 3, 8, 8}});
    g.outputs.push_back({"y", DType::kFloat, {1, 6, 8, 8}});
    const std::string m = model_bytes(g, 22);
    const Inputs in{{"x", random_tensor(Shape{1, 3, 8, 8}, 72)}};
    const Value a = onednn_session(m).run(in)[0];
    EXPECT_LE(rel_max(a, cpu_session(m).run(in)[0]), 0.02);
    EXPECT_NE(onednn_session(m).placement().summary.find("onednn: 4 nodes in 1 region"), std::string::npos);
  }
}

TEST(OneDnn, BFloat16StaysBFloat16OnOneDnn) {
  REQUIRE_ONEDNN();
  // The CPU EP's half_in_float converts only the nodes it would run: those oneDNN takes in
  // bfloat16 stay bfloat16 (no Casts inserted); without AVX512_BF16 they are declined, saying why,
  // and then run as float32 forms.
  GraphSpec g;
  g.initializers.emplace_back("w", random_tensor(Shape{6, 3, 3, 3}, 81));
  g.nodes.push_back(NodeSpec{"Conv", {"x", "w"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv", ""});
  g.nodes.push_back(NodeSpec{"Relu", {"c"}, {"y"}, {}, "relu", ""});
  g.inputs.push_back({"x", DType::kFloat, {1, 3, 8, 8}});
  g.outputs.push_back({"y", DType::kFloat, {1, 6, 8, 8}});
  const std::string m = model_bytes(as_bf16(g), 22);
  const std::string refusal = bf16_refusal();
  Session s = Session::builder()
                  .with_no_environment_execution_providers()
                  .with_execution_providers(
                      {ep::OneDNN().build().error_on_failure(), ep::CPU().with_half_in_float(false).build()})
                  .commit_from_memory(m.data(), m.size());
  const Placement p = s.placement();
  ASSERT_EQ(p.nodes.size(), 2u);
  if (refusal.empty()) {
    EXPECT_EQ(p.nodes[0].ep, "onednn");
    Session d = Session::builder()
                    .with_no_environment_execution_providers()
                    .with_execution_providers({ep::OneDNN().build()})
                    .commit_from_memory(m.data(), m.size());
    EXPECT_EQ(d.placement().nodes.size(), 2u) << "Casts were inserted around nodes oneDNN takes in bfloat16";
  } else {
    EXPECT_EQ(p.nodes[0].ep, "cpu");
    ASSERT_FALSE(p.nodes[0].declined.empty());
    EXPECT_NE(p.nodes[0].declined[0].message.find("AVX512_BF16"), std::string::npos) << p.nodes[0].declined[0].message;
  }
}

TEST(OneDnn, DeclinesWhatTheCpuLacks) {
  REQUIRE_ONEDNN();
  // oneDNN reads ONEDNN_MAX_CPU_ISA once, when first used: the check runs in a child process
  // (this test again) started with oneDNN capped at AVX2, where neither VNNI nor AVX512_BF16 is.
  if (!std::getenv("ONYX_TEST_ONEDNN_CAPPED")) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) GTEST_SKIP() << "no /proc/self/exe";
    self[n] = 0;
    // (not sharded: the child must run this very test)
    const std::string cmd =
        str("env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX ONEDNN_MAX_CPU_ISA=AVX2 ONYX_TEST_ONEDNN_CAPPED=1 '", self,
            "' --gtest_filter=OneDnn.DeclinesWhatTheCpuLacks > /dev/null 2>&1");
    EXPECT_EQ(std::system(cmd.c_str()), 0) << "the capped run failed: " << cmd;
    return;
  }
  // A QLinearConv and a bfloat16 Relu: declined, saying why.
  GraphSpec g = qlinear_conv_graph({"",
                                    DType::kUInt8,
                                    DType::kInt8,
                                    DType::kUInt8,
                                    {1, 4, 5, 5},
                                    {4, 4, 1, 1},
                                    1,
                                    {},
                                    0.02f,
                                    0.05f,
                                    {0.004f},
                                    128,
                                    128,
                                    0,
                                    false},
                                   3);
  g.nodes.push_back(NodeSpec{"Relu", {"h"}, {"hr"}, {}, "relu", ""});
  g.inputs.push_back({"h", DType::kBFloat16, {3}});
  g.outputs.push_back({"hr", DType::kBFloat16, {3}});
  const std::string m = model_bytes(g, 22);
  Session s = Session::builder()
                  .with_no_environment_execution_providers()
                  .with_execution_providers(
                      {ep::OneDNN().build().error_on_failure(), ep::CPU().with_half_in_float(false).build()})
                  .commit_from_memory(m.data(), m.size());
  std::map<std::string, std::string> why;
  for (const auto& n : s.placement().nodes)
    for (const auto& d : n.declined)
      if (d.ep == "onednn") why[n.name] = d.code + ": " + d.message;
  // (oneDNN's ISA here is avx2, or lower on an older CPU)
  EXPECT_EQ(why["qconv"].rfind("UnsupportedType: 8-bit products: this CPU has no VNNI (oneDNN's ISA here is ", 0), 0u)
      << why["qconv"];
  EXPECT_NE(why["qconv"].find("): oneDNN would sum u8 x s8 products in 16-bit pairs, which saturate"),
            std::string::npos)
      << why["qconv"];
  EXPECT_EQ(why["relu"].rfind(
                "UnsupportedType: bfloat16 input 0 ('h'): this CPU has no AVX512_BF16 (oneDNN's ISA here is ", 0),
            0u)
      << why["relu"];
  EXPECT_NE(why["relu"].find("): oneDNN would emulate bfloat16, slower than float32"), std::string::npos)
      << why["relu"];
  // A QDQ model is then not fused for oneDNN: its float Conv runs there between QuantizeLinear
  // and DequantizeLinear, within a step of the CPU EP's 8-bit ops.
  const std::string q = model_bytes(qdq_conv_pool(true), 13);
  const Inputs in{{"x", random_tensor(Shape{1, 3, 12, 10}, 43, -2.0f, 2.0f)}};
  Session dnn = onednn_session(q);
  bool conv = false;
  for (const auto& n : dnn.placement().nodes) conv |= n.op_type == "Conv";
  EXPECT_TRUE(conv);
  EXPECT_TRUE(close(dnn.run(in)[0], cpu_session(q).run(in)[0], 0, 0.0501));
}
