// CPU kernels: control_flow family (If, Loop, Scan). Bodies run through the executor
// (ctx.run_subgraph), which binds their outer-scope values from this node's frame. These nodes
// always run in dynamic mode: every output is set here.
#include <string>

#include "kernels/common.hpp"
#include "kernels/control_flow.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {
namespace {

const Graph& graph_attr(const KernelCreateInfo& info, const char* name) {
  const Graph* g = info.node.attr_graph(name);
  if (!g) fail(ErrorCode::kInvalidGraph, info.node.label(), ": the graph attribute '", name, "' is missing");
  return *g;
}

std::string output_name(const Graph& g, size_t i) { return "'" + g.values[g.outputs[i]].name + "'"; }

bool read_condition(const Tensor& t, const char* what) {
  if (t.numel() != 1) fail(ErrorCode::kInvalidArgument, what, " must hold exactly one value, got shape ", t.shape().to_string());
  if (t.dtype() == DType::kBool) return t.data<bool>()[0];
  if (t.dtype() == DType::kString) fail(ErrorCode::kInvalidArgument, what, " must be bool, got string");
  return t.element_as_double(0) != 0;
}

/// The shape of `x` without dim `axis`, and element `index` along it copied out.
Tensor take(const Tensor& x, size_t axis, int64_t index) {
  Shape s = x.shape();
  const int64_t len = s[axis];
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < s.size(); ++d)
    if (d != axis) (d < axis ? outer : inner) *= s[d];
  s.erase(axis);
  Tensor r(x.dtype(), s);
  for (int64_t o = 0; o < outer; ++o) copy_elements(x.dtype(), x.raw_data(), r.raw_data(), inner, (o * len + index) * inner, o * inner);
  return r;
}

/// Copies `item` into `out` at position `index` of dim `axis` (out's shape is item's with that dim inserted).
void place(Tensor& out, size_t axis, int64_t index, const Tensor& item) {
  const Shape& s = out.shape();
  const int64_t len = s[axis];
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < s.size(); ++d)
    if (d != axis) (d < axis ? outer : inner) *= s[d];
  for (int64_t o = 0; o < outer; ++o)
    copy_elements(out.dtype(), item.raw_data(), out.raw_data(), inner, o * inner, (o * len + index) * inner);
}

/// What a scan output looks like when no iteration produced an element: the body output's
/// inferred type, unknown dims taken as 0.
struct EmptyScan {
  DType dtype = DType::kFloat;
  Shape elem;
};

EmptyScan empty_scan_of(const Graph& body, size_t out_index, DType fallback) {
  EmptyScan e;
  const TypeInfo& t = body.values[body.outputs[out_index]].type;
  e.dtype = t.elem_dtype() != DType::kUndefined ? t.elem_dtype() : fallback != DType::kUndefined ? fallback : DType::kFloat;
  if (t.is_tensor() && t.has_shape)
    for (int64_t d : t.shape) e.elem.push_back(d >= 0 ? d : 0);
  return e;
}

/// Checks a loop-carried value / state variable coming out of the body against the one that went in.
void check_carried(const Value& in, const Value& out, const Graph& body, size_t out_index, const char* what, size_t k,
                   int64_t iteration) {
  if (out.is_none())
    fail(ErrorCode::kRuntime, "body output ", output_name(body, out_index), " (", what, " ", k, ") produced no value at iteration ",
         iteration);
  const bool bad = (in.is_tensor() && (!out.is_tensor() || out.tensor().dtype() != in.tensor().dtype())) ||
                   (in.is_sequence() && !out.is_sequence());
  if (bad)
    fail(ErrorCode::kRuntime, "body output ", output_name(body, out_index), " (", what, " ", k, ") is a ", describe_value(out),
         " at iteration ", iteration, ", but the value going in is a ", describe_value(in));
}

