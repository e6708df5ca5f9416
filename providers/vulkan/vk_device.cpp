#include "vk_device.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "vk_shaders.hpp"

#ifdef __F16C__
#include <immintrin.h>
#endif

namespace onyx::vulkan {

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS:
      return "VK_SUCCESS";
    case VK_NOT_READY:
      return "VK_NOT_READY";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_INCOMPLETE:
      return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:
      return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_FRAGMENTED_POOL:
      return "VK_ERROR_FRAGMENTED_POOL";
    default:
      return "VK_ERROR_UNKNOWN";
  }
}

void fail_vk(VkResult r, const char* call) {
  const bool oom = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY;
  fail(oom ? ErrorCode::kRuntime : ErrorCode::kEpFailure, "vulkan: ", call, " failed with ", result_name(r), " (",
       static_cast<int>(r), ")");
}

namespace {

VkInstance create_instance() {
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "onyx";
  app.pEngineName = "onyx";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  VkInstance inst = VK_NULL_HANDLE;
  const VkResult r = vkCreateInstance(&ci, nullptr, &inst);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    fail(ErrorCode::kNotAvailable,
         "no Vulkan driver is installed (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER; on Debian "
         "install mesa-vulkan-drivers for lavapipe or the GPU vendor's driver)");
  check_vk(r, "vkCreateInstance");
  return inst;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance inst) {
  uint32_t n = 0;
  check_vk(vkEnumeratePhysicalDevices(inst, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> d(n);
  if (n) check_vk(vkEnumeratePhysicalDevices(inst, &n, d.data()), "vkEnumeratePhysicalDevices");
  d.resize(n);
  return d;
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "CPU";
    default:
      return "other";
  }
}

int type_rank(const std::string& t) {
  if (t == "discrete GPU") return 0;
  if (t == "integrated GPU") return 1;
  if (t == "virtual GPU") return 2;
  if (t == "CPU") return 3;
  return 4;
}

DeviceInfo describe(VkPhysicalDevice pd, int index) {
  VkPhysicalDeviceProperties p{};
  vkGetPhysicalDeviceProperties(pd, &p);
  DeviceInfo info{index, p.deviceName, type_name(p.deviceType), p.apiVersion};
  if (p.apiVersion >= VK_API_VERSION_1_1) {
    VkPhysicalDevice16BitStorageFeatures s16{};
    s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
    VkPhysicalDeviceFeatures2 f{};
    f.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f.pNext = &s16;
    vkGetPhysicalDeviceFeatures2(pd, &f);
    info.storage16 = s16.storageBuffer16BitAccess == VK_TRUE;
  }
  return info;
}

bool env_flag(const char* name) {
  const char* e = std::getenv(name);
  return e && *e && std::string(e) != "0";
}

uint64_t size_class(uint64_t n) {
  if (n <= 256) return 256;
  const int b = 63 - __builtin_clzll(n);
  const uint64_t g = uint64_t(1) << (b - 2);  // at most 25% over what was asked
  return (n + g - 1) / g * g;
}

}  // namespace

std::vector<DeviceInfo> list_devices() {
  VkInstance inst = create_instance();
  std::vector<DeviceInfo> out;
  try {
    const auto pds = physical_devices(inst);
    for (size_t i = 0; i < pds.size(); ++i) out.push_back(describe(pds[i], static_cast<int>(i)));
  } catch (...) {
    vkDestroyInstance(inst, nullptr);
    throw;
  }
  vkDestroyInstance(inst, nullptr);
  return out;
}

bool force_packed_halves() { return env_flag("ONYX_VULKAN_FP16_PACKED"); }

int pick_device(const std::vector<DeviceInfo>& devices, int device_id) {
  if (devices.empty()) fail(ErrorCode::kNotAvailable, "no Vulkan device found (the Vulkan loader lists none)");
  if (device_id >= 0) {
    if (static_cast<size_t>(device_id) >= devices.size())
      fail(ErrorCode::kInvalidArgument, "vulkan: option 'device_id' is ", device_id, " but there are only ",
           devices.size(), " Vulkan device(s)");
    return device_id;
  }
  int best = 0;
  for (size_t i = 1; i < devices.size(); ++i)
    if (type_rank(devices[i].type) < type_rank(devices[best].type)) best = static_cast<int>(i);
  return best;
}

// ---------------------------------------------------------------------------------------------
// Device

std::shared_ptr<Device> Device::open(int index, uint64_t memory_limit, const std::string& matmul,
                                     bool fp16_storage) {
  static std::mutex mu;
  static std::map<std::tuple<int, uint64_t, std::string, bool, bool>, std::weak_ptr<Device>> open_devices;
  const bool force_packed = force_packed_halves();
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = open_devices[{index, memory_limit, matmul, fp16_storage, force_packed}];
  if (auto d = slot.lock()) return d;

  std::shared_ptr<Device> d(new Device());
  d->memory_limit_ = memory_limit;
  d->matmul_ = matmul;
  d->fp16_storage_ = fp16_storage;
  d->instance_ = create_instance();
  const auto pds = physical_devices(d->instance_);
  if (index < 0 || static_cast<size_t>(index) >= pds.size())
    fail(ErrorCode::kInvalidArgument, "vulkan: device ", index, " does not exist (", pds.size(), " device(s))");
  d->physical_ = pds[index];
  d->info_ = describe(d->physical_, index);
  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(d->physical_, &props);
  d->max_range_ = props.limits.maxStorageBufferRange;
  for (int a = 0; a < 3; ++a) d->max_groups_[a] = props.limits.maxComputeWorkGroupCount[a];
  if (props.limits.maxPushConstantsSize < kPushBytes || props.limits.maxComputeWorkGroupInvocations < 256 ||
      props.limits.maxComputeSharedMemorySize < 16384)
    fail(ErrorCode::kNotAvailable, "vulkan: ", d->info_.name,
         " lacks the compute limits onyx needs (128-byte push "
         "constants, 256-invocation work groups, 16 KiB shared memory)");

  uint32_t nf = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d->physical_, &nf, nullptr);
  std::vector<VkQueueFamilyProperties> fams(nf);
  vkGetPhysicalDeviceQueueFamilyProperties(d->physical_, &nf, fams.data());
  int family = -1;
  for (uint32_t f = 0; f < nf && family < 0; ++f)
    if (fams[f].queueFlags & VK_QUEUE_COMPUTE_BIT) family = static_cast<int>(f);
  if (family < 0) fail(ErrorCode::kNotAvailable, "vulkan: ", d->info_.name, " has no compute queue");
  d->family_ = static_cast<uint32_t>(family);

