// rnn and quant families: behaviour the ONNX 1.12 backend test data does not cover. RNN / GRU /
// LSTM against a scalar reference (layout=1, both directions, sequence_lens, initial states,
// peepholes, activations, clip, linear_before_reset, input_forget, float16 / double, constant
// and runtime weights) and their shape errors; QuantizeLinear / DequantizeLinear at opsets 19 and
// 21 (float8 with and without saturation, int4 / uint4, int16, blocked quantization,
// output_dtype), QLinearMatMul-21, and the integer products with per-channel zero points.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

Session session_of(const GraphSpec& g, int64_t opset, int threads = 1) {
  const std::string m = encode_model(g, opset);
  return Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  return std::vector<uint8_t>(p, p + t.numel());
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

Tensor f32(const Shape& s, const std::vector<float>& v) { return Tensor::from_vector<float>(s, v); }

/// A tensor of a 1-byte type (float8, int4...) from raw bytes.
Tensor bytes_tensor(DType dt, const Shape& s, const std::vector<uint8_t>& v) {
  Tensor t(dt, s);
  std::memcpy(t.raw_data(), v.data(), v.size());
  return t;
}

/// AttributeProto bytes (NodeProto field 5) for a list of strings / floats, which the builder
/// has no kind for.
std::string strings_attr(const std::string& name, const std::vector<std::string>& v) {
  ProtoWriter a;
  a.bytes(1, name);
  for (const auto& x : v) a.bytes(9, x);
  a.varint(20, 8);  // STRINGS
  ProtoWriter w;
  w.bytes(5, a.str());
  return w.take();
}
std::string floats_attr(const std::string& name, const std::vector<float>& v) {
  ProtoWriter a;
  a.bytes(1, name);
  for (float x : v) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    a.fixed32(7, u);
  }
  a.varint(20, 6);  // FLOATS
  ProtoWriter w;
  w.bytes(5, a.str());
  return w.take();
}

/// Model bytes for graph `g` plus node `n` carrying extra encoded attributes.
std::string encode_model_with_node(const GraphSpec& g, const NodeSpec& n, const std::string& extra_attrs, int64_t opset) {
  std::string graph = g.encode();
  ProtoWriter node;
  node.bytes(1, GraphSpec::encode_node(n) + extra_attrs);
  graph = node.take() + graph;
  ProtoWriter w;
  w.varint(1, 8);
  w.bytes(2, "onyx-tests");
  w.bytes(7, graph);
  ProtoWriter os;
  os.bytes(1, "");
  os.varint(2, static_cast<uint64_t>(opset));
  w.bytes(8, os.str());
  return w.take();
}

// ---- scalar RNN reference (time-major, double precision) ----

using Fn = std::function<double(double)>;
double sigm(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct RnnCase {
  std::string op = "LSTM";  // RNN, GRU, LSTM
  int64_t S = 3, B = 2, I = 3, H = 4;
  std::string direction = "forward";
  bool has_bias = true, has_h0 = true, has_c0 = true, has_p = false;
  std::vector<int32_t> lens;  // empty = full length
  bool lbr = false, input_forget = false;
  float clip = 0;  // 0 = none
  std::vector<std::string> acts;  // empty = defaults
  std::vector<float> alphas, betas;
  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t gates() const { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
  // Data, time-major.
  std::vector<float> x, w, r, b, h0, c0, p;
  void fill(uint32_t seed) {
    const int64_t D = dirs(), G = gates();
    x = random_floats(S * B * I, seed);
    w = random_floats(D * G * H * I, seed + 1, -0.6f, 0.6f);
    r = random_floats(D * G * H * H, seed + 2, -0.6f, 0.6f);
    b = random_floats(D * 2 * G * H, seed + 3, -0.3f, 0.3f);
    h0 = random_floats(D * B * H, seed + 4);
    c0 = random_floats(D * B * H, seed + 5);
    p = random_floats(D * 3 * H, seed + 6, -0.5f, 0.5f);
  }
};

Fn ref_act(const std::string& name, const std::vector<float>& al, size_t& ai, const std::vector<float>& be, size_t& bi) {
  auto A = [&](double d) { return ai < al.size() ? static_cast<double>(al[ai++]) : d; };
  auto Bv = [&](double d) { return bi < be.size() ? static_cast<double>(be[bi++]) : d; };
  if (name == "Sigmoid") return sigm;
  if (name == "Tanh") return [](double x) { return std::tanh(x); };
  if (name == "Relu") return [](double x) { return std::max(0.0, x); };
  if (name == "HardSigmoid") {
    const double a = A(0.2), b = Bv(0.5);
    return [a, b](double x) { return std::max(0.0, std::min(1.0, a * x + b)); };
  }
  if (name == "LeakyRelu") {
    const double a = A(0.01);
    return [a](double x) { return x < 0 ? a * x : x; };
  }
  if (name == "ScaledTanh") {
    const double a = A(1.0), b = Bv(1.0);
    return [a, b](double x) { return a * std::tanh(b * x); };
  }
  if (name == "Affine") {
    const double a = A(1.0), b = Bv(0.0);
    return [a, b](double x) { return a * x + b; };
  }
  if (name == "Softsign") return [](double x) { return x / (1 + std::fabs(x)); };
  if (name == "Elu") {
    const double a = A(1.0);
    return [a](double x) { return x < 0 ? a * (std::exp(x) - 1) : x; };
  }
  ADD_FAILURE() << "reference lacks activation " << name;
  return sigm;
}

/// Y [S, D, B, H], Y_h / Y_c [D, B, H].
void rnn_reference(const RnnCase& c, std::vector<double>& y, std::vector<double>& yh, std::vector<double>& yc) {
  const int64_t S = c.S, B = c.B, I = c.I, H = c.H, D = c.dirs(), G = c.gates(), GH = G * H;
  const int na = c.op == "RNN" ? 1 : c.op == "GRU" ? 2 : 3;
  std::vector<std::string> names = c.acts;
  if (names.empty()) {
    for (int64_t d = 0; d < D; ++d) {
      if (c.op == "RNN") names.push_back("Tanh");
      if (c.op == "GRU") names.insert(names.end(), {"Sigmoid", "Tanh"});
      if (c.op == "LSTM") names.insert(names.end(), {"Sigmoid", "Tanh", "Tanh"});
    }
  }
  size_t ai = 0, bi = 0;
  std::vector<Fn> fns;
  for (const auto& n : names) fns.push_back(ref_act(n, c.alphas, ai, c.betas, bi));
  if (static_cast<int64_t>(fns.size()) == na && D == 2)
    for (int k = 0; k < na; ++k) fns.push_back(fns[k]);
  y.assign(S * D * B * H, 0.0);
  yh.assign(D * B * H, 0.0);
  yc.assign(D * B * H, 0.0);
  auto clipv = [&](double v) { return c.clip > 0 ? std::max<double>(-c.clip, std::min<double>(c.clip, v)) : v; };
  for (int64_t d = 0; d < D; ++d) {
    const bool rev = c.direction == "reverse" || (c.direction == "bidirectional" && d == 1);
    const Fn& f = fns[d * na];
    const Fn& g = na > 1 ? fns[d * na + 1] : fns[d * na];
    const Fn& hf = na > 2 ? fns[d * na + 2] : fns[d * na];
    auto W = [&](int64_t row, int64_t k) { return static_cast<double>(c.w[(d * GH + row) * I + k]); };
    auto R = [&](int64_t row, int64_t k) { return static_cast<double>(c.r[(d * GH + row) * H + k]); };
    auto Wb = [&](int64_t row) { return c.has_bias ? static_cast<double>(c.b[d * 2 * GH + row]) : 0.0; };
    auto Rb = [&](int64_t row) { return c.has_bias ? static_cast<double>(c.b[d * 2 * GH + GH + row]) : 0.0; };
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = c.lens.empty() ? S : c.lens[b];
      std::vector<double> h(H), cell(H);
      for (int64_t j = 0; j < H; ++j) {
        h[j] = c.has_h0 ? c.h0[(d * B + b) * H + j] : 0.0;
        cell[j] = c.has_c0 && c.op == "LSTM" ? c.c0[(d * B + b) * H + j] : 0.0;
      }
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = rev ? len - 1 - s : s;
        const float* xt = &c.x[(t * B + b) * I];
        auto xw = [&](int64_t row) {
          double v = Wb(row);
          for (int64_t k = 0; k < I; ++k) v += W(row, k) * xt[k];
          return v;
        };
        auto hr = [&](int64_t row, const std::vector<double>& hv) {
          double v = 0;
          for (int64_t k = 0; k < H; ++k) v += R(row, k) * hv[k];
          return v;
        };
        std::vector<double> nh(H);
        if (c.op == "RNN") {
          for (int64_t j = 0; j < H; ++j) nh[j] = f(clipv(xw(j) + hr(j, h) + Rb(j)));
        } else if (c.op == "GRU") {
          std::vector<double> z(H), rr(H), rh(H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = f(clipv(xw(j) + hr(j, h) + Rb(j)));
            rr[j] = f(clipv(xw(H + j) + hr(H + j, h) + Rb(H + j)));
          }
          for (int64_t j = 0; j < H; ++j) rh[j] = rr[j] * h[j];
          for (int64_t j = 0; j < H; ++j) {
            const double pre = c.lbr ? xw(2 * H + j) + rr[j] * (hr(2 * H + j, h) + Rb(2 * H + j))
                                     : xw(2 * H + j) + hr(2 * H + j, rh) + Rb(2 * H + j);
            const double cand = g(clipv(pre));
            nh[j] = (1 - z[j]) * cand + z[j] * h[j];
          }
        } else {
          std::vector<double> nc(H);
          for (int64_t j = 0; j < H; ++j) {
            auto P = [&](int64_t k) { return c.has_p ? static_cast<double>(c.p[d * 3 * H + k * H + j]) : 0.0; };
            const double i = f(clipv(xw(j) + hr(j, h) + Rb(j) + P(0) * cell[j]));
            double fg = f(clipv(xw(2 * H + j) + hr(2 * H + j, h) + Rb(2 * H + j) + P(2) * cell[j]));
            if (c.input_forget) fg = 1 - i;
            const double cc = g(clipv(xw(3 * H + j) + hr(3 * H + j, h) + Rb(3 * H + j)));
            nc[j] = fg * cell[j] + i * cc;
            const double o = f(clipv(xw(H + j) + hr(H + j, h) + Rb(H + j) + P(1) * nc[j]));
            nh[j] = o * hf(nc[j]);
          }
          cell = nc;
        }
        h = nh;
        for (int64_t j = 0; j < H; ++j) y[((t * D + d) * B + b) * H + j] = h[j];
      }
      for (int64_t j = 0; j < H; ++j) {
        yh[(d * B + b) * H + j] = len == 0 ? 0.0 : h[j];
        yc[(d * B + b) * H + j] = len == 0 ? 0.0 : cell[j];
      }
    }
  }
}

