// onyx's own CUDA kernels (providers/cuda/*.cu) run through the host emulator
// (providers/cuda/testing/emulator.hpp): the kernels' indexing, broadcasting, block reductions
// and warp shuffles checked against plain C++ references on machines without a GPU. The same
// launchers run on the GPU in the provider tests (tests/unit/test_cuda_ep.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <onyx/dtype.hpp>

#include "half.hpp"
#include "ir/graph.hpp"
#include "launch.hpp"
#include "model_builder.hpp"
#include "ops/image.hpp"
#include "ops/nn.hpp"
#include "ops/tensor.hpp"
#include "quant.hpp"
#include "transformer.hpp"
#include "views.hpp"

using namespace onyx::cuda;

namespace {

cudaStream_t kStream = nullptr;  // the emulator runs launches synchronously

std::vector<float> randoms(size_t n, uint32_t seed, float lo = -2, float hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

/// A view over `out` dims of a dense tensor of `dims` (right-aligned, stride 0 where it broadcasts).
Strided view(const std::vector<int64_t>& dims, const std::vector<int64_t>& out) {
  Strided s;
  s.rank = static_cast<int>(out.size());
  int64_t st = 1;
  const size_t lead = out.size() - dims.size();
  for (int k = s.rank - 1; k >= 0; --k) {
    s.dims[k] = out[k];
    if (static_cast<size_t>(k) < lead) continue;
    const int64_t d = dims[k - lead];
    s.strides[k] = d == 1 ? 0 : st;
    st *= d;
  }
  return s;
}

std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    idx[k] = i % dims[k];
    i /= dims[k];
  }
  return idx;
}

}  // namespace

TEST(CudaKernelsEmulated, Unary) {
  const std::vector<float> x = randoms(1000, 1);
  std::vector<float> y(x.size());
  struct Case {
    UnaryOp op;
    float a, b;
    float (*ref)(float, float, float);
  };
  const Case cases[] = {
      {UnaryOp::kRelu, 0, 0, [](float v, float, float) { return v > 0 ? v : 0.f; }},
      {UnaryOp::kSigmoid, 0, 0, [](float v, float, float) { return 1.f / (1.f + std::exp(-v)); }},
      {UnaryOp::kGelu, 0, 0, [](float v, float, float) { return 0.5f * v * (1.f + std::erf(v / std::sqrt(2.f))); }},
      {UnaryOp::kClip, -0.5f, 0.7f, [](float v, float a, float b) { return std::min(std::max(v, a), b); }},
      {UnaryOp::kLeakyRelu, 0.1f, 0, [](float v, float a, float) { return v >= 0 ? v : a * v; }},
  };
  for (const Case& c : cases) {
    unary_f32(c.op, x.data(), y.data(), static_cast<int64_t>(x.size()), c.a, c.b, kStream);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i], c.ref(x[i], c.a, c.b), 1e-6f) << "op " << int(c.op) << " at " << i;
  }
}

TEST(CudaKernelsEmulated, BinaryBroadcastAndCompare) {
  const std::vector<int64_t> out = {2, 3, 4};
  const std::vector<float> a = randoms(2 * 3 * 4, 2), b = randoms(3 * 1, 3);
  std::vector<float> y(a.size());
  binary(BinaryOp::kSub, Ty::kF32, a.data(), view({2, 3, 4}, out), b.data(), view({3, 1}, out), y.data(), 24, kStream);
  for (int64_t i = 0; i < 24; ++i) ASSERT_FLOAT_EQ(y[i], a[i] - b[(i / 4) % 3]) << i;
  // int64 Mod follows the divisor's sign (fmod=0); comparisons give bools.
  const std::vector<int64_t> ia = {-7, 7, -7, 7}, ib = {3, -3, -3, 3};
  std::vector<int64_t> iy(4);
  binary(BinaryOp::kMod, Ty::kI64, ia.data(), view({4}, {4}), ib.data(), view({4}, {4}), iy.data(), 4, kStream);
  EXPECT_EQ(iy, (std::vector<int64_t>{2, -2, -1, 1}));
  std::vector<uint8_t> cy(24);
  binary(BinaryOp::kLess, Ty::kF32, a.data(), view({2, 3, 4}, out), b.data(), view({3, 1}, out), cy.data(), 24, kStream);
  for (int64_t i = 0; i < 24; ++i) ASSERT_EQ(cy[i], a[i] < b[(i / 4) % 3] ? 1 : 0) << i;
}

TEST(CudaKernelsEmulated, WhereCopyGatherCastFill) {
  // Where with a broadcast condition.
  const std::vector<uint8_t> cond = {1, 0, 1};
  const std::vector<float> x = randoms(6, 4), z = randoms(6, 5);
  std::vector<float> y(6);
  where(cond.data(), view({3}, {2, 3}), x.data(), view({2, 3}, {2, 3}), z.data(), view({2, 3}, {2, 3}), y.data(), 4, 6, kStream);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], cond[i % 3] ? x[i] : z[i]);
  // A transpose [2,3,4] -> [4,2,3] through strided views.
  const std::vector<float> t = randoms(24, 6);
  std::vector<float> tt(24);
  Strided src;
  src.rank = 3;
  const int64_t sd[3] = {4, 2, 3}, ss[3] = {1, 12, 4};
  for (int k = 0; k < 3; ++k) src.dims[k] = sd[k], src.strides[k] = ss[k];
  strided_copy(t.data(), src, tt.data(), view({4, 2, 3}, {4, 2, 3}), 4, 24, kStream);
  for (int64_t i = 0; i < 24; ++i) {
    const auto idx = unravel(i, {4, 2, 3});
    ASSERT_EQ(tt[i], t[idx[1] * 12 + idx[2] * 4 + idx[0]]) << i;
  }
  // Gather along axis 1 of [2, 5, 3] with a negative index; an out-of-range one sets the flag.
  const std::vector<float> data = randoms(30, 7);
  const std::vector<int64_t> idx = {4, -1, 0};
  std::vector<float> g(2 * 3 * 3);
  int error = 0;
  gather(data.data(), idx.data(), true, g.data(), 4, 2, 5, 3, 3, &error, kStream);
  EXPECT_EQ(error, 0);
  for (int o = 0; o < 2; ++o)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) {
        const int64_t src_j = idx[j] < 0 ? idx[j] + 5 : idx[j];
        EXPECT_EQ(g[(o * 3 + j) * 3 + k], data[(o * 5 + src_j) * 3 + k]);
      }
  const std::vector<int32_t> bad = {5};
  std::vector<float> g2(2 * 3);
  gather(data.data(), bad.data(), false, g2.data(), 4, 2, 5, 1, 3, &error, kStream);
  EXPECT_EQ(error, 1);
  // Casts: float -> int32 truncates, NaN -> 0; float -> half -> float rounds.
  const std::vector<float> f = {1.7f, -2.7f, std::numeric_limits<float>::quiet_NaN(), 0.1f};
  std::vector<int32_t> fi(4);
  cast(Ty::kF32, f.data(), Ty::kI32, fi.data(), 4, kStream);
  EXPECT_EQ(fi, (std::vector<int32_t>{1, -2, 0, 0}));
  std::vector<uint16_t> h(4);
  std::vector<float> back(4);
  cast(Ty::kF32, f.data(), Ty::kF16, h.data(), 4, kStream);
  cast(Ty::kF16, h.data(), Ty::kF32, back.data(), 4, kStream);
  EXPECT_FLOAT_EQ(back[0], 1.7001953125f);
  EXPECT_TRUE(std::isnan(back[2]));
  std::vector<int64_t> filled(37);
  const int64_t seven = 7;
  fill(filled.data(), &seven, 8, 37, kStream);
  for (int64_t v : filled) EXPECT_EQ(v, 7);
}

TEST(CudaKernelsEmulated, SoftmaxRowsAndStrided) {
  for (int64_t inner : {int64_t(1), int64_t(3)}) {
    const int64_t outer = 4, axis = 70;  // 70 > 64 threads per row: the block loops and reduces across warps
    const std::vector<float> x = randoms(outer * axis * inner, 8, -5, 5);
    std::vector<float> y(x.size()), ly(x.size());
    softmax_f32(x.data(), y.data(), outer, axis, inner, false, kStream);
    softmax_f32(x.data(), ly.data(), outer, axis, inner, true, kStream);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < inner; ++k) {
        double m = -1e30, s = 0;
        for (int64_t j = 0; j < axis; ++j) m = std::max<double>(m, x[(o * axis + j) * inner + k]);
        for (int64_t j = 0; j < axis; ++j) s += std::exp(x[(o * axis + j) * inner + k] - m);
        for (int64_t j = 0; j < axis; ++j) {
          const int64_t i = (o * axis + j) * inner + k;
          ASSERT_NEAR(y[i], std::exp(x[i] - m) / s, 1e-6) << "inner " << inner << " at " << i;
          ASSERT_NEAR(ly[i], x[i] - m - std::log(s), 1e-5) << "inner " << inner << " at " << i;
        }
      }
  }
}

