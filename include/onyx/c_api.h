/* onyx: the C API — sessions, tensors and reports behind opaque handles, for C programs and as
 * the base of other languages' bindings. Compiles as C99 and as C++. docs/c-api.md describes it.
 *
 * Conventions
 * - Every function that can fail returns an OnyxStatus*: NULL on success, otherwise a status that
 *   the caller owns and frees with onyx_status_release(). It carries an OnyxErrorCode and onyx's
 *   message (which names what went wrong and where). No function lets a C++ exception out.
 * - A pointer argument must not be NULL unless its documentation says it may be; a NULL one gives
 *   ONYX_ERROR_INVALID_ARGUMENT naming the function and the argument.
 * - Results go into output arguments, which are written only on success (handle outputs are set to
 *   NULL on failure).
 * - A function named *_create makes a handle that the caller frees with the matching *_release.
 *   Every *_release accepts NULL. Strings and arrays handed out (const char*, const int64_t*) are
 *   borrowed from the handle they came from and stay valid until it is released (for a tensor's
 *   string element: until that element is set again).
 * - Booleans are int: 0 is false, anything else true.
 * - Thread safety: a session may run from many threads at once; onyx_run_options_terminate() may be
 *   called from any thread. Every other handle is used by one thread at a time (or only read).
 * - Versioning: ONYX_C_API_VERSION only grows. Functions and enum values are only added, never
 *   changed or removed, so a program built against this header runs with any library whose
 *   onyx_api_version() is at least the header's ONYX_C_API_VERSION.
 */
#ifndef ONYX_C_API_H
#define ONYX_C_API_H

#include <stddef.h>
#include <stdint.h>

/** The version of this header's API (what onyx_api_version() returns for the library built with it). */
#define ONYX_C_API_VERSION 1

#if defined(__GNUC__) || defined(__clang__)
#define ONYX_C_EXPORT __attribute__((visibility("default")))
#define ONYX_C_MUST_USE __attribute__((warn_unused_result))
#else
#define ONYX_C_EXPORT
#define ONYX_C_MUST_USE
#endif
/* A function that returns a status, which must be checked (and released when not NULL). */
#define ONYX_C_STATUS ONYX_C_EXPORT ONYX_C_MUST_USE OnyxStatus*

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Handles (opaque) */

typedef struct OnyxStatus OnyxStatus;                  /**< an error: code and message */
typedef struct OnyxEnv OnyxEnv;                        /**< environment settings (default EPs) */
typedef struct OnyxSessionBuilder OnyxSessionBuilder;  /**< options for new sessions */
typedef struct OnyxSession OnyxSession;                /**< a loaded, prepared model */
typedef struct OnyxIoInfo OnyxIoInfo;                  /**< a model input or output (borrowed from its session) */
typedef struct OnyxTensor OnyxTensor;                  /**< an n-dimensional array on the host */
typedef struct OnyxRunOptions OnyxRunOptions;          /**< per-run options (cancellation) */
typedef struct OnyxPlacement OnyxPlacement;            /**< where every node of a session runs, and why */
typedef struct OnyxEpAvailability OnyxEpAvailability;  /**< how far an EP gets on this machine */

/* ---------------------------------------------------------------------------------------------
 * Enumerations. Each type is an int32_t (so any value crosses the boundary safely: one a
 * function does not know is an invalid argument) with named constants; values are fixed, new ones
 * are only added. */

/** What kind of failure a status reports (onyx::ErrorCode, plus ONYX_ERROR_INTERNAL). */
typedef int32_t OnyxErrorCode;
enum {
  ONYX_OK = 0,                      /**< success (the code of a NULL status) */
  ONYX_ERROR_INVALID_ARGUMENT = 1,  /**< the caller passed something wrong: NULL, name, shape, type, option */
  ONYX_ERROR_INVALID_MODEL = 2,     /**< the model file is malformed */
  ONYX_ERROR_INVALID_GRAPH = 3,     /**< the graph is ill-formed */
  ONYX_ERROR_NOT_IMPLEMENTED = 4,   /**< valid ONNX (or a request) this onyx does not support */
  ONYX_ERROR_RUNTIME = 5,           /**< a failure while running */
  ONYX_ERROR_IO = 6,                /**< the file system refused: missing file, unreadable */
  ONYX_ERROR_EP_FAILURE = 7,        /**< an execution provider failed to register or to run */
  ONYX_ERROR_NOT_AVAILABLE = 8,     /**< an execution provider is not built, loadable or usable here */
  ONYX_ERROR_CANCELLED = 9,         /**< the run was stopped by onyx_run_options_terminate() */
  ONYX_ERROR_OUT_OF_MEMORY = 10,    /**< an allocation failed, or a run would pass the memory limit */
  ONYX_ERROR_INTERNAL = 11          /**< a failure onyx did not expect (a bug: please report it) */
};

