// The CPU EP's float32 convolution paths (depthwise with vectors across channels, im2col blocks
// built inside the GEMM) and vector MaxPool against the reference loops they replace for other
// types: the same model run in double. The float32 runs are made with the CPU EP channels-first
// and again channels-last (its default, kernels/conv_nhwc.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/vmath.hpp"
#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

/// The runs each case compares: float32 channels-first, float32 channels-last, double (the reference).
constexpr std::pair<DType, bool> kVariants[] = {{DType::kFloat, false}, {DType::kFloat, true}, {DType::kDouble, false}};

template <class T>
Tensor filled(DType dt, const Shape& s, uint32_t seed) {
  Tensor t(dt, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(d(rng));
  return t;
}

struct DwCase {
  const char* what;
  Shape x;  // [N, C, H, W]
  int64_t kh, kw;
  std::vector<AttrSpec> attrs;
  const char* act = nullptr;  // "Relu" / "Clip": fused into the float convolution by the optimizer
};

std::vector<double> run_case(const DwCase& c, DType dt, bool nhwc) {
  const int64_t C = c.x[1];
  GraphSpec g;
  std::vector<AttrSpec> attrs = c.attrs;
  attrs.push_back(attr_int("group", C));
  g.nodes.push_back({"Conv", {"x", "w", "b"}, {c.act ? "c" : "y"}, attrs, "dw"});
  if (c.act && std::string(c.act) == "Relu") g.nodes.push_back({"Relu", {"c"}, {"y"}, {}, "act"});
  if (c.act && std::string(c.act) == "Clip") g.nodes.push_back({"Clip", {"c", "lo", "hi"}, {"y"}, {}, "act"});
  g.inputs.push_back({"x", dt, std::vector<int64_t>(c.x.begin(), c.x.end())});
  g.outputs.push_back({"y", dt, {}, {}, true});
  const bool f = dt == DType::kFloat;
  g.initializers.emplace_back("w", f ? filled<float>(dt, Shape{C, 1, c.kh, c.kw}, 2) : filled<double>(dt, Shape{C, 1, c.kh, c.kw}, 2));
  g.initializers.emplace_back("b", f ? filled<float>(dt, Shape{C}, 3) : filled<double>(dt, Shape{C}, 3));
  g.initializers.emplace_back("lo", f ? Tensor::scalar<float>(-0.25f) : Tensor::scalar<double>(-0.25));
  g.initializers.emplace_back("hi", f ? Tensor::scalar<float>(0.5f) : Tensor::scalar<double>(0.5));
  const std::string m = encode_model(g, 13);
  Session s = Session::builder()
                      .with_intra_threads(1)
                      .with_execution_providers({ep::CPU().with_prefer_nhwc(nhwc).build()})
                      .commit_from_memory(m.data(), m.size());
  const Tensor x = f ? filled<float>(dt, c.x, 1) : filled<double>(dt, c.x, 1);
  const Tensor y = s.run({{"x", Value(x)}})[0].tensor();
  std::vector<double> r(static_cast<size_t>(y.numel()));
  for (int64_t i = 0; i < y.numel(); ++i) r[i] = f ? y.data<float>()[i] : y.data<double>()[i];
  if (f && c.act) {
    size_t fused = 0;
    for (const auto& p : s.placement().nodes) fused += p.op_type == "FusedConv";
    EXPECT_EQ(fused, 1u) << c.what;
  }
  return r;
}

}  // namespace

