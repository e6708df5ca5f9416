// Signal, random, training and Einsum ops: behaviour the ONNX 1.12 backend test data does not
// cover. DFT-20 (axis input), lengths of every FFT path against a direct double DFT, the
// one-sided forward and inverse transforms, STFT and window details; random ops by shape, type,
// range, seed reproducibility (across runs, sessions and thread counts) and frequencies; the
// optimizers against their formulas; Einsum ellipsis broadcasting, diagonals, implicit output,
// the SGEMM path against a brute-force evaluator, and equation errors.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <map>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

/// Model bytes with the ai.onnx opset and any extra domain imports.
std::string model_bytes(const GraphSpec& g, int64_t opset, const std::vector<std::pair<std::string, int64_t>>& extra = {}) {
  ProtoWriter w;
  w.varint(1, 8);
  w.bytes(2, "onyx-tests");
  w.bytes(7, g.encode());
  ProtoWriter os;
  os.bytes(1, "");
  os.varint(2, static_cast<uint64_t>(opset));
  w.bytes(8, os.str());
  for (const auto& [d, v] : extra) {
    ProtoWriter o;
    o.bytes(1, d);
    o.varint(2, static_cast<uint64_t>(v));
    w.bytes(8, o.str());
  }
  return w.take();
}

Session session_of(const GraphSpec& g, int64_t opset, int threads = 1,
                   const std::vector<std::pair<std::string, int64_t>>& extra = {}) {
  const std::string m = model_bytes(g, opset, extra);
  return Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
}

Tensor random_tensor(const Shape& s, uint32_t seed, DType dt = DType::kFloat) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  Tensor t(dt, s);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = dist(gen);
    if (dt == DType::kFloat) t.data<float>()[i] = static_cast<float>(v);
    else t.data<double>()[i] = v;
  }
  return t;
}

template <class T>
Tensor scalar_of(T v) {
  return Tensor::scalar<T>(v);
}

// ---- DFT ----

using cd = std::complex<double>;

/// Direct DFT of x along one axis of a [outer, len, inner] view (double precision reference).
std::vector<cd> ref_dft(const std::vector<cd>& x, bool inverse) {
  const size_t n = x.size();
  std::vector<cd> y(n);
  for (size_t k = 0; k < n; ++k) {
    cd s = 0;
    for (size_t j = 0; j < n; ++j) {
      const double a = (inverse ? 2 : -2) * std::numbers::pi * static_cast<double>((k * j) % n) / static_cast<double>(n);
      s += x[j] * cd(std::cos(a), std::sin(a));
    }
    y[k] = inverse ? s / static_cast<double>(n) : s;
  }
  return y;
}

/// One DFT node; input x (declared with its full shape), optional dft_length and axis
/// initializers (axis only at opset 20).
Session dft_session(const Shape& in, std::vector<AttrSpec> attrs, int64_t opset, const int64_t* len, const int64_t* axis,
                    DType dt = DType::kDouble) {
  GraphSpec g;
  NodeSpec n{"DFT", {"x"}, {"y"}, std::move(attrs)};
  if (len || axis) n.inputs.push_back(len ? "len" : "");
  if (len) g.initializers.emplace_back("len", scalar_of<int64_t>(*len));
  if (axis) {
    n.inputs.push_back("axis");
    g.initializers.emplace_back("axis", scalar_of<int64_t>(*axis));
  }
  g.nodes.push_back(n);
  g.inputs.push_back({"x", dt, in.to_vector()});
  g.outputs.push_back(any_out("y", dt));
  return session_of(g, opset);
}

/// Checks a 1-D transform of a [len, comp] signal (batch dim 1 in front) against ref_dft.
void check_dft_1d(int64_t len, bool complex_in, bool inverse) {
  const int64_t c = complex_in ? 2 : 1;
  Tensor x = random_tensor(Shape{1, len, c}, static_cast<uint32_t>(len * 7 + c), DType::kDouble);
  Session s = dft_session(Shape{1, len, c}, {attr_int("inverse", inverse ? 1 : 0)}, 17, nullptr, nullptr);
  auto out = s.run({{"x", x}});
  const Tensor& y = out[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{1, len, 2}));
  std::vector<cd> xs(static_cast<size_t>(len));
  for (int64_t k = 0; k < len; ++k) xs[k] = cd(x.data<double>()[k * c], complex_in ? x.data<double>()[k * c + 1] : 0.0);
  const auto ref = ref_dft(xs, inverse);
  double scale = 0;
  for (const auto& v : ref) scale = std::max(scale, std::abs(v));
  for (int64_t k = 0; k < len; ++k) {
    EXPECT_NEAR(y.data<double>()[2 * k], ref[k].real(), 1e-12 * (1 + scale)) << "len " << len << " k " << k;
    EXPECT_NEAR(y.data<double>()[2 * k + 1], ref[k].imag(), 1e-12 * (1 + scale)) << "len " << len << " k " << k;
  }
}

}  // namespace

TEST(SignalOps, DftEveryFftPathMatchesDirectDft) {
  // Powers of two (radix-2), short other lengths (direct), long other lengths (Bluestein),
  // primes included; real and complex input; forward and inverse.
  for (int64_t len : {1, 2, 8, 64, 3, 10, 17, 60, 65, 97, 100, 243, 1000})
    for (bool cplx : {false, true})
      for (bool inv : {false, true}) check_dft_1d(len, cplx, inv);
}

