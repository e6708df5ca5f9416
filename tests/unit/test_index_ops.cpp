// Index-family ops: behaviour the ONNX backend data does not cover (opset 18 reductions,
// Col2Im, CenterCropPad), index validation, data-dependent shapes and non-float types.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

struct Input {
  std::string name;
  Tensor value;
  bool initializer = false;  // a constant (values known while planning) instead of a graph input
};

/// One-node model: `op` over `inputs` (an empty name is an omitted optional input), outputs
/// y0, y1, ... of the given dtypes.
GraphSpec one_node(const std::string& op, const std::vector<Input>& inputs, const std::vector<DType>& outs,
                   std::vector<AttrSpec> attrs = {}) {
  GraphSpec g;
  NodeSpec n;
  n.op = op;
  n.attrs = std::move(attrs);
  n.name = "node";
  for (const auto& in : inputs) {
    n.inputs.push_back(in.name);
    if (in.name.empty()) continue;
    if (in.initializer) {
      g.initializers.emplace_back(in.name, in.value);
    } else {
      ValueSpec v;
      v.name = in.name;
      v.dtype = in.value.dtype();
      v.dims = in.value.shape().to_vector();
      g.inputs.push_back(v);
    }
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    n.outputs.push_back(numbered("y", i));
    ValueSpec v;
    v.name = numbered("y", i);
    v.dtype = outs[i];
    v.no_shape = true;
    g.outputs.push_back(v);
  }
  g.nodes.push_back(n);
  return g;
}

Session session_of(const GraphSpec& g, int64_t opset, int threads = 1) {
  const std::string m = encode_model(g, opset);
  return Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
}

std::vector<Value> run_op(const std::string& op, const std::vector<Input>& inputs, const std::vector<DType>& outs,
                          std::vector<AttrSpec> attrs, int64_t opset, int threads = 1) {
  Session s = session_of(one_node(op, inputs, outs, std::move(attrs)), opset, threads);
  std::vector<std::pair<std::string, Value>> feeds;
  for (const auto& in : inputs)
    if (!in.name.empty() && !in.initializer) feeds.emplace_back(in.name, Value(in.value));
  return s.run(feeds);
}

template <class T>
std::vector<T> values(const Value& v) {
  const Tensor& t = v.tensor();
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}

