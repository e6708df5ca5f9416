// Elementwise kernels: activations and other unary maps, broadcasting binary arithmetic, Where,
// Cast.
#include <cmath>
#include <limits>

#include "vulkan_ep.hpp"

namespace onyx::vulkan {
namespace {

struct UnaryOp {
  const char* name;
  int code;
  int since;
};
constexpr UnaryOp kUnary[] = {
    {"Relu", 0, 6},        {"LeakyRelu", 1, 6},   {"Sigmoid", 2, 6},
    {"Tanh", 3, 6},        {"Exp", 4, 6},         {"Log", 5, 6},
    {"Sqrt", 6, 6},        {"Neg", 7, 6},         {"Abs", 8, 6},
    {"Erf", 9, 9},         {"Clip", 10, 6},       {"HardSigmoid", 11, 6},
    {"HardSwish", 12, 14}, {"Elu", 13, 6},        {"Selu", 14, 6},
    {"Softplus", 15, 1},   {"Reciprocal", 16, 6}, {"Floor", 17, 6},
    {"Ceil", 18, 6},       {"Gelu", 19, 20},      {"Sin", 20, 7},
    {"Cos", 21, 7},        {"Round", 23, 11},     {"Sign", 24, 9},
    {"Softsign", 25, 1},   {"Mish", 26, 18},      {"ThresholdedRelu", 27, 10},
    {"Celu", 28, 12},      {"Tan", 31, 7},        {"Asin", 32, 7},
    {"Acos", 33, 7},       {"Atan", 34, 7},       {"Sinh", 35, 9},
    {"Cosh", 36, 9},       {"Asinh", 37, 9},      {"Acosh", 38, 9},
    {"Atanh", 39, 9},
};

int unary_code(const std::string& op) {
  for (const auto& u : kUnary)
    if (op == u.name) return u.code;
  return -1;
}

/// Clip's bounds from its constant inputs (opset 11+) or attributes; false if not constant.
bool clip_bounds(const Graph& g, const Node& n, float* lo, float* hi, std::string* why) {
  *lo = -std::numeric_limits<float>::max();
  *hi = std::numeric_limits<float>::max();
  if (n.opset < 11) {
    *lo = n.attr_float("min", *lo);
    *hi = n.attr_float("max", *hi);
    return true;
  }
  for (size_t i = 1; i <= 2; ++i) {
    if (!n.has_input(i)) continue;
    const Tensor* t = constant_or_node(g, n, i);
    if (!t || t->numel() != 1 || (t->dtype() != DType::kFloat && t->dtype() != DType::kFloat16)) {
      if (why) *why = str("Clip bound input ", i, " is not a constant float scalar");
      return false;
    }
    (i == 1 ? *lo : *hi) = static_cast<float>(t->element_as_double(0));
  }
  return true;
}

class UnaryKernel final : public VkKernel {
 public:
  UnaryKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d, int code, float alpha, float beta)
      : VkKernel(info, std::move(d), 0b110), code_(code), alpha_(alpha), beta_(beta) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = out(ctx, 0, x.shape(), x.dtype());
    check_size(label(), x.numel());
    Push p;
    p.i(x.numel()).i(code_).f(alpha_).f(beta_);
    s.dispatch_1d(pipe("unary", 2), {in(ctx, 0), device_ref(y, "output")}, p.w, p.bytes(), x.numel());
  }

 private:
  int code_;
  float alpha_, beta_;
};

bool check_unary(const ClaimInfo& c, Decline* why) {
  const Node& n = c.node;
  if (n.op_type == "Clip") {
    float lo, hi;
    std::string m;
    if (!clip_bounds(c.graph, n, &lo, &hi, &m)) return decline(why, DeclineCode::kUnsupportedAttribute, m);
  }
  if (n.op_type == "Gelu") {
    const std::string a = n.attr_string("approximate", "none");
    if (a != "none" && a != "tanh")
      return decline(why, DeclineCode::kUnsupportedAttribute, "Gelu approximate='" + a + "' is not 'none' or 'tanh'");
  }
  return true;
}

