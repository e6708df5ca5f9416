// The public description of a graph input or output (IoInfo) from the IR: shared by sessions and
// by tools that read a model with the loader alone (`onyx info`).
#pragma once

#include "ir/graph.hpp"
#include "ir/symbols.hpp"
#include "onyx/session.hpp"

namespace onyx {

/// `slot` described with `type` (its declared or inferred type); symbolic dims named from `symbols`.
IoInfo io_info(const ValueSlot& slot, const TypeInfo& type, const SymbolTable& symbols);

}  // namespace onyx
