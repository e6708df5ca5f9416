// The Vulkan EP (module libonyx_ep_vulkan.so) against the CPU EP, on whatever Vulkan device is
// here (Mesa's lavapipe in CI): every kernel family on random inputs with odd sizes and fixed
// seeds under strict placement, copies where Vulkan and CPU nodes alternate, decline reasons,
// options, failed device creation, out of device memory and concurrent runs. Every test skips
// with the reason when no Vulkan device is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
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

TEST(Vulkan, Fp16StorageRegistersAndBadValueNamesTheKey) {
  REQUIRE_VULKAN();
  const std::string m = model_bytes(unary_graph("Relu", {2, 3}, {2, 3}));
  ep::Vulkan spec;
  spec.set("fp16_storage", "true");
  Session s = vulkan_session(m, true, spec);
  const auto& r = s.registration().front();
  EXPECT_EQ(r.outcome, EpRegistration::Outcome::kRegistered) << r.reason;
  bool seen = false;
  for (const auto& [k, v] : r.options) seen |= k == "fp16_storage" && v == "true";
  EXPECT_TRUE(seen);
  ep::Vulkan bad;
  bad.set("fp16_storage", "half");
  try {
    vulkan_session(m, true, bad);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fp16_storage"), std::string::npos) << e.what();
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

// ---------------------------------------------------------------------------------------------
// float16: float16 models (float16 storage, float32 arithmetic), the two storage paths, and
// fp16_storage for float32 models

namespace {

Tensor to_f16(const Tensor& t) {
  std::vector<Float16> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.emplace_back(static_cast<float>(t.element_as_double(i)));
  return Tensor::from_vector<Float16>(t.shape(), v);
}

/// `g` with every float32 tensor (inputs, outputs, initializers) float16.
GraphSpec as_f16(GraphSpec g) {
  for (auto* vs : {&g.inputs, &g.outputs})
    for (ValueSpec& v : *vs)
      if (v.dtype == DType::kFloat) v.dtype = DType::kFloat16;
  for (auto& [name, t] : g.initializers)
    if (t.dtype() == DType::kFloat) t = to_f16(t);
  return g;
}

/// Inputs for `g`'s float16 inputs: random in [lo, hi), rounded to float16.
Inputs half_inputs(const GraphSpec& g, uint32_t seed = 1, float lo = -1.0f, float hi = 1.0f) {
  Inputs in;
  for (const auto& v : g.inputs) in.emplace_back(v.name, to_f16(random_tensor(Shape(v.dims), seed++, lo, hi)));
  return in;
}

/// Spacing of float16 values at |v|: 2^(e - 10) for a normal value of exponent e, 2^-24 below.
double half_ulp(double v) {
  const double a = std::fabs(v);
  if (a < 6.103515625e-05) return 5.9604644775390625e-08;
  return std::ldexp(1.0, std::ilogb(a) - 10);
}

/// Every element within `ulps` float16 spacings of `want` plus `slack` times the largest |want|
/// (NaN matches NaN); same shape and type.
::testing::AssertionResult within_ulps(const Value& got, const Value& want, double ulps, double slack = 0) {
  const Tensor& a = got.tensor();
  const Tensor& b = want.tensor();
  if (!(a.shape() == b.shape()))
    return ::testing::AssertionFailure() << "shape " << a.shape().to_string() << " vs " << b.shape().to_string();
  if (a.dtype() != b.dtype()) return ::testing::AssertionFailure() << "dtype differs";
  double mx = 0;
  for (int64_t i = 0; i < b.numel(); ++i) mx = std::max(mx, std::fabs(b.element_as_double(i)));
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.element_as_double(i), y = b.element_as_double(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (!(std::fabs(x - y) <= ulps * half_ulp(y) + slack * mx))
      return ::testing::AssertionFailure() << "element " << i << ": " << x << " vs " << y << " ("
                                           << std::fabs(x - y) / half_ulp(y) << " float16 spacings)";
  }
  return ::testing::AssertionSuccess();
}

/// max |got - want| / max |want|.
double rel_max(const Value& got, const Value& want) {
  const Tensor& a = got.tensor();
  const Tensor& b = want.tensor();
  EXPECT_EQ(a.shape(), b.shape());
  double d = 0, m = 0;
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i) {
    d = std::max(d, std::fabs(a.element_as_double(i) - b.element_as_double(i)));
    m = std::max(m, std::fabs(b.element_as_double(i)));
  }
  return m > 0 ? d / m : d;
}

bool same_bits(const Value& a, const Value& b) {
  const Tensor& x = a.tensor();
  const Tensor& y = b.tensor();
  return x.dtype() == y.dtype() && x.shape() == y.shape() && std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

/// While alive, float16 tensors use the packed shaders (two values per 32-bit word, written with
/// atomics) even on a device with 16-bit storage: sessions made meanwhile open their own device.
struct PackedHalves {
  PackedHalves() { setenv("ONYX_VULKAN_FP16_PACKED", "1", 1); }
  ~PackedHalves() { unsetenv("ONYX_VULKAN_FP16_PACKED"); }
  PackedHalves(const PackedHalves&) = delete;
  PackedHalves& operator=(const PackedHalves&) = delete;
};

/// Keeps the two devices check_half() uses open (with the pipelines they compiled) from one check
/// to the next: a device closes when its last session goes.
void keep_half_devices_open() {
  static const std::string m = model_bytes(unary_graph("Relu", {1}, {1}));
  static Session plain = vulkan_session(m);
  static Session packed = [] {
    PackedHalves guard;
    return vulkan_session(m);
  }();
}

/// `f32` in float16 on vulkan (strict: every node there, none given a float32 form) against the
/// CPU EP, which runs float16 nodes in float32 (half_in_float) and rounds once where the region
/// ends. A single op computes the same float32 value on both sides up to the order of its sums and
/// its transcendental functions, and both round it once to float16: `ulps` is 1 for single ops
/// (adjacent float16 values where the two float32 results straddle a rounding point), `slack` a
/// fraction of the largest output for float32 cancellation in sums. Runs with both float16 paths
/// (16-bit storage where the device has it, and packed), which must agree bit for bit, and twice
/// each (the second run reuses the planned buffers).
void check_half(const GraphSpec& f32, int64_t opset = 17, double ulps = 1, double slack = 1e-6,
                const Inputs* given = nullptr) {
  keep_half_devices_open();
  const GraphSpec g = as_f16(f32);
  const std::string m = model_bytes(g, opset);
  const Inputs in = given ? *given : half_inputs(g);
  const auto want = cpu_session(m).run(in);
  std::vector<Value> first;
  for (bool packed : {false, true}) {
    SCOPED_TRACE(packed ? "packed float16" : "float16 storage");
    std::unique_ptr<PackedHalves> guard;
    if (packed) guard = std::make_unique<PackedHalves>();
    Session vk = vulkan_session(m);
    // Every node as written: none given a float32 form between Casts by the CPU EP's half_in_float
    // (which would leave strict placement intact, vulkan taking the float32 forms).
    size_t casts = 0, model_casts = 0;
    for (const auto& n : vk.placement().nodes) casts += n.op_type == "Cast";
    for (const auto& n : g.nodes) model_casts += n.op == "Cast";
    EXPECT_EQ(casts, model_casts) << vk.placement().summary;
    for (int run = 0; run < 2; ++run) {
      const auto got = vk.run(in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_EQ(got[k].tensor().dtype(), DType::kFloat16) << "output " << k;
        EXPECT_TRUE(within_ulps(got[k], want[k], ulps, slack)) << "output " << k << ", run " << run;
        if (!packed && run == 0) first.push_back(got[k]);
        if (packed) {
          EXPECT_TRUE(same_bits(got[k], first[k])) << "output " << k << ": the two paths differ";
        }
      }
    }
  }
}

NodeSpec cast_node(const std::string& x, const std::string& y, DType to) {
  return node("Cast", {x}, {y}, {attr_int("to", static_cast<int64_t>(to))});
}

}  // namespace

TEST(Vulkan, Float16CastsAreExact) {
  REQUIRE_VULKAN();
  // float32 -> float16 on the device rounds to nearest even as the CPU EP does: ties at several
  // exponents, denormal results, the largest half, the first values that overflow, 2^-25 (a tie
  // that rounds to zero) and just above it, infinities, NaN, -0.
  std::vector<float> v{0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e9f, 3e-5f, -3e-5f,
                       5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f, 1e-10f, 6.1035156e-05f, 6.1035152e-05f,
                       std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                       std::numeric_limits<float>::quiet_NaN()};
  for (int e = -24; e <= 15; e += 3) {  // exact ties between two halves, odd and even
    const float step = std::ldexp(1.0f, e - 10);
    for (int k = 1025; k <= 1029; ++k) v.push_back(std::ldexp(static_cast<float>(k), e - 10) + 0.5f * step);
  }
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-70000.0f, 70000.0f);
  for (int k = 0; k < 300; ++k) v.push_back(d(rng));
  const int64_t n = static_cast<int64_t>(v.size());
  GraphSpec g;
  g.nodes.push_back(cast_node("x", "h", DType::kFloat16));
  g.nodes.push_back(cast_node("h", "back", DType::kFloat));
  g.nodes.push_back(cast_node("h", "i", DType::kInt32));
  g.nodes.push_back(cast_node("h", "l", DType::kInt64));
  g.nodes.push_back(cast_node("h", "b", DType::kBool));
  g.nodes.push_back(cast_node("i", "hi", DType::kFloat16));
  g.nodes.push_back(cast_node("b", "hb", DType::kFloat16));
  g.inputs.push_back({"x", DType::kFloat, {n}});
  g.outputs.push_back(any_out("h", DType::kFloat16));
  g.outputs.push_back(any_out("back", DType::kFloat));
  g.outputs.push_back(any_out("hi", DType::kFloat16));
  g.outputs.push_back(any_out("hb", DType::kFloat16));
  g.outputs.push_back(any_out("l", DType::kInt64));
  g.outputs.push_back(any_out("b", DType::kBool));
  const std::string m = model_bytes(g);
  const Inputs in{{"x", Tensor::from_vector<float>(Shape{n}, v)}};
  // The integer casts of infinities, NaN and values past int32 are undefined: a second run with
  // those replaced compares every output.
  std::vector<float> finite = v;
  for (float& f : finite)
    if (!std::isfinite(f) || std::fabs(f) > 65504.0f) f = 7.0f;
  const Inputs fin{{"x", Tensor::from_vector<float>(Shape{n}, finite)}};
  const auto want = cpu_session(m).run(in);
  const auto want_fin = cpu_session(m).run(fin);
  for (bool packed : {false, true}) {
    SCOPED_TRACE(packed ? "packed float16" : "float16 storage");
    std::unique_ptr<PackedHalves> guard;
    if (packed) guard = std::make_unique<PackedHalves>();
    Session vk = vulkan_session(m);
    const auto got = vk.run(in);
    for (size_t k = 0; k < 2; ++k) {  // h, back: every value
      ASSERT_EQ(got[k].tensor().nbytes(), want[k].tensor().nbytes());
      const Tensor& a = got[k].tensor();
      const Tensor& b = want[k].tensor();
      for (int64_t i = 0; i < n; ++i) {
        const double x = a.element_as_double(i), y = b.element_as_double(i);
        if (std::isnan(x) && std::isnan(y)) continue;
        EXPECT_TRUE(x == y && std::signbit(x) == std::signbit(y))
            << "output " << k << " element " << i << " (" << v[i] << "): " << x << " vs " << y;
      }
    }
    const auto got_fin = vk.run(fin);
    for (size_t k = 0; k < got_fin.size(); ++k) EXPECT_TRUE(same_bits(got_fin[k], want_fin[k])) << "output " << k;
  }
  // Every float16 bit pattern back to float32, exactly (denormals, infinities, NaNs included).
  std::vector<Float16> all(65536);
  for (uint32_t b = 0; b < 65536; ++b) all[b].bits = static_cast<uint16_t>(b);
  GraphSpec h;
  h.nodes.push_back(cast_node("x", "y", DType::kFloat));
  h.inputs.push_back({"x", DType::kFloat16, {65536}});
  h.outputs.push_back({"y", DType::kFloat, {65536}});
  const std::string hm = model_bytes(h);
  const Inputs hin{{"x", Tensor::from_vector<Float16>(Shape{65536}, all)}};
  const Tensor a = vulkan_session(hm).run(hin)[0].tensor();
  const Tensor b = cpu_session(hm).run(hin)[0].tensor();
  for (int64_t i = 0; i < 65536; ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    ASSERT_TRUE(std::memcmp(&x, &y, 4) == 0) << "bits " << i << ": " << x << " vs " << y;
  }
}

TEST(Vulkan, Float16ElementwiseOps) {
  REQUIRE_VULKAN();
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Erf", "HardSwish", "Neg", "Softsign", "Sin"}) {
    SCOPED_TRACE(op);
    check_half(unary_graph(op, {3, 37}, {3, 37}), 17);
  }
  check_half(unary_graph("Gelu", {5, 9}, {5, 9}, {attr_string("approximate", "tanh")}), 20);
  {
    GraphSpec g = unary_graph("Clip", {41}, {41});  // float16 bounds, as constants
    g.initializers.emplace_back("lo", Tensor::scalar<float>(-0.25f));
    g.initializers.emplace_back("hi", Tensor::scalar<float>(0.5f));
    g.nodes[0].inputs = {"x", "lo", "hi"};
    check_half(g);
  }
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu", "Mean"}) {
    SCOPED_TRACE(op);
    GraphSpec g;
    g.nodes.push_back(node(op, {"a", "b"}, {"y"}));
    g.inputs.push_back({"a", DType::kFloat, {2, 3, 5}});
    g.inputs.push_back({"b", DType::kFloat, {3, 1}});
    g.outputs.push_back({"y", DType::kFloat, {2, 3, 5}});
    const GraphSpec h = as_f16(g);
    const Inputs in = half_inputs(h, 3, 0.25f, 2.0f);  // positive bases for Pow
    check_half(g, 17, 1, 1e-6, &in);
  }
  {
    GraphSpec g;  // Where with a bool condition from a float16 comparison's stand-in: Cast to bool
    g.nodes.push_back(cast_node("c", "cb", DType::kBool));
    g.nodes.push_back(node("Where", {"cb", "a", "b"}, {"y"}));
    g.inputs.push_back({"c", DType::kFloat, {2, 1, 5}});
    g.inputs.push_back({"a", DType::kFloat, {3, 5}});
    g.inputs.push_back({"b", DType::kFloat, {2, 3, 1}});
    g.outputs.push_back({"y", DType::kFloat, {2, 3, 5}});
    const GraphSpec h = as_f16(g);
    Inputs in = half_inputs(h, 4);
    in[0].second = to_f16(Tensor::from_vector<float>(Shape{2, 1, 5}, {0, 1, 0, 2, 0, 0, 0, 3, 3, 0}));
    check_half(g, 17, 0, 0, &in);  // selection is exact
  }
}

