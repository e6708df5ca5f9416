// Session creation: load, infer, place every node on an EP, prepare kernels; the public API.
#include <algorithm>
#include <limits>
#include <map>
#include <new>

#include "core/logging.hpp"
#include "model/loader.hpp"
#include "model/writer.hpp"
#include "optimizer/passes.hpp"
#include "ep/factory.hpp"
#include "ops/custom.hpp"
#include "session/copies.hpp"
#include "session/io_info.hpp"
#include "session/partition.hpp"
#include "onyx/version.hpp"
#include "session/session_impl.hpp"

namespace onyx {

const char* version() { return ONYX_VERSION_STRING; }

// ---------------------------------------------------------------------------------------------
// GraphRunner preparation

GraphRunner::GraphRunner(const SessionImpl& s, const Graph& graph_in, const GraphRunner* par)
    : session(s), graph(graph_in), parent(par) {
  // Placement may reorder nodes (regions become contiguous); the session owns the model.
  Graph& g = const_cast<Graph&>(graph_in);
  PartitionResult part = partition_graph(g, s.eps);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (part.node_ep[i] >= 0) continue;
    std::vector<std::string> reasons;
    for (const auto& d : part.declines[i]) reasons.push_back(str(d.ep, ": ", d.code, ": ", d.message));
    fail(ErrorCode::kNotImplemented, g.nodes[i].label(), " (opset ", g.nodes[i].opset,
         ") cannot run on any execution provider: ", join(reasons, "; "));
  }
  copies = insert_copies(g, part, s.eps);
  const size_t nv = g.values.size();
  outer_src.assign(nv, -1);
  for (size_t v = 0; v < nv; ++v)
    if (g.values[v].is_outer && g.parent) outer_src[v] = g.parent->find(g.values[v].name);
  keep.assign(nv, 0);
  for (int o : g.outputs) keep[o] = 1;

