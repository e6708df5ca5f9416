// EPs from plugins built against the C ABI (include/onyx/ep_c_api.h): the tables a plugin hands
// over are validated, then wrapped as an EpFactory and, per session, an ExecutionProvider whose
// claims, kernels, compiled groups, device memory, copies and run hooks call the plugin. Every
// call into the plugin goes through guarded(): a C++ exception thrown by mistake becomes an
// error instead of crossing the C boundary.
#include "ep/plugin.hpp"

#include <cstring>
#include <exception>
#include <utility>

#include "core/common.hpp"
#include "core/logging.hpp"
#include "ep/factory.hpp"
#include "ep/memory.hpp"
#include "ep/provider.hpp"
#include "ops/custom.hpp"

namespace onyx {
namespace {

OnyxEpStatus* error_status(OnyxEpErrorCode code, std::string message) {
  auto* s = new OnyxEpStatus;
  s->code = code;
  s->message = std::move(message);
  return s;
}

/// Calls into the plugin; what it throws becomes a failure status.
template <class F>
OnyxEpStatus* guarded(F&& f) noexcept {
  try {
    return f();
  } catch (const std::exception& e) {
    try {
      return error_status(ONYX_EP_FAILURE, str("the plugin threw an exception: ", e.what()));
    } catch (...) {
    }
  } catch (...) {
    try {
      return error_status(ONYX_EP_FAILURE, "the plugin threw an exception");
    } catch (...) {
    }
  }
  return nullptr;
}

template <class F>
void guarded_void(F&& f) noexcept {
  try {
    f();
  } catch (...) {
  }
}

/// A string a plugin gave, or `dflt` for null.
std::string plugin_string(const char* s, const char* dflt = "") { return s ? std::string(s, strnlen(s, 4096)) : dflt; }

/// The plugin's per-session instance; released when the last kernel, buffer and the EP let go.
struct Instance {
  std::string ep;
  OnyxEpInstance tbl{};
  ~Instance() {
    if (tbl.release) guarded_void([&] { tbl.release(tbl.state); });
  }
};

/// What KernelContext::ep_state() holds for a plugin EP: the plugin's run state.
struct RunHolder {
  std::shared_ptr<Instance> inst;
  void* state = nullptr;
};

void* run_state_of(const KernelContext& ctx) {
  const auto* h = static_cast<const RunHolder*>(ctx.ep_state());
  return h ? h->state : nullptr;
}

class PluginAllocator final : public DeviceAllocator {
 public:
  PluginAllocator(std::shared_ptr<Instance> inst, int memory) : inst_(std::move(inst)), memory_(memory) {}
  int memory() const override { return memory_; }
  Tensor allocate(DType dtype, const Shape& shape) override {
    const size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
    void* p = nullptr;
    Instance* inst = inst_.get();
    check_plugin_status(guarded([&] { return inst->tbl.allocate(inst->tbl.state, bytes, &p); }), inst->ep,
                        str("allocating ", bytes, " bytes"));
    if (!p) fail(ErrorCode::kRuntime, inst->ep, ": out of device memory allocating ", bytes, " bytes");
    std::shared_ptr<Instance> keep = inst_;
    std::shared_ptr<void> owner(p, [keep](void* q) { guarded_void([&] { keep->tbl.release_memory(keep->tbl.state, q); }); });
    return Tensor::device_tensor(dtype, shape, p, std::move(owner), memory_);
  }