TEST(Vulkan, Float16MatrixAndConvOps) {
  REQUIRE_VULKAN();
  // Sums of float16 products in float32: one rounding at the end on both sides, up to the order
  // of the float32 sums (slack 1e-6 of the largest output).
  check_half(conv_graph({2, 6, 11, 9}, {15, 2, 3, 3}, true,
                        {attr_int("group", 3), attr_ints("pads", {1, 0, 2, 1}), attr_ints("strides", {2, 1})},
                        {2, 15, 6, 9}));
  check_half(conv_graph({1, 8, 15, 13}, {8, 1, 3, 3}, true, {attr_int("group", 8), attr_ints("pads", {1, 1, 1, 1})},
                        {1, 8, 15, 13}));  // depthwise: the direct kernel
  {
    GraphSpec g = conv_graph({1, 3, 9, 9}, {4, 3, 3, 3}, true, {attr_ints("pads", {1, 1, 1, 1})}, {1, 4, 9, 9});
    g.nodes[0].outputs = {"c"};
    g.nodes.push_back(node("Relu", {"c"}, {"y"}));  // fused by the optimizer into onyx::FusedConv
    check_half(g);
  }
  {
    GraphSpec g;
    g.initializers.emplace_back("w", random_tensor(Shape{4, 3, 3, 3}, 7));
    g.nodes.push_back(node("ConvTranspose", {"x", "w"}, {"y"}, {attr_ints("strides", {2, 2})}));
    g.inputs.push_back({"x", DType::kFloat, {1, 4, 5, 5}});
    g.outputs.push_back({"y", DType::kFloat, {1, 3, 11, 11}});
    check_half(g);
  }
  for (const auto& [as, bs, ys] : {std::tuple<Shape, Shape, Shape>{{7, 37}, {37, 29}, {7, 29}},
                                   {{2, 3, 5, 6}, {2, 3, 6, 4}, {2, 3, 5, 4}},
                                   {{4, 1024}, {1024, 8}, {4, 8}}}) {  // the last one splits K
    SCOPED_TRACE(as.to_string() + " x " + bs.to_string());
    GraphSpec g;
    g.nodes.push_back(node("MatMul", {"a", "b"}, {"y"}));
    g.inputs.push_back({"a", DType::kFloat, as.to_vector()});
    g.inputs.push_back({"b", DType::kFloat, bs.to_vector()});
    g.outputs.push_back({"y", DType::kFloat, ys.to_vector()});
    check_half(g);
  }
  {
    GraphSpec g;
    g.initializers.emplace_back("b", random_tensor(Shape{6, 5}, 4));
    g.initializers.emplace_back("c", random_tensor(Shape{6}, 5));
    g.nodes.push_back(node("Gemm", {"a", "b", "c"}, {"y"},
                           {attr_int("transB", 1), attr_float("alpha", 0.5f), attr_float("beta", 2.0f)}));
    g.inputs.push_back({"a", DType::kFloat, {3, 5}});
    g.outputs.push_back({"y", DType::kFloat, {3, 6}});
    check_half(g);
  }
}

