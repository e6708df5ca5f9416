// The CUDA EP's kernels for ONNX Runtime's transformer operators (providers/cuda/transformer.cu)
// run through the host emulator against the CPU EP running the same com.microsoft node: the GELU
// family, Skip / Simplified layer normalisation, RotaryEmbedding, MatMulNBits (the GEMV and the
// dequantisation that feeds cuBLASLt), MultiHeadAttention, Attention and GroupQueryAttention
// (with the arguments transformer_kernels.cpp gives the launchers; cuBLASLt's products are plain
// C++ here).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "model_builder.hpp"
#include "transformer.hpp"

using namespace onyx;
using namespace onyx::cuda;
using namespace onyx::test;

namespace {

cudaStream_t kStream = nullptr;  // the emulator runs launches synchronously

Tensor rand_t(const Shape& s, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  Tensor t(DType::kFloat, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

std::vector<float> vec(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.numel()); }
const float* fp(const Tensor& t) { return t.data<float>(); }

struct In {
  std::string name;  // "" = absent
  Tensor t;
};

/// Runs one node on the CPU EP: inputs (absent ones named ""), outputs named (or "" to skip).
std::vector<Tensor> cpu_node(const std::string& op, const std::string& domain, const std::vector<In>& ins,
                             const std::vector<std::string>& outs, std::vector<AttrSpec> attrs) {
  GraphSpec g;
  NodeSpec n{op, {}, outs, std::move(attrs), "node", domain};
  std::vector<std::pair<std::string, Value>> feeds;
  for (const In& i : ins) {
    n.inputs.push_back(i.name);
    if (i.name.empty()) continue;
    g.inputs.push_back({i.name, i.t.dtype(), i.t.shape().to_vector()});
    feeds.emplace_back(i.name, Value(i.t));
  }
  g.nodes.push_back(n);
  for (const std::string& o : outs)
    if (!o.empty()) g.outputs.push_back(any_out(o));
  const std::string m = encode_model(g, 17, 8, {{"com.microsoft", 1}});
  Session s = Session::builder().commit_from_memory(m.data(), m.size());
  std::vector<Tensor> r;
  for (const Value& v : s.run(feeds)) r.push_back(v.tensor());
  return r;
}

void expect_near(const std::vector<float>& got, const Tensor& want, double tol, const std::string& what, double abs_tol = 0) {
  ASSERT_EQ(static_cast<int64_t>(got.size()), want.numel()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want.data<float>()[i];
    ASSERT_NEAR(got[i], w, abs_tol + tol * (1 + std::abs(w))) << what << " at " << i;
  }
}

Tensor i32(const Shape& s, std::vector<int32_t> v) { return Tensor::from_vector<int32_t>(s, v); }
Tensor i64(const Shape& s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(s, v); }

/// cos / sin caches [rows, half] of angles p / 10000^(2i / rd), as models make them.
std::pair<Tensor, Tensor> rope_caches(int64_t rows, int64_t half) {
  Tensor c(DType::kFloat, Shape{rows, half}), s(DType::kFloat, Shape{rows, half});
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double a = p / std::pow(10000.0, 2.0 * i / (2.0 * half));
      c.data<float>()[p * half + i] = static_cast<float>(std::cos(a));
      s.data<float>()[p * half + i] = static_cast<float>(std::sin(a));
    }
  return {c, s};
}

}  // namespace

TEST(CudaTransformerEmulated, GeluFamilyMatchesTheCpuEp) {
  const Tensor x = rand_t(Shape{3, 5, 37}, 1, -4, 4);
  const Tensor b = rand_t(Shape{37}, 2);
  struct Case {
    const char* op;
    GeluKind kind;
    bool bias;
    float alpha;
  };
  for (const Case& c : {Case{"Gelu", GeluKind::kErf, false, 0}, Case{"BiasGelu", GeluKind::kErf, true, 0},
                        Case{"FastGelu", GeluKind::kTanh, false, 0}, Case{"FastGelu", GeluKind::kTanh, true, 0},
                        Case{"QuickGelu", GeluKind::kQuick, false, 1.702f}, Case{"QuickGelu", GeluKind::kQuick, false, 0.5f}}) {
    std::vector<In> ins{{"x", x}};
    if (c.bias) ins.push_back({"b", b});
    std::vector<AttrSpec> attrs;
    if (c.kind == GeluKind::kQuick) attrs.push_back(attr_float("alpha", c.alpha));
    const Tensor want = cpu_node(c.op, "com.microsoft", ins, {"y"}, attrs)[0];
    std::vector<float> y(static_cast<size_t>(x.numel()));
    gelu_f32(c.kind, fp(x), c.bias ? fp(b) : nullptr, y.data(), x.numel(), 37, c.alpha, kStream);
    expect_near(y, want, 2e-6, std::string(c.op) + (c.bias ? " with bias" : ""));
  }
}

