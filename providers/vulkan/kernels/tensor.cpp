// Data-movement kernels: Reshape / Flatten / Squeeze / Unsqueeze / Identity / Dropout as views of
// the input's device buffer; Transpose, Slice and Expand as one strided copy; Concat; Gather.
#include <algorithm>
#include <cstring>

#include "ops/tensor.hpp"
#include "vulkan_ep.hpp"

namespace onyx::vulkan {
namespace {

/// The output as a view of input 0's buffer with the output's (inferred) shape.
class ViewKernel final : public VkKernel {
 public:
  // Every input but the data is a shape operand read on the host (a constant data input is
  // uploaded once by VkKernel).
  ViewKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d) : VkKernel(info, std::move(d), ~1u) {}
  // The output is a view of input 0: the executor plans no buffer for it, only its shape.
  int alias_input(size_t out) const override { return out == 0 ? 0 : -1; }
  void run(KernelContext& ctx, Stream&) const override {
    const Tensor& x = ctx.input(0);
    if (!ctx.output_ready(0)) fail(ErrorCode::kRuntime, "vulkan: ", label(), ": the output's shape is unknown");
    const Shape shape = ctx.output(0).shape();
    if (shape.numel() != x.numel())
      fail(ErrorCode::kInvalidArgument, label(), ": cannot view ", x.shape().to_string(), " as ", shape.to_string());
    const BufRef b = in(ctx, 0);
    ctx.set_output(0, Tensor::device_tensor(x.dtype(), shape, const_cast<Buffer*>(b.buf), b.keep, dev_->memory_id()));
  }
};

bool check_view(const ClaimInfo& c, Decline* why) {
  const Node& n = c.node;
  if (n.op_type == "Dropout" && n.has_output(1))
    return decline(why, DeclineCode::kUnsupportedAttribute, "Dropout's mask output is not supported");
  if (n.op_type == "Dropout" && n.has_input(2) && !is_constant(c.graph, n, 2))
    return decline(why, DeclineCode::kUnsupportedAttribute, "Dropout's training_mode is not a constant");
  if (n.op_type == "Dropout" && n.has_input(2)) {
    const Tensor* t = constant_of(c.graph, n, 2);
    if (t->numel() == 1 && t->element_as_double(0) != 0)
      return decline(why, DeclineCode::kUnsupportedAttribute, "Dropout in training mode");
  }
  const TypeInfo* o = out_type(c, 0);
  if (!o || !o->has_shape) return decline(why, DeclineCode::kDynamicShape, "the output's rank is unknown");
  return true;
}

std::unique_ptr<Kernel> make_view(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<ViewKernel>(info, d);
}

/// Records out[i] = in[base + sum idx_d * str_d] over `out` (rank <= 6), elements of float16
/// storage when `half`.
void strided_copy(Stream& s, Device& dev, bool half, const BufRef& x, Tensor& y, int64_t base,
                  const std::vector<int64_t>& str) {
  const Shape& os = y.shape();
  if (!y.numel()) return;
  std::vector<int64_t> dims(os.begin(), os.end()), st = str;
  if (dims.empty()) {
    dims.push_back(1);
    st.push_back(0);
  }
  Push p;
  p.i(y.numel()).i(static_cast<int64_t>(dims.size())).i(base).i(0).six(dims, 1).six(st, 0);
  s.dispatch_1d(dev.pipeline("strided_copy", 2, half), {x, device_ref(y, "output")}, p.w, p.bytes(), y.numel());
}

class TransposeKernel final : public VkKernel {
 public:
  TransposeKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : VkKernel(info, std::move(d), 0), perm_(info.node.attr_ints("perm")) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    check_size(label(), x.numel());
    const size_t r = x.rank();
    std::vector<int64_t> perm = perm_;
    if (perm.empty())
      for (size_t k = 0; k < r; ++k) perm.push_back(static_cast<int64_t>(r - 1 - k));
    if (perm.size() != r)
      fail(ErrorCode::kInvalidArgument, label(), ": perm has ", perm.size(), " entries for rank ", r);
    const auto st = strides_of(x.shape());
    std::vector<int64_t> str(r);
    for (size_t k = 0; k < r; ++k) {
      const int64_t p = perm[k] < 0 ? perm[k] + static_cast<int64_t>(r) : perm[k];
      if (p < 0 || p >= static_cast<int64_t>(r))
        fail(ErrorCode::kInvalidArgument, label(), ": perm entry ", perm[k], " is out of range");
      str[k] = st[p];
    }
    strided_copy(s, *dev_, half_, in(ctx, 0), y, 0, str);
  }