TEST(Vulkan, Float16NormalisationPoolingReductions) {
  REQUIRE_VULKAN();
  check_half(unary_graph("MaxPool", {1, 3, 11, 9}, {1, 3, 5, 5},
                         {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}),
                          attr_ints("pads", {0, 1, 1, 1})}));
  check_half(unary_graph("AveragePool", {2, 2, 10, 10}, {2, 2, 5, 5},
                         {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}),
                          attr_ints("pads", {1, 1, 1, 1})}));
  check_half(unary_graph("GlobalAveragePool", {2, 5, 7, 9}, {2, 5, 1, 1}));
  check_half(unary_graph("GlobalMaxPool", {2, 5, 30, 31}, {2, 5, 1, 1}));
  check_half(unary_graph("Softmax", {3, 300}, {3, 300}));
  check_half(unary_graph("LogSoftmax", {2, 7, 5}, {2, 7, 5}, {attr_int("axis", 1)}));
  {
    GraphSpec g;  // BatchNormalization with float16 statistics (folded in float32 on the host)
    g.initializers.emplace_back("s", random_tensor(Shape{5}, 2));
    g.initializers.emplace_back("b", random_tensor(Shape{5}, 3));
    g.initializers.emplace_back("m", random_tensor(Shape{5}, 4));
    g.initializers.emplace_back("v", random_tensor(Shape{5}, 5, 0.5f, 2.0f));
    g.nodes.push_back(node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}));
    g.inputs.push_back({"x", DType::kFloat, {2, 5, 3, 7}});
    g.outputs.push_back({"y", DType::kFloat, {2, 5, 3, 7}});
    check_half(g);
  }
  {
    GraphSpec g;
    g.initializers.emplace_back("s", random_tensor(Shape{40}, 2));
    g.initializers.emplace_back("b", random_tensor(Shape{40}, 3));
    g.nodes.push_back(node("LayerNormalization", {"x", "s", "b"}, {"y"}, {attr_int("axis", -1)}));
    g.inputs.push_back({"x", DType::kFloat, {5, 3, 40}});
    g.outputs.push_back({"y", DType::kFloat, {5, 3, 40}});
    check_half(g);
  }
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    check_half(unary_graph(op, {3, 4, 5}, {3, 1, 5}, {attr_ints("axes", {1})}), 11);
  }
}

