// Running: plans per input-shape signature, the memory plan, static and dynamic node execution.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>

#include "core/logging.hpp"
#include "session/session_impl.hpp"

namespace onyx {

/// The output slot of a device EP's view kernel: the planned dtype and shape in that EP's memory,
/// with no storage; the kernel replaces it with a view of its input.
static Value view_placeholder(const DeviceAllocator& alloc, DType dtype, const Shape& shape) {
  return Value(Tensor::device_tensor(dtype, shape, nullptr, nullptr, alloc.memory()));
}

namespace {

constexpr size_t kArenaAlign = 64;
constexpr int64_t kFoldLimit = int64_t(1) << 20;  // elements: larger results stay run-time work

bool nondeterministic(const Node& n) {
  return n.domain.empty() && (n.op_type == "RandomUniform" || n.op_type == "RandomNormal" ||
                              n.op_type == "RandomUniformLike" || n.op_type == "RandomNormalLike" ||
                              n.op_type == "Bernoulli" || n.op_type == "Multinomial" || n.op_type == "Dropout");
}

bool concrete_tensor(const TypeInfo& t) { return t.is_tensor() && t.has_shape && t.shape.is_concrete(); }

Value deep_copy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kTensor: return Value(v.tensor().clone());
    case Value::Kind::kSequence: {
      if (v.sequence_of_maps()) {
        std::vector<Value> maps;
        for (const Value& m : v.maps()) maps.push_back(deep_copy(m));
        return Value::sequence_of_maps(std::move(maps), v.map_key_dtype(), v.elem_dtype());
      }
      std::vector<Tensor> items;
      for (const Tensor& t : v.items()) items.push_back(t.clone());
      return Value::sequence(std::move(items), v.elem_dtype());
    }
    case Value::Kind::kOptional:
      return v.has_element() ? Value::optional_of(deep_copy(v.element())) : v;
    case Value::Kind::kMap: return Value::map(v.map_keys().clone(), v.map_values().clone());
    default: return v;
  }
}

}  // namespace

std::vector<Value> RunHooks::run_subgraph(const PreparedSubgraph& g, std::vector<Value> inputs, const KernelContext& caller) {
  return session_.run_subgraph(g, std::move(inputs), caller, *this);
}

RunContext::~RunContext() {
  std::free(arena);
  if (arena_budget) arena_budget->release(arena_size);
}

void RunContext::ensure_arena(size_t bytes, const std::shared_ptr<MemoryBudget>& budget) {
  if (bytes <= arena_size) return;
  std::free(arena);
  arena = nullptr;
  if (arena_budget) arena_budget->release(arena_size);
  arena_budget.reset();
  arena_size = 0;
  if (budget) {
    budget->reserve(bytes, [&] { return str("the run's activation arena (", bytes, " bytes planned)"); });
    arena_budget = budget;
  }
  arena = std::aligned_alloc(kArenaAlign, (bytes + kArenaAlign - 1) / kArenaAlign * kArenaAlign);
  if (!arena) {
    if (arena_budget) arena_budget->release(bytes);
    arena_budget.reset();
    fail(ErrorCode::kRuntime, "out of memory allocating a ", bytes, "-byte activation arena");
  }
  arena_size = bytes;
}

// ---------------------------------------------------------------------------------------------
// Node execution

void GraphRunner::run_node(size_t i, std::vector<Value>& frame, RunHooks& hooks) const {
  if (inside_region(i)) return;  // computed by its region's kernel, at the region's first node
  const Node& n = graph.nodes[i];
  hooks.check_cancelled(n);
  KernelContext ctx(n, frame.data(), *session.pool, &hooks, node_alloc[i], hooks.state(node_ep[i]));
  if (host_reader[i]) {
    // A host node must never see device memory: that would mean a missing copy.
    for (int v : n.inputs)
      if (v >= 0 && frame[v].is_tensor() && !frame[v].tensor().on_host())
        fail(ErrorCode::kRuntime, "internal error: ", n.label(), " on ", session.eps[node_ep[i]]->name(), " reads '",
             graph.values[v].name, "', which is in ", device_memory_name(frame[v].tensor().memory()));
  }
  try {
    kernels[i]->compute(ctx);
  } catch (const Error& e) {
    throw Error(e.code(), str("running ", n.label(), ": ", e.what()));
  } catch (const std::bad_alloc&) {
    fail(ErrorCode::kRuntime, "running ", n.label(), ": out of memory");
  } catch (const std::exception& e) {
    fail(ErrorCode::kRuntime, "running ", n.label(), ": ", e.what());
  }
}

namespace {
/// Stands in for the kernel of a node that runs inside a region (every output gets a buffer).
class NoAliasKernel final : public Kernel {
 public:
  void compute(KernelContext&) const override {}
};
}  // namespace

