// Session behaviour: running, input checks, plans, bindings, concurrency, defaults, external data.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <thread>

#include "capped_child.hpp"
#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

Session session_of(const GraphSpec& g, int64_t opset = 17, int64_t ir = 8, int threads = 1) {
  const std::string m = encode_model(g, opset, ir);
  return Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
}

// y = Relu(x) + b, with x: float[batch, 3]
GraphSpec add_relu_graph() {
  GraphSpec g;
  g.nodes.push_back({"Relu", {"x"}, {"r"}});
  g.nodes.push_back({"Add", {"r", "b"}, {"y"}});
  g.inputs.push_back({"x", DType::kFloat, {-1, 3}, {"batch", ""}});
  g.outputs.push_back({"y", DType::kFloat, {-1, 3}, {"batch", ""}});
  g.initializers.emplace_back("b", Tensor::from_vector<float>(Shape{3}, {10, 20, 30}));
  return g;
}

std::string temp_dir() {
  char tmpl[] = "/tmp/onyx-test-XXXXXX";
  const char* d = mkdtemp(tmpl);
  return d ? d : "/tmp";
}

/// add_relu_graph with its bias b (float[3]) in external data: `location` with the given
/// entries ("" leaves an entry out).
std::string external_bias_model(const std::string& location, const std::string& offset, const std::string& length) {
  GraphSpec g = add_relu_graph();
  g.initializers.clear();
  ProtoWriter t;
  t.packed_int64(1, {3});
  t.varint(2, 1);
  t.bytes(8, "b");
  auto kv = [&](const std::string& k, const std::string& v) {
    if (v.empty()) return;
    ProtoWriter e;
    e.bytes(1, k);
    e.bytes(2, v);
    t.bytes(13, e.str());
  };
  kv("location", location);
  kv("offset", offset);
  kv("length", length);
  t.varint(14, 1);
  ProtoWriter gw;
  for (const auto& n : g.nodes) gw.bytes(1, GraphSpec::encode_node(n));
  gw.bytes(5, t.str());
  for (const auto& v : g.inputs) gw.bytes(11, GraphSpec::encode_value_info(v));
  for (const auto& v : g.outputs) gw.bytes(12, GraphSpec::encode_value_info(v));
  ProtoWriter mw;
  mw.varint(1, 8);
  mw.bytes(7, gw.str());
  ProtoWriter os;
  os.varint(2, 17);
  mw.bytes(8, os.str());
  return mw.take();
}

}  // namespace

TEST(Session, RunsAndReportsMetadata) {
  Session s = session_of(add_relu_graph());
  ASSERT_EQ(s.inputs().size(), 1u);
  EXPECT_EQ(s.inputs()[0].name, "x");
  EXPECT_EQ(s.inputs()[0].type_string, "float[batch,3]");
  EXPECT_EQ(s.inputs()[0].dim_names[0], "batch");
  auto out = s.run({{"x", Tensor::from_vector<float>(Shape{2, 3}, {-1, 2, -3, 4, -5, 6})}});
  ASSERT_EQ(out.size(), 1u);
  const float* y = out[0].tensor().data<float>();
  const float want[] = {10, 22, 30, 14, 20, 36};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], want[i]);
  auto placement = s.placement();
  ASSERT_EQ(placement.nodes.size(), 2u);
  EXPECT_EQ(placement.nodes[0].ep, "cpu");
}

