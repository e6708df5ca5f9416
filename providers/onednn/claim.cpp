// Which nodes the oneDNN EP takes, with a precise reason for every refusal.
#include <algorithm>
#include <cstdlib>
#include <set>

#include "onednn_ep.hpp"
#include "ops/nn.hpp"
#include "ops/quant.hpp"
#include "ops/reduce.hpp"

namespace onyx::onednn {
namespace {

const std::set<std::string>& eltwise_ops() {
  static const std::set<std::string> s = {"Relu", "LeakyRelu", "Elu",      "Tanh",      "Sigmoid",  "Abs",  "Sqrt",
                                          "Exp",  "Log",       "Neg",      "Reciprocal", "Round",   "Mish", "HardSwish",
                                          "Softplus", "Selu",  "Celu",     "HardSigmoid", "Gelu",   "Clip", "Pow",
                                          "Softsign"};
  return s;
}

const std::set<std::string>& reduce_ops() {
  static const std::set<std::string> s = {"ReduceSum", "ReduceMean", "ReduceMax",       "ReduceMin",    "ReduceProd",
                                          "ReduceL1",  "ReduceL2",   "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"};
  return s;
}

const std::set<std::string>& layout_ops() {
  static const std::set<std::string> s = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity", "Dropout"};
  return s;
}

std::string isa_name(unsigned isa) {
  switch (isa) {
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_all: return "none of oneDNN's x86-64 ISAs";
    default: return str("0x", std::hex, isa);
  }
}

bool is_q8(DType t) { return t == DType::kUInt8 || t == DType::kInt8; }

/// 8-bit integer element range.
int32_t q_lo(DType t) { return t == DType::kInt8 ? -128 : 0; }
int32_t q_hi(DType t) { return t == DType::kInt8 ? 127 : 255; }

/// Range of w - w_zero_point over a constant w (w_zero_point per tensor, or per output channel:
/// axis 0 of w; per column of a 2-D w with `columns`). False when either is not known.
bool weight_range(const Tensor* w, const Tensor* zp, bool zp_absent, bool columns, int64_t* lo, int64_t* hi) {
  if (!w || (!zp && !zp_absent)) return false;
  const int64_t n = w->numel();
  const int64_t groups = w->rank() == 0 ? 1 : columns ? w->dim(w->rank() - 1) : w->dim(0);
  const int64_t per = groups > 0 ? n / groups : 1;
  *lo = 0;
  *hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t g = columns ? i % groups : i / std::max<int64_t>(per, 1);
    const int64_t z = zp ? static_cast<int64_t>(zp->element_as_double(zp->numel() == 1 ? 0 : g)) : 0;
    const int64_t d = static_cast<int64_t>(w->element_as_double(i)) - z;
    *lo = std::min(*lo, d);
    *hi = std::max(*hi, d);
  }
  return true;
}

class Claim {
 public:
  Claim(const ClaimInfo& info, Decline* why) : info_(info), n_(info.node), g_(info.graph), why_(why) {}

  bool decline(DeclineCode c, std::string m) {
    *why_ = {c, std::move(m)};
    return false;
  }

  const TypeInfo* in(size_t i) const { return i < info_.input_types.size() ? info_.input_types[i] : nullptr; }
  const TypeInfo* out(size_t i) const { return i < info_.output_types.size() ? info_.output_types[i] : nullptr; }
  std::string in_name(size_t i) const { return g_.values[n_.inputs[i]].name; }
  /// Rank of input i, or -1 when unknown.
  int rank(size_t i) const {
    const TypeInfo* t = in(i);
    return t && t->is_tensor() && t->has_shape ? static_cast<int>(t->shape.size()) : -1;
  }

  /// Why oneDNN does not compute float type `t` here ("" when it does: float32 always, bfloat16
  /// where the CPU has AVX512_BF16).
  static std::string float_type_refusal(DType t) {
    if (t == DType::kFloat) return "";
    if (t == DType::kBFloat16) {
      if (cpu_support().bf16) return "";
      return str("this CPU has no AVX512_BF16 (oneDNN's ISA here is ", cpu_support().isa,
                 "): oneDNN would emulate bfloat16, slower than float32");
    }
    if (t == DType::kFloat16) return "oneDNN 2.6 has no float16 primitives on CPUs (only on GPUs)";
    return "";
  }

