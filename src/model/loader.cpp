#include "model/loader.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "model/mapped_file.hpp"
#include "model/proto.hpp"
#include "model/tensor_proto.hpp"
#include "model/validate.hpp"

namespace onyx {
namespace {

constexpr int kMaxGraphDepth = 64;

struct RawGraph;

struct RawAttr {
  Attribute attr;
  std::vector<std::shared_ptr<RawGraph>> graphs;  // for kGraph / kGraphs
};

struct RawNode {
  std::string name, op_type, domain, overload;
  std::vector<std::string> inputs, outputs;
  std::vector<RawAttr> attrs;
  /// Nodes inlined from a model-local function: the opsets the function imports (they take
  /// precedence over the model's for this node's domain).
  std::shared_ptr<const std::map<std::string, int64_t>> function_opsets;
};

struct RawValueInfo {
  std::string name;
  TypeInfo type;
  bool has_type = false;
};

struct RawGraph {
  std::string name, doc_string;
  std::vector<RawNode> nodes;
  std::vector<std::pair<std::string, Tensor>> initializers;
  std::vector<RawValueInfo> inputs, outputs, value_info;
};

/// A model-local function (ModelProto.functions): a named graph fragment that nodes call like an
/// operator of the function's domain. onyx inlines every call at load time.
struct RawFunction {
  std::string name, domain, overload;
  std::vector<std::string> inputs, outputs;
  std::vector<std::string> attributes;  // attribute names without a default
  std::vector<RawAttr> attribute_defaults;
  std::vector<RawNode> nodes;
  std::shared_ptr<std::map<std::string, int64_t>> opsets = std::make_shared<std::map<std::string, int64_t>>();
};

class Parser {
 public:
  Parser(std::shared_ptr<MappedFile> file, std::string base_dir, SymbolTable& symbols)
      : file_(std::move(file)), symbols_(symbols) {
    src_.file = file_;
    src_.base_dir = std::move(base_dir);
  }

  ProtoReader root() const {
    return ProtoReader(file_->data(), file_->data() + file_->size(), file_->data(), file_->path(), "ModelProto");
  }
  const TensorSource& source() const { return src_; }

  RawValueInfo value_info(ProtoReader r) {
    RawValueInfo v;
    while (r.next()) {
      if (r.field() == 1) {
        r.expect(WireType::kBytes);
        v.name = r.string();
      } else if (r.field() == 2) {
        r.expect(WireType::kBytes);
        v.type = parse_type_proto(r.message("TypeProto"), symbols_);
        v.has_type = true;
      } else {
        r.skip();
      }
    }
    return v;
  }

