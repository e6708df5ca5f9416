// What the XNNPACK EP takes, and why it declines the rest. Every rule here mirrors what the
// region compiler (region.cpp) can build from the 2022-02-16 operator API in xnnpack.h, so a
// claimed node never fails to compile for a reason known at claim time.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/elementwise.hpp"
#include "ops/image.hpp"
#include "ops/nn.hpp"
#include "xnnpack_ep.hpp"

namespace onyx::xnnpack {

const Tensor* constant_value(const Graph& g, int v) {
  if (v < 0) return nullptr;
  const ValueSlot& s = g.values[v];
  if (s.has_initializer) return s.is_graph_input ? nullptr : &s.initializer;
  if (s.producer >= 0) {
    const Node& p = g.nodes[s.producer];
    if (p.op_type == "Constant" && p.domain.empty() && p.outputs.size() == 1) return p.attr_tensor("value");
  }
  return nullptr;
}

namespace {

/// The DequantizeLinear (ai.onnx, plain per-tensor or per-axis form) producing v, when its data,
/// scale and zero point are constants: data 8-bit or int32, scale float32.
const Node* dq_of_constants(const Graph& g, int v) {
  if (v < 0 || g.values[v].producer < 0) return nullptr;
  const Node& d = g.nodes[g.values[v].producer];
  if (d.op_type != "DequantizeLinear" || !d.domain.empty() || d.outputs.size() != 1 || d.attr_int("block_size", 0) != 0)
    return nullptr;
  const Tensor* x = constant_input(g, d, 0);
  const Tensor* s = constant_input(g, d, 1);
  if (!x || !s || s->dtype() != DType::kFloat || (d.has_input(2) && !constant_input(g, d, 2))) return nullptr;
  if (!is_q8(x->dtype()) && x->dtype() != DType::kInt32) return nullptr;
  if (s->numel() == 1) return &d;
  int64_t axis = d.attr_int("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(x->rank());
  if (s->rank() != 1 || axis < 0 || axis >= static_cast<int64_t>(x->rank()) || s->numel() != x->dim(static_cast<size_t>(axis)))
    return nullptr;
  return &d;
}

}  // namespace

ConstRef const_ref(const Graph& g, int v) {
  ConstRef r;
  if (const Tensor* t = constant_value(g, v)) {
    r.shape = t->shape();
    r.dtype = t->dtype();
    r.tensor = t;
  } else if (const Node* d = dq_of_constants(g, v)) {
    r.shape = constant_input(g, *d, 0)->shape();
    r.dtype = DType::kFloat;
  }
  return r;
}

Tensor const_float(const Graph& g, int v) {
  if (const Tensor* t = constant_value(g, v)) {
    if (t->dtype() == DType::kFloat) return *t;
    if (t->dtype() == DType::kFloat16) {
      Tensor f(DType::kFloat, t->shape());
      for (int64_t i = 0; i < t->numel(); ++i) f.data<float>()[i] = static_cast<float>(t->data<Float16>()[i]);
      return f;
    }
    fail(ErrorCode::kEpFailure, "xnnpack: constant '", g.values[v].name, "' is ", dtype_name(t->dtype()),
         ", not float32 or float16");
  }
  const Node* d = dq_of_constants(g, v);
  if (!d) fail(ErrorCode::kEpFailure, "xnnpack: '", g.values[v].name, "' is not a constant");
  const Tensor& x = *constant_input(g, *d, 0);
  const Tensor& s = *constant_input(g, *d, 1);
  const Tensor* z = constant_input(g, *d, 2);
  // Per axis: element i belongs to channel (i / inner) % channels.
  int64_t inner = 1, channels = 1;
  if (s.numel() > 1) {
    int64_t axis = d->attr_int("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(x.rank());
    channels = x.dim(static_cast<size_t>(axis));
    for (size_t k = static_cast<size_t>(axis) + 1; k < x.rank(); ++k) inner *= x.dim(k);
  }
  Tensor f(DType::kFloat, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / inner) % channels;
    const double zp = z ? z->element_as_double(z->numel() == 1 ? 0 : c) : 0.0;
    // (x - zero_point) is exact in float32 for 8-bit data; ONNX computes it, then the product, in float32.
    f.data<float>()[i] = static_cast<float>(x.element_as_double(i) - zp) * s.data<float>()[s.numel() == 1 ? 0 : c];
  }
  return f;
}

namespace {

int32_t q8_at(const Tensor& z, int64_t i) {
  const uint8_t raw = static_cast<const uint8_t*>(z.raw_data())[i];
  return z.dtype() == DType::kInt8 ? static_cast<int8_t>(raw) : raw;
}

bool scale_value_ok(float s, const char* what, std::string* why) {
  if (s > 0.0f && std::isnormal(s)) return true;
  *why = str(what, " scale ", s, " (XNNPACK needs a positive normal scale)");
  return false;
}

}  // namespace

bool read_qparam(const Graph& g, const Node& n, size_t si, size_t zi, DType type, const char* what, QParam* out,
                 std::string* why) {
  out->type = type;
  if (!n.has_input(si)) {
    *why = str("no ", what, " scale");
    return false;
  }
  const Tensor* s = constant_input(g, n, si);
  if (!s) {
    *why = str("the ", what, " scale must be constant");
    return false;
  }
  if (s->dtype() != DType::kFloat) {
    *why = str(what, " scale of type ", dtype_name(s->dtype()), " (XNNPACK takes float32 scales)");
    return false;
  }
  if (s->numel() != 1) {
    *why = str(what, " scale with ", s->numel(), " values (XNNPACK quantizes activations per tensor)");
    return false;
  }
  out->scale = s->data<float>()[0];
  if (!scale_value_ok(out->scale, what, why)) return false;
  out->zp = 0;
  if (!n.has_input(zi)) return true;
  const Tensor* z = constant_input(g, n, zi);
  if (!z) {
    *why = str("the ", what, " zero point must be constant");
    return false;
  }
  if (z->dtype() != type || z->numel() != 1) {
    *why = str(what, " zero point of type ", dtype_name(z->dtype()), " with ", z->numel(), " values (one ",
               dtype_name(type), " value expected)");
    return false;
  }
  out->zp = q8_at(*z, 0);
  return true;
}

bool read_weight_qparams(const Graph& g, const Node& n, size_t si, size_t zi, DType type, int64_t count,
                         std::vector<float>* scales, std::vector<int32_t>* zps, std::string* why) {
  const Tensor* s = constant_input(g, n, si);
  if (!s) {
    *why = "the weight scale must be constant";
    return false;
  }
  if (s->dtype() != DType::kFloat) {
    *why = str("weight scale of type ", dtype_name(s->dtype()), " (XNNPACK takes float32 scales)");
    return false;
  }
  const Tensor* z = n.has_input(zi) ? constant_input(g, n, zi) : nullptr;
  if (n.has_input(zi) && !z) {
    *why = "the weight zero point must be constant";
    return false;
  }
  auto count_ok = [&](const Tensor& t) {
    return t.numel() == 1 || (t.numel() == count && (t.rank() == 1 || (t.rank() == 2 && (t.dim(0) == 1 || t.dim(1) == 1))));
  };
  if (!count_ok(*s)) {
    *why = str("weight scale of shape ", s->shape().to_string(), " (one value, or one per output channel: ", count, ")");
    return false;
  }
  if (z && (z->dtype() != type || !count_ok(*z))) {
    *why = str("weight zero point of type ", dtype_name(z->dtype()), " and shape ", z->shape().to_string(),
               " (", dtype_name(type), ", one value or one per output channel)");
    return false;
  }
  scales->resize(static_cast<size_t>(count));
  zps->resize(static_cast<size_t>(count));
  for (int64_t c = 0; c < count; ++c) {
    (*scales)[c] = s->data<float>()[s->numel() == 1 ? 0 : c];
    if (!scale_value_ok((*scales)[c], "weight", why)) return false;
    (*zps)[c] = z ? q8_at(*z, z->numel() == 1 ? 0 : c) : 0;
  }
  return true;
}

namespace {

/// The claim being answered: the caller may give the node's value types (the session asks about a
/// channels-last form's channels-first op with permuted types, to learn why it was declined).
thread_local const ClaimInfo* t_claim = nullptr;

const TypeInfo* type_of(const Graph& g, const Node& n, size_t i) {
  if (!n.has_input(i)) return nullptr;
  if (t_claim && &t_claim->node == &n && i < t_claim->input_types.size() && t_claim->input_types[i])
    return t_claim->input_types[i];
  return &g.values[n.inputs[i]].type;
}
const TypeInfo& output_type(const Graph& g, const Node& n, size_t o) {
  if (t_claim && &t_claim->node == &n && o < t_claim->output_types.size() && t_claim->output_types[o])
    return *t_claim->output_types[o];
  return g.values[n.outputs[o]].type;
}
/// Rank of input i, or -1 when unknown.
int rank_of(const Graph& g, const Node& n, size_t i) {
  const TypeInfo* t = type_of(g, n, i);
  return t && t->is_tensor() && t->has_shape ? static_cast<int>(t->shape.size()) : -1;
}
const Shape* shape_of(const Graph& g, const Node& n, size_t i) {
  const TypeInfo* t = type_of(g, n, i);
  return t && t->is_tensor() && t->has_shape ? &t->shape : nullptr;
}

/// Why a float op of this EP does not take a tensor of type t.
std::string type_reason(DType t, const Node& n) {
  switch (t) {
    case DType::kBFloat16: return "XNNPACK has no bfloat16 operators";
    case DType::kDouble: return "XNNPACK has no float64 operators";
    case DType::kUInt8:
    case DType::kInt8:
      return str("XNNPACK's 8-bit operators are quantized ones (QLinearConv, QLinearMatMul, QGemm, QLinearAdd, ...); it has no plain ",
                 dtype_name(t), " ", n.op_type);
    default: return "XNNPACK's operators take float32, float16 and quantized 8-bit tensors";
  }
}

/// The first `count` inputs and output 0 must be tensors of one float type, float32 or float16
/// (regions compute float16 in float32).
DType elem_of(const Graph& g, const Node& n, size_t i) {
  const TypeInfo* t = type_of(g, n, i);
  return t && t->is_tensor() ? t->dtype : DType::kUndefined;
}
DType out_elem(const Graph& g, const Node& n, size_t o = 0) {
  return n.has_output(o) && output_type(g, n, o).is_tensor() ? output_type(g, n, o).dtype : DType::kUndefined;
}

bool float_only(const Graph& g, const Node& n, size_t count, Decline* why) {
  DType seen = DType::kUndefined;
  auto check = [&](const TypeInfo& t, const std::string& what) {
    if (!t.is_tensor()) return decline(why, DeclineCode::kUnsupportedType, str("tensors only (", what, " is not a tensor)"));
    if (!is_float_like(t.dtype))
      return decline(why, DeclineCode::kUnsupportedType,
                     str("float32 or float16 only (", what, " is ", dtype_name(t.dtype), ": ", type_reason(t.dtype, n), ")"));
    if (seen != DType::kUndefined && t.dtype != seen)
      return decline(why, DeclineCode::kUnsupportedType,
                     str(what, " is ", dtype_name(t.dtype), " where input 0 is ", dtype_name(seen)));
    seen = t.dtype;
    return true;
  };
  for (size_t i = 0; i < count && i < n.inputs.size(); ++i) {
    const TypeInfo* t = type_of(g, n, i);
    if (t && !check(*t, str("input ", i))) return false;
  }
  if (n.has_output(0) && !check(output_type(g, n, 0), "the output")) return false;
  return true;
}

/// A constant float operand (float32, float16, or a DequantizeLinear of constants).
bool float_weight(const ConstRef& c, const char* what, Decline* why) {
  if (!c) return decline(why, DeclineCode::kDynamicShape, str(what, " must be constant"));
  if (!is_float_like(c.dtype))
    return decline(why, DeclineCode::kUnsupportedType, str(what, " of type ", dtype_name(c.dtype), " (float32 or float16 only)"));
  return true;
}

bool only_first_output(const Node& n, Decline* why) {
  for (size_t o = 1; o < n.outputs.size(); ++o)
    if (n.has_output(o))
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("output ", o, " of ", n.op_type, " (XNNPACK computes only the first)"));
  return true;
}

bool opset_in(const Node& n, int since, int until, Decline* why) {
  if (n.opset >= since && n.opset <= until) return true;
  return decline(why, DeclineCode::kOpsetOutOfRange,
                 str(n.op_type, " opset ", n.opset, " is outside the versions this EP maps to XNNPACK (", since, "..",
                     until, ")"));
}

/// A geometry check that may throw (bad attributes): declined as kOther with the message.
template <class F>
bool geometry_ok(Decline* why, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    return decline(why, DeclineCode::kOther, e.what());
  }
}

bool spatial_known(const Shape* x) { return x && x->size() == 4 && (*x)[2] >= 0 && (*x)[3] >= 0; }

bool auto_pad_ok(const Node& n, Decline* why) {
  const std::string ap = n.attr_string("auto_pad", "NOTSET");
  if (ap == "NOTSET" || ap == "VALID" || ap == "SAME_UPPER" || ap == "SAME_LOWER") return true;
  return decline(why, DeclineCode::kUnsupportedAttribute, str("auto_pad '", ap, "'"));
}

// ---- convolutions ----

/// The shape rules a 2-D convolution (float or quantized) shares: weights `w` of rank 4, an
/// input of rank 4, the groups, kernel_shape, auto_pad and the window geometry.
bool conv_shape_ok(const Graph& g, const Node& n, const Shape& w, Decline* why) {
  const int xr = rank_of(g, n, 0);
  if (w.size() != 4 || (xr >= 0 && xr != 4))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("only 2-D convolution (XNNPACK's convolution2d); this one is ",
                       (xr >= 0 ? xr : static_cast<int>(w.size())) - 2, "-D"));
  const int64_t group = n.attr_int("group", 1);
  if (group <= 0 || w[0] % group != 0) return decline(why, DeclineCode::kOther, str("group ", group, " does not divide the output channels"));
  const Shape* x = shape_of(g, n, 0);
  if (x && (*x)[1] >= 0 && (*x)[1] != w[1] * group)
    return decline(why, DeclineCode::kOther, "input channels do not match the weights and group");
  const std::vector<int64_t> ks = n.attr_ints("kernel_shape");
  if (!ks.empty() && (ks.size() != 2 || ks[0] != w[2] || ks[1] != w[3]))
    return decline(why, DeclineCode::kUnsupportedAttribute, "kernel_shape differs from the weight shape");
  if (!auto_pad_ok(n, why)) return false;
  return geometry_ok(why, [&] {
    const Shape in = spatial_known(x) ? Shape{(*x)[2], (*x)[3]} : Shape{-1, -1};
    window_geometry(n, in, Shape{w[2], w[3]}, false);
    return true;
  });
}

