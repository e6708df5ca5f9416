#include "onyx/tensor.hpp"

#include "core/narrow.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <utility>

#include "core/common.hpp"
#include "core/memory_budget.hpp"

namespace onyx {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "InvalidArgument";
    case ErrorCode::kInvalidModel: return "InvalidModel";
    case ErrorCode::kInvalidGraph: return "InvalidGraph";
    case ErrorCode::kNotImplemented: return "NotImplemented";
    case ErrorCode::kRuntime: return "RuntimeError";
    case ErrorCode::kIo: return "IoError";
    case ErrorCode::kEpFailure: return "EpFailure";
    case ErrorCode::kNotAvailable: return "NotAvailable";
    case ErrorCode::kCancelled: return "Cancelled";
    case ErrorCode::kOutOfMemory: return "OutOfMemory";
  }
  return "Unknown";
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < size_; ++i) {
    if (i) s += ",";
    s += (*this)[i] < 0 ? std::string("?") : std::to_string((*this)[i]);
  }
  return s + "]";
}

int64_t checked_numel(const Shape& s, std::string_view what) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) fail(ErrorCode::kInvalidArgument, what, ": negative dimension in shape ", s.to_string());
    if (__builtin_mul_overflow(n, d, &n))
      fail(ErrorCode::kInvalidArgument, what, ": shape ", s.to_string(), " has more elements than fit in 64 bits");
  }
  return n;
}

