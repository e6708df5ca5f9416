// quant family: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv,
// QLinearMatMul, ConvInteger, MatMulInteger.
#include "ops/quant.hpp"

#include "ops/nn.hpp"
#include "ops/schema.hpp"

namespace onyx {

namespace {
bool known(const Shape& s) {
  for (int64_t d : s)
    if (d < 0) return false;
  return true;
}
}  // namespace

QuantSplit quant_split(const Node& n, const Shape& x, const Shape& s, const Shape* zp) {
  const bool q = n.op_type == "QuantizeLinear";
  const char* sn = q ? "y_scale" : "x_scale";
  const char* zn = q ? "y_zero_point" : "x_zero_point";
  if (zp) {
    bool same = zp->size() == s.size();
    for (size_t k = 0; same && k < s.size(); ++k) same = (*zp)[k] < 0 || s[k] < 0 || (*zp)[k] == s[k];
    // One value each, as a scalar or as [1]: both per-tensor (onnx's own tests mix the two).
    auto single = [](const Shape& t) { return t.empty() || (t.size() == 1 && t[0] == 1); };
    same = same || (single(*zp) && single(s));
    if (!same)
      fail(ErrorCode::kInvalidArgument, n.label(), ": ", zn, " (input 2) has shape ", zp->to_string(), " but ", sn,
           " (input 1) has shape ", s.to_string(), "; they must match");
  }
  const int64_t r = static_cast<int64_t>(x.size());
  const int64_t block = n.opset >= 21 ? n.attr_int("block_size", 0) : 0;
  if (block < 0) fail(ErrorCode::kInvalidGraph, n.label(), ": block_size must be non-negative, got ", block);
  QuantSplit qs;
  if (block == 0) {
    if (s.empty() || (s.size() == 1 && s[0] == 1)) {
      qs.kind = QuantKind::kPerTensor;
      qs.dim = known(x) ? x.numel() : -1;
      return qs;
    }
    if (n.opset < 13)
      fail(ErrorCode::kInvalidArgument, n.label(), ": ", sn, " (input 1) must be a scalar at opset ", n.opset, ", got shape ",
           s.to_string());
    if (s.size() != 1)
      fail(ErrorCode::kInvalidArgument, n.label(), ": ", sn, " (input 1) has shape ", s.to_string(),
           "; it must be a scalar or 1-D (per-axis)", n.opset >= 21 ? ", or give block_size for blocked quantization" : "");
    if (r == 0) fail(ErrorCode::kInvalidArgument, n.label(), ": per-axis ", sn, " (input 1) needs an input of rank >= 1");
    qs.kind = QuantKind::kPerAxis;
    qs.axis = normalize_axis(n.attr_int("axis", 1), r, n.op_type);
    if (s[0] >= 0 && x[qs.axis] >= 0 && s[0] != x[qs.axis])
      fail(ErrorCode::kInvalidArgument, n.label(), ": ", sn, " (input 1) has ", s[0], " values but axis ", qs.axis,
           " of x (shape ", x.to_string(), ") has size ", x[qs.axis]);
  } else {
    if (static_cast<int64_t>(s.size()) != r || r == 0)
      fail(ErrorCode::kInvalidArgument, n.label(), ": blocked quantization (block_size ", block, ") needs ", sn,
           " (input 1) of x's rank ", r, ", got shape ", s.to_string());
    qs.kind = QuantKind::kBlocked;
    qs.axis = normalize_axis(n.attr_int("axis", 1), r, n.op_type);
    qs.block = block;
    for (int64_t k = 0; k < r; ++k) {
      if (s[k] < 0 || x[k] < 0) continue;
      const int64_t want = k == qs.axis ? (x[k] + block - 1) / block : x[k];
      if (s[k] != want)
        fail(ErrorCode::kInvalidArgument, n.label(), ": ", sn, " (input 1) has shape ", s.to_string(), " for x of shape ",
             x.to_string(), " and block_size ", block, " on axis ", qs.axis, "; dim ", k, " must be ", want);
    }
    qs.nblocks = s[qs.axis];
  }
  for (int64_t k = 0; k < r; ++k) {
    if (k < qs.axis) qs.outer *= x[k];
    else if (k == qs.axis) qs.dim = x[k];
    else qs.inner *= x[k];
  }
  return qs;
}

namespace {

bool is_f8(DType t) {
  return t == DType::kFloat8E4M3FN || t == DType::kFloat8E4M3FNUZ || t == DType::kFloat8E5M2 || t == DType::kFloat8E5M2FNUZ;
}

/// Quantized types allowed at the node's opset (QuantizeLinear's y, DequantizeLinear's x).
bool quant_type_ok(int opset, DType t, bool allow_int32) {
  if (t == DType::kUInt8 || t == DType::kInt8) return true;
  if (t == DType::kInt32) return allow_int32;
  if (opset >= 19 && is_f8(t)) return true;
  if (opset >= 21 && (t == DType::kUInt16 || t == DType::kInt16 || t == DType::kUInt4 || t == DType::kInt4)) return true;
  if (opset >= 23 && t == DType::kFloat4E2M1) return true;
  if (opset >= 25 && (t == DType::kUInt2 || t == DType::kInt2)) return true;
  return false;
}

void check_scale_zp(InferContext& ctx) {
  if (ctx.input_has_shape(0) && ctx.input_has_shape(1))
    (void)quant_split(ctx.node(), ctx.input_shape(0), ctx.input_shape(1), ctx.input_has_shape(2) ? &ctx.input_shape(2) : nullptr);
}

void infer_quantize(InferContext& ctx) {
  const Node& n = ctx.node();
  const int op = ctx.opset();
  if (op >= 19)
    ctx.require_dtype(0, {DType::kFloat, DType::kFloat16, DType::kBFloat16, DType::kInt32});
  else
    ctx.require_dtype(0, {DType::kFloat, DType::kInt32});
  if (op >= 23) {
    // y_scale's own type (the division's precision, unless the precision attribute says otherwise).
    ctx.require_dtype(1, {DType::kFloat, DType::kFloat16, DType::kBFloat16});
    const int64_t p = n.attr_int("precision", 0);
    if (p != 0 && p != static_cast<int64_t>(DType::kFloat) && p != static_cast<int64_t>(DType::kFloat16) &&
        p != static_cast<int64_t>(DType::kBFloat16))
      ctx.fail_node("precision ", p, " is not float, float16 or bfloat16");
  } else if (op >= 19) {
    if (ctx.input_dtype(1) != ctx.input_dtype(0))
      ctx.fail_node("y_scale (input 1) has type ", dtype_name(ctx.input_dtype(1)), " but x has type ",
                    dtype_name(ctx.input_dtype(0)));
  } else {
    ctx.require_dtype(1, {DType::kFloat});
  }
  DType out = DType::kUInt8;
  const int64_t attr = op >= 21 ? n.attr_int("output_dtype", 0) : 0;
  if (attr != 0) {
    if (!dtype_valid(static_cast<int32_t>(attr))) ctx.fail_node("output_dtype ", attr, " is not a known type");
    out = static_cast<DType>(attr);
  }
  if (ctx.has_input(2)) {
    const DType zt = ctx.input_dtype(2);
    if (attr != 0 && zt != out)
      ctx.fail_node("output_dtype ", dtype_name(out), " does not match y_zero_point's type ", dtype_name(zt));
    out = zt;
  }
  if (!quant_type_ok(op, out, false)) ctx.fail_node("cannot quantize to ", dtype_name(out), " at opset ", op);
  if (op < 19 && n.has_attr("saturate")) ctx.fail_node("attribute 'saturate' needs opset 19");
  check_scale_zp(ctx);
  const TypeInfo& x = ctx.input_type(0);
  if (!x.has_shape) return ctx.set_output_unranked(0, out);
  ctx.set_output(0, out, x.shape);
}

void infer_dequantize(InferContext& ctx) {
  const int op = ctx.opset();
  const DType xt = ctx.input_dtype(0);
  if (!quant_type_ok(op, xt, true)) ctx.fail_node("cannot dequantize ", dtype_name(xt), " at opset ", op);
  if (ctx.has_input(2) && ctx.input_dtype(2) != xt)
    ctx.fail_node("x_zero_point (input 2) has type ", dtype_name(ctx.input_dtype(2)), " but x has type ", dtype_name(xt));
  DType out = DType::kFloat;
  if (op >= 19) {
    ctx.require_dtype(1, {DType::kFloat, DType::kFloat16, DType::kBFloat16});
    out = ctx.input_dtype(1);
    // Opset 23: output_dtype (float, float16 or bfloat16), else the scale's type.
    const int64_t attr = op >= 23 ? ctx.node().attr_int("output_dtype", 0) : 0;
    if (attr != 0) {
      if (attr != static_cast<int64_t>(DType::kFloat) && attr != static_cast<int64_t>(DType::kFloat16) &&
          attr != static_cast<int64_t>(DType::kBFloat16))
        ctx.fail_node("output_dtype ", attr, " is not float, float16 or bfloat16");
      out = static_cast<DType>(attr);
    }
  } else {
    ctx.require_dtype(1, {DType::kFloat});
  }
  check_scale_zp(ctx);
  const TypeInfo& x = ctx.input_type(0);
  if (!x.has_shape) return ctx.set_output_unranked(0, out);
  ctx.set_output(0, out, x.shape);
}

void infer_dynamic_quantize(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kFloat});
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape)
    ctx.set_output(0, DType::kUInt8, x.shape);
  else
    ctx.set_output_unranked(0, DType::kUInt8);
  ctx.set_output(1, DType::kFloat, Shape{});
  ctx.set_output(2, DType::kUInt8, Shape{});
}