  RawAttr attribute(ProtoReader r, int depth) {
    RawAttr ra;
    Attribute& a = ra.attr;
    bool typed = false;
    AttrType seen = AttrType::kUndefined;
    while (r.next()) {
      switch (r.field()) {
        case 1: r.expect(WireType::kBytes); a.name = r.string(); break;
        case 2: r.expect(WireType::kFixed32); a.f = r.float32(); seen = AttrType::kFloat; break;
        case 3: r.expect(WireType::kVarint); a.i = r.int64(); seen = AttrType::kInt; break;
        case 4: r.expect(WireType::kBytes); a.s = r.string(); seen = AttrType::kString; break;
        case 5: r.expect(WireType::kBytes); a.t = parse_tensor_proto(r.message("AttributeProto.t"), src_, nullptr); seen = AttrType::kTensor; break;
        case 6: r.expect(WireType::kBytes); ra.graphs.push_back(graph(r.message("GraphProto"), depth + 1)); seen = AttrType::kGraph; break;
        case 7: r.repeated_float(a.floats); seen = AttrType::kFloats; break;
        case 8: r.repeated_int64(a.ints); seen = AttrType::kInts; break;
        case 9: r.expect(WireType::kBytes); a.strings.push_back(r.string()); seen = AttrType::kStrings; break;
        case 10: r.expect(WireType::kBytes); a.tensors.push_back(parse_tensor_proto(r.message("AttributeProto.tensors"), src_, nullptr)); seen = AttrType::kTensors; break;
        case 11: r.expect(WireType::kBytes); ra.graphs.push_back(graph(r.message("GraphProto"), depth + 1)); seen = AttrType::kGraphs; break;
        case 14: r.expect(WireType::kBytes); a.tp = parse_type_proto(r.message("TypeProto"), symbols_); seen = AttrType::kTypeProto; break;
        case 15: r.expect(WireType::kBytes); a.tps.push_back(parse_type_proto(r.message("TypeProto"), symbols_)); seen = AttrType::kTypeProtos; break;
        case 20: {
          r.expect(WireType::kVarint);
          const int64_t t = r.int64();
          if (t < 0 || t > 14) r.error(str("attribute '", a.name, "' has invalid type ", t));
          a.type = static_cast<AttrType>(t);
          typed = true;
          break;
        }
        case 21: r.expect(WireType::kBytes); a.ref_attr_name = r.string(); break;
        case 22: r.expect(WireType::kBytes); a.t = parse_sparse_tensor_proto(r.message("SparseTensorProto"), src_, nullptr); seen = AttrType::kSparseTensor; break;
        case 23: r.expect(WireType::kBytes); a.tensors.push_back(parse_sparse_tensor_proto(r.message("SparseTensorProto"), src_, nullptr)); seen = AttrType::kSparseTensors; break;
        default: r.skip();
      }
    }
    if (!typed) a.type = seen;  // very old models omit AttributeProto.type
    if (a.name.empty()) r.error("attribute without a name");
    if (a.type == AttrType::kGraph && ra.graphs.size() != 1) r.error(str("graph attribute '", a.name, "' has no graph"));
    return ra;
  }

  RawNode node(ProtoReader r, int depth) {
    RawNode n;
    while (r.next()) {
      switch (r.field()) {
        case 1: r.expect(WireType::kBytes); n.inputs.push_back(r.string()); break;
        case 2: r.expect(WireType::kBytes); n.outputs.push_back(r.string()); break;
        case 3: r.expect(WireType::kBytes); n.name = r.string(); break;
        case 4: r.expect(WireType::kBytes); n.op_type = r.string(); break;
        case 5: r.expect(WireType::kBytes); n.attrs.push_back(attribute(r.message("AttributeProto"), depth)); break;
        case 7: r.expect(WireType::kBytes); n.domain = r.string(); break;
        case 8: r.expect(WireType::kBytes); n.overload = r.string(); break;
        default: r.skip();
      }
    }
    if (n.op_type.empty()) r.error(str("node '", n.name, "' has no op_type"));
    return n;
  }

  RawFunction function(ProtoReader r) {
    RawFunction f;
    while (r.next()) {
      switch (r.field()) {
        case 1: r.expect(WireType::kBytes); f.name = r.string(); break;
        case 4: r.expect(WireType::kBytes); f.inputs.push_back(r.string()); break;
        case 5: r.expect(WireType::kBytes); f.outputs.push_back(r.string()); break;
        case 6: r.expect(WireType::kBytes); f.attributes.push_back(r.string()); break;
        case 7: r.expect(WireType::kBytes); f.nodes.push_back(node(r.message("NodeProto (function body)"), 1)); break;
        case 9: {
          r.expect(WireType::kBytes);
          ProtoReader o = r.message("OperatorSetIdProto (function)");
          std::string domain;
          int64_t version = 0;
          while (o.next()) {
            if (o.field() == 1) domain = o.string();
            else if (o.field() == 2) version = o.int64();
            else o.skip();
          }
          (*f.opsets)[std::string(canonical_domain(domain))] = version;
          break;
        }
        case 10: r.expect(WireType::kBytes); f.domain = r.string(); break;
        case 11: r.expect(WireType::kBytes); f.attribute_defaults.push_back(attribute(r.message("AttributeProto (function default)"), 1)); break;
        case 13: r.expect(WireType::kBytes); f.overload = r.string(); break;
        default: r.skip();
      }
    }
    if (f.name.empty()) r.error("a FunctionProto has no name");
    return f;
  }

