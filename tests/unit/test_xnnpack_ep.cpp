// The XNNPACK EP (libonyx_ep_xnnpack.so) against the CPU EP: every op it claims on random
// inputs with odd sizes and fixed seeds, region formation and NHWC layout (transforms only at a
// region's boundary), dynamic shapes, threads, concurrency, strict mode and decline reasons.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "model_builder.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

bool xnnpack_usable() {
  static const bool ok = ep::XNNPACK().is_available();
  return ok;
}

#define REQUIRE_XNNPACK()                                                                      \
  do {                                                                                         \
    if (!xnnpack_usable()) GTEST_SKIP() << "xnnpack: " << ep::XNNPACK().availability().reason; \
  } while (0)

Tensor random_tensor(const Shape& s, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(s.numel()));
  for (float& x : v) x = d(rng);
  return Tensor::from_vector<float>(s, v);
}

/// ModelProto bytes for graph bytes `graph`, importing ai.onnx `opset` and onyx 1 (for onyx::FusedConv).
std::string encode_model_onyx(const std::string& graph, int64_t opset) {
  ProtoWriter w;
  w.varint(1, 8);
  w.bytes(2, "onyx-tests");
  w.bytes(7, graph);
  for (auto [domain, version] : {std::pair<const char*, int64_t>{"", opset}, {"onyx", 1}}) {
    ProtoWriter os;
    os.bytes(1, domain);
    os.varint(2, static_cast<uint64_t>(version));
    w.bytes(8, os.str());
  }
  return w.take();
}

/// NodeProto bytes of onyx::FusedConv (model_builder has no float-list attributes).
std::string fused_conv_node(const std::string& act, const std::vector<float>& params) {
  ProtoWriter n;
  for (const char* i : {"x", "w", "b"}) n.bytes(1, i);
  n.bytes(2, "y");
  n.bytes(3, "fc");
  n.bytes(4, "FusedConv");
  auto attr = [&](const ProtoWriter& a) { n.bytes(5, a.str()); };
  ProtoWriter pads;
  pads.bytes(1, "pads");
  pads.packed_int64(8, {1, 1, 1, 1});
  pads.varint(20, 7);
  attr(pads);
  ProtoWriter a;
  a.bytes(1, "activation");
  a.bytes(4, act);
  a.varint(20, 3);
  attr(a);
  if (!params.empty()) {
    ProtoWriter p;
    p.bytes(1, "activation_params");
    for (float f : params) {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      p.fixed32(7, u);
    }
    p.varint(20, 6);
    attr(p);
  }
  n.bytes(7, "onyx");
  return n.take();
}

struct Model {
  std::string bytes;
  GraphSpec g;
};

Session open(const std::string& bytes, bool xnn, int threads = 1, bool strict = false, int xnn_threads = -1) {
  SessionBuilder b;
  b.with_intra_threads(threads).with_no_environment_execution_providers();
  if (xnn) {
    ep::XNNPACK spec;
    if (xnn_threads >= 0) spec.with_threads(xnn_threads);
    b.with_execution_providers({spec.build().error_on_failure()});
  }
  if (strict) b.with_cpu_fallback(false);
  return b.commit_from_memory(bytes.data(), bytes.size());
}

/// max |got - want| <= rtol * max |want| (compare.py's rule), per output.
void expect_close(const Value& got, const Value& want, double rtol, const std::string& what) {
  ASSERT_TRUE(got.is_tensor() && want.is_tensor()) << what;
  const Tensor& a = got.tensor();
  const Tensor& b = want.tensor();
  ASSERT_EQ(a.shape().to_string(), b.shape().to_string()) << what;
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    if (std::isnan(x) != std::isnan(y)) {
      ADD_FAILURE() << what << ": element " << i << " is " << x << ", expected " << y;
      return;
    }
    if (std::isnan(x)) continue;
    diff = std::max(diff, std::fabs(x - y));
    scale = std::max(scale, std::fabs(y));
  }
  EXPECT_LE(diff, rtol * std::max(scale, 1e-30)) << what << ": max abs diff " << diff << ", max |want| " << scale;
}

using Inputs = std::vector<std::pair<std::string, Value>>;

/// Runs `bytes` on the CPU EP and on XNNPACK and compares; by default every node must run on
/// XNNPACK (strict placement, as the conformance runner does it).
void check_vs_cpu(const std::string& bytes, const Inputs& in, const std::string& what, bool all_on_xnnpack = true,
                  double rtol = 1e-4) {
  Session cpu = open(bytes, false);
  Session xnn = open(bytes, true);
  if (all_on_xnnpack)
    for (const auto& n : xnn.placement().nodes) {
      std::string why;
      for (const auto& d : n.declined) why += d.ep + ": " + d.code + ": " + d.message + "; ";
      EXPECT_EQ(n.ep, "xnnpack") << what << ": " << n.op_type << " '" << n.name << "' (" << why << ")";
    }
  const auto want = cpu.run(in);
  const auto got = xnn.run(in);
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) expect_close(got[k], want[k], rtol, what + " output " + std::to_string(k));
  // A second run reuses the cached operators.
  const auto again = xnn.run(in);
  for (size_t k = 0; k < want.size(); ++k) expect_close(again[k], want[k], rtol, what + " (2nd run) output " + std::to_string(k));
}

std::vector<int64_t> dims_of(const Shape& s) { return s.to_vector(); }

