// The CPU EP's channels-last kernels (kernels/conv_nhwc.cpp): every case runs float32 with the
// CPU EP channels-last (its default) and channels-first, and in double (the reference loops, which
// stay channels-first), and checks the channels-last run really used the onyx.nhwc form.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string_view>

#include "model_builder.hpp"
#include "ops/layout.hpp"
#include "session/session_impl.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

Tensor filled(DType dt, const Shape& s, uint32_t seed) {
  Tensor t(dt, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DType::kFloat)
      t.data<float>()[i] = static_cast<float>(d(rng));
    else
      t.data<double>()[i] = d(rng);
  }
  return t;
}

struct Run {
  std::vector<double> y;
  int forms = 0;  // nodes placed in domain onyx.nhwc
};

/// One op on x (and constant or, with `weights_as_input`, fed weights w and bias b).
struct Case {
  const char* what;
  const char* op;
  Shape x;  // [N, C, H, W]
  Shape w;  // Conv only: [M, C / group, KH, KW]
  std::vector<AttrSpec> attrs;
  bool bias = true;
  bool weights_as_input = false;
};

Run run(const Case& c, DType dt, bool nhwc, int threads = 1) {
  GraphSpec g;
  const bool conv = std::string(c.op) == "Conv";
  std::vector<std::string> ins{"x"};
  if (conv) {
    ins.push_back("w");
    if (c.bias) ins.push_back("b");
  }
  g.nodes.push_back({c.op, ins, {"y"}, c.attrs, "node"});
  g.inputs.push_back({"x", dt, std::vector<int64_t>(c.x.begin(), c.x.end())});
  g.outputs.push_back({"y", dt, {}, {}, true});
  std::vector<std::pair<std::string, Value>> feeds{{"x", Value(filled(dt, c.x, 1))}};
  if (conv) {
    const Tensor w = filled(dt, c.w, 2), b = filled(dt, Shape{c.w[0]}, 3);
    if (c.weights_as_input) {
      g.inputs.push_back({"w", dt, std::vector<int64_t>(c.w.begin(), c.w.end())});
      feeds.emplace_back("w", Value(w));
      if (c.bias) {
        g.inputs.push_back({"b", dt, {c.w[0]}});
        feeds.emplace_back("b", Value(b));
      }
    } else {
      g.initializers.emplace_back("w", w);
      if (c.bias) g.initializers.emplace_back("b", b);
    }
  }
  const std::string m = encode_model(g, 19);
  Session s = Session::builder()
                  .with_intra_threads(threads)
                  .with_execution_providers({ep::CPU().with_prefer_nhwc(nhwc).build()})
                  .commit_from_memory(m.data(), m.size());
  const Tensor y = s.run(feeds)[0].tensor();
  Run r;
  for (int64_t i = 0; i < y.numel(); ++i) r.y.push_back(dt == DType::kFloat ? y.data<float>()[i] : y.data<double>()[i]);
  for (const auto& p : s.placement().nodes) r.forms += p.domain == "onyx.nhwc";
  return r;
}

void check(const Case& c, bool expect_form = true, double tol = 1e-4) {
  SCOPED_TRACE(c.what);
  const Run ref = run(c, DType::kDouble, false);
  for (int threads : {1, 2}) {
    const Run last = run(c, DType::kFloat, true, threads), first = run(c, DType::kFloat, false, threads);
    EXPECT_EQ(last.forms, expect_form ? 1 : 0);
    EXPECT_EQ(first.forms, 0);
    ASSERT_EQ(last.y.size(), ref.y.size());
    ASSERT_EQ(first.y.size(), ref.y.size());
    for (size_t i = 0; i < ref.y.size(); ++i) {
      ASSERT_NEAR(last.y[i], ref.y[i], tol * (1 + std::fabs(ref.y[i]))) << "channels-last at " << i;
      ASSERT_NEAR(first.y[i], ref.y[i], tol * (1 + std::fabs(ref.y[i]))) << "channels-first at " << i;
    }
  }
}

std::vector<AttrSpec> pads(int64_t t, int64_t l, int64_t b, int64_t r) { return {attr_ints("pads", {t, l, b, r})}; }

std::vector<AttrSpec> with(std::vector<AttrSpec> a, AttrSpec extra) {
  a.push_back(std::move(extra));
  return a;
}

}  // namespace