bool claim_conv(const Graph& g, const Node& n, bool fused, Decline* why) {
  if (!float_only(g, n, 3, why)) return false;
  if (!n.has_input(1)) return decline(why, DeclineCode::kOther, "Conv without weights");
  const ConstRef w = const_ref_input(g, n, 1);
  if (!float_weight(w, "weights", why)) return false;
  if (n.has_input(2)) {
    const ConstRef b = const_ref_input(g, n, 2);
    if (!float_weight(b, "bias", why)) return false;
    if (w.rank() >= 1 && b.numel() != w.dim(0)) return decline(why, DeclineCode::kOther, "bias size does not match the weights");
  }
  if (!conv_shape_ok(g, n, w.shape, why)) return false;
  if (fused) {
    const std::string act = n.attr_string("activation");
    const std::vector<float> p = n.attr_floats("activation_params");
    if (act == "Clip") {
      if (p.size() != 2) return decline(why, DeclineCode::kUnsupportedAttribute, "FusedConv Clip needs 2 activation_params");
      if (!(p[0] < p[1]))
        return decline(why, DeclineCode::kUnsupportedAttribute, "FusedConv Clip with min >= max (XNNPACK needs min < max)");
    } else if (act != "Relu") {
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("FusedConv activation '", act, "' (XNNPACK folds only Relu and Clip)"));
    }
  }
  return true;
}

