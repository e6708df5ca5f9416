// The EP plugin ABI (include/onyx/ep_c_api.h) from the host's side: a plugin with device memory,
// copies and run hooks runs its nodes; a plugin from an older header works; and every way a plugin
// can be wrong (newer API, failing entry point or create, a table that is not one, an instance
// without claim, no entry point, a C++ exception) is a skipped registration with the reason, or
// an error with error_on_failure — never a crash. The plugins: tests/ep_plugin/test_plugins.c.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

std::string plugin_path(const std::string& name) { return std::string(ONYX_TEST_PLUGIN_DIR) + "/libonyx_ep_" + name + ".so"; }

ep::Spec plugin(const std::string& name) { return std::move(ep::Spec(name).set("module_path", plugin_path(name))); }

/// y = Neg(Relu(x)) + x: Relu and Neg for the plugin, Add for the CPU EP.
std::string relu_neg_model() {
  GraphSpec g;
  g.inputs.push_back({"x", DType::kFloat, {2, 3}});
  g.outputs.push_back({"y", DType::kFloat, {2, 3}});
  g.nodes.push_back({"Relu", {"x"}, {"r"}, {}, "relu"});
  g.nodes.push_back({"Neg", {"r"}, {"n"}, {}, "neg"});
  g.nodes.push_back({"Add", {"n", "x"}, {"y"}, {}, "add"});
  return encode_model(g);
}

Session open(const ep::Spec& spec, bool error_on_failure = false) {
  const std::string m = relu_neg_model();
  return Session::builder()
      .with_intra_threads(1)
      .with_no_environment_execution_providers()
      .with_execution_providers({spec.build().error_on_failure(error_on_failure)})
      .commit_from_memory(m.data(), m.size());
}

void expect_runs(Session& s) {
  const Tensor x = Tensor::from_vector<float>({2, 3}, {-1.5f, 0.0f, 2.0f, 3.0f, -4.0f, 0.5f});
  auto out = s.run({{"x", Value(x)}});
  const Tensor& y = out[0].tensor();
  for (int64_t i = 0; i < 6; ++i) {
    const float v = x.data<float>()[i];
    EXPECT_FLOAT_EQ(y.data<float>()[i], -(v > 0 ? v : 0) + v) << i;
  }
}

const EpRegistration& registration_of(const Session& s, const std::string& name) {
  for (const auto& r : s.registration())
    if (r.name == name) return r;
  ADD_FAILURE() << "no registration for " << name;
  static EpRegistration none;
  return none;
}

/// Registration of `name` is skipped with a reason containing `reason`, and is an error saying
/// so with error_on_failure.
void expect_refused(const std::string& name, const std::string& reason) {
  SCOPED_TRACE(name);
  Session s = open(plugin(name));
  const EpRegistration& r = registration_of(s, name);
  EXPECT_EQ(r.outcome, EpRegistration::Outcome::kSkipped);
  EXPECT_NE(r.reason.find(reason), std::string::npos) << r.reason;
  expect_runs(s);  // on the CPU EP
  for (const auto& n : s.placement().nodes) EXPECT_EQ(n.ep, "cpu") << n.name;
  try {
    open(plugin(name), true);
    ADD_FAILURE() << "error_on_failure did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
  }
}

template <class Fn>
Fn plugin_function(const std::string& name, const char* symbol) {
  void* h = dlopen(plugin_path(name).c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!h) return nullptr;
  auto f = reinterpret_cast<Fn>(dlsym(h, symbol));
  dlclose(h);  // (the loader's own handle keeps it loaded)
  return f;
}

}  // namespace

TEST(EpPlugin, DeviceMemoryCopiesAndRunHooks) {
  const ep::Availability a = plugin("devmem").availability();
  ASSERT_TRUE(a.usable) << a.reason;
  EXPECT_NE(a.version.find("0.1"), std::string::npos) << a.version;
  {
    Session s = open(plugin("devmem"), true);
    const Placement p = s.placement();
    for (const auto& n : p.nodes) EXPECT_EQ(n.ep, n.op_type == "Add" ? "cpu" : "devmem") << n.name;
    // x goes to devmem for Relu, Neg's result comes back for Add.
    ASSERT_EQ(p.copies.size(), 2u) << p.summary;
    EXPECT_EQ(registration_of(s, "devmem").device, "devmem:0");
    auto runs = plugin_function<int (*)()>("devmem", "test_plugin_runs");
    auto live = plugin_function<int (*)()>("devmem", "test_plugin_live_buffers");
    ASSERT_TRUE(runs && live);
    const int before = runs();
    expect_runs(s);
    expect_runs(s);
    EXPECT_EQ(runs() - before, 2 * 1000 + 2) << "run_begin and run_end once per run";
    EXPECT_GT(live(), 0);
  }
  // The session is gone: every device buffer went back to the plugin.
  EXPECT_EQ(plugin_function<int (*)()>("devmem", "test_plugin_live_buffers")(), 0);
}

TEST(EpPlugin, OptionsAreValidatedAgainstThePluginSchema) {
  const auto schema = plugin("devmem").option_schema();
  ASSERT_EQ(schema.size(), 1u);
  EXPECT_EQ(schema[0].key, "level");
  EXPECT_EQ(schema[0].type, "enum:low|high");
  ep::Spec good = plugin("devmem");
  good.set("level", "high");
  Session s = open(good, true);
  expect_runs(s);
  ep::Spec bad = plugin("devmem");
  bad.set("level", "medium");
  try {
    open(bad);
    ADD_FAILURE() << "a bad option value was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("option 'level' must be one of low, high"), std::string::npos) << e.what();
  }
}

