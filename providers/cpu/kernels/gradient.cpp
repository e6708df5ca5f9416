// CPU kernel: ai.onnx.preview.training::Gradient, by reverse-mode differentiation of the part of
// the graph that computes `y` from the tensors named in `xs` and `zs`.
//
// At kernel creation the forward nodes between those tensors (and constants) and `y` are
// collected in topological order; each run re-evaluates them in double precision from the
// Gradient node's own inputs (the values of xs then zs), seeds dy with ones (the gradient of
// sum(y)), and propagates back, summing over broadcast dimensions. The differentiable ops are
// the elementwise arithmetic and activations and 2-D MatMul below; anything else on the path is
// an explicit NotImplemented naming the op.
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {
namespace {

constexpr const char* kDomain = "ai.onnx.preview.training";

/// A dense double tensor.
struct DTensor {
  std::vector<int64_t> shape;
  std::vector<double> v;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

std::vector<int64_t> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const std::string& who) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    const int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (da != db && da != 1 && db != 1)
      fail(ErrorCode::kInvalidArgument, who, ": shapes cannot be broadcast (", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// For each element of a tensor of shape `out`, the index of the element of `in` (broadcast to
/// `out`) it reads.
std::vector<int64_t> broadcast_index(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  const size_t r = out.size();
  std::vector<int64_t> stride(r, 0);
  int64_t s = 1;
  for (size_t k = in.size(); k-- > 0;) {
    const size_t o = k + r - in.size();
    stride[o] = in[k] == 1 ? 0 : s;
    s *= in[k];
  }
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::vector<int64_t> pos(r, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t k = 0; k < r; ++k) off += pos[k] * stride[k];
    idx[i] = off;
    for (size_t k = r; k-- > 0;) {
      if (++pos[k] < out[k]) break;
      pos[k] = 0;
    }
  }
  return idx;
}

/// The gradient with respect to an input of shape `in` from `g` (shape `out`): sums over the
/// broadcast dimensions.
DTensor unbroadcast(const DTensor& g, const std::vector<int64_t>& in) {
  DTensor r{in, {}};
  r.v.assign(static_cast<size_t>(r.numel()), 0.0);
  const auto idx = broadcast_index(in, g.shape);
  for (size_t i = 0; i < idx.size(); ++i) r.v[idx[i]] += g.v[i];
  return r;
}

enum class Op { kAdd, kSub, kMul, kDiv, kNeg, kIdentity, kRelu, kSigmoid, kTanh, kExp, kLog, kSqrt, kMatMul, kConstant };

struct Step {
  Op op;
  std::string name;          // the node's label, for errors
  std::vector<int> inputs;   // value ids of the graph
  int output;
  DTensor constant;          // kConstant
};

struct GradState {
  std::vector<int> leaves;  // value ids of xs then zs (the Gradient node's inputs, in order)
  size_t num_xs = 0;
  std::map<int, DTensor> constants;  // initializers on the path
  std::vector<Step> steps;
  int y = -1;
};

DTensor from_tensor(const Tensor& t, const std::string& who) {
  if (!dtype_is_float(t.dtype()) && !dtype_is_int(t.dtype()))
    fail(ErrorCode::kNotImplemented, who, ": cannot differentiate through a ", dtype_name(t.dtype()), " tensor");
  DTensor d;
  for (size_t i = 0; i < t.shape().size(); ++i) d.shape.push_back(t.shape()[i]);
  d.v.resize(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) d.v[i] = t.element_as_double(i);
  return d;
}

bool op_of(const Node& n, Op* op) {
  if (n.domain == "onyx" && n.op_type == "Copy") {  // a copy between memories inserted by the session
    *op = Op::kIdentity;
    return true;
  }
  if (!n.domain.empty()) return false;
  static const std::map<std::string, Op> ops = {
      {"Add", Op::kAdd},   {"Sub", Op::kSub},         {"Mul", Op::kMul},         {"Div", Op::kDiv},
      {"Neg", Op::kNeg},   {"Identity", Op::kIdentity}, {"Relu", Op::kRelu},     {"Sigmoid", Op::kSigmoid},
      {"Tanh", Op::kTanh}, {"Exp", Op::kExp},         {"Log", Op::kLog},         {"Sqrt", Op::kSqrt},
      {"MatMul", Op::kMatMul}, {"Constant", Op::kConstant}};
  auto it = ops.find(n.op_type);
  if (it == ops.end()) return false;
  *op = it->second;
  return true;
}

DTensor binary(Op op, const DTensor& a, const DTensor& b, const std::string& who) {
  DTensor r{broadcast_shape(a.shape, b.shape, who), {}};
  const auto ia = broadcast_index(a.shape, r.shape), ib = broadcast_index(b.shape, r.shape);
  r.v.resize(ia.size());
  for (size_t i = 0; i < ia.size(); ++i) {
    const double x = a.v[ia[i]], y = b.v[ib[i]];
    r.v[i] = op == Op::kAdd ? x + y : op == Op::kSub ? x - y : op == Op::kMul ? x * y : x / y;
  }
  return r;
}

DTensor matmul(const DTensor& a, const DTensor& b, bool ta, bool tb, const std::string& who) {
  if (a.shape.size() != 2 || b.shape.size() != 2)
    fail(ErrorCode::kNotImplemented, who, ": Gradient differentiates 2-D MatMul only");
  const int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
  const int64_t k2 = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (k != k2) fail(ErrorCode::kInvalidArgument, who, ": MatMul inner dimensions differ (", k, " vs ", k2, ")");
  DTensor r{{m, n}, std::vector<double>(static_cast<size_t>(m * n), 0.0)};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const double x = ta ? a.v[p * a.shape[1] + i] : a.v[i * a.shape[1] + p];
      for (int64_t j = 0; j < n; ++j) r.v[i * n + j] += x * (tb ? b.v[j * b.shape[1] + p] : b.v[p * b.shape[1] + j]);
    }
  return r;
}

DTensor forward(const Step& s, const std::vector<const DTensor*>& in) {
  if (s.op == Op::kConstant) return s.constant;
  if (s.op == Op::kMatMul) return matmul(*in[0], *in[1], false, false, s.name);
  if (in.size() == 2) return binary(s.op, *in[0], *in[1], s.name);
  DTensor r = *in[0];
  for (double& x : r.v) {
    switch (s.op) {
      case Op::kNeg: x = -x; break;
      case Op::kRelu: x = x > 0 ? x : 0; break;
      case Op::kSigmoid: x = 1 / (1 + std::exp(-x)); break;
      case Op::kTanh: x = std::tanh(x); break;
      case Op::kExp: x = std::exp(x); break;
      case Op::kLog: x = std::log(x); break;
      case Op::kSqrt: x = std::sqrt(x); break;
      default: break;  // Identity
    }
  }
  return r;
}

/// Adds to `grads` the contributions of step `s` (output gradient `g`) to its inputs.
void backward(const Step& s, const std::vector<const DTensor*>& in, const DTensor& out, const DTensor& g,
              std::map<int, DTensor>& grads) {
  auto add = [&](int v, DTensor d) {
    auto it = grads.find(v);
    if (it == grads.end()) {
      grads.emplace(v, std::move(d));
      return;
    }
    for (size_t i = 0; i < d.v.size(); ++i) it->second.v[i] += d.v[i];
  };
  switch (s.op) {
    case Op::kConstant: return;
    case Op::kMatMul:
      add(s.inputs[0], matmul(g, *in[1], false, true, s.name));
      add(s.inputs[1], matmul(*in[0], g, true, false, s.name));
      return;
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
    case Op::kDiv: {
      const DTensor& a = *in[0];
      const DTensor& b = *in[1];
      const auto ia = broadcast_index(a.shape, g.shape), ib = broadcast_index(b.shape, g.shape);
      DTensor ga{g.shape, g.v}, gb{g.shape, g.v};
      for (size_t i = 0; i < g.v.size(); ++i) {
        const double x = a.v[ia[i]], y = b.v[ib[i]];
        switch (s.op) {
          case Op::kSub: gb.v[i] = -g.v[i]; break;
          case Op::kMul: ga.v[i] = g.v[i] * y; gb.v[i] = g.v[i] * x; break;
          case Op::kDiv: ga.v[i] = g.v[i] / y; gb.v[i] = -g.v[i] * x / (y * y); break;
          default: break;
        }
      }
      add(s.inputs[0], unbroadcast(ga, a.shape));
      add(s.inputs[1], unbroadcast(gb, b.shape));
      return;
    }
    default: {
      DTensor d = g;
      for (size_t i = 0; i < d.v.size(); ++i) {
        const double x = in[0]->v[i], y = out.v[i];
        switch (s.op) {
          case Op::kNeg: d.v[i] = -g.v[i]; break;
          case Op::kRelu: d.v[i] = x > 0 ? g.v[i] : 0; break;
          case Op::kSigmoid: d.v[i] = g.v[i] * y * (1 - y); break;
          case Op::kTanh: d.v[i] = g.v[i] * (1 - y * y); break;
          case Op::kExp: d.v[i] = g.v[i] * y; break;
          case Op::kLog: d.v[i] = g.v[i] / x; break;
          case Op::kSqrt: d.v[i] = g.v[i] / (2 * y); break;
          default: break;  // Identity
        }
      }
      add(s.inputs[0], std::move(d));
    }
  }
}

void gradient_compute(const GradState& st, KernelContext& ctx) {
  std::map<int, DTensor> val;
  for (size_t i = 0; i < st.leaves.size(); ++i) val[st.leaves[i]] = from_tensor(ctx.input(i), ctx.node().label());
  for (const auto& [v, t] : st.constants) val[v] = t;
  std::vector<std::vector<const DTensor*>> ins(st.steps.size());
  for (size_t k = 0; k < st.steps.size(); ++k) {
    const Step& s = st.steps[k];
    for (int v : s.inputs) ins[k].push_back(&val.at(v));
    DTensor out = forward(s, ins[k]);
    val[s.output] = std::move(out);
  }
  // Pointers into `val` stay valid: std::map nodes do not move.
  std::map<int, DTensor> grads;
  const DTensor& y = val.at(st.y);
  grads[st.y] = DTensor{y.shape, std::vector<double>(y.v.size(), 1.0)};
  for (size_t k = st.steps.size(); k-- > 0;) {
    const Step& s = st.steps[k];
    auto it = grads.find(s.output);
    if (it == grads.end()) continue;
    const DTensor g = it->second;
    backward(s, ins[k], val.at(s.output), g, grads);
  }
  for (size_t i = 0; i < st.num_xs && i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    const Tensor& x = ctx.input(i);
    Tensor& out = ctx.allocate_output(i, x.dtype(), x.shape());
    auto it = grads.find(st.leaves[i]);
    for (int64_t e = 0; e < out.numel(); ++e) {
      const double d = it == grads.end() ? 0.0 : it->second.v[e];
      if (x.dtype() == DType::kDouble) out.data<double>()[e] = d;
      else out.data<float>()[e] = static_cast<float>(d);
    }
  }
}

std::unique_ptr<Kernel> make_gradient(const KernelCreateInfo& info) {
  const Node& n = info.node;
  const Graph& g = info.graph;
  const std::string who = n.label();
  const auto xs = n.attr_strings("xs");
  const auto zs = n.attr_strings("zs");
  const std::string yname = n.attr_string("y");
  if (xs.empty()) fail(ErrorCode::kInvalidGraph, who, ": attribute 'xs' is required");
  if (yname.empty()) fail(ErrorCode::kInvalidGraph, who, ": attribute 'y' is required");
  if (n.inputs.size() != xs.size() + zs.size())
    fail(ErrorCode::kInvalidGraph, who, ": has ", n.inputs.size(), " inputs but xs and zs name ", xs.size() + zs.size());
  if (n.outputs.size() > xs.size())
    fail(ErrorCode::kInvalidGraph, who, ": has ", n.outputs.size(), " outputs but xs names ", xs.size(), " tensors");
  GradState st;
  st.num_xs = xs.size();
  std::set<int> leaf_set;
  for (const auto& list : {xs, zs})
    for (const auto& name : list) {
      const int v = g.find(name);
      if (v < 0) fail(ErrorCode::kInvalidGraph, who, ": '", name, "' (in xs or zs) is not a value of the graph");
      st.leaves.push_back(v);
      leaf_set.insert(v);
    }
  for (size_t i = 0; i < st.leaves.size(); ++i)
    if (n.inputs[i] != st.leaves[i])
      fail(ErrorCode::kInvalidGraph, who, ": input ", i, " must be '", g.values[st.leaves[i]].name,
           "' (the tensors of xs then zs, in order)");
  st.y = g.find(yname);
  if (st.y < 0) fail(ErrorCode::kInvalidGraph, who, ": y '", yname, "' is not a value of the graph");
  // The nodes y depends on, back to the leaves and constants; then in graph (topological) order.
  std::set<int> needed_nodes;
  std::vector<int> stack = {st.y};
  std::set<int> seen;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second || leaf_set.count(v)) continue;
    const ValueSlot& slot = g.values[v];
    if (slot.has_initializer && !slot.is_graph_input) {
      st.constants[v] = from_tensor(slot.initializer, who);
      continue;
    }
    if (slot.producer < 0)
      fail(ErrorCode::kInvalidGraph, who, ": y depends on '", slot.name, "', which is neither in xs nor zs nor a constant");
    needed_nodes.insert(slot.producer);
    for (int in : g.nodes[slot.producer].inputs)
      if (in >= 0) stack.push_back(in);
  }
  for (int i : needed_nodes) {
    const Node& f = g.nodes[i];
    Step s;
    if (!op_of(f, &s.op))
      fail(ErrorCode::kNotImplemented, who, ": cannot differentiate ", f.label(), " (Gradient supports Add, Sub, Mul, Div, "
           "Neg, Identity, Relu, Sigmoid, Tanh, Exp, Log, Sqrt, 2-D MatMul and Constant)");
    s.name = f.label();
    s.output = f.outputs.empty() ? -1 : f.outputs[0];
    const size_t arity = s.op == Op::kConstant ? 0
                         : (s.op == Op::kAdd || s.op == Op::kSub || s.op == Op::kMul || s.op == Op::kDiv || s.op == Op::kMatMul) ? 2
                                                                                                                                : 1;
    if (f.inputs.size() != arity || s.output < 0)
      fail(ErrorCode::kNotImplemented, who, ": cannot differentiate ", f.label(), " with ", f.inputs.size(), " inputs");
    s.inputs = f.inputs;
    if (s.op == Op::kConstant) {
      const Tensor* t = f.attr_tensor("value");
      if (!t) fail(ErrorCode::kNotImplemented, who, ": ", f.label(), ": only Constant with a 'value' tensor is supported");
      s.constant = from_tensor(*t, who);
    }
    st.steps.push_back(std::move(s));
  }
  return make_fn_kernel(std::move(st), gradient_compute);
}

using namespace types;
constexpr TypeMask kFD = type_mask({DType::kFloat, DType::kDouble});

const KernelDef kDefs[] = {
    {kDomain, "Gradient", 1, 99, {{0, kFD}}, make_gradient},
};

}  // namespace

std::span<const KernelDef> gradient_kernels() { return kDefs; }

}  // namespace onyx::cpu
