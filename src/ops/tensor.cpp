// Tensor-manipulation family: Constant, Identity, Shape, Size, Reshape, Flatten, Squeeze,
// Unsqueeze, Transpose, Concat, Split, Slice, Gather, Expand, Tile, Pad, ConstantOfShape, Range.
#include "ops/tensor.hpp"

#include "core/narrow.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/schema.hpp"

namespace onyx {

Tensor constant_node_value(const Node& n) {
  int given = 0;
  for (const char* k :
       {"value", "sparse_value", "value_float", "value_int", "value_floats", "value_ints", "value_string", "value_strings"})
    given += n.has_attr(k) ? 1 : 0;
  if (given > 1)
    fail(ErrorCode::kInvalidGraph, n.label(), ": Constant must have exactly one value attribute, not ", given);
  if (const Attribute* a = n.attr("value")) return a->t;
  if (const Attribute* a = n.attr("sparse_value")) return a->t;
  if (const Attribute* a = n.attr("value_float")) return Tensor::scalar<float>(a->f);
  if (const Attribute* a = n.attr("value_int")) return Tensor::scalar<int64_t>(a->i);
  if (const Attribute* a = n.attr("value_floats"))
    return Tensor::from_vector<float>(Shape{static_cast<int64_t>(a->floats.size())}, a->floats);
  if (const Attribute* a = n.attr("value_ints"))
    return Tensor::from_vector<int64_t>(Shape{static_cast<int64_t>(a->ints.size())}, a->ints);
  if (const Attribute* a = n.attr("value_string")) {
    Tensor t(DType::kString, Shape{});
    *t.data<std::string>() = a->s;
    return t;
  }
  if (const Attribute* a = n.attr("value_strings")) {
    Tensor t(DType::kString, Shape{static_cast<int64_t>(a->strings.size())});
    for (size_t i = 0; i < a->strings.size(); ++i) t.data<std::string>()[i] = a->strings[i];
    return t;
  }
  fail(ErrorCode::kInvalidGraph, n.label(), ": Constant has no value attribute");
}

Shape reshape_shape(const Node& node, const Shape& in, const Shape& spec, bool allowzero) {
  Shape out;
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (infer_at >= 0) fail(ErrorCode::kInvalidArgument, node.label(), ": shape ", spec.to_string(), " has more than one -1");
      infer_at = static_cast<int>(i);
      out.push_back(1);
      continue;
    }
    if (d == 0 && !allowzero) {
      if (i >= in.size())
        fail(ErrorCode::kInvalidArgument, node.label(), ": shape entry ", i, " is 0 but the input has rank ", in.size());
      d = in[i];
    }
    if (d < 0) fail(ErrorCode::kInvalidArgument, node.label(), ": invalid dimension ", d, " in target shape");
    known = checked_mul(known, d, "Reshape");
    out.push_back(d);
  }
  const int64_t total = in.numel();
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      fail(ErrorCode::kInvalidArgument, node.label(), ": cannot reshape ", in.to_string(), " (", total, " elements) into ",
           spec.to_string());
    out[infer_at] = total / known;
  } else if (known != total) {
    fail(ErrorCode::kInvalidArgument, node.label(), ": cannot reshape ", in.to_string(), " (", total, " elements) into ",
         out.to_string(), " (", known, " elements)");
  }
  return out;
}

Shape flatten_shape(const Node& node, const Shape& in, int64_t axis) {
  const int64_t r = static_cast<int64_t>(in.size());
  if (axis < -r || axis > r) fail(ErrorCode::kInvalidGraph, node.label(), ": axis ", axis, " out of range for rank ", r);
  if (axis < 0) axis += r;
  int64_t a = 1, b = 1;
  for (int64_t k = 0; k < r; ++k) (k < axis ? a : b) *= in[k];
  return Shape{a, b};
}