  const size_t n = g.nodes.size();
  kernels.resize(n);
  node_ep = part.node_ep;
  declines = std::move(part.declines);
  region_of = part.region_of;
  schemas.assign(n, nullptr);
  has_subgraph.assign(n, 0);
  node_alloc.assign(n, nullptr);
  host_reader.assign(n, 0);
  for (size_t i = 0; i < n; ++i)
    host_reader[i] = !s.eps[node_ep[i]]->allocator() && !reads_metadata_only(g.nodes[i]);
  auto prepare_subgraph = [this](const Graph& sub) -> std::shared_ptr<PreparedSubgraph> {
    auto r = std::make_shared<GraphRunner>(session, sub, this);
    subgraphs.push_back(r);
    return r;
  };
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g.nodes[i];
    schemas[i] = find_schema(nd.domain, nd.op_type);
    for (const auto& a : nd.attrs)
      if (a.type == AttrType::kGraph || a.type == AttrType::kGraphs) has_subgraph[i] = 1;
    if (static_cast<size_t>(node_ep[i]) == s.cpu_index) {
      const std::string why = declines[i].empty() ? std::string("no other EP registered")
                                                  : str(declines[i].size(), " EP(s) declined: ", declines[i].front().ep, ": ",
                                                        declines[i].front().code, ": ", declines[i].front().message);
      const_cast<SessionImpl&>(s).cpu_nodes.push_back(str(nd.label(), g.parent ? " (in subgraph '" + g.name + "')" : "", " - ", why));
    }
    if (region_of[i] >= 0) {
      node_alloc[i] = s.eps[node_ep[i]]->allocator();
      continue;
    }
    if (nd.domain == "onyx" && nd.op_type == "Copy") {
      const bool to_device = nd.attr_string("to") != "cpu";
      node_alloc[i] = to_device ? s.eps[node_ep[i]]->allocator() : nullptr;
      kernels[i] = s.eps[node_ep[i]]->create_copy_kernel(to_device);
      continue;
    }
    node_alloc[i] = s.eps[node_ep[i]]->allocator();
    std::vector<const TypeInfo*> in_types, out_types;
    std::vector<const Tensor*> constants;
    for (int v : nd.inputs) {
      in_types.push_back(v >= 0 ? &g.values[v].type : nullptr);
      const bool constant = v >= 0 && g.values[v].has_initializer && !g.values[v].is_graph_input;
      constants.push_back(constant ? &g.values[v].initializer : nullptr);
    }
    for (int v : nd.outputs) out_types.push_back(v >= 0 ? &g.values[v].type : nullptr);
    KernelCreateInfo info{nd, g, in_types, out_types, constants, prepare_subgraph, s.pool->num_threads()};
    try {
      kernels[i] = s.eps[node_ep[i]]->create_kernel(info);
    } catch (const Error& e) {
      throw Error(e.code(), str("preparing ", nd.label(), " on ", s.eps[node_ep[i]]->name(), ": ", e.what()));
    }
  }
  // Regions: compile each into one kernel, stored at its first node.
  for (const auto& reg : part.regions) {
    region_nodes.push_back(reg.nodes);
    region_ep.push_back(reg.ep);
    std::vector<char> in_region(n, 0);
    for (int i : reg.nodes) in_region[i] = 1;
    std::vector<char> produced(nv, 0), read_outside(nv, 0);
    for (size_t i = 0; i < n; ++i) {
      if (in_region[i]) continue;
      for (int v : g.nodes[i].inputs)
        if (v >= 0) read_outside[v] = 1;
      for (int v : g.nodes[i].implicit_inputs) read_outside[v] = 1;
    }
    RegionInfo info{g, reg.nodes, {}, {}, {}, s.pool.get()};
    for (int i : reg.nodes)
      for (int v : g.nodes[i].outputs)
        if (v >= 0) produced[v] = 1;
    std::vector<char> seen(nv, 0);
    for (int i : reg.nodes) {
      auto reads = g.nodes[i].inputs;
      reads.insert(reads.end(), g.nodes[i].implicit_inputs.begin(), g.nodes[i].implicit_inputs.end());
      for (int v : reads)
        if (v >= 0 && !produced[v] && !seen[v]) {
          seen[v] = 1;
          info.inputs.push_back(v);
        }
      for (int v : g.nodes[i].outputs) {
        if (v < 0) continue;
        (read_outside[v] || keep[v] ? info.outputs : info.internal).push_back(v);
      }
    }
    const ExecutionProvider& ep = *s.eps[reg.ep];
    try {
      kernels[reg.nodes.front()] = ep.compile_region(info);
    } catch (const Error& e) {
      throw Error(e.code(), str("compiling a region of ", reg.nodes.size(), " nodes (first: ", g.nodes[reg.nodes.front()].label(),
                                ") on ", ep.name(), ": ", e.what()));
    }
  }

  // Liveness for dynamic execution: drop node-produced values after their last reader.
  std::vector<int> last(nv, -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int v : g.nodes[i].inputs)
      if (v >= 0) last[v] = static_cast<int>(i);
    for (int v : g.nodes[i].implicit_inputs) last[v] = static_cast<int>(i);
  }
  release_after.resize(g.nodes.size());
  for (size_t v = 0; v < nv; ++v) {
    const int p = g.values[v].producer;
    if (p < 0 || keep[v]) continue;
    release_after[std::max(last[v], p)].push_back(static_cast<int>(v));
  }
}

// ---------------------------------------------------------------------------------------------
// SessionImpl

IoInfo io_info(const ValueSlot& slot, const TypeInfo& type, const SymbolTable& symbols) {
  IoInfo info;
  info.name = slot.name;
  info.type_string = type.to_string();
  info.onnx_type = type.onnx_name();
  switch (type.kind) {
    case TypeInfo::Kind::kSequence: info.kind = Value::Kind::kSequence; break;
    case TypeInfo::Kind::kOptional: info.kind = Value::Kind::kOptional; break;
    case TypeInfo::Kind::kMap: info.kind = Value::Kind::kMap; break;
    default: info.kind = Value::Kind::kTensor;
  }
  info.dtype = type.elem_dtype();
  const TypeInfo* t = &type;
  while (t->elem && !t->is_tensor()) t = t->elem.get();
  if (t->is_tensor() && t->has_shape) {
    info.has_shape = true;
    std::string s = std::string(dtype_name(t->dtype)) + "[";
    for (size_t k = 0; k < t->shape.size(); ++k) {
      const int64_t d = t->shape[k];
      info.shape.push_back(d >= 0 ? d : -1);
      info.dim_names.push_back(d >= 0 ? std::string() : symbols.name(d));
      s += (k ? "," : "") + symbols.describe(d);
    }
    if (type.is_tensor()) info.type_string = s + "]";
  }
  info.has_default = slot.has_initializer;
  return info;
}

