#include "model/writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "core/common.hpp"
#include "model/proto.hpp"
#include "model/tensor_proto.hpp"

namespace onyx {

namespace {

constexpr size_t kProtobufLimit = size_t{2} << 30;  // protobuf's 2 GiB message limit

class ModelWriter {
 public:
  explicit ModelWriter(const SymbolTable& symbols) : symbols_(symbols) {}

  std::string type_proto(const TypeInfo& t) const {
    ProtoWriter w;
    switch (t.kind) {
      case TypeInfo::Kind::kTensor: {
        ProtoWriter tensor;
        tensor.varint(1, static_cast<uint64_t>(t.dtype));
        if (t.has_shape) {
          ProtoWriter shape;
          for (int64_t d : t.shape) {
            ProtoWriter dim;
            if (d >= 0) dim.varint(1, static_cast<uint64_t>(d));
            else if (std::string name = symbols_.name(d); !name.empty()) dim.bytes(2, name);
            shape.bytes(1, dim.str());
          }
          tensor.bytes(2, shape.str());
        }
        w.bytes(1, tensor.str());
        break;
      }
      case TypeInfo::Kind::kSequence:
      case TypeInfo::Kind::kOptional: {
        ProtoWriter inner;
        if (t.elem) inner.bytes(1, type_proto(*t.elem));
        w.bytes(t.kind == TypeInfo::Kind::kSequence ? 4 : 9, inner.str());
        break;
      }
      case TypeInfo::Kind::kMap: {
        ProtoWriter map;
        map.varint(1, static_cast<uint64_t>(t.dtype));
        if (t.elem) map.bytes(2, type_proto(*t.elem));
        w.bytes(5, map.str());
        break;
      }
      case TypeInfo::Kind::kSparseTensor: {
        ProtoWriter sparse;
        sparse.varint(1, static_cast<uint64_t>(t.dtype));
        w.bytes(8, sparse.str());
        break;
      }
      default: break;
    }
    return w.take();
  }

  std::string value_info(const ValueSlot& s) const {
    ProtoWriter w;
    w.bytes(1, s.name);
    if (s.type.kind != TypeInfo::Kind::kUnknown) w.bytes(2, type_proto(s.type));
    return w.take();
  }

  std::string attribute(const Attribute& a) {
    ProtoWriter w;
    w.bytes(1, a.name);
    if (!a.ref_attr_name.empty()) w.bytes(21, a.ref_attr_name);
    w.varint(20, static_cast<uint64_t>(a.type));
    switch (a.type) {
      case AttrType::kFloat: {
        uint32_t bits;
        std::memcpy(&bits, &a.f, 4);
        w.fixed32(2, bits);
        break;
      }
      case AttrType::kInt: w.varint(3, static_cast<uint64_t>(a.i)); break;
      case AttrType::kString: w.bytes(4, a.s); break;
      case AttrType::kTensor: w.bytes(5, encode_tensor_proto(a.t, "")); break;
      case AttrType::kGraph:
        if (a.g) w.bytes(6, graph(*a.g));
        break;
      case AttrType::kFloats:
        for (float f : a.floats) {
          uint32_t bits;
          std::memcpy(&bits, &f, 4);
          w.fixed32(7, bits);
        }
        break;
      case AttrType::kInts:
        for (int64_t i : a.ints) w.varint(8, static_cast<uint64_t>(i));
        break;
      case AttrType::kStrings:
        for (const auto& s : a.strings) w.bytes(9, s);
        break;
      case AttrType::kTensors:
        for (const auto& t : a.tensors) w.bytes(10, encode_tensor_proto(t, ""));
        break;
      case AttrType::kGraphs:
        for (const auto& g : a.graphs)
          if (g) w.bytes(11, graph(*g));
        break;
      case AttrType::kTypeProto: w.bytes(14, type_proto(a.tp)); break;
      case AttrType::kTypeProtos:
        for (const auto& t : a.tps) w.bytes(15, type_proto(t));
        break;
      default:
        fail(ErrorCode::kNotImplemented, "writing a model: attribute '", a.name, "' of type ", static_cast<int>(a.type),
             " cannot be written");
    }
    return w.take();
  }