TEST(CudaKernelsEmulated, LayerNormReduceArg) {
  const int64_t rows = 3, cols = 100;
  const std::vector<float> x = randoms(rows * cols, 9), scale = randoms(cols, 10), bias = randoms(cols, 11);
  std::vector<float> y(x.size()), mean(rows), inv(rows);
  layernorm_f32(x.data(), scale.data(), bias.data(), y.data(), mean.data(), inv.data(), rows, cols, 1e-5f, false, kStream);
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < cols; ++j) m += x[r * cols + j];
    m /= cols;
    for (int64_t j = 0; j < cols; ++j) v += (x[r * cols + j] - m) * (x[r * cols + j] - m);
    const double is = 1.0 / std::sqrt(v / cols + 1e-5);
    EXPECT_NEAR(mean[r], m, 1e-5);
    EXPECT_NEAR(inv[r], is, 1e-4);
    for (int64_t j = 0; j < cols; ++j) ASSERT_NEAR(y[r * cols + j], (x[r * cols + j] - m) * is * scale[j] + bias[j], 1e-4);
  }
  // Reduce over axes {0, 2} of [2, 3, 4]: kept dim 1, reduced dims 0 and 2.
  const std::vector<float> t = randoms(24, 12);
  Strided kept, red;
  kept.rank = 1, kept.dims[0] = 3, kept.strides[0] = 4;
  red.rank = 2, red.dims[0] = 2, red.strides[0] = 12, red.dims[1] = 4, red.strides[1] = 1;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kLogSumExp, ReduceOp::kL2}) {
    std::vector<float> r(3);
    reduce_f32(op, t.data(), kept, red, r.data(), 3, 8, kStream);
    for (int c = 0; c < 3; ++c) {
      double sum = 0, mx = -1e30, sq = 0;
      for (int a = 0; a < 2; ++a)
        for (int k = 0; k < 4; ++k) {
          const float v = t[a * 12 + c * 4 + k];
          sum += v, mx = std::max<double>(mx, v), sq += v * v;
        }
      double lse = 0;
      for (int a = 0; a < 2; ++a)
        for (int k = 0; k < 4; ++k) lse += std::exp(t[a * 12 + c * 4 + k] - mx);
      const double want = op == ReduceOp::kSum ? sum : op == ReduceOp::kMax ? mx : op == ReduceOp::kL2 ? std::sqrt(sq) : mx + std::log(lse);
      EXPECT_NEAR(r[c], want, 1e-5) << "op " << int(op) << " channel " << c;
    }
  }
  // ArgMax over axis 1 of [2, 5, 3], ties resolved to the first / last index.
  std::vector<float> am = randoms(30, 13);
  am[(0 * 5 + 1) * 3 + 0] = am[(0 * 5 + 3) * 3 + 0] = 9.f;
  for (bool last : {false, true}) {
    std::vector<int64_t> ai(6);
    arg_reduce_f32(true, last, am.data(), ai.data(), 2, 5, 3, kStream);
    EXPECT_EQ(ai[0], last ? 3 : 1);
    for (int o = 0; o < 2; ++o)
      for (int k = 0; k < 3; ++k) {
        if (o == 0 && k == 0) continue;
        int64_t best = 0;
        for (int j = 1; j < 5; ++j)
          if (am[(o * 5 + j) * 3 + k] > am[(o * 5 + best) * 3 + k]) best = j;
        EXPECT_EQ(ai[o * 3 + k], best);
      }
  }
}

TEST(CudaKernelsEmulated, FusedAttention) {
  // y[b, h] = softmax(scale * q[b, h] kt[h] + bias[b, 0, 0, :]) v[b, h]: keys shared over the
  // batch, a key-padding bias with -inf entries; 300 keys so a block loops over them.
  const int64_t B = 2, H = 3, sq = 5, d = 8, sk = 300, dv = 6;
  const std::vector<float> q = randoms(B * H * sq * d, 14), kt = randoms(H * d * sk, 15), v = randoms(B * H * sk * dv, 16);
  std::vector<float> bias = randoms(B * sk, 17);
  bias[3] = bias[sk + 7] = -std::numeric_limits<float>::infinity();
  AttentionArgs a;
  a.q = q.data(), a.kt = kt.data(), a.v = v.data(), a.bias = bias.data();
  std::vector<float> y(B * H * sq * dv);
  a.y = y.data();
  const std::vector<int64_t> batch = {B, H};
  a.bq = view({B, H}, batch);
  a.bk = view({1, H}, batch);
  a.bv = view({B, H}, batch);
  for (Strided* s : {&a.bq, &a.bk, &a.bv})
    for (int k = 0; k < s->rank; ++k) s->strides[k] *= s == &a.bq ? sq * d : s == &a.bk ? d * sk : sk * dv;
  a.bb = view({B, 1}, batch);
  for (int k = 0; k < a.bb.rank; ++k) a.bb.strides[k] *= sk;
  a.bias_row = 0, a.bias_col = 1;
  a.batch = B * H, a.sq = sq, a.d = d, a.sk = sk, a.dv = dv, a.scale = 0.35f;
  std::vector<float> scratch(static_cast<size_t>(attention_scratch_floats(a.batch, sq, sk)));
  attention_f32(a, scratch.data(), kStream);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < sq; ++i) {
        std::vector<double> s(sk);
        double m = -1e300, sum = 0;
        for (int64_t j = 0; j < sk; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < d; ++k) acc += double(q[((b * H + h) * sq + i) * d + k]) * kt[(h * d + k) * sk + j];
          s[j] = 0.35 * acc + bias[b * sk + j];
          m = std::max(m, s[j]);
        }
        for (auto& e : s) sum += (e = std::exp(e - m));
        for (int64_t c = 0; c < dv; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < sk; ++j) acc += s[j] * v[((b * H + h) * sk + j) * dv + c];
          ASSERT_NEAR(y[((b * H + h) * sq + i) * dv + c], acc / sum, 1e-5) << b << " " << h << " " << i << " " << c;
        }
      }
}

TEST(CudaKernelsEmulated, ChannelBiasActivation) {
  const int64_t n = 2, c = 3, sp = 50;
  const std::vector<float> x = randoms(n * c * sp, 18), bias = randoms(c, 19);
  struct Case {
    const float* bias;
    ConvAct act;
    float lo, hi;
  };
  for (const Case& k : {Case{bias.data(), ConvAct::kNone, 0, 0}, Case{bias.data(), ConvAct::kRelu, 0, 0},
                        Case{nullptr, ConvAct::kClip, -0.5f, 0.6f}, Case{bias.data(), ConvAct::kClip, 0.f, 6.f}}) {
    std::vector<float> y = x;
    channel_bias_act_f32(y.data(), k.bias, n, c, sp, k.act, k.lo, k.hi, kStream);
    for (int64_t i = 0; i < n * c * sp; ++i) {
      float v = x[i] + (k.bias ? k.bias[(i / sp) % c] : 0.f);
      if (k.act == ConvAct::kRelu) v = std::max(v, 0.f);
      if (k.act == ConvAct::kClip) v = std::min(std::max(v, k.lo), k.hi);
      ASSERT_FLOAT_EQ(y[i], v) << "act " << int(k.act) << " at " << i;
    }
  }
}

TEST(CudaKernelsEmulated, PadEveryMode) {
  // Every mode over a 3-d tensor with pads longer than a dim (reflect and wrap go round more than
  // once), a negative pad (a crop) and 1- and 8-byte elements, against the CPU EP's per-dim index
  // maps (onyx::pad_index_map: the rule shape inference and the CPU kernel follow).
  const std::vector<int64_t> in = {2, 3, 4};
  const std::vector<int64_t> begin = {1, 4, -1}, end = {0, 5, 6};
  const char* names[] = {"constant", "reflect", "edge", "wrap"};
  const PadMode modes[] = {PadMode::kConstant, PadMode::kReflect, PadMode::kEdge, PadMode::kWrap};
  PadGeometry g;
  g.rank = 3;
  int64_t n = 1;
  std::vector<int64_t> out(3);
  for (int k = 0; k < 3; ++k) {
    g.in[k] = in[k];
    out[k] = g.out[k] = in[k] + begin[k] + end[k];
    g.begin[k] = begin[k];
    n *= out[k];
  }
  std::vector<int64_t> x64(24);
  std::vector<uint8_t> x8(24);
  for (int i = 0; i < 24; ++i) x64[i] = 1000 + i, x8[i] = static_cast<uint8_t>(i + 1);
  for (int m = 0; m < 4; ++m) {
    onyx::Node node;
    std::vector<std::vector<int64_t>> map(3);
    for (int k = 0; k < 3; ++k) map[k] = onyx::pad_index_map(node, names[m], in[k], out[k], begin[k]);
    const int64_t v64 = -5;
    const uint8_t v8 = 200;
    std::vector<int64_t> y64(n);
    std::vector<uint8_t> y8(n);
    pad(x64.data(), y64.data(), g, modes[m], &v64, 8, n, kStream);
    pad(x8.data(), y8.data(), g, modes[m], &v8, 1, n, kStream);
    for (int64_t i = 0; i < n; ++i) {
      const auto o = unravel(i, out);
      int64_t src = 0;
      bool constant = false;
      for (int k = 0; k < 3; ++k) {
        const int64_t j = map[k][o[k]];
        constant |= j < 0;
        src = src * in[k] + j;
      }
      ASSERT_EQ(y64[i], constant ? v64 : x64[src]) << names[m] << " at " << i;
      ASSERT_EQ(y8[i], constant ? v8 : x8[src]) << names[m] << " at " << i;
    }
  }
}

