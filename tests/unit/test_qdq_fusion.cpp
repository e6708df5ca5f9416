// The QDQ fusion pass (src/optimizer/qdq_fusion.cpp) and the CPU EP's half precision in float32
// (src/optimizer/half_in_float.cpp), through sessions on hand-built models.
//
// QDQ fusion: each pattern must become the expected 8-bit op (counted in Session::placement())
// and give the outputs of the same model at GraphOptimizationLevel::kBasic, which does not run the
// pass (DequantizeLinear -> the float op -> QuantizeLinear, the float path). Where every scale is
// a power of two and the float sums stay below 2^24 units, the float path is exact and rounds the
// same ties half to even as the fused op, so the outputs must be equal; elsewhere (other scales,
// the pools' divisions, the sigmoid) the two may round a value near a tie to neighbouring steps:
// within one step everywhere, and equal almost everywhere (which an off-by-one bug would not be).
//
// half_in_float: a float16 / bfloat16 region must become float32 nodes with one Cast in and one
// out, its constants converted once, and give exactly the float32 model's outputs (same weights)
// rounded once to the half type.
//
// Also com.microsoft::QGemm's inputs as ONNX Runtime reads them (a C of one value per row, a
// y_scale without y_zero_point), which the ORT-reference node tests check only where the ORT venv
// could be made.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model_builder.hpp"
#include "quant_tensors.hpp"
#include "session/session_impl.hpp"

namespace onyx::test {
namespace {

using Level = GraphOptimizationLevel;
using Feeds = std::vector<std::pair<std::string, Value>>;

// ---- data ----

/// Powers of two 2^-(base + j % 3), one per channel.
std::vector<float> pow2_scales(int64_t n, int base) {
  std::vector<float> s;
  for (int64_t j = 0; j < n; ++j) s.push_back(std::ldexp(1.0f, -(base + static_cast<int>(j % 3))));
  return s;
}

// ---- building models ----


// ---- running ----

struct Outcome {
  std::vector<Tensor> out;
  std::map<std::string, int> ops;           // op type (any domain) -> nodes in placement()
  std::vector<std::string> names;           // node names in placement()
  std::shared_ptr<const SessionImpl> impl;  // the optimised graph: impl->model->graph
  int count(const std::string& op) const {
    auto it = ops.find(op);
    return it == ops.end() ? 0 : it->second;
  }
  const Graph& graph() const { return *impl->model->graph; }
};

Outcome run(const std::string& model, Level level, const Feeds& feeds,
            std::vector<ep::ExecutionProviderDispatch> eps = {}) {
  auto b = Session::builder().with_intra_threads(1).with_optimization_level(level);
  if (!eps.empty()) b.with_execution_providers(std::move(eps));
  Session s = b.commit_from_memory(model.data(), model.size());
  Outcome r;
  for (const Value& v : s.run(feeds)) r.out.push_back(v.tensor());
  for (const auto& p : s.placement().nodes) {
    r.ops[p.op_type]++;
    r.names.push_back(p.name);
  }
  r.impl = s.impl();
  return r;
}

std::string ops_of(const Outcome& r) {
  std::string s;
  for (const auto& [op, n] : r.ops) s += op + "=" + std::to_string(n) + " ";
  return s;
}

/// For 8-bit outputs: the largest difference, in quantization steps, and how many elements differ.
struct StepDiff {
  int64_t max = 0, count = 0;
};

StepDiff step_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.shape().to_string(), b.shape().to_string());
  StepDiff d;
  if (a.numel() != b.numel()) {
    d.max = d.count = 1 << 30;
    return d;
  }
  for (int64_t i = 0; i < a.numel(); ++i) {
    const auto diff = static_cast<int64_t>(std::llround(std::fabs(a.element_as_double(i) - b.element_as_double(i))));
    d.max = std::max(d.max, diff);
    d.count += diff != 0;
  }
  return d;
}

void expect_equal(const Tensor& got, const Tensor& want, const char* what) {
  const StepDiff d = step_diff(got, want);
  EXPECT_EQ(d.count, 0) << what << ": " << d.count << " of " << want.numel() << " elements differ (up to " << d.max
                        << ")";
}

/// Within one step everywhere and equal in all but `max_fraction` of the elements.
void expect_within_one_step(const Tensor& got, const Tensor& want, double max_fraction, const char* what) {
  const StepDiff d = step_diff(got, want);
  EXPECT_LE(d.max, 1) << what;
  EXPECT_LE(static_cast<double>(d.count), max_fraction * static_cast<double>(want.numel()))
      << what << ": " << d.count << " of " << want.numel() << " elements one step apart";
}

/// The model at kAll (the pass on) and at kBasic (the float path), and the fused op counted.
struct Pair {
  Outcome fused, plain;
};

Pair run_both(const std::string& model, const Feeds& feeds) {
  return {run(model, Level::kAll, feeds), run(model, Level::kBasic, feeds)};
}

/// Every DequantizeLinear / QuantizeLinear of the group gone into one `op`.
void expect_fused(const Outcome& r, const std::string& op, int count = 1) {
  EXPECT_EQ(r.count(op), count) << ops_of(r);
  EXPECT_EQ(r.count("DequantizeLinear"), 0) << ops_of(r);
  EXPECT_EQ(r.count("QuantizeLinear"), 0) << ops_of(r);
}

// ---- QDQ convolution models ----

struct ConvCase {
  DType x_type = DType::kUInt8;  // activations (x and y)
  DType w_type = DType::kInt8;
  int x_zp = 120, y_zp = 128;
  std::vector<int> w_zps = {0};  // one (per tensor) or one per output channel
  bool per_channel = true;       // weight scales per output channel
  float xs = 0.0625f, ys = 0.125f;
  int w_scale_base = 6;  // w scales 2^-(base + j % 3)
  enum { kNoBias, kQuantizedBias, kFloatBias } bias = kQuantizedBias;
  float bias_scale_factor = 1;    // the bias DequantizeLinear's scale over x_scale * w_scale
  bool x_per_channel = false;     // x's DequantizeLinear per channel (not fusable)
  bool conv_also_read = false;    // the float convolution output is also a graph output (through Relu)
  bool depthwise = false;         // group = channels (8 in, 8 out) instead of 8 -> 12
  bool omit_zero_points = false;  // x's DQ and y's Q without their zero-point inputs (zero)
};

constexpr int64_t kC = 8, kH = 9, kW = 10;

