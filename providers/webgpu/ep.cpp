// The WebGPU execution provider (module libonyx_ep_webgpu.so) over wgpu-native: factory,
// options, availability, claims and the device EP itself, whose tensors live in WebGPU buffers.
// Every node's work is recorded into the run's command encoder, submitted only when the host
// needs data (a copy to host memory, the end of the run).
#include <cstdlib>
#include <mutex>

#include "ep/device_ep.hpp"
#include "ep/module_entry.hpp"
#include "webgpu_ep.hpp"

namespace onyx::webgpu {

// ---------------------------------------------------------------------------------------------
// Options

Settings parse_settings(const OptionList& o) {
  Settings s;
  const std::string id = option(o, "device_id", "-1");
  char* end = nullptr;
  const long v = std::strtol(id.c_str(), &end, 10);
  if (id.empty() || *end || v < -1 || v > 255)
    fail(ErrorCode::kInvalidArgument,
         "webgpu: option 'device_id' must be -1 (pick an adapter) or an adapter index, got '", id, "'");
  s.device_id = static_cast<int>(v);
  const std::string cache = option(o, "storage_buffer_cache_mode", "bucket");
  if (cache != "bucket" && cache != "disabled")
    fail(ErrorCode::kInvalidArgument, "webgpu: option 'storage_buffer_cache_mode' must be bucket or disabled, got '",
         cache, "'");
  s.device.pool_buffers = cache == "bucket";
  const std::string val = option(o, "validation_mode", "basic");
  if (val != "basic" && val != "full")
    fail(ErrorCode::kInvalidArgument, "webgpu: option 'validation_mode' must be basic or full, got '", val, "'");
  s.device.validate_each_node = val == "full";
  return s;
}

// ---------------------------------------------------------------------------------------------
// Claims

namespace {

bool check_tensor(const TypeInfo* t, const std::string& what, Decline* why) {
  if (!t || !t->is_tensor())
    return decline(why, DeclineCode::kUnsupportedType, str("tensors only; ", what, " is not a tensor"));
  if (t->dtype != DType::kFloat)
    return decline(why, DeclineCode::kUnsupportedType,
                   str("float32 only; ", what, " is ", dtype_name(t->dtype), " (this slice's kernels are float32)"));
  if (!t->has_shape) return decline(why, DeclineCode::kDynamicShape, str("the rank of ", what, " is unknown"));
  if (static_cast<int>(t->shape.size()) > kMaxRank)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("rank ", t->shape.size(), " of ", what, " is above the kernels' limit of ", kMaxRank));
  return true;
}

bool claim_node(const ClaimInfo& c, const OpDef* d, Decline* why) {
  const Node& n = c.node;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!n.has_input(i) || (d->host_inputs & (1u << i))) continue;
    if (!check_tensor(in_type(c, i), str("input ", i, " ('", c.graph.values[n.inputs[i]].name, "')"), why))
      return false;
  }
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (n.has_output(o) && !check_tensor(out_type(c, o), str("output ", o), why)) return false;
  return d->check ? d->check(c, why) : true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// WgKernel

WgKernel::WgKernel(const KernelCreateInfo& info, std::shared_ptr<Device> dev, uint32_t host_inputs)
    : dev_(std::move(dev)), label_(info.node.label()) {
  consts_.resize(info.node.inputs.size());
  for (size_t i = 0; i < info.node.inputs.size(); ++i) {
    const Tensor* t = info.constant(i);
    if (!t || (host_inputs & (1u << i))) continue;
    if (t->dtype() == DType::kString)
      fail(ErrorCode::kNotImplemented, "webgpu: string constants cannot go to the device");
    auto b = dev_->buffer(std::max<uint64_t>(t->nbytes(), 4));
    dev_->write_now(*b, t->raw_data(), t->nbytes());
    consts_[i] = std::move(b);
  }
}

BufRef WgKernel::in(const KernelContext& ctx, size_t i) const {
  if (i < consts_.size() && consts_[i]) return {consts_[i].get(), consts_[i]};
  const Tensor& t = ctx.input(i);
  if (t.on_host())
    fail(ErrorCode::kRuntime, "webgpu: internal error: ", label_, " input ", i,
         " is in host memory (a Copy is missing)");
  return device_ref(t, "input");
}

