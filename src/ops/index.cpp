// Index family: GatherElements, GatherND, ScatterElements, ScatterND, Scatter, OneHot, NonZero,
// Compress, Trilu, EyeLike, DepthToSpace, SpaceToDepth, ReverseSequence, Unique, Col2Im,
// CenterCropPad.
#include "ops/index.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/nn.hpp"
#include "ops/schema.hpp"

namespace onyx {

namespace {

[[noreturn]] void bad(const Node& node, const std::string& msg) {
  fail(ErrorCode::kInvalidArgument, node.label(), ": ", msg);
}

bool known(int64_t d) { return d >= 0; }

}  // namespace

Shape gather_nd_shape(const Node& node, const Shape& data, const Shape& indices, int64_t b) {
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(indices.size());
  if (r < 1 || q < 1) bad(node, str("data and indices must have rank >= 1 (got ", r, " and ", q, ")"));
  if (b < 0 || b >= std::min(q, r))
    bad(node, str("batch_dims ", b, " must be in [0, ", std::min(q, r) - 1, "] for data of rank ", r,
                  " and indices of rank ", q));
  const int64_t k = indices[q - 1];
  if (!known(k)) bad(node, "the last dimension of indices must be known");
  if (k > r - b)
    bad(node, str("indices.shape[-1] = ", k, " exceeds rank(data) - batch_dims = ", r - b, " (data ", data.to_string(),
                  ", indices ", indices.to_string(), ")"));
  for (int64_t i = 0; i < b; ++i)
    if (known(data[i]) && known(indices[i]) && data[i] != indices[i])
      bad(node, str("batch dimension ", i, " differs: data ", data.to_string(), ", indices ", indices.to_string()));
  Shape out;
  for (int64_t i = 0; i + 1 < q; ++i) out.push_back(i < b && !known(indices[i]) ? data[i] : indices[i]);
  for (int64_t i = b + k; i < r; ++i) out.push_back(data[i]);
  return out;
}

void check_scatter_nd_shapes(const Node& node, const Shape& data, const Shape& indices, const Shape& updates) {
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(indices.size());
  if (r < 1 || q < 1) bad(node, str("data and indices must have rank >= 1 (got ", r, " and ", q, ")"));
  const int64_t k = indices[q - 1];
  if (!known(k)) return;
  if (k > r) bad(node, str("indices.shape[-1] = ", k, " exceeds the rank of data ", data.to_string()));
  Shape want;
  for (int64_t i = 0; i + 1 < q; ++i) want.push_back(indices[i]);
  for (int64_t i = k; i < r; ++i) want.push_back(data[i]);
  bool ok = want.size() == updates.size();
  for (size_t i = 0; ok && i < want.size(); ++i) ok = !known(want[i]) || !known(updates[i]) || want[i] == updates[i];
  if (!ok)
    bad(node, str("updates has shape ", updates.to_string(), "; expected ", want.to_string(), " for data ",
                  data.to_string(), " and indices ", indices.to_string()));
}

int64_t check_elements_shapes(const Node& node, const Shape& data, const Shape& indices, const Shape* updates) {
  const int64_t r = static_cast<int64_t>(data.size());
  if (r < 1) bad(node, "data must have rank >= 1");
  if (static_cast<int64_t>(indices.size()) != r)
    bad(node, str("indices has rank ", indices.size(), " but data has rank ", r));
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), r, node.label());
  for (int64_t k = 0; k < r; ++k)
    if (k != axis && known(indices[k]) && known(data[k]) && indices[k] > data[k])
      bad(node, str("indices shape ", indices.to_string(), " exceeds data shape ", data.to_string(), " on axis ", k));
  if (updates) {
    bool ok = updates->size() == indices.size();
    for (size_t i = 0; ok && i < indices.size(); ++i)
      ok = !known(indices[i]) || !known((*updates)[i]) || indices[i] == (*updates)[i];
    if (!ok) bad(node, str("updates has shape ", updates->to_string(), " but indices has shape ", indices.to_string()));
  }
  return axis;
}

