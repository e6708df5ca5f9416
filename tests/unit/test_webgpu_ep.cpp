// The WebGPU EP (module libonyx_ep_webgpu.so, over wgpu-native) against the CPU EP, on whatever
// adapter wgpu-native's Vulkan backend finds here (Mesa's lavapipe in CI): every kernel on random
// inputs with odd sizes and fixed seeds under strict placement, copies where WebGPU and CPU nodes
// alternate, decline reasons, options, two sessions and concurrent runs. Every test skips with the
// reason when the EP is not usable (not built, no wheel, no Vulkan adapter).
#include <gtest/gtest.h>

#include <thread>

#include "ep_test_util.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

bool webgpu_usable() {
  static const bool usable = ep::WebGPU().availability().usable;
  return usable;
}

#define REQUIRE_WEBGPU()                                                                    \
  do {                                                                                      \
    if (!webgpu_usable()) GTEST_SKIP() << "webgpu: " << ep::WebGPU().availability().reason; \
  } while (0)

Session webgpu_session(const std::string& m, bool strict = true, ep::WebGPU spec = ep::WebGPU()) {
  return ep_session(m, spec.build(), strict);
}

NodeSpec node(std::string op, std::vector<std::string> in, std::vector<std::string> out,
              std::vector<AttrSpec> attrs = {}) {
  return NodeSpec{std::move(op), std::move(in), std::move(out), std::move(attrs), "", ""};
}

/// Runs `g` on WebGPU (strict: every node there) and on the CPU EP and compares every output,
/// twice (the second run reuses the planned device buffers and the pooled stream).
void check(const GraphSpec& g, int64_t opset = 17, double rtol = 1e-4, double atol = 1e-5,
           ep::WebGPU spec = ep::WebGPU(), const Inputs* given = nullptr) {
  const std::string m = encode_model(g, opset);
  Session wg = webgpu_session(m, true, spec);
  Session cpu = cpu_session(m);
  const Inputs in = given ? *given : random_inputs(g);
  const auto a = wg.run(in);
  const auto b = cpu.run(in);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(close(a[k], b[k], rtol, atol)) << "output " << k;
  const auto c = wg.run(in);
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(close(c[k], b[k], rtol, atol)) << "second run, output " << k;
}

GraphSpec unary_graph(const std::string& op, Shape x, std::vector<AttrSpec> attrs = {}) {
  GraphSpec g;
  g.nodes.push_back(node(op, {"x"}, {"y"}, std::move(attrs)));
  g.inputs.push_back({"x", DType::kFloat, x.to_vector()});
  g.outputs.push_back({"y", DType::kFloat, x.to_vector()});
  return g;
}

GraphSpec binary_graph(const std::string& op, Shape a, Shape b, Shape y) {
  GraphSpec g;
  g.nodes.push_back(node(op, {"a", "b"}, {"y"}));
  g.inputs.push_back({"a", DType::kFloat, a.to_vector()});
  g.inputs.push_back({"b", DType::kFloat, b.to_vector()});
  g.outputs.push_back({"y", DType::kFloat, y.to_vector()});
  return g;
}

GraphSpec matmul_graph(Shape a, Shape b, Shape y, bool b_constant = false) {
  GraphSpec g;
  g.nodes.push_back(node("MatMul", {"a", "b"}, {"y"}));
  g.inputs.push_back({"a", DType::kFloat, a.to_vector()});
  if (b_constant)
    g.initializers.emplace_back("b", random_tensor(b, 5));
  else
    g.inputs.push_back({"b", DType::kFloat, b.to_vector()});
  g.outputs.push_back({"y", DType::kFloat, y.to_vector()});
  return g;
}

const Placement::NodeInfo* find_node(const Placement& p, const std::string& op) {
  for (const auto& n : p.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Availability and options

TEST(WebGpu, AvailabilityNamesTheAdapter) {
  const ep::Availability a = ep::WebGPU().availability();
  if (!a.built || !a.usable) GTEST_SKIP() << a.reason;
  EXPECT_NE(a.version.find("wgpu-native "), std::string::npos) << a.version;
  EXPECT_NE(a.version.find(" on "), std::string::npos) << a.version;
  bool has_device_id = false, has_cache = false, has_validation = false;
  for (const auto& o : ep::WebGPU().option_schema()) {
    has_device_id |= o.key == "device_id";
    has_cache |= o.key == "storage_buffer_cache_mode";
    has_validation |= o.key == "validation_mode";
  }
  EXPECT_TRUE(has_device_id && has_cache && has_validation);
}

TEST(WebGpu, RegistrationReportsDevice) {
  REQUIRE_WEBGPU();
  Session s = webgpu_session(encode_model(unary_graph("Relu", {2, 3}), 17));
  const auto& r = s.registration().front();
  EXPECT_EQ(r.name, "webgpu");
  EXPECT_EQ(r.outcome, EpRegistration::Outcome::kRegistered);
  EXPECT_EQ(r.device.rfind("webgpu:", 0), 0u) << r.device;
}

TEST(WebGpu, BadOptionsAreErrorsNamingTheKey) {
  REQUIRE_WEBGPU();
  const std::string m = encode_model(unary_graph("Relu", {2, 3}), 17);
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"device_id", "99"}, {"storage_buffer_cache_mode", "sometimes"}, {"validation_mode", "loud"}}) {
    try {
      ep::WebGPU spec;
      spec.set(key, value);
      webgpu_session(m, true, spec);
      ADD_FAILURE() << "expected an error for " << key << "=" << value;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
  // Without error_on_failure the EP is skipped with the reason and the CPU EP runs the model.
  Session s = Session::builder()
                  .with_no_environment_execution_providers()
                  .with_execution_providers({ep::WebGPU().with_device_id(99).build()})
                  .commit_from_memory(m.data(), m.size());
  EXPECT_EQ(s.registration().front().outcome, EpRegistration::Outcome::kSkipped);
  const Placement pl = s.placement();
  ASSERT_NE(find_node(pl, "Relu"), nullptr);
  EXPECT_EQ(find_node(pl, "Relu")->ep, "cpu");
}

TEST(WebGpu, OtherOptionValuesRun) {
  REQUIRE_WEBGPU();
  GraphSpec g = binary_graph("Add", {3, 5, 7}, {5, 1}, {3, 5, 7});
  g.nodes[0].outputs = {"s"};
  g.nodes.push_back(node("Tanh", {"s"}, {"y"}));
  check(g, 17, 1e-4, 1e-5, ep::WebGPU().with_storage_buffer_cache_mode("disabled"));
  check(g, 17, 1e-4, 1e-5, ep::WebGPU().with_validation_mode("full"));
}

// ---------------------------------------------------------------------------------------------
// Placement, copies, declines

TEST(WebGpu, AlternatingWebGpuAndCpuNodesCopyBothWays) {
  REQUIRE_WEBGPU();
  // Relu (webgpu) -> Hardmax (cpu: no kernel) -> Exp (webgpu) -> Hardmax (cpu) -> Tanh (webgpu).
  GraphSpec g;
  g.nodes.push_back(node("Relu", {"x"}, {"a"}));
  g.nodes.push_back(node("Hardmax", {"a"}, {"b"}));
  g.nodes.push_back(node("Exp", {"b"}, {"c"}));
  g.nodes.push_back(node("Hardmax", {"c"}, {"d"}));
  g.nodes.push_back(node("Tanh", {"d"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {3, 7, 5}});
  g.outputs.push_back({"y", DType::kFloat, {3, 7, 5}});
  const std::string m = encode_model(g, 17);
  Session wg = webgpu_session(m, false);
  const Placement p = wg.placement();
  int on_wg = 0, on_cpu = 0;
  for (const auto& n : p.nodes) {
    if (n.op_type == "Copy") continue;
    (n.ep == "webgpu" ? on_wg : on_cpu)++;
    if (n.op_type == "Hardmax") {
      ASSERT_FALSE(n.declined.empty());
      EXPECT_EQ(n.declined[0].code, "UnsupportedOp");
      EXPECT_NE(n.declined[0].message.find("webgpu has no kernel for Hardmax"), std::string::npos);
    }
  }
  EXPECT_EQ(on_wg, 3);
  EXPECT_EQ(on_cpu, 2);
  EXPECT_EQ(p.copies.size(), 6u) << p.summary;
  Session cpu = cpu_session(m);
  const Inputs in = random_inputs(g);
  EXPECT_TRUE(close(wg.run(in)[0], cpu.run(in)[0]));
  EXPECT_TRUE(close(wg.run(in)[0], cpu.run(in)[0]));
}

TEST(WebGpu, ChainCopiesOnlyAtInputsAndOutputs) {
  REQUIRE_WEBGPU();
  // MatMul with a weight (uploaded once, no copy) -> Add bias (a weight) -> Relu -> Softmax.
  GraphSpec g = matmul_graph({5, 13}, {13, 9}, {5, 9}, true);
  g.nodes[0].outputs = {"m"};
  g.initializers.emplace_back("bias", random_tensor(Shape{9}, 6));
  g.nodes.push_back(node("Add", {"m", "bias"}, {"s"}));
  g.nodes.push_back(node("Relu", {"s"}, {"r"}));
  g.nodes.push_back(node("Softmax", {"r"}, {"y"}));
  const std::string m = encode_model(g, 17);
  Session s = webgpu_session(m);
  const Placement p = s.placement();
  ASSERT_EQ(p.copies.size(), 2u) << p.summary;
  EXPECT_EQ(p.copies[0].value, "a");
  EXPECT_EQ(p.copies[1].value, "y");
  for (const auto& n : p.nodes) EXPECT_EQ(n.ep, "webgpu") << n.name;
  check(g);
}

TEST(WebGpu, DeclinesNonFloatWithReason) {
  REQUIRE_WEBGPU();
  GraphSpec g;
  g.nodes.push_back(node("Add", {"a", "b"}, {"y"}));
  g.inputs.push_back({"a", DType::kInt64, {3}});
  g.inputs.push_back({"b", DType::kInt64, {3}});
  g.outputs.push_back({"y", DType::kInt64, {3}});
  Session s = webgpu_session(encode_model(g, 17), false);
  const Placement pl = s.placement();
  const auto* n = find_node(pl, "Add");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->ep, "cpu");
  ASSERT_FALSE(n->declined.empty());
  EXPECT_EQ(n->declined[0].code, "UnsupportedType");
  EXPECT_NE(n->declined[0].message.find("int64"), std::string::npos) << n->declined[0].message;
}

TEST(WebGpu, DeclinesSoftmaxOverAnInnerAxis) {
  REQUIRE_WEBGPU();
  Session s = webgpu_session(encode_model(unary_graph("Softmax", {3, 4, 5}, {attr_int("axis", 1)}), 17), false);
  const Placement pl = s.placement();
  const auto* n = find_node(pl, "Softmax");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->ep, "cpu");
  ASSERT_FALSE(n->declined.empty());
  EXPECT_NE(n->declined[0].message.find("last axis"), std::string::npos) << n->declined[0].message;
}

