// Shared definitions of Einsum: the equation parser and the resolution of labels to sizes, used
// by shape inference and by the CPU kernel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.hpp"
#include "onyx/shape.hpp"

namespace onyx {

/// One term of an equation: its letters (as char codes) and where its ellipsis sits.
struct EinsumTerm {
  std::vector<int> labels;   // letters in order, ellipsis excluded
  int ellipsis = -1;         // index in `labels` before which "..." stands, or -1
  bool has_ellipsis() const { return ellipsis >= 0; }
};

struct EinsumEquation {
  std::vector<EinsumTerm> inputs;
  EinsumTerm output;         // the explicit output, or the implicit one (ellipsis, then letters
                             // that occur once, in ASCII order)
  bool explicit_output = false;
  bool any_ellipsis = false;
};

/// Label ids: letters are their char codes (< 128); broadcast (ellipsis) dim k is 128 + k.
constexpr int kEinsumEllipsisBase = 128;

/// Parses the node's `equation` attribute for `num_inputs` operands; throws (kInvalidGraph,
/// naming the node and the position) on a malformed equation.
EinsumEquation parse_einsum(const Node& node, size_t num_inputs);

/// Labels resolved against input shapes.
struct EinsumDims {
  int ell_rank = 0;                    // broadcast dims covered by "..."
  std::vector<std::vector<int>> axes;  // per input, per axis: label id
  std::vector<int> out;                // per output axis: label id
  std::vector<int64_t> size;           // per label id (kEinsumEllipsisBase + ell_rank entries)
  std::vector<uint8_t> used;           // per label id: appears in some input
  Shape out_shape() const {
    Shape s;
    for (int l : out) s.push_back(size[l]);
    return s;
  }
};

/// Resolves the equation against input shapes (dims may be symbolic while loading). A label's
/// dims must agree across its occurrences, up to broadcasting of size-1 dims; ellipsis dims
/// broadcast numpy-style (right-aligned). Throws naming the label, the inputs and their dims.
EinsumDims resolve_einsum(const Node& node, const EinsumEquation& eq, const std::vector<Shape>& shapes);

}  // namespace onyx
