// Partitioning a graph over the session's EPs (DESIGN.md §2.4): EPs in priority order claim the
// nodes still unassigned; a compiling EP's nodes are grouped into convex regions; small regions
// are handed back; the CPU EP (last) takes the rest.
#pragma once

#include <memory>
#include <vector>

#include "ep/provider.hpp"
#include "onyx/session.hpp"

namespace onyx {

struct PartitionResult {
  std::vector<int> node_ep;                                // per node: index into eps, -1 if nobody took it
  std::vector<std::vector<Placement::Decline>> declines;   // per node: reasons of EPs before the taker
  std::vector<int> region_of;                              // per node: region index, or -1
  struct Region {
    int ep;
    std::vector<int> nodes;  // in graph order
  };
  std::vector<Region> regions;
};

/// Partitions `g` and reorders its nodes (keeping a topological order) so that every region's
/// nodes are contiguous. Indices in the result refer to the reordered graph.
PartitionResult partition_graph(Graph& g, const std::vector<std::unique_ptr<ExecutionProvider>>& eps);

}  // namespace onyx
