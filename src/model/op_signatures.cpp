#include "model/op_signatures.hpp"

#include <algorithm>

namespace onyx {
namespace {
#include "model/op_signatures.inc"
}  // namespace

std::span<const OpFormal> OpSignature::inputs() const { return {kFormals + first_input, num_formal_inputs}; }
std::span<const OpFormal> OpSignature::outputs() const { return {kFormals + first_output, num_formal_outputs}; }
std::span<const OpAttrSpec> OpSignature::attrs() const { return {kAttrSpecs + first_attr, num_attrs}; }

const OpAttrSpec* OpSignature::attr(std::string_view n) const {
  for (const OpAttrSpec& a : attrs())
    if (n == a.name) return &a;
  return nullptr;
}

std::span<const OpTypeConstraint> OpSignature::type_constraints() const {
  return {kTypeConstraints + first_constraint, num_constraints};
}

const OpTypeConstraint* OpSignature::constraint(std::string_view type) const {
  for (const OpTypeConstraint& c : type_constraints())
    if (type == c.name) return &c;
  return nullptr;
}

std::span<const OpSignature> op_signatures() { return kSignatures; }

bool op_signature_domain(std::string_view domain) {
  return domain.empty() || domain == "ai.onnx.ml" || domain == "ai.onnx.preview" || domain == "ai.onnx.preview.training" ||
         domain == "com.microsoft";
}

const OpSignature* find_op_signature(std::string_view domain, std::string_view op, int64_t opset) {
  auto key = [](const OpSignature& s) { return std::pair<std::string_view, std::string_view>(s.domain, s.name); };
  const std::pair<std::string_view, std::string_view> want(domain, op);
  const OpSignature* first = std::lower_bound(std::begin(kSignatures), std::end(kSignatures), want,
                                              [&](const OpSignature& s, const auto& w) { return key(s) < w; });
  const OpSignature* found = nullptr;
  for (const OpSignature* s = first; s != std::end(kSignatures) && key(*s) == want && s->since <= opset; ++s) found = s;
  return found;
}

std::string_view attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::kUndefined: return "UNDEFINED";
    case AttrType::kFloat: return "FLOAT";
    case AttrType::kInt: return "INT";
    case AttrType::kString: return "STRING";
    case AttrType::kTensor: return "TENSOR";
    case AttrType::kGraph: return "GRAPH";
    case AttrType::kFloats: return "FLOATS";
    case AttrType::kInts: return "INTS";
    case AttrType::kStrings: return "STRINGS";
    case AttrType::kTensors: return "TENSORS";
    case AttrType::kGraphs: return "GRAPHS";
    case AttrType::kSparseTensor: return "SPARSE_TENSOR";
    case AttrType::kSparseTensors: return "SPARSE_TENSORS";
    case AttrType::kTypeProto: return "TYPE_PROTO";
    case AttrType::kTypeProtos: return "TYPE_PROTOS";
  }
  return "?";
}

}  // namespace onyx
