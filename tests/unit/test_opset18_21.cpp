// Operators that are new or changed in ai.onnx opsets 18 to 21, which the ONNX backend test data
// shipped by Debian (libonnx-testdata 1.12, up to opset 17) does not reach. Each test builds a
// model at the new opset and checks the values against literals computed by hand or with numpy /
// the ONNX reference evaluator (onnx.reference.ReferenceEvaluator, onnx 1.23); where the
// reference disagrees with the operator's specification, the comment says which one is followed.
// Ops of these opsets with tests elsewhere are listed in docs/opsets-18-21.md.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "one_node.hpp"

using namespace onyx;
using namespace onyx::test;

// ---------------------------------------------------------------------------------------------
// Opset 18

TEST(Opset18, BitwiseAndOrXorNot) {
  // numpy: np.bitwise_and / or / xor / invert on the same values.
  Tensor y = run1("BitwiseAnd",
                  {{"a", tensor<int32_t>({2, 3}, {12, -7, 255, 0, 1, -1})}, {"b", tensor<int32_t>({3}, {10, 3, -128})}},
                  DType::kInt32, {}, 18);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{8, 1, 128, 0, 1, -128}));
  y = run1("BitwiseOr",
           {{"a", tensor<uint8_t>({3}, {0x0F, 0xF0, 0xAA})}, {"b", tensor<uint8_t>({3}, {0x01, 0x0F, 0x55})}},
           DType::kUInt8, {}, 18);
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{15, 255, 255}));
  y = run1("BitwiseXor", {{"a", i64({3}, {5, -1, int64_t{1} << 40})}, {"b", i64({3}, {3, 7, (int64_t{1} << 40) | 1})}},
           DType::kInt64, {}, 18);
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{6, -8, 1}));
  y = run1("BitwiseNot", {{"x", tensor<int16_t>({4}, {0, 1, -1, 32767})}}, DType::kInt16, {}, 18);
  EXPECT_EQ(values<int16_t>(y), (std::vector<int16_t>{-1, -2, 0, -32768}));
  y = run1("BitwiseNot", {{"x", tensor<uint8_t>({3}, {0, 1, 255})}}, DType::kUInt8, {}, 18);
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{255, 254, 0}));
}

TEST(Opset18, BitwiseRejectsFloatsAndEarlierOpsets) {
  const std::vector<In> fl = {{"a", f32({2}, {1, 2})}, {"b", f32({2}, {3, 4})}};
  EXPECT_THROW(run1("BitwiseAnd", fl, DType::kFloat, {}, 18), Error);
  EXPECT_THROW(run1("BitwiseNot", {{"x", f32({1}, {1})}}, DType::kFloat, {}, 18), Error);
  // The ops do not exist before opset 18.
  EXPECT_THROW(run1("BitwiseOr", {{"a", i64({1}, {1})}, {"b", i64({1}, {2})}}, DType::kInt64, {}, 17), Error);
}

TEST(Opset18, Mish) {
  // Reference evaluator: x * tanh(log1p(exp(x))).
  const Tensor x = f32({8}, {-3, -1, -0.5f, 0, 0.5f, 1, 2, 3});
  expect_near(run1("Mish", {{"x", x}}, DType::kFloat, {}, 18),
              {-0.14564747f, -0.30340147f, -0.22074378f, 0.0f, 0.37524518f, 0.8650984f, 1.9439589f, 2.986535f});
  // double, large magnitudes (no overflow in exp).
  const Tensor d = run1("Mish", {{"x", tensor<double>({3}, {-50, 50, 1})}}, DType::kDouble, {}, 18);
  EXPECT_NEAR(d.data<double>()[0], -50 * std::tanh(std::log1p(std::exp(-50.0))), 1e-30);
  EXPECT_NEAR(d.data<double>()[1], 50.0, 1e-12);
  EXPECT_NEAR(d.data<double>()[2], 0.8650983882673103, 1e-12);
  EXPECT_THROW(run1("Mish", {{"x", x}}, DType::kFloat, {}, 17), Error);
}

TEST(Opset18, GroupNormalizationScalePerGroup) {
  // X [1, 4, 2], two groups {1,2,3,4} and {5,7,-1,0}; scale and bias per group at opset 18.
  // Reference evaluator (epsilon 1e-5).
  const Tensor x = f32({1, 4, 2}, {1, 2, 3, 4, 5, 7, -1, 0});
  const Tensor y =
      run1("GroupNormalization", {{"x", x}, {"s", f32({2}, {2, 0.5f}), true}, {"b", f32({2}, {0, 1}), true}},
           DType::kFloat, {attr_int("num_groups", 2), attr_float("epsilon", 1e-5f)}, 18);
  EXPECT_EQ(y.shape(), (Shape{1, 4, 2}));
  expect_near(y, {-2.6832709f, -0.89442366f, 0.89442366f, 2.6832709f, 1.3363457f, 1.6353195f, 0.43942392f, 0.58891088f},
              1e-4f);
  // Per-channel scale is an opset-21 form: at opset 18 it is an error.
  EXPECT_THROW(run1("GroupNormalization", {{"x", x}, {"s", f32({4}, {1, 1, 1, 1})}, {"b", f32({4}, {0, 0, 0, 0})}},
                    DType::kFloat, {attr_int("num_groups", 2)}, 18),
               Error);
  // num_groups must divide the channels.
  EXPECT_THROW(run1("GroupNormalization", {{"x", x}, {"s", f32({3}, {1, 1, 1})}, {"b", f32({3}, {0, 0, 0})}},
                    DType::kFloat, {attr_int("num_groups", 3)}, 18),
               Error);
}

TEST(Opset18, LpPoolDilationsAndCeilMode) {
  // x = [1, -2, 3, -4, ..., 9, -10], kernel 2, dilation 2, p 3: (|x_i|^3 + |x_{i+2}|^3)^(1/3).
  // Reference evaluator.
  const Tensor x1 = f32({1, 1, 10}, {1, -2, 3, -4, 5, -6, 7, -8, 9, -10});
  Tensor y = run1("LpPool", {{"x", x1}}, DType::kFloat,
                  {attr_ints("kernel_shape", {2}), attr_int("p", 3), attr_ints("dilations", {2})}, 18);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 8}));
  expect_near(y, {3.0365889f, 4.1601677f, 5.3368034f, 6.5421329f, 7.7639360f, 8.9958830f, 10.234460f, 11.477587f});
  // 5x5 of (0..24) - 12, kernel 2x2, stride 2, ceil_mode: a 3x3 output whose last row and column
  // see partial windows. Expected values by hand (sum of |x| over the in-range part of each
  // window, as onnxruntime gives; onnx's reference evaluator instead scales partial windows up to
  // the full kernel size).
  Tensor x2(DType::kFloat, Shape{1, 1, 5, 5});
  for (int i = 0; i < 25; ++i) x2.data<float>()[i] = static_cast<float>(i - 12);
  y = run1(
      "LpPool", {{"x", x2}}, DType::kFloat,
      {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2}), attr_int("p", 1), attr_int("ceil_mode", 1)},
      18);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 3}));
  expect_near(y, {36, 28, 11, 10, 12, 9, 17, 21, 12});
  y = run1("LpPool", {{"x", x2}}, DType::kFloat,
           {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)}, 18);
  // p = 2 (default): sqrt of the sums of squares, e.g. sqrt(8^2 + 3^2) = 8.5440037.
  expect_near(y, {18.708286f, 14.899665f, 8.5440037f, 5.4772258f, 7.8740077f, 7.2801099f, 12.041595f, 14.866069f, 12});
  // Without ceil_mode the partial windows are dropped.
  y = run1("LpPool", {{"x", x2}}, DType::kFloat,
           {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2}), attr_int("p", 1)}, 18);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  expect_near(y, {36, 28, 10, 12});
  // ceil_mode with dilations in 1-D, p 1 (onnxruntime; by hand the last window holds only x[8] = 9).
  y = run1("LpPool", {{"x", x1}}, DType::kFloat,
           {attr_ints("kernel_shape", {2}), attr_ints("dilations", {2}), attr_ints("strides", {2}),
            attr_int("ceil_mode", 1), attr_int("p", 1)},
           18);
  EXPECT_EQ(values<float>(y), (std::vector<float>{4, 8, 12, 16, 9}));
  y = run1("LpPool", {{"x", x1}}, DType::kFloat,
           {attr_ints("kernel_shape", {3}), attr_ints("dilations", {2}), attr_ints("strides", {3}),
            attr_int("ceil_mode", 1), attr_ints("pads", {1, 0}), attr_int("p", 1)},
           18);
  EXPECT_EQ(values<float>(y), (std::vector<float>{6, 15, 24}));  // reference evaluator and onnxruntime
  // dilations must have one entry per spatial dim.
  EXPECT_THROW(
      run1("LpPool", {{"x", x1}}, DType::kFloat, {attr_ints("kernel_shape", {2}), attr_ints("dilations", {2, 2})}, 18),
      Error);
}

