/* Plugins for the EP plugin ABI's tests (tests/unit/test_ep_plugin.cpp), one per variant macro:
 *
 *   PLUGIN_DEVMEM       per-node kernels (Relu, Neg) in a device memory of its own ("devmem",
 *                       malloc'ed, with buffer accounting), copies, run hooks
 *   PLUGIN_OLDER        structs from an older header (shorter than today's): onyx writes only
 *                       what their struct_size covers
 *   PLUGIN_NEWER        built against an EP plugin API newer than onyx's
 *   PLUGIN_FAILCREATE   create() fails with a reason
 *   PLUGIN_INITFAIL     the entry point refuses to initialise, with a reason
 *   PLUGIN_GARBAGE      the entry point returns a table that is not one
 *   PLUGIN_BADINSTANCE  create() succeeds but leaves out claim()
 *   PLUGIN_NOSYM        no entry point at all
 *   PLUGIN_THROWS       (compiled as C++) create() throws
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onyx/ep_c_api.h"

#ifdef __cplusplus
#include <stdexcept>
#define EXTERN_C extern "C"
#else
#define EXTERN_C
#endif

#ifndef PLUGIN_NAME
#error PLUGIN_NAME must name the variant
#endif

static const OnyxEpHostApi* host;

/* Live device buffers and runs, for the tests to read through the exported functions below. */
static int live_buffers;
static int runs_begun, runs_ended;
EXTERN_C ONYX_EP_PLUGIN_EXPORT int test_plugin_live_buffers(void) { return live_buffers; }
EXTERN_C ONYX_EP_PLUGIN_EXPORT int test_plugin_runs(void) { return runs_begun * 1000 + runs_ended; }

static OnyxEpStatus* claim(void* state, const OnyxEpGraph* graph, const OnyxEpNode* node, OnyxEpClaim* out) {
  (void)state;
  (void)graph;
  const char* op = host->node_op_type(node);
  OnyxEpTensor t = ONYX_EP_INIT(OnyxEpTensor);
  if (strcmp(op, "Relu") != 0 && strcmp(op, "Neg") != 0) {
    out->decline_code = ONYX_EP_DECLINE_UNSUPPORTED_OP;
    snprintf(out->reason, sizeof(out->reason), "%s runs Relu and Neg only", PLUGIN_NAME);
    return NULL;
  }
#ifdef PLUGIN_OLDER
  /* An OnyxEpTensor from a header that ended before on_device: onyx must not write past it. */
  t.struct_size = (uint32_t)offsetof(OnyxEpTensor, on_device);
  t.on_device = 77;
  if (host->node_input_type(node, 0, &t) && t.on_device != 77) {
    out->decline_code = ONYX_EP_DECLINE_OTHER;
    snprintf(out->reason, sizeof(out->reason), "onyx wrote past the struct_size of an older OnyxEpTensor");
    return NULL;
  }
#endif
  if (!host->node_input_type(node, 0, &t) || t.dtype != ONYX_EP_FLOAT) {
    out->decline_code = ONYX_EP_DECLINE_UNSUPPORTED_TYPE;
    snprintf(out->reason, sizeof(out->reason), "float32 only");
    return NULL;
  }
  out->accepted = 1;
  return NULL;
}

typedef struct {
  int neg;
} Kernel;

static OnyxEpStatus* create_kernel(void* state, const OnyxEpGraph* graph, const OnyxEpNode* node, void** kernel) {
  (void)state;
  (void)graph;
  Kernel* k = (Kernel*)malloc(sizeof(Kernel));
  if (!k) return host->make_status(ONYX_EP_OUT_OF_MEMORY, "out of memory");
  k->neg = strcmp(host->node_op_type(node), "Neg") == 0;
  *kernel = k;
  return NULL;
}

static OnyxEpStatus* compute_kernel(void* state, void* kernel, OnyxEpKernelContext* ctx) {
  (void)state;
  const Kernel* k = (const Kernel*)kernel;
  OnyxEpTensor x = ONYX_EP_INIT(OnyxEpTensor), y = ONYX_EP_INIT(OnyxEpTensor);
#ifdef PLUGIN_DEVMEM
  if (!host->ctx_run_state(ctx)) return host->make_status(ONYX_EP_FAILURE, "no run state");
#endif
  if (!host->ctx_input(ctx, 0, &x)) return host->make_status(ONYX_EP_INVALID_ARGUMENT, "no input");
  if (!host->ctx_output(ctx, 0, &y)) {
    OnyxEpStatus* s = host->ctx_allocate_output(ctx, 0, x.dtype, x.rank, x.dims, &y);
    if (s) return s;
  }
#ifdef PLUGIN_DEVMEM
  if (!x.on_device || !y.on_device) return host->make_status(ONYX_EP_FAILURE, "a tensor is not in devmem");
#endif
  const float* a = (const float*)x.data;
  float* b = (float*)y.data;
  for (size_t i = 0; i < x.bytes / sizeof(float); ++i) b[i] = k->neg ? -a[i] : (a[i] > 0 ? a[i] : 0);
  return NULL;
}