 private:
  std::shared_ptr<Instance> inst_;
  int memory_;
};

/// A per-node kernel or a compiled group of a plugin. It keeps the graph view (and the node handle)
/// it was made from alive until the plugin has released it.
class PluginKernel final : public Kernel {
 public:
  PluginKernel(std::shared_ptr<Instance> inst, std::shared_ptr<OnyxEpGraph> view, std::unique_ptr<OnyxEpNode> node,
               void* handle, size_t group_nodes, int memory, DeviceAllocator* alloc)
      : inst_(std::move(inst)),
        view_(std::move(view)),
        node_(std::move(node)),
        handle_(handle),
        group_nodes_(group_nodes),
        memory_(memory),
        alloc_(alloc) {}
  ~PluginKernel() override {
    const OnyxEpInstance& t = inst_->tbl;
    if (group_nodes_ ? t.release_group != nullptr : t.release_kernel != nullptr)
      guarded_void([&] { (group_nodes_ ? t.release_group : t.release_kernel)(t.state, handle_); });
  }
  void compute(KernelContext& ctx) const override {
    OnyxEpKernelContext c{&ctx, run_state_of(ctx), memory_, alloc_, view_->graph->values.size()};
    const OnyxEpInstance& t = inst_->tbl;
    check_plugin_status(guarded([&] { return (group_nodes_ ? t.compute_group : t.compute_kernel)(t.state, handle_, &c); }),
                        inst_->ep,
                        group_nodes_ ? str("a group of ", group_nodes_, " nodes (first: ", ctx.node().label(), ")") : ctx.node().label());
  }

 private:
  std::shared_ptr<Instance> inst_;
  std::shared_ptr<OnyxEpGraph> view_;
  std::unique_ptr<OnyxEpNode> node_;  // (per-node kernels)
  void* handle_;
  size_t group_nodes_;  // 0: a per-node kernel
  int memory_;
  DeviceAllocator* alloc_;
};

class PluginCopyKernel final : public Kernel {
 public:
  PluginCopyKernel(std::shared_ptr<Instance> inst, bool to_device) : inst_(std::move(inst)), to_device_(to_device) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& src = ctx.input(0);
    Tensor& dst = ctx.allocate_output(0, src.dtype(), src.shape());
    if (src.dtype() == DType::kString) fail(ErrorCode::kNotImplemented, inst_->ep, ": strings cannot be copied to its memory");
    const size_t bytes = src.nbytes();
    if (bytes == 0) return;
    void* state = run_state_of(ctx);
    check_plugin_status(guarded([&] {
                          return inst_->tbl.copy(inst_->tbl.state, dst.raw_data(), src.raw_data(), bytes, to_device_ ? 1 : 0, state);
                        }),
                        inst_->ep, str("copying ", ctx.node().label(), to_device_ ? " to the device" : " to the host"));
  }

 private:
  std::shared_ptr<Instance> inst_;
  bool to_device_;
};

DeclineCode decline_code_of(int32_t c) {
  switch (c) {
    case ONYX_EP_DECLINE_UNSUPPORTED_OP: return DeclineCode::kUnsupportedOp;
    case ONYX_EP_DECLINE_UNSUPPORTED_TYPE: return DeclineCode::kUnsupportedType;
    case ONYX_EP_DECLINE_UNSUPPORTED_ATTRIBUTE: return DeclineCode::kUnsupportedAttribute;
    case ONYX_EP_DECLINE_DYNAMIC_SHAPE: return DeclineCode::kDynamicShape;
    case ONYX_EP_DECLINE_OPSET_OUT_OF_RANGE: return DeclineCode::kOpsetOutOfRange;
    case ONYX_EP_DECLINE_NOT_WORTH_OFFLOADING: return DeclineCode::kNotWorthOffloading;
    default: return DeclineCode::kOther;
  }
}

class PluginEp final : public ExecutionProvider {
 public:
  PluginEp(std::shared_ptr<Instance> inst, std::string device, std::string memory)
      : inst_(std::move(inst)), device_(std::move(device)), memory_name_(std::move(memory)) {
    if (!memory_name_.empty()) {
      memory_id_ = register_device_memory(memory_name_);
      alloc_ = std::make_unique<PluginAllocator>(inst_, memory_id_);
    }
  }
  std::string name() const override { return inst_->ep; }
  std::string device() const override { return device_; }
  bool host_memory() const override { return memory_name_.empty(); }
  std::string memory() const override { return memory_name_.empty() ? "cpu" : memory_name_; }
  DeviceAllocator* allocator() const override { return alloc_.get(); }

