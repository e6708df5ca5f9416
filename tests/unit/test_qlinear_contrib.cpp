// The com.microsoft quantized operators (QLinearAdd, QLinearMul, QLinearSigmoid,
// QLinearLeakyRelu, QLinearSoftmax, QLinearAveragePool, QLinearGlobalAveragePool,
// QLinearConcat) and the vectorised QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear, run
// through sessions: exact results where the arithmetic is exact (power-of-two scales), scalar
// references that follow the documented definitions step by step elsewhere, broadcasting, vector
// tails, rounding ties, saturation, NaN, empty tensors, the layouts, the per-run (non-constant)
// parameter paths, threads, and errors that name the node and the input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "one_node.hpp"

namespace onyx::test {
namespace {

constexpr const char* kMs = "com.microsoft";

/// A one-node com.microsoft model; inputs are graph inputs (fed) or initializers.
Session ms_session(const std::string& op, const std::vector<In>& inputs, DType out, std::vector<AttrSpec> attrs = {},
                   int threads = 1) {
  GraphSpec g = one_node(op, inputs, {out}, std::move(attrs));
  g.nodes[0].domain = kMs;
  const std::string m = encode_model(g, 17, 8, {{kMs, 1}});
  return Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
}

Tensor run_ms(const std::string& op, const std::vector<In>& inputs, DType out, std::vector<AttrSpec> attrs = {},
              int threads = 1) {
  Session s = ms_session(op, inputs, out, std::move(attrs), threads);
  std::vector<std::pair<std::string, Value>> feeds;
  for (const auto& in : inputs)
    if (!in.name.empty() && !in.initializer) feeds.emplace_back(in.name, Value(in.value));
  return s.run(feeds)[0].tensor();
}

template <class S>
constexpr DType dt_of() {
  return std::is_same_v<S, uint8_t> ? DType::kUInt8 : DType::kInt8;
}

template <class S>
Tensor q(Shape s, const std::vector<int>& v) {
  std::vector<S> c(v.begin(), v.end());
  return Tensor::from_vector<S>(std::move(s), c);
}
template <class S>
Tensor zp(int v) {
  return Tensor::from_vector<S>(Shape{}, {static_cast<S>(v)});
}
Tensor sc(float v) { return Tensor::scalar(v); }

template <class S>
Tensor random_q(Shape s, std::mt19937& rng) {
  Tensor t(dt_of<S>(), s);
  auto* p = static_cast<uint8_t*>(t.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<uint8_t>(rng());
  return t;
}

template <class S>
std::vector<int> ints(const Tensor& t) {
  std::vector<int> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<const S*>(t.raw_data())[i]);
  return v;
}

template <class S>
int saturate(double v) {
  return static_cast<int>(std::clamp(v, double(std::numeric_limits<S>::lowest()), double(std::numeric_limits<S>::max())));
}

/// Index of element i of `out` in an input of shape `in` broadcast to `out`.
int64_t bcast_index(const Shape& out, const Shape& in, int64_t i) {
  int64_t idx = 0, stride = 1;
  for (int64_t d = static_cast<int64_t>(out.size()) - 1, k = static_cast<int64_t>(in.size()) - 1; d >= 0; --d, --k) {
    const int64_t c = i % out[d];
    i /= out[d];
    if (k >= 0) {
      if (in[k] != 1) idx += c * stride;
      stride *= in[k];
    }
  }
  return idx;
}

Shape bcast_shape(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape o = Shape::filled(r, 1);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k + a.size() >= r ? a[k + a.size() - r] : 1, db = k + b.size() >= r ? b[k + b.size() - r] : 1;
    o[k] = da == 1 ? db : da;
  }
  return o;
}

// ---- QLinearAdd / QLinearMul ----

struct BinCase {
  Shape a, b;
};

const std::vector<BinCase>& bin_cases() {
  static const std::vector<BinCase> cases = {
      {{1}, {1}},           {{37}, {37}},       {{2, 3, 5, 7}, {2, 3, 5, 7}}, {{4, 9, 33}, {}}, {{}, {4, 9, 33}},
      {{2, 3, 4, 37}, {37}}, {{5, 19, 6}, {5, 1, 6}}, {{6, 1}, {6, 45}},     {{7, 1, 23}, {1, 5, 1}}, {{3, 1}, {1}},
      {{1, 70}, {3, 1}}};
  return cases;
}

/// QLinearAdd / QLinearMul against the definition in double precision, with power-of-two
/// scales (every step exact, so rounding ties are exact ties and results must match exactly).
template <class S>
void check_binary_exact(bool mul) {
  std::mt19937 rng(mul ? 21 : 12);
  const float sa = mul ? 0.5f : 0.25f, sb = mul ? 0.25f : 0.5f, sc_ = mul ? 2.0f : 1.0f;
  const int za = std::is_signed_v<S> ? -3 : 130, zb = std::is_signed_v<S> ? 5 : 121, zc = std::is_signed_v<S> ? 2 : 128;
  for (const auto& c : bin_cases()) {
    const Tensor a = random_q<S>(c.a, rng), b = random_q<S>(c.b, rng);
    const Tensor y = run_ms(mul ? "QLinearMul" : "QLinearAdd",
                            {{"a", a}, {"as", sc(sa), true}, {"az", zp<S>(za), true}, {"b", b}, {"bs", sc(sb), true},
                             {"bz", zp<S>(zb), true}, {"cs", sc(sc_), true}, {"cz", zp<S>(zc), true}},
                            dt_of<S>());
    const Shape out = bcast_shape(c.a, c.b);
    ASSERT_EQ(y.shape(), out);
    const std::vector<int> av = ints<S>(a), bv = ints<S>(b), yv = ints<S>(y);
    for (int64_t i = 0; i < out.numel(); ++i) {
      const double x = (av[bcast_index(out, c.a, i)] - za) * double(sa), z = (bv[bcast_index(out, c.b, i)] - zb) * double(sb);
      const double want = std::nearbyint((mul ? x * z : x + z) / sc_) + zc;
      ASSERT_EQ(yv[i], saturate<S>(want)) << (mul ? "Mul " : "Add ") << a.shape().to_string() << " " << b.shape().to_string()
                                          << " at " << i;
    }
  }
}

TEST(QLinearContrib, AddExactWithBroadcastingTiesAndSaturation) {
  check_binary_exact<uint8_t>(false);
  check_binary_exact<int8_t>(false);
}

TEST(QLinearContrib, MulExactWithBroadcastingTiesAndSaturation) {
  check_binary_exact<uint8_t>(true);
  check_binary_exact<int8_t>(true);
}

/// Random scales: within one unit of the real-number result (ONNX Runtime's float arithmetic
/// rounds the scale ratios), and mostly equal to it.
template <class S>
void check_binary_random(bool mul) {
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> u(0.01f, 0.2f);
  const float sa = u(rng), sb = u(rng), sc_ = mul ? u(rng) * 10 : u(rng) * 2;
  const int za = static_cast<S>(rng()), zb = static_cast<S>(rng()), zc = static_cast<S>(rng());
  const Tensor a = random_q<S>(Shape{3, 1000}, rng), b = random_q<S>(Shape{1000}, rng);
  const Tensor y = run_ms(mul ? "QLinearMul" : "QLinearAdd",
                          {{"a", a}, {"as", sc(sa), true}, {"az", zp<S>(za), true}, {"b", b}, {"bs", sc(sb), true},
                           {"bz", zp<S>(zb), true}, {"cs", sc(sc_), true}, {"cz", zp<S>(zc), true}},
                          dt_of<S>());
  const std::vector<int> av = ints<S>(a), bv = ints<S>(b), yv = ints<S>(y);
  int off = 0;
  for (int64_t i = 0; i < 3000; ++i) {
    const double x = (av[i] - za) * double(sa), z = (bv[i % 1000] - zb) * double(sb);
    const int want = saturate<S>(std::nearbyint((mul ? x * z : x + z) / sc_) + zc);
    ASSERT_LE(std::abs(yv[i] - want), 1) << i;
    off += yv[i] != want;
  }
  EXPECT_LT(off, 10);
}

TEST(QLinearContrib, AddMulRandomScalesWithinOneUnit) {
  check_binary_random<uint8_t>(false);
  check_binary_random<int8_t>(false);
  check_binary_random<uint8_t>(true);
  check_binary_random<int8_t>(true);
}

TEST(QLinearContrib, AddOptionalZeroPointsRuntimeScalesAndThreads) {
  std::mt19937 rng(4);
  const Tensor a = random_q<uint8_t>(Shape{2, 50000}, rng), b = random_q<uint8_t>(Shape{2, 50000}, rng);
  // Zero points omitted (0): every one, as ONNX's optional inputs allow.
  const Tensor y0 = run_ms("QLinearAdd", {{"a", a}, {"as", sc(0.5f), true}, {"", {}}, {"b", b}, {"bs", sc(0.5f), true},
                                          {"", {}}, {"cs", sc(1.0f), true}},
                           DType::kUInt8);
  const std::vector<int> av = ints<uint8_t>(a), bv = ints<uint8_t>(b), y0v = ints<uint8_t>(y0);
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(y0v[i], saturate<uint8_t>(std::nearbyint(0.5 * av[i] + 0.5 * bv[i]))) << i;
  // Scales and zero points as graph inputs (read per run), 4 threads: the same as constants, 1 thread.
  std::vector<In> ins = {{"a", a},          {"as", sc(0.0371f)}, {"az", zp<uint8_t>(17)}, {"b", b},
                         {"bs", sc(0.0213f)}, {"bz", zp<uint8_t>(200)}, {"cs", sc(0.05f)}, {"cz", zp<uint8_t>(99)}};
  const Tensor yr = run_ms("QLinearAdd", ins, DType::kUInt8, {}, 4);
  for (size_t i = 1; i < ins.size(); ++i)
    if (i != 3) ins[i].initializer = true;
  const Tensor yc = run_ms("QLinearAdd", ins, DType::kUInt8, {}, 1);
  EXPECT_EQ(ints<uint8_t>(yr), ints<uint8_t>(yc));
}

TEST(QLinearContrib, EmptyTensors) {
  const Tensor a(DType::kUInt8, Shape{0, 5}), b(DType::kUInt8, Shape{1, 5});
  const Tensor y = run_ms("QLinearMul", {{"a", a}, {"as", sc(1), true}, {"az", zp<uint8_t>(0), true}, {"b", b},
                                         {"bs", sc(1), true}, {"bz", zp<uint8_t>(0), true}, {"cs", sc(1), true}},
                          DType::kUInt8);
  EXPECT_EQ(y.shape(), (Shape{0, 5}));
  const Tensor s = run_ms("QLinearSigmoid", {{"x", Tensor(DType::kInt8, Shape{3, 0})}, {"xs", sc(0.1f), true}, {"", {}},
                                             {"ys", sc(0.01f), true}, {"yz", zp<int8_t>(0), true}},
                          DType::kInt8);
  EXPECT_EQ(s.shape(), (Shape{3, 0}));
  const Tensor sm = run_ms("QLinearSoftmax", {{"x", Tensor(DType::kUInt8, Shape{0, 4})}, {"xs", sc(0.1f), true}, {"", {}},
                                              {"ys", sc(1 / 256.0f), true}, {"yz", zp<uint8_t>(0), true}},
                           DType::kUInt8, {attr_int("opset", 13)});
  EXPECT_EQ(sm.shape(), (Shape{0, 4}));
  const Tensor g = run_ms("QLinearGlobalAveragePool", {{"x", Tensor(DType::kUInt8, Shape{0, 3, 4, 4})}, {"xs", sc(0.1f), true},
                                                       {"xz", zp<uint8_t>(1), true}, {"ys", sc(0.1f), true},
                                                       {"yz", zp<uint8_t>(2), true}},
                          DType::kUInt8);
  EXPECT_EQ(g.shape(), (Shape{0, 3, 1, 1}));
  const Tensor c = run_ms("QLinearConcat", {{"ys", sc(0.5f), true}, {"yz", zp<uint8_t>(3), true},
                                            {"x0", Tensor(DType::kUInt8, Shape{2, 0})}, {"x0s", sc(0.25f), true},
                                            {"x0z", zp<uint8_t>(1), true}, {"x1", q<uint8_t>(Shape{2, 1}, {10, 20})},
                                            {"x1s", sc(0.25f), true}, {"x1z", zp<uint8_t>(2), true}},
                          DType::kUInt8, {attr_int("axis", 1)});
  EXPECT_EQ(ints<uint8_t>(c), (std::vector<int>{7, 12}));  // (10 - 2) / 2 + 3, (20 - 2) / 2 + 3
}

// ---- QLinearSigmoid / QLinearLeakyRelu ----

template <class S>
void check_lookup(bool sigmoid, bool runtime) {
  // Every byte value, in an odd-sized tensor (vector tails of the table lookup).
  std::vector<int> all;
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 256; ++i) all.push_back(static_cast<S>(i));
  all.resize(701);
  const Tensor x = q<S>(Shape{701}, all);
  const float xs = sigmoid ? 0.0625f : 0.125f, ys = sigmoid ? 1.0f / 256 : 0.25f, alpha = 0.25f;
  const int xz = std::is_signed_v<S> ? 3 : 125, yz = std::is_signed_v<S> ? -100 : 7;
  std::vector<In> ins = {{"x", x}, {"xs", sc(xs), !runtime}, {"xz", zp<S>(xz), !runtime}, {"ys", sc(ys), !runtime},
                         {"yz", zp<S>(yz), !runtime}};
  const Tensor y = run_ms(sigmoid ? "QLinearSigmoid" : "QLinearLeakyRelu", ins, dt_of<S>(),
                          sigmoid ? std::vector<AttrSpec>{} : std::vector<AttrSpec>{attr_float("alpha", alpha)});
  const std::vector<int> yv = ints<S>(y);
  for (size_t i = 0; i < all.size(); ++i) {
    const double v = (all[i] - xz) * double(xs);
    const double f = sigmoid ? 1.0 / (1.0 + std::exp(-v)) : (v >= 0 ? v : alpha * v);
    const double t = f / ys;
    const int want = saturate<S>(std::nearbyint(t) + yz);
    if (!sigmoid) {
      ASSERT_EQ(yv[i], want) << "x " << all[i];  // exact: power-of-two scales and alpha
    } else {
      // The sigmoid is rounded to float before quantizing: off by one only next to a tie.
      const double frac = std::fabs(t - std::floor(t) - 0.5);
      if (frac > 1e-4) {
        ASSERT_EQ(yv[i], want) << "x " << all[i];
      }
      ASSERT_LE(std::abs(yv[i] - want), 1);
    }
  }
}

