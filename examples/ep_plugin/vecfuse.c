/* vecfuse: an example third-party EP for onyx, written in C against the EP plugin ABI alone
 * (onyx/ep_c_api.h from find_package(onyx COMPONENTS ep_sdk); it links nothing of onyx).
 *
 * It takes float32 elementwise nodes (Add, Sub, Mul, Div, Max, Min with two inputs of the same
 * shape or one scalar; Relu, Neg, Abs, Sigmoid, Tanh, Exp, Sqrt; and Swish, a custom op of its own
 * domain com.example.vecfuse, x * sigmoid(x)) with shapes known when the session is created, and
 * runs each group of them that onyx forms as one fused loop: every element goes through the whole
 * chain while it is in cache, and only the group's outputs are written to memory. With the option
 * fuse=false it runs one kernel per node instead.
 * docs/ep-sdk.md walks through this file. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <onyx/ep_c_api.h>

static const OnyxEpHostApi* host; /* onyx's table, from onyx_ep_plugin_init */

/* ---- the operators ---- */
typedef enum { ADD, SUB, MUL, DIV, MAX, MIN, RELU, NEG, ABS, SIGMOID, TANH, EXP, SQRT, SWISH } OpKind;
#define DOMAIN "com.example.vecfuse" /* vecfuse's own ops */
static const struct {
  const char* domain;
  const char* name;
  OpKind kind;
  int arity;
  int since; /* first ai.onnx version with today's semantics for float32 */
} kOps[] = {{"", "Add", ADD, 2, 7},   {"", "Sub", SUB, 2, 7},         {"", "Mul", MUL, 2, 7},
            {"", "Div", DIV, 2, 7},   {"", "Max", MAX, 2, 8},         {"", "Min", MIN, 2, 8},
            {"", "Relu", RELU, 1, 6}, {"", "Neg", NEG, 1, 6},         {"", "Abs", ABS, 1, 6},
            {"", "Sigmoid", SIGMOID, 1, 6}, {"", "Tanh", TANH, 1, 6}, {"", "Exp", EXP, 1, 6},
            {"", "Sqrt", SQRT, 1, 6}, {DOMAIN, "Swish", SWISH, 1, 1}};
enum { kNumOps = sizeof(kOps) / sizeof(kOps[0]), kMaxOpset = 24, kBlock = 1024 };

static int find_op(const char* domain, const char* name) {
  for (int i = 0; i < kNumOps; ++i)
    if (strcmp(kOps[i].domain, domain) == 0 && strcmp(kOps[i].name, name) == 0) return i;
  return -1;
}

/* out[i] = op(a[i or 0], b[i or 0]) for i in [0, n) */
static void apply(OpKind k, const float* a, int a_scalar, const float* b, int b_scalar, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float x = a[a_scalar ? 0 : i];
    const float y = b ? b[b_scalar ? 0 : i] : 0.0f;
    float r;
    switch (k) {
      case ADD: r = x + y; break;
      case SUB: r = x - y; break;
      case MUL: r = x * y; break;
      case DIV: r = x / y; break;
      case MAX: r = (x != x || y != y) ? NAN : (x > y ? x : y); break;
      case MIN: r = (x != x || y != y) ? NAN : (x < y ? x : y); break;
      case RELU: r = x > 0.0f ? x : 0.0f; break;
      case NEG: r = -x; break;
      case ABS: r = fabsf(x); break;
      case SIGMOID: r = 1.0f / (1.0f + expf(-x)); break;
      case TANH: r = tanhf(x); break;
      case EXP: r = expf(x); break;
      case SWISH: r = x / (1.0f + expf(-x)); break;
      default: r = sqrtf(x); break; /* SQRT */
    }
    out[i] = r;
  }
}

/* ---- helpers over the host API ---- */
static int64_t numel_of(const OnyxEpTensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; ++i) n *= t->dims[i];
  return n;
}