  /// Inputs in `data` (all given inputs when empty) and output 0 must be tensors of one float
  /// type oneDNN computes here: float32, or bfloat16 on a CPU with AVX512_BF16. With `int8`,
  /// 8-bit integer tensors (uint8 or int8) too, for ops that only move or compare elements.
  bool float_io(std::initializer_list<size_t> data = {}, bool int8 = false) {
    std::vector<size_t> idx(data);
    if (data.size() == 0)
      for (size_t i = 0; i < n_.inputs.size(); ++i) idx.push_back(i);
    data_ = idx;
    DType first = DType::kUndefined;
    std::string first_what;
    auto check = [&](DType t, const std::string& what) {
      if (first == DType::kUndefined) {
        first = t;
        first_what = what;
      }
      if (t == DType::kFloat16 || t == DType::kBFloat16) {
        const std::string r = float_type_refusal(t);
        if (!r.empty()) return decline(DeclineCode::kUnsupportedType, str(dtype_name(t), " ", what, ": ", r));
      } else if (t != DType::kFloat && !(int8 && is_q8(t))) {
        return decline(DeclineCode::kUnsupportedType,
                       str(int8 ? "float32, bfloat16 or 8-bit integers only; " : "float32 or bfloat16 only; ", what,
                           " is ", dtype_name(t)));
      }
      if (t != first)
        return decline(DeclineCode::kUnsupportedType,
                       str(what, " is ", dtype_name(t), ", not ", dtype_name(first), " as ", first_what));
      return true;
    };
    for (size_t i : idx) {
      if (!n_.has_input(i)) continue;
      const TypeInfo* t = in(i);
      if (!t || !t->is_tensor())
        return decline(DeclineCode::kUnsupportedType,
                       str("tensors only; input ", i, " ('", in_name(i), "') is not a tensor"));
      if (!check(t->dtype, str("input ", i, " ('", in_name(i), "')"))) return false;
    }
    // Output 0 (LayerNormalization's statistics are float32 whatever X is; other extra outputs
    // are declined by their op's claim).
    if (n_.has_output(0)) {
      const TypeInfo* t = out(0);
      if (t && t->is_tensor() && t->dtype != DType::kUndefined && !check(t->dtype, "output 0")) return false;
    }
    return true;
  }

  /// Parameter inputs (BatchNormalization's statistics) of float32, or bfloat16 where the CPU
  /// computes it; oneDNN reads them as float32.
  bool float_params(std::initializer_list<size_t> params) {
    for (size_t i : params) {
      if (!n_.has_input(i)) continue;
      const TypeInfo* t = in(i);
      if (!t || !t->is_tensor() || (t->dtype != DType::kFloat && t->dtype != DType::kBFloat16))
        return decline(DeclineCode::kUnsupportedType,
                       str("float32 or bfloat16 only; input ", i, " ('", in_name(i), "') is ",
                           t && t->is_tensor() ? dtype_name(t->dtype) : "not a tensor"));
      const std::string r = float_type_refusal(t->dtype);
      if (!r.empty()) return decline(DeclineCode::kUnsupportedType, str(dtype_name(t->dtype), " input ", i, ": ", r));
    }
    return true;
  }

  /// No tensor with a known zero dim (oneDNN does not run empty tensors).
  bool not_empty() {
    auto empty = [](const TypeInfo* t) {
      if (!t || !t->is_tensor() || !t->has_shape) return false;
      for (int64_t d : t->shape)
        if (d == 0) return true;
      return false;
    };
    for (size_t i : data_)
      if (n_.has_input(i) && empty(in(i)))
        return decline(DeclineCode::kDynamicShape, str("input ", i, " ('", in_name(i), "') is an empty tensor"));
    for (size_t o = 0; o < n_.outputs.size(); ++o)
      if (n_.has_output(o) && empty(out(o))) return decline(DeclineCode::kDynamicShape, str("output ", o, " is an empty tensor"));
    return true;
  }

  bool max_rank(int limit) {
    for (size_t i = 0; i < n_.inputs.size(); ++i)
      if (n_.has_input(i) && rank(i) > limit)
        return decline(DeclineCode::kUnsupportedAttribute, str("rank ", rank(i), " (oneDNN takes at most ", limit, " dims)"));
    return true;
  }

  /// Input 0 has 1 to 3 spatial dims (rank 3 to 5).
  bool spatial_rank(const char* what) {
    const int r = rank(0);
    if (r < 0) return decline(DeclineCode::kDynamicShape, str("the rank of ", what, " is unknown"));
    if (r < 3 || r > 5) return decline(DeclineCode::kUnsupportedAttribute, str("input rank ", r, " (oneDNN takes 1 to 3 spatial dims)"));
    return true;
  }

  bool only_output0(const char* what) {
    for (size_t o = 1; o < n_.outputs.size(); ++o)
      if (n_.has_output(o)) return decline(DeclineCode::kUnsupportedAttribute, str("output ", o, " (", what, ") is not produced"));
    return true;
  }