/// x [1, 8, 9, 10] -> DQ -> Conv (3x3, pads 1, to 12 channels or depthwise; weights and bias
/// through DQ) -> Q -> y.
std::string conv_model(const ConvCase& c) {
  QuantGraph b;
  const int64_t kM = c.depthwise ? kC : 12;
  const std::string x = b.input("x", c.x_type, {1, kC, kH, kW});
  std::string xf;
  if (c.x_per_channel)
    xf = b.dq_axis(x, vec(pow2_scales(kC, 4)), zero_points(c.x_type, std::vector<int>(kC, c.x_zp)), 1);
  else if (c.omit_zero_points)
    xf = b.node("DequantizeLinear", {x, b.constant("scale", Tensor::scalar(c.xs))});
  else
    xf = b.dq(x, c.xs, c.x_zp, c.x_type);
  const bool u8w = c.w_type == DType::kUInt8;
  const int w0 = c.w_zps[0];
  const Tensor w = ints8(c.w_type, Shape{kM, c.depthwise ? 1 : kC, 3, 3}, u8w ? w0 - 30 : -30, u8w ? w0 + 30 : 30, 7);
  const std::vector<float> ws =
      c.per_channel ? pow2_scales(kM, c.w_scale_base) : std::vector<float>{std::ldexp(1.0f, -c.w_scale_base)};
  std::vector<int> wz = c.w_zps;
  if (c.per_channel && wz.size() == 1) wz.assign(kM, wz[0]);
  const std::string wq = b.constant("w", w);
  const std::string wf =
      c.per_channel ? b.dq_axis(wq, vec(ws), zero_points(c.w_type, wz), 0) : b.dq(wq, ws[0], wz[0], c.w_type);
  std::vector<std::string> ins{xf, wf};
  if (c.bias == ConvCase::kQuantizedBias) {
    std::vector<float> bs;
    for (int64_t j = 0; j < kM; ++j) bs.push_back(c.xs * ws[c.per_channel ? j : 0] * c.bias_scale_factor);
    ins.push_back(b.dq_axis(b.constant("bias", int32s(Shape{kM}, -3000, 3000, 8)), vec(bs),
                            Tensor::from_vector<int32_t>(Shape{kM}, std::vector<int32_t>(kM, 0)), 0));
  } else if (c.bias == ConvCase::kFloatBias) {
    ins.push_back(b.constant("bias", floats(Shape{kM}, -2.0f, 2.0f, 9)));
  }
  std::vector<AttrSpec> attrs{attr_ints("pads", {1, 1, 1, 1})};
  if (c.depthwise) attrs.push_back(attr_int("group", kC));
  const std::string conv = b.node("Conv", ins, attrs);
  if (c.omit_zero_points)  // (a uint8 output)
    b.output(b.node("QuantizeLinear", {conv, b.constant("scale", Tensor::scalar(c.ys))}), DType::kUInt8);
  else
    b.output(b.q(conv, c.ys, c.y_zp, c.x_type), c.x_type);
  if (c.conv_also_read) b.output(b.node("Relu", {conv}), DType::kFloat);
  return b.model();
}

Feeds conv_feeds(const ConvCase& c) {
  const bool u8 = c.x_type == DType::kUInt8;
  return {{"x", Value(ints8(c.x_type, Shape{1, kC, kH, kW}, u8 ? 0 : -128, u8 ? 255 : 127, 5))}};
}

TEST(QdqFusion, ConvBecomesQLinearConv) {
  // u8 activations, s8 weights per output channel, an int32 bias at x_scale * w_scale (what ONNX
  // Runtime's quantizer writes): every scale a power of two, so the float path is exact.
  ConvCase c;
  const Pair p = run_both(conv_model(c), conv_feeds(c));
  expect_fused(p.fused, "QLinearConv");
  EXPECT_EQ(p.fused.count("Conv"), 0);
  EXPECT_EQ(p.plain.count("QLinearConv"), 0);
  EXPECT_EQ(p.plain.count("Conv"), 1);
  expect_equal(p.fused.out[0], p.plain.out[0], "QLinearConv");
  // Most outputs are not saturated (the comparison means something).
  int64_t inside = 0;
  for (int64_t i = 0; i < p.plain.out[0].numel(); ++i)
    inside += p.plain.out[0].element_as_double(i) > 0 && p.plain.out[0].element_as_double(i) < 255;
  EXPECT_GT(inside, p.plain.out[0].numel() * 3 / 4);
}

TEST(QdqFusion, ConvVariantsFuse) {
  struct Named {
    const char* what;
    ConvCase c;
  };
  std::vector<Named> cases;
  {
    ConvCase c;
    c.bias = ConvCase::kNoBias;
    cases.push_back({"no bias", c});
  }
  {
    ConvCase c;
    c.per_channel = false;
    c.w_zps = {0};
    cases.push_back({"weights per tensor", c});
  }
  {
    ConvCase c;  // uint8 weights with nonzero zero points, per channel
    c.w_type = DType::kUInt8;
    c.w_zps = {131};
    cases.push_back({"uint8 weights, zero point 131", c});
  }
  {
    ConvCase c;  // uint8 weights with one nonzero zero point
    c.w_type = DType::kUInt8;
    c.per_channel = false;
    c.w_zps = {97};
    cases.push_back({"uint8 weights per tensor, zero point 97", c});
  }
  {
    ConvCase c;  // int8 activations
    c.x_type = DType::kInt8;
    c.x_zp = -5;
    c.y_zp = 3;
    cases.push_back({"int8 activations", c});
  }
  {
    ConvCase c;  // int8 activations and uint8 weights
    c.x_type = DType::kInt8;
    c.x_zp = 7;
    c.y_zp = -2;
    c.w_type = DType::kUInt8;
    c.w_zps = {128};
    cases.push_back({"int8 activations, uint8 weights", c});
  }
  {
    ConvCase c;
    c.depthwise = true;
    cases.push_back({"depthwise", c});
  }
  {
    ConvCase c;  // int8 activations: zero x_zero_point of int8, a uint8 y
    c.x_type = DType::kInt8;
    c.omit_zero_points = true;
    cases.push_back({"zero points omitted, int8 x", c});
  }
  for (const Named& n : cases) {
    SCOPED_TRACE(n.what);
    const Pair p = run_both(conv_model(n.c), conv_feeds(n.c));
    expect_fused(p.fused, "QLinearConv");
    expect_equal(p.fused.out[0], p.plain.out[0], n.what);
  }
}

TEST(QdqFusion, ConvWithOtherScalesIsWithinOneStep) {
  // Scales that are not powers of two: the float path rounds its products and sums, the fused op
  // does not; a value may round to the neighbouring step where it lies within float error of a tie.
  ConvCase c;
  c.xs = 0.0371f;
  c.ys = 0.173f;
  const Pair p = run_both(conv_model(c), conv_feeds(c));
  expect_fused(p.fused, "QLinearConv");
  expect_within_one_step(p.fused.out[0], p.plain.out[0], 0.01, "QLinearConv, other scales");
}

TEST(QdqFusion, BiasAtAnotherScaleIsRequantised) {
  // The bias's DequantizeLinear scale is not x_scale * w_scale (0.3 times it), or the bias is a
  // float constant: the pass requantises it to int32 at x_scale * w_scale once. The error that adds
  // (half a unit of x_scale * w_scale) is far below a step of y, so the result stays within one
  // step of the float graph; reusing the int32 values as they are would be ~10 steps off.
  for (auto kind : {ConvCase::kQuantizedBias, ConvCase::kFloatBias}) {
    ConvCase c;
    c.bias = kind;
    c.bias_scale_factor = 0.3f;
    SCOPED_TRACE(kind == ConvCase::kFloatBias ? "float bias" : "bias at 0.3 x_scale w_scale");
    const Pair p = run_both(conv_model(c), conv_feeds(c));
    expect_fused(p.fused, "QLinearConv");
    expect_within_one_step(p.fused.out[0], p.plain.out[0], 0.02, "requantised bias");
  }
}

TEST(QdqFusion, ConvNotFused) {
  for (auto bias : {ConvCase::kQuantizedBias, ConvCase::kNoBias}) {
    SCOPED_TRACE(bias == ConvCase::kNoBias ? "x per channel, no bias" : "x per channel");
    ConvCase c;
    c.x_per_channel = true;
    c.bias = bias;
    const Pair p = run_both(conv_model(c), conv_feeds(c));
    EXPECT_EQ(p.fused.count("QLinearConv"), 0) << ops_of(p.fused);
    EXPECT_EQ(p.fused.count("Conv"), 1);
    EXPECT_EQ(p.fused.count("QuantizeLinear"), 1);
    expect_equal(p.fused.out[0], p.plain.out[0], "x per channel");
  }
  {
    SCOPED_TRACE("the float convolution also read");
    ConvCase c;
    c.conv_also_read = true;
    const Pair p = run_both(conv_model(c), conv_feeds(c));
    EXPECT_EQ(p.fused.count("QLinearConv"), 0) << ops_of(p.fused);
    EXPECT_EQ(p.fused.count("QuantizeLinear"), 1);
    ASSERT_EQ(p.fused.out.size(), 2u);
    expect_equal(p.fused.out[0], p.plain.out[0], "quantized output");
    const float* a = p.fused.out[1].data<float>();
    const float* r = p.plain.out[1].data<float>();
    for (int64_t i = 0; i < p.fused.out[1].numel(); ++i) ASSERT_EQ(a[i], r[i]) << "float output at " << i;
  }
}

