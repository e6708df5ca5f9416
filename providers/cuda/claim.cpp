// Which nodes the CUDA EP takes, and why not. Decisions depend on the node, its inferred types
// and the graph only, so they are the same with or without a device (and are tested without).
#include <algorithm>
#include <cstring>

#include "core/common.hpp"
#include "cuda_ep.hpp"
#include "ops/image.hpp"
#include "ops/layout.hpp"
#include "views.hpp"

namespace onyx::cuda {
namespace {

// "float" below: float32, float16 or bfloat16 (16-bit storage, computed in fp32 registers or on
// tensor cores with fp32 accumulation); double is declined.
enum class Kind {
  kUnary,      // float in, float out
  kBinary,     // arithmetic: float, int32, int64 (two inputs of one type)
  kFloatBin,   // float only (Pow, PRelu)
  kCompare,    // float/int32/int64 in, bool out
  kLogic,      // bool in, bool out (And, Or, Xor, Not)
  kMove,       // data movement: any fixed-size element type
  kCast,
  kWhere,
  kFloatOp,    // float tensors (Softmax, LayerNorm, Reduce*, MatMul, Gemm, Conv, pooling, BN)
  kArg,        // ArgMax/ArgMin: float in, int64 out
  kScan,       // CumSum: float, int32 or int64 in and out (the axis read on the host)
};

struct Rule {
  const char* op;
  int since, until;
  Kind kind;
};

constexpr int kAny = 1000;
const Rule kRules[] = {
    {"Relu", 6, kAny, Kind::kUnary}, {"Sigmoid", 6, kAny, Kind::kUnary}, {"Tanh", 6, kAny, Kind::kUnary},
    {"Exp", 6, kAny, Kind::kUnary}, {"Log", 6, kAny, Kind::kUnary}, {"Sqrt", 6, kAny, Kind::kUnary},
    {"Reciprocal", 6, kAny, Kind::kUnary}, {"Abs", 6, kAny, Kind::kUnary}, {"Neg", 6, kAny, Kind::kUnary},
    {"Erf", 9, kAny, Kind::kUnary}, {"Floor", 6, kAny, Kind::kUnary}, {"Ceil", 6, kAny, Kind::kUnary},
    {"Round", 11, kAny, Kind::kUnary}, {"Softplus", 1, kAny, Kind::kUnary}, {"Softsign", 1, kAny, Kind::kUnary},
    {"LeakyRelu", 6, kAny, Kind::kUnary}, {"Elu", 6, kAny, Kind::kUnary}, {"Selu", 6, kAny, Kind::kUnary},
    {"Celu", 12, kAny, Kind::kUnary}, {"HardSigmoid", 6, kAny, Kind::kUnary}, {"HardSwish", 14, kAny, Kind::kUnary},
    {"Clip", 6, kAny, Kind::kUnary}, {"Gelu", 20, kAny, Kind::kUnary}, {"Sin", 7, kAny, Kind::kUnary},
    {"Cos", 7, kAny, Kind::kUnary}, {"Sign", 9, kAny, Kind::kUnary}, {"Mish", 18, kAny, Kind::kUnary},
    {"ThresholdedRelu", 10, kAny, Kind::kUnary},
    {"Add", 7, kAny, Kind::kBinary}, {"Sub", 7, kAny, Kind::kBinary}, {"Mul", 7, kAny, Kind::kBinary},
    {"Div", 7, kAny, Kind::kBinary}, {"Max", 8, kAny, Kind::kBinary}, {"Min", 8, kAny, Kind::kBinary},
    {"Mod", 10, kAny, Kind::kBinary}, {"Sum", 8, kAny, Kind::kBinary}, {"Mean", 8, kAny, Kind::kBinary}, {"Pow", 7, kAny, Kind::kFloatBin}, {"PRelu", 7, kAny, Kind::kFloatBin},
    {"Equal", 7, kAny, Kind::kCompare}, {"Less", 7, kAny, Kind::kCompare}, {"Greater", 7, kAny, Kind::kCompare},
    {"LessOrEqual", 12, kAny, Kind::kCompare}, {"GreaterOrEqual", 12, kAny, Kind::kCompare},
    {"And", 7, kAny, Kind::kLogic}, {"Or", 7, kAny, Kind::kLogic}, {"Xor", 7, kAny, Kind::kLogic},
    {"Not", 1, kAny, Kind::kLogic},
    {"Identity", 1, kAny, Kind::kMove}, {"Dropout", 7, kAny, Kind::kMove}, {"Reshape", 5, kAny, Kind::kMove},
    {"Flatten", 1, kAny, Kind::kMove}, {"Squeeze", 1, kAny, Kind::kMove}, {"Unsqueeze", 1, kAny, Kind::kMove},
    {"Transpose", 1, kAny, Kind::kMove}, {"Concat", 4, kAny, Kind::kMove}, {"Slice", 1, kAny, Kind::kMove},
    {"Gather", 1, kAny, Kind::kMove}, {"Expand", 8, kAny, Kind::kMove}, {"Split", 2, kAny, Kind::kMove},
    {"Pad", 2, kAny, Kind::kMove}, {"Tile", 6, kAny, Kind::kMove}, {"DepthToSpace", 1, kAny, Kind::kMove},
    {"SpaceToDepth", 1, kAny, Kind::kMove}, {"GatherElements", 11, kAny, Kind::kMove}, {"CumSum", 11, kAny, Kind::kScan},
    {"Cast", 6, kAny, Kind::kCast}, {"Where", 9, kAny, Kind::kWhere},
    {"Softmax", 1, kAny, Kind::kFloatOp}, {"LogSoftmax", 1, kAny, Kind::kFloatOp},
    {"LayerNormalization", 17, kAny, Kind::kFloatOp}, {"InstanceNormalization", 6, kAny, Kind::kFloatOp},
    {"GroupNormalization", 18, kAny, Kind::kFloatOp},
    {"ReduceSum", 1, kAny, Kind::kFloatOp}, {"ReduceMean", 1, kAny, Kind::kFloatOp}, {"ReduceMax", 1, kAny, Kind::kFloatOp},
    {"ReduceMin", 1, kAny, Kind::kFloatOp}, {"ReduceProd", 1, kAny, Kind::kFloatOp}, {"ReduceL1", 1, kAny, Kind::kFloatOp},
    {"ReduceL2", 1, kAny, Kind::kFloatOp}, {"ReduceSumSquare", 1, kAny, Kind::kFloatOp},
    {"ReduceLogSum", 1, kAny, Kind::kFloatOp}, {"ReduceLogSumExp", 1, kAny, Kind::kFloatOp},
    {"ArgMax", 1, kAny, Kind::kArg}, {"ArgMin", 1, kAny, Kind::kArg},
    {"MatMul", 1, kAny, Kind::kFloatOp}, {"Gemm", 7, kAny, Kind::kFloatOp},
    {"Conv", 1, kAny, Kind::kFloatOp}, {"ConvTranspose", 1, kAny, Kind::kFloatOp},
    {"MaxPool", 1, kAny, Kind::kFloatOp}, {"AveragePool", 1, kAny, Kind::kFloatOp},
    {"LpPool", 2, kAny, Kind::kFloatOp}, {"GlobalLpPool", 2, kAny, Kind::kFloatOp},
    {"GlobalAveragePool", 1, kAny, Kind::kFloatOp}, {"GlobalMaxPool", 1, kAny, Kind::kFloatOp},
    {"BatchNormalization", 7, kAny, Kind::kFloatOp}, {"Resize", 10, kAny, Kind::kFloatOp},
    {"Upsample", 9, 9, Kind::kFloatOp},
};

const Rule* find_rule(const std::string& op) {
  for (const Rule& r : kRules)
    if (op == r.op) return &r;
  return nullptr;
}

bool is_float(DType t) { return t == DType::kFloat || t == DType::kFloat16 || t == DType::kDouble || t == DType::kBFloat16; }
/// The element types onyx's CUDA math kernels, cuBLASLt and cuDNN paths take.
bool math_float(DType t) { return t == DType::kFloat || t == DType::kFloat16 || t == DType::kBFloat16; }
constexpr const char* kMathTypes = "float32, float16 and bfloat16";
bool fixed_size(DType t) {
  switch (t) {
    case DType::kFloat: case DType::kFloat16: case DType::kBFloat16: case DType::kDouble: case DType::kInt8:
    case DType::kUInt8: case DType::kInt16: case DType::kUInt16: case DType::kInt32: case DType::kUInt32:
    case DType::kInt64: case DType::kUInt64: case DType::kBool:
      return true;
    default: return false;
  }
}
bool cast_type(DType t) {
  switch (t) {
    case DType::kFloat: case DType::kFloat16: case DType::kBFloat16: case DType::kDouble: case DType::kInt8: case DType::kUInt8:
    case DType::kInt16: case DType::kInt32: case DType::kInt64: case DType::kBool:
      return true;
    default: return false;
  }
}

bool is_constant(const Graph& g, int v) { return v >= 0 && g.values[v].has_initializer && !g.values[v].is_graph_input; }

// in_type(), out_type(): ep/provider.hpp.

/// Spatial-op attribute checks (Conv, ConvTranspose, pooling): what cuDNN's legacy API takes.
bool check_spatial(const ClaimInfo& info, Decline* why) {
  const Node& n = info.node;
  const std::string& op = n.op_type;
  const TypeInfo* x = in_type(info, 0);
  if (!x || !x->has_shape) return decline(why, DeclineCode::kDynamicShape, op + " needs the input's rank");
  const size_t rank = x->shape.size();
  const bool global = op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "GlobalLpPool";
  if (rank < 3 || rank > 5) return decline(why, DeclineCode::kUnsupportedType, str(op, " on rank ", rank, ": cuDNN takes 1 to 3 spatial dims"));
  if (global) return true;
  // A convolution's pads that cuDNN cannot express (asymmetric, SAME_*) become a zero border
  // copied around the input, and pooling that cuDNN cannot express runs on onyx's direct kernel;
  // ConvTranspose takes symmetric explicit pads only.
  const bool conv = op == "Conv" || op == "FusedConv", pool = op == "MaxPool" || op == "AveragePool" || op == "LpPool";
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && !((conv || pool) && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")))
    return decline(why, DeclineCode::kUnsupportedAttribute, str(op, " auto_pad=", auto_pad, " (pads are given explicitly only)"));
  const std::vector<int64_t> pads = n.attr_ints("pads");
  const size_t sp = rank - 2;
  if (!pads.empty()) {
    if (pads.size() != 2 * sp) return decline(why, DeclineCode::kUnsupportedAttribute, op + ": pads has the wrong length");
    for (size_t k = 0; k < sp; ++k)
      if (pads[k] != pads[k + sp] && !conv && !pool)
        return decline(why, DeclineCode::kUnsupportedAttribute, op + " with asymmetric pads (cuDNN pads both sides equally)");
  }
  if (pool && n.has_output(1)) {
    const TypeInfo* idx = out_type(info, 1);
    if (!idx || idx->elem_dtype() != DType::kInt64) return decline(why, DeclineCode::kUnsupportedType, "MaxPool Indices must be int64");
  }
  if (op == "ConvTranspose") {
    if (n.has_attr("output_shape")) return decline(why, DeclineCode::kUnsupportedAttribute, "ConvTranspose output_shape (give pads instead)");
    if (!x->shape.is_concrete()) return decline(why, DeclineCode::kDynamicShape, "ConvTranspose needs concrete input shapes");
    const TypeInfo* y = out_type(info, 0);
    if (!y || !y->has_shape || !y->shape.is_concrete()) return decline(why, DeclineCode::kDynamicShape, "ConvTranspose needs a concrete output shape");
    // cuDNN computes the adjoint of a convolution: the output size must be one that convolution maps back onto the input.
    const TypeInfo* w = in_type(info, 1);
    if (!w || !w->has_shape || !w->shape.is_concrete() || w->shape.size() != rank)
      return decline(why, DeclineCode::kDynamicShape, "ConvTranspose needs the weight's shape");
    const std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(sp, 1));
    const std::vector<int64_t> dil = n.attr_ints("dilations", std::vector<int64_t>(sp, 1));
    for (size_t k = 0; k < sp; ++k) {
      const int64_t p = pads.empty() ? 0 : pads[k];
      const int64_t eff = dil[k] * (w->shape[k + 2] - 1) + 1;
      if ((y->shape[k + 2] + 2 * p - eff) / strides[k] + 1 != x->shape[k + 2])
        return decline(why, DeclineCode::kUnsupportedAttribute, "ConvTranspose output_padding/pads that cuDNN cannot express");
    }
  }
  return true;
}

bool check_float_op(const ClaimInfo& info, Decline* why) {
  const Node& n = info.node;
  const std::string& op = n.op_type;
  // The data (input 0) is float32, float16 or bfloat16, and the other tensor inputs have its
  // type; BatchNormalization's scale / bias / mean / var may also be float32 beside 16-bit data
  // (cuDNN and onyx's kernel take them as float).
  const TypeInfo* x0 = in_type(info, 0);
  const DType t0 = x0 ? x0->elem_dtype() : DType::kUndefined;
  if (!math_float(t0))
    return decline(why, DeclineCode::kUnsupportedType,
                   str(op, " input 0 is ", x0 ? dtype_name(t0) : "unknown", "; the CUDA EP runs it for ", kMathTypes, " only"));
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    if (n.inputs[i] < 0) continue;
    const TypeInfo* t = in_type(info, i);
    const bool host_param = (op.rfind("Reduce", 0) == 0 && i == 1) || ((op == "Resize" || op == "Upsample") && i >= 1);  // axes; roi, scales, sizes
    if (host_param) continue;
    const DType ti = t ? t->elem_dtype() : DType::kUndefined;
    const bool ok = ti == t0 || (op == "BatchNormalization" && t0 != DType::kFloat && math_float(ti));
    if (!ok)
      return decline(why, DeclineCode::kUnsupportedType,
                     str(op, " input ", i, " is ", t ? dtype_name(ti) : "unknown", " beside ", dtype_name(t0),
                         " data; the CUDA EP runs it with one element type"));
  }
  if (op == "Conv" || op == "ConvTranspose" || op.find("Pool") != std::string::npos) return check_spatial(info, why);
  if (op == "BatchNormalization") {
    if (n.attr_int("training_mode", 0) != 0 || n.has_output(1) || n.has_output(2))
      return decline(why, DeclineCode::kUnsupportedAttribute, "BatchNormalization in training mode");
    if (n.opset < 9 && n.attr_int("spatial", 1) != 1) return decline(why, DeclineCode::kUnsupportedAttribute, "BatchNormalization spatial=0");
    const TypeInfo* x = in_type(info, 0);
    if (!x || !x->has_shape || x->shape.size() < 2 || x->shape.size() > 5)
      return decline(why, DeclineCode::kDynamicShape, "BatchNormalization needs an input of rank 2 to 5");
  }
  if (op == "Resize" || op == "Upsample") {
    if (n.attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize")
      return decline(why, DeclineCode::kUnsupportedAttribute, "Resize tf_crop_and_resize (its roi and extrapolation run on the CPU)");
    try {
      (void)parse_resize_attrs(n);
    } catch (const Error& e) {
      return decline(why, DeclineCode::kUnsupportedAttribute, e.what());
    }
  }
  if (op == "InstanceNormalization" || op == "GroupNormalization") {
    const TypeInfo* x = in_type(info, 0);
    if (!x || !x->has_shape || x->shape.size() < 3)
      return decline(why, DeclineCode::kDynamicShape, op + " needs an input of rank 3 or more");
    if (op == "GroupNormalization" && n.attr_int("stash_type", 1) != 1)
      return decline(why, DeclineCode::kUnsupportedAttribute, "GroupNormalization stash_type other than float");
  }
  if (op == "LayerNormalization" && (n.has_output(1) || n.has_output(2)) && n.attr_int("stash_type", 1) != 1)
    return decline(why, DeclineCode::kUnsupportedAttribute, "LayerNormalization stash_type other than float");
  if (op == "MatMul") {
    const TypeInfo* a = in_type(info, 0);
    const TypeInfo* b = in_type(info, 1);
    if (!a->has_shape || !b->has_shape) return decline(why, DeclineCode::kDynamicShape, "MatMul needs the inputs' ranks");
  }
  if (op == "Gemm") {
    const TypeInfo* a = in_type(info, 0);
    const TypeInfo* b = in_type(info, 1);
    if (!a->has_shape || !b->has_shape || a->shape.size() != 2 || b->shape.size() != 2)
      return decline(why, DeclineCode::kDynamicShape, "Gemm needs rank-2 A and B");
  }
  return true;
}

/// A channels-last form (onyx.nhwc): what the channels-first op takes, on 4-d tensors, with
/// constant weights (permuted once, when the kernel is prepared) and, for windowed pooling, only
/// what cuDNN's pooling expresses (onyx's direct pooling kernel is channels-first).
bool claim_channels_last(const ClaimInfo& info, Decline* why, bool prefer_nhwc) {
  const Node& n = info.node;
  const std::string& op = n.op_type;
  if (!prefer_nhwc)
    return decline(why, DeclineCode::kUnsupportedOp, str("channels-last ", op, " runs on the CUDA EP only with prefer_nhwc=true"));
  const TypeInfo* x = in_type(info, 0);
  const TypeInfo* y = out_type(info, 0);
  if (!x || !x->has_shape || x->shape.size() != 4 || !y || !y->has_shape || y->shape.size() != 4)
    return decline(why, DeclineCode::kUnsupportedType, str("channels-last ", op, " on 4-d tensors only (2-d convolution and pooling)"));
  Node first = n;
  first.domain = std::string(channels_first_domain(op));
  const TypeInfo xf = permute_type(*x, to_channels_first_perm(4)), yf = permute_type(*y, to_channels_first_perm(4));
  ClaimInfo fi{first, info.graph, info.input_types, info.output_types};
  fi.input_types[0] = &xf;
  fi.output_types[0] = &yf;
  if (!claim_node(fi, why, false)) return false;
  if ((op == "Conv" || op == "FusedConv" || op == "ConvTranspose") && !is_constant(info.graph, n.inputs.size() > 1 ? n.inputs[1] : -1))
    return decline(why, DeclineCode::kUnsupportedAttribute, str("channels-last ", op, " needs constant weights (they are permuted once)"));
  if (op.find("Pool") != std::string::npos && x->elem_dtype() == DType::kBFloat16)
    return decline(why, DeclineCode::kUnsupportedType,
                   str("channels-last ", op, " on bfloat16 (cuDNN's legacy pooling takes float32 and float16; onyx's direct pooling "
                       "kernel, which runs bfloat16 pooling, is channels-first)"));
  if (op == "MaxPool" || op == "AveragePool") {
    bool direct = n.attr_int("ceil_mode", 0) != 0;
    const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
    direct |= auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    for (int64_t d : n.attr_ints("dilations")) direct |= d != 1;
    const std::vector<int64_t> pads = n.attr_ints("pads");
    for (size_t k = 0; k < pads.size() / 2; ++k) direct |= pads[k] != pads[k + pads.size() / 2];
    if (direct)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("channels-last ", op, " with ceil_mode, dilations or asymmetric pads (onyx's direct pooling is channels-first)"));
  }
  return true;
}

/// ONNX Runtime's transformer operators (com.microsoft, and its ai.onnx SimplifiedLayerNormalization):
/// float32 tensors (the GELUs, the layer normalisations, Attention and MultiHeadAttention also
/// float16 and bfloat16), index operands of the types ONNX Runtime gives them; what the kernels
/// (transformer_kernels.cpp) do not implement is declined with the reason.
bool claim_transformer(const ClaimInfo& info, Decline* why) {
  const Node& n = info.node;
  const std::string& op = n.op_type;
  const std::string name = n.domain == "com.microsoft" ? "com.microsoft::" + op : op;
  // Per input: the element type it must have (kUndefined: a float32 tensor; kUInt8 for
  // MatMulNBits' zero points also takes float32).
  std::vector<DType> want;
  const DType F = DType::kUndefined;
  if (op == "Gelu" || op == "BiasGelu" || op == "FastGelu" || op == "QuickGelu") {
    want = {F, F};
  } else if (op == "SkipLayerNormalization" || op == "SkipSimplifiedLayerNormalization" || op == "SimplifiedLayerNormalization") {
    want = {F, F, F, F, F};
  } else if (op == "RotaryEmbedding") {
    want = {F, DType::kInt64, F, F};
  } else if (op == "MatMulNBits") {
    if (n.attr_int("weight_prepacked", 0) != 0)
      return decline(why, DeclineCode::kUnsupportedAttribute, "MatMulNBits weight_prepacked=1 (another EP's weight layout)");
    const int64_t bits = n.attr_int("bits", 4);
    if (bits != 2 && bits != 4 && bits != 8) return decline(why, DeclineCode::kUnsupportedAttribute, str("MatMulNBits with bits=", bits));
    want = {F, DType::kUInt8, F, DType::kUInt8, DType::kInt32, F};
  } else if (op == "MultiHeadAttention") {
    if (n.has_input(8) || n.has_input(9))
      return decline(why, DeclineCode::kUnsupportedAttribute, "MultiHeadAttention's beam-search inputs (past_sequence_length, cache_indirection)");
    if (!n.has_input(1) || !n.has_input(2))
      return decline(why, DeclineCode::kUnsupportedAttribute, "MultiHeadAttention with packed QKV / KV (key and value must be given)");
    const TypeInfo* q = in_type(info, 0);
    const TypeInfo* k = in_type(info, 1);
    if (!q || !q->has_shape || q->shape.size() != 3 || !k || !k->has_shape || (k->shape.size() != 3 && k->shape.size() != 4))
      return decline(why, DeclineCode::kUnsupportedAttribute, "MultiHeadAttention needs a 3-D query and 3-D or 4-D key and value");
    want = {F, F, F, F, DType::kInt32, F, F, F};
  } else if (op == "Attention") {
    if (n.attr_int("do_rotary", 0) != 0) return decline(why, DeclineCode::kUnsupportedAttribute, "Attention do_rotary=1");
    if (n.attr_int("past_present_share_buffer", 0) != 0)
      return decline(why, DeclineCode::kUnsupportedAttribute, "Attention past_present_share_buffer=1");
    if (n.has_input(6)) return decline(why, DeclineCode::kUnsupportedAttribute, "Attention's past_sequence_length input");
    want = {F, F, F, DType::kInt32, F, F};
  } else if (op == "GroupQueryAttention") {
    if (n.has_attr("kv_cache_bit_width") || (n.has_attr("k_quant_type") && n.attr_string("k_quant_type", "NONE") != "NONE") ||
        (n.has_attr("v_quant_type") && n.attr_string("v_quant_type", "NONE") != "NONE"))
      return decline(why, DeclineCode::kUnsupportedAttribute, "GroupQueryAttention with a quantized KV cache");
    for (size_t i = 12; i < n.inputs.size(); ++i)
      if (n.has_input(i))
        return decline(why, DeclineCode::kUnsupportedAttribute,
                       str("GroupQueryAttention input ", i, " (k_scale, v_scale, q/k norm weights, query_seqlens)"));
    if (n.attr_int("causal", 1) != 1) return decline(why, DeclineCode::kUnsupportedAttribute, "GroupQueryAttention causal=0");
    if (n.attr_int("sliding_window_cache", 0) != 0)
      return decline(why, DeclineCode::kUnsupportedAttribute, "GroupQueryAttention sliding_window_cache=1");
    if (n.has_output(3)) return decline(why, DeclineCode::kUnsupportedAttribute, "GroupQueryAttention's output_qk");
    const int64_t heads = n.attr_int("num_heads", 0), kv = n.attr_int("kv_num_heads", 0);
    if (heads <= 0 || kv <= 0 || heads % kv != 0)
      return decline(why, DeclineCode::kUnsupportedAttribute, "GroupQueryAttention num_heads must be a positive multiple of kv_num_heads");
    want = {F, F, F, F, F, DType::kInt32, DType::kInt32, F, F, DType::kInt64, F, F};
  } else {
    return decline(why, DeclineCode::kUnsupportedOp, "no CUDA kernel for " + name);
  }
  // The GELUs, the layer normalisations, Attention and MultiHeadAttention have 16-bit kernels
  // (fp32 registers; Attention's projection on cuBLASLt with fp32 accumulation): their tensors are
  // all of input 0's type T (float32, float16 or bfloat16), but for the float statistics outputs
  // (mean, inv_std_var); the other operators run on float32 tensors only.
  const bool norm = op == "SkipLayerNormalization" || op == "SkipSimplifiedLayerNormalization" || op == "SimplifiedLayerNormalization";
  const bool any_float = norm || op == "Gelu" || op == "BiasGelu" || op == "FastGelu" || op == "QuickGelu" || op == "Attention" ||
                         op == "MultiHeadAttention";
  const TypeInfo* x0 = in_type(info, 0);
  const DType T = any_float && x0 && x0->is_tensor() && math_float(x0->elem_dtype()) ? x0->elem_dtype() : DType::kFloat;
  if (op == "MultiHeadAttention" && T != DType::kFloat && n.has_output(3))
    return decline(why, DeclineCode::kUnsupportedType,
                   str(name, "'s output_qk on ", dtype_name(T), " (the CUDA EP writes the raw scores in float32 runs only)"));
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!n.has_input(i)) continue;
    const TypeInfo* t = in_type(info, i);
    const DType got = t && t->is_tensor() ? t->elem_dtype() : DType::kUndefined;
    if (i >= want.size()) return decline(why, DeclineCode::kUnsupportedAttribute, str(name, " input ", i, " is not taken by the CUDA EP"));
    const DType w = want[i];
    const bool ok = w == F ? got == T : (got == w || (op == "MatMulNBits" && i == 3 && got == DType::kFloat));
    if (!ok)
      return decline(why, DeclineCode::kUnsupportedType,
                     str(name, " input ", i, " is ", t ? dtype_name(got) : "unknown",
                         any_float ? str("; the CUDA EP runs it with all tensors of one type (", kMathTypes, "), input 0 is ", dtype_name(T))
                                   : std::string("; the CUDA EP runs this operator with float32 tensors only (no float16 / bfloat16 kernel)"),
                         w == F ? "" : str(" and ", dtype_name(w), " indices")));
  }
  for (size_t i = 0; i < info.output_types.size(); ++i) {
    const TypeInfo* t = out_type(info, i);
    const bool stat = norm && (op == "SimplifiedLayerNormalization" ? i == 1 : (i == 1 || i == 2));  // mean, inv_std_var
    const DType want_out = stat ? DType::kFloat : T;
    if (n.has_output(i) && t && t->is_tensor() && t->elem_dtype() != want_out)
      return decline(why, DeclineCode::kUnsupportedType,
                     str(name, " output ", i, " is ", dtype_name(t->elem_dtype()), "; the CUDA EP makes ", dtype_name(want_out), " there"));
  }
  return true;
}

