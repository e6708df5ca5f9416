// CPU kernels: sequence family (SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt,
// SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap) and optionals
// (Optional, OptionalHasElement, OptionalGetElement). Sequence elements are shared tensor handles;
// a tensor entering a sequence is copied only when it does not own its memory (see owned_tensor).
#include <string>

#include "kernels/common.hpp"
#include "kernels/control_flow.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {
namespace {

const Value& sequence_input(KernelContext& ctx, size_t i) {
  const Value& v = ctx.input_value(i);
  if (!v.is_sequence()) fail(ErrorCode::kInvalidArgument, "input ", i, " must be a sequence, got a ", describe_value(v));
  return v;
}

/// A position in [-n, n - 1] (or [-n, n] when `allow_end`), normalised to [0, n).
int64_t resolve_position(const Tensor& pos, int64_t n, bool allow_end, const char* what) {
  const int64_t p = read_index(pos, what);
  const int64_t hi = allow_end ? n : n - 1;
  if (p < -n || p > hi)
    fail(ErrorCode::kInvalidArgument, what, " ", p, " is out of range for a sequence of ", n, " tensors (valid: ", -n, " to ", hi,
         ")");
  return p < 0 ? p + n : p;
}

DType sequence_dtype(const Value& seq) {
  if (seq.elem_dtype() != DType::kUndefined) return seq.elem_dtype();
  return seq.items().empty() ? DType::kUndefined : seq.items().front().dtype();
}

// ---------------------------------------------------------------------------------------------

struct DTypeState {
  DType dtype = DType::kFloat;
};

std::unique_ptr<Kernel> make_sequence_empty(const KernelCreateInfo& info) {
  const int64_t dt = info.node.attr_int("dtype", static_cast<int64_t>(DType::kFloat));
  if (!dtype_valid(static_cast<int32_t>(dt)) || dt == 0)
    fail(ErrorCode::kInvalidGraph, info.node.label(), ": dtype ", dt, " is not a tensor element type");
  return make_fn_kernel(DTypeState{static_cast<DType>(dt)},
                        +[](const DTypeState& s, KernelContext& ctx) { ctx.set_output(0, Value::sequence({}, s.dtype)); });
}

void sequence_construct(const int&, KernelContext& ctx) {
  std::vector<Tensor> items;
  items.reserve(ctx.num_inputs());
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Value& v = ctx.input_value(i);
    if (!v.is_tensor()) fail(ErrorCode::kInvalidArgument, "input ", i, " must be a tensor, got a ", describe_value(v));
    if (!items.empty() && v.tensor().dtype() != items.front().dtype())
      fail(ErrorCode::kInvalidArgument, "input ", i, " is ", dtype_name(v.tensor().dtype()), " but input 0 is ",
           dtype_name(items.front().dtype()), "; sequence elements must share one type");
    items.push_back(owned_tensor(v.tensor()));
  }
  if (items.empty()) fail(ErrorCode::kInvalidArgument, "SequenceConstruct needs at least one input");
  const DType dt = items.front().dtype();
  ctx.set_output(0, Value::sequence(std::move(items), dt));
}

void sequence_insert(const int&, KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  const Value& tv = ctx.input_value(1);
  if (!tv.is_tensor()) fail(ErrorCode::kInvalidArgument, "input 1 (the tensor to insert) must be a tensor, got a ", describe_value(tv));
  const Tensor& t = tv.tensor();
  const DType dt = sequence_dtype(seq);
  if (dt != DType::kUndefined && dt != t.dtype())
    fail(ErrorCode::kInvalidArgument, "cannot insert a ", dtype_name(t.dtype()), " tensor into a sequence of ", dtype_name(dt), " tensors");
  const int64_t n = static_cast<int64_t>(seq.items().size());
  const int64_t pos = ctx.has_input(2) ? resolve_position(ctx.input(2), n, true, "position") : n;
  std::vector<Tensor> items;
  items.reserve(static_cast<size_t>(n + 1));
  items.insert(items.end(), seq.items().begin(), seq.items().begin() + pos);
  items.push_back(owned_tensor(t));
  items.insert(items.end(), seq.items().begin() + pos, seq.items().end());
  ctx.set_output(0, Value::sequence(std::move(items), t.dtype()));
}

void sequence_at(const int&, KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  const int64_t n = static_cast<int64_t>(seq.items().size());
  const int64_t pos = resolve_position(ctx.input(1), n, false, "position");
  emit_tensor(ctx, 0, seq.items()[static_cast<size_t>(pos)], "the sequence element");
}