/** Element type of a tensor: the values are ONNX's TensorProto.DataType. The 4- and 2-bit types
 *  are stored unpacked, one element per byte. */
typedef int32_t OnyxElementType;
enum {
  ONYX_TYPE_UNDEFINED = 0,
  ONYX_TYPE_FLOAT = 1,
  ONYX_TYPE_UINT8 = 2,
  ONYX_TYPE_INT8 = 3,
  ONYX_TYPE_UINT16 = 4,
  ONYX_TYPE_INT16 = 5,
  ONYX_TYPE_INT32 = 6,
  ONYX_TYPE_INT64 = 7,
  ONYX_TYPE_STRING = 8, /**< elements read and written with onyx_tensor_string / onyx_tensor_set_string */
  ONYX_TYPE_BOOL = 9,   /**< one byte per element, 0 or 1 */
  ONYX_TYPE_FLOAT16 = 10,
  ONYX_TYPE_DOUBLE = 11,
  ONYX_TYPE_UINT32 = 12,
  ONYX_TYPE_UINT64 = 13,
  ONYX_TYPE_COMPLEX64 = 14,
  ONYX_TYPE_COMPLEX128 = 15,
  ONYX_TYPE_BFLOAT16 = 16,
  ONYX_TYPE_FLOAT8E4M3FN = 17,
  ONYX_TYPE_FLOAT8E4M3FNUZ = 18,
  ONYX_TYPE_FLOAT8E5M2 = 19,
  ONYX_TYPE_FLOAT8E5M2FNUZ = 20,
  ONYX_TYPE_UINT4 = 21,
  ONYX_TYPE_INT4 = 22,
  ONYX_TYPE_FLOAT4E2M1 = 23,
  ONYX_TYPE_FLOAT8E8M0 = 24,
  ONYX_TYPE_UINT2 = 25,
  ONYX_TYPE_INT2 = 26
};

/** What a model input or output holds. */
typedef int32_t OnyxValueKind;
enum {
  ONYX_VALUE_TENSOR = 1,
  ONYX_VALUE_SEQUENCE = 2,
  ONYX_VALUE_OPTIONAL = 3,
  ONYX_VALUE_MAP = 4
};

/** How much onyx rewrites the graph before running it (docs/optimizer.md). */
typedef int32_t OnyxOptimizationLevel;
enum {
  ONYX_OPTIMIZATION_DISABLED = 0, /**< run the graph as written */
  ONYX_OPTIMIZATION_BASIC = 1,    /**< constant folding and removal of no-op nodes */
  ONYX_OPTIMIZATION_ALL = 2       /**< everything, fusions included (the default) */
};

/** Who asked for an execution provider (onyx::EpRegistration::Source). */
typedef int32_t OnyxEpSource;
enum {
  ONYX_EP_SOURCE_SESSION = 0,     /**< the session builder */
  ONYX_EP_SOURCE_ENVIRONMENT = 1, /**< the environment's defaults (onyx_env_commit) */
  ONYX_EP_SOURCE_IMPLICIT = 2     /**< the CPU EP, added last when not listed */
};

/** What became of a requested execution provider (onyx::EpRegistration::Outcome). */
typedef int32_t OnyxEpOutcome;
enum {
  ONYX_EP_REGISTERED = 0,
  ONYX_EP_SKIPPED = 1,  /**< could not register; the reason says why */
  ONYX_EP_DUPLICATE = 2 /**< asked for again; the first request keeps its priority */
};

