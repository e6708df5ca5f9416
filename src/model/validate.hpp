// Load-time checks of nodes against the op signatures of the standard schemas (op_signatures.hpp):
// input and output counts, required inputs and outputs not given as "", attribute names and
// types, required attributes. What ONNX Runtime refuses with INVALID_GRAPH, onyx refuses at load
// with an Error of the same code naming the node; nothing stricter.
#pragma once

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

}  // namespace onyx
