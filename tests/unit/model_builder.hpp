// Test helper: writes ONNX ModelProto bytes for small hand-built graphs (including broken ones).
#pragma once

#include <string>
#include <vector>

#include "model/proto.hpp"
#include "model/tensor_proto.hpp"
#include "onyx/onyx.hpp"

namespace onyx::test {

struct AttrSpec {
  std::string name;
  enum { kInt, kFloat, kInts, kString, kTensor, kGraph, kStrings, kFloats } kind = kInt;
  int64_t i = 0;
  float f = 0;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::string s;  // string value, or encoded TensorProto / GraphProto bytes
  std::vector<std::string> strings;
  std::string ref;  // inside a function body: the caller's attribute this one refers to
};

inline AttrSpec attr_int(std::string n, int64_t v) {
  AttrSpec a;
  a.name = std::move(n);
  a.kind = AttrSpec::kInt;
  a.i = v;
  return a;
}
inline AttrSpec attr_float(std::string n, float v) {
  AttrSpec a;
  a.name = std::move(n);
  a.kind = AttrSpec::kFloat;
  a.f = v;
  return a;
}
inline AttrSpec attr_ints(std::string n, std::vector<int64_t> v) {
  AttrSpec a;
  a.name = std::move(n);
  a.kind = AttrSpec::kInts;
  a.ints = std::move(v);
  return a;
}
inline AttrSpec attr_floats(std::string n, std::vector<float> v) {
  AttrSpec a;
  a.name = std::move(n);
  a.kind = AttrSpec::kFloats;
  a.floats = std::move(v);
  return a;
}
inline AttrSpec attr_strings(std::string n, std::vector<std::string> v) {
  AttrSpec a;
  a.name = std::move(n);
  a.kind = AttrSpec::kStrings;
  a.strings = std::move(v);
  return a;
}
inline AttrSpec attr_string(std::string n, std::string v) {
  AttrSpec a;
  a.name = std::move(n);
  a.kind = AttrSpec::kString;
  a.s = std::move(v);
  return a;
}

struct NodeSpec {
  std::string op;
  std::vector<std::string> inputs, outputs;
  std::vector<AttrSpec> attrs;
  std::string name;
  std::string domain;
};

/// A value's declared type: dtype and dims (-1 = unnamed unknown, or a name via dim_params).
struct ValueSpec {
  std::string name;
  DType dtype = DType::kFloat;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_params;  // per dim, "" = use dims[i]
  bool no_shape = false;
  DType map_key = DType::kUndefined;  // set: map(map_key, tensor of dtype)
  bool sequence = false;              // a sequence of that type
  bool write_minus_one = false;       // write unknown dims as dim_value -1 (as some exporters do)
};

class GraphSpec {
 public:
  std::string name = "g";
  std::vector<NodeSpec> nodes;
  std::vector<ValueSpec> inputs, outputs;
  std::vector<std::pair<std::string, Tensor>> initializers;

  std::string encode() const {
    ProtoWriter w;
    for (const auto& n : nodes) w.bytes(1, encode_node(n));
    w.bytes(2, name);
    for (const auto& [nm, t] : initializers) w.bytes(5, encode_tensor_proto(t, nm));
    for (const auto& v : inputs) w.bytes(11, encode_value_info(v));
    for (const auto& v : outputs) w.bytes(12, encode_value_info(v));
    return w.take();
  }

  static std::string encode_value_info(const ValueSpec& v) {
    ProtoWriter shape;
    for (size_t i = 0; i < v.dims.size(); ++i) {
      ProtoWriter d;
      const bool named = i < v.dim_params.size() && !v.dim_params[i].empty();
      if (named) d.bytes(2, v.dim_params[i]);
      else if (v.dims[i] >= 0 || v.write_minus_one) d.varint(1, static_cast<uint64_t>(v.dims[i]));
      shape.bytes(1, d.str());
    }
    ProtoWriter tt;
    tt.varint(1, static_cast<uint64_t>(v.dtype));
    if (!v.no_shape) tt.bytes(2, shape.str());
    ProtoWriter type;
    type.bytes(1, tt.str());
    if (v.map_key != DType::kUndefined) {
      ProtoWriter map;
      map.varint(1, static_cast<uint64_t>(v.map_key));
      map.bytes(2, type.str());
      type = ProtoWriter();
      type.bytes(5, map.str());
    }
    if (v.sequence) {
      ProtoWriter seq;
      seq.bytes(1, type.str());
      type = ProtoWriter();
      type.bytes(4, seq.str());
    }
    ProtoWriter vi;
    vi.bytes(1, v.name);
    vi.bytes(2, type.str());
    return vi.take();
  }