  std::shared_ptr<RawGraph> graph(ProtoReader r, int depth) {
    if (depth > kMaxGraphDepth) r.error(str("subgraphs nested more than ", kMaxGraphDepth, " deep"));
    auto g = std::make_shared<RawGraph>();
    while (r.next()) {
      switch (r.field()) {
        case 1: r.expect(WireType::kBytes); g->nodes.push_back(node(r.message("NodeProto"), depth)); break;
        case 2: r.expect(WireType::kBytes); g->name = r.string(); break;
        case 10: r.expect(WireType::kBytes); g->doc_string = r.string(); break;
        case 5: {
          r.expect(WireType::kBytes);
          std::string name;
          Tensor t = parse_tensor_proto(r.message("TensorProto (initializer)"), src_, &name);
          g->initializers.emplace_back(std::move(name), std::move(t));
          break;
        }
        case 15: {
          r.expect(WireType::kBytes);
          std::string name;
          Tensor t = parse_sparse_tensor_proto(r.message("SparseTensorProto (sparse_initializer)"), src_, &name);
          g->initializers.emplace_back(std::move(name), std::move(t));
          break;
        }
        case 11: r.expect(WireType::kBytes); g->inputs.push_back(value_info(r.message("ValueInfoProto (input)"))); break;
        case 12: r.expect(WireType::kBytes); g->outputs.push_back(value_info(r.message("ValueInfoProto (output)"))); break;
        case 13: r.expect(WireType::kBytes); g->value_info.push_back(value_info(r.message("ValueInfoProto (value_info)"))); break;
        default: r.skip();
      }
    }
    return g;
  }

 private:
  std::shared_ptr<MappedFile> file_;
  TensorSource src_;
  SymbolTable& symbols_;
};

/// Inlines every call of a model-local function, in a graph and its subgraphs: the call node is
/// replaced by the function's body, with the formal inputs and outputs renamed to the call's
/// actual names, every value defined inside the body given a name unique to the call, and
/// attributes that refer to the caller's (ref_attr_name) replaced by the caller's value or the
/// function's default, or dropped when neither exists.
class FunctionInliner {
 public:
  FunctionInliner(const std::vector<RawFunction>& functions, std::string file) : file_(std::move(file)) {
    for (const RawFunction& f : functions) {
      const auto key = std::make_tuple(std::string(canonical_domain(f.domain)), f.name, f.overload);
      if (!by_key_.emplace(key, &f).second)
        fail(ErrorCode::kInvalidModel, file_, ": model-local function ", f.domain.empty() ? "" : f.domain + "::", f.name,
             " is defined more than once");
    }
  }
  bool empty() const { return by_key_.empty(); }

  void inline_graph(RawGraph& g, int depth = 0) {
    std::vector<RawNode> out;
    out.reserve(g.nodes.size());
    for (RawNode& n : g.nodes) expand(std::move(n), out, depth);
    g.nodes = std::move(out);
  }

 private:
  static constexpr int kMaxCallDepth = 32;
  static constexpr size_t kMaxInlinedNodes = 1000000;

  const RawFunction* find(const RawNode& n) const {
    auto it = by_key_.find(std::make_tuple(std::string(canonical_domain(n.domain)), n.op_type, n.overload));
    return it == by_key_.end() ? nullptr : it->second;
  }

