// The channels-last 8-bit kernels (kernels/qconv.cpp): QLinearConv and MaxPool over uint8/int8,
// each case run with the CPU EP channels-last (its default: the onyx.nhwc form) and
// channels-first (the reference loops of kernels/quant.cpp), which must agree exactly: both sum
// exactly in integers and requantise with the same float32 multiplier.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

Tensor random_q8(DType dt, const Shape& s, uint32_t seed) {
  Tensor t(dt, s);
  std::mt19937 rng(seed);
  auto* p = static_cast<uint8_t*>(t.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<uint8_t>(rng());
  return t;
}

Tensor q8_values(DType dt, const Shape& s, std::vector<int> v) {
  Tensor t(dt, s);
  for (size_t i = 0; i < v.size(); ++i) static_cast<uint8_t*>(t.raw_data())[i] = static_cast<uint8_t>(v[i]);
  return t;
}

struct QCase {
  const char* what;
  Shape x;  // [N, C, H, W]
  Shape w;  // [M, C / group, KH, KW]
  std::vector<AttrSpec> attrs;
  DType xt = DType::kUInt8, wt = DType::kInt8, yt = DType::kUInt8;
  bool per_channel = false;
  bool bias = true;
  bool weights_as_input = false;
  bool scales_as_input = false;  // x/w/y scales and the x/y zero points fed at run time
};

struct QRun {
  std::vector<int> y;
  int forms = 0;
};

QRun run(const QCase& c, bool nhwc, int threads) {
  const int64_t M = c.w[0];
  std::mt19937 rng(static_cast<uint32_t>(c.x.numel() * 31 + M));
  std::uniform_real_distribution<float> ud(0.5f, 1.5f);
  auto zp_of = [&](DType dt) { return dt == DType::kUInt8 ? static_cast<int>(rng() % 200 + 20) : static_cast<int>(rng() % 60) - 30; };
  // Scales that keep the outputs mostly inside the 8-bit range (some saturate).
  const int64_t k = c.w.numel() / M;
  // (uint8 weights minus a random zero point are biased: their sums grow with k.)
  const float x_scale = 0.02f,
              y_scale = 0.03f * static_cast<float>(std::sqrt(static_cast<double>(k))) * (c.wt == DType::kUInt8 ? 4.0f : 1.0f);
  const int64_t nw = c.per_channel ? M : 1;
  std::vector<float> ws(nw);
  std::vector<int> wz(nw);
  for (int64_t i = 0; i < nw; ++i) {
    ws[i] = 0.01f * ud(rng);
    wz[i] = c.wt == DType::kInt8 ? (c.per_channel && i % 3 == 1 ? 2 : 0) : zp_of(c.wt);
  }
  std::vector<int32_t> bias(M);
  for (auto& b : bias) b = static_cast<int32_t>(rng() % 4001) - 2000;
  GraphSpec g;
  g.inputs.push_back({"x", c.xt, std::vector<int64_t>(c.x.begin(), c.x.end())});
  std::vector<std::pair<std::string, Value>> feeds{{"x", Value(random_q8(c.xt, c.x, 1))}};
  // (The kernel reads constant scales and zero points once, at creation; fed ones at every run.)
  auto param = [&](const char* name, Tensor t) {
    if (c.scales_as_input) {
      g.inputs.push_back({name, t.dtype(), std::vector<int64_t>(t.shape().begin(), t.shape().end())});
      feeds.emplace_back(name, Value(std::move(t)));
    } else {
      g.initializers.emplace_back(name, std::move(t));
    }
  };
  param("xs", Tensor::from_vector<float>(Shape{}, {x_scale}));
  param("xz", q8_values(c.xt, Shape{}, {zp_of(c.xt)}));
  param("ws", Tensor::from_vector<float>(c.per_channel ? Shape{M} : Shape{}, ws));
  g.initializers.emplace_back("wz", q8_values(c.wt, c.per_channel ? Shape{M} : Shape{}, wz));
  param("ys", Tensor::from_vector<float>(Shape{}, {y_scale}));
  param("yz", q8_values(c.yt, Shape{}, {zp_of(c.yt)}));
  const Tensor w = random_q8(c.wt, c.w, 2), b = Tensor::from_vector<int32_t>(Shape{M}, bias);
  if (c.weights_as_input) {
    g.inputs.push_back({"w", c.wt, std::vector<int64_t>(c.w.begin(), c.w.end())});
    feeds.emplace_back("w", Value(w));
  } else {
    g.initializers.emplace_back("w", w);
  }
  if (c.bias) g.initializers.emplace_back("b", b);
  std::vector<std::string> ins{"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"};
  if (c.bias) ins.push_back("b");
  g.nodes.push_back({"QLinearConv", ins, {"y"}, c.attrs, "node"});
  g.outputs.push_back({"y", c.yt, {}, {}, true});
  const std::string m = encode_model(g, 19);
  Session s = Session::builder()
                  .with_intra_threads(threads)
                  .with_execution_providers({ep::CPU().with_prefer_nhwc(nhwc).build()})
                  .commit_from_memory(m.data(), m.size());
  const Tensor y = s.run(feeds)[0].tensor();
  QRun r;
  const auto* p = static_cast<const uint8_t*>(y.raw_data());
  for (int64_t i = 0; i < y.numel(); ++i) r.y.push_back(c.yt == DType::kInt8 ? static_cast<int8_t>(p[i]) : p[i]);
  for (const auto& pl : s.placement().nodes) r.forms += pl.domain == "onyx.nhwc";
  return r;
}

std::vector<AttrSpec> pads(int64_t t, int64_t l, int64_t b, int64_t r) { return {attr_ints("pads", {t, l, b, r})}; }
std::vector<AttrSpec> with(std::vector<AttrSpec> a, AttrSpec extra) {
  a.push_back(std::move(extra));
  return a;
}

}  // namespace

