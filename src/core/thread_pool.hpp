// Intra-op thread pool: parallel_for over index ranges, shared by every kernel of a session.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace onyx {

/// A non-owning reference to a callable (no allocation, unlike std::function).
template <class Sig>
class FunctionRef;
template <class R, class... A>
class FunctionRef<R(A...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: implicit by design
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, A... a) -> R { return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<A>(a)...); }) {}
  R operator()(A... a) const { return call_(obj_, std::forward<A>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, A...);
};

/// A fixed set of worker threads. parallel_for splits [0, n) into chunks of at least `grain`
/// items and runs them on the workers and the calling thread. When the pool is already busy
/// (another run on the same session, or a nested call from inside a task) the work runs inline on
/// the caller, so concurrent and nested use never deadlocks.
class ThreadPool {
 public:
  /// `num_threads` counts the calling thread: 1 means no workers.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  /// Calls fn(begin, end) for disjoint sub-ranges covering [0, n). Blocks until all are done.
  /// If a call throws, the remaining chunks are skipped and the first exception is rethrown here
  /// once every worker has stopped.
  void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn);

 private:
  void worker_loop(int index);
  void run_chunks(const FunctionRef<void(int64_t, int64_t)>& fn);

  std::vector<std::thread> workers_;
  std::mutex job_mu_;  // held by the thread that owns the current job
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};
  bool stop_ = false;
  // Current job.
  const FunctionRef<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 1;
  std::atomic<int64_t> next_{0};
  std::atomic<int> active_{0};
  std::mutex error_mu_;
  std::exception_ptr error_;
};

/// Number of hardware threads (at least 1).
int hardware_threads();

}  // namespace onyx