  void expand(RawNode n, std::vector<RawNode>& out, int depth) {
    for (RawAttr& a : n.attrs)
      for (auto& sub : a.graphs) inline_graph(*sub, depth);
    const RawFunction* f = find(n);
    if (!f) {
      out.push_back(std::move(n));
      return;
    }
    const std::string where = str(file_, ": call of function ", f->name, " by node '", n.name, "'");
    if (depth >= kMaxCallDepth)
      fail(ErrorCode::kInvalidModel, where, ": functions call each other more than ", kMaxCallDepth, " deep (recursion?)");
    if (n.inputs.size() > f->inputs.size() || n.outputs.size() > f->outputs.size())
      fail(ErrorCode::kInvalidGraph, where, ": ", n.inputs.size(), " inputs and ", n.outputs.size(),
           " outputs given, the function has ", f->inputs.size(), " and ", f->outputs.size());
    std::map<std::string, std::string> rename;
    for (size_t i = 0; i < f->inputs.size(); ++i) rename[f->inputs[i]] = i < n.inputs.size() ? n.inputs[i] : "";
    for (size_t i = 0; i < f->outputs.size(); ++i) rename[f->outputs[i]] = i < n.outputs.size() ? n.outputs[i] : "";
    const std::string caller = n.name.empty() ? f->name : n.name;
    const std::string prefix = str(caller, "/", ++calls_, "/");  // unique per call: value names
    for (const RawNode& b : f->nodes)
      for (const auto& o : b.outputs)
        if (!o.empty() && !rename.count(o)) rename[o] = prefix + o;
    std::vector<RawNode> body;
    body.reserve(f->nodes.size());
    for (const RawNode& b : f->nodes) {
      RawNode c = b;
      c.name = caller + "/" + (b.name.empty() ? b.op_type : b.name);
      c.function_opsets = f->opsets;
      for (auto& i : c.inputs) i = renamed(rename, i);
      for (auto& o : c.outputs) o = renamed(rename, o);
      std::vector<RawAttr> attrs;
      for (const RawAttr& a : b.attrs) {
        if (a.attr.ref_attr_name.empty()) {
          attrs.push_back(a);
          continue;
        }
        const RawAttr* src = nullptr;
        for (const RawAttr& ca : n.attrs)
          if (ca.attr.name == a.attr.ref_attr_name) src = &ca;
        if (!src)
          for (const RawAttr& d : f->attribute_defaults)
            if (d.attr.name == a.attr.ref_attr_name) src = &d;
        if (!src) continue;  // neither given nor defaulted: the attribute is absent
        RawAttr r = *src;
        r.attr.name = a.attr.name;
        attrs.push_back(std::move(r));
      }
      c.attrs = std::move(attrs);
      for (RawAttr& a : c.attrs)
        for (auto& sub : a.graphs) {
          auto copy = std::make_shared<RawGraph>(*sub);
          rename_outer(*copy, rename);
          sub = copy;
        }
      body.push_back(std::move(c));
    }
    inlined_ += body.size();
    if (inlined_ > kMaxInlinedNodes)
      fail(ErrorCode::kInvalidModel, where, ": inlining model-local functions gives more than ", kMaxInlinedNodes, " nodes");
    // The body may call other functions.
    for (RawNode& b : body) expand(std::move(b), out, depth + 1);
  }

  static std::string renamed(const std::map<std::string, std::string>& m, const std::string& name) {
    if (name.empty()) return name;
    auto it = m.find(name);
    return it == m.end() ? name : it->second;
  }

  /// Renames, inside a subgraph of a body node, the names that refer to the body's values.
  static void rename_outer(RawGraph& g, const std::map<std::string, std::string>& m) {
    std::set<std::string> local;
    for (const auto& in : g.inputs) local.insert(in.name);
    for (const auto& [name, t] : g.initializers) local.insert(name);
    for (const RawNode& n : g.nodes)
      for (const auto& o : n.outputs) local.insert(o);
    auto fix = [&](std::string& name) {
      if (!local.count(name)) name = renamed(m, name);
    };
    for (RawNode& n : g.nodes) {
      for (auto& i : n.inputs) fix(i);
      for (RawAttr& a : n.attrs)
        for (auto& sub : a.graphs) {
          auto copy = std::make_shared<RawGraph>(*sub);
          rename_outer(*copy, m);
          sub = copy;
        }
    }
    for (auto& o : g.outputs) fix(o.name);
  }