Tensor floats(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor ints(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }

/// Runs and expects a kRuntime error whose message contains every one of `parts`.
void expect_runtime_error(const std::string& op, const std::vector<Input>& inputs, DType out,
                          std::vector<AttrSpec> attrs, int64_t opset, const std::vector<std::string>& parts) {
  try {
    run_op(op, inputs, {out}, std::move(attrs), opset);
    FAIL() << op << ": no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kRuntime) << m;
    for (const auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "missing '" << p << "' in: " << m;
  }
}

}  // namespace

// ---- ScatterElements / ScatterND reductions (opset 16 add/mul, opset 18 max/min) ----

TEST(IndexOps, ScatterElementsMaxMinAtOpset18) {
  const std::vector<Input> in = {
      {"data", floats({1, 5}, {1, 2, 3, 4, 5})}, {"idx", ints({1, 2}, {1, 1})}, {"upd", floats({1, 2}, {1.1f, 2.1f})}};
  auto mx = run_op("ScatterElements", in, {DType::kFloat}, {attr_int("axis", 1), attr_string("reduction", "max")}, 18);
  EXPECT_EQ(values<float>(mx[0]), (std::vector<float>{1, 2.1f, 3, 4, 5}));
  auto mn = run_op("ScatterElements", in, {DType::kFloat}, {attr_int("axis", 1), attr_string("reduction", "min")}, 18);
  EXPECT_EQ(values<float>(mn[0]), (std::vector<float>{1, 1.1f, 3, 4, 5}));
  auto add = run_op("ScatterElements", in, {DType::kFloat}, {attr_int("axis", 1), attr_string("reduction", "add")}, 16);
  EXPECT_FLOAT_EQ(values<float>(add[0])[1], 2 + 1.1f + 2.1f);
  auto mul = run_op("ScatterElements", in, {DType::kFloat}, {attr_int("axis", 1), attr_string("reduction", "mul")}, 18);
  EXPECT_FLOAT_EQ(values<float>(mul[0])[1], 2 * 1.1f * 2.1f);
}

TEST(IndexOps, ScatterElementsIntegerAndNegativeAxis) {
  const std::vector<Input> in = {{"data", ints({2, 3}, {5, 5, 5, 5, 5, 5})},
                                 {"idx", ints({2, 2}, {0, -1, 2, 2})},
                                 {"upd", ints({2, 2}, {9, 1, 7, 3})}};
  auto mx = run_op("ScatterElements", in, {DType::kInt64}, {attr_int("axis", -1), attr_string("reduction", "max")}, 18);
  EXPECT_EQ(values<int64_t>(mx[0]), (std::vector<int64_t>{9, 5, 5, 5, 5, 7}));
  auto mn = run_op("ScatterElements", in, {DType::kInt64}, {attr_int("axis", -1), attr_string("reduction", "min")}, 18);
  EXPECT_EQ(values<int64_t>(mn[0]), (std::vector<int64_t>{5, 5, 1, 5, 5, 3}));
}

TEST(IndexOps, ScatterMaxIsRejectedBeforeOpset18) {
  const GraphSpec g = one_node(
      "ScatterElements",
      {{"data", floats({1, 5}, {1, 2, 3, 4, 5})}, {"idx", ints({1, 2}, {1, 1})}, {"upd", floats({1, 2}, {1, 2})}},
      {DType::kFloat}, {attr_int("axis", 1), attr_string("reduction", "max")});
  EXPECT_THROW(session_of(g, 16), Error);
}

TEST(IndexOps, ScatterNDMaxMinAtOpset18) {
  const std::vector<Input> in = {{"data", floats({8}, {1, 2, 3, 4, 5, 6, 7, 8})},
                                 {"idx", ints({4, 1}, {4, 3, 1, 7})},
                                 {"upd", floats({4}, {0, 10, 1, 12})}};
  auto mx = run_op("ScatterND", in, {DType::kFloat}, {attr_string("reduction", "max")}, 18);
  EXPECT_EQ(values<float>(mx[0]), (std::vector<float>{1, 2, 3, 10, 5, 6, 7, 12}));
  auto mn = run_op("ScatterND", in, {DType::kFloat}, {attr_string("reduction", "min")}, 18);
  EXPECT_EQ(values<float>(mn[0]), (std::vector<float>{1, 1, 3, 4, 0, 6, 7, 8}));
  // Slices with duplicate indices reduce in turn.
  const std::vector<Input> in2 = {
      {"data", floats({2, 2}, {1, 2, 3, 4})}, {"idx", ints({2, 1}, {0, 0})}, {"upd", floats({2, 2}, {5, 0, 0, 7})}};
  auto mx2 = run_op("ScatterND", in2, {DType::kFloat}, {attr_string("reduction", "max")}, 18);
  EXPECT_EQ(values<float>(mx2[0]), (std::vector<float>{5, 7, 3, 4}));
  auto mn2 = run_op("ScatterND", in2, {DType::kFloat}, {attr_string("reduction", "min")}, 18);
  EXPECT_EQ(values<float>(mn2[0]), (std::vector<float>{0, 0, 3, 4}));
  auto add2 = run_op("ScatterND", in2, {DType::kFloat}, {attr_string("reduction", "add")}, 16);
  EXPECT_EQ(values<float>(add2[0]), (std::vector<float>{6, 9, 3, 4}));
}

TEST(IndexOps, ScatterNDStringsAndBool) {
  Tensor data(DType::kString, Shape{3});
  data.data<std::string>()[0] = "a";
  data.data<std::string>()[1] = "b";
  data.data<std::string>()[2] = "c";
  Tensor upd(DType::kString, Shape{1});
  upd.data<std::string>()[0] = "zz";
  auto out = run_op("ScatterND", {{"data", data}, {"idx", ints({1, 1}, {-2})}, {"upd", upd}}, {DType::kString}, {}, 18);
  EXPECT_EQ(values<std::string>(out[0]), (std::vector<std::string>{"a", "zz", "c"}));
  auto b = run_op("ScatterND",
                  {{"data", Tensor::from_vector<bool>(Shape{3}, {false, true, false})},
                   {"idx", ints({2, 1}, {0, 1})},
                   {"upd", Tensor::from_vector<bool>(Shape{2}, {true, false})}},
                  {DType::kBool}, {attr_string("reduction", "min")}, 18);
  EXPECT_EQ(values<bool>(b[0]), (std::vector<bool>{false, false, false}));
}

// ---- Col2Im ----

TEST(IndexOps, Col2ImSpecExample) {
  std::vector<float> x(25);
  for (int kk = 0; kk < 5; ++kk)
    for (int l = 0; l < 5; ++l) x[kk * 5 + l] = static_cast<float>(1 + kk + 5 * l);
  auto out = run_op(
      "Col2Im", {{"x", floats({1, 5, 5}, x)}, {"image", ints({2}, {5, 5}), true}, {"block", ints({2}, {1, 5}), true}},
      {DType::kFloat}, {}, 18);
  ASSERT_EQ(out[0].tensor().shape(), (Shape{1, 1, 5, 5}));
  std::vector<float> want(25);
  for (int i = 0; i < 25; ++i) want[i] = static_cast<float>(i + 1);
  EXPECT_EQ(values<float>(out[0]), want);
}

TEST(IndexOps, Col2ImOverlapStridesPadsDilations) {
  // N=2, C=2, image 5x6, block 2x3, dilations [2,1], strides [1,2], pads [1,0,0,1].
  const int64_t N = 2, C = 2, H = 5, W = 6, bh = 2, bw = 3, dh = 2, dw = 1, sh = 1, sw = 2, ph0 = 1, pw0 = 0, ph1 = 0,
                pw1 = 1;
  const int64_t nh = (H + ph0 + ph1 - dh * (bh - 1) - 1) / sh + 1, nw = (W + pw0 + pw1 - dw * (bw - 1) - 1) / sw + 1;
  const int64_t L = nh * nw, K = bh * bw;
  std::vector<float> x(N * C * K * L);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 13) - 6.0f;
  // Naive reference.
  std::vector<float> want(N * C * H * W, 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ki = 0; ki < bh; ++ki)
        for (int64_t kj = 0; kj < bw; ++kj)
          for (int64_t li = 0; li < nh; ++li)
            for (int64_t lj = 0; lj < nw; ++lj) {
              const int64_t y = li * sh - ph0 + ki * dh, xx = lj * sw - pw0 + kj * dw;
              if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
              want[((n * C + c) * H + y) * W + xx] += x[((n * C * K) + c * K + ki * bw + kj) * L + li * nw + lj];
            }
  const std::vector<AttrSpec> attrs = {attr_ints("dilations", {dh, dw}), attr_ints("strides", {sh, sw}),
                                       attr_ints("pads", {ph0, pw0, ph1, pw1})};
  auto out = run_op(
      "Col2Im",
      {{"x", floats({N, C * K, L}, x)}, {"image", ints({2}, {H, W}), true}, {"block", ints({2}, {bh, bw}), true}},
      {DType::kFloat}, attrs, 18, 2);
  ASSERT_EQ(out[0].tensor().shape(), (Shape{N, C, H, W}));
  EXPECT_EQ(values<float>(out[0]), want);
  // Image and block shapes as graph inputs (unknown until run).
  auto out2 =
      run_op("Col2Im", {{"x", floats({N, C * K, L}, x)}, {"image", ints({2}, {H, W})}, {"block", ints({2}, {bh, bw})}},
             {DType::kFloat}, attrs, 18);
  EXPECT_EQ(values<float>(out2[0]), want);
}