void sequence_erase(const int&, KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  const int64_t n = static_cast<int64_t>(seq.items().size());
  if (n == 0) fail(ErrorCode::kInvalidArgument, "cannot erase from an empty sequence");
  const int64_t pos = ctx.has_input(1) ? resolve_position(ctx.input(1), n, false, "position") : n - 1;
  std::vector<Tensor> items;
  items.reserve(static_cast<size_t>(n - 1));
  for (int64_t k = 0; k < n; ++k)
    if (k != pos) items.push_back(seq.items()[static_cast<size_t>(k)]);
  ctx.set_output(0, Value::sequence(std::move(items), sequence_dtype(seq)));
}

void sequence_length(const int&, KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  ctx.allocate_output(0, DType::kInt64, Shape{}).data<int64_t>()[0] = static_cast<int64_t>(seq.items().size());
}

// ---------------------------------------------------------------------------------------------
// SplitToSequence / ConcatFromSequence

struct AxisState {
  int64_t axis = 0;
  bool flag = false;  // keepdims (SplitToSequence) / new_axis (ConcatFromSequence)
};

void split_to_sequence(const AxisState& s, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t r = static_cast<int64_t>(x.rank());
  if (r == 0) fail(ErrorCode::kInvalidArgument, "the input must have rank >= 1, got a scalar");
  if (s.axis < -r || s.axis >= r)
    fail(ErrorCode::kInvalidArgument, "axis ", s.axis, " is out of range for an input of shape ", x.shape().to_string());
  const size_t axis = static_cast<size_t>(s.axis < 0 ? s.axis + r : s.axis);
  const int64_t dim = x.dim(axis);
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (const Tensor* sp = ctx.optional_input(1)) {
    std::vector<int64_t> v = read_ints(*sp, "split");
    if (sp->rank() == 0) {
      if (v[0] <= 0) fail(ErrorCode::kInvalidArgument, "a scalar split must be > 0, got ", v[0]);
      for (int64_t left = dim; left > 0; left -= v[0]) sizes.push_back(std::min(left, v[0]));
    } else if (sp->rank() == 1) {
      int64_t total = 0;
      for (int64_t k : v) {
        if (k < 0) fail(ErrorCode::kInvalidArgument, "split sizes must be >= 0, got ", k);
        total += k;
      }
      if (total != dim)
        fail(ErrorCode::kInvalidArgument, "split sizes add up to ", total, " but the input has ", dim, " elements along axis ", axis);
      sizes = std::move(v);
    } else {
      fail(ErrorCode::kInvalidArgument, "split must be a scalar or a 1-D tensor, got shape ", sp->shape().to_string());
    }
  } else {
    sizes.assign(static_cast<size_t>(dim), 1);
    squeeze = !s.flag;
  }
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.dim(d);
    if (d > axis) inner *= x.dim(d);
  }
  std::vector<Tensor> items;
  items.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t len : sizes) {
    Shape shape = x.shape();
    shape[axis] = len;
    if (squeeze) shape.erase(axis);
    Tensor t(x.dtype(), shape);
    for (int64_t o = 0; o < outer; ++o)
      copy_elements(x.dtype(), x.raw_data(), t.raw_data(), len * inner, (o * dim + start) * inner, o * len * inner);
    items.push_back(std::move(t));
    start += len;
  }
  ctx.set_output(0, Value::sequence(std::move(items), x.dtype()));
}

void concat_from_sequence(const AxisState& s, KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  const std::vector<Tensor>& items = seq.items();
  if (items.empty()) fail(ErrorCode::kInvalidArgument, "cannot concatenate an empty sequence");
  const Tensor& f = items.front();
  const int64_t r = static_cast<int64_t>(f.rank()) + (s.flag ? 1 : 0);
  if (s.axis < -r || s.axis >= r)
    fail(ErrorCode::kInvalidArgument, "axis ", s.axis, " is out of range for ", s.flag ? "stacking" : "concatenating", " tensors of shape ",
         f.shape().to_string());
  const size_t axis = static_cast<size_t>(s.axis < 0 ? s.axis + r : s.axis);
  // Each item seen with the new axis inserted (stacking) so both forms concatenate along `axis`.
  auto view_shape = [&](const Tensor& t) {
    Shape v = t.shape();
    if (s.flag) v.insert(axis, 1);
    return v;
  };
  const Shape fs = view_shape(f);
  Shape out_shape = fs;
  out_shape[axis] = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    const Tensor& t = items[k];
    const Shape ts = view_shape(t);
    bool ok = t.dtype() == f.dtype() && ts.size() == fs.size();
    for (size_t d = 0; ok && d < ts.size(); ++d) ok = d == axis || ts[d] == fs[d];
    if (!ok)
      fail(ErrorCode::kInvalidArgument, "sequence element ", k, " is ", dtype_name(t.dtype()), t.shape().to_string(),
           ", which cannot be ", s.flag ? "stacked with " : "concatenated with ", dtype_name(f.dtype()), f.shape().to_string(),
           " along axis ", axis);
    out_shape[axis] += ts[axis];
  }
  Tensor& out = ctx.allocate_output(0, f.dtype(), out_shape);
  int64_t outer = 1;
  for (size_t d = 0; d < axis; ++d) outer *= out_shape[d];
  const int64_t row = outer > 0 ? out.numel() / outer : 0;
  int64_t offset = 0;
  for (const Tensor& t : items) {
    const int64_t chunk = outer > 0 ? t.numel() / outer : 0;
    for (int64_t o = 0; o < outer; ++o) copy_elements(t.dtype(), t.raw_data(), out.raw_data(), chunk, o * chunk, o * row + offset);
    offset += chunk;
  }
}

