// A small CUDA emulator for onyx's own kernels, for tests on machines without a GPU: a launch
// runs its blocks one after another, each block's threads as host threads; __syncthreads is a
// barrier over the block, warp shuffles exchange through a per-warp buffer and barrier,
// __shared__ variables are statics (one block runs at a time). One-dimensional grids and blocks,
// block sizes multiple of 32 where warps shuffle. Device pointers are host pointers.
#pragma once

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __shared__ static

namespace onyx::cuda::emu {

struct Block {
  explicit Block(unsigned threads) : barrier(threads), warps((threads + 31) / 32) {
    for (auto& w : warps) w.barrier = std::make_unique<std::barrier<>>(32);
  }
  std::barrier<> barrier;
  struct Warp {
    std::unique_ptr<std::barrier<>> barrier;
    alignas(8) unsigned char slots[32][8];
  };
  std::vector<Warp> warps;
};

struct Thread {
  uint3 thread{0, 0, 0}, block{0, 0, 0};
  dim3 block_dim, grid_dim;
  Block* shared = nullptr;
};

inline thread_local Thread* current = nullptr;

template <class F>
void run(dim3 grid, dim3 block, F&& body) {
  const unsigned threads = block.x;
  Block b(threads);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      Thread self;
      self.thread = {t, 0, 0};
      self.block_dim = block;
      self.grid_dim = grid;
      self.shared = &b;
      current = &self;
      for (unsigned g = 0; g < grid.x; ++g) {
        self.block = {g, 0, 0};
        body();
        b.barrier.arrive_and_wait();  // the next block may reuse __shared__ statics
      }
      current = nullptr;
    });
  for (auto& th : pool) th.join();
}

/// The object ONYX_LAUNCH(...) gives; calling it with the kernel's arguments runs the grid.
/// `call` invokes the kernel by name, so templates deduce their arguments as in a real launch.
template <class F>
struct Launcher {
  dim3 grid, block;
  F call;
  template <class... A>
  void operator()(const A&... a) const {
    if (grid.x == 0 || block.x == 0) return;
    run(grid, block, [&] { call(a...); });
  }
};

template <class F>
Launcher<F> launcher(dim3 grid, dim3 block, F call) {
  return {grid, block, call};
}

}  // namespace onyx::cuda::emu

#define threadIdx (::onyx::cuda::emu::current->thread)
#define blockIdx (::onyx::cuda::emu::current->block)
#define blockDim (::onyx::cuda::emu::current->block_dim)
#define gridDim (::onyx::cuda::emu::current->grid_dim)
#define ONYX_LAUNCH(grid, block, stream, ...) \
  ::onyx::cuda::emu::launcher((grid), (block), [](auto... onyx_a) { __VA_ARGS__(onyx_a...); })

inline void __syncthreads() { ::onyx::cuda::emu::current->shared->barrier.arrive_and_wait(); }

template <class T>
T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  static_assert(sizeof(T) <= 8);
  auto* self = ::onyx::cuda::emu::current;
  const unsigned lane = self->thread.x & 31, warp = self->thread.x >> 5;
  auto& w = self->shared->warps[warp];
  std::memcpy(w.slots[lane], &v, sizeof(T));
  w.barrier->arrive_and_wait();
  T r;
  std::memcpy(&r, w.slots[lane ^ static_cast<unsigned>(lane_mask)], sizeof(T));
  w.barrier->arrive_and_wait();
  return r;
}

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

namespace onyx::cuda {
inline void copy_d2d_async(void* dst, const void* src, size_t bytes, cudaStream_t) { std::memcpy(dst, src, bytes); }
}  // namespace onyx::cuda
