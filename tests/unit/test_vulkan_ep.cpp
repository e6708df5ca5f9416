// The Vulkan EP (module libonyx_ep_vulkan.so) against the CPU EP, on whatever Vulkan device is
// here (Mesa's lavapipe in CI): every kernel family on random inputs with odd sizes and fixed
// seeds under strict placement, copies where Vulkan and CPU nodes alternate, decline reasons,
// options, failed device creation, out of device memory and concurrent runs. Every test skips
// with the reason when no Vulkan device is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include "ep_test_util.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

bool vulkan_usable() {
  static const bool usable = ep::Vulkan().availability().usable;
  return usable;
}

#define REQUIRE_VULKAN()                                                                    \
  do {                                                                                      \
    if (!vulkan_usable()) GTEST_SKIP() << "vulkan: " << ep::Vulkan().availability().reason; \
  } while (0)

std::string model_bytes(const GraphSpec& g, int64_t opset = 17) { return encode_model(g, opset); }

Session vulkan_session(const std::string& m, bool strict = true, ep::Vulkan spec = ep::Vulkan()) {
  return ep_session(m, spec.build(), strict);
}



/// Runs `g` on Vulkan (strict: every node there) and on the CPU EP; compares every output, twice
/// (the second run reuses the planned device buffers and the pooled command stream).
/// The matmul_kernel option check() uses (empty: the default, chosen by device type).
std::string g_matmul_kernel;

void check(const GraphSpec& g, int64_t opset = 17, const Inputs* given = nullptr, double rtol = 1e-4,
           double atol = 1e-5) {
  const std::string m = model_bytes(g, opset);
  ep::Vulkan spec;
  if (!g_matmul_kernel.empty()) spec.set("matmul_kernel", g_matmul_kernel);
  Session vk = vulkan_session(m, true, spec);
  Session cpu = cpu_session(m);
  const Inputs in = given ? *given : random_inputs(g);
  const auto a = vk.run(in);
  const auto b = cpu.run(in);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(close(a[k], b[k], rtol, atol)) << "output " << k;
  const auto c = vk.run(in);
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(close(c[k], b[k], rtol, atol)) << "second run, output " << k;
}

NodeSpec node(std::string op, std::vector<std::string> in, std::vector<std::string> out,
              std::vector<AttrSpec> attrs = {}) {
  return NodeSpec{std::move(op), std::move(in), std::move(out), std::move(attrs), "", ""};
}

/// y = op(x) with one input and one output of the given shapes.
GraphSpec unary_graph(const std::string& op, Shape x, Shape y, std::vector<AttrSpec> attrs = {}) {
  GraphSpec g;
  g.nodes.push_back(node(op, {"x"}, {"y"}, std::move(attrs)));
  g.inputs.push_back({"x", DType::kFloat, x.to_vector()});
  g.outputs.push_back({"y", DType::kFloat, y.to_vector()});
  return g;
}