void SessionImpl::register_eps() {
  struct Request {
    const ep::ExecutionProviderDispatch* d;
    EpRegistration::Source source;
  };
  const std::vector<ep::ExecutionProviderDispatch> env = options.environment_eps ? environment_eps()
                                                                                 : std::vector<ep::ExecutionProviderDispatch>{};
  std::vector<Request> requests;
  for (const auto& d : options.eps) requests.push_back({&d, EpRegistration::Source::kSession});
  for (const auto& d : env) requests.push_back({&d, EpRegistration::Source::kEnvironment});
  auto source_name = [](EpRegistration::Source src) { return src == EpRegistration::Source::kSession ? "session" : "environment"; };
  for (size_t r = 0; r < requests.size(); ++r) {
    const ep::ExecutionProviderDispatch& d = *requests[r].d;
    EpRegistration rec;
    rec.name = d.name();
    rec.source = requests[r].source;
    rec.error_on_failure = d.fails_on_error();
    for (size_t p = 0; p < r; ++p)
      if (requests[p].d->name() == d.name()) {
        rec.outcome = EpRegistration::Outcome::kDuplicate;
        rec.reason = str("already requested at position ", p, " (", source_name(requests[p].source), "); the first request keeps its priority");
        break;
      }
    if (rec.outcome == EpRegistration::Outcome::kDuplicate) {
      registration.push_back(std::move(rec));
      continue;
    }
    bool bad_option = false;
    try {
      std::string module_path;
      for (const auto& [k, v] : d.options())
        if (k == "module_path") module_path = v;
      ep::Availability a;
      const EpFactory* f = resolve_factory(d.name(), module_path, &a);
      if (!f) fail(ErrorCode::kNotAvailable, a.reason);
      // The options are checked as soon as the EP's schema is known, before its device: an
      // unknown key or a malformed value is a mistake in the program, not a machine without the
      // EP, so it is an error with or without error_on_failure.
      bad_option = true;
      const OptionList opts = effective_options(d.name(), f->options(), d.options());
      bad_option = false;
      std::string reason;
      if (!f->probe(&reason)) fail(ErrorCode::kNotAvailable, "no usable device: ", reason);
      EpCreateContext ctx{opts, pool->num_threads(), pool.get()};
      std::unique_ptr<ExecutionProvider> instance = f->create(ctx);
      rec.outcome = EpRegistration::Outcome::kRegistered;
      rec.priority = static_cast<int>(eps.size());
      rec.version = f->version();
      rec.device = instance->device();
      rec.module = a.module;
      rec.options = opts;
      if (d.name() == "cpu") {
        cpu_listed = true;
        cpu_index = eps.size();
      }
      eps.push_back(std::move(instance));
    } catch (const Error& e) {
      if (bad_option) throw;
      if (d.fails_on_error())
        throw Error(e.code(), str("execution provider '", d.name(), "' (requested by the ", source_name(rec.source),
                                  " with error_on_failure) could not be registered: ", e.what()));
      rec.outcome = EpRegistration::Outcome::kSkipped;
      rec.reason = e.what();
      log_message(LogLevel::kWarning, str("execution provider '", d.name(), "' skipped: ", e.what()));
    }
    registration.push_back(std::move(rec));
  }
  if (!cpu_listed) {
    EpRegistration rec;
    rec.name = "cpu";
    rec.source = EpRegistration::Source::kImplicit;
    rec.outcome = EpRegistration::Outcome::kRegistered;
    rec.priority = static_cast<int>(eps.size());
    rec.version = onyx::version();
    rec.device = "cpu:0";
    cpu_index = eps.size();
    eps.push_back(create_cpu_provider());
    registration.push_back(std::move(rec));
  } else if (!options.cpu_fallback) {
    fail(ErrorCode::kInvalidArgument, "with_cpu_fallback(false) cannot be combined with registering the CPU EP explicitly");
  }
}

