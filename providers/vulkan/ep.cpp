// The Vulkan EP: a kernel EP whose tensors live in device memory. Claims come from the manifest
// (kernels/*.cpp); every node's work is recorded into the run's command stream, which is
// submitted only when the host needs data (a copy to host memory, the end of the run).
#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "ep/device_ep.hpp"
#include "vulkan_ep.hpp"
#include "vulkan_provider.hpp"

namespace onyx::vulkan {

// ---------------------------------------------------------------------------------------------
// Helpers

void check_size(const std::string& where, int64_t numel) {
  if (numel > (int64_t(1) << 31) - 1)
    fail(ErrorCode::kRuntime, "vulkan: ", where, ": ", numel, " elements exceed the kernels' 32-bit indexing");
}

const std::vector<OpDef>& manifest() {
  static const std::vector<OpDef> defs = [] {
    std::vector<OpDef> d;
    add_elementwise_ops(d);
    add_linalg_ops(d);
    add_nn_ops(d);
    add_tensor_ops(d);
    return d;
  }();
  return defs;
}

namespace {

/// The node's float type: float32 or float16, one type for every float tensor the kernel computes
/// on (`what` names the tensor, e.g. "input 0 ('x')"). Declines any other type, or a second type.
bool check_float_type(DType t, const std::string& what, DType* node_type, std::string* first, Decline* why) {
  if (t != DType::kFloat && t != DType::kFloat16)
    return decline(why, DeclineCode::kUnsupportedType,
                   str("float32 or float16 only; ", what, " is ", dtype_name(t),
                       t == DType::kBFloat16 || t == DType::kDouble ? " (the shaders store float32 or float16)" : ""));
  if (*node_type == DType::kUndefined) {
    *node_type = t;
    *first = what;
  } else if (t != *node_type) {
    return decline(why, DeclineCode::kUnsupportedType,
                   str(what, " is ", dtype_name(t), " where ", *first, " is ", dtype_name(*node_type),
                       " (vulkan's kernels take one float type per node)"));
  }
  return true;
}

bool claim_node(const ClaimInfo& c, const OpDef* d, Decline* why) {
  const Node& n = c.node;
  for (const auto& a : n.attrs)
    if (a.type == AttrType::kGraph || a.type == AttrType::kGraphs)
      return decline(why, DeclineCode::kUnsupportedOp, "vulkan does not run subgraphs");
  DType node_type = DType::kUndefined;
  std::string first;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!n.has_input(i)) continue;
    const TypeInfo* t = in_type(c, i);
    const std::string name = c.graph.values[n.inputs[i]].name;
    if (!t || !t->is_tensor())
      return decline(why, DeclineCode::kUnsupportedType,
                     str("tensors only; input ", i, " ('", name, "') is not a tensor"));
    if (t->has_shape && static_cast<int>(t->shape.size()) > kMaxRank)
      return decline(
          why, DeclineCode::kUnsupportedAttribute,
          str("rank ", t->shape.size(), " of input ", i, " ('", name, "') is above the kernels' limit of ", kMaxRank));
    if (d->any_type_inputs & (1u << i)) continue;
    if (!check_float_type(t->dtype, str("input ", i, " ('", name, "')"), &node_type, &first, why)) return false;
  }
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    if (!n.has_output(o)) continue;
    const TypeInfo* t = out_type(c, o);
    if (!t || !t->is_tensor())
      return decline(why, DeclineCode::kUnsupportedType, str("output ", o, " is not a tensor"));
    if (t->has_shape && static_cast<int>(t->shape.size()) > kMaxRank)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("output ", o, " has rank ", t->shape.size(), ", above the kernels' limit of ", kMaxRank));
    if (o == 0 && d->any_type_output) continue;
    if (!check_float_type(t->dtype, str("output ", o), &node_type, &first, why)) return false;
  }
  return d->check ? d->check(c, why) : true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// VkKernel