TEST(IndexOps, Col2ImRejectsWrongBlockCount) {
  const GraphSpec g = one_node("Col2Im",
                               {{"x", floats({1, 5, 4}, std::vector<float>(20))},
                                {"image", ints({2}, {5, 5}), true},
                                {"block", ints({2}, {1, 5}), true}},
                               {DType::kFloat});
  EXPECT_THROW(
      {
        Session s = session_of(g, 18);
        s.run({{"x", Value(floats({1, 5, 4}, std::vector<float>(20)))}});
      },
      Error);
}

// ---- CenterCropPad ----

TEST(IndexOps, CenterCropPadCropsAndPads) {
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(i + 1);
  // [3,4] -> [2,6]: rows cropped from 0, columns padded by 1 on the left and 1 on the right.
  auto out =
      run_op("CenterCropPad", {{"x", floats({3, 4}, x)}, {"shape", ints({2}, {2, 6}), true}}, {DType::kFloat}, {}, 18);
  ASSERT_EQ(out[0].tensor().shape(), (Shape{2, 6}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{0, 1, 2, 3, 4, 0, 0, 5, 6, 7, 8, 0}));
  // Odd differences: crop 4 -> 1 starts at 1 (rounded down); pad 3 -> 6 puts the extra pixel right.
  auto out2 =
      run_op("CenterCropPad", {{"x", floats({3, 4}, x)}, {"shape", ints({2}, {6, 1})}}, {DType::kFloat}, {}, 18);
  ASSERT_EQ(out2[0].tensor().shape(), (Shape{6, 1}));
  EXPECT_EQ(values<float>(out2[0]), (std::vector<float>{0, 2, 6, 10, 0, 0}));
}