TEST(SignalOps, Dft20AxisInput) {
  // [2, 3, 4, 1] real; axis 1 (positive) and -3 (the same dim); default (-2) is dim 2.
  Tensor x = random_tensor(Shape{2, 3, 4, 1}, 5, DType::kDouble);
  auto column = [&](int64_t b, int64_t j, int axis) {
    std::vector<cd> v;
    if (axis == 1)
      for (int64_t i = 0; i < 3; ++i) v.emplace_back(x.data<double>()[(b * 3 + i) * 4 + j], 0);
    else
      for (int64_t i = 0; i < 4; ++i) v.emplace_back(x.data<double>()[(b * 3 + j) * 4 + i], 0);
    return v;
  };
  for (int64_t axis : {int64_t(1), int64_t(-3)}) {
    Session s = dft_session(Shape{2, 3, 4, 1}, {}, 20, nullptr, &axis);
    auto out = s.run({{"x", x}});
    const Tensor& y = out[0].tensor();
    ASSERT_EQ(y.shape(), (Shape{2, 3, 4, 2}));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t j = 0; j < 4; ++j) {
        const auto ref = ref_dft(column(b, j, 1), false);
        for (int64_t k = 0; k < 3; ++k) {
          EXPECT_NEAR(y.data<double>()[((b * 3 + k) * 4 + j) * 2], ref[k].real(), 1e-12);
          EXPECT_NEAR(y.data<double>()[((b * 3 + k) * 4 + j) * 2 + 1], ref[k].imag(), 1e-12);
        }
      }
  }
  // Default axis at opset 20 is -2: the last signal dim.
  Session s = dft_session(Shape{2, 3, 4, 1}, {}, 20, nullptr, nullptr);
  auto out = s.run({{"x", x}});
  const Tensor& y = out[0].tensor();
  const auto ref = ref_dft(column(1, 2, 2), false);
  for (int64_t k = 0; k < 4; ++k) EXPECT_NEAR(y.data<double>()[((1 * 3 + 2) * 4 + k) * 2], ref[k].real(), 1e-12);

  // The axis as a graph input (known only at run time) gives the same result.
  GraphSpec g;
  g.nodes.push_back({"DFT", {"x", "", "axis"}, {"y"}, {attr_int("onesided", 1)}});
  g.inputs.push_back({"x", DType::kDouble, {2, 3, 4, 1}});
  g.inputs.push_back({"axis", DType::kInt64, {}});
  g.outputs.push_back(any_out("y", DType::kDouble));
  Session dyn = session_of(g, 20);
  auto o2 = dyn.run({{"x", x}, {"axis", scalar_of<int64_t>(1)}});
  EXPECT_EQ(o2[0].tensor().shape(), (Shape{2, 2, 4, 2}));  // onesided: 3 / 2 + 1
  auto o3 = dyn.run({{"x", x}, {"axis", scalar_of<int64_t>(2)}});
  EXPECT_EQ(o3[0].tensor().shape(), (Shape{2, 3, 3, 2}));  // 4 / 2 + 1
  EXPECT_THROW(dyn.run({{"x", x}, {"axis", scalar_of<int64_t>(-1)}}), Error);  // the complex dim
  EXPECT_THROW(dyn.run({{"x", x}, {"axis", scalar_of<int64_t>(3)}}), Error);
}

TEST(SignalOps, DftLengthPadsAndTruncates) {
  Tensor x = random_tensor(Shape{1, 6, 1}, 9, DType::kDouble);
  for (int64_t len : {int64_t(4), int64_t(9)}) {
    Session s = dft_session(Shape{1, 6, 1}, {}, 17, &len, nullptr);
    auto out = s.run({{"x", x}});
    const Tensor& y = out[0].tensor();
    ASSERT_EQ(y.shape(), (Shape{1, len, 2}));
    std::vector<cd> xs(static_cast<size_t>(len), 0);
    for (int64_t k = 0; k < std::min<int64_t>(len, 6); ++k) xs[k] = x.data<double>()[k];
    const auto ref = ref_dft(xs, false);
    for (int64_t k = 0; k < len; ++k) EXPECT_NEAR(y.data<double>()[2 * k + 1], ref[k].imag(), 1e-12);
  }
  int64_t bad = 0;
  EXPECT_THROW(dft_session(Shape{1, 6, 1}, {}, 17, &bad, nullptr), Error);
}

TEST(SignalOps, DftLengthAsGraphInput) {
  // dft_length known only at run time: the output shape is decided per run.
  GraphSpec g;
  g.nodes.push_back({"DFT", {"x", "len"}, {"y"}, {attr_int("onesided", 1)}});
  g.inputs.push_back({"x", DType::kFloat, {1, 10, 1}});
  g.inputs.push_back({"len", DType::kInt32, {}});
  g.outputs.push_back(any_out("y"));
  Session s = session_of(g, 17);
  Tensor x = random_tensor(Shape{1, 10, 1}, 21);
  for (int32_t len : {4, 10, 16}) {
    auto out = s.run({{"x", x}, {"len", scalar_of<int32_t>(len)}});
    const Tensor& y = out[0].tensor();
    ASSERT_EQ(y.shape(), (Shape{1, len / 2 + 1, 2}));
    double sum = 0;
    for (int k = 0; k < std::min(len, 10); ++k) sum += x.data<float>()[k];
    EXPECT_NEAR(y.data<float>()[0], sum, 1e-5);
  }
  EXPECT_THROW(s.run({{"x", x}, {"len", scalar_of<int32_t>(-3)}}), Error);
}

TEST(SignalOps, OnesidedForwardAndInverseRoundTrip) {
  for (int64_t n : {int64_t(8), int64_t(12), int64_t(13)}) {
    Tensor x = random_tensor(Shape{2, n, 1}, static_cast<uint32_t>(n), DType::kDouble);
    Session fwd = dft_session(Shape{2, n, 1}, {attr_int("onesided", 1)}, 17, nullptr, nullptr);
    auto spec = fwd.run({{"x", x}});
    const Tensor& X = spec[0].tensor();
    ASSERT_EQ(X.shape(), (Shape{2, n / 2 + 1, 2}));
    // IRFFT: one-sided complex in, real out of length dft_length (default 2 * (bins - 1)).
    Session inv = dft_session(Shape{2, n / 2 + 1, 2}, {attr_int("onesided", 1), attr_int("inverse", 1)}, 17, &n, nullptr);
    auto back = inv.run({{"x", X}});
    const Tensor& xr = back[0].tensor();
    ASSERT_EQ(xr.shape(), (Shape{2, n, 1}));
    for (int64_t i = 0; i < 2 * n; ++i) EXPECT_NEAR(xr.data<double>()[i], x.data<double>()[i], 1e-12) << n << " " << i;
    Session inv_default = dft_session(Shape{2, n / 2 + 1, 2}, {attr_int("onesided", 1), attr_int("inverse", 1)}, 17,
                                      nullptr, nullptr);
    auto d = inv_default.run({{"x", X}});
    EXPECT_EQ(d[0].tensor().shape(), (Shape{2, 2 * (n / 2), 1}));
  }
  // A one-sided forward DFT of a complex input, and an IRFFT of a real one, are errors.
  EXPECT_THROW(dft_session(Shape{1, 8, 2}, {attr_int("onesided", 1)}, 17, nullptr, nullptr), Error);
  EXPECT_THROW(dft_session(Shape{1, 8, 1}, {attr_int("onesided", 1), attr_int("inverse", 1)}, 17, nullptr, nullptr),
               Error);
  // Last dim must be 1 or 2; axis may not be the complex dim.
  EXPECT_THROW(dft_session(Shape{1, 8, 3}, {}, 17, nullptr, nullptr), Error);
  EXPECT_THROW(dft_session(Shape{1, 8, 1}, {attr_int("axis", -1)}, 17, nullptr, nullptr), Error);
  EXPECT_THROW(dft_session(Shape{1, 8, 1}, {attr_int("axis", 2)}, 17, nullptr, nullptr), Error);
}

TEST(SignalOps, DftFloat16AndFloat) {
  for (DType dt : {DType::kFloat, DType::kFloat16, DType::kBFloat16}) {
    Tensor x(dt, Shape{1, 5, 1});
    const float vals[5] = {1, 2, 3, 4, 5};
    for (int i = 0; i < 5; ++i) {
      if (dt == DType::kFloat) x.data<float>()[i] = vals[i];
      else if (dt == DType::kFloat16) x.data<Float16>()[i] = Float16(vals[i]);
      else x.data<BFloat16>()[i] = BFloat16(vals[i]);
    }
    Session s = dft_session(Shape{1, 5, 1}, {}, 17, nullptr, nullptr, dt);
    auto out = s.run({{"x", x}});
    const Tensor& y = out[0].tensor();
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_NEAR(y.element_as_double(0), 15.0, 0.1);
    EXPECT_NEAR(y.element_as_double(1), 0.0, 0.01);
    EXPECT_NEAR(y.element_as_double(2), -2.5, 0.05);
  }
}