TEST(QLinearContrib, SigmoidAndLeakyReluTables) {
  for (bool runtime : {false, true}) {
    check_lookup<uint8_t>(true, runtime);
    check_lookup<int8_t>(true, runtime);
    check_lookup<uint8_t>(false, runtime);
    check_lookup<int8_t>(false, runtime);
  }
  // Alpha defaults to 0.01.
  const Tensor y = run_ms("QLinearLeakyRelu", {{"x", q<int8_t>(Shape{2}, {-100, 50})}, {"xs", sc(1.0f), true}, {"", {}},
                                               {"ys", sc(0.5f), true}, {"yz", zp<int8_t>(0), true}},
                          DType::kInt8);
  EXPECT_EQ(ints<int8_t>(y), (std::vector<int>{-2, 100}));
  // A large tensor split over threads gives the same bytes as one thread.
  std::mt19937 rng(8);
  const Tensor big = random_q<uint8_t>(Shape{300000}, rng);
  const std::vector<In> ins = {{"x", big}, {"xs", sc(0.05f), true}, {"xz", zp<uint8_t>(128), true}, {"ys", sc(0.004f), true},
                               {"yz", zp<uint8_t>(0), true}};
  EXPECT_EQ(ints<uint8_t>(run_ms("QLinearSigmoid", ins, DType::kUInt8, {}, 4)),
            ints<uint8_t>(run_ms("QLinearSigmoid", ins, DType::kUInt8, {}, 1)));
}