/// Requires input i to be a scalar or 1-element tensor (when its shape is known).
void require_scalar(InferContext& ctx, size_t i, const char* name) {
  if (!ctx.input_has_shape(i)) return;
  const Shape& s = ctx.input_shape(i);
  if (s.size() > 1 || (s.size() == 1 && s[0] >= 0 && s[0] != 1))
    ctx.fail_node(name, " (input ", i, ") must be a scalar, got shape ", s.to_string());
}

/// Requires input i to be a scalar or a 1-D tensor of `m` values (per output channel).
void require_scalar_or_channels(InferContext& ctx, size_t i, const char* name, int64_t m) {
  if (!ctx.input_has_shape(i)) return;
  const Shape& s = ctx.input_shape(i);
  if (s.empty() || (s.size() == 1 && (s[0] < 0 || s[0] == 1 || m < 0 || s[0] == m))) return;
  ctx.fail_node(name, " (input ", i, ") must be a scalar or have one value per output channel (", m, "), got shape ",
                s.to_string());
}

/// Conv-like output shape of x (input xi) with weights w (input wi).
void infer_qconv_shape(InferContext& ctx, size_t xi, size_t wi, DType out) {
  const TypeInfo& x = ctx.input_type(xi);
  const TypeInfo& w = ctx.input_type(wi);
  const TypeInfo& ranked = x.has_shape ? x : w;
  check_window_attr_sizes(ctx.node(), ranked.has_shape && ranked.shape.size() >= 3
                                          ? static_cast<int64_t>(ranked.shape.size()) - 2 : -1);
  if (!x.has_shape || !w.has_shape) return ctx.set_output_unranked(0, out);
  if (x.shape.size() < 3) ctx.fail_node("x must have rank >= 3 (N, C, spatial...), got ", x.shape.to_string());
  if (w.shape.size() != x.shape.size())
    ctx.fail_node("w (input ", wi, ") has rank ", w.shape.size(), " but x has rank ", x.shape.size());
  const int64_t group = ctx.node().attr_int("group", 1);
  if (group <= 0) ctx.fail_node("group must be positive");
  if (x.shape[1] >= 0 && w.shape[1] >= 0 && x.shape[1] != ctx.checked_dim(__int128(w.shape[1]) * group))
    ctx.fail_node("x has ", x.shape[1], " channels but w (input ", wi, ") of shape ", w.shape.to_string(), " with group ",
                  group, " expects ", w.shape[1] * group);
  if (w.shape[0] >= 0 && w.shape[0] % group != 0)
    ctx.fail_node("w (input ", wi, ") has ", w.shape[0], " output channels, not a multiple of group ", group);
  Shape kernel(std::span<const int64_t>(w.shape.data() + 2, w.shape.size() - 2));
  const std::vector<int64_t> ks = ctx.node().attr_ints("kernel_shape");
  if (!ks.empty()) {
    if (ks.size() != kernel.size()) ctx.fail_node("kernel_shape has ", ks.size(), " values for ", kernel.size(), " spatial dims");
    for (size_t k = 0; k < ks.size(); ++k)
      if (kernel[k] >= 0 && ks[k] != kernel[k])
        ctx.fail_node("kernel_shape ", Shape(ks).to_string(), " does not match w (input ", wi, ") of shape ", w.shape.to_string());
    kernel = Shape(ks);
  }
  Shape out_shape{x.shape[0], w.shape[0]};
  for (int64_t d : kernel)
    if (d < 0) {
      for (size_t k = 2; k < x.shape.size(); ++k) out_shape.push_back(ctx.fresh());
      return ctx.set_output(0, out, out_shape);
    }
  const WindowGeometry g =
      window_geometry(ctx.node(), Shape(std::span<const int64_t>(x.shape.data() + 2, x.shape.size() - 2)), kernel, false);
  for (int64_t d : g.out) out_shape.push_back(d < 0 ? ctx.fresh() : d);
  ctx.set_output(0, out, out_shape);
}

