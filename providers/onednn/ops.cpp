// Op emitters: each turns one region node (and the activations / residual Add fused into it)
// into oneDNN primitives through the Builder. Shapes are concrete here (one shape signature).
#include <cmath>
#include <limits>

#include "builder.hpp"
#include "ops/elementwise.hpp"
#include "ops/nn.hpp"
#include "ops/reduce.hpp"

namespace onyx::onednn {

// ---------------------------------------------------------------------------------------------
// Eltwise chains (shared with claims)

namespace {

bool scalar_const(const Graph& g, const Node& n, size_t i, float* out, std::string* why, const char* what) {
  if (!n.has_input(i)) return true;
  const Tensor* t = graph_constant(g, n, i);
  if (!t) {
    *why = str(what, " is not a constant");
    return false;
  }
  if (t->numel() != 1) {
    *why = str(what, " is not a scalar");
    return false;
  }
  *out = static_cast<float>(t->element_as_double(0));
  return true;
}

}  // namespace

bool eltwise_chain(const Graph& g, const Node& n, std::vector<Elt>* out, std::string* why) {
  out->clear();
  if (!n.domain.empty()) {
    *why = "not an ai.onnx op";
    return false;
  }
  const std::string& op = n.op_type;
  auto one = [&](Alg a, float alpha = 0, float beta = 0) {
    out->push_back({a, alpha, beta});
    return true;
  };
  if (op == "Relu") return one(Alg::eltwise_relu);
  if (op == "LeakyRelu") return one(Alg::eltwise_relu, n.attr_float("alpha", 0.01f));
  if (op == "Elu") return one(Alg::eltwise_elu, n.attr_float("alpha", 1.0f));
  if (op == "Tanh") return one(Alg::eltwise_tanh);
  if (op == "Sigmoid") return one(Alg::eltwise_logistic);
  if (op == "Abs") return one(Alg::eltwise_abs);
  if (op == "Sqrt") return one(Alg::eltwise_sqrt);
  if (op == "Exp") return one(Alg::eltwise_exp);
  if (op == "Log") return one(Alg::eltwise_log);
  if (op == "Neg") return one(Alg::eltwise_linear, -1.0f, 0.0f);
  if (op == "Reciprocal") return one(Alg::eltwise_pow, 1.0f, -1.0f);
  if (op == "Round") return one(Alg::eltwise_round);
  if (op == "Mish") return one(Alg::eltwise_mish);
  if (op == "HardSwish") return one(Alg::eltwise_hardswish, 1.0f / 6.0f, 0.5f);
  if (op == "Softplus") return one(Alg::eltwise_soft_relu, 1.0f);
  if (op == "Selu") {
    out->push_back({Alg::eltwise_elu, n.attr_float("alpha", 1.67326319217681884765625f), 0});
    return one(Alg::eltwise_linear, n.attr_float("gamma", 1.05070102214813232421875f), 0.0f);
  }
  if (op == "Celu") {
    const float a = n.attr_float("alpha", 1.0f);
    if (a == 0) {
      *why = "alpha is 0";
      return false;
    }
    out->push_back({Alg::eltwise_linear, 1.0f / a, 0});
    out->push_back({Alg::eltwise_elu, 1.0f, 0});
    return one(Alg::eltwise_linear, a, 0.0f);
  }
  if (op == "HardSigmoid") {
    out->push_back({Alg::eltwise_linear, n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)});
    return one(Alg::eltwise_clip, 0.0f, 1.0f);
  }
  if (op == "Gelu") {
    const std::string a = n.attr_string("approximate", "none");
    if (a == "none") return one(Alg::eltwise_gelu_erf);
    if (a == "tanh") return one(Alg::eltwise_gelu_tanh);
    *why = str("approximate '", a, "'");
    return false;
  }
  if (op == "Clip") {
    float lo = -std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::max();
    if (n.opset < 11) {
      lo = n.attr_float("min", lo);
      hi = n.attr_float("max", hi);
    } else if (!scalar_const(g, n, 1, &lo, why, "min") || !scalar_const(g, n, 2, &hi, why, "max")) {
      return false;
    }
    return one(Alg::eltwise_clip, lo, hi);
  }
  if (op == "Pow") {
    float p = 0;
    if (!n.has_input(1) || !scalar_const(g, n, 1, &p, why, "the exponent")) {
      if (!n.has_input(1)) *why = "no exponent";
      return false;
    }
    if (p == 2.0f) return one(Alg::eltwise_square);
    if (p == 1.0f) return one(Alg::eltwise_linear, 1.0f, 0.0f);
    if (p == 0.5f) return one(Alg::eltwise_sqrt);
    *why = str("exponent ", p, " (oneDNN's pow is exact here only for 0.5, 1 and 2)");
    return false;
  }
  *why = str("no oneDNN eltwise for ", op);
  return false;
}

bool fused_conv_activation(const Node& n, std::vector<Elt>* out, std::string* why) {
  out->clear();
  const std::string act = n.attr_string("activation");
  const std::vector<float> p = n.attr_floats("activation_params");
  if (act == "Relu") {
    out->push_back({Alg::eltwise_relu, 0, 0});
    return true;
  }
  if (act == "LeakyRelu") {
    out->push_back({Alg::eltwise_relu, p.empty() ? 0.01f : p[0], 0});
    return true;
  }
  if (act == "Clip" && p.size() == 2) {
    out->push_back({Alg::eltwise_clip, p[0], p[1]});
    return true;
  }
  if (act == "Sigmoid") {
    out->push_back({Alg::eltwise_logistic, 0, 0});
    return true;
  }
  if (act == "Tanh") {
    out->push_back({Alg::eltwise_tanh, 0, 0});
    return true;
  }
  *why = str("fused activation '", act, "'");
  return false;
}

MatDims matmul_dims(const Builder& b, const Node& n, const Shape& as, const Shape& ws) {
  if (as.empty() || ws.empty()) b.unsupported("scalar operands");
  Dims ad = to_dims(as), wd = to_dims(ws);
  if (as.size() == 1) ad = {1, as[0]};
  if (ws.size() == 1) wd = {ws[0], 1};
  const size_t r = std::max(ad.size(), wd.size());
  if (r > 12) b.unsupported(str("rank ", r, " (oneDNN takes at most 12)"));
  ad = pad_front(ad, r);
  wd = pad_front(wd, r);
  if (ad[r - 1] != wd[r - 2])
    fail(ErrorCode::kInvalidArgument, n.label(), ": inner dims differ (", as.to_string(), " x ", ws.to_string(), ")");
  Dims od(r);
  for (size_t k = 0; k + 2 < r; ++k) {
    if (ad[k] != wd[k] && ad[k] != 1 && wd[k] != 1)
      fail(ErrorCode::kInvalidArgument, n.label(), ": batch dims do not broadcast (", as.to_string(), " x ",
           ws.to_string(), ")");
    od[k] = ad[k] == 1 ? wd[k] : ad[k];
  }
  od[r - 2] = ad[r - 2];
  od[r - 1] = wd[r - 1];
  const int64_t N = od[r - 1];
  // Weights shared by every batch: fold the batch dims into M (one 2-D product with packed
  // weights instead of many small ones).
  bool shared = true;
  for (size_t k = 0; k + 2 < r; ++k) shared &= wd[k] == 1;
  if (shared && r > 2) {
    const int64_t rows = numel_of(ad) / ad[r - 1];
    ad = {rows, ad[r - 1]};
    wd = {wd[r - 2], wd[r - 1]};
    od = {rows, N};
  }
  return {ad, wd, od, N};
}