TEST(Opset18, PadAxesInput) {
  // x = [[1,2,3],[4,5,6]], pads [1, 2] on axis 1, constant 9. Reference evaluator.
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y =
      run1("Pad",
           {{"x", x}, {"p", i64({2}, {1, 2}), true}, {"v", Tensor::scalar<float>(9), true}, {"a", i64({1}, {1}), true}},
           DType::kFloat, {}, 18);
  EXPECT_EQ(y.shape(), (Shape{2, 6}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9, 9}));
  // Negative and out-of-order axes: axes [-1, 0], pads [1, 0, 0, 2], reflect.
  y = run1("Pad", {{"x", x}, {"p", i64({4}, {1, 0, 0, 2}), true}, {"", Tensor()}, {"a", i64({2}, {-1, 0}), true}},
           DType::kFloat, {attr_string("mode", "reflect")}, 18);
  EXPECT_EQ(y.shape(), (Shape{4, 4}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{2, 1, 2, 3, 5, 4, 5, 6, 2, 1, 2, 3, 5, 4, 5, 6}));
  // Negative pads crop: axis 1, begin -1, end 1 (by hand: [[2,3,0],[5,6,0]]).
  y = run1("Pad", {{"x", x}, {"p", i64({2}, {-1, 1}), true}, {"", Tensor()}, {"a", i64({1}, {1}), true}}, DType::kFloat,
           {}, 18);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{2, 3, 0, 5, 6, 0}));
  // pads must have two entries per listed axis.
  EXPECT_THROW(run1("Pad", {{"x", x}, {"p", i64({4}, {1, 1, 1, 1}), true}, {"", Tensor()}, {"a", i64({1}, {1}), true}},
                    DType::kFloat, {}, 18),
               Error);
  // A repeated or out-of-range axis is an error too.
  EXPECT_THROW(run1("Pad", {{"x", x}, {"p", i64({2}, {1, 1}), true}, {"", Tensor()}, {"a", i64({1}, {2}), true}},
                    DType::kFloat, {}, 18),
               Error);
}

TEST(Opset18, SplitNumOutputs) {
  // 7 split into 3: ceil(7/3) = 3, so [3, 3, 1] (the last chunk is smaller). Reference evaluator.
  auto out = run_op("Split", {{"x", f32({7}, {0, 1, 2, 3, 4, 5, 6})}}, {DType::kFloat, DType::kFloat, DType::kFloat},
                    {attr_int("num_outputs", 3)}, 18);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(values<float>(out[0].tensor()), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(values<float>(out[1].tensor()), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(values<float>(out[2].tensor()), (std::vector<float>{6}));
  // [2, 5] on axis -1 into 2: [2, 3] and [2, 2].
  out = run_op("Split", {{"x", tensor<int32_t>({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})}},
               {DType::kInt32, DType::kInt32}, {attr_int("num_outputs", 2), attr_int("axis", -1)}, 18);
  EXPECT_EQ(out[0].tensor().shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int32_t>(out[0].tensor()), (std::vector<int32_t>{0, 1, 2, 5, 6, 7}));
  EXPECT_EQ(out[1].tensor().shape(), (Shape{2, 2}));
  EXPECT_EQ(values<int32_t>(out[1].tensor()), (std::vector<int32_t>{3, 4, 8, 9}));
  // More outputs than elements: [1], [2], [] (reference evaluator and onnxruntime).
  out = run_op("Split", {{"x", f32({2}, {1, 2})}}, {DType::kFloat, DType::kFloat, DType::kFloat},
               {attr_int("num_outputs", 3)}, 18);
  EXPECT_EQ(values<float>(out[0].tensor()), (std::vector<float>{1}));
  EXPECT_EQ(values<float>(out[1].tensor()), (std::vector<float>{2}));
  EXPECT_EQ(out[2].tensor().shape(), (Shape{0}));
}

TEST(Opset18, SplitNumOutputsErrors) {
  const Tensor x = f32({6}, {0, 1, 2, 3, 4, 5});
  // num_outputs must equal the number of outputs.
  expect_error(
      [&] {
        run_op("Split", {{"x", x}}, {DType::kFloat, DType::kFloat}, {attr_int("num_outputs", 3)}, 18);
      },
      "num_outputs");
  // The split input and num_outputs are exclusive.
  expect_error(
      [&] {
        run_op("Split", {{"x", x}, {"s", i64({2}, {2, 4}), true}}, {DType::kFloat, DType::kFloat},
               {attr_int("num_outputs", 2)}, 18);
      },
      "not both");
}

TEST(Opset18, ReduceOpsTakeAxesAsInput) {
  // x = [[1,2,3],[4,5,6]]; axes [1] without keepdims and [-2] with keepdims. Reference evaluator.
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  struct Case {
    const char* op;
    std::vector<float> by_row, by_col;
  };
  const Case cases[] = {
      {"ReduceL1", {6, 15}, {5, 7, 9}},
      {"ReduceL2", {3.7416575f, 8.7749643f}, {4.1231055f, 5.3851647f, 6.7082038f}},
      {"ReduceLogSum", {1.7917595f, 2.7080503f}, {1.6094379f, 1.9459102f, 2.1972246f}},
      {"ReduceLogSumExp", {3.4076061f, 6.4076061f}, {4.0485873f, 5.0485873f, 6.0485873f}},
      {"ReduceMax", {3, 6}, {4, 5, 6}},
      {"ReduceMean", {2, 5}, {2.5f, 3.5f, 4.5f}},
      {"ReduceMin", {1, 4}, {1, 2, 3}},
      {"ReduceProd", {6, 120}, {4, 10, 18}},
      {"ReduceSumSquare", {14, 77}, {17, 29, 45}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    Tensor y = run1(c.op, {{"x", x}, {"axes", i64({1}, {1}), true}}, DType::kFloat, {attr_int("keepdims", 0)}, 18);
    EXPECT_EQ(y.shape(), (Shape{2}));
    expect_near(y, c.by_row);
    y = run1(c.op, {{"x", x}, {"axes", i64({1}, {-2})}}, DType::kFloat, {attr_int("keepdims", 1)},
             18);  // axes as a graph input
    EXPECT_EQ(y.shape(), (Shape{1, 3}));
    expect_near(y, c.by_col);
    // An axis out of range is an error.
    EXPECT_THROW(run1(c.op, {{"x", x}, {"axes", i64({1}, {2}), true}}, DType::kFloat, {}, 18), Error);
    // The opset-13 axes attribute no longer exists at opset 18: an error (at load: the schema does
    // not declare it), not silently ignored.
    expect_error([&] { run1(c.op, {{"x", x}}, DType::kFloat, {attr_ints("axes", {1})}, 18); },
                 "'axes' is not an attribute of");
    // ... while at opset 17 it is the way to give axes.
    expect_near(run1(c.op, {{"x", x}}, DType::kFloat, {attr_ints("axes", {1}), attr_int("keepdims", 0)}, 17), c.by_row);
  }
}

TEST(Opset18, OptionalOpsTakePlainTensors) {
  // Opset 18 lets OptionalHasElement / OptionalGetElement take a tensor: it is always present and
  // is its own element.
  const Tensor x = f32({2}, {3, 4});
  Tensor has = run1("OptionalHasElement", {{"x", x}}, DType::kBool, {}, 18);
  EXPECT_EQ(bools(has), (std::vector<bool>{true}));
  Tensor got = run1("OptionalGetElement", {{"x", x}}, DType::kFloat, {}, 18);
  EXPECT_EQ(values<float>(got), (std::vector<float>{3, 4}));
  // No input at all: an empty optional.
  Tensor none = run1("OptionalHasElement", {}, DType::kBool, {}, 18);
  EXPECT_EQ(bools(none), (std::vector<bool>{false}));
  EXPECT_THROW(run1("OptionalHasElement", {}, DType::kBool, {}, 15), Error);
}

// ---------------------------------------------------------------------------------------------
// Opset 19

TEST(Opset19, AveragePoolDilations) {
  const Tensor x = f32({1, 1, 10}, {1, -2, 3, -4, 5, -6, 7, -8, 9, -10});
  // kernel 3, dilation 2: mean of x[i], x[i+2], x[i+4]. Reference evaluator.
  Tensor y =
      run1("AveragePool", {{"x", x}}, DType::kFloat, {attr_ints("kernel_shape", {3}), attr_ints("dilations", {2})}, 19);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 6}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{3, -4, 5, -6, 7, -8}));
  // kernel 2, dilation 3, pads 1 each side: windows (i-1, i+2); count_include_pad 1 divides by 2
  // always, 0 by the in-range count. Reference evaluator.
  y = run1("AveragePool", {{"x", x}}, DType::kFloat,
           {attr_ints("kernel_shape", {2}), attr_ints("dilations", {3}), attr_ints("pads", {1, 1}),
            attr_int("count_include_pad", 1)},
           19);
  EXPECT_EQ(values<float>(y), (std::vector<float>{1.5f, -1.5f, 1.5f, -1.5f, 1.5f, -1.5f, 1.5f, -1.5f, -4}));
  y = run1("AveragePool", {{"x", x}}, DType::kFloat,
           {attr_ints("kernel_shape", {2}), attr_ints("dilations", {3}), attr_ints("pads", {1, 1})}, 19);
  EXPECT_EQ(values<float>(y), (std::vector<float>{3, -1.5f, 1.5f, -1.5f, 1.5f, -1.5f, 1.5f, -1.5f, -8}));
  // 2-D: 5x5 of (0..24) - 12, kernel 2x2, dilations 2x2, strides 1x2. Reference evaluator.
  Tensor x2(DType::kFloat, Shape{1, 1, 5, 5});
  for (int i = 0; i < 25; ++i) x2.data<float>()[i] = static_cast<float>(i - 12);
  y = run1("AveragePool", {{"x", x2}}, DType::kFloat,
           {attr_ints("kernel_shape", {2, 2}), attr_ints("dilations", {2, 2}), attr_ints("strides", {1, 2})}, 19);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 2}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{-6, -4, -1, 1, 4, 6}));
  // ceil_mode with dilations (reference evaluator and onnxruntime agree): the last window
  // starts inside the input and is averaged over its in-range elements.
  y = run1("AveragePool", {{"x", x}}, DType::kFloat,
           {attr_ints("kernel_shape", {2}), attr_ints("dilations", {2}), attr_ints("strides", {2}),
            attr_int("ceil_mode", 1)},
           19);
  EXPECT_EQ(values<float>(y), (std::vector<float>{2, 4, 6, 8, 9}));
  y = run1("AveragePool", {{"x", x}}, DType::kFloat,
           {attr_ints("kernel_shape", {3}), attr_ints("dilations", {2}), attr_ints("strides", {3}),
            attr_int("ceil_mode", 1), attr_ints("pads", {1, 0})},
           19);
  EXPECT_EQ(values<float>(y), (std::vector<float>{-3, 5, -8}));
  y = run1("AveragePool", {{"x", x}}, DType::kFloat,
           {attr_ints("kernel_shape", {2}), attr_ints("dilations", {2}), attr_ints("strides", {3}),
            attr_int("ceil_mode", 1), attr_ints("pads", {0, 1}), attr_int("count_include_pad", 1)},
           19);
  EXPECT_EQ(values<float>(y), (std::vector<float>{2, -5, 8, -10}));
  EXPECT_THROW(
      run1("AveragePool", {{"x", x}}, DType::kFloat, {attr_ints("kernel_shape", {2}), attr_ints("dilations", {0})}, 19),
      Error);
}