TEST(CudaKernelsEmulated, DirectPoolingMatchesTheCpuEp) {
  // What cuDNN's pooling cannot express (ceil_mode, dilations, asymmetric pads, Indices with
  // either storage order, 1-D and 3-D), against the CPU EP running the same node: the geometry
  // from onyx::window_geometry, as the CUDA kernel gets it.
  using namespace onyx;
  using namespace onyx::test;
  struct Case {
    const char* op;
    Shape x;
    std::vector<AttrSpec> attrs;
  };
  const Case cases[] = {
      {"MaxPool", Shape{2, 3, 9, 10}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)}},
      {"MaxPool", Shape{1, 2, 11, 12},
       {attr_ints("kernel_shape", {2, 3}), attr_ints("dilations", {2, 2}), attr_ints("pads", {1, 0, 0, 2}), attr_int("storage_order", 1)}},
      {"MaxPool", Shape{1, 3, 20}, {attr_ints("kernel_shape", {4}), attr_ints("strides", {3}), attr_ints("pads", {2, 1})}},
      {"AveragePool", Shape{2, 2, 7, 9}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1}),
                                          attr_int("ceil_mode", 1), attr_int("count_include_pad", 1)}},
      {"AveragePool", Shape{1, 2, 8, 8}, {attr_ints("kernel_shape", {3, 2}), attr_ints("pads", {0, 1, 2, 0}), attr_int("ceil_mode", 1)}},
      {"AveragePool", Shape{1, 2, 5, 6, 7}, {attr_ints("kernel_shape", {2, 3, 2}), attr_ints("strides", {2, 2, 3}),
                                             attr_string("auto_pad", "SAME_UPPER")}},
      {"LpPool", Shape{1, 3, 9, 8}, {attr_ints("kernel_shape", {3, 2}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 0, 1, 1}),
                                     attr_int("ceil_mode", 1), attr_int("p", 2)}},
      {"LpPool", Shape{2, 2, 11}, {attr_ints("kernel_shape", {4}), attr_ints("dilations", {2}), attr_int("p", 3)}},
  };
  for (const Case& c : cases) {
    const bool max = std::string(c.op) == "MaxPool";
    GraphSpec g;
    g.nodes.push_back({c.op, {"x"}, max ? std::vector<std::string>{"y", "i"} : std::vector<std::string>{"y"}, c.attrs, "pool"});
    g.inputs.push_back({"x", DType::kFloat, c.x.to_vector()});
    g.outputs.push_back(any_out("y"));
    if (max) g.outputs.push_back(any_out("i", DType::kInt64));
    const std::string m = encode_model(g, 19);
    Session s = Session::builder().commit_from_memory(m.data(), m.size());
    Tensor x(DType::kFloat, c.x);
    const std::vector<float> r = randoms(static_cast<size_t>(x.numel()), 11);
    SCOPED_TRACE(c.op);
    std::copy(r.begin(), r.end(), x.data<float>());
    if (max) x.data<float>()[5] = x.data<float>()[6] = 10.0f;  // a tie for a window's maximum: the first tap wins
    const auto want = s.run({{"x", Value(x)}});
    const Tensor& wy = want[0].tensor();
    // The CUDA kernel's arguments.
    const size_t sp = c.x.size() - 2;
    Node node;
    for (const AttrSpec& a : c.attrs) {
      Attribute at;
      at.name = a.name;
      if (a.kind == AttrSpec::kInts) at.type = AttrType::kInts, at.ints = a.ints;
      if (a.kind == AttrSpec::kInt) at.type = AttrType::kInt, at.i = a.i;
      if (a.kind == AttrSpec::kString) at.type = AttrType::kString, at.s = a.s;
      node.attrs.push_back(at);
    }
    const Shape kernel(node.attr_ints("kernel_shape"));
    const WindowGeometry geo = window_geometry(node, Shape(std::span<const int64_t>(c.x.data() + 2, sp)), kernel, true);
    const float p = std::string(c.op) == "LpPool" ? static_cast<float>(node.attr_int("p", 2)) : 0.0f;
    const PoolArgs a = pool_args(c.x, geo, max, node.attr_int("count_include_pad", 0) != 0, node.attr_int("storage_order", 0) != 0, p);
    std::vector<float> y(static_cast<size_t>(wy.numel()));
    std::vector<int64_t> idx(y.size());
    pool_f32(x.data<float>(), y.data(), max ? idx.data() : nullptr, a, kStream);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], wy.data<float>()[i], 1e-5) << c.op << " at " << i;
    if (max) {
      for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(idx[i], want[1].tensor().data<int64_t>()[i]) << "Indices at " << i;
    }
  }
}

TEST(CudaKernelsEmulated, InstanceAndGroupNormalizationMatchTheCpuEp) {
  // The CUDA EP's InstanceNormalization and GroupNormalization (LayerNormalization's row kernel
  // over each plane or group, then the scale and bias) against the CPU EP running the node.
  using namespace onyx;
  using namespace onyx::test;
  const Shape xs{2, 3, 5, 7};
  GraphSpec g;
  g.nodes.push_back({"InstanceNormalization", {"x", "s", "b"}, {"y"}, {attr_float("epsilon", 1e-3f)}, "in"});
  g.inputs.push_back({"x", DType::kFloat, xs.to_vector()});
  g.outputs.push_back(any_out("y"));
  const std::vector<float> sc = randoms(3, 21), bi = randoms(3, 22);
  g.initializers.emplace_back("s", Tensor::from_vector<float>(Shape{3}, sc));
  g.initializers.emplace_back("b", Tensor::from_vector<float>(Shape{3}, bi));
  const std::string m = encode_model(g, 17);
  Session s = Session::builder().commit_from_memory(m.data(), m.size());
  Tensor x(DType::kFloat, xs);
  const std::vector<float> r = randoms(static_cast<size_t>(x.numel()), 23, 1, 4);
  std::copy(r.begin(), r.end(), x.data<float>());
  const Tensor want = s.run({{"x", Value(x)}})[0].tensor();
  std::vector<float> y(r.size());
  layernorm_f32(r.data(), nullptr, nullptr, y.data(), nullptr, nullptr, 6, 35, 1e-3f, false, kStream);
  channel_scale_bias_f32(y.data(), sc.data(), bi.data(), 2, 3, 35, kStream);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], want.data<float>()[i], 1e-4) << "at " << i;
  // GroupNormalization, 3 groups of 2 channels: per-group scale and bias at opset 18, per-channel at 21.
  for (int64_t opset : {18, 21}) {
    const Shape gs{2, 6, 3, 4};
    const int64_t nscale = opset == 18 ? 3 : 6;
    GraphSpec gg;
    gg.nodes.push_back({"GroupNormalization", {"x", "s", "b"}, {"y"}, {attr_int("num_groups", 3), attr_float("epsilon", 1e-4f)}, "gn"});
    gg.inputs.push_back({"x", DType::kFloat, gs.to_vector()});
    gg.outputs.push_back(any_out("y"));
    const std::vector<float> gsc = randoms(static_cast<size_t>(nscale), 31), gbi = randoms(static_cast<size_t>(nscale), 32);
    gg.initializers.emplace_back("s", Tensor::from_vector<float>(Shape{nscale}, gsc));
    gg.initializers.emplace_back("b", Tensor::from_vector<float>(Shape{nscale}, gbi));
    const std::string gm = encode_model(gg, opset);
    Session gsess = Session::builder().commit_from_memory(gm.data(), gm.size());
    Tensor gx(DType::kFloat, gs);
    const std::vector<float> gr = randoms(static_cast<size_t>(gx.numel()), 33, -1, 3);
    std::copy(gr.begin(), gr.end(), gx.data<float>());
    const Tensor gwant = gsess.run({{"x", Value(gx)}})[0].tensor();
    std::vector<float> gy(gr.size());
    layernorm_f32(gr.data(), nullptr, nullptr, gy.data(), nullptr, nullptr, 2 * 3, 2 * 12, 1e-4f, false, kStream);
    if (opset == 18)
      channel_scale_bias_f32(gy.data(), gsc.data(), gbi.data(), 2, 3, 2 * 12, kStream);
    else
      channel_scale_bias_f32(gy.data(), gsc.data(), gbi.data(), 2, 6, 12, kStream);
    for (size_t i = 0; i < gy.size(); ++i) ASSERT_NEAR(gy[i], gwant.data<float>()[i], 1e-4) << "GroupNormalization-" << opset << " at " << i;
  }
}

TEST(CudaKernelsEmulated, ResizePassesMatchTheCpuEp) {
  // The CUDA EP's Resize: ops/image's per-axis plans (what the CPU EP builds), one pass per resized
  // axis, against the CPU EP running the node: nearest, linear, cubic, antialiased down-scaling,
  // several coordinate transformations, up and down.
  using namespace onyx;
  using namespace onyx::test;
  struct Case {
    std::vector<AttrSpec> attrs;
    std::vector<float> scales;
  };
  const Case cases[] = {
      {{attr_string("mode", "nearest"), attr_string("coordinate_transformation_mode", "asymmetric"), attr_string("nearest_mode", "floor")},
       {1, 1, 2.0f, 1.5f}},
      {{attr_string("mode", "linear")}, {1, 1, 1.6f, 2.0f}},
      {{attr_string("mode", "linear"), attr_string("coordinate_transformation_mode", "align_corners")}, {1, 1, 0.6f, 0.5f}},
      {{attr_string("mode", "cubic"), attr_string("coordinate_transformation_mode", "pytorch_half_pixel"), attr_int("exclude_outside", 1)},
       {1, 1, 1.5f, 0.75f}},
      {{attr_string("mode", "linear"), attr_int("antialias", 1)}, {1, 1, 0.4f, 0.5f}},
      {{attr_string("mode", "nearest"), attr_string("nearest_mode", "round_prefer_ceil")}, {1, 2, 0.5f, 1.0f}},
  };
  const Shape xs{1, 2, 10, 8};
  for (const Case& c : cases) {
    GraphSpec g;
    g.nodes.push_back({"Resize", {"x", "", "s"}, {"y"}, c.attrs, "resize"});
    g.inputs.push_back({"x", DType::kFloat, xs.to_vector()});
    g.outputs.push_back(any_out("y"));
    g.initializers.emplace_back("s", Tensor::from_vector<float>(Shape{4}, c.scales));
    const std::string m = encode_model(g, 19);
    Session s = Session::builder().commit_from_memory(m.data(), m.size());
    Tensor x(DType::kFloat, xs);
    const std::vector<float> r = randoms(static_cast<size_t>(x.numel()), 41);
    std::copy(r.begin(), r.end(), x.data<float>());
    const Tensor want = s.run({{"x", Value(x)}})[0].tensor();
    // The kernel's host side, with the emulated passes.
    Node node;
    node.op_type = "Resize";
    node.opset = 19;
    node.inputs = {0, -1, 1};
    node.outputs = {2};
    for (const AttrSpec& a : c.attrs) {
      Attribute at;
      at.name = a.name;
      if (a.kind == AttrSpec::kInt) at.type = AttrType::kInt, at.i = a.i;
      if (a.kind == AttrSpec::kString) at.type = AttrType::kString, at.s = a.s;
      node.attrs.push_back(at);
    }
    const ResizeAttrs ra = parse_resize_attrs(node);
    Shape out;
    std::vector<double> axis_scale;
    resize_geometry(node, ra, xs, c.scales.data(), 4, nullptr, 0, out, axis_scale);
    ASSERT_EQ(out, want.shape());
    std::vector<float> cur = r, next;
    Shape cs = xs;
    for (size_t k = 0; k < 4; ++k) {
      ResizeAxisPlan<float> p;
      build_resize_axis(ra, p, xs[k], out[k], axis_scale[k], 0.0, 1.0, "resize");
      if (p.identity) continue;
      int64_t outer = 1, inner = 1;
      for (size_t d = 0; d < k; ++d) outer *= cs[d];
      for (size_t d = k + 1; d < 4; ++d) inner *= cs[d];
      next.assign(static_cast<size_t>(outer * out[k] * inner), NAN);
      resize_pass_f32(cur.data(), next.data(), outer, cs[k], out[k], inner, p.taps, p.idx.data(), p.w.empty() ? nullptr : p.w.data(),
                      kStream);
      cur.swap(next);
      cs[k] = out[k];
    }
    ASSERT_EQ(static_cast<int64_t>(cur.size()), want.numel());
    for (size_t i = 0; i < cur.size(); ++i) ASSERT_NEAR(cur[i], want.data<float>()[i], 1e-4) << c.attrs[0].s << " case at " << i;
  }
}

