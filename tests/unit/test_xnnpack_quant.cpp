// The XNNPACK EP's 8-bit and float16 nodes against the CPU EP:
//
// - QLinearConv, QLinearMatMul and com.microsoft QGemm run on XNNPACK's int8 / uint8 / per-channel
//   operators with the same fp32 requantisation as the CPU EP (round half to even of the int32
//   sum times x_scale * w_scale / y_scale in float32), so their outputs must be equal, whichever
//   of XNNPACK's operators a case takes (uint8 with the int8 weights shifted by 128, int8, per
//   channel with the uint8 activations flipped to int8 and back);
// - QuantizeLinear (computed by the region: x / scale, as ONNX defines it), DequantizeLinear,
//   8-bit MaxPool, QLinearSigmoid, QLinearLeakyRelu and QLinearGlobalAveragePool must be equal too;
// - QLinearAdd (XNNPACK's fixed-point arithmetic) and QLinearMul (its product rounded before the
//   zero point is added, where ONNX Runtime adds it in float) may be one step apart where a value
//   sits at a rounding tie: within one step, and equal almost everywhere;
// - a QDQ model reaches XNNPACK as 8-bit ops: the QDQ fusion asks the EP that runs the float op
//   and the QuantizeLinear, and XNNPACK claims both;
// - float16 nodes run in float32 inside a region, converted where values enter and leave it;
// - what XNNPACK cannot take is declined with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "model_builder.hpp"
#include "quant_tensors.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

bool xnnpack_usable() {
  static const bool ok = ep::XNNPACK().is_available();
  return ok;
}

#define REQUIRE_XNNPACK()                                                                      \
  do {                                                                                         \
    if (!xnnpack_usable()) GTEST_SKIP() << "xnnpack: " << ep::XNNPACK().availability().reason; \
  } while (0)

using Feeds = std::vector<std::pair<std::string, Value>>;

Tensor q8_full(DType dt, const Shape& s, uint32_t seed) {
  return dt == DType::kUInt8 ? ints8(dt, s, 0, 255, seed) : ints8(dt, s, -128, 127, seed);
}

