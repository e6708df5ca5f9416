#include "ir/graph.hpp"

#include "core/common.hpp"

namespace onyx {

std::string TypeInfo::to_string() const {
  switch (kind) {
    case Kind::kTensor: {
      std::string s(dtype_name(dtype));
      return has_shape ? s + shape.to_string() : s;
    }
    case Kind::kSequence: return "seq(" + (elem ? elem->to_string() : std::string("?")) + ")";
    case Kind::kOptional: return "optional(" + (elem ? elem->to_string() : std::string("?")) + ")";
    case Kind::kMap: return "map(" + std::string(dtype_name(dtype)) + ", " + (elem ? elem->to_string() : std::string("?")) + ")";
    case Kind::kSparseTensor: return "sparse_tensor(" + std::string(dtype_name(dtype)) + ")";
    default: return "unknown";
  }
}

std::string TypeInfo::onnx_name() const {
  const std::string inner = elem ? elem->onnx_name() : std::string("unknown");
  switch (kind) {
    case Kind::kTensor: return "tensor(" + std::string(dtype_name(dtype)) + ")";
    case Kind::kSequence: return "seq(" + inner + ")";
    case Kind::kOptional: return "optional(" + inner + ")";
    case Kind::kMap: return "map(" + std::string(dtype_name(dtype)) + "," + inner + ")";
    case Kind::kSparseTensor: return "sparse_tensor(" + std::string(dtype_name(dtype)) + ")";
    default: return "unknown";
  }
}

namespace {
[[noreturn]] void attr_type_error(const Node& n, std::string_view name, const char* want) {
  fail(ErrorCode::kInvalidGraph, n.label(), ": attribute '", name, "' must be of type ", want);
}
}  // namespace

int64_t Node::attr_int(std::string_view n, int64_t dflt) const {
  const Attribute* a = attr(n);
  if (!a) return dflt;
  if (a->type != AttrType::kInt) attr_type_error(*this, n, "int");
  return a->i;
}

float Node::attr_float(std::string_view n, float dflt) const {
  const Attribute* a = attr(n);
  if (!a) return dflt;
  if (a->type == AttrType::kInt) return static_cast<float>(a->i);
  if (a->type != AttrType::kFloat) attr_type_error(*this, n, "float");
  return a->f;
}

std::string Node::attr_string(std::string_view n, std::string_view dflt) const {
  const Attribute* a = attr(n);
  if (!a) return std::string(dflt);
  if (a->type != AttrType::kString) attr_type_error(*this, n, "string");
  return a->s;
}

std::vector<int64_t> Node::attr_ints(std::string_view n, std::vector<int64_t> dflt) const {
  const Attribute* a = attr(n);
  if (!a) return dflt;
  if (a->type == AttrType::kInt) return {a->i};
  if (a->type != AttrType::kInts) attr_type_error(*this, n, "ints");
  return a->ints;
}

std::vector<float> Node::attr_floats(std::string_view n, std::vector<float> dflt) const {
  const Attribute* a = attr(n);
  if (!a) return dflt;
  if (a->type == AttrType::kFloat) return {a->f};
  if (a->type != AttrType::kFloats) attr_type_error(*this, n, "floats");
  return a->floats;
}

std::vector<std::string> Node::attr_strings(std::string_view n) const {
  const Attribute* a = attr(n);
  if (!a) return {};
  if (a->type == AttrType::kString) return {a->s};
  if (a->type != AttrType::kStrings) attr_type_error(*this, n, "strings");
  return a->strings;
}

const Tensor* Node::attr_tensor(std::string_view n) const {
  const Attribute* a = attr(n);
  if (!a) return nullptr;
  if (a->type != AttrType::kTensor && a->type != AttrType::kSparseTensor) attr_type_error(*this, n, "tensor");
  return &a->t;
}

const Graph* Node::attr_graph(std::string_view n) const {
  const Attribute* a = attr(n);
  if (!a) return nullptr;
  if (a->type != AttrType::kGraph) attr_type_error(*this, n, "graph");
  return a->g.get();
}

size_t Node::num_inputs() const {
  size_t n = inputs.size();
  while (n > 0 && inputs[n - 1] < 0) --n;
  return n;
}

std::string Node::label() const {
  std::string s = domain.empty() ? op_type : domain + "::" + op_type;
  if (!name.empty()) s += " '" + name + "'";
  return s;
}

int Graph::add_value(std::string n) {
  const int id = static_cast<int>(values.size());
  if (!n.empty()) by_name.emplace(n, id);
  ValueSlot v;
  v.name = std::move(n);
  values.push_back(std::move(v));
  return id;
}

std::vector<int> Graph::outer_values() const {
  std::vector<int> r;
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].is_outer) r.push_back(static_cast<int>(i));
  return r;
}

}  // namespace onyx