TEST(IndexOps, CenterCropPadAxesAndTypes) {
  std::vector<int64_t> x(2 * 5 * 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int64_t>(i);
  // Only axis -2 changes: 5 -> 3 (start 1).
  auto out =
      run_op("CenterCropPad", {{"x", ints({2, 5, 2}, x)}, {"shape", Tensor::from_vector<int32_t>(Shape{1}, {3}), true}},
             {DType::kInt64}, {attr_ints("axes", {-2})}, 18);
  ASSERT_EQ(out[0].tensor().shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{2, 3, 4, 5, 6, 7, 12, 13, 14, 15, 16, 17}));
  Tensor s(DType::kString, Shape{2});
  s.data<std::string>()[0] = "x";
  s.data<std::string>()[1] = "y";
  auto st = run_op("CenterCropPad", {{"s", s}, {"shape", ints({1}, {4}), true}}, {DType::kString}, {}, 18);
  EXPECT_EQ(values<std::string>(st[0]), (std::vector<std::string>{"", "x", "y", ""}));
}

// ---- Index validation ----

TEST(IndexOps, OutOfRangeIndicesAreRuntimeErrors) {
  expect_runtime_error("GatherElements", {{"d", floats({2, 2}, {1, 2, 3, 4})}, {"i", ints({2, 2}, {0, 1, 2, 0})}},
                       DType::kFloat, {attr_int("axis", 0)}, 13, {"input 1", "index 2", "position 2", "size 2"});
  expect_runtime_error("GatherND", {{"d", floats({2, 2}, {1, 2, 3, 4})}, {"i", ints({2, 2}, {0, 1, 1, -3})}},
                       DType::kFloat, {}, 13, {"input 1", "index -3", "position 3"});
  expect_runtime_error("ScatterElements",
                       {{"d", floats({3}, {1, 2, 3})}, {"i", ints({1}, {3})}, {"u", floats({1}, {9})}}, DType::kFloat,
                       {}, 13, {"index 3", "position 0"});
  expect_runtime_error("ScatterND", {{"d", floats({3}, {1, 2, 3})}, {"i", ints({1, 1}, {-4})}, {"u", floats({1}, {9})}},
                       DType::kFloat, {}, 13, {"index -4"});
  // Scatter at opset 9 takes no negative indices; at 11 it does.
  expect_runtime_error("Scatter", {{"d", floats({3}, {1, 2, 3})}, {"i", ints({1}, {-1})}, {"u", floats({1}, {9})}},
                       DType::kFloat, {}, 9, {"index -1", "range [0, 2]"});
  auto ok = run_op("Scatter", {{"d", floats({3}, {1, 2, 3})}, {"i", ints({1}, {-1})}, {"u", floats({1}, {9})}},
                   {DType::kFloat}, {}, 11);
  EXPECT_EQ(values<float>(ok[0]), (std::vector<float>{1, 2, 9}));
  expect_runtime_error("ReverseSequence", {{"x", floats({2, 2}, {1, 2, 3, 4})}, {"l", ints({2}, {1, 3})}},
                       DType::kFloat, {}, 10, {"sequence_lens", "value 3", "position 1"});
  expect_runtime_error("Compress",
                       {{"x", floats({2}, {1, 2})}, {"c", Tensor::from_vector<bool>(Shape{3}, {true, false, true})}},
                       DType::kFloat, {}, 11, {"condition", "entry 2"});
}