TEST(EpPlugin, OlderHeaderStructsAreWrittenOnlyAsFarAsTheyReach) {
  Session s = open(plugin("older"), true);
  for (const auto& n : s.placement().nodes) EXPECT_EQ(n.ep, n.op_type == "Add" ? "cpu" : "older") << n.name;
  expect_runs(s);
}

TEST(EpPlugin, NewerApiVersionIsRefused) { expect_refused("newer", "newer than this onyx's (1)"); }
TEST(EpPlugin, FailingCreateIsSkippedWithItsReason) { expect_refused("failcreate", "the test device was unplugged"); }
TEST(EpPlugin, FailingEntryPointIsSkippedWithItsReason) { expect_refused("initfail", "the test licence file is missing"); }
TEST(EpPlugin, GarbageTableIsRefused) { expect_refused("garbage", "struct_size 12"); }
TEST(EpPlugin, InstanceWithoutClaimIsRefused) { expect_refused("badinstance", "lacks claim"); }
TEST(EpPlugin, MissingEntryPointIsSkipped) { expect_refused("nosym", "no symbol onyx_ep_plugin_init"); }
TEST(EpPlugin, ExceptionInCreateDoesNotCrossTheBoundary) { expect_refused("throws", "create threw on purpose"); }

TEST(EpPlugin, MissingLibraryIsSkippedWithThePathTried) {
  ep::Spec s("absent");
  s.set("module_path", plugin_path("absent"));
  expect_refused("absent", "libonyx_ep_absent.so: no such file");
  EXPECT_FALSE(s.is_available());
}

// ---- custom ops from C++ (include/onyx/custom_op.hpp) ----

namespace {

/// x -> test.custom::Twice(factor) -> y (y = factor * x), then Neg.
std::string custom_model(const std::string& domain = "test.custom", const std::string& op = "Twice") {
  GraphSpec g;
  g.inputs.push_back({"x", DType::kFloat, {2, 3}});
  g.outputs.push_back({"y", DType::kFloat, {2, 3}});
  NodeSpec n{op, {"x"}, {"t"}, {}, "custom"};
  n.domain = domain;
  g.nodes.push_back(n);
  g.nodes.push_back({"Neg", {"t"}, {"y"}, {}, "neg"});
  return encode_model(g, 17, 8, {{domain, 1}});
}

CustomOp twice(const std::string& name) {
  CustomOp op;
  op.domain = "test.custom";
  op.name = name;
  op.infer = [](CustomOpInferContext& ctx) { ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0)); };
  op.compute = [](CustomOpKernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0, DType::kFloat, x.shape().to_vector());
    for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = 2.0f * x.data<float>()[i];
  };
  return op;
}

Session open_model(const std::string& m) {
  return Session::builder().with_intra_threads(1).with_no_environment_execution_providers().commit_from_memory(m.data(), m.size());
}

}  // namespace

TEST(CustomOp, RegisteredOpRunsOnTheCpuEp) {
  register_custom_op(twice("Twice"));
  Session s = open_model(custom_model());
  const Tensor x = Tensor::from_vector<float>({2, 3}, {1, -2, 3, -4, 5, -6});
  const auto out = s.run({{"x", Value(x)}});
  for (int64_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[0].tensor().data<float>()[i], -2.0f * x.data<float>()[i]);
  for (const auto& n : s.placement().nodes) EXPECT_EQ(n.ep, "cpu") << n.name;
  EXPECT_EQ(s.outputs()[0].shape, (std::vector<int64_t>{2, 3}));
}

TEST(CustomOp, RegistrationErrors) {
  auto expect_error = [](CustomOp op, const std::string& want) {
    try {
      register_custom_op(std::move(op));
      ADD_FAILURE() << "registered";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  CustomOp builtin = twice("Relu");
  builtin.domain = "";
  expect_error(builtin, "which onyx implements itself");
  CustomOp ms = twice("Gelu2");
  ms.domain = "com.microsoft";
  expect_error(ms, "which onyx implements itself");
  register_custom_op(twice("Once"));
  expect_error(twice("Once"), "already registered by onyx::register_custom_op");
  CustomOp no_compute = twice("NoCompute");
  no_compute.compute = nullptr;
  expect_error(no_compute, "has no compute function");
  CustomOp no_infer = twice("NoInfer");
  no_infer.infer = nullptr;
  expect_error(no_infer, "has no type inference");
}

TEST(CustomOp, FailuresNameTheNode) {
  CustomOp refuses = twice("Refuses");
  refuses.infer = [](CustomOpInferContext&) { throw Error(ErrorCode::kInvalidGraph, "Refuses takes nothing"); };
  register_custom_op(refuses);
  try {
    open_model(custom_model("test.custom", "Refuses"));
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Refuses takes nothing"), std::string::npos) << e.what();
  }
  CustomOp lazy = twice("Lazy");
  // (An output whose shape inference leaves unknown is the kernel's to allocate; this one does not.)
  lazy.infer = [](CustomOpInferContext& ctx) { ctx.set_output_unranked(0, DType::kFloat); };
  lazy.compute = [](CustomOpKernelContext&) {};
  register_custom_op(lazy);
  Session s = open_model(custom_model("test.custom", "Lazy"));
  try {
    s.run({{"x", Value(Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}))}});
    ADD_FAILURE() << "ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did not set output 0"), std::string::npos) << e.what();
  }
}

TEST(CustomOp, UnknownCustomOpSaysHowToRegisterOne) {
  try {
    open_model(custom_model("test.nobody", "Missing"));
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("onyx does not know the operator test.nobody::Missing"), std::string::npos) << m;
    EXPECT_NE(m.find("onyx::register_custom_op"), std::string::npos) << m;
  }
}