TEST(CudaKernelsEmulated, GatherElementsAndCumSumMatchTheCpuEp) {
  using namespace onyx;
  using namespace onyx::test;
  // GatherElements along each axis of [3, 4, 5], indices narrower than the data, negative ones.
  const Shape ds{3, 4, 5};
  const std::vector<float> data = randoms(60, 51);
  for (int64_t axis : {0, 1, -1}) {
    const Shape is{2, 3, 4};
    const int64_t len = ds[axis < 0 ? 2 : axis];
    std::vector<int64_t> idx(24);
    for (int64_t i = 0; i < 24; ++i) idx[i] = (i * 7 % (2 * len)) - len;  // in [-len, len)
    GraphSpec g;
    g.nodes.push_back({"GatherElements", {"x", "i"}, {"y"}, {attr_int("axis", axis)}, "ge"});
    g.inputs.push_back({"x", DType::kFloat, ds.to_vector()});
    g.outputs.push_back(any_out("y"));
    g.initializers.emplace_back("i", Tensor::from_vector<int64_t>(is, idx));
    const std::string m = encode_model(g, 13);
    Session s = Session::builder().commit_from_memory(m.data(), m.size());
    const Tensor want = s.run({{"x", Value(Tensor::from_vector<float>(ds, data))}})[0].tensor();
    GatherElementsArgs a;
    a.rank = 3;
    a.axis = static_cast<int>(axis < 0 ? 2 : axis);
    a.axis_dim = len;
    const int64_t st[3] = {20, 5, 1};
    for (int d = 0; d < 3; ++d) a.out[d] = is[d], a.data_strides[d] = st[d];
    std::vector<float> y(24);
    int error = 0;
    gather_elements(data.data(), idx.data(), true, y.data(), 4, a, 24, &error, kStream);
    EXPECT_EQ(error, 0);
    for (int64_t i = 0; i < 24; ++i) ASSERT_EQ(y[i], want.data<float>()[i]) << "axis " << axis << " at " << i;
    std::vector<int32_t> bad(24, 0);
    bad[5] = static_cast<int32_t>(len);
    gather_elements(data.data(), bad.data(), false, y.data(), 4, a, 24, &error, kStream);
    EXPECT_EQ(error, 1);
  }
  // CumSum along the middle axis, each of exclusive / reverse.
  const Shape cs{2, 5, 3};
  const std::vector<float> x = randoms(30, 52);
  for (int ex = 0; ex < 2; ++ex)
    for (int rev = 0; rev < 2; ++rev) {
      GraphSpec g;
      g.nodes.push_back({"CumSum", {"x", "a"}, {"y"}, {attr_int("exclusive", ex), attr_int("reverse", rev)}, "cs"});
      g.inputs.push_back({"x", DType::kFloat, cs.to_vector()});
      g.outputs.push_back(any_out("y"));
      g.initializers.emplace_back("a", Tensor::from_vector<int64_t>(Shape{}, {1}));
      const std::string m = encode_model(g, 14);
      Session s = Session::builder().commit_from_memory(m.data(), m.size());
      const Tensor want = s.run({{"x", Value(Tensor::from_vector<float>(cs, x))}})[0].tensor();
      std::vector<float> y(30);
      cumsum(Ty::kF32, x.data(), y.data(), 2, 5, 3, ex != 0, rev != 0, kStream);
      for (int64_t i = 0; i < 30; ++i) ASSERT_NEAR(y[i], want.data<float>()[i], 1e-5) << "exclusive " << ex << " reverse " << rev << " at " << i;
    }
}

// ---------------------------------------------------------------------------------------------
// float16 and bfloat16 storage (providers/cuda/half.hpp): the conversions bit for bit against the
// CPU runtime's own (onyx::Float16 / onyx::BFloat16), and every templated kernel family run on
// 16-bit data against the float32 kernel given the same values (inputs rounded to the storage
// type first), within what rounding the output to 16 bits allows.

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Kind16 {
  Ty ty;
  const char* name;
  float rtol;
  uint16_t (*from)(float);
  float (*to)(uint16_t);
};
const Kind16 kKinds16[] = {
    {Ty::kF16, "float16", 1e-2f, &onyx::Float16::from_float, &onyx::Float16::to_float},
    {Ty::kBF16, "bfloat16", 2e-2f, &onyx::BFloat16::from_float, &onyx::BFloat16::to_float},
};

std::vector<uint16_t> pack(const Kind16& k, const std::vector<float>& v) {
  std::vector<uint16_t> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = k.from(v[i]);
  return r;
}
std::vector<float> unpack(const Kind16& k, const std::vector<uint16_t>& v) {
  std::vector<float> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = k.to(v[i]);
  return r;
}
std::vector<float> rounded(const Kind16& k, std::vector<float> v) {
  for (float& x : v) x = k.to(k.from(x));
  return v;
}
/// got (16-bit results, widened) against want (the fp32 kernel on the rounded inputs): relative
/// tolerance of the storage type, with a floor of `scale` for values near zero.
void expect_close(const Kind16& k, const std::vector<float>& got, const std::vector<float>& want, const std::string& what,
                  float scale = 0.05f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << k.name << " " << what << " at " << i;
      continue;
    }
    if (std::isinf(want[i])) {
      ASSERT_EQ(got[i], want[i]) << k.name << " " << what << " at " << i;
      continue;
    }
    ASSERT_NEAR(got[i], want[i], k.rtol * std::max(std::abs(want[i]), scale)) << k.name << " " << what << " at " << i;
  }
}

}  // namespace

TEST(CudaKernelsEmulated, HalfConversionsAreExact) {
  // Every float16 / bfloat16 bit pattern widens as the CPU runtime widens it, and rounds back to
  // itself (NaN to the hardware's canonical quiet NaN 0x7fff).
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    const float f = to_f(f16{h}), g = to_f(bf16{h});
    const float want_f = onyx::Float16::to_float(h), want_g = onyx::BFloat16::to_float(h);
    if (std::isnan(want_f)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << b;
      EXPECT_EQ(from_f<f16>(f).bits, 0x7fffu) << std::hex << b;
    } else {
      ASSERT_EQ(bits_of(f), bits_of(want_f)) << "float16 " << std::hex << b;
      ASSERT_EQ(from_f<f16>(f).bits, h) << "float16 round trip " << std::hex << b;
    }
    if (std::isnan(want_g)) {
      ASSERT_TRUE(std::isnan(g)) << std::hex << b;
      EXPECT_EQ(from_f<bf16>(g).bits, 0x7fffu) << std::hex << b;
    } else {
      ASSERT_EQ(bits_of(g), bits_of(want_g)) << "bfloat16 " << std::hex << b;
      ASSERT_EQ(from_f<bf16>(g).bits, h) << "bfloat16 round trip " << std::hex << b;
    }
  }
  // float -> 16 bits rounds to nearest, ties to even, as the CPU runtime: a sweep over float bit
  // patterns (every exponent: subnormal results, overflow to infinity, ties at every scale) and
  // the exact halfway points between neighbouring 16-bit values.
  auto check = [](float x) {
    if (std::isnan(x)) {
      ASSERT_EQ(from_f<f16>(x).bits, 0x7fffu);
      ASSERT_EQ(from_f<bf16>(x).bits, 0x7fffu);
      return;
    }
    ASSERT_EQ(from_f<f16>(x).bits, onyx::Float16::from_float(x)) << "float16 of " << x << " (" << std::hex << bits_of(x) << ")";
    ASSERT_EQ(from_f<bf16>(x).bits, onyx::BFloat16::from_float(x)) << "bfloat16 of " << x << " (" << std::hex << bits_of(x) << ")";
  };
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4093) check(float_of(static_cast<uint32_t>(u)));
  for (uint32_t b = 0; b < 0x7c00u; ++b) {  // float16 halfway points (and a hair either side)
    const float lo = onyx::Float16::to_float(static_cast<uint16_t>(b)), hi = onyx::Float16::to_float(static_cast<uint16_t>(b + 1));
    const float mid = float_of((bits_of(lo) + bits_of(hi)) / 2);  // exact: the neighbours differ in few low bits
    const float half_way = static_cast<float>((static_cast<double>(lo) + hi) / 2);
    for (float x : {half_way, std::nextafter(half_way, 0.f), std::nextafter(half_way, 1e30f), mid}) {
      check(x);
      check(-x);
    }
  }
  for (uint32_t b = 0; b < 0x7f80u; b += 3) {  // bfloat16 ties: the low 16 bits exactly 0x8000
    check(float_of((b << 16) | 0x8000u));
    check(float_of((b << 16) | 0x8001u));
    check(-float_of((b << 16) | 0x7fffu));
  }
  EXPECT_EQ(from_f<f16>(65519.f).bits, 0x7bffu);  // rounds down to the largest finite
  EXPECT_EQ(from_f<f16>(65520.f).bits, 0x7c00u);  // the tie rounds to even: infinity
  EXPECT_EQ(from_f<f16>(-1e-8f).bits, 0x8000u);   // below half the smallest subnormal: -0
  EXPECT_EQ(from_f<bf16>(3.4e38f).bits, 0x7f80u);  // past the largest finite bfloat16: infinity
}

