// Sequence and optional family schemas: SequenceEmpty, SequenceConstruct, SequenceInsert,
// SequenceAt, SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap,
// Optional, OptionalHasElement, OptionalGetElement.
#include <algorithm>

#include "ops/control_flow.hpp"
#include "ops/schema.hpp"

namespace onyx {

namespace {

using Kind = TypeInfo::Kind;

/// Input i must be a sequence (or of unknown kind); returns its element type.
TypeInfo sequence_element(InferContext& ctx, size_t i) {
  const TypeInfo& t = ctx.input_type(i);
  if (t.kind != Kind::kSequence && t.kind != Kind::kUnknown) ctx.fail_node("input ", i, " must be a sequence, got ", t.to_string());
  return element_type(t);
}

/// Input i must be a tensor (or of unknown kind).
const TypeInfo& tensor_input(InferContext& ctx, size_t i) {
  const TypeInfo& t = ctx.input_type(i);
  if (t.kind != Kind::kTensor && t.kind != Kind::kUnknown) ctx.fail_node("input ", i, " must be a tensor, got ", t.to_string());
  return t;
}

void infer_sequence_empty(InferContext& ctx) {
  const int64_t dt = ctx.node().attr_int("dtype", static_cast<int64_t>(DType::kFloat));
  if (dt <= 0 || !dtype_valid(static_cast<int32_t>(dt))) ctx.fail_node("dtype ", dt, " is not a tensor element type");
  ctx.set_output_type(0, TypeInfo::sequence_of(TypeInfo::tensor(static_cast<DType>(dt))));
}

void infer_sequence_construct(InferContext& ctx) {
  if (ctx.num_inputs() == 0) ctx.fail_node("needs at least one input");
  TypeInfo elem = tensor_input(ctx, 0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    const TypeInfo& t = tensor_input(ctx, i);
    TypeInfo m;
    if (!merge_types(elem, t, ctx.symbols(), m))
      ctx.fail_node("all inputs must have the same element type: input 0 is ", dtype_name(ctx.input_dtype(0)), ", input ", i,
                    " is ", dtype_name(t.dtype));
    elem = std::move(m);
  }
  ctx.set_output_type(0, TypeInfo::sequence_of(std::move(elem)));
}

void infer_sequence_insert(InferContext& ctx) {
  const TypeInfo elem = sequence_element(ctx, 0);
  const TypeInfo& t = tensor_input(ctx, 1);
  TypeInfo m;
  if (!merge_types(elem, t, ctx.symbols(), m))
    ctx.fail_node("the tensor to insert is ", t.to_string(), " but the sequence holds ", elem.to_string());
  if (ctx.has_input(2)) {
    const DType pt = ctx.input_dtype(2);
    if (pt != DType::kUndefined && pt != DType::kInt32 && pt != DType::kInt64)
      ctx.fail_node("position must be int32 or int64, got ", dtype_name(pt));
  }
  // An empty sequence says nothing about the shapes of its (absent) elements.
  if (elem.is_tensor() && !elem.has_shape && t.is_tensor() && ctx.input_value(0) && ctx.input_value(0)->is_sequence() &&
      ctx.input_value(0)->items().empty())
    m = t;
  ctx.set_output_type(0, TypeInfo::sequence_of(std::move(m)));
}

void check_position(InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return;
  const TypeInfo& t = tensor_input(ctx, i);
  if (t.dtype != DType::kUndefined && t.dtype != DType::kInt32 && t.dtype != DType::kInt64)
    ctx.fail_node("position must be int32 or int64, got ", dtype_name(t.dtype));
  if (t.has_shape && t.shape.is_concrete() && t.shape.numel() != 1)
    ctx.fail_node("position must be a scalar, got shape ", t.shape.to_string());
}

void infer_sequence_at(InferContext& ctx) {
  TypeInfo elem = sequence_element(ctx, 0);
  if (!ctx.has_input(1)) ctx.fail_node("input 1 (position) is required");
  check_position(ctx, 1);
  if (elem.kind == Kind::kUnknown) elem = TypeInfo::tensor(ctx.input_dtype(0));
  ctx.set_output_type(0, std::move(elem));
}

void infer_sequence_erase(InferContext& ctx) {
  (void)sequence_element(ctx, 0);
  check_position(ctx, 1);
  ctx.propagate(0, 0);
}

void infer_sequence_length(InferContext& ctx) {
  (void)sequence_element(ctx, 0);
  ctx.set_output(0, DType::kInt64, Shape{});
}

void infer_split_to_sequence(InferContext& ctx) {
  const TypeInfo& t = tensor_input(ctx, 0);
  const Node& n = ctx.node();
  const int64_t keepdims = n.attr_int("keepdims", 1);
  if (!t.has_shape) return ctx.set_output_type(0, TypeInfo::sequence_of(TypeInfo::tensor(t.dtype)));
  const int64_t r = static_cast<int64_t>(t.shape.size());
  int64_t axis = n.attr_int("axis", 0);
  if (axis < -r || axis >= r) ctx.fail_node("axis ", axis, " is out of range for an input of rank ", r);
  if (axis < 0) axis += r;
  Shape s = t.shape;
  const int64_t dim = s[axis];
  if (!ctx.has_input(1)) {
    if (keepdims)
      s[axis] = 1;
    else
      s.erase(static_cast<size_t>(axis));
    return ctx.set_output_type(0, TypeInfo::sequence_of(TypeInfo::tensor(t.dtype, s)));
  }
  const DType st = ctx.input_dtype(1);
  if (st != DType::kUndefined && st != DType::kInt32 && st != DType::kInt64)
    ctx.fail_node("split must be int32 or int64, got ", dtype_name(st));
  std::vector<int64_t> split;
  int64_t size = -1;
  if (ctx.input_ints(1, split)) {
    const Tensor* sp = ctx.input_tensor(1);
    if (sp->rank() > 1) ctx.fail_node("split must be a scalar or a 1-D tensor, got shape ", sp->shape().to_string());
    for (int64_t v : split)
      if (v < 0) ctx.fail_node("split sizes must be >= 0, got ", v);
    if (sp->rank() == 0) {
      if (split[0] <= 0) ctx.fail_node("a scalar split must be > 0, got ", split[0]);
      if (dim >= 0 && dim % split[0] == 0) size = split[0];
      if (dim >= 0 && dim <= split[0]) size = dim;
    } else {
      int64_t total = 0;
      for (int64_t v : split) total += v;
      if (dim >= 0 && total != dim) ctx.fail_node("split sizes add up to ", total, " but the input's axis ", axis, " has ", dim);
      if (!split.empty() && std::all_of(split.begin(), split.end(), [&](int64_t v) { return v == split[0]; })) size = split[0];
    }
  }
  s[axis] = size >= 0 ? size : ctx.fresh();
  ctx.set_output_type(0, TypeInfo::sequence_of(TypeInfo::tensor(t.dtype, s)));
}

void infer_concat_from_sequence(InferContext& ctx) {
  const TypeInfo elem = sequence_element(ctx, 0);
  const Node& n = ctx.node();
  if (!n.has_attr("axis")) ctx.fail_node("the attribute 'axis' is required");
  const int64_t axis_attr = n.attr_int("axis", 0);
  const bool new_axis = n.attr_int("new_axis", 0) != 0;
  const DType dt = elem.elem_dtype() != DType::kUndefined ? elem.elem_dtype() : ctx.input_dtype(0);
  if (!elem.is_tensor() || !elem.has_shape) return ctx.set_output_unranked(0, dt);
  Shape s = elem.shape;
  const int64_t r = static_cast<int64_t>(s.size()) + (new_axis ? 1 : 0);
  int64_t axis = axis_attr;
  if (axis < -r || axis >= r) ctx.fail_node("axis ", axis_attr, " is out of range for ", new_axis ? "stacking" : "concatenating", " tensors of rank ", s.size());
  if (axis < 0) axis += r;
  if (new_axis)
    s.insert(static_cast<size_t>(axis), ctx.fresh());
  else
    s[axis] = ctx.fresh();
  ctx.set_output(0, dt, std::move(s));
}

void infer_sequence_map(InferContext& ctx) {
  const Graph* body = ctx.node().attr_graph("body");
  if (!body) ctx.fail_node("the graph attribute 'body' is missing");
  const size_t n_in = ctx.num_inputs();
  if (body->inputs.size() != n_in)
    ctx.fail_node("the body takes ", body->inputs.size(), " inputs but the node gives ", n_in);
  if (body->outputs.size() != ctx.num_outputs())
    ctx.fail_node("the body returns ", body->outputs.size(), " values but the node has ", ctx.num_outputs(), " outputs");
  std::vector<TypeInfo> in(n_in);
  in[0] = sequence_element(ctx, 0);
  for (size_t i = 1; i < n_in; ++i) {
    if (!ctx.has_input(i)) ctx.fail_node("input ", i, " is missing");
    const TypeInfo& t = ctx.input_type(i);
    in[i] = t.kind == Kind::kSequence ? element_type(t) : t;
  }
  check_subgraph_inputs(ctx, *body, in);
  const std::vector<TypeInfo> out = ctx.infer_subgraph(*body, in);
  for (size_t o = 0; o < out.size() && o < ctx.num_outputs(); ++o) {
    if (out[o].kind != Kind::kTensor && out[o].kind != Kind::kUnknown)
      ctx.fail_node("body output ", o, " ('", body->values[body->outputs[o]].name, "') must be a tensor, got ", out[o].to_string());
    ctx.set_output_type(o, TypeInfo::sequence_of(out[o]));
  }
}

// ---------------------------------------------------------------------------------------------
// Optionals

void infer_optional(InferContext& ctx) {
  if (ctx.has_input(0)) {
    const TypeInfo& t = ctx.input_type(0);
    if (t.kind == Kind::kOptional) ctx.fail_node("the input must be a tensor or a sequence, not an optional");
    return ctx.set_output_type(0, TypeInfo::optional_of(t));
  }
  const Attribute* a = ctx.node().attr("type");
  if (!a || a->type != AttrType::kTypeProto)
    ctx.fail_node("without an input, the attribute 'type' (the element type) is required");
  ctx.set_output_type(0, TypeInfo::optional_of(a->tp));
}

void infer_optional_has_element(InferContext& ctx) {
  // Opset 15 takes an optional only; 18 also takes a tensor or a sequence (always present) or no
  // input at all. Both are accepted at every version: a Loop may turn an optional loop-carried
  // value into a sequence after its first iteration (ONNX's test_loop16_seq_none does).
  const bool given = ctx.node().has_input(0);
  if (!given && ctx.opset() < 18) ctx.fail_node("input 0 is required before opset 18");
  ctx.set_output(0, DType::kBool, Shape{});
  if (!given)
    ctx.set_output_value(0, Value(Tensor::scalar<bool>(false)));
  else if (const Value* v = ctx.input_value(0))
    ctx.set_output_value(0, Value(Tensor::scalar<bool>(v->is_optional() ? v->has_element() : !v->is_none())));
}

void infer_optional_get_element(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  if (t.kind == Kind::kOptional) return ctx.set_output_type(0, element_type(t));
  ctx.propagate(0, 0);  // a tensor or a sequence is its own element (opset 18; accepted at 15 too, see above)
}

}  // namespace

void register_sequence_ops(OpRegistry& r) {
  r.add("", "SequenceEmpty", {11}, infer_sequence_empty);
  r.add("", "SequenceConstruct", {11}, infer_sequence_construct);
  r.add("", "SequenceInsert", {11}, infer_sequence_insert);
  r.add("", "SequenceAt", {11}, infer_sequence_at);
  r.add("", "SequenceErase", {11}, infer_sequence_erase);
  r.add("", "SequenceLength", {11}, infer_sequence_length);
  r.add("", "SplitToSequence", {11, 24}, infer_split_to_sequence);
  r.add("", "ConcatFromSequence", {11}, infer_concat_from_sequence);
  r.add("", "SequenceMap", {17}, infer_sequence_map);
  r.add("", "Optional", {15, 28}, infer_optional);
  r.add("", "OptionalHasElement", {15, 18, 28}, infer_optional_has_element);
  r.add("", "OptionalGetElement", {15, 18, 28}, infer_optional_get_element);
}

}  // namespace onyx
