// Channels-last forms of the layout-sensitive ops: their inference is the channels-first op's,
// with the data input and output permuted around it.
#include "ops/layout.hpp"

#include <cstring>

#include "ops/families.hpp"
#include "ops/schema.hpp"

namespace onyx {

namespace {

constexpr const char* kForms[] = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
                                  "BatchNormalization", "FusedConv", "FusedConvAdd", "QLinearConv", "QLinearConvAdd"};

bool is_onyx_form(std::string_view op) { return op == "FusedConv" || op == "FusedConvAdd" || op == "QLinearConvAdd"; }

void infer_channels_last(InferContext& ctx) {
  const Node& n = ctx.node();
  const OpSchema* base = OpRegistry::global().find(channels_first_domain(n.op_type), n.op_type);
  if (!base || !base->infer) ctx.fail_node("no channels-first op behind this channels-last node");
  const TypeInfo& x = ctx.input_type(0);
  if (!x.has_shape) ctx.fail_node("a channels-last node needs its input's rank");
  if (x.shape.size() < 3) ctx.fail_node("a channels-last input needs rank >= 3, got ", x.shape.to_string());
  const size_t rank = x.shape.size();
  const TypeInfo x_first = permute_type(x, to_channels_first_perm(rank));
  std::vector<const TypeInfo*> in_types(ctx.num_inputs(), nullptr);
  std::vector<const Value*> in_values(ctx.num_inputs(), nullptr);
  std::vector<TypeInfo> firsts(ctx.num_inputs());
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (is_channels_last_input(n, i)) {
      firsts[i] = i == 0 ? x_first : permute_type(ctx.input_type(i), to_channels_first_perm(rank));
      in_types[i] = &firsts[i];
      continue;  // the data inputs' values are in the other layout
    }
    in_types[i] = &ctx.input_type(i);
    in_values[i] = ctx.input_value(i);
  }
  std::vector<TypeInfo> out_types(ctx.num_outputs());
  std::vector<Value> out_values(ctx.num_outputs());
  InferContext inner(n, std::move(in_types), std::move(in_values), out_types, out_values, ctx.symbols(), nullptr);
  base->infer(inner);
  for (size_t i = 0; i < out_types.size(); ++i)
    ctx.set_output_type(i, i == 0 ? permute_type(out_types[i], to_channels_last_perm(rank)) : out_types[i]);
}

}  // namespace

bool has_native_channels_last(const Node& node) {
  return node.domain == "com.microsoft" && (node.op_type == "QLinearAveragePool" || node.op_type == "QLinearGlobalAveragePool") &&
         node.attr_int("channels_last", 0) == 0;
}

bool has_channels_last_form(const Node& node) {
  if (has_native_channels_last(node))
    return !node.inputs.empty() && node.inputs[0] >= 0 && node.has_output(0) && node.outputs.size() == 1 &&
           node.implicit_inputs.empty();
  if (!node.domain.empty() && node.domain != "onyx") return false;
  if ((node.domain == "onyx") != is_onyx_form(node.op_type)) return false;
  bool known = false;
  for (const char* f : kForms) known |= node.op_type == f;
  if (!known || node.inputs.empty() || node.inputs[0] < 0 || !node.has_output(0) || !node.implicit_inputs.empty()) return false;
  // Outputs other than the data one (MaxPool's Indices, training BatchNormalization's statistics)
  // have layouts of their own: such nodes keep channels-first.
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] >= 0) return false;
  return true;
}

std::string_view channels_first_domain(std::string_view op) { return is_onyx_form(op) ? "onyx" : ""; }

bool is_channels_last_input(const Node& node, size_t i) {
  return i == 0 || (i == 3 && node.op_type == "FusedConvAdd") || (i == 9 && node.op_type == "QLinearConvAdd");
}

std::vector<int64_t> to_channels_last_perm(size_t rank) {
  std::vector<int64_t> p{0};
  for (size_t k = 2; k < rank; ++k) p.push_back(static_cast<int64_t>(k));
  p.push_back(1);
  return p;
}

std::vector<int64_t> to_channels_first_perm(size_t rank) {
  std::vector<int64_t> p{0, static_cast<int64_t>(rank) - 1};
  for (size_t k = 1; k + 1 < rank; ++k) p.push_back(static_cast<int64_t>(k));
  return p;
}

TypeInfo permute_type(const TypeInfo& t, const std::vector<int64_t>& perm) {
  if (!t.is_tensor() || !t.has_shape || t.shape.size() != perm.size()) return t;
  Shape s;
  for (int64_t p : perm) s.push_back(t.shape[static_cast<size_t>(p)]);
  return TypeInfo::tensor(t.dtype, s);
}

Tensor permute_tensor(const Tensor& x, const std::vector<int64_t>& perm) {
  const size_t r = perm.size();
  if (x.rank() != r || !x.on_host() || x.dtype() == DType::kString)
    fail(ErrorCode::kInvalidArgument, "permute_tensor: a host tensor of fixed-size elements and rank ", r, " is needed, got ",
         x.summary());
  Shape out_shape;
  for (int64_t p : perm) out_shape.push_back(x.shape()[static_cast<size_t>(p)]);
  Tensor y(x.dtype(), out_shape);
  const size_t elem = dtype_size(x.dtype());
  std::vector<int64_t> x_stride(r, 1);
  for (size_t k = r; k-- > 1;) x_stride[k - 1] = x_stride[k] * x.shape()[k];
  std::vector<int64_t> src_stride(r);
  for (size_t k = 0; k < r; ++k) src_stride[k] = x_stride[static_cast<size_t>(perm[k])];
  const auto* src = static_cast<const uint8_t*>(x.raw_data());
  auto* dst = static_cast<uint8_t*>(y.raw_data());
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t i = 0, n = y.numel(); i < n; ++i) {
    std::memcpy(dst + static_cast<size_t>(i) * elem, src + static_cast<size_t>(off) * elem, elem);
    for (size_t k = r; k-- > 0;) {  // next output index, row-major; off follows in x
      off += src_stride[k];
      if (++idx[k] < out_shape[k]) break;
      off -= src_stride[k] * out_shape[k];
      idx[k] = 0;
    }
  }
  return y;
}

void register_layout_ops(OpRegistry& r) {
  // Any opset: the node keeps the opset of the op it stands for, whose schema checks it.
  for (const char* f : kForms) r.add(std::string(kChannelsLastDomain), f, {1}, infer_channels_last);
}

}  // namespace onyx
