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
//
// Element types: float32 values are stored as float32, and so are float16 ones: a region computes
// float16 nodes with XNNPACK's float32 operators (this XNNPACK's float16 kernels round every partial
// sum to float16 and run several times slower than its float32 ones on x86), converting float16
// to float32 where a value enters the region (weights once, when the instance is built) and back
// where it leaves. 8-bit values are stored as uint8 or int8, whichever the operator that makes
// them uses: a uint8 tensor with zero point z and the int8 tensor of its bytes with the top bit
// flipped (x - 128) and zero point z - 128 quantize the same real values, so a value gets a copy
// of the other kind (a byte flip) only when a reader needs it -- XNNPACK's per-channel convolution,
// for instance, is int8 only, its leaky ReLU uint8 only. Like the layouts, those copies happen
// where the region reads its inputs or writes its outputs wherever possible.
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
  // quantized
  kQConv, kQFc, kQBinary, kQGlobalAvgPool, kQSigmoid, kQLeakyRelu, kQuantize, kDequantize,
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

/// How a region stores a value's elements (float16 values: as float32).
enum class Elem : uint8_t { kF32, kU8, kS8 };
size_t elem_bytes(Elem e) { return e == Elem::kF32 ? 4 : 1; }
Elem native_elem(DType t) { return t == DType::kUInt8 ? Elem::kU8 : t == DType::kInt8 ? Elem::kS8 : Elem::kF32; }
const char* elem_name(Elem e) { return e == Elem::kF32 ? "float32" : e == Elem::kU8 ? "uint8" : "int8"; }
/// The zero point of 8-bit data stored as `to` whose type is `from`: uint8 <-> int8 moves it by 128.
int32_t zp_as(int32_t zp, Elem from, Elem to) {
  if (from == to) return zp;
  return from == Elem::kU8 ? zp - 128 : zp + 128;
}

struct Step {
  enum class Type : uint8_t {
    kRun,         // an XNNPACK operator set up at build time
    kXform,       // copy, transpose and / or byte flip between buffers or the frame
    kConvertIn,   // float16 frame value -> float32 buffer (XNNPACK's conversion, set up per run)
    kConvertOut,  // float32 buffer -> float16 frame value
    kQuantize,    // float32 -> 8-bit, ONNX's QuantizeLinear
  } type;
  xnn_operator_t op = nullptr;
  int plan = -1;                           // for errors
  int src_value = -1, dst_value = -1;      // frame values (boundary steps), else the buffers below
  DType src_dtype = DType::kUndefined, dst_dtype = DType::kUndefined;  // of those frame values
  const void* src = nullptr;
  void* dst = nullptr;
  size_t n = 0, rows = 0, cols = 0;  // transposes: [n][rows][cols] -> [n][cols][rows]; copies: n * rows * cols elements
  uint8_t esize = 4;                 // element bytes (kXform)
  bool flip = false;                 // kXform: flip each byte's top bit (uint8 <-> int8)
  float scale = 1.0f;                // kQuantize
  int32_t zp = 0, lo = 0, hi = 0;    // kQuantize: zero point and range of the stored 8-bit type
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
  int boundary_transforms = 0, internal_transforms = 0, flips = 0;
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
  const void* src;
  void* dst;
  size_t rows, cols;
};

template <class T, bool kFlip>
void transpose_tile(void* ctx, size_t b, size_t i0, size_t j0, size_t ni, size_t nj) {
  const auto& t = *static_cast<const TransposeJob*>(ctx);
  const T* s = static_cast<const T*>(t.src) + b * t.rows * t.cols;
  T* d = static_cast<T*>(t.dst) + b * t.rows * t.cols;
  for (size_t j = j0; j < j0 + nj; ++j) {
    T* dr = d + j * t.rows;
    for (size_t i = i0; i < i0 + ni; ++i) {
      if constexpr (kFlip)
        dr[i] = static_cast<T>(s[i * t.cols + j] ^ 0x80);
      else
        dr[i] = s[i * t.cols + j];
    }
  }
}

struct FlipJob {
  const uint8_t* src;
  uint8_t* dst;
};
constexpr size_t kFlipTile = 1 << 16;

void flip_tile(void* ctx, size_t i0, size_t n) {
  const auto& f = *static_cast<const FlipJob*>(ctx);
  for (size_t i = i0; i < i0 + n; ++i) f.dst[i] = static_cast<uint8_t>(f.src[i] ^ 0x80);
}

/// [n][rows][cols] -> [n][cols][rows] of `esize`-byte elements (a copy when rows or cols is 1),
/// flipping each byte's top bit on the way when `flip` (uint8 <-> int8; esize 1).
void transform(const void* src, void* dst, size_t n, size_t rows, size_t cols, size_t esize, bool flip, pthreadpool_t pool) {
  const size_t count = n * rows * cols;
  if (count == 0) return;
  if (rows == 1 || cols == 1) {
    if (!flip) {
      std::memcpy(dst, src, count * esize);
      return;
    }
    FlipJob job{static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst)};
    pthreadpool_parallelize_1d_tile_1d(pool, flip_tile, &job, count, kFlipTile, 0);
    return;
  }
  TransposeJob job{src, dst, rows, cols};
  auto tile = esize == 4 ? transpose_tile<uint32_t, false>
              : flip     ? transpose_tile<uint8_t, true>
                         : transpose_tile<uint8_t, false>;
  pthreadpool_parallelize_3d_tile_2d(pool, tile, &job, n, rows, cols, 32, 32, 0);
}

struct QuantizeJob {
  const float* src;
  void* dst;
  float scale;
  float lo, hi;  // the stored type's range less the zero point
  int32_t zp;
  bool is_signed;
};
constexpr size_t kQuantizeTile = 1 << 14;

