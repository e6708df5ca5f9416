// libtriton_onyx.so: onyx as a Triton Inference Server backend (docs/serving.md).
//
// A model directory holds config.pbtxt (backend: "onyx") and <version>/model.onnx. The backend
// reads the session settings from the config's parameters, completes a config that leaves out
// inputs, outputs or max_batch_size from the model itself, makes one onyx::Session per model
// instance (KIND_CPU, or KIND_GPU with the instance's device id given to the GPU EPs), and runs
// the batches Triton's scheduler hands it: requests of one batch with equal shapes are concatenated
// along dim 0, run once, and the outputs split back per request. A request's error (onyx's
// message, INVALID_ARG for what the caller got wrong) fails that request alone.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "json.hpp"
#include "onyx/onyx.hpp"
#include "triton_backend_api.h"

namespace onyx::triton {
namespace {

// ---------------------------------------------------------------------------------------------
// Errors and logging

// An error the backend reports to Triton: its code and message.
struct BackendError {
  TRITONSERVER_Error_Code code;
  std::string message;
};

TRITONSERVER_Error* make_error(TRITONSERVER_Error_Code code, const std::string& message) {
  return TRITONSERVER_ErrorNew(code, message.c_str());
}

// onyx's error codes as Triton's: what the caller can fix is INVALID_ARG (HTTP 400).
TRITONSERVER_Error_Code code_of(ErrorCode c) {
  switch (c) {
    case ErrorCode::kInvalidArgument: return TRITONSERVER_ERROR_INVALID_ARG;
    case ErrorCode::kNotImplemented: return TRITONSERVER_ERROR_UNSUPPORTED;
    case ErrorCode::kNotAvailable: return TRITONSERVER_ERROR_UNAVAILABLE;
    case ErrorCode::kCancelled: return TRITONSERVER_ERROR_CANCELLED;
    case ErrorCode::kIo: return TRITONSERVER_ERROR_NOT_FOUND;
    default: return TRITONSERVER_ERROR_INTERNAL;
  }
}

[[noreturn]] void fail(TRITONSERVER_Error_Code code, std::string message) {
  throw BackendError{code, std::move(message)};
}

// Throws the server's error as a BackendError (taking ownership of it).
void check(TRITONSERVER_Error* err, const char* what) {
  if (err == nullptr) return;
  BackendError e{TRITONSERVER_ErrorCode(err), std::string(what) + ": " + TRITONSERVER_ErrorMessage(err)};
  TRITONSERVER_ErrorDelete(err);
  throw e;
}

void log(TRITONSERVER_LogLevel level, const std::string& message) {
  if (!TRITONSERVER_LogIsEnabled(level)) return;
  if (TRITONSERVER_Error* err = TRITONSERVER_LogMessage(level, __FILE__, __LINE__, message.c_str()))
    TRITONSERVER_ErrorDelete(err);
}

// Runs `f`, turning every exception into a Triton error (nullptr when none).
template <class F>
TRITONSERVER_Error* guarded(const std::string& context, F&& f) {
  try {
    f();
    return nullptr;
  } catch (const BackendError& e) {
    return make_error(e.code, context + e.message);
  } catch (const Error& e) {
    return make_error(code_of(e.code()), context + "onyx: " + e.what());
  } catch (const std::exception& e) {
    return make_error(TRITONSERVER_ERROR_INTERNAL, context + e.what());
  } catch (...) {
    return make_error(TRITONSERVER_ERROR_INTERNAL, context + "unknown exception");
  }
}

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

// ---------------------------------------------------------------------------------------------
// Types: Triton's data types (in requests and in config.pbtxt) and onyx's

struct TypeName {
  DType onyx;
  TRITONSERVER_DataType triton;
  const char* config;  // config.pbtxt's data_type
};
constexpr TypeName kTypes[] = {
    {DType::kBool, TRITONSERVER_TYPE_BOOL, "TYPE_BOOL"},       {DType::kUInt8, TRITONSERVER_TYPE_UINT8, "TYPE_UINT8"},
    {DType::kUInt16, TRITONSERVER_TYPE_UINT16, "TYPE_UINT16"}, {DType::kUInt32, TRITONSERVER_TYPE_UINT32, "TYPE_UINT32"},
    {DType::kUInt64, TRITONSERVER_TYPE_UINT64, "TYPE_UINT64"}, {DType::kInt8, TRITONSERVER_TYPE_INT8, "TYPE_INT8"},
    {DType::kInt16, TRITONSERVER_TYPE_INT16, "TYPE_INT16"},    {DType::kInt32, TRITONSERVER_TYPE_INT32, "TYPE_INT32"},
    {DType::kInt64, TRITONSERVER_TYPE_INT64, "TYPE_INT64"},    {DType::kFloat16, TRITONSERVER_TYPE_FP16, "TYPE_FP16"},
    {DType::kFloat, TRITONSERVER_TYPE_FP32, "TYPE_FP32"},      {DType::kDouble, TRITONSERVER_TYPE_FP64, "TYPE_FP64"},
    {DType::kBFloat16, TRITONSERVER_TYPE_BF16, "TYPE_BF16"},
};

const TypeName* type_of(DType t) {
  for (const auto& n : kTypes)
    if (n.onyx == t) return &n;
  return nullptr;
}
const TypeName* type_of(TRITONSERVER_DataType t) {
  for (const auto& n : kTypes)
    if (n.triton == t) return &n;
  return nullptr;
}
const TypeName* type_of_config(const std::string& name) {
  for (const auto& n : kTypes)
    if (name == n.config) return &n;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Session settings from config.pbtxt's parameters (the names follow the CLI's options)

struct Settings {
  std::vector<std::string> eps;                                        // execution_providers
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> ep_options;  // ep_option.NAME.KEY
  bool require_ep = false;                                             // require_ep
  bool strict = false;                                                 // strict
  std::optional<GraphOptimizationLevel> opt_level;                     // optimization_level
  int threads = 0;                                                     // threads
  std::optional<bool> spinning;                                        // intra_op_spinning
  uint64_t memory_limit_mb = 0;                                        // memory_limit_mb
};

constexpr const char* kParameterNames =
    "execution_providers, ep_option.NAME.KEY, require_ep, strict, optimization_level, threads, intra_op_spinning, "
    "memory_limit_mb";

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  fail(TRITONSERVER_ERROR_INVALID_ARG, "parameter " + key + ": expected true or false, got '" + v + "'");
}

int64_t parse_int(const std::string& key, const std::string& v, int64_t lo, int64_t hi) {
  size_t used = 0;
  int64_t n = 0;
  try {
    n = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || n < lo || n > hi)
    fail(TRITONSERVER_ERROR_INVALID_ARG, "parameter " + key + ": expected an integer in [" + std::to_string(lo) + ", " +
                                             std::to_string(hi) + "], got '" + v + "'");
  return n;
}

Settings settings_from(const Json& config) {
  Settings s;
  const Json* params = config.find("parameters");
  if (params == nullptr || !params->is_object()) return s;
  std::vector<std::pair<std::string, std::string>> option_entries;
  for (const auto& [key, entry] : params->members()) {
    const Json* sv = entry.find("string_value");
    const std::string value = sv ? sv->text() : std::string();
    if (key == "execution_providers") {
      std::stringstream ss(value);
      std::string name;
      while (std::getline(ss, name, ',')) {
        name.erase(0, name.find_first_not_of(" \t"));
        name.erase(name.find_last_not_of(" \t") + 1);
        if (!name.empty()) s.eps.push_back(name);
      }
    } else if (key.rfind("ep_option.", 0) == 0) {
      const std::string rest = key.substr(10);
      const size_t dot = rest.find('.');
      if (dot == std::string::npos || dot == 0 || dot + 1 == rest.size())
        fail(TRITONSERVER_ERROR_INVALID_ARG, "parameter " + key + ": expected ep_option.NAME.KEY (e.g. ep_option.cuda.device_id)");
      s.ep_options[rest.substr(0, dot)].emplace_back(rest.substr(dot + 1), value);
    } else if (key == "require_ep") {
      s.require_ep = parse_bool(key, value);
    } else if (key == "strict") {
      s.strict = parse_bool(key, value);
    } else if (key == "optimization_level") {
      if (value == "disabled") s.opt_level = GraphOptimizationLevel::kDisabled;
      else if (value == "basic") s.opt_level = GraphOptimizationLevel::kBasic;
      else if (value == "all") s.opt_level = GraphOptimizationLevel::kAll;
      else fail(TRITONSERVER_ERROR_INVALID_ARG, "parameter optimization_level: expected disabled, basic or all, got '" + value + "'");
    } else if (key == "threads") {
      s.threads = static_cast<int>(parse_int(key, value, 0, 4096));
    } else if (key == "intra_op_spinning") {
      s.spinning = parse_bool(key, value);
    } else if (key == "memory_limit_mb") {
      s.memory_limit_mb = static_cast<uint64_t>(parse_int(key, value, 0, int64_t(1) << 30));
    } else {
      fail(TRITONSERVER_ERROR_INVALID_ARG, "unknown parameter '" + key + "' (the onyx backend takes " + kParameterNames + ")");
    }
  }
  if (s.require_ep && s.eps.empty())
    fail(TRITONSERVER_ERROR_INVALID_ARG, "parameter require_ep needs execution_providers (e.g. \"cuda\")");
  for (const auto& [ep, opts] : s.ep_options) {
    if (std::find(s.eps.begin(), s.eps.end(), ep) != s.eps.end()) continue;
    if (ep != "cpu")
      fail(TRITONSERVER_ERROR_INVALID_ARG, "parameter ep_option." + ep + ".*: '" + ep +
                                               "' is not one of execution_providers (" +
                                               (s.eps.empty() ? std::string("none given") : join(s.eps, ",")) + ")");
    if (s.strict)
      fail(TRITONSERVER_ERROR_INVALID_ARG, "parameter ep_option.cpu.*: with strict no node may run on the CPU EP, so its options have no effect");
  }
  return s;
}

// The EPs that run on a GPU and take the instance's device as option device_id.
bool takes_device_id(const std::string& ep) { return ep == "cuda" || ep == "vulkan" || ep == "webgpu"; }

// A session for the model with the settings; device_id >= 0 goes to the GPU EPs (KIND_GPU).
Session make_session(const std::string& path, const Settings& s, int device_id) {
  SessionBuilder b;
  b.with_intra_threads(s.threads);
  if (s.spinning) b.with_intra_op_spinning(*s.spinning);
  if (s.memory_limit_mb) b.with_memory_limit(s.memory_limit_mb << 20);
  if (s.opt_level) b.with_optimization_level(*s.opt_level);
  std::vector<ep::ExecutionProviderDispatch> eps;
  bool gpu_ep = false;
  for (const auto& name : s.eps) {
    ep::Spec spec = ep::by_name(name);
    bool has_device = false;
    auto it = s.ep_options.find(name);
    if (it != s.ep_options.end())
      for (const auto& [k, v] : it->second) {
        spec.set(k, v);
        has_device |= k == "device_id";
      }
    if (device_id >= 0 && takes_device_id(name)) {
      gpu_ep = true;
      if (!has_device) spec.set("device_id", std::to_string(device_id));
    }
    eps.push_back(spec.build().error_on_failure(s.require_ep));
  }
  if (device_id >= 0 && !gpu_ep)
    fail(TRITONSERVER_ERROR_INVALID_ARG,
         "instance group KIND_GPU needs a GPU EP (cuda, vulkan or webgpu) in parameter execution_providers (given: " +
             (s.eps.empty() ? std::string("none") : join(s.eps, ",")) + "); use KIND_CPU otherwise");
  auto cpu = s.ep_options.find("cpu");
  if (cpu != s.ep_options.end() && std::find(s.eps.begin(), s.eps.end(), "cpu") == s.eps.end()) {
    ep::Spec spec = ep::by_name("cpu");
    for (const auto& [k, v] : cpu->second) spec.set(k, v);
    eps.push_back(spec.build());
  }
  b.with_execution_providers(std::move(eps));
  if (s.strict) b.with_cpu_fallback(false);
  return b.commit_from_file(path);
}

// ---------------------------------------------------------------------------------------------
// Model state: the configuration, checked against the model

struct IoSpec {
  std::string name;
  DType dtype;
  std::vector<int64_t> dims;  // as config.pbtxt has them (without the batch dim when batching)
};

struct ModelState {
  std::string name;
  uint64_t version = 0;
  std::string path;  // of the .onnx file
  Settings settings;
  int64_t max_batch_size = 0;
  std::vector<IoSpec> inputs, outputs;
  std::vector<std::string> output_names;
  // The session made to read the model's inputs and outputs, handed to the first CPU instance.
  std::mutex spare_mutex;
  std::optional<Session> spare;
};

std::vector<int64_t> dims_of(const Json& j, const std::string& what) {
  std::vector<int64_t> dims;
  if (const Json* d = j.find("dims"))
    for (const auto& v : d->items()) {
      try {
        dims.push_back(v.as_int());
      } catch (const std::exception& e) {
        fail(TRITONSERVER_ERROR_INVALID_ARG, what + " dims: " + e.what());
      }
    }
  return dims;
}

Json io_json(const IoInfo& io, bool batching) {
  const TypeName* t = type_of(io.dtype);
  if (t == nullptr || io.kind != Value::Kind::kTensor)
    fail(TRITONSERVER_ERROR_UNSUPPORTED, "'" + io.name + "' (" + io.type_string +
                                             ") has a type the onyx backend cannot exchange with Triton (numeric and bool tensors only)");
  Json j = Json::object();
  j.set("name", Json::string(io.name));
  j.set("data_type", Json::string(t->config));
  Json dims = Json::array();
  if (!io.has_shape)
    fail(TRITONSERVER_ERROR_INVALID_ARG, "'" + io.name + "' has no declared rank: list it with its dims in config.pbtxt");
  for (size_t i = batching ? 1 : 0; i < io.shape.size(); ++i) dims.push_back(Json::number(io.shape[i] < 0 ? -1 : io.shape[i]));
  j.set("dims", std::move(dims));
  return j;
}

// max_batch_size that auto-completion gives a model that can batch: Triton's backend setting
// default-max-batch-size (--backend-config=default-max-batch-size=N, 4 unless set).
std::atomic<int64_t> g_default_max_batch_size{4};

// Fills what the config leaves out from the model (the server asked for auto-completion). Returns
// whether the config changed.
bool auto_complete(Json& config, const Session& session) {
  bool changed = false;
  auto empty = [&](const char* key) {
    const Json* j = config.find(key);
    return j == nullptr || j->items().empty();
  };
  const bool no_inputs = empty("input"), no_outputs = empty("output");
  int64_t max_batch = 0;
  if (const Json* m = config.find("max_batch_size")) max_batch = m->as_int();
  if (max_batch == 0 && no_inputs && no_outputs) {
    // Batching along dim 0 when every input and output leaves dim 0 free.
    bool batchable = true;
    for (const auto* list : {&session.inputs(), &session.outputs()})
      for (const auto& io : *list) batchable &= io.has_shape && !io.shape.empty() && io.shape[0] < 0;
    if (batchable && g_default_max_batch_size.load() > 0) {
      max_batch = g_default_max_batch_size.load();
      config.set("max_batch_size", Json::number(max_batch));
      if (config.find("dynamic_batching") == nullptr) config.set("dynamic_batching", Json::object());
      changed = true;
    }
  }
  if (no_inputs) {
    Json list = Json::array();
    for (const auto& io : session.inputs())
      if (!io.has_default) list.push_back(io_json(io, max_batch > 0));
    config.set("input", std::move(list));
    changed = true;
  }
  if (no_outputs) {
    Json list = Json::array();
    for (const auto& io : session.outputs()) list.push_back(io_json(io, max_batch > 0));
    config.set("output", std::move(list));
    changed = true;
  }
  return changed;
}

std::string names_of(const std::vector<IoInfo>& list) {
  std::vector<std::string> names;
  for (const auto& io : list) names.push_back(io.name + " " + io.type_string);
  return join(names);
}

// Reads inputs and outputs from the config and checks them against the model.
void check_config(ModelState& m, const Json& config, const Session& session) {
  m.max_batch_size = 0;
  if (const Json* j = config.find("max_batch_size")) m.max_batch_size = j->as_int();
  if (m.max_batch_size < 0) fail(TRITONSERVER_ERROR_INVALID_ARG, "max_batch_size must not be negative");
  const bool batching = m.max_batch_size > 0;
  for (const char* kind : {"input", "output"}) {
    const bool is_input = kind[0] == 'i';
    const auto& model_list = is_input ? session.inputs() : session.outputs();
    auto& specs = is_input ? m.inputs : m.outputs;
    specs.clear();
    if (const Json* list = config.find(kind))
      for (const Json& e : list->items()) {
        IoSpec spec;
        const Json* name = e.find("name");
        spec.name = name ? name->text() : "";
        const std::string what = std::string("config.pbtxt ") + kind + " '" + spec.name + "'";
        auto it = std::find_if(model_list.begin(), model_list.end(), [&](const IoInfo& io) { return io.name == spec.name; });
        if (it == model_list.end())
          fail(TRITONSERVER_ERROR_INVALID_ARG, what + " is not an " + kind + " of " + m.path + " (its " + kind + "s: " +
                                                   names_of(model_list) + ")");
        const Json* dt = e.find("data_type");
        const TypeName* t = dt ? type_of_config(dt->text()) : nullptr;
        if (t == nullptr)
          fail(TRITONSERVER_ERROR_UNSUPPORTED, what + ": data_type " + (dt ? dt->text() : std::string("(none)")) +
                                                   " is not one the onyx backend exchanges (numeric and bool tensors)");
        if (t->onyx != it->dtype)
          fail(TRITONSERVER_ERROR_INVALID_ARG, what + " has data_type " + t->config + " but the model's is " + it->type_string);
        spec.dtype = t->onyx;
        spec.dims = dims_of(e, what);
        if (e.find("reshape") != nullptr)
          fail(TRITONSERVER_ERROR_UNSUPPORTED, what + ": reshape is not supported by the onyx backend");
        if (it->has_shape) {
          std::vector<int64_t> full = spec.dims;
          if (batching) full.insert(full.begin(), -1);
          if (full.size() != it->shape.size())
            fail(TRITONSERVER_ERROR_INVALID_ARG,
                 what + " has dims " + dims_text(spec.dims) + (batching ? " (after the batch dim)" : "") + " but the model's is " +
                     it->type_string + (batching ? "" : " (with max_batch_size 0 the dims include dim 0)"));
          for (size_t d = 0; d < full.size(); ++d) {
            if (batching && d == 0 && it->shape[0] >= 0)
              fail(TRITONSERVER_ERROR_INVALID_ARG,
                   "max_batch_size " + std::to_string(m.max_batch_size) + " needs dim 0 of every input and output free, but " +
                       kind + " '" + spec.name + "' is " + it->type_string + "; set max_batch_size: 0 for this model");
            if (full[d] >= 0 && it->shape[d] >= 0 && full[d] != it->shape[d])
              fail(TRITONSERVER_ERROR_INVALID_ARG, what + " has dims " + dims_text(spec.dims) + " but the model's is " + it->type_string);
          }
        }
        specs.push_back(std::move(spec));
      }
  }
  for (const auto& io : session.inputs())
    if (!io.has_default && std::none_of(m.inputs.begin(), m.inputs.end(), [&](const IoSpec& s) { return s.name == io.name; }))
      fail(TRITONSERVER_ERROR_INVALID_ARG, "config.pbtxt lists no input '" + io.name + "' (" + io.type_string +
                                               "), which the model needs; leave input out to have it completed from the model");
  if (m.outputs.empty()) fail(TRITONSERVER_ERROR_INVALID_ARG, "config.pbtxt lists no output");
  m.output_names.clear();
  for (const auto& o : m.outputs) m.output_names.push_back(o.name);
}

std::string placement_report(const Session& session) {
  std::string s = session.placement().summary + "; EPs:";
  for (const auto& r : session.registration()) {
    s += " " + r.name + " " + std::string(registration_outcome_name(r.outcome));
    if (!r.device.empty()) s += " on " + r.device;
    if (!r.reason.empty()) s += " (" + r.reason + ")";
    s += ";";
  }
  s.pop_back();
  return s;
}

// ---------------------------------------------------------------------------------------------
// Instances and execution

struct InstanceState {
  ModelState* model = nullptr;
  TRITONBACKEND_ModelInstance* instance = nullptr;
  std::string name;
  std::optional<Session> session;
};

// One request of a batch, once its inputs are read.
struct Pending {
  TRITONBACKEND_Request* request = nullptr;
  TRITONBACKEND_Response* response = nullptr;
  std::optional<BackendError> error;
  int64_t batch = 1;  // rows along dim 0 (1 without batching)
  struct In {
    TRITONBACKEND_Input* input = nullptr;
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t byte_size = 0;
    uint32_t buffers = 0;
  };
  std::vector<In> inputs;  // in the order of ModelState::inputs
  std::string signature;   // shapes past dim 0 and dtypes: requests with equal ones run together
  uint64_t compute_start = 0, compute_end = 0;
};

void read_request(const ModelState& m, Pending& p) {
  const bool batching = m.max_batch_size > 0;
  uint32_t count = 0;
  check(TRITONBACKEND_RequestInputCount(p.request, &count), "reading the request's inputs");
  for (const IoSpec& spec : m.inputs) {
    Pending::In in;
    TRITONSERVER_Error* err = TRITONBACKEND_RequestInput(p.request, spec.name.c_str(), &in.input);
    if (err != nullptr) {
      TRITONSERVER_ErrorDelete(err);
      fail(TRITONSERVER_ERROR_INVALID_ARG, "onyx: missing input '" + spec.name + "'");
    }
    const char* name = nullptr;
    TRITONSERVER_DataType dt = TRITONSERVER_TYPE_INVALID;
    const int64_t* shape = nullptr;
    uint32_t rank = 0;
    check(TRITONBACKEND_InputProperties(in.input, &name, &dt, &shape, &rank, &in.byte_size, &in.buffers),
          "reading an input's properties");
    const TypeName* t = type_of(dt);
    if (t == nullptr)
      fail(TRITONSERVER_ERROR_INVALID_ARG, "onyx: input '" + spec.name + "' has a data type the onyx backend does not take (BYTES?)");
    in.dtype = t->onyx;
    in.shape.assign(shape, shape + rank);
    int64_t numel = 1;
    for (int64_t d : in.shape) {
      if (d < 0) fail(TRITONSERVER_ERROR_INVALID_ARG, "onyx: input '" + spec.name + "' has a negative dim " + dims_text(in.shape));
      numel *= d;
    }
    if (static_cast<uint64_t>(numel) * dtype_size(in.dtype) != in.byte_size)
      fail(TRITONSERVER_ERROR_INVALID_ARG, "onyx: input '" + spec.name + "' holds " + std::to_string(in.byte_size) +
                                               " bytes, not the " + std::to_string(numel * dtype_size(in.dtype)) +
                                               " its shape " + dims_text(in.shape) + " needs");
    if (batching) {
      if (rank == 0) fail(TRITONSERVER_ERROR_INVALID_ARG, "onyx: input '" + spec.name + "' has no batch dim");
      if (&spec == &m.inputs.front()) p.batch = in.shape[0];
      else if (in.shape[0] != p.batch)
        fail(TRITONSERVER_ERROR_INVALID_ARG, "onyx: input '" + spec.name + "' has " + std::to_string(in.shape[0]) +
                                                 " rows along the batch dim, input '" + m.inputs.front().name + "' " +
                                                 std::to_string(p.batch));
    }
    p.signature += std::to_string(static_cast<int>(in.dtype)) + ":";
    for (size_t d = batching ? 1 : 0; d < in.shape.size(); ++d) p.signature += std::to_string(in.shape[d]) + ",";
    p.signature += ";";
    p.inputs.push_back(std::move(in));
  }
  if (batching && p.batch > m.max_batch_size)
    fail(TRITONSERVER_ERROR_INVALID_ARG, "onyx: batch of " + std::to_string(p.batch) + " exceeds max_batch_size " +
                                             std::to_string(m.max_batch_size));
}

// Copies all of an input's buffers (host memory) to `dst`.
void gather(const Pending::In& in, char* dst) {
  for (uint32_t b = 0; b < in.buffers; ++b) {
    const void* buf = nullptr;
    uint64_t size = 0;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    check(TRITONBACKEND_InputBuffer(in.input, b, &buf, &size, &mt, &mt_id), "reading an input buffer");
    if (mt == TRITONSERVER_MEMORY_GPU)
      fail(TRITONSERVER_ERROR_UNSUPPORTED, "onyx: input in GPU memory; the onyx backend takes inputs in host memory");
    std::memcpy(dst, buf, size);
    dst += size;
  }
}

// Runs the requests of `group` (equal signatures) as one batch and fills their responses.
void run_group(const InstanceState& st, std::vector<Pending*>& group) {
  const ModelState& m = *st.model;
  const bool batching = m.max_batch_size > 0;
  int64_t total = 0;
  for (Pending* p : group) total += p->batch;
  const uint64_t compute_start = now_ns();
  std::vector<std::pair<std::string, Value>> feeds;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const Pending::In& first = group.front()->inputs[i];
    std::vector<int64_t> shape = first.shape;
    if (batching) shape[0] = total;
    const void* buf = nullptr;
    uint64_t size = 0;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    if (group.size() == 1 && first.buffers == 1) {
      check(TRITONBACKEND_InputBuffer(first.input, 0, &buf, &size, &mt, &mt_id), "reading an input buffer");
    }
    if (buf != nullptr && mt != TRITONSERVER_MEMORY_GPU) {
      // One request, one contiguous host buffer: onyx reads Triton's buffer in place.
      feeds.emplace_back(m.inputs[i].name, Tensor::view(first.dtype, Shape(shape), buf));
    } else {
      Tensor t(first.dtype, Shape(shape));
      char* dst = static_cast<char*>(t.raw_data());
      for (Pending* p : group) {
        gather(p->inputs[i], dst);
        dst += p->inputs[i].byte_size;
      }
      feeds.emplace_back(m.inputs[i].name, std::move(t));
    }
  }
  std::vector<Value> results = st.session->run(feeds, m.output_names);
  const uint64_t compute_end = now_ns();

