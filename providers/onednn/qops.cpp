// The 8-bit ops and Cast on oneDNN: QuantizeLinear, DequantizeLinear, QLinearConv, QLinearMatMul,
// MatMulInteger, com.microsoft::QGemm (8-bit MaxPool, Concat and the layout ops are the float
// emitters, on 8-bit tensors).
//
// ONNX requantises as y = saturate(round_half_even(acc * multiplier) + y_zero_point), the
// multiplier x_scale * w_scale / y_scale computed in float32 (ONNX Runtime's order, the CPU EP's
// too). oneDNN's int8 primitives add the destination zero point before they round (measured on
// 2.6: where acc * multiplier is a tie and the zero point odd, its result is one step off), so
// every requantising primitive here carries an eltwise_round post-op: the scaled value is
// rounded half to even first, the zero point added to an integer, and the conversion then only
// saturates. QuantizeLinear divides by the scale (a binary division, not a reorder, which would
// multiply by the reciprocal and round after adding the zero point).
#include <algorithm>
#include <cstdlib>

#include "builder.hpp"
#include "ops/nn.hpp"
#include "ops/quant.hpp"

namespace onyx::onednn {
namespace {

constexpr auto kInfer = dnnl::prop_kind::forward_inference;

/// Input `i` of `n` as a value known when the region is compiled (a constant, or a graph input
/// whose value keys the compiled entry).
const Tensor& known(const Builder& b, const Node& n, size_t i, const char* what) {
  const Tensor* t = n.has_input(i) ? b.constant(n.inputs[i]) : nullptr;
  if (!t) b.unsupported(str(what, " is not known when the region is compiled"));
  return *t;
}

std::vector<float> float_values(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<float>(t.element_as_double(i));
  return v;
}

/// A zero point's values (one 0 when the input is absent).
std::vector<int32_t> zero_points(const Builder& b, const Node& n, size_t i, const char* what) {
  if (!n.has_input(i)) return {0};
  const Tensor& t = known(b, n, i, what);
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  for (int64_t k = 0; k < t.numel(); ++k) v[static_cast<size_t>(k)] = static_cast<int32_t>(t.element_as_double(k));
  if (v.empty()) b.unsupported(str(what, " is empty"));
  return v;
}

float one_float(const Builder& b, const Node& n, size_t i, const char* what) {
  const Tensor& t = known(b, n, i, what);
  if (t.numel() != 1) b.unsupported(str(what, " has ", t.numel(), " values (one expected)"));
  return static_cast<float>(t.element_as_double(0));
}

bool uniform(const std::vector<int32_t>& v) {
  for (int32_t x : v)
    if (x != v[0]) return false;
  return true;
}

/// The value viewed with dims `d`: its own layout when the dims already match, else dense.
int with_dims(Builder& b, int v, const Dims& d) {
  const int cur = b.view_of(v);
  if (b.md(cur).dims() == d) return cur;
  return b.plain_of(v, d);
}

/// A oneDNN layout with inner blocks (nChw16c, ...), as opposed to dense or strided.
bool blocked(const MD& m) { return m.data.format_kind == dnnl_blocked && m.data.format_desc.blocking.inner_nblks != 0; }

/// Requantising post-ops: round half to even, then the zero point (an integer then).
dnnl::post_ops round_then(int32_t zero_point) {
  dnnl::post_ops po;
  po.append_eltwise(1.0f, Alg::eltwise_round, 0.0f, 0.0f);
  if (zero_point != 0) po.append_eltwise(1.0f, Alg::eltwise_linear, 1.0f, static_cast<float>(zero_point));
  return po;
}

/// Dims of x's rank with 1 everywhere but `axis` (per-axis scales and zero points).
Dims axis_dims(size_t rank, const QuantSplit& q) {
  Dims d(std::max<size_t>(rank, 1), 1);
  if (q.kind == QuantKind::kPerAxis) d[static_cast<size_t>(q.axis)] = q.dim;
  return d;
}

QuantSplit split_of(const Builder& b, const Node& n, const Shape& xs) {
  const Tensor& sc = known(b, n, 1, "the scale");
  const Tensor* zp = n.has_input(2) ? &known(b, n, 2, "the zero point") : nullptr;
  const QuantSplit q = quant_split(n, xs, sc.shape(), zp ? &zp->shape() : nullptr);
  if (q.kind == QuantKind::kBlocked) b.unsupported("blocked quantization");
  return q;
}

// ---------------------------------------------------------------------------------------------
// QuantizeLinear: y = saturate(round_half_even(x / y_scale) + y_zero_point)

void emit_quantize(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], y = n.outputs[0];
  const Shape& xs = b.shape(x);
  const QuantSplit q = split_of(b, n, xs);
  const Dims xd = to_dims(xs), sd = axis_dims(xd.size(), q);
  const std::vector<float> scale = float_values(known(b, n, 1, "y_scale"));
  const std::vector<int32_t> zp = zero_points(b, n, 2, "y_zero_point");
  const DT yt = b.type(y);
  dnnl::primitive_attr attr = Builder::attr();
  int zv = -1;  // per-axis zero points: a binary post-op's operand
  if (uniform(zp)) {
    attr.set_post_ops(round_then(zp[0]));
  } else {
    dnnl::post_ops po = round_then(0);
    po.append_binary(Alg::binary_add, plain_md(sd));
    attr.set_post_ops(po);
    zv = b.host_const(plain_md(sd), std::vector<float>(zp.begin(), zp.end()));
  }
  const int sv = b.host_const(plain_md(sd), scale);
  // oneDNN's binary kernels are fast where the destination has the source's layout.
  int xv = with_dims(b, x, xd);
  if (blocked(b.md(xv))) xv = b.plain_of(x, xd);
  auto make = [&](int v) {
    return dnnl::binary::primitive_desc(
        dnnl::binary::desc(Alg::binary_div, b.md(v), plain_md(sd), with_type(b.md(v), yt)), attr, b.engine());
  };
  dnnl::binary::primitive_desc pd;
  try {
    pd = make(xv);
  } catch (const dnnl::error&) {
    xv = b.plain_of(x, xd);
    pd = make(xv);
  }
  const int dv = b.out_view(y, pd.dst_desc());
  std::vector<std::pair<int, int>> args{{DNNL_ARG_SRC_0, xv}, {DNNL_ARG_SRC_1, sv}, {DNNL_ARG_DST, dv}};
  if (zv >= 0) args.emplace_back(DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, zv);
  b.step(dnnl::binary(pd), pd, std::move(args));
  b.define(y, dv);
}

// ---------------------------------------------------------------------------------------------
// DequantizeLinear: y = (x - x_zero_point) * x_scale, the difference exact in float32

void emit_dequantize(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], y = n.outputs[0];
  const Shape& xs = b.shape(x);
  const QuantSplit q = split_of(b, n, xs);
  const Dims xd = to_dims(xs), sd = axis_dims(xd.size(), q);
  const std::vector<float> scale = float_values(known(b, n, 1, "x_scale"));
  const std::vector<int32_t> zp = zero_points(b, n, 2, "x_zero_point");
  const int xv = with_dims(b, x, xd);
  const MD dst = with_type(b.md(xv), kF32);
  if (uniform(zp)) {
    // One reorder: scale * (x - zero point) (measured exact against the float32 formula).
    dnnl::primitive_attr attr = Builder::attr();
    attr.set_output_scales(q.kind == QuantKind::kPerAxis ? 1 << q.axis : 0, scale);
    if (zp[0] != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {zp[0]});
    const int dv = b.out_view(y, dst);
    b.copy(xv, dv, attr);
    b.define(y, dv);
    return;
  }
  // Zero points per axis (a reorder takes one): the exact conversion, then (x - zp) * scale.
  const int fv = b.scratch(dst);
  b.copy(xv, fv);
  dnnl::primitive_attr attr = Builder::attr();
  dnnl::post_ops po;
  po.append_binary(Alg::binary_mul, plain_md(sd));
  attr.set_post_ops(po);
  const int zv = b.host_const(plain_md(sd), std::vector<float>(zp.begin(), zp.end()));
  const int sv = b.host_const(plain_md(sd), scale);
  dnnl::binary::primitive_desc pd(dnnl::binary::desc(Alg::binary_sub, dst, plain_md(sd), MD(xd, kF32, Tag::any)), attr,
                                  b.engine());
  const int dv = b.out_view(y, pd.dst_desc());
  b.step(dnnl::binary(pd), pd,
         {{DNNL_ARG_SRC_0, fv},
          {DNNL_ARG_SRC_1, zv},
          {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, sv},
          {DNNL_ARG_DST, dv}});
  b.define(y, dv);
}