bool prepare_outputs(const Node& n, const OpSchema& schema, const Kernel& kernel, const std::vector<char>* keep,
                     std::vector<Value>& frame, DeviceAllocator* allocator, PendingValues* pending) {
  std::vector<TypeInfo> in_t(n.inputs.size());
  std::vector<const TypeInfo*> in_tp(n.inputs.size(), nullptr);
  std::vector<const Value*> in_v(n.inputs.size(), nullptr);
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const int v = n.inputs[k];
    if (v >= 0 && pending && pending->pending[v]) {
      in_t[k] = frame[v].is_none() ? pending->types[v] : type_of_value(frame[v]);
      in_tp[k] = &in_t[k];
      continue;
    }
    if (v < 0 || frame[v].is_none()) continue;
    in_t[k] = type_of_value(frame[v]);
    in_tp[k] = &in_t[k];
    in_v[k] = &frame[v];
  }
  std::vector<TypeInfo> outs(n.outputs.size());
  std::vector<Value> out_vals(n.outputs.size());
  SymbolTable scratch;
  InferContext ictx(n, in_tp, in_v, outs, out_vals, scratch, nullptr);
  try {
    schema.infer(ictx);
  } catch (const Error& e) {
    throw Error(e.code(), str("running ", e.what()));
  }
  bool all_values = true;
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const int v = n.outputs[o];
    if (v < 0) continue;
    if (!out_vals[o].is_none()) {
      frame[v] = std::move(out_vals[o]);
      continue;
    }
    all_values = false;
    if (pending) {
      pending->pending[v] = 1;
      pending->types[v] = outs[o];
    }
    const bool view = kernel.alias_input(o) >= 0 && !(keep && (*keep)[v]);
    const bool shaped = concrete_tensor(outs[o]) && outs[o].dtype != DType::kUndefined;
    if (shaped && !view)
      frame[v] = Value(allocator ? allocator->allocate(outs[o].dtype, outs[o].shape) : Tensor(outs[o].dtype, outs[o].shape));
    else if (shaped && allocator)
      frame[v] = view_placeholder(*allocator, outs[o].dtype, outs[o].shape);
    else
      frame[v] = Value();
  }
  return all_values;
}

void GraphRunner::run_node_dynamic(size_t i, std::vector<Value>& frame, RunHooks& hooks) const {
  const Node& n = graph.nodes[i];
  hooks.check_cancelled(n);
  if (region_of[i] >= 0) {
    if (inside_region(i)) return;
    // Shape every node of the region in order, then run the region's kernel once. What the
    // region computes is not known before it runs: a node reading it is shaped from its type
    // only (a Reshape whose shape the region computes gets no shape here; the kernel sets it).
    static const NoAliasKernel no_alias;
    PendingValues pending(graph.values.size());
    for (int j : region_nodes[region_of[i]])
      prepare_outputs(graph.nodes[j], *schemas[j], no_alias, &keep, frame, node_alloc[j], &pending);
    run_node(i, frame, hooks);
    return;
  }
  if (!has_subgraph[i]) {
    if (prepare_outputs(n, *schemas[i], *kernels[i], &keep, frame, node_alloc[i])) return;
  } else {
    for (int v : n.outputs)
      if (v >= 0) frame[v] = Value();
  }
  run_node(i, frame, hooks);
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const int v = n.outputs[o];
    if (v >= 0 && frame[v].is_none())
      fail(ErrorCode::kRuntime, "running ", n.label(), ": the kernel produced no value for output ", o, " ('",
           graph.values[v].name, "')");
  }
}

void GraphRunner::execute_dynamic(std::vector<Value>& frame, RunHooks& hooks) const {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    run_node_dynamic(i, frame, hooks);
    for (int v : release_after[i]) frame[v] = Value();
  }
}

std::vector<Value> SessionImpl::run_subgraph(const PreparedSubgraph& pg, std::vector<Value> in, const KernelContext& caller,
                                             RunHooks& hooks) const {
  const auto& r = static_cast<const GraphRunner&>(pg);
  const Graph& g = r.graph;
  hooks.check_cancelled(caller.node());
  if (in.size() != g.inputs.size())
    fail(ErrorCode::kRuntime, "subgraph '", g.name, "' takes ", g.inputs.size(), " inputs, got ", in.size());
  std::vector<Value> frame(g.values.size());
  const Value* parent = caller.frame();
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (g.values[v].has_initializer) frame[v] = Value(g.values[v].initializer);
    if (r.outer_src[v] >= 0) frame[v] = parent[r.outer_src[v]];
  }
  for (size_t k = 0; k < in.size(); ++k) frame[g.inputs[k]] = std::move(in[k]);
  r.execute_dynamic(frame, hooks);
  std::vector<Value> out;
  out.reserve(g.outputs.size());
  for (int o : g.outputs) out.push_back(frame[o]);
  return out;
}

