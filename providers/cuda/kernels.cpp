// The CUDA EP's kernels built on onyx's own CUDA code (launch.hpp): elementwise and broadcast
// arithmetic, activations, Where, Cast, data movement (Tile, DepthToSpace, SpaceToDepth too),
// Gather, GatherElements, CumSum, Pad, Resize, Softmax, LayerNormalization, Instance- and GroupNormalization, Reduce*, ArgMax/ArgMin,
// onyx::Attention. Shapes come from the executor (already inferred); kernels only queue work on
// the run's stream.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ops/image.hpp"
#include "ops/index.hpp"
#include "runtime.hpp"
#include "quant_kernels.hpp"
#include "transformer_kernels.hpp"

namespace onyx::cuda {
namespace {

Tensor& out(KernelContext& ctx, size_t i, const Node& n) {
  if (!ctx.output_ready(i)) fail(ErrorCode::kRuntime, "cuda: ", n.label(), ": output ", i, " was not shaped by inference");
  Tensor& t = ctx.output(i);
  if (t.on_host() && t.nbytes()) fail(ErrorCode::kRuntime, "cuda: internal error: ", n.label(), " output ", i, " is in host memory");
  return t;
}

int64_t prod(const Shape& s, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t k = b; k < e; ++k) p *= s[k];
  return p;
}

// ---------------------------------------------------------------------------------------------
// Elementwise

struct UnarySpec {
  UnaryOp op;
  float a, b;
};

class UnaryKernel final : public CudaKernel {
 public:
  UnaryKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s, UnarySpec spec) : CudaKernel(info, std::move(s)), spec_(spec) {
    const Node& n = info.node;
    clip_ = n.op_type == "Clip";
    if (clip_ && n.opset < 11) {
      spec_.a = n.attr_float("min", -INFINITY);
      spec_.b = n.attr_float("max", INFINITY);
      clip_ = false;
    }
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    UnarySpec s = spec_;
    if (clip_) {
      s.a = -INFINITY;
      s.b = INFINITY;
      if (ctx.has_input(1) || host_constant(1)) {
        const auto v = host_floats(ctx, 1);
        if (v.size() != 1) fail(ErrorCode::kInvalidArgument, node_.label(), ": min must be a scalar");
        s.a = static_cast<float>(v[0]);
      }
      if (ctx.has_input(2) || host_constant(2)) {
        const auto v = host_floats(ctx, 2);
        if (v.size() != 1) fail(ErrorCode::kInvalidArgument, node_.label(), ": max must be a scalar");
        s.b = static_cast<float>(v[0]);
      }
    }
    unary(to_ty(x.dtype()), s.op, dev(ctx, 0), y.raw_data(), x.numel(), s.a, s.b, stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  UnarySpec spec_;
  bool clip_ = false;
};

class BinaryKernel final : public CudaKernel {
 public:
  BinaryKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s, BinaryOp op) : CudaKernel(info, std::move(s)), op_(op) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& a = in(ctx, 0);
    const Tensor& b = in(ctx, 1);
    Tensor& y = out(ctx, 0, node_);
    binary(op_, to_ty(a.dtype()), dev(ctx, 0), broadcast_view(a.shape(), y.shape()), dev(ctx, 1),
           broadcast_view(b.shape(), y.shape()), y.raw_data(), y.numel(), stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  BinaryOp op_;
};

/// Sum, Mean, and Max / Min of any number of inputs (numpy broadcasting): the first two combined
/// into Y, each further input into Y in place; Mean then scales by 1 / count.
class VariadicKernel final : public CudaKernel {
 public:
  VariadicKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s, BinaryOp op, bool mean)
      : CudaKernel(info, std::move(s)), op_(op), mean_(mean) {}
  void compute(KernelContext& ctx) const override {
    Tensor& y = out(ctx, 0, node_);
    if (y.numel() == 0) return;
    const size_t n = node_.inputs.size();
    const Ty ty = to_ty(y.dtype());
    const Strided yv = contiguous(y.shape());
    if (n == 1) {
      strided_copy(dev(ctx, 0), broadcast_view(in(ctx, 0).shape(), y.shape()), y.raw_data(), yv, dtype_size(y.dtype()), y.numel(),
                   stream(ctx));
    } else {
      binary(op_, ty, dev(ctx, 0), broadcast_view(in(ctx, 0).shape(), y.shape()), dev(ctx, 1), broadcast_view(in(ctx, 1).shape(), y.shape()),
             y.raw_data(), y.numel(), stream(ctx));
      for (size_t i = 2; i < n; ++i)
        binary(op_, ty, y.raw_data(), yv, dev(ctx, i), broadcast_view(in(ctx, i).shape(), y.shape()), y.raw_data(), y.numel(), stream(ctx));
    }
    if (mean_ && n > 1) {
      // 1 / count in the output's type (a 16-bit pattern for float16 / bfloat16).
      Tensor scale = shared_->allocate(y.dtype(), Shape{});
      const float inv = 1.0f / static_cast<float>(n);
      const uint16_t inv16 = y.dtype() == DType::kBFloat16 ? BFloat16::from_float(inv) : Float16::from_float(inv);
      if (y.dtype() == DType::kFloat) fill(scale.raw_data(), &inv, sizeof inv, 1, stream(ctx));
      else fill(scale.raw_data(), &inv16, sizeof inv16, 1, stream(ctx));
      binary(BinaryOp::kMul, ty, y.raw_data(), yv, scale.raw_data(), broadcast_view(Shape{}, y.shape()), y.raw_data(), y.numel(),
             stream(ctx));
    }
    ONYX_CUDA_LAUNCHED();
  }

 private:
  BinaryOp op_;
  bool mean_;
};

class WhereKernel final : public CudaKernel {
 public:
  using CudaKernel::CudaKernel;
  void compute(KernelContext& ctx) const override {
    Tensor& y = out(ctx, 0, node_);
    where(static_cast<const uint8_t*>(dev(ctx, 0)), broadcast_view(in(ctx, 0).shape(), y.shape()), dev(ctx, 1),
          broadcast_view(in(ctx, 1).shape(), y.shape()), dev(ctx, 2), broadcast_view(in(ctx, 2).shape(), y.shape()), y.raw_data(),
          dtype_size(y.dtype()), y.numel(), stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }
};

class CastKernel final : public CudaKernel {
 public:
  using CudaKernel::CudaKernel;
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    cast(to_ty(x.dtype()), dev(ctx, 0), to_ty(y.dtype()), y.raw_data(), x.numel(), stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }
};

// ---------------------------------------------------------------------------------------------
// Data movement

/// Identity, Dropout (inference), Reshape, Flatten, Squeeze, Unsqueeze: the bytes are unchanged.
class SameBytesKernel final : public CudaKernel {
 public:
  using CudaKernel::CudaKernel;
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    if (y.nbytes() != x.nbytes()) fail(ErrorCode::kRuntime, "cuda: ", node_.label(), ": output size differs from the input's");
    if (x.nbytes() && y.raw_data() != x.raw_data())
      ONYX_CUDA_CHECK(cudaMemcpyAsync(y.raw_data(), dev(ctx, 0), x.nbytes(), cudaMemcpyDeviceToDevice, stream(ctx)));
  }
};

class TransposeKernel final : public CudaKernel {
 public:
  TransposeKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, std::move(s)), perm_(info.node.attr_ints("perm")) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    const Strided src = transpose_view(x.shape(), perm_, y.shape());
    strided_copy(dev(ctx, 0), src, y.raw_data(), contiguous(y.shape()), dtype_size(x.dtype()), y.numel(), stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  std::vector<int64_t> perm_;
};

class ConcatKernel final : public CudaKernel {
 public:
  ConcatKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, std::move(s)), axis_(info.node.attr_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    Tensor& y = out(ctx, 0, node_);
    const int64_t r = static_cast<int64_t>(y.rank());
    const int64_t axis = normalize_axis(axis_, r, "Concat axis");
    int64_t at = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!has(ctx, i)) continue;
      const Tensor& x = in(ctx, i);
      const Strided d = part_view(y.shape(), x.shape(), axis, at);
      if (x.numel()) strided_copy(dev(ctx, i), contiguous(x.shape()), y.raw_data(), d, dtype_size(y.dtype()), x.numel(), stream(ctx));
      at += x.shape()[axis];
    }
    ONYX_CUDA_LAUNCHED();
  }

 private:
  int64_t axis_;
};

