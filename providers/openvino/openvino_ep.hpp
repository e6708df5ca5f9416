// OpenVINO EP internals shared by its files.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <openvino/openvino.hpp>

#include "core/common.hpp"
#include "ep/factory.hpp"
#include "ep/provider.hpp"

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
Options parse_options(const OptionList& options);

/// The per-session EP.
std::unique_ptr<ExecutionProvider> create_openvino_ep(const EpCreateContext& ctx);

/// OpenVINO's element type for a dtype; ov::element::dynamic when OpenVINO has none.
ov::element::Type element_type(DType t);

/// For a support query or a cache key, constants of more than this many elements do not go into
/// the ONNX bytes: they are typed graph inputs there, which bind_zero_constants() replaces by constants
/// afterwards. (A region OpenVINO compiles gets its weights as initializers: OpenVINO 2026.4's
/// CPU plugin runs the BERT-shaped encoder at half speed when they are bound afterwards, though
/// its runtime graph is the same.)
constexpr int64_t kSmallConstant = 64;

/// A large constant of a cut-out model: its name there and its value in onyx's graph.
struct LargeConstant {
  std::string name;
  const Tensor* tensor;
};

/// Nodes of a graph to cut out: `inputs` become graph inputs and `outputs` graph outputs, with
/// the types `input_types` / `output_types` give (null or missing: the value's own); constant
/// inputs (initializers that are not graph inputs) become initializers.
struct SubgraphPart {
  std::vector<int> nodes;  // indices, in execution order
  std::vector<int> inputs;
  std::vector<const TypeInfo*> input_types;
  std::vector<int> outputs;
  std::vector<const TypeInfo*> output_types;
};

/// A self-contained ONNX model (serialized ModelProto) of `part`; its large constants are added to
/// `large`, or written as initializers when `large` is null.
std::string onnx_subgraph(const Graph& g, const SubgraphPart& part, std::vector<LargeConstant>* large);

/// One ONNX model of several parts that share nothing: part i's values (and node names) are
/// prefixed with batch_prefix(i).
std::string onnx_batch(const Graph& g, const std::vector<SubgraphPart>& parts, std::vector<LargeConstant>* large);
inline std::string batch_prefix(size_t i) { return "onyx_q" + std::to_string(i) + "/"; }

/// Replaces the Parameters of `model` that stand for `large` constants by Constants of zeros
/// (what a support query needs is their shapes, not their values).
void bind_zero_constants(ov::Model& model, const std::vector<LargeConstant>& large);

/// Whether OpenVINO takes node `info.node` on `device`: the node alone as an ONNX model, read by
/// OpenVINO's ONNX frontend and asked of the device through Core::query_model (claim.cpp). The
/// first question about a graph asks about all its nodes at once. With options.cache_dir, the
/// answers are kept there for later sessions.
bool claim_node(const ClaimInfo& info, const Options& options, Decline* why);

/// Compiles a region into one kernel running it as one OpenVINO compiled model (region.cpp).
std::unique_ptr<Kernel> compile_openvino_region(const RegionInfo& region, const Options& options, int session_threads);

/// Core::compile_model, its failure as onyx::Error naming `label`.
ov::CompiledModel compile_model(const std::shared_ptr<ov::Model>& model, const std::string& device, const ov::AnyMap& props,
                                const std::string& label);

/// The first line of an OpenVINO exception's message (they carry long traces).
std::string short_message(const std::exception& e);

}  // namespace onyx::openvino