TEST(Opset19, PadWrapMode) {
  // x = [[1,2,3],[4,5,6]], pads [1, 2, 0, 1] (begin rows, begin cols, end rows, end cols).
  // Reference evaluator (numpy.pad mode 'wrap').
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y =
      run1("Pad", {{"x", x}, {"p", i64({4}, {1, 2, 0, 1}), true}}, DType::kFloat, {attr_string("mode", "wrap")}, 19);
  EXPECT_EQ(y.shape(), (Shape{3, 6}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{5, 6, 4, 5, 6, 4, 2, 3, 1, 2, 3, 1, 5, 6, 4, 5, 6, 4}));
  // Padding wider than the dim wraps more than once.
  y = run1("Pad", {{"x", x}, {"p", i64({4}, {0, 4, 0, 0}), true}}, DType::kFloat, {attr_string("mode", "wrap")}, 19);
  EXPECT_EQ(values<float>(y), (std::vector<float>{3, 1, 2, 3, 1, 2, 3, 6, 4, 5, 6, 4, 5, 6}));
  // Integer data, and an unknown mode is an error.
  y = run1("Pad", {{"x", i64({3}, {7, 8, 9})}, {"p", i64({2}, {2, 2}), true}}, DType::kInt64,
           {attr_string("mode", "wrap")}, 19);
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{8, 9, 7, 8, 9, 7, 8}));
  expect_error(
      [&] {
        run1("Pad", {{"x", x}, {"p", i64({4}, {1, 1, 1, 1}), true}}, DType::kFloat, {attr_string("mode", "mirror")},
             19);
      },
      "mirror");
}

TEST(Opset19, EqualOnStrings) {
  // Reference evaluator.
  Tensor y = run1("Equal", {{"a", strings({4}, {"a", "bc", "", "x"})}, {"b", strings({4}, {"a", "b", "", "X"})}},
                  DType::kBool, {}, 19);
  EXPECT_EQ(bools(y), (std::vector<bool>{true, false, true, false}));
  y = run1("Equal", {{"a", strings({2, 1}, {"a", "b"})}, {"b", strings({3}, {"a", "b", "c"})}}, DType::kBool, {}, 19);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(bools(y), (std::vector<bool>{true, false, false, false, true, false}));
  // Strings against numbers is a type error.
  EXPECT_THROW(run1("Equal", {{"a", strings({1}, {"1"})}, {"b", f32({1}, {1})}}, DType::kBool, {}, 19), Error);
}

TEST(Opset19, CastToFloat8Saturates) {
  // Reference evaluator (Cast-19 to each float8 type, saturate 1 and 0), except where the
  // specification's table differs from it: +-Inf with saturate to an FNUZ type is NaN (0x80) in
  // Cast-19 to 23's table (the reference gives the largest finite value, which Cast-24's table
  // says too: see Opset24.CastInfinityToFnuz), which onyx follows, as its QuantizeLinear does.
  const Tensor x =
      f32({12}, {1.0f, 0.5f, -2.0f, 448.0f, 500.0f, kInf, -kInf, kNaN, 0.001953125f, -0.0f, 1.0625f, 3.3f});
  struct Case {
    DType to;
    std::vector<uint8_t> sat, nosat;
  };
  const Case cases[] = {
      {DType::kFloat8E4M3FN,
       {0x38, 0x30, 0xC0, 0x7E, 0x7E, 0x7E, 0xFE, 0x7F, 0x01, 0x80, 0x38, 0x45},
       {0x38, 0x30, 0xC0, 0x7E, 0x7F, 0x7F, 0xFF, 0x7F, 0x01, 0x80, 0x38, 0x45}},
      {DType::kFloat8E4M3FNUZ,
       {0x40, 0x38, 0xC8, 0x7F, 0x7F, 0x80, 0x80, 0x80, 0x02, 0x00, 0x40, 0x4D},
       {0x40, 0x38, 0xC8, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02, 0x00, 0x40, 0x4D}},
      {DType::kFloat8E5M2,
       {0x3C, 0x38, 0xC0, 0x5F, 0x60, 0x7B, 0xFB, 0x7E, 0x18, 0x80, 0x3C, 0x43},
       {0x3C, 0x38, 0xC0, 0x5F, 0x60, 0x7C, 0xFC, 0x7E, 0x18, 0x80, 0x3C, 0x43}},
      {DType::kFloat8E5M2FNUZ,
       {0x40, 0x3C, 0xC4, 0x63, 0x64, 0x80, 0x80, 0x80, 0x1C, 0x00, 0x40, 0x47},
       {0x40, 0x3C, 0xC4, 0x63, 0x64, 0x80, 0x80, 0x80, 0x1C, 0x00, 0x40, 0x47}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(dtype_name(c.to));
    const int64_t to = static_cast<int64_t>(c.to);
    Tensor y = run1("Cast", {{"x", x}}, c.to, {attr_int("to", to)}, 19);
    EXPECT_EQ(y.dtype(), c.to);
    // E5M2 has several NaN codes (the reference gives 0x7E, onyx 0x7F): element 7 (NaN) is
    // checked by decoding it.
    std::vector<uint8_t> got = bytes_of(y);
    EXPECT_TRUE(std::isnan(values<float>(
        run1("Cast", {{"x", bytes_tensor(c.to, {1}, {got[7]})}}, DType::kFloat, {attr_int("to", 1)}, 19))[0]));
    got[7] = c.sat[7];
    EXPECT_EQ(got, c.sat);
    y = run1("Cast", {{"x", x}}, c.to, {attr_int("to", to), attr_int("saturate", 0)}, 19);
    got = bytes_of(y);
    got[7] = c.nosat[7];
    EXPECT_EQ(got, c.nosat);
  }
  // Other source types go through their value: float16 (300 rounds to 288) and int32
  // (17 -> 16, -1000 -> -1024 in E5M2). Reference evaluator.
  Tensor h(DType::kFloat16, Shape{3});
  auto* ph = static_cast<Float16*>(h.raw_data());
  ph[0] = Float16(1.5f);
  ph[1] = Float16(-300.0f);
  ph[2] = Float16(1000.0f);
  EXPECT_EQ(bytes_of(run1("Cast", {{"x", h}}, DType::kFloat8E4M3FN, {attr_int("to", 17)}, 19)),
            (std::vector<uint8_t>{0x3C, 0xF9, 0x7E}));
  EXPECT_EQ(bytes_of(run1("Cast", {{"x", tensor<int32_t>({3}, {3, 17, -1000})}}, DType::kFloat8E5M2,
                          {attr_int("to", 19)}, 19)),
            (std::vector<uint8_t>{0x42, 0x4C, 0xE4}));
}

TEST(Opset19, CastFromFloat8) {
  // Reference evaluator: E4M3FN codes 0x38 (1), 0x7E (448), 0x01 (2^-9), 0xB8 (-1), 0x7F (NaN), 0x80 (-0).
  Tensor y = run1("Cast", {{"x", bytes_tensor(DType::kFloat8E4M3FN, {6}, {0x38, 0x7E, 0x01, 0xB8, 0x7F, 0x80})}},
                  DType::kFloat, {attr_int("to", 1)}, 19);
  const auto v = values<float>(y);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], 448.0f);
  EXPECT_EQ(v[2], 0.001953125f);
  EXPECT_EQ(v[3], -1.0f);
  EXPECT_TRUE(std::isnan(v[4]));
  EXPECT_TRUE(v[5] == 0.0f && std::signbit(v[5]));
  // E5M2 has infinities: 0x3C 1, 0x7B 57344, 0x7C inf, 0xFC -inf, 0x42 3, 0x01 2^-16.
  y = run1("Cast", {{"x", bytes_tensor(DType::kFloat8E5M2, {6}, {0x3C, 0x7B, 0x7C, 0xFC, 0x42, 0x01})}}, DType::kFloat,
           {attr_int("to", 1)}, 19);
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 57344, kInf, -kInf, 3, 1.52587890625e-05f}));
  // FNUZ: 0x80 is NaN; E4M3FNUZ 0x7F is 240, E5M2FNUZ 0x7F is 57344.
  y = run1("Cast", {{"x", bytes_tensor(DType::kFloat8E4M3FNUZ, {4}, {0x40, 0x80, 0x7F, 0xC0})}}, DType::kDouble,
           {attr_int("to", 11)}, 19);
  EXPECT_EQ(y.data<double>()[0], 1.0);
  EXPECT_TRUE(std::isnan(y.data<double>()[1]));
  EXPECT_EQ(y.data<double>()[2], 240.0);
  EXPECT_EQ(y.data<double>()[3], -1.0);
  y = run1("Cast", {{"x", bytes_tensor(DType::kFloat8E5M2FNUZ, {2}, {0x7F, 0xC0})}}, DType::kFloat, {attr_int("to", 1)},
           19);
  EXPECT_EQ(values<float>(y), (std::vector<float>{57344, -1}));
  // To integers (truncating): 1, -3, 448. Reference evaluator.
  y = run1("Cast", {{"x", bytes_tensor(DType::kFloat8E4M3FN, {3}, {0x38, 0xC4, 0x7E})}}, DType::kInt32,
           {attr_int("to", 6)}, 19);
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{1, -3, 448}));
  // Between two float8 types: E5M2 57344 saturates to E4M3FN's 448 (0x7E).
  y = run1("Cast", {{"x", bytes_tensor(DType::kFloat8E5M2, {2}, {0x7B, 0x3C})}}, DType::kFloat8E4M3FN,
           {attr_int("to", 17)}, 19);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x7E, 0x38}));
  // To and from strings: "1", "-3"; "0.5" -> 0x30.
  y = run1("Cast", {{"x", bytes_tensor(DType::kFloat8E4M3FN, {2}, {0x38, 0xC4})}}, DType::kString, {attr_int("to", 8)},
           19);
  EXPECT_EQ(values<std::string>(y), (std::vector<std::string>{"1", "-3"}));
  y = run1("Cast", {{"x", strings({1}, {"0.5"})}}, DType::kFloat8E4M3FN, {attr_int("to", 17)}, 19);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x30}));
}

