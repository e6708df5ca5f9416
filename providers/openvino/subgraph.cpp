// Cutting nodes of onyx's graph out as a stand-alone ONNX model: what the EP hands OpenVINO's ONNX
// frontend, both to ask whether nodes are supported (claim.cpp) and to compile a region
// (region.cpp).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include <openvino/op/constant.hpp>
#include <openvino/op/parameter.hpp>

#include "model/writer.hpp"
#include "openvino_ep.hpp"

namespace onyx::openvino {

namespace {

bool is_constant(const ValueSlot& s) { return s.has_initializer && !s.is_graph_input && !s.is_outer; }

/// Builds one ONNX graph from groups of nodes of `g`; each group's values are named with its
/// prefix, so groups share nothing (not even the values they both read).
class Builder {
 public:
  explicit Builder(const Graph& g) : g_(g) { out_.name = "onyx_openvino"; }

  void add(const SubgraphPart& part, const std::string& prefix, std::vector<LargeConstant>* large) {
    std::map<int, int> ids;  // value id in g_ -> value id in out_
    auto map_value = [&](int v) {
      if (auto it = ids.find(v); it != ids.end()) return it->second;
      const ValueSlot& s = g_.values[v];
      const int id = out_.add_value(prefix + s.name);
      out_.values[id].type = s.type;
      ids.emplace(v, id);
      return id;
    };
    for (size_t i = 0; i < part.inputs.size(); ++i) {
      const int id = map_value(part.inputs[i]);
      ValueSlot& s = out_.values[id];
      if (i < part.input_types.size() && part.input_types[i]) s.type = *part.input_types[i];
      s.is_graph_input = true;
      out_.inputs.push_back(id);
    }
    for (int ni : part.nodes) {
      const Node& src = g_.nodes[ni];
      Node n = src;
      n.implicit_inputs.clear();
      if (!n.name.empty()) n.name = prefix + n.name;
      for (int& v : n.inputs) {
        if (v < 0) continue;
        const bool known = ids.count(v) > 0;
        const ValueSlot& s = g_.values[v];
        v = map_value(v);
        if (known) continue;
        // Not a listed input and not (yet) made by one of the nodes: it must be a constant.
        if (s.producer >= 0 && std::find(part.nodes.begin(), part.nodes.end(), s.producer) != part.nodes.end())
          fail(ErrorCode::kEpFailure, "openvino: ", src.label(), " reads '", s.name, "' before its producer");
        if (!is_constant(s))
          fail(ErrorCode::kEpFailure, "openvino: ", src.label(), " reads '", s.name,
               "', which is neither an input of the region nor a constant");
        ValueSlot& d = out_.values[v];
        if (large && s.initializer.numel() > kSmallConstant && s.initializer.dtype() != DType::kString) {
          // A typed input in the ONNX model (a support query binds zeros to it: bind_zero_constants()).
          d.type = TypeInfo::tensor(s.initializer.dtype(), s.initializer.shape());
          d.is_graph_input = true;
          out_.inputs.push_back(v);
          large->push_back({d.name, &s.initializer});
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
    for (size_t i = 0; i < part.outputs.size(); ++i) {
      const int v = part.outputs[i];
      auto it = ids.find(v);
      if (it == ids.end())
        fail(ErrorCode::kEpFailure, "openvino: region output '", g_.values[v].name, "' is not made by its nodes");
      if (i < part.output_types.size() && part.output_types[i]) out_.values[it->second].type = *part.output_types[i];
      out_.outputs.push_back(it->second);
    }
  }

  std::string encode() {
    Model model;
    model.ir_version = 8;
    model.producer_name = "onyx";
    for (auto& [domain, version] : opsets_)
      if (version <= 0) version = domain.empty() ? 17 : 1;
    model.opsets = opsets_;
    if (!model.opsets.count("")) model.opsets[""] = 17;
    const SymbolTable no_symbols;  // symbolic dims go out as unknown ones
    return encode_model(model, out_, no_symbols);
  }

 private:
  const Graph& g_;
  Graph out_;
  std::map<std::string, int64_t> opsets_;
};

}  // namespace

std::string onnx_subgraph(const Graph& g, const SubgraphPart& part, std::vector<LargeConstant>* large) {
  Builder b(g);
  b.add(part, "", large);
  return b.encode();
}

std::string onnx_batch(const Graph& g, const std::vector<SubgraphPart>& parts, std::vector<LargeConstant>* large) {
  Builder b(g);
  for (size_t i = 0; i < parts.size(); ++i) b.add(parts[i], batch_prefix(i), large);
  return b.encode();
}

void bind_zero_constants(ov::Model& model, const std::vector<LargeConstant>& large) {
  if (large.empty()) return;
  size_t most = 0;
  for (const auto& c : large) most = std::max(most, c.tensor->nbytes());
  // One buffer for them all; calloc: pages nobody reads are never touched.
  const std::shared_ptr<void> zeros(std::calloc(1, std::max<size_t>(most, 1)), std::free);
  if (!zeros) fail(ErrorCode::kOutOfMemory, "openvino: cannot allocate ", most, " bytes");
  std::map<std::string, const LargeConstant*> by_name;
  for (const auto& c : large) by_name.emplace(c.name, &c);
  const ov::ParameterVector params = model.get_parameters();  // a copy: the loop removes some
  for (const auto& param : params) {
    const LargeConstant* c = nullptr;
    for (const auto& name : param->get_output_tensor(0).get_names())
      if (auto it = by_name.find(name); it != by_name.end()) c = it->second;
    if (!c) continue;
    const Tensor& t = *c->tensor;
    const ov::Shape shape(t.shape().begin(), t.shape().end());
    auto k = std::make_shared<ov::op::v0::Constant>(element_type(t.dtype()), shape, zeros.get(), zeros);
    k->set_friendly_name(c->name);
    k->get_output_tensor(0).set_names({c->name});
    param->output(0).replace(k->output(0));
    model.remove_parameter(param);
  }
  model.validate_nodes_and_infer_types();
}

}  // namespace onyx::openvino