  std::map<std::tuple<std::string, std::string, std::string>, const RawFunction*> by_key_;
  std::string file_;
  size_t calls_ = 0;
  size_t inlined_ = 0;
};

/// Builds IR graphs from raw ones, resolving names through scopes.
class Builder {
 public:
  Builder(const Model& model, std::string_view file) : model_(model), file_(file) {}

  std::shared_ptr<Graph> build(const RawGraph& rg, Graph* parent) {
    auto g = std::make_shared<Graph>();
    g->name = rg.name;
    g->doc_string = rg.doc_string;
    g->parent = parent;
    const std::string where = str(file_, ": graph '", rg.name, "'");
    auto define = [&](const std::string& name, const char* what) -> int {
      if (name.empty()) fail(ErrorCode::kInvalidGraph, where, ": ", what, " with an empty name");
      if (g->find(name) >= 0) fail(ErrorCode::kInvalidGraph, where, ": value '", name, "' is defined more than once");
      return g->add_value(name);
    };
    for (const auto& in : rg.inputs) {
      const int id = define(in.name, "input");
      g->values[id].is_graph_input = true;
      g->values[id].type = in.type;
      g->inputs.push_back(id);
    }
    for (const auto& [name, t] : rg.initializers) {
      int id = g->find(name);
      if (id >= 0 && (!g->values[id].is_graph_input || g->values[id].has_initializer))
        fail(ErrorCode::kInvalidGraph, where, ": initializer '", name, "' is defined more than once");
      if (id < 0) {
        id = define(name, "initializer");
        g->values[id].type = TypeInfo::tensor(t.dtype(), t.shape());
      }
      g->values[id].has_initializer = true;
      g->values[id].initializer = t;
    }
    g->nodes.resize(rg.nodes.size());
    for (size_t i = 0; i < rg.nodes.size(); ++i) {
      const RawNode& rn = rg.nodes[i];
      Node& n = g->nodes[i];
      n.name = rn.name;
      n.op_type = rn.op_type;
      n.domain = std::string(canonical_domain(rn.domain));
      for (const auto& o : rn.outputs) {
        if (o.empty()) {
          n.outputs.push_back(-1);
          continue;
        }
        const int id = define(o, "node output");
        g->values[id].producer = static_cast<int>(i);
        n.outputs.push_back(id);
      }
    }
    // Second phase: subgraphs (which may read any name of this graph) and node inputs.
    for (size_t i = 0; i < rg.nodes.size(); ++i) {
      const RawNode& rn = rg.nodes[i];
      Node& n = g->nodes[i];
      n.opset = static_cast<int>(opset_for(n, rn, where));
      std::set<int> implicit;
      for (const auto& ra : rn.attrs) {
        Attribute a = ra.attr;
        for (const auto& rsub : ra.graphs) {
          auto sub = build(*rsub, g.get());
          for (int ov : sub->outer_values()) implicit.insert(resolve(*g, sub->values[ov].name, where, &n));
          if (a.type == AttrType::kGraph)
            a.g = sub;
          else
            a.graphs.push_back(sub);
        }
        n.attrs.push_back(std::move(a));
      }
      for (const auto& in : rn.inputs) n.inputs.push_back(in.empty() ? -1 : resolve(*g, in, where, &n));
      n.implicit_inputs.assign(implicit.begin(), implicit.end());
    }
    for (const auto& out : rg.outputs) {
      const int id = resolve(*g, out.name, where, nullptr);
      g->outputs.push_back(id);
      if (out.has_type) merge_declared(g->values[id].type, out.type);
    }
    for (const auto& vi : rg.value_info) {
      const int id = g->find(vi.name);
      if (id >= 0 && vi.has_type && !g->values[id].has_initializer) merge_declared(g->values[id].type, vi.type);
    }
    validate_nodes(*g, where);  // arity and attributes against the schemas, in file order
    topo_sort(*g, where);
    return g;
  }

