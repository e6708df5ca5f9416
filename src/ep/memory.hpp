// Device memories: ids for Tensor::memory(), and the allocator interface device EPs provide.
#pragma once

#include <string>

#include "onyx/tensor.hpp"

namespace onyx {

/// The id of memory `name` ("cpu" is 0); the same name always gives the same id.
int register_device_memory(const std::string& name);

/// Allocates tensors in one device memory. Implementations must be thread-safe and should reuse
/// buffers (the executor also caches planned device buffers per run context).
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  virtual int memory() const = 0;
  /// A device tensor of `dtype` and `shape`; throws onyx::Error (kRuntime, "out of device memory
  /// ...") when the device cannot provide it.
  virtual Tensor allocate(DType dtype, const Shape& shape) = 0;
};

}  // namespace onyx