TEST(SignalOps, StftShapesAndErrors) {
  GraphSpec g;
  g.nodes.push_back({"STFT", {"x", "step", "w"}, {"y"}, {attr_int("onesided", 0)}});
  g.inputs.push_back({"x", DType::kFloat, {2, 20, 1}});
  g.initializers.emplace_back("step", scalar_of<int64_t>(4));
  g.initializers.emplace_back("w", Tensor::from_vector<float>(Shape{8}, {1, 1, 1, 1, 1, 1, 1, 1}));
  g.outputs.push_back(any_out("y"));
  Session s = session_of(g, 17);
  Tensor x = random_tensor(Shape{2, 20, 1}, 3);
  auto out = s.run({{"x", x}});
  const Tensor& y = out[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{2, 4, 8, 2}));  // (20 - 8) / 4 + 1 frames, full spectrum
  // Frame 2 of batch 1, bin 0 = sum of x[1, 8:16].
  double sum = 0;
  for (int i = 8; i < 16; ++i) sum += x.data<float>()[20 + i];
  EXPECT_NEAR(y.data<float>()[((1 * 4 + 2) * 8 + 0) * 2], sum, 1e-5);
  // A window that does not match frame_length is an error.
  GraphSpec bad = g;
  bad.nodes[0].inputs.push_back("fl");
  bad.initializers.emplace_back("fl", scalar_of<int64_t>(6));
  EXPECT_THROW(session_of(bad, 17), Error);
}

TEST(SignalOps, WindowsMatchTheirFormulas) {
  struct W {
    const char* op;
    double a0, a1, a2;
  };
  for (const W w : {W{"HannWindow", 0.5, 0.5, 0}, W{"HammingWindow", 25.0 / 46, 21.0 / 46, 0},
                    W{"BlackmanWindow", 0.42, 0.5, 0.08}})
    for (int periodic : {0, 1}) {
      GraphSpec g;
      g.nodes.push_back({w.op, {"n"}, {"y"}, {attr_int("periodic", periodic), attr_int("output_datatype", 11)}});
      g.inputs.push_back({"n", DType::kInt32, {}});
      g.outputs.push_back(any_out("y", DType::kDouble));
      Session s = session_of(g, 17);
      auto out = s.run({{"n", scalar_of<int32_t>(7)}});
      const Tensor& y = out[0].tensor();
      ASSERT_EQ(y.dtype(), DType::kDouble);
      ASSERT_EQ(y.shape(), (Shape{7}));
      const double N = periodic ? 7 : 6;
      for (int i = 0; i < 7; ++i) {
        const double want = w.a0 - w.a1 * std::cos(2 * std::numbers::pi * i / N) + w.a2 * std::cos(4 * std::numbers::pi * i / N);
        EXPECT_NEAR(y.data<double>()[i], want, 1e-12) << w.op << " " << periodic << " " << i;
      }
      EXPECT_THROW(s.run({{"n", scalar_of<int32_t>(0)}}), Error);
    }
}

TEST(SignalOps, MelWeightMatrixShapeAndRows) {
  GraphSpec g;
  g.nodes.push_back({"MelWeightMatrix", {"m", "len", "rate", "lo", "hi"}, {"y"}, {attr_int("output_datatype", 11)}});
  g.initializers.emplace_back("m", scalar_of<int64_t>(8));
  g.initializers.emplace_back("len", scalar_of<int64_t>(64));
  g.initializers.emplace_back("rate", scalar_of<int64_t>(16000));
  g.initializers.emplace_back("lo", scalar_of<float>(0));
  g.initializers.emplace_back("hi", scalar_of<float>(8000));
  g.outputs.push_back(any_out("y", DType::kDouble));
  Session s = session_of(g, 17);
  auto out = s.run({});
  const Tensor& y = out[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{33, 8}));
  // Every mel bin is a triangle with a peak of 1, values in [0, 1].
  for (int m = 0; m < 8; ++m) {
    double peak = 0;
    for (int k = 0; k < 33; ++k) {
      const double v = y.data<double>()[k * 8 + m];
      EXPECT_GE(v, 0);
      EXPECT_LE(v, 1);
      peak = std::max(peak, v);
    }
    EXPECT_DOUBLE_EQ(peak, 1.0);
  }
}

// ---- Random ----

namespace {

GraphSpec random_graph(const std::string& op, std::vector<AttrSpec> attrs, DType out = DType::kFloat) {
  GraphSpec g;
  g.nodes.push_back({op, {}, {"y"}, std::move(attrs)});
  g.outputs.push_back(any_out("y", out));
  return g;
}

}  // namespace

TEST(RandomOps, UniformShapeTypeRangeAndSeed) {
  auto g = random_graph("RandomUniform", {attr_ints("shape", {64, 512}), attr_float("low", -2), attr_float("high", 3),
                                          attr_float("seed", 42), attr_int("dtype", 11)}, DType::kDouble);
  Session s1 = session_of(g, 13, 1);
  Session s4 = session_of(g, 13, 4);
  auto a = s1.run({});
  auto b = s1.run({});
  auto c = s4.run({});
  const Tensor& y = a[0].tensor();
  ASSERT_EQ(y.dtype(), DType::kDouble);
  ASSERT_EQ(y.shape(), (Shape{64, 512}));
  EXPECT_EQ(values_of(y), values_of(b[0].tensor()));  // every run
  EXPECT_EQ(values_of(y), values_of(c[0].tensor()));  // every thread count, every session
  double mean = 0;
  for (double v : values_of(y)) {
    EXPECT_GE(v, -2.0);
    EXPECT_LT(v, 3.0);
    mean += v;
  }
  mean /= static_cast<double>(y.numel());
  EXPECT_NEAR(mean, 0.5, 0.05);
  // Another seed gives other numbers.
  auto g2 = random_graph("RandomUniform", {attr_ints("shape", {64, 512}), attr_float("seed", 43)});
  auto d = session_of(g2, 13).run({});
  EXPECT_EQ(d[0].tensor().dtype(), DType::kFloat);
  EXPECT_NE(values_of(d[0].tensor())[0], values_of(y)[0]);
}

TEST(RandomOps, UnseededRunsDiffer) {
  auto g = random_graph("RandomUniform", {attr_ints("shape", {16})});
  Session s = session_of(g, 13);
  auto a = s.run({});
  auto b = s.run({});
  EXPECT_NE(values_of(a[0].tensor()), values_of(b[0].tensor()));
  auto gn = random_graph("RandomNormal", {attr_ints("shape", {16})});
  Session sn = session_of(gn, 13);
  EXPECT_NE(values_of(sn.run({})[0].tensor()), values_of(sn.run({})[0].tensor()));
}