TEST(WebGpu, StrictModeListsDeclinedNodes) {
  REQUIRE_WEBGPU();
  try {
    webgpu_session(encode_model(unary_graph("Hardmax", {4}), 17), true);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("webgpu has no kernel for Hardmax"), std::string::npos) << e.what();
  }
}

TEST(WebGpu, BadShapesAtRunTimeAreErrors) {
  REQUIRE_WEBGPU();
  // Declared with symbolic dims, fed shapes that do not broadcast.
  GraphSpec g;
  g.nodes.push_back(node("Add", {"a", "b"}, {"y"}));
  g.inputs.push_back({"a", DType::kFloat, {-1}, {"n"}});
  g.inputs.push_back({"b", DType::kFloat, {-1}, {"m"}});
  g.outputs.push_back({"y", DType::kFloat, {-1}, {"k"}});
  Session s = webgpu_session(encode_model(g, 17));
  EXPECT_THROW(s.run({{"a", random_tensor(Shape{3}, 1)}, {"b", random_tensor(Shape{4}, 2)}}), Error);
  // The session still runs good inputs afterwards.
  const Inputs good{{"a", random_tensor(Shape{4}, 1)}, {"b", random_tensor(Shape{4}, 2)}};
  EXPECT_TRUE(close(s.run(good)[0], cpu_session(encode_model(g, 17)).run(good)[0]));
}

// ---------------------------------------------------------------------------------------------
// Kernels against the CPU EP

TEST(WebGpu, UnaryMaps) {
  REQUIRE_WEBGPU();
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Erf", "Floor", "Ceil", "Softplus"}) {
    SCOPED_TRACE(op);
    check(unary_graph(op, {3, 37, 11}));
  }
  check(unary_graph("LeakyRelu", {5, 7}, {attr_float("alpha", 0.3f)}));
  check(unary_graph("HardSigmoid", {5, 7}, {attr_float("alpha", 0.3f), attr_float("beta", 0.4f)}));
  check(unary_graph("Elu", {5, 7}, {attr_float("alpha", 0.7f)}));
  // Sqrt, Log and Reciprocal on positive inputs.
  for (const char* op : {"Sqrt", "Log", "Reciprocal"}) {
    SCOPED_TRACE(op);
    GraphSpec g = unary_graph("Abs", {4, 9, 13});
    g.nodes[0].outputs = {"p"};
    g.initializers.emplace_back("one", Tensor::from_vector<float>(Shape{}, {1.0f}));
    g.nodes.push_back(node("Add", {"p", "one"}, {"q"}));
    g.nodes.push_back(node(op, {"q"}, {"y"}));
    check(g);
  }
}

TEST(WebGpu, ClipWithConstantBounds) {
  REQUIRE_WEBGPU();
  GraphSpec g = unary_graph("Clip", {6, 11});
  g.initializers.emplace_back("lo", Tensor::from_vector<float>(Shape{}, {-0.25f}));
  g.initializers.emplace_back("hi", Tensor::from_vector<float>(Shape{}, {0.5f}));
  g.nodes[0].inputs = {"x", "lo", "hi"};
  check(g, 13);
  GraphSpec only_max = unary_graph("Clip", {6, 11});
  only_max.initializers.emplace_back("hi", Tensor::from_vector<float>(Shape{}, {0.1f}));
  only_max.nodes[0].inputs = {"x", "", "hi"};
  check(only_max, 13);
  check(unary_graph("Clip", {7, 3}, {attr_float("min", -0.5f), attr_float("max", 0.2f)}), 6);
  // A bound computed at run time is declined, not guessed.
  GraphSpec dyn = unary_graph("Clip", {4});
  dyn.inputs.push_back({"lo", DType::kFloat, {}});
  dyn.nodes[0].inputs = {"x", "lo"};
  Session s = webgpu_session(encode_model(dyn, 13), false);
  const Placement pl = s.placement();
  ASSERT_NE(find_node(pl, "Clip"), nullptr);
  EXPECT_EQ(find_node(pl, "Clip")->ep, "cpu");
}

TEST(WebGpu, BinaryBroadcasting) {
  REQUIRE_WEBGPU();
  for (const char* op : {"Add", "Sub", "Mul", "Max", "Min"}) {
    SCOPED_TRACE(op);
    check(binary_graph(op, {3, 1, 7}, {5, 1}, {3, 5, 7}));
    check(binary_graph(op, {2, 3, 4, 5, 6, 7}, {7}, {2, 3, 4, 5, 6, 7}));
    check(binary_graph(op, {}, {9, 13}, {9, 13}));
    check(binary_graph(op, {1037}, {1037}, {1037}));
  }
  // Div by values away from zero: b = |b| + 0.5.
  GraphSpec g = binary_graph("Div", {4, 1, 9}, {3, 1}, {4, 3, 9});
  g.nodes[0].inputs = {"a", "p"};
  g.initializers.emplace_back("half", Tensor::from_vector<float>(Shape{}, {0.5f}));
  g.nodes.insert(g.nodes.begin(), node("Abs", {"b"}, {"ab"}));
  g.nodes.insert(g.nodes.begin() + 1, node("Add", {"ab", "half"}, {"p"}));
  check(g);
  // The same value as both operands.
  GraphSpec sq;
  sq.nodes.push_back(node("Mul", {"x", "x"}, {"y"}));
  sq.inputs.push_back({"x", DType::kFloat, {17, 3}});
  sq.outputs.push_back({"y", DType::kFloat, {17, 3}});
  check(sq);
}

