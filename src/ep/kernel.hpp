// The kernel contract: what an EP's kernel sees at creation and at run time, and the manifest
// entries (KernelDef) kernel EPs declare their kernels with.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/common.hpp"
#include "core/thread_pool.hpp"
#include "ep/memory.hpp"
#include "ir/graph.hpp"

namespace onyx {

/// A subgraph prepared for execution (If branches, Loop and Scan bodies). Opaque to kernels.
class PreparedSubgraph {
 public:
  virtual ~PreparedSubgraph() = default;
  virtual size_t num_inputs() const = 0;
  virtual size_t num_outputs() const = 0;
};

class KernelContext;

/// Services the executor offers kernels at run time.
class ExecHooks {
 public:
  virtual ~ExecHooks() = default;
  /// Runs a prepared subgraph with `inputs` (its formal inputs, in order); outer-scope values are
  /// read from the frame of the calling node.
  virtual std::vector<Value> run_subgraph(const PreparedSubgraph& g, std::vector<Value> inputs,
                                          const KernelContext& caller) = 0;
};

/// What a kernel sees while running: its inputs, its outputs (already allocated with the shapes
/// inference gave, unless the op's output shapes depend on data), the thread pool.
class KernelContext {
 public:
  KernelContext(const Node& node, Value* frame, ThreadPool& pool, ExecHooks* hooks, DeviceAllocator* allocator = nullptr,
                void* ep_state = nullptr)
      : node_(node), frame_(frame), pool_(pool), hooks_(hooks), allocator_(allocator), ep_state_(ep_state) {}

  const Node& node() const { return node_; }
  size_t num_inputs() const { return node_.inputs.size(); }
  bool has_input(size_t i) const { return i < node_.inputs.size() && node_.inputs[i] >= 0 && !frame_[node_.inputs[i]].is_none(); }
  const Value& input_value(size_t i) const {
    if (!has_input(i)) missing(i);
    return frame_[node_.inputs[i]];
  }
  const Tensor& input(size_t i) const { return input_value(i).tensor(); }
  const Tensor* optional_input(size_t i) const {
    return has_input(i) && frame_[node_.inputs[i]].is_tensor() ? &frame_[node_.inputs[i]].tensor() : nullptr;
  }

  size_t num_outputs() const { return node_.outputs.size(); }
  bool has_output(size_t i) const { return node_.has_output(i); }
  /// Output i, allocated by the executor. Only valid when the executor could shape it.
  Tensor& output(size_t i) { return frame_[node_.outputs[i]].tensor(); }
  bool output_ready(size_t i) const { return has_output(i) && frame_[node_.outputs[i]].is_tensor() && frame_[node_.outputs[i]].tensor().defined(); }
  /// Allocates output i (for ops whose output shape depends on data); a no-op returning the
  /// existing tensor when one of that type and shape is already there.
  Tensor& allocate_output(size_t i, DType dt, const Shape& shape) {
    Value& v = frame_[node_.outputs[i]];
    const int memory = allocator_ ? allocator_->memory() : 0;
    if (!(v.is_tensor() && v.tensor().defined() && v.tensor().dtype() == dt && v.tensor().shape() == shape &&
          v.tensor().memory() == memory))
      v = Value(allocator_ ? allocator_->allocate(dt, shape) : Tensor(dt, shape));
    return v.tensor();
  }
  /// The node's EP allocator for device memory (null for EPs working in host memory).
  DeviceAllocator* allocator() const { return allocator_; }
  /// The EP's state for the current run (what its begin_run() returned), e.g. a command stream.
  void* ep_state() const { return ep_state_; }
  /// Sets output i to any value (sequences, optionals, views of inputs).
  void set_output(size_t i, Value v) {
    if (has_output(i)) frame_[node_.outputs[i]] = std::move(v);
  }

  ThreadPool& pool() const { return pool_; }
  std::vector<Value> run_subgraph(const PreparedSubgraph& g, std::vector<Value> inputs) const {
    if (!hooks_) fail(ErrorCode::kRuntime, node_.label(), ": subgraphs cannot run here");
    return hooks_->run_subgraph(g, std::move(inputs), *this);
  }
  /// The frame of the graph this node belongs to (for outer-scope lookups).
  Value* frame() const { return frame_; }

 private:
  [[noreturn]] void missing(size_t i) const { fail(ErrorCode::kInvalidGraph, node_.label(), ": required input ", i, " is missing"); }
  const Node& node_;
  Value* frame_;
  ThreadPool& pool_;
  ExecHooks* hooks_;
  DeviceAllocator* allocator_;
  void* ep_state_;
};

/// A prepared kernel for one node. compute() must be safe to call from several threads at once
/// (a session runs concurrently); keep per-node state immutable after construction.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void compute(KernelContext& ctx) const = 0;
  /// If output `out` may share the buffer of an input (pure views: Reshape, Squeeze...), that
  /// input's index; the executor then may pass the same buffer, and compute() sees equal pointers.
  virtual int alias_input(size_t /*out*/) const { return -1; }
  /// If output `out` may be computed into the buffer of an input that nothing reads after this
  /// node (a residual sum accumulated in place), that input's index: the executor then may pass
  /// the same buffer for both, and compute() must give the same result whether it does or not.
  virtual int inplace_input(size_t /*out*/) const { return -1; }
};

