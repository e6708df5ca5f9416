// Graph rewriting helpers for optimizer passes: use counts, rewiring, node removal.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.hpp"

namespace onyx {

/// Per value: how many node inputs (explicit or implicit) read it, and whether it is a graph output.
struct UseInfo {
  std::vector<int> uses;          // per value id
  std::vector<char> is_output;    // per value id
  std::vector<std::vector<int>> consumers;  // per value id: node indices (repeats allowed)
};
UseInfo compute_uses(const Graph& g);

/// Replaces every read of value `from` by value `to` (node inputs and implicit inputs; not graph
/// outputs). Subgraphs that read `from` by name through outer scope are not rewritten, so callers
/// must not rewire values that subgraphs read (check UseInfo: implicit uses count as consumers).
void replace_uses(Graph& g, int from, int to);

/// `base`, or `base_1`, `base_2`, ... : the first that names no value of `g` yet.
std::string unused_value_name(const Graph& g, const std::string& base);

/// An ai.onnx Transpose node (opset 13) of value `in` into value `out` with `perm`.
Node transpose_node(std::string name, int in, int out, std::vector<int64_t> perm);

/// An ai.onnx Cast node (opset 13) of value `in` into value `out`, to element type `to`.
Node cast_node(std::string name, int in, int out, DType to);

/// Sets every value's producer index from the node list (after nodes were inserted or reordered).
void recompute_producers(Graph& g);

/// Removes the nodes marked in `dead` and recomputes producer indices. Node order is kept, so a
/// topologically sorted graph stays sorted.
void remove_nodes(Graph& g, const std::vector<char>& dead);

}  // namespace onyx