/// Collects the elements of one scan output, checking they all have the same type and shape.
void collect_scan(std::vector<Tensor>& into, const Value& v, const Graph& body, size_t out_index, size_t j, int64_t iteration) {
  if (!v.is_tensor())
    fail(ErrorCode::kRuntime, "body output ", output_name(body, out_index), " (scan output ", j, ") must be a tensor, got a ",
         describe_value(v), " at iteration ", iteration);
  const Tensor& t = v.tensor();
  if (!into.empty()) {
    const Tensor& f = into.front();
    if (f.dtype() != t.dtype() || !(f.shape() == t.shape()))
      fail(ErrorCode::kRuntime, "body output ", output_name(body, out_index), " (scan output ", j, ") is ", dtype_name(t.dtype()),
           t.shape().to_string(), " at iteration ", iteration, " but was ", dtype_name(f.dtype()), f.shape().to_string(),
           " before; scan outputs must keep their shape");
  }
  into.push_back(t);
}

// ---------------------------------------------------------------------------------------------
// If

class IfKernel final : public Kernel {
 public:
  explicit IfKernel(const KernelCreateInfo& info)
      : then_graph_(graph_attr(info, "then_branch")), else_graph_(graph_attr(info, "else_branch")) {
    then_ = info.prepare_subgraph(then_graph_);
    else_ = info.prepare_subgraph(else_graph_);
  }

  void compute(KernelContext& ctx) const override {
    const bool cond = read_condition(ctx.input(0), "cond");
    const Graph& g = cond ? then_graph_ : else_graph_;
    const char* which = cond ? "then_branch" : "else_branch";
    std::vector<Value> outs = ctx.run_subgraph(cond ? *then_ : *else_, {});
    if (outs.size() < ctx.num_outputs())
      fail(ErrorCode::kRuntime, which, " returned ", outs.size(), " values for ", ctx.num_outputs(), " outputs");
    for (size_t i = 0; i < ctx.num_outputs(); ++i) {
      if (!ctx.has_output(i)) continue;
      if (outs[i].is_none()) fail(ErrorCode::kRuntime, which, " output ", output_name(g, i), " produced no value");
      ctx.set_output(i, owned_value(outs[i]));
    }
  }

 private:
  const Graph& then_graph_;
  const Graph& else_graph_;
  std::shared_ptr<PreparedSubgraph> then_, else_;
};

// ---------------------------------------------------------------------------------------------
// Loop

class LoopKernel final : public Kernel {
 public:
  explicit LoopKernel(const KernelCreateInfo& info) : body_graph_(graph_attr(info, "body")) {
    const Node& n = info.node;
    n_carried_ = n.inputs.size() > 2 ? n.inputs.size() - 2 : 0;
    if (body_graph_.inputs.size() != n_carried_ + 2 || body_graph_.outputs.size() < n_carried_ + 1)
      fail(ErrorCode::kInvalidGraph, n.label(), ": the body takes ", body_graph_.inputs.size(), " inputs and returns ",
           body_graph_.outputs.size(), " values; with ", n_carried_, " loop-carried values it needs ", n_carried_ + 2,
           " inputs and at least ", n_carried_ + 1, " outputs");
    n_scan_ = body_graph_.outputs.size() - 1 - n_carried_;
    if (n.outputs.size() != n_carried_ + n_scan_)
      fail(ErrorCode::kInvalidGraph, n.label(), ": the node has ", n.outputs.size(), " outputs but its body gives ", n_carried_,
           " loop-carried values and ", n_scan_, " scan outputs");
    for (size_t j = 0; j < n_scan_; ++j)
      empty_.push_back(empty_scan_of(body_graph_, 1 + n_carried_ + j, info.output_dtype(n_carried_ + j)));
    body_ = info.prepare_subgraph(body_graph_);
  }