// ---------------------------------------------------------------------------------------------
// QLinearConv

Dims window_dims(const Shape& s) { return Dims(s.begin(), s.end()); }
Dims minus_one(const Shape& s) {
  Dims d;
  for (int64_t x : s) d.push_back(x - 1);
  return d;
}
Shape spatial(const Shape& s) { return Shape(std::span<const int64_t>(s.data() + 2, s.size() - 2)); }

int32_t lowest(DT t) { return t == DT::s8 ? -128 : 0; }
int32_t highest(DT t) { return t == DT::s8 ? 127 : 255; }

void emit_qlinear_conv(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], w = n.inputs[3], bias = n.has_input(8) ? n.inputs[8] : -1, y = n.outputs[0];
  const Shape& xs = b.shape(x);
  const Shape& ws = b.shape(w);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size())
    b.unsupported(str("input rank ", xs.size(), " (1 to 3 spatial dims)"));
  const int64_t group = n.attr_int("group", 1);
  const int64_t N = xs[0], C = xs[1], M = ws[0];
  if (group <= 0 || C % group != 0 || M % group != 0 || ws[1] * group != C)
    fail(ErrorCode::kInvalidArgument, n.label(), ": input channels ", C, " and weight ", ws.to_string(),
         " do not fit group ", group);
  const WindowGeometry g = window_geometry(n, spatial(xs), spatial(ws), false);
  Dims src_d{N, C}, dst_d{N, M}, wd;
  if (group == 1)
    wd = {M, C};
  else
    wd = {group, M / group, C / group};
  for (size_t k = 0; k < g.kernel.size(); ++k) {
    src_d.push_back(xs[k + 2]);
    dst_d.push_back(g.out[k]);
    wd.push_back(g.kernel[k]);
  }
  // The parameters, known when compiling.
  const float x_scale = one_float(b, n, 1, "x_scale"), y_scale = one_float(b, n, 6, "y_scale");
  const std::vector<float> w_scale = float_values(known(b, n, 4, "w_scale"));
  const std::vector<int32_t> xz = zero_points(b, n, 2, "x_zero_point"), wz = zero_points(b, n, 5, "w_zero_point"),
                             yz = zero_points(b, n, 7, "y_zero_point");
  if (xz.size() != 1 || yz.size() != 1) b.unsupported("x_zero_point and y_zero_point must have one value each");
  if ((w_scale.size() != 1 && static_cast<int64_t>(w_scale.size()) != M) ||
      (wz.size() != 1 && static_cast<int64_t>(wz.size()) != M))
    fail(ErrorCode::kInvalidArgument, n.label(), ": w_scale and w_zero_point must have 1 or ", M, " values");
  std::vector<float> mult(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m)
    mult[static_cast<size_t>(m)] = x_scale * w_scale[w_scale.size() == 1 ? 0 : static_cast<size_t>(m)] / y_scale;
  const Tensor& wt = known(b, n, 3, "w");
  const Tensor* bt = bias >= 0 ? b.constant(bias) : nullptr;
  if (bias >= 0 && (!bt || bt->numel() != M)) b.unsupported(str("B must be a constant of ", M, " values"));
  const DT xt = b.type(x), yt = b.type(y);
  // w - w_zero_point per output channel, and the path that computes it exactly.
  const int64_t per = M > 0 ? wt.numel() / M : 0;
  std::vector<int32_t> wdiff(static_cast<size_t>(wt.numel()));
  QConvFacts f;
  f.kg = per;
  f.x_lo = lowest(xt) - xz[0];
  f.x_hi = highest(xt) - xz[0];
  f.w_known = true;
  for (int64_t i = 0; i < wt.numel(); ++i) {
    const int32_t d =
        static_cast<int32_t>(wt.element_as_double(i)) - wz[wz.size() == 1 ? 0 : static_cast<size_t>(i / per)];
    wdiff[static_cast<size_t>(i)] = d;
    f.w_lo = std::min<int64_t>(f.w_lo, d);
    f.w_hi = std::max<int64_t>(f.w_hi, d);
  }
  for (int64_t m = 0; bt && m < M; ++m) f.bias_max = std::max<int64_t>(f.bias_max, std::llabs(bt->data<int32_t>()[m]));
  std::string why;
  const QConvPath path = qconv_path(f, &why);
  if (path == QConvPath::kNone) b.unsupported(why);
  const Dims st = window_dims(g.stride), dil = minus_one(g.dilation), pl = window_dims(g.pad_begin),
             pr = window_dims(g.pad_end);
  using PD = dnnl::convolution_forward::primitive_desc;
  if (path == QConvPath::kInt8) {
    // u8/s8 x s8 -> int32, + B, x multiplier (per output channel or one), rounded, + y_zero_point.
    std::vector<int8_t> w8(wdiff.begin(), wdiff.end());
    const int wv = b.host_bytes(plain_md(wd, DT::s8), w8.data());
    dnnl::primitive_attr attr = Builder::attr();
    if (w_scale.size() == 1)
      attr.set_output_scales(0, {mult[0]});
    else
      attr.set_output_scales(1 << 1, mult);
    if (xz[0] != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {xz[0]});
    if (yz[0] != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {yz[0]});
    dnnl::post_ops po;
    po.append_eltwise(1.0f, Alg::eltwise_round, 0.0f, 0.0f);
    attr.set_post_ops(po);
    const MD s(src_d, xt, Tag::any), wm(wd, DT::s8, Tag::any), d(dst_d, yt, Tag::any);
    PD pd = bias >= 0 ? PD(dnnl::convolution_forward::desc(kInfer, Alg::convolution_direct, s, wm,
                                                           MD({M}, DT::s32, Tag::x), d, st, dil, pl, pr),
                           attr, b.engine())
                      : PD(dnnl::convolution_forward::desc(kInfer, Alg::convolution_direct, s, wm, d, st, dil, pl, pr),
                           attr, b.engine());
    std::vector<std::pair<int, int>> args;
    args.emplace_back(DNNL_ARG_SRC, b.reorder(b.view_of(x), pd.src_desc()));
    args.emplace_back(DNNL_ARG_WEIGHTS, b.reorder(wv, pd.weights_desc()));
    if (bias >= 0) args.emplace_back(DNNL_ARG_BIAS, b.reorder(b.plain_of(bias, {M}), pd.bias_desc()));
    const int dv = b.out_view(y, pd.dst_desc());
    args.emplace_back(DNNL_ARG_DST, dv);
    b.step(dnnl::convolution_forward(pd), pd, std::move(args));
    b.define(y, dv);
    return;
  }
  // float32 on the integer differences: every product and sum exact (qconv_path checked the
  // bound), then the same requantisation as a binary step.
  const int xf = b.scratch(plain_md(src_d));
  {
    dnnl::primitive_attr za = Builder::attr();
    if (xz[0] != 0) za.set_zero_points(DNNL_ARG_SRC, 0, {xz[0]});
    b.copy(with_dims(b, x, src_d), xf, za);
  }
  const int wv = b.host_const(plain_md(wd), std::vector<float>(wdiff.begin(), wdiff.end()));
  int bv = -1;
  if (bt) {
    std::vector<float> bf(static_cast<size_t>(M));
    for (int64_t m = 0; m < M; ++m) bf[static_cast<size_t>(m)] = static_cast<float>(bt->data<int32_t>()[m]);
    bv = b.host_const(plain_md({M}), bf);
  }
  const MD wm(wd, kF32, Tag::any), d = plain_md(dst_d);
  PD pd = bv >= 0
              ? PD(dnnl::convolution_forward::desc(kInfer, Alg::convolution_direct, b.md(xf), wm, plain_md({M}), d, st,
                                                   dil, pl, pr),
                   Builder::attr(), b.engine())
              : PD(dnnl::convolution_forward::desc(kInfer, Alg::convolution_direct, b.md(xf), wm, d, st, dil, pl, pr),
                   Builder::attr(), b.engine());
  const int acc = b.scratch(pd.dst_desc());
  std::vector<std::pair<int, int>> args{
      {DNNL_ARG_SRC, xf}, {DNNL_ARG_WEIGHTS, b.reorder(wv, pd.weights_desc())}, {DNNL_ARG_DST, acc}};
  if (bv >= 0) args.emplace_back(DNNL_ARG_BIAS, b.reorder(bv, pd.bias_desc()));
  b.step(dnnl::convolution_forward(pd), pd, std::move(args));
  Dims md_(dst_d.size(), 1);
  md_[1] = M;
  const int mv = b.host_const(plain_md(md_), mult);
  dnnl::primitive_attr ra = Builder::attr();
  ra.set_post_ops(round_then(yz[0]));
  dnnl::binary::primitive_desc rpd(dnnl::binary::desc(Alg::binary_mul, b.md(acc), plain_md(md_), plain_md(dst_d, yt)),
                                   ra, b.engine());
  const int dv = b.out_view(y, rpd.dst_desc());
  b.step(dnnl::binary(rpd), rpd, {{DNNL_ARG_SRC_0, acc}, {DNNL_ARG_SRC_1, mv}, {DNNL_ARG_DST, dv}});
  b.define(y, dv);
}

