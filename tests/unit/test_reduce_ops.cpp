// Reduce and loss families: behaviour the ONNX 1.12 backend test data does not cover (opset 18+
// axes inputs, noop_with_empty_axes, bool ReduceMax/Min at opset 20, empty reductions, runtime
// axes), plus a brute-force comparison of every Reduce* op over every axes subset.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

Session session_of(const GraphSpec& g, int64_t opset, int threads = 1) {
  const std::string m = encode_model(g, opset);
  return Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
}

std::vector<float> float_values(const Tensor& t) {
  std::vector<float> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<float>(t.element_as_double(i)));
  return v;
}

/// One-node graph: op(x [, axes initializer]) -> y.
GraphSpec reduce_graph(const std::string& op, const std::vector<int64_t>& in_dims, const std::vector<int64_t>* axes,
                       std::vector<AttrSpec> attrs, DType dt = DType::kFloat) {
  GraphSpec g;
  NodeSpec n{op, {"x"}, {"y"}, std::move(attrs)};
  if (axes) {
    n.inputs.push_back("axes");
    g.initializers.emplace_back("axes", Tensor::from_vector<int64_t>(Shape{static_cast<int64_t>(axes->size())}, *axes));
  }
  g.nodes.push_back(n);
  g.inputs.push_back({"x", dt, in_dims});
  g.outputs.push_back(any_out("y", dt));
  return g;
}

Tensor iota(const Shape& s, float start = 1, float step = 1) {
  Tensor t(DType::kFloat, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + step * static_cast<float>(i);
  return t;
}

}  // namespace

TEST(ReduceOps, AxesInputAtOpset18) {
  const std::vector<int64_t> axes = {1};
  Session s = session_of(reduce_graph("ReduceMean", {2, 3}, &axes, {attr_int("keepdims", 0)}), 18);
  auto out = s.run({{"x", iota(Shape{2, 3})}});
  const Tensor& y = out[0].tensor();
  EXPECT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(float_values(y), (std::vector<float>{2, 5}));

  const std::vector<int64_t> neg = {-2};
  Session s2 = session_of(reduce_graph("ReduceMax", {2, 3}, &neg, {}), 18);
  auto out2 = s2.run({{"x", iota(Shape{2, 3})}});
  EXPECT_EQ(out2[0].tensor().shape(), (Shape{1, 3}));
  EXPECT_EQ(float_values(out2[0].tensor()), (std::vector<float>{4, 5, 6}));
}

TEST(ReduceOps, AttributeAxesBeforeOpset18) {
  Session s = session_of(reduce_graph("ReduceL2", {2, 2}, nullptr, {attr_ints("axes", {0}), attr_int("keepdims", 0)}), 13);
  auto out = s.run({{"x", iota(Shape{2, 2})}});
  const auto v = float_values(out[0].tensor());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_NEAR(v[0], std::sqrt(1.0f + 9.0f), 1e-5);
  EXPECT_NEAR(v[1], std::sqrt(4.0f + 16.0f), 1e-5);
}