bool claim_conv_transpose(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 3, why)) return false;
  const ConstRef w = const_ref_input(g, n, 1);
  if (!float_weight(w, "weights", why)) return false;
  const int xr = rank_of(g, n, 0);
  if (w.rank() != 4 || (xr >= 0 && xr != 4))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("only 2-D ConvTranspose (XNNPACK's deconvolution2d); this one is ",
                       (xr >= 0 ? xr : static_cast<int>(w.rank())) - 2, "-D"));
  const int64_t group = n.attr_int("group", 1);
  if (group <= 0 || w.dim(0) % group != 0) return decline(why, DeclineCode::kOther, str("group ", group, " does not divide the input channels"));
  if (n.has_input(2)) {
    const ConstRef b = const_ref_input(g, n, 2);
    if (!float_weight(b, "bias", why)) return false;
    if (b.numel() != w.dim(1) * group) return decline(why, DeclineCode::kOther, "bias size does not match the weights");
  }
  const std::vector<int64_t> ks = n.attr_ints("kernel_shape");
  if (!ks.empty() && (ks.size() != 2 || ks[0] != w.dim(2) || ks[1] != w.dim(3)))
    return decline(why, DeclineCode::kUnsupportedAttribute, "kernel_shape differs from the weight shape");
  const std::string ap = n.attr_string("auto_pad", "NOTSET");
  if (ap != "NOTSET" && ap != "VALID" && ap != "SAME_UPPER" && ap != "SAME_LOWER")
    return decline(why, DeclineCode::kUnsupportedAttribute, str("auto_pad '", ap, "'"));
  const std::vector<int64_t> strides = n.attr_ints("strides", {1, 1});
  const std::vector<int64_t> opad = n.attr_ints("output_padding", {0, 0});
  if (strides.size() != 2 || opad.size() != 2) return decline(why, DeclineCode::kOther, "strides / output_padding need 2 values");
  for (size_t k = 0; k < 2; ++k)
    if (opad[k] >= strides[k])
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("output_padding ", opad[k], " >= stride ", strides[k], " (XNNPACK's adjustment must be below the stride)"));
  const Shape* x = shape_of(g, n, 0);
  return geometry_ok(why, [&] {
    if (!spatial_known(x)) {
      if (n.has_attr("output_shape"))
        return decline(why, DeclineCode::kDynamicShape, "output_shape with an input of unknown spatial size");
      return true;
    }
    const WindowGeometry geo = conv_transpose_geometry(n, Shape{(*x)[2], (*x)[3]}, Shape{w.dim(2), w.dim(3)});
    for (size_t k = 0; k < 2; ++k) {
      if (geo.pad_begin[k] < 0)
        return decline(why, DeclineCode::kUnsupportedAttribute, "output_shape needs negative leading padding");
      const int64_t span = (w.dim(2 + k) - 1) * geo.dilation[k] + 1;
      const int64_t full = geo.stride[k] * ((*x)[2 + k] - 1) + span - geo.pad_begin[k] - std::max<int64_t>(0, geo.pad_end[k]);
      const int64_t adj = geo.out[k] - full;
      if (adj < 0 || adj >= geo.stride[k])
        return decline(why, DeclineCode::kUnsupportedAttribute,
                       str("output size needs an adjustment of ", adj, " in spatial dim ", k,
                           " (XNNPACK's must be in [0, stride))"));
    }
    return true;
  });
}

// ---- fully connected ----

bool claim_gemm(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 3, why)) return false;
  if (n.attr_int("transA", 0) != 0)
    return decline(why, DeclineCode::kUnsupportedAttribute, "transA=1 (XNNPACK's fully connected takes A untransposed)");
  const ConstRef b = const_ref_input(g, n, 1);
  if (!b) return decline(why, DeclineCode::kDynamicShape, "weights must be constant (B is computed at run time)");
  if (b.rank() != 2 || !is_float_like(b.dtype)) return decline(why, DeclineCode::kOther, "B must be a float32 or float16 matrix");
  const int64_t N = n.attr_int("transB", 0) ? b.dim(0) : b.dim(1);
  if (n.has_input(2)) {
    const ConstRef c = const_ref_input(g, n, 2);
    if (!c) return decline(why, DeclineCode::kDynamicShape, "C (the bias) must be constant");
    if (!float_weight(c, "C", why)) return false;
    const bool row = c.numel() == 1 || (c.rank() == 1 && c.dim(0) == N) || (c.rank() == 2 && c.dim(0) == 1 && c.dim(1) == N);
    if (!row)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("C of shape ", c.shape.to_string(), " (XNNPACK's bias is one row: [N], [1,N] or a scalar)"));
  }
  return true;
}

bool claim_matmul(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 2, why)) return false;
  const ConstRef b = const_ref_input(g, n, 1);
  if (!b) return decline(why, DeclineCode::kDynamicShape, "weights must be constant (B is computed at run time)");
  if (b.rank() != 2)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("B of rank ", b.rank(), " (XNNPACK's fully connected needs a 2-D weight matrix)"));
  const int ar = rank_of(g, n, 0);
  if (ar == 0) return decline(why, DeclineCode::kOther, "A is a scalar");
  return true;
}

// ---- pooling ----

bool claim_pool(const Graph& g, const Node& n, Decline* why) {
  const bool max = n.op_type == "MaxPool";
  if (max && is_q8(elem_of(g, n, 0))) {
    // XNNPACK's 8-bit max pooling picks one of its inputs: the bytes, whatever they quantize.
    if (elem_of(g, n, 0) != out_elem(g, n))
      return decline(why, DeclineCode::kUnsupportedType, "an output type other than the input's");
  } else if (!float_only(g, n, 1, why)) {
    return false;
  }
  if (max && !only_first_output(n, why)) return false;
  const std::vector<int64_t> ks = n.attr_ints("kernel_shape");
  const int xr = rank_of(g, n, 0);
  if (ks.size() != 2 || (xr >= 0 && xr != 4))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("only 2-D pooling (XNNPACK's pooling2d); this one is ", xr >= 0 ? xr - 2 : static_cast<int>(ks.size()), "-D"));
  if (ks[0] * ks[1] == 1)
    return decline(why, DeclineCode::kUnsupportedAttribute, "1x1 pooling (XNNPACK rejects 1-element windows)");
  if (!max) {
    for (int64_t d : n.attr_ints("dilations"))
      if (d != 1) return decline(why, DeclineCode::kUnsupportedAttribute, "dilated pooling (XNNPACK's average pooling has no dilation)");
  }
  if (!auto_pad_ok(n, why)) return false;
  const Shape* x = shape_of(g, n, 0);
  return geometry_ok(why, [&] {
    const Shape in = spatial_known(x) ? Shape{(*x)[2], (*x)[3]} : Shape{-1, -1};
    window_geometry(n, in, Shape(ks), true);
    return true;
  });
}

bool claim_global_pool(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  const int xr = rank_of(g, n, 0);
  if (xr < 0) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known (2-D pooling only)");
  if (xr != 4)
    return decline(why, DeclineCode::kUnsupportedAttribute, str("only 2-D pooling (input rank 4); this one is ", xr - 2, "-D"));
  return true;
}