namespace {

constexpr auto kInfer = dnnl::prop_kind::forward_inference;

Shape spatial(const Shape& s) { return Shape(std::span<const int64_t>(s.data() + 2, s.size() - 2)); }

// ---------------------------------------------------------------------------------------------
// Fusion of following nodes as post-ops

/// Nodes after value `y` that ride on its producer: eltwise activations, and (first) a residual
/// Add through a sum post-op.
struct Tail {
  std::vector<Elt> elts;  // after the sum, if any
  int sum_other = -1;     // value added by the sum post-op
  int out = -1;           // value the fused primitive defines
  std::vector<int> nodes;
};

bool single_output(const Node& n) {
  if (n.outputs.empty() || n.outputs[0] < 0) return false;
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k] >= 0) return false;
  return true;
}

Tail plan_tail(const Builder& b, int y, bool allow_sum) {
  Tail t;
  t.out = y;
  for (;;) {
    const int r = b.sole_reader(t.out);
    if (r < 0) break;
    const Node& c = b.node(r);
    if (!single_output(c) || c.inputs.empty()) break;
    std::vector<Elt> chain;
    std::string why;
    if (c.inputs[0] == t.out && c.op_type != "Pow" && eltwise_chain(b.graph(), c, &chain, &why)) {
      t.elts.insert(t.elts.end(), chain.begin(), chain.end());
      t.nodes.push_back(r);
      t.out = c.outputs[0];
      continue;
    }
    if (allow_sum && t.sum_other < 0 && t.elts.empty() && c.domain.empty() && c.op_type == "Add" && c.opset >= 7 &&
        c.inputs.size() == 2 && c.inputs[0] >= 0 && c.inputs[1] >= 0) {
      const int other = c.inputs[0] == t.out ? c.inputs[1] : c.inputs[0];
      if (other != t.out && b.available(other) && !b.constant(other) && b.shape(other) == b.shape(t.out) &&
          b.shape(c.outputs[0]) == b.shape(t.out)) {
        t.sum_other = other;
        t.nodes.push_back(r);
        t.out = c.outputs[0];
        continue;
      }
    }
    break;
  }
  return t;
}

dnnl::post_ops make_post_ops(const std::vector<Elt>& pre, const Tail* t) {
  dnnl::post_ops po;
  for (const Elt& e : pre) po.append_eltwise(1.0f, e.alg, e.alpha, e.beta);
  if (t) {
    if (t->sum_other >= 0) po.append_sum(1.0f);
    for (const Elt& e : t->elts) po.append_eltwise(1.0f, e.alg, e.alpha, e.beta);
  }
  return po;
}

dnnl::primitive_attr attr_with(const std::vector<Elt>& pre, const Tail* t) {
  dnnl::primitive_attr a = Builder::attr();
  a.set_post_ops(make_post_ops(pre, t));
  return a;
}

bool is_ref(const dnnl::primitive_desc_base& pd) {
  const std::string s = pd.impl_info_str();
  return s.rfind("ref", 0) == 0;
}

/// Creates the primitive descriptor with the tail fused when oneDNN has a fast kernel for it,
/// else without (the tail's nodes are then emitted on their own). `make(tail or null)`.
template <class PD, class F>
PD with_tail(F make, Tail& t, int y) {
  if (!t.nodes.empty()) {
    try {
      PD pd = make(&t);
      if (!is_ref(pd)) return pd;
      PD plain = make(nullptr);
      if (is_ref(plain)) return pd;
      t = Tail{};
      t.out = y;
      return plain;
    } catch (const dnnl::error&) {
    }
  }
  t = Tail{};
  t.out = y;
  return make(nullptr);
}

/// Marks the tail's nodes absorbed and returns the destination view of the fused primitive,
/// whose other arguments are `args` (never overwritten in place).
int tail_dst(Builder& b, const Tail& t, const MD& dst_md, const std::vector<std::pair<int, int>>& args) {
  for (int n : t.nodes) b.absorb(n);
  if (t.sum_other < 0) return b.out_view(t.out, dst_md);
  int ov = b.view_of(t.sum_other);
  bool read_here = false;
  for (const auto& [arg, view] : args) read_here |= b.same_slot(view, ov);
  if (!read_here && b.md(ov) == dst_md && b.exclusive(ov, t.sum_other)) return ov;  // accumulate in place
  if (b.md(ov).dims() != dst_md.dims()) ov = b.plain_of(t.sum_other, dst_md.dims());
  const int d = b.out_view(t.out, dst_md);
  b.copy(ov, d);
  return d;
}

// ---------------------------------------------------------------------------------------------
// Convolutions

Dims window_dims(const Shape& s) { return Dims(s.begin(), s.end()); }
Dims minus_one(const Shape& s) {
  Dims d;
  for (int64_t x : s) d.push_back(x - 1);
  return d;
}

void emit_conv(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const bool fused = n.domain == "onyx";
  const int x = n.inputs[0], w = n.inputs[1], bias = n.has_input(2) ? n.inputs[2] : -1, y = n.outputs[0];
  const Shape& xs = b.shape(x);
  const Shape& ws = b.shape(w);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size()) b.unsupported(str("input rank ", xs.size(), " (1 to 3 spatial dims)"));
  const int64_t group = n.attr_int("group", 1);
  const int64_t N = xs[0], C = xs[1], M = ws[0];
  if (group <= 0 || C % group != 0 || M % group != 0 || ws[1] * group != C)
    fail(ErrorCode::kInvalidArgument, n.label(), ": input channels ", C, " and weight ", ws.to_string(), " do not fit group ", group);
  if (bias >= 0 && b.shape(bias).numel() != M)
    fail(ErrorCode::kInvalidArgument, n.label(), ": bias has ", b.shape(bias).numel(), " values for ", M, " output channels");
  const WindowGeometry g = window_geometry(n, spatial(xs), spatial(ws), false);
  Dims src_d{N, C}, dst_d{N, M}, wd;
  if (group == 1) wd = {M, C};
  else wd = {group, M / group, C / group};
  for (size_t k = 0; k < g.kernel.size(); ++k) {
    src_d.push_back(xs[k + 2]);
    dst_d.push_back(g.out[k]);
    wd.push_back(g.kernel[k]);
  }
  std::vector<Elt> pre;
  std::string why;
  if (fused && !fused_conv_activation(n, &pre, &why)) b.unsupported(why);
  Tail t = plan_tail(b, y, !fused);
  const DT ft = b.type(y);  // float32 or bfloat16 throughout
  using PD = dnnl::convolution_forward::primitive_desc;
  auto make = [&](const Tail* tail) {
    const MD s(src_d, ft, Tag::any), wm(wd, ft, Tag::any), d(dst_d, ft, Tag::any);
    const Dims st = window_dims(g.stride), dil = minus_one(g.dilation), pl = window_dims(g.pad_begin),
               pr = window_dims(g.pad_end);
    if (bias >= 0)
      return PD(dnnl::convolution_forward::desc(kInfer, Alg::convolution_direct, s, wm, MD({M}, ft, Tag::x), d, st, dil,
                                                pl, pr),
                attr_with(pre, tail), b.engine());
    return PD(dnnl::convolution_forward::desc(kInfer, Alg::convolution_direct, s, wm, d, st, dil, pl, pr), attr_with(pre, tail),
              b.engine());
  };
  PD pd = with_tail<PD>(make, t, y);
  std::vector<std::pair<int, int>> args;
  args.emplace_back(DNNL_ARG_SRC, b.reorder(b.view_of(x), pd.src_desc()));
  args.emplace_back(DNNL_ARG_WEIGHTS, b.reorder(b.plain_of(w, wd), pd.weights_desc()));
  if (bias >= 0) args.emplace_back(DNNL_ARG_BIAS, b.reorder(b.plain_of(bias, {M}), pd.bias_desc()));
  const int dv = tail_dst(b, t, pd.dst_desc(), args);
  args.emplace_back(DNNL_ARG_DST, dv);
  b.step(dnnl::convolution_forward(pd), pd, std::move(args));
  b.define(t.out, dv);
}