TEST(Vulkan, Float16DataMovement) {
  REQUIRE_VULKAN();
  // Copies of 16-bit elements, exact (0 spacings). Odd sizes put two tensors' elements in one
  // 32-bit word, which the packed path writes with atomics.
  check_half(unary_graph("Transpose", {2, 3, 5, 7}, {7, 2, 5, 3}, {attr_ints("perm", {3, 0, 2, 1})}), 17, 0, 0);
  {
    GraphSpec g;
    g.nodes.push_back(node("Concat", {"a", "b", "c"}, {"y"}, {attr_int("axis", 1)}));
    g.inputs.push_back({"a", DType::kFloat, {2, 3, 5}});
    g.inputs.push_back({"b", DType::kFloat, {2, 1, 5}});
    g.inputs.push_back({"c", DType::kFloat, {2, 5, 5}});
    g.outputs.push_back({"y", DType::kFloat, {2, 9, 5}});
    check_half(g, 17, 0, 0);
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
    check_half(g, 17, 0, 0);
  }
  {
    GraphSpec g;
    g.initializers.emplace_back("sp", Tensor::from_vector<int64_t>(Shape{3}, {2, 1, 4}));
    g.nodes.push_back(node("Split", {"x", "sp"}, {"a", "b", "c"}, {attr_int("axis", 1)}));
    g.inputs.push_back({"x", DType::kFloat, {3, 7, 3}});
    g.outputs.push_back({"a", DType::kFloat, {3, 2, 3}});
    g.outputs.push_back({"b", DType::kFloat, {3, 1, 3}});
    g.outputs.push_back({"c", DType::kFloat, {3, 4, 3}});
    check_half(g, 17, 0, 0);
  }
  {
    GraphSpec g;
    g.initializers.emplace_back("s", Tensor::from_vector<int64_t>(Shape{3}, {3, 3, 5}));
    g.nodes.push_back(node("Expand", {"x", "s"}, {"y"}));
    g.inputs.push_back({"x", DType::kFloat, {3, 1}});
    g.outputs.push_back({"y", DType::kFloat, {3, 3, 5}});
    check_half(g, 17, 0, 0);
  }
  {
    GraphSpec g;  // Gather from a constant table (an embedding), uploaded as float16
    g.initializers.emplace_back("t", random_tensor(Shape{11, 5}, 3));
    g.nodes.push_back(node("Gather", {"t", "i"}, {"y"}));
    g.inputs.push_back({"i", DType::kInt64, {7}});
    g.outputs.push_back({"y", DType::kFloat, {7, 5}});
    const Inputs in{{"i", Tensor::from_vector<int64_t>(Shape{7}, {0, 10, -1, 4, 3, 3, 9})}};
    check_half(g, 17, 0, 0, &in);
  }
  {
    GraphSpec g;  // Pad: the constant written as float16 bits
    g.initializers.emplace_back("p", Tensor::from_vector<int64_t>(Shape{6}, {0, 1, 2, 1, 0, 3}));
    g.initializers.emplace_back("v", Tensor::scalar<float>(-2.5f));
    g.nodes.push_back(node("Pad", {"x", "p", "v"}, {"y"}, {attr_string("mode", "constant")}));
    g.inputs.push_back({"x", DType::kFloat, {3, 4, 5}});
    g.outputs.push_back({"y", DType::kFloat, {4, 5, 10}});
    check_half(g, 13, 0, 0);
    GraphSpec r = g;
    r.nodes[0].attrs = {attr_string("mode", "reflect")};
    r.initializers[0].second = Tensor::from_vector<int64_t>(Shape{6}, {1, 2, 0, 1, 1, 2});
    r.outputs[0].dims = {5, 7, 7};
    check_half(r, 13, 0, 0);
  }
}

