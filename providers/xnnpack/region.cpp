// Region compilation for the XNNPACK EP.
//
// A region is compiled once into a list of operator plans (a BatchNormalization after a
// convolution is folded into its weights; Relu / Clip after an operator with an output range
// into that range). XNNPACK operators are bound to one concrete shape, so the
// kernel builds an *instance* per shape signature the first time it sees it (at compile time
// when every shape is static): operators are created (XNNPACK packs the weights in create) and
// set up once on buffers the instance owns, so a run is copies / layout transforms at the
// region's boundary plus xnn_run_operator calls, with no allocation.
//
// Layout: every 4-D activation produced by a spatial operator stays NHWC inside the region.
// A value gets a second layout only when a consumer needs it; NCHW<->NHWC transforms therefore
// happen at the region's inputs and outputs, and inside only where a layout-sensitive op
// (Softmax, a reshape, a fully connected layer...) reads an NHWC value that is not bytewise the
// same in both layouts (it is when C == 1 or H*W == 1, e.g. after GlobalAveragePool).
//
// Concurrency: compute() is const and may run on several threads. An instance is used by one
// run at a time (its operators hold pointers to its buffers). A concurrent run with the same
// shapes gets an instance of its own when XNNPACK runs on the calling thread (up to 4), and
// waits for the busy one when XNNPACK has a pthreadpool (which serialises parallel sections
// anyway). The cache is guarded by a mutex held only to pick or insert an instance.
//
// Memory: an instance's intermediate buffers share one arena, placed by lifetime over the
// recorded steps; the operators are set up only once the buffers have their final addresses.
#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "core/logging.hpp"
#include "ops/elementwise.hpp"
#include "ops/image.hpp"
#include "ops/nn.hpp"
#include "xnnpack_ep.hpp"

namespace onyx::xnnpack {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
/// Idle instances kept per region (shape signatures beyond this evict the least recently used).
constexpr size_t kMaxInstances = 16;
/// Instances of one shape signature for concurrent runs when XNNPACK runs on the calling thread.
constexpr size_t kMaxConcurrent = 4;

enum class Kind {
  kConv, kDeconv, kFc, kMaxPool, kAvgPool, kGlobalAvgPool, kBinary, kUnary, kClamp, kLeakyRelu, kElu, kPRelu,
  kSoftmax, kResize, kDepthToSpace, kPad, kAlias, kBatchNorm,
};
enum class Bin { kAdd, kSub, kMul, kDiv, kMax, kMin };
enum class Un { kAbs, kNeg, kFloor, kCeil, kRound, kSqrt, kSquare, kSigmoid, kHardSwish };

/// One XNNPACK operator (or view) of a region, fixed at compile time.
struct OpPlan {
  Kind kind{};
  int node = -1;      // index in the graph
  std::string label;  // node label, for errors
  std::vector<int> in;  // data inputs (value ids)
  int out = -1;         // the value it writes (after folding activations)
  float lo = -kInf, hi = kInf;
  Bin bin{};
  Un un{};
  float alpha = 0.0f;
  bool mean = false;  // Mean: the sum of the inputs times 1/n
  int bn = -1;        // a BatchNormalization folded into this convolution (node index)
  std::vector<std::string> fused;  // labels of folded activations
};

bool takes_range(const OpPlan& p) {
  switch (p.kind) {
    case Kind::kConv:
    case Kind::kDeconv:
    case Kind::kFc:
    case Kind::kMaxPool:
    case Kind::kAvgPool:
    case Kind::kGlobalAvgPool:
    case Kind::kClamp:
    case Kind::kBatchNorm: return true;
    case Kind::kBinary: return p.bin != Bin::kMax && p.bin != Bin::kMin;
    default: return false;
  }
}

enum class Layout : uint8_t { kPlain, kNhwc };

struct Step {
  enum class Type : uint8_t { kRun, kCopyIn, kNhwcIn, kToNhwc, kToPlain, kCopyOut, kPlainOut } type;
  xnn_operator_t op = nullptr;
  int plan = -1;   // for errors
  int value = -1;  // frame value (boundary steps)
  const float* src = nullptr;
  float* dst = nullptr;
  size_t n = 0, rows = 0, cols = 0;  // transposes: [n][rows][cols] -> [n][cols][rows]; copies: n floats
};

/// Operators and buffers for one shape signature.
struct Instance {
  std::vector<Shape> shapes;  // of the kernel's key values
  void* arena = nullptr;      // every intermediate buffer, placed by lifetime
  size_t arena_bytes = 0;
  std::vector<void*> pinned;  // constants prepared at build time
  std::vector<xnn_operator_t> ops;
  std::vector<Step> steps;
  bool busy = false;
  uint64_t stamp = 0;
  int boundary_transforms = 0, internal_transforms = 0;
  Instance() = default;
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  ~Instance() {
    for (xnn_operator_t op : ops) xnn_delete_operator(op);
    for (void* b : pinned) std::free(b);
    std::free(arena);
  }
};

// ---- layout transforms (batched 2-D transposes on XNNPACK's pthreadpool) ----

struct TransposeJob {
  const float* src;
  float* dst;
  size_t rows, cols;
};

void transpose_tile(void* ctx, size_t b, size_t i0, size_t j0, size_t ni, size_t nj) {
  const auto& t = *static_cast<const TransposeJob*>(ctx);
  const float* s = t.src + b * t.rows * t.cols;
  float* d = t.dst + b * t.rows * t.cols;
  for (size_t j = j0; j < j0 + nj; ++j) {
    float* dr = d + j * t.rows;
    for (size_t i = i0; i < i0 + ni; ++i) dr[i] = s[i * t.cols + j];
  }
}

void transpose(const float* src, float* dst, size_t n, size_t rows, size_t cols, pthreadpool_t pool) {
  if (rows == 1 || cols == 1) {
    std::memcpy(dst, src, n * rows * cols * sizeof(float));
    return;
  }
  TransposeJob job{src, dst, rows, cols};
  pthreadpool_parallelize_3d_tile_2d(pool, transpose_tile, &job, n, rows, cols, 32, 32, 0);
}

// ---- shapes ----

/// A shape of rank <= 4 padded with leading 1s to rank 4 (NHWC storage of lower ranks).
Shape dims4(const Shape& s) {
  if (s.size() > 4) fail(ErrorCode::kEpFailure, "xnnpack: internal error: NHWC storage of a rank-", s.size(), " value");
  Shape r = s;
  while (r.size() < 4) r.insert(0, 1);
  return r;
}
/// NHWC and NCHW storage of this (4-D) shape are the same bytes.
bool same_bytes(const Shape& s4) { return s4[1] == 1 || s4[2] * s4[3] == 1; }
Shape nhwc_dims(const Shape& s4) { return Shape{s4[0], s4[2], s4[3], s4[1]}; }

uint32_t u32(int64_t v, const std::string& where, const char* what) {
  if (v < 0 || v > static_cast<int64_t>(std::numeric_limits<uint32_t>::max()))
    fail(ErrorCode::kEpFailure, "xnnpack: ", where, ": ", what, " ", v, " is out of range");
  return static_cast<uint32_t>(v);
}

const char* kind_name(const OpPlan& p) {
  switch (p.kind) {
    case Kind::kConv: return "convolution2d";
    case Kind::kDeconv: return "deconvolution2d";
    case Kind::kFc: return "fully_connected";
    case Kind::kMaxPool: return "max_pooling2d";
    case Kind::kAvgPool: return "average_pooling2d";
    case Kind::kGlobalAvgPool: return "global_average_pooling";
    case Kind::kBinary: {
      static const char* const names[] = {"add", "subtract", "multiply", "divide", "maximum", "minimum"};
      return names[static_cast<int>(p.bin)];
    }
    case Kind::kUnary: {
      static const char* const names[] = {"abs", "negate", "floor", "ceiling", "bankers_rounding", "square_root",
                                          "square", "sigmoid", "hardswish"};
      return names[static_cast<int>(p.un)];
    }
    case Kind::kClamp: return "clamp";
    case Kind::kLeakyRelu: return "leaky_relu";
    case Kind::kElu: return "elu";
    case Kind::kPRelu: return "prelu";
    case Kind::kSoftmax: return "softmax";
    case Kind::kResize: return "resize_bilinear2d";
    case Kind::kDepthToSpace: return "depth_to_space";
    case Kind::kPad: return "constant_pad";
    case Kind::kAlias: return "view";
    case Kind::kBatchNorm: return "multiply+add (batch normalization)";
  }
  return "?";
}

class RegionKernel;

/// Builds an Instance for one shape signature. Buffers are handled by id while the steps are
/// recorded; their lifetimes then place them in one arena, and only then are the XNNPACK
/// operators set up on the final pointers.
class Builder {
 public:
  Builder(const RegionKernel& k, Instance& inst);
  void build();

