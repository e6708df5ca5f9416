// Which nodes the OpenVINO EP takes. There is no hand-kept list: each node is cut out as a
// one-node ONNX model (its constant inputs as constants of their shapes -- zeros for the large ones
// --, its other inputs as graph inputs of the types onyx inferred), read by OpenVINO's ONNX frontend and asked
// of the device with Core::query_model. The node is claimed when the frontend converts it and the
// device supports every operation it became. Answers are cached by the query model's bytes, so
// convolutions of the same shapes ask once.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <tuple>
#include <unordered_map>

#include "openvino_ep.hpp"

namespace onyx::openvino {

namespace {

struct Verdict {
  bool ok = false;
  Decline why;
};

// Verdicts by query key. With the option cache_dir they are also kept on disk (one line each in
// <cache_dir>/onyx-openvino-claims-<OpenVINO build>.tsv), so a later session making the same
// graph asks OpenVINO nothing.
class VerdictCache {
 public:
  bool find(const std::string& key, Verdict* out) {
    std::lock_guard<std::mutex> lock(m_);
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    *out = it->second;
    return true;
  }
  void put(const std::string& key, const Verdict& v, const std::string& dir) {
    std::lock_guard<std::mutex> lock(m_);
    if (map_.size() >= kMaxEntries) map_.clear();
    map_[key] = v;
    if (dir.empty()) return;
    std::string message = v.why.message;
    std::replace_if(message.begin(), message.end(), [](char c) { return c == '\t' || c == '\n' || c == '\r'; }, ' ');
    std::ofstream out(file(dir), std::ios::app);
    out << key << '\t' << (v.ok ? 1 : 0) << '\t' << static_cast<int>(v.why.code) << '\t' << message << '\n';
  }
  /// Reads `dir`'s verdicts (once per directory and process); unreadable lines are skipped.
  void load(const std::string& dir) {
    if (dir.empty()) return;
    std::lock_guard<std::mutex> lock(m_);
    if (!loaded_.insert(dir).second) return;
    std::ifstream in(file(dir));
    std::string line;
    while (std::getline(in, line)) {
      const size_t a = line.find('\t'), b = line.find('\t', a + 1), c = line.find('\t', b + 1);
      if (a == std::string::npos || b == std::string::npos || c == std::string::npos || b != a + 2) continue;
      const int code = std::atoi(line.substr(b + 1, c - b - 1).c_str());
      if (code < 0 || code > static_cast<int>(DeclineCode::kOther)) continue;
      Verdict v{line[a + 1] == '1', {static_cast<DeclineCode>(code), line.substr(c + 1)}};
      if (map_.size() < kMaxEntries) map_[line.substr(0, a)] = v;
    }
  }