namespace {

/// A small CNN: Conv + Relu (fused), MaxPool, a residual block with BatchNormalization, global
/// pooling and a Gemm classifier.
GraphSpec small_cnn() {
  GraphSpec g;
  g.initializers.emplace_back("w1", random_tensor(Shape{8, 3, 3, 3}, 31));
  g.initializers.emplace_back("b1", random_tensor(Shape{8}, 32));
  g.initializers.emplace_back("w2", random_tensor(Shape{8, 8, 3, 3}, 33, -0.3f, 0.3f));
  for (const char* n : {"s", "sh", "m"}) g.initializers.emplace_back(n, random_tensor(Shape{8}, 34));
  g.initializers.emplace_back("v", random_tensor(Shape{8}, 35, 0.5f, 2.0f));
  g.initializers.emplace_back("dw", random_tensor(Shape{8, 1, 3, 3}, 36));
  g.initializers.emplace_back("fw", random_tensor(Shape{5, 8}, 37));
  g.initializers.emplace_back("fb", random_tensor(Shape{5}, 38));
  g.nodes.push_back(
      node("Conv", {"x", "w1", "b1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}));
  g.nodes.push_back(node("Relu", {"c1"}, {"r1"}));
  g.nodes.push_back(node("MaxPool", {"r1"}, {"p"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}));
  g.nodes.push_back(node("Conv", {"p", "w2"}, {"c2"}, {attr_ints("pads", {1, 1, 1, 1})}));
  g.nodes.push_back(node("BatchNormalization", {"c2", "s", "sh", "m", "v"}, {"bn"}));
  g.nodes.push_back(node("Conv", {"bn", "dw"}, {"d"}, {attr_int("group", 8), attr_ints("pads", {1, 1, 1, 1})}));
  g.nodes.push_back(node("Add", {"d", "p"}, {"sum"}));
  g.nodes.push_back(node("Sigmoid", {"sum"}, {"sg"}));
  g.nodes.push_back(node("GlobalAveragePool", {"sg"}, {"gap"}));
  g.nodes.push_back(node("Flatten", {"gap"}, {"f"}));
  g.nodes.push_back(node("Gemm", {"f", "fw", "fb"}, {"y"}, {attr_int("transB", 1)}));
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 20, 18}});
  g.outputs.push_back({"y", DType::kFloat, {2, 5}});
  g.outputs.push_back({"sg", DType::kFloat, {2, 8, 5, 5}});
  return g;
}

/// A small encoder block: MatMul + bias, GELU (Erf), attention scores with Softmax, a residual
/// sum and LayerNormalization, with a Gather from a constant table, Concat and Transpose.
GraphSpec small_encoder() {
  GraphSpec g;
  g.initializers.emplace_back("w", random_tensor(Shape{16, 16}, 51, -0.5f, 0.5f));
  g.initializers.emplace_back("bias", random_tensor(Shape{16}, 52));
  g.initializers.emplace_back("gamma", random_tensor(Shape{16}, 53, 0.5f, 1.5f));
  g.initializers.emplace_back("beta", random_tensor(Shape{16}, 54));
  g.initializers.emplace_back("table", random_tensor(Shape{10, 16}, 55));
  g.initializers.emplace_back("half", Tensor::scalar<float>(0.5f));
  g.initializers.emplace_back("rsqrt2", Tensor::scalar<float>(0.70710678f));
  g.initializers.emplace_back("one", Tensor::scalar<float>(1.0f));
  g.nodes.push_back(node("Gather", {"table", "ids"}, {"emb"}));
  g.nodes.push_back(node("Add", {"x", "emb"}, {"xe"}));
  g.nodes.push_back(node("MatMul", {"xe", "w"}, {"m"}));
  g.nodes.push_back(node("Add", {"m", "bias"}, {"mb"}));
  g.nodes.push_back(node("Mul", {"mb", "rsqrt2"}, {"g1"}));
  g.nodes.push_back(node("Erf", {"g1"}, {"g2"}));
  g.nodes.push_back(node("Add", {"g2", "one"}, {"g3"}));
  g.nodes.push_back(node("Mul", {"mb", "g3"}, {"g4"}));
  g.nodes.push_back(node("Mul", {"g4", "half"}, {"ge"}));
  g.nodes.push_back(node("Transpose", {"ge"}, {"t"}, {attr_ints("perm", {0, 2, 1})}));
  g.nodes.push_back(node("MatMul", {"ge", "t"}, {"scores"}));
  g.nodes.push_back(node("Softmax", {"scores"}, {"sm"}, {attr_int("axis", -1)}));
  g.nodes.push_back(node("MatMul", {"sm", "xe"}, {"ctx"}));
  g.nodes.push_back(node("Add", {"ctx", "xe"}, {"res"}));
  g.nodes.push_back(node("LayerNormalization", {"res", "gamma", "beta"}, {"ln"}, {attr_int("axis", -1)}));
  g.nodes.push_back(node("Concat", {"ln", "sm"}, {"y"}, {attr_int("axis", 2)}));
  g.inputs.push_back({"x", DType::kFloat, {2, 7, 16}});
  g.inputs.push_back({"ids", DType::kInt64, {2, 7}});
  g.outputs.push_back({"y", DType::kFloat, {2, 7, 23}});
  return g;
}

/// Whether every element of a float32 tensor is a float16 value (what fp16_storage stores).
::testing::AssertionResult all_half_values(const Value& v) {
  const Tensor& t = v.tensor();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float x = t.data<float>()[i];
    if (!std::isnan(x) && static_cast<float>(Float16(x)) != x)
      return ::testing::AssertionFailure() << "element " << i << " (" << x << ") is not a float16 value";
  }
  return ::testing::AssertionSuccess();
}