void emit_conv_transpose(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], w = n.inputs[1], bias = n.has_input(2) ? n.inputs[2] : -1, y = n.outputs[0];
  const Shape& xs = b.shape(x);
  const Shape& ws = b.shape(w);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size()) b.unsupported(str("input rank ", xs.size(), " (1 to 3 spatial dims)"));
  const int64_t group = n.attr_int("group", 1);
  const int64_t N = xs[0], C = xs[1];
  if (group <= 0 || C % group != 0 || ws[0] != C)
    fail(ErrorCode::kInvalidArgument, n.label(), ": input channels ", C, " and weight ", ws.to_string(), " do not fit group ", group);
  const int64_t Mg = ws[1], M = Mg * group, Cg = C / group;
  if (bias >= 0 && b.shape(bias).numel() != M)
    fail(ErrorCode::kInvalidArgument, n.label(), ": bias has ", b.shape(bias).numel(), " values for ", M, " output channels");
  const WindowGeometry g = conv_transpose_geometry(n, spatial(xs), spatial(ws));
  for (size_t k = 0; k < g.kernel.size(); ++k)
    if (g.pad_begin[k] < 0 || g.pad_end[k] <= -g.stride[k]) b.unsupported("negative leading padding (output_shape beyond the full result)");
  const Shape& out = b.shape(y);
  int64_t K = 1;
  for (int64_t k : g.kernel) K *= k;
  // ONNX weights are [C, M/group, k...]; oneDNN's logical order is (g,) O, I, k...
  Dims wd, wst, kst(g.kernel.size(), 1);
  for (size_t k = g.kernel.size(); k-- > 1;) kst[k - 1] = kst[k] * g.kernel[k];
  if (group == 1) {
    wd = {M, C};
    wst = {K, M * K};
  } else {
    wd = {group, Mg, Cg};
    wst = {Cg * Mg * K, K, Mg * K};
  }
  Dims src_d{N, C}, dst_d{N, M};
  for (size_t k = 0; k < g.kernel.size(); ++k) {
    wd.push_back(g.kernel[k]);
    wst.push_back(kst[k]);
    src_d.push_back(xs[k + 2]);
    dst_d.push_back(out[k + 2]);
  }
  Tail t = plan_tail(b, y, true);
  const DT ft = b.type(y);
  using PD = dnnl::deconvolution_forward::primitive_desc;
  auto make = [&](const Tail* tail) {
    const MD s(src_d, ft, Tag::any), wm(wd, ft, Tag::any), d(dst_d, ft, Tag::any);
    const Dims st = window_dims(g.stride), dil = minus_one(g.dilation), pl = window_dims(g.pad_begin),
               pr = window_dims(g.pad_end);
    if (bias >= 0)
      return PD(dnnl::deconvolution_forward::desc(kInfer, Alg::deconvolution_direct, s, wm, MD({M}, ft, Tag::x), d, st,
                                                  dil, pl, pr),
                attr_with({}, tail), b.engine());
    return PD(dnnl::deconvolution_forward::desc(kInfer, Alg::deconvolution_direct, s, wm, d, st, dil, pl, pr), attr_with({}, tail),
              b.engine());
  };
  PD pd = with_tail<PD>(make, t, y);
  std::vector<std::pair<int, int>> args;
  args.emplace_back(DNNL_ARG_SRC, b.reorder(b.view_of(x), pd.src_desc()));
  args.emplace_back(DNNL_ARG_WEIGHTS,
                    b.reorder(b.alias(b.plain_of(w), strided_md(wd, wst, b.type(w))), pd.weights_desc()));
  if (bias >= 0) args.emplace_back(DNNL_ARG_BIAS, b.reorder(b.plain_of(bias, {M}), pd.bias_desc()));
  const int dv = tail_dst(b, t, pd.dst_desc(), args);
  args.emplace_back(DNNL_ARG_DST, dv);
  b.step(dnnl::deconvolution_forward(pd), pd, std::move(args));
  b.define(t.out, dv);
}

// ---------------------------------------------------------------------------------------------
// Binary elementwise

Dims broadcast_dims(const Node& n, const Dims& a, const Dims& c) {
  const size_t r = std::max(a.size(), c.size());
  const Dims x = pad_front(a, r), z = pad_front(c, r);
  Dims o(r);
  for (size_t k = 0; k < r; ++k) {
    if (x[k] != z[k] && x[k] != 1 && z[k] != 1)
      fail(ErrorCode::kInvalidArgument, n.label(), ": shapes do not broadcast in dim ", k, " (", x[k], " vs ", z[k], ")");
    o[k] = x[k] == 1 ? z[k] : x[k];
  }
  return o;
}

/// The value viewed with dims `d` (its shape with leading 1s): its own layout when the dims
/// already match, else dense row-major.
int view_with_dims(Builder& b, int v, const Dims& d) {
  const int cur = b.view_of(v);
  if (b.md(cur).dims() == d) return cur;
  return b.plain_of(v, d);
}

bool commutative(Alg a) { return a == Alg::binary_add || a == Alg::binary_mul || a == Alg::binary_max || a == Alg::binary_min; }

/// dst = a (op) c over dims of equal rank (broadcasting 1s). `out` >= 0: the dst may be that
/// value's frame buffer. With a tail, its post-ops are fused when oneDNN takes them (`*fused`).
/// Returns the dst view (not defined).
int binary_op(Builder& b, Alg alg, int av, int cv, const Dims& od, int out, const Tail* t, float scale_c = 1.0f,
              bool* fused = nullptr) {
  if (commutative(alg) && b.md(av).dims() != od && b.md(cv).dims() == od) std::swap(av, cv);
  if (b.md(av).dims() == b.md(cv).dims() && b.md(av) != b.md(cv)) cv = b.reorder(cv, b.md(av));
  // One element type (oneDNN's binary kernels for bfloat16 take a bfloat16 second operand).
  const DT et = b.md(av).data_type();
  if (b.md(cv).data_type() != et) cv = b.reorder(cv, plain_md(b.md(cv).dims(), et));
  auto make = [&](int a, int c, const Tail* tt) {
    dnnl::primitive_attr at = attr_with({}, tt);
    if (scale_c != 1.0f) at.set_scales(DNNL_ARG_SRC_1, 0, {scale_c});
    const MD dmd = b.md(a).dims() == od ? MD(od, et, Tag::any) : plain_md(od, et);
    return dnnl::binary::primitive_desc(dnnl::binary::desc(alg, b.md(a), b.md(c), dmd), at, b.engine());
  };
  bool with = false;
  auto make_any = [&](int a, int c) {
    if (t) {
      try {
        auto pd = make(a, c, t);
        with = true;
        return pd;
      } catch (const dnnl::error&) {
      }
    }
    with = false;
    return make(a, c, nullptr);
  };
  dnnl::binary::primitive_desc pd;
  try {
    pd = make_any(av, cv);
  } catch (const dnnl::error&) {
    // A blocked layout the binary kernels do not broadcast over: go through plain layouts.
    const Dims ad = b.md(av).dims(), cd = b.md(cv).dims();
    if (!is_plain(b.md(av))) av = b.reorder(av, plain_md(ad, et));
    if (!is_plain(b.md(cv))) cv = b.reorder(cv, plain_md(cd, et));
    pd = make_any(av, cv);
  }
  if (fused) *fused = with;
  const int target = with ? t->out : out;  // a fused tail defines its last value
  const int dv = target >= 0 ? b.out_view(target, pd.dst_desc()) : b.scratch(pd.dst_desc());
  b.step(dnnl::binary(pd), pd, {{DNNL_ARG_SRC_0, av}, {DNNL_ARG_SRC_1, cv}, {DNNL_ARG_DST, dv}});
  return dv;
}

