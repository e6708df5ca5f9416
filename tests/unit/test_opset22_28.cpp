// Operators new or changed in ai.onnx opsets 22 to 28 (onnx 1.23). Most are checked by the node
// tests of PyPI's onnx (the CTest conformance_cpu_onnx_pypi); these tests cover what those do
// not reach (attributes the node tests leave at their defaults), with literals computed by hand
// or with numpy.
#include <gtest/gtest.h>

#include "one_node.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {
/// Every element as an integer (through element_as_double: also the 2- and 4-bit types).
std::vector<int> ints_of(const Tensor& t) {
  std::vector<int> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<int>(t.element_as_double(i)));
  return v;
}
}  // namespace

TEST(Opset23, QuantizeLinearDividesInTheScalesPrecision) {
  // x / 0.5 = 3.0078125, 3.501953125, 2.501953125 (exact in float). Rounded to uint8 from float:
  // 3, 4, 3. With precision bfloat16 the quotients are first rounded to bfloat16 (spacing 1/64
  // in [2, 4)): 3.0 (a tie, to even), 3.5, 2.5; then to uint8 (ties to even): 3, 4, 2.
  const Tensor x = f32({3}, {1.50390625f, 1.7509765625f, 1.2509765625f});
  const Tensor scale = f32({}, {0.5f});
  const Tensor zp = tensor<uint8_t>({}, {0});
  const Tensor as_float = run1("QuantizeLinear", {{"x", x}, {"s", scale, true}, {"z", zp, true}}, DType::kUInt8, {}, 23);
  EXPECT_EQ(values<uint8_t>(as_float), (std::vector<uint8_t>{3, 4, 3}));
  const Tensor as_bf16 = run1("QuantizeLinear", {{"x", x}, {"s", scale, true}, {"z", zp, true}}, DType::kUInt8,
                              {attr_int("precision", static_cast<int64_t>(DType::kBFloat16))}, 23);
  EXPECT_EQ(values<uint8_t>(as_bf16), (std::vector<uint8_t>{3, 4, 2}));
  // Before opset 23 the attribute does not exist (float division).
  expect_error([&] { run1("QuantizeLinear", {{"x", x}, {"s", scale, true}}, DType::kUInt8, {attr_int("precision", 99)}, 23); },
               "precision 99");
}

TEST(Opset23, DequantizeLinearOutputDtype) {
  // output_dtype float16: (q - zp) * scale in float, stored as float16; the scale stays float.
  const Tensor q = tensor<uint8_t>({3}, {0, 130, 255});
  const Tensor y = run1("DequantizeLinear", {{"q", q}, {"s", f32({}, {0.25f}), true}, {"z", tensor<uint8_t>({}, {128}), true}},
                        DType::kFloat16, {attr_int("output_dtype", static_cast<int64_t>(DType::kFloat16))}, 23);
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  EXPECT_EQ(static_cast<float>(y.data<Float16>()[0]), -32.0f);
  EXPECT_EQ(static_cast<float>(y.data<Float16>()[1]), 0.5f);
  EXPECT_EQ(static_cast<float>(y.data<Float16>()[2]), 31.75f);
  expect_error([&] { run1("DequantizeLinear", {{"q", q}, {"s", f32({}, {1.0f}), true}}, DType::kInt32, {attr_int("output_dtype", 6)}, 23); },
               "output_dtype 6");
}

TEST(Opset27, RangeInHalfPrecision) {
  // float16 2048 + i: 2049 is not a float16 (the spacing there is 2). With stash_type float the
  // values are computed in float and rounded once: 2048, 2049 -> 2048 (ties to even), 2050, 2051
  // -> 2052; with stash_type float16 the step i * 1 and the sum are each rounded: the same here.
  // Starting at 0.1 with delta 0.1 the two differ: float16(0.1) = 0.0999755859375.
  const Tensor start = tensor<Float16>({}, {Float16(0.1f)}), limit = tensor<Float16>({}, {Float16(0.55f)});
  const Tensor delta = tensor<Float16>({}, {Float16(0.1f)});
  const std::vector<In> in{{"a", start, true}, {"b", limit, true}, {"c", delta, true}};
  const Tensor f = run1("Range", in, DType::kFloat16, {}, 27);
  const Tensor h = run1("Range", in, DType::kFloat16, {attr_int("stash_type", static_cast<int64_t>(DType::kFloat16))}, 27);
  ASSERT_EQ(f.numel(), 5);
  ASSERT_EQ(h.numel(), 5);
  const float d = static_cast<float>(Float16(0.1f));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(f.data<Float16>()[i].bits, Float16(d + static_cast<float>(i) * d).bits) << i;
    const float step = static_cast<float>(Float16(static_cast<float>(i) * d));
    EXPECT_EQ(h.data<Float16>()[i].bits, Float16(d + step).bits) << i;
  }
  // Before opset 27 Range has no half types.
  expect_error([&] { run1("Range", in, DType::kFloat16, {}, 21); }, "Range");
  expect_error([&] { run1("Range", in, DType::kFloat16, {attr_int("stash_type", 7)}, 27); }, "stash_type 7");
}

