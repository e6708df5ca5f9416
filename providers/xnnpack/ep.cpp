// The XNNPACK EP: claims and region compilation.
#include <xnnpack.h>

#include "xnnpack_ep.hpp"

namespace onyx::xnnpack {
namespace {

class XnnpackEp final : public ExecutionProvider {
 public:
  std::string name() const override { return "xnnpack"; }
  std::string device() const override { return "cpu:0"; }
  bool claim(const ClaimInfo& info, Decline* why) const override {
    *why = {DeclineCode::kUnsupportedOp, "no XNNPACK operator for " + info.node.op_type};
    return false;
  }
  std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const override {
    fail(ErrorCode::kNotImplemented, "xnnpack: no kernel for ", info.node.op_type);
  }
};

}  // namespace

std::unique_ptr<ExecutionProvider> create_xnnpack_ep(const EpCreateContext&) { return std::make_unique<XnnpackEp>(); }

}  // namespace onyx::xnnpack
