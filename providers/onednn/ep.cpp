// The oneDNN EP: claims and region compilation.
#include <oneapi/dnnl/dnnl.hpp>

#include "onednn_ep.hpp"

namespace onyx::onednn {
namespace {

class OneDnnEp final : public ExecutionProvider {
 public:
  std::string name() const override { return "onednn"; }
  std::string device() const override { return "cpu:0"; }
  bool claim(const ClaimInfo& info, Decline* why) const override {
    *why = {DeclineCode::kUnsupportedOp, "no oneDNN kernel for " + info.node.op_type};
    return false;
  }
  std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const override {
    fail(ErrorCode::kNotImplemented, "onednn: no kernel for ", info.node.op_type);
  }
};

}  // namespace

std::unique_ptr<ExecutionProvider> create_onednn_ep(const EpCreateContext&) { return std::make_unique<OneDnnEp>(); }

}  // namespace onyx::onednn