TEST(Opset28, SpaceToDepthCrdUndoesDepthToSpaceCrd) {
  std::vector<float> v(2 * 8 * 2 * 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  const Tensor x = f32({2, 8, 2, 3}, v);
  for (const char* mode : {"CRD", "DCR"}) {
    const Tensor up = run1("DepthToSpace", {{"x", x}}, DType::kFloat, {attr_int("blocksize", 2), attr_string("mode", mode)}, 28);
    const Tensor back =
        run1("SpaceToDepth", {{"x", up}}, DType::kFloat, {attr_int("blocksize", 2), attr_string("mode", mode)}, 28);
    EXPECT_EQ(values<float>(back), v) << mode;
  }
  // Output channel c b^2 + i b + j (CRD) or (i b + j) C + c (DCR) holds x[c, h b + i, w b + j].
  const Tensor two = f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor crd = run1("SpaceToDepth", {{"x", two}}, DType::kFloat, {attr_int("blocksize", 2), attr_string("mode", "CRD")}, 28);
  EXPECT_EQ(values<float>(crd), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  const Tensor dcr = run1("SpaceToDepth", {{"x", two}}, DType::kFloat, {attr_int("blocksize", 2)}, 28);
  EXPECT_EQ(values<float>(dcr), (std::vector<float>{1, 5, 2, 6, 3, 7, 4, 8}));
  expect_error([&] { run1("SpaceToDepth", {{"x", x}}, DType::kFloat, {attr_int("blocksize", 2), attr_string("mode", "XYZ")}, 28); },
               "unknown mode");
}

TEST(Opset24, CastInfinityToFnuz) {
  // Cast-24 changed the table: +-Inf with saturate to an FNUZ float8 is the largest finite value
  // (240 / 57344, codes 0x7F / 0xFF), no longer NaN (0x80) as in Cast-19 to 23.
  const Tensor x = f32({2}, {kInf, -kInf});
  for (DType t : {DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2FNUZ}) {
    const int64_t to = static_cast<int64_t>(t);
    EXPECT_EQ(bytes_of(run1("Cast", {{"x", x}}, t, {attr_int("to", to)}, 24)), (std::vector<uint8_t>{0x7F, 0xFF})) << dtype_name(t);
    EXPECT_EQ(bytes_of(run1("Cast", {{"x", x}}, t, {attr_int("to", to)}, 23)), (std::vector<uint8_t>{0x80, 0x80})) << dtype_name(t);
    EXPECT_EQ(bytes_of(run1("Cast", {{"x", x}}, t, {attr_int("to", to), attr_int("saturate", 0)}, 24)),
              (std::vector<uint8_t>{0x80, 0x80}))
        << dtype_name(t);
  }
}

TEST(Opset24, CastToFloat8E8M0RoundModes) {
  // 3 lies between 2 (code 128) and 4 (129); 2.9 is nearer 2 (the midpoint is 3); 0 saturates to
  // 2^-127 (code 0) and without saturate is NaN (0xFF), as are values beyond 2^127.
  const Tensor x = f32({5}, {3.0f, 2.9f, 4.0f, 0.0f, 1e38f * 10.0f});
  const int64_t to = static_cast<int64_t>(DType::kFloat8E8M0);
  auto cast = [&](const char* mode, int64_t sat) {
    return bytes_of(run1("Cast", {{"x", x}}, DType::kFloat8E8M0, {attr_int("to", to), attr_string("round_mode", mode), attr_int("saturate", sat)}, 24));
  };
  EXPECT_EQ(cast("up", 1), (std::vector<uint8_t>{129, 129, 129, 0, 254}));
  EXPECT_EQ(cast("down", 1), (std::vector<uint8_t>{128, 128, 129, 0, 254}));
  EXPECT_EQ(cast("nearest", 1), (std::vector<uint8_t>{129, 128, 129, 0, 254}));
  EXPECT_EQ(cast("nearest", 0), (std::vector<uint8_t>{129, 128, 129, 255, 255}));
  expect_error([&] { cast("sideways", 1); }, "round_mode");
  // Back to float: 2^(code - 127).
  const Tensor back = run1("Cast", {{"c", bytes_tensor(DType::kFloat8E8M0, {3}, {127, 130, 255})}}, DType::kFloat,
                           {attr_int("to", static_cast<int64_t>(DType::kFloat))}, 24);
  EXPECT_EQ(back.data<float>()[0], 1.0f);
  EXPECT_EQ(back.data<float>()[1], 8.0f);
  EXPECT_TRUE(std::isnan(back.data<float>()[2]));
}

TEST(Opset25, TwoBitIntegersCastAndQuantize) {
  // int2 holds -2..1, uint2 0..3 (one value per byte in memory, packed four to a byte in files).
  // Float to them truncates and saturates (the spec leaves out-of-range values undefined);
  // QuantizeLinear rounds half to even and saturates.
  const Tensor x = f32({6}, {-3.0f, -1.5f, 0.4f, 1.0f, 2.0f, 7.0f});
  const Tensor i2 = run1("Cast", {{"x", x}}, DType::kInt2, {attr_int("to", static_cast<int64_t>(DType::kInt2))}, 25);
  EXPECT_EQ(ints_of(i2), (std::vector<int>{-2, -1, 0, 1, 1, 1}));
  const Tensor u2 = run1("Cast", {{"x", x}}, DType::kUInt2, {attr_int("to", static_cast<int64_t>(DType::kUInt2))}, 25);
  EXPECT_EQ(ints_of(u2), (std::vector<int>{0, 0, 0, 1, 2, 3}));
  const Tensor q = run1("QuantizeLinear", {{"x", x}, {"s", f32({}, {1.0f}), true}, {"z", bytes_tensor(DType::kInt2, {}, {0}), true}},
                        DType::kInt2, {}, 25);
  EXPECT_EQ(ints_of(q), (std::vector<int>{-2, -2, 0, 1, 1, 1}));
  const Tensor dq = run1("DequantizeLinear", {{"q", q}, {"s", f32({}, {0.5f}), true}}, DType::kFloat, {}, 25);
  EXPECT_EQ(values<float>(dq), (std::vector<float>{-1.0f, -1.0f, 0.0f, 0.5f, 0.5f, 0.5f}));
}

TEST(Opset23, Float4E2M1) {
  // Nearest of 0, 0.5, 1, 1.5, 2, 3, 4, 6 (ties to the even code: 0.25 -> 0, 2.5 -> 2, 5 -> 4);
  // beyond 6 saturates; the sign is bit 3.
  const Tensor x = f32({8}, {0.25f, 0.3f, 2.5f, 5.0f, -1.2f, 7.0f, -kInf, -0.0f});
  const Tensor f4 = run1("Cast", {{"x", x}}, DType::kFloat4E2M1, {attr_int("to", static_cast<int64_t>(DType::kFloat4E2M1))}, 23);
  EXPECT_EQ(bytes_of(f4), (std::vector<uint8_t>{0, 1, 4, 6, 0xA, 7, 0xF, 0x8}));
  const Tensor back = run1("Cast", {{"c", f4}}, DType::kFloat, {attr_int("to", static_cast<int64_t>(DType::kFloat))}, 23);
  EXPECT_EQ(values<float>(back), (std::vector<float>{0, 0.5f, 2, 4, -1, 6, -6, -0.0f}));
}

TEST(Opset27, CausalConvWithStateStreams) {
  // Depthwise causal convolution: y[t] = w0 x[t-2] + w1 x[t-1] + w2 x[t] over zeros before the
  // start; the state is the last k - 1 = 2 positions seen.
  const Tensor w = f32({1, 1, 3}, {1, 10, 100});
  const auto whole = run_op("CausalConvWithState", {{"x", f32({1, 1, 4}, {1, 2, 3, 4})}, {"w", w, true}},
                            {DType::kFloat, DType::kFloat}, {}, 27);
  expect_near(whole[0].tensor(), {100, 210, 321, 432});
  expect_near(whole[1].tensor(), {3, 4});
  // The same sequence in two pieces, the state of the first fed to the second.
  const auto first = run_op("CausalConvWithState", {{"x", f32({1, 1, 2}, {1, 2})}, {"w", w, true}},
                            {DType::kFloat, DType::kFloat}, {}, 27);
  expect_near(first[0].tensor(), {100, 210});
  const auto second = run_op("CausalConvWithState",
                             {{"x", f32({1, 1, 2}, {3, 4})}, {"w", w, true}, {"", Tensor()}, {"s", first[1].tensor()}},
                             {DType::kFloat, DType::kFloat}, {}, 27);
  expect_near(second[0].tensor(), {321, 432});
  expect_near(second[1].tensor(), {3, 4});
  // Bias then SiLU: x * sigmoid(x) of (100 + 1).
  const auto silu = run_op("CausalConvWithState", {{"x", f32({1, 1, 1}, {1})}, {"w", w, true}, {"b", f32({1}, {1}), true}},
                           {DType::kFloat, DType::kFloat}, {attr_string("activation", "silu")}, 27);
  expect_near(silu[0].tensor(), {101.0f / (1.0f + std::exp(-101.0f))});
  expect_error([&] { run_op("CausalConvWithState", {{"x", f32({1, 1, 1}, {1})}, {"w", w, true}}, {DType::kFloat, DType::kFloat},
                            {attr_string("activation", "gelu")}, 27); },
               "activation");
}

TEST(Opset27, LinearAttentionStreams) {
  // One head, dk = dv = 2, scale 1. Linear rule: S_t = S_{t-1} + k_t v_t^T, o_t = q_t^T S_t, so
  // o_1 = (q_1 . k_1) v_1 = 1 * [2, 3].
  const Tensor q = f32({1, 3, 2}, {1, 0, 0, 1, 1, 1});
  const Tensor k = f32({1, 3, 2}, {1, 0, 1, 1, 0, 2});
  const Tensor v = f32({1, 3, 2}, {2, 3, -1, 4, 0.5f, 0.25f});
  std::vector<AttrSpec> attrs{attr_int("q_num_heads", 1), attr_int("kv_num_heads", 1), attr_float("scale", 1.0f),
                              attr_string("update_rule", "linear")};
  const auto whole = run_op("LinearAttention", {{"q", q}, {"k", k}, {"v", v}}, {DType::kFloat, DType::kFloat}, attrs, 27);
  // S_1 = [[2, 3], [0, 0]]; S_2 = S_1 + [1, 1]^T [-1, 4] = [[1, 7], [-1, 4]];
  // S_3 = S_2 + [0, 2]^T [0.5, 0.25] = [[1, 7], [0, 4.5]].
  expect_near(whole[0].tensor(), {2, 3, -1, 4, 1, 11.5f});
  expect_near(whole[1].tensor(), {1, 7, 0, 4.5f});
  // The gated delta rule in two pieces equals the whole.
  const Tensor decay = f32({1, 3, 1}, {-0.1f, -0.5f, -0.2f});
  const Tensor beta = f32({1, 3, 1}, {0.9f, 0.5f, 0.7f});
  attrs.back() = attr_string("update_rule", "gated_delta");
  const auto all = run_op("LinearAttention", {{"q", q}, {"k", k}, {"v", v}, {"", Tensor()}, {"g", decay}, {"b", beta}},
                          {DType::kFloat, DType::kFloat}, attrs, 27);
  auto slice = [](const Tensor& t, int64_t from, int64_t n) {
    const int64_t w = t.dim(2);
    std::vector<float> v(t.data<float>() + from * w, t.data<float>() + (from + n) * w);
    return f32({1, n, w}, v);
  };
  const auto p1 = run_op("LinearAttention",
                         {{"q", slice(q, 0, 2)}, {"k", slice(k, 0, 2)}, {"v", slice(v, 0, 2)}, {"", Tensor()},
                          {"g", slice(decay, 0, 2)}, {"b", slice(beta, 0, 2)}},
                         {DType::kFloat, DType::kFloat}, attrs, 27);
  const auto p2 = run_op("LinearAttention",
                         {{"q", slice(q, 2, 1)}, {"k", slice(k, 2, 1)}, {"v", slice(v, 2, 1)}, {"s", p1[1].tensor()},
                          {"g", slice(decay, 2, 1)}, {"b", slice(beta, 2, 1)}},
                         {DType::kFloat, DType::kFloat}, attrs, 27);
  const std::vector<float> out = values<float>(all[0].tensor());
  expect_near(p1[0].tensor(), {out[0], out[1], out[2], out[3]});
  expect_near(p2[0].tensor(), {out[4], out[5]});
  expect_near(p2[1].tensor(), values<float>(all[1].tensor()));
  // The gated rules need the decay.
  expect_error([&] { run_op("LinearAttention", {{"q", q}, {"k", k}, {"v", v}}, {DType::kFloat, DType::kFloat}, attrs, 27); },
               "decay");
}

namespace {
/// FlexAttention (ai.onnx.preview 1) over q, k, v with the given mod graphs.
Tensor flex_attention(const Tensor& q, const Tensor& k, const Tensor& v, std::vector<AttrSpec> attrs) {
  GraphSpec g;
  NodeSpec n{"FlexAttention", {"q", "k", "v"}, {"y"}, std::move(attrs), "flex", "ai.onnx.preview"};
  g.nodes.push_back(n);
  for (const auto& [name, t] : {std::pair{"q", &q}, std::pair{"k", &k}, std::pair{"v", &v}})
    g.inputs.push_back({name, t->dtype(), t->shape().to_vector()});
  g.outputs.push_back(any_out("y"));
  const std::string m = encode_model(g, 26, 10, {{"ai.onnx.preview", 1}});
  Session s = Session::builder().with_intra_threads(1).commit_from_memory(m.data(), m.size());
  return s.run({{"q", Value(q)}, {"k", Value(k)}, {"v", Value(v)}})[0].tensor();
}

/// A one-node mod graph: out = op(in, c) for the scalar constant c.
GraphSpec mod_graph(const std::string& op, float c, DType cast_to = DType::kUndefined) {
  GraphSpec g;
  g.inputs.push_back({"in", DType::kFloat, {}});
  g.inputs.back().no_shape = true;
  g.initializers.emplace_back("c", Tensor::scalar<float>(c));
  g.nodes.push_back({op, {"in", "c"}, {cast_to == DType::kUndefined ? "out" : "pre"}, {}, "m"});
  if (cast_to != DType::kUndefined)
    g.nodes.push_back({"Cast", {"pre"}, {"out"}, {attr_int("to", static_cast<int64_t>(cast_to))}, "cast"});
  g.outputs.push_back(any_out("out", cast_to == DType::kUndefined ? DType::kFloat : cast_to));
  return g;
}
}  // namespace

TEST(Preview1, FlexAttentionMods) {
  // One head, two queries over two keys. Scale 1: scores q . k.
  const Tensor q = f32({1, 1, 2, 2}, {1, 0, 0, 1});
  const Tensor k = f32({1, 1, 2, 2}, {1, 0, 0, 1});
  const Tensor v = f32({1, 1, 2, 3}, {1, 2, 3, -1, 0, 1});
  const double e = std::exp(1.0), p0 = e / (e + 1), p1 = 1 / (e + 1);
  // Row 0: softmax([1, 0]) = [p0, p1]; row 1: softmax([0, 1]) = [p1, p0].
  const auto mix = [&](double a, double b) {
    return std::vector<float>{static_cast<float>(a * 1 + b * -1), static_cast<float>(a * 2 + b * 0), static_cast<float>(a * 3 + b * 1)};
  };
  std::vector<float> want = mix(p0, p1), row1 = mix(p1, p0);
  want.insert(want.end(), row1.begin(), row1.end());
  expect_near(flex_attention(q, k, v, {attr_float("scale", 1.0f)}), want);
  // prob_mod halves the probabilities: half the output.
  std::vector<float> half = want;
  for (float& x : half) x *= 0.5f;
  expect_near(flex_attention(q, k, v, {attr_float("scale", 1.0f), attr_graph("prob_mod", mod_graph("Mul", 0.5f))}), half);
  // score_mod adding the same to every score changes nothing.
  expect_near(flex_attention(q, k, v, {attr_float("scale", 1.0f), attr_graph("score_mod", mod_graph("Add", 3.0f))}), want);
  // A mod that returns another type is refused.
  expect_error([&] {
    flex_attention(q, k, v, {attr_graph("score_mod", mod_graph("Add", 3.0f, DType::kDouble))});
  }, "score_mod returns double");
}
