#include "session/infer.hpp"

#include "ep/custom_ops.hpp"
#include "model/validate.hpp"
#include "ops/custom.hpp"

namespace onyx {

TypeInfo type_of_value(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kTensor: return TypeInfo::tensor(v.tensor().dtype(), v.tensor().shape());
    case Value::Kind::kSequence:
      if (v.sequence_of_maps()) return TypeInfo::sequence_of(TypeInfo::map_of(v.map_key_dtype(), TypeInfo::tensor(v.elem_dtype())));
      return TypeInfo::sequence_of(TypeInfo::tensor(v.elem_dtype()));
    case Value::Kind::kMap: return TypeInfo::map_of(v.map_key_dtype(), TypeInfo::tensor(v.elem_dtype()));
    case Value::Kind::kOptional:
      if (v.has_element()) return TypeInfo::optional_of(type_of_value(v.element()));
      return TypeInfo::optional_of(v.optional_of_sequence() ? TypeInfo::sequence_of(TypeInfo::tensor(v.elem_dtype()))
                                                            : TypeInfo::tensor(v.elem_dtype()));
    default: return TypeInfo();
  }
}

GraphFacts entry_facts(const Graph& g, const GraphFacts* outer, bool initializers_of_inputs_known) {
  GraphFacts f(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    const ValueSlot& s = g.values[i];
    f.types[i] = s.type;
    if (s.has_initializer) {
      f.types[i] = TypeInfo::tensor(s.initializer.dtype(), s.initializer.shape());
      if (!s.is_graph_input || initializers_of_inputs_known) f.values[i] = Value(s.initializer);
    }
    if (s.is_outer && outer && g.parent) {
      const int pid = g.parent->find(s.name);
      if (pid >= 0 && static_cast<size_t>(pid) < outer->types.size()) {
        f.types[i] = outer->types[pid];
        f.values[i] = outer->values[pid];
      }
    }
  }
  return f;
}

namespace {

/// A subgraph input's type: the caller's, refined by what the body declares. Concrete dims of
/// the caller win over symbols of the declaration; two different concrete dims are an error.
TypeInfo merge_declared(const TypeInfo& declared, const TypeInfo& caller, const Graph& sub, size_t k) {
  if (declared.kind == TypeInfo::Kind::kUnknown || declared.elem_dtype() == DType::kUndefined) return caller;
  if (caller.kind == TypeInfo::Kind::kUnknown) return declared;
  if (!declared.is_tensor() || !caller.is_tensor()) return caller;
  if (!declared.has_shape) return caller;
  if (!caller.has_shape) return declared;
  if (declared.shape.size() != caller.shape.size())
    fail(ErrorCode::kInvalidGraph, "subgraph '", sub.name, "' input ", k, " ('", sub.values[sub.inputs[k]].name,
         "') is declared ", declared.to_string(), " but receives ", caller.to_string());
  TypeInfo t = caller;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    const int64_t a = declared.shape[d], b = caller.shape[d];
    if (a >= 0 && b >= 0 && a != b)
      fail(ErrorCode::kInvalidGraph, "subgraph '", sub.name, "' input ", k, " ('", sub.values[sub.inputs[k]].name,
           "') is declared ", declared.to_string(), " but receives ", caller.to_string());
    t.shape[d] = b >= 0 ? b : a;
  }
  return t;
}

/// A node input whose known dims multiply past 2^62 elements: refused before any inference
/// function multiplies them (a declared dim of 2^63 - 1 must be an error, not an overflow).
void check_input_sizes(const Node& node, const std::vector<const TypeInfo*>& in_types) {
  for (size_t i = 0; i < in_types.size(); ++i) {
    const TypeInfo* t = in_types[i];
    if (!t || !t->is_tensor() || !t->has_shape) continue;
    __int128 n = 1;
    for (int64_t d : t->shape) {
      if (d < 0) continue;  // symbolic
      n *= d;
      if (n > (__int128(1) << 62))
        fail(ErrorCode::kInvalidGraph, node.label(), ": input ", i, " has shape ", t->shape.to_string(),
             ", more elements than any tensor can hold");
      if (n == 0) break;
    }
  }
}

}  // namespace

