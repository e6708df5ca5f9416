// Neural-network kernels: Conv (implicit GEMM, or direct for depthwise), pooling, global
// pooling, BatchNormalization, Softmax / LogSoftmax, LayerNormalization, Reduce*.
#include "ops/nn.hpp"

#include <cmath>

#include "ops/reduce.hpp"
#include "vulkan_ep.hpp"

namespace onyx::vulkan {
namespace {

/// Spatial dims of a rank-3 or rank-4 NC... shape as (h, w): 1-D runs as h = 1.
void spatial_hw(const Shape& s, int64_t* h, int64_t* w) {
  *h = s.size() == 4 ? s[2] : 1;
  *w = s.size() == 4 ? s[3] : s[2];
}
Shape spatial_of(const Shape& s) {
  Shape r;
  r.resize(s.size() - 2, 0);
  for (size_t k = 2; k < s.size(); ++k) r[k - 2] = s[k];
  return r;
}
/// (h, w) parameters from a geometry entry of 1 or 2 spatial dims.
std::pair<int64_t, int64_t> hw(const Shape& v, int64_t one) {
  return v.size() == 2 ? std::pair<int64_t, int64_t>{v[0], v[1]} : std::pair<int64_t, int64_t>{one, v[0]};
}

bool check_spatial(const ClaimInfo& c, Decline* why) {
  const int r = in_rank(c, 0);
  if (r != 3 && r != 4)
    return decline(why, r < 0 ? DeclineCode::kDynamicShape : DeclineCode::kUnsupportedAttribute,
                   r < 0 ? std::string("the input's rank is unknown")
                         : str("vulkan runs 1-D and 2-D windows; the input has rank ", r));
  return true;
}

// Conv -----------------------------------------------------------------------------------------

class ConvKernel final : public VkKernel {
 public:
  ConvKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : VkKernel(info, std::move(d), 0), node_(info.node), attrs_(WindowAttrs::of(info.node, false)) {
    group_ = info.node.attr_int("group", 1);
    const std::string act = info.node.attr_string("activation", "");
    if (act == "Relu") act_ = 1;
    if (act == "Clip") {
      act_ = 2;
      const auto p = info.node.attr_floats("activation_params");
      if (p.size() == 2) {
        lo_ = p[0];
        hi_ = p[1];
      }
    }
  }
  void run(KernelContext& ctx, Stream& s) const override {
    const Shape& xs = ctx.input(0).shape();
    const Shape& ws = ctx.input(1).shape();
    Tensor& y = ctx.output(0);
    check_size(label(), y.numel());
    check_size(label(), ctx.input(0).numel());
    const WindowGeometry g = window_geometry(attrs_, node_, spatial_of(xs), spatial_of(ws));
    int64_t h, w, ho, wo;
    spatial_hw(xs, &h, &w);
    spatial_hw(y.shape(), &ho, &wo);
    const auto [kh, kw] = hw(g.kernel, 1);
    const auto [sh, sw] = hw(g.stride, 1);
    const auto [ph, pw] = hw(g.pad_begin, 0);
    const auto [dh, dw] = hw(g.dilation, 1);
    const int64_t n = xs[0], cin = xs[1], cout = ws[0];
    if (group_ <= 0 || cin % group_ || cout % group_ || ws[1] * group_ != cin)
      fail(ErrorCode::kInvalidArgument, label(), ": Conv with group ", group_, " does not fit input channels ", cin,
           " and weight ", ws.to_string());
    const int64_t cin_g = cin / group_, cout_g = cout / group_;
    if (!y.numel()) return;
    const BufRef X = in(ctx, 0), W = in(ctx, 1);
    const bool has_bias = ctx.has_input(2);
    const BufRef B = has_bias ? in(ctx, 2) : W;
    Push p;
    if (cin_g == 1) {
      p.i(y.numel()).i(cout).i(cout_g).i(group_);
      p.i(cin).i(h).i(w).i(cin_g);
      p.i(ho).i(wo).i(kh).i(kw);
      p.i(sh).i(sw).i(ph).i(pw);
      p.i(dh).i(dw).i(has_bias).i(act_);
      p.f(lo_).f(hi_);
      s.dispatch_1d(pipe("conv_direct", 4), {X, W, B, device_ref(y, "output")}, p.w, p.bytes(), y.numel());
      return;
    }
    p.i(cout_g).i(ho * wo).i(cin_g * kh * kw).i(group_);
    p.i(cin).i(h).i(w).i(cin_g);
    p.i(ho).i(wo).i(kh).i(kw);
    p.i(sh).i(sw).i(ph).i(pw);
    p.i(dh).i(dw).i(has_bias).i(act_);
    p.f(lo_).f(hi_);
    Epilogue e;
    e.half = half_;
    e.conv = true;
    e.groups = group_;
    e.has_bias = has_bias;
    e.act = act_;
    e.lo = lo_;
    e.hi = hi_;
    record_matrix_kernel(s, *dev_, p, W, X, B, device_ref(y, "output"), static_cast<uint32_t>((ho * wo + 63) / 64),
                         static_cast<uint32_t>((cout_g + 63) / 64), n * group_, cout_g, ho * wo, cin_g * kh * kw, e);
  }