/// x -> DQ, read by two convolutions (each -> Q -> output); with `float_reader` also by a Relu
/// whose output is a graph output.
std::string shared_dq_model(bool float_reader) {
  QuantGraph b;
  const std::string x = b.input("x", DType::kUInt8, {1, kC, kH, kW});
  const std::string xf = b.dq(x, 0.0625f, 120, DType::kUInt8);
  for (int k = 0; k < 2; ++k) {
    const std::string wf =
        b.dq_axis(b.constant("w", ints8(DType::kInt8, Shape{12, kC, k == 0 ? 3 : 1, k == 0 ? 3 : 1}, -30, 30, 11 + k)),
                  vec(pow2_scales(12, 6)), zero_points(DType::kInt8, std::vector<int>(12, 0)), 0);
    const std::string conv =
        b.node("Conv", {xf, wf},
               {attr_ints("pads", k == 0 ? std::vector<int64_t>{1, 1, 1, 1} : std::vector<int64_t>{0, 0, 0, 0})});
    b.output(b.q(conv, 0.125f, 128, DType::kUInt8), DType::kUInt8);
  }
  if (float_reader) b.output(b.node("Relu", {xf}), DType::kFloat);
  return b.model();
}

TEST(QdqFusion, DequantizeLinearReadByTwoConvolutions) {
  const Feeds feeds = conv_feeds(ConvCase{});
  {
    SCOPED_TRACE("nothing else reads it: it goes");
    const Pair p = run_both(shared_dq_model(false), feeds);
    expect_fused(p.fused, "QLinearConv", 2);
    for (int k = 0; k < 2; ++k) expect_equal(p.fused.out[k], p.plain.out[k], "shared x");
  }
  {
    SCOPED_TRACE("a Relu reads it too: it stays for the Relu");
    const Pair p = run_both(shared_dq_model(true), feeds);
    EXPECT_EQ(p.fused.count("QLinearConv"), 2) << ops_of(p.fused);
    EXPECT_EQ(p.fused.count("DequantizeLinear"), 1) << ops_of(p.fused);
    EXPECT_EQ(p.fused.count("QuantizeLinear"), 0) << ops_of(p.fused);
    for (int k = 0; k < 2; ++k) expect_equal(p.fused.out[k], p.plain.out[k], "shared x");
    const float* a = p.fused.out[2].data<float>();
    const float* r = p.plain.out[2].data<float>();
    for (int64_t i = 0; i < p.fused.out[2].numel(); ++i) ASSERT_EQ(a[i], r[i]) << "Relu(DQ(x)) at " << i;
  }
}

// ---- products ----

TEST(QdqFusion, MatMulBecomesQLinearMatMul) {
  // A [2, 5, 24] u8 per tensor; B [24, 20] s8 per column (constant), or a u8 graph input per tensor.
  for (bool b_input : {false, true}) {
    SCOPED_TRACE(b_input ? "B a graph input" : "B constant, per column");
    QuantGraph b;
    const std::string a = b.dq(b.input("a", DType::kUInt8, {2, 5, 24}), 0.0625f, 100, DType::kUInt8);
    std::string bf;
    Feeds feeds{{"a", Value(ints8(DType::kUInt8, Shape{2, 5, 24}, 0, 255, 21))}};
    if (b_input) {
      bf = b.dq(b.input("b", DType::kUInt8, {24, 20}), 0.0078125f, 131, DType::kUInt8);
      feeds.emplace_back("b", Value(ints8(DType::kUInt8, Shape{24, 20}, 100, 160, 22)));
    } else {
      bf = b.dq_axis(b.constant("b", ints8(DType::kInt8, Shape{24, 20}, -40, 40, 23)), vec(pow2_scales(20, 6)),
                     zero_points(DType::kInt8, std::vector<int>(20, 0)), 1);
    }
    b.output(b.q(b.node("MatMul", {a, bf}), 0.25f, 128, DType::kUInt8), DType::kUInt8);
    const Pair p = run_both(b.model(), feeds);
    expect_fused(p.fused, "QLinearMatMul");
    EXPECT_EQ(p.fused.count("MatMul"), 0);
    expect_equal(p.fused.out[0], p.plain.out[0], "QLinearMatMul");
  }
}

/// A [6, 24] u8 (or [24, 6] with transA) -> DQ; B [20, 24] s8 (transB) per row -> DQ; bias int32
/// at a_scale * b_scale -> DQ; Gemm [-> Q].
std::string gemm_model(bool quantize_output, float alpha = 1.0f, bool trans_a = false) {
  QuantGraph b;
  const std::string a =
      b.dq(b.input("a", DType::kUInt8, trans_a ? std::vector<int64_t>{24, 6} : std::vector<int64_t>{6, 24}), 0.0625f,
           100, DType::kUInt8);
  const std::vector<float> ws = pow2_scales(20, 6);
  const std::string bf = b.dq_axis(b.constant("b", ints8(DType::kInt8, Shape{20, 24}, -40, 40, 31)), vec(ws),
                                   zero_points(DType::kInt8, std::vector<int>(20, 0)), 0);
  std::vector<float> cs;
  for (float s : ws) cs.push_back(0.0625f * s);
  const std::string c = b.dq_axis(b.constant("c", int32s(Shape{20}, -2000, 2000, 32)), vec(cs),
                                  Tensor::from_vector<int32_t>(Shape{20}, std::vector<int32_t>(20, 0)), 0);
  std::vector<AttrSpec> attrs{attr_int("transB", 1)};
  if (alpha != 1.0f) attrs.push_back(attr_float("alpha", alpha));
  if (trans_a) attrs.push_back(attr_int("transA", 1));
  const std::string y = b.node("Gemm", {a, bf, c}, attrs);
  if (quantize_output)
    b.output(b.q(y, 0.25f, 128, DType::kUInt8), DType::kUInt8);
  else
    b.output(y, DType::kFloat);
  return b.model();
}

TEST(QdqFusion, GemmBecomesQGemm) {
  const Feeds feeds{{"a", Value(ints8(DType::kUInt8, Shape{6, 24}, 0, 255, 33))}};
  {
    SCOPED_TRACE("quantized output");
    const Pair p = run_both(gemm_model(true), feeds);
    expect_fused(p.fused, "QGemm");
    EXPECT_EQ(p.fused.count("Gemm"), 0);
    expect_equal(p.fused.out[0], p.plain.out[0], "QGemm");
  }
  {
    SCOPED_TRACE("float output (no QuantizeLinear after the Gemm)");
    const Pair p = run_both(gemm_model(false), feeds);
    expect_fused(p.fused, "QGemm");
    ASSERT_EQ(p.fused.out[0].dtype(), DType::kFloat);
    const float* a = p.fused.out[0].data<float>();
    const float* r = p.plain.out[0].data<float>();
    for (int64_t i = 0; i < p.fused.out[0].numel(); ++i) ASSERT_EQ(a[i], r[i]) << "at " << i;  // exact sums
  }
  {
    SCOPED_TRACE("transA");
    const Pair p =
        run_both(gemm_model(true, 1.0f, true), {{"a", Value(ints8(DType::kUInt8, Shape{24, 6}, 0, 255, 34))}});
    expect_fused(p.fused, "QGemm");
    expect_equal(p.fused.out[0], p.plain.out[0], "QGemm, transA");
  }
  {
    SCOPED_TRACE("alpha 0.5: left as written");
    const Pair p = run_both(gemm_model(true, 0.5f), feeds);
    EXPECT_EQ(p.fused.count("QGemm"), 0) << ops_of(p.fused);
    EXPECT_EQ(p.fused.count("Gemm"), 1);
    expect_equal(p.fused.out[0], p.plain.out[0], "Gemm with alpha");
  }
}

// ---- elementwise, pools, Concat ----