Tensor& WgKernel::out(KernelContext& ctx, size_t i, const Shape& shape) const {
  Tensor& t = ctx.allocate_output(i, DType::kFloat, shape);
  if (t.on_host()) fail(ErrorCode::kRuntime, "webgpu: internal error: ", label_, " output ", i, " is in host memory");
  return t;
}

void WgKernel::compute(KernelContext& ctx) const {
  if (auto* s = static_cast<Stream*>(ctx.ep_state())) {
    run(ctx, *s);
    if (dev_->options().validate_each_node) s->flush(label_);
    return;
  }
  // Outside a run (not expected: the executor always begins one): a stream of its own.
  Stream s(dev_);
  run(ctx, s);
  s.flush(label_);
}

// ---------------------------------------------------------------------------------------------
// The EP

namespace {

struct Traits {
  using Device = webgpu::Device;
  using Stream = webgpu::Stream;
  using OpDef = webgpu::OpDef;
  static constexpr const char* kName = "webgpu";
  static const std::vector<OpDef>& manifest() { return webgpu::manifest(); }
  static bool claim(const ClaimInfo& c, const OpDef& d, Decline* why) { return claim_node(c, &d, why); }
  static void upload(Stream& s, Device&, const Tensor& x, Tensor& y) {
    s.upload(x.raw_data(), device_ref(y, "copy output"), x.nbytes());
  }
  static void download(Stream& s, Device&, const Tensor& x, Tensor& y) {
    s.download(device_ref(x, "copy input"), y.raw_data(), x.nbytes());
  }
};

}  // namespace

std::unique_ptr<ExecutionProvider> create_webgpu_ep(const EpCreateContext& ctx) {
  const Settings s = parse_settings(ctx.options);
  const int index = pick_adapter(list_adapters(), s.device_id);
  return std::make_unique<ep::DeviceEp<Traits>>(Device::open(index, s.device));
}

// ---------------------------------------------------------------------------------------------
// Factory

class Factory final : public EpFactory {
 public:
  std::string name() const override { return "webgpu"; }
  std::string version() const override {
    const std::string lib = "wgpu-native " + wgpu_version();
    try {
      const auto adapters = list_adapters();
      if (adapters.empty()) return lib + " (no Vulkan adapter)";
      const AdapterInfo& a = adapters[pick_adapter(adapters, -1)];
      return str(lib, " on ", a.name, " (", a.type, ", ", a.backend, ", adapter ", a.index, " of ", adapters.size(),
                 ")");
    } catch (const std::exception&) {
      return lib + " (no instance)";
    }
  }
  std::vector<ep::OptionInfo> options() const override {
    return {{"device_id", "int", "-1",
             "adapter index (wgpu-native's Vulkan adapters, in the Vulkan loader's order); -1 picks the first "
             "adapter that is not a CPU implementation, else a CPU one such as lavapipe"},
            {"storage_buffer_cache_mode", "enum:bucket|disabled", "bucket",
             "device buffers: 'bucket' keeps freed buffers in a pool by size class and reuses them, 'disabled' "
             "releases each buffer when its tensor goes"},
            {"validation_mode", "enum:basic|full", "basic",
             "'basic' checks wgpu-native's errors (validation, out of memory) at every submission; 'full' also "
             "submits and checks after every node, so an error names the node (slower)"}};
  }
  bool probe(std::string* reason) const override {
    try {
      const auto adapters = list_adapters();
      Device::open(pick_adapter(adapters, -1), DeviceOptions{});
      return true;
    } catch (const std::exception& e) {
      *reason = e.what();
      return false;
    }
  }
  std::unique_ptr<ExecutionProvider> create(const EpCreateContext& ctx) const override { return create_webgpu_ep(ctx); }
};

}  // namespace onyx::webgpu

ONYX_EP_MODULE("webgpu", onyx::webgpu::Factory)
