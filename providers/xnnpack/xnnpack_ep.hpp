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

/// Bounds of a clamp-like activation: Relu, or Clip with constant bounds. False (with a reason)
/// when `n` is not one or its bounds are not constant.
bool activation_bounds(const Graph& g, const Node& n, float* lo, float* hi, std::string* why = nullptr);

/// Whether the EP takes `n` (claim.cpp).
bool claim_node(const Graph& g, const Node& n, Decline* why);

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
