// QDQ fusion: the quantize-dequantize form of an 8-bit model (what ONNX Runtime's static
// quantizer writes by default, and what PyTorch and TensorFlow exporters write) runs every op in
// float between DequantizeLinear and QuantizeLinear nodes. Here each such group becomes one 8-bit
// op on the quantized tensors themselves:
//   DQ(x), DQ(w), [DQ(b)] -> Conv -> Q        QLinearConv
//   DQ(a), DQ(b) -> MatMul -> Q               QLinearMatMul
//   DQ(a), DQ(B), [DQ(C)] -> Gemm [-> Q]      com.microsoft::QGemm (float output without the Q)
//   DQ(a), DQ(b) -> Add | Mul -> Q            com.microsoft::QLinearAdd | QLinearMul
//   DQ(x) -> GlobalAveragePool | AveragePool -> Q   com.microsoft::QLinearGlobalAveragePool | ...
//   DQ(x) -> Sigmoid | LeakyRelu -> Q         com.microsoft::QLinearSigmoid | QLinearLeakyRelu
//   DQ(x...) -> Concat -> Q                   com.microsoft::QLinearConcat
//   DQ(x) -> MaxPool | Reshape | Resize (nearest) | ... -> Q   the op itself on the 8-bit tensor,
//                                             when DQ and Q have the same scale and zero point
// and ONNX Runtime's dynamic quantization (DynamicQuantizeLinear -> MatMulInteger -> Cast ->
// Mul by the scales [-> Add bias]) becomes com.microsoft::DynamicQuantizeMatMul.
//
// The fused ops requantise once where the float graph rounds the float result: the same values
// up to the rounding of the float sums (1 unit of the output's scale where a sum falls near a
// rounding boundary), as ONNX Runtime's own QDQ fusions do. A DequantizeLinear read by other
// nodes stays for them. Runs before constant folding (which would otherwise turn the weights'
// DequantizeLinear into float initializers) and only where the session's EPs take the fused op
// (PassContext::may_quantize_group: compiling EPs too, unlike the other fusions).
#include <cmath>
#include <cstring>

#include "optimizer/fusion.hpp"

