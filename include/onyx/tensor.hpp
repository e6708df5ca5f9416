// onyx: tensors and values (tensor, sequence, optional).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "onyx/dtype.hpp"
#include "onyx/error.hpp"
#include "onyx/shape.hpp"

namespace onyx {

/// An n-dimensional array. A Tensor is a small handle: copying it shares the same storage
/// (like a shared_ptr); use clone() for a deep copy. Storage is either owned (allocated by onyx,
/// 64-byte aligned, zero-initialised) or a view over memory someone else owns (a user buffer, a
/// mapped model file), kept alive by an optional keep-alive handle.
class Tensor {
 public:
  /// An undefined tensor (no dtype, no storage).
  Tensor() = default;
  /// Allocates zero-initialised storage for `shape` (strings are empty). Throws onyx::Error on a
  /// negative dim or a size that does not fit in memory.
  Tensor(DType dtype, Shape shape);

  /// A zero-copy tensor over `data`, which must hold shape.numel() elements of `dtype` and stay
  /// valid as long as the tensor (and its copies) live, or be owned by `keep_alive`.
  static Tensor view(DType dtype, Shape shape, void* data, std::shared_ptr<void> keep_alive = {});
  /// Same, read-only by convention (onyx never writes into an input tensor).
  static Tensor view(DType dtype, Shape shape, const void* data, std::shared_ptr<void> keep_alive = {}) {
    return view(dtype, std::move(shape), const_cast<void*>(data), std::move(keep_alive));
  }

  /// A tensor holding a copy of `values`, which must have shape.numel() elements.
  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values) {
    Tensor t(dtype_of<T>, std::move(shape));
    if (static_cast<int64_t>(values.size()) != t.numel())
      throw Error(ErrorCode::kInvalidArgument, "Tensor::from_vector: " + std::to_string(values.size()) +
                                                   " values for shape " + t.shape().to_string());
    T* d = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) d[i] = values[i];
    return t;
  }
  template <class T>
  static Tensor from_vector(Shape shape, std::initializer_list<T> values) {
    return from_vector(std::move(shape), std::vector<T>(values));
  }
  /// A rank-0 tensor.
  template <class T>
  static Tensor scalar(T v) {
    Tensor t(dtype_of<T>, Shape{});
    *t.data<T>() = v;
    return t;
  }

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t dim(size_t i) const { return shape_[i]; }
  int64_t numel() const { return shape_.numel(); }
  /// Bytes of element storage (numel * dtype_size).
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  /// Host address of the elements (for a device tensor: the EP's buffer handle; never read it).
  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  /// Memory the elements live in: 0 for host memory, otherwise the id of an EP's device memory
  /// (device_memory_name() names it). Tensors handed to and returned by the API are on the host.
  int memory() const { return memory_; }
  bool on_host() const { return memory_ == 0; }
  /// A tensor whose storage is device memory `memory` (an EP's buffer, kept alive by `owner`).
  static Tensor device_tensor(DType dtype, Shape shape, void* handle, std::shared_ptr<void> owner, int memory) {
    Tensor t = view(dtype, std::move(shape), handle, std::move(owner));
    t.memory_ = memory;
    return t;
  }
  /// Typed access; throws onyx::Error if T does not match the dtype.
  template <class T>
  T* data() {
    check_type(dtype_of<T>);
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data() const {
    check_type(dtype_of<T>);
    return static_cast<const T*>(data_);
  }
  /// Element `i` (flat index) converted to double; for printing and tests. Not for strings.
  double element_as_double(int64_t i) const;

  /// A deep copy with owned storage.
  Tensor clone() const;
  /// A view of the same storage with another shape of the same element count.
  Tensor reshaped(Shape shape) const;
  /// The keep-alive handle of the storage (empty for a plain view).
  const std::shared_ptr<void>& storage() const { return owner_; }
  /// Replace shape and data pointer in place (used by the executor to rebind planned buffers
  /// without allocating).
  void rebind(DType dtype, const Shape& shape, void* data, std::shared_ptr<void> owner = {}) {
    dtype_ = dtype;
    shape_ = shape;
    data_ = data;
    owner_ = std::move(owner);
    memory_ = 0;
  }

  /// Short human-readable summary: "float[1,1000] min=.. max=.. mean=..".
  std::string summary() const;

 private:
  void check_type(DType want) const {
    if ((want != dtype_ && !(want == DType::kUInt8 && dtype_ == DType::kBool)) || memory_ != 0) throw_type_mismatch(want);
  }
  [[noreturn]] void throw_type_mismatch(DType want) const;

  DType dtype_ = DType::kUndefined;
  Shape shape_;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
  int memory_ = 0;
};