class SplitKernel final : public CudaKernel {
 public:
  SplitKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, std::move(s)), axis_(info.node.attr_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    const int64_t r = static_cast<int64_t>(x.rank());
    const int64_t axis = normalize_axis(axis_, r, "Split axis");
    int64_t at = 0;
    for (size_t o = 0; o < ctx.num_outputs(); ++o) {
      if (!ctx.has_output(o)) continue;
      Tensor& y = out(ctx, o, node_);
      const Strided s = part_view(x.shape(), y.shape(), axis, at);
      if (y.numel()) strided_copy(dev(ctx, 0), s, y.raw_data(), contiguous(y.shape()), dtype_size(y.dtype()), y.numel(), stream(ctx));
      at += y.shape()[axis];
    }
    ONYX_CUDA_LAUNCHED();
  }

 private:
  int64_t axis_;
};

class SliceKernel final : public CudaKernel {
 public:
  SliceKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, std::move(s)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    std::vector<int64_t> starts, ends, axes, steps;
    if (node_.opset < 10) {
      starts = node_.attr_ints("starts");
      ends = node_.attr_ints("ends");
      axes = node_.attr_ints("axes");
    } else {
      starts = host_ints(ctx, 1);
      ends = host_ints(ctx, 2);
      if (has(ctx, 3)) axes = host_ints(ctx, 3);
      if (has(ctx, 4)) steps = host_ints(ctx, 4);
    }
    if (y.numel() == 0) return;
    const SliceSpec spec = resolve_slice(node_, x.shape(), Shape(starts), Shape(ends), Shape(axes), Shape(steps));
    const Strided src = slice_view(x.shape(), spec, y.shape());
    if (y.numel()) strided_copy(dev(ctx, 0), src, y.raw_data(), contiguous(y.shape()), dtype_size(y.dtype()), y.numel(), stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }
};