std::unique_ptr<Kernel> make_unary(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  const Node& n = info.node;
  int code = unary_code(n.op_type);
  float alpha = 0, beta = 0;
  const std::string& op = n.op_type;
  if (op == "LeakyRelu") alpha = n.attr_float("alpha", 0.01f);
  if (op == "Elu") alpha = n.attr_float("alpha", 1.0f);
  if (op == "Celu") alpha = n.attr_float("alpha", 1.0f);
  if (op == "ThresholdedRelu") alpha = n.attr_float("alpha", 1.0f);
  if (op == "Selu") {
    alpha = n.attr_float("alpha", 1.67326319217681884765625f);
    beta = n.attr_float("gamma", 1.05070102214813232421875f);
  }
  if (op == "HardSigmoid") {
    alpha = n.attr_float("alpha", 0.2f);
    beta = n.attr_float("beta", 0.5f);
  }
  if (op == "Clip") {
    std::string m;
    if (!clip_bounds(info.graph, n, &alpha, &beta, &m)) fail(ErrorCode::kNotImplemented, "vulkan: ", m);
  }
  if (op == "Gelu" && n.attr_string("approximate", "none") == "tanh") code = 29;
  return std::make_unique<UnaryKernel>(info, d, code, alpha, beta);
}

// Binary ---------------------------------------------------------------------------------------

int binary_code(const std::string& op) {
  if (op == "Add") return 0;
  if (op == "Sub") return 1;
  if (op == "Mul") return 2;
  if (op == "Div") return 3;
  if (op == "Pow") return 4;
  if (op == "Max") return 5;
  if (op == "Min") return 6;
  if (op == "PRelu") return 7;
  if (op == "Sum") return 0;
  if (op == "Mean") return 8;
  return -1;
}

class BinaryKernel final : public VkKernel {
 public:
  BinaryKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d, int code)
      : VkKernel(info, std::move(d), 0), code_(code) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& y = ctx.output(0);
    const Shape& os = y.shape();
    check_size(label(), y.numel());
    const Shape& bs = b.shape();
    const bool same = a.shape() == os && b.shape() == os;
    const auto sa = broadcast_strides(a.shape(), os), sb = broadcast_strides(bs, os);
    // Right-align into 6 dims with leading 1s.
    std::vector<int64_t> dims(kMaxRank, 1), va(kMaxRank, 0), vb(kMaxRank, 0);
    const size_t off = kMaxRank - os.size();
    for (size_t k = 0; k < os.size(); ++k) {
      dims[off + k] = os[k];
      va[off + k] = sa[k];
      vb[off + k] = sb[k];
    }
    Push p;
    p.i(y.numel()).i(code_).i(kMaxRank).i(same ? 1 : 0).six(dims, 1).six(va, 0).six(vb, 0);
    s.dispatch_1d(pipe("binary", 3), {in(ctx, 0), in(ctx, 1), device_ref(y, "output")}, p.w, p.bytes(),
                  y.numel());
  }

 private:
  int code_;
};

bool check_binary(const ClaimInfo& c, Decline* why) {
  const Node& n = c.node;
  if ((n.op_type == "Max" || n.op_type == "Min" || n.op_type == "Sum" || n.op_type == "Mean") && n.num_inputs() != 2)
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   str(n.op_type, " with ", n.num_inputs(), " inputs (vulkan runs 2)"));
  if (n.op_type == "PRelu") {
    // PRelu's slope broadcasts unidirectionally to X (numpy style from opset 7).
    if (n.opset < 7)
      return decline(why, DeclineCode::kOpsetOutOfRange, "PRelu before opset 7 has another broadcast rule");
  }
  const TypeInfo* o = out_type(c, 0);
  if (!o || !o->has_shape) return decline(why, DeclineCode::kDynamicShape, "the output's rank is unknown");
  return true;
}

std::unique_ptr<Kernel> make_binary(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<BinaryKernel>(info, d, binary_code(info.node.op_type));
}

// Where ----------------------------------------------------------------------------------------

class WhereKernel final : public VkKernel {
 public:
  WhereKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d) : VkKernel(info, std::move(d), 0) {}
  void run(KernelContext& ctx, Stream& s) const override {
    Tensor& y = ctx.output(0);
    const Shape& os = y.shape();
    check_size(label(), y.numel());
    std::vector<int64_t> dims(kMaxRank, 1), st[3];
    const size_t off = kMaxRank - os.size();
    for (size_t k = 0; k < os.size(); ++k) dims[off + k] = os[k];
    for (int i = 0; i < 3; ++i) {
      const auto b = broadcast_strides(ctx.input(i).shape(), os);
      st[i].assign(kMaxRank, 0);
      for (size_t k = 0; k < os.size(); ++k) st[i][off + k] = b[k];
    }
    Push p;
    p.i(y.numel()).i(kMaxRank).six(dims, 1).six(st[0], 0).six(st[1], 0).six(st[2], 0);
    s.dispatch_1d(pipe("where", 4), {in(ctx, 0), in(ctx, 1), in(ctx, 2), device_ref(y, "output")}, p.w,
                  p.bytes(), y.numel());
  }
};

