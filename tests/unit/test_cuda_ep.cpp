// The CUDA EP (module libonyx_ep_cuda.so). Without a GPU: availability and its reason, the module
// loading, registration being skipped with that reason, the option schema and its validation,
// the caching allocator's bookkeeping, and the claim decisions with their decline reasons (the
// EP's options.cpp, arena.cpp and claim.cpp are compiled into this test; they need no CUDA).
// With a GPU ("no CUDA device" skips otherwise): every op family against the CPU EP on random
// inputs, strict placement, copies, concurrent runs, memory limit and bad-index errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <atomic>
#include <thread>

#include "fusion_graphs.hpp"
#include "layout_graphs.hpp"
#include "cuda_ep.hpp"
#include "views.hpp"
#include "ep/factory.hpp"
#include "ep_test_util.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

const ep::Availability& cuda_availability() {
  static const ep::Availability a = ep::CUDA().availability();
  return a;
}
bool cuda_usable() { return cuda_availability().usable; }

#define REQUIRE_CUDA()                                                                           \
  do {                                                                                           \
    if (!cuda_usable()) GTEST_SKIP() << "no CUDA device: " << cuda_availability().reason;        \
  } while (0)

#define REQUIRE_CUDA_MODULE()                                                                            \
  do {                                                                                                   \
    if (!cuda_availability().loadable) GTEST_SKIP() << "CUDA EP not loadable: " << cuda_availability().reason; \
  } while (0)

std::string model_bytes(const GraphSpec& g, int64_t opset = 17) { return encode_model(g, opset); }

Session cuda_session(const std::string& m, bool strict = true, ep::CUDA spec = ep::CUDA()) {
  return ep_session(m, spec.build(), strict);
}

/// The placement's nodes without the copies the session inserted between memories.
std::vector<Placement::NodeInfo> compute_nodes(const Placement& p) {
  std::vector<Placement::NodeInfo> out;
  for (const auto& n : p.nodes)
    if (!(n.domain == "onyx" && n.op_type == "Copy")) out.push_back(n);
  return out;
}

/// Runs `g` on CUDA (strict: every node there unless `strict` is false) and on the CPU EP.
void check(const GraphSpec& g, int64_t opset = 17, const Inputs* given = nullptr, double rtol = 1e-4, bool strict = true) {
  const std::string m = model_bytes(g, opset);
  Session gpu = cuda_session(m, strict);
  Session cpu = cpu_session(m);
  const Inputs in = given ? *given : random_inputs(g);
  const auto a = gpu.run(in);
  const auto b = cpu.run(in);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(close(a[k], b[k], rtol)) << "output " << k;
  const auto c = gpu.run(in);  // planned device buffers and the run state are reused
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(close(c[k], b[k], rtol)) << "second run, output " << k;
}

NodeSpec node(std::string op, std::vector<std::string> in, std::vector<std::string> out, std::vector<AttrSpec> attrs = {}) {
  return NodeSpec{std::move(op), std::move(in), std::move(out), std::move(attrs), "", ""};
}

GraphSpec single(const std::string& op, std::vector<std::pair<std::string, Shape>> inputs, Shape y, std::vector<AttrSpec> attrs = {},
                 DType out = DType::kFloat) {
  GraphSpec g;
  std::vector<std::string> names;
  for (auto& [n, s] : inputs) {
    g.inputs.push_back({n, DType::kFloat, s.to_vector()});
    names.push_back(n);
  }
  g.nodes.push_back(node(op, names, {"y"}, std::move(attrs)));
  g.outputs.push_back({"y", out, y.to_vector()});
  return g;
}

/// One Conv / ConvTranspose of input x with constant weights w (and a bias when asked).
GraphSpec conv_graph(const std::string& op, Shape x, Shape w, bool bias, std::vector<AttrSpec> attrs, Shape y) {
  GraphSpec g = single(op, {{"x", x}}, y, std::move(attrs));
  g.initializers.emplace_back("w", random_tensor(w, 7));
  g.nodes[0].inputs = {"x", "w"};
  if (bias) {
    g.initializers.emplace_back("b", random_tensor(Shape{op == "ConvTranspose" ? w[1] : w[0]}, 8));
    g.nodes[0].inputs.push_back("b");
  }
  return g;
}

/// BatchNormalization of x [2, 4, 5, 3] with constant statistics.
GraphSpec batch_norm_graph() {
  GraphSpec bn = single("BatchNormalization", {{"x", Shape{2, 4, 5, 3}}}, Shape{2, 4, 5, 3}, {attr_float("epsilon", 1e-3f)});
  bn.initializers.emplace_back("s", random_tensor(Shape{4}, 1));
  bn.initializers.emplace_back("b", random_tensor(Shape{4}, 2));
  bn.initializers.emplace_back("m", random_tensor(Shape{4}, 3));
  bn.initializers.emplace_back("v", random_tensor(Shape{4}, 4, 0.5f, 1.5f));
  bn.nodes[0].inputs = {"x", "s", "b", "m", "v"};
  return bn;
}


// ---------------------------------------------------------------------------------------------
// Claim decisions, without a device: a node and its types, as the partitioner hands them over.

struct ClaimCase {
  Graph graph;
  Node n;
  std::vector<TypeInfo> in, out;
  ClaimCase(std::string op, std::vector<TypeInfo> ins, std::vector<TypeInfo> outs, int opset = 17) : in(std::move(ins)), out(std::move(outs)) {
    n.op_type = std::move(op);
    n.opset = opset;
    for (size_t i = 0; i < in.size(); ++i) {
      const int v = graph.add_value("in" + std::to_string(i));
      graph.values[v].type = in[i];
      n.inputs.push_back(v);
    }
    for (size_t i = 0; i < out.size(); ++i) {
      const int v = graph.add_value("out" + std::to_string(i));
      graph.values[v].type = out[i];
      n.outputs.push_back(v);
    }
  }
  ClaimCase& ints(const std::string& name, std::vector<int64_t> v) {
    Attribute a;
    a.name = name;
    a.type = AttrType::kInts;
    a.ints = std::move(v);
    n.attrs.push_back(a);
    return *this;
  }
  ClaimCase& integer(const std::string& name, int64_t v) {
    Attribute a;
    a.name = name;
    a.type = AttrType::kInt;
    a.i = v;
    n.attrs.push_back(a);
    return *this;
  }
  ClaimCase& text(const std::string& name, std::string v) {
    Attribute a;
    a.name = name;
    a.type = AttrType::kString;
    a.s = std::move(v);
    n.attrs.push_back(a);
    return *this;
  }
  ClaimCase& floats(const std::string& name, std::vector<float> v) {
    Attribute a;
    a.name = name;
    a.type = AttrType::kFloats;
    a.floats = std::move(v);
    n.attrs.push_back(a);
    return *this;
  }
  /// An optimizer-made node of onyx's domain with an activation (FusedConv/FusedGemm/FusedMatMul).
  ClaimCase& fused(const std::string& act, std::vector<float> params = {}) {
    n.domain = "onyx";
    text("activation", act);
    if (!params.empty()) floats("activation_params", std::move(params));
    return *this;
  }
  ClaimCase& constant(size_t input) {
    const int v = n.inputs[input];
    graph.values[v].has_initializer = true;
    graph.values[v].initializer = Tensor(in[input].dtype, in[input].shape);
    return *this;
  }
  bool claim(Decline* why, bool prefer_nhwc = false) const {
    std::vector<const TypeInfo*> ip, op;
    for (const auto& t : in) ip.push_back(&t);
    for (const auto& t : out) op.push_back(&t);
    ClaimInfo info{n, graph, ip, op};
    return cuda::claim_node(info, why, prefer_nhwc);
  }
  /// The node as the channels-last form the optimizer would offer.
  ClaimCase& channels_last() {
    n.domain = "onyx.nhwc";
    return *this;
  }
};

TypeInfo f32(Shape s) { return TypeInfo::tensor(DType::kFloat, std::move(s)); }
TypeInfo i64(Shape s) { return TypeInfo::tensor(DType::kInt64, std::move(s)); }

}  // namespace

TEST(CudaClaim, TakesFloatKernelsOfEveryFamily) {
  Decline why;
  EXPECT_TRUE(ClaimCase("Relu", {f32({2, 3})}, {f32({2, 3})}).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("Add", {f32({2, 3}), f32({3})}, {f32({2, 3})}).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("MatMul", {f32({4, 2, 3}), f32({3, 5})}, {f32({4, 2, 5})}).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("Conv", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})}, {f32({1, 4, 8, 8})}).ints("pads", {1, 1, 1, 1}).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("LayerNormalization", {f32({2, 8}), f32({8}), f32({8})}, {f32({2, 8})}).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("Tile", {f32({2, 3}), i64({2})}, {f32({4, 9})}).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("Resize", {f32({1, 3, 4, 4}), f32({0}), f32({4})}, {f32({1, 3, 8, 8})}, 19).text("mode", "linear").claim(&why))
      << why.message;
  EXPECT_TRUE(ClaimCase("Resize", {f32({1, 3, 4, 4}), f32({0}), f32({0}), i64({4})}, {f32({1, 3, 8, 8})}, 13).claim(&why)) << why.message;
  EXPECT_FALSE(ClaimCase("Resize", {f32({1, 3, 4, 4}), f32({8}), f32({4})}, {f32({1, 3, 8, 8})}, 13)
                   .text("coordinate_transformation_mode", "tf_crop_and_resize")
                   .claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;
  EXPECT_TRUE(ClaimCase("Upsample", {f32({1, 3, 4, 4}), f32({4})}, {f32({1, 3, 8, 8})}, 9).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("GatherElements", {f32({3, 4}), i64({2, 4})}, {f32({2, 4})}, 13).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("LpPool", {f32({1, 3, 8, 8})}, {f32({1, 3, 4, 4})}, 18).ints("kernel_shape", {2, 2}).integer("ceil_mode", 1).claim(&why))
      << why.message;
  EXPECT_TRUE(ClaimCase("GlobalLpPool", {f32({1, 3, 8, 8})}, {f32({1, 3, 1, 1})}, 2).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("CumSum", {f32({3, 4}), i64({})}, {f32({3, 4})}, 14).claim(&why)) << why.message;
  EXPECT_FALSE(ClaimCase("CumSum", {TypeInfo::tensor(DType::kDouble, Shape{3}), i64({})}, {TypeInfo::tensor(DType::kDouble, Shape{3})}, 14)
                   .claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  EXPECT_FALSE(ClaimCase("Upsample", {f32({1, 3, 4, 4})}, {f32({1, 3, 8, 8})}, 7).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kOpsetOutOfRange) << why.message;
  EXPECT_FALSE(ClaimCase("Resize", {f32({1, 3, 4, 4}), f32({0}), f32({4})}, {f32({1, 3, 8, 8})}, 13).text("mode", "bicubic").claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;
  EXPECT_TRUE(ClaimCase("DepthToSpace", {f32({1, 8, 2, 2})}, {f32({1, 2, 4, 4})}).integer("blocksize", 2).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("InstanceNormalization", {f32({2, 3, 4, 4}), f32({3}), f32({3})}, {f32({2, 3, 4, 4})}).claim(&why)) << why.message;
  EXPECT_FALSE(ClaimCase("InstanceNormalization", {f32({2, 3}), f32({3}), f32({3})}, {f32({2, 3})}).claim(&why));
  EXPECT_TRUE(ClaimCase("Gather", {f32({10, 4}), i64({3})}, {f32({3, 4})}).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("Reshape", {f32({2, 6}), i64({2})}, {f32({3, 4})}).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("Cast", {i64({2, 6})}, {f32({2, 6})}).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("Where", {TypeInfo::tensor(DType::kBool, Shape{4}), f32({4}), f32({4})}, {f32({4})}).claim(&why)) << why.message;
}

TEST(CudaClaim, ChannelsLastForms) {
  // Types as the optimizer gives them: data [N, H, W, C], weights in ONNX's layout.
  Decline why;
  auto conv = [] {
    ClaimCase c("Conv", {f32({1, 8, 8, 3}), f32({4, 3, 3, 3}), f32({4})}, {f32({1, 8, 8, 4})});
    c.ints("pads", {1, 1, 1, 1}).channels_last();
    return c;
  };
  EXPECT_TRUE(conv().constant(1).constant(2).claim(&why, true)) << why.message;
  EXPECT_FALSE(conv().constant(1).claim(&why, false));  // only with prefer_nhwc
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedOp) << why.message;
  EXPECT_NE(why.message.find("prefer_nhwc"), std::string::npos) << why.message;
  EXPECT_FALSE(conv().claim(&why, true));  // weights computed at run time
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;
  // What the channels-first op would decline, the form declines too (here: float64).
  ClaimCase d("Conv", {TypeInfo::tensor(DType::kDouble, Shape{1, 8, 8, 3}), TypeInfo::tensor(DType::kDouble, Shape{4, 3, 3, 3})},
              {TypeInfo::tensor(DType::kDouble, Shape{1, 8, 8, 4})});
  EXPECT_FALSE(d.channels_last().constant(1).claim(&why, true));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  ClaimCase fc("FusedConv", {f32({1, 8, 8, 3}), f32({4, 3, 1, 1})}, {f32({1, 8, 8, 4})}, 1);
  fc.fused("Relu").channels_last().constant(1);
  EXPECT_TRUE(fc.claim(&why, true)) << why.message;
  ClaimCase ct("ConvTranspose", {f32({1, 5, 5, 4}), f32({4, 3, 3, 3})}, {f32({1, 9, 9, 3})});
  ct.ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1}).channels_last().constant(1);
  EXPECT_TRUE(ct.claim(&why, true)) << why.message;
  // Pooling: cuDNN's, not onyx's direct (channels-first) kernel.
  ClaimCase pool("MaxPool", {f32({1, 9, 9, 3})}, {f32({1, 4, 4, 3})});
  pool.ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).channels_last();
  EXPECT_TRUE(pool.claim(&why, true)) << why.message;
  ClaimCase ceil("MaxPool", {f32({1, 9, 10, 3})}, {f32({1, 4, 5, 3})});
  ceil.ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).integer("ceil_mode", 1).channels_last();
  EXPECT_FALSE(ceil.claim(&why, true));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;
  ClaimCase asym("AveragePool", {f32({1, 8, 8, 2})}, {f32({1, 8, 8, 2})});
  asym.ints("kernel_shape", {3, 2}).ints("pads", {0, 1, 2, 0}).channels_last();
  EXPECT_FALSE(asym.claim(&why, true));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;
  EXPECT_TRUE(ClaimCase("GlobalAveragePool", {f32({2, 7, 6, 5})}, {f32({2, 1, 1, 5})}).channels_last().claim(&why, true)) << why.message;
  ClaimCase bn("BatchNormalization", {f32({2, 5, 3, 4}), f32({4}), f32({4}), f32({4}), f32({4})}, {f32({2, 5, 3, 4})}, 15);
  EXPECT_TRUE(bn.channels_last().claim(&why, true)) << why.message;
  // 3-d spatial ops stay channels-first on this EP.
  ClaimCase c3("Conv", {f32({1, 4, 4, 4, 3}), f32({2, 3, 1, 1, 1})}, {f32({1, 4, 4, 4, 2})});
  EXPECT_FALSE(c3.channels_last().constant(1).claim(&why, true));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
}