/// Tile, DepthToSpace and SpaceToDepth: one strided copy through a view (views.cpp).
class RearrangeKernel final : public CudaKernel {
 public:
  RearrangeKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s)
      : CudaKernel(info, std::move(s)), block_(info.node.attr_int("blocksize", 0)),
        crd_(info.node.op_type != "Tile" && depth_to_space_crd(info.node)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    if (y.numel() == 0) return;
    Strided dst, src;
    if (node_.op_type == "Tile") src = tile_view(x.shape(), host_ints(ctx, 1), y.shape(), &dst);
    else if (node_.op_type == "DepthToSpace") src = depth_to_space_view(x.shape(), block_, crd_, y.shape(), &dst);
    else src = space_to_depth_view(x.shape(), block_, crd_, y.shape(), &dst);
    strided_copy(dev(ctx, 0), src, y.raw_data(), dst, dtype_size(y.dtype()), y.numel(), stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  int64_t block_;
  bool crd_;
};

/// Resize (opset 10+) and Upsample-9, float32, float16 and bfloat16: the CPU EP's per-axis plans
/// (ops/image), uploaded, then one separable pass per resized axis (fp32 weights and sums).
class ResizeKernel final : public CudaKernel {
 public:
  ResizeKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, std::move(s)), a_(parse_resize_attrs(info.node)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    const size_t r = x.rank();
    std::vector<float> scales;
    std::vector<int64_t> sizes;
    if (a_.scales_input >= 0 && has(ctx, a_.scales_input))
      for (double v : host_floats(ctx, static_cast<size_t>(a_.scales_input))) scales.push_back(static_cast<float>(v));
    if (a_.sizes_input >= 0 && has(ctx, a_.sizes_input)) sizes = host_ints(ctx, static_cast<size_t>(a_.sizes_input));
    Shape out_shape;
    std::vector<double> axis_scale;
    resize_geometry(node_, a_, x.shape(), scales.empty() ? nullptr : scales.data(), static_cast<int64_t>(scales.size()),
                    sizes.empty() ? nullptr : sizes.data(), static_cast<int64_t>(sizes.size()), out_shape, axis_scale);
    if (!(out_shape == y.shape()))
      fail(ErrorCode::kRuntime, "cuda: ", node_.label(), ": output ", y.shape().to_string(), " differs from ", out_shape.to_string());
    if (y.numel() == 0) return;
    RunState& rs = run(ctx);
    const std::string label = node_.label();
    std::vector<ResizeAxisPlan<float>> plans(r);
    std::vector<size_t> active;
    size_t bytes = 0;
    for (size_t k = 0; k < r; ++k) {
      build_resize_axis(a_, plans[k], x.shape()[k], out_shape[k], axis_scale[k], 0.0, 1.0, label.c_str());
      if (plans[k].identity) continue;
      active.push_back(k);
      bytes += plans[k].idx.size() * sizeof(int64_t) + (plans[k].w.size() * sizeof(float) + 7) / 8 * 8;
    }
    if (active.empty()) {
      strided_copy(dev(ctx, 0), contiguous(x.shape()), y.raw_data(), contiguous(y.shape()), dtype_size(x.dtype()), y.numel(), rs.stream);
      ONYX_CUDA_LAUNCHED();
      return;
    }
    // The tables of every pass, in one upload through pinned staging memory.
    char* stage = static_cast<char*>(rs.staging(bytes));
    const std::shared_ptr<void> tables = shared_->allocate_bytes(bytes);
    std::vector<size_t> at;
    size_t off = 0;
    for (size_t k : active) {
      at.push_back(off);
      std::memcpy(stage + off, plans[k].idx.data(), plans[k].idx.size() * sizeof(int64_t));
      off += plans[k].idx.size() * sizeof(int64_t);
      if (!plans[k].w.empty()) std::memcpy(stage + off, plans[k].w.data(), plans[k].w.size() * sizeof(float));
      off += (plans[k].w.size() * sizeof(float) + 7) / 8 * 8;
    }
    ONYX_CUDA_CHECK(cudaMemcpyAsync(tables.get(), stage, bytes, cudaMemcpyHostToDevice, rs.stream));
    Shape cur = x.shape();
    const Ty ty = to_ty(x.dtype());
    const void* src = dev(ctx, 0);
    Tensor step[2];
    for (size_t i = 0; i < active.size(); ++i) {
      const size_t k = active[i];
      const ResizeAxisPlan<float>& p = plans[k];
      Shape next = cur;
      next[k] = out_shape[k];
      void* dst;
      if (i + 1 == active.size()) {
        dst = y.raw_data();
      } else {
        step[i % 2] = shared_->allocate(x.dtype(), next);
        dst = step[i % 2].raw_data();
      }
      const char* t = static_cast<const char*>(tables.get()) + at[i];
      const auto* idx = reinterpret_cast<const int64_t*>(t);
      const auto* w = p.w.empty() ? nullptr : reinterpret_cast<const float*>(t + p.idx.size() * sizeof(int64_t));
      resize_pass(ty, src, dst, prod(cur, 0, k), cur[k], out_shape[k], prod(cur, k + 1, r), p.taps, idx, w, rs.stream);
      ONYX_CUDA_LAUNCHED();
      src = dst;
      cur = next;
    }
  }

 private:
  ResizeAttrs a_;
};

