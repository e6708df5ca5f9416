// Reading .onnx files into the IR.
#pragma once

#include <memory>
#include <string>

#include "ir/graph.hpp"

namespace onyx {

/// Highest ai.onnx opset and IR version onyx accepts. IR 11 to 14 (onnx 1.18 to 1.23, which write
/// IR 14 by default) change nothing onyx reads beyond new element types, and a tensor of a type
/// onyx lacks is an explicit error where it is read.
inline constexpr int64_t kMaxOnnxOpset = 28;
inline constexpr int64_t kMinIrVersion = 3;
inline constexpr int64_t kMaxIrVersion = 14;

/// Maps `path` and builds the model. External data is looked up beside the file.
std::shared_ptr<Model> load_model_file(const std::string& path);
/// Builds a model from bytes (copied). External data, if any, is looked up in `external_dir`
/// ("" = the model may not use external data).
std::shared_ptr<Model> load_model_memory(const void* data, size_t size, const std::string& external_dir = {});

}  // namespace onyx