TEST(CudaClaim, FusedAttention) {
  Decline why;
  ClaimCase a("Attention", {f32({12, 128, 64}), f32({12, 64, 128}), f32({12, 128, 64}), f32({1, 1, 128})}, {f32({12, 128, 64})}, 1);
  a.n.domain = "onyx";
  EXPECT_TRUE(a.claim(&why)) << why.message;
  ClaimCase h("Attention", {TypeInfo::tensor(DType::kFloat16, Shape{2, 4, 8}), TypeInfo::tensor(DType::kFloat16, Shape{2, 8, 4}),
                            TypeInfo::tensor(DType::kFloat16, Shape{2, 4, 8})},
              {TypeInfo::tensor(DType::kFloat16, Shape{2, 4, 8})}, 1);
  h.n.domain = "onyx";
  EXPECT_TRUE(h.claim(&why)) << why.message;  // float16 Q, KT, V: fp32 scores in the kernel
  ClaimCase mixed("Attention", {TypeInfo::tensor(DType::kFloat16, Shape{2, 4, 8}), f32({2, 8, 4}), TypeInfo::tensor(DType::kFloat16, Shape{2, 4, 8})},
                  {TypeInfo::tensor(DType::kFloat16, Shape{2, 4, 8})}, 1);
  mixed.n.domain = "onyx";
  EXPECT_FALSE(mixed.claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType);
  EXPECT_NE(why.message.find("input 1 is float"), std::string::npos) << why.message;
}

TEST(CudaClaim, HalfAndBFloat16) {
  // float16 and bfloat16: products and convolutions on cuBLASLt / cuDNN (tensor cores, fp32
  // accumulation), onyx's own kernels in fp32 registers.
  Decline why;
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const std::string name(dtype_name(dt));
    auto h = [dt](Shape s) { return TypeInfo::tensor(dt, std::move(s)); };
    EXPECT_TRUE(ClaimCase("MatMul", {h({4, 2, 3}), h({3, 5})}, {h({4, 2, 5})}).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("Gemm", {h({5, 7}), h({6, 7}), h({6})}, {h({5, 6})}).integer("transB", 1).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("Conv", {h({1, 3, 8, 8}), h({4, 3, 3, 3}), h({4})}, {h({1, 4, 8, 8})}).ints("pads", {1, 1, 1, 1}).claim(&why))
        << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("ConvTranspose", {h({1, 3, 8, 8}), h({3, 4, 3, 3})}, {h({1, 4, 10, 10})}).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("Add", {h({2, 3}), h({3})}, {h({2, 3})}).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("Mean", {h({2, 3}), h({3}), h({2, 1})}, {h({2, 3})}).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("Pow", {h({2, 3}), h({3})}, {h({2, 3})}).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("Less", {h({2, 3}), h({3})}, {TypeInfo::tensor(DType::kBool, Shape{2, 3})}).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("Gelu", {h({2, 3})}, {h({2, 3})}, 20).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("LayerNormalization", {h({2, 8}), h({8}), h({8})}, {h({2, 8})}).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("Softmax", {h({2, 8})}, {h({2, 8})}, 13).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("ReduceMean", {h({2, 8}), i64({1})}, {h({2, 1})}, 18).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("MaxPool", {h({1, 3, 8, 8})}, {h({1, 3, 4, 4})}).ints("kernel_shape", {2, 2}).ints("strides", {2, 2}).claim(&why))
        << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("GlobalAveragePool", {h({1, 3, 8, 8})}, {h({1, 3, 1, 1})}).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("Resize", {h({1, 3, 4, 4}), f32({0}), f32({4})}, {h({1, 3, 8, 8})}, 19).text("mode", "linear").claim(&why))
        << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("Where", {TypeInfo::tensor(DType::kBool, Shape{4}), h({4}), h({4})}, {h({4})}).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("Cast", {f32({2, 6})}, {h({2, 6})}).claim(&why)) << name << ": " << why.message;
    EXPECT_TRUE(ClaimCase("Cast", {h({2, 6})}, {f32({2, 6})}).claim(&why)) << name << ": " << why.message;
    // BatchNormalization: 16-bit data with 16-bit or float32 statistics (cuDNN and onyx's kernel take them as float).
    EXPECT_TRUE(ClaimCase("BatchNormalization", {h({2, 3, 4}), h({3}), h({3}), f32({3}), f32({3})}, {h({2, 3, 4})}, 15).claim(&why))
        << name << ": " << why.message;
    ClaimCase fm("FusedMatMul", {h({2, 16, 32}), h({32, 64}), h({64})}, {h({2, 16, 64})}, 1);
    EXPECT_TRUE(fm.fused("Gelu").claim(&why)) << name << ": " << why.message;
    ClaimCase fc("FusedConv", {h({1, 3, 8, 8}), h({4, 3, 3, 3}), h({4})}, {h({1, 4, 8, 8})}, 1);
    EXPECT_TRUE(fc.ints("pads", {1, 1, 1, 1}).fused("Relu").claim(&why)) << name << ": " << why.message;

    // Still declined, each with its reason naming the type: CumSum has no 16-bit kernel, nor do
    // GroupQueryAttention and MatMulNBits, one element type per math node.
    EXPECT_FALSE(ClaimCase("CumSum", {h({3, 4}), i64({})}, {h({3, 4})}, 14).claim(&why)) << name;
    EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
    EXPECT_NE(why.message.find(name), std::string::npos) << why.message;
    ClaimCase att("Attention", {h({1, 4, 16}), h({16, 48}), h({48})}, {h({1, 4, 16})}, 1);
    att.n.domain = "com.microsoft";
    EXPECT_TRUE(att.integer("num_heads", 2).claim(&why)) << name << ": " << why.message;
    ClaimCase mha("MultiHeadAttention", {h({1, 4, 16}), h({1, 4, 16}), h({1, 4, 16})}, {h({1, 4, 16})}, 1);
    mha.n.domain = "com.microsoft";
    EXPECT_TRUE(mha.integer("num_heads", 2).claim(&why)) << name << ": " << why.message;
    ClaimCase mha_qk("MultiHeadAttention", {h({1, 4, 16}), h({1, 4, 16}), h({1, 4, 16})},
                     {h({1, 4, 16}), h({1, 2, 4, 8}), h({1, 2, 4, 8}), h({1, 2, 4, 4})}, 1);
    mha_qk.n.domain = "com.microsoft";
    EXPECT_FALSE(mha_qk.integer("num_heads", 2).claim(&why)) << name;
    EXPECT_NE(why.message.find("output_qk"), std::string::npos) << why.message;
    ClaimCase gqa("GroupQueryAttention", {h({1, 1, 32}), h({1, 1, 16}), h({1, 1, 16}), h({1, 2, 4, 8}), h({1, 2, 4, 8}),
                                          TypeInfo::tensor(DType::kInt32, Shape{1}), TypeInfo::tensor(DType::kInt32, Shape{1})},
                  {h({1, 1, 32})}, 1);
    gqa.n.domain = "com.microsoft";
    EXPECT_FALSE(gqa.integer("num_heads", 4).integer("kv_num_heads", 2).claim(&why)) << name;
    EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
    EXPECT_NE(why.message.find(name), std::string::npos) << why.message;
    EXPECT_FALSE(ClaimCase("MatMul", {h({2, 3}), f32({3, 5})}, {h({2, 5})}).claim(&why)) << name;
    EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
    EXPECT_NE(why.message.find("input 1 is float beside " + name), std::string::npos) << why.message;
  }
  // bfloat16 pooling runs on onyx's channels-first direct kernel: its channels-last form is declined.
  ClaimCase pool("MaxPool", {TypeInfo::tensor(DType::kBFloat16, Shape{1, 8, 8, 3})}, {TypeInfo::tensor(DType::kBFloat16, Shape{1, 4, 4, 3})});
  pool.ints("kernel_shape", {2, 2}).ints("strides", {2, 2}).channels_last();
  EXPECT_FALSE(pool.claim(&why, true));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  EXPECT_NE(why.message.find("bfloat16"), std::string::npos) << why.message;
  ClaimCase pool16("MaxPool", {TypeInfo::tensor(DType::kFloat16, Shape{1, 8, 8, 3})}, {TypeInfo::tensor(DType::kFloat16, Shape{1, 4, 4, 3})});
  pool16.ints("kernel_shape", {2, 2}).ints("strides", {2, 2}).channels_last();
  EXPECT_TRUE(pool16.claim(&why, true)) << why.message;
  // Doubles stay on the CPU.
  EXPECT_FALSE(ClaimCase("MatMul", {TypeInfo::tensor(DType::kDouble, Shape{2, 3}), TypeInfo::tensor(DType::kDouble, Shape{3, 2})},
                         {TypeInfo::tensor(DType::kDouble, Shape{2, 2})})
                   .claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  EXPECT_NE(why.message.find("double"), std::string::npos) << why.message;
}

TEST(CudaClaim, FusedConv) {
  Decline why;
  auto fused = [](const char* act, std::vector<float> params) {
    ClaimCase c("FusedConv", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3}), f32({4})}, {f32({1, 4, 8, 8})}, 1);
    c.ints("pads", {1, 1, 1, 1}).fused(act, std::move(params));
    return c;
  };
  EXPECT_TRUE(fused("Relu", {}).claim(&why)) << why.message;
  EXPECT_TRUE(fused("Clip", {0.f, 6.f}).claim(&why)) << why.message;
  EXPECT_FALSE(fused("Sigmoid", {}).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute);
}

TEST(CudaClaim, FusedMatMulAndGemm) {
  Decline why;
  auto matmul = [](const char* act) {
    ClaimCase c("FusedMatMul", {f32({2, 128, 768}), f32({768, 3072}), f32({3072})}, {f32({2, 128, 3072})}, 1);
    c.fused(act);
    return c;
  };
  EXPECT_TRUE(matmul("Gelu").claim(&why)) << why.message;
  EXPECT_TRUE(matmul("Relu").claim(&why)) << why.message;
  EXPECT_FALSE(matmul("Sigmoid").claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute);
  auto gemm = [](const char* act) {
    ClaimCase c("FusedGemm", {f32({5, 7}), f32({7, 6}), f32({6})}, {f32({5, 6})}, 1);
    c.fused(act);
    return c;
  };
  EXPECT_TRUE(gemm("Relu").claim(&why)) << why.message;
  EXPECT_FALSE(gemm("Tanh").claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute);
}

