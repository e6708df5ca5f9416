// WebGPU EP internals shared by its files: options, the kernel manifest (one OpDef per op with its
// claim check and host-read inputs) and the kernel base class.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ep/device_shapes.hpp"
#include "ep/factory.hpp"
#include "ep/provider.hpp"
#include "wg_device.hpp"

namespace onyx::webgpu {

/// Highest ai.onnx opset whose semantics the claims were checked against (as the Vulkan EP).
constexpr int kMaxOpset = 21;
/// Largest rank the index-mapping kernels handle.
constexpr int kMaxRank = 6;

/// Effective options, validated.
struct Settings {
  int device_id = -1;  // -1: first non-CPU adapter, else the first CPU one (lavapipe)
  DeviceOptions device;
};
/// Reads and checks the options (throws onyx::Error naming the key on a bad value).
Settings parse_settings(const OptionList& options);
/// The per-session EP.
std::unique_ptr<ExecutionProvider> create_webgpu_ep(const EpCreateContext& ctx);

// in_type(), out_type(), in_rank(), is_constant(): ep/provider.hpp (shared with the Vulkan EP).

/// One line of the manifest.
struct OpDef {
  const char* op;
  int since, until;
  /// Inputs read on the host (constant operands such as Clip's bounds): no copy, no upload.
  uint32_t host_inputs;
  /// Op-specific checks (attributes, ranks, input counts); null = none.
  bool (*check)(const ClaimInfo&, Decline*);
  std::unique_ptr<Kernel> (*create)(const KernelCreateInfo&, const std::shared_ptr<Device>&);
  const char* domain = "";  // "" = ai.onnx; "onyx" for the optimizer's fused ops
};
const std::vector<OpDef>& manifest();

/// Base of every WebGPU kernel: constant float inputs (weights) are uploaded once when the kernel
/// is prepared; run() records the node's work into the run's Stream.
class WgKernel : public Kernel {
 public:
  WgKernel(const KernelCreateInfo& info, std::shared_ptr<Device> dev, uint32_t host_inputs);
  void compute(KernelContext& ctx) const final;
  virtual void run(KernelContext& ctx, Stream& s) const = 0;

 protected:
  /// Input i on the device: its uploaded constant or the device tensor in the frame.
  BufRef in(const KernelContext& ctx, size_t i) const;
  /// Allocates output i on the device.
  Tensor& out(KernelContext& ctx, size_t i, const Shape& shape) const;
  const std::string& label() const { return label_; }

  std::shared_ptr<Device> dev_;
  std::string label_;
  std::vector<std::shared_ptr<Buffer>> consts_;  // per input: uploaded constant, or null
};

// strides_of() and broadcast_strides(): ep/device_shapes.hpp (shared with the other device EP).
/// Checks an element count fits the kernels' 32-bit indices.
void check_size(const std::string& where, int64_t numel);

}  // namespace onyx::webgpu