  bool run() {
    const std::string& op = n_.op_type;
    if (n_.domain == "onyx") {
      if (op != "FusedConv") return decline(DeclineCode::kUnsupportedOp, str("no oneDNN kernel for onyx::", op));
      std::vector<Elt> e;
      std::string why;
      if (!fused_conv_activation(n_, &e, &why)) return decline(DeclineCode::kUnsupportedAttribute, why);
      return conv();
    }
    if (n_.domain == "com.microsoft" && op == "QGemm") return qgemm();
    if (!n_.domain.empty()) return decline(DeclineCode::kUnsupportedOp, str("no oneDNN kernel for ", n_.domain, "::", op));
    if (op == "Conv") return conv();
    if (op == "ConvTranspose") return conv_transpose();
    if (op == "QLinearConv") return qlinear_conv();
    if (op == "QLinearMatMul") return int8_matmul(true);
    if (op == "MatMulInteger") return int8_matmul(false);
    if (op == "QuantizeLinear") return quantize();
    if (op == "DequantizeLinear") return dequantize();
    if (op == "Cast") return cast();
    if (op == "MatMul") return float_io() && not_empty() && max_rank(12);
    if (op == "Gemm") return float_io() && not_empty();
    if (op == "MaxPool") {
      if (n_.has_output(1)) return decline(DeclineCode::kUnsupportedAttribute, "the Indices output is not produced");
      return float_io({0}, true) && not_empty() && spatial_rank("X");
    }
    if (op == "AveragePool") return float_io({0}) && not_empty() && spatial_rank("X");
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return float_io({0}) && not_empty() && spatial_rank("X");
    if (op == "BatchNormalization") return batch_norm();
    if (op == "LRN") {
      if (n_.attr_int("size", 1) % 2 == 0)
        return decline(DeclineCode::kUnsupportedAttribute, "even size (oneDNN's window is centred one channel lower than ONNX's)");
      return float_io({0}) && not_empty() && spatial_rank("X");
    }
    if (op == "Softmax" || op == "LogSoftmax") return float_io({0}) && not_empty() && max_rank(12);
    if (op == "LayerNormalization") return float_io({0, 1, 2}) && not_empty() && max_rank(12);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min" || op == "Sum" || op == "Mean")
      return float_io() && not_empty() && max_rank(12);
    if (op == "PRelu") return float_io() && not_empty() && max_rank(12);
    if (reduce_ops().count(op)) return reduce();
    if (op == "Concat") return float_io({}, true) && not_empty() && max_rank(12);
    if (layout_ops().count(op)) return layout();
    if (eltwise_ops().count(op)) return eltwise();
    return decline(DeclineCode::kUnsupportedOp, str("no oneDNN kernel for ", op));
  }

 private:
  bool weights_known() {
    const TypeInfo* w = in(1);
    if (!w || !w->has_shape) return decline(DeclineCode::kDynamicShape, "the weight's rank is unknown");
    return true;
  }

  bool conv() {
    if (!float_io({0, 1, 2}) || !not_empty() || !spatial_rank("X") || !weights_known()) return false;
    return true;
  }

  bool conv_transpose() {
    if (!float_io({0, 1, 2}) || !not_empty() || !spatial_rank("X") || !weights_known()) return false;
    // output_shape smaller than the full result is padding; larger would be negative padding.
    const TypeInfo* x = in(0);
    const TypeInfo* w = in(1);
    if (x->shape.is_concrete() && w->shape.is_concrete() && w->shape.size() == x->shape.size()) {
      const Shape sx(std::span<const int64_t>(x->shape.data() + 2, x->shape.size() - 2));
      const Shape sw(std::span<const int64_t>(w->shape.data() + 2, w->shape.size() - 2));
      try {
        const WindowGeometry geo = conv_transpose_geometry(n_, sx, sw);
        for (size_t k = 0; k < sx.size(); ++k)
          if (geo.pad_begin[k] < 0 || geo.pad_end[k] <= -geo.stride[k])
            return decline(DeclineCode::kUnsupportedAttribute, "output_shape needs negative leading padding");
      } catch (const Error& e) {
        return decline(DeclineCode::kOther, e.what());
      }
    }
    return true;
  }

  bool batch_norm() {
    if (!float_io({0}) || !float_params({1, 2, 3, 4}) || !not_empty()) return false;
    if (n_.attr_int("training_mode", 0) != 0) return decline(DeclineCode::kUnsupportedAttribute, "training_mode=1 (inference only)");
    if (n_.opset < 9 && n_.attr_int("spatial", 1) == 0) return decline(DeclineCode::kUnsupportedAttribute, "spatial=0");
    if (!only_output0("training statistics")) return false;
    const int r = rank(0);
    if (r >= 0 && (r < 2 || r > 5)) return decline(DeclineCode::kUnsupportedAttribute, str("input rank ", r, " (oneDNN takes 2 to 5)"));
    return true;
  }

