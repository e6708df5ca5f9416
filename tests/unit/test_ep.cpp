// The execution-provider rules of DESIGN.md §3, each with a test that fails if the rule breaks.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

#include "ep/factory.hpp"
#include "layout_graphs.hpp"
#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

#ifndef ONYX_TESTDEV_MODULE
#error "ONYX_TESTDEV_MODULE must name the test EP module"
#endif

namespace {

// y = Add(Relu(x), Sigmoid(x)): testdev takes Relu and Add (by default), never Sigmoid.
std::string model() {
  GraphSpec g;
  g.nodes.push_back({"Relu", {"x"}, {"r"}, {}, "relu"});
  g.nodes.push_back({"Sigmoid", {"x"}, {"s"}, {}, "sigmoid"});
  g.nodes.push_back({"Add", {"r", "s"}, {"y"}, {}, "add"});
  g.inputs.push_back({"x", DType::kFloat, {2, 3}});
  g.outputs.push_back({"y", DType::kFloat, {2, 3}});
  return encode_model(g);
}

ep::Spec testdev() {
  ep::Spec s("testdev");
  s.set("module_path", ONYX_TESTDEV_MODULE);
  return s;
}

Session commit(SessionBuilder b) {
  const std::string m = model();
  return b.commit_from_memory(m.data(), m.size());
}

std::string ep_of(const Session& s, const std::string& node) {
  for (const auto& n : s.placement().nodes)
    if (n.name == node) return n.ep;
  return "?";
}

struct EnvReset {
  ~EnvReset() { onyx::init().commit(); }
};

}  // namespace

TEST(Ep, EveryEpOfTheTableHasASpecAndAnHonestAvailability) {
  const auto all = ep::list_providers();
  ASSERT_GE(all.size(), 22u);
  EXPECT_EQ(all[0].name, "cpu");
  EXPECT_TRUE(all[0].availability.usable);
  for (const auto& p : all) {
    if (p.availability.usable) continue;
    EXPECT_FALSE(p.availability.reason.empty()) << p.name;
    if (!p.availability.built) {
      EXPECT_NE(p.availability.reason.find("not built into this onyx (CMake option " + p.cmake_option + ")"), std::string::npos)
          << p.availability.reason;
    }
  }
  ep::TensorRT trt;
  EXPECT_FALSE(trt.is_available());
  EXPECT_NE(trt.availability().reason.find("ONYX_EP_TENSORRT"), std::string::npos);
  EXPECT_THROW(ep::by_name("no_such_ep"), Error);
}

TEST(Ep, ThirdPartyModuleLoadsWithItsSchema) {
  ep::Availability a = testdev().availability();
  EXPECT_TRUE(a.usable) << a.reason;
  EXPECT_EQ(a.version, "test-1");
  EXPECT_EQ(a.module, ONYX_TESTDEV_MODULE);
  EXPECT_EQ(testdev().option_schema().size(), 10u);
}

TEST(Ep, PerNodeFallbackWithReasons) {
  Session s = commit(Session::builder().with_execution_providers({testdev().build()}));
  EXPECT_EQ(ep_of(s, "relu"), "testdev");
  EXPECT_EQ(ep_of(s, "sigmoid"), "cpu");
  EXPECT_EQ(ep_of(s, "add"), "testdev");
  const auto p = s.placement();
  for (const auto& n : p.nodes) {
    if (n.name != "sigmoid") continue;
    ASSERT_EQ(n.declined.size(), 1u);
    EXPECT_EQ(n.declined[0].ep, "testdev");
    EXPECT_EQ(n.declined[0].code, "UnsupportedOp");
  }
  EXPECT_NE(p.summary.find("testdev: 2 nodes"), std::string::npos) << p.summary;
  // Results are the same wherever the nodes ran.
  Tensor x = Tensor::from_vector<float>(Shape{2, 3}, {-1, 0, 1, 2, -2, 3});
  Session cpu_only = commit(Session::builder());
  const Tensor a = s.run({{"x", x}})[0].tensor(), b = cpu_only.run({{"x", x}})[0].tensor();
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(a.data<float>()[i], b.data<float>()[i]);
}