TEST(WebGpu, MatMulShapes) {
  REQUIRE_WEBGPU();
  check(matmul_graph({1, 1}, {1, 1}, {1, 1}));
  check(matmul_graph({17, 33}, {33, 29}, {17, 29}));
  check(matmul_graph({3, 17, 33}, {33, 29}, {3, 17, 29}, true));
  check(matmul_graph({2, 1, 5, 19}, {3, 19, 7}, {2, 3, 5, 7}));
  check(matmul_graph({19}, {4, 19, 6}, {4, 6}));
  check(matmul_graph({2, 5, 19}, {19}, {2, 5}));
  check(matmul_graph({19}, {19}, {}));
  check(matmul_graph({70, 130}, {130, 45}, {70, 45}), 17, 1e-4, 1e-4);
  // Several 64 x 64 tiles each way with a partial last one, K not a multiple of 32.
  check(matmul_graph({2, 131, 75}, {2, 75, 67}, {2, 131, 67}), 17, 1e-4, 1e-4);
  // Few rows (M <= 8): the row kernel, N not a multiple of 4.
  check(matmul_graph({3, 5, 40}, {3, 40, 13}, {3, 5, 13}));
  check(matmul_graph({1, 70}, {70, 131}, {1, 131}, true));
  // B shared by every batch, A's batches stacked into one product: to 8 rows, and past them.
  check(matmul_graph({4, 2, 1, 33}, {33, 21}, {4, 2, 1, 21}, true));
  check(matmul_graph({6, 3, 37}, {37, 70}, {6, 3, 70}, true), 17, 1e-4, 1e-4);
  check(matmul_graph({2, 1, 3, 37}, {1, 37, 70}, {2, 1, 3, 70}), 17, 1e-4, 1e-4);
  // A broadcast over B's batches: not stacked.
  check(matmul_graph({9, 37}, {3, 37, 10}, {3, 9, 10}));
}

TEST(WebGpu, GemmAttributes) {
  REQUIRE_WEBGPU();
  struct Case {
    bool ta, tb;
    std::vector<int64_t> c;
    float alpha, beta;
  };
  for (const Case& k : std::vector<Case>{{false, false, {11}, 1.0f, 1.0f},
                                         {true, false, {7, 11}, 0.5f, 2.0f},
                                         {false, true, {7, 1}, 1.5f, -1.0f},
                                         {true, true, {1, 11}, 1.0f, 0.25f},
                                         {false, false, {}, 2.0f, 1.0f},
                                         {false, true, {0}, 1.0f, 1.0f}}) {
    for (const int64_t M : {7, 70}) {  // the row kernel, the tiled one
      SCOPED_TRACE(std::to_string(k.ta) + std::to_string(k.tb) + " c rank " + std::to_string(k.c.size()) + " M " +
                   std::to_string(M));
      const int64_t N = M == 7 ? 11 : 75, K = M == 7 ? 23 : 41;
      std::vector<int64_t> cd = k.c;
      if (M != 7 && cd.size() == 2) cd = {cd[0] == 7 ? M : 1, cd[1] == 11 ? N : 1};
      if (M != 7 && cd.size() == 1 && cd[0] == 11) cd = {N};
      GraphSpec g;
      std::vector<std::string> in{"a", "b"};
      if (k.c.size() != 1 || k.c[0] != 0) {
        g.initializers.emplace_back("c", random_tensor(Shape(cd), 3));
        in.push_back("c");
      }
      g.nodes.push_back(node("Gemm", in, {"y"},
                             {attr_int("transA", k.ta), attr_int("transB", k.tb), attr_float("alpha", k.alpha),
                              attr_float("beta", k.beta)}));
      g.inputs.push_back({"a", DType::kFloat, k.ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}});
      g.inputs.push_back({"b", DType::kFloat, k.tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}});
      g.outputs.push_back({"y", DType::kFloat, {M, N}});
      check(g, 17, 1e-4, 1e-4);
    }
  }
}

TEST(WebGpu, SoftmaxLastAxis) {
  REQUIRE_WEBGPU();
  check(unary_graph("Softmax", {3, 5, 37}));
  check(unary_graph("Softmax", {4, 129}, {attr_int("axis", 1)}), 11);
  check(unary_graph("LogSoftmax", {6, 33}, {attr_int("axis", -1)}));
  check(unary_graph("Softmax", {1}));
}

GraphSpec conv_graph(Shape x, Shape w, bool bias, std::vector<AttrSpec> attrs, Shape y) {
  GraphSpec g;
  std::vector<std::string> in{"x", "w"};
  g.initializers.emplace_back("w", random_tensor(w, 7));
  if (bias) {
    g.initializers.emplace_back("b", random_tensor(Shape{w[0]}, 8));
    in.push_back("b");
  }
  g.nodes.push_back(node("Conv", in, {"y"}, std::move(attrs)));
  g.inputs.push_back({"x", DType::kFloat, x.to_vector()});
  g.outputs.push_back({"y", DType::kFloat, y.to_vector()});
  return g;
}

TEST(WebGpu, Conv2dAndGlobalPool) {
  REQUIRE_WEBGPU();
  check(conv_graph({2, 6, 11, 9}, {15, 2, 3, 3}, true,
                   {attr_int("group", 3), attr_ints("pads", {1, 0, 2, 1}), attr_ints("strides", {2, 1})},
                   {2, 15, 6, 9}));
  check(conv_graph({1, 3, 13, 10}, {7, 3, 3, 2}, false,
                   {attr_ints("dilations", {2, 3}), attr_ints("pads", {2, 1, 2, 1})}, {1, 7, 13, 9}));
  check(conv_graph({1, 5, 7, 7}, {5, 1, 3, 3}, true, {attr_int("group", 5), attr_ints("pads", {1, 1, 1, 1})},
                   {1, 5, 7, 7}));
  GraphSpec gap = unary_graph("GlobalAveragePool", {2, 5, 7, 3});
  gap.outputs[0].dims = {2, 5, 1, 1};
  check(gap);
  // auto_pad, on the tiled and the depthwise kernels.
  for (const char* pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(pad);
    check(conv_graph({1, 2, 6, 5}, {3, 2, 4, 3}, false, {attr_string("auto_pad", pad), attr_ints("strides", {2, 1})},
                     {1, 3, -1, -1}));
    check(conv_graph({1, 3, 7, 6}, {3, 1, 2, 3}, true, {attr_string("auto_pad", pad), attr_int("group", 3)},
                     {1, 3, -1, -1}));
  }
  // 3-d is declined with the reason.
  GraphSpec three = conv_graph({1, 2, 4, 4, 4}, {3, 2, 3, 3, 3}, false, {}, {1, 3, 2, 2, 2});
  Session s = webgpu_session(encode_model(three, 17), false);
  const Placement pl = s.placement();
  const auto* n = find_node(pl, "Conv");
  ASSERT_NE(n, nullptr);
  ASSERT_FALSE(n->declined.empty());
  EXPECT_NE(n->declined[0].message.find("1-d and 2-d convolutions only"), std::string::npos) << n->declined[0].message;
}

TEST(WebGpu, Conv1d) {
  REQUIRE_WEBGPU();
  check(conv_graph({2, 4, 13}, {6, 4, 3}, true, {attr_ints("pads", {1, 2})}, {2, 6, 14}));
  check(conv_graph({1, 6, 17}, {4, 3, 3}, false,
                   {attr_int("group", 2), attr_ints("strides", {2}), attr_ints("dilations", {3})}, {1, 4, 6}));
  check(
      conv_graph({1, 5, 9}, {5, 1, 4}, true, {attr_int("group", 5), attr_string("auto_pad", "SAME_UPPER")}, {1, 5, 9}));
}

TEST(WebGpu, Pooling2d) {
  REQUIRE_WEBGPU();
  struct Case {
    const char* op;
    std::vector<AttrSpec> attrs;
    std::vector<int64_t> y;
  };
  const std::vector<Case> cases{
      {"MaxPool", {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2})}, {2, 3, 5, 4}},
      {"MaxPool",
       {attr_ints("kernel_shape", {3, 2}), attr_ints("pads", {1, 0, 1, 1}), attr_ints("strides", {2, 1}),
        attr_int("ceil_mode", 1)},
       {2, 3, 7, 9}},
      {"MaxPool", {attr_ints("kernel_shape", {2, 2}), attr_ints("dilations", {2, 3})}, {2, 3, 9, 6}},
      {"AveragePool", {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1})}, {2, 3, 11, 9}},
      {"AveragePool",
       {attr_ints("kernel_shape", {2, 3}), attr_ints("pads", {1, 1, 0, 2}), attr_int("count_include_pad", 1),
        attr_ints("strides", {2, 2})},
       {2, 3, 6, 5}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.op);
    GraphSpec g = unary_graph(k.op, {2, 3, 11, 9}, k.attrs);
    g.outputs[0].dims = k.y;
    check(g);
  }
}