TEST(CudaTransformerEmulated, SkipAndSimplifiedNormsMatchTheCpuEp) {
  for (bool simplified : {false, true}) {
    for (int64_t d : {33, 768}) {
      SCOPED_TRACE(std::string(simplified ? "SkipSimplified" : "Skip") + " d=" + std::to_string(d));
      const Shape xs{2, 3, d};
      const Tensor x = rand_t(xs, 3), skip2d = rand_t(Shape{3, d}, 4), gamma = rand_t(Shape{d}, 5), beta = rand_t(Shape{d}, 6),
                   bias = rand_t(Shape{d}, 7);
      std::vector<In> ins{{"x", x}, {"skip", skip2d}, {"gamma", gamma}};
      if (!simplified) ins.push_back({"beta", beta});
      ins.push_back({"bias", bias});
      const auto want = cpu_node(simplified ? "SkipSimplifiedLayerNormalization" : "SkipLayerNormalization", "com.microsoft", ins,
                                 {"y", "mean", "inv", "sum"}, {attr_float("epsilon", 1e-5f)});
      SkipNormArgs a;
      a.x = fp(x), a.skip = fp(skip2d), a.gamma = fp(gamma), a.beta = simplified ? nullptr : fp(beta), a.bias = fp(bias);
      std::vector<float> y(static_cast<size_t>(x.numel())), sum(y.size()), mean(6), inv(6);
      a.y = y.data(), a.mean = mean.data(), a.inv_std = inv.data(), a.sum = sum.data();
      a.rows = 6, a.cols = d, a.skip_rows = 3, a.eps = 1e-5f, a.rms = simplified;
      skip_norm_f32(a, kStream);
      expect_near(y, want[0], 1e-5, "y");
      expect_near(inv, want[2], 1e-5, "inv_std_var");
      expect_near(sum, want[3], 1e-6, "input_skip_bias_sum");
      if (!simplified) expect_near(mean, want[1], 1e-5, "mean");
    }
  }
  // ai.onnx SimplifiedLayerNormalization over the dims from axis 1.
  const Tensor x = rand_t(Shape{4, 3, 11}, 8), scale = rand_t(Shape{3, 11}, 9);
  const auto want = cpu_node("SimplifiedLayerNormalization", "", {{"x", x}, {"scale", scale}}, {"y", "inv"},
                             {attr_int("axis", 1), attr_float("epsilon", 1e-5f)});
  SkipNormArgs a;
  std::vector<float> y(static_cast<size_t>(x.numel())), inv(4);
  a.x = fp(x), a.gamma = fp(scale), a.y = y.data(), a.inv_std = inv.data(), a.rows = 4, a.cols = 33, a.eps = 1e-5f, a.rms = true;
  skip_norm_f32(a, kStream);
  expect_near(y, want[0], 1e-5, "SimplifiedLayerNormalization y");
  expect_near(inv, want[1], 1e-5, "SimplifiedLayerNormalization inv_std_var");
}