  void compute(KernelContext& ctx) const override {
    const bool has_m = ctx.has_input(0), has_cond = ctx.has_input(1);
    const int64_t trip = has_m ? read_index(ctx.input(0), "the trip count M") : 0;
    bool cond = has_cond ? read_condition(ctx.input(1), "the loop condition") : true;
    std::vector<Value> carried(n_carried_);
    for (size_t k = 0; k < n_carried_; ++k)
      if (ctx.has_input(2 + k)) carried[k] = ctx.input_value(2 + k);
    std::vector<std::vector<Tensor>> scans(n_scan_);

    int64_t i = 0;
    for (; (!has_m || i < trip) && cond; ++i) {
      std::vector<Value> in;
      in.reserve(2 + n_carried_);
      in.emplace_back(Tensor::scalar<int64_t>(i));
      in.emplace_back(Tensor::scalar<bool>(cond));
      for (const Value& v : carried) in.push_back(v);
      std::vector<Value> out = ctx.run_subgraph(*body_, std::move(in));
      if (out.size() != 1 + n_carried_ + n_scan_)
        fail(ErrorCode::kRuntime, "the body returned ", out.size(), " values, expected ", 1 + n_carried_ + n_scan_);
      if (!out[0].is_tensor())
        fail(ErrorCode::kRuntime, "body output ", output_name(body_graph_, 0), " (the loop condition) must be a bool tensor, got a ",
             describe_value(out[0]), " at iteration ", i);
      if (has_cond) cond = read_condition(out[0].tensor(), "the loop condition returned by the body");
      for (size_t k = 0; k < n_carried_; ++k) {
        check_carried(carried[k], out[1 + k], body_graph_, 1 + k, "loop-carried value", k, i);
        carried[k] = std::move(out[1 + k]);
      }
      for (size_t j = 0; j < n_scan_; ++j) collect_scan(scans[j], out[1 + n_carried_ + j], body_graph_, 1 + n_carried_ + j, j, i);
    }

    for (size_t k = 0; k < n_carried_; ++k) {
      if (!ctx.has_output(k)) continue;
      if (carried[k].is_none())
        fail(ErrorCode::kRuntime, "loop-carried value ", k, " has no value (its initial value is missing and the loop ran ", i,
             " iterations)");
      ctx.set_output(k, owned_value(carried[k]));
    }
    for (size_t j = 0; j < n_scan_; ++j) {
      if (!ctx.has_output(n_carried_ + j)) continue;
      const std::vector<Tensor>& items = scans[j];
      Shape shape = items.empty() ? empty_[j].elem : items.front().shape();
      shape.insert(0, static_cast<int64_t>(items.size()));
      Tensor out(items.empty() ? empty_[j].dtype : items.front().dtype(), shape);
      const int64_t n = items.empty() ? 0 : items.front().numel();
      for (size_t t = 0; t < items.size(); ++t)
        copy_elements(out.dtype(), items[t].raw_data(), out.raw_data(), n, 0, static_cast<int64_t>(t) * n);
      ctx.set_output(n_carried_ + j, Value(std::move(out)));
    }
  }

 private:
  const Graph& body_graph_;
  std::shared_ptr<PreparedSubgraph> body_;
  size_t n_carried_ = 0, n_scan_ = 0;
  std::vector<EmptyScan> empty_;
};

// ---------------------------------------------------------------------------------------------
// Scan