Tensor halves(const Shape& s, float lo, float hi, uint32_t seed) {
  const Tensor f = floats(s, lo, hi, seed);
  Tensor t(DType::kFloat16, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<Float16>()[i] = Float16(f.data<float>()[i]);
  return t;
}


/// A session on the CPU EP alone or on XNNPACK then the CPU EP (whose half_in_float pass, on by
/// default, gives the CPU EP's float16 / bfloat16 nodes float32 forms, which XNNPACK may then take).
Session open(const std::string& bytes, bool xnn, GraphOptimizationLevel level = GraphOptimizationLevel::kAll,
             bool half_in_float = true) {
  SessionBuilder b;
  b.with_intra_threads(1).with_no_environment_execution_providers().with_optimization_level(level);
  if (xnn)
    b.with_execution_providers(
        {ep::XNNPACK().build().error_on_failure(), ep::CPU().with_half_in_float(half_in_float).build()});
  else
    b.with_execution_providers({ep::CPU().with_half_in_float(half_in_float).build()});
  return b.commit_from_memory(bytes.data(), bytes.size());
}

/// Op type -> number of nodes on XNNPACK, and the nodes elsewhere with XNNPACK's reason.
struct Where {
  std::map<std::string, int> on_xnnpack;
  std::vector<std::string> elsewhere;
  std::string text() const {
    std::string s;
    for (const auto& [op, n] : on_xnnpack) s += op + "=" + std::to_string(n) + " ";
    for (const auto& e : elsewhere) s += "[" + e + "] ";
    return s;
  }
};

Where where(const Session& s) {
  Where w;
  for (const auto& n : s.placement().nodes) {
    if (n.ep == "xnnpack") {
      ++w.on_xnnpack[n.op_type];
      continue;
    }
    std::string why;
    for (const auto& d : n.declined)
      if (d.ep == "xnnpack") why = d.code + ": " + d.message;
    w.elsewhere.push_back(n.op_type + " '" + n.name + "' on " + n.ep + ": " + why);
  }
  return w;
}

std::string decline_of(const Session& s, const std::string& name) {
  for (const auto& n : s.placement().nodes)
    if (n.name == name) {
      for (const auto& d : n.declined)
        if (d.ep == "xnnpack") return d.code + ": " + d.message;
      return "(not declined, runs on " + n.ep + ")";
    }
  return "(no node " + name + ")";
}

struct StepDiff {
  int64_t max = 0, count = 0;
};

StepDiff step_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.shape().to_string(), b.shape().to_string());
  StepDiff d;
  if (a.numel() != b.numel() || a.dtype() != b.dtype()) {
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

/// Runs `model` on the CPU EP and on XNNPACK (twice: the second run reuses the operators); every
/// node must run on XNNPACK (unless `all_on_xnnpack` is false); the outputs must be equal or, with
/// `one_step` > 0, within one step and equal in all but that fraction of the elements.
Where check_vs_cpu(const std::string& model, const Feeds& feeds, const std::string& what, double one_step = 0,
                   bool all_on_xnnpack = true) {
  Session cpu = open(model, false);
  Session xnn = open(model, true);
  const Where w = where(xnn);
  if (all_on_xnnpack) {
    EXPECT_TRUE(w.elsewhere.empty()) << what << ": " << w.text();
  }
  const auto want = cpu.run(feeds);
  for (int rep = 0; rep < 2; ++rep) {
    const auto got = xnn.run(feeds);
    EXPECT_EQ(got.size(), want.size()) << what;
    for (size_t k = 0; k < std::min(got.size(), want.size()); ++k) {
      const Tensor& a = got[k].tensor();
      const Tensor& b = want[k].tensor();
      const StepDiff d = step_diff(a, b);
      if (one_step == 0) {
        EXPECT_EQ(d.count, 0) << what << " output " << k << " run " << rep << ": " << d.count << " of " << b.numel()
                              << " elements differ (up to " << d.max << ")";
      } else {
        EXPECT_LE(d.max, 1) << what << " output " << k;
        EXPECT_LE(static_cast<double>(d.count), one_step * static_cast<double>(b.numel()))
            << what << " output " << k << ": " << d.count << " of " << b.numel() << " elements one step apart";
      }
    }
  }
  return w;
}

// ---- QLinearConv ----

struct QConv {
  DType x = DType::kUInt8, w = DType::kInt8, y = DType::kUInt8;
  int x_zp = 121, y_zp = 130;
  std::vector<int> w_zps = {0};  // one, or one per output channel
  bool per_channel = false;      // weight scales per output channel
  bool bias = true;
  int64_t group = 1, M = 12, C = 8;
  int kernel = 3;
  std::vector<AttrSpec> attrs = {attr_ints("pads", {1, 1, 1, 1})};
  float xs = 0.05f, ys = 0.11f;
  const char* what = "";
};

std::string qconv_model(const QConv& c, QuantGraph* out = nullptr) {
  QuantGraph b;
  const std::string x = b.input("x", c.x, {2, c.C, 11, 9});
  const int64_t cg = c.C / c.group;
  const Tensor w = q8_full(c.w, Shape{c.M, cg, c.kernel, c.kernel}, 17);
  std::vector<float> ws;
  for (int64_t j = 0; j < (c.per_channel ? c.M : 1); ++j) ws.push_back(0.002f * static_cast<float>(1 + j % 5));
  std::vector<int> wz = c.w_zps;
  if (c.per_channel && wz.size() == 1) wz.assign(static_cast<size_t>(c.M), wz[0]);
  const std::string wsv = c.per_channel ? b.constant("w_scale", vec(ws)) : b.scale(ws[0]);
  const std::string wzv = wz.size() > 1 ? b.constant("w_zp", zero_points(c.w, wz)) : b.zp(c.w, wz[0]);
  std::vector<std::string> ins{x,   b.scale(c.xs), b.zp(c.x, c.x_zp), b.constant("w", w),
                               wsv, wzv,           b.scale(c.ys),     b.zp(c.y, c.y_zp)};
  if (c.bias) ins.push_back(b.constant("b", int32s(Shape{c.M}, -20000, 20000, 18)));
  std::vector<AttrSpec> attrs = c.attrs;
  if (c.group != 1) attrs.push_back(attr_int("group", c.group));
  b.output(b.node("QLinearConv", ins, attrs, "qconv"), c.y);
  if (out) *out = b;
  return b.model();
}

TEST(XnnpackQuant, QLinearConvEqualsCpuOnEveryXnnpackOperator) {
  REQUIRE_XNNPACK();
  std::vector<QConv> cases;
  cases.push_back({.what = "u8 x, s8 weights per tensor (XNNPACK's uint8 operator, weights shifted by 128)"});
  cases.push_back({.w = DType::kUInt8, .w_zps = {97}, .what = "u8 x, u8 weights with a zero point"});
  cases.push_back(
      {.x = DType::kInt8, .y = DType::kInt8, .x_zp = -7, .y_zp = 5, .what = "s8 x, s8 weights (int8 operator)"});
  cases.push_back({.x = DType::kInt8,
                   .y = DType::kInt8,
                   .x_zp = -7,
                   .y_zp = 5,
                   .w_zps = {-3},
                   .what = "s8 x, s8 weights with a zero point (uint8 operator, x flipped)"});
  cases.push_back(
      {.per_channel = true, .what = "u8 x, s8 weights per channel (per-channel int8 operator, x and y flipped)"});
  cases.push_back({.x = DType::kInt8,
                   .y = DType::kInt8,
                   .x_zp = 3,
                   .y_zp = -9,
                   .per_channel = true,
                   .bias = false,
                   .what = "s8 x, per channel, no bias"});
  cases.push_back(
      {.w = DType::kUInt8, .w_zps = {128}, .per_channel = true, .what = "u8 weights per channel, zero point 128"});
  cases.push_back({.x = DType::kUInt8, .y = DType::kInt8, .y_zp = -20, .what = "u8 x, s8 y"});
  cases.push_back({.per_channel = true, .group = 8, .M = 8, .what = "depthwise per channel"});
  cases.push_back({.x = DType::kInt8,
                   .y = DType::kInt8,
                   .x_zp = 0,
                   .y_zp = 0,
                   .group = 8,
                   .M = 16,
                   .what = "depthwise, multiplier 2"});
  cases.push_back({.group = 2,
                   .attrs = {attr_ints("strides", {2, 2}), attr_ints("pads", {0, 1, 2, 1})},
                   .what = "groups 2, strided"});
  cases.push_back({.kernel = 1, .attrs = {}, .what = "1x1"});
  uint32_t seed = 100;
  for (const QConv& c : cases) {
    const Feeds in = {{"x", Value(q8_full(c.x, Shape{2, c.C, 11, 9}, seed++))}};
    check_vs_cpu(qconv_model(c), in, c.what);
  }
}

TEST(XnnpackQuant, QLinearConvDeclines) {
  REQUIRE_XNNPACK();
  auto reason = [](const QConv& c) { return decline_of(open(qconv_model(c), true), "qconv"); };
  EXPECT_EQ(reason({.w_zps = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, .per_channel = true}),
            "UnsupportedAttribute: per-channel int8 weights with zero point 1 (XNNPACK's per-channel convolution takes "
            "symmetric int8 weights: zero point 0, or 128 for uint8 weights)");
  EXPECT_EQ(reason({.ys = 1e-7f}),
            "UnsupportedAttribute: requantisation scale x_scale * w_scale / y_scale = 1000 (XNNPACK's range is [2^-32, "
            "256))");
  // Weights computed at run time; a 1-D convolution.
  GraphSpec g;
  g.inputs = {{"x", DType::kUInt8, {1, 2, 5, 5}}, {"w", DType::kUInt8, {3, 2, 3, 3}}, {"x1", DType::kUInt8, {1, 2, 9}}};
  g.initializers = {{"s", Tensor::scalar(0.1f)},
                    {"z", zero_point(DType::kUInt8, 0)},
                    {"w1", q8_full(DType::kUInt8, Shape{3, 2, 3}, 5)}};
  g.nodes.push_back({"QLinearConv", {"x", "s", "z", "w", "s", "z", "s", "z"}, {"y"}, {}, "dyn"});
  g.nodes.push_back({"QLinearConv", {"x1", "s", "z", "w1", "s", "z", "s", "z"}, {"y1"}, {}, "conv1d"});
  g.outputs = {any_out("y", DType::kUInt8), any_out("y1", DType::kUInt8)};
  Session s = open(encode_model(g), true);
  EXPECT_EQ(decline_of(s, "dyn"), "DynamicShape: weights must be constant");
  EXPECT_EQ(decline_of(s, "conv1d"),
            "UnsupportedAttribute: only 2-D convolution (XNNPACK's convolution2d); this one is 1-D");
}

// ---- QLinearMatMul, QGemm ----

TEST(XnnpackQuant, QLinearMatMulAndQGemmEqualCpu) {
  REQUIRE_XNNPACK();
  struct Case {
    DType a, b;
    int a_zp, y_zp;
    std::vector<int> b_zps;
    bool per_column, gemm, trans_b, bias;
    std::vector<int64_t> a_dims;
    const char* what;
  };
  const int64_t K = 37, N = 21;
  const std::vector<Case> cases = {
      {DType::kUInt8, DType::kInt8, 125, 131, {0}, false, false, false, false, {5, K}, "matmul u8 x s8"},
      {DType::kUInt8, DType::kUInt8, 125, 131, {140}, false, false, false, false, {2, 3, K}, "matmul u8 x u8, 3-D A"},
      {DType::kInt8, DType::kInt8, -4, 6, {0}, false, false, false, false, {7, K}, "matmul s8 x s8 (int8 operator)"},
      {DType::kUInt8,
       DType::kInt8,
       125,
       131,
       {0},
       true,
       false,
       false,
       false,
       {5, K},
       "matmul per column (1x1 per-channel convolution)"},
      {DType::kInt8, DType::kInt8, -4, 6, {0}, true, true, true, true, {6, K}, "QGemm s8 per column, transB, C"},
      {DType::kUInt8, DType::kInt8, 125, 131, {0}, false, true, false, true, {6, K}, "QGemm u8 x s8 with C"},
      {DType::kUInt8, DType::kUInt8, 120, 128, {77}, false, true, true, false, {3, K}, "QGemm u8 x u8, transB"},
  };
  uint32_t seed = 300;
  for (const Case& c : cases) {
    QuantGraph b;
    const std::string a = b.input("a", c.a, c.a_dims);
    std::vector<float> bs;
    for (int64_t j = 0; j < (c.per_column ? N : 1); ++j) bs.push_back(0.003f * static_cast<float>(1 + j % 4));
    const Shape bshape = c.trans_b ? Shape{N, K} : Shape{K, N};
    const std::string bw = b.constant("b", q8_full(c.b, bshape, seed++));
    const std::string bsv = c.per_column ? b.constant("b_scale", vec(bs)) : b.scale(bs[0]);
    std::vector<int> bz = c.b_zps;
    if (c.per_column) bz.assign(static_cast<size_t>(N), bz[0]);
    const std::string bzv = bz.size() > 1 ? b.constant("b_zp", zero_points(c.b, bz)) : b.zp(c.b, bz[0]);
    std::string y;
    if (c.gemm) {
      const std::string bias = c.bias ? b.constant("c", int32s(Shape{N}, -5000, 5000, seed++)) : "";
      y = b.ms("QGemm", {a, b.scale(0.04f), b.zp(c.a, c.a_zp), bw, bsv, bzv, bias, b.scale(0.09f), b.zp(c.a, c.y_zp)},
               {attr_int("transB", c.trans_b ? 1 : 0)}, "qfc");
    } else {
      y = b.node("QLinearMatMul",
                 {a, b.scale(0.04f), b.zp(c.a, c.a_zp), bw, bsv, bzv, b.scale(0.09f), b.zp(c.a, c.y_zp)}, {}, "qfc");
    }
    b.output(y, c.a);
    std::vector<int64_t> dims = c.a_dims;
    check_vs_cpu(b.model(), {{"a", Value(q8_full(c.a, Shape(dims), seed++))}}, c.what);
  }
  // A float output (no y_zero_point) is declined.
  QuantGraph b;
  const std::string a = b.input("a", DType::kUInt8, {4, K});
  b.output(b.ms("QGemm",
                {a, b.scale(0.04f), b.zp(DType::kUInt8, 3), b.constant("b", q8_full(DType::kInt8, Shape{K, N}, 9)),
                 b.scale(0.01f), b.zp(DType::kInt8, 0), "", b.scale(0.5f)},
                {}, "float_out"),
           DType::kFloat);
  EXPECT_EQ(
      decline_of(open(b.model(), true), "float_out"),
      "UnsupportedAttribute: a float output (no y_zero_point): XNNPACK's 8-bit fully connected writes 8-bit outputs");
}

// ---- elementwise and pooling ----

TEST(XnnpackQuant, QLinearBinaryWithinOneStepOfCpu) {
  REQUIRE_XNNPACK();
  for (DType t : {DType::kUInt8, DType::kInt8}) {
    const bool u8 = t == DType::kUInt8;
    for (const char* op : {"QLinearAdd", "QLinearMul"}) {
      for (bool bcast : {false, true}) {
        QuantGraph b;
        const std::string x = b.input("a", t, {2, 5, 33, 17});
        const std::string y =
            b.input("b", t, bcast ? std::vector<int64_t>{5, 1, 17} : std::vector<int64_t>{2, 5, 33, 17});
        b.output(b.ms(op,
                      {x, b.scale(0.031f), b.zp(t, u8 ? 119 : -9), y, b.scale(0.047f), b.zp(t, u8 ? 140 : 12),
                       b.scale(std::string(op) == "QLinearAdd" ? 0.06f : 0.9f), b.zp(t, u8 ? 127 : 1)},
                      {}, "bin"),
                 t);
        const Feeds in = {{"a", Value(q8_full(t, Shape{2, 5, 33, 17}, 401))},
                          {"b", Value(q8_full(t, bcast ? Shape{5, 1, 17} : Shape{2, 5, 33, 17}, 402))}};
        check_vs_cpu(b.model(), in, std::string(op) + (u8 ? " u8" : " s8") + (bcast ? " broadcast" : ""), 0.02);
      }
    }
    // With power-of-two scales (ratios 2^-1 and 2^-3 over an odd multiple of 2^-4: no real sum
    // falls on a tie) the two agree exactly.
    QuantGraph b;
    const std::string x = b.input("a", t, {3, 40, 50});
    const std::string y = b.input("b", t, {3, 40, 50});
    b.output(b.ms("QLinearAdd", {x, b.scale(0.5f), b.zp(t, u8 ? 119 : -9), y, b.scale(0.125f), b.zp(t, u8 ? 140 : 12),
                                 b.scale(3.0f / 16), b.zp(t, u8 ? 127 : 1)}),
             t);
    check_vs_cpu(b.model(),
                 {{"a", Value(q8_full(t, Shape{3, 40, 50}, 403))}, {"b", Value(q8_full(t, Shape{3, 40, 50}, 404))}},
                 std::string("QLinearAdd, no ties") + (u8 ? " u8" : " s8"));
  }
}

TEST(XnnpackQuant, QLinearUnaryPoolsAndMaxPoolEqualCpu) {
  REQUIRE_XNNPACK();
  for (DType t : {DType::kUInt8, DType::kInt8}) {
    const bool u8 = t == DType::kUInt8;
    const std::string what = u8 ? " u8" : " s8";
    const Feeds in = {{"x", Value(q8_full(t, Shape{2, 6, 9, 11}, u8 ? 501 : 502))}};
    {  // sigmoid (scale 1/256 out) and leaky ReLU (XNNPACK's is uint8: int8 flips in and out)
      QuantGraph b;
      const std::string x = b.input("x", t, {2, 6, 9, 11});
      b.output(b.ms("QLinearSigmoid",
                    {x, b.scale(0.07f), b.zp(t, u8 ? 100 : -30), b.scale(1.0f / 256), b.zp(t, u8 ? 0 : -128)}),
               t);
      b.output(
          b.ms("QLinearLeakyRelu", {x, b.scale(0.07f), b.zp(t, u8 ? 100 : -30), b.scale(0.05f), b.zp(t, u8 ? 140 : 10)},
               {attr_float("alpha", 0.3f)}),
          t);
      check_vs_cpu(b.model(), in, "sigmoid, leaky" + what);
    }
    {  // 8-bit MaxPool, then the global average pool channels-first and channels-last
      QuantGraph b;
      const std::string x = b.input("x", t, {2, 6, 9, 11});
      const std::string p =
          b.node("MaxPool", {x},
                 {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})});
      b.output(p, t);
      b.output(b.ms("QLinearGlobalAveragePool",
                    {p, b.scale(0.05f), b.zp(t, u8 ? 128 : 0), b.scale(0.02f), b.zp(t, u8 ? 110 : -5)}),
               t);
      check_vs_cpu(b.model(), in, "maxpool + global average pool" + what);
      QuantGraph c;
      const std::string xc = c.input("x", t, {2, 9, 11, 6});
      c.output(c.ms("QLinearGlobalAveragePool",
                    {xc, c.scale(0.05f), c.zp(t, u8 ? 128 : 0), c.scale(0.02f), c.zp(t, u8 ? 110 : -5)},
                    {attr_int("channels_last", 1)}),
               t);
      check_vs_cpu(c.model(), {{"x", Value(q8_full(t, Shape{2, 9, 11, 6}, 503))}},
                   "channels-last global average pool" + what);
    }
  }
}