TEST(CudaClaim, TransformerOps) {
  // ONNX Runtime's com.microsoft operators (and its ai.onnx SimplifiedLayerNormalization).
  Decline why;
  auto ms = [](std::string op, std::vector<TypeInfo> ins, std::vector<TypeInfo> outs) {
    ClaimCase c(std::move(op), std::move(ins), std::move(outs), 1);
    c.n.domain = "com.microsoft";
    return c;
  };
  auto i32 = [](Shape s) { return TypeInfo::tensor(DType::kInt32, std::move(s)); };
  auto f16 = [](Shape s) { return TypeInfo::tensor(DType::kFloat16, std::move(s)); };
  auto u8 = [](Shape s) { return TypeInfo::tensor(DType::kUInt8, std::move(s)); };
  EXPECT_TRUE(ms("BiasGelu", {f32({2, 8}), f32({8})}, {f32({2, 8})}).claim(&why)) << why.message;
  EXPECT_TRUE(ms("FastGelu", {f32({2, 8})}, {f32({2, 8})}).claim(&why)) << why.message;
  EXPECT_TRUE(ms("QuickGelu", {f32({2, 8})}, {f32({2, 8})}).claim(&why)) << why.message;
  // The GELUs and the layer normalisations also run on float16 / bfloat16 (fp32 registers), all
  // tensors of one type but the float statistics.
  EXPECT_TRUE(ms("Gelu", {f16({2, 8})}, {f16({2, 8})}).claim(&why)) << why.message;
  EXPECT_TRUE(ms("BiasGelu", {f16({2, 8}), f16({8})}, {f16({2, 8})}).claim(&why)) << why.message;
  EXPECT_FALSE(ms("BiasGelu", {f16({2, 8}), f32({8})}, {f16({2, 8})}).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  EXPECT_NE(why.message.find("input 1 is float"), std::string::npos) << why.message;
  auto bf = [](Shape s) { return TypeInfo::tensor(DType::kBFloat16, std::move(s)); };
  EXPECT_TRUE(ms("SkipLayerNormalization", {bf({2, 3, 8}), bf({2, 3, 8}), bf({8}), bf({8}), bf({8})},
                 {bf({2, 3, 8}), f32({2, 3, 1}), f32({2, 3, 1}), bf({2, 3, 8})})
                  .claim(&why))
      << why.message;
  EXPECT_FALSE(ms("SkipLayerNormalization", {bf({2, 3, 8}), bf({2, 3, 8}), bf({8})}, {bf({2, 3, 8}), bf({2, 3, 1})}).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;  // the mean is float
  EXPECT_TRUE(ms("SkipSimplifiedLayerNormalization", {f16({2, 3, 8}), f16({3, 8}), f16({8})}, {f16({2, 3, 8})}).claim(&why)) << why.message;
  EXPECT_TRUE(ms("SkipLayerNormalization", {f32({2, 3, 8}), f32({2, 3, 8}), f32({8}), f32({8})}, {f32({2, 3, 8})}).claim(&why)) << why.message;
  EXPECT_TRUE(ms("SkipSimplifiedLayerNormalization", {f32({2, 3, 8}), f32({3, 8}), f32({8})}, {f32({2, 3, 8})}).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("SimplifiedLayerNormalization", {f32({2, 8}), f32({8})}, {f32({2, 8})}).claim(&why)) << why.message;
  ClaimCase rope = ms("RotaryEmbedding", {f32({1, 4, 16}), i64({1, 4}), f32({8, 4}), f32({8, 4})}, {f32({1, 4, 16})});
  EXPECT_TRUE(rope.claim(&why)) << why.message;
  EXPECT_TRUE(cuda::reads_host_input(rope.n, 1, rope.graph));  // position ids are checked on the host
  EXPECT_FALSE(cuda::reads_host_input(rope.n, 0, rope.graph));
  ClaimCase nbits = ms("MatMulNBits", {f32({1, 64}), u8({16, 2, 16}), f32({32}), u8({16})}, {f32({1, 16})});
  nbits.integer("K", 64).integer("N", 16).integer("bits", 4).integer("block_size", 32);
  EXPECT_TRUE(nbits.claim(&why)) << why.message;
  EXPECT_FALSE(nbits.integer("weight_prepacked", 1).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;
  EXPECT_FALSE(ms("MatMulNBits", {f16({1, 64}), u8({16, 2, 16}), f16({32})}, {f16({1, 16})}).integer("K", 64).integer("N", 16).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  // MultiHeadAttention: Q, K, V, bias, key_padding_mask, attention_bias, past_key, past_value.
  ClaimCase mha = ms("MultiHeadAttention", {f32({2, 3, 8}), f32({2, 3, 8}), f32({2, 3, 8}), f32({24}), i32({2}), f32({1, 2, 3, 7}),
                                             f32({2, 2, 4, 4}), f32({2, 2, 4, 4})},
                     {f32({2, 3, 8}), f32({2, 2, 7, 4}), f32({2, 2, 7, 4})});
  EXPECT_TRUE(mha.integer("num_heads", 2).claim(&why)) << why.message;
  ClaimCase packed = ms("MultiHeadAttention", {f32({2, 3, 2, 3, 4})}, {f32({2, 3, 8})});
  EXPECT_FALSE(packed.integer("num_heads", 2).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;
  ClaimCase fmask = ms("MultiHeadAttention", {f32({2, 3, 8}), f32({2, 3, 8}), f32({2, 3, 8}), f32({24}), f32({2, 3})}, {f32({2, 3, 8})});
  EXPECT_FALSE(fmask.integer("num_heads", 2).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  // Attention: input, weights, bias, mask_index, past.
  ClaimCase att = ms("Attention", {f32({2, 3, 8}), f32({8, 24}), f32({24}), i32({2, 3}), f32({2, 2, 2, 0, 4})}, {f32({2, 3, 8}), f32({2, 2, 2, 3, 4})});
  EXPECT_TRUE(att.integer("num_heads", 2).claim(&why)) << why.message;
  EXPECT_FALSE(att.integer("do_rotary", 1).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;
  // GroupQueryAttention: q, k, v, past_key, past_value, seqlens_k, total_sequence_length, cos, sin.
  auto gqa = [&] {
    ClaimCase g = ms("GroupQueryAttention", {f32({1, 1, 32}), f32({1, 1, 16}), f32({1, 1, 16}), f32({1, 2, 8, 8}), f32({1, 2, 8, 8}),
                                             i32({1}), i32({1}), f32({16, 4}), f32({16, 4})},
                     {f32({1, 1, 32}), f32({1, 2, 8, 8}), f32({1, 2, 8, 8})});
    g.integer("num_heads", 4).integer("kv_num_heads", 2).integer("do_rotary", 1);
    return g;
  };
  EXPECT_TRUE(gqa().claim(&why)) << why.message;
  EXPECT_TRUE(cuda::reads_host_input(gqa().n, 5, gqa().graph));  // seqlens_k and total length: checked on the host
  EXPECT_TRUE(cuda::reads_host_input(gqa().n, 6, gqa().graph));
  EXPECT_FALSE(cuda::reads_host_input(gqa().n, 3, gqa().graph));
  EXPECT_FALSE(gqa().integer("kv_cache_bit_width", 8).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;
  EXPECT_NE(why.message.find("quantized"), std::string::npos) << why.message;
  ClaimCase qpast = gqa();
  qpast.in[3] = qpast.in[4] = TypeInfo::tensor(DType::kInt8, Shape{1, 2, 8, 8});
  EXPECT_FALSE(qpast.claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  EXPECT_FALSE(gqa().integer("causal", 0).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;
  ClaimCase half = ms("GroupQueryAttention", {f16({1, 1, 32}), f16({1, 1, 16}), f16({1, 1, 16}), i32({1}), i32({1})}, {f16({1, 1, 32})});
  half.n.inputs = {half.n.inputs[0], half.n.inputs[1], half.n.inputs[2], -1, -1, half.n.inputs[3], half.n.inputs[4]};
  half.in = {half.in[0], half.in[1], half.in[2], TypeInfo(), TypeInfo(), half.in[3], half.in[4]};
  EXPECT_FALSE(half.integer("num_heads", 4).integer("kv_num_heads", 2).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  EXPECT_FALSE(ms("EmbedLayerNormalization", {i32({1, 4})}, {f32({1, 4, 8})}).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedOp) << why.message;
}

TEST(CudaClaim, ShapeArithmeticStaysOnTheCpu) {
  Decline why;
  EXPECT_FALSE(ClaimCase("Shape", {f32({2, 3})}, {i64({2})}).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kNotWorthOffloading);
  EXPECT_NE(why.message.find("plan time"), std::string::npos) << why.message;
  EXPECT_FALSE(ClaimCase("Concat", {i64({1}), i64({1})}, {i64({2})}).integer("axis", 0).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kNotWorthOffloading);
  EXPECT_NE(why.message.find("integers"), std::string::npos) << why.message;
  EXPECT_FALSE(ClaimCase("Add", {i64({2}), i64({2})}, {i64({2})}).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kNotWorthOffloading);
}

TEST(CudaClaim, DeclineReasons) {
  Decline why;
  EXPECT_FALSE(ClaimCase("NonMaxSuppression", {f32({1, 4, 4}), f32({1, 1, 4})}, {i64({1, 3})}).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedOp);
  EXPECT_NE(why.message.find("NonMaxSuppression"), std::string::npos);

  EXPECT_FALSE(ClaimCase("Erf", {f32({2})}, {f32({2})}, 7).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kOpsetOutOfRange) << why.message;

  EXPECT_FALSE(ClaimCase("Relu", {TypeInfo::tensor(DType::kDouble, Shape{2})}, {TypeInfo::tensor(DType::kDouble, Shape{2})}).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;

  EXPECT_FALSE(ClaimCase("Add", {f32({2}), i64({2})}, {f32({2})}).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;

  // A convolution's asymmetric or SAME pads are a border copied first; pooling's are declined.
  EXPECT_TRUE(ClaimCase("Conv", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})}, {f32({1, 4, 7, 7})}).ints("pads", {1, 1, 0, 0}).claim(&why))
      << why.message;
  EXPECT_TRUE(ClaimCase("Conv", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})}, {f32({1, 4, 4, 4})}).text("auto_pad", "SAME_UPPER").ints("strides", {2, 2}).claim(&why))
      << why.message;
  EXPECT_FALSE(ClaimCase("ConvTranspose", {f32({1, 3, 8, 8}), f32({3, 4, 3, 3})}, {f32({1, 4, 9, 9})}).ints("pads", {1, 1, 0, 0}).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute);
  EXPECT_NE(why.message.find("asymmetric"), std::string::npos) << why.message;
  // Pooling cuDNN cannot express runs on onyx's direct kernel.
  EXPECT_TRUE(ClaimCase("MaxPool", {f32({1, 3, 8, 8})}, {f32({1, 3, 7, 7})}).ints("kernel_shape", {3, 3}).ints("pads", {1, 1, 0, 0}).claim(&why))
      << why.message;
  EXPECT_TRUE(ClaimCase("MaxPool", {f32({1, 3, 8, 8})}, {f32({1, 3, 4, 4}), i64({1, 3, 4, 4})}, 12)
                  .ints("kernel_shape", {3, 3})
                  .ints("strides", {2, 2})
                  .ints("dilations", {1, 2})
                  .integer("ceil_mode", 1)
                  .claim(&why))
      << why.message;
  EXPECT_FALSE(ClaimCase("ConvTranspose", {f32({1, 3, 8, 8}), f32({3, 4, 3, 3})}, {f32({1, 4, 10, 10})}).text("auto_pad", "SAME_UPPER").claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;

  // Pad: every mode of ONNX; the older Pad (a float value attribute) on float32 only.
  EXPECT_TRUE(ClaimCase("Pad", {f32({2, 3}), i64({4})}, {f32({4, 5})}, 18).text("mode", "reflect").claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("Pad", {f32({2, 3}), i64({4}), f32({}), i64({2})}, {f32({4, 5})}, 19).text("mode", "wrap").claim(&why))
      << why.message;
  EXPECT_FALSE(ClaimCase("Pad", {TypeInfo::tensor(DType::kDouble, Shape{2})}, {TypeInfo::tensor(DType::kDouble, Shape{4})}, 2)
                   .ints("pads", {1, 1})
                   .claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  EXPECT_FALSE(ClaimCase("Pad", {f32({2}), i64({2})}, {f32({4})}, 18).text("mode", "mirror").claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;


  EXPECT_FALSE(ClaimCase("BatchNormalization", {f32({2, 3, 4}), f32({3}), f32({3}), f32({3}), f32({3})}, {f32({2, 3, 4})}, 15)
                   .integer("training_mode", 1)
                   .claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;

  EXPECT_FALSE(ClaimCase("Relu", {f32({1, 1, 1, 1, 1, 1, 1, 1, 2})}, {f32({1, 1, 1, 1, 1, 1, 1, 1, 2})}).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;

  ClaimCase ms("Conv", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})}, {f32({1, 4, 8, 8})});
  ms.n.domain = "com.microsoft";
  EXPECT_FALSE(ms.claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedOp);

  EXPECT_FALSE(ClaimCase("Pow", {f32({2}), f32({2}), f32({2})}, {f32({2})}).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;
  // Sum, Mean, Max, Min: any number of inputs; Sum and Mean on float32 only.
  EXPECT_TRUE(ClaimCase("Max", {f32({2}), f32({2}), f32({2})}, {f32({2})}).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("Mean", {f32({2, 3}), f32({3}), f32({1}), f32({2, 1})}, {f32({2, 3})}).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("Sum", {f32({2})}, {f32({2})}).claim(&why)) << why.message;
  EXPECT_FALSE(ClaimCase("Sum", {f32({2}), i64({2})}, {f32({2})}).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
}

TEST(CudaClaim, HostInputs) {
  // Shape operands are read on the host and constants are uploaded once: no per-run copy.
  ClaimCase r("Reshape", {f32({2, 6}), i64({2})}, {f32({3, 4})});
  EXPECT_TRUE(cuda::reads_host_input(r.n, 1, r.graph));
  EXPECT_FALSE(cuda::reads_host_input(r.n, 0, r.graph));
  ClaimCase c("Conv", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3}), f32({4})}, {f32({1, 4, 6, 6})});
  c.constant(1);
  EXPECT_FALSE(cuda::reads_host_input(c.n, 0, c.graph));
  EXPECT_TRUE(cuda::reads_host_input(c.n, 1, c.graph));
  EXPECT_FALSE(cuda::reads_host_input(c.n, 2, c.graph));
  ClaimCase s("Slice", {f32({4, 4}), i64({1}), i64({1})}, {f32({2, 4})}, 13);
  EXPECT_TRUE(cuda::reads_host_input(s.n, 1, s.graph));
  ClaimCase pad("Pad", {f32({4, 4}), i64({4}), f32({})}, {f32({6, 6})}, 18);
  EXPECT_FALSE(cuda::reads_host_input(pad.n, 0, pad.graph));
  EXPECT_TRUE(cuda::reads_host_input(pad.n, 1, pad.graph));
  EXPECT_TRUE(cuda::reads_host_input(pad.n, 2, pad.graph));
  ClaimCase rz("Resize", {f32({1, 1, 4, 4}), f32({0}), f32({4})}, {f32({1, 1, 8, 8})}, 13);
  EXPECT_FALSE(cuda::reads_host_input(rz.n, 0, rz.graph));
  EXPECT_TRUE(cuda::reads_host_input(rz.n, 2, rz.graph));
  EXPECT_TRUE(cuda::reads_host_input(s.n, 2, s.graph));
}

// ---------------------------------------------------------------------------------------------
// Strided views of the data-movement kernels, checked on the host with the kernels' own offset_of

namespace {
/// What strided_copy does on the device: dst[view d] = src[view s], element by element.
std::vector<float> gather_view(const std::vector<float>& src, const cuda::Strided& s) {
  int64_t n = 1;
  for (int k = 0; k < s.rank; ++k) n *= s.dims[k];
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = src[cuda::offset_of(s, i)];
  return out;
}
/// The CUDA EP's Slice source view for these operands (resolved by ops' resolve_slice).
cuda::Strided slice_of(const Shape& in, Shape starts, Shape ends, Shape axes, Shape steps, const Shape& out) {
  Node n;
  n.op_type = "Slice";
  return cuda::slice_view(in, resolve_slice(n, in, starts, ends, axes, steps), out);
}

std::vector<float> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}
}  // namespace

TEST(CudaViews, TileAndBlockRearrangements) {
  // The source views of Tile, DepthToSpace (both modes) and SpaceToDepth against the CPU EP running
  // the node on 0, 1, 2, ...; the destination views are the plain output layout.
  struct Case {
    const char* op;
    Shape x;
    std::vector<AttrSpec> attrs;
    std::vector<int64_t> repeats;
    int64_t opset;
  };
  const Case cases[] = {
      {"Tile", Shape{2, 3, 4}, {}, {3, 1, 2}, 13},
      {"Tile", Shape{2, 1, 3, 1, 2}, {}, {2, 3, 1, 2, 1}, 13},
      {"DepthToSpace", Shape{2, 8, 3, 2}, {attr_int("blocksize", 2)}, {}, 13},
      {"DepthToSpace", Shape{1, 18, 2, 3}, {attr_int("blocksize", 3), attr_string("mode", "CRD")}, {}, 13},
      {"SpaceToDepth", Shape{2, 3, 6, 4}, {attr_int("blocksize", 2)}, {}, 13},
      {"SpaceToDepth", Shape{1, 2, 6, 9}, {attr_int("blocksize", 3), attr_string("mode", "CRD")}, {}, 28},
  };
  for (const Case& c : cases) {
    GraphSpec g;
    std::vector<std::string> ins = {"x"};
    if (!c.repeats.empty()) {
      g.initializers.emplace_back("r", Tensor::from_vector<int64_t>(Shape{static_cast<int64_t>(c.repeats.size())}, c.repeats));
      ins.push_back("r");
    }
    g.nodes.push_back(node(c.op, ins, {"y"}, c.attrs));
    g.inputs.push_back({"x", DType::kFloat, c.x.to_vector()});
    g.outputs.push_back(any_out("y"));
    const std::string m = model_bytes(g, c.opset);
    Session cpu = cpu_session(m);
    const std::vector<float> x = iota(c.x.numel());
    const Tensor want = cpu.run({{"x", Value(Tensor::from_vector<float>(c.x, x))}})[0].tensor();
    cuda::Strided dst, src;
    const std::string op = c.op;
    if (op == "Tile") src = cuda::tile_view(c.x, c.repeats, want.shape(), &dst);
    else if (op == "DepthToSpace") src = cuda::depth_to_space_view(c.x, c.attrs[0].i, c.attrs.size() > 1, want.shape(), &dst);
    else src = cuda::space_to_depth_view(c.x, c.attrs[0].i, c.attrs.size() > 1, want.shape(), &dst);
    EXPECT_TRUE(cuda::is_flat(dst, want.numel())) << op;
    const std::vector<float> got = gather_view(x, src);
    ASSERT_EQ(static_cast<int64_t>(got.size()), want.numel()) << op;
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got[i], want.data<float>()[i]) << op << " at " << i;
  }
  cuda::Strided dst;
  EXPECT_THROW(cuda::tile_view(Shape{2, 3}, {2}, Shape{4, 3}, &dst), Error);
  EXPECT_THROW(cuda::depth_to_space_view(Shape{1, 6, 2, 2}, 2, false, Shape{1, 1, 4, 4}, &dst), Error);
}

TEST(CudaViews, TransposeSliceBroadcastConcat) {
  // Transpose [2,3,4,5] by perm {2,0,3,1} -> [4,2,5,3].
  const Shape in{2, 3, 4, 5};
  const auto x = iota(in.numel());
  const auto t = gather_view(x, cuda::transpose_view(in, {2, 0, 3, 1}, Shape{4, 2, 5, 3}));
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t c = 0; c < 5; ++c)
        for (int64_t d = 0; d < 3; ++d)
          ASSERT_EQ(t[((a * 2 + b) * 5 + c) * 3 + d], x[((b * 3 + d) * 4 + a) * 5 + c]);
  // Default perm reverses the dims.
  EXPECT_EQ(gather_view(iota(6), cuda::transpose_view(Shape{2, 3}, {}, Shape{3, 2})), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  // Slice [6,7]: rows 5,3 (start 5, step -2), columns 1,3,5 (start 1, step 2).
  const auto s = gather_view(iota(42), slice_of(Shape{6, 7}, {5, 1}, {1, 7}, {0, 1}, {-2, 2}, Shape{2, 3}));
  EXPECT_EQ(s, (std::vector<float>{36, 38, 40, 22, 24, 26}));
  // Negative starts count from the end, out-of-range starts clamp, negative axes count from the back.
  EXPECT_EQ(gather_view(iota(10), slice_of(Shape{10}, {-3}, {10}, {-1}, {}, Shape{3})), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(gather_view(iota(10), slice_of(Shape{10}, {100}, {7}, {0}, {-1}, Shape{2})), (std::vector<float>{9, 8}));
  // Broadcast [3,1] to [2,3,4].
  const auto b = gather_view({10, 20, 30}, cuda::broadcast_view(Shape{3, 1}, Shape{2, 3, 4}));
  for (int64_t i = 0; i < 24; ++i) ASSERT_EQ(b[i], 10.f * static_cast<float>((i / 4) % 3 + 1)) << i;
  EXPECT_FALSE(cuda::is_flat(cuda::broadcast_view(Shape{3, 1}, Shape{2, 3, 4}), 24));
  EXPECT_TRUE(cuda::is_flat(cuda::broadcast_view(Shape{2, 3, 4}, Shape{2, 3, 4}), 24));
  EXPECT_TRUE(cuda::is_flat(cuda::broadcast_view(Shape{}, Shape{}), 1));
  // Concat [2,3,4] and [2,5,4] along axis 1 into [2,8,4]: each input lands in its part.
  std::vector<float> y(64, -1);
  const auto a = iota(24), c = iota(40);
  const cuda::Strided pa = cuda::part_view(Shape{2, 8, 4}, Shape{2, 3, 4}, 1, 0);
  const cuda::Strided pc = cuda::part_view(Shape{2, 8, 4}, Shape{2, 5, 4}, 1, 3);
  for (int64_t i = 0; i < 24; ++i) y[cuda::offset_of(pa, i)] = a[i];
  for (int64_t i = 0; i < 40; ++i) y[cuda::offset_of(pc, i)] = 100 + c[i];
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t k = 0; k < 8; ++k)
      for (int64_t w = 0; w < 4; ++w) {
        const float want = k < 3 ? a[(n * 3 + k) * 4 + w] : 100 + c[(n * 5 + (k - 3)) * 4 + w];
        ASSERT_EQ(y[(n * 8 + k) * 4 + w], want) << n << "," << k << "," << w;
      }
  // Bad input is an onyx::Error, never a wrong view.
  EXPECT_THROW(cuda::broadcast_view(Shape{3}, Shape{4}), Error);
  EXPECT_THROW(cuda::transpose_view(Shape{2, 3}, {0, 0}, Shape{2, 3}), Error);
  EXPECT_THROW(slice_of(Shape{4}, {0}, {4}, {0}, {0}, Shape{4}), Error);
  EXPECT_THROW(cuda::contiguous(Shape{1, 1, 1, 1, 1, 1, 1, 1, 1}), Error);
}

// ---------------------------------------------------------------------------------------------
// Options and the allocator, without a device

TEST(CudaOptions, ParsesAndRejectsNamingTheKey) {
  const cuda::Options d = cuda::parse_options({});
  EXPECT_EQ(d.device_id, 0);
  EXPECT_EQ(d.gpu_mem_limit, 0u);
  EXPECT_EQ(d.conv_algo_search, cuda::ConvAlgoSearch::kExhaustive);
  EXPECT_FALSE(d.use_tf32);
  const cuda::Options o = cuda::parse_options({{"device_id", "1"},
                                               {"gpu_mem_limit", "1048576"},
                                               {"arena_extend_strategy", "kSameAsRequested"},
                                               {"cudnn_conv_algo_search", "HEURISTIC"},
                                               {"use_tf32", "true"}});
  EXPECT_EQ(o.device_id, 1);
  EXPECT_EQ(o.gpu_mem_limit, 1048576u);
  EXPECT_EQ(o.arena_extend, cuda::ArenaExtend::kSameAsRequested);
  EXPECT_EQ(o.conv_algo_search, cuda::ConvAlgoSearch::kHeuristic);
  EXPECT_TRUE(o.use_tf32);
  EXPECT_FALSE(o.prefer_nhwc);
  EXPECT_TRUE(cuda::parse_options({{"prefer_nhwc", "true"}}).prefer_nhwc);
  EXPECT_FALSE(o.enable_cuda_graph);
  EXPECT_TRUE(cuda::parse_options({{"enable_cuda_graph", "1"}}).enable_cuda_graph);
  auto fails = [](OptionList opts, ErrorCode code, const char* text) {
    try {
      cuda::parse_options(opts);
      ADD_FAILURE() << "accepted " << opts[0].first << "=" << opts[0].second;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  fails({{"cudnn_conv_algo_search", "FASTEST"}}, ErrorCode::kInvalidArgument, "cudnn_conv_algo_search");
  fails({{"gpu_mem_limit", "-1"}}, ErrorCode::kInvalidArgument, "gpu_mem_limit");
  fails({{"use_tf32", "yes"}}, ErrorCode::kInvalidArgument, "use_tf32");
}

TEST(CudaOptions, SchemaValidation) {
  const auto schema = cuda::option_schema();
  for (const char* key : {"device_id", "gpu_mem_limit", "arena_extend_strategy", "cudnn_conv_algo_search", "use_tf32", "prefer_nhwc",
                          "enable_cuda_graph"})
    EXPECT_TRUE(std::any_of(schema.begin(), schema.end(), [&](const ep::OptionInfo& o) { return o.key == key; })) << key;
  const OptionList eff = effective_options("cuda", schema, {{"use_tf32", "1"}});
  EXPECT_EQ(eff.size(), schema.size());
  try {
    effective_options("cuda", schema, {{"cudnn_conv_algo_search", "SLOW"}});
    ADD_FAILURE() << "bad enum value accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cudnn_conv_algo_search"), std::string::npos) << e.what();
  }
  try {
    effective_options("cuda", schema, {{"memory_limit", "1"}});
    ADD_FAILURE() << "unknown key accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("memory_limit"), std::string::npos) << e.what();
  }
  // The typed builder methods set keys of the schema.
  const ep::ExecutionProviderDispatch d = ep::CUDA().with_device_id(0).with_memory_limit(1 << 20).with_conv_algo_search("DEFAULT").with_tf32(false).build();
  EXPECT_NO_THROW(effective_options("cuda", schema, d.options()));
}

TEST(CudaArena, ReusesBlocksAndHonoursTheLimit) {
  int live = 0;
  auto raw_alloc = [&](size_t n) -> void* {
    ++live;
    return std::malloc(n);
  };
  auto raw_free = [&](void* p) {
    --live;
    std::free(p);
  };
  {
    cuda::Arena a(raw_alloc, raw_free, 1 << 20, cuda::ArenaExtend::kNextPowerOfTwo);
    EXPECT_EQ(a.block_size(1), 256u);
    EXPECT_EQ(a.block_size(1000), 1024u);
    void* p = a.allocate(1000);
    EXPECT_EQ(a.in_use(), 1024u);
    a.release(p);
    EXPECT_EQ(a.in_use(), 0u);
    void* q = a.allocate(900);  // same class: the cached block comes back
    EXPECT_EQ(q, p);
    EXPECT_EQ(live, 1);
    a.release(q);
    // Over the limit: cached blocks are returned first, then the request fails with a reason.
    void* big = a.allocate(600 << 10);
    EXPECT_EQ(live, 1);  // the 1 KiB block was trimmed to make room
    try {
      a.allocate(600 << 10);
      ADD_FAILURE() << "limit not enforced";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kRuntime);
      EXPECT_NE(std::string(e.what()).find("out of device memory"), std::string::npos) << e.what();
    }
    a.release(big);
    EXPECT_EQ(a.reserved(), a.block_size(600 << 10));
  }
  EXPECT_EQ(live, 0);
  cuda::Arena same([](size_t n) { return std::malloc(n); }, [](void* p) { std::free(p); }, 0, cuda::ArenaExtend::kSameAsRequested);
  EXPECT_EQ(same.block_size(1000), 1024u);
  EXPECT_EQ(same.block_size(1025), 1280u);
  // A device that has no memory left: the error says so.
  cuda::Arena none([](size_t) -> void* { return nullptr; }, [](void*) {}, 0, cuda::ArenaExtend::kNextPowerOfTwo);
  EXPECT_THROW(none.allocate(10), Error);
}

// ---------------------------------------------------------------------------------------------
// Availability, module loading and registration (GPU or not)

TEST(CudaAvailability, ReportsEachLevelWithAPreciseReason) {
  const ep::Availability& a = cuda_availability();
#ifdef ONYX_TEST_CUDA_BUILT
  EXPECT_TRUE(a.built);
  EXPECT_TRUE(a.loadable) << a.reason;
  EXPECT_NE(a.version.find("cuDNN 9"), std::string::npos) << a.version;
#endif
  if (!a.built) {
    EXPECT_NE(a.reason.find("ONYX_EP_CUDA"), std::string::npos) << a.reason;
    return;
  }
  if (a.usable) return;
  // Not usable: one of the reasons the EP knows, never a generic one.
  const bool precise = a.reason.find("no CUDA driver") == 0 || a.reason.find("CUDA driver too old") == 0 ||
                       a.reason.find("no CUDA device") == 0 || a.reason.find("cuDNN") == 0 ||
                       a.reason.find("CUDA runtime error") == 0 || a.reason.find("could not be loaded") != std::string::npos;
  EXPECT_TRUE(precise) << a.reason;
  std::printf("[ cuda     ] not usable here: %s\n", a.reason.c_str());
}

#if defined(ONYX_TEST_FAKE_CUDA_DRIVER_DIR) && defined(ONYX_TEST_CLI)
TEST(CudaAvailability, DriverTooOldIsNamed) {
  // A stand-in libcuda.so.1 that reports CUDA 12.4, found first by `onyx providers`.
  if (cuda_usable()) GTEST_SKIP() << "a CUDA device is present";
  const std::string cmd = std::string("LD_LIBRARY_PATH=") + ONYX_TEST_FAKE_CUDA_DRIVER_DIR + " " + ONYX_TEST_CLI + " providers 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), f)) out.append(buf, n);
  EXPECT_EQ(pclose(f), 0) << out;
  EXPECT_NE(out.find("CUDA driver too old: it supports CUDA 12.4, this EP was built with CUDA 13."), std::string::npos) << out;
}
#endif

TEST(CudaAvailability, OptionSchemaFromTheModule) {
  REQUIRE_CUDA_MODULE();
  const auto schema = ep::CUDA().option_schema();
  const auto mine = cuda::option_schema();
  ASSERT_EQ(schema.size(), mine.size());
  for (size_t i = 0; i < schema.size(); ++i) {
    EXPECT_EQ(schema[i].key, mine[i].key);
    EXPECT_EQ(schema[i].default_value, mine[i].default_value);
  }
}

TEST(CudaAvailability, SkippedWithTheReasonWhenNotUsable) {
  if (cuda_usable()) GTEST_SKIP() << "a CUDA device is present";
  GraphSpec g = single("Relu", {{"x", Shape{2, 3}}}, Shape{2, 3});
  const std::string m = model_bytes(g);
  Session s = Session::builder()
                  .with_no_environment_execution_providers()
                  .with_execution_providers({ep::CUDA().build()})
                  .commit_from_memory(m.data(), m.size());
  ASSERT_FALSE(s.registration().empty());
  EXPECT_EQ(s.registration()[0].name, "cuda");
  EXPECT_EQ(s.registration()[0].outcome, EpRegistration::Outcome::kSkipped);
  EXPECT_NE(s.registration()[0].reason.find(cuda_availability().reason), std::string::npos) << s.registration()[0].reason;
  EXPECT_EQ(s.placement().nodes[0].ep, "cpu");
  try {
    cuda_session(m);
    ADD_FAILURE() << "error_on_failure did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotAvailable);
    EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
  }
  onyx::SessionBuilder b;
  EXPECT_THROW(ep::CUDA().register_with(b), Error);
}

// ---------------------------------------------------------------------------------------------
// On a GPU: every family against the CPU EP

TEST(CudaGpu, ElementwiseBroadcastAndActivations) {
  REQUIRE_CUDA();
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "PRelu"}) {
    SCOPED_TRACE(op);
    check(single(op, {{"a", Shape{2, 3, 5}}, {"b", Shape{3, 1}}}, Shape{2, 3, 5}));
    check(single(op, {{"a", Shape{7}}, {"b", Shape{7}}}, Shape{7}));
  }
  check(single("Pow", {{"a", Shape{4, 5}}, {"b", Shape{5}}}, Shape{4, 5}), 17, nullptr, 1e-3);
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Erf", "Floor", "Ceil", "Softplus", "Softsign", "HardSwish",
                         "Sin", "Cos", "Sign", "Round"}) {
    SCOPED_TRACE(op);
    check(single(op, {{"x", Shape{3, 17}}}, Shape{3, 17}), 17, nullptr, 1e-4);
  }
  check(single("LeakyRelu", {{"x", Shape{9}}}, Shape{9}, {attr_float("alpha", 0.3f)}));
  check(single("Elu", {{"x", Shape{9}}}, Shape{9}, {attr_float("alpha", 0.7f)}));
  check(single("HardSigmoid", {{"x", Shape{9}}}, Shape{9}, {attr_float("alpha", 0.3f), attr_float("beta", 0.4f)}));
  check(single("Gelu", {{"x", Shape{4, 9}}}, Shape{4, 9}), 20, nullptr, 1e-4);
  check(single("Gelu", {{"x", Shape{4, 9}}}, Shape{4, 9}, {attr_string("approximate", "tanh")}), 20, nullptr, 1e-4);
  // Sqrt/Log on positive inputs.
  for (const char* op : {"Sqrt", "Log", "Reciprocal"}) {
    GraphSpec g = single(op, {{"x", Shape{5, 6}}}, Shape{5, 6});
    Inputs in{{"x", Value(random_tensor(Shape{5, 6}, 3, 0.5f, 2.f))}};
    check(g, 17, &in);
  }
  // Clip with constant bounds (read on the host) and comparisons to bool.
  GraphSpec clip = single("Clip", {{"x", Shape{10}}}, Shape{10});
  clip.initializers.emplace_back("lo", Tensor::from_vector<float>(Shape{}, {-0.25f}));
  clip.initializers.emplace_back("hi", Tensor::from_vector<float>(Shape{}, {0.5f}));
  clip.nodes[0].inputs = {"x", "lo", "hi"};
  check(clip);
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    check(single(op, {{"a", Shape{3, 4}}, {"b", Shape{4}}}, Shape{3, 4}, {}, DType::kBool));
}

TEST(CudaGpu, VariadicSumMeanMaxMin) {
  REQUIRE_CUDA();
  // Broadcast across three and four inputs, and one input alone.
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    SCOPED_TRACE(op);
    check(single(op, {{"a", Shape{2, 3, 4}}, {"b", Shape{4}}, {"c", Shape{3, 1}}}, Shape{2, 3, 4}), 13);
    check(single(op, {{"a", Shape{5}}, {"b", Shape{5}}, {"c", Shape{1}}, {"d", Shape{5}}}, Shape{5}), 13);
    check(single(op, {{"a", Shape{2, 3}}}, Shape{2, 3}), 13);
  }
}