TEST(Opset19, CastFloat8NeedsOpset19) {
  const Tensor x = f32({1}, {1});
  EXPECT_THROW(run1("Cast", {{"x", x}}, DType::kFloat8E4M3FN, {attr_int("to", 17)}, 18), Error);
  EXPECT_THROW(run1("Cast", {{"x", x}}, DType::kFloat, {attr_int("to", 99)}, 19), Error);  // not a type
}

TEST(Opset19, CastLikeFloat8) {
  // The target type comes from the second input; saturate applies as for Cast.
  const Tensor x = f32({3}, {1.0f, 500.0f, -kInf});
  const Tensor like = bytes_tensor(DType::kFloat8E4M3FN, {1}, {0});
  Tensor y = run1("CastLike", {{"x", x}, {"t", like}}, DType::kFloat8E4M3FN, {}, 19);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x38, 0x7E, 0xFE}));
  y = run1("CastLike", {{"x", x}, {"t", like}}, DType::kFloat8E4M3FN, {attr_int("saturate", 0)}, 19);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x38, 0x7F, 0xFF}));
  y = run1("CastLike", {{"x", bytes_tensor(DType::kFloat8E5M2, {2}, {0x3C, 0xC0})}, {"t", f32({1}, {0})}},
           DType::kFloat, {}, 19);
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, -2}));
  EXPECT_THROW(run1("CastLike", {{"x", x}, {"t", like}}, DType::kFloat8E4M3FN, {}, 18), Error);
}

TEST(Opset19, ConstantIdentityReshapeShapeSizeOnFloat8) {
  // A float8 Constant (the attribute tensor round-trips through the model file) feeding Identity,
  // Reshape, Shape and Size.
  const Tensor c = bytes_tensor(DType::kFloat8E5M2, {2, 3}, {0x3C, 0x40, 0x42, 0x44, 0x45, 0x46});
  GraphSpec g;
  g.nodes.push_back({"Constant", {}, {"c"}, {attr_tensor("value", c)}});
  g.nodes.push_back({"Identity", {"c"}, {"id"}});
  g.nodes.push_back({"Reshape", {"id", "shape"}, {"r"}});
  g.nodes.push_back({"Shape", {"r"}, {"s"}, {attr_int("start", -1)}});
  g.nodes.push_back({"Size", {"c"}, {"n"}});
  g.initializers.emplace_back("shape", i64({2}, {3, -1}));
  g.outputs = {{"r", DType::kFloat8E5M2, {3, 2}}, {"s", DType::kInt64, {1}}, {"n", DType::kInt64, {}}};
  auto out = session_of(g, 19).run(kNoFeeds);
  EXPECT_EQ(out[0].tensor().dtype(), DType::kFloat8E5M2);
  EXPECT_EQ(out[0].tensor().shape(), (Shape{3, 2}));
  EXPECT_EQ(bytes_of(out[0].tensor()), (std::vector<uint8_t>{0x3C, 0x40, 0x42, 0x44, 0x45, 0x46}));
  EXPECT_EQ(values<int64_t>(out[1].tensor()), (std::vector<int64_t>{2}));
  EXPECT_EQ(values<int64_t>(out[2].tensor()), (std::vector<int64_t>{6}));
  // Reshape of float8 data that is a graph input (runs in the kernel, not folded).
  Tensor y = run1("Reshape", {{"x", c}, {"s", i64({1}, {6}), true}}, DType::kFloat8E5M2, {}, 19);
  EXPECT_EQ(y.shape(), (Shape{6}));
  EXPECT_EQ(bytes_of(y), bytes_of(c));
  // Before opset 19 Reshape has no float8 types.
  EXPECT_THROW(run1("Reshape", {{"x", c}, {"s", i64({1}, {6}), true}}, DType::kFloat8E5M2, {}, 18), Error);
}

TEST(Opset19, IfLoopScanCarryFloat8) {
  // If picks one of two float8 outer values; opset 19 added float8 to If / Loop / Scan.
  GraphSpec then_g, else_g;
  then_g.name = "then";
  then_g.nodes.push_back({"Identity", {"a"}, {"t"}});
  then_g.outputs = {{"t", DType::kFloat8E4M3FN, {2}}};
  else_g.name = "else";
  else_g.nodes.push_back({"Identity", {"b"}, {"e"}});
  else_g.outputs = {{"e", DType::kFloat8E4M3FN, {2}}};
  GraphSpec g;
  g.inputs = {{"c", DType::kBool, {}}, {"a", DType::kFloat8E4M3FN, {2}}, {"b", DType::kFloat8E4M3FN, {2}}};
  g.outputs = {{"y", DType::kFloat8E4M3FN, {2}}};
  g.nodes.push_back({"If", {"c"}, {"y"}, {attr_graph("then_branch", then_g), attr_graph("else_branch", else_g)}});
  Session s = session_of(g, 19);
  const Tensor a = bytes_tensor(DType::kFloat8E4M3FN, {2}, {0x38, 0x40});
  const Tensor b = bytes_tensor(DType::kFloat8E4M3FN, {2}, {0xB8, 0xC0});
  EXPECT_EQ(bytes_of(s.run({{"c", Tensor::scalar<bool>(true)}, {"a", a}, {"b", b}})[0].tensor()), bytes_of(a));
  EXPECT_EQ(bytes_of(s.run({{"c", Tensor::scalar<bool>(false)}, {"a", a}, {"b", b}})[0].tensor()), bytes_of(b));

  // Scan over a float8 sequence whose body casts each element to float and adds it to a sum.
  GraphSpec body;
  body.name = "body";
  body.inputs = {{"s_in", DType::kFloat, {}}, {"x_i", DType::kFloat8E4M3FN, {}}};
  body.outputs = {{"s_out", DType::kFloat, {}}, {"echo", DType::kFloat8E4M3FN, {}}};
  body.nodes.push_back({"Cast", {"x_i"}, {"xf"}, {attr_int("to", 1)}});
  body.nodes.push_back({"Add", {"s_in", "xf"}, {"s_out"}});
  body.nodes.push_back({"Identity", {"x_i"}, {"echo"}});
  GraphSpec sg;
  sg.inputs = {{"init", DType::kFloat, {}}, {"xs", DType::kFloat8E4M3FN, {3}}};
  sg.outputs = {{"sum", DType::kFloat, {}}, {"ys", DType::kFloat8E4M3FN, {3}}};
  sg.nodes.push_back(
      {"Scan", {"init", "xs"}, {"sum", "ys"}, {attr_graph("body", body), attr_int("num_scan_inputs", 1)}});
  const Tensor xs = bytes_tensor(DType::kFloat8E4M3FN, {3}, {0x38, 0x40, 0x44});  // 1, 2, 3
  auto out = session_of(sg, 19).run({{"init", Tensor::scalar<float>(0.5f)}, {"xs", xs}});
  EXPECT_EQ(out[0].tensor().data<float>()[0], 6.5f);
  EXPECT_EQ(bytes_of(out[1].tensor()), bytes_of(xs));

  // Loop carrying a float8 value and stacking it as a scan output, twice.
  GraphSpec lb;
  lb.name = "body";
  lb.inputs = {{"i", DType::kInt64, {}}, {"c_in", DType::kBool, {}}, {"v_in", DType::kFloat8E4M3FN, {1}}};
  lb.outputs = {{"c_out", DType::kBool, {}}, {"v_out", DType::kFloat8E4M3FN, {1}}, {"scan", DType::kFloat8E4M3FN, {1}}};
  lb.nodes.push_back({"Identity", {"c_in"}, {"c_out"}});
  lb.nodes.push_back({"Identity", {"v_in"}, {"v_out"}});
  lb.nodes.push_back({"Identity", {"v_in"}, {"scan"}});
  GraphSpec lg;
  lg.inputs = {{"M", DType::kInt64, {}}, {"v", DType::kFloat8E4M3FN, {1}}};
  lg.outputs = {{"vf", DType::kFloat8E4M3FN, {1}}, {"vs", DType::kFloat8E4M3FN, {-1, 1}}};
  lg.nodes.push_back({"Loop", {"M", "", "v"}, {"vf", "vs"}, {attr_graph("body", lb)}});
  out = session_of(lg, 19).run(
      {{"M", Tensor::scalar<int64_t>(2)}, {"v", bytes_tensor(DType::kFloat8E4M3FN, {1}, {0x4E})}});
  EXPECT_EQ(bytes_of(out[0].tensor()), (std::vector<uint8_t>{0x4E}));
  EXPECT_EQ(out[1].tensor().shape(), (Shape{2, 1}));
  EXPECT_EQ(bytes_of(out[1].tensor()), (std::vector<uint8_t>{0x4E, 0x4E}));
}

