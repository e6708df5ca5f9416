// onyx: execution providers (EPs) — the user-facing side.
//
// An EP is a backend that claims the nodes of a model it can run. A session lists EPs in priority
// order; each node runs on the first EP that takes it, the built-in CPU EP takes the rest. Every
// EP of ort's table exists here so portable code compiles everywhere; an EP not built into this
// onyx says so through availability() and is skipped at registration (or fails it, with
// error_on_failure()).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace onyx {

class SessionBuilder;

namespace ep {

/// How far an EP gets on this machine. Each level implies the previous one.
struct Availability {
  bool built = false;     ///< compiled into this onyx (its module was built)
  bool loadable = false;  ///< its module and the libraries it needs load, and versions match
  bool usable = false;    ///< a device / context really opens
  std::string reason;     ///< why the first missing level is missing ("" when usable)
  std::string version;    ///< the EP's version (and its library's), once loadable
  std::string module;     ///< path of the loaded module ("" for EPs built into libonyx)
};

/// One option an EP publishes: key, type ("bool", "int", "float", "string", or "enum:a|b|c"),
/// default value and documentation.
struct OptionInfo {
  std::string key;
  std::string type;
  std::string default_value;
  std::string doc;
};

/// A configured EP ready to hand to SessionBuilder::with_execution_providers: its name, the
/// options set on it, and whether failing to register it is an error.
class ExecutionProviderDispatch {
 public:
  ExecutionProviderDispatch(std::string name, std::vector<std::pair<std::string, std::string>> options)
      : name_(std::move(name)), options_(std::move(options)) {}
  /// Make registration failure (not built, module missing, no device) an error at session
  /// creation instead of a silent skip. (A malformed option is an error either way.)
  ExecutionProviderDispatch& error_on_failure(bool on = true) & {
    error_on_failure_ = on;
    return *this;
  }
  ExecutionProviderDispatch&& error_on_failure(bool on = true) && {
    error_on_failure_ = on;
    return std::move(*this);
  }
  /// The default: skip the EP (recorded in Session::registration()) when it cannot register.
  ExecutionProviderDispatch&& fail_silently() && {
    error_on_failure_ = false;
    return std::move(*this);
  }
  const std::string& name() const { return name_; }
  const std::vector<std::pair<std::string, std::string>>& options() const { return options_; }
  bool fails_on_error() const { return error_on_failure_; }

 private:
  std::string name_;
  std::vector<std::pair<std::string, std::string>> options_;
  bool error_on_failure_ = false;
};

/// Common part of every EP spec.
class Spec {
 public:
  explicit Spec(std::string name) : name_(std::move(name)) {}
  /// Lower-case name as `onyx providers` prints it ("cpu", "onednn", "cuda", ...).
  const std::string& name() const { return name_; }
  /// Any option the EP publishes, by key (the escape hatch behind the typed methods). An unknown
  /// key or a value that does not parse makes session creation throw onyx::Error naming the EP,
  /// the key and what it accepts, with or without error_on_failure (checked once the EP's module
  /// is loaded; an EP that cannot load is skipped as usual).
  Spec& set(std::string key, std::string value);
  /// The configured EP, for SessionBuilder::with_execution_providers.
  ExecutionProviderDispatch build() const { return ExecutionProviderDispatch(name_, options_); }
  /// True when the EP is usable here: built, loadable and a device opens.
  bool is_available() const { return availability().usable; }
  /// Each level of availability with the reason for the first "no".
  Availability availability() const;
  /// The options the EP publishes (empty when it is not built).
  std::vector<OptionInfo> option_schema() const;
  /// Registers with `builder` now, as ort's register(): throws onyx::Error with the reason when
  /// the EP cannot be used (not built, module or library missing, no device, bad option).
  /// On success the EP is appended to the builder's list (with error_on_failure set).
  void register_with(SessionBuilder& builder) const;
  const std::vector<std::pair<std::string, std::string>>& options() const { return options_; }

 protected:
  std::vector<std::pair<std::string, std::string>> options_;