/// Runs the case through onyx (layout 0 or 1; W and R as initializers or runtime inputs) and
/// returns Y, Y_h (and Y_c) converted back to time-major.
struct RnnOut {
  std::vector<double> y, yh, yc;
  Shape y_shape, yh_shape;
};

RnnOut run_rnn(const RnnCase& c, int layout, bool const_weights, DType dt = DType::kFloat, int threads = 1) {
  const int64_t S = c.S, B = c.B, I = c.I, H = c.H, D = c.dirs(), G = c.gates();
  GraphSpec g;
  NodeSpec n{c.op, {"X", "W", "R"}, {"Y", "Y_h"}};
  if (c.op == "LSTM") n.outputs.push_back("Y_c");
  n.attrs.push_back(attr_int("hidden_size", H));
  n.attrs.push_back(attr_string("direction", c.direction));
  if (layout) n.attrs.push_back(attr_int("layout", 1));
  if (c.lbr) n.attrs.push_back(attr_int("linear_before_reset", 1));
  if (c.input_forget) n.attrs.push_back(attr_int("input_forget", 1));
  if (c.clip > 0) n.attrs.push_back(attr_float("clip", c.clip));
  auto to_dt = [&](const Shape& s, const std::vector<float>& v) {
    Tensor t = f32(s, v);
    if (dt == DType::kFloat) return t;
    Tensor o(dt, s);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (dt == DType::kDouble) o.data<double>()[i] = v[i];
      if (dt == DType::kFloat16) static_cast<Float16*>(o.raw_data())[i] = Float16(v[i]);
    }
    return o;
  };
  // Time-major -> batch-major copies for layout 1.
  std::vector<float> x = c.x, h0 = c.h0, c0 = c.c0;
  if (layout) {
    for (int64_t t = 0; t < S; ++t)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t k = 0; k < I; ++k) x[(b * S + t) * I + k] = c.x[(t * B + b) * I + k];
    for (int64_t d = 0; d < D; ++d)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < H; ++j) {
          h0[(b * D + d) * H + j] = c.h0[(d * B + b) * H + j];
          c0[(b * D + d) * H + j] = c.c0[(d * B + b) * H + j];
        }
  }
  std::vector<std::pair<std::string, Value>> feeds;
  auto add = [&](const std::string& name, Tensor t, bool as_const) {
    if (as_const) {
      g.initializers.emplace_back(name, t);
    } else {
      std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
      g.inputs.push_back({name, t.dtype(), dims});
      feeds.emplace_back(name, Value(t));
    }
  };
  add("X", to_dt(layout ? Shape{B, S, I} : Shape{S, B, I}, x), false);
  add("W", to_dt(Shape{D, G * H, I}, c.w), const_weights);
  add("R", to_dt(Shape{D, G * H, H}, c.r), const_weights);
  auto opt = [&](bool has, const std::string& name) {
    n.inputs.push_back(has ? name : "");
    return has;
  };
  const bool lstm = c.op == "LSTM";
  if (opt(c.has_bias, "B")) add("B", to_dt(Shape{D, 2 * G * H}, c.b), const_weights);
  if (opt(!c.lens.empty(), "L")) add("L", Tensor::from_vector<int32_t>(Shape{B}, c.lens), false);
  if (opt(c.has_h0, "H0")) add("H0", to_dt(layout ? Shape{B, D, H} : Shape{D, B, H}, h0), false);
  if (lstm && opt(c.has_c0, "C0")) add("C0", to_dt(layout ? Shape{B, D, H} : Shape{D, B, H}, c0), false);
  if (lstm && opt(c.has_p, "P")) add("P", to_dt(Shape{D, 3 * H}, c.p), const_weights);
  while (!n.inputs.empty() && n.inputs.back().empty()) n.inputs.pop_back();
  g.outputs.push_back(any_out("Y", dt));
  g.outputs.push_back(any_out("Y_h", dt));
  if (lstm) g.outputs.push_back(any_out("Y_c", dt));
  std::string extra;
  if (!c.acts.empty()) extra += strings_attr("activations", c.acts);
  if (!c.alphas.empty()) extra += floats_attr("activation_alpha", c.alphas);
  if (!c.betas.empty()) extra += floats_attr("activation_beta", c.betas);
  const std::string m = encode_model_with_node(g, n, extra, 14);
  Session s = Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
  auto out = s.run(feeds);
  RnnOut r;
  r.y_shape = out[0].tensor().shape();
  r.yh_shape = out[1].tensor().shape();
  auto y = values_of(out[0].tensor());
  auto yh = values_of(out[1].tensor());
  std::vector<double> yc = lstm ? values_of(out[2].tensor()) : std::vector<double>{};
  if (!layout) {
    r.y = y;
    r.yh = yh;
    r.yc = yc;
    return r;
  }
  r.y.resize(y.size());
  r.yh.resize(yh.size());
  r.yc.resize(yc.size());
  for (int64_t t = 0; t < S; ++t)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < H; ++j) r.y[((t * D + d) * B + b) * H + j] = y[((b * S + t) * D + d) * H + j];
  for (int64_t d = 0; d < D; ++d)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j) {
        r.yh[(d * B + b) * H + j] = yh[(b * D + d) * H + j];
        if (lstm) r.yc[(d * B + b) * H + j] = yc[(b * D + d) * H + j];
      }
  return r;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " at " << i;
}