Session fp16_storage_session(const std::string& m, bool strict = true) {
  ep::Vulkan spec;
  spec.set("fp16_storage", "true");
  return vulkan_session(m, strict, spec);
}

}  // namespace

TEST(Vulkan, Fp16StorageOnFloat32Models) {
  REQUIRE_VULKAN();
  // float32 models with fp16_storage=true against the CPU EP in float32. Every value the EP
  // stores (inputs, weights, each node's output) is rounded to float16, relative error <= 2^-11
  // (4.9e-4) each; through these few layers the outputs stay within 4e-3 of the largest value
  // (measured on lavapipe: see docs/vulkan.md). Each output is a float16 value converted to float32
  // (it was stored as float16), and the result is not the float32 one.
  const Inputs enc_in{{"x", random_tensor(Shape{2, 7, 16}, 3)},
                      {"ids", Tensor::from_vector<int64_t>(Shape{2, 7}, {0, 9, 3, 3, 1, 5, 7, 2, 8, 6, 4, 0, 1, 9})}};
  const GraphSpec cnn = small_cnn();
  const GraphSpec enc = small_encoder();
  for (const auto& [g, in] : {std::pair<const GraphSpec*, Inputs>{&cnn, random_inputs(cnn, 3)}, {&enc, enc_in}}) {
    const std::string m = model_bytes(*g);
    const auto want = cpu_session(m).run(in);
    const auto f32 = vulkan_session(m).run(in);
    std::vector<Value> first;
    for (bool packed : {false, true}) {
      SCOPED_TRACE(std::string(g == &cnn ? "cnn" : "encoder") + (packed ? ", packed float16" : ", float16 storage"));
      std::unique_ptr<PackedHalves> guard;
      if (packed) guard = std::make_unique<PackedHalves>();
      Session s = fp16_storage_session(m);
      const auto got = s.run(in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_EQ(got[k].tensor().dtype(), DType::kFloat);
        const double err = rel_max(got[k], want[k]);
        EXPECT_LE(err, 4e-3) << "output " << k;
        EXPECT_GT(rel_max(got[k], f32[k]), 0.0) << "output " << k << " is the float32 result";
        EXPECT_TRUE(all_half_values(got[k])) << "output " << k;
        if (!packed) first.push_back(got[k]);
        if (packed) {
          EXPECT_TRUE(same_bits(got[k], first[k])) << "output " << k << ": the two paths differ";
        }
        std::printf("[ fp16_storage ] %s, %s: output %zu max |diff| / max |want| = %.3g\n",
                    g == &cnn ? "cnn" : "encoder", packed ? "packed" : "16-bit storage", k, err);
      }
      EXPECT_TRUE(same_bits(s.run(in)[0], got[0])) << "second run";
    }
  }
}