TEST(ReduceOps, EmptyAxesReduceEverythingOrNothing) {
  const std::vector<int64_t> none;
  // noop_with_empty_axes = 0: empty axes reduce every dim.
  Session all = session_of(reduce_graph("ReduceSum", {2, 3}, &none, {attr_int("keepdims", 1)}), 18);
  auto a = all.run({{"x", iota(Shape{2, 3})}});
  EXPECT_EQ(a[0].tensor().shape(), (Shape{1, 1}));
  EXPECT_EQ(float_values(a[0].tensor()), (std::vector<float>{21}));
  // noop_with_empty_axes = 1: no dim is reduced (ReduceSum is the identity; ReduceSumSquare
  // still squares each element, as in the ONNX reference).
  Session id = session_of(reduce_graph("ReduceSum", {2, 3}, &none, {attr_int("noop_with_empty_axes", 1)}), 18);
  auto b = id.run({{"x", iota(Shape{2, 3})}});
  EXPECT_EQ(b[0].tensor().shape(), (Shape{2, 3}));
  EXPECT_EQ(float_values(b[0].tensor()), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  Session sq = session_of(reduce_graph("ReduceSumSquare", {3}, &none, {attr_int("noop_with_empty_axes", 1)}), 18);
  auto c = sq.run({{"x", iota(Shape{3})}});
  EXPECT_EQ(float_values(c[0].tensor()), (std::vector<float>{1, 4, 9}));
  // Omitted axes input behaves like an empty one.
  Session omitted = session_of(reduce_graph("ReduceProd", {2, 2}, nullptr, {attr_int("keepdims", 0)}), 18);
  auto d = omitted.run({{"x", iota(Shape{2, 2})}});
  EXPECT_EQ(d[0].tensor().shape(), (Shape{}));
  EXPECT_EQ(float_values(d[0].tensor()), (std::vector<float>{24}));
}

TEST(ReduceOps, BoolMaxMinAtOpset20) {
  const std::vector<int64_t> axes = {1};
  Tensor x = Tensor::from_vector<bool>(Shape{3, 2}, {true, false, false, false, true, true});
  Session mx = session_of(reduce_graph("ReduceMax", {3, 2}, &axes, {attr_int("keepdims", 0)}, DType::kBool), 20);
  auto a = mx.run({{"x", x}});
  ASSERT_EQ(a[0].tensor().dtype(), DType::kBool);
  EXPECT_EQ(float_values(a[0].tensor()), (std::vector<float>{1, 0, 1}));
  Session mn = session_of(reduce_graph("ReduceMin", {3, 2}, &axes, {attr_int("keepdims", 0)}, DType::kBool), 20);
  auto b = mn.run({{"x", x}});
  EXPECT_EQ(float_values(b[0].tensor()), (std::vector<float>{0, 0, 1}));
  // Before opset 20, bool is not a ReduceMax type.
  EXPECT_THROW(session_of(reduce_graph("ReduceMax", {3, 2}, &axes, {}, DType::kBool), 18), Error);
}

TEST(ReduceOps, EmptySetReductions) {
  const std::vector<int64_t> axes = {1};
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* op;
    float want;
  };
  const Case cases[] = {{"ReduceSum", 0},        {"ReduceProd", 1},       {"ReduceMax", -inf},
                        {"ReduceMin", inf},      {"ReduceL1", 0},         {"ReduceL2", 0},
                        {"ReduceSumSquare", 0},  {"ReduceLogSum", -inf},  {"ReduceLogSumExp", -inf}};
  for (const Case& c : cases) {
    Session s = session_of(reduce_graph(c.op, {2, 0}, &axes, {attr_int("keepdims", 1)}), 18);
    auto out = s.run({{"x", Tensor(DType::kFloat, Shape{2, 0})}});
    ASSERT_EQ(out[0].tensor().shape(), (Shape{2, 1})) << c.op;
    EXPECT_EQ(float_values(out[0].tensor()), (std::vector<float>{c.want, c.want})) << c.op;
  }
  Session mean = session_of(reduce_graph("ReduceMean", {2, 0}, &axes, {}), 18);
  auto m = mean.run({{"x", Tensor(DType::kFloat, Shape{2, 0})}});
  EXPECT_TRUE(std::isnan(m[0].tensor().data<float>()[0]));
  // Reducing the non-empty axis of an empty tensor gives an empty output.
  const std::vector<int64_t> ax0 = {0};
  Session e = session_of(reduce_graph("ReduceSum", {2, 0}, &ax0, {attr_int("keepdims", 0)}), 18);
  auto o = e.run({{"x", Tensor(DType::kFloat, Shape{2, 0})}});
  EXPECT_EQ(o[0].tensor().shape(), (Shape{0}));
}

