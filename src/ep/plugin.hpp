// EPs from plugins built against the C ABI of include/onyx/ep_c_api.h: the host side of the ABI
// (the objects behind its opaque handles, plugin_host.cpp) and the adapter that makes a plugin's
// tables an EpFactory and ExecutionProvider (plugin.cpp).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ep/kernel.hpp"
#include "ops/schema.hpp"
#include "onyx/ep_c_api.h"

struct OnyxEpStatus {
  OnyxEpErrorCode code = ONYX_EP_FAILURE;
  std::string message;
};

/// A node as a plugin sees it: a node of a graph, or (in a claim) a form the optimizer considers,
/// with the value types the question gives. Attribute lists of strings are kept here as C arrays.
struct OnyxEpNode {
  const onyx::Node* node = nullptr;
  const onyx::Graph* graph = nullptr;
  const std::vector<const onyx::TypeInfo*>* input_types = nullptr;  // null: the graph's
  const std::vector<const onyx::TypeInfo*>* output_types = nullptr;
  mutable std::mutex mu;
  mutable std::map<std::string, std::vector<const char*>> string_lists;
};

/// A read-only view of a graph. Node handles are made when first asked for.
struct OnyxEpGraph {
  explicit OnyxEpGraph(const onyx::Graph& g) : graph(&g) {}
  const onyx::Graph* graph;
  mutable std::mutex mu;
  mutable std::vector<std::unique_ptr<OnyxEpNode>> nodes;
};

/// A custom op's type inference (OnyxEpCustomOp::infer): the node, with the input types being
/// inferred.
struct OnyxEpInferContext {
  onyx::InferContext* ctx = nullptr;
  OnyxEpNode node;
  std::vector<const onyx::TypeInfo*> input_types;
};

/// The kernel context a plugin's compute function gets.
struct OnyxEpKernelContext {
  onyx::KernelContext* ctx = nullptr;
  void* run_state = nullptr;  // what the plugin's run_begin() returned
  int memory = 0;             // the EP's memory id (0: host)
  onyx::DeviceAllocator* allocator = nullptr;
  size_t num_values = 0;      // slots of the frame (values of the kernel's graph)
};

namespace onyx {

class EpFactory;

/// The host's function table (one per process).
const OnyxEpHostApi* plugin_host_api();
/// Sets the table's export_onnx functions (plugin_onnx.cpp).
void fill_export_functions(OnyxEpHostApi* api);

/// Fills a C tensor description from a type (graph view); dims point into `t`.
void describe_type(const TypeInfo* t, OnyxEpTensor* out);

/// Turns a plugin's status into an onyx::Error ("<ep>: <what>: <message>") and frees it; no-op
/// for null.
void check_plugin_status(OnyxEpStatus* s, const std::string& ep, const std::string& what);

/// Makes the factory of a plugin library whose entry point is `init` (the library is already
/// open, and stays so). Null with the reason in *error when the plugin fails to initialise or
/// hands back a table onyx cannot use (wrong version, wrong name, missing functions).
/// `path`: the library's (for messages naming it).
const EpFactory* load_ep_plugin(const std::string& name, const std::string& path, OnyxEpPluginInitFn init, std::string* error,
                                std::string* version);

}  // namespace onyx