  bool reduce() {
    if (!float_io({0}) || !not_empty() || !max_rank(12)) return false;
    if (reduce_axes_from_input(n_) && n_.has_input(1) && !graph_constant(g_, n_, 1)) {
      // Run-time axes: their values become part of the compiled signature.
      const TypeInfo* t = in(1);
      if (!t || !t->is_tensor() || (t->dtype != DType::kInt64 && t->dtype != DType::kInt32))
        return decline(DeclineCode::kUnsupportedType, "axes must be an int64 tensor");
    }
    return true;
  }

  bool layout() {
    const std::string& op = n_.op_type;
    if (op == "Dropout" && n_.has_output(1)) return decline(DeclineCode::kUnsupportedAttribute, "the mask output is not produced");
    if (!float_io({0}, true) || !not_empty() || !max_rank(12)) return false;
    if (op == "Dropout") {
      if (n_.opset < 7 && n_.attr_int("is_test", 0) == 0) return decline(DeclineCode::kUnsupportedAttribute, "is_test=0 (training)");
      if (n_.has_input(2)) {
        const Tensor* t = graph_constant(g_, n_, 2);
        if (!t || t->numel() != 1 || t->element_as_double(0) != 0)
          return decline(DeclineCode::kUnsupportedAttribute, "training_mode is not a constant false");
      }
    }
    return true;
  }

  bool eltwise() {
    const std::string& op = n_.op_type;
    const bool types_ok = op == "Pow" ? float_io({0}) : float_io();
    if (!types_ok || !not_empty()) return false;
    std::vector<Elt> chain;
    std::string why;
    if (op == "Log")
      return decline(DeclineCode::kUnsupportedAttribute, "oneDNN's log is approximate (absolute error ~1.4e-6: log(1) != 0)");
    if (eltwise_chain(g_, n_, &chain, &why)) return true;
    if (op == "Clip") return true;      // bounds known at run time: binary max / min
    if (op == "Softsign") return true;  // x / (1 + |x|): eltwise and binary
    return decline(DeclineCode::kUnsupportedAttribute, why);
  }

  // ---- 8-bit ops ----

  DType type_of(size_t i) const {
    const TypeInfo* t = in(i);
    return t && t->is_tensor() ? t->dtype : DType::kUndefined;
  }
  DType out_type() const {
    const TypeInfo* t = out(0);
    return t && t->is_tensor() ? t->dtype : DType::kUndefined;
  }

  /// The CPU sums u8 x s8 products exactly (VNNI).
  bool int8_products() {
    if (cpu_support().int8) return true;
    return decline(DeclineCode::kUnsupportedType,
                   str("8-bit products: this CPU has no VNNI (oneDNN's ISA here is ", cpu_support().isa,
                       "): oneDNN would sum u8 x s8 products in 16-bit pairs, which saturate"));
  }

  /// Input i (named `what`) is a tensor of type `t`.
  bool typed(size_t i, const char* what, std::initializer_list<DType> ok, const char* allowed) {
    const DType t = type_of(i);
    for (DType o : ok)
      if (t == o) return true;
    return decline(DeclineCode::kUnsupportedType,
                   str(what, " ('", in_name(i), "') is ", t == DType::kUndefined ? "not a typed tensor" : dtype_name(t),
                       " (", allowed, ")"));
  }

  /// Input i (named `what`) is known when the region is compiled: a constant, or a graph input
  /// whose value keys the compiled entry. A value the graph computes may be computed inside the
  /// region, after it is compiled.
  bool compile_time(size_t i, const char* what) {
    if (!n_.has_input(i)) return true;
    if (graph_constant(g_, n_, i) || g_.values[n_.inputs[i]].is_graph_input) return true;
    return decline(DeclineCode::kUnsupportedAttribute,
                   str(what, " ('", in_name(i), "') is computed by the graph: oneDNN compiles the ", n_.op_type,
                       " with its value (a constant or a graph input)"));
  }

  /// Element count of input i, or -1 when its shape is not known.
  int64_t count(size_t i) const {
    if (const Tensor* c = graph_constant(g_, n_, i)) return c->numel();
    const TypeInfo* t = in(i);
    if (!t || !t->is_tensor() || !t->has_shape || !t->shape.is_concrete()) return -1;
    return t->shape.numel();
  }