void check_case(const RnnCase& c, double tol = 2e-5) {
  std::vector<double> y, yh, yc;
  rnn_reference(c, y, yh, yc);
  for (int layout : {0, 1})
    for (bool cw : {false, true}) {
      SCOPED_TRACE(c.op + " " + c.direction + " layout=" + std::to_string(layout) + (cw ? " const" : " runtime"));
      RnnOut r = run_rnn(c, layout, cw);
      const int64_t D = c.dirs();
      EXPECT_EQ(r.y_shape, layout ? (Shape{c.B, c.S, D, c.H}) : (Shape{c.S, D, c.B, c.H}));
      EXPECT_EQ(r.yh_shape, layout ? (Shape{c.B, D, c.H}) : (Shape{D, c.B, c.H}));
      expect_near(r.y, y, tol, "Y");
      expect_near(r.yh, yh, tol, "Y_h");
      if (c.op == "LSTM") expect_near(r.yc, yc, tol, "Y_c");
    }
}

}  // namespace

// ---- RNN / GRU / LSTM ----

TEST(RnnOps, LstmDirectionsLayoutsAndSequenceLens) {
  for (const char* dir : {"forward", "reverse", "bidirectional"}) {
    RnnCase c;
    c.op = "LSTM";
    c.direction = dir;
    c.S = 4;
    c.B = 3;
    c.has_p = true;
    c.lens = {4, 2, 1};
    c.fill(11);
    check_case(c);
  }
}

TEST(RnnOps, LstmInputForgetClipAndNoOptionalInputs) {
  RnnCase c;
  c.op = "LSTM";
  c.input_forget = true;
  c.clip = 0.4f;
  c.has_bias = false;
  c.has_h0 = false;
  c.has_c0 = false;
  c.fill(3);
  check_case(c);
}

TEST(RnnOps, GruBothResetModes) {
  for (bool lbr : {false, true})
    for (const char* dir : {"forward", "bidirectional"}) {
      RnnCase c;
      c.op = "GRU";
      c.direction = dir;
      c.lbr = lbr;
      c.S = 5;
      c.B = 2;
      c.H = 3;
      c.lens = {5, 3};
      c.fill(lbr ? 7 : 8);
      check_case(c);
    }
}

TEST(RnnOps, SimpleRnnReverseLayout1) {
  RnnCase c;
  c.op = "RNN";
  c.direction = "reverse";
  c.S = 6;
  c.B = 3;
  c.H = 5;
  c.lens = {6, 0, 3};
  c.fill(21);
  check_case(c);
}

TEST(RnnOps, ZeroLengthSequenceGivesZeros) {
  RnnCase c;
  c.op = "GRU";
  c.lens = {0, 3};
  c.fill(5);
  RnnOut r = run_rnn(c, 0, true);
  for (int64_t t = 0; t < c.S; ++t)
    for (int64_t j = 0; j < c.H; ++j) EXPECT_EQ(r.y[(t * c.B + 0) * c.H + j], 0.0);
  for (int64_t j = 0; j < c.H; ++j) EXPECT_EQ(r.yh[j], 0.0);
}

TEST(RnnOps, Float16AndDouble) {
  RnnCase c;
  c.op = "LSTM";
  c.direction = "bidirectional";
  c.has_p = true;
  c.fill(9);
  std::vector<double> y, yh, yc;
  rnn_reference(c, y, yh, yc);
  RnnOut d = run_rnn(c, 0, true, DType::kDouble);
  expect_near(d.y, y, 1e-9, "double Y");
  expect_near(d.yc, yc, 1e-9, "double Y_c");
  RnnOut h = run_rnn(c, 1, true, DType::kFloat16);
  expect_near(h.y, y, 2e-2, "float16 Y");
  expect_near(h.yh, yh, 2e-2, "float16 Y_h");
}

TEST(RnnOps, ManyThreadsLargeBatch) {
  RnnCase c;
  c.op = "GRU";
  c.direction = "bidirectional";
  c.S = 7;
  c.B = 64;
  c.I = 24;
  c.H = 48;
  c.fill(31);
  std::vector<double> y, yh, yc;
  rnn_reference(c, y, yh, yc);
  RnnOut r = run_rnn(c, 1, true, DType::kFloat, 4);
  expect_near(r.y, y, 1e-4, "Y");
  expect_near(r.yh, yh, 1e-4, "Y_h");
}

