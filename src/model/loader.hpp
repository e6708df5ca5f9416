// Reading .onnx files into the IR.
#pragma once

#include <memory>
#include <string>

#include "ir/graph.hpp"

namespace onyx {

/// Highest ai.onnx opset and IR version onyx accepts.
inline constexpr int64_t kMaxOnnxOpset = 21;
inline constexpr int64_t kMinIrVersion = 3;
inline constexpr int64_t kMaxIrVersion = 10;

/// Maps `path` and builds the model. External data is looked up beside the file.
std::shared_ptr<Model> load_model_file(const std::string& path);
/// Builds a model from bytes (copied). External data, if any, is looked up in `external_dir`
/// ("" = the model may not use external data).
std::shared_ptr<Model> load_model_memory(const void* data, size_t size, const std::string& external_dir = {});

}  // namespace onyx