  // Each request's rows of each output it asked for.
  int64_t row = 0;
  for (Pending* p : group) {
    p->compute_start = compute_start;
    p->compute_end = compute_end;
    uint32_t n_requested = 0;
    check(TRITONBACKEND_RequestOutputCount(p->request, &n_requested), "reading the requested outputs");
    std::vector<size_t> wanted;
    for (uint32_t k = 0; k < n_requested; ++k) {
      const char* name = nullptr;
      check(TRITONBACKEND_RequestOutputName(p->request, k, &name), "reading a requested output");
      auto it = std::find(m.output_names.begin(), m.output_names.end(), name);
      if (it == m.output_names.end()) fail(TRITONSERVER_ERROR_INVALID_ARG, std::string("onyx: no output '") + name + "'");
      wanted.push_back(static_cast<size_t>(it - m.output_names.begin()));
    }
    if (n_requested == 0)
      for (size_t k = 0; k < m.output_names.size(); ++k) wanted.push_back(k);
    for (size_t k : wanted) {
      const Value& v = results[k];
      if (!v.is_tensor() || !v.tensor().on_host())
        fail(TRITONSERVER_ERROR_INTERNAL, "onyx: output '" + m.output_names[k] + "' is not a host tensor");
      const Tensor& t = v.tensor();
      const TypeName* type = type_of(t.dtype());
      if (type == nullptr)
        fail(TRITONSERVER_ERROR_UNSUPPORTED, "onyx: output '" + m.output_names[k] + "' has type " +
                                                 std::string(dtype_name(t.dtype())) + ", which Triton cannot take");
      std::vector<int64_t> shape(t.shape().size());
      for (size_t d = 0; d < shape.size(); ++d) shape[d] = t.dim(d);
      size_t offset = 0, bytes = t.nbytes();
      if (batching) {
        if (shape.empty() || shape[0] != total)
          fail(TRITONSERVER_ERROR_INTERNAL, "onyx: output '" + m.output_names[k] + "' has shape " + dims_text(shape) +
                                                ", not " + std::to_string(total) + " rows for the batch");
        const size_t row_bytes = total ? t.nbytes() / static_cast<size_t>(total) : 0;
        offset = static_cast<size_t>(row) * row_bytes;
        bytes = static_cast<size_t>(p->batch) * row_bytes;
        shape[0] = p->batch;
      }
      TRITONBACKEND_Output* out = nullptr;
      check(TRITONBACKEND_ResponseOutput(p->response, &out, m.output_names[k].c_str(), type->triton,
                                         shape.data(), static_cast<uint32_t>(shape.size())),
            "creating an output");
      void* dst = nullptr;
      TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
      int64_t mt_id = 0;
      check(TRITONBACKEND_OutputBuffer(out, &dst, bytes, &mt, &mt_id), "allocating an output buffer");
      if (bytes != 0 && mt == TRITONSERVER_MEMORY_GPU)
        fail(TRITONSERVER_ERROR_UNSUPPORTED, "onyx: the server gave an output buffer in GPU memory; the onyx backend writes host memory");
      if (bytes != 0) std::memcpy(dst, static_cast<const char*>(t.raw_data()) + offset, bytes);
    }
    row += p->batch;
  }
  TRITONSERVER_Error* err = TRITONBACKEND_ModelInstanceReportBatchStatistics(
      st.instance, static_cast<uint64_t>(batching ? total : 1), compute_start, compute_start, compute_end, now_ns());
  if (err) TRITONSERVER_ErrorDelete(err);
}

