// The skeleton of a device EP whose kernels come from a manifest of op definitions and record
// into a per-run command stream: the manifest lookup, the device allocator, the host <-> device
// copy kernel and the ExecutionProvider itself. Shared by the Vulkan and WebGPU EPs, which supply
// a traits struct:
//
//   struct Traits {
//     using Device = ...;  // memory_id(), memory_name(), tensor(DType, Shape)
//     using Stream = ...;  // Stream(std::shared_ptr<Device>), flush()
//     using OpDef = ...;   // op, since, until, host_inputs, check, create(info, device); optional domain
//     static constexpr const char* kName = "...";  // the EP's name, the prefix of its messages
//     static const std::vector<OpDef>& manifest();
//     static bool claim(const ClaimInfo&, const OpDef&, Decline*);  // the node's manifest line found
//     // The copy kernel's transfers (the tensors' memories already checked):
//     static void upload(Stream&, Device&, const Tensor& host, Tensor& device);
//     static void download(Stream&, Device&, const Tensor& device, Tensor& host);
//   };
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ep/provider.hpp"
#include "ep/stream_pool.hpp"

namespace onyx::ep {

/// The op definition's domain: its `domain` member, or "" (ai.onnx) when it has none.
template <class OpDef>
const char* op_domain(const OpDef& d) {
  if constexpr (requires { d.domain; })
    return d.domain;
  else
    return "";
}

/// The manifest line for the node's op, domain and opset, or null with the reason in `why`
/// (`name` prefixes it: "<name> runs X from opset ...", "<name> has no kernel for X").
template <class OpDef>
const OpDef* find_op_def(const std::vector<OpDef>& manifest, const char* name, const Node& n, Decline* why) {
  const OpDef* any = nullptr;
  for (const OpDef& d : manifest) {
    if (n.op_type != d.op || n.domain != op_domain(d)) continue;
    any = &d;
    if (n.opset >= d.since && n.opset <= d.until) return &d;
  }
  if (why) {
    if (any)
      *why = {DeclineCode::kOpsetOutOfRange, str(name, " runs ", n.op_type, " from opset ", any->since, " to ",
                                                 any->until, ", the model uses opset ", n.opset)};
    else
      *why = {DeclineCode::kUnsupportedOp,
              str(name, " has no kernel for ", n.domain.empty() ? "" : n.domain + "::", n.op_type)};
  }
  return nullptr;
}

template <class Traits>
class DeviceEpAllocator final : public DeviceAllocator {
 public:
  using Device = typename Traits::Device;
  explicit DeviceEpAllocator(std::shared_ptr<Device> d) : dev_(std::move(d)) {}
  int memory() const override { return dev_->memory_id(); }
  Tensor allocate(DType dtype, const Shape& shape) override {
    if (dtype == DType::kString)
      fail(ErrorCode::kNotImplemented, Traits::kName, ": string tensors cannot live on the device");
    return dev_->tensor(dtype, shape);
  }

 private:
  std::shared_ptr<Device> dev_;
};

/// Host -> device (`to_device`) or device -> host copy of the node's one input, recorded into the
/// run's stream (or a stream of its own, flushed at once, outside a run).
template <class Traits>
class DeviceEpCopyKernel final : public Kernel {
 public:
  using Device = typename Traits::Device;
  using Stream = typename Traits::Stream;
  DeviceEpCopyKernel(std::shared_ptr<Device> d, bool to_device) : dev_(std::move(d)), to_device_(to_device) {}
  void compute(KernelContext& ctx) const override {
    auto* s = static_cast<Stream*>(ctx.ep_state());
    std::unique_ptr<Stream> own;
    if (!s) {
      own = std::make_unique<Stream>(dev_);
      s = own.get();
    }
    const Tensor& x = ctx.input(0);
    if (x.dtype() == DType::kString)
      fail(ErrorCode::kNotImplemented, Traits::kName, ": string tensors cannot be copied to or from the device");
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (to_device_) {
      if (!x.on_host() || y.on_host())
        fail(ErrorCode::kRuntime, Traits::kName, ": internal error: host-to-device copy between wrong memories");
      Traits::upload(*s, *dev_, x, y);
    } else {
      if (x.on_host() || !y.on_host())
        fail(ErrorCode::kRuntime, Traits::kName, ": internal error: device-to-host copy between wrong memories");
      Traits::download(*s, *dev_, x, y);
    }
    if (own) own->flush();
  }

 private:
  std::shared_ptr<Device> dev_;
  bool to_device_;
};

/// The EP: claims and kernels from the manifest, tensors in the device's memory, one pooled
/// command stream per run (flushed at the run's end).
template <class Traits>
class DeviceEp final : public ExecutionProvider {
 public:
  using Device = typename Traits::Device;
  using Stream = typename Traits::Stream;
  using OpDef = typename Traits::OpDef;

  explicit DeviceEp(std::shared_ptr<Device> d) : dev_(std::move(d)), alloc_(dev_) {}
  std::string name() const override { return Traits::kName; }
  std::string device() const override { return dev_->memory_name(); }
  bool host_memory() const override { return false; }
  std::string memory() const override { return dev_->memory_name(); }
  DeviceAllocator* allocator() const override { return &alloc_; }

  std::shared_ptr<void> begin_run() const override {
    return streams_.acquire([this] { return std::make_unique<Stream>(dev_); });
  }
  void end_run(void* state) const override { static_cast<Stream*>(state)->flush(); }

  std::unique_ptr<Kernel> create_copy_kernel(bool to_device) const override {
    return std::make_unique<DeviceEpCopyKernel<Traits>>(dev_, to_device);
  }
  bool reads_host_input(const Node& node, size_t input, const Graph& graph) const override {
    const OpDef* d = find(node, nullptr);
    if (!d) return false;
    return (d->host_inputs & (1u << input)) || is_constant(graph, node, input);
  }
  bool claim(const ClaimInfo& info, Decline* why) const override {
    const OpDef* d = find(info.node, why);
    return d && Traits::claim(info, *d, why);
  }
  std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const override {
    Decline why;
    const OpDef* d = find(info.node, &why);
    if (!d) fail(ErrorCode::kNotImplemented, Traits::kName, ": ", why.message);
    return d->create(info, dev_);
  }

 private:
  static const OpDef* find(const Node& n, Decline* why) {
    return find_op_def(Traits::manifest(), Traits::kName, n, why);
  }

  std::shared_ptr<Device> dev_;
  mutable DeviceEpAllocator<Traits> alloc_;
  mutable StreamPool<Stream> streams_;  // the runs' command streams, reused
};

}  // namespace onyx::ep
