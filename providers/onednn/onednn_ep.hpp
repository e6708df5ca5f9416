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

/// Inputs of `n` the region compiles with their values (claim.cpp): Reduce axes given as an
/// input, the scales and zero points of the 8-bit ops (their requantisation is compiled in),
/// QLinearConv's weights. A claimed node has each of them constant or a graph input; a graph
/// input's value keys the compiled entry (a new value compiles another).
std::vector<size_t> compile_time_inputs(const Node& n);

/// What this CPU lets oneDNN compute natively (claim.cpp).
struct CpuSupport {
  std::string isa;    // oneDNN's effective ISA ("avx512_core_bf16", ...)
  bool int8 = false;  // VNNI: u8 x s8 products summed exactly in 32 bits
  bool bf16 = false;  // AVX512_BF16: bfloat16 dot products
};
const CpuSupport& cpu_support();

/// What is known of a QLinearConv's integer operands when choosing how oneDNN computes it.
struct QConvFacts {
  int64_t kg = 0;              // products summed per output: input channels per group x kernel volume
  int64_t x_lo = 0, x_hi = 0;  // range of x - x_zero_point
  bool w_known = false;        // w and w_zero_point known (constants)
  int64_t w_lo = 0, w_hi = 0;  // range of w - w_zero_point, when known
  int64_t bias_max = 0;        // largest |B| (0 without B)
};
/// QLinearConv's arithmetic on oneDNN (claim.cpp; the emitter chooses the same way): the int8
/// convolution when every w - w_zero_point fits int8 (oneDNN 2.x convolutions take no weight
/// zero point), else a float32 convolution of the exact integer differences when its sums stay
/// exact (below 2^24), else none, with the reason in `why`.
enum class QConvPath { kInt8, kFloat32, kNone };
QConvPath qconv_path(const QConvFacts& f, std::string* why);

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