TEST(RandomOps, UniformStaysBelowHighInHalfPrecision) {
  auto g = random_graph("RandomUniform", {attr_ints("shape", {4096}), attr_float("low", 1), attr_float("high", 2),
                                          attr_float("seed", 1), attr_int("dtype", 10)}, DType::kFloat16);
  auto out = session_of(g, 13).run({});
  const Tensor& y = out[0].tensor();
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  for (double v : values_of(y)) {
    EXPECT_GE(v, 1.0);
    EXPECT_LT(v, 2.0);
  }
}

TEST(RandomOps, NormalMomentsAndSeed) {
  auto g = random_graph("RandomNormal", {attr_ints("shape", {200000}), attr_float("mean", 1.5), attr_float("scale", 2),
                                         attr_float("seed", 7)});
  Session s1 = session_of(g, 13, 1), s3 = session_of(g, 13, 3);
  auto a = s1.run({});
  const auto v = values_of(a[0].tensor());
  EXPECT_EQ(v, values_of(s3.run({})[0].tensor()));
  double m = 0, m2 = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) m2 += (x - m) * (x - m);
  const double sd = std::sqrt(m2 / static_cast<double>(v.size()));
  EXPECT_NEAR(m, 1.5, 0.03);
  EXPECT_NEAR(sd, 2.0, 0.03);
}

TEST(RandomOps, LikeOpsTakeShapeAndType) {
  GraphSpec g;
  g.nodes.push_back({"RandomUniformLike", {"x"}, {"u"}, {attr_float("seed", 3)}});
  g.nodes.push_back({"RandomNormalLike", {"x"}, {"n"}, {attr_int("dtype", 1), attr_float("seed", 3)}});
  g.inputs.push_back({"x", DType::kDouble, {3, 5}});
  g.outputs.push_back(any_out("u", DType::kDouble));
  g.outputs.push_back(any_out("n", DType::kFloat));
  Session s = session_of(g, 13);
  auto out = s.run({{"x", Tensor(DType::kDouble, Shape{3, 5})}});
  EXPECT_EQ(out[0].tensor().dtype(), DType::kDouble);
  EXPECT_EQ(out[0].tensor().shape(), (Shape{3, 5}));
  EXPECT_EQ(out[1].tensor().dtype(), DType::kFloat);
  EXPECT_EQ(out[1].tensor().shape(), (Shape{3, 5}));
  // An integer input needs dtype.
  GraphSpec bad;
  bad.nodes.push_back({"RandomUniformLike", {"x"}, {"u"}, {}});
  bad.inputs.push_back({"x", DType::kInt64, {3}});
  bad.outputs.push_back(any_out("u"));
  EXPECT_THROW(session_of(bad, 13), Error);
}

TEST(RandomOps, BernoulliFrequenciesAndTypes) {
  const int64_t n = 100000;
  std::vector<float> p(n);
  for (int64_t i = 0; i < n; ++i) p[i] = i % 2 ? 0.3f : 0.8f;
  for (DType out : {DType::kFloat, DType::kBool, DType::kInt32}) {
    GraphSpec g;
    std::vector<AttrSpec> attrs = {attr_float("seed", 5)};
    if (out != DType::kFloat) attrs.push_back(attr_int("dtype", static_cast<int64_t>(out)));
    g.nodes.push_back({"Bernoulli", {"p"}, {"y"}, attrs});
    g.inputs.push_back({"p", DType::kFloat, {n}});
    g.outputs.push_back(any_out("y", out));
    Session s = session_of(g, 15, 2);
    auto r = s.run({{"p", Tensor::from_vector<float>(Shape{n}, p)}});
    const Tensor& y = r[0].tensor();
    ASSERT_EQ(y.dtype(), out);
    ASSERT_EQ(y.shape(), (Shape{n}));
    double odd = 0, even = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = y.element_as_double(i);
      ASSERT_TRUE(v == 0 || v == 1);
      (i % 2 ? odd : even) += v;
    }
    EXPECT_NEAR(odd / (n / 2), 0.3, 0.01);
    EXPECT_NEAR(even / (n / 2), 0.8, 0.01);
    auto r2 = session_of(g, 15, 1).run({{"p", Tensor::from_vector<float>(Shape{n}, p)}});
    EXPECT_EQ(values_of(y), values_of(r2[0].tensor()));
  }
  // p = 0 and p = 1 are exact.
  GraphSpec g;
  g.nodes.push_back({"Bernoulli", {"p"}, {"y"}, {}});
  g.inputs.push_back({"p", DType::kDouble, {4}});
  g.outputs.push_back(any_out("y", DType::kDouble));
  auto r = session_of(g, 15).run({{"p", Tensor::from_vector<double>(Shape{4}, {0, 1, 0, 1})}});
  EXPECT_EQ(values_of(r[0].tensor()), (std::vector<double>{0, 1, 0, 1}));
}

TEST(RandomOps, TrainingDropoutDropsAtTheRatioAndScalesTheRest) {
  const int64_t n = 100000;
  GraphSpec g;
  g.nodes.push_back({"Dropout", {"x", "ratio", "training"}, {"y", "mask"}, {attr_int("seed", 3)}});
  g.inputs.push_back({"x", DType::kFloat, {n}});
  g.inputs.push_back({"ratio", DType::kFloat, {}});
  g.inputs.push_back({"training", DType::kBool, {}});
  g.outputs.push_back(any_out("y"));
  g.outputs.push_back(any_out("mask", DType::kBool));
  Session s = session_of(g, 13, 2);
  std::vector<float> ones(n, 2.0f);
  auto r = s.run({{"x", Tensor::from_vector<float>(Shape{n}, ones)},
                  {"ratio", scalar_of<float>(0.3f)},
                  {"training", scalar_of<bool>(true)}});
  const Tensor& y = r[0].tensor();
  const Tensor& mask = r[1].tensor();
  ASSERT_EQ(mask.dtype(), DType::kBool);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool m = mask.data<bool>()[i];
    kept += m;
    ASSERT_FLOAT_EQ(y.data<float>()[i], m ? 2.0f / 0.7f : 0.0f) << "at " << i;
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.7, 0.01);
  // Not training: the identity, and a mask of all true.
  auto e = s.run({{"x", Tensor::from_vector<float>(Shape{n}, ones)},
                  {"ratio", scalar_of<float>(0.3f)},
                  {"training", scalar_of<bool>(false)}});
  EXPECT_EQ(values_of(e[0].tensor()), std::vector<double>(n, 2.0));
  for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(e[1].tensor().data<bool>()[i]);
  // A ratio outside [0, 1) is an error.
  EXPECT_THROW(s.run({{"x", Tensor::from_vector<float>(Shape{n}, ones)},
                      {"ratio", scalar_of<float>(1.5f)},
                      {"training", scalar_of<bool>(true)}}),
               Error);
}