/// What a kernel factory sees when the session prepares a node.
struct KernelCreateInfo {
  const Node& node;
  const Graph& graph;
  std::vector<const TypeInfo*> input_types;   // inferred at load (may have symbolic shapes)
  std::vector<const TypeInfo*> output_types;
  std::vector<const Tensor*> constants;      // per input: value when it is a constant initializer
  std::function<std::shared_ptr<PreparedSubgraph>(const Graph&)> prepare_subgraph;
  int num_threads = 1;

  const Tensor* constant(size_t i) const { return i < constants.size() ? constants[i] : nullptr; }
  DType input_dtype(size_t i) const { return i < input_types.size() && input_types[i] ? input_types[i]->elem_dtype() : DType::kUndefined; }
  DType output_dtype(size_t i) const { return i < output_types.size() && output_types[i] ? output_types[i]->elem_dtype() : DType::kUndefined; }
};

using KernelFactory = std::unique_ptr<Kernel> (*)(const KernelCreateInfo&);

/// A set of dtypes as a bit mask (bit = DType value).
using TypeMask = uint32_t;
constexpr TypeMask type_mask(std::initializer_list<DType> ts) {
  TypeMask m = 0;
  for (DType t : ts) m |= TypeMask(1) << static_cast<int>(t);
  return m;
}
constexpr bool mask_has(TypeMask m, DType t) { return (m >> static_cast<int>(t)) & 1; }

namespace types {
inline constexpr TypeMask kFloat = type_mask({DType::kFloat});
inline constexpr TypeMask kFloats = type_mask({DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16});
inline constexpr TypeMask kSignedInts = type_mask({DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64});
inline constexpr TypeMask kUnsignedInts = type_mask({DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64});
inline constexpr TypeMask kInts = kSignedInts | kUnsignedInts;
inline constexpr TypeMask kNumeric = kFloats | kInts;
inline constexpr TypeMask kNumericBool = kNumeric | type_mask({DType::kBool});
inline constexpr TypeMask kAll = kNumericBool | type_mask({DType::kString});
inline constexpr TypeMask kIndex = type_mask({DType::kInt32, DType::kInt64});
}  // namespace types

/// "Input i (or output -1-i) must have a dtype in mask".
struct TypeConstraint {
  int io = 0;
  TypeMask mask = 0;
};

struct Decline;

/// One manifest line: a kernel for (domain, op, opset range, type constraints).
struct KernelDef {
  const char* domain;  // "" = ai.onnx
  const char* op;
  int since;
  int until;  // inclusive
  TypeConstraint types[2];
  KernelFactory create;
  /// Further conditions on the node and its value types (attributes, ranks, constant shapes),
  /// checked after the type constraints; null: none. On refusal it fills `why` (code and message).
  bool (*accepts)(const Node& node, const std::vector<const TypeInfo*>& input_types, Decline* why) = nullptr;
};

/// Why an EP does not take a node.
enum class DeclineCode { kUnsupportedOp, kUnsupportedType, kUnsupportedAttribute, kDynamicShape, kOpsetOutOfRange, kNotWorthOffloading, kOther };
std::string_view decline_code_name(DeclineCode c);

struct Decline {
  DeclineCode code = DeclineCode::kOther;
  std::string message;
};

/// Fills `why` (when given) and returns false: how a claim check or a kernel's acceptance test
/// says no.
inline bool decline(Decline* why, DeclineCode code, std::string message) {
  if (why) *why = {code, std::move(message)};
  return false;
}

/// A kernel manifest, searchable by node.
class KernelRegistry {
 public:
  void add(std::span<const KernelDef> defs) { defs_.insert(defs_.end(), defs.begin(), defs.end()); }
  const std::vector<KernelDef>& defs() const { return defs_; }
  /// The kernel for `node` with these value types, or nullptr with `why` filled in.
  const KernelDef* find(const Node& node, const std::vector<const TypeInfo*>& in_types,
                        const std::vector<const TypeInfo*>& out_types, Decline* why) const;

 private:
  std::vector<KernelDef> defs_;
};

/// Helper for kernels that only need a function and parsed attributes.
template <class State>
class FnKernel final : public Kernel {
 public:
  using Fn = void (*)(const State&, KernelContext&);
  FnKernel(State s, Fn fn) : state_(std::move(s)), fn_(fn) {}
  void compute(KernelContext& ctx) const override { fn_(state_, ctx); }

 private:
  State state_;
  Fn fn_;
};

}  // namespace onyx