namespace onyx {

namespace {

bool is_q8(DType t) { return t == DType::kUInt8 || t == DType::kInt8; }

const Tensor* constant(const Graph& g, int v) {
  if (v < 0 || !g.values[v].has_initializer || g.values[v].is_graph_input) return nullptr;
  return &g.values[v].initializer;
}

/// A DequantizeLinear (or QuantizeLinear) node's parameters.
struct QParams {
  int data = -1;   // the quantized tensor (DQ's input; Q's output)
  int scale = -1;  // value ids
  int zp = -1;     // -1: absent (zero, of uint8 unless Q's output_dtype says otherwise)
  const Node* node = nullptr;
};

/// Only plain per-tensor or per-axis quantization with float scales and 8-bit data.
bool plain_params(const Graph& g, const Node& n) {
  if (n.attr_int("block_size", 0) != 0 || n.inputs.size() < 2 || n.inputs[1] < 0) return false;
  const DType st = g.values[n.inputs[1]].type.elem_dtype();
  return st == DType::kFloat;
}

/// The DequantizeLinear producing v, over an 8-bit tensor (or int32 for a bias).
bool dq_of(const Graph& g, const std::vector<char>& dead, int v, QParams* out, bool allow_int32 = false) {
  if (v < 0) return false;
  const int p = g.values[v].producer;
  if (p < 0 || dead[p]) return false;
  const Node& n = g.nodes[p];
  if (!n.domain.empty() || n.op_type != "DequantizeLinear" || !n.implicit_inputs.empty() || !plain_params(g, n)) return false;
  const DType dt = g.values[n.inputs[0]].type.elem_dtype();
  if (!is_q8(dt) && !(allow_int32 && dt == DType::kInt32)) return false;
  if (g.values[n.outputs[0]].type.elem_dtype() != DType::kFloat) return false;
  *out = {n.inputs[0], n.inputs[1], n.has_input(2) ? n.inputs[2] : -1, &n};
  return true;
}

/// The QuantizeLinear that is the only reader of v (v not a graph output), to an 8-bit type.
bool q_after(const FusionView& view, int v, QParams* out) {
  const Node* n = view.sole_consumer(v);
  if (!n || n->op_type != "QuantizeLinear" || n->inputs[0] != v || !plain_params(view.g, *n)) return false;
  if (!is_q8(view.g.values[n->outputs[0]].type.elem_dtype())) return false;
  *out = {n->outputs[0], n->inputs[1], n->has_input(2) ? n->inputs[2] : -1, n};
  return true;
}

/// One float value for every element: a constant scalar (or one-element) scale.
bool scalar_scale(const Graph& g, int v, float* s) {
  const Tensor* t = constant(g, v);
  if (!t || t->numel() != 1 || t->dtype() != DType::kFloat) return false;
  *s = t->data<float>()[0];
  return true;
}

/// Per tensor: a constant one-element scale and (absent or) constant one-element zero point.
bool per_tensor(const Graph& g, const QParams& q) {
  float s;
  if (!scalar_scale(g, q.scale, &s)) return false;
  if (q.zp < 0) return true;
  const Tensor* z = constant(g, q.zp);
  return z && z->numel() == 1;
}

int32_t zp_value(const Graph& g, const QParams& q) {
  if (q.zp < 0) return 0;
  const Tensor& z = *constant(g, q.zp);
  const uint8_t raw = *static_cast<const uint8_t*>(z.raw_data());
  return z.dtype() == DType::kInt8 ? static_cast<int8_t>(raw) : raw;
}

/// Same scale and zero point (both per tensor, constant), and same quantized type.
bool same_params(const Graph& g, const QParams& a, const QParams& b) {
  float sa, sb;
  if (!per_tensor(g, a) || !per_tensor(g, b) || !scalar_scale(g, a.scale, &sa) || !scalar_scale(g, b.scale, &sb)) return false;
  return sa == sb && zp_value(g, a) == zp_value(g, b) &&
         g.values[a.data].type.elem_dtype() == g.values[b.data].type.elem_dtype();
}

class QdqFusion {
 public:
  QdqFusion(Graph& g, PassContext& ctx) : g_(g), ctx_(ctx), u_(compute_uses(g)), dead_(g.nodes.size(), 0), view_{g, u_, dead_} {}

  int run() {
    int changed = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (dead_[i]) continue;
      const Node& n = g_.nodes[i];
      if (!n.domain.empty() || !n.implicit_inputs.empty() || n.outputs.empty() || n.outputs[0] < 0) continue;
      bool done = false;
      if (n.op_type == "Conv") done = conv(i);
      else if (n.op_type == "MatMul") done = matmul(i);
      else if (n.op_type == "Gemm") done = gemm(i);
      else if (n.op_type == "Add" || n.op_type == "Mul") done = binary(i);
      else if (n.op_type == "GlobalAveragePool" || n.op_type == "AveragePool" || n.op_type == "Sigmoid" ||
               n.op_type == "LeakyRelu")
        done = unary(i);
      else if (n.op_type == "Concat") done = concat(i);
      else if (n.op_type == "MatMulInteger") done = dynamic_matmul(i);
      else done = passthrough(i);
      changed += done;
    }
    if (changed) remove_nodes(g_, dead_);
    return changed;
  }

 private:
  /// The zero point as an input: its value id, or a new zero initializer of the data's type.
  int zp_input(const QParams& q) {
    if (q.zp >= 0) return q.zp;
    const DType dt = g_.values[q.data].type.elem_dtype();
    const int v = g_.add_value(unused_value_name(g_, g_.values[q.data].name + "_zero_point"));
    Tensor t(dt, Shape{});
    std::memset(t.raw_data(), 0, 1);
    g_.values[v].has_initializer = true;
    g_.values[v].initializer = t;
    g_.values[v].type = TypeInfo::tensor(dt, Shape{});
    return v;
  }

  int add_initializer(const std::string& base, Tensor t) {
    const int v = g_.add_value(unused_value_name(g_, base));
    g_.values[v].type = TypeInfo::tensor(t.dtype(), t.shape());
    g_.values[v].has_initializer = true;
    g_.values[v].initializer = std::move(t);
    return v;
  }