void SessionImpl::apply_dimension_overrides() {
  Graph& g = *model->graph;
  const SymbolTable& symbols = *model->symbols;
  // One dim of one input (with_input_dimension): the input must exist, the axis be in its rank,
  // and a dim the model fixes keep its value. Checked against the inputs as the model declares them.
  for (const auto& o : options.input_dim_overrides) {
    int id = -1;
    std::vector<std::string> names;
    for (int in : g.inputs) {
      names.push_back("'" + g.values[in].name + "'");
      if (g.values[in].name == o.input) id = in;
    }
    if (id < 0)
      fail(ErrorCode::kInvalidArgument, model->path, ": with_input_dimension: the model has no input named '", o.input,
           "' (inputs: ", names.empty() ? std::string("none") : join(names, ", "), ")");
    TypeInfo& t = g.values[id].type;
    const std::string declared = io_info(g.values[id], t, symbols).type_string;
    if (!t.is_tensor() || !t.has_shape)
      fail(ErrorCode::kInvalidArgument, model->path, ": with_input_dimension: input '", o.input, "' (", declared,
           ") has no declared shape to set a dim of");
    if (o.axis >= t.shape.size())
      fail(ErrorCode::kInvalidArgument, model->path, ": with_input_dimension: input '", o.input, "' (", declared, ") has rank ",
           t.shape.size(), ", so it has no dim ", o.axis);
    if (t.shape[o.axis] >= 0 && t.shape[o.axis] != o.value)
      fail(ErrorCode::kInvalidArgument, model->path, ": with_input_dimension: dim ", o.axis, " of input '", o.input, "' (",
           declared, ") is fixed at ", t.shape[o.axis], " by the model, not ", o.value);
  }
  // Named dims (with_dimension_override) on every input that has them. A name no input has changes
  // nothing (as in ONNX Runtime) but is logged: it is most often a typo.
  std::vector<std::string> named;
  for (int in : g.inputs) {
    const TypeInfo& t = g.values[in].type;
    if (!t.is_tensor() || !t.has_shape) continue;
    for (int64_t d : t.shape) {
      const std::string name = symbols.name(d);
      if (!name.empty() && std::find(named.begin(), named.end(), name) == named.end()) named.push_back(name);
    }
  }
  for (const auto& [k, v] : options.dim_overrides)
    if (std::find(named.begin(), named.end(), k) == named.end())
      log_message(LogLevel::kWarning, str(model->path, ": with_dimension_override: no input has a dim named '", k, "' (",
                                          named.empty() ? std::string("the inputs have no named dims") : "named dims: " + join(named, ", "),
                                          ")"));
  for (int in : g.inputs) {
    TypeInfo& t = g.values[in].type;
    if (!t.is_tensor() || !t.has_shape) continue;
    for (auto& d : t.shape) {
      if (d >= 0) continue;
      const std::string name = symbols.name(d);
      for (auto& [k, v] : options.dim_overrides)
        if (!name.empty() && k == name) d = v;
    }
  }
  for (const auto& o : options.input_dim_overrides)
    for (int in : g.inputs)
      if (g.values[in].name == o.input) g.values[in].type.shape[o.axis] = o.value;
}

