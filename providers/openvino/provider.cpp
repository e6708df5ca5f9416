// The OpenVINO execution provider (libonyx_ep_openvino.so), a plugin of onyx's C ABI
// (onyx/ep_c_api.h, docs/ep-sdk.md): its table (name, version, option schema, devices, create)
// and the entry point onyx calls when it loads the library.
#include <cstdio>
#include <mutex>

#include "openvino_ep.hpp"

namespace onyx::openvino {

namespace {

constexpr OnyxEpOptionInfo option_info(const char* key, const char* type, const char* dflt, const char* doc) {
  OnyxEpOptionInfo o = init<OnyxEpOptionInfo>();
  o.key = key;
  o.type = type;
  o.default_value = dflt;
  o.doc = doc;
  return o;
}

const OnyxEpOptionInfo kOptions[] = {
    option_info("device_type", "string", "CPU",
                "OpenVINO device: CPU, GPU, GPU.<n>, NPU, AUTO, AUTO:<devices>, HETERO:<devices> (as ORT's OpenVINO EP)"),
    option_info("precision", "enum:FP32|FP16|BF16|ACCURACY", "FP32",
                "inference precision: FP32 (full float32, the default), FP16 or BF16 (OpenVINO computes in that type where it "
                "can), ACCURACY (OpenVINO's accuracy execution mode)"),
    option_info("num_of_threads", "int", "0", "threads of OpenVINO's CPU plugin (0 = the session's intra-op threads)"),
    option_info("num_streams", "int", "1", "parallel inference streams of the CPU plugin"),
    option_info("cache_dir", "string", "",
                "directory of OpenVINO's compiled-model cache: a later session compiling the same regions imports them instead"),
    option_info("min_region_nodes", "int", "1", "smallest group of connected nodes worth handing to OpenVINO"),
    option_info("enable_qdq_optimizer", "bool", "false",
                "ORT's QDQ stripping for NPUs; true is refused (not implemented): QDQ groups go to OpenVINO as written"),
};

/// "OpenVINO <build number>", as onyx providers shows it.
const std::string& version() {
  static const std::string v = [] {
    const ov::Version ver = ov::get_openvino_version();
    return str("OpenVINO ", ver.buildNumber ? ver.buildNumber : "?");
  }();
  return v;
}

/// The devices OpenVINO finds here, looked for once per process (the strings live as long).
struct Discovery {
  std::vector<std::string> ids, descriptions, reasons;
  std::vector<OnyxEpDeviceInfo> devices;
  std::string error;  // OpenVINO could not start
};

const Discovery& discover() {
  static const Discovery d = [] {
    Discovery r;
    try {
      for (const std::string& name : core().get_available_devices()) {
        std::string description = name;
        try {
          description = core().get_property(name, ov::device::full_name);
        } catch (const std::exception&) {
          // its name alone
        }
        r.ids.push_back(name);
        r.descriptions.push_back(std::move(description));
        r.reasons.emplace_back();
      }
      if (r.ids.empty()) {
        r.ids.push_back("openvino");
        r.descriptions.push_back("OpenVINO");
        r.reasons.push_back("OpenVINO finds no device (no plugin loaded)");
      }
    } catch (const std::exception& e) {
      r.error = str("OpenVINO cannot start: ", short_message(e));
      return r;
    }
    for (size_t i = 0; i < r.ids.size(); ++i) {
      OnyxEpDeviceInfo info = init<OnyxEpDeviceInfo>();
      info.id = r.ids[i].c_str();
      info.description = r.descriptions[i].c_str();
      info.available = r.reasons[i].empty() ? 1 : 0;
      info.reason = r.reasons[i].empty() ? nullptr : r.reasons[i].c_str();
      r.devices.push_back(info);
    }
    return r;
  }();
  return d;
}

OnyxEpStatus* get_devices(const OnyxEpDeviceInfo** devices, size_t* count) {
  return guard([&] {
    const Discovery& d = discover();
    if (!d.error.empty()) fail(ONYX_EP_DEVICE_UNAVAILABLE, d.error);
    *devices = d.devices.data();
    *count = d.devices.size();
  });
}

const OnyxEpPluginApi& plugin_api() {
  static const OnyxEpPluginApi api = [] {
    OnyxEpPluginApi a = init<OnyxEpPluginApi>();
    a.name = "openvino";
    a.vendor = nullptr;  // onyx then shows the version alone, as it did for the built-in module
    a.version = version().c_str();
    a.options = kOptions;
    a.num_options = sizeof(kOptions) / sizeof(kOptions[0]);
    a.get_devices = get_devices;
    a.create = create_instance;
    return a;
  }();
  return api;
}

}  // namespace

}  // namespace onyx::openvino

extern "C" ONYX_EP_PLUGIN_EXPORT const OnyxEpPluginApi* onyx_ep_plugin_init(const OnyxEpHostApi* host, uint32_t host_api_version,
                                                                            char* err, size_t err_len) {
  auto refuse = [&](const char* why) -> const OnyxEpPluginApi* {
    if (err && err_len) std::snprintf(err, err_len, "%s", why);
    return nullptr;
  };
  // The host functions the EP calls, up to the last of them (release_onnx_model).
  if (!host || host_api_version < 1 || !ONYX_EP_HAS_FIELD(OnyxEpHostApi, host, release_onnx_model) || !host->make_status ||
      !host->export_onnx || !host->release_onnx_model)
    return refuse("the OpenVINO EP needs an onyx with EP plugin API 1 or newer (export_onnx and the kernel context)");
  try {
    onyx::openvino::set_host(host);
    return &onyx::openvino::plugin_api();
  } catch (const std::exception& e) {
    return refuse(e.what());
  } catch (...) {
    return refuse("the OpenVINO EP failed to initialise");
  }
}