  bool commit(size_t at, std::vector<const Node*> members, Node fused) {
    fused.name = g_.nodes[at].name;
    return commit_fusion(g_, dead_, at, members, std::move(fused), ctx_, true);
  }

  /// A constant 8-bit weight behind a DequantizeLinear whose scale and zero point are constant
  /// and per tensor or along `axis` with `count` values.
  bool weight(int v, int axis, int64_t count, QParams* w) {
    if (!dq_of(g_, dead_, v, w) || !constant(g_, w->data)) return false;
    const Tensor* s = constant(g_, w->scale);
    const Tensor* z = w->zp >= 0 ? constant(g_, w->zp) : nullptr;
    if (!s || s->dtype() != DType::kFloat || (w->zp >= 0 && !z)) return false;
    if (s->numel() == 1) return !z || z->numel() == 1;
    const Tensor& data = *constant(g_, w->data);
    int64_t a = w->node->attr_int("axis", 1);
    if (a < 0) a += static_cast<int64_t>(data.rank());
    return a == axis && s->rank() == 1 && s->numel() == count && (!z || z->numel() == count);
  }

  bool conv(size_t i) {
    const Node& conv = g_.nodes[i];
    if (conv.inputs.size() < 2) return false;
    QParams x, w, y;
    if (!dq_of(g_, dead_, conv.inputs[0], &x) || !per_tensor(g_, x) || !q_after(view_, conv.outputs[0], &y) || !per_tensor(g_, y))
      return false;
    const TypeInfo& wt = g_.values[conv.inputs[1]].type;
    if (!wt.has_shape || wt.shape.empty() || wt.shape[0] <= 0) return false;
    const int64_t M = wt.shape[0];
    if (!weight(conv.inputs[1], 0, M, &w)) return false;
    const int bias = conv.has_input(2) ? int32_bias(conv.inputs[2], x, w, M, conv.name) : -1;
    if (conv.has_input(2) && bias < 0) return false;
    Node fused;
    fused.op_type = "QLinearConv";
    fused.opset = std::max(conv.opset, 10);
    fused.attrs = conv.attrs;
    fused.inputs = {x.data, x.scale, zp_input(x), w.data, w.scale, zp_input(w), y.scale, zp_input(y)};
    if (bias >= 0) fused.inputs.push_back(bias);
    fused.outputs = {y.data};
    return commit(i, {&conv, y.node}, std::move(fused));
  }

  /// The bias of a convolution or Gemm as int32 at scale x_scale * w_scale (zero point 0): the
  /// quantized bias itself when its DequantizeLinear has that scale (as ONNX Runtime's quantizer
  /// writes it), else a float constant (or a bias of another scale) requantised once here.
  /// Returns the value id, or -1 when there is no usable bias.
  int int32_bias(int v, const QParams& x, const QParams& w, int64_t count, const std::string& name) {
    float xs;
    if (!scalar_scale(g_, x.scale, &xs)) return -1;
    const Tensor& ws = *constant(g_, w.scale);
    auto wscale = [&](int64_t j) { return ws.data<float>()[ws.numel() == 1 ? 0 : j]; };
    QParams b;
    std::vector<float> values;
    if (dq_of(g_, dead_, v, &b, true) && g_.values[b.data].type.elem_dtype() == DType::kInt32 && constant(g_, b.data)) {
      const Tensor& bq = *constant(g_, b.data);
      const Tensor* bs = constant(g_, b.scale);
      const Tensor* bz = b.zp >= 0 ? constant(g_, b.zp) : nullptr;
      if (!bs || bs->dtype() != DType::kFloat || bq.numel() != count || (b.zp >= 0 && !bz)) return -1;
      bool zero_zp = true;
      if (bz)
        for (int64_t j = 0; j < bz->numel(); ++j) zero_zp &= bz->data<int32_t>()[j] == 0;
      bool same = zero_zp && (bs->numel() == 1 || bs->numel() == count);
      for (int64_t j = 0; same && j < count; ++j) {
        const float want = xs * wscale(j), got = bs->data<float>()[bs->numel() == 1 ? 0 : j];
        same = std::fabs(got - want) <= 1e-6f * std::fabs(want);
      }
      if (same) return b.data;
      for (int64_t j = 0; j < count; ++j)
        values.push_back(static_cast<float>(bq.data<int32_t>()[j] - (bz ? bz->data<int32_t>()[bz->numel() == 1 ? 0 : j] : 0)) *
                         bs->data<float>()[bs->numel() == 1 ? 0 : j]);
    } else if (const Tensor* f = constant(g_, v); f && f->dtype() == DType::kFloat && f->numel() == count) {
      values.assign(f->data<float>(), f->data<float>() + count);
    } else {
      return -1;
    }
    Tensor q(DType::kInt32, Shape{count});
    for (int64_t j = 0; j < count; ++j) {
      const double s = static_cast<double>(xs) * wscale(j);
      const double r = s > 0 ? std::nearbyint(values[j] / s) : 0.0;
      if (!(std::fabs(r) < 2147483647.0)) return -1;
      q.data<int32_t>()[j] = static_cast<int32_t>(r);
    }
    return add_initializer(name + "_bias_quantized", std::move(q));
  }

