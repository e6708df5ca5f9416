/* onyx EP plugin ABI: how a third party ships an execution provider as a shared library that
 * any onyx loads, built with any C or C++ compiler against this header alone (docs/ep-sdk.md).
 *
 * The plugin is a shared library named libonyx_ep_<name>.so that exports one C function,
 * onyx_ep_plugin_init (ONYX_EP_PLUGIN_ENTRY). onyx finds it as it finds its own EP modules
 * (the option module_path, $ONYX_EP_PATH, beside libonyx, the system loader), calls the entry
 * once with the host's function table, and gets back the plugin's table. Everything else goes
 * through those two tables:
 *
 *   OnyxEpHostApi    onyx -> plugin: errors, logging, a read-only view of the graph (nodes,
 *                    values, types and shapes, attributes, constant initializers), and the
 *                    kernel context (inputs, outputs, allocation, the session's thread pool).
 *   OnyxEpPluginApi  plugin -> onyx: name, vendor, version, devices (with the reason one is not
 *                    available), option schema, and create() of a per-session instance.
 *   OnyxEpInstance   per session: claim() of a node (accept, or decline with a code and reason),
 *                    per-node kernels or compiled groups (connected sets of accepted nodes that
 *                    onyx forms and hands over whole), device memory and copies, run hooks.
 *
 * Versioning. Every table and every struct that crosses the boundary starts with its own size
 * (struct_size) and the ONYX_EP_API_VERSION it was compiled with (api_version). Tables only grow
 * at their end: a field is never moved, removed or retyped. A reader uses a field only when
 * struct_size covers it (ONYX_EP_HAS_FIELD), so an older plugin (shorter tables) works on a newer
 * onyx, its missing fields treated as absent; a plugin whose api_version is newer than the onyx
 * loading it is refused with a message that says both versions.
 *
 * Errors. Functions that can fail return OnyxEpStatus*: NULL is success; anything else was made
 * by host->make_status(code, message) and is owned by onyx from then on (onyx shows the message in
 * the registration and placement reports and in the onyx::Error it raises). Nothing may throw
 * across this boundary; onyx also catches what a C++ plugin throws by mistake and turns it into
 * an error, and validates every table it is given before using it.
 *
 * Threads. claim(), create_kernel() and compile_group() are called while a session is created,
 * one at a time per instance. compute functions may be called from several threads at once (a
 * session runs concurrently): keep kernels immutable after creation, per-run state in run_state.
 */
#ifndef ONYX_EP_C_API_H_
#define ONYX_EP_C_API_H_

#include <stddef.h>
#include <stdint.h>

#define ONYX_EP_API_VERSION 1u