TEST(CudaGpu, WhereCastExpand) {
  REQUIRE_CUDA();
  GraphSpec g;
  g.inputs = {{"a", DType::kFloat, {3, 4}}, {"b", DType::kFloat, {4}}};
  g.nodes = {node("Less", {"a", "b"}, {"c"}), node("Where", {"c", "a", "b"}, {"w"}), node("Cast", {"c"}, {"f"}, {attr_int("to", 1)}),
             node("Add", {"w", "f"}, {"y"})};
  g.outputs = {{"y", DType::kFloat, {3, 4}}};
  check(g);
  GraphSpec e = single("Expand", {{"x", Shape{3, 1}}}, Shape{2, 3, 4});
  e.initializers.emplace_back("shape", Tensor::from_vector<int64_t>(Shape{3}, {2, 3, 4}));
  e.nodes[0].inputs = {"x", "shape"};
  check(e);
  GraphSpec c = single("Cast", {{"x", Shape{6}}}, Shape{6}, {attr_int("to", static_cast<int64_t>(DType::kInt32))}, DType::kInt32);
  Inputs in{{"x", Value(random_tensor(Shape{6}, 5, -10.f, 10.f))}};
  check(c, 17, &in);
}

TEST(CudaGpu, DataMovement) {
  REQUIRE_CUDA();
  check(single("Transpose", {{"x", Shape{2, 3, 4, 5}}}, Shape{4, 2, 5, 3}, {attr_ints("perm", {2, 0, 3, 1})}));
  check(single("Concat", {{"a", Shape{2, 3, 4}}, {"b", Shape{2, 5, 4}}}, Shape{2, 8, 4}, {attr_int("axis", 1)}));
  GraphSpec s = single("Slice", {{"x", Shape{6, 7}}}, Shape{2, 3});
  s.initializers.emplace_back("st", Tensor::from_vector<int64_t>(Shape{2}, {5, 1}));
  s.initializers.emplace_back("en", Tensor::from_vector<int64_t>(Shape{2}, {1, 7}));
  s.initializers.emplace_back("ax", Tensor::from_vector<int64_t>(Shape{2}, {0, 1}));
  s.initializers.emplace_back("sp", Tensor::from_vector<int64_t>(Shape{2}, {-2, 2}));
  s.nodes[0].inputs = {"x", "st", "en", "ax", "sp"};
  check(s);
  GraphSpec gt = single("Gather", {{"x", Shape{5, 4}}}, Shape{2, 3, 4}, {attr_int("axis", 0)});
  gt.initializers.emplace_back("i", Tensor::from_vector<int64_t>(Shape{2, 3}, {0, 4, -1, 2, 2, 1}));
  gt.nodes[0].inputs = {"x", "i"};
  check(gt);
  GraphSpec sp;
  sp.inputs = {{"x", DType::kFloat, {4, 6}}};
  sp.nodes = {node("Split", {"x"}, {"a", "b"}, {attr_int("axis", 1), attr_int("num_outputs", 2)})};
  sp.outputs = {{"a", DType::kFloat, {4, 3}}, {"b", DType::kFloat, {4, 3}}};
  check(sp, 18);
  // Pad in every mode (wrap since opset 19), pads longer than a dim, a crop, axes.
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    SCOPED_TRACE(mode);
    GraphSpec p = single("Pad", {{"x", Shape{2, 3, 4}}}, Shape{3, 9, 9}, {attr_string("mode", mode)});
    p.initializers.emplace_back("p", Tensor::from_vector<int64_t>(Shape{6}, {1, 4, 2, 0, 2, 3}));
    p.initializers.emplace_back("v", Tensor::from_vector<float>(Shape{}, {1.5f}));
    p.nodes[0].inputs = {"x", "p", "v"};
    check(p, 19);
  }
  GraphSpec pa = single("Pad", {{"x", Shape{2, 3, 4}}}, Shape{2, 3, 7}, {attr_string("mode", "reflect")});
  pa.initializers.emplace_back("p", Tensor::from_vector<int64_t>(Shape{2}, {-1, 4}));
  pa.initializers.emplace_back("a", Tensor::from_vector<int64_t>(Shape{1}, {-1}));
  pa.nodes[0].inputs = {"x", "p", "", "a"};
  check(pa, 18);
  GraphSpec tl = single("Tile", {{"x", Shape{2, 3, 4}}}, Shape{6, 3, 8});
  tl.initializers.emplace_back("r", Tensor::from_vector<int64_t>(Shape{3}, {3, 1, 2}));
  tl.nodes[0].inputs = {"x", "r"};
  check(tl, 13);
  check(single("DepthToSpace", {{"x", Shape{2, 8, 3, 2}}}, Shape{2, 2, 6, 4}, {attr_int("blocksize", 2), attr_string("mode", "CRD")}), 13);
  check(single("SpaceToDepth", {{"x", Shape{2, 3, 6, 4}}}, Shape{2, 12, 3, 2}, {attr_int("blocksize", 2)}), 13);
  // Resize: nearest (scales), linear (sizes), cubic with antialias down-scaling.
  GraphSpec rz = single("Resize", {{"x", Shape{1, 2, 6, 5}}}, Shape{1, 2, 12, 7}, {attr_string("mode", "nearest")});
  rz.initializers.emplace_back("sc", Tensor::from_vector<float>(Shape{4}, {1, 1, 2.0f, 1.5f}));
  rz.nodes[0].inputs = {"x", "", "sc"};
  check(rz, 19);
  GraphSpec rl = single("Resize", {{"x", Shape{2, 3, 7, 9}}}, Shape{2, 3, 10, 4}, {attr_string("mode", "linear")});
  rl.initializers.emplace_back("sz", Tensor::from_vector<int64_t>(Shape{4}, {2, 3, 10, 4}));
  rl.nodes[0].inputs = {"x", "", "", "sz"};
  check(rl, 19);
  GraphSpec rc = single("Resize", {{"x", Shape{1, 1, 12, 12}}}, Shape{1, 1, 5, 6}, {attr_string("mode", "cubic"), attr_int("antialias", 1)});
  rc.initializers.emplace_back("sc", Tensor::from_vector<float>(Shape{4}, {1, 1, 0.45f, 0.5f}));
  rc.nodes[0].inputs = {"x", "", "sc"};
  check(rc, 19);
  GraphSpec ge = single("GatherElements", {{"x", Shape{4, 5}}}, Shape{3, 5}, {attr_int("axis", 0)});
  ge.initializers.emplace_back("i", Tensor::from_vector<int64_t>(Shape{3, 5}, {0, 1, 2, 3, -1, 3, 2, 1, 0, -4, 1, 1, 1, 1, 1}));
  ge.nodes[0].inputs = {"x", "i"};
  check(ge, 13);
  GraphSpec cu = single("CumSum", {{"x", Shape{3, 6, 2}}}, Shape{3, 6, 2}, {attr_int("reverse", 1)});
  cu.initializers.emplace_back("a", Tensor::from_vector<int64_t>(Shape{}, {1}));
  cu.nodes[0].inputs = {"x", "a"};
  check(cu, 14);
  GraphSpec up = single("Upsample", {{"x", Shape{1, 2, 3, 4}}}, Shape{1, 2, 6, 8}, {attr_string("mode", "linear")});
  up.initializers.emplace_back("sc", Tensor::from_vector<float>(Shape{4}, {1, 1, 2, 2}));
  up.nodes[0].inputs = {"x", "sc"};
  check(up, 9);
  GraphSpec r = single("Reshape", {{"x", Shape{2, 6}}}, Shape{3, 4});
  r.initializers.emplace_back("s", Tensor::from_vector<int64_t>(Shape{2}, {3, 4}));
  r.nodes[0].inputs = {"x", "s"};
  check(r);
}