GraphSpec conv_graph(Shape x, Shape w, bool bias, std::vector<AttrSpec> attrs, Shape y, uint32_t seed = 7) {
  GraphSpec g;
  std::vector<std::string> in{"x", "w"};
  g.initializers.emplace_back("w", random_tensor(w, seed));
  if (bias) {
    g.initializers.emplace_back("b", random_tensor(Shape{w[0]}, seed + 1));
    in.push_back("b");
  }
  g.nodes.push_back(node("Conv", in, {"y"}, std::move(attrs)));
  g.inputs.push_back({"x", DType::kFloat, x.to_vector()});
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

TEST(Vulkan, AvailabilityNamesTheDevice) {
  const ep::Availability a = ep::Vulkan().availability();
  if (!a.built || !a.usable) GTEST_SKIP() << a.reason;  // a build without the module, or no device
  EXPECT_NE(a.version.find(" on "), std::string::npos) << a.version;
  bool listed = false;
  for (const auto& p : ep::list_providers())
    if (p.name == "vulkan") {
      listed = true;
      bool has_device_id = false;
      for (const auto& o : ep::Vulkan().option_schema()) has_device_id |= o.key == "device_id";
      EXPECT_TRUE(has_device_id);
    }
  EXPECT_TRUE(listed);
}

TEST(Vulkan, RegistrationReportsDeviceAndOptions) {
  REQUIRE_VULKAN();
  const std::string m = model_bytes(unary_graph("Relu", {2, 3}, {2, 3}));
  Session s = vulkan_session(m);
  const auto& r = s.registration().front();
  EXPECT_EQ(r.name, "vulkan");
  EXPECT_EQ(r.outcome, EpRegistration::Outcome::kRegistered);
  EXPECT_EQ(r.device.rfind("vulkan:", 0), 0u) << r.device;
  bool seen = false;
  for (const auto& [k, v] : r.options) seen |= k == "device_id" && v == "-1";
  EXPECT_TRUE(seen);
}

TEST(Vulkan, FailedDeviceCreationIsAnErrorOrASkip) {
  REQUIRE_VULKAN();
  const std::string m = model_bytes(unary_graph("Relu", {2, 3}, {2, 3}));
  // A device that does not exist: with error_on_failure, a clear error naming the option...
  try {
    vulkan_session(m, true, ep::Vulkan().with_device_id(99));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device_id"), std::string::npos) << e.what();
  }
  // ...without it, the EP is skipped with the reason and the CPU EP runs the model.
  Session s = Session::builder()
                  .with_no_environment_execution_providers()
                  .with_execution_providers({ep::Vulkan().with_device_id(99).build()})
                  .commit_from_memory(m.data(), m.size());
  EXPECT_EQ(s.registration().front().outcome, EpRegistration::Outcome::kSkipped);
  EXPECT_NE(s.registration().front().reason.find("device_id"), std::string::npos) << s.registration().front().reason;
  EXPECT_EQ(s.placement().nodes.front().ep, "cpu");
}

TEST(Vulkan, Fp16StorageDeclinedHonestly) {
  REQUIRE_VULKAN();
  const std::string m = model_bytes(unary_graph("Relu", {2, 3}, {2, 3}));
  ep::Vulkan spec;
  spec.set("fp16_storage", "true");
  try {
    vulkan_session(m, true, spec);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not supported yet"), std::string::npos) << e.what();
  }
}

TEST(Vulkan, OutOfDeviceMemoryIsAClearError) {
  REQUIRE_VULKAN();
  // 4 MiB per tensor against a 1 MiB budget.
  const std::string m = model_bytes(unary_graph("Relu", {1024, 1024}, {1024, 1024}));
  ep::Vulkan spec;
  spec.set("memory_limit_mb", "1");
  Session s = vulkan_session(m, true, spec);
  try {
    s.run({{"x", random_tensor(Shape{1024, 1024}, 3)}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of device memory"), std::string::npos) << e.what();
  }
  // Within the budget the same session runs.
  const std::string small = model_bytes(unary_graph("Relu", {64, 64}, {64, 64}));
  Session t = vulkan_session(small, true, spec);
  EXPECT_NO_THROW(t.run({{"x", random_tensor(Shape{64, 64}, 3)}}));
}

TEST(Vulkan, ViewsTakeNoDeviceMemory) {
  REQUIRE_VULKAN();
  // Relu -> Reshape -> Relu -> Flatten -> Relu over 4 MiB tensors: the input and the three Relu
  // outputs need 16 MiB; the two views look at their inputs' buffers and need none, so the run
  // fits a 20 MiB budget (with a buffer planned per view it needs 24).
  GraphSpec g;
  g.initializers.emplace_back("s", Tensor::from_vector<int64_t>(Shape{2}, {2048, 512}));
  g.nodes.push_back(node("Relu", {"x"}, {"a"}));
  g.nodes.push_back(node("Reshape", {"a", "s"}, {"b"}));
  g.nodes.push_back(node("Relu", {"b"}, {"c"}));
  g.nodes.push_back(node("Flatten", {"c"}, {"d"}, {attr_int("axis", 0)}));
  g.nodes.push_back(node("Relu", {"d"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {1024, 1024}});
  g.outputs.push_back({"y", DType::kFloat, {1, 1024 * 1024}});
  ep::Vulkan spec;
  spec.set("memory_limit_mb", "20");
  Session s = vulkan_session(model_bytes(g), true, spec);
  const Tensor x = random_tensor(Shape{1024, 1024}, 5);
  const Tensor y = s.run({{"x", x}})[0].tensor();
  ASSERT_EQ(y.numel(), x.numel());
  for (int64_t i = 0; i < x.numel(); i += 4099) ASSERT_EQ(y.data<float>()[i], std::max(x.data<float>()[i], 0.0f)) << i;
}

TEST(Vulkan, BadOptionValueNamesTheKey) {
  REQUIRE_VULKAN();
  const std::string m = model_bytes(unary_graph("Relu", {2, 3}, {2, 3}));
  ep::Vulkan spec;
  spec.set("memory_limit_mb", "lots");
  try {
    vulkan_session(m, true, spec);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("memory_limit_mb"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// Placement, copies, fallback

TEST(Vulkan, AlternatingVulkanAndCpuNodesCopyBothWays) {
  REQUIRE_VULKAN();
  // Relu (vulkan) -> Hardmax (cpu: no kernel) -> Exp (vulkan) -> Hardmax (cpu) -> Tanh (vulkan).
  GraphSpec g;
  g.nodes.push_back(node("Relu", {"x"}, {"a"}));
  g.nodes.push_back(node("Hardmax", {"a"}, {"b"}));
  g.nodes.push_back(node("Exp", {"b"}, {"c"}));
  g.nodes.push_back(node("Hardmax", {"c"}, {"d"}));
  g.nodes.push_back(node("Tanh", {"d"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {3, 7, 5}});
  g.outputs.push_back({"y", DType::kFloat, {3, 7, 5}});
  const std::string m = model_bytes(g);
  Session vk = vulkan_session(m, false);
  const Placement p = vk.placement();
  int on_vk = 0, on_cpu = 0;
  for (const auto& n : p.nodes) {
    if (n.op_type == "Copy") continue;
    (n.ep == "vulkan" ? on_vk : on_cpu)++;
    if (n.op_type == "Hardmax") {
      ASSERT_FALSE(n.declined.empty());
      EXPECT_EQ(n.declined[0].code, "UnsupportedOp");
    }
  }
  EXPECT_EQ(on_vk, 3);
  EXPECT_EQ(on_cpu, 2);
  // in, out of Relu, into Exp, out of Exp, into Tanh, out of Tanh.
  EXPECT_EQ(p.copies.size(), 6u) << p.summary;
  Session cpu = cpu_session(m);
  const Inputs in = random_inputs(g);
  EXPECT_TRUE(close(vk.run(in)[0], cpu.run(in)[0]));
  EXPECT_TRUE(close(vk.run(in)[0], cpu.run(in)[0]));
}

TEST(Vulkan, StrictModeListsDeclinedNodes) {
  REQUIRE_VULKAN();
  GraphSpec g = unary_graph("Hardmax", {4}, {4});
  const std::string m = model_bytes(g);
  try {
    vulkan_session(m, true);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vulkan has no kernel for Hardmax"), std::string::npos) << e.what();
  }
}

TEST(Vulkan, DeclinesNonFloatWithReason) {
  REQUIRE_VULKAN();
  GraphSpec g;
  g.nodes.push_back(node("Add", {"a", "b"}, {"y"}));
  g.inputs.push_back({"a", DType::kInt64, {3}});
  g.inputs.push_back({"b", DType::kInt64, {3}});
  g.outputs.push_back({"y", DType::kInt64, {3}});
  const std::string m = model_bytes(g);
  Session s = vulkan_session(m, false);
  const auto* n = find_node(s.placement(), "Add");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->ep, "cpu");
  ASSERT_FALSE(n->declined.empty());
  EXPECT_EQ(n->declined[0].code, "UnsupportedType");
  EXPECT_NE(n->declined[0].message.find("int64"), std::string::npos) << n->declined[0].message;
}

TEST(Vulkan, ChainCopiesOnlyAtInputsAndOutputs) {
  REQUIRE_VULKAN();
  GraphSpec g = conv_graph({1, 3, 9, 9}, {4, 3, 3, 3}, true, {attr_ints("pads", {1, 1, 1, 1})}, {1, 4, 9, 9});
  g.nodes[0].outputs = {"c"};
  g.nodes.push_back(node("Relu", {"c"}, {"r"}));
  g.initializers.emplace_back("w2", random_tensor(Shape{5, 4, 1, 1}, 9));
  g.nodes.push_back(node("Conv", {"r", "w2"}, {"y"}));
  g.outputs[0] = {"y", DType::kFloat, {1, 5, 9, 9}};
  const std::string m = model_bytes(g);
  Session s = vulkan_session(m);
  const Placement p = s.placement();
  // Weights are uploaded when kernels are prepared: no copies for them.
  ASSERT_EQ(p.copies.size(), 2u) << p.summary;
  EXPECT_EQ(p.copies[0].value, "x");
  EXPECT_EQ(p.copies[1].value, "y");
  for (const auto& n : p.nodes) EXPECT_EQ(n.ep, "vulkan") << n.name;
  check(g);
}

TEST(Vulkan, ShapeOfADeviceValueNeedsNoCopy) {
  REQUIRE_VULKAN();
  // Relu (vulkan) -> Shape (cpu) -> Reshape(Relu output, shape) (vulkan).
  GraphSpec g;
  g.nodes.push_back(node("Relu", {"x"}, {"a"}));
  g.nodes.push_back(node("Shape", {"a"}, {"s"}));
  g.nodes.push_back(node("Reshape", {"a", "s"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 4}});
  g.outputs.push_back({"y", DType::kFloat, {2, 3, 4}});
  const std::string m = model_bytes(g);
  Session s = vulkan_session(m, false);
  EXPECT_EQ(s.placement().copies.size(), 2u) << s.placement().summary;
  const Inputs in = random_inputs(g);
  EXPECT_TRUE(close(s.run(in)[0], cpu_session(m).run(in)[0]));
}

TEST(Vulkan, DynamicBatchDimension) {
  REQUIRE_VULKAN();
  GraphSpec g;
  g.initializers.emplace_back("w", random_tensor(Shape{6, 5}, 4));
  g.nodes.push_back(node("MatMul", {"x", "w"}, {"m"}));
  g.nodes.push_back(node("Relu", {"m"}, {"y"}));
  ValueSpec x{"x", DType::kFloat, {-1, 6}, {"batch", ""}};
  g.inputs.push_back(x);
  g.outputs.push_back(any_out("y"));
  const std::string m = model_bytes(g);
  Session vk = vulkan_session(m);
  Session cpu = cpu_session(m);
  for (int64_t b : {1, 7, 3}) {
    const Inputs in{{"x", random_tensor(Shape{b, 6}, static_cast<uint32_t>(b))}};
    EXPECT_TRUE(close(vk.run(in)[0], cpu.run(in)[0])) << "batch " << b;
  }
}

TEST(Vulkan, ConcurrentRuns) {
  REQUIRE_VULKAN();
  GraphSpec g = conv_graph({1, 4, 12, 10}, {6, 4, 3, 3}, true, {attr_ints("pads", {1, 1, 1, 1})}, {1, 6, 12, 10});
  const std::string m = model_bytes(g);
  Session vk = vulkan_session(m);
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
      for (int r = 0; r < 3; ++r) good &= static_cast<bool>(close(vk.run(ins[t])[0], want[t]));
      ok[t] = good;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
}

// ---------------------------------------------------------------------------------------------
// Kernels against the CPU EP

TEST(Vulkan, Conv2dGemmPath) {
  REQUIRE_VULKAN();
  check(conv_graph({2, 6, 11, 9}, {15, 2, 3, 3}, true,
                   {attr_int("group", 3), attr_ints("pads", {1, 0, 2, 1}), attr_ints("strides", {2, 1})},
                   {2, 15, 6, 9}));
  check(conv_graph({1, 3, 13, 10}, {7, 3, 3, 2}, false,
                   {attr_ints("dilations", {2, 3}), attr_ints("pads", {2, 1, 2, 1})}, {1, 7, 13, 9}));
  check(conv_graph({1, 70, 9, 9}, {67, 70, 1, 1}, true, {}, {1, 67, 9, 9}));
}

TEST(Vulkan, Conv2dAutoPad) {
  REQUIRE_VULKAN();
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(mode);
    const bool valid = std::string(mode) == "VALID";
    check(conv_graph({1, 4, 9, 8}, {5, 4, 4, 3}, true, {attr_string("auto_pad", mode), attr_ints("strides", {2, 2})},
                     valid ? Shape{1, 5, 3, 3} : Shape{1, 5, 5, 4}));
  }
}

TEST(Vulkan, DepthwiseAnd1dConv) {
  REQUIRE_VULKAN();
  check(conv_graph({1, 8, 15, 13}, {8, 1, 3, 3}, true, {attr_int("group", 8), attr_ints("pads", {1, 1, 1, 1})},
                   {1, 8, 15, 13}));
  check(conv_graph({1, 4, 10, 10}, {8, 1, 3, 3}, true, {attr_int("group", 4), attr_ints("strides", {2, 2})},
                   {1, 8, 4, 4}));
  check(conv_graph({2, 3, 17}, {4, 3, 5}, true, {attr_ints("pads", {2, 1}), attr_ints("strides", {2})}, {2, 4, 8}));
}

TEST(Vulkan, ConvWithFusedActivation) {
  REQUIRE_VULKAN();
  for (const char* act : {"Relu", "Clip"}) {
    SCOPED_TRACE(act);
    GraphSpec g = conv_graph({1, 5, 9, 7}, {6, 5, 3, 3}, true, {attr_ints("pads", {1, 1, 1, 1})}, {1, 6, 9, 7});
    g.nodes[0].outputs = {"c"};
    std::vector<std::string> in{"c"};
    if (std::string(act) == "Clip") {
      g.initializers.emplace_back("lo", Tensor::from_vector<float>(Shape{}, {-0.3f}));
      g.initializers.emplace_back("hi", Tensor::from_vector<float>(Shape{}, {0.4f}));
      in = {"c", "lo", "hi"};
    }
    g.nodes.push_back(node(act, in, {"y"}));
    check(g);
  }
}

TEST(Vulkan, MatMulShapes) {
  REQUIRE_VULKAN();
  struct Case {
    Shape a, b, y;
  };
  for (const Case& c : {Case{{37, 70}, {70, 65}, {37, 65}}, Case{{3, 5, 17}, {17, 9}, {3, 5, 9}},
                        Case{{2, 3, 4, 6}, {2, 3, 6, 5}, {2, 3, 4, 5}}, Case{{7}, {7, 3}, {3}}, Case{{4, 7}, {7}, {4}},
                        Case{{6, 1, 33}, {33, 130}, {6, 1, 130}}, Case{{5, 8}, {3, 8, 2}, {3, 5, 2}}}) {
    SCOPED_TRACE(c.a.to_string() + " x " + c.b.to_string());
    GraphSpec g;
    g.nodes.push_back(node("MatMul", {"a", "b"}, {"y"}));
    g.inputs.push_back({"a", DType::kFloat, c.a.to_vector()});
    g.inputs.push_back({"b", DType::kFloat, c.b.to_vector()});
    g.outputs.push_back({"y", DType::kFloat, c.y.to_vector()});
    check(g);
  }
}

TEST(Vulkan, TiledAndSimpleMatrixKernels) {
  REQUIRE_VULKAN();
  // Both matrix-product kernels on this device, whichever the device type would pick.
  for (const char* kernel : {"tiled", "simple"}) {
    SCOPED_TRACE(kernel);
    g_matmul_kernel = kernel;
    check(conv_graph({2, 6, 11, 9}, {15, 2, 3, 3}, true,
                     {attr_int("group", 3), attr_ints("pads", {1, 0, 2, 1}), attr_ints("strides", {2, 1})},
                     {2, 15, 6, 9}));
    check(conv_graph({1, 70, 9, 9}, {67, 70, 1, 1}, true, {}, {1, 67, 9, 9}));
    GraphSpec g;
    g.nodes.push_back(node("MatMul", {"a", "b"}, {"y"}));
    g.inputs.push_back({"a", DType::kFloat, {2, 3, 67, 35}});
    g.inputs.push_back({"b", DType::kFloat, {2, 3, 35, 130}});
    g.outputs.push_back({"y", DType::kFloat, {2, 3, 67, 130}});
    check(g);
    GraphSpec h;
    h.initializers.emplace_back("b", random_tensor(Shape{70, 33}, 5));
    h.initializers.emplace_back("c", random_tensor(Shape{70}, 6));
    h.nodes.push_back(node("Gemm", {"a", "b", "c"}, {"y"}, {attr_int("transA", 1), attr_int("transB", 1)}));
    h.inputs.push_back({"a", DType::kFloat, {33, 65}});
    h.outputs.push_back({"y", DType::kFloat, {65, 70}});
    check(h);
    // Deep K over few output tiles: split-K (partial products summed with the epilogue).
    GraphSpec d = conv_graph({1, 256, 2, 2}, {32, 256, 3, 3}, true, {attr_ints("pads", {1, 1, 1, 1})}, {1, 32, 2, 2});
    d.nodes[0].outputs = {"c"};
    d.nodes.push_back(node("Relu", {"c"}, {"y"}));
    check(d, 17, nullptr, 1e-4, 1e-4);
    GraphSpec k;
    k.initializers.emplace_back("b", random_tensor(Shape{1500, 10}, 5));
    k.initializers.emplace_back("c", random_tensor(Shape{10}, 6));
    k.nodes.push_back(node("Gemm", {"a", "b", "c"}, {"y"}, {attr_float("alpha", 0.5f), attr_float("beta", 2.0f)}));
    k.inputs.push_back({"a", DType::kFloat, {3, 1500}});
    k.outputs.push_back({"y", DType::kFloat, {3, 10}});
    check(k, 17, nullptr, 1e-4, 1e-4);
    GraphSpec b;
    b.nodes.push_back(node("MatMul", {"a", "b"}, {"y"}));
    b.inputs.push_back({"a", DType::kFloat, {4, 5, 600}});
    b.inputs.push_back({"b", DType::kFloat, {4, 600, 7}});
    b.outputs.push_back({"y", DType::kFloat, {4, 5, 7}});
    check(b, 17, nullptr, 1e-4, 1e-4);
  }
  g_matmul_kernel.clear();
}

TEST(Vulkan, GemmTransposesAndBias) {
  REQUIRE_VULKAN();
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const Shape& cs : {Shape{11}, Shape{9, 11}, Shape{9, 1}, Shape{}}) {
        SCOPED_TRACE(std::to_string(ta) + std::to_string(tb) + " C " + cs.to_string());
        GraphSpec g;
        g.initializers.emplace_back("b", random_tensor(tb ? Shape{11, 13} : Shape{13, 11}, 5));
        g.initializers.emplace_back("c", random_tensor(cs, 6));
        g.nodes.push_back(node(
            "Gemm", {"a", "b", "c"}, {"y"},
            {attr_int("transA", ta), attr_int("transB", tb), attr_float("alpha", 0.7f), attr_float("beta", 1.3f)}));
        g.inputs.push_back({"a", DType::kFloat, ta ? std::vector<int64_t>{13, 9} : std::vector<int64_t>{9, 13}});
        g.outputs.push_back({"y", DType::kFloat, {9, 11}});
        check(g);
      }
}

TEST(Vulkan, BroadcastArithmetic) {
  REQUIRE_VULKAN();
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"}) {
    SCOPED_TRACE(op);
    GraphSpec g;
    g.nodes.push_back(node(op, {"a", "b"}, {"y"}));
    g.inputs.push_back({"a", DType::kFloat, {2, 3, 1, 5}});
    g.inputs.push_back({"b", DType::kFloat, {4, 1}});
    g.outputs.push_back({"y", DType::kFloat, {2, 3, 4, 5}});
    Inputs in{{"a", random_tensor(Shape{2, 3, 1, 5}, 1, 0.5f, 2.0f)}, {"b", random_tensor(Shape{4, 1}, 2, 0.5f, 2.0f)}};
    check(g, 17, &in);
  }
  GraphSpec p;
  p.initializers.emplace_back("s", random_tensor(Shape{3, 1, 1}, 4));
  p.nodes.push_back(node("PRelu", {"x", "s"}, {"y"}));
  p.inputs.push_back({"x", DType::kFloat, {2, 3, 4, 5}});
  p.outputs.push_back({"y", DType::kFloat, {2, 3, 4, 5}});
  check(p);
}

TEST(Vulkan, Activations) {
  REQUIRE_VULKAN();
  struct Act {
    const char* op;
    std::vector<AttrSpec> attrs;
    float lo, hi;
  };
  for (const Act& a : {Act{"Relu", {}, -2, 2},        Act{"LeakyRelu", {attr_float("alpha", 0.3f)}, -2, 2},
                       Act{"Sigmoid", {}, -8, 8},     Act{"Tanh", {}, -30, 30},
                       Act{"Exp", {}, -3, 3},         Act{"Log", {}, 0.1f, 5},
                       Act{"Sqrt", {}, 0, 5},         Act{"Neg", {}, -2, 2},
                       Act{"Abs", {}, -2, 2},         Act{"Erf", {}, -3, 3},
                       Act{"HardSigmoid", {}, -4, 4}, Act{"HardSwish", {}, -4, 4},
                       Act{"Elu", {}, -3, 3},         Act{"Selu", {}, -3, 3},
                       Act{"Softplus", {}, -5, 30},   Act{"Reciprocal", {}, 0.5f, 3},
                       Act{"Floor", {}, -3, 3},       Act{"Ceil", {}, -3, 3},
                       Act{"Gelu", {}, -4, 4},        Act{"Softsign", {}, -3, 3},
                       Act{"Celu", {}, -3, 3},        Act{"Sin", {}, -3, 3},
                       Act{"Atan", {}, -3, 3},        Act{"Asin", {}, -0.9f, 0.9f},
                       Act{"Acos", {}, -0.9f, 0.9f},  Act{"Acosh", {}, 1.1f, 4},
                       Act{"Atanh", {}, -0.9f, 0.9f}, Act{"Cosh", {}, -3, 3}}) {
    SCOPED_TRACE(a.op);
    GraphSpec g = unary_graph(a.op, {3, 37}, {3, 37}, a.attrs);
    Inputs in{{"x", random_tensor(Shape{3, 37}, 3, a.lo, a.hi)}};
    check(g, 20, &in, 2e-4, 1e-5);
  }
  GraphSpec clip = unary_graph("Clip", {40}, {40}, {attr_float("min", -0.2f), attr_float("max", 0.5f)});
  check(clip, 6);
}

TEST(Vulkan, Pooling) {
  REQUIRE_VULKAN();
  check(
      unary_graph("MaxPool", {1, 3, 11, 9}, {1, 3, 5, 5},
                  {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {0, 1, 1, 1})}));
  check(
      unary_graph("AveragePool", {2, 2, 10, 10}, {2, 2, 5, 5},
                  {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})}));
  check(unary_graph("AveragePool", {2, 2, 10, 10}, {2, 2, 5, 5},
                    {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1}),
                     attr_int("count_include_pad", 1)}));
  check(unary_graph("MaxPool", {1, 2, 9, 9}, {1, 2, 5, 5},
                    {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)}));
  check(unary_graph("GlobalAveragePool", {2, 5, 7, 9}, {2, 5, 1, 1}));
  check(unary_graph("GlobalMaxPool", {2, 5, 30, 31}, {2, 5, 1, 1}));
}