namespace {

/// One-node LSTM/GRU model with the given attributes and input shapes (all graph inputs).
std::string rnn_model(const std::string& op, const std::vector<std::vector<int64_t>>& shapes, std::vector<AttrSpec> attrs,
                      int64_t opset = 14) {
  GraphSpec g;
  NodeSpec n{op, {}, {"Y", "Y_h"}, std::move(attrs)};
  const char* names[] = {"X", "W", "R", "B", "L", "H0", "C0", "P"};
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (shapes[i].empty()) {
      n.inputs.push_back("");
      continue;
    }
    n.inputs.push_back(names[i]);
    g.inputs.push_back({names[i], i == 4 ? DType::kInt32 : DType::kFloat, shapes[i]});
  }
  g.nodes.push_back(n);
  g.outputs.push_back(any_out("Y"));
  g.outputs.push_back(any_out("Y_h"));
  return encode_model(g, opset);
}

std::string load_error(const std::string& m) {
  try {
    Session s = Session::builder().commit_from_memory(m.data(), m.size());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RnnOps, CustomActivationsWithAlphaBeta) {
  {
    RnnCase c;
    c.op = "LSTM";
    c.acts = {"HardSigmoid", "LeakyRelu", "ScaledTanh"};
    c.alphas = {0.3f, 0.05f, 0.9f};
    c.betas = {0.4f, 1.5f};
    c.has_p = true;
    c.fill(41);
    check_case(c);
  }
  {
    // Bidirectional with activations given per direction.
    RnnCase c;
    c.op = "GRU";
    c.direction = "bidirectional";
    c.acts = {"Sigmoid", "Softsign", "HardSigmoid", "Elu"};
    c.alphas = {0.25f, 0.8f};
    c.fill(43);
    check_case(c);
  }
  {
    // Bidirectional RNN with one activation list reused for both directions.
    RnnCase c;
    c.op = "RNN";
    c.direction = "bidirectional";
    c.acts = {"Affine"};
    c.alphas = {0.5f};
    c.betas = {0.1f};
    c.fill(45);
    check_case(c);
  }
  {
    RnnCase c;
    c.op = "RNN";
    c.acts = {"Relu"};
    c.clip = 0.3f;
    c.fill(47);
    check_case(c);
  }
}

TEST(RnnOps, ShapeErrorsNameTheInput) {
  const AttrSpec hs = attr_int("hidden_size", 4);
  // W rows must be 4 * hidden_size for LSTM.
  std::string e = load_error(rnn_model("LSTM", {{3, 2, 5}, {1, 12, 5}, {1, 16, 4}}, {hs}));
  EXPECT_NE(e.find("W (input 1)"), std::string::npos) << e;
  // W's input size must match X.
  e = load_error(rnn_model("LSTM", {{3, 2, 5}, {1, 16, 6}, {1, 16, 4}}, {hs}));
  EXPECT_NE(e.find("W (input 1)"), std::string::npos) << e;
  // B has 8 * hidden_size values per direction.
  e = load_error(rnn_model("LSTM", {{3, 2, 5}, {1, 16, 5}, {1, 16, 4}, {1, 16}}, {hs}));
  EXPECT_NE(e.find("B (input 3)"), std::string::npos) << e;
  // num_directions for bidirectional.
  e = load_error(rnn_model("GRU", {{3, 2, 5}, {1, 12, 5}, {1, 12, 4}}, {hs, attr_string("direction", "bidirectional")}));
  EXPECT_NE(e.find("W (input 1)"), std::string::npos) << e;
  // initial_h in layout 1 is [batch, dirs, hidden].
  e = load_error(rnn_model("RNN", {{2, 3, 5}, {1, 4, 5}, {1, 4, 4}, {}, {}, {1, 2, 4}}, {hs, attr_int("layout", 1)}));
  EXPECT_NE(e.find("initial_h (input 5)"), std::string::npos) << e;
  // sequence_lens has batch_size values.
  e = load_error(rnn_model("RNN", {{3, 2, 5}, {1, 4, 5}, {1, 4, 4}, {}, {3}}, {hs}));
  EXPECT_NE(e.find("sequence_lens (input 4)"), std::string::npos) << e;
  // Unknown direction / activation.
  e = load_error(rnn_model("RNN", {{3, 2, 5}, {1, 4, 5}, {1, 4, 4}}, {hs, attr_string("direction", "sideways")}));
  EXPECT_NE(e.find("direction"), std::string::npos) << e;
}

TEST(RnnOps, SequenceLensOutOfRangeIsAnError) {
  RnnCase c;
  c.op = "RNN";
  c.lens = {3, 4};  // S = 3
  c.fill(1);
  try {
    (void)run_rnn(c, 0, true);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sequence_lens (input 4)"), std::string::npos) << e.what();
  }
  c.lens = {-1, 2};
  EXPECT_THROW((void)run_rnn(c, 1, false), Error);
}

TEST(RnnOps, RuntimeShapeMismatchIsAnError) {
  // hidden_size 4 but R fed at run time as [1, 4, 3].
  GraphSpec g;
  g.nodes.push_back({"RNN", {"X", "W", "R"}, {"Y"}, {attr_int("hidden_size", 4)}});
  g.inputs.push_back({"X", DType::kFloat, {-1, 2, 3}});
  g.inputs.push_back({"W", DType::kFloat, {1, -1, 3}});
  g.inputs.push_back({"R", DType::kFloat, {1, -1, -1}});
  g.outputs.push_back(any_out("Y"));
  Session s = session_of(g, 14);
  try {
    (void)s.run({{"X", Tensor(DType::kFloat, Shape{2, 2, 3})},
                 {"W", Tensor(DType::kFloat, Shape{1, 4, 3})},
                 {"R", Tensor(DType::kFloat, Shape{1, 4, 3})}});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("R (input 2)"), std::string::npos) << e.what();
  }
}

TEST(RnnOps, SymbolicShapesAtLoad) {
  GraphSpec g;
  g.nodes.push_back({"LSTM", {"X", "W", "R"}, {"Y", "Y_h", "Y_c"}, {attr_int("hidden_size", 4), attr_int("layout", 1),
                                                                  attr_string("direction", "bidirectional")}});
  g.inputs.push_back({"X", DType::kFloat, {-1, -1, 3}, {"batch", "seq", ""}});
  g.inputs.push_back({"W", DType::kFloat, {2, 16, 3}});
  g.inputs.push_back({"R", DType::kFloat, {2, 16, 4}});
  g.outputs.push_back({"Y", DType::kFloat, {-1, -1, 2, 4}, {"batch", "seq", "", ""}});
  g.outputs.push_back({"Y_h", DType::kFloat, {-1, 2, 4}, {"batch", "", ""}});
  g.outputs.push_back({"Y_c", DType::kFloat, {-1, 2, 4}, {"batch", "", ""}});
  Session s = session_of(g, 14);
  auto out = s.run({{"X", Tensor(DType::kFloat, Shape{5, 7, 3})},
                    {"W", Tensor(DType::kFloat, Shape{2, 16, 3})},
                    {"R", Tensor(DType::kFloat, Shape{2, 16, 4})}});
  EXPECT_EQ(out[0].tensor().shape(), (Shape{5, 7, 2, 4}));
  EXPECT_EQ(out[1].tensor().shape(), (Shape{5, 2, 4}));
  EXPECT_EQ(out[2].tensor().shape(), (Shape{5, 2, 4}));
}