 private:
  const Node& node_;
  WindowAttrs attrs_;  // read once (no attribute lookups per run)
  int64_t group_ = 1;
  int act_ = 0;
  float lo_ = 0, hi_ = 0;
};

bool check_conv(const ClaimInfo& c, Decline* why) {
  if (!check_spatial(c, why)) return false;
  if (in_rank(c, 1) != in_rank(c, 0))
    return decline(why, DeclineCode::kDynamicShape, "the weight's rank is unknown or differs");
  for (int64_t d : in_type(c, 1)->shape)
    if (d < 0) return decline(why, DeclineCode::kDynamicShape, "the weight's shape is not known when loading");
  const std::string act = c.node.attr_string("activation", "");
  if (!act.empty() && act != "Relu" && act != "Clip")
    return decline(why, DeclineCode::kUnsupportedAttribute, "fused activation '" + act + "'");
  return true;
}

std::unique_ptr<Kernel> make_conv(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<ConvKernel>(info, d);
}

// ConvTranspose --------------------------------------------------------------------------------

/// 1-D and 2-D ConvTranspose (groups, dilations, pads, output_padding / output_shape through the
/// shared geometry), one output element per invocation.
class ConvTransposeKernel final : public VkKernel {
 public:
  ConvTransposeKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : VkKernel(info, std::move(d), 0), node_(info.node), group_(info.node.attr_int("group", 1)) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Shape& xs = ctx.input(0).shape();
    const Shape& ws = ctx.input(1).shape();
    Tensor& y = ctx.output(0);
    check_size(label(), y.numel());
    check_size(label(), ctx.input(0).numel());
    const int64_t n = xs[0], cin = xs[1];
    if (group_ <= 0 || cin % group_ || ws[0] != cin)
      fail(ErrorCode::kInvalidArgument, label(), ": input channels ", cin, " do not match weight ", ws.to_string(), " and group ", group_);
    const int64_t cin_g = cin / group_, cout_g = ws[1], cout = cout_g * group_;
    const WindowGeometry g = conv_transpose_geometry(node_, spatial_of(xs), spatial_of(ws));
    int64_t h, w, ho, wo;
    spatial_hw(xs, &h, &w);
    spatial_hw(y.shape(), &ho, &wo);
    if (y.shape()[1] != cout || g.out.numel() != ho * wo)
      fail(ErrorCode::kInvalidArgument, label(), ": output ", y.shape().to_string(), " does not match the geometry");
    const auto [kh, kw] = hw(g.kernel, 1);
    const auto [sh, sw] = hw(g.stride, 1);
    const auto [ph, pw] = hw(g.pad_begin, 0);
    const auto [dh, dw] = hw(g.dilation, 1);
    if (!y.numel()) return;
    (void)n;
    const BufRef X = in(ctx, 0), W = in(ctx, 1);
    const bool has_bias = ctx.has_input(2);
    const BufRef B = has_bias ? in(ctx, 2) : W;
    Push p;
    p.i(y.numel()).i(cout).i(cout_g).i(group_);
    p.i(cin).i(h).i(w).i(cin_g);
    p.i(ho).i(wo).i(kh).i(kw);
    p.i(sh).i(sw).i(ph).i(pw);
    p.i(dh).i(dw).i(has_bias).i(0);
    s.dispatch_1d(pipe("conv_transpose", 4), {X, W, B, device_ref(y, "output")}, p.w, p.bytes(), y.numel());
  }