TEST(CudaTransformerEmulated, RotaryEmbeddingMatchesTheCpuEp) {
  const auto [cc, sc] = rope_caches(16, 4);  // rotary dim 8
  struct Case {
    bool four, interleaved, offset;
    int64_t heads, rd;  // rd 0: the attribute absent (head size 2 x the cache's columns)
  };
  for (const Case& c : {Case{false, false, false, 0, 0}, Case{false, true, true, 0, 0}, Case{false, false, false, 3, 8},
                        Case{true, true, false, 0, 8}, Case{true, false, true, 0, 8}}) {
    SCOPED_TRACE(std::string(c.four ? "4-D" : "3-D") + (c.interleaved ? " interleaved" : "") + (c.offset ? " offset" : ""));
    const int64_t B = 2, S = 5, N = 3, H = c.rd ? 12 : 8, rd = c.rd ? c.rd : 8;
    const Shape xs = c.four ? Shape{B, N, S, H} : Shape{B, S, N * H};
    const Tensor x = rand_t(xs, 11);
    const Tensor pos = c.offset ? i64(Shape{1}, {3}) : i64(Shape{B, S}, {0, 1, 2, 3, 4, 7, 9, 11, 2, 15});
    std::vector<AttrSpec> attrs{attr_int("interleaved", c.interleaved ? 1 : 0)};
    if (c.heads) attrs.push_back(attr_int("num_heads", c.heads));
    if (c.rd) {
      attrs.push_back(attr_int("rotary_embedding_dim", c.rd));
      if (!c.heads) attrs.push_back(attr_int("num_heads", N));
    }
    const Tensor want = cpu_node("RotaryEmbedding", "com.microsoft", {{"x", x}, {"pos", pos}, {"cos", cc}, {"sin", sc}}, {"y"}, attrs)[0];
    RotaryArgs a;
    std::vector<float> y(static_cast<size_t>(x.numel()));
    a.x = fp(x), a.y = y.data(), a.B = B, a.S = S, a.N = N, a.H = H, a.rd = rd;
    a.xb = a.yb = S * N * H;
    a.xs = a.ys = c.four ? H : N * H;
    a.xh = a.yh = c.four ? S * H : H;
    a.interleaved = c.interleaved, a.cos = fp(cc), a.sin = fp(sc);
    a.pos_kind = c.offset ? RotaryPos::kOffset : RotaryPos::kIds;
    a.pos = pos.data<int64_t>();
    rotary_f32(a, kStream);
    expect_near(y, want, 1e-6, "y");
  }
}

