// oneDNN EP internals shared by its files.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "core/common.hpp"
#include "ep/factory.hpp"

namespace onyx::onednn {

/// The per-session EP.
std::unique_ptr<ExecutionProvider> create_onednn_ep(const EpCreateContext& ctx);

/// Whether the EP takes `info.node` (claim.cpp); `why` says precisely why not.
bool claim_node(const ClaimInfo& info, Decline* why);

/// Compiles a region into one kernel (region.cpp). `threads` is what oneDNN's OpenMP runtime
/// may use while the region runs; with `arena`, the region's intermediates share one scratch
/// buffer, placed by lifetime (without it each has its own bytes).
std::unique_ptr<Kernel> compile_region_kernel(const RegionInfo& region, const dnnl::engine& engine, int threads,
                                              bool arena);

/// Value of input `i` of `n` when it is a constant initializer (not a graph input), else null.
inline const Tensor* graph_constant(const Graph& g, const Node& n, size_t i) {
  if (!n.has_input(i)) return nullptr;
  const ValueSlot& s = g.values[n.inputs[i]];
  return s.has_initializer && !s.is_graph_input ? &s.initializer : nullptr;
}

/// One oneDNN eltwise operation (alg, alpha, beta).
struct Elt {
  dnnl::algorithm alg;
  float alpha = 0, beta = 0;
};

/// The eltwise chain an activation node computes (Relu, Clip with constant bounds, HardSigmoid =
/// linear + clip, ...), or false with the reason. Used by claims, by eltwise kernels and to fuse
/// an activation into the producer's post-ops.
bool eltwise_chain(const Graph& g, const Node& n, std::vector<Elt>* out, std::string* why);

/// The activation of an onyx::FusedConv node (attributes activation / activation_params).
bool fused_conv_activation(const Node& n, std::vector<Elt>* out, std::string* why);

}  // namespace onyx::onednn