int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view what) {
  if (axis < -rank || (axis >= rank && !(rank == 0 && axis == 0)))
    fail(ErrorCode::kInvalidArgument, what, ": axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

namespace {

/// Owned storage: aligned block plus, for strings, constructed std::string objects.
struct Storage {
  void* ptr = nullptr;
  int64_t count = 0;
  bool strings = false;
  std::shared_ptr<MemoryBudget> budget;  // the session budget the block counts against, if any
  uint64_t budget_bytes = 0;
  ~Storage() {
    if (strings) {
      auto* s = static_cast<std::string*>(ptr);
      for (int64_t i = 0; i < count; ++i) s[i].~basic_string();
    }
    std::free(ptr);
    if (budget) budget->release(budget_bytes);
  }
};

constexpr size_t kAlign = 64;

thread_local std::shared_ptr<MemoryBudget> t_budget;
// Refuse single allocations larger than this (hostile shapes must not exhaust memory).
constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 40;

}  // namespace

const std::shared_ptr<MemoryBudget>& MemoryBudget::current() { return t_budget; }
MemoryBudget::Scope::Scope(std::shared_ptr<MemoryBudget> b) : previous_(std::exchange(t_budget, std::move(b))) {}
MemoryBudget::Scope::~Scope() { t_budget = std::move(previous_); }

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  if (dtype == DType::kUndefined) fail(ErrorCode::kInvalidArgument, "cannot allocate a tensor of undefined type");
  const int64_t n = checked_numel(shape_, "tensor allocation");
  uint64_t bytes;
  if (__builtin_mul_overflow(static_cast<uint64_t>(n), dtype_size(dtype), &bytes) || bytes > kMaxTensorBytes)
    fail(ErrorCode::kInvalidArgument, "tensor of shape ", shape_.to_string(), " and type ", dtype_name(dtype),
         " is too large to allocate");
  const size_t alloc = std::max<size_t>(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  auto st = std::make_shared<Storage>();
  if (const std::shared_ptr<MemoryBudget>& b = MemoryBudget::current()) {
    b->reserve(alloc, [&] { return str("a tensor of shape ", shape_.to_string(), " and type ", dtype_name(dtype)); });
    st->budget = b;
    st->budget_bytes = alloc;
  }
  void* p = std::aligned_alloc(kAlign, alloc);
  if (!p)
    fail(ErrorCode::kRuntime, "out of memory allocating ", bytes, " bytes for a tensor of shape ", shape_.to_string());
  std::memset(p, 0, alloc);
  st->ptr = p;
  st->count = n;
  if (dtype == DType::kString) {
    auto* s = static_cast<std::string*>(p);
    for (int64_t i = 0; i < n; ++i) new (&s[i]) std::string();
    st->strings = true;
  }
  data_ = p;
  owner_ = std::move(st);
}

Tensor Tensor::view(DType dtype, Shape shape, void* data, std::shared_ptr<void> keep_alive) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  checked_numel(t.shape_, "tensor view");
  t.data_ = data;
  t.owner_ = std::move(keep_alive);
  return t;
}

void Tensor::throw_type_mismatch(DType want) const {
  if (memory_ != 0)
    fail(ErrorCode::kRuntime, "tensor lives in device memory ", device_memory_name(memory_), " and cannot be read on the host");
  fail(ErrorCode::kInvalidArgument, "tensor element type is ", dtype_name(dtype_), ", accessed as ", dtype_name(want));
}

Tensor Tensor::clone() const {
  if (!defined()) return Tensor();
  if (memory_ != 0) fail(ErrorCode::kRuntime, "cannot clone a tensor in device memory ", device_memory_name(memory_), " on the host");
  Tensor t(dtype_, shape_);
  if (dtype_ == DType::kString) {
    const auto* s = static_cast<const std::string*>(data_);
    auto* d = static_cast<std::string*>(t.data_);
    for (int64_t i = 0; i < numel(); ++i) d[i] = s[i];
  } else if (nbytes()) {
    std::memcpy(t.data_, data_, nbytes());
  }
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (checked_numel(shape, "reshape") != numel())
    fail(ErrorCode::kInvalidArgument, "cannot view a tensor of shape ", shape_.to_string(), " as ", shape.to_string());
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

double Tensor::element_as_double(int64_t i) const {
  const void* p = data_;
  switch (dtype_) {
    case DType::kFloat: return static_cast<const float*>(p)[i];
    case DType::kDouble: return static_cast<const double*>(p)[i];
    case DType::kFloat16: return Float16::to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kBFloat16: return BFloat16::to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kInt8:
    case DType::kInt4:
    case DType::kInt2: return static_cast<const int8_t*>(p)[i];  // (4- and 2-bit values: one per byte in memory)
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat4E2M1:
    case DType::kFloat8E8M0: return narrow_float_to_double(dtype_, static_cast<const uint8_t*>(p)[i]);
    case DType::kUInt8:
    case DType::kUInt4:
    case DType::kUInt2:
    case DType::kBool: return static_cast<const uint8_t*>(p)[i];
    case DType::kInt16: return static_cast<const int16_t*>(p)[i];
    case DType::kUInt16: return static_cast<const uint16_t*>(p)[i];
    case DType::kInt32: return static_cast<const int32_t*>(p)[i];
    case DType::kUInt32: return static_cast<const uint32_t*>(p)[i];
    case DType::kInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::kUInt64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

std::string Tensor::summary() const {
  if (!defined()) return "undefined";
  if (memory_ != 0) return str(dtype_name(dtype_), shape_.to_string(), " (in ", device_memory_name(memory_), ")");
  std::string s = str(dtype_name(dtype_), shape_.to_string());
  const int64_t n = numel();
  if (n == 0) return s + " (empty)";
  if (dtype_ == DType::kString) {
    const auto* v = static_cast<const std::string*>(data_);
    s += " [";
    for (int64_t i = 0; i < std::min<int64_t>(n, 4); ++i) s += (i ? ", \"" : "\"") + v[i] + "\"";
    return s + (n > 4 ? ", ...]" : "]");
  }
  if (dtype_ == DType::kComplex64 || dtype_ == DType::kComplex128) return s;
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = element_as_double(i);
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
  }
  s += str(" min=", mn, " max=", mx, " mean=", sum / static_cast<double>(n), " first=[");
  for (int64_t i = 0; i < std::min<int64_t>(n, 5); ++i) s += str(i ? ", " : "", element_as_double(i));
  return s + (n > 5 ? ", ...]" : "]");
}

const Tensor& Value::tensor() const {
  if (kind_ != Kind::kTensor) fail(ErrorCode::kInvalidArgument, "value is not a tensor");
  return tensor_;
}

Tensor& Value::tensor() {
  if (kind_ != Kind::kTensor) fail(ErrorCode::kInvalidArgument, "value is not a tensor");
  return tensor_;
}

Value Value::sequence(std::vector<Tensor> items, DType elem) {
  Value v;
  v.kind_ = Kind::kSequence;
  v.items_ = std::move(items);
  v.elem_ = elem;
  return v;
}

Value Value::optional_none(DType elem, bool is_sequence) {
  Value v;
  v.kind_ = Kind::kOptional;
  v.elem_ = elem;
  v.opt_seq_ = is_sequence;
  return v;
}

Value Value::optional_of(Value inner) {
  Value v;
  v.kind_ = Kind::kOptional;
  v.opt_seq_ = inner.is_sequence();
  v.elem_ = inner.is_sequence() ? inner.elem_dtype() : (inner.is_tensor() ? inner.tensor().dtype() : DType::kUndefined);
  v.inner_ = std::make_shared<const Value>(std::move(inner));
  return v;
}

Value Value::map(Tensor keys, Tensor values) {
  if (!keys.defined() || !values.defined()) fail(ErrorCode::kInvalidArgument, "a map needs defined key and value tensors");
  if (keys.dtype() != DType::kInt64 && keys.dtype() != DType::kString)
    fail(ErrorCode::kInvalidArgument, "map keys must be int64 or string, got ", dtype_name(keys.dtype()));
  if (keys.rank() != 1 || values.rank() != 1 || keys.numel() != values.numel())
    fail(ErrorCode::kInvalidArgument, "a map's keys and values must be 1-D of one length, got ", keys.shape().to_string(), " and ",
         values.shape().to_string());
  Value v;
  v.kind_ = Kind::kMap;
  v.key_ = keys.dtype();
  v.elem_ = values.dtype();
  v.tensor_ = std::move(keys);
  v.map_values_ = std::move(values);
  return v;
}

Value Value::sequence_of_maps(std::vector<Value> maps, DType key, DType value) {
  if (key != DType::kInt64 && key != DType::kString)
    fail(ErrorCode::kInvalidArgument, "map keys must be int64 or string, got ", dtype_name(key));
  for (size_t i = 0; i < maps.size(); ++i)
    if (!maps[i].is_map() || maps[i].map_key_dtype() != key || maps[i].elem_dtype() != value)
      fail(ErrorCode::kInvalidArgument, "element ", i, " of a sequence of map(", dtype_name(key), ", ", dtype_name(value),
           ") is not such a map");
  Value v;
  v.kind_ = Kind::kSequence;
  v.key_ = key;
  v.elem_ = value;
  v.maps_ = std::move(maps);
  return v;
}

const Tensor& Value::map_keys() const {
  if (kind_ != Kind::kMap) fail(ErrorCode::kInvalidArgument, "value is not a map");
  return tensor_;
}

const Tensor& Value::map_values() const {
  if (kind_ != Kind::kMap) fail(ErrorCode::kInvalidArgument, "value is not a map");
  return map_values_;
}

const Value& Value::element() const {
  if (!has_element()) fail(ErrorCode::kInvalidArgument, "optional value is empty");
  return *inner_;
}

}  // namespace onyx
