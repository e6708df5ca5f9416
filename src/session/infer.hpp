// Graph-level type, shape and value propagation, shared by session preparation (symbolic shapes)
// and plan building (concrete shapes, with folding of small constant computations).
#pragma once

#include <functional>
#include <vector>

#include "ir/graph.hpp"
#include "ir/symbols.hpp"
#include "ops/schema.hpp"

namespace onyx {

/// Per value of a graph: its type and, when known, its value.
struct GraphFacts {
  std::vector<TypeInfo> types;
  std::vector<Value> values;
  explicit GraphFacts(size_t n = 0) : types(n), values(n) {}
};

/// Evaluates node `index` of `g` whose input values are all known, writing its outputs into
/// `facts.values`; returns false to leave the node for run time.
using FoldFn = std::function<bool(const Graph& g, size_t index, GraphFacts& facts)>;

struct InferOptions {
  const FoldFn* fold = nullptr;     // optional constant folding
  bool write_back = false;          // store inferred types into the graph's value slots (session prep)
  bool check_types = false;         // check input element types against the schemas (check_input_types
                                    // of model/validate.hpp), subgraphs too: the graph as loaded only
};

/// Propagates types (and known values) through every node of `g`, in order. `facts` must hold
/// the types of g's inputs, initializers and outer values on entry. Throws onyx::Error naming the
/// node on a type error, an unknown op, or an op not defined at the model's opset (and, with
/// opts.check_types, on input element types the node's schema does not allow).
void infer_graph(const Graph& g, GraphFacts& facts, SymbolTable& symbols, const InferOptions& opts);

/// The type of a concrete value (tensor shape concrete; sequences of unranked tensors).
TypeInfo type_of_value(const Value& v);

/// Facts for a graph at entry: initializer types and values, declared input types, outer values
/// taken from `outer` (facts of the parent graph) when given.
GraphFacts entry_facts(const Graph& g, const GraphFacts* outer, bool initializers_of_inputs_known);

}  // namespace onyx