TEST(CpuChannelsLast, ConvolutionsMatchTheReference) {
  const Case cases[] = {
      {"1x1, 20 -> 7 channels (a partial column panel)", "Conv", Shape{1, 20, 9, 11}, Shape{7, 20, 1, 1}, {}},
      {"1x1 stride 2, 24 -> 40, batch 2", "Conv", Shape{2, 24, 14, 14}, Shape{40, 24, 1, 1}, {attr_ints("strides", {2, 2})}},
      {"1x1, 16 -> 16 (half a panel) on 56x56", "Conv", Shape{1, 16, 56, 56}, Shape{16, 16, 1, 1}, {}, false},
      {"1x1, 1100 -> 70 (two k-blocks of 550), 5x5", "Conv", Shape{1, 1100, 5, 5}, Shape{70, 1100, 1, 1}, {}},
      {"3x3, 120 -> 40 (two k-blocks of 540, the second across taps), 4x6", "Conv", Shape{1, 120, 4, 6}, Shape{40, 120, 3, 3},
       pads(1, 1, 1, 1)},
      {"3x3 pad 1, 8 -> 33", "Conv", Shape{1, 8, 12, 10}, Shape{33, 8, 3, 3}, pads(1, 1, 1, 1)},
      {"3x3 stride 2 pad 1, 3 -> 16, batch 3", "Conv", Shape{3, 3, 17, 17}, Shape{16, 3, 3, 3},
       with(pads(1, 1, 1, 1), attr_ints("strides", {2, 2}))},
      {"7x7 stride 2 pad 3 (a ResNet stem), 3 -> 64", "Conv", Shape{1, 3, 32, 30}, Shape{64, 3, 7, 7},
       with(pads(3, 3, 3, 3), attr_ints("strides", {2, 2}))},
      {"3x3 dilation 2, asymmetric pads", "Conv", Shape{1, 5, 15, 19}, Shape{6, 5, 3, 3},
       with(pads(0, 2, 3, 1), attr_ints("dilations", {2, 2}))},
      {"2x4 kernel, strides 3 x 1, no pads", "Conv", Shape{1, 4, 13, 9}, Shape{5, 4, 2, 4}, {attr_ints("strides", {3, 1})}},
      {"SAME_UPPER 4x4 stride 2", "Conv", Shape{1, 3, 16, 15}, Shape{8, 3, 4, 4}, {attr_string("auto_pad", "SAME_UPPER"), attr_ints("strides", {2, 2})}},
      {"windows that skip the last rows and columns", "Conv", Shape{1, 6, 10, 10}, Shape{9, 6, 3, 3}, {attr_ints("strides", {4, 4})}},
      {"weights and bias fed at run time", "Conv", Shape{2, 6, 8, 8}, Shape{12, 6, 3, 3}, pads(1, 1, 1, 1), true, true},
      {"1x1, 520 -> 280 on 3x3 (B's block past L2: column panels outer, a lone last panel)", "Conv", Shape{1, 520, 3, 3},
       Shape{280, 520, 1, 1}, {}},
      {"3x3 on 1x1 with pads 1", "Conv", Shape{1, 32, 1, 1}, Shape{48, 32, 3, 3}, pads(1, 1, 1, 1)},
      // Depthwise: one filter per channel.
      {"depthwise 3x3, 37 channels (two vectors and a tail)", "Conv", Shape{2, 37, 11, 23}, Shape{37, 1, 3, 3},
       with(pads(1, 1, 1, 1), attr_int("group", 37))},
      {"depthwise 5x5 stride 2, 16 channels", "Conv", Shape{1, 16, 20, 21}, Shape{16, 1, 5, 5},
       with(with(pads(2, 2, 2, 2), attr_int("group", 16)), attr_ints("strides", {2, 2}))},
      {"depthwise 3x3 dilation 2 no pads, width 6", "Conv", Shape{1, 32, 9, 6}, Shape{32, 1, 3, 3}, {attr_int("group", 32), attr_ints("dilations", {2, 2})}, false},
      {"depthwise 3x3 pad 1 on 3x5, 70 channels (runs of 2 and 1 between the edge columns, a partial block)", "Conv",
       Shape{1, 70, 3, 5}, Shape{70, 1, 3, 3}, with(pads(1, 1, 1, 1), attr_int("group", 70))},
      // 3x3 at stride 1, 16 or more channels in and out: Winograd F(2x2, 3x3).
      {"Winograd F(4x4): 3x3 pad 1, 40 -> 24, 2 images of 29x31 (partial tiles, partial channel vectors)", "Conv",
       Shape{2, 40, 29, 31}, Shape{24, 40, 3, 3}, pads(1, 1, 1, 1)},
      {"Winograd F(2x2): 3x3 no pads, 16 -> 20 on 9x8 (odd output height)", "Conv", Shape{1, 16, 9, 8}, Shape{20, 16, 3, 3}, {}},
      {"Winograd F(4x4): 3x3 pads (0, 1, 2, 1), 32 -> 33 on 20x20", "Conv", Shape{1, 32, 20, 20}, Shape{33, 32, 3, 3},
       pads(0, 1, 2, 1)},
      {"Winograd F(4x4): 3x3 pad 1, 64 -> 64 on 30x30 (tiles in several blocks)", "Conv", Shape{1, 64, 30, 30},
       Shape{64, 64, 3, 3}, pads(1, 1, 1, 1)},
      {"Winograd F(2x2): 3x3 pad 1 on 2x3, 2 images, 16 -> 16 (one tile wide)", "Conv", Shape{2, 16, 2, 3}, Shape{16, 16, 3, 3}, pads(1, 1, 1, 1)},
      // Few tiles under many channels: on 2 threads the points' products are split, not the tiles.
      {"Winograd F(2x2): 3x3 pad 1, 128 -> 136 on 7x7 (on 2 threads split by points)", "Conv", Shape{1, 128, 7, 7},
       Shape{136, 128, 3, 3}, pads(1, 1, 1, 1)},
      {"Winograd F(4x4): 3x3 pad 1, 96 -> 80 on 15x14 (on 2 threads split by points, partial tiles)", "Conv",
       Shape{1, 96, 15, 14}, Shape{80, 96, 3, 3}, pads(1, 1, 1, 1)},
      {"depthwise 3x3 stride 2 pad 1, 40 channels, 2 images of 15x21 (sliding runs of 8, 2 and a partial block)", "Conv",
       Shape{2, 40, 15, 21}, Shape{40, 1, 3, 3}, with(with(pads(1, 1, 1, 1), attr_int("group", 40)), attr_ints("strides", {2, 2}))},
      {"depthwise 3x3 stride 2, pads only after (0, 0, 1, 1), 32 channels on 16x30", "Conv", Shape{1, 32, 16, 30},
       Shape{32, 1, 3, 3}, with(with(pads(0, 0, 1, 1), attr_int("group", 32)), attr_ints("strides", {2, 2}))},
      {"depthwise 3x3 pad 1 on 7x7, 48 channels (a 7-pixel run)", "Conv", Shape{1, 48, 7, 7}, Shape{48, 1, 3, 3},
       with(pads(1, 1, 1, 1), attr_int("group", 48))},
      {"depthwise 3x3 pad 1, 16 channels on 12x290 (bands of 5 rows: the input rows of a band fit the L2 budget)", "Conv",
       Shape{1, 16, 12, 290}, Shape{16, 1, 3, 3}, with(pads(1, 1, 1, 1), attr_int("group", 16))},
      {"depthwise 3x3 stride 2 pad 1, 20 channels on 9x1700 (a band per output row)", "Conv", Shape{1, 20, 9, 1700},
       Shape{20, 1, 3, 3}, with(with(pads(1, 1, 1, 1), attr_int("group", 20)), attr_ints("strides", {2, 2}))},
      {"depthwise fed at run time", "Conv", Shape{1, 20, 7, 7}, Shape{20, 1, 3, 3},
       with(pads(1, 1, 1, 1), attr_int("group", 20)), true, true},
  };
  // F(4x4)'s transforms scale the terms by up to 100 before they are summed: its error reached
  // 2.6e-4 on a 64-channel output whose terms' magnitudes summed to ~150 (2e-6 of that sum).
  for (const Case& c : cases) check(c, true, std::string_view(c.what).starts_with("Winograd F(4x4)") ? 5e-4 : 1e-4);
}