 private:
  const Node& node_;
  int64_t group_;
};

bool check_conv_transpose(const ClaimInfo& c, Decline* why) {
  if (!check_spatial(c, why)) return false;
  if (in_rank(c, 1) != in_rank(c, 0))
    return decline(why, DeclineCode::kDynamicShape, "the weight's rank is unknown or differs");
  const TypeInfo* o = out_type(c, 0);
  if (!o || !o->has_shape) return decline(why, DeclineCode::kDynamicShape, "the output's rank is unknown");
  return true;
}

std::unique_ptr<Kernel> make_conv_transpose(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<ConvTransposeKernel>(info, d);
}

// Pooling --------------------------------------------------------------------------------------

class PoolKernel final : public VkKernel {
 public:
  PoolKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : VkKernel(info, std::move(d), 0), node_(info.node), attrs_(WindowAttrs::of(info.node, true)) {
    const bool avg = info.node.op_type == "AveragePool";
    mode_ = !avg ? 0 : info.node.attr_int("count_include_pad", 0) ? 2 : 1;
    kernel_ = Shape(info.node.attr_ints("kernel_shape"));
  }
  void run(KernelContext& ctx, Stream& s) const override {
    const Shape& xs = ctx.input(0).shape();
    Tensor& y = ctx.output(0);
    check_size(label(), ctx.input(0).numel());
    const WindowGeometry g = window_geometry(attrs_, node_, spatial_of(xs), kernel_);
    int64_t h, w, ho, wo;
    spatial_hw(xs, &h, &w);
    spatial_hw(y.shape(), &ho, &wo);
    const auto [kh, kw] = hw(g.kernel, 1);
    const auto [sh, sw] = hw(g.stride, 1);
    const auto [ph, pw] = hw(g.pad_begin, 0);
    const auto [phe, pwe] = hw(g.pad_end, 0);
    const auto [dh, dw] = hw(g.dilation, 1);
    Push p;
    p.i(y.numel()).i(mode_).i(h).i(w);
    p.i(ho).i(wo).i(kh).i(kw);
    p.i(sh).i(sw).i(ph).i(pw);
    p.i(dh).i(dw).i(phe).i(pwe);
    s.dispatch_1d(pipe("pool", 2), {in(ctx, 0), device_ref(y, "output")}, p.w, p.bytes(), y.numel());
  }

 private:
  const Node& node_;
  WindowAttrs attrs_;  // read once (no attribute lookups per run)
  int mode_ = 0;
  Shape kernel_;
};

bool check_pool(const ClaimInfo& c, Decline* why) {
  if (!check_spatial(c, why)) return false;
  const Node& n = c.node;
  if (n.has_output(1))
    return decline(why, DeclineCode::kUnsupportedAttribute, "MaxPool's Indices output is not supported");
  if (n.attr_ints("kernel_shape").size() + 2 != static_cast<size_t>(in_rank(c, 0)))
    return decline(why, DeclineCode::kUnsupportedAttribute, "kernel_shape does not match the input's spatial rank");
  if (n.op_type == "AveragePool")
    for (int64_t d : n.attr_ints("dilations"))
      if (d != 1) return decline(why, DeclineCode::kUnsupportedAttribute, "AveragePool with dilations");
  return true;
}

std::unique_ptr<Kernel> make_pool(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<PoolKernel>(info, d);
}

class GlobalPoolKernel final : public VkKernel {
 public:
  GlobalPoolKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : VkKernel(info, std::move(d), 0), max_(info.node.op_type == "GlobalMaxPool") {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    check_size(label(), x.numel());
    const int64_t planes = x.dim(0) * x.dim(1);
    const int64_t size = planes ? x.numel() / planes : 0;
    if (!planes) return;
    if (!size) fail(ErrorCode::kInvalidArgument, label(), ": global pooling over an empty spatial extent");
    Push p;
    p.i(planes).i(size).i(max_ ? 1 : 0);
    // One work group per plane (spread over x and y within the device limits).
    s.dispatch_1d(pipe("global_pool", 2), {in(ctx, 0), device_ref(y, "output")}, p.w, p.bytes(), planes, 1);
  }

