// The OpenVINO EP: a compiling EP. It claims the nodes OpenVINO's ONNX frontend converts and the
// chosen device supports (claim.cpp) and compiles each group of them onyx forms into one OpenVINO
// compiled model (region.cpp). This file: options, the per-session instance and its entry points.
#include <algorithm>
#include <cstdlib>
#include <istream>
#include <streambuf>

#include <openvino/frontend/manager.hpp>

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

namespace {

/// A read-only, seekable stream buffer over bytes owned elsewhere (the frontend reads a model's
/// header and seeks back before it parses it).
class MemoryBuf final : public std::streambuf {
 public:
  MemoryBuf(const char* data, size_t size) {
    char* p = const_cast<char*>(data);
    setg(p, p, p + size);
  }

 protected:
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode which) override {
    if (!(which & std::ios_base::in)) return pos_type(off_type(-1));
    const off_type size = egptr() - eback();
    const off_type base = dir == std::ios_base::beg ? 0 : dir == std::ios_base::cur ? gptr() - eback() : size;
    const off_type pos = base + off;
    if (pos < 0 || pos > size) return pos_type(off_type(-1));
    setg(eback(), eback() + pos, egptr());
    return pos_type(pos);
  }
  pos_type seekpos(pos_type pos, std::ios_base::openmode which) override {
    return seekoff(off_type(pos), std::ios_base::beg, which);
  }
};

}  // namespace

std::shared_ptr<ov::Model> read_onnx(std::string_view bytes) {
  // What Core::read_model(std::string, Tensor()) does -- the frontend that recognises the bytes
  // loads them from a stream and converts them -- but over onyx's buffer: the bytes are not
  // copied into a string and a string stream first (a region's model carries all its weights).
  MemoryBuf buf(bytes.data(), bytes.size());
  std::istream stream(&buf);
  std::istream* in = &stream;
  ov::frontend::FrontEndManager manager;
  const ov::frontend::FrontEnd::Ptr fe = manager.load_by_model(in);
  if (!fe) fail(ONYX_EP_FAILURE, "OpenVINO has no frontend for the model onyx wrote");
  const ov::frontend::InputModel::Ptr model = fe->load(in);
  if (!model) fail(ONYX_EP_FAILURE, "OpenVINO's ONNX frontend did not load the model onyx wrote");
  return fe->convert(model);
}

ov::element::Type element_type(int32_t dtype) {
  switch (dtype) {
    case ONYX_EP_FLOAT: return ov::element::f32;
    case ONYX_EP_FLOAT16: return ov::element::f16;
    case ONYX_EP_BFLOAT16: return ov::element::bf16;
    case ONYX_EP_DOUBLE: return ov::element::f64;
    case ONYX_EP_INT8: return ov::element::i8;
    case ONYX_EP_UINT8: return ov::element::u8;
    case ONYX_EP_INT16: return ov::element::i16;
    case ONYX_EP_UINT16: return ov::element::u16;
    case ONYX_EP_INT32: return ov::element::i32;
    case ONYX_EP_UINT32: return ov::element::u32;
    case ONYX_EP_INT64: return ov::element::i64;
    case ONYX_EP_UINT64: return ov::element::u64;
    case ONYX_EP_BOOL: return ov::element::boolean;
    default: return ov::element::dynamic;
  }
}

namespace {

using OptionList = std::vector<std::pair<std::string, std::string>>;

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
    fail(ONYX_EP_INVALID_ARGUMENT, "openvino: option '", key, "' must be an integer in [", lo, ", ", hi, "], got '", v, "'");
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
      fail(ONYX_EP_FAILURE, "openvino: device '", dev, "' (option device_type '", spec, "') is not present here; OpenVINO sees: ",
           avail.empty() ? "no device" : avail);
    }
    start = end + 1;
  }
}

// The instance's entry points (OnyxEpInstance): each catches everything and returns a status.
OnyxEpStatus* claim(void* state, const OnyxEpGraph* graph, const OnyxEpNode* node, OnyxEpClaim* out) {
  return guard([&] { claim_node(graph, node, static_cast<const Instance*>(state)->options, out); });
}

OnyxEpStatus* compile_group(void* state, const OnyxEpGraph* graph, const OnyxEpGroup* group, void** compiled) {
  return guard([&] { *compiled = compile_region(graph, *group, *static_cast<const Instance*>(state)); });
}

OnyxEpStatus* compute_group(void*, void* compiled, OnyxEpKernelContext* ctx) {
  return guard([&] { run_region(*static_cast<const Region*>(compiled), ctx); });
}

void release_group(void*, void* compiled) {
  try {
    release_region(static_cast<Region*>(compiled));
  } catch (...) {
  }
}

void release(void* state) { delete static_cast<Instance*>(state); }

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
    fail(ONYX_EP_NOT_IMPLEMENTED,
         "openvino: option enable_qdq_optimizer=true (ORT's QDQ stripping for NPUs) is not implemented; "
         "QDQ groups go to OpenVINO as written, whose low-precision transformations run them in int8");
  if (r.device_type.empty()) fail(ONYX_EP_INVALID_ARGUMENT, "openvino: option device_type is empty");
  return r;
}

/// OnyxEpPluginApi::create: the options checked, the device looked for, the instance's table.
OnyxEpStatus* create_instance(const OnyxEpCreateInfo* info, OnyxEpInstance* out) {
  return guard([&] {
    if (!info || !out) fail(ONYX_EP_INVALID_ARGUMENT, "openvino: create without its arguments");
    OptionList options;
    for (size_t i = 0; i < info->num_options; ++i)
      if (info->option_keys[i] && info->option_values[i]) options.emplace_back(info->option_keys[i], info->option_values[i]);
    auto inst = std::make_unique<Instance>();
    inst->options = parse_options(options);
    check_device(inst->options.device_type);
    inst->session_threads = info->session_threads;
    inst->props = inst->options.compile_properties(info->session_threads);
    out->device = "cpu:0";  // host memory, whatever device computes
    out->memory = nullptr;
    out->flags = ONYX_EP_COMPILES_GROUPS;
    out->min_group_nodes = static_cast<uint32_t>(inst->options.min_region_nodes);
    out->claim = claim;
    out->compile_group = compile_group;
    out->compute_group = compute_group;
    out->release_group = release_group;
    out->release = release;
    out->state = inst.release();
  });
}

}  // namespace onyx::openvino