// ---- QuantizeLinear / DequantizeLinear ----

TEST(XnnpackQuant, QuantizeAndDequantizeInsideARegionEqualCpu) {
  REQUIRE_XNNPACK();
  // float -> QuantizeLinear -> QLinearConv -> DequantizeLinear -> float. The input holds values at
  // and next to the rounding ties of x / scale: quantizing with a multiplication by 1/scale (what
  // XNNPACK's conversion does) rounds some of them to the other side.
  for (DType t : {DType::kUInt8, DType::kInt8}) {
    const bool u8 = t == DType::kUInt8;
    const float xs = 0.0234f;  // (for this scale x / xs and x * (1 / xs) round about one tie in ten differently)
    QuantGraph b;
    const std::string x = b.input("x", DType::kFloat, {1, 4, 16, 16});
    const std::string q = b.node("QuantizeLinear", {x, b.scale(xs), b.zp(t, u8 ? 128 : 0)}, {}, "quantize");
    b.output(q, t);
    const std::string c =
        b.node("QLinearConv",
               {q, b.scale(xs), b.zp(t, u8 ? 128 : 0), b.constant("w", q8_full(DType::kInt8, Shape{6, 4, 3, 3}, 7)),
                b.scale(0.004f), b.zp(DType::kInt8, 0), b.scale(0.03f), b.zp(t, u8 ? 125 : -3)},
               {attr_ints("pads", {1, 1, 1, 1})});
    b.output(b.node("DequantizeLinear", {c, b.scale(0.03f), b.zp(t, u8 ? 125 : -3)}, {}, "dequantize"), DType::kFloat);
    Tensor in(DType::kFloat, Shape{1, 4, 16, 16});
    std::mt19937 rng(11);
    for (int64_t i = 0; i < in.numel(); ++i) {
      const float tie = (static_cast<float>(std::uniform_int_distribution<int>(-140, 140)(rng)) + 0.5f) * xs;
      in.data<float>()[i] = i % 3 == 0 ? tie : std::nextafter(tie, i % 3 == 1 ? 1e9f : -1e9f);
    }
    const Where w = check_vs_cpu(b.model(), {{"x", Value(in)}}, u8 ? "u8" : "s8");
    EXPECT_EQ(w.on_xnnpack.count("QuantizeLinear"), 1u) << w.text();
    EXPECT_EQ(w.on_xnnpack.count("DequantizeLinear"), 1u) << w.text();
  }
}