// ---- QLinearSoftmax ----

/// The documented definition (ONNX Runtime's): e = exp((x - max) * x_scale) (its table's constant
/// factor cancels up to rounding), y = round(e * floor(1 / y_scale) / sum(e)) + y_zero_point,
/// saturated; within one unit (float rounding of the table and the sum).
template <class S>
std::vector<int> ref_softmax(const std::vector<int>& x, int64_t rows, int64_t d, int64_t inner, float xs, float ys, int yz) {
  std::vector<int> y(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t in = 0; in < inner; ++in) {
      const int64_t base = r * d * inner + in;
      int m = x[base];
      for (int64_t i = 0; i < d; ++i) m = std::max(m, x[base + i * inner]);
      double s = 0;
      for (int64_t i = 0; i < d; ++i) s += std::exp((x[base + i * inner] - m) * double(xs));
      for (int64_t i = 0; i < d; ++i)
        y[base + i * inner] = saturate<S>(std::nearbyint(std::exp((x[base + i * inner] - m) * double(xs)) * std::floor(1.0 / ys) / s) + yz);
    }
  return y;
}

template <class S>
void check_softmax(int64_t opset, int64_t axis, Shape shape) {
  std::mt19937 rng(static_cast<unsigned>(31 * opset + axis));
  const Tensor x = random_q<S>(shape, rng);
  const float xs = 0.03f, ys = 1.0f / 256;
  const int yz = std::is_signed_v<S> ? -128 : 0;
  const Tensor y = run_ms("QLinearSoftmax", {{"x", x}, {"xs", sc(xs), true}, {"", {}}, {"ys", sc(ys), true}, {"yz", zp<S>(yz), true}},
                          dt_of<S>(), {attr_int("opset", opset), attr_int("axis", axis)});
  const int64_t r = static_cast<int64_t>(shape.size()), a = axis < 0 ? axis + r : axis;
  int64_t outer = 1, d = 1, inner = 1;
  for (int64_t k = 0; k < r; ++k) (k < a ? outer : (opset < 13 || k == a) ? d : inner) *= shape[k];
  const std::vector<int> want = ref_softmax<S>(ints<S>(x), outer, d, inner, xs, ys, yz), got = ints<S>(y);
  int off = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_LE(std::abs(got[i] - want[i]), 1) << "opset " << opset << " axis " << axis << " at " << i;
    off += got[i] != want[i];
  }
  EXPECT_LE(off, static_cast<int>(got.size() / 100 + 1));
}