  /// Input i (named `what`) holds one value, or (with `per` > 0) one or `per` values.
  bool values(size_t i, const char* what, int64_t per = 0, const char* per_what = "") {
    if (!n_.has_input(i)) return true;
    const int64_t c = count(i);
    if (c < 0) return decline(DeclineCode::kDynamicShape, str(what, "'s shape is unknown"));
    if (c == 1 || (per > 0 && c == per)) return true;
    if (per > 0)
      return decline(DeclineCode::kUnsupportedAttribute,
                     str(what, " has ", c, " values (1 or one per ", per_what, ", ", per, ")"));
    return decline(DeclineCode::kUnsupportedAttribute,
                   str(what, " has ", c, " values (oneDNN takes one per tensor here)"));
  }

  /// A zero point (input i) of the type of the tensor it belongs to.
  bool zero_point(size_t i, const char* what, DType t) {
    if (!n_.has_input(i)) return true;
    if (type_of(i) != t)
      return decline(DeclineCode::kUnsupportedType, str(what, " is ", dtype_name(type_of(i)), ", not ", dtype_name(t)));
    return true;
  }

  /// The value of a one-element constant input, or `dflt` when absent; false when not constant.
  bool scalar_value(size_t i, double dflt, double* v) const {
    if (!n_.has_input(i)) {
      *v = dflt;
      return true;
    }
    const Tensor* t = graph_constant(g_, n_, i);
    if (!t || t->numel() != 1) return false;
    *v = t->element_as_double(0);
    return true;
  }

  bool q_attrs() {
    if (n_.attr_int("block_size", 0) != 0)
      return decline(DeclineCode::kUnsupportedAttribute,
                     "blocked quantization (block_size): oneDNN scales per tensor or per axis");
    return true;
  }

  /// Scale and zero point (inputs 1, 2) per tensor or along the axis, against x's shape.
  bool q_params() {
    const TypeInfo* x = in(0);
    if (!x || !x->has_shape) return decline(DeclineCode::kDynamicShape, "the rank of x is unknown");
    const int64_t ns = count(1);
    if (ns < 0) return decline(DeclineCode::kDynamicShape, "the scale's shape is unknown");
    const TypeInfo* st = in(1);
    const TypeInfo* zt = n_.has_input(2) ? in(2) : nullptr;
    try {
      const QuantSplit q = quant_split(n_, x->shape, st->shape, zt && zt->has_shape ? &zt->shape : nullptr);
      if (q.kind == QuantKind::kBlocked)
        return decline(DeclineCode::kUnsupportedAttribute,
                       "blocked quantization: oneDNN scales per tensor or per axis");
    } catch (const Error& e) {
      return decline(DeclineCode::kOther, e.what());
    }
    return compile_time(1, "the scale") && compile_time(2, "the zero point");
  }

  bool quantize() {
    if (!q_attrs()) return false;
    if (n_.opset >= 23) {
      const int64_t p = n_.attr_int("precision", 0);
      if (p != 0 && p != static_cast<int64_t>(DType::kFloat))
        return decline(DeclineCode::kUnsupportedAttribute, str("precision ", dtype_name(static_cast<DType>(p)),
                                                               ": oneDNN divides by the scale in float32"));
    }
    if (!typed(0, "x", {DType::kFloat}, "the EP quantizes float32") ||
        !typed(1, "y_scale", {DType::kFloat}, "float32 scales only"))
      return false;
    const DType y = out_type();
    if (!is_q8(y))
      return decline(DeclineCode::kUnsupportedType,
                     str("y is ", dtype_name(y), ": oneDNN stores 8-bit integers (uint8, int8) only"));
    if (!zero_point(2, "y_zero_point", y)) return false;
    data_ = {0};
    return q_params() && not_empty() && max_rank(12);
  }

  bool dequantize() {
    if (!q_attrs()) return false;
    if (!typed(0, "x", {DType::kUInt8, DType::kInt8, DType::kInt32}, "uint8, int8 or int32") ||
        !typed(1, "x_scale", {DType::kFloat}, "float32 scales only"))
      return false;
    if (out_type() != DType::kFloat)
      return decline(DeclineCode::kUnsupportedType,
                     str("y is ", dtype_name(out_type()), ": the EP dequantizes to float32"));
    const DType x = type_of(0);
    if (!zero_point(2, "x_zero_point", x)) return false;
    if (x == DType::kInt32 && n_.has_input(2)) {
      // oneDNN subtracts the zero point in float32, exact for 8-bit values only.
      double z = 0;
      if (!scalar_value(2, 0, &z) || z != 0)
        return decline(
            DeclineCode::kUnsupportedAttribute,
            "int32 x with a zero point other than a constant 0: oneDNN would subtract it in float32, not exactly");
    }
    data_ = {0};
    return q_params() && not_empty() && max_rank(12);
  }