// ---- QDQ models ----

/// DQ(x) -> Conv (weights and bias through DQ) -> Q, then DQ -> MaxPool -> Q (same parameters),
/// then DQ(+ DQ of a second input) -> Add -> Q: what the QDQ fusion turns into QLinearConv, the
/// 8-bit MaxPool and QLinearAdd -- for XNNPACK too, which takes the float ops and the
/// QuantizeLinear nodes as well as the fused ops.
std::string qdq_model(bool symmetric_weights) {
  QuantGraph b;
  const DType u8 = DType::kUInt8, s8 = DType::kInt8;
  const std::string x = b.input("x", u8, {1, 8, 12, 10});
  const std::string xf = b.dq(x, 0.05f, 120, u8);
  std::vector<float> ws;
  std::vector<int> wz;
  for (int j = 0; j < 6; ++j)
    ws.push_back(0.002f * static_cast<float>(1 + j % 3)), wz.push_back(symmetric_weights ? 0 : j);
  const std::string wf = b.node("DequantizeLinear",
                                {b.constant("w", q8_full(s8, Shape{6, 8, 3, 3}, 21)), b.constant("ws", vec(ws)),
                                 b.constant("wz", zero_points(s8, wz))},
                                {attr_int("axis", 0)});
  std::vector<float> bs;
  for (float s : ws) bs.push_back(0.05f * s);
  const std::string bf = b.node("DequantizeLinear",
                                {b.constant("b", int32s(Shape{6}, -3000, 3000, 22)), b.constant("bs", vec(bs)),
                                 b.constant("bz", Tensor::from_vector<int32_t>(Shape{6}, std::vector<int32_t>(6, 0)))},
                                {attr_int("axis", 0)});
  const std::string conv = b.node("Conv", {xf, wf, bf}, {attr_ints("pads", {1, 1, 1, 1})}, "conv");
  const std::string cq = b.q(conv, 0.08f, 128, u8);
  const std::string pool = b.node("MaxPool", {b.dq(cq, 0.08f, 128, u8)},
                                  {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}, "pool");
  const std::string pq = b.q(pool, 0.08f, 128, u8);
  const std::string r = b.input("r", u8, {1, 6, 6, 5});
  const std::string add = b.node("Add", {b.dq(pq, 0.08f, 128, u8), b.dq(r, 0.0297f, 100, u8)}, {}, "add");
  b.output(b.q(add, 0.1093f, 125, u8), u8);
  return b.model(17);
}