  std::shared_ptr<void> begin_run() const override {
    if (!inst_->tbl.run_begin) return nullptr;
    auto h = std::make_shared<RunHolder>();
    h->inst = inst_;
    Instance* inst = inst_.get();
    check_plugin_status(guarded([&] { return inst->tbl.run_begin(inst->tbl.state, &h->state); }), inst->ep, "starting a run");
    return h;
  }
  void end_run(void* state) const override {
    if (!inst_->tbl.run_end || !state) return;
    auto* h = static_cast<RunHolder*>(state);
    Instance* inst = inst_.get();
    check_plugin_status(guarded([&] { return inst->tbl.run_end(inst->tbl.state, h->state); }), inst->ep, "ending a run");
  }
  std::unique_ptr<Kernel> create_copy_kernel(bool to_device) const override {
    if (memory_name_.empty()) fail(ErrorCode::kNotImplemented, inst_->ep, " works in host memory and has no copy kernel");
    return std::make_unique<PluginCopyKernel>(inst_, to_device);
  }

  bool claim(const ClaimInfo& info, Decline* why) const override {
    OnyxEpGraph view(info.graph);
    OnyxEpNode node;
    node.node = &info.node;
    node.graph = &info.graph;
    node.input_types = &info.input_types;
    node.output_types = &info.output_types;
    OnyxEpClaim c{};
    c.struct_size = sizeof(c);
    c.api_version = ONYX_EP_API_VERSION;
    Instance* inst = inst_.get();
    OnyxEpStatus* s = guarded([&] { return inst->tbl.claim(inst->tbl.state, &view, &node, &c); });
    if (s) {
      std::unique_ptr<OnyxEpStatus> owned(s);
      return decline(why, DeclineCode::kOther, "its claim failed: " + s->message);
    }
    if (c.accepted == 1) return true;
    c.reason[sizeof(c.reason) - 1] = '\0';
    std::string reason = c.reason;
    if (reason.empty()) reason = "declined by the plugin (no reason given)";
    return decline(why, decline_code_of(c.decline_code), std::move(reason));
  }

  std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const override {
    Instance* inst = inst_.get();
    if (!inst->tbl.create_kernel || !inst->tbl.compute_kernel)
      fail(ErrorCode::kNotImplemented, inst->ep, ": ", info.node.label(), " runs only inside a compiled group");
    std::shared_ptr<OnyxEpGraph> view = view_of(info.graph);
    auto node = std::make_unique<OnyxEpNode>();
    node->node = &info.node;
    node->graph = &info.graph;
    void* handle = nullptr;
    check_plugin_status(guarded([&] { return inst->tbl.create_kernel(inst->tbl.state, view.get(), node.get(), &handle); }),
                        inst->ep, "creating the kernel of " + info.node.label());
    return std::make_unique<PluginKernel>(inst_, std::move(view), std::move(node), handle, 0, memory_id_, alloc_.get());
  }

  bool compiles_regions() const override { return (inst_->tbl.flags & ONYX_EP_COMPILES_GROUPS) != 0; }
  size_t min_region_nodes() const override { return inst_->tbl.min_group_nodes > 1 ? inst_->tbl.min_group_nodes : 1; }

  std::unique_ptr<Kernel> compile_region(const RegionInfo& region) const override {
    std::shared_ptr<OnyxEpGraph> view = view_of(region.graph);
    auto ids = [](const std::vector<int>& v) { return std::vector<int64_t>(v.begin(), v.end()); };
    const std::vector<int64_t> nodes = ids(region.nodes), inputs = ids(region.inputs), outputs = ids(region.outputs),
                               internal = ids(region.internal);
    OnyxEpGroup g{};
    g.struct_size = sizeof(g);
    g.api_version = ONYX_EP_API_VERSION;
    g.nodes = nodes.data();
    g.num_nodes = nodes.size();
    g.inputs = inputs.data();
    g.num_inputs = inputs.size();
    g.outputs = outputs.data();
    g.num_outputs = outputs.size();
    g.internal = internal.data();
    g.num_internal = internal.size();
    void* handle = nullptr;
    Instance* inst = inst_.get();
    check_plugin_status(guarded([&] { return inst->tbl.compile_group(inst->tbl.state, view.get(), &g, &handle); }), inst->ep,
                        "compiling the group");
    return std::make_unique<PluginKernel>(inst_, std::move(view), nullptr, handle, nodes.size(), memory_id_, alloc_.get());
  }