bool SessionImpl::fold_node(const Graph& g, size_t index, GraphFacts& facts) const {
  if (&g != &main->graph) return false;
  const Node& n = g.nodes[index];
  if (nondeterministic(n) || main->has_subgraph[index] || main->region_of[index] >= 0) return false;
  if (n.domain == "onyx" && n.op_type == "Copy") return false;
  if (main->node_alloc[index] || eps[main->node_ep[index]]->allocator()) return false;  // device nodes run at run time
  for (int v : n.outputs) {
    if (v < 0) continue;
    const TypeInfo& t = facts.types[v];
    if (!t.is_tensor()) return false;
    if (concrete_tensor(t) && t.shape.numel() > kFoldLimit) return false;
  }
  std::vector<Value> tmp(g.values.size());
  for (int v : n.inputs)
    if (v >= 0) tmp[v] = facts.values[v];
  for (int v : n.outputs) {
    if (v < 0) continue;
    const TypeInfo& t = facts.types[v];
    if (concrete_tensor(t)) tmp[v] = Value(Tensor(t.dtype, t.shape));
  }
  RunHooks hooks(*this);
  main->run_node(index, tmp, hooks);
  for (int v : n.outputs) {
    if (v < 0) continue;
    if (!tmp[v].is_tensor() || tmp[v].tensor().numel() > kFoldLimit) return false;
  }
  for (int v : n.outputs)
    if (v >= 0) facts.values[v] = std::move(tmp[v]);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Plans

Plan::InputSig Plan::signature_of(const Value& v) {
  InputSig s;
  s.kind = v.kind();
  const Value* t = &v;
  if (v.is_optional()) {
    s.has_element = v.has_element();
    t = v.has_element() ? &v.element() : nullptr;
  }
  if (t && t->is_tensor()) {
    s.dtype = t->tensor().dtype();
    s.shape = t->tensor().shape();
  }
  return s;
}

bool Plan::same(const InputSig& s, const Value& v) {
  if (s.kind != v.kind()) return false;
  const Value* t = &v;
  if (v.is_optional()) {
    if (s.has_element != v.has_element()) return false;
    t = v.has_element() ? &v.element() : nullptr;
  }
  if (t && t->is_tensor()) return s.dtype == t->tensor().dtype() && s.shape == t->tensor().shape();
  return s.dtype == DType::kUndefined;
}

void SessionImpl::check_inputs(const std::vector<Value>& in) const {
  const Graph& g = *model->graph;
  const SymbolTable& symbols = *model->symbols;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const ValueSlot& s = g.values[g.inputs[k]];
    const Value& v = in[k];
    if (v.is_none()) {
      if (!s.has_initializer && s.type.kind != TypeInfo::Kind::kOptional)
        fail(ErrorCode::kInvalidArgument, "missing input '", s.name, "' (", inputs[k].type_string, ")");
      continue;
    }
    const TypeInfo& t = s.type;
    if (t.kind == TypeInfo::Kind::kTensor) {
      if (!v.is_tensor())
        fail(ErrorCode::kInvalidArgument, "input '", s.name, "' must be a tensor (", inputs[k].type_string, ")");
      const Tensor& x = v.tensor();
      if (t.dtype != DType::kUndefined && x.dtype() != t.dtype)
        fail(ErrorCode::kInvalidArgument, "input '", s.name, "' has type ", dtype_name(x.dtype()), " but the model expects ",
             dtype_name(t.dtype), " (", inputs[k].type_string, ")");
      if (!x.defined()) fail(ErrorCode::kInvalidArgument, "input '", s.name, "' is an undefined tensor");
      if (x.numel() > 0 && !x.raw_data())
        fail(ErrorCode::kInvalidArgument, "input '", s.name, "' has no data");
      if (t.has_shape) {
        bool ok = x.rank() == t.shape.size();
        for (size_t d = 0; ok && d < t.shape.size(); ++d) ok = t.shape[d] < 0 || t.shape[d] == x.dim(d);
        if (!ok) {
          std::string want = "[";
          for (size_t d = 0; d < t.shape.size(); ++d) {
            if (d) want += ",";
            want += symbols.describe(t.shape[d]);
          }
          fail(ErrorCode::kInvalidArgument, "input '", s.name, "' has shape ", x.shape().to_string(),
               " but the model expects ", want, "]");
        }
      }
    } else if (t.kind == TypeInfo::Kind::kSequence) {
      if (!v.is_sequence()) fail(ErrorCode::kInvalidArgument, "input '", s.name, "' must be a sequence (", inputs[k].type_string, ")");
    } else if (t.kind == TypeInfo::Kind::kOptional) {
      if (!v.is_optional()) fail(ErrorCode::kInvalidArgument, "input '", s.name, "' must be an optional (", inputs[k].type_string, ")");
    } else if (t.kind == TypeInfo::Kind::kMap) {
      if (!v.is_map() || v.map_key_dtype() != t.dtype || (t.elem_dtype() != DType::kUndefined && v.elem_dtype() != t.elem_dtype()))
        fail(ErrorCode::kInvalidArgument, "input '", s.name, "' must be a ", inputs[k].type_string);
    }
  }
}