void infer_qlinear_conv(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kUInt8, DType::kInt8});
  ctx.require_dtype(3, {DType::kUInt8, DType::kInt8});
  ctx.require_dtype(7, {DType::kUInt8, DType::kInt8});
  ctx.require_dtype(1, {DType::kFloat});
  ctx.require_dtype(4, {DType::kFloat});
  ctx.require_dtype(6, {DType::kFloat});
  if (ctx.input_dtype(2) != ctx.input_dtype(0)) ctx.fail_node("x_zero_point (input 2) must have x's type");
  if (ctx.input_dtype(5) != ctx.input_dtype(3)) ctx.fail_node("w_zero_point (input 5) must have w's type");
  if (ctx.has_input(8)) ctx.require_dtype(8, {DType::kInt32});
  const int64_t m = ctx.input_has_shape(3) && !ctx.input_shape(3).empty() ? ctx.input_shape(3)[0] : -1;
  require_scalar(ctx, 1, "x_scale");
  require_scalar(ctx, 2, "x_zero_point");
  require_scalar_or_channels(ctx, 4, "w_scale", m);
  require_scalar_or_channels(ctx, 5, "w_zero_point", m);
  require_scalar(ctx, 6, "y_scale");
  require_scalar(ctx, 7, "y_zero_point");
  if (ctx.has_input(8) && ctx.input_has_shape(8)) {
    const Shape& b = ctx.input_shape(8);
    if (b.size() != 1 || (m >= 0 && b[0] >= 0 && b[0] != m))
      ctx.fail_node("B (input 8) must be 1-D with one value per output channel (", m, "), got shape ", b.to_string());
  }
  infer_qconv_shape(ctx, 0, 3, ctx.input_dtype(7));
}

