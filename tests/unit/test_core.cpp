#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "core/common.hpp"
#include "core/thread_pool.hpp"
#include "onyx/onyx.hpp"

using namespace onyx;

TEST(Shape, InlineAndHeap) {
  Shape s{1, 2, 3};
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.numel(), 6);
  Shape big;
  for (int i = 0; i < 12; ++i) big.push_back(2);
  EXPECT_EQ(big.numel(), 4096);
  Shape copy = big;
  EXPECT_EQ(copy, big);
  copy.erase(0);
  EXPECT_EQ(copy.size(), 11u);
  Shape moved = std::move(copy);
  EXPECT_EQ(moved.size(), 11u);
  EXPECT_EQ(Shape({2, 3}).to_string(), "[2,3]");
}

TEST(DType, Float16RoundTrip) {
  const float vals[] = {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f};
  for (float v : vals) EXPECT_EQ(static_cast<float>(Float16(v)), v) << v;
  EXPECT_TRUE(std::isinf(static_cast<float>(Float16(1e6f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(Float16(NAN))));
  // Round to nearest even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(static_cast<float>(Float16(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  EXPECT_EQ(static_cast<float>(Float16(1.0f + 3 * std::ldexp(1.0f, -11))), 1.0f + std::ldexp(1.0f, -9));
}

TEST(DType, BFloat16Rounding) {
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(3.140625f)), 3.140625f);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(NAN))));
  EXPECT_EQ(dtype_name(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(dtype_size(DType::kDouble), 8u);
}

TEST(Tensor, AllocationChecks) {
  Tensor t(DType::kFloat, Shape{2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
  EXPECT_THROW(t.data<int64_t>(), Error);
  // Hostile shapes fail cleanly.
  EXPECT_THROW(Tensor(DType::kFloat, Shape{int64_t(1) << 62, 4}), Error);
  EXPECT_THROW(Tensor(DType::kFloat, Shape{-1}), Error);
  EXPECT_THROW(Tensor(DType::kFloat, Shape{int64_t(1) << 40}), Error);
}

TEST(Tensor, ViewsShareStorage) {
  std::vector<float> buf = {1, 2, 3, 4};
  Tensor v = Tensor::view(DType::kFloat, Shape{2, 2}, buf.data());
  EXPECT_EQ(v.raw_data(), buf.data());
  Tensor r = v.reshaped(Shape{4});
  EXPECT_EQ(r.raw_data(), buf.data());
  EXPECT_THROW(v.reshaped(Shape{3}), Error);
  Tensor c = v.clone();
  EXPECT_NE(c.raw_data(), buf.data());
  EXPECT_EQ(c.data<float>()[3], 4.0f);
}

TEST(Tensor, Strings) {
  Tensor t(DType::kString, Shape{2});
  t.data<std::string>()[0] = "hello";
  Tensor c = t.clone();
  EXPECT_EQ(c.data<std::string>()[0], "hello");
  EXPECT_EQ(c.data<std::string>()[1], "");
}

TEST(Value, Kinds) {
  Value none;
  EXPECT_TRUE(none.is_none());
  Value seq = Value::sequence({Tensor::scalar<float>(1), Tensor::scalar<float>(2)}, DType::kFloat);
  EXPECT_TRUE(seq.is_sequence());
  EXPECT_EQ(seq.items().size(), 2u);
  Value opt = Value::optional_of(seq);
  EXPECT_TRUE(opt.has_element());
  EXPECT_TRUE(opt.optional_of_sequence());
  Value empty = Value::optional_none(DType::kInt64);
  EXPECT_FALSE(empty.has_element());
  EXPECT_THROW(empty.element(), Error);
  EXPECT_THROW(seq.tensor(), Error);
}

TEST(ThreadPool, CoversRangeOnceAndNests) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> hits(10000);
  pool.parallel_for(10000, 7, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  // Nested and concurrent calls run inline instead of deadlocking.
  std::atomic<int64_t> total{0};
  auto outer = [&] {
    pool.parallel_for(100, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        pool.parallel_for(10, 1, [&](int64_t x, int64_t y) { total += y - x; });
    });
  };
  std::thread t1(outer), t2(outer);
  t1.join();
  t2.join();
  EXPECT_EQ(total.load(), 2000);
}

TEST(ThreadPool, FrontAndBackTakersCoverEveryLength) {
  // The owner takes chunks from the front and the workers from the back: every length and grain
  // is still covered exactly once.
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n = 1; n <= 150; ++n)
      for (int64_t grain : {1, 3, 64}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << n << " " << grain << " " << i;
      }
  }
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  ThreadPool pool(2);
  for (int round = 0; round < 20; ++round) {
    EXPECT_THROW(pool.parallel_for(1000, 1, [&](int64_t b, int64_t) {
      if (b >= 500) throw Error(ErrorCode::kRuntime, "boom");
    }), Error);
  }
  // The pool still works afterwards.
  std::atomic<int64_t> sum{0};
  pool.parallel_for(1000, 1, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 1000);
}

TEST(Common, NormalizeAxis) {
  EXPECT_EQ(normalize_axis(-1, 4, "t"), 3);
  EXPECT_EQ(normalize_axis(0, 4, "t"), 0);
  EXPECT_THROW(normalize_axis(4, 4, "t"), Error);
  EXPECT_THROW(normalize_axis(-5, 4, "t"), Error);
}