/// ONNX's QuantizeLinear: saturate(round_half_even(x / scale) + zero_point), NaN to the zero point
/// (clamping before rounding is the same, the bounds being integers).
void quantize_tile(void* ctx, size_t i0, size_t n) {
  const auto& q = *static_cast<const QuantizeJob*>(ctx);
  for (size_t i = i0; i < i0 + n; ++i) {
    float v = q.src[i] / q.scale;
    v = v == v ? std::min(std::max(v, q.lo), q.hi) : 0.0f;
    const int32_t r = static_cast<int32_t>(std::nearbyint(v)) + q.zp;
    if (q.is_signed)
      static_cast<int8_t*>(q.dst)[i] = static_cast<int8_t>(r);
    else
      static_cast<uint8_t*>(q.dst)[i] = static_cast<uint8_t>(r);
  }
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
    case Kind::kQConv: return "convolution2d (8-bit)";
    case Kind::kQFc: return "fully_connected (8-bit)";
    case Kind::kQBinary: return p.bin == Bin::kAdd ? "add (8-bit)" : "multiply (8-bit)";
    case Kind::kQGlobalAvgPool: return "global_average_pooling (8-bit)";
    case Kind::kQSigmoid: return "sigmoid (8-bit)";
    case Kind::kQLeakyRelu: return "leaky_relu (uint8)";
    case Kind::kQuantize: return "quantize";
    case Kind::kDequantize: return "convert (dequantize)";
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
    size_t bytes = 0;
    void* pinned = nullptr;   // filled at build time (constants); else placed in the arena
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

  Shape shape(int v) const;
  bool produced(int v) const;
  /// A buffer of `floats` float32 values, or of `bytes` bytes.
  int alloc(size_t floats) { return alloc_bytes(floats * sizeof(float)); }
  int alloc_bytes(size_t bytes);
  float* pin(int id) { return static_cast<float*>(pin_raw(id)); }
  void* pin_raw(int id);
  void* raw(int id) const {
    return bufs_[id].pinned ? bufs_[id].pinned : static_cast<void*>(arena_ + bufs_[id].offset / sizeof(float));
  }
  float* ptr(int id) const { return static_cast<float*>(raw(id)); }
  int8_t* s8(int id) const { return static_cast<int8_t*>(raw(id)); }
  uint8_t* u8(int id) const { return static_cast<uint8_t*>(raw(id)); }
  /// The buffer holding value v in layout `want` as `e`, made (converted, transposed, flipped)
  /// from what the region has when there is none yet.
  int get(int v, Layout want, Elem e = Elem::kF32);
  int produce(int v, Layout l, Elem e = Elem::kF32);
  int find(int v, Layout l, Elem e) const {
    auto it = store_.find(key(v, l, e));
    return it == store_.end() ? -1 : it->second;
  }
  static int64_t key(int v, Layout l, Elem e) {
    return (static_cast<int64_t>(v) << 3) | (static_cast<int64_t>(l) << 2) | static_cast<int64_t>(e);
  }
  bool prefers_nhwc(int v) const;
  /// The element kind v is (or would first be) stored as: its producer's, else its type's.
  Elem held(int v) const;
  Elem native(int v) const { return native_elem(g_.values[v].type.elem_dtype()); }
  bool is_const(int v) const { return !produced(v) && static_cast<bool>(const_ref(g_, v)); }
  /// Records a copy / transpose / flip step from buffer `src` (or frame value `src_value`) to
  /// buffer `dst` (or frame value `dst_value`).
  void xform(int src, int src_value, int dst, int dst_value, size_t n, size_t rows, size_t cols, size_t esize, bool flip);
  void convert_in(int v, int dst);
  void convert_out(int src, int v);
  QParam qparam(const Node& n, size_t si, size_t zi, DType type) const;
  void run(xnn_operator_t op, int plan, std::vector<int> reads, int write, const char* call, std::function<xnn_status()> setup);
  xnn_operator_t keep(xnn_status st, xnn_operator_t op, const OpPlan& p, const char* call);
  void note(std::string s) {
    if (verbose_) trace_.push_back(std::move(s));
  }
  std::string name(int v) const;
  void build_op(int pi);
  void emit_binary(Bin bin, float lo, float hi, const Operand& a, const Operand& b, int out, bool nhwc, int pi);
  void build_qop(int pi);
  void fold_batch_norm(const OpPlan& p, int64_t M, int64_t per_channel, std::vector<float>& w, std::vector<float>& bias) const;
  void place();

  const RegionKernel& k_;
  const Graph& g_;
  Instance& inst_;
  pthreadpool_t pool_;
  std::vector<Buf> bufs_;
  std::vector<Pending> pending_;
  float* arena_ = nullptr;
  std::unordered_map<int64_t, int> store_;                       // key(value, layout, elem) -> buffer
  std::unordered_map<int, std::pair<Layout, Elem>> primary_;     // how a produced value is first stored
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
    } else if (n.domain == "com.microsoft") {
      if (op == "QGemm") {
        p.kind = Kind::kQFc, p.in = {x};
      } else if (op == "QLinearAdd" || op == "QLinearMul") {
        p.kind = Kind::kQBinary, p.bin = op == "QLinearAdd" ? Bin::kAdd : Bin::kMul, p.in = {x, n.inputs[3]};
      } else if (op == "QLinearGlobalAveragePool") {
        p.kind = Kind::kQGlobalAvgPool, p.in = {x};
      } else if (op == "QLinearSigmoid") {
        p.kind = Kind::kQSigmoid, p.in = {x};
      } else if (op == "QLinearLeakyRelu") {
        p.kind = Kind::kQLeakyRelu, p.in = {x};
      } else {
        fail(ErrorCode::kNotImplemented, "xnnpack: ", p.label, " was claimed but has no XNNPACK mapping");
      }
    } else if (!n.domain.empty()) {
      fail(ErrorCode::kNotImplemented, "xnnpack: ", p.label, " was claimed but has no XNNPACK mapping");
    } else if (op == "QLinearConv") {
      p.kind = Kind::kQConv, p.in = {x};
    } else if (op == "QLinearMatMul") {
      p.kind = Kind::kQFc, p.in = {x};
    } else if (op == "QuantizeLinear") {
      p.kind = Kind::kQuantize, p.in = {x};
    } else if (op == "DequantizeLinear") {
      p.kind = Kind::kDequantize, p.in = {x};
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
    if (v < 0 || key_pos_.count(v) || (!produced_[v] && const_ref(g, v))) return;
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

Shape Builder::shape(int v) const {
  auto it = k_.key_pos_.find(v);
  if (it != k_.key_pos_.end()) return inst_.shapes[it->second];
  const ConstRef c = const_ref(g_, v);
  if (!c) fail(ErrorCode::kEpFailure, "xnnpack: internal error: no shape for '", g_.values[v].name, "'");
  return c.shape;
}

bool Builder::produced(int v) const { return k_.produced_[v] != 0; }

std::string Builder::name(int v) const { return "'" + g_.values[v].name + "'"; }

int Builder::alloc_bytes(size_t bytes) {
  bufs_.push_back(Buf{bytes});
  return static_cast<int>(bufs_.size()) - 1;
}

void* Builder::pin_raw(int id) {
  Buf& b = bufs_[id];
  if (!b.pinned) {
    // XNNPACK may read (never write) up to XNN_EXTRA_BYTES past the end of an input.
    const size_t bytes = (b.bytes + XNN_EXTRA_BYTES + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (!p) fail(ErrorCode::kRuntime, "xnnpack: ", k_.label_, ": out of memory allocating ", bytes, " bytes");
    std::memset(p, 0, bytes);
    inst_.pinned.push_back(p);
    b.pinned = p;
  }
  return b.pinned;
}

int Builder::produce(int v, Layout l, Elem e) {
  const int id = alloc_bytes(static_cast<size_t>(shape(v).numel()) * elem_bytes(e));
  store_[key(v, l, e)] = id;
  primary_[v] = {l, e};
  return id;
}

bool Builder::prefers_nhwc(int v) const {
  auto it = primary_.find(v);
  if (it != primary_.end()) return it->second.first == Layout::kNhwc;
  bool nhwc = false, plain = false;
  for (Elem e : {Elem::kF32, Elem::kU8, Elem::kS8}) {
    nhwc |= find(v, Layout::kNhwc, e) >= 0;
    plain |= find(v, Layout::kPlain, e) >= 0;
  }
  return nhwc && !plain;
}

Elem Builder::held(int v) const {
  auto it = primary_.find(v);
  return it != primary_.end() ? it->second.second : native(v);
}

QParam Builder::qparam(const Node& n, size_t si, size_t zi, DType type) const {
  QParam q;
  std::string why;
  if (!read_qparam(g_, n, si, zi, type, "a", &q, &why)) fail(ErrorCode::kEpFailure, "xnnpack: ", n.label(), ": ", why);
  return q;
}

void Builder::xform(int src, int src_value, int dst, int dst_value, size_t n, size_t rows, size_t cols, size_t esize,
                    bool flip) {
  Pending pd;
  pd.step.type = Step::Type::kXform;
  pd.step.src_value = src_value;
  pd.step.dst_value = dst_value;
  if (src_value >= 0) pd.step.src_dtype = g_.values[src_value].type.elem_dtype();
  if (dst_value >= 0) pd.step.dst_dtype = g_.values[dst_value].type.elem_dtype();
  pd.step.n = n, pd.step.rows = rows, pd.step.cols = cols;
  pd.step.esize = static_cast<uint8_t>(esize);
  pd.step.flip = flip;
  pd.src = src, pd.dst = dst;
  if (src >= 0) pd.reads.push_back(src);
  pd.write = dst;
  pending_.push_back(std::move(pd));
}

void Builder::convert_in(int v, int dst) {
  xnn_operator_t op = nullptr;
  const xnn_status st = xnn_create_convert_nc_f16_f32(1, 1, 1, 0, &op);
  if (st != xnn_status_success) fail_status(st, name(v), "xnn_create_convert_nc_f16_f32");
  inst_.ops.push_back(op);
  Pending pd;
  pd.step.type = Step::Type::kConvertIn;
  pd.step.op = op;
  pd.step.src_value = v;
  pd.step.src_dtype = DType::kFloat16;
  pd.step.n = static_cast<size_t>(shape(v).numel());
  pd.dst = dst;
  pd.write = dst;
  pending_.push_back(std::move(pd));
  note("float16->float32 " + name(v));
}

void Builder::convert_out(int src, int v) {
  xnn_operator_t op = nullptr;
  const xnn_status st = xnn_create_convert_nc_f32_f16(1, 1, 1, 0, &op);
  if (st != xnn_status_success) fail_status(st, name(v), "xnn_create_convert_nc_f32_f16");
  inst_.ops.push_back(op);
  Pending pd;
  pd.step.type = Step::Type::kConvertOut;
  pd.step.op = op;
  pd.step.dst_value = v;
  pd.step.dst_dtype = DType::kFloat16;
  pd.step.n = static_cast<size_t>(shape(v).numel());
  pd.src = src;
  pd.reads.push_back(src);
  pending_.push_back(std::move(pd));
  note("float32->float16 " + name(v));
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

int Builder::get(int v, Layout want, Elem e) {
  if (const int have = find(v, want, e); have >= 0) return have;
  const Shape s = shape(v);
  const size_t count = static_cast<size_t>(s.numel());
  const Shape s4 = s.size() <= 4 ? dims4(s) : Shape{};
  const bool shared = !s4.empty() && same_bytes(s4);  // NHWC and plain storage are the same bytes
  const Elem nat = native(v);
  if (e != nat && (e == Elem::kF32 || nat == Elem::kF32))
    fail(ErrorCode::kEpFailure, "xnnpack: internal error: ", name(v), " (", elem_name(nat), ") wanted as ", elem_name(e));
  const size_t es = elem_bytes(e);
  const bool flip = e != nat;
  const int64_t k = key(v, want, e);
  // Layout-neutral shapes share one buffer.
  if (want == Layout::kNhwc && shared) return store_[k] = get(v, Layout::kPlain, e);
  if (want == Layout::kPlain && shared)
    if (const int have = find(v, Layout::kNhwc, e); have >= 0) return store_[k] = have;
  if (want == Layout::kNhwc && s4.empty()) fail(ErrorCode::kEpFailure, "xnnpack: internal error: NHWC storage of ", name(v));
  const size_t N = want == Layout::kNhwc ? static_cast<size_t>(s4[0]) : 0, C = want == Layout::kNhwc ? static_cast<size_t>(s4[1]) : 0,
               HW = want == Layout::kNhwc ? static_cast<size_t>(s4[2] * s4[3]) : 0;
  // Constants: converted (and transposed) once, here.
  if (is_const(v)) {
    const int dst = alloc_bytes(count * es);
    store_[k] = dst;
    void* p = pin_raw(dst);
    Tensor t = e == Elem::kF32 ? const_float(g_, v) : *constant_value(g_, v);
    if (e != Elem::kF32 && !is_q8(t.dtype()))
      fail(ErrorCode::kEpFailure, "xnnpack: constant ", name(v), " is not 8-bit");
    if (want == Layout::kNhwc)
      transform(t.raw_data(), p, N, C, HW, es, flip, nullptr);
    else
      transform(t.raw_data(), p, 1, 1, count, es, flip, nullptr);
    return dst;
  }
  const int dst = alloc_bytes(count * es);
  store_[k] = dst;
  // Region inputs: read from the frame, converted, transposed or flipped on the way.
  if (!produced(v)) {
    if (g_.values[v].type.elem_dtype() == DType::kFloat16) {
      if (want == Layout::kPlain) {
        convert_in(v, dst);
      } else {
        xform(get(v, Layout::kPlain, e), -1, dst, -1, N, C, HW, es, false);
        ++inst_.boundary_transforms;
        note("nchw->nhwc " + name(v));
      }
      return dst;
    }
    if (want == Layout::kNhwc) {
      xform(-1, v, dst, -1, N, C, HW, es, flip);
      ++inst_.boundary_transforms;
      note(str("nchw->nhwc ", name(v), flip ? str(" as ", elem_name(e)) : ""));
    } else {
      xform(-1, v, dst, -1, 1, 1, count, es, flip);
      note(str("copy in ", name(v), flip ? str(" as ", elem_name(e)) : ""));
    }
    return dst;
  }
  // Produced here: from a buffer the value has, preferring a flip alone, then a transpose alone.
  const Layout other_l = want == Layout::kPlain ? Layout::kNhwc : Layout::kPlain;
  const Elem other_e = e == Elem::kF32 ? Elem::kF32 : e == Elem::kU8 ? Elem::kS8 : Elem::kU8;
  int src = e != other_e ? find(v, want, other_e) : -1;
  if (src >= 0) {
    xform(src, -1, dst, -1, 1, 1, count, es, true);
    ++inst_.flips;
    note(str(elem_name(other_e), "->", elem_name(e), " ", name(v), " (inside)"));
    return dst;
  }
  bool both = false;
  src = find(v, other_l, e);
  if (src < 0 && e != other_e) src = find(v, other_l, other_e), both = true;
  if (src < 0) fail(ErrorCode::kEpFailure, "xnnpack: internal error: ", name(v), " has no storage to convert from");
  const Shape t4 = dims4(s);
  const size_t n4 = static_cast<size_t>(t4[0]), c4 = static_cast<size_t>(t4[1]), hw4 = static_cast<size_t>(t4[2] * t4[3]);
  if (want == Layout::kNhwc)
    xform(src, -1, dst, -1, n4, c4, hw4, es, both);
  else
    xform(src, -1, dst, -1, n4, hw4, c4, es, both);
  ++inst_.internal_transforms;
  inst_.flips += both;
  note(str(want == Layout::kNhwc ? "nchw->nhwc " : "nhwc->nchw ", name(v), both ? str(" as ", elem_name(e)) : "", " (inside)"));
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
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return bufs_[a].bytes > bufs_[b].bytes; });
  auto bytes_of = [&](const Buf& b) { return (b.bytes + 63) / 64 * 64; };
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
  Tensor t[5];
  for (size_t i = 1; i <= 4; ++i) {
    if (n.has_input(i)) t[i] = const_float(g, n.inputs[i]);
    if (t[i].numel() != C || t[i].dtype() != DType::kFloat)
      fail(ErrorCode::kEpFailure, "xnnpack: ", n.label(), ": input ", i, " is not a constant with one value per channel");
  }
  const double eps = n.attr_float("epsilon", 1e-5f);
  for (int64_t c = 0; c < C; ++c) {
    const double s = static_cast<double>(t[1].data<float>()[c]) / std::sqrt(static_cast<double>(t[4].data<float>()[c]) + eps);
    scale[c] = static_cast<float>(s);
    shift[c] = static_cast<float>(static_cast<double>(t[2].data<float>()[c]) - static_cast<double>(t[3].data<float>()[c]) * s);
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
    const Shape s = shape(v);
    const size_t count = static_cast<size_t>(s.numel());
    const Elem nat = native(v);
    const Shape s4 = s.size() <= 4 ? dims4(s) : Shape{};
    const bool shared = !s4.empty() && same_bytes(s4);
    auto nhwc_to_plain = [&](int src, int dst, int dst_value, size_t es, bool flip) {
      xform(src, -1, dst, dst_value, size_t(s4[0]), size_t(s4[2] * s4[3]), size_t(s4[1]), es, flip);
      ++inst_.boundary_transforms;
      note(str("nhwc->nchw ", name(v), flip ? str(" from ", elem_name(nat == Elem::kU8 ? Elem::kS8 : Elem::kU8)) : ""));
    };
    if (g_.values[v].type.elem_dtype() == DType::kFloat16) {
      int src = find(v, Layout::kPlain, Elem::kF32);
      if (src < 0 && shared) src = find(v, Layout::kNhwc, Elem::kF32);
      if (src < 0) {
        const int nhwc = find(v, Layout::kNhwc, Elem::kF32);
        if (nhwc < 0 || s4.empty()) fail(ErrorCode::kEpFailure, "xnnpack: internal error: region output ", name(v), " has no storage");
        src = alloc(count);
        nhwc_to_plain(nhwc, src, -1, sizeof(float), false);
      }
      convert_out(src, v);
      continue;
    }
    const Elem other = nat == Elem::kU8 ? Elem::kS8 : nat == Elem::kS8 ? Elem::kU8 : nat;
    bool done = false;
    for (const auto& [l, e] : {std::pair{Layout::kPlain, nat}, {Layout::kNhwc, nat}, {Layout::kPlain, other}, {Layout::kNhwc, other}}) {
      const int src = find(v, l, e);
      if (src < 0) continue;
      if (l == Layout::kNhwc && !shared) {
        nhwc_to_plain(src, -1, v, elem_bytes(e), e != nat);
      } else {
        xform(src, -1, -1, v, 1, 1, count, elem_bytes(e), e != nat);
        note(str("copy out ", name(v), e != nat ? str(" from ", elem_name(e)) : ""));
      }
      done = true;
      break;
    }
    if (!done) fail(ErrorCode::kEpFailure, "xnnpack: internal error: region output ", name(v), " has no storage");
  }
  place();
  for (Pending& pd : pending_) {
    Step st = pd.step;
    if (pd.src >= 0) st.src = raw(pd.src);
    if (pd.dst >= 0) st.dst = raw(pd.dst);
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
      if (!b.pinned) sum += b.bytes;
    log_message(LogLevel::kVerbose,
                str("xnnpack: ", k_.label_, " for ", shapes.empty() ? std::string("no inputs") : shapes, ": ",
                    join(trace_, "; "), "; layout transforms: ", inst_.boundary_transforms, " at the boundary, ",
                    inst_.internal_transforms, " inside; uint8/int8 flips inside: ", inst_.flips, "; buffers: ",
                    inst_.arena_bytes, " bytes (", sum, " without reuse)"));
  }
}

// ---- quantized operators ----

namespace {

/// The bytes of an 8-bit constant as `want` (uint8 <-> int8: each byte's top bit flipped).
std::vector<uint8_t> q8_bytes(const Tensor& t, Elem want) {
  const auto* src = static_cast<const uint8_t*>(t.raw_data());
  std::vector<uint8_t> out(src, src + t.numel());
  if (native_elem(t.dtype()) != want)
    for (uint8_t& b : out) b ^= 0x80;
  return out;
}

int32_t range_lo(Elem e) { return e == Elem::kS8 ? -128 : 0; }
int32_t range_hi(Elem e) { return e == Elem::kS8 ? 127 : 255; }

}  // namespace

void Builder::build_qop(int pi) {
  const OpPlan& p = k_.plans_[pi];
  const Node& n = g_.nodes[p.node];
  const std::string& L = p.label;
  const Shape ys = shape(p.out);
  const int x = p.in[0];
  const Shape xs = shape(x);
  const DType xt = g_.values[x].type.elem_dtype(), yt = g_.values[p.out].type.elem_dtype();
  const Elem xn = native(x), yn = native(p.out);
  auto natural = [&] { return prefers_nhwc(x) ? Layout::kNhwc : Layout::kPlain; };
  xnn_operator_t op = nullptr;
  auto expect_shape = [&](const Shape& want) {
    if (!(want == ys))
      fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": computed output shape ", want.to_string(), " differs from the inferred ",
           ys.to_string());
  };
  switch (p.kind) {
    case Kind::kQConv:
    case Kind::kQFc: {
      // QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, [B].
      // QLinearMatMul: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp.
      // QGemm: A, a_scale, a_zp, B, b_scale, b_zp, [C], [y_scale, y_zp].
      const bool conv = p.kind == Kind::kQConv, gemm = n.op_type == "QGemm";
      const Tensor& w = *constant_input(g_, n, 3);
      const bool trans_b = gemm && n.attr_int("transB", 0) != 0;
      const int64_t M = conv ? w.dim(0) : trans_b ? w.dim(0) : w.dim(1);  // output channels
      const QParam xq = qparam(n, 1, 2, xt), yq = qparam(n, gemm ? 7 : 6, gemm ? 8 : 7, yt);
      std::vector<float> ws;
      std::vector<int32_t> wz;
      std::string why;
      if (!read_weight_qparams(g_, n, 4, 5, w.dtype(), M, &ws, &wz, &why)) fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": ", why);
      const bool per_channel = std::any_of(ws.begin(), ws.end(), [&](float v) { return v != ws[0]; }) ||
                               std::any_of(wz.begin(), wz.end(), [&](int32_t v) { return v != wz[0]; });
      // XNNPACK's operators: int8 per channel (symmetric weights), int8 per tensor (weights' zero
      // point 0), uint8 per tensor (any weights' zero point). Per tensor, the kind x is held in
      // decides between the last two, so that x needs no flip.
      const int32_t w_shift = w.dtype() == DType::kInt8 ? 128 : 0;  // to the uint8 weights' zero point
      const bool symmetric = wz[0] + w_shift == 128;
      enum { kQs8, kQc8, kQu8 } flavor = per_channel ? kQc8 : held(x) == Elem::kS8 && symmetric ? kQs8 : kQu8;
      const Elem e = flavor == kQu8 ? Elem::kU8 : Elem::kS8;
      const int32_t x_zp = zp_as(xq.zp, xn, e), y_zp = zp_as(yq.zp, yn, e);
      const int32_t lo = range_lo(e), hi = range_hi(e);
      const uint8_t kzp = static_cast<uint8_t>(wz[0] + w_shift);
      const std::vector<uint8_t> wb = q8_bytes(w, e);
      if (per_channel && !symmetric) fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": per-channel weights are not symmetric");
      if (!conv) {
        // A fully connected layer: [batch, K] x [K, N] (or [N, K] with transB) + C.
        const int64_t K = trans_b ? w.dim(1) : w.dim(0);
        if (xs.empty() || xs.back() != K) fail(ErrorCode::kInvalidArgument, L, ": A ", xs.to_string(), " does not match B ", w.shape().to_string());
        // XNNPACK's weights are [N][K].
        std::vector<uint8_t> kt(wb.size());
        for (int64_t k = 0; k < K; ++k)
          for (int64_t j = 0; j < M; ++j) kt[j * K + k] = trans_b ? wb[j * K + k] : wb[k * M + j];
        std::vector<int32_t> bias;
        if (gemm && n.has_input(6)) {
          const Tensor& c = *constant_input(g_, n, 6);
          for (int64_t j = 0; j < M; ++j) bias.push_back(c.data<int32_t>()[c.numel() == 1 ? 0 : j]);
        }
        const int32_t* bp = bias.empty() ? nullptr : bias.data();
        const int in = get(x, Layout::kPlain, e);
        const int out = produce(p.out, Layout::kPlain, e);
        const size_t batch = static_cast<size_t>(xs.numel() / K), sk = static_cast<size_t>(K), sm = static_cast<size_t>(M);
        if (flavor == kQc8) {
          // Per output column: a 1x1 convolution over a batch x 1 x 1 image is XNNPACK's per-channel fully connected layer.
          keep(xnn_create_convolution2d_nhwc_qc8(0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, sk, sm, sk, sm, static_cast<int8_t>(x_zp), xq.scale,
                                                 ws.data(), reinterpret_cast<const int8_t*>(kt.data()), bp, static_cast<int8_t>(y_zp),
                                                 yq.scale, -128, 127, 0, &op),
               op, p, "xnn_create_convolution2d_nhwc_qc8");
          run(op, pi, {in}, out, "xnn_setup_convolution2d_nhwc_qc8",
              [=, this] { return xnn_setup_convolution2d_nhwc_qc8(op, batch, 1, 1, s8(in), s8(out), pool_); });
        } else if (flavor == kQs8) {
          keep(xnn_create_fully_connected_nc_qs8(sk, sm, sk, sm, static_cast<int8_t>(x_zp), xq.scale, ws[0],
                                                 reinterpret_cast<const int8_t*>(kt.data()), bp, static_cast<int8_t>(y_zp), yq.scale,
                                                 -128, 127, 0, &op),
               op, p, "xnn_create_fully_connected_nc_qs8");
          run(op, pi, {in}, out, "xnn_setup_fully_connected_nc_qs8",
              [=, this] { return xnn_setup_fully_connected_nc_qs8(op, batch, s8(in), s8(out), pool_); });
        } else {
          keep(xnn_create_fully_connected_nc_qu8(sk, sm, sk, sm, static_cast<uint8_t>(x_zp), xq.scale, kzp, ws[0], kt.data(), bp,
                                                 static_cast<uint8_t>(y_zp), yq.scale, 0, 255, 0, &op),
               op, p, "xnn_create_fully_connected_nc_qu8");
          run(op, pi, {in}, out, "xnn_setup_fully_connected_nc_qu8",
              [=, this] { return xnn_setup_fully_connected_nc_qu8(op, batch, u8(in), u8(out), pool_); });
        }
        (void)lo, (void)hi;
        return;
      }
      const int64_t group = n.attr_int("group", 1), Cg = w.dim(1), kh = w.dim(2), kw = w.dim(3);
      const size_t N = size_t(xs[0]), H = size_t(xs[2]), W = size_t(xs[3]);
      const int64_t C = xs[1];
      if (C != Cg * group) fail(ErrorCode::kInvalidArgument, L, ": input has ", C, " channels, the weights expect ", Cg * group);
      const WindowGeometry geo = window_geometry(n, Shape{xs[2], xs[3]}, Shape{kh, kw}, false);
      expect_shape(Shape{xs[0], M, geo.out[0], geo.out[1]});
      // ONNX [M][Cg][kh][kw] -> XNNPACK [M][kh][kw][Cg].
      std::vector<uint8_t> kt(wb.size());
      for (int64_t o = 0; o < M; ++o)
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t i = 0; i < kh * kw; ++i) kt[(o * kh * kw + i) * Cg + c] = wb[(o * Cg + c) * kh * kw + i];
      const Tensor* b = n.has_input(8) ? constant_input(g_, n, 8) : nullptr;
      const int32_t* bp = b ? b->data<int32_t>() : nullptr;
      const int in = get(x, Layout::kNhwc, e);
      const int out = produce(p.out, Layout::kNhwc, e);
      const uint32_t pt = u32(geo.pad_begin[0], L, "padding"), pr = u32(geo.pad_end[1], L, "padding"),
                     pbt = u32(geo.pad_end[0], L, "padding"), pl = u32(geo.pad_begin[1], L, "padding"),
                     ukh = u32(kh, L, "kernel"), ukw = u32(kw, L, "kernel"), sh = u32(geo.stride[0], L, "stride"),
                     sw = u32(geo.stride[1], L, "stride"), dh = u32(geo.dilation[0], L, "dilation"),
                     dw = u32(geo.dilation[1], L, "dilation"), ug = u32(group, L, "group");
      const size_t gic = static_cast<size_t>(Cg), goc = static_cast<size_t>(M / group), sc = static_cast<size_t>(C),
                   sm = static_cast<size_t>(M);
      switch (flavor) {
        case kQc8:
          keep(xnn_create_convolution2d_nhwc_qc8(pt, pr, pbt, pl, ukh, ukw, sh, sw, dh, dw, ug, gic, goc, sc, sm,
                                                 static_cast<int8_t>(x_zp), xq.scale, ws.data(),
                                                 reinterpret_cast<const int8_t*>(kt.data()), bp, static_cast<int8_t>(y_zp), yq.scale,
                                                 static_cast<int8_t>(lo), static_cast<int8_t>(hi), 0, &op),
               op, p, "xnn_create_convolution2d_nhwc_qc8");
          run(op, pi, {in}, out, "xnn_setup_convolution2d_nhwc_qc8",
              [=, this] { return xnn_setup_convolution2d_nhwc_qc8(op, N, H, W, s8(in), s8(out), pool_); });
          break;
        case kQs8:
          keep(xnn_create_convolution2d_nhwc_qs8(pt, pr, pbt, pl, ukh, ukw, sh, sw, dh, dw, ug, gic, goc, sc, sm,
                                                 static_cast<int8_t>(x_zp), xq.scale, ws[0],
                                                 reinterpret_cast<const int8_t*>(kt.data()), bp, static_cast<int8_t>(y_zp), yq.scale,
                                                 static_cast<int8_t>(lo), static_cast<int8_t>(hi), 0, &op),
               op, p, "xnn_create_convolution2d_nhwc_qs8");
          run(op, pi, {in}, out, "xnn_setup_convolution2d_nhwc_qs8",
              [=, this] { return xnn_setup_convolution2d_nhwc_qs8(op, N, H, W, s8(in), s8(out), pool_); });
          break;
        case kQu8:
          keep(xnn_create_convolution2d_nhwc_qu8(pt, pr, pbt, pl, ukh, ukw, sh, sw, dh, dw, ug, gic, goc, sc, sm,
                                                 static_cast<uint8_t>(x_zp), xq.scale, kzp, ws[0], kt.data(), bp,
                                                 static_cast<uint8_t>(y_zp), yq.scale, static_cast<uint8_t>(lo),
                                                 static_cast<uint8_t>(hi), 0, &op),
               op, p, "xnn_create_convolution2d_nhwc_qu8");
          run(op, pi, {in}, out, "xnn_setup_convolution2d_nhwc_qu8",
              [=, this] { return xnn_setup_convolution2d_nhwc_qu8(op, N, H, W, u8(in), u8(out), pool_); });
          break;
      }
      return;
    }
    case Kind::kQBinary: {
      // com.microsoft QLinearAdd / QLinearMul: A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp.
      const int b = p.in[1];
      const Shape bs = shape(b);
      const QParam aq = qparam(n, 1, 2, xt), bq = qparam(n, 4, 5, g_.values[b].type.elem_dtype()), cq = qparam(n, 6, 7, yt);
      const Elem e = is_const(x) && !is_const(b) ? held(b) : held(x);
      bool nhwc = ys.size() == 4 && xs.size() <= 4 && bs.size() <= 4 && (prefers_nhwc(x) || prefers_nhwc(b));
      const Layout l = nhwc ? Layout::kNhwc : Layout::kPlain;
      const int ia = get(x, l, e), ib = get(b, l, e);
      const int out = produce(p.out, l, e);
      std::array<size_t, XNN_MAX_TENSOR_DIMS> da{}, db{};
      size_t ra = 0, rb = 0;
      auto dims = [&](const Shape& s, std::array<size_t, XNN_MAX_TENSOR_DIMS>& d, size_t* r) {
        const Shape q = nhwc ? nhwc_dims(dims4(s)) : s;
        if (q.size() > XNN_MAX_TENSOR_DIMS) fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": more than 6 dims");
        for (size_t k = 0; k < q.size(); ++k) d[k] = static_cast<size_t>(q[k]);
        *r = q.size();
        if (*r == 0) d[0] = 1, *r = 1;
      };
      dims(xs, da, &ra);
      dims(bs, db, &rb);
      const int32_t az = zp_as(aq.zp, xn, e), bz = zp_as(bq.zp, native(b), e), cz = zp_as(cq.zp, yn, e);
      const bool add = p.bin == Bin::kAdd;
      if (e == Elem::kS8) {
        const auto i8 = [](int32_t v) { return static_cast<int8_t>(v); };
        keep(add ? xnn_create_add_nd_qs8(i8(az), aq.scale, i8(bz), bq.scale, i8(cz), cq.scale, -128, 127, 0, &op)
                 : xnn_create_multiply_nd_qs8(i8(az), aq.scale, i8(bz), bq.scale, i8(cz), cq.scale, -128, 127, 0, &op),
             op, p, add ? "xnn_create_add_nd_qs8" : "xnn_create_multiply_nd_qs8");
        auto fn = add ? xnn_setup_add_nd_qs8 : xnn_setup_multiply_nd_qs8;
        run(op, pi, {ia, ib}, out, add ? "xnn_setup_add_nd_qs8" : "xnn_setup_multiply_nd_qs8",
            [=, this] { return fn(op, ra, da.data(), rb, db.data(), s8(ia), s8(ib), s8(out), pool_); });
      } else {
        const auto u = [](int32_t v) { return static_cast<uint8_t>(v); };
        keep(add ? xnn_create_add_nd_qu8(u(az), aq.scale, u(bz), bq.scale, u(cz), cq.scale, 0, 255, 0, &op)
                 : xnn_create_multiply_nd_qu8(u(az), aq.scale, u(bz), bq.scale, u(cz), cq.scale, 0, 255, 0, &op),
             op, p, add ? "xnn_create_add_nd_qu8" : "xnn_create_multiply_nd_qu8");
        auto fn = add ? xnn_setup_add_nd_qu8 : xnn_setup_multiply_nd_qu8;
        run(op, pi, {ia, ib}, out, add ? "xnn_setup_add_nd_qu8" : "xnn_setup_multiply_nd_qu8",
            [=, this] { return fn(op, ra, da.data(), rb, db.data(), u8(ia), u8(ib), u8(out), pool_); });
      }
      return;
    }
    case Kind::kQGlobalAvgPool: {
      // Channels first: [N, C, H, W], pooled NHWC; channels last (the attribute): [N, D..., C] as it is.
      const bool last = n.attr_int("channels_last", 0) != 0;
      const QParam xq = qparam(n, 1, 2, xt), yq = qparam(n, 3, 4, yt);
      const Elem e = held(x);
      const Layout l = last ? Layout::kPlain : Layout::kNhwc;
      const size_t N = size_t(xs[0]), C = size_t(last ? xs[xs.size() - 1] : xs[1]);
      const size_t pixels = static_cast<size_t>(xs.numel()) / (N * C);
      Shape want = xs;
      for (size_t k = 1; k < want.size(); ++k)
        if (last ? k + 1 < want.size() : k >= 2) want[k] = 1;
      expect_shape(want);
      const int in = get(x, l, e);
      const int out = produce(p.out, l, e);
      const int32_t xz = zp_as(xq.zp, xn, e), yz = zp_as(yq.zp, yn, e);
      if (e == Elem::kS8) {
        keep(xnn_create_global_average_pooling_nwc_qs8(C, C, C, static_cast<int8_t>(xz), xq.scale, static_cast<int8_t>(yz), yq.scale,
                                                      -128, 127, 0, &op),
             op, p, "xnn_create_global_average_pooling_nwc_qs8");
        run(op, pi, {in}, out, "xnn_setup_global_average_pooling_nwc_qs8",
            [=, this] { return xnn_setup_global_average_pooling_nwc_qs8(op, N, pixels, s8(in), s8(out), pool_); });
      } else {
        keep(xnn_create_global_average_pooling_nwc_qu8(C, C, C, static_cast<uint8_t>(xz), xq.scale, static_cast<uint8_t>(yz),
                                                      yq.scale, 0, 255, 0, &op),
             op, p, "xnn_create_global_average_pooling_nwc_qu8");
        run(op, pi, {in}, out, "xnn_setup_global_average_pooling_nwc_qu8",
            [=, this] { return xnn_setup_global_average_pooling_nwc_qu8(op, N, pixels, u8(in), u8(out), pool_); });
      }
      return;
    }
    case Kind::kQSigmoid:
    case Kind::kQLeakyRelu: {
      const QParam xq = qparam(n, 1, 2, xt), yq = qparam(n, 3, 4, yt);
      const bool sigmoid = p.kind == Kind::kQSigmoid;
      const Elem e = sigmoid ? held(x) : Elem::kU8;  // XNNPACK's 8-bit leaky ReLU is uint8 only
      const Layout l = natural();
      const int in = get(x, l, e);
      const int out = produce(p.out, l, e);
      const int32_t xz = zp_as(xq.zp, xn, e), yz = zp_as(yq.zp, yn, e);
      const size_t count = static_cast<size_t>(ys.numel());
      if (!sigmoid) {
        keep(xnn_create_leaky_relu_nc_qu8(1, 1, 1, n.attr_float("alpha", 0.01f), static_cast<uint8_t>(xz), xq.scale,
                                          static_cast<uint8_t>(yz), yq.scale, 0, 255, 0, &op),
             op, p, "xnn_create_leaky_relu_nc_qu8");
        run(op, pi, {in}, out, "xnn_setup_leaky_relu_nc_qu8",
            [=, this] { return xnn_setup_leaky_relu_nc_qu8(op, count, u8(in), u8(out), pool_); });
      } else if (e == Elem::kS8) {
        keep(xnn_create_sigmoid_nc_qs8(1, 1, 1, static_cast<int8_t>(xz), xq.scale, static_cast<int8_t>(yz), yq.scale, -128, 127, 0, &op),
             op, p, "xnn_create_sigmoid_nc_qs8");
        run(op, pi, {in}, out, "xnn_setup_sigmoid_nc_qs8",
            [=, this] { return xnn_setup_sigmoid_nc_qs8(op, count, s8(in), s8(out), pool_); });
      } else {
        keep(xnn_create_sigmoid_nc_qu8(1, 1, 1, static_cast<uint8_t>(xz), xq.scale, static_cast<uint8_t>(yz), yq.scale, 0, 255, 0, &op),
             op, p, "xnn_create_sigmoid_nc_qu8");
        run(op, pi, {in}, out, "xnn_setup_sigmoid_nc_qu8",
            [=, this] { return xnn_setup_sigmoid_nc_qu8(op, count, u8(in), u8(out), pool_); });
      }
      return;
    }
    case Kind::kQuantize: {
      const QParam yq = qparam(n, 1, 2, yt);
      const Layout l = natural();
      // A region input is read from the frame directly (no copy into the region first).
      const bool from_frame = !produced(x) && !is_const(x) && l == Layout::kPlain && find(x, l, Elem::kF32) < 0;
      const int in = from_frame ? -1 : get(x, l, Elem::kF32);
      const int out = produce(p.out, l, yn);
      Pending pd;
      if (from_frame) {
        pd.step.src_value = x;
        pd.step.src_dtype = DType::kFloat;
      }
      pd.step.type = Step::Type::kQuantize;
      pd.step.plan = pi;
      pd.step.n = static_cast<size_t>(ys.numel());
      pd.step.scale = yq.scale;
      pd.step.zp = yq.zp;
      pd.step.lo = range_lo(yn);
      pd.step.hi = range_hi(yn);
      pd.src = in, pd.dst = out;
      if (in >= 0) pd.reads.push_back(in);
      pd.write = out;
      pending_.push_back(std::move(pd));
      note(str("quantize ", L, from_frame ? str(" from ", name(x)) : ""));
      return;
    }
    case Kind::kDequantize: {
      const QParam xq = qparam(n, 1, 2, xt);
      const Elem e = held(x);
      const Layout l = natural();
      const int in = get(x, l, e);
      const int out = produce(p.out, l, Elem::kF32);
      const int32_t xz = zp_as(xq.zp, xn, e);
      const size_t count = static_cast<size_t>(ys.numel());
      if (e == Elem::kS8) {
        keep(xnn_create_convert_nc_qs8_f32(1, 1, 1, xq.scale, static_cast<int8_t>(xz), 0, &op), op, p, "xnn_create_convert_nc_qs8_f32");
        run(op, pi, {in}, out, "xnn_setup_convert_nc_qs8_f32",
            [=, this] { return xnn_setup_convert_nc_qs8_f32(op, count, s8(in), ptr(out), pool_); });
      } else {
        keep(xnn_create_convert_nc_qu8_f32(1, 1, 1, xq.scale, static_cast<uint8_t>(xz), 0, &op), op, p, "xnn_create_convert_nc_qu8_f32");
        run(op, pi, {in}, out, "xnn_setup_convert_nc_qu8_f32",
            [=, this] { return xnn_setup_convert_nc_qu8_f32(op, count, u8(in), ptr(out), pool_); });
      }
      return;
    }
    default: fail(ErrorCode::kEpFailure, "xnnpack: internal error: ", L, " is not a quantized operator");
  }
}