TEST(IndexOps, GatherElementsRejectsOversizedIndexShape) {
  const GraphSpec g = one_node("GatherElements", {{"d", floats({2, 2}, {1, 2, 3, 4})}, {"i", ints({3, 1}, {0, 0, 0})}},
                               {DType::kFloat}, {attr_int("axis", 1)});
  EXPECT_THROW(session_of(g, 13), Error);
}

// ---- Data-dependent shapes ----

TEST(IndexOps, NonZeroAndUniqueRunDynamically) {
  auto nz = run_op("NonZero", {{"x", ints({2, 3}, {0, 4, 0, -1, 0, 2})}}, {DType::kInt64}, {}, 13);
  ASSERT_EQ(nz[0].tensor().shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int64_t>(nz[0]), (std::vector<int64_t>{0, 1, 1, 1, 0, 2}));
  // A constant input is folded while planning.
  auto nzc = run_op("NonZero", {{"x", Tensor::from_vector<bool>(Shape{4}, {false, true, true, false}), true}},
                    {DType::kInt64}, {}, 13);
  EXPECT_EQ(values<int64_t>(nzc[0]), (std::vector<int64_t>{1, 2}));
  // Large input over several threads.
  std::vector<float> big(200000, 0.0f);
  for (size_t i = 0; i < big.size(); i += 7) big[i] = 1.0f;
  auto nzb = run_op("NonZero", {{"x", floats({400, 500}, big)}}, {DType::kInt64}, {}, 13, 2);
  const int64_t cnt = (200000 + 6) / 7;
  ASSERT_EQ(nzb[0].tensor().shape(), (Shape{2, cnt}));
  const int64_t* p = nzb[0].tensor().data<int64_t>();
  for (int64_t j = 0; j < cnt; ++j) {
    ASSERT_EQ(p[j] * 500 + p[cnt + j], j * 7);
  }
}

