// Session internals: prepared graphs, cached run plans, run contexts.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "core/memory_budget.hpp"
#include "core/thread_pool.hpp"
#include "ep/provider.hpp"
#include "ir/graph.hpp"
#include "onyx/session.hpp"
#include "session/infer.hpp"

namespace onyx {

struct SessionBuilder::Options {
  int threads = 0;
  GraphOptimizationLevel level = GraphOptimizationLevel::kAll;
  std::vector<std::pair<std::string, int64_t>> dim_overrides;
  struct InputDim {
    std::string input;
    size_t axis = 0;
    int64_t value = 0;
  };
  std::vector<InputDim> input_dim_overrides;  // with_input_dimension
  std::string external_dir;
  std::vector<ep::ExecutionProviderDispatch> eps;
  bool environment_eps = true;
  bool cpu_fallback = true;
  bool spinning = true;
  uint64_t memory_limit = 0;  // bytes; 0 = none
  std::string optimized_model_file;  // with_optimized_model_file
};

class SessionImpl;

/// Services for kernels during one run: subgraph execution and each EP's per-run state.
class RunHooks final : public ExecHooks {
 public:
  explicit RunHooks(const SessionImpl& session) : session_(session) {}
  std::vector<Value> run_subgraph(const PreparedSubgraph& g, std::vector<Value> inputs, const KernelContext& caller) override;
  /// State of EP `e` for this run (null when the EP keeps none, or outside a run).
  void* state(int e) const {
    return states && static_cast<size_t>(e) < states->size() ? (*states)[e].get() : nullptr;
  }
  /// Per EP: its state for this run (owned by the run context, so a run allocates nothing here).
  std::vector<std::shared_ptr<void>>* states = nullptr;
  /// RunOptions::terminate() flag of this run (null: none).
  const std::atomic<bool>* terminate = nullptr;
  /// Throws kCancelled when the run was asked to stop (checked before each node and subgraph).
  void check_cancelled(const Node& n) const {
    if (terminate && terminate->load(std::memory_order_relaxed))
      fail(ErrorCode::kCancelled, "the run was cancelled (RunOptions::terminate) before ", n.label());
  }

 private:
  const SessionImpl& session_;
};

/// A graph (main graph or subgraph) with a kernel per node.
class GraphRunner final : public PreparedSubgraph {
 public:
  GraphRunner(const SessionImpl& session, const Graph& graph, const GraphRunner* parent);
  size_t num_inputs() const override { return graph.inputs.size(); }
  size_t num_outputs() const override { return graph.outputs.size(); }

  /// Runs every node on `frame` (which holds inputs, initializers and outer values), inferring
  /// shapes and allocating as it goes. Values are dropped after their last use.
  void execute_dynamic(std::vector<Value>& frame, RunHooks& hooks) const;
  /// Runs node i: infer output shapes from the actual inputs, allocate, compute.
  void run_node_dynamic(size_t i, std::vector<Value>& frame, RunHooks& hooks) const;
  /// Runs node i whose outputs are already allocated.
  void run_node(size_t i, std::vector<Value>& frame, RunHooks& hooks) const;

