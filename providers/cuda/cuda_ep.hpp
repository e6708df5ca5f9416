// The CUDA EP's host-side pieces that need no GPU and no CUDA header: options, claim rules and the
// caching allocator's bookkeeping. They are compiled into the module and, for tests, into
// onyx_provider_tests directly (so claim decisions and option errors are tested without a device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ep/factory.hpp"
#include "ep/provider.hpp"

namespace onyx::cuda {

enum class ConvAlgoSearch { kExhaustive, kHeuristic, kDefault };
enum class ArenaExtend { kNextPowerOfTwo, kSameAsRequested };

struct Options {
  int device_id = 0;
  uint64_t gpu_mem_limit = 0;  // 0: no limit beyond the device's memory
  ArenaExtend arena_extend = ArenaExtend::kNextPowerOfTwo;
  ConvAlgoSearch conv_algo_search = ConvAlgoSearch::kExhaustive;
  bool use_tf32 = false;
  bool prefer_nhwc = false;
  bool enable_cuda_graph = false;
};

/// The option schema (key, type, default, doc), as `onyx providers` prints it.
std::vector<ep::OptionInfo> option_schema();
/// Parses effective options (every key present); throws onyx::Error (kInvalidArgument) naming the
/// key for a bad value or a feature this EP does not support yet.
Options parse_options(const OptionList& options);

/// Whether the CUDA EP takes `info.node`, else why not. Pure: depends on the node, its types,
/// the graph and the prefer_nhwc option only (never on a device). Channels-last forms (domain
/// onyx.nhwc) are taken only with prefer_nhwc.
bool claim_node(const ClaimInfo& info, Decline* why, bool prefer_nhwc = false);
/// Inputs the EP's kernel reads on the host: shape/axes operands and constant initializers
/// (weights are uploaded once when the kernel is prepared).
bool reads_host_input(const Node& node, size_t input, const Graph& graph);

/// The caching device allocator's bookkeeping, over raw allocation functions (cudaMalloc in the
/// EP, malloc in tests). Blocks are rounded to a size class and kept on free lists when released;
/// when the limit would be exceeded, cached blocks are returned to the device first.
class Arena {
 public:
  using RawAlloc = std::function<void*(size_t)>;  // returns null when the device has no memory
  using RawFree = std::function<void(void*)>;
  Arena(RawAlloc alloc, RawFree free, uint64_t limit, ArenaExtend extend);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  /// A block of at least `bytes`; throws onyx::Error (kRuntime, "out of device memory ...").
  void* allocate(size_t bytes);
  void release(void* p);
  /// Returns every cached (unused) block to the device.
  void trim();
  /// Size class of a request (what is really reserved).
  size_t block_size(size_t bytes) const;
  uint64_t reserved() const;  // bytes held from the device (in use + cached)
  uint64_t in_use() const;

 private:
  void trim_locked();
  RawAlloc raw_alloc_;
  RawFree raw_free_;
  uint64_t limit_;
  ArenaExtend extend_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;  // size -> block
  std::map<void*, size_t> used_;
  uint64_t reserved_ = 0, in_use_ = 0;
};

}  // namespace onyx::cuda