void Builder::build_op(int pi) {
  const OpPlan& p = k_.plans_[pi];
  const Node& n = g_.nodes[p.node];
  const std::string& L = p.label;
  const Shape ys = shape(p.out);
  const int x = p.in[0];
  const Shape xs = shape(x);
  auto natural = [&] { return prefers_nhwc(x) ? Layout::kNhwc : Layout::kPlain; };
  if (ys.numel() == 0) {
    produce(p.out, Layout::kPlain, native(p.out));  // nothing to compute
    return;
  }
  if (p.kind == Kind::kAlias) {
    const Elem e = held(x);
    store_[key(p.out, Layout::kPlain, e)] = get(x, Layout::kPlain, e);
    primary_[p.out] = {Layout::kPlain, e};
    return;
  }
  if (xs.numel() == 0) fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": an empty input with a non-empty output");
  if (p.kind >= Kind::kQConv) {
    build_qop(pi);
    return;
  }
  xnn_operator_t op = nullptr;
  auto expect_shape = [&](const Shape& want) {
    if (!(want == ys))
      fail(ErrorCode::kEpFailure, "xnnpack: ", L, ": computed output shape ", want.to_string(), " differs from the inferred ",
           ys.to_string());
  };
  switch (p.kind) {
    case Kind::kConv: {
      const Tensor w = const_float(g_, n.inputs[1]);
      const Tensor bt = n.has_input(2) ? const_float(g_, n.inputs[2]) : Tensor();
      const Tensor* b = n.has_input(2) ? &bt : nullptr;
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
      const Tensor w = const_float(g_, n.inputs[1]);
      const Tensor bt = n.has_input(2) ? const_float(g_, n.inputs[2]) : Tensor();
      const Tensor* b = n.has_input(2) ? &bt : nullptr;
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
      const Tensor bm = const_float(g_, n.inputs[1]);
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
      if (gemm && n.has_input(2) && beta != 0.0f) {
        const Tensor c = const_float(g_, n.inputs[2]);
        bias.resize(static_cast<size_t>(Nout));
        const float* cp = c.data<float>();
        for (int64_t j = 0; j < Nout; ++j) bias[j] = beta * cp[c.numel() == 1 ? 0 : j];
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
      const Elem e = max ? held(x) : Elem::kF32;  // 8-bit max pooling picks bytes: either kind will do
      int in = get(x, Layout::kNhwc, e);
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
      const int out = produce(p.out, Layout::kNhwc, e);
      const size_t sN = size_t(N), sH = size_t(H), sW = size_t(W);
      if (max && e != Elem::kF32) {
        const uint32_t t = u32(pb[0], L, "padding"), r = u32(pe[1], L, "padding"), b = u32(pe[0], L, "padding"),
                       l = u32(pb[1], L, "padding"), kh = u32(ks[0], L, "kernel"), kw = u32(ks[1], L, "kernel"),
                       sh = u32(geo.stride[0], L, "stride"), sw = u32(geo.stride[1], L, "stride"),
                       dh = u32(geo.dilation[0], L, "dilation"), dw = u32(geo.dilation[1], L, "dilation");
        if (e == Elem::kS8) {
          keep(xnn_create_max_pooling2d_nhwc_s8(t, r, b, l, kh, kw, sh, sw, dh, dw, size_t(C), size_t(C), size_t(C), -128, 127, 0, &op),
               op, p, "xnn_create_max_pooling2d_nhwc_s8");
          run(op, pi, {in}, out, "xnn_setup_max_pooling2d_nhwc_s8",
              [=, this] { return xnn_setup_max_pooling2d_nhwc_s8(op, sN, sH, sW, s8(in), s8(out), pool_); });
        } else {
          keep(xnn_create_max_pooling2d_nhwc_u8(t, r, b, l, kh, kw, sh, sw, dh, dw, size_t(C), size_t(C), size_t(C), 0, 255, 0, &op),
               op, p, "xnn_create_max_pooling2d_nhwc_u8");
          run(op, pi, {in}, out, "xnn_setup_max_pooling2d_nhwc_u8",
              [=, this] { return xnn_setup_max_pooling2d_nhwc_u8(op, sN, sH, sW, u8(in), u8(out), pool_); });
        }
      } else if (max) {
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
      const Tensor slope = const_float(g_, n.inputs[1]);
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
        if (const Tensor* v = constant_input(g_, n, 2)) value = static_cast<float>(v->element_as_double(0));
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
    case Kind::kQConv:
    case Kind::kQFc:
    case Kind::kQBinary:
    case Kind::kQGlobalAvgPool:
    case Kind::kQSigmoid:
    case Kind::kQLeakyRelu:
    case Kind::kQuantize:
    case Kind::kDequantize: break;  // build_qop
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

void* frame_data(Value* frame, int v, DType dt, size_t count, const Graph& g) {
  Value& val = frame[v];
  if (!val.is_tensor() || val.tensor().dtype() != dt || static_cast<size_t>(val.tensor().numel()) != count)
    fail(ErrorCode::kRuntime, "xnnpack: value '", g.values[v].name, "' is not the ", dtype_name(dt),
         " tensor of ", count, " elements the region was built for");
  return count ? val.tensor().raw_data() : nullptr;
}

void RegionKernel::run(const Instance& inst, Value* frame) const {
  pthreadpool_t pool = threads_->get();
  for (const Step& s : inst.steps) {
    switch (s.type) {
      case Step::Type::kRun:
        check_status(xnn_run_operator(s.op, pool), plans_[s.plan].label, "xnn_run_operator");
        break;
      case Step::Type::kXform: {
        const size_t count = s.n * s.rows * s.cols;
        const void* src = s.src_value >= 0 ? frame_data(frame, s.src_value, s.src_dtype, count, g_) : s.src;
        void* dst = s.dst_value >= 0 ? frame_data(frame, s.dst_value, s.dst_dtype, count, g_) : s.dst;
        transform(src, dst, s.n, s.rows, s.cols, s.esize, s.flip, pool);
        break;
      }
      case Step::Type::kConvertIn: {
        if (!s.n) break;
        const void* src = frame_data(frame, s.src_value, DType::kFloat16, s.n, g_);
        check_status(xnn_setup_convert_nc_f16_f32(s.op, s.n, src, static_cast<float*>(s.dst), pool), g_.values[s.src_value].name,
                     "xnn_setup_convert_nc_f16_f32");
        check_status(xnn_run_operator(s.op, pool), g_.values[s.src_value].name, "xnn_run_operator");
        break;
      }
      case Step::Type::kConvertOut: {
        if (!s.n) break;
        void* dst = frame_data(frame, s.dst_value, DType::kFloat16, s.n, g_);
        check_status(xnn_setup_convert_nc_f32_f16(s.op, s.n, static_cast<const float*>(s.src), dst, pool),
                     g_.values[s.dst_value].name, "xnn_setup_convert_nc_f32_f16");
        check_status(xnn_run_operator(s.op, pool), g_.values[s.dst_value].name, "xnn_run_operator");
        break;
      }
      case Step::Type::kQuantize: {
        const void* src = s.src_value >= 0 ? frame_data(frame, s.src_value, s.src_dtype, s.n, g_) : s.src;
        QuantizeJob job{static_cast<const float*>(src), s.dst, s.scale, static_cast<float>(s.lo - s.zp),
                        static_cast<float>(s.hi - s.zp), s.zp, s.lo < 0};
        pthreadpool_parallelize_1d_tile_1d(pool, quantize_tile, &job, s.n, kQuantizeTile, 0);
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