TEST(Vulkan, BatchNormalization) {
  REQUIRE_VULKAN();
  GraphSpec g;
  g.initializers.emplace_back("s", random_tensor(Shape{5}, 2));
  g.initializers.emplace_back("b", random_tensor(Shape{5}, 3));
  g.initializers.emplace_back("m", random_tensor(Shape{5}, 4));
  g.initializers.emplace_back("v", random_tensor(Shape{5}, 5, 0.5f, 2.0f));
  g.nodes.push_back(node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, {attr_float("epsilon", 1e-3f)}));
  g.inputs.push_back({"x", DType::kFloat, {2, 5, 3, 7}});
  g.outputs.push_back({"y", DType::kFloat, {2, 5, 3, 7}});
  check(g);
}

TEST(Vulkan, SoftmaxAndLayerNorm) {
  REQUIRE_VULKAN();
  check(unary_graph("Softmax", {3, 300}, {3, 300}));
  check(unary_graph("Softmax", {2, 7, 5}, {2, 7, 5}, {attr_int("axis", 1)}));
  check(unary_graph("LogSoftmax", {4, 9}, {4, 9}));
  check(unary_graph("Softmax", {2, 3, 4}, {2, 3, 4}, {attr_int("axis", 1)}), 11);
  GraphSpec g;
  g.initializers.emplace_back("s", random_tensor(Shape{3, 40}, 2));
  g.initializers.emplace_back("b", random_tensor(Shape{3, 40}, 3));
  g.nodes.push_back(node("LayerNormalization", {"x", "s", "b"}, {"y"}, {attr_int("axis", -2)}));
  g.inputs.push_back({"x", DType::kFloat, {5, 3, 40}});
  g.outputs.push_back({"y", DType::kFloat, {5, 3, 40}});
  check(g);
}