TEST(Vulkan, Fp16StorageHalvesDeviceMemory) {
  REQUIRE_VULKAN();
  // Relu -> Relu -> Relu over 4 MiB float32 tensors: the input and three outputs need 16 MiB on
  // the device as float32 and 8 MiB as float16 (the copies convert in host staging memory), so a
  // 12 MiB budget fails without fp16_storage and fits with it.
  GraphSpec g;
  g.nodes.push_back(node("Relu", {"x"}, {"a"}));
  g.nodes.push_back(node("Relu", {"a"}, {"b"}));
  g.nodes.push_back(node("Relu", {"b"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {1024, 1024}});
  g.outputs.push_back({"y", DType::kFloat, {1024, 1024}});
  const std::string m = model_bytes(g);
  const Inputs in{{"x", random_tensor(Shape{1024, 1024}, 5)}};
  ep::Vulkan f32;
  f32.set("memory_limit_mb", "12");
  try {
    vulkan_session(m, true, f32).run(in);
    FAIL() << "expected out of device memory with float32 storage";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of device memory"), std::string::npos) << e.what();
  }
  ep::Vulkan half = f32;
  half.set("fp16_storage", "true");
  const Tensor y = vulkan_session(m, true, half).run(in)[0].tensor();
  const Tensor& x = in[0].second.tensor();
  for (int64_t i = 0; i < x.numel(); i += 997)  // Relu of the float16 value: exact
    ASSERT_EQ(y.data<float>()[i], static_cast<float>(Float16(std::max(x.data<float>()[i], 0.0f)))) << i;
}

TEST(Vulkan, Fp16StorageCopiesConvertBetweenDeviceAndCpuNodes) {
  REQUIRE_VULKAN();
  // Relu (vulkan) -> Hardmax (cpu) -> Exp (vulkan), and a float32 -> int64 Cast on the device
  // feeding a Gather there: every copy converts, every value the device holds is a float16 one.
  GraphSpec g;
  g.initializers.emplace_back("t", random_tensor(Shape{10, 6}, 3));
  g.nodes.push_back(node("Relu", {"x"}, {"a"}));
  g.nodes.push_back(node("Hardmax", {"a"}, {"b"}));
  g.nodes.push_back(node("Exp", {"b"}, {"y"}));
  g.nodes.push_back(cast_node("i", "il", DType::kInt64));
  g.nodes.push_back(node("Gather", {"t", "il"}, {"z"}));
  g.inputs.push_back({"x", DType::kFloat, {3, 7, 5}});
  g.inputs.push_back({"i", DType::kFloat, {4}});
  g.outputs.push_back({"y", DType::kFloat, {3, 7, 5}});
  g.outputs.push_back({"z", DType::kFloat, {4, 6}});
  const std::string m = model_bytes(g);
  Session s = fp16_storage_session(m, false);
  EXPECT_EQ(s.placement().copies.size(), 6u) << s.placement().summary;  // x, a, b, y, i, z
  const Inputs in{{"x", random_tensor(Shape{3, 7, 5}, 4)}, {"i", Tensor::from_vector<float>(Shape{4}, {0, 9, -1, 3})}};
  const auto got = s.run(in);
  const auto want = cpu_session(m).run(in);
  EXPECT_TRUE(within_ulps(got[0], want[0], 1)) << "Hardmax's 0 / 1 through Exp: 1 and e, rounded";
  EXPECT_TRUE(all_half_values(got[1]));
  EXPECT_TRUE(within_ulps(got[1], want[1], 0.5)) << "the table rounded to float16";
}

TEST(Vulkan, HalfPrecisionDeclinesSayWhy) {
  REQUIRE_VULKAN();
  // What vulkan does not take in half precision, with the reason `onyx explain` shows (the CPU EP
  // without half_in_float, so the nodes stay as written).
  GraphSpec g;
  g.nodes.push_back(node("Pow", {"h", "e"}, {"p"}));             // float16 base, float32 exponent
  g.nodes.push_back(node("Relu", {"bf"}, {"r"}));                // bfloat16
  g.nodes.push_back(cast_node("h", "d", DType::kDouble));        // float16 -> double
  g.nodes.push_back(node("Relu", {"h"}, {"ok"}));                // taken
  g.inputs.push_back({"h", DType::kFloat16, {3}});
  g.inputs.push_back({"e", DType::kFloat, {3}});
  g.inputs.push_back({"bf", DType::kBFloat16, {3}});
  g.outputs.push_back({"p", DType::kFloat16, {3}});
  g.outputs.push_back({"r", DType::kBFloat16, {3}});
  g.outputs.push_back({"d", DType::kDouble, {3}});
  g.outputs.push_back({"ok", DType::kFloat16, {3}});
  const std::string m = model_bytes(g, 17);
  Session s = Session::builder()
                  .with_no_environment_execution_providers()
                  .with_execution_providers(
                      {ep::Vulkan().build().error_on_failure(), ep::CPU().with_half_in_float(false).build()})
                  .commit_from_memory(m.data(), m.size());
  std::map<std::string, std::string> why;
  for (const auto& n : s.placement().nodes) {
    if (n.op_type == "Copy") continue;
    why[n.op_type + (n.op_type == "Relu" ? std::string(n.ep) : "")] =
        n.declined.empty() ? n.ep : n.declined[0].code + ": " + n.declined[0].message;
  }
  EXPECT_EQ(why["Pow"],
            "UnsupportedType: input 1 ('e') is float where input 0 ('h') is float16 (vulkan's kernels take one float "
            "type per node)");
  EXPECT_EQ(why["Relucpu"],
            "UnsupportedType: float32 or float16 only; input 0 ('bf') is bfloat16 (the shaders store float32 or "
            "float16)");
  EXPECT_EQ(why["Cast"],
            "UnsupportedType: vulkan casts float32 and float16 to and from each other, int32, int64 and bool only, not "
            "float16 to double");
  EXPECT_EQ(why["Reluvulkan"], "vulkan");
}

TEST(Vulkan, IfBranchesReadADeviceValue) {
  // r = Relu(x) on the device; If(c)'s branches read r (outer scope) on the host: one copy of r
  // to the host, shown in the placement; results equal the CPU EP's.
  REQUIRE_VULKAN();
  auto branch = [](const std::string& name, const std::string& op) {
    GraphSpec b;
    b.name = name;
    b.nodes.push_back(node(op, {"r"}, {name + "_y"}));
    b.outputs.push_back({name + "_y", DType::kFloat, {2, 3}});
    AttrSpec a{name == "then" ? "then_branch" : "else_branch", AttrSpec::kGraph};
    a.s = b.encode();
    return a;
  };
  GraphSpec g;
  g.nodes.push_back(node("Relu", {"x"}, {"r"}));
  g.nodes.push_back(node("If", {"c"}, {"i"}, {branch("then", "Sigmoid"), branch("else", "Neg")}));
  g.nodes.push_back(node("Add", {"i", "r"}, {"y"}));
  g.inputs.push_back({"x", DType::kFloat, {2, 3}});
  g.inputs.push_back({"c", DType::kBool, {}});
  g.outputs.push_back({"y", DType::kFloat, {2, 3}});
  const std::string m = model_bytes(g);
  Session vk = vulkan_session(m, false);
  bool copied = false;
  for (const auto& c : vk.placement().copies) copied |= c.value == "r" && c.to == "cpu";
  EXPECT_TRUE(copied) << vk.placement().summary;
  Session cpu = cpu_session(m);
  const Tensor x = Tensor::from_vector<float>(Shape{2, 3}, {-1, 0, 1, 2, -2, 3});
  for (bool c : {true, false}) {
    const Inputs in = {{"x", x}, {"c", Tensor::scalar<bool>(c)}};
    EXPECT_TRUE(close(vk.run(in)[0], cpu.run(in)[0], 1e-5, 1e-6)) << "c=" << c;
  }
}