TEST(CpuQLinearConvNhwc, MatchesTheChannelsFirstReferenceExactly) {
  const DType u8 = DType::kUInt8, s8 = DType::kInt8;
  const QCase cases[] = {
      {"1x1, 20 -> 7 (the input read in place)", Shape{1, 20, 9, 11}, Shape{7, 20, 1, 1}, {}},
      {"1x1 stride 2, 24 -> 40, batch 2, per-channel", Shape{2, 24, 14, 14}, Shape{40, 24, 1, 1}, {attr_ints("strides", {2, 2})},
       u8, s8, u8, true},
      {"1x1, 18 -> 70 (channels padded to 20), int8 x and y", Shape{1, 18, 5, 5}, Shape{70, 18, 1, 1}, {}, s8, s8, s8},
      {"3x3 pad 1, 8 -> 33, uint8 weights", Shape{1, 8, 12, 10}, Shape{33, 8, 3, 3}, pads(1, 1, 1, 1), u8, u8, u8},
      {"3x3 stride 2 pad 1, 3 -> 16 (3 channels), batch 3", Shape{3, 3, 17, 17}, Shape{16, 3, 3, 3},
       with(pads(1, 1, 1, 1), attr_ints("strides", {2, 2}))},
      {"7x7 stride 2 pad 3 (a ResNet stem), 3 -> 64, per-channel", Shape{1, 3, 32, 30}, Shape{64, 3, 7, 7},
       with(pads(3, 3, 3, 3), attr_ints("strides", {2, 2})), u8, s8, u8, true},
      {"3x3 dilation 2, asymmetric pads, int8 x, uint8 y", Shape{1, 5, 15, 19}, Shape{6, 5, 3, 3},
       with(pads(0, 2, 3, 1), attr_ints("dilations", {2, 2})), s8, s8, u8},
      {"windows that skip the last rows and columns", Shape{1, 6, 10, 10}, Shape{9, 6, 3, 3}, {attr_ints("strides", {4, 4})}},
      {"3x3 pad 1, 64 -> 130 (two panels and a tail), no bias", Shape{1, 64, 8, 9}, Shape{130, 64, 3, 3}, pads(1, 1, 1, 1), u8,
       s8, u8, true, false},
      {"weights fed at run time", Shape{2, 6, 8, 8}, Shape{12, 6, 3, 3}, pads(1, 1, 1, 1), u8, s8, u8, false, true, true},
      {"depthwise 3x3, 37 channels (two vectors and a tail)", Shape{2, 37, 11, 23}, Shape{37, 1, 3, 3},
       with(pads(1, 1, 1, 1), attr_int("group", 37))},
      {"depthwise 3x3 stride 2, 40 channels, per-channel, int8", Shape{1, 40, 15, 21}, Shape{40, 1, 3, 3},
       with(with(pads(1, 1, 1, 1), attr_int("group", 40)), attr_ints("strides", {2, 2})), s8, s8, s8, true},
      {"depthwise 5x5 stride 2, 16 channels, uint8 weights", Shape{1, 16, 20, 21}, Shape{16, 1, 5, 5},
       with(with(pads(2, 2, 2, 2), attr_int("group", 16)), attr_ints("strides", {2, 2})), u8, u8, u8},
      {"depthwise fed at run time, no bias", Shape{1, 20, 7, 7}, Shape{20, 1, 3, 3}, with(pads(1, 1, 1, 1), attr_int("group", 20)),
       u8, s8, u8, false, false, true},
      {"scales and zero points fed at run time, per-channel", Shape{1, 16, 9, 8}, Shape{24, 16, 3, 3}, pads(1, 1, 1, 1), u8, s8,
       u8, true, true, false, true},
      {"depthwise, scales and zero points fed at run time", Shape{1, 24, 9, 8}, Shape{24, 1, 3, 3},
       with(pads(1, 1, 1, 1), attr_int("group", 24)), u8, s8, u8, true, true, false, true},
      // Strided, planes of 28 x 28 or more: depthwise without the padded copy (edges read with
      // bounds); at stride 1 with the copy.
      {"depthwise 3x3 on 30x29, 37 channels, batch 2", Shape{2, 37, 30, 29}, Shape{37, 1, 3, 3},
       with(pads(1, 1, 1, 1), attr_int("group", 37))},
      {"depthwise 3x3 stride 2 on 30x29, 37 channels, batch 2 (no padded copy)", Shape{2, 37, 30, 29}, Shape{37, 1, 3, 3},
       with(with(pads(1, 1, 1, 1), attr_int("group", 37)), attr_ints("strides", {2, 2}))},
      {"depthwise 3x3 stride 2 on 31x32, int8, per-channel (no padded copy)", Shape{1, 40, 31, 32}, Shape{40, 1, 3, 3},
       with(with(pads(1, 1, 1, 1), attr_int("group", 40)), attr_ints("strides", {2, 2})), s8, s8, s8, true},
      {"depthwise 5x5 stride 2, asymmetric pads, uint8 weights (no padded copy)", Shape{1, 16, 29, 30}, Shape{16, 1, 5, 5},
       with(with(pads(0, 2, 3, 1), attr_int("group", 16)), attr_ints("strides", {2, 2})), u8, u8, u8},
      {"depthwise 3x3 dilation 2 stride (1, 2), pads 2 (no padded copy)", Shape{1, 20, 28, 28}, Shape{20, 1, 3, 3},
       with(with(with(pads(2, 2, 2, 2), attr_int("group", 20)), attr_ints("dilations", {2, 2})), attr_ints("strides", {1, 2}))},
  };
  for (const QCase& c : cases) {
    SCOPED_TRACE(c.what);
    const QRun ref = run(c, false, 1);
    EXPECT_EQ(ref.forms, 0);
    for (int threads : {1, 2}) {
      const QRun last = run(c, true, threads);
      EXPECT_EQ(last.forms, 1);
      ASSERT_EQ(last.y.size(), ref.y.size());
      int saturated = 0;
      for (size_t i = 0; i < ref.y.size(); ++i) {
        ASSERT_EQ(last.y[i], ref.y[i]) << "at " << i << " (threads " << threads << ")";
        saturated += ref.y[i] == 0 || ref.y[i] == 255 || ref.y[i] == -128 || ref.y[i] == 127;
      }
      // The case is a real test of the arithmetic: most outputs inside the range.
      EXPECT_LT(saturated, static_cast<int>(ref.y.size() / 2)) << "scales saturate most outputs";
    }
  }
}