bool check_where(const ClaimInfo& c, Decline* why) {
  const TypeInfo* t = in_type(c, 0);
  if (!t || t->dtype != DType::kBool)
    return decline(why, DeclineCode::kUnsupportedType, "Where's condition must be bool");
  const TypeInfo* o = out_type(c, 0);
  if (!o || !o->has_shape) return decline(why, DeclineCode::kDynamicShape, "the output's rank is unknown");
  return true;
}

std::unique_ptr<Kernel> make_where(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<WhereKernel>(info, d);
}

// Cast -----------------------------------------------------------------------------------------

/// The pair of dtypes Cast runs: a float (float32 or float16) on at least one side, the other side
/// a float, int32, int64 or bool.
bool cast_supported(DType from, DType to) {
  auto is_float = [](DType t) { return t == DType::kFloat || t == DType::kFloat16; };
  auto other = [&](DType t) { return is_float(t) || t == DType::kInt32 || t == DType::kInt64 || t == DType::kBool; };
  return (is_float(from) && other(to)) || (is_float(to) && other(from));
}

class CastKernel final : public VkKernel {
 public:
  CastKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d, DType from, DType to)
      : VkKernel(info, std::move(d), 0), src_(storage_kind(*dev_, from)), dst_(storage_kind(*dev_, to)), to_(to) {
    if (src_ < 0 || dst_ < 0)
      fail(ErrorCode::kNotImplemented, "vulkan: ", label(), ": no cast from ", dtype_name(from), " to ",
           dtype_name(to));
  }
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = out(ctx, 0, x.shape(), to_);
    check_size(label(), x.numel());
    record_cast(s, *dev_, in(ctx, 0), src_, device_ref(y, "output"), dst_, x.numel());
  }

 private:
  int src_, dst_;  // storage kinds (cast.comp)
  DType to_;
};

bool check_cast(const ClaimInfo& c, Decline* why) {
  const TypeInfo* t = in_type(c, 0);
  const TypeInfo* o = out_type(c, 0);
  if (!t || !o) return decline(why, DeclineCode::kUnsupportedType, "Cast's types are unknown");
  if (!cast_supported(t->dtype, o->dtype))
    return decline(why, DeclineCode::kUnsupportedType,
                   str("vulkan casts float32 and float16 to and from each other, int32, int64 and bool only, not ",
                       dtype_name(t->dtype), " to ", dtype_name(o->dtype)));
  return true;
}

std::unique_ptr<Kernel> make_cast(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<CastKernel>(info, d, info.input_dtype(0), info.output_dtype(0));
}

}  // namespace

int storage_kind(const Device& dev, DType t) {
  switch (t) {
    case DType::kFloat:
    case DType::kFloat16:
      return dev.stores_half(t) ? kKindF16 : kKindF32;
    case DType::kInt32:
      return kKindI32;
    case DType::kInt64:
      return kKindI64;
    case DType::kBool:
      return kKindBool;
    default:
      return -1;
  }
}

void record_cast(Stream& s, Device& dev, const BufRef& x, int src, const BufRef& y, int dst, int64_t n) {
  if (!n) return;
  Push p;
  p.i(n).i(src).i(dst);
  // One invocation per 32-bit word of the output (cast.comp).
  const int64_t items = dst == kKindBool ? (n + 3) / 4 : dst == kKindF16 ? (n + 1) / 2 : n;
  s.dispatch_1d(dev.pipeline("cast", 2), {x, y}, p.w, p.bytes(), static_cast<uint64_t>(items));
}

void add_elementwise_ops(std::vector<OpDef>& defs) {
  for (const auto& u : kUnary) {
    const bool clip = std::string(u.name) == "Clip";
    defs.push_back({"", u.name, u.since, kMaxOpset, 0, clip ? 0b110u : 0u, check_unary, make_unary});
  }
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu", "Sum", "Mean"})
    defs.push_back({"", op, 7, kMaxOpset, 0, 0, check_binary, make_binary});
  defs.push_back({"", "Where", 9, kMaxOpset, 0b1, 0, check_where, make_where});
  defs.push_back({"", "Cast", 6, kMaxOpset, 0b1, 0, check_cast, make_cast, true});
}

}  // namespace onyx::vulkan
