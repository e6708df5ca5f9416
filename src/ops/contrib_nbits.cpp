// com.microsoft MatMulNBits: MatMul with block-quantized low-bit weights (ONNX Runtime's
// weight-only quantization: B is N x K in blocks of block_size along K, each block `bits`-bit
// integers with a scale and a zero point).
#include "ops/families.hpp"
#include "ops/schema.hpp"

namespace onyx {

namespace {

/// A known dim d of input i must equal `want` (symbolic dims are not checked).
void check_dim(InferContext& ctx, size_t i, size_t d, int64_t want, const char* name) {
  const Shape& s = ctx.input_shape(i);
  if (s[d] >= 0 && s[d] != want)
    ctx.fail_node(name, " (input ", i, ") has shape ", s.to_string(), ": dim ", d, " must be ", want);
}

/// Input i is 1-D with `flat` elements or 2-D [rows, cols] (when its shape is known).
void check_flat_or_2d(InferContext& ctx, size_t i, int64_t rows, int64_t cols, const char* name) {
  if (!ctx.input_has_shape(i)) return;
  const Shape& s = ctx.input_shape(i);
  if (s.size() == 1) {
    check_dim(ctx, i, 0, rows * cols, name);
  } else if (s.size() == 2) {
    check_dim(ctx, i, 0, rows, name);
    check_dim(ctx, i, 1, cols, name);
  } else {
    ctx.fail_node(name, " (input ", i, ") must be [", rows * cols, "] or [", rows, ", ", cols, "], got shape ", s.to_string());
  }
}

void infer_matmul_nbits(InferContext& ctx) {
  const Node& n = ctx.node();
  if (!n.has_attr("K") || !n.has_attr("N")) ctx.fail_node("attributes K and N are required");
  const int64_t K = n.attr_int("K", 0), N = n.attr_int("N", 0);
  const int64_t bits = n.attr_int("bits", 4), block = n.attr_int("block_size", 0);
  const int64_t level = n.attr_int("accuracy_level", 0);
  if (K <= 0 || N <= 0) ctx.fail_node("K (", K, ") and N (", N, ") must be positive");
  if (K > (int64_t(1) << 40) || N > (int64_t(1) << 40)) ctx.fail_node("K (", K, ") or N (", N, ") is too large");
  if (bits != 2 && bits != 4 && bits != 8) ctx.fail_node("bits must be 2, 4 or 8, got ", bits);
  if (block < 16 || block > (int64_t(1) << 30) || (block & (block - 1)) != 0)
    ctx.fail_node("block_size must be a power of 2 and at least 16, got ", block);
  if (level < 0 || level > 4) ctx.fail_node("accuracy_level must be in [0, 4], got ", level);
  if (n.attr_int("weight_prepacked", 0) != 0)
    ctx.fail_node("weight_prepacked=1 (weights in an execution provider's own layout) is not supported");

  ctx.require_dtype(0, {DType::kFloat, DType::kFloat16});
  const DType t = ctx.input_dtype(0);
  ctx.require_dtype(1, {DType::kUInt8});
  if (ctx.input_dtype(2) != t) ctx.fail_node("scales (input 2) must have A's type ", dtype_name(t));
  const int64_t k_blocks = (K + block - 1) / block, blob = block * bits / 8;
  if (ctx.input_has_shape(1)) {
    const Shape& b = ctx.input_shape(1);
    if (b.size() != 3) ctx.fail_node("B (input 1) must be 3-D [N, k_blocks, blob_size], got shape ", b.to_string());
    check_dim(ctx, 1, 0, N, "B");
    check_dim(ctx, 1, 1, k_blocks, "B");
    check_dim(ctx, 1, 2, blob, "B");
  }
  check_flat_or_2d(ctx, 2, N, k_blocks, "scales");
  if (ctx.has_input(3)) {
    const DType z = ctx.input_dtype(3);
    if (z == DType::kUInt8)
      check_flat_or_2d(ctx, 3, N, (k_blocks * bits + 7) / 8, "zero_points");
    else if (z == t)
      check_flat_or_2d(ctx, 3, N, k_blocks, "zero_points");
    else
      ctx.fail_node("zero_points (input 3) must be uint8 or A's type ", dtype_name(t), ", got ", dtype_name(z));
  }
  if (ctx.has_input(4)) {
    ctx.require_dtype(4, {DType::kInt32});
    if (ctx.input_has_shape(4)) {
      const Shape& g = ctx.input_shape(4);
      if (g.size() != 1 || (g[0] >= 0 && g[0] != K && g[0] != k_blocks * block))
        ctx.fail_node("g_idx (input 4) must be [", K, "] or [", k_blocks * block, "], got shape ", g.to_string());
    }
  }
  if (ctx.has_input(5)) {
    if (ctx.input_dtype(5) != t) ctx.fail_node("bias (input 5) must have A's type ", dtype_name(t));
    if (ctx.input_has_shape(5)) {
      if (ctx.input_shape(5).size() != 1) ctx.fail_node("bias (input 5) must be 1-D [", N, "], got shape ", ctx.input_shape(5).to_string());
      check_dim(ctx, 5, 0, N, "bias");
    }
  }
  if (!ctx.input_has_shape(0)) {
    ctx.set_output_unranked(0, t);
    return;
  }
  Shape y = ctx.input_shape(0);
  if (y.size() == 0) ctx.fail_node("A (input 0) must have rank 1 or more");
  if (y[y.size() - 1] >= 0 && y[y.size() - 1] != K)
    ctx.fail_node("A (input 0) has shape ", y.to_string(), ": its last dim must be K = ", K);
  y[y.size() - 1] = N;
  ctx.set_output(0, t, std::move(y));
}

}  // namespace

void register_contrib_nbits_ops(OpRegistry& r) { r.add("com.microsoft", "MatMulNBits", {1}, infer_matmul_nbits); }

}  // namespace onyx