TEST(CudaTransformerEmulated, MatMulNBitsMatchesTheCpuEp) {
  struct Case {
    int64_t bits, block, K, N, M;
    int zp;  // 0 none, 1 uint8 packed, 2 float
    bool g_idx, bias;
  };
  const Case cases[] = {
      {4, 32, 96, 20, 1, 1, false, true},  {4, 16, 70, 9, 3, 0, false, false}, {4, 64, 128, 33, 4, 2, false, true},
      {4, 32, 64, 17, 7, 1, false, true},  {8, 32, 80, 12, 2, 1, false, false}, {2, 16, 48, 10, 5, 1, false, true},
      {4, 32, 64, 8, 6, 1, true, false},
  };
  std::mt19937 rng(5);
  for (const Case& c : cases) {
    SCOPED_TRACE(str("bits ", c.bits, " block ", c.block, " K ", c.K, " N ", c.N, " M ", c.M, " zp ", c.zp, c.g_idx ? " g_idx" : ""));
    NBitsWeights w;
    w.K = c.K, w.N = c.N, w.bits = c.bits, w.block = c.block;
    w.kb = (c.K + c.block - 1) / c.block, w.blob = c.block * c.bits / 8, w.zp_blob = (w.kb * c.bits + 7) / 8;
    Tensor b(DType::kUInt8, Shape{c.N, w.kb, w.blob});
    for (int64_t i = 0; i < b.numel(); ++i) b.data<uint8_t>()[i] = static_cast<uint8_t>(rng() & 0xff);
    const Tensor scales = rand_t(Shape{c.N, w.kb}, 21, 0.01f, 0.2f);
    Tensor zu(DType::kUInt8, Shape{c.N, w.zp_blob});
    for (int64_t i = 0; i < zu.numel(); ++i) zu.data<uint8_t>()[i] = static_cast<uint8_t>(rng() & 0xff);
    const Tensor zf = rand_t(Shape{c.N, w.kb}, 22, 0, static_cast<float>((1 << c.bits) - 1));
    std::vector<int32_t> gv(static_cast<size_t>(c.K));
    for (int64_t k = 0; k < c.K; ++k) gv[k] = static_cast<int32_t>((k * 7 + 3) % w.kb);
    const Tensor gi = i32(Shape{c.K}, gv);
    const Tensor bias = rand_t(Shape{c.N}, 23);
    const Tensor a = rand_t(Shape{c.M, c.K}, 24);
    std::vector<In> ins{{"a", a}, {"b", b}, {"s", scales}};
    ins.push_back({c.zp ? "z" : "", c.zp == 1 ? zu : zf});
    ins.push_back({c.g_idx ? "g" : "", gi});
    ins.push_back({c.bias ? "bias" : "", bias});
    const Tensor want = cpu_node("MatMulNBits", "com.microsoft", ins, {"y"},
                                 {attr_int("K", c.K), attr_int("N", c.N), attr_int("bits", c.bits), attr_int("block_size", c.block)})[0];
    w.b = b.data<uint8_t>(), w.scales = fp(scales);
    if (c.zp == 1) w.zp_u8 = zu.data<uint8_t>();
    if (c.zp == 2) w.zp_f = fp(zf);
    if (c.g_idx) w.g_idx = gi.data<int32_t>();
    std::vector<float> y(static_cast<size_t>(c.M * c.N));
    if (c.M <= kNBitsGemvRows) {
      nbits_gemv_f32(w, fp(a), c.M, c.bias ? fp(bias) : nullptr, y.data(), kStream);
    } else {
      // The GEMM path: W dequantised, the product (cuBLASLt on the GPU) in plain C++, the bias.
      std::vector<float> wt(static_cast<size_t>(c.N * c.K));
      nbits_dequantize_f32(w, wt.data(), kStream);
      for (int64_t m = 0; m < c.M; ++m)
        for (int64_t n = 0; n < c.N; ++n) {
          double s = 0;
          for (int64_t k = 0; k < c.K; ++k) s += double(fp(a)[m * c.K + k]) * wt[n * c.K + k];
          y[m * c.N + n] = static_cast<float>(s);
        }
      if (c.bias) add_row_bias_f32(y.data(), fp(bias), c.M, c.N, kStream);
    }
    // Sums of K products of up to 2^bits x 0.2 in magnitude, accumulated in another order.
    expect_near(y, want, 1e-5, "y", 4 * 6e-8 * static_cast<double>(c.K) * static_cast<double>(1 << c.bits) * 0.2);
  }
}

namespace {

void fill_bias(AttnCoreArgs& c, const Tensor& ab, int64_t row_len) {
  const Shape& s = ab.shape();
  c.bias = fp(ab);
  c.ab_s = row_len;
  c.ab_n = s[1] == 1 ? 0 : c.S * row_len;
  c.ab_b = s[0] == 1 ? 0 : s[1] * c.S * row_len;
}

void run_core(AttnCoreArgs& c) {
  std::vector<float> scratch(static_cast<size_t>(attn_core_scratch_floats(c)));
  attn_core_f32(c, scratch.data(), kStream);
}

}  // namespace

