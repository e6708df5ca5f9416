// The transpose optimizer. One walk over the nodes in order, knowing for each value made by a
// Transpose which value and perm it came from:
//   - a Transpose of a Transpose reads the first one's input with the composed perm; when that
//     is the identity its readers read the original value (the pair cancels); a second Transpose
//     of the same value with the same perm is replaced by the first;
//   - a layout-agnostic op whose data inputs are all Transposes with one perm P (constants are
//     permuted to match, scalars left alone) runs on the untransposed values instead, and one
//     Transpose P after it gives the original output. Done only where a Transpose it reads dies
//     with it (so the count of transposes never grows) and where every transposed input has the
//     output's shape (so the moved Transpose is no bigger).
// Transposes left without readers are removed by eliminate_dead_nodes.
#include <algorithm>
#include <map>
#include <set>

#include "core/common.hpp"
#include "ops/layout.hpp"
#include "optimizer/passes.hpp"

namespace onyx {

namespace {

using Perm = std::vector<int64_t>;

bool is_identity(const Perm& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}
/// T_q(T_p(x)) = T_r(x) with r[i] = p[q[i]] (ONNX Transpose: output dim i is input dim perm[i]).
Perm compose(const Perm& p, const Perm& q) {
  Perm r(q.size());
  for (size_t i = 0; i < q.size(); ++i) r[i] = p[static_cast<size_t>(q[i])];
  return r;
}
Perm inverse(const Perm& p) {
  Perm r(p.size());
  for (size_t i = 0; i < p.size(); ++i) r[static_cast<size_t>(p[i])] = static_cast<int64_t>(i);
  return r;
}
Shape permute(const Shape& s, const Perm& p) {
  Shape r;
  for (int64_t k : p) r.push_back(s[static_cast<size_t>(k)]);
  return r;
}

/// The perm of a plain single-output Transpose node (its default, reversal, needs the rank).
bool transpose_perm(const Graph& g, const Node& n, Perm* p) {
  if (!n.domain.empty() || n.op_type != "Transpose" || !n.implicit_inputs.empty() || !n.has_input(0) ||
      n.outputs.size() != 1 || n.outputs[0] < 0)
    return false;
  const TypeInfo& t = g.values[n.inputs[0]].type;
  const bool ranked = t.is_tensor() && t.has_shape;
  *p = n.attr_ints("perm");
  if (p->empty()) {
    if (!ranked) return false;
    for (size_t k = t.shape.size(); k-- > 0;) p->push_back(static_cast<int64_t>(k));
  }
  if (ranked && t.shape.size() != p->size()) return false;
  std::vector<char> seen(p->size(), 0);
  for (int64_t k : *p) {
    if (k < 0 || k >= static_cast<int64_t>(p->size()) || seen[static_cast<size_t>(k)]) return false;
    seen[static_cast<size_t>(k)] = 1;
  }
  return true;
}

void set_perm(Node& n, const Perm& p) {
  for (Attribute& a : n.attrs)
    if (a.name == "perm") {
      a.type = AttrType::kInts;
      a.ints = p;
      return;
    }
  Attribute a;
  a.name = "perm";
  a.type = AttrType::kInts;
  a.ints = p;
  n.attrs.push_back(std::move(a));
}

enum class Kind { kNone, kUnary, kBroadcast, kAxis, kReduce };

/// How an op commutes with a transpose of its data. kUnary: input 0 is the data, the others are
/// scalars; kBroadcast: every input is data (the data_input() ones, for ONNX Runtime's quantized
/// ops), broadcast numpy-style; kAxis: Concat and the Softmax family (an axis to remap); kReduce:
/// Reduce* keeping dims (axes to remap).
Kind kind_of(const Node& n) {
  if (!n.implicit_inputs.empty() || n.outputs.size() != 1 || n.outputs[0] < 0) return Kind::kNone;
  const std::string& op = n.op_type;
  if (n.domain == "com.microsoft") {
    // 8-bit ops whose scales and zero points are per tensor (they must be layout-free scalars).
    if (op == "QLinearSigmoid" || op == "QLinearLeakyRelu") return Kind::kUnary;
    if (op == "QLinearAdd" || op == "QLinearMul") return Kind::kBroadcast;
    if (op == "QLinearConcat") return Kind::kAxis;
    return Kind::kNone;
  }
  if (!n.domain.empty()) return Kind::kNone;
  static const std::set<std::string> unary = {
      "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cast", "Ceil", "Celu", "Clip", "Cos", "Cosh", "Elu",
      "Erf", "Exp", "Floor", "Gelu", "HardSigmoid", "HardSwish", "IsInf", "IsNaN", "LeakyRelu", "Log", "Mish", "Neg",
      "Not", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt",
      "Tan", "Tanh", "ThresholdedRelu", "QuantizeLinear", "DequantizeLinear"};
  // Multidirectional broadcasting from opset 7 (8 for the variadic ones); earlier versions had
  // the broadcast / axis attributes instead.
  static const std::map<std::string, int> broadcast = {
      {"Add", 7}, {"Sub", 7}, {"Mul", 7}, {"Div", 7}, {"Pow", 7}, {"PRelu", 7}, {"Equal", 7}, {"Less", 7},
      {"Greater", 7}, {"And", 7}, {"Or", 7}, {"Xor", 7}, {"LessOrEqual", 12}, {"GreaterOrEqual", 12}, {"Mod", 10},
      {"Max", 8}, {"Min", 8}, {"Sum", 8}, {"Mean", 8}, {"Where", 9}, {"BitwiseAnd", 18}, {"BitwiseOr", 18},
      {"BitwiseXor", 18}, {"BitShift", 11}};
  if (unary.count(op)) {
    // Blocked quantization's scales have the data's layout.
    if ((op == "QuantizeLinear" || op == "DequantizeLinear") && n.attr_int("block_size", 0) != 0) return Kind::kNone;
    return op == "Cast" || op == "Clip" || n.opset >= 6 ? Kind::kUnary : Kind::kNone;
  }
  auto b = broadcast.find(op);
  if (b != broadcast.end()) return n.opset >= b->second ? Kind::kBroadcast : Kind::kNone;
  if (op == "Concat" && n.opset >= 4) return Kind::kAxis;
  if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && n.opset >= 13) return Kind::kAxis;
  if (op.rfind("Reduce", 0) == 0 && op != "Reduce" && n.attr_int("keepdims", 1) == 1) return Kind::kReduce;
  return Kind::kNone;
}

/// Whether input i of n (of a kind other than kNone) is data, laid out like the output.
bool data_input(const Node& n, Kind kind, size_t i) {
  if (n.domain == "com.microsoft") {
    if (n.op_type == "QLinearAdd" || n.op_type == "QLinearMul") return i == 0 || i == 3;
    if (n.op_type == "QLinearConcat") return i >= 2 && (i - 2) % 3 == 0;  // (Y scale, Y zero point, then triples)
    return i == 0;
  }
  return kind == Kind::kUnary || kind == Kind::kReduce ? i == 0 : true;
}

bool is_constant(const Graph& g, int v) { return v >= 0 && g.values[v].has_initializer && !g.values[v].is_graph_input; }

/// A value that broadcasts against anything without regard to layout: a constant with one
/// element, or a value whose known dims are all 1.
bool layout_free(const Graph& g, int v) {
  if (is_constant(g, v) && g.values[v].initializer.numel() == 1) return true;
  const TypeInfo& t = g.values[v].type;
  if (!t.is_tensor() || !t.has_shape) return false;
  for (int64_t d : t.shape)
    if (d != 1) return false;
  return true;
}

bool permutable_dtype(DType t) {
  switch (t) {
    case DType::kString: case DType::kUndefined: return false;  // (packed types are one value per byte in memory)
    default: return true;
  }
}

class Optimizer {
 public:
  Optimizer(Graph& g, PassContext& ctx) : g_(g), ctx_(ctx), uses_(compute_uses(g)) {
    pinned_.assign(g.values.size(), 0);
    for (int o : g.outputs) pinned_[o] = 1;
    for (const Node& n : g.nodes)
      for (int v : n.implicit_inputs) pinned_[v] = 1;  // read by name from subgraphs
  }

