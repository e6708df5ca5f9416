// Nodes of onyx's graph cut out as a stand-alone ONNX model: onyx writes them (the host's
// export_onnx, host.hpp's export_onnx()); what is left here is binding zeros to the large
// constants a support query leaves out of its bytes (claim.cpp).
#include <algorithm>
#include <cstdlib>
#include <map>

#include <openvino/op/constant.hpp>
#include <openvino/op/parameter.hpp>

#include "openvino_ep.hpp"

namespace onyx::openvino {

void bind_zero_constants(ov::Model& model, const OnnxModel& exported, const OnyxEpGraph* graph) {
  struct Large {
    ov::element::Type type;
    ov::Shape shape;
  };
  std::map<std::string, Large> by_name;
  size_t most = 0;
  for (const auto& [name, id] : exported.constants()) {
    const ValueView v = value(graph, id);
    if (!v.is_constant() || v.info.type.rank < 0 || (v.info.type.rank > 0 && !v.info.type.dims))
      fail(ONYX_EP_FAILURE, "openvino: the deferred constant '", name, "' is not a constant of the graph");
    const ov::element::Type type = element_type(v.info.type.dtype);
    if (type == ov::element::dynamic)
      fail(ONYX_EP_FAILURE, "openvino: the constant '", name, "' has type ", dtype_name(v.info.type.dtype),
           ", which OpenVINO has no element type for");
    Large c{type, ov::Shape(v.info.type.dims, v.info.type.dims + v.info.type.rank)};
    most = std::max(most, ov::shape_size(c.shape) * type.size());
    by_name.emplace(name, std::move(c));
  }
  if (by_name.empty()) return;
  // One buffer for them all; calloc: pages nobody reads are never touched.
  const std::shared_ptr<void> zeros(std::calloc(1, std::max<size_t>(most, 1)), std::free);
  if (!zeros) fail(ONYX_EP_OUT_OF_MEMORY, "openvino: cannot allocate ", most, " bytes");
  const ov::ParameterVector params = model.get_parameters();  // a copy: the loop removes some
  for (const auto& param : params) {
    const std::pair<const std::string, Large>* c = nullptr;
    for (const auto& name : param->get_output_tensor(0).get_names())
      if (auto it = by_name.find(name); it != by_name.end()) c = &*it;
    if (!c) continue;
    auto k = std::make_shared<ov::op::v0::Constant>(c->second.type, c->second.shape, zeros.get(), zeros);
    k->set_friendly_name(c->first);
    k->get_output_tensor(0).set_names({c->first});
    param->output(0).replace(k->output(0));
    model.remove_parameter(param);
  }
  model.validate_nodes_and_infer_types();
}

}  // namespace onyx::openvino