class ScanKernel final : public Kernel {
 public:
  explicit ScanKernel(const KernelCreateInfo& info) : body_graph_(graph_attr(info, "body")) {
    const Node& n = info.node;
    v8_ = n.opset < 9;
    first_ = v8_ ? 1 : 0;
    const int64_t m = n.attr_int("num_scan_inputs", -1);
    if (m < 1 || first_ + static_cast<size_t>(m) > n.inputs.size())
      fail(ErrorCode::kInvalidGraph, n.label(), ": num_scan_inputs is ", m, "; it must be between 1 and the number of inputs");
    n_scan_in_ = static_cast<size_t>(m);
    n_state_ = n.inputs.size() - first_ - n_scan_in_;
    if (body_graph_.inputs.size() != n_state_ + n_scan_in_ || body_graph_.outputs.size() < n_state_ ||
        n.outputs.size() != body_graph_.outputs.size())
      fail(ErrorCode::kInvalidGraph, n.label(), ": the body takes ", body_graph_.inputs.size(), " inputs and returns ",
           body_graph_.outputs.size(), " values, which does not fit ", n_state_, " state variables, ", n_scan_in_,
           " scan inputs and ", n.outputs.size(), " outputs");
    n_scan_out_ = body_graph_.outputs.size() - n_state_;
    auto ints = [&](const char* name, size_t count, int64_t dflt) {
      std::vector<int64_t> v = n.attr_ints(name);
      if (v.empty()) v.assign(count, dflt);
      if (v.size() != count)
        fail(ErrorCode::kInvalidGraph, n.label(), ": attribute '", name, "' has ", v.size(), " entries; expected ", count);
      return v;
    };
    in_dirs_ = ints(v8_ ? "directions" : "scan_input_directions", n_scan_in_, 0);
    if (!v8_) {
      in_axes_ = ints("scan_input_axes", n_scan_in_, 0);
      out_axes_ = ints("scan_output_axes", n_scan_out_, 0);
      out_dirs_ = ints("scan_output_directions", n_scan_out_, 0);
    }
    for (size_t j = 0; j < n_scan_out_; ++j)
      empty_.push_back(empty_scan_of(body_graph_, n_state_ + j, info.output_dtype(n_state_ + j)));
    body_ = info.prepare_subgraph(body_graph_);
  }

  void compute(KernelContext& ctx) const override {
    if (v8_)
      compute_batched(ctx);
    else
      compute_plain(ctx);
  }

 private:
  const Tensor& scan_input(KernelContext& ctx, size_t j) const {
    const Value& v = ctx.input_value(first_ + n_state_ + j);
    if (!v.is_tensor()) fail(ErrorCode::kInvalidArgument, "scan input ", j, " must be a tensor, got a ", describe_value(v));
    return v.tensor();
  }

  std::vector<Value> run_body(KernelContext& ctx, std::vector<Value> in) const {
    std::vector<Value> out = ctx.run_subgraph(*body_, std::move(in));
    if (out.size() != n_state_ + n_scan_out_)
      fail(ErrorCode::kRuntime, "the body returned ", out.size(), " values, expected ", n_state_ + n_scan_out_);
    return out;
  }

  // Scan-9 and later: no batch axis, per-input scan axes and directions.
  void compute_plain(KernelContext& ctx) const {
    int64_t len = -1;
    std::vector<size_t> axes(n_scan_in_);
    for (size_t j = 0; j < n_scan_in_; ++j) {
      const Tensor& x = scan_input(ctx, j);
      const int64_t r = static_cast<int64_t>(x.rank());
      int64_t a = in_axes_[j];
      if (a < -r || a >= r)
        fail(ErrorCode::kInvalidArgument, "scan_input_axes[", j, "] = ", a, " is out of range for scan input ", j, " of shape ",
             x.shape().to_string());
      if (a < 0) a += r;
      axes[j] = static_cast<size_t>(a);
      const int64_t d = x.dim(axes[j]);
      if (len >= 0 && d != len)
        fail(ErrorCode::kInvalidArgument, "scan input ", j, " has ", d, " elements along its scan axis but scan input 0 has ", len);
      len = d;
    }
    std::vector<Value> states(n_state_);
    for (size_t k = 0; k < n_state_; ++k) states[k] = ctx.input_value(first_ + k);
    std::vector<std::vector<Tensor>> scans(n_scan_out_);
    for (int64_t t = 0; t < len; ++t) {
      std::vector<Value> in;
      in.reserve(n_state_ + n_scan_in_);
      for (const Value& s : states) in.push_back(s);
      for (size_t j = 0; j < n_scan_in_; ++j) in.emplace_back(take(scan_input(ctx, j), axes[j], in_dirs_[j] ? len - 1 - t : t));
      std::vector<Value> out = run_body(ctx, std::move(in));
      for (size_t k = 0; k < n_state_; ++k) {
        check_carried(states[k], out[k], body_graph_, k, "state variable", k, t);
        states[k] = std::move(out[k]);
      }
      for (size_t j = 0; j < n_scan_out_; ++j) collect_scan(scans[j], out[n_state_ + j], body_graph_, n_state_ + j, j, t);
    }
    for (size_t k = 0; k < n_state_; ++k) ctx.set_output(k, owned_value(states[k]));
    for (size_t j = 0; j < n_scan_out_; ++j) {
      if (!ctx.has_output(n_state_ + j)) continue;
      const std::vector<Tensor>& items = scans[j];
      Shape shape = items.empty() ? empty_[j].elem : items.front().shape();
      const int64_t r = static_cast<int64_t>(shape.size()) + 1;
      int64_t a = out_axes_[j];
      if (a < -r || a >= r)
        fail(ErrorCode::kInvalidArgument, "scan_output_axes[", j, "] = ", a, " is out of range for scan output ", j, " of rank ", r);
      if (a < 0) a += r;
      shape.insert(static_cast<size_t>(a), len);
      Tensor out(items.empty() ? empty_[j].dtype : items.front().dtype(), shape);
      for (int64_t t = 0; t < static_cast<int64_t>(items.size()); ++t)
        place(out, static_cast<size_t>(a), out_dirs_[j] ? len - 1 - t : t, items[t]);
      ctx.set_output(n_state_ + j, Value(std::move(out)));
    }
  }