void infer_graph(const Graph& g, GraphFacts& facts, SymbolTable& symbols, const InferOptions& opts) {
  const OpRegistry& registry = OpRegistry::global();
  const SubgraphInferFn subgraph_fn = [&](const Graph& sub, const std::vector<TypeInfo>& in_types) {
    GraphFacts sf = entry_facts(sub, &facts, true);
    for (size_t k = 0; k < sub.inputs.size() && k < in_types.size(); ++k)
      sf.types[sub.inputs[k]] = merge_declared(sf.types[sub.inputs[k]], in_types[k], sub, k);
    InferOptions so = opts;
    infer_graph(sub, sf, symbols, so);
    std::vector<TypeInfo> outs;
    for (int o : sub.outputs) outs.push_back(sf.types[o]);
    return outs;
  };
  std::vector<const TypeInfo*> in_types;
  std::vector<const Value*> in_values;
  std::vector<TypeInfo> out_types;
  std::vector<Value> out_values;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& node = g.nodes[ni];
    const OpSchema* schema = registry.find(node.domain, node.op_type);
    if (!schema) schema = find_custom_schema(node.domain, node.op_type);
    if (!schema)
      fail(ErrorCode::kNotImplemented, node.label(), ": onyx does not know the operator ",
           node.domain.empty() ? "ai.onnx" : node.domain, "::", node.op_type, unknown_op_hint(node.domain, node.op_type));
    if (schema->since(node.opset) == 0)
      fail(ErrorCode::kInvalidGraph, node.label(), ": ", node.op_type, " does not exist at opset ", node.opset,
           " (it was introduced in opset ", schema->versions.front(), ")");
    in_types.assign(node.inputs.size(), nullptr);
    in_values.assign(node.inputs.size(), nullptr);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int v = node.inputs[i];
      if (v < 0) continue;
      if (facts.types[v].kind != TypeInfo::Kind::kUnknown) in_types[i] = &facts.types[v];
      if (!facts.values[v].is_none()) in_values[i] = &facts.values[v];
      if (!in_types[i] && in_values[i]) in_types[i] = &facts.types[v];
    }
    if (opts.check_types) check_input_types(node, in_types);  // before infer: kernels trust these types
    check_input_sizes(node, in_types);
    out_types.assign(node.outputs.size(), TypeInfo());
    out_values.assign(node.outputs.size(), Value());
    InferContext ctx(node, in_types, in_values, out_types, out_values, symbols, &subgraph_fn);
    schema->infer(ctx);
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const int v = node.outputs[o];
      if (v < 0) continue;
      facts.types[v] = std::move(out_types[o]);
      facts.values[v] = std::move(out_values[o]);
    }
    if (opts.fold && *opts.fold) {
      bool all_known = true, any_output_unknown = false;
      for (int v : node.inputs)
        if (v >= 0 && facts.values[v].is_none()) all_known = false;
      for (int v : node.implicit_inputs)
        if (facts.values[v].is_none()) all_known = false;
      for (int v : node.outputs)
        if (v >= 0 && facts.values[v].is_none()) any_output_unknown = true;
      if (all_known && any_output_unknown && (*opts.fold)(g, ni, facts)) {
        for (int v : node.outputs)
          if (v >= 0 && !facts.values[v].is_none()) facts.types[v] = type_of_value(facts.values[v]);
      }
    }
  }
  if (opts.write_back) {
    Graph& mg = const_cast<Graph&>(g);
    for (size_t i = 0; i < g.values.size(); ++i) {
      if (facts.types[i].kind == TypeInfo::Kind::kUnknown) continue;
      mg.values[i].type = facts.types[i];
    }
  }
}

}  // namespace onyx