TEST(Vulkan, Reductions) {
  REQUIRE_VULKAN();
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceSumSquare", "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    GraphSpec g = unary_graph(op, {3, 4, 5}, {3, 1, 5}, {attr_ints("axes", {1})});
    Inputs in{{"x", random_tensor(Shape{3, 4, 5}, 7, 0.5f, 1.5f)}};
    check(g, 11, &in);
    GraphSpec h = unary_graph(op, {3, 4, 5}, {4}, {attr_ints("axes", {0, 2}), attr_int("keepdims", 0)});
    check(h, 11, &in);
  }
  // Axes as an input (opset 18).
  GraphSpec g;
  g.initializers.emplace_back("axes", Tensor::from_vector<int64_t>(Shape{1}, {-1}));
  g.nodes.push_back(node("ReduceMean", {"x", "axes"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {6, 10}});
  g.outputs.push_back({"y", DType::kFloat, {6, 1}});
  check(g, 18);
}

TEST(Vulkan, DataMovement) {
  REQUIRE_VULKAN();
  check(unary_graph("Transpose", {2, 3, 4, 5}, {5, 2, 4, 3}, {attr_ints("perm", {3, 0, 2, 1})}));
  check(unary_graph("Flatten", {2, 3, 4}, {2, 12}));
  {
    GraphSpec g;
    g.initializers.emplace_back("s", Tensor::from_vector<int64_t>(Shape{3}, {4, -1, 3}));
    g.nodes.push_back(node("Reshape", {"x", "s"}, {"r"}));
    g.nodes.push_back(node("Relu", {"r"}, {"y"}));
    g.inputs.push_back({"x", DType::kFloat, {2, 3, 6}});
    g.outputs.push_back({"y", DType::kFloat, {4, 3, 3}});
    check(g);
  }
  {
    GraphSpec g;
    g.initializers.emplace_back("a", Tensor::from_vector<int64_t>(Shape{2}, {0, 3}));
    g.nodes.push_back(node("Unsqueeze", {"x", "a"}, {"u"}));
    g.nodes.push_back(node("Squeeze", {"u", "a"}, {"y"}));
    g.inputs.push_back({"x", DType::kFloat, {2, 3}});
    g.outputs.push_back({"y", DType::kFloat, {2, 3}});
    check(g);
  }
  {
    GraphSpec g;
    g.nodes.push_back(node("Concat", {"a", "b", "c"}, {"y"}, {attr_int("axis", 1)}));
    g.inputs.push_back({"a", DType::kFloat, {2, 3, 4}});
    g.inputs.push_back({"b", DType::kFloat, {2, 1, 4}});
    g.inputs.push_back({"c", DType::kFloat, {2, 5, 4}});
    g.outputs.push_back({"y", DType::kFloat, {2, 9, 4}});
    check(g);
  }
  {
    GraphSpec g;
    g.initializers.emplace_back("st", Tensor::from_vector<int64_t>(Shape{2}, {1, -1}));
    g.initializers.emplace_back("en", Tensor::from_vector<int64_t>(Shape{2}, {100, -100}));
    g.initializers.emplace_back("ax", Tensor::from_vector<int64_t>(Shape{2}, {0, 2}));
    g.initializers.emplace_back("sp", Tensor::from_vector<int64_t>(Shape{2}, {2, -2}));
    g.nodes.push_back(node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}));
    g.inputs.push_back({"x", DType::kFloat, {5, 3, 7}});
    g.outputs.push_back({"y", DType::kFloat, {2, 3, 4}});
    check(g);
  }
  {
    GraphSpec g;
    g.initializers.emplace_back("sp", Tensor::from_vector<int64_t>(Shape{3}, {2, 1, 4}));
    g.nodes.push_back(node("Split", {"x", "sp"}, {"a", "b", "c"}, {attr_int("axis", 1)}));
    g.inputs.push_back({"x", DType::kFloat, {3, 7, 2}});
    g.outputs.push_back({"a", DType::kFloat, {3, 2, 2}});
    g.outputs.push_back({"b", DType::kFloat, {3, 1, 2}});
    g.outputs.push_back({"c", DType::kFloat, {3, 4, 2}});
    check(g);
    GraphSpec m;
    m.nodes.push_back(node("Mean", {"a", "b"}, {"y"}));
    m.inputs.push_back({"a", DType::kFloat, {3, 4}});
    m.inputs.push_back({"b", DType::kFloat, {4}});
    m.outputs.push_back({"y", DType::kFloat, {3, 4}});
    check(m);
  }
  {
    GraphSpec g;
    g.initializers.emplace_back("s", Tensor::from_vector<int64_t>(Shape{3}, {2, 3, 4}));
    g.nodes.push_back(node("Expand", {"x", "s"}, {"y"}));
    g.inputs.push_back({"x", DType::kFloat, {3, 1}});
    g.outputs.push_back({"y", DType::kFloat, {2, 3, 4}});
    check(g);
  }
}