TEST(CudaTransformerEmulated, MultiHeadAttentionMatchesTheCpuEp) {
  // As MhaKernel (transformer_kernels.cpp) drives the launchers.
  struct Case {
    bool bias, past, causal, bnsh, qk;
    int mask;  // 0 none, 1 [B] lengths, 2 [B, T]
    bool attn_bias;
  };
  for (const Case& c : {Case{true, true, false, false, true, 2, true}, Case{false, false, true, false, false, 1, false},
                        Case{true, false, false, false, false, 0, true}, Case{false, false, false, true, true, 1, false},
                        Case{false, true, true, false, false, 0, false}}) {
    SCOPED_TRACE(str("bias ", c.bias, " past ", c.past, " causal ", c.causal, " bnsh ", c.bnsh, " mask ", c.mask));
    const int64_t B = 2, S = 3, N = 2, H = 4, Hv = 6, L = c.bnsh ? 5 : 3, P = c.past ? 4 : 0, T = P + L, D = N * H, Dv = N * Hv;
    const Tensor q = rand_t(Shape{B, S, D}, 31);
    const Tensor k = c.bnsh ? rand_t(Shape{B, N, L, H}, 32) : rand_t(Shape{B, L, D}, 32);
    const Tensor v = c.bnsh ? rand_t(Shape{B, N, L, Hv}, 33) : rand_t(Shape{B, L, Dv}, 33);
    const Tensor bias = rand_t(Shape{2 * D + Dv}, 34);
    const Tensor mask = c.mask == 1 ? i32(Shape{B}, {static_cast<int32_t>(T - 2), static_cast<int32_t>(T)})
                                    : i32(Shape{B, T}, std::vector<int32_t>(static_cast<size_t>(B * T), 1));
    Tensor mask2 = mask;
    if (c.mask == 2) mask2.data<int32_t>()[1] = mask2.data<int32_t>()[T + 3] = 0;
    const Tensor ab = rand_t(Shape{1, N, S, T}, 35);
    const Tensor pk = rand_t(Shape{B, N, P, H}, 36), pv = rand_t(Shape{B, N, P, Hv}, 37);
    std::vector<In> ins{{"q", q}, {"k", k}, {"v", v}, {c.bias ? "bias" : "", bias}, {c.mask ? "mask" : "", mask2},
                        {c.attn_bias ? "ab" : "", ab}, {c.past ? "pk" : "", pk}, {c.past ? "pv" : "", pv}};
    const bool presents = !c.bnsh;
    const auto want = cpu_node("MultiHeadAttention", "com.microsoft", ins,
                               {"y", presents ? "present_k" : "", presents ? "present_v" : "", c.qk ? "qk" : ""},
                               {attr_int("num_heads", N), attr_int("unidirectional", c.causal ? 1 : 0)});
    AttnCoreArgs a;
    a.B = B, a.N = N, a.S = S, a.T = T, a.P = P, a.H = H, a.Hv = Hv;
    a.scale = 1.0f / std::sqrt(static_cast<float>(H));
    a.causal = c.causal;
    std::vector<float> qb(static_cast<size_t>(B * N * S * H));
    a.q = fp(q), a.q_sb = S * D, a.q_sn = H, a.q_ss = D;
    if (c.bias) {
      GatherHeadsArgs g;
      g.x = fp(q), g.bias = fp(bias), g.B = B, g.N = N, g.L = S, g.W = H, g.xb = S * D, g.xl = D, g.xh = H, g.dst = qb.data();
      gather_heads_f32(g, kStream);
      a.q = qb.data(), a.q_sb = N * S * H, a.q_sn = S * H, a.q_ss = H;
    }
    std::vector<float> kd(static_cast<size_t>(B * N * T * H)), vd(static_cast<size_t>(B * N * T * Hv));
    if (c.bnsh) {
      a.k = fp(k), a.v = fp(v);
    } else {
      for (int which = 0; which < 2; ++which) {
        GatherHeadsArgs g;
        const int64_t W = which ? Hv : H, stride = which ? Dv : D;
        g.B = B, g.N = N, g.P = P, g.L = L, g.W = W;
        g.past = P ? fp(which ? pv : pk) : nullptr;
        g.x = fp(which ? v : k);
        g.bias = c.bias ? fp(bias) + (which ? 2 * D : D) : nullptr;
        g.dst = which ? vd.data() : kd.data();
        g.xb = L * stride, g.xl = stride, g.xh = W;
        gather_heads_f32(g, kStream);
      }
      a.k = kd.data(), a.v = vd.data();
      expect_near(kd, want[1], 1e-6, "present_key");
      expect_near(vd, want[2], 1e-6, "present_value");
    }
    a.k_sb = N * T * H, a.k_sn = T * H, a.v_sb = N * T * Hv, a.v_sn = T * Hv;
    std::vector<float> y(static_cast<size_t>(B * S * Dv)), qk(static_cast<size_t>(B * N * S * T));
    a.y = y.data(), a.y_sb = S * Dv, a.y_sn = Hv, a.y_ss = Dv;
    if (c.mask) a.mask_kind = c.mask == 1 ? MaskKind::kEnds : MaskKind::kRaw2d, a.mask = mask2.data<int32_t>();
    if (c.attn_bias) fill_bias(a, ab, T);
    if (c.qk) a.qk = qk.data();
    run_core(a);
    expect_near(y, want[0], 1e-5, "y");
    if (c.qk) expect_near(qk, want.back(), 1e-5, "qk");
  }
}