class GatherElementsKernel final : public CudaKernel {
 public:
  GatherElementsKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s)
      : CudaKernel(info, std::move(s)), axis_(info.node.attr_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    const Tensor& idx = in(ctx, 1);
    Tensor& y = out(ctx, 0, node_);
    const int64_t r = static_cast<int64_t>(x.rank());
    if (idx.rank() != x.rank() || r > kMaxRank || r == 0)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": indices of rank ", idx.rank(), " for data of rank ", r);
    const int64_t axis = normalize_axis(axis_, r, "GatherElements axis");
    GatherElementsArgs a;
    a.rank = static_cast<int>(r);
    a.axis = static_cast<int>(axis);
    a.axis_dim = x.shape()[axis];
    const Strided xs = contiguous(x.shape());
    for (int64_t d = 0; d < r; ++d) {
      if (d != axis && idx.shape()[d] > x.shape()[d])
        fail(ErrorCode::kInvalidArgument, node_.label(), ": indices ", idx.shape().to_string(), " exceed data ", x.shape().to_string());
      a.out[d] = idx.shape()[d];
      a.data_strides[d] = xs.strides[d];
    }
    RunState& rs = run(ctx);
    gather_elements(dev(ctx, 0), dev(ctx, 1), idx.dtype() == DType::kInt64, y.raw_data(), dtype_size(x.dtype()), a, y.numel(),
                    rs.error_flag, rs.stream);
    ONYX_CUDA_LAUNCHED();
  }

 private:
  int64_t axis_;
};

class CumSumKernel final : public CudaKernel {
 public:
  CumSumKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s)
      : CudaKernel(info, std::move(s)), exclusive_(info.node.attr_int("exclusive", 0) != 0),
        reverse_(info.node.attr_int("reverse", 0) != 0) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    const std::vector<int64_t> ax = host_ints(ctx, 1);
    if (ax.size() != 1) fail(ErrorCode::kInvalidArgument, node_.label(), ": axis must be one value, got ", ax.size());
    const int64_t r = static_cast<int64_t>(x.rank());
    if (r == 0) fail(ErrorCode::kInvalidArgument, node_.label(), ": CumSum of a scalar");
    const int64_t axis = normalize_axis(ax[0], r, "CumSum axis");
    cumsum(to_ty(x.dtype()), dev(ctx, 0), y.raw_data(), prod(x.shape(), 0, axis), x.shape()[axis], prod(x.shape(), axis + 1, x.rank()),
           exclusive_, reverse_, stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  bool exclusive_, reverse_;
};

class PadKernel final : public CudaKernel {
 public:
  PadKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, std::move(s)) {
    mode_name_ = info.node.attr_string("mode", "constant");
    if (!pad_mode_of(mode_name_, &mode_)) fail(ErrorCode::kInvalidGraph, info.node.label(), ": unknown pad mode '", mode_name_, "'");
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    const size_t r = x.rank(), elem = dtype_size(x.dtype());
    if (r > static_cast<size_t>(kMaxRank)) fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": rank ", r, " (at most ", kMaxRank, ")");
    Shape pads, axes;
    bool has_axes = false;
    uint8_t value[8] = {};
    if (node_.opset < 11) {
      pads = Shape(node_.attr_ints("pads"));
      if (x.dtype() != DType::kFloat) fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": Pad-", node_.opset, " on ", dtype_name(x.dtype()));
      const float v = node_.attr_float("value", 0.0f);
      std::memcpy(value, &v, sizeof v);
    } else {
      pads = Shape(host_ints(ctx, 1));
      if (has(ctx, 2)) {
        const std::vector<uint8_t> v = host_bytes(ctx, 2);
        if (!v.empty()) {
          if (in(ctx, 2).dtype() != x.dtype())
            fail(ErrorCode::kInvalidArgument, node_.label(), ": constant_value is ", dtype_name(in(ctx, 2).dtype()), " but data is ",
                 dtype_name(x.dtype()));
          std::memcpy(value, v.data(), elem);
        }
      }
      if (has(ctx, 3)) {
        axes = Shape(host_ints(ctx, 3));
        has_axes = true;
      }
    }
    const Shape p = pad_amounts(node_, r, pads, has_axes ? &axes : nullptr);
    PadGeometry g;
    g.rank = static_cast<int>(r);
    for (size_t k = 0; k < r; ++k) {
      g.in[k] = x.shape()[k];
      g.out[k] = y.shape()[k];
      g.begin[k] = p[k];
      if (x.shape()[k] + p[k] + p[k + r] != y.shape()[k])
        fail(ErrorCode::kInvalidArgument, node_.label(), ": pads ", p.to_string(), " on ", x.shape().to_string(), " do not give ",
             y.shape().to_string());
      if (x.shape()[k] == 0 && y.shape()[k] > 0 && mode_ != PadMode::kConstant)
        fail(ErrorCode::kInvalidArgument, node_.label(), ": cannot ", mode_name_, "-pad an empty dimension");
    }
    if (y.numel() == 0) return;
    pad(dev(ctx, 0), y.raw_data(), g, mode_, value, elem, y.numel(), stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  std::string mode_name_;
  PadMode mode_ = PadMode::kConstant;
};