  bool matmul(size_t i) {
    const Node& mm = g_.nodes[i];
    if (mm.inputs.size() != 2) return false;
    QParams a, b, y;
    if (!dq_of(g_, dead_, mm.inputs[0], &a) || !per_tensor(g_, a) || !q_after(view_, mm.outputs[0], &y) || !per_tensor(g_, y))
      return false;
    const TypeInfo& bt = g_.values[mm.inputs[1]].type;
    if (!bt.has_shape || bt.shape.size() != 2 || bt.shape[1] <= 0) return false;
    // B per tensor (any B), or per column of a constant 2-D B.
    if (!dq_of(g_, dead_, mm.inputs[1], &b)) return false;
    if (!per_tensor(g_, b) && !weight(mm.inputs[1], 1, bt.shape[1], &b)) return false;
    Node fused;
    fused.op_type = "QLinearMatMul";
    fused.opset = std::max(mm.opset, 10);
    fused.inputs = {a.data, a.scale, zp_input(a), b.data, b.scale, zp_input(b), y.scale, zp_input(y)};
    fused.outputs = {y.data};
    return commit(i, {&mm, y.node}, std::move(fused));
  }

  bool gemm(size_t i) {
    const Node& gm = g_.nodes[i];
    if (gm.inputs.size() < 2 || gm.attr_float("beta", 1.0f) != 1.0f) return false;
    QParams a, b, y;
    if (!dq_of(g_, dead_, gm.inputs[0], &a) || !per_tensor(g_, a)) return false;
    const bool trans_b = gm.attr_int("transB", 0) != 0;
    const TypeInfo& bt = g_.values[gm.inputs[1]].type;
    if (!bt.has_shape || bt.shape.size() != 2 || bt.shape[trans_b ? 0 : 1] <= 0) return false;
    const int64_t n = bt.shape[trans_b ? 0 : 1];
    if (!weight(gm.inputs[1], trans_b ? 0 : 1, n, &b)) return false;
    const bool quantized = q_after(view_, gm.outputs[0], &y) && per_tensor(g_, y);
    const int bias = gm.has_input(2) ? int32_bias(gm.inputs[2], a, b, n, gm.name) : -1;
    if (gm.has_input(2) && bias < 0) return false;
    if (gm.attr_float("alpha", 1.0f) != 1.0f) return false;  // (the bias's scale would carry alpha)
    Node fused;
    fused.op_type = "QGemm";
    fused.domain = "com.microsoft";
    fused.opset = 1;
    for (const char* k : {"transA", "transB", "alpha"})
      if (const Attribute* at = gm.attr(k)) fused.attrs.push_back(*at);
    fused.inputs = {a.data, a.scale, zp_input(a), b.data, b.scale, zp_input(b), bias};
    if (quantized) {
      fused.inputs.push_back(y.scale);
      fused.inputs.push_back(zp_input(y));
      fused.outputs = {y.data};
      return commit(i, {&gm, y.node}, std::move(fused));
    }
    fused.outputs = {gm.outputs[0]};
    return commit(i, {&gm}, std::move(fused));
  }