TEST(Vulkan, GatherAndBadIndex) {
  REQUIRE_VULKAN();
  GraphSpec g;
  g.initializers.emplace_back("t", random_tensor(Shape{10, 6}, 3));
  g.nodes.push_back(node("Gather", {"t", "i"}, {"y"}));
  g.inputs.push_back({"i", DType::kInt64, {2, 3}});
  g.outputs.push_back({"y", DType::kFloat, {2, 3, 6}});
  Inputs in{{"i", Tensor::from_vector<int64_t>(Shape{2, 3}, {0, 9, -1, 4, 4, 2})}};
  check(g, 17, &in);
  const std::string m = model_bytes(g);
  Session s = vulkan_session(m);
  try {
    s.run({{"i", Tensor::from_vector<int64_t>(Shape{2, 3}, {0, 10, 1, 1, 1, 1})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  // Gather along axis 1 of a device value.
  GraphSpec h;
  h.initializers.emplace_back("i", Tensor::from_vector<int64_t>(Shape{2}, {3, 0}));
  h.nodes.push_back(node("Relu", {"x"}, {"r"}));
  h.nodes.push_back(node("Gather", {"r", "i"}, {"y"}, {attr_int("axis", 1)}));
  h.inputs.push_back({"x", DType::kFloat, {3, 5, 2}});
  h.outputs.push_back({"y", DType::kFloat, {3, 2, 2}});
  check(h);
}

TEST(Vulkan, GatherIndicesComputedOnTheDeviceAreChecked) {
  REQUIRE_VULKAN();
  // The indices come from a Cast on the device, so only the shader sees them: a bad one fails the
  // run naming the Gather (as the CPU EP would), and the next run with good indices works.
  GraphSpec g;
  g.initializers.emplace_back("t", random_tensor(Shape{10, 6}, 3));
  g.nodes.push_back(node("Cast", {"x"}, {"i"}, {attr_int("to", static_cast<int64_t>(DType::kInt64))}));
  g.nodes.push_back(node("Gather", {"t", "i"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {4}});
  g.outputs.push_back({"y", DType::kFloat, {4, 6}});
  const Inputs good{{"x", Tensor::from_vector<float>(Shape{4}, {0, 9, -1, 3})}};
  check(g, 17, &good);
  Session s = vulkan_session(model_bytes(g));
  for (float bad : {12.0f, -11.0f, 3e9f}) {
    SCOPED_TRACE(bad);
    try {
      s.run({{"x", Tensor::from_vector<float>(Shape{4}, {0, bad, 1, 1})}});
      FAIL() << "expected an error";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("out of range"), std::string::npos) << what;
      EXPECT_NE(what.find("Gather"), std::string::npos) << what;
    }
    const Tensor y = s.run(good)[0].tensor();
    EXPECT_EQ(y.shape(), (Shape{4, 6}));
  }
}

TEST(Vulkan, ConvTranspose) {
  REQUIRE_VULKAN();
  // Against the CPU EP: strides with output_padding, groups and dilations, 1-D, output_shape.
  struct Case {
    Shape x, w;
    bool bias;
    std::vector<AttrSpec> attrs;
  };
  const Case cases[] = {
      {Shape{1, 4, 5, 5}, Shape{4, 3, 3, 3}, true, {attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1}), attr_ints("output_padding", {1, 0})}},
      {Shape{2, 6, 4, 7}, Shape{6, 2, 2, 3}, false, {attr_int("group", 3), attr_ints("dilations", {2, 1}), attr_ints("strides", {1, 3})}},
      {Shape{1, 3, 9}, Shape{3, 5, 4}, true, {attr_ints("strides", {2}), attr_ints("pads", {1, 2})}},
      {Shape{1, 2, 3, 3}, Shape{2, 2, 3, 3}, true, {attr_ints("strides", {3, 2}), attr_ints("output_shape", {10, 8})}},
  };
  for (const Case& c : cases) {
    GraphSpec g;
    std::vector<std::string> ins{"x", "w"};
    g.initializers.emplace_back("w", random_tensor(c.w, 7));
    if (c.bias) {
      g.initializers.emplace_back("b", random_tensor(Shape{c.w[1]}, 8));  // the cases with a bias have group 1
      ins.push_back("b");
    }
    g.nodes.push_back(node("ConvTranspose", ins, {"y"}, c.attrs));
    g.inputs.push_back({"x", DType::kFloat, std::vector<int64_t>(c.x.begin(), c.x.end())});
    g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
    check(g);
  }
}

TEST(Vulkan, PadEveryMode) {
  REQUIRE_VULKAN();
  // Each mode against the CPU EP, with a crop (negative pad) and, at opset 18, axes.
  struct Case {
    const char* mode;
    std::vector<int64_t> pads;
    int64_t opset;
    std::vector<int64_t> axes;
  };
  const Case cases[] = {{"constant", {0, 1, 2, 1, 0, 3}, 13, {}}, {"reflect", {1, 2, 0, 1, 2, 1}, 13, {}},
                        {"edge", {2, 0, 1, 0, 3, -1}, 13, {}},  {"wrap", {1, 3, 2, 2, 1, 1}, 19, {}},
                        {"constant", {2, -1}, 18, {2}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.mode) + " opset " + std::to_string(c.opset));
    GraphSpec g;
    g.initializers.emplace_back("p", Tensor::from_vector<int64_t>(Shape{static_cast<int64_t>(c.pads.size())}, c.pads));
    g.initializers.emplace_back("v", Tensor::scalar<float>(-2.5f));
    std::vector<std::string> ins{"x", "p", "v"};
    if (!c.axes.empty()) {
      g.initializers.emplace_back("a", Tensor::from_vector<int64_t>(Shape{static_cast<int64_t>(c.axes.size())}, c.axes));
      ins.push_back("a");
    }
    g.nodes.push_back(node("Pad", ins, {"y"}, {attr_string("mode", c.mode)}));
    g.inputs.push_back({"x", DType::kFloat, {3, 4, 5}});
    g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
    check(g, c.opset);
  }
}

TEST(Vulkan, CastAndWhere) {
  REQUIRE_VULKAN();
  {
    GraphSpec g;
    g.nodes.push_back(node("Cast", {"x"}, {"i"}, {attr_int("to", static_cast<int64_t>(DType::kInt64))}));
    g.nodes.push_back(node("Cast", {"i"}, {"y"}, {attr_int("to", static_cast<int64_t>(DType::kFloat))}));
    g.inputs.push_back({"x", DType::kFloat, {3, 7}});
    g.outputs.push_back({"y", DType::kFloat, {3, 7}});
    Inputs in{{"x", random_tensor(Shape{3, 7}, 3, -50, 50)}};
    check(g, 17, &in);
  }
  {
    GraphSpec g;
    g.nodes.push_back(node("Cast", {"x"}, {"c"}, {attr_int("to", static_cast<int64_t>(DType::kBool))}));
    g.nodes.push_back(node("Where", {"c", "a", "b"}, {"y"}));
    g.inputs.push_back({"x", DType::kFloat, {2, 1, 5}});
    g.inputs.push_back({"a", DType::kFloat, {3, 5}});
    g.inputs.push_back({"b", DType::kFloat, {2, 3, 1}});
    g.outputs.push_back({"y", DType::kFloat, {2, 3, 5}});
    Inputs in{{"x", Tensor::from_vector<float>(Shape{2, 1, 5}, {0, 1, 0, 2, 0, 0, 0, 3, 3, 0})},
              {"a", random_tensor(Shape{3, 5}, 4)},
              {"b", random_tensor(Shape{2, 3, 1}, 5)}};
    check(g, 17, &in);
  }
}