TEST(QLinearContrib, SoftmaxAxesAndOpsets) {
  check_softmax<uint8_t>(13, -1, Shape{3, 5, 67});
  check_softmax<int8_t>(13, -1, Shape{3, 5, 67});
  check_softmax<uint8_t>(13, 1, Shape{2, 21, 5});  // a strided axis
  check_softmax<int8_t>(13, 0, Shape{9, 4});
  check_softmax<uint8_t>(12, 1, Shape{2, 3, 11});  // opset < 13: over the flattened dims from axis on
  check_softmax<int8_t>(12, -1, Shape{4, 100});
}

TEST(QLinearContrib, SoftmaxStridedAxisEqualsTransposedLastAxis) {
  std::mt19937 rng(2);
  const Tensor x = random_q<uint8_t>(Shape{4, 23, 3}, rng);  // [a, b, c], softmax over b
  Tensor xt(DType::kUInt8, Shape{4, 3, 23});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 23; ++j)
      for (int k = 0; k < 3; ++k) xt.data<uint8_t>()[(i * 3 + k) * 23 + j] = x.data<uint8_t>()[(i * 23 + j) * 3 + k];
  auto run = [&](const Tensor& t, int64_t axis) {
    return run_ms("QLinearSoftmax", {{"x", t}, {"xs", sc(0.07f), true}, {"xz", zp<uint8_t>(9), true}, {"ys", sc(1 / 256.0f), true},
                                     {"yz", zp<uint8_t>(0), true}},
                  DType::kUInt8, {attr_int("opset", 13), attr_int("axis", axis)});
  };
  const Tensor y = run(x, 1), yt = run(xt, -1);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 23; ++j)
      for (int k = 0; k < 3; ++k)
        ASSERT_EQ(y.data<uint8_t>()[(i * 23 + j) * 3 + k], yt.data<uint8_t>()[(i * 3 + k) * 23 + j]);
}

TEST(QLinearContrib, SoftmaxSaturatesInt8) {
  // One element dominating its row: the probability rounds to 256 / 256; int8 saturates to 127
  // (ONNX Runtime wraps it to -128), the others give -128.
  const Tensor y = run_ms("QLinearSoftmax", {{"x", q<int8_t>(Shape{1, 4}, {127, -128, -128, -128})}, {"xs", sc(0.5f), true},
                                             {"", {}}, {"ys", sc(1 / 256.0f), true}, {"yz", zp<int8_t>(-128), true}},
                          DType::kInt8, {attr_int("opset", 13)});
  EXPECT_EQ(ints<int8_t>(y), (std::vector<int>{127, -128, -128, -128}));
  // uint8: 256 + 10 saturates to 255.
  const Tensor u = run_ms("QLinearSoftmax", {{"x", q<uint8_t>(Shape{1, 3}, {255, 0, 0})}, {"xs", sc(0.5f), true}, {"", {}},
                                             {"ys", sc(1 / 256.0f), true}, {"yz", zp<uint8_t>(10), true}},
                          DType::kUInt8, {attr_int("opset", 13)});
  EXPECT_EQ(ints<uint8_t>(u), (std::vector<int>{255, 10, 10}));
}