TEST(CpuConv, DepthwiseMatchesTheReferenceLoop) {
  const DwCase cases[] = {
      {"3x3 stride 1 pad 1, 4 vectors per row", Shape{1, 3, 56, 56}, 3, 3, {attr_ints("pads", {1, 1, 1, 1})}, "Clip"},
      {"3x3 stride 2 on an odd width", Shape{2, 4, 13, 13}, 3, 3, {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}, "Relu"},
      {"5x5 stride 2 asymmetric pads", Shape{1, 2, 20, 37}, 5, 5, {attr_ints("pads", {0, 2, 2, 1}), attr_ints("strides", {2, 2})}},
      {"3x3 stride 3 dilation 2", Shape{1, 2, 30, 41}, 3, 3, {attr_ints("strides", {3, 3}), attr_ints("dilations", {2, 2}), attr_ints("pads", {2, 2, 2, 2})}},
      {"3x1 kernel, strides 1 x 2", Shape{1, 3, 9, 70}, 3, 1, {attr_ints("strides", {1, 2}), attr_ints("pads", {1, 0, 1, 0})}},
      {"1x7 kernel, width 5 (pads wider than the row)", Shape{1, 2, 4, 5}, 1, 7, {attr_ints("pads", {0, 4, 0, 4})}},
      {"SAME_UPPER stride 2 on an even size", Shape{1, 2, 16, 16}, 4, 4, {attr_string("auto_pad", "SAME_UPPER"), attr_ints("strides", {2, 2})}},
      {"9x9 (more taps than the vector kernel keeps)", Shape{1, 2, 12, 12}, 9, 9, {attr_ints("pads", {4, 4, 4, 4})}},
      // Channel blocks of 16: whole blocks plus a partial one, small planes, several bands.
      {"40 channels (16 + 16 + 8), 7x7 plane", Shape{2, 40, 7, 7}, 3, 3, {attr_ints("pads", {1, 1, 1, 1})}, "Clip"},
      {"17 channels, 14x14 stride 2", Shape{1, 17, 14, 14}, 3, 3, {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}, "Relu"},
      {"120x120 stride 2 (many bands of rows)", Shape{1, 16, 120, 120}, 3, 3, {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}},
      {"right columns no window reads, 2x3 kernel", Shape{1, 33, 9, 10}, 2, 3, {attr_ints("strides", {2, 2})}},
      {"3x3 dilation 3, pads 0 3 2 1", Shape{1, 20, 25, 31}, 3, 3, {attr_ints("dilations", {3, 3}), attr_ints("pads", {0, 3, 2, 1})}},
      // Wide planes: odd widths, pads 0 to 2 and asymmetric, many bands.
      {"3x3 stride 1, width 29, 40 rows", Shape{2, 3, 40, 29}, 3, 3, {attr_ints("pads", {1, 1, 1, 1})}, "Clip"},
      {"3x3 stride 1 no pads, width 30", Shape{1, 2, 18, 30}, 3, 3, {}, "Relu"},
      {"3x3 stride 1 pads 2 0 0 2", Shape{1, 2, 21, 33}, 3, 3, {attr_ints("pads", {2, 0, 0, 2})}},
      {"3x3 stride 2, width 61, pads 0 1 1 0", Shape{1, 3, 35, 61}, 3, 3, {attr_ints("pads", {0, 1, 1, 0}), attr_ints("strides", {2, 2})}, "Relu"},
      {"3x3 stride 2, width 112, pads 1", Shape{1, 2, 112, 112}, 3, 3, {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}, "Clip"},
      {"3x3 stride 2, width 57 pads 2", Shape{1, 2, 9, 57}, 3, 3, {attr_ints("pads", {2, 2, 2, 2}), attr_ints("strides", {2, 2})}},
  };
  for (const DwCase& c : cases) {
    const std::vector<double> want = run_case(c, DType::kDouble, false);
    for (bool nhwc : {false, true}) {  // the float32 kernel channels-first and channels-last
      const std::vector<double> got = run_case(c, DType::kFloat, nhwc);
      ASSERT_EQ(got.size(), want.size()) << c.what;
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-5) << c.what << (nhwc ? " NHWC" : "") << " at " << i;
    }
  }
}

