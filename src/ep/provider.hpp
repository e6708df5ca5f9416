// The per-session execution provider interface (DESIGN.md §3). Kernel EPs answer claim() from
// their manifest; the session asks EPs in priority order and the CPU EP last.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ep/kernel.hpp"
#include "onyx/ep.hpp"

namespace onyx {

/// What an EP sees when asked to claim a node.
struct ClaimInfo {
  const Node& node;
  const Graph& graph;
  std::vector<const TypeInfo*> input_types;
  std::vector<const TypeInfo*> output_types;
};

/// The type of input / output i of a claim (null when absent).
inline const TypeInfo* in_type(const ClaimInfo& c, size_t i) {
  return i < c.input_types.size() && c.node.has_input(i) ? c.input_types[i] : nullptr;
}
inline const TypeInfo* out_type(const ClaimInfo& c, size_t i) {
  return i < c.output_types.size() ? c.output_types[i] : nullptr;
}
/// Rank of input i of a claim when known, else -1.
inline int in_rank(const ClaimInfo& c, size_t i) {
  const TypeInfo* t = in_type(c, i);
  return t && t->is_tensor() && t->has_shape ? static_cast<int>(t->shape.size()) : -1;
}
/// Whether input i of `n` is a constant initializer (known when kernels are prepared).
inline bool is_constant(const Graph& g, const Node& n, size_t i) {
  if (!n.has_input(i)) return false;
  const ValueSlot& s = g.values[n.inputs[i]];
  return s.has_initializer && !s.is_graph_input;
}

/// A connected, convex set of nodes one compiling EP runs as a unit (DESIGN.md §3). Values are
/// ids in `graph`; every output and internal value is allocated by the executor with its
/// inferred shape before the region runs, so a region kernel may also use internal buffers.
struct RegionInfo {
  const Graph& graph;
  std::vector<int> nodes;     // node indices, in execution order
  std::vector<int> inputs;    // values read from outside the region (graph inputs, other nodes, initializers)
  std::vector<int> outputs;   // values read outside the region or graph outputs
  std::vector<int> internal;  // values produced and consumed only inside
  ThreadPool* pool = nullptr;
  /// Value of an input when it is a constant initializer (weights), else null.
  const Tensor* constant(int value) const {
    const ValueSlot& s = graph.values[value];
    return s.has_initializer && !s.is_graph_input ? &s.initializer : nullptr;
  }
};

/// Order of a data tensor's dims for the layout-sensitive ops (convolution, pooling, batch
/// normalisation): channels-first [N, C, spatial...] as ONNX writes them, or channels-last
/// [N, spatial..., C].
enum class DataLayout { kChannelsFirst, kChannelsLast };

class ExecutionProvider {
 public:
  virtual ~ExecutionProvider() = default;
  /// Lower-case name as `onyx providers` prints it ("cpu", "onednn").
  virtual std::string name() const = 0;
  /// Device the EP's memory and kernels live on ("cpu:0").
  virtual std::string device() const = 0;
  /// True if the EP's tensors live in host memory (no copies needed to and from the CPU EP).
  virtual bool host_memory() const { return true; }
  /// The memory this EP's tensors live in: "cpu" for host memory (the default), else a device
  /// name. Wherever a value's producer and a consumer use different memories, the session
  /// inserts an explicit Copy node.
  virtual std::string memory() const { return host_memory() ? "cpu" : device(); }
  /// (device EPs) Allocator of the EP's memory: the executor allocates the outputs of the EP's
  /// nodes with it. Null (the default) means host memory.
  virtual DeviceAllocator* allocator() const { return nullptr; }
  /// (optional) Per-run state (a command stream, a queue): created when a run starts, handed to
  /// the EP's kernels as KernelContext::ep_state(), finished by end_run() when the run ends (the
  /// EP must have completed all of the run's work on return). Default: none.
  virtual std::shared_ptr<void> begin_run() const { return nullptr; }
  virtual void end_run(void* state) const { (void)state; }
  /// (optional) Whole-run capture, like CUDA graphs. An EP answering true lets the session record
  /// the work of a run whose plan is static (no shape decided at run time, no control flow) and
  /// entirely its own: every node that runs is the EP's, or a copy between host memory and the
  /// EP's memory. Per run context the first such run runs as usual (warm-up), the second is
  /// recorded (begin_capture, the nodes as usual, end_capture) and then replayed, and later runs
  /// with the same plan only replay, on the state kept from the warm-up run (resume_run). Kernels
  /// that see the state capturing queue their work into the recording; a copy records its host
  /// side instead of doing it (the value ids it reads or writes), which replay() does around the
  /// recorded device work. A kernel that cannot be recorded throws: the session then calls
  /// abort_capture, runs the plan as usual and does not try that context's plan again. Default:
  /// false (and the hooks below are never called).
  virtual bool captures_runs() const { return false; }
  virtual void begin_capture(void* state) const { (void)state; }
  /// Ends the recording, keeping it in `state` for replay(); throws if it failed.
  virtual void end_capture(void* state) const { (void)state; }
  /// Discards a recording in progress and leaves the state usable for an ordinary run.
  virtual void abort_capture(void* state) const { (void)state; }
  /// Starts another run on a state that begin_run() gave an earlier run (end_run() ends it).
  virtual void resume_run(void* state) const { (void)state; }
  /// Runs the recording: copies host inputs from `frame` (the main graph's values by id) into
  /// it, runs the recorded work, and writes host outputs into `frame` once it is done.
  virtual void replay(void* state, Value* frame) const {
    (void)state;
    (void)frame;
    fail(ErrorCode::kNotImplemented, name(), " does not capture runs");
  }
  /// (device EPs) A kernel copying its one input from host memory into this EP's memory
  /// (`to_device`) or from this EP's memory to host memory.
  virtual std::unique_ptr<Kernel> create_copy_kernel(bool to_device) const {
    (void)to_device;
    fail(ErrorCode::kNotImplemented, name(), " has no copy kernel");
  }
  /// (device EPs) Whether the EP's kernel for `node` takes input `input` in host memory when it
  /// is produced there (weights it uploads once when the kernel is prepared, shape operands read
  /// on the host); no Copy is inserted for such an input. Default: false.
  virtual bool reads_host_input(const Node& node, size_t input, const Graph& graph) const {
    (void)node;
    (void)input;
    (void)graph;
    return false;
  }
  /// (optional) The layout the EP would rather run the layout-sensitive ops in. An EP answering
  /// kChannelsLast is offered, for each such node it would take, the node's channels-last form
  /// (domain onyx.nhwc, ops/layout.hpp) by the optimizer; where it claims that form too, the
  /// node is rewritten to it between Transposes, which the transpose optimizer cancels between
  /// neighbours (docs/optimizer.md). Compiling EPs are not asked. Default: kChannelsFirst.
  virtual DataLayout preferred_layout() const { return DataLayout::kChannelsFirst; }
  /// Whether the float16 / bfloat16 nodes this EP would take are better run as their float32
  /// forms (the optimizer then converts them, with Casts at the edges of each such region; see
  /// optimizer/half_in_float.cpp). The CPU EP's, whose float32 kernels are its fast ones.
  virtual bool computes_half_in_float() const { return false; }
  /// Accept the node (true) or decline it with a reason.
  virtual bool claim(const ClaimInfo& info, Decline* why) const = 0;
  /// Prepares the kernel for a claimed node.
  virtual std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const = 0;

