// Image ops beyond the ONNX 1.12 conformance data: Resize-18/19 (antialias, axes,
// keep_aspect_ratio_policy, half_pixel_symmetric), GridSample-20 (N-d, renamed modes),
// AffineGrid-20, MaxUnpool's output_shape semantics, Upsample-7, error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "op_model.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

Tensor floats(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor ints(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(Shape{static_cast<int64_t>(v.size())}, v); }
Tensor scales_of(std::vector<float> v) { return Tensor::from_vector<float>(Shape{static_cast<int64_t>(v.size())}, v); }

std::vector<float> iota_floats(int64_t n, float start = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}
std::vector<float> random_floats(int64_t n, unsigned seed, float lo = -2.0f, float hi = 5.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

void expect_close(const Tensor& got, const std::vector<double>& want, double tol = 1e-4) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.element_as_double(static_cast<int64_t>(i)), want[i], tol * (1.0 + std::fabs(want[i])))
        << "at " << i;
}

// ---- Reference Resize: dense per-axis weight matrices, written after the ONNX formulas ----

struct RefResize {
  std::string mode = "linear", ctm = "half_pixel", nearest = "round_prefer_floor";
  bool antialias = false, exclude_outside = false;
  double a = -0.75, extrapolation = 0.0;

  double coord(int64_t x, double scale, int64_t in, int64_t out, double rs, double re) const {
    if (ctm == "half_pixel") return (x + 0.5) / scale - 0.5;
    if (ctm == "half_pixel_symmetric") {
      const double adj = out / (scale * in), center = in / 2.0;
      return center * (1 - adj) + (x + 0.5) / scale - 0.5;
    }
    if (ctm == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    if (ctm == "align_corners") return out == 1 ? 0.0 : x * double(in - 1) / double(out - 1);
    if (ctm == "asymmetric") return x / scale;
    if (ctm == "tf_crop_and_resize")
      return out > 1 ? rs * (in - 1) + x * (re - rs) * (in - 1) / double(out - 1) : 0.5 * (rs + re) * (in - 1);
    ADD_FAILURE() << "unknown ctm " << ctm;
    return 0;
  }
  double cubic(double t) const {
    t = std::fabs(t);
    if (t <= 1) return (a + 2) * t * t * t - (a + 3) * t * t + 1;
    if (t < 2) return a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a;
    return 0;
  }
  // Weight matrix [out][in] of one axis; flags[o] = extrapolated.
  std::vector<std::vector<double>> axis(int64_t in, int64_t out, double scale, double rs, double re,
                                        std::vector<char>& flags) const {
    std::vector<std::vector<double>> m(out, std::vector<double>(in, 0.0));
    flags.assign(out, 0);
    for (int64_t o = 0; o < out; ++o) {
      const double x = coord(o, scale, in, out, rs, re);
      if (ctm == "tf_crop_and_resize" && (x < 0 || x > in - 1)) {
        flags[o] = 1;
        continue;
      }
      if (mode == "nearest") {
        const double f = std::floor(x), r = x - f;
        double i;
        if (nearest == "round_prefer_floor")
          i = r <= 0.5 ? f : f + 1;
        else if (nearest == "round_prefer_ceil")
          i = r < 0.5 ? f : f + 1;
        else if (nearest == "floor")
          i = f;
        else
          i = std::ceil(x);
        m[o][std::clamp<int64_t>(static_cast<int64_t>(i), 0, in - 1)] = 1.0;
        continue;
      }
      // The reference's convention: ratio in (0, 1], taps relative to x - ratio.
      double ratio = x - std::floor(x);
      if (ratio == 0) ratio = 1;
      const int64_t base = static_cast<int64_t>(std::llround(x - ratio));
      std::vector<std::pair<int64_t, double>> taps;
      const double s = std::min(scale, 1.0);
      if (mode == "linear" && !antialias) {
        taps = {{0, 1 - ratio}, {1, ratio}};
      } else if (mode == "cubic" && !antialias) {
        taps = {{-1, cubic(ratio + 1)}, {0, cubic(ratio)}, {1, cubic(1 - ratio)}, {2, cubic(2 - ratio)}};
      } else if (mode == "linear") {
        const int64_t start = static_cast<int64_t>(std::floor(-1 / s) + 1);
        for (int64_t i = start; i < start + 2 - 2 * start; ++i)
          taps.push_back({i, std::max(0.0, 1 - std::fabs((i - ratio) * s))});
      } else {
        const int64_t start = static_cast<int64_t>(std::floor(-2 / s) + 1);
        for (int64_t i = start; i < 2 - start; ++i) taps.push_back({i, cubic(s * (i - ratio))});
      }
      if (exclude_outside)
        for (auto& [i, w] : taps)
          if (base + i < 0 || base + i >= in) w = 0;
      double sum = 0;
      for (auto& [i, w] : taps) sum += w;
      for (auto& [i, w] : taps) {
        if (antialias || exclude_outside) w /= sum;
        m[o][std::clamp<int64_t>(base + i, 0, in - 1)] += w;
      }
    }
    return m;
  }
  std::vector<double> run(const std::vector<double>& x, const Shape& in, const Shape& out,
                          const std::vector<double>& scale, std::vector<double> rs = {},
                          std::vector<double> re = {}) const {
    const size_t r = in.size();
    if (rs.empty()) rs.assign(r, 0.0), re.assign(r, 1.0);
    std::vector<double> cur = x;
    Shape cs = in;
    std::vector<std::vector<char>> flags(r);
    for (size_t k = 0; k < r; ++k) {
      auto m = axis(in[k], out[k], scale[k], rs[k], re[k], flags[k]);
      int64_t outer = 1, inner = 1;
      for (size_t j = 0; j < k; ++j) outer *= cs[j];
      for (size_t j = k + 1; j < r; ++j) inner *= cs[j];
      std::vector<double> next(static_cast<size_t>(outer * out[k] * inner), 0.0);
      for (int64_t a0 = 0; a0 < outer; ++a0)
        for (int64_t o = 0; o < out[k]; ++o)
          for (int64_t i = 0; i < in[k]; ++i)
            if (m[o][i] != 0)
              for (int64_t b = 0; b < inner; ++b)
                next[(a0 * out[k] + o) * inner + b] += m[o][i] * cur[(a0 * in[k] + i) * inner + b];
      cur = std::move(next);
      cs[k] = out[k];
    }
    // Extrapolated points.
    std::vector<int64_t> idx(r, 0);
    for (size_t p = 0; p < cur.size(); ++p) {
      bool ex = false;
      for (size_t k = 0; k < r; ++k) ex |= flags[k][idx[k]] != 0;
      if (ex) cur[p] = extrapolation;
      for (size_t k = r; k-- > 0;) {
        if (++idx[k] < out[k]) break;
        idx[k] = 0;
      }
    }
    return cur;
  }
};

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

OpModel resize_model(const Tensor& x, std::vector<Attr> attrs, const Tensor* scales, const Tensor* sizes,
                     int64_t opset = 19) {
  OpModel m;
  m.opset = opset;
  m.feeds = {{"x", x}};
  m.op.type = "Resize";
  m.op.inputs = {"x", "", scales ? "scales" : "", sizes ? "sizes" : ""};
  if (scales) m.consts.emplace_back("scales", *scales);
  if (sizes) m.consts.emplace_back("sizes", *sizes);
  m.op.attrs = std::move(attrs);
  return m;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Resize

TEST(ImageResize, AntialiasLinearDownsample) {
  // ONNX's resize_downsample_scales_linear_antialias case (values worked out by hand).
  const Tensor x = floats(Shape{1, 1, 4, 4}, iota_floats(16));
  const Tensor sc = scales_of({1, 1, 0.6f, 0.6f});
  const Tensor y = resize_model(x, {a_str("mode", "linear"), a_int("antialias", 1)}, &sc, nullptr, 18).run1();
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  expect_close(y, {2.875, 4.5, 9.375, 11.0});
}

TEST(ImageResize, AntialiasMatchesReference) {
  const std::vector<float> xv = random_floats(2 * 7 * 9, 1);
  const Tensor x = floats(Shape{1, 2, 7, 9}, xv);
  for (const char* mode : {"linear", "cubic"}) {
    for (int excl : {0, 1}) {
      RefResize ref;
      ref.mode = mode;
      ref.antialias = true;
      ref.exclude_outside = excl;
      const Tensor sc = scales_of({1, 1, 0.45f, 0.3f});
      const Tensor y =
          resize_model(x, {a_str("mode", mode), a_int("antialias", 1), a_int("exclude_outside", excl)}, &sc, nullptr)
              .run1();
      ASSERT_EQ(y.shape(), (Shape{1, 2, 3, 2}));
      expect_close(y, ref.run(to_double(xv), x.shape(), y.shape(), {1, 1, 0.45f, 0.3f}));
      // sizes: the scale is out / in; upsampling an axis is plain interpolation.
      const Tensor sz = ints({1, 2, 3, 13});
      const Tensor y2 =
          resize_model(x, {a_str("mode", mode), a_int("antialias", 1), a_int("exclude_outside", excl)}, nullptr, &sz)
              .run1();
      ASSERT_EQ(y2.shape(), (Shape{1, 2, 3, 13}));
      expect_close(y2, ref.run(to_double(xv), x.shape(), y2.shape(), {1, 1, 3.0 / 7.0, 13.0 / 9.0}));
    }
  }
}

TEST(ImageResize, AxesSelectWhatScalesAndSizesReferTo) {
  const std::vector<float> xv = random_floats(2 * 3 * 5 * 4, 2);
  const Tensor x = floats(Shape{2, 3, 5, 4}, xv);
  const Tensor full = scales_of({1, 1, 0.8f, 1.5f});
  const Tensor part = scales_of({1.5f, 0.8f});
  const Tensor a = resize_model(x, {a_str("mode", "cubic")}, &full, nullptr).run1();
  const Tensor b = resize_model(x, {a_str("mode", "cubic"), a_ints("axes", {3, -2})}, &part, nullptr).run1();
  ASSERT_EQ(a.shape(), (Shape{2, 3, 4, 6}));
  ASSERT_EQ(b.shape(), a.shape());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_FLOAT_EQ(a.data<float>()[i], b.data<float>()[i]);
  // sizes with axes, and a roi that only covers the listed axes.
  const Tensor sz = ints({7});
  const Tensor c = resize_model(x, {a_str("mode", "linear"), a_ints("axes", {-1})}, nullptr, &sz).run1();
  RefResize ref;
  expect_close(c, ref.run(to_double(xv), x.shape(), Shape{2, 3, 5, 7}, {1, 1, 1, 7.0 / 4.0}));
  OpModel m = resize_model(
      x,
      {a_str("mode", "linear"), a_ints("axes", {2, 3}), a_str("coordinate_transformation_mode", "tf_crop_and_resize"),
       a_float("extrapolation_value", 10.0f)},
      nullptr, nullptr);
  m.op.inputs = {"x", "roi", "", "sizes"};
  m.consts = {{"roi", scales_of({0.2f, -0.3f, 1.1f, 0.7f})}, {"sizes", ints({4, 3})}};
  const Tensor d = m.run1();
  RefResize crop;
  crop.ctm = "tf_crop_and_resize";
  crop.extrapolation = 10.0;
  expect_close(d, crop.run(to_double(xv), x.shape(), Shape{2, 3, 4, 3}, {1, 1, 4.0 / 5.0, 3.0 / 4.0},
                           {0, 0, 0.2f, -0.3f}, {1, 1, 1.1f, 0.7f}));
}

TEST(ImageResize, KeepAspectRatioPolicy) {
  const std::vector<float> xv = random_floats(15, 3);
  const Tensor x = floats(Shape{3, 5}, xv);
  const Tensor sz = ints({6, 6});
  RefResize ref;
  // not_larger: scale = min(6/3, 6/5) = 1.2 -> [round(3.6), round(6)] = [4, 6].
  const Tensor a =
      resize_model(x, {a_str("mode", "linear"), a_str("keep_aspect_ratio_policy", "not_larger")}, nullptr, &sz).run1();
  ASSERT_EQ(a.shape(), (Shape{4, 6}));
  expect_close(a, ref.run(to_double(xv), x.shape(), a.shape(), {1.2, 1.2}));
  // not_smaller: scale = max(2, 1.2) = 2 -> [6, 10].
  const Tensor b =
      resize_model(x, {a_str("mode", "linear"), a_str("keep_aspect_ratio_policy", "not_smaller")}, nullptr, &sz).run1();
  ASSERT_EQ(b.shape(), (Shape{6, 10}));
  expect_close(b, ref.run(to_double(xv), x.shape(), b.shape(), {2.0, 2.0}));
  // With axes: the other dims are not resized.
  const Tensor x4 = floats(Shape{1, 1, 3, 5}, xv);
  const Tensor c =
      resize_model(x4,
                   {a_str("mode", "nearest"), a_str("keep_aspect_ratio_policy", "not_larger"), a_ints("axes", {2, 3})},
                   nullptr, &sz)
          .run1();
  EXPECT_EQ(c.shape(), (Shape{1, 1, 4, 6}));
  // keep_aspect_ratio_policy does not exist before opset 18: an attribute Resize-13 does not
  // declare, which the loader refuses (as ONNX Runtime does).
  try {
    resize_model(x, {a_str("mode", "linear"), a_str("keep_aspect_ratio_policy", "not_larger")}, nullptr, &sz, 13).run1();
    ADD_FAILURE() << "Resize-13 took keep_aspect_ratio_policy";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'keep_aspect_ratio_policy' is not an attribute of Resize-13"), std::string::npos)
        << e.what();
  }
}

TEST(ImageResize, HalfPixelSymmetric) {
  const std::vector<float> xv = random_floats(4 * 5, 4);
  const Tensor x = floats(Shape{1, 1, 4, 5}, xv);
  const Tensor sc = scales_of({1, 1, 0.6f, 2.3f});
  RefResize ref;
  ref.ctm = "half_pixel_symmetric";
  for (const char* mode : {"linear", "cubic"}) {
    ref.mode = mode;
    const Tensor y =
        resize_model(x, {a_str("mode", mode), a_str("coordinate_transformation_mode", "half_pixel_symmetric")}, &sc,
                     nullptr)
            .run1();
    ASSERT_EQ(y.shape(), (Shape{1, 1, 2, 11}));
    expect_close(y, ref.run(to_double(xv), x.shape(), y.shape(), {1, 1, 0.6f, 2.3f}));
  }
}

TEST(ImageResize, EveryModeAndTransformMatchesReference) {
  const std::vector<float> xv = random_floats(3 * 6 * 7, 5);
  const Tensor x = floats(Shape{3, 6, 7}, xv);
  const std::vector<float> s = {1.0f, 1.7f, 0.65f};
  const Tensor sc = scales_of(s);
  for (const char* ctm : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"})
    for (const char* mode : {"nearest", "linear", "cubic"})
      for (const char* nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
        if (std::string(mode) != "nearest" && std::string(nm) != "round_prefer_floor") continue;
        RefResize ref;
        ref.ctm = ctm;
        ref.mode = mode;
        ref.nearest = nm;
        ref.a = -0.5;
        const Tensor y = resize_model(x,
                                      {a_str("mode", mode), a_str("coordinate_transformation_mode", ctm),
                                       a_str("nearest_mode", nm), a_float("cubic_coeff_a", -0.5f)},
                                      &sc, nullptr)
                             .run1();
        ASSERT_EQ(y.shape(), (Shape{3, 10, 4})) << ctm << " " << mode;
        SCOPED_TRACE(std::string(ctm) + " " + mode + " " + nm);
        expect_close(y, ref.run(to_double(xv), x.shape(), y.shape(), {s[0], s[1], s[2]}));
      }
}

TEST(ImageResize, LargeParallelMatchesSerial) {
  const std::vector<float> xv = random_floats(2 * 3 * 61 * 83, 6);
  const Tensor x = floats(Shape{2, 3, 61, 83}, xv);
  const Tensor sc = scales_of({1, 1, 1.7f, 0.55f});
  OpModel m = resize_model(x, {a_str("mode", "cubic"), a_int("antialias", 1)}, &sc, nullptr);
  const Tensor a = m.run1();
  m.threads = 4;
  const Tensor b = m.run1();
  ASSERT_EQ(a.shape(), (Shape{2, 3, 103, 45}));
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]);
  RefResize ref;
  ref.mode = "cubic";
  ref.antialias = true;
  expect_close(a, ref.run(to_double(xv), x.shape(), a.shape(), {1, 1, 1.7f, 0.55f}));
}

TEST(ImageResize, IntegerBoolAndStringTypes) {
  const std::vector<uint8_t> xv = {0, 255, 10, 200, 7, 3};
  const Tensor x = Tensor::from_vector<uint8_t>(Shape{1, 2, 3}, xv);
  const Tensor sc = scales_of({1, 2, 1.5f});
  RefResize ref;
  ref.mode = "cubic";
  const Tensor y = resize_model(x, {a_str("mode", "cubic")}, &sc, nullptr).run1();
  ASSERT_EQ(y.dtype(), DType::kUInt8);
  const std::vector<double> want = ref.run({0, 255, 10, 200, 7, 3}, x.shape(), y.shape(), {1, 2, 1.5});
  for (int64_t i = 0; i < y.numel(); ++i)  // rounded and saturated
    EXPECT_EQ(y.data<uint8_t>()[i], static_cast<uint8_t>(std::clamp(std::round(want[i]), 0.0, 255.0))) << i;
  Tensor s(DType::kString, Shape{2, 2});
  const char* words[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; ++i) s.data<std::string>()[i] = words[i];
  const Tensor sc2 = scales_of({1.5f, 2.0f});
  const Tensor t = resize_model(s,
                                {a_str("mode", "nearest"), a_str("coordinate_transformation_mode", "asymmetric"),
                                 a_str("nearest_mode", "floor")},
                                &sc2, nullptr)
                       .run1();
  ASSERT_EQ(t.shape(), (Shape{3, 4}));
  const char* want_s[] = {"a", "a", "b", "b", "a", "a", "b", "b", "c", "c", "d", "d"};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(t.data<std::string>()[i], want_s[i]) << i;
  EXPECT_THROW(resize_model(s, {a_str("mode", "linear")}, &sc2, nullptr).run1(), Error);
}

TEST(ImageResize, InferredShapeIsExactAtLoad) {
  const Tensor x = floats(Shape{1, 3, 10, 10}, std::vector<float>(300, 1.0f));
  const Tensor sc = scales_of({1, 1, 0.35f, 2.5f});
  const Session s = resize_model(x, {a_str("mode", "linear")}, &sc, nullptr).session();
  ASSERT_TRUE(s.outputs()[0].has_shape);
  EXPECT_EQ(s.outputs()[0].shape, (std::vector<int64_t>{1, 3, 3, 25}));
}

TEST(ImageResize, ErrorsNameTheProblem) {
  const Tensor x = floats(Shape{1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor sc = scales_of({1, 1, 2, 2});
  const Tensor sz = ints({1, 1, 4, 4});
  try {
    resize_model(x, {}, &sc, &sz).run1();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("both 'scales' and 'sizes'"), std::string::npos) << e.what();
  }
  const Tensor bad = scales_of({1, 1, -2, 2});
  try {
    resize_model(x, {}, &bad, nullptr).run1();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scales[2]"), std::string::npos) << e.what();
  }
  try {
    resize_model(x, {a_str("coordinate_transformation_mode", "diagonal")}, &sc, nullptr).run1();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("coordinate_transformation_mode"), std::string::npos) << e.what();
  }
}

TEST(ImageUpsample, Opset7AttributeAndOpset9Input) {
  const Tensor x = floats(Shape{1, 1, 2, 2}, {1, 2, 3, 4});
  OpModel m;
  m.opset = 7;
  m.feeds = {{"x", x}};
  m.op = {"Upsample", {"x"}, {a_str("mode", "nearest"), a_floats("scales", {1, 1, 2, 3})}};
  const Tensor a = m.run1();
  ASSERT_EQ(a.shape(), (Shape{1, 1, 4, 6}));
  expect_close(a, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  OpModel l;
  l.opset = 9;
  l.feeds = {{"x", x}};
  l.consts = {{"s", scales_of({1, 1, 2, 2})}};
  l.op = {"Upsample", {"x", "s"}, {a_str("mode", "linear")}};
  const Tensor b = l.run1();
  RefResize ref;
  ref.ctm = "asymmetric";
  expect_close(b, ref.run({1, 2, 3, 4}, x.shape(), b.shape(), {1, 1, 2, 2}));
  l.opset = 10;  // deprecated
  EXPECT_THROW(l.run1(), Error);
}

// ---------------------------------------------------------------------------------------------
// GridSample

namespace {

struct RefGrid {
  std::string mode = "linear", padding = "zeros";
  bool align = false;

  static double reflect(double x, double lo, double hi) {
    const double rng = hi - lo;
    if (rng <= 0) return lo;
    if (x < lo) {
      const double dx = lo - x;
      const int64_t n = static_cast<int64_t>(dx / rng);
      const double r = dx - n * rng;
      return n % 2 == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
      const double dx = x - hi;
      const int64_t n = static_cast<int64_t>(dx / rng);
      const double r = dx - n * rng;
      return n % 2 == 0 ? hi - r : lo + r;
    }
    return x;
  }
  double lo(int64_t d) const { return align ? 0.0 : -0.5; }
  double hi(int64_t d) const { return align ? d - 1.0 : d - 0.5; }
  // Value of the N-d array `x` (dims) at integer position `i` with padding.
  double pixel(const std::vector<double>& x, const Shape& dims, const std::vector<int64_t>& i) const {
    int64_t off = 0;
    for (size_t k = 0; k < dims.size(); ++k) {
      int64_t v = i[k];
      const int64_t d = dims[k];
      if (padding == "zeros") {
        if (v < 0 || v >= d) return 0.0;
      } else if (padding == "border") {
        v = std::clamp<int64_t>(v, 0, d - 1);
      } else {
        v = static_cast<int64_t>(reflect(static_cast<double>(v), lo(d), hi(d)));
      }
      off = off * d + v;
    }
    return x[off];
  }
  double cubic(double t) const {
    const double a = -0.75;
    t = std::fabs(t);
    if (t <= 1) return (a + 2) * t * t * t - (a + 3) * t * t + 1;
    if (t < 2) return a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a;
    return 0;
  }
  // Recursive N-linear / N-cubic interpolation (dims outermost first).
  double interp(const std::vector<double>& x, const Shape& dims, const std::vector<double>& c, std::vector<int64_t>& at,
                size_t k) const {
    if (k == dims.size()) return pixel(x, dims, at);
    const double f = std::floor(c[k]), t = c[k] - f;
    const int64_t x0 = static_cast<int64_t>(f);
    double sum = 0;
    if (mode == "linear") {
      at[k] = x0;
      sum += (1 - t) * interp(x, dims, c, at, k + 1);
      at[k] = x0 + 1;
      sum += t * interp(x, dims, c, at, k + 1);
    } else {
      const double w[4] = {cubic(t + 1), cubic(t), cubic(1 - t), cubic(2 - t)};
      for (int j = 0; j < 4; ++j) {
        at[k] = x0 - 1 + j;
        sum += w[j] * interp(x, dims, c, at, k + 1);
      }
    }
    return sum;
  }
  // X [N, C, dims...], grid [N, out..., r] -> Y [N, C, out...].
  std::vector<double> run(const std::vector<double>& X, const Shape& xs, const std::vector<double>& G,
                          const Shape& gs) const {
    const size_t r = xs.size() - 2;
    Shape dims;
    int64_t S = 1, P = 1;
    for (size_t k = 0; k < r; ++k) dims.push_back(xs[k + 2]), S *= xs[k + 2], P *= gs[k + 1];
    std::vector<double> Y(static_cast<size_t>(xs[0] * xs[1] * P));
    for (int64_t n = 0; n < xs[0]; ++n)
      for (int64_t c = 0; c < xs[1]; ++c) {
        std::vector<double> plane(X.begin() + (n * xs[1] + c) * S, X.begin() + (n * xs[1] + c + 1) * S);
        for (int64_t p = 0; p < P; ++p) {
          std::vector<double> co(r);
          for (size_t k = 0; k < r; ++k) {
            const double g = G[(n * P + p) * r + (r - 1 - k)];
            const double d = static_cast<double>(dims[k]);
            double v = align ? (g + 1) / 2 * (d - 1) : ((g + 1) * d - 1) / 2;
            if (mode == "nearest") v = std::nearbyint(v);
            if (v < lo(dims[k]) || v > hi(dims[k])) {
              if (padding == "border")
                v = std::clamp(v, 0.0, d - 1);
              else if (padding == "reflection")
                v = reflect(v, lo(dims[k]), hi(dims[k]));
            }
            co[k] = v;
          }
          std::vector<int64_t> at(r);
          double out;
          if (mode == "nearest") {
            for (size_t k = 0; k < r; ++k) at[k] = static_cast<int64_t>(co[k]);
            out = pixel(plane, dims, at);
          } else {
            out = interp(plane, dims, co, at, 0);
          }
          Y[(n * xs[1] + c) * P + p] = out;
        }
      }
    return Y;
  }
};

OpModel grid_model(const Tensor& x, const Tensor& grid, std::vector<Attr> attrs, int64_t opset = 20) {
  OpModel m;
  m.opset = opset;
  m.feeds = {{"x", x}, {"grid", grid}};
  m.op = {"GridSample", {"x", "grid"}, std::move(attrs)};
  return m;
}

}  // namespace

TEST(ImageGridSample, VolumetricAndOneDimensionalMatchReference) {
  // 5-D (3 spatial dims) and 3-D (1 spatial dim) inputs are new in opset 20.
  const Shape xs{2, 2, 3, 4, 5}, gs{2, 2, 3, 4, 3};
  const std::vector<float> xv = random_floats(xs.numel(), 7);
  const std::vector<float> gv = random_floats(gs.numel(), 8, -1.4f, 1.4f);
  const Shape xs1{1, 3, 6}, gs1{1, 7, 1};
  const std::vector<float> xv1 = random_floats(xs1.numel(), 9);
  const std::vector<float> gv1 = random_floats(gs1.numel(), 10, -2.5f, 2.5f);
  for (const char* mode : {"linear", "nearest", "cubic"})
    for (const char* pad : {"zeros", "border", "reflection"})
      for (int align : {0, 1}) {
        SCOPED_TRACE(std::string(mode) + " " + pad + " align=" + std::to_string(align));
        RefGrid ref{mode, pad, align != 0};
        const std::vector<Attr> at = {a_str("mode", mode), a_str("padding_mode", pad), a_int("align_corners", align)};
        const Tensor y = grid_model(floats(xs, xv), floats(gs, gv), at).run1();
        ASSERT_EQ(y.shape(), (Shape{2, 2, 2, 3, 4}));
        expect_close(y, ref.run(to_double(xv), xs, to_double(gv), gs));
        const Tensor y1 = grid_model(floats(xs1, xv1), floats(gs1, gv1), at).run1();
        ASSERT_EQ(y1.shape(), (Shape{1, 3, 7}));
        expect_close(y1, ref.run(to_double(xv1), xs1, to_double(gv1), gs1));
      }
}

TEST(ImageGridSample, ModeNamesDependOnTheOpset) {
  const Shape xs{1, 1, 3, 3}, gs{1, 2, 2, 2};
  const std::vector<float> xv = random_floats(9, 11), gv = random_floats(8, 12, -1, 1);
  const Tensor a = grid_model(floats(xs, xv), floats(gs, gv), {a_str("mode", "bicubic")}, 16).run1();
  const Tensor b = grid_model(floats(xs, xv), floats(gs, gv), {a_str("mode", "cubic")}, 20).run1();
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_FLOAT_EQ(a.data<float>()[i], b.data<float>()[i]);
  EXPECT_THROW(grid_model(floats(xs, xv), floats(gs, gv), {a_str("mode", "linear")}, 16).run1(), Error);
  EXPECT_THROW(grid_model(floats(xs, xv), floats(gs, gv), {a_str("mode", "bilinear")}, 20).run1(), Error);
  // Opset 16 is 4-D only.
  EXPECT_THROW(grid_model(floats(Shape{1, 1, 4}, {1, 2, 3, 4}), floats(Shape{1, 2, 1}, {0, 1}), {}, 16).run1(), Error);
}

TEST(ImageGridSample, IntegerInputAndDoubleGrid) {
  const Tensor x = Tensor::from_vector<int32_t>(Shape{1, 1, 2, 2}, {0, 10, 20, 31});
  const Tensor g = Tensor::from_vector<double>(Shape{1, 1, 2, 2}, {0.0, 0.0, 0.5, -0.5});
  const Tensor y = grid_model(x, g, {a_int("align_corners", 1)}).run1();
  ASSERT_EQ(y.dtype(), DType::kInt32);
  // (0,0) -> mean of the four = 15.25 -> 15; (x=0.75, y=0.25) -> 14.5 + ... computed below.
  RefGrid ref{"linear", "zeros", true};
  const std::vector<double> want = ref.run({0, 10, 20, 31}, x.shape(), {0.0, 0.0, 0.5, -0.5}, g.shape());
  for (int i = 0; i < 2; ++i) EXPECT_EQ(y.data<int32_t>()[i], static_cast<int32_t>(std::round(want[i])));
}

// ---------------------------------------------------------------------------------------------
// AffineGrid

TEST(ImageAffineGrid, TwoDimensionalIdentity) {
  const Tensor theta = floats(Shape{1, 2, 3}, {1, 0, 0, 0, 1, 0});
  for (int align : {0, 1}) {
    OpModel m;
    m.opset = 20;
    m.feeds = {{"theta", theta}};
    m.consts = {{"size", ints({1, 1, 2, 3})}};
    m.op = {"AffineGrid", {"theta", "size"}, {a_int("align_corners", align)}, {"grid"}};
    const Tensor g = m.run1();
    ASSERT_EQ(g.shape(), (Shape{1, 2, 3, 2}));
    const std::vector<double> xs = align ? std::vector<double>{-1, 0, 1} : std::vector<double>{-2.0 / 3, 0, 2.0 / 3};
    const std::vector<double> ys = align ? std::vector<double>{-1, 1} : std::vector<double>{-0.5, 0.5};
    std::vector<double> want;
    for (double y : ys)
      for (double x : xs) want.push_back(x), want.push_back(y);
    expect_close(g, want, 1e-6);
  }
}

TEST(ImageAffineGrid, ThreeDimensionalGeneralTheta) {
  const std::vector<float> t = random_floats(2 * 12, 13, -1, 1);
  const Tensor theta = floats(Shape{2, 3, 4}, t);
  OpModel m;
  m.opset = 20;
  m.feeds = {{"theta", theta}};
  m.consts = {{"size", ints({2, 5, 2, 3, 4})}};
  m.op = {"AffineGrid", {"theta", "size"}, {}, {"grid"}};
  const Tensor g = m.run1();
  ASSERT_EQ(g.shape(), (Shape{2, 2, 3, 4, 3}));
  std::vector<double> want;
  auto base = [](int64_t i, int64_t n) { return -1.0 + (2.0 * i + 1.0) / n; };
  for (int n = 0; n < 2; ++n)
    for (int d = 0; d < 2; ++d)
      for (int h = 0; h < 3; ++h)
        for (int w = 0; w < 4; ++w) {
          const double p[4] = {base(w, 4), base(h, 3), base(d, 2), 1.0};
          for (int r = 0; r < 3; ++r) {
            double acc = 0;
            for (int c = 0; c < 4; ++c) acc += t[n * 12 + r * 4 + c] * p[c];
            want.push_back(acc);
          }
        }
  expect_close(g, want, 1e-5);
}

TEST(ImageAffineGrid, FeedsGridSample) {
  // An identity affine grid with align_corners samples the input back exactly.
  const std::vector<float> xv = random_floats(2 * 3 * 4 * 5, 14);
  const Tensor x = floats(Shape{2, 3, 4, 5}, xv);
  const Tensor theta = floats(Shape{2, 2, 3}, {1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0});
  ProtoWriter g;
  g.bytes(1, encode_node({"AffineGrid", {"theta", "size"}, {a_int("align_corners", 1)}, {"grid"}}));
  g.bytes(1, encode_node({"GridSample", {"x", "grid"}, {a_int("align_corners", 1)}, {"y"}}));
  g.bytes(2, "g");
  g.bytes(5, encode_tensor_proto(ints({2, 3, 4, 5}), "size"));
  g.bytes(11, GraphSpec::encode_value_info(value_spec("x", DType::kFloat, {2, 3, 4, 5})));
  g.bytes(11, GraphSpec::encode_value_info(value_spec("theta", DType::kFloat, {2, 2, 3})));
  g.bytes(12, GraphSpec::encode_value_info(value_spec("y", DType::kFloat, {2, 3, 4, 5})));
  ProtoWriter m;
  m.varint(1, 9);
  m.bytes(7, g.str());
  ProtoWriter os;
  os.bytes(1, "");
  os.varint(2, 20);
  m.bytes(8, os.str());
  const std::string bytes = m.take();
  Session s = Session::builder().with_intra_threads(1).commit_from_memory(bytes.data(), bytes.size());
  const Tensor y = s.run({{"x", Value(x)}, {"theta", Value(theta)}})[0].tensor();
  expect_close(y, to_double(xv), 1e-5);
}

// ---------------------------------------------------------------------------------------------
// MaxUnpool

TEST(ImageMaxUnpool, IndicesAddressTheOutputShape) {
  // MaxPool(kernel 2, stride 2) over a 5x5 input picks (1,1), (1,3), (3,1), (3,3): flat indices
  // 6, 8, 16, 18 of the 5x5 input. MaxUnpool with output_shape [1,1,5,5] puts them back there
  // (onnxruntime's and PyTorch's semantics; see onnx/onnx#2398).
  OpModel m;
  m.opset = 11;
  m.feeds = {{"x", floats(Shape{1, 1, 2, 2}, {5, 6, 7, 8})}};
  m.consts = {{"i", Tensor::from_vector<int64_t>(Shape{1, 1, 2, 2}, {6, 8, 16, 18})}, {"shape", ints({1, 1, 5, 5})}};
  m.op = {"MaxUnpool", {"x", "i", "shape"}, {a_ints("kernel_shape", {2, 2}), a_ints("strides", {2, 2})}};
  const Tensor y = m.run1();
  ASSERT_EQ(y.shape(), (Shape{1, 1, 5, 5}));
  std::vector<double> want(25, 0.0);
  want[6] = 5, want[8] = 6, want[16] = 7, want[18] = 8;
  expect_close(y, want);
  m.consts[0].second = Tensor::from_vector<int64_t>(Shape{1, 1, 2, 2}, {6, 8, 16, 25});
  try {
    m.run1();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("I[3] = 25 is out of range"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// Hostile values: never read out of bounds, fail with a message instead.

TEST(ImageHostile, GridSampleNonFiniteAndHugeCoordinates) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = floats(Shape{1, 2, 3, 4}, random_floats(24, 15));
  const Tensor g = floats(Shape{1, 2, 3, 2}, {nan, 0.f, inf, -inf, 1e30f, -1e30f, -inf, 0.5f, 3.5f, -7.25f, 1e9f, 1e-9f});
  for (const char* mode : {"linear", "nearest", "cubic"})
    for (const char* pad : {"zeros", "border", "reflection"})
      for (int align : {0, 1}) {
        const Tensor y = grid_model(x, g, {a_str("mode", mode), a_str("padding_mode", pad), a_int("align_corners", align)}).run1();
        ASSERT_EQ(y.shape(), (Shape{1, 2, 2, 3}));
        for (int64_t i = 0; i < y.numel(); ++i) EXPECT_TRUE(std::isfinite(y.data<float>()[i])) << mode << pad << i;
      }
}

TEST(ImageHostile, ResizeExtremeScalesAndRoi) {
  const Tensor x = floats(Shape{1, 1, 3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor tiny = scales_of({1, 1, 1e-7f, 1.0f});
  EXPECT_EQ(resize_model(x, {a_str("mode", "cubic"), a_int("antialias", 1)}, &tiny, nullptr).run1().shape(), (Shape{1, 1, 0, 2}));
  const Tensor big = scales_of({1, 1, 1, 3000.0f});
  const Tensor y = resize_model(x, {a_str("mode", "cubic"), a_int("exclude_outside", 1)}, &big, nullptr).run1();
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 6000}));
  OpModel m = resize_model(x, {a_str("mode", "linear"), a_str("coordinate_transformation_mode", "tf_crop_and_resize")}, nullptr, nullptr);
  m.op.inputs = {"x", "roi", "", "sizes"};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  m.consts = {{"roi", scales_of({0, 0, nan, -1e30f, 1, 1, 1e30f, 2})}, {"sizes", ints({1, 1, 4, 4})}};
  const Tensor c = m.run1();
  EXPECT_EQ(c.shape(), (Shape{1, 1, 4, 4}));
  m.consts[0].second = scales_of({0, 0, 1, 1});  // wrong length
  EXPECT_THROW(m.run1(), Error);
}

TEST(ImageHostile, RoiAlignAndNmsBadInputs) {
  OpModel m;
  m.opset = 16;
  m.feeds = {{"x", floats(Shape{1, 1, 4, 4}, iota_floats(16))}};
  m.consts = {{"rois", floats(Shape{2, 4}, {-100, -100, -50, -50, 1, 1, 1e6f, 2})},
              {"b", Tensor::from_vector<int64_t>(Shape{2}, {0, 0})}};
  m.op = {"RoiAlign", {"x", "rois", "b"}, {a_int("output_height", 2), a_int("output_width", 2), a_int("sampling_ratio", 2)}};
  const Tensor y = m.run1();
  EXPECT_EQ(y.shape(), (Shape{2, 1, 2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data<float>()[i], 0.0f);  // entirely outside
  m.consts[1].second = Tensor::from_vector<int64_t>(Shape{2}, {0, 1});
  try {
    m.run1();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch_indices[1] = 1 is out of range"), std::string::npos) << e.what();
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  OpModel n;
  n.opset = 11;
  n.feeds = {{"boxes", floats(Shape{1, 3, 4}, {0, 0, 1, 1, 0, 0, 1, 1, nan, 0, 1, 1})},
             {"scores", floats(Shape{1, 1, 3}, {0.9f, nan, 0.8f})}};
  n.consts = {{"max", Tensor::from_vector<int64_t>(Shape{1}, {10})}, {"iou", scales_of({0.5f})}};
  n.op = {"NonMaxSuppression", {"boxes", "scores", "max", "iou"}, {}};
  const Tensor sel = n.run1();
  ASSERT_EQ(sel.shape(), (Shape{2, 3}));  // the NaN score is skipped; the NaN box is never suppressed
  EXPECT_EQ(sel.data<int64_t>()[2], 0);
  EXPECT_EQ(sel.data<int64_t>()[5], 2);
}