TEST(QdqFusion, AddAndMulBecomeQLinearOps) {
  for (const char* op : {"Add", "Mul"}) {
    SCOPED_TRACE(op);
    QuantGraph b;
    const std::string a = b.dq(b.input("a", DType::kUInt8, {2, 3, 4, 5}), 0.125f, 120, DType::kUInt8);
    const std::string c = b.dq(b.input("b", DType::kUInt8, {3, 1, 5}), 0.25f, 130, DType::kUInt8);
    const bool add = std::string(op) == "Add";
    b.output(b.q(b.node(op, {a, c}), add ? 0.25f : 4.0f, 128, DType::kUInt8), DType::kUInt8);
    const Feeds feeds{{"a", Value(ints8(DType::kUInt8, Shape{2, 3, 4, 5}, 0, 255, 41))},
                      {"b", Value(ints8(DType::kUInt8, Shape{3, 1, 5}, 0, 255, 42))}};
    const Pair p = run_both(b.model(), feeds);
    expect_fused(p.fused, add ? "QLinearAdd" : "QLinearMul");
    EXPECT_EQ(p.fused.count(op), 0);
    expect_equal(p.fused.out[0], p.plain.out[0], op);
  }
  {
    SCOPED_TRACE("operands of different types: left as written");
    QuantGraph b;
    const std::string a = b.dq(b.input("a", DType::kUInt8, {4, 5}), 0.125f, 120, DType::kUInt8);
    const std::string c = b.dq(b.input("b", DType::kInt8, {4, 5}), 0.25f, 3, DType::kInt8);
    b.output(b.q(b.node("Add", {a, c}), 0.25f, 128, DType::kUInt8), DType::kUInt8);
    const Feeds feeds{{"a", Value(ints8(DType::kUInt8, Shape{4, 5}, 0, 255, 43))},
                      {"b", Value(ints8(DType::kInt8, Shape{4, 5}, -128, 127, 44))}};
    const Pair p = run_both(b.model(), feeds);
    EXPECT_EQ(p.fused.count("QLinearAdd"), 0) << ops_of(p.fused);
    EXPECT_EQ(p.fused.count("Add"), 1);
    expect_equal(p.fused.out[0], p.plain.out[0], "mixed types");
  }
}

TEST(QdqFusion, PoolsAndLookupsBecomeQLinearOps) {
  struct Op {
    const char* op;
    const char* fused;
    std::vector<AttrSpec> attrs;
    float ys;
  };
  const Op ops[] = {
      {"GlobalAveragePool", "QLinearGlobalAveragePool", {}, 0.03f},
      {"AveragePool",
       "QLinearAveragePool",
       {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1})},
       0.05f},
      {"Sigmoid", "QLinearSigmoid", {}, 1.0f / 256},
      {"LeakyRelu", "QLinearLeakyRelu", {attr_float("alpha", 0.1f)}, 0.05f},
  };
  for (const Op& o : ops) {
    SCOPED_TRACE(o.op);
    QuantGraph b;
    const std::string x = b.dq(b.input("x", DType::kUInt8, {1, 32, 11, 13}), 0.0457f, 117, DType::kUInt8);
    b.output(b.q(b.node(o.op, {x}, o.attrs), o.ys, o.fused == std::string("QLinearSigmoid") ? 0 : 125, DType::kUInt8),
             DType::kUInt8);
    const Feeds feeds{{"x", Value(ints8(DType::kUInt8, Shape{1, 32, 11, 13}, 0, 255, 51))}};
    const Pair p = run_both(b.model(), feeds);
    expect_fused(p.fused, o.fused);
    EXPECT_EQ(p.fused.count(o.op), 0);
    expect_within_one_step(p.fused.out[0], p.plain.out[0], 0.05, o.op);
  }
}

TEST(QdqFusion, ConcatBecomesQLinearConcat) {
  QuantGraph b;
  std::vector<std::string> parts;
  Feeds feeds;
  const float scales[] = {0.25f, 0.125f, 0.5f};  // the first one Y's: copied as bytes
  const int zps[] = {128, 100, 140};
  const char* const names[] = {"x0", "x1", "x2"};
  for (int k = 0; k < 3; ++k) {
    const std::string name = names[k];
    parts.push_back(b.dq(b.input(name, DType::kUInt8, {2, 3 + k, 4}), scales[k], zps[k], DType::kUInt8));
    feeds.emplace_back(name, Value(ints8(DType::kUInt8, Shape{2, 3 + k, 4}, 0, 255, 61 + k)));
  }
  b.output(b.q(b.node("Concat", parts, {attr_int("axis", 1)}), 0.25f, 128, DType::kUInt8), DType::kUInt8);
  const Pair p = run_both(b.model(), feeds);
  expect_fused(p.fused, "QLinearConcat");
  EXPECT_EQ(p.fused.count("Concat"), 0);
  expect_equal(p.fused.out[0], p.plain.out[0], "QLinearConcat");
}

// ---- data movement between a DequantizeLinear and a QuantizeLinear ----

TEST(QdqFusion, DataMovementRunsOnTheQuantizedTensor) {
  // x -> DQ -> MaxPool -> Q -> DQ -> Reshape -> Q -> DQ -> Transpose -> Q -> y, one scale and zero
  // point throughout: the three ops on the uint8 tensor, every DQ and Q gone.
  QuantGraph b;
  std::string v = b.input("x", DType::kUInt8, {1, 4, 6, 6});
  v = b.q(b.node("MaxPool", {b.dq(v, 0.1f, 128, DType::kUInt8)},
                 {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}),
          0.1f, 128, DType::kUInt8);
  v = b.q(b.node("Reshape", {b.dq(v, 0.1f, 128, DType::kUInt8),
                             b.constant("shape", Tensor::from_vector<int64_t>(Shape{2}, {4, 9}))}),
          0.1f, 128, DType::kUInt8);
  v = b.q(b.node("Transpose", {b.dq(v, 0.1f, 128, DType::kUInt8)}, {attr_ints("perm", {1, 0})}), 0.1f, 128,
          DType::kUInt8);
  b.output(v, DType::kUInt8);
  const Feeds feeds{{"x", Value(ints8(DType::kUInt8, Shape{1, 4, 6, 6}, 0, 255, 71))}};
  const Pair p = run_both(b.model(), feeds);
  EXPECT_EQ(p.fused.count("DequantizeLinear"), 0) << ops_of(p.fused);
  EXPECT_EQ(p.fused.count("QuantizeLinear"), 0) << ops_of(p.fused);
  EXPECT_EQ(p.fused.count("MaxPool"), 1) << ops_of(p.fused);
  // Each of them reads and writes uint8.
  const Graph& g = p.fused.graph();
  int moved = 0;
  for (const Node& n : g.nodes) {
    if (n.op_type != "MaxPool" && n.op_type != "Reshape" && n.op_type != "Transpose") continue;
    if (g.values[n.outputs[0]].type.elem_dtype() == DType::kUInt8) ++moved;
  }
  EXPECT_GE(moved, 3) << ops_of(p.fused);
  expect_equal(p.fused.out[0], p.plain.out[0], "data movement");
}

TEST(QdqFusion, ResizeNearestRunsOnTheQuantizedTensorLinearDoesNot) {
  // Resize in nearest mode picks input values: it runs on the uint8 tensor; in linear mode it
  // interpolates, so its DequantizeLinear / QuantizeLinear stay.
  for (const char* mode : {"nearest", "linear"}) {
    SCOPED_TRACE(mode);
    QuantGraph b;
    const std::string x = b.dq(b.input("x", DType::kUInt8, {1, 3, 5, 7}), 0.1f, 100, DType::kUInt8);
    const std::string y = b.node("Resize", {x, "", b.constant("scales", Tensor::from_vector<float>(Shape{4}, {1, 1, 2, 2}))},
                                 {attr_string("mode", mode)});
    b.output(b.q(y, 0.1f, 100, DType::kUInt8), DType::kUInt8);
    const Feeds feeds{{"x", Value(ints8(DType::kUInt8, Shape{1, 3, 5, 7}, 0, 255, 73))}};
    const Pair p = run_both(b.model(), feeds);
    const bool nearest = std::string(mode) == "nearest";
    EXPECT_EQ(p.fused.count("DequantizeLinear"), nearest ? 0 : 1) << ops_of(p.fused);
    EXPECT_EQ(p.fused.count("QuantizeLinear"), nearest ? 0 : 1) << ops_of(p.fused);
    expect_equal(p.fused.out[0], p.plain.out[0], "resize");
  }
}

