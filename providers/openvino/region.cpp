// A region of the OpenVINO EP (a group onyx hands to compile_group): its nodes as one ONNX model
// (onyx's export_onnx, the weights as initializers), read by OpenVINO's ONNX frontend and compiled
// for the device once -- when the group is compiled if its input shapes are all known, else once
// per input-shape signature on first use (a few signatures kept). Runs wrap onyx's buffers as
// ov::Tensor (no copies in or out: OpenVINO reads the inputs and writes the outputs where the
// executor placed them).
#include <algorithm>
#include <cstring>
#include <list>
#include <map>
#include <mutex>

#include "openvino_ep.hpp"

namespace onyx::openvino {

namespace {

/// A compiled model and the infer requests it has made, reused across runs. Each run takes a
/// request of its own, so concurrent runs of a session never share one.
class Compiled {
 public:
  explicit Compiled(ov::CompiledModel cm) : cm_(std::move(cm)) {}
  ov::InferRequest acquire() {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!idle_.empty()) {
        ov::InferRequest r = std::move(idle_.back());
        idle_.pop_back();
        return r;
      }
    }
    return cm_.create_infer_request();
  }
  void release(ov::InferRequest r) {
    std::lock_guard<std::mutex> lock(m_);
    idle_.push_back(std::move(r));
  }

 private:
  ov::CompiledModel cm_;
  std::mutex m_;
  std::vector<ov::InferRequest> idle_;
};

using Signature = std::vector<std::vector<int64_t>>;

size_t numel(const OnyxEpTensor& t) {
  size_t n = 1;
  for (int32_t i = 0; i < t.rank; ++i) n *= static_cast<size_t>(t.dims[i]);
  return n;
}

ov::Shape shape_of(const OnyxEpTensor& t) { return t.rank > 0 ? ov::Shape(t.dims, t.dims + t.rank) : ov::Shape(); }

OnyxEpTensor empty_tensor() { return init<OnyxEpTensor>(); }

template <class Ports>
size_t port_of(const Ports& ports, std::string_view name, const std::string& label, const char* what) {
  for (size_t i = 0; i < ports.size(); ++i)
    if (ports[i].get_names().count(std::string(name))) return i;
  fail(ONYX_EP_FAILURE, "openvino: ", label, ": OpenVINO's model has no ", what, " named '", name, "'");
}

}  // namespace