TEST(RandomOps, MultinomialFrequencies) {
  const int64_t samples = 60000;
  GraphSpec g;
  g.nodes.push_back({"Multinomial", {"x"}, {"y"}, {attr_int("sample_size", samples), attr_float("seed", 11),
                                                     attr_int("dtype", 7)}});
  g.inputs.push_back({"x", DType::kFloat, {2, 3}});
  g.outputs.push_back(any_out("y", DType::kInt64));
  Session s = session_of(g, 13, 2);
  // Unnormalised log-probabilities: row 0 = log(1, 2, 7), row 1 = (0, -inf, 0).
  const float ninf = -std::numeric_limits<float>::infinity();
  Tensor x = Tensor::from_vector<float>(Shape{2, 3}, {0.0f, std::log(2.0f), std::log(7.0f), 5.0f, ninf, 5.0f});
  auto out = s.run({{"x", x}});
  const Tensor& y = out[0].tensor();
  ASSERT_EQ(y.dtype(), DType::kInt64);
  ASSERT_EQ(y.shape(), (Shape{2, samples}));
  int64_t count[2][3] = {};
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < samples; ++i) {
      const int64_t c = y.data<int64_t>()[b * samples + i];
      ASSERT_GE(c, 0);
      ASSERT_LT(c, 3);
      ++count[b][c];
    }
  EXPECT_NEAR(count[0][0] / double(samples), 0.1, 0.01);
  EXPECT_NEAR(count[0][1] / double(samples), 0.2, 0.01);
  EXPECT_NEAR(count[0][2] / double(samples), 0.7, 0.01);
  EXPECT_EQ(count[1][1], 0);  // probability 0
  EXPECT_NEAR(count[1][0] / double(samples), 0.5, 0.01);
  auto again = session_of(g, 13, 1).run({{"x", x}});
  EXPECT_EQ(values_of(y), values_of(again[0].tensor()));
  // Default dtype int32, default sample_size 1.
  GraphSpec d;
  d.nodes.push_back({"Multinomial", {"x"}, {"y"}, {}});
  d.inputs.push_back({"x", DType::kFloat, {2, 3}});
  d.outputs.push_back(any_out("y", DType::kInt32));
  auto o = session_of(d, 13).run({{"x", x}});
  EXPECT_EQ(o[0].tensor().dtype(), DType::kInt32);
  EXPECT_EQ(o[0].tensor().shape(), (Shape{2, 1}));
}

// ---- Training ----

namespace {

const char* kTraining = "ai.onnx.preview.training";

/// One optimizer node over `count` tensors of shape [3] (inputs R, T, then groups), double.
GraphSpec optimizer_graph(const std::string& op, int groups, int outs, int count, std::vector<AttrSpec> attrs,
                          DType dt = DType::kDouble) {
  GraphSpec g;
  NodeSpec n{op, {"R", "T"}, {}, std::move(attrs)};
  n.domain = kTraining;
  g.inputs.push_back({"R", DType::kDouble, {}});
  g.inputs.push_back({"T", DType::kInt64, {}});
  for (int gi = 0; gi < groups; ++gi)
    for (int i = 0; i < count; ++i) {
      const std::string nm = "in" + std::to_string(gi) + "_" + std::to_string(i);
      n.inputs.push_back(nm);
      g.inputs.push_back({nm, dt, {3}});
    }
  for (int o = 0; o < outs; ++o)
    for (int i = 0; i < count; ++i) {
      const std::string nm = "out" + std::to_string(o) + "_" + std::to_string(i);
      n.outputs.push_back(nm);
      g.outputs.push_back(any_out(nm, dt));
    }
  g.nodes.push_back(n);
  return g;
}

/// Element k of input group gi, tensor i (state tensors, groups 2 and 3, are non-negative).
double in_value(int gi, int i, int k) {
  const double v[3] = {0.5 + gi + i, -1.0 + 0.25 * gi, 2.0 - i};
  return gi >= 2 ? std::fabs(v[k]) : v[k];
}

std::vector<std::pair<std::string, Value>> optimizer_inputs(int groups, int count, double R, int64_t T) {
  std::vector<std::pair<std::string, Value>> in = {{"R", scalar_of<double>(R)}, {"T", scalar_of<int64_t>(T)}};
  for (int gi = 0; gi < groups; ++gi)
    for (int i = 0; i < count; ++i)
      in.emplace_back("in" + std::to_string(gi) + "_" + std::to_string(i),
                      Tensor::from_vector<double>(Shape{3}, {in_value(gi, i, 0), in_value(gi, i, 1), in_value(gi, i, 2)}));
  return in;
}

}  // namespace

// Gradient: reverse-mode derivatives checked against central finite differences of the same
// forward expression, with broadcasting, a constant, MatMul and activations on the path.
TEST(TrainingOps, GradientMatchesFiniteDifferences) {
  // y = sum-less: Y = Sigmoid(MatMul(A, W) * s + b), s a constant, b broadcast over rows.
  GraphSpec g;
  g.nodes.push_back({"MatMul", {"A", "W"}, {"m"}});
  g.nodes.push_back({"Mul", {"m", "s"}, {"ms"}});
  g.nodes.push_back({"Add", {"ms", "b"}, {"pre"}});
  g.nodes.push_back({"Sigmoid", {"pre"}, {"Y"}});
  g.nodes.push_back({"Gradient", {"A", "W", "b"}, {"dA", "dW", "db"},
                     {attr_strings("xs", {"A", "W", "b"}), attr_string("y", "Y")}, "grad", "ai.onnx.preview.training"});
  g.initializers.push_back({"s", Tensor::scalar<float>(1.5f)});
  g.inputs.push_back({"A", DType::kFloat, {2, 3}});
  g.inputs.push_back({"W", DType::kFloat, {3, 4}});
  g.inputs.push_back({"b", DType::kFloat, {4}});
  for (const char* o : {"Y", "dA", "dW", "db"}) g.outputs.push_back(any_out(o));
  Session s = session_of(g, 17, 1, {{"ai.onnx.preview.training", 1}});
  const Tensor A = random_tensor(Shape{2, 3}, 1), W = random_tensor(Shape{3, 4}, 2), b = random_tensor(Shape{4}, 3);
  auto r = s.run({{"A", A}, {"W", W}, {"b", b}});
  // The same expression in double, summed (Gradient seeds dY with ones).
  auto f = [](const std::vector<double>& a, const std::vector<double>& w, const std::vector<double>& bb) {
    double sum = 0;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j) {
        double m = 0;
        for (int k = 0; k < 3; ++k) m += a[i * 3 + k] * w[k * 4 + j];
        sum += 1 / (1 + std::exp(-(m * 1.5 + bb[j])));
      }
    return sum;
  };
  std::vector<std::vector<double>> x = {values_of(A), values_of(W), values_of(b)};
  for (int which = 0; which < 3; ++which) {
    const auto got = values_of(r[1 + which].tensor());
    ASSERT_EQ(got.size(), x[which].size());
    for (size_t e = 0; e < got.size(); ++e) {
      auto hi = x, lo = x;
      hi[which][e] += 1e-5;
      lo[which][e] -= 1e-5;
      const double fd = (f(hi[0], hi[1], hi[2]) - f(lo[0], lo[1], lo[2])) / 2e-5;
      EXPECT_NEAR(got[e], fd, 1e-4) << "input " << which << " element " << e;
    }
  }
}

