// The EP plugin ABI's export_onnx (include/onyx/ep_c_api.h): nodes of onyx's graph written out as
// a stand-alone ONNX model, for EPs whose library reads ONNX (the OpenVINO EP asks OpenVINO what
// it supports and compiles its regions this way).
#include <algorithm>
#include <map>

#include "core/common.hpp"
#include "ep/plugin.hpp"
#include "model/writer.hpp"

struct OnyxEpOnnxModel {
  std::string bytes;
  std::vector<std::pair<std::string, int64_t>> deferred;  // input name, graph value
};

namespace onyx {
namespace {

bool is_constant(const ValueSlot& s) { return s.has_initializer && !s.is_graph_input && !s.is_outer; }

/// A type a plugin gives for a value in an exported part (dtype 0: none given).
bool given_type(const OnyxEpTensor* types, size_t i, TypeInfo* out) {
  if (!types) return false;
  const OnyxEpTensor& t = types[i];
  if (t.dtype <= 0 || t.dtype > kMaxDType) return false;
  if (t.rank < 0) {
    *out = TypeInfo::tensor(static_cast<DType>(t.dtype));
    return true;
  }
  if (t.rank > 64 || (t.rank > 0 && !t.dims)) fail(ErrorCode::kInvalidArgument, "a type of rank ", t.rank, t.dims ? "" : " without dims");
  if (t.rank == 0) {
    *out = TypeInfo::tensor(static_cast<DType>(t.dtype), Shape());
    return true;
  }
  *out = TypeInfo::tensor(static_cast<DType>(t.dtype), Shape(std::vector<int64_t>(t.dims, t.dims + t.rank)));
  return true;
}

/// Builds one ONNX graph from parts of `g`; each part's values are named with its prefix, so parts
/// share nothing (not even the values they both read).
class Builder {
 public:
  Builder(const Graph& g, int64_t inline_limit, OnyxEpOnnxModel* result) : g_(g), limit_(inline_limit), result_(result) {
    out_.name = "onyx_export";
  }

  void add(const OnyxEpOnnxPart& part) {
    const std::string prefix = part.prefix ? part.prefix : "";
    auto check_value = [&](int64_t v, const char* what) {
      if (v < 0 || static_cast<size_t>(v) >= g_.values.size()) fail(ErrorCode::kInvalidArgument, what, " ", v, " is not a value of the graph");
      return static_cast<int>(v);
    };
    std::map<int, int> ids;  // value id in g_ -> value id in out_
    auto map_value = [&](int v) {
      if (auto it = ids.find(v); it != ids.end()) return it->second;
      const ValueSlot& s = g_.values[v];
      const int id = out_.add_value(prefix + s.name);
      out_.values[id].type = s.type;
      ids.emplace(v, id);
      return id;
    };
    if ((part.num_inputs && !part.inputs) || (part.num_outputs && !part.outputs) || (part.num_nodes && !part.nodes))
      fail(ErrorCode::kInvalidArgument, "a part with a null array");
    for (size_t i = 0; i < part.num_inputs; ++i) {
      const int id = map_value(check_value(part.inputs[i], "input"));
      ValueSlot& s = out_.values[id];
      given_type(part.input_types, i, &s.type);
      s.is_graph_input = true;
      out_.inputs.push_back(id);
    }
    std::vector<const Node*> nodes;
    for (size_t k = 0; k < part.num_nodes; ++k) {
      if (!part.nodes[k] || part.nodes[k]->graph != &g_) fail(ErrorCode::kInvalidArgument, "node ", k, " is not a node of the graph");
      nodes.push_back(part.nodes[k]->node);
    }
    for (const Node* src : nodes) {
      Node n = *src;
      n.implicit_inputs.clear();
      if (!n.name.empty()) n.name = prefix + n.name;
      for (int& v : n.inputs) {
        if (v < 0) continue;
        const int orig = v;
        const bool known = ids.count(v) > 0;
        const ValueSlot& s = g_.values[v];
        v = map_value(v);
        if (known) continue;
        // Not a listed input and not (yet) made by one of the nodes: it must be a constant.
        const bool made_inside = std::any_of(nodes.begin(), nodes.end(), [&](const Node* m) {
          return std::find(m->outputs.begin(), m->outputs.end(), orig) != m->outputs.end();
        });
        if (made_inside) fail(ErrorCode::kInvalidArgument, src->label(), " reads '", s.name, "' before its producer");
        if (!is_constant(s))
          fail(ErrorCode::kInvalidArgument, src->label(), " reads '", s.name, "', which is neither an input of the part nor a constant");
        ValueSlot& d = out_.values[v];
        if (limit_ >= 0 && s.initializer.numel() > limit_ && s.initializer.dtype() != DType::kString) {
          d.type = TypeInfo::tensor(s.initializer.dtype(), s.initializer.shape());
          d.is_graph_input = true;
          out_.inputs.push_back(v);
          result_->deferred.emplace_back(d.name, orig);
          continue;
        }
        d.has_initializer = true;
        d.initializer = s.initializer;
      }
      for (int& v : n.outputs) {
        if (v < 0) continue;
        v = map_value(v);
        out_.values[v].producer = static_cast<int>(out_.nodes.size());
      }
      int64_t& version = opsets_[std::string(canonical_domain(n.domain))];
      version = std::max<int64_t>(version, n.opset);
      out_.nodes.push_back(std::move(n));
    }
    for (size_t i = 0; i < part.num_outputs; ++i) {
      const int v = check_value(part.outputs[i], "output");
      auto it = ids.find(v);
      if (it == ids.end()) fail(ErrorCode::kInvalidArgument, "output '", g_.values[v].name, "' is not made by the part's nodes");
      given_type(part.output_types, i, &out_.values[it->second].type);
      out_.outputs.push_back(it->second);
    }
  }

