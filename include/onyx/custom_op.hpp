// onyx: custom operators from C++ code in the process (docs/custom-ops.md). An op of a domain of
// your own ("com.mycompany") gets type inference and a kernel that the CPU EP runs; every session
// of the process then runs models that use it. (A vendor's EP implements its custom ops through
// the EP plugin ABI instead: include/onyx/ep_c_api.h.)
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "onyx/dtype.hpp"
#include "onyx/tensor.hpp"

namespace onyx {

class InferContext;
class KernelContext;

/// What a custom op's type inference sees: its node's inputs and attributes. Dims below zero are
/// not known yet (inference runs when the model loads, and again for each run's input shapes).
class CustomOpInferContext {
 public:
  size_t num_inputs() const;
  /// Whether input i is given (optional inputs may be left out).
  bool has_input(size_t i) const;
  DType input_dtype(size_t i) const;
  /// Whether input i's rank is known.
  bool input_has_shape(size_t i) const;
  std::vector<int64_t> input_shape(size_t i) const;
  /// Input i's value when it is known while planning (a constant), else null.
  const Tensor* input_value(size_t i) const;
  size_t num_outputs() const;
  /// Output i's element type and dims (a dim below zero: not known).
  void set_output(size_t i, DType dtype, const std::vector<int64_t>& dims);
  /// Output i's element type, its shape not known.
  void set_output_unranked(size_t i, DType dtype);

  int64_t attr_int(const std::string& name, int64_t dflt) const;
  float attr_float(const std::string& name, float dflt) const;
  std::string attr_string(const std::string& name, const std::string& dflt = "") const;
  std::vector<int64_t> attr_ints(const std::string& name) const;

  explicit CustomOpInferContext(InferContext& ctx) : ctx_(ctx) {}

 private:
  InferContext& ctx_;
};

/// What a custom op's kernel sees: its inputs (host tensors), its outputs, attributes.
class CustomOpKernelContext {
 public:
  size_t num_inputs() const;
  bool has_input(size_t i) const;
  const Tensor& input(size_t i) const;
  size_t num_outputs() const;
  /// Output i with this type and shape (allocated, or the buffer the session planned for it).
  Tensor& output(size_t i, DType dtype, const std::vector<int64_t>& dims);
  int64_t attr_int(const std::string& name, int64_t dflt) const;
  float attr_float(const std::string& name, float dflt) const;
  std::string attr_string(const std::string& name, const std::string& dflt = "") const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
  /// The node's name (for messages).
  std::string node_name() const;

  explicit CustomOpKernelContext(KernelContext& ctx) : ctx_(ctx) {}

 private:
  KernelContext& ctx_;
};

/// A custom operator: (domain, name) from `since_version` of its domain on.
struct CustomOp {
  std::string domain;  ///< a domain of your own: not "", "ai.onnx", "ai.onnx.ml", "com.microsoft" or "onyx"
  std::string name;
  int since_version = 1;
  /// Sets every output's type from the inputs' and the attributes. Throw onyx::Error to refuse.
  std::function<void(CustomOpInferContext&)> infer;
  /// Computes the outputs. May run on several threads at once (sessions run concurrently).
  std::function<void(CustomOpKernelContext&)> compute;
};

/// Registers `op` for every session of the process, run by the CPU EP. Throws onyx::Error
/// (InvalidArgument) when the domain is one of onyx's, a function is missing, or an op of that
/// domain and name is already registered (by this function or by an EP plugin).
void register_custom_op(CustomOp op);

}  // namespace onyx