 private:
  /// The view of a final graph (kernels and groups keep it; node handles in it stay valid).
  std::shared_ptr<OnyxEpGraph> view_of(const Graph& g) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& v : views_)
      if (v->graph == &g) return v;
    views_.push_back(std::make_shared<OnyxEpGraph>(g));
    return views_.back();
  }

  std::shared_ptr<Instance> inst_;
  std::string device_, memory_name_;
  int memory_id_ = 0;
  std::unique_ptr<PluginAllocator> alloc_;
  mutable std::mutex mu_;
  mutable std::vector<std::shared_ptr<OnyxEpGraph>> views_;
};

bool valid_option_type(const std::string& t) {
  return t == "bool" || t == "int" || t == "uint" || t == "float" || t == "string" || (t.rfind("enum:", 0) == 0 && t.size() > 5);
}

class PluginFactory final : public EpFactory {
 public:
  PluginFactory(std::string name, const OnyxEpPluginApi* api, std::vector<ep::OptionInfo> options)
      : name_(std::move(name)), api_(api), options_(std::move(options)) {
    const std::string vendor = plugin_string(api->vendor), version = plugin_string(api->version, "?");
    version_ = vendor.empty() ? version : str(version, " (", vendor, ", plugin API ", api->api_version, ")");
  }
  std::string name() const override { return name_; }
  std::string version() const override { return version_; }
  std::vector<ep::OptionInfo> options() const override { return options_; }

  bool probe(std::string* reason) const override {
    if (!ONYX_EP_HAS_FIELD(OnyxEpPluginApi, api_, get_devices) || !api_->get_devices) return true;
    const OnyxEpDeviceInfo* devices = nullptr;
    size_t count = 0;
    OnyxEpStatus* s = guarded([&] { return api_->get_devices(&devices, &count); });
    if (s) {
      std::unique_ptr<OnyxEpStatus> owned(s);
      *reason = "device discovery failed: " + s->message;
      return false;
    }
    if (count == 0 || !devices) {
      *reason = "the plugin found no device";
      return false;
    }
    if (count > 4096) {
      *reason = str("the plugin reported ", count, " devices (garbage)");
      return false;
    }
    std::vector<std::string> why;
    for (size_t i = 0; i < count; ++i) {
      const OnyxEpDeviceInfo& d = devices[i];
      if (d.struct_size < offsetof(OnyxEpDeviceInfo, reason) + sizeof(d.reason)) {
        *reason = "the plugin's device list is not made of OnyxEpDeviceInfo structs";
        return false;
      }
      if (d.available == 1) return true;
      why.push_back(str(plugin_string(d.id, "?"), ": ", plugin_string(d.reason, "not available")));
    }
    *reason = "no available device (" + join(why, "; ") + ")";
    return false;
  }