Shape onehot_shape(const Node& node, const Shape& indices, int64_t depth) {
  const int64_t r = static_cast<int64_t>(indices.size());
  int64_t axis = node.attr_int("axis", -1);
  if (axis < -r - 1 || axis > r) bad(node, str("axis ", axis, " is out of range [", -r - 1, ", ", r, "]"));
  if (axis < 0) axis += r + 1;
  Shape out = indices;
  out.insert(static_cast<size_t>(axis), depth);
  return out;
}

int64_t blocksize_attr(const Node& node) {
  const int64_t b = node.attr_int("blocksize", 0);
  if (b <= 0)
    fail(ErrorCode::kInvalidGraph, node.label(), ": attribute 'blocksize' must be a positive integer (got ", b, ")");
  if (b > (int64_t(1) << 31))  // (blocksize^2 must fit in 64 bits; no tensor has such dims anyway)
    fail(ErrorCode::kInvalidGraph, node.label(), ": attribute 'blocksize' ", b, " is too large");
  return b;
}

bool depth_to_space_crd(const Node& node) {
  // DepthToSpace has mode since opset 11, SpaceToDepth since opset 28 (DCR by default).
  if (node.opset < (node.op_type == "SpaceToDepth" ? 28 : 11)) return false;
  const std::string mode = node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") fail(ErrorCode::kInvalidGraph, node.label(), ": unknown mode '", mode, "'");
  return mode == "CRD";
}

Shape depth_to_space_shape(const Node& node, const Shape& in, int64_t b) {
  if (in.size() != 4) bad(node, str("input must have rank 4, got ", in.to_string()));
  if (in[1] % (b * b) != 0) bad(node, str("channels ", in[1], " are not divisible by blocksize^2 = ", b * b));
  return Shape{in[0], in[1] / (b * b), checked_mul(in[2], b, "DepthToSpace"), checked_mul(in[3], b, "DepthToSpace")};
}

Shape space_to_depth_shape(const Node& node, const Shape& in, int64_t b) {
  if (in.size() != 4) bad(node, str("input must have rank 4, got ", in.to_string()));
  if (in[2] % b != 0 || in[3] % b != 0)
    bad(node, str("spatial dims of ", in.to_string(), " are not divisible by blocksize ", b));
  return Shape{in[0], checked_mul(in[1], b * b, "SpaceToDepth"), in[2] / b, in[3] / b};
}

Col2ImAttrs col2im_attrs(const Node& node) {
  return Col2ImAttrs{Shape(node.attr_ints("dilations")), Shape(node.attr_ints("pads")),
                     Shape(node.attr_ints("strides"))};
}

