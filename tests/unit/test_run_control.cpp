// Run control: cancellation from another thread (RunOptions), the per-session memory limit,
// the thread pool's spinning policy, and many threads on one session.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_pool.hpp"
#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

Session session_of(const GraphSpec& g, SessionBuilder b = Session::builder()) {
  const std::string m = encode_model(g, 17, 8);
  return b.commit_from_memory(m.data(), m.size());
}

AttrSpec attr_graph(std::string name, const GraphSpec& g) {
  AttrSpec a{std::move(name), AttrSpec::kGraph};
  a.s = g.encode();
  return a;
}

// Loop(M, y0): y += 1 per iteration; with `scan_elems` > 0 each iteration also emits a scan
// output of that many floats (so the loop's memory grows with its trip count).
GraphSpec counting_loop(int64_t scan_elems) {
  GraphSpec b;
  b.name = "body";
  b.inputs = {{"i", DType::kInt64, {}}, {"c_in", DType::kBool, {}}, {"y_in", DType::kFloat, {1}}};
  b.outputs = {{"c_out", DType::kBool, {}}, {"y_out", DType::kFloat, {1}}};
  b.initializers.emplace_back("one", Tensor::from_vector<float>(Shape{1}, {1}));
  b.nodes.push_back({"Identity", {"c_in"}, {"c_out"}});
  b.nodes.push_back({"Add", {"y_in", "one"}, {"y_out"}});
  GraphSpec g;
  g.inputs = {{"y0", DType::kFloat, {1}}, {"M", DType::kInt64, {}}};
  g.outputs = {{"y", DType::kFloat, {1}}};
  std::vector<std::string> outs = {"y"};
  if (scan_elems > 0) {
    b.initializers.emplace_back("shape", Tensor::from_vector<int64_t>(Shape{1}, {scan_elems}));
    b.nodes.push_back({"Expand", {"y_out", "shape"}, {"scan"}});
    b.outputs.push_back({"scan", DType::kFloat, {scan_elems}});
    g.outputs.push_back({"scans", DType::kFloat, {-1, scan_elems}});
    outs.push_back("scans");
  }
  g.nodes.push_back({"Loop", {"M", "", "y0"}, outs, {attr_graph("body", b)}, "loop"});
  return g;
}

std::vector<std::pair<std::string, Value>> loop_inputs(int64_t trips) {
  return {{"y0", Tensor::from_vector<float>(Shape{1}, {0})}, {"M", Tensor::scalar<int64_t>(trips)}};
}