Shape squeeze_shape(const Node& node, const Shape& in, const Shape& axes) {
  const int64_t r = static_cast<int64_t>(in.size());
  char drop[64] = {};
  if (r > 64) fail(ErrorCode::kNotImplemented, node.label(), ": rank ", r, " is too large");
  if (axes.empty()) {
    for (int64_t k = 0; k < r; ++k) drop[k] = in[k] == 1;
  } else {
    for (int64_t a : axes) {
      const int64_t k = normalize_axis(a, r, node.label());
      if (in[k] != 1 && in[k] >= 0)
        fail(ErrorCode::kInvalidArgument, node.label(), ": cannot squeeze axis ", a, " of size ", in[k], " (shape ",
             in.to_string(), ")");
      drop[k] = 1;
    }
  }
  Shape out;
  for (int64_t k = 0; k < r; ++k)
    if (!drop[k]) out.push_back(in[k]);
  return out;
}

Shape unsqueeze_shape(const Node& node, const Shape& in, const Shape& axes) {
  const int64_t r = static_cast<int64_t>(in.size() + axes.size());
  char ins[64] = {};
  if (r > 64) fail(ErrorCode::kNotImplemented, node.label(), ": rank ", r, " is too large");
  for (int64_t a : axes) {
    const int64_t k = normalize_axis(a, r, node.label());
    if (ins[k]) fail(ErrorCode::kInvalidGraph, node.label(), ": axis ", a, " is repeated");
    ins[k] = 1;
  }
  Shape out;
  size_t j = 0;
  for (int64_t k = 0; k < r; ++k) out.push_back(ins[k] ? 1 : in[j++]);
  return out;
}

SliceSpec resolve_slice(const Node& node, const Shape& in, const Shape& starts, const Shape& ends, const Shape& axes_in,
                        const Shape& steps_in) {
  const int64_t r = static_cast<int64_t>(in.size());
  if (starts.size() != ends.size())
    fail(ErrorCode::kInvalidArgument, node.label(), ": starts and ends have different lengths");
  Shape axes = axes_in;
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (axes.size() != starts.size() || (!steps_in.empty() && steps_in.size() != starts.size()))
    fail(ErrorCode::kInvalidArgument, node.label(), ": starts, ends, axes and steps must have the same length");
  if (r > 64) fail(ErrorCode::kNotImplemented, node.label(), ": rank ", r, " is too large");
  SliceSpec s;
  s.start = Shape::filled(r, 0);
  s.step = Shape::filled(r, 1);
  s.count = in;
  char seen[64] = {};
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = normalize_axis(axes[i], r, node.label());
    if (seen[a]) fail(ErrorCode::kInvalidArgument, node.label(), ": axis ", axes[i], " is repeated");
    seen[a] = 1;
    const int64_t dim = in[a];
    const int64_t step = steps_in.empty() ? 1 : steps_in[i];
    if (step == 0) fail(ErrorCode::kInvalidArgument, node.label(), ": step 0 on axis ", a);
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b = b < std::numeric_limits<int64_t>::min() + dim ? 0 : b + dim;
    if (e < 0) e = e < std::numeric_limits<int64_t>::min() + dim ? -1 : e + dim;
    int64_t count;
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > b ? (e - b - 1) / step + 1 : 0;  // (no e - b + step - 1: a 2^63 - 1 step would overflow)
    } else {
      b = std::clamp<int64_t>(b, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      // |step| as unsigned: -step overflows for the lowest int64.
      const uint64_t mag = uint64_t{0} - static_cast<uint64_t>(step);
      count = b > e ? static_cast<int64_t>((static_cast<uint64_t>(b - e) - 1) / mag + 1) : 0;
    }
    s.start[a] = b;
    s.step[a] = step;
    s.count[a] = count;
  }
  return s;
}