 private:
  struct Buf {
    size_t floats = 0;
    float* pinned = nullptr;  // filled at build time (constants); else placed in the arena
    int def = -1, last = -1;  // first writing and last reading step
    size_t offset = 0;
  };
  /// A recorded step: boundary/transform steps carry buffer ids; operator steps their setup.
  struct Pending {
    Step step;
    int src = -1, dst = -1;
    std::vector<int> reads;
    int write = -1;
    std::function<xnn_status()> setup;
    const char* call = "";
  };
  struct Operand {
    int buf;
    Shape s;  // logical (ONNX) shape; the data is NHWC-ordered when the op runs NHWC
  };

  const Shape& shape(int v) const;
  bool produced(int v) const;
  int alloc(size_t floats);
  float* pin(int id);
  float* ptr(int id) const { return bufs_[id].pinned ? bufs_[id].pinned : arena_ + bufs_[id].offset / sizeof(float); }
  int get(int v, Layout want);
  int produce(int v, Layout l);
  bool prefers_nhwc(int v) const;
  void transfer(Step::Type t, int value, int src, int dst, size_t n, size_t rows, size_t cols);
  void run(xnn_operator_t op, int plan, std::vector<int> reads, int write, const char* call, std::function<xnn_status()> setup);
  xnn_operator_t keep(xnn_status st, xnn_operator_t op, const OpPlan& p, const char* call);
  void note(std::string s) {
    if (verbose_) trace_.push_back(std::move(s));
  }
  std::string name(int v) const;
  void build_op(int pi);
  void emit_binary(Bin bin, float lo, float hi, const Operand& a, const Operand& b, int out, bool nhwc, int pi);
  void fold_batch_norm(const OpPlan& p, int64_t M, int64_t per_channel, std::vector<float>& w, std::vector<float>& bias) const;
  void place();

  const RegionKernel& k_;
  const Graph& g_;
  Instance& inst_;
  pthreadpool_t pool_;
  std::vector<Buf> bufs_;
  std::vector<Pending> pending_;
  float* arena_ = nullptr;
  std::unordered_map<int, int> plain_, nhwc_;
  std::unordered_map<int, Layout> primary_;
  bool verbose_;
  std::vector<std::string> trace_;
};

class RegionKernel final : public Kernel {
 public:
  RegionKernel(const RegionInfo& info, std::shared_ptr<const Threads> threads);
  void compute(KernelContext& ctx) const override;

 private:
  friend class Builder;
  std::unique_ptr<Instance> build(std::vector<Shape> shapes) const;
  void run(const Instance& inst, Value* frame) const;
  bool matches(const Instance& inst, const Value* frame) const;

  const Graph& g_;
  std::shared_ptr<const Threads> threads_;
  std::vector<OpPlan> plans_;
  std::vector<int> outputs_;     // region outputs
  std::vector<int> key_values_;  // values whose shapes select an instance
  std::unordered_map<int, size_t> key_pos_;
  std::vector<char> produced_;  // per value id
  std::string label_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable int building_ = 0;
  mutable std::vector<std::unique_ptr<Instance>> cache_;
  mutable uint64_t clock_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Compile time

RegionKernel::RegionKernel(const RegionInfo& info, std::shared_ptr<const Threads> threads)
    : g_(info.graph), threads_(std::move(threads)) {
  const Graph& g = g_;
  const size_t nv = g.values.size();
  label_ = str("region of ", info.nodes.size(), " node(s) at ", g.nodes[info.nodes.front()].label());
  std::vector<int> uses(nv, 0);
  for (const Node& n : g.nodes) {
    for (int v : n.inputs)
      if (v >= 0) ++uses[v];
    for (int v : n.implicit_inputs) ++uses[v];
  }
  for (int v : g.outputs) uses[v] += 2;  // never fold a graph output away
  std::vector<char> in_region(g.nodes.size(), 0), absorbed(g.nodes.size(), 0);
  for (int i : info.nodes) in_region[i] = 1;
  // The single consumer of each value, when it has one.
  std::vector<int> consumer(nv, -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs)
      if (v >= 0 && uses[v] == 1) consumer[v] = static_cast<int>(i);

  for (int i : info.nodes) {
    if (absorbed[i]) continue;
    const Node& n = g.nodes[i];
    OpPlan p;
    p.node = i;
    p.label = n.label();
    p.out = n.outputs.empty() ? -1 : n.outputs[0];
    const std::string& op = n.op_type;
    const int x = n.inputs.empty() ? -1 : n.inputs[0];
    auto unary = [&](Un u) {
      p.kind = Kind::kUnary;
      p.un = u;
      p.in = {x};
    };
    if (n.domain == "onyx" && op == "FusedConv") {
      p.kind = Kind::kConv;
      p.in = {x};
      const std::vector<float> prm = n.attr_floats("activation_params");
      if (n.attr_string("activation") == "Relu") {
        p.lo = 0.0f;
      } else if (prm.size() == 2) {
        p.lo = prm[0];
        p.hi = prm[1];
      }
    } else if (!n.domain.empty()) {
      fail(ErrorCode::kNotImplemented, "xnnpack: ", p.label, " was claimed but has no XNNPACK mapping");
    } else if (op == "Conv") {
      p.kind = Kind::kConv, p.in = {x};
    } else if (op == "ConvTranspose") {
      p.kind = Kind::kDeconv, p.in = {x};
    } else if (op == "Gemm" || op == "MatMul") {
      p.kind = Kind::kFc, p.in = {x};
    } else if (op == "MaxPool") {
      p.kind = Kind::kMaxPool, p.in = {x};
    } else if (op == "AveragePool") {
      p.kind = Kind::kAvgPool, p.in = {x};
    } else if (op == "GlobalAveragePool") {
      p.kind = Kind::kGlobalAvgPool, p.in = {x};
    } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min" || op == "Sum" ||
               op == "Mean") {
      p.kind = Kind::kBinary;
      p.bin = op == "Add" || op == "Sum" || op == "Mean" ? Bin::kAdd : op == "Sub" ? Bin::kSub : op == "Mul" ? Bin::kMul
              : op == "Div" ? Bin::kDiv : op == "Max" ? Bin::kMax : Bin::kMin;
      p.mean = op == "Mean";
      for (size_t k = 0; k < n.num_inputs(); ++k) p.in.push_back(n.inputs[k]);
      if (p.in.size() == 1) p.kind = Kind::kAlias;  // Sum / Mean / Max / Min of one input
    } else if (op == "BatchNormalization") {
      p.kind = Kind::kBatchNorm, p.in = {x};
    } else if (op == "Pow") {
      const Tensor* e = constant_input(g, n, 1);
      unary(e && e->element_as_double(0) == 2.0 ? Un::kSquare : Un::kSqrt);
    } else if (op == "Relu" || op == "Clip") {
      p.kind = Kind::kClamp;
      p.in = {x};
      if (!activation_bounds(g, n, &p.lo, &p.hi))
        fail(ErrorCode::kEpFailure, "xnnpack: ", p.label, ": Clip bounds are not constant");
    } else if (op == "LeakyRelu") {
      p.kind = Kind::kLeakyRelu, p.in = {x}, p.alpha = n.attr_float("alpha", 0.01f);
    } else if (op == "Elu") {
      p.kind = Kind::kElu, p.in = {x}, p.alpha = n.attr_float("alpha", 1.0f);
    } else if (op == "PRelu") {
      p.kind = Kind::kPRelu, p.in = {x};
    } else if (op == "Sigmoid") {
      unary(Un::kSigmoid);
    } else if (op == "HardSwish") {
      unary(Un::kHardSwish);
    } else if (op == "Abs") {
      unary(Un::kAbs);
    } else if (op == "Neg") {
      unary(Un::kNeg);
    } else if (op == "Floor") {
      unary(Un::kFloor);
    } else if (op == "Ceil") {
      unary(Un::kCeil);
    } else if (op == "Round") {
      unary(Un::kRound);
    } else if (op == "Sqrt") {
      unary(Un::kSqrt);
    } else if (op == "Softmax") {
      p.kind = Kind::kSoftmax, p.in = {x};
    } else if (op == "Resize" || op == "Upsample") {
      p.kind = Kind::kResize, p.in = {x};
    } else if (op == "DepthToSpace") {
      p.kind = Kind::kDepthToSpace, p.in = {x};
    } else if (op == "Pad") {
      p.kind = Kind::kPad, p.in = {x};
    } else if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity") {
      p.kind = Kind::kAlias, p.in = {x};
    } else {
      fail(ErrorCode::kNotImplemented, "xnnpack: ", p.label, " was claimed but has no XNNPACK mapping");
    }
    // Fold a following BatchNormalization into a convolution's weights and bias, then following
    // Relu / Clip nodes into the operator's output range.
    if ((p.kind == Kind::kConv || p.kind == Kind::kDeconv) && n.op_type != "FusedConv" && p.out >= 0 && consumer[p.out] >= 0) {
      const int c = consumer[p.out];
      const Node& b = g.nodes[c];
      if (in_region[c] && b.op_type == "BatchNormalization" && b.domain.empty() && !b.inputs.empty() && b.inputs[0] == p.out) {
        absorbed[c] = 1;
        p.bn = c;
        p.fused.push_back(b.label());
        p.out = b.outputs[0];
      }
    }
    while (takes_range(p) && p.out >= 0 && consumer[p.out] >= 0) {
      const int c = consumer[p.out];
      const Node& a = g.nodes[c];
      float lo, hi;
      if (!in_region[c] || absorbed[c] || a.inputs.empty() || a.inputs[0] != p.out || !activation_bounds(g, a, &lo, &hi))
        break;
      const float nlo = std::max(p.lo, lo), nhi = std::min(p.hi, hi);
      if (!(nlo < nhi)) break;
      p.lo = nlo;
      p.hi = nhi;
      absorbed[c] = 1;
      p.fused.push_back(a.label());
      p.out = a.outputs[0];
    }
    plans_.push_back(std::move(p));
  }

