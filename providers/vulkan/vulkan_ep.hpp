// Vulkan EP internals shared by its files: the kernel manifest (one OpDef per op, with the claim
// checks and the host-read inputs), the kernel base class and small helpers.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ep/device_shapes.hpp"
#include "ep/factory.hpp"
#include "ep/provider.hpp"
#include "vk_device.hpp"

namespace onyx::vulkan {

/// Highest ai.onnx opset whose semantics the claims were checked against.
constexpr int kMaxOpset = 21;
/// Largest rank the index-mapping shaders handle.
constexpr int kMaxRank = 6;

// in_type(), out_type(), in_rank(), is_constant(): ep/provider.hpp (shared with the other EPs).
/// Claim check: input 0's rank is known.
inline bool check_rank_known(const ClaimInfo& c, Decline* why) {
  if (in_rank(c, 0) < 0) return decline(why, DeclineCode::kDynamicShape, "the input's rank is unknown");
  return true;
}
inline const Tensor* constant_of(const Graph& g, const Node& n, size_t i) {
  return is_constant(g, n, i) ? &g.values[n.inputs[i]].initializer : nullptr;
}
/// constant_of(), or the value of the Constant node producing input i: claims made before
/// Constant nodes are folded into initializers (the optimizer's half_in_float pass asks which EP
/// takes a float16 node while a Clip's bounds are still Constant nodes) see the same value.
inline const Tensor* constant_or_node(const Graph& g, const Node& n, size_t i) {
  if (const Tensor* t = constant_of(g, n, i)) return t;
  if (!n.has_input(i)) return nullptr;
  const int p = g.values[n.inputs[i]].producer;
  if (p < 0) return nullptr;
  const Node& c = g.nodes[p];
  return c.op_type == "Constant" && c.domain.empty() && c.outputs.size() == 1 ? c.attr_tensor("value") : nullptr;
}

/// One line of the manifest.
struct OpDef {
  const char* domain;  // "" = ai.onnx
  const char* op;
  int since, until;
  /// Inputs (bit i) that need not be float32: indices, conditions, shape operands.
  uint32_t any_type_inputs;
  /// Inputs read on the host (shape operands, indices): no copy to the device is inserted.
  uint32_t host_inputs;
  /// Op-specific checks (attributes, ranks); null = none.
  bool (*check)(const ClaimInfo&, Decline*);
  std::unique_ptr<Kernel> (*create)(const KernelCreateInfo&, const std::shared_ptr<Device>&);
  /// Output 0 may be other than float32 (Cast).
  bool any_type_output = false;
};

/// The manifest, gathered from the kernel families (kernels/*.cpp).
const std::vector<OpDef>& manifest();
void add_elementwise_ops(std::vector<OpDef>& defs);
void add_linalg_ops(std::vector<OpDef>& defs);
void add_nn_ops(std::vector<OpDef>& defs);
void add_tensor_ops(std::vector<OpDef>& defs);

/// Base of every Vulkan kernel: float32 constant inputs (weights) are uploaded once when the
/// kernel is prepared; run() records the node's work into the run's Stream.
class VkKernel : public Kernel {
 public:
  VkKernel(const KernelCreateInfo& info, std::shared_ptr<Device> dev, uint32_t host_inputs);
  void compute(KernelContext& ctx) const final;
  virtual void run(KernelContext& ctx, Stream& s) const = 0;

 protected:
  /// Input i on the device: its uploaded constant or the device tensor in the frame.
  BufRef in(const KernelContext& ctx, size_t i) const;
  /// Output i (allocated by the executor, or here when its shape depends on data).
  Tensor& out(KernelContext& ctx, size_t i, const Shape& shape, DType dt) const;
  const std::string& label() const { return label_; }
  /// Uploads a host array now and keeps it (prepared weights).
  BufRef upload(const void* data, size_t bytes) const;
  /// The pipeline of shader `name` for this node's float storage (float32, or float16 when the
  /// node's tensors are float16 or fp16_storage stores its float32 ones as float16).
  const Pipeline& pipe(const char* name, uint32_t bindings) const { return dev_->pipeline(name, bindings, half_); }

  std::shared_ptr<Device> dev_;
  std::string label_;
  bool half_ = false;  // the node's float tensors are float16 on the device
  std::vector<std::shared_ptr<Buffer>> consts_;  // per input: uploaded constant, or null
};

/// Push-constant block helper: 32 words.
struct Push {
  uint32_t w[32] = {};
  size_t n = 0;
  Push& i(int64_t v) {
    const int32_t x = static_cast<int32_t>(v);
    std::memcpy(&w[n++], &x, 4);
    return *this;
  }
  Push& f(float v) {
    std::memcpy(&w[n++], &v, 4);
    return *this;
  }
  /// Six ints, `v` padded with `fill`.
  Push& six(const std::vector<int64_t>& v, int64_t fill) {
    for (size_t k = 0; k < 6; ++k) i(k < v.size() ? v[k] : fill);
    return *this;
  }
  size_t bytes() const { return n * 4; }
};

/// The matrix kernels' epilogue: bias (per output channel for Conv; beta * C through strides for
/// MatMul / Gemm), alpha, activation (0 none, 1 Relu, 2 Clip to [lo, hi]).
struct Epilogue {
  bool half = false;  // float16 storage of A, B, bias and C
  bool conv = false;
  int64_t groups = 1;
  bool has_bias = false;
  int act = 0;
  int64_t bias_b = 0, bias_m = 0, bias_n = 0;
  float alpha = 1, beta = 1, lo = 0, hi = 0;
};
/// Records the matrix kernel (matmul or conv_gemm, per `e.conv`) with push constants `base` (the
/// kernel's block without the split-K words) over gx x gy tiles of `items` products of M x N
/// with depth K. Splits K over more work groups when the tiles alone would leave the device idle,
/// summing the parts (and applying the epilogue) in a second dispatch.
void record_matrix_kernel(Stream& s, Device& dev, Push base, const BufRef& A, const BufRef& B, const BufRef& bias,
                          const BufRef& C, uint32_t gx, uint32_t gy, int64_t items, int64_t M, int64_t N, int64_t K,
                          const Epilogue& e);

/// Element kinds of the cast shader (cast.comp): how a tensor is stored on the device.
constexpr int kKindF32 = 0, kKindF16 = 1, kKindI32 = 2, kKindI64 = 3, kKindBool = 4;
/// The kind a tensor of `t` is stored as on `dev` (-1: none the cast shader converts).
int storage_kind(const Device& dev, DType t);
/// Records y = x converted from kind `src` to kind `dst` over `n` elements.
void record_cast(Stream& s, Device& dev, const BufRef& x, int src, const BufRef& y, int dst, int64_t n);

// strides_of() and broadcast_strides(): ep/device_shapes.hpp (shared with the other device EP).
/// Checks an element count fits the shaders' 32-bit indices.
void check_size(const std::string& where, int64_t numel);

}  // namespace onyx::vulkan