/// onyx::QLinearConvAdd (made by the optimizer, docs/optimizer.md): QLinearConv's output T summed
/// as com.microsoft::QLinearAdd does with Z (input 9, T's type and shape), scales 10 (Z), 12 (T)
/// and 14 (the output), zero points 11, 13, 15 (optional, the data's type).
void infer_qlinear_conv_add(InferContext& ctx) {
  infer_qlinear_conv(ctx);
  if (!ctx.has_input(9)) ctx.fail_node("the sum Z (input 9) is required");
  if (ctx.input_dtype(9) != ctx.input_dtype(7)) ctx.fail_node("Z (input 9) must have the output's type");
  const TypeInfo& z = ctx.input_type(9);
  const TypeInfo& y = ctx.output(0);
  if (z.has_shape && y.has_shape && z.shape.size() != y.shape.size())
    ctx.fail_node("Z has rank ", z.shape.size(), ", the output ", y.shape.size());
  const char* names[] = {"Z_scale", "Z_zero_point", "T_scale", "T_zero_point", "C_scale", "C_zero_point"};
  for (size_t i = 10; i <= 15; ++i) {
    if (i % 2 == 0) {
      ctx.require_dtype(i, {DType::kFloat});
    } else if (!ctx.has_input(i)) {
      continue;
    } else if (ctx.input_dtype(i) != ctx.input_dtype(9)) {
      ctx.fail_node(names[i - 10], " (input ", i, ") must have Z's type");
    }
    require_scalar(ctx, i, names[i - 10]);
  }
}

void infer_conv_integer(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kUInt8, DType::kInt8});
  ctx.require_dtype(1, {DType::kUInt8, DType::kInt8});
  if (ctx.has_input(2) && ctx.input_dtype(2) != ctx.input_dtype(0)) ctx.fail_node("x_zero_point (input 2) must have x's type");
  if (ctx.has_input(3) && ctx.input_dtype(3) != ctx.input_dtype(1)) ctx.fail_node("w_zero_point (input 3) must have w's type");
  const int64_t m = ctx.input_has_shape(1) && !ctx.input_shape(1).empty() ? ctx.input_shape(1)[0] : -1;
  if (ctx.has_input(2)) require_scalar(ctx, 2, "x_zero_point");
  if (ctx.has_input(3)) require_scalar_or_channels(ctx, 3, "w_zero_point", m);
  infer_qconv_shape(ctx, 0, 1, DType::kInt32);
}