TEST(WebGpu, PoolingAutoPadAnd1d) {
  REQUIRE_WEBGPU();
  for (const char* op : {"MaxPool", "AveragePool"}) {
    for (const char* pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
      SCOPED_TRACE(std::string(op) + " " + pad);
      GraphSpec g =
          unary_graph(op, {2, 3, 10, 7},
                      {attr_ints("kernel_shape", {3, 2}), attr_ints("strides", {2, 2}), attr_string("auto_pad", pad)});
      g.outputs[0].dims = {2, 3, -1, -1};
      check(g);
    }
    SCOPED_TRACE(std::string(op) + " 1-d");
    std::vector<AttrSpec> a{attr_ints("kernel_shape", {3}), attr_ints("pads", {1, 2}), attr_ints("strides", {2})};
    if (std::string(op) == "AveragePool") a.push_back(attr_int("count_include_pad", 1));
    GraphSpec one = unary_graph(op, {2, 3, 13}, a);
    one.outputs[0].dims = {2, 3, 7};
    check(one);
    // Before opset 7 / 8: the later attributes' defaults.
    GraphSpec old = unary_graph(op, {1, 2, 9, 8}, {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1})});
    old.outputs[0].dims = {1, 2, 9, 8};
    check(old, 6);
  }
}

TEST(WebGpu, Reductions) {
  REQUIRE_WEBGPU();
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1", "ReduceL2",
                         "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    // Axes as an attribute (opset 11), kept dims; and as a constant input (opset 18), dropped.
    GraphSpec a = unary_graph(op, {3, 5, 7}, {attr_ints("axes", {0, -1})});
    a.outputs[0].dims = {1, 5, 1};
    check(a, 11);
    GraphSpec b = unary_graph(op, {4, 3, 6, 5}, {attr_int("keepdims", 0)});
    b.initializers.emplace_back("axes", Tensor::from_vector<int64_t>(Shape{2}, {1, 2}));
    b.nodes[0].inputs = {"x", "axes"};
    b.outputs[0].dims = {4, 5};
    check(b, 18);
    // No axes: every axis.
    GraphSpec c = unary_graph(op, {3, 4});
    c.outputs[0].dims = {1, 1};
    check(c, 18);
  }
  // Products and logs of positive values.
  for (const char* op : {"ReduceProd", "ReduceLogSum"}) {
    SCOPED_TRACE(op);
    GraphSpec g = unary_graph("Sigmoid", {3, 5, 7});
    g.nodes[0].outputs = {"p"};
    g.nodes.push_back(node(op, {"p"}, {"y"}, {attr_ints("axes", {1})}));
    g.outputs[0].dims = {3, 1, 7};
    check(g, 11);
  }
  // Axes computed at run time are declined.
  GraphSpec d = unary_graph("ReduceSum", {3, 4});
  d.inputs.push_back({"axes", DType::kInt64, {1}});
  d.nodes[0].inputs = {"x", "axes"};
  d.outputs[0].dims = {-1, -1};
  Session s = webgpu_session(encode_model(d, 13), false);
  const Placement pl = s.placement();
  ASSERT_NE(find_node(pl, "ReduceSum"), nullptr);
  EXPECT_EQ(find_node(pl, "ReduceSum")->ep, "cpu");
}

TEST(WebGpu, LayerNormalization) {
  REQUIRE_WEBGPU();
  for (int64_t axis : {-1, 1}) {
    SCOPED_TRACE(axis);
    GraphSpec g = unary_graph("LayerNormalization", {3, 5, 37}, {attr_int("axis", axis), attr_float("epsilon", 1e-3f)});
    const Shape norm = axis == -1 ? Shape{37} : Shape{5, 37};
    g.initializers.emplace_back("scale", random_tensor(norm, 3));
    g.initializers.emplace_back("bias", random_tensor(norm, 4));
    g.nodes[0].inputs = {"x", "scale", "bias"};
    check(g, 17);
  }
  // With the Mean and InvStdDev outputs.
  GraphSpec st = unary_graph("LayerNormalization", {4, 3, 11}, {attr_int("axis", 1)});
  st.initializers.emplace_back("scale", random_tensor(Shape{3, 11}, 3));
  st.nodes[0].inputs = {"x", "scale"};
  st.nodes[0].outputs = {"y", "mean", "inv"};
  st.outputs.push_back({"mean", DType::kFloat, {4, 1, 1}});
  st.outputs.push_back({"inv", DType::kFloat, {4, 1, 1}});
  check(st, 17);
  GraphSpec nb = unary_graph("LayerNormalization", {6, 19});
  nb.initializers.emplace_back("scale", random_tensor(Shape{19}, 3));
  nb.nodes[0].inputs = {"x", "scale"};
  check(nb, 17);
}

TEST(WebGpu, BatchNormalization) {
  REQUIRE_WEBGPU();
  for (const Shape& xs : {Shape{2, 5, 7, 3}, Shape{3, 5}, Shape{1, 5, 9}}) {
    SCOPED_TRACE(xs.to_string());
    GraphSpec g = unary_graph("BatchNormalization", xs, {attr_float("epsilon", 1e-3f)});
    g.initializers.emplace_back("scale", random_tensor(Shape{5}, 3));
    g.initializers.emplace_back("bias", random_tensor(Shape{5}, 4));
    g.initializers.emplace_back("mean", random_tensor(Shape{5}, 5));
    g.initializers.emplace_back("var", Tensor::from_vector<float>(Shape{5}, {0.5f, 1.0f, 2.0f, 0.01f, 3.0f}));
    g.nodes[0].inputs = {"x", "scale", "bias", "mean", "var"};
    check(g, 15);
  }
  // Statistics given as graph inputs (read on the host at each run).
  GraphSpec gi = unary_graph("BatchNormalization", {2, 3, 4});
  for (const char* k : {"scale", "bias", "mean"}) gi.initializers.emplace_back(k, random_tensor(Shape{3}, 6));
  gi.inputs.push_back({"var", DType::kFloat, {3}});
  gi.nodes[0].inputs = {"x", "scale", "bias", "mean", "var"};
  Inputs in = random_inputs(gi);
  for (auto& [name, v] : in)
    if (name == "var") v = Value(Tensor::from_vector<float>(Shape{3}, {0.25f, 1.5f, 4.0f}));
  check(gi, 15, 1e-4, 1e-5, ep::WebGPU(), &in);
  // Statistics a node computes stay on the CPU EP, saying why.
  GraphSpec d = unary_graph("BatchNormalization", {2, 3, 4});
  for (const char* k : {"scale", "bias", "mean"}) d.initializers.emplace_back(k, random_tensor(Shape{3}, 6));
  d.inputs.push_back({"v0", DType::kFloat, {3}});
  d.nodes.insert(d.nodes.begin(), node("Abs", {"v0"}, {"var"}));
  d.nodes[1].inputs = {"x", "scale", "bias", "mean", "var"};
  const std::string m = encode_model(d, 15);
  Session s = webgpu_session(m, false, ep::WebGPU());
  bool found = false;
  for (const auto& n : s.placement().nodes) {
    if (n.op_type != "BatchNormalization") continue;
    found = true;
    EXPECT_EQ(n.ep, "cpu");
    ASSERT_FALSE(n.declined.empty());
    EXPECT_NE(n.declined[0].message.find("input 4 is computed by a node"), std::string::npos) << n.declined[0].message;
  }
  EXPECT_TRUE(found);
}

TEST(WebGpu, Pad) {
  REQUIRE_WEBGPU();
  for (const char* mode : {"constant", "edge", "reflect"}) {
    SCOPED_TRACE(mode);
    // From opset 11: pads (negative ones crop) and the constant as inputs read on the host.
    GraphSpec g;
    g.inputs.push_back({"x", DType::kFloat, {2, 3, 4, 5}});
    g.initializers.emplace_back("pads", Tensor::from_vector<int64_t>(Shape{8}, {0, 1, 2, -1, 1, 0, 1, 3}));
    g.initializers.emplace_back("value", Tensor::from_vector<float>(Shape{}, {2.5f}));
    g.nodes.push_back(node("Pad", {"x", "pads", "value"}, {"y"}, {attr_string("mode", mode)}));
    g.outputs.push_back({"y", DType::kFloat, {3, 4, 7, 9}});
    check(g, 13);
    // Opset 18: pads of some axes only (negative axis).
    GraphSpec a;
    a.inputs.push_back({"x", DType::kFloat, {3, 4, 5}});
    a.initializers.emplace_back("pads", Tensor::from_vector<int64_t>(Shape{4}, {2, 1, 3, 2}));
    a.initializers.emplace_back("axes", Tensor::from_vector<int64_t>(Shape{2}, {-1, 0}));
    a.nodes.push_back(node("Pad", {"x", "pads", "", "axes"}, {"y"}, {attr_string("mode", mode)}));
    a.outputs.push_back({"y", DType::kFloat, {5, 4, 10}});
    check(a, 18);
  }
  // Opset 2: pads and value as attributes.
  GraphSpec o;
  o.inputs.push_back({"x", DType::kFloat, {3, 4}});
  o.nodes.push_back(node("Pad", {"x"}, {"y"}, {attr_ints("pads", {1, 2, 0, 1}), attr_float("value", -1.0f)}));
  o.outputs.push_back({"y", DType::kFloat, {4, 7}});
  check(o, 10);
  // Reflect pads as large as the axis are an error naming the node.
  GraphSpec bad;
  bad.inputs.push_back({"x", DType::kFloat, {2, 3}});
  bad.inputs.push_back({"pads", DType::kInt64, {4}});
  bad.nodes.push_back(node("Pad", {"x", "pads"}, {"y"}, {attr_string("mode", "reflect")}));
  bad.outputs.push_back({"y", DType::kFloat, {-1, -1}});
  Session s = webgpu_session(encode_model(bad, 13), false, ep::WebGPU());
  Inputs in{{"x", Value(Tensor::from_vector<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6}))},
            {"pads", Value(Tensor::from_vector<int64_t>(Shape{4}, {0, 3, 0, 0}))}};
  try {
    s.run(in);
    ADD_FAILURE() << "ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reflect pads of axis 1 (3, 0) must be below its size 3"), std::string::npos) << e.what();
  }
}

