// The C API (include/onyx/c_api.h): statuses, environment, session builder, sessions, tensors and
// runs, on top of the C++ API. Reports (metadata, placement, registration, availability) are in
// c_api_reports.cpp.
#include <cstdint>
#include <cstring>
#include <memory>

#include "c_api/c_api_impl.hpp"

namespace onyx::capi {

OnyxStatus* out_of_memory_status() noexcept {
  // Built at load time (a short message: no allocation), handed out when nothing can be allocated.
  static OnyxStatus status{ONYX_ERROR_OUT_OF_MEMORY, "out of memory"};
  return &status;
}

OnyxErrorCode code_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return ONYX_ERROR_INVALID_ARGUMENT;
    case ErrorCode::kInvalidModel: return ONYX_ERROR_INVALID_MODEL;
    case ErrorCode::kInvalidGraph: return ONYX_ERROR_INVALID_GRAPH;
    case ErrorCode::kNotImplemented: return ONYX_ERROR_NOT_IMPLEMENTED;
    case ErrorCode::kRuntime: return ONYX_ERROR_RUNTIME;
    case ErrorCode::kIo: return ONYX_ERROR_IO;
    case ErrorCode::kEpFailure: return ONYX_ERROR_EP_FAILURE;
    case ErrorCode::kNotAvailable: return ONYX_ERROR_NOT_AVAILABLE;
    case ErrorCode::kCancelled: return ONYX_ERROR_CANCELLED;
    case ErrorCode::kOutOfMemory: return ONYX_ERROR_OUT_OF_MEMORY;
  }
  return ONYX_ERROR_INTERNAL;
}

DType dtype_of_c(const char* fn, OnyxElementType type) {
  const auto v = static_cast<int32_t>(type);
  if (!dtype_valid(v)) fail(ErrorCode::kInvalidArgument, fn, ": ", v, " is not an element type (1 to ", kMaxDType, ")");
  return static_cast<DType>(v);
}

ep::ExecutionProviderDispatch dispatch_of(const char* fn, const char* name, const char* const* keys,
                                          const char* const* values, size_t n, int error_on_failure) {
  need(fn, name, "name");
  if (!*name) fail(ErrorCode::kInvalidArgument, fn, ": the execution provider's name is empty");
  if (n > 0) {
    need(fn, keys, "option_keys");
    need(fn, values, "option_values");
  }
  ep::Spec spec(name);
  for (size_t i = 0; i < n; ++i) {
    if (!keys[i]) fail(ErrorCode::kInvalidArgument, fn, ": option_keys[", i, "] of execution provider '", name, "' is NULL");
    if (!values[i])
      fail(ErrorCode::kInvalidArgument, fn, ": option_values[", i, "] (option '", keys[i], "' of execution provider '", name,
           "') is NULL");
    spec.set(keys[i], values[i]);
  }
  return spec.build().error_on_failure(error_on_failure != 0);
}

namespace {

/// The shape of `rank` dims at `dims` (NULL allowed for a scalar); every dim must be >= 0.
Shape shape_of(const char* fn, const int64_t* dims, size_t rank) {
  if (rank > 0) need(fn, dims, "shape");
  Shape s;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) fail(ErrorCode::kInvalidArgument, fn, ": dim ", i, " of the shape is ", dims[i], " (must be >= 0)");
    s.push_back(dims[i]);
  }
  return s;
}

/// Natural alignment of an element of `size` bytes (complex types: that of their parts).
size_t alignment_of(DType t) {
  switch (t) {
    case DType::kComplex64: return 4;
    case DType::kComplex128: return 8;
    default: return dtype_size(t);
  }
}

/// A new handle for output `name` of a run: a tensor, the tensor inside an optional, or NULL for an
/// empty optional; a sequence or a map is refused (the C API exchanges tensors only).
std::unique_ptr<OnyxTensor> output_handle(const Value& v, const std::string& name) {
  const Value* x = &v;
  if (x->is_optional()) {
    if (!x->has_element()) return nullptr;
    x = &x->element();
  }
  if (x->is_tensor()) {
    if (!x->tensor().on_host())
      fail(ErrorCode::kRuntime, "onyx_session_run: output '", name, "' is in device memory ",
           device_memory_name(x->tensor().memory()));
    return std::unique_ptr<OnyxTensor>(new OnyxTensor{x->tensor()});
  }
  const char* kind = x->is_sequence() ? "a sequence" : x->is_map() ? "a map" : "not a tensor";
  fail(ErrorCode::kNotImplemented, "onyx_session_run: output '", name, "' is ", kind,
       "; the C API (version ", ONYX_C_API_VERSION, ") returns tensors only");
}