 private:
  static void merge_declared(TypeInfo& into, const TypeInfo& decl) {
    if (into.kind == TypeInfo::Kind::kUnknown) into = decl;
  }

  int64_t opset_for(const Node& n, const RawNode& rn, const std::string& where) const {
    if (rn.function_opsets) {
      auto f = rn.function_opsets->find(n.domain);
      if (f != rn.function_opsets->end()) return f->second;
    }
    auto it = model_.opsets.find(n.domain);
    // ONNX Runtime runs com.microsoft nodes of a model that does not import that domain (its one
    // version, 1), so onyx does too.
    if (it == model_.opsets.end() && n.domain == "com.microsoft") return 1;
    if (it == model_.opsets.end())
      fail(ErrorCode::kInvalidModel, where, ": node ", n.label(), " uses domain '",
           n.domain.empty() ? "ai.onnx" : n.domain, "', which the model does not import (no opset_import entry)");
    return it->second;
  }

  /// Looks `name` up in `g`, then in enclosing graphs; an outer hit becomes an outer slot of `g`.
  int resolve(Graph& g, const std::string& name, const std::string& where, const Node* user) {
    int id = g.find(name);
    if (id >= 0) return id;
    for (const Graph* p = g.parent; p; p = p->parent) {
      const int pid = p->find(name);
      if (pid < 0) continue;
      id = g.add_value(name);
      g.values[id].is_outer = true;
      g.values[id].type = p->values[pid].type;
      return id;
    }
    if (user)
      fail(ErrorCode::kInvalidGraph, where, ": node ", user->label(), " reads value '", name,
           "', which no input, initializer or node defines");
    fail(ErrorCode::kInvalidGraph, where, ": graph output '", name, "' is not defined by any input, initializer or node");
  }

  static void topo_sort(Graph& g, const std::string& where) {
    const size_t n = g.nodes.size();
    std::vector<int> indeg(n, 0);
    std::vector<std::vector<int>> users(n);
    for (size_t i = 0; i < n; ++i) {
      auto add = [&](int v) {
        if (v < 0) return;
        const int p = g.values[v].producer;
        if (p >= 0) {
          users[p].push_back(static_cast<int>(i));
          ++indeg[i];
        }
      };
      for (int v : g.nodes[i].inputs) add(v);
      for (int v : g.nodes[i].implicit_inputs) add(v);
    }
    std::vector<int> order;
    order.reserve(n);
    std::vector<int> ready;
    for (size_t i = n; i-- > 0;)
      if (indeg[i] == 0) ready.push_back(static_cast<int>(i));
    // Keep the file's order where dependencies allow (stable Kahn: smallest index first).
    std::vector<char> done(n, 0);
    while (!ready.empty()) {
      auto it = std::min_element(ready.begin(), ready.end());
      const int i = *it;
      ready.erase(it);
      order.push_back(i);
      for (int u : users[i])
        if (--indeg[u] == 0) ready.push_back(u);
    }
    if (order.size() != n) {
      std::vector<std::string> stuck;
      for (size_t i = 0; i < n && stuck.size() < 5; ++i)
        if (indeg[i] > 0) stuck.push_back(g.nodes[i].label());
      fail(ErrorCode::kInvalidGraph, where, ": the graph has a cycle through ", join(stuck, ", "));
    }
    bool identity = true;
    for (size_t i = 0; i < n; ++i) identity &= order[i] == static_cast<int>(i);
    if (identity) return;
    std::vector<Node> sorted;
    sorted.reserve(n);
    std::vector<int> new_index(n);
    for (size_t k = 0; k < n; ++k) {
      new_index[order[k]] = static_cast<int>(k);
      sorted.push_back(std::move(g.nodes[order[k]]));
    }
    g.nodes = std::move(sorted);
    for (auto& v : g.values)
      if (v.producer >= 0) v.producer = new_index[v.producer];
  }