TEST(QdqFusion, DataMovementBetweenDifferentParametersIsNotFused) {
  struct Params {
    const char* what;
    float s_out;
    int z_out;
  };
  for (const Params& pr : {Params{"another scale", 0.2f, 128}, Params{"another zero point", 0.1f, 127}}) {
    for (const char* op : {"MaxPool", "Reshape"}) {
      SCOPED_TRACE(std::string(op) + ", " + pr.what);
      QuantGraph b;
      const std::string x = b.dq(b.input("x", DType::kUInt8, {1, 4, 6, 6}), 0.1f, 128, DType::kUInt8);
      const std::string y = std::string(op) == "MaxPool"
                                ? b.node(op, {x}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})})
                                : b.node(op, {x, b.constant("shape", Tensor::from_vector<int64_t>(Shape{2}, {4, 36}))});
      b.output(b.q(y, pr.s_out, pr.z_out, DType::kUInt8), DType::kUInt8);
      const Feeds feeds{{"x", Value(ints8(DType::kUInt8, Shape{1, 4, 6, 6}, 0, 255, 72))}};
      const Pair p = run_both(b.model(), feeds);
      EXPECT_EQ(p.fused.count("DequantizeLinear"), 1) << ops_of(p.fused);
      EXPECT_EQ(p.fused.count("QuantizeLinear"), 1) << ops_of(p.fused);
      const Outcome written = run(b.model(), Level::kDisabled, feeds);
      expect_equal(p.fused.out[0], written.out[0], "not fused");
    }
  }
  {
    SCOPED_TRACE("per-channel parameters on both sides");
    QuantGraph b;
    const std::vector<float> s{0.1f, 0.2f, 0.3f, 0.4f};
    const std::string x = b.dq_axis(b.input("x", DType::kUInt8, {1, 4, 6, 6}), vec(s),
                                    zero_points(DType::kUInt8, {128, 120, 110, 100}), 1);
    const std::string y = b.node("MaxPool", {x}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
    b.output(b.node("QuantizeLinear",
                    {y, b.constant("s", vec(s)), b.constant("z", zero_points(DType::kUInt8, {128, 120, 110, 100}))},
                    {attr_int("axis", 1)}),
             DType::kUInt8);
    const Feeds feeds{{"x", Value(ints8(DType::kUInt8, Shape{1, 4, 6, 6}, 0, 255, 73))}};
    const Pair p = run_both(b.model(), feeds);
    EXPECT_EQ(p.fused.count("DequantizeLinear"), 1) << ops_of(p.fused);
    EXPECT_EQ(p.fused.count("QuantizeLinear"), 1) << ops_of(p.fused);
    expect_equal(p.fused.out[0], run(b.model(), Level::kDisabled, feeds).out[0], "per channel");
  }
}

// ---- dynamic quantization: DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul [-> Add] ----

struct DynCase {
  std::vector<int64_t> x_shape{4, 24};
  bool bias = true;
  bool per_column = false;
  bool swapped = false;           // each Mul and Add with its operands the other way round
  int matmuls = 1;                // MatMulIntegers sharing the DynamicQuantizeLinear
  bool last_also_output = false;  // the last MatMulInteger's int32 output is also a graph output
};

/// ONNX Runtime's dynamic quantization of MatMul(x, W) [+ bias], as its quantizer writes it.
std::string dynamic_model(const DynCase& c) {
  QuantGraph b;
  const std::string x = b.input("x", DType::kFloat, c.x_shape);
  b.node("DynamicQuantizeLinear", {x}, {}, "", "", 3);
  const std::vector<std::string> dql = b.last_outputs();
  for (int k = 0; k < c.matmuls; ++k) {
    const int64_t n = 16 + 4 * k;
    const std::string w = b.constant("w", ints8(DType::kInt8, Shape{24, n}, -127, 127, 81 + k));
    const std::string wz = c.per_column ? b.constant("wz", ints8(DType::kInt8, Shape{n}, -3, 3, 83 + k))
                                        : b.constant("wz", zero_point(DType::kInt8, 0));
    const std::string ws = c.per_column ? b.constant("ws", floats(Shape{n}, 0.002f, 0.02f, 85 + k))
                                        : b.constant("ws", Tensor::scalar(0.0123f));
    const std::string acc = b.node("MatMulInteger", {dql[0], w, dql[2], wz});
    const std::string f = b.node("Cast", {acc}, {attr_int("to", static_cast<int64_t>(DType::kFloat))});
    const std::string scales = c.swapped ? b.node("Mul", {ws, dql[1]}) : b.node("Mul", {dql[1], ws});
    std::string y = c.swapped ? b.node("Mul", {scales, f}) : b.node("Mul", {f, scales});
    if (c.bias) {
      const std::string bias = b.constant("bias", floats(Shape{n}, -1.0f, 1.0f, 87 + k));
      y = c.swapped ? b.node("Add", {bias, y}) : b.node("Add", {y, bias});
    }
    b.output(y, DType::kFloat);
    if (c.last_also_output && k == c.matmuls - 1) b.output(acc, DType::kInt32);
  }
  return b.model();
}

Feeds dynamic_feeds(const DynCase& c) { return {{"x", Value(floats(Shape(c.x_shape), -3.0f, 2.0f, 89))}}; }

/// The fused op computes what the chain computes, step by step (the same quantization of x, exact
/// integer sums, the scale product, one multiplication and one addition): equal outputs.
void expect_same_floats(const Outcome& a, const Outcome& b) {
  ASSERT_EQ(a.out.size(), b.out.size());
  for (size_t k = 0; k < a.out.size(); ++k) {
    SCOPED_TRACE("output " + std::to_string(k));
    ASSERT_EQ(a.out[k].dtype(), b.out[k].dtype());
    ASSERT_EQ(a.out[k].shape().to_string(), b.out[k].shape().to_string());
    for (int64_t i = 0; i < a.out[k].numel(); ++i)
      ASSERT_EQ(a.out[k].element_as_double(i), b.out[k].element_as_double(i)) << "at " << i;
  }
}

TEST(QdqFusion, DynamicQuantizationBecomesDynamicQuantizeMatMul) {
  struct Named {
    const char* what;
    DynCase c;
  };
  std::vector<Named> cases{{"with the bias Add", {}}};
  cases.push_back({"without the bias Add", {}});
  cases.back().c.bias = false;
  cases.push_back({"x of rank 3, per-column weight parameters", {}});
  cases.back().c.x_shape = {2, 3, 24};
  cases.back().c.per_column = true;
  cases.push_back({"operands of the Muls and the Add the other way round", {}});
  cases.back().c.swapped = true;
  for (const Named& n : cases) {
    SCOPED_TRACE(n.what);
    const Pair p = run_both(dynamic_model(n.c), dynamic_feeds(n.c));
    EXPECT_EQ(p.fused.count("DynamicQuantizeMatMul"), 1) << ops_of(p.fused);
    for (const char* gone : {"DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul", "Add"})
      EXPECT_EQ(p.fused.count(gone), 0) << gone << ": " << ops_of(p.fused);
    EXPECT_EQ(p.plain.count("MatMulInteger"), 1);
    expect_same_floats(p.fused, p.plain);
  }
}