Shape split_sizes(const Node& node, int64_t dim, size_t n, const Shape* split) {
  if (split && !split->empty()) {
    if (split->size() != n)
      fail(ErrorCode::kInvalidArgument, node.label(), ": split has ", split->size(), " entries for ", n, " outputs");
    int64_t sum = 0;
    for (int64_t v : *split) {
      if (v < 0) fail(ErrorCode::kInvalidArgument, node.label(), ": negative split size ", v);
      if (v > dim - sum)  // (the sum must be dim: checked before it could overflow)
        fail(ErrorCode::kInvalidArgument, node.label(), ": split sizes ", split->to_string(), " sum to more than the axis's ", dim);
      sum += v;
    }
    if (sum != dim) fail(ErrorCode::kInvalidArgument, node.label(), ": split sizes sum to ", sum, " but the axis has ", dim);
    return *split;
  }
  if (n == 0) fail(ErrorCode::kInvalidGraph, node.label(), ": no outputs");
  const int64_t k = static_cast<int64_t>(n);
  if (node.opset >= 18 && node.has_attr("num_outputs")) {
    const int64_t chunk = dim / k + (dim % k != 0);
    Shape r;
    int64_t left = dim;
    for (int64_t i = 0; i < k; ++i) {
      r.push_back(std::min(chunk, left));
      left -= r.back();
    }
    return r;
  }
  if (dim % k != 0)
    fail(ErrorCode::kInvalidArgument, node.label(), ": axis of size ", dim, " cannot be split evenly into ", n, " outputs");
  return Shape::filled(n, dim / k);
}

std::vector<int64_t> pad_index_map(const Node& node, const std::string& mode, int64_t dim, int64_t out_dim, int64_t before) {
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    fail(ErrorCode::kInvalidGraph, node.label(), ": unknown pad mode '", mode, "'");
  if (dim == 0 && out_dim > 0 && mode != "constant")
    fail(ErrorCode::kInvalidArgument, node.label(), ": cannot ", mode, "-pad an empty dimension");
  std::vector<int64_t> map(static_cast<size_t>(std::max<int64_t>(out_dim, 0)));
  for (int64_t o = 0; o < out_dim; ++o) {
    int64_t i = o - before;
    if (i < 0 || i >= dim) {
      if (mode == "constant") {
        i = -1;
      } else if (mode == "edge") {
        i = std::clamp<int64_t>(i, 0, dim - 1);
      } else if (mode == "wrap") {
        i = ((i % dim) + dim) % dim;
      } else if (dim == 1) {  // reflect
        i = 0;
      } else {
        const int64_t period = 2 * (dim - 1);
        i = ((i % period) + period) % period;
        if (i >= dim) i = period - i;
      }
    }
    map[static_cast<size_t>(o)] = i;
  }
  return map;
}

Shape pad_amounts(const Node& node, size_t rank, const Shape& pads, const Shape* axes) {
  Shape out = Shape::filled(2 * rank, 0);
  if (axes && !axes->empty()) {
    const size_t na = axes->size();
    if (pads.size() != 2 * na)
      fail(ErrorCode::kInvalidArgument, node.label(), ": pads has ", pads.size(), " entries for ", na, " axes");
    for (size_t i = 0; i < na; ++i) {
      const int64_t a = normalize_axis((*axes)[i], static_cast<int64_t>(rank), node.label());
      out[a] = pads[i];
      out[a + rank] = pads[i + na];
    }
    return out;
  }
  if (pads.size() != 2 * rank)
    fail(ErrorCode::kInvalidArgument, node.label(), ": pads has ", pads.size(), " entries for an input of rank ", rank);
  return pads;
}

