// onyx: sessions — load a model once, run it many times.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onyx/ep.hpp"
#include "onyx/tensor.hpp"

namespace onyx {

/// How much onyx rewrites the graph before running it.
enum class GraphOptimizationLevel {
  kDisabled,  ///< Run the graph as written (shape computations are still folded per input shape).
  kBasic,     ///< Constant folding and removal of no-op nodes.
  kAll,       ///< Everything onyx knows, including fusions (default).
};

/// Description of a graph input or output.
struct IoInfo {
  std::string name;
  Value::Kind kind = Value::Kind::kTensor;  ///< tensor, sequence or optional
  DType dtype = DType::kUndefined;          ///< element type (of the tensors inside, for seq/optional)
  bool has_shape = false;                   ///< rank known
  std::vector<int64_t> shape;               ///< -1 for a symbolic or unknown dim
  std::vector<std::string> dim_names;       ///< dim_param per dim ("" when concrete or unnamed)
  bool has_default = false;                 ///< inputs only: an initializer supplies it when not given
  std::string type_string;                  ///< "float[batch,3,224,224]"
  /// ONNX's (and ORT's) name of the type: "tensor(float)", "seq(map(string,tensor(float)))".
  std::string onnx_type;
};

/// What a model file says about itself (ModelProto's metadata and its main graph's name).
struct ModelMetadata {
  std::string producer_name, producer_version;
  std::string domain;
  /// The model's version; INT64_MAX when the file sets none (as ORT reports it).
  int64_t model_version = 0;
  std::string doc_string;        ///< the model's
  std::string graph_name;
  std::string graph_doc_string;  ///< the main graph's
  std::vector<std::pair<std::string, std::string>> custom;  ///< metadata_props, in file order
};

class Session;
class SessionImpl;

/// What happened to one requested execution provider when the session was created.
struct EpRegistration {
  enum class Source { kSession, kEnvironment, kImplicit };
  enum class Outcome { kRegistered, kSkipped, kDuplicate };
  std::string name;
  Source source = Source::kSession;
  Outcome outcome = Outcome::kSkipped;
  std::string reason;    ///< why it was skipped, or which request it duplicates
  int priority = -1;     ///< rank among registered EPs (0 = asked first); -1 when not registered
  std::string version;   ///< of the EP, when registered
  std::string device;    ///< device it runs on, when registered
  std::string module;    ///< module path ("" = built into libonyx)
  std::vector<std::pair<std::string, std::string>> options;  ///< effective options (defaults included)
  bool error_on_failure = false;
};

/// "session", "environment" or "implicit" (as `onyx explain` prints them).
std::string_view registration_source_name(EpRegistration::Source source);
/// "registered", "skipped" or "duplicate".
std::string_view registration_outcome_name(EpRegistration::Outcome outcome);

/// Where every node runs and why (Session::placement()).
struct Placement {
  /// A higher-priority EP's reason for not taking a node.
  struct Decline {
    std::string ep;
    std::string code;  ///< UnsupportedOp, UnsupportedType, UnsupportedAttribute, DynamicShape, OpsetOutOfRange, ...
    std::string message;
  };
  struct NodeInfo {
    std::string name;  ///< node name, or "#index" when the node has none
    std::string op_type;
    std::string ep;
    std::string device;
    int region = -1;  ///< fused region id on a compiling EP (-1: a single-node kernel)
    std::vector<Decline> declined;
    /// "" for ai.onnx, "onyx" for the optimizer's fused ops, "onyx.nhwc" for an op the optimizer
    /// gave to an EP preferring channels-last in that layout (docs/optimizer.md).
    std::string domain;
  };
  /// A copy between two memories, inserted on an edge.
  struct CopyInfo {
    std::string value;
    std::string from;
    std::string to;
    int64_t bytes = -1;  ///< -1 when the size depends on the input shapes
  };
  std::vector<NodeInfo> nodes;
  std::vector<CopyInfo> copies;
  std::string summary;  ///< "cpu: 122 nodes; 0 copies"
};

/// Options for a new session; finish with commit_from_file / commit_from_memory.
class SessionBuilder {
 public:
  SessionBuilder();
  ~SessionBuilder();
  SessionBuilder(const SessionBuilder&);
  SessionBuilder& operator=(const SessionBuilder&);