const Tensor& tensor_of(const char* fn, const OnyxTensor* t) {
  need(fn, t, "tensor");
  return t->tensor;
}

void check_index(const char* fn, const Tensor& t, size_t index) {
  if (t.dtype() != DType::kString)
    fail(ErrorCode::kInvalidArgument, fn, ": the tensor's element type is ", dtype_name(t.dtype()), ", not string");
  if (index >= static_cast<size_t>(t.numel()))
    fail(ErrorCode::kInvalidArgument, fn, ": index ", index, " is out of range: the tensor has ", t.numel(), " elements");
}

}  // namespace
}  // namespace onyx::capi

using namespace onyx;
using namespace onyx::capi;

extern "C" {

// ---------------------------------------------------------------------------------------------
// Versions, statuses, logging

uint32_t onyx_api_version(void) { return ONYX_C_API_VERSION; }

const char* onyx_version_string(void) { return onyx::version(); }

OnyxErrorCode onyx_status_code(const OnyxStatus* status) { return status ? status->code : ONYX_OK; }

const char* onyx_status_message(const OnyxStatus* status) { return status ? status->message.c_str() : ""; }

void onyx_status_release(OnyxStatus* status) {
  if (status != out_of_memory_status()) delete status;
}

const char* onyx_error_code_name(OnyxErrorCode code) {
  switch (code) {
    case ONYX_OK: return "Ok";
    case ONYX_ERROR_INVALID_ARGUMENT: return "InvalidArgument";
    case ONYX_ERROR_INVALID_MODEL: return "InvalidModel";
    case ONYX_ERROR_INVALID_GRAPH: return "InvalidGraph";
    case ONYX_ERROR_NOT_IMPLEMENTED: return "NotImplemented";
    case ONYX_ERROR_RUNTIME: return "RuntimeError";
    case ONYX_ERROR_IO: return "IoError";
    case ONYX_ERROR_EP_FAILURE: return "EpFailure";
    case ONYX_ERROR_NOT_AVAILABLE: return "NotAvailable";
    case ONYX_ERROR_CANCELLED: return "Cancelled";
    case ONYX_ERROR_OUT_OF_MEMORY: return "OutOfMemory";
    case ONYX_ERROR_INTERNAL: return "Internal";
  }
  return "Unknown";
}

OnyxStatus* onyx_set_log_level(OnyxLogLevel level) {
  return guarded(__func__, [&](const char* fn) {
    const auto v = static_cast<int>(level);
    if (v < ONYX_LOG_VERBOSE || v > ONYX_LOG_OFF)
      fail(ErrorCode::kInvalidArgument, fn, ": ", v, " is not a log level (0 verbose to 4 off)");
    set_log_level(static_cast<LogLevel>(v));
  });
}

// ---------------------------------------------------------------------------------------------
// Environment

OnyxStatus* onyx_env_create(OnyxEnv** out) {
  if (out) *out = nullptr;
  return guarded(__func__, [&](const char* fn) {
    need(fn, out, "out");
    *out = new OnyxEnv();
  });
}

OnyxStatus* onyx_env_add_execution_provider(OnyxEnv* env, const char* name, const char* const* option_keys,
                                            const char* const* option_values, size_t num_options, int error_on_failure) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, env, "env");
    env->eps.push_back(dispatch_of(fn, name, option_keys, option_values, num_options, error_on_failure));
  });
}

OnyxStatus* onyx_env_commit(const OnyxEnv* env) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, env, "env");
    onyx::init().with_execution_providers(env->eps).commit();
  });
}

void onyx_env_release(OnyxEnv* env) { delete env; }

// ---------------------------------------------------------------------------------------------
// Session builder

OnyxStatus* onyx_session_builder_create(OnyxSessionBuilder** out) {
  if (out) *out = nullptr;
  return guarded(__func__, [&](const char* fn) {
    need(fn, out, "out");
    *out = new OnyxSessionBuilder();
  });
}