  bool qlinear_conv() {
    if (!int8_products()) return false;
    const auto q8 = {DType::kUInt8, DType::kInt8};
    if (!typed(0, "x", q8, "uint8 or int8") || !typed(3, "w", q8, "uint8 or int8") ||
        !typed(1, "x_scale", {DType::kFloat}, "float32 scales only") ||
        !typed(4, "w_scale", {DType::kFloat}, "float32 scales only") ||
        !typed(6, "y_scale", {DType::kFloat}, "float32 scales only"))
      return false;
    const DType y = out_type();
    if (!is_q8(y)) return decline(DeclineCode::kUnsupportedType, str("y is ", dtype_name(y), " (uint8 or int8)"));
    if (!zero_point(2, "x_zero_point", type_of(0)) || !zero_point(5, "w_zero_point", type_of(3)) ||
        !zero_point(7, "y_zero_point", y))
      return false;
    if (n_.has_input(8)) {
      if (!typed(8, "B", {DType::kInt32}, "int32")) return false;
      if (!graph_constant(g_, n_, 8)) return decline(DeclineCode::kUnsupportedAttribute, "B is not a constant");
    }
    data_ = {0};
    if (!not_empty() || !spatial_rank("x")) return false;
    const TypeInfo* w = in(3);
    if (!w->has_shape || !w->shape.is_concrete() || w->shape.size() != static_cast<size_t>(rank(0)))
      return decline(DeclineCode::kDynamicShape, "w's shape is unknown or of another rank than x's");
    const int64_t M = w->shape[0];
    if (!values(1, "x_scale") || !values(2, "x_zero_point") || !values(4, "w_scale", M, "output channel") ||
        !values(5, "w_zero_point", M, "output channel") || !values(6, "y_scale") || !values(7, "y_zero_point"))
      return false;
    for (size_t i = 1; i <= 7; ++i)
      if (!compile_time(i, i == 3 ? "w" : "a scale or zero point")) return false;
    // Exactness: the int8 convolution, or float32 sums of the integer products.
    QConvFacts f;
    f.kg = 1;
    for (size_t k = 1; k < w->shape.size(); ++k) f.kg *= w->shape[k];
    double xz = 0;
    const DType xt = type_of(0);
    if (scalar_value(2, 0, &xz)) {
      f.x_lo = q_lo(xt) - static_cast<int64_t>(xz);
      f.x_hi = q_hi(xt) - static_cast<int64_t>(xz);
    } else {
      f.x_lo = -255;
      f.x_hi = 255;
    }
    f.w_known =
        weight_range(graph_constant(g_, n_, 3), graph_constant(g_, n_, 5), !n_.has_input(5), false, &f.w_lo, &f.w_hi);
    if (const Tensor* b = graph_constant(g_, n_, 8))
      for (int64_t j = 0; j < b->numel(); ++j)
        f.bias_max = std::max<int64_t>(f.bias_max, std::llabs(b->data<int32_t>()[j]));
    std::string why;
    if (qconv_path(f, &why) == QConvPath::kNone) return decline(DeclineCode::kUnsupportedAttribute, why);
    return true;
  }

  /// QLinearMatMul (`requantise`) or MatMulInteger.
  bool int8_matmul(bool requantise) {
    if (!int8_products()) return false;
    const auto q8 = {DType::kUInt8, DType::kInt8};
    const size_t ib = requantise ? 3 : 1, iaz = 2, ibz = requantise ? 5 : 3;  // (a is input 0)
    if (!typed(0, "a", q8, "uint8 or int8") || !typed(ib, "b", q8, "uint8 or int8")) return false;
    if (requantise && (!typed(1, "a_scale", {DType::kFloat}, "float32 scales only") ||
                       !typed(4, "b_scale", {DType::kFloat}, "float32 scales only") ||
                       !typed(6, "y_scale", {DType::kFloat}, "float32 scales only")))
      return false;
    const DType y = out_type();
    if (requantise ? !is_q8(y) : y != DType::kInt32)
      return decline(DeclineCode::kUnsupportedType,
                     str("y is ", dtype_name(y), requantise ? " (uint8 or int8)" : " (int32)"));
    if (!zero_point(iaz, "a_zero_point", type_of(0)) || !zero_point(ibz, "b_zero_point", type_of(ib)) ||
        (requantise && !zero_point(7, "y_zero_point", y)))
      return false;
    data_ = {0, ib};
    if (!not_empty() || !max_rank(12)) return false;
    const int rb = rank(ib);
    if (rank(0) < 1 || rb < 1)
      return decline(DeclineCode::kDynamicShape, "the ranks of a and b must be known and at least 1");
    const TypeInfo* b = in(ib);
    const int64_t N = b->shape.back();
    const bool columns_ok = rb == 2 && N > 0;
    if (!values(iaz, "a_zero_point") || !values(ibz, "b_zero_point", columns_ok ? N : 0, "column of b")) return false;
    if (requantise && (!values(1, "a_scale") || !values(6, "y_scale") || !values(7, "y_zero_point") ||
                       !values(4, "b_scale", columns_ok ? N : 0, "column of b")))
      return false;
    for (size_t i : compile_time_inputs(n_))
      if (!compile_time(i, "a scale or zero point")) return false;
    if (n_.has_input(ibz) && count(ibz) > 1) {
      // One weight zero point in oneDNN's matmul: per-column zero points must fold into b.
      const Tensor* bz = graph_constant(g_, n_, ibz);
      bool same = bz != nullptr;
      for (int64_t j = 1; bz && j < bz->numel(); ++j) same &= bz->element_as_double(j) == bz->element_as_double(0);
      int64_t lo = 0, hi = 0;
      if (!same && !(weight_range(graph_constant(g_, n_, ib), bz, false, true, &lo, &hi) && lo >= -128 && hi <= 127))
        return decline(
            DeclineCode::kUnsupportedAttribute,
            "b_zero_point per column, and b - b_zero_point is not a constant that fits int8: oneDNN's matmul takes one "
            "weight zero point");
    }
    return true;
  }

