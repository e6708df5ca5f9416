// QLinearConv -> com.microsoft::QLinearAdd(same-shape tensor) -> onyx::QLinearConvAdd: the
// residual connection of a quantized ResNet or MobileNetV2 block (as the QDQ fusion leaves it, or
// as ONNX Runtime's quantizer writes it in its QOperator format) is summed in the convolution's
// epilogue, tile by tile while the convolution's output is in the cache, instead of by one more
// pass reading two tensors and writing a third. The sum is QLinearAdd's arithmetic exactly
// (qmath::qadd_rows), so the fused form gives the same bytes.
#include "optimizer/fusion.hpp"

namespace onyx {

namespace {

int input_or_none(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; }

}  // namespace

int fuse_qconv_add(Graph& g, PassContext& ctx) {
  const UseInfo u = compute_uses(g);
  std::vector<char> dead(g.nodes.size(), 0);
  const FusionView view{g, u, dead};
  int changed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& conv = g.nodes[i];
    if (dead[i] || conv.op_type != "QLinearConv" || !conv.domain.empty() || conv.outputs.size() != 1 || conv.inputs.size() < 8 ||
        conv.inputs.size() > 9 || !conv.implicit_inputs.empty())
      continue;
    const int t = conv.outputs[0];
    const Node* add = view.sole_consumer(t, "com.microsoft");
    if (!add || add->op_type != "QLinearAdd" || add->outputs[0] < 0 || add->inputs.size() < 7) continue;
    const bool conv_is_b = add->inputs[3] == t;
    if (add->inputs[0] == add->inputs[3] || (!conv_is_b && add->inputs[0] != t)) continue;
    const int z = conv_is_b ? add->inputs[0] : add->inputs[3];
    const TypeInfo& tz = g.values[z].type;
    const TypeInfo& tt = g.values[t].type;
    const TypeInfo& tout = g.values[add->outputs[0]].type;
    const DType dt = tt.elem_dtype();
    // No broadcasting: the sum has the convolution's (static or symbolic) shape exactly, and the
    // three tensors one 8-bit type.
    if ((dt != DType::kUInt8 && dt != DType::kInt8) || tz.elem_dtype() != dt || tout.elem_dtype() != dt ||
        !same_shape(tz, tt) || !same_shape(tt, tout))
      continue;
    const size_t zi = conv_is_b ? 0 : 3, ti = conv_is_b ? 3 : 0;
    Node fused = conv;  // the convolution's attributes
    fused.op_type = "QLinearConvAdd";
    fused.domain = "onyx";
    fused.opset = 1;
    fused.inputs.resize(9, -1);
    for (int v : {z, input_or_none(*add, zi + 1), input_or_none(*add, zi + 2), input_or_none(*add, ti + 1),
                  input_or_none(*add, ti + 2), input_or_none(*add, 6), input_or_none(*add, 7)})
      fused.inputs.push_back(v);
    while (fused.inputs.back() < 0) fused.inputs.pop_back();
    fused.outputs = {add->outputs[0]};
    if (conv_is_b) {
      Attribute a;
      a.name = "conv_is_b";
      a.type = AttrType::kInt;
      a.i = 1;
      fused.attrs.push_back(std::move(a));
    }
    const Node* members[] = {&conv, add};
    // At the Add's place: the sum may come from a node after the convolution (ResNet's
    // downsampling branch), and the Add follows both.
    const size_t at = static_cast<size_t>(add - g.nodes.data());
    if (commit_fusion(g, dead, at, members, std::move(fused), ctx)) ++changed;
  }
  if (changed) remove_nodes(g, dead);
  return changed;
}

}  // namespace onyx