/// numpy matmul shape of inputs ai and bi.
void infer_qmatmul_shape(InferContext& ctx, size_t ai, size_t bi, DType out) {
  const TypeInfo& a = ctx.input_type(ai);
  const TypeInfo& b = ctx.input_type(bi);
  if (!a.has_shape || !b.has_shape) return ctx.set_output_unranked(0, out);
  Shape sa = a.shape, sb = b.shape;
  if (sa.empty() || sb.empty()) ctx.fail_node("inputs must have rank >= 1");
  const bool va = sa.size() == 1, vb = sb.size() == 1;
  if (va) sa.insert(0, 1);
  if (vb) sb.push_back(1);
  const int64_t ka = sa[sa.size() - 1], kb = sb[sb.size() - 2];
  if (ka >= 0 && kb >= 0 && ka != kb)
    ctx.fail_node("inner dimensions differ: input ", ai, " ", a.shape.to_string(), " x input ", bi, " ", b.shape.to_string());
  Shape ba(std::span<const int64_t>(sa.data(), sa.size() - 2));
  Shape bb(std::span<const int64_t>(sb.data(), sb.size() - 2));
  Shape o = shape_util::broadcast(ctx, ba, bb);
  if (!va) o.push_back(sa[sa.size() - 2]);
  if (!vb) o.push_back(sb[sb.size() - 1]);
  ctx.set_output(0, out, o);
}

void infer_qlinear_matmul(InferContext& ctx) {
  const int op = ctx.opset();
  for (size_t i : {size_t(0), size_t(3), size_t(7)}) {
    const DType t = ctx.input_dtype(i);
    if (!(t == DType::kUInt8 || t == DType::kInt8 || (op >= 21 && is_f8(t))))
      ctx.fail_node("input ", i, " has type ", dtype_name(t), "; expected uint8 or int8", op >= 21 ? " or a float8 type" : "");
  }
  if (ctx.input_dtype(2) != ctx.input_dtype(0)) ctx.fail_node("a_zero_point (input 2) must have a's type");
  if (ctx.input_dtype(5) != ctx.input_dtype(3)) ctx.fail_node("b_zero_point (input 5) must have b's type");
  for (size_t i : {size_t(1), size_t(4), size_t(6)}) {
    if (op >= 21)
      ctx.require_dtype(i, {DType::kFloat, DType::kFloat16, DType::kBFloat16});
    else
      ctx.require_dtype(i, {DType::kFloat});
  }
  if (op >= 21 && (ctx.input_dtype(4) != ctx.input_dtype(1) || ctx.input_dtype(6) != ctx.input_dtype(1)))
    ctx.fail_node("a_scale, b_scale and y_scale must have the same type");
  require_scalar(ctx, 6, "y_scale");
  require_scalar(ctx, 7, "y_zero_point");
  infer_qmatmul_shape(ctx, 0, 3, ctx.input_dtype(7));
}

void infer_matmul_integer(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kUInt8, DType::kInt8});
  ctx.require_dtype(1, {DType::kUInt8, DType::kInt8});
  if (ctx.has_input(2) && ctx.input_dtype(2) != ctx.input_dtype(0)) ctx.fail_node("a_zero_point (input 2) must have A's type");
  if (ctx.has_input(3) && ctx.input_dtype(3) != ctx.input_dtype(1)) ctx.fail_node("b_zero_point (input 3) must have B's type");
  infer_qmatmul_shape(ctx, 0, 1, DType::kInt32);
}

// ---- com.microsoft products over 8-bit operands (ONNX Runtime's quantizers write them) ----