 private:
  bool max_;
};

bool check_global_pool(const ClaimInfo& c, Decline* why) {
  if (in_rank(c, 0) < 2) return decline(why, DeclineCode::kDynamicShape, "the input's rank is unknown");
  return true;
}

std::unique_ptr<Kernel> make_global_pool(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<GlobalPoolKernel>(info, d);
}

// BatchNormalization ---------------------------------------------------------------------------

class BatchNormKernel final : public VkKernel {
 public:
  BatchNormKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d) : VkKernel(info, std::move(d), 0b11110) {
    const float eps = info.node.attr_float("epsilon", 1e-5f);
    const Tensor* sc = info.constant(1);
    const Tensor* b = info.constant(2);
    const Tensor* mean = info.constant(3);
    const Tensor* var = info.constant(4);
    if (!sc || !b || !mean || !var)
      fail(ErrorCode::kNotImplemented, "vulkan: BatchNormalization needs constant statistics");
    c_ = sc->numel();
    if (b->numel() != c_ || mean->numel() != c_ || var->numel() != c_)
      fail(ErrorCode::kInvalidGraph, label(), ": BatchNormalization's scale, B, mean and var differ in size");
    // The folded map stays float32 (its own buffers) whatever the storage of X and Y.
    std::vector<float> scale(c_), shift(c_);
    for (int64_t k = 0; k < c_; ++k) {
      const double s = sc->element_as_double(k), v = var->element_as_double(k);
      scale[k] = static_cast<float>(s) / std::sqrt(static_cast<float>(v) + eps);
      const float mu = static_cast<float>(mean->element_as_double(k));
      shift[k] = static_cast<float>(b->element_as_double(k)) - mu * scale[k];
    }
    scale_ = upload(scale.data(), scale.size() * 4);
    shift_ = upload(shift.data(), shift.size() * 4);
  }
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    check_size(label(), x.numel());
    if (x.rank() < 2 || x.dim(1) != c_)
      fail(ErrorCode::kInvalidArgument, label(), ": input ", x.shape().to_string(), " does not have ", c_, " channels");
    const int64_t inner = x.numel() ? x.numel() / (x.dim(0) * c_) : 1;
    Push p;
    p.i(x.numel()).i(c_).i(inner);
    s.dispatch_1d(pipe("channel_affine", 4), {in(ctx, 0), scale_, shift_, device_ref(y, "output")}, p.w,
                  p.bytes(), x.numel());
  }

 private:
  int64_t c_ = 0;
  BufRef scale_, shift_;
};

bool check_batch_norm(const ClaimInfo& c, Decline* why) {
  const Node& n = c.node;
  if (n.attr_int("training_mode", 0) != 0 || n.has_output(1) || n.has_output(2))
    return decline(why, DeclineCode::kUnsupportedAttribute, "BatchNormalization in training mode");
  if (n.opset < 9 && n.attr_int("spatial", 1) == 0)
    return decline(why, DeclineCode::kUnsupportedAttribute, "BatchNormalization with spatial=0");
  for (size_t i = 1; i <= 4; ++i)
    if (!is_constant(c.graph, n, i))
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("BatchNormalization input ", i, " is not a constant"));
  if (in_rank(c, 0) < 2) return decline(why, DeclineCode::kDynamicShape, "the input's rank is unknown");
  return true;
}

std::unique_ptr<Kernel> make_batch_norm(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<BatchNormKernel>(info, d);
}

// Softmax --------------------------------------------------------------------------------------

class SoftmaxKernel final : public VkKernel {
 public:
  SoftmaxKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : VkKernel(info, std::move(d), 0), node_(info.node), log_(info.node.op_type == "LogSoftmax") {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    check_size(label(), x.numel());
    const AxisSplit sp = softmax_split(node_, x.shape());
    const int64_t rows = sp.outer * sp.inner;
    if (!rows || !sp.dim) return;
    Push p;
    p.i(rows).i(sp.dim).i(sp.inner).i(log_ ? 1 : 0);
    // A work group per row.
    s.dispatch_1d(pipe("softmax", 2), {in(ctx, 0), device_ref(y, "output")}, p.w, p.bytes(), rows, 1);
  }