/// ONNX Runtime's quantized com.microsoft operators, which the CUDA EP declines as a family.
bool is_ms_quant_op(const std::string& op) {
  static const char* const kOps[] = {"QGemm", "QAttention", "QEmbedLayerNormalization", "DynamicQuantizeMatMul", "MatMulIntegerToFloat",
                                     "DynamicQuantizeLSTM", "QuantizeLinear", "DequantizeLinear", "QuantizeBFP", "DequantizeBFP"};
  if (op.rfind("QLinear", 0) == 0 || op.rfind("QOrdered", 0) == 0) return true;
  return std::any_of(std::begin(kOps), std::end(kOps), [&](const char* o) { return op == o; });
}

bool is_int8_op(const std::string& op) {
  return op == "QuantizeLinear" || op == "DequantizeLinear" || op == "DynamicQuantizeLinear" || op == "MatMulInteger" ||
         op == "QLinearMatMul" || op == "QLinearConv" || op == "ConvInteger";
}

bool is_q8(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

/// The int8 operators (quant_kernels.cpp): QuantizeLinear / DequantizeLinear (per-tensor and
/// per-axis, int8 / uint8 beside float32 / float16 / bfloat16), DynamicQuantizeLinear (float32
/// to uint8), MatMulInteger and QLinearMatMul
/// on cuBLASLt's int8 product (B of rank 2 or more, a scalar A zero point / scale, B's per-tensor
/// or per-column). Scales and zero points are read on the device, so they may be computed.
bool claim_int8(const ClaimInfo& info, Decline* why) {
  const Node& n = info.node;
  const std::string& op = n.op_type;
  auto type_of = [&](size_t i) {
    const TypeInfo* t = in_type(info, i);
    return t && t->is_tensor() ? t->elem_dtype() : DType::kUndefined;
  };
  auto name_of = [](DType t) { return t == DType::kUndefined ? std::string("unknown") : std::string(dtype_name(t)); };
  /// Known shape with more than one element, or an unknown shape.
  auto maybe_many = [&](size_t i) {
    const TypeInfo* t = in_type(info, i);
    return !t || !t->has_shape || !t->shape.is_concrete() || t->shape.numel() != 1;
  };
  auto known_rank = [&](size_t i) -> int64_t {
    const TypeInfo* t = in_type(info, i);
    return t && t->has_shape ? static_cast<int64_t>(t->shape.size()) : -1;
  };
  if (op == "QLinearConv" || op == "ConvInteger")
    return decline(why, DeclineCode::kUnsupportedOp,
                   op + ": no int8 convolution on the CUDA EP (cuDNN's legacy API, which the EP uses, has int8 convolution only "
                        "channels-last with channel counts a multiple of 4 and no zero points; onyx has no kernel for it); the CPU EP runs it");
  if (op == "DynamicQuantizeLinear") {
    if (n.opset < 11) return decline(why, DeclineCode::kOpsetOutOfRange, str("CUDA DynamicQuantizeLinear supports opset 11+, the model uses ", n.opset));
    if (type_of(0) != DType::kFloat)
      return decline(why, DeclineCode::kUnsupportedType, str("DynamicQuantizeLinear of ", name_of(type_of(0)), " (float32 only)"));
    return true;
  }
  if (op == "QuantizeLinear" || op == "DequantizeLinear") {
    if (n.opset < 10 || n.opset > 22)
      return decline(why, DeclineCode::kOpsetOutOfRange,
                     str("CUDA ", op, " supports opsets 10 to 22, the model uses ", n.opset, " (opset 23 adds the precision attribute)"));
    const bool q = op == "QuantizeLinear";
    const TypeInfo* yi = out_type(info, 0);
    const DType xt = type_of(0), st = type_of(1), yt = yi && yi->is_tensor() ? yi->elem_dtype() : DType::kUndefined;
    const DType qt = q ? yt : xt, ft = q ? xt : yt;
    if (!is_q8(qt))
      return decline(why, DeclineCode::kUnsupportedType,
                     str(op, q ? " to " : " from ", name_of(qt), ": the CUDA EP quantizes to int8 and uint8 only (16-bit, 4-bit and float8 "
                                                             "types run on the CPU EP)"));
    if (!math_float(ft))
      return decline(why, DeclineCode::kUnsupportedType,
                     str(op, q ? " of " : " to ", name_of(ft), ": the CUDA EP's float side is ", kMathTypes, " only"));
    if (st != ft)
      return decline(why, DeclineCode::kUnsupportedType,
                     str(op, " with a ", name_of(st), " scale beside ", name_of(ft), " data (the CUDA EP takes a scale of the float type)"));
    if (n.has_input(2) && type_of(2) != qt)
      return decline(why, DeclineCode::kUnsupportedType, str(op, "'s zero point is ", name_of(type_of(2)), ", not ", name_of(qt)));
    if (n.attr_int("block_size", 0) != 0 || known_rank(1) > 1)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str(op, " with blocked quantization (block_size / a scale of rank 2 or more): the CUDA EP takes per-tensor and "
                             "per-axis scales only; the CPU EP runs it"));
    if (maybe_many(1) && known_rank(0) < 0)
      return decline(why, DeclineCode::kDynamicShape, op + " per-axis needs the input's rank");
    return true;
  }
  // MatMulInteger (A, B, a_zero_point, b_zero_point) and QLinearMatMul (a, a_scale, a_zero_point,
  // b, b_scale, b_zero_point, y_scale, y_zero_point).
  if (n.opset < 10)
    return decline(why, DeclineCode::kOpsetOutOfRange, str("CUDA ", op, " supports opset 10+, the model uses ", n.opset));
  const bool ql = op == "QLinearMatMul";
  const size_t b_idx = ql ? 3 : 1, za_idx = 2, zb_idx = ql ? 5 : 3;
  const DType at = type_of(0), bt = type_of(b_idx);
  if (!is_q8(at) || !is_q8(bt))
    return decline(why, DeclineCode::kUnsupportedType,
                   str(op, " of ", name_of(at), " by ", name_of(bt), ": the CUDA EP's int8 product takes int8 and uint8 operands only"));
  if (n.has_input(za_idx) && type_of(za_idx) != at)
    return decline(why, DeclineCode::kUnsupportedType, str(op, "'s a_zero_point is ", name_of(type_of(za_idx)), ", A is ", name_of(at)));
  if (n.has_input(zb_idx) && type_of(zb_idx) != bt)
    return decline(why, DeclineCode::kUnsupportedType, str(op, "'s b_zero_point is ", name_of(type_of(zb_idx)), ", B is ", name_of(bt)));
  if (known_rank(b_idx) < 2)
    return decline(why, known_rank(b_idx) < 0 ? DeclineCode::kDynamicShape : DeclineCode::kUnsupportedType,
                   str(op, " with B of rank ", known_rank(b_idx) < 0 ? std::string("unknown") : std::to_string(known_rank(b_idx)),
                       ": the CUDA EP takes a B of rank 2 or more (a 1-D B runs on the CPU EP)"));
  if (known_rank(0) < 1) return decline(why, DeclineCode::kDynamicShape, op + " needs A's rank (1 or more)");
  if (n.has_input(za_idx) && maybe_many(za_idx))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str(op, " with a per-row (or unknown-size) a_zero_point: the CUDA EP corrects for one A zero point"));
  if (known_rank(zb_idx) > 1)
    return decline(why, DeclineCode::kUnsupportedAttribute, str(op, "'s b_zero_point of rank ", known_rank(zb_idx), " (scalar or per column)"));
  const TypeInfo* yi = out_type(info, 0);
  const DType yt = yi && yi->is_tensor() ? yi->elem_dtype() : DType::kUndefined;
  if (!ql) {
    if (yt != DType::kInt32) return decline(why, DeclineCode::kUnsupportedType, str("MatMulInteger output is ", name_of(yt), ", not int32"));
    return true;
  }
  if (!is_q8(yt))
    return decline(why, DeclineCode::kUnsupportedType, str("QLinearMatMul to ", name_of(yt), ": the CUDA EP requantises to int8 and uint8 only"));
  if (type_of(7) != yt)
    return decline(why, DeclineCode::kUnsupportedType, str("QLinearMatMul's y_zero_point is ", name_of(type_of(7)), ", y is ", name_of(yt)));
  const DType s0 = type_of(1);
  if (!math_float(s0) || type_of(4) != s0 || type_of(6) != s0)
    return decline(why, DeclineCode::kUnsupportedType,
                   str("QLinearMatMul scales of ", name_of(s0), ", ", name_of(type_of(4)), ", ", name_of(type_of(6)),
                       ": the CUDA EP takes three scales of one type (", kMathTypes, ")"));
  if (maybe_many(1) || maybe_many(6) || maybe_many(7))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   "QLinearMatMul with a per-row (or unknown-size) a_scale, or a non-scalar y_scale / y_zero_point: the CUDA EP takes "
                   "one A scale and one output scale and zero point");
  if (known_rank(4) > 1)
    return decline(why, DeclineCode::kUnsupportedAttribute, str("QLinearMatMul's b_scale of rank ", known_rank(4), " (scalar or per column)"));
  return true;
}

}  // namespace

