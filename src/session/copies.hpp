// Copy insertion: after partitioning, every edge whose producer and consumer live in different
// memories gets an explicit onyx::Copy node (DESIGN.md §2.5), for any number of memories.
#pragma once

#include <memory>
#include <vector>

#include "onyx/session.hpp"
#include "session/partition.hpp"

namespace onyx {

/// Whether `n` reads only its input's dims and dtype, never the elements (Shape, Size): on a
/// host-memory EP no copy is inserted for its input, and it may see a tensor in device memory.
bool reads_metadata_only(const Node& n);

/// Inserts the copies into `g` (updating `part` for the new nodes: the copy runs on the device
/// side's EP) and returns them for the placement report. Graph inputs, initializers and graph
/// outputs live in host memory ("cpu"); a device-to-device edge between two different memories
/// goes through host memory (two copies).
std::vector<Placement::CopyInfo> insert_copies(Graph& g, PartitionResult& part,
                                               const std::vector<std::unique_ptr<ExecutionProvider>>& eps);

}  // namespace onyx
