// Control flow (If, Loop, Scan), sequences and optionals: cases the ONNX backend data does not
// cover (nested outer scopes, zero-trip loops, Scan axes and directions, Scan-8 sequence_lens,
// negative positions, errors, concurrency).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

Session session_of(const GraphSpec& g, int64_t opset = 17, int threads = 1) {
  const std::string m = encode_model(g, opset, opset < 9 ? 3 : 8);
  return Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
}

AttrSpec attr_graph(std::string name, const GraphSpec& g) {
  AttrSpec a{std::move(name), AttrSpec::kGraph};
  a.s = g.encode();
  return a;
}

std::vector<float> floats(const Value& v) {
  const Tensor& t = v.tensor();
  std::vector<float> r;
  for (int64_t i = 0; i < t.numel(); ++i) r.push_back(t.data<float>()[i]);
  return r;
}

std::vector<int64_t> ints(const Value& v) {
  const Tensor& t = v.tensor();
  std::vector<int64_t> r;
  for (int64_t i = 0; i < t.numel(); ++i) r.push_back(t.data<int64_t>()[i]);
  return r;
}

Tensor boolean(bool b) { return Tensor::scalar<bool>(b); }

void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// A Loop body: y_out = y_in + 1, scan_out = y_out; cond passed through (or `cond_node`).
GraphSpec counting_body(bool stop_at_three = false) {
  GraphSpec b;
  b.name = "body";
  b.inputs = {{"i", DType::kInt64, {}}, {"c_in", DType::kBool, {}}, {"y_in", DType::kFloat, {1}}};
  b.outputs = {{"c_out", DType::kBool, {}}, {"y_out", DType::kFloat, {1}}, {"scan", DType::kFloat, {1}}};
  b.initializers.emplace_back("one", Tensor::from_vector<float>(Shape{1}, {1}));
  if (stop_at_three) {
    b.initializers.emplace_back("three", Tensor::scalar<int64_t>(3));
    b.nodes.push_back({"Less", {"i", "three"}, {"c_out"}});
  } else {
    b.nodes.push_back({"Identity", {"c_in"}, {"c_out"}});
  }
  b.nodes.push_back({"Add", {"y_in", "one"}, {"y_out"}});
  b.nodes.push_back({"Identity", {"y_out"}, {"scan"}});
  return b;
}