TEST(CpuChannelsLast, PoolsMatchTheReference) {
  const std::vector<AttrSpec> k3s2{attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2})};
  const Case cases[] = {
      {"MaxPool 3x3 stride 2 pad 1, 37 channels", "MaxPool", Shape{2, 37, 15, 16}, {},
       with(k3s2, attr_ints("pads", {1, 1, 1, 1}))},
      {"MaxPool ceil_mode, dilation 2", "MaxPool", Shape{1, 70, 11, 12}, {},
       {attr_ints("kernel_shape", {2, 3}), attr_ints("strides", {2, 2}), attr_ints("dilations", {2, 2}),
        attr_int("ceil_mode", 1)}},
      {"AveragePool excluding pads", "AveragePool", Shape{1, 20, 9, 9}, {},
       with(k3s2, attr_ints("pads", {1, 0, 2, 1}))},
      {"AveragePool counting pads", "AveragePool", Shape{1, 20, 9, 9}, {},
       with(with(k3s2, attr_ints("pads", {1, 0, 2, 1})), attr_int("count_include_pad", 1))},
      {"AveragePool ceil_mode counting pads", "AveragePool", Shape{1, 5, 10, 10}, {},
       {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1}),
        attr_int("ceil_mode", 1), attr_int("count_include_pad", 1)}},
      {"GlobalAveragePool, 100 channels", "GlobalAveragePool", Shape{2, 100, 7, 7}, {}, {}},
      {"GlobalMaxPool, 3 channels", "GlobalMaxPool", Shape{1, 3, 5, 9}, {}, {}},
  };
  for (const Case& c : cases) check(c, true, 1e-5);
}

