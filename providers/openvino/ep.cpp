// The OpenVINO EP: a compiling EP. It claims the nodes OpenVINO's ONNX frontend converts and the
// chosen device supports (claim.cpp) and compiles each region of them into one OpenVINO compiled
// model (region.cpp).
#include <algorithm>
#include <cstdlib>

#include "openvino_ep.hpp"

namespace onyx::openvino {

ov::Core& core() {
  static ov::Core c;
  return c;
}

std::string short_message(const std::exception& e) {
  std::string m = e.what();
  // OpenVINO prefixes "Exception from src/...cpp:NN:\n" and may append a trace: keep the line
  // that says what happened.
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= m.size()) {
    size_t end = m.find('\n', start);
    if (end == std::string::npos) end = m.size();
    std::string line = m.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty() && line.rfind("Exception from ", 0) != 0 && line.rfind("Check '", 0) != 0) lines.push_back(line);
    start = end + 1;
  }
  if (lines.empty()) return m;
  std::string out = lines.front();
  if (out.size() > 400) out = out.substr(0, 400) + "...";
  return out;
}

ov::element::Type element_type(DType t) {
  switch (t) {
    case DType::kFloat: return ov::element::f32;
    case DType::kFloat16: return ov::element::f16;
    case DType::kBFloat16: return ov::element::bf16;
    case DType::kDouble: return ov::element::f64;
    case DType::kInt8: return ov::element::i8;
    case DType::kUInt8: return ov::element::u8;
    case DType::kInt16: return ov::element::i16;
    case DType::kUInt16: return ov::element::u16;
    case DType::kInt32: return ov::element::i32;
    case DType::kUInt32: return ov::element::u32;
    case DType::kInt64: return ov::element::i64;
    case DType::kUInt64: return ov::element::u64;
    case DType::kBool: return ov::element::boolean;
    default: return ov::element::dynamic;
  }
}

namespace {

std::string option(const OptionList& o, const char* key, const char* dflt) {
  for (const auto& [k, v] : o)
    if (k == key) return v;
  return dflt;
}

int option_int(const OptionList& o, const char* key, int lo, int hi) {
  const std::string v = option(o, key, "0");
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (end == v.c_str() || *end || x < lo || x > hi)
    fail(ErrorCode::kInvalidArgument, "openvino: option '", key, "' must be an integer in [", lo, ", ", hi, "], got '", v, "'");
  return static_cast<int>(x);
}

// The device names OpenVINO knows of here ("CPU", "GPU.0", ...).
std::vector<std::string> devices() {
  try {
    return core().get_available_devices();
  } catch (const std::exception&) {
    return {};
  }
}

// "GPU.1" names device GPU; "HETERO:GPU,CPU" and "AUTO:..." name several: each must exist.
void check_device(const std::string& spec) {
  std::string list = spec;
  for (const char* meta : {"HETERO", "AUTO", "MULTI", "BATCH"}) {
    const std::string m = meta;
    if (list == m) return;  // AUTO alone picks among what is present
    if (list.rfind(m + ":", 0) == 0) {
      list = list.substr(m.size() + 1);
      break;
    }
  }
  const std::vector<std::string> have = devices();
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string dev = list.substr(start, end - start);
    const std::string base = dev.substr(0, dev.find('.'));
    const bool found = std::any_of(have.begin(), have.end(), [&](const std::string& h) { return h == dev || h.substr(0, h.find('.')) == base; });
    if (dev.empty() || !found) {
      std::string avail;
      for (const auto& h : have) avail += (avail.empty() ? "" : ", ") + h;
      fail(ErrorCode::kEpFailure, "openvino: device '", dev, "' (option device_type '", spec, "') is not present here; OpenVINO sees: ",
           avail.empty() ? "no device" : avail);
    }
    start = end + 1;
  }
}

class OpenVinoEp final : public ExecutionProvider {
 public:
  OpenVinoEp(Options o, int session_threads) : options_(std::move(o)), session_threads_(session_threads) {}
  std::string name() const override { return "openvino"; }
  std::string device() const override { return "cpu:0"; }  // host memory, whatever device computes
  bool claim(const ClaimInfo& info, Decline* why) const override { return claim_node(info, options_, why); }
  std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const override {
    fail(ErrorCode::kNotImplemented, "openvino: ", info.node.label(), " runs only inside a compiled region");
  }
  bool compiles_regions() const override { return true; }
  size_t min_region_nodes() const override { return options_.min_region_nodes; }
  std::unique_ptr<Kernel> compile_region(const RegionInfo& region) const override {
    return compile_openvino_region(region, options_, session_threads_);
  }

 private:
  Options options_;
  int session_threads_;
};

}  // namespace

ov::AnyMap Options::compile_properties(int session_threads) const {
  ov::AnyMap p;
  p.emplace(ov::hint::performance_mode.name(), ov::hint::PerformanceMode::LATENCY);
  const bool cpu = device_type == "CPU" || device_type.rfind("CPU.", 0) == 0;
  if (cpu) {
    p.emplace(ov::inference_num_threads.name(), num_threads > 0 ? num_threads : std::max(1, session_threads));
    p.emplace(ov::num_streams.name(), ov::streams::Num(num_streams));
  }
  if (precision == "FP32") p.emplace(ov::hint::inference_precision.name(), ov::element::f32);
  else if (precision == "FP16") p.emplace(ov::hint::inference_precision.name(), ov::element::f16);
  else if (precision == "BF16") p.emplace(ov::hint::inference_precision.name(), ov::element::bf16);
  else if (precision == "ACCURACY") p.emplace(ov::hint::execution_mode.name(), ov::hint::ExecutionMode::ACCURACY);
  if (!cache_dir.empty()) p.emplace(ov::cache_dir.name(), cache_dir);
  return p;
}

Options parse_options(const OptionList& o) {
  Options r;
  r.device_type = option(o, "device_type", "CPU");
  r.precision = option(o, "precision", "FP32");
  r.num_threads = option_int(o, "num_of_threads", 0, 4096);
  r.num_streams = std::max(1, option_int(o, "num_streams", 0, 256));
  r.cache_dir = option(o, "cache_dir", "");
  r.min_region_nodes = static_cast<size_t>(std::max(1, option_int(o, "min_region_nodes", 1, 1 << 20)));
  const std::string qdq = option(o, "enable_qdq_optimizer", "false");
  if (qdq == "true" || qdq == "1")
    fail(ErrorCode::kNotImplemented,
         "openvino: option enable_qdq_optimizer=true (ORT's QDQ stripping for NPUs) is not implemented; "
         "QDQ groups go to OpenVINO as written, whose low-precision transformations run them in int8");
  if (r.device_type.empty()) fail(ErrorCode::kInvalidArgument, "openvino: option device_type is empty");
  return r;
}

std::unique_ptr<ExecutionProvider> create_openvino_ep(const EpCreateContext& ctx) {
  Options o = parse_options(ctx.options);
  check_device(o.device_type);
  return std::make_unique<OpenVinoEp>(std::move(o), ctx.session_threads);
}

}  // namespace onyx::openvino