/// QGemm: Y = alpha (A' - a_zp)(B' - b_zp) a_scale b_scale + C (int32, at that scale), A' and B'
/// transposed by transA / transB, divided by y_scale when it is given; requantised to y_zero_point's
/// type (uint8 or int8) when y_zero_point is given, else float (as ONNX Runtime: y_scale alone gives
/// a float Y in units of y_scale).
void infer_qgemm(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kUInt8, DType::kInt8});
  ctx.require_dtype(3, {DType::kUInt8, DType::kInt8});
  if (ctx.input_dtype(2) != ctx.input_dtype(0)) ctx.fail_node("a_zero_point (input 2) must have A's type");
  if (ctx.has_input(5) && ctx.input_dtype(5) != ctx.input_dtype(3)) ctx.fail_node("b_zero_point (input 5) must have B's type");
  ctx.require_dtype(1, {DType::kFloat});
  ctx.require_dtype(4, {DType::kFloat});
  if (ctx.has_input(6)) ctx.require_dtype(6, {DType::kInt32});
  require_scalar(ctx, 1, "a_scale");
  require_scalar(ctx, 2, "a_zero_point");
  DType out = DType::kFloat;
  if (ctx.has_input(7)) {
    ctx.require_dtype(7, {DType::kFloat});
    require_scalar(ctx, 7, "y_scale");
  }
  if (ctx.has_input(8)) {
    ctx.require_dtype(8, {DType::kUInt8, DType::kInt8});
    require_scalar(ctx, 8, "y_zero_point");
    if (!ctx.has_input(7)) ctx.fail_node("y_zero_point (input 8) is given without y_scale (input 7)");
    out = ctx.input_dtype(8);
  }
  const TypeInfo& a = ctx.input_type(0);
  const TypeInfo& b = ctx.input_type(3);
  if (!a.has_shape || !b.has_shape) return ctx.set_output_unranked(0, out);
  if (a.shape.size() != 2 || b.shape.size() != 2)
    ctx.fail_node("A and B must be 2-D, got ", a.shape.to_string(), " and ", b.shape.to_string());
  const bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
  const int64_t m = a.shape[ta ? 1 : 0], ka = a.shape[ta ? 0 : 1], kb = b.shape[tb ? 1 : 0], n = b.shape[tb ? 0 : 1];
  if (ka >= 0 && kb >= 0 && ka != kb)
    ctx.fail_node("inner dimensions differ: A ", a.shape.to_string(), (ta ? " (transposed)" : ""), " x B ", b.shape.to_string(),
                  (tb ? " (transposed)" : ""));
  ctx.set_output(0, out, Shape{m, n});
}

/// DynamicQuantizeMatMul: float A quantized to uint8 per tensor at run time, times int8/uint8 B
/// (b_scale, b_zero_point per tensor or per column), plus an optional float bias; float Y.
void infer_dynamic_quantize_matmul(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kFloat});
  ctx.require_dtype(1, {DType::kUInt8, DType::kInt8});
  ctx.require_dtype(2, {DType::kFloat});
  if (ctx.has_input(3) && ctx.input_dtype(3) != ctx.input_dtype(1)) ctx.fail_node("b_zero_point (input 3) must have B's type");
  if (ctx.has_input(4)) ctx.require_dtype(4, {DType::kFloat});
  infer_qmatmul_shape(ctx, 0, 1, DType::kFloat);
}

/// MatMulIntegerToFloat: (A - a_zp)(B - b_zp) a_scale b_scale + bias, float Y.
void infer_matmul_integer_to_float(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kUInt8, DType::kInt8});
  ctx.require_dtype(1, {DType::kUInt8, DType::kInt8});
  ctx.require_dtype(2, {DType::kFloat});
  if (ctx.input_dtype(3) != DType::kFloat) ctx.fail_node("b_scale (input 3) must have a_scale's type float");
  if (ctx.has_input(4) && ctx.input_dtype(4) != ctx.input_dtype(0)) ctx.fail_node("a_zero_point (input 4) must have A's type");
  if (ctx.has_input(5) && ctx.input_dtype(5) != ctx.input_dtype(1)) ctx.fail_node("b_zero_point (input 5) must have B's type");
  if (ctx.has_input(6)) ctx.require_dtype(6, {DType::kFloat});
  infer_qmatmul_shape(ctx, 0, 1, DType::kFloat);
}

}  // namespace

void register_quant_ops(OpRegistry& r) {
  r.add("", "QuantizeLinear", {10, 13, 19, 21, 23, 24, 25, 28}, infer_quantize);
  r.add("", "DequantizeLinear", {10, 13, 19, 21, 23, 24, 25, 28}, infer_dequantize);
  r.add("", "DynamicQuantizeLinear", {11}, infer_dynamic_quantize);
  r.add("", "QLinearConv", {10}, infer_qlinear_conv);
  r.add("onyx", "QLinearConvAdd", {1}, infer_qlinear_conv_add);
  r.add("", "QLinearMatMul", {10, 21}, infer_qlinear_matmul);
  r.add("", "ConvInteger", {10}, infer_conv_integer);
  r.add("", "MatMulInteger", {10}, infer_matmul_integer);
  r.add("com.microsoft", "QGemm", {1}, infer_qgemm);
  r.add("com.microsoft", "DynamicQuantizeMatMul", {1}, infer_dynamic_quantize_matmul);
  r.add("com.microsoft", "MatMulIntegerToFloat", {1}, infer_matmul_integer_to_float);
}

}  // namespace onyx