  /// (optional) A compiling EP: its claimed nodes are grouped into regions (merged along edges
  /// without creating cycles) and each region is compiled into one kernel. Default: false.
  virtual bool compiles_regions() const { return false; }
  /// (optional) Regions with fewer nodes are declined (NotWorthOffloading) and offered to the
  /// next EPs. Default: 1.
  virtual size_t min_region_nodes() const { return 1; }
  /// (optional) Compiles a region. The kernel runs in place of all of the region's nodes; its
  /// KernelContext is that of the region's first node, and it reads and writes values through
  /// ctx.frame() by the ids in `region` (kept from compile time).
  virtual std::unique_ptr<Kernel> compile_region(const RegionInfo& region) const {
    (void)region;
    fail(ErrorCode::kNotImplemented, name(), " does not compile regions");
  }
};

/// An EP whose claims come from a kernel manifest.
class KernelEp : public ExecutionProvider {
 public:
  bool claim(const ClaimInfo& info, Decline* why) const override {
    return registry().find(info.node, info.input_types, info.output_types, why) != nullptr;
  }
  std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const override {
    Decline why;
    const KernelDef* def = registry().find(info.node, info.input_types, info.output_types, &why);
    if (!def) fail(ErrorCode::kNotImplemented, info.node.label(), ": ", why.message);
    return def->create(info);
  }
  virtual const KernelRegistry& registry() const = 0;
};

/// The built-in CPU EP's options (providers/cpu/provider.cpp).
struct CpuOptions {
  /// Take the channels-last forms of 2-d convolutions and pools (ops/layout.hpp) that its
  /// kernels run (kernels/conv_nhwc.cpp).
  bool prefer_nhwc = true;
  /// Run float16 and bfloat16 nodes in float32 (optimizer/half_in_float.cpp).
  bool half_in_float = true;
};
std::vector<ep::OptionInfo> cpu_option_schema();
/// `options`: effective (defaults overlaid with the user's, validated against the schema).
CpuOptions parse_cpu_options(const std::vector<std::pair<std::string, std::string>>& options);

/// The built-in CPU EP (providers/cpu), always present.
std::unique_ptr<ExecutionProvider> create_cpu_provider(const CpuOptions& options = {});

}  // namespace onyx