void onyx_session_builder_release(OnyxSessionBuilder* builder) { delete builder; }

OnyxStatus* onyx_session_builder_add_execution_provider(OnyxSessionBuilder* builder, const char* name,
                                                        const char* const* option_keys, const char* const* option_values,
                                                        size_t num_options, int error_on_failure) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, builder, "builder");
    builder->builder.add_execution_provider(dispatch_of(fn, name, option_keys, option_values, num_options, error_on_failure));
  });
}

OnyxStatus* onyx_session_builder_disable_environment_execution_providers(OnyxSessionBuilder* builder) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, builder, "builder");
    builder->builder.with_no_environment_execution_providers();
  });
}

OnyxStatus* onyx_session_builder_set_cpu_fallback(OnyxSessionBuilder* builder, int allowed) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, builder, "builder");
    builder->builder.with_cpu_fallback(allowed != 0);
  });
}

OnyxStatus* onyx_session_builder_set_intra_threads(OnyxSessionBuilder* builder, int32_t threads) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, builder, "builder");
    builder->builder.with_intra_threads(threads);
  });
}

OnyxStatus* onyx_session_builder_set_intra_op_spinning(OnyxSessionBuilder* builder, int allowed) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, builder, "builder");
    builder->builder.with_intra_op_spinning(allowed != 0);
  });
}

OnyxStatus* onyx_session_builder_set_optimization_level(OnyxSessionBuilder* builder, OnyxOptimizationLevel level) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, builder, "builder");
    switch (static_cast<int>(level)) {
      case ONYX_OPTIMIZATION_DISABLED: builder->builder.with_optimization_level(GraphOptimizationLevel::kDisabled); break;
      case ONYX_OPTIMIZATION_BASIC: builder->builder.with_optimization_level(GraphOptimizationLevel::kBasic); break;
      case ONYX_OPTIMIZATION_ALL: builder->builder.with_optimization_level(GraphOptimizationLevel::kAll); break;
      default:
        fail(ErrorCode::kInvalidArgument, fn, ": ", static_cast<int>(level),
             " is not an optimization level (0 disabled, 1 basic, 2 all)");
    }
  });
}

OnyxStatus* onyx_session_builder_set_memory_limit(OnyxSessionBuilder* builder, uint64_t bytes) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, builder, "builder");
    builder->builder.with_memory_limit(bytes);
  });
}

OnyxStatus* onyx_session_builder_set_dimension_override(OnyxSessionBuilder* builder, const char* name, int64_t value) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, builder, "builder");
    need(fn, name, "name");
    builder->builder.with_dimension_override(name, value);
  });
}

OnyxStatus* onyx_session_builder_set_input_dimension(OnyxSessionBuilder* builder, const char* input, size_t axis,
                                                     int64_t value) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, builder, "builder");
    need(fn, input, "input");
    builder->builder.with_input_dimension(input, axis, value);
  });
}

OnyxStatus* onyx_session_builder_set_external_data_dir(OnyxSessionBuilder* builder, const char* dir) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, builder, "builder");
    need(fn, dir, "dir");
    builder->builder.with_external_data_dir(dir);
  });
}

OnyxStatus* onyx_session_builder_set_optimized_model_file(OnyxSessionBuilder* builder, const char* path) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, builder, "builder");
    need(fn, path, "path");
    builder->builder.with_optimized_model_file(path);
  });
}

// ---------------------------------------------------------------------------------------------
// Sessions

OnyxStatus* onyx_session_create_from_file(const OnyxSessionBuilder* builder, const char* path, OnyxSession** out) {
  if (out) *out = nullptr;
  return guarded(__func__, [&](const char* fn) {
    need(fn, builder, "builder");
    need(fn, path, "path");
    need(fn, out, "out");
    *out = new OnyxSession{builder->builder.commit_from_file(path)};
  });
}

OnyxStatus* onyx_session_create_from_memory(const OnyxSessionBuilder* builder, const void* data, size_t size,
                                            OnyxSession** out) {
  if (out) *out = nullptr;
  return guarded(__func__, [&](const char* fn) {
    need(fn, builder, "builder");
    need(fn, data, "data");
    need(fn, out, "out");
    *out = new OnyxSession{builder->builder.commit_from_memory(data, size)};
  });
}

void onyx_session_release(OnyxSession* session) { delete session; }