SessionImpl::SessionImpl(std::shared_ptr<Model> m, const SessionBuilder::Options& o) : model(std::move(m)), options(o) {
  const int threads = options.threads > 0 ? options.threads : hardware_threads();
  pool = std::make_unique<ThreadPool>(threads, options.spinning ? PoolSpin::kBounded : PoolSpin::kNever);
  if (options.memory_limit > 0) budget = std::make_shared<MemoryBudget>(options.memory_limit);
  register_eps();

  Graph& g = *model->graph;
  SymbolTable& symbols = *model->symbols;
  apply_dimension_overrides();
  for (int out : g.outputs) declared_output_types.push_back(g.values[out].type);
  {
    std::map<std::string, int64_t> counts;
    for (const Node& n : g.nodes) counts[n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type]++;
    original_op_counts.assign(counts.begin(), counts.end());
  }
  for (int in : g.inputs)
    if (g.values[in].type.kind == TypeInfo::Kind::kUnknown && !g.values[in].has_initializer)
      fail(ErrorCode::kInvalidModel, model->path, ": graph input '", g.values[in].name, "' has no type");

  // The first pass sees the nodes as loaded and checks their input element types against the
  // schemas' type constraints (as ONNX Runtime does); the optimizer's forms are onyx's own.
  auto infer_all = [&](bool check_types) {
    GraphFacts facts = entry_facts(g, nullptr, false);
    InferOptions io;
    io.write_back = true;
    io.check_types = check_types;
    infer_graph(g, facts, symbols, io);
  };
  infer_all(true);
  PassContext pass;
  pass.evaluate = [this](const Graph& gg, size_t i, std::vector<Value>& outs) { return evaluate_constant_node(gg, i, outs); };
  auto claims = [this, &g](size_t e, const Node& n) {
    ClaimInfo c{n, g, {}, {}};
    for (int v : n.inputs) c.input_types.push_back(v >= 0 ? &g.values[v].type : nullptr);
    for (int v : n.outputs) c.output_types.push_back(v >= 0 ? &g.values[v].type : nullptr);
    Decline why;
    return eps[e]->claim(c, &why);
  };
  auto first_claimer = [this, claims](const Node& n) -> size_t {
    for (size_t e = 0; e < eps.size(); ++e)
      if (claims(e, n)) return e;
    return eps.size();
  };
  // A fusion never moves work to another EP: the EP that would take every replaced node must
  // take the fused node too. Compiling EPs (oneDNN, XNNPACK) see the nodes as written and fuse
  // inside their regions, except for the QDQ fusion's 8-bit ops: QLinearConv is the form of a
  // DequantizeLinear -> Conv -> QuantizeLinear group that such an EP's claim can judge.
  auto group_rule = [this, claims, first_claimer](bool compiling_eps_too) {
    return [this, claims, first_claimer, compiling_eps_too](std::span<const Node* const> members, const Node& fused) {
      if (members.empty()) return false;
      const size_t e0 = first_claimer(*members[0]);
      if (e0 == eps.size() || (!compiling_eps_too && eps[e0]->compiles_regions())) return false;
      for (const Node* n : members.subspan(1))
        if (first_claimer(*n) != e0) return false;
      return claims(e0, fused);
    };
  };
  pass.may_fuse_group = group_rule(false);
  pass.may_quantize_group = group_rule(true);
  // Likewise a node goes channels-last only for the EP that would run it, if that EP prefers
  // channels-last and takes the channels-last form.
  pass.may_use_channels_last = [this, claims, first_claimer](const Node& node, const Node& form) {
    const size_t e0 = first_claimer(node);
    if (e0 == eps.size() || eps[e0]->compiles_regions() || eps[e0]->preferred_layout() != DataLayout::kChannelsLast) return false;
    return claims(e0, form);
  };
  // And a float16 / bfloat16 node runs as its float32 form only for an EP that asks for that and
  // takes the form: the EP that takes the node as written, or, where none does (an op with float32
  // kernels only, such as most com.microsoft ones), the first EP that takes its float32 form.
  pass.may_compute_in_float = [this, claims, first_claimer](const Node& node, const Node& float_form) {
    const size_t e0 = first_claimer(node);
    auto takes = [&](size_t e) { return !eps[e]->compiles_regions() && eps[e]->computes_half_in_float() && claims(e, float_form); };
    if (e0 < eps.size()) return takes(e0);
    for (size_t e = 0; e < eps.size(); ++e)
      if (takes(e)) return true;
    return false;
  };
  if (optimize_graph(g, options.level, pass) > 0) infer_all(false);
  optimizer_log = std::move(pass.log);
  if (log_enabled(LogLevel::kVerbose))
    for (const auto& line : optimizer_log) log_message(LogLevel::kVerbose, "optimizer: " + line);
  if (!options.optimized_model_file.empty()) save_model(options.optimized_model_file, *model, g, symbols);

  main = std::make_shared<GraphRunner>(*this, g, nullptr);
  input_pos.assign(g.values.size(), -1);
  for (size_t k = 0; k < g.inputs.size(); ++k) input_pos[g.inputs[k]] = static_cast<int>(k);
  output_pos.assign(g.values.size(), -1);
  for (size_t k = 0; k < g.outputs.size(); ++k)
    if (output_pos[g.outputs[k]] < 0) output_pos[g.outputs[k]] = static_cast<int>(k);

  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const ValueSlot& s = g.values[g.inputs[k]];
    inputs.push_back(io_info(s, s.type, symbols));
    if (!s.has_initializer) required_inputs.push_back(k);
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const ValueSlot& s = g.values[g.outputs[k]];
    const TypeInfo& declared = declared_output_types[k];
    const bool use_declared = declared.kind != TypeInfo::Kind::kUnknown &&
                              (!declared.is_tensor() || declared.has_shape || !s.type.has_shape);
    outputs.push_back(io_info(s, use_declared ? declared : s.type, symbols));
  }
  if (!options.cpu_fallback && !cpu_nodes.empty()) {
    std::vector<std::string> shown(cpu_nodes.begin(), cpu_nodes.begin() + std::min<size_t>(cpu_nodes.size(), 20));
    fail(ErrorCode::kEpFailure, model->path, ": CPU fallback is disabled but ", cpu_nodes.size(),
         " node(s) would run on the CPU EP: ", join(shown, "; "), cpu_nodes.size() > 20 ? "; ..." : "");
  }
  if (log_enabled(LogLevel::kInfo)) log_message(LogLevel::kInfo, str(model->path, ": ", placement_summary()));
}