// ---- QuantizeLinear / DequantizeLinear ----

namespace {

/// y = QuantizeLinear(x, scale [, zero point]) with the zero point (and scale) as initializers.
Tensor quantize(int64_t opset, const Tensor& x, const Tensor& scale, const Tensor* zp, std::vector<AttrSpec> attrs = {},
                DType out_dt = DType::kUInt8) {
  GraphSpec g;
  NodeSpec n{"QuantizeLinear", {"x", "s"}, {"y"}, std::move(attrs)};
  g.initializers.emplace_back("s", scale);
  if (zp) {
    n.inputs.push_back("z");
    g.initializers.emplace_back("z", *zp);
  }
  g.nodes.push_back(n);
  std::vector<int64_t> dims(x.shape().begin(), x.shape().end());
  g.inputs.push_back({"x", x.dtype(), dims});
  g.outputs.push_back(any_out("y", out_dt));
  Session s = session_of(g, opset);
  return s.run({{"x", x}})[0].tensor();
}

Tensor dequantize(int64_t opset, const Tensor& x, const Tensor& scale, const Tensor* zp, std::vector<AttrSpec> attrs = {}) {
  GraphSpec g;
  NodeSpec n{"DequantizeLinear", {"x", "s"}, {"y"}, std::move(attrs)};
  g.initializers.emplace_back("s", scale);
  if (zp) {
    n.inputs.push_back("z");
    g.initializers.emplace_back("z", *zp);
  }
  g.nodes.push_back(n);
  std::vector<int64_t> dims(x.shape().begin(), x.shape().end());
  g.inputs.push_back({"x", x.dtype(), dims});
  g.outputs.push_back(any_out("y", scale.dtype()));
  Session s = session_of(g, opset);
  return s.run({{"x", x}})[0].tensor();
}

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace

TEST(QuantOps, QuantizeRoundsHalfToEvenAndSaturates) {
  const Tensor x = f32(Shape{8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300.0f, -300.0f, 127.4f});
  const Tensor zp8 = Tensor::from_vector<int8_t>(Shape{}, {0});
  Tensor y = quantize(13, x, Tensor::scalar(1.0f), &zp8, {}, DType::kInt8);
  EXPECT_EQ(values_of(y), (std::vector<double>{0, 2, 2, 0, -2, 127, -128, 127}));
  const Tensor zpu = Tensor::from_vector<uint8_t>(Shape{}, {10});
  y = quantize(10, x, Tensor::scalar(1.0f), &zpu);
  EXPECT_EQ(values_of(y), (std::vector<double>{10, 12, 12, 10, 8, 255, 0, 137}));
  // No zero point: uint8.
  y = quantize(13, f32(Shape{3}, {-1, 1, 3}), Tensor::scalar(0.5f), nullptr);
  EXPECT_EQ(y.dtype(), DType::kUInt8);
  EXPECT_EQ(values_of(y), (std::vector<double>{0, 2, 6}));
}

TEST(QuantOps, PerAxisAtOpset13) {
  // x [2, 3], axis 1: scales per column.
  const Tensor x = f32(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor s = f32(Shape{3}, {1, 2, 4});
  const Tensor z = Tensor::from_vector<uint8_t>(Shape{3}, {0, 10, 20});
  Tensor y = quantize(13, x, s, &z);
  EXPECT_EQ(values_of(y), (std::vector<double>{1, 11, 21, 4, 12, 22}));  // 3/4 -> 1 (0.75), 5/2 -> 2 (tie to even)
  Tensor back = dequantize(13, y, s, &z);
  EXPECT_EQ(values_of(back), (std::vector<double>{1, 2, 4, 4, 4, 8}));
  // axis 0 with a negative axis attribute.
  Tensor y0 = quantize(13, x, f32(Shape{2}, {1, 2}), nullptr, {attr_int("axis", -2)});
  EXPECT_EQ(values_of(y0), (std::vector<double>{1, 2, 3, 2, 2, 3}));
}

TEST(QuantOps, Float8EncodingAtOpset19) {
  const Tensor x = f32(Shape{10}, {1.0f, 0.5f, -2.0f, 448.0f, 500.0f, kInf, -kInf, kNaN, 0.001953125f /*2^-9*/, -0.0f});
  const Tensor zp = bytes_tensor(DType::kFloat8E4M3FN, Shape{}, {0});
  Tensor y = quantize(19, x, Tensor::scalar(1.0f), &zp, {}, DType::kFloat8E4M3FN);
  EXPECT_EQ(y.dtype(), DType::kFloat8E4M3FN);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x38, 0x30, 0xC0, 0x7E, 0x7E, 0x7E, 0xFE, 0x7F, 0x01, 0x80}));
  // Without saturation out-of-range values become NaN.
  y = quantize(19, x, Tensor::scalar(1.0f), &zp, {attr_int("saturate", 0)}, DType::kFloat8E4M3FN);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x38, 0x30, 0xC0, 0x7E, 0x7F, 0x7F, 0xFF, 0x7F, 0x01, 0x80}));
  // E5M2: IEEE-like; saturation keeps finite values, no saturation gives infinities.
  const Tensor x2 = f32(Shape{5}, {1.0f, 57344.0f, 1e6f, -kInf, 3.0f});
  const Tensor z2 = bytes_tensor(DType::kFloat8E5M2, Shape{}, {0});
  y = quantize(19, x2, Tensor::scalar(1.0f), &z2, {}, DType::kFloat8E5M2);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x3C, 0x7B, 0x7B, 0xFB, 0x42}));
  y = quantize(19, x2, Tensor::scalar(1.0f), &z2, {attr_int("saturate", 0)}, DType::kFloat8E5M2);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x3C, 0x7B, 0x7C, 0xFC, 0x42}));
  // FNUZ types: no negative zero, NaN = 0x80, infinities become NaN.
  const Tensor x3 = f32(Shape{5}, {1.0f, -0.0f, kNaN, kInf, 1000.0f});
  const Tensor z3 = bytes_tensor(DType::kFloat8E4M3FNUZ, Shape{}, {0});
  y = quantize(19, x3, Tensor::scalar(1.0f), &z3, {}, DType::kFloat8E4M3FNUZ);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x40, 0x00, 0x80, 0x80, 0x7F}));
  const Tensor z4 = bytes_tensor(DType::kFloat8E5M2FNUZ, Shape{}, {0});
  y = quantize(19, x3, Tensor::scalar(1.0f), &z4, {}, DType::kFloat8E5M2FNUZ);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x40, 0x00, 0x80, 0x80, 0x68}));  // 1000 -> 1024
}