class ExpandKernel final : public CudaKernel {
 public:
  using CudaKernel::CudaKernel;
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    strided_copy(dev(ctx, 0), broadcast_view(x.shape(), y.shape()), y.raw_data(), contiguous(y.shape()), dtype_size(y.dtype()),
                 y.numel(), stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }
};

class GatherKernel final : public CudaKernel {
 public:
  GatherKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s) : CudaKernel(info, std::move(s)), axis_(info.node.attr_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    const Tensor& idx = in(ctx, 1);
    Tensor& y = out(ctx, 0, node_);
    const int64_t r = static_cast<int64_t>(x.rank());
    const int64_t axis = normalize_axis(axis_, r, "Gather axis");
    RunState& rs = run(ctx);
    gather(dev(ctx, 0), dev(ctx, 1), idx.dtype() == DType::kInt64, y.raw_data(), dtype_size(x.dtype()), prod(x.shape(), 0, axis),
           x.shape()[axis], idx.numel(), prod(x.shape(), axis + 1, x.rank()), rs.error_flag, rs.stream);
    ONYX_CUDA_LAUNCHED();
  }

 private:
  int64_t axis_;
};

// ---------------------------------------------------------------------------------------------
// Normalisations and reductions

class SoftmaxKernel final : public CudaKernel {
 public:
  SoftmaxKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s)
      : CudaKernel(info, std::move(s)),
        axis_(info.node.attr_int("axis", info.node.opset < 13 ? 1 : -1)),
        log_(info.node.op_type == "LogSoftmax"),
        coerce_(info.node.opset < 13) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    const int64_t r = static_cast<int64_t>(x.rank());
    const int64_t axis = normalize_axis(axis_, std::max<int64_t>(r, 1), "Softmax axis");
    const int64_t outer = prod(x.shape(), 0, axis);
    const int64_t len = coerce_ ? prod(x.shape(), axis, x.rank()) : (r ? x.shape()[axis] : 1);
    const int64_t inner = coerce_ ? 1 : prod(x.shape(), axis + 1, x.rank());
    softmax(to_ty(x.dtype()), dev(ctx, 0), y.raw_data(), outer, len, inner, log_, stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  int64_t axis_;
  bool log_, coerce_;
};

class LayerNormKernel final : public CudaKernel {
 public:
  LayerNormKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s)
      : CudaKernel(info, std::move(s)), axis_(info.node.attr_int("axis", -1)), eps_(info.node.attr_float("epsilon", 1e-5f)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    const int64_t axis = normalize_axis(axis_, static_cast<int64_t>(x.rank()), "LayerNormalization axis");
    const int64_t rows = prod(x.shape(), 0, axis), cols = prod(x.shape(), axis, x.rank());
    const Tensor& scale = in(ctx, 1);
    if (scale.numel() != cols)
      fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": Scale of shape ", scale.shape().to_string(),
           " must have one value per normalised element");
    const void* bias = nullptr;
    if (has(ctx, 2)) {
      if (in(ctx, 2).numel() != cols) fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": B must have one value per normalised element");
      bias = dev(ctx, 2);
    }
    float* mean = ctx.output_ready(1) ? dptr<float>(out(ctx, 1, node_)) : nullptr;
    float* inv = ctx.output_ready(2) ? dptr<float>(out(ctx, 2, node_)) : nullptr;
    layernorm(to_ty(x.dtype()), dev(ctx, 0), dev(ctx, 1), bias, y.raw_data(), mean, inv, rows, cols, eps_, false, stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  int64_t axis_;
  float eps_;
};

/// InstanceNormalization and GroupNormalization: each (image, group) normalised as one row of
/// LayerNormalization's kernel (a group is one channel for InstanceNormalization), then the scale
/// and bias: per channel, or per group for GroupNormalization before opset 21.
class GroupNormKernel final : public CudaKernel {
 public:
  GroupNormKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s)
      : CudaKernel(info, std::move(s)), eps_(info.node.attr_float("epsilon", 1e-5f)),
        instance_(info.node.op_type == "InstanceNormalization"), groups_(info.node.attr_int("num_groups", 0)),
        per_channel_(instance_ || info.node.opset >= 21) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    if (x.rank() < 3) fail(ErrorCode::kInvalidArgument, node_.label(), ": input of rank ", x.rank(), " (at least 3: N, C, spatial)");
    const int64_t n = x.shape()[0], c = x.shape()[1], spatial = prod(x.shape(), 2, x.rank());
    const int64_t groups = instance_ ? c : groups_;
    if (groups <= 0 || c % groups != 0)
      fail(ErrorCode::kInvalidArgument, node_.label(), ": num_groups ", groups, " must divide the ", c, " channels");
    const int64_t want = per_channel_ ? c : groups;
    for (size_t i = 1; i < 3; ++i)
      if (in(ctx, i).numel() != want)
        fail(ErrorCode::kInvalidArgument, node_.label(), ": ", i == 1 ? "scale" : "B", " has ", in(ctx, i).numel(), " values (", want,
             per_channel_ ? " channels)" : " groups)");
    if (y.numel() == 0) return;
    const int64_t row = c / groups * spatial;
    const Ty ty = to_ty(x.dtype());
    layernorm(ty, dev(ctx, 0), nullptr, nullptr, y.raw_data(), nullptr, nullptr, n * groups, row, eps_, false, stream(ctx));
    // The affine step takes float scale and bias: 16-bit ones are widened first (c values).
    Tensor wide[2];
    const float* sb[2];
    for (size_t i = 1; i < 3; ++i) {
      const Tensor& t = in(ctx, i);
      if (t.dtype() == DType::kFloat) {
        sb[i - 1] = devf(ctx, i);
        continue;
      }
      wide[i - 1] = shared_->allocate(DType::kFloat, t.shape());
      cast(to_ty(t.dtype()), dev(ctx, i), Ty::kF32, wide[i - 1].raw_data(), t.numel(), stream(ctx));
      sb[i - 1] = dptr<float>(wide[i - 1]);
    }
    if (per_channel_)
      channel_scale_bias(ty, y.raw_data(), sb[0], sb[1], n, c, spatial, stream(ctx));
    else
      channel_scale_bias(ty, y.raw_data(), sb[0], sb[1], n, groups, row, stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  float eps_;
  bool instance_;
  int64_t groups_;
  bool per_channel_;
};

