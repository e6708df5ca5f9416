// The Vulkan execution provider (module libonyx_ep_vulkan.so): factory, options, availability.
#include <cstdlib>

#include "ep/module_entry.hpp"
#include "vk_device.hpp"
#include "vulkan_provider.hpp"

namespace onyx::vulkan {

namespace {

std::string api_string(uint32_t v) {
  return str(VK_API_VERSION_MAJOR(v), ".", VK_API_VERSION_MINOR(v), ".", VK_API_VERSION_PATCH(v));
}

}  // namespace

Settings parse_settings(const OptionList& o) {
  Settings s;
  const std::string id = option(o, "device_id", "-1");
  char* end = nullptr;
  const long v = std::strtol(id.c_str(), &end, 10);
  if (id.empty() || *end || v < -1 || v > 255)
    fail(ErrorCode::kInvalidArgument,
         "vulkan: option 'device_id' must be -1 (pick the best device) or a device index, got '", id, "'");
  s.device_id = static_cast<int>(v);
  const std::string lim = option(o, "memory_limit_mb", "0");
  const long long mb = std::strtoll(lim.c_str(), &end, 10);
  if (lim.empty() || *end || mb < 0)
    fail(ErrorCode::kInvalidArgument, "vulkan: option 'memory_limit_mb' must be a non-negative integer, got '", lim,
         "'");
  s.memory_limit = static_cast<uint64_t>(mb) << 20;
  s.matmul = option(o, "matmul_kernel", "auto");
  if (s.matmul != "auto" && s.matmul != "tiled" && s.matmul != "simple")
    fail(ErrorCode::kInvalidArgument, "vulkan: option 'matmul_kernel' must be auto, tiled or simple, got '", s.matmul,
         "'");
  const std::string fp16 = option(o, "fp16_storage", "false");
  if (fp16 == "true" || fp16 == "1")
    s.fp16_storage = true;
  else if (fp16 != "false" && fp16 != "0")
    fail(ErrorCode::kInvalidArgument, "vulkan: option 'fp16_storage' must be true or false, got '", fp16, "'");
  return s;
}

class Factory final : public EpFactory {
 public:
  std::string name() const override { return "vulkan"; }
  std::string version() const override {
    try {
      const auto devices = list_devices();
      if (devices.empty()) return "Vulkan (no device)";
      const DeviceInfo& d = devices[pick_device(devices, -1)];
      return str("Vulkan ", api_string(d.api_version), " on ", d.name, " (", d.type, ", device ", d.index, " of ",
                 devices.size(), "; float16 ",
                 !d.storage16 ? "packed in 32-bit words: the device has no 16-bit storage (storageBuffer16BitAccess)"
                 : force_packed_halves() ? "packed in 32-bit words: ONYX_VULKAN_FP16_PACKED is set"
                                         : "in 16-bit storage buffers",
                 ")");
    } catch (const std::exception&) {
      return "Vulkan (no instance)";
    }
  }
  std::vector<ep::OptionInfo> options() const override {
    return {{"device_id", "int", "-1",
             "Vulkan device index (as vulkaninfo lists them); -1 picks a discrete GPU, else an integrated GPU, else a "
             "virtual GPU, else a CPU implementation such as lavapipe"},
            {"memory_limit_mb", "int", "0",
             "device memory (MiB) the EP may hold for tensors and weights; 0 = no limit. Past it a run fails with "
             "'out of device memory'"},
            {"matmul_kernel", "enum:auto|tiled|simple", "auto",
             "kernel of MatMul, Gemm and Conv: 'tiled' (shared-memory tiles, for GPUs), 'simple' (no shared memory "
             "or barriers, for CPU implementations such as lavapipe), 'auto' (by device type)"},
            {"fp16_storage", "bool", "false",
             "store float32 tensors as float16 in device memory (half the memory and bandwidth; every stored value, "
             "weights included, is rounded to float16; arithmetic stays float32). float16 models run in float16 "
             "storage either way"}};
  }
  bool probe(std::string* reason) const override {
    try {
      const auto devices = list_devices();
      const int index = pick_device(devices, -1);
      Device::open(index, 0);
      return true;
    } catch (const std::exception& e) {
      *reason = e.what();
      return false;
    }
  }
  std::unique_ptr<ExecutionProvider> create(const EpCreateContext& ctx) const override { return create_vulkan_ep(ctx); }
};

}  // namespace onyx::vulkan

ONYX_EP_MODULE("vulkan", onyx::vulkan::Factory)