TEST(WebGpu, TransposeAndViews) {
  REQUIRE_WEBGPU();
  check(unary_graph("Transpose", {3, 5, 7}), 17);  // default perm: reversed
  GraphSpec t;
  t.nodes.push_back(node("Transpose", {"x"}, {"y"}, {attr_ints("perm", {1, 3, 0, 2})}));
  t.inputs.push_back({"x", DType::kFloat, {2, 3, 5, 7}});
  t.outputs.push_back({"y", DType::kFloat, {3, 7, 2, 5}});
  check(t);
  // Relu -> Reshape (shape from a constant, read on the host) -> Transpose -> Flatten ->
  // Unsqueeze -> Squeeze -> Identity -> Tanh: every node on the EP, copies only at the edges.
  GraphSpec g;
  g.initializers.emplace_back("shape", Tensor::from_vector<int64_t>(Shape{3}, {5, 3, -1}));
  g.initializers.emplace_back("axes", Tensor::from_vector<int64_t>(Shape{1}, {0}));
  g.nodes.push_back(node("Relu", {"x"}, {"r"}));
  g.nodes.push_back(node("Reshape", {"r", "shape"}, {"s"}));
  g.nodes.push_back(node("Transpose", {"s"}, {"t"}, {attr_ints("perm", {2, 0, 1})}));
  g.nodes.push_back(node("Flatten", {"t"}, {"f"}, {attr_int("axis", 1)}));
  g.nodes.push_back(node("Unsqueeze", {"f", "axes"}, {"u"}));
  g.nodes.push_back(node("Squeeze", {"u", "axes"}, {"q"}));
  g.nodes.push_back(node("Identity", {"q"}, {"i"}));
  g.nodes.push_back(node("Tanh", {"i"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {3, 5, 7}});
  g.outputs.push_back({"y", DType::kFloat, {7, 15}});
  Session s = webgpu_session(encode_model(g, 17));
  EXPECT_EQ(s.placement().copies.size(), 2u) << s.placement().summary;
  check(g);
}

// ---------------------------------------------------------------------------------------------
// Data movement and selection (integer / bool operands read on the host)

TEST(WebGpu, GatherWithHostIndices) {
  REQUIRE_WEBGPU();
  // A weight table (uploaded once) indexed by an int64 graph input: no copy for the indices.
  GraphSpec g;
  g.initializers.emplace_back("t", random_tensor(Shape{11, 7}, 3));
  g.nodes.push_back(node("Gather", {"t", "i"}, {"y"}));
  g.inputs.push_back({"i", DType::kInt64, {2, 3}});
  g.outputs.push_back({"y", DType::kFloat, {2, 3, 7}});
  const Inputs in{{"i", Tensor::from_vector<int64_t>(Shape{2, 3}, {0, 10, -1, 4, 4, 2})}};
  check(g, 17, 1e-4, 1e-5, ep::WebGPU(), &in);
  const std::string m = encode_model(g, 17);
  Session s = webgpu_session(m);
  ASSERT_EQ(s.placement().copies.size(), 1u) << s.placement().summary;  // only y back to the host
  try {
    s.run({{"i", Tensor::from_vector<int64_t>(Shape{2, 3}, {0, 11, 1, 1, 1, 1})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  // The session still runs after the error.
  EXPECT_TRUE(close(s.run(in)[0], cpu_session(m).run(in)[0]));
  // A device value along an inner axis, constant int32 indices; a scalar index drops the axis.
  GraphSpec h;
  h.initializers.emplace_back("i", Tensor::from_vector<int32_t>(Shape{3}, {4, 0, -2}));
  h.nodes.push_back(node("Relu", {"x"}, {"r"}));
  h.nodes.push_back(node("Gather", {"r", "i"}, {"y"}, {attr_int("axis", 1)}));
  h.inputs.push_back({"x", DType::kFloat, {3, 5, 9}});
  h.outputs.push_back({"y", DType::kFloat, {3, 3, 9}});
  check(h);
  GraphSpec k;
  k.initializers.emplace_back("i", Tensor::from_vector<int64_t>(Shape{}, {2}));
  k.nodes.push_back(node("Gather", {"x", "i"}, {"y"}, {attr_int("axis", -1)}));
  k.inputs.push_back({"x", DType::kFloat, {4, 3, 5}});
  k.outputs.push_back({"y", DType::kFloat, {4, 3}});
  check(k);
}

TEST(WebGpu, Slice) {
  REQUIRE_WEBGPU();
  {  // negative axis and step, ends past the dim, out-of-range starts clamped
    GraphSpec g;
    g.initializers.emplace_back("st", Tensor::from_vector<int64_t>(Shape{3}, {1, -1, 100}));
    g.initializers.emplace_back("en", Tensor::from_vector<int64_t>(Shape{3}, {100, -100, -100}));
    g.initializers.emplace_back("ax", Tensor::from_vector<int64_t>(Shape{3}, {0, -1, 1}));
    g.initializers.emplace_back("sp", Tensor::from_vector<int64_t>(Shape{3}, {2, -2, -3}));
    g.nodes.push_back(node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}));
    g.inputs.push_back({"x", DType::kFloat, {5, 3, 7}});
    g.outputs.push_back({"y", DType::kFloat, {2, 1, 4}});
    check(g);
  }
  {  // no axes / steps, int32 operands; an empty result
    GraphSpec g;
    g.initializers.emplace_back("st", Tensor::from_vector<int32_t>(Shape{2}, {1, 2}));
    g.initializers.emplace_back("en", Tensor::from_vector<int32_t>(Shape{2}, {4, 2}));
    g.nodes.push_back(node("Slice", {"x", "st", "en"}, {"y"}));
    g.inputs.push_back({"x", DType::kFloat, {5, 3}});
    g.outputs.push_back({"y", DType::kFloat, {3, 0}});
    check(g);
  }
  {  // starts / ends computed by CPU nodes (Shape -> Div), read on the host: as in the encoder
    GraphSpec g;
    g.initializers.emplace_back("two", Tensor::from_vector<int64_t>(Shape{1}, {2}));
    g.initializers.emplace_back("zero", Tensor::from_vector<int64_t>(Shape{1}, {0}));
    g.initializers.emplace_back("ax", Tensor::from_vector<int64_t>(Shape{1}, {1}));
    g.nodes.push_back(node("Shape", {"x"}, {"sh"}, {attr_int("start", 1), attr_int("end", 2)}));
    g.nodes.push_back(node("Div", {"sh", "two"}, {"half"}));
    g.nodes.push_back(node("Relu", {"x"}, {"r"}));
    g.nodes.push_back(node("Slice", {"r", "zero", "half", "ax"}, {"a"}));
    g.nodes.push_back(node("Slice", {"r", "half", "sh", "ax"}, {"b"}));
    g.nodes.push_back(node("Sub", {"a", "b"}, {"y"}));
    g.inputs.push_back({"x", DType::kFloat, {3, 10, 5}});
    g.outputs.push_back({"y", DType::kFloat, {3, 5, 5}});
    const std::string m = encode_model(g, 17);
    Session s = webgpu_session(m, false);
    const Placement p = s.placement();
    for (const auto& n : p.nodes) {
      if (n.op_type == "Slice" || n.op_type == "Sub") {
        EXPECT_EQ(n.ep, "webgpu") << n.name;
      }
    }
    EXPECT_EQ(p.copies.size(), 2u) << p.summary;
    const Inputs in = random_inputs(g);
    EXPECT_TRUE(close(s.run(in)[0], cpu_session(m).run(in)[0]));
    EXPECT_TRUE(close(s.run(in)[0], cpu_session(m).run(in)[0]));
  }
  {  // a negative step over an empty axis
    GraphSpec g;
    g.initializers.emplace_back("st", Tensor::from_vector<int64_t>(Shape{2}, {-1, 5}));
    g.initializers.emplace_back("en", Tensor::from_vector<int64_t>(Shape{2}, {-100, 0}));
    g.initializers.emplace_back("ax", Tensor::from_vector<int64_t>(Shape{2}, {0, 1}));
    g.initializers.emplace_back("sp", Tensor::from_vector<int64_t>(Shape{2}, {-1, -2}));
    g.nodes.push_back(node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}));
    g.inputs.push_back({"x", DType::kFloat, {0, 7}});
    g.outputs.push_back({"y", DType::kFloat, {0, 3}});
    check(g);
  }
  {  // opset 9: attributes
    GraphSpec g;
    g.nodes.push_back(node("Slice", {"x"}, {"y"},
                           {attr_ints("starts", {-4, 1}), attr_ints("ends", {1000, 3}), attr_ints("axes", {2, 0})}));
    g.inputs.push_back({"x", DType::kFloat, {4, 3, 9}});
    g.outputs.push_back({"y", DType::kFloat, {2, 3, 4}});
    check(g, 9);
  }
}

TEST(WebGpu, ConcatAndExpand) {
  REQUIRE_WEBGPU();
  {
    GraphSpec g;
    g.nodes.push_back(node("Concat", {"a", "b", "c"}, {"y"}, {attr_int("axis", 1)}));
    g.inputs.push_back({"a", DType::kFloat, {2, 3, 5}});
    g.inputs.push_back({"b", DType::kFloat, {2, 1, 5}});
    g.inputs.push_back({"c", DType::kFloat, {2, 7, 5}});
    g.outputs.push_back({"y", DType::kFloat, {2, 11, 5}});
    check(g);
  }
  {  // last axis (negative), a weight among the inputs, an empty input
    GraphSpec g;
    g.initializers.emplace_back("w", random_tensor(Shape{3, 2}, 4));
    g.nodes.push_back(node("Concat", {"a", "w", "e", "a"}, {"y"}, {attr_int("axis", -1)}));
    g.inputs.push_back({"a", DType::kFloat, {3, 5}});
    g.inputs.push_back({"e", DType::kFloat, {3, 0}});
    g.outputs.push_back({"y", DType::kFloat, {3, 12}});
    check(g);
  }
  {
    GraphSpec g;
    g.initializers.emplace_back("s", Tensor::from_vector<int64_t>(Shape{3}, {2, 3, 5}));
    g.nodes.push_back(node("Expand", {"x", "s"}, {"y"}));
    g.inputs.push_back({"x", DType::kFloat, {3, 1}});
    g.outputs.push_back({"y", DType::kFloat, {2, 3, 5}});
    check(g);
  }
  {  // the shape may be smaller than the input (bidirectional broadcast)
    GraphSpec g;
    g.initializers.emplace_back("s", Tensor::from_vector<int64_t>(Shape{2}, {7, 1}));
    g.nodes.push_back(node("Expand", {"x", "s"}, {"y"}));
    g.inputs.push_back({"x", DType::kFloat, {2, 1, 3}});
    g.outputs.push_back({"y", DType::kFloat, {2, 7, 3}});
    check(g);
  }
}

TEST(WebGpu, WhereAndCast) {
  REQUIRE_WEBGPU();
  // A bool condition computed on the CPU (Greater), broadcast against a device value and a weight.
  GraphSpec g;
  g.initializers.emplace_back("w", random_tensor(Shape{5}, 6));
  g.initializers.emplace_back("zero", Tensor::from_vector<float>(Shape{}, {0.0f}));
  g.nodes.push_back(node("Greater", {"c", "zero"}, {"m"}));
  g.nodes.push_back(node("Relu", {"x"}, {"r"}));
  g.nodes.push_back(node("Where", {"m", "r", "w"}, {"y"}));
  g.inputs.push_back({"c", DType::kFloat, {3, 1, 5}});
  g.inputs.push_back({"x", DType::kFloat, {4, 1}});
  g.outputs.push_back({"y", DType::kFloat, {3, 4, 5}});
  const std::string m = encode_model(g, 17);
  Session s = webgpu_session(m, false);
  const Placement p = s.placement();
  ASSERT_NE(find_node(p, "Where"), nullptr);
  EXPECT_EQ(find_node(p, "Where")->ep, "webgpu");
  EXPECT_EQ(find_node(p, "Greater")->ep, "cpu");
  const Inputs in = random_inputs(g);
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(close(s.run(in)[0], cpu_session(m).run(in)[0]));
  // Strict: a bool graph input as the condition.
  GraphSpec w;
  w.nodes.push_back(node("Where", {"c", "a", "b"}, {"y"}));
  w.inputs.push_back({"c", DType::kBool, {2, 1, 7}});
  w.inputs.push_back({"a", DType::kFloat, {3, 1}});
  w.inputs.push_back({"b", DType::kFloat, {2, 3, 7}});
  w.outputs.push_back({"y", DType::kFloat, {2, 3, 7}});
  std::vector<bool> cv;
  for (int i = 0; i < 14; ++i) cv.push_back(i % 3 != 1);
  Inputs win = random_inputs(w);
  win[0].second = Tensor::from_vector<bool>(Shape{2, 1, 7}, cv);
  check(w, 17, 1e-4, 1e-5, ep::WebGPU(), &win);
  // Cast of bool / int64 / int32 inputs to float32, then float work on the EP.
  for (DType t : {DType::kBool, DType::kInt64, DType::kInt32}) {
    GraphSpec c;
    c.nodes.push_back(node("Cast", {"i"}, {"f"}, {attr_int("to", static_cast<int64_t>(DType::kFloat))}));
    c.nodes.push_back(node("Add", {"f", "x"}, {"y"}));
    c.inputs.push_back({"i", t, {3, 5}});
    c.inputs.push_back({"x", DType::kFloat, {5}});
    c.outputs.push_back({"y", DType::kFloat, {3, 5}});
    Inputs cin = random_inputs(c);
    if (t == DType::kBool) {
      std::vector<bool> b;
      for (int i = 0; i < 15; ++i) b.push_back(i % 2 == 0);
      cin[0].second = Tensor::from_vector<bool>(Shape{3, 5}, b);
    } else if (t == DType::kInt64) {
      std::vector<int64_t> v;
      for (int i = 0; i < 15; ++i) v.push_back((i - 7) * 123456789LL);
      cin[0].second = Tensor::from_vector<int64_t>(Shape{3, 5}, v);
    } else {
      std::vector<int32_t> v;
      for (int i = 0; i < 15; ++i) v.push_back((i - 7) * 1000003);
      cin[0].second = Tensor::from_vector<int32_t>(Shape{3, 5}, v);
    }
    check(c, 17, 1e-6, 0.0, ep::WebGPU(), &cin);
  }
}

TEST(WebGpu, DeclinesWhatItCannotMove) {
  REQUIRE_WEBGPU();
  // float -> float Cast, a Cast to int64, an int64 Gather (shape arithmetic), Equal (bool output):
  // declined with their reasons, the results still right through the CPU EP.
  GraphSpec g;
  g.initializers.emplace_back("i", Tensor::from_vector<int64_t>(Shape{1}, {1}));
  g.nodes.push_back(node("Cast", {"x"}, {"a"}, {attr_int("to", static_cast<int64_t>(DType::kFloat))}));
  g.nodes.push_back(node("Cast", {"a"}, {"b"}, {attr_int("to", static_cast<int64_t>(DType::kInt64))}));
  g.nodes.push_back(node("Gather", {"b", "i"}, {"c"}, {attr_int("axis", 1)}));
  g.nodes.push_back(node("Equal", {"c", "c"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {2, 3}});
  g.outputs.push_back({"y", DType::kBool, {2, 1}});
  Session s = webgpu_session(encode_model(g, 17), false);
  const Placement p = s.placement();
  for (const auto& n : p.nodes) {
    if (n.op_type == "Copy") continue;
    EXPECT_EQ(n.ep, "cpu") << n.name;
    ASSERT_FALSE(n.declined.empty()) << n.name;
    EXPECT_EQ(n.declined[0].code, n.op_type == "Equal" ? "UnsupportedOp" : "UnsupportedType") << n.name;
  }
}

// ---------------------------------------------------------------------------------------------
// Sessions and threads

TEST(WebGpu, TwoSessionsShareTheDevice) {
  REQUIRE_WEBGPU();
  const GraphSpec g1 = matmul_graph({9, 14}, {14, 6}, {9, 6}, true);
  const GraphSpec g2 = unary_graph("Sigmoid", {5, 31});
  const std::string m1 = encode_model(g1, 17), m2 = encode_model(g2, 17);
  Session a = webgpu_session(m1), b = webgpu_session(m2);
  EXPECT_EQ(a.registration().front().device, b.registration().front().device);
  const Inputs i1 = random_inputs(g1), i2 = random_inputs(g2);
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(close(a.run(i1)[0], cpu_session(m1).run(i1)[0]));
    EXPECT_TRUE(close(b.run(i2)[0], cpu_session(m2).run(i2)[0]));
  }
}

TEST(WebGpu, ConcurrentRuns) {
  REQUIRE_WEBGPU();
  GraphSpec g = matmul_graph({6, 21}, {21, 13}, {6, 13}, true);
  g.nodes[0].outputs = {"m"};
  g.nodes.push_back(node("Tanh", {"m"}, {"t"}));
  g.nodes.push_back(node("Softmax", {"t"}, {"y"}));
  const std::string m = encode_model(g, 17);
  Session wg = webgpu_session(m);
  Session cpu = cpu_session(m);
  std::vector<Inputs> ins;
  std::vector<Value> want;
  for (uint32_t t = 0; t < 4; ++t) {
    ins.push_back(random_inputs(g, 10 + t));
    want.push_back(cpu.run(ins.back())[0]);
  }
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      bool good = true;
      for (int r = 0; r < 5; ++r) good &= static_cast<bool>(close(wg.run(ins[t])[0], want[t]));
      ok[t] = good;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
}

// ---------------------------------------------------------------------------------------------
// Resize

namespace {

/// Resize of x by `scales` (or `sizes` when scales is empty), the operands constants; `roi` given
/// when not empty. Output dims left unknown (inference plans them).
GraphSpec resize_graph(Shape x, std::vector<float> scales, std::vector<int64_t> sizes, std::vector<AttrSpec> attrs,
                       std::vector<float> roi = {}) {
  GraphSpec g;
  g.inputs.push_back({"x", DType::kFloat, x.to_vector()});
  std::vector<std::string> in{"x", "", "", ""};
  if (!roi.empty()) {
    g.initializers.emplace_back("roi", Tensor::from_vector<float>(Shape{static_cast<int64_t>(roi.size())}, roi));
    in[1] = "roi";
  }
  if (!scales.empty()) {
    g.initializers.emplace_back("scales",
                                Tensor::from_vector<float>(Shape{static_cast<int64_t>(scales.size())}, scales));
    in[2] = "scales";
    in.pop_back();
  } else {
    g.initializers.emplace_back("sizes",
                                Tensor::from_vector<int64_t>(Shape{static_cast<int64_t>(sizes.size())}, sizes));
    in[3] = "sizes";
  }
  g.nodes.push_back(node("Resize", in, {"y"}, std::move(attrs)));
  g.outputs.push_back({"y", DType::kFloat, std::vector<int64_t>(x.size(), -1)});
  return g;
}

}  // namespace

TEST(WebGpu, ResizeModesAndCoordinateTransforms) {
  REQUIRE_WEBGPU();
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    for (const char* coord :
         {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"}) {
      SCOPED_TRACE(std::string(mode) + " " + coord);
      const std::vector<AttrSpec> a{attr_string("mode", mode), attr_string("coordinate_transformation_mode", coord)};
      // Upsampling by scales, odd sizes.
      check(resize_graph({2, 3, 5, 7}, {1, 1, 1.6f, 2.3f}, {}, a), 19);
      // Downsampling by sizes.
      check(resize_graph({1, 2, 9, 11}, {}, {1, 2, 4, 5}, a), 19);
    }
  }
  // tf_half_pixel_for_nn (nearest only).
  check(resize_graph(
            {1, 2, 7, 5}, {}, {1, 2, 4, 9},
            {attr_string("mode", "nearest"), attr_string("coordinate_transformation_mode", "tf_half_pixel_for_nn")}),
        19);
}

TEST(WebGpu, ResizeNearestModesCubicCoefficientAndExcludeOutside) {
  REQUIRE_WEBGPU();
  for (const char* nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    SCOPED_TRACE(nm);
    for (const char* coord : {"half_pixel", "asymmetric", "align_corners"}) {
      const std::vector<AttrSpec> a{attr_string("mode", "nearest"), attr_string("nearest_mode", nm),
                                    attr_string("coordinate_transformation_mode", coord)};
      check(resize_graph({1, 3, 5, 6}, {}, {1, 3, 8, 13}, a), 19);
      check(resize_graph({1, 3, 9, 10}, {1, 1, 0.5f, 0.7f}, {}, a), 19);
    }
  }
  for (int exclude : {0, 1}) {
    SCOPED_TRACE(exclude);
    const std::vector<AttrSpec> a{attr_string("mode", "cubic"), attr_float("cubic_coeff_a", -0.5f),
                                  attr_int("exclude_outside", exclude)};
    check(resize_graph({1, 2, 6, 5}, {1, 1, 1.7f, 2.0f}, {}, a), 19);
    check(resize_graph({1, 2, 11, 9}, {}, {1, 2, 4, 4}, a), 19);
  }
}

TEST(WebGpu, ResizeCropAxesAntialiasAndOldOpsets) {
  REQUIRE_WEBGPU();
  // tf_crop_and_resize: roi per axis, outside points take extrapolation_value.
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    SCOPED_TRACE(mode);
    check(resize_graph({1, 2, 7, 6}, {}, {1, 2, 5, 9},
                       {attr_string("mode", mode), attr_string("coordinate_transformation_mode", "tf_crop_and_resize"),
                        attr_float("extrapolation_value", 2.5f)},
                       {0, 0, -0.2f, 0.3f, 1, 1, 0.8f, 1.4f}),
          19);
  }
  // axes (opset 18+): two axes, one negative, with their scales, sizes and roi.
  check(resize_graph({2, 5, 4, 3}, {2.5f, 0.6f}, {}, {attr_string("mode", "linear"), attr_ints("axes", {-1, 1})}), 19);
  check(resize_graph({2, 5, 4, 3}, {}, {7, 3}, {attr_string("mode", "cubic"), attr_ints("axes", {2, 0})}), 19);
  check(resize_graph({3, 4, 5}, {}, {6, 2},
                     {attr_string("mode", "linear"), attr_ints("axes", {1, 2}),
                      attr_string("coordinate_transformation_mode", "tf_crop_and_resize")},
                     {0.1f, 0.2f, 0.9f, 0.7f}),
        19);
  // keep_aspect_ratio_policy with sizes.
  for (const char* policy : {"not_larger", "not_smaller"})
    check(resize_graph({1, 2, 6, 9}, {}, {4, 7},
                       {attr_string("mode", "linear"), attr_ints("axes", {2, 3}),
                        attr_string("keep_aspect_ratio_policy", policy)}),
          19);
  // antialias: wider tap tables when downsampling.
  for (const char* mode : {"linear", "cubic"}) {
    SCOPED_TRACE(mode);
    const std::vector<AttrSpec> a{attr_string("mode", mode), attr_int("antialias", 1)};
    check(resize_graph({1, 2, 13, 10}, {}, {1, 2, 5, 4}, a), 19);
    check(resize_graph({1, 2, 9, 10}, {1, 1, 0.6f, 1.5f}, {}, a), 19);
  }
  // 3-d input, all of its axes resized.
  check(resize_graph({3, 5, 4}, {1.5f, 0.8f, 2.0f}, {}, {attr_string("mode", "linear")}), 13);
  // Resize-10 (scales as input 1), Upsample-9 (likewise) and Upsample-7 (scales attribute).
  for (const char* op : {"Resize", "Upsample"}) {
    SCOPED_TRACE(op);
    for (const char* mode : {"nearest", "linear"}) {
      GraphSpec g;
      g.inputs.push_back({"x", DType::kFloat, {1, 2, 3, 5}});
      g.initializers.emplace_back("scales", Tensor::from_vector<float>(Shape{4}, {1, 1, 2, 3}));
      g.nodes.push_back(node(op, {"x", "scales"}, {"y"}, {attr_string("mode", mode)}));
      g.outputs.push_back({"y", DType::kFloat, {1, 2, 6, 15}});
      check(g, std::string(op) == "Resize" ? 10 : 9);
    }
  }
  GraphSpec u;
  u.inputs.push_back({"x", DType::kFloat, {1, 2, 3, 4}});
  u.nodes.push_back(
      node("Upsample", {"x"}, {"y"}, {attr_floats("scales", {1, 1, 2, 2}), attr_string("mode", "nearest")}));
  u.outputs.push_back({"y", DType::kFloat, {1, 2, 6, 8}});
  check(u, 7);
}