 private:
  std::string name_;
};

/// Base of the typed specs: set() returns the derived type so calls chain.
template <class Derived>
class SpecOf : public Spec {
 public:
  using Spec::Spec;
  Derived& set(std::string key, std::string value) {
    Spec::set(std::move(key), std::move(value));
    return static_cast<Derived&>(*this);
  }
};

/// The built-in CPU EP (always available; takes every node no other EP claims).
class CPU : public SpecOf<CPU> {
 public:
  CPU() : SpecOf("cpu") {}
  /// Run 2-d float convolutions (group 1 or depthwise) and pools channels-last (option
  /// prefer_nhwc, on by default): the optimizer gives them to the CPU EP in that layout and
  /// cancels the transposes between neighbours. Off: every node runs as the model wrote it.
  CPU& with_prefer_nhwc(bool on) { return set("prefer_nhwc", on ? "true" : "false"); }
  /// Run float16 and bfloat16 nodes as float32 ones (option half_in_float, on by default):
  /// weights converted once, Casts only where such a region meets the rest of the model. Off:
  /// they run as written, on reference loops.
  CPU& with_half_in_float(bool on) { return set("half_in_float", on ? "true" : "false"); }
};

/// oneDNN (Intel's deep learning library) on the CPU. Module libonyx_ep_onednn.so.
class OneDNN : public SpecOf<OneDNN> {
 public:
  OneDNN() : SpecOf("onednn") {}
  /// Threads oneDNN may use (0 = the session's intra-op thread count).
  OneDNN& with_threads(int n) { return set("threads", std::to_string(n)); }
  /// Minimum number of nodes in a region worth handing to oneDNN.
  OneDNN& with_min_region_nodes(int n) { return set("min_region_nodes", std::to_string(n)); }
};

/// XNNPACK (Google's NN operator library) on the CPU. Module libonyx_ep_xnnpack.so.
class XNNPACK : public SpecOf<XNNPACK> {
 public:
  XNNPACK() : SpecOf("xnnpack") {}
  /// Threads XNNPACK may use (0 = the session's intra-op thread count).
  XNNPACK& with_threads(int n) { return set("threads", std::to_string(n)); }
};

/// Vulkan compute (any Vulkan 1.1 device, including Mesa's lavapipe on the CPU).
class Vulkan : public SpecOf<Vulkan> {
 public:
  Vulkan() : SpecOf("vulkan") {}
  Vulkan& with_device_id(int id) { return set("device_id", std::to_string(id)); }
};

/// NVIDIA CUDA (cuBLAS, cuDNN and onyx's own kernels).
class CUDA : public SpecOf<CUDA> {
 public:
  CUDA() : SpecOf("cuda") {}
  CUDA& with_device_id(int id) { return set("device_id", std::to_string(id)); }
  /// Most bytes the EP's caching allocator may hold on the device (option gpu_mem_limit).
  CUDA& with_memory_limit(uint64_t bytes) { return set("gpu_mem_limit", std::to_string(bytes)); }
  /// "EXHAUSTIVE" (default), "HEURISTIC" or "DEFAULT" (option cudnn_conv_algo_search).
  CUDA& with_conv_algo_search(const std::string& mode) { return set("cudnn_conv_algo_search", mode); }
  /// Allow TF32 tensor-core math for float32 (option use_tf32, off by default).
  CUDA& with_tf32(bool on) { return set("use_tf32", on ? "true" : "false"); }
  /// Run 2-d convolution, pooling and batch normalisation channels-last (option prefer_nhwc, off
  /// by default): the optimizer hands those nodes over in NHWC and cancels the transposes between
  /// them (needs an optimization level above kDisabled).
  CUDA& with_prefer_nhwc(bool on) { return set("prefer_nhwc", on ? "true" : "false"); }
  /// Record a static-shape run into a CUDA graph and replay it (option enable_cuda_graph, off by
  /// default): for models whose every node runs on this EP.
  CUDA& with_cuda_graph(bool on) { return set("enable_cuda_graph", on ? "true" : "false"); }
};

/// Intel OpenVINO (its CPU plugin here; GPU and NPU where their plugins and devices are), from
/// PyPI's openvino wheel. Module libonyx_ep_openvino.so. Options as ORT's OpenVINO EP names them.
class OpenVINO : public SpecOf<OpenVINO> {
 public:
  OpenVINO() : SpecOf("openvino") {}
  /// "CPU" (default), "GPU", "GPU.1", "NPU", "AUTO", "HETERO:GPU,CPU", ... (option device_type).
  OpenVINO& with_device_type(const std::string& device) { return set("device_type", device); }
  /// "FP32" (default), "FP16", "BF16" or "ACCURACY" (option precision).
  OpenVINO& with_precision(const std::string& precision) { return set("precision", precision); }
  /// Threads of the CPU plugin (0 = the session's intra-op thread count; option num_of_threads).
  OpenVINO& with_num_threads(int n) { return set("num_of_threads", std::to_string(n)); }
  /// Parallel inference streams of the CPU plugin (option num_streams, default 1).
  OpenVINO& with_num_streams(int n) { return set("num_streams", std::to_string(n)); }
  /// Directory of OpenVINO's compiled-model cache (option cache_dir): a later session with the
  /// same regions imports them instead of compiling.
  OpenVINO& with_cache_dir(const std::string& dir) { return set("cache_dir", dir); }
};

/// WebGPU compute over wgpu-native (its Vulkan backend: GPUs, and Mesa's lavapipe on the CPU), from
/// PyPI's wgpu wheel. Module libonyx_ep_webgpu.so. Options as ORT's WebGPU EP names them.
class WebGPU : public SpecOf<WebGPU> {
 public:
  WebGPU() : SpecOf("webgpu") {}
  /// Adapter index (option device_id; -1, the default, picks the first non-CPU adapter).
  WebGPU& with_device_id(int id) { return set("device_id", std::to_string(id)); }
  /// "bucket" (default: freed device buffers are pooled by size and reused) or "disabled"
  /// (option storage_buffer_cache_mode).
  WebGPU& with_storage_buffer_cache_mode(const std::string& mode) { return set("storage_buffer_cache_mode", mode); }
  /// "basic" (default: errors checked at each submission) or "full" (checked after every node;
  /// option validation_mode).
  WebGPU& with_validation_mode(const std::string& mode) { return set("validation_mode", mode); }
};

// EPs of ort's table that this onyx does not implement: their specs exist so portable code
// compiles, and availability() says "not built into this onyx (CMake option ONYX_EP_<NAME>)".
#define ONYX_DECLARE_EP_SPEC(Type, lower)                 \
  class Type : public SpecOf<Type> {                      \
   public:                                                \
    Type() : SpecOf(lower) {}                             \
    Type& with_device_id(int id) { return set("device_id", std::to_string(id)); } \
  };
ONYX_DECLARE_EP_SPEC(TensorRT, "tensorrt")
ONYX_DECLARE_EP_SPEC(TensorRTRTX, "tensorrt_rtx")
ONYX_DECLARE_EP_SPEC(DirectML, "directml")
ONYX_DECLARE_EP_SPEC(CoreML, "coreml")
ONYX_DECLARE_EP_SPEC(ROCm, "rocm")
ONYX_DECLARE_EP_SPEC(QNN, "qnn")
ONYX_DECLARE_EP_SPEC(CANN, "cann")
ONYX_DECLARE_EP_SPEC(NNAPI, "nnapi")
ONYX_DECLARE_EP_SPEC(TVM, "tvm")
ONYX_DECLARE_EP_SPEC(ACL, "acl")
ONYX_DECLARE_EP_SPEC(ArmNN, "armnn")
ONYX_DECLARE_EP_SPEC(MIGraphX, "migraphx")
ONYX_DECLARE_EP_SPEC(VitisAI, "vitis_ai")
ONYX_DECLARE_EP_SPEC(RKNPU, "rknpu")
ONYX_DECLARE_EP_SPEC(Azure, "azure")
#undef ONYX_DECLARE_EP_SPEC

/// A spec by name ("cuda", "onednn", ...), for tools and configuration files. Throws onyx::Error
/// for a name no EP has.
Spec by_name(const std::string& name);

/// Everything onyx knows about one EP (for `onyx providers`).
struct ProviderInfo {
  std::string name;
  std::string cmake_option;  ///< ONYX_EP_<NAME>
  Availability availability;
  std::vector<OptionInfo> options;
};
/// Every EP of the table, in a fixed order (cpu first).
std::vector<ProviderInfo> list_providers();

}  // namespace ep

/// Environment-wide settings. Build with onyx::init(), finish with commit().
class EnvironmentBuilder {
 public:
  /// Default EPs appended (in this order) after every new session's own EPs, unless the session
  /// opts out with SessionBuilder::with_no_environment_execution_providers().
  EnvironmentBuilder& with_execution_providers(std::vector<ep::ExecutionProviderDispatch> eps);
  /// Makes these settings the environment's. Sessions created before keep what they captured.
  void commit();

 private:
  std::vector<ep::ExecutionProviderDispatch> eps_;
};

/// Starts configuring the process-wide environment.
EnvironmentBuilder init();

}  // namespace onyx