TEST(ReduceOps, AxesComputedAtRunTime) {
  // axes is a graph input: the output shape is only known when the node runs.
  GraphSpec g;
  g.nodes.push_back({"ReduceSum", {"x", "axes"}, {"y"}, {attr_int("keepdims", 0)}});
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 4}});
  g.inputs.push_back({"axes", DType::kInt64, {-1}});
  g.outputs.push_back(any_out("y"));
  Session s = session_of(g, 13);
  Tensor x = iota(Shape{2, 3, 4}, 0);
  auto a = s.run({{"x", x}, {"axes", Tensor::from_vector<int64_t>(Shape{2}, {0, 2})}});
  EXPECT_EQ(a[0].tensor().shape(), (Shape{3}));
  // sum over i (0..1), k (0..3) of 12 i + 4 j + k
  EXPECT_EQ(float_values(a[0].tensor()), (std::vector<float>{60, 92, 124}));
  auto b = s.run({{"x", x}, {"axes", Tensor::from_vector<int64_t>(Shape{1}, {-1})}});
  EXPECT_EQ(b[0].tensor().shape(), (Shape{2, 3}));
  EXPECT_EQ(b[0].tensor().data<float>()[0], 6.0f);
  // Bad axes from data are a clean error.
  EXPECT_THROW(s.run({{"x", x}, {"axes", Tensor::from_vector<int64_t>(Shape{1}, {3})}}), Error);
  EXPECT_THROW(s.run({{"x", x}, {"axes", Tensor::from_vector<int64_t>(Shape{2}, {1, -2})}}), Error);
}

namespace {

/// Runs `op` over `axes` of x (opset 18, keepdims 1) and compares with a brute force in double.
void check_reduce(const char* op, const Tensor& x, const std::vector<int64_t>& axes, int threads) {
  const Shape& shape = x.shape();
  const int64_t r = static_cast<int64_t>(shape.size());
  uint32_t mask = 0;
  for (int64_t a : axes) mask |= 1u << a;
  Session s = session_of(reduce_graph(op, shape.to_vector(), &axes, {attr_int("keepdims", 1)}), 18, threads);
  auto out = s.run({{"x", x}});
  const Tensor& y = out[0].tensor();
  Shape ys = shape;
  for (int64_t a : axes) ys[a] = 1;
  ASSERT_EQ(y.shape(), ys) << op << " mask " << mask;
  const std::string o = op;
  const double init = o == "ReduceProd" ? 1 : o == "ReduceMin" ? INFINITY : o == "ReduceMax" ? -INFINITY : 0;
  std::vector<double> acc(y.numel(), init), mx(y.numel(), -INFINITY);
  std::vector<int64_t> cnt(y.numel(), 0);
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t rem = i, oi = 0, ostride = 1;
      for (int64_t k = r - 1; k >= 0; --k) {
        const int64_t c = rem % shape[k];
        rem /= shape[k];
        if (!(mask & (1u << k))) oi += c * ostride;
        ostride *= ys[k];
      }
      const double v = x.data<float>()[i];
      if (pass == 0) {
        mx[oi] = std::max(mx[oi], v);
        continue;
      }
      ++cnt[oi];
      if (o == "ReduceSum" || o == "ReduceMean") acc[oi] += v;
      else if (o == "ReduceMax") acc[oi] = std::max(acc[oi], v);
      else if (o == "ReduceMin") acc[oi] = std::min(acc[oi], v);
      else if (o == "ReduceProd") acc[oi] *= v;
      else if (o == "ReduceL1") acc[oi] += std::fabs(v);
      else if (o == "ReduceL2" || o == "ReduceSumSquare") acc[oi] += v * v;
      else if (o == "ReduceLogSumExp") acc[oi] += std::exp(v - mx[oi]);
    }
  }
  for (int64_t i = 0; i < y.numel(); ++i) {
    double want = acc[i];
    if (o == "ReduceMean") want /= static_cast<double>(cnt[i]);
    if (o == "ReduceL2") want = std::sqrt(want);
    if (o == "ReduceLogSumExp") want = std::log(want) + mx[i];
    ASSERT_NEAR(y.data<float>()[i], want, 1e-4 * std::max(1.0, std::fabs(want)))
        << op << " mask " << mask << " threads " << threads << " at " << i;
  }
}

Tensor random_tensor(const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.5f, 1.5f);
  Tensor x(DType::kFloat, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng) * ((i % 3) ? 1.0f : -1.0f);
  return x;
}

}  // namespace