TEST(CpuVmath, TanhWithinAMillionthOfTheLibrary) {
  // The series below |x| = 0.1 and the exponential form above, their seam, the saturation,
  // infinities, signed zero and NaN, against std::tanh in double.
  using namespace onyx::cpu::vmath;
  std::vector<float> xs;
  for (double x = -12; x <= 12; x += 0.0173) xs.push_back(static_cast<float>(x));
  for (float x : {0.0f, -0.0f, 1e-30f, -1e-20f, 0.0999999f, 0.1f, -0.1000001f, 20.0f, INFINITY, -INFINITY, NAN})
    xs.push_back(x);
  while (xs.size() % kLanes) xs.push_back(0.25f);
  for (size_t i = 0; i < xs.size(); i += kLanes) {
    float y[kLanes];
    store(y, onyx::cpu::vmath::tanh(load(&xs[i])));
    for (int l = 0; l < kLanes; ++l) {
      const double want = std::tanh(static_cast<double>(xs[i + l]));
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(y[l])) << xs[i + l];
        continue;
      }
      EXPECT_LE(std::fabs(y[l] - want), 1e-6 * std::fabs(want) + 1e-37) << xs[i + l];
    }
  }
}

TEST(CpuVmath, TransposeInRegistersMatchesTheDefinition) {
  using namespace onyx::cpu::vmath;
  vf a[kLanes], b[kLanes];
  for (int i = 0; i < kLanes; ++i) {
    float row[kLanes];
    for (int j = 0; j < kLanes; ++j) row[j] = static_cast<float>(i * 100 + j);
    a[i] = b[i] = load(row);
  }
  transpose(a);
  transpose_scalar(b);
  for (int i = 0; i < kLanes; ++i)
    for (int j = 0; j < kLanes; ++j) {
      ASSERT_EQ(a[i][j], static_cast<float>(j * 100 + i)) << i << "," << j;
      ASSERT_EQ(b[i][j], a[i][j]) << i << "," << j;
    }
  // Partial loads and stores touch only their n lanes.
  float src[kLanes + 1], dst[kLanes + 1];
  for (int i = 0; i <= kLanes; ++i) src[i] = static_cast<float>(i + 1), dst[i] = -1.0f;
  const vf v = load_n(src, 5);
  for (int j = 0; j < kLanes; ++j) ASSERT_EQ(v[j], j < 5 ? src[j] : 0.0f) << j;
  store_n(dst, v, 3);
  for (int j = 0; j <= kLanes; ++j) ASSERT_EQ(dst[j], j < 3 ? src[j] : -1.0f) << j;
}

TEST(CpuPool, VectorMaxPoolMatchesTheReferenceLoop) {
  struct Case {
    const char* what;
    Shape x;
    std::vector<AttrSpec> attrs;
  };
  const Case cases[] = {
      {"3x3 stride 2 pad 1 (ResNet's stem)", Shape{1, 3, 112, 112},
       {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})}},
      {"2x2 stride 2 on an odd size, ceil_mode", Shape{2, 2, 15, 15},
       {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)}},
      {"3x3 stride 1 dilation 2, asymmetric pads", Shape{1, 2, 20, 70},
       {attr_ints("kernel_shape", {3, 3}), attr_ints("dilations", {2, 2}), attr_ints("pads", {1, 2, 2, 0})}},
      {"1x5 stride 3", Shape{1, 2, 6, 40}, {attr_ints("kernel_shape", {1, 5}), attr_ints("strides", {1, 3})}},
  };
  for (const Case& c : cases) {
    std::vector<std::vector<double>> out;
    // float32 on the CPU EP channels-first, then channels-last (kernels/conv_nhwc.cpp), then the
    // double reference.
    for (const auto& [dt, nhwc] : kVariants) {
      GraphSpec g;
      g.nodes.push_back({"MaxPool", {"x"}, {"y"}, c.attrs, "pool"});
      g.inputs.push_back({"x", dt, std::vector<int64_t>(c.x.begin(), c.x.end())});
      g.outputs.push_back({"y", dt, {}, {}, true});
      const std::string m = encode_model(g, 13);
      Session s = Session::builder()
                      .with_intra_threads(1)
                      .with_execution_providers({ep::CPU().with_prefer_nhwc(nhwc).build()})
                      .commit_from_memory(m.data(), m.size());
      Tensor x = dt == DType::kFloat ? filled<float>(dt, c.x, 5) : filled<double>(dt, c.x, 5);
      if (dt == DType::kFloat) x.data<float>()[7] = NAN;  // propagates to every window holding it
      else x.data<double>()[7] = NAN;
      const Tensor y = s.run({{"x", Value(x)}})[0].tensor();
      std::vector<double> r(static_cast<size_t>(y.numel()));
      for (int64_t i = 0; i < y.numel(); ++i) r[i] = dt == DType::kFloat ? y.data<float>()[i] : y.data<double>()[i];
      out.push_back(std::move(r));
    }
    for (size_t v = 0; v < 2; ++v) {
      ASSERT_EQ(out[v].size(), out[2].size()) << c.what;
      size_t nans = 0;
      for (size_t i = 0; i < out[2].size(); ++i) {
        if (std::isnan(out[2][i])) {
          ASSERT_TRUE(std::isnan(out[v][i])) << c.what << " variant " << v << " at " << i;
          ++nans;
          continue;
        }
        ASSERT_NEAR(out[v][i], out[2][i], 1e-6) << c.what << " variant " << v << " at " << i;
      }
      EXPECT_GT(nans, 0u) << c.what;
    }
  }
}

