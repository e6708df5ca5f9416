// Vulkan EP internals: the device (instance, queue, memory types, buffer pool, pipelines) and the
// per-run command stream that batches every node's work into a few queue submissions.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/common.hpp"
#include "ep/memory.hpp"

namespace onyx::vulkan {

/// "VK_ERROR_OUT_OF_DEVICE_MEMORY" and so on.
const char* result_name(VkResult r);
/// Throws onyx::Error naming the Vulkan call and its result (kRuntime for out-of-memory results).
[[noreturn]] void fail_vk(VkResult r, const char* call);
inline void check_vk(VkResult r, const char* call) {
  if (r != VK_SUCCESS) fail_vk(r, call);
}

/// One VkBuffer with its own memory. `mapped` is set for host-visible (staging) buffers.
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;  // allocated bytes (a size class, >= what was asked)
  void* mapped = nullptr;
  bool host = false;
};

/// A physical device as `onyx providers` lists it.
struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string type;  // "discrete GPU", "integrated GPU", "virtual GPU", "CPU", "other"
  uint32_t api_version = 0;
  bool storage16 = false;  // storageBuffer16BitAccess (VK_KHR_16bit_storage, core in Vulkan 1.1)
};

/// Every Vulkan physical device here, in the loader's order (throws when no instance opens).
std::vector<DeviceInfo> list_devices();
/// The device `device_id` picks (-1: discrete GPU before integrated before virtual before CPU).
int pick_device(const std::vector<DeviceInfo>& devices, int device_id);
/// ONYX_VULKAN_FP16_PACKED is set (not "0"): float16 tensors use the packed shaders everywhere.
bool force_packed_halves();

struct Pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t bindings = 0;
};

/// Push-constant bytes every pipeline layout declares (the minimum Vulkan guarantees).
constexpr uint32_t kPushBytes = 128;

/// One opened logical device, shared by every session that picks the same physical device.
class Device : public std::enable_shared_from_this<Device> {
 public:
  /// Opens physical device `index` (of list_devices()) with a memory budget (0: none), a
  /// matrix-product kernel choice ("auto", "tiled", "simple") and whether float32 tensors are
  /// stored as float16 (the fp16_storage option). Throws onyx::Error when it cannot.
  /// ONYX_VULKAN_FP16_PACKED=1 makes float16 storage use the packed shaders even where the
  /// device has 16-bit storage (to test that path anywhere).
  static std::shared_ptr<Device> open(int index, uint64_t memory_limit, const std::string& matmul = "auto",
                                      bool fp16_storage = false);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceInfo& info() const { return info_; }
  VkDevice vk() const { return device_; }
  /// Memory id of this device's memory ("vulkan:<index>").
  int memory_id() const { return memory_id_; }
  std::string memory_name() const { return "vulkan:" + std::to_string(info_.index); }
  uint64_t max_buffer_range() const { return max_range_; }
  uint32_t max_groups(int axis) const { return max_groups_[axis]; }
  /// Shader of the matrix-product kernels for this device: the shared-memory tiled one on GPUs,
  /// the barrier-free one on CPU implementations (lavapipe), where a barrier is a context switch
  /// (unless the matmul_kernel option says otherwise).
  const char* matmul_shader(bool conv) const {
    const bool simple = matmul_ == "simple" || (matmul_ == "auto" && info_.type == "CPU");
    return conv ? (simple ? "conv_gemm_simple" : "conv_gemm") : (simple ? "matmul_simple" : "matmul");
  }

  /// A buffer of at least `bytes` (device-local, or host-visible staging when `host`), from the
  /// pool when one of its size class is free; it goes back to the pool when the last owner lets
  /// go. Throws onyx::Error (kRuntime, "out of device memory ...") when the device (or the
  /// memory_limit option) cannot provide it.
  std::shared_ptr<Buffer> buffer(uint64_t bytes, bool host);
  /// A device tensor of `dtype` and `shape` in a pooled buffer (element_bytes(dtype) each).
  Tensor tensor(DType dtype, const Shape& shape);

  /// Whether tensors of `t` are float16 in device memory: float16 ones always, float32 ones
  /// under fp16_storage (the shaders then compute in float32 and round each stored value).
  bool stores_half(DType t) const { return t == DType::kFloat16 || (fp16_storage_ && t == DType::kFloat); }
  /// Bytes per element of a `t` tensor in device memory.
  size_t element_bytes(DType t) const { return stores_half(t) ? 2 : dtype_size(t); }
  bool fp16_storage() const { return fp16_storage_; }
  /// Whether the float16 shaders pack two values per 32-bit word (no 16-bit storage here, or
  /// ONYX_VULKAN_FP16_PACKED) rather than use 16-bit storage buffers.
  bool half_packed() const { return half_packed_; }
  /// Bytes of device memory held (in use or pooled).
  uint64_t device_bytes() const;