// ---------------------------------------------------------------------------------------------
// QLinearMatMul and MatMulInteger

/// QLinearMatMul (`requantise`: inputs a, a_scale, a_zero_point, b, b_scale, b_zero_point,
/// y_scale, y_zero_point) or MatMulInteger (a, b, a_zero_point, b_zero_point; int32 y).
void emit_int8_matmul(Builder& b, int ni, bool requantise) {
  const Node& n = b.node(ni);
  const size_t ib = requantise ? 3 : 1, ibz = requantise ? 5 : 3;
  const int a = n.inputs[0], w = n.inputs[ib], y = n.outputs[0];
  const MatDims md = matmul_dims(b, n, b.shape(a), b.shape(w));
  const int64_t N = md.n;
  // MatMulInteger's a_zero_point may be computed at run time (DynamicQuantizeLinear's): oneDNN
  // then reads it from memory, as int32.
  const bool az_runtime = !requantise && n.has_input(2) && !b.constant(n.inputs[2]);
  const std::vector<int32_t> az = az_runtime ? std::vector<int32_t>{0} : zero_points(b, n, 2, "a_zero_point"),
                             bz = zero_points(b, n, ibz, "b_zero_point"),
                             yz = requantise ? zero_points(b, n, 7, "y_zero_point") : std::vector<int32_t>{0};
  if (az.size() != 1 || yz.size() != 1) b.unsupported("a_zero_point and y_zero_point must have one value each");
  if (bz.size() != 1 && static_cast<int64_t>(bz.size()) != N)
    fail(ErrorCode::kInvalidArgument, n.label(), ": b_zero_point must have 1 or ", N, " values");
  std::vector<float> mult;
  if (requantise) {
    const float a_scale = one_float(b, n, 1, "a_scale"), y_scale = one_float(b, n, 6, "y_scale");
    const std::vector<float> b_scale = float_values(known(b, n, 4, "b_scale"));
    if (b_scale.size() != 1 && static_cast<int64_t>(b_scale.size()) != N)
      fail(ErrorCode::kInvalidArgument, n.label(), ": b_scale must have 1 or ", N, " values");
    for (float bs : b_scale) mult.push_back(a_scale * bs / y_scale);
  }
  // b as int8 with one zero point (oneDNN's matmul takes int8 weights and one zero point).
  int wv;
  int32_t wzp = 0;
  const Tensor* bc = b.constant(w);
  const DT bt = b.type(w);
  if (bc) {
    std::vector<int32_t> d(static_cast<size_t>(bc->numel()));
    int32_t lo = 0, hi = 0;
    for (int64_t i = 0; i < bc->numel(); ++i) {
      d[static_cast<size_t>(i)] =
          static_cast<int32_t>(bc->element_as_double(i)) - bz[bz.size() == 1 ? 0 : static_cast<size_t>(i % N)];
      lo = std::min(lo, d[static_cast<size_t>(i)]);
      hi = std::max(hi, d[static_cast<size_t>(i)]);
    }
    if (lo < -128 || hi > 127) {
      if (!uniform(bz)) b.unsupported("b_zero_point per column, and b - b_zero_point does not fit int8");
      // The zero point stays a zero point: b itself (int8), or b - 128 (uint8).
      const int32_t shift = bt == DT::u8 ? 128 : 0;
      for (int64_t i = 0; i < bc->numel(); ++i)
        d[static_cast<size_t>(i)] = static_cast<int32_t>(bc->element_as_double(i)) - shift;
      wzp = bz[0] - shift;
    }
    const std::vector<int8_t> w8(d.begin(), d.end());
    wv = b.host_bytes(plain_md(md.w, DT::s8), w8.data());
  } else {
    if (!uniform(bz)) b.unsupported("b_zero_point per column for a b computed at run time");
    wv = b.plain_of(w, md.w);
    wzp = bz[0];
    if (bt == DT::u8) {
      // uint8 b - 128, exactly int8, with the zero point moved by as much.
      const int s8 = b.scratch(plain_md(md.w, DT::s8));
      dnnl::primitive_attr za = Builder::attr();
      za.set_zero_points(DNNL_ARG_SRC, 0, {128});
      b.copy(wv, s8, za);
      wv = s8;
      wzp -= 128;
    }
  }
  dnnl::primitive_attr attr = Builder::attr();
  if (mult.size() == 1)
    attr.set_output_scales(0, mult);
  else if (mult.size() > 1)
    attr.set_output_scales(1 << (md.out.size() - 1), mult);
  int azv = -1;
  if (az_runtime) {
    if (b.shape(n.inputs[2]).numel() != 1) b.unsupported("a_zero_point must have one value");
    azv = b.scratch(plain_md({1}, DT::s32));
    b.copy(b.plain_of(n.inputs[2], {1}), azv);
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  } else if (az[0] != 0) {
    attr.set_zero_points(DNNL_ARG_SRC, 0, {az[0]});
  }
  if (wzp != 0) attr.set_zero_points(DNNL_ARG_WEIGHTS, 0, {wzp});
  if (yz[0] != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {yz[0]});
  if (requantise) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, Alg::eltwise_round, 0.0f, 0.0f);
    attr.set_post_ops(po);
  }
  using PD = dnnl::matmul::primitive_desc;
  auto make = [&](bool any_weights) {
    const MD src = plain_md(md.a, b.type(a)), wm = any_weights ? MD(md.w, DT::s8, Tag::any) : plain_md(md.w, DT::s8);
    return PD(dnnl::matmul::desc(src, wm, MD(md.out, b.type(y), Tag::any)), attr, b.engine());
  };
  PD pd;
  if (bc) {
    try {
      pd = make(true);
    } catch (const dnnl::error&) {
      pd = make(false);
    }
  } else {
    pd = make(false);
  }
  std::vector<std::pair<int, int>> args;
  args.emplace_back(DNNL_ARG_SRC, b.reorder(b.plain_of(a, md.a), pd.src_desc()));
  args.emplace_back(DNNL_ARG_WEIGHTS, b.reorder(wv, pd.weights_desc()));
  if (azv >= 0) args.emplace_back(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, azv);
  const int dv = b.out_view(y, pd.dst_desc());
  args.emplace_back(DNNL_ARG_DST, dv);
  b.step(dnnl::matmul(pd), pd, std::move(args));
  b.define(y, dv);
}