TEST(CpuChannelsLast, OtherConvolutionsStayChannelsFirst) {
  // Grouped (not depthwise), 1-D and 3-D convolutions have no channels-last CPU kernel: the CPU
  // EP is not given their forms, and they run as written.
  const Case cases[] = {
      {"2 groups", "Conv", Shape{1, 8, 6, 6}, Shape{4, 4, 3, 3}, {attr_int("group", 2)}},
      {"depthwise with channel multiplier 2", "Conv", Shape{1, 4, 6, 6}, Shape{8, 1, 3, 3}, {attr_int("group", 4)}},
      {"1-D", "Conv", Shape{1, 4, 9}, Shape{5, 4, 3}, {}},
      {"3-D", "Conv", Shape{1, 2, 4, 5, 6}, Shape{3, 2, 2, 2, 2}, {}},
      {"LpPool", "LpPool", Shape{1, 3, 6, 6}, {}, {attr_ints("kernel_shape", {2, 2})}},
  };
  for (const Case& c : cases) check(c, false);
}

TEST(CpuChannelsLast, ResidualSumsAccumulateInPlaceWhenNothingReadsThemLater) {
  // a = Conv(x); y = Relu(Conv(t) + a), fused into onyx::FusedConvAdd: where nothing reads `a`
  // after the sum, the memory plan puts the output in a's buffer and the product is accumulated
  // onto it (Kernel::inplace_input). Where a is read later, or is also the convolution's input,
  // it is not.
  struct Graph3 {
    const char* what;
    bool depthwise;     // the summed convolution is depthwise
    bool a_read_later;  // another node reads a after the sum
    bool a_is_input;    // the summed convolution reads a itself
    int want_inplace;
    int64_t C, H, W;
    bool full3x3 = false;  // the summed convolution is 3x3, group 1 (Winograd F(2x2, 3x3))
  };
  const Graph3 cases[] = {
      {"a pointwise sum, a's last use", false, false, false, 1, 40, 9, 11},
      {"a pointwise sum over 1030 channels (two k-blocks onto the sum)", false, false, false, 1, 1030, 3, 4},
      {"a depthwise sum, a's last use", true, false, false, 1, 40, 9, 11},
      {"a 3x3 sum (Winograd, each output written after its sum is read), a's last use", false, false, false, 1, 40, 9,
       11, true},
      {"a 3x3 sum (Winograd), a read after the sum", false, true, false, 0, 24, 6, 5, true},
      {"a 3x3 sum on 16x15 (Winograd F(4x4)), a's last use", false, false, false, 1, 24, 16, 15, true},
      {"a 3x3 sum over 128 channels on 7x7 (Winograd split by points on 2 threads)", false, false, false, 1, 128, 7, 7, true},
      {"a read after the sum", false, true, false, 0, 40, 9, 11},
      {"the convolution's own input summed", false, false, true, 0, 40, 9, 11},
  };
  for (const Graph3& c : cases) {
    SCOPED_TRACE(c.what);
    const int64_t C = c.C, H = c.H, W = c.W;
    std::vector<double> ref;
    for (const auto& [dt, nhwc] : {std::pair{DType::kDouble, false}, std::pair{DType::kFloat, false}, std::pair{DType::kFloat, true}}) {
      GraphSpec g;
      g.inputs.push_back({"x", dt, {1, C, H, W}});
      g.initializers.emplace_back("w1", filled(dt, Shape{C, C, 1, 1}, 11));
      g.initializers.emplace_back("b1", filled(dt, Shape{C}, 12));
      const int64_t k = c.depthwise || c.full3x3 ? 3 : 1;
      g.initializers.emplace_back("w2", filled(dt, Shape{C, c.depthwise ? 1 : C, k, k}, 13));
      g.initializers.emplace_back("b2", filled(dt, Shape{C}, 14));
      // With a 3x3 convolution summed and `a` not read later, `a` comes from a Sigmoid: the Add
      // can then only be fused into the 3x3 one (conv_a would take it, with the 3x3 product as
      // its sum; where `a` is read later, conv_a's output must stay and it cannot).
      if (c.full3x3 && !c.a_read_later)
        g.nodes.push_back({"Sigmoid", {"x"}, {"a"}, {}, "sigmoid_a"});
      else
        g.nodes.push_back({"Conv", {"x", "w1", "b1"}, {"a"}, {}, "conv_a"});
      g.nodes.push_back({"Relu", {"x"}, {"t"}, {}, "relu_t"});
      std::vector<AttrSpec> attrs = c.depthwise ? with(pads(1, 1, 1, 1), attr_int("group", C))
                                    : c.full3x3  ? pads(1, 1, 1, 1)
                                                 : std::vector<AttrSpec>{};
      g.nodes.push_back({"Conv", {c.a_is_input ? "a" : "t", "w2", "b2"}, {"p"}, attrs, "conv_p"});
      g.nodes.push_back({"Add", {"p", "a"}, {"s"}, {}, "add"});
      g.nodes.push_back({"Relu", {"s"}, {c.a_read_later ? "r" : "y"}, {}, "relu_s"});
      if (c.a_read_later) g.nodes.push_back({"Mul", {"r", "a"}, {"y"}, {}, "mul"});
      g.outputs.push_back({"y", dt, {}, {}, true});
      const std::string m = encode_model(g, 19);
      for (int threads : {1, 2}) {
        Session s = Session::builder()
                        .with_intra_threads(threads)
                        .with_execution_providers({ep::CPU().with_prefer_nhwc(nhwc).build()})
                        .commit_from_memory(m.data(), m.size());
        const Tensor x = filled(dt, Shape{1, C, H, W}, 10);
        const Tensor y = s.run({{"x", Value(x)}})[0].tensor();
        std::vector<double> out;
        for (int64_t i = 0; i < y.numel(); ++i) out.push_back(dt == DType::kFloat ? y.data<float>()[i] : y.data<double>()[i]);
        if (ref.empty()) {
          ref = out;
          continue;
        }
        ASSERT_EQ(out.size(), ref.size());
        for (size_t i = 0; i < ref.size(); ++i)
          ASSERT_NEAR(out[i], ref[i], 1e-4 * (1 + std::fabs(ref[i]))) << (nhwc ? "channels-last" : "channels-first") << " at " << i;
        if (dt == DType::kDouble) continue;  // the reference: not fused (FusedConvAdd is float32)
        int fused = 0;
        for (const auto& p : s.placement().nodes) fused += p.op_type == "FusedConvAdd" && p.domain == (nhwc ? "onyx.nhwc" : "onyx");
        EXPECT_EQ(fused, 1);
        // Channels-first FusedConvAdd is not computed in place (its kernel does not offer it).
        EXPECT_EQ(s.impl()->plan_for({Value(x)})->inplace_outputs, nhwc ? static_cast<size_t>(c.want_inplace) : 0u);
      }
    }
  }
}