TEST(CudaTransformerEmulated, AttentionMatchesTheCpuEp) {
  // com.microsoft Attention as MsAttentionKernel drives it: the packed projection (cuBLASLt on the
  // GPU, plain C++ here), the keys and values gathered into present, the core; every mask form.
  const int64_t B = 2, S = 3, In = 10, N = 2, H = 4, Dt = 3 * N * H, D = N * H;
  // (Form 6: a [B, T] mask that hides the first two keys of batch 0, with causality: its first
  // rows see padded keys only.)
  for (int form = 0; form < 7; ++form) {
    for (bool past : {false, true}) {
      SCOPED_TRACE(str("mask form ", form, past ? " with past" : ""));
      const int64_t P = past ? 2 : 0, T = P + S, M = 6;
      const Tensor x = rand_t(Shape{B, S, In}, 41), w = rand_t(Shape{In, Dt}, 42), bias = rand_t(Shape{Dt}, 43);
      const Tensor pst = rand_t(Shape{2, B, N, P, H}, 44);
      Tensor mask;
      MaskKind kind = MaskKind::kNone;
      if (form == 1) mask = i32(Shape{B}, {static_cast<int32_t>(T - 1), 2}), kind = MaskKind::kEnds;
      if (form == 2) mask = i32(Shape{2 * B}, {static_cast<int32_t>(T), 2, 1, 0}), kind = MaskKind::kEndsStarts;
      if (form >= 3 && form <= 5) {
        const Shape ms = form == 3 ? Shape{B, T} : form == 4 ? Shape{B, S, T} : Shape{B, 1, M, M};
        std::vector<int32_t> mv(static_cast<size_t>(ms.numel()));
        for (size_t i = 0; i < mv.size(); ++i) mv[i] = (i * 5 + 1) % 4 != 0;
        mask = i32(ms, mv);
        kind = form == 3 ? MaskKind::kRaw2d : form == 4 ? MaskKind::kRaw3d : MaskKind::kRaw4d;
      }
      if (form == 6) {
        std::vector<int32_t> mv(static_cast<size_t>(B * T), 1);
        mv[0] = mv[1] = 0;
        mask = i32(Shape{B, T}, mv);
        kind = MaskKind::kRaw2d;
      }
      const bool causal = form == 0 || form == 5 || form == 6;
      const auto want = cpu_node("Attention", "com.microsoft",
                                 {{"x", x}, {"w", w}, {"bias", bias}, {form ? "mask" : "", mask}, {past ? "past" : "", pst}},
                                 {"y", "present"}, {attr_int("num_heads", N), attr_int("unidirectional", causal ? 1 : 0)});
      std::vector<float> qkv(static_cast<size_t>(B * S * Dt));
      for (int64_t r = 0; r < B * S; ++r)
        for (int64_t j = 0; j < Dt; ++j) {
          double s = fp(bias)[j];
          for (int64_t i = 0; i < In; ++i) s += double(fp(x)[r * In + i]) * fp(w)[i * Dt + j];
          qkv[r * Dt + j] = static_cast<float>(s);
        }
      std::vector<float> kv(static_cast<size_t>(2 * B * N * T * H));
      GatherHeadsArgs g;
      g.B = B, g.N = N, g.P = P, g.L = S, g.xb = S * Dt, g.xl = Dt, g.W = H, g.xh = H;
      for (int which = 0; which < 2; ++which) {
        g.past = P ? fp(pst) + (which ? B * N * P * H : 0) : nullptr;
        g.x = qkv.data() + (which ? 2 * D : D);
        g.dst = kv.data() + (which ? B * N * T * H : 0);
        gather_heads_f32(g, kStream);
      }
      expect_near(kv, want[1], 1e-5, "present");
      AttnCoreArgs a;
      a.B = B, a.N = N, a.S = S, a.T = T, a.P = P, a.H = H, a.Hv = H, a.causal = causal;
      a.scale = 1.0f / std::sqrt(static_cast<float>(H));
      a.q = qkv.data(), a.q_sb = S * Dt, a.q_ss = Dt, a.q_sn = H;
      a.k = kv.data(), a.k_sb = N * T * H, a.k_sn = T * H;
      a.v = kv.data() + B * N * T * H, a.v_sb = N * T * H, a.v_sn = T * H;
      std::vector<float> y(static_cast<size_t>(B * S * D));
      a.y = y.data(), a.y_sb = S * D, a.y_ss = D, a.y_sn = H;
      a.mask_kind = kind;
      a.mask = form ? mask.data<int32_t>() : nullptr;
      a.mask_max = M;
      run_core(a);
      expect_near(y, want[0], 1e-5, "y");
    }
  }
}