std::optional<BackendError> as_backend_error(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const BackendError& b) {
    return b;
  } catch (const Error& o) {
    return BackendError{code_of(o.code()), std::string("onyx: ") + o.what()};
  } catch (const std::exception& s) {
    return BackendError{TRITONSERVER_ERROR_INTERNAL, std::string("onyx backend: ") + s.what()};
  } catch (...) {
    return BackendError{TRITONSERVER_ERROR_INTERNAL, "onyx backend: unknown exception"};
  }
}

void execute(InstanceState& st, TRITONBACKEND_Request** requests, uint32_t count) {
  const uint64_t exec_start = now_ns();
  std::vector<Pending> pending(count);
  for (uint32_t i = 0; i < count; ++i) {
    Pending& p = pending[i];
    p.request = requests[i];
    if (TRITONSERVER_Error* err = TRITONBACKEND_ResponseNew(&p.response, p.request)) {
      p.error = BackendError{TRITONSERVER_ErrorCode(err), std::string("creating the response: ") + TRITONSERVER_ErrorMessage(err)};
      TRITONSERVER_ErrorDelete(err);
      p.response = nullptr;
      continue;
    }
    try {
      read_request(*st.model, p);
    } catch (...) {
      p.error = as_backend_error(std::current_exception());
    }
  }
  // Requests with the same shapes run as one batch, in arrival order.
  std::vector<std::vector<Pending*>> groups;
  for (Pending& p : pending) {
    if (p.error) continue;
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& grp) { return grp.front()->signature == p.signature; });
    if (g == groups.end()) groups.push_back({&p});
    else g->push_back(&p);
  }
  for (auto& group : groups) {
    try {
      run_group(st, group);
    } catch (...) {
      if (group.size() == 1) {
        group.front()->error = as_backend_error(std::current_exception());
        continue;
      }
      // One request may be what fails the batch: run each alone so that only it fails.
      for (Pending* p : group) {
        std::vector<Pending*> alone{p};
        try {
          // A response that got outputs before the failure is replaced by a fresh one.
          if (p->response != nullptr) TRITONBACKEND_ResponseDelete(p->response);
          p->response = nullptr;
          check(TRITONBACKEND_ResponseNew(&p->response, p->request), "creating the response");
          run_group(st, alone);
        } catch (...) {
          p->error = as_backend_error(std::current_exception());
        }
      }
    }
  }
  const uint64_t exec_end = now_ns();
  for (Pending& p : pending) {
    if (p.response != nullptr) {
      TRITONSERVER_Error* err = p.error ? make_error(p.error->code, p.error->message) : nullptr;
      if (TRITONSERVER_Error* send = TRITONBACKEND_ResponseSend(p.response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err)) {
        log(TRITONSERVER_LOG_ERROR, std::string("onyx backend: sending a response: ") + TRITONSERVER_ErrorMessage(send));
        TRITONSERVER_ErrorDelete(send);
      }
      if (err) TRITONSERVER_ErrorDelete(err);
    }
    const uint64_t cs = p.compute_start ? p.compute_start : exec_start, ce = p.compute_end ? p.compute_end : cs;
    if (TRITONSERVER_Error* err =
            TRITONBACKEND_ModelInstanceReportStatistics(st.instance, p.request, !p.error, exec_start, cs, ce, exec_end))
      TRITONSERVER_ErrorDelete(err);
    if (TRITONSERVER_Error* err = TRITONBACKEND_RequestRelease(p.request, TRITONSERVER_REQUEST_RELEASE_ALL))
      TRITONSERVER_ErrorDelete(err);
  }
}

