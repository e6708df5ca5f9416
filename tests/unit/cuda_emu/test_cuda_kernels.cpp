// onyx's own CUDA kernels (providers/cuda/*.cu) run through the host emulator
// (providers/cuda/testing/emulator.hpp): the kernels' indexing, broadcasting, block reductions
// and warp shuffles checked against plain C++ references on machines without a GPU. The same
// launchers run on the GPU in the provider tests (tests/unit/test_cuda_ep.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ir/graph.hpp"
#include "launch.hpp"
#include "model_builder.hpp"
#include "ops/image.hpp"
#include "ops/nn.hpp"
#include "ops/tensor.hpp"
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