TEST(CudaTransformerEmulated, GroupQueryAttentionMatchesTheCpuEp) {
  // As GqaKernel drives the launchers: the present buffers (past rows, rotated new keys, values),
  // the rotated queries, the core over grouped heads. A first prompt with padded entries, decode
  // steps over a past buffer as long as the present (the in-place case, run both in place and
  // copied) and a shorter one, packed QKV, local window, softcap, attention bias, head sink and
  // smooth softmax, interleaved and partial rotary with and without position ids.
  struct Case {
    int64_t S, P, total;
    std::vector<int32_t> seqlens;
    bool packed, rotary, interleaved, pos_ids, partial;
    int64_t window;
    float softcap;
    bool attn_bias, sink, smooth, in_place;
  };
  const Case cases[] = {
      {5, 0, 5, {4, 2}, false, true, false, false, false, -1, 0.f, false, false, false, false},
      {1, 8, 6, {5, 3}, true, true, true, true, false, 3, 2.f, true, true, false, false},
      {1, 8, 6, {5, 3}, false, true, false, false, true, -1, 0.f, false, false, true, true},
      {1, 4, 5, {4, 4}, false, true, false, false, true, -1, 0.f, false, false, true, false},
      {3, 6, 6, {5}, false, false, false, false, false, 2, 0.f, true, false, false, false},
  };
  for (const Case& c : cases) {
    const int64_t B = static_cast<int64_t>(c.seqlens.size()), S = c.S, N = 4, Nkv = 2, H = 8, G = N / Nkv, P = c.P, total = c.total;
    if (c.S > 1 && c.S != total && B != 1) continue;  // (not a valid call)
    SCOPED_TRACE(str("S ", S, " P ", P, " total ", total, c.packed ? " packed" : "", c.in_place ? " in place" : ""));
    const int64_t L = std::max(total, P), rd = c.partial ? 4 : 8;
    const auto [cc, sc] = rope_caches(16, rd / 2);
    const int64_t q_row = c.packed ? (N + 2 * Nkv) * H : N * H, kv_row = c.packed ? q_row : Nkv * H;
    const Tensor q = rand_t(Shape{B, S, q_row}, 51);
    const Tensor k = rand_t(Shape{B, S, Nkv * H}, 52), v = rand_t(Shape{B, S, Nkv * H}, 53);
    const Tensor pk = rand_t(Shape{B, Nkv, P, H}, 54), pv = rand_t(Shape{B, Nkv, P, H}, 55);
    const Tensor sl = i32(Shape{B}, c.seqlens), tot = i32(Shape{1}, {static_cast<int32_t>(total)});
    std::vector<int64_t> posv;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) posv.push_back((c.seqlens[b] + 1 - S + s + 2 * b) % 16);
    const Tensor pos = i64(Shape{B, S}, posv);
    const Tensor ab = rand_t(Shape{B, 1, S, total}, 56), sink = rand_t(Shape{N}, 57);
    std::vector<In> ins{{"q", q}, {c.packed ? "" : "k", k}, {c.packed ? "" : "v", v}, {P ? "pk" : "", pk}, {P ? "pv" : "", pv},
                        {"sl", sl}, {"tot", tot}, {c.rotary ? "cos" : "", cc}, {c.rotary ? "sin" : "", sc},
                        {c.pos_ids ? "pos" : "", pos}, {c.attn_bias ? "ab" : "", ab}, {c.sink ? "sink" : "", sink}};
    std::vector<AttrSpec> attrs{attr_int("num_heads", N), attr_int("kv_num_heads", Nkv), attr_int("do_rotary", c.rotary ? 1 : 0),
                                attr_int("rotary_interleaved", c.interleaved ? 1 : 0), attr_int("local_window_size", c.window),
                                attr_int("smooth_softmax", c.smooth ? 1 : 0)};
    if (c.softcap > 0) attrs.push_back(attr_float("softcap", c.softcap));
    const auto want = cpu_node("GroupQueryAttention", "com.microsoft", ins, {"y", "present_k", "present_v"}, attrs);
    // 1. The present buffers (in place: they start as copies of the past buffers).
    const bool first = S == total;
    std::vector<float> pres_k(static_cast<size_t>(B * Nkv * L * H), -7.f), pres_v(pres_k.size(), -7.f);
    if (c.in_place) {
      pres_k = vec(pk);
      pres_v = vec(pv);
    }
    GqaAppendArgs ap;
    ap.past_k = P ? (c.in_place ? pres_k.data() : fp(pk)) : nullptr;
    ap.past_v = P ? (c.in_place ? pres_v.data() : fp(pv)) : nullptr;
    ap.knew = c.packed ? fp(q) + N * H : fp(k);
    ap.vnew = c.packed ? fp(q) + (N + Nkv) * H : fp(v);
    ap.pk = pres_k.data(), ap.pv = pres_v.data();
    ap.B = B, ap.S = S, ap.Nkv = Nkv, ap.H = H, ap.P = P, ap.L = L, ap.kb = S * kv_row, ap.ks = kv_row;
    ap.seqlens = sl.data<int32_t>(), ap.first_prompt = first;
    if (c.rotary) ap.rd = rd, ap.interleaved = c.interleaved, ap.cos = fp(cc), ap.sin = fp(sc), ap.pos = c.pos_ids ? pos.data<int64_t>() : nullptr;
    gqa_append_f32(ap, kStream);
    expect_near(pres_k, want[1], 1e-6, "present_key");
    expect_near(pres_v, want[2], 1e-6, "present_value");
    // 2. The rotated queries.
    AttnCoreArgs a;
    a.q = fp(q), a.q_sb = S * q_row, a.q_ss = q_row, a.q_sn = H;
    std::vector<float> qr(static_cast<size_t>(B * S * N * H));
    if (c.rotary) {
      RotaryArgs r;
      r.x = fp(q), r.B = B, r.S = S, r.N = N, r.H = H, r.rd = rd, r.xb = S * q_row, r.xs = q_row, r.xh = H;
      r.y = qr.data(), r.yb = S * N * H, r.ys = N * H, r.yh = H;
      r.interleaved = c.interleaved, r.cos = fp(cc), r.sin = fp(sc);
      r.pos_kind = c.pos_ids ? RotaryPos::kIds : RotaryPos::kPast;
      r.pos = pos.data<int64_t>(), r.seqlens = sl.data<int32_t>(), r.first_prompt = first;
      rotary_f32(r, kStream);
      a.q = qr.data(), a.q_sb = S * N * H, a.q_ss = N * H, a.q_sn = H;
    }
    // 3. The core.
    std::vector<float> y(static_cast<size_t>(B * S * N * H));
    a.B = B, a.N = N, a.S = S, a.T = L, a.H = H, a.Hv = H, a.group = G;
    a.k = pres_k.data(), a.k_sb = Nkv * L * H, a.k_sn = L * H;
    a.v = pres_v.data(), a.v_sb = Nkv * L * H, a.v_sn = L * H;
    a.y = y.data(), a.y_sb = S * N * H, a.y_ss = N * H, a.y_sn = H;
    a.scale = 1.0f / std::sqrt(static_cast<float>(H));
    a.seqlens = sl.data<int32_t>(), a.first_prompt = first, a.window = c.window, a.softcap = c.softcap, a.smooth = c.smooth;
    if (c.attn_bias) fill_bias(a, ab, total);
    if (c.sink) a.sink = fp(sink);
    run_core(a);
    expect_near(y, want[0], 1e-5, "y");
  }
}
