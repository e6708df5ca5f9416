// Reduce family: Reduce* (Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare),
// ArgMax / ArgMin, Softmax / LogSoftmax / Hardmax, CumSum, TopK, LpNormalization.
#include "ops/reduce.hpp"

#include <limits>

#include "ops/schema.hpp"

namespace onyx {

bool reduce_axes_from_input(const Node& node) {
  return node.op_type == "ReduceSum" ? node.opset >= 13 : node.opset >= 18;
}

uint64_t reduce_axes_mask(const Node& node, int64_t rank, const Shape& axes, bool noop_with_empty_axes) {
  if (rank > 64) fail(ErrorCode::kNotImplemented, node.label(), ": rank ", rank, " is too large (at most 64)");
  if (axes.empty()) {
    if (noop_with_empty_axes) return 0;
    return rank == 64 ? ~uint64_t(0) : ((uint64_t(1) << rank) - 1);
  }
  uint64_t mask = 0;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      fail(ErrorCode::kInvalidArgument, node.label(), ": axis ", a, " is out of range for an input of rank ", rank);
    const int64_t k = a < 0 ? a + rank : a;
    if (mask & (uint64_t(1) << k)) fail(ErrorCode::kInvalidArgument, node.label(), ": axis ", a, " is repeated in axes");
    mask |= uint64_t(1) << k;
  }
  return mask;
}

Shape reduce_shape(const Shape& in, uint64_t mask, bool keepdims) {
  Shape out;
  for (size_t k = 0; k < in.size(); ++k) {
    if (mask & (uint64_t(1) << k)) {
      if (keepdims) out.push_back(1);
    } else {
      out.push_back(in[k]);
    }
  }
  return out;
}

AxisSplit split_at_axis(const Shape& s, int64_t axis) {
  AxisSplit r;
  for (int64_t k = 0; k < static_cast<int64_t>(s.size()); ++k) {
    if (k < axis) r.outer *= s[k];
    else if (k == axis) r.dim = s[k];
    else r.inner *= s[k];
  }
  return r;
}

int64_t softmax_axis(const Node& node, int64_t r) {
  if (node.opset < 13) {
    const int64_t axis = node.attr_int("axis", 1);
    if (r == 0) return 0;
    // Coercion to 2-D: axis == rank would give [N, 1]; ONNX allows [-r, r-1] (0 for a scalar).
    if (axis < -r || axis > r || (r > 0 && axis == r))
      fail(ErrorCode::kInvalidArgument, node.label(), ": axis ", axis, " is out of range for an input of rank ", r);
    return axis < 0 ? axis + r : axis;
  }
  const int64_t axis = node.attr_int("axis", -1);
  if (r == 0) {
    if (axis != 0 && axis != -1)
      fail(ErrorCode::kInvalidArgument, node.label(), ": axis ", axis, " is out of range for a scalar input");
    return 0;
  }
  return normalize_axis(axis, r, node.op_type);  // (op_type: no allocation on the run path)
}

AxisSplit softmax_split(const Node& node, const Shape& s) {
  const int64_t r = static_cast<int64_t>(s.size());
  const int64_t axis = softmax_axis(node, r);
  if (node.opset < 13) {
    AxisSplit a;
    for (int64_t k = 0; k < r; ++k) (k < axis ? a.outer : a.dim) *= s[k];
    return a;
  }
  if (r == 0) return AxisSplit{};
  return split_at_axis(s, axis);
}

Shape topk_shape(const Node& node, const Shape& in, int64_t axis, int64_t k) {
  if (k < 0) fail(ErrorCode::kInvalidArgument, node.label(), ": k must be non-negative, got ", k);
  if (in[axis] >= 0 && k > in[axis])
    fail(ErrorCode::kInvalidArgument, node.label(), ": k = ", k, " is larger than the size ", in[axis], " of axis ", axis);
  Shape out = in;
  out[axis] = k;
  return out;
}