  const SessionImpl& session;
  const Graph& graph;
  const GraphRunner* parent;
  std::vector<std::unique_ptr<Kernel>> kernels;  // per node
  std::vector<int> node_ep;                      // per node: index into session.eps
  std::vector<int> outer_src;                    // per value: id in the parent graph, or -1
  std::vector<std::vector<int>> release_after;   // per node: values last used there
  std::vector<char> keep;                        // per value: never released (graph outputs)
  std::vector<std::shared_ptr<GraphRunner>> subgraphs;
  std::vector<const OpSchema*> schemas;          // per node
  std::vector<char> has_subgraph;                // per node: control flow (outputs set by the kernel)
  std::vector<std::vector<Placement::Decline>> declines;  // per node: higher-priority EPs' reasons
  std::vector<int> region_of;                    // per node: region index or -1
  std::vector<std::vector<int>> region_nodes;    // per region: its nodes (contiguous, in order)
  std::vector<int> region_ep;                    // per region: EP index
  std::vector<Placement::CopyInfo> copies;       // copies inserted between memories
  std::vector<DeviceAllocator*> node_alloc;      // per node: allocator of its outputs' memory (null: host)
  std::vector<char> host_reader;                 // per node: runs in host memory and reads its inputs' elements
  /// Whether node i is a region node other than its region's first (it runs inside the region).
  bool inside_region(size_t i) const { return region_of[i] >= 0 && region_nodes[region_of[i]].front() != static_cast<int>(i); }
};

/// One execution plan: everything about a run that depends only on the input shapes.
struct Plan {
  enum class Slot : uint8_t { kUnused, kInput, kInitializer, kConstant, kArena, kHeap, kView, kDevice, kDynamic };
  enum class Mode : uint8_t { kSkip, kStatic, kDynamic };
  // Signature, per graph input: the value's kind, whether an optional holds something, and the
  // dtype and shape of the tensor (of an optional's tensor).
  struct InputSig {
    Value::Kind kind = Value::Kind::kNone;
    bool has_element = false;
    DType dtype = DType::kUndefined;
    Shape shape;
  };
  static InputSig signature_of(const Value& v);
  static bool same(const InputSig& s, const Value& v);
  std::vector<InputSig> in_sig;
  // Per value.
  std::vector<Slot> slot;
  std::vector<size_t> offset;
  std::vector<DType> dtype;
  std::vector<Shape> shape;
  std::vector<Value> constants;
  // Per node.
  std::vector<Mode> mode;
  std::vector<std::vector<int>> release_after;
  size_t arena_bytes = 0;
  size_t static_nodes = 0, dynamic_nodes = 0, folded_nodes = 0;
  size_t inplace_outputs = 0;  // outputs sharing an input's buffer (Kernel::inplace_input)
  /// The EP that may record and replay this plan's runs (ExecutionProvider::captures_runs), or -1.
  int capture_ep = -1;
};

/// Per-run scratch: a frame of values and the arena the plan's buffers live in.
struct RunContext {
  std::vector<Value> frame;
  void* arena = nullptr;
  size_t arena_size = 0;
  std::vector<Tensor> output_cache;  // per value: output storage reusable once the user let go
  std::vector<Tensor> device_cache;  // per value: planned device buffers, reused across runs
  std::vector<std::shared_ptr<void>> ep_states;  // per EP: its state for the current run
  /// Whole-run capture (Plan::capture_ep) for this context: the plan it is for, the capturing
  /// EP's state kept from the warm-up run (holding the recording), how far it got.
  struct Capture {
    std::shared_ptr<const Plan> plan;
    std::shared_ptr<void> state;
    int runs = 0;           // runs of `plan` on this context so far
    bool recorded = false;  // `state` holds a recording of the plan
    bool failed = false;    // recording failed: the plan runs as usual on this context
  } capture;
  std::shared_ptr<MemoryBudget> arena_budget;  // the budget the arena counts against, if any
  ~RunContext();
  void ensure_arena(size_t bytes, const std::shared_ptr<MemoryBudget>& budget);
};

class SessionImpl {
 public:
  SessionImpl(std::shared_ptr<Model> model, const SessionBuilder::Options& options);
  ~SessionImpl();
  /// Fixes the graph inputs' dims that options.dim_overrides and input_dim_overrides set.
  void apply_dimension_overrides();