class ReduceKernel final : public CudaKernel {
 public:
  ReduceKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s, ReduceOp op) : CudaKernel(info, std::move(s)), op_(op) {
    const Node& n = info.node;
    axes_input_ = n.op_type == "ReduceSum" ? n.opset >= 13 : n.opset >= 18;
    axes_ = n.attr_ints("axes");
    noop_ = n.attr_int("noop_with_empty_axes", 0) != 0;
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    const int64_t r = static_cast<int64_t>(x.rank());
    std::vector<int64_t> axes = axes_;
    if (axes_input_) axes = has(ctx, 1) ? host_ints(ctx, 1) : std::vector<int64_t>{};
    std::vector<char> red(static_cast<size_t>(r), 0);
    if (axes.empty()) {
      if (noop_) {
        if (x.nbytes()) ONYX_CUDA_CHECK(cudaMemcpyAsync(y.raw_data(), dev(ctx, 0), x.nbytes(), cudaMemcpyDeviceToDevice, stream(ctx)));
        return;
      }
      std::fill(red.begin(), red.end(), 1);
    }
    for (int64_t a : axes) red[normalize_axis(a, r, "reduce axis")] = 1;
    const Strided xs = contiguous(x.shape());
    Strided kept, rd;
    int64_t n_red = 1;
    for (int64_t k = 0; k < r; ++k) {
      Strided& s = red[k] ? rd : kept;
      s.dims[s.rank] = x.shape()[k];
      s.strides[s.rank] = xs.strides[k];
      ++s.rank;
      if (red[k]) n_red *= x.shape()[k];
    }
    if (y.numel() == 0) return;
    if (n_red == 0) fail(ErrorCode::kNotImplemented, "cuda: ", node_.label(), ": reducing an empty axis");
    reduce(to_ty(x.dtype()), op_, dev(ctx, 0), kept, rd, y.raw_data(), y.numel(), n_red, stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  ReduceOp op_;
  bool axes_input_ = false, noop_ = false;
  std::vector<int64_t> axes_;
};

class ArgKernel final : public CudaKernel {
 public:
  ArgKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s)
      : CudaKernel(info, std::move(s)),
        max_(info.node.op_type == "ArgMax"),
        last_(info.node.attr_int("select_last_index", 0) != 0),
        axis_(info.node.attr_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0, node_);
    const int64_t axis = normalize_axis(axis_, static_cast<int64_t>(x.rank()), "ArgMax axis");
    arg_reduce(to_ty(x.dtype()), max_, last_, dev(ctx, 0), dptr<int64_t>(y), prod(x.shape(), 0, axis), x.shape()[axis],
                   prod(x.shape(), axis + 1, x.rank()), stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  bool max_, last_;
  int64_t axis_;
};

/// onyx::Attention (the optimizer's fusion of the decomposed pattern): one kernel for the scores,
/// bias, softmax and the product with V (reduce.cu).
class AttentionKernel final : public CudaKernel {
 public:
  AttentionKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> s)
      : CudaKernel(info, std::move(s)), scale_(info.node.attr_float("scale", 1.0f)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& q = in(ctx, 0);
    const Tensor& kt = in(ctx, 1);
    const Tensor& v = in(ctx, 2);
    Tensor& y = out(ctx, 0, node_);
    if (q.rank() < 2 || kt.rank() < 2 || v.rank() < 2 || y.rank() < 2)
      fail(ErrorCode::kInvalidArgument, "cuda: ", node_.label(), ": Q, KT and V must have rank >= 2");
    AttentionArgs a;
    a.sq = q.shape()[q.rank() - 2];
    a.d = q.shape()[q.rank() - 1];
    a.sk = kt.shape()[kt.rank() - 1];
    a.dv = v.shape()[v.rank() - 1];
    if (kt.shape()[kt.rank() - 2] != a.d || v.shape()[v.rank() - 2] != a.sk || y.shape()[y.rank() - 2] != a.sq ||
        y.shape()[y.rank() - 1] != a.dv)
      fail(ErrorCode::kInvalidArgument, "cuda: ", node_.label(), ": shapes do not chain: Q ", q.shape().to_string(), ", KT ",
           kt.shape().to_string(), ", V ", v.shape().to_string(), ", Y ", y.shape().to_string());
    const size_t rb = y.rank() - 2;
    const Shape batch(std::span<const int64_t>(y.shape().data(), rb));
    a.batch = batch.numel();
    a.bq = batch_view(q.shape(), batch);
    a.bk = batch_view(kt.shape(), batch);
    a.bv = batch_view(v.shape(), batch);
    a.q = dev(ctx, 0);
    a.kt = dev(ctx, 1);
    a.v = dev(ctx, 2);
    a.y = y.raw_data();
    a.scale = scale_;
    if (has(ctx, 3)) {
      Shape scores = batch;
      scores.push_back(a.sq);
      scores.push_back(a.sk);
      const Strided bv = broadcast_view(in(ctx, 3).shape(), scores);
      a.bb.rank = static_cast<int>(rb);
      for (size_t k = 0; k < rb; ++k) {
        a.bb.dims[k] = bv.dims[k];
        a.bb.strides[k] = bv.strides[k];
      }
      a.bias_row = bv.strides[rb];
      a.bias_col = bv.strides[rb + 1];
      a.bias = dev(ctx, 3);
    }
    if (y.numel() == 0) return;
    if (a.sk == 0) {  // softmax over no keys times an empty V: zeros, as the unfused graph gives
      ONYX_CUDA_CHECK(cudaMemsetAsync(y.raw_data(), 0, y.nbytes(), stream(ctx)));
      return;
    }
    const int64_t floats = attention_scratch_floats(a.batch, a.sq, a.sk);
    float* scratch = static_cast<float*>(run(ctx).workspace(static_cast<size_t>(floats) * sizeof(float)));
    attention(to_ty(q.dtype()), a, scratch, stream(ctx));
    ONYX_CUDA_LAUNCHED();
  }

 private:
  /// Offsets of an operand's [rows, cols] matrices over the output batch dims.
  static Strided batch_view(const Shape& s, const Shape& batch) {
    const size_t r = s.size() - 2;
    const int64_t matrix = s[r] * s[r + 1];
    Strided v = broadcast_view(Shape(std::span<const int64_t>(s.data(), r)), batch);
    for (int k = 0; k < v.rank; ++k) v.strides[k] *= matrix;
    return v;
  }

  float scale_;
};