TEST(XnnpackQuant, QdqModelReachesXnnpackAsEightBitOps) {
  REQUIRE_XNNPACK();
  const Feeds in = {{"x", Value(q8_full(DType::kUInt8, Shape{1, 8, 12, 10}, 31))},
                    {"r", Value(q8_full(DType::kUInt8, Shape{1, 6, 6, 5}, 32))}};
  const Where w = check_vs_cpu(qdq_model(true), in, "QDQ conv / maxpool / add", 0.02);
  EXPECT_EQ(w.on_xnnpack, (std::map<std::string, int>{{"MaxPool", 1}, {"QLinearAdd", 1}, {"QLinearConv", 1}}))
      << w.text();
  // Per-channel weights with zero points: XNNPACK declines QLinearConv, so the group stays as
  // written and runs in float on XNNPACK (the weights' DequantizeLinear folded into them); the
  // other groups still fuse.
  Session s = open(qdq_model(false), true);
  Where w2 = where(s);
  EXPECT_TRUE(w2.elsewhere.empty()) << w2.text();
  EXPECT_EQ(w2.on_xnnpack.count("QLinearConv"), 0u) << w2.text();
  EXPECT_EQ(w2.on_xnnpack["Conv"], 1) << w2.text();
  EXPECT_EQ(w2.on_xnnpack["QLinearAdd"], 1) << w2.text();
  // The float path, against the CPU EP's float path (the model without the fusion).
  const auto want = open(qdq_model(false), false, GraphOptimizationLevel::kBasic).run(in);
  const StepDiff d = step_diff(s.run(in)[0].tensor(), want[0].tensor());
  EXPECT_LE(d.max, 1);
  EXPECT_LE(d.count, 5) << "of " << want[0].tensor().numel();
}