TEST(CpuConv, Im2colBlocksMatchTheReferenceLoop) {
  // Regular and grouped 2-D convolutions (B built block by block inside the GEMM) and 1x1 ones
  // against the double reference loop; sizes give several column and K blocks and partial panels.
  struct Case {
    const char* what;
    Shape x, w;
    std::vector<AttrSpec> attrs;
  };
  const Case cases[] = {
      {"3x3 pad 1, K = 576 (two K blocks), 3136 positions", Shape{1, 64, 56, 56}, Shape{8, 64, 3, 3}, {attr_ints("pads", {1, 1, 1, 1})}},
      {"7x7 stride 2 pad 3 (a stem), two images", Shape{2, 3, 40, 37}, Shape{6, 3, 7, 7},
       {attr_ints("pads", {3, 3, 3, 3}), attr_ints("strides", {2, 2})}},
      {"grouped 3x3 dilation 2, asymmetric pads", Shape{1, 8, 19, 23}, Shape{6, 4, 3, 3},
       {attr_int("group", 2), attr_ints("dilations", {2, 2}), attr_ints("pads", {2, 1, 0, 2})}},
      {"1x1 stride 2 (pixels gathered, then pointwise)", Shape{1, 5, 15, 15}, Shape{7, 5, 1, 1}, {attr_ints("strides", {2, 2})}},
      {"3x3 stride 2 pad 1 on 64x61 (rows copied 16 at a time by shuffles)", Shape{1, 3, 64, 61}, Shape{8, 3, 3, 3},
       {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}},
      {"3x3 strides (1, 3), pads 1 (a stride copied element by element)", Shape{1, 3, 20, 31}, Shape{5, 3, 3, 3},
       {attr_ints("strides", {1, 3}), attr_ints("pads", {1, 1, 1, 1})}},
      {"1x1 stride 2 on 40x41 (gathered by shuffles)", Shape{1, 4, 40, 41}, Shape{6, 4, 1, 1}, {attr_ints("strides", {2, 2})}},
      {"1x1 strides (2, 3) on 14x20, 160 channels (gathered, transposed)", Shape{2, 64, 14, 20}, Shape{160, 64, 1, 1},
       {attr_ints("strides", {2, 3})}},
      {"5x3 stride (3, 1), output narrower than a panel", Shape{1, 3, 30, 9}, Shape{4, 3, 5, 3}, {attr_ints("strides", {3, 1})}},
      // Few output pixels: the transposed product, the pixels' taps gathered into A panels.
      {"3x3 pad 1 on 7x7, 64 -> 160 (transposed, K of two blocks)", Shape{1, 64, 7, 7}, Shape{160, 64, 3, 3},
       {attr_ints("pads", {1, 1, 1, 1})}},
      {"3x3 stride 2 on 14x13 -> 7x7, 96 channels, two images (transposed)", Shape{2, 32, 14, 13}, Shape{96, 32, 3, 3},
       {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}},
      {"3x2 dilation 2, pads 2 1 0 1, 160 channels (transposed)", Shape{2, 8, 9, 11}, Shape{160, 8, 3, 2},
       {attr_ints("dilations", {2, 2}), attr_ints("pads", {2, 1, 0, 1})}},
      // 1x1 over few pixels: computed transposed (pixels as rows), two images, K of two blocks.
      {"1x1 on 7x7, 600 -> 160 channels (transposed)", Shape{2, 600, 7, 7}, Shape{160, 600, 1, 1}, {}},
      {"1x1 on 14x14, 24 -> 64 channels (transposed)", Shape{1, 24, 14, 14}, Shape{64, 24, 1, 1}, {}},
      {"1x1 on 56x56, 24 -> 40 channels (not transposed)", Shape{1, 24, 56, 56}, Shape{40, 24, 1, 1}, {}},
  };
  for (const Case& c : cases) {
    std::vector<std::vector<double>> out;
    // float32 on the CPU EP channels-first, then channels-last (kernels/conv_nhwc.cpp), then the
    // double reference.
    for (const auto& [dt, nhwc] : kVariants) {
      const bool f = dt == DType::kFloat;
      GraphSpec g;
      g.nodes.push_back({"Conv", {"x", "w", "b"}, {"y"}, c.attrs, "conv"});
      g.inputs.push_back({"x", dt, std::vector<int64_t>(c.x.begin(), c.x.end())});
      g.outputs.push_back({"y", dt, {}, {}, true});
      g.initializers.emplace_back("w", f ? filled<float>(dt, c.w, 2) : filled<double>(dt, c.w, 2));
      g.initializers.emplace_back("b", f ? filled<float>(dt, Shape{c.w[0]}, 3) : filled<double>(dt, Shape{c.w[0]}, 3));
      const std::string m = encode_model(g, 13);
      Session s = Session::builder()
                      .with_intra_threads(2)
                      .with_execution_providers({ep::CPU().with_prefer_nhwc(nhwc).build()})
                      .commit_from_memory(m.data(), m.size());
      const Tensor x = f ? filled<float>(dt, c.x, 1) : filled<double>(dt, c.x, 1);
      const Tensor y = s.run({{"x", Value(x)}})[0].tensor();
      std::vector<double> r(static_cast<size_t>(y.numel()));
      for (int64_t i = 0; i < y.numel(); ++i) r[i] = f ? y.data<float>()[i] : y.data<double>()[i];
      out.push_back(std::move(r));
    }
    for (size_t v = 0; v < 2; ++v) {
      ASSERT_EQ(out[v].size(), out[2].size()) << c.what;
      for (size_t i = 0; i < out[2].size(); ++i)
        // float32 sums of up to 576 products against a double reference: 1e-4 relative to the
        // value (the summation order, and so the rounding, depends on the build's vectorisation).
        ASSERT_NEAR(out[v][i], out[2][i], 2e-4 * std::max(1.0, std::abs(out[2][i])))
            << c.what << " variant " << v << " at " << i;
    }
  }
}