class Region {
 public:
  /// A region compiled once (`compiled`), or one whose `model` is compiled per input shapes.
  Region(std::string label, std::shared_ptr<ov::Model> model, std::shared_ptr<Compiled> compiled, std::vector<int64_t> inputs,
         std::vector<int64_t> outputs, std::vector<size_t> input_port, std::vector<size_t> output_port, std::string device,
         ov::AnyMap props)
      : label_(std::move(label)),
        model_(std::move(model)),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)),
        input_port_(std::move(input_port)),
        output_port_(std::move(output_port)),
        device_(std::move(device)),
        props_(std::move(props)),
        static_(std::move(compiled)) {}

  void compute(OnyxEpKernelContext* ctx) const {
    const OnyxEpHostApi& h = host();
    std::vector<OnyxEpTensor> in(inputs_.size(), empty_tensor());
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (h.ctx_value(ctx, inputs_[i], &in[i]) != 1 || in[i].on_device)
        fail(ONYX_EP_INVALID_ARGUMENT, "openvino: ", label_, ": input ", i, " is not a tensor");
    std::shared_ptr<Compiled> c = static_ ? static_ : for_shapes(in);
    ov::InferRequest req = c->acquire();
    try {
      for (size_t i = 0; i < in.size(); ++i) {
        const OnyxEpTensor& t = in[i];
        if (numel(t) == 0)  // no buffer to wrap
          req.set_input_tensor(input_port_[i], ov::Tensor(element_type(t.dtype), shape_of(t)));
        else
          req.set_input_tensor(input_port_[i], ov::Tensor(element_type(t.dtype), shape_of(t), t.data));
      }
      std::vector<char> wrapped(outputs_.size(), 0);
      for (size_t j = 0; j < outputs_.size(); ++j) {
        OnyxEpTensor t = empty_tensor();
        if (h.ctx_value(ctx, outputs_[j], &t) != 1 || t.on_device || !t.data || numel(t) == 0) continue;
        req.set_output_tensor(output_port_[j], ov::Tensor(element_type(t.dtype), shape_of(t), t.data));
        wrapped[j] = 1;
      }
      req.infer();
      for (size_t j = 0; j < outputs_.size(); ++j) {
        if (wrapped[j]) continue;
        // An output the executor could not shape before the run (or an empty one): OpenVINO
        // allocated it; copy it into an onyx tensor.
        const ov::Tensor r = req.get_output_tensor(output_port_[j]);
        const ov::Shape& s = r.get_shape();
        const std::vector<int64_t> dims(s.begin(), s.end());
        OnyxEpTensor t = empty_tensor();
        if (OnyxEpStatus* st = h.ctx_allocate_value(ctx, outputs_[j], dtype_of(r.get_element_type()), static_cast<int32_t>(dims.size()),
                                                    dims.data(), &t))
          throw Failure(st);
        if (t.bytes != r.get_byte_size())
          fail(ONYX_EP_FAILURE, "openvino: ", label_, ": output ", j, " has ", r.get_byte_size(), " bytes, expected ", t.bytes);
        if (t.bytes) std::memcpy(t.data, r.data(), t.bytes);
      }
      // A request that kept an output tensor of OpenVINO's own (or one of this run's buffers for
      // an output the next run may not wrap) is not reused: it would write where it wrote now.
      if (std::all_of(wrapped.begin(), wrapped.end(), [](char w) { return w != 0; })) c->release(std::move(req));
    } catch (const Failure&) {
      throw;
    } catch (const std::exception& e) {
      fail(ONYX_EP_FAILURE, "openvino: ", label_, ": inference failed: ", short_message(e));
    }
  }

 private:
  static int32_t dtype_of(const ov::element::Type& t) {
    for (int32_t d : {ONYX_EP_FLOAT, ONYX_EP_FLOAT16, ONYX_EP_BFLOAT16, ONYX_EP_DOUBLE, ONYX_EP_INT8, ONYX_EP_UINT8, ONYX_EP_INT16,
                      ONYX_EP_UINT16, ONYX_EP_INT32, ONYX_EP_UINT32, ONYX_EP_INT64, ONYX_EP_UINT64, ONYX_EP_BOOL})
      if (element_type(d) == t) return d;
    fail(ONYX_EP_FAILURE, "openvino: an output of element type ", t.get_type_name(), ", which onyx has no type for");
  }

  std::shared_ptr<Compiled> compile(const std::shared_ptr<ov::Model>& model) const {
    return std::make_shared<Compiled>(compile_model(model, device_, props_, label_));
  }

  // The compiled model for these input shapes: the model reshaped to them and compiled on first
  // use, kept among the last kMaxSignatures.
  std::shared_ptr<Compiled> for_shapes(const std::vector<OnyxEpTensor>& in) const {
    Signature sig;
    for (const OnyxEpTensor& t : in) sig.emplace_back(t.dims, t.dims + t.rank);
    std::lock_guard<std::mutex> lock(m_);
    for (auto it = by_shape_.begin(); it != by_shape_.end(); ++it)
      if (it->first == sig) {
        by_shape_.splice(by_shape_.begin(), by_shape_, it);
        return it->second;
      }
    std::shared_ptr<ov::Model> m = model_->clone();
    std::map<size_t, ov::PartialShape> shapes;
    for (size_t i = 0; i < in.size(); ++i)
      shapes.emplace(input_port_[i], ov::PartialShape(std::vector<ov::Dimension>(sig[i].begin(), sig[i].end())));
    try {
      m->reshape(shapes);
    } catch (const std::exception& e) {
      fail(ONYX_EP_FAILURE, "openvino: ", label_, ": cannot set the input shapes: ", short_message(e));
    }
    by_shape_.emplace_front(std::move(sig), compile(m));
    if (by_shape_.size() > kMaxSignatures) by_shape_.pop_back();
    return by_shape_.front().second;
  }

  static constexpr size_t kMaxSignatures = 8;
  std::string label_;
  std::shared_ptr<ov::Model> model_;
  std::vector<int64_t> inputs_, outputs_;         // value ids in the session's graph
  std::vector<size_t> input_port_, output_port_;  // their ports in model_
  std::string device_;
  ov::AnyMap props_;
  std::shared_ptr<Compiled> static_;
  mutable std::mutex m_;
  mutable std::list<std::pair<Signature, std::shared_ptr<Compiled>>> by_shape_;
};