std::string SessionImpl::placement_summary() const {
  std::vector<std::string> parts;
  for (size_t e = 0; e < eps.size(); ++e) {
    int count = 0, declined = 0;
    for (size_t i = 0; i < main->node_ep.size(); ++i)
      if (static_cast<size_t>(main->node_ep[i]) == e) {
        ++count;
        declined += !main->declines[i].empty();
      }
    if (!count) continue;
    std::string part = str(eps[e]->name(), ": ", count, " node", count == 1 ? "" : "s");
    size_t regions = 0;
    for (int re : main->region_ep) regions += static_cast<size_t>(re) == e;
    if (regions) part += str(" in ", regions, " region", regions == 1 ? "" : "s");
    if (declined) part += str(" (", declined, " declined by higher-priority EPs)");
    parts.push_back(part);
  }
  return join(parts, "; ") + str("; ", main->copies.size(), " cop", main->copies.size() == 1 ? "y" : "ies");
}

SessionImpl::~SessionImpl() = default;

bool SessionImpl::evaluate_constant_node(const Graph& g, size_t index, std::vector<Value>& outputs) const {
  constexpr int64_t kMaxFoldElements = int64_t(1) << 24;
  const Node& n = g.nodes[index];
  static const char* const kRandom[] = {"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike",
                                        "Bernoulli", "Multinomial", "Dropout"};
  for (const char* r : kRandom)
    if (n.domain.empty() && n.op_type == r) return false;
  std::vector<const TypeInfo*> in_types, out_types;
  std::vector<const Tensor*> constants;
  for (int v : n.inputs) {
    in_types.push_back(v >= 0 ? &g.values[v].type : nullptr);
    constants.push_back(v >= 0 ? &g.values[v].initializer : nullptr);
  }
  for (int v : n.outputs) {
    if (v < 0) {
      out_types.push_back(nullptr);
      continue;
    }
    const TypeInfo& t = g.values[v].type;
    if (!t.is_tensor() || (t.has_shape && t.shape.is_concrete() && t.shape.numel() > kMaxFoldElements)) return false;
    out_types.push_back(&t);
  }
  const ExecutionProvider& cpu = *eps[cpu_index];
  Decline why;
  if (!cpu.claim(ClaimInfo{n, g, in_types, out_types}, &why)) return false;
  KernelCreateInfo info{n, g, in_types, out_types, constants, {}, 1};
  std::unique_ptr<Kernel> kernel = cpu.create_kernel(info);
  std::vector<Value> frame(g.values.size());
  for (int v : n.inputs)
    if (v >= 0) frame[v] = Value(g.values[v].initializer);
  const OpSchema* schema = find_schema(n.domain, n.op_type);
  if (!schema) return false;
  if (!prepare_outputs(n, *schema, *kernel, nullptr, frame)) {
    KernelContext kc(n, frame.data(), *pool, nullptr);
    kernel->compute(kc);
  }
  outputs.clear();
  for (int v : n.outputs) {
    if (v < 0) {
      outputs.emplace_back();
      continue;
    }
    if (!frame[v].is_tensor() || frame[v].tensor().numel() > kMaxFoldElements) return false;
    outputs.push_back(frame[v]);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Public API

SessionBuilder::SessionBuilder() : options_(std::make_unique<Options>()) {}
SessionBuilder::~SessionBuilder() = default;
SessionBuilder::SessionBuilder(const SessionBuilder& o) : options_(std::make_unique<Options>(*o.options_)) {}
SessionBuilder& SessionBuilder::operator=(const SessionBuilder& o) {
  options_ = std::make_unique<Options>(*o.options_);
  return *this;
}

SessionBuilder& SessionBuilder::with_intra_threads(int n) {
  if (n < 0) fail(ErrorCode::kInvalidArgument, "with_intra_threads: thread count must be >= 0, got ", n);
  options_->threads = n;
  return *this;
}

SessionBuilder& SessionBuilder::with_intra_op_spinning(bool allowed) {
  options_->spinning = allowed;
  return *this;
}

SessionBuilder& SessionBuilder::with_optimized_model_file(std::string path) {
  options_->optimized_model_file = std::move(path);
  return *this;
}

SessionBuilder& SessionBuilder::with_memory_limit(uint64_t bytes) {
  options_->memory_limit = bytes;
  return *this;
}

SessionBuilder& SessionBuilder::with_optimization_level(GraphOptimizationLevel level) {
  options_->level = level;
  return *this;
}

SessionBuilder& SessionBuilder::with_dimension_override(std::string name, int64_t value) {
  if (value < 0) fail(ErrorCode::kInvalidArgument, "with_dimension_override: '", name, "' must be >= 0, got ", value);
  options_->dim_overrides.emplace_back(std::move(name), value);
  return *this;
}

SessionBuilder& SessionBuilder::with_input_dimension(std::string input, size_t axis, int64_t value) {
  if (value < 0)
    fail(ErrorCode::kInvalidArgument, "with_input_dimension: dim ", axis, " of input '", input, "' must be >= 0, got ", value);
  options_->input_dim_overrides.push_back({std::move(input), axis, value});
  return *this;
}

SessionBuilder& SessionBuilder::with_external_data_dir(std::string dir) {
  options_->external_dir = std::move(dir);
  return *this;
}

SessionBuilder& SessionBuilder::with_execution_providers(std::vector<ep::ExecutionProviderDispatch> eps) {
  for (auto& e : eps) options_->eps.push_back(std::move(e));
  return *this;
}

SessionBuilder& SessionBuilder::add_execution_provider(ep::ExecutionProviderDispatch ep) {
  options_->eps.push_back(std::move(ep));
  return *this;
}

SessionBuilder& SessionBuilder::with_no_environment_execution_providers() {
  options_->environment_eps = false;
  return *this;
}

SessionBuilder& SessionBuilder::with_cpu_fallback(bool allowed) {
  options_->cpu_fallback = allowed;
  return *this;
}

namespace {
/// Runs f, turning a failure that is not an onyx::Error (an allocation failure above all: a model
/// can ask for more memory than the machine has) into one that says what was being done.
template <class F>
decltype(auto) onyx_errors_only(const char* doing, F&& f) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    fail(ErrorCode::kRuntime, doing, ": out of memory");
  } catch (const std::exception& e) {
    fail(ErrorCode::kRuntime, doing, ": ", e.what());
  }
}
}  // namespace