std::unique_ptr<Plan> SessionImpl::build_plan(const std::vector<Value>& in) const {
  const Graph& g = *model->graph;
  const GraphRunner& r = *main;
  const size_t nv = g.values.size();
  auto plan = std::make_unique<Plan>();
  for (size_t k = 0; k < g.inputs.size(); ++k) plan->in_sig.push_back(Plan::signature_of(in[k]));

  GraphFacts facts = entry_facts(g, nullptr, false);
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const int v = g.inputs[k];
    if (!in[k].is_none()) {
      facts.types[v] = type_of_value(in[k]);
      // An empty optional is fully described by the signature, so inference may use it.
      if (in[k].is_optional() && !in[k].has_element()) facts.values[v] = in[k];
    } else if (g.values[v].has_initializer) {
      facts.values[v] = Value(g.values[v].initializer);
    }
  }
  SymbolTable scratch;
  FoldFn fold = [this](const Graph& gg, size_t i, GraphFacts& f) { return fold_node(gg, i, f); };
  InferOptions opts;
  opts.fold = &fold;
  infer_graph(g, facts, scratch, opts);

  plan->slot.assign(nv, Plan::Slot::kUnused);
  plan->offset.assign(nv, 0);
  plan->dtype.assign(nv, DType::kUndefined);
  plan->shape.assign(nv, Shape());
  plan->constants.assign(nv, Value());
  plan->mode.assign(g.nodes.size(), Plan::Mode::kDynamic);

  for (size_t v = 0; v < nv; ++v) {
    const ValueSlot& s = g.values[v];
    if (s.is_graph_input) {
      const int k = input_pos[v];
      if (plan->in_sig[k].kind != Value::Kind::kNone) {
        plan->slot[v] = Plan::Slot::kInput;
      } else if (s.has_initializer) {
        plan->slot[v] = Plan::Slot::kConstant;
        plan->constants[v] = Value(s.initializer);
      }
    } else if (s.has_initializer) {
      plan->slot[v] = Plan::Slot::kInitializer;
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    bool all_const = true, all_static = !r.has_subgraph[i];
    for (int v : n.outputs) {
      if (v < 0) continue;
      if (facts.values[v].is_none()) all_const = false;
      if (!concrete_tensor(facts.types[v]) || facts.types[v].dtype == DType::kUndefined) all_static = false;
    }
    Plan::Mode mode = all_const ? Plan::Mode::kSkip : all_static ? Plan::Mode::kStatic : Plan::Mode::kDynamic;
    plan->mode[i] = mode;
    for (int v : n.outputs) {
      if (v < 0) continue;
      plan->dtype[v] = facts.types[v].elem_dtype();
      if (mode == Plan::Mode::kSkip) {
        plan->slot[v] = Plan::Slot::kConstant;
        plan->constants[v] = facts.values[v];
      } else if (mode == Plan::Mode::kStatic) {
        plan->shape[v] = facts.types[v].shape;
        size_t o = 0;
        while (n.outputs[o] != v) ++o;
        if (r.node_alloc[i] && r.region_of[i] < 0 && r.kernels[i]->alias_input(o) >= 0 && !r.keep[v])
          plan->slot[v] = Plan::Slot::kView;  // a device EP's view of its input: no buffer of its own
        else if (r.node_alloc[i])
          plan->slot[v] = Plan::Slot::kDevice;  // allocated by the node's EP (cached per run context)
        else if (r.keep[v] || plan->dtype[v] == DType::kString)
          plan->slot[v] = Plan::Slot::kHeap;
        else if (r.region_of[i] < 0 && r.kernels[i]->alias_input(o) >= 0)
          plan->slot[v] = Plan::Slot::kView;  // the kernel sets a view of its input
        else
          plan->slot[v] = Plan::Slot::kArena;
      } else {
        plan->slot[v] = Plan::Slot::kDynamic;
      }
    }
    if (mode == Plan::Mode::kSkip) ++plan->folded_nodes;
    else if (mode == Plan::Mode::kStatic) ++plan->static_nodes;
    else ++plan->dynamic_nodes;
  }
  // A region runs as a unit: all its nodes static, or all dynamic (never folded one by one). A
  // node whose outputs inference folded (a Shape, the arithmetic on it) counts as static: the
  // region computes it too, into buffers of the folded values' shapes.
  for (const auto& reg : r.region_nodes) {
    bool dynamic = false;
    for (int i : reg) {
      dynamic |= plan->mode[i] == Plan::Mode::kDynamic;
      if (plan->mode[i] == Plan::Mode::kSkip)
        for (int v : g.nodes[i].outputs)
          if (v >= 0 && !(concrete_tensor(facts.types[v]) && facts.types[v].dtype != DType::kUndefined)) dynamic = true;
    }
    if (!dynamic) {
      for (int i : reg) {
        if (plan->mode[i] != Plan::Mode::kSkip) continue;
        plan->mode[i] = Plan::Mode::kStatic;
        --plan->folded_nodes;
        ++plan->static_nodes;
        for (int v : g.nodes[i].outputs) {
          if (v < 0) continue;
          plan->constants[v] = Value();
          plan->shape[v] = facts.types[v].shape;
          if (r.node_alloc[i]) plan->slot[v] = Plan::Slot::kDevice;
          else if (r.keep[v] || plan->dtype[v] == DType::kString) plan->slot[v] = Plan::Slot::kHeap;
          else plan->slot[v] = Plan::Slot::kArena;
        }
      }
      continue;
    }
    for (int i : reg) {
      if (plan->mode[i] == Plan::Mode::kStatic) --plan->static_nodes;
      if (plan->mode[i] == Plan::Mode::kSkip) --plan->folded_nodes;
      if (plan->mode[i] != Plan::Mode::kDynamic) ++plan->dynamic_nodes;
      plan->mode[i] = Plan::Mode::kDynamic;
      for (int v : g.nodes[i].outputs)
        if (v >= 0) {
          plan->slot[v] = Plan::Slot::kDynamic;
          plan->constants[v] = Value();
        }
    }
  }
  plan->release_after.resize(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : r.release_after[i])
      if (plan->slot[v] == Plan::Slot::kDynamic) plan->release_after[i].push_back(v);

  // Memory plan: arena values grouped by aliasing, placed by size with lifetimes.
  std::vector<int> group(nv);
  std::iota(group.begin(), group.end(), 0);
  auto root = [&](int v) {
    while (group[v] != v) v = group[v] = group[group[v]];
    return v;
  };
  // The input value that output o of node n may share, by its kernel's answer k (-1: none).
  auto input_for = [](const Node& n, size_t o, int k) {
    return n.outputs[o] >= 0 && k >= 0 && static_cast<size_t>(k) < n.inputs.size() ? n.inputs[k] : -1;
  };
  auto plain_static = [&](size_t i) { return plan->mode[i] == Plan::Mode::kStatic && r.region_of[i] < 0; };
  std::vector<int> first(nv, -1), last(nv, -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    // A region reads and writes all its values while it runs: its span is [first node, last node].
    const int use_at = r.region_of[i] >= 0 ? r.region_nodes[r.region_of[i]].back() : static_cast<int>(i);
    const int def_at = r.region_of[i] >= 0 ? r.region_nodes[r.region_of[i]].front() : static_cast<int>(i);
    for (int v : n.inputs)
      if (v >= 0) last[v] = std::max(last[v], use_at);
    for (int v : n.implicit_inputs) last[v] = std::max(last[v], use_at);
    for (int v : n.outputs)
      if (v >= 0) first[v] = def_at;
    if (!plain_static(i)) continue;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const int v = n.outputs[o], u = input_for(n, o, r.kernels[i]->alias_input(o));
      if (u < 0 || plan->slot[v] != Plan::Slot::kView) continue;
      if (plan->slot[u] == Plan::Slot::kArena || plan->slot[u] == Plan::Slot::kView) group[root(v)] = root(u);
    }
  }
  // In place: an output its kernel may compute into an input's buffer (Kernel::inplace_input)
  // shares that buffer when nothing reads the input after the node: the input is not read twice
  // by it, is not kept, and neither it nor any view of it is used later.
  {
    std::vector<int> group_last(nv, -1);
    for (size_t v = 0; v < nv; ++v) {
      const int rt = root(static_cast<int>(v));
      group_last[rt] = std::max(group_last[rt], last[v]);
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      if (!plain_static(i)) continue;
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        const int v = n.outputs[o], u = input_for(n, o, r.kernels[i]->inplace_input(o));
        if (u < 0 || plan->slot[u] != Plan::Slot::kArena || plan->slot[v] != Plan::Slot::kArena) continue;
        if (std::count(n.inputs.begin(), n.inputs.end(), u) != 1) continue;
        if (plan->dtype[u] != plan->dtype[v] || !(plan->shape[u] == plan->shape[v])) continue;
        const int ru = root(u), rv = root(v);
        if (ru == rv || plan->slot[ru] != Plan::Slot::kArena || group_last[ru] != static_cast<int>(i)) continue;
        group[rv] = ru;
        group_last[ru] = std::max(group_last[ru], group_last[rv]);
        ++plan->inplace_outputs;
      }
    }
  }
  struct Block {
    int root;
    size_t size;
    int begin, end;
    size_t offset = 0;
  };
  std::vector<Block> blocks;
  std::vector<int> block_of(nv, -1);
  for (size_t v = 0; v < nv; ++v) {
    if (plan->slot[v] != Plan::Slot::kArena && plan->slot[v] != Plan::Slot::kView) continue;
    const int rt = root(static_cast<int>(v));
    if (plan->slot[rt] != Plan::Slot::kArena) continue;  // a view of something outside the arena
    // Views only stretch the lifetime of the buffer they look at.
    const size_t bytes = plan->slot[v] == Plan::Slot::kArena
                             ? static_cast<size_t>(plan->shape[v].numel()) * dtype_size(plan->dtype[v])
                             : 0;
    const int b = first[v], e = std::max(last[v], first[v]);
    if (block_of[rt] < 0) {
      block_of[rt] = static_cast<int>(blocks.size());
      blocks.push_back({rt, bytes, b, e});
    } else {
      Block& blk = blocks[block_of[rt]];
      blk.size = std::max(blk.size, bytes);
      blk.begin = std::min(blk.begin, b);
      blk.end = std::max(blk.end, e);
    }
  }
  std::vector<int> order(blocks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return blocks[a].size > blocks[b].size; });
  std::vector<int> placed;
  size_t total = 0;
  for (int bi : order) {
    Block& b = blocks[bi];
    const size_t size = (b.size + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
    // Collect conflicting (lifetime-overlapping) placed blocks by offset; take the lowest gap that fits.
    std::vector<std::pair<size_t, size_t>> busy;
    for (int pi : placed) {
      const Block& p = blocks[pi];
      if (p.end < b.begin || b.end < p.begin) continue;
      busy.emplace_back(p.offset, (p.size + kArenaAlign - 1) / kArenaAlign * kArenaAlign);
    }
    std::sort(busy.begin(), busy.end());
    size_t off = 0;
    for (auto& [o, sz] : busy) {
      if (off + size <= o) break;
      off = std::max(off, o + sz);
    }
    b.offset = off;
    total = std::max(total, off + size);
    placed.push_back(bi);
  }
  for (size_t v = 0; v < nv; ++v)
    if (plan->slot[v] == Plan::Slot::kArena) plan->offset[v] = blocks[block_of[root(static_cast<int>(v))]].offset;
  plan->arena_bytes = total;
  // Whole-run capture: one EP that captures, every node that runs is its own (or a copy between
  // host memory and its memory, which it made), and every shape is decided now.
  int cap = -1;
  for (size_t e = 0; e < eps.size(); ++e)
    if (eps[e]->captures_runs()) cap = cap == -1 ? static_cast<int>(e) : -2;
  for (size_t i = 0; i < g.nodes.size() && cap >= 0; ++i)
    if (plan->mode[i] != Plan::Mode::kSkip &&
        (plan->mode[i] != Plan::Mode::kStatic || r.has_subgraph[i] || r.region_of[i] >= 0 || r.node_ep[i] != cap))
      cap = -1;
  plan->capture_ep = cap < 0 ? -1 : cap;
  return plan;
}