ov::CompiledModel compile_model(const std::shared_ptr<ov::Model>& model, const std::string& device, const ov::AnyMap& props,
                                const std::string& label) {
  try {
    return core().compile_model(model, device, props);
  } catch (const std::exception& e) {
    fail(ONYX_EP_FAILURE, "openvino: ", label, ": compiling for ", device, " failed: ", short_message(e));
  }
}

Region* compile_region(const OnyxEpGraph* g, const OnyxEpGroup& group, const Instance& inst) {
  if (group.num_nodes == 0 || !group.nodes) fail(ONYX_EP_INVALID_ARGUMENT, "openvino: an empty group");
  Part part;
  for (size_t i = 0; i < group.num_nodes; ++i) {
    const OnyxEpNode* n = host().graph_node(g, group.nodes[i]);
    if (!n) fail(ONYX_EP_INVALID_ARGUMENT, "openvino: node ", group.nodes[i], " of the group is not in the graph");
    part.nodes.push_back(n);
  }
  const size_t count = part.nodes.size();
  const std::string label = str("region of ", count, " node", count == 1 ? "" : "s", " from ", NodeView(part.nodes.front()).label());
  // Constants among the group's inputs are initializers of its model.
  for (size_t i = 0; i < group.num_inputs; ++i)
    if (!value(g, group.inputs[i]).is_constant()) part.inputs.push_back(group.inputs[i]);
  part.outputs.assign(group.outputs, group.outputs + group.num_outputs);
  std::vector<size_t> in_port, out_port;
  std::shared_ptr<ov::Model> model;
  {
    const OnnxModel exported = export_onnx(g, {&part}, {}, -1);
    try {
      model = read_onnx(exported.bytes());
    } catch (const std::exception& e) {
      fail(ONYX_EP_FAILURE, "openvino: ", label, ": OpenVINO's ONNX frontend cannot read it: ", short_message(e));
    }
  }
  for (int64_t v : part.inputs) in_port.push_back(port_of(model->inputs(), value(g, v).name(), label, "input"));
  for (int64_t v : part.outputs) out_port.push_back(port_of(model->outputs(), value(g, v).name(), label, "output"));
  std::shared_ptr<Compiled> compiled;
  if (!model->is_dynamic()) {
    compiled = std::make_shared<Compiled>(compile_model(model, inst.options.device_type, inst.props, label));
    model.reset();  // the compiled model keeps what it needs
  }
  log(ONYX_EP_LOG_VERBOSE, str(label, ": ", compiled ? "compiled" : "compiled per input shapes on first use"));
  return new Region(label, std::move(model), std::move(compiled), std::move(part.inputs), std::move(part.outputs), std::move(in_port),
                    std::move(out_port), inst.options.device_type, inst.props);
}

void run_region(const Region& region, OnyxEpKernelContext* ctx) { region.compute(ctx); }

void release_region(Region* region) { delete region; }

}  // namespace onyx::openvino
