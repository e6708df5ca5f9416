// WebGPU EP internals: instance, adapters, the shared device, its buffer pool and pipelines, and
// the per-run command stream. Every asynchronous wgpu-native call (device request, buffer
// mapping, queue completion) is driven by polling with a bound, so a wait never hangs.
#include "wg_device.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

namespace onyx::webgpu {

namespace {

/// Longest wait for the device (a queue's work, a mapping, a device request).
constexpr auto kWaitBound = std::chrono::seconds(120);

WGPUStringView sv(const char* s) { return WGPUStringView{s, WGPU_STRLEN}; }
std::string to_string(WGPUStringView v) {
  if (!v.data) return "";
  return v.length == WGPU_STRLEN ? std::string(v.data) : std::string(v.data, v.length);
}

const char* adapter_type_name(WGPUAdapterType t) {
  switch (t) {
    case WGPUAdapterType_DiscreteGPU:
      return "discrete GPU";
    case WGPUAdapterType_IntegratedGPU:
      return "integrated GPU";
    case WGPUAdapterType_CPU:
      return "CPU";
    default:
      return "unknown";
  }
}

const char* backend_name(WGPUBackendType b) {
  switch (b) {
    case WGPUBackendType_Vulkan:
      return "Vulkan";
    case WGPUBackendType_Metal:
      return "Metal";
    case WGPUBackendType_D3D12:
      return "D3D12";
    case WGPUBackendType_OpenGL:
      return "OpenGL";
    case WGPUBackendType_OpenGLES:
      return "OpenGLES";
    default:
      return "other";
  }
}

}  // namespace

/// An instance with only the Vulkan backend enabled, and its adapters. Held by the devices made
/// from it and released with the last one: a process that forks after probing (the conformance
/// runner) must not hand its children a live instance, whose driver threads do not survive fork.
struct Instance {
  WGPUInstance instance = nullptr;
  std::vector<WGPUAdapter> adapters;
  Instance() {
    WGPUInstanceExtras extras;
    std::memset(&extras, 0, sizeof extras);
    extras.chain.sType = static_cast<WGPUSType>(WGPUSType_InstanceExtras);
    extras.backends = WGPUInstanceBackend_Vulkan;
    WGPUInstanceDescriptor desc = WGPU_INSTANCE_DESCRIPTOR_INIT;
    desc.nextInChain = &extras.chain;
    instance = wgpuCreateInstance(&desc);
    if (!instance) fail(ErrorCode::kEpFailure, "webgpu: wgpu-native could not create an instance");
    WGPUInstanceEnumerateAdapterOptions opts{};
    opts.backends = WGPUInstanceBackend_Vulkan;
    const size_t n = wgpuInstanceEnumerateAdapters(instance, &opts, nullptr);
    adapters.resize(n);
    if (n) adapters.resize(wgpuInstanceEnumerateAdapters(instance, &opts, adapters.data()));
  }
  ~Instance() {
    for (WGPUAdapter a : adapters) wgpuAdapterRelease(a);
    wgpuInstanceRelease(instance);
  }
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
};

namespace {

/// The live instance, or a new one.
std::shared_ptr<Instance> open_instance() {
  static std::mutex mu;
  static std::weak_ptr<Instance> live;
  std::lock_guard<std::mutex> lock(mu);
  if (auto i = live.lock()) return i;
  auto i = std::make_shared<Instance>();
  live = i;
  return i;
}

AdapterInfo describe(WGPUAdapter a, int index) {
  AdapterInfo info;
  info.index = index;
  WGPUAdapterInfo w = WGPU_ADAPTER_INFO_INIT;
  if (wgpuAdapterGetInfo(a, &w) == WGPUStatus_Success) {
    info.name = to_string(w.device);
    info.type = adapter_type_name(w.adapterType);
    info.backend = backend_name(w.backendType);
    info.driver = to_string(w.description);
    wgpuAdapterInfoFreeMembers(w);
  }
  if (info.name.empty()) info.name = "adapter " + std::to_string(index);
  return info;
}

/// Drives wgpu-native until `flag` is set or the bound passes.
bool drive_until(WGPUInstance instance, WGPUDevice device, const std::atomic<int>& flag) {
  const auto start = std::chrono::steady_clock::now();
  for (int spins = 0; !flag.load(std::memory_order_acquire); ++spins) {
    if (device) wgpuDevicePoll(device, false, nullptr);
    wgpuInstanceProcessEvents(instance);
    if (flag.load(std::memory_order_acquire)) break;
    if (std::chrono::steady_clock::now() - start > kWaitBound) return false;
    if (spins < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(spins < 1024 ? 20 : 200));
  }
  return true;
}

std::mutex g_devices_mu;
std::map<std::string, std::weak_ptr<Device>> g_devices;

}  // namespace

std::string wgpu_version() {
  const uint32_t v = wgpuGetVersion();
  return str((v >> 24) & 0xff, ".", (v >> 16) & 0xff, ".", (v >> 8) & 0xff, ".", v & 0xff);
}

std::vector<AdapterInfo> list_adapters() {
  // Listed once per process (each enumeration makes Mesa's device-select layer look for a Wayland
  // display, which prints a line where there is none).
  static std::mutex mu;
  static std::vector<AdapterInfo> cached;
  static bool listed = false;
  std::lock_guard<std::mutex> lock(mu);
  if (!listed) {
    const auto inst = open_instance();
    for (size_t i = 0; i < inst->adapters.size(); ++i)
      cached.push_back(describe(inst->adapters[i], static_cast<int>(i)));
    listed = true;
  }
  return cached;
}

int pick_adapter(const std::vector<AdapterInfo>& adapters, int device_id) {
  if (adapters.empty())
    fail(ErrorCode::kEpFailure,
         "webgpu: wgpu-native found no Vulkan adapter (no Vulkan driver or device; install "
         "a Vulkan driver, e.g. mesa-vulkan-drivers for lavapipe)");
  if (device_id >= 0) {
    if (device_id >= static_cast<int>(adapters.size()))
      fail(ErrorCode::kInvalidArgument, "webgpu: option 'device_id' is ", device_id, " but there are only ",
           adapters.size(), " adapters");
    return device_id;
  }
  for (const auto& a : adapters)
    if (a.type != "CPU") return a.index;
  return adapters.front().index;
}

// ---------------------------------------------------------------------------------------------
// Device

void Device::on_error(WGPUDevice const*, WGPUErrorType type, WGPUStringView message, void* u1, void*) {
  auto* d = static_cast<Device*>(u1);
  std::lock_guard<std::mutex> lock(d->err_mu_);
  if (!d->error_.empty()) return;
  const char* kind = type == WGPUErrorType_OutOfMemory  ? "out of device memory"
                     : type == WGPUErrorType_Validation ? "validation error"
                                                        : "device error";
  d->error_ = str(kind, ": ", to_string(message));
}

void Device::on_lost(WGPUDevice const*, WGPUDeviceLostReason reason, WGPUStringView message, void* u1, void*) {
  if (reason == WGPUDeviceLostReason_Destroyed || reason == WGPUDeviceLostReason_CallbackCancelled) return;
  auto* d = static_cast<Device*>(u1);
  std::lock_guard<std::mutex> lock(d->err_mu_);
  d->error_ = str("device lost: ", to_string(message));
}

std::shared_ptr<Device> Device::open(int index, const DeviceOptions& options) {
  const std::string key = str(index, "/", options.pool_buffers, "/", options.validate_each_node);
  std::lock_guard<std::mutex> lock(g_devices_mu);
  if (auto d = g_devices[key].lock()) return d;
  auto inst = open_instance();
  const auto& adapters = inst->adapters;
  if (index < 0 || index >= static_cast<int>(adapters.size()))
    fail(ErrorCode::kInvalidArgument, "webgpu: option 'device_id': no adapter ", index);
  std::shared_ptr<Device> d(new Device());
  d->options_ = options;
  d->info_ = describe(adapters[index], index);
  d->instance_ = inst;
  d->adapter_ = adapters[index];  // owned by the instance

  WGPULimits limits = WGPU_LIMITS_INIT;
  const bool have_limits = wgpuAdapterGetLimits(d->adapter_, &limits) == WGPUStatus_Success;
  if (have_limits) {
    d->max_binding_ = limits.maxStorageBufferBindingSize;
    d->max_buffer_ = limits.maxBufferSize;
    d->max_groups_ = limits.maxComputeWorkgroupsPerDimension;
  }
  WGPUDeviceDescriptor desc = WGPU_DEVICE_DESCRIPTOR_INIT;
  desc.label = sv("onyx webgpu");
  if (have_limits) desc.requiredLimits = &limits;  // everything the adapter offers
  desc.uncapturedErrorCallbackInfo.callback = &Device::on_error;
  desc.uncapturedErrorCallbackInfo.userdata1 = d.get();
  desc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  desc.deviceLostCallbackInfo.callback = &Device::on_lost;
  desc.deviceLostCallbackInfo.userdata1 = d.get();

  struct Result {
    std::atomic<int> done{0};
    WGPUDevice device = nullptr;
    std::string message;
  } r;
  WGPURequestDeviceCallbackInfo cb = WGPU_REQUEST_DEVICE_CALLBACK_INFO_INIT;
  cb.mode = WGPUCallbackMode_AllowSpontaneous;
  cb.callback = [](WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void* u1, void*) {
    auto* res = static_cast<Result*>(u1);
    if (status == WGPURequestDeviceStatus_Success)
      res->device = device;
    else
      res->message = to_string(message);
    res->done.store(1, std::memory_order_release);
  };
  cb.userdata1 = &r;
  wgpuAdapterRequestDevice(d->adapter_, &desc, cb);
  if (!drive_until(inst->instance, nullptr, r.done))
    fail(ErrorCode::kEpFailure, "webgpu: timed out requesting a device on ", d->info_.name);
  if (!r.device) fail(ErrorCode::kEpFailure, "webgpu: could not open a device on ", d->info_.name, ": ", r.message);
  d->device_ = r.device;
  d->queue_ = wgpuDeviceGetQueue(d->device_);
  d->memory_id_ = register_device_memory(d->memory_name());
  g_devices[key] = d;
  return d;
}

Device::~Device() {
  for (auto& [size, b] : free_) {
    wgpuBufferRelease(b->buffer);
    delete b;
  }
  for (auto& [name, p] : pipelines_) wgpuComputePipelineRelease(p);
  if (queue_) wgpuQueueRelease(queue_);
  if (device_) wgpuDeviceRelease(device_);
  instance_.reset();
}

std::shared_ptr<Buffer> Device::buffer(uint64_t bytes) {
  // Size classes: powers of two from 256 bytes, so a freed buffer serves later requests.
  uint64_t size = 256;
  while (size < bytes) size <<= 1;
  if (size > max_buffer_) size = (bytes + 255) / 256 * 256;
  if (size > max_buffer_)
    fail(ErrorCode::kRuntime, "webgpu: out of device memory: ", bytes, " bytes asked, above ", info_.name,
         "'s largest buffer (", max_buffer_, " bytes)");
  Buffer* b = nullptr;
  if (options_.pool_buffers) {
    std::lock_guard<std::mutex> lock(pool_mu_);
    auto it = free_.find(size);
    if (it != free_.end()) {
      b = it->second;
      free_.erase(it);
    }
  }
  if (!b) {
    WGPUBufferDescriptor desc = WGPU_BUFFER_DESCRIPTOR_INIT;
    desc.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    desc.size = size;
    WGPUBuffer w = wgpuDeviceCreateBuffer(device_, &desc);
    if (!w) fail(ErrorCode::kRuntime, "webgpu: out of device memory: ", size, " bytes asked on ", info_.name);
    b = new Buffer{w, size};
  }
  std::shared_ptr<Device> self = shared_from_this();
  return std::shared_ptr<Buffer>(b, [self](Buffer* p) { self->release(p); });
}

void Device::release(Buffer* b) {
  if (options_.pool_buffers) {
    std::lock_guard<std::mutex> lock(pool_mu_);
    free_.emplace(b->size, b);
    return;
  }
  wgpuBufferRelease(b->buffer);
  delete b;
}

Tensor Device::tensor(DType dtype, const Shape& shape) {
  const int64_t n = shape.numel();
  if (n < 0) fail(ErrorCode::kInvalidArgument, "webgpu: cannot allocate a tensor of shape ", shape.to_string());
  const uint64_t bytes = static_cast<uint64_t>(n) * dtype_size(dtype);
  if (bytes > max_binding_)
    fail(ErrorCode::kRuntime, "webgpu: a ", shape.to_string(), " tensor (", bytes, " bytes) is larger than ",
         info_.name, "'s storage-buffer binding limit (", max_binding_, " bytes)");
  std::shared_ptr<Buffer> b = buffer(std::max<uint64_t>(bytes, 4));
  Buffer* raw = b.get();
  return Tensor::device_tensor(dtype, shape, raw, std::move(b), memory_id_);
}

void Device::write_now(const Buffer& dst, const void* src, uint64_t bytes) {
  if (bytes == 0) return;
  const uint64_t padded = (bytes + 3) / 4 * 4;
  if (padded == bytes) {
    wgpuQueueWriteBuffer(queue_, dst.buffer, 0, src, bytes);
  } else {
    std::vector<uint8_t> tmp(padded, 0);
    std::memcpy(tmp.data(), src, bytes);
    wgpuQueueWriteBuffer(queue_, dst.buffer, 0, tmp.data(), padded);
  }
}

WGPUComputePipeline Device::pipeline(const std::string& name, const char* wgsl) {
  std::lock_guard<std::mutex> lock(pipe_mu_);
  auto it = pipelines_.find(name);
  if (it != pipelines_.end()) return it->second;
  WGPUShaderSourceWGSL src = WGPU_SHADER_SOURCE_WGSL_INIT;
  src.code = sv(wgsl);
  WGPUShaderModuleDescriptor md = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
  md.nextInChain = &src.chain;
  md.label = sv(name.c_str());
  WGPUShaderModule module = wgpuDeviceCreateShaderModule(device_, &md);
  WGPUComputePipelineDescriptor pd = WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT;
  pd.label = sv(name.c_str());
  pd.compute.module = module;
  pd.compute.entryPoint = sv("main");
  WGPUComputePipeline p = module ? wgpuDeviceCreateComputePipeline(device_, &pd) : nullptr;
  if (module) wgpuShaderModuleRelease(module);
  std::string err;
  {
    std::lock_guard<std::mutex> elock(err_mu_);
    err.swap(error_);
  }
  if (!p || !err.empty()) {
    if (p) wgpuComputePipelineRelease(p);
    fail(ErrorCode::kEpFailure, "webgpu: internal error: kernel '", name, "' did not compile: ", err);
  }
  pipelines_[name] = p;
  return p;
}

void Device::wait_for(const std::atomic<int>& flag, const char* what) {
  if (!drive_until(instance_->instance, device_, flag))
    fail(ErrorCode::kRuntime, "webgpu: timed out after ", kWaitBound.count(), " s waiting for ", what, " on ",
         info_.name);
}

void Device::check_errors(const std::string& where) {
  std::string err;
  {
    std::lock_guard<std::mutex> lock(err_mu_);
    err.swap(error_);
  }
  if (!err.empty()) fail(ErrorCode::kRuntime, "webgpu: ", where, ": ", err);
}

BufRef device_ref(const Tensor& t, const char* what) {
  if (t.on_host()) fail(ErrorCode::kRuntime, "webgpu: internal error: ", what, " is in host memory, not on the device");
  return {static_cast<const Buffer*>(t.raw_data()), t.storage()};
}

// ---------------------------------------------------------------------------------------------
// Stream

Stream::~Stream() {
  if (encoder_) wgpuCommandEncoderRelease(encoder_);
}

WGPUCommandEncoder Stream::encoder() {
  if (!encoder_) {
    WGPUCommandEncoderDescriptor d = WGPU_COMMAND_ENCODER_DESCRIPTOR_INIT;
    encoder_ = wgpuDeviceCreateCommandEncoder(device_->wgpu(), &d);
    if (!encoder_) fail(ErrorCode::kRuntime, "webgpu: could not create a command encoder");
  }
  return encoder_;
}

void Stream::dispatch(const std::string& name, const char* wgsl, const Params& params,
                      std::initializer_list<BufRef> bufs, uint32_t gx, uint32_t gy, uint32_t gz) {
  if (gx == 0 || gy == 0 || gz == 0) return;
  const uint32_t lim = device_->max_groups();
  if (gx > lim || gy > lim || gz > lim)
    fail(ErrorCode::kRuntime, "webgpu: ", name, ": ", gx, "x", gy, "x", gz,
         " work groups exceed the device's limit of ", lim, " per dimension");
  WGPUComputePipeline pipe = device_->pipeline(name, wgsl);
  WGPUDevice dev = device_->wgpu();
  // Binding 0: the parameters, in a uniform buffer filled at creation.
  WGPUBufferDescriptor ud = WGPU_BUFFER_DESCRIPTOR_INIT;
  ud.usage = WGPUBufferUsage_Uniform;
  ud.size = sizeof(params.w);
  ud.mappedAtCreation = 1;
  WGPUBuffer uniform = wgpuDeviceCreateBuffer(dev, &ud);
  if (!uniform) fail(ErrorCode::kRuntime, "webgpu: out of device memory (a parameter buffer)");
  std::memcpy(wgpuBufferGetMappedRange(uniform, 0, sizeof(params.w)), params.w, sizeof(params.w));
  wgpuBufferUnmap(uniform);
  keep_.emplace_back(uniform, [](void* b) { wgpuBufferRelease(static_cast<WGPUBuffer>(b)); });

  std::vector<WGPUBindGroupEntry> entries;
  WGPUBindGroupEntry e0 = WGPU_BIND_GROUP_ENTRY_INIT;
  e0.binding = 0;
  e0.buffer = uniform;
  e0.size = sizeof(params.w);
  entries.push_back(e0);
  uint32_t binding = 1;
  for (const BufRef& b : bufs) {
    WGPUBindGroupEntry e = WGPU_BIND_GROUP_ENTRY_INIT;
    e.binding = binding++;
    e.buffer = b.buf->buffer;
    e.size = b.buf->size;
    entries.push_back(e);
    keep_.push_back(b.keep);
  }
  WGPUBindGroupLayout layout = wgpuComputePipelineGetBindGroupLayout(pipe, 0);
  WGPUBindGroupDescriptor bd = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
  bd.layout = layout;
  bd.entryCount = entries.size();
  bd.entries = entries.data();
  WGPUBindGroup group = wgpuDeviceCreateBindGroup(dev, &bd);
  wgpuBindGroupLayoutRelease(layout);
  if (!group) fail(ErrorCode::kRuntime, "webgpu: ", name, ": could not create a bind group");
  keep_.emplace_back(group, [](void* g) { wgpuBindGroupRelease(static_cast<WGPUBindGroup>(g)); });

  WGPUComputePassDescriptor pd = WGPU_COMPUTE_PASS_DESCRIPTOR_INIT;
  WGPUComputePassEncoder pass = wgpuCommandEncoderBeginComputePass(encoder(), &pd);
  wgpuComputePassEncoderSetPipeline(pass, pipe);
  wgpuComputePassEncoderSetBindGroup(pass, 0, group, 0, nullptr);
  wgpuComputePassEncoderDispatchWorkgroups(pass, gx, gy, gz);
  wgpuComputePassEncoderEnd(pass);
  wgpuComputePassEncoderRelease(pass);
}

void Stream::dispatch_1d(const std::string& name, const char* wgsl, Params params, std::initializer_list<BufRef> bufs,
                         uint64_t items) {
  if (items == 0) return;
  const uint64_t groups = (items + 255) / 256;
  const uint64_t lim = device_->max_groups();
  const uint64_t gx = std::min(groups, lim);
  const uint64_t gy = (groups + gx - 1) / gx;
  params.w[31] = static_cast<uint32_t>(gx * 256);
  dispatch(name, wgsl, params, bufs, static_cast<uint32_t>(gx), static_cast<uint32_t>(gy));
}

void Stream::upload(const void* src, const BufRef& dst, uint64_t bytes) {
  if (bytes == 0) return;
  const uint64_t padded = (bytes + 3) / 4 * 4;
  WGPUBufferDescriptor d = WGPU_BUFFER_DESCRIPTOR_INIT;
  d.usage = WGPUBufferUsage_CopySrc;
  d.size = padded;
  d.mappedAtCreation = 1;
  WGPUBuffer staging = wgpuDeviceCreateBuffer(device_->wgpu(), &d);
  if (!staging) fail(ErrorCode::kRuntime, "webgpu: out of memory for a ", bytes, "-byte staging buffer");
  void* p = wgpuBufferGetMappedRange(staging, 0, padded);
  std::memcpy(p, src, bytes);
  if (padded != bytes) std::memset(static_cast<uint8_t*>(p) + bytes, 0, padded - bytes);
  wgpuBufferUnmap(staging);
  keep_.emplace_back(staging, [](void* b) { wgpuBufferRelease(static_cast<WGPUBuffer>(b)); });
  keep_.push_back(dst.keep);
  wgpuCommandEncoderCopyBufferToBuffer(encoder(), staging, 0, dst.buf->buffer, 0, padded);
}

void Stream::download(const BufRef& src, void* dst, uint64_t bytes) {
  if (bytes == 0) return;
  const uint64_t padded = (bytes + 3) / 4 * 4;
  WGPUBufferDescriptor d = WGPU_BUFFER_DESCRIPTOR_INIT;
  d.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
  d.size = padded;
  WGPUBuffer staging = wgpuDeviceCreateBuffer(device_->wgpu(), &d);
  if (!staging) fail(ErrorCode::kRuntime, "webgpu: out of memory for a ", bytes, "-byte staging buffer");
  std::shared_ptr<void> hold(staging, [](void* b) { wgpuBufferRelease(static_cast<WGPUBuffer>(b)); });
  keep_.push_back(src.keep);
  wgpuCommandEncoderCopyBufferToBuffer(encoder(), src.buf->buffer, 0, staging, 0, padded);
  submit_and_wait("download");
  struct Map {
    std::atomic<int> done{0};
    WGPUMapAsyncStatus status = WGPUMapAsyncStatus_Error;
    std::string message;
  };
  auto* mp = new Map();  // heap-held: a wait that times out leaves it to the late callback
  Map& m = *mp;
  WGPUBufferMapCallbackInfo cb = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
  cb.mode = WGPUCallbackMode_AllowSpontaneous;
  cb.callback = [](WGPUMapAsyncStatus status, WGPUStringView message, void* u1, void*) {
    auto* mm = static_cast<Map*>(u1);
    mm->status = status;
    mm->message = to_string(message);
    mm->done.store(1, std::memory_order_release);
  };
  cb.userdata1 = mp;
  wgpuBufferMapAsync(staging, WGPUMapMode_Read, 0, padded, cb);
  device_->wait_for(m.done, "a buffer mapping");
  const std::unique_ptr<Map> owned(mp);
  if (m.status != WGPUMapAsyncStatus_Success)
    fail(ErrorCode::kRuntime, "webgpu: reading a result back failed: ", m.message);
  const void* p = wgpuBufferGetConstMappedRange(staging, 0, padded);
  if (!p) fail(ErrorCode::kRuntime, "webgpu: reading a result back failed: no mapped range");
  std::memcpy(dst, p, bytes);
  wgpuBufferUnmap(staging);
}

void Stream::submit_and_wait(const std::string& where) {
  if (encoder_) {
    WGPUCommandBufferDescriptor cd = WGPU_COMMAND_BUFFER_DESCRIPTOR_INIT;
    WGPUCommandBuffer cmd = wgpuCommandEncoderFinish(encoder_, &cd);
    wgpuCommandEncoderRelease(encoder_);
    encoder_ = nullptr;
    if (cmd) {
      wgpuQueueSubmit(device_->queue(), 1, &cmd);
      wgpuCommandBufferRelease(cmd);
      ++submissions_;
    }
    // Heap-held: a wait that times out leaves it to the callback that may still come.
    auto* done = new std::atomic<int>(0);
    WGPUQueueWorkDoneCallbackInfo cb = WGPU_QUEUE_WORK_DONE_CALLBACK_INFO_INIT;
    cb.mode = WGPUCallbackMode_AllowSpontaneous;
    cb.callback = [](WGPUQueueWorkDoneStatus, WGPUStringView, void* u1, void*) {
      static_cast<std::atomic<int>*>(u1)->store(1, std::memory_order_release);
    };
    cb.userdata1 = done;
    wgpuQueueOnSubmittedWorkDone(device_->queue(), cb);
    try {
      device_->wait_for(*done, "the queue's work");
    } catch (...) {
      keep_.clear();
      throw;
    }
    delete done;
  }
  keep_.clear();
  device_->check_errors(where);
}

void Stream::flush(const std::string& where) {
  if (!encoder_ && keep_.empty()) return;
  submit_and_wait(where);
}

}  // namespace onyx::webgpu