// x -> Relu -> Neg -> Relu -> y over [n] floats: three activations of n floats.
GraphSpec relu_chain(int64_t n) {
  GraphSpec g;
  g.inputs = {{"x", DType::kFloat, {n}}};
  g.outputs = {{"y", DType::kFloat, {n}}};
  g.nodes.push_back({"Relu", {"x"}, {"a"}});
  g.nodes.push_back({"Neg", {"a"}, {"b"}});
  g.nodes.push_back({"Relu", {"b"}, {"y"}});
  return g;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Cancellation

TEST(RunControl, TerminateStopsALongLoopFromAnotherThread) {
  Session s = session_of(counting_loop(0));
  RunOptions opts;
  // 10^15 iterations: hours if nothing stops it.
  auto fut = std::async(std::launch::async, [&] {
    try {
      s.run(loop_inputs(1'000'000'000'000'000), opts);
      return std::string("finished");
    } catch (const Error& e) {
      return std::string(error_code_name(e.code())) + ": " + e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(fut.wait_for(std::chrono::seconds(0)), std::future_status::timeout) << "the loop ended by itself";
  opts.terminate();
  if (fut.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr, "the cancelled run did not stop within 60 s\n");
    std::quick_exit(1);  // a hang: the run cannot be joined
  }
  const std::string r = fut.get();
  EXPECT_EQ(r.rfind("Cancelled: ", 0), 0u) << r;
  EXPECT_NE(r.find("RunOptions::terminate"), std::string::npos) << r;
  EXPECT_NE(r.find("Loop 'loop'"), std::string::npos) << r;
  // The session stays usable: a run with fresh options completes.
  auto out = s.run(loop_inputs(5));
  EXPECT_EQ(out[0].tensor().data<float>()[0], 5.0f);
}

TEST(RunControl, TerminatedOptionsRefuseRunsUntilReset) {
  Session s = session_of(relu_chain(16));
  RunOptions opts;
  RunOptions copy = opts;  // copies share the flag
  copy.terminate();
  EXPECT_TRUE(opts.terminated());
  Tensor x = Tensor::from_vector<float>(Shape{16}, std::vector<float>(16, 1.0f));
  try {
    s.run({{"x", x}}, opts);
    ADD_FAILURE() << "a terminated run completed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled) << e.what();
  }
  // Other runs (no options, other options) are not affected.
  EXPECT_NO_THROW(s.run({{"x", x}}));
  EXPECT_NO_THROW(s.run({{"x", x}}, RunOptions()));
  opts.reset();
  auto out = s.run({{"x", x}}, {"y"}, opts);
  EXPECT_EQ(out[0].tensor().data<float>()[0], 0.0f);
  Binding b(s);
  b.bind_input("x", x);
  opts.terminate();
  EXPECT_THROW(s.run(b, opts), Error);
}

// ---------------------------------------------------------------------------------------------
// Memory limit

TEST(RunControl, MemoryLimitRefusesAnArenaAboveIt) {
  const int64_t n = 1 << 20;  // 4 MiB per activation
  Tensor x(DType::kFloat, Shape{n});
  // Without a limit, and with a generous one, the model runs.
  EXPECT_NO_THROW(session_of(relu_chain(n)).run({{"x", x}}));
  EXPECT_NO_THROW(session_of(relu_chain(n), Session::builder().with_memory_limit(64 << 20)).run({{"x", x}}));
  Session s = session_of(relu_chain(n), Session::builder().with_memory_limit(1 << 20));
  try {
    s.run({{"x", x}});
    ADD_FAILURE() << "the run passed a 1 MiB limit with 4 MiB activations";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory) << e.what();
    EXPECT_NE(std::string(e.what()).find("memory limit of 1048576 bytes"), std::string::npos) << e.what();
  }
  // A smaller input of the same model fits.
  Session small = session_of(relu_chain(1024), Session::builder().with_memory_limit(1 << 20));
  EXPECT_NO_THROW(small.run({{"x", Tensor(DType::kFloat, Shape{1024})}}));
}

TEST(RunControl, MemoryLimitStopsALoopWhoseScansGrow) {
  // Each iteration keeps 64 KiB of scan output: 10^9 iterations would need 64 TB.
  Session s = session_of(counting_loop(16384), Session::builder().with_memory_limit(32 << 20));
  try {
    s.run(loop_inputs(1'000'000'000));
    ADD_FAILURE() << "the loop passed the memory limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory) << e.what();
    EXPECT_NE(std::string(e.what()).find("Loop 'loop'"), std::string::npos) << e.what();
  }
  // Memory held by the failed run was given back: a short loop still fits, again and again.
  for (int i = 0; i < 3; ++i) {
    auto out = s.run(loop_inputs(100));
    EXPECT_EQ(out[1].tensor().shape(), (Shape{100, 16384}));
  }
}

// ---------------------------------------------------------------------------------------------
// Thread pool

TEST(RunControl, PoolCoversEveryIndexWithAndWithoutSpinning) {
  for (PoolSpin spin : {PoolSpin::kBounded, PoolSpin::kNever}) {
    ThreadPool pool(3, spin);
    for (int rep = 0; rep < 200; ++rep) {
      const int64_t n = 1 + rep * 37;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n " << n << " i " << i;
    }
  }
}

TEST(RunControl, BusyPoolRunsASecondCallerInline) {
  // While one caller's job holds the pool (its worker blocked inside it), a second caller runs
  // its parallel_for inline instead of waiting for the pool.
  ThreadPool pool(2, PoolSpin::kNever);
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  std::thread blocker([&] {
    pool.parallel_for(2, 1, [&](int64_t, int64_t) {
      started++;
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  });
  // Wait until both the blocker thread and the worker are stuck inside the first job.
  while (started.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // The pool is busy: a second caller runs inline and does not block.
  int64_t sum = 0;
  pool.parallel_for(100, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum, 4950);
  release = true;
  blocker.join();
}

TEST(RunControl, NoSpinningSessionGivesTheSameResults) {
  const int64_t n = 100000;
  Tensor x(DType::kFloat, Shape{n});
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  auto a = session_of(relu_chain(n), Session::builder().with_intra_threads(1)).run({{"x", x}});
  auto b = session_of(relu_chain(n), Session::builder().with_intra_threads(2).with_intra_op_spinning(false)).run({{"x", x}});
  ASSERT_EQ(a[0].tensor().numel(), b[0].tensor().numel());
  EXPECT_EQ(std::memcmp(a[0].tensor().raw_data(), b[0].tensor().raw_data(), a[0].tensor().nbytes()), 0);
}

TEST(RunControl, EightThreadsThousandRunsEachGetIdenticalOutputs) {
  // One session, an intra-op pool of 2, 8 threads x 1000 runs: every output equals the first.
  GraphSpec g;
  g.inputs = {{"x", DType::kFloat, {1, 3, 16, 16}}};
  g.outputs = {{"y", DType::kFloat, {1, 8, 16, 16}}};
  std::vector<float> w(8 * 3 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7) % 11) / 11.0f - 0.5f;
  g.initializers.emplace_back("w", Tensor::from_vector<float>(Shape{8, 3, 3, 3}, w));
  g.nodes.push_back({"Conv", {"x", "w"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}});
  g.nodes.push_back({"Relu", {"c"}, {"r"}});
  g.nodes.push_back({"Softmax", {"r"}, {"y"}, {attr_int("axis", 1)}});
  Session s = session_of(g, Session::builder().with_intra_threads(2));
  Tensor x(DType::kFloat, Shape{1, 3, 16, 16});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 13) % 17) / 17.0f;
  const Tensor ref = s.run({{"x", x}})[0].tensor();
  std::atomic<int> wrong{0};
  std::vector<std::thread> ts;
  const int runs = 1000;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&] {
      for (int r = 0; r < runs; ++r) {
        auto out = s.run({{"x", x}});
        if (std::memcmp(out[0].tensor().raw_data(), ref.raw_data(), ref.nbytes()) != 0) wrong++;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(wrong.load(), 0);
}
