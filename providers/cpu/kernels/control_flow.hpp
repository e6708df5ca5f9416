// Helpers shared by the control-flow and sequence kernels.
#pragma once

#include <string>

#include "kernels/common.hpp"

namespace onyx::cpu {

/// `t`, or a copy of it when it does not own its storage. Tensors without an owner live in memory
/// the executor reuses (the activation arena) or the caller owns; values that outlive the node
/// reading them (sequence elements, optional contents, If / Loop / Scan results) must not point
/// there.
inline Tensor owned_tensor(const Tensor& t) { return !t.defined() || t.storage() ? t : t.clone(); }

inline Value owned_value(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kTensor: return Value(owned_tensor(v.tensor()));
    case Value::Kind::kSequence: {
      bool all_owned = true;
      for (const Tensor& t : v.items()) all_owned &= !t.defined() || t.storage() != nullptr;
      if (all_owned) return v;
      std::vector<Tensor> items;
      items.reserve(v.items().size());
      for (const Tensor& t : v.items()) items.push_back(owned_tensor(t));
      return Value::sequence(std::move(items), v.elem_dtype());
    }
    case Value::Kind::kOptional: return v.has_element() ? Value::optional_of(owned_value(v.element())) : v;
    default: return v;
  }
}

/// Sets output i to tensor `t`: copied into the output buffer when the executor allocated one
/// (it must then have t's type and shape), else shared.
inline void emit_tensor(KernelContext& ctx, size_t i, const Tensor& t, const char* what) {
  if (!ctx.has_output(i)) return;
  if (ctx.output_ready(i)) {
    Tensor& out = ctx.output(i);
    if (out.dtype() != t.dtype() || !(out.shape() == t.shape()))
      fail(ErrorCode::kRuntime, what, " is ", dtype_name(t.dtype()), t.shape().to_string(), " but shape inference planned ",
           dtype_name(out.dtype()), out.shape().to_string());
    if (out.raw_data() != t.raw_data()) copy_elements(t.dtype(), t.raw_data(), out.raw_data(), t.numel());
    return;
  }
  ctx.set_output(i, Value(t));
}

/// "tensor float[2,3]", "sequence of 2 int64 tensors", "empty optional" (for messages).
inline std::string describe_value(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kTensor: return str("tensor ", dtype_name(v.tensor().dtype()), v.tensor().shape().to_string());
    case Value::Kind::kSequence:
      if (v.sequence_of_maps()) return str("sequence of ", v.maps().size(), " maps");
      return str("sequence of ", v.items().size(), " ", dtype_name(v.elem_dtype()), " tensors");
    case Value::Kind::kMap: return str("map(", dtype_name(v.map_key_dtype()), ", ", dtype_name(v.elem_dtype()), ")");
    case Value::Kind::kOptional: return v.has_element() ? "optional holding a " + describe_value(v.element()) : std::string("empty optional");
    default: return "no value";
  }
}

/// Reads a one-element integer tensor (int32 or int64).
inline int64_t read_index(const Tensor& t, const char* what) {
  if (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32)
    fail(ErrorCode::kInvalidArgument, what, " must be int32 or int64, got ", dtype_name(t.dtype()));
  if (t.numel() != 1) fail(ErrorCode::kInvalidArgument, what, " must hold exactly one value, got shape ", t.shape().to_string());
  return int_at(t, 0);
}

}  // namespace onyx::cpu
