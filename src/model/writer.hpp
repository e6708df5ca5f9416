// Writing a model (as onyx holds it: after the optimizer, when a session has run it) as an ONNX
// ModelProto.
#pragma once

#include <string>

#include "ir/graph.hpp"
#include "ir/symbols.hpp"

namespace onyx {

/// The serialized ModelProto of `model` with `graph` as its main graph: nodes in order (the
/// optimizer's fused ops in domain "onyx", channels-last forms in "onyx.nhwc", both imported at
/// version 1), initializers inline, the types onyx knows of inputs, outputs and intermediates
/// (symbolic dims by name), subgraphs recursively. Throws onyx::Error kInvalidArgument when the
/// result would pass protobuf's 2 GiB limit.
std::string encode_model(const Model& model, const Graph& graph, const SymbolTable& symbols);

/// encode_model written to `path` (kIo when it cannot be written).
void save_model(const std::string& path, const Model& model, const Graph& graph, const SymbolTable& symbols);

}  // namespace onyx
