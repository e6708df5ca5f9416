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

/// The type of input / output i (null when absent).
inline const TypeInfo* in_type(const ClaimInfo& c, size_t i) {
  return i < c.input_types.size() && c.node.has_input(i) ? c.input_types[i] : nullptr;
}
inline const TypeInfo* out_type(const ClaimInfo& c, size_t i) {
  return i < c.output_types.size() ? c.output_types[i] : nullptr;
}
inline int in_rank(const ClaimInfo& c, size_t i) {
  const TypeInfo* t = in_type(c, i);
  return t && t->is_tensor() && t->has_shape ? static_cast<int>(t->shape.size()) : -1;
}
/// Whether input i is a constant initializer (known when kernels are prepared).
inline bool is_constant(const Graph& g, const Node& n, size_t i) {
  if (!n.has_input(i)) return false;
  const ValueSlot& s = g.values[n.inputs[i]];
  return s.has_initializer && !s.is_graph_input;
}

/// One line of the manifest.
struct OpDef {
  const char* op;  // ai.onnx only
  int since, until;
  /// Inputs read on the host (constant operands such as Clip's bounds): no copy, no upload.
  uint32_t host_inputs;
  /// Op-specific checks (attributes, ranks, input counts); null = none.
  bool (*check)(const ClaimInfo&, Decline*);
  std::unique_ptr<Kernel> (*create)(const KernelCreateInfo&, const std::shared_ptr<Device>&);
};
const std::vector<OpDef>& manifest();
const OpDef* find_def(const Node& n, Decline* why);

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