TEST(CpuChannelsLast, LayoutTransposesMatchTheDefinition) {
  // The Transpose kernel's batched 2-d path (NCHW <-> NHWC in 16 x 16 register blocks, masked
  // where a block is partial; 2-4 channels interleaved by shuffles) against permute_tensor, element by element,
  // for 1-, 4- and 8-byte elements.
  // Two to four channels (4-byte elements) are interleaved 16 pixels at a time, the rest after.
  const Shape shapes[] = {Shape{1, 3, 224, 224}, Shape{2, 37, 5, 33}, Shape{3, 40, 1, 7}, Shape{1, 16, 16, 1},
                          Shape{2, 1, 3, 3},     Shape{2, 2, 5, 7},   Shape{1, 4, 3, 11}, Shape{3, 19, 2, 1}};
  for (const Shape& s : shapes)
    for (DType dt : {DType::kFloat, DType::kInt8, DType::kInt64})
      for (bool to_last : {true, false}) {
        SCOPED_TRACE(str(s.to_string(), " ", dtype_name(dt), to_last ? " to NHWC" : " to NCHW"));
        Tensor x(dt, s);
        auto* bytes = static_cast<uint8_t*>(x.raw_data());
        for (size_t i = 0; i < x.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + i / 13);
        const std::vector<int64_t> perm = to_last ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 3, 1, 2};
        GraphSpec g;
        g.nodes.push_back({"Transpose", {"x"}, {"y"}, {attr_ints("perm", perm)}, "t"});
        g.inputs.push_back({"x", dt, std::vector<int64_t>(s.begin(), s.end())});
        g.outputs.push_back({"y", dt, {}, {}, true});
        const std::string m = encode_model(g, 13);
        for (int threads : {1, 2}) {
          Session sess = Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
          const Tensor y = sess.run({{"x", Value(x)}})[0].tensor();
          const Tensor want = permute_tensor(x, perm);
          ASSERT_EQ(y.shape(), want.shape());
          ASSERT_EQ(std::memcmp(y.raw_data(), want.raw_data(), want.nbytes()), 0);
        }
      }
}