/// One node `op` with float input "x" of shape xs (plus initializers), output "y".
struct OneNode {
  GraphSpec g;
  Inputs in;
  OneNode(const std::string& op, const Shape& xs, uint32_t seed, std::vector<AttrSpec> attrs = {},
          std::vector<std::pair<std::string, Tensor>> inits = {}, float lo = -1.0f, float hi = 1.0f) {
    std::vector<std::string> ins = {"x"};
    for (auto& [name, t] : inits) {
      ins.push_back(name);
      g.initializers.emplace_back(name, t);
    }
    g.nodes.push_back({op, ins, {"y"}, std::move(attrs), "n"});
    g.inputs.push_back({"x", DType::kFloat, dims_of(xs)});
    g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
    in = {{"x", random_tensor(xs, seed, lo, hi)}};
  }
  void check(const std::string& what, int64_t opset = 17) { check_vs_cpu(encode_model(g, opset), in, what); }
};

struct LogCapture {
  std::vector<std::string> lines;
  std::mutex mu;
  LogCapture() {
    set_log_level(LogLevel::kVerbose);
    set_log_sink([this](LogLevel, std::string_view m) {
      std::lock_guard<std::mutex> lock(mu);
      if (m.find("xnnpack: region") != std::string_view::npos) lines.emplace_back(m);
    });
  }
  ~LogCapture() {
    set_log_sink({});
    set_log_level(LogLevel::kError);
  }
};

const Placement::NodeInfo* node_info(const Placement& p, const std::string& name) {
  for (const auto& n : p.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

std::string decline_of(const Session& s, const std::string& name) {
  const Placement p = s.placement();
  const auto* n = node_info(p, name);
  if (!n) return "?";
  for (const auto& d : n->declined)
    if (d.ep == "xnnpack") return d.code + ": " + d.message;
  return "(not declined, runs on " + n->ep + ")";
}

}  // namespace

// ---- convolutions ----

TEST(Xnnpack, ConvMatchesCpu) {
  REQUIRE_XNNPACK();
  struct Case {
    Shape x, w;
    std::vector<AttrSpec> attrs;
    bool bias;
    const char* what;
  };
  const std::vector<Case> cases = {
      {{2, 3, 11, 9}, {5, 3, 3, 3}, {attr_ints("pads", {1, 1, 1, 1})}, true, "3x3 pad 1"},
      {{1, 4, 13, 10}, {7, 4, 3, 3}, {attr_ints("strides", {2, 2}), attr_ints("pads", {0, 1, 2, 1})}, true, "stride 2, asymmetric pads"},
      {{1, 3, 12, 11}, {5, 3, 3, 3}, {attr_ints("dilations", {2, 3}), attr_ints("pads", {2, 1, 2, 1})}, true, "dilated"},
      {{2, 6, 9, 7}, {9, 2, 3, 3}, {attr_int("group", 3), attr_ints("pads", {1, 1, 1, 1})}, true, "groups 3"},
      {{1, 3, 10, 9}, {4, 3, 5, 3}, {attr_string("auto_pad", "SAME_UPPER"), attr_ints("strides", {2, 1})}, true, "SAME_UPPER 5x3"},
      {{1, 3, 10, 9}, {4, 3, 4, 4}, {attr_string("auto_pad", "SAME_LOWER"), attr_ints("strides", {3, 2})}, false, "SAME_LOWER 4x4"},
      {{1, 5, 8, 9}, {6, 5, 3, 2}, {attr_string("auto_pad", "VALID")}, false, "VALID no bias"},
      {{3, 17, 5, 7}, {19, 17, 1, 1}, {}, true, "1x1"},
  };
  uint32_t seed = 1;
  for (const auto& c : cases) {
    std::vector<std::pair<std::string, Tensor>> inits = {{"w", random_tensor(c.w, seed++)}};
    if (c.bias) inits.emplace_back("b", random_tensor(Shape{c.w[0]}, seed++));
    OneNode t("Conv", c.x, seed++, c.attrs, inits);
    t.check(c.what);
  }
}

TEST(Xnnpack, DepthwiseConv) {
  REQUIRE_XNNPACK();
  // Plain depthwise, strided with padding, and with a channel multiplier.
  OneNode a("Conv", Shape{2, 7, 13, 11}, 11, {attr_int("group", 7), attr_ints("pads", {1, 1, 1, 1})},
            {{"w", random_tensor(Shape{7, 1, 3, 3}, 12)}, {"b", random_tensor(Shape{7}, 13)}});
  a.check("depthwise 3x3");
  OneNode b("Conv", Shape{1, 9, 15, 12}, 14, {attr_int("group", 9), attr_ints("strides", {2, 2}), attr_ints("pads", {2, 2, 2, 2})},
            {{"w", random_tensor(Shape{9, 1, 5, 5}, 15)}, {"b", random_tensor(Shape{9}, 16)}});
  b.check("depthwise 5x5 stride 2");
  OneNode c("Conv", Shape{1, 5, 9, 8}, 17, {attr_int("group", 5), attr_ints("pads", {1, 1, 1, 1})},
            {{"w", random_tensor(Shape{10, 1, 3, 3}, 18)}});
  c.check("depthwise multiplier 2");
}

TEST(Xnnpack, FusedConvAndFoldedActivations) {
  REQUIRE_XNNPACK();
  for (const char* act : {"Relu", "Clip"}) {
    GraphSpec g;
    g.initializers = {{"w", random_tensor(Shape{6, 3, 3, 3}, 21)}, {"b", random_tensor(Shape{6}, 22)}};
    g.inputs.push_back({"x", DType::kFloat, {1, 3, 9, 7}});
    g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
    ProtoWriter node;
    node.bytes(1, fused_conv_node(act, std::string(act) == "Clip" ? std::vector<float>{-0.2f, 0.35f} : std::vector<float>{}));
    check_vs_cpu(encode_model_onyx(g.encode() + node.str(), 17), {{"x", random_tensor(Shape{1, 3, 9, 7}, 23)}},
                 std::string("FusedConv ") + act);
  }
  // Conv -> Clip (constant bounds) -> Relu: both activations fold into the convolution.
  GraphSpec g;
  g.initializers = {{"w", random_tensor(Shape{4, 3, 3, 3}, 24)}, {"lo", Tensor::scalar<float>(-0.3f)},
                    {"hi", Tensor::scalar<float>(0.4f)}};
  g.nodes.push_back({"Conv", {"x", "w"}, {"c"}, {}, "conv"});
  g.nodes.push_back({"Clip", {"c", "lo", "hi"}, {"k"}, {}, "clip"});
  g.nodes.push_back({"Relu", {"k"}, {"y"}, {}, "relu"});
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 8, 9}});
  g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  LogCapture log;
  check_vs_cpu(encode_model(g), {{"x", random_tensor(Shape{2, 3, 8, 9}, 25)}}, "Conv+Clip+Relu");
  bool folded = false;
  for (const auto& l : log.lines) folded |= l.find("convolution2d Conv 'conv' + Clip 'clip' + Relu 'relu'") != std::string::npos;
  EXPECT_TRUE(folded) << (log.lines.empty() ? "no log" : log.lines.back());
}

