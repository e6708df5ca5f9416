// Op schemas: per op, the versions where it changed and one type-and-shape inference function
// written once for all versions and used both for symbolic shapes at load time and for concrete
// shapes when a run plan is built.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/common.hpp"
#include "ir/graph.hpp"
#include "ir/symbols.hpp"

namespace onyx {

class InferContext;
using InferFn = void (*)(InferContext&);

/// Infers the output types of a subgraph given its input types (for If / Loop / Scan).
using SubgraphInferFn = std::function<std::vector<TypeInfo>(const Graph&, const std::vector<TypeInfo>&)>;

class InferContext {
 public:
  InferContext(const Node& node, std::vector<const TypeInfo*> in_types, std::vector<const Value*> in_values,
               std::vector<TypeInfo>& out_types, std::vector<Value>& out_values, SymbolTable& symbols,
               const SubgraphInferFn* subgraph_infer)
      : node_(node),
        in_types_(std::move(in_types)),
        in_values_(std::move(in_values)),
        out_(out_types),
        out_values_(out_values),
        symbols_(symbols),
        subgraph_infer_(subgraph_infer) {}

  const Node& node() const { return node_; }
  int opset() const { return node_.opset; }

  size_t num_inputs() const { return in_types_.size(); }
  bool has_input(size_t i) const { return i < in_types_.size() && in_types_[i] != nullptr; }
  const TypeInfo& input_type(size_t i) const {
    if (!has_input(i)) fail_node("input ", i, " is required but missing");
    return *in_types_[i];
  }
  DType input_dtype(size_t i) const { return input_type(i).elem_dtype(); }
  /// Rank is known for input i.
  bool input_has_shape(size_t i) const { return has_input(i) && in_types_[i]->is_tensor() && in_types_[i]->has_shape; }
  const Shape& input_shape(size_t i) const { return input_type(i).shape; }
  /// The value of input i when known (a constant, or computed while planning), else nullptr.
  const Tensor* input_tensor(size_t i) const {
    if (i >= in_values_.size() || !in_values_[i] || !in_values_[i]->is_tensor()) return nullptr;
    return &in_values_[i]->tensor();
  }
  const Value* input_value(size_t i) const { return i < in_values_.size() ? in_values_[i] : nullptr; }
  /// Known integer tensor input as int64 values (int32 or int64), or false.
  bool input_ints(size_t i, std::vector<int64_t>& out) const;

  size_t num_outputs() const { return out_.size(); }
  bool has_output(size_t i) const { return node_.has_output(i); }
  TypeInfo& output(size_t i) { return out_[i]; }
  void set_output(size_t i, DType dt, Shape shape) {
    if (i < out_.size()) out_[i] = TypeInfo::tensor(dt, std::move(shape));
  }
  /// Output of known dtype and unknown rank.
  void set_output_unranked(size_t i, DType dt) {
    if (i < out_.size()) out_[i] = TypeInfo::tensor(dt);
  }
  void set_output_type(size_t i, TypeInfo t) {
    if (i < out_.size()) out_[i] = std::move(t);
  }
  /// Records the value of output i when inference can compute it cheaply from shapes alone
  /// (Shape, Size, Constant); downstream inference and planning then treat it as a constant.
  void set_output_value(size_t i, Value v) {
    if (i < out_values_.size()) out_values_[i] = std::move(v);
  }
  /// Output i has the type and shape of input j.
  void propagate(size_t i, size_t j) { set_output_type(i, input_type(j)); }

  /// A new unknown dimension.
  int64_t fresh() { return symbols_.fresh(); }
  /// A dimension computed in 128 bits from attributes or data, refused beyond 2^60 (a hostile
  /// pad or repeat count must give an error, not a signed overflow).
  int64_t checked_dim(__int128 v) const {
    if (v > (__int128(1) << 60) || v < -(__int128(1) << 60)) fail_node("a dimension of the output overflows");
    return static_cast<int64_t>(v);
  }
  /// A shape of `rank` unknown dims. A rank taken from data (Expand's or Reshape's shape input
  /// declared with millions of elements) above kMaxInferredRank is an error, not a loop that
  /// never ends.
  static constexpr size_t kMaxInferredRank = 1024;
  Shape fresh_shape(size_t rank) {
    if (rank > kMaxInferredRank) fail_node("an output of rank ", rank, " (above ", kMaxInferredRank, ") is not supported");
    Shape s;
    for (size_t k = 0; k < rank; ++k) s.push_back(fresh());
    return s;
  }
  SymbolTable& symbols() { return symbols_; }

  std::vector<TypeInfo> infer_subgraph(const Graph& g, const std::vector<TypeInfo>& inputs) const {
    if (!subgraph_infer_) fail_node("subgraph inference is not available here");
    return (*subgraph_infer_)(g, inputs);
  }

  template <class... A>
  [[noreturn]] void fail_node(const A&... args) const {
    fail(ErrorCode::kInvalidGraph, node_.label(), ": ", args...);
  }
  /// Throws unless input i has one of the given dtypes.
  void require_dtype(size_t i, std::initializer_list<DType> allowed) const;

 private:
  const Node& node_;
  std::vector<const TypeInfo*> in_types_;
  std::vector<const Value*> in_values_;
  std::vector<TypeInfo>& out_;
  std::vector<Value>& out_values_;
  SymbolTable& symbols_;
  const SubgraphInferFn* subgraph_infer_;
};

/// One operator of one domain.
struct OpSchema {
  std::string domain;         // "" = ai.onnx
  std::string name;
  std::vector<int> versions;  // opset versions where the op was introduced or changed, ascending
  InferFn infer = nullptr;
  /// Version in effect at `opset` (largest entry <= opset), or 0 if the op does not exist yet.
  int since(int opset) const {
    int v = 0;
    for (int x : versions)
      if (x <= opset) v = x;
    return v;
  }
};

class OpRegistry {
 public:
  /// The registry with every op onyx knows (built once, thread-safe).
  static const OpRegistry& global();
  void add(std::string domain, std::string name, std::vector<int> versions, InferFn infer);
  const OpSchema* find(std::string_view domain, std::string_view name) const;
  const std::vector<OpSchema>& all() const { return schemas_; }

 private:
  std::vector<OpSchema> schemas_;
};

/// Shape helpers shared by the op families. Dims may be symbolic (negative).
namespace shape_util {
/// Numpy-style broadcast of two shapes; throws via ctx on incompatible concrete dims.
Shape broadcast(InferContext& ctx, const Shape& a, const Shape& b);
/// Multidirectional broadcast of every present input (inputs without shape make the output unranked).
bool broadcast_inputs(InferContext& ctx, size_t first, size_t last, Shape& out);
/// a op b when both known, else a fresh symbol.
int64_t dim_or_fresh(InferContext& ctx, bool known, int64_t value);
}  // namespace shape_util

}  // namespace onyx