// ---------------------------------------------------------------------------------------------
// Opset 20

TEST(Opset20, GeluExactAndTanh) {
  // Reference evaluator: x * Phi(x), and the tanh approximation.
  const Tensor x = f32({8}, {-3, -1, -0.5f, 0, 0.5f, 1, 2, 3});
  expect_near(run1("Gelu", {{"x", x}}, DType::kFloat, {}, 20),
              {-0.004049689f, -0.15865526f, -0.15426877f, 0, 0.34573123f, 0.8413447f, 1.9544997f, 2.9959502f});
  expect_near(run1("Gelu", {{"x", x}}, DType::kFloat, {attr_string("approximate", "tanh")}, 20),
              {-0.003637344f, -0.158808f, -0.154286f, 0, 0.345714f, 0.841192f, 1.9545977f, 2.9963627f});
  // float16 (reference evaluator: -0.0454 -0.1543 0.3457 2.996) and double with tanh
  // (reference evaluator).
  Tensor h(DType::kFloat16, Shape{4});
  const float hv[] = {-2, -0.5f, 0.5f, 3};
  for (int i = 0; i < 4; ++i) static_cast<Float16*>(h.raw_data())[i] = Float16(hv[i]);
  const Tensor gh = run1("Gelu", {{"x", h}}, DType::kFloat16, {}, 20);
  const float gw[] = {-0.0454f, -0.1543f, 0.3457f, 2.996f};
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(static_cast<float>(static_cast<const Float16*>(gh.raw_data())[i]), gw[i], 2e-3) << i;
  const Tensor gd = run1("Gelu", {{"x", tensor<double>({4}, {-2, -0.5, 0.5, 3})}}, DType::kDouble,
                         {attr_string("approximate", "tanh")}, 20);
  const double gdw[] = {-0.04540231, -0.154285992, 0.345714008, 2.996362607};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(gd.data<double>()[i], gdw[i], 1e-8) << i;
  expect_error(
      [&] {
        run1("Gelu", {{"x", x}}, DType::kFloat, {attr_string("approximate", "fast")}, 20);
      },
      "approximate");
  EXPECT_THROW(run1("Gelu", {{"x", x}}, DType::kFloat, {}, 19), Error);  // no Gelu before opset 20
  EXPECT_THROW(run1("Gelu", {{"x", i64({1}, {1})}}, DType::kInt64, {}, 20), Error);
}