TEST(Xnnpack, ConvTransposeMatchesCpu) {
  REQUIRE_XNNPACK();
  struct Case {
    Shape x, w;
    std::vector<AttrSpec> attrs;
    const char* what;
    int64_t group = 1;
  };
  const std::vector<Case> cases = {
      {{1, 3, 5, 7}, {3, 4, 3, 3}, {}, "plain"},
      {{2, 4, 6, 5}, {4, 3, 3, 3}, {attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1}), attr_ints("output_padding", {1, 1})},
       "stride 2, pads, output_padding"},
      {{1, 6, 5, 4}, {6, 2, 3, 2}, {attr_int("group", 3), attr_ints("strides", {2, 3}), attr_ints("dilations", {2, 1})},
       "groups, dilation", 3},
      {{1, 3, 5, 6}, {3, 2, 3, 3}, {attr_string("auto_pad", "SAME_UPPER"), attr_ints("strides", {2, 2})}, "SAME_UPPER"},
      {{1, 2, 4, 5}, {2, 3, 3, 3}, {attr_ints("strides", {3, 2}), attr_ints("output_shape", {13, 11})}, "output_shape"},
  };
  uint32_t seed = 31;
  for (const auto& c : cases) {
    OneNode t("ConvTranspose", c.x, seed++, c.attrs,
              {{"w", random_tensor(c.w, seed++)}, {"b", random_tensor(Shape{c.w[1] * c.group}, seed++)}});
    t.check(c.what);
  }
}

// ---- fully connected ----

TEST(Xnnpack, GemmAndMatMulMatchCpu) {
  REQUIRE_XNNPACK();
  OneNode a("Gemm", Shape{7, 13}, 41, {}, {{"B", random_tensor(Shape{13, 11}, 42)}, {"C", random_tensor(Shape{11}, 43)}});
  a.check("Gemm B [K,N], C [N]");
  OneNode b("Gemm", Shape{5, 13}, 44, {attr_int("transB", 1), attr_float("alpha", 0.7f), attr_float("beta", -1.3f)},
            {{"B", random_tensor(Shape{11, 13}, 45)}, {"C", random_tensor(Shape{1, 11}, 46)}});
  b.check("Gemm transB, alpha, beta, C [1,N]");
  OneNode c("Gemm", Shape{3, 9}, 47, {}, {{"B", random_tensor(Shape{9, 5}, 48)}, {"C", Tensor::scalar<float>(0.25f)}});
  c.check("Gemm scalar C");
  OneNode d("Gemm", Shape{3, 9}, 49, {attr_int("transB", 1)}, {{"B", random_tensor(Shape{6, 9}, 50)}});
  d.check("Gemm no C");
  OneNode e("MatMul", Shape{2, 5, 13}, 51, {}, {{"B", random_tensor(Shape{13, 9}, 52)}});
  e.check("MatMul 3-D A");
  OneNode f("MatMul", Shape{13}, 53, {}, {{"B", random_tensor(Shape{13, 7}, 54)}});
  f.check("MatMul 1-D A");
}

// ---- pooling ----

