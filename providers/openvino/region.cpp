// A region of the OpenVINO EP: its nodes as one ONNX model, read by OpenVINO's ONNX frontend and
// compiled for the device once -- when the region is compiled if its input shapes are all known,
// else once per input-shape signature on first use (a few signatures kept). Runs wrap onyx's
// buffers as ov::Tensor (no copies in or out: OpenVINO reads the inputs and writes the outputs
// where the executor placed them).
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

class RegionKernel final : public Kernel {
 public:
  /// A region compiled once (`compiled`), or one whose `model` is compiled per input shapes.
  RegionKernel(std::string label, std::shared_ptr<ov::Model> model, std::shared_ptr<Compiled> compiled, std::vector<int> inputs,
               std::vector<int> outputs, std::vector<size_t> input_port, std::vector<size_t> output_port, std::string device,
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

  void compute(KernelContext& ctx) const override {
    Value* frame = ctx.frame();
    std::vector<const Tensor*> in(inputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Value& v = frame[inputs_[i]];
      if (!v.is_tensor() || !v.tensor().defined())
        fail(ErrorCode::kRuntime, "openvino: ", label_, ": input ", i, " is not a tensor");
      in[i] = &v.tensor();
    }
    std::shared_ptr<Compiled> c = static_ ? static_ : for_shapes(in);
    ov::InferRequest req = c->acquire();
    try {
      for (size_t i = 0; i < in.size(); ++i) {
        const Tensor& t = *in[i];
        const ov::Shape shape(t.shape().begin(), t.shape().end());
        if (t.numel() == 0)  // no buffer to wrap
          req.set_input_tensor(input_port_[i], ov::Tensor(element_type(t.dtype()), shape));
        else
          req.set_input_tensor(input_port_[i], ov::Tensor(element_type(t.dtype()), shape, const_cast<void*>(t.raw_data())));
      }
      std::vector<char> wrapped(outputs_.size(), 0);
      for (size_t j = 0; j < outputs_.size(); ++j) {
        Value& v = frame[outputs_[j]];
        if (!v.is_tensor() || !v.tensor().defined() || !v.tensor().on_host() || v.tensor().numel() == 0) continue;
        Tensor& t = v.tensor();
        const ov::Shape shape(t.shape().begin(), t.shape().end());
        req.set_output_tensor(output_port_[j], ov::Tensor(element_type(t.dtype()), shape, t.raw_data()));
        wrapped[j] = 1;
      }
      req.infer();
      for (size_t j = 0; j < outputs_.size(); ++j) {
        if (wrapped[j]) continue;
        // An output the executor could not shape before the run (or an empty one): OpenVINO
        // allocated it; copy it into an onyx tensor.
        const ov::Tensor r = req.get_output_tensor(output_port_[j]);
        const ov::Shape& s = r.get_shape();
        Tensor t(dtype_of(r.get_element_type()), Shape(std::vector<int64_t>(s.begin(), s.end())));
        if (t.nbytes() != r.get_byte_size())
          fail(ErrorCode::kEpFailure, "openvino: ", label_, ": output ", j, " has ", r.get_byte_size(), " bytes, expected ", t.nbytes());
        if (t.nbytes()) std::memcpy(t.raw_data(), r.data(), t.nbytes());
        frame[outputs_[j]] = Value(std::move(t));
      }
      // A request that kept an output tensor of OpenVINO's own (or one of this run's buffers for
      // an output the next run may not wrap) is not reused: it would write where it wrote now.
      if (std::all_of(wrapped.begin(), wrapped.end(), [](char w) { return w != 0; })) c->release(std::move(req));
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      fail(ErrorCode::kEpFailure, "openvino: ", label_, ": inference failed: ", short_message(e));
    }
  }

 private:
  static DType dtype_of(const ov::element::Type& t) {
    for (DType d : {DType::kFloat, DType::kFloat16, DType::kBFloat16, DType::kDouble, DType::kInt8, DType::kUInt8,
                    DType::kInt16, DType::kUInt16, DType::kInt32, DType::kUInt32, DType::kInt64, DType::kUInt64, DType::kBool})
      if (element_type(d) == t) return d;
    fail(ErrorCode::kEpFailure, "openvino: an output of element type ", t.get_type_name(), ", which onyx has no type for");
  }

  std::shared_ptr<Compiled> compile(const std::shared_ptr<ov::Model>& model) const {
    return std::make_shared<Compiled>(compile_model(model, device_, props_, label_));
  }

  // The compiled model for these input shapes: the model reshaped to them and compiled on first
  // use, kept among the last kMaxSignatures.
  std::shared_ptr<Compiled> for_shapes(const std::vector<const Tensor*>& in) const {
    Signature sig;
    for (const Tensor* t : in) sig.emplace_back(t->shape().begin(), t->shape().end());
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
      fail(ErrorCode::kEpFailure, "openvino: ", label_, ": cannot set the input shapes: ", short_message(e));
    }
    by_shape_.emplace_front(std::move(sig), compile(m));
    if (by_shape_.size() > kMaxSignatures) by_shape_.pop_back();
    return by_shape_.front().second;
  }