GraphSpec loop_graph(const GraphSpec& body, bool with_m, bool with_cond) {
  GraphSpec g;
  g.inputs = {{"y0", DType::kFloat, {1}}};
  if (with_m) g.inputs.push_back({"M", DType::kInt64, {}});
  if (with_cond) g.inputs.push_back({"cond", DType::kBool, {}});
  g.outputs = {{"y", DType::kFloat, {1}}, {"scans", DType::kFloat, {-1, 1}}};
  g.nodes.push_back({"Loop", {with_m ? "M" : "", with_cond ? "cond" : "", "y0"}, {"y", "scans"}, {attr_graph("body", body)}, "loop"});
  return g;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// If

TEST(ControlFlow, IfReadsAValueTwoScopesUp) {
  // outer If(c): then = inner If(c2) whose branches read x from the main graph; else = x * x.
  GraphSpec inner_then;
  inner_then.name = "inner_then";
  inner_then.nodes.push_back({"Add", {"x", "x"}, {"it"}});
  inner_then.outputs = {{"it", DType::kFloat, {3}}};
  GraphSpec inner_else;
  inner_else.name = "inner_else";
  inner_else.nodes.push_back({"Sub", {"x", "k"}, {"ie"}});
  inner_else.outputs = {{"ie", DType::kFloat, {3}}};
  GraphSpec outer_then;
  outer_then.name = "outer_then";
  outer_then.nodes.push_back({"If", {"c2"}, {"ot"}, {attr_graph("then_branch", inner_then), attr_graph("else_branch", inner_else)}, "inner"});
  outer_then.outputs = {{"ot", DType::kFloat, {3}}};
  GraphSpec outer_else;
  outer_else.name = "outer_else";
  outer_else.nodes.push_back({"Mul", {"x", "x"}, {"oe"}});
  outer_else.outputs = {{"oe", DType::kFloat, {3}}};

  GraphSpec g;
  g.inputs = {{"c", DType::kBool, {}}, {"c2", DType::kBool, {}}, {"x", DType::kFloat, {3}}};
  g.initializers.emplace_back("k", Tensor::from_vector<float>(Shape{3}, {1, 1, 1}));
  g.outputs = {{"y", DType::kFloat, {3}}};
  g.nodes.push_back({"If", {"c"}, {"y"}, {attr_graph("then_branch", outer_then), attr_graph("else_branch", outer_else)}, "outer"});
  Session s = session_of(g);
  const Tensor x = Tensor::from_vector<float>(Shape{3}, {1, 2, 3});
  auto run = [&](bool c, bool c2) { return floats(s.run({{"c", boolean(c)}, {"c2", boolean(c2)}, {"x", x}})[0]); };
  EXPECT_EQ(run(true, true), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(run(true, false), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(run(false, true), (std::vector<float>{1, 4, 9}));
}

TEST(ControlFlow, IfResultOutlivesTheArenaBufferItCameFrom) {
  // The then branch returns the outer value `a` itself; `a`'s arena block is free once the If has
  // run, and `m` may take it: the If result must not point there.
  GraphSpec then_g;
  then_g.name = "then";
  then_g.outputs = {{"a", DType::kFloat, {4}}};
  GraphSpec else_g;
  else_g.name = "else";
  else_g.nodes.push_back({"Identity", {"x"}, {"e"}});
  else_g.outputs = {{"e", DType::kFloat, {4}}};
  GraphSpec g;
  g.inputs = {{"c", DType::kBool, {}}, {"x", DType::kFloat, {4}}};
  g.outputs = {{"y", DType::kFloat, {4}}};
  g.nodes.push_back({"Add", {"x", "x"}, {"a"}});
  g.nodes.push_back({"If", {"c"}, {"r"}, {attr_graph("then_branch", then_g), attr_graph("else_branch", else_g)}});
  g.nodes.push_back({"Mul", {"x", "x"}, {"m"}});
  g.nodes.push_back({"Add", {"r", "m"}, {"y"}});
  Session s = session_of(g);
  const Tensor x = Tensor::from_vector<float>(Shape{4}, {1, 2, 3, 4});
  for (int rep = 0; rep < 2; ++rep) {
    EXPECT_EQ(floats(s.run({{"c", boolean(true)}, {"x", x}})[0]), (std::vector<float>{3, 8, 15, 24}));
    EXPECT_EQ(floats(s.run({{"c", boolean(false)}, {"x", x}})[0]), (std::vector<float>{2, 6, 12, 20}));
  }
}

TEST(ControlFlow, IfBranchesWithDifferentShapes) {
  GraphSpec then_g;
  then_g.name = "then";
  then_g.initializers.emplace_back("t", Tensor::from_vector<float>(Shape{2}, {1, 2}));
  then_g.nodes.push_back({"Identity", {"t"}, {"to"}});
  then_g.outputs = {{"to", DType::kFloat, {2}}};
  GraphSpec else_g;
  else_g.name = "else";
  else_g.initializers.emplace_back("e", Tensor::from_vector<float>(Shape{3}, {7, 8, 9}));
  else_g.nodes.push_back({"Identity", {"e"}, {"eo"}});
  else_g.outputs = {{"eo", DType::kFloat, {3}}};
  GraphSpec g;
  g.inputs = {{"c", DType::kBool, {}}};
  g.outputs = {{"y", DType::kFloat, {-1}}};
  g.nodes.push_back({"If", {"c"}, {"r"}, {attr_graph("then_branch", then_g), attr_graph("else_branch", else_g)}});
  g.nodes.push_back({"Neg", {"r"}, {"y"}});
  Session s = session_of(g);
  EXPECT_EQ(floats(s.run({{"c", boolean(true)}})[0]), (std::vector<float>{-1, -2}));
  EXPECT_EQ(floats(s.run({{"c", boolean(false)}})[0]), (std::vector<float>{-7, -8, -9}));
}

TEST(ControlFlow, IfRejectsBranchesOfDifferentTypes) {
  GraphSpec then_g;
  then_g.name = "then";
  then_g.initializers.emplace_back("t", Tensor::from_vector<float>(Shape{1}, {1}));
  then_g.nodes.push_back({"Identity", {"t"}, {"to"}});
  then_g.outputs = {{"to", DType::kFloat, {1}}};
  GraphSpec else_g;
  else_g.name = "else";
  else_g.initializers.emplace_back("e", Tensor::from_vector<int64_t>(Shape{1}, {1}));
  else_g.nodes.push_back({"Identity", {"e"}, {"eo"}});
  else_g.outputs = {{"eo", DType::kInt64, {1}}};
  GraphSpec g;
  g.inputs = {{"c", DType::kBool, {}}};
  g.outputs = {{"y", DType::kFloat, {1}}};
  g.nodes.push_back({"If", {"c"}, {"y"}, {attr_graph("then_branch", then_g), attr_graph("else_branch", else_g)}, "pick"});
  expect_error([&] { session_of(g); }, "then_branch returns float[1]");
}

TEST(ControlFlow, IfConditionMustHoldOneValue) {
  GraphSpec then_g;
  then_g.name = "then";
  then_g.nodes.push_back({"Identity", {"x"}, {"to"}});
  then_g.outputs = {{"to", DType::kFloat, {1}}};
  GraphSpec g;
  g.inputs = {{"c", DType::kBool, {-1}}, {"x", DType::kFloat, {1}}};
  g.outputs = {{"y", DType::kFloat, {1}}};
  g.nodes.push_back({"If", {"c"}, {"y"}, {attr_graph("then_branch", then_g), attr_graph("else_branch", then_g)}, "pick"});
  Session s = session_of(g);
  const Tensor x = Tensor::from_vector<float>(Shape{1}, {5});
  EXPECT_EQ(floats(s.run({{"c", Tensor::from_vector<bool>(Shape{1}, {true})}, {"x", x}})[0]), (std::vector<float>{5}));
  expect_error([&] { s.run({{"c", Tensor::from_vector<bool>(Shape{2}, {true, false})}, {"x", x}}); }, "If 'pick'");
}

// ---------------------------------------------------------------------------------------------
// Loop

TEST(ControlFlow, LoopCountsAndScans) {
  Session s = session_of(loop_graph(counting_body(), true, true));
  auto out = s.run({{"y0", Tensor::from_vector<float>(Shape{1}, {10})}, {"M", Tensor::scalar<int64_t>(3)}, {"cond", boolean(true)}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{13}));
  EXPECT_EQ(out[1].tensor().shape(), (Shape{3, 1}));
  EXPECT_EQ(floats(out[1]), (std::vector<float>{11, 12, 13}));
}

TEST(ControlFlow, LoopWithZeroTripCount) {
  Session s = session_of(loop_graph(counting_body(), true, false));
  auto out = s.run({{"y0", Tensor::from_vector<float>(Shape{1}, {10})}, {"M", Tensor::scalar<int64_t>(0)}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{10}));
  EXPECT_EQ(out[1].tensor().dtype(), DType::kFloat);
  EXPECT_EQ(out[1].tensor().shape(), (Shape{0, 1}));
  // A negative trip count runs no iteration either.
  out = s.run({{"y0", Tensor::from_vector<float>(Shape{1}, {10})}, {"M", Tensor::scalar<int64_t>(-4)}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{10}));
}

TEST(ControlFlow, LoopWithFalseConditionRunsNoIteration) {
  Session s = session_of(loop_graph(counting_body(), true, true));
  auto out = s.run({{"y0", Tensor::from_vector<float>(Shape{1}, {1})}, {"M", Tensor::scalar<int64_t>(5)}, {"cond", boolean(false)}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{1}));
  EXPECT_EQ(out[1].tensor().shape(), (Shape{0, 1}));
}

TEST(ControlFlow, LoopAsWhileLoop) {
  // No trip count: the body's condition (i < 3) ends the loop after iteration 3.
  Session s = session_of(loop_graph(counting_body(true), false, true));
  auto out = s.run({{"y0", Tensor::from_vector<float>(Shape{1}, {0})}, {"cond", boolean(true)}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{4}));
  EXPECT_EQ(floats(out[1]), (std::vector<float>{1, 2, 3, 4}));
}

TEST(ControlFlow, LoopIgnoresTheBodyConditionWithoutACondInput) {
  // With only a trip count the body's condition output is ignored (ONNX's "for" form).
  Session s = session_of(loop_graph(counting_body(true), true, false));
  auto out = s.run({{"y0", Tensor::from_vector<float>(Shape{1}, {0})}, {"M", Tensor::scalar<int64_t>(6)}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{6}));
}

TEST(ControlFlow, LoopGrowingValueAndOuterScope) {
  // acc = Concat(acc, base * i): the loop-carried value changes shape every iteration; `base` is
  // read from the main graph.
  GraphSpec b;
  b.name = "grow";
  b.inputs = {{"i", DType::kInt64, {}}, {"c_in", DType::kBool, {}}, {"acc_in", DType::kFloat, {-1}}};
  b.outputs = {{"c_out", DType::kBool, {}}, {"acc_out", DType::kFloat, {-1}}};
  b.nodes.push_back({"Identity", {"c_in"}, {"c_out"}});
  b.nodes.push_back({"Cast", {"i"}, {"fi"}, {attr_int("to", 1)}});
  b.nodes.push_back({"Mul", {"base", "fi"}, {"piece"}});
  b.nodes.push_back({"Concat", {"acc_in", "piece"}, {"acc_out"}, {attr_int("axis", 0)}});
  GraphSpec g;
  g.inputs = {{"M", DType::kInt64, {}}, {"base", DType::kFloat, {2}}};
  g.initializers.emplace_back("empty", Tensor(DType::kFloat, Shape{0}));
  g.outputs = {{"acc", DType::kFloat, {-1}}};
  g.nodes.push_back({"Loop", {"M", "", "empty"}, {"acc"}, {attr_graph("body", b)}});
  Session s = session_of(g);
  auto out = s.run({{"M", Tensor::scalar<int64_t>(3)}, {"base", Tensor::from_vector<float>(Shape{2}, {1, 10})}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{0, 0, 1, 10, 2, 20}));
}

TEST(ControlFlow, LoopScanOutputChangingShapeIsAnError) {
  GraphSpec b;
  b.name = "grow";
  b.inputs = {{"i", DType::kInt64, {}}, {"c_in", DType::kBool, {}}, {"acc_in", DType::kFloat, {-1}}};
  b.outputs = {{"c_out", DType::kBool, {}}, {"acc_out", DType::kFloat, {-1}}, {"scan", DType::kFloat, {-1}}};
  b.nodes.push_back({"Identity", {"c_in"}, {"c_out"}});
  b.nodes.push_back({"Concat", {"acc_in", "acc_in"}, {"acc_out"}, {attr_int("axis", 0)}});
  b.nodes.push_back({"Identity", {"acc_out"}, {"scan"}});
  GraphSpec g;
  g.inputs = {{"M", DType::kInt64, {}}, {"x", DType::kFloat, {1}}};
  g.outputs = {{"acc", DType::kFloat, {-1}}, {"scans", DType::kFloat, {-1, -1}}};
  g.nodes.push_back({"Loop", {"M", "", "x"}, {"acc", "scans"}, {attr_graph("body", b)}, "grow"});
  Session s = session_of(g);
  auto out = s.run({{"M", Tensor::scalar<int64_t>(1)}, {"x", Tensor::from_vector<float>(Shape{1}, {5})}});
  EXPECT_EQ(floats(out[1]), (std::vector<float>{5, 5}));
  expect_error([&] { s.run({{"M", Tensor::scalar<int64_t>(2)}, {"x", Tensor::from_vector<float>(Shape{1}, {5})}}); },
               "body output 'scan' (scan output 0) is float[4] at iteration 1 but was float[2] before");
}

TEST(ControlFlow, LoopBodyReturningAWrongTypeIsAnError) {
  GraphSpec b;
  b.name = "bad";
  b.inputs = {{"i", DType::kInt64, {}}, {"c_in", DType::kBool, {}}, {"y_in", DType::kFloat, {}}};
  b.outputs = {{"c_out", DType::kBool, {}}, {"y_out", DType::kInt64, {}}};
  b.nodes.push_back({"Identity", {"c_in"}, {"c_out"}});
  b.nodes.push_back({"Identity", {"i"}, {"y_out"}});
  GraphSpec g;
  g.inputs = {{"M", DType::kInt64, {}}, {"y0", DType::kFloat, {}}};
  g.outputs = {{"y", DType::kFloat, {}}};
  g.nodes.push_back({"Loop", {"M", "", "y0"}, {"y"}, {attr_graph("body", b)}, "badloop"});
  expect_error([&] { session_of(g); }, "loop-carried value 0: the body returns int64");
}

TEST(ControlFlow, LoopBodyWithTheWrongNumberOfInputsIsAnError) {
  GraphSpec b = counting_body();
  b.inputs.push_back({"extra", DType::kFloat, {1}});
  expect_error([&] { session_of(loop_graph(b, true, true)); }, "Loop 'loop': the body takes 4 inputs");
}

TEST(ControlFlow, LoopRunsConcurrently) {
  Session s = session_of(loop_graph(counting_body(), true, false), 17, 4);
  std::vector<std::thread> threads;
  std::vector<int> ok(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        auto out = s.run({{"y0", Tensor::from_vector<float>(Shape{1}, {float(t)})}, {"M", Tensor::scalar<int64_t>(t + 1)}});
        if (floats(out[0]) != std::vector<float>{float(2 * t + 1)} || out[1].tensor().dim(0) != t + 1) return;
      }
      ok[t] = 1;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(ok[t], 1) << "thread " << t;
}

// ---------------------------------------------------------------------------------------------
// Scan

GraphSpec sum_body(int64_t elem) {
  GraphSpec b;
  b.name = "sum";
  b.inputs = {{"s_in", DType::kFloat, {elem}}, {"x_t", DType::kFloat, {elem}}};
  b.outputs = {{"s_out", DType::kFloat, {elem}}, {"z_t", DType::kFloat, {elem}}};
  b.nodes.push_back({"Add", {"s_in", "x_t"}, {"s_out"}});
  b.nodes.push_back({"Identity", {"s_out"}, {"z_t"}});
  return b;
}

TEST(ControlFlow, ScanAxesAndDirections) {
  // x is [2,3]; scanning axis 1 in reverse gives columns 2, 1, 0; z stacks the running sums along
  // output axis 1.
  GraphSpec g;
  g.inputs = {{"init", DType::kFloat, {2}}, {"x", DType::kFloat, {2, 3}}};
  g.outputs = {{"s", DType::kFloat, {2}}, {"z", DType::kFloat, {2, 3}}};
  g.nodes.push_back({"Scan", {"init", "x"}, {"s", "z"},
                     {attr_graph("body", sum_body(2)), attr_int("num_scan_inputs", 1), attr_ints("scan_input_axes", {1}),
                      attr_ints("scan_input_directions", {1}), attr_ints("scan_output_axes", {-1})}});
  Session s = session_of(g, 16);
  auto out = s.run({{"init", Tensor::from_vector<float>(Shape{2}, {0, 100})},
                    {"x", Tensor::from_vector<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6})}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{6, 115}));
  EXPECT_EQ(out[1].tensor().shape(), (Shape{2, 3}));
  EXPECT_EQ(floats(out[1]), (std::vector<float>{3, 5, 6, 106, 111, 115}));
}

TEST(ControlFlow, ScanOutputInReverse) {
  GraphSpec g;
  g.inputs = {{"init", DType::kFloat, {1}}, {"x", DType::kFloat, {3, 1}}};
  g.outputs = {{"s", DType::kFloat, {1}}, {"z", DType::kFloat, {3, 1}}};
  g.nodes.push_back({"Scan", {"init", "x"}, {"s", "z"},
                     {attr_graph("body", sum_body(1)), attr_int("num_scan_inputs", 1), attr_ints("scan_output_directions", {1})}});
  Session s = session_of(g, 11);
  auto out = s.run({{"init", Tensor::from_vector<float>(Shape{1}, {0})}, {"x", Tensor::from_vector<float>(Shape{3, 1}, {1, 2, 3})}});
  EXPECT_EQ(floats(out[1]), (std::vector<float>{6, 3, 1}));
}

TEST(ControlFlow, ScanWithNoIterations) {
  GraphSpec g;
  g.inputs = {{"init", DType::kFloat, {2}}, {"x", DType::kFloat, {-1, 2}}};
  g.outputs = {{"s", DType::kFloat, {2}}, {"z", DType::kFloat, {-1, 2}}};
  g.nodes.push_back({"Scan", {"init", "x"}, {"s", "z"}, {attr_graph("body", sum_body(2)), attr_int("num_scan_inputs", 1)}});
  Session s = session_of(g, 16);
  auto out = s.run({{"init", Tensor::from_vector<float>(Shape{2}, {4, 5})}, {"x", Tensor(DType::kFloat, Shape{0, 2})}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{4, 5}));
  EXPECT_EQ(out[1].tensor().shape(), (Shape{0, 2}));
}

TEST(ControlFlow, Scan8WithSequenceLengths) {
  // Batch of 2; sequence lengths 3 and 2: the second batch's last scan row stays zero.
  GraphSpec g;
  g.inputs = {{"lens", DType::kInt64, {2}}, {"init", DType::kFloat, {2, 1}}, {"x", DType::kFloat, {2, 3, 1}}};
  g.outputs = {{"s", DType::kFloat, {2, 1}}, {"z", DType::kFloat, {2, 3, 1}}};
  g.nodes.push_back({"Scan", {"lens", "init", "x"}, {"s", "z"}, {attr_graph("body", sum_body(1)), attr_int("num_scan_inputs", 1)}});
  Session s = session_of(g, 8);
  auto out = s.run({{"lens", Tensor::from_vector<int64_t>(Shape{2}, {3, 2})},
                    {"init", Tensor::from_vector<float>(Shape{2, 1}, {0, 0})},
                    {"x", Tensor::from_vector<float>(Shape{2, 3, 1}, {1, 2, 3, 4, 5, 6})}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{6, 9}));
  EXPECT_EQ(floats(out[1]), (std::vector<float>{1, 3, 6, 4, 9, 0}));
  expect_error([&] {
    s.run({{"lens", Tensor::from_vector<int64_t>(Shape{2}, {4, 2})},
           {"init", Tensor::from_vector<float>(Shape{2, 1}, {0, 0})},
           {"x", Tensor::from_vector<float>(Shape{2, 3, 1}, {1, 2, 3, 4, 5, 6})}});
  }, "sequence_lens[0] = 4");
}

TEST(ControlFlow, ScanInputsOfDifferentLengthsAreAnError) {
  GraphSpec b;
  b.name = "two";
  b.inputs = {{"a", DType::kFloat, {}}, {"b", DType::kFloat, {}}};
  b.outputs = {{"o", DType::kFloat, {}}};
  b.nodes.push_back({"Add", {"a", "b"}, {"o"}});
  GraphSpec g;
  g.inputs = {{"a", DType::kFloat, {-1}}, {"b", DType::kFloat, {-1}}};
  g.outputs = {{"o", DType::kFloat, {-1}}};
  g.nodes.push_back({"Scan", {"a", "b"}, {"o"}, {attr_graph("body", b), attr_int("num_scan_inputs", 2)}, "zip"});
  Session s = session_of(g, 16);
  auto out = s.run({{"a", Tensor::from_vector<float>(Shape{2}, {1, 2})}, {"b", Tensor::from_vector<float>(Shape{2}, {10, 20})}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{11, 22}));
  expect_error([&] {
    s.run({{"a", Tensor::from_vector<float>(Shape{2}, {1, 2})}, {"b", Tensor::from_vector<float>(Shape{3}, {1, 2, 3})}});
  }, "Scan 'zip': the scan inputs disagree on the sequence length: 2 vs 3");
}

TEST(ControlFlow, ScanBodyDeclaredWithConflictingShapesIsAnError) {
  // The body declares [5] inputs but the scan hands it [2] slices: an error naming the body input,
  // not shapes planned from the declaration.
  GraphSpec g;
  g.inputs = {{"init", DType::kFloat, {-1}}, {"x", DType::kFloat, {-1, -1}}};
  g.outputs = {{"w", DType::kFloat, {-1, -1}}};
  g.nodes.push_back({"Scan", {"init", "x"}, {"s", "z"}, {attr_graph("body", sum_body(5)), attr_int("num_scan_inputs", 1)}, "scan"});
  g.nodes.push_back({"Add", {"z", "z"}, {"w"}});
  Session s = session_of(g, 16);
  expect_error([&] {
    s.run({{"init", Tensor::from_vector<float>(Shape{2}, {0, 1})}, {"x", Tensor::from_vector<float>(Shape{3, 2}, {1, 2, 3, 4, 5, 6})}});
  }, "Scan 'scan': body input 's_in' is declared float[5] but receives float[2]");
}

TEST(ControlFlow, IfInsideLoopReadsTheBodyAndTheMainGraph) {
  // Loop body: y_out = If(i is even) then y_in + base (base from two scopes up) else y_in.
  GraphSpec then_g;
  then_g.name = "even";
  then_g.nodes.push_back({"Add", {"y_in", "base"}, {"t"}});
  then_g.outputs = {{"t", DType::kFloat, {1}}};
  GraphSpec else_g;
  else_g.name = "odd";
  else_g.nodes.push_back({"Identity", {"y_in"}, {"e"}});
  else_g.outputs = {{"e", DType::kFloat, {1}}};
  GraphSpec b;
  b.name = "body";
  b.inputs = {{"i", DType::kInt64, {}}, {"c_in", DType::kBool, {}}, {"y_in", DType::kFloat, {1}}};
  b.outputs = {{"c_out", DType::kBool, {}}, {"y_out", DType::kFloat, {1}}};
  b.initializers.emplace_back("two", Tensor::scalar<int64_t>(2));
  b.initializers.emplace_back("zero", Tensor::scalar<int64_t>(0));
  b.nodes.push_back({"Identity", {"c_in"}, {"c_out"}});
  b.nodes.push_back({"Mod", {"i", "two"}, {"r"}});
  b.nodes.push_back({"Equal", {"r", "zero"}, {"even"}});
  b.nodes.push_back({"If", {"even"}, {"y_out"}, {attr_graph("then_branch", then_g), attr_graph("else_branch", else_g)}});
  GraphSpec g;
  g.inputs = {{"M", DType::kInt64, {}}, {"y0", DType::kFloat, {1}}, {"base", DType::kFloat, {1}}};
  g.outputs = {{"y", DType::kFloat, {1}}};
  g.nodes.push_back({"Loop", {"M", "", "y0"}, {"y"}, {attr_graph("body", b)}});
  Session s = session_of(g);
  auto out = s.run({{"M", Tensor::scalar<int64_t>(5)}, {"y0", Tensor::from_vector<float>(Shape{1}, {1})},
                    {"base", Tensor::from_vector<float>(Shape{1}, {10})}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{31}));  // iterations 0, 2, 4 add 10
}

// ---------------------------------------------------------------------------------------------
// Sequences and optionals

GraphSpec abc_sequence_graph() {
  GraphSpec g;
  g.inputs = {{"a", DType::kFloat, {1}}, {"b", DType::kFloat, {2}}, {"c", DType::kFloat, {3}}, {"pos", DType::kInt64, {}}};
  g.outputs = {{"y", DType::kFloat, {-1}}, {"n", DType::kInt64, {}}};
  g.nodes.push_back({"SequenceConstruct", {"a", "b", "c"}, {"seq"}});
  g.nodes.push_back({"SequenceAt", {"seq", "pos"}, {"y"}, {}, "at"});
  g.nodes.push_back({"SequenceLength", {"seq"}, {"n"}});
  return g;
}

TEST(Sequence, SequenceAtWithNegativeAndOutOfRangePositions) {
  Session s = session_of(abc_sequence_graph());
  const Tensor a = Tensor::from_vector<float>(Shape{1}, {1});
  const Tensor b = Tensor::from_vector<float>(Shape{2}, {2, 3});
  const Tensor c = Tensor::from_vector<float>(Shape{3}, {4, 5, 6});
  auto at = [&](int64_t p) { return s.run({{"a", a}, {"b", b}, {"c", c}, {"pos", Tensor::scalar<int64_t>(p)}}); };
  EXPECT_EQ(floats(at(-1)[0]), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(floats(at(-3)[0]), (std::vector<float>{1}));
  EXPECT_EQ(floats(at(1)[0]), (std::vector<float>{2, 3}));
  EXPECT_EQ(ints(at(0)[1]), (std::vector<int64_t>{3}));
  expect_error([&] { at(3); }, "position 3 is out of range for a sequence of 3 tensors");
  expect_error([&] { at(-4); }, "SequenceAt 'at'");
}

TEST(Sequence, InsertEraseAndConcat) {
  // [a] -> insert b at 0 -> [b, a] -> insert c at -1 -> [b, c, a] -> erase 0 -> [c, a] -> concat.
  GraphSpec g;
  g.inputs = {{"a", DType::kFloat, {2}}, {"b", DType::kFloat, {2}}, {"c", DType::kFloat, {2}}};
  g.initializers.emplace_back("zero", Tensor::scalar<int64_t>(0));
  g.initializers.emplace_back("minus1", Tensor::scalar<int64_t>(-1));
  g.outputs = {{"cat", DType::kFloat, {-1}}, {"stack", DType::kFloat, {-1, -1}}};
  g.nodes.push_back({"SequenceConstruct", {"a"}, {"s1"}});
  g.nodes.push_back({"SequenceInsert", {"s1", "b", "zero"}, {"s2"}});
  g.nodes.push_back({"SequenceInsert", {"s2", "c", "minus1"}, {"s3"}});
  g.nodes.push_back({"SequenceErase", {"s3", "zero"}, {"s4"}});
  g.nodes.push_back({"ConcatFromSequence", {"s4"}, {"cat"}, {attr_int("axis", 0)}});
  g.nodes.push_back({"ConcatFromSequence", {"s4"}, {"stack"}, {attr_int("axis", 1), attr_int("new_axis", 1)}});
  Session s = session_of(g);
  auto out = s.run({{"a", Tensor::from_vector<float>(Shape{2}, {1, 2})},
                    {"b", Tensor::from_vector<float>(Shape{2}, {3, 4})},
                    {"c", Tensor::from_vector<float>(Shape{2}, {5, 6})}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{5, 6, 1, 2}));
  EXPECT_EQ(out[1].tensor().shape(), (Shape{2, 2}));
  EXPECT_EQ(floats(out[1]), (std::vector<float>{5, 1, 6, 2}));
}

TEST(Sequence, SplitToSequenceWithScalarSplitAndBack) {
  GraphSpec g;
  g.inputs = {{"x", DType::kFloat, {5, 2}}};
  g.initializers.emplace_back("two", Tensor::scalar<int64_t>(2));
  g.outputs = {{"n", DType::kInt64, {}}, {"back", DType::kFloat, {-1, 2}}, {"rows", DType::kInt64, {}}};
  g.nodes.push_back({"SplitToSequence", {"x", "two"}, {"seq"}});
  g.nodes.push_back({"SequenceLength", {"seq"}, {"n"}});
  g.nodes.push_back({"ConcatFromSequence", {"seq"}, {"back"}, {attr_int("axis", 0)}});
  g.nodes.push_back({"SplitToSequence", {"x"}, {"rows_seq"}, {attr_int("keepdims", 0)}});
  g.nodes.push_back({"SequenceLength", {"rows_seq"}, {"rows"}});
  Session s = session_of(g);
  std::vector<float> xs{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  auto out = s.run({{"x", Tensor::from_vector<float>(Shape{5, 2}, xs)}});
  EXPECT_EQ(ints(out[0]), (std::vector<int64_t>{3}));
  EXPECT_EQ(floats(out[1]), xs);
  EXPECT_EQ(ints(out[2]), (std::vector<int64_t>{5}));
}

TEST(Sequence, SequenceInsertRejectsAnotherElementType) {
  GraphSpec g;
  g.inputs = {{"a", DType::kFloat, {2}}, {"i", DType::kInt64, {2}}};
  g.outputs = {{"n", DType::kInt64, {}}};
  g.nodes.push_back({"SequenceConstruct", {"a"}, {"s1"}});
  g.nodes.push_back({"SequenceInsert", {"s1", "i"}, {"s2"}, {}, "ins"});
  g.nodes.push_back({"SequenceLength", {"s2"}, {"n"}});
  expect_error([&] { session_of(g); }, "SequenceInsert 'ins'");
}

TEST(Sequence, LoopBuildsASequenceThenConcatenates) {
  // A sequence as loop-carried value, starting from SequenceEmpty; elements read the outer x.
  GraphSpec b;
  b.name = "collect";
  b.inputs = {{"i", DType::kInt64, {}}, {"c_in", DType::kBool, {}}, {"s_in", DType::kFloat, {}, {}, true}};
  b.outputs = {{"c_out", DType::kBool, {}}, {"s_out", DType::kFloat, {}, {}, true}};
  b.nodes.push_back({"Identity", {"c_in"}, {"c_out"}});
  b.nodes.push_back({"Cast", {"i"}, {"fi"}, {attr_int("to", 1)}});
  b.nodes.push_back({"Add", {"x", "fi"}, {"e"}});
  b.nodes.push_back({"SequenceInsert", {"s_in", "e"}, {"s_out"}});
  GraphSpec g;
  g.inputs = {{"M", DType::kInt64, {}}, {"x", DType::kFloat, {2}}};
  g.outputs = {{"y", DType::kFloat, {-1}}};
  g.nodes.push_back({"SequenceEmpty", {}, {"empty"}, {attr_int("dtype", 1)}});
  g.nodes.push_back({"Loop", {"M", "", "empty"}, {"seq"}, {attr_graph("body", b)}});
  g.nodes.push_back({"ConcatFromSequence", {"seq"}, {"y"}, {attr_int("axis", 0)}});
  Session s = session_of(g);
  auto out = s.run({{"M", Tensor::scalar<int64_t>(3)}, {"x", Tensor::from_vector<float>(Shape{2}, {10, 20})}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{10, 20, 11, 21, 12, 22}));
  expect_error([&] { s.run({{"M", Tensor::scalar<int64_t>(0)}, {"x", Tensor::from_vector<float>(Shape{2}, {1, 2})}}); },
               "cannot concatenate an empty sequence");
}

TEST(Sequence, SequenceMapWithAnExtraTensorInput) {
  GraphSpec b;
  b.name = "scale";
  b.inputs = {{"e", DType::kFloat, {-1}}, {"k", DType::kFloat, {}}};
  b.outputs = {{"o", DType::kFloat, {-1}}, {"len", DType::kInt64, {1}}};
  b.nodes.push_back({"Mul", {"e", "k"}, {"o"}});
  b.nodes.push_back({"Shape", {"e"}, {"len"}});
  GraphSpec g;
  g.inputs = {{"a", DType::kFloat, {1}}, {"b", DType::kFloat, {2}}, {"k", DType::kFloat, {}}};
  g.outputs = {{"y", DType::kFloat, {-1}}, {"lens", DType::kInt64, {-1}}};
  g.nodes.push_back({"SequenceConstruct", {"a", "b"}, {"seq"}});
  g.nodes.push_back({"SequenceMap", {"seq", "k"}, {"mapped", "shapes"}, {attr_graph("body", b)}});
  g.nodes.push_back({"ConcatFromSequence", {"mapped"}, {"y"}, {attr_int("axis", 0)}});
  g.nodes.push_back({"ConcatFromSequence", {"shapes"}, {"lens"}, {attr_int("axis", 0)}});
  Session s = session_of(g);
  auto out = s.run({{"a", Tensor::from_vector<float>(Shape{1}, {1})},
                    {"b", Tensor::from_vector<float>(Shape{2}, {2, 3})},
                    {"k", Tensor::scalar<float>(10)}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{1, 2}));
}

TEST(Optional, HasElementWithoutAnInput) {
  GraphSpec g;
  g.inputs = {{"x", DType::kFloat, {1}}};
  g.outputs = {{"none", DType::kBool, {}}, {"some", DType::kBool, {}}, {"v", DType::kFloat, {1}}};
  g.nodes.push_back({"OptionalHasElement", {""}, {"none"}});
  g.nodes.push_back({"Optional", {"x"}, {"opt"}});
  g.nodes.push_back({"OptionalHasElement", {"opt"}, {"some"}});
  g.nodes.push_back({"OptionalGetElement", {"opt"}, {"v"}});
  Session s = session_of(g, 18);
  auto out = s.run({{"x", Tensor::from_vector<float>(Shape{1}, {7})}});
  EXPECT_FALSE(out[0].tensor().data<bool>()[0]);
  EXPECT_TRUE(out[1].tensor().data<bool>()[0]);
  EXPECT_EQ(floats(out[2]), (std::vector<float>{7}));
}

// model_builder has no TypeProto attributes: encode `Optional(type=float)` by hand and append it to
// the graph (a repeated field, so appended bytes add a node).
std::string empty_optional_node(const std::string& out) {
  ProtoWriter tensor_type;
  tensor_type.varint(1, static_cast<uint64_t>(DType::kFloat));
  ProtoWriter type;
  type.bytes(1, tensor_type.str());
  ProtoWriter attr;
  attr.bytes(1, "type");
  attr.bytes(14, type.str());
  attr.varint(20, 13);
  ProtoWriter node;
  node.bytes(2, out);
  node.bytes(4, "Optional");
  node.bytes(5, attr.str());
  ProtoWriter graph_field;
  graph_field.bytes(1, node.str());
  return graph_field.take();
}

TEST(Optional, EmptyOptionalThroughIf) {
  // then: Optional(x); else: Optional(type=float), empty. Downstream: has-element and get-element.
  GraphSpec then_g;
  then_g.name = "then";
  then_g.nodes.push_back({"Optional", {"x"}, {"o"}});
  then_g.outputs = {{"o", DType::kFloat, {1}, {}, true}};
  GraphSpec else_g;
  else_g.name = "else";
  else_g.outputs = {{"o_empty", DType::kFloat, {1}, {}, true}};
  std::string else_bytes = else_g.encode() + empty_optional_node("o_empty");
  AttrSpec else_attr{"else_branch", AttrSpec::kGraph};
  else_attr.s = else_bytes;

  GraphSpec g;
  g.inputs = {{"c", DType::kBool, {}}, {"x", DType::kFloat, {1}}};
  g.outputs = {{"has", DType::kBool, {}}, {"v", DType::kFloat, {1}}};
  g.nodes.push_back({"If", {"c"}, {"opt"}, {attr_graph("then_branch", then_g), else_attr}});
  g.nodes.push_back({"OptionalHasElement", {"opt"}, {"has"}});
  g.nodes.push_back({"OptionalGetElement", {"opt"}, {"v"}, {}, "get"});
  Session s = session_of(g, 16);
  const Tensor x = Tensor::from_vector<float>(Shape{1}, {3});
  auto out = s.run({{"c", boolean(true)}, {"x", x}});
  EXPECT_TRUE(out[0].tensor().data<bool>()[0]);
  EXPECT_EQ(floats(out[1]), (std::vector<float>{3}));
  expect_error([&] { s.run({{"c", boolean(false)}, {"x", x}}); }, "OptionalGetElement 'get'");
  expect_error([&] { s.run({{"c", boolean(false)}, {"x", x}}); }, "the optional input is empty");
}

namespace {

// ValueInfoProto bytes (as a GraphProto input field) for `name`: optional(float[dim]).
std::string optional_float_input(const std::string& name, int64_t dim) {
  ProtoWriter d;
  d.varint(1, static_cast<uint64_t>(dim));
  ProtoWriter shape;
  shape.bytes(1, d.str());
  ProtoWriter tensor_type;
  tensor_type.varint(1, static_cast<uint64_t>(DType::kFloat));
  tensor_type.bytes(2, shape.str());
  ProtoWriter elem;
  elem.bytes(1, tensor_type.str());
  ProtoWriter opt;
  opt.bytes(1, elem.str());
  ProtoWriter type;
  type.bytes(9, opt.str());
  ProtoWriter vi;
  vi.bytes(1, name);
  vi.bytes(2, type.str());
  ProtoWriter graph_field;
  graph_field.bytes(11, vi.str());
  return graph_field.take();
}

Session session_of_graph_bytes(const std::string& graph, int64_t opset) {
  ProtoWriter w;
  w.varint(1, 8);
  w.bytes(2, "onyx-tests");
  w.bytes(7, graph);
  ProtoWriter os;
  os.bytes(1, "");
  os.varint(2, static_cast<uint64_t>(opset));
  w.bytes(8, os.str());
  const std::string m = w.take();
  return Session::builder().with_intra_threads(1).commit_from_memory(m.data(), m.size());
}

}  // namespace

// Disabled: the executor's plan cache does not tell optional inputs apart (presence, element
// shape), and build_plan puts the optional's whole value into the plan-time facts, so a second
// run reuses values folded from the first. Enable once plan_for / build_plan key on them.
TEST(Optional, OptionalGraphInputIsNotBakedIntoThePlan) {
  GraphSpec g;
  g.outputs = {{"has", DType::kBool, {}}, {"v", DType::kFloat, {1}}};
  g.nodes.push_back({"OptionalHasElement", {"o"}, {"has"}});
  g.nodes.push_back({"OptionalGetElement", {"o"}, {"v"}});
  Session s = session_of_graph_bytes(g.encode() + optional_float_input("o", 1), 18);
  auto out = s.run({{"o", Value::optional_of(Tensor::from_vector<float>(Shape{1}, {1}))}});
  EXPECT_EQ(floats(out[1]), (std::vector<float>{1}));
  out = s.run({{"o", Value::optional_of(Tensor::from_vector<float>(Shape{1}, {2}))}});
  EXPECT_EQ(floats(out[1]), (std::vector<float>{2}));
  // Every node runs (onyx does not prune by requested outputs), so the empty case uses a graph
  // without OptionalGetElement.
  GraphSpec h;
  h.outputs = {{"has", DType::kBool, {}}};
  h.nodes.push_back({"OptionalHasElement", {"o"}, {"has"}});
  Session hs = session_of_graph_bytes(h.encode() + optional_float_input("o", 1), 18);
  EXPECT_TRUE(hs.run({{"o", Value::optional_of(Tensor::from_vector<float>(Shape{1}, {1}))}})[0].tensor().data<bool>()[0]);
  EXPECT_FALSE(hs.run({{"o", Value::optional_none(DType::kFloat)}})[0].tensor().data<bool>()[0]);
}
