// One-node test models with attributes of every kind (int, float, string, ints, floats,
// strings): an Op, its feeds (graph inputs) and constants (initializers); output types are left
// to inference. Shared by the op-family unit tests.
#pragma once

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "model_builder.hpp"

namespace onyx::test {

struct Attr {
  std::string name;
  int type = 0;  // AttributeProto.AttributeType
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
};
inline Attr attr_of(std::string n, int type) {
  Attr a;
  a.name = std::move(n);
  a.type = type;
  return a;
}
inline Attr a_int(std::string n, int64_t v) {
  Attr a = attr_of(std::move(n), 2);
  a.i = v;
  return a;
}
inline Attr a_float(std::string n, float v) {
  Attr a = attr_of(std::move(n), 1);
  a.f = v;
  return a;
}
inline Attr a_str(std::string n, std::string v) {
  Attr a = attr_of(std::move(n), 3);
  a.s = std::move(v);
  return a;
}
inline Attr a_ints(std::string n, std::vector<int64_t> v) {
  Attr a = attr_of(std::move(n), 7);
  a.ints = std::move(v);
  return a;
}
inline Attr a_floats(std::string n, std::vector<float> v) {
  Attr a = attr_of(std::move(n), 6);
  a.floats = std::move(v);
  return a;
}
inline Attr a_strs(std::string n, std::vector<std::string> v) {
  Attr a = attr_of(std::move(n), 8);
  a.strings = std::move(v);
  return a;
}

struct Op {
  std::string type;
  std::vector<std::string> inputs;
  std::vector<Attr> attrs;
  std::vector<std::string> outputs = {"y"};
};

inline std::string encode_node(const Op& n) {
  ProtoWriter w;
  for (const auto& i : n.inputs) w.bytes(1, i);
  for (const auto& o : n.outputs) w.bytes(2, o);
  w.bytes(4, n.type);
  for (const Attr& a : n.attrs) {
    ProtoWriter aw;
    aw.bytes(1, a.name);
    switch (a.type) {
      case 1: {
        uint32_t u;
        std::memcpy(&u, &a.f, 4);
        aw.fixed32(2, u);
        break;
      }
      case 2:
        aw.varint(3, static_cast<uint64_t>(a.i));
        break;
      case 3:
        aw.bytes(4, a.s);
        break;
      case 6:
        for (float f : a.floats) {
          uint32_t u;
          std::memcpy(&u, &f, 4);
          aw.fixed32(7, u);
        }
        break;
      case 7:
        aw.packed_int64(8, a.ints);
        break;
      case 8:
        for (const auto& x : a.strings) aw.bytes(9, x);
        break;
    }
    aw.varint(20, static_cast<uint64_t>(a.type));
    w.bytes(5, aw.str());
  }
  return w.take();
}

inline ValueSpec value_spec(std::string name, DType dt, std::vector<int64_t> dims) {
  ValueSpec v;
  v.name = std::move(name);
  v.dtype = dt;
  v.dims = std::move(dims);
  return v;
}

/// One node; `feeds` become graph inputs, `consts` initializers; outputs have no declared shape.
struct OpModel {
  Op op;
  std::vector<std::pair<std::string, Tensor>> feeds, consts;
  int64_t opset = 20;  // the newest opset the tests need by default
  int threads = 1;

  std::string encode() const {
    ProtoWriter g;
    g.bytes(1, encode_node(op));
    g.bytes(2, "g");
    for (const auto& [n, t] : consts) g.bytes(5, encode_tensor_proto(t, n));
    for (const auto& [n, t] : feeds)
      g.bytes(11, GraphSpec::encode_value_info(value_spec(n, t.dtype(), t.shape().to_vector())));
    for (const auto& o : op.outputs) {
      // Output types are inferred: a value info with the name only.
      ProtoWriter vi;
      vi.bytes(1, o);
      g.bytes(12, vi.str());
    }
    ProtoWriter m;
    m.varint(1, 9);
    m.bytes(2, "onyx-tests");
    m.bytes(7, g.str());
    ProtoWriter os;
    os.bytes(1, "");
    os.varint(2, static_cast<uint64_t>(opset));
    m.bytes(8, os.str());
    return m.take();
  }
  Session session() const {
    const std::string m = encode();
    return Session::builder().with_intra_threads(threads).commit_from_memory(m.data(), m.size());
  }
  std::vector<Value> run() const {
    std::vector<std::pair<std::string, Value>> in;
    for (const auto& [n, t] : feeds) in.emplace_back(n, Value(t));
    return session().run(in);
  }
  Tensor run1() const { return run()[0].tensor(); }
};

}  // namespace onyx::test