std::shared_ptr<const Plan> SessionImpl::plan_for(const std::vector<Value>& in) const {
  auto matches = [&](const Plan& p) {
    for (size_t k = 0; k < in.size(); ++k)
      if (!Plan::same(p.in_sig[k], in[k])) return false;
    return true;
  };
  {
    std::shared_lock<std::shared_mutex> lock(plans_mu_);
    for (const auto& c : plans_)
      if (matches(*c->plan)) {
        c->last_use = ++plan_clock_;
        return c->plan;
      }
  }
  std::shared_ptr<const Plan> plan = build_plan(in);
  std::unique_lock<std::shared_mutex> lock(plans_mu_);
  for (const auto& c : plans_)
    if (matches(*c->plan)) return c->plan;
  if (plans_.size() >= kMaxPlans) {  // the least recently used one goes (runs holding it keep it)
    auto lru = std::min_element(plans_.begin(), plans_.end(), [](const auto& a, const auto& b) { return a->last_use < b->last_use; });
    plans_.erase(lru);
  }
  auto c = std::make_unique<CachedPlan>();
  c->plan = std::move(plan);
  c->last_use = ++plan_clock_;
  plans_.push_back(std::move(c));
  return plans_.back()->plan;
}

std::unique_ptr<RunContext> SessionImpl::acquire_context() const {
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    if (!contexts_.empty()) {
      auto c = std::move(contexts_.back());
      contexts_.pop_back();
      return c;
    }
  }
  auto c = std::make_unique<RunContext>();
  c->frame.resize(model->graph->values.size());
  c->output_cache.resize(model->graph->values.size());
  c->device_cache.resize(model->graph->values.size());
  return c;
}