 private:
  static std::string file(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const size_t build = std::hash<std::string>{}(ov::get_openvino_version().buildNumber);
    return (std::filesystem::path(dir) / str("onyx-openvino-claims-", build, ".tsv")).string();
  }
  static constexpr size_t kMaxEntries = 16384;
  std::mutex m_;
  std::unordered_map<std::string, Verdict> map_;
  std::set<std::string> loaded_;
};

VerdictCache& cache() {
  static VerdictCache c;
  return c;
}

// A key that identifies a query model without keeping its bytes (the model with its large
// constants as typed inputs): its size and two hashes.
std::string cache_key(const std::string& device, const std::string& bytes) {
  const size_t h1 = std::hash<std::string>{}(bytes);
  const size_t h2 = std::hash<std::string>{}(bytes + device);
  return device + ":" + std::to_string(bytes.size()) + ":" + std::to_string(h1) + ":" + std::to_string(h2);
}

bool tensor_type_ok(const TypeInfo* t, const char* what, size_t i, Decline* why) {
  if (!t || t->kind != TypeInfo::Kind::kTensor)
    return decline(why, DeclineCode::kUnsupportedType, str(what, " ", i, " is not a tensor"));
  if (t->dtype == DType::kDouble)
    return decline(why, DeclineCode::kUnsupportedType,
                   str(what, " ", i, " is float64, which OpenVINO's CPU plugin computes in float32"));
  if (element_type(t->dtype) == ov::element::dynamic)
    return decline(why, DeclineCode::kUnsupportedType, str(what, " ", i, " has type ", dtype_name(t->dtype), ", which OpenVINO has no element type for"));
  return true;
}

// Where OpenVINO 2026.4's ONNX frontend or CPU plugin computes something other than ONNX's
// answer although query_model accepts the node, found by the conformance suite (each would be a
// wrong result, so the node is declined): its answer, or "" when there is none.
std::string known_gap(const Node& n, const Graph& g) {
  const std::string& op = n.op_type;
  auto constant = [&](size_t i) {
    if (!n.has_input(i)) return true;
    const ValueSlot& s = g.values[n.inputs[i]];
    return s.has_initializer && !s.is_graph_input && !s.is_outer;
  };
  if (!n.domain.empty()) return "";
  if (op.rfind("Reduce", 0) == 0 && !constant(1))
    return "its axes are computed at run time; OpenVINO's frontend then shapes the result wrongly";
  if (op == "Tile" && !constant(1)) return "its repeats are computed at run time; OpenVINO then tiles wrongly";
  if ((op == "Max" || op == "Min" || op == "Sum" || op == "Mean") && n.num_inputs() == 1)
    return "a one-input " + op + ", which OpenVINO's frontend turns into zeros";
  if ((op == "RNN" || op == "GRU" || op == "LSTM") && n.attr_int("layout", 0) != 0)
    return "layout=1 (batch first), whose Y_h/Y_c OpenVINO shapes as layout 0";
  if (op == "Resize" && n.attr_string("mode", "nearest") == "cubic" && n.attr_int("exclude_outside", 0) != 0)
    return "cubic with exclude_outside=1, which OpenVINO interpolates differently";
  if (op == "DynamicQuantizeLinear") return "OpenVINO's scale rounds some elements one step away from ONNX's";
  return "";
}


// The ops of `model` that `results` depend on, back to (not including) its Parameters and
// Constants: what one node of a batch became.
std::vector<std::shared_ptr<ov::Node>> ops_behind(const std::vector<std::shared_ptr<ov::Node>>& results) {
  std::vector<std::shared_ptr<ov::Node>> out, stack = results;
  std::set<const ov::Node*> seen;
  while (!stack.empty()) {
    std::shared_ptr<ov::Node> n = stack.back();
    stack.pop_back();
    if (!seen.insert(n.get()).second) continue;
    const std::string type = n->get_type_name();
    if (type == "Parameter" || type == "Constant") continue;
    if (type != "Result") out.push_back(n);
    for (size_t i = 0; i < n->get_input_size(); ++i) stack.push_back(n->input_value(i).get_node_shared_ptr());
  }
  return out;
}

// A node's query: its part of a query model, the names its inputs and outputs have there.
struct Query {
  SubgraphPart part;
  std::vector<std::string> input_names, output_names;
  std::string key;
};

// The verdict on one query whose ONNX model (alone or in a batch, its names carrying `prefix`)
// OpenVINO read as `model` and its device answered with `supported`.
Verdict judge(const ov::Model& model, const ov::SupportedOpsMap& supported, const Query& q, const std::string& prefix,
              const std::string& device) {
  auto port = [&](const std::vector<ov::Output<const ov::Node>>& ports, const std::string& name) -> const ov::Output<const ov::Node>* {
    for (const auto& p : ports)
      if (p.get_names().count(prefix + name)) return &p;
    return nullptr;
  };
  const auto ins = model.inputs(), outs = model.outputs();
  // Every input and output must keep its name (the region maps onyx's values to OpenVINO's ports
  // by name): the frontend drops inputs it ignores (Dropout's ratio, LSTM's peepholes, ...).
  for (const auto& name : q.input_names)
    if (!port(ins, name)) return {false, {DeclineCode::kUnsupportedOp, str("OpenVINO's frontend drops its input '", name, "'")}};
  std::vector<std::shared_ptr<ov::Node>> results;
  for (size_t i = 0; i < q.output_names.size(); ++i) {
    const ov::Output<const ov::Node>* p = port(outs, q.output_names[i]);
    if (!p) return {false, {DeclineCode::kUnsupportedOp, str("OpenVINO's frontend drops its output '", q.output_names[i], "'")}};
    results.push_back(std::const_pointer_cast<ov::Node>(p->get_node_shared_ptr()));
    // Where both know the output's shape, they must agree.
    const TypeInfo* t = i < q.part.output_types.size() ? q.part.output_types[i] : nullptr;
    if (!t || !t->has_shape || !t->shape.is_concrete() || !p->get_partial_shape().is_static()) continue;
    const ov::Shape s = p->get_shape();
    if (std::vector<int64_t>(s.begin(), s.end()) != std::vector<int64_t>(t->shape.begin(), t->shape.end()))
      return {false, {DeclineCode::kUnsupportedOp, str("OpenVINO shapes its output '", q.output_names[i], "' as ",
                                                        p->get_partial_shape().to_string(), " where ONNX gives ", t->shape.to_string())}};
  }
  for (const auto& op : ops_behind(results))
    if (!supported.count(op->get_friendly_name()))
      return {false, {DeclineCode::kUnsupportedOp, str("OpenVINO's ", device, " plugin does not support its ", op->get_type_name(), " (",
                                                        op->get_type_info().version_id ? op->get_type_info().version_id : "", ")")}};
  return {true, {}};
}

// Reads and queries one model; false with the reason when either step fails.
bool read_and_query(const std::string& bytes, const std::vector<LargeConstant>& large, const std::string& device,
                    std::shared_ptr<ov::Model>* model, ov::SupportedOpsMap* supported, Decline* why) {
  try {
    *model = core().read_model(bytes, ov::Tensor());
    bind_zero_constants(**model, large);
  } catch (const std::exception& e) {
    *why = {DeclineCode::kUnsupportedOp, "OpenVINO's ONNX frontend does not convert it: " + short_message(e)};
    return false;
  }
  try {
    *supported = core().query_model(*model, device);
  } catch (const std::exception& e) {
    *why = {DeclineCode::kUnsupportedOp, str("OpenVINO's ", device, " plugin refuses it: ", short_message(e))};
    return false;
  }
  return true;
}

Verdict ask_one(const Graph& g, const Query& q, const std::string& device) {
  std::shared_ptr<ov::Model> model;
  ov::SupportedOpsMap supported;
  Decline why;
  std::vector<LargeConstant> large;
  const std::string bytes = onnx_subgraph(g, q.part, &large);
  if (!read_and_query(bytes, large, device, &model, &supported, &why)) return {false, why};
  return judge(*model, supported, q, "", device);
}

// The query for node `index` of `g` with these value types (null: the value's own), or false
// with the reason it is declined before OpenVINO is asked.
bool make_query(const Graph& g, int index, const std::vector<const TypeInfo*>& in_types, const std::vector<const TypeInfo*>& out_types,
                const std::string& device, Query* q, Decline* why) {
  const Node& n = g.nodes[index];
  if (n.domain == "onyx" || n.domain == "onyx.nhwc")
    return decline(why, DeclineCode::kUnsupportedOp, "onyx's own fused op: OpenVINO is given the nodes as the model wrote them");
  for (const auto& a : n.attrs)
    if (a.type == AttrType::kGraph || a.type == AttrType::kGraphs)
      return decline(why, DeclineCode::kUnsupportedOp, "control flow (a subgraph attribute) is left to onyx");
  if (n.outputs.empty()) return decline(why, DeclineCode::kUnsupportedOp, "a node without outputs");
  if (std::string gap = known_gap(n, g); !gap.empty()) return decline(why, DeclineCode::kUnsupportedAttribute, gap);
  q->part.nodes = {index};
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const int v = n.inputs[i];
    if (v < 0) continue;
    const ValueSlot& s = g.values[v];
    const TypeInfo* t = i < in_types.size() && in_types[i] ? in_types[i] : &s.type;
    if (!tensor_type_ok(t, "input", i, why)) return false;
    if (s.has_initializer && !s.is_graph_input && !s.is_outer) continue;  // a constant
    if (std::find(q->part.inputs.begin(), q->part.inputs.end(), v) != q->part.inputs.end()) continue;
    q->part.inputs.push_back(v);
    q->part.input_types.push_back(t);
    q->input_names.push_back(s.name);
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const int v = n.outputs[i];
    if (v < 0) continue;
    const TypeInfo* t = i < out_types.size() && out_types[i] ? out_types[i] : &g.values[v].type;
    if (t->kind != TypeInfo::Kind::kUnknown && !tensor_type_ok(t, "output", i, why)) return false;
    q->part.outputs.push_back(v);
    q->part.output_types.push_back(t->kind == TypeInfo::Kind::kUnknown ? nullptr : t);
    q->output_names.push_back(g.values[v].name);
  }
  try {
    std::vector<LargeConstant> large;  // their types are in the bytes; their values do not matter
    q->key = cache_key(device, onnx_subgraph(g, q->part, &large));
  } catch (const std::exception& e) {
    return decline(why, DeclineCode::kOther, str("cannot write the node as an ONNX model: ", e.what()));
  }
  return true;
}

// Asks about every node of `g` not answered yet, in one model. Where OpenVINO cannot read or
// query the batch as a whole (one node its frontend fails on), nothing is cached and each node is
// asked alone when it is claimed.
void ask_batch(const Graph& g, const std::string& device, const std::string& dir) {
  std::vector<Query> queries;
  std::set<std::string> keys;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Query q;
    Verdict v;
    if (!make_query(g, static_cast<int>(i), {}, {}, device, &q, nullptr) || cache().find(q.key, &v) || !keys.insert(q.key).second)
      continue;
    queries.push_back(std::move(q));
  }
  if (queries.size() < 2) return;
  std::vector<SubgraphPart> parts;
  for (const auto& q : queries) parts.push_back(q.part);
  std::shared_ptr<ov::Model> model;
  ov::SupportedOpsMap supported;
  Decline why;
  std::string bytes;
  std::vector<LargeConstant> large;
  try {
    bytes = onnx_batch(g, parts, &large);
  } catch (const std::exception&) {
    return;
  }
  if (!read_and_query(bytes, large, device, &model, &supported, &why)) return;
  for (size_t i = 0; i < queries.size(); ++i) cache().put(queries[i].key, judge(*model, supported, queries[i], batch_prefix(i), device), dir);
}