 private:
  std::vector<int64_t> perm_;
};

std::unique_ptr<Kernel> make_transpose(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<TransposeKernel>(info, d);
}


/// The integers of a host tensor (shape operands).
std::vector<int64_t> host_ints(const KernelContext& ctx, size_t i, const std::string& label) {
  std::vector<int64_t> v;
  if (!ctx.has_input(i)) return v;
  const Tensor& t = ctx.input(i);
  if (!t.on_host())
    fail(ErrorCode::kRuntime, "vulkan: internal error: ", label, ": input ", i, " is not in host memory");
  for (int64_t k = 0; k < t.numel(); ++k) v.push_back(static_cast<int64_t>(t.element_as_double(k)));
  return v;
}

class SliceKernel final : public VkKernel {
 public:
  SliceKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : VkKernel(info, std::move(d), 0b11110), node_(info.node) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    check_size(label(), x.numel());
    const int64_t r = static_cast<int64_t>(x.rank());
    std::vector<int64_t> starts, ends, axes, steps;
    if (node_.opset < 10) {
      starts = node_.attr_ints("starts");
      ends = node_.attr_ints("ends");
      axes = node_.attr_ints("axes");
    } else {
      starts = host_ints(ctx, 1, label());
      ends = host_ints(ctx, 2, label());
      axes = host_ints(ctx, 3, label());
      steps = host_ints(ctx, 4, label());
    }
    // The starts and steps shape inference and the CPU EP use (ops/tensor).
    const SliceSpec spec = resolve_slice(node_, x.shape(), Shape(starts), Shape(ends), Shape(axes), Shape(steps));
    const auto st = strides_of(x.shape());
    std::vector<int64_t> str(st.begin(), st.end());
    int64_t base = 0;
    for (int64_t a = 0; a < r; ++a) {
      base += spec.start[a] * st[a];
      str[a] = st[a] * spec.step[a];
    }
    strided_copy(s, *dev_, half_, in(ctx, 0), y, base, str);
  }

 private:
  const Node& node_;
};

bool check_slice(const ClaimInfo& c, Decline* why) {
  if (!check_rank_known(c, why)) return false;
  for (size_t i = 1; i <= 4; ++i)
    if (c.node.has_input(i)) {
      const TypeInfo* t = in_type(c, i);
      if (t->dtype != DType::kInt64 && t->dtype != DType::kInt32)
        return decline(why, DeclineCode::kUnsupportedType, str("Slice input ", i, " must be int32 or int64"));
    }
  return true;
}

std::unique_ptr<Kernel> make_slice(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<SliceKernel>(info, d);
}

class ExpandKernel final : public VkKernel {
 public:
  ExpandKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d) : VkKernel(info, std::move(d), 0b10) {}
  void run(KernelContext& ctx, Stream& s) const override {
    Tensor& y = ctx.output(0);
    check_size(label(), y.numel());
    strided_copy(s, *dev_, half_, in(ctx, 0), y, 0, broadcast_strides(ctx.input(0).shape(), y.shape()));
  }
};

bool check_expand(const ClaimInfo& c, Decline* why) {
  const TypeInfo* o = out_type(c, 0);
  if (!o || !o->has_shape) return decline(why, DeclineCode::kDynamicShape, "the output's rank is unknown");
  if (o->shape.size() > kMaxRank) return decline(why, DeclineCode::kUnsupportedAttribute, "output rank above 6");
  return check_rank_known(c, why);
}

