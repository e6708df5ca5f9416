// Which nodes the OpenVINO EP takes. There is no hand-kept list: each node is cut out as a
// one-node ONNX model by onyx (export_onnx: its constant inputs as constants of their shapes --
// zeros for the large ones --, its other inputs as graph inputs of the types the question gives),
// read by OpenVINO's ONNX frontend and asked of the device with Core::query_model. The node is
// claimed when the frontend converts it and the device supports every operation it became.
// Answers are cached by the query model's bytes, so convolutions of the same shapes ask once.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
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

struct Decline {
  int32_t code = ONYX_EP_DECLINE_OTHER;  // OnyxEpDeclineCode
  std::string message;
};

/// Fills `why` (when given) and returns false.
bool decline(Decline* why, int32_t code, std::string message) {
  if (why) *why = {code, std::move(message)};
  return false;
}

struct Verdict {
  bool ok = false;
  Decline why;
};

// Verdicts by query key. With the option cache_dir they are also kept on disk (one line each in
// <cache_dir>/onyx-openvino-claims-<hash of OpenVINO's build number>.tsv), so a later session
// making the same graph asks OpenVINO nothing.
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
    out << key << '\t' << (v.ok ? 1 : 0) << '\t' << v.why.code << '\t' << message << '\n';
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
      if (code < ONYX_EP_DECLINE_UNSUPPORTED_OP || code > ONYX_EP_DECLINE_OTHER) continue;
      Verdict v{line[a + 1] == '1', {code, line.substr(c + 1)}};
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
std::string cache_key(const std::string& device, std::string_view bytes) {
  const size_t h1 = std::hash<std::string_view>{}(bytes);
  std::string with_device(bytes);
  with_device += device;
  const size_t h2 = std::hash<std::string>{}(with_device);
  return device + ":" + std::to_string(bytes.size()) + ":" + std::to_string(h1) + ":" + std::to_string(h2);
}

// `t`: the type the question gives (null: unknown); `is_tensor`: whether the value is a tensor.
bool tensor_type_ok(const TensorType* t, bool is_tensor, const char* what, size_t i, Decline* why) {
  if (!t || !is_tensor) return decline(why, ONYX_EP_DECLINE_UNSUPPORTED_TYPE, str(what, " ", i, " is not a tensor"));
  if (t->dtype == ONYX_EP_DOUBLE)
    return decline(why, ONYX_EP_DECLINE_UNSUPPORTED_TYPE,
                   str(what, " ", i, " is float64, which OpenVINO's CPU plugin computes in float32"));
  if (element_type(t->dtype) == ov::element::dynamic)
    return decline(why, ONYX_EP_DECLINE_UNSUPPORTED_TYPE,
                   str(what, " ", i, " has type ", dtype_name(t->dtype), ", which OpenVINO has no element type for"));
  return true;
}