namespace {

void infer_constant(InferContext& ctx) {
  Tensor t = constant_node_value(ctx.node());
  ctx.set_output(0, t.dtype(), t.shape());
  ctx.set_output_value(0, Value(t));
}

void infer_identity(InferContext& ctx) {
  ctx.propagate(0, 0);
  if (const Value* v = ctx.input_value(0)) ctx.set_output_value(0, *v);
}

// onyx::Copy moves a value between memories: same type, and never a compile-time value (the copy
// must run, so the result lands in the target memory).
void infer_copy(InferContext& ctx) { ctx.propagate(0, 0); }

void infer_shape(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  if (!t.has_shape) return ctx.set_output(0, DType::kInt64, Shape{ctx.fresh()});
  const int64_t r = static_cast<int64_t>(t.shape.size());
  int64_t b = ctx.opset() >= 15 ? ctx.node().attr_int("start", 0) : 0;
  int64_t e = ctx.opset() >= 15 ? ctx.node().attr_int("end", r) : r;
  if (b < 0) b += r;
  if (e < 0) e += r;
  b = std::clamp<int64_t>(b, 0, r);
  e = std::clamp<int64_t>(e, 0, r);
  const int64_t n = std::max<int64_t>(0, e - b);
  ctx.set_output(0, DType::kInt64, Shape{n});
  bool concrete = true;
  for (int64_t k = b; k < e; ++k) concrete &= t.shape[k] >= 0;
  if (concrete) {
    std::vector<int64_t> dims(t.shape.begin() + b, t.shape.begin() + b + n);
    ctx.set_output_value(0, Value(Tensor::from_vector<int64_t>(Shape{n}, dims)));
  }
}

void infer_size(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  ctx.set_output(0, DType::kInt64, Shape{});
  if (t.has_shape && t.shape.is_concrete()) ctx.set_output_value(0, Value(Tensor::scalar<int64_t>(t.shape.numel())));
}

void infer_reshape(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  std::vector<int64_t> spec;
  bool known;
  if (ctx.opset() < 5) {
    spec = ctx.node().attr_ints("shape");
    known = true;
  } else {
    known = ctx.input_ints(1, spec);
  }
  const bool allowzero = ctx.opset() >= 14 && ctx.node().attr_int("allowzero", 0) != 0;
  if (known && t.has_shape && t.shape.is_concrete())
    return ctx.set_output(0, t.dtype, reshape_shape(ctx.node(), t.shape, Shape(spec), allowzero));
  if (known) {
    // Symbolic input: copy dims for 0, keep the known ones, unknown for -1.
    Shape out;
    for (size_t i = 0; i < spec.size(); ++i) {
      if (spec[i] == 0 && !allowzero && t.has_shape && i < t.shape.size())
        out.push_back(t.shape[i]);
      else if (spec[i] >= 0)
        out.push_back(spec[i]);
      else
        out.push_back(ctx.fresh());
    }
    return ctx.set_output(0, t.dtype, out);
  }
  if (ctx.input_has_shape(1) && ctx.input_shape(1).size() == 1 && ctx.input_shape(1)[0] >= 0)
    return ctx.set_output(0, t.dtype, ctx.fresh_shape(ctx.input_shape(1)[0]));
  ctx.set_output_unranked(0, t.dtype);
}

void infer_flatten(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  const int64_t axis = ctx.node().attr_int("axis", 1);
  if (!t.has_shape) return ctx.set_output(0, t.dtype, ctx.fresh_shape(2));
  if (t.shape.is_concrete()) return ctx.set_output(0, t.dtype, flatten_shape(ctx.node(), t.shape, axis));
  const int64_t r = static_cast<int64_t>(t.shape.size());
  const int64_t a = axis < 0 ? axis + r : axis;
  Shape out{ctx.fresh(), ctx.fresh()};
  if (a == 0) out[0] = 1;
  if (a == r) out[1] = 1;
  if (a == 1) out[0] = t.shape[0];
  if (a == r - 1) out[1] = t.shape[r - 1];
  ctx.set_output(0, t.dtype, out);
}

bool squeeze_axes(InferContext& ctx, std::vector<int64_t>& axes) {
  if (ctx.opset() < 13) {
    axes = ctx.node().attr_ints("axes");
    return true;
  }
  if (!ctx.has_input(1)) {
    axes.clear();
    return true;
  }
  return ctx.input_ints(1, axes);
}

void infer_squeeze(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  std::vector<int64_t> axes;
  if (!squeeze_axes(ctx, axes) || !t.has_shape) return ctx.set_output_unranked(0, t.dtype);
  if (axes.empty() && !t.shape.is_concrete()) return ctx.set_output_unranked(0, t.dtype);
  ctx.set_output(0, t.dtype, squeeze_shape(ctx.node(), t.shape, Shape(axes)));
  if (const Tensor* v = ctx.input_tensor(0))
    ctx.set_output_value(0, Value(v->reshaped(squeeze_shape(ctx.node(), v->shape(), Shape(axes)))));
}

void infer_unsqueeze(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  std::vector<int64_t> axes;
  const bool known = ctx.opset() < 13 ? (axes = ctx.node().attr_ints("axes"), true) : ctx.input_ints(1, axes);
  if (!known || !t.has_shape) return ctx.set_output_unranked(0, t.dtype);
  ctx.set_output(0, t.dtype, unsqueeze_shape(ctx.node(), t.shape, Shape(axes)));
  if (const Tensor* v = ctx.input_tensor(0))
    ctx.set_output_value(0, Value(v->reshaped(unsqueeze_shape(ctx.node(), v->shape(), Shape(axes)))));
}

void infer_transpose(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  if (!t.has_shape) return ctx.set_output_unranked(0, t.dtype);
  const size_t r = t.shape.size();
  std::vector<int64_t> perm = ctx.node().attr_ints("perm");
  if (perm.empty())
    for (size_t k = 0; k < r; ++k) perm.push_back(static_cast<int64_t>(r - 1 - k));
  if (perm.size() != r) ctx.fail_node("perm has ", perm.size(), " entries for rank ", r);
  std::vector<char> seen(r, 0);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0) p += static_cast<int64_t>(r);
    if (p < 0 || p >= static_cast<int64_t>(r) || seen[p]) ctx.fail_node("perm is not a permutation of 0..", r - 1);
    seen[p] = 1;
    out.push_back(t.shape[p]);
  }
  ctx.set_output(0, t.dtype, out);
}

