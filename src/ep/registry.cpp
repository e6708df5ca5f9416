// The EP table, factory resolution, option validation and the environment's default EPs.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>

#include "core/common.hpp"
#include "ep/factory.hpp"
#include "ep/module.hpp"
#include "onyx/version.hpp"
#include "onyx_build_config.hpp"

namespace onyx {

const std::vector<KnownEp>& known_eps() {
  static const std::vector<KnownEp> table = {
      {"cpu", "", false},
      {"onednn", "ONYX_EP_ONEDNN", true},
      {"xnnpack", "ONYX_EP_XNNPACK", true},
      {"vulkan", "ONYX_EP_VULKAN", true},
      {"cuda", "ONYX_EP_CUDA", true},
      {"tensorrt", "ONYX_EP_TENSORRT", true},
      {"tensorrt_rtx", "ONYX_EP_TENSORRT_RTX", true},
      {"directml", "ONYX_EP_DIRECTML", true},
      {"coreml", "ONYX_EP_COREML", true},
      {"rocm", "ONYX_EP_ROCM", true},
      {"openvino", "ONYX_EP_OPENVINO", true},
      {"qnn", "ONYX_EP_QNN", true},
      {"cann", "ONYX_EP_CANN", true},
      {"nnapi", "ONYX_EP_NNAPI", true},
      {"tvm", "ONYX_EP_TVM", true},
      {"acl", "ONYX_EP_ACL", true},
      {"armnn", "ONYX_EP_ARMNN", true},
      {"migraphx", "ONYX_EP_MIGRAPHX", true},
      {"vitis_ai", "ONYX_EP_VITIS_AI", true},
      {"rknpu", "ONYX_EP_RKNPU", true},
      {"webgpu", "ONYX_EP_WEBGPU", true},
      {"azure", "ONYX_EP_AZURE", true},
  };
  return table;
}

const KnownEp* find_known_ep(const std::string& name) {
  for (const auto& k : known_eps())
    if (name == k.name) return &k;
  return nullptr;
}

namespace {

class CpuFactory final : public EpFactory {
 public:
  std::string name() const override { return "cpu"; }
  std::string version() const override { return onyx::version(); }
  std::vector<ep::OptionInfo> options() const override { return cpu_option_schema(); }
  std::unique_ptr<ExecutionProvider> create(const EpCreateContext& ctx) const override {
    return create_cpu_provider(parse_cpu_options(ctx.options));
  }
};

}  // namespace

const EpFactory* resolve_factory(const std::string& name, const std::string& module_path, ep::Availability* why) {
  static const CpuFactory cpu;
  ep::Availability a;
  if (name == "cpu") {
    a.built = a.loadable = a.usable = true;
    a.version = cpu.version();
    if (why) *why = a;
    return &cpu;
  }
  const KnownEp* known = find_known_ep(name);
  if (!known && module_path.empty()) {
    // A third-party EP (a plugin, include/onyx/ep_c_api.h) on the module search path?
    const EpFactory* f = load_ep_module(name, "", &a);
    if (!f) {
      a = {};
      a.reason = str("unknown execution provider '", name, "': not one of onyx's, and no plugin ", ep_module_file(name),
                     " is on $ONYX_EP_PATH, beside libonyx or the executable, or on the system's library path (a third-party"
                     " EP elsewhere is loaded through the option module_path)");
    }
    if (why) *why = a;
    return f;
  }
  if (known && module_path.empty() && !ep_built(name)) {
    a.reason = str("not built into this onyx (CMake option ", known->cmake_option, ")");
    if (why) *why = a;
    return nullptr;
  }
  const EpFactory* f = load_ep_module(name, module_path, &a);
  if (why) *why = a;
  return f;
}

ep::Availability ep_availability(const std::string& name, const std::string& module_path) {
  ep::Availability a;
  const EpFactory* f = resolve_factory(name, module_path, &a);
  if (!f) return a;
  a.built = a.loadable = true;
  a.version = f->version();
  std::string reason;
  a.usable = f->probe(&reason);
  if (!a.usable) a.reason = reason.empty() ? "no usable device" : reason;
  return a;
}

namespace {

/// The values of an "enum:a|b|c" option type.
std::vector<std::string> enum_values(const std::string& type) {
  std::vector<std::string> r;
  size_t b = 5;
  while (b <= type.size()) {
    const size_t e = type.find('|', b);
    r.push_back(type.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return r;
}

bool valid_value(const std::string& type, const std::string& v) {
  if (type == "bool") return v == "true" || v == "false" || v == "1" || v == "0";
  if (type == "int" || type == "uint") {
    if (v.empty() || std::isspace(static_cast<unsigned char>(v[0]))) return false;
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    return *end == '\0' && errno != ERANGE && (type == "int" || x >= 0);
  }
  if (type == "float") {
    if (v.empty() || std::isspace(static_cast<unsigned char>(v[0]))) return false;
    char* end = nullptr;
    std::strtod(v.c_str(), &end);
    return *end == '\0';
  }
  if (type.rfind("enum:", 0) == 0) {
    for (const auto& e : enum_values(type))
      if (e == v) return true;
    return false;
  }
  return true;  // string
}

/// What a value of `type` may be, for an error message: "int (an integer)", "one of auto, tiled, simple".
std::string accepted_values(const std::string& type) {
  if (type == "bool") return "bool (true, false, 1 or 0)";
  if (type == "int") return "int (an integer)";
  if (type == "uint") return "uint (a non-negative integer)";
  if (type == "float") return "float (a number)";
  if (type.rfind("enum:", 0) == 0) return "one of " + join(enum_values(type), ", ");
  return type;
}

}  // namespace

OptionList effective_options(const std::string& ep, const std::vector<ep::OptionInfo>& schema, const OptionList& given) {
  OptionList out;
  for (const auto& o : schema) out.emplace_back(o.key, o.default_value);
  for (const auto& [k, v] : given) {
    if (k == "module_path") {
      out.emplace_back(k, v);
      continue;
    }
    auto it = std::find_if(schema.begin(), schema.end(), [&](const ep::OptionInfo& o) { return o.key == k; });
    if (it == schema.end()) {
      std::vector<std::string> keys;
      for (const auto& o : schema) keys.push_back(o.key);
      fail(ErrorCode::kInvalidArgument, "execution provider '", ep, "' has no option '", k, "'",
           keys.empty() ? std::string(" (it takes none)") : " (options: " + join(keys, ", ") + ")");
    }
    if (!valid_value(it->type, v))
      fail(ErrorCode::kInvalidArgument, "execution provider '", ep, "': option '", k, "' must be ", accepted_values(it->type),
           ", got '", v, "'");
    for (auto& [ek, ev] : out)
      if (ek == k) ev = v;
  }
  return out;
}

namespace {
std::mutex& env_mu() {
  static std::mutex m;
  return m;
}
std::vector<ep::ExecutionProviderDispatch>& env_list() {
  static std::vector<ep::ExecutionProviderDispatch> l;
  return l;
}
}  // namespace

std::vector<ep::ExecutionProviderDispatch> environment_eps() {
  std::lock_guard<std::mutex> lock(env_mu());
  return env_list();
}

EnvironmentBuilder& EnvironmentBuilder::with_execution_providers(std::vector<ep::ExecutionProviderDispatch> eps) {
  eps_ = std::move(eps);
  return *this;
}

void EnvironmentBuilder::commit() {
  std::lock_guard<std::mutex> lock(env_mu());
  env_list() = eps_;
}

EnvironmentBuilder init() { return EnvironmentBuilder(); }

}  // namespace onyx
