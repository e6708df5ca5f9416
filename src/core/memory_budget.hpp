// Per-session memory limit (SessionBuilder::with_memory_limit): host tensors allocated while a
// run is on the thread, and the runs' activation arenas, count against the session's budget
// until they are freed; an allocation that would pass the limit throws kOutOfMemory instead.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "core/common.hpp"

namespace onyx {

class MemoryBudget {
 public:
  explicit MemoryBudget(uint64_t limit) : limit_(limit) {}

  uint64_t limit() const { return limit_; }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }

  /// Counts `bytes` against the limit, or throws kOutOfMemory naming `what()` (a callable
  /// returning a description, built only when the limit is passed).
  template <class What>
  void reserve(uint64_t bytes, What&& what) {
    const uint64_t now = used_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    if (now > limit_ || now < bytes) {
      used_.fetch_sub(bytes, std::memory_order_relaxed);
      fail(ErrorCode::kOutOfMemory, what(), " needs ", bytes, " bytes, but the session already holds ", now - bytes,
           " of its memory limit of ", limit_, " bytes (SessionBuilder::with_memory_limit)");
    }
  }
  void release(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  /// The budget of the run on this thread (null outside a run, or with no limit).
  static const std::shared_ptr<MemoryBudget>& current();

  /// While alive, host tensors allocated on this thread count against `b` (nesting restores the
  /// previous budget).
  class Scope {
   public:
    explicit Scope(std::shared_ptr<MemoryBudget> b);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    std::shared_ptr<MemoryBudget> previous_;
  };

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

}  // namespace onyx