// ---- QLinearAveragePool / QLinearGlobalAveragePool ----

/// Channels-first [N, C, D...] to channels-last [N, D..., C].
template <class S>
Tensor to_nhwc(const Tensor& x) {
  const Shape& s = x.shape();
  Shape o{s[0]};
  for (size_t k = 2; k < s.size(); ++k) o.push_back(s[k]);
  o.push_back(s[1]);
  Tensor t(x.dtype(), o);
  const int64_t n = s[0], c = s[1], img = x.numel() / std::max<int64_t>(1, n * c);
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < c; ++b)
      for (int64_t p = 0; p < img; ++p)
        static_cast<S*>(t.raw_data())[(a * img + p) * c + b] = static_cast<const S*>(x.raw_data())[(a * c + b) * img + p];
  return t;
}

/// The documented float path, 2-D: x_scale * (x - x_zero_point) summed in float in row-major
/// window order, windows clipped to the input, divided by the count (the kernel's area with
/// count_include_pad), then round(v / y_scale + y_zero_point), saturated.
template <class S>
std::vector<int> ref_avg_pool_2d(const Tensor& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                                 int64_t oh, int64_t ow, bool count_pad, float xs, int xz, float ys, int yz) {
  const Shape& s = x.shape();
  const int64_t planes = s[0] * s[1], H = s[2], W = s[3];
  std::vector<int> xv = ints<S>(x), y;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t h0 = std::max<int64_t>(i * sh - ph, 0), h1 = std::min(i * sh - ph + kh, H);
        const int64_t w0 = std::max<int64_t>(j * sw - pw, 0), w1 = std::min(j * sw - pw + kw, W);
        float sum = 0.0f;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) {
            // The product is rounded before the sum (volatile: no fused multiply-add).
            volatile float d = xs * static_cast<float>(xv[(p * H + h) * W + w] - xz);
            sum += d;
          }
        const float v = sum / static_cast<float>(count_pad ? kh * kw : (h1 - h0) * (w1 - w0));
        y.push_back(saturate<S>(std::nearbyint(v / ys + static_cast<float>(yz))));
      }
  return y;
}

template <class S>
void check_avg_pool(Shape shape, int64_t k, int64_t stride, int64_t pad, bool count_pad, bool ceil) {
  std::mt19937 rng(static_cast<unsigned>(shape[3] * 7 + k));
  const Tensor x = random_q<S>(shape, rng);
  const float xs = 0.043f, ys = 0.031f;
  const int xz = std::is_signed_v<S> ? 4 : 120, yz = std::is_signed_v<S> ? -9 : 131;
  std::vector<AttrSpec> attrs = {attr_ints("kernel_shape", {k, k}), attr_ints("strides", {stride, stride}),
                                 attr_ints("pads", {pad, pad, pad, pad}), attr_int("count_include_pad", count_pad),
                                 attr_int("ceil_mode", ceil)};
  auto run = [&](const Tensor& t, bool last) {
    std::vector<AttrSpec> a = attrs;
    a.push_back(attr_int("channels_last", last));
    return run_ms("QLinearAveragePool", {{"x", t}, {"xs", sc(xs), true}, {"xz", zp<S>(xz), true}, {"ys", sc(ys), true},
                                         {"yz", zp<S>(yz), true}},
                  dt_of<S>(), a);
  };
  const Tensor y = run(x, false), yl = run(to_nhwc<S>(x), true);
  auto out = [&](int64_t in) {
    const int64_t num = in + 2 * pad - k;
    int64_t o = (ceil ? (num + stride - 1) / stride : num / stride) + 1;
    if (ceil && (o - 1) * stride >= in + pad) --o;
    return o;
  };
  const int64_t oh = out(shape[2]), ow = out(shape[3]);
  ASSERT_EQ(y.shape(), (Shape{shape[0], shape[1], oh, ow}));
  EXPECT_EQ(ints<S>(y), (ref_avg_pool_2d<S>(x, k, k, stride, stride, pad, pad, oh, ow, count_pad, xs, xz, ys, yz)))
      << "k " << k << " stride " << stride << " pad " << pad;
  EXPECT_EQ(ints<S>(yl), ints<S>(to_nhwc<S>(y))) << "channels last differs from channels first";
}

TEST(QLinearContrib, AveragePoolBothLayoutsMatchTheFloatDefinition) {
  for (bool count_pad : {false, true}) {
    check_avg_pool<uint8_t>(Shape{2, 19, 9, 41}, 3, 1, 1, count_pad, false);  // vector rows and edges
    check_avg_pool<int8_t>(Shape{1, 37, 12, 10}, 2, 2, 0, count_pad, false);
    check_avg_pool<uint8_t>(Shape{2, 6, 11, 13}, 3, 2, 1, count_pad, true);
    check_avg_pool<int8_t>(Shape{1, 3, 7, 70}, 5, 1, 2, count_pad, false);
    // Width 33, kernel 3, pad 1: the last whole vector of inner outputs ends where the windows
    // start to leave the row (2 and 4 vectors of 16 and 8 lanes).
    check_avg_pool<uint8_t>(Shape{1, 4, 5, 33}, 3, 1, 1, count_pad, false);
  }
}

