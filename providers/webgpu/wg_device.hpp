// WebGPU EP internals: the process-wide wgpu-native instance, one opened adapter/device shared by
// the sessions that pick it (buffer pool, pipeline cache), and the per-run command stream that
// records every node's dispatches into one command encoder, submitted when the host needs data.
#pragma once

#include <webgpu.h>
#include <wgpu.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/common.hpp"
#include "ep/memory.hpp"

namespace onyx::webgpu {

/// One adapter as wgpu-native enumerates it (Vulkan backend only).
struct AdapterInfo {
  int index = 0;
  std::string name;     // the adapter's device name, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;     // "discrete GPU", "integrated GPU", "CPU", "unknown"
  std::string backend;  // "Vulkan"
  std::string driver;   // driver description
};

/// wgpu-native's version, "29.0.1.1".
std::string wgpu_version();
/// Every adapter of the Vulkan backend (throws onyx::Error when no instance can be made).
std::vector<AdapterInfo> list_adapters();
/// The adapter `device_id` picks: -1 is the first non-CPU adapter, else the first CPU one.
/// Throws onyx::Error naming the option when the index does not exist or there is no adapter.
int pick_adapter(const std::vector<AdapterInfo>& adapters, int device_id);

/// A device buffer (storage, copy source and destination).
struct Buffer {
  WGPUBuffer buffer = nullptr;
  uint64_t size = 0;  // allocated bytes (a size class, >= what was asked)
};

/// Device settings that decide which sessions may share one opened device.
struct DeviceOptions {
  bool pool_buffers = true;         // storage_buffer_cache_mode: bucket (true) or disabled
  bool validate_each_node = false;  // validation_mode=full: submit and check after every node
};

struct Instance;

/// One opened WebGPU device, shared by every session that picks the same adapter and options.
class Device : public std::enable_shared_from_this<Device> {
 public:
  static std::shared_ptr<Device> open(int adapter_index, const DeviceOptions& options);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const AdapterInfo& info() const { return info_; }
  const DeviceOptions& options() const { return options_; }
  WGPUDevice wgpu() const { return device_; }
  WGPUQueue queue() const { return queue_; }
  int memory_id() const { return memory_id_; }
  std::string memory_name() const { return "webgpu:" + std::to_string(info_.index); }
  uint64_t max_binding_bytes() const { return max_binding_; }
  uint32_t max_groups() const { return max_groups_; }

  /// A pooled device buffer of at least `bytes`; back in the pool when the last owner lets go.
  std::shared_ptr<Buffer> buffer(uint64_t bytes);
  /// A device tensor of `dtype` and `shape` (throws onyx::Error when it exceeds the device's limits).
  Tensor tensor(DType dtype, const Shape& shape);
  /// Writes host bytes into `dst` before any later submission (prepared weights).
  void write_now(const Buffer& dst, const void* src, uint64_t bytes);

  /// The compute pipeline of WGSL kernel `name` (created on first use, then cached).
  WGPUComputePipeline pipeline(const std::string& name, const char* wgsl);

  /// Waits until `*flag` is set by a callback, driving wgpu-native's events, for at most the
  /// EP's wait bound; throws onyx::Error naming `what` on timeout.
  void wait_for(const std::atomic<int>& flag, const char* what);
  /// Throws the first error wgpu-native reported since the last call (validation, out of memory).
  void check_errors(const std::string& where);

 private:
  Device() = default;
  void release(Buffer* b);
  static void on_error(WGPUDevice const* device, WGPUErrorType type, WGPUStringView message, void* u1, void* u2);
  static void on_lost(WGPUDevice const* device, WGPUDeviceLostReason reason, WGPUStringView message, void* u1,
                      void* u2);

  AdapterInfo info_;
  DeviceOptions options_;
  std::shared_ptr<Instance> instance_;
  WGPUAdapter adapter_ = nullptr;
  WGPUDevice device_ = nullptr;
  WGPUQueue queue_ = nullptr;
  int memory_id_ = 0;
  uint64_t max_binding_ = 128u << 20;
  uint64_t max_buffer_ = 256u << 20;
  uint32_t max_groups_ = 65535;

  std::mutex pool_mu_;
  std::multimap<uint64_t, Buffer*> free_;

  std::mutex pipe_mu_;
  std::map<std::string, WGPUComputePipeline> pipelines_;

  std::mutex err_mu_;
  std::string error_;
};

/// A buffer a command reads or writes, with the handle that keeps it alive.
struct BufRef {
  const Buffer* buf = nullptr;
  std::shared_ptr<void> keep;
};
/// The buffer of a device tensor (throws if `t` is in host memory).
BufRef device_ref(const Tensor& t, const char* what);

/// 32 words of kernel parameters, passed to every kernel as its uniform buffer (binding 0).
struct Params {
  uint32_t w[32] = {};
  size_t n = 0;
  Params& u(int64_t v) {
    w[n++] = static_cast<uint32_t>(v);
    return *this;
  }
  Params& f(float v) {
    std::memcpy(&w[n++], &v, 4);
    return *this;
  }
};

/// Per-run state (what begin_run() returns): one command encoder recording every node's work,
/// submitted only when the host needs results (a download, the end of the run).
class Stream {
 public:
  explicit Stream(std::shared_ptr<Device> device) : device_(std::move(device)) {}
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Device& device() { return *device_; }
  /// Records a dispatch of kernel `name` with `params` (binding 0) and `bufs` (bindings 1..n)
  /// over gx x gy x gz work groups.
  void dispatch(const std::string& name, const char* wgsl, const Params& params, std::initializer_list<BufRef> bufs,
                uint32_t gx, uint32_t gy = 1, uint32_t gz = 1);
  /// A dispatch of `items` invocations of a kernel with workgroup size 256 that computes its
  /// index as gid.x + gid.y * params.w[31] (groups spread over x and y within the device limit).
  void dispatch_1d(const std::string& name, const char* wgsl, Params params, std::initializer_list<BufRef> bufs,
                   uint64_t items);
  /// Records an upload of host bytes into `dst` (through a staging buffer filled now).
  void upload(const void* src, const BufRef& dst, uint64_t bytes);
  /// Copies `src` into host memory: submits everything recorded and waits for it.
  void download(const BufRef& src, void* dst, uint64_t bytes);
  /// Submits what is recorded and waits for it (a no-op when nothing is).
  void flush(const std::string& where = "run");
  uint64_t submissions() const { return submissions_; }

 private:
  WGPUCommandEncoder encoder();
  void submit_and_wait(const std::string& where);

  std::shared_ptr<Device> device_;
  WGPUCommandEncoder encoder_ = nullptr;
  std::vector<std::shared_ptr<void>> keep_;
  uint64_t submissions_ = 0;
};

}  // namespace onyx::webgpu