  int run() {
    std::vector<Node> nodes = std::move(g_.nodes);
    g_.nodes.clear();
    for (Node& n : nodes) {
      for (int& v : n.inputs) v = resolve(v);
      Perm p;
      if (transpose_perm(g_, n, &p)) {
        visit_transpose(std::move(n), p);
        continue;
      }
      if (!try_push(n)) g_.nodes.push_back(std::move(n));
    }
    recompute_producers(g_);
    return changed_;
  }

 private:
  struct Source {
    int input;  // the value the Transpose read
    Perm perm;
  };

  /// The value a read of v now reads (its reader count was moved there when the alias was made).
  int resolve(int v) const {
    while (v >= 0) {
      auto it = alias_.find(v);
      if (it == alias_.end()) break;
      v = it->second;
    }
    return v;
  }
  /// One reader less for v; a Transpose this walk emitted whose output loses its last reader is
  /// dead: its own read is released too (eliminate_dead_nodes removes the node later).
  void release(int v) {
    if (--use(v) > 0 || pinned(v)) return;
    auto s = sources_.find(v);
    if (s == sources_.end()) return;
    const Source src = s->second;
    sources_.erase(s);
    made_.erase({src.input, src.perm});
    release(src.input);
  }
  int& use(int v) {
    if (static_cast<size_t>(v) >= uses_.uses.size()) uses_.uses.resize(v + 1, 0);
    return uses_.uses[v];
  }
  bool pinned(int v) const { return static_cast<size_t>(v) < pinned_.size() && pinned_[v]; }

