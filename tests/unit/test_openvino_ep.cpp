// The OpenVINO EP (libonyx_ep_openvino.so) against the CPU EP: a small CNN and a shape
// computation compiled into one region, dynamic shapes (a compilation per input shape), the
// compiled-model cache, decline reasons, options and concurrent runs. Skipped, saying why, where
// the EP is not usable.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

#define REQUIRE_OPENVINO()                                                                         \
  do {                                                                                             \
    static const bool ok = ep::OpenVINO().is_available();                                          \
    if (!ok) GTEST_SKIP() << "openvino: " << ep::OpenVINO().availability().reason;                 \
  } while (0)

Tensor random_tensor(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(s.numel()));
  for (float& x : v) x = d(rng);
  return Tensor::from_vector<float>(s, v);
}

using Inputs = std::vector<std::pair<std::string, Value>>;

Session open(const std::string& bytes, const std::vector<std::pair<std::string, std::string>>& options = {},
             bool openvino = true) {
  SessionBuilder b;
  b.with_intra_threads(1).with_no_environment_execution_providers();
  if (openvino) {
    ep::OpenVINO spec;
    for (const auto& [k, v] : options) spec.set(k, v);
    b.with_execution_providers({spec.build().error_on_failure()});
  }
  return b.commit_from_memory(bytes.data(), bytes.size());
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape().to_string(), want.shape().to_string()) << what;
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    diff = std::max(diff, std::fabs(double(got.data<float>()[i]) - want.data<float>()[i]));
    scale = std::max(scale, std::fabs(double(want.data<float>()[i])));
  }
  EXPECT_LE(diff, 1e-4 * std::max(scale, 1e-30)) << what << ": max abs diff " << diff << ", max |want| " << scale;
}

void expect_all_on_openvino(const Session& s, const std::string& what) {
  for (const auto& n : s.placement().nodes) {
    std::string why;
    for (const auto& d : n.declined) why += d.ep + ": " + d.code + ": " + d.message + "; ";
    EXPECT_EQ(n.ep, "openvino") << what << ": " << n.op_type << " '" << n.name << "' (" << why << ")";
  }
}

std::string decline_of(const Session& s, const std::string& name) {
  for (const auto& n : s.placement().nodes)
    if (n.name == name) {
      for (const auto& d : n.declined)
        if (d.ep == "openvino") return d.code + ": " + d.message;
      return "(runs on " + n.ep + ")";
    }
  return "?";
}