// with_input_dimension fixes one dim of one input, named or not; a request that cannot apply is an
// error naming what the model has. A dim name no input has is logged (and changes nothing).
TEST(Session, InputDimensionSetsOneDimOfOneInput) {
  GraphSpec g;
  g.nodes.push_back({"Relu", {"x"}, {"y"}});
  g.inputs.push_back({"x", DType::kFloat, {-1, -1, 4}, {"batch", "", ""}});
  g.outputs.push_back({"y", DType::kFloat, {-1, -1, 4}, {"batch", "", ""}});
  const std::string m = encode_model(g);
  auto commit = [&](SessionBuilder b) { return b.with_intra_threads(1).commit_from_memory(m.data(), m.size()); };
  EXPECT_EQ(commit(Session::builder()).inputs()[0].type_string, "float[batch,?,4]");
  Session s = commit(Session::builder().with_dimension_override("batch", 2).with_input_dimension("x", 1, 5));
  EXPECT_EQ(s.inputs()[0].type_string, "float[2,5,4]");
  EXPECT_EQ(s.inputs()[0].shape, (std::vector<int64_t>{2, 5, 4}));
  EXPECT_EQ(s.run({{"x", Tensor(DType::kFloat, Shape{2, 5, 4})}})[0].tensor().shape(), (Shape{2, 5, 4}));
  EXPECT_THROW(s.run({{"x", Tensor(DType::kFloat, Shape{2, 6, 4})}}), Error);
  // A named dim of one input alone; a fixed dim may be restated.
  EXPECT_EQ(commit(Session::builder().with_input_dimension("x", 0, 3).with_input_dimension("x", 2, 4)).inputs()[0].type_string,
            "float[3,?,4]");
  auto error_of = [&](SessionBuilder b) -> std::string {
    try {
      commit(std::move(b));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return e.what();
    }
    return "(no error)";
  };
  std::string e = error_of(Session::builder().with_input_dimension("q", 1, 2));
  EXPECT_NE(e.find("with_input_dimension: the model has no input named 'q' (inputs: 'x')"), std::string::npos) << e;
  e = error_of(Session::builder().with_input_dimension("x", 3, 2));
  EXPECT_NE(e.find("input 'x' (float[batch,?,4]) has rank 3, so it has no dim 3"), std::string::npos) << e;
  e = error_of(Session::builder().with_input_dimension("x", 2, 5));
  EXPECT_NE(e.find("dim 2 of input 'x' (float[batch,?,4]) is fixed at 4 by the model, not 5"), std::string::npos) << e;
  EXPECT_THROW(Session::builder().with_input_dimension("x", 1, -1), Error);
  // A dim name no input has: logged, nothing else changes.
  std::vector<std::string> warnings;
  const LogLevel level_before = log_level();
  set_log_level(LogLevel::kWarning);
  set_log_sink([&](LogLevel level, std::string_view msg) {
    if (level == LogLevel::kWarning) warnings.emplace_back(msg);
  });
  Session t = commit(Session::builder().with_dimension_override("btach", 2));
  set_log_sink({});
  set_log_level(level_before);
  EXPECT_EQ(t.inputs()[0].type_string, "float[batch,?,4]");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("with_dimension_override: no input has a dim named 'btach' (named dims: batch)"), std::string::npos)
      << warnings[0];
}