  void visit_transpose(Node n, Perm p) {
    int x = n.inputs[0];
    const int y = n.outputs[0];
    auto src = sources_.find(x);
    const bool merged = src != sources_.end();
    if (merged) {  // a Transpose of a Transpose: one perm from the first one's input
      const Source s = src->second;
      ++use(s.input);
      release(x);
      x = n.inputs[0] = s.input;
      p = compose(s.perm, p);
      set_perm(n, p);
      ++changed_;
    }
    if (pinned(y) && is_identity(p) && take_over(x, y)) {  // the graph output now comes from x's producer
      changed_ += !merged;
      ctx_.log.push_back(str("removed ", n.label(), " (it undoes the Transpose before it)"));
      return;
    }
    if (!pinned(y)) {
      int same = -1;
      if (is_identity(p)) same = x;
      auto seen = made_.find({x, p});
      if (same < 0 && seen != made_.end()) same = seen->second;
      if (same >= 0) {  // readers of y read `same` instead; the node goes
        use(same) += use(y);
        use(y) = 0;
        alias_[y] = same;
        release(x);
        changed_ += !merged;
        ctx_.log.push_back(str("removed ", n.label(), is_identity(p) ? " (it undoes the Transpose before it)" : " (a repeat)"));
        return;
      }
    }
    if (merged) ctx_.log.push_back(str("merged ", n.label(), " with the Transpose before it"));
    made_[{x, p}] = y;
    sources_[y] = Source{x, p};
    g_.nodes.push_back(std::move(n));
  }

