// The Vulkan EP's options and entry point (provider.cpp, ep.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ep/factory.hpp"

namespace onyx::vulkan {

/// Effective options, validated.
struct Settings {
  int device_id = -1;           // -1: discrete GPU, then integrated, virtual, CPU
  uint64_t memory_limit = 0;    // bytes of device memory the EP may hold; 0: no limit
  std::string matmul = "auto";  // matrix-product kernel: auto, tiled, simple
  bool fp16_storage = false;    // float32 tensors stored as float16 on the device
};
/// Reads and checks the options (throws onyx::Error naming the key on a bad value).
Settings parse_settings(const OptionList& options);

/// The per-session EP (ep.cpp).
std::unique_ptr<ExecutionProvider> create_vulkan_ep(const EpCreateContext& ctx);

}  // namespace onyx::vulkan