TEST(QLinearContrib, AveragePoolOverTheWholeImageIsTheGlobalPool) {
  std::mt19937 rng(6);
  const Tensor x = random_q<uint8_t>(Shape{2, 20, 7, 7}, rng);
  const std::vector<In> ins = {{"x", x}, {"xs", sc(0.05f), true}, {"xz", zp<uint8_t>(128), true}, {"ys", sc(0.02f), true},
                               {"yz", zp<uint8_t>(100), true}};
  const Tensor a = run_ms("QLinearAveragePool", ins, DType::kUInt8, {attr_ints("kernel_shape", {7, 7})});
  const Tensor g = run_ms("QLinearGlobalAveragePool", ins, DType::kUInt8);
  EXPECT_EQ(ints<uint8_t>(a), ints<uint8_t>(g));
}

/// The documented integer path: sum(x) - x_zero_point * image, times x_scale / (y_scale * image)
/// in float, rounded half to even, plus y_zero_point, saturated.
template <class S>
void check_global_pool(Shape shape) {
  std::mt19937 rng(static_cast<unsigned>(shape.numel()));
  const Tensor x = random_q<S>(shape, rng);
  const float xs = 0.07f, ys = 0.015f;
  const int xz = std::is_signed_v<S> ? -20 : 100, yz = std::is_signed_v<S> ? 5 : 60;
  auto run = [&](const Tensor& t, bool last) {
    return run_ms("QLinearGlobalAveragePool", {{"x", t}, {"xs", sc(xs), true}, {"xz", zp<S>(xz), true}, {"ys", sc(ys), true},
                                               {"yz", zp<S>(yz), true}},
                  dt_of<S>(), {attr_int("channels_last", last)});
  };
  const Tensor y = run(x, false), yl = run(to_nhwc<S>(x), true);
  const int64_t planes = shape[0] * shape[1], img = x.numel() / planes;
  const float scale = xs / (ys * static_cast<float>(img));
  const std::vector<int> xv = ints<S>(x);
  std::vector<int> want;
  for (int64_t p = 0; p < planes; ++p) {
    int64_t acc = -static_cast<int64_t>(xz) * img;
    for (int64_t i = 0; i < img; ++i) acc += xv[p * img + i];
    want.push_back(saturate<S>(std::nearbyint(static_cast<float>(acc) * scale) + yz));
  }
  EXPECT_EQ(ints<S>(y), want) << shape.to_string();
  EXPECT_EQ(ints<S>(yl), want) << shape.to_string() << " channels last";
  Shape ls = to_nhwc<S>(x).shape();
  for (size_t k = 1; k + 1 < ls.size(); ++k) ls[k] = 1;
  EXPECT_EQ(yl.shape(), ls);
}

TEST(QLinearContrib, GlobalAveragePoolBothLayouts) {
  check_global_pool<uint8_t>(Shape{2, 19, 7, 9});
  check_global_pool<int8_t>(Shape{2, 19, 7, 9});
  check_global_pool<uint8_t>(Shape{1, 70, 5, 5});  // channel blocks with a tail
  check_global_pool<int8_t>(Shape{1, 3, 112, 112});
  check_global_pool<uint8_t>(Shape{3, 1, 33});
  check_global_pool<int8_t>(Shape{1, 4, 3, 5, 6});
}

// ---- QLinearConcat ----

TEST(QLinearContrib, ConcatCopiesOrRequantizes) {
  for (bool runtime : {false, true}) {
    const Tensor x0 = q<int8_t>(Shape{2, 2}, {1, -2, 3, 127});
    const Tensor x1 = q<int8_t>(Shape{2, 3}, {-128, 0, 7, 9, 100, -100});
    const Tensor y = run_ms("QLinearConcat", {{"ys", sc(0.5f), !runtime}, {"yz", zp<int8_t>(-4), !runtime}, {"x0", x0},
                                              {"x0s", sc(0.5f), !runtime}, {"x0z", zp<int8_t>(-4), !runtime}, {"x1", x1},
                                              {"x1s", sc(0.25f), !runtime}, {"x1z", zp<int8_t>(2), !runtime}},
                            DType::kInt8, {attr_int("axis", -1)});
    // x0 is copied; x1 becomes round((x1 - 2) / 2) - 4, ties to even.
    EXPECT_EQ(ints<int8_t>(y), (std::vector<int>{1, -2, -69, -5, -2, 3, 127, 0, 45, -55})) << runtime;
  }
}

// ---- errors ----