/** Severity of onyx's log messages (written to stderr). */
typedef int32_t OnyxLogLevel;
enum {
  ONYX_LOG_VERBOSE = 0,
  ONYX_LOG_INFO = 1,
  ONYX_LOG_WARNING = 2, /**< the default */
  ONYX_LOG_ERROR = 3,
  ONYX_LOG_OFF = 4
};

/* ---------------------------------------------------------------------------------------------
 * Versions, statuses, logging */

/** ONYX_C_API_VERSION of the library (compare with the header's to detect an older library). */
ONYX_C_EXPORT uint32_t onyx_api_version(void);
/** The library's version, "0.1.0". */
ONYX_C_EXPORT const char* onyx_version_string(void);

/** The status's code; ONYX_OK for NULL. */
ONYX_C_EXPORT OnyxErrorCode onyx_status_code(const OnyxStatus* status);
/** The status's message; "" for NULL. Valid until the status is released. */
ONYX_C_EXPORT const char* onyx_status_message(const OnyxStatus* status);
/** Frees a status (NULL is fine). */
ONYX_C_EXPORT void onyx_status_release(OnyxStatus* status);
/** Name of an error code: "Ok", "InvalidArgument", "InvalidModel", ..., "Internal"; "Unknown" for a
 *  value this library does not know. */
ONYX_C_EXPORT const char* onyx_error_code_name(OnyxErrorCode code);

/** Messages below `level` are dropped (process-wide; default ONYX_LOG_WARNING, or the environment
 *  variable ONYX_LOG_LEVEL). */
ONYX_C_STATUS onyx_set_log_level(OnyxLogLevel level);

/* ---------------------------------------------------------------------------------------------
 * Execution providers (EPs), by name: "cpu", "onednn", "xnnpack", "vulkan", "cuda", ... as
 * `onyx providers` lists them (docs/execution-providers.md). */

/** How far EP `name` gets on this machine. An unknown name is not an error: the result says
 *  "unknown execution provider" in its reason. */
ONYX_C_STATUS onyx_ep_availability(const char* name, OnyxEpAvailability** out);
/** The levels (each implies the previous one) and the reason for the first missing one ("" when
 *  usable), the EP's version (once loadable) and its module's path ("" when built into libonyx).
 *  Each output may be NULL. */
ONYX_C_STATUS onyx_ep_availability_get(const OnyxEpAvailability* availability, int* built, int* loadable, int* usable,
                                       const char** reason, const char** version, const char** module);
ONYX_C_EXPORT void onyx_ep_availability_release(OnyxEpAvailability* availability);

/* ---------------------------------------------------------------------------------------------
 * Environment: default EPs appended after every new session's own EPs (onyx::init()). */

/** Empty settings; nothing changes until onyx_env_commit(). */
ONYX_C_STATUS onyx_env_create(OnyxEnv** out);
/** Appends a default EP: `num_options` key/value pairs of the EP's options (the arrays may be NULL
 *  when it is 0), and whether failing to register it makes session creation fail. */
ONYX_C_STATUS onyx_env_add_execution_provider(OnyxEnv* env, const char* name, const char* const* option_keys,
                                              const char* const* option_values, size_t num_options,
                                              int error_on_failure);
/** Makes these settings the process's (onyx::init().with_execution_providers(...).commit()).
 *  Sessions created before keep what they captured. The handle may be released afterwards. */
ONYX_C_STATUS onyx_env_commit(const OnyxEnv* env);
ONYX_C_EXPORT void onyx_env_release(OnyxEnv* env);

/* ---------------------------------------------------------------------------------------------
 * Session builder (onyx::SessionBuilder). A builder can make any number of sessions. */

ONYX_C_STATUS onyx_session_builder_create(OnyxSessionBuilder** out);
ONYX_C_EXPORT void onyx_session_builder_release(OnyxSessionBuilder* builder);
/** Appends an EP in priority order (each node runs on the first EP that takes it; the CPU EP takes
 *  the rest). `num_options` key/value pairs set its options (the arrays may be NULL when it is 0;
 *  a key given twice keeps the last value). An EP that cannot register (unknown, not built, no
 *  device) is skipped, as the registration report shows, or, with `error_on_failure`, makes
 *  session creation fail. An unknown option key or a malformed value always makes it fail. */