TEST(QuantOps, Float8RoundTripsEveryCode) {
  const DType types[] = {DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ};
  for (DType t : types) {
    std::vector<uint8_t> codes(256);
    for (int i = 0; i < 256; ++i) codes[i] = static_cast<uint8_t>(i);
    const Tensor q = bytes_tensor(t, Shape{256}, codes);
    const Tensor deq = dequantize(19, q, Tensor::scalar(1.0f), nullptr);
    const Tensor zp = bytes_tensor(t, Shape{}, {0});
    const Tensor back = quantize(19, deq, Tensor::scalar(1.0f), &zp, {attr_int("saturate", 0)}, t);
    const auto b = bytes_of(back);
    const auto v = values_of(deq);
    for (int i = 0; i < 256; ++i) {
      if (std::isnan(v[i])) {
        EXPECT_TRUE(b[i] == 0x80 || (b[i] & 0x7F) == 0x7F || (t == DType::kFloat8E5M2 && (b[i] & 0x7C) == 0x7C))
            << dtype_name(t) << " code " << i;
        continue;
      }
      EXPECT_EQ(b[i], i) << dtype_name(t) << " code " << i << " value " << v[i];
    }
  }
  // Known values.
  const Tensor q = bytes_tensor(DType::kFloat8E4M3FN, Shape{4}, {0x7E, 0x01, 0xB8, 0x7F});
  const auto v = values_of(dequantize(19, q, Tensor::scalar(2.0f), nullptr));
  EXPECT_EQ(v[0], 896.0);
  EXPECT_EQ(v[1], std::ldexp(1.0, -8));
  EXPECT_EQ(v[2], -2.0);
  EXPECT_TRUE(std::isnan(v[3]));
}

TEST(QuantOps, Float8TiesToEven) {
  // E4M3FN around 1: representable 1, 1.125, 1.25; 1.0625 ties to 1, 1.1875 ties to 1.25.
  const Tensor x = f32(Shape{4}, {1.0625f, 1.1875f, 0.0009765625f /*2^-10: tie to 0*/, 0.0029296875f /*3*2^-10 -> 2*2^-9*/});
  const Tensor zp = bytes_tensor(DType::kFloat8E4M3FN, Shape{}, {0});
  const Tensor y = quantize(19, x, Tensor::scalar(1.0f), &zp, {}, DType::kFloat8E4M3FN);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x38, 0x3A, 0x00, 0x02}));
}

TEST(QuantOps, Float16ScaleAtOpset19) {
  Tensor x(DType::kFloat16, Shape{3});
  Tensor s(DType::kFloat16, Shape{});
  auto* px = static_cast<Float16*>(x.raw_data());
  px[0] = Float16(1.0f);
  px[1] = Float16(-3.0f);
  px[2] = Float16(100.0f);
  *static_cast<Float16*>(s.raw_data()) = Float16(0.5f);
  const Tensor zp = Tensor::from_vector<int8_t>(Shape{}, {1});
  const Tensor y = quantize(19, x, s, &zp, {}, DType::kInt8);
  EXPECT_EQ(values_of(y), (std::vector<double>{3, -5, 127}));
  const Tensor back = dequantize(19, y, s, &zp);
  EXPECT_EQ(back.dtype(), DType::kFloat16);
  EXPECT_EQ(values_of(back), (std::vector<double>{1, -3, 63}));
}

TEST(QuantOps, Int4AndUInt4AtOpset21) {
  const Tensor x = f32(Shape{6}, {-20, -8.4f, -1, 0.5f, 6.6f, 30});
  const Tensor zi = bytes_tensor(DType::kInt4, Shape{}, {0});
  Tensor y = quantize(21, x, Tensor::scalar(1.0f), &zi, {}, DType::kInt4);
  EXPECT_EQ(y.dtype(), DType::kInt4);
  // Unpacked, sign-extended.
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0xF8, 0xF8, 0xFF, 0x00, 0x07, 0x07}));
  const Tensor back = dequantize(21, y, Tensor::scalar(2.0f), &zi);
  EXPECT_EQ(values_of(back), (std::vector<double>{-16, -16, -2, 0, 14, 14}));
  const Tensor zu = bytes_tensor(DType::kUInt4, Shape{}, {3});
  y = quantize(21, x, Tensor::scalar(1.0f), &zu, {}, DType::kUInt4);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0, 0, 2, 3, 10, 15}));
  // output_dtype without a zero point.
  y = quantize(21, x, Tensor::scalar(1.0f), nullptr, {attr_int("output_dtype", static_cast<int64_t>(DType::kInt4))},
               DType::kInt4);
  EXPECT_EQ(y.dtype(), DType::kInt4);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0xF8, 0xF8, 0xFF, 0x00, 0x07, 0x07}));
}

TEST(QuantOps, Int16AtOpset21) {
  const Tensor x = f32(Shape{3}, {-1e6f, 2.5f, 1e6f});
  const Tensor z = Tensor::from_vector<int16_t>(Shape{}, {100});
  const Tensor y = quantize(21, x, Tensor::scalar(1.0f), &z, {}, DType::kInt16);
  EXPECT_EQ(values_of(y), (std::vector<double>{-32768, 102, 32767}));
  const Tensor zu = Tensor::from_vector<uint16_t>(Shape{}, {0});
  EXPECT_EQ(values_of(quantize(21, x, Tensor::scalar(1.0f), &zu, {}, DType::kUInt16)), (std::vector<double>{0, 2, 65535}));
}

TEST(QuantOps, BlockedQuantization) {
  // x [2, 6], axis 1, block 4: scale [2, 2] (blocks of columns 0-3 and 4-5).
  std::vector<float> xv(12);
  for (int i = 0; i < 12; ++i) xv[i] = static_cast<float>(i + 1);
  const Tensor x = f32(Shape{2, 6}, xv);
  const Tensor s = f32(Shape{2, 2}, {1, 2, 4, 8});
  const Tensor z = Tensor::from_vector<int8_t>(Shape{2, 2}, {0, 1, 2, 3});
  const std::vector<AttrSpec> at = {attr_int("axis", 1), attr_int("block_size", 4)};
  const Tensor y = quantize(21, x, s, &z, at, DType::kInt8);
  // Row 0: 1..4 / 1 + 0; 5 / 2 = 2.5 -> 2 (tie to even) + 1, 6 / 2 + 1. Row 1: 7..10 / 4 + 2;
  // 11 / 8 -> 1 + 3, 12 / 8 = 1.5 -> 2 + 3.
  EXPECT_EQ(values_of(y), (std::vector<double>{1, 2, 3, 4, 3, 4, 4, 4, 4, 4, 4, 5}));
  const Tensor back = dequantize(21, y, s, &z, at);
  EXPECT_EQ(values_of(back), (std::vector<double>{1, 2, 3, 4, 4, 6, 8, 8, 8, 8, 8, 16}));
  // Blocks along axis 0 of x [4, 2] with block 3: scale [2, 2].
  const Tensor x0 = f32(Shape{4, 2}, {3, 6, 3, 6, 3, 6, 3, 6});
  const Tensor s0 = f32(Shape{2, 2}, {1, 2, 3, 6});
  const Tensor y0 = quantize(21, x0, s0, nullptr, {attr_int("axis", 0), attr_int("block_size", 3)});
  EXPECT_EQ(values_of(y0), (std::vector<double>{3, 3, 3, 3, 3, 3, 1, 1}));
  // A scale of the wrong shape is an error naming it.
  try {
    (void)quantize(21, x, f32(Shape{2, 3}, {1, 1, 1, 1, 1, 1}), nullptr, at);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("y_scale (input 1)"), std::string::npos) << e.what();
  }
}

