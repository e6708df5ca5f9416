// C++ conveniences over onyx's EP plugin ABI (onyx/ep_c_api.h), private to the OpenVINO EP: the
// host's table, errors that become statuses at the entry points (nothing is thrown across the
// ABI), a view of a node, value lookups and the exported ONNX models of export_onnx().
#pragma once

#include <cstdint>
#include <exception>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onyx/ep_c_api.h"

namespace onyx::openvino {

/// The table onyx handed to onyx_ep_plugin_init (valid until exit).
const OnyxEpHostApi& host();
void set_host(const OnyxEpHostApi* api);

/// A struct of the ABI, zeroed, with its struct_size and api_version (ONYX_EP_INIT for C++:
/// value-initialised, so no field is left out).
template <class T>
constexpr T init() {
  T t{};
  t.struct_size = sizeof(T);
  t.api_version = ONYX_EP_API_VERSION;
  return t;
}

template <class... A>
std::string str(const A&... a) {
  std::ostringstream s;
  (s << ... << a);
  return s.str();
}

/// An error of the EP: the entry point that catches it returns it as a status. `status`, when
/// set, is one the host returned (export_onnx, ctx_allocate_value), handed back to onyx as it is.
class Failure : public std::runtime_error {
 public:
  Failure(OnyxEpErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  explicit Failure(OnyxEpStatus* status) : std::runtime_error("(a status of onyx)"), code_(ONYX_EP_FAILURE), status_(status) {}
  OnyxEpErrorCode code() const { return code_; }
  OnyxEpStatus* status() const { return status_; }

 private:
  OnyxEpErrorCode code_;
  OnyxEpStatus* status_ = nullptr;
};

template <class... A>
[[noreturn]] void fail(OnyxEpErrorCode code, const A&... a) {
  throw Failure(code, str(a...));
}

/// A host status for `message` (never throws).
OnyxEpStatus* make_status(OnyxEpErrorCode code, const std::string& message) noexcept;

/// Runs `f` at an entry point of the ABI: what it throws becomes a status.
template <class F>
OnyxEpStatus* guard(F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const Failure& e) {
    return e.status() ? e.status() : make_status(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return make_status(ONYX_EP_OUT_OF_MEMORY, "openvino: out of memory");
  } catch (const std::exception& e) {
    return make_status(ONYX_EP_FAILURE, std::string("openvino: ") + e.what());
  } catch (...) {
    return make_status(ONYX_EP_FAILURE, "openvino: an unknown exception");
  }
}

/// Into onyx's log (never throws).
void log(OnyxEpLogLevel level, const std::string& message) noexcept;

/// ONNX's name of an element type as onyx prints it ("float", "double", "bfloat16").
const char* dtype_name(int32_t dtype);

/// A value's type as a claim or a region sees it: element type and, when known, the shape (a dim
/// below zero is known at run time only).
struct TensorType {
  int32_t dtype = ONYX_EP_UNDEFINED;  // 0: unknown (for an exported part: the value's own)
  bool has_shape = false;
  std::vector<int64_t> dims;

  static TensorType of(const OnyxEpTensor& t);
  bool concrete() const;
  /// "[1,3,224,224]", "?" for a dim known at run time only.
  std::string shape_string() const;
  /// The C form; its dims point into this object.
  OnyxEpTensor c() const;
};

/// A graph value: what graph_value() says of it; ok is false when there is no such value.
struct ValueView {
  bool ok = false;
  OnyxEpValueInfo info{};
  std::string_view name() const { return ok && info.name ? info.name : ""; }
  bool is_constant() const { return ok && info.is_constant; }
  bool is_tensor() const { return ok && info.is_tensor; }
};
ValueView value(const OnyxEpGraph* graph, int64_t id);

/// A node of the graph view (or the form of one a claim asks about).
class NodeView {
 public:
  explicit NodeView(const OnyxEpNode* n) : n_(n) {}
  const OnyxEpNode* handle() const { return n_; }
  std::string_view op_type() const { return host().node_op_type(n_); }
  std::string_view domain() const { return host().node_domain(n_); }
  std::string_view name() const { return host().node_name(n_); }
  /// Input slots, absent ones included.
  size_t input_slots() const { return host().node_num_inputs(n_); }
  /// Inputs up to the last present one (absent trailing inputs do not count).
  size_t num_inputs() const;
  int64_t input(size_t i) const { return host().node_input(n_, i); }
  bool has_input(size_t i) const { return i < input_slots() && input(i) >= 0; }
  size_t num_outputs() const { return host().node_num_outputs(n_); }
  int64_t output(size_t i) const { return host().node_output(n_, i); }
  /// The type of input (output) i as the question gives it; false when unknown.
  bool input_type(size_t i, TensorType* out) const;
  bool output_type(size_t i, TensorType* out) const;
  size_t num_attributes() const { return host().node_num_attributes(n_); }
  bool attribute(const char* name, OnyxEpAttribute* out) const;
  /// The attribute's type (OnyxEpAttrType numbering, ONNX's), 0 when absent.
  int32_t attribute_type(size_t i) const;
  int64_t attr_int(const char* name, int64_t dflt) const;
  std::string attr_string(const char* name, const std::string& dflt) const;
  /// "Conv 'conv1'", "com.microsoft::Gelu": how onyx names a node in its messages.
  std::string label() const;

 private:
  const OnyxEpNode* n_;
};

/// Nodes of a graph to write out as ONNX: `inputs` become graph inputs and `outputs` graph
/// outputs, with the types input_types / output_types give (empty, or dtype 0: the value's own).
struct Part {
  std::vector<const OnyxEpNode*> nodes;
  std::vector<int64_t> inputs;
  std::vector<TensorType> input_types;
  std::vector<int64_t> outputs;
  std::vector<TensorType> output_types;
};

/// A model export_onnx() wrote (released with the object).
class OnnxModel {
 public:
  OnnxModel() = default;
  explicit OnnxModel(OnyxEpOnnxModel* m) : m_(m) {}
  OnnxModel(OnnxModel&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
  OnnxModel& operator=(OnnxModel&& o) noexcept {
    if (this != &o) {
      reset();
      m_ = std::exchange(o.m_, nullptr);
    }
    return *this;
  }
  OnnxModel(const OnnxModel&) = delete;
  OnnxModel& operator=(const OnnxModel&) = delete;
  ~OnnxModel() { reset(); }
  void reset() {
    if (m_) host().release_onnx_model(m_);
    m_ = nullptr;
  }
  explicit operator bool() const { return m_ != nullptr; }
  /// The serialized ModelProto.
  std::string_view bytes() const;
  /// The deferred constants: (input name in the model, graph value it stands for).
  std::vector<std::pair<std::string, int64_t>> constants() const;

 private:
  OnyxEpOnnxModel* m_ = nullptr;
};

/// Parts of `graph` as one ONNX model, part i's names prefixed with prefixes[i] (none when
/// `prefixes` is empty); constants of more than `inline_limit` elements become deferred ones
/// (below zero: none do). Throws Failure carrying the host's status when the export fails.
OnnxModel export_onnx(const OnyxEpGraph* graph, const std::vector<const Part*>& parts, const std::vector<std::string>& prefixes,
                      int64_t inline_limit);

}  // namespace onyx::openvino