std::unique_ptr<Kernel> make_expand(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<ExpandKernel>(info, d);
}

class ConcatKernel final : public VkKernel {
 public:
  ConcatKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : VkKernel(info, std::move(d), 0), axis_(info.node.attr_int("axis", 0)) {}
  void run(KernelContext& ctx, Stream& s) const override {
    Tensor& y = ctx.output(0);
    check_size(label(), y.numel());
    const int64_t r = static_cast<int64_t>(y.rank());
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    if (axis < 0 || axis >= r) fail(ErrorCode::kInvalidArgument, label(), ": axis ", axis_, " is out of range");
    int64_t inner = 1;
    for (int64_t k = axis + 1; k < r; ++k) inner *= y.dim(k);
    const int64_t out_blk = y.dim(axis) * inner;
    int64_t off = 0;
    const BufRef Y = device_ref(y, "output");
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      const Tensor& x = ctx.input(i);
      const int64_t a = x.rank() == y.rank() ? x.dim(axis) : 0;
      const int64_t blk = a * inner;
      if (x.numel()) {
        Push p;
        p.i(x.numel()).i(blk).i(out_blk).i(off * inner);
        s.dispatch_1d(pipe("concat_copy", 2), {in(ctx, i), Y}, p.w, p.bytes(), x.numel());
      }
      off += a;
    }
  }

 private:
  int64_t axis_;
};

/// Split: each output is a strided copy of its part of the input along the axis (the output
/// shapes come from inference, so the split sizes need not be read here).
class SplitKernel final : public VkKernel {
 public:
  SplitKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : VkKernel(info, std::move(d), 0b10), axis_(info.node.attr_int("axis", 0)) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    check_size(label(), x.numel());
    const int64_t r = static_cast<int64_t>(x.rank());
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    if (axis < 0 || axis >= r) fail(ErrorCode::kInvalidArgument, label(), ": axis ", axis_, " is out of range");
    const auto st = strides_of(x.shape());
    const BufRef X = in(ctx, 0);
    int64_t off = 0;
    for (size_t o = 0; o < ctx.num_outputs(); ++o) {
      if (!ctx.has_output(o)) continue;
      if (!ctx.output_ready(o))
        fail(ErrorCode::kRuntime, "vulkan: ", label(), ": the shape of output ", o, " is unknown");
      Tensor& y = ctx.output(o);
      if (y.rank() != x.rank()) fail(ErrorCode::kInvalidArgument, label(), ": output ", o, " has another rank");
      strided_copy(s, *dev_, half_, X, y, off * st[axis], st);
      off += y.dim(axis);
    }
    if (off > x.dim(axis)) fail(ErrorCode::kInvalidArgument, label(), ": the parts are longer than the input");
  }

 private:
  int64_t axis_;
};

bool check_split(const ClaimInfo& c, Decline* why) {
  if (!check_rank_known(c, why)) return false;
  for (size_t o = 0; o < c.node.outputs.size(); ++o) {
    const TypeInfo* t = out_type(c, o);
    if (c.node.has_output(o) && (!t || !t->has_shape))
      return decline(why, DeclineCode::kDynamicShape, str("the rank of output ", o, " is unknown"));
  }
  return true;
}

std::unique_ptr<Kernel> make_split(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<SplitKernel>(info, d);
}

std::unique_ptr<Kernel> make_concat(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<ConcatKernel>(info, d);
}