  static constexpr size_t kMaxSignatures = 8;
  std::string label_;
  std::shared_ptr<ov::Model> model_;
  std::vector<int> inputs_, outputs_;          // value ids in the session's graph
  std::vector<size_t> input_port_, output_port_;  // their ports in model_
  std::string device_;
  ov::AnyMap props_;
  std::shared_ptr<Compiled> static_;
  mutable std::mutex m_;
  mutable std::list<std::pair<Signature, std::shared_ptr<Compiled>>> by_shape_;
};

template <class Ports>
size_t port_of(const Ports& ports, const std::string& name, const std::string& label, const char* what) {
  for (size_t i = 0; i < ports.size(); ++i)
    if (ports[i].get_names().count(name)) return i;
  fail(ErrorCode::kEpFailure, "openvino: ", label, ": OpenVINO's model has no ", what, " named '", name, "'");
}

}  // namespace

ov::CompiledModel compile_model(const std::shared_ptr<ov::Model>& model, const std::string& device, const ov::AnyMap& props,
                                const std::string& label) {
  try {
    return core().compile_model(model, device, props);
  } catch (const std::exception& e) {
    fail(ErrorCode::kEpFailure, "openvino: ", label, ": compiling for ", device, " failed: ", short_message(e));
  }
}

std::unique_ptr<Kernel> compile_openvino_region(const RegionInfo& region, const Options& options, int session_threads) {
  const Graph& g = region.graph;
  const Node& first = g.nodes[region.nodes.front()];
  const std::string label = str("region of ", region.nodes.size(), " node", region.nodes.size() == 1 ? "" : "s", " from ", first.label());
  std::vector<int> inputs;
  for (int v : region.inputs)
    if (!region.constant(v)) inputs.push_back(v);
  const SubgraphPart part{region.nodes, inputs, {}, region.outputs, {}};
  const ov::AnyMap props = options.compile_properties(session_threads);
  std::vector<size_t> in_port, out_port;
  std::shared_ptr<ov::Model> model;
  try {
    model = core().read_model(onnx_subgraph(g, part, nullptr), ov::Tensor());
  } catch (const std::exception& e) {
    fail(ErrorCode::kEpFailure, "openvino: ", label, ": OpenVINO's ONNX frontend cannot read it: ", short_message(e));
  }
  for (int v : inputs) in_port.push_back(port_of(model->inputs(), g.values[v].name, label, "input"));
  for (int v : region.outputs) out_port.push_back(port_of(model->outputs(), g.values[v].name, label, "output"));
  std::shared_ptr<Compiled> compiled;
  if (!model->is_dynamic()) {
    compiled = std::make_shared<Compiled>(compile_model(model, options.device_type, props, label));
    model.reset();  // the compiled model keeps what it needs
  }
  return std::make_unique<RegionKernel>(label, std::move(model), std::move(compiled), std::move(inputs), region.outputs,
                                        std::move(in_port), std::move(out_port), options.device_type, props);
}

}  // namespace onyx::openvino