TEST(QLinearContrib, ErrorsNameTheNodeAndTheInput) {
  const Tensor a = q<uint8_t>(Shape{2}, {1, 2});
  const Tensor b = q<int8_t>(Shape{2}, {1, 2});
  expect_error([&] {
    run_ms("QLinearAdd", {{"a", a}, {"as", sc(1), true}, {"", {}}, {"b", b}, {"bs", sc(1), true}, {"", {}}, {"cs", sc(1), true}},
           DType::kUInt8);
  }, "com.microsoft::QLinearAdd 'node': input 3 ('B') is int8, but com.microsoft::QLinearAdd-1 binds it to type T with "
     "input 0 ('A'), which is uint8");
  expect_error([&] {
    run_ms("QLinearMul", {{"a", a}, {"as", f32(Shape{2}, {1, 2}), true}, {"", {}}, {"b", a}, {"bs", sc(1), true}, {"", {}},
                          {"cs", sc(1), true}},
           DType::kUInt8);
  }, "A_scale (input 1) must be a scalar or a 1-element 1-D tensor");
  expect_error([&] {
    run_ms("QLinearAdd", {{"a", q<uint8_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6})}, {"as", sc(1), true}, {"", {}}, {"b", a},
                          {"bs", sc(1), true}, {"", {}}, {"cs", sc(1), true}},
           DType::kUInt8);
  }, "cannot be broadcast");
  expect_error([&] {
    run_ms("QLinearSigmoid", {{"x", a}, {"xs", sc(1), true}, {"xz", zp<int8_t>(0), true}, {"ys", sc(1), true}}, DType::kUInt8);
  }, "input 2 ('X_zero_point') is int8, but com.microsoft::QLinearSigmoid-1 binds it to type T with input 0 ('X')");
  expect_error([&] {
    run_ms("QLinearSoftmax", {{"x", a}, {"xs", sc(1), true}, {"", {}}, {"ys", sc(1), true}, {"yz", zp<uint8_t>(0), true}},
           DType::kUInt8);
  }, "attribute 'opset'");
  expect_error([&] {
    run_ms("QLinearAveragePool", {{"x", q<uint8_t>(Shape{1, 1, 3, 3}, std::vector<int>(9, 1))}, {"xs", sc(1), true}, {"", {}},
                                  {"ys", sc(1), true}},
           DType::kUInt8, {attr_ints("kernel_shape", {2, 2}), attr_ints("pads", {2, 0, 0, 0})});
  }, "must be smaller than kernel_shape");
  expect_error([&] {
    run_ms("QLinearConcat", {{"ys", sc(1), true}, {"yz", zp<uint8_t>(0), true}, {"x0", a}, {"x0s", sc(1), true}}, DType::kUInt8,
           {attr_int("axis", 0)});
  }, "one (X, X_scale, X_zero_point) triple per input");
  expect_error([&] {
    run_ms("QLinearConcat", {{"ys", sc(1), true}, {"yz", zp<uint8_t>(0), true}, {"x0", a}, {"x0s", sc(1), true},
                             {"x0z", zp<uint8_t>(0), true}, {"x1", q<uint8_t>(Shape{1, 2}, {1, 2})}, {"x1s", sc(1), true},
                             {"x1z", zp<uint8_t>(0), true}},
           DType::kUInt8, {attr_int("axis", 0)});
  }, "input 5 has rank 2 but input 2 has rank 1");
  // A scale whose shape is only known when the model runs: the error names it then.
  GraphSpec g = one_node("QLinearAdd", {{"a", a}, {"as", sc(1)}, {"", {}}, {"b", a, true}, {"bs", sc(1), true}, {"", {}}, {"cs", sc(1), true}},
                         {DType::kUInt8});
  g.nodes[0].domain = kMs;
  g.inputs[1].no_shape = true;
  const std::string m = encode_model(g, 17, 8, {{kMs, 1}});
  Session s = Session::builder().with_intra_threads(1).commit_from_memory(m.data(), m.size());
  expect_error([&] { s.run({{"a", Value(a)}, {"as", Value(f32(Shape{3}, {1, 2, 3}))}}); },
               "com.microsoft::QLinearAdd 'node': A_scale (input 1) must be a scalar or a 1-element 1-D tensor, got shape [3]");
}

TEST(QLinearContrib, ModelImportingTheDomainLoadsAndRunsOnTheCpuEp) {
  const Tensor a = q<uint8_t>(Shape{3}, {1, 2, 3});
  Session s = ms_session("QLinearAdd", {{"a", a}, {"as", sc(1), true}, {"", {}}, {"b", a}, {"bs", sc(1), true}, {"", {}},
                                        {"cs", sc(1), true}},
                         DType::kUInt8);
  const Placement p = s.placement();
  ASSERT_EQ(p.nodes.size(), 1u);
  EXPECT_EQ(p.nodes[0].domain, kMs);
  EXPECT_EQ(p.nodes[0].ep, "cpu");
  // Without the com.microsoft opset import the model still runs (version 1, as ONNX Runtime takes it).
  GraphSpec g = one_node("QLinearAdd", {{"a", a}, {"as", sc(1), true}, {"", {}}, {"b", a}, {"bs", sc(1), true}, {"", {}},
                                        {"cs", sc(1), true}},
                         {DType::kUInt8});
  g.nodes[0].domain = kMs;
  const std::string m = encode_model(g, 17, 8);
  Session unimported = Session::builder().commit_from_memory(m.data(), m.size());
  EXPECT_EQ(unimported.placement().nodes[0].ep, "cpu");
}

// ---- QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear (vectorised) ----

template <class S>
S ref_quantize(float x, float s, int zp) {
  float qv = x / s;
  if (std::isnan(qv)) qv = 0.0f;
  return static_cast<S>(saturate<S>(std::nearbyint(static_cast<double>(qv)) + zp));
}

std::vector<float> special_floats(int64_t n, float s, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-200.0f * s, 200.0f * s);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    switch (i % 9) {
      case 2: v[i] = (static_cast<float>(i % 300) - 150.5f) * s; break;  // ties
      case 4: v[i] = std::numeric_limits<float>::quiet_NaN(); break;
      case 6: v[i] = (i & 1) ? std::numeric_limits<float>::infinity() : -1e20f; break;
      default: v[i] = u(rng);
    }
  }
  return v;
}