TEST(QuantOps, DequantizeInt32AndFloat8ZeroPoint) {
  const Tensor x = Tensor::from_vector<int32_t>(Shape{3}, {-5, 0, 1 << 20});
  EXPECT_EQ(values_of(dequantize(19, x, Tensor::scalar(0.5f), nullptr)), (std::vector<double>{-2.5, 0, 524288}));
  // float8 with a zero point: (x - zp) * scale.
  const Tensor q = bytes_tensor(DType::kFloat8E5M2, Shape{2}, {0x3C /*1*/, 0x44 /*4*/});
  const Tensor zp = bytes_tensor(DType::kFloat8E5M2, Shape{}, {0x40 /*2*/});
  EXPECT_EQ(values_of(dequantize(21, q, Tensor::scalar(3.0f), &zp)), (std::vector<double>{-3, 6}));
}

TEST(QuantOps, ScaleShapeErrors) {
  const Tensor x = f32(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  // Opset 10 takes only a scalar scale.
  EXPECT_THROW((void)quantize(10, x, f32(Shape{3}, {1, 1, 1}), nullptr), Error);
  // Per-axis length must match the axis.
  try {
    (void)dequantize(13, Tensor::from_vector<uint8_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6}), f32(Shape{2}, {1, 1}), nullptr);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x_scale (input 1)"), std::string::npos) << e.what();
  }
}

// ---- QLinearMatMul / MatMulInteger / ConvInteger / QLinearConv ----