  void encode() {
    Model model;
    model.ir_version = 8;
    model.producer_name = "onyx";
    for (auto& [domain, version] : opsets_)
      if (version <= 0) version = domain.empty() ? 17 : 1;
    model.opsets = opsets_;
    if (!model.opsets.count("")) model.opsets[""] = 17;
    const SymbolTable no_symbols;  // symbolic dims go out as unknown ones
    result_->bytes = encode_model(model, out_, no_symbols);
  }

 private:
  const Graph& g_;
  int64_t limit_;
  OnyxEpOnnxModel* result_;
  Graph out_;
  std::map<std::string, int64_t> opsets_;
};

OnyxEpStatus* export_onnx(const OnyxEpGraph* graph, const OnyxEpOnnxPart* parts, size_t num_parts, int64_t inline_limit,
                          OnyxEpOnnxModel** out) {
  auto status = [](OnyxEpErrorCode code, const std::string& m) { return plugin_host_api()->make_status(code, m.c_str()); };
  if (!graph || !out || (num_parts && !parts)) return status(ONYX_EP_INVALID_ARGUMENT, "export_onnx: null argument");
  try {
    auto result = std::make_unique<OnyxEpOnnxModel>();
    Builder b(*graph->graph, inline_limit, result.get());
    for (size_t i = 0; i < num_parts; ++i) {
      if (parts[i].struct_size < offsetof(OnyxEpOnnxPart, prefix) + sizeof(parts[i].prefix))
        return status(ONYX_EP_INVALID_ARGUMENT, str("export_onnx: part ", i, " is not an OnyxEpOnnxPart"));
      b.add(parts[i]);
    }
    b.encode();
    *out = result.release();
    return nullptr;
  } catch (const std::exception& e) {
    return status(ONYX_EP_INVALID_ARGUMENT, str("export_onnx: ", e.what()));
  }
}

const void* onnx_model_bytes(const OnyxEpOnnxModel* m, size_t* size) {
  if (size) *size = m ? m->bytes.size() : 0;
  return m ? m->bytes.data() : nullptr;
}

size_t onnx_model_num_constants(const OnyxEpOnnxModel* m) { return m ? m->deferred.size() : 0; }

int32_t onnx_model_constant(const OnyxEpOnnxModel* m, size_t i, const char** name, int64_t* value) {
  if (!m || i >= m->deferred.size()) return 0;
  if (name) *name = m->deferred[i].first.c_str();
  if (value) *value = m->deferred[i].second;
  return 1;
}

void release_onnx_model(OnyxEpOnnxModel* m) { delete m; }

}  // namespace

void fill_export_functions(OnyxEpHostApi* api) {
  api->export_onnx = export_onnx;
  api->onnx_model_bytes = onnx_model_bytes;
  api->onnx_model_num_constants = onnx_model_num_constants;
  api->onnx_model_constant = onnx_model_constant;
  api->release_onnx_model = release_onnx_model;
}

}  // namespace onyx
