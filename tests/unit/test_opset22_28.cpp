// Operators new or changed in ai.onnx opsets 22 to 28 (onnx 1.23). Most are checked by the node
// tests of PyPI's onnx (the CTest conformance_cpu_onnx_pypi); these tests cover what those do
// not reach (attributes the node tests leave at their defaults), with literals computed by hand
// or with numpy.
#include <gtest/gtest.h>

#include "one_node.hpp"

using namespace onyx;
using namespace onyx::test;

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