  /// Makes the node producing `x` produce `y` instead, when this walk emitted it and nothing else
  /// reads x (the Transpose being dropped was its one reader).
  bool take_over(int x, int y) {
    if (pinned(x) || use(x) != 1 || g_.values[x].has_initializer || g_.values[x].is_graph_input) return false;
    for (size_t k = g_.nodes.size(); k-- > 0;) {
      Node& p = g_.nodes[k];
      for (int& o : p.outputs)
        if (o == x) {
          o = y;
          --use(x);  // (x is no more: its producer's bookkeeping moves to y below)
          g_.values[y].type = g_.values[x].type;
          auto s = sources_.find(x);
          if (s != sources_.end()) {
            sources_[y] = s->second;
            made_[{s->second.input, s->second.perm}] = y;
            sources_.erase(s);
          }
          return true;
        }
    }
    return false;
  }

  /// Runs `n` on untransposed inputs when that is allowed and pays; appends it (and the moved
  /// Transpose) and returns true, else changes nothing.
  bool try_push(Node& n) {
    const Kind kind = kind_of(n);
    if (kind == Kind::kNone) return false;
    const int y = n.outputs[0];
    const TypeInfo yt = g_.values[y].type;  // (a copy: values are added below)
    if (!yt.is_tensor() || !yt.has_shape) return false;
    const size_t rank = yt.shape.size();
    const Perm* perm = nullptr;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!data_input(n, kind, i)) continue;
      auto s = n.has_input(i) ? sources_.find(n.inputs[i]) : sources_.end();
      if (s != sources_.end()) {
        perm = &s->second.perm;
        break;
      }
    }
    if (!perm || perm->size() != rank) return false;
    const Perm p = *perm;  // (a copy: sources_ may grow below)
    const Perm pinv = inverse(p);
    // Every data input: a Transpose P of a value of the output's shape, a layout-free value, or a
    // constant to permute; the other inputs of unary ops must be layout-free.
    std::map<int, int> reads;  // transposed input -> times n reads it
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const int v = n.inputs[i];
      if (v < 0) continue;
      if (kind == Kind::kReduce && i == 1) {  // axes, remapped below
        if (!is_constant(g_, v)) return false;
        continue;
      }
      auto s = sources_.find(v);
      const bool data = data_input(n, kind, i);
      if (data && s != sources_.end() && s->second.perm == p) {
        // Elementwise ops: the transposed input has the output's shape (broadcasting could make
        // the output, where the Transpose moves to, bigger). Concat and Reduce* make no bigger.
        const TypeInfo& t = g_.values[v].type;
        if (!t.is_tensor() || !t.has_shape || t.shape.size() != rank) return false;
        if ((kind == Kind::kUnary || kind == Kind::kBroadcast) && !(t.shape == yt.shape)) return false;
        ++reads[v];
        continue;
      }
      if (layout_free(g_, v)) continue;
      if (!data || !is_constant(g_, v)) return false;
      const Tensor& c = g_.values[v].initializer;
      if (!c.on_host() || !permutable_dtype(c.dtype()) || c.rank() > rank) return false;
      if (kind == Kind::kAxis && c.rank() != rank) return false;
    }
    int dying = 0;
    for (const auto& [v, count] : reads) dying += use(v) == count && !pinned(v);
    if (dying == 0) return false;

    // The rewrite: attributes first (they may still fail), then inputs, then the output.
    std::vector<std::pair<size_t, int>> new_inputs;
    if (kind == Kind::kAxis) {
      const std::string key = "axis";
      int64_t a = n.attr_int(key, n.op_type == "Concat" ? 0 : -1);
      if (a < 0) a += static_cast<int64_t>(rank);
      if (a < 0 || a >= static_cast<int64_t>(rank)) return false;
      set_int_attr(n, key, p[static_cast<size_t>(a)]);
    }
    if (kind == Kind::kReduce && !remap_axes(n, p, rank, &new_inputs)) return false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const int v = n.inputs[i];
      if (v < 0 || !data_input(n, kind, i)) continue;
      if (reads.count(v)) {
        new_inputs.emplace_back(i, sources_[v].input);
      } else if (!layout_free(g_, v)) {
        const Tensor c = g_.values[v].initializer;  // (a handle: values are added below)
        Shape full;
        for (size_t k = c.rank(); k < rank; ++k) full.push_back(1);
        for (int64_t d : c.shape()) full.push_back(d);
        const int cv = g_.add_value(unused_value_name(g_, g_.values[v].name + "_t"));
        g_.values[cv].has_initializer = true;
        g_.values[cv].initializer = permute_tensor(c.reshaped(full), pinv);
        g_.values[cv].type = TypeInfo::tensor(c.dtype(), g_.values[cv].initializer.shape());
        new_inputs.emplace_back(i, cv);
      }
    }
    for (const auto& [i, v] : new_inputs) {
      ++use(v);
      release(n.inputs[i]);
      n.inputs[i] = v;
    }
    const int yl = g_.add_value(unused_value_name(g_, g_.values[y].name + "_t"));
    g_.values[yl].type = TypeInfo::tensor(yt.dtype, permute(yt.shape, pinv));
    n.outputs[0] = yl;
    ++use(yl);
    ctx_.log.push_back(str("moved a Transpose past ", n.label()));
    ++changed_;
    Node t = transpose_node(n.name + "_transpose", yl, y, p);
    g_.nodes.push_back(std::move(n));
    made_[{yl, p}] = y;
    sources_[y] = Source{yl, p};
    g_.nodes.push_back(std::move(t));
    return true;
  }

  /// Reduce*'s axes (attribute, or a constant input 1) in the untransposed value's dims.
  bool remap_axes(Node& n, const Perm& p, size_t rank, std::vector<std::pair<size_t, int>>* new_inputs) {
    auto map_axes = [&](std::vector<int64_t> axes) -> std::vector<int64_t> {
      for (int64_t& a : axes) {
        if (a < 0) a += static_cast<int64_t>(rank);
        if (a < 0 || a >= static_cast<int64_t>(rank)) return {};
        a = p[static_cast<size_t>(a)];
      }
      std::sort(axes.begin(), axes.end());
      return axes;
    };
    if (n.has_input(1)) {
      const Tensor& c = g_.values[n.inputs[1]].initializer;
      if (c.dtype() != DType::kInt64 || !c.on_host()) return false;
      std::vector<int64_t> axes(c.data<int64_t>(), c.data<int64_t>() + c.numel());
      if (axes.empty()) return true;  // all dims (or none with noop_with_empty_axes): layout-free
      axes = map_axes(axes);
      if (axes.empty()) return false;
      const int av = g_.add_value(unused_value_name(g_, g_.values[n.inputs[1]].name + "_t"));
      g_.values[av].has_initializer = true;
      g_.values[av].initializer = Tensor::from_vector(Shape{static_cast<int64_t>(axes.size())}, axes);
      g_.values[av].type = TypeInfo::tensor(DType::kInt64, g_.values[av].initializer.shape());
      new_inputs->emplace_back(1, av);
      return true;
    }
    const Attribute* a = n.attr("axes");
    if (!a || a->ints.empty()) return true;
    std::vector<int64_t> axes = map_axes(a->ints);
    if (axes.empty()) return false;
    for (Attribute& at : n.attrs)
      if (at.name == "axes") at.ints = axes;
    return true;
  }

  static void set_int_attr(Node& n, const std::string& name, int64_t v) {
    for (Attribute& a : n.attrs)
      if (a.name == name) {
        a.type = AttrType::kInt;
        a.i = v;
        return;
      }
    Attribute a;
    a.name = name;
    a.type = AttrType::kInt;
    a.i = v;
    n.attrs.push_back(std::move(a));
  }

  Graph& g_;
  PassContext& ctx_;
  UseInfo uses_;
  std::vector<char> pinned_;
  std::map<int, int> alias_;
  std::map<int, Source> sources_;
  std::map<std::pair<int, Perm>, int> made_;
  int changed_ = 0;
};

}  // namespace

int optimize_transposes(Graph& g, PassContext& ctx) { return Optimizer(g, ctx).run(); }

}  // namespace onyx
