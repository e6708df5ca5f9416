// A compiled oneDNN region: per input-shape signature, a sequence of oneDNN primitives built by
// the Builder (ops.cpp emits each node), memoised with its memory descriptors and scratch plan.
//
// Threads: oneDNN here runs on OpenMP. A region kernel runs on the executor's calling thread,
// which sets its OpenMP thread count (the EP's "threads" option, or the session's intra-op
// threads) before executing; oneDNN then parallelises each primitive over its own OpenMP team.
// onyx's own ThreadPool is idle while a oneDNN region runs (the executor runs nodes one at a
// time and the region kernel never calls into the pool), so the two never compete for cores.
#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include <oneapi/dnnl/dnnl_debug.h>

#include "builder.hpp"

namespace onyx::onednn {

// ---------------------------------------------------------------------------------------------
// Descriptor helpers

Dims to_dims(const Shape& s) {
  if (s.empty()) return {1};
  return Dims(s.begin(), s.end());
}

DT dnnl_type(DType t) {
  switch (t) {
    case DType::kFloat: return DT::f32;
    case DType::kBFloat16: return DT::bf16;
    case DType::kInt8: return DT::s8;
    case DType::kUInt8: return DT::u8;
    case DType::kInt32: return DT::s32;
    default: return DT::undef;
  }
}

MD plain_md(const Dims& d, DT t) {
  Dims strides(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(d[i], 1);
  return MD(d, t, strides);
}

MD with_type(const MD& m, DT t) {
  dnnl_memory_desc_t c = m.data;
  c.data_type = static_cast<dnnl_data_type_t>(t);
  c.extra = dnnl_memory_extra_desc_t{};
  return MD(c);
}

MD strided_md(const Dims& d, const Dims& strides, DT t) {
  // A size-1 dim's stride is arbitrary; give it the dense value (some oneDNN kernels mis-handle
  // a large stride on a unit dim).
  Dims s = strides;
  for (size_t k = d.size(); k-- > 0;)
    if (d[k] == 1) s[k] = k + 1 < d.size() ? s[k + 1] * std::max<int64_t>(d[k + 1], 1) : 1;
  return MD(d, t, s);
}

bool is_plain(const MD& m) {
  const dnnl_memory_desc_t& c = m.data;
  if (c.format_kind != dnnl_blocked || c.offset0 != 0) return false;
  const dnnl_blocking_desc_t& b = c.format_desc.blocking;
  if (b.inner_nblks != 0) return false;
  int64_t expect = 1;
  for (int i = c.ndims; i-- > 0;) {
    if (c.padded_dims[i] != c.dims[i] || c.padded_offsets[i] != 0) return false;
    if (c.dims[i] == 1) continue;
    if (b.strides[i] != expect) return false;
    expect *= c.dims[i];
  }
  return true;
}

int64_t numel_of(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

Dims pad_front(const Dims& d, size_t rank) {
  Dims r(rank > d.size() ? rank - d.size() : 0, 1);
  r.insert(r.end(), d.begin(), d.end());
  return r;
}

ExecCtx::~ExecCtx() { std::free(buf); }

// ---------------------------------------------------------------------------------------------
// Builder

Builder::Builder(const RegionDesc& r, const dnnl::engine& eng, ConstCache& cache, Entry& e, const std::vector<Shape>& shapes)
    : r_(r), eng_(eng), cache_(cache), e_(e), shapes_(shapes), cstream_(eng) {}

void Builder::unsupported(const std::string& what) const {
  fail(ErrorCode::kNotImplemented, node_ >= 0 ? node(node_).label() : std::string("region"), ": ", what);
}

int Builder::sole_reader(int v) const {
  if (v < 0 || is_output(v) || r_.readers[v].size() != 1 || r_.uses[v] != 1) return -1;
  return r_.readers[v][0];
}

bool Builder::live(int v) const {
  for (int rd : r_.readers[v])
    if (rd > node_ && !absorbed(rd)) return true;
  return false;
}

bool Builder::exclusive(int view, int v) const {
  const Slot& s = e_.slots[e_.views[view].slot];
  if (s.kind != SlotKind::kScratch || live(v)) return false;
  // Values that shared the slot (earlier in-place results, aliases) must be dead too. A region
  // output among them was already copied to its executor buffer when it was defined.
  for (int u : s.values)
    if (u != v && live(u)) return false;
  return true;
}

int Builder::add_slot(Slot s) {
  e_.slots.push_back(std::move(s));
  return static_cast<int>(e_.slots.size()) - 1;
}

int Builder::add_view(int slot, const MD& m) {
  e_.views.push_back({slot, m});
  const int view = static_cast<int>(e_.views.size()) - 1;
  // Views of executor buffers get their pointer per run.
  if (e_.slots[slot].kind == SlotKind::kFrame) e_.frame_views.emplace_back(view, e_.slots[slot].value);
  return view;
}

int Builder::frame_view(int v, const MD& m) {
  auto it = frame_slot_.find(v);
  int slot;
  if (it == frame_slot_.end()) {
    Slot s;
    s.kind = SlotKind::kFrame;
    s.value = v;
    slot = add_slot(std::move(s));
    frame_slot_[v] = slot;
  } else {
    slot = it->second;
  }
  return add_view(slot, m);
}

int Builder::view_of(int v) {
  auto it = rep_.find(v);
  if (it != rep_.end()) return it->second;
  const int producer = r_.graph.values[v].producer;
  if (producer >= 0 && r_.in_region[producer])
    fail(ErrorCode::kRuntime, node(node_).label(), ": internal error: value '", r_.graph.values[v].name,
         "' is read before its producer ran");
  int view;
  if (const Tensor* c = constant(v)) {
    const DT t = dnnl_type(c->dtype());
    if (t == DT::undef)
      fail(ErrorCode::kNotImplemented, node(node_).label(), ": constant '", r_.graph.values[v].name, "' is ",
           dtype_name(c->dtype()), ", which oneDNN does not store");
    Slot s;
    s.kind = SlotKind::kConst;
    const MD m = plain_md(to_dims(c->shape()), t);
    s.cmem = dnnl::memory(m, eng_, const_cast<void*>(c->raw_data()));
    view = add_view(add_slot(std::move(s)), m);
  } else {
    view = frame_view(v, plain_md(to_dims(shape(v)), type(v)));
  }
  rep_[v] = view;
  plain_[v] = view;
  return view;
}

DT Builder::type(int v) const {
  if (const Tensor* c = constant(v)) return dnnl_type(c->dtype());
  const DType d = r_.graph.values[v].type.elem_dtype();
  if (d == DType::kUndefined) return kF32;  // (an output inference left untyped: the float ops' type)
  const DT t = dnnl_type(d);
  if (t == DT::undef)
    fail(ErrorCode::kNotImplemented, node_ >= 0 ? node(node_).label() : std::string("region"), ": value '",
         r_.graph.values[v].name, "' is ", dtype_name(r_.graph.values[v].type.elem_dtype()),
         ", which oneDNN does not store");
  return t;
}

int Builder::reshape_plain(int view, const Dims& d) {
  const MD& m = md(view);
  if (!is_plain(m)) fail(ErrorCode::kRuntime, node(node_).label(), ": internal error: reshaping a blocked layout");
  if (numel_of(m.dims()) != numel_of(d))
    fail(ErrorCode::kRuntime, node(node_).label(), ": internal error: reshape changes the element count");
  if (m.dims() == d) return view;
  return alias(view, plain_md(d, m.data_type()));
}

int Builder::plain_of(int v) {
  auto it = plain_.find(v);
  if (it != plain_.end()) return it->second;
  const int cur = view_of(v);
  const Dims d = to_dims(shape(v));
  int p = cur;
  if (!is_plain(md(cur))) p = reorder(cur, plain_md(md(cur).dims(), md(cur).data_type()));
  p = reshape_plain(p, d);
  plain_[v] = p;
  // The plain copy is v's too: it must not be overwritten in place while v is live.
  std::vector<int>& vals = e_.slots[e_.views[p].slot].values;
  if (std::find(vals.begin(), vals.end(), v) == vals.end()) vals.push_back(v);
  return p;
}

int Builder::plain_of(int v, const Dims& d) { return reshape_plain(plain_of(v), d); }

int Builder::alias(int view, const MD& m) { return add_view(e_.views[view].slot, m); }

int Builder::scratch(const MD& m) {
  Slot s;
  s.kind = SlotKind::kScratch;
  s.bytes = m.get_size();
  return add_view(add_slot(std::move(s)), m);
}

int Builder::out_view(int v, const MD& m) {
  if (is_output(v) && is_plain(m) && numel_of(m.dims()) == shape(v).numel()) return frame_view(v, m);
  return scratch(m);
}

int Builder::host_const(const MD& m, const std::vector<float>& data) {
  if (m.get_size() != data.size() * sizeof(float))
    fail(ErrorCode::kRuntime, node(node_).label(), ": internal error: constant size mismatch");
  Slot s;
  s.kind = SlotKind::kConst;
  s.cmem = dnnl::memory(m, eng_);
  if (!data.empty()) std::memcpy(s.cmem.get_data_handle(), data.data(), m.get_size());
  return add_view(add_slot(std::move(s)), m);
}

int Builder::host_bytes(const MD& m, const void* data) {
  Slot s;
  s.kind = SlotKind::kConst;
  s.cmem = dnnl::memory(m, eng_);
  if (m.get_size() > 0) std::memcpy(s.cmem.get_data_handle(), data, m.get_size());
  return add_view(add_slot(std::move(s)), m);
}

std::vector<float> Builder::const_data(int view) {
  int p = view;
  if (!is_plain(md(view)) || md(view).data_type() != kF32) p = reorder(view, plain_md(md(view).dims()));
  const Slot& s = e_.slots[e_.views[p].slot];
  std::vector<float> out(static_cast<size_t>(numel_of(md(p).dims())));
  if (!out.empty()) std::memcpy(out.data(), s.cmem.get_data_handle(), out.size() * sizeof(float));
  return out;
}

int Builder::reorder(int view, const MD& m) {
  if (md(view) == m) return view;
  const Slot& src = e_.slots[e_.views[view].slot];
  if (src.kind != SlotKind::kConst) {
    const int dst = scratch(m);
    copy(view, dst);
    return dst;
  }
  // A constant (weights): reorder now, once per (data, source layout, target layout).
  const void* handle = src.cmem.get_data_handle();
  const MD src_md = md(view);
  for (const auto& it : cache_.items)
    if (it.src == handle && it.src_md == src_md && it.dst_md == m) {
      Slot s;
      s.kind = SlotKind::kConst;
      s.cmem = it.mem;
      return add_view(add_slot(std::move(s)), m);
    }
  dnnl::memory from(src_md, eng_, const_cast<void*>(handle));
  dnnl::memory to(m, eng_);
  dnnl::reorder(from, to).execute(cstream_, from, to);
  cstream_.wait();
  cache_.items.push_back({handle, src_md, m, to});
  Slot s;
  s.kind = SlotKind::kConst;
  s.cmem = to;
  return add_view(add_slot(std::move(s)), m);
}

void Builder::define(int v, int view) {
  if (v < 0) return;
  rep_[v] = view;
  plain_.erase(v);
  Slot& s = e_.slots[e_.views[view].slot];
  if (std::find(s.values.begin(), s.values.end(), v) == s.values.end()) s.values.push_back(v);
  if (numel_of(md(view).dims()) != shape(v).numel())
    fail(ErrorCode::kRuntime, node(node_).label(), ": internal error: value '", r_.graph.values[v].name, "' has ",
         shape(v).numel(), " elements, its oneDNN memory ", numel_of(md(view).dims()));
  if (!is_output(v)) return;
  if (s.kind == SlotKind::kFrame && s.value == v) {
    plain_[v] = reshape_plain(view, to_dims(shape(v)));
    return;
  }
  // Leaves the region: copy into the executor's buffer, in plain row-major layout.
  const int target = frame_view(v, plain_md(md(view).dims(), type(v)));
  copy(view, target);
  plain_[v] = reshape_plain(target, to_dims(shape(v)));
}

dnnl::primitive_attr Builder::attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

void Builder::step(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd, std::vector<std::pair<int, int>> args) {
  const MD sp = pd.scratchpad_desc();
  if (sp.get_size() > 0) args.emplace_back(DNNL_ARG_SCRATCHPAD, scratch(sp));
  const int index = static_cast<int>(e_.steps.size());
  for (const auto& [arg, view] : args) {
    (void)arg;
    Slot& s = e_.slots[e_.views[view].slot];
    s.first = std::min(s.first, index);
    s.last = std::max(s.last, index);
  }
  e_.steps.push_back({p, std::move(args), node_});
}

void Builder::copy(int src, int dst) { copy(src, dst, attr()); }

void Builder::copy(int src, int dst, const dnnl::primitive_attr& a) {
  dnnl::reorder::primitive_desc pd(eng_, md(src), eng_, md(dst), a);
  step(dnnl::reorder(pd), pd, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
}

void Builder::build() {
  for (size_t k = 0; k < r_.nodes.size(); ++k) {
    const int i = r_.nodes[k];
    if (absorbed(i)) continue;
    node_ = i;
    pos_ = static_cast<int>(k);
    try {
      emit_node(*this, i);
    } catch (const Error&) {
      throw;
    } catch (const dnnl::error& e) {
      fail(ErrorCode::kEpFailure, node(i).label(), ": oneDNN: ", e.what());
    } catch (const std::exception& e) {
      fail(ErrorCode::kEpFailure, node(i).label(), ": ", e.what());
    }
    for (int v : node(i).outputs) {
      if (v < 0 || has_rep(v)) continue;
      bool needed = is_output(v);
      for (int rd : r_.readers[v]) needed |= !absorbed(rd);
      if (needed)
        fail(ErrorCode::kRuntime, node(i).label(), ": internal error: output '", r_.graph.values[v].name, "' was not computed");
    }
  }
  // Scratch placement: best fit by size over step lifetimes (as the executor's arena).
  constexpr size_t kAlign = 64;
  std::vector<int> order;
  for (size_t s = 0; s < e_.slots.size(); ++s)
    if (e_.slots[s].kind == SlotKind::kScratch && e_.slots[s].last >= 0) order.push_back(static_cast<int>(s));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return e_.slots[a].bytes > e_.slots[b].bytes; });
  std::vector<int> placed;
  size_t total = 0;
  auto rounded = [&](size_t n) { return (n + kAlign - 1) / kAlign * kAlign; };
  for (int si : order) {
    Slot& s = e_.slots[si];
    std::vector<std::pair<size_t, size_t>> busy;
    for (int pi : placed) {
      const Slot& p = e_.slots[pi];
      // Without the arena every intermediate keeps its own bytes: all placed slots are busy.
      if (r_.arena && (p.last < s.first || s.last < p.first)) continue;
      busy.emplace_back(p.offset, rounded(p.bytes));
    }
    std::sort(busy.begin(), busy.end());
    size_t off = 0;
    for (const auto& [o, sz] : busy) {
      if (off + rounded(s.bytes) <= o) break;
      off = std::max(off, o + sz);
    }
    s.offset = off;
    total = std::max(total, off + rounded(s.bytes));
    placed.push_back(si);
  }
  e_.scratch_bytes = total;
  if (std::getenv("ONYX_ONEDNN_DEBUG")) dump();
}

void Builder::dump() const {
  std::fprintf(stderr, "onednn region: %zu steps, %zu bytes of scratch\n", e_.steps.size(), e_.scratch_bytes);
  for (size_t k = 0; k < e_.steps.size(); ++k) {
    const Step& st = e_.steps[k];
    const dnnl_primitive_kind_t kind = st.prim.get_kind() == dnnl::primitive::kind::undef
                                           ? dnnl_undefined_primitive
                                           : static_cast<dnnl_primitive_kind_t>(st.prim.get_kind());
    std::fprintf(stderr, "  [%zu] %s: %s\n", k, node(st.node).label().c_str(), dnnl_prim_kind2str(kind));
    for (const auto& [arg, view] : st.args) {
      const dnnl_memory_desc_t& c = e_.views[view].md.data;
      std::string dims, fmt;
      for (int i = 0; i < c.ndims; ++i) dims += str(i ? "x" : "", c.dims[i]);
      if (c.format_kind == dnnl_blocked) {
        for (int i = 0; i < c.ndims; ++i) fmt += str(i ? ":" : "s", c.format_desc.blocking.strides[i]);
        for (int i = 0; i < c.format_desc.blocking.inner_nblks; ++i)
          fmt += str(" b", c.format_desc.blocking.inner_idxs[i], "/", c.format_desc.blocking.inner_blks[i]);
      } else {
        fmt = str("kind", static_cast<int>(c.format_kind));
      }
      const Slot& sl = e_.slots[e_.views[view].slot];
      const char* where = sl.kind == SlotKind::kFrame ? "frame" : sl.kind == SlotKind::kConst ? "const" : "scratch";
      std::fprintf(stderr, "      arg %d: %s %s (%s slot %d", arg, dims.c_str(), fmt.c_str(), where, e_.views[view].slot);
      if (sl.kind == SlotKind::kFrame) std::fprintf(stderr, " '%s'", r_.graph.values[sl.value].name.c_str());
      if (sl.kind == SlotKind::kScratch) std::fprintf(stderr, " @%zu+%zu", sl.offset, sl.bytes);
      std::fprintf(stderr, ")\n");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The region kernel

namespace {

/// Sets this thread's OpenMP team size for a scope. oneDNN sizes its work partition when a
/// primitive is created and requests that many threads when it runs, so both must see it.
class OmpThreads {
 public:
  explicit OmpThreads(int n) {
#if defined(_OPENMP)
    previous_ = omp_get_max_threads();
    if (previous_ != n) omp_set_num_threads(n);
    n_ = n;
#else
    (void)n;
#endif
  }
  ~OmpThreads() {
#if defined(_OPENMP)
    if (previous_ != n_) omp_set_num_threads(previous_);
#endif
  }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int previous_ = 0, n_ = 0;
};

std::unique_ptr<ExecCtx> make_ctx(const Entry& e, const dnnl::engine& eng) {
  auto c = std::make_unique<ExecCtx>();
  c->buf = std::aligned_alloc(64, std::max<size_t>(64, (e.scratch_bytes + 63) / 64 * 64));
  if (!c->buf) fail(ErrorCode::kRuntime, "oneDNN region: out of memory allocating ", e.scratch_bytes, " bytes of scratch");
  c->mems.reserve(e.views.size());
  for (const View& v : e.views) {
    const Slot& s = e.slots[v.slot];
    switch (s.kind) {
      case SlotKind::kFrame: c->mems.emplace_back(v.md, eng, static_cast<void*>(nullptr)); break;
      case SlotKind::kConst: c->mems.emplace_back(v.md, eng, s.cmem.get_data_handle()); break;
      case SlotKind::kScratch: c->mems.emplace_back(v.md, eng, static_cast<char*>(c->buf) + s.offset); break;
    }
  }
  c->args.resize(e.steps.size());
  for (size_t k = 0; k < e.steps.size(); ++k)
    for (const auto& [arg, view] : e.steps[k].args) c->args[k].push_back({arg, c->mems[view].get()});
  c->stream = dnnl::stream(eng);
  return c;
}

class RegionKernel final : public Kernel {
 public:
  RegionKernel(const RegionInfo& info, const dnnl::engine& eng, int threads, bool arena)
      : desc_{info.graph, info.nodes, {}, {}, {}, {}, {}, {}, arena}, eng_(eng), threads_(std::max(1, threads)) {
    const Graph& g = info.graph;
    const size_t nv = g.values.size();
    desc_.is_output.assign(nv, 0);
    desc_.in_region.assign(g.nodes.size(), 0);
    desc_.uses.assign(nv, 0);
    desc_.readers.resize(nv);
    desc_.constants.assign(nv, nullptr);
    for (int v : info.outputs) desc_.is_output[v] = 1;
    for (int i : info.nodes) {
      desc_.in_region[i] = 1;
      for (int v : g.nodes[i].inputs) {
        if (v < 0) continue;
        ++desc_.uses[v];
        if (std::find(desc_.readers[v].begin(), desc_.readers[v].end(), i) == desc_.readers[v].end())
          desc_.readers[v].push_back(i);
      }
    }
    for (int v : info.inputs) {
      if (const Tensor* c = info.constant(v)) desc_.constants[v] = c;
      else key_.push_back(v);
    }
    for (int i : info.nodes) {
      const Node& n = g.nodes[i];
      for (size_t k : compile_time_inputs(n)) {
        if (!n.has_input(k)) continue;
        const int v = n.inputs[k];
        if (!desc_.constants[v] && std::find(desc_.keyed.begin(), desc_.keyed.end(), v) == desc_.keyed.end())
          desc_.keyed.push_back(v);
      }
    }
    key_.insert(key_.end(), info.outputs.begin(), info.outputs.end());
    key_.insert(key_.end(), info.internal.begin(), info.internal.end());
    label_ = g.nodes[info.nodes.front()].label();
    // Static shapes: compile now, so weights are reordered while the session is prepared.
    if (!desc_.keyed.empty()) return;  // values known at run time only
    std::vector<Shape> shapes;
    for (int v : key_) {
      const TypeInfo& t = g.values[v].type;
      if (!t.is_tensor() || !t.has_shape || !t.shape.is_concrete()) return;
      shapes.push_back(t.shape);
    }
    std::lock_guard<std::mutex> lock(mu_);
    OmpThreads omp(threads_);
    compile(std::move(shapes), nullptr);
  }

  void compute(KernelContext& ctx) const override {
    // Only onyx::Error leaves the module.
    try {
      run(ctx.frame());
    } catch (const Error&) {
      throw;
    } catch (const std::bad_alloc&) {
      fail(ErrorCode::kRuntime, label_, ": oneDNN region: out of memory");
    } catch (const std::exception& e) {
      fail(ErrorCode::kEpFailure, label_, ": oneDNN region: ", e.what());
    }
  }

 private:
  void run(Value* frame) const {
    Entry* e = nullptr;
    std::unique_ptr<ExecCtx> xc;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& cand : entries_)
        if (matches(*cand, frame)) {
          e = cand.get();
          break;
        }
      if (!e) {
        OmpThreads omp(threads_);
        std::vector<Shape> shapes;
        for (int v : key_) {
          if (!frame[v].is_tensor() || !frame[v].tensor().defined())
            fail(ErrorCode::kRuntime, label_, ": oneDNN region: value '", desc_.graph.values[v].name, "' has no buffer");
          shapes.push_back(frame[v].tensor().shape());
        }
        e = compile(std::move(shapes), frame);
      }
      if (!e->idle.empty()) {
        xc = std::move(e->idle.back());
        e->idle.pop_back();
      }
    }
    if (!xc) xc = make_ctx(*e, eng_);
    for (const auto& [view, value] : e->frame_views) {
      const Value& fv = frame[value];
      if (!fv.is_tensor() || (fv.tensor().numel() > 0 && !fv.tensor().raw_data()))
        fail(ErrorCode::kRuntime, label_, ": oneDNN region: value '", desc_.graph.values[value].name, "' has no buffer");
      xc->mems[view].set_data_handle(const_cast<void*>(fv.tensor().raw_data()));
    }
    // OpenMP team size for this thread (see the comment at the top of this file).
    OmpThreads omp(threads_);
    dnnl_status_t st = dnnl_success;
    size_t k = 0;
    for (; k < e->steps.size(); ++k) {
      const auto& a = xc->args[k];
      st = dnnl_primitive_execute(e->steps[k].prim.get(), xc->stream.get(), static_cast<int>(a.size()), a.data());
      if (st != dnnl_success) break;
    }
    if (st == dnnl_success) st = dnnl_stream_wait(xc->stream.get());
    if (st != dnnl_success) {
      const int node = k < e->steps.size() ? e->steps[k].node : e->steps.empty() ? -1 : e->steps.back().node;
      fail(ErrorCode::kEpFailure, node >= 0 ? desc_.graph.nodes[node].label() : label_, ": oneDNN execution failed (status ",
           static_cast<int>(st), ")");
    }
    std::lock_guard<std::mutex> lock(mu_);
    e->idle.push_back(std::move(xc));
  }

  bool matches(const Entry& e, const Value* frame) const {
    for (size_t k = 0; k < key_.size(); ++k) {
      const Value& v = frame[key_[k]];
      if (!v.is_tensor() || !(v.tensor().shape() == e.shapes[k])) return false;
    }
    for (size_t k = 0; k < desc_.keyed.size(); ++k) {
      const Value& v = frame[desc_.keyed[k]];
      const Tensor& want = e.keyed_values[k];
      if (!v.is_tensor() || v.tensor().dtype() != want.dtype() || !(v.tensor().shape() == want.shape())) return false;
      if (want.nbytes() && std::memcmp(v.tensor().raw_data(), want.raw_data(), want.nbytes()) != 0) return false;
    }
    return true;
  }

  // Under mu_.
  Entry* compile(std::vector<Shape> key_shapes, const Value* frame) const {
    auto e = std::make_unique<Entry>();
    for (int v : desc_.keyed) {
      if (!frame || !frame[v].is_tensor())
        fail(ErrorCode::kRuntime, label_, ": oneDNN region: value '", desc_.graph.values[v].name, "' is not a tensor");
      e->keyed_values.push_back(frame[v].tensor().clone());
    }
    const Graph& g = desc_.graph;
    std::vector<Shape> shapes(g.values.size());
    for (size_t k = 0; k < key_.size(); ++k) {
      shapes[key_[k]] = key_shapes[k];
      const int64_t n = key_shapes[k].numel();
      if (n == 0 && dnnl_type(g.values[key_[k]].type.elem_dtype()) != DT::undef) {
        const int p = g.values[key_[k]].producer;
        fail(ErrorCode::kNotImplemented, p >= 0 ? g.nodes[p].label() : label_, ": value '", g.values[key_[k]].name,
             "' is empty; the oneDNN EP does not run empty tensors");
      }
    }
    for (size_t v = 0; v < g.values.size(); ++v)
      if (desc_.constants[v]) shapes[v] = desc_.constants[v]->shape();
    e->shapes = std::move(key_shapes);
    try {
      Builder b(desc_, eng_, cache_, *e, shapes);
      b.build();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& ex) {
      fail(ErrorCode::kEpFailure, label_, ": oneDNN: ", ex.what());
    }
    e->idle.reserve(8);
    entries_.push_back(std::move(e));
    return entries_.back().get();
  }

  RegionDesc desc_;
  dnnl::engine eng_;
  int threads_;
  std::vector<int> key_;  // values whose shapes make the signature
  std::string label_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Entry>> entries_;
  mutable ConstCache cache_;
};

}  // namespace

std::unique_ptr<Kernel> compile_region_kernel(const RegionInfo& region, const dnnl::engine& engine, int threads, bool arena) {
  try {
    return std::make_unique<RegionKernel>(region, engine, threads, arena);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail(ErrorCode::kEpFailure, region.graph.nodes[region.nodes.front()].label(), ": oneDNN: ", e.what());
  }
}

}  // namespace onyx::onednn