#if defined(_WIN32)
#define ONYX_EP_PLUGIN_EXPORT __declspec(dllexport)
#else
#define ONYX_EP_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Whether a struct or table of size `size` (its struct_size) holds `field`. */
#define ONYX_EP_HAS_FIELD(type, ptr, field) \
  ((ptr) != NULL && (size_t)(ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* An initialiser for a struct a plugin passes to onyx to fill: OnyxEpTensor t = ONYX_EP_INIT(OnyxEpTensor);
 * (every other field zero). */
#ifdef __cplusplus
template <class T>
inline T onyx_ep_init_struct() {
  T t{};
  t.struct_size = sizeof(T);
  t.api_version = ONYX_EP_API_VERSION;
  return t;
}
#define ONYX_EP_INIT(type) onyx_ep_init_struct<type>()
#else
#define ONYX_EP_INIT(type) {.struct_size = sizeof(type), .api_version = ONYX_EP_API_VERSION}
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Opaque handles (owned by onyx; valid for the duration of the call they are given to,
 *      except where said) ---- */
typedef struct OnyxEpStatus OnyxEpStatus;
typedef struct OnyxEpGraph OnyxEpGraph;
typedef struct OnyxEpNode OnyxEpNode;
typedef struct OnyxEpKernelContext OnyxEpKernelContext;
typedef struct OnyxEpOnnxModel OnyxEpOnnxModel; /* owned by the plugin until release_onnx_model() */
typedef struct OnyxEpInferContext OnyxEpInferContext;

/* ---- Codes ---- */
typedef enum OnyxEpErrorCode {
  ONYX_EP_OK = 0,
  ONYX_EP_INVALID_ARGUMENT = 1,   /* a bad option value, an input the kernel cannot take */
  ONYX_EP_NOT_IMPLEMENTED = 2,    /* asked for something the plugin does not do */
  ONYX_EP_FAILURE = 3,            /* the EP's library failed */
  ONYX_EP_OUT_OF_MEMORY = 4,
  ONYX_EP_DEVICE_UNAVAILABLE = 5  /* no usable device */
} OnyxEpErrorCode;

/* Why a node is declined (the codes `onyx explain` prints). */
typedef enum OnyxEpDeclineCode {
  ONYX_EP_DECLINE_UNSUPPORTED_OP = 0,
  ONYX_EP_DECLINE_UNSUPPORTED_TYPE = 1,
  ONYX_EP_DECLINE_UNSUPPORTED_ATTRIBUTE = 2,
  ONYX_EP_DECLINE_DYNAMIC_SHAPE = 3,
  ONYX_EP_DECLINE_OPSET_OUT_OF_RANGE = 4,
  ONYX_EP_DECLINE_NOT_WORTH_OFFLOADING = 5,
  ONYX_EP_DECLINE_OTHER = 6
} OnyxEpDeclineCode;

/* Element types: the numbers of ONNX's TensorProto.DataType. */
typedef enum OnyxEpDType {
  ONYX_EP_UNDEFINED = 0, ONYX_EP_FLOAT = 1, ONYX_EP_UINT8 = 2, ONYX_EP_INT8 = 3, ONYX_EP_UINT16 = 4,
  ONYX_EP_INT16 = 5, ONYX_EP_INT32 = 6, ONYX_EP_INT64 = 7, ONYX_EP_STRING = 8, ONYX_EP_BOOL = 9,
  ONYX_EP_FLOAT16 = 10, ONYX_EP_DOUBLE = 11, ONYX_EP_UINT32 = 12, ONYX_EP_UINT64 = 13, ONYX_EP_BFLOAT16 = 16
} OnyxEpDType;

/* Attribute types: the numbers of ONNX's AttributeProto.AttributeType. */
typedef enum OnyxEpAttrType {
  ONYX_EP_ATTR_UNDEFINED = 0, ONYX_EP_ATTR_FLOAT = 1, ONYX_EP_ATTR_INT = 2, ONYX_EP_ATTR_STRING = 3,
  ONYX_EP_ATTR_TENSOR = 4, ONYX_EP_ATTR_GRAPH = 5, ONYX_EP_ATTR_FLOATS = 6, ONYX_EP_ATTR_INTS = 7,
  ONYX_EP_ATTR_STRINGS = 8, ONYX_EP_ATTR_TENSORS = 9, ONYX_EP_ATTR_GRAPHS = 10
} OnyxEpAttrType;

typedef enum OnyxEpLogLevel {
  ONYX_EP_LOG_VERBOSE = 0, ONYX_EP_LOG_INFO = 1, ONYX_EP_LOG_WARNING = 2, ONYX_EP_LOG_ERROR = 3
} OnyxEpLogLevel;

/* ---- Data crossing the boundary ---- */

/* A tensor's type and data. `dims` has `rank` entries; in a graph view a dim below zero is
 * unknown until run time (a symbolic or data-dependent dim). In a kernel context every dim is
 * known and `data` points to the elements (host memory, or the EP's own memory for the values
 * its device kernels produce); `bytes` is their size. Strings are not handed to plugins. */
typedef struct OnyxEpTensor {
  uint32_t struct_size;
  uint32_t api_version;
  int32_t dtype;          /* OnyxEpDType */
  int32_t rank;           /* -1: rank unknown (graph view only) */
  const int64_t* dims;
  void* data;             /* NULL in a graph view unless the value is a constant */
  size_t bytes;
  int32_t on_device;      /* 1 when data is in the EP's device memory */
} OnyxEpTensor;

/* What a graph value is. */
typedef struct OnyxEpValueInfo {
  uint32_t struct_size;
  uint32_t api_version;
  const char* name;
  OnyxEpTensor type;      /* dtype and shape; data set for constants (read-only host memory) */
  int32_t is_tensor;      /* 0 for sequences, maps and optionals (type.dtype is their element's) */
  int32_t is_constant;    /* an initializer that is not a graph input: data is its value */
  int32_t is_graph_input;
  int32_t is_graph_output;
  int64_t producer;       /* index of the node producing it in the graph, -1 for none */
} OnyxEpValueInfo;

typedef struct OnyxEpAttribute {
  uint32_t struct_size;
  uint32_t api_version;
  int32_t type;           /* OnyxEpAttrType */
  int64_t i;              /* INT */
  float f;                /* FLOAT */
  const char* s;          /* STRING (s_len bytes, also NUL-terminated) */
  size_t s_len;
  size_t count;           /* INTS, FLOATS, STRINGS: the number of entries */
  const int64_t* ints;
  const float* floats;
  const char* const* strings;
  OnyxEpTensor tensor;    /* TENSOR */
} OnyxEpAttribute;

/* The answer of claim(). onyx zeroes it and sets struct_size before asking. */
typedef struct OnyxEpClaim {
  uint32_t struct_size;
  uint32_t api_version;
  int32_t accepted;       /* 1: the EP takes the node */
  int32_t decline_code;   /* OnyxEpDeclineCode, when not accepted */
  char reason[480];       /* why not (NUL-terminated), when not accepted */
} OnyxEpClaim;

/* A group of accepted nodes onyx hands to compile_group(): connected, and convex (no path leaves
 * it and comes back), so it runs as one unit. Indices are those of the graph view. */
typedef struct OnyxEpGroup {
  uint32_t struct_size;
  uint32_t api_version;
  const int64_t* nodes;   /* in execution order */
  size_t num_nodes;
  const int64_t* inputs;  /* values read from outside the group (graph inputs, constants, other nodes) */
  size_t num_inputs;
  const int64_t* outputs; /* values read after the group or graph outputs */
  size_t num_outputs;
  const int64_t* internal;/* values produced and read only inside */
  size_t num_internal;
} OnyxEpGroup;

/* Nodes to write out as an ONNX model (export_onnx): for EPs whose library reads ONNX. */
typedef struct OnyxEpOnnxPart {
  uint32_t struct_size;
  uint32_t api_version;
  const OnyxEpNode* const* nodes; /* in execution order (graph nodes, or the node a claim asks about) */
  size_t num_nodes;
  const int64_t* inputs;          /* values that become the model's inputs */
  size_t num_inputs;
  const OnyxEpTensor* input_types;/* NULL, or per input the type it has there (dtype 0: the value's own) */
  const int64_t* outputs;         /* values that become the model's outputs */
  size_t num_outputs;
  const OnyxEpTensor* output_types;
  const char* prefix;             /* prepended to the names of the part's values and nodes (NULL: none) */
} OnyxEpOnnxPart;

/* An operator of the plugin's own domain (a custom op): onyx knows it once the plugin is loaded,
 * infers its outputs' types with `infer`, and lets the EP claim and run it like any node (a model
 * using it fails to load, naming the plugin, when the session does not register the EP). */
typedef struct OnyxEpCustomOp {
  uint32_t struct_size;
  uint32_t api_version;
  const char* domain;          /* not "" or "ai.onnx", "ai.onnx.ml", "com.microsoft", "onyx" */
  const char* op_type;
  int32_t since_version;       /* the first version of the domain that has it */
  /* Sets every output's type (infer_set_output) from the inputs' (node_input_type of infer_node,
   * infer_input_value for inputs known while planning) and the node's attributes. Called when the
   * model loads (dims may be unknown, below zero) and again with the shapes of each run's inputs. */
  OnyxEpStatus* (*infer)(OnyxEpInferContext* ctx);
} OnyxEpCustomOp;

/* One option of the EP's schema (what `onyx providers` prints). type: "bool", "int", "uint",
 * "float", "string" or "enum:a|b|c"; onyx validates values against it before create(). */
typedef struct OnyxEpOptionInfo {
  uint32_t struct_size;
  uint32_t api_version;
  const char* key;
  const char* type;
  const char* default_value;
  const char* doc;
} OnyxEpOptionInfo;

/* A device the EP can use, found by discovery. */
typedef struct OnyxEpDeviceInfo {
  uint32_t struct_size;
  uint32_t api_version;
  const char* id;           /* "cpu:0", "npu:1" */
  const char* description;  /* "Example NPU, 8 cores" */
  int32_t available;        /* 1 when it opens here */
  const char* reason;       /* why not, when not available */
} OnyxEpDeviceInfo;

/* What create() gets. */
typedef struct OnyxEpCreateInfo {
  uint32_t struct_size;
  uint32_t api_version;
  const char* const* option_keys;   /* effective options: every schema key, the user's value or */
  const char* const* option_values; /* the default, in schema order                              */
  size_t num_options;
  int32_t session_threads;          /* the session's intra-op threads */
} OnyxEpCreateInfo;

/* ---- onyx -> plugin ---- */
typedef struct OnyxEpHostApi {
  uint32_t struct_size;
  uint32_t api_version;
  const char* onyx_version;

  /* Errors and logging. message is copied. */
  OnyxEpStatus* (*make_status)(OnyxEpErrorCode code, const char* message);
  void (*log)(OnyxEpLogLevel level, const char* ep_name, const char* message);

  /* The graph view. Node handles stay valid while the graph is (through compile and compute). */
  size_t (*graph_num_nodes)(const OnyxEpGraph* graph);
  const OnyxEpNode* (*graph_node)(const OnyxEpGraph* graph, int64_t index); /* NULL when out of range */
  size_t (*graph_num_values)(const OnyxEpGraph* graph);
  /* 1 and *out filled when value exists, else 0. out->struct_size must be set by the caller. */
  int32_t (*graph_value)(const OnyxEpGraph* graph, int64_t value, OnyxEpValueInfo* out);

  /* A node. Inputs and outputs are value ids of the graph, -1 where an optional one is absent. */
  const char* (*node_name)(const OnyxEpNode* node);
  const char* (*node_op_type)(const OnyxEpNode* node);
  const char* (*node_domain)(const OnyxEpNode* node);      /* "" for ai.onnx */
  int64_t (*node_opset)(const OnyxEpNode* node);           /* the opset of its domain the model imports */
  size_t (*node_num_inputs)(const OnyxEpNode* node);
  int64_t (*node_input)(const OnyxEpNode* node, size_t i);
  size_t (*node_num_outputs)(const OnyxEpNode* node);
  int64_t (*node_output)(const OnyxEpNode* node, size_t i);
  /* The type of input i (output i) as the question sees it: in claim() a node may be a form the
   * optimizer considers (not yet in the graph), whose types are given here. 1 if known, else 0. */
  int32_t (*node_input_type)(const OnyxEpNode* node, size_t i, OnyxEpTensor* out);
  int32_t (*node_output_type)(const OnyxEpNode* node, size_t i, OnyxEpTensor* out);
  size_t (*node_num_attributes)(const OnyxEpNode* node);
  const char* (*node_attribute_name)(const OnyxEpNode* node, size_t i);
  /* 1 and *out filled when the node has attribute `name`, else 0. */
  int32_t (*node_attribute)(const OnyxEpNode* node, const char* name, OnyxEpAttribute* out);

  /* The kernel context (compute functions). Positional accessors are the node's inputs and
   * outputs (per-node kernels); value accessors take value ids (compiled groups). An output
   * whose shape onyx knows is already allocated; otherwise allocate it with the shape. Return 1
   * and fill *out, or 0 when absent / not yet allocated. */
  int32_t (*ctx_input)(OnyxEpKernelContext* ctx, size_t i, OnyxEpTensor* out);
  int32_t (*ctx_output)(OnyxEpKernelContext* ctx, size_t i, OnyxEpTensor* out);
  OnyxEpStatus* (*ctx_allocate_output)(OnyxEpKernelContext* ctx, size_t i, int32_t dtype, int32_t rank,
                                       const int64_t* dims, OnyxEpTensor* out);
  int32_t (*ctx_value)(OnyxEpKernelContext* ctx, int64_t value, OnyxEpTensor* out);
  OnyxEpStatus* (*ctx_allocate_value)(OnyxEpKernelContext* ctx, int64_t value, int32_t dtype, int32_t rank,
                                      const int64_t* dims, OnyxEpTensor* out);
  /* What run_begin() returned for the current run (NULL when the EP has no run hooks). */
  void* (*ctx_run_state)(OnyxEpKernelContext* ctx);
  /* Runs fn(user, begin, end) over [0, n) split into chunks of at least `grain` on the
   * session's intra-op threads, returning when all are done. fn must not fail. */
  void (*ctx_parallel_for)(OnyxEpKernelContext* ctx, size_t n, size_t grain,
                           void (*fn)(void* user, size_t begin, size_t end), void* user);

  /* Writes parts of the graph out as one self-contained ONNX model (a serialized ModelProto),
   * parts sharing nothing (give each its own prefix when there are several). A constant a part's
   * nodes read that is not one of its inputs is written as an initializer when it has at most
   * `inline_constant_limit` elements (below zero: any number), else as a typed model input, a
   * "deferred constant" that onnx_model_constant() lists with the value it stands for (so an EP
   * can bind the data it already has, or zeros when it only asks its library what it supports). */
  OnyxEpStatus* (*export_onnx)(const OnyxEpGraph* graph, const OnyxEpOnnxPart* parts, size_t num_parts,
                               int64_t inline_constant_limit, OnyxEpOnnxModel** out);
  const void* (*onnx_model_bytes)(const OnyxEpOnnxModel* model, size_t* size);
  size_t (*onnx_model_num_constants)(const OnyxEpOnnxModel* model);
  /* The i-th deferred constant: its input name in the model and the graph value it stands for. */
  int32_t (*onnx_model_constant)(const OnyxEpOnnxModel* model, size_t i, const char** name, int64_t* value);
  void (*release_onnx_model)(OnyxEpOnnxModel* model);

  /* Type inference of a custom op (OnyxEpCustomOp::infer). The node's input types are those
   * node_input_type gives for the returned handle; a dim below zero is not known yet. */
  const OnyxEpNode* (*infer_node)(OnyxEpInferContext* ctx);
  /* Input i's value when it is known while planning (a constant): 1 and *out with data, else 0. */
  int32_t (*infer_input_value)(OnyxEpInferContext* ctx, size_t i, OnyxEpTensor* out);
  /* Output i's element type and shape (rank below zero: unknown; a dim below zero: unknown). */
  OnyxEpStatus* (*infer_set_output)(OnyxEpInferContext* ctx, size_t i, int32_t dtype, int32_t rank, const int64_t* dims);

  /* A status the host returned (from export_onnx, ctx_allocate_value, ...): its code and message,
   * for a plugin that handles it rather than returning it; release_status frees one the plugin
   * keeps (a status returned to onyx is onyx's again). */
  OnyxEpErrorCode (*status_code)(const OnyxEpStatus* status);
  const char* (*status_message)(const OnyxEpStatus* status);
  void (*release_status)(OnyxEpStatus* status);
  /* An id of the graph a view shows, the same for every view of one graph while it exists (a
   * plugin caching per graph, e.g. one question to its library for all of a graph's nodes). */
  uint64_t (*graph_id)(const OnyxEpGraph* graph);
} OnyxEpHostApi;

/* ---- plugin -> onyx: a per-session instance ---- */

/* Flags of OnyxEpInstance. */
#define ONYX_EP_COMPILES_GROUPS 1u /* accepted nodes are grouped and compiled (else per-node kernels) */

typedef struct OnyxEpInstance {
  uint32_t struct_size;
  uint32_t api_version;
  void* state;                 /* the plugin's; passed back to every function below */
  const char* device;          /* the device it runs on, "cpu:0" */
  const char* memory;          /* NULL or "cpu": host memory; else the name of its device memory */
  uint32_t flags;              /* ONYX_EP_COMPILES_GROUPS */
  uint32_t min_group_nodes;    /* groups with fewer nodes go to the next EP (0 or 1: any) */

  /* Required: whether the EP takes `node`. The answer must depend only on the node, its types and
   * the graph (onyx may ask again). */
  OnyxEpStatus* (*claim)(void* state, const OnyxEpGraph* graph, const OnyxEpNode* node, OnyxEpClaim* out);

  /* Per-node kernels (without ONYX_EP_COMPILES_GROUPS). */
  OnyxEpStatus* (*create_kernel)(void* state, const OnyxEpGraph* graph, const OnyxEpNode* node, void** kernel);
  OnyxEpStatus* (*compute_kernel)(void* state, void* kernel, OnyxEpKernelContext* ctx);
  void (*release_kernel)(void* state, void* kernel);

  /* Compiled groups (with ONYX_EP_COMPILES_GROUPS). The graph and its node handles stay valid
   * until release_group(). */
  OnyxEpStatus* (*compile_group)(void* state, const OnyxEpGraph* graph, const OnyxEpGroup* group, void** compiled);
  OnyxEpStatus* (*compute_group)(void* state, void* compiled, OnyxEpKernelContext* ctx);
  void (*release_group)(void* state, void* compiled);

  /* Device memory (when `memory` names one): onyx allocates the outputs of the EP's nodes with
   * allocate() and inserts copies where values cross between host and device memory. */
  OnyxEpStatus* (*allocate)(void* state, size_t bytes, void** ptr);
  void (*release_memory)(void* state, void* ptr);
  /* to_device: 1 host -> device, 0 device -> host. run_state as ctx_run_state gives it. */
  OnyxEpStatus* (*copy)(void* state, void* dst, const void* src, size_t bytes, int32_t to_device, void* run_state);

  /* Run hooks (optional): run_begin() when a run starts, run_end() when it ends (all the run's
   * device work must be complete on return). */
  OnyxEpStatus* (*run_begin)(void* state, void** run_state);
  OnyxEpStatus* (*run_end)(void* state, void* run_state);

  /* Releases the instance (the session is gone). */
  void (*release)(void* state);
} OnyxEpInstance;

/* ---- plugin -> onyx: the plugin ---- */
typedef struct OnyxEpPluginApi {
  uint32_t struct_size;
  uint32_t api_version;
  const char* name;            /* must match the library name libonyx_ep_<name>.so */
  const char* vendor;
  const char* version;         /* the EP's version (and its library's) */
  const OnyxEpOptionInfo* options;
  size_t num_options;

  /* Device discovery: fills *devices with an array the plugin owns (valid until exit) and its
   * length. The EP is usable when one device is available; the reasons of the others are shown. */
  OnyxEpStatus* (*get_devices)(const OnyxEpDeviceInfo** devices, size_t* count);

  /* A per-session instance: fill *out (onyx sets out->struct_size and api_version first and
   * keeps the struct it passed). */
  OnyxEpStatus* (*create)(const OnyxEpCreateInfo* info, OnyxEpInstance* out);

  /* Custom ops of the plugin's own domains (optional): `num_custom_ops` entries. */
  const OnyxEpCustomOp* custom_ops;
  size_t num_custom_ops;
} OnyxEpPluginApi;

/* The entry point every plugin exports. Called once per process with onyx's table (valid until
 * exit) and onyx's API version; returns the plugin's table (valid until exit), or NULL after
 * writing why into err (err_len bytes, NUL-terminated). */
#define ONYX_EP_PLUGIN_ENTRY "onyx_ep_plugin_init"
typedef const OnyxEpPluginApi* (*OnyxEpPluginInitFn)(const OnyxEpHostApi* host, uint32_t host_api_version, char* err,
                                                     size_t err_len);
ONYX_EP_PLUGIN_EXPORT const OnyxEpPluginApi* onyx_ep_plugin_init(const OnyxEpHostApi* host, uint32_t host_api_version,
                                                                 char* err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif /* ONYX_EP_C_API_H_ */