  /// com.microsoft::QGemm with a constant B, A not transposed, C absent or an int32 scalar or row.
  bool qgemm() {
    if (!int8_products()) return false;
    const auto q8 = {DType::kUInt8, DType::kInt8};
    if (!typed(0, "A", q8, "uint8 or int8") || !typed(3, "B", q8, "uint8 or int8") ||
        !typed(1, "a_scale", {DType::kFloat}, "float32 scales only") ||
        !typed(4, "b_scale", {DType::kFloat}, "float32 scales only"))
      return false;
    if (n_.has_input(7) && !typed(7, "y_scale", {DType::kFloat}, "float32 scales only")) return false;
    const DType y = out_type();
    const bool quantized = n_.has_input(8);
    if (quantized && !n_.has_input(7))
      return decline(DeclineCode::kOther, "y_zero_point (input 8) is given without y_scale (input 7)");
    if (quantized ? !is_q8(y) : y != DType::kFloat)
      return decline(DeclineCode::kUnsupportedType,
                     str("Y is ", dtype_name(y), quantized ? " (uint8 or int8)" : " (float)"));
    if (!zero_point(2, "a_zero_point", type_of(0)) || !zero_point(5, "b_zero_point", type_of(3)) ||
        (quantized && !zero_point(8, "y_zero_point", y)))
      return false;
    if (n_.has_input(6) && !typed(6, "C", {DType::kInt32}, "int32")) return false;
    if (n_.attr_int("transA", 0) != 0)
      return decline(DeclineCode::kUnsupportedAttribute, "transA=1 (the EP's int8 matmul reads A untransposed)");
    if (rank(0) != 2 || rank(3) != 2) return decline(DeclineCode::kDynamicShape, "A and B must be known 2-D tensors");
    data_ = {0};
    if (!not_empty()) return false;
    const Tensor* bt = graph_constant(g_, n_, 3);
    if (!bt) return decline(DeclineCode::kUnsupportedAttribute, "B is not a constant (the EP packs it once)");
    const bool tb = n_.attr_int("transB", 0) != 0;
    const int64_t N = bt->dim(tb ? 0 : 1);
    if (!values(1, "a_scale") || !values(2, "a_zero_point") || !values(4, "b_scale", N, "column of B") ||
        !values(5, "b_zero_point", N, "column of B") || !values(7, "y_scale") || !values(8, "y_zero_point"))
      return false;
    if (n_.has_input(6)) {
      const Tensor* c = graph_constant(g_, n_, 6);
      if (!c ||
          (c->numel() != 1 && !(c->numel() == N && c->dim(c->rank() - 1) == N && (c->rank() == 1 || c->dim(0) == 1))))
        return decline(DeclineCode::kUnsupportedAttribute,
                       str("C is not a constant scalar or row of ", N, " values (oneDNN's bias)"));
    }
    for (size_t i : compile_time_inputs(n_))
      if (!compile_time(i, "a parameter")) return false;
    if (count(5) > 1) {
      const Tensor* bz = graph_constant(g_, n_, 5);
      bool same = bz != nullptr;
      for (int64_t j = 1; bz && j < bz->numel(); ++j) same &= bz->element_as_double(j) == bz->element_as_double(0);
      int64_t lo = 0, hi = 0;
      // (per column of B: axis 1, or 0 with transB)
      if (!same && !(weight_range(bt, bz, false, !tb, &lo, &hi) && lo >= -128 && hi <= 127))
        return decline(DeclineCode::kUnsupportedAttribute,
                       "b_zero_point per column, and B - b_zero_point does not fit int8: oneDNN's matmul takes one "
                       "weight zero point");
    }
    return true;
  }

