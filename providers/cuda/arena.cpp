// The caching allocator's bookkeeping (no CUDA here: raw allocation comes in as functions).
#include "core/common.hpp"
#include "cuda_ep.hpp"

namespace onyx::cuda {

Arena::Arena(RawAlloc alloc, RawFree free, uint64_t limit, ArenaExtend extend)
    : raw_alloc_(std::move(alloc)), raw_free_(std::move(free)), limit_(limit), extend_(extend) {}

Arena::~Arena() {
  std::lock_guard<std::mutex> lock(mu_);
  trim_locked();
  // Blocks still in use belong to tensors that outlive the arena's owner; the arena is kept
  // alive by them (shared ownership), so nothing is left here in practice.
  for (auto& [p, n] : used_) raw_free_(p);
}

size_t Arena::block_size(size_t bytes) const {
  constexpr size_t kAlign = 256;  // what cudaMalloc guarantees, and enough for every kernel here
  if (bytes == 0) bytes = 1;
  if (extend_ == ArenaExtend::kSameAsRequested || bytes < (size_t(1) << 20)) {
    if (bytes < (size_t(1) << 20) && extend_ == ArenaExtend::kNextPowerOfTwo) {
      size_t s = kAlign;
      while (s < bytes) s <<= 1;
      return s;
    }
    return (bytes + kAlign - 1) / kAlign * kAlign;
  }
  // Large blocks: the next power of two would waste up to half; use quarter steps of a power of two.
  size_t p = size_t(1) << 20;
  while (p * 2 <= bytes) p <<= 1;
  const size_t step = p / 4;
  return (bytes + step - 1) / step * step;
}

void* Arena::allocate(size_t bytes) {
  const size_t size = block_size(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  // Reuse a cached block of the same class, or one at most 1/8 larger.
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first <= size + size / 8) {
    void* p = it->second;
    const size_t n = it->first;
    free_.erase(it);
    used_[p] = n;
    in_use_ += n;
    return p;
  }
  if (limit_ && reserved_ + size > limit_) trim_locked();
  if (limit_ && reserved_ + size > limit_)
    fail(ErrorCode::kRuntime, "out of device memory: ", bytes, " bytes requested, ", in_use_, " of gpu_mem_limit ", limit_,
         " bytes in use");
  void* p = raw_alloc_(size);
  if (!p && !free_.empty()) {
    trim_locked();
    p = raw_alloc_(size);
  }
  if (!p) fail(ErrorCode::kRuntime, "out of device memory: the device could not provide ", size, " bytes (", in_use_, " bytes in use by this EP)");
  used_[p] = size;
  reserved_ += size;
  in_use_ += size;
  return p;
}

void Arena::release(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = used_.find(p);
  if (it == used_.end()) return;
  in_use_ -= it->second;
  free_.emplace(it->second, p);
  used_.erase(it);
}

void Arena::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  trim_locked();
}

void Arena::trim_locked() {
  for (auto& [n, p] : free_) {
    raw_free_(p);
    reserved_ -= n;
  }
  free_.clear();
}

uint64_t Arena::reserved() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_;
}
uint64_t Arena::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

}  // namespace onyx::cuda