static int same_dims(const OnyxEpTensor* a, const OnyxEpTensor* b) {
  if (a->rank != b->rank) return 0;
  for (int32_t i = 0; i < a->rank; ++i)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

static OnyxEpStatus* decline(OnyxEpClaim* out, OnyxEpDeclineCode code, const char* reason) {
  out->accepted = 0;
  out->decline_code = code;
  snprintf(out->reason, sizeof(out->reason), "%s", reason);
  return NULL;
}

/* ---- the EP instance ---- */
typedef struct {
  int fuse;
  unsigned min_group_nodes;
} Ep;

static OnyxEpStatus* claim(void* state, const OnyxEpGraph* graph, const OnyxEpNode* node, OnyxEpClaim* out) {
  (void)state;
  (void)graph;
  char msg[256];
  const int op = find_op(host->node_domain(node), host->node_op_type(node));
  if (op < 0) {
    snprintf(msg, sizeof(msg), "vecfuse has no kernel for %s%s%s", host->node_domain(node),
             host->node_domain(node)[0] ? "::" : "", host->node_op_type(node));
    return decline(out, ONYX_EP_DECLINE_UNSUPPORTED_OP, msg);
  }
  const int64_t opset = host->node_opset(node);
  if (opset < kOps[op].since || (kOps[op].domain[0] == '\0' && opset > kMaxOpset)) {
    snprintf(msg, sizeof(msg), "vecfuse takes %s from opset %d to %d, the model imports %lld", kOps[op].name,
             kOps[op].since, kMaxOpset, (long long)opset);
    return decline(out, ONYX_EP_DECLINE_OPSET_OUT_OF_RANGE, msg);
  }
  if ((int)host->node_num_inputs(node) != kOps[op].arity || host->node_num_outputs(node) != 1)
    return decline(out, ONYX_EP_DECLINE_UNSUPPORTED_ATTRIBUTE, "vecfuse takes this op with its usual number of inputs only");
  OnyxEpTensor y = ONYX_EP_INIT(OnyxEpTensor);
  if (!host->node_output_type(node, 0, &y) || y.rank < 0)
    return decline(out, ONYX_EP_DECLINE_DYNAMIC_SHAPE, "the output's shape is not known");
  for (size_t i = 0; i < host->node_num_inputs(node) + 1; ++i) {
    OnyxEpTensor t = ONYX_EP_INIT(OnyxEpTensor);
    const int known = i == 0 ? 1 : host->node_input_type(node, i - 1, &t);
    if (i == 0) t = y;
    if (!known) return decline(out, ONYX_EP_DECLINE_DYNAMIC_SHAPE, "an input's type is not known");
    if (t.dtype != ONYX_EP_FLOAT) return decline(out, ONYX_EP_DECLINE_UNSUPPORTED_TYPE, "vecfuse computes float32 only");
    if (t.rank < 0) return decline(out, ONYX_EP_DECLINE_DYNAMIC_SHAPE, "a rank is not known");
    for (int32_t d = 0; d < t.rank; ++d)
      if (t.dims[d] < 0) return decline(out, ONYX_EP_DECLINE_DYNAMIC_SHAPE, "a dim is known only when the model runs");
    if (i > 0 && !same_dims(&t, &y) && numel_of(&t) != 1)
      return decline(out, ONYX_EP_DECLINE_UNSUPPORTED_ATTRIBUTE, "vecfuse broadcasts scalars only");
  }
  out->accepted = 1;
  return NULL;
}

/* A compiled group (or one node): a straight-line program over slots. Slots 0..num_inputs-1 are
 * the group's inputs; slot num_inputs + i is instruction i's result. */
typedef struct {
  OpKind kind;
  int a, b; /* operand slots (b = -1 for unary ops) */
} Instr;

typedef struct {
  size_t num_inputs, num_instrs, num_outputs, num_slots;
  int64_t* input_values;   /* value ids of the inputs */
  const float** constants; /* per input: its data when it is a constant, else NULL */
  Instr* instrs;
  int64_t* out_values;     /* value ids of the outputs ... */
  int* out_slots;          /* ... and the slots holding them */
  int64_t* numel;          /* per slot */
  OnyxEpTensor* out_types; /* per output: dtype and dims to allocate it with */
  int64_t n;               /* elements of the full-size slots */
  int fused;               /* 0: every full-size slot has n elements, so one loop runs them all */
} Program;

static void free_program(Program* p) {
  if (!p) return;
  free(p->input_values);
  free(p->constants);
  free(p->instrs);
  free(p->out_values);
  free(p->out_slots);
  free(p->numel);
  free(p->out_types);
  free(p);
}

static int slot_of(const Program* p, const int64_t* slot_values, int64_t value) {
  for (size_t s = 0; s < p->num_slots; ++s)
    if (slot_values[s] == value) return (int)s;
  return -1;
}

/* Builds the program of `nodes` (in execution order) reading `inputs` and producing `outputs`. */
static OnyxEpStatus* build_program(const OnyxEpGraph* g, const OnyxEpNode* const* nodes, size_t num_nodes, const int64_t* inputs,
                                   size_t num_inputs, const int64_t* outputs, size_t num_outputs, Program** result) {
  Program* p = calloc(1, sizeof(Program));
  int64_t* slot_values = calloc(num_inputs + num_nodes + 1, sizeof(int64_t));
  if (!p || !slot_values) goto oom;
  p->num_inputs = num_inputs;
  p->num_instrs = num_nodes;
  p->num_outputs = num_outputs;
  p->num_slots = num_inputs + num_nodes;
  p->input_values = calloc(num_inputs + 1, sizeof(int64_t));
  p->constants = calloc(num_inputs + 1, sizeof(float*));
  p->instrs = calloc(num_nodes + 1, sizeof(Instr));
  p->out_values = calloc(num_outputs + 1, sizeof(int64_t));
  p->out_slots = calloc(num_outputs + 1, sizeof(int));
  p->numel = calloc(p->num_slots + 1, sizeof(int64_t));
  p->out_types = calloc(num_outputs + 1, sizeof(OnyxEpTensor));
  if (!p->input_values || !p->constants || !p->instrs || !p->out_values || !p->out_slots || !p->numel || !p->out_types)
    goto oom;
  for (size_t i = 0; i < num_inputs; ++i) {
    OnyxEpValueInfo v = ONYX_EP_INIT(OnyxEpValueInfo);
    if (!host->graph_value(g, inputs[i], &v)) goto bad;
    p->input_values[i] = slot_values[i] = inputs[i];
    p->numel[i] = numel_of(&v.type);
    if (v.is_constant && v.type.data) p->constants[i] = (const float*)v.type.data;
  }
  for (size_t k = 0; k < num_nodes; ++k) {
    const OnyxEpNode* node = nodes[k];
    if (!node) goto bad;
    const int op = find_op(host->node_domain(node), host->node_op_type(node));
    if (op < 0) goto bad;
    Instr* in = &p->instrs[k];
    in->kind = kOps[op].kind;
    in->a = slot_of(p, slot_values, host->node_input(node, 0));
    in->b = kOps[op].arity == 2 ? slot_of(p, slot_values, host->node_input(node, 1)) : -1;
    if (in->a < 0 || (kOps[op].arity == 2 && in->b < 0)) goto bad;
    const size_t s = num_inputs + k;
    slot_values[s] = host->node_output(node, 0);
    OnyxEpTensor y = ONYX_EP_INIT(OnyxEpTensor);
    if (!host->node_output_type(node, 0, &y) || y.rank < 0) goto bad;
    p->numel[s] = numel_of(&y);
  }
  for (size_t o = 0; o < num_outputs; ++o) {
    OnyxEpValueInfo v = ONYX_EP_INIT(OnyxEpValueInfo);
    p->out_values[o] = outputs[o];
    p->out_slots[o] = slot_of(p, slot_values, outputs[o]);
    if (p->out_slots[o] < (int)num_inputs || !host->graph_value(g, outputs[o], &v)) goto bad;
    p->out_types[o] = v.type;
  }
  /* Fused when every slot that is not a scalar has the same element count. */
  p->n = 1;
  p->fused = 1;
  for (size_t s = 0; s < p->num_slots; ++s) {
    if (p->numel[s] == 1) continue;
    if (p->n == 1) p->n = p->numel[s];
    else if (p->numel[s] != p->n) p->fused = 0;
  }
  free(slot_values);
  *result = p;
  return NULL;
oom:
  free(slot_values);
  free_program(p);
  return host->make_status(ONYX_EP_OUT_OF_MEMORY, "vecfuse: out of memory compiling");
bad:
  free(slot_values);
  free_program(p);
  return host->make_status(ONYX_EP_FAILURE, "vecfuse: the group is not one vecfuse claimed");
}

/* One run of a program: the data of every slot. */
typedef struct {
  const Program* p;
  const float** in;  /* per input slot */
  float** out;       /* per output */
  atomic_int failed; /* a chunk could not get its scratch memory */
} Run;

/* Runs elements [begin, end) of a fused program through the whole chain, kBlock at a time. */
static void run_fused(void* user, size_t begin, size_t end) {
  Run* r = user;
  const Program* p = r->p;
  float* scratch = malloc(sizeof(float) * kBlock * (p->num_instrs ? p->num_instrs : 1));
  if (!scratch) {
    atomic_store(&r->failed, 1);
    return;
  }
  for (size_t b = begin; b < end; b += kBlock) {
    const size_t len = end - b < kBlock ? end - b : kBlock;
    for (size_t k = 0; k < p->num_instrs; ++k) {
      const Instr* in = &p->instrs[k];
      const float* ops[2] = {NULL, NULL};
      int scalar[2] = {0, 0};
      const int slots[2] = {in->a, in->b};
      for (int j = 0; j < 2; ++j) {
        const int s = slots[j];
        if (s < 0) continue;
        scalar[j] = p->numel[s] == 1;
        if (s < (int)p->num_inputs) ops[j] = r->in[s] + (scalar[j] ? 0 : b);
        else ops[j] = scratch + (size_t)(s - (int)p->num_inputs) * kBlock;
      }
      apply(in->kind, ops[0], scalar[0], ops[1], scalar[1], scratch + k * kBlock, len);
    }
    for (size_t o = 0; o < p->num_outputs; ++o)
      memcpy(r->out[o] + (p->numel[p->out_slots[o]] == 1 ? 0 : b),
             scratch + (size_t)(p->out_slots[o] - (int)p->num_inputs) * kBlock,
             sizeof(float) * (p->numel[p->out_slots[o]] == 1 ? 1 : len));
  }
  free(scratch);
}

static OnyxEpStatus* compute(void* state, void* compiled, OnyxEpKernelContext* ctx) {
  (void)state;
  const Program* p = compiled;
  OnyxEpStatus* status = NULL;
  Run r = {p, calloc(p->num_inputs + 1, sizeof(float*)), calloc(p->num_outputs + 1, sizeof(float*)), 0};
  float** slots = calloc(p->num_slots + 1, sizeof(float*)); /* unfused: every result in full */
  if (!r.in || !r.out || !slots) {
    status = host->make_status(ONYX_EP_OUT_OF_MEMORY, "vecfuse: out of memory");
    goto done;
  }
  for (size_t i = 0; i < p->num_inputs; ++i) {
    OnyxEpTensor t = ONYX_EP_INIT(OnyxEpTensor);
    if (p->constants[i]) r.in[i] = p->constants[i];
    else if (host->ctx_value(ctx, p->input_values[i], &t) && t.dtype == ONYX_EP_FLOAT && numel_of(&t) == p->numel[i])
      r.in[i] = t.data;
    else {
      status = host->make_status(ONYX_EP_INVALID_ARGUMENT, "vecfuse: an input is missing or not the size compiled for");
      goto done;
    }
  }
  for (size_t o = 0; o < p->num_outputs; ++o) {
    OnyxEpTensor t = ONYX_EP_INIT(OnyxEpTensor);
    if (!host->ctx_value(ctx, p->out_values[o], &t)) {
      status = host->ctx_allocate_value(ctx, p->out_values[o], ONYX_EP_FLOAT, p->out_types[o].rank, p->out_types[o].dims, &t);
      if (status) goto done;
    }
    r.out[o] = t.data;
  }
  if (p->fused) {
    host->ctx_parallel_for(ctx, (size_t)p->n, 16 * kBlock, run_fused, &r);
    if (atomic_load(&r.failed)) status = host->make_status(ONYX_EP_OUT_OF_MEMORY, "vecfuse: out of memory");
    goto done;
  }
  /* Unfused (a scalar node joins chains of different sizes): node by node, in full. */
  for (size_t i = 0; i < p->num_inputs; ++i) slots[i] = (float*)r.in[i];
  for (size_t k = 0; k < p->num_instrs; ++k) {
    const Instr* in = &p->instrs[k];
    const size_t s = p->num_inputs + k, n = (size_t)p->numel[s];
    slots[s] = malloc(sizeof(float) * (n ? n : 1));
    if (!slots[s]) {
      status = host->make_status(ONYX_EP_OUT_OF_MEMORY, "vecfuse: out of memory");
      goto done;
    }
    apply(in->kind, slots[in->a], p->numel[in->a] == 1, in->b >= 0 ? slots[in->b] : NULL, in->b >= 0 && p->numel[in->b] == 1,
          slots[s], n);
  }
  for (size_t o = 0; o < p->num_outputs; ++o)
    memcpy(r.out[o], slots[p->out_slots[o]], sizeof(float) * (size_t)p->numel[p->out_slots[o]]);
done:
  if (slots)
    for (size_t s = p->num_inputs; s < p->num_slots; ++s) free(slots[s]);
  free(slots);
  free((void*)r.in);
  free(r.out);
  return status;
}

static OnyxEpStatus* compile_group(void* state, const OnyxEpGraph* graph, const OnyxEpGroup* group, void** compiled) {
  (void)state;
  const OnyxEpNode** nodes = calloc(group->num_nodes + 1, sizeof(OnyxEpNode*));
  if (!nodes) return host->make_status(ONYX_EP_OUT_OF_MEMORY, "vecfuse: out of memory compiling");
  for (size_t i = 0; i < group->num_nodes; ++i) nodes[i] = host->graph_node(graph, group->nodes[i]);
  Program* p = NULL;
  OnyxEpStatus* s = build_program(graph, nodes, group->num_nodes, group->inputs, group->num_inputs, group->outputs,
                                  group->num_outputs, &p);
  free((void*)nodes);
  if (s) return s;
  char msg[160];
  snprintf(msg, sizeof(msg), "compiled a group of %zu nodes into one %s loop over %lld elements", group->num_nodes,
           p->fused ? "fused" : "(unfused)", (long long)p->n);
  host->log(ONYX_EP_LOG_VERBOSE, "vecfuse", msg);
  *compiled = p;
  return NULL;
}

static OnyxEpStatus* create_kernel(void* state, const OnyxEpGraph* graph, const OnyxEpNode* node, void** kernel) {
  (void)state;
  /* One node is a group of one: its inputs, its output. */
  int64_t inputs[2] = {host->node_input(node, 0), host->node_num_inputs(node) > 1 ? host->node_input(node, 1) : -1};
  const size_t num_inputs = (inputs[1] >= 0 && inputs[1] != inputs[0]) ? 2 : 1;
  const int64_t output = host->node_output(node, 0);
  Program* p = NULL;
  OnyxEpStatus* s = build_program(graph, &node, 1, inputs, num_inputs, &output, 1, &p);
  if (s) return s;
  *kernel = p;
  return NULL;
}

static void release_program(void* state, void* compiled) {
  (void)state;
  free_program(compiled);
}

static void release(void* state) { free(state); }

/* ---- the plugin ---- */
static const OnyxEpOptionInfo kOptions[] = {
    {sizeof(OnyxEpOptionInfo), ONYX_EP_API_VERSION, "fuse", "bool", "true",
     "run each group of claimed nodes as one fused loop (false: one kernel per node)"},
    {sizeof(OnyxEpOptionInfo), ONYX_EP_API_VERSION, "min_group_nodes", "uint", "1",
     "groups of fewer nodes are left to the next EP (with fuse=true)"},
};

static const OnyxEpDeviceInfo kDevices[] = {
    {sizeof(OnyxEpDeviceInfo), ONYX_EP_API_VERSION, "cpu:0", "the host CPU (vecfuse's loops are portable C)", 1, NULL},
};

static OnyxEpStatus* get_devices(const OnyxEpDeviceInfo** devices, size_t* count) {
  *devices = kDevices;
  *count = sizeof(kDevices) / sizeof(kDevices[0]);
  return NULL;
}

static OnyxEpStatus* create(const OnyxEpCreateInfo* info, OnyxEpInstance* out) {
  Ep* ep = calloc(1, sizeof(Ep));
  if (!ep) return host->make_status(ONYX_EP_OUT_OF_MEMORY, "vecfuse: out of memory");
  ep->fuse = 1;
  ep->min_group_nodes = 1;
  for (size_t i = 0; i < info->num_options; ++i) {
    const char *k = info->option_keys[i], *v = info->option_values[i];
    if (strcmp(k, "fuse") == 0) ep->fuse = strcmp(v, "true") == 0 || strcmp(v, "1") == 0;
    else if (strcmp(k, "min_group_nodes") == 0) ep->min_group_nodes = (unsigned)strtoul(v, NULL, 10);
  }
  out->state = ep;
  out->device = "cpu:0";
  out->memory = NULL; /* host memory: no copies around its nodes */
  out->flags = ep->fuse ? ONYX_EP_COMPILES_GROUPS : 0;
  out->min_group_nodes = ep->min_group_nodes;
  out->claim = claim;
  out->create_kernel = create_kernel;
  out->compute_kernel = compute;
  out->release_kernel = release_program;
  out->compile_group = compile_group;
  out->compute_group = compute;
  out->release_group = release_program;
  out->release = release;
  return NULL;
}

/* Swish's output has its input's type and shape. */
static OnyxEpStatus* infer_same_as_input(OnyxEpInferContext* ctx) {
  const OnyxEpNode* node = host->infer_node(ctx);
  OnyxEpTensor x = ONYX_EP_INIT(OnyxEpTensor);
  if (host->node_num_inputs(node) != 1 || host->node_num_outputs(node) != 1)
    return host->make_status(ONYX_EP_INVALID_ARGUMENT, "Swish takes one input and gives one output");
  if (!host->node_input_type(node, 0, &x)) return host->make_status(ONYX_EP_INVALID_ARGUMENT, "Swish's input has no type");
  if (x.dtype != ONYX_EP_FLOAT) return host->make_status(ONYX_EP_INVALID_ARGUMENT, "Swish is defined for float32 only");
  return host->infer_set_output(ctx, 0, x.dtype, x.rank, x.dims);
}

static const OnyxEpCustomOp kCustomOps[] = {
    {sizeof(OnyxEpCustomOp), ONYX_EP_API_VERSION, DOMAIN, "Swish", 1, infer_same_as_input},
};

static const OnyxEpPluginApi kPlugin = {
    sizeof(OnyxEpPluginApi), ONYX_EP_API_VERSION, "vecfuse", "onyx examples", "1.0",
    kOptions, sizeof(kOptions) / sizeof(kOptions[0]), get_devices, create,
    kCustomOps, sizeof(kCustomOps) / sizeof(kCustomOps[0]),
};

ONYX_EP_PLUGIN_EXPORT const OnyxEpPluginApi* onyx_ep_plugin_init(const OnyxEpHostApi* h, uint32_t host_api_version,
                                                                 char* err, size_t err_len) {
  /* This plugin uses the host functions of version 1, which every onyx with the ABI has. */
  if (!h || host_api_version < 1 || !ONYX_EP_HAS_FIELD(OnyxEpHostApi, h, infer_set_output)) {
    snprintf(err, err_len, "vecfuse needs an onyx with EP plugin API 1 or newer");
    return NULL;
  }
  host = h;
  return &kPlugin;
}