ONYX_C_STATUS onyx_session_builder_add_execution_provider(OnyxSessionBuilder* builder, const char* name,
                                                          const char* const* option_keys,
                                                          const char* const* option_values, size_t num_options,
                                                          int error_on_failure);
/** Leaves out the environment's default EPs. */
ONYX_C_STATUS onyx_session_builder_disable_environment_execution_providers(OnyxSessionBuilder* builder);
/** With 0 (strict placement), session creation fails when a node would run on the CPU EP, listing
 *  those nodes and why each EP declined them. Default 1. */
ONYX_C_STATUS onyx_session_builder_set_cpu_fallback(OnyxSessionBuilder* builder, int allowed);
/** Intra-op threads, the calling thread included; 0 (default) is one per core. */
ONYX_C_STATUS onyx_session_builder_set_intra_threads(OnyxSessionBuilder* builder, int32_t threads);
/** Whether idle intra-op threads spin briefly before sleeping (default 1). */
ONYX_C_STATUS onyx_session_builder_set_intra_op_spinning(OnyxSessionBuilder* builder, int allowed);
ONYX_C_STATUS onyx_session_builder_set_optimization_level(OnyxSessionBuilder* builder, OnyxOptimizationLevel level);
/** Caps the host memory a session's runs hold at once, in bytes (0, the default: no limit). A run
 *  that would pass it fails with ONYX_ERROR_OUT_OF_MEMORY naming the node. */
ONYX_C_STATUS onyx_session_builder_set_memory_limit(OnyxSessionBuilder* builder, uint64_t bytes);
/** Fixes the symbolic dimension `name` (a dim_param) to `value` on every input that has it. */
ONYX_C_STATUS onyx_session_builder_set_dimension_override(OnyxSessionBuilder* builder, const char* name,
                                                          int64_t value);
/** Fixes dim `axis` of input `input` to `value`. */
ONYX_C_STATUS onyx_session_builder_set_input_dimension(OnyxSessionBuilder* builder, const char* input, size_t axis,
                                                       int64_t value);
/** Directory where external data files are looked up for onyx_session_create_from_memory. */
ONYX_C_STATUS onyx_session_builder_set_external_data_dir(OnyxSessionBuilder* builder, const char* dir);
/** Writes the model as onyx runs it (after the optimizer) to `path` when a session is created. */
ONYX_C_STATUS onyx_session_builder_set_optimized_model_file(OnyxSessionBuilder* builder, const char* path);

/* ---------------------------------------------------------------------------------------------
 * Sessions */

/** Loads, checks and prepares the model at `path` with the builder's options. */
ONYX_C_STATUS onyx_session_create_from_file(const OnyxSessionBuilder* builder, const char* path, OnyxSession** out);
/** Same, from `size` bytes at `data` (copied: the buffer may be freed afterwards). */
ONYX_C_STATUS onyx_session_create_from_memory(const OnyxSessionBuilder* builder, const void* data, size_t size,
                                              OnyxSession** out);
ONYX_C_EXPORT void onyx_session_release(OnyxSession* session);

ONYX_C_STATUS onyx_session_input_count(const OnyxSession* session, size_t* out);
ONYX_C_STATUS onyx_session_output_count(const OnyxSession* session, size_t* out);
/** Input or output `index`, in the model's order (borrowed: valid while the session lives). */
ONYX_C_STATUS onyx_session_input_info(const OnyxSession* session, size_t index, const OnyxIoInfo** out);
ONYX_C_STATUS onyx_session_output_info(const OnyxSession* session, size_t index, const OnyxIoInfo** out);

ONYX_C_STATUS onyx_io_info_name(const OnyxIoInfo* info, const char** out);
ONYX_C_STATUS onyx_io_info_kind(const OnyxIoInfo* info, OnyxValueKind* out);
/** The element type (of the tensors inside, for a sequence or optional; a map's value type). */
ONYX_C_STATUS onyx_io_info_element_type(const OnyxIoInfo* info, OnyxElementType* out);
/** The declared shape: `*rank` dims at `*dims`, -1 for a symbolic or unknown dim. When the rank is
 *  unknown, `*rank` is -1 and `*dims` NULL. */