TEST(CudaGpu, SoftmaxLayerNormReduce) {
  REQUIRE_CUDA();
  check(single("Softmax", {{"x", Shape{3, 5, 7}}}, Shape{3, 5, 7}, {attr_int("axis", -1)}));
  check(single("Softmax", {{"x", Shape{3, 5, 7}}}, Shape{3, 5, 7}, {attr_int("axis", 1)}));
  check(single("LogSoftmax", {{"x", Shape{4, 33}}}, Shape{4, 33}));
  check(single("Softmax", {{"x", Shape{3, 5, 7}}}, Shape{3, 5, 7}, {attr_int("axis", 1)}), 11);
  GraphSpec ln = single("LayerNormalization", {{"x", Shape{2, 3, 40}}}, Shape{2, 3, 40}, {attr_float("epsilon", 1e-5f)});
  ln.initializers.emplace_back("s", random_tensor(Shape{40}, 9));
  ln.initializers.emplace_back("b", random_tensor(Shape{40}, 10));
  ln.nodes[0].inputs = {"x", "s", "b"};
  check(ln, 17, nullptr, 1e-3);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    GraphSpec g = single(op, {{"x", Shape{3, 4, 5}}}, Shape{3, 1, 5}, {attr_int("keepdims", 1)});
    g.initializers.emplace_back("axes", Tensor::from_vector<int64_t>(Shape{1}, {1}));
    g.nodes[0].inputs = {"x", "axes"};
    check(g, 18, nullptr, 1e-4);
  }
  check(single("ReduceMean", {{"x", Shape{2, 3, 4}}}, Shape{2}, {attr_ints("axes", {1, 2}), attr_int("keepdims", 0)}), 13);
  check(single("ArgMax", {{"x", Shape{3, 8}}}, Shape{3, 1}, {attr_int("axis", 1)}, DType::kInt64));
}

TEST(CudaGpu, MatMulAndGemm) {
  REQUIRE_CUDA();
  check(single("MatMul", {{"a", Shape{5, 7}}, {"b", Shape{7, 3}}}, Shape{5, 3}));
  check(single("MatMul", {{"a", Shape{2, 3, 5, 7}}, {"b", Shape{7, 4}}}, Shape{2, 3, 5, 4}));
  check(single("MatMul", {{"a", Shape{2, 5, 7}}, {"b", Shape{2, 7, 4}}}, Shape{2, 5, 4}));
  check(single("MatMul", {{"a", Shape{1, 5, 7}}, {"b", Shape{3, 7, 4}}}, Shape{3, 5, 4}));
  check(single("MatMul", {{"a", Shape{7}}, {"b", Shape{7, 4}}}, Shape{4}));
  GraphSpec g = single("Gemm", {{"a", Shape{6, 5}}}, Shape{6, 4}, {attr_int("transB", 1)});
  g.initializers.emplace_back("w", random_tensor(Shape{4, 5}, 11));
  g.initializers.emplace_back("c", random_tensor(Shape{4}, 12));
  g.nodes[0].inputs = {"a", "w", "c"};
  check(g);
  GraphSpec h = single("Gemm", {{"a", Shape{5, 6}}, {"b", Shape{5, 4}}, {"c", Shape{6, 1}}}, Shape{6, 4},
                       {attr_int("transA", 1), attr_float("alpha", 0.5f), attr_float("beta", 2.f)});
  check(h);
}