// ---- elementwise ----

bool rank_ok(const Graph& g, const Node& n, Decline* why) {
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (rank_of(g, n, i) > XNN_MAX_TENSOR_DIMS)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("input ", i, " has ", rank_of(g, n, i), " dims (XNNPACK's limit is ", XNN_MAX_TENSOR_DIMS, ")"));
  return true;
}

bool claim_binary(const Graph& g, const Node& n, Decline* why) {
  const bool variadic = n.op_type == "Max" || n.op_type == "Min" || n.op_type == "Sum" || n.op_type == "Mean";
  const size_t count = n.num_inputs();
  if (!float_only(g, n, variadic ? count : 2, why)) return false;
  if (count == 0) return decline(why, DeclineCode::kOther, "no inputs");
  for (size_t i = 0; i < count; ++i)
    if (!n.has_input(i)) return decline(why, DeclineCode::kOther, str("input ", i, " is missing"));
  if (!variadic && count != 2) return decline(why, DeclineCode::kOther, str(n.op_type, " needs 2 inputs"));
  if (!rank_ok(g, n, why)) return false;
  if (n.opset < 7 && n.attr_int("broadcast", 0) != 0 && n.has_attr("axis")) {
    const Shape* a = shape_of(g, n, 0);
    const Shape* b = shape_of(g, n, 1);
    if (!a || !b) return decline(why, DeclineCode::kDynamicShape, "legacy broadcast with an axis needs known ranks");
    return geometry_ok(why, [&] {
      legacy_broadcast_shape(n, *a, *b);
      return true;
    });
  }
  return true;
}

bool claim_batch_norm(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  if (n.opset >= 14 && n.attr_int("training_mode", 0) != 0)
    return decline(why, DeclineCode::kUnsupportedAttribute, "training_mode=1 (inference statistics only)");
  if (!only_first_output(n, why)) return false;
  if (n.opset < 9 && n.attr_int("spatial", 1) == 0)
    return decline(why, DeclineCode::kUnsupportedAttribute, "spatial=0 (per-activation statistics)");
  const int r = rank_of(g, n, 0);
  if (r < 0) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known");
  if (r < 2 || r > XNN_MAX_TENSOR_DIMS)
    return decline(why, DeclineCode::kUnsupportedAttribute, str("input rank ", r, " (2 to ", XNN_MAX_TENSOR_DIMS, " supported)"));
  const Shape& x = *shape_of(g, n, 0);
  static const char* const names[] = {"", "scale", "B", "mean", "var"};
  for (size_t i = 1; i <= 4; ++i) {
    const ConstRef t = const_ref_input(g, n, i);
    if (!float_weight(t, names[i], why)) return false;
    if (x[1] < 0) return decline(why, DeclineCode::kDynamicShape, "the channel count must be known");
    if (t.numel() != x[1]) return decline(why, DeclineCode::kOther, str(names[i], " does not have one value per channel"));
  }
  return true;
}

bool claim_pow(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  const Tensor* e = constant_input(g, n, 1);
  if (!e || e->numel() != 1 || !(mask_has(types::kNumeric, e->dtype())))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   "Pow exponent must be a constant scalar 2 or 0.5 (XNNPACK has square and square root only)");
  const double p = e->element_as_double(0);
  if (p != 2.0 && p != 0.5)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("Pow exponent ", p, " (XNNPACK has square and square root only)"));
  const Shape* x = shape_of(g, n, 0);
  if (!x) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known");
  if (e->rank() > x->size())
    return decline(why, DeclineCode::kUnsupportedAttribute, "the exponent has more dims than the base");
  return rank_ok(g, n, why);
}

bool claim_prelu(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 2, why)) return false;
  const ConstRef s = const_ref_input(g, n, 1);
  if (!float_weight(s, "the slope", why)) return false;
  const Shape* x = shape_of(g, n, 0);
  if (!x) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known");
  if (s.numel() == 1) return true;
  Shape sl = legacy_prelu_slope_shape(n, *x, s.shape);
  if (sl.size() > x->size()) return decline(why, DeclineCode::kOther, "the slope has more dims than the input");
  while (sl.size() < x->size()) sl.insert(0, 1);
  auto ones_except = [&](size_t keep) {
    for (size_t k = 0; k < sl.size(); ++k)
      if (k != keep && sl[k] != 1) return false;
    return true;
  };
  const size_t r = x->size();
  if (r == 4 && ones_except(1) && (*x)[1] == sl[1]) return true;  // per channel, NHWC
  if (r >= 1 && ones_except(r - 1) && (*x)[r - 1] == sl[r - 1]) return true;  // over the last axis
  return decline(why, DeclineCode::kUnsupportedAttribute,
                 str("slope of shape ", s.shape.to_string(), " for input ", x->to_string(),
                     " (XNNPACK's PReLU is per channel of a 4-D input or over the last axis)"));
}

bool claim_clip(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  float lo, hi;
  std::string reason;
  if (!activation_bounds(g, n, &lo, &hi, &reason)) return decline(why, DeclineCode::kDynamicShape, reason);
  if (!(lo < hi))
    return decline(why, DeclineCode::kUnsupportedAttribute, str("Clip with min ", lo, " >= max ", hi, " (XNNPACK needs min < max)"));
  return true;
}

bool claim_softmax(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  const int r = rank_of(g, n, 0);
  const int64_t axis = n.attr_int("axis", n.opset >= 13 ? -1 : 1);
  if (n.opset < 13) {
    // Softmax-1/11 flattens to 2-D at `axis`: a softmax over all the trailing dims.
    if (axis < 0 && r < 0) return decline(why, DeclineCode::kDynamicShape, "a negative axis needs a known rank");
    if (r >= 0 && (axis < -r || axis > r)) return decline(why, DeclineCode::kOther, "axis out of range");
    return true;
  }
  if (axis == -1 || (r >= 0 && axis == r - 1)) return true;
  if (r < 0) return decline(why, DeclineCode::kDynamicShape, str("axis ", axis, " needs a known rank"));
  return decline(why, DeclineCode::kUnsupportedAttribute,
                 str("Softmax over axis ", axis, " of ", r, " (XNNPACK's softmax is over the last axis)"));
}