Alg binary_alg(const std::string& op) {
  if (op == "Add" || op == "Sum" || op == "Mean") return Alg::binary_add;
  if (op == "Sub") return Alg::binary_sub;
  if (op == "Mul") return Alg::binary_mul;
  if (op == "Div") return Alg::binary_div;
  if (op == "Max") return Alg::binary_max;
  return Alg::binary_min;
}

void emit_eltwise_chain(Builder& b, int src, const std::vector<Elt>& chain, int y);

void emit_binary(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int y = n.outputs[0];
  const Alg alg = binary_alg(n.op_type);
  std::vector<int> ins;
  for (int v : n.inputs)
    if (v >= 0) ins.push_back(v);
  if (ins.empty()) b.unsupported("no inputs");
  const Dims od = to_dims(b.shape(y));
  if (ins.size() == 1) {
    b.define(y, b.view_of(ins[0]));
    return;
  }
  const bool variadic = n.op_type == "Sum" || n.op_type == "Mean" || ((n.op_type == "Max" || n.op_type == "Min"));
  Tail t = plan_tail(b, y, false);
  const bool mean = n.op_type == "Mean";
  if (!variadic || ins.size() == 2) {
    Shape as = b.shape(ins[0]), cs = b.shape(ins[1]);
    if (!variadic) cs = legacy_broadcast_shape(n, as, cs);
    const size_t r = od.size();
    const Dims ad = pad_front(to_dims(as), r), cd = pad_front(to_dims(cs), r);
    int av = view_with_dims(b, ins[0], ad);
    int cv = view_with_dims(b, ins[1], cd);
    if (mean) {
      const int dv = binary_op(b, alg, av, cv, od, -1, nullptr);
      emit_eltwise_chain(b, dv, {{Alg::eltwise_linear, 0.5f, 0.0f}}, y);
      return;
    }
    if (t.nodes.empty()) {
      b.define(y, binary_op(b, alg, av, cv, od, y, nullptr));
      return;
    }
    bool fused = false;
    const int dv = binary_op(b, alg, av, cv, od, y, &t, 1.0f, &fused);
    if (!fused) {
      b.define(y, dv);
      return;
    }
    for (int k : t.nodes) b.absorb(k);
    b.define(t.out, dv);
    return;
  }
  // Variadic: fold left to right, broadcasting as we go.
  Dims acc_d = to_dims(b.shape(ins[0]));
  int acc = b.view_of(ins[0]);
  for (size_t k = 1; k < ins.size(); ++k) {
    const Dims next = to_dims(b.shape(ins[k]));
    const Dims nd = broadcast_dims(n, acc_d, next);
    if (b.md(acc).dims() != pad_front(acc_d, nd.size())) {
      if (!is_plain(b.md(acc))) acc = b.reorder(acc, plain_md(b.md(acc).dims(), b.md(acc).data_type()));
      acc = b.reshape_plain(acc, pad_front(acc_d, nd.size()));
    }
    const int cv = view_with_dims(b, ins[k], pad_front(next, nd.size()));
    const bool last = k + 1 == ins.size() && !mean;
    acc = binary_op(b, alg, acc, cv, nd, last ? y : -1, nullptr);
    acc_d = nd;
  }
  if (mean) {
    emit_eltwise_chain(b, acc, {{Alg::eltwise_linear, 1.0f / static_cast<float>(ins.size()), 0.0f}}, y);
    return;
  }
  b.define(y, acc);
}

// ---------------------------------------------------------------------------------------------
// Eltwise

/// Runs `chain` on view `src`, defining value y (in place after the first op).
void emit_eltwise_chain(Builder& b, int src, const std::vector<Elt>& chain, int y) {
  int cur = src;
  for (size_t k = 0; k < chain.size(); ++k) {
    const Elt& e = chain[k];
    dnnl::eltwise_forward::primitive_desc pd(dnnl::eltwise_forward::desc(kInfer, e.alg, b.md(cur), e.alpha, e.beta), Builder::attr(),
                                             b.engine());
    const int dv = k == 0 ? b.out_view(y, pd.dst_desc()) : cur;
    b.step(dnnl::eltwise_forward(pd), pd, {{DNNL_ARG_SRC, cur}, {DNNL_ARG_DST, dv}});
    cur = dv;
  }
  if (chain.empty()) {
    b.define(y, src);
    return;
  }
  b.define(y, cur);
}

/// Runs `chain` on view `src` into a fresh scratch view (in place after the first op).
int eltwise_scratch(Builder& b, int src, const std::vector<Elt>& chain) {
  int cur = src;
  for (size_t k = 0; k < chain.size(); ++k) {
    const Elt& e = chain[k];
    dnnl::eltwise_forward::primitive_desc pd(dnnl::eltwise_forward::desc(kInfer, e.alg, b.md(cur), e.alpha, e.beta), Builder::attr(),
                                             b.engine());
    const int dv = k == 0 ? b.scratch(pd.dst_desc()) : cur;
    b.step(dnnl::eltwise_forward(pd), pd, {{DNNL_ARG_SRC, cur}, {DNNL_ARG_DST, dv}});
    cur = dv;
  }
  return cur;
}

void emit_eltwise(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], y = n.outputs[0];
  std::vector<Elt> chain;
  std::string why;
  if (eltwise_chain(b.graph(), n, &chain, &why)) {
    emit_eltwise_chain(b, b.view_of(x), chain, y);
    return;
  }
  if (n.op_type == "Softsign") {
    // x / (1 + |x|)
    const int xv = b.view_of(x);
    const int den = eltwise_scratch(b, xv, {{Alg::eltwise_abs, 0, 0}, {Alg::eltwise_linear, 1.0f, 1.0f}});
    b.define(y, binary_op(b, Alg::binary_div, xv, den, b.md(xv).dims(), y, nullptr));
    return;
  }
  if (n.op_type == "Clip") {
    // Bounds known only at run time: max(x, min) then min(., max), scalars broadcast.
    const Dims od = to_dims(b.shape(y));
    const Dims one(od.size(), 1);
    int cur = b.view_of(x);
    const int lo = n.has_input(1) ? n.inputs[1] : -1, hi = n.has_input(2) ? n.inputs[2] : -1;
    for (int bound : {lo, hi}) {
      if (bound < 0) continue;
      if (b.shape(bound).numel() != 1)
        fail(ErrorCode::kInvalidArgument, n.label(), ": ", bound == lo ? "min" : "max", " must be a scalar");
      const bool last = bound == hi || hi < 0;
      cur = binary_op(b, bound == lo ? Alg::binary_max : Alg::binary_min, cur, b.plain_of(bound, one), od, last ? y : -1, nullptr);
    }
    b.define(y, cur);
    return;
  }
  b.unsupported(why);
}