void infer_concat(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  int64_t axis = ctx.node().attr_int("axis", ctx.opset() < 4 ? 1 : std::numeric_limits<int64_t>::min());
  if (axis == std::numeric_limits<int64_t>::min()) ctx.fail_node("attribute 'axis' is required");
  Shape out;
  bool init = false;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (ctx.input_dtype(i) != dt) ctx.fail_node("input ", i, " has type ", dtype_name(ctx.input_dtype(i)), ", input 0 has ", dtype_name(dt));
    if (!ctx.input_has_shape(i)) return ctx.set_output_unranked(0, dt);
    const Shape& s = ctx.input_shape(i);
    const int64_t r = static_cast<int64_t>(s.size());
    const int64_t a = normalize_axis(axis, r, ctx.node().label());
    if (!init) {
      out = s;
      init = true;
      continue;
    }
    if (s.size() != out.size()) ctx.fail_node("input ", i, " has rank ", s.size(), ", input 0 has rank ", out.size());
    for (int64_t k = 0; k < r; ++k) {
      if (k == a) {
        out[k] = (out[k] >= 0 && s[k] >= 0) ? out[k] + s[k] : ctx.fresh();
      } else if (out[k] < 0 && s[k] >= 0) {
        out[k] = s[k];
      } else if (out[k] >= 0 && s[k] >= 0 && out[k] != s[k]) {
        ctx.fail_node("input ", i, " has shape ", s.to_string(), ", which does not match ", out.to_string(), " off axis ", a);
      }
    }
  }
  ctx.set_output(0, dt, out);
  // Concatenations of small known values (shape computations) are folded by the planner.
}

