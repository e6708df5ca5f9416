// Compiling a region for one input-shape signature: the per-shape cache entry (primitives,
// memory descriptors, a scratch plan) and the builder the op emitters (ops.cpp) use.
//
// Memory model. Every tensor the compiled sequence touches is a *view* (a memory descriptor) on a
// *slot*: a frame slot is an executor buffer (region inputs and outputs, plain row-major, its
// pointer set per run), a const slot holds weights reordered once at compile time, a scratch slot
// is an offset into the per-context scratch buffer (activations in oneDNN's preferred layouts,
// primitive scratchpads), placed by lifetime so buffers are reused along the sequence.
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "onednn_ep.hpp"

namespace onyx::onednn {

using MD = dnnl::memory::desc;
using Dims = dnnl::memory::dims;
using Alg = dnnl::algorithm;
using Tag = dnnl::memory::format_tag;
using DT = dnnl::memory::data_type;
constexpr auto kF32 = DT::f32;

/// ONNX shape as oneDNN dims (a scalar becomes {1}).
Dims to_dims(const Shape& s);
/// oneDNN's type for an onyx element type: f32, bf16, s8, u8 or s32; undef for the others.
DT dnnl_type(DType t);
/// Dense row-major descriptor of `d` (float32 unless `t` says otherwise).
MD plain_md(const Dims& d, DT t = kF32);
/// Strided descriptor.
MD strided_md(const Dims& d, const Dims& strides, DT t = kF32);
/// `m` with its elements of type `t` (same dims and layout: blocking, strides).
MD with_type(const MD& m, DT t);
/// True when `m` is dense row-major (no blocking, padding or offset; size-1 dims ignored).
bool is_plain(const MD& m);
int64_t numel_of(const Dims& d);
/// Dims with leading 1s up to `rank`.
Dims pad_front(const Dims& d, size_t rank);

enum class SlotKind : uint8_t { kFrame, kConst, kScratch };

struct Slot {
  SlotKind kind = SlotKind::kScratch;
  int value = -1;          // kFrame: the value whose executor buffer this is
  dnnl::memory cmem;       // kConst: the data
  size_t bytes = 0;        // kScratch
  size_t offset = 0;
  int first = INT_MAX, last = -1;  // kScratch: steps using it
  std::vector<int> values;  // values whose representation lives (or lived) in this slot
};

struct View {
  int slot;
  MD md;
};

struct Step {
  dnnl::primitive prim;
  std::vector<std::pair<int, int>> args;  // (DNNL_ARG_*, view)
  int node;                               // region node it implements (messages)
};

/// Per-run state of one entry: memory objects, exec-arg arrays, a stream, the scratch buffer.
/// Pooled in the entry, so a run after warm-up allocates nothing here.
struct ExecCtx {
  ~ExecCtx();
  void* buf = nullptr;
  std::vector<dnnl::memory> mems;                 // per view
  std::vector<std::vector<dnnl_exec_arg_t>> args;  // per step
  dnnl::stream stream;
};

/// Everything compiled for one shape signature.
struct Entry {
  std::vector<Shape> shapes;  // per key value (RegionKernel's key order)
  std::vector<Slot> slots;
  std::vector<View> views;
  std::vector<Step> steps;
  std::vector<std::pair<int, int>> frame_views;  // (view, value)
  std::vector<Tensor> keyed_values;              // per RegionDesc::keyed value: its contents
  size_t scratch_bytes = 0;
  std::vector<std::unique_ptr<ExecCtx>> idle;    // guarded by the kernel's mutex
};

/// Reordered constants shared by the entries of one kernel (weights are reordered once per
/// layout, whatever the number of shapes seen).
struct ConstCache {
  struct Item {
    const void* src;
    MD src_md, dst_md;
    dnnl::memory mem;
  };
  std::vector<Item> items;
};

/// What the builder knows of the region (fixed at compile_region time).
struct RegionDesc {
  const Graph& graph;
  std::vector<int> nodes;
  std::vector<char> is_output;  // per value id
  std::vector<char> in_region;  // per node index
  std::vector<int> uses;        // per value id: reads by region nodes
  std::vector<std::vector<int>> readers;  // per value id: region nodes reading it (once each)
  std::vector<const Tensor*> constants;   // per value id: initializer or null
  std::vector<int> keyed;  // run-time inputs read as constants (compile_time_inputs): their values key entries
  bool arena = true;       // intermediates share scratch by lifetime (the EP's "arena" option)
};

class Builder {
 public:
  Builder(const RegionDesc& r, const dnnl::engine& eng, ConstCache& cache, Entry& e, const std::vector<Shape>& shapes);

  /// Emits every node of the region; throws onyx::Error naming the node on failure.
  void build();