TEST(WebGpu, ResizeWithScalesComputedAtRunTime) {
  REQUIRE_WEBGPU();
  // sizes as a graph input: read on the host at each run (no copy), new sizes, new tables.
  GraphSpec g;
  g.inputs.push_back({"x", DType::kFloat, {1, 2, 5, 6}});
  g.inputs.push_back({"sizes", DType::kInt64, {4}});
  g.nodes.push_back(node("Resize", {"x", "", "", "sizes"}, {"y"}, {attr_string("mode", "linear")}));
  g.outputs.push_back({"y", DType::kFloat, {-1, -1, -1, -1}});
  const std::string m = encode_model(g, 13);
  Session wg = webgpu_session(m);
  Session cpu = cpu_session(m);
  EXPECT_EQ(wg.placement().copies.size(), 2u) << wg.placement().summary;  // x in, y out
  for (const std::vector<int64_t>& sz : {std::vector<int64_t>{1, 2, 7, 3}, {1, 2, 2, 11}, {1, 2, 7, 3}}) {
    Inputs in{{"x", Value(random_tensor(Shape{1, 2, 5, 6}, 3))},
              {"sizes", Value(Tensor::from_vector<int64_t>(Shape{4}, sz))}};
    const auto a = wg.run(in);
    const auto b = cpu.run(in);
    EXPECT_TRUE(close(a[0], b[0], 1e-4, 1e-5));
  }
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose

namespace {

/// ConvTranspose of x with constant weights w ([cin, cout / group, k...]) and bias when asked;
/// output dims left to inference.
GraphSpec conv_transpose_graph(Shape x, Shape w, int64_t group, bool bias, std::vector<AttrSpec> attrs) {
  GraphSpec g;
  std::vector<std::string> in{"x", "w"};
  g.initializers.emplace_back("w", random_tensor(w, 7));
  if (bias) {
    g.initializers.emplace_back("b", random_tensor(Shape{w[1] * group}, 8));
    in.push_back("b");
  }
  attrs.push_back(attr_int("group", group));
  g.nodes.push_back(node("ConvTranspose", in, {"y"}, std::move(attrs)));
  g.inputs.push_back({"x", DType::kFloat, x.to_vector()});
  g.outputs.push_back({"y", DType::kFloat, std::vector<int64_t>(x.size(), -1)});
  return g;
}

}  // namespace

TEST(WebGpu, ConvTranspose2d) {
  REQUIRE_WEBGPU();
  // Plain, strided with pads, grouped with dilations, output_padding.
  check(conv_transpose_graph({1, 3, 5, 4}, {3, 2, 3, 3}, 1, true, {}));
  check(conv_transpose_graph({2, 4, 5, 7}, {4, 3, 3, 2}, 1, false,
                             {attr_ints("strides", {2, 3}), attr_ints("pads", {1, 0, 2, 1})}));
  check(conv_transpose_graph(
      {1, 6, 4, 5}, {6, 2, 3, 3}, 3, true,
      {attr_ints("dilations", {2, 1}), attr_ints("strides", {1, 2}), attr_ints("pads", {0, 1, 1, 0})}));
  check(conv_transpose_graph({2, 4, 3, 5}, {4, 5, 3, 3}, 2, true,
                             {attr_ints("strides", {3, 2}), attr_ints("output_padding", {2, 1})}));
  // Depthwise-like: group = channels.
  check(conv_transpose_graph({1, 5, 6, 6}, {5, 1, 4, 4}, 5, true,
                             {attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})}));
  // output_shape (the pads follow from it, a larger one padding the end), and auto_pad.
  check(conv_transpose_graph({1, 2, 4, 4}, {2, 3, 3, 3}, 1, true,
                             {attr_ints("strides", {2, 2}), attr_ints("output_shape", {10, 9})}));
  for (const char* pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(pad);
    check(conv_transpose_graph({1, 3, 5, 6}, {3, 2, 4, 3}, 1, false,
                               {attr_ints("strides", {2, 2}), attr_string("auto_pad", pad)}));
  }
}