TEST(XnnpackQuant, OptionQuantizedFalseLeavesQdqGroupsToTheNextEp) {
  REQUIRE_XNNPACK();
  // A float Relu before the QDQ part stays on XNNPACK; the QDQ groups go to the CPU EP whole and
  // fuse there.
  QuantGraph b;
  const DType u8 = DType::kUInt8;
  const std::string f = b.node("Relu", {b.input("f", DType::kFloat, {1, 8, 12, 10})}, {}, "float_relu");
  const std::string x = b.q(f, 0.05f, 120, u8);
  const std::string conv =
      b.node("Conv",
             {b.dq(x, 0.05f, 120, u8),
              b.dq(b.constant("w", q8_full(DType::kInt8, Shape{6, 8, 3, 3}, 51)), 0.002f, 0, DType::kInt8)},
             {attr_ints("pads", {1, 1, 1, 1})}, "conv");
  b.output(b.q(conv, 0.08f, 128, u8), u8);
  const std::string m = b.model();
  SessionBuilder sb;
  sb.with_intra_threads(1).with_no_environment_execution_providers().with_execution_providers(
      {ep::XNNPACK().set("quantized", "false").build().error_on_failure()});
  Session s = sb.commit_from_memory(m.data(), m.size());
  const Where w = where(s);
  EXPECT_EQ(w.on_xnnpack, (std::map<std::string, int>{{"Relu", 1}})) << w.text();
  int qlinear = 0;
  for (const auto& n : s.placement().nodes) qlinear += n.op_type == "QLinearConv" && n.ep == "cpu";
  EXPECT_EQ(qlinear, 1) << w.text();
  EXPECT_EQ(decline_of(s, "conv").rfind("UnsupportedType: an 8-bit input (the EP option quantized=false", 0), 0u)
      << decline_of(s, "conv");
  const Feeds in = {{"f", Value(floats(Shape{1, 8, 12, 10}, -3.0f, 6.0f, 52))}};
  const StepDiff d = step_diff(s.run(in)[0].tensor(), open(m, false).run(in)[0].tensor());
  EXPECT_EQ(d.count, 0);
  // With the option on (the default), the whole model is one XNNPACK region.
  const Where all = where(open(m, true));
  EXPECT_TRUE(all.elsewhere.empty()) << all.text();
}