// Where OpenVINO 2026.4's ONNX frontend or CPU plugin computes something other than ONNX's
// answer although query_model accepts the node, found by the conformance suite (each would be a
// wrong result, so the node is declined): its answer, or "" when there is none.
std::string known_gap(const NodeView& n, const OnyxEpGraph* g) {
  const std::string op(n.op_type());
  auto constant = [&](size_t i) { return !n.has_input(i) || value(g, n.input(i)).is_constant(); };
  if (!n.domain().empty()) return "";
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

// A node's query: its part of a query model, the names its inputs and outputs have there, and
// the model of the node alone (kept to ask OpenVINO about the node by itself).
struct Query {
  Part part;
  std::vector<std::string> input_names, output_names;
  std::string key;
  OnnxModel model;
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
    if (!port(ins, name)) return {false, {ONYX_EP_DECLINE_UNSUPPORTED_OP, str("OpenVINO's frontend drops its input '", name, "'")}};
  std::vector<std::shared_ptr<ov::Node>> results;
  for (size_t i = 0; i < q.output_names.size(); ++i) {
    const ov::Output<const ov::Node>* p = port(outs, q.output_names[i]);
    if (!p)
      return {false, {ONYX_EP_DECLINE_UNSUPPORTED_OP, str("OpenVINO's frontend drops its output '", q.output_names[i], "'")}};
    results.push_back(std::const_pointer_cast<ov::Node>(p->get_node_shared_ptr()));
    // Where both know the output's shape, they must agree.
    const TensorType* t = i < q.part.output_types.size() ? &q.part.output_types[i] : nullptr;
    if (!t || t->dtype == ONYX_EP_UNDEFINED || !t->concrete() || !p->get_partial_shape().is_static()) continue;
    const ov::Shape s = p->get_shape();
    if (std::vector<int64_t>(s.begin(), s.end()) != t->dims)
      return {false, {ONYX_EP_DECLINE_UNSUPPORTED_OP, str("OpenVINO shapes its output '", q.output_names[i], "' as ",
                                                          p->get_partial_shape().to_string(), " where ONNX gives ", t->shape_string())}};
  }
  for (const auto& op : ops_behind(results))
    if (!supported.count(op->get_friendly_name()))
      return {false, {ONYX_EP_DECLINE_UNSUPPORTED_OP, str("OpenVINO's ", device, " plugin does not support its ", op->get_type_name(), " (",
                                                          op->get_type_info().version_id ? op->get_type_info().version_id : "", ")")}};
  return {true, {}};
}

// Reads and queries one exported model; false with the reason when either step fails.
bool read_and_query(const OnnxModel& exported, const OnyxEpGraph* graph, const std::string& device, std::shared_ptr<ov::Model>* model,
                    ov::SupportedOpsMap* supported, Decline* why) {
  try {
    *model = read_onnx(exported.bytes());
    bind_zero_constants(**model, exported, graph);
  } catch (const std::exception& e) {
    *why = {ONYX_EP_DECLINE_UNSUPPORTED_OP, "OpenVINO's ONNX frontend does not convert it: " + short_message(e)};
    return false;
  }
  try {
    *supported = core().query_model(*model, device);
  } catch (const std::exception& e) {
    *why = {ONYX_EP_DECLINE_UNSUPPORTED_OP, str("OpenVINO's ", device, " plugin refuses it: ", short_message(e))};
    return false;
  }
  return true;
}

Verdict ask_one(const OnyxEpGraph* g, const Query& q, const std::string& device) {
  std::shared_ptr<ov::Model> model;
  ov::SupportedOpsMap supported;
  Decline why;
  if (!read_and_query(q.model, g, device, &model, &supported, &why)) return {false, why};
  return judge(*model, supported, q, "", device);
}

// The query for `node` (a node of `g`, or a form of one the question gives with its types), or
// false with the reason it is declined before OpenVINO is asked. A failing export throws.
bool make_query(const OnyxEpGraph* g, const OnyxEpNode* node, const std::string& device, Query* q, Decline* why) {
  const NodeView n(node);
  if (n.domain() == "onyx" || n.domain() == "onyx.nhwc")
    return decline(why, ONYX_EP_DECLINE_UNSUPPORTED_OP, "onyx's own fused op: OpenVINO is given the nodes as the model wrote them");
  constexpr int32_t kGraphs = 10;  // ONNX's AttributeProto.GRAPHS (past OnyxEpAttrType's named types)
  for (size_t i = 0; i < n.num_attributes(); ++i) {
    const int32_t type = n.attribute_type(i);
    if (type == ONYX_EP_ATTR_GRAPH || type == kGraphs)
      return decline(why, ONYX_EP_DECLINE_UNSUPPORTED_OP, "control flow (a subgraph attribute) is left to onyx");
  }
  if (n.num_outputs() == 0) return decline(why, ONYX_EP_DECLINE_UNSUPPORTED_OP, "a node without outputs");
  if (std::string gap = known_gap(n, g); !gap.empty()) return decline(why, ONYX_EP_DECLINE_UNSUPPORTED_ATTRIBUTE, gap);
  q->part.nodes = {node};
  for (size_t i = 0; i < n.input_slots(); ++i) {
    const int64_t v = n.input(i);
    if (v < 0) continue;
    const ValueView s = value(g, v);
    TensorType t;
    const bool known = n.input_type(i, &t);
    if (!tensor_type_ok(known ? &t : nullptr, s.is_tensor(), "input", i, why)) return false;
    if (s.is_constant()) continue;
    if (std::find(q->part.inputs.begin(), q->part.inputs.end(), v) != q->part.inputs.end()) continue;
    q->part.inputs.push_back(v);
    q->part.input_types.push_back(std::move(t));
    q->input_names.emplace_back(s.name());
  }
  for (size_t i = 0; i < n.num_outputs(); ++i) {
    const int64_t v = n.output(i);
    if (v < 0) continue;
    const ValueView s = value(g, v);
    TensorType t;
    const bool known = n.output_type(i, &t);
    if (known && !tensor_type_ok(&t, !s.ok || s.is_tensor(), "output", i, why)) return false;
    q->part.outputs.push_back(v);
    q->part.output_types.push_back(known ? std::move(t) : TensorType());
    q->output_names.emplace_back(s.name());
  }
  // The large constants' types are in the bytes; their values do not matter.
  q->model = export_onnx(g, {&q->part}, {}, kSmallConstant);
  q->key = cache_key(device, q->model.bytes());
  return true;
}

// Asks about every node of `g` not answered yet, in one model. Where OpenVINO cannot read or
// query the batch as a whole (one node its frontend fails on), nothing is cached and each node is
// asked alone when it is claimed.
void ask_batch(const OnyxEpGraph* g, const std::string& device, const std::string& dir) {
  std::vector<Query> queries;
  std::set<std::string> keys;
  const size_t count = host().graph_num_nodes(g);
  for (size_t i = 0; i < count; ++i) {
    const OnyxEpNode* node = host().graph_node(g, static_cast<int64_t>(i));
    if (!node) continue;
    Query q;
    Verdict v;
    try {
      if (!make_query(g, node, device, &q, nullptr) || cache().find(q.key, &v) || !keys.insert(q.key).second) continue;
    } catch (const Failure& f) {
      // The node cannot be exported alone: its own claim says why.
      if (f.status()) host().release_status(f.status());
      continue;
    }
    q.model.reset();  // the batch has its own model
    queries.push_back(std::move(q));
  }
  if (queries.size() < 2) return;
  std::vector<const Part*> parts;
  std::vector<std::string> prefixes;
  for (size_t i = 0; i < queries.size(); ++i) {
    parts.push_back(&queries[i].part);
    prefixes.push_back(batch_prefix(i));
  }
  OnnxModel batch;
  try {
    batch = export_onnx(g, parts, prefixes, kSmallConstant);
  } catch (const Failure& f) {
    if (f.status()) host().release_status(f.status());
    return;
  }
  std::shared_ptr<ov::Model> model;
  ov::SupportedOpsMap supported;
  Decline why;
  if (!read_and_query(batch, g, device, &model, &supported, &why)) {
    log(ONYX_EP_LOG_VERBOSE, str("asking about ", queries.size(), " nodes at once failed (", why.message, "); each is asked alone"));
    return;
  }
  for (size_t i = 0; i < queries.size(); ++i) cache().put(queries[i].key, judge(*model, supported, queries[i], batch_prefix(i), device), dir);
}

// Graphs already asked about as a whole, by a fingerprint (their sizes, operators and value
// names): a graph taken for one seen before only misses the batch, never gets a wrong answer, as
// answers are keyed by the node's model.
bool first_time(const OnyxEpGraph* g) {
  const size_t nodes = host().graph_num_nodes(g), values = host().graph_num_values(g);
  size_t h = 0;
  auto mix = [&](std::string_view s) { h = h * 1000003u ^ std::hash<std::string_view>{}(s); };
  for (size_t i = 0; i < nodes; ++i)
    if (const OnyxEpNode* n = host().graph_node(g, static_cast<int64_t>(i))) mix(host().node_op_type(n));
  for (size_t i = 0; i < values; ++i) mix(value(g, static_cast<int64_t>(i)).name());
  static std::mutex m;
  static std::set<std::tuple<size_t, size_t, size_t>> seen;
  std::lock_guard<std::mutex> lock(m);
  if (seen.size() > 256) seen.clear();
  return seen.emplace(nodes, values, h).second;
}

void write_claim(OnyxEpClaim* out, const Verdict& v) {
  if (v.ok) {
    out->accepted = 1;
    return;
  }
  out->accepted = 0;
  out->decline_code = v.why.code;
  const size_t n = std::min(v.why.message.size(), sizeof(out->reason) - 1);
  std::memcpy(out->reason, v.why.message.data(), n);
  out->reason[n] = '\0';
}

}  // namespace

void claim_node(const OnyxEpGraph* graph, const OnyxEpNode* node, const Options& options, OnyxEpClaim* out) {
  const std::string& device = options.device_type;
  cache().load(options.cache_dir);
  Query q;
  Verdict v;
  if (!make_query(graph, node, device, &q, &v.why)) return write_claim(out, v);
  if (!cache().find(q.key, &v)) {
    if (first_time(graph)) ask_batch(graph, device, options.cache_dir);
    if (!cache().find(q.key, &v)) {
      log(ONYX_EP_LOG_VERBOSE, str("asking OpenVINO about ", NodeView(node).label(), " alone"));
      v = ask_one(graph, q, device);
      cache().put(q.key, v, options.cache_dir);
    }
  }
  write_claim(out, v);
}

}  // namespace onyx::openvino
