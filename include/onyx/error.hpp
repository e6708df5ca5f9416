// onyx: public error type.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace onyx {

/// What kind of failure an onyx::Error reports.
enum class ErrorCode {
  kInvalidArgument,  ///< The caller passed something wrong (name, shape, dtype, option value).
  kInvalidModel,     ///< The model file is malformed: truncated, corrupt, or violates the ONNX spec.
  kInvalidGraph,     ///< The graph is ill-formed: cycle, undefined value, bad attribute.
  kNotImplemented,   ///< Valid ONNX that this build of onyx does not support (op, version, dtype).
  kRuntime,          ///< A failure while running: out-of-range index in data, kernel failure.
  kIo,               ///< The file system refused: missing file, unreadable, cannot map.
  kEpFailure,        ///< An execution provider failed to register or to run.
  kNotAvailable,     ///< An execution provider is not built, not loadable or not usable here.
  kCancelled,        ///< The run was stopped by RunOptions::terminate().
  kOutOfMemory,      ///< A run would pass the session's memory limit (SessionBuilder::with_memory_limit).
};

/// Name of an error code, e.g. "InvalidModel".
std::string_view error_code_name(ErrorCode code);

/// The exception the onyx API throws. The message names what went wrong and where
/// (model, node, op, input index, dtype) in words a user can act on.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  /// The category of the failure.
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace onyx