Col2ImSpec col2im_spec(const Node& node, const Shape& in, const Shape& image, const Shape& block,
                       const Col2ImAttrs& a) {
  if (in.size() != 3) bad(node, str("input must have rank 3 [N, C*prod(block_shape), L], got ", in.to_string()));
  const size_t d = image.size();
  if (d == 0 || block.size() != d)
    bad(node, str("image_shape and block_shape must be non-empty and of equal length (got ", image.size(), " and ",
                  block.size(), ")"));
  Col2ImSpec s;
  s.image = image;
  s.block = block;
  s.dilations = a.dilations.empty() ? Shape::filled(d, 1) : a.dilations;
  s.strides = a.strides.empty() ? Shape::filled(d, 1) : a.strides;
  const Shape pads = a.pads.empty() ? Shape::filled(2 * d, 0) : a.pads;
  if (s.dilations.size() != d || s.strides.size() != d || pads.size() != 2 * d)
    bad(node, str("dilations, strides and pads must have ", d, ", ", d, " and ", 2 * d, " entries"));
  s.kernel = 1;
  s.blocks = 1;
  for (size_t i = 0; i < d; ++i) {
    if (image[i] < 0) bad(node, str("image_shape[", i, "] = ", image[i], " is negative"));
    if (block[i] <= 0) bad(node, str("block_shape[", i, "] = ", block[i], " must be positive"));
    if (s.dilations[i] <= 0 || s.strides[i] <= 0) bad(node, "dilations and strides must be positive");
    if (pads[i] < 0 || pads[i + d] < 0) bad(node, "pads must be non-negative");
    s.kernel = checked_mul(s.kernel, block[i], "Col2Im");
    const int64_t span = s.dilations[i] * (block[i] - 1) + 1;
    const int64_t avail = image[i] + pads[i] + pads[i + d] - span;
    if (avail < 0)
      bad(node, str("block of extent ", span, " does not fit image dim ", i, " of size ", image[i], " with padding"));
    s.nblocks.push_back(avail / s.strides[i] + 1);
    s.pads_begin.push_back(pads[i]);
    s.blocks = checked_mul(s.blocks, s.nblocks.back(), "Col2Im");
  }
  if (in[1] % s.kernel != 0)
    bad(node, str("input dim 1 (", in[1], ") is not divisible by prod(block_shape) = ", s.kernel));
  if (in[2] != s.blocks)
    bad(node,
        str("input dim 2 (", in[2], ") must equal the number of blocks ", s.blocks, " (", s.nblocks.to_string(), ")"));
  s.batch = in[0];
  s.channels = in[1] / s.kernel;
  s.out = Shape{s.batch, s.channels};
  for (int64_t v : image) s.out.push_back(v);
  return s;
}

CropPadSpec center_crop_pad_spec(const Node& node, const Shape& in, const Shape& target, const Shape* axes) {
  const int64_t r = static_cast<int64_t>(in.size());
  if (r > 64) fail(ErrorCode::kNotImplemented, node.label(), ": rank ", r, " is too large");
  const size_t na = axes ? axes->size() : in.size();
  if (na != target.size()) bad(node, str("shape has ", target.size(), " entries for ", na, " axes"));
  CropPadSpec s;
  s.out = in;
  s.in_start = Shape::filled(in.size(), 0);
  s.out_start = Shape::filled(in.size(), 0);
  s.count = in;
  uint64_t seen = 0;
  for (size_t i = 0; i < na; ++i) {
    const int64_t a = axes ? normalize_axis((*axes)[i], r, node.label()) : static_cast<int64_t>(i);
    if (seen >> a & 1) bad(node, str("axis ", (*axes)[i], " is repeated"));
    seen |= uint64_t(1) << a;
    const int64_t dim = in[a], t = target[i];
    if (t < 0) bad(node, str("target size ", t, " for axis ", a, " is negative"));
    s.out[a] = t;
    if (t < dim) {
      s.in_start[a] = (dim - t) / 2;
      s.count[a] = t;
    } else if (t > dim) {
      s.out_start[a] = (t - dim) / 2;
      s.count[a] = dim;
    }
  }
  return s;
}

DType eyelike_dtype(const Node& node, DType input) {
  const Attribute* a = node.attr("dtype");
  if (!a) return input;
  if (!dtype_valid(static_cast<int32_t>(a->i)))
    fail(ErrorCode::kInvalidGraph, node.label(), ": attribute 'dtype' has invalid value ", a->i);
  const DType dt = static_cast<DType>(a->i);
  const bool ok = dt == DType::kBool || (dtype_is_float(dt) && dtype_size(dt) >= 2) || dtype_is_int(dt);
  if (!ok || dt == DType::kUInt4 || dt == DType::kInt4 || dt == DType::kUInt2 || dt == DType::kInt2)
    fail(ErrorCode::kInvalidGraph, node.label(), ": EyeLike cannot produce ", dtype_name(dt));
  return dt;
}

