// Once a shape has been seen, Session::run with a Binding performs no heap allocation.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "fusion_graphs.hpp"
#include "model_builder.hpp"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

// The replacements pair malloc with free on purpose; GCC 12 sees operator new inlined next to this
// free and warns (-Wmismatched-new-delete) at every test that allocates.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace onyx;
using namespace onyx::test;

namespace {
/// Heap allocations in 10 runs of a warmed-up session (two runs first, so that every shape has
/// been seen).
long allocations_in_10_runs(Session& s, Binding& b) {
  s.run(b);
  s.run(b);
  counting = true;
  allocations = 0;
  for (int i = 0; i < 10; ++i) s.run(b);
  counting = false;
  return allocations.load();
}
}  // namespace

TEST(NoAlloc, RunPathAfterWarmup) {
  GraphSpec g;
  g.nodes.push_back({"Relu", {"x"}, {"a"}});
  g.nodes.push_back({"Mul", {"a", "w"}, {"b"}});
  g.nodes.push_back({"Shape", {"b"}, {"s"}});
  g.nodes.push_back({"Reshape", {"b", "s"}, {"c"}});
  g.nodes.push_back({"Transpose", {"c"}, {"d"}, {attr_ints("perm", {1, 0})}});
  g.nodes.push_back({"Add", {"d", "d"}, {"y"}});
  g.inputs.push_back({"x", DType::kFloat, {-1, 8}, {"n", ""}});
  g.outputs.push_back({"y", DType::kFloat, {8, -1}});
  g.initializers.emplace_back("w", Tensor::from_vector<float>(Shape{8}, {1, 2, 3, 4, 5, 6, 7, 8}));
  const std::string m = encode_model(g);
  Session s = Session::builder().with_intra_threads(1).commit_from_memory(m.data(), m.size());
  Tensor x(DType::kFloat, Shape{16, 8});
  Binding b(s);
  b.bind_input("x", x);
  EXPECT_EQ(allocations_in_10_runs(s, b), 0);
  EXPECT_EQ(b.outputs()[0].tensor().shape(), (Shape{8, 16}));
}