// ---------------------------------------------------------------------------------------------
// Tensors

OnyxStatus* onyx_tensor_create(OnyxElementType type, const int64_t* shape, size_t rank, OnyxTensor** out) {
  if (out) *out = nullptr;
  return guarded(__func__, [&](const char* fn) {
    need(fn, out, "out");
    const DType dt = dtype_of_c(fn, type);
    *out = new OnyxTensor{Tensor(dt, shape_of(fn, shape, rank))};
  });
}

OnyxStatus* onyx_tensor_create_over_buffer(OnyxElementType type, const int64_t* shape, size_t rank, void* data,
                                           size_t data_size, OnyxTensor** out) {
  if (out) *out = nullptr;
  return guarded(__func__, [&](const char* fn) {
    need(fn, out, "out");
    const DType dt = dtype_of_c(fn, type);
    if (dt == DType::kString)
      fail(ErrorCode::kInvalidArgument, fn, ": a string tensor cannot wrap a buffer; use onyx_tensor_create and onyx_tensor_set_string");
    Shape s = shape_of(fn, shape, rank);
    uint64_t numel = 1, bytes = 0;
    for (int64_t d : s)
      if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel))
        fail(ErrorCode::kInvalidArgument, fn, ": the element count of shape ", s.to_string(), " overflows");
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_size(dt)), &bytes))
      fail(ErrorCode::kInvalidArgument, fn, ": the size of a ", dtype_name(dt), s.to_string(), " tensor overflows");
    if (bytes != data_size)
      fail(ErrorCode::kInvalidArgument, fn, ": a ", dtype_name(dt), s.to_string(), " tensor needs ", bytes,
           " bytes, but data_size is ", data_size);
    if (bytes > 0) need(fn, data, "data");
    const size_t align = alignment_of(dt);
    if (data && reinterpret_cast<uintptr_t>(data) % align != 0)
      fail(ErrorCode::kInvalidArgument, fn, ": data (", data, ") is not aligned to ", align, " bytes, as ", dtype_name(dt),
           " elements need");
    *out = new OnyxTensor{Tensor::view(dt, std::move(s), data)};
  });
}

void onyx_tensor_release(OnyxTensor* tensor) { delete tensor; }

OnyxStatus* onyx_tensor_element_type(const OnyxTensor* tensor, OnyxElementType* out) {
  return guarded(__func__, [&](const char* fn) {
    const Tensor& t = tensor_of(fn, tensor);
    need(fn, out, "out");
    *out = static_cast<OnyxElementType>(static_cast<int32_t>(t.dtype()));
  });
}

OnyxStatus* onyx_tensor_shape(const OnyxTensor* tensor, const int64_t** dims, size_t* rank) {
  return guarded(__func__, [&](const char* fn) {
    const Tensor& t = tensor_of(fn, tensor);
    need(fn, dims, "dims");
    need(fn, rank, "rank");
    *dims = t.shape().data();
    *rank = t.rank();
  });
}

OnyxStatus* onyx_tensor_element_count(const OnyxTensor* tensor, int64_t* out) {
  return guarded(__func__, [&](const char* fn) {
    const Tensor& t = tensor_of(fn, tensor);
    need(fn, out, "out");
    *out = t.numel();
  });
}

OnyxStatus* onyx_tensor_size_in_bytes(const OnyxTensor* tensor, size_t* out) {
  return guarded(__func__, [&](const char* fn) {
    const Tensor& t = tensor_of(fn, tensor);
    need(fn, out, "out");
    if (t.dtype() == DType::kString)
      fail(ErrorCode::kInvalidArgument, fn, ": a string tensor has no byte size; read its elements with onyx_tensor_string");
    *out = t.nbytes();
  });
}

OnyxStatus* onyx_tensor_data(OnyxTensor* tensor, void** out) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, tensor, "tensor");
    need(fn, out, "out");
    if (tensor->tensor.dtype() == DType::kString)
      fail(ErrorCode::kInvalidArgument, fn, ": a string tensor's elements are read with onyx_tensor_string and written with onyx_tensor_set_string");
    *out = tensor->tensor.raw_data();
  });
}