  /// The compute pipeline of shader `name` (see the generated shader table) with `bindings`
  /// storage buffers, created on first use; with `half`, its float16-storage variant for this
  /// device (`name`_h with 16-bit storage buffers, `name`_hp packed in 32-bit words).
  const Pipeline& pipeline(const char* name, uint32_t bindings, bool half = false);

  uint32_t queue_family() const { return family_; }
  /// Submits `cmd` and waits for it to finish (the queue is used under a lock).
  void submit_and_wait(VkCommandBuffer cmd, VkFence fence);
  /// Uploads `bytes` from host memory into `dst` now (used when kernels are prepared).
  void upload_now(const Buffer& dst, const void* src, uint64_t bytes);

 private:
  Device() = default;
  void release(Buffer* b);
  void destroy(Buffer* b);
  Buffer* create(uint64_t size, bool host);
  void trim_pool();

  DeviceInfo info_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t family_ = 0;
  uint32_t device_type_ = 0, host_type_ = 0;
  uint64_t max_range_ = 0;
  uint32_t max_groups_[3] = {65535, 65535, 65535};
  int memory_id_ = 0;
  uint64_t memory_limit_ = 0;  // 0: no limit
  std::string matmul_ = "auto";
  bool fp16_storage_ = false;
  bool half_packed_ = false;

  mutable std::mutex pool_mu_;
  std::multimap<uint64_t, Buffer*> free_[2];  // [host]
  uint64_t device_bytes_ = 0;

  std::mutex pipe_mu_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;

  std::mutex queue_mu_;
  std::mutex upload_mu_;
  VkCommandPool upload_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer upload_cmd_ = VK_NULL_HANDLE;
  VkFence upload_fence_ = VK_NULL_HANDLE;
};

/// A buffer reference a command uses, with the handle that keeps it alive until the work is done.
struct BufRef {
  const Buffer* buf = nullptr;
  std::shared_ptr<void> keep;
  uint64_t offset = 0;
};
/// The buffer of a device tensor (throws if `t` is in host memory).
BufRef device_ref(const Tensor& t, const char* what);

/// Per-run state (what the EP's begin_run() returns): one command buffer recording every node's
/// dispatches and copies, submitted only when the host needs results (a copy to host memory, the
/// end of the run), so a run is a few submissions rather than one per node.
class Stream {
 public:
  explicit Stream(std::shared_ptr<Device> device);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Device& device() { return *device_; }
  /// Records a dispatch of `pipe` over `bufs` (bindings 0..n-1) with push constants `push`.
  void dispatch(const Pipeline& pipe, std::initializer_list<BufRef> bufs, const void* push, size_t push_bytes,
                uint32_t gx, uint32_t gy = 1, uint32_t gz = 1);
  /// A 1-D dispatch of `items` invocations for a shader with local size 256 that computes its
  /// index with flat_id() (groups spread over x and y to stay within the device limits).
  void dispatch_1d(const Pipeline& pipe, std::initializer_list<BufRef> bufs, const void* push, size_t push_bytes,
                   uint64_t items, uint32_t local = 256);
  /// Records a buffer-to-buffer copy.
  void copy(const BufRef& src, const BufRef& dst, uint64_t bytes);
  /// Records an upload of host bytes into `dst` through a staging buffer.
  void upload(const void* src, const BufRef& dst, uint64_t bytes);
  /// Copies `src` to host memory `dst`: records the copy, submits everything recorded and waits.
  void download(const BufRef& src, void* dst, uint64_t bytes);
  /// upload() of `n` floats stored as float16 on the device (converted on the host into the
  /// staging buffer, rounded to nearest even), and the download() that converts them back.
  void upload_as_half(const float* src, const BufRef& dst, uint64_t n);
  void download_as_float(const BufRef& src, float* dst, uint64_t n);
  /// Submits what is recorded and waits for it (a no-op when nothing is). Throws onyx::Error
  /// naming the node when a kernel flagged bad data (see check_code()).
  void flush();
  /// For a kernel that validates data only the device sees (Gather indices computed on the
  /// device): a code to pass the shader and the device word it sets to that code when the data
  /// is bad; flush() then throws with `*message` (owned by the kernel, which outlives the run).
  uint32_t check_code(const std::string* message);
  BufRef error_word();
  /// Number of queue submissions so far.
  uint64_t submissions() const { return submissions_; }

 private:
  void begin();
  void barrier();
  VkDescriptorSet descriptor_set(const Pipeline& pipe);

  std::shared_ptr<Device> device_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> desc_pools_;
  size_t desc_pool_used_ = 0;  // index of the pool being allocated from
  bool recording_ = false;
  std::vector<std::shared_ptr<void>> keep_;
  uint64_t submissions_ = 0;
  std::shared_ptr<Buffer> error_;       // host-visible uint, 0 while no kernel found bad data
  std::vector<const std::string*> checks_;  // message per code - 1, for the work recorded since the last flush
};

}  // namespace onyx::vulkan