Session SessionBuilder::commit_from_file(const std::string& path) const {
  return onyx_errors_only(
      "loading the model", [&] { return Session(std::make_shared<SessionImpl>(load_model_file(path), *options_)); });
}

Session SessionBuilder::commit_from_memory(const void* data, size_t size) const {
  return onyx_errors_only("loading the model", [&] {
    return Session(std::make_shared<SessionImpl>(load_model_memory(data, size, options_->external_dir), *options_));
  });
}

const std::vector<IoInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<IoInfo>& Session::outputs() const { return impl_->outputs; }

std::vector<std::pair<std::string, int64_t>> Session::opsets() const {
  std::vector<std::pair<std::string, int64_t>> r;
  for (auto& [d, v] : impl_->model->opsets) r.emplace_back(d.empty() ? "ai.onnx" : d, v);
  return r;
}

std::vector<std::pair<std::string, int64_t>> Session::op_counts() const { return impl_->original_op_counts; }

int64_t Session::ir_version() const { return impl_->model->ir_version; }

std::string Session::producer() const {
  const Model& m = *impl_->model;
  return m.producer_version.empty() ? m.producer_name : m.producer_name + " " + m.producer_version;
}

std::string_view registration_source_name(EpRegistration::Source source) {
  switch (source) {
    case EpRegistration::Source::kSession: return "session";
    case EpRegistration::Source::kEnvironment: return "environment";
    default: return "implicit";
  }
}

std::string_view registration_outcome_name(EpRegistration::Outcome outcome) {
  switch (outcome) {
    case EpRegistration::Outcome::kRegistered: return "registered";
    case EpRegistration::Outcome::kDuplicate: return "duplicate";
    default: return "skipped";
  }
}

ModelMetadata Session::metadata() const {
  const Model& m = *impl_->model;
  ModelMetadata md;
  md.producer_name = m.producer_name;
  md.producer_version = m.producer_version;
  md.domain = m.domain;
  md.model_version = m.has_model_version ? m.model_version : std::numeric_limits<int64_t>::max();
  md.doc_string = m.doc_string;
  if (m.graph) {
    md.graph_name = m.graph->name;
    md.graph_doc_string = m.graph->doc_string;
  }
  md.custom = m.metadata;
  return md;
}