TEST(CpuQLinearConvNhwc, MaxPoolOnBytes) {
  // (101 channels: a block of 64, one of 32 and 5 more.)
  for (int64_t C : {19, 101})
  for (DType dt : {DType::kUInt8, DType::kInt8}) {
    GraphSpec g;
    g.inputs.push_back({"x", dt, {2, C, 9, 10}});
    g.nodes.push_back({"MaxPool", {"x"}, {"y"},
                       {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})},
                       "pool"});
    g.outputs.push_back({"y", dt, {}, {}, true});
    const std::string m = encode_model(g, 13);
    const Tensor x = random_q8(dt, Shape{2, C, 9, 10}, 5);
    std::vector<std::vector<uint8_t>> ys;
    for (bool nhwc : {true, false}) {
      Session s = Session::builder().with_execution_providers({ep::CPU().with_prefer_nhwc(nhwc).build()}).commit_from_memory(m.data(), m.size());
      const Tensor y = s.run({{"x", Value(x)}})[0].tensor();
      int forms = 0;
      for (const auto& pl : s.placement().nodes) forms += pl.domain == "onyx.nhwc";
      EXPECT_EQ(forms, nhwc ? 1 : 0);
      const auto* p = static_cast<const uint8_t*>(y.raw_data());
      ys.emplace_back(p, p + y.numel());
    }
    EXPECT_EQ(ys[0], ys[1]) << dtype_name(dt) << " " << C << " channels";
  }
}

