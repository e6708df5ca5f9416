// Shared definitions of the control-flow and sequence families: merging value types (If branches,
// loop-carried values, sequence elements).
#pragma once

#include "ir/graph.hpp"
#include "ir/symbols.hpp"

#include <vector>

namespace onyx {

class InferContext;

/// The most specific type covering both `a` and `b`: equal dims are kept, differing ones become
/// fresh unknown dims, differing ranks give an unranked tensor. An unknown type (Kind::kUnknown)
/// gives way to the other one. Returns false (leaving `out` unspecified) when the two cannot
/// describe the same value: different kinds, or different element types.
bool merge_types(const TypeInfo& a, const TypeInfo& b, SymbolTable& symbols, TypeInfo& out);

/// Throws (naming the node, the body input and both types) when a body input's declared type
/// conflicts with the type the node gives it: another element type, rank, or concrete dim. The
/// declared type is what the body is inferred with, so a conflict would give wrong shapes.
void check_subgraph_inputs(InferContext& ctx, const Graph& body, const std::vector<TypeInfo>& given);

/// The element type of a sequence or optional type (an unranked tensor of its dtype when the
/// element is not described).
TypeInfo element_type(const TypeInfo& t);

}  // namespace onyx