template <class S>
void check_quantize_linear(int64_t n, bool per_axis) {
  const float s = 0.5f;
  const int z = std::is_signed_v<S> ? -7 : 140;
  const std::vector<float> xv = special_floats(n, s, static_cast<unsigned>(n));
  const Tensor x = f32(per_axis ? Shape{1, 3, n / 3} : Shape{n}, xv);
  std::vector<In> ins = {{"x", x}};
  Tensor scale = sc(s), zero = zp<S>(z);
  if (per_axis) {
    scale = f32(Shape{3}, {0.5f, 0.25f, 2.0f});
    zero = q<S>(Shape{3}, {z, z + 5, z - 3});
  }
  ins.push_back({"s", scale, true});
  ins.push_back({"z", zero, true});
  const Tensor y = run1("QuantizeLinear", ins, dt_of<S>(), {attr_int("axis", 1)}, 13);
  const std::vector<int> yv = ints<S>(y), zv = ints<S>(zero);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t ch = per_axis ? i / (n / 3) : 0;
    ASSERT_EQ(yv[i], ref_quantize<S>(xv[i], scale.data<float>()[ch], zv[ch])) << "n " << n << " at " << i << " x " << xv[i];
  }
}

TEST(QLinearContrib, QuantizeLinearVectorisedMatchesTheDefinition) {
  for (int64_t n : {1, 5, 15, 16, 17, 33, 1001, 300000}) {
    check_quantize_linear<uint8_t>(n, false);
    check_quantize_linear<int8_t>(n, false);
  }
  for (int64_t n : {3 * 17, 3 * 1000, 3 * 5}) {
    check_quantize_linear<uint8_t>(n, true);
    check_quantize_linear<int8_t>(n, true);
  }
}

TEST(QLinearContrib, QuantizeLinearFromFloat16) {
  // Opset 19: float16 x and scale; the quotient in float (the precision attribute is opset 23's).
  const std::vector<float> xv = special_floats(1003, 0.5f, 77);
  std::vector<uint16_t> bits;
  for (float v : xv) bits.push_back(Float16::from_float(v));
  const Tensor x = bits16_tensor(DType::kFloat16, Shape{1003}, bits);
  const Tensor y = run1("QuantizeLinear", {{"x", x}, {"s", bits16_tensor(DType::kFloat16, Shape{}, {Float16::from_float(0.5f)}), true},
                                           {"z", zp<int8_t>(-2), true}},
                        DType::kInt8, {}, 19);
  for (int64_t i = 0; i < 1003; ++i)
    ASSERT_EQ(static_cast<int>(y.data<int8_t>()[i]), static_cast<int>(ref_quantize<int8_t>(Float16::to_float(bits[i]), 0.5f, -2)))
        << i;
}

TEST(QLinearContrib, DequantizeLinearVectorisedMatchesTheDefinition) {
  std::vector<int> all;
  for (int i = 0; i < 1003; ++i) all.push_back(static_cast<uint8_t>(i * 7));
  const Tensor x = q<uint8_t>(Shape{1003}, all);
  const Tensor y = run1("DequantizeLinear", {{"x", x}, {"s", sc(0.0371f), true}, {"z", zp<uint8_t>(133), true}}, DType::kFloat, {}, 13);
  for (int64_t i = 0; i < 1003; ++i) ASSERT_EQ(y.data<float>()[i], static_cast<float>(all[i] - 133) * 0.0371f) << i;
  // To float16 (opset 19, a float16 scale): rounded once from the float product.
  std::vector<int> s8;
  for (int i = 0; i < 259; ++i) s8.push_back(static_cast<int8_t>(i));
  const Tensor x8 = q<int8_t>(Shape{259}, s8);
  const Tensor h = run1("DequantizeLinear", {{"x", x8}, {"s", bits16_tensor(DType::kFloat16, Shape{}, {Float16::from_float(0.01f)}), true},
                                             {"z", zp<int8_t>(-3), true}},
                        DType::kFloat16, {}, 19);
  const float s16 = Float16::to_float(Float16::from_float(0.01f));
  for (int64_t i = 0; i < 259; ++i)
    ASSERT_EQ(h.data<Float16>()[i].bits, Float16::from_float(static_cast<float>(s8[i] + 3) * s16)) << i;
}

TEST(QLinearContrib, DynamicQuantizeLinearVectorised) {
  for (int64_t n : {1, 17, 1000, 100003}) {
    std::vector<float> xv = special_floats(n, 0.01f, 5);
    for (auto& v : xv)
      if (std::isinf(v) || std::fabs(v) > 1e10f) v = 1.25f;  // finite inputs (infinities give a NaN scale)
    const Tensor x = f32(Shape{n}, xv);
    const auto out = run_op("DynamicQuantizeLinear", {{"x", x}}, {DType::kUInt8, DType::kFloat, DType::kUInt8}, {}, 13);
    float lo = 0, hi = 0;
    for (float v : xv) lo = std::min(lo, v), hi = std::max(hi, v);
    const float s = (hi - lo) / 255.0f;
    const int z = static_cast<int>(std::nearbyint(std::clamp(-lo / s, 0.0f, 255.0f)));
    ASSERT_EQ(out[1].tensor().data<float>()[0], s) << n;
    ASSERT_EQ(out[2].tensor().data<uint8_t>()[0], z) << n;
    const Tensor& y = out[0].tensor();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y.data<uint8_t>()[i], ref_quantize<uint8_t>(xv[i], s, z)) << "n " << n << " at " << i;
  }
}

}  // namespace
}  // namespace onyx::test