TEST(WebGpu, ConvTranspose1dAndDeclined3d) {
  REQUIRE_WEBGPU();
  check(conv_transpose_graph({2, 3, 7}, {3, 4, 3}, 1, true, {}));
  check(conv_transpose_graph({1, 4, 9}, {4, 3, 5}, 2, true,
                             {attr_ints("strides", {3}), attr_ints("dilations", {2}), attr_ints("pads", {2, 1}),
                              attr_ints("output_padding", {1})}));
  check(conv_transpose_graph({1, 2, 6}, {2, 2, 2}, 1, false,
                             {attr_ints("strides", {2}), attr_ints("output_shape", {13})}));
  // 3-d is declined with the reason.
  Session s =
      webgpu_session(encode_model(conv_transpose_graph({1, 2, 3, 3, 3}, {2, 2, 2, 2, 2}, 1, false, {}), 17), false);
  const Placement pl = s.placement();
  const auto* n = find_node(pl, "ConvTranspose");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->ep, "cpu");
  ASSERT_FALSE(n->declined.empty());
  EXPECT_NE(n->declined[0].message.find("1-d and 2-d transposed convolutions only"), std::string::npos)
      << n->declined[0].message;
}

// ---------------------------------------------------------------------------------------------
// Tiled Conv (implicit GEMM for cin / group > 1) and FusedConv