 private:
  const Node& node_;
  bool log_;
};

std::unique_ptr<Kernel> make_softmax(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<SoftmaxKernel>(info, d);
}

// LayerNormalization ---------------------------------------------------------------------------

class LayerNormKernel final : public VkKernel {
 public:
  LayerNormKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : VkKernel(info, std::move(d), 0),
        axis_(info.node.attr_int("axis", -1)),
        eps_(info.node.attr_float("epsilon", 1e-5f)) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    check_size(label(), x.numel());
    const int64_t r = static_cast<int64_t>(x.rank());
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    if (axis < 0 || axis >= r)
      fail(ErrorCode::kInvalidArgument, label(), ": axis ", axis_, " is out of range for rank ", r);
    int64_t d = 1;
    for (int64_t k = axis; k < r; ++k) d *= x.dim(k);
    if (ctx.input(1).numel() != d || (ctx.has_input(2) && ctx.input(2).numel() != d))
      fail(ErrorCode::kNotImplemented, "vulkan: ", label(), ": Scale and B must have the normalized shape (", d,
           " elements); broadcasting them is not supported");
    const int64_t rows = d ? x.numel() / d : 0;
    if (!rows) return;
    const BufRef G = in(ctx, 1);
    const bool has_b = ctx.has_input(2);
    Push p;
    p.i(rows).i(d).f(eps_).i(has_b ? 1 : 0);
    s.dispatch_1d(pipe("layer_norm", 4), {in(ctx, 0), G, has_b ? in(ctx, 2) : G, device_ref(y, "output")}, p.w,
                  p.bytes(), rows, 1);  // a group per row
  }

 private:
  int64_t axis_;
  float eps_;
};

bool check_layer_norm(const ClaimInfo& c, Decline* why) {
  if (c.node.has_output(1) || c.node.has_output(2))
    return decline(why, DeclineCode::kUnsupportedAttribute,
                   "LayerNormalization's Mean / InvStdDev outputs are not supported");
  if (!check_rank_known(c, why)) return false;
  const int r = in_rank(c, 0);
  int64_t axis = c.node.attr_int("axis", -1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return decline(why, DeclineCode::kUnsupportedAttribute, "axis out of range");
  // Scale (and B) must cover the normalized dims exactly (no broadcasting).
  for (size_t i = 1; i <= 2; ++i) {
    if (!c.node.has_input(i)) continue;
    const TypeInfo* t = in_type(c, i);
    if (!t->has_shape || static_cast<int64_t>(t->shape.size()) != r - axis)
      return decline(why, DeclineCode::kUnsupportedAttribute,
                     str("LayerNormalization input ", i, " does not have the normalized shape"));
  }
  return true;
}

std::unique_ptr<Kernel> make_layer_norm(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<LayerNormKernel>(info, d);
}

// Reduce* --------------------------------------------------------------------------------------

struct ReduceOp {
  const char* name;
  int code;
  float init;
};
constexpr ReduceOp kReduce[] = {
    {"ReduceSum", 0, 0.0f},
    {"ReduceMean", 1, 0.0f},
    {"ReduceMax", 2, -3.402823466e38f},
    {"ReduceMin", 3, 3.402823466e38f},
    {"ReduceProd", 4, 1.0f},
    {"ReduceL1", 5, 0.0f},
    {"ReduceL2", 6, 0.0f},
    {"ReduceSumSquare", 7, 0.0f},
    {"ReduceLogSum", 8, 0.0f},
    {"ReduceLogSumExp", 9, 0.0f},
};

class ReduceKernel final : public VkKernel {
 public:
  ReduceKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d, const ReduceOp& op)
      : VkKernel(info, std::move(d), 0b10), node_(info.node), op_(op) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    check_size(label(), x.numel());
    const bool from_input = reduce_axes_from_input(node_);
    std::vector<int64_t> axes;
    if (!from_input) {
      axes = node_.attr_ints("axes");
    } else if (ctx.has_input(1)) {
      const Tensor& a = ctx.input(1);
      if (!a.on_host()) fail(ErrorCode::kRuntime, "vulkan: internal error: ", label(), ": axes are not in host memory");
      for (int64_t k = 0; k < a.numel(); ++k) axes.push_back(static_cast<int64_t>(a.element_as_double(k)));
    }
    const bool noop = from_input && node_.attr_int("noop_with_empty_axes", 0) != 0;
    const int64_t r = static_cast<int64_t>(x.rank());
    const uint64_t mask = reduce_axes_mask(node_, r, Shape(axes), noop);
    const auto st = strides_of(x.shape());
    std::vector<int64_t> kd, ks, rd, rs;
    int64_t count = 1;
    for (int64_t k = 0; k < r; ++k) {
      if (mask & (uint64_t(1) << k)) {
        rd.push_back(x.dim(k));
        rs.push_back(st[k]);
        count *= x.dim(k);
      } else {
        kd.push_back(x.dim(k));
        ks.push_back(st[k]);
      }
    }
    if (!y.numel()) return;
    if (kd.empty()) {
      kd.push_back(1);
      ks.push_back(0);
    }
    Push p;
    p.i(y.numel()).i(op_.code).i(static_cast<int64_t>(kd.size())).i(static_cast<int64_t>(rd.size()));
    p.six(kd, 1).six(ks, 0).six(rd, 1).six(rs, 0);
    p.i(count).f(op_.init);
    s.dispatch_1d(pipe("reduce", 2), {in(ctx, 0), device_ref(y, "output")}, p.w, p.bytes(), y.numel());
  }

 private:
  const Node& node_;
  ReduceOp op_;
};