void emit_prelu(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], s = n.inputs[1], y = n.outputs[0];
  const Shape& xs = b.shape(x);
  const Shape ss = legacy_prelu_slope_shape(n, xs, b.shape(s));
  const Dims xd = to_dims(xs), sd = pad_front(to_dims(ss), xd.size());
  int xv = view_with_dims(b, x, xd);
  const int sv = b.plain_of(s, sd);
  auto make = [&](int v) {
    return dnnl::prelu_forward::primitive_desc(dnnl::prelu_forward::desc(kInfer, b.md(v), b.md(sv)), Builder::attr(), b.engine());
  };
  dnnl::prelu_forward::primitive_desc pd;
  try {
    pd = make(xv);
  } catch (const dnnl::error&) {
    xv = b.plain_of(x, xd);
    pd = make(xv);
  }
  const int dv = b.out_view(y, pd.dst_desc());
  b.step(dnnl::prelu_forward(pd), pd, {{DNNL_ARG_SRC, xv}, {DNNL_ARG_WEIGHTS, b.reorder(sv, pd.weights_desc())}, {DNNL_ARG_DST, dv}});
  b.define(y, dv);
}

// ---------------------------------------------------------------------------------------------
// MatMul and Gemm

void emit_matmul(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int a = n.inputs[0], w = n.inputs[1], y = n.outputs[0];
  const MatDims md = matmul_dims(b, n, b.shape(a), b.shape(w));
  const Dims &ad = md.a, &wd = md.w, &od = md.out;
  const int64_t N = md.n;
  // A following Add of a constant over the last dim becomes the bias.
  int bias = -1, defined = y;
  std::vector<int> absorbed;
  if (const int rd = b.sole_reader(y); rd >= 0) {
    const Node& c = b.node(rd);
    if (c.domain.empty() && c.op_type == "Add" && c.opset >= 7 && single_output(c) && c.inputs.size() == 2) {
      const int other = c.inputs[0] == y ? c.inputs[1] : c.inputs[0];
      const Tensor* k = b.constant(other);
      if (other != y && k && dnnl_type(k->dtype()) == b.type(y) && k->numel() == N && k->rank() <= b.shape(y).size() &&
          k->rank() > 0 && k->shape().back() == N && b.shape(c.outputs[0]) == b.shape(y)) {
        bias = other;
        defined = c.outputs[0];
        absorbed.push_back(rd);
      }
    }
  }
  Tail t = plan_tail(b, defined, false);
  const bool wconst = b.constant(w) != nullptr;
  Dims bd(od.size(), 1);
  bd.back() = N;
  using PD = dnnl::matmul::primitive_desc;
  auto make_with = [&](const Tail* tail, bool any_weights) {
    const DT ft = b.type(y);
    const MD src = plain_md(ad, ft), wm = any_weights ? MD(wd, ft, Tag::any) : plain_md(wd, ft), dst(od, ft, Tag::any);
    if (bias >= 0) return PD(dnnl::matmul::desc(src, wm, plain_md(bd, ft), dst), attr_with({}, tail), b.engine());
    return PD(dnnl::matmul::desc(src, wm, dst), attr_with({}, tail), b.engine());
  };
  auto make = [&](const Tail* tail) {
    if (wconst) {
      try {
        return make_with(tail, true);
      } catch (const dnnl::error&) {
      }
    }
    return make_with(tail, false);
  };
  PD pd = with_tail<PD>(make, t, defined);
  for (int k : absorbed) b.absorb(k);
  std::vector<std::pair<int, int>> args;
  args.emplace_back(DNNL_ARG_SRC, b.reorder(b.plain_of(a, ad), pd.src_desc()));
  args.emplace_back(DNNL_ARG_WEIGHTS, b.reorder(b.plain_of(w, wd), pd.weights_desc()));
  if (bias >= 0) args.emplace_back(DNNL_ARG_BIAS, b.reorder(b.plain_of(bias, bd), pd.bias_desc()));
  const int dv = tail_dst(b, t, pd.dst_desc(), args);
  args.emplace_back(DNNL_ARG_DST, dv);
  b.step(dnnl::matmul(pd), pd, std::move(args));
  b.define(t.out, dv);
}

void emit_gemm(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int a = n.inputs[0], w = n.inputs[1], c = n.has_input(2) ? n.inputs[2] : -1, y = n.outputs[0];
  const Shape& as = b.shape(a);
  const Shape& ws = b.shape(w);
  if (as.size() != 2 || ws.size() != 2) fail(ErrorCode::kInvalidArgument, n.label(), ": A and B must be 2-D");
  const bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  float alpha = n.attr_float("alpha", 1.0f);
  const float beta = n.attr_float("beta", 1.0f);
  const int64_t M = ta ? as[1] : as[0], K = ta ? as[0] : as[1], N = tb ? ws[0] : ws[1];
  if ((tb ? ws[1] : ws[0]) != K) fail(ErrorCode::kInvalidArgument, n.label(), ": inner dims differ");
  const DT ft = b.type(y);
  const MD amd = ta ? strided_md({M, K}, {1, M}, ft) : plain_md({M, K}, ft);
  const MD wmd = tb ? strided_md({K, N}, {1, K}, ft) : plain_md({K, N}, ft);
  int wsrc;  // weights view in (K, N) logical order
  bool alpha_done = false;
  const bool wconst = b.constant(w) != nullptr;
  if (wconst && alpha != 1.0f) {
    std::vector<float> data = b.const_data(b.plain_of(w));
    for (float& f : data) f *= alpha;
    wsrc = b.alias(b.reorder(b.host_const(plain_md(to_dims(ws)), data), plain_md(to_dims(ws), ft)), wmd);
    alpha_done = true;
  } else {
    wsrc = b.alias(b.plain_of(w), wmd);
  }
  const float post_alpha = alpha_done ? 1.0f : alpha;
  // C: a constant becomes the bias (scaled by beta, over alpha when alpha is applied after);
  // otherwise it is added by a binary step after the product.
  int bias = -1, runtime_c = -1;
  Dims cd;
  if (c >= 0 && beta != 0.0f) {
    if (b.shape(c).size() > 2) fail(ErrorCode::kInvalidArgument, n.label(), ": C has rank ", b.shape(c).size());
    cd = pad_front(to_dims(b.shape(c)), 2);
    if ((cd[0] != 1 && cd[0] != M) || (cd[1] != 1 && cd[1] != N))
      fail(ErrorCode::kInvalidArgument, n.label(), ": C ", b.shape(c).to_string(), " does not broadcast to [", M, ",", N, "]");
    if (b.constant(c) && post_alpha != 0.0f) {
      std::vector<float> data = b.const_data(b.plain_of(c, cd));
      const float s = beta / post_alpha;
      if (s != 1.0f)
        for (float& f : data) f *= s;
      bias = b.reorder(b.host_const(plain_md(cd), data), plain_md(cd, ft));
    } else {
      runtime_c = c;
    }
  }
  std::vector<Elt> pre;
  if (post_alpha != 1.0f) pre.push_back({Alg::eltwise_linear, post_alpha, 0.0f});
  Tail t = runtime_c >= 0 ? Tail{} : plan_tail(b, y, false);
  t.out = runtime_c >= 0 ? y : t.out;
  using PD = dnnl::matmul::primitive_desc;
  auto make_with = [&](const Tail* tail, bool any_weights) {
    const MD wm = any_weights ? MD({K, N}, ft, Tag::any) : wmd, dst({M, N}, ft, Tag::any);
    if (bias >= 0) return PD(dnnl::matmul::desc(amd, wm, b.md(bias), dst), attr_with(pre, tail), b.engine());
    return PD(dnnl::matmul::desc(amd, wm, dst), attr_with(pre, tail), b.engine());
  };
  auto make = [&](const Tail* tail) {
    if (wconst) {
      try {
        return make_with(tail, true);
      } catch (const dnnl::error&) {
      }
    }
    return make_with(tail, false);
  };
  PD pd = with_tail<PD>(make, t, y);
  std::vector<std::pair<int, int>> args;
  args.emplace_back(DNNL_ARG_SRC, b.reorder(b.alias(b.plain_of(a), amd), pd.src_desc()));
  args.emplace_back(DNNL_ARG_WEIGHTS, b.reorder(wsrc, pd.weights_desc()));
  if (bias >= 0) args.emplace_back(DNNL_ARG_BIAS, b.reorder(bias, pd.bias_desc()));
  if (runtime_c < 0) {
    const int dv = tail_dst(b, t, pd.dst_desc(), args);
    args.emplace_back(DNNL_ARG_DST, dv);
    b.step(dnnl::matmul(pd), pd, std::move(args));
    b.define(t.out, dv);
    return;
  }
  const int dv = b.scratch(pd.dst_desc());
  args.emplace_back(DNNL_ARG_DST, dv);
  b.step(dnnl::matmul(pd), pd, std::move(args));
  const int sum = binary_op(b, Alg::binary_add, dv, b.plain_of(runtime_c, cd), {M, N}, y, nullptr, beta);
  b.define(y, sum);
}