Json model_config(TRITONBACKEND_Model* model) {
  TRITONSERVER_Message* msg = nullptr;
  check(TRITONBACKEND_ModelConfig(model, 1, &msg), "reading the model configuration");
  const char* text = nullptr;
  size_t size = 0;
  TRITONSERVER_Error* err = TRITONSERVER_MessageSerializeToJson(msg, &text, &size);
  Json j;
  if (err == nullptr) j = Json::parse(std::string_view(text, size));
  if (TRITONSERVER_Error* e = TRITONSERVER_MessageDelete(msg)) TRITONSERVER_ErrorDelete(e);
  check(err, "serialising the model configuration");
  return j;
}

}  // namespace
}  // namespace onyx::triton

using namespace onyx::triton;  // NOLINT

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  return guarded("onyx backend: ", [&] {
    uint32_t major = 0, minor = 0;
    check(TRITONBACKEND_ApiVersion(&major, &minor), "reading the backend API version");
    if (major != kTritonBackendApiMajor || minor < kTritonBackendApiMinor)
      fail(TRITONSERVER_ERROR_UNSUPPORTED, "the server's backend API is " + std::to_string(major) + "." + std::to_string(minor) +
                                               "; this backend needs " + std::to_string(kTritonBackendApiMajor) + "." +
                                               std::to_string(kTritonBackendApiMinor) + " or a later minor version");
    TRITONSERVER_Message* config = nullptr;
    check(TRITONBACKEND_BackendConfig(backend, &config), "reading the backend configuration");
    const char* text = nullptr;
    size_t size = 0;
    check(TRITONSERVER_MessageSerializeToJson(config, &text, &size), "serialising the backend configuration");
    const Json json = Json::parse(std::string_view(text, size));
    if (const Json* cmdline = json.find("cmdline"))
      if (const Json* v = cmdline->find("default-max-batch-size")) {
        try {
          g_default_max_batch_size = v->as_int();
        } catch (const std::exception& e) {
          fail(TRITONSERVER_ERROR_INVALID_ARG, std::string("backend setting default-max-batch-size: ") + e.what());
        }
      }
    log(TRITONSERVER_LOG_INFO, "onyx backend " + std::string(onyx::version()) + " (backend API " + std::to_string(major) +
                                   "." + std::to_string(minor) + ")");
  });
}

TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend*) { return nullptr; }

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  const char* cname = "";
  TRITONBACKEND_ModelName(model, &cname);
  const std::string name = cname ? cname : "";
  auto state = std::make_unique<ModelState>();
  TRITONSERVER_Error* err = guarded("onyx backend: model '" + name + "': ", [&] {
    state->name = name;
    check(TRITONBACKEND_ModelVersion(model, &state->version), "reading the model version");
    TRITONBACKEND_ArtifactType type = TRITONBACKEND_ARTIFACT_FILESYSTEM;
    const char* location = nullptr;
    check(TRITONBACKEND_ModelRepository(model, &type, &location), "reading the model location");
    Json config = model_config(model);
    std::string file = "model.onnx";
    if (const Json* f = config.find("default_model_filename"); f && !f->text().empty()) file = f->text();
    state->path = std::string(location) + "/" + std::to_string(state->version) + "/" + file;
    state->settings = settings_from(config);
    onyx::Session session = make_session(state->path, state->settings, -1);
    bool complete = false;
    check(TRITONBACKEND_ModelAutoCompleteConfig(model, &complete), "asking whether to complete the configuration");
    if (complete && auto_complete(config, session)) {
      const std::string text = config.dump();
      TRITONSERVER_Message* msg = nullptr;
      check(TRITONSERVER_MessageNewFromSerializedJson(&msg, text.data(), text.size()), "making the completed configuration");
      TRITONSERVER_Error* set = TRITONBACKEND_ModelSetConfig(model, 1, msg);
      if (TRITONSERVER_Error* e = TRITONSERVER_MessageDelete(msg)) TRITONSERVER_ErrorDelete(e);
      check(set, "setting the completed configuration");
      log(TRITONSERVER_LOG_INFO, "onyx backend: model '" + name + "': configuration completed from the model");
    }
    check_config(*state, config, session);
    state->spare = std::move(session);
    check(TRITONBACKEND_ModelSetState(model, state.get()), "storing the model state");
  });
  if (err == nullptr) state.release();
  return err;
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  void* state = nullptr;
  TRITONSERVER_Error* err = TRITONBACKEND_ModelState(model, &state);
  delete static_cast<ModelState*>(state);
  return err;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  const char* cname = "";
  TRITONBACKEND_ModelInstanceName(instance, &cname);
  const std::string name = cname ? cname : "";
  auto state = std::make_unique<InstanceState>();
  TRITONSERVER_Error* err = guarded("onyx backend: instance '" + name + "': ", [&] {
    state->name = name;
    state->instance = instance;
    TRITONBACKEND_Model* model = nullptr;
    check(TRITONBACKEND_ModelInstanceModel(instance, &model), "reading the instance's model");
    void* ms = nullptr;
    check(TRITONBACKEND_ModelState(model, &ms), "reading the model state");
    state->model = static_cast<ModelState*>(ms);
    TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
    check(TRITONBACKEND_ModelInstanceKind(instance, &kind), "reading the instance kind");
    int32_t device = 0;
    check(TRITONBACKEND_ModelInstanceDeviceId(instance, &device), "reading the instance device");
    std::string where = "KIND_CPU";
    if (kind == TRITONSERVER_INSTANCEGROUPKIND_GPU) {
      where = "KIND_GPU device " + std::to_string(device);
      state->session = make_session(state->model->path, state->model->settings, device);
    } else if (kind == TRITONSERVER_INSTANCEGROUPKIND_CPU || kind == TRITONSERVER_INSTANCEGROUPKIND_MODEL) {
      if (kind == TRITONSERVER_INSTANCEGROUPKIND_MODEL) where = "KIND_MODEL";
      {
        std::lock_guard<std::mutex> lock(state->model->spare_mutex);
        if (state->model->spare) {
          state->session = std::move(state->model->spare);
          state->model->spare.reset();
        }
      }
      if (!state->session) state->session = make_session(state->model->path, state->model->settings, -1);
    } else {
      fail(TRITONSERVER_ERROR_INVALID_ARG, "instance kind " + std::to_string(static_cast<int>(kind)) + " is not KIND_CPU or KIND_GPU");
    }
    log(TRITONSERVER_LOG_INFO, "onyx backend: model '" + state->model->name + "' version " +
                                   std::to_string(state->model->version) + " instance '" + name + "' (" + where +
                                   "): placement " + placement_report(*state->session));
    check(TRITONBACKEND_ModelInstanceSetState(instance, state.get()), "storing the instance state");
  });
  if (err == nullptr) state.release();
  return err;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  void* state = nullptr;
  TRITONSERVER_Error* err = TRITONBACKEND_ModelInstanceState(instance, &state);
  delete static_cast<InstanceState*>(state);
  return err;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests, uint32_t request_count) {
  void* state = nullptr;
  if (TRITONSERVER_Error* err = TRITONBACKEND_ModelInstanceState(instance, &state)) return err;
  // Every request gets a response and is released here, errors included, so the server is told
  // of no failure of the call itself.
  try {
    execute(*static_cast<InstanceState*>(state), requests, request_count);
  } catch (const std::exception& e) {
    log(TRITONSERVER_LOG_ERROR, std::string("onyx backend: ") + e.what());
  } catch (...) {
    log(TRITONSERVER_LOG_ERROR, "onyx backend: unknown exception");
  }
  return nullptr;
}

}  // extern "C"