  bool binary(size_t i) {
    const Node& n = g_.nodes[i];
    if (n.inputs.size() != 2) return false;
    QParams a, b, y;
    if (!dq_of(g_, dead_, n.inputs[0], &a) || !dq_of(g_, dead_, n.inputs[1], &b) || !per_tensor(g_, a) || !per_tensor(g_, b) ||
        !q_after(view_, n.outputs[0], &y) || !per_tensor(g_, y))
      return false;
    const DType t = g_.values[a.data].type.elem_dtype();
    if (g_.values[b.data].type.elem_dtype() != t || g_.values[y.data].type.elem_dtype() != t) return false;
    Node fused;
    fused.op_type = n.op_type == "Add" ? "QLinearAdd" : "QLinearMul";
    fused.domain = "com.microsoft";
    fused.opset = 1;
    fused.inputs = {a.data, a.scale, zp_input(a), b.data, b.scale, zp_input(b), y.scale, zp_input(y)};
    fused.outputs = {y.data};
    return commit(i, {&n, y.node}, std::move(fused));
  }

  bool unary(size_t i) {
    const Node& n = g_.nodes[i];
    QParams x, y;
    if (!dq_of(g_, dead_, n.inputs[0], &x) || !per_tensor(g_, x) || !q_after(view_, n.outputs[0], &y) || !per_tensor(g_, y))
      return false;
    if (g_.values[y.data].type.elem_dtype() != g_.values[x.data].type.elem_dtype()) return false;
    Node fused;
    fused.op_type = "QLinear" + n.op_type;
    fused.domain = "com.microsoft";
    fused.opset = 1;
    fused.attrs = n.attrs;
    if (n.op_type == "AveragePool" && n.has_attr("dilations")) return false;  // (not in the contrib op)
    fused.inputs = {x.data, x.scale, zp_input(x), y.scale, zp_input(y)};
    fused.outputs = {y.data};
    return commit(i, {&n, y.node}, std::move(fused));
  }

  bool concat(size_t i) {
    const Node& n = g_.nodes[i];
    QParams y;
    if (n.inputs.empty() || !q_after(view_, n.outputs[0], &y) || !per_tensor(g_, y)) return false;
    const DType t = g_.values[y.data].type.elem_dtype();
    Node fused;
    fused.op_type = "QLinearConcat";
    fused.domain = "com.microsoft";
    fused.opset = 1;
    fused.attrs = n.attrs;
    fused.inputs = {y.scale, zp_input(y)};
    for (int v : n.inputs) {
      QParams x;
      if (!dq_of(g_, dead_, v, &x) || !per_tensor(g_, x) || g_.values[x.data].type.elem_dtype() != t) return false;
      fused.inputs.insert(fused.inputs.end(), {x.data, x.scale, zp_input(x)});
    }
    fused.outputs = {y.data};
    return commit(i, {&n, y.node}, std::move(fused));
  }

  /// Data-movement ops (and MaxPool, which picks one of its inputs) between a DequantizeLinear
  /// and a QuantizeLinear of the same parameters run on the 8-bit tensor.
  bool passthrough(size_t i) {
    const Node& n = g_.nodes[i];
    static const char* const kOps[] = {"MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Identity",
                                       "SpaceToDepth", "DepthToSpace", "Slice", "Gather", "Expand", "Tile", "Resize"};
    bool known = false;
    for (const char* op : kOps) known |= n.op_type == op;
    // Resize picks input values only in its nearest mode (the others interpolate).
    if (n.op_type == "Resize" && n.attr_string("mode", "nearest") != "nearest") return false;
    if (!known || n.inputs.empty() || n.outputs.size() != 1) return false;
    QParams x, y;
    if (!dq_of(g_, dead_, n.inputs[0], &x) || !q_after(view_, n.outputs[0], &y) || !same_params(g_, x, y)) return false;
    Node moved = n;
    moved.inputs[0] = x.data;
    moved.outputs = {y.data};
    return commit(i, {&n, y.node}, std::move(moved));
  }