/// Conv (8 filters, 3x3) -> Relu -> MaxPool -> Flatten -> Gemm (10 classes): weights of more
/// than 64 elements, bound to OpenVINO as constants over onyx's buffers. `batch` "" = batch 1,
/// else a symbolic batch dim of that name.
std::string small_cnn(const std::string& batch = "") {
  GraphSpec g;
  g.initializers.emplace_back("w", random_tensor(Shape{8, 3, 3, 3}, 1));
  g.initializers.emplace_back("b", random_tensor(Shape{8}, 2));
  g.initializers.emplace_back("fw", random_tensor(Shape{10, 8 * 4 * 4}, 3));
  g.initializers.emplace_back("fb", random_tensor(Shape{10}, 4));
  g.nodes.push_back({"Conv", {"x", "w", "b"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv"});
  g.nodes.push_back({"Relu", {"c"}, {"r"}, {}, "relu"});
  g.nodes.push_back({"MaxPool", {"r"}, {"p"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}, "pool"});
  g.nodes.push_back({"Flatten", {"p"}, {"f"}, {}, "flatten"});
  g.nodes.push_back({"Gemm", {"f", "fw", "fb"}, {"y"}, {attr_int("transB", 1)}, "fc"});
  ValueSpec x{"x", DType::kFloat, {1, 3, 8, 8}};
  if (!batch.empty()) x.dim_params = {batch, "", "", ""};
  g.inputs.push_back(x);
  g.outputs.push_back(any_out("y"));
  return encode_model(g, 17);
}

/// x [?, 6] -> Shape -> Gather(0) -> Unsqueeze -> Concat with [2, 3] -> Reshape(x): the shape
/// computation a BERT export writes, inside the region.
std::string reshape_by_shape(bool symbolic) {
  GraphSpec g;
  g.initializers.emplace_back("zero", Tensor::scalar<int64_t>(0));
  g.initializers.emplace_back("axes", Tensor::from_vector<int64_t>(Shape{1}, {0}));
  g.initializers.emplace_back("rest", Tensor::from_vector<int64_t>(Shape{2}, {2, 3}));
  g.nodes.push_back({"Shape", {"x"}, {"s"}, {}, "shape"});
  g.nodes.push_back({"Gather", {"s", "zero"}, {"n"}, {}, "gather"});
  g.nodes.push_back({"Unsqueeze", {"n", "axes"}, {"n1"}, {}, "unsqueeze"});
  g.nodes.push_back({"Concat", {"n1", "rest"}, {"shp"}, {attr_int("axis", 0)}, "concat"});
  g.nodes.push_back({"Relu", {"x"}, {"rx"}, {}, "relu"});
  g.nodes.push_back({"Reshape", {"rx", "shp"}, {"y"}, {}, "reshape"});
  ValueSpec x{"x", DType::kFloat, {4, 6}};
  if (symbolic) x.dim_params = {"n", ""};
  g.inputs.push_back(x);
  g.outputs.push_back(any_out("y"));
  return encode_model(g, 17);
}

void check_vs_cpu(const std::string& bytes, const Inputs& in, const std::string& what,
                  const std::vector<std::pair<std::string, std::string>>& options = {}) {
  Session cpu = open(bytes, {}, false);
  Session ov = open(bytes, options);
  expect_all_on_openvino(ov, what);
  const auto want = cpu.run(in);
  for (int round = 0; round < 2; ++round) {
    const auto got = ov.run(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k)
      expect_close(got[k].tensor(), want[k].tensor(), what + " output " + std::to_string(k) + " run " + std::to_string(round));
  }
}

}  // namespace

TEST(OpenVino, SmallCnnMatchesCpu) {
  REQUIRE_OPENVINO();
  check_vs_cpu(small_cnn(), {{"x", random_tensor(Shape{1, 3, 8, 8}, 7)}}, "small CNN");
  const Session s = open(small_cnn());
  EXPECT_EQ(s.placement().summary.find("openvino: 5 nodes in 1 region"), 0u) << s.placement().summary;
}

TEST(OpenVino, PrecisionsAndThreads) {
  REQUIRE_OPENVINO();
  for (const char* p : {"FP32", "ACCURACY"})
    check_vs_cpu(small_cnn(), {{"x", random_tensor(Shape{1, 3, 8, 8}, 8)}}, std::string("precision ") + p,
                 {{"precision", p}, {"num_of_threads", "2"}});
}

TEST(OpenVino, DynamicBatchCompilesPerShape) {
  REQUIRE_OPENVINO();
  const std::string bytes = small_cnn("batch");
  Session cpu = open(bytes, {}, false);
  Session ov = open(bytes);
  expect_all_on_openvino(ov, "dynamic CNN");
  for (int64_t n : {1, 3, 1, 2}) {
    const Inputs in = {{"x", random_tensor(Shape{n, 3, 8, 8}, static_cast<uint32_t>(10 + n))}};
    expect_close(ov.run(in)[0].tensor(), cpu.run(in)[0].tensor(), "batch " + std::to_string(n));
  }
}

TEST(OpenVino, ShapeComputationInsideTheRegion) {
  REQUIRE_OPENVINO();
  check_vs_cpu(reshape_by_shape(false), {{"x", random_tensor(Shape{4, 6}, 20)}}, "static shape computation");
  // Symbolic rows: the region runs dynamically, its Reshape shaped by OpenVINO.
  const std::string bytes = reshape_by_shape(true);
  Session cpu = open(bytes, {}, false);
  Session ov = open(bytes);
  expect_all_on_openvino(ov, "symbolic shape computation");
  for (int64_t n : {4, 7}) {
    const Inputs in = {{"x", random_tensor(Shape{n, 6}, static_cast<uint32_t>(30 + n))}};
    const auto got = ov.run(in);
    EXPECT_EQ(got[0].tensor().shape().to_string(), Shape({n, 2, 3}).to_string());
    expect_close(got[0].tensor(), cpu.run(in)[0].tensor(), "rows " + std::to_string(n));
  }
}

TEST(OpenVino, DeclinesWithReasons) {
  REQUIRE_OPENVINO();
  GraphSpec g;
  g.nodes.push_back({"Add", {"a", "a"}, {"d"}, {}, "add_double"});
  g.nodes.push_back({"Tile", {"x", "reps"}, {"t"}, {}, "tile_runtime"});
  g.nodes.push_back({"Max", {"x"}, {"m"}, {}, "max_one"});
  g.inputs.push_back({"a", DType::kDouble, {3}});
  g.inputs.push_back({"x", DType::kFloat, {2, 3}});
  g.inputs.push_back({"reps", DType::kInt64, {2}});
  g.outputs.push_back(any_out("d", DType::kDouble));
  g.outputs.push_back(any_out("t"));
  g.outputs.push_back(any_out("m"));
  const Session s = open(encode_model(g, 17));
  EXPECT_NE(decline_of(s, "add_double").find("float64"), std::string::npos) << decline_of(s, "add_double");
  EXPECT_NE(decline_of(s, "tile_runtime").find("repeats are computed at run time"), std::string::npos)
      << decline_of(s, "tile_runtime");
  EXPECT_NE(decline_of(s, "max_one").find("one-input Max"), std::string::npos) << decline_of(s, "max_one");
}

TEST(OpenVino, CompiledModelCache) {
  REQUIRE_OPENVINO();
  const auto dir = std::filesystem::temp_directory_path() / ("onyx-ov-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string bytes = small_cnn();
  const Inputs in = {{"x", random_tensor(Shape{1, 3, 8, 8}, 40)}};
  const auto want = open(bytes, {}, false).run(in);
  const std::vector<std::pair<std::string, std::string>> opts = {{"cache_dir", dir.string()}};
  expect_close(open(bytes, opts).run(in)[0].tensor(), want[0].tensor(), "first session (compiles, stores)");
  // The compiled region (the claim answers go there too, unless this process already knew them).
  size_t blobs = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) blobs += e.path().extension() == ".blob";
  EXPECT_EQ(blobs, 1u);
  expect_close(open(bytes, opts).run(in)[0].tensor(), want[0].tensor(), "second session (imports)");
  // A damaged blob is ignored (and replaced), never trusted.
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".blob") std::ofstream(e.path(), std::ios::trunc) << "not a compiled model";
  expect_close(open(bytes, opts).run(in)[0].tensor(), want[0].tensor(), "damaged blob");
  std::filesystem::remove_all(dir);
}

TEST(OpenVino, OptionErrors) {
  REQUIRE_OPENVINO();
  const std::string bytes = small_cnn();
  try {
    open(bytes, {{"device_type", "NO_SUCH_DEVICE"}});
    ADD_FAILURE() << "an absent device registered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not present here; OpenVINO sees: "), std::string::npos) << e.what();
  }
  try {
    open(bytes, {{"enable_qdq_optimizer", "true"}});
    ADD_FAILURE() << "enable_qdq_optimizer=true registered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not implemented"), std::string::npos) << e.what();
  }
  try {
    open(bytes, {{"precision", "FP8"}});
    ADD_FAILURE() << "precision FP8 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

TEST(OpenVino, ConcurrentRuns) {
  REQUIRE_OPENVINO();
  const std::string bytes = small_cnn();
  Session ov = open(bytes);
  const Inputs in = {{"x", random_tensor(Shape{1, 3, 8, 8}, 50)}};
  const auto want = open(bytes, {}, false).run(in);
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const auto got = ov.run(in);
        const Tensor& a = got[0].tensor();
        const Tensor& b = want[0].tensor();
        for (int64_t k = 0; k < a.numel(); ++k)
          if (std::fabs(a.data<float>()[k] - b.data<float>()[k]) > 1e-4f * (1.0f + std::fabs(b.data<float>()[k]))) bad[t]++;
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}