TEST(Session, RejectsWrongInputs) {
  Session s = session_of(add_relu_graph());
  try {
    s.run({{"x", Tensor::from_vector<int64_t>(Shape{1, 3}, {1, 2, 3})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'x' has type int64 but the model expects float"), std::string::npos) << e.what();
  }
  try {
    s.run({{"x", Tensor(DType::kFloat, Shape{2, 4})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has shape [2,4] but the model expects [batch,3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.run({}), Error);
  EXPECT_THROW(s.run({{"nope", Tensor(DType::kFloat, Shape{1, 3})}}), Error);
}

TEST(Session, PlansAreCachedPerShape) {
  Session s = session_of(add_relu_graph());
  s.run({{"x", Tensor(DType::kFloat, Shape{1, 3})}});
  s.run({{"x", Tensor(DType::kFloat, Shape{1, 3})}});
  EXPECT_EQ(s.plan_count(), 1u);
  s.run({{"x", Tensor(DType::kFloat, Shape{5, 3})}});
  EXPECT_EQ(s.plan_count(), 2u);
  s.run({{"x", Tensor(DType::kFloat, Shape{1, 3})}});
  EXPECT_EQ(s.plan_count(), 2u);
}

// A new shape at every run (a generation loop's growing past) keeps at most 64 plans: the least
// recently used ones go, and a shape seen again plans again and still runs right.
TEST(Session, PlanCacheIsBounded) {
  Session s = session_of(add_relu_graph());
  for (int64_t b = 1; b <= 100; ++b) s.run({{"x", Tensor(DType::kFloat, Shape{b, 3})}});
  EXPECT_EQ(s.plan_count(), 64u);
  s.run({{"x", Tensor(DType::kFloat, Shape{100, 3})}});  // recent: cached
  EXPECT_EQ(s.plan_count(), 64u);
  std::vector<Value> out = s.run({{"x", Tensor::from_vector<float>(Shape{1, 3}, {-1, 0, 2})}});  // evicted long ago: planned again
  EXPECT_EQ(s.plan_count(), 64u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tensor().shape(), (Shape{1, 3}));
  EXPECT_EQ(out[0].tensor().data<float>()[0], 10.0f);  // relu(-1) + 10
  EXPECT_EQ(out[0].tensor().data<float>()[2], 32.0f);
}

TEST(Session, OutputsIntoUserBuffers) {
  Session s = session_of(add_relu_graph());
  std::vector<float> in = {1, 1, 1}, out(3, 0.0f);
  Binding b(s);
  b.bind_input("x", Tensor::view(DType::kFloat, Shape{1, 3}, in.data()));
  b.bind_output("y", Tensor::view(DType::kFloat, Shape{1, 3}, out.data()));
  s.run(b);
  EXPECT_EQ(out[0], 11.0f);
  EXPECT_EQ(out[2], 31.0f);
  EXPECT_EQ(b.output("y").tensor().raw_data(), out.data());
  // A buffer of the wrong shape is an error naming the output.
  Binding bad(s);
  bad.bind_input("x", Tensor::view(DType::kFloat, Shape{1, 3}, in.data()));
  bad.bind_output("y", Tensor(DType::kFloat, Shape{2, 3}));
  EXPECT_THROW(s.run(bad), Error);
}

TEST(Session, ConcurrentRuns) {
  Session s = session_of(add_relu_graph(), 17, 8, 2);
  std::atomic<int> wrong{0};
  auto worker = [&](int id) {
    for (int it = 0; it < 200; ++it) {
      const int64_t batch = 1 + (id + it) % 4;
      Tensor x(DType::kFloat, Shape{batch, 3});
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(id * 1000 + it);
      auto out = s.run({{"x", x}});
      const Tensor& y = out[0].tensor();
      if (y.dim(0) != batch || y.data<float>()[0] != static_cast<float>(id * 1000 + it + 10)) wrong++;
    }
  };
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) ts.emplace_back(worker, i);
  for (auto& t : ts) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Session, InitializerIsTheDefaultOfAnInput) {
  // IR 3 style: 'b' is both a graph input and an initializer.
  GraphSpec g = add_relu_graph();
  g.inputs.push_back({"b", DType::kFloat, {3}});
  Session s = session_of(g, 6, 3);
  EXPECT_TRUE(s.inputs()[1].has_default);
  auto a = s.run({{"x", Tensor(DType::kFloat, Shape{1, 3})}});
  EXPECT_EQ(a[0].tensor().data<float>()[1], 20.0f);
  auto b = s.run({{"x", Tensor(DType::kFloat, Shape{1, 3})}, {"b", Tensor::from_vector<float>(Shape{3}, {1, 2, 3})}});
  EXPECT_EQ(b[0].tensor().data<float>()[1], 2.0f);
}

TEST(Session, ShapeComputationsAreFolded) {
  // y = Reshape(x, Concat(Shape(x)[0:1], [-1])) : a typical exporter shape subgraph.
  GraphSpec g;
  g.nodes.push_back({"Shape", {"x"}, {"s"}});
  g.nodes.push_back({"Gather", {"s", "zero"}, {"s0"}, {attr_int("axis", 0)}});
  g.nodes.push_back({"Unsqueeze", {"s0", "axes"}, {"s0u"}});
  g.nodes.push_back({"Concat", {"s0u", "minus1"}, {"spec"}, {attr_int("axis", 0)}});
  g.nodes.push_back({"Reshape", {"x", "spec"}, {"y"}});
  g.inputs.push_back({"x", DType::kFloat, {-1, 2, 3}, {"n", "", ""}});
  g.outputs.push_back({"y", DType::kFloat, {-1, -1}});
  g.initializers.emplace_back("zero", Tensor::scalar<int64_t>(0));
  g.initializers.emplace_back("axes", Tensor::from_vector<int64_t>(Shape{1}, {0}));
  g.initializers.emplace_back("minus1", Tensor::from_vector<int64_t>(Shape{1}, {-1}));
  Session s = session_of(g);
  auto out = s.run({{"x", Tensor(DType::kFloat, Shape{4, 2, 3})}});
  EXPECT_EQ(out[0].tensor().shape(), (Shape{4, 6}));
  auto out2 = s.run({{"x", Tensor(DType::kFloat, Shape{2, 2, 3})}});
  EXPECT_EQ(out2[0].tensor().shape(), (Shape{2, 6}));
}

TEST(Session, RuntimeErrorsNameTheNode) {
  GraphSpec g;
  g.nodes.push_back({"Gather", {"data", "idx"}, {"y"}, {attr_int("axis", 0)}, "lookup"});
  g.inputs.push_back({"data", DType::kFloat, {5}});
  g.inputs.push_back({"idx", DType::kInt64, {2}});
  g.outputs.push_back({"y", DType::kFloat, {2}});
  Session s = session_of(g);
  try {
    s.run({{"data", Tensor(DType::kFloat, Shape{5})}, {"idx", Tensor::from_vector<int64_t>(Shape{2}, {1, 7})}});
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("Gather 'lookup'"), std::string::npos) << m;
    EXPECT_NE(m.find("index 7"), std::string::npos) << m;
  }
}

TEST(Session, ExternalDataBesideTheModel) {
  const std::string dir = temp_dir();
  std::vector<float> w = {1, 2, 3};
  {
    std::ofstream f(dir + "/weights.bin", std::ios::binary);
    f.write("PADDING!", 8);
    f.write(reinterpret_cast<const char*>(w.data()), 12);
  }
  GraphSpec g = add_relu_graph();
  g.initializers.clear();
  ProtoWriter t;
  t.packed_int64(1, {3});
  t.varint(2, 1);
  t.bytes(8, "b");
  auto kv = [&](const std::string& k, const std::string& v) {
    ProtoWriter e;
    e.bytes(1, k);
    e.bytes(2, v);
    t.bytes(13, e.str());
  };
  kv("location", "weights.bin");
  kv("offset", "8");
  kv("length", "12");
  t.varint(14, 1);
  ProtoWriter gw;
  for (const auto& n : g.nodes) gw.bytes(1, GraphSpec::encode_node(n));
  gw.bytes(5, t.str());
  for (const auto& v : g.inputs) gw.bytes(11, GraphSpec::encode_value_info(v));
  for (const auto& v : g.outputs) gw.bytes(12, GraphSpec::encode_value_info(v));
  ProtoWriter mw;
  mw.varint(1, 8);
  mw.bytes(7, gw.str());
  ProtoWriter os;
  os.varint(2, 17);
  mw.bytes(8, os.str());
  {
    std::ofstream f(dir + "/model.onnx", std::ios::binary);
    f << mw.str();
  }
  Session s = Session::builder().commit_from_file(dir + "/model.onnx");
  auto out = s.run({{"x", Tensor(DType::kFloat, Shape{1, 3})}});
  EXPECT_EQ(out[0].tensor().data<float>()[2], 3.0f);
  // From memory, external data needs a directory.
  EXPECT_THROW(Session::builder().commit_from_memory(mw.str().data(), mw.str().size()), Error);
  Session m = Session::builder().with_external_data_dir(dir).commit_from_memory(mw.str().data(), mw.str().size());
  EXPECT_EQ(m.run({{"x", Tensor(DType::kFloat, Shape{1, 3})}})[0].tensor().data<float>()[0], 1.0f);

  // An offset past 2 GiB in a sparse file: models over 2 GB keep their weights in external data.
  {
    const int64_t big = (int64_t(1) << 31) + 4096;
    std::FILE* f = std::fopen((dir + "/big.bin").c_str(), "wb");
    ASSERT_TRUE(f);
    ASSERT_EQ(fseeko(f, big, SEEK_SET), 0);
    std::fwrite(w.data(), 4, 3, f);
    std::fclose(f);
    std::string model = mw.str();
    const std::string from = "weights.bin", to = "big.bin";
    ProtoWriter t2;
    t2.packed_int64(1, {3});
    t2.varint(2, 1);
    t2.bytes(8, "b");
    ProtoWriter e1, e2, e3;
    e1.bytes(1, "location");
    e1.bytes(2, "big.bin");
    e2.bytes(1, "offset");
    e2.bytes(2, std::to_string(big));
    e3.bytes(1, "length");
    e3.bytes(2, "12");
    t2.bytes(13, e1.str());
    t2.bytes(13, e2.str());
    t2.bytes(13, e3.str());
    t2.varint(14, 1);
    ProtoWriter gw2;
    for (const auto& n : g.nodes) gw2.bytes(1, GraphSpec::encode_node(n));
    gw2.bytes(5, t2.str());
    for (const auto& v : g.inputs) gw2.bytes(11, GraphSpec::encode_value_info(v));
    for (const auto& v : g.outputs) gw2.bytes(12, GraphSpec::encode_value_info(v));
    ProtoWriter mw2;
    mw2.varint(1, 8);
    mw2.bytes(7, gw2.str());
    mw2.bytes(8, os.str());
    std::ofstream(dir + "/big.onnx", std::ios::binary) << mw2.str();
    Session b = Session::builder().commit_from_file(dir + "/big.onnx");
    EXPECT_EQ(b.run({{"x", Tensor(DType::kFloat, Shape{1, 3})}})[0].tensor().data<float>()[1], 2.0f);
    std::remove((dir + "/big.bin").c_str());
    std::remove((dir + "/big.onnx").c_str());
  }
  std::remove((dir + "/weights.bin").c_str());
  std::remove((dir + "/model.onnx").c_str());
  rmdir(dir.c_str());
}

// The external data file, every symlink followed, must lie in the model's folder (ORT: "path
// escapes model directory"); offsets and lengths must not be negative.
TEST(Session, ExternalDataStaysInTheModelsFolder) {
  const std::string outside = temp_dir();  // another folder: the "secret" a model must not read
  const std::string dir = temp_dir();
  const std::vector<float> w = {1, 2, 3};
  auto write = [&](const std::string& path) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(w.data()), 12);
  };
  write(outside + "/secret.bin");
  write(dir + "/weights.bin");
  ASSERT_EQ(mkdir((dir + "/sub").c_str(), 0755), 0);
  ASSERT_EQ(symlink((outside + "/secret.bin").c_str(), (dir + "/link.bin").c_str()), 0);  // a file out
  ASSERT_EQ(symlink(outside.c_str(), (dir + "/linkdir").c_str()), 0);                    // a folder out
  ASSERT_EQ(symlink((dir + "/weights.bin").c_str(), (dir + "/sub/inside.bin").c_str()), 0);  // stays in
  auto open = [&](const std::string& location, const std::string& offset = "", const std::string& length = "") {
    const std::string m = external_bias_model(location, offset, length);
    std::ofstream(dir + "/model.onnx", std::ios::binary) << m;
    return Session::builder().commit_from_file(dir + "/model.onnx");
  };
  auto bias0 = [](Session s) { return s.run({{"x", Tensor(DType::kFloat, Shape{1, 3})}})[0].tensor().data<float>()[0]; };
  auto expect_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one containing '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << e.what();
    }
  };
  expect_error([&] { open("link.bin"); }, "escapes the model's directory");
  expect_error([&] { open("linkdir/secret.bin"); }, "escapes the model's directory");
  expect_error([&] { open("sub/../../" + outside.substr(outside.rfind('/') + 1) + "/secret.bin"); },
               "escapes the model's directory");
  expect_error([&] { open(outside + "/secret.bin"); }, "must be a relative path");
  expect_error([&] { open("missing.bin"); }, "missing.bin");
  // Inside the folder, through a symlink or a "..", is fine.
  EXPECT_EQ(bias0(open("sub/inside.bin")), 1.0f);
  EXPECT_EQ(bias0(open("sub/../weights.bin", "0", "12")), 1.0f);
  EXPECT_EQ(bias0(open("weights.bin", "", "12")), 1.0f);
  // Negative or out-of-range offsets and lengths.
  expect_error([&] { open("weights.bin", "", "-1"); }, "negative external data length -1");
  expect_error([&] { open("weights.bin", "-4", ""); }, "negative external data offset -4");
  expect_error([&] { open("weights.bin", "4", "12"); }, "lies outside");
  for (const char* f : {"/link.bin", "/linkdir", "/sub/inside.bin", "/weights.bin", "/model.onnx"})
    std::remove((dir + f).c_str());
  rmdir((dir + "/sub").c_str());
  rmdir(dir.c_str());
  std::remove((outside + "/secret.bin").c_str());
  rmdir(outside.c_str());
}

// With the address space capped (a child process, so that the cap stays there), loading and
// running models that need more memory fail with onyx::Errors only: no std::bad_alloc or other
// foreign exception escapes, whichever allocation fails first.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST(Session, OutOfMemoryIsAnOnyxError) {
  // A model whose weights are 64 MiB (loaded, folded, copied) and a graph that expands its
  // input to 2^28 floats (1 GiB) at run time.
  GraphSpec big;
  big.nodes.push_back({"Add", {"x", "w"}, {"y"}});
  big.inputs.push_back({"x", DType::kFloat, {1 << 24}});
  big.outputs.push_back(any_out("y"));
  big.initializers.emplace_back("w", Tensor(DType::kFloat, Shape{1 << 24}));
  const std::string big_model = encode_model(big);
  GraphSpec ex;
  ex.nodes.push_back({"Expand", {"x", "shape"}, {"y"}});
  ex.inputs.push_back({"x", DType::kFloat, {1}});
  ex.inputs.push_back({"shape", DType::kInt64, {1}});
  ex.outputs.push_back(any_out("y"));
  const std::string expand_model = encode_model(ex);
  Session expand = Session::builder().with_intra_threads(1).commit_from_memory(expand_model.data(), expand_model.size());

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow memory does not fit under a capped address space";
#endif
  // Caps from 4 to 160 MiB above what the process has mapped: each fails at another step.
  for (int extra_mib = 4; extra_mib <= 160; extra_mib += 12) {
    SCOPED_TRACE(std::to_string(extra_mib) + " MiB above the mapped size");
    const int rc = in_capped_child(extra_mib, [&] {
      // Only onyx::Error may come out; anything else escapes to in_capped_child (exit status 2).
      try {
        std::vector<Session> keep;
        for (int i = 0; i < 8; ++i)
          keep.push_back(Session::builder().with_intra_threads(1).commit_from_memory(big_model.data(), big_model.size()));
      } catch (const Error&) {
      }
      try {
        expand.run({{"x", Tensor::from_vector<float>(Shape{1}, {1.0f})},
                    {"shape", Tensor::from_vector<int64_t>(Shape{1}, {int64_t(1) << 28})}});
      } catch (const Error&) {
      }
      return true;
    });
    ASSERT_NE(rc, -2) << "the child died of a signal";
    EXPECT_NE(rc, 3) << "could not cap the address space";
    EXPECT_EQ(rc, 0) << "a foreign exception escaped";
  }
}
#endif