TEST(Opset20, IsInfIsNaN) {
  // Reference evaluator.
  const Tensor x = f32({6}, {1, -kInf, kInf, kNaN, 0, -3.5f});
  EXPECT_EQ(bools(run1("IsInf", {{"x", x}}, DType::kBool, {}, 20)),
            (std::vector<bool>{false, true, true, false, false, false}));
  EXPECT_EQ(bools(run1("IsInf", {{"x", x}}, DType::kBool, {attr_int("detect_negative", 0)}, 20)),
            (std::vector<bool>{false, false, true, false, false, false}));
  EXPECT_EQ(bools(run1("IsInf", {{"x", x}}, DType::kBool, {attr_int("detect_positive", 0)}, 20)),
            (std::vector<bool>{false, true, false, false, false, false}));
  EXPECT_EQ(bools(run1("IsNaN", {{"x", x}}, DType::kBool, {}, 20)),
            (std::vector<bool>{false, false, false, true, false, false}));
  // bfloat16 and float16 (IsInf-20 added both): 0x7F80 is +inf, 0xFF80 -inf, 0x7FC0 NaN in
  // bfloat16; 0x7C00 +inf, 0x7E00 NaN in float16.
  const Tensor bf = bits16_tensor(DType::kBFloat16, {3}, {0x7F80, 0xFF80, 0x7FC0});
  EXPECT_EQ(bools(run1("IsInf", {{"x", bf}}, DType::kBool, {}, 20)), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(bools(run1("IsNaN", {{"x", bf}}, DType::kBool, {}, 20)), (std::vector<bool>{false, false, true}));
  const Tensor hf = bits16_tensor(DType::kFloat16, {2}, {0x7C00, 0x7E00});
  EXPECT_EQ(bools(run1("IsInf", {{"x", hf}}, DType::kBool, {}, 20)), (std::vector<bool>{true, false}));
}

TEST(Opset20, IsInfIsNaNOnFloat8) {
  // E5M2: 0x7C inf, 0xFC -inf, 0x7E NaN, 0x3C 1. E4M3FN: 0x7F / 0xFF NaN, 0x7E 448 (no infinities).
  // FNUZ types: only 0x80 is NaN.
  const Tensor e5 = bytes_tensor(DType::kFloat8E5M2, {4}, {0x7C, 0xFC, 0x7E, 0x3C});
  EXPECT_EQ(bools(run1("IsInf", {{"x", e5}}, DType::kBool, {}, 20)), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(bools(run1("IsInf", {{"x", e5}}, DType::kBool, {attr_int("detect_positive", 0)}, 20)),
            (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(bools(run1("IsNaN", {{"x", e5}}, DType::kBool, {}, 20)), (std::vector<bool>{false, false, true, false}));
  const Tensor e4 = bytes_tensor(DType::kFloat8E4M3FN, {3}, {0x7F, 0xFF, 0x7E});
  EXPECT_EQ(bools(run1("IsNaN", {{"x", e4}}, DType::kBool, {}, 20)), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(bools(run1("IsInf", {{"x", e4}}, DType::kBool, {}, 20)), (std::vector<bool>{false, false, false}));
  const Tensor nuz = bytes_tensor(DType::kFloat8E4M3FNUZ, {3}, {0x80, 0x7F, 0x00});
  EXPECT_EQ(bools(run1("IsNaN", {{"x", nuz}}, DType::kBool, {}, 20)), (std::vector<bool>{true, false, false}));
  const Tensor nuz5 = bytes_tensor(DType::kFloat8E5M2FNUZ, {2}, {0x80, 0x7F});
  EXPECT_EQ(bools(run1("IsNaN", {{"x", nuz5}}, DType::kBool, {}, 20)), (std::vector<bool>{true, false}));
  EXPECT_EQ(bools(run1("IsInf", {{"x", nuz5}}, DType::kBool, {}, 20)), (std::vector<bool>{false, false}));
  // Before opset 20 float8 is not an IsNaN type.
  EXPECT_THROW(run1("IsNaN", {{"x", e5}}, DType::kBool, {}, 19), Error);
}

TEST(Opset20, ConstantOfShapeBFloat16AndFloat8) {
  // value = bfloat16 1.5 (0x3FC0) and float8e4m3fn 1 (0x38): every output element has its bytes.
  const Tensor bf = bits16_tensor(DType::kBFloat16, {1}, {0x3FC0});
  Tensor y = run1("ConstantOfShape", {{"s", i64({2}, {2, 2})}}, DType::kBFloat16, {attr_tensor("value", bf)}, 20);
  EXPECT_EQ(y.dtype(), DType::kBFloat16);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(BFloat16::to_float(static_cast<const uint16_t*>(y.raw_data())[i]), 1.5f);
  const Tensor f8 = bytes_tensor(DType::kFloat8E4M3FN, {1}, {0x38});
  y = run1("ConstantOfShape", {{"s", i64({1}, {3})}}, DType::kFloat8E4M3FN, {attr_tensor("value", f8)}, 20);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x38, 0x38, 0x38}));
  // Without a value: float zeros; a value of more than one element is an error.
  y = run1("ConstantOfShape", {{"s", i64({1}, {2})}}, DType::kFloat, {}, 20);
  EXPECT_EQ(values<float>(y), (std::vector<float>{0, 0}));
  EXPECT_THROW(
      run1("ConstantOfShape", {{"s", i64({1}, {2})}}, DType::kFloat, {attr_tensor("value", f32({2}, {1, 2}))}, 20),
      Error);
}

TEST(Opset19, DeformConv) {
  // Expected values from onnx's reference evaluator (onnx 1.23, ReferenceEvaluator); the second
  // case also agrees with onnxruntime 1.32 to 1e-7.
  // Case 1: offset_group 2, pads 1, with bias and mask; offsets up to +-1.5 so taps leave the input.
  const Tensor x = f32({1, 4, 3, 3}, {0.25f, 0.79f, 0.55f, -0.55f, -0.4f, 0.75f, -0.99f, 0.64f, 0.59f, -0.06f, -0.39f, -0.44f, -0.49f, -0.11f, 0.01f, 0.11f, 0.99f, 0.59f, 0.24f, 0.98f, -0.57f, -0.68f, 0.23f, -0.91f, -0.93f, 0.03f, -0.07f, 0.83f, 0.26f, 0.03f, -0.01f, -0.5f, -0.98f, -0.62f, 0.38f, -0.6f});
  const Tensor w = f32({2, 4, 2, 2}, {-0.26f, -0.99f, 0.66f, -0.69f, -0.46f, 0.76f, 0.02f, 0.69f, 0.28f, 0.48f, -0.82f, 0.08f, 0.02f, 0.74f, -0.28f, 0.2f, -0.88f, -0.22f, -0.35f, -0.7f, 0.63f, -0.24f, 0.96f, 0.18f, 0.21f, 0.28f, 0.35f, -0.7f, -0.12f, -0.52f, -0.2f, -0.81f});
  const Tensor off = f32({1, 16, 4, 4}, {1.4f, -0.85f, 0.52f, -0.6f, 1.12f, 0.49f, -1.11f, 1.04f, 1.33f, 1.21f, 0.21f, -1.06f, -0.92f, 1.28f, 0.16f, -0.96f, 1.15f, 0.42f, 0.21f, -0.37f, -0.27f, -0.78f, -1.39f, 1.13f, -0.1f, 0.14f, -0.53f, 0.75f, -1.42f, -0.38f, -1.41f, -1.13f, 1.4f, 0.47f, -0.22f, 0.07f, 1.12f, -0.47f, 0.27f, 0.55f, -0.43f, 0.06f, 0.8f, 1.23f, -1.05f, 1.3f, -1.48f, 0.76f, 0.93f, -1.09f, -0.24f, 0.95f, -1.46f, 0.39f, 0.88f, 0.04f, 0.68f, -0.82f, -0.9f, -0.41f, -0.96f, -0.46f, 1.34f, 0.22f, -0.48f, -0.69f, 1.36f, -0.17f, 1.44f, 0.05f, 0.06f, 1.19f, 0.73f, 0.24f, -0.22f, 1.13f, -0.27f, 1.27f, -1.29f, -0.21f, 0.06f, 1.35f, -0.75f, 0.92f, 0.53f, 0.65f, 0.39f, 1.41f, -0.5f, -0.31f, -0.89f, -1.35f, -0.86f, 1.25f, 1.02f, -1.16f, 0.31f, -0.06f, 0.28f, 0.48f, -0.58f, 1.38f, -0.1f, 0.38f, 0.41f, -0.95f, -1.31f, -0.27f, 0.79f, 0.95f, 0.69f, -1.16f, 1.24f, 0.91f, 1.13f, 0.07f, 1.25f, -1.36f, -1.41f, -1.44f, -0.74f, -0.75f, -0.94f, 0.2f, -1.38f, 0.27f, -1.0f, 0.53f, -1.44f, -0.57f, 1.32f, 0.12f, 0.93f, 0.47f, 0.33f, -0.93f, 0.22f, -1.38f, 0.9f, 1.38f, 1.06f, -1.35f, -0.48f, -0.55f, -1.16f, 0.38f, 0.89f, -0.56f, 1.09f, 0.89f, -1.11f, 0.8f, 1.15f, -0.91f, 0.22f, 0.42f, 0.33f, -1.21f, 0.48f, 0.4f, 0.97f, 0.91f, -0.52f, 0.67f, 1.1f, 1.18f, -1.02f, -1.42f, 0.45f, -0.86f, 0.19f, 1.33f, -0.36f, -0.74f, -0.13f, 0.47f, -1.2f, -0.36f, -1.1f, 0.49f, 0.99f, -0.37f, -0.38f, 0.12f, -0.85f, -0.76f, -0.51f, -0.13f, -1.26f, 0.76f, 0.24f, -0.6f, -1.27f, 0.79f, -1.11f, -1.1f, -1.11f, -1.26f, 1.22f, -0.69f, -0.58f, 1.0f, 0.36f, -0.94f, -0.2f, 1.15f, -0.37f, 0.63f, -1.21f, 0.68f, 0.83f, 0.98f, 0.52f, -0.39f, -1.31f, 0.06f, 0.77f, -0.93f, -0.7f, 0.11f, 0.74f, 1.19f, -1.12f, -0.95f, 0.9f, 0.43f, 0.66f, 1.49f, 1.32f, 1.03f, 0.83f, -0.31f, 0.42f, -0.95f, 0.78f, 0.77f, 0.66f, -0.17f, -0.37f, -0.24f, -1.4f, 1.03f, 0.13f, -0.34f, 0.14f, 0.66f, -0.36f, 0.99f, 1.26f, -0.34f, -1.09f, 0.78f, 1.48f, -1.06f, 0.64f, 0.98f});
  const Tensor mask = f32({1, 8, 4, 4}, {0.92f, 0.12f, 0.09f, 0.99f, 0.12f, 0.18f, 0.57f, 0.45f, 0.75f, 0.19f, 0.91f, 0.22f, 0.77f, 0.07f, 0.47f, 0.03f, 0.31f, 0.31f, 0.72f, 0.46f, 0.06f, 1.0f, 0.89f, 0.92f, 0.25f, 0.39f, 0.23f, 0.12f, 0.03f, 0.5f, 0.12f, 0.18f, 0.86f, 0.48f, 0.18f, 0.67f, 0.27f, 0.53f, 0.28f, 0.52f, 0.63f, 0.54f, 0.4f, 0.79f, 0.87f, 0.18f, 0.14f, 0.11f, 0.98f, 0.94f, 0.23f, 0.97f, 0.21f, 0.51f, 0.5f, 0.91f, 0.04f, 0.32f, 0.6f, 0.07f, 0.24f, 0.47f, 0.88f, 0.76f, 0.83f, 0.76f, 0.71f, 0.85f, 0.68f, 0.74f, 0.3f, 0.17f, 0.76f, 0.17f, 0.92f, 0.6f, 0.33f, 0.94f, 0.16f, 0.51f, 0.09f, 0.97f, 0.58f, 0.8f, 0.28f, 0.8f, 0.7f, 0.64f, 0.95f, 0.43f, 0.42f, 0.69f, 0.84f, 0.34f, 0.67f, 0.21f, 0.55f, 0.77f, 0.07f, 0.73f, 0.02f, 0.96f, 0.47f, 0.41f, 0.72f, 0.52f, 0.73f, 0.08f, 0.56f, 0.56f, 0.93f, 0.04f, 0.45f, 0.63f, 0.55f, 0.07f, 0.59f, 0.22f, 0.2f, 0.88f, 0.2f, 0.45f, 0.75f, 0.71f, 0.55f, 0.81f, 0.47f, 0.62f});
  const Tensor b = f32({2}, {0.5f, -0.25f});
  Tensor y = run1("DeformConv", {{"x", x}, {"w", w}, {"off", off}, {"b", b}, {"mask", mask}}, DType::kFloat,
                  {attr_ints("pads", {1, 1, 1, 1}), attr_int("offset_group", 2)}, 19);
  ASSERT_EQ(y.shape(), (Shape{1, 2, 4, 4}));
  const std::vector<float> want1 = {-0.06470594f, 0.4074463f, 0.2363308f, 0.519865f, 0.1271634f, -0.318551f, 0.677406f, 0.6687108f, 0.6412085f, 0.6712244f, 0.4563932f, 0.5316784f, 0.5777709f, 0.2106352f, 0.5855696f, 0.4283827f, -0.7551333f, -0.2473598f, 0.1754087f, -0.24931f, 0.0980344f, 0.02046716f, -0.1659508f, -0.5207505f, -0.4562404f, 0.2258096f, 0.03898014f, -0.2774904f, -0.2664307f, -0.01679109f, 0.1151508f, -0.2112378f};
  for (size_t i = 0; i < want1.size(); ++i) EXPECT_NEAR(y.data<float>()[i], want1[i], 1e-5) << i;
  // Case 2: group 2, strides 2, dilations 2, no bias, no mask.
  const Tensor x2 = f32({1, 2, 5, 5}, {0.64f, 0.36f, 0.28f, -0.19f, 0.12f, -0.21f, 0.49f, -0.24f, -0.07f, 0.51f, 0.01f, -0.32f, 0.65f, -0.24f, 0.69f, 0.57f, -0.11f, 0.43f, -0.93f, -0.22f, 0.72f, 0.16f, 0.12f, 0.33f, 0.36f, 0.17f, -0.16f, -0.63f, -0.41f, -0.41f, -0.14f, 1.0f, -0.29f, -0.11f, -0.26f, 0.16f, 0.9f, 0.78f, -0.25f, -0.47f, 0.77f, -0.01f, 0.37f, -0.85f, 0.73f, -0.37f, -0.01f, -0.6f, -0.16f, 0.66f});
  const Tensor w2 = f32({2, 1, 2, 2}, {0.66f, -0.05f, 0.54f, -0.08f, -0.25f, 0.09f, -0.6f, -0.37f});
  const Tensor off2 = f32({1, 8, 2, 2}, {0.41f, 0.54f, -0.89f, 0.47f, 0.63f, -0.11f, -0.88f, 0.37f, -0.51f, 0.29f, -0.25f, 0.27f, -0.48f, -0.05f, 0.05f, 0.26f, -0.59f, 0.92f, -0.42f, -0.39f, -0.49f, -0.87f, -0.15f, 0.54f, 0.42f, -0.61f, -0.73f, -0.36f, 0.54f, -0.02f, 0.85f, 0.31f});
  y = run1("DeformConv", {{"x", x2}, {"w", w2}, {"off", off2}}, DType::kFloat,
           {attr_int("group", 2), attr_ints("strides", {2, 2}), attr_ints("dilations", {2, 2})}, 19);
  ASSERT_EQ(y.shape(), (Shape{1, 2, 2, 2}));
  const std::vector<float> want2 = {0.2046084f, -0.05334037f, 0.302986f, 0.07746433f, -0.06945525f, 0.1146998f, 0.1933073f, -0.02772735f};
  for (size_t i = 0; i < want2.size(); ++i) EXPECT_NEAR(y.data<float>()[i], want2[i], 1e-5) << i;
  // Zero offsets and no mask: an ordinary convolution.
  const Tensor z = f32({1, 8, 2, 2}, std::vector<float>(32, 0.0f));
  const Tensor xs = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor ws = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  y = run1("DeformConv", {{"x", xs}, {"w", ws}, {"off", z}}, DType::kFloat, {}, 19);
  EXPECT_EQ(values<float>(y), (std::vector<float>{12, 16, 24, 28}));
  // Offsets that do not cover every tap, and a bad offset_group, are errors.
  const Tensor short_off = f32({1, 6, 2, 2}, std::vector<float>(24, 0.0f));
  expect_error([&] { run1("DeformConv", {{"x", xs}, {"w", ws}, {"off", short_off}}, DType::kFloat, {}, 19); }, "offset");
  expect_error([&] { run1("DeformConv", {{"x", xs}, {"w", ws}, {"off", z}}, DType::kFloat, {attr_int("offset_group", 0)}, 19); },
               "offset_group");
}

// ---------------------------------------------------------------------------------------------
// Opset 21

TEST(Opset21, CastToAndFromInt4) {
  // Float to int4 / uint4 truncates toward zero (as the reference evaluator does for in-range
  // values); out-of-range floats are undefined in the spec and saturate in onyx.
  const Tensor x = f32({11}, {-20, -8.4f, -8.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 6.6f, 7.5f, 30});
  Tensor y = run1("Cast", {{"x", x}}, DType::kInt4, {attr_int("to", static_cast<int64_t>(DType::kInt4))}, 21);
  EXPECT_EQ(y.dtype(), DType::kInt4);
  // Unpacked, sign-extended: -8 -8 -8 -1 0 0 1 2 6 7 7.
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0xF8, 0xF8, 0xF8, 0xFF, 0x00, 0x00, 0x01, 0x02, 0x06, 0x07, 0x07}));
  y = run1("Cast", {{"x", x}}, DType::kUInt4, {attr_int("to", static_cast<int64_t>(DType::kUInt4))}, 21);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 1, 2, 6, 7, 15}));
  // Integers out of range keep their low four bits (spec: "discard higher bits and reinterpret");
  // reference evaluator: -9 -> 7, 8 -> -8, 20 -> 4.
  y = run1("Cast", {{"x", i64({5}, {-9, -8, 7, 8, 20})}}, DType::kInt4,
           {attr_int("to", static_cast<int64_t>(DType::kInt4))}, 21);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x07, 0xF8, 0x07, 0xF8, 0x04}));
  y = run1("Cast", {{"x", tensor<int32_t>({3}, {-1, 16, 17})}}, DType::kUInt4,
           {attr_int("to", static_cast<int64_t>(DType::kUInt4))}, 21);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{15, 0, 1}));
  // Back to float and int8; reference evaluator: int4 [-8, -1, 0, 7] -> [-8, -1, 0, 7].
  const Tensor q = bytes_tensor(DType::kInt4, {4}, {0xF8, 0xFF, 0x00, 0x07});
  EXPECT_EQ(values<float>(run1("Cast", {{"x", q}}, DType::kFloat, {attr_int("to", 1)}, 21)),
            (std::vector<float>{-8, -1, 0, 7}));
  EXPECT_EQ(values<int8_t>(run1("Cast", {{"x", q}}, DType::kInt8, {attr_int("to", 3)}, 21)),
            (std::vector<int8_t>{-8, -1, 0, 7}));
  const Tensor u = bytes_tensor(DType::kUInt4, {2}, {0x0F, 0x08});
  EXPECT_EQ(bytes_of(run1("Cast", {{"x", u}}, DType::kInt4, {attr_int("to", static_cast<int64_t>(DType::kInt4))}, 21)),
            (std::vector<uint8_t>{0xFF, 0xF8}));  // 15 -> -1, 8 -> -8
  EXPECT_EQ(bools(run1("Cast", {{"x", q}}, DType::kBool, {attr_int("to", 9)}, 21)),
            (std::vector<bool>{true, true, false, true}));
  // int4 to float8 and back through the value.
  EXPECT_EQ(bytes_of(run1("Cast", {{"x", q}}, DType::kFloat8E4M3FN, {attr_int("to", 17)}, 21)),
            (std::vector<uint8_t>{0xD0, 0xB8, 0x00, 0x4E}));  // -8, -1, 0, 7
  // Before opset 21 there are no 4-bit types.
  EXPECT_THROW(run1("Cast", {{"x", x}}, DType::kInt4, {attr_int("to", static_cast<int64_t>(DType::kInt4))}, 20), Error);
}