// ---------------------------------------------------------------------------------------------
// Pooling and normalisation

void emit_pool(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], y = n.outputs[0];
  const Shape& xs = b.shape(x);
  if (xs.size() < 3 || xs.size() > 5) b.unsupported(str("input rank ", xs.size(), " (1 to 3 spatial dims)"));
  const std::string& op = n.op_type;
  const bool global = op.rfind("Global", 0) == 0;
  const bool is_max = op.find("Max") != std::string::npos;
  const bool include_pad = !is_max && n.attr_int("count_include_pad", 0) != 0;
  const Shape in = spatial(xs);
  WindowGeometry g;
  if (global) {
    g.kernel = in;
    g.out = Shape::filled(in.size(), 1);
    g.stride = g.dilation = Shape::filled(in.size(), 1);
    g.pad_begin = g.pad_end = Shape::filled(in.size(), 0);
  } else {
    g = window_geometry(n, in, Shape(n.attr_ints("kernel_shape")), true);
  }
  Dims od{xs[0], xs[1]}, st, ker, dil, pl, pr;
  std::vector<std::vector<float>> factor(in.size());  // include-pad divisor corrections per dim
  bool corrected = false;
  for (size_t k = 0; k < in.size(); ++k) {
    od.push_back(g.out[k]);
    st.push_back(g.stride[k]);
    ker.push_back(g.kernel[k]);
    dil.push_back(g.dilation[k] - 1);
    pl.push_back(g.pad_begin[k]);
    const int64_t span = (g.kernel[k] - 1) * g.dilation[k] + 1;
    // Exactly the padding oneDNN needs to produce g.out windows (ceil_mode may need more).
    pr.push_back(std::max<int64_t>(0, (g.out[k] - 1) * g.stride[k] + span - in[k] - g.pad_begin[k]));
    if (include_pad) {
      // ONNX counts the window's taps inside the explicitly padded input; oneDNN divides by
      // the number of taps: scale by taps / count where the window runs past the padding.
      factor[k].resize(static_cast<size_t>(g.out[k]));
      for (int64_t o = 0; o < g.out[k]; ++o) {
        int64_t count = 0;
        for (int64_t t = 0; t < g.kernel[k]; ++t) {
          const int64_t i = o * g.stride[k] - g.pad_begin[k] + t * g.dilation[k];
          count += i >= -g.pad_begin[k] && i < in[k] + g.pad_end[k];
        }
        factor[k][o] = count ? static_cast<float>(g.kernel[k]) / static_cast<float>(count) : 0.0f;
        corrected |= count != g.kernel[k];
      }
    }
  }
  const Alg alg = is_max ? Alg::pooling_max : include_pad ? Alg::pooling_avg_include_padding : Alg::pooling_avg_exclude_padding;
  Tail t = corrected ? Tail{} : plan_tail(b, y, false);
  t.out = corrected ? y : t.out;
  int xv = b.view_of(x);
  using PD = dnnl::pooling_v2_forward::primitive_desc;
  auto make_on = [&](int v, const Tail* tail) {
    return PD(dnnl::pooling_v2_forward::desc(kInfer, alg, b.md(v), MD(od, b.md(v).data_type(), Tag::any), st, ker, dil,
                                             pl, pr),
              attr_with({}, tail), b.engine());
  };
  PD pd;
  try {
    pd = with_tail<PD>([&](const Tail* tail) { return make_on(xv, tail); }, t, y);
  } catch (const dnnl::error&) {
    xv = b.plain_of(x);
    pd = with_tail<PD>([&](const Tail* tail) { return make_on(xv, tail); }, t, y);
  }
  if (!corrected) {
    const int dv = tail_dst(b, t, pd.dst_desc(), {{DNNL_ARG_SRC, xv}});
    b.step(dnnl::pooling_v2_forward(pd), pd, {{DNNL_ARG_SRC, xv}, {DNNL_ARG_DST, dv}});
    b.define(t.out, dv);
    return;
  }
  const int dv = b.scratch(pd.dst_desc());
  b.step(dnnl::pooling_v2_forward(pd), pd, {{DNNL_ARG_SRC, xv}, {DNNL_ARG_DST, dv}});
  Dims fd{1, 1};
  Shape outs = g.out;
  std::vector<float> f(static_cast<size_t>(outs.numel()), 1.0f);
  for (size_t idx = 0; idx < f.size(); ++idx) {
    size_t rem = idx;
    for (size_t k = in.size(); k-- > 0;) {
      f[idx] *= factor[k][rem % static_cast<size_t>(outs[k])];
      rem /= static_cast<size_t>(outs[k]);
    }
  }
  for (int64_t d : outs) fd.push_back(d);
  const int fv = b.host_const(plain_md(fd), f);
  b.define(y, binary_op(b, Alg::binary_mul, dv, fv, od, y, nullptr));
}

/// Value `v` as dense float32 with dims `d` (normalisation parameters: oneDNN reads float32
/// whatever the data's type).
int f32_of(Builder& b, int v, const Dims& d) { return b.reorder(b.plain_of(v, d), plain_md(d)); }

void emit_batch_norm(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], y = n.outputs[0];
  const Shape& xs = b.shape(x);
  if (xs.size() < 2) b.unsupported("input rank below 2");
  const int64_t C = xs[1];
  for (int k = 1; k <= 4; ++k)
    if (b.shape(n.inputs[k]).numel() != C)
      fail(ErrorCode::kInvalidArgument, n.label(), ": input ", k, " has ", b.shape(n.inputs[k]).numel(), " values for ", C, " channels");
  const float eps = n.attr_float("epsilon", 1e-5f);
  const auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                     dnnl::normalization_flags::use_shift;
  Tail t = plan_tail(b, y, false);
  int xv = b.view_of(x);
  using PD = dnnl::batch_normalization_forward::primitive_desc;
  auto make_on = [&](int v, const Tail* tail) {
    return PD(dnnl::batch_normalization_forward::desc(kInfer, b.md(v), eps, flags), attr_with({}, tail), b.engine());
  };
  PD pd;
  try {
    pd = with_tail<PD>([&](const Tail* tail) { return make_on(xv, tail); }, t, y);
  } catch (const dnnl::error&) {
    xv = b.plain_of(x);
    pd = with_tail<PD>([&](const Tail* tail) { return make_on(xv, tail); }, t, y);
  }
  std::vector<std::pair<int, int>> args{{DNNL_ARG_SRC, xv},
                                        {DNNL_ARG_SCALE, f32_of(b, n.inputs[1], {C})},
                                        {DNNL_ARG_SHIFT, f32_of(b, n.inputs[2], {C})},
                                        {DNNL_ARG_MEAN, f32_of(b, n.inputs[3], {C})},
                                        {DNNL_ARG_VARIANCE, f32_of(b, n.inputs[4], {C})}};
  const int dv = tail_dst(b, t, pd.dst_desc(), args);
  args.emplace_back(DNNL_ARG_DST, dv);
  b.step(dnnl::batch_normalization_forward(pd), pd, std::move(args));
  b.define(t.out, dv);
}

