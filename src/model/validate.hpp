// Load-time checks of nodes against the op signatures of the standard schemas (op_signatures.hpp):
// input and output counts, required inputs and outputs not given as "", attribute names and
// types, required attributes. What ONNX Runtime refuses with INVALID_GRAPH, onyx refuses at load
// with an Error of the same code naming the node; nothing stricter.
#pragma once

#include <span>
#include <string_view>

#include "ir/graph.hpp"

namespace onyx {

/// Checks the nodes of `g` (not its subgraphs: the loader checks each graph it builds). Nodes of
/// domains without signatures (onyx's own, custom domains, com.microsoft ops onyx does not
/// implement) and of ops or versions the table lacks are left to the session, which refuses
/// what it cannot run. `where` prefixes messages ("model.onnx: graph 'main'").
void validate_nodes(const Graph& g, std::string_view where);

/// The same check of one node; `index` is its position in the graph (named in messages when the
/// node has no name).
void validate_node(const Node& n, size_t index, std::string_view where);

/// Checks the element types of a node's inputs against its schema's type constraints, as ONNX
/// Runtime does at load: an input's element type must be one its type string allows, and the
/// inputs bound to the same type variable (e.g. 'T' of Add's A and B) must share it (a variadic
/// formal that is not homogeneous, as control flow's, binds nothing). `in_types[i]` is input i's
/// type, nullptr when unknown or omitted. Unknown element types, values that are not tensors,
/// type strings that allow sequences, optionals or maps, and nodes without a signature (see
/// validate_node) are not checked; outputs are not either (ONNX Runtime checks inferred outputs
/// only against declared types). Session preparation calls it on the nodes as loaded, before the
/// optimizer rewrites them (session/infer.cpp). Throws Error kInvalidGraph naming the node.
void check_input_types(const Node& n, std::span<const TypeInfo* const> in_types);

}  // namespace onyx
