// The OpenVINO execution provider (module libonyx_ep_openvino.so): factory, options, availability.
#include "ep/module_entry.hpp"
#include "openvino_ep.hpp"

namespace onyx::openvino {

class Factory final : public EpFactory {
 public:
  std::string name() const override { return "openvino"; }
  std::string version() const override {
    const ov::Version v = ov::get_openvino_version();
    return str("OpenVINO ", v.buildNumber ? v.buildNumber : "?");
  }
  std::vector<ep::OptionInfo> options() const override {
    return {{"device_type", "string", "CPU",
             "OpenVINO device: CPU, GPU, GPU.<n>, NPU, AUTO, AUTO:<devices>, HETERO:<devices> (as ORT's OpenVINO EP)"},
            {"precision", "enum:FP32|FP16|BF16|ACCURACY", "FP32",
             "inference precision: FP32 (full float32, the default), FP16 or BF16 (OpenVINO computes in that type where it "
             "can), ACCURACY (OpenVINO's accuracy execution mode)"},
            {"num_of_threads", "int", "0", "threads of OpenVINO's CPU plugin (0 = the session's intra-op threads)"},
            {"num_streams", "int", "1", "parallel inference streams of the CPU plugin"},
            {"cache_dir", "string", "",
             "directory of OpenVINO's compiled-model cache: a later session compiling the same regions imports them instead"},
            {"min_region_nodes", "int", "1", "smallest group of connected nodes worth handing to OpenVINO"},
            {"enable_qdq_optimizer", "bool", "false",
             "ORT's QDQ stripping for NPUs; true is refused (not implemented): QDQ groups go to OpenVINO as written"}};
  }
  bool probe(std::string* reason) const override {
    try {
      const std::vector<std::string> devices = core().get_available_devices();
      if (devices.empty()) {
        *reason = "OpenVINO finds no device (no plugin loaded)";
        return false;
      }
      return true;
    } catch (const std::exception& e) {
      *reason = str("OpenVINO cannot start: ", short_message(e));
      return false;
    }
  }
  std::unique_ptr<ExecutionProvider> create(const EpCreateContext& ctx) const override { return create_openvino_ep(ctx); }
};

}  // namespace onyx::openvino

ONYX_EP_MODULE("openvino", onyx::openvino::Factory)