void infer_split(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  const size_t n = ctx.num_outputs();
  if (!t.has_shape) {
    for (size_t i = 0; i < n; ++i) ctx.set_output_unranked(i, t.dtype);
    return;
  }
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), static_cast<int64_t>(t.shape.size()), ctx.node().label());
  std::vector<int64_t> split;
  bool known = true;
  if (ctx.opset() < 13) {
    split = ctx.node().attr_ints("split");
  } else if (ctx.has_input(1)) {
    known = ctx.input_ints(1, split);
  }
  if (ctx.opset() >= 18 && ctx.node().has_attr("num_outputs") && ctx.node().attr_int("num_outputs", 0) != static_cast<int64_t>(n))
    ctx.fail_node("num_outputs is ", ctx.node().attr_int("num_outputs", 0), " but the node has ", n, " outputs");
  if (ctx.opset() >= 18 && ctx.node().has_attr("num_outputs") && ctx.has_input(1))
    ctx.fail_node("give either the split input or the num_outputs attribute, not both");
  const int64_t dim = t.shape[axis];
  Shape sizes;
  const Shape split_list(split);
  if (known && dim >= 0) sizes = split_sizes(ctx.node(), dim, n, &split_list);
  else if (known && !split.empty()) sizes = split_list;
  for (size_t i = 0; i < n; ++i) {
    Shape s = t.shape;
    s[axis] = i < sizes.size() ? sizes[i] : ctx.fresh();
    ctx.set_output(i, t.dtype, s);
  }
}

bool slice_params(InferContext& ctx, std::vector<int64_t>& starts, std::vector<int64_t>& ends,
                  std::vector<int64_t>& axes, std::vector<int64_t>& steps) {
  const Node& n = ctx.node();
  if (ctx.opset() < 10) {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
    return true;
  }
  if (!ctx.input_ints(1, starts) || !ctx.input_ints(2, ends)) return false;
  if (ctx.has_input(3) && !ctx.input_ints(3, axes)) return false;
  if (ctx.has_input(4) && !ctx.input_ints(4, steps)) return false;
  return true;
}

void infer_slice(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  if (!t.has_shape) return ctx.set_output_unranked(0, t.dtype);
  std::vector<int64_t> starts, ends, axes, steps;
  if (!slice_params(ctx, starts, ends, axes, steps)) {
    // Unknown parameters: dims not named by a known axes list stay as they are.
    Shape out = ctx.fresh_shape(t.shape.size());
    if (ctx.has_input(3) && ctx.input_ints(3, axes)) {
      out = t.shape;
      for (int64_t a : axes) out[normalize_axis(a, static_cast<int64_t>(t.shape.size()), ctx.node().label())] = ctx.fresh();
    }
    return ctx.set_output(0, t.dtype, out);
  }
  // Dims not sliced keep their (possibly symbolic) size; sliced dims need concrete input sizes.
  Shape probe = t.shape;
  for (auto& d : probe)
    if (d < 0) d = std::numeric_limits<int32_t>::max();
  SliceSpec s = resolve_slice(ctx.node(), probe, Shape(starts), Shape(ends), Shape(axes), Shape(steps));
  Shape out;
  for (size_t k = 0; k < t.shape.size(); ++k) {
    const bool sliced = s.start[k] != 0 || s.step[k] != 1 || s.count[k] != probe[k];
    out.push_back(t.shape[k] >= 0 ? s.count[k] : (sliced ? ctx.fresh() : t.shape[k]));
  }
  ctx.set_output(0, t.dtype, out);
}