TEST(Opset21, CastLikeInt4) {
  const Tensor x = f32({3}, {-3.7f, 2.2f, 100});
  Tensor y = run1("CastLike", {{"x", x}, {"t", bytes_tensor(DType::kUInt4, {1}, {0})}}, DType::kUInt4, {}, 21);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0, 2, 15}));
  y = run1("CastLike", {{"x", bytes_tensor(DType::kInt4, {2}, {0xFD, 0x05})}, {"t", i64({1}, {0})}}, DType::kInt64, {},
           21);
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{-3, 5}));
}

TEST(Opset21, ConstantAndConstantOfShapeInt4) {
  // An int4 Constant is stored packed two per byte in the model; onyx unpacks it one per byte.
  const Tensor c = bytes_tensor(DType::kInt4, {5}, {0xF8, 0x07, 0xFF, 0x00, 0x03});
  GraphSpec g;
  g.nodes.push_back({"Constant", {}, {"c"}, {attr_tensor("value", c)}});
  g.nodes.push_back({"Identity", {"c"}, {"y"}});
  g.outputs = {{"y", DType::kInt4, {5}}};
  auto out = session_of(g, 21).run(kNoFeeds);
  EXPECT_EQ(out[0].tensor().dtype(), DType::kInt4);
  EXPECT_EQ(bytes_of(out[0].tensor()), bytes_of(c));
  // Opset 21 keeps the scalar forms too: value_int, value_ints.
  EXPECT_EQ(values<int64_t>(run1("Constant", {}, DType::kInt64, {attr_ints("value_ints", {4, -5})}, 21)),
            (std::vector<int64_t>{4, -5}));
  EXPECT_EQ(values<int64_t>(run1("Constant", {}, DType::kInt64, {attr_int("value_int", 9)}, 21)),
            (std::vector<int64_t>{9}));
  // Two value attributes are an error.
  EXPECT_THROW(run1("Constant", {}, DType::kInt64, {attr_int("value_int", 9), attr_ints("value_ints", {1})}, 21),
               Error);
  // ConstantOfShape with a uint4 value of 11.
  Tensor y = run1("ConstantOfShape", {{"s", i64({2}, {1, 3})}}, DType::kUInt4,
                  {attr_tensor("value", bytes_tensor(DType::kUInt4, {1}, {11}))}, 21);
  EXPECT_EQ(y.shape(), (Shape{1, 3}));
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{11, 11, 11}));
}

TEST(Opset21, ViewOpsAndTransposeOnInt4AndFloat8) {
  // Flatten, Squeeze, Unsqueeze, Transpose, Reshape, Identity, Shape and Size took float8 (where
  // they had not yet) and int4 / uint4 at opset 21.
  const Tensor q = bytes_tensor(DType::kInt4, {1, 2, 3}, {0xF8, 0xF9, 0xFA, 0x01, 0x02, 0x03});
  Tensor y = run1("Flatten", {{"x", q}}, DType::kInt4, {attr_int("axis", 2)}, 21);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(bytes_of(y), bytes_of(q));
  y = run1("Squeeze", {{"x", q}, {"a", i64({1}, {0}), true}}, DType::kInt4, {}, 21);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  y = run1("Unsqueeze", {{"x", q}, {"a", i64({1}, {-1}), true}}, DType::kInt4, {}, 21);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 3, 1}));
  y = run1("Reshape", {{"x", q}, {"s", i64({2}, {3, 2}), true}}, DType::kInt4, {}, 21);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  y = run1("Identity", {{"x", q}}, DType::kInt4, {}, 21);
  EXPECT_EQ(bytes_of(y), bytes_of(q));
  y = run1("Transpose", {{"x", q}}, DType::kInt4, {attr_ints("perm", {0, 2, 1})}, 21);
  EXPECT_EQ(y.shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0xF8, 0x01, 0xF9, 0x02, 0xFA, 0x03}));
  EXPECT_EQ(values<int64_t>(run1("Shape", {{"x", q}}, DType::kInt64, {attr_int("end", -1)}, 21)),
            (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(values<int64_t>(run1("Size", {{"x", q}}, DType::kInt64, {}, 21)), (std::vector<int64_t>{6}));
  const Tensor f8 = bytes_tensor(DType::kFloat8E4M3FNUZ, {2, 2}, {0x40, 0x48, 0x50, 0x58});
  y = run1("Transpose", {{"x", f8}}, DType::kFloat8E4M3FNUZ, {}, 21);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x40, 0x50, 0x48, 0x58}));
  const Tensor u4 = bytes_tensor(DType::kUInt4, {2, 1}, {9, 15});
  y = run1("Squeeze", {{"x", u4}}, DType::kUInt4, {}, 21);
  EXPECT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{9, 15}));
  // At opset 20 Transpose and Flatten have neither.
  EXPECT_THROW(run1("Transpose", {{"x", f8}}, DType::kFloat8E4M3FNUZ, {}, 20), Error);
  EXPECT_THROW(run1("Flatten", {{"x", q}}, DType::kInt4, {}, 20), Error);
}

TEST(Opset21, PadInt4AndFloat8) {
  // Constant padding with the given code (uint4 5), and edge padding of float8 data.
  const Tensor u4 = bytes_tensor(DType::kUInt4, {2}, {1, 2});
  Tensor y = run1("Pad", {{"x", u4}, {"p", i64({2}, {1, 2}), true}, {"v", bytes_tensor(DType::kUInt4, {}, {5}), true}},
                  DType::kUInt4, {}, 21);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{5, 1, 2, 5, 5}));
  // No constant: zero (code 0 in every one-byte type).
  const Tensor i4 = bytes_tensor(DType::kInt4, {2}, {0xF9, 0x03});
  y = run1("Pad", {{"x", i4}, {"p", i64({2}, {1, 1}), true}}, DType::kInt4, {}, 21);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x00, 0xF9, 0x03, 0x00}));
  const Tensor f8 = bytes_tensor(DType::kFloat8E5M2, {2, 2}, {0x3C, 0x40, 0x42, 0x44});
  y = run1("Pad", {{"x", f8}, {"p", i64({4}, {0, 1, 1, 0}), true}}, DType::kFloat8E5M2, {attr_string("mode", "edge")},
           21);
  EXPECT_EQ(y.shape(), (Shape{3, 3}));
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x3C, 0x3C, 0x40, 0x42, 0x42, 0x44, 0x42, 0x42, 0x44}));
  // uint8 edge padding at opset 21 (reference evaluator).
  y = run1("Pad", {{"x", tensor<uint8_t>({2, 2}, {1, 2, 3, 4})}, {"p", i64({4}, {1, 1, 0, 0}), true}}, DType::kUInt8,
           {attr_string("mode", "edge")}, 21);
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{1, 1, 2, 1, 1, 2, 3, 3, 4}));
  EXPECT_THROW(run1("Pad", {{"x", f8}, {"p", i64({4}, {0, 1, 1, 0}), true}}, DType::kFloat8E5M2, {}, 20), Error);
  // A constant of another type is an error.
  EXPECT_THROW(run1("Pad", {{"x", u4}, {"p", i64({2}, {1, 1}), true}, {"v", f32({}, {1}), true}}, DType::kUInt4, {}, 21), Error);
}