class GatherKernel final : public VkKernel {
 public:
  GatherKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d)
      : VkKernel(info, std::move(d), 0b10),
        axis_(info.node.attr_int("axis", 0)),
        bad_index_(str(label(), ": an index computed on the device is out of range for axis ", axis_)) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& idx = ctx.input(1);
    Tensor& y = ctx.output(0);
    check_size(label(), y.numel());
    const int64_t r = static_cast<int64_t>(x.rank());
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    if (axis < 0 || axis >= r) fail(ErrorCode::kInvalidArgument, label(), ": axis ", axis_, " is out of range");
    const int64_t d = x.dim(axis);
    int64_t inner = 1;
    for (int64_t k = axis + 1; k < r; ++k) inner *= x.dim(k);
    const int64_t nidx = idx.numel();
    if (!y.numel()) return;
    BufRef I;
    int idx64 = 0;
    if (idx.on_host()) {
      // Indices in host memory: checked here (an out-of-range index is an error, as on the CPU),
      // then uploaded as int32.
      std::vector<int32_t> v(static_cast<size_t>(nidx));
      for (int64_t k = 0; k < nidx; ++k) {
        const int64_t j = idx.dtype() == DType::kInt64 ? idx.data<int64_t>()[k] : idx.data<int32_t>()[k];
        if (j < -d || j >= d)
          fail(ErrorCode::kRuntime, label(), ": index ", j, " is out of range for axis ", axis, " of size ", d);
        v[k] = static_cast<int32_t>(j);
      }
      auto b = dev_->buffer(std::max<size_t>(v.size() * 4, 4), false);
      Buffer* raw = b.get();
      I = {raw, std::move(b), 0};
      s.upload(v.data(), I, v.size() * 4);
    } else {
      I = device_ref(idx, "indices");
      idx64 = idx.dtype() == DType::kInt64 ? 1 : 0;
    }
    // Indices computed on the device are checked there: a bad one sets the stream's error word,
    // and the run fails naming this node when it next waits for the device.
    const uint32_t code = s.check_code(&bad_index_);
    Push p;
    p.i(y.numel()).i(nidx).i(d).i(inner).i(idx64).i(code);
    s.dispatch_1d(pipe("gather", 4), {in(ctx, 0), I, device_ref(y, "output"), s.error_word()}, p.w, p.bytes(),
                  y.numel());
  }

 private:
  int64_t axis_;
  std::string bad_index_;  // the run's error when the shader finds an index out of range
};

/// Pad (constant, reflect, edge, wrap; negative pads crop) of float32 data: the index maps of
/// each dim are computed on the host (ops/tensor: the CPU EP's own rule) and uploaded with the run.
class PadKernel final : public VkKernel {
 public:
  PadKernel(const KernelCreateInfo& info, std::shared_ptr<Device> d) : VkKernel(info, std::move(d), 0b1110), node_(info.node) {}
  void run(KernelContext& ctx, Stream& s) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    check_size(label(), y.numel());
    const size_t r = x.rank();
    if (r > 6 || y.rank() != r) fail(ErrorCode::kInvalidArgument, label(), ": rank ", r, " (the Vulkan Pad takes rank <= 6)");
    Shape pads, axes;
    float value = 0;
    bool has_axes = false;
    if (node_.opset < 11) {
      pads = Shape(node_.attr_ints(node_.opset < 2 ? "paddings" : "pads"));
      value = node_.attr_float("value", 0.0f);
    } else {
      pads = Shape(host_ints(ctx, 1, label()));
      if (ctx.has_input(2)) {
        const Tensor& cv = ctx.input(2);
        if (!cv.on_host()) fail(ErrorCode::kRuntime, "vulkan: internal error: ", label(), ": constant_value is not in host memory");
        if (cv.numel() > 0) value = static_cast<float>(cv.element_as_double(0));
      }
      if (ctx.has_input(3)) {
        axes = Shape(host_ints(ctx, 3, label()));
        has_axes = true;
      }
    }
    const Shape p = pad_amounts(node_, r, pads, has_axes ? &axes : nullptr);
    const std::string mode = node_.attr_string("mode", "constant");
    std::vector<int32_t> maps;
    std::vector<int64_t> moff(r), str(r, 1);
    for (size_t k = r; k-- > 1;) str[k - 1] = str[k] * x.dim(k);
    for (size_t k = 0; k < r; ++k) {
      if (y.dim(k) != x.dim(k) + p[k] + p[k + r])
        fail(ErrorCode::kInvalidArgument, label(), ": output ", y.shape().to_string(), " does not match the pads");
      moff[k] = static_cast<int64_t>(maps.size());
      for (int64_t i : pad_index_map(node_, mode, x.dim(k), y.dim(k), p[k])) maps.push_back(static_cast<int32_t>(i));
    }
    if (!y.numel()) return;
    std::vector<int64_t> dims(y.shape().begin(), y.shape().end());
    if (dims.empty()) {  // rank 0: a copy of the one element
      dims.push_back(1);
      moff.push_back(static_cast<int64_t>(maps.size()));
      maps.push_back(0);
      str.push_back(0);
    }
    auto b = dev_->buffer(maps.size() * 4, false);
    Buffer* raw = b.get();
    const BufRef M{raw, std::move(b), 0};
    s.upload(maps.data(), M, maps.size() * 4);
    uint32_t bits = 0;
    if (half_)
      bits = Float16::from_float(value);
    else
      std::memcpy(&bits, &value, 4);
    Push pc;
    pc.i(y.numel()).i(static_cast<int64_t>(dims.size())).i(static_cast<int32_t>(bits)).i(0).six(dims, 1).six(moff, 0).six(str, 0);
    s.dispatch_1d(pipe("pad", 3), {in(ctx, 0), M, device_ref(y, "output")}, pc.w, pc.bytes(), y.numel());
  }

 private:
  const Node& node_;
};