void infer_gather(InferContext& ctx) {
  const TypeInfo& d = ctx.input_type(0);
  const TypeInfo& idx = ctx.input_type(1);
  ctx.require_dtype(1, {DType::kInt32, DType::kInt64});
  if (!d.has_shape || !idx.has_shape) return ctx.set_output_unranked(0, d.dtype);
  const int64_t r = static_cast<int64_t>(d.shape.size());
  if (r == 0) ctx.fail_node("data must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), r, ctx.node().label());
  Shape out;
  for (int64_t k = 0; k < axis; ++k) out.push_back(d.shape[k]);
  for (int64_t v : idx.shape) out.push_back(v);
  for (int64_t k = axis + 1; k < r; ++k) out.push_back(d.shape[k]);
  ctx.set_output(0, d.dtype, out);
}

void infer_expand(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  std::vector<int64_t> spec;
  if (ctx.input_ints(1, spec) && t.has_shape) {
    Shape target(spec);
    return ctx.set_output(0, t.dtype, shape_util::broadcast(ctx, t.shape, target));
  }
  if (t.has_shape && ctx.input_has_shape(1) && ctx.input_shape(1).size() == 1 && ctx.input_shape(1)[0] >= 0)
    return ctx.set_output(0, t.dtype, ctx.fresh_shape(std::max<size_t>(t.shape.size(), ctx.input_shape(1)[0])));
  ctx.set_output_unranked(0, t.dtype);
}

void infer_tile(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  if (!t.has_shape) return ctx.set_output_unranked(0, t.dtype);
  std::vector<int64_t> reps;
  if (ctx.opset() < 6) {
    std::vector<int64_t> tiles, axis;
    if (!ctx.input_ints(1, tiles) || !ctx.input_ints(2, axis)) return ctx.set_output(0, t.dtype, ctx.fresh_shape(t.shape.size()));
    reps.assign(t.shape.size(), 1);
    const int64_t a = normalize_axis(axis.at(0), static_cast<int64_t>(t.shape.size()), ctx.node().label());
    reps[a] = tiles.at(0);
  } else if (!ctx.input_ints(1, reps)) {
    return ctx.set_output(0, t.dtype, ctx.fresh_shape(t.shape.size()));
  }
  if (reps.size() != t.shape.size()) ctx.fail_node("repeats has ", reps.size(), " entries for rank ", t.shape.size());
  Shape out;
  for (size_t k = 0; k < reps.size(); ++k) {
    if (reps[k] < 0) ctx.fail_node("negative repeat ", reps[k]);
    out.push_back(t.shape[k] >= 0 ? ctx.checked_dim(__int128(t.shape[k]) * reps[k]) : (reps[k] == 1 ? t.shape[k] : ctx.fresh()));
  }
  ctx.set_output(0, t.dtype, out);
}

void infer_pad(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  if (!t.has_shape) return ctx.set_output_unranked(0, t.dtype);
  std::vector<int64_t> pads, axes;
  bool known = true, has_axes = false;
  if (ctx.opset() < 11) {
    pads = ctx.node().attr_ints(ctx.opset() < 2 ? "paddings" : "pads");
  } else {
    known = ctx.input_ints(1, pads);
    if (ctx.has_input(3)) {
      has_axes = true;
      known = known && ctx.input_ints(3, axes);
    }
  }
  if (!known) return ctx.set_output(0, t.dtype, ctx.fresh_shape(t.shape.size()));
  const Shape axes_list(axes);
  const Shape p = pad_amounts(ctx.node(), t.shape.size(), Shape(pads), has_axes ? &axes_list : nullptr);
  Shape out;
  const size_t r = t.shape.size();
  for (size_t k = 0; k < r; ++k) {
    if (t.shape[k] < 0) {
      out.push_back(p[k] == 0 && p[k + r] == 0 ? t.shape[k] : ctx.fresh());
      continue;
    }
    const int64_t d = ctx.checked_dim(__int128(t.shape[k]) + p[k] + p[k + r]);
    if (d < 0) ctx.fail_node("padding makes dim ", k, " negative");
    out.push_back(d);
  }
  ctx.set_output(0, t.dtype, out);
}

void infer_constant_of_shape(InferContext& ctx) {
  DType dt = DType::kFloat;
  if (const Tensor* v = ctx.node().attr_tensor("value")) {
    if (v->numel() != 1) ctx.fail_node("value must have exactly one element");
    dt = v->dtype();
  }
  std::vector<int64_t> dims;
  if (ctx.input_ints(0, dims)) {
    for (int64_t d : dims)
      if (d < 0) ctx.fail_node("negative dimension ", d, " in the shape input");
    return ctx.set_output(0, dt, Shape(dims));
  }
  if (ctx.input_has_shape(0) && ctx.input_shape(0).size() == 1 && ctx.input_shape(0)[0] >= 0)
    return ctx.set_output(0, dt, ctx.fresh_shape(ctx.input_shape(0)[0]));
  ctx.set_output_unranked(0, dt);
}

void infer_range(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const Tensor* s = ctx.input_tensor(0);
  const Tensor* l = ctx.input_tensor(1);
  const Tensor* d = ctx.input_tensor(2);
  if (s && l && d) {
    const double start = s->element_as_double(0), limit = l->element_as_double(0), delta = d->element_as_double(0);
    if (delta == 0) ctx.fail_node("delta must not be zero");
    const double n = std::ceil((limit - start) / delta);
    if (!(n < 1e12)) ctx.fail_node("range of ", n, " elements is too large");
    return ctx.set_output(0, dt, Shape{std::max<int64_t>(0, static_cast<int64_t>(n))});
  }
  ctx.set_output(0, dt, Shape{ctx.fresh()});
}

/// Bits of one element (4 or 2 for the packed types, which onyx keeps one per byte).
int64_t element_bits(DType t) {
  if (const int b = packed_bits(t)) return b;
  return static_cast<int64_t>(dtype_size(t)) * 8;
}

void infer_bitcast(InferContext& ctx) {
  const int64_t to = ctx.node().attr_int("to", 0);
  if (!dtype_valid(static_cast<int32_t>(to)) || static_cast<DType>(to) == DType::kString)
    ctx.fail_node("attribute 'to' is not a valid non-string type (", to, ")");
  const DType from = ctx.input_dtype(0), dt = static_cast<DType>(to);
  if (from == DType::kString) ctx.fail_node("strings have no bit pattern to reinterpret");
  if (element_bits(from) != element_bits(dt))
    ctx.fail_node("cannot reinterpret ", dtype_name(from), " (", element_bits(from), " bits) as ", dtype_name(dt), " (",
                  element_bits(dt), " bits)");
  const TypeInfo& t = ctx.input_type(0);
  if (t.has_shape)
    ctx.set_output(0, dt, t.shape);
  else
    ctx.set_output_unranked(0, dt);
}

}  // namespace

