// Once a shape has been seen, Session::run with a Binding performs no heap allocation.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

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
  s.run(b);
  s.run(b);
  counting = true;
  allocations = 0;
  for (int i = 0; i < 10; ++i) s.run(b);
  counting = false;
  EXPECT_EQ(allocations.load(), 0);
  EXPECT_EQ(b.outputs()[0].tensor().shape(), (Shape{8, 16}));
}
