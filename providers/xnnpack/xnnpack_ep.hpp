// XNNPACK EP internals shared by its files.
#pragma once

#include <pthreadpool.h>
#include <xnnpack.h>

#include <memory>
#include <string>

#include "core/common.hpp"
#include "ep/factory.hpp"
#include "ep/provider.hpp"

namespace onyx::xnnpack {

/// Highest ai.onnx opset whose semantics the claims below were checked against.
constexpr int kMaxOpset = 21;  // what onyx itself supports

/// XNNPACK's thread pool for one EP instance (null when single-threaded: XNNPACK then runs on
/// the calling thread). Debian's pthreadpool cannot be handed onyx's ThreadPool, so XNNPACK
/// keeps its own workers; onyx's intra-op pool sits idle while a region runs.
class Threads {
 public:
  explicit Threads(int n);
  ~Threads();
  Threads(const Threads&) = delete;
  Threads& operator=(const Threads&) = delete;
  pthreadpool_t get() const { return pool_; }
  int count() const { return count_; }

 private:
  pthreadpool_t pool_ = nullptr;
  int count_ = 1;
};

/// The per-session EP.
std::unique_ptr<ExecutionProvider> create_xnnpack_ep(const EpCreateContext& ctx);

/// The value `v` when it is known at compile time: an initializer that is not a graph input, or
/// the output of a Constant node with a tensor `value`. Null otherwise.
const Tensor* constant_value(const Graph& g, int v);
inline const Tensor* constant_input(const Graph& g, const Node& n, size_t i) {
  return n.has_input(i) ? constant_value(g, n.inputs[i]) : nullptr;
}

/// uint8 or int8: the element types of XNNPACK's quantized operators.
inline bool is_q8(DType t) { return t == DType::kUInt8 || t == DType::kInt8; }
/// float32 or float16: the float types the EP takes. Regions compute both in float32 (float16
/// values are converted where they enter and leave a region; see region.cpp).
inline bool is_float_like(DType t) { return t == DType::kFloat || t == DType::kFloat16; }

/// A constant float operand (weights, bias, slopes...): a float32 or float16 constant_value(), or
/// the output of a DequantizeLinear of constants (8-bit or int32 data, float32 scale and zero
/// point, per tensor or per axis) -- what constant folding turns into a float32 initializer, and
/// what a QDQ model's float ops read before the QDQ fusion runs. `dtype` is undefined when `v` is
/// none of these.
struct ConstRef {
  Shape shape;
  DType dtype = DType::kUndefined;
  const Tensor* tensor = nullptr;  // the constant itself (null for a DequantizeLinear's output)
  explicit operator bool() const { return dtype != DType::kUndefined; }
  size_t rank() const { return shape.size(); }
  int64_t dim(size_t i) const { return shape[i]; }
  int64_t numel() const { return shape.numel(); }
};
ConstRef const_ref(const Graph& g, int v);
inline ConstRef const_ref_input(const Graph& g, const Node& n, size_t i) {
  return n.has_input(i) ? const_ref(g, n.inputs[i]) : ConstRef{};
}
/// The float32 value of a const_ref() that is float32, float16 or a DequantizeLinear of
/// constants (evaluated as ONNX defines it: (x - zero_point) * scale in float32). Throws
/// onyx::Error naming the value otherwise.
Tensor const_float(const Graph& g, int v);

/// Per-tensor quantisation parameters of an 8-bit tensor of type `type`: a constant float32
/// scale that is positive and normal, and a constant zero point of `type` (absent: 0).
struct QParam {
  float scale = 1.0f;
  int32_t zp = 0;
  DType type = DType::kUInt8;
};
/// Reads node n's scale (input `si`) and zero point (input `zi`) for data of type `type`. False,
/// with the reason in *why, when they are not per-tensor constants XNNPACK can take.
bool read_qparam(const Graph& g, const Node& n, size_t si, size_t zi, DType type, const char* what, QParam* out,
                 std::string* why);
/// The zero points (one or per channel) of an 8-bit constant weight tensor of node n (input `zi`,
/// absent: 0) and its scales (input `si`): `count` values each (a single value repeated).
/// False with the reason when they are not constants of that size.
bool read_weight_qparams(const Graph& g, const Node& n, size_t si, size_t zi, DType type, int64_t count,
                         std::vector<float>* scales, std::vector<int32_t>* zps, std::string* why);
/// XNNPACK's limit on a convolution's or fully connected layer's requantisation scale
/// (x_scale * w_scale / y_scale, computed in float32 as XNNPACK does): [2^-32, 256). Below it
/// the library asserts; a margin of 2 keeps clear of that edge.
inline bool requant_scale_ok(float x_scale, float w_scale, float y_scale) {
  const float r = x_scale * w_scale / y_scale;
  return r >= 0x1.0p-31f && r < 256.0f;
}

/// Bounds of a clamp-like activation: Relu, or Clip with constant bounds. False (with a reason)
/// when `n` is not one or its bounds are not constant.
bool activation_bounds(const Graph& g, const Node& n, float* lo, float* hi, std::string* why = nullptr);

/// Whether the EP takes `info.node`, with the value types `info` gives for it (claim.cpp).
/// Without `quantized` (the EP option), 8-bit nodes and the nodes of QDQ groups are declined.
bool claim_node(const ClaimInfo& info, bool quantized, Decline* why);

/// Compiles a region into one kernel (region.cpp).
std::unique_ptr<Kernel> compile_xnnpack_region(const RegionInfo& region, std::shared_ptr<const Threads> threads);

/// "xnn_status_invalid_parameter" and so on.
const char* status_name(xnn_status s);
/// Throws onyx::Error naming the node (`where`), the XNNPACK call and its status.
[[noreturn]] void fail_status(xnn_status s, const std::string& where, const char* call);
inline void check_status(xnn_status s, const std::string& where, const char* call) {
  if (s != xnn_status_success) fail_status(s, where, call);
}

}  // namespace onyx::xnnpack