bool claim_resize(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  ResizeAttrs a;
  try {
    a = parse_resize_attrs(n);
  } catch (const Error& e) {
    return decline(why, DeclineCode::kOther, e.what());
  }
  if (a.mode != ResizeMode::kLinear)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("mode '", n.attr_string("mode", "nearest"), "' (XNNPACK has only bilinear resize)"));
  if (a.antialias) return decline(why, DeclineCode::kUnsupportedAttribute, "antialias (XNNPACK's bilinear resize has none)");
  if (a.exclude_outside) return decline(why, DeclineCode::kUnsupportedAttribute, "exclude_outside=1");
  if (a.has_axes) return decline(why, DeclineCode::kUnsupportedAttribute, "the axes attribute");
  if (a.policy != AspectPolicy::kStretch) return decline(why, DeclineCode::kUnsupportedAttribute, "keep_aspect_ratio_policy other than stretch");
  if (a.coord != ResizeCoord::kHalfPixel && a.coord != ResizeCoord::kPytorchHalfPixel &&
      a.coord != ResizeCoord::kAlignCorners && a.coord != ResizeCoord::kAsymmetric)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("coordinate_transformation_mode '", n.attr_string("coordinate_transformation_mode"),
                       "' (XNNPACK has half_pixel, align_corners and asymmetric)"));
  const Shape* x = shape_of(g, n, 0);
  if (x && x->size() != 4)
    return decline(why, DeclineCode::kUnsupportedAttribute, str("only 2-D resize (input rank 4); this input has rank ", x->size()));
  if (!x) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known");
  const float* scales = nullptr;
  const int64_t* sizes = nullptr;
  int64_t ns = 0, nz = 0;
  if (a.upsample && a.scales_input < 0) {
    scales = a.attr_scales.data();
    ns = static_cast<int64_t>(a.attr_scales.size());
  } else {
    const Tensor* s = a.scales_input >= 0 ? constant_input(g, n, a.scales_input) : nullptr;
    const Tensor* z = a.sizes_input >= 0 ? constant_input(g, n, a.sizes_input) : nullptr;
    if (n.has_input(a.scales_input) && !s) return decline(why, DeclineCode::kDynamicShape, "scales must be constant");
    if (a.sizes_input >= 0 && n.has_input(a.sizes_input) && !z) return decline(why, DeclineCode::kDynamicShape, "sizes must be constant");
    if (s && s->numel() > 0 && s->dtype() == DType::kFloat) {
      scales = s->data<float>();
      ns = s->numel();
    }
    if (z && z->numel() > 0 && z->dtype() == DType::kInt64) {
      sizes = z->data<int64_t>();
      nz = z->numel();
    }
    if (!scales && !sizes) return decline(why, DeclineCode::kOther, "neither scales nor sizes is given");
  }
  if (scales) {
    if (ns != 4) return decline(why, DeclineCode::kOther, "scales needs 4 values");
    if (scales[0] != 1.0f || scales[1] != 1.0f)
      return decline(why, DeclineCode::kUnsupportedAttribute, "scaling the batch or channel dims (XNNPACK resizes H and W only)");
    if ((*x)[2] < 0 || (*x)[3] < 0)
      return decline(why, DeclineCode::kDynamicShape,
                     "scales with an input of unknown H, W (XNNPACK derives its scale from the output size)");
  } else {
    if (nz != 4) return decline(why, DeclineCode::kOther, "sizes needs 4 values");
    if (((*x)[0] >= 0 && sizes[0] != (*x)[0]) || ((*x)[1] >= 0 && sizes[1] != (*x)[1]))
      return decline(why, DeclineCode::kUnsupportedAttribute, "resizing the batch or channel dims (XNNPACK resizes H and W only)");
    if ((*x)[0] < 0 || (*x)[1] < 0)
      return decline(why, DeclineCode::kDynamicShape, "sizes with an input of unknown batch or channels");
  }
  if (!x->is_concrete()) {
    if (sizes) return true;
  }
  return geometry_ok(why, [&] {
    Shape in = *x;
    for (size_t k = 0; k < 2; ++k)
      if (in[k] < 0) in[k] = 1;
    Shape out;
    std::vector<double> sc;
    resize_geometry(n, a, in, scales, ns, sizes, nz, out, sc);
    for (size_t k = 2; k < 4; ++k) {
      // XNNPACK's scale is in/out; ONNX's coordinates use the given scale.
      const double onnx = sc[k], xnn = static_cast<double>(out[k]) / static_cast<double>(in[k]);
      if (std::fabs(onnx - xnn) > 1e-6 * xnn)
        return decline(why, DeclineCode::kUnsupportedAttribute,
                       str("scale ", onnx, " is not output/input size (", out[k], "/", in[k],
                           "); XNNPACK derives its scale from the sizes"));
      if (out[k] == 1 && (a.coord == ResizeCoord::kPytorchHalfPixel || a.coord == ResizeCoord::kAlignCorners))
        return decline(why, DeclineCode::kUnsupportedAttribute, "an output size of 1 with pytorch_half_pixel or align_corners");
      if (out[k] == 0) return decline(why, DeclineCode::kOther, "empty output");
    }
    return true;
  });
}

bool claim_depth_to_space(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  if (n.attr_string("mode", "DCR") != "DCR")
    return decline(why, DeclineCode::kUnsupportedAttribute, "mode CRD (XNNPACK's depth_to_space is DCR)");
  const int64_t b = n.attr_int("blocksize", 0);
  if (b < 2) return decline(why, DeclineCode::kUnsupportedAttribute, str("blocksize ", b, " (XNNPACK needs >= 2)"));
  const int r = rank_of(g, n, 0);
  if (r < 0) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known");
  if (r != 4) return decline(why, DeclineCode::kOther, "input must have rank 4");
  return true;
}

bool claim_pad(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  const std::string mode = n.attr_string("mode", "constant");
  if (mode != "constant")
    return decline(why, DeclineCode::kUnsupportedAttribute, str("mode '", mode, "' (XNNPACK pads with a constant only)"));
  const int r = rank_of(g, n, 0);
  if (r < 0) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known");
  if (r > XNN_MAX_TENSOR_DIMS || r == 0)
    return decline(why, DeclineCode::kUnsupportedAttribute, str("rank ", r, " (XNNPACK pads 1 to ", XNN_MAX_TENSOR_DIMS, " dims)"));
  std::vector<int64_t> pads;
  if (n.opset < 11) {
    pads = n.attr_ints(n.opset < 2 ? "paddings" : "pads");
  } else {
    if (n.has_input(3)) return decline(why, DeclineCode::kUnsupportedAttribute, "the axes input");
    const Tensor* p = constant_input(g, n, 1);
    if (!p) return decline(why, DeclineCode::kDynamicShape, "pads must be constant");
    for (int64_t i = 0; i < p->numel(); ++i) pads.push_back(static_cast<int64_t>(p->element_as_double(i)));
    if (n.has_input(2)) {
      const Tensor* v = constant_input(g, n, 2);
      if (!v) return decline(why, DeclineCode::kDynamicShape, "constant_value must be constant");
      if (v->numel() != 1 || !is_float_like(v->dtype())) return decline(why, DeclineCode::kOther, "constant_value must be a float scalar");
    }
  }
  if (pads.size() != static_cast<size_t>(2 * r)) return decline(why, DeclineCode::kOther, "pads does not match the rank");
  for (int64_t p : pads)
    if (p < 0) return decline(why, DeclineCode::kUnsupportedAttribute, "negative pads (cropping)");
  return true;
}

bool claim_unary(const Graph& g, const Node& n, Decline* why) {
  if (!float_only(g, n, 1, why)) return false;
  if (n.op_type == "Elu") {
    const float alpha = n.attr_float("alpha", 1.0f);
    if (!(alpha > 0.0f) || !std::isnormal(alpha))
      return decline(why, DeclineCode::kUnsupportedAttribute, str("Elu alpha ", alpha, " (XNNPACK needs a positive normal alpha)"));
  }
  if (n.op_type == "LeakyRelu" && !std::isfinite(n.attr_float("alpha", 0.01f)))
    return decline(why, DeclineCode::kUnsupportedAttribute, "a non-finite alpha");
  return true;
}

// ---- quantized ops ----

/// Input i (or the output, i < 0) must be uint8 or int8.
bool q8_type(const Graph& g, const Node& n, int i, const char* what, DType* t, Decline* why) {
  *t = i < 0 ? out_elem(g, n) : elem_of(g, n, static_cast<size_t>(i));
  if (is_q8(*t)) return true;
  if (*t == DType::kUndefined) return decline(why, DeclineCode::kUnsupportedType, str("the type of ", what, " is not known"));
  return decline(why, DeclineCode::kUnsupportedType,
                 str(what, " of type ", dtype_name(*t), " (XNNPACK's quantized operators take uint8 and int8)"));
}

bool qparam_or_decline(const Graph& g, const Node& n, size_t si, size_t zi, DType type, const char* what, QParam* q,
                       Decline* why) {
  std::string r;
  if (read_qparam(g, n, si, zi, type, what, q, &r)) return true;
  return decline(why, r.find("constant") != std::string::npos ? DeclineCode::kDynamicShape : DeclineCode::kUnsupportedAttribute, r);
}