  const Model& model_;
  std::string file_;
};

std::shared_ptr<Model> load(std::shared_ptr<MappedFile> file, const std::string& base_dir, const std::string& label) {
  auto model = std::make_shared<Model>();
  model->path = label;
  Parser parser(file, base_dir, *model->symbols);
  ProtoReader r = parser.root();
  std::shared_ptr<RawGraph> raw;
  std::vector<RawFunction> functions;
  bool has_ir = false;
  while (r.next()) {
    switch (r.field()) {
      case 1: r.expect(WireType::kVarint); model->ir_version = r.int64(); has_ir = true; break;
      case 2: r.expect(WireType::kBytes); model->producer_name = r.string(); break;
      case 3: r.expect(WireType::kBytes); model->producer_version = r.string(); break;
      case 4: r.expect(WireType::kBytes); model->domain = r.string(); break;
      case 5:
        r.expect(WireType::kVarint);
        model->model_version = r.int64();
        model->has_model_version = true;
        break;
      case 6: r.expect(WireType::kBytes); model->doc_string = r.string(); break;
      case 7: r.expect(WireType::kBytes); raw = parser.graph(r.message("GraphProto"), 0); break;
      case 25: r.expect(WireType::kBytes); functions.push_back(parser.function(r.message("FunctionProto"))); break;
      case 8: {
        r.expect(WireType::kBytes);
        ProtoReader o = r.message("OperatorSetIdProto");
        std::string domain;
        int64_t version = 0;
        while (o.next()) {
          if (o.field() == 1) domain = o.string();
          else if (o.field() == 2) version = o.int64();
          else o.skip();
        }
        model->opsets[std::string(canonical_domain(domain))] = version;
        break;
      }
      case 14: {
        r.expect(WireType::kBytes);
        ProtoReader kv = r.message("StringStringEntryProto");
        std::string k, v;
        while (kv.next()) {
          if (kv.field() == 1) k = kv.string();
          else if (kv.field() == 2) v = kv.string();
          else kv.skip();
        }
        model->metadata.emplace_back(k, v);
        break;
      }
      default: r.skip();
    }
  }
  if (!has_ir || !raw)
    fail(ErrorCode::kInvalidModel, label, ": not an ONNX model (", !has_ir ? "no ir_version" : "no graph",
         " in the ModelProto; the file may be truncated or of another format)");
  if (model->ir_version < kMinIrVersion || model->ir_version > kMaxIrVersion)
    fail(ErrorCode::kNotImplemented, label, ": IR version ", model->ir_version, " is not supported (onyx reads IR ",
         kMinIrVersion, " to ", kMaxIrVersion, ")");
  const int64_t onnx_opset = model->opset("");
  if (model->opsets.count("") && (onnx_opset < 1 || onnx_opset > kMaxOnnxOpset))
    fail(ErrorCode::kNotImplemented, label, ": ai.onnx opset ", onnx_opset, " is not supported (onyx supports 1 to ",
         kMaxOnnxOpset, ")");
  if (!functions.empty()) {
    FunctionInliner inliner(functions, label);
    inliner.inline_graph(*raw);
  }
  Builder builder(*model, label);
  model->graph = builder.build(*raw, nullptr);
  auto keep = std::make_shared<std::pair<std::shared_ptr<MappedFile>, decltype(parser.source().external)>>(
      file, parser.source().external);
  model->backing = keep;
  return model;
}

}  // namespace

std::shared_ptr<Model> load_model_file(const std::string& path) {
  auto file = MappedFile::open(path);
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  return load(file, dir, path);
}

std::shared_ptr<Model> load_model_memory(const void* data, size_t size, const std::string& external_dir) {
  return load(MappedFile::copy_of(data, size), external_dir, "<memory>");
}

}  // namespace onyx