TEST(Xnnpack, PoolingMatchesCpu) {
  REQUIRE_XNNPACK();
  struct Case {
    const char* op;
    Shape x;
    std::vector<AttrSpec> attrs;
    const char* what;
  };
  const std::vector<Case> cases = {
      {"MaxPool", {2, 3, 11, 9}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})}, "max 3x3 s2 p1"},
      {"MaxPool", {1, 5, 10, 13}, {attr_ints("kernel_shape", {3, 2}), attr_ints("strides", {2, 3}), attr_int("ceil_mode", 1)}, "max ceil_mode"},
      {"MaxPool", {1, 3, 12, 11}, {attr_ints("kernel_shape", {2, 3}), attr_ints("dilations", {2, 2})}, "max dilated"},
      {"MaxPool", {1, 4, 9, 10}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_string("auto_pad", "SAME_UPPER")}, "max SAME_UPPER"},
      {"MaxPool", {1, 2, 7, 8}, {attr_ints("kernel_shape", {2, 2}), attr_ints("pads", {1, 0, 0, 1})}, "max asymmetric pads"},
      {"AveragePool", {2, 3, 11, 9}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})}, "avg pads excluded"},
      {"AveragePool", {1, 3, 11, 9}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 2, 1, 0}), attr_int("count_include_pad", 1)}, "avg pads included"},
      {"AveragePool", {1, 4, 10, 13}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)}, "avg ceil_mode"},
      {"AveragePool", {1, 4, 10, 13}, {attr_ints("kernel_shape", {2, 3}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1), attr_ints("pads", {1, 1, 1, 1}), attr_int("count_include_pad", 1)}, "avg ceil_mode + included pads"},
      {"AveragePool", {1, 3, 9, 9}, {attr_ints("kernel_shape", {4, 4}), attr_ints("strides", {1, 1}), attr_string("auto_pad", "SAME_LOWER")}, "avg SAME_LOWER"},
  };
  uint32_t seed = 61;
  for (const auto& c : cases) {
    OneNode t(c.op, c.x, seed++, c.attrs);
    t.check(c.what);
  }
  OneNode g("GlobalAveragePool", Shape{3, 7, 5, 9}, 71);
  g.check("GlobalAveragePool");
}

// ---- elementwise ----

TEST(Xnnpack, BinaryOpsBroadcastLikeCpu) {
  REQUIRE_XNNPACK();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 5, 7}, {2, 3, 5, 7}}, {{2, 3, 5, 7}, {3, 1, 1}}, {{2, 3, 5, 7}, {7}}, {{5, 1}, {2, 3, 1, 9}}, {{1}, {3, 5}}};
  uint32_t seed = 81;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    for (const auto& [as, bs] : shapes) {
      GraphSpec g;
      g.nodes.push_back({op, {"a", "b"}, {"y"}, {}, "n"});
      g.inputs.push_back({"a", DType::kFloat, dims_of(as)});
      g.inputs.push_back({"b", DType::kFloat, dims_of(bs)});
      g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
      const bool div = std::string(op) == "Div";
      check_vs_cpu(encode_model(g), {{"a", random_tensor(as, seed++)}, {"b", random_tensor(bs, seed++, div ? 0.5f : -1.0f, div ? 1.5f : 1.0f)}},
                   std::string(op) + " " + as.to_string() + " " + bs.to_string());
    }
  }
}

