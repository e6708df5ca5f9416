// The oneDNN execution provider (module libonyx_ep_onednn.so): factory, options, availability.
#include <oneapi/dnnl/dnnl.hpp>

#include "ep/module_entry.hpp"
#include "onednn_ep.hpp"

namespace onyx::onednn {

class Factory final : public EpFactory {
 public:
  std::string name() const override { return "onednn"; }
  std::string version() const override {
    const dnnl_version_t* v = dnnl_version();
    return str("oneDNN ", v->major, ".", v->minor, ".", v->patch);
  }
  std::vector<ep::OptionInfo> options() const override {
    return {{"threads", "int", "0", "threads oneDNN's OpenMP runtime may use (0 = the session's intra-op threads)"},
            {"min_region_nodes", "int", "1", "smallest group of connected nodes worth running in oneDNN"},
            {"arena", "bool", "1",
             "1: a region's intermediates share one scratch buffer, placed by lifetime; 0: each has its own"}};
  }
  bool probe(std::string* reason) const override {
    try {
      dnnl::engine e(dnnl::engine::kind::cpu, 0);
      (void)e;
      return true;
    } catch (const std::exception& ex) {
      *reason = str("cannot create a oneDNN CPU engine: ", ex.what());
      return false;
    }
  }
  std::unique_ptr<ExecutionProvider> create(const EpCreateContext& ctx) const override { return create_onednn_ep(ctx); }
};

}  // namespace onyx::onednn

ONYX_EP_MODULE("onednn", onyx::onednn::Factory)