namespace {

/// `t` (float32) rounded to float16 / bfloat16.
Tensor to_16(const Tensor& t, DType dt) {
  Tensor h(dt, t.shape());
  auto* p = static_cast<uint16_t*>(h.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = static_cast<float>(t.element_as_double(i));
    p[i] = dt == DType::kFloat16 ? Float16::from_float(v) : BFloat16::from_float(v);
  }
  return h;
}

/// The float32 graph with its float inputs, outputs and initializers as float16 / bfloat16.
GraphSpec as_16(GraphSpec g, DType dt) {
  for (auto& v : g.inputs)
    if (v.dtype == DType::kFloat) v.dtype = dt;
  for (auto& v : g.outputs)
    if (v.dtype == DType::kFloat) v.dtype = dt;
  for (auto& [name, t] : g.initializers)
    if (t.dtype() == DType::kFloat) t = to_16(t, dt);
  return g;
}

/// The 16-bit graphs of CudaGpu.HalfAndBFloat16 (opset 20, 22 for bfloat16: Conv and pooling take it
/// from there), each run on the CPU EP first, so their validity is checked without a GPU too.
std::vector<std::pair<std::string, GraphSpec>> half_graphs(DType dt) {
  std::vector<std::pair<std::string, GraphSpec>> gs;
  gs.emplace_back("MatMul", single("MatMul", {{"a", Shape{2, 5, 24}}, {"b", Shape{24, 16}}}, Shape{2, 5, 16}));
  gs.emplace_back("batched MatMul", single("MatMul", {{"a", Shape{2, 5, 8}}, {"b", Shape{2, 8, 4}}}, Shape{2, 5, 4}));
  GraphSpec gemm = single("Gemm", {{"a", Shape{6, 32}}}, Shape{6, 16}, {attr_int("transB", 1)});
  gemm.initializers.emplace_back("w", random_tensor(Shape{16, 32}, 11));
  gemm.initializers.emplace_back("c", random_tensor(Shape{16}, 12));
  gemm.nodes[0].inputs = {"a", "w", "c"};
  gs.emplace_back("Gemm", gemm);
  gs.emplace_back("Conv", conv_graph("Conv", {2, 8, 9, 9}, {16, 8, 3, 3}, true, {attr_ints("pads", {1, 1, 1, 1})}, {2, 16, 9, 9}));
  gs.emplace_back("Conv, asymmetric pads",
                  conv_graph("Conv", {1, 4, 8, 8}, {8, 4, 3, 3}, true, {attr_ints("pads", {0, 2, 1, 0})}, {1, 8, 7, 8}));
  gs.emplace_back("ConvTranspose", conv_graph("ConvTranspose", {1, 8, 5, 5}, {8, 4, 3, 3}, true,
                                              {attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})}, {1, 4, 9, 9}));
  gs.emplace_back("MaxPool", single("MaxPool", {{"x", Shape{1, 3, 9, 9}}}, Shape{1, 3, 4, 4}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2})}));
  gs.emplace_back("AveragePool", single("AveragePool", {{"x", Shape{1, 3, 9, 9}}}, Shape{1, 3, 5, 5},
                                        {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})}));
  gs.emplace_back("GlobalAveragePool", single("GlobalAveragePool", {{"x", Shape{2, 3, 7, 7}}}, Shape{2, 3, 1, 1}));
  gs.emplace_back("BatchNormalization", batch_norm_graph());
  GraphSpec ln = single("LayerNormalization", {{"x", Shape{2, 3, 40}}}, Shape{2, 3, 40}, {attr_float("epsilon", 1e-5f)});
  ln.initializers.emplace_back("s", random_tensor(Shape{40}, 9));
  ln.initializers.emplace_back("b", random_tensor(Shape{40}, 10));
  ln.nodes[0].inputs = {"x", "s", "b"};
  gs.emplace_back("LayerNormalization", ln);
  gs.emplace_back("Softmax", single("Softmax", {{"x", Shape{3, 5, 70}}}, Shape{3, 5, 70}, {attr_int("axis", -1)}));
  gs.emplace_back("Add", single("Add", {{"a", Shape{2, 3, 4}}, {"b", Shape{3, 1}}}, Shape{2, 3, 4}));
  gs.emplace_back("Mean", single("Mean", {{"a", Shape{2, 3}}, {"b", Shape{3}}, {"c", Shape{2, 1}}}, Shape{2, 3}));
  GraphSpec in = single("InstanceNormalization", {{"x", Shape{2, 3, 4, 5}}}, Shape{2, 3, 4, 5});
  in.initializers.emplace_back("s", random_tensor(Shape{3}, 13));
  in.initializers.emplace_back("b", random_tensor(Shape{3}, 14));
  in.nodes[0].inputs = {"x", "s", "b"};
  gs.emplace_back("InstanceNormalization", in);
  gs.emplace_back("Gelu", single("Gelu", {{"x", Shape{4, 33}}}, Shape{4, 33}));
  GraphSpec rm = single("ReduceMean", {{"x", Shape{3, 4, 5}}}, Shape{3, 1, 5}, {attr_int("keepdims", 1)});
  rm.initializers.emplace_back("axes", Tensor::from_vector<int64_t>(Shape{1}, {1}));
  rm.nodes[0].inputs = {"x", "axes"};
  gs.emplace_back("ReduceMean", rm);
  for (auto& [name, g] : gs) g = as_16(std::move(g), dt);
  return gs;
}

/// The CUDA EP's claim question for the one node of `g` (its types, constants and attributes).
ClaimCase claim_of(const GraphSpec& g, int64_t opset) {
  const NodeSpec& nd = g.nodes[0];
  std::vector<TypeInfo> ins, outs;
  for (const std::string& nm : nd.inputs) {
    for (const auto& v : g.inputs)
      if (v.name == nm) ins.push_back(TypeInfo::tensor(v.dtype, Shape(v.dims)));
    for (const auto& [inm, t] : g.initializers)
      if (inm == nm) ins.push_back(TypeInfo::tensor(t.dtype(), t.shape()));
  }
  for (const auto& v : g.outputs) outs.push_back(TypeInfo::tensor(v.dtype, Shape(v.dims)));
  ClaimCase c(nd.op, ins, outs, static_cast<int>(opset));
  for (size_t i = 0; i < nd.inputs.size(); ++i)
    for (const auto& [inm, t] : g.initializers)
      if (inm == nd.inputs[i]) {
        c.constant(i);
        c.graph.values[c.n.inputs[i]].initializer = t;
      }
  for (const AttrSpec& a : nd.attrs) {
    Attribute at;
    at.name = a.name;
    if (a.kind == AttrSpec::kInt) at.type = AttrType::kInt, at.i = a.i;
    else if (a.kind == AttrSpec::kFloat) at.type = AttrType::kFloat, at.f = a.f;
    else if (a.kind == AttrSpec::kInts) at.type = AttrType::kInts, at.ints = a.ints;
    else if (a.kind == AttrSpec::kFloats) at.type = AttrType::kFloats, at.floats = a.floats;
    else if (a.kind == AttrSpec::kString) at.type = AttrType::kString, at.s = a.s;
    else continue;
    c.n.attrs.push_back(at);
  }
  return c;
}

Inputs half_inputs(const GraphSpec& g, DType dt) {
  Inputs in = random_inputs(g);
  for (auto& [name, v] : in) v = to_16(v.tensor(), dt);
  return in;
}

}  // namespace

TEST(CudaGpu, HalfAndBFloat16) {
  // float16 / bfloat16 graphs on the CUDA EP (tensor cores through cuBLASLt and cuDNN, onyx's
  // kernels in fp32 registers) against the CPU EP on the same graphs.
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const int64_t opset = dt == DType::kBFloat16 ? 22 : 20;
    const double rtol = dt == DType::kBFloat16 ? 3e-2 : 1e-2;
    for (const auto& [name, g] : half_graphs(dt)) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + name);
      const std::string m = model_bytes(g, opset);
      const Inputs in = half_inputs(g, dt);
      const auto want = cpu_session(m).run(in);
      ASSERT_EQ(want[0].tensor().dtype(), dt);
      Decline why;  // the EP takes the node (the GPU session below places every node strictly)
      EXPECT_TRUE(claim_of(g, opset).claim(&why)) << why.message;
      if (!cuda_usable()) continue;  // the graphs are checked; the comparison needs a GPU
      const auto got = cuda_session(m).run(in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(close(got[k], want[k], rtol, 1e-2)) << "output " << k;
    }
  }
  REQUIRE_CUDA();
}

TEST(CudaGpu, ConvPoolBatchNorm) {
  REQUIRE_CUDA();
  for (const char* mode : {"EXHAUSTIVE", "HEURISTIC", "DEFAULT"}) {
    SCOPED_TRACE(mode);
    GraphSpec g = conv_graph("Conv", {2, 6, 11, 9}, {6, 2, 3, 3}, true, {attr_int("group", 3), attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 1})},
                       {2, 6, 6, 9});
    const std::string m = model_bytes(g);
    Session gpu = cuda_session(m, true, ep::CUDA().with_conv_algo_search(mode));
    Session cpu = cpu_session(m);
    const Inputs in = random_inputs(g);
    EXPECT_TRUE(close(gpu.run(in)[0], cpu.run(in)[0], 1e-4));
  }
  check(conv_graph("Conv", {1, 3, 13, 10}, {7, 3, 3, 2}, false, {attr_ints("dilations", {2, 3}), attr_ints("pads", {2, 1, 2, 1})}, {1, 7, 13, 9}));
  check(conv_graph("Conv", {2, 3, 17}, {4, 3, 5}, true, {attr_ints("pads", {2, 2}), attr_ints("strides", {2})}, {2, 4, 9}));
  check(conv_graph("ConvTranspose", {1, 4, 5, 5}, {4, 3, 3, 3}, true, {attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})}, {1, 3, 9, 9}));
  // Pads cuDNN cannot express: asymmetric, and SAME_UPPER / SAME_LOWER with a stride.
  check(conv_graph("Conv", {2, 3, 10, 9}, {5, 3, 3, 3}, true, {attr_ints("pads", {0, 2, 1, 0})}, {2, 5, 9, 9}));
  check(conv_graph("Conv", {1, 4, 8, 8}, {6, 4, 3, 3}, true, {attr_string("auto_pad", "SAME_UPPER"), attr_ints("strides", {2, 2})}, {1, 6, 4, 4}));
  check(conv_graph("Conv", {1, 4, 7, 8}, {6, 4, 4, 4}, false, {attr_string("auto_pad", "SAME_LOWER")}, {1, 6, 7, 8}));
  check(single("MaxPool", {{"x", Shape{1, 3, 9, 9}}}, Shape{1, 3, 4, 4}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2})}));
  // Pooling cuDNN cannot express (onyx's direct kernel): ceil_mode, dilations, asymmetric and
  // SAME pads, MaxPool's Indices.
  check(single("MaxPool", {{"x", Shape{2, 3, 9, 10}}}, Shape{2, 3, 4, 5},
               {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)}));
  check(single("AveragePool", {{"x", Shape{1, 2, 8, 8}}}, Shape{1, 2, 8, 8},
               {attr_ints("kernel_shape", {3, 2}), attr_ints("pads", {0, 1, 2, 0}), attr_int("count_include_pad", 1)}));
  check(single("MaxPool", {{"x", Shape{1, 2, 11, 12}}}, Shape{1, 2, 6, 4},
               {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 3}), attr_string("auto_pad", "SAME_UPPER")}));
  GraphSpec mi;
  mi.inputs = {{"x", DType::kFloat, {1, 2, 11, 12}}};
  mi.nodes = {node("MaxPool", {"x"}, {"y", "i"}, {attr_ints("kernel_shape", {2, 3}), attr_ints("dilations", {2, 2}), attr_ints("pads", {1, 0, 0, 2}),
                                                  attr_int("storage_order", 1)})};
  mi.outputs = {{"y", DType::kFloat, {1, 2, 10, 10}}, {"i", DType::kInt64, {1, 2, 10, 10}}};
  check(mi, 12);
  check(single("AveragePool", {{"x", Shape{1, 3, 9, 9}}}, Shape{1, 3, 5, 5},
               {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})}));
  check(single("AveragePool", {{"x", Shape{1, 3, 9, 9}}}, Shape{1, 3, 5, 5},
               {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1}), attr_int("count_include_pad", 1)}));
  check(single("GlobalAveragePool", {{"x", Shape{2, 5, 7, 6}}}, Shape{2, 5, 1, 1}));
  check(single("GlobalMaxPool", {{"x", Shape{2, 5, 7, 6}}}, Shape{2, 5, 1, 1}));
  check(single("GlobalLpPool", {{"x", Shape{2, 5, 7, 6}}}, Shape{2, 5, 1, 1}, {attr_int("p", 2)}));
  check(single("LpPool", {{"x", Shape{1, 3, 9, 8}}}, Shape{1, 3, 5, 4},
               {attr_ints("kernel_shape", {3, 2}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 0, 1, 1}), attr_int("ceil_mode", 1),
                attr_int("p", 3)}),
        18);
  GraphSpec inorm = single("InstanceNormalization", {{"x", Shape{2, 4, 6, 5}}}, Shape{2, 4, 6, 5}, {attr_float("epsilon", 1e-3f)});
  inorm.initializers.emplace_back("s", random_tensor(Shape{4}, 5));
  inorm.initializers.emplace_back("b", random_tensor(Shape{4}, 6));
  inorm.nodes[0].inputs = {"x", "s", "b"};
  check(inorm);
  for (int64_t opset : {18, 21}) {
    GraphSpec gn = single("GroupNormalization", {{"x", Shape{2, 6, 5, 4}}}, Shape{2, 6, 5, 4}, {attr_int("num_groups", 3)});
    gn.initializers.emplace_back("s", random_tensor(Shape{opset == 18 ? 3 : 6}, 5));
    gn.initializers.emplace_back("b", random_tensor(Shape{opset == 18 ? 3 : 6}, 6));
    gn.nodes[0].inputs = {"x", "s", "b"};
    check(gn, opset);
  }
  check(batch_norm_graph(), 15);
}