  // Scan-8: every input and output has a leading batch axis; scan inputs are [batch, sequence, ...];
  // optional per-batch sequence lengths (scan outputs past a batch's length stay zero).
  void compute_batched(KernelContext& ctx) const {
    int64_t batch = -1, max_len = -1;
    auto note = [&](int64_t d, int64_t& into, const char* what, const char* input) {
      if (into >= 0 && d != into) fail(ErrorCode::kInvalidArgument, input, " has ", what, " ", d, ", another input has ", into);
      into = d;
    };
    for (size_t k = 0; k < n_state_; ++k) {
      const Value& v = ctx.input_value(first_ + k);
      if (!v.is_tensor() || v.tensor().rank() < 1)
        fail(ErrorCode::kInvalidArgument, "state variable ", k, " must be a tensor with a leading batch axis, got a ", describe_value(v));
      note(v.tensor().dim(0), batch, "batch size", "a state variable");
    }
    for (size_t j = 0; j < n_scan_in_; ++j) {
      const Tensor& x = scan_input(ctx, j);
      if (x.rank() < 2)
        fail(ErrorCode::kInvalidArgument, "scan input ", j, " must be [batch, sequence, ...], got shape ", x.shape().to_string());
      note(x.dim(0), batch, "batch size", "a scan input");
      note(x.dim(1), max_len, "sequence length", "a scan input");
    }
    std::vector<int64_t> lens(static_cast<size_t>(batch), max_len);
    if (const Tensor* sl = ctx.optional_input(0)) {
      std::vector<int64_t> v = read_ints(*sl, "sequence_lens");
      if (static_cast<int64_t>(v.size()) != batch)
        fail(ErrorCode::kInvalidArgument, "sequence_lens has ", v.size(), " entries for a batch of ", batch);
      for (size_t b = 0; b < v.size(); ++b) {
        if (v[b] < 0 || v[b] > max_len)
          fail(ErrorCode::kInvalidArgument, "sequence_lens[", b, "] = ", v[b], " is outside [0, ", max_len, "]");
        lens[b] = v[b];
      }
    }
    std::vector<std::vector<Tensor>> final_states(n_state_);
    std::vector<std::vector<Tensor>> scans(n_scan_out_, std::vector<Tensor>(static_cast<size_t>(batch * max_len)));
    std::vector<Tensor> first_item(n_scan_out_);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Value> states(n_state_);
      for (size_t k = 0; k < n_state_; ++k) states[k] = Value(take(ctx.input(first_ + k), 0, b));
      std::vector<Tensor> rows(n_scan_in_);
      for (size_t j = 0; j < n_scan_in_; ++j) rows[j] = take(scan_input(ctx, j), 0, b);
      const int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t t = 0; t < len; ++t) {
        std::vector<Value> in;
        in.reserve(n_state_ + n_scan_in_);
        for (const Value& s : states) in.push_back(s);
        for (size_t j = 0; j < n_scan_in_; ++j) in.emplace_back(take(rows[j], 0, in_dirs_[j] ? len - 1 - t : t));
        std::vector<Value> out = run_body(ctx, std::move(in));
        for (size_t k = 0; k < n_state_; ++k) {
          check_carried(states[k], out[k], body_graph_, k, "state variable", k, t);
          states[k] = std::move(out[k]);
        }
        for (size_t j = 0; j < n_scan_out_; ++j) {
          std::vector<Tensor> one;
          if (first_item[j].defined()) one.push_back(first_item[j]);
          collect_scan(one, out[n_state_ + j], body_graph_, n_state_ + j, j, t);
          if (!first_item[j].defined()) first_item[j] = one.back();
          scans[j][static_cast<size_t>(b * max_len + t)] = one.back();
        }
      }
      for (size_t k = 0; k < n_state_; ++k) {
        const Value& s = states[k];
        if (!s.is_tensor()) fail(ErrorCode::kRuntime, "state variable ", k, " must stay a tensor in Scan-8");
        if (!final_states[k].empty() && !(final_states[k].front().shape() == s.tensor().shape()))
          fail(ErrorCode::kRuntime, "state variable ", k, " ends as ", s.tensor().shape().to_string(), " for batch ", b, " but as ",
               final_states[k].front().shape().to_string(), " for batch 0");
        final_states[k].push_back(s.tensor());
      }
    }
    for (size_t k = 0; k < n_state_; ++k) {
      if (batch == 0) {
        ctx.set_output(k, owned_value(ctx.input_value(first_ + k)));
        continue;
      }
      const Tensor& f = final_states[k].front();
      Shape shape = f.shape();
      shape.insert(0, batch);
      Tensor out(f.dtype(), shape);
      for (int64_t b = 0; b < batch; ++b) place(out, 0, b, final_states[k][static_cast<size_t>(b)]);
      ctx.set_output(k, Value(std::move(out)));
    }
    for (size_t j = 0; j < n_scan_out_; ++j) {
      if (!ctx.has_output(n_state_ + j)) continue;
      const bool any = first_item[j].defined();
      Shape shape = any ? first_item[j].shape() : empty_[j].elem;
      shape.insert(0, max_len);
      shape.insert(0, batch);
      Tensor out(any ? first_item[j].dtype() : empty_[j].dtype, shape);
      const int64_t n = any ? first_item[j].numel() : 0;
      for (size_t p = 0; p < scans[j].size(); ++p)
        if (scans[j][p].defined()) copy_elements(out.dtype(), scans[j][p].raw_data(), out.raw_data(), n, 0, static_cast<int64_t>(p) * n);
      ctx.set_output(n_state_ + j, Value(std::move(out)));
    }
  }

  const Graph& body_graph_;
  std::shared_ptr<PreparedSubgraph> body_;
  bool v8_ = false;
  size_t first_ = 0, n_state_ = 0, n_scan_in_ = 0, n_scan_out_ = 0;
  std::vector<int64_t> in_dirs_, in_axes_, out_axes_, out_dirs_;
  std::vector<EmptyScan> empty_;
};

template <class K>
std::unique_ptr<Kernel> make(const KernelCreateInfo& info) {
  return std::make_unique<K>(info);
}

const KernelDef kDefs[] = {
    {"", "If", 1, 99, {}, make<IfKernel>},
    {"", "Loop", 1, 99, {}, make<LoopKernel>},
    {"", "Scan", 8, 99, {}, make<ScanKernel>},
};

}  // namespace

std::span<const KernelDef> control_flow_kernels() { return kDefs; }

}  // namespace onyx::cpu