  std::unique_ptr<ExecutionProvider> create(const EpCreateContext& ctx) const override {
    std::vector<std::string> keys, values;
    for (const auto& [k, v] : ctx.options)
      if (k != "module_path") {
        keys.push_back(k);
        values.push_back(v);
      }
    std::vector<const char*> kp, vp;
    for (size_t i = 0; i < keys.size(); ++i) {
      kp.push_back(keys[i].c_str());
      vp.push_back(values[i].c_str());
    }
    OnyxEpCreateInfo ci{};
    ci.struct_size = sizeof(ci);
    ci.api_version = ONYX_EP_API_VERSION;
    ci.option_keys = kp.data();
    ci.option_values = vp.data();
    ci.num_options = kp.size();
    ci.session_threads = ctx.session_threads;
    auto inst = std::make_shared<Instance>();
    inst->ep = name_;
    OnyxEpInstance tbl{};
    tbl.struct_size = sizeof(tbl);
    tbl.api_version = ONYX_EP_API_VERSION;
    check_plugin_status(guarded([&] { return api_->create(&ci, &tbl); }), name_, "create");
    // The plugin may have written a struct from an older header (its own struct_size): fields it
    // does not know stay zero, which reads as "absent".
    tbl.struct_size = sizeof(tbl);
    const std::string device = plugin_string(tbl.device, "cpu:0");
    std::string memory = plugin_string(tbl.memory);
    if (memory == "cpu") memory.clear();
    std::string missing;
    if (!tbl.claim) missing = "claim";
    else if ((tbl.flags & ONYX_EP_COMPILES_GROUPS) && (!tbl.compile_group || !tbl.compute_group))
      missing = "compile_group and compute_group (it compiles groups)";
    else if (!(tbl.flags & ONYX_EP_COMPILES_GROUPS) && (!tbl.create_kernel || !tbl.compute_kernel))
      missing = "create_kernel and compute_kernel (it runs per-node kernels)";
    else if (!memory.empty() && (!tbl.allocate || !tbl.release_memory || !tbl.copy))
      missing = "allocate, release_memory and copy (it has device memory '" + memory + "')";
    inst->tbl = tbl;  // from here the instance is released with the Instance
    if (!missing.empty()) fail(ErrorCode::kEpFailure, name_, ": the plugin's instance lacks ", missing);
    if (tbl.flags & ~static_cast<uint32_t>(ONYX_EP_COMPILES_GROUPS))
      fail(ErrorCode::kEpFailure, name_, ": the plugin's instance sets flags (", tbl.flags, ") unknown to this onyx");
    return std::make_unique<PluginEp>(std::move(inst), device, memory);
  }

 private:
  std::string name_;
  const OnyxEpPluginApi* api_;
  std::vector<ep::OptionInfo> options_;
  std::string version_;
};

/// Why a plugin's table cannot be used, or "".
std::string check_plugin_table(const std::string& name, const OnyxEpPluginApi* api, std::vector<ep::OptionInfo>* options) {
  const size_t min_size = offsetof(OnyxEpPluginApi, create) + sizeof(api->create);
  if (api->struct_size < min_size || api->struct_size > (1u << 20))
    return str("its table has struct_size ", api->struct_size, " (an OnyxEpPluginApi has at least ", min_size, " bytes)");
  if (api->api_version == 0) return "its table has api_version 0 (not a version of the EP plugin API)";
  if (api->api_version > ONYX_EP_API_VERSION)
    return str("it was built against EP plugin API version ", api->api_version, ", newer than this onyx's (",
               ONYX_EP_API_VERSION, "); use an onyx that supports version ", api->api_version,
               " or a build of the plugin for version ", ONYX_EP_API_VERSION);
  const std::string pname = plugin_string(api->name);
  if (pname != name) return str("the plugin implements EP '", pname, "', not '", name, "'");
  if (!api->create) return "its table has no create function";
  if (api->num_options > 1024 || (api->num_options > 0 && !api->options))
    return str("its option schema is not valid (", api->num_options, " options at ", api->options ? "an address" : "null", ")");
  for (size_t i = 0; i < api->num_options; ++i) {
    const OnyxEpOptionInfo& o = api->options[i];
    if (o.struct_size < offsetof(OnyxEpOptionInfo, doc) + sizeof(o.doc))
      return str("option ", i, " of its schema is not an OnyxEpOptionInfo (struct_size ", o.struct_size, ")");
    const std::string key = plugin_string(o.key), type = plugin_string(o.type);
    if (key.empty() || key == "module_path") return str("option ", i, " of its schema has the key '", key, "'");
    if (!valid_option_type(type)) return str("option '", key, "' has the unknown type '", type, "'");
    options->push_back({key, type, plugin_string(o.default_value), plugin_string(o.doc)});
  }
  return "";
}