  produced_.assign(nv, 0);
  for (const OpPlan& p : plans_) produced_[p.out] = 1;
  auto add_key = [&](int v) {
    if (v < 0 || key_pos_.count(v) || (!produced_[v] && constant_value(g, v))) return;
    key_pos_[v] = key_values_.size();
    key_values_.push_back(v);
  };
  for (const OpPlan& p : plans_) {
    for (int v : p.in) add_key(v);
    add_key(p.out);
  }
  for (int v : info.outputs) {
    if (!produced_[v])
      fail(ErrorCode::kEpFailure, "xnnpack: internal error: region output '", g.values[v].name, "' is not computed");
    outputs_.push_back(v);
    add_key(v);
  }
  // Static shapes: build the instance now (weights are packed at session creation).
  std::vector<Shape> shapes;
  for (int v : key_values_) {
    const TypeInfo& t = g.values[v].type;
    if (!(t.is_tensor() && t.has_shape && t.shape.is_concrete())) return;
    shapes.push_back(t.shape);
  }
  cache_.push_back(build(std::move(shapes)));
}

// ---------------------------------------------------------------------------------------------
// Instances

Builder::Builder(const RegionKernel& k, Instance& inst)
    : k_(k), g_(k.g_), inst_(inst), pool_(k.threads_->get()), verbose_(log_enabled(LogLevel::kVerbose)) {}

const Shape& Builder::shape(int v) const {
  auto it = k_.key_pos_.find(v);
  if (it != k_.key_pos_.end()) return inst_.shapes[it->second];
  const Tensor* c = constant_value(g_, v);
  if (!c) fail(ErrorCode::kEpFailure, "xnnpack: internal error: no shape for '", g_.values[v].name, "'");
  return c->shape();
}

bool Builder::produced(int v) const { return k_.produced_[v] != 0; }

std::string Builder::name(int v) const { return "'" + g_.values[v].name + "'"; }

int Builder::alloc(size_t floats) {
  bufs_.push_back(Buf{floats});
  return static_cast<int>(bufs_.size()) - 1;
}

float* Builder::pin(int id) {
  Buf& b = bufs_[id];
  if (!b.pinned) {
    // XNNPACK may read (never write) up to XNN_EXTRA_BYTES past the end of an input.
    const size_t bytes = (b.floats * sizeof(float) + XNN_EXTRA_BYTES + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (!p) fail(ErrorCode::kRuntime, "xnnpack: ", k_.label_, ": out of memory allocating ", bytes, " bytes");
    std::memset(p, 0, bytes);
    inst_.pinned.push_back(p);
    b.pinned = static_cast<float*>(p);
  }
  return b.pinned;
}

int Builder::produce(int v, Layout l) {
  const int id = alloc(static_cast<size_t>(shape(v).numel()));
  (l == Layout::kPlain ? plain_ : nhwc_)[v] = id;
  primary_[v] = l;
  return id;
}

bool Builder::prefers_nhwc(int v) const {
  auto it = primary_.find(v);
  if (it != primary_.end()) return it->second == Layout::kNhwc;
  return nhwc_.count(v) && !plain_.count(v);
}

void Builder::transfer(Step::Type t, int value, int src, int dst, size_t n, size_t rows, size_t cols) {
  Pending pd;
  pd.step.type = t;
  pd.step.value = value;
  pd.step.n = n, pd.step.rows = rows, pd.step.cols = cols;
  pd.src = src, pd.dst = dst;
  if (src >= 0) pd.reads.push_back(src);
  pd.write = dst;
  pending_.push_back(std::move(pd));
}

void Builder::run(xnn_operator_t op, int plan, std::vector<int> reads, int write, const char* call,
                  std::function<xnn_status()> setup) {
  Pending pd;
  pd.step.type = Step::Type::kRun;
  pd.step.op = op;
  pd.step.plan = plan;
  pd.reads = std::move(reads);
  pd.write = write;
  pd.call = call;
  pd.setup = std::move(setup);
  pending_.push_back(std::move(pd));
  if (verbose_) {
    const OpPlan& p = k_.plans_[plan];
    std::string s = str(kind_name(p), " ", p.label);
    for (const auto& f : p.fused) s += " + " + f;
    note(s);
  }
}

int Builder::get(int v, Layout want) {
  auto& have = want == Layout::kPlain ? plain_ : nhwc_;
  if (auto it = have.find(v); it != have.end()) return it->second;
  const Shape& s = shape(v);
  const size_t count = static_cast<size_t>(s.numel());
  const Tensor* c = produced(v) ? nullptr : constant_value(g_, v);
  if (c && c->dtype() != DType::kFloat) fail(ErrorCode::kEpFailure, "xnnpack: constant ", name(v), " is not float32");
  if (want == Layout::kPlain) {
    if (auto it = nhwc_.find(v); it != nhwc_.end() && same_bytes(dims4(s))) return plain_[v] = it->second;
    const int dst = alloc(count);
    plain_[v] = dst;
    if (c) {
      std::memcpy(pin(dst), c->data<float>(), count * sizeof(float));
    } else if (!produced(v)) {
      transfer(Step::Type::kCopyIn, v, -1, dst, count, 0, 0);
      note("copy in " + name(v));
    } else {
      const Shape s4 = dims4(s);
      transfer(Step::Type::kToPlain, -1, nhwc_.at(v), dst, size_t(s4[0]), size_t(s4[2] * s4[3]), size_t(s4[1]));
      ++inst_.internal_transforms;
      note("nhwc->nchw " + name(v) + " (inside)");
    }
    return dst;
  }
  const Shape s4 = dims4(s);
  if (same_bytes(s4)) return nhwc_[v] = get(v, Layout::kPlain);
  const int dst = alloc(count);
  nhwc_[v] = dst;
  const size_t N = static_cast<size_t>(s4[0]), C = static_cast<size_t>(s4[1]), HW = static_cast<size_t>(s4[2] * s4[3]);
  if (c) {
    transpose(c->data<float>(), pin(dst), N, C, HW, nullptr);
  } else if (!produced(v)) {
    transfer(Step::Type::kNhwcIn, v, -1, dst, N, C, HW);
    ++inst_.boundary_transforms;
    note("nchw->nhwc " + name(v));
  } else {
    transfer(Step::Type::kToNhwc, -1, plain_.at(v), dst, N, C, HW);
    ++inst_.internal_transforms;
    note("nchw->nhwc " + name(v) + " (inside)");
  }
  return dst;
}

xnn_operator_t Builder::keep(xnn_status st, xnn_operator_t op, const OpPlan& p, const char* call) {
  if (st != xnn_status_success) {
    if (op) xnn_delete_operator(op);
    fail_status(st, p.label, call);
  }
  inst_.ops.push_back(op);
  return op;
}

void Builder::place() {
  for (size_t i = 0; i < pending_.size(); ++i) {
    const int at = static_cast<int>(i);
    for (int r : pending_[i].reads) bufs_[r].last = std::max(bufs_[r].last, at);
    if (const int w = pending_[i].write; w >= 0 && bufs_[w].def < 0) bufs_[w].def = at;
  }
  // Greedy placement, largest first, at the lowest offset free for the whole lifetime.
  std::vector<int> order;
  for (size_t i = 0; i < bufs_.size(); ++i)
    if (!bufs_[i].pinned) order.push_back(static_cast<int>(i));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return bufs_[a].floats > bufs_[b].floats; });
  auto bytes_of = [&](const Buf& b) { return (b.floats * sizeof(float) + 63) / 64 * 64; };
  std::vector<int> placed;
  size_t total = 0;
  for (int id : order) {
    Buf& b = bufs_[id];
    const int begin = b.def < 0 ? 0 : b.def, end = std::max(b.last, begin);
    std::vector<std::pair<size_t, size_t>> busy;
    for (int o : placed) {
      const Buf& q = bufs_[o];
      const int qb = q.def < 0 ? 0 : q.def, qe = std::max(q.last, qb);
      if (qe < begin || end < qb) continue;
      busy.emplace_back(q.offset, bytes_of(q));
    }
    std::sort(busy.begin(), busy.end());
    size_t off = 0;
    for (const auto& [o, sz] : busy) {
      if (off + bytes_of(b) <= o) break;
      off = std::max(off, o + sz);
    }
    b.offset = off;
    total = std::max(total, off + bytes_of(b));
    placed.push_back(id);
  }
  const size_t bytes = total + 64 + (XNN_EXTRA_BYTES + 63) / 64 * 64;
  inst_.arena = std::aligned_alloc(64, bytes);
  if (!inst_.arena) fail(ErrorCode::kRuntime, "xnnpack: ", k_.label_, ": out of memory allocating ", bytes, " bytes");
  std::memset(inst_.arena, 0, bytes);
  inst_.arena_bytes = bytes;
  arena_ = static_cast<float*>(inst_.arena);
}