/// Name of a device memory id ("cpu" for 0).
std::string device_memory_name(int memory);

/// A value flowing through a graph: a tensor, a sequence (of tensors, or of maps), an optional
/// (empty, or holding a tensor or a sequence), or a map. Mirrors ONNX's TypeProto kinds (sparse
/// tensors are not supported).
class Value {
 public:
  enum class Kind : uint8_t { kNone, kTensor, kSequence, kOptional, kMap };

  /// Nothing (an absent optional input).
  Value() = default;
  Value(Tensor t) : kind_(Kind::kTensor), tensor_(std::move(t)) {}  // NOLINT: implicit by design
  /// A sequence of tensors of element type `elem` (needed when `items` is empty).
  static Value sequence(std::vector<Tensor> items, DType elem);
  /// An empty optional whose element would be a tensor (`is_sequence` false) or a sequence.
  static Value optional_none(DType elem, bool is_sequence = false);
  /// An optional holding `v` (a tensor or a sequence).
  static Value optional_of(Value v);
  /// A map (ONNX `map(K, V)`, what ai.onnx.ml's ZipMap makes and DictVectorizer reads): `keys`
  /// 1-D int64 or string; `values` 1-D of the same length, value i for key i.
  static Value map(Tensor keys, Tensor values);
  /// A sequence of maps (ZipMap's output): each a map with keys of `key` and values of `value`
  /// (needed when `maps` is empty).
  static Value sequence_of_maps(std::vector<Value> maps, DType key, DType value);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  bool is_optional() const { return kind_ == Kind::kOptional; }
  bool is_map() const { return kind_ == Kind::kMap; }
  /// The tensor; throws if this is not a tensor.
  const Tensor& tensor() const;
  Tensor& tensor();
  /// Sequence elements (sequence kind).
  const std::vector<Tensor>& items() const { return items_; }
  std::vector<Tensor>& items() { return items_; }
  /// Element dtype of a sequence or optional; the value dtype of a map or a sequence of maps.
  DType elem_dtype() const { return elem_; }
  /// Optional: whether it holds a value, and the value.
  bool has_element() const { return kind_ == Kind::kOptional && inner_ != nullptr; }
  const Value& element() const;
  /// Optional: whether its element type is a sequence.
  bool optional_of_sequence() const { return opt_seq_; }
  /// Map: its keys and values (throw if this is not a map).
  const Tensor& map_keys() const;
  const Tensor& map_values() const;
  /// The key type of a map or of a sequence of maps (elem_dtype() is their value type).
  DType map_key_dtype() const { return key_; }
  /// Sequence: whether its elements are maps, and the maps.
  bool sequence_of_maps() const { return kind_ == Kind::kSequence && key_ != DType::kUndefined; }
  const std::vector<Value>& maps() const { return maps_; }

 private:
  Kind kind_ = Kind::kNone;
  Tensor tensor_;
  std::vector<Tensor> items_;
  DType elem_ = DType::kUndefined;
  bool opt_seq_ = false;
  std::shared_ptr<const Value> inner_;
  DType key_ = DType::kUndefined;  // maps, sequences of maps
  Tensor map_values_;
  std::vector<Value> maps_;
};

}  // namespace onyx