TEST(Xnnpack, VariadicOpsMatchCpu) {
  REQUIRE_XNNPACK();
  const std::vector<Shape> shapes = {{2, 3, 5, 7}, {3, 1, 7}, {5, 1}};
  uint32_t seed = 211;
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    for (size_t count : {1, 2, 3}) {
      GraphSpec g;
      NodeSpec n{op, {}, {"y"}, {}, "n"};
      Inputs in;
      for (size_t i = 0; i < count; ++i) {
        const std::string name = numbered("x", i);
        n.inputs.push_back(name);
        g.inputs.push_back({name, DType::kFloat, dims_of(shapes[i])});
        in.emplace_back(name, random_tensor(shapes[i], seed++));
      }
      g.nodes.push_back(n);
      g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
      check_vs_cpu(encode_model(g), in, std::string(op) + " of " + std::to_string(count));
    }
  }
  // Sum of three with a Conv output (NHWC chain) and a following Relu folded in.
  GraphSpec g;
  g.initializers = {{"w", random_tensor(Shape{4, 2, 3, 3}, 230)}, {"c1", random_tensor(Shape{4, 1, 1}, 231)}};
  g.nodes.push_back({"Conv", {"x", "w"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv"});
  g.nodes.push_back({"Sum", {"c", "c1", "z"}, {"s"}, {}, "sum"});
  g.nodes.push_back({"Relu", {"s"}, {"y"}, {}, "relu"});
  g.inputs.push_back({"x", DType::kFloat, {1, 2, 5, 6}});
  g.inputs.push_back({"z", DType::kFloat, {1, 4, 5, 6}});
  g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  check_vs_cpu(encode_model(g), {{"x", random_tensor(Shape{1, 2, 5, 6}, 232)}, {"z", random_tensor(Shape{1, 4, 5, 6}, 233)}},
               "Conv + Sum of 3 + Relu");
}

TEST(Xnnpack, BatchNormalizationFoldedOrStandalone) {
  REQUIRE_XNNPACK();
  auto bn_inits = [](int64_t C, uint32_t seed) {
    Tensor var = random_tensor(Shape{C}, seed + 3, 0.2f, 2.0f);
    return std::vector<std::pair<std::string, Tensor>>{{"scale", random_tensor(Shape{C}, seed)},
                                                       {"B", random_tensor(Shape{C}, seed + 1)},
                                                       {"mean", random_tensor(Shape{C}, seed + 2)},
                                                       {"var", var}};
  };
  // Conv -> BatchNormalization -> Relu: one XNNPACK convolution.
  GraphSpec g;
  g.initializers = bn_inits(6, 240);
  g.initializers.emplace_back("w", random_tensor(Shape{6, 3, 3, 3}, 245));
  g.initializers.emplace_back("b", random_tensor(Shape{6}, 246));
  g.nodes.push_back({"Conv", {"x", "w", "b"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv"});
  g.nodes.push_back({"BatchNormalization", {"c", "scale", "B", "mean", "var"}, {"n"}, {attr_float("epsilon", 1e-3f)}, "bn"});
  g.nodes.push_back({"Relu", {"n"}, {"y"}, {}, "relu"});
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 7, 9}});
  g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  LogCapture log;
  check_vs_cpu(encode_model(g), {{"x", random_tensor(Shape{2, 3, 7, 9}, 247)}}, "Conv+BN+Relu");
  bool folded = false;
  for (const auto& l : log.lines) folded |= l.find("convolution2d Conv 'conv' + BatchNormalization 'bn' + Relu 'relu'") != std::string::npos;
  EXPECT_TRUE(folded) << (log.lines.empty() ? "no log" : log.lines.back());
  // Standalone, on 4-D and 3-D inputs.
  for (const Shape& xs : {Shape{2, 5, 7, 3}, Shape{2, 5, 9}}) {
    OneNode t("BatchNormalization", xs, 250, {}, bn_inits(5, 251));
    t.check("BatchNormalization " + xs.to_string());
  }
}

TEST(Xnnpack, BinaryOpsOnNhwcActivations) {
  REQUIRE_XNNPACK();
  // Conv output (NHWC inside) combined with: a per-channel constant, a full constant (permuted at
  // compile time), a graph input (converted at the boundary) and a lower-rank constant.
  GraphSpec g;
  g.initializers = {{"w", random_tensor(Shape{5, 3, 3, 3}, 91)},
                    {"bias", random_tensor(Shape{5, 1, 1}, 92)},
                    {"full", random_tensor(Shape{1, 5, 7, 6}, 93)},
                    {"hw", random_tensor(Shape{7, 6}, 94)}};
  g.nodes.push_back({"Conv", {"x", "w"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv"});
  g.nodes.push_back({"Add", {"c", "bias"}, {"a1"}, {}, "add_bias"});
  g.nodes.push_back({"Mul", {"a1", "full"}, {"a2"}, {}, "mul_full"});
  g.nodes.push_back({"Sub", {"a2", "z"}, {"a3"}, {}, "sub_input"});
  g.nodes.push_back({"Div", {"a3", "hw"}, {"a4"}, {}, "div_hw"});
  g.nodes.push_back({"Max", {"a4", "c"}, {"y"}, {}, "max"});
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 7, 6}});
  g.inputs.push_back({"z", DType::kFloat, {2, 5, 7, 6}});
  g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  // Keep the divisor away from zero.
  for (auto& [name, t] : g.initializers)
    if (name == "hw")
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.5f + std::fabs(t.data<float>()[i]);
  LogCapture log;
  check_vs_cpu(encode_model(g), {{"x", random_tensor(Shape{2, 3, 7, 6}, 95)}, {"z", random_tensor(Shape{2, 5, 7, 6}, 96)}},
               "NHWC elementwise");
  ASSERT_FALSE(log.lines.empty());
  EXPECT_NE(log.lines.front().find("layout transforms: 3 at the boundary, 0 inside"), std::string::npos) << log.lines.front();
}

TEST(Xnnpack, UnaryOpsMatchCpu) {
  REQUIRE_XNNPACK();
  const Shape s{2, 3, 7, 5};
  uint32_t seed = 101;
  for (const char* op : {"Relu", "Sigmoid", "Abs", "Neg", "Floor", "Ceil", "Round"}) OneNode(op, s, seed++, {}, {}, -3.0f, 3.0f).check(op);
  OneNode("HardSwish", s, seed++, {}, {}, -4.0f, 4.0f).check("HardSwish", 14);
  OneNode("Sqrt", s, seed++, {}, {}, 0.0f, 4.0f).check("Sqrt");
  OneNode("LeakyRelu", s, seed++, {attr_float("alpha", 0.13f)}).check("LeakyRelu");
  OneNode("Elu", s, seed++, {attr_float("alpha", 0.7f)}, {}, -3.0f, 3.0f).check("Elu");
  OneNode("Clip", s, seed++, {}, {{"lo", Tensor::scalar<float>(-0.4f)}, {"hi", Tensor::scalar<float>(0.6f)}}).check("Clip-13");
  OneNode("Clip", s, seed++, {attr_float("min", -0.2f), attr_float("max", 0.3f)}).check("Clip-6", 6);
  OneNode("Pow", s, seed++, {}, {{"e", Tensor::scalar<float>(2.0f)}}, -3.0f, 3.0f).check("Pow 2");
  OneNode("Pow", s, seed++, {}, {{"e", Tensor::scalar<float>(0.5f)}}, 0.0f, 3.0f).check("Pow 0.5");
  OneNode("PRelu", s, seed++, {}, {{"slope", random_tensor(Shape{3, 1, 1}, 120)}}).check("PRelu per channel");
  OneNode("PRelu", Shape{3, 4, 9}, seed++, {}, {{"slope", random_tensor(Shape{9}, 121)}}).check("PRelu last axis");
  OneNode("PRelu", s, seed++, {}, {{"slope", Tensor::from_vector<float>(Shape{1}, {0.2f})}}).check("PRelu scalar");
}

TEST(Xnnpack, SoftmaxMatchesCpu) {
  REQUIRE_XNNPACK();
  OneNode("Softmax", Shape{3, 5, 17}, 131, {}, {}, -4.0f, 4.0f).check("Softmax-13 last axis");
  OneNode("Softmax", Shape{3, 5, 7}, 132, {attr_int("axis", 1)}, {}, -4.0f, 4.0f).check("Softmax-11 axis 1 (flattened)", 11);
  OneNode("Softmax", Shape{4, 9}, 133, {attr_int("axis", -1)}).check("Softmax-13 axis -1");
}

TEST(Xnnpack, ResizeDepthToSpacePadMatchCpu) {
  REQUIRE_XNNPACK();
  const Tensor empty = Tensor::from_vector<float>(Shape{0}, std::vector<float>{});
  auto resize = [&](const char* ctm, Tensor scales, Tensor sizes, const Shape& xs, uint32_t seed) {
    GraphSpec g;
    g.initializers = {{"roi", empty}};
    std::vector<std::string> ins = {"x", "roi"};
    if (scales.defined()) {
      g.initializers.emplace_back("scales", scales);
      ins.push_back("scales");
    } else {
      g.initializers.emplace_back("scales", empty);
      g.initializers.emplace_back("sizes", sizes);
      ins.push_back("scales");
      ins.push_back("sizes");
    }
    g.nodes.push_back({"Resize", ins, {"y"}, {attr_string("mode", "linear"), attr_string("coordinate_transformation_mode", ctm)}, "r"});
    g.inputs.push_back({"x", DType::kFloat, dims_of(xs)});
    g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
    check_vs_cpu(encode_model(g, 13), {{"x", random_tensor(xs, seed)}}, std::string("Resize ") + ctm);
  };
  resize("half_pixel", Tensor::from_vector<float>(Shape{4}, {1, 1, 2, 2}), Tensor(), Shape{1, 3, 5, 7}, 141);
  resize("half_pixel", Tensor(), Tensor::from_vector<int64_t>(Shape{4}, {2, 3, 9, 4}), Shape{2, 3, 5, 7}, 142);
  resize("align_corners", Tensor(), Tensor::from_vector<int64_t>(Shape{4}, {1, 2, 11, 3}), Shape{1, 2, 5, 7}, 143);
  resize("asymmetric", Tensor::from_vector<float>(Shape{4}, {1, 1, 3, 2}), Tensor(), Shape{1, 3, 4, 5}, 144);
  resize("pytorch_half_pixel", Tensor(), Tensor::from_vector<int64_t>(Shape{4}, {1, 3, 7, 13}), Shape{1, 3, 5, 7}, 145);
  OneNode("DepthToSpace", Shape{2, 12, 3, 5}, 146, {attr_int("blocksize", 2)}).check("DepthToSpace DCR");
  OneNode("Pad", Shape{2, 3, 5, 7}, 147, {}, {{"pads", Tensor::from_vector<int64_t>(Shape{8}, {0, 1, 2, 0, 1, 0, 1, 3})},
                                              {"v", Tensor::scalar<float>(0.5f)}})
      .check("Pad constant");
}

TEST(Xnnpack, ReshapesRideAlongInsideRegions) {
  REQUIRE_XNNPACK();
  // A ResNet head: Conv -> GlobalAveragePool -> Flatten -> Gemm; and Conv -> Reshape -> MatMul ->
  // Softmax. The Flatten after the global pool needs no transform (H*W == 1).
  GraphSpec g;
  g.initializers = {{"w", random_tensor(Shape{8, 3, 3, 3}, 151)},
                    {"fc", random_tensor(Shape{10, 8}, 152)},
                    {"fb", random_tensor(Shape{10}, 153)}};
  g.nodes.push_back({"Conv", {"x", "w"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv"});
  g.nodes.push_back({"Relu", {"c"}, {"r"}, {}, "relu"});
  g.nodes.push_back({"GlobalAveragePool", {"r"}, {"p"}, {}, "gap"});
  g.nodes.push_back({"Flatten", {"p"}, {"f"}, {}, "flatten"});
  g.nodes.push_back({"Gemm", {"f", "fc", "fb"}, {"y"}, {attr_int("transB", 1)}, "gemm"});
  g.inputs.push_back({"x", DType::kFloat, {3, 3, 9, 7}});
  g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  LogCapture log;
  check_vs_cpu(encode_model(g), {{"x", random_tensor(Shape{3, 3, 9, 7}, 154)}}, "Conv/GAP/Flatten/Gemm");
  ASSERT_FALSE(log.lines.empty());
  EXPECT_NE(log.lines.front().find("layout transforms: 1 at the boundary, 0 inside"), std::string::npos) << log.lines.front();

  GraphSpec h;
  h.initializers = {{"w", random_tensor(Shape{4, 2, 3, 3}, 155)},
                    {"shape", Tensor::from_vector<int64_t>(Shape{3}, {1, 4, 35})},
                    {"m", random_tensor(Shape{35, 6}, 156)}};
  h.nodes.push_back({"Conv", {"x", "w"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv"});
  h.nodes.push_back({"Reshape", {"c", "shape"}, {"r"}, {}, "reshape"});
  h.nodes.push_back({"MatMul", {"r", "m"}, {"mm"}, {}, "matmul"});
  h.nodes.push_back({"Softmax", {"mm"}, {"y"}, {}, "softmax"});
  h.inputs.push_back({"x", DType::kFloat, {1, 2, 5, 7}});
  h.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  check_vs_cpu(encode_model(h), {{"x", random_tensor(Shape{1, 2, 5, 7}, 157)}}, "Conv/Reshape/MatMul/Softmax");
}

// ---- regions and layout ----

TEST(Xnnpack, ConvReluConvIsOneRegionWithTransformsOnlyAtItsBoundary) {
  REQUIRE_XNNPACK();
  GraphSpec g;
  g.initializers = {{"w1", random_tensor(Shape{6, 3, 3, 3}, 161)}, {"b1", random_tensor(Shape{6}, 162)},
                    {"w2", random_tensor(Shape{5, 6, 3, 3}, 163)}, {"b2", random_tensor(Shape{5}, 164)}};
  g.nodes.push_back({"Conv", {"x", "w1", "b1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv1"});
  g.nodes.push_back({"Relu", {"c1"}, {"r1"}, {}, "relu"});
  g.nodes.push_back({"Conv", {"r1", "w2", "b2"}, {"y"}, {attr_ints("strides", {2, 2})}, "conv2"});
  g.inputs.push_back({"x", DType::kFloat, {1, 3, 11, 13}});
  g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  const std::string m = encode_model(g);
  LogCapture log;
  Session s = open(m, true);
  const Placement p = s.placement();
  ASSERT_EQ(p.nodes.size(), 3u);
  for (const auto& n : p.nodes) {
    EXPECT_EQ(n.ep, "xnnpack") << n.name;
    EXPECT_EQ(n.region, p.nodes[0].region) << n.name;
    EXPECT_GE(n.region, 0) << n.name;
  }
  EXPECT_TRUE(p.copies.empty());
  // Static shapes: the instance is built (weights packed) at session creation.
  ASSERT_EQ(log.lines.size(), 1u);
  const std::string& l = log.lines[0];
  EXPECT_NE(l.find("nchw->nhwc 'x'"), std::string::npos) << l;
  EXPECT_NE(l.find("convolution2d Conv 'conv1' + Relu 'relu'"), std::string::npos) << l;
  EXPECT_NE(l.find("nhwc->nchw 'y'"), std::string::npos) << l;
  EXPECT_NE(l.find("layout transforms: 2 at the boundary, 0 inside"), std::string::npos) << l;
  const Inputs in = {{"x", random_tensor(Shape{1, 3, 11, 13}, 165)}};
  const auto want = open(m, false).run(in);
  for (int k = 0; k < 3; ++k) expect_close(s.run(in)[0], want[0], 1e-4, "Conv-Relu-Conv run " + std::to_string(k));
  EXPECT_EQ(log.lines.size(), 1u) << "runs with the same shapes must reuse the instance";
}

TEST(Xnnpack, DynamicBatchRunsWithTwoBatchSizes) {
  REQUIRE_XNNPACK();
  GraphSpec g;
  g.initializers = {{"w", random_tensor(Shape{4, 3, 3, 3}, 171)}, {"b", random_tensor(Shape{4}, 172)},
                    {"fc", random_tensor(Shape{4, 7}, 173)}};
  g.nodes.push_back({"Conv", {"x", "w", "b"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv"});
  g.nodes.push_back({"Relu", {"c"}, {"r"}, {}, "relu"});
  g.nodes.push_back({"MaxPool", {"r"}, {"p"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}, "pool"});
  g.nodes.push_back({"GlobalAveragePool", {"p"}, {"q"}, {}, "gap"});
  g.nodes.push_back({"Flatten", {"q"}, {"f"}, {}, "flatten"});
  g.nodes.push_back({"Gemm", {"f", "fc"}, {"y"}, {}, "gemm"});
  ValueSpec x{"x", DType::kFloat, {-1, 3, 9, 11}, {"batch", "", "", ""}};
  g.inputs.push_back(x);
  g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  const std::string m = encode_model(g);
  Session cpu = open(m, false), xnn = open(m, true, 1, true);
  for (int64_t n : {1, 3, 1, 3, 2}) {
    const Inputs in = {{"x", random_tensor(Shape{n, 3, 9, 11}, 174 + static_cast<uint32_t>(n))}};
    expect_close(xnn.run(in)[0], cpu.run(in)[0], 1e-4, "batch " + std::to_string(n));
  }
}

TEST(Xnnpack, StrictModeOnAFullySupportedModel) {
  REQUIRE_XNNPACK();
  GraphSpec g;
  g.initializers = {{"w", random_tensor(Shape{6, 3, 3, 3}, 181)}, {"dw", random_tensor(Shape{6, 1, 3, 3}, 182)},
                    {"lo", Tensor::scalar<float>(0.0f)}, {"hi", Tensor::scalar<float>(6.0f)},
                    {"fc", random_tensor(Shape{6, 5}, 183)}, {"fb", random_tensor(Shape{5}, 184)}};
  g.nodes.push_back({"Conv", {"x", "w"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}, "conv"});
  g.nodes.push_back({"Clip", {"c1", "lo", "hi"}, {"r1"}, {}, "relu6"});
  g.nodes.push_back({"Conv", {"r1", "dw"}, {"c2"}, {attr_int("group", 6), attr_ints("pads", {1, 1, 1, 1})}, "dwconv"});
  g.nodes.push_back({"Add", {"c2", "r1"}, {"s"}, {}, "residual"});
  g.nodes.push_back({"GlobalAveragePool", {"s"}, {"p"}, {}, "gap"});
  g.nodes.push_back({"Flatten", {"p"}, {"f"}, {}, "flatten"});
  g.nodes.push_back({"Gemm", {"f", "fc", "fb"}, {"g"}, {}, "gemm"});
  g.nodes.push_back({"Softmax", {"g"}, {"y"}, {}, "softmax"});
  g.inputs.push_back({"x", DType::kFloat, {2, 3, 15, 13}});
  g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  const std::string m = encode_model(g);
  Session s = open(m, true, 1, /*strict=*/true);
  for (const auto& n : s.placement().nodes) EXPECT_EQ(n.ep, "xnnpack") << n.name;
  const Inputs in = {{"x", random_tensor(Shape{2, 3, 15, 13}, 185)}};
  expect_close(s.run(in)[0], open(m, false).run(in)[0], 1e-4, "strict model");
  // The same model with a Tanh XNNPACK cannot run: strict mode refuses it, naming the reason.
  g.nodes.back() = {"Tanh", {"g"}, {"y"}, {}, "tanh"};
  const std::string bad = encode_model(g);
  try {
    open(bad, true, 1, true);
    ADD_FAILURE() << "strict mode accepted a Tanh";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no tanh operator"), std::string::npos) << e.what();
  }
}

TEST(Xnnpack, ThreadsAndConcurrentRuns) {
  REQUIRE_XNNPACK();
  GraphSpec g;
  g.initializers = {{"w", random_tensor(Shape{16, 8, 3, 3}, 191)}, {"b", random_tensor(Shape{16}, 192)}};
  g.nodes.push_back({"Conv", {"x", "w", "b"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv"});
  g.nodes.push_back({"Sigmoid", {"c"}, {"y"}, {}, "sigmoid"});
  g.inputs.push_back({"x", DType::kFloat, {-1, 8, 17, 19}, {"n", "", "", ""}});
  g.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  const std::string m = encode_model(g);
  Session cpu = open(m, false);
  for (int threads : {1, 3}) {
    Session xnn = open(m, true, 2, false, threads);
    std::vector<Inputs> ins;
    std::vector<std::vector<Value>> want;
    for (int t = 0; t < 4; ++t) {
      ins.push_back({{"x", random_tensor(Shape{1 + t % 2, 8, 17, 19}, 193 + static_cast<uint32_t>(t))}});
      want.push_back(cpu.run(ins.back()));
    }
    std::vector<std::vector<Value>> got(4);
    std::vector<std::thread> pool;
    for (int t = 0; t < 4; ++t)
      pool.emplace_back([&, t] {
        for (int r = 0; r < 5; ++r) got[t] = xnn.run(ins[t]);
      });
    for (auto& th : pool) th.join();
    for (int t = 0; t < 4; ++t) expect_close(got[t][0], want[t][0], 1e-4, "threads " + std::to_string(threads) + " run " + std::to_string(t));
  }
}

// ---- decline reasons ----

TEST(Xnnpack, DeclinesWithPreciseReasons) {
  REQUIRE_XNNPACK();
  GraphSpec g;
  g.nodes.push_back({"Conv", {"x", "wi"}, {"c1"}, {}, "conv_dynamic_w"});
  g.nodes.push_back({"AveragePool", {"x"}, {"p"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("dilations", {2, 2})}, "dilated_pool"});
  g.nodes.push_back({"Add", {"i", "i"}, {"ai"}, {}, "int_add"});
  g.nodes.push_back({"Tanh", {"x"}, {"t"}, {}, "tanh"});
  g.nodes.push_back({"Softmax", {"x"}, {"sm"}, {attr_int("axis", 1)}, "softmax_axis1"});
  g.nodes.push_back({"Reshape", {"x", "shape"}, {"rs"}, {}, "lonely_reshape"});
  g.nodes.push_back({"MaxPool", {"x"}, {"mp", "idx"}, {attr_ints("kernel_shape", {2, 2})}, "pool_with_indices"});
  g.initializers.emplace_back("shape", Tensor::from_vector<int64_t>(Shape{1}, {-1}));
  g.inputs.push_back({"x", DType::kFloat, {1, 3, 8, 8}});
  g.inputs.push_back({"wi", DType::kFloat, {2, 3, 3, 3}});
  g.inputs.push_back({"i", DType::kInt64, {4}});
  for (const char* o : {"c1", "p", "ai", "t", "sm", "rs", "mp", "idx"}) g.outputs.push_back({o, DType::kFloat, {}, {}, true});
  g.outputs[2].dtype = DType::kInt64;
  g.outputs[7].dtype = DType::kInt64;
  Session s = open(encode_model(g, 19), true);
  EXPECT_EQ(decline_of(s, "conv_dynamic_w"), "DynamicShape: weights must be constant");
  EXPECT_EQ(decline_of(s, "dilated_pool"), "UnsupportedAttribute: dilated pooling (XNNPACK's average pooling has no dilation)");
  EXPECT_EQ(decline_of(s, "int_add"),
            "UnsupportedType: float32 or float16 only (input 0 is int64: XNNPACK's operators take float32, float16 and "
            "quantized 8-bit tensors)");
  EXPECT_EQ(decline_of(s, "tanh"), "UnsupportedOp: XNNPACK (2022-02-16 snapshot) has no tanh operator");
  EXPECT_EQ(decline_of(s, "softmax_axis1"), "UnsupportedAttribute: Softmax over axis 1 of 4 (XNNPACK's softmax is over the last axis)");
  EXPECT_EQ(decline_of(s, "lonely_reshape").rfind("NotWorthOffloading: ", 0), 0u) << decline_of(s, "lonely_reshape");
  EXPECT_EQ(decline_of(s, "pool_with_indices"), "UnsupportedAttribute: output 1 of MaxPool (XNNPACK computes only the first)");
  // Ops outside the checked opset range are declined as OpsetOutOfRange; onyx itself loads
  // only the opsets this EP was checked against, so only the op-specific floor is visible here:
  // Upsample-9 (linear) runs on XNNPACK.
  GraphSpec u;
  u.initializers = {{"s", Tensor::from_vector<float>(Shape{4}, {1, 1, 2, 3})}};
  u.nodes.push_back({"Upsample", {"x", "s"}, {"y"}, {attr_string("mode", "linear")}, "up"});
  u.inputs.push_back({"x", DType::kFloat, {1, 2, 4, 5}});
  u.outputs.push_back({"y", DType::kFloat, {}, {}, true});
  check_vs_cpu(encode_model(u, 9), {{"x", random_tensor(Shape{1, 2, 4, 5}, 203)}}, "Upsample-9 linear");
}