  std::string node(const Graph& g, const Node& n) {
    ProtoWriter w;
    for (size_t k = 0; k < n.num_inputs(); ++k) w.bytes(1, n.inputs[k] >= 0 ? g.values[n.inputs[k]].name : std::string());
    size_t outs = n.outputs.size();
    while (outs > 0 && n.outputs[outs - 1] < 0) --outs;
    for (size_t k = 0; k < outs; ++k) w.bytes(2, n.outputs[k] >= 0 ? g.values[n.outputs[k]].name : std::string());
    if (!n.name.empty()) w.bytes(3, n.name);
    w.bytes(4, n.op_type);
    for (const auto& a : n.attrs) w.bytes(5, attribute(a));
    if (!n.domain.empty()) {
      w.bytes(7, n.domain);
      domains_.insert(n.domain);
    }
    return w.take();
  }

  std::string graph(const Graph& g) {
    ProtoWriter w;
    for (const Node& n : g.nodes) w.bytes(1, node(g, n));
    w.bytes(2, g.name.empty() ? std::string("graph") : g.name);
    std::set<int> listed(g.inputs.begin(), g.inputs.end());
    listed.insert(g.outputs.begin(), g.outputs.end());
    for (size_t v = 0; v < g.values.size(); ++v) {
      const ValueSlot& s = g.values[v];
      if (s.is_outer || !s.has_initializer || !s.initializer.defined()) continue;
      if (!s.initializer.on_host())
        fail(ErrorCode::kNotImplemented, "writing a model: initializer '", s.name, "' is in device memory");
      w.bytes(5, encode_tensor_proto(s.initializer, s.name));
      if (w.str().size() > kProtobufLimit)
        fail(ErrorCode::kInvalidArgument, "writing a model: its initializers pass protobuf's 2 GiB limit");
    }
    if (!g.doc_string.empty()) w.bytes(10, g.doc_string);
    for (int in : g.inputs) w.bytes(11, value_info(g.values[in]));
    for (int out : g.outputs) w.bytes(12, value_info(g.values[out]));
    for (size_t v = 0; v < g.values.size(); ++v) {
      const ValueSlot& s = g.values[v];
      if (s.is_outer || s.has_initializer || listed.count(static_cast<int>(v)) || s.producer < 0) continue;
      if (s.type.kind != TypeInfo::Kind::kUnknown) w.bytes(13, value_info(s));
    }
    return w.take();
  }

  const std::set<std::string>& domains() const { return domains_; }

 private:
  const SymbolTable& symbols_;
  std::set<std::string> domains_;
};

}  // namespace

std::string encode_model(const Model& model, const Graph& graph, const SymbolTable& symbols) {
  ModelWriter mw(symbols);
  const std::string g = mw.graph(graph);
  ProtoWriter w;
  w.varint(1, static_cast<uint64_t>(model.ir_version > 0 ? model.ir_version : 8));
  w.bytes(2, model.producer_name.empty() ? std::string("onyx") : model.producer_name);
  if (!model.producer_version.empty()) w.bytes(3, model.producer_version);
  if (!model.domain.empty()) w.bytes(4, model.domain);
  if (model.has_model_version) w.varint(5, static_cast<uint64_t>(model.model_version));
  if (!model.doc_string.empty()) w.bytes(6, model.doc_string);
  w.bytes(7, g);
  std::map<std::string, int64_t> opsets = model.opsets;
  for (const auto& d : mw.domains())
    if (!opsets.count(d)) opsets[d] = 1;  // onyx's own domains ("onyx", "onyx.nhwc")
  for (const auto& [domain, version] : opsets) {
    ProtoWriter o;
    if (!domain.empty()) o.bytes(1, domain);
    o.varint(2, static_cast<uint64_t>(version));
    w.bytes(8, o.str());
  }
  for (const auto& [k, v] : model.metadata) {
    ProtoWriter e;
    e.bytes(1, k);
    e.bytes(2, v);
    w.bytes(14, e.str());
  }
  if (w.str().size() > kProtobufLimit)
    fail(ErrorCode::kInvalidArgument, "writing a model: it passes protobuf's 2 GiB limit");
  return w.take();
}

void save_model(const std::string& path, const Model& model, const Graph& graph, const SymbolTable& symbols) {
  const std::string bytes = encode_model(model, graph, symbols);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail(ErrorCode::kIo, "cannot write the optimized model to '", path, "': ", std::strerror(errno));
  const size_t n = std::fwrite(bytes.data(), 1, bytes.size(), f);
  const bool closed = std::fclose(f) == 0;
  const bool ok = n == bytes.size() && closed;
  if (!ok) fail(ErrorCode::kIo, "cannot write the optimized model to '", path, "': ", std::strerror(errno));
}

}  // namespace onyx
