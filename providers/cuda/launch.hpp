// Launchers of onyx's own CUDA kernels (elementwise.cu, reduce.cu). Plain types only, so the
// .cu files include nothing of onyx and the host code includes only the runtime API.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "strided.hpp"

namespace onyx::cuda {

/// Element types the kernels know (a subset of onyx::DType, by meaning).
enum class Ty : int { kF32, kF16, kF64, kI8, kU8, kI16, kI32, kI64, kBool, kBF16 };

/// The floating-point storage types of the math kernels: float32, float16 and bfloat16 (the
/// 16-bit ones are loaded into fp32 registers, computed in fp32 and rounded on store, half.hpp).
inline bool is_float_storage(Ty t) { return t == Ty::kF32 || t == Ty::kF16 || t == Ty::kBF16; }

enum class UnaryOp : int {
  kRelu, kSigmoid, kTanh, kExp, kLog, kSqrt, kReciprocal, kAbs, kNeg, kErf, kFloor, kCeil, kRound,
  kSoftplus, kSoftsign, kLeakyRelu, kElu, kSelu, kCelu, kHardSigmoid, kHardSwish, kClip, kGelu, kGeluTanh,
  kSin, kCos, kSign, kMish, kThresholdedRelu,
};
enum class BinaryOp : int {
  kAdd, kSub, kMul, kDiv, kPow, kMax, kMin, kMod, kFmod, kPRelu,
  kEqual, kLess, kGreater, kLessEqual, kGreaterEqual,  // bool output
  kAnd, kOr, kXor,                                      // bool inputs and output
};

/// y[i] = op(x[i]) over n contiguous elements of `ty` (kF32, kF16, kBF16); a, b: the op's
/// parameters (alpha/beta, Clip's min/max, Selu's gamma in b).
void unary(Ty ty, UnaryOp op, const void* x, void* y, int64_t n, float a, float b, cudaStream_t s);
inline void unary_f32(UnaryOp op, const float* x, float* y, int64_t n, float a, float b, cudaStream_t s) {
  unary(Ty::kF32, op, x, y, n, a, b, s);
}
/// Logical not over bools.
void not_bool(const uint8_t* x, uint8_t* y, int64_t n, cudaStream_t s);
/// y = op(a, b) over `out` dims (contiguous output); a and b are strided views with broadcast.
/// `ty` is the input type (kF32, kF16, kBF16, kI32, kI64; kBool for And/Or/Xor); 16-bit floats
/// are computed in fp32.
void binary(BinaryOp op, Ty ty, const void* a, const Strided& sa, const void* b, const Strided& sb, void* y, int64_t n,
            cudaStream_t s);
/// y = cond ? x : z, each a strided view over the output dims; elements of `elem` bytes.
void where(const uint8_t* cond, const Strided& sc, const void* x, const Strided& sx, const void* z, const Strided& sz,
           void* y, size_t elem, int64_t n, cudaStream_t s);
/// dst[dst view] = src[src view] over the same dims (Transpose, Expand, Slice, Concat, Split, Tile
/// rows...); elements of `elem` bytes (1, 2, 4 or 8).
void strided_copy(const void* src, const Strided& s, void* dst, const Strided& d, size_t elem, int64_t n,
                  cudaStream_t stream);
/// Gather along an axis: data viewed as [outer, axis_dim, inner], indices (int32 or int64,
/// negative ones count from the end) of count nidx; out is [outer, nidx, inner]. An index out of
/// range sets *error to 1 (checked when the run ends) and writes zeros.
void gather(const void* data, const void* indices, bool idx64, void* out, size_t elem, int64_t outer, int64_t axis_dim,
            int64_t nidx, int64_t inner, int* error, cudaStream_t s);
/// Pad (or, with negative pads, crop) of a dense row-major tensor: output index o_d of dim d
/// reads input index pad_source(o_d - begin[d], in[d], mode); where that is -1, the output is the
/// constant `value` (elem bytes, host memory). Elements of `elem` bytes (1, 2, 4 or 8).
struct PadGeometry {
  int rank = 0;
  int64_t in[kMaxRank] = {}, out[kMaxRank] = {}, begin[kMaxRank] = {};
};
void pad(const void* x, void* y, const PadGeometry& g, PadMode mode, const void* value, size_t elem, int64_t n, cudaStream_t s);
/// One separable pass of Resize: src viewed as [outer, in, inner] into dst [outer, out, inner];
/// output index o along the axis is the sum over its `taps` of w[o taps + t] * src[idx[o taps + t]]
/// (w null: nearest, its one tap copied). The tables (ops/image's build_resize_axis) are in device
/// memory; src and dst are of `ty` (kF32, kF16, kBF16), the weights float.
void resize_pass(Ty ty, const void* src, void* dst, int64_t outer, int64_t in, int64_t out, int64_t inner, int taps,
                 const int64_t* idx, const float* w, cudaStream_t s);
inline void resize_pass_f32(const float* src, float* dst, int64_t outer, int64_t in, int64_t out, int64_t inner, int taps,
                            const int64_t* idx, const float* w, cudaStream_t s) {
  resize_pass(Ty::kF32, src, dst, outer, in, out, inner, taps, idx, w, s);
}
/// GatherElements: output index (i_0 .. i_r) (row-major over `out`, the indices' shape) reads
/// data at the same index with coordinate `axis` replaced by indices[i] (negative counts from the
/// end); one out of range sets *error to 1 and writes zero.
struct GatherElementsArgs {
  int rank = 0, axis = 0;
  int64_t out[kMaxRank] = {}, data_strides[kMaxRank] = {};
  int64_t axis_dim = 0;
};
void gather_elements(const void* data, const void* indices, bool idx64, void* out, size_t elem, const GatherElementsArgs& a,
                     int64_t n, int* error, cudaStream_t s);
/// CumSum along the middle axis of x viewed as [outer, len, inner] (kF32, kI32 or kI64): one
/// thread per line; exclusive leaves each element out of its own sum, reverse sums from the end.
void cumsum(Ty ty, const void* x, void* y, int64_t outer, int64_t len, int64_t inner, bool exclusive, bool reverse, cudaStream_t s);
/// Element type conversion of n elements.
void cast(Ty from, const void* x, Ty to, void* y, int64_t n, cudaStream_t s);
/// Fills n elements of `elem` bytes with the pattern at `value` (host memory, elem bytes).
void fill(void* y, const void* value, size_t elem, int64_t n, cudaStream_t s);

// The kernels below take a `ty` of kF32, kF16 or kBF16 for their data (16-bit storage is
// computed in fp32 registers); the *_f32 forms are the float32 calls.

/// Softmax / LogSoftmax over the middle axis of x viewed as [outer, axis, inner].
void softmax(Ty ty, const void* x, void* y, int64_t outer, int64_t axis, int64_t inner, bool log, cudaStream_t s);
inline void softmax_f32(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, bool log, cudaStream_t s) {
  softmax(Ty::kF32, x, y, outer, axis, inner, log, s);
}
/// LayerNormalization over the last `cols` elements of each of `rows` rows; scale and bias (may
/// be null, of the data's type) have `cols` elements. mean/inv_std (may be null, float) get one
/// value per row.
void layernorm(Ty ty, const void* x, const void* scale, const void* bias, void* y, float* mean, float* inv_std, int64_t rows,
               int64_t cols, float eps, bool rms, cudaStream_t s);
inline void layernorm_f32(const float* x, const float* scale, const float* bias, float* y, float* mean, float* inv_std, int64_t rows,
                          int64_t cols, float eps, bool rms, cudaStream_t s) {
  layernorm(Ty::kF32, x, scale, bias, y, mean, inv_std, rows, cols, eps, rms, s);
}

enum class ReduceOp : int { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };
/// Reduction: the output has `kept.rank` dims (the kept ones, each with its input stride), the
/// reduced dims are iterated through `red` (dims and input strides). Accumulates in fp32.
void reduce(Ty ty, ReduceOp op, const void* x, const Strided& kept, const Strided& red, void* y, int64_t n_out, int64_t n_red,
            cudaStream_t s);
inline void reduce_f32(ReduceOp op, const float* x, const Strided& kept, const Strided& red, float* y, int64_t n_out,
                       int64_t n_red, cudaStream_t s) {
  reduce(Ty::kF32, op, x, kept, red, y, n_out, n_red, s);
}
/// ArgMax/ArgMin along an axis of x viewed as [outer, axis, inner], int64 output.
void arg_reduce(Ty ty, bool max, bool select_last, const void* x, int64_t* y, int64_t outer, int64_t axis, int64_t inner,
                cudaStream_t s);
inline void arg_reduce_f32(bool max, bool select_last, const float* x, int64_t* y, int64_t outer, int64_t axis, int64_t inner,
                           cudaStream_t s) {
  arg_reduce(Ty::kF32, max, select_last, x, y, outer, axis, inner, s);
}
/// onyx::Attention: for each batch index b (row-major over the batch dims) and query row i,
///   y[b, i, :] = softmax_j(scale * q[b, i, :] . kt[b, :, j] + bias[b, i, j]) x v[b, j, :].
/// q, kt, v: per batch index the element offset of a dense [sq, d], [d, sk], [sk, dv] matrix,
/// given as Strided views over the output's batch dims (stride 0 where an operand broadcasts;
/// rank 0 for no batch dims). bias (may be null): its batch view plus the strides of its query
/// and key dims (0 where it broadcasts). y is dense [batch..., sq, dv]. Every tensor is of the
/// type given to attention() (the scores are fp32 scratch).
struct AttentionArgs {
  const void* q = nullptr;
  const void* kt = nullptr;
  const void* v = nullptr;
  const void* bias = nullptr;
  void* y = nullptr;
  Strided bq, bk, bv, bb;
  int64_t batch = 1, sq = 0, d = 0, sk = 0, dv = 0;
  int64_t bias_row = 0, bias_col = 0;
  float scale = 1.0f;
};
/// Device scratch (floats) attention_f32 needs for these sizes.
int64_t attention_scratch_floats(int64_t batch, int64_t sq, int64_t sk);
/// Runs it; `scratch` holds attention_scratch_floats(...) floats.
void attention(Ty ty, const AttentionArgs& a, float* scratch, cudaStream_t s);
inline void attention_f32(const AttentionArgs& a, float* scratch, cudaStream_t s) { attention(Ty::kF32, a, scratch, s); }
/// MaxPool / AveragePool computed directly (what cuDNN's pooling cannot express: ceil_mode,
/// dilations, asymmetric pads, MaxPool's Indices), one thread per output element. Up to 3 spatial
/// dims (unused ones 1); the window of output o along dim d starts at o s_d - pad_begin_d and takes
/// k_d taps d_d apart. Max: NaN propagates, ties keep the first tap; `indices` (may be null) gets
/// the flat index of the maximum over the whole input (row-major, or with storage_order 1
/// column-major over the spatial dims). Average: the taps inside the input are summed and divided
/// by their count, or with count_include_pad by the taps inside the padded extent
/// [-pad_begin, in + pad_end) (a window that ceil_mode lets run past it counts only what is inside).
struct PoolArgs {
  int64_t planes = 0;  // N * C
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pad_begin[3] = {}, pad_end[3] = {};
  bool max = true, count_include_pad = false, column_major_indices = false;
  float p = 0;  // LpPool when > 0: (sum of |x|^p over the taps inside the input)^(1/p)
};
void pool(Ty ty, const void* x, void* y, int64_t* indices, const PoolArgs& a, cudaStream_t s);
inline void pool_f32(const float* x, float* y, int64_t* indices, const PoolArgs& a, cudaStream_t s) { pool(Ty::kF32, x, y, indices, a, s); }

/// y[n, c, spatial] = y * scale[c] + bias[c] in place (InstanceNormalization's affine part, and
/// BatchNormalization folded into a per-channel scale and shift); scale and bias are float.
void channel_scale_bias(Ty ty, void* y, const float* scale, const float* bias, int64_t n, int64_t c, int64_t spatial, cudaStream_t s);
inline void channel_scale_bias_f32(float* y, const float* scale, const float* bias, int64_t n, int64_t c, int64_t spatial, cudaStream_t s) {
  channel_scale_bias(Ty::kF32, y, scale, bias, n, c, spatial, s);
}
/// BatchNormalization (inference) from its parameters, all float: y = (x - mean[c]) * scale[c] /
/// sqrt(var[c] + eps) + bias[c] over x [n, c, spatial] (or channels-last with spatial = 1 and n
/// the pixel count), x and y of `ty`.
void batch_norm(Ty ty, const void* x, void* y, const float* scale, const float* bias, const float* mean, const float* var, float eps,
                int64_t n, int64_t c, int64_t spatial, cudaStream_t s);

/// What follows a convolution in onyx::FusedConv.
enum class ConvAct : int { kNone, kRelu, kClip };
/// y[c-major layout: n, c, spatial] = act(y + bias[c]) in one pass: Conv/ConvTranspose's bias and
/// FusedConv's activation (Relu, or Clip to [lo, hi]) after cuDNN's convolution. bias may be null;
/// y and bias are of `ty`.
void channel_bias_act(Ty ty, void* y, const void* bias, int64_t n, int64_t c, int64_t spatial, ConvAct act, float lo, float hi,
                      cudaStream_t s);
inline void channel_bias_act_f32(float* y, const float* bias, int64_t n, int64_t c, int64_t spatial, ConvAct act, float lo, float hi,
                                 cudaStream_t s) {
  channel_bias_act(Ty::kF32, y, bias, n, c, spatial, act, lo, hi, s);
}

}  // namespace onyx::cuda
