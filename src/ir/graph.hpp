// The in-memory graph: Model, Graph, Node, Value slots, attributes and types.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/symbols.hpp"
#include "onyx/tensor.hpp"

namespace onyx {

class Graph;

/// Type of a graph value (ONNX TypeProto). Shapes may hold symbolic dims (negative ids, see
/// ir/symbols.hpp).
struct TypeInfo {
  enum class Kind : uint8_t { kUnknown, kTensor, kSequence, kOptional, kMap, kSparseTensor };
  /// ONNX's name of the type, without shapes: "tensor(float)", "seq(map(int64,tensor(float)))".
  std::string onnx_name() const;
  Kind kind = Kind::kUnknown;
  DType dtype = DType::kUndefined;  // tensor element type
  bool has_shape = false;           // rank known
  Shape shape;
  std::shared_ptr<TypeInfo> elem;  // element of a sequence or optional, value of a map (dtype: its key)

  static TypeInfo tensor(DType dt) {
    TypeInfo t;
    t.kind = Kind::kTensor;
    t.dtype = dt;
    return t;
  }
  static TypeInfo tensor(DType dt, Shape s) {
    TypeInfo t = tensor(dt);
    t.has_shape = true;
    t.shape = std::move(s);
    return t;
  }
  static TypeInfo sequence_of(TypeInfo e) {
    TypeInfo t;
    t.kind = Kind::kSequence;
    t.elem = std::make_shared<TypeInfo>(std::move(e));
    return t;
  }
  static TypeInfo optional_of(TypeInfo e) {
    TypeInfo t;
    t.kind = Kind::kOptional;
    t.elem = std::make_shared<TypeInfo>(std::move(e));
    return t;
  }
  /// map(key, value): the key's element type in `dtype`, the value's type in `elem`.
  static TypeInfo map_of(DType key, TypeInfo value) {
    TypeInfo t;
    t.kind = Kind::kMap;
    t.dtype = key;
    t.elem = std::make_shared<TypeInfo>(std::move(value));
    return t;
  }
  bool is_tensor() const { return kind == Kind::kTensor; }
  /// Element dtype of a tensor, of a sequence's tensors, of an optional's tensor, of a map's values.
  DType elem_dtype() const {
    if (kind == Kind::kTensor) return dtype;
    return elem ? elem->elem_dtype() : DType::kUndefined;
  }
  /// "float[1,3,?,?]", "seq(int64[?])", "optional(float)".
  std::string to_string() const;
};

enum class AttrType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kInt = 2,
  kString = 3,
  kTensor = 4,
  kGraph = 5,
  kFloats = 6,
  kInts = 7,
  kStrings = 8,
  kTensors = 9,
  kGraphs = 10,
  kSparseTensor = 11,
  kSparseTensors = 12,
  kTypeProto = 13,
  kTypeProtos = 14,
};

struct Attribute {
  std::string name;
  AttrType type = AttrType::kUndefined;
  std::string ref_attr_name;  // inside function bodies: refers to the caller's attribute
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  TypeInfo tp;
  std::vector<TypeInfo> tps;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for ai.onnx
  int opset = 0;       // version the model imports for this node's domain
  std::vector<int> inputs;   // value ids in the owning graph; -1 for an omitted optional input
  std::vector<int> outputs;  // value ids; -1 for an omitted optional output
  std::vector<int> implicit_inputs;  // values of this graph that its subgraphs read (outer scope)
  std::vector<Attribute> attrs;

  const Attribute* attr(std::string_view n) const {
    for (const auto& a : attrs)
      if (a.name == n) return &a;
    return nullptr;
  }
  bool has_attr(std::string_view n) const { return attr(n) != nullptr; }
  int64_t attr_int(std::string_view n, int64_t dflt) const;
  float attr_float(std::string_view n, float dflt) const;
  std::string attr_string(std::string_view n, std::string_view dflt = {}) const;
  std::vector<int64_t> attr_ints(std::string_view n, std::vector<int64_t> dflt = {}) const;
  std::vector<float> attr_floats(std::string_view n, std::vector<float> dflt = {}) const;
  std::vector<std::string> attr_strings(std::string_view n) const;
  const Tensor* attr_tensor(std::string_view n) const;
  const Graph* attr_graph(std::string_view n) const;
  /// Number of inputs actually given (trailing omitted ones dropped).
  size_t num_inputs() const;
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] >= 0; }
  bool has_output(size_t i) const { return i < outputs.size() && outputs[i] >= 0; }
  /// "Conv 'conv1'" for messages.
  std::string label() const;
};

/// One named value of a graph (SSA: defined once).
struct ValueSlot {
  std::string name;
  TypeInfo type;            // declared (value_info / input / output) or inferred
  int producer = -1;        // node index producing it, -1 for inputs, initializers and outer values
  bool is_graph_input = false;
  bool has_initializer = false;
  bool is_outer = false;    // defined in an enclosing graph (subgraphs only)
  Tensor initializer;
};

class Graph {
 public:
  std::string name;
  std::string doc_string;
  std::vector<Node> nodes;        // topological order once the loader is done
  std::vector<ValueSlot> values;
  std::vector<int> inputs;        // graph inputs, in order (may include initialized ones, IR<4)
  std::vector<int> outputs;
  const Graph* parent = nullptr;  // enclosing graph of a subgraph
  std::unordered_map<std::string, int> by_name;

  /// Id of a value by name, or -1.
  int find(std::string_view n) const {
    auto it = by_name.find(std::string(n));
    return it == by_name.end() ? -1 : it->second;
  }
  /// Add a value slot (name must be new).
  int add_value(std::string n);
  /// Values this graph reads from enclosing scopes (is_outer).
  std::vector<int> outer_values() const;
};

struct Model {
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) -> version
  std::string producer_name, producer_version, domain, doc_string;
  int64_t model_version = 0;
  bool has_model_version = false;  // the file sets model_version
  std::vector<std::pair<std::string, std::string>> metadata;
  std::shared_ptr<Graph> graph;
  std::shared_ptr<SymbolTable> symbols = std::make_shared<SymbolTable>();  // dim_param names
  std::string path;                 // file it came from ("" for memory)
  std::shared_ptr<void> backing;    // keeps mapped files alive for zero-copy initializers

  int64_t opset(std::string_view domain) const {
    auto it = opsets.find(std::string(domain));
    return it == opsets.end() ? 0 : it->second;
  }
};

/// Normalised domain: "ai.onnx" -> "".
inline std::string_view canonical_domain(std::string_view d) { return d == "ai.onnx" ? std::string_view() : d; }

}  // namespace onyx
