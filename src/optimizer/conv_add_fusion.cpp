// Conv + Add(same-shape tensor) [+ Relu | Clip] -> onyx::FusedConvAdd: the residual connection of
// a ResNet or MobileNetV2 block is added (and activated) in the convolution's epilogue, instead
// of one more pass reading two tensors and writing a third (and another for the activation).
#include "optimizer/fusion.hpp"

namespace onyx {

int fuse_conv_add(Graph& g, PassContext& ctx) {
  const UseInfo u = compute_uses(g);
  std::vector<char> dead(g.nodes.size(), 0);
  const FusionView view{g, u, dead};
  int changed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& conv = g.nodes[i];
    if (dead[i] || conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1 || conv.inputs.size() < 2)
      continue;
    const int y = conv.outputs[0];
    if (y < 0 || g.values[conv.inputs[0]].type.elem_dtype() != DType::kFloat) continue;
    const Node* add = view.sole_consumer(y);
    if (!add || add->op_type != "Add" || add->inputs.size() != 2 || add->inputs[0] == add->inputs[1]) continue;
    const int z = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
    const TypeInfo& tz = g.values[z].type;
    const TypeInfo& tout = g.values[add->outputs[0]].type;
    // No broadcasting: the sum has the convolution's (static or symbolic) shape exactly.
    if (tz.elem_dtype() != DType::kFloat || !same_shape(tz, g.values[y].type) || !same_shape(tz, tout)) continue;
    std::vector<const Node*> members{&conv, add};
    std::string act;
    std::vector<float> params;
    int out = add->outputs[0];
    if (const Node* a = view.sole_consumer(out); a && !a->inputs.empty() && a->inputs[0] == out &&
                                                   epilogue_activation(g, *a, &act, &params)) {
      members.push_back(a);
      out = a->outputs[0];
    }
    Node fused = conv;  // the convolution's attributes
    fused.op_type = "FusedConvAdd";
    fused.domain = "onyx";
    fused.opset = 1;
    fused.inputs = {conv.inputs[0], conv.inputs[1], conv.inputs.size() > 2 ? conv.inputs[2] : -1, z};
    fused.outputs = {out};
    set_activation(fused, act, params);
    // At the Add's place: the sum may come from a node after the convolution (ResNet's
    // downsampling branch), and the Add follows both.
    const size_t at = static_cast<size_t>(add - g.nodes.data());
    if (commit_fusion(g, dead, at, members, std::move(fused), ctx)) ++changed;
  }
  if (changed) remove_nodes(g, dead);
  return changed;
}

}  // namespace onyx