bool unary_spec(const Node& n, UnarySpec* s) {
  const std::string& op = n.op_type;
  struct Entry {
    const char* name;
    UnaryOp op;
    float a, b;
  };
  static const Entry kTable[] = {
      {"Relu", UnaryOp::kRelu, 0, 0}, {"Sigmoid", UnaryOp::kSigmoid, 0, 0}, {"Tanh", UnaryOp::kTanh, 0, 0},
      {"Exp", UnaryOp::kExp, 0, 0}, {"Log", UnaryOp::kLog, 0, 0}, {"Sqrt", UnaryOp::kSqrt, 0, 0},
      {"Reciprocal", UnaryOp::kReciprocal, 0, 0}, {"Abs", UnaryOp::kAbs, 0, 0}, {"Neg", UnaryOp::kNeg, 0, 0},
      {"Erf", UnaryOp::kErf, 0, 0}, {"Floor", UnaryOp::kFloor, 0, 0}, {"Ceil", UnaryOp::kCeil, 0, 0},
      {"Round", UnaryOp::kRound, 0, 0}, {"Softplus", UnaryOp::kSoftplus, 0, 0}, {"Softsign", UnaryOp::kSoftsign, 0, 0},
      {"LeakyRelu", UnaryOp::kLeakyRelu, 0.01f, 0}, {"Elu", UnaryOp::kElu, 1.f, 0},
      {"Selu", UnaryOp::kSelu, 1.67326319217681884765625f, 1.05070102214813232421875f}, {"Celu", UnaryOp::kCelu, 1.f, 0},
      {"HardSigmoid", UnaryOp::kHardSigmoid, 0.2f, 0.5f}, {"HardSwish", UnaryOp::kHardSwish, 0, 0},
      {"Clip", UnaryOp::kClip, -INFINITY, INFINITY}, {"Gelu", UnaryOp::kGelu, 0, 0}, {"Sin", UnaryOp::kSin, 0, 0},
      {"Cos", UnaryOp::kCos, 0, 0}, {"Sign", UnaryOp::kSign, 0, 0}, {"Mish", UnaryOp::kMish, 0, 0},
      {"ThresholdedRelu", UnaryOp::kThresholdedRelu, 1.f, 0},
  };
  for (const Entry& e : kTable) {
    if (op != e.name) continue;
    *s = {e.op, e.a, e.b};
    if (op == "LeakyRelu" || op == "Elu" || op == "Celu" || op == "ThresholdedRelu") s->a = n.attr_float("alpha", e.a);
    if (op == "Selu") s->a = n.attr_float("alpha", e.a), s->b = n.attr_float("gamma", e.b);
    if (op == "HardSigmoid") s->a = n.attr_float("alpha", e.a), s->b = n.attr_float("beta", e.b);
    if (op == "Gelu" && n.attr_string("approximate", "none") == "tanh") s->op = UnaryOp::kGeluTanh;
    return true;
  }
  return false;
}