bool check_reduce(const ClaimInfo& c, Decline* why) {
  if (!check_rank_known(c, why)) return false;
  if (reduce_axes_from_input(c.node) && c.node.has_input(1)) {
    const TypeInfo* t = in_type(c, 1);
    if (!t || t->dtype != DType::kInt64) return decline(why, DeclineCode::kUnsupportedType, "axes must be int64");
  }
  return true;
}

template <int I>
std::unique_ptr<Kernel> make_reduce(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<ReduceKernel>(info, d, kReduce[I]);
}

using ReduceFactory = std::unique_ptr<Kernel> (*)(const KernelCreateInfo&, const std::shared_ptr<Device>&);
constexpr ReduceFactory kReduceFactories[] = {make_reduce<0>, make_reduce<1>, make_reduce<2>, make_reduce<3>,
                                              make_reduce<4>, make_reduce<5>, make_reduce<6>, make_reduce<7>,
                                              make_reduce<8>, make_reduce<9>};

}  // namespace

void add_nn_ops(std::vector<OpDef>& defs) {
  defs.push_back({"", "Conv", 1, kMaxOpset, 0, 0, check_conv, make_conv});
  defs.push_back({"", "ConvTranspose", 1, kMaxOpset, 0, 0, check_conv_transpose, make_conv_transpose});
  defs.push_back({"onyx", "FusedConv", 1, 1, 0, 0, check_conv, make_conv});
  defs.push_back({"", "MaxPool", 1, kMaxOpset, 0, 0, check_pool, make_pool});
  defs.push_back({"", "AveragePool", 1, kMaxOpset, 0, 0, check_pool, make_pool});
  defs.push_back({"", "GlobalAveragePool", 1, kMaxOpset, 0, 0, check_global_pool, make_global_pool});
  defs.push_back({"", "GlobalMaxPool", 1, kMaxOpset, 0, 0, check_global_pool, make_global_pool});
  defs.push_back({"", "BatchNormalization", 7, kMaxOpset, 0, 0b11110, check_batch_norm, make_batch_norm});
  defs.push_back({"", "Softmax", 1, kMaxOpset, 0, 0, check_rank_known, make_softmax});
  defs.push_back({"", "LogSoftmax", 1, kMaxOpset, 0, 0, check_rank_known, make_softmax});
  defs.push_back({"", "LayerNormalization", 17, kMaxOpset, 0, 0, check_layer_norm, make_layer_norm});
  for (size_t k = 0; k < std::size(kReduce); ++k)
    defs.push_back({"", kReduce[k].name, 1, kMaxOpset, 0b10, 0b10, check_reduce, kReduceFactories[k]});
}

}  // namespace onyx::vulkan