namespace {

void infer_reduce(InferContext& ctx) {
  const Node& n = ctx.node();
  // An axes attribute where axes is an input would otherwise be ignored silently.
  if (reduce_axes_from_input(n) && n.has_attr("axes"))
    ctx.fail_node("the axes attribute was replaced by the axes input at opset ", n.op_type == "ReduceSum" ? 13 : 18);
  const TypeInfo& t = ctx.input_type(0);
  const DType dt = t.elem_dtype();
  if (!t.has_shape) return ctx.set_output_unranked(0, dt);
  const int64_t r = static_cast<int64_t>(t.shape.size());
  const bool keepdims = n.attr_int("keepdims", 1) != 0;
  const bool from_input = reduce_axes_from_input(n);
  const bool noop = from_input && n.attr_int("noop_with_empty_axes", 0) != 0;
  std::vector<int64_t> axes;
  bool known = true;
  if (!from_input) {
    axes = n.attr_ints("axes");
  } else if (ctx.has_input(1)) {
    known = ctx.input_ints(1, axes);
    // An axes input of static shape [0] is empty whatever its (unknown) value.
    if (!known && ctx.input_has_shape(1) && ctx.input_shape(1).size() == 1 && ctx.input_shape(1)[0] == 0) {
      axes.clear();
      known = true;
    }
  }
  if (known) return ctx.set_output(0, dt, reduce_shape(t.shape, reduce_axes_mask(n, r, Shape(axes), noop), keepdims));
  // Axes unknown while loading: with keepdims the rank stays; a dim may become 1.
  if (keepdims) {
    Shape out = t.shape;
    for (auto& d : out)
      if (d != 1) d = ctx.fresh();
    return ctx.set_output(0, dt, out);
  }
  if (ctx.input_has_shape(1) && ctx.input_shape(1).size() == 1 && ctx.input_shape(1)[0] > 0 && ctx.input_shape(1)[0] <= r)
    return ctx.set_output(0, dt, ctx.fresh_shape(static_cast<size_t>(r - ctx.input_shape(1)[0])));
  ctx.set_output_unranked(0, dt);
}

void infer_arg(InferContext& ctx) {
  const Node& n = ctx.node();
  const TypeInfo& t = ctx.input_type(0);
  if (!t.has_shape) return ctx.set_output_unranked(0, DType::kInt64);
  const int64_t r = static_cast<int64_t>(t.shape.size());
  if (r == 0) ctx.fail_node("input must have rank >= 1");
  const int64_t axis = normalize_axis(n.attr_int("axis", 0), r, n.label());
  const bool keepdims = n.attr_int("keepdims", 1) != 0;
  ctx.set_output(0, DType::kInt64, reduce_shape(t.shape, uint64_t(1) << axis, keepdims));
}

void infer_softmax(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  if (t.has_shape) (void)softmax_axis(ctx.node(), static_cast<int64_t>(t.shape.size()));
  ctx.propagate(0, 0);
}

void infer_lp_normalization(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  const int64_t p = ctx.node().attr_int("p", 2);
  if (p != 1 && p != 2) ctx.fail_node("p must be 1 or 2, got ", p);
  if (t.has_shape && !t.shape.empty())
    (void)normalize_axis(ctx.node().attr_int("axis", -1), static_cast<int64_t>(t.shape.size()), ctx.node().label());
  ctx.propagate(0, 0);
}

void infer_cumsum(InferContext& ctx) {
  ctx.require_dtype(1, {DType::kInt32, DType::kInt64});
  ctx.propagate(0, 0);
}

void infer_topk(InferContext& ctx) {
  const Node& n = ctx.node();
  const TypeInfo& t = ctx.input_type(0);
  const DType dt = t.elem_dtype();
  if (!t.has_shape) {
    ctx.set_output_unranked(0, dt);
    ctx.set_output_unranked(1, DType::kInt64);
    return;
  }
  const int64_t r = static_cast<int64_t>(t.shape.size());
  if (r == 0) ctx.fail_node("input must have rank >= 1");
  const int64_t axis = normalize_axis(n.attr_int("axis", -1), r, n.label());
  int64_t k = -1;
  bool known = true;
  if (ctx.opset() < 10) {
    if (!n.has_attr("k")) ctx.fail_node("attribute 'k' is required");
    k = n.attr_int("k", 0);
  } else {
    std::vector<int64_t> kv;
    known = ctx.input_ints(1, kv);
    if (known) {
      if (kv.size() != 1) ctx.fail_node("K must have exactly one element, got ", kv.size());
      k = kv[0];
    }
  }
  Shape out = t.shape;
  if (known)
    out = topk_shape(n, t.shape, axis, k);
  else
    out[axis] = ctx.fresh();
  ctx.set_output(0, dt, out);
  ctx.set_output(1, DType::kInt64, out);
}

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  r.add("", "ReduceSum", {1, 11, 13}, infer_reduce);
  r.add("", "ReduceMean", {1, 11, 13, 18}, infer_reduce);
  r.add("", "ReduceMax", {1, 11, 12, 13, 18, 20}, infer_reduce);
  r.add("", "ReduceMin", {1, 11, 12, 13, 18, 20}, infer_reduce);
  r.add("", "ReduceProd", {1, 11, 13, 18}, infer_reduce);
  r.add("", "ReduceL1", {1, 11, 13, 18}, infer_reduce);
  r.add("", "ReduceL2", {1, 11, 13, 18}, infer_reduce);
  r.add("", "ReduceLogSum", {1, 11, 13, 18, 28}, infer_reduce);
  r.add("", "ReduceLogSumExp", {1, 11, 13, 18, 28}, infer_reduce);
  r.add("", "ReduceSumSquare", {1, 11, 13, 18}, infer_reduce);
  r.add("", "ArgMax", {1, 11, 12, 13}, infer_arg);
  r.add("", "ArgMin", {1, 11, 12, 13}, infer_arg);
  r.add("", "Softmax", {1, 11, 13}, infer_softmax);
  r.add("", "LogSoftmax", {1, 11, 13}, infer_softmax);
  r.add("", "Hardmax", {1, 11, 13}, infer_softmax);
  r.add("", "CumSum", {11, 14}, infer_cumsum);
  r.add("", "CumProd", {26}, infer_cumsum);
  r.add("", "TopK", {1, 10, 11, 24}, infer_topk);
  r.add("", "LpNormalization", {1, 22}, infer_lp_normalization);
}

}  // namespace onyx