OnyxStatus* onyx_tensor_string(const OnyxTensor* tensor, size_t index, const char** data, size_t* length) {
  return guarded(__func__, [&](const char* fn) {
    const Tensor& t = tensor_of(fn, tensor);
    need(fn, data, "data");
    need(fn, length, "length");
    check_index(fn, t, index);
    const std::string& s = static_cast<const std::string*>(t.raw_data())[index];
    *data = s.c_str();
    *length = s.size();
  });
}

OnyxStatus* onyx_tensor_set_string(OnyxTensor* tensor, size_t index, const char* data, size_t length) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, tensor, "tensor");
    if (length > 0) need(fn, data, "data");
    Tensor& t = tensor->tensor;
    check_index(fn, t, index);
    static_cast<std::string*>(t.raw_data())[index].assign(data ? data : "", length);
  });
}

const char* onyx_element_type_name(OnyxElementType type) {
  const auto v = static_cast<int32_t>(type);
  // dtype_name returns views of string literals, so their data is NUL-terminated.
  return dtype_valid(v) ? dtype_name(static_cast<DType>(v)).data() : "";
}

size_t onyx_element_type_size(OnyxElementType type) {
  const auto v = static_cast<int32_t>(type);
  if (!dtype_valid(v) || v == static_cast<int32_t>(DType::kString)) return 0;
  return dtype_size(static_cast<DType>(v));
}

// ---------------------------------------------------------------------------------------------
// Running

OnyxStatus* onyx_run_options_create(OnyxRunOptions** out) {
  if (out) *out = nullptr;
  return guarded(__func__, [&](const char* fn) {
    need(fn, out, "out");
    *out = new OnyxRunOptions();
  });
}

void onyx_run_options_release(OnyxRunOptions* options) { delete options; }

OnyxStatus* onyx_run_options_terminate(const OnyxRunOptions* options) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, options, "options");
    options->options.terminate();
  });
}

OnyxStatus* onyx_run_options_reset(const OnyxRunOptions* options) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, options, "options");
    options->options.reset();
  });
}

OnyxStatus* onyx_session_run(const OnyxSession* session, const OnyxRunOptions* options, const char* const* input_names,
                             const OnyxTensor* const* inputs, size_t num_inputs, const char* const* output_names,
                             size_t num_outputs, OnyxTensor** outputs) {
  if (outputs)
    for (size_t i = 0; i < num_outputs; ++i) outputs[i] = nullptr;
  return guarded(__func__, [&](const char* fn) {
    need(fn, session, "session");
    if (num_inputs > 0) {
      need(fn, input_names, "input_names");
      need(fn, inputs, "inputs");
    }
    if (num_outputs > 0) need(fn, outputs, "outputs");
    const Session& s = session->session;
    Binding binding(s);
    for (size_t i = 0; i < num_inputs; ++i) {
      if (!input_names[i]) fail(ErrorCode::kInvalidArgument, fn, ": input_names[", i, "] is NULL");
      binding.bind_input(input_names[i], inputs[i] ? Value(inputs[i]->tensor) : Value());
    }
    std::vector<std::string> wanted;
    if (output_names) {
      for (size_t i = 0; i < num_outputs; ++i) {
        if (!output_names[i]) fail(ErrorCode::kInvalidArgument, fn, ": output_names[", i, "] is NULL");
        wanted.emplace_back(output_names[i]);
      }
    } else {
      if (num_outputs != s.outputs().size())
        fail(ErrorCode::kInvalidArgument, fn, ": with output_names NULL, num_outputs must be the model's output count, ",
             s.outputs().size(), ", not ", num_outputs);
      for (const IoInfo& o : s.outputs()) wanted.push_back(o.name);
    }
    // Unknown output names fail before the run, as onyx's message for them.
    for (const std::string& w : wanted) {
      bool known = false;
      for (const IoInfo& o : s.outputs()) known = known || o.name == w;
      if (!known) {
        std::vector<std::string> names;
        for (const IoInfo& o : s.outputs()) names.push_back("'" + o.name + "'");
        fail(ErrorCode::kInvalidArgument, "the model has no output named '", w, "' (outputs: ", join(names, ", "), ")");
      }
    }
    if (options) s.run(binding, options->options);
    else s.run(binding);
    std::vector<std::unique_ptr<OnyxTensor>> results;
    for (const std::string& w : wanted) results.push_back(output_handle(binding.output(w), w));
    for (size_t i = 0; i < results.size(); ++i) outputs[i] = results[i].release();
  });
}

}  // extern "C"