ONYX_C_STATUS onyx_io_info_shape(const OnyxIoInfo* info, const int64_t** dims, int64_t* rank);
/** The name of dim `axis` (its dim_param), "" when the dim is concrete or unnamed. */
ONYX_C_STATUS onyx_io_info_dim_name(const OnyxIoInfo* info, size_t axis, const char** out);
/** Inputs: 1 when an initializer supplies the input when it is not given. */
ONYX_C_STATUS onyx_io_info_has_default(const OnyxIoInfo* info, int* out);
/** The type as onyx prints it: "float[batch,3,224,224]". */
ONYX_C_STATUS onyx_io_info_type_string(const OnyxIoInfo* info, const char** out);

/* ---------------------------------------------------------------------------------------------
 * Tensors (host memory) */

/** A tensor that onyx allocates, zero-initialised (strings empty): `rank` dims at `shape` (which
 *  may be NULL when `rank` is 0, a scalar). */
ONYX_C_STATUS onyx_tensor_create(OnyxElementType type, const int64_t* shape, size_t rank, OnyxTensor** out);
/** A tensor over the caller's `data` (no copy), which holds `data_size` bytes: exactly the element
 *  count times the element size, aligned for the element type. The buffer must stay valid and
 *  unchanged during runs using the tensor, and valid until the tensor is released; onyx never
 *  writes into an input. Not for ONYX_TYPE_STRING. `data` may be NULL for zero elements. */
ONYX_C_STATUS onyx_tensor_create_over_buffer(OnyxElementType type, const int64_t* shape, size_t rank, void* data,
                                             size_t data_size, OnyxTensor** out);
ONYX_C_EXPORT void onyx_tensor_release(OnyxTensor* tensor);
ONYX_C_STATUS onyx_tensor_element_type(const OnyxTensor* tensor, OnyxElementType* out);
/** `*rank` dims at `*dims` (borrowed from the tensor). */
ONYX_C_STATUS onyx_tensor_shape(const OnyxTensor* tensor, const int64_t** dims, size_t* rank);
ONYX_C_STATUS onyx_tensor_element_count(const OnyxTensor* tensor, int64_t* out);
/** Bytes of element storage: element count times element size (not for strings). */
ONYX_C_STATUS onyx_tensor_size_in_bytes(const OnyxTensor* tensor, size_t* out);
/** Address of the elements, C order (row-major), writable (not for strings). */
ONYX_C_STATUS onyx_tensor_data(OnyxTensor* tensor, void** out);
/** String element `index` (flat): `*length` bytes at `*data`, followed by a NUL. */
ONYX_C_STATUS onyx_tensor_string(const OnyxTensor* tensor, size_t index, const char** data, size_t* length);
/** Sets string element `index` (flat) to `length` bytes at `data` (copied; NULL when 0). */
ONYX_C_STATUS onyx_tensor_set_string(OnyxTensor* tensor, size_t index, const char* data, size_t length);
/** ONNX's name of a type: "float", "int64", "float16", ...; "" for a value that is no type. */
ONYX_C_EXPORT const char* onyx_element_type_name(OnyxElementType type);
/** Bytes per element; 0 for ONYX_TYPE_STRING, ONYX_TYPE_UNDEFINED and unknown values. */
ONYX_C_EXPORT size_t onyx_element_type_size(OnyxElementType type);

/* ---------------------------------------------------------------------------------------------
 * Running */

ONYX_C_STATUS onyx_run_options_create(OnyxRunOptions** out);
ONYX_C_EXPORT void onyx_run_options_release(OnyxRunOptions* options);
/** Stops every run using these options, now and until reset: each fails with ONYX_ERROR_CANCELLED
 *  at its next node. Safe from any thread. */
ONYX_C_STATUS onyx_run_options_terminate(const OnyxRunOptions* options);
/** Lets runs with these options proceed again. */
ONYX_C_STATUS onyx_run_options_reset(const OnyxRunOptions* options);

