// The XNNPACK execution provider (module libonyx_ep_xnnpack.so): factory, options, availability.
#include <xnnpack.h>

#include "ep/module_entry.hpp"
#include "xnnpack_ep.hpp"

namespace onyx::xnnpack {

class Factory final : public EpFactory {
 public:
  std::string name() const override { return "xnnpack"; }
  std::string version() const override { return "XNNPACK (Debian snapshot 2022-02-16)"; }
  std::vector<ep::OptionInfo> options() const override {
    return {{"threads", "int", "0", "threads of XNNPACK's pthreadpool (0 = the session's intra-op threads)"},
            {"quantized", "bool", "true",
             "take 8-bit nodes (QLinearConv, QLinearMatMul, QGemm, QLinearAdd, ..., QuantizeLinear, DequantizeLinear) and "
             "QDQ groups; false leaves them to the next EP (where its 8-bit kernels are faster)"}};
  }
  bool probe(std::string* reason) const override {
    const xnn_status st = xnn_initialize(nullptr);
    if (st == xnn_status_success) return true;
    *reason = st == xnn_status_unsupported_hardware ? "XNNPACK does not support this CPU"
                                                   : str("xnn_initialize failed (status ", static_cast<int>(st), ")");
    return false;
  }
  std::unique_ptr<ExecutionProvider> create(const EpCreateContext& ctx) const override { return create_xnnpack_ep(ctx); }
};

}  // namespace onyx::xnnpack

ONYX_EP_MODULE("xnnpack", onyx::xnnpack::Factory)