TEST(ReduceOps, MatchesBruteForceForEveryAxesSubset) {
  const Tensor x = random_tensor(Shape{3, 1, 4, 5, 2}, 7);
  const char* ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                       "ReduceL1",  "ReduceL2",   "ReduceLogSumExp", "ReduceSumSquare"};
  for (const char* op : ops) {
    for (uint32_t mask = 1; mask < (1u << 5); ++mask) {
      std::vector<int64_t> axes;
      for (int64_t k = 0; k < 5; ++k)
        if (mask & (1u << k)) axes.push_back(k);
      check_reduce(op, x, axes, 1);
    }
  }
}

TEST(ReduceOps, LargeInputsOnSeveralThreads) {
  // Inner reductions, outer reductions (chunked columns, > 256 wide) and mixed patterns, big
  // enough to be split over threads.
  const Tensor a = random_tensor(Shape{2000, 50}, 1);
  const Tensor b = random_tensor(Shape{50, 2000}, 2);
  const Tensor c = random_tensor(Shape{6, 40, 300}, 3);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceLogSumExp", "ReduceL2"}) {
    for (int threads : {1, 4}) {
      check_reduce(op, a, {1}, threads);
      check_reduce(op, b, {0}, threads);
      check_reduce(op, c, {1}, threads);
      check_reduce(op, c, {0, 2}, threads);
      check_reduce(op, c, {0, 1}, threads);
    }
  }
}

TEST(ReduceOps, AxisOpsOnStridedInputs) {
  // [3, 7, 300] along axis 1: columns are strided and wider than one chunk.
  const Shape shape{3, 7, 300};
  const int64_t O = 3, D = 7, I = 300;
  const Tensor x = random_tensor(shape, 5);
  GraphSpec g;
  g.nodes.push_back({"Softmax", {"x"}, {"sm"}, {attr_int("axis", 1)}});
  g.nodes.push_back({"LogSoftmax", {"x"}, {"lsm"}, {attr_int("axis", 1)}});
  g.nodes.push_back({"Hardmax", {"x"}, {"hm"}, {attr_int("axis", 1)}});
  g.nodes.push_back({"ArgMin", {"x"}, {"am"}, {attr_int("axis", 1)}});
  g.nodes.push_back({"CumSum", {"x", "axis"}, {"cs"}, {attr_int("reverse", 1)}});
  g.nodes.push_back({"TopK", {"x", "k"}, {"tv", "ti"}, {attr_int("axis", 1)}});
  g.inputs.push_back({"x", DType::kFloat, shape.to_vector()});
  g.initializers.emplace_back("axis", Tensor::scalar<int64_t>(1));
  g.initializers.emplace_back("k", Tensor::from_vector<int64_t>(Shape{1}, {2}));
  for (const char* n : {"sm", "lsm", "hm", "cs", "tv"}) g.outputs.push_back(any_out(n));
  g.outputs.push_back(any_out("am", DType::kInt64));
  g.outputs.push_back(any_out("ti", DType::kInt64));
  for (int threads : {1, 4}) {
    auto out = session_of(g, 14, threads).run({{"x", x}});
    const float* px = x.data<float>();
    const float* sm = out[0].tensor().data<float>();
    const float* lsm = out[1].tensor().data<float>();
    const float* hm = out[2].tensor().data<float>();
    const float* cs = out[3].tensor().data<float>();
    const float* tv = out[4].tensor().data<float>();
    const int64_t* am = out[5].tensor().data<int64_t>();
    const int64_t* ti = out[6].tensor().data<int64_t>();
    ASSERT_EQ(out[4].tensor().shape(), (Shape{3, 2, 300}));
    for (int64_t o = 0; o < O; ++o)
      for (int64_t j = 0; j < I; ++j) {
        auto at = [&](int64_t d) { return (o * D + d) * I + j; };
        double m = -INFINITY, se = 0;
        int64_t imax = 0, imin = 0;
        for (int64_t d = 0; d < D; ++d) {
          if (px[at(d)] > px[at(imax)]) imax = d;
          if (px[at(d)] < px[at(imin)]) imin = d;
          m = std::max<double>(m, px[at(d)]);
        }
        for (int64_t d = 0; d < D; ++d) se += std::exp(px[at(d)] - m);
        double run = 0;
        for (int64_t d = D - 1; d >= 0; --d) {
          run += px[at(d)];
          ASSERT_NEAR(cs[at(d)], run, 1e-4);
        }
        for (int64_t d = 0; d < D; ++d) {
          ASSERT_NEAR(sm[at(d)], std::exp(px[at(d)] - m) / se, 1e-6);
          ASSERT_NEAR(lsm[at(d)], px[at(d)] - m - std::log(se), 1e-5);
          ASSERT_EQ(hm[at(d)], d == imax ? 1.0f : 0.0f);
        }
        ASSERT_EQ(am[o * I + j], imin);
        ASSERT_EQ(ti[(o * 2) * I + j], imax);
        ASSERT_EQ(tv[(o * 2) * I + j], px[at(imax)]);
        ASSERT_LE(tv[(o * 2 + 1) * I + j], tv[(o * 2) * I + j]);
      }
  }
}