/// Per-channel scale and shift of an inference BatchNormalization: y = x * scale + shift.
void batch_norm_affine(const Graph& g, const Node& n, int64_t C, float* scale, float* shift) {
  const Tensor* t[5] = {};
  for (size_t i = 1; i <= 4; ++i) {
    t[i] = constant_input(g, n, i);
    if (!t[i] || t[i]->dtype() != DType::kFloat || t[i]->numel() != C)
      fail(ErrorCode::kEpFailure, "xnnpack: ", n.label(), ": input ", i, " is not a constant with one value per channel");
  }
  const double eps = n.attr_float("epsilon", 1e-5f);
  for (int64_t c = 0; c < C; ++c) {
    const double s = static_cast<double>(t[1]->data<float>()[c]) / std::sqrt(static_cast<double>(t[4]->data<float>()[c]) + eps);
    scale[c] = static_cast<float>(s);
    shift[c] = static_cast<float>(static_cast<double>(t[2]->data<float>()[c]) - static_cast<double>(t[3]->data<float>()[c]) * s);
  }
}

Shape broadcast(const Shape& a, const Shape& b, const std::string& where) {
  const size_t r = std::max(a.size(), b.size());
  Shape out = Shape::filled(r, 1);
  for (size_t k = 0; k < r; ++k) {
    const int64_t x = k + a.size() >= r ? a[k + a.size() - r] : 1;
    const int64_t y = k + b.size() >= r ? b[k + b.size() - r] : 1;
    if (x != y && x != 1 && y != 1)
      fail(ErrorCode::kInvalidArgument, where, ": shapes ", a.to_string(), " and ", b.to_string(), " do not broadcast");
    out[k] = x == 1 ? y : x;
  }
  return out;
}

void Builder::emit_binary(Bin bin, float lo, float hi, const Operand& a, const Operand& b, int out, bool nhwc, int pi) {
  const OpPlan& p = k_.plans_[pi];
  std::array<size_t, XNN_MAX_TENSOR_DIMS> da{}, db{};
  size_t ra = 0, rb = 0;
  auto dims = [&](const Shape& s, std::array<size_t, XNN_MAX_TENSOR_DIMS>& d, size_t* r) {
    const Shape q = nhwc ? nhwc_dims(dims4(s)) : s;
    if (q.size() > XNN_MAX_TENSOR_DIMS) fail(ErrorCode::kEpFailure, "xnnpack: ", p.label, ": more than 6 dims");
    for (size_t k = 0; k < q.size(); ++k) d[k] = static_cast<size_t>(q[k]);
    *r = q.size();
    if (*r == 0) d[0] = 1, *r = 1;
  };
  dims(a.s, da, &ra);
  dims(b.s, db, &rb);
  xnn_operator_t op = nullptr;
  xnn_status st = xnn_status_success;
  const char* call = "";
  switch (bin) {
    case Bin::kAdd: st = xnn_create_add_nd_f32(lo, hi, 0, &op), call = "xnn_create_add_nd_f32"; break;
    case Bin::kSub: st = xnn_create_subtract_nd_f32(lo, hi, 0, &op), call = "xnn_create_subtract_nd_f32"; break;
    case Bin::kMul: st = xnn_create_multiply_nd_f32(lo, hi, 0, &op), call = "xnn_create_multiply_nd_f32"; break;
    case Bin::kDiv: st = xnn_create_divide_nd_f32(lo, hi, 0, &op), call = "xnn_create_divide_nd_f32"; break;
    case Bin::kMax: st = xnn_create_maximum_nd_f32(0, &op), call = "xnn_create_maximum_nd_f32"; break;
    case Bin::kMin: st = xnn_create_minimum_nd_f32(0, &op), call = "xnn_create_minimum_nd_f32"; break;
  }
  keep(st, op, p, call);
  using SetupNd = xnn_status (*)(xnn_operator_t, size_t, const size_t*, size_t, const size_t*, const float*, const float*,
                                 float*, pthreadpool_t);
  SetupNd fn = nullptr;
  switch (bin) {
    case Bin::kAdd: fn = xnn_setup_add_nd_f32, call = "xnn_setup_add_nd_f32"; break;
    case Bin::kSub: fn = xnn_setup_subtract_nd_f32, call = "xnn_setup_subtract_nd_f32"; break;
    case Bin::kMul: fn = xnn_setup_multiply_nd_f32, call = "xnn_setup_multiply_nd_f32"; break;
    case Bin::kDiv: fn = xnn_setup_divide_nd_f32, call = "xnn_setup_divide_nd_f32"; break;
    case Bin::kMax: fn = xnn_setup_maximum_nd_f32, call = "xnn_setup_maximum_nd_f32"; break;
    case Bin::kMin: fn = xnn_setup_minimum_nd_f32, call = "xnn_setup_minimum_nd_f32"; break;
  }
  const int ia = a.buf, ib = b.buf;
  run(op, pi, {ia, ib}, out, call, [=, this] { return fn(op, ra, da.data(), rb, db.data(), ptr(ia), ptr(ib), ptr(out), pool_); });
}

void Builder::fold_batch_norm(const OpPlan& p, int64_t M, int64_t per_channel, std::vector<float>& w,
                              std::vector<float>& bias) const {
  if (p.bn < 0) return;
  std::vector<float> sc(static_cast<size_t>(M)), sh(static_cast<size_t>(M));
  batch_norm_affine(g_, g_.nodes[p.bn], M, sc.data(), sh.data());
  if (bias.empty()) bias.assign(static_cast<size_t>(M), 0.0f);
  for (int64_t o = 0; o < M; ++o) {
    for (int64_t i = 0; i < per_channel; ++i) w[o * per_channel + i] *= sc[o];
    bias[o] = bias[o] * sc[o] + sh[o];
  }
}

void Builder::build() {
  for (size_t pi = 0; pi < k_.plans_.size(); ++pi) build_op(static_cast<int>(pi));
  for (int v : k_.outputs_) {
    const Shape& s = shape(v);
    const size_t count = static_cast<size_t>(s.numel());
    if (auto pl = plain_.find(v); pl != plain_.end()) {
      transfer(Step::Type::kCopyOut, v, pl->second, -1, count, 0, 0);
      note("copy out " + name(v));
      continue;
    }
    const Shape s4 = dims4(s);
    if (same_bytes(s4)) {
      transfer(Step::Type::kCopyOut, v, nhwc_.at(v), -1, count, 0, 0);
      note("copy out " + name(v));
    } else {
      transfer(Step::Type::kPlainOut, v, nhwc_.at(v), -1, size_t(s4[0]), size_t(s4[2] * s4[3]), size_t(s4[1]));
      ++inst_.boundary_transforms;
      note("nhwc->nchw " + name(v));
    }
  }
  place();
  for (Pending& pd : pending_) {
    Step st = pd.step;
    if (pd.src >= 0) st.src = ptr(pd.src);
    if (pd.dst >= 0) st.dst = ptr(pd.dst);
    if (pd.setup) check_status(pd.setup(), k_.plans_[st.plan].label, pd.call);
    inst_.steps.push_back(st);
  }
  if (verbose_) {
    std::string shapes;
    for (size_t i = 0; i < k_.key_values_.size(); ++i) {
      const int v = k_.key_values_[i];
      if (produced(v)) continue;
      shapes += (shapes.empty() ? "" : ", ") + name(v) + " " + inst_.shapes[i].to_string();
    }
    size_t sum = 0;
    for (const Buf& b : bufs_)
      if (!b.pinned) sum += b.floats * sizeof(float);
    log_message(LogLevel::kVerbose,
                str("xnnpack: ", k_.label_, " for ", shapes.empty() ? std::string("no inputs") : shapes, ": ",
                    join(trace_, "; "), "; layout transforms: ", inst_.boundary_transforms, " at the boundary, ",
                    inst_.internal_transforms, " inside; buffers: ", inst_.arena_bytes, " bytes (", sum,
                    " without reuse)"));
  }
}