TEST(Opset21, GroupNormalizationScalePerChannel) {
  // Same X as at opset 18, scale [1,2,3,4] and bias [0,1,0,-1] per channel. Reference evaluator.
  const Tensor x = f32({1, 4, 2}, {1, 2, 3, 4, 5, 7, -1, 0});
  const Tensor y = run1("GroupNormalization", {{"x", x}, {"s", f32({4}, {1, 2, 3, 4})}, {"b", f32({4}, {0, 1, 0, -1})}},
                        DType::kFloat, {attr_int("num_groups", 2), attr_float("epsilon", 1e-5f)}, 21);
  expect_near(y, {-1.3416355f, -0.44721183f, 1.8944237f, 3.6832709f, 2.0180738f, 3.8119173f, -5.4846087f, -4.2887130f},
              1e-4f);
  // stash_type 1 (float) is the default and gives the same result.
  const Tensor y1 =
      run1("GroupNormalization", {{"x", x}, {"s", f32({4}, {1, 2, 3, 4})}, {"b", f32({4}, {0, 1, 0, -1})}},
           DType::kFloat, {attr_int("num_groups", 2), attr_int("stash_type", 1)}, 21);
  expect_near(y1, values<float>(y), 1e-6f);
  // Per-group scale at opset 21 is an error.
  EXPECT_THROW(run1("GroupNormalization", {{"x", x}, {"s", f32({2}, {1, 1})}, {"b", f32({2}, {0, 0})}}, DType::kFloat,
                    {attr_int("num_groups", 2)}, 21),
               Error);
}

TEST(Opset21, IfLoopScanAtOpset21) {
  // Loop at opset 21 carrying an int4 value through Identity and counting in float.
  GraphSpec body;
  body.name = "body";
  body.inputs = {
      {"i", DType::kInt64, {}}, {"c_in", DType::kBool, {}}, {"q_in", DType::kInt4, {2}}, {"y_in", DType::kFloat, {}}};
  body.outputs = {{"c_out", DType::kBool, {}}, {"q_out", DType::kInt4, {2}}, {"y_out", DType::kFloat, {}}};
  body.initializers.emplace_back("one", Tensor::scalar<float>(1));
  body.nodes.push_back({"Identity", {"c_in"}, {"c_out"}});
  body.nodes.push_back({"Identity", {"q_in"}, {"q_out"}});
  body.nodes.push_back({"Add", {"y_in", "one"}, {"y_out"}});
  GraphSpec g;
  g.inputs = {{"M", DType::kInt64, {}}, {"q", DType::kInt4, {2}}, {"y0", DType::kFloat, {}}};
  g.outputs = {{"qf", DType::kInt4, {2}}, {"y", DType::kFloat, {}}};
  g.nodes.push_back({"Loop", {"M", "", "q", "y0"}, {"qf", "y"}, {attr_graph("body", body)}});
  const Tensor q = bytes_tensor(DType::kInt4, {2}, {0xF8, 0x07});
  auto out = session_of(g, 21).run({{"M", Tensor::scalar<int64_t>(3)}, {"q", q}, {"y0", Tensor::scalar<float>(0.5f)}});
  EXPECT_EQ(bytes_of(out[0].tensor()), bytes_of(q));
  EXPECT_EQ(out[1].tensor().data<float>()[0], 3.5f);

  // If at opset 21 whose branches are uint4 Constants.
  GraphSpec then_g, else_g;
  then_g.name = "then";
  then_g.nodes.push_back({"Constant", {}, {"t"}, {attr_tensor("value", bytes_tensor(DType::kUInt4, {1}, {12}))}});
  then_g.outputs = {{"t", DType::kUInt4, {1}}};
  else_g.name = "else";
  else_g.nodes.push_back({"Constant", {}, {"e"}, {attr_tensor("value", bytes_tensor(DType::kUInt4, {1}, {3}))}});
  else_g.outputs = {{"e", DType::kUInt4, {1}}};
  GraphSpec ig;
  ig.inputs = {{"c", DType::kBool, {}}};
  ig.outputs = {{"y", DType::kUInt4, {1}}};
  ig.nodes.push_back({"If", {"c"}, {"y"}, {attr_graph("then_branch", then_g), attr_graph("else_branch", else_g)}});
  Session s = session_of(ig, 21);
  EXPECT_EQ(bytes_of(s.run({{"c", Tensor::scalar<bool>(true)}})[0].tensor()), (std::vector<uint8_t>{12}));
  EXPECT_EQ(bytes_of(s.run({{"c", Tensor::scalar<bool>(false)}})[0].tensor()), (std::vector<uint8_t>{3}));

  // Scan at opset 21: running sums of [1, 2, 3] from 10 (by hand: 11, 13, 16).
  GraphSpec sb;
  sb.name = "body";
  sb.inputs = {{"s_in", DType::kFloat, {}}, {"x_i", DType::kFloat, {}}};
  sb.outputs = {{"s_out", DType::kFloat, {}}, {"run", DType::kFloat, {}}};
  sb.nodes.push_back({"Add", {"s_in", "x_i"}, {"s_out"}});
  sb.nodes.push_back({"Identity", {"s_out"}, {"run"}});
  GraphSpec sg;
  sg.inputs = {{"init", DType::kFloat, {}}, {"xs", DType::kFloat, {3}}};
  sg.outputs = {{"sum", DType::kFloat, {}}, {"runs", DType::kFloat, {3}}};
  sg.nodes.push_back(
      {"Scan", {"init", "xs"}, {"sum", "runs"}, {attr_graph("body", sb), attr_int("num_scan_inputs", 1)}});
  out = session_of(sg, 21).run({{"init", Tensor::scalar<float>(10)}, {"xs", f32({3}, {1, 2, 3})}});
  EXPECT_EQ(out[0].tensor().data<float>()[0], 16.0f);
  EXPECT_EQ(values<float>(out[1].tensor()), (std::vector<float>{11, 13, 16}));
}

// Inputs that used to crash a kernel (a SIGFPE, a SIGSEGV, heap corruption) now give an empty
// result or an onyx::Error that names the node.
TEST(OpsetHostileInput, ZeroSizeBroadcastsGiveEmptyOutputs) {
  struct Case {
    const char* op;
    DType dt;
    std::vector<AttrSpec> attrs;
  };
  const std::vector<Case> cases = {{"PRelu", DType::kFloat, {}},  {"Max", DType::kFloat, {}},
                                   {"Min", DType::kFloat, {}},    {"Mod", DType::kInt32, {}},
                                   {"Xor", DType::kBool, {}},     {"Add", DType::kFloat, {}},
                                   {"BitShift", DType::kUInt32, {attr_string("direction", "LEFT")}}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op);
    const Tensor a(c.dt, Shape{2, 0, 3});
    Tensor b(c.dt, Shape{1, 1, 3});
    std::memset(b.raw_data(), 1, b.nbytes());  // non-zero, so Mod has no zero divisor
    const Tensor y = run1(c.op, {{"a", a}, {"b", b}}, c.dt, c.attrs, 18);
    EXPECT_EQ(y.shape(), (Shape{2, 0, 3}));
    EXPECT_EQ(y.numel(), 0);
  }
}

TEST(OpsetHostileInput, MeanVarianceNormalizationOfAScalarIsAnError) {
  expect_error([] { run1("MeanVarianceNormalization", {{"x", Tensor::scalar<float>(2)}}, DType::kFloat, {}, 18); },
               "out of range for a rank-0 input");
}

TEST(OpsetHostileInput, KernelShapeMustAgreeWithTheWeights) {
  Tensor x(DType::kFloat, Shape{1, 3, 8, 8});
  Tensor w(DType::kFloat, Shape{4, 3, 3, 3});
  Tensor wt(DType::kFloat, Shape{3, 4, 3, 3});
  for (bool init : {true, false}) {
    SCOPED_TRACE(init ? "weights as an initializer" : "weights as a graph input");
    expect_error([&] { run1("Conv", {{"x", x}, {"w", w, init}}, DType::kFloat, {attr_ints("kernel_shape", {5, 5})}, 18); },
                 "kernel_shape [5,5] is not compatible with W's shape [4,3,3,3]");
    expect_error(
        [&] { run1("ConvTranspose", {{"x", x}, {"w", wt, init}}, DType::kFloat, {attr_ints("kernel_shape", {5, 5})}, 18); },
        "kernel_shape [5,5] is not compatible with W's shape [3,4,3,3]");
  }
  // A kernel_shape that agrees is accepted: 8x8 with a 3x3 kernel gives 6x6.
  EXPECT_EQ(run1("Conv", {{"x", x}, {"w", w, true}}, DType::kFloat, {attr_ints("kernel_shape", {3, 3})}, 18).shape(),
            (Shape{1, 4, 6, 6}));
}