TEST(ReduceOps, LargeFullReductionIsParallelAndAccurate) {
  const int64_t n = int64_t(1) << 20;
  Tensor x(DType::kFloat, Shape{n});
  double want = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>((i * 7919) % 1000) / 1000.0f;
    x.data<float>()[i] = v;
    want += v;
  }
  Session s = session_of(reduce_graph("ReduceSum", {n}, nullptr, {attr_int("keepdims", 0)}), 13, 4);
  auto out = s.run({{"x", x}});
  EXPECT_NEAR(out[0].tensor().data<float>()[0], want, want * 1e-5);
  Session lse = session_of(reduce_graph("ReduceLogSumExp", {n}, nullptr, {attr_int("keepdims", 0)}), 13, 4);
  double m = 0, se = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max<double>(m, x.data<float>()[i]);
  for (int64_t i = 0; i < n; ++i) se += std::exp(x.data<float>()[i] - m);
  auto out2 = lse.run({{"x", x}});
  EXPECT_NEAR(out2[0].tensor().data<float>()[0], std::log(se) + m, 1e-4);
}

TEST(ReduceOps, Float16AndIntegerTypes) {
  const std::vector<int64_t> axes = {1};
  Tensor h(DType::kFloat16, Shape{2, 2});
  for (int i = 0; i < 4; ++i) h.data<Float16>()[i] = Float16(static_cast<float>(i + 1));
  Session s = session_of(reduce_graph("ReduceMean", {2, 2}, &axes, {attr_int("keepdims", 0)}, DType::kFloat16), 18);
  auto out = s.run({{"x", h}});
  ASSERT_EQ(out[0].tensor().dtype(), DType::kFloat16);
  EXPECT_EQ(float_values(out[0].tensor()), (std::vector<float>{1.5f, 3.5f}));
  Session si = session_of(reduce_graph("ReduceSum", {2, 2}, &axes, {attr_int("keepdims", 0)}, DType::kInt32), 13);
  auto oi = si.run({{"x", Tensor::from_vector<int32_t>(Shape{2, 2}, {1, 2, -3, -4})}});
  ASSERT_EQ(oi[0].tensor().dtype(), DType::kInt32);
  EXPECT_EQ(float_values(oi[0].tensor()), (std::vector<float>{3, -7}));
}

TEST(ReduceOps, ArgMaxTiesAndLastIndex) {
  GraphSpec g;
  g.nodes.push_back({"ArgMax", {"x"}, {"y"}, {attr_int("axis", 0), attr_int("keepdims", 0), attr_int("select_last_index", 1)}});
  g.nodes.push_back({"ArgMin", {"x"}, {"z"}, {attr_int("axis", 0), attr_int("keepdims", 1)}});
  g.inputs.push_back({"x", DType::kFloat, {3, 2}});
  g.outputs.push_back(any_out("y", DType::kInt64));
  g.outputs.push_back(any_out("z", DType::kInt64));
  Session s = session_of(g, 13);
  auto out = s.run({{"x", Tensor::from_vector<float>(Shape{3, 2}, {5, 1, 5, 0, 2, 0})}});
  EXPECT_EQ(out[0].tensor().shape(), (Shape{2}));
  EXPECT_EQ(float_values(out[0].tensor()), (std::vector<float>{1, 0}));
  EXPECT_EQ(out[1].tensor().shape(), (Shape{1, 2}));
  EXPECT_EQ(float_values(out[1].tensor()), (std::vector<float>{2, 1}));
}