namespace {

void require_index(InferContext& ctx, size_t i) { ctx.require_dtype(i, {DType::kInt32, DType::kInt64}); }

void require_same_dtype(InferContext& ctx, size_t i, size_t j) {
  if (ctx.input_dtype(i) != ctx.input_dtype(j))
    ctx.fail_node("input ", j, " has type ", dtype_name(ctx.input_dtype(j)), " but input ", i, " has ",
                  dtype_name(ctx.input_dtype(i)));
}

// ---- GatherElements / ScatterElements / Scatter ----

void infer_gather_elements(InferContext& ctx) {
  const TypeInfo& d = ctx.input_type(0);
  require_index(ctx, 1);
  if (!ctx.input_has_shape(1)) return ctx.set_output_unranked(0, d.dtype);
  const Shape& idx = ctx.input_shape(1);
  if (d.has_shape) check_elements_shapes(ctx.node(), d.shape, idx, nullptr);
  ctx.set_output(0, d.dtype, idx);
}

void infer_scatter_elements(InferContext& ctx) {
  require_index(ctx, 1);
  require_same_dtype(ctx, 0, 2);
  if (ctx.input_has_shape(0) && ctx.input_has_shape(1) && ctx.input_has_shape(2))
    check_elements_shapes(ctx.node(), ctx.input_shape(0), ctx.input_shape(1), &ctx.input_shape(2));
  const std::string red = ctx.node().attr_string("reduction", "none");
  const bool ok = red == "none" || (ctx.opset() >= 16 && (red == "add" || red == "mul")) ||
                  (ctx.opset() >= 18 && (red == "max" || red == "min"));
  if (!ok) ctx.fail_node("reduction '", red, "' is not supported at opset ", ctx.opset());
  ctx.propagate(0, 0);
}

// ---- GatherND / ScatterND ----

void infer_gather_nd(InferContext& ctx) {
  const TypeInfo& d = ctx.input_type(0);
  require_index(ctx, 1);
  const int64_t b = ctx.opset() >= 12 ? ctx.node().attr_int("batch_dims", 0) : 0;
  if (!d.has_shape || !ctx.input_has_shape(1)) return ctx.set_output_unranked(0, d.dtype);
  const Shape& idx = ctx.input_shape(1);
  if (idx.empty() || !known(idx.back())) {
    if (idx.empty()) ctx.fail_node("indices must have rank >= 1");
    return ctx.set_output_unranked(0, d.dtype);
  }
  ctx.set_output(0, d.dtype, gather_nd_shape(ctx.node(), d.shape, idx, b));
}

void infer_scatter_nd(InferContext& ctx) {
  require_index(ctx, 1);
  require_same_dtype(ctx, 0, 2);
  if (ctx.input_has_shape(0) && ctx.input_has_shape(1) && ctx.input_has_shape(2))
    check_scatter_nd_shapes(ctx.node(), ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2));
  const std::string red = ctx.node().attr_string("reduction", "none");
  const bool ok = red == "none" || (ctx.opset() >= 16 && (red == "add" || red == "mul")) ||
                  (ctx.opset() >= 18 && (red == "max" || red == "min"));
  if (!ok) ctx.fail_node("reduction '", red, "' is not supported at opset ", ctx.opset());
  ctx.propagate(0, 0);
}

// ---- OneHot ----

void infer_onehot(InferContext& ctx) {
  const DType dt = ctx.input_dtype(2);
  if (ctx.input_has_shape(2) && ctx.input_shape(2).size() != 1) ctx.fail_node("values must be a 1-D tensor [off, on]");
  if (!ctx.input_has_shape(0)) return ctx.set_output_unranked(0, dt);
  int64_t depth = ctx.fresh();
  if (const Tensor* t = ctx.input_tensor(1)) {
    if (t->numel() != 1) ctx.fail_node("depth must have exactly one element, got ", t->shape().to_string());
    if (t->dtype() == DType::kString || t->dtype() == DType::kBool) ctx.fail_node("depth must be numeric");
    const double v = t->element_as_double(0);
    if (!(v >= 0) || v > static_cast<double>(std::numeric_limits<int32_t>::max()) * 1024)
      ctx.fail_node("depth ", v, " is not a valid size");
    depth = static_cast<int64_t>(v);
  }
  ctx.set_output(0, dt, onehot_shape(ctx.node(), ctx.input_shape(0), depth));
}