TEST(Ep, OrderIsPriorityAndClaimsAreNeverStolen) {
  // Two testdev instances can't both register (duplicate); order against the CPU EP instead:
  // listing cpu first means cpu takes everything.
  Session s = commit(Session::builder().with_execution_providers({ep::CPU().build(), testdev().build()}));
  EXPECT_EQ(ep_of(s, "relu"), "cpu");
  EXPECT_EQ(ep_of(s, "add"), "cpu");
  EXPECT_EQ(s.registration()[0].name, "cpu");
  EXPECT_EQ(s.registration()[0].priority, 0);
  EXPECT_EQ(s.registration()[1].priority, 1);
}

TEST(Ep, SessionEpsComeBeforeEnvironmentDefaults) {
  EnvReset reset;
  onyx::init().with_execution_providers({testdev().build()}).commit();
  // Environment default applies when the session lists nothing.
  Session a = commit(Session::builder());
  EXPECT_EQ(ep_of(a, "relu"), "testdev");
  EXPECT_EQ(a.registration()[0].source, EpRegistration::Source::kEnvironment);
  // The session's own list comes first: cpu listed by the session takes everything.
  Session b = commit(Session::builder().with_execution_providers({ep::CPU().build()}));
  EXPECT_EQ(ep_of(b, "relu"), "cpu");
  EXPECT_EQ(b.registration()[1].name, "testdev");
  EXPECT_EQ(b.registration()[1].source, EpRegistration::Source::kEnvironment);
  // Opting out.
  Session c = commit(Session::builder().with_no_environment_execution_providers());
  EXPECT_EQ(ep_of(c, "relu"), "cpu");
  // Duplicates keep their first position.
  Session d = commit(Session::builder().with_execution_providers({testdev().set("claim", "Relu").build()}));
  EXPECT_EQ(ep_of(d, "add"), "cpu");  // the session's testdev (Relu only) wins over the environment's
  EXPECT_EQ(d.registration()[1].outcome, EpRegistration::Outcome::kDuplicate);
  // Defaults are captured at creation: changing them later does not touch live sessions.
  onyx::init().commit();
  EXPECT_EQ(ep_of(a, "relu"), "testdev");
  Session e = commit(Session::builder());
  EXPECT_EQ(ep_of(e, "relu"), "cpu");
}