  bool cast() {
    const DType from = type_of(0), to = out_type();
    auto oned = [](DType t) { return t == DType::kFloat || t == DType::kBFloat16 || is_q8(t) || t == DType::kInt32; };
    for (DType t : {from, to})
      if (t == DType::kFloat16)
        return decline(DeclineCode::kUnsupportedType,
                       str("Cast ", dtype_name(from), " to ", dtype_name(to), ": ", float_type_refusal(t)));
    if (!oned(from) || !oned(to))
      return decline(DeclineCode::kUnsupportedType,
                     str("Cast ", dtype_name(from), " to ", dtype_name(to), ": oneDNN has no ",
                         dtype_name(oned(from) ? to : from), " tensors"));
    if (to != DType::kFloat && to != DType::kBFloat16)
      return decline(DeclineCode::kUnsupportedType,
                     str("Cast ", dtype_name(from), " to ", dtype_name(to),
                         ": oneDNN's conversions to integers round to nearest and saturate, ONNX's Cast truncates"));
    if (from == DType::kInt32 && to == DType::kBFloat16)
      return decline(DeclineCode::kUnsupportedType,
                     "Cast int32 to bfloat16: oneDNN would round twice (through float32)");
    for (DType t : {from, to}) {
      const std::string r = float_type_refusal(t);
      if (!r.empty()) return decline(DeclineCode::kUnsupportedType, str(dtype_name(t), ": ", r));
    }
    data_ = {0};
    return not_empty() && max_rank(12);
  }

  std::vector<size_t> data_;  // the data inputs float_io checked
  const ClaimInfo& info_;
  const Node& n_;
  const Graph& g_;
  Decline* why_;
};

}  // namespace

const CpuSupport& cpu_support() {
  static const CpuSupport support = [] {
    CpuSupport c;
    const unsigned isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    // ISA values are bit sets: each contains the ISAs it extends.
    auto has = [&](dnnl::cpu_isa x) { return (isa & static_cast<unsigned>(x)) == static_cast<unsigned>(x); };
    c.isa = isa_name(isa);
    c.int8 = has(dnnl::cpu_isa::avx512_core_vnni) || has(dnnl::cpu_isa::avx2_vnni);
    c.bf16 = has(dnnl::cpu_isa::avx512_core_bf16);
    return c;
  }();
  return support;
}

QConvPath qconv_path(const QConvFacts& f, std::string* why) {
  if (f.w_known && f.w_lo >= -128 && f.w_hi <= 127) return QConvPath::kInt8;
  const double wmax = f.w_known ? static_cast<double>(std::max(-f.w_lo, f.w_hi)) : 255.0;
  const double xmax = static_cast<double>(std::max(std::llabs(f.x_lo), std::llabs(f.x_hi)));
  const double bound = static_cast<double>(f.kg) * xmax * wmax + static_cast<double>(f.bias_max);
  if (bound < 16777216.0) return QConvPath::kFloat32;
  if (why)
    *why = str(f.w_known ? str("w - w_zero_point spans [", f.w_lo, ", ", f.w_hi, "], beyond int8")
                         : std::string("w or w_zero_point is a graph input (w - w_zero_point may not fit int8)"),
               " and oneDNN 2.x convolutions take no weight zero point; the float32 fallback's sums (up to ", f.kg,
               " x ", xmax, " x ", wmax, " + ", f.bias_max, ") would pass 2^24 and round");
  return QConvPath::kNone;
}

std::vector<size_t> compile_time_inputs(const Node& n) {
  if (n.domain == "com.microsoft" && n.op_type == "QGemm") return {1, 2, 3, 4, 5, 6, 7, 8};
  if (!n.domain.empty()) return {};
  const std::string& op = n.op_type;
  if (op.rfind("Reduce", 0) == 0 && reduce_axes_from_input(n)) return {1};
  if (op == "QuantizeLinear" || op == "DequantizeLinear") return {1, 2};
  if (op == "QLinearConv") return {1, 2, 3, 4, 5, 6, 7, 8};
  if (op == "QLinearMatMul") return {1, 2, 4, 5, 6, 7};
  if (op == "MatMulInteger") return {3};  // (a_zero_point is read at run time)
  return {};
}

bool claim_node(const ClaimInfo& info, Decline* why) {
  try {
    return Claim(info, why).run();
  } catch (const std::exception& e) {
    *why = {DeclineCode::kOther, e.what()};
    return false;
  }
}

}  // namespace onyx::onednn