// ---- NonZero / Compress / Unique (data-dependent sizes) ----

void infer_nonzero(InferContext& ctx) {
  if (!ctx.input_has_shape(0)) return ctx.set_output(0, DType::kInt64, ctx.fresh_shape(2));
  const int64_t r = static_cast<int64_t>(ctx.input_shape(0).size());
  ctx.set_output(0, DType::kInt64, Shape{std::max<int64_t>(r, 1), ctx.fresh()});
}

void infer_compress(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  ctx.require_dtype(1, {DType::kBool});
  if (ctx.input_has_shape(1) && ctx.input_shape(1).size() != 1)
    ctx.fail_node("condition must be 1-D, got ", ctx.input_shape(1).to_string());
  // The number of selected entries is known when the condition is.
  int64_t n = -1;
  const Tensor* c = ctx.input_tensor(1);
  const bool has_axis = ctx.node().has_attr("axis");
  if (has_axis && t.has_shape && t.shape.empty()) ctx.fail_node("axis is given but the input is a scalar");
  if (c && (!has_axis || (t.has_shape && !t.shape.empty()))) {
    int64_t limit = c->numel();
    if (t.has_shape) {
      if (has_axis) {
        const int64_t a =
            normalize_axis(ctx.node().attr_int("axis", 0), static_cast<int64_t>(t.shape.size()), ctx.node().label());
        if (known(t.shape[a]))
          limit = std::min(limit, t.shape[a]);
        else
          limit = -1;
      } else if (t.shape.is_concrete()) {
        limit = std::min(limit, t.shape.numel());
      } else {
        limit = -1;
      }
    } else {
      limit = -1;
    }
    if (limit >= 0) {
      n = 0;
      const bool* p = c->data<bool>();
      for (int64_t i = 0; i < limit; ++i) n += p[i] ? 1 : 0;
    }
  }
  if (!known(n)) n = ctx.fresh();
  if (!has_axis) return ctx.set_output(0, t.dtype, Shape{n});
  if (!t.has_shape) return ctx.set_output_unranked(0, t.dtype);
  const int64_t a =
      normalize_axis(ctx.node().attr_int("axis", 0), static_cast<int64_t>(t.shape.size()), ctx.node().label());
  Shape out = t.shape;
  out[a] = n;
  ctx.set_output(0, t.dtype, out);
}

void infer_unique(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  const int64_t u = ctx.fresh();  // the number of unique entries, shared by Y, indices and counts
  const bool has_axis = ctx.node().has_attr("axis");
  int64_t n = -1;  // entries of inverse_indices
  if (!has_axis) {
    ctx.set_output(0, t.dtype, Shape{u});
    if (t.has_shape && t.shape.is_concrete()) n = t.shape.numel();
  } else if (t.has_shape) {
    const int64_t a =
        normalize_axis(ctx.node().attr_int("axis", 0), static_cast<int64_t>(t.shape.size()), ctx.node().label());
    Shape y = t.shape;
    y[a] = u;
    ctx.set_output(0, t.dtype, y);
    n = t.shape[a];
  } else {
    ctx.set_output_unranked(0, t.dtype);
  }
  ctx.set_output(1, DType::kInt64, Shape{u});
  ctx.set_output(2, DType::kInt64, Shape{known(n) ? n : ctx.fresh()});
  ctx.set_output(3, DType::kInt64, Shape{u});
}

// ---- Trilu / EyeLike / ReverseSequence ----

void infer_trilu(InferContext& ctx) {
  if (ctx.input_has_shape(0) && ctx.input_shape(0).size() < 2)
    ctx.fail_node("input must have rank >= 2, got ", ctx.input_shape(0).to_string());
  if (ctx.has_input(1)) {
    ctx.require_dtype(1, {DType::kInt64});
    if (ctx.input_has_shape(1) && ctx.input_shape(1).numel() != 1 && ctx.input_shape(1).is_concrete())
      ctx.fail_node("k must be a scalar");
  }
  ctx.propagate(0, 0);
}