TEST(CpuChannelsLast, MaxPoolKeepsNaN) {
  // A NaN inside a window makes that output NaN, in either layout (the running maximum's NaN
  // test is its own select: fused into one mask with the comparison, AVX2 code went scalar).
  const Shape xs{1, 19, 9, 10};
  Tensor x(DType::kFloat, xs);
  float* px = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) px[i] = static_cast<float>((i * 37) % 101) * 0.25f - 12.0f;
  for (int64_t i : {5, 97, 333, 1000, 1709}) px[i] = std::numeric_limits<float>::quiet_NaN();
  GraphSpec g;
  g.nodes.push_back({"MaxPool",
                     {"x"},
                     {"y"},
                     {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})},
                     "pool"});
  g.inputs.push_back({"x", DType::kFloat, std::vector<int64_t>(xs.begin(), xs.end())});
  g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  const std::string m = encode_model(g, 19);
  const int64_t C = xs[1], H = xs[2], W = xs[3], OH = 5, OW = 5;
  for (bool nhwc : {true, false}) {
    SCOPED_TRACE(nhwc ? "channels-last" : "channels-first");
    Session s = Session::builder()
                    .with_execution_providers({ep::CPU().with_prefer_nhwc(nhwc).build()})
                    .commit_from_memory(m.data(), m.size());
    const Tensor y = s.run({{"x", Value(x)}})[0].tensor();
    ASSERT_EQ(y.shape(), (Shape{1, C, OH, OW}));
    int nans = 0;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          float want = -std::numeric_limits<float>::infinity();
          bool nan = false;
          for (int64_t ih = oh * 2 - 1; ih <= oh * 2 + 1; ++ih)
            for (int64_t iw = ow * 2 - 1; iw <= ow * 2 + 1; ++iw) {
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              const float v = px[(c * H + ih) * W + iw];
              nan |= std::isnan(v);
              want = std::max(want, v);
            }
          const float got = y.data<float>()[(c * OH + oh) * OW + ow];
          if (nan) {
            ++nans;
            EXPECT_TRUE(std::isnan(got)) << c << "," << oh << "," << ow;
          } else {
            EXPECT_EQ(got, want) << c << "," << oh << "," << ow;
          }
        }
    EXPECT_GT(nans, 5);
  }
}