VkKernel::VkKernel(const KernelCreateInfo& info, std::shared_ptr<Device> dev, uint32_t host_inputs)
    : dev_(std::move(dev)), label_(info.node.label()), half_(dev_->stores_half(info.output_dtype(0))) {
  consts_.resize(info.node.inputs.size());
  for (size_t i = 0; i < info.node.inputs.size(); ++i) {
    const Tensor* t = info.constant(i);
    if (!t || (host_inputs & (1u << i))) continue;
    if (t->dtype() == DType::kString)
      fail(ErrorCode::kNotImplemented, "vulkan: string constants cannot go to the device");
    if (t->dtype() == DType::kFloat && dev_->stores_half(DType::kFloat)) {
      // fp16_storage: float32 weights are stored as float16 too (rounded once, here).
      std::vector<uint16_t> h(static_cast<size_t>(t->numel()));
      const float* f = t->data<float>();
      for (size_t k = 0; k < h.size(); ++k) h[k] = Float16::from_float(f[k]);
      auto b = dev_->buffer(std::max<size_t>(h.size() * 2, 4), false);
      dev_->upload_now(*b, h.data(), h.size() * 2);
      consts_[i] = std::move(b);
      continue;
    }
    auto b = dev_->buffer(std::max<size_t>(t->nbytes(), 4), false);
    dev_->upload_now(*b, t->raw_data(), t->nbytes());
    consts_[i] = std::move(b);
  }
}

BufRef VkKernel::upload(const void* data, size_t bytes) const {
  auto b = dev_->buffer(std::max<size_t>(bytes, 4), false);
  dev_->upload_now(*b, data, bytes);
  Buffer* raw = b.get();
  return {raw, std::move(b), 0};
}

BufRef VkKernel::in(const KernelContext& ctx, size_t i) const {
  if (i < consts_.size() && consts_[i]) return {consts_[i].get(), consts_[i], 0};
  const Tensor& t = ctx.input(i);
  if (t.on_host())
    fail(ErrorCode::kRuntime, "vulkan: internal error: ", label_, " input ", i,
         " is in host memory (a Copy is missing)");
  return device_ref(t, "input");
}

Tensor& VkKernel::out(KernelContext& ctx, size_t i, const Shape& shape, DType dt) const {
  Tensor& t = ctx.allocate_output(i, dt, shape);
  if (t.on_host()) fail(ErrorCode::kRuntime, "vulkan: internal error: ", label_, " output ", i, " is in host memory");
  return t;
}

namespace {
// ONYX_VULKAN_SYNC=1 submits and waits after every node, so per-node profiles show device time.
const bool kSyncEachNode = [] {
  const char* e = std::getenv("ONYX_VULKAN_SYNC");
  return e && *e && std::string(e) != "0";
}();
}  // namespace

void VkKernel::compute(KernelContext& ctx) const {
  if (auto* s = static_cast<Stream*>(ctx.ep_state())) {
    run(ctx, *s);
    if (kSyncEachNode) s->flush();
    return;
  }
  // Outside a run (not expected: the executor always begins one): a stream of its own.
  Stream s(dev_);
  run(ctx, s);
  s.flush();
}

// ---------------------------------------------------------------------------------------------
// The EP

namespace {

/// The copy kernel's transfers: under fp16_storage a float32 tensor is float16 on the device, and
/// the copy converts on the host, into or out of the staging buffer (half the bytes to transfer,
/// no float32 copy in device memory), so the host side stays float32.
struct Traits {
  using Device = vulkan::Device;
  using Stream = vulkan::Stream;
  using OpDef = vulkan::OpDef;
  static constexpr const char* kName = "vulkan";
  static const std::vector<OpDef>& manifest() { return vulkan::manifest(); }
  static bool claim(const ClaimInfo& c, const OpDef& d, Decline* why) { return claim_node(c, &d, why); }
  static void upload(Stream& s, Device& dev, const Tensor& x, Tensor& y) {
    if (x.dtype() == DType::kFloat && dev.stores_half(DType::kFloat))
      s.upload_as_half(x.data<float>(), device_ref(y, "copy output"), static_cast<uint64_t>(x.numel()));
    else
      s.upload(x.raw_data(), device_ref(y, "copy output"), x.nbytes());
  }
  static void download(Stream& s, Device& dev, const Tensor& x, Tensor& y) {
    if (x.dtype() == DType::kFloat && dev.stores_half(DType::kFloat))
      s.download_as_float(device_ref(x, "copy input"), y.data<float>(), static_cast<uint64_t>(x.numel()));
    else
      s.download(device_ref(x, "copy input"), y.raw_data(), x.nbytes());
  }
};

}  // namespace

std::unique_ptr<ExecutionProvider> create_vulkan_ep(const EpCreateContext& ctx) {
  const Settings s = parse_settings(ctx.options);
  const int index = pick_device(list_devices(), s.device_id);
  return std::make_unique<ep::DeviceEp<Traits>>(Device::open(index, s.memory_limit, s.matmul, s.fp16_storage));
}

}  // namespace onyx::vulkan