// ---------------------------------------------------------------------------------------------
// com.microsoft::QGemm (ONNX Runtime's definition, as the CPU EP computes it): Y = (A - a_zp)
// (B - b_zp) + C, times alpha * a_scale * b_scale, requantised when y_zero_point is given, else
// a float Y (divided by y_scale when that is given). A is not transposed (the claim's rule), B
// constant, C an int32 scalar or row of N.

void emit_qgemm(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int a = n.inputs[0], w = n.inputs[3], c = n.has_input(6) ? n.inputs[6] : -1, y = n.outputs[0];
  const Shape& as = b.shape(a);
  const Shape& ws = b.shape(w);
  if (as.size() != 2 || ws.size() != 2) b.unsupported("A and B must be 2-D");
  if (n.attr_int("transA", 0) != 0) b.unsupported("transA");
  const bool tb = n.attr_int("transB", 0) != 0;
  const int64_t M = as[0], K = as[1], N = tb ? ws[0] : ws[1];
  if ((tb ? ws[1] : ws[0]) != K) fail(ErrorCode::kInvalidArgument, n.label(), ": inner dims differ");
  const float alpha = n.attr_float("alpha", 1.0f), a_scale = one_float(b, n, 1, "a_scale");
  const bool scaled = n.has_input(7), quantized = n.has_input(8);
  const float y_scale = scaled ? one_float(b, n, 7, "y_scale") : 1.0f;
  const std::vector<float> b_scale = float_values(known(b, n, 4, "b_scale"));
  const std::vector<int32_t> az = zero_points(b, n, 2, "a_zero_point"), bz = zero_points(b, n, 5, "b_zero_point"),
                             yz = quantized ? zero_points(b, n, 8, "y_zero_point") : std::vector<int32_t>{0};
  if (az.size() != 1 || yz.size() != 1) b.unsupported("a_zero_point and y_zero_point must have one value each");
  if ((b_scale.size() != 1 && static_cast<int64_t>(b_scale.size()) != N) ||
      (bz.size() != 1 && static_cast<int64_t>(bz.size()) != N))
    fail(ErrorCode::kInvalidArgument, n.label(), ": b_scale and b_zero_point must have 1 or ", N, " values");
  std::vector<float> mult;
  for (float bs : b_scale) {
    const float sc = alpha * a_scale * bs;
    mult.push_back(scaled ? sc / y_scale : sc);
  }
  // B as int8 [K, N] with one zero point, as for QLinearMatMul.
  const Tensor& bt = known(b, n, 3, "B");
  std::vector<int32_t> d(static_cast<size_t>(K * N));
  int32_t lo = 0, hi = 0;
  auto at = [&](int64_t k, int64_t j) {
    return static_cast<int32_t>(bt.element_as_double(tb ? j * K + k : k * N + j));
  };
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) {
      const int32_t v = at(k, j) - bz[bz.size() == 1 ? 0 : static_cast<size_t>(j)];
      d[static_cast<size_t>(k * N + j)] = v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  int32_t wzp = 0;
  if (lo < -128 || hi > 127) {
    if (!uniform(bz)) b.unsupported("b_zero_point per column, and B - b_zero_point does not fit int8");
    const int32_t shift = b.type(w) == DT::u8 ? 128 : 0;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) d[static_cast<size_t>(k * N + j)] = at(k, j) - shift;
    wzp = bz[0] - shift;
  }
  const std::vector<int8_t> w8(d.begin(), d.end());
  const int wv = b.host_bytes(plain_md({K, N}, DT::s8), w8.data());
  int cv = -1;
  if (c >= 0) {
    const Tensor* ct = b.constant(c);
    if (!ct || (ct->numel() != 1 && ct->numel() != N))
      b.unsupported(str("C must be a constant of 1 or ", N, " values"));
    std::vector<int32_t> cb(static_cast<size_t>(N));
    for (int64_t j = 0; j < N; ++j) cb[static_cast<size_t>(j)] = ct->data<int32_t>()[ct->numel() == 1 ? 0 : j];
    cv = b.host_bytes(plain_md({1, N}, DT::s32), cb.data());
  }
  dnnl::primitive_attr attr = Builder::attr();
  if (mult.size() == 1)
    attr.set_output_scales(0, mult);
  else
    attr.set_output_scales(1 << 1, mult);
  if (az[0] != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {az[0]});
  if (wzp != 0) attr.set_zero_points(DNNL_ARG_WEIGHTS, 0, {wzp});
  if (quantized) {
    if (yz[0] != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {yz[0]});
    dnnl::post_ops po;
    po.append_eltwise(1.0f, Alg::eltwise_round, 0.0f, 0.0f);
    attr.set_post_ops(po);
  }
  using PD = dnnl::matmul::primitive_desc;
  const MD src = plain_md({M, K}, b.type(a)), wm(Dims{K, N}, DT::s8, Tag::any), dst(Dims{M, N}, b.type(y), Tag::any);
  PD pd = cv >= 0 ? PD(dnnl::matmul::desc(src, wm, b.md(cv), dst), attr, b.engine())
                  : PD(dnnl::matmul::desc(src, wm, dst), attr, b.engine());
  std::vector<std::pair<int, int>> args;
  args.emplace_back(DNNL_ARG_SRC, b.reorder(b.plain_of(a, {M, K}), pd.src_desc()));
  args.emplace_back(DNNL_ARG_WEIGHTS, b.reorder(wv, pd.weights_desc()));
  if (cv >= 0) args.emplace_back(DNNL_ARG_BIAS, b.reorder(cv, pd.bias_desc()));
  const int dv = b.out_view(y, pd.dst_desc());
  args.emplace_back(DNNL_ARG_DST, dv);
  b.step(dnnl::matmul(pd), pd, std::move(args));
  b.define(y, dv);
}