std::unique_ptr<Kernel> make_split_to_sequence(const KernelCreateInfo& info) {
  return make_fn_kernel(AxisState{info.node.attr_int("axis", 0), info.node.attr_int("keepdims", 1) != 0}, split_to_sequence);
}

std::unique_ptr<Kernel> make_concat_from_sequence(const KernelCreateInfo& info) {
  if (!info.node.has_attr("axis")) fail(ErrorCode::kInvalidGraph, info.node.label(), ": the attribute 'axis' is required");
  return make_fn_kernel(AxisState{info.node.attr_int("axis", 0), info.node.attr_int("new_axis", 0) != 0}, concat_from_sequence);
}

// ---------------------------------------------------------------------------------------------
// SequenceMap

class SequenceMapKernel final : public Kernel {
 public:
  explicit SequenceMapKernel(const KernelCreateInfo& info) {
    const Graph* g = info.node.attr_graph("body");
    if (!g) fail(ErrorCode::kInvalidGraph, info.node.label(), ": the graph attribute 'body' is missing");
    body_graph_ = g;
    if (g->inputs.size() != info.node.inputs.size() || g->outputs.size() != info.node.outputs.size())
      fail(ErrorCode::kInvalidGraph, info.node.label(), ": the body takes ", g->inputs.size(), " inputs and returns ", g->outputs.size(),
           " values, but the node has ", info.node.inputs.size(), " inputs and ", info.node.outputs.size(), " outputs");
    for (size_t o = 0; o < g->outputs.size(); ++o) {
      DType dt = g->values[g->outputs[o]].type.elem_dtype();
      if (dt == DType::kUndefined) dt = info.output_dtype(o);
      out_dtypes_.push_back(dt);
    }
    body_ = info.prepare_subgraph(*g);
  }

  void compute(KernelContext& ctx) const override {
    const Value& seq = sequence_input(ctx, 0);
    const size_t n = seq.items().size();
    const size_t n_in = ctx.num_inputs();
    for (size_t i = 1; i < n_in; ++i) {
      const Value& v = ctx.input_value(i);
      if (v.is_sequence() && v.items().size() != n)
        fail(ErrorCode::kInvalidArgument, "input ", i, " is a sequence of ", v.items().size(), " tensors but input 0 has ", n);
      if (!v.is_sequence() && !v.is_tensor())
        fail(ErrorCode::kInvalidArgument, "input ", i, " must be a sequence or a tensor, got a ", describe_value(v));
    }
    const Graph& g = *body_graph_;
    std::vector<std::vector<Tensor>> outs(g.outputs.size());
    for (auto& o : outs) o.reserve(n);
    for (size_t k = 0; k < n; ++k) {
      std::vector<Value> in;
      in.reserve(n_in);
      in.emplace_back(seq.items()[k]);
      for (size_t i = 1; i < n_in; ++i) {
        const Value& v = ctx.input_value(i);
        in.push_back(v.is_sequence() ? Value(v.items()[k]) : v);
      }
      std::vector<Value> r = ctx.run_subgraph(*body_, std::move(in));
      if (r.size() != g.outputs.size())
        fail(ErrorCode::kRuntime, "the body returned ", r.size(), " values, expected ", g.outputs.size());
      for (size_t o = 0; o < r.size(); ++o) {
        if (!r[o].is_tensor())
          fail(ErrorCode::kRuntime, "body output '", g.values[g.outputs[o]].name, "' must be a tensor, got a ", describe_value(r[o]),
               " for element ", k);
        outs[o].push_back(owned_tensor(r[o].tensor()));
      }
    }
    for (size_t o = 0; o < outs.size(); ++o) {
      DType dt = outs[o].empty() ? out_dtypes_[o] : outs[o].front().dtype();
      if (dt == DType::kUndefined) dt = DType::kFloat;
      ctx.set_output(o, Value::sequence(std::move(outs[o]), dt));
    }
  }