TEST(TrainingOps, GradientErrors) {
  auto model = [](const std::string& op, std::vector<AttrSpec> attrs, std::vector<std::string> inputs) {
    GraphSpec g;
    g.nodes.push_back({op, {"x"}, {"y"}});
    g.nodes.push_back({"Gradient", inputs, {"dx"}, std::move(attrs), "grad", "ai.onnx.preview.training"});
    g.inputs.push_back({"x", DType::kFloat, {3}});
    g.inputs.push_back({"z", DType::kFloat, {3}});
    g.outputs.push_back(any_out("y"));
    g.outputs.push_back(any_out("dx"));
    return g;
  };
  auto error_of = [](const GraphSpec& g) -> std::string {
    try {
      session_of(g, 17, 1, {{"ai.onnx.preview.training", 1}});
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  // An op on the path that has no derivative here.
  EXPECT_NE(error_of(model("Floor", {attr_strings("xs", {"x"}), attr_string("y", "y")}, {"x"})).find("cannot differentiate"),
            std::string::npos);
  // Inputs must be the tensors of xs then zs.
  EXPECT_NE(error_of(model("Relu", {attr_strings("xs", {"x"}), attr_string("y", "y")}, {"z"})).find("input 0 must be 'x'"),
            std::string::npos);
  // y is required, and must exist.
  EXPECT_NE(error_of(model("Relu", {attr_strings("xs", {"x"})}, {"x"})).find("'y' is required"), std::string::npos);
  EXPECT_NE(error_of(model("Relu", {attr_strings("xs", {"x"}), attr_string("y", "nope")}, {"x"})).find("is not a value"),
            std::string::npos);
  // y depending on a graph input outside xs and zs.
  GraphSpec g = model("Relu", {attr_strings("xs", {"x"}), attr_string("y", "w")}, {"x"});
  g.nodes.insert(g.nodes.begin(), {"Add", {"x", "z"}, {"w"}});
  EXPECT_NE(error_of(g).find("neither in xs nor zs nor a constant"), std::string::npos) << error_of(g);
}

TEST(TrainingOps, AdagradTwoTensors) {
  auto g = optimizer_graph("Adagrad", 3, 2, 2, {attr_float("decay_factor", 0.1f), attr_float("epsilon", 1e-3f),
                                                 attr_float("norm_coefficient", 0.01f)});
  Session s = session_of(g, 13, 1, {{kTraining, 1}});
  auto out = s.run(optimizer_inputs(3, 2, 0.2, 3));
  const double r = 0.2 / (1 + 3 * double(0.1f));
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k) {
      const double x = in_value(0, i, k), gr = double(0.01f) * x + in_value(1, i, k), h = in_value(2, i, k) + gr * gr;
      EXPECT_NEAR(out[i].tensor().data<double>()[k], x - r * gr / (std::sqrt(h) + double(1e-3f)), 1e-12);
      EXPECT_NEAR(out[2 + i].tensor().data<double>()[k], h, 1e-12);
    }
}

TEST(TrainingOps, AdamBiasCorrectionAndPostNorm) {
  auto g = optimizer_graph("Adam", 4, 3, 2, {attr_float("alpha", 0.9f), attr_float("beta", 0.99f),
                                              attr_float("norm_coefficient_post", 0.1f)});
  Session s = session_of(g, 13, 1, {{kTraining, 1}});
  for (int64_t T : {int64_t(0), int64_t(4)}) {
    auto out = s.run(optimizer_inputs(4, 2, 0.1, T));
    const double a = double(0.9f), b = double(0.99f);
    const double r = T > 0 ? 0.1 * std::sqrt(1 - std::pow(b, T)) / (1 - std::pow(a, T)) : 0.1;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 3; ++k) {
        const double x = in_value(0, i, k), gr = in_value(1, i, k);
        const double v = a * in_value(2, i, k) + (1 - a) * gr, h = b * in_value(3, i, k) + (1 - b) * gr * gr;
        const double xn = (1 - double(0.1f)) * (x - r * v / (std::sqrt(h) + 1e-6));
        EXPECT_NEAR(out[i].tensor().data<double>()[k], xn, 1e-9);
        EXPECT_NEAR(out[2 + i].tensor().data<double>()[k], v, 1e-12);
        EXPECT_NEAR(out[4 + i].tensor().data<double>()[k], h, 1e-12);
      }
  }
}

TEST(TrainingOps, MomentumStandardAndNesterov) {
  for (const char* mode : {"standard", "nesterov"}) {
    auto g = optimizer_graph("Momentum", 3, 2, 1, {attr_float("alpha", 0.5f), attr_float("beta", 0.25f),
                                                    attr_float("norm_coefficient", 0.0f), attr_string("mode", mode)});
    Session s = session_of(g, 13, 1, {{kTraining, 1}});
    for (int64_t T : {int64_t(0), int64_t(2)}) {
      auto out = s.run(optimizer_inputs(3, 1, 0.1, T));
      for (int k = 0; k < 3; ++k) {
        const double x = in_value(0, 0, k), gr = in_value(1, 0, k);
        const double v = 0.5 * in_value(2, 0, k) + (T > 0 ? 0.25 : 1.0) * gr;
        const double xn = std::string(mode) == "standard" ? x - 0.1 * v : x - 0.1 * (gr + 0.5 * v);
        EXPECT_NEAR(out[0].tensor().data<double>()[k], xn, 1e-12) << mode;
        EXPECT_NEAR(out[1].tensor().data<double>()[k], v, 1e-12) << mode;
      }
    }
  }
  // A bad mode and a missing attribute are errors.
  auto bad = optimizer_graph("Momentum", 3, 2, 1, {attr_float("alpha", 0.5f), attr_float("beta", 0.25f),
                                                    attr_float("norm_coefficient", 0.0f), attr_string("mode", "fast")});
  EXPECT_THROW(session_of(bad, 13, 1, {{kTraining, 1}}), Error);
  auto missing = optimizer_graph("Momentum", 3, 2, 1, {attr_float("alpha", 0.5f), attr_string("mode", "standard")});
  EXPECT_THROW(session_of(missing, 13, 1, {{kTraining, 1}}), Error);
}

TEST(TrainingOps, MismatchedShapesAndInputCounts) {
  auto g = optimizer_graph("Adagrad", 3, 2, 1, {});
  g.inputs[3].dims = {4};  // G has 4 elements, X has 3
  EXPECT_THROW(session_of(g, 13, 1, {{kTraining, 1}}), Error);
  auto odd = optimizer_graph("Adam", 3, 2, 1, {});  // 2 + 3 inputs: not 2 + 4N
  EXPECT_THROW(session_of(odd, 13, 1, {{kTraining, 1}}), Error);
}