bool claim_node(const ClaimInfo& info, Decline* why, bool prefer_nhwc) {
  const Node& n = info.node;
  const std::string& op = n.op_type;
  if (n.domain == kChannelsLastDomain) return claim_channels_last(info, why, prefer_nhwc);
  if (n.domain == "onyx" && op == "Attention" && n.opset == 1) {
    // The optimizer's fused attention (it asks before fusing): Q, KT, V and bias of one type,
    // float32, float16 or bfloat16 (scores and sums in fp32).
    const TypeInfo* q = in_type(info, 0);
    const DType tq = q && q->is_tensor() ? q->elem_dtype() : DType::kUndefined;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const TypeInfo* t = in_type(info, i);
      if (n.inputs[i] >= 0 && (!t || !t->is_tensor() || !math_float(t->elem_dtype()) || t->elem_dtype() != tq))
        return decline(why, DeclineCode::kUnsupportedType,
                       str("onyx::Attention runs on ", kMathTypes, " (all inputs of one type), input ", i, " is ",
                           t && t->is_tensor() ? dtype_name(t->elem_dtype()) : "unknown"));
      if (t && t->has_shape && t->shape.size() > static_cast<size_t>(8))
        return decline(why, DeclineCode::kUnsupportedType, "onyx::Attention on rank > 8");
    }
    return true;
  }
  if (n.domain == "onyx" && n.opset == 1 && (op == "FusedMatMul" || op == "FusedGemm" || op == "FusedConv")) {
    // The optimizer's product + activation: Relu in cuBLASLt's epilogue or the convolution's bias
    // pass, Clip and Gelu (FusedMatMul only) as one pass after the product.
    const std::string act = n.attr_string("activation");
    const bool ok = (act.empty() && op == "FusedMatMul") || act == "Relu" || (act == "Gelu" && op == "FusedMatMul") ||
                    (act == "Clip" && n.attr_floats("activation_params").size() == 2);
    if (!ok) return decline(why, DeclineCode::kUnsupportedAttribute, str("onyx::", op, " activation '", act, "'"));
    const TypeInfo* x = in_type(info, 0);
    const DType tx = x && x->is_tensor() ? x->elem_dtype() : DType::kUndefined;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const TypeInfo* t = in_type(info, i);
      if (n.inputs[i] >= 0 && (!t || !t->is_tensor() || !math_float(t->elem_dtype()) || t->elem_dtype() != tx))
        return decline(why, DeclineCode::kUnsupportedType,
                       str("onyx::", op, " runs on ", kMathTypes, " (all inputs of one type), input ", i, " is ",
                           t && t->is_tensor() ? dtype_name(t->elem_dtype()) : "unknown"));
    }
    if (op == "FusedConv") return check_spatial(info, why);
    const TypeInfo* a = in_type(info, 0);
    const TypeInfo* b = in_type(info, 1);
    const size_t max_a = op == "FusedMatMul" ? 8 : 2;
    if (!a || !b || !a->has_shape || !b->has_shape || a->shape.size() < 2 || a->shape.size() > max_a || b->shape.size() != 2)
      return decline(why, DeclineCode::kDynamicShape, str("onyx::", op, " needs a 2-D B and ", op == "FusedGemm" ? "a 2-D A" : "A of rank >= 2"));
    return true;
  }
  if (n.domain == "com.microsoft" && is_ms_quant_op(op))
    return decline(why, DeclineCode::kUnsupportedOp,
                   str("com.microsoft::", op, ": ONNX Runtime's quantized operators have no CUDA kernel in onyx (int8 on the CUDA EP: "
                       "QuantizeLinear, DequantizeLinear, MatMulInteger and QLinearMatMul of ai.onnx); the CPU EP runs it"));
  if (n.domain == "com.microsoft" || ((n.domain.empty() || n.domain == "ai.onnx") && op == "SimplifiedLayerNormalization"))
    return claim_transformer(info, why);
  if (!n.domain.empty() && n.domain != "ai.onnx")
    return decline(why, DeclineCode::kUnsupportedOp, str("no CUDA kernel for ", n.domain, "::", op));
  if (op == "Shape" || op == "Size")
    return decline(why, DeclineCode::kNotWorthOffloading, op + " reads only shapes: it runs on the CPU and is folded at plan time");
  if (is_int8_op(op)) return claim_int8(info, why);
  const Rule* r = find_rule(op);
  if (!r) return decline(why, DeclineCode::kUnsupportedOp, "no CUDA kernel for " + op);
  if (n.opset < r->since || n.opset > r->until)
    return decline(why, DeclineCode::kOpsetOutOfRange, str("CUDA ", op, " supports opset ", r->since, "+, the model uses ", n.opset));
  bool any_float = false;
  for (size_t i = 0; i < info.input_types.size() + info.output_types.size(); ++i) {
    const TypeInfo* t = i < info.input_types.size() ? info.input_types[i] : info.output_types[i - info.input_types.size()];
    if (!t) continue;
    if (!t->is_tensor()) return decline(why, DeclineCode::kUnsupportedType, op + " on a non-tensor value");
    if (t->has_shape && t->shape.size() > static_cast<size_t>(8))
      return decline(why, DeclineCode::kUnsupportedType, str(op, " on rank ", t->shape.size(), " (the CUDA EP handles rank <= 8)"));
    any_float |= is_float(t->dtype);
  }
  if (!any_float)
    return decline(why, DeclineCode::kNotWorthOffloading,
                   op + " computes on integers/bools only (shape or index arithmetic): it stays on the CPU, where plan-time folding evaluates it");
  const TypeInfo* x = in_type(info, 0);
  const DType t0 = x ? x->elem_dtype() : DType::kUndefined;
  switch (r->kind) {
    case Kind::kUnary:
      if (!math_float(t0))
        return decline(why, DeclineCode::kUnsupportedType, str("CUDA ", op, " runs on ", kMathTypes, " only, got ", dtype_name(t0)));
      if (op == "Clip")
        for (size_t i = 1; i < 3; ++i)
          if (n.has_input(i) && (!in_type(info, i) || in_type(info, i)->elem_dtype() != t0))
            return decline(why, DeclineCode::kUnsupportedType, str("Clip bounds must have the input's type (", dtype_name(t0), ")"));
      if (op == "Gelu" && n.attr_string("approximate", "none") != "none" && n.attr_string("approximate", "none") != "tanh")
        return decline(why, DeclineCode::kUnsupportedAttribute, "Gelu approximate=" + n.attr_string("approximate"));
      return true;
    case Kind::kBinary:
    case Kind::kFloatBin:
    case Kind::kCompare: {
      // Sum, Mean, Max and Min take any number of inputs (combined pairwise into the output).
      const bool variadic = op == "Sum" || op == "Mean" || op == "Max" || op == "Min";
      const bool all_given = std::all_of(n.inputs.begin(), n.inputs.end(), [](int v) { return v >= 0; });
      if (variadic ? n.inputs.empty() || !all_given : n.num_inputs() != 2)
        return decline(why, DeclineCode::kUnsupportedAttribute, str(op, " with ", n.num_inputs(), " inputs (the CUDA EP takes 2)"));
      for (size_t i = 1; i < n.inputs.size(); ++i) {
        const TypeInfo* b = in_type(info, i);
        if (!b || b->elem_dtype() != t0) return decline(why, DeclineCode::kUnsupportedType, op + " with inputs of different types");
      }
      const bool float_only = r->kind == Kind::kFloatBin || op == "Sum" || op == "Mean";
      const bool ok = float_only ? math_float(t0) : (math_float(t0) || t0 == DType::kInt32 || t0 == DType::kInt64);
      if (!ok)
        return decline(why, DeclineCode::kUnsupportedType,
                       str("CUDA ", op, " does not take ", dtype_name(t0), " (it takes ", kMathTypes, float_only ? "" : ", int32 and int64", ")"));
      if (op == "Mod" && math_float(t0) && n.attr_int("fmod", 0) == 0)
        return decline(why, DeclineCode::kUnsupportedAttribute, "Mod on floats needs fmod=1");
      return true;
    }
    case Kind::kLogic:
      return decline(why, DeclineCode::kNotWorthOffloading, op + " on bools stays on the CPU");
    case Kind::kMove: {
      if (!fixed_size(t0)) return decline(why, DeclineCode::kUnsupportedType, str("CUDA ", op, " does not move ", dtype_name(t0), " elements"));
      if (op == "Dropout" && n.has_output(1)) return decline(why, DeclineCode::kUnsupportedAttribute, "Dropout's mask output");
      if (op == "Dropout" && n.has_input(2)) {
        const int v = n.inputs[2];
        if (!is_constant(info.graph, v)) return decline(why, DeclineCode::kUnsupportedAttribute, "Dropout with a non-constant training_mode");
        const Tensor& t = info.graph.values[v].initializer;
        if (t.numel() != 1 || !t.on_host() || t.element_as_double(0) != 0.0)
          return decline(why, DeclineCode::kUnsupportedAttribute, "Dropout in training mode");
      }
      if (op == "GatherElements") {
        const TypeInfo* ix = in_type(info, 1);
        if (!ix || (ix->elem_dtype() != DType::kInt64 && ix->elem_dtype() != DType::kInt32))
          return decline(why, DeclineCode::kUnsupportedType, "GatherElements indices must be int32 or int64");
      }
      if (op == "Gather") {
        const TypeInfo* ix = in_type(info, 1);
        if (!ix || (ix->elem_dtype() != DType::kInt64 && ix->elem_dtype() != DType::kInt32))
          return decline(why, DeclineCode::kUnsupportedType, "Gather indices must be int32 or int64");
        if (!x->has_shape) return decline(why, DeclineCode::kDynamicShape, "Gather needs the data's rank");
      }
      if (op == "Pad") {
        const std::string mode = n.attr_string("mode", "constant");
        PadMode pm;
        if (!pad_mode_of(mode, &pm)) return decline(why, DeclineCode::kUnsupportedAttribute, "Pad mode '" + mode + "'");
        if (n.opset < 11 && t0 != DType::kFloat)
          return decline(why, DeclineCode::kUnsupportedType, str("CUDA Pad-", n.opset, " (a float value attribute) runs on float32 only"));
      }
      if ((op == "DepthToSpace" || op == "SpaceToDepth") && (!x->has_shape || x->shape.size() != 4))
        return decline(why, DeclineCode::kDynamicShape, op + " needs a 4-d input");
      if (op == "Tile" && !x->has_shape) return decline(why, DeclineCode::kDynamicShape, "Tile needs the input's rank");
      if (op == "Slice" || op == "Squeeze" || op == "Unsqueeze" || op == "Transpose" || op == "Split" || op == "Concat" || op == "Flatten")
        if (!x->has_shape) return decline(why, DeclineCode::kDynamicShape, op + " needs the input's rank");
      return true;
    }
    case Kind::kCast: {
      const TypeInfo* y = out_type(info, 0);
      if (!cast_type(t0) || !y || !cast_type(y->elem_dtype()))
        return decline(why, DeclineCode::kUnsupportedType,
                       str("CUDA Cast from ", dtype_name(t0), " to ", y ? dtype_name(y->elem_dtype()) : "?", " is not supported"));
      return true;
    }
    case Kind::kWhere: {
      if (t0 != DType::kBool) return decline(why, DeclineCode::kUnsupportedType, "Where condition must be bool");
      const TypeInfo* a = in_type(info, 1);
      if (!a || !fixed_size(a->elem_dtype())) return decline(why, DeclineCode::kUnsupportedType, "Where on this element type");
      return true;
    }
    case Kind::kFloatOp:
      return check_float_op(info, why);
    case Kind::kScan:
      if (t0 != DType::kFloat && t0 != DType::kInt32 && t0 != DType::kInt64)
        return decline(why, DeclineCode::kUnsupportedType,
                       str("CUDA ", op, " does not take ", dtype_name(t0), " (its kernel runs on float32, int32 and int64)"));
      return true;
    case Kind::kArg:
      if (!math_float(t0)) return decline(why, DeclineCode::kUnsupportedType, str(op, " runs on ", kMathTypes, " only, got ", dtype_name(t0)));
      return true;
  }
  return decline(why, DeclineCode::kUnsupportedOp, "no CUDA kernel for " + op);
}