 private:
  const Graph* body_graph_ = nullptr;
  std::shared_ptr<PreparedSubgraph> body_;
  std::vector<DType> out_dtypes_;
};

std::unique_ptr<Kernel> make_sequence_map(const KernelCreateInfo& info) { return std::make_unique<SequenceMapKernel>(info); }

// ---------------------------------------------------------------------------------------------
// Optionals

struct OptionalState {
  DType elem = DType::kUndefined;
  bool of_sequence = false;
};

std::unique_ptr<Kernel> make_optional(const KernelCreateInfo& info) {
  OptionalState s;
  if (const Attribute* a = info.node.attr("type"); a && a->type == AttrType::kTypeProto) {
    s.elem = a->tp.elem_dtype();
    s.of_sequence = a->tp.kind == TypeInfo::Kind::kSequence;
  } else if (!info.node.has_input(0)) {
    fail(ErrorCode::kInvalidGraph, info.node.label(), ": without an input, the attribute 'type' is required");
  }
  return make_fn_kernel(s, +[](const OptionalState& st, KernelContext& ctx) {
    if (ctx.has_input(0)) {
      const Value& v = ctx.input_value(0);
      if (!v.is_tensor() && !v.is_sequence())
        fail(ErrorCode::kInvalidArgument, "the input must be a tensor or a sequence, got a ", describe_value(v));
      ctx.set_output(0, Value::optional_of(owned_value(v)));
    } else {
      ctx.set_output(0, Value::optional_none(st.elem, st.of_sequence));
    }
  });
}

void optional_has_element(const int&, KernelContext& ctx) {
  bool has = false;
  if (ctx.has_input(0)) {
    const Value& v = ctx.input_value(0);
    has = v.is_optional() ? v.has_element() : true;
  }
  ctx.allocate_output(0, DType::kBool, Shape{}).data<bool>()[0] = has;
}

void optional_get_element(const int&, KernelContext& ctx) {
  const Value& v = ctx.input_value(0);
  const Value* e = &v;
  if (v.is_optional()) {
    if (!v.has_element()) fail(ErrorCode::kInvalidArgument, "the optional input is empty");
    e = &v.element();
  }
  if (e->is_tensor())
    emit_tensor(ctx, 0, e->tensor(), "the optional's element");
  else
    ctx.set_output(0, *e);
}

std::unique_ptr<Kernel> make_fn(void (*fn)(const int&, KernelContext&)) { return make_fn_kernel(0, fn); }
#define FN_FACTORY(name, fn) \
  std::unique_ptr<Kernel> name(const KernelCreateInfo&) { return make_fn(fn); }
FN_FACTORY(make_sequence_construct, sequence_construct)
FN_FACTORY(make_sequence_insert, sequence_insert)
FN_FACTORY(make_sequence_at, sequence_at)
FN_FACTORY(make_sequence_erase, sequence_erase)
FN_FACTORY(make_sequence_length, sequence_length)
FN_FACTORY(make_optional_has_element, optional_has_element)
FN_FACTORY(make_optional_get_element, optional_get_element)
#undef FN_FACTORY

const KernelDef kDefs[] = {
    {"", "SequenceEmpty", 11, 99, {}, make_sequence_empty},
    {"", "SequenceConstruct", 11, 99, {}, make_sequence_construct},
    {"", "SequenceInsert", 11, 99, {}, make_sequence_insert},
    {"", "SequenceAt", 11, 99, {}, make_sequence_at},
    {"", "SequenceErase", 11, 99, {}, make_sequence_erase},
    {"", "SequenceLength", 11, 99, {}, make_sequence_length},
    {"", "SplitToSequence", 11, 99, {}, make_split_to_sequence},
    {"", "ConcatFromSequence", 11, 99, {}, make_concat_from_sequence},
    {"", "SequenceMap", 17, 99, {}, make_sequence_map},
    {"", "Optional", 15, 99, {}, make_optional},
    {"", "OptionalHasElement", 15, 99, {}, make_optional_has_element},
    {"", "OptionalGetElement", 15, 99, {}, make_optional_get_element},
};

}  // namespace

std::span<const KernelDef> sequence_kernels() { return kDefs; }

}  // namespace onyx::cpu