  static std::string encode_node(const NodeSpec& n) {
    ProtoWriter w;
    for (const auto& i : n.inputs) w.bytes(1, i);
    for (const auto& o : n.outputs) w.bytes(2, o);
    if (!n.name.empty()) w.bytes(3, n.name);
    w.bytes(4, n.op);
    for (const auto& a : n.attrs) {
      ProtoWriter aw;
      aw.bytes(1, a.name);
      switch (a.kind) {
        case AttrSpec::kInt: aw.varint(3, static_cast<uint64_t>(a.i)); aw.varint(20, 2); break;
        case AttrSpec::kFloat: {
          uint32_t u;
          std::memcpy(&u, &a.f, 4);
          aw.fixed32(2, u);
          aw.varint(20, 1);
          break;
        }
        case AttrSpec::kInts: aw.packed_int64(8, a.ints); aw.varint(20, 7); break;
        case AttrSpec::kFloats: {
          std::string packed(a.floats.size() * 4, '\0');
          if (!a.floats.empty()) std::memcpy(packed.data(), a.floats.data(), packed.size());
          aw.bytes(7, packed);
          aw.varint(20, 6);
          break;
        }
        case AttrSpec::kString: aw.bytes(4, a.s); aw.varint(20, 3); break;
        case AttrSpec::kTensor: aw.bytes(5, a.s); aw.varint(20, 4); break;
        case AttrSpec::kGraph: aw.bytes(6, a.s); aw.varint(20, 5); break;
        case AttrSpec::kStrings:
          for (const auto& x : a.strings) aw.bytes(9, x);
          aw.varint(20, 8);
          break;
      }
      if (!a.ref.empty()) aw.bytes(21, a.ref);
      w.bytes(5, aw.str());
    }
    if (!n.domain.empty()) w.bytes(7, n.domain);
    return w.take();
  }
};

/// ModelProto bytes for `g` with the given IR version and ai.onnx opset.
/// A model of `g` importing ai.onnx at `opset` and each of `domains` (name, version).
inline std::string encode_model(const GraphSpec& g, int64_t opset = 17, int64_t ir = 8,
                                const std::vector<std::pair<std::string, int64_t>>& domains = {}) {
  ProtoWriter w;
  w.varint(1, static_cast<uint64_t>(ir));
  w.bytes(2, "onyx-tests");
  w.bytes(7, g.encode());
  ProtoWriter os;
  os.bytes(1, "");
  os.varint(2, static_cast<uint64_t>(opset));
  w.bytes(8, os.str());
  for (const auto& [name, version] : domains) {
    ProtoWriter d;
    d.bytes(1, name);
    d.varint(2, static_cast<uint64_t>(version));
    w.bytes(8, d.str());
  }
  return w.take();
}

/// prefix + i ("y0", "x1"), built by appending: GCC 12 warns -Wrestrict (falsely) on an inlined
/// "y" + std::to_string(i).
inline std::string numbered(const char* prefix, size_t i) {
  std::string s = prefix;
  s += std::to_string(i);
  return s;
}

/// A graph output whose type and shape are left to inference.
inline ValueSpec any_out(const std::string& name, DType dt = DType::kFloat) {
  ValueSpec v{name, dt};
  v.no_shape = true;
  return v;
}

/// Every element of `t` as a double (for comparisons whatever the element type).
inline std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.element_as_double(i));
  return v;
}

}  // namespace onyx::test