TEST(CudaKernelsEmulated, HalfUnaryAndCast) {
  const std::vector<float> x = randoms(700, 31, -4, 4);
  const UnaryOp ops[] = {UnaryOp::kRelu, UnaryOp::kSigmoid, UnaryOp::kTanh, UnaryOp::kExp, UnaryOp::kErf, UnaryOp::kGelu,
                         UnaryOp::kGeluTanh, UnaryOp::kSoftplus, UnaryOp::kHardSwish, UnaryOp::kClip, UnaryOp::kLeakyRelu,
                         UnaryOp::kAbs, UnaryOp::kNeg, UnaryOp::kFloor, UnaryOp::kMish, UnaryOp::kSin};
  for (const Kind16& k : kKinds16) {
    const std::vector<float> xr = rounded(k, x);
    const std::vector<uint16_t> xh = pack(k, x);
    for (UnaryOp op : ops) {
      const float a = op == UnaryOp::kClip ? -1.5f : 0.1f, b = op == UnaryOp::kClip ? 2.f : 0.f;
      std::vector<float> want(x.size());
      std::vector<uint16_t> got(x.size());
      unary_f32(op, xr.data(), want.data(), static_cast<int64_t>(x.size()), a, b, kStream);
      unary(k.ty, op, xh.data(), got.data(), static_cast<int64_t>(x.size()), a, b, kStream);
      expect_close(k, unpack(k, got), want, "unary op " + std::to_string(int(op)));
    }
    // Cast to and from the 16-bit type: the CPU runtime's conversions exactly.
    std::vector<uint16_t> c16(x.size());
    cast(Ty::kF32, x.data(), k.ty, c16.data(), static_cast<int64_t>(x.size()), kStream);
    EXPECT_EQ(c16, xh) << k.name;
    std::vector<float> back(x.size());
    cast(k.ty, xh.data(), Ty::kF32, back.data(), static_cast<int64_t>(x.size()), kStream);
    EXPECT_EQ(back, xr) << k.name;
    const std::vector<int64_t> ints = {-3, 0, 7, 300};
    std::vector<uint16_t> ih(4);
    cast(Ty::kI64, ints.data(), k.ty, ih.data(), 4, kStream);
    EXPECT_EQ(unpack(k, ih), (std::vector<float>{-3, 0, 7, 300})) << k.name;
  }
  // float16 <-> bfloat16 through fp32.
  std::vector<uint16_t> h = pack(kKinds16[0], x), g(x.size());
  cast(Ty::kF16, h.data(), Ty::kBF16, g.data(), static_cast<int64_t>(x.size()), kStream);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(g[i], onyx::BFloat16::from_float(onyx::Float16::to_float(h[i]))) << i;
}

TEST(CudaKernelsEmulated, HalfBinaryBroadcastAndCompare) {
  const std::vector<int64_t> out = {2, 3, 4};
  const std::vector<float> a = randoms(24, 32, 0.5f, 3), b = randoms(3, 33, 0.5f, 3), sa = randoms(24, 34);
  const BinaryOp ops[] = {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv, BinaryOp::kPow,
                          BinaryOp::kMax, BinaryOp::kMin, BinaryOp::kPRelu, BinaryOp::kFmod};
  for (const Kind16& k : kKinds16) {
    const std::vector<float> ar = rounded(k, a), br = rounded(k, b), sr = rounded(k, sa);
    const std::vector<uint16_t> ah = pack(k, a), bh = pack(k, b), sh = pack(k, sa);
    for (BinaryOp op : ops) {
      const bool signed_a = op == BinaryOp::kPRelu || op == BinaryOp::kAdd || op == BinaryOp::kMax;
      const std::vector<float>& x = signed_a ? sr : ar;
      const std::vector<uint16_t>& xh = signed_a ? sh : ah;
      std::vector<float> want(24);
      std::vector<uint16_t> got(24);
      binary(op, Ty::kF32, x.data(), view({2, 3, 4}, out), br.data(), view({3, 1}, out), want.data(), 24, kStream);
      binary(op, k.ty, xh.data(), view({2, 3, 4}, out), bh.data(), view({3, 1}, out), got.data(), 24, kStream);
      expect_close(k, unpack(k, got), want, "binary op " + std::to_string(int(op)));
    }
    for (BinaryOp op : {BinaryOp::kEqual, BinaryOp::kLess, BinaryOp::kGreater, BinaryOp::kLessEqual, BinaryOp::kGreaterEqual}) {
      std::vector<float> eq = ar;
      eq[5] = br[1];  // an equal pair: (0, 1, 1) against b[1]
      std::vector<uint16_t> eqh = pack(k, eq);
      std::vector<uint8_t> want(24), got(24);
      binary(op, Ty::kF32, eq.data(), view({2, 3, 4}, out), br.data(), view({3, 1}, out), want.data(), 24, kStream);
      binary(op, k.ty, eqh.data(), view({2, 3, 4}, out), bh.data(), view({3, 1}, out), got.data(), 24, kStream);
      EXPECT_EQ(got, want) << k.name << " compare " << int(op);
    }
  }
}

TEST(CudaKernelsEmulated, HalfSoftmaxLayerNormReduceArg) {
  for (const Kind16& k : kKinds16) {
    for (int64_t inner : {int64_t(1), int64_t(3)}) {
      const int64_t outer = 4, axis = 70;
      const std::vector<float> x = randoms(outer * axis * inner, 35, -5, 5);
      const std::vector<float> xr = rounded(k, x);
      const std::vector<uint16_t> xh = pack(k, x);
      for (bool log : {false, true}) {
        std::vector<float> want(x.size());
        std::vector<uint16_t> got(x.size());
        softmax_f32(xr.data(), want.data(), outer, axis, inner, log, kStream);
        softmax(k.ty, xh.data(), got.data(), outer, axis, inner, log, kStream);
        expect_close(k, unpack(k, got), want, log ? "log softmax" : "softmax", 1e-3f);
      }
    }
    const int64_t rows = 3, cols = 100;
    const std::vector<float> x = rounded(k, randoms(rows * cols, 36)), scale = rounded(k, randoms(cols, 37)), bias = rounded(k, randoms(cols, 38));
    std::vector<float> want(x.size()), mw(rows), iw(rows), mg(rows), ig(rows);
    std::vector<uint16_t> got(x.size());
    layernorm_f32(x.data(), scale.data(), bias.data(), want.data(), mw.data(), iw.data(), rows, cols, 1e-5f, false, kStream);
    const std::vector<uint16_t> xh = pack(k, x), sh = pack(k, scale), bh = pack(k, bias);
    layernorm(k.ty, xh.data(), sh.data(), bh.data(), got.data(), mg.data(), ig.data(), rows, cols, 1e-5f, false, kStream);
    expect_close(k, unpack(k, got), want, "layernorm", 0.25f);
    for (int64_t r = 0; r < rows; ++r) {  // fp32 statistics of the same (rounded) values
      EXPECT_FLOAT_EQ(mg[r], mw[r]);
      EXPECT_FLOAT_EQ(ig[r], iw[r]);
    }
    layernorm_f32(x.data(), scale.data(), nullptr, want.data(), nullptr, nullptr, rows, cols, 1e-6f, true, kStream);
    layernorm(k.ty, xh.data(), sh.data(), nullptr, got.data(), nullptr, nullptr, rows, cols, 1e-6f, true, kStream);
    expect_close(k, unpack(k, got), want, "rms norm", 0.25f);
    // Reduce over axes {0, 2} of [2, 3, 40].
    const std::vector<float> t = rounded(k, randoms(240, 39, 0.1f, 2));
    const std::vector<uint16_t> th = pack(k, t);
    Strided kept, red;
    kept.rank = 1, kept.dims[0] = 3, kept.strides[0] = 40;
    red.rank = 2, red.dims[0] = 2, red.strides[0] = 120, red.dims[1] = 40, red.strides[1] = 1;
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kL1, ReduceOp::kL2,
                        ReduceOp::kSumSquare, ReduceOp::kLogSum, ReduceOp::kLogSumExp}) {
      std::vector<float> rw(3);
      std::vector<uint16_t> rg(3);
      reduce_f32(op, t.data(), kept, red, rw.data(), 3, 80, kStream);
      reduce(k.ty, op, th.data(), kept, red, rg.data(), 3, 80, kStream);
      expect_close(k, unpack(k, rg), rw, "reduce op " + std::to_string(int(op)));
    }
    // ArgMax / ArgMin: the same indices as float32 on the same values (ties included).
    std::vector<float> am = rounded(k, randoms(30, 40));
    am[3] = am[9] = 9.f;
    const std::vector<uint16_t> amh = pack(k, am);
    for (bool max : {true, false})
      for (bool last : {false, true}) {
        std::vector<int64_t> iwant(6), igot(6);
        arg_reduce_f32(max, last, am.data(), iwant.data(), 2, 5, 3, kStream);
        arg_reduce(k.ty, max, last, amh.data(), igot.data(), 2, 5, 3, kStream);
        EXPECT_EQ(igot, iwant) << k.name << " max " << max << " last " << last;
      }
  }
}