void register_tensor_ops(OpRegistry& r) {
  r.add("", "Constant", {1, 9, 11, 12, 13, 19, 21, 23, 24, 25}, infer_constant);
  r.add("", "Identity", {1, 13, 14, 16, 19, 21, 23, 24, 25}, infer_identity);
  r.add("", "BitCast", {26}, infer_bitcast);
  r.add("onyx", "Copy", {1}, infer_copy);
  r.add("", "Shape", {1, 13, 15, 19, 21, 23, 24, 25}, infer_shape);
  r.add("", "Size", {1, 13, 19, 21, 23, 24, 25}, infer_size);
  r.add("", "Reshape", {1, 5, 13, 14, 19, 21, 23, 24, 25}, infer_reshape);
  r.add("", "Flatten", {1, 9, 11, 13, 21, 23, 24, 25}, infer_flatten);
  r.add("", "Squeeze", {1, 11, 13, 21, 23, 24, 25}, infer_squeeze);
  r.add("", "Unsqueeze", {1, 11, 13, 21, 23, 24, 25}, infer_unsqueeze);
  r.add("", "Transpose", {1, 13, 21, 23, 24, 25}, infer_transpose);
  r.add("", "Concat", {1, 4, 11, 13}, infer_concat);
  r.add("", "Split", {1, 2, 11, 13, 18}, infer_split);
  r.add("", "Slice", {1, 10, 11, 13}, infer_slice);
  r.add("", "Gather", {1, 11, 13}, infer_gather);
  r.add("", "Expand", {8, 13}, infer_expand);
  r.add("", "Tile", {1, 6, 13}, infer_tile);
  r.add("", "Pad", {1, 2, 11, 13, 18, 19, 21, 23, 24, 25}, infer_pad);
  r.add("", "ConstantOfShape", {9, 20, 21, 23, 24, 25}, infer_constant_of_shape);
  r.add("", "Range", {11, 27}, infer_range);
}

}  // namespace onyx
