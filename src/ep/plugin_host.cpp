// The host side of the EP plugin ABI (include/onyx/ep_c_api.h): the function table onyx hands
// every plugin. Every function checks its arguments (a plugin may pass anything) and never throws.
#include <cstring>
#include <exception>
#include <string_view>

#include "core/common.hpp"
#include "core/logging.hpp"
#include "ep/plugin.hpp"
#include "onyx/version.hpp"

namespace onyx {
namespace {

// The largest struct of each kind this onyx writes; a plugin's struct_size may be smaller (an
// older header), in which case only the fields it covers are written.
template <class T>
bool writable(const T* out) {
  return out != nullptr && out->struct_size >= sizeof(uint32_t) * 2;
}

/// Writes `src` into `*out` as far as out->struct_size covers, keeping its struct_size.
template <class T>
void write_struct(T* out, const T& src) {
  const uint32_t size = out->struct_size;
  const size_t n = size < sizeof(T) ? size : sizeof(T);
  std::memcpy(static_cast<void*>(out), &src, n);
  out->struct_size = size;
}

OnyxEpTensor tensor_of(const TypeInfo* t) {
  OnyxEpTensor r{};
  r.struct_size = sizeof(OnyxEpTensor);
  r.api_version = ONYX_EP_API_VERSION;
  describe_type(t, &r);
  return r;
}

OnyxEpStatus* host_make_status(OnyxEpErrorCode code, const char* message) {
  try {
    auto* s = new OnyxEpStatus;
    s->code = code == ONYX_EP_OK ? ONYX_EP_FAILURE : code;
    s->message = message ? message : "(no message)";
    return s;
  } catch (...) {
    return nullptr;  // out of memory: the caller then sees success; nothing better is possible
  }
}

void host_log(OnyxEpLogLevel level, const char* ep, const char* message) {
  try {
    LogLevel l = LogLevel::kInfo;
    switch (level) {
      case ONYX_EP_LOG_VERBOSE: l = LogLevel::kVerbose; break;
      case ONYX_EP_LOG_INFO: l = LogLevel::kInfo; break;
      case ONYX_EP_LOG_WARNING: l = LogLevel::kWarning; break;
      default: l = LogLevel::kError; break;
    }
    if (!log_enabled(l)) return;
    log_message(l, str(ep ? ep : "plugin", ": ", message ? message : ""));
  } catch (...) {
  }
}

size_t graph_num_nodes(const OnyxEpGraph* g) { return g ? g->graph->nodes.size() : 0; }

const OnyxEpNode* graph_node(const OnyxEpGraph* g, int64_t index) {
  if (!g || index < 0 || static_cast<size_t>(index) >= g->graph->nodes.size()) return nullptr;
  try {
    std::lock_guard<std::mutex> lock(g->mu);
    if (g->nodes.size() != g->graph->nodes.size()) {
      g->nodes.clear();
      for (const Node& n : g->graph->nodes) {
        auto h = std::make_unique<OnyxEpNode>();
        h->node = &n;
        h->graph = g->graph;
        g->nodes.push_back(std::move(h));
      }
    }
    return g->nodes[static_cast<size_t>(index)].get();
  } catch (...) {
    return nullptr;
  }
}

size_t graph_num_values(const OnyxEpGraph* g) { return g ? g->graph->values.size() : 0; }

int32_t graph_value(const OnyxEpGraph* g, int64_t value, OnyxEpValueInfo* out) {
  if (!g || !writable(out) || value < 0 || static_cast<size_t>(value) >= g->graph->values.size()) return 0;
  const Graph& graph = *g->graph;
  const ValueSlot& s = graph.values[static_cast<size_t>(value)];
  OnyxEpValueInfo r{};
  r.struct_size = sizeof(r);
  r.api_version = ONYX_EP_API_VERSION;
  r.name = s.name.c_str();
  r.type = tensor_of(&s.type);
  r.is_tensor = s.type.kind == TypeInfo::Kind::kTensor;
  r.is_constant = s.has_initializer && !s.is_graph_input;
  if (r.is_constant && s.initializer.on_host() && s.initializer.dtype() != DType::kString) {
    const Tensor& t = s.initializer;
    r.type.dtype = static_cast<int32_t>(t.dtype());
    r.type.rank = static_cast<int32_t>(t.rank());
    r.type.dims = t.shape().data();
    r.type.data = const_cast<void*>(t.raw_data());
    r.type.bytes = t.nbytes();
  }
  r.is_graph_input = s.is_graph_input;
  for (int o : graph.outputs)
    if (o == value) r.is_graph_output = 1;
  r.producer = s.producer;
  write_struct(out, r);
  return 1;
}

const char* node_name(const OnyxEpNode* n) { return n ? n->node->name.c_str() : ""; }
const char* node_op_type(const OnyxEpNode* n) { return n ? n->node->op_type.c_str() : ""; }
const char* node_domain(const OnyxEpNode* n) { return n ? n->node->domain.c_str() : ""; }
int64_t node_opset(const OnyxEpNode* n) { return n ? n->node->opset : 0; }
size_t node_num_inputs(const OnyxEpNode* n) { return n ? n->node->inputs.size() : 0; }
int64_t node_input(const OnyxEpNode* n, size_t i) { return n && i < n->node->inputs.size() ? n->node->inputs[i] : -1; }
size_t node_num_outputs(const OnyxEpNode* n) { return n ? n->node->outputs.size() : 0; }
int64_t node_output(const OnyxEpNode* n, size_t i) { return n && i < n->node->outputs.size() ? n->node->outputs[i] : -1; }

int32_t node_type(const OnyxEpNode* n, size_t i, bool input, OnyxEpTensor* out) {
  if (!n || !writable(out)) return 0;
  const std::vector<int>& ids = input ? n->node->inputs : n->node->outputs;
  const std::vector<const TypeInfo*>* given = input ? n->input_types : n->output_types;
  if (i >= ids.size() || ids[i] < 0) return 0;
  const TypeInfo* t = nullptr;
  if (given && i < given->size()) t = (*given)[i];
  else if (n->graph && static_cast<size_t>(ids[i]) < n->graph->values.size()) t = &n->graph->values[ids[i]].type;
  if (!t || t->kind == TypeInfo::Kind::kUnknown) return 0;
  write_struct(out, tensor_of(t));
  return 1;
}
int32_t node_input_type(const OnyxEpNode* n, size_t i, OnyxEpTensor* out) { return node_type(n, i, true, out); }
int32_t node_output_type(const OnyxEpNode* n, size_t i, OnyxEpTensor* out) { return node_type(n, i, false, out); }

size_t node_num_attributes(const OnyxEpNode* n) { return n ? n->node->attrs.size() : 0; }
const char* node_attribute_name(const OnyxEpNode* n, size_t i) {
  return n && i < n->node->attrs.size() ? n->node->attrs[i].name.c_str() : nullptr;
}

int32_t node_attribute(const OnyxEpNode* n, const char* name, OnyxEpAttribute* out) {
  if (!n || !name || !writable(out)) return 0;
  try {
    for (const Attribute& a : n->node->attrs) {
      if (a.name != name) continue;
      OnyxEpAttribute r{};
      r.struct_size = sizeof(r);
      r.api_version = ONYX_EP_API_VERSION;
      r.type = static_cast<int32_t>(a.type);
      r.i = a.i;
      r.f = a.f;
      r.s = a.s.c_str();
      r.s_len = a.s.size();
      r.tensor.struct_size = sizeof(OnyxEpTensor);
      r.tensor.api_version = ONYX_EP_API_VERSION;
      switch (a.type) {
        case AttrType::kInts:
          r.count = a.ints.size();
          r.ints = a.ints.data();
          break;
        case AttrType::kFloats:
          r.count = a.floats.size();
          r.floats = a.floats.data();
          break;
        case AttrType::kStrings: {
          std::lock_guard<std::mutex> lock(n->mu);
          auto& list = n->string_lists[a.name];
          list.clear();
          for (const auto& s : a.strings) list.push_back(s.c_str());
          r.count = list.size();
          r.strings = list.data();
          break;
        }
        case AttrType::kTensor:
          if (a.t.defined() && a.t.on_host() && a.t.dtype() != DType::kString) {
            r.tensor.dtype = static_cast<int32_t>(a.t.dtype());
            r.tensor.rank = static_cast<int32_t>(a.t.rank());
            r.tensor.dims = a.t.shape().data();
            r.tensor.data = const_cast<void*>(a.t.raw_data());
            r.tensor.bytes = a.t.nbytes();
          }
          break;
        default:
          break;
      }
      write_struct(out, r);
      return 1;
    }
  } catch (...) {
  }
  return 0;
}

void describe_tensor(const Tensor& t, OnyxEpTensor* out) {
  OnyxEpTensor r{};
  r.struct_size = sizeof(r);
  r.api_version = ONYX_EP_API_VERSION;
  r.dtype = static_cast<int32_t>(t.dtype());
  r.rank = static_cast<int32_t>(t.rank());
  r.dims = t.shape().data();
  r.data = const_cast<void*>(t.raw_data());
  r.bytes = t.dtype() == DType::kString ? 0 : t.nbytes();
  r.on_device = !t.on_host();
  write_struct(out, r);
}

int32_t describe_value(const Value& v, OnyxEpTensor* out) {
  if (!v.is_tensor() || !v.tensor().defined() || v.tensor().dtype() == DType::kString) return 0;
  describe_tensor(v.tensor(), out);
  return 1;
}

int32_t ctx_input(OnyxEpKernelContext* c, size_t i, OnyxEpTensor* out) {
  if (!c || !writable(out) || !c->ctx->has_input(i)) return 0;
  return describe_value(c->ctx->input_value(i), out);
}

int32_t ctx_output(OnyxEpKernelContext* c, size_t i, OnyxEpTensor* out) {
  if (!c || !writable(out) || i >= c->ctx->num_outputs() || !c->ctx->output_ready(i)) return 0;
  describe_tensor(c->ctx->output(i), out);
  return 1;
}

/// A shape from a plugin, checked: rank in [0, 8 * 1024), dims non-negative, element count in range.
OnyxEpStatus* read_shape(int32_t dtype, int32_t rank, const int64_t* dims, DType* dt, Shape* shape) {
  if (dtype <= 0 || dtype > kMaxDType || static_cast<DType>(dtype) == DType::kString || dtype_size(static_cast<DType>(dtype)) == 0)
    return host_make_status(ONYX_EP_INVALID_ARGUMENT, str("element type ", dtype, " cannot be allocated").c_str());
  if (rank < 0 || rank > 64 || (rank > 0 && !dims))
    return host_make_status(ONYX_EP_INVALID_ARGUMENT, str("rank ", rank, " cannot be allocated").c_str());
  std::vector<int64_t> d(dims, dims + rank);
  for (int64_t x : d)
    if (x < 0) return host_make_status(ONYX_EP_INVALID_ARGUMENT, str("dim ", x, " is negative").c_str());
  *dt = static_cast<DType>(dtype);
  *shape = Shape(d);
  return nullptr;
}

Tensor allocate_for(OnyxEpKernelContext* c, DType dt, const Shape& shape) {
  return c->allocator ? c->allocator->allocate(dt, shape) : Tensor(dt, shape);
}

OnyxEpStatus* ctx_allocate_output(OnyxEpKernelContext* c, size_t i, int32_t dtype, int32_t rank, const int64_t* dims,
                                  OnyxEpTensor* out) {
  if (!c || !writable(out)) return host_make_status(ONYX_EP_INVALID_ARGUMENT, "ctx_allocate_output: null argument");
  if (i >= c->ctx->num_outputs() || !c->ctx->has_output(i))
    return host_make_status(ONYX_EP_INVALID_ARGUMENT, str("the node has no output ", i).c_str());
  try {
    DType dt;
    Shape shape;
    if (OnyxEpStatus* s = read_shape(dtype, rank, dims, &dt, &shape)) return s;
    describe_tensor(c->ctx->allocate_output(i, dt, shape), out);
    return nullptr;
  } catch (const std::exception& e) {
    return host_make_status(ONYX_EP_OUT_OF_MEMORY, e.what());
  }
}

int32_t ctx_value(OnyxEpKernelContext* c, int64_t value, OnyxEpTensor* out) {
  if (!c || !writable(out) || value < 0 || static_cast<size_t>(value) >= c->num_values) return 0;
  return describe_value(c->ctx->frame()[value], out);
}

OnyxEpStatus* ctx_allocate_value(OnyxEpKernelContext* c, int64_t value, int32_t dtype, int32_t rank, const int64_t* dims,
                                 OnyxEpTensor* out) {
  if (!c || !writable(out) || value < 0 || static_cast<size_t>(value) >= c->num_values)
    return host_make_status(ONYX_EP_INVALID_ARGUMENT, str("ctx_allocate_value: no value ", value).c_str());
  try {
    DType dt;
    Shape shape;
    if (OnyxEpStatus* s = read_shape(dtype, rank, dims, &dt, &shape)) return s;
    Value& v = c->ctx->frame()[value];
    if (!(v.is_tensor() && v.tensor().defined() && v.tensor().dtype() == dt && v.tensor().shape() == shape &&
          v.tensor().memory() == c->memory))
      v = Value(allocate_for(c, dt, shape));
    describe_tensor(v.tensor(), out);
    return nullptr;
  } catch (const std::exception& e) {
    return host_make_status(ONYX_EP_OUT_OF_MEMORY, e.what());
  }
}

void* ctx_run_state(OnyxEpKernelContext* c) { return c ? c->run_state : nullptr; }

void ctx_parallel_for(OnyxEpKernelContext* c, size_t n, size_t grain, void (*fn)(void*, size_t, size_t), void* user) {
  if (!fn || n == 0) return;
  if (!c) {
    fn(user, 0, n);
    return;
  }
  c->ctx->pool().parallel_for(static_cast<int64_t>(n), static_cast<int64_t>(grain < 1 ? 1 : grain),
                              [&](int64_t b, int64_t e) { fn(user, static_cast<size_t>(b), static_cast<size_t>(e)); });
}

OnyxEpErrorCode status_code(const OnyxEpStatus* s) { return s ? s->code : ONYX_EP_OK; }
const char* status_message(const OnyxEpStatus* s) { return s ? s->message.c_str() : ""; }
void release_status(OnyxEpStatus* s) { delete s; }
uint64_t graph_id(const OnyxEpGraph* g) { return g ? static_cast<uint64_t>(reinterpret_cast<uintptr_t>(g->graph)) : 0; }

const OnyxEpNode* infer_node(OnyxEpInferContext* c) { return c ? &c->node : nullptr; }

int32_t infer_input_value(OnyxEpInferContext* c, size_t i, OnyxEpTensor* out) {
  if (!c || !writable(out)) return 0;
  const Tensor* t = c->ctx->input_tensor(i);
  if (!t || !t->on_host() || t->dtype() == DType::kString) return 0;
  describe_tensor(*t, out);
  return 1;
}

OnyxEpStatus* infer_set_output(OnyxEpInferContext* c, size_t i, int32_t dtype, int32_t rank, const int64_t* dims) {
  if (!c) return host_make_status(ONYX_EP_INVALID_ARGUMENT, "infer_set_output: null context");
  if (i >= c->ctx->num_outputs())
    return host_make_status(ONYX_EP_INVALID_ARGUMENT, str("infer_set_output: the node has no output ", i).c_str());
  if (dtype <= 0 || dtype > kMaxDType)
    return host_make_status(ONYX_EP_INVALID_ARGUMENT, str("infer_set_output: element type ", dtype).c_str());
  if (rank > 64 || (rank > 0 && !dims))
    return host_make_status(ONYX_EP_INVALID_ARGUMENT, str("infer_set_output: rank ", rank).c_str());
  try {
    if (rank < 0) {
      c->ctx->set_output_unranked(i, static_cast<DType>(dtype));
      return nullptr;
    }
    Shape s;
    for (int32_t d = 0; d < rank; ++d) s.push_back(dims[d] >= 0 ? dims[d] : c->ctx->fresh());
    c->ctx->set_output(i, static_cast<DType>(dtype), std::move(s));
    return nullptr;
  } catch (const std::exception& e) {
    return host_make_status(ONYX_EP_FAILURE, e.what());
  }
}

}  // namespace

void describe_type(const TypeInfo* t, OnyxEpTensor* out) {
  out->dtype = t ? static_cast<int32_t>(t->elem_dtype()) : 0;
  out->rank = t && t->has_shape ? static_cast<int32_t>(t->shape.size()) : -1;
  out->dims = t && t->has_shape ? t->shape.data() : nullptr;
  out->data = nullptr;
  out->bytes = 0;
  out->on_device = 0;
}

void check_plugin_status(OnyxEpStatus* s, const std::string& ep, const std::string& what) {
  if (!s) return;
  std::unique_ptr<OnyxEpStatus> owned(s);
  ErrorCode code = ErrorCode::kEpFailure;
  switch (s->code) {
    case ONYX_EP_INVALID_ARGUMENT: code = ErrorCode::kInvalidArgument; break;
    case ONYX_EP_NOT_IMPLEMENTED: code = ErrorCode::kNotImplemented; break;
    case ONYX_EP_OUT_OF_MEMORY: code = ErrorCode::kOutOfMemory; break;
    case ONYX_EP_DEVICE_UNAVAILABLE: code = ErrorCode::kNotAvailable; break;
    default: break;
  }
  // (A plugin's message that names the EP itself does not get its name twice.)
  std::string_view m = s->message;
  if (m.size() > ep.size() + 2 && m.compare(0, ep.size(), ep) == 0 && m.compare(ep.size(), 2, ": ") == 0) m.remove_prefix(ep.size() + 2);
  throw Error(code, str(ep, ": ", what, ": ", m));
}

const OnyxEpHostApi* plugin_host_api() {
  static const OnyxEpHostApi api = [] {
    OnyxEpHostApi a{};
    a.struct_size = sizeof(OnyxEpHostApi);
    a.api_version = ONYX_EP_API_VERSION;
    a.onyx_version = onyx::version();
    a.make_status = host_make_status;
    a.log = host_log;
    a.graph_num_nodes = graph_num_nodes;
    a.graph_node = graph_node;
    a.graph_num_values = graph_num_values;
    a.graph_value = graph_value;
    a.node_name = node_name;
    a.node_op_type = node_op_type;
    a.node_domain = node_domain;
    a.node_opset = node_opset;
    a.node_num_inputs = node_num_inputs;
    a.node_input = node_input;
    a.node_num_outputs = node_num_outputs;
    a.node_output = node_output;
    a.node_input_type = node_input_type;
    a.node_output_type = node_output_type;
    a.node_num_attributes = node_num_attributes;
    a.node_attribute_name = node_attribute_name;
    a.node_attribute = node_attribute;
    a.ctx_input = ctx_input;
    a.ctx_output = ctx_output;
    a.ctx_allocate_output = ctx_allocate_output;
    a.ctx_value = ctx_value;
    a.ctx_allocate_value = ctx_allocate_value;
    a.ctx_run_state = ctx_run_state;
    a.ctx_parallel_for = ctx_parallel_for;
    fill_export_functions(&a);
    a.infer_node = infer_node;
    a.infer_input_value = infer_input_value;
    a.infer_set_output = infer_set_output;
    a.status_code = status_code;
    a.status_message = status_message;
    a.release_status = release_status;
    a.graph_id = graph_id;
    return a;
  }();
  return &api;
}

}  // namespace onyx