TEST(IndexOps, UniqueUnsortedWithAxis) {
  // Rows: [1,2], [0,5], [1,2], [0,1]; first-occurrence order keeps [1,2], [0,5], [0,1].
  const std::vector<Input> in = {{"x", ints({4, 2}, {1, 2, 0, 5, 1, 2, 0, 1})}};
  const std::vector<DType> outs = {DType::kInt64, DType::kInt64, DType::kInt64, DType::kInt64};
  auto u = run_op("Unique", in, outs, {attr_int("axis", 0), attr_int("sorted", 0)}, 11);
  EXPECT_EQ(values<int64_t>(u[0]), (std::vector<int64_t>{1, 2, 0, 5, 0, 1}));
  EXPECT_EQ(values<int64_t>(u[1]), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(values<int64_t>(u[2]), (std::vector<int64_t>{0, 1, 0, 2}));
  EXPECT_EQ(values<int64_t>(u[3]), (std::vector<int64_t>{2, 1, 1}));
  auto s = run_op("Unique", in, outs, {attr_int("axis", 0)}, 11);
  EXPECT_EQ(values<int64_t>(s[0]), (std::vector<int64_t>{0, 1, 0, 5, 1, 2}));
  EXPECT_EQ(values<int64_t>(s[1]), (std::vector<int64_t>{3, 1, 0}));
  EXPECT_EQ(values<int64_t>(s[2]), (std::vector<int64_t>{2, 1, 2, 0}));
  EXPECT_EQ(values<int64_t>(s[3]), (std::vector<int64_t>{1, 1, 2}));
}

TEST(IndexOps, UniqueStrings) {
  Tensor x(DType::kString, Shape{5});
  const char* w[] = {"pear", "apple", "pear", "fig", "apple"};
  for (int i = 0; i < 5; ++i) x.data<std::string>()[i] = w[i];
  auto u = run_op("Unique", {{"x", x}}, {DType::kString, DType::kInt64, DType::kInt64, DType::kInt64}, {}, 11);
  EXPECT_EQ(values<std::string>(u[0]), (std::vector<std::string>{"apple", "fig", "pear"}));
  EXPECT_EQ(values<int64_t>(u[1]), (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(values<int64_t>(u[2]), (std::vector<int64_t>{2, 0, 2, 1, 0}));
  EXPECT_EQ(values<int64_t>(u[3]), (std::vector<int64_t>{2, 1, 2}));
}

TEST(IndexOps, OneHotDepthFromInput) {
  // Depth as a graph input (unknown at load), float indices, out-of-range ones give all off.
  auto o = run_op(
      "OneHot",
      {{"i", floats({3}, {0, 2.7f, 5})}, {"d", Tensor::from_vector<int32_t>(Shape{1}, {3})}, {"v", ints({2}, {-1, 7})}},
      {DType::kInt64}, {attr_int("axis", 0)}, 11);
  ASSERT_EQ(o[0].tensor().shape(), (Shape{3, 3}));
  EXPECT_EQ(values<int64_t>(o[0]), (std::vector<int64_t>{7, -1, -1, -1, -1, -1, -1, 7, -1}));
}

TEST(IndexOps, TriluAndEyeLikeOtherTypes) {
  Tensor x(DType::kString, Shape{2, 2});
  for (int i = 0; i < 4; ++i) x.data<std::string>()[i] = std::string(1, static_cast<char>('a' + i));
  auto t = run_op("Trilu", {{"x", x}}, {DType::kString}, {attr_int("upper", 0)}, 14);
  EXPECT_EQ(values<std::string>(t[0]), (std::vector<std::string>{"a", "", "c", "d"}));
  auto e = run_op("EyeLike", {{"x", floats({2, 3}, std::vector<float>(6))}}, {DType::kBool},
                  {attr_int("dtype", static_cast<int64_t>(DType::kBool)), attr_int("k", 1)}, 9);
  EXPECT_EQ(values<bool>(e[0]), (std::vector<bool>{false, true, false, false, false, true}));
}

TEST(IndexOps, LargeGatherScatterElementsOverThreads) {
  // [64, 300, 40] data, gather/scatter along axis 1 with 2 threads, against a naive loop.
  const int64_t A = 64, B = 300, C = 40, BI = 250;
  std::vector<float> data(A * B * C);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 1000);
  std::vector<int64_t> idx(A * BI * C);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>((i * 37) % (2 * B)) - B;  // [-B, B)
  std::vector<float> upd(idx.size());
  for (size_t i = 0; i < upd.size(); ++i) upd[i] = static_cast<float>(i % 17);
  std::vector<float> want_g(idx.size()), want_s = data;
  for (int64_t a = 0; a < A; ++a)
    for (int64_t b = 0; b < BI; ++b)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t p = (a * BI + b) * C + c;
        const int64_t j = idx[p] < 0 ? idx[p] + B : idx[p];
        want_g[p] = data[(a * B + j) * C + c];
        want_s[(a * B + j) * C + c] += upd[p];
      }
  auto g = run_op("GatherElements", {{"d", floats({A, B, C}, data)}, {"i", ints({A, BI, C}, idx)}}, {DType::kFloat},
                  {attr_int("axis", 1)}, 13, 2);
  EXPECT_EQ(values<float>(g[0]), want_g);
  auto s = run_op("ScatterElements",
                  {{"d", floats({A, B, C}, data)}, {"i", ints({A, BI, C}, idx)}, {"u", floats({A, BI, C}, upd)}},
                  {DType::kFloat}, {attr_int("axis", 1), attr_string("reduction", "add")}, 16, 2);
  EXPECT_EQ(values<float>(s[0]), want_s);
  // The first bad index is the one reported, whichever thread finds one.
  idx[idx.size() / 2] = B;
  idx[idx.size() - 1] = -B - 1;
  try {
    run_op("GatherElements", {{"d", floats({A, B, C}, data)}, {"i", ints({A, BI, C}, idx)}}, {DType::kFloat},
           {attr_int("axis", 1)}, 13, 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("position " + std::to_string(idx.size() / 2)), std::string::npos) << e.what();
  }
}

TEST(IndexOps, SymbolicBatchAcrossShapes) {
  // DepthToSpace then GatherND (batch_dims 1) under a symbolic batch; plans per batch size.
  GraphSpec g;
  NodeSpec d2s;
  d2s.op = "DepthToSpace";
  d2s.inputs = {"x"};
  d2s.outputs = {"s"};
  d2s.attrs = {attr_int("blocksize", 2), attr_string("mode", "CRD")};
  NodeSpec gnd;
  gnd.op = "GatherND";
  gnd.inputs = {"s", "i"};
  gnd.outputs = {"y"};
  gnd.attrs = {attr_int("batch_dims", 1)};
  g.nodes = {d2s, gnd};
  ValueSpec x;
  x.name = "x";
  x.dims = {-1, 4, 1, 2};
  x.dim_params = {"N", "", "", ""};
  ValueSpec i;
  i.name = "i";
  i.dtype = DType::kInt64;
  i.dims = {-1, 2};
  i.dim_params = {"N", ""};
  ValueSpec y;
  y.name = "y";
  y.dims = {-1, 4};
  y.dim_params = {"N", ""};
  g.inputs = {x, i};
  g.outputs = {y};
  Session s = session_of(g, 13);
  for (int64_t n : {1, 3}) {
    std::vector<float> xv(n * 8);
    for (size_t k = 0; k < xv.size(); ++k) xv[k] = static_cast<float>(k);
    std::vector<int64_t> iv;
    for (int64_t b = 0; b < n; ++b) iv.insert(iv.end(), {0, b % 2});
    auto out = s.run({{"x", Value(floats({n, 4, 1, 2}, xv))}, {"i", Value(ints({n, 2}, iv))}});
    ASSERT_EQ(out[0].tensor().shape(), (Shape{n, 4}));
    // CRD: s[b, 0, y, x] = x[b, (y % 2) * 2 + (x % 2), 0, x / 2]; the gather takes s[b, 0, b % 2, :].
    const float* p = out[0].tensor().data<float>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t xx = 0; xx < 4; ++xx)
        EXPECT_EQ(p[b * 4 + xx], xv[b * 8 + ((b % 2) * 2 + xx % 2) * 2 + xx / 2]) << "b=" << b << " x=" << xx;
  }
}
