#include "core/thread_pool.hpp"

#include <algorithm>

namespace onyx {

int hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int num_threads) {
  const int workers = std::max(0, num_threads - 1);
  workers_.reserve(workers);
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
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

void ThreadPool::run_chunks(const FunctionRef<void(int64_t, int64_t)>& fn) {
  for (;;) {
    const int64_t b = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (b >= n_) break;
    try {
      fn(b, std::min(n_, b + chunk_));
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu_);
      if (!error_) error_ = std::current_exception();
      next_.store(n_, std::memory_order_relaxed);  // skip what is left
    }
  }
}

void ThreadPool::worker_loop(int /*index*/) {
  uint64_t seen = 0;
  for (;;) {
    // Spin briefly for the next job (kernels come in quick succession), then sleep.
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < 20000; ++spin) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
      g = generation_.load(std::memory_order_acquire);
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
    if (fn_) run_chunks(*fn_);
    active_.fetch_sub(1, std::memory_order_acq_rel);
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
  // Aim for a few chunks per thread so uneven chunks balance out.
  const int64_t want_chunks = static_cast<int64_t>(threads) * 4;
  chunk_ = std::max(grain, (n + want_chunks - 1) / want_chunks);
  n_ = n;
  fn_ = &fn;
  next_.store(0, std::memory_order_relaxed);
  active_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  run_chunks(fn);
  for (int spin = 0; active_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < 4000) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
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