TEST(CudaGpu, ChannelsLast) {
  REQUIRE_CUDA();
  // prefer_nhwc: every layout-sensitive node of the small CNN runs on CUDA in its onyx.nhwc form;
  // three Transposes are left (into the chain, out to a side output, out before Flatten).
  const std::string m = model_bytes(channels_last_cnn_graph());
  Session gpu = cuda_session(m, true, ep::CUDA().with_prefer_nhwc(true));
  Session cpu = cpu_session(m);
  int forms = 0, transposes = 0;
  for (const auto& n : gpu.placement().nodes) {
    EXPECT_EQ(n.ep, "cuda") << n.name;
    forms += n.domain == "onyx.nhwc";
    transposes += n.op_type == "Transpose";
  }
  EXPECT_EQ(forms, 7);
  EXPECT_EQ(transposes, 3);
  const Inputs in = random_inputs(channels_last_cnn_graph(), 3);
  const auto want = cpu.run(in);
  for (int pass = 0; pass < 2; ++pass) {
    const auto got = gpu.run(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(close(got[k], want[k], 1e-4)) << "run " << pass << ", output " << k;
  }
  // Single ops against the CPU EP, each run channels-last.
  auto check_nhwc = [](const GraphSpec& g, int64_t opset = 17) {
    const std::string mm = model_bytes(g, opset);
    for (const char* mode : {"EXHAUSTIVE", "DEFAULT"}) {
      Session s = cuda_session(mm, true, ep::CUDA().with_prefer_nhwc(true).with_conv_algo_search(mode));
      bool last = false;
      for (const auto& n : s.placement().nodes) last |= n.domain == "onyx.nhwc";
      EXPECT_TRUE(last) << g.nodes[0].op << " did not run channels-last";
      const Inputs gi = random_inputs(g);
      EXPECT_TRUE(close(s.run(gi)[0], cpu_session(mm).run(gi)[0], 1e-4)) << g.nodes[0].op << " " << mode;
    }
  };
  check_nhwc(conv_graph("Conv", {2, 6, 11, 9}, {6, 2, 3, 3}, true, {attr_int("group", 3), attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 1})},
                  {2, 6, 6, 9}));
  check_nhwc(conv_graph("Conv", {1, 3, 13, 10}, {7, 3, 3, 2}, false, {attr_ints("dilations", {2, 3}), attr_ints("pads", {2, 1, 2, 1})}, {1, 7, 13, 9}));
  check_nhwc(conv_graph("Conv", {2, 3, 10, 9}, {5, 3, 3, 3}, true, {attr_ints("pads", {0, 2, 1, 0})}, {2, 5, 9, 9}));  // asymmetric
  check_nhwc(conv_graph("Conv", {1, 4, 8, 8}, {6, 4, 3, 3}, true, {attr_string("auto_pad", "SAME_UPPER"), attr_ints("strides", {2, 2})}, {1, 6, 4, 4}));
  check_nhwc(conv_graph("ConvTranspose", {1, 4, 5, 5}, {4, 3, 3, 3}, true, {attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})},
                  {1, 3, 9, 9}));
  GraphSpec fused = conv_graph("Conv", {1, 4, 6, 6}, {8, 4, 3, 3}, true, {attr_ints("pads", {1, 1, 1, 1})}, {1, 8, 6, 6});
  fused.nodes[0].outputs = {"c"};
  fused.nodes.push_back(node("Relu", {"c"}, {"y"}));  // FusedConv, then channels-last
  check_nhwc(fused);
  check_nhwc(single("MaxPool", {{"x", Shape{1, 3, 9, 9}}}, Shape{1, 3, 4, 4}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2})}));
  check_nhwc(single("AveragePool", {{"x", Shape{1, 3, 9, 9}}}, Shape{1, 3, 5, 5},
                    {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1}), attr_int("count_include_pad", 1)}));
  check_nhwc(single("GlobalMaxPool", {{"x", Shape{2, 5, 7, 6}}}, Shape{2, 5, 1, 1}));
  check_nhwc(batch_norm_graph(), 15);
}

TEST(CudaGpu, CudaGraphs) {
  REQUIRE_CUDA();
  // enable_cuda_graph: the first run warms up, the second is recorded and replayed, later ones
  // replay; each run with new inputs must match the CPU EP. Graphs that exercise cuDNN (and its
  // channels-last form), cuBLASLt, per-run temporaries (Mean's scale, Resize's tables, the zero
  // border of asymmetric pads) and the fused attention.
  auto replays_match = [](const GraphSpec& g, ep::CUDA spec, int64_t opset = 17) {
    const std::string m = model_bytes(g, opset);
    Session gpu = cuda_session(m, true, spec.with_cuda_graph(true));
    Session cpu = cpu_session(m);
    for (uint32_t run = 0; run < 5; ++run) {
      const Inputs in = random_inputs(g, 10 + run * 7);
      const auto a = gpu.run(in);
      const auto b = cpu.run(in);
      ASSERT_EQ(a.size(), b.size());
      for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(close(a[k], b[k], 1e-4)) << "run " << run << ", output " << k;
    }
  };
  replays_match(channels_last_cnn_graph(), ep::CUDA());
  replays_match(channels_last_cnn_graph(), ep::CUDA().with_prefer_nhwc(true));
  replays_match(conv_graph("Conv", {2, 3, 10, 9}, {5, 3, 3, 3}, true, {attr_ints("pads", {0, 2, 1, 0})}, {2, 5, 9, 9}), ep::CUDA());
  replays_match(single("MatMul", {{"a", Shape{3, 4, 5}}, {"b", Shape{3, 5, 6}}}, Shape{3, 4, 6}), ep::CUDA());
  replays_match(single("Mean", {{"a", Shape{2, 3}}, {"b", Shape{3}}, {"c", Shape{2, 1}}}, Shape{2, 3}), ep::CUDA());
  GraphSpec resize = single("Resize", {{"x", Shape{1, 2, 4, 5}}}, Shape{1, 2, 8, 10}, {attr_string("mode", "linear")});
  resize.initializers.emplace_back("sc", Tensor::from_vector<float>(Shape{4}, {1, 1, 2, 2}));
  resize.nodes[0].inputs = {"x", "", "sc"};
  replays_match(resize, ep::CUDA(), 19);
  replays_match(attention_graph({Shape{6, 8, 4}, Shape{8, 6, 4}, Shape{6, 8, 4}, Shape{1, 1, 8}}), ep::CUDA());
  // Concurrent runs: each run context records its own graph.
  const std::string m = model_bytes(channels_last_cnn_graph());
  Session gpu = cuda_session(m, true, ep::CUDA().with_cuda_graph(true));
  Session cpu = cpu_session(m);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (uint32_t t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      for (uint32_t run = 0; run < 6; ++run) {
        const Inputs in = random_inputs(channels_last_cnn_graph(), 100 * t + run);
        const auto a = gpu.run(in);
        const auto b = cpu.run(in);
        for (size_t k = 0; k < a.size(); ++k) bad += !close(a[k], b[k], 1e-4);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(CudaGpu, MixedPlacementCopiesAndConcurrentRuns) {
  REQUIRE_CUDA();
  // Relu on CUDA, TopK (not a CUDA kernel) on the CPU, Add on CUDA: two copies each way.
  GraphSpec g;
  g.inputs = {{"x", DType::kFloat, {4, 8}}};
  g.initializers.emplace_back("k", Tensor::from_vector<int64_t>(Shape{1}, {3}));
  g.nodes = {node("Relu", {"x"}, {"r"}), node("TopK", {"r", "k"}, {"v", "i"}), node("Add", {"v", "v"}, {"y"})};
  g.outputs = {{"y", DType::kFloat, {4, 3}}};
  const std::string m = model_bytes(g);
  Session gpu = cuda_session(m, false);
  const Placement p = gpu.placement();
  auto ep_of = [&](const std::string& op) {
    for (const auto& n : p.nodes)
      if (n.op_type == op) return n.ep;
    return std::string("?");
  };
  EXPECT_EQ(ep_of("Relu"), "cuda");
  EXPECT_EQ(ep_of("TopK"), "cpu");
  EXPECT_EQ(ep_of("Add"), "cuda");
  EXPECT_GE(p.copies.size(), 4u) << p.summary;  // x in, r out, v in, y out
  Session cpu = cpu_session(m);
  const Inputs in = random_inputs(g);
  const auto want = cpu.run(in);
  std::vector<std::thread> ts;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int r = 0; r < 20; ++r)
        if (!close(gpu.run(in)[0], want[0])) return;
      ok[t] = 1;
    });
  for (auto& t : ts) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(ok[t], 1) << "thread " << t;
}

TEST(CudaGpu, FusedAttention) {
  REQUIRE_CUDA();
  // BERT-shaped heads with a key-padding bias (masked keys at -inf), and a broadcast 4-D case.
  const AttentionCase cases[] = {{Shape{12, 128, 64}, Shape{128, 12, 64}, Shape{12, 128, 64}, Shape{1, 1, 128}},
                                 {Shape{2, 3, 5, 4}, Shape{300, 3, 4}, Shape{1, 3, 300, 2}, Shape{5, 300}}};
  for (const AttentionCase& c : cases) {
    const GraphSpec g = attention_graph(c);
    Inputs in = random_inputs(g);
    Tensor bias = random_tensor(c.bias, 99);
    bias.data<float>()[0] = -INFINITY;
    in.back().second = Value(bias);
    check(g, 17, &in);
    const std::string m = model_bytes(g);
    size_t fused = 0;
    for (const auto& p : cuda_session(m).placement().nodes) fused += p.op_type == "Attention" && p.ep == "cuda";
    EXPECT_EQ(fused, 1u);
  }
}

TEST(CudaGpu, FusedConvAndGemmActivations) {
  REQUIRE_CUDA();
  // onyx::FusedConv: cuDNN's convolution and one bias+activation pass. onyx::FusedGemm: Relu in
  // cuBLASLt's epilogue (with the fused bias), Clip after a general C (beta 0.5).
  for (const char* op : {"Conv", "Gemm"})
    for (const char* act : {"Relu", "Clip"}) {
      SCOPED_TRACE(std::string(op) + " + " + act);
      const GraphSpec g = product_activation_graph(op, act, 21);
      check(g);
      const auto nodes = compute_nodes(cuda_session(model_bytes(g)).placement());
      ASSERT_EQ(nodes.size(), 1u);
      EXPECT_EQ(nodes[0].op_type, std::string("Fused") + op);
      EXPECT_EQ(nodes[0].ep, "cuda");
    }
}

TEST(CudaGpu, GeluAndMatMulBiasFusions) {
  REQUIRE_CUDA();
  // Linear + exact GELU written out (opset 17) + Linear: Gelu is fused, then each MatMul takes its
  // bias (and the first its GELU) as onyx::FusedMatMul on CUDA.
  const GraphSpec g = gelu_mlp_graph(Shape{2, 33, 64}, 256, 48, 61);
  check(g);
  const auto nodes = compute_nodes(cuda_session(model_bytes(g)).placement());
  ASSERT_EQ(nodes.size(), 2u);
  for (const auto& nd : nodes) {
    EXPECT_EQ(nd.op_type, "FusedMatMul");
    EXPECT_EQ(nd.ep, "cuda");
  }
}