void SessionImpl::release_context(std::unique_ptr<RunContext> ctx) const {
  std::lock_guard<std::mutex> lock(contexts_mu_);
  contexts_.push_back(std::move(ctx));
}

void SessionImpl::run(Binding& binding, const std::atomic<bool>* terminate) const {
  const Graph& g = *model->graph;
  const GraphRunner& r = *main;
  check_inputs(binding.inputs_);
  const std::shared_ptr<const Plan> held_plan = plan_for(binding.inputs_);
  const Plan& plan = *held_plan;
  for (auto& o : binding.outputs_) o = Value();  // let go of the last results so their storage can be reused
  binding.outputs_.resize(g.outputs.size());

  std::unique_ptr<RunContext> ctx = acquire_context();
  std::vector<Value>& frame = ctx->frame;
  struct Cleanup {
    std::vector<Value>& frame;
    ~Cleanup() {
      for (auto& v : frame) v = Value();
    }
  };
  try {
    Cleanup cleanup{frame};
    std::optional<MemoryBudget::Scope> budget_scope;
    if (budget) budget_scope.emplace(budget);
    ctx->ensure_arena(plan.arena_bytes, budget);
    auto* arena = static_cast<uint8_t*>(ctx->arena);
    for (size_t v = 0; v < g.values.size(); ++v) {
      switch (plan.slot[v]) {
        case Plan::Slot::kInitializer: frame[v] = Value(g.values[v].initializer); break;
        case Plan::Slot::kInput: frame[v] = binding.inputs_[input_pos[v]]; break;
        case Plan::Slot::kConstant: frame[v] = plan.constants[v]; break;
        case Plan::Slot::kArena:
          if (!frame[v].is_tensor()) frame[v] = Value(Tensor());
          frame[v].tensor().rebind(plan.dtype[v], plan.shape[v], arena + plan.offset[v]);
          break;
        case Plan::Slot::kHeap: {
          const int k = output_pos[v];
          if (k >= 0 && binding.output_buffers_[k].defined() && binding.output_buffers_[k].dtype() == plan.dtype[v] &&
              binding.output_buffers_[k].shape() == plan.shape[v]) {
            frame[v] = Value(binding.output_buffers_[k]);  // the kernel writes straight into the user's buffer
            break;
          }
          Tensor& cache = ctx->output_cache[v];
          if (!(cache.defined() && cache.dtype() == plan.dtype[v] && cache.shape() == plan.shape[v] &&
                cache.storage().use_count() == 1 && plan.dtype[v] != DType::kString))
            cache = Tensor(plan.dtype[v], plan.shape[v]);
          frame[v] = Value(cache);
          break;
        }
        case Plan::Slot::kDevice: {
          Tensor& cache = ctx->device_cache[v];
          DeviceAllocator* alloc = r.node_alloc[g.values[v].producer];
          if (!(cache.defined() && cache.dtype() == plan.dtype[v] && cache.shape() == plan.shape[v] &&
                cache.memory() == alloc->memory()))
            cache = alloc->allocate(plan.dtype[v], plan.shape[v]);
          frame[v] = Value(cache);
          break;
        }
        case Plan::Slot::kView: {
          // A device EP's view kernel learns the planned shape from a placeholder (no memory) and
          // replaces it with the view; host view kernels get nothing and make the view themselves.
          const int p = g.values[v].producer;
          DeviceAllocator* alloc = p >= 0 ? r.node_alloc[p] : nullptr;
          frame[v] = alloc ? view_placeholder(*alloc, plan.dtype[v], plan.shape[v]) : Value();
          break;
        }
        default: frame[v] = Value();
      }
    }
    RunHooks hooks(*this);
    hooks.terminate = terminate;
    const bool profiling = binding.profiling_;
    // Whole-run capture (profiled runs are never recorded or replayed: they time each node).
    RunContext::Capture& cap = ctx->capture;
    if (cap.plan != held_plan) {  // (drops another plan's recording)
      cap = RunContext::Capture{};
      cap.plan = held_plan;
    }
    const int cap_ep = profiling || cap.failed ? -1 : plan.capture_ep;
    ctx->ep_states.resize(eps.size());
    for (size_t e = 0; e < eps.size(); ++e) {
      if (static_cast<int>(e) == cap_ep && cap.state) {
        ctx->ep_states[e] = cap.state;
        eps[e]->resume_run(cap.state.get());
      } else {
        ctx->ep_states[e] = eps[e]->begin_run();
        if (static_cast<int>(e) == cap_ep) cap.state = ctx->ep_states[e];  // warm-up: keep the state for the recording
      }
    }
    hooks.states = &ctx->ep_states;
    struct EndRun {
      const SessionImpl& s;
      RunHooks& h;
      bool done = false;
      void finish() {
        if (done) return;
        done = true;
        for (size_t e = 0; e < s.eps.size(); ++e) {
          auto& st = (*h.states)[e];
          if (st) s.eps[e]->end_run(st.get());
          st.reset();
        }
      }
      ~EndRun() {
        try {
          finish();
        } catch (...) {
        }
      }
    } end_run{*this, hooks};
    if (profiling) binding.profile_.clear();
    const auto t0 = std::chrono::steady_clock::now();
    auto run_nodes = [&] {
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (plan.mode[i] == Plan::Mode::kSkip || r.inside_region(i)) {
          for (int v : plan.release_after[i]) frame[v] = Value();
          continue;
        }
        const auto n0 = profiling ? std::chrono::steady_clock::now() : t0;
        if (plan.mode[i] == Plan::Mode::kStatic)
          r.run_node(i, frame, hooks);
        else
          r.run_node_dynamic(i, frame, hooks);
        if (profiling) {
          const auto n1 = std::chrono::steady_clock::now();
          const Node& n = g.nodes[i];
          const auto& ep = *eps[r.node_ep[i]];
          binding.profile_.push_back({n.name.empty() ? str("#", i) : n.name, n.op_type, ep.name(), ep.device(),
                                      std::chrono::duration<double, std::micro>(n0 - t0).count(),
                                      std::chrono::duration<double, std::micro>(n1 - n0).count()});
        }
        for (int v : plan.release_after[i]) frame[v] = Value();
      }
    };
    if (cap_ep < 0) {
      run_nodes();
    } else {
      const ExecutionProvider& ep = *eps[cap_ep];
      void* state = ctx->ep_states[cap_ep].get();
      if (!cap.recorded && cap.runs >= 1) {
        try {
          ep.begin_capture(state);
          run_nodes();
          ep.end_capture(state);
          cap.recorded = true;
        } catch (const Error& e) {
          ep.abort_capture(state);
          cap.failed = true;
          log_message(LogLevel::kWarning,
                      str(model->path, ": ", ep.name(), " could not record a run, so this plan runs node by node: ", e.what()));
        } catch (...) {
          ep.abort_capture(state);
          cap.failed = true;
          cap.state.reset();
          throw;
        }
      }
      if (cap.recorded) ep.replay(state, frame.data());
      else run_nodes();
      ++cap.runs;
      if (cap.failed) cap.state.reset();  // back to the EP's pool after this run
    }
    end_run.finish();  // every EP has completed the run's work before outputs are read
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      const int v = g.outputs[k];
      const Plan::Slot slot = plan.slot[v];
      Value out = (slot == Plan::Slot::kInput || slot == Plan::Slot::kInitializer || slot == Plan::Slot::kConstant)
                      ? deep_copy(frame[v])
                      : frame[v];
      const Tensor& user = binding.output_buffers_[k];
      if (user.defined()) {
        if (!out.is_tensor())
          fail(ErrorCode::kInvalidArgument, "output '", g.values[v].name, "' is not a tensor and cannot go into a buffer");
        const Tensor& t = out.tensor();
        if (t.dtype() != user.dtype() || !(t.shape() == user.shape()))
          fail(ErrorCode::kInvalidArgument, "output '", g.values[v].name, "' is ", dtype_name(t.dtype()),
               t.shape().to_string(), " but the bound buffer is ", dtype_name(user.dtype()), user.shape().to_string());
        if (t.raw_data() == user.raw_data()) {
          // already written in place
        } else if (t.dtype() == DType::kString) {
          for (int64_t e = 0; e < t.numel(); ++e)
            static_cast<std::string*>(const_cast<void*>(user.raw_data()))[e] = static_cast<const std::string*>(t.raw_data())[e];
        } else if (t.nbytes()) {
          std::memcpy(const_cast<void*>(user.raw_data()), t.raw_data(), t.nbytes());
        }
        out = Value(user);
      }
      binding.outputs_[k] = std::move(out);
    }
  } catch (...) {
    release_context(std::move(ctx));
    throw;
  }
  release_context(std::move(ctx));
}

}  // namespace onyx