void Builder::build_op(int pi) {
  const OpPlan& p = k_.plans_[pi];
  const Node& n = g_.nodes[p.node];
  const std::string& L = p.label;
  const Shape& ys = shape(p.out);
  const int x = p.in[0];
  const Shape& xs = shape(x);
  auto natural = [&] { return prefers_nhwc(x) ? Layout::kNhwc : Layout::kPlain; };
  if (ys.numel() == 0) {
    produce(p.out, Layout::kPlain);  // nothing to compute
    return;
  }
  if (p.kind == Kind::kAlias) {
    plain_[p.out] = get(x, Layout::kPlain);
    primary_[p.out] = Layout::kPlain;
    return;
  }
  if (xs.numel() == 0) fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": an empty input with a non-empty output");
  xnn_operator_t op = nullptr;
  auto expect_shape = [&](const Shape& want) {
    if (!(want == ys))
      fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": computed output shape ", want.to_string(), " differs from the inferred ",
           ys.to_string());
  };
  switch (p.kind) {
    case Kind::kConv: {
      const Tensor& w = *constant_input(g_, n, 1);
      const Tensor* b = constant_input(g_, n, 2);
      const int64_t group = n.attr_int("group", 1), M = w.dim(0), Cg = w.dim(1), kh = w.dim(2), kw = w.dim(3);
      const size_t N = size_t(xs[0]), H = size_t(xs[2]), W = size_t(xs[3]);
      const int64_t C = xs[1];
      if (C != Cg * group) fail(ErrorCode::kInvalidArgument, L, ": input has ", C, " channels, the weights expect ", Cg * group);
      const WindowGeometry geo = window_geometry(n, Shape{xs[2], xs[3]}, Shape{kh, kw}, false);
      expect_shape(Shape{xs[0], M, geo.out[0], geo.out[1]});
      // ONNX [M][Cg][kh][kw] -> XNNPACK [groups][M/groups][kh][kw][Cg] (= [M][kh][kw][Cg]).
      std::vector<float> wt(static_cast<size_t>(w.numel()));
      const float* src = w.data<float>();
      for (int64_t o = 0; o < M; ++o)
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t i = 0; i < kh * kw; ++i) wt[(o * kh * kw + i) * Cg + c] = src[(o * Cg + c) * kh * kw + i];
      std::vector<float> bias = b ? std::vector<float>(b->data<float>(), b->data<float>() + M) : std::vector<float>();
      fold_batch_norm(p, M, kh * kw * Cg, wt, bias);
      const int in = get(x, Layout::kNhwc);
      const int out = produce(p.out, Layout::kNhwc);
      keep(xnn_create_convolution2d_nhwc_f32(
               u32(geo.pad_begin[0], L, "padding"), u32(geo.pad_end[1], L, "padding"), u32(geo.pad_end[0], L, "padding"),
               u32(geo.pad_begin[1], L, "padding"), u32(kh, L, "kernel"), u32(kw, L, "kernel"), u32(geo.stride[0], L, "stride"),
               u32(geo.stride[1], L, "stride"), u32(geo.dilation[0], L, "dilation"), u32(geo.dilation[1], L, "dilation"),
               u32(group, L, "group"), static_cast<size_t>(Cg), static_cast<size_t>(M / group), static_cast<size_t>(C),
               static_cast<size_t>(M), wt.data(), bias.empty() ? nullptr : bias.data(), p.lo, p.hi, 0, &op),
           op, p, "xnn_create_convolution2d_nhwc_f32");
      run(op, pi, {in}, out, "xnn_setup_convolution2d_nhwc_f32",
          [=, this] { return xnn_setup_convolution2d_nhwc_f32(op, N, H, W, ptr(in), ptr(out), pool_); });
      return;
    }
    case Kind::kDeconv: {
      const Tensor& w = *constant_input(g_, n, 1);
      const Tensor* b = constant_input(g_, n, 2);
      const int64_t group = n.attr_int("group", 1), Cw = w.dim(0), Mg = w.dim(1), kh = w.dim(2), kw = w.dim(3);
      const int64_t Cg = Cw / group, M = Mg * group;
      const size_t N = size_t(xs[0]), H = size_t(xs[2]), W = size_t(xs[3]);
      const int64_t C = xs[1];
      if (C != Cw) fail(ErrorCode::kInvalidArgument, L, ": input has ", C, " channels, the weights expect ", Cw);
      const WindowGeometry geo = conv_transpose_geometry(n, Shape{xs[2], xs[3]}, Shape{kh, kw});
      expect_shape(Shape{xs[0], M, geo.out[0], geo.out[1]});
      int64_t pe[2], adj[2];
      for (int k = 0; k < 2; ++k) {
        if (geo.pad_begin[k] < 0) fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": negative leading padding");
        pe[k] = std::max<int64_t>(0, geo.pad_end[k]);
        const int64_t span = (geo.kernel[k] - 1) * geo.dilation[k] + 1;
        adj[k] = geo.out[k] - (geo.stride[k] * (xs[2 + k] - 1) + span - geo.pad_begin[k] - pe[k]);
        if (adj[k] < 0 || adj[k] >= geo.stride[k])
          fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": output size needs an adjustment of ", adj[k], " (stride ", geo.stride[k], ")");
      }
      // ONNX [C][Mg][kh][kw] with C = groups*Cg -> XNNPACK [groups][Mg][kh][kw][Cg].
      std::vector<float> wt(static_cast<size_t>(w.numel()));
      const float* src = w.data<float>();
      for (int64_t gi = 0; gi < group; ++gi)
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t m = 0; m < Mg; ++m)
            for (int64_t i = 0; i < kh * kw; ++i)
              wt[(((gi * Mg + m) * kh * kw) + i) * Cg + c] = src[((gi * Cg + c) * Mg + m) * kh * kw + i];
      std::vector<float> bias = b ? std::vector<float>(b->data<float>(), b->data<float>() + M) : std::vector<float>();
      fold_batch_norm(p, M, kh * kw * Cg, wt, bias);
      const int in = get(x, Layout::kNhwc);
      const int out = produce(p.out, Layout::kNhwc);
      keep(xnn_create_deconvolution2d_nhwc_f32(
               u32(geo.pad_begin[0], L, "padding"), u32(pe[1], L, "padding"), u32(pe[0], L, "padding"),
               u32(geo.pad_begin[1], L, "padding"), u32(kh, L, "kernel"), u32(kw, L, "kernel"), u32(geo.stride[0], L, "stride"),
               u32(geo.stride[1], L, "stride"), u32(geo.dilation[0], L, "dilation"), u32(geo.dilation[1], L, "dilation"),
               u32(group, L, "group"), static_cast<size_t>(Cg), static_cast<size_t>(Mg), static_cast<size_t>(C),
               static_cast<size_t>(M), wt.data(), bias.empty() ? nullptr : bias.data(), p.lo, p.hi, 0, &op),
           op, p, "xnn_create_deconvolution2d_nhwc_f32");
      const uint32_t ah = u32(adj[0], L, "adjustment"), aw = u32(adj[1], L, "adjustment");
      run(op, pi, {in}, out, "xnn_setup_deconvolution2d_nhwc_f32",
          [=, this] { return xnn_setup_deconvolution2d_nhwc_f32(op, N, H, W, ah, aw, ptr(in), ptr(out), pool_); });
      return;
    }
    case Kind::kFc: {
      const Tensor& bm = *constant_input(g_, n, 1);
      const bool gemm = n.op_type == "Gemm";
      const bool trans_b = gemm && n.attr_int("transB", 0) != 0;
      const float alpha = gemm ? n.attr_float("alpha", 1.0f) : 1.0f;
      const float beta = gemm ? n.attr_float("beta", 1.0f) : 1.0f;
      const int64_t K = trans_b ? bm.dim(1) : bm.dim(0), Nout = trans_b ? bm.dim(0) : bm.dim(1);
      if (xs.empty() || xs.back() != K) fail(ErrorCode::kInvalidArgument, L, ": A ", xs.to_string(), " does not match B ", bm.shape().to_string());
      const float* wp = bm.data<float>();
      std::vector<float> scaled;
      if (alpha != 1.0f) {
        scaled.resize(static_cast<size_t>(bm.numel()));
        for (size_t i = 0; i < scaled.size(); ++i) scaled[i] = alpha * wp[i];
        wp = scaled.data();
      }
      std::vector<float> bias;
      if (const Tensor* c = gemm ? constant_input(g_, n, 2) : nullptr; c && beta != 0.0f) {
        bias.resize(static_cast<size_t>(Nout));
        const float* cp = c->data<float>();
        for (int64_t j = 0; j < Nout; ++j) bias[j] = beta * cp[c->numel() == 1 ? 0 : j];
      }
      const int in = get(x, Layout::kPlain);
      const int out = produce(p.out, Layout::kPlain);
      keep(xnn_create_fully_connected_nc_f32(static_cast<size_t>(K), static_cast<size_t>(Nout), static_cast<size_t>(K),
                                             static_cast<size_t>(Nout), wp, bias.empty() ? nullptr : bias.data(), p.lo, p.hi,
                                             trans_b ? 0 : XNN_FLAG_TRANSPOSE_WEIGHTS, &op),
           op, p, "xnn_create_fully_connected_nc_f32");
      const size_t batch = static_cast<size_t>(xs.numel() / K);
      run(op, pi, {in}, out, "xnn_setup_fully_connected_nc_f32",
          [=, this] { return xnn_setup_fully_connected_nc_f32(op, batch, ptr(in), ptr(out), pool_); });
      return;
    }
    case Kind::kMaxPool:
    case Kind::kAvgPool: {
      const bool max = p.kind == Kind::kMaxPool;
      const std::vector<int64_t> ks = n.attr_ints("kernel_shape");
      int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
      const WindowGeometry geo = window_geometry(n, Shape{H, W}, Shape(ks), true);
      expect_shape(Shape{N, C, geo.out[0], geo.out[1]});
      int64_t pb[2] = {geo.pad_begin[0], geo.pad_begin[1]}, pe[2] = {geo.pad_end[0], geo.pad_end[1]};
      int in = get(x, Layout::kNhwc);
      if (!max && n.attr_int("count_include_pad", 0) != 0 && (pb[0] | pb[1] | pe[0] | pe[1]) != 0) {
        // XNNPACK averages over the input pixels only: pad with zeros explicitly first.
        const std::array<size_t, 4> shp = {size_t(N), size_t(H), size_t(W), size_t(C)};
        const std::array<size_t, 4> pre = {0, size_t(pb[0]), size_t(pb[1]), 0}, post = {0, size_t(pe[0]), size_t(pe[1]), 0};
        H += pb[0] + pe[0];
        W += pb[1] + pe[1];
        const int padded = alloc(static_cast<size_t>(N * H * W * C));
        static const uint32_t zero = 0;
        xnn_operator_t pad = nullptr;
        keep(xnn_create_constant_pad_nd_x32(&zero, 0, &pad), pad, p, "xnn_create_constant_pad_nd_x32");
        run(pad, pi, {in}, padded, "xnn_setup_constant_pad_nd_x32", [=, this] {
          return xnn_setup_constant_pad_nd_x32(pad, 4, shp.data(), pre.data(), post.data(), ptr(in), ptr(padded), pool_);
        });
        in = padded;
        pb[0] = pb[1] = pe[0] = pe[1] = 0;
      }
      for (int k = 0; k < 2; ++k) {
        const int64_t span = (geo.kernel[k] - 1) * geo.dilation[k] + 1;
        const int64_t size = k ? W : H;
        // ceil_mode: extra trailing padding (not averaged over) so that XNNPACK's floor gives ONNX's size.
        pe[k] += std::max<int64_t>(0, (geo.out[k] - 1) * geo.stride[k] + span - (size + pb[k] + pe[k]));
        if ((size + pb[k] + pe[k] - span) / geo.stride[k] + 1 != geo.out[k])
          fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": cannot express the pooled size ", geo.out[k], " in spatial dim ", k);
      }
      const int out = produce(p.out, Layout::kNhwc);
      const size_t sN = size_t(N), sH = size_t(H), sW = size_t(W);
      if (max) {
        keep(xnn_create_max_pooling2d_nhwc_f32(u32(pb[0], L, "padding"), u32(pe[1], L, "padding"), u32(pe[0], L, "padding"),
                                               u32(pb[1], L, "padding"), u32(ks[0], L, "kernel"), u32(ks[1], L, "kernel"),
                                               u32(geo.stride[0], L, "stride"), u32(geo.stride[1], L, "stride"),
                                               u32(geo.dilation[0], L, "dilation"), u32(geo.dilation[1], L, "dilation"),
                                               size_t(C), size_t(C), size_t(C), p.lo, p.hi, 0, &op),
             op, p, "xnn_create_max_pooling2d_nhwc_f32");
        run(op, pi, {in}, out, "xnn_setup_max_pooling2d_nhwc_f32",
            [=, this] { return xnn_setup_max_pooling2d_nhwc_f32(op, sN, sH, sW, ptr(in), ptr(out), pool_); });
      } else {
        keep(xnn_create_average_pooling2d_nhwc_f32(u32(pb[0], L, "padding"), u32(pe[1], L, "padding"),
                                                   u32(pe[0], L, "padding"), u32(pb[1], L, "padding"), u32(ks[0], L, "kernel"),
                                                   u32(ks[1], L, "kernel"), u32(geo.stride[0], L, "stride"),
                                                   u32(geo.stride[1], L, "stride"), size_t(C), size_t(C), size_t(C), p.lo,
                                                   p.hi, 0, &op),
             op, p, "xnn_create_average_pooling2d_nhwc_f32");
        run(op, pi, {in}, out, "xnn_setup_average_pooling2d_nhwc_f32",
            [=, this] { return xnn_setup_average_pooling2d_nhwc_f32(op, sN, sH, sW, ptr(in), ptr(out), pool_); });
      }
      return;
    }
    case Kind::kGlobalAvgPool: {
      const size_t N = size_t(xs[0]), C = size_t(xs[1]), HW = size_t(xs[2] * xs[3]);
      expect_shape(Shape{xs[0], xs[1], 1, 1});
      const int in = get(x, Layout::kNhwc);
      const int out = produce(p.out, Layout::kNhwc);
      keep(xnn_create_global_average_pooling_nwc_f32(C, C, C, p.lo, p.hi, 0, &op), op, p,
           "xnn_create_global_average_pooling_nwc_f32");
      run(op, pi, {in}, out, "xnn_setup_global_average_pooling_nwc_f32",
          [=, this] { return xnn_setup_global_average_pooling_nwc_f32(op, N, HW, ptr(in), ptr(out), pool_); });
      return;
    }
    case Kind::kBinary: {
      // Two inputs: one operator (NHWC when an input is an NHWC activation). More (Sum, Mean, Max,
      // Min): a chain through intermediate buffers; Mean ends with a multiply by 1/n.
      bool nhwc = ys.size() == 4;
      bool any = false;
      for (int v : p.in) {
        any |= prefers_nhwc(v);
        nhwc &= shape(v).size() <= 4;
      }
      // Legacy (opset < 7) axis broadcasting realigns B's dims: keep such ops plain.
      if (p.in.size() == 2 && !(legacy_broadcast_shape(n, xs, shape(p.in[1])) == shape(p.in[1]))) nhwc = false;
      nhwc &= any;
      const Layout l = nhwc ? Layout::kNhwc : Layout::kPlain;
      Operand acc{get(x, l), xs};
      const size_t count = p.in.size();
      for (size_t i = 1; i < count; ++i) {
        const int v = p.in[i];
        const Operand next{get(v, l), count == 2 ? legacy_broadcast_shape(n, xs, shape(v)) : shape(v)};
        const bool last = i + 1 == count && !p.mean;
        const Shape sh = last ? ys : broadcast(acc.s, next.s, L);
        const int dst = last ? produce(p.out, l) : alloc(static_cast<size_t>(sh.numel()));
        emit_binary(p.bin, last ? p.lo : -kInf, last ? p.hi : kInf, acc, next, dst, nhwc, pi);
        acc = {dst, sh};
      }
      if (p.mean) {
        const int scale = alloc(1);
        pin(scale)[0] = 1.0f / static_cast<float>(count);
        emit_binary(Bin::kMul, p.lo, p.hi, acc, Operand{scale, Shape{1}}, produce(p.out, l), nhwc, pi);
      }
      return;
    }
    case Kind::kBatchNorm: {
      const int64_t C = xs[1];
      const int scale = alloc(static_cast<size_t>(C)), shift = alloc(static_cast<size_t>(C));
      batch_norm_affine(g_, n, C, pin(scale), pin(shift));
      const Layout l = xs.size() == 4 && prefers_nhwc(x) ? Layout::kNhwc : Layout::kPlain;
      Shape cs = Shape::filled(xs.size(), 1);
      cs[1] = C;
      const int tmp = alloc(static_cast<size_t>(xs.numel()));
      emit_binary(Bin::kMul, -kInf, kInf, Operand{get(x, l), xs}, Operand{scale, cs}, tmp, l == Layout::kNhwc, pi);
      emit_binary(Bin::kAdd, p.lo, p.hi, Operand{tmp, xs}, Operand{shift, cs}, produce(p.out, l), l == Layout::kNhwc, pi);
      return;
    }
    case Kind::kUnary:
    case Kind::kClamp:
    case Kind::kLeakyRelu:
    case Kind::kElu: {
      const Layout l = natural();
      const int in = get(x, l);
      const int out = produce(p.out, l);
      xnn_status st = xnn_status_success;
      const char* call = "";
      using SetupNc = xnn_status (*)(xnn_operator_t, size_t, const float*, float*, pthreadpool_t);
      SetupNc fn = nullptr;
      const char* setup_call = "";
      switch (p.kind) {
        case Kind::kClamp:
          st = xnn_create_clamp_nc_f32(1, 1, 1, p.lo, p.hi, 0, &op), call = "xnn_create_clamp_nc_f32";
          fn = xnn_setup_clamp_nc_f32, setup_call = "xnn_setup_clamp_nc_f32";
          break;
        case Kind::kLeakyRelu:
          st = xnn_create_leaky_relu_nc_f32(1, 1, 1, p.alpha, 0, &op), call = "xnn_create_leaky_relu_nc_f32";
          fn = xnn_setup_leaky_relu_nc_f32, setup_call = "xnn_setup_leaky_relu_nc_f32";
          break;
        case Kind::kElu:
          st = xnn_create_elu_nc_f32(1, 1, 1, p.alpha, 0, &op), call = "xnn_create_elu_nc_f32";
          fn = xnn_setup_elu_nc_f32, setup_call = "xnn_setup_elu_nc_f32";
          break;
        default:
          switch (p.un) {
            case Un::kAbs:
              st = xnn_create_abs_nc_f32(1, 1, 1, 0, &op), call = "xnn_create_abs_nc_f32";
              fn = xnn_setup_abs_nc_f32, setup_call = "xnn_setup_abs_nc_f32";
              break;
            case Un::kNeg:
              st = xnn_create_negate_nc_f32(1, 1, 1, 0, &op), call = "xnn_create_negate_nc_f32";
              fn = xnn_setup_negate_nc_f32, setup_call = "xnn_setup_negate_nc_f32";
              break;
            case Un::kFloor:
              st = xnn_create_floor_nc_f32(1, 1, 1, 0, &op), call = "xnn_create_floor_nc_f32";
              fn = xnn_setup_floor_nc_f32, setup_call = "xnn_setup_floor_nc_f32";
              break;
            case Un::kCeil:
              st = xnn_create_ceiling_nc_f32(1, 1, 1, 0, &op), call = "xnn_create_ceiling_nc_f32";
              fn = xnn_setup_ceiling_nc_f32, setup_call = "xnn_setup_ceiling_nc_f32";
              break;
            case Un::kRound:
              st = xnn_create_bankers_rounding_nc_f32(1, 1, 1, 0, &op), call = "xnn_create_bankers_rounding_nc_f32";
              fn = xnn_setup_bankers_rounding_nc_f32, setup_call = "xnn_setup_bankers_rounding_nc_f32";
              break;
            case Un::kSqrt:
              st = xnn_create_square_root_nc_f32(1, 1, 1, 0, &op), call = "xnn_create_square_root_nc_f32";
              fn = xnn_setup_square_root_nc_f32, setup_call = "xnn_setup_square_root_nc_f32";
              break;
            case Un::kSquare:
              st = xnn_create_square_nc_f32(1, 1, 1, 0, &op), call = "xnn_create_square_nc_f32";
              fn = xnn_setup_square_nc_f32, setup_call = "xnn_setup_square_nc_f32";
              break;
            case Un::kSigmoid:
              st = xnn_create_sigmoid_nc_f32(1, 1, 1, 0, &op), call = "xnn_create_sigmoid_nc_f32";
              fn = xnn_setup_sigmoid_nc_f32, setup_call = "xnn_setup_sigmoid_nc_f32";
              break;
            case Un::kHardSwish:
              st = xnn_create_hardswish_nc_f32(1, 1, 1, 0, &op), call = "xnn_create_hardswish_nc_f32";
              fn = xnn_setup_hardswish_nc_f32, setup_call = "xnn_setup_hardswish_nc_f32";
              break;
          }
      }
      keep(st, op, p, call);
      const size_t count = static_cast<size_t>(ys.numel());
      run(op, pi, {in}, out, setup_call, [=, this] { return fn(op, count, ptr(in), ptr(out), pool_); });
      return;
    }
    case Kind::kPRelu: {
      const Tensor& slope = *constant_input(g_, n, 1);
      if (slope.dtype() != DType::kFloat) fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": the slope is not float32");
      const size_t count = static_cast<size_t>(ys.numel());
      if (slope.numel() == 1) {
        const Layout l = natural();
        const int in = get(x, l);
        const int out = produce(p.out, l);
        keep(xnn_create_leaky_relu_nc_f32(1, 1, 1, slope.data<float>()[0], 0, &op), op, p, "xnn_create_leaky_relu_nc_f32");
        run(op, pi, {in}, out, "xnn_setup_leaky_relu_nc_f32",
            [=, this] { return xnn_setup_leaky_relu_nc_f32(op, count, ptr(in), ptr(out), pool_); });
        return;
      }
      Shape sl = legacy_prelu_slope_shape(n, xs, slope.shape());
      while (sl.size() < xs.size()) sl.insert(0, 1);
      auto ones_except = [&](size_t keep_dim) {
        for (size_t k = 0; k < sl.size(); ++k)
          if (k != keep_dim && sl[k] != 1) return false;
        return true;
      };
      const size_t r = xs.size();
      Layout l;
      size_t channels;
      if (r == 4 && ones_except(1) && sl[1] == xs[1]) {
        l = Layout::kNhwc;
        channels = static_cast<size_t>(xs[1]);
      } else if (r >= 1 && ones_except(r - 1) && sl[r - 1] == xs[r - 1]) {
        l = Layout::kPlain;
        channels = static_cast<size_t>(xs[r - 1]);
      } else {
        fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": slope ", slope.shape().to_string(), " is neither per channel nor per last axis");
      }
      const int in = get(x, l);
      const int out = produce(p.out, l);
      keep(xnn_create_prelu_nc_f32(channels, channels, channels, slope.data<float>(), 0, &op), op, p, "xnn_create_prelu_nc_f32");
      run(op, pi, {in}, out, "xnn_setup_prelu_nc_f32",
          [=, this] { return xnn_setup_prelu_nc_f32(op, count / channels, ptr(in), ptr(out), pool_); });
      return;
    }
    case Kind::kSoftmax: {
      const int64_t r = static_cast<int64_t>(xs.size());
      int64_t D = r ? xs[r - 1] : 1;
      if (n.opset < 13) {
        int64_t axis = n.attr_int("axis", 1);
        if (axis < 0) axis += r;
        D = 1;
        for (int64_t k = std::clamp<int64_t>(axis, 0, r); k < r; ++k) D *= xs[k];
      }
      const int in = get(x, Layout::kPlain);
      const int out = produce(p.out, Layout::kPlain);
      keep(xnn_create_softmax_nc_f32(size_t(D), size_t(D), size_t(D), 0, &op), op, p, "xnn_create_softmax_nc_f32");
      const size_t batch = static_cast<size_t>(xs.numel() / D);
      run(op, pi, {in}, out, "xnn_setup_softmax_nc_f32",
          [=, this] { return xnn_setup_softmax_nc_f32(op, batch, ptr(in), ptr(out), pool_); });
      return;
    }
    case Kind::kResize: {
      const ResizeAttrs a = parse_resize_attrs(n);
      const float* scales = nullptr;
      const int64_t* sizes = nullptr;
      int64_t ns = 0, nz = 0;
      if (a.upsample && a.scales_input < 0) {
        scales = a.attr_scales.data();
        ns = static_cast<int64_t>(a.attr_scales.size());
      } else {
        if (const Tensor* sc = constant_input(g_, n, a.scales_input); sc && sc->numel() > 0) scales = sc->data<float>(), ns = sc->numel();
        if (a.sizes_input >= 0)
          if (const Tensor* z = constant_input(g_, n, a.sizes_input); z && z->numel() > 0) sizes = z->data<int64_t>(), nz = z->numel();
      }
      Shape os;
      std::vector<double> sc;
      resize_geometry(n, a, xs, scales, ns, sizes, nz, os, sc);
      expect_shape(os);
      if (os[0] != xs[0] || os[1] != xs[1]) fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": resizing N or C");
      for (int k = 2; k < 4; ++k) {
        const double xnn = static_cast<double>(os[k]) / static_cast<double>(xs[k]);
        if (std::fabs(sc[k] - xnn) > 1e-6 * xnn)
          fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": scale ", sc[k], " is not output/input size");
      }
      const uint32_t flags = a.coord == ResizeCoord::kAlignCorners ? XNN_FLAG_ALIGN_CORNERS
                             : a.coord == ResizeCoord::kAsymmetric ? XNN_FLAG_TENSORFLOW_LEGACY_MODE
                                                                   : 0;
      const size_t C = static_cast<size_t>(xs[1]);
      const int in = get(x, Layout::kNhwc);
      const int out = produce(p.out, Layout::kNhwc);
      keep(xnn_create_resize_bilinear2d_nhwc_f32(C, C, C, flags, &op), op, p, "xnn_create_resize_bilinear2d_nhwc_f32");
      const size_t N = size_t(xs[0]), H = size_t(xs[2]), W = size_t(xs[3]), OH = size_t(os[2]), OW = size_t(os[3]);
      run(op, pi, {in}, out, "xnn_setup_resize_bilinear2d_nhwc_f32",
          [=, this] { return xnn_setup_resize_bilinear2d_nhwc_f32(op, N, H, W, OH, OW, ptr(in), ptr(out), pool_); });
      return;
    }
    case Kind::kDepthToSpace: {
      const int64_t bs = n.attr_int("blocksize", 0);
      const int64_t C = xs[1], Co = C / (bs * bs);
      expect_shape(Shape{xs[0], Co, xs[2] * bs, xs[3] * bs});
      const int in = get(x, Layout::kNhwc);
      const int out = produce(p.out, Layout::kNhwc);
      keep(xnn_create_depth_to_space_nhwc_x32(size_t(Co), size_t(C), size_t(Co), u32(bs, L, "blocksize"), 0, &op), op, p,
           "xnn_create_depth_to_space_nhwc_x32");
      const size_t N = size_t(xs[0]), H = size_t(xs[2]), W = size_t(xs[3]);
      run(op, pi, {in}, out, "xnn_setup_depth_to_space_nhwc_x32",
          [=, this] { return xnn_setup_depth_to_space_nhwc_x32(op, N, H, W, ptr(in), ptr(out), pool_); });
      return;
    }
    case Kind::kPad: {
      std::vector<int64_t> pads;
      float value = 0.0f;
      if (n.opset < 11) {
        pads = n.attr_ints(n.opset < 2 ? "paddings" : "pads");
        value = n.attr_float("value", 0.0f);
      } else {
        const Tensor& pt = *constant_input(g_, n, 1);
        for (int64_t i = 0; i < pt.numel(); ++i) pads.push_back(static_cast<int64_t>(pt.element_as_double(i)));
        if (const Tensor* v = constant_input(g_, n, 2)) value = v->data<float>()[0];
      }
      const size_t r = xs.size();
      if (pads.size() != 2 * r || r > XNN_MAX_TENSOR_DIMS) fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": pads does not match the rank");
      const bool nhwc = r == 4 && prefers_nhwc(x);
      std::array<size_t, XNN_MAX_TENSOR_DIMS> dims{}, pre{}, post{};
      static const size_t kPerm[4] = {0, 2, 3, 1};
      for (size_t k = 0; k < r; ++k) {
        const size_t from = nhwc ? kPerm[k] : k;
        dims[k] = static_cast<size_t>(xs[from]);
        pre[k] = static_cast<size_t>(pads[from]);
        post[k] = static_cast<size_t>(pads[from + r]);
      }
      const int in = get(x, nhwc ? Layout::kNhwc : Layout::kPlain);
      const int out = produce(p.out, nhwc ? Layout::kNhwc : Layout::kPlain);
      uint32_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      keep(xnn_create_constant_pad_nd_x32(&bits, 0, &op), op, p, "xnn_create_constant_pad_nd_x32");
      run(op, pi, {in}, out, "xnn_setup_constant_pad_nd_x32", [=, this] {
        return xnn_setup_constant_pad_nd_x32(op, r, dims.data(), pre.data(), post.data(), ptr(in), ptr(out), pool_);
      });
      return;
    }
    case Kind::kAlias: return;
  }
}