TEST(QdqFusion, SharedDynamicQuantizeLinear) {
  {
    SCOPED_TRACE("read by two MatMulIntegers: both fuse, and it goes");
    DynCase c;
    c.matmuls = 2;
    const Pair p = run_both(dynamic_model(c), dynamic_feeds(c));
    EXPECT_EQ(p.fused.count("DynamicQuantizeMatMul"), 2) << ops_of(p.fused);
    EXPECT_EQ(p.fused.count("DynamicQuantizeLinear"), 0) << ops_of(p.fused);
    EXPECT_EQ(p.fused.count("MatMulInteger"), 0) << ops_of(p.fused);
    expect_same_floats(p.fused, p.plain);
  }
  {
    SCOPED_TRACE("the second product also a graph output: it stays, and so does the quantization");
    DynCase c;
    c.matmuls = 2;
    c.last_also_output = true;
    const Pair p = run_both(dynamic_model(c), dynamic_feeds(c));
    EXPECT_EQ(p.fused.count("DynamicQuantizeMatMul"), 1) << ops_of(p.fused);
    EXPECT_EQ(p.fused.count("DynamicQuantizeLinear"), 1) << ops_of(p.fused);
    EXPECT_EQ(p.fused.count("MatMulInteger"), 1) << ops_of(p.fused);
    expect_same_floats(p.fused, p.plain);
  }
}

// ---- com.microsoft::QGemm's inputs as ONNX Runtime reads them (the node tests' reference is
// ONNX Runtime itself, tests/conformance/make_contrib_tests.py; these run without it) ----

/// QGemm(A [3, 5] u8, B [5, 4] s8, C [3, 1]) with y_scale alone (a float Y divided by y_scale) or
/// with y_zero_point (uint8 Y); power-of-two scales, so the expected values are exact.
TEST(QGemmKernel, ColumnCAndYScaleAlone) {
  const Tensor a = ints8(DType::kUInt8, Shape{3, 5}, 0, 255, 101), b = ints8(DType::kInt8, Shape{5, 4}, -128, 127, 102);
  const Tensor c = Tensor::from_vector<int32_t>(Shape{3, 1}, {1000, -3000, 17});
  const int za = 120, zb = -3;
  const float as = 0.25f, bs = 0.0625f, ys = 8.0f;
  for (bool quantized : {false, true}) {
    SCOPED_TRACE(quantized ? "y_zero_point 100: uint8 Y" : "y_scale alone: float Y");
    QuantGraph g;
    std::vector<std::string> ins{g.input("a", DType::kUInt8, {3, 5}),
                                 g.constant("as", Tensor::scalar(as)),
                                 g.constant("az", zero_point(DType::kUInt8, za)),
                                 g.constant("b", b),
                                 g.constant("bs", Tensor::scalar(bs)),
                                 g.constant("bz", zero_point(DType::kInt8, zb)),
                                 g.constant("c", c),
                                 g.constant("ys", Tensor::scalar(ys))};
    if (quantized) ins.push_back(g.constant("yz", zero_point(DType::kUInt8, 100)));
    NodeSpec n{"QGemm", ins, {"y"}, {}, "qgemm", "com.microsoft"};
    g.g.nodes.push_back(n);
    g.output("y", quantized ? DType::kUInt8 : DType::kFloat);
    const std::string m = encode_model(g.g, 17, 8, {{"com.microsoft", 1}});
    const Outcome r = run(m, Level::kAll, {{"a", Value(a)}});
    ASSERT_EQ(r.out[0].dtype(), quantized ? DType::kUInt8 : DType::kFloat);
    ASSERT_EQ(r.out[0].shape().to_string(), Shape({3, 4}).to_string());
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        int64_t acc = c.data<int32_t>()[i];
        for (int64_t k = 0; k < 5; ++k)
          acc += (int64_t{static_cast<const uint8_t*>(a.raw_data())[i * 5 + k]} - za) *
                 (int64_t{static_cast<const int8_t*>(b.raw_data())[k * 4 + j]} - zb);
        const double y = static_cast<double>(acc) * as * bs / ys;
        const double want = quantized ? std::clamp(std::nearbyint(y) + 100, 0.0, 255.0) : y;
        EXPECT_EQ(r.out[0].element_as_double(i * 4 + j), want) << i << ", " << j;
      }
  }
}

// ---- half precision in float32 (the CPU EP's half_in_float) ----

Tensor halves(DType dt, const Shape& s, float lo, float hi, uint32_t seed) {
  Tensor t(dt, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  auto* p = static_cast<uint16_t*>(t.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = dt == DType::kFloat16 ? Float16::from_float(d(rng)) : BFloat16::from_float(d(rng));
  return t;
}

float half_value(const Tensor& t, int64_t i) {
  const uint16_t h = static_cast<const uint16_t*>(t.raw_data())[i];
  return t.dtype() == DType::kFloat16 ? Float16::to_float(h) : BFloat16::to_float(h);
}

/// A half tensor's values as float32 (exact).
Tensor widen(const Tensor& h) {
  Tensor f(DType::kFloat, h.shape());
  for (int64_t i = 0; i < h.numel(); ++i) f.data<float>()[i] = half_value(h, i);
  return f;
}

bool is_half(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

std::vector<ep::ExecutionProviderDispatch> cpu(bool half_in_float) {
  return {ep::CPU().with_half_in_float(half_in_float).build()};
}

/// x [1, 4, 8, 8] -> Conv 3x3 (pads 1, bias) -> Relu -> Conv 1x1 -> y in `dt` (float16, bfloat16
/// or float), with weights and input drawn in `half`'s precision (the float32 model gets the same
/// values).
struct HalfConvModel {
  std::string model;
  Tensor x;
};

HalfConvModel half_conv_chain(DType dt, DType half) {
  auto as = [&](const Tensor& t) { return dt == DType::kFloat ? widen(t) : t; };
  QuantGraph b;
  const std::string in = b.input("x", dt, {1, 4, 8, 8});
  const std::string c1 = b.node("Conv",
                                {in, b.constant("w1", as(halves(half, Shape{6, 4, 3, 3}, -0.5f, 0.5f, 91))),
                                 b.constant("b1", as(halves(half, Shape{6}, -0.5f, 0.5f, 92)))},
                                {attr_ints("pads", {1, 1, 1, 1})});
  const std::string r = b.node("Relu", {c1});
  b.output(b.node("Conv", {r, b.constant("w2", as(halves(half, Shape{5, 6, 1, 1}, -0.5f, 0.5f, 93)))}), dt);
  return {b.model(22), as(halves(half, Shape{1, 4, 8, 8}, -1.0f, 1.0f, 94))};
}

TEST(HalfInFloat, ConvChainRunsInFloat32) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const HalfConvModel f32 = half_conv_chain(DType::kFloat, dt), m = half_conv_chain(dt, dt);
    const Outcome ref = run(f32.model, Level::kAll, {{"x", Value(f32.x)}}, cpu(true));
    const Outcome r = run(m.model, Level::kAll, {{"x", Value(m.x)}}, cpu(true));
    // One Cast into the region, one out of it.
    EXPECT_EQ(r.count("Cast"), 2) << ops_of(r);
    // Every computing node reads and writes float32, the weights converted once into float32
    // initializers (no Cast of a constant). (The transpose optimizer may move the channels-last
    // layout's last Transpose past the final Cast: it then moves half values.)
    const Graph& g = r.graph();
    int casts_of_constants = 0;
    for (const Node& n : g.nodes) {
      if (n.op_type == "Cast") {
        casts_of_constants += g.values[n.inputs[0]].has_initializer;
        continue;
      }
      if (n.op_type == "Transpose") continue;
      for (int v : n.inputs) {
        if (v < 0) continue;
        EXPECT_FALSE(is_half(g.values[v].type.elem_dtype())) << n.label() << " reads " << g.values[v].name;
      }
      for (int v : n.outputs) {
        if (v < 0) continue;
        EXPECT_FALSE(is_half(g.values[v].type.elem_dtype())) << n.label() << " writes " << g.values[v].name;
      }
    }
    EXPECT_EQ(casts_of_constants, 0);
    // The float32 model's output rounded once to the half type: the same float32 computation.
    ASSERT_EQ(r.out[0].dtype(), dt);
    ASSERT_EQ(r.out[0].numel(), ref.out[0].numel());
    for (int64_t i = 0; i < r.out[0].numel(); ++i) {
      const float want = dt == DType::kFloat16 ? Float16::to_float(Float16::from_float(ref.out[0].data<float>()[i]))
                                               : BFloat16::to_float(BFloat16::from_float(ref.out[0].data<float>()[i]));
      ASSERT_EQ(half_value(r.out[0], i), want) << "at " << i;
    }
  }
}

TEST(HalfInFloat, OptionOffLeavesTheModelAsWritten) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const HalfConvModel f32 = half_conv_chain(DType::kFloat, dt), m = half_conv_chain(dt, dt);
    const Outcome ref = run(f32.model, Level::kAll, {{"x", Value(f32.x)}}, cpu(true));
    const Outcome r = run(m.model, Level::kAll, {{"x", Value(m.x)}}, cpu(false));
    EXPECT_EQ(r.count("Cast"), 0) << ops_of(r);
    int half_convs = 0;
    const Graph& g = r.graph();
    for (const Node& n : g.nodes)
      half_convs +=
          (n.op_type == "Conv" || n.op_type == "FusedConv") && is_half(g.values[n.outputs[0]].type.elem_dtype());
    EXPECT_EQ(half_convs, 2);
    // Rounded node by node, still close to the float32 model.
    double worst = 0, largest = 0;
    for (int64_t i = 0; i < r.out[0].numel(); ++i) {
      worst = std::max(worst, std::fabs(double(half_value(r.out[0], i)) - ref.out[0].data<float>()[i]));
      largest = std::max(largest, std::fabs(double(ref.out[0].data<float>()[i])));
    }
    EXPECT_LE(worst, (dt == DType::kFloat16 ? 4e-3 : 4e-2) * largest);
  }
}