TEST(WebGpu, ConvTiledShapes) {
  REQUIRE_WEBGPU();
  // Channel and pixel counts that are not multiples of the 64 x 64 tile, K not a multiple of 16.
  check(conv_graph({2, 5, 13, 11}, {67, 5, 3, 3}, true, {attr_ints("pads", {1, 1, 1, 1})}, {2, 67, 13, 11}));
  check(conv_graph({1, 3, 17, 19}, {9, 3, 7, 7}, true, {attr_ints("strides", {2, 2}), attr_ints("pads", {3, 3, 3, 3})},
                   {1, 9, 9, 10}));
  // 1x1 with many input channels, more than one tile each way.
  check(conv_graph({1, 70, 9, 9}, {130, 70, 1, 1}, false, {}, {1, 130, 9, 9}), 17, 1e-4, 1e-4);
  // Groups with two or more channels each, asymmetric pads, strides and dilations.
  check(conv_graph({2, 12, 10, 9}, {9, 4, 3, 2}, true,
                   {attr_int("group", 3), attr_ints("pads", {2, 0, 1, 1}), attr_ints("strides", {2, 3}),
                    attr_ints("dilations", {2, 1})},
                   {2, 9, 5, 3}));
  check(conv_graph({1, 8, 6, 7}, {16, 2, 3, 3}, false, {attr_int("group", 4), attr_ints("dilations", {2, 2})},
                   {1, 16, 2, 3}));
  // A window as large as the input: one output pixel.
  check(conv_graph({3, 4, 5, 5}, {6, 4, 5, 5}, true, {}, {3, 6, 1, 1}));
}

TEST(WebGpu, FusedConvActivations) {
  REQUIRE_WEBGPU();
  for (const char* act : {"Relu", "Clip"}) {
    for (int64_t group : {1, 6}) {  // tiled and depthwise
      SCOPED_TRACE(std::string(act) + " group " + std::to_string(group));
      GraphSpec g = conv_graph({1, 6, 9, 8}, {6, 6 / group, 3, 3}, true,
                               {attr_int("group", group), attr_ints("pads", {1, 1, 1, 1})}, {1, 6, 9, 8});
      g.outputs[0].name = "c";
      g.nodes[0].outputs[0] = "c";
      if (std::string(act) == "Relu") {
        g.nodes.push_back(node("Relu", {"c"}, {"y"}));
      } else {
        g.initializers.emplace_back("lo", Tensor::from_vector<float>(Shape{}, {-0.2f}));
        g.initializers.emplace_back("hi", Tensor::from_vector<float>(Shape{}, {0.3f}));
        g.nodes.push_back(node("Clip", {"c", "lo", "hi"}, {"y"}));
      }
      g.outputs[0].name = "y";
      check(g);
      // The optimizer fused the pair into one FusedConv node on the EP.
      Session s = webgpu_session(encode_model(g, 17));
      const Placement pl = s.placement();
      const auto* n = find_node(pl, "FusedConv");
      ASSERT_NE(n, nullptr) << pl.summary;
      EXPECT_EQ(n->ep, "webgpu");
      EXPECT_EQ(find_node(pl, act), nullptr);
    }
  }
}
