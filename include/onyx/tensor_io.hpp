// onyx: reading and writing tensors in ONNX's TensorProto format (the .pb files of ONNX test data).
#pragma once

#include <string>

#include "onyx/tensor.hpp"

namespace onyx {

/// Reads a serialized onnx.TensorProto file. `name`, if given, receives the stored name.
/// Throws onyx::Error (kIo, kInvalidModel) on a missing or malformed file.
Tensor load_tensor_pb(const std::string& path, std::string* name = nullptr);

/// Writes `t` as a serialized onnx.TensorProto (raw_data) named `name`.
void save_tensor_pb(const std::string& path, const Tensor& t, const std::string& name = "");

}  // namespace onyx