// ---- float16 ----

TEST(XnnpackQuant, Float16NodesRunInFloat32InsideOneRegion) {
  REQUIRE_XNNPACK();
  QuantGraph b;
  const std::string x = b.input("x", DType::kFloat16, {1, 3, 13, 11});
  const std::string c = b.node("Conv",
                               {x, b.constant("w", halves(Shape{8, 3, 3, 3}, -0.5f, 0.5f, 41)),
                                b.constant("b", halves(Shape{8}, -0.2f, 0.2f, 42))},
                               {attr_ints("pads", {1, 1, 1, 1})});
  const std::string r = b.node(
      "Clip", {c, b.constant("lo", Tensor::scalar(Float16(0.0f))), b.constant("hi", Tensor::scalar(Float16(6.0f)))});
  const std::string g = b.node("GlobalAveragePool", {r});
  const std::string f = b.node("Flatten", {g});
  b.output(b.node("Gemm", {f, b.constant("fc", halves(Shape{8, 5}, -1.0f, 1.0f, 43))}), DType::kFloat16);
  const std::string m = b.model();
  const Feeds in = {{"x", Value(halves(Shape{1, 3, 13, 11}, -1.0f, 1.0f, 44))}};
  Session xnn = open(m, true);
  const Where w = where(xnn);
  EXPECT_TRUE(w.elsewhere.empty()) << w.text();
  std::set<int> regions;
  for (const auto& n : xnn.placement().nodes) regions.insert(n.region);
  EXPECT_EQ(regions.size(), 1u);
  // The CPU EP computes the same nodes in float32 too (half_in_float), rounding once at the end:
  // equal up to the order of the float sums, at float16's precision.
  const Tensor got = xnn.run(in)[0].tensor(), want = open(m, false).run(in)[0].tensor();
  ASSERT_EQ(got.dtype(), DType::kFloat16);
  for (int64_t i = 0; i < got.numel(); ++i)
    EXPECT_NEAR(static_cast<float>(got.data<Float16>()[i]), static_cast<float>(want.data<Float16>()[i]),
                2e-3f * (1.0f + std::fabs(static_cast<float>(want.data<Float16>()[i]))))
        << i;
}