/// Weights of a quantized convolution or fully connected layer with `count` output channels:
/// per tensor, any zero point (XNNPACK's uint8 operators take one; int8 weights go through them
/// shifted by 128 when theirs is not 0); per channel only symmetric, for XNNPACK's per-channel
/// int8 convolution (zero point 0, or 128 for uint8 weights, which are then shifted to int8).
/// And every channel's requantisation scale within XNNPACK's range.
bool q_weights_ok(const Graph& g, const Node& n, size_t si, size_t zi, DType wt, int64_t count, const QParam& x,
                  const QParam& y, Decline* why) {
  std::vector<float> ws;
  std::vector<int32_t> wz;
  std::string r;
  if (!read_weight_qparams(g, n, si, zi, wt, count, &ws, &wz, &r))
    return decline(why, r.find("constant") != std::string::npos ? DeclineCode::kDynamicShape : DeclineCode::kUnsupportedAttribute, r);
  const bool per_channel = std::any_of(ws.begin(), ws.end(), [&](float v) { return v != ws[0]; }) ||
                           std::any_of(wz.begin(), wz.end(), [&](int32_t v) { return v != wz[0]; });
  if (per_channel) {
    const int32_t symmetric = wt == DType::kInt8 ? 0 : 128;
    for (int32_t z : wz)
      if (z != symmetric)
        return decline(why, DeclineCode::kUnsupportedAttribute,
                       str("per-channel ", dtype_name(wt), " weights with zero point ", z,
                           " (XNNPACK's per-channel convolution takes symmetric int8 weights: zero point 0, or 128 for "
                           "uint8 weights)"));
  }
  for (float s : ws)
    if (!requant_scale_ok(x.scale, s, y.scale))
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("requantisation scale x_scale * w_scale / y_scale = ", x.scale * s / y.scale,
                         " (XNNPACK's range is [2^-32, 256))"));
  return true;
}

bool claim_qlinear_conv(const Graph& g, const Node& n, Decline* why) {
  DType xt, yt;
  if (!q8_type(g, n, 0, "x", &xt, why) || !q8_type(g, n, -1, "y", &yt, why)) return false;
  const Tensor* w = constant_input(g, n, 3);
  if (!w) return decline(why, DeclineCode::kDynamicShape, "weights must be constant");
  if (!is_q8(w->dtype()))
    return decline(why, DeclineCode::kUnsupportedType, str("weights of type ", dtype_name(w->dtype()), " (uint8 or int8 only)"));
  if (!conv_shape_ok(g, n, w->shape(), why)) return false;
  QParam x, y;
  if (!qparam_or_decline(g, n, 1, 2, xt, "x", &x, why) || !qparam_or_decline(g, n, 6, 7, yt, "y", &y, why)) return false;
  if (!q_weights_ok(g, n, 4, 5, w->dtype(), w->dim(0), x, y, why)) return false;
  if (n.has_input(8)) {
    const Tensor* b = constant_input(g, n, 8);
    if (!b) return decline(why, DeclineCode::kDynamicShape, "bias must be constant");
    if (b->dtype() != DType::kInt32 || b->numel() != w->dim(0))
      return decline(why, DeclineCode::kOther, "bias must be int32 with one value per output channel");
  }
  return true;
}

/// QLinearMatMul and com.microsoft QGemm: a fully connected layer over a constant 2-D B.
bool claim_q_fully_connected(const Graph& g, const Node& n, bool gemm, Decline* why) {
  if (gemm && !n.has_input(8))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   "a float output (no y_zero_point): XNNPACK's 8-bit fully connected writes 8-bit outputs");
  DType at, yt;
  if (!q8_type(g, n, 0, "A", &at, why) || !q8_type(g, n, -1, "Y", &yt, why)) return false;
  if (gemm) {
    if (n.attr_int("transA", 0) != 0)
      return decline(why, DeclineCode::kUnsupportedAttribute, "transA=1 (XNNPACK's fully connected takes A untransposed)");
    if (n.attr_float("alpha", 1.0f) != 1.0f)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("alpha ", n.attr_float("alpha", 1.0f), " (XNNPACK's 8-bit fully connected has no factor besides the scales)"));
  }
  const Tensor* b = constant_input(g, n, 3);
  if (!b) return decline(why, DeclineCode::kDynamicShape, "B must be constant (XNNPACK's fully connected packs its weights)");
  if (!is_q8(b->dtype()))
    return decline(why, DeclineCode::kUnsupportedType, str("B of type ", dtype_name(b->dtype()), " (uint8 or int8 only)"));
  if (b->rank() != 2)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str("B of rank ", b->rank(), " (XNNPACK's fully connected needs a 2-D weight matrix)"));
  const int ar = rank_of(g, n, 0);
  if (ar == 0 || (gemm && ar >= 0 && ar != 2)) return decline(why, DeclineCode::kOther, str("A of rank ", ar));
  const int64_t N = gemm && n.attr_int("transB", 0) != 0 ? b->dim(0) : b->dim(1);
  QParam a, y;
  if (!qparam_or_decline(g, n, 1, 2, at, "A", &a, why)) return false;
  if (!qparam_or_decline(g, n, gemm ? 7 : 6, gemm ? 8 : 7, yt, "Y", &y, why)) return false;
  if (!q_weights_ok(g, n, 4, 5, b->dtype(), N, a, y, why)) return false;
  const size_t bias = gemm ? 6 : 99;
  if (gemm && n.has_input(bias)) {
    const Tensor* c = constant_input(g, n, bias);
    if (!c) return decline(why, DeclineCode::kDynamicShape, "C must be constant");
    const bool row = c->numel() == 1 || (c->numel() == N && (c->rank() == 1 || (c->rank() == 2 && c->dim(0) == 1)));
    if (c->dtype() != DType::kInt32 || !row)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("C of type ", dtype_name(c->dtype()), " and shape ", c->shape().to_string(),
                         " (XNNPACK's bias is int32, one value per output column)"));
  }
  return true;
}

bool claim_qlinear_matmul(const Graph& g, const Node& n, Decline* why) { return claim_q_fully_connected(g, n, false, why); }
bool claim_qgemm(const Graph& g, const Node& n, Decline* why) { return claim_q_fully_connected(g, n, true, why); }

/// A ratio of scales computed in float32 as XNNPACK does, within [lo, hi).
bool ratio_ok(float r, float lo, float hi, const char* what, const char* op, Decline* why) {
  if (r >= lo && r < hi) return true;
  return decline(why, DeclineCode::kUnsupportedAttribute,
                 str(what, " = ", r, " (XNNPACK's 8-bit ", op, " takes [2^", std::ilogb(lo), ", 2^", std::ilogb(hi), "))"));
}

/// com.microsoft QLinearAdd / QLinearMul.
bool claim_qlinear_binary(const Graph& g, const Node& n, Decline* why) {
  DType at, bt, ct;
  if (!q8_type(g, n, 0, "A", &at, why) || !q8_type(g, n, 3, "B", &bt, why) || !q8_type(g, n, -1, "C", &ct, why)) return false;
  if (at != bt || at != ct) return decline(why, DeclineCode::kUnsupportedType, "A, B and C of different types");
  if (!rank_ok(g, n, why)) return false;
  QParam a, b, c;
  if (!qparam_or_decline(g, n, 1, 2, at, "A", &a, why) || !qparam_or_decline(g, n, 4, 5, bt, "B", &b, why) ||
      !qparam_or_decline(g, n, 6, 7, ct, "C", &c, why))
    return false;
  if (n.op_type == "QLinearAdd")
    return ratio_ok(a.scale / c.scale, 0x1.0p-10f, 0x1.0p+8f, "A_scale / C_scale", "addition", why) &&
           ratio_ok(b.scale / c.scale, 0x1.0p-10f, 0x1.0p+8f, "B_scale / C_scale", "addition", why);
  return ratio_ok(a.scale * b.scale / c.scale, 0x1.0p-16f, 0x1.0p+8f, "A_scale * B_scale / C_scale", "multiplication", why);
}