TEST(HalfInFloat, ModelCastsStay) {
  // x (float32) -> Cast to float16 -> Relu -> Cast to float32 -> y: the model's own Casts stay
  // (they round as written); the Relu runs in float32 between two Casts of the pass.
  QuantGraph b;
  const std::string h = b.node("Cast", {b.input("x", DType::kFloat, {8})},
                               {attr_int("to", static_cast<int64_t>(DType::kFloat16))}, "model_cast_in");
  b.output(
      b.node("Cast", {b.node("Relu", {h})}, {attr_int("to", static_cast<int64_t>(DType::kFloat))}, "model_cast_out"),
      DType::kFloat);
  // Values float16 cannot hold: the model's rounding shows in the output.
  const Tensor x =
      Tensor::from_vector<float>(Shape{8}, {1.0001f, -2.0f, 3.14159f, 0.1f, 1e-5f, 65504.0f, 7.0003f, -0.3f});
  const Outcome r = run(b.model(22), Level::kAll, {{"x", Value(x)}}, cpu(true));
  EXPECT_EQ(r.count("Cast"), 4) << ops_of(r);
  EXPECT_NE(std::find(r.names.begin(), r.names.end(), "model_cast_in"), r.names.end());
  EXPECT_NE(std::find(r.names.begin(), r.names.end(), "model_cast_out"), r.names.end());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float want = std::max(0.0f, Float16::to_float(Float16::from_float(x.data<float>()[i])));
    EXPECT_EQ(r.out[0].data<float>()[i], want) << "at " << i;
  }
  EXPECT_NE(r.out[0].data<float>()[0], x.data<float>()[0]);  // (rounded)
}

/// The element type of the first `op` node's output 0 in the optimised graph.
DType output_type(const Outcome& r, const std::string& op) {
  const Graph& g = r.graph();
  for (const Node& n : g.nodes)
    if (n.op_type == op) return g.values[n.outputs[0]].type.elem_dtype();
  return DType::kUndefined;
}

TEST(HalfInFloat, DataMovementOnlyInsideARegion) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = halves(dt, Shape{2, 6}, -2.0f, 2.0f, 95);
    {
      SCOPED_TRACE("Relu -> Reshape -> Sigmoid: the Reshape joins the region");
      QuantGraph b;
      const std::string r = b.node("Relu", {b.input("x", dt, {2, 6})});
      const std::string s = b.node("Reshape", {r, b.constant("shape", Tensor::from_vector<int64_t>(Shape{2}, {3, 4}))});
      b.output(b.node("Sigmoid", {s}), dt);
      const Outcome run_ = run(b.model(22), Level::kAll, {{"x", Value(x)}}, cpu(true));
      EXPECT_EQ(run_.count("Cast"), 2) << ops_of(run_);
      EXPECT_EQ(output_type(run_, "Reshape"), DType::kFloat);
      for (int64_t i = 0; i < 12; ++i) {
        const float v = 1.0f / (1.0f + std::exp(-std::max(0.0f, half_value(x, i))));
        EXPECT_NEAR(half_value(run_.out[0], i), v, dt == DType::kFloat16 ? 1e-3 : 8e-3) << i;
      }
    }
    {
      SCOPED_TRACE("a Reshape alone: left in half precision, no Casts");
      QuantGraph b;
      b.output(b.node("Reshape",
                      {b.input("x", dt, {2, 6}), b.constant("shape", Tensor::from_vector<int64_t>(Shape{2}, {3, 4}))}),
               dt);
      const Outcome run_ = run(b.model(22), Level::kAll, {{"x", Value(x)}}, cpu(true));
      EXPECT_EQ(run_.count("Cast"), 0) << ops_of(run_);
      EXPECT_EQ(output_type(run_, "Reshape"), dt);
      for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(half_value(run_.out[0], i), half_value(x, i));
    }
  }
}