void emit_lrn(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], y = n.outputs[0];
  const int64_t size = n.attr_int("size", 0);
  if (size <= 0) fail(ErrorCode::kInvalidGraph, n.label(), ": size must be positive");
  const float alpha = n.attr_float("alpha", 1e-4f), beta = n.attr_float("beta", 0.75f), bias = n.attr_float("bias", 1.0f);
  int xv = b.view_of(x);
  using PD = dnnl::lrn_forward::primitive_desc;
  auto make = [&](int v) {
    return PD(dnnl::lrn_forward::desc(kInfer, Alg::lrn_across_channels, b.md(v), size, alpha, beta, bias), Builder::attr(), b.engine());
  };
  PD pd;
  try {
    pd = make(xv);
  } catch (const dnnl::error&) {
    xv = b.plain_of(x);
    pd = make(xv);
  }
  const int dv = b.out_view(y, pd.dst_desc());
  b.step(dnnl::lrn_forward(pd), pd, {{DNNL_ARG_SRC, xv}, {DNNL_ARG_DST, dv}});
  b.define(y, dv);
}

void emit_softmax(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], y = n.outputs[0];
  const Shape& xs = b.shape(x);
  const Alg alg = n.op_type == "LogSoftmax" ? Alg::softmax_log : Alg::softmax_accurate;
  int xv, axis;
  if (n.opset >= 13) {
    axis = xs.empty() ? 0 : static_cast<int>(normalize_axis(n.attr_int("axis", -1), static_cast<int64_t>(xs.size()), n.label()));
    xv = view_with_dims(b, x, to_dims(xs));
  } else {
    // Coerced to 2-D at axis: [prod(dims[:axis]), prod(dims[axis:])], softmax along dim 1.
    const AxisSplit s = softmax_split(n, xs);
    xv = b.plain_of(x, {s.outer, s.dim});
    axis = 1;
  }
  using PD = dnnl::softmax_v2_forward::primitive_desc;
  auto make = [&](int v) {
    return PD(
        dnnl::softmax_v2_forward::desc(kInfer, alg, b.md(v), MD(b.md(v).dims(), b.md(v).data_type(), Tag::any), axis),
        Builder::attr(), b.engine());
  };
  PD pd;
  try {
    pd = make(xv);
  } catch (const dnnl::error&) {
    xv = b.plain_of(x, b.md(xv).dims());
    pd = make(xv);
  }
  const int dv = b.out_view(y, pd.dst_desc());
  b.step(dnnl::softmax_v2_forward(pd), pd, {{DNNL_ARG_SRC, xv}, {DNNL_ARG_DST, dv}});
  b.define(y, dv);
}

void emit_layer_norm(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], scale = n.inputs[1], bias = n.has_input(2) ? n.inputs[2] : -1, y = n.outputs[0];
  const int mean_out = n.has_output(1) ? n.outputs[1] : -1, inv_out = n.has_output(2) ? n.outputs[2] : -1;
  const Shape& xs = b.shape(x);
  if (xs.empty()) b.unsupported("scalar input");
  const int64_t axis = normalize_axis(n.attr_int("axis", -1), static_cast<int64_t>(xs.size()), n.label());
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < xs.size(); ++k) (static_cast<int64_t>(k) < axis ? outer : inner) *= xs[k];
  if (b.shape(scale).numel() != inner || (bias >= 0 && b.shape(bias).numel() != inner))
    b.unsupported(str("Scale / B broadcast over the normalised dims (", inner, " values each expected)"));
  const float eps = n.attr_float("epsilon", 1e-5f);
  auto flags = dnnl::normalization_flags::use_scale;
  if (bias >= 0) flags = flags | dnnl::normalization_flags::use_shift;
  const bool stats = mean_out >= 0 || inv_out >= 0;
  const int xv = b.plain_of(x, {outer, inner});
  using PD = dnnl::layer_normalization_forward::primitive_desc;
  PD pd(dnnl::layer_normalization_forward::desc(stats ? dnnl::prop_kind::forward_training : kInfer, b.md(xv), eps, flags),
        Builder::attr(), b.engine());
  const int dv = b.out_view(y, pd.dst_desc());
  std::vector<std::pair<int, int>> args{
      {DNNL_ARG_SRC, xv}, {DNNL_ARG_DST, dv}, {DNNL_ARG_SCALE, f32_of(b, scale, {inner})}};
  if (bias >= 0) args.emplace_back(DNNL_ARG_SHIFT, f32_of(b, bias, {inner}));
  int mv = -1, vv = -1;
  if (stats) {
    mv = mean_out >= 0 ? b.out_view(mean_out, pd.mean_desc()) : b.scratch(pd.mean_desc());
    vv = b.scratch(pd.variance_desc());
    args.emplace_back(DNNL_ARG_MEAN, mv);
    args.emplace_back(DNNL_ARG_VARIANCE, vv);
  }
  b.step(dnnl::layer_normalization_forward(pd), pd, std::move(args));
  b.define(y, dv);
  if (mean_out >= 0) b.define(mean_out, mv);
  if (inv_out >= 0) emit_eltwise_chain(b, vv, {{Alg::eltwise_linear, 1.0f, eps}, {Alg::eltwise_pow, 1.0f, -0.5f}}, inv_out);
}

// ---------------------------------------------------------------------------------------------
// Reductions