void infer_eyelike(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  const DType dt = eyelike_dtype(ctx.node(), t.dtype);
  if (!t.has_shape) return ctx.set_output(0, dt, ctx.fresh_shape(2));
  if (t.shape.size() != 2) ctx.fail_node("input must be 2-D, got ", t.shape.to_string());
  ctx.set_output(0, dt, t.shape);
}

void infer_reverse_sequence(InferContext& ctx) {
  require_index(ctx, 1);
  const int64_t ba = ctx.node().attr_int("batch_axis", 1), ta = ctx.node().attr_int("time_axis", 0);
  if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
    ctx.fail_node("batch_axis and time_axis must be 0 and 1 in some order (got ", ba, " and ", ta, ")");
  if (ctx.input_has_shape(0)) {
    const Shape& s = ctx.input_shape(0);
    if (s.size() < 2) ctx.fail_node("input must have rank >= 2, got ", s.to_string());
    if (ctx.input_has_shape(1)) {
      const Shape& l = ctx.input_shape(1);
      if (l.size() != 1 || (known(l[0]) && known(s[ba]) && l[0] != s[ba]))
        ctx.fail_node("sequence_lens has shape ", l.to_string(), " for batch size ", s[ba]);
    }
  }
  ctx.propagate(0, 0);
}

// ---- DepthToSpace / SpaceToDepth ----

void infer_space_depth(InferContext& ctx, bool to_space) {
  const TypeInfo& t = ctx.input_type(0);
  const int64_t b = blocksize_attr(ctx.node());
  depth_to_space_crd(ctx.node());  // (validates the mode)
  if (!t.has_shape) return ctx.set_output(0, t.dtype, ctx.fresh_shape(4));
  if (t.shape.size() != 4) ctx.fail_node("input must have rank 4, got ", t.shape.to_string());
  if (t.shape.is_concrete())
    return ctx.set_output(
        0, t.dtype,
        to_space ? depth_to_space_shape(ctx.node(), t.shape, b) : space_to_depth_shape(ctx.node(), t.shape, b));
  const Shape& s = t.shape;
  Shape out = Shape::filled(4, 0);
  out[0] = s[0];
  if (to_space) {
    if (known(s[1]) && s[1] % (b * b) != 0)
      ctx.fail_node("channels ", s[1], " are not divisible by blocksize^2 = ", b * b);
    out[1] = known(s[1]) ? s[1] / (b * b) : ctx.fresh();
    out[2] = known(s[2]) ? s[2] * b : ctx.fresh();
    out[3] = known(s[3]) ? s[3] * b : ctx.fresh();
  } else {
    for (int k = 2; k < 4; ++k)
      if (known(s[k]) && s[k] % b != 0) ctx.fail_node("dim ", k, " (", s[k], ") is not divisible by blocksize ", b);
    out[1] = known(s[1]) ? s[1] * b * b : ctx.fresh();
    out[2] = known(s[2]) ? s[2] / b : ctx.fresh();
    out[3] = known(s[3]) ? s[3] / b : ctx.fresh();
  }
  if (b == 1) out = s;
  ctx.set_output(0, t.dtype, out);
}

void infer_depth_to_space(InferContext& ctx) { infer_space_depth(ctx, true); }
void infer_space_to_depth(InferContext& ctx) { infer_space_depth(ctx, false); }

// ---- Col2Im / CenterCropPad ----