TEST(CpuQLinearConvNhwc, ByteAndHalfTransposesMatchTheDefinition) {
  // The 8- and 16-bit paths of Transpose (register blocks of 16 x 16 bytes or 8 x 8 halves, the
  // 2-4 channel interleave, and their edges) against the definition, both layout directions.
  const std::vector<int64_t> shapes[] = {{2, 37, 19, 23}, {1, 3, 17, 33}, {1, 40, 8, 8}, {3, 2, 5, 7}, {1, 33, 16, 16}};
  for (DType dt : {DType::kUInt8, DType::kFloat16}) {
    for (const auto& shape : shapes) {
      for (const std::vector<int64_t>& perm : {std::vector<int64_t>{0, 2, 3, 1}, std::vector<int64_t>{0, 3, 1, 2}}) {
        GraphSpec g;
        g.inputs.push_back({"x", dt, shape});
        g.nodes.push_back({"Transpose", {"x"}, {"y"}, {attr_ints("perm", perm)}, "t"});
        g.outputs.push_back({"y", dt, {}, {}, true});
        const std::string m = encode_model(g, 13);
        Tensor x(dt, Shape(shape));
        const size_t es = dt == DType::kUInt8 ? 1 : 2;
        std::mt19937 rng(7);
        auto* px = static_cast<uint8_t*>(x.raw_data());
        for (int64_t i = 0; i < x.numel() * static_cast<int64_t>(es); ++i) px[i] = static_cast<uint8_t>(rng());
        Session s = Session::builder().commit_from_memory(m.data(), m.size());
        const Tensor y = s.run({{"x", Value(x)}})[0].tensor();
        ASSERT_EQ(y.numel(), x.numel());
        std::vector<int64_t> out_shape, in_stride(4, 1);
        for (int k = 2; k >= 0; --k) in_stride[k] = in_stride[k + 1] * shape[k + 1];
        for (int64_t p : perm) out_shape.push_back(shape[p]);
        const auto* py = static_cast<const uint8_t*>(y.raw_data());
        int64_t o = 0;
        for (int64_t a = 0; a < out_shape[0]; ++a)
          for (int64_t b = 0; b < out_shape[1]; ++b)
            for (int64_t c = 0; c < out_shape[2]; ++c)
              for (int64_t d = 0; d < out_shape[3]; ++d, ++o) {
                const int64_t idx[4] = {a, b, c, d};
                int64_t src = 0;
                for (int k = 0; k < 4; ++k) src += idx[k] * in_stride[perm[k]];
                ASSERT_EQ(std::memcmp(py + o * es, px + src * es, es), 0)
                    << dtype_name(dt) << " shape " << Shape(shape).to_string() << " element " << o;
              }
      }
    }
  }
}

TEST(CpuQLinearConvNhwc, KernelShapeThatDisagreesWithTheWeightsIsAnError) {
  // A kernel_shape attribute that is not W's spatial shape: an error naming the node, in both
  // layouts (never a read past the weights): W constant (found at load) or fed with its shape
  // unknown until the run.
  for (int mode = 0; mode < 4; ++mode) {
    const bool nhwc = mode & 1, fed = mode & 2;
    GraphSpec g;
    g.inputs.push_back({"x", DType::kUInt8, {1, 4, 6, 6}});
    g.initializers.emplace_back("xs", Tensor::from_vector<float>(Shape{}, {0.1f}));
    g.initializers.emplace_back("xz", q8_values(DType::kUInt8, Shape{}, {128}));
    const Tensor w = random_q8(DType::kInt8, Shape{8, 4, 3, 3}, 3);
    if (fed) {
      ValueSpec wv{"w", DType::kInt8};
      wv.no_shape = true;
      g.inputs.push_back(wv);
    } else {
      g.initializers.emplace_back("w", w);
    }
    g.initializers.emplace_back("ws", Tensor::from_vector<float>(Shape{}, {0.01f}));
    g.initializers.emplace_back("wz", q8_values(DType::kInt8, Shape{}, {0}));
    g.initializers.emplace_back("ys", Tensor::from_vector<float>(Shape{}, {0.2f}));
    g.initializers.emplace_back("yz", q8_values(DType::kUInt8, Shape{}, {128}));
    g.nodes.push_back({"QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}, {attr_ints("kernel_shape", {5, 5})}, "qc"});
    g.outputs.push_back({"y", DType::kUInt8, {}, {}, true});
    const std::string m = encode_model(g, 19);
    try {
      Session s = Session::builder().with_execution_providers({ep::CPU().with_prefer_nhwc(nhwc).build()}).commit_from_memory(m.data(), m.size());
      std::vector<std::pair<std::string, Value>> feeds{{"x", Value(random_q8(DType::kUInt8, Shape{1, 4, 6, 6}, 4))}};
      if (fed) feeds.emplace_back("w", Value(w));
      s.run(feeds);
      ADD_FAILURE() << "no error (nhwc " << nhwc << ", w fed " << fed << ")";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("kernel_shape"), std::string::npos) << e.what();
    }
  }
}