/** Runs the model. Inputs are given by name (`num_inputs` names and tensors; the arrays may be NULL
 *  when it is 0); an input tensor that is NULL passes no value (an input with a default then uses
 *  its initializer, an optional input is empty). Inputs are used in place, not copied.
 *  `output_names` lists the outputs wanted, in the order they are returned; NULL asks for every
 *  output in the model's order, and then `num_outputs` must be the output count.
 *  `outputs` receives `num_outputs` new tensors that the caller releases (an empty optional output
 *  gives NULL); on failure every entry is set to NULL. Outputs never share memory with inputs.
 *  `options` may be NULL. Any number of threads may run one session at once. */
ONYX_C_STATUS onyx_session_run(const OnyxSession* session, const OnyxRunOptions* options,
                               const char* const* input_names, const OnyxTensor* const* inputs, size_t num_inputs,
                               const char* const* output_names, size_t num_outputs, OnyxTensor** outputs);

/* ---------------------------------------------------------------------------------------------
 * Reports */

/** Where every node of the main graph runs, with every higher-priority EP's reason for declining
 *  it, and the copies between memories (a snapshot the caller releases). */
ONYX_C_STATUS onyx_session_placement(const OnyxSession* session, OnyxPlacement** out);
ONYX_C_EXPORT void onyx_placement_release(OnyxPlacement* placement);
/** "cpu: 12 nodes; 0 copies" */
ONYX_C_STATUS onyx_placement_summary(const OnyxPlacement* placement, const char** out);
ONYX_C_STATUS onyx_placement_node_count(const OnyxPlacement* placement, size_t* out);
/** Node `index`: its name ("#index" when the node has none), op type, domain ("" for ai.onnx,
 *  "onyx" for the optimizer's fused ops), the EP and device it runs on, and its fused region on a
 *  compiling EP (-1 for a single-node kernel). Each output may be NULL. */
ONYX_C_STATUS onyx_placement_node(const OnyxPlacement* placement, size_t index, const char** name,
                                  const char** op_type, const char** domain, const char** ep, const char** device,
                                  int32_t* region);
/** How many higher-priority EPs declined node `node`, and why each: the EP, a reason code
 *  ("UnsupportedOp", "UnsupportedType", ...) and a message. Each output of the second may be NULL. */
ONYX_C_STATUS onyx_placement_node_decline_count(const OnyxPlacement* placement, size_t node, size_t* out);
ONYX_C_STATUS onyx_placement_node_decline(const OnyxPlacement* placement, size_t node, size_t index,
                                          const char** ep, const char** code, const char** message);
/** Copies between memories: the value copied, from and to which memory, and its bytes (-1 when it
 *  depends on the input shapes). Each output of the second may be NULL. */
ONYX_C_STATUS onyx_placement_copy_count(const OnyxPlacement* placement, size_t* out);
ONYX_C_STATUS onyx_placement_copy(const OnyxPlacement* placement, size_t index, const char** value,
                                  const char** from, const char** to, int64_t* bytes);

/** Every requested EP, in request order, the implicit CPU EP last (borrowed from the session). */
ONYX_C_STATUS onyx_session_registration_count(const OnyxSession* session, size_t* out);
/** Request `index`: the EP's name, who asked for it, what became of it and why (the reason it was
 *  skipped, or which request it duplicates; "" when registered). Each output may be NULL. */
ONYX_C_STATUS onyx_session_registration(const OnyxSession* session, size_t index, const char** name,
                                        OnyxEpSource* source, OnyxEpOutcome* outcome, const char** reason);
/** Request `index` once registered: its priority (0 = asked first; -1 when not registered), the
 *  EP's version, its device, its module path ("" for EPs built into libonyx), and whether it was
 *  asked for with error_on_failure. Each output may be NULL. */
ONYX_C_STATUS onyx_session_registration_details(const OnyxSession* session, size_t index, int32_t* priority,
                                                const char** version, const char** device, const char** module,
                                                int* error_on_failure);
/** The effective options of registered request `index` (defaults included). */
ONYX_C_STATUS onyx_session_registration_option_count(const OnyxSession* session, size_t index, size_t* out);
/** Each output may be NULL. */
ONYX_C_STATUS onyx_session_registration_option(const OnyxSession* session, size_t index, size_t option,
                                               const char** key, const char** value);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* ONYX_C_API_H */