static void release_kernel(void* state, void* kernel) {
  (void)state;
  free(kernel);
}

static OnyxEpStatus* allocate(void* state, size_t bytes, void** ptr) {
  (void)state;
  *ptr = malloc(bytes ? bytes : 1);
  if (!*ptr) return host->make_status(ONYX_EP_OUT_OF_MEMORY, "devmem is full");
  ++live_buffers;
  return NULL;
}
static void release_memory(void* state, void* ptr) {
  (void)state;
  free(ptr);
  --live_buffers;
}
static OnyxEpStatus* copy(void* state, void* dst, const void* src, size_t bytes, int32_t to_device, void* run_state) {
  (void)state;
  (void)to_device;
  if (!run_state) return host->make_status(ONYX_EP_FAILURE, "copy without a run state");
  memcpy(dst, src, bytes);
  return NULL;
}
static int run_token;
static OnyxEpStatus* run_begin(void* state, void** run_state) {
  (void)state;
  ++runs_begun;
  *run_state = &run_token;
  return NULL;
}
static OnyxEpStatus* run_end(void* state, void* run_state) {
  (void)state;
  if (run_state != &run_token) return host->make_status(ONYX_EP_FAILURE, "run_end got another run state");
  ++runs_ended;
  return NULL;
}

static OnyxEpStatus* create(const OnyxEpCreateInfo* info, OnyxEpInstance* out) {
  (void)info;
#if defined(PLUGIN_FAILCREATE)
  (void)out;
  return host->make_status(ONYX_EP_DEVICE_UNAVAILABLE, "the test device was unplugged");
#elif defined(PLUGIN_THROWS) && defined(__cplusplus)
  (void)out;
  throw std::runtime_error("create threw on purpose");
#else
  out->device = "cpu:0";
#ifndef PLUGIN_BADINSTANCE
  out->claim = claim;
#endif
  out->create_kernel = create_kernel;
  out->compute_kernel = compute_kernel;
  out->release_kernel = release_kernel;
#ifdef PLUGIN_DEVMEM
  out->device = "devmem:0";
  out->memory = "devmem";
  out->allocate = allocate;
  out->release_memory = release_memory;
  out->copy = copy;
  out->run_begin = run_begin;
  out->run_end = run_end;
#else
  (void)allocate;
  (void)release_memory;
  (void)copy;
  (void)run_begin;
  (void)run_end;
#endif
  return NULL;
#endif
}

static const OnyxEpOptionInfo options[] = {
    {sizeof(OnyxEpOptionInfo), ONYX_EP_API_VERSION, "level", "enum:low|high", "low", "a test option"},
};
static const OnyxEpDeviceInfo devices[] = {
    {sizeof(OnyxEpDeviceInfo), ONYX_EP_API_VERSION, "test:0", "a device that is not there", 0, "unplugged"},
    {sizeof(OnyxEpDeviceInfo), ONYX_EP_API_VERSION, "test:1", "a device that is", 1, NULL},
};
static OnyxEpStatus* get_devices(const OnyxEpDeviceInfo** d, size_t* n) {
  *d = devices;
  *n = 2;
  return NULL;
}

static OnyxEpPluginApi plugin = {
    sizeof(OnyxEpPluginApi), ONYX_EP_API_VERSION, PLUGIN_NAME, "onyx tests", "0.1", options, 1, get_devices, create,
};

#ifndef PLUGIN_NOSYM
EXTERN_C ONYX_EP_PLUGIN_EXPORT const OnyxEpPluginApi* onyx_ep_plugin_init(const OnyxEpHostApi* h, uint32_t version,
                                                                          char* err, size_t err_len) {
  (void)version;
  host = h;
#if defined(PLUGIN_INITFAIL)
  snprintf(err, err_len, "the test licence file is missing");
  return NULL;
#else
  (void)err;
  (void)err_len;
#endif
#if defined(PLUGIN_NEWER)
  plugin.api_version = ONYX_EP_API_VERSION + 1;
#elif defined(PLUGIN_GARBAGE)
  plugin.struct_size = 12;
#endif
  return &plugin;
}
#endif
