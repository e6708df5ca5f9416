// OpenVINO EP internals shared by its files. The EP is a plugin of onyx's C ABI
// (onyx/ep_c_api.h): it sees onyx only through the host's table (host.hpp).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <openvino/openvino.hpp>

#include "host.hpp"

namespace onyx::openvino {

/// The process's OpenVINO core (plugins load once; creating a core costs tens of milliseconds).
ov::Core& core();

/// The EP's options, parsed and checked (ep.cpp).
struct Options {
  std::string device_type = "CPU";  // CPU, GPU, NPU, AUTO, HETERO:..., MULTI:...
  std::string precision = "FP32";   // FP32, FP16, BF16, ACCURACY
  int num_threads = 0;              // 0: the session's intra-op threads
  int num_streams = 1;
  std::string cache_dir;            // compiled-model cache ("" = none)
  size_t min_region_nodes = 1;
  /// The compile properties these options mean for OpenVINO.
  ov::AnyMap compile_properties(int session_threads) const;
};
/// The options of a session (keys and values as create() gets them); throws Failure.
Options parse_options(const std::vector<std::pair<std::string, std::string>>& options);

/// The per-session instance behind OnyxEpInstance::state.
struct Instance {
  Options options;
  int session_threads = 1;
  ov::AnyMap props;  // options.compile_properties(session_threads)
};

/// OnyxEpPluginApi::create (ep.cpp).
OnyxEpStatus* create_instance(const OnyxEpCreateInfo* info, OnyxEpInstance* out);

/// OpenVINO's element type for an element type of onyx (OnyxEpDType); ov::element::dynamic when
/// OpenVINO has none.
ov::element::Type element_type(int32_t dtype);

/// For a support query or a cache key, constants of more than this many elements do not go into
/// the ONNX bytes: they are typed graph inputs there (export_onnx's deferred constants), which
/// bind_zero_constants() replaces by constants afterwards. (A region OpenVINO compiles gets its
/// weights as initializers: OpenVINO 2026.4's CPU plugin runs the BERT-shaped encoder at half
/// speed when they are bound afterwards, though its runtime graph is the same.)
constexpr int64_t kSmallConstant = 64;

/// The names the parts of a batched support query carry.
inline std::string batch_prefix(size_t i) { return "onyx_q" + std::to_string(i) + "/"; }

/// Replaces the Parameters of `model` that stand for the deferred constants of `exported` (values
/// of `graph`) by Constants of zeros: what a support query needs is their shapes, not their values.
void bind_zero_constants(ov::Model& model, const OnnxModel& exported, const OnyxEpGraph* graph);

/// Whether OpenVINO takes `node` of `graph` on the session's device: the node alone as an ONNX
/// model, read by OpenVINO's ONNX frontend and asked of the device through Core::query_model
/// (claim.cpp). The first question about a graph asks about all its nodes at once. With
/// options.cache_dir, the answers are kept there for later sessions. Fills `out`; throws Failure.
void claim_node(const OnyxEpGraph* graph, const OnyxEpNode* node, const Options& options, OnyxEpClaim* out);

/// A group compiled into one OpenVINO compiled model (region.cpp).
class Region;
Region* compile_region(const OnyxEpGraph* graph, const OnyxEpGroup& group, const Instance& inst);
void run_region(const Region& region, OnyxEpKernelContext* ctx);
void release_region(Region* region);

/// Core::compile_model, its failure as a Failure naming `label`.
ov::CompiledModel compile_model(const std::shared_ptr<ov::Model>& model, const std::string& device, const ov::AnyMap& props,
                                const std::string& label);

/// The ONNX model `bytes` as OpenVINO's ONNX frontend converts it (Core::read_model without a
/// copy of the bytes); throws what the frontend throws.
std::shared_ptr<ov::Model> read_onnx(std::string_view bytes);

/// The first line of an OpenVINO exception's message (they carry long traces).
std::string short_message(const std::exception& e);

}  // namespace onyx::openvino