TEST(CudaKernelsEmulated, HalfAttentionPoolResizeChannelPasses) {
  for (const Kind16& k : kKinds16) {
    // onyx::Attention: [2, 5, 8] queries, keys shared over the batch, a [2, 1, 7] bias.
    const int64_t B = 2, sq = 5, d = 8, sk = 7, dv = 6;
    const std::vector<float> q = rounded(k, randoms(B * sq * d, 41)), kt = rounded(k, randoms(d * sk, 42)),
                             v = rounded(k, randoms(B * sk * dv, 43)), bias = rounded(k, randoms(B * sk, 44));
    auto args = [&](const void* qp, const void* kp, const void* vp, const void* bp, void* yp) {
      AttentionArgs a;
      a.q = qp, a.kt = kp, a.v = vp, a.bias = bp, a.y = yp;
      a.batch = B, a.sq = sq, a.d = d, a.sk = sk, a.dv = dv, a.scale = 0.35f;
      a.bq.rank = a.bk.rank = a.bv.rank = a.bb.rank = 1;
      a.bq.dims[0] = a.bk.dims[0] = a.bv.dims[0] = a.bb.dims[0] = B;
      a.bq.strides[0] = sq * d, a.bk.strides[0] = 0, a.bv.strides[0] = sk * dv, a.bb.strides[0] = sk;
      a.bias_row = 0, a.bias_col = 1;
      return a;
    };
    std::vector<float> scratch(static_cast<size_t>(attention_scratch_floats(B, sq, sk))), want(B * sq * dv);
    std::vector<uint16_t> got(want.size());
    attention_f32(args(q.data(), kt.data(), v.data(), bias.data(), want.data()), scratch.data(), kStream);
    const std::vector<uint16_t> qh = pack(k, q), kh = pack(k, kt), vh = pack(k, v), bh = pack(k, bias);
    attention(k.ty, args(qh.data(), kh.data(), vh.data(), bh.data(), got.data()), scratch.data(), kStream);
    expect_close(k, unpack(k, got), want, "attention", 0.25f);

    // Direct pooling: 3x3 max with Indices and average with pads, on [1, 2, 6, 6].
    const std::vector<float> x = rounded(k, randoms(72, 45));
    const std::vector<uint16_t> xh = pack(k, x);
    for (bool max : {true, false}) {
      PoolArgs p;
      p.planes = 2;
      p.in[0] = p.in[1] = 6, p.out[0] = p.out[1] = 3, p.k[0] = p.k[1] = 3, p.s[0] = p.s[1] = 2;
      p.pad_begin[0] = p.pad_begin[1] = 1, p.pad_end[0] = p.pad_end[1] = 0;
      p.max = max;
      std::vector<float> pw(18);
      std::vector<uint16_t> pg(18);
      std::vector<int64_t> iw(18), ig(18);
      pool_f32(x.data(), pw.data(), max ? iw.data() : nullptr, p, kStream);
      pool(k.ty, xh.data(), pg.data(), max ? ig.data() : nullptr, p, kStream);
      expect_close(k, unpack(k, pg), pw, max ? "max pool" : "average pool");
      if (max) {
        EXPECT_EQ(ig, iw) << k.name;
      }
    }
    // One linear Resize pass along the middle axis of [2, 4, 3] -> [2, 7, 3] (2 taps per output).
    std::vector<int64_t> idx(14);
    std::vector<float> w(14);
    for (int o = 0; o < 7; ++o) {
      const float src = o * 3.f / 6.f;
      const int i0 = static_cast<int>(src);
      idx[2 * o] = i0, idx[2 * o + 1] = std::min(i0 + 1, 3);
      w[2 * o + 1] = src - i0, w[2 * o] = 1.f - (src - i0);
    }
    const std::vector<float> r = rounded(k, randoms(24, 46));
    const std::vector<uint16_t> rh = pack(k, r);
    std::vector<float> rw(42);
    std::vector<uint16_t> rg(42);
    resize_pass_f32(r.data(), rw.data(), 2, 4, 7, 3, 2, idx.data(), w.data(), kStream);
    resize_pass(k.ty, rh.data(), rg.data(), 2, 4, 7, 3, 2, idx.data(), w.data(), kStream);
    expect_close(k, unpack(k, rg), rw, "resize pass");

    // The convolution's bias + Clip pass, the per-channel affine step and batch normalisation,
    // on [2, 3, 5] (n, c, spatial).
    const std::vector<float> y0 = rounded(k, randoms(30, 47)), cb = rounded(k, randoms(3, 48));
    std::vector<float> yw = y0;
    std::vector<uint16_t> yg = pack(k, y0);
    const std::vector<uint16_t> cbh = pack(k, cb);
    channel_bias_act_f32(yw.data(), cb.data(), 2, 3, 5, ConvAct::kClip, -1.f, 1.5f, kStream);
    channel_bias_act(k.ty, yg.data(), cbh.data(), 2, 3, 5, ConvAct::kClip, -1.f, 1.5f, kStream);
    expect_close(k, unpack(k, yg), yw, "channel bias + clip");
    const std::vector<float> sc = randoms(3, 49), sh = randoms(3, 50), mean = randoms(3, 51), var = randoms(3, 52, 0.2f, 2);
    yw = y0;
    yg = pack(k, y0);
    channel_scale_bias_f32(yw.data(), sc.data(), sh.data(), 2, 3, 5, kStream);
    channel_scale_bias(k.ty, yg.data(), sc.data(), sh.data(), 2, 3, 5, kStream);
    expect_close(k, unpack(k, yg), yw, "channel scale + bias");
    std::vector<float> bn_ref(30), bn_f32(30);
    std::vector<uint16_t> bn_got(30);
    for (int64_t i = 0; i < 30; ++i) {
      const int64_t c = (i / 5) % 3;
      bn_ref[i] = static_cast<float>((y0[i] - mean[c]) * sc[c] / std::sqrt(var[c] + 1e-5) + sh[c]);
    }
    batch_norm(Ty::kF32, y0.data(), bn_f32.data(), sc.data(), sh.data(), mean.data(), var.data(), 1e-5f, 2, 3, 5, kStream);
    for (int64_t i = 0; i < 30; ++i) ASSERT_NEAR(bn_f32[i], bn_ref[i], 1e-5f * std::max(1.f, std::abs(bn_ref[i]))) << i;
    const std::vector<uint16_t> bnx = pack(k, y0);
    batch_norm(k.ty, bnx.data(), bn_got.data(), sc.data(), sh.data(), mean.data(), var.data(), 1e-5f, 2, 3, 5, kStream);
    expect_close(k, unpack(k, bn_got), bn_ref, "batch norm");
  }
}

TEST(CudaKernelsEmulated, HalfTransformerGeluAndSkipNorm) {
  // com.microsoft Gelu / BiasGelu / FastGelu / QuickGelu and Skip(Simplified)LayerNormalization on
  // 16-bit data, against the float32 kernels on the same rounded values.
  const int64_t rows = 6, cols = 40;
  for (const Kind16& k : kKinds16) {
    const std::vector<float> x = rounded(k, randoms(rows * cols, 60, -3, 3)), b = rounded(k, randoms(cols, 61));
    const std::vector<uint16_t> xh = pack(k, x), bh = pack(k, b);
    for (GeluKind kind : {GeluKind::kErf, GeluKind::kTanh, GeluKind::kQuick})
      for (bool bias : {false, true}) {
        std::vector<float> want(x.size());
        std::vector<uint16_t> got(x.size());
        gelu_f32(kind, x.data(), bias ? b.data() : nullptr, want.data(), rows * cols, cols, 1.702f, kStream);
        gelu(k.ty, kind, xh.data(), bias ? bh.data() : nullptr, got.data(), rows * cols, cols, 1.702f, kStream);
        expect_close(k, unpack(k, got), want, "gelu kind " + std::to_string(int(kind)) + (bias ? " with bias" : ""));
      }
    // x [2, 3, 40] + skip [3, 40] (broadcast over the batch) + bias, gamma, beta.
    const std::vector<float> skip = rounded(k, randoms(3 * cols, 62)), gamma = rounded(k, randoms(cols, 63)),
                             beta = rounded(k, randoms(cols, 64));
    const std::vector<uint16_t> skh = pack(k, skip), gh = pack(k, gamma), beh = pack(k, beta);
    for (bool rms : {false, true}) {
      SkipNormArgs a;
      a.rows = rows, a.cols = cols, a.skip_rows = 3, a.eps = 1e-6f, a.rms = rms;
      std::vector<float> yw(x.size()), sw(x.size()), mw(rows), iw(rows), mg(rows), ig(rows);
      a.x = x.data(), a.skip = skip.data(), a.gamma = gamma.data(), a.beta = rms ? nullptr : beta.data(), a.bias = b.data();
      a.y = yw.data(), a.sum = sw.data(), a.mean = mw.data(), a.inv_std = iw.data();
      skip_norm_f32(a, kStream);
      std::vector<uint16_t> yg(x.size()), sg(x.size());
      a.x = xh.data(), a.skip = skh.data(), a.gamma = gh.data(), a.beta = rms ? nullptr : beh.data(), a.bias = bh.data();
      a.y = yg.data(), a.sum = sg.data(), a.mean = mg.data(), a.inv_std = ig.data();
      skip_norm(k.ty, a, kStream);
      expect_close(k, unpack(k, yg), yw, rms ? "skip simplified norm" : "skip layer norm", 0.25f);
      expect_close(k, unpack(k, sg), sw, "input_skip_bias_sum", 0.25f);
      EXPECT_EQ(mg, mw) << k.name;  // fp32 statistics of the same values
      EXPECT_EQ(ig, iw) << k.name;
    }
  }
}