TEST(HalfInFloat, RangeAndCastLeftAsWritten) {
  // Range over float16 scalars (its output's type is what it computes) and a Cast float16 ->
  // float32 are left as written: no Casts added, Range still float16.
  QuantGraph b;
  const std::string range =
      b.node("Range", {b.input("start", DType::kFloat16, {}), b.input("limit", DType::kFloat16, {}),
                       b.input("delta", DType::kFloat16, {})});
  b.output(range, DType::kFloat16);
  b.output(b.node("Cast", {b.input("h", DType::kFloat16, {3})}, {attr_int("to", static_cast<int64_t>(DType::kFloat))}),
           DType::kFloat);
  auto h16 = [](std::vector<float> v) {
    Tensor t(DType::kFloat16, v.size() == 1 ? Shape{} : Shape{static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) static_cast<uint16_t*>(t.raw_data())[i] = Float16::from_float(v[i]);
    return t;
  };
  const Feeds feeds{{"start", Value(h16({0.5f}))},
                    {"limit", Value(h16({3.0f}))},
                    {"delta", Value(h16({0.75f}))},
                    {"h", Value(h16({1.5f, -2.25f, 0.125f}))}};
  const Outcome r = run(b.model(27), Level::kAll, feeds, cpu(true));  // (float16 Range: opset 27)
  EXPECT_EQ(r.count("Cast"), 1) << ops_of(r);
  EXPECT_EQ(r.count("Range"), 1);
  EXPECT_EQ(output_type(r, "Range"), DType::kFloat16);
  ASSERT_EQ(r.out[0].dtype(), DType::kFloat16);
  ASSERT_EQ(r.out[0].numel(), 4);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(half_value(r.out[0], i), 0.5f + 0.75f * static_cast<float>(i));
  EXPECT_EQ(r.out[1].data<float>()[1], -2.25f);
}


// ---- QLinearConv + QLinearAdd -> onyx::QLinearConvAdd (qconv_add_fusion.cpp) ----
//
// The fused op sums in the convolution's epilogue with QLinearAdd's arithmetic, so it must give
// the bytes of the two ops run one after the other (the same model at kBasic, which does not fuse).

struct ConvAddCase {
  DType dt = DType::kUInt8;  // x, y, the residual and the output
  int64_t channels = 80;     // output channels (80: a whole 64-column panel and a part of one)
  bool conv_is_b = false;    // the convolution's output is QLinearAdd's B (else A)
  bool depthwise = false;    // group = channels (channels in = out)
  bool residual_broadcasts = false;  // the residual is [1, M, 1, 1] (not fusable)
  bool conv_output_read = false;     // the convolution's output is also a graph output (not fusable)
};

constexpr int64_t kAddH = 9, kAddW = 11;

/// x [1, C, 9, 11] -> QLinearConv (3x3, pads 1, per-channel weights, bias) -> QLinearAdd with r.
std::string conv_add_model(const ConvAddCase& c) {
  QuantGraph b;
  const int64_t M = c.channels, C = c.depthwise ? M : 24;
  const bool u8 = c.dt == DType::kUInt8;
  const std::string x = b.input("x", c.dt, {1, C, kAddH, kAddW});
  const std::string r = b.input("r", c.dt, c.residual_broadcasts ? std::vector<int64_t>{1, M, 1, 1} : std::vector<int64_t>{1, M, kAddH, kAddW});
  std::vector<float> ws;
  for (int64_t j = 0; j < M; ++j) ws.push_back(0.002f + 0.0005f * static_cast<float>(j % 7));
  std::vector<AttrSpec> attrs{attr_ints("pads", {1, 1, 1, 1})};
  if (c.depthwise) attrs.push_back(attr_int("group", C));
  const std::string t = b.node("QLinearConv",
                               {x, b.scale(0.05f), b.zp(c.dt, u8 ? 120 : -5),
                                b.constant("w", ints8(DType::kInt8, Shape{M, c.depthwise ? 1 : C, 3, 3}, -60, 60, 61)),
                                b.constant("ws", vec(ws)), b.constant("wz", zero_points(DType::kInt8, std::vector<int>(M, 0))),
                                b.scale(0.11f), b.zp(c.dt, u8 ? 125 : 3), b.constant("bias", int32s(Shape{M}, -900, 900, 62))},
                               attrs);
  std::vector<std::string> ins{t, b.scale(0.11f), b.zp(c.dt, u8 ? 125 : 3), r, b.scale(0.07f), b.zp(c.dt, u8 ? 131 : -9)};
  if (c.conv_is_b) std::swap_ranges(ins.begin(), ins.begin() + 3, ins.begin() + 3);
  ins.push_back(b.scale(0.13f));
  ins.push_back(b.zp(c.dt, u8 ? 128 : 0));
  b.output(b.ms("QLinearAdd", ins), c.dt);
  if (c.conv_output_read) b.output(t, c.dt);
  return b.model(13);
}

Feeds conv_add_feeds(const ConvAddCase& c) {
  const int64_t M = c.channels, C = c.depthwise ? M : 24;
  const bool u8 = c.dt == DType::kUInt8;
  const Shape rs = c.residual_broadcasts ? Shape{1, M, 1, 1} : Shape{1, M, kAddH, kAddW};
  return {{"x", Value(ints8(c.dt, Shape{1, C, kAddH, kAddW}, u8 ? 0 : -128, u8 ? 255 : 127, 63))},
          {"r", Value(ints8(c.dt, rs, u8 ? 0 : -128, u8 ? 255 : 127, 64))}};
}

TEST(QConvAddFusion, ConvolutionAndSumBecomeOneOpWithTheSameBytes) {
  std::vector<ConvAddCase> cases;
  for (DType dt : {DType::kUInt8, DType::kInt8})
    for (bool b_side : {false, true})
      for (int64_t m : {12, 80, 272}) {  // (272: wide rows, the sum after each tile; else after each block)
        ConvAddCase c;
        c.dt = dt;
        c.conv_is_b = b_side;
        c.channels = m;
        cases.push_back(c);
      }
  ConvAddCase dw;
  dw.depthwise = true;
  dw.channels = 40;
  cases.push_back(dw);
  for (const ConvAddCase& c : cases)
    for (bool nhwc : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(c.dt)) + (c.conv_is_b ? " conv as B" : " conv as A") + " M=" +
                   std::to_string(c.channels) + (c.depthwise ? " depthwise" : "") + (nhwc ? " channels-last" : " channels-first"));
      const std::string model = conv_add_model(c);
      const Feeds feeds = conv_add_feeds(c);
      const Outcome fused = run(model, Level::kAll, feeds, {ep::CPU().with_prefer_nhwc(nhwc).build()});
      const Outcome plain = run(model, Level::kBasic, feeds, {ep::CPU().with_prefer_nhwc(nhwc).build()});
      EXPECT_EQ(fused.count("QLinearConvAdd"), 1) << ops_of(fused);
      EXPECT_EQ(fused.count("QLinearAdd"), 0) << ops_of(fused);
      EXPECT_EQ(plain.count("QLinearAdd"), 1) << ops_of(plain);
      ASSERT_EQ(fused.out.size(), 1u);
      expect_equal(fused.out[0], plain.out[0], "fused sum");
      // (The sum saturates somewhere and is not the residual alone: the data exercise it.)
      EXPECT_GT(step_diff(fused.out[0], feeds[1].second.tensor()).count, fused.out[0].numel() / 2);
    }
}

TEST(QConvAddFusion, NotFused) {
  ConvAddCase broadcast;
  broadcast.residual_broadcasts = true;
  ConvAddCase read;
  read.conv_output_read = true;
  for (const ConvAddCase& c : {broadcast, read}) {
    SCOPED_TRACE(c.residual_broadcasts ? "residual broadcasts" : "convolution output also read");
    const std::string model = conv_add_model(c);
    const Feeds feeds = conv_add_feeds(c);
    const Outcome fused = run(model, Level::kAll, feeds);
    const Outcome plain = run(model, Level::kBasic, feeds);
    EXPECT_EQ(fused.count("QLinearConvAdd"), 0) << ops_of(fused);
    EXPECT_EQ(fused.count("QLinearAdd"), 1) << ops_of(fused);
    for (size_t i = 0; i < plain.out.size(); ++i) expect_equal(fused.out[i], plain.out[i], "unfused");
  }
}

TEST(QConvAddFusion, ASumOfAnotherShapeIsAnError) {
  // onyx::QLinearConvAdd written directly, with a residual of the wrong spatial size.
  QuantGraph b;
  const std::string x = b.input("x", DType::kUInt8, {1, 4, 5, 5});
  const std::string r = b.input("r", DType::kUInt8, {1, 4, 5, 6});
  b.output(b.node("QLinearConvAdd",
                  {x, b.scale(0.05f), b.zp(DType::kUInt8, 120), b.constant("w", ints8(DType::kInt8, Shape{4, 4, 1, 1}, -9, 9, 65)),
                   b.scale(0.01f), b.zp(DType::kInt8, 0), b.scale(0.1f), b.zp(DType::kUInt8, 128), "", r, b.scale(0.1f),
                   b.zp(DType::kUInt8, 128), b.scale(0.1f), b.zp(DType::kUInt8, 128), b.scale(0.2f), b.zp(DType::kUInt8, 128)},
                  {}, "sum", "onyx"),
           DType::kUInt8);
  const Feeds feeds{{"x", Value(ints8(DType::kUInt8, Shape{1, 4, 5, 5}, 0, 255, 66))},
                    {"r", Value(ints8(DType::kUInt8, Shape{1, 4, 5, 6}, 0, 255, 67))}};
  for (bool nhwc : {true, false}) {
    SCOPED_TRACE(nhwc ? "channels-last" : "channels-first");
    try {
      run(b.model(13), Level::kAll, feeds, {ep::CPU().with_prefer_nhwc(nhwc).build()});
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("Z (input 9) has shape"), std::string::npos) << e.what();
    }
  }
}
}  // namespace
}  // namespace onyx::test