Placement Session::placement() const {
  Placement p;
  const GraphRunner& g = *impl_->main;
  for (size_t i = 0; i < g.graph.nodes.size(); ++i) {
    const Node& n = g.graph.nodes[i];
    const auto& ep = impl_->eps[g.node_ep[i]];
    p.nodes.push_back({n.name.empty() ? str("#", i) : n.name, n.op_type, ep->name(), ep->device(), g.region_of[i], g.declines[i], n.domain});
  }
  p.copies = g.copies;
  p.summary = impl_->placement_summary();
  return p;
}

const std::vector<EpRegistration>& Session::registration() const { return impl_->registration; }

Binding::Binding(const Session& session) : session_(session.impl()) {
  inputs_.resize(session_->inputs.size());
  output_buffers_.resize(session_->outputs.size());
}

void Binding::bind_input(size_t index, Value value) {
  if (index >= inputs_.size())
    fail(ErrorCode::kInvalidArgument, "input index ", index, " is out of range: the model has ", inputs_.size(), " inputs");
  inputs_[index] = std::move(value);
}

void Binding::bind_input(std::string_view name, Value value) {
  for (size_t i = 0; i < session_->inputs.size(); ++i)
    if (session_->inputs[i].name == name) return bind_input(i, std::move(value));
  std::vector<std::string> names;
  for (auto& in : session_->inputs) names.push_back("'" + in.name + "'");
  fail(ErrorCode::kInvalidArgument, "the model has no input named '", name, "' (inputs: ", join(names, ", "), ")");
}

void Binding::unbind_input(size_t index) {
  if (index < inputs_.size()) inputs_[index] = Value();
}

void Binding::bind_output(std::string_view name, Tensor buffer) {
  for (size_t i = 0; i < session_->outputs.size(); ++i)
    if (session_->outputs[i].name == name) {
      output_buffers_[i] = std::move(buffer);
      return;
    }
  fail(ErrorCode::kInvalidArgument, "the model has no output named '", name, "'");
}

const Value& Binding::output(std::string_view name) const {
  for (size_t i = 0; i < session_->outputs.size(); ++i)
    if (session_->outputs[i].name == name) {
      if (i >= outputs_.size()) fail(ErrorCode::kInvalidArgument, "output '", name, "' is not available: run first");
      return outputs_[i];
    }
  fail(ErrorCode::kInvalidArgument, "the model has no output named '", name, "'");
}

void Session::run(Binding& binding) const {
  // No RunOptions here: making one allocates its flag, and a bound run allocates nothing.
  if (binding.session_ != impl_) fail(ErrorCode::kInvalidArgument, "the binding belongs to another session");
  onyx_errors_only("running the model", [&] { impl_->run(binding, nullptr); });
}

void Session::run(Binding& binding, const RunOptions& options) const {
  if (binding.session_ != impl_) fail(ErrorCode::kInvalidArgument, "the binding belongs to another session");
  onyx_errors_only("running the model", [&] { impl_->run(binding, options.flag()); });
}

std::vector<Value> Session::run(const std::vector<std::pair<std::string, Value>>& inputs) const {
  Binding b(*this);
  for (const auto& [name, v] : inputs) b.bind_input(name, v);
  run(b);
  return std::move(b.outputs_);
}

std::vector<Value> Session::run(const std::vector<std::pair<std::string, Value>>& inputs,
                                const RunOptions& options) const {
  Binding b(*this);
  for (const auto& [name, v] : inputs) b.bind_input(name, v);
  run(b, options);
  return std::move(b.outputs_);
}

std::vector<Value> Session::run(const std::vector<std::pair<std::string, Value>>& inputs,
                                const std::vector<std::string>& output_names) const {
  Binding b(*this);
  for (const auto& [name, v] : inputs) b.bind_input(name, v);
  run(b);
  std::vector<Value> r;
  for (const auto& n : output_names) r.push_back(b.output(n));
  return r;
}

std::vector<Value> Session::run(const std::vector<std::pair<std::string, Value>>& inputs,
                                const std::vector<std::string>& output_names, const RunOptions& options) const {
  Binding b(*this);
  for (const auto& [name, v] : inputs) b.bind_input(name, v);
  run(b, options);
  std::vector<Value> r;
  for (const auto& n : output_names) r.push_back(b.output(n));
  return r;
}

size_t Session::plan_count() const {
  std::shared_lock<std::shared_mutex> lock(impl_->plans_mu_);
  return impl_->plans_.size();
}

}  // namespace onyx