  /// Threads for intra-op parallelism (the calling thread included). 0 (default) = one per core.
  SessionBuilder& with_intra_threads(int n);
  /// Whether idle intra-op threads spin briefly before sleeping (default true: lower latency
  /// between kernels). false makes them sleep at once, burning no CPU between kernels: for a
  /// machine busy with other work (ORT's session.intra_op.allow_spinning = 0).
  SessionBuilder& with_intra_op_spinning(bool allowed);
  /// Caps the host memory the session's runs hold at once, in bytes: activation arenas, outputs
  /// and every tensor a kernel allocates (weights, loaded once, are not counted). A run that would
  /// pass it throws onyx::Error kOutOfMemory naming the node. 0 (default) = no limit.
  SessionBuilder& with_memory_limit(uint64_t bytes);
  /// Graph rewriting level (default kAll).
  SessionBuilder& with_optimization_level(GraphOptimizationLevel level);
  /// Fix a symbolic dimension (dim_param) to a value for every input that uses it. A name no
  /// input has changes nothing (a warning is logged).
  SessionBuilder& with_dimension_override(std::string name, int64_t value);
  /// Fix dim `axis` of graph input `input` to `value`: for a dim without a name (`float[?,3]`),
  /// or one input's named dim alone. Session creation throws onyx::Error when the model has no
  /// such input, the axis is past its rank, or the model fixes that dim to another value.
  SessionBuilder& with_input_dimension(std::string input, size_t axis, int64_t value);
  /// Write the model as onyx runs it, after the optimizer (fusions in domain "onyx", channels-last
  /// forms in "onyx.nhwc"), to `path` as an ONNX file when the session is made (ORT's
  /// optimized_model_filepath). onyx loads it again; other runtimes do not know onyx's domains.
  SessionBuilder& with_optimized_model_file(std::string path);
  /// Directory where external data files are looked up for commit_from_memory (default: none).
  SessionBuilder& with_external_data_dir(std::string dir);

  /// Execution providers in priority order, appended to any registered before. Each node runs on
  /// the first EP that takes it; the CPU EP takes the rest (it is added last unless listed).
  /// An EP that cannot register is skipped (see Session::registration()), or makes commit throw
  /// when it was built with error_on_failure(). A malformed option (unknown key, a value that does
  /// not parse) always makes commit throw.
  SessionBuilder& with_execution_providers(std::vector<ep::ExecutionProviderDispatch> eps);
  /// Appends one EP (what ep::Spec::register_with does after checking it).
  SessionBuilder& add_execution_provider(ep::ExecutionProviderDispatch ep);
  /// Do not append the environment's default EPs (onyx::init()) to this session's.
  SessionBuilder& with_no_environment_execution_providers();
  /// With false, a node that would run on the CPU EP makes commit throw, listing those nodes and
  /// why each higher-priority EP declined them (ORT's session.disable_cpu_ep_fallback).
  SessionBuilder& with_cpu_fallback(bool allowed);

  /// Loads, checks and prepares the model at `path` (mapped, not read; external data beside it).
  /// Throws onyx::Error naming the problem: I/O, malformed file, unsupported op, bad graph.
  Session commit_from_file(const std::string& path) const;
  /// Same, from bytes in memory (copied; the buffer may be freed afterwards).
  Session commit_from_memory(const void* data, size_t size) const;

  struct Options;
  const Options& options() const { return *options_; }

 private:
  std::unique_ptr<Options> options_;
};

/// Time spent in one node during a profiled run.
struct NodeTiming {
  std::string node;     ///< node name, or "#index"
  std::string op_type;
  std::string ep;
  std::string device;
  double start_us = 0;  ///< from the start of the run
  double duration_us = 0;
};

/// Per-run options. Copies share one terminate flag, so a copy handed to another thread can stop
/// the runs using it (ORT's RunOptions::SetTerminate).
class RunOptions {
 public:
  RunOptions() : terminate_(std::make_shared<std::atomic<bool>>(false)) {}
  /// Stops every run using these options, now and until reset(): each throws onyx::Error
  /// kCancelled at its next node (or loop iteration). Safe to call from any thread.
  void terminate() const { terminate_->store(true, std::memory_order_relaxed); }
  /// Lets runs with these options proceed again.
  void reset() const { terminate_->store(false, std::memory_order_relaxed); }
  bool terminated() const { return terminate_->load(std::memory_order_relaxed); }
  const std::atomic<bool>* flag() const { return terminate_.get(); }