bool reads_host_input(const Node& n, size_t i, const Graph& g) {
  if (i >= n.inputs.size() || n.inputs[i] < 0) return false;
  const int v = n.inputs[i];
  if (is_constant(g, v)) {
    // Weights and other constants are uploaded once when the kernel is prepared, and shape
    // operands are read on the host, so a constant never needs a per-run copy.
    const DType t = g.values[v].type.elem_dtype();
    return fixed_size(t);
  }
  const std::string& op = n.op_type;
  if (op == "Reshape" || op == "Expand" || op == "Tile") return i == 1;
  if (op == "Slice" || op == "Pad" || op == "Resize" || op == "Upsample") return i >= 1;
  if (op == "CumSum") return i == 1;
  if (op == "Squeeze" || op == "Unsqueeze" || op == "Split") return i == 1;
  if (op.rfind("Reduce", 0) == 0) return i == 1;
  if (op == "Clip") return i >= 1;
  if (op == "Dropout") return i >= 1;
  // ONNX Runtime's LLM operators: sequence lengths and position ids are checked on the host (and
  // uploaded for the kernels), as the CPU EP checks them.
  if (n.domain == "com.microsoft" && op == "GroupQueryAttention") return i == 5 || i == 6 || i == 9;
  if (n.domain == "com.microsoft" && op == "RotaryEmbedding") return i == 1;
  return false;
}

}  // namespace onyx::cuda
