// Per-run states of a device EP (command streams), reused across runs: shared by the Vulkan and
// WebGPU EPs' begin_run().
#pragma once

#include <memory>
#include <mutex>
#include <vector>

namespace onyx {

template <class Stream>
class StreamPool {
 public:
  /// An idle stream, or `make()`'s new one, as the state of a run: the pointer returned puts it
  /// back in the pool when the run lets go of it. The pool must outlive the runs (the EP does).
  template <class Make>
  std::shared_ptr<void> acquire(Make make) {
    std::unique_ptr<Stream> s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        s = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    if (!s) s = make();
    return std::shared_ptr<void>(s.release(), [this](void* p) {
      std::lock_guard<std::mutex> lock(mu_);
      idle_.emplace_back(static_cast<Stream*>(p));
    });
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<Stream>> idle_;
};

}  // namespace onyx