  /// DynamicQuantizeLinear(x) -> MatMulInteger(x_q, B const, x_zp, B_zp const) -> Cast(float) ->
  /// Mul(x_scale * B_scale) [-> Add(bias)]: com.microsoft::DynamicQuantizeMatMul(x, B, B_scale,
  /// B_zp, bias).
  bool dynamic_matmul(size_t i) {
    const Node& mm = g_.nodes[i];
    if (mm.inputs.size() < 2 || !constant(g_, mm.inputs[1])) return false;
    const int xq = mm.inputs[0];
    const int dql_i = g_.values[xq].producer;
    if (dql_i < 0 || dead_[dql_i]) return false;
    const Node& dql = g_.nodes[dql_i];
    if (dql.op_type != "DynamicQuantizeLinear" || !dql.domain.empty() || dql.outputs.size() != 3) return false;
    // A's zero point is the DynamicQuantizeLinear's; B's a constant.
    if (!mm.has_input(2) || mm.inputs[2] != dql.outputs[2]) return false;
    const Tensor* b = constant(g_, mm.inputs[1]);
    const Tensor* bz = mm.has_input(3) ? constant(g_, mm.inputs[3]) : nullptr;
    if (!b || b->rank() != 2 || (mm.has_input(3) && !bz)) return false;
    const int64_t n_cols = b->dim(1);
    const Node* cast = view_.sole_consumer(mm.outputs[0]);
    if (!cast || cast->op_type != "Cast" || cast->attr_int("to", 0) != static_cast<int64_t>(DType::kFloat)) return false;
    const Node* mul = view_.sole_consumer(cast->outputs[0]);
    if (!mul || mul->op_type != "Mul" || mul->inputs.size() != 2) return false;
    const int scales = mul->inputs[0] == cast->outputs[0] ? mul->inputs[1] : mul->inputs[0];
    // The scale product: Mul(x_scale, B_scale) with B_scale constant, read by this Mul only.
    const Node* smul = view_.sole_producer(scales);
    if (!smul || smul->op_type != "Mul" || smul->inputs.size() != 2) return false;
    const int bscale = smul->inputs[0] == dql.outputs[1] ? smul->inputs[1] : smul->inputs[1] == dql.outputs[1] ? smul->inputs[0] : -1;
    const Tensor* bs = bscale >= 0 ? constant(g_, bscale) : nullptr;
    if (!bs || bs->dtype() != DType::kFloat || !(bs->numel() == 1 || (bs->rank() == 1 && bs->numel() == n_cols))) return false;
    if (bz && !(bz->numel() == 1 || (bz->rank() == 1 && bz->numel() == n_cols))) return false;
    std::vector<const Node*> members{&mm, cast, mul, smul};
    int out = mul->outputs[0], bias = -1;
    if (const Node* add = view_.sole_consumer(out); add && add->op_type == "Add" && add->inputs.size() == 2) {
      const int c = add->inputs[0] == out ? add->inputs[1] : add->inputs[0];
      const Tensor* ct = constant(g_, c);
      if (ct && ct->dtype() == DType::kFloat && ct->rank() == 1 && ct->numel() == n_cols &&
          same_shape(g_.values[add->outputs[0]].type, g_.values[out].type)) {
        bias = c;
        out = add->outputs[0];
        members.push_back(add);
      }
    }
    // The DynamicQuantizeLinear goes too when nothing else reads it.
    // (x_q and x_zp read by this MatMulInteger, x_scale by the scale product.)
    bool dql_only_here = true;
    for (int v : dql.outputs) dql_only_here &= v < 0 || (u_.uses[v] == 1 && !u_.is_output[v]);
    if (dql_only_here) members.push_back(&dql);
    Node fused;
    fused.op_type = "DynamicQuantizeMatMul";
    fused.domain = "com.microsoft";
    fused.opset = 1;
    fused.inputs = {dql.inputs[0], mm.inputs[1], bscale, mm.has_input(3) ? mm.inputs[3] : -1, bias};
    fused.outputs = {out};
    // At the position of the last member (the bias Add or the Mul), after every input is made.
    const size_t at = static_cast<size_t>((bias >= 0 ? members[4] : mul) - g_.nodes.data());
    fused.name = mm.name;
    return commit_fusion(g_, dead_, at, members, std::move(fused), ctx_, true);
  }

  Graph& g_;
  PassContext& ctx_;
  UseInfo u_;
  std::vector<char> dead_;
  FusionView view_;
};

}  // namespace

int fuse_qdq(Graph& g, PassContext& ctx) { return QdqFusion(g, ctx).run(); }

}  // namespace onyx