/// Registers the plugin's custom ops (their schemas; the EP claims and runs their nodes). Checks
/// them all before registering any. Returns why not, or "".
std::string register_custom_ops(const std::string& name, const std::string& path, const OnyxEpPluginApi* api) {
  if (!ONYX_EP_HAS_FIELD(OnyxEpPluginApi, api, num_custom_ops) || api->num_custom_ops == 0) return "";
  if (api->num_custom_ops > 4096 || !api->custom_ops)
    return str("its custom op list is not valid (", api->num_custom_ops, " ops at ", api->custom_ops ? "an address" : "null", ")");
  const std::string provider = str("the EP plugin '", name, "' (", path, ")");
  for (size_t i = 0; i < api->num_custom_ops; ++i) {
    const OnyxEpCustomOp& op = api->custom_ops[i];
    if (op.struct_size < offsetof(OnyxEpCustomOp, infer) + sizeof(op.infer))
      return str("custom op ", i, " is not an OnyxEpCustomOp (struct_size ", op.struct_size, ")");
    const std::string domain = plugin_string(op.domain), type = plugin_string(op.op_type);
    if (type.empty() || !op.infer) return str("custom op ", i, " (", domain, "::", type, ") has no name or no infer function");
    if (is_builtin_domain(domain)) return str("its custom op ", type, " is in domain '", domain, "', which onyx implements itself");
    if (const std::string other = custom_op_provider(domain, type); !other.empty())
      return str("its custom op ", domain, "::", type, " is already registered by ", other);
  }
  for (size_t i = 0; i < api->num_custom_ops; ++i) {
    const OnyxEpCustomOp* op = &api->custom_ops[i];
    add_custom_schema(plugin_string(op->domain), plugin_string(op->op_type), op->since_version, [op, name](InferContext& ctx) {
      OnyxEpInferContext c;
      c.ctx = &ctx;
      for (size_t k = 0; k < ctx.num_inputs(); ++k) c.input_types.push_back(ctx.has_input(k) ? &ctx.input_type(k) : nullptr);
      c.node.node = &ctx.node();
      c.node.input_types = &c.input_types;
      OnyxEpStatus* s = guarded([&] { return op->infer(&c); });
      if (s) {
        std::unique_ptr<OnyxEpStatus> owned(s);
        ctx.fail_node(name, ": inferring the output types failed: ", s->message);
      }
      for (size_t o = 0; o < ctx.num_outputs(); ++o)
        if (ctx.has_output(o) && ctx.output(o).kind == TypeInfo::Kind::kUnknown)
          ctx.fail_node(name, ": its type inference did not set output ", o);
    }, provider);
  }
  return "";
}

}  // namespace

const EpFactory* load_ep_plugin(const std::string& name, const std::string& path, OnyxEpPluginInitFn init, std::string* error,
                                std::string* version) {
  char err[512] = {};
  const OnyxEpPluginApi* api = nullptr;
  OnyxEpStatus* thrown = guarded([&]() -> OnyxEpStatus* {
    api = init(plugin_host_api(), ONYX_EP_API_VERSION, err, sizeof(err));
    return nullptr;
  });
  if (thrown) {
    *error = "the plugin's " + std::string(ONYX_EP_PLUGIN_ENTRY) + " failed: " + thrown->message;
    delete thrown;
    return nullptr;
  }
  err[sizeof(err) - 1] = '\0';
  if (!api) {
    *error = str("the plugin did not initialise: ", err[0] ? err : "its entry point returned no table and no reason");
    return nullptr;
  }
  std::vector<ep::OptionInfo> options;
  const std::string why = check_plugin_table(name, api, &options);
  if (!why.empty()) {
    *error = "the plugin was refused: " + why;
    return nullptr;
  }
  try {
    if (const std::string bad = register_custom_ops(name, path, api); !bad.empty()) {
      *error = "the plugin was refused: " + bad;
      return nullptr;
    }
  } catch (const std::exception& e) {
    *error = str("the plugin was refused: ", e.what());
    return nullptr;
  }
  // Factories live for the process, as modules do (they are never unloaded).
  static std::mutex mu;
  static std::vector<std::unique_ptr<PluginFactory>> factories;
  std::lock_guard<std::mutex> lock(mu);
  factories.push_back(std::make_unique<PluginFactory>(name, api, std::move(options)));
  *version = factories.back()->version();
  return factories.back().get();
}

}  // namespace onyx
