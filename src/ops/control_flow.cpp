// Control-flow family schemas: If, Loop, Scan. Their bodies are inferred as subgraphs with the
// types the node feeds them; outputs whose size depends on data (scan outputs of a Loop, If
// outputs whose branches disagree) get unknown dims, so the node and its users run dynamically.
#include "ops/control_flow.hpp"

#include <algorithm>

#include "ops/schema.hpp"

namespace onyx {

bool merge_types(const TypeInfo& a, const TypeInfo& b, SymbolTable& symbols, TypeInfo& out) {
  using K = TypeInfo::Kind;
  if (a.kind == K::kUnknown) {
    out = b;
    return true;
  }
  if (b.kind == K::kUnknown) {
    out = a;
    return true;
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::kTensor: {
      if (a.dtype != DType::kUndefined && b.dtype != DType::kUndefined && a.dtype != b.dtype) return false;
      const DType dt = a.dtype != DType::kUndefined ? a.dtype : b.dtype;
      if (!a.has_shape || !b.has_shape || a.shape.size() != b.shape.size()) {
        out = TypeInfo::tensor(dt);
        return true;
      }
      Shape s;
      for (size_t k = 0; k < a.shape.size(); ++k) s.push_back(a.shape[k] == b.shape[k] ? a.shape[k] : symbols.fresh());
      out = TypeInfo::tensor(dt, std::move(s));
      return true;
    }
    case K::kSequence:
    case K::kOptional: {
      const TypeInfo ea = a.elem ? *a.elem : TypeInfo();
      const TypeInfo eb = b.elem ? *b.elem : TypeInfo();
      TypeInfo e;
      if (!merge_types(ea, eb, symbols, e)) return false;
      out = a.kind == K::kSequence ? TypeInfo::sequence_of(std::move(e)) : TypeInfo::optional_of(std::move(e));
      return true;
    }
    default: out = a; return true;
  }
}

namespace {
bool conflicting(const TypeInfo& declared, const TypeInfo& given) {
  if (declared.kind == TypeInfo::Kind::kUnknown || given.kind == TypeInfo::Kind::kUnknown) return false;
  if (declared.kind != given.kind) return !(declared.kind == TypeInfo::Kind::kOptional || given.kind == TypeInfo::Kind::kOptional);
  if (declared.kind != TypeInfo::Kind::kTensor)
    return declared.elem && given.elem && conflicting(*declared.elem, *given.elem);
  if (declared.dtype != DType::kUndefined && given.dtype != DType::kUndefined && declared.dtype != given.dtype) return true;
  if (!declared.has_shape || !given.has_shape) return false;
  if (declared.shape.size() != given.shape.size()) return true;
  for (size_t k = 0; k < declared.shape.size(); ++k)
    if (declared.shape[k] >= 0 && given.shape[k] >= 0 && declared.shape[k] != given.shape[k]) return true;
  return false;
}
}  // namespace

void check_subgraph_inputs(InferContext& ctx, const Graph& body, const std::vector<TypeInfo>& given) {
  for (size_t k = 0; k < body.inputs.size() && k < given.size(); ++k) {
    const ValueSlot& s = body.values[body.inputs[k]];
    // Declarations that say little (no shape, no element type) give way to the given type when
    // the body is inferred (session/infer.cpp), so they cannot conflict.
    const TypeInfo& d = s.type;
    if ((d.is_tensor() && !d.has_shape) || d.elem_dtype() == DType::kUndefined) continue;
    if (conflicting(d, given[k]))
      ctx.fail_node("body input '", s.name, "' is declared ", s.type.to_string(), " but receives ", given[k].to_string());
  }
}

TypeInfo element_type(const TypeInfo& t) {
  if (t.elem) return *t.elem;
  if (t.kind == TypeInfo::Kind::kSequence || t.kind == TypeInfo::Kind::kOptional) return TypeInfo::tensor(t.elem_dtype());
  return TypeInfo();
}

namespace {

bool same_type(const TypeInfo& a, const TypeInfo& b) {
  if (a.kind != b.kind || a.dtype != b.dtype || a.has_shape != b.has_shape || !(a.shape == b.shape)) return false;
  if (!a.elem || !b.elem) return !a.elem && !b.elem;
  return same_type(*a.elem, *b.elem);
}

const Graph& graph_attr(InferContext& ctx, const char* name) {
  const Graph* g = ctx.node().attr_graph(name);
  if (!g) ctx.fail_node("the graph attribute '", name, "' is missing");
  return *g;
}

std::string value_name(const Graph& g, int v) { return "'" + g.values[v].name + "'"; }

/// Input i, when given, must be a (one-element) tensor of type `dt`.
void check_scalar_input(InferContext& ctx, size_t i, DType dt, const char* what) {
  if (!ctx.has_input(i)) return;
  const TypeInfo& t = ctx.input_type(i);
  if (t.kind != TypeInfo::Kind::kTensor && t.kind != TypeInfo::Kind::kUnknown)
    ctx.fail_node(what, " must be a tensor, got ", t.to_string());
  if (t.dtype != DType::kUndefined && t.dtype != dt)
    ctx.fail_node(what, " must be ", dtype_name(dt), ", got ", dtype_name(t.dtype));
  if (t.has_shape && t.shape.is_concrete() && t.shape.numel() != 1)
    ctx.fail_node(what, " must hold exactly one element, got shape ", t.shape.to_string());
}

/// Types of loop-carried values (Loop) or state variables (Scan) after the loop: the body's output
/// types where they agree with the values going in, unknown dims where they differ. Throws when
/// the body changes a tensor's element type.
std::vector<TypeInfo> carried_types(InferContext& ctx, const Graph& body, const std::vector<TypeInfo>& in, size_t in_first,
                                    const std::vector<TypeInfo>& out, size_t out_first, size_t n, const char* what,
                                    bool* changed) {
  std::vector<TypeInfo> r(n);
  for (size_t k = 0; k < n; ++k) {
    const TypeInfo& init = in[in_first + k];
    const TypeInfo& got = out[out_first + k];
    if (init.is_tensor() && got.is_tensor() && init.dtype != DType::kUndefined && got.dtype != DType::kUndefined &&
        init.dtype != got.dtype)
      ctx.fail_node(what, " ", k, ": the body returns ", dtype_name(got.dtype), " (output ",
                    value_name(body, body.outputs[out_first + k]), ") but the value going in is ", dtype_name(init.dtype));
    if (init.kind == TypeInfo::Kind::kTensor && got.kind != TypeInfo::Kind::kTensor && got.kind != TypeInfo::Kind::kUnknown)
      ctx.fail_node(what, " ", k, ": the body returns ", got.to_string(), " (output ",
                    value_name(body, body.outputs[out_first + k]), ") but the value going in is a tensor");
    if (!merge_types(init, got, ctx.symbols(), r[k])) r[k] = got;  // e.g. an optional going in, a sequence out
    if (changed && !same_type(r[k], init)) *changed = true;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// If

void infer_if(InferContext& ctx) {
  const Graph& then_g = graph_attr(ctx, "then_branch");
  const Graph& else_g = graph_attr(ctx, "else_branch");
  if (!then_g.inputs.empty() || !else_g.inputs.empty()) ctx.fail_node("If branches take no inputs");
  if (then_g.outputs.size() != else_g.outputs.size())
    ctx.fail_node("then_branch returns ", then_g.outputs.size(), " values but else_branch returns ", else_g.outputs.size());
  const size_t n = ctx.num_outputs();
  if (n != then_g.outputs.size()) ctx.fail_node("the node has ", n, " outputs but its branches return ", then_g.outputs.size());
  check_scalar_input(ctx, 0, DType::kBool, "cond");

  int known = -1;
  if (const Tensor* c = ctx.input_tensor(0); c && c->dtype() == DType::kBool && c->numel() == 1) known = c->data<bool>()[0] ? 1 : 0;
  if (known >= 0) {
    // Only the taken branch decides the types; the other one is still inferred (its value types
    // are needed to prepare it) but may not fit these inputs, as it never runs with them.
    const Graph& taken = known ? then_g : else_g;
    const Graph& other = known ? else_g : then_g;
    std::vector<TypeInfo> r = ctx.infer_subgraph(taken, {});
    try {
      (void)ctx.infer_subgraph(other, {});
    } catch (const Error&) {
    }
    for (size_t i = 0; i < n; ++i) ctx.set_output_type(i, r[i]);
    return;
  }
  const std::vector<TypeInfo> t = ctx.infer_subgraph(then_g, {});
  const std::vector<TypeInfo> e = ctx.infer_subgraph(else_g, {});
  for (size_t i = 0; i < n; ++i) {
    TypeInfo m;
    if (!merge_types(t[i], e[i], ctx.symbols(), m))
      ctx.fail_node("output ", i, ": then_branch returns ", t[i].to_string(), " (", value_name(then_g, then_g.outputs[i]),
                    ") but else_branch returns ", e[i].to_string(), " (", value_name(else_g, else_g.outputs[i]), ")");
    ctx.set_output_type(i, std::move(m));
  }
}

// ---------------------------------------------------------------------------------------------
// Loop

void infer_loop(InferContext& ctx) {
  const Node& node = ctx.node();
  const Graph& body = graph_attr(ctx, "body");
  const size_t n_carried = node.inputs.size() > 2 ? node.inputs.size() - 2 : 0;
  if (body.inputs.size() != n_carried + 2)
    ctx.fail_node("the body takes ", body.inputs.size(), " inputs, but with ", n_carried,
                  " loop-carried values it must take ", n_carried + 2, " (iteration number, condition, loop-carried values)");
  if (body.outputs.size() < n_carried + 1)
    ctx.fail_node("the body returns ", body.outputs.size(), " values, but with ", n_carried,
                  " loop-carried values it must return at least ", n_carried + 1, " (condition, loop-carried values)");
  const size_t n_scan = body.outputs.size() - 1 - n_carried;
  if (ctx.num_outputs() != n_carried + n_scan)
    ctx.fail_node("the node has ", ctx.num_outputs(), " outputs, but its body gives ", n_carried, " loop-carried values and ",
                  n_scan, " scan outputs");
  check_scalar_input(ctx, 0, DType::kInt64, "the trip count M");
  check_scalar_input(ctx, 1, DType::kBool, "the condition");

  std::vector<TypeInfo> in(n_carried + 2);
  in[0] = TypeInfo::tensor(DType::kInt64, Shape{});
  in[1] = TypeInfo::tensor(DType::kBool, Shape{});
  for (size_t k = 0; k < n_carried; ++k)
    if (ctx.has_input(2 + k)) in[2 + k] = ctx.input_type(2 + k);
  check_subgraph_inputs(ctx, body, in);
  std::vector<TypeInfo> out = ctx.infer_subgraph(body, in);
  bool changed = false;
  std::vector<TypeInfo> carried = carried_types(ctx, body, in, 2, out, 1, n_carried, "loop-carried value", &changed);
  if (changed) {
    // The values change from one iteration to the next: infer the body once more with the
    // generalised types, so its outputs (and the scan outputs) hold for every iteration.
    std::vector<TypeInfo> in2 = in;
    for (size_t k = 0; k < n_carried; ++k) in2[2 + k] = carried[k];
    out = ctx.infer_subgraph(body, in2);
    carried = carried_types(ctx, body, in2, 2, out, 1, n_carried, "loop-carried value", nullptr);
  }
  const TypeInfo& cond_out = out[0];
  if ((cond_out.kind != TypeInfo::Kind::kUnknown && !cond_out.is_tensor()) ||
      (cond_out.dtype != DType::kUndefined && cond_out.dtype != DType::kBool))
    ctx.fail_node("the body's first output ", value_name(body, body.outputs[0]), " is the loop condition and must be bool, got ",
                  cond_out.to_string());
  for (size_t k = 0; k < n_carried; ++k) ctx.set_output_type(k, carried[k]);

  // Iterations: exactly M when the trip count is known and no condition can end the loop early.
  std::vector<int64_t> m;
  int64_t iterations = -1;
  if (!ctx.has_input(1) && ctx.input_ints(0, m) && m.size() == 1) iterations = std::max<int64_t>(0, m[0]);
  for (size_t j = 0; j < n_scan; ++j) {
    const TypeInfo& s = out[1 + n_carried + j];
    if (s.kind == TypeInfo::Kind::kUnknown) continue;
    if (!s.is_tensor())
      ctx.fail_node("scan output ", j, " (", value_name(body, body.outputs[1 + n_carried + j]), ") must be a tensor, the body returns ",
                    s.to_string());
    if (!s.has_shape) {
      ctx.set_output_unranked(n_carried + j, s.dtype);
      continue;
    }
    Shape shape = s.shape;
    shape.insert(0, iterations >= 0 ? iterations : ctx.fresh());
    ctx.set_output(n_carried + j, s.dtype, std::move(shape));
  }
}

// ---------------------------------------------------------------------------------------------
// Scan

std::vector<int64_t> ints_attr(InferContext& ctx, const char* name, size_t n, int64_t dflt) {
  std::vector<int64_t> v = ctx.node().attr_ints(name);
  if (v.empty()) v.assign(n, dflt);
  if (v.size() != n) ctx.fail_node("attribute '", name, "' has ", v.size(), " entries; expected ", n);
  return v;
}

void infer_scan(InferContext& ctx) {
  const Node& node = ctx.node();
  const Graph& body = graph_attr(ctx, "body");
  const bool v8 = ctx.opset() < 9;  // Scan-8: a leading batch axis on every input and output
  const size_t first = v8 ? 1 : 0;  // Scan-8's input 0 is the optional sequence_lens
  const size_t n_in = node.inputs.size();
  const int64_t n_scan_in = node.attr_int("num_scan_inputs", -1);
  if (n_scan_in < 1 || first + static_cast<size_t>(n_scan_in) > n_in)
    ctx.fail_node("num_scan_inputs is ", n_scan_in, "; it must be between 1 and the number of inputs (", n_in - first, ")");
  const size_t M = static_cast<size_t>(n_scan_in);
  const size_t N = n_in - first - M;
  if (body.inputs.size() != N + M)
    ctx.fail_node("the body takes ", body.inputs.size(), " inputs, but the node gives ", N, " state variables and ", M,
                  " scan inputs");
  if (body.outputs.size() < N)
    ctx.fail_node("the body returns ", body.outputs.size(), " values, fewer than the ", N, " state variables");
  const size_t K = body.outputs.size() - N;
  if (ctx.num_outputs() != N + K)
    ctx.fail_node("the node has ", ctx.num_outputs(), " outputs, but its body gives ", N, " state variables and ", K,
                  " scan outputs");
  if (v8 && ctx.has_input(0)) {
    const TypeInfo& t = ctx.input_type(0);
    if (t.elem_dtype() != DType::kUndefined && t.elem_dtype() != DType::kInt64 && t.elem_dtype() != DType::kInt32)
      ctx.fail_node("sequence_lens must be int64, got ", t.to_string());
  }
  const std::vector<int64_t> in_dirs = ints_attr(ctx, v8 ? "directions" : "scan_input_directions", M, 0);
  for (int64_t d : in_dirs)
    if (d != 0 && d != 1) ctx.fail_node("scan directions must be 0 (forward) or 1 (reverse), got ", d);
  std::vector<int64_t> in_axes(M, v8 ? 1 : 0), out_axes(K, v8 ? 1 : 0);
  if (!v8) {
    in_axes = ints_attr(ctx, "scan_input_axes", M, 0);
    out_axes = ints_attr(ctx, "scan_output_axes", K, 0);
    for (int64_t d : ints_attr(ctx, "scan_output_directions", K, 0))
      if (d != 0 && d != 1) ctx.fail_node("scan_output_directions must be 0 or 1, got ", d);
  }

  int64_t batch = 0, length = 0;
  bool batch_known = false, length_known = false;
  auto note_dim = [&](int64_t d, int64_t& dim, bool& known, const char* what) {
    if (known && dim >= 0 && d >= 0 && dim != d) ctx.fail_node("the scan inputs disagree on the ", what, ": ", dim, " vs ", d);
    if (!known || (dim < 0 && d >= 0)) {
      dim = d;
      known = true;
    }
  };
  std::vector<TypeInfo> in(N + M);
  for (size_t k = 0; k < N; ++k) {
    if (!ctx.has_input(first + k)) continue;
    const TypeInfo& t = ctx.input_type(first + k);
    if (!v8) {
      in[k] = t;
    } else if (t.is_tensor() && t.has_shape && !t.shape.empty()) {
      note_dim(t.shape[0], batch, batch_known, "batch size");
      Shape s = t.shape;
      s.erase(0);
      in[k] = TypeInfo::tensor(t.dtype, s);
    } else {
      in[k] = TypeInfo::tensor(t.elem_dtype());
    }
  }
  for (size_t j = 0; j < M; ++j) {
    const TypeInfo& t = ctx.input_type(first + N + j);
    if (!t.is_tensor()) ctx.fail_node("scan input ", j, " must be a tensor, got ", t.to_string());
    if (!t.has_shape) {
      in[N + j] = TypeInfo::tensor(t.dtype);
      continue;
    }
    const int64_t r = static_cast<int64_t>(t.shape.size());
    int64_t axis = in_axes[j];
    if (axis < -r || axis >= r)
      ctx.fail_node("scan input ", j, " has rank ", r, ", too small for its scan axis ", axis, v8 ? " (Scan-8 inputs are [batch, sequence, ...])" : "");
    if (axis < 0) axis += r;
    Shape s = t.shape;
    note_dim(s[axis], length, length_known, "sequence length");
    s.erase(static_cast<size_t>(axis));
    if (v8) {
      note_dim(s[0], batch, batch_known, "batch size");
      s.erase(0);
    }
    in[N + j] = TypeInfo::tensor(t.dtype, s);
  }
  check_subgraph_inputs(ctx, body, in);
  std::vector<TypeInfo> out = ctx.infer_subgraph(body, in);
  bool changed = false;
  std::vector<TypeInfo> states = carried_types(ctx, body, in, 0, out, 0, N, "state variable", &changed);
  if (changed) {
    std::vector<TypeInfo> in2 = in;
    for (size_t k = 0; k < N; ++k) in2[k] = states[k];
    out = ctx.infer_subgraph(body, in2);
    states = carried_types(ctx, body, in2, 0, out, 0, N, "state variable", nullptr);
  }
  if (!batch_known) batch = ctx.fresh();
  if (!length_known) length = ctx.fresh();
  for (size_t k = 0; k < N; ++k) {
    TypeInfo t = states[k];
    if (v8 && t.is_tensor()) {
      if (t.has_shape) t.shape.insert(0, batch);
    }
    ctx.set_output_type(k, std::move(t));
  }
  for (size_t j = 0; j < K; ++j) {
    const TypeInfo& s = out[N + j];
    if (s.kind == TypeInfo::Kind::kUnknown) continue;
    if (!s.is_tensor())
      ctx.fail_node("scan output ", j, " (", value_name(body, body.outputs[N + j]), ") must be a tensor, the body returns ",
                    s.to_string());
    if (!s.has_shape) {
      ctx.set_output_unranked(N + j, s.dtype);
      continue;
    }
    Shape shape = s.shape;
    if (v8) {
      shape.insert(0, length);
      shape.insert(0, batch);
    } else {
      const int64_t r = static_cast<int64_t>(shape.size()) + 1;
      int64_t axis = out_axes[j];
      if (axis < -r || axis >= r) ctx.fail_node("scan_output_axes[", j, "] = ", axis, " is out of range for an output of rank ", r);
      if (axis < 0) axis += r;
      shape.insert(static_cast<size_t>(axis), length);
    }
    ctx.set_output(N + j, s.dtype, std::move(shape));
  }
}

}  // namespace

void register_control_flow_ops(OpRegistry& r) {
  r.add("", "If", {1, 11, 13, 16, 19, 21, 23, 24, 25}, infer_if);
  r.add("", "Loop", {1, 11, 13, 16, 19, 21, 23, 24, 25}, infer_loop);
  r.add("", "Scan", {8, 9, 11, 16, 19, 21, 23, 24, 25}, infer_scan);
}

}  // namespace onyx