void infer_col2im(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  ctx.require_dtype(1, {DType::kInt64});
  ctx.require_dtype(2, {DType::kInt64});
  std::vector<int64_t> image, block;
  const bool ki = ctx.input_ints(1, image), kb = ctx.input_ints(2, block);
  if (ki) check_window_attr_sizes(ctx.node(), static_cast<int64_t>(image.size()));
  if (ki && kb && t.has_shape && t.shape.is_concrete())
    return ctx.set_output(0, t.dtype,
                          col2im_spec(ctx.node(), t.shape, Shape(image), Shape(block), col2im_attrs(ctx.node())).out);
  int64_t d = -1;
  if (ki)
    d = static_cast<int64_t>(image.size());
  else if (kb)
    d = static_cast<int64_t>(block.size());
  else if (ctx.input_has_shape(1) && ctx.input_shape(1).size() == 1)
    d = ctx.input_shape(1)[0];
  if (!known(d)) return ctx.set_output_unranked(0, t.dtype);
  check_window_attr_sizes(ctx.node(), d);  // dilations, strides, pads: per image dim
  if (t.has_shape && t.shape.size() != 3) ctx.fail_node("input must have rank 3, got ", t.shape.to_string());
  Shape out{t.has_shape ? t.shape[0] : ctx.fresh(), ctx.fresh()};
  if (kb && t.has_shape && known(t.shape[1])) {
    int64_t k = 1;
    for (int64_t v : block) k *= std::max<int64_t>(v, 1);
    out[1] = t.shape[1] / k;
  }
  for (int64_t i = 0; i < d; ++i) out.push_back(ki ? image[i] : ctx.fresh());
  ctx.set_output(0, t.dtype, out);
}

void infer_center_crop_pad(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  require_index(ctx, 1);
  if (!t.has_shape) return ctx.set_output_unranked(0, t.dtype);
  std::vector<int64_t> target;
  const bool has_axes = ctx.node().has_attr("axes");
  const Shape axes(ctx.node().attr_ints("axes"));
  if (ctx.input_ints(1, target)) {
    // Symbolic dims off the listed axes stay as they are.
    Shape probe = t.shape;
    for (auto& d : probe)
      if (d < 0) d = 0;
    const CropPadSpec s = center_crop_pad_spec(ctx.node(), probe, Shape(target), has_axes ? &axes : nullptr);
    Shape out = t.shape;
    for (size_t i = 0; i < target.size(); ++i) {
      const int64_t k = has_axes ? normalize_axis(axes[i], static_cast<int64_t>(t.shape.size()), ctx.node().label())
                                 : static_cast<int64_t>(i);
      out[k] = s.out[k];
    }
    return ctx.set_output(0, t.dtype, out);
  }
  Shape out = t.shape;
  if (ctx.node().has_attr("axes")) {
    for (int64_t a : ctx.node().attr_ints("axes"))
      out[normalize_axis(a, static_cast<int64_t>(t.shape.size()), ctx.node().label())] = ctx.fresh();
  } else {
    out = ctx.fresh_shape(t.shape.size());
  }
  ctx.set_output(0, t.dtype, out);
}

}  // namespace

void register_index_ops(OpRegistry& r) {
  r.add("", "GatherElements", {11, 13}, infer_gather_elements);
  r.add("", "GatherND", {11, 12, 13}, infer_gather_nd);
  r.add("", "ScatterElements", {11, 13, 16, 18}, infer_scatter_elements);
  r.add("", "ScatterND", {11, 13, 16, 18}, infer_scatter_nd);
  r.add("", "Scatter", {9, 11}, infer_scatter_elements);
  r.add("", "OneHot", {9, 11, 28}, infer_onehot);
  r.add("", "NonZero", {9, 13}, infer_nonzero);
  r.add("", "Compress", {9, 11, 28}, infer_compress);
  r.add("", "Trilu", {14}, infer_trilu);
  r.add("", "EyeLike", {9, 22}, infer_eyelike);
  r.add("", "DepthToSpace", {1, 11, 13, 28}, infer_depth_to_space);
  r.add("", "SpaceToDepth", {1, 13, 28}, infer_space_to_depth);
  r.add("", "ReverseSequence", {10, 28}, infer_reverse_sequence);
  r.add("", "Unique", {11, 28}, infer_unique);
  r.add("", "Col2Im", {18}, infer_col2im);
  r.add("", "CenterCropPad", {18}, infer_center_crop_pad);
}

}  // namespace onyx