TEST(Ep, FailedRegistrationIsSkippedOrAnError) {
  // Not built: skipped silently, recorded with the reason.
  Session s = commit(Session::builder().with_execution_providers({ep::TensorRT().build(), testdev().build()}));
  ASSERT_GE(s.registration().size(), 3u);
  EXPECT_EQ(s.registration()[0].name, "tensorrt");
  EXPECT_EQ(s.registration()[0].outcome, EpRegistration::Outcome::kSkipped);
  EXPECT_NE(s.registration()[0].reason.find("not built into this onyx"), std::string::npos);
  EXPECT_EQ(ep_of(s, "relu"), "testdev");
  // error_on_failure turns it into an error naming the EP.
  try {
    commit(Session::builder().with_execution_providers({ep::TensorRT().build().error_on_failure()}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotAvailable);
    EXPECT_NE(std::string(e.what()).find("'tensorrt'"), std::string::npos);
  }
  // A missing module (hidden by pointing module_path elsewhere): skipped, the paths tried named.
  ep::Spec hidden("testdev");
  hidden.set("module_path", "/nonexistent/libonyx_ep_testdev.so");
  Session h = commit(Session::builder().with_execution_providers({hidden.build()}));
  EXPECT_EQ(h.registration()[0].outcome, EpRegistration::Outcome::kSkipped);
  EXPECT_NE(h.registration()[0].reason.find("/nonexistent/libonyx_ep_testdev.so"), std::string::npos);
  EXPECT_THROW(commit(Session::builder().with_execution_providers({hidden.build().error_on_failure()})), Error);
  // No device.
  setenv("ONYX_TESTDEV_NO_DEVICE", "1", 1);
  Session nd = commit(Session::builder().with_execution_providers({testdev().build()}));
  EXPECT_NE(nd.registration()[0].reason.find("no usable device"), std::string::npos);
  EXPECT_FALSE(testdev().is_available());
  unsetenv("ONYX_TESTDEV_NO_DEVICE");
  // A failing create().
  Session fc = commit(Session::builder().with_execution_providers({testdev().set("fail_create", "true").build()}));
  EXPECT_EQ(fc.registration()[0].outcome, EpRegistration::Outcome::kSkipped);
}

TEST(Ep, OptionsAreValidatedAndReported) {
  try {
    commit(Session::builder().with_execution_providers({testdev().set("no_such_key", "1").build().error_on_failure()}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no option 'no_such_key'"), std::string::npos) << e.what();
  }
  try {
    commit(Session::builder().with_execution_providers({testdev().set("threads", "many").build().error_on_failure()}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("option 'threads' must be int"), std::string::npos) << e.what();
  }
  Session s = commit(Session::builder().with_execution_providers({testdev().set("claim", "Relu").build()}));
  bool saw = false;
  for (const auto& [k, v] : s.registration()[0].options)
    if (k == "claim") saw = v == "Relu";
  EXPECT_TRUE(saw);
  EXPECT_EQ(ep_of(s, "add"), "cpu");
}

// A malformed option (unknown key, a value that does not parse) is a mistake in the program, not
// an environment without the EP: session creation throws naming the EP, the key and what is
// accepted, with or without error_on_failure. An EP that is unavailable is still skipped.
TEST(Ep, MalformedOptionIsAnErrorWithoutErrorOnFailure) {
  auto error_of = [](SessionBuilder b) -> std::string {
    try {
      commit(std::move(b));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      return e.what();
    }
    return "(no error)";
  };
  std::string e = error_of(Session::builder().with_execution_providers({testdev().set("no_such_key", "1").build()}));
  EXPECT_NE(e.find("execution provider 'testdev' has no option 'no_such_key' (options: claim, device,"), std::string::npos) << e;
  e = error_of(Session::builder().with_execution_providers({testdev().set("threads", "two").build()}));
  EXPECT_NE(e.find("execution provider 'testdev': option 'threads' must be int (an integer), got 'two'"), std::string::npos) << e;
  e = error_of(Session::builder().with_execution_providers({testdev().set("min_region_nodes", "99999999999999999999").build()}));
  EXPECT_NE(e.find("option 'min_region_nodes' must be int"), std::string::npos) << e;
  e = error_of(Session::builder().with_execution_providers({ep::CPU().set("prefer_nhwc", "maybe").build()}));
  EXPECT_NE(e.find("execution provider 'cpu': option 'prefer_nhwc' must be bool (true, false, 1 or 0), got 'maybe'"), std::string::npos)
      << e;
  // The options are checked before the device: a typo is reported on a machine without one too.
  setenv("ONYX_TESTDEV_NO_DEVICE", "1", 1);
  e = error_of(Session::builder().with_execution_providers({testdev().set("threads", "two").build()}));
  EXPECT_NE(e.find("option 'threads' must be int"), std::string::npos) << e;
  Session nd = commit(Session::builder().with_execution_providers({testdev().set("threads", "2").build()}));
  EXPECT_EQ(nd.registration()[0].outcome, EpRegistration::Outcome::kSkipped);
  unsetenv("ONYX_TESTDEV_NO_DEVICE");
  // The environment's EPs are checked the same way.
  {
    EnvReset reset;
    onyx::init().with_execution_providers({testdev().set("claim_ops", "Relu").build()}).commit();
    e = error_of(Session::builder());
    EXPECT_NE(e.find("has no option 'claim_ops'"), std::string::npos) << e;
  }
  // An EP that is not built has no schema to check against: skipped, as before.
  Session trt = commit(Session::builder().with_execution_providers({ep::TensorRT().set("no_such_key", "1").build()}));
  EXPECT_EQ(trt.registration()[0].outcome, EpRegistration::Outcome::kSkipped);
  // Enum values: the error lists them.
  const std::vector<ep::OptionInfo> schema = {{"kernel", "enum:auto|tiled|simple", "auto", ""}, {"n", "uint", "0", ""}};
  EXPECT_EQ(effective_options("x", schema, {{"kernel", "tiled"}})[0].second, "tiled");
  try {
    effective_options("x", schema, {{"kernel", "fast"}});
    ADD_FAILURE();
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("execution provider 'x': option 'kernel' must be one of auto, tiled, simple, got 'fast'"),
              std::string::npos)
        << err.what();
  }
  EXPECT_THROW(effective_options("x", schema, {{"n", "-1"}}), Error);
  EXPECT_THROW(effective_options("x", schema, {{"n", " 1"}}), Error);
}

TEST(Ep, ManualRegistrationThrowsWithTheReason) {
  SessionBuilder b;
  EXPECT_THROW(ep::TensorRT().register_with(b), Error);
  testdev().register_with(b);
  Session s = commit(b);
  EXPECT_EQ(ep_of(s, "relu"), "testdev");
  EXPECT_TRUE(s.registration()[0].error_on_failure);
}

TEST(Ep, StrictModeFailsWithTheCpuNodes) {
  try {
    commit(Session::builder().with_execution_providers({testdev().build()}).with_cpu_fallback(false));
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("1 node(s) would run on the CPU EP"), std::string::npos) << m;
    EXPECT_NE(m.find("Sigmoid 'sigmoid'"), std::string::npos) << m;
  }
  // Everything on testdev: strict mode is satisfied.
  GraphSpec g;
  g.nodes.push_back({"Relu", {"x"}, {"y"}, {}, "relu"});
  g.inputs.push_back({"x", DType::kFloat, {2}});
  g.outputs.push_back({"y", DType::kFloat, {2}});
  const std::string m = encode_model(g);
  EXPECT_NO_THROW(Session::builder().with_execution_providers({testdev().build()}).with_cpu_fallback(false).commit_from_memory(m.data(), m.size()));
  EXPECT_THROW(Session::builder().with_execution_providers({ep::CPU().build()}).with_cpu_fallback(false).commit_from_memory(m.data(), m.size()), Error);
}

TEST(Ep, RegionsAreConvexAndCompiledAsOne) {
  // a = Relu(x); b = Sigmoid(a) [cpu]; c = Add(a, b); d = Relu(c); y = Add(d, x)
  // {a} and {c, d, y} cannot merge: a -> b (cpu) -> c would leave the region and come back.
  GraphSpec g;
  g.nodes.push_back({"Relu", {"x"}, {"a"}, {}, "a"});
  g.nodes.push_back({"Sigmoid", {"a"}, {"b"}, {}, "b"});
  g.nodes.push_back({"Add", {"a", "b"}, {"c"}, {}, "c"});
  g.nodes.push_back({"Relu", {"c"}, {"d"}, {}, "d"});
  g.nodes.push_back({"Add", {"d", "x"}, {"y"}, {}, "y"});
  g.inputs.push_back({"x", DType::kFloat, {4}});
  g.outputs.push_back({"y", DType::kFloat, {4}});
  const std::string m = encode_model(g);
  Session s = Session::builder()
                  .with_execution_providers({testdev().set("regions", "true").build()})
                  .commit_from_memory(m.data(), m.size());
  const auto p = s.placement();
  std::map<std::string, int> region;
  for (const auto& n : p.nodes) region[n.name] = n.region;
  EXPECT_GE(region["a"], 0);
  EXPECT_EQ(region["b"], -1);
  EXPECT_NE(region["a"], region["c"]);
  EXPECT_EQ(region["c"], region["d"]);
  EXPECT_EQ(region["d"], region["y"]);
  EXPECT_NE(p.summary.find("testdev: 4 nodes in 2 regions"), std::string::npos) << p.summary;
  Session cpu = Session::builder().commit_from_memory(m.data(), m.size());
  const Tensor x = Tensor::from_vector<float>(Shape{4}, {-2, -0.5f, 0.5f, 2});
  const Tensor ya = s.run({{"x", x}})[0].tensor(), yb = cpu.run({{"x", x}})[0].tensor();
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(ya.data<float>()[i], yb.data<float>()[i]);

  // Regions smaller than the EP's minimum go back to the next EP, with the reason.
  Session small = Session::builder()
                      .with_execution_providers({testdev().set("regions", "true").set("min_region_nodes", "2").build()})
                      .commit_from_memory(m.data(), m.size());
  for (const auto& n : small.placement().nodes) {
    if (n.name != "a") continue;
    EXPECT_EQ(n.ep, "cpu");
    ASSERT_EQ(n.declined.size(), 1u);
    EXPECT_EQ(n.declined[0].code, "NotWorthOffloading");
  }
  const Tensor ys = small.run({{"x", x}})[0].tensor();
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(ys.data<float>()[i], yb.data<float>()[i]);
}

TEST(Ep, CopiesExactlyWhereMemoriesDiffer) {
  // r = Relu(x) [dev]; s = Sigmoid(x) [cpu]; y = Add(r, s) [dev]; y is a graph output (host).
  // Copies: x host->dev (for Relu), s host->dev (for Add), y dev->host. Sigmoid reads x on the host.
  Session s = commit(Session::builder().with_execution_providers({testdev().set("memory", "testdev:0").build()}));
  const auto p = s.placement();
  std::multiset<std::string> got;
  for (const auto& c : p.copies) got.insert(c.value + ":" + c.from + "->" + c.to);
  const std::multiset<std::string> want = {"x:cpu->testdev:0", "s:cpu->testdev:0", "y:testdev:0->cpu"};
  EXPECT_EQ(got, want);
  for (const auto& c : p.copies) EXPECT_EQ(c.bytes, 24);
  EXPECT_NE(p.summary.find("3 copies"), std::string::npos) << p.summary;
  // A device value read on the host gets its own copy: Sigmoid(r) instead of Sigmoid(x).
  GraphSpec g;
  g.nodes.push_back({"Relu", {"x"}, {"r"}, {}, "relu"});
  g.nodes.push_back({"Sigmoid", {"r"}, {"s"}, {}, "sigmoid"});
  g.nodes.push_back({"Add", {"r", "s"}, {"y"}, {}, "add"});
  g.inputs.push_back({"x", DType::kFloat, {2, 3}});
  g.outputs.push_back({"y", DType::kFloat, {2, 3}});
  const std::string m2 = encode_model(g);
  Session chain = Session::builder()
                      .with_execution_providers({testdev().set("memory", "testdev:0").build()})
                      .commit_from_memory(m2.data(), m2.size());
  std::multiset<std::string> got2;
  for (const auto& c : chain.placement().copies) got2.insert(c.value + ":" + c.from + "->" + c.to);
  EXPECT_EQ(got2, (std::multiset<std::string>{"x:cpu->testdev:0", "r:testdev:0->cpu", "s:cpu->testdev:0", "y:testdev:0->cpu"}));
  Tensor x = Tensor::from_vector<float>(Shape{2, 3}, {-1, 0, 1, 2, -2, 3});
  Session cpu = commit(Session::builder());
  const Tensor a = s.run({{"x", x}})[0].tensor(), b = cpu.run({{"x", x}})[0].tensor();
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(a.data<float>()[i], b.data<float>()[i]);
  EXPECT_EQ(s.outputs()[0].name, "y");
  // Same memory: no copies.
  Session same = commit(Session::builder().with_execution_providers({testdev().build()}));
  EXPECT_TRUE(same.placement().copies.empty());
}

TEST(Ep, ChannelsLastForAnEpThatPrefersIt) {
  // testdev with channels_last runs Conv, pooling and BatchNormalization only in their onyx.nhwc
  // forms; the optimizer rewrites them and cancels the transposes between them, and the results
  // match the CPU EP's. Transposes left: into the chain, out to the side output (its Sigmoid runs
  // on the CPU), and out before Flatten.
  const std::string m = encode_model(channels_last_cnn_graph(), 17);
  const Inputs in = random_inputs(channels_last_cnn_graph(), 3);
  Session cpu = cpu_session(m);
  Session dev = Session::builder()
                    .with_no_environment_execution_providers()
                    .with_execution_providers({testdev()
                                                   .set("claim", "Conv,MaxPool,BatchNormalization,GlobalAveragePool,Relu,Add")
                                                   .set("channels_last", "true")
                                                   .build()
                                                   .error_on_failure()})
                    .commit_from_memory(m.data(), m.size());
  std::map<std::string, int> ops;
  for (const auto& n : dev.placement().nodes) {
    ops[(n.domain.empty() ? "" : n.domain + "::") + n.op_type + "@" + n.ep]++;
    if (n.domain == "onyx.nhwc") {
      EXPECT_EQ(n.ep, "testdev") << n.name;
    }
  }
  EXPECT_EQ(ops["onyx.nhwc::Conv@testdev"], 4);
  EXPECT_EQ(ops["onyx.nhwc::MaxPool@testdev"], 1);
  EXPECT_EQ(ops["onyx.nhwc::BatchNormalization@testdev"], 1);
  EXPECT_EQ(ops["onyx.nhwc::GlobalAveragePool@testdev"], 1);
  EXPECT_EQ(ops["Relu@testdev"], 2);
  EXPECT_EQ(ops["Add@testdev"], 1);
  EXPECT_EQ(ops["Transpose@cpu"], 3);
  const auto want = cpu.run(in);
  const auto got = dev.run(in);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(close(got[0], want[0]));
  EXPECT_TRUE(close(got[1], want[1]));
  // Without the preference the same EP is not offered the forms (and takes nothing it cannot run).
  Session plain = Session::builder()
                      .with_no_environment_execution_providers()
                      .with_execution_providers({testdev().set("claim", "Conv,Relu,Add").build()})
                      .commit_from_memory(m.data(), m.size());
  for (const auto& n : plain.placement().nodes) {
    if (n.ep == "testdev") {
      EXPECT_TRUE(n.domain.empty()) << n.name;
    }
  }
  EXPECT_TRUE(close(plain.run(in)[0], want[0]));
  // With the CPU EP channels-first too, nothing is rewritten at all.
  Session first = Session::builder()
                      .with_no_environment_execution_providers()
                      .with_execution_providers({testdev().set("claim", "Conv,Relu,Add").build(),
                                                 onyx::ep::CPU().with_prefer_nhwc(false).build()})
                      .commit_from_memory(m.data(), m.size());
  for (const auto& n : first.placement().nodes) {
    EXPECT_TRUE(n.domain.empty()) << n.name;
    EXPECT_NE(n.op_type, "Transpose");
  }
  EXPECT_TRUE(close(first.run(in)[0], want[0]));
}

namespace {

/// The test EP's counters (onyx_testdev_count in the module).
long testdev_count(const char* what) {
  void* h = dlopen(ONYX_TESTDEV_MODULE, RTLD_NOW);
  auto* fn = h ? reinterpret_cast<long (*)(const char*)>(dlsym(h, "onyx_testdev_count")) : nullptr;
  if (!fn) return -1;
  const long n = fn(what);
  dlclose(h);
  return n;
}

/// y = Add(Relu(x), Relu(x)) with x of shape [2, n] (n a dim named "n"), all on testdev in its
/// own memory: copies in and out, and whole-run capture when `capture`.
Session capture_session(const char* capture, const char* fail = "false") {
  GraphSpec g;
  g.nodes.push_back({"Relu", {"x"}, {"r"}, {}, "relu"});
  g.nodes.push_back({"Add", {"r", "r"}, {"y"}, {}, "add"});
  ValueSpec x{"x", DType::kFloat, {2, -1}, {"", "n"}};
  g.inputs.push_back(x);
  g.outputs.push_back({"y", DType::kFloat, {2, -1}, {"", "n"}});
  const std::string m = encode_model(g);
  return Session::builder()
      .with_no_environment_execution_providers()
      .with_execution_providers(
          {testdev().set("memory", "testdev:0").set("capture", capture).set("fail_capture", fail).build().error_on_failure()})
      .commit_from_memory(m.data(), m.size());
}

Tensor ramp(int64_t n, float start) {
  std::vector<float> v(static_cast<size_t>(2 * n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i) * (i % 2 ? -1.0f : 1.0f);
  return Tensor::from_vector<float>(Shape{2, n}, v);
}

void expect_double_relu(const Tensor& y, const Tensor& x) {
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], 2 * std::max(0.0f, x.data<float>()[i])) << i;
}

}  // namespace

TEST(Ep, WholeRunCaptureRecordsOnceAndReplays) {
  // Run 1 runs the kernels (warm-up), run 2 records them and replays the recording, later runs
  // of the same shapes only replay it: with new input values each time, and right results.
  Session s = capture_session("true");
  const long computed0 = testdev_count("computed"), recorded0 = testdev_count("recorded"), replays0 = testdev_count("replays");
  for (int run = 0; run < 5; ++run) {
    const Tensor x = ramp(3, static_cast<float>(run) - 2.0f);
    expect_double_relu(s.run({{"x", x}})[0].tensor(), x);
  }
  EXPECT_EQ(testdev_count("computed") - computed0, 2);  // Relu and Add, once
  EXPECT_EQ(testdev_count("recorded") - recorded0, 2);
  EXPECT_EQ(testdev_count("replays") - replays0, 4);
  // Other shapes: another plan, recorded for itself; back to the first shape, recorded again
  // (a context keeps one recording: the device buffers it names belong to one plan).
  for (int64_t n : {5, 5, 5, 3, 3, 3}) {
    const Tensor x = ramp(n, -1.5f);
    expect_double_relu(s.run({{"x", x}})[0].tensor(), x);
  }
  EXPECT_EQ(testdev_count("computed") - computed0, 6);
  EXPECT_EQ(testdev_count("replays") - replays0, 8);
  // A profiled run times every node: never replayed.
  Binding b(s);
  b.bind_input("x", Value(ramp(3, 1.0f)));
  b.enable_profiling(true);
  s.run(b);
  expect_double_relu(b.outputs()[0].tensor(), ramp(3, 1.0f));
  EXPECT_EQ(testdev_count("replays") - replays0, 8);
  EXPECT_EQ(b.profile().size(), 4u);  // copy in, Relu, Add, copy out
}

TEST(Ep, WholeRunCaptureOnlyWhenEveryNodeIsTheEps) {
  // Without the option, nothing is recorded; with a node on the CPU EP, nothing is either.
  const long recorded0 = testdev_count("recorded");
  Session plain = capture_session("false");
  for (int run = 0; run < 3; ++run) expect_double_relu(plain.run({{"x", ramp(4, 0.5f)}})[0].tensor(), ramp(4, 0.5f));
  const std::string m = model();  // its Sigmoid runs on the CPU
  Session mixed = Session::builder()
                      .with_no_environment_execution_providers()
                      .with_execution_providers({testdev().set("memory", "testdev:0").set("capture", "true").build()})
                      .commit_from_memory(m.data(), m.size());
  Tensor x = Tensor::from_vector<float>(Shape{2, 3}, {-1, 0, 1, 2, -2, 3});
  Session cpu = commit(Session::builder());
  for (int run = 0; run < 3; ++run) EXPECT_TRUE(close(mixed.run({{"x", x}})[0], cpu.run({{"x", x}})[0]));
  EXPECT_EQ(testdev_count("recorded") - recorded0, 0);
}

TEST(Ep, WholeRunCaptureFallsBackWhenAKernelCannotBeRecorded) {
  Session s = capture_session("true", "true");
  const long replays0 = testdev_count("replays"), computed0 = testdev_count("computed");
  for (int run = 0; run < 4; ++run) {
    const Tensor x = ramp(3, static_cast<float>(run));
    expect_double_relu(s.run({{"x", x}})[0].tensor(), x);
  }
  EXPECT_EQ(testdev_count("replays") - replays0, 0);
  EXPECT_EQ(testdev_count("computed") - computed0, 8);  // every run node by node
}

TEST(Ep, WholeRunCaptureWithConcurrentRuns) {
  // Concurrent runs use different run contexts, each with its own recording.
  Session s = capture_session("true");
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int run = 0; run < 20; ++run) {
        const Tensor x = ramp(3, static_cast<float>(t * 100 + run) * 0.01f - 0.3f);
        const Tensor y = s.run({{"x", x}})[0].tensor();
        for (int64_t i = 0; i < x.numel(); ++i)
          if (y.data<float>()[i] != 2 * std::max(0.0f, x.data<float>()[i])) ++bad;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(Ep, SubgraphsReadDeviceValuesThroughAHostCopy) {
  // r = Relu(x) runs on the device; If(c) reads r from both branches (outer scope), which run on
  // the host: r is copied to the host once, the copy shows in the placement, and the results are
  // the CPU EP's. (Before: NotImplemented, "subgraphs reading device values".)
  auto branch = [](const std::string& name, const std::string& op) {
    GraphSpec b;
    b.name = name;
    b.nodes.push_back({op, {"r"}, {name + "_y"}, {}, name + "_op"});
    b.outputs.push_back({name + "_y", DType::kFloat, {2, 3}});
    AttrSpec a{name == "then" ? "then_branch" : "else_branch", AttrSpec::kGraph};
    a.s = b.encode();
    return a;
  };
  GraphSpec g;
  g.nodes.push_back({"Relu", {"x"}, {"r"}, {}, "relu"});
  g.nodes.push_back({"If", {"c"}, {"i"}, {branch("then", "Sigmoid"), branch("else", "Neg")}, "if"});
  g.nodes.push_back({"Add", {"i", "r"}, {"y"}, {}, "add"});
  g.inputs.push_back({"x", DType::kFloat, {2, 3}});
  g.inputs.push_back({"c", DType::kBool, {}});
  g.outputs.push_back({"y", DType::kFloat, {2, 3}});
  const std::string m = encode_model(g);
  Session dev = Session::builder()
                    .with_execution_providers({testdev().set("memory", "testdev:0").build()})
                    .commit_from_memory(m.data(), m.size());
  EXPECT_EQ(ep_of(dev, "relu"), "testdev");
  EXPECT_EQ(ep_of(dev, "if"), "cpu");
  std::multiset<std::string> copies;
  for (const auto& c : dev.placement().copies) copies.insert(c.value + ":" + c.from + "->" + c.to);
  EXPECT_EQ(copies.count("r:testdev:0->cpu"), 1u);
  Session cpu = Session::builder().commit_from_memory(m.data(), m.size());
  const Tensor x = Tensor::from_vector<float>(Shape{2, 3}, {-1, 0, 1, 2, -2, 3});
  for (bool c : {true, false}) {
    const Tensor a = dev.run({{"x", x}, {"c", Tensor::scalar<bool>(c)}})[0].tensor();
    const Tensor b = cpu.run({{"x", x}, {"c", Tensor::scalar<bool>(c)}})[0].tensor();
    for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(a.data<float>()[i], b.data<float>()[i]) << "c=" << c << " i=" << i;
  }
}