TEST(XnnpackQuant, DeclinesOtherPrecisionsWithTheReason) {
  REQUIRE_XNNPACK();
  QuantGraph b;
  const std::string h = b.input("h", DType::kBFloat16, {2, 3});
  b.output(b.node("Relu", {h}, {}, "bf16_relu"), DType::kBFloat16);
  const std::string i = b.input("i", DType::kUInt8, {2, 3});
  b.output(b.node("Add", {i, i}, {}, "u8_add"), DType::kUInt8);
  const std::string d = b.input("d", DType::kDouble, {2, 3});
  b.output(b.node("Sigmoid", {d}, {}, "f64_sigmoid"), DType::kDouble);
  const std::string x = b.input("x", DType::kUInt8, {1, 2, 4, 4});
  b.output(b.ms("QLinearSigmoid", {x, b.scale(0.1f), b.zp(DType::kUInt8, 128), b.scale(0.004f), b.zp(DType::kUInt8, 0)},
                {}, "sigmoid_scale"),
           DType::kUInt8);
  b.output(
      b.ms("QLinearSoftmax", {x, b.scale(0.1f), b.zp(DType::kUInt8, 128), b.scale(1.0f / 256), b.zp(DType::kUInt8, 0)},
           {attr_int("opset", 13)}, "softmax"),
      DType::kUInt8);
  b.output(b.node("QuantizeLinear",
                  {b.node("Relu", {b.input("f", DType::kFloat, {4})}), b.constant("qs", vec({0.1f, 0.2f, 0.3f, 0.4f})),
                   b.constant("qz", zero_points(DType::kUInt8, {0, 0, 0, 0}))},
                  {attr_int("axis", 0)}, "per_axis_q"),
           DType::kUInt8);
  // (Without the CPU EP's half_in_float, which would give the bfloat16 Relu a float32 form XNNPACK takes.)
  Session s = open(b.model(21), true, GraphOptimizationLevel::kAll, false);
  EXPECT_EQ(decline_of(s, "bf16_relu"),
            "UnsupportedType: float32 or float16 only (input 0 is bfloat16: XNNPACK has no bfloat16 operators)");
  EXPECT_EQ(decline_of(s, "u8_add"),
            "UnsupportedType: float32 or float16 only (input 0 is uint8: XNNPACK's 8-bit operators are quantized ones "
            "(QLinearConv, QLinearMatMul, QGemm, QLinearAdd, ...); it has no plain uint8 Add)");
  EXPECT_EQ(decline_of(s, "f64_sigmoid"),
            "UnsupportedType: float32 or float16 only (input 0 is double: XNNPACK has no float64 operators)");
  EXPECT_EQ(
      decline_of(s, "sigmoid_scale"),
      "UnsupportedAttribute: y_scale 0.004 and y_zero_point 0 (XNNPACK's 8-bit sigmoid writes scale 1/256 with zero "
      "point 0 for uint8)");
  EXPECT_EQ(decline_of(s, "softmax").rfind("UnsupportedOp: XNNPACK's 8-bit softmax", 0), 0u)
      << decline_of(s, "softmax");
  EXPECT_EQ(decline_of(s, "per_axis_q"),
            "UnsupportedAttribute: y scale with 4 values (XNNPACK quantizes activations per tensor)");
}

}  // namespace