bool check_pad(const ClaimInfo& c, Decline* why) {
  if (!check_rank_known(c, why)) return false;
  if (in_rank(c, 0) > 6) return decline(why, DeclineCode::kUnsupportedType, "Pad on rank > 6");
  const std::string mode = c.node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return decline(why, DeclineCode::kUnsupportedAttribute, "Pad mode '" + mode + "'");
  const TypeInfo* o = out_type(c, 0);
  if (!o || !o->has_shape) return decline(why, DeclineCode::kDynamicShape, "the output's rank is unknown");
  return true;
}

std::unique_ptr<Kernel> make_pad(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<PadKernel>(info, d);
}

bool check_gather(const ClaimInfo& c, Decline* why) {
  if (!check_rank_known(c, why)) return false;
  const TypeInfo* t = in_type(c, 1);
  if (!t || (t->dtype != DType::kInt64 && t->dtype != DType::kInt32))
    return decline(why, DeclineCode::kUnsupportedType, "Gather indices must be int32 or int64");
  return true;
}

std::unique_ptr<Kernel> make_gather(const KernelCreateInfo& info, const std::shared_ptr<Device>& d) {
  return std::make_unique<GatherKernel>(info, d);
}

}  // namespace

void add_tensor_ops(std::vector<OpDef>& defs) {
  defs.push_back({"", "Reshape", 5, kMaxOpset, 0b10, 0b10, check_view, make_view});
  defs.push_back({"", "Flatten", 1, kMaxOpset, 0, 0, check_view, make_view});
  defs.push_back({"", "Squeeze", 1, kMaxOpset, 0b10, 0b10, check_view, make_view});
  defs.push_back({"", "Unsqueeze", 1, kMaxOpset, 0b10, 0b10, check_view, make_view});
  defs.push_back({"", "Identity", 1, kMaxOpset, 0, 0, check_view, make_view});
  defs.push_back({"", "Dropout", 1, kMaxOpset, 0b110, 0b110, check_view, make_view});
  defs.push_back({"", "Transpose", 1, kMaxOpset, 0, 0, check_rank_known, make_transpose});
  defs.push_back({"", "Slice", 1, kMaxOpset, 0b11110, 0b11110, check_slice, make_slice});
  defs.push_back({"", "Expand", 8, kMaxOpset, 0b10, 0b10, check_expand, make_expand});
  defs.push_back({"", "Concat", 4, kMaxOpset, 0, 0, check_rank_known, make_concat});
  defs.push_back({"", "Split", 2, kMaxOpset, 0b10, 0b10, check_split, make_split});
  defs.push_back({"", "Gather", 1, kMaxOpset, 0b10, 0b10, check_gather, make_gather});
  defs.push_back({"", "Pad", 1, kMaxOpset, 0b1110, 0b1110, check_pad, make_pad});
}

}  // namespace onyx::vulkan