TEST(CudaKernelsEmulated, HalfTransformerAttentionCore) {
  // MultiHeadAttention's path on 16-bit data: keys and values gathered per head (past rows, new
  // rows plus their bias), then the core with a key-length mask, an attention bias and causality,
  // against the float32 launchers on the same rounded values.
  const int64_t B = 2, N = 2, S = 3, L = 4, P = 2, T = P + L, H = 8, Hv = 6, D = N * H, Dv = N * Hv;
  for (const Kind16& k : kKinds16) {
    const std::vector<float> q = rounded(k, randoms(B * S * D, 70)), kx = rounded(k, randoms(B * L * D, 71)),
                             vx = rounded(k, randoms(B * L * Dv, 72)), bias = rounded(k, randoms(2 * D + Dv, 73)),
                             pk = rounded(k, randoms(B * N * P * H, 74)), pv = rounded(k, randoms(B * N * P * Hv, 75)),
                             ab = rounded(k, randoms(N * S * T, 76));
    const std::vector<uint16_t> qh = pack(k, q), kxh = pack(k, kx), vxh = pack(k, vx), bh = pack(k, bias), pkh = pack(k, pk),
                                pvh = pack(k, pv), abh = pack(k, ab);
    std::vector<float> kd(B * N * T * H), vd(B * N * T * Hv);
    std::vector<uint16_t> kdh(kd.size()), vdh(vd.size());
    for (int which = 0; which < 2; ++which) {
      GatherHeadsArgs g;
      const int64_t W = which ? Hv : H, stride = which ? Dv : D;
      g.B = B, g.N = N, g.P = P, g.L = L, g.W = W, g.xb = L * stride, g.xl = stride, g.xh = W;
      g.past = which ? pv.data() : pk.data(), g.x = which ? vx.data() : kx.data();
      g.bias = bias.data() + (which ? 2 * D : D), g.dst = which ? vd.data() : kd.data();
      gather_heads_f32(g, kStream);
      g.past = which ? pvh.data() : pkh.data(), g.x = which ? vxh.data() : kxh.data();
      g.bias = bh.data() + (which ? 2 * D : D), g.dst = which ? vdh.data() : kdh.data();
      gather_heads(k.ty, g, kStream);
    }
    expect_close(k, unpack(k, kdh), kd, "present_key");
    expect_close(k, unpack(k, vdh), vd, "present_value");
    const std::vector<float> kr = unpack(k, kdh), vr = unpack(k, vdh);  // the core's inputs, as stored
    const std::vector<int32_t> lengths = {static_cast<int32_t>(T - 1), static_cast<int32_t>(T)};
    for (bool causal : {false, true}) {
      AttnCoreArgs a;
      a.B = B, a.N = N, a.S = S, a.T = T, a.P = P, a.H = H, a.Hv = Hv, a.causal = causal;
      a.scale = 1.0f / std::sqrt(static_cast<float>(H));
      a.q_sb = S * D, a.q_sn = H, a.q_ss = D;
      a.k_sb = N * T * H, a.k_sn = T * H, a.v_sb = N * T * Hv, a.v_sn = T * Hv;
      a.y_sb = S * Dv, a.y_sn = Hv, a.y_ss = Dv;
      a.mask_kind = MaskKind::kEnds, a.mask = lengths.data();
      a.ab_s = T, a.ab_n = S * T, a.ab_b = 0;
      std::vector<float> scratch(static_cast<size_t>(attn_core_scratch_floats(a))), yw(B * S * Dv);
      std::vector<uint16_t> yg(yw.size());
      a.q = q.data(), a.k = kr.data(), a.v = vr.data(), a.bias = ab.data(), a.y = yw.data();
      attn_core_f32(a, scratch.data(), kStream);
      a.q = qh.data(), a.k = kdh.data(), a.v = vdh.data(), a.bias = abh.data(), a.y = yg.data();
      attn_core(k.ty, a, scratch.data(), kStream);
      expect_close(k, unpack(k, yg), yw, causal ? "causal attention" : "attention", 0.25f);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// int8 (providers/cuda/quant.cu): QuantizeLinear / DequantizeLinear, and the passes around
// cuBLASLt's int8 product of MatMulInteger / QLinearMatMul (the u8 -> s8 shift, row and column
// sums, the zero-point correction, the requantisation), against the CPU EP running the same node.
// The product itself is cuBLASLt's on a GPU; here a plain int8 loop with the same operand layout
// (A [rows, kp], B's columns [np, kp], int32 [rows, np]) stands in for it.

namespace {

using onyx::DType;
using onyx::Shape;
using onyx::Tensor;

struct QIn {
  std::string name;  // "" = absent
  Tensor t;
};

/// Runs one ai.onnx node on the CPU EP, every input a graph input.
Tensor cpu_q_node(const std::string& op, const std::vector<QIn>& ins, std::vector<onyx::test::AttrSpec> attrs, int64_t opset = 21) {
  using namespace onyx;
  using namespace onyx::test;
  GraphSpec g;
  NodeSpec n{op, {}, {"y"}, std::move(attrs), "node"};
  std::vector<std::pair<std::string, Value>> feeds;
  for (const QIn& i : ins) {
    n.inputs.push_back(i.name);
    if (i.name.empty()) continue;
    g.inputs.push_back({i.name, i.t.dtype(), i.t.shape().to_vector()});
    feeds.emplace_back(i.name, Value(i.t));
  }
  g.nodes.push_back(n);
  g.outputs.push_back(any_out("y"));
  const std::string m = encode_model(g, opset);
  Session s = Session::builder().commit_from_memory(m.data(), m.size());
  return s.run(feeds)[0].tensor();
}

Tensor bytes_t(DType t, const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor r(t, s);
  auto* p = static_cast<uint8_t*>(r.raw_data());
  for (int64_t i = 0; i < r.numel(); ++i) p[i] = static_cast<uint8_t>(rng());
  return r;
}

Tensor ften(const Shape& s, const std::vector<float>& v) { return Tensor::from_vector<float>(s, v); }

Tensor to_half(const Tensor& f) {
  Tensor h(DType::kFloat16, f.shape());
  for (int64_t i = 0; i < f.numel(); ++i) static_cast<uint16_t*>(h.raw_data())[i] = f16_bits(f.data<float>()[i]);
  return h;
}

void expect_same_bytes(const void* got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(std::memcmp(got, want.raw_data(), want.nbytes()), 0) << what;
}

/// What QMatMulKernel::compute queues, with the int8 product as a plain loop: returns y's bytes.
struct QMM {
  Tensor a, b;                                 // 8-bit A [..., k], B [k, n]
  const Tensor* za = nullptr;                  // scalar
  const Tensor* zb = nullptr;                  // 1 or n values
  const Tensor *sa = nullptr, *sb = nullptr, *sy = nullptr, *zy = nullptr;  // QLinearMatMul
  DType y = DType::kInt32;
};
std::vector<uint8_t> emulate_qmatmul(const QMM& q) {
  const int64_t k = q.b.dim(0), n = q.b.dim(1), rows = q.a.numel() / k;
  const int64_t kp = (k + 3) / 4 * 4, np = (n + 3) / 4 * 4;
  const bool a_u8 = q.a.dtype() == DType::kUInt8, b_u8 = q.b.dtype() == DType::kUInt8;
  std::vector<int8_t> a8(static_cast<size_t>(rows * kp)), b8(static_cast<size_t>(np * kp), 0);
  Strided av;
  av.rank = 2;
  av.dims[0] = rows, av.dims[1] = k, av.strides[0] = k, av.strides[1] = 1;
  to_s8(q.a.raw_data(), a_u8, av, a8.data(), rows, k, kp, kStream);
  Strided bv;
  bv.rank = 2;
  bv.dims[0] = n, bv.dims[1] = k, bv.strides[0] = 1, bv.strides[1] = n;
  to_s8(q.b.raw_data(), b_u8, bv, b8.data(), n, k, kp, kStream);
  std::vector<int32_t> row_a(static_cast<size_t>(rows)), col_b(static_cast<size_t>(n));
  row_sums_s8(a8.data(), rows, k, kp, row_a.data(), kStream);
  row_sums_s8(b8.data(), n, k, kp, col_b.data(), kStream);
  // A constant B is packed on the host instead (pack_b_host): the same bytes and sums.
  std::vector<int8_t> b8_host(b8.size(), 99);
  std::vector<int32_t> col_b_host(col_b.size(), -1);
  pack_b_host(q.b.raw_data(), b_u8, k, n, kp, np, b8_host.data(), col_b_host.data());
  EXPECT_EQ(b8_host, b8);
  EXPECT_EQ(col_b_host, col_b);
  std::vector<int32_t> acc(static_cast<size_t>(rows * np));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < np; ++j) {
      int32_t s = 0;
      for (int64_t kk = 0; kk < kp; ++kk) s += int32_t(a8[r * kp + kk]) * int32_t(b8[j * kp + kk]);
      acc[r * np + j] = s;
    }
  uint8_t zero = 0;
  QGemmEpilogue e;
  e.acc = acc.data();
  e.ld_acc = np;
  e.rows = rows;
  e.n = n;
  e.k = k;
  e.row_sum_a = row_a.data();
  e.col_sum_b = col_b.data();
  e.a_ty = a_u8 ? Ty::kU8 : Ty::kI8;
  e.b_ty = b_u8 ? Ty::kU8 : Ty::kI8;
  e.za = q.za ? q.za->raw_data() : (a_u8 ? &zero : nullptr);
  e.zb = q.zb ? q.zb->raw_data() : (b_u8 ? &zero : nullptr);
  e.zb_count = q.zb ? q.zb->numel() : 1;
  std::vector<uint8_t> y(static_cast<size_t>(rows * n * (q.y == DType::kInt32 ? 4 : 1)));
  e.y = y.data();
  e.y_ty = q.y == DType::kInt32 ? Ty::kI32 : q.y == DType::kInt8 ? Ty::kI8 : Ty::kU8;
  if (q.sa) {
    e.scale_ty = q.sa->dtype() == DType::kFloat16 ? Ty::kF16 : Ty::kF32;
    e.sa = q.sa->raw_data();
    e.sb = q.sb->raw_data();
    e.sb_count = q.sb->numel();
    e.sy = q.sy->raw_data();
    e.zy = q.zy ? q.zy->raw_data() : nullptr;
  }
  qgemm_epilogue(e, kStream);
  return y;
}

}  // namespace

TEST(CudaKernelsEmulated, QuantizeLinearMatchesTheCpuEp) {
  using namespace onyx::test;
  // Ties (x / scale = k + 0.5 both ways), saturation at both ends, NaN and infinities.
  std::vector<float> xv = randoms(24, 71, -40, 40);
  const float specials[] = {0.25f, 0.75f, -0.25f, -0.75f, 1.25f, -1.25f, 1e9f, -1e9f, std::numeric_limits<float>::quiet_NaN(),
                            INFINITY, -INFINITY, 0.f};
  for (size_t i = 0; i < 12; ++i) xv[i] = specials[i];
  const Shape xs{2, 3, 4};
  const Tensor x = ften(xs, xv);
  for (DType qt : {DType::kUInt8, DType::kInt8}) {
    const bool u8 = qt == DType::kUInt8;
    SCOPED_TRACE(u8 ? "uint8" : "int8");
    // Per-tensor, with and without a zero point.
    const Tensor s = ften(Shape{}, {0.5f});
    Tensor zp(qt, Shape{});
    static_cast<uint8_t*>(zp.raw_data())[0] = u8 ? 131 : static_cast<uint8_t>(-3);
    for (bool with_zp : {true, false}) {
      std::vector<QIn> ins{{"x", x}, {"s", s}};
      if (with_zp) ins.push_back({"z", zp});
      std::vector<AttrSpec> attrs;
      if (!with_zp) attrs.push_back(attr_int("output_dtype", static_cast<int64_t>(qt)));
      const Tensor want = cpu_q_node("QuantizeLinear", ins, attrs);
      std::vector<uint8_t> y(24);
      quantize_linear(Ty::kF32, x.raw_data(), s.raw_data(), u8 ? Ty::kU8 : Ty::kI8, with_zp ? zp.raw_data() : nullptr, y.data(), QuantAxis{},
                      24, kStream);
      expect_same_bytes(y.data(), want, with_zp ? "per-tensor with zero point" : "per-tensor");
    }
    // Per-axis along each axis.
    for (int64_t axis : {0, 1, -1}) {
      const int64_t d = xs[axis < 0 ? 2 : axis];
      std::vector<float> sv(static_cast<size_t>(d));
      for (int64_t i = 0; i < d; ++i) sv[i] = 0.25f * float(i + 1);
      const Tensor sc = ften(Shape{d}, sv);
      Tensor z = bytes_t(qt, Shape{d}, 72 + static_cast<uint32_t>(d));
      const Tensor want = cpu_q_node("QuantizeLinear", {{"x", x}, {"s", sc}, {"z", z}}, {attr_int("axis", axis)});
      QuantAxis ax;
      ax.dim = d;
      for (int64_t k = (axis < 0 ? 2 : axis) + 1; k < 3; ++k) ax.inner *= xs[k];
      std::vector<uint8_t> y(24);
      quantize_linear(Ty::kF32, x.raw_data(), sc.raw_data(), u8 ? Ty::kU8 : Ty::kI8, z.raw_data(), y.data(), ax, 24, kStream);
      expect_same_bytes(y.data(), want, "per-axis " + std::to_string(axis));
    }
  }
  // float16 x and scale.
  const Tensor xh = to_half(ften(xs, randoms(24, 73, -30, 30))), sh = to_half(ften(Shape{}, {0.375f}));
  Tensor z(DType::kUInt8, Shape{});
  static_cast<uint8_t*>(z.raw_data())[0] = 100;
  const Tensor want = cpu_q_node("QuantizeLinear", {{"x", xh}, {"s", sh}, {"z", z}}, {});
  std::vector<uint8_t> y(24);
  quantize_linear(Ty::kF16, xh.raw_data(), sh.raw_data(), Ty::kU8, z.raw_data(), y.data(), QuantAxis{}, 24, kStream);
  expect_same_bytes(y.data(), want, "float16");
}

TEST(CudaKernelsEmulated, DequantizeLinearMatchesTheCpuEp) {
  const Shape xs{3, 5, 2};
  for (DType qt : {DType::kUInt8, DType::kInt8}) {
    const bool u8 = qt == DType::kUInt8;
    SCOPED_TRACE(u8 ? "uint8" : "int8");
    const Tensor x = bytes_t(qt, xs, 81);
    const Ty xt = u8 ? Ty::kU8 : Ty::kI8;
    // Per-tensor float32 and float16 scales, with and without a zero point.
    for (bool half : {false, true}) {
      const Tensor s32 = ften(Shape{}, {0.0123f});
      const Tensor s = half ? to_half(s32) : s32;
      const Tensor z = bytes_t(qt, Shape{}, 82);
      for (bool with_zp : {true, false}) {
        std::vector<QIn> ins{{"x", x}, {"s", s}};
        if (with_zp) ins.push_back({"z", z});
        const Tensor want = cpu_q_node("DequantizeLinear", ins, {});
        std::vector<uint8_t> y(static_cast<size_t>(want.nbytes()));
        dequantize_linear(xt, x.raw_data(), with_zp ? z.raw_data() : nullptr, half ? Ty::kF16 : Ty::kF32, s.raw_data(), y.data(), QuantAxis{},
                          x.numel(), kStream);
        expect_same_bytes(y.data(), want, std::string(half ? "float16" : "float32") + (with_zp ? " with zero point" : ""));
      }
    }
    // Per-axis.
    for (int64_t axis : {0, 1, 2}) {
      const int64_t d = xs[axis];
      std::vector<float> sv(static_cast<size_t>(d));
      for (int64_t i = 0; i < d; ++i) sv[i] = 0.01f * float(i + 3);
      const Tensor sc = ften(Shape{d}, sv);
      const Tensor z = bytes_t(qt, Shape{d}, 83);
      const Tensor want = cpu_q_node("DequantizeLinear", {{"x", x}, {"s", sc}, {"z", z}}, {onyx::test::attr_int("axis", axis)});
      QuantAxis ax;
      ax.dim = d;
      for (int64_t k = axis + 1; k < 3; ++k) ax.inner *= xs[k];
      std::vector<float> y(static_cast<size_t>(x.numel()));
      dequantize_linear(xt, x.raw_data(), z.raw_data(), Ty::kF32, sc.raw_data(), y.data(), ax, x.numel(), kStream);
      expect_same_bytes(y.data(), want, "per-axis " + std::to_string(axis));
    }
  }
}

TEST(CudaKernelsEmulated, MatMulIntegerCorrectionMatchesTheCpuEp) {
  // k and n not multiples of 4 (padded), a 3-D A, each pairing of int8 / uint8, zero points
  // absent, scalar, and per column of B.
  for (DType at : {DType::kUInt8, DType::kInt8})
    for (DType bt : {DType::kUInt8, DType::kInt8})
      for (int zps = 0; zps < 3; ++zps)
        for (const auto& [k, n] : {std::pair<int64_t, int64_t>{7, 6}, {8, 4}, {13, 9}}) {
          SCOPED_TRACE(std::string(dtype_name(at)) + " x " + std::string(dtype_name(bt)) + " zero points " + std::to_string(zps) + " k " +
                       std::to_string(k) + " n " + std::to_string(n));
          QMM q;
          q.a = bytes_t(at, Shape{2, 3, k}, 91);
          q.b = bytes_t(bt, Shape{k, n}, 92);
          const Tensor za = bytes_t(at, Shape{}, 93), zb = bytes_t(bt, zps == 2 ? Shape{n} : Shape{}, 94);
          std::vector<QIn> ins{{"a", q.a}, {"b", q.b}};
          if (zps > 0) {
            q.za = &za;
            q.zb = &zb;
            ins.push_back({"za", za});
            ins.push_back({"zb", zb});
          }
          const Tensor want = cpu_q_node("MatMulInteger", ins, {});
          const std::vector<uint8_t> y = emulate_qmatmul(q);
          ASSERT_EQ(static_cast<int64_t>(y.size()), want.nbytes());
          for (int64_t i = 0; i < want.numel(); ++i) {
            int32_t v;
            std::memcpy(&v, y.data() + 4 * i, 4);
            ASSERT_EQ(v, want.data<int32_t>()[i]) << "at " << i;
          }
        }
}

TEST(CudaKernelsEmulated, QLinearMatMulRequantisationMatchesTheCpuEp) {
  for (DType at : {DType::kUInt8, DType::kInt8})
    for (DType bt : {DType::kUInt8, DType::kInt8})
      for (DType yt : {DType::kUInt8, DType::kInt8})
        for (bool per_column : {false, true}) {
          SCOPED_TRACE(std::string(dtype_name(at)) + " x " + std::string(dtype_name(bt)) + " -> " + std::string(dtype_name(yt)) + (per_column ? " per column" : ""));
          const int64_t k = 11, n = 5;
          QMM q;
          q.a = bytes_t(at, Shape{3, k}, 101);
          q.b = bytes_t(bt, Shape{k, n}, 102);
          q.y = yt;
          const Tensor sa = ften(Shape{}, {0.02f}), sy = ften(Shape{}, {0.37f});
          std::vector<float> sbv(per_column ? n : 1);
          for (size_t j = 0; j < sbv.size(); ++j) sbv[j] = 0.011f + 0.003f * float(j);
          const Tensor sb = ften(per_column ? Shape{n} : Shape{}, sbv);
          const Tensor za = bytes_t(at, Shape{}, 103), zb = bytes_t(bt, per_column ? Shape{n} : Shape{}, 104), zy = bytes_t(yt, Shape{}, 105);
          q.za = &za, q.zb = &zb, q.sa = &sa, q.sb = &sb, q.sy = &sy, q.zy = &zy;
          const Tensor want = cpu_q_node(
              "QLinearMatMul", {{"a", q.a}, {"sa", sa}, {"za", za}, {"b", q.b}, {"sb", sb}, {"zb", zb}, {"sy", sy}, {"zy", zy}}, {});
          const std::vector<uint8_t> y = emulate_qmatmul(q);
          expect_same_bytes(y.data(), want, "QLinearMatMul");
        }
  // float16 scales, saturating outputs (a small y_scale).
  QMM q;
  q.a = bytes_t(DType::kUInt8, Shape{4, 8}, 111);
  q.b = bytes_t(DType::kInt8, Shape{8, 4}, 112);
  q.y = DType::kUInt8;
  const Tensor sa = to_half(ften(Shape{}, {0.05f})), sb = to_half(ften(Shape{}, {0.02f})), sy = to_half(ften(Shape{}, {0.01f}));
  const Tensor za = bytes_t(DType::kUInt8, Shape{}, 113), zb = bytes_t(DType::kInt8, Shape{}, 114), zy = bytes_t(DType::kUInt8, Shape{}, 115);
  q.za = &za, q.zb = &zb, q.sa = &sa, q.sb = &sb, q.sy = &sy, q.zy = &zy;
  const Tensor want =
      cpu_q_node("QLinearMatMul", {{"a", q.a}, {"sa", sa}, {"za", za}, {"b", q.b}, {"sb", sb}, {"zb", zb}, {"sy", sy}, {"zy", zy}}, {});
  const std::vector<uint8_t> y = emulate_qmatmul(q);
  expect_same_bytes(y.data(), want, "float16 scales");
}

TEST(CudaKernelsEmulated, DynamicQuantizeLinearMatchesTheCpuEp) {
  // A range around 0, only positive values (the range still includes 0), NaN skipped, all zeros
  // (scale 0), an empty tensor, and more elements than one block.
  std::vector<std::vector<float>> inputs{randoms(37, 121, -3, 5), randoms(20, 122, 1, 2), {0.5f, NAN, -1.5f, 2.f}, std::vector<float>(9, 0.f),
                                         {}, randoms(700, 123, -100, 40)};
  for (size_t c = 0; c < inputs.size(); ++c) {
    const std::vector<float>& xv = inputs[c];
    SCOPED_TRACE("case " + std::to_string(c));
    const int64_t n = static_cast<int64_t>(xv.size());
    const Tensor x = ften(Shape{n}, xv);
    using namespace onyx;
    using namespace onyx::test;
    GraphSpec g;
    g.nodes.push_back({"DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}, {}, "dq"});
    g.inputs.push_back({"x", DType::kFloat, {n}});
    g.outputs = {any_out("y", DType::kUInt8), any_out("s"), any_out("z", DType::kUInt8)};
    const std::string m = encode_model(g, 13);
    Session sess = Session::builder().commit_from_memory(m.data(), m.size());
    const auto want = sess.run({{"x", Value(x)}});
    std::vector<uint8_t> y(xv.size());
    std::vector<float> scratch(static_cast<size_t>(dynamic_quantize_scratch_floats()));
    float scale = -1;
    uint8_t zp = 7;
    dynamic_quantize_u8(xv.data(), n, y.data(), &scale, &zp, scratch.data(), kStream);
    EXPECT_EQ(bits_of(scale), bits_of(want[1].tensor().data<float>()[0]));
    EXPECT_EQ(zp, want[2].tensor().data<uint8_t>()[0]);
    if (n) expect_same_bytes(y.data(), want[0].tensor(), "y");
  }
}
