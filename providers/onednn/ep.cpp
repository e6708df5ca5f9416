// The oneDNN EP: a compiling EP. Claimed nodes are grouped by the partitioner into regions; each
// region is compiled into one kernel (region.cpp) that runs it as a sequence of oneDNN
// primitives with activations kept in oneDNN's preferred layouts between them.
#include <algorithm>

#include <oneapi/dnnl/dnnl.hpp>

#include "onednn_ep.hpp"

namespace onyx::onednn {
namespace {

class OneDnnEp final : public ExecutionProvider {
 public:
  OneDnnEp(int threads, size_t min_nodes, bool arena)
      : engine_(dnnl::engine::kind::cpu, 0), threads_(threads), min_nodes_(min_nodes), arena_(arena) {}

  std::string name() const override { return "onednn"; }
  std::string device() const override { return "cpu:0"; }
  bool claim(const ClaimInfo& info, Decline* why) const override { return claim_node(info, why); }

  bool compiles_regions() const override { return true; }
  size_t min_region_nodes() const override { return min_nodes_; }
  std::unique_ptr<Kernel> compile_region(const RegionInfo& region) const override {
    return compile_region_kernel(region, engine_, threads_, arena_);
  }

  /// A single node outside any region (the partitioner puts every claimed node in a region; this
  /// serves callers that prepare one node directly): compiled as a one-node region.
  std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const override {
    const Graph& g = info.graph;
    int index = -1;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (&g.nodes[i] == &info.node) index = static_cast<int>(i);
    if (index < 0) fail(ErrorCode::kNotImplemented, info.node.label(), ": onednn compiles nodes of the session's graph only");
    RegionInfo r{g, {index}, {}, {}, {}, nullptr};
    for (int v : info.node.inputs)
      if (v >= 0 && std::find(r.inputs.begin(), r.inputs.end(), v) == r.inputs.end()) r.inputs.push_back(v);
    for (int v : info.node.outputs)
      if (v >= 0) r.outputs.push_back(v);
    return compile_region_kernel(r, engine_, threads_, arena_);
  }

 private:
  dnnl::engine engine_;
  int threads_;
  size_t min_nodes_;
  bool arena_;
};

}  // namespace

std::unique_ptr<ExecutionProvider> create_onednn_ep(const EpCreateContext& ctx) {
  long threads = 0, min_nodes = 1;
  try {
    threads = std::stol(option(ctx.options, "threads", "0"));
    min_nodes = std::stol(option(ctx.options, "min_region_nodes", "1"));
  } catch (const std::exception&) {
    fail(ErrorCode::kInvalidArgument, "onednn: options threads and min_region_nodes must be integers");
  }
  if (threads < 0) fail(ErrorCode::kInvalidArgument, "onednn: option threads must be >= 0, got ", threads);
  if (min_nodes < 1) fail(ErrorCode::kInvalidArgument, "onednn: option min_region_nodes must be >= 1, got ", min_nodes);
  const std::string arena = option(ctx.options, "arena", "1");
  if (arena != "0" && arena != "1" && arena != "true" && arena != "false")
    fail(ErrorCode::kInvalidArgument, "onednn: option arena must be 0, 1, true or false, got '", arena, "'");
  const int t = threads == 0 ? std::max(1, ctx.session_threads) : static_cast<int>(threads);
  try {
    return std::make_unique<OneDnnEp>(t, static_cast<size_t>(min_nodes), arena == "1" || arena == "true");
  } catch (const dnnl::error& e) {
    fail(ErrorCode::kEpFailure, "onednn: cannot create a oneDNN CPU engine: ", e.what());
  }
}

}  // namespace onyx::onednn