TEST(NoAlloc, ConvolutionsAfterWarmup) {
  // The CPU EP's convolution paths (3x3 im2col, 1x1 and its transposed product over few pixels,
  // depthwise, a residual FusedConvAdd), pooling and Gemm: no allocation per run either.
  GraphSpec g;
  auto w = [&](const char* name, Shape s) {
    Tensor t(DType::kFloat, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.01f * static_cast<float>(i % 17) - 0.08f;
    g.initializers.emplace_back(name, std::move(t));
  };
  g.nodes.push_back({"Conv", {"x", "w1", "b1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}});
  g.nodes.push_back({"Relu", {"c1"}, {"r1"}});
  g.nodes.push_back({"Conv", {"r1", "w2"}, {"c2"}, {attr_ints("pads", {1, 1, 1, 1}), attr_int("group", 32)}});
  g.nodes.push_back({"Conv", {"c2", "w3", "b3"}, {"c3"}});
  g.nodes.push_back({"Add", {"c3", "r1"}, {"a3"}});
  g.nodes.push_back({"Relu", {"a3"}, {"r3"}});
  g.nodes.push_back({"MaxPool", {"r3"}, {"p"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}});
  g.nodes.push_back({"Conv", {"p", "w4"}, {"c4"}, {attr_ints("pads", {1, 1, 1, 1})}});
  g.nodes.push_back({"GlobalAveragePool", {"c4"}, {"gp"}});
  g.nodes.push_back({"Flatten", {"gp"}, {"f"}});
  g.nodes.push_back({"Gemm", {"f", "w5", "b5"}, {"y"}, {attr_int("transB", 1)}});
  g.inputs.push_back({"x", DType::kFloat, {1, 3, 28, 28}});
  g.outputs.push_back({"y", DType::kFloat, {1, 10}});
  w("w1", Shape{32, 3, 3, 3});
  w("b1", Shape{32});
  w("w2", Shape{32, 1, 3, 3});
  w("w3", Shape{32, 32, 1, 1});
  w("b3", Shape{32});
  w("w4", Shape{160, 32, 3, 3});  // 7x7 output: the transposed product
  w("w5", Shape{10, 160});
  w("b5", Shape{10});
  const std::string m = encode_model(g, 13);
  for (int threads : {1, 2}) {
    Session s = Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
    size_t fused = 0;
    for (const auto& p : s.placement().nodes) fused += p.op_type == "FusedConvAdd";
    EXPECT_EQ(fused, 1u);
    Tensor x(DType::kFloat, Shape{1, 3, 28, 28});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.001f * static_cast<float>(i % 101);
    Binding b(s);
    b.bind_input("x", x);
    EXPECT_EQ(allocations_in_10_runs(s, b), 0) << threads << " threads";
  }
}

TEST(NoAlloc, TransformerPiecesAfterWarmup) {
  // The fused attention and the Linear + GELU + Linear block, as the optimizer leaves them
  // (onyx::Attention, onyx::FusedMatMul with GELU in its epilogue): no allocation per run.
  for (int threads : {1, 2}) {
    for (int which = 0; which < 2; ++which) {
      const GraphSpec g = which == 0 ? attention_graph({Shape{4, 16, 8}, Shape{16, 4, 8}, Shape{4, 16, 8}, Shape{1, 1, 16}})
                                     : gelu_mlp_graph(Shape{2, 16, 32}, 64, 32, 7);
      const std::string m = encode_model(g, which == 0 ? 13 : 17);
      Session s = Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
      Binding b(s);
      for (const auto& [name, v] : random_inputs(g, 3)) b.bind_input(name, v);
      EXPECT_EQ(allocations_in_10_runs(s, b), 0) << (which == 0 ? "attention" : "mlp") << ", " << threads << " threads";
    }
  }
}

TEST(NoAlloc, QuantizedOperatorsAfterWarmup) {
  // A QOperator-style chain: QuantizeLinear, the com.microsoft QLinear* ops (tables built per
  // run where their parameters are graph inputs), DequantizeLinear and DynamicQuantizeLinear.
  GraphSpec g;
  for (const auto& [name, v] : {std::pair<const char*, float>{"s0", 0.05f}, {"s1", 0.08f}, {"s3", 1.0f / 256}})
    g.initializers.push_back({name, Tensor::scalar(v)});
  Tensor zp(DType::kUInt8, Shape{});
  for (const auto& [name, v] : {std::pair<const char*, uint8_t>{"z0", 128}, {"z1", 120}, {"z3", 0}}) {
    *zp.data<uint8_t>() = v;
    g.initializers.push_back({name, zp.clone()});
  }
  auto ms = [&](NodeSpec n) {
    n.domain = "com.microsoft";
    g.nodes.push_back(std::move(n));
  };
  g.nodes.push_back({"QuantizeLinear", {"x", "s0", "z0"}, {"q"}});
  ms({"QLinearAdd", {"q", "s0", "z0", "q", "s0", "z0", "s1", "z1"}, {"a"}});
  ms({"QLinearMul", {"a", "s1", "z1", "q", "s0", "z0", "s1", "z1"}, {"m"}});
  ms({"QLinearSigmoid", {"m", "s1", "z1", "s2", "z2"}, {"sg"}});
  ms({"QLinearLeakyRelu", {"sg", "s2", "z2", "s2", "z2"}, {"lr"}});
  ms({"QLinearAveragePool", {"lr", "s2", "z2", "s2", "z2"}, {"ap"}, {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1})}});
  ms({"QLinearGlobalAveragePool", {"ap", "s2", "z2", "s2", "z2"}, {"gp"}});
  ms({"QLinearConcat", {"s2", "z2", "gp", "s2", "z2", "gp", "s1", "z1"}, {"cc"}, {attr_int("axis", 1)}});
  ms({"QLinearSoftmax", {"cc", "s2", "z2", "s3", "z3"}, {"sm"}, {attr_int("opset", 13), attr_int("axis", 1)}});
  g.nodes.push_back({"DequantizeLinear", {"sm", "s3", "z3"}, {"y"}});
  g.nodes.push_back({"DynamicQuantizeLinear", {"x"}, {"dq", "ds", "dz"}});
  g.inputs.push_back({"x", DType::kFloat, {1, 8, 20, 20}});
  g.inputs.push_back({"s2", DType::kFloat, {}});
  g.inputs.push_back({"z2", DType::kUInt8, {}});
  g.outputs.push_back({"y", DType::kFloat, {1, 16, 1, 1}});
  g.outputs.push_back({"dq", DType::kUInt8, {1, 8, 20, 20}});
  const std::string m = encode_model(g, 17, 8, {{"com.microsoft", 1}});
  for (int threads : {1, 2}) {
    Session s = Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
    Tensor x(DType::kFloat, Shape{1, 8, 20, 20});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.37f * static_cast<float>(i % 29) - 5.0f;
    Binding b(s);
    b.bind_input("x", x);
    b.bind_input("s2", Tensor::scalar(0.03f));
    *zp.data<uint8_t>() = 100;
    b.bind_input("z2", zp.clone());
    EXPECT_EQ(allocations_in_10_runs(s, b), 0) << threads << " threads";
  }
}

TEST(NoAlloc, IntegerProductsAndHalfRegionsAfterWarmup) {
  // The integer GEMM behind QLinearConv (channels-last, group 1 and depthwise), QLinearMatMul,
  // com.microsoft QGemm and DynamicQuantizeMatMul (constant weights packed once), and a float16
  // Conv that half_in_float runs as float32 between Casts.
  GraphSpec g;
  auto scalar_u8 = [](uint8_t v) {
    Tensor t(DType::kUInt8, Shape{});
    *t.data<uint8_t>() = v;
    return t;
  };
  auto weights = [](DType dt, Shape s) {
    Tensor t(dt, s);
    auto* p = static_cast<uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < t.numel() * static_cast<int64_t>(dtype_size(dt)); ++i) p[i] = static_cast<uint8_t>(i * 37 % 251);
    if (dt == DType::kFloat16)
      for (int64_t i = 0; i < t.numel(); ++i) t.data<Float16>()[i].bits = Float16::from_float(0.01f * static_cast<float>(i % 7));
    return t;
  };
  g.initializers.push_back({"s", Tensor::scalar(0.05f)});
  g.initializers.push_back({"z", scalar_u8(128)});
  Tensor wz(DType::kInt8, Shape{});
  *wz.data<int8_t>() = 0;
  g.initializers.push_back({"wz", wz});
  g.initializers.push_back({"w1", weights(DType::kInt8, Shape{16, 8, 3, 3})});
  g.initializers.push_back({"w2", weights(DType::kInt8, Shape{16, 1, 3, 3})});
  g.initializers.push_back({"b", weights(DType::kInt8, Shape{16, 10})});
  g.initializers.push_back({"b2", weights(DType::kInt8, Shape{10, 8})});
  g.initializers.push_back({"hw", weights(DType::kFloat16, Shape{4, 8, 3, 3})});
  g.nodes.push_back({"QuantizeLinear", {"x", "s", "z"}, {"q"}});
  g.nodes.push_back({"QLinearConv", {"q", "s", "z", "w1", "s", "wz", "s", "z"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1})}});
  g.nodes.push_back(
      {"QLinearConv", {"c1", "s", "z", "w2", "s", "wz", "s", "z"}, {"c2"}, {attr_ints("pads", {1, 1, 1, 1}), attr_int("group", 16)}});
  g.nodes.push_back({"Flatten", {"c2"}, {"f"}, {attr_int("axis", 2)}});
  g.nodes.push_back({"Reshape", {"f", "shape"}, {"r"}});
  g.nodes.push_back({"QLinearMatMul", {"r", "s", "z", "b", "s", "wz", "s", "z"}, {"mm"}});
  NodeSpec qg{"QGemm", {"r", "s", "z", "b", "s", "wz", "", "s", "z"}, {"qg"}, {attr_int("transB", 0)}};
  qg.domain = "com.microsoft";
  g.nodes.push_back(qg);
  g.nodes.push_back({"DequantizeLinear", {"qg", "s", "z"}, {"dq"}});
  NodeSpec dm{"DynamicQuantizeMatMul", {"dq", "b2", "s", "wz"}, {"y1"}};
  dm.domain = "com.microsoft";
  g.nodes.push_back(dm);
  g.nodes.push_back({"Cast", {"x"}, {"xh"}, {attr_int("to", static_cast<int64_t>(DType::kFloat16))}});
  g.nodes.push_back({"Conv", {"xh", "hw"}, {"ch"}, {attr_ints("pads", {1, 1, 1, 1})}});
  g.nodes.push_back({"Relu", {"ch"}, {"y2"}});
  // c2 is [1, 16, 10, 10]: Flatten(axis 2) gives [16, 100], reshaped to [100, 16] against B [16, 10].
  g.initializers.push_back({"shape", Tensor::from_vector<int64_t>(Shape{2}, {100, 16})});
  g.inputs.push_back({"x", DType::kFloat, {1, 8, 10, 10}});
  g.outputs.push_back({"mm", DType::kUInt8, {}});
  g.outputs.push_back({"y1", DType::kFloat, {}});
  g.outputs.push_back({"y2", DType::kFloat16, {}});
  const std::string m = encode_model(g, 17, 8, {{"com.microsoft", 1}});
  for (int threads : {1, 2}) {
    Session s = Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
    Tensor x(DType::kFloat, Shape{1, 8, 10, 10});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.37f * static_cast<float>(i % 29) - 5.0f;
    Binding b(s);
    b.bind_input("x", x);
    EXPECT_EQ(allocations_in_10_runs(s, b), 0) << threads << " threads";
  }
}