std::unique_ptr<Instance> RegionKernel::build(std::vector<Shape> shapes) const {
  auto inst = std::make_unique<Instance>();
  inst->shapes = std::move(shapes);
  Builder(*this, *inst).build();
  return inst;
}

bool RegionKernel::matches(const Instance& inst, const Value* frame) const {
  for (size_t i = 0; i < key_values_.size(); ++i) {
    const Value& v = frame[key_values_[i]];
    if (!v.is_tensor() || !(v.tensor().shape() == inst.shapes[i])) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Run time

const float* frame_data(const Value* frame, int v, size_t count, const Graph& g) {
  const Value& val = frame[v];
  if (!val.is_tensor() || val.tensor().dtype() != DType::kFloat || static_cast<size_t>(val.tensor().numel()) != count)
    fail(ErrorCode::kRuntime, "xnnpack: value '", g.values[v].name, "' is not the float32 tensor the region was built for");
  return count ? val.tensor().data<float>() : nullptr;
}

void RegionKernel::run(const Instance& inst, Value* frame) const {
  pthreadpool_t pool = threads_->get();
  for (const Step& s : inst.steps) {
    switch (s.type) {
      case Step::Type::kRun:
        check_status(xnn_run_operator(s.op, pool), plans_[s.plan].label, "xnn_run_operator");
        break;
      case Step::Type::kCopyIn:
        if (s.n) std::memcpy(s.dst, frame_data(frame, s.value, s.n, g_), s.n * sizeof(float));
        break;
      case Step::Type::kNhwcIn:
        transpose(frame_data(frame, s.value, s.n * s.rows * s.cols, g_), s.dst, s.n, s.rows, s.cols, pool);
        break;
      case Step::Type::kToNhwc:
      case Step::Type::kToPlain: transpose(s.src, s.dst, s.n, s.rows, s.cols, pool); break;
      case Step::Type::kCopyOut: {
        float* dst = const_cast<float*>(frame_data(frame, s.value, s.n, g_));
        if (s.n) std::memcpy(dst, s.src, s.n * sizeof(float));
        break;
      }
      case Step::Type::kPlainOut: {
        float* dst = const_cast<float*>(frame_data(frame, s.value, s.n * s.rows * s.cols, g_));
        transpose(s.src, dst, s.n, s.rows, s.cols, pool);
        break;
      }
    }
  }
}

void RegionKernel::compute(KernelContext& ctx) const {
  Value* frame = ctx.frame();
  // Concurrent runs with the same shapes: without a pthreadpool each gets an instance of its own
  // (up to kMaxConcurrent) and they run in parallel; with one, whose parallel sections are
  // serialised anyway, they take turns on a single instance instead of packing the weights again.
  const size_t limit = threads_->get() ? 1 : kMaxConcurrent;
  Instance* inst = nullptr;
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      size_t same = 0;
      for (auto& c : cache_)
        if (matches(*c, frame)) {
          ++same;
          if (!c->busy) {
            inst = c.get();
            break;
          }
        }
      if (inst) {
        inst->busy = true;
        inst->stamp = ++clock_;
        break;
      }
      if (same < limit && building_ == 0) {
        ++building_;
        break;
      }
      cv_.wait(lock);
    }
  }
  if (!inst) {
    // A new shape signature (or more concurrent runs than instances).
    std::unique_ptr<Instance> built;
    try {
      std::vector<Shape> shapes;
      shapes.reserve(key_values_.size());
      for (int v : key_values_) {
        if (!frame[v].is_tensor())
          fail(ErrorCode::kRuntime, "xnnpack: ", label_, ": value '", g_.values[v].name, "' is not a tensor");
        shapes.push_back(frame[v].tensor().shape());
      }
      built = build(std::move(shapes));
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        --building_;
      }
      cv_.notify_all();
      throw;
    }
    std::lock_guard<std::mutex> lock(mu_);
    --building_;
    if (cache_.size() >= kMaxInstances) {
      // Evict the least recently used idle instance.
      auto victim = cache_.end();
      for (auto it = cache_.begin(); it != cache_.end(); ++it)
        if (!(*it)->busy && (victim == cache_.end() || (*it)->stamp < (*victim)->stamp)) victim = it;
      if (victim != cache_.end()) cache_.erase(victim);
    }
    inst = built.get();
    inst->busy = true;
    inst->stamp = ++clock_;
    cache_.push_back(std::move(built));
  }
  struct Release {
    const RegionKernel& k;
    Instance* inst;
    ~Release() {
      {
        std::lock_guard<std::mutex> lock(k.mu_);
        inst->busy = false;
      }
      k.cv_.notify_all();
    }
  } release{*this, inst};
  run(*inst, frame);
}

}  // namespace

std::unique_ptr<Kernel> compile_xnnpack_region(const RegionInfo& region, std::shared_ptr<const Threads> threads) {
  return std::make_unique<RegionKernel>(region, std::move(threads));
}

}  // namespace onyx::xnnpack