// ---- Einsum ----

namespace {

/// Brute-force Einsum for equations with explicit output and no ellipsis.
std::vector<double> ref_einsum(const std::string& eq, const std::vector<Tensor>& ins) {
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  size_t start = 0;
  for (;;) {
    const size_t c = eq.find(',', start);
    if (c == std::string::npos || c > arrow) {
      terms.push_back(eq.substr(start, arrow - start));
      break;
    }
    terms.push_back(eq.substr(start, c - start));
    start = c + 1;
  }
  const std::string out = eq.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t k = 0; k < terms.size(); ++k)
    for (size_t a = 0; a < terms[k].size(); ++a) size[terms[k][a]] = std::max<int64_t>(size[terms[k][a]], ins[k].dim(a));
  std::vector<char> labels;
  for (auto& [l, s] : size) labels.push_back(l);
  int64_t total = 1, nout = 1;
  for (char l : labels) total *= size[l];
  for (char l : out) nout *= size[l];
  std::vector<double> r(static_cast<size_t>(nout), 0.0);
  std::map<char, int64_t> idx;
  for (int64_t it = 0; it < total; ++it) {
    int64_t rem = it;
    for (size_t i = labels.size(); i-- > 0;) {
      idx[labels[i]] = rem % size[labels[i]];
      rem /= size[labels[i]];
    }
    double p = 1;
    for (size_t k = 0; k < terms.size(); ++k) {
      int64_t off = 0;
      for (size_t a = 0; a < terms[k].size(); ++a) off = off * ins[k].dim(a) + (ins[k].dim(a) == 1 ? 0 : idx[terms[k][a]]);
      p *= ins[k].element_as_double(off);
    }
    int64_t o = 0;
    for (char l : out) o = o * size[l] + idx[l];
    r[o] += p;
  }
  return r;
}

Session einsum_session(const std::string& eq, const std::vector<Shape>& shapes, DType dt = DType::kFloat) {
  GraphSpec g;
  NodeSpec n{"Einsum", {}, {"y"}, {attr_string("equation", eq)}};
  for (size_t k = 0; k < shapes.size(); ++k) {
    n.inputs.push_back(numbered("x", k));
    g.inputs.push_back({numbered("x", k), dt, shapes[k].to_vector()});
  }
  g.nodes.push_back(n);
  g.outputs.push_back(any_out("y", dt));
  return session_of(g, 12, 2);
}

std::vector<Value> run_einsum(Session& s, const std::vector<Tensor>& ins) {
  std::vector<std::pair<std::string, Value>> in;
  for (size_t k = 0; k < ins.size(); ++k) in.emplace_back(numbered("x", k), ins[k]);
  return s.run(in);
}

void expect_einsum(const std::string& eq, const std::vector<Shape>& shapes, const Shape& out_shape, double tol = 1e-4) {
  std::vector<Tensor> ins;
  for (size_t k = 0; k < shapes.size(); ++k) ins.push_back(random_tensor(shapes[k], static_cast<uint32_t>(k + 1)));
  Session s = einsum_session(eq, shapes);
  auto out = run_einsum(s, ins);
  const Tensor& y = out[0].tensor();
  ASSERT_EQ(y.shape(), out_shape) << eq;
  const auto ref = ref_einsum(eq, ins);
  const auto got = values_of(y);
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], tol * (1 + std::fabs(ref[i]))) << eq << " at " << i;
}

}  // namespace

TEST(EinsumOps, ContractionsAgainstBruteForce) {
  // Batched products that map onto SGEMM (as laid out, transposed, or after packing).
  expect_einsum("bij,bjk->bik", {{3, 20, 30}, {3, 30, 25}}, {3, 20, 25});
  expect_einsum("bhqd,bhkd->bhqk", {{2, 3, 16, 8}, {2, 3, 12, 8}}, {2, 3, 16, 12});
  expect_einsum("bhqk,bhkd->bhqd", {{2, 2, 16, 12}, {2, 2, 12, 8}}, {2, 2, 16, 8});
  expect_einsum("ij,kj->ik", {{40, 30}, {20, 30}}, {40, 20});
  expect_einsum("ji,jk->ik", {{30, 40}, {30, 20}}, {40, 20});
  expect_einsum("ij,jk->ki", {{40, 30}, {30, 20}}, {20, 40});
  expect_einsum("bij,jbk->bik", {{4, 16, 12}, {12, 4, 16}}, {4, 16, 16});
  expect_einsum("abcd,cdef->abef", {{3, 4, 5, 6}, {5, 6, 7, 2}}, {3, 4, 7, 2});
  // Labels only one side has and the output lacks are summed first.
  expect_einsum("ijx,jky->ik", {{8, 9, 3}, {9, 10, 4}}, {8, 10});
  // Outer product, three operands, uppercase labels, a pure reduction to a scalar.
  expect_einsum("i,j->ij", {{7}, {9}}, {7, 9});
  expect_einsum("ij,jk,kl->il", {{6, 7}, {7, 8}, {8, 5}}, {6, 5});
  expect_einsum("Ab,bC->AC", {{5, 6}, {6, 4}}, {5, 4});
  expect_einsum("ijk->", {{3, 4, 5}}, Shape{});
  // Broadcasting a size-1 labelled dim.
  expect_einsum("ij,ij->ij", {{4, 1}, {4, 6}}, {4, 6});
  expect_einsum("bij,bjk->bik", {{1, 20, 30}, {3, 30, 25}}, {3, 20, 25});
}