/// com.microsoft QLinearGlobalAveragePool, QLinearSigmoid, QLinearLeakyRelu: X, x_scale,
/// x_zero_point, y_scale, y_zero_point.
bool claim_qlinear_unary(const Graph& g, const Node& n, Decline* why) {
  DType xt, yt;
  if (!q8_type(g, n, 0, "X", &xt, why) || !q8_type(g, n, -1, "Y", &yt, why)) return false;
  if (xt != yt) return decline(why, DeclineCode::kUnsupportedType, "X and Y of different types");
  QParam x, y;
  if (!qparam_or_decline(g, n, 1, 2, xt, "X", &x, why) || !qparam_or_decline(g, n, 3, 4, yt, "Y", &y, why)) return false;
  if (n.op_type == "QLinearGlobalAveragePool") {
    const bool last = n.attr_int("channels_last", 0) != 0;
    const int r = rank_of(g, n, 0);
    if (r < 0) return decline(why, DeclineCode::kDynamicShape, "the input rank must be known");
    if (last ? r < 3 : r != 4)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("an input of rank ", r, last ? " (channels-last pooling needs rank 3 or more)"
                                                      : " (channels-first pooling is 2-D here: rank 4)"));
    if (!ratio_ok(x.scale / y.scale, 0x1.0p-8f, 0x1.0p+8f, "x_scale / y_scale", "global average pooling", why)) return false;
    // XNNPACK divides that ratio by the pixel count; below 2^-32 the library asserts.
    const Shape* s = shape_of(g, n, 0);
    int64_t pixels = 1;
    for (size_t k = last ? 1 : 2; s && k < s->size() - (last ? 1 : 0); ++k) pixels = (*s)[k] < 0 ? -1 : pixels * (*s)[k];
    if (!s || pixels < 0) return decline(why, DeclineCode::kDynamicShape, "the pooled size must be known");
    if (x.scale / y.scale / static_cast<float>(std::max<int64_t>(pixels, 1)) < 0x1.0p-31f)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("x_scale / y_scale / ", pixels, " pixels below 2^-32 (XNNPACK's limit)"));
    return true;
  }
  if (n.op_type == "QLinearSigmoid") {
    const int32_t zp = yt == DType::kInt8 ? -128 : 0;
    if (y.scale != 0x1.0p-8f || y.zp != zp)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("y_scale ", y.scale, " and y_zero_point ", y.zp, " (XNNPACK's 8-bit sigmoid writes scale 1/256 with zero point ",
                         zp, " for ", dtype_name(yt), ")"));
    return true;
  }
  // QLinearLeakyRelu (XNNPACK's is uint8: int8 tensors go through it shifted by 128).
  const float alpha = n.attr_float("alpha", 0.01f);
  if (!(alpha > 0.0f && alpha <= 1.0f) || !std::isnormal(alpha))
    return decline(why, DeclineCode::kUnsupportedAttribute, str("alpha ", alpha, " (XNNPACK's 8-bit leaky ReLU takes 0 < alpha <= 1)"));
  return ratio_ok(x.scale / y.scale, 0x1.0p-8f, 0x1.0p+8f, "x_scale / y_scale", "leaky ReLU", why);
}

/// QuantizeLinear per tensor, float32 to uint8 / int8 (computed by the region itself, as ONNX
/// defines it: XNNPACK's conversion multiplies by 1/scale, which rounds some values to the other
/// side of a tie).
bool claim_quantize(const Graph& g, const Node& n, Decline* why) {
  const DType xt = elem_of(g, n, 0);
  if (xt != DType::kFloat)
    return decline(why, DeclineCode::kUnsupportedType, str("x of type ", dtype_name(xt), " (float32 only)"));
  DType yt;
  if (!q8_type(g, n, -1, "y", &yt, why)) return false;
  if (n.attr_int("block_size", 0) != 0) return decline(why, DeclineCode::kUnsupportedAttribute, "blocked quantization");
  QParam y;
  return qparam_or_decline(g, n, 1, 2, yt, "y", &y, why);
}

/// DequantizeLinear per tensor, uint8 / int8 to float32 (XNNPACK's conversion: (x - zero_point) * scale).
bool claim_dequantize(const Graph& g, const Node& n, Decline* why) {
  DType xt;
  if (!q8_type(g, n, 0, "x", &xt, why)) return false;
  if (out_elem(g, n) != DType::kFloat)
    return decline(why, DeclineCode::kUnsupportedType, str("an output of type ", dtype_name(out_elem(g, n)), " (float32 only)"));
  if (n.attr_int("block_size", 0) != 0) return decline(why, DeclineCode::kUnsupportedAttribute, "blocked quantization");
  if (constant_input(g, n, 0))
    return decline(why, DeclineCode::kNotWorthOffloading,
                   "a constant input (the weights' DequantizeLinear is folded into the float constant its reader takes)");
  QParam x;
  return qparam_or_decline(g, n, 1, 2, xt, "x", &x, why);
}

bool is_reshape_like(const Node& n) {
  return n.domain.empty() && (n.op_type == "Reshape" || n.op_type == "Flatten" || n.op_type == "Squeeze" ||
                              n.op_type == "Unsqueeze" || n.op_type == "Identity");
}

struct OpRule {
  const char* op;
  int since, until;
  bool (*claim)(const Graph&, const Node&, Decline*);
};

bool claim_conv_plain(const Graph& g, const Node& n, Decline* why) { return claim_conv(g, n, false, why); }

const OpRule kRules[] = {
    {"Conv", 1, kMaxOpset, claim_conv_plain},
    {"ConvTranspose", 1, kMaxOpset, claim_conv_transpose},
    {"Gemm", 1, kMaxOpset, claim_gemm},
    {"MatMul", 1, kMaxOpset, claim_matmul},
    {"MaxPool", 1, kMaxOpset, claim_pool},
    {"AveragePool", 1, kMaxOpset, claim_pool},
    {"GlobalAveragePool", 1, kMaxOpset, claim_global_pool},
    {"Add", 1, kMaxOpset, claim_binary},
    {"Sub", 1, kMaxOpset, claim_binary},
    {"Mul", 1, kMaxOpset, claim_binary},
    {"Div", 1, kMaxOpset, claim_binary},
    {"Max", 1, kMaxOpset, claim_binary},
    {"Min", 1, kMaxOpset, claim_binary},
    {"Sum", 1, kMaxOpset, claim_binary},
    {"Mean", 1, kMaxOpset, claim_binary},
    {"BatchNormalization", 1, kMaxOpset, claim_batch_norm},
    {"Pow", 1, kMaxOpset, claim_pow},
    {"PRelu", 1, kMaxOpset, claim_prelu},
    {"Relu", 1, kMaxOpset, claim_unary},
    {"Clip", 1, kMaxOpset, claim_clip},
    {"LeakyRelu", 1, kMaxOpset, claim_unary},
    {"Elu", 1, kMaxOpset, claim_unary},
    {"Sigmoid", 1, kMaxOpset, claim_unary},
    {"HardSwish", 14, kMaxOpset, claim_unary},
    {"Abs", 1, kMaxOpset, claim_unary},
    {"Neg", 1, kMaxOpset, claim_unary},
    {"Floor", 1, kMaxOpset, claim_unary},
    {"Ceil", 1, kMaxOpset, claim_unary},
    {"Round", 11, kMaxOpset, claim_unary},
    {"Sqrt", 1, kMaxOpset, claim_unary},
    {"Softmax", 1, kMaxOpset, claim_softmax},
    {"Resize", 10, kMaxOpset, claim_resize},
    {"Upsample", 7, 9, claim_resize},
    {"DepthToSpace", 1, kMaxOpset, claim_depth_to_space},
    {"Pad", 1, kMaxOpset, claim_pad},
    {"QLinearConv", 10, kMaxOpset, claim_qlinear_conv},
    {"QLinearMatMul", 10, kMaxOpset, claim_qlinear_matmul},
};