  const float prio = 1.0f;
  VkDeviceQueueCreateInfo qci{};
  qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qci.queueFamilyIndex = d->family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &prio;
  // float16 tensors use 16-bit storage buffers where the device has them, else the packed shaders.
  d->half_packed_ = !d->info_.storage16 || force_packed;
  VkPhysicalDevice16BitStorageFeatures s16{};
  s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  s16.storageBuffer16BitAccess = VK_TRUE;
  VkDeviceCreateInfo dci{};
  dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.pNext = d->half_packed_ ? nullptr : &s16;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  check_vk(vkCreateDevice(d->physical_, &dci, nullptr, &d->device_), "vkCreateDevice");
  vkGetDeviceQueue(d->device_, d->family_, 0, &d->queue_);

  // Memory types: device-local for tensors; host-visible, coherent (cached if possible) for staging.
  VkBufferCreateInfo bci{};
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.size = 256;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  VkBuffer probe = VK_NULL_HANDLE;
  check_vk(vkCreateBuffer(d->device_, &bci, nullptr, &probe), "vkCreateBuffer");
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(d->device_, probe, &req);
  vkDestroyBuffer(d->device_, probe, nullptr);
  VkPhysicalDeviceMemoryProperties mp{};
  vkGetPhysicalDeviceMemoryProperties(d->physical_, &mp);
  auto find_type = [&](VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer) -> int {
    int found = -1;
    for (uint32_t t = 0; t < mp.memoryTypeCount; ++t) {
      if (!(req.memoryTypeBits & (1u << t))) continue;
      const VkMemoryPropertyFlags f = mp.memoryTypes[t].propertyFlags;
      if ((f & want) != want) continue;
      if ((f & prefer) == prefer) return static_cast<int>(t);
      if (found < 0) found = static_cast<int>(t);
    }
    return found;
  };
  const int dev_t = find_type(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  const int host_t = find_type(VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                               VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  if (host_t < 0) fail(ErrorCode::kNotAvailable, "vulkan: ", d->info_.name, " has no host-visible coherent memory");
  d->device_type_ = static_cast<uint32_t>(dev_t >= 0 ? dev_t : host_t);
  d->host_type_ = static_cast<uint32_t>(host_t);

  VkPipelineCacheCreateInfo pci{};
  pci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  check_vk(vkCreatePipelineCache(d->device_, &pci, nullptr, &d->cache_), "vkCreatePipelineCache");

  VkCommandPoolCreateInfo cpi{};
  cpi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpi.queueFamilyIndex = d->family_;
  check_vk(vkCreateCommandPool(d->device_, &cpi, nullptr, &d->upload_pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo cai{};
  cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cai.commandPool = d->upload_pool_;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  check_vk(vkAllocateCommandBuffers(d->device_, &cai, &d->upload_cmd_), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fci{};
  fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  check_vk(vkCreateFence(d->device_, &fci, nullptr, &d->upload_fence_), "vkCreateFence");

  d->memory_id_ = register_device_memory(d->memory_name());
  slot = d;
  return d;
}

Device::~Device() {
  if (device_) {
    vkDeviceWaitIdle(device_);
    for (auto& fl : free_)
      for (auto& [size, b] : fl) destroy(b);
    for (auto& [name, p] : pipelines_) {
      vkDestroyPipeline(device_, p->pipeline, nullptr);
      vkDestroyPipelineLayout(device_, p->layout, nullptr);
      vkDestroyDescriptorSetLayout(device_, p->set_layout, nullptr);
    }
    if (cache_) vkDestroyPipelineCache(device_, cache_, nullptr);
    if (upload_fence_) vkDestroyFence(device_, upload_fence_, nullptr);
    if (upload_pool_) vkDestroyCommandPool(device_, upload_pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
}

Buffer* Device::create(uint64_t size, bool host) {
  auto b = std::make_unique<Buffer>();
  b->size = size;
  b->host = host;
  VkBufferCreateInfo bci{};
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = vkCreateBuffer(device_, &bci, nullptr, &b->buffer);
  if (r != VK_SUCCESS) return nullptr;
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(device_, b->buffer, &req);
  VkMemoryAllocateInfo mai{};
  mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = host ? host_type_ : device_type_;
  r = vkAllocateMemory(device_, &mai, nullptr, &b->memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(device_, b->buffer, nullptr);
    return nullptr;
  }
  check_vk(vkBindBufferMemory(device_, b->buffer, b->memory, 0), "vkBindBufferMemory");
  if (host) check_vk(vkMapMemory(device_, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped), "vkMapMemory");
  return b.release();
}

void Device::destroy(Buffer* b) {
  if (b->mapped) vkUnmapMemory(device_, b->memory);
  vkDestroyBuffer(device_, b->buffer, nullptr);
  vkFreeMemory(device_, b->memory, nullptr);
  delete b;
}

void Device::trim_pool() {
  for (auto& fl : free_) {
    for (auto& [size, b] : fl) {
      if (!b->host) device_bytes_ -= b->size;
      destroy(b);
    }
    fl.clear();
  }
}

void Device::release(Buffer* b) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  free_[b->host ? 1 : 0].emplace(b->size, b);
}

std::shared_ptr<Buffer> Device::buffer(uint64_t bytes, bool host) {
  const uint64_t size = size_class(bytes);
  Buffer* b = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    auto& fl = free_[host ? 1 : 0];
    if (auto it = fl.find(size); it != fl.end()) {
      b = it->second;
      fl.erase(it);
    } else {
      if (!host && memory_limit_ && device_bytes_ + size > memory_limit_) trim_pool();
      if (!host && memory_limit_ && device_bytes_ + size > memory_limit_)
        fail(ErrorCode::kRuntime, "vulkan: out of device memory: ", bytes, " bytes asked on ", info_.name, " with ",
             device_bytes_, " bytes in use and the memory_limit option at ", memory_limit_, " bytes");
      b = create(size, host);
      if (!b) {
        trim_pool();
        b = create(size, host);
      }
      if (!b)
        fail(ErrorCode::kRuntime, "vulkan: out of ", host ? "host-visible" : "device", " memory: ", bytes,
             " bytes could not be allocated on ", info_.name, " (", device_bytes_, " bytes of device memory in use)");
      if (!host) device_bytes_ += size;
    }
  }
  auto self = shared_from_this();
  return std::shared_ptr<Buffer>(b, [self](Buffer* p) { self->release(p); });
}

uint64_t Device::device_bytes() const {
  std::lock_guard<std::mutex> lock(pool_mu_);
  return device_bytes_;
}

Tensor Device::tensor(DType dtype, const Shape& shape) {
  const int64_t n = shape.numel();
  if (n < 0) fail(ErrorCode::kInvalidArgument, "vulkan: cannot allocate a tensor of shape ", shape.to_string());
  const uint64_t bytes = static_cast<uint64_t>(n) * element_bytes(dtype);
  if (bytes > max_range_)
    fail(ErrorCode::kRuntime, "vulkan: a ", shape.to_string(), " tensor (", bytes, " bytes) is larger than ",
         info_.name, "'s storage-buffer range (", max_range_, " bytes)");
  std::shared_ptr<Buffer> b = buffer(std::max<uint64_t>(bytes, 4), false);
  Buffer* raw = b.get();
  return Tensor::device_tensor(dtype, shape, raw, std::move(b), memory_id_);
}

const Pipeline& Device::pipeline(const char* name, uint32_t bindings, bool half) {
  std::string key = name;
  if (half) key += half_packed_ ? "_hp" : "_h";
  std::lock_guard<std::mutex> lock(pipe_mu_);
  auto& slot = pipelines_[key];
  if (slot) return *slot;
  const ShaderBinary* bin = nullptr;
  for (const auto& s : kShaders)
    if (key == s.name) bin = &s;
  if (!bin) fail(ErrorCode::kEpFailure, "vulkan: internal error: no shader named '", key, "'");
  auto p = std::make_unique<Pipeline>();
  p->bindings = bindings;
  std::vector<VkDescriptorSetLayoutBinding> lb(bindings);
  for (uint32_t i = 0; i < bindings; ++i) {
    lb[i] = {};
    lb[i].binding = i;
    lb[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    lb[i].descriptorCount = 1;
    lb[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dl{};
  dl.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  dl.bindingCount = bindings;
  dl.pBindings = lb.data();
  check_vk(vkCreateDescriptorSetLayout(device_, &dl, nullptr, &p->set_layout), "vkCreateDescriptorSetLayout");
  VkPushConstantRange pr{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes};
  VkPipelineLayoutCreateInfo pl{};
  pl.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &p->set_layout;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &pr;
  check_vk(vkCreatePipelineLayout(device_, &pl, nullptr, &p->layout), "vkCreatePipelineLayout");
  VkShaderModuleCreateInfo sm{};
  sm.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  sm.codeSize = bin->bytes;
  sm.pCode = bin->code;
  VkShaderModule mod = VK_NULL_HANDLE;
  check_vk(vkCreateShaderModule(device_, &sm, nullptr, &mod), "vkCreateShaderModule");
  VkComputePipelineCreateInfo cp{};
  cp.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  cp.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cp.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cp.stage.module = mod;
  cp.stage.pName = "main";
  cp.layout = p->layout;
  const VkResult r = vkCreateComputePipelines(device_, cache_, 1, &cp, nullptr, &p->pipeline);
  vkDestroyShaderModule(device_, mod, nullptr);
  check_vk(r, "vkCreateComputePipelines");
  slot = std::move(p);
  return *slot;
}

void Device::submit_and_wait(VkCommandBuffer cmd, VkFence fence) {
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    check_vk(vkQueueSubmit(queue_, 1, &si, fence), "vkQueueSubmit");
  }
  check_vk(vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  check_vk(vkResetFences(device_, 1, &fence), "vkResetFences");
}

void Device::upload_now(const Buffer& dst, const void* src, uint64_t bytes) {
  if (!bytes) return;
  std::shared_ptr<Buffer> staging = buffer(bytes, true);
  std::memcpy(staging->mapped, src, bytes);
  std::lock_guard<std::mutex> lock(upload_mu_);
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check_vk(vkBeginCommandBuffer(upload_cmd_, &bi), "vkBeginCommandBuffer");
  VkBufferCopy c{0, 0, bytes};
  vkCmdCopyBuffer(upload_cmd_, staging->buffer, dst.buffer, 1, &c);
  check_vk(vkEndCommandBuffer(upload_cmd_), "vkEndCommandBuffer");
  submit_and_wait(upload_cmd_, upload_fence_);
}

// ---------------------------------------------------------------------------------------------
// Stream

BufRef device_ref(const Tensor& t, const char* what) {
  if (t.on_host()) fail(ErrorCode::kRuntime, "vulkan: internal error: ", what, " is in host memory, not on the device");
  return {static_cast<const Buffer*>(t.raw_data()), t.storage(), 0};
}

Stream::Stream(std::shared_ptr<Device> device) : device_(std::move(device)) {
  VkDevice d = device_->vk();
  VkCommandPoolCreateInfo cpi{};
  cpi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpi.queueFamilyIndex = device_->queue_family();
  check_vk(vkCreateCommandPool(d, &cpi, nullptr, &pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo cai{};
  cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cai.commandPool = pool_;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  check_vk(vkAllocateCommandBuffers(d, &cai, &cmd_), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fci{};
  fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  check_vk(vkCreateFence(d, &fci, nullptr, &fence_), "vkCreateFence");
}

Stream::~Stream() {
  try {
    flush();
  } catch (...) {
  }
  VkDevice d = device_->vk();
  for (VkDescriptorPool p : desc_pools_) vkDestroyDescriptorPool(d, p, nullptr);
  vkDestroyFence(d, fence_, nullptr);
  vkDestroyCommandPool(d, pool_, nullptr);
}

void Stream::begin() {
  if (recording_) return;
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check_vk(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
  recording_ = true;
}

void Stream::barrier() {
  // Every command depends on the ones before it (nodes run in order); one global barrier each.
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(cmd_, stages, stages | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

VkDescriptorSet Stream::descriptor_set(const Pipeline& pipe) {
  VkDevice d = device_->vk();
  for (;;) {
    if (desc_pool_used_ == desc_pools_.size()) {
      VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 512 * 8};
      VkDescriptorPoolCreateInfo pci{};
      pci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
      pci.maxSets = 512;
      pci.poolSizeCount = 1;
      pci.pPoolSizes = &ps;
      VkDescriptorPool p = VK_NULL_HANDLE;
      check_vk(vkCreateDescriptorPool(d, &pci, nullptr, &p), "vkCreateDescriptorPool");
      desc_pools_.push_back(p);
    }
    VkDescriptorSetAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorPool = desc_pools_[desc_pool_used_];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &pipe.set_layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    const VkResult r = vkAllocateDescriptorSets(d, &ai, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) fail_vk(r, "vkAllocateDescriptorSets");
    ++desc_pool_used_;
  }
}

void Stream::dispatch(const Pipeline& pipe, std::initializer_list<BufRef> bufs, const void* push, size_t push_bytes,
                      uint32_t gx, uint32_t gy, uint32_t gz) {
  if (bufs.size() != pipe.bindings)
    fail(ErrorCode::kEpFailure, "vulkan: internal error: ", bufs.size(), " buffers for a pipeline with ", pipe.bindings,
         " bindings");
  if (push_bytes > kPushBytes) fail(ErrorCode::kEpFailure, "vulkan: internal error: push constants too large");
  if (!gx || !gy || !gz) return;
  for (int a = 0; a < 3; ++a) {
    const uint32_t g = a == 0 ? gx : a == 1 ? gy : gz;
    if (g > device_->max_groups(a))
      fail(ErrorCode::kRuntime, "vulkan: a dispatch of ", g, " work groups along axis ", a, " exceeds ",
           device_->info().name, "'s limit of ", device_->max_groups(a));
  }
  begin();
  VkDescriptorSet set = descriptor_set(pipe);
  VkDescriptorBufferInfo infos[8];
  VkWriteDescriptorSet writes[8];
  uint32_t i = 0;
  for (const BufRef& b : bufs) {
    infos[i] = {b.buf->buffer, b.offset, VK_WHOLE_SIZE};
    writes[i] = {};
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
    if (b.keep) keep_.push_back(b.keep);
    ++i;
  }
  vkUpdateDescriptorSets(device_->vk(), i, writes, 0, nullptr);
  vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipe.pipeline);
  vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipe.layout, 0, 1, &set, 0, nullptr);
  uint8_t pc[kPushBytes] = {};
  std::memcpy(pc, push, push_bytes);
  vkCmdPushConstants(cmd_, pipe.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes, pc);
  vkCmdDispatch(cmd_, gx, gy, gz);
  barrier();
}

void Stream::dispatch_1d(const Pipeline& pipe, std::initializer_list<BufRef> bufs, const void* push, size_t push_bytes,
                         uint64_t items, uint32_t local) {
  if (!items) return;
  const uint64_t groups = (items + local - 1) / local;
  const uint64_t gx = std::min<uint64_t>(groups, 65535);
  const uint64_t gy = (groups + gx - 1) / gx;
  dispatch(pipe, bufs, push, push_bytes, static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1);
}

void Stream::copy(const BufRef& src, const BufRef& dst, uint64_t bytes) {
  if (!bytes) return;
  begin();
  VkBufferCopy c{src.offset, dst.offset, bytes};
  vkCmdCopyBuffer(cmd_, src.buf->buffer, dst.buf->buffer, 1, &c);
  if (src.keep) keep_.push_back(src.keep);
  if (dst.keep) keep_.push_back(dst.keep);
  barrier();
}

void Stream::upload(const void* src, const BufRef& dst, uint64_t bytes) {
  if (!bytes) return;
  std::shared_ptr<Buffer> staging = device_->buffer(bytes, true);
  std::memcpy(staging->mapped, src, bytes);
  Buffer* raw = staging.get();
  copy({raw, std::move(staging), 0}, dst, bytes);
}

void Stream::download(const BufRef& src, void* dst, uint64_t bytes) {
  if (!bytes) return;
  std::shared_ptr<Buffer> staging = device_->buffer(bytes, true);
  copy(src, {staging.get(), staging, 0}, bytes);
  flush();
  std::memcpy(dst, staging->mapped, bytes);
}

namespace {

// float32 <-> float16 arrays, rounding to nearest even as Float16 does (F16C where the build has it).
void floats_to_halves(const float* src, uint16_t* dst, uint64_t n) {
  uint64_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) dst[i] = Float16::from_float(src[i]);
}

void halves_to_floats(const uint16_t* src, float* dst, uint64_t n) {
  uint64_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = Float16::to_float(src[i]);
}

}  // namespace

void Stream::upload_as_half(const float* src, const BufRef& dst, uint64_t n) {
  if (!n) return;
  std::shared_ptr<Buffer> staging = device_->buffer(n * 2, true);
  floats_to_halves(src, static_cast<uint16_t*>(staging->mapped), n);
  Buffer* raw = staging.get();
  copy({raw, std::move(staging), 0}, dst, n * 2);
}

void Stream::download_as_float(const BufRef& src, float* dst, uint64_t n) {
  if (!n) return;
  std::shared_ptr<Buffer> staging = device_->buffer(n * 2, true);
  copy(src, {staging.get(), staging, 0}, n * 2);
  flush();
  halves_to_floats(static_cast<const uint16_t*>(staging->mapped), dst, n);
}

void Stream::flush() {
  if (!recording_) return;
  recording_ = false;
  struct Reset {
    Stream& s;
    ~Reset() {
      s.keep_.clear();
      for (VkDescriptorPool p : s.desc_pools_) vkResetDescriptorPool(s.device_->vk(), p, 0);
      s.desc_pool_used_ = 0;
      vkResetCommandBuffer(s.cmd_, 0);
    }
  } reset{*this};
  check_vk(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
  ++submissions_;
  device_->submit_and_wait(cmd_, fence_);
  if (!checks_.empty()) {
    uint32_t code = 0;
    std::memcpy(&code, error_->mapped, 4);
    const std::string* msg = code != 0 && code <= checks_.size() ? checks_[code - 1] : nullptr;
    checks_.clear();  // keeps its capacity: no allocation per run once warm
    if (code != 0) {
      std::memset(error_->mapped, 0, 4);
      fail(ErrorCode::kRuntime, "vulkan: ", msg ? *msg : std::string("a kernel found bad data"));
    }
  }
}

uint32_t Stream::check_code(const std::string* message) {
  if (!error_) {
    error_ = device_->buffer(4, true);
    std::memset(error_->mapped, 0, 4);
  }
  checks_.push_back(message);
  return static_cast<uint32_t>(checks_.size());
}

BufRef Stream::error_word() { return {error_.get(), error_, 0}; }

}  // namespace onyx::vulkan
