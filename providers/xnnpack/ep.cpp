// The XNNPACK EP: a compiling EP. It claims the float32 nodes XNNPACK's operator API can run
// (claim.cpp) and compiles each region of them into one kernel that keeps activations NHWC
// inside and converts layouts only at the region's boundary (region.cpp).
#include <cstdlib>

#include "xnnpack_ep.hpp"

namespace onyx::xnnpack {

Threads::Threads(int n) {
  if (n > 1) {
    pool_ = pthreadpool_create(static_cast<size_t>(n));
    if (!pool_) fail(ErrorCode::kEpFailure, "xnnpack: pthreadpool_create(", n, ") failed");
    count_ = static_cast<int>(pthreadpool_get_threads_count(pool_));
  }
}

Threads::~Threads() {
  if (pool_) pthreadpool_destroy(pool_);
}

const char* status_name(xnn_status s) {
  switch (s) {
    case xnn_status_success: return "xnn_status_success";
    case xnn_status_uninitialized: return "xnn_status_uninitialized";
    case xnn_status_invalid_parameter: return "xnn_status_invalid_parameter";
    case xnn_status_invalid_state: return "xnn_status_invalid_state";
    case xnn_status_unsupported_parameter: return "xnn_status_unsupported_parameter";
    case xnn_status_unsupported_hardware: return "xnn_status_unsupported_hardware";
    case xnn_status_out_of_memory: return "xnn_status_out_of_memory";
  }
  return "xnn_status_unknown";
}

void fail_status(xnn_status s, const std::string& where, const char* call) {
  fail(s == xnn_status_out_of_memory ? ErrorCode::kRuntime : ErrorCode::kEpFailure, "xnnpack: ", where, ": ", call,
       " failed with ", status_name(s), " (", static_cast<int>(s), ")");
}

namespace {

int option_int(const OptionList& o, const char* key, int dflt) {
  for (const auto& [k, v] : o)
    if (k == key) {
      char* end = nullptr;
      const long x = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end || x < 0 || x > 4096)
        fail(ErrorCode::kInvalidArgument, "xnnpack: option '", key, "' must be an integer in [0, 4096], got '", v, "'");
      return static_cast<int>(x);
    }
  return dflt;
}

bool option_bool(const OptionList& o, const char* key, bool dflt) {
  for (const auto& [k, v] : o)
    if (k == key) {
      if (v == "true" || v == "1") return true;
      if (v == "false" || v == "0") return false;
      fail(ErrorCode::kInvalidArgument, "xnnpack: option '", key, "' must be true or false, got '", v, "'");
    }
  return dflt;
}

class XnnpackEp final : public ExecutionProvider {
 public:
  XnnpackEp(int threads, bool quantized) : threads_(std::make_shared<Threads>(threads)), quantized_(quantized) {}
  std::string name() const override { return "xnnpack"; }
  std::string device() const override { return "cpu:0"; }
  bool claim(const ClaimInfo& info, Decline* why) const override { return claim_node(info, quantized_, why); }
  std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const override {
    fail(ErrorCode::kNotImplemented, "xnnpack: ", info.node.label(), " runs only inside a compiled region");
  }
  bool compiles_regions() const override { return true; }
  // Single nodes are worth it too: each is one XNNPACK operator (plus the boundary copies).
  size_t min_region_nodes() const override { return 1; }
  std::unique_ptr<Kernel> compile_region(const RegionInfo& region) const override {
    return compile_xnnpack_region(region, threads_);
  }

 private:
  // One pthreadpool per EP instance (per session), shared by its regions. pthreadpool
  // serialises concurrent parallel sections, so concurrent runs queue on it.
  std::shared_ptr<const Threads> threads_;
  bool quantized_;  // the option `quantized`: take 8-bit nodes and QDQ groups
};

}  // namespace

std::unique_ptr<ExecutionProvider> create_xnnpack_ep(const EpCreateContext& ctx) {
  const xnn_status st = xnn_initialize(nullptr);
  if (st != xnn_status_success) fail_status(st, "initialising XNNPACK", "xnn_initialize");
  int threads = option_int(ctx.options, "threads", 0);
  const bool quantized = option_bool(ctx.options, "quantized", true);
  if (threads == 0) threads = ctx.session_threads;
  // XNNPACK cannot run on onyx's ThreadPool (Debian's pthreadpool has no way to plug another
  // pool in), so it gets its own pthreadpool of `threads` threads; onyx's intra-op pool is idle
  // while an XNNPACK region runs, and the two pools never compete.
  return std::make_unique<XnnpackEp>(threads, quantized);
}

}  // namespace onyx::xnnpack