  // ---- queries ----
  const Graph& graph() const { return r_.graph; }
  const Node& node(int i) const { return r_.graph.nodes[i]; }
  const Shape& shape(int v) const { return shapes_[v]; }
  /// oneDNN type of value `v`'s elements (its constant's, else its inferred type's).
  DT type(int v) const;
  bool is_output(int v) const { return r_.is_output[v] != 0; }
  const Tensor* constant(int v) const {
    if (v < 0) return nullptr;
    if (r_.constants[v]) return r_.constants[v];
    for (size_t k = 0; k < r_.keyed.size(); ++k)
      if (r_.keyed[k] == v) return &e_.keyed_values[k];
    return nullptr;
  }
  /// The one region node reading `v` if `v` is internal and read exactly once, else -1.
  int sole_reader(int v) const;
  bool has_rep(int v) const { return rep_.count(v) != 0; }
  /// Whether `v` can be read now (defined already, or coming from outside the region).
  bool available(int v) const {
    const int p = r_.graph.values[v].producer;
    return has_rep(v) || p < 0 || !r_.in_region[p];
  }
  int current_node() const { return node_; }
  const dnnl::engine& engine() const { return eng_; }
  const MD& md(int view) const { return e_.views[view].md; }

  // ---- views ----
  /// The value's current representation (whatever layout its producer left it in).
  int view_of(int v);
  /// The value in dense row-major layout with dims `d` (same element count; default: its shape).
  int plain_of(int v);
  int plain_of(int v, const Dims& d);
  /// Reinterprets a dense row-major view with other dims (same element count).
  int reshape_plain(int view, const Dims& d);
  /// A view of the same slot with another descriptor.
  int alias(int view, const MD& m);
  /// `view` converted to descriptor `m` (no-op when equal; done at compile time for constants).
  int reorder(int view, const MD& m);
  /// A fresh scratch view.
  int scratch(const MD& m);
  /// Destination for value `v`: its frame buffer when `v` leaves the region and `m` is plain,
  /// else scratch.
  int out_view(int v, const MD& m);
  /// A compile-time constant from host floats laid out densely row-major in `m` (a float32
  /// descriptor; other element types: host_bytes).
  int host_const(const MD& m, const std::vector<float>& data);
  /// A compile-time constant from `m.get_size()` host bytes laid out as `m` says.
  int host_bytes(const MD& m, const void* data);
  /// Plain host copy of a constant view's data as floats (dims of its descriptor).
  std::vector<float> const_data(int view);
  bool same_slot(int a, int c) const { return e_.views[a].slot == e_.views[c].slot; }
  bool is_const(int view) const { return e_.slots[e_.views[view].slot].kind == SlotKind::kConst; }
  bool is_frame(int view) const { return e_.slots[e_.views[view].slot].kind == SlotKind::kFrame; }
  /// True when `view`'s scratch slot may be overwritten in place by the current node: no value
  /// living in it (v included) is read after this node.
  bool exclusive(int view, int v) const;
  /// Whether a region node after the current one (and not fused into it) reads `v`.
  bool live(int v) const;

  // ---- definitions ----
  /// Sets value `v`'s representation; when `v` leaves the region, copies it into its frame
  /// buffer (plain row-major) unless it is already there.
  void define(int v, int view);
  /// Marks a later region node as computed by the current one (fused).
  void absorb(int node) { absorbed_[node] = 1; }
  bool absorbed(int node) const { return absorbed_.count(node) != 0; }

  // ---- steps ----
  /// A primitive attribute with user-managed scratchpad.
  static dnnl::primitive_attr attr();
  /// Appends a primitive; its scratchpad (if any) gets its own scratch view.
  void step(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd, std::vector<std::pair<int, int>> args);
  /// Adds a reorder step from `src` to `dst` views (with `a`'s scales and zero points).
  void copy(int src, int dst);
  void copy(int src, int dst, const dnnl::primitive_attr& a);

  [[noreturn]] void unsupported(const std::string& what) const;

 private:
  int add_view(int slot, const MD& m);
  int add_slot(Slot s);
  int frame_view(int v, const MD& m);
  void dump() const;

  const RegionDesc& r_;
  const dnnl::engine& eng_;
  ConstCache& cache_;
  Entry& e_;
  const std::vector<Shape>& shapes_;
  std::unordered_map<int, int> rep_;    // value -> view
  std::unordered_map<int, int> plain_;  // value -> dense row-major view with its shape
  std::unordered_map<int, int> frame_slot_;  // value -> frame slot
  std::unordered_map<int, char> absorbed_;
  dnnl::stream cstream_;  // compile-time reorders
  int node_ = -1;
  int pos_ = -1;  // index of node_ in the region
};

/// A MatMul's operands as oneDNN dims of equal rank (a vector operand made a matrix, batch dims
/// broadcast; with b shared by every batch, a's batch dims folded into its rows), and N.
struct MatDims {
  Dims a, w, out;
  int64_t n;
};
MatDims matmul_dims(const Builder& b, const Node& n, const Shape& as, const Shape& ws);

/// Op emitters (ops.cpp). Each reads its inputs through the builder and defines its outputs.
void emit_node(Builder& b, int node);
/// The 8-bit ops and Cast (qops.cpp): false when `node` is none of them.
bool emit_quantized(Builder& b, int node);

}  // namespace onyx::onednn