void emit_reduce(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], y = n.outputs[0];
  const Shape& xs = b.shape(x);
  const std::string& op = n.op_type;
  std::vector<int64_t> axes;
  const bool from_input = reduce_axes_from_input(n);
  bool noop = false;
  if (!from_input) {
    axes = n.attr_ints("axes");
  } else {
    noop = n.attr_int("noop_with_empty_axes", 0) != 0;
    if (n.has_input(1) && b.shape(n.inputs[1]).numel() > 0) {
      const Tensor* t = b.constant(n.inputs[1]);
      if (!t) b.unsupported("axes are not constant");
      for (int64_t k = 0; k < t->numel(); ++k) axes.push_back(static_cast<int64_t>(t->element_as_double(k)));
    }
  }
  if (xs.empty()) {
    b.define(y, b.view_of(x));
    return;
  }
  const uint64_t mask = reduce_axes_mask(n, static_cast<int64_t>(xs.size()), Shape(axes), noop);
  Dims sd = to_dims(xs), dd = sd;
  bool any = false;
  for (size_t k = 0; k < xs.size(); ++k)
    if (mask & (uint64_t(1) << k)) {
      any |= dd[k] != 1;
      dd[k] = 1;
    }
  Alg alg = Alg::reduction_sum;
  float p = 0;
  std::vector<Elt> post;
  if (op == "ReduceMean") alg = Alg::reduction_mean;
  else if (op == "ReduceMax") alg = Alg::reduction_max;
  else if (op == "ReduceMin") alg = Alg::reduction_min;
  else if (op == "ReduceProd") alg = Alg::reduction_mul;
  else if (op == "ReduceL1") alg = Alg::reduction_norm_lp_sum, p = 1;
  else if (op == "ReduceL2") alg = Alg::reduction_norm_lp_sum, p = 2;
  else if (op == "ReduceSumSquare") alg = Alg::reduction_norm_lp_power_p_sum, p = 2;
  else if (op == "ReduceLogSum") post.push_back({Alg::eltwise_log, 0, 0});
  if (!any) {
    // Nothing to reduce (every reduced dim is 1): the elementwise part only.
    std::vector<Elt> chain;
    if (op == "ReduceL1" || op == "ReduceL2") chain.push_back({Alg::eltwise_abs, 0, 0});
    else if (op == "ReduceSumSquare") chain.push_back({Alg::eltwise_square, 0, 0});
    chain.insert(chain.end(), post.begin(), post.end());
    emit_eltwise_chain(b, b.view_of(x), chain, y);
    return;
  }
  int xv = view_with_dims(b, x, sd);
  using PD = dnnl::reduction::primitive_desc;
  // One reduction of view `src` into value `out` (or scratch when out < 0).
  auto reduce = [&](Alg a, float pp, const std::vector<Elt>& po, int src, int out) {
    auto make = [&](int v) {
      return PD(dnnl::reduction::desc(a, b.md(v), MD(dd, b.md(v).data_type(), Tag::any), pp, 0.0f),
                attr_with(po, nullptr), b.engine());
    };
    PD pd;
    try {
      pd = make(src);
    } catch (const dnnl::error&) {
      if (!is_plain(b.md(src))) src = b.reorder(src, plain_md(b.md(src).dims(), b.md(src).data_type()));
      pd = make(src);
    }
    const int dv = out >= 0 ? b.out_view(out, pd.dst_desc()) : b.scratch(pd.dst_desc());
    b.step(dnnl::reduction(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dv}});
    return dv;
  };
  if (op == "ReduceLogSumExp") {
    // m + log(sum(exp(x - m))) with m = max(x): no overflow for large inputs.
    const int m = reduce(Alg::reduction_max, 0, {}, xv, -1);
    const int d = binary_op(b, Alg::binary_sub, xv, m, sd, -1, nullptr);
    const int e = eltwise_scratch(b, d, {{Alg::eltwise_exp, 0, 0}});
    const int s = reduce(Alg::reduction_sum, 0, {{Alg::eltwise_log, 0, 0}}, e, -1);
    b.define(y, binary_op(b, Alg::binary_add, s, m, dd, y, nullptr));
    return;
  }
  b.define(y, reduce(alg, p, post, xv, y));
}

// ---------------------------------------------------------------------------------------------
// Data movement

void emit_concat(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int y = n.outputs[0];
  const Shape& ys = b.shape(y);
  if (ys.empty()) b.unsupported("scalar output");
  const int axis = static_cast<int>(normalize_axis(n.attr_int("axis", 0), static_cast<int64_t>(ys.size()), n.label()));
  std::vector<int> views;
  for (int v : n.inputs) {
    if (v < 0) continue;
    if (b.shape(v).numel() == 0) continue;
    views.push_back(view_with_dims(b, v, to_dims(b.shape(v))));
  }
  if (views.size() == 1) {
    b.define(y, views[0]);
    return;
  }
  auto make = [&]() {
    std::vector<MD> mds;
    for (int v : views) mds.push_back(b.md(v));
    return dnnl::concat::primitive_desc(MD(to_dims(ys), b.type(y), Tag::any), axis, mds, b.engine(), Builder::attr());
  };
  dnnl::concat::primitive_desc pd;
  try {
    pd = make();
  } catch (const dnnl::error&) {
    for (int& v : views)
      if (!is_plain(b.md(v))) v = b.reorder(v, plain_md(b.md(v).dims(), b.md(v).data_type()));
    pd = make();
  }
  const int dv = b.out_view(y, pd.dst_desc());
  std::vector<std::pair<int, int>> args;
  for (size_t k = 0; k < views.size(); ++k) args.emplace_back(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k), views[k]);
  args.emplace_back(DNNL_ARG_DST, dv);
  b.step(dnnl::concat(pd), pd, std::move(args));
  b.define(y, dv);
}

void emit_transpose(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], y = n.outputs[0];
  const Shape& xs = b.shape(x);
  const size_t r = xs.size();
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm.empty())
    for (size_t k = 0; k < r; ++k) perm.push_back(static_cast<int64_t>(r - 1 - k));
  if (perm.size() != r) fail(ErrorCode::kInvalidGraph, n.label(), ": perm has ", perm.size(), " values for rank ", r);
  if (r <= 1) {
    b.define(y, b.view_of(x));
    return;
  }
  const Dims d = to_dims(xs);
  Dims s(r, 1);
  for (size_t k = r; k-- > 1;) s[k - 1] = s[k] * d[k];
  Dims od(r), os(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t p = perm[k] < 0 ? perm[k] + static_cast<int64_t>(r) : perm[k];
    if (p < 0 || p >= static_cast<int64_t>(r)) fail(ErrorCode::kInvalidGraph, n.label(), ": perm value out of range");
    od[k] = d[p];
    os[k] = s[p];
  }
  const DT et = b.type(x);
  const int src = b.alias(b.plain_of(x), strided_md(od, os, et));
  const int dv = b.out_view(y, plain_md(od, et));
  b.copy(src, dv);
  b.define(y, dv);
}

/// Reshape, Flatten, Squeeze, Unsqueeze: the same bytes with the output's dims.
void emit_reshape(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const int x = n.inputs[0], y = n.outputs[0];
  b.define(y, b.plain_of(x, to_dims(b.shape(y))));
}

/// Identity, Dropout (inference): the same representation.
void emit_identity(Builder& b, int ni) {
  const Node& n = b.node(ni);
  b.define(n.outputs[0], b.view_of(n.inputs[0]));
}

}  // namespace

void emit_node(Builder& b, int ni) {
  const Node& n = b.node(ni);
  const std::string& op = n.op_type;
  if (emit_quantized(b, ni)) return;
  if (n.domain == "onyx") {
    if (op == "FusedConv") return emit_conv(b, ni);
    b.unsupported("unknown onyx op");
  }
  if (op == "Conv") return emit_conv(b, ni);
  if (op == "ConvTranspose") return emit_conv_transpose(b, ni);
  if (op == "MatMul") return emit_matmul(b, ni);
  if (op == "Gemm") return emit_gemm(b, ni);
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool") return emit_pool(b, ni);
  if (op == "BatchNormalization") return emit_batch_norm(b, ni);
  if (op == "LRN") return emit_lrn(b, ni);
  if (op == "Softmax" || op == "LogSoftmax") return emit_softmax(b, ni);
  if (op == "LayerNormalization") return emit_layer_norm(b, ni);
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min" || op == "Sum" || op == "Mean")
    return emit_binary(b, ni);
  if (op == "PRelu") return emit_prelu(b, ni);
  if (op.rfind("Reduce", 0) == 0) return emit_reduce(b, ni);
  if (op == "Concat") return emit_concat(b, ni);
  if (op == "Transpose") return emit_transpose(b, ni);
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") return emit_reshape(b, ni);
  if (op == "Identity" || op == "Dropout") return emit_identity(b, ni);
  return emit_eltwise(b, ni);
}

}  // namespace onyx::onednn
