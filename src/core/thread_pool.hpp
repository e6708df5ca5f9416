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

/// How idle workers wait for the next parallel_for (ORT's session.intra_op.allow_spinning).
enum class PoolSpin {
  /// Spin for a short, bounded time (yielding the core to any other runnable thread while doing
  /// so) before sleeping: kernels come in quick succession, so a worker is usually awake when
  /// the next one starts. The default.
  kBounded,
  /// Sleep at once: no CPU is burnt between kernels (for a machine shared with other work), at the
  /// cost of a wake-up per parallel_for.
  kNever,
};

/// A fixed set of worker threads. parallel_for splits [0, n) into chunks of at least `grain`
/// items and runs them on the workers and the calling thread. When the pool is already busy
/// (another run on the same session, or a nested call from inside a task) the work runs inline on
/// the caller, so concurrent and nested use never deadlocks.
///
/// The caller never waits for a worker that has not started: workers join a job only while it is
/// open, the caller closes it once every chunk is taken and then waits only for the workers
/// running a chunk. On an oversubscribed machine, where a worker may not be scheduled for
/// milliseconds, a parallel_for thus costs at most what running it on the caller alone does.
class ThreadPool {
 public:
  /// `num_threads` counts the calling thread: 1 means no workers.
  explicit ThreadPool(int num_threads, PoolSpin spin = PoolSpin::kBounded);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }
  PoolSpin spin() const { return spin_; }

  /// Calls fn(begin, end) for disjoint sub-ranges covering [0, n). Blocks until all are done.
  /// If a call throws, the remaining chunks are skipped and the first exception is rethrown here
  /// once every worker has stopped.
  void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn);

 private:
  void worker_loop();
  /// Runs chunks of the current job until none is left: the caller takes them from the front,
  /// the workers from the back.
  void run_chunks(bool from_back);

  PoolSpin spin_;
  std::vector<std::thread> workers_;
  std::mutex job_mu_;  // held by the thread that owns the current job
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};  // bumped when a job is posted (and at shutdown)
  bool stop_ = false;
  // Current job: written by its owner before `open_` is set, read by workers only after they
  // have joined (active_) and seen `open_` set.
  std::atomic<bool> open_{false};
  std::atomic<int> active_{0};  // workers inside a job
  const FunctionRef<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 1;
  // The chunks not taken yet, [lo, hi) in chunk units, as lo << 32 | hi: the job's owner takes
  // them from the front and the workers from the back, so that consecutive jobs over the same
  // data give each thread the same part of it (it stays in that core's caches) while the threads
  // still balance where the parts take unequal times.
  std::atomic<uint64_t> ends_{0};
  std::mutex error_mu_;
  std::exception_ptr error_;
};

/// Number of hardware threads (at least 1).
int hardware_threads();

}  // namespace onyx