 private:
  std::shared_ptr<std::atomic<bool>> terminate_;
};

/// Inputs and outputs for Session::run, reusable across runs: bind once, run many times with no
/// allocation on the run path once a shape has been seen.
class Binding {
 public:
  explicit Binding(const Session& session);
  /// Binds input `name` (or by position in Session::inputs()). Tensors are used in place (zero copy):
  /// keep the memory valid and unchanged until run() returns.
  void bind_input(std::string_view name, Value value);
  void bind_input(size_t index, Value value);
  /// Removes an input binding (an input with a default then uses its initializer).
  void unbind_input(size_t index);
  /// Asks run() to write output `name` into `buffer`, which must have the output's dtype and shape.
  void bind_output(std::string_view name, Tensor buffer);
  /// Results of the last run, in the order of Session::outputs().
  const std::vector<Value>& outputs() const { return outputs_; }
  const Value& output(std::string_view name) const;
  /// With profiling on, every run records the time of each node (main graph; a control-flow node
  /// includes its subgraphs; a region counts once, at its first node). Off by default.
  void enable_profiling(bool on = true) { profiling_ = on; }
  /// Node times of the last profiled run, in execution order.
  const std::vector<NodeTiming>& profile() const { return profile_; }

 private:
  friend class Session;
  friend class SessionImpl;
  std::shared_ptr<const SessionImpl> session_;
  std::vector<Value> inputs_;
  std::vector<Tensor> output_buffers_;
  std::vector<Value> outputs_;
  bool profiling_ = false;
  std::vector<NodeTiming> profile_;
};

/// A loaded, prepared model. Copies share the same session. run() may be called from many
/// threads at once.
class Session {
 public:
  /// Start building a session.
  static SessionBuilder builder() { return SessionBuilder(); }

  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  /// Opset imports of the model, e.g. {"", 17} for ai.onnx.
  std::vector<std::pair<std::string, int64_t>> opsets() const;
  /// Operator counts ("Conv" -> 53) of the main graph as the file has it (before optimisation).
  std::vector<std::pair<std::string, int64_t>> op_counts() const;
  /// IR version, producer and other metadata.
  int64_t ir_version() const;
  std::string producer() const;
  /// Everything ModelProto says about the model (ORT's ModelMetadata).
  ModelMetadata metadata() const;

  /// Runs with named inputs; returns every output, in the order of outputs().
  std::vector<Value> run(const std::vector<std::pair<std::string, Value>>& inputs) const;
  /// Runs and returns only the named outputs, in the order asked.
  std::vector<Value> run(const std::vector<std::pair<std::string, Value>>& inputs,
                         const std::vector<std::string>& output_names) const;
  /// Runs with a Binding (reusable; supports outputs into user buffers).
  void run(Binding& binding) const;
  /// The same three forms with run options (cancellation from another thread).
  std::vector<Value> run(const std::vector<std::pair<std::string, Value>>& inputs, const RunOptions& options) const;
  std::vector<Value> run(const std::vector<std::pair<std::string, Value>>& inputs,
                         const std::vector<std::string>& output_names, const RunOptions& options) const;
  void run(Binding& binding, const RunOptions& options) const;

  /// Where each node of the main graph runs, with every higher-priority EP's reason for declining
  /// it, and the copies between memories.
  Placement placement() const;
  /// Every requested EP: registered (with priority and effective options), skipped (why), or a
  /// duplicate of an earlier request; the implicit CPU EP last.
  const std::vector<EpRegistration>& registration() const;
  /// Number of cached execution plans: one per input-shape signature seen, the 64 most recently
  /// used at most (a shape seen again after its plan was dropped is planned again).
  size_t plan_count() const;

  const std::shared_ptr<const SessionImpl>& impl() const { return impl_; }

 private:
  friend class SessionBuilder;
  friend class Binding;
  explicit Session(std::shared_ptr<const SessionImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const SessionImpl> impl_;
};

}  // namespace onyx
