// The C API's handles and the guard every entry point runs its body in (include/onyx/c_api.h).
#pragma once

#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/common.hpp"
#include "onyx/c_api.h"
#include "onyx/onyx.hpp"

struct OnyxStatus {
  OnyxErrorCode code;
  std::string message;
};

struct OnyxEnv {
  std::vector<onyx::ep::ExecutionProviderDispatch> eps;
};

struct OnyxSessionBuilder {
  onyx::SessionBuilder builder;
};

struct OnyxSession {
  onyx::Session session;
};

struct OnyxTensor {
  onyx::Tensor tensor;
};

struct OnyxRunOptions {
  onyx::RunOptions options;
};

struct OnyxPlacement {
  onyx::Placement placement;
};

struct OnyxEpAvailability {
  onyx::ep::Availability availability;
};

namespace onyx::capi {

/// The shared out-of-memory status, handed out when a status cannot be allocated (onyx_status_release
/// leaves it alone).
OnyxStatus* out_of_memory_status() noexcept;

/// A new status with code `code` and the message `message()` makes, or the shared out-of-memory
/// one when either cannot be allocated.
template <class M>
OnyxStatus* make_status(OnyxErrorCode code, M&& message) noexcept {
  try {
    return new OnyxStatus{code, message()};
  } catch (...) {
    return out_of_memory_status();
  }
}

OnyxErrorCode code_of(ErrorCode code);

/// Throws kInvalidArgument "FN: ARG is NULL" when `p` is NULL.
template <class T>
void need(const char* fn, const T* p, const char* arg) {
  if (!p) fail(ErrorCode::kInvalidArgument, fn, ": ", arg, " is NULL");
}

/// Writes `v` through `out` when the caller asked for it (outputs that may be NULL).
template <class T, class V>
void put(T* out, V&& v) {
  if (out) *out = std::forward<V>(v);
}

/// Runs `body(fn)` and turns what it throws into a status: onyx::Error into its code and message,
/// std::bad_alloc into ONYX_ERROR_OUT_OF_MEMORY, anything else into ONYX_ERROR_INTERNAL. NULL when
/// it returns normally.
template <class F>
OnyxStatus* guarded(const char* fn, F&& body) noexcept {
  try {
    body(fn);
    return nullptr;
  } catch (const Error& e) {
    return make_status(code_of(e.code()), [&] { return std::string(e.what()); });
  } catch (const std::bad_alloc&) {
    return make_status(ONYX_ERROR_OUT_OF_MEMORY, [&] { return std::string(fn) + ": out of memory"; });
  } catch (const std::exception& e) {
    return make_status(ONYX_ERROR_INTERNAL, [&] { return std::string(fn) + ": " + e.what(); });
  } catch (...) {
    return make_status(ONYX_ERROR_INTERNAL, [&] { return std::string(fn) + ": unknown exception"; });
  }
}

/// The DType of a C element type; throws kInvalidArgument (naming `fn`) for a value that is none.
DType dtype_of_c(const char* fn, OnyxElementType type);

/// An EP request from the C arguments (onyx_env_/onyx_session_builder_add_execution_provider).
ep::ExecutionProviderDispatch dispatch_of(const char* fn, const char* name, const char* const* keys,
                                          const char* const* values, size_t n, int error_on_failure);

}  // namespace onyx::capi