/// ONNX Runtime's quantized operators (domain com.microsoft, version 1) XNNPACK has operators for.
const OpRule kContribRules[] = {
    {"QGemm", 1, 1, claim_qgemm},
    {"QLinearAdd", 1, 1, claim_qlinear_binary},
    {"QLinearMul", 1, 1, claim_qlinear_binary},
    {"QLinearGlobalAveragePool", 1, 1, claim_qlinear_unary},
    {"QLinearSigmoid", 1, 1, claim_qlinear_unary},
    {"QLinearLeakyRelu", 1, 1, claim_qlinear_unary},
};

/// ONNX ops people expect here that this XNNPACK snapshot has no operator for.
const char* const kMissing[][2] = {
    {"Tanh", "tanh"},         {"Transpose", "transpose"}, {"Concat", "concatenation"}, {"Exp", "exp"},
    {"Log", "log"},           {"Erf", "erf"},             {"Gelu", "gelu"},            {"HardSigmoid", "hard sigmoid"},
    {"Softplus", "softplus"}, {"LogSoftmax", "log-softmax"}, {"GlobalMaxPool", "global max pooling"},
    {"Split", "split"},       {"Slice", "slice"},         {"ReduceMean", "reduction"},
    {"LayerNormalization", "layer normalization"},
};

/// Claim without the reshape-like ops (they need a neighbour that is claimed this way).
bool claim_core(const Graph& g, const Node& n, Decline* why) {
  if (n.domain == "onyx" && n.op_type == "FusedConv") {
    if (!opset_in(n, 1, 1, why)) return false;
    return claim_conv(g, n, true, why);
  }
  if (n.domain == "com.microsoft") {
    for (const OpRule& r : kContribRules)
      if (n.op_type == r.op) {
        if (!opset_in(n, r.since, r.until, why)) return false;
        return r.claim(g, n, why);
      }
    if (n.op_type == "QLinearConcat")
      return decline(why, DeclineCode::kUnsupportedOp, "XNNPACK (2022-02-16 snapshot) has no concatenation operator");
    if (n.op_type == "QLinearSoftmax")
      return decline(why, DeclineCode::kUnsupportedOp,
                     "XNNPACK's 8-bit softmax (uint8, output scale 1/256) does not compute ONNX Runtime's QLinearSoftmax "
                     "(y = e * floor(1 / y_scale) / sum e)");
    if (n.op_type == "QLinearAveragePool")
      return decline(why, DeclineCode::kUnsupportedOp,
                     "not mapped: XNNPACK's 8-bit average pooling is uint8-only (this EP takes 8-bit global average pooling)");
  }
  if (!n.domain.empty())
    return decline(why, DeclineCode::kUnsupportedOp, str("no XNNPACK operator for ", n.domain, "::", n.op_type));
  for (const OpRule& r : kRules)
    if (n.op_type == r.op) {
      if (!opset_in(n, r.since, r.until, why)) return false;
      return r.claim(g, n, why);
    }
  for (const auto& m : kMissing)
    if (n.op_type == m[0])
      return decline(why, DeclineCode::kUnsupportedOp, str("XNNPACK (2022-02-16 snapshot) has no ", m[1], " operator"));
  return decline(why, DeclineCode::kUnsupportedOp, str("no XNNPACK operator for ", n.op_type));
}

}  // namespace

bool activation_bounds(const Graph& g, const Node& n, float* lo, float* hi, std::string* why) {
  if (!n.domain.empty()) return false;
  if (n.op_type == "Relu") {
    *lo = 0.0f;
    *hi = std::numeric_limits<float>::infinity();
    return true;
  }
  if (n.op_type != "Clip") return false;
  *lo = -std::numeric_limits<float>::max();
  *hi = std::numeric_limits<float>::max();
  if (n.opset < 11) {
    *lo = n.attr_float("min", *lo);
    *hi = n.attr_float("max", *hi);
    return true;
  }
  for (size_t i = 1; i <= 2; ++i) {
    if (!n.has_input(i)) continue;
    const Tensor* t = constant_input(g, n, i);
    if (!t || t->numel() != 1 || !is_float_like(t->dtype())) {
      if (why) *why = str("Clip ", i == 1 ? "min" : "max", " must be a constant float scalar");
      return false;
    }
    (i == 1 ? *lo : *hi) = static_cast<float>(t->element_as_double(0));
  }
  return true;
}

bool claim_node(const ClaimInfo& info, bool quantized, Decline* why) {
  struct Scope {
    const ClaimInfo* saved = t_claim;
    explicit Scope(const ClaimInfo& c) { t_claim = &c; }
    ~Scope() { t_claim = saved; }
  } scope(info);
  const Graph& g = info.graph;
  const Node& n = info.node;
  if (!quantized) {
    // 8-bit nodes (QuantizeLinear among them), and the float ops reading a DequantizeLinear (a QDQ
    // group's), go to the next EP together, so that it fuses the QDQ groups for itself.
    const char* const off = " (the EP option quantized=false leaves 8-bit nodes and QDQ groups to the next EP)";
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (is_q8(elem_of(g, n, i))) return decline(why, DeclineCode::kUnsupportedType, str("an 8-bit input", off));
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (is_q8(out_elem(g, n, o))) return decline(why, DeclineCode::kUnsupportedType, str("an 8-bit output", off));
    for (int v : n.inputs)
      if (v >= 0 && g.values[v].producer >= 0 && g.nodes[g.values[v].producer].op_type == "DequantizeLinear")
        return decline(why, DeclineCode::kUnsupportedType, str("an input from a DequantizeLinear", off));
  }
  const bool quantize = n.domain.empty() && n.op_type == "QuantizeLinear";
  const bool dequantize = n.domain.empty() && n.op_type == "DequantizeLinear";
  if (!is_reshape_like(n) && !quantize && !dequantize) return claim_core(g, n, why);
  if (quantize || dequantize) {
    if (!opset_in(n, 10, kMaxOpset, why)) return false;
    if (!(quantize ? claim_quantize(g, n, why) : claim_dequantize(g, n, why))) return false;
  } else if (is_q8(elem_of(g, n, 0))) {
    if (out_elem(g, n) != elem_of(g, n, 0)) return decline(why, DeclineCode::kUnsupportedType, "an output type other than the input's");
  } else if (!float_only(g, n, 1, why)) {
    return false;
  }
  // A reshape is free inside a region (a view of the same buffer) but only a copy on its own,
  // and a QuantizeLinear / DequantizeLinear one conversion: take them when a neighbour runs on
  // XNNPACK. (In a QDQ model this makes the QuantizeLinear after a float op XNNPACK takes
  // XNNPACK's too, so that the QDQ fusion, which asks the EP that runs both, can fuse them.)
  Decline ignored;
  const int x = n.inputs.empty() ? -1 : n.inputs[0];
  if (x >= 0 && g.values[x].producer >= 0 && claim_core(g, g.nodes[g.values[x].producer], &ignored)) return true;
  for (int y : n.outputs) {
    if (y < 0) continue;
    for (const Node& c : g.nodes)
      for (int v : c.inputs)
        if (v == y && claim_core(g, c, &ignored)) return true;
  }
  return decline(why, DeclineCode::kNotWorthOffloading,
                 str(n.op_type, " on its own is ", quantize || dequantize ? "one conversion" : "a copy",
                     "; XNNPACK takes it only next to an XNNPACK operator"));
}

}  // namespace onyx::xnnpack