  void run(Binding& binding, const std::atomic<bool>* terminate = nullptr) const;
  /// Runs a prepared subgraph in `frame`'s context (outer values from the caller's frame).
  std::vector<Value> run_subgraph(const PreparedSubgraph& g, std::vector<Value> inputs, const KernelContext& caller,
                                  RunHooks& hooks) const;
  /// Evaluates a node whose inputs are all known (plan-time folding).
  bool fold_node(const Graph& g, size_t index, GraphFacts& facts) const;
  /// Evaluates a node of `g` whose inputs are all constant initializers (session-time folding).
  bool evaluate_constant_node(const Graph& g, size_t index, std::vector<Value>& outputs) const;
  /// Graph-optimisation log (one line per change).
  std::vector<std::string> optimizer_log;
  /// "cpu: 122 nodes; 0 copies"
  std::string placement_summary() const;
  /// Operator counts of the main graph as loaded (before optimisation).
  std::vector<std::pair<std::string, int64_t>> original_op_counts;

  std::shared_ptr<Model> model;
  SessionBuilder::Options options;
  std::unique_ptr<ThreadPool> pool;
  std::shared_ptr<MemoryBudget> budget;  // SessionBuilder::with_memory_limit, or null
  std::vector<std::unique_ptr<ExecutionProvider>> eps;  // priority order, CPU last
  std::vector<EpRegistration> registration;
  size_t cpu_index = 0;         // index of the CPU EP in eps
  bool cpu_listed = false;      // the user listed the CPU EP explicitly
  /// Nodes placed on the CPU EP (any graph), for strict mode.
  std::vector<std::string> cpu_nodes;
  std::shared_ptr<GraphRunner> main;
  std::vector<IoInfo> inputs, outputs;
  std::vector<TypeInfo> declared_output_types;
  std::vector<size_t> required_inputs;  // indices into main graph inputs without an initializer
  std::vector<int> input_pos;           // per main-graph value: index among graph inputs, or -1
  std::vector<int> output_pos;          // per main-graph value: index among graph outputs, or -1

  /// The execution plan for inputs (in the order of the main graph's inputs) of these types and
  /// shapes, built on first use: the memory plan's arena size, the outputs placed in place. The
  /// cache keeps the kMaxPlans most recently used plans (a generation loop sees a new past length
  /// at every step); a run holds its plan while it runs.
  std::shared_ptr<const Plan> plan_for(const std::vector<Value>& inputs) const;
  static constexpr size_t kMaxPlans = 64;

 private:
  std::unique_ptr<Plan> build_plan(const std::vector<Value>& inputs) const;
  std::unique_ptr<RunContext> acquire_context() const;
  void release_context(std::unique_ptr<RunContext> ctx) const;
  void check_inputs(const std::vector<Value>& inputs) const;
  void register_eps();

  struct CachedPlan {
    std::shared_ptr<const Plan> plan;
    mutable std::atomic<uint64_t> last_use{0};
  };
  mutable std::shared_mutex plans_mu_;
  mutable std::vector<std::unique_ptr<CachedPlan>> plans_;
  mutable std::atomic<uint64_t> plan_clock_{0};
  mutable std::mutex contexts_mu_;
  mutable std::vector<std::unique_ptr<RunContext>> contexts_;
  friend class Session;
};

/// Values of a region that is being shaped before it runs: their frame entries are buffers not
/// yet computed (or nothing, where no shape could be given), so inference may use their types
/// but not their contents.
struct PendingValues {
  explicit PendingValues(size_t n) : pending(n, 0), types(n) {}
  std::vector<char> pending;
  std::vector<TypeInfo> types;  // what inference said of each pending value
};

/// Infers node `n`'s outputs from the actual values in `frame` and allocates the tensor outputs
/// whose shapes that gives (except views, unless `keep` marks the value a graph output). Returns
/// true when inference computed every output's value, so the kernel need not run. With
/// `pending`, the values it marks are read by type only, and the outputs that get a buffer (or
/// nothing) rather than a value are marked pending in turn.
bool prepare_outputs(const Node& n, const OpSchema& schema, const Kernel& kernel, const std::vector<char>* keep,
                     std::vector<Value>& frame, DeviceAllocator* allocator = nullptr, PendingValues* pending = nullptr);


}  // namespace onyx