TEST(QuantOps, QLinearMatMul21Float8AndFloat16Scales) {
  // float8e4m3fn operands: a = [[1, 2], [3, 4]] (codes), b = [[1], [0.5]]; scales 1; y = a * b.
  const Tensor a = bytes_tensor(DType::kFloat8E4M3FN, Shape{2, 2}, {0x38, 0x40, 0x44, 0x48});  // 1, 2, 3, 4
  const Tensor b = bytes_tensor(DType::kFloat8E4M3FN, Shape{2, 1}, {0x38, 0x30});              // 1, 0.5
  const Tensor z = bytes_tensor(DType::kFloat8E4M3FN, Shape{}, {0});
  GraphSpec g;
  g.nodes.push_back({"QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}});
  g.inputs.push_back({"a", DType::kFloat8E4M3FN, {2, 2}});
  g.inputs.push_back({"b", DType::kFloat8E4M3FN, {2, 1}});
  g.initializers.emplace_back("as", Tensor::scalar(1.0f));
  g.initializers.emplace_back("bs", Tensor::scalar(2.0f));
  g.initializers.emplace_back("ys", Tensor::scalar(0.5f));
  g.initializers.emplace_back("az", z);
  g.initializers.emplace_back("bz", z);
  g.initializers.emplace_back("yz", z);
  g.outputs.push_back(any_out("y", DType::kFloat8E4M3FN));
  Session s = session_of(g, 21);
  const Tensor y = s.run({{"a", a}, {"b", b}})[0].tensor();
  // (1*1 + 2*0.5) * 2 / 0.5 = 8 -> 0x50; (3 + 2) * 4 = 20 -> 0x5A.
  EXPECT_EQ(y.dtype(), DType::kFloat8E4M3FN);
  EXPECT_EQ(bytes_of(y), (std::vector<uint8_t>{0x50, 0x5A}));

  // uint8 operands with float16 scales and a per-column b scale.
  GraphSpec g2;
  g2.nodes.push_back({"QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}});
  g2.inputs.push_back({"a", DType::kUInt8, {1, 2}});
  g2.inputs.push_back({"b", DType::kUInt8, {2, 2}});
  auto h = [](float v) {
    Tensor t(DType::kFloat16, Shape{});
    *static_cast<Float16*>(t.raw_data()) = Float16(v);
    return t;
  };
  Tensor bs(DType::kFloat16, Shape{2});
  static_cast<Float16*>(bs.raw_data())[0] = Float16(1.0f);
  static_cast<Float16*>(bs.raw_data())[1] = Float16(0.25f);
  g2.initializers.emplace_back("as", h(1.0f));
  g2.initializers.emplace_back("bs", bs);
  g2.initializers.emplace_back("ys", h(1.0f));
  g2.initializers.emplace_back("az", Tensor::from_vector<uint8_t>(Shape{}, {10}));
  g2.initializers.emplace_back("bz", Tensor::from_vector<uint8_t>(Shape{2}, {0, 4}));
  g2.initializers.emplace_back("yz", Tensor::from_vector<uint8_t>(Shape{}, {100}));
  g2.outputs.push_back(any_out("y", DType::kUInt8));
  Session s2 = session_of(g2, 21);
  const Tensor y2 = s2.run({{"a", Tensor::from_vector<uint8_t>(Shape{1, 2}, {12, 13})},
                            {"b", Tensor::from_vector<uint8_t>(Shape{2, 2}, {1, 8, 2, 12})}})[0]
                        .tensor();
  // a - 10 = [2, 3]; col 0: 2*1 + 3*2 = 8 -> 108; col 1: (2*4 + 3*8) * 0.25 = 8 -> 108.
  EXPECT_EQ(values_of(y2), (std::vector<double>{108, 108}));
  // Opset 10 rejects float8 and float16 scales at load.
  EXPECT_THROW((void)session_of(g, 10), Error);
}

TEST(QuantOps, MatMulIntegerPerRowAndColumnZeroPoints) {
  GraphSpec g;
  g.nodes.push_back({"MatMulInteger", {"a", "b", "za", "zb"}, {"y"}});
  g.inputs.push_back({"a", DType::kInt8, {2, 3, 2}});
  g.inputs.push_back({"b", DType::kUInt8, {2, 2}});
  g.initializers.emplace_back("za", Tensor::from_vector<int8_t>(Shape{3}, {1, -1, 0}));
  g.initializers.emplace_back("zb", Tensor::from_vector<uint8_t>(Shape{2}, {128, 0}));
  g.outputs.push_back(any_out("y", DType::kInt32));
  Session s = session_of(g, 10);
  const std::vector<int8_t> av = {1, 2, 3, 4, -5, 6, -128, 127, 0, 0, 1, 1};
  const std::vector<uint8_t> bv = {255, 1, 0, 2};
  const Tensor y = s.run({{"a", Tensor::from_vector<int8_t>(Shape{2, 3, 2}, av)},
                          {"b", Tensor::from_vector<uint8_t>(Shape{2, 2}, bv)}})[0]
                       .tensor();
  ASSERT_EQ(y.shape(), (Shape{2, 3, 2}));
  const int za[3] = {1, -1, 0}, zb[2] = {128, 0};
  std::vector<double> want;
  for (int bt = 0; bt < 2; ++bt)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 2; ++j) {
        int acc = 0;
        for (int k = 0; k < 2; ++k) acc += (av[(bt * 3 + i) * 2 + k] - za[i]) * (bv[k * 2 + j] - zb[j]);
        want.push_back(acc);
      }
  EXPECT_EQ(values_of(y), want);
}

namespace {

/// Reference 2-D convolution over integers (zero points subtracted, padding contributes 0).
std::vector<int64_t> conv_ref(const std::vector<int>& x, int N, int C, int H, int W, const std::vector<int>& w, int M, int KH,
                              int KW, int group, int pad, int stride, int xz, const std::vector<int>& wz, int& OH, int& OW) {
  OH = (H + 2 * pad - KH) / stride + 1;
  OW = (W + 2 * pad - KW) / stride + 1;
  const int Cg = C / group, Mg = M / group;
  std::vector<int64_t> y(N * M * OH * OW, 0);
  for (int n = 0; n < N; ++n)
    for (int m = 0; m < M; ++m)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          int64_t acc = 0;
          const int grp = m / Mg;
          for (int c = 0; c < Cg; ++c)
            for (int ki = 0; ki < KH; ++ki)
              for (int kj = 0; kj < KW; ++kj) {
                const int ih = oh * stride - pad + ki, iw = ow * stride - pad + kj;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int xv = x[((n * C + grp * Cg + c) * H + ih) * W + iw] - xz;
                const int wv = w[((m * Cg + c) * KH + ki) * KW + kj] - wz[wz.size() == 1 ? 0 : m];
                acc += static_cast<int64_t>(xv) * wv;
              }
          y[((n * M + m) * OH + oh) * OW + ow] = acc;
        }
  return y;
}

}  // namespace

TEST(QuantOps, ConvIntegerAndQLinearConvPerChannel) {
  const int N = 2, C = 4, H = 5, W = 6, M = 4, K = 3, group = 2, pad = 1, stride = 2;
  std::mt19937 rng(5);
  std::vector<int> x(N * C * H * W), w(M * (C / group) * K * K);
  for (auto& v : x) v = static_cast<int>(rng() % 256);
  for (auto& v : w) v = static_cast<int>(rng() % 256) - 128;
  const int xz = 100;
  const std::vector<int> wz = {1, -2, 3, 0};
  int OH, OW;
  const auto ref = conv_ref(x, N, C, H, W, w, M, K, K, group, pad, stride, xz, wz, OH, OW);
  std::vector<uint8_t> xu(x.begin(), x.end());
  std::vector<int8_t> wi(w.begin(), w.end());
  const std::vector<AttrSpec> at = {attr_int("group", group), attr_ints("pads", {pad, pad, pad, pad}),
                                    attr_ints("strides", {stride, stride})};
  {
    GraphSpec g;
    g.nodes.push_back({"ConvInteger", {"x", "w", "xz", "wz"}, {"y"}, at});
    g.inputs.push_back({"x", DType::kUInt8, {N, C, H, W}});
    g.initializers.emplace_back("w", Tensor::from_vector<int8_t>(Shape{M, C / group, K, K}, wi));
    g.initializers.emplace_back("xz", Tensor::from_vector<uint8_t>(Shape{}, {static_cast<uint8_t>(xz)}));
    g.initializers.emplace_back("wz", Tensor::from_vector<int8_t>(Shape{M}, {1, -2, 3, 0}));
    g.outputs.push_back(any_out("y", DType::kInt32));
    Session s = session_of(g, 10);
    const Tensor y = s.run({{"x", Tensor::from_vector<uint8_t>(Shape{N, C, H, W}, xu)}})[0].tensor();
    ASSERT_EQ(y.shape(), (Shape{N, M, OH, OW}));
    const auto got = values_of(y);
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_EQ(got[i], static_cast<double>(ref[i])) << i;
  }
  {
    const float xs = 0.02f, ys = 0.5f;
    const std::vector<float> ws = {0.01f, 0.02f, 0.005f, 0.03f};
    const std::vector<int32_t> bias = {100, -200, 0, 50};
    const int yz = -5;
    GraphSpec g;
    g.nodes.push_back({"QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"}, {"y"}, at});
    g.inputs.push_back({"x", DType::kUInt8, {N, C, H, W}});
    g.initializers.emplace_back("xs", Tensor::scalar(xs));
    g.initializers.emplace_back("xz", Tensor::from_vector<uint8_t>(Shape{}, {static_cast<uint8_t>(xz)}));
    g.initializers.emplace_back("w", Tensor::from_vector<int8_t>(Shape{M, C / group, K, K}, wi));
    g.initializers.emplace_back("ws", f32(Shape{M}, ws));
    g.initializers.emplace_back("wz", Tensor::from_vector<int8_t>(Shape{M}, {1, -2, 3, 0}));
    g.initializers.emplace_back("ys", Tensor::scalar(ys));
    g.initializers.emplace_back("yz", Tensor::from_vector<int8_t>(Shape{}, {static_cast<int8_t>(yz)}));
    g.initializers.emplace_back("B", Tensor::from_vector<int32_t>(Shape{M}, bias));
    g.outputs.push_back(any_out("y", DType::kInt8));
    Session s = session_of(g, 10);
    const Tensor y = s.run({{"x", Tensor::from_vector<uint8_t>(Shape{N, C, H, W}, xu)}})[0].tensor();
    ASSERT_EQ(y.dtype(), DType::kInt8);
    const auto got = values_of(y);
    for (int n = 0; n < N; ++n)
      for (int m = 0; m < M; ++m)
        for (int o = 0; o < OH * OW; ++o) {
          const size_t i = (n * M + m) * OH * OW + o;
          const float mult = xs * ws[m] / ys;
          const float v = static_cast<float>(ref[i] + bias[m]) * mult;
          const double want = std::max(-128.0, std::min(127.0, static_cast<double>(std::nearbyint(v)) + yz));
          EXPECT_EQ(got[i], want) << i;
        }
  }
}

TEST(QuantOps, DynamicQuantizeLinearAllZeros) {
  GraphSpec g;
  g.nodes.push_back({"DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}});
  g.inputs.push_back({"x", DType::kFloat, {3}});
  g.outputs.push_back(any_out("y", DType::kUInt8));
  g.outputs.push_back(any_out("s"));
  g.outputs.push_back(any_out("z", DType::kUInt8));
  Session s = session_of(g, 11);
  auto out = s.run({{"x", f32(Shape{3}, {0, 0, 0})}});
  EXPECT_EQ(values_of(out[0].tensor()), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(values_of(out[1].tensor()), (std::vector<double>{0}));
  EXPECT_EQ(out[1].tensor().shape(), Shape{});
  EXPECT_EQ(values_of(out[2].tensor()), (std::vector<double>{0}));
}
