// The OpenVINO EP's C++ view of onyx's host table (host.hpp).
#include "host.hpp"

namespace onyx::openvino {

namespace {
const OnyxEpHostApi* g_host = nullptr;
}  // namespace

const OnyxEpHostApi& host() { return *g_host; }
void set_host(const OnyxEpHostApi* api) { g_host = api; }

OnyxEpStatus* make_status(OnyxEpErrorCode code, const std::string& message) noexcept {
  return host().make_status(code, message.c_str());
}

void log(OnyxEpLogLevel level, const std::string& message) noexcept { host().log(level, "openvino", message.c_str()); }

const char* dtype_name(int32_t dtype) {
  static const char* const names[] = {"undefined",     "float",          "uint8",       "int8",           "uint16",
                                      "int16",         "int32",          "int64",       "string",         "bool",
                                      "float16",       "double",         "uint32",      "uint64",         "complex64",
                                      "complex128",    "bfloat16",       "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                                      "float8e5m2fnuz", "uint4",         "int4",        "float4e2m1",     "float8e8m0",
                                      "uint2",         "int2"};
  if (dtype < 0 || static_cast<size_t>(dtype) >= sizeof(names) / sizeof(names[0])) return "invalid";
  return names[dtype];
}

TensorType TensorType::of(const OnyxEpTensor& t) {
  TensorType r;
  r.dtype = t.dtype;
  if (t.rank >= 0 && (t.rank == 0 || t.dims)) {
    r.has_shape = true;
    r.dims.assign(t.dims, t.dims + t.rank);
  }
  return r;
}

bool TensorType::concrete() const {
  if (!has_shape) return false;
  for (int64_t d : dims)
    if (d < 0) return false;
  return true;
}

std::string TensorType::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i] < 0 ? std::string("?") : std::to_string(dims[i]);
  }
  return s + "]";
}

OnyxEpTensor TensorType::c() const {
  OnyxEpTensor t = init<OnyxEpTensor>();
  t.dtype = dtype;
  t.rank = has_shape ? static_cast<int32_t>(dims.size()) : -1;
  // A scalar needs a non-null dims too: export_onnx reads null dims as "shape unknown".
  static const int64_t kNoDims[1] = {0};
  t.dims = !has_shape ? nullptr : dims.empty() ? kNoDims : dims.data();
  return t;
}

ValueView value(const OnyxEpGraph* graph, int64_t id) {
  ValueView v;
  v.info.struct_size = sizeof(v.info);
  v.info.api_version = ONYX_EP_API_VERSION;
  v.info.type.struct_size = sizeof(v.info.type);
  v.info.type.api_version = ONYX_EP_API_VERSION;
  v.ok = id >= 0 && host().graph_value(graph, id, &v.info) == 1;
  return v;
}

size_t NodeView::num_inputs() const {
  size_t n = input_slots();
  while (n > 0 && input(n - 1) < 0) --n;
  return n;
}

bool NodeView::input_type(size_t i, TensorType* out) const {
  OnyxEpTensor t = init<OnyxEpTensor>();
  if (host().node_input_type(n_, i, &t) != 1) return false;
  *out = TensorType::of(t);
  return true;
}

bool NodeView::output_type(size_t i, TensorType* out) const {
  OnyxEpTensor t = init<OnyxEpTensor>();
  if (host().node_output_type(n_, i, &t) != 1) return false;
  *out = TensorType::of(t);
  return true;
}

bool NodeView::attribute(const char* name, OnyxEpAttribute* out) const {
  *out = OnyxEpAttribute{};
  out->struct_size = sizeof(*out);
  out->api_version = ONYX_EP_API_VERSION;
  return host().node_attribute(n_, name, out) == 1;
}

int32_t NodeView::attribute_type(size_t i) const {
  const char* name = host().node_attribute_name(n_, i);
  OnyxEpAttribute a;
  if (!name || !attribute(name, &a)) return ONYX_EP_ATTR_UNDEFINED;
  return a.type;
}

int64_t NodeView::attr_int(const char* name, int64_t dflt) const {
  OnyxEpAttribute a;
  if (!attribute(name, &a) || a.type != ONYX_EP_ATTR_INT) return dflt;
  return a.i;
}

std::string NodeView::attr_string(const char* name, const std::string& dflt) const {
  OnyxEpAttribute a;
  if (!attribute(name, &a) || a.type != ONYX_EP_ATTR_STRING || !a.s) return dflt;
  return std::string(a.s, a.s_len);
}

std::string NodeView::label() const {
  std::string s = domain().empty() ? std::string(op_type()) : str(domain(), "::", op_type());
  if (!name().empty()) s += str(" '", name(), "'");
  return s;
}

std::string_view OnnxModel::bytes() const {
  size_t size = 0;
  const void* p = m_ ? host().onnx_model_bytes(m_, &size) : nullptr;
  return p ? std::string_view(static_cast<const char*>(p), size) : std::string_view();
}

std::vector<std::pair<std::string, int64_t>> OnnxModel::constants() const {
  std::vector<std::pair<std::string, int64_t>> r;
  const size_t n = m_ ? host().onnx_model_num_constants(m_) : 0;
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    int64_t value = -1;
    if (host().onnx_model_constant(m_, i, &name, &value) == 1 && name) r.emplace_back(name, value);
  }
  return r;
}

OnnxModel export_onnx(const OnyxEpGraph* graph, const std::vector<const Part*>& parts, const std::vector<std::string>& prefixes,
                      int64_t inline_limit) {
  std::vector<std::vector<OnyxEpTensor>> in_types(parts.size()), out_types(parts.size());
  std::vector<OnyxEpOnnxPart> c(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    const Part& p = *parts[i];
    for (const auto& t : p.input_types) in_types[i].push_back(t.c());
    for (const auto& t : p.output_types) out_types[i].push_back(t.c());
    // A type list shorter than its values: the rest keep their own types.
    in_types[i].resize(in_types[i].empty() ? 0 : p.inputs.size(), TensorType().c());
    out_types[i].resize(out_types[i].empty() ? 0 : p.outputs.size(), TensorType().c());
    OnyxEpOnnxPart& q = c[i];
    q = OnyxEpOnnxPart{};
    q.struct_size = sizeof(q);
    q.api_version = ONYX_EP_API_VERSION;
    q.nodes = p.nodes.data();
    q.num_nodes = p.nodes.size();
    q.inputs = p.inputs.data();
    q.num_inputs = p.inputs.size();
    q.input_types = in_types[i].empty() ? nullptr : in_types[i].data();
    q.outputs = p.outputs.data();
    q.num_outputs = p.outputs.size();
    q.output_types = out_types[i].empty() ? nullptr : out_types[i].data();
    q.prefix = i < prefixes.size() ? prefixes[i].c_str() : nullptr;
  }
  OnyxEpOnnxModel* m = nullptr;
  if (OnyxEpStatus* s = host().export_onnx(graph, c.data(), c.size(), inline_limit, &m)) throw Failure(s);
  if (!m) fail(ONYX_EP_FAILURE, "openvino: export_onnx returned no model");
  return OnnxModel(m);
}

}  // namespace onyx::openvino