// ---------------------------------------------------------------------------------------------
// Cast between float32, bfloat16 and (from) the integer types oneDNN stores: a reorder (float32
// to bfloat16 rounds to nearest even, as ONNX's Cast)

void emit_cast(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], y = n.outputs[0];
  const int xv = b.view_of(x);
  const DT yt = b.type(y);
  if (b.md(xv).data_type() == yt) {
    b.define(y, xv);
    return;
  }
  const int dv = b.out_view(y, with_type(b.md(xv), yt));
  b.copy(xv, dv);
  b.define(y, dv);
}

}  // namespace

bool emit_quantized(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const std::string& op = n.op_type;
  const bool ms = n.domain == "com.microsoft", ai = n.domain.empty();
  if (ms && op == "QGemm") return emit_qgemm(b, ni), true;
  if (!ai) return false;
  if (op == "QuantizeLinear") return emit_quantize(b, ni), true;
  if (op == "DequantizeLinear") return emit_dequantize(b, ni), true;
  if (op == "QLinearConv") return emit_qlinear_conv(b, ni), true;
  if (op == "QLinearMatMul") return emit_int8_matmul(b, ni, true), true;
  if (op == "MatMulInteger") return emit_int8_matmul(b, ni, false), true;
  if (op == "Cast") return emit_cast(b, ni), true;
  return false;
}

}  // namespace onyx::onednn
