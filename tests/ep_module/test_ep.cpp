// A small EP module for tests (libonyx_ep_testdev.so), loaded like a third-party EP through the
// option module_path. It claims the op types listed in its "claim" option (float tensors only)
// and runs them with plain loops. Options let tests make it fail: "fail_probe", "fail_create".
#include <cstring>
#include <string>

#include "ep/factory.hpp"
#include "ep/kernel.hpp"
#include "ep/module_entry.hpp"
#include "ep/provider.hpp"
#include "onyx/version.hpp"

namespace onyx {
namespace {

std::string option(const OptionList& o, const char* key) {
  for (const auto& [k, v] : o)
    if (k == key) return v;
  return "";
}

void relu(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = std::max(0.0f, x.data<float>()[i]);
}

void add(const int&, KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (!(a.shape() == b.shape())) fail(ErrorCode::kRuntime, "testdev Add needs equal shapes");
  Tensor& y = ctx.output(0);
  for (int64_t i = 0; i < a.numel(); ++i) y.data<float>()[i] = a.data<float>()[i] + b.data<float>()[i];
}

std::unique_ptr<Kernel> make_relu(const KernelCreateInfo&) { return std::make_unique<FnKernel<int>>(0, relu); }
std::unique_ptr<Kernel> make_add(const KernelCreateInfo&) { return std::make_unique<FnKernel<int>>(0, add); }

constexpr TypeMask kF32 = type_mask({DType::kFloat});
const KernelDef kDefs[] = {
    {"", "Relu", 1, 99, {{0, kF32}}, make_relu},
    {"", "Add", 7, 99, {{0, kF32}}, make_add},
};

/// A compiled region: the region's nodes' kernels, run in order on the caller's frame.
class RegionKernel final : public Kernel {
 public:
  RegionKernel(const RegionInfo& info, const KernelRegistry& registry) : graph_(info.graph), nodes_(info.nodes) {
    for (int i : nodes_) {
      const Node& n = graph_.nodes[i];
      std::vector<const TypeInfo*> in, out;
      std::vector<const Tensor*> constants;
      for (int v : n.inputs) {
        in.push_back(v >= 0 ? &graph_.values[v].type : nullptr);
        constants.push_back(v >= 0 ? info.constant(v) : nullptr);
      }
      for (int v : n.outputs) out.push_back(v >= 0 ? &graph_.values[v].type : nullptr);
      KernelCreateInfo ci{n, graph_, in, out, constants, {}, 1};
      Decline why;
      const KernelDef* d = registry.find(n, in, out, &why);
      if (!d) fail(ErrorCode::kNotImplemented, why.message);
      kernels_.push_back(d->create(ci));
    }
  }
  void compute(KernelContext& ctx) const override {
    for (size_t k = 0; k < nodes_.size(); ++k) {
      KernelContext inner(graph_.nodes[nodes_[k]], ctx.frame(), ctx.pool(), nullptr);
      kernels_[k]->compute(inner);
    }
  }

 private:
  const Graph& graph_;
  std::vector<int> nodes_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
};

class TestEp final : public ExecutionProvider {
 public:
  TestEp(std::string claim, std::string device, bool regions, size_t min_nodes, std::string memory)
      : claim_("," + claim + ","), device_(std::move(device)), regions_(regions), min_nodes_(min_nodes), memory_(std::move(memory)) {
    registry_.add(kDefs);
  }
  // The memory is host memory under another name: copies are plain memcpy, but the session
  // must still insert them wherever memories differ.
  std::string memory() const override { return memory_; }
  std::unique_ptr<Kernel> create_copy_kernel(bool) const override {
    return std::make_unique<FnKernel<int>>(0, [](const int&, KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    });
  }
  bool compiles_regions() const override { return regions_; }
  size_t min_region_nodes() const override { return min_nodes_; }
  std::unique_ptr<Kernel> compile_region(const RegionInfo& info) const override {
    return std::make_unique<RegionKernel>(info, registry_);
  }
  std::string name() const override { return "testdev"; }
  std::string device() const override { return device_; }
  bool claim(const ClaimInfo& info, Decline* why) const override {
    if (claim_.find("," + info.node.op_type + ",") == std::string::npos) {
      *why = {DeclineCode::kUnsupportedOp, "testdev claims only " + claim_.substr(1, claim_.size() - 2)};
      return false;
    }
    return registry_.find(info.node, info.input_types, info.output_types, why) != nullptr;
  }
  std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const override {
    Decline why;
    const KernelDef* d = registry_.find(info.node, info.input_types, info.output_types, &why);
    if (!d) fail(ErrorCode::kNotImplemented, why.message);
    return d->create(info);
  }

 private:
  std::string claim_, device_;
  bool regions_;
  size_t min_nodes_;
  std::string memory_;
  KernelRegistry registry_;
};

class TestFactory final : public EpFactory {
 public:
  std::string name() const override { return "testdev"; }
  std::string version() const override { return "test-1"; }
  std::vector<ep::OptionInfo> options() const override {
    return {{"claim", "string", "Relu,Add", "comma-separated op types to claim"},
            {"device", "string", "cpu:0", "device the EP reports"},
            {"fail_create", "bool", "false", "make create() throw"},
            {"regions", "bool", "false", "compile claimed nodes into regions"},
            {"min_region_nodes", "int", "1", "smallest region worth compiling"},
            {"memory", "string", "cpu", "memory the EP's tensors live in (copies are inserted where it differs)"},
            {"threads", "int", "0", "unused; tests option validation"}};
  }
  bool probe(std::string* reason) const override {
    if (std::getenv("ONYX_TESTDEV_NO_DEVICE")) {
      *reason = "ONYX_TESTDEV_NO_DEVICE is set";
      return false;
    }
    return true;
  }
  std::unique_ptr<ExecutionProvider> create(const EpCreateContext& ctx) const override {
    if (option(ctx.options, "fail_create") == "true") fail(ErrorCode::kEpFailure, "testdev was told to fail");
    return std::make_unique<TestEp>(option(ctx.options, "claim"), option(ctx.options, "device"),
                                    option(ctx.options, "regions") == "true",
                                    static_cast<size_t>(std::stoul(option(ctx.options, "min_region_nodes"))),
                                    option(ctx.options, "memory"));
  }
};

}  // namespace
}  // namespace onyx

ONYX_EP_MODULE("testdev", onyx::TestFactory)