TEST(EinsumOps, DiagonalsAndImplicitOutput) {
  Tensor m = Tensor::from_vector<float>(Shape{3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  {
    Session s = einsum_session("ii->i", {{3, 3}});
    EXPECT_EQ(values_of(run_einsum(s, {m})[0].tensor()), (std::vector<double>{1, 5, 9}));
  }
  {
    Session s = einsum_session("ii", {{3, 3}});  // implicit: trace
    auto out = run_einsum(s, {m});
    EXPECT_EQ(out[0].tensor().shape(), Shape{});
    EXPECT_EQ(values_of(out[0].tensor()), (std::vector<double>{15}));
  }
  {
    Session s = einsum_session("ba", {{3, 3}});  // implicit output sorts labels: a transpose
    EXPECT_EQ(values_of(run_einsum(s, {m})[0].tensor()), (std::vector<double>{1, 4, 7, 2, 5, 8, 3, 6, 9}));
  }
  {
    Session s = einsum_session("ij,jk", {{3, 3}, {3, 3}});  // implicit "ik"
    auto out = run_einsum(s, {m, m});
    EXPECT_EQ(values_of(out[0].tensor()), (std::vector<double>{30, 36, 42, 66, 81, 96, 102, 126, 150}));
  }
  {
    // A diagonal inside a product: sum_i A[i,i] * B[i,j].
    Session s = einsum_session("ii,ij->j", {{3, 3}, {3, 3}});
    EXPECT_EQ(values_of(run_einsum(s, {m, m})[0].tensor()), (std::vector<double>{1 + 20 + 63, 2 + 25 + 72, 3 + 30 + 81}));
  }
  EXPECT_THROW(einsum_session("ii->i", {{3, 4}}), Error);  // diagonal of unequal dims
}

TEST(EinsumOps, EllipsisBroadcasting) {
  // "...ij,...jk->...ik" with batch dims [2, 1] and [3] broadcasting to [2, 3].
  Tensor a = random_tensor(Shape{2, 1, 4, 5}, 1), b = random_tensor(Shape{3, 5, 6}, 2);
  Session s = einsum_session("...ij,...jk->...ik", {{2, 1, 4, 5}, {3, 5, 6}});
  auto out = run_einsum(s, {a, b});
  const Tensor& y = out[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4, 6}));
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 6; ++k) {
          double want = 0;
          for (int j = 0; j < 5; ++j) want += a.data<float>()[(p * 4 + i) * 5 + j] * b.data<float>()[(q * 5 + j) * 6 + k];
          EXPECT_NEAR(y.data<float>()[((p * 3 + q) * 4 + i) * 6 + k], want, 1e-4);
        }
  // Ellipsis in the middle; implicit output puts the broadcast dims first.
  Tensor c = random_tensor(Shape{2, 3, 4, 5}, 3);
  Session mid = einsum_session("i...j", {{2, 3, 4, 5}});
  auto o2 = run_einsum(mid, {c});
  EXPECT_EQ(o2[0].tensor().shape(), (Shape{3, 4, 2, 5}));
  EXPECT_NEAR(o2[0].tensor().data<float>()[((1 * 4 + 2) * 2 + 1) * 5 + 3], c.data<float>()[((1 * 3 + 1) * 4 + 2) * 5 + 3],
              0);
  // Ellipsis dims absent from an explicit output are summed.
  Session sum = einsum_session("...i->i", {{2, 3, 4}});
  Tensor d = random_tensor(Shape{2, 3, 4}, 4);
  auto o4 = run_einsum(sum, {d});
  for (int i = 0; i < 4; ++i) {
    double want = 0;
    for (int j = 0; j < 6; ++j) want += d.data<float>()[j * 4 + i];
    EXPECT_NEAR(o4[0].tensor().data<float>()[i], want, 1e-5);
  }
  // Batch diagonal, as in the conformance data.
  Tensor e = random_tensor(Shape{2, 3, 3}, 5);
  Session bd = einsum_session("...ii->...i", {{2, 3, 3}});
  auto o5 = run_einsum(bd, {e});
  ASSERT_EQ(o5[0].tensor().shape(), (Shape{2, 3}));
  EXPECT_EQ(o5[0].tensor().data<float>()[4], e.data<float>()[9 + 4]);
}

TEST(EinsumOps, IntegerAndHalfTypes) {
  {
    Tensor a = Tensor::from_vector<int32_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
    Tensor b = Tensor::from_vector<int32_t>(Shape{3, 2}, {1, -1, 2, -2, 3, -3});
    Session s = einsum_session("ij,jk->ik", {{2, 3}, {3, 2}}, DType::kInt32);
    auto out = run_einsum(s, {a, b});
    EXPECT_EQ(out[0].tensor().dtype(), DType::kInt32);
    EXPECT_EQ(values_of(out[0].tensor()), (std::vector<double>{14, -14, 32, -32}));
  }
  {
    Tensor a = Tensor::from_vector<uint8_t>(Shape{2}, {200, 100});
    Session s = einsum_session("i,i", {{2}, {2}}, DType::kUInt8);  // wraps like uint8
    auto out = run_einsum(s, {a, a});
    EXPECT_EQ(values_of(out[0].tensor()), (std::vector<double>{static_cast<double>(uint8_t(200 * 200 + 100 * 100))}));
  }
  {
    Tensor a(DType::kFloat16, Shape{32, 32});
    for (int i = 0; i < 32 * 32; ++i) a.data<Float16>()[i] = Float16(static_cast<float>((i % 7) - 3) * 0.25f);
    Session s = einsum_session("ij,jk->ik", {{32, 32}, {32, 32}}, DType::kFloat16);
    auto out = run_einsum(s, {a, a});
    const Tensor& y = out[0].tensor();
    EXPECT_EQ(y.dtype(), DType::kFloat16);
    double want = 0;
    for (int j = 0; j < 32; ++j) want += a.element_as_double(1 * 32 + j) * a.element_as_double(j * 32 + 2);
    EXPECT_NEAR(y.element_as_double(1 * 32 + 2), want, 0.02);
  }
}

TEST(EinsumOps, SymbolicDimsResolvePerRun) {
  GraphSpec g;
  g.nodes.push_back({"Einsum", {"a", "b"}, {"y"}, {attr_string("equation", "bij,bjk->bik")}});
  ValueSpec a{"a", DType::kFloat, {-1, 2, 3}, {"N", "", ""}};
  ValueSpec b{"b", DType::kFloat, {-1, 3, 4}, {"N", "", ""}};
  g.inputs = {a, b};
  g.outputs.push_back(any_out("y"));
  Session s = session_of(g, 12);
  for (int64_t n : {1, 5}) {
    Tensor ta = random_tensor(Shape{n, 2, 3}, 1), tb = random_tensor(Shape{n, 3, 4}, 2);
    auto out = s.run({{"a", ta}, {"b", tb}});
    ASSERT_EQ(out[0].tensor().shape(), (Shape{n, 2, 4}));
    const auto ref = ref_einsum("bij,bjk->bik", {ta, tb});
    const auto got = values_of(out[0].tensor());
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], 1e-5);
  }
}

TEST(EinsumOps, EquationErrors) {
  EXPECT_THROW(einsum_session("ij,jk->ik", {{2, 3}, {4, 5}}), Error);  // j: 3 vs 4
  EXPECT_THROW(einsum_session("ij->ik", {{2, 3}}), Error);             // k not in any input
  EXPECT_THROW(einsum_session("ij->ii", {{2, 2}}), Error);             // repeated output label
  EXPECT_THROW(einsum_session("ij,jk->ik", {{2, 3}}), Error);          // two terms, one input
  EXPECT_THROW(einsum_session("ij", {{2, 3, 4}}), Error);              // rank 3, two letters
  EXPECT_THROW(einsum_session("i1->i", {{2, 3}}), Error);              // bad character
  EXPECT_THROW(einsum_session("i..->i", {{2, 3}}), Error);             // broken ellipsis
  EXPECT_THROW(einsum_session("...i...->i", {{2, 3}}), Error);         // two ellipses
  EXPECT_THROW(einsum_session("ij->i->j", {{2, 3}}), Error);           // two arrows
  try {
    einsum_session("ij,jk->ik", {{2, 3}, {4, 5}});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'j'"), std::string::npos) << e.what();
  }
}