// Graphs already asked about as a whole (by address and size: a new graph at a reused address
// only misses the batch, never gets a wrong answer, as answers are keyed by the node's model).
bool first_time(const Graph& g) {
  static std::mutex m;
  static std::set<std::tuple<const Graph*, size_t, size_t>> seen;
  std::lock_guard<std::mutex> lock(m);
  if (seen.size() > 256) seen.clear();
  return seen.emplace(&g, g.nodes.size(), g.values.size()).second;
}

}  // namespace

bool claim_node(const ClaimInfo& info, const Options& options, Decline* why) {
  const std::string& device = options.device_type;
  cache().load(options.cache_dir);
  const Node& n = info.node;
  const Graph& g = info.graph;
  // The node's index in its graph (queries are cut by indices).
  const auto at = reinterpret_cast<uintptr_t>(&n), first = reinterpret_cast<uintptr_t>(g.nodes.data());
  if (g.nodes.empty() || at < first || at >= first + g.nodes.size() * sizeof(Node))
    return decline(why, DeclineCode::kOther, "the node is not in the graph it was offered with");
  const auto index = static_cast<int>((at - first) / sizeof(Node));
  Query q;
  if (!make_query(g, index, info.input_types, info.output_types, device, &q, why)) return false;
  Verdict v;
  if (!cache().find(q.key, &v)) {
    if (first_time(g)) ask_batch(g, device, options.cache_dir);
    if (!cache().find(q.key, &v)) {
      v = ask_one(g, q, device);
      cache().put(q.key, v, options.cache_dir);
    }
  }
  if (!v.ok) return decline(why, v.why.code, v.why.message);
  return true;
}

}  // namespace onyx::openvino