TEST(CudaGpu, ErrorsAreOnyxErrors) {
  REQUIRE_CUDA();
  // Gather with an index out of range: the run fails with a reason, the session stays usable.
  GraphSpec g = single("Gather", {{"x", Shape{5, 4}}}, Shape{2, 4});
  g.inputs.push_back({"i", DType::kInt64, {2}});
  g.nodes[0].inputs = {"x", "i"};
  const std::string m = model_bytes(g);
  Session s = cuda_session(m, false);
  Inputs bad{{"x", Value(random_tensor(Shape{5, 4}, 1))}, {"i", Value(Tensor::from_vector<int64_t>(Shape{2}, {1, 9}))}};
  try {
    s.run(bad);
    ADD_FAILURE() << "out-of-range index accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  Inputs good{{"x", Value(random_tensor(Shape{5, 4}, 1))}, {"i", Value(Tensor::from_vector<int64_t>(Shape{2}, {1, 4}))}};
  EXPECT_NO_THROW(s.run(good));
  // A memory limit smaller than the activations: an error naming the limit.
  GraphSpec big = single("Relu", {{"x", Shape{1024, 1024}}}, Shape{1024, 1024});
  const std::string mb = model_bytes(big);
  Session lim = cuda_session(mb, true, ep::CUDA().with_memory_limit(1 << 20));
  try {
    lim.run(random_inputs(big));
    ADD_FAILURE() << "gpu_mem_limit not enforced";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpu_mem_limit"), std::string::npos) << e.what();
  }
  // Effective options are reported.
  Session o = cuda_session(mb, true, ep::CUDA().with_tf32(true));
  bool seen = false;
  for (const auto& [k, v] : o.registration()[0].options) seen |= k == "use_tf32" && v == "true";
  EXPECT_TRUE(seen);
}

// ---------------------------------------------------------------------------------------------
// int8: QuantizeLinear / DequantizeLinear, MatMulInteger and QLinearMatMul (quant_kernels.cpp)
// and the int8 operators the EP declines, each with its reason.

TEST(CudaClaim, Int8) {
  Decline why;
  auto q8 = [](DType t, Shape s) { return TypeInfo::tensor(t, std::move(s)); };
  const DType u8 = DType::kUInt8, s8 = DType::kInt8, i32 = DType::kInt32;
  // QuantizeLinear / DequantizeLinear: per-tensor and per-axis, int8 / uint8, float32 / float16.
  EXPECT_TRUE(ClaimCase("QuantizeLinear", {f32({2, 3}), f32({}), q8(u8, {})}, {q8(u8, {2, 3})}, 13).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("QuantizeLinear", {f32({2, 3}), f32({3}), q8(s8, {3})}, {q8(s8, {2, 3})}, 13).integer("axis", 1).claim(&why))
      << why.message;
  auto f16 = [](Shape s) { return TypeInfo::tensor(DType::kFloat16, std::move(s)); };
  EXPECT_TRUE(ClaimCase("QuantizeLinear", {f16({4}), f16({})}, {q8(u8, {4})}, 19).claim(&why)) << why.message;
  EXPECT_TRUE(ClaimCase("DequantizeLinear", {q8(s8, {2, 3}), f32({2}), q8(s8, {2})}, {f32({2, 3})}, 13).integer("axis", 0).claim(&why))
      << why.message;
  EXPECT_TRUE(ClaimCase("DequantizeLinear", {q8(u8, {4}), f16({})}, {f16({4})}, 19).claim(&why)) << why.message;
  // Other quantized types, int32 data, blocked quantization, a newer opset.
  EXPECT_FALSE(ClaimCase("QuantizeLinear", {f32({4}), f32({}), q8(DType::kInt16, {})}, {q8(DType::kInt16, {4})}, 21).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  EXPECT_NE(why.message.find("int8 and uint8 only"), std::string::npos) << why.message;
  EXPECT_FALSE(ClaimCase("DequantizeLinear", {q8(i32, {4}), f32({})}, {f32({4})}, 13).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  EXPECT_FALSE(ClaimCase("QuantizeLinear", {f32({4, 4}), f32({2, 4}), q8(u8, {2, 4})}, {q8(u8, {4, 4})}, 21)
                   .integer("axis", 0)
                   .integer("block_size", 2)
                   .claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;
  EXPECT_NE(why.message.find("blocked quantization"), std::string::npos) << why.message;
  EXPECT_FALSE(ClaimCase("QuantizeLinear", {f32({4}), f32({})}, {q8(u8, {4})}, 23).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kOpsetOutOfRange) << why.message;
  EXPECT_FALSE(ClaimCase("QuantizeLinear", {f32({4}), f16({})}, {q8(u8, {4})}, 19).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;

  // MatMulInteger: 8-bit A and B (any pairing), A's zero point scalar, B's scalar or per column.
  EXPECT_TRUE(ClaimCase("MatMulInteger", {q8(u8, {2, 5, 7}), q8(s8, {7, 6}), q8(u8, {}), q8(s8, {6})}, {q8(i32, {2, 5, 6})}, 13)
                  .constant(1)
                  .claim(&why))
      << why.message;
  EXPECT_TRUE(ClaimCase("MatMulInteger", {q8(s8, {5, 8}), q8(u8, {8, 12})}, {q8(i32, {5, 12})}, 13).claim(&why)) << why.message;
  EXPECT_FALSE(ClaimCase("MatMulInteger", {q8(u8, {5, 8}), q8(u8, {8, 4}), q8(u8, {5})}, {q8(i32, {5, 4})}, 13).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;
  EXPECT_NE(why.message.find("per-row"), std::string::npos) << why.message;
  EXPECT_TRUE(ClaimCase("MatMulInteger", {q8(u8, {2, 5, 8}), q8(u8, {2, 8, 4})}, {q8(i32, {2, 5, 4})}, 13).claim(&why)) << why.message;
  EXPECT_FALSE(ClaimCase("MatMulInteger", {q8(u8, {5, 8}), q8(u8, {8})}, {q8(i32, {5})}, 13).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  EXPECT_NE(why.message.find("1-D B"), std::string::npos) << why.message;
  EXPECT_FALSE(ClaimCase("MatMulInteger", {q8(u8, {2, 5, 8}), q8(u8, {2, 8, 4}), q8(u8, {}), q8(u8, {2, 1, 4})}, {q8(i32, {2, 5, 4})}, 13)
                   .claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;  // a zero point per batch and column
  EXPECT_FALSE(ClaimCase("MatMulInteger", {q8(u8, {5, 8}), q8(s8, {8, 4}), q8(s8, {})}, {q8(i32, {5, 4})}, 13).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;  // a_zero_point of B's type

  // QLinearMatMul: requantised to int8 / uint8, B's scale and zero point per tensor or per column.
  auto qlm = [&](TypeInfo a, TypeInfo sa, TypeInfo b, TypeInfo sb, TypeInfo zb, DType y) {
    const DType at = a.elem_dtype(), bt = b.elem_dtype();
    (void)bt;
    return ClaimCase("QLinearMatMul", {a, sa, q8(at, {}), b, sb, zb, f32({}), q8(y, {})}, {q8(y, {4, 5})}, 13);
  };
  EXPECT_TRUE(qlm(q8(u8, {4, 9}), f32({}), q8(s8, {9, 5}), f32({5}), q8(s8, {5}), u8).claim(&why)) << why.message;
  EXPECT_TRUE(qlm(q8(s8, {4, 9}), f32({}), q8(s8, {9, 5}), f32({}), q8(s8, {}), s8).claim(&why)) << why.message;
  EXPECT_FALSE(qlm(q8(u8, {4, 9}), f32({4}), q8(s8, {9, 5}), f32({}), q8(s8, {}), u8).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedAttribute) << why.message;  // per-row a_scale
  EXPECT_FALSE(qlm(q8(u8, {4, 9}), f32({}), q8(s8, {9, 5}), f16({}), q8(s8, {}), u8).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;  // mixed scale types

  // Declined int8 operators, each with its reason.
  EXPECT_FALSE(ClaimCase("QLinearConv", {q8(u8, {1, 3, 8, 8}), f32({}), q8(u8, {}), q8(s8, {4, 3, 3, 3}), f32({}), q8(s8, {}), f32({}), q8(u8, {})},
                         {q8(u8, {1, 4, 6, 6})}, 13)
                   .claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedOp) << why.message;
  EXPECT_NE(why.message.find("no int8 convolution on the CUDA EP"), std::string::npos) << why.message;
  EXPECT_FALSE(ClaimCase("ConvInteger", {q8(u8, {1, 3, 8, 8}), q8(u8, {4, 3, 3, 3})}, {q8(i32, {1, 4, 6, 6})}, 13).claim(&why));
  EXPECT_NE(why.message.find("no int8 convolution"), std::string::npos) << why.message;
  EXPECT_TRUE(ClaimCase("DynamicQuantizeLinear", {f32({4})}, {q8(u8, {4}), f32({}), q8(u8, {})}, 13).claim(&why)) << why.message;
  EXPECT_FALSE(ClaimCase("DynamicQuantizeLinear", {f16({4})}, {q8(u8, {4}), f32({}), q8(u8, {})}, 13).claim(&why));
  EXPECT_EQ(why.code, DeclineCode::kUnsupportedType) << why.message;
  EXPECT_NE(why.message.find("float32 only"), std::string::npos) << why.message;
  for (const char* op : {"QLinearAdd", "QGemm", "QAttention", "DynamicQuantizeMatMul", "MatMulIntegerToFloat"}) {
    ClaimCase c(op, {q8(u8, {4}), f32({}), q8(u8, {})}, {q8(u8, {4})}, 1);
    c.n.domain = "com.microsoft";
    EXPECT_FALSE(c.claim(&why)) << op;
    EXPECT_EQ(why.code, DeclineCode::kUnsupportedOp) << why.message;
    EXPECT_NE(why.message.find("quantized operators"), std::string::npos) << why.message;
  }
}

namespace {

Tensor q8_tensor(DType t, const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor r(t, s);
  auto* p = static_cast<uint8_t*>(r.raw_data());
  for (int64_t i = 0; i < r.numel(); ++i) p[i] = static_cast<uint8_t>(rng());
  return r;
}

Tensor scalar_q8(DType t, uint8_t v) {
  Tensor r(t, Shape{});
  static_cast<uint8_t*>(r.raw_data())[0] = v;
  return r;
}

}  // namespace

TEST(CudaGpu, Int8QuantizeAndMatMul) {
  // Without a GPU: every graph runs on the CPU EP and the EP's claim takes its first node.
  auto claimed = [](const GraphSpec& g, const Inputs& in, int64_t opset) {
    EXPECT_EQ(cpu_session(model_bytes(g, opset)).run(in).size(), g.outputs.size());
    Decline why;
    EXPECT_TRUE(claim_of(g, opset).claim(&why)) << g.nodes[0].op << ": " << why.message;
  };
  const DType u8 = DType::kUInt8, s8 = DType::kInt8;
  std::vector<std::pair<GraphSpec, Inputs>> cases;
  {
    // QuantizeLinear -> DequantizeLinear, per tensor (uint8) and per axis (int8).
    GraphSpec g;
    g.inputs.push_back({"x", DType::kFloat, {2, 3, 5}});
    g.initializers.emplace_back("s", Tensor::from_vector<float>(Shape{}, {0.05f}));
    g.initializers.emplace_back("z", scalar_q8(u8, 128));
    g.initializers.emplace_back("sa", Tensor::from_vector<float>(Shape{3}, {0.02f, 0.03f, 0.07f}));
    g.initializers.emplace_back("za", q8_tensor(s8, Shape{3}, 5));
    g.nodes.push_back(node("QuantizeLinear", {"x", "s", "z"}, {"q"}));
    g.nodes.push_back(node("DequantizeLinear", {"q", "s", "z"}, {"y"}));
    g.nodes.push_back(node("QuantizeLinear", {"x", "sa", "za"}, {"qa"}, {attr_int("axis", 1)}));
    g.nodes.push_back(node("DequantizeLinear", {"qa", "sa", "za"}, {"ya"}, {attr_int("axis", 1)}));
    g.outputs = {any_out("q", u8), any_out("y"), any_out("qa", s8), any_out("ya")};
    Inputs in;
    in.emplace_back("x", random_tensor(Shape{2, 3, 5}, 3, -9, 9));
    cases.emplace_back(g, in);
  }
  {
    // MatMulInteger: uint8 A by a constant int8 B with zero points (k, n not multiples of 4).
    GraphSpec g;
    g.inputs.push_back({"a", u8, {2, 3, 7}});
    g.initializers.emplace_back("b", q8_tensor(s8, Shape{7, 6}, 11));
    g.initializers.emplace_back("za", scalar_q8(u8, 121));
    g.initializers.emplace_back("zb", q8_tensor(s8, Shape{6}, 12));
    g.nodes.push_back(node("MatMulInteger", {"a", "b", "za", "zb"}, {"y"}));
    g.outputs = {any_out("y", DType::kInt32)};
    Inputs in;
    in.emplace_back("a", q8_tensor(u8, Shape{2, 3, 7}, 13));
    cases.emplace_back(g, in);
  }
  for (DType bt : {u8, s8}) {
    // MatMulInteger of int8 A by a B computed per run (uint8: shifted; int8: the plain product).
    GraphSpec g;
    g.inputs.push_back({"a", s8, {5, 8}});
    g.inputs.push_back({"b", bt, {8, 12}});
    g.nodes.push_back(node("MatMulInteger", {"a", "b"}, {"y"}));
    g.outputs = {any_out("y", DType::kInt32)};
    Inputs in;
    in.emplace_back("a", q8_tensor(s8, Shape{5, 8}, 21));
    in.emplace_back("b", q8_tensor(bt, Shape{8, 12}, 22));
    cases.emplace_back(g, in);
  }
  for (DType yt : {u8, s8}) {
    // QLinearMatMul: uint8 a by a constant int8 b with per-column scale and zero point.
    GraphSpec g;
    g.inputs.push_back({"a", u8, {4, 9}});
    g.initializers.emplace_back("sa", Tensor::from_vector<float>(Shape{}, {0.02f}));
    g.initializers.emplace_back("za", scalar_q8(u8, 130));
    g.initializers.emplace_back("b", q8_tensor(s8, Shape{9, 5}, 31));
    g.initializers.emplace_back("sb", Tensor::from_vector<float>(Shape{5}, {0.011f, 0.013f, 0.017f, 0.019f, 0.023f}));
    g.initializers.emplace_back("zb", q8_tensor(s8, Shape{5}, 32));
    g.initializers.emplace_back("sy", Tensor::from_vector<float>(Shape{}, {0.3f}));
    g.initializers.emplace_back("zy", scalar_q8(yt, yt == u8 ? 120 : 3));
    g.nodes.push_back(node("QLinearMatMul", {"a", "sa", "za", "b", "sb", "zb", "sy", "zy"}, {"y"}));
    g.outputs = {any_out("y", yt)};
    Inputs in;
    in.emplace_back("a", q8_tensor(u8, Shape{4, 9}, 33));
    cases.emplace_back(g, in);
  }
  {
    // Batched B: the same batch dims, and A's batch broadcast against B's.
    GraphSpec g;
    g.inputs.push_back({"a", u8, {2, 3, 7}});
    g.inputs.push_back({"b", s8, {2, 7, 5}});
    g.inputs.push_back({"a2", s8, {3, 8}});
    g.inputs.push_back({"b2", u8, {2, 8, 4}});
    g.initializers.emplace_back("za", scalar_q8(u8, 7));
    g.initializers.emplace_back("zb", q8_tensor(s8, Shape{5}, 51));
    g.nodes.push_back(node("MatMulInteger", {"a", "b", "za", "zb"}, {"y"}));
    g.nodes.push_back(node("MatMulInteger", {"a2", "b2"}, {"y2"}));
    g.outputs = {any_out("y", DType::kInt32), any_out("y2", DType::kInt32)};
    Inputs in;
    in.emplace_back("a", q8_tensor(u8, Shape{2, 3, 7}, 52));
    in.emplace_back("b", q8_tensor(s8, Shape{2, 7, 5}, 53));
    in.emplace_back("a2", q8_tensor(s8, Shape{3, 8}, 54));
    in.emplace_back("b2", q8_tensor(u8, Shape{2, 8, 4}, 55));
    cases.emplace_back(g, in);
  }
  {
    // ONNX Runtime's dynamic quantization: DynamicQuantizeLinear feeding MatMulInteger.
    GraphSpec g;
    g.inputs.push_back({"x", DType::kFloat, {6, 16}});
    g.initializers.emplace_back("w", q8_tensor(s8, Shape{16, 8}, 41));
    g.nodes.push_back(node("DynamicQuantizeLinear", {"x"}, {"q", "s", "z"}));
    g.nodes.push_back(node("MatMulInteger", {"q", "w", "z"}, {"y"}));
    g.outputs = {any_out("q", u8), any_out("s"), any_out("z", u8), any_out("y", DType::kInt32)};
    Inputs in;
    in.emplace_back("x", random_tensor(Shape{6, 16}, 42, -3, 5));
    cases.emplace_back(g, in);
  }
  for (const auto& [g, in] : cases) claimed(g, in, 13);
  REQUIRE_CUDA();
  for (const auto& [g, in] : cases) check(g, 13, &in, 0.0);
}