TEST(CpuConv, ShiftedGemmMatchesTheReferenceLoop) {
  // Stride-1 convolutions computed as an implicit GEMM over the zero-padded input (the columns
  // past each output row computed and dropped): the bias and activation in the GEMM, or, with a
  // residual sum (Conv -> Add -> Relu, fused into onyx::FusedConvAdd), after it. And 1x1 ones
  // whose input is B read in place.
  struct Case {
    const char* what;
    Shape x, w;
    std::vector<AttrSpec> attrs;
    bool sum;
    const char* act;
  };
  const Case cases[] = {
      {"3x3 pad 1 on 56x56, 64 -> 40, Relu", Shape{1, 64, 56, 56}, Shape{40, 64, 3, 3}, {attr_ints("pads", {1, 1, 1, 1})}, false, "Relu"},
      {"3x3 pad 1 on 28x30, sum then Relu, two images", Shape{2, 16, 28, 30}, Shape{24, 16, 3, 3}, {attr_ints("pads", {1, 1, 1, 1})}, true,
       "Relu"},
      {"3x3 no pads, sum, no activation", Shape{1, 8, 20, 35}, Shape{12, 8, 3, 3}, {}, true, nullptr},
      {"5x5 dilation 2, asymmetric pads 3 1 0 4, Clip", Shape{1, 6, 25, 80}, Shape{13, 6, 5, 5},
       {attr_ints("dilations", {2, 2}), attr_ints("pads", {3, 1, 0, 4})}, false, "Clip"},
      {"3x1 kernel pads 1 0 1 0 (no dropped columns)", Shape{1, 9, 17, 19}, Shape{20, 9, 3, 1}, {attr_ints("pads", {1, 0, 1, 0})}, false,
       nullptr},
      {"3x3 pad 1 on 128x128, 8 -> 64, sum: nine bands of rows (8 x 15, 8)", Shape{1, 8, 128, 128}, Shape{64, 8, 3, 3},
       {attr_ints("pads", {1, 1, 1, 1})}, true, "Relu"},
      // Strides: the padded input split into phase planes (each a stride-1 view).
      {"7x7 stride 2 pad 3 on 64x70, 3 -> 16 (a stem), Relu", Shape{1, 3, 64, 70}, Shape{16, 3, 7, 7},
       {attr_ints("pads", {3, 3, 3, 3}), attr_ints("strides", {2, 2})}, false, "Relu"},
      {"3x3 stride 2 pad 1 on 56x57, sum", Shape{1, 16, 56, 57}, Shape{20, 16, 3, 3}, {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})},
       true, nullptr},
      {"3x3 strides (2, 1), dilation 2, pads 1 2 0 3", Shape{1, 5, 31, 40}, Shape{9, 5, 3, 3},
       {attr_ints("strides", {2, 1}), attr_ints("dilations", {2, 2}), attr_ints("pads", {1, 2, 0, 3})}, false, nullptr},
      {"5x5 stride 3 on 50x62, no pads", Shape{2, 4, 50, 62}, Shape{7, 4, 5, 5}, {attr_ints("strides", {3, 3})}, false, "Relu"},
      // 1x1 to few output channels: the input read in place as B (its last, partial panel copied).
      {"1x1 96 -> 20 on 30x33, sum then Relu, two images", Shape{2, 96, 30, 33}, Shape{20, 96, 1, 1}, {}, true, "Relu"},
      {"1x1 70 -> 24 on 9x9, Clip", Shape{1, 70, 9, 9}, Shape{24, 70, 1, 1}, {}, false, "Clip"},
      // Channels-last: a pair of column panels and a lone one; a pair whose second panel is partial.
      {"1x1 40 -> 88 on 13x14, sum then Relu", Shape{1, 40, 13, 14}, Shape{88, 40, 1, 1}, {}, true, "Relu"},
      {"3x3 pad 1, 24 -> 100 on 9x11, sum", Shape{1, 24, 9, 11}, Shape{100, 24, 3, 3}, {attr_ints("pads", {1, 1, 1, 1})}, true, nullptr},
      {"grouped 3x3 (2 groups of 10 -> 7), pad 1 on 33x40", Shape{1, 20, 33, 40}, Shape{14, 10, 3, 3},
       {attr_int("group", 2), attr_ints("pads", {1, 1, 1, 1})}, false, "Relu"},
  };
  for (const Case& c : cases) {
    std::vector<std::vector<double>> out;
    // float32 on the CPU EP channels-first, then channels-last (kernels/conv_nhwc.cpp), then the
    // double reference.
    for (const auto& [dt, nhwc] : kVariants) {
      const bool f = dt == DType::kFloat;
      GraphSpec g;
      const std::string conv_out = c.sum || c.act ? "c" : "y";
      g.nodes.push_back({"Conv", {"x", "w", "b"}, {conv_out}, c.attrs, "conv"});
      std::string last = conv_out;
      if (c.sum) {
        g.nodes.push_back({"Add", {last, "r"}, {c.act ? "s" : "y"}, {}, "add"});
        last = "s";
      }
      if (c.act && std::string(c.act) == "Relu") g.nodes.push_back({"Relu", {last}, {"y"}, {}, "act"});
      if (c.act && std::string(c.act) == "Clip") g.nodes.push_back({"Clip", {last, "lo", "hi"}, {"y"}, {}, "act"});
      g.inputs.push_back({"x", dt, std::vector<int64_t>(c.x.begin(), c.x.end())});
      g.outputs.push_back({"y", dt, {}, {}, true});
      g.initializers.emplace_back("w", f ? filled<float>(dt, c.w, 2) : filled<double>(dt, c.w, 2));
      g.initializers.emplace_back("b", f ? filled<float>(dt, Shape{c.w[0]}, 3) : filled<double>(dt, Shape{c.w[0]}, 3));
      Tensor lo(dt, Shape{}), hi(dt, Shape{});
      if (f) {
        lo.data<float>()[0] = -0.5f;
        hi.data<float>()[0] = 1.5f;
      } else {
        lo.data<double>()[0] = -0.5;
        hi.data<double>()[0] = 1.5;
      }
      g.initializers.emplace_back("lo", lo);
      g.initializers.emplace_back("hi", hi);
      const Tensor x = f ? filled<float>(dt, c.x, 1) : filled<double>(dt, c.x, 1);
      std::vector<std::pair<std::string, Value>> feeds{{"x", Value(x)}};
      if (c.sum) {
        // The residual has the convolution's output shape (a plain Conv run gives it).
        GraphSpec shape_only;
        shape_only.nodes.push_back({"Conv", {"x", "w", "b"}, {"y"}, c.attrs, "conv"});
        shape_only.inputs = g.inputs;
        shape_only.outputs.push_back({"y", dt, {}, {}, true});
        shape_only.initializers = {g.initializers[0], g.initializers[1]};
        const std::string sm = encode_model(shape_only, 13);
        const Shape y_shape = Session::builder().commit_from_memory(sm.data(), sm.size()).run({{"x", Value(x)}})[0].tensor().shape();
        g.inputs.push_back({"r", dt, std::vector<int64_t>(y_shape.begin(), y_shape.end())});
        feeds.emplace_back("r", Value(f ? filled<float>(dt, y_shape, 4) : filled<double>(dt, y_shape, 4)));
      }
      const std::string m = encode_model(g, 13);
      Session s = Session::builder()
                      .with_intra_threads(2)
                      .with_execution_providers({ep::CPU().with_prefer_nhwc(nhwc).build()})
                      .commit_from_memory(m.data(), m.size());
      const Tensor y = s.run(feeds)[0].tensor();
      std::vector<double> r(static_cast<size_t>(y.numel()));
      for (int64_t i = 0; i < y.numel(); ++i) r[i] = f ? y.data<float>()[i] : y.data<double>()[i];
      out.push_back(std::move(r));
    }
    for (size_t v = 0; v < 2; ++v) {
      ASSERT_EQ(out[v].size(), out[2].size()) << c.what;
      for (size_t i = 0; i < out[2].size(); ++i)
        ASSERT_NEAR(out[v][i], out[2][i], 2e-4 * std::max(1.0, std::abs(out[2][i])))
            << c.what << " variant " << v << " at " << i;
    }
  }
}
