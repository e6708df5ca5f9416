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