bool binary_op(const std::string& op, BinaryOp* b, const Node& n) {
  static const std::pair<const char*, BinaryOp> kTable[] = {
      {"Add", BinaryOp::kAdd}, {"Sub", BinaryOp::kSub}, {"Mul", BinaryOp::kMul}, {"Div", BinaryOp::kDiv},
      {"Pow", BinaryOp::kPow}, {"Max", BinaryOp::kMax}, {"Min", BinaryOp::kMin}, {"Mod", BinaryOp::kMod},
      {"PRelu", BinaryOp::kPRelu}, {"Equal", BinaryOp::kEqual}, {"Less", BinaryOp::kLess}, {"Greater", BinaryOp::kGreater},
      {"LessOrEqual", BinaryOp::kLessEqual}, {"GreaterOrEqual", BinaryOp::kGreaterEqual}, {"And", BinaryOp::kAnd},
      {"Or", BinaryOp::kOr}, {"Xor", BinaryOp::kXor},
  };
  for (const auto& [name, v] : kTable)
    if (op == name) {
      *b = v;
      if (v == BinaryOp::kMod && n.attr_int("fmod", 0) != 0) *b = BinaryOp::kFmod;
      return true;
    }
  return false;
}

bool reduce_op(const std::string& op, ReduceOp* r) {
  static const std::pair<const char*, ReduceOp> kTable[] = {
      {"ReduceSum", ReduceOp::kSum}, {"ReduceMean", ReduceOp::kMean}, {"ReduceMax", ReduceOp::kMax},
      {"ReduceMin", ReduceOp::kMin}, {"ReduceProd", ReduceOp::kProd}, {"ReduceL1", ReduceOp::kL1},
      {"ReduceL2", ReduceOp::kL2}, {"ReduceSumSquare", ReduceOp::kSumSquare}, {"ReduceLogSum", ReduceOp::kLogSum},
      {"ReduceLogSumExp", ReduceOp::kLogSumExp},
  };
  for (const auto& [name, v] : kTable)
    if (op == name) {
      *r = v;
      return true;
    }
  return false;
}

}  // namespace

std::unique_ptr<Kernel> create_own_kernel(const KernelCreateInfo& info, const std::shared_ptr<Shared>& s) {
  const Node& n = info.node;
  const std::string& op = n.op_type;
  UnarySpec us{};
  BinaryOp bo{};
  ReduceOp ro{};
  if (auto k = create_transformer_kernel(info, s)) return k;  // ONNX Runtime's transformer ops (transformer_kernels.cpp)
  if (auto k = create_quant_kernel(info, s)) return k;        // int8: Q / DQ, MatMulInteger, QLinearMatMul (quant_kernels.cpp)
  if (unary_spec(n, &us)) return std::make_unique<UnaryKernel>(info, s, us);
  if (op == "Sum" || op == "Mean") return std::make_unique<VariadicKernel>(info, s, BinaryOp::kAdd, op == "Mean");
  if ((op == "Max" || op == "Min") && n.inputs.size() != 2)
    return std::make_unique<VariadicKernel>(info, s, op == "Max" ? BinaryOp::kMax : BinaryOp::kMin, false);
  if (binary_op(op, &bo, n)) return std::make_unique<BinaryKernel>(info, s, bo);
  if (reduce_op(op, &ro)) return std::make_unique<ReduceKernel>(info, s, ro);
  if (op == "Where") return std::make_unique<WhereKernel>(info, s);
  if (op == "Cast") return std::make_unique<CastKernel>(info, s);
  if (op == "Identity" || op == "Dropout" || op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze")
    return std::make_unique<SameBytesKernel>(info, s);
  if (op == "Transpose") return std::make_unique<TransposeKernel>(info, s);
  if (op == "Concat") return std::make_unique<ConcatKernel>(info, s);
  if (op == "Split") return std::make_unique<SplitKernel>(info, s);
  if (op == "Slice") return std::make_unique<SliceKernel>(info, s);
  if (op == "Expand") return std::make_unique<ExpandKernel>(info, s);
  if (op == "Pad") return std::make_unique<PadKernel>(info, s);
  if (op == "GatherElements") return std::make_unique<GatherElementsKernel>(info, s);
  if (op == "CumSum") return std::make_unique<CumSumKernel>(info, s);
  if (op == "Resize" || op == "Upsample") return std::make_unique<ResizeKernel>(info, s);
  if (op == "Tile" || op == "DepthToSpace" || op == "SpaceToDepth") return std::make_unique<RearrangeKernel>(info, s);
  if (op == "Gather") return std::make_unique<GatherKernel>(info, s);
  if (op == "Softmax" || op == "LogSoftmax") return std::make_unique<SoftmaxKernel>(info, s);
  if (op == "LayerNormalization") return std::make_unique<LayerNormKernel>(info, s);
  if (op == "InstanceNormalization" || op == "GroupNormalization") return std::make_unique<GroupNormKernel>(info, s);
  if (op == "ArgMax" || op == "ArgMin") return std::make_unique<ArgKernel>(info, s);
  if (n.domain == "onyx" && op == "Attention") return std::make_unique<AttentionKernel>(info, s);
  fail(ErrorCode::kNotImplemented, "cuda: no kernel for ", n.label());
}

}  // namespace onyx::cuda