TEST(ReduceOps, SoftmaxAxisSemanticsByOpset) {
  // x: [2, 2, 2]; axis 1 at opset 11 normalises over the last 4 elements of each batch; at
  // opset 13 over dim 1 only.
  GraphSpec g;
  g.nodes.push_back({"Softmax", {"x"}, {"y"}, {attr_int("axis", 1)}});
  g.inputs.push_back({"x", DType::kFloat, {2, 2, 2}});
  g.outputs.push_back(any_out("y"));
  Tensor x = Tensor::from_vector<float>(Shape{2, 2, 2}, {0, 0, 0, 0, 1, 2, 3, 4});
  auto old = session_of(g, 11).run({{"x", x}});
  EXPECT_NEAR(old[0].tensor().data<float>()[0], 0.25f, 1e-6);
  auto cur = session_of(g, 13).run({{"x", x}});
  EXPECT_NEAR(cur[0].tensor().data<float>()[0], 0.5f, 1e-6);
  // batch 1, j = 0: softmax over {1, 3}
  EXPECT_NEAR(cur[0].tensor().data<float>()[4], 1.0f / (1.0f + std::exp(2.0f)), 1e-6);
  EXPECT_NEAR(cur[0].tensor().data<float>()[6], 1.0f / (1.0f + std::exp(-2.0f)), 1e-6);
}

TEST(ReduceOps, TopKTiesTakeTheLowerIndex) {
  GraphSpec g;
  g.nodes.push_back({"TopK", {"x", "k"}, {"v", "i"}, {attr_int("largest", 0)}});
  g.inputs.push_back({"x", DType::kFloat, {5}});
  g.initializers.emplace_back("k", Tensor::from_vector<int64_t>(Shape{1}, {3}));
  g.outputs.push_back(any_out("v"));
  g.outputs.push_back(any_out("i", DType::kInt64));
  Session s = session_of(g, 11);
  auto out = s.run({{"x", Tensor::from_vector<float>(Shape{5}, {2, 1, 3, 1, 2})}});
  EXPECT_EQ(float_values(out[0].tensor()), (std::vector<float>{1, 1, 2}));
  EXPECT_EQ(float_values(out[1].tensor()), (std::vector<float>{1, 3, 0}));
}

TEST(ReduceOps, LpNormalization) {
  GraphSpec g;
  g.nodes.push_back({"LpNormalization", {"x"}, {"y"}, {attr_int("axis", 0), attr_int("p", 1)}});
  g.inputs.push_back({"x", DType::kFloat, {2, 2}});
  g.outputs.push_back(any_out("y"));
  auto out = session_of(g, 13).run({{"x", Tensor::from_vector<float>(Shape{2, 2}, {1, 0, -3, 0})}});
  EXPECT_EQ(float_values(out[0].tensor()), (std::vector<float>{0.25f, 0, -0.75f, 0}));
}

