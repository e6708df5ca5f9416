#include "core/thread_pool.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>

namespace onyx {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Bounded spin of an idle worker: pause loops for up to kSpinTime, in slices between which the
// core is offered to any other runnable thread (sched_yield returns at once when there is none),
// so that on a busy machine spinning does not take the time slice of threads with work to do.
// The bound is a time, not a count of pauses: a pause's length differs between CPUs (15.7 ns
// measured on a Xeon of family 6 model 207), and 16 x 128 of them, tuned elsewhere, lasted ~35 us
// there and left the workers asleep between kernels.
constexpr int kPausesPerSlice = 128;
constexpr std::chrono::microseconds kSpinTime{300};

}  // namespace

int hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int num_threads, PoolSpin spin) : spin_(spin) {
  const int workers = std::max(0, num_threads - 1);
  workers_.reserve(workers);
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks(bool from_back) {
  const FunctionRef<void(int64_t, int64_t)>& fn = *fn_;
  const int64_t n = n_, chunk = chunk_;
  for (;;) {
    uint64_t cur = ends_.load(std::memory_order_relaxed), next;
    uint32_t c;
    do {
      const uint32_t lo = static_cast<uint32_t>(cur >> 32), hi = static_cast<uint32_t>(cur);
      if (lo >= hi) return;
      c = from_back ? hi - 1 : lo;
      next = from_back ? (cur - 1) : (cur + (uint64_t{1} << 32));
    } while (!ends_.compare_exchange_weak(cur, next, std::memory_order_relaxed));
    const int64_t b = static_cast<int64_t>(c) * chunk;
    try {
      fn(b, std::min(n, b + chunk));
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu_);
      if (!error_) error_ = std::current_exception();
      ends_.store(0, std::memory_order_relaxed);  // skip what is left
    }
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    if (spin_ == PoolSpin::kBounded) {
      const auto until = std::chrono::steady_clock::now() + kSpinTime;
      while (g == seen) {
        for (int i = 0; g == seen && i < kPausesPerSlice; ++i) {
          cpu_relax();
          g = generation_.load(std::memory_order_acquire);
        }
        if (g != seen || std::chrono::steady_clock::now() >= until) break;
        sched_yield();
      }
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return generation_.load() != seen || stop_; });
      g = generation_.load();
    }
    seen = g;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    // Join the job only while it is open. The owner closes it (open_ = false) and then waits for
    // active_ to drop to zero; with both sides sequentially consistent, either the owner sees this
    // increment and waits for it, or this load sees the job closed and the worker leaves without
    // touching the job's fields. A worker that arrives so late that a newer job is open joins that
    // one, whose fields were written before it opened.
    active_.fetch_add(1, std::memory_order_seq_cst);
    if (open_.load(std::memory_order_seq_cst)) run_chunks(true);
    active_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int threads = num_threads();
  if (threads == 1 || n <= grain || !job_mu_.try_lock()) {
    fn(0, n);
    return;
  }
  // Wait for stragglers of the previous job that saw it open but have not left yet (they are
  // counted in active_ and may still read the fields about to be rewritten).
  while (active_.load(std::memory_order_acquire) != 0) cpu_relax();
  // Aim for several chunks per thread so uneven chunks balance out: with four, the last chunk (an
  // eighth of the job on 2 threads) often ran on one thread alone; eight gave 1-1.5% on ResNet-50
  // (float and int8) and the int8 MobileNetV2 at 2 threads, the same elsewhere.
  const int64_t want_chunks = static_cast<int64_t>(threads) * 8;
  chunk_ = std::max(grain, (n + want_chunks - 1) / want_chunks);
  n_ = n;
  fn_ = &fn;
  const int64_t chunks = (n + chunk_ - 1) / chunk_;  // at most want_chunks + 1
  ends_.store(static_cast<uint64_t>(chunks), std::memory_order_relaxed);
  open_.store(true, std::memory_order_seq_cst);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  run_chunks(false);
  // Every chunk is taken: close the job and wait only for the workers inside it.
  open_.store(false, std::memory_order_seq_cst);
  for (int spin = 0; active_.load(std::memory_order_seq_cst) != 0; ++spin) {
    if (spin < 2000)
      cpu_relax();
    else
      std::this_thread::yield();
  }
  fn_ = nullptr;
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    std::swap(error, error_);
  }
  job_mu_.unlock();
  if (error) std::rethrow_exception(error);
}

}  // namespace onyx