TEST(LossOps, OutOfRangeTargetIsARuntimeError) {
  GraphSpec g;
  g.nodes.push_back({"NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}, {attr_string("reduction", "sum"), attr_int("ignore_index", -1)}});
  g.inputs.push_back({"x", DType::kFloat, {2, 3}});
  g.inputs.push_back({"t", DType::kInt64, {2}});
  g.outputs.push_back(any_out("y"));
  Session s = session_of(g, 13);
  Tensor x = iota(Shape{2, 3});
  auto ok = s.run({{"x", x}, {"t", Tensor::from_vector<int64_t>(Shape{2}, {2, -1})}});
  EXPECT_EQ(ok[0].tensor().data<float>()[0], -3.0f);
  try {
    s.run({{"x", x}, {"t", Tensor::from_vector<int64_t>(Shape{2}, {0, 3})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_NE(std::string(e.what()).find("target value 3"), std::string::npos) << e.what();
  }
}

TEST(ReduceOps, OtherElementTypes) {
  {  // double Softmax (opset 13, last axis)
    GraphSpec g;
    g.nodes.push_back({"Softmax", {"x"}, {"y"}});
    g.inputs.push_back({"x", DType::kDouble, {2}});
    g.outputs.push_back(any_out("y", DType::kDouble));
    auto out = session_of(g, 13).run({{"x", Tensor::from_vector<double>(Shape{2}, {0.0, std::log(3.0)})}});
    EXPECT_NEAR(out[0].tensor().data<double>()[0], 0.25, 1e-12);
    EXPECT_NEAR(out[0].tensor().data<double>()[1], 0.75, 1e-12);
  }
  {  // int64 TopK, largest, along axis 0
    GraphSpec g;
    g.nodes.push_back({"TopK", {"x", "k"}, {"v", "i"}, {attr_int("axis", 0)}});
    g.inputs.push_back({"x", DType::kInt64, {4, 2}});
    g.initializers.emplace_back("k", Tensor::from_vector<int64_t>(Shape{1}, {2}));
    g.outputs.push_back(any_out("v", DType::kInt64));
    g.outputs.push_back(any_out("i", DType::kInt64));
    auto out = session_of(g, 11).run({{"x", Tensor::from_vector<int64_t>(Shape{4, 2}, {1, 8, 5, 8, 3, 2, 5, 9})}});
    EXPECT_EQ(out[0].tensor().shape(), (Shape{2, 2}));
    EXPECT_EQ(float_values(out[0].tensor()), (std::vector<float>{5, 9, 5, 8}));
    EXPECT_EQ(float_values(out[1].tensor()), (std::vector<float>{1, 3, 3, 0}));
  }
  {  // int32 CumSum, exclusive, with an int32 axis
    GraphSpec g;
    g.nodes.push_back({"CumSum", {"x", "axis"}, {"y"}, {attr_int("exclusive", 1)}});
    g.inputs.push_back({"x", DType::kInt32, {4}});
    g.initializers.emplace_back("axis", Tensor::scalar<int32_t>(0));
    g.outputs.push_back(any_out("y", DType::kInt32));
    auto out = session_of(g, 14).run({{"x", Tensor::from_vector<int32_t>(Shape{4}, {1, 2, 3, 4})}});
    EXPECT_EQ(float_values(out[0].tensor()), (std::vector<float>{0, 1, 3, 6}));
  }
  {  // bfloat16 ReduceSum, uint8 ReduceMax, int64 ArgMin
    Tensor b(DType::kBFloat16, Shape{3});
    for (int i = 0; i < 3; ++i) b.data<BFloat16>()[i] = BFloat16(static_cast<float>(i + 1));
    auto s = session_of(reduce_graph("ReduceSum", {3}, nullptr, {attr_int("keepdims", 0)}, DType::kBFloat16), 13).run({{"x", b}});
    EXPECT_EQ(float_values(s[0].tensor()), (std::vector<float>{6}));
    auto m = session_of(reduce_graph("ReduceMax", {3}, nullptr, {}, DType::kUInt8), 13)
                 .run({{"x", Tensor::from_vector<uint8_t>(Shape{3}, {7, 250, 3})}});
    EXPECT_EQ(float_values(m[0].tensor()), (std::vector<float>{250}));
    GraphSpec g;
    g.nodes.push_back({"ArgMin", {"x"}, {"y"}, {attr_int("keepdims", 0)}});
    g.inputs.push_back({"x", DType::kInt64, {3}});
    g.outputs.push_back(any_out("y", DType::kInt64));
    auto a = session_of(g, 13).run({{"x", Tensor::from_vector<int64_t>(Shape{3}, {4, -2, -2})}});
    EXPECT_EQ(a[0].tensor().shape(), (Shape{}));
    EXPECT_EQ(float_values(a[0].tensor()), (std::vector<float>{1}));
  }
}
