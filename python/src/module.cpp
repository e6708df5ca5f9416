// onyx for Python: the extension module onyx._onyx. The onnxruntime-shaped API (InferenceSession,
// SessionOptions, IOBinding, ...) is written in Python on top of it (python/onyx/).
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "onyx/explain.hpp"
#include "onyx/onyx.hpp"
#include "values.hpp"

namespace onyx::py {

namespace {

using Options = std::vector<std::pair<std::string, std::string>>;

[[noreturn]] void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

/// One requested EP: (name, options, error_on_failure).
struct EpRequest {
  std::string name;
  Options options;
  bool error_on_failure = false;
};

std::vector<ep::ExecutionProviderDispatch> dispatches(const std::vector<EpRequest>& eps) {
  std::vector<ep::ExecutionProviderDispatch> out;
  for (const auto& r : eps) {
    // (A third-party plugin given by its path is taken by name; ep::by_name checks the others and
    // throws for a name no EP has.)
    bool path = false;
    for (const auto& [k, v] : r.options) path = path || k == "module_path";
    ep::Spec spec = path ? ep::Spec(r.name) : ep::by_name(r.name);
    for (const auto& [k, v] : r.options) spec.set(k, v);
    out.push_back(spec.build().error_on_failure(r.error_on_failure));
  }
  return out;
}

/// An ORT OrtValue: a value on the host, sharing memory with the array it came from.
struct PyValue {
  Value value;
  std::string name = "value";
};

/// An input value: a numpy array (or anything numpy converts), or an OrtValue (onyx.OrtValue, which
/// holds a PyValue in `_v`, or the PyValue itself).
Value feed_value(nb::handle obj, const IoInfo* info, const std::string& name) {
  if (!is_ndarray(obj)) {
    if (nb::isinstance<PyValue>(obj)) return nb::cast<const PyValue&>(obj).value;
    if (nb::hasattr(obj, "_v")) {
      nb::object v = obj.attr("_v");
      if (nb::isinstance<PyValue>(v)) return nb::cast<const PyValue&>(v).value;
    }
  }
  return value_from_python(obj, info, name);
}

/// "a, b, c": the names of inputs or outputs, for messages.
std::string join_names(const std::vector<IoInfo>& ios) {
  std::string s;
  for (const auto& io : ios) s += (s.empty() ? "" : ", ") + io.name;
  return s;
}

/// One node event of a profiled run.
struct ProfileEvent {
  std::string name, op_type, ep;
  double start_us = 0, duration_us = 0;
  bool run = false;  // the whole run ("model_run")
};

/// A session: the onyx session plus what the Python side asks of it on every call.
class PySession {
 public:
  PySession(nb::object model, nb::dict opts, const std::vector<EpRequest>& eps) {
    SessionBuilder b;
    for (auto [k, v] : opts) {
      const std::string key = nb::cast<std::string>(k);
      if (key == "intra_op_num_threads") b.with_intra_threads(nb::cast<int>(v));
      else if (key == "allow_spinning") b.with_intra_op_spinning(nb::cast<bool>(v));
      else if (key == "optimization_level") b.with_optimization_level(static_cast<GraphOptimizationLevel>(nb::cast<int>(v)));
      else if (key == "memory_limit") b.with_memory_limit(nb::cast<uint64_t>(v));
      else if (key == "cpu_fallback") b.with_cpu_fallback(nb::cast<bool>(v));
      else if (key == "no_environment_providers") { if (nb::cast<bool>(v)) b.with_no_environment_execution_providers(); }
      else if (key == "optimized_model_file") b.with_optimized_model_file(nb::cast<std::string>(v));
      else if (key == "dimension_overrides") {
        for (auto [name, value] : nb::cast<std::vector<std::pair<std::string, int64_t>>>(v))
          b.with_dimension_override(name, value);
      } else
        fail(ErrorCode::kInvalidArgument, "onyx._onyx.Session: unknown option '" + key + "'");
    }
    b.with_execution_providers(dispatches(eps));
    if (PyBytes_Check(model.ptr())) {
      std::string bytes(PyBytes_AS_STRING(model.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(model.ptr())));
      nb::gil_scoped_release unlocked;
      session_ = std::make_unique<Session>(b.commit_from_memory(bytes.data(), bytes.size()));
    } else {
      const std::string path = nb::cast<std::string>(model);
      nb::gil_scoped_release unlocked;
      session_ = std::make_unique<Session>(b.commit_from_file(path));
    }
    for (size_t i = 0; i < session_->inputs().size(); ++i) {
      input_index_[session_->inputs()[i].name] = i;
      if (!session_->inputs()[i].has_default) ++required_count_;
    }
    for (size_t i = 0; i < session_->outputs().size(); ++i) {
      output_index_[session_->outputs()[i].name] = i;
      all_outputs_.push_back(session_->outputs()[i].name);
    }
    origin_ = std::chrono::steady_clock::now();
  }

  const Session& session() const { return *session_; }

  bool has_output(const std::string& name) const { return output_index_.count(name) > 0; }

  const IoInfo* input_info(const std::string& name) const {
    auto it = input_index_.find(name);
    return it == input_index_.end() ? nullptr : &session_->inputs()[it->second];
  }

  /// Converts the feed dict, runs without the GIL, converts the outputs.
  nb::list run(nb::object output_names, nb::handle feed, const RunOptions* options) {
    if (!PyDict_Check(feed.ptr())) fail(ErrorCode::kInvalidArgument, "run(): input_feed must be a dict of name -> array");
    std::vector<std::pair<std::string, Value>> inputs;
    inputs.reserve(static_cast<size_t>(PyDict_Size(feed.ptr())));
    PyObject *key = nullptr, *val = nullptr;
    Py_ssize_t pos = 0;
    size_t required_given = 0;
    while (PyDict_Next(feed.ptr(), &pos, &key, &val)) {
      if (!PyUnicode_Check(key)) fail(ErrorCode::kInvalidArgument, "run(): input_feed keys must be input names (str)");
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(key, &n);
      if (!s) throw nb::python_error();
      std::string name(s, static_cast<size_t>(n));
      const IoInfo* info = input_info(name);
      if (!info)
        fail(ErrorCode::kInvalidArgument, "run(): '" + name + "' is not an input of the model (inputs: " +
                                              join_names(session_->inputs()) + ")");
      inputs.emplace_back(name, feed_value(val, info, name));
      if (!info->has_default) ++required_given;
    }
    if (required_given < required_count_) {
      std::string missing;
      for (const auto& i : session_->inputs())
        if (!i.has_default && !PyDict_GetItemString(feed.ptr(), i.name.c_str())) missing += (missing.empty() ? "'" : ", '") + i.name + "'";
      raise_missing_input("run(): required inputs missing from input_feed: " + missing);
    }
    std::vector<std::string> asked;
    if (!output_names.is_none())
      for (nb::handle h : output_names) asked.push_back(nb::cast<std::string>(h));
    const std::vector<std::string>& names = asked.empty() ? all_outputs_ : asked;
    for (const auto& n : asked)
      if (!has_output(n))
        fail(ErrorCode::kInvalidArgument, "run(): '" + n + "' is not an output of the model (outputs: " +
                                              join_names(session_->outputs()) + ")");

    std::vector<Value> results;
    if (profiling_) {
      results = run_profiled(inputs, names, options);
    } else {
      nb::gil_scoped_release unlocked;
      results = options ? session_->run(inputs, names, *options) : session_->run(inputs, names);
    }
    nb::list out;
    for (size_t i = 0; i < results.size(); ++i) out.append(value_to_python(results[i], names[i]));
    return out;
  }

  void set_profiling(bool on) { profiling_ = on; }
  /// The events recorded since the last call, as (name, op, ep, start_us, duration_us, is_run).
  std::vector<std::tuple<std::string, std::string, std::string, double, double, bool>> take_profile() {
    std::lock_guard<std::mutex> lock(profile_mu_);
    std::vector<std::tuple<std::string, std::string, std::string, double, double, bool>> out;
    for (const auto& e : profile_) out.emplace_back(e.name, e.op_type, e.ep, e.start_us, e.duration_us, e.run);
    profile_.clear();
    return out;
  }

 private:
  std::vector<Value> run_profiled(const std::vector<std::pair<std::string, Value>>& inputs,
                                  const std::vector<std::string>& names, const RunOptions* options) {
    Binding binding(*session_);
    binding.enable_profiling();
    for (const auto& [n, v] : inputs) binding.bind_input(n, v);
    double start = 0, duration = 0;
    {
      nb::gil_scoped_release unlocked;
      const auto t0 = std::chrono::steady_clock::now();
      if (options) session_->run(binding, *options);
      else session_->run(binding);
      const auto t1 = std::chrono::steady_clock::now();
      start = std::chrono::duration<double, std::micro>(t0 - origin_).count();
      duration = std::chrono::duration<double, std::micro>(t1 - t0).count();
    }
    {
      std::lock_guard<std::mutex> lock(profile_mu_);
      profile_.push_back({"model_run", "", "", start, duration, true});
      for (const auto& t : binding.profile())
        profile_.push_back({t.node, t.op_type, t.ep, start + t.start_us, t.duration_us, false});
    }
    std::vector<Value> out;
    for (const auto& n : names) out.push_back(binding.output(n));
    return out;
  }

  std::unique_ptr<Session> session_;
  std::map<std::string, size_t> input_index_, output_index_;
  std::vector<std::string> all_outputs_;  // every output, in order (run's default)
  size_t required_count_ = 0;
  bool profiling_ = false;
  std::mutex profile_mu_;
  std::vector<ProfileEvent> profile_;
  std::chrono::steady_clock::time_point origin_;
};

/// ORT's IOBinding over onyx's Binding: inputs and outputs bound once, run many times.
class PyBinding {
 public:
  explicit PyBinding(PySession& s) : session_(&s), binding_(std::make_unique<Binding>(s.session())) {}

  /// Binds an array (or anything numpy converts) or an OrtValue.
  void bind_input(const std::string& name, nb::handle obj) {
    const IoInfo* info = session_->input_info(name);
    if (!info) fail(ErrorCode::kInvalidArgument, "bind_input: '" + name + "' is not an input of the model");
    bind(name, feed_value(obj, info, name));
  }
  void bind_pointer(const std::string& name, nb::handle element_type, const std::vector<int64_t>& shape, uintptr_t ptr) {
    if (!session_->input_info(name)) fail(ErrorCode::kInvalidArgument, "bind_input: '" + name + "' is not an input of the model");
    if (!ptr) fail(ErrorCode::kInvalidArgument, "bind_input: '" + name + "': buffer_ptr is null");
    const DType t = dtype_from_numpy(element_type);
    bind(name, Tensor::view(t, Shape(shape), reinterpret_cast<void*>(ptr)));
  }
  /// Requests output `name`; into a buffer when one is given.
  void bind_output(const std::string& name, const PyValue* into) {
    if (!session_->has_output(name)) fail(ErrorCode::kInvalidArgument, "bind_output: '" + name + "' is not an output of the model");
    Tensor buffer;
    if (into) {
      if (!into->value.is_tensor()) fail(ErrorCode::kInvalidArgument, "bind_output: '" + name + "': the buffer is not a tensor");
      buffer = into->value.tensor();
      binding_->bind_output(name, buffer);
    }
    for (auto& [n, t] : outputs_bound_)
      if (n == name) {
        t = buffer;
        return;
      }
    outputs_bound_.emplace_back(name, buffer);
  }
  void bind_output_pointer(const std::string& name, nb::handle element_type, const std::vector<int64_t>& shape, uintptr_t ptr) {
    if (!ptr) fail(ErrorCode::kInvalidArgument, "bind_output: '" + name + "': buffer_ptr is null");
    PyValue v;
    v.value = Tensor::view(dtype_from_numpy(element_type), Shape(shape), reinterpret_cast<void*>(ptr));
    bind_output(name, &v);
  }
  /// Drops the input bindings; the output requests and buffers stay.
  void clear_inputs() {
    bound_inputs_.clear();
    binding_ = std::make_unique<Binding>(session_->session());
    for (const auto& [n, t] : outputs_bound_)
      if (t.defined()) binding_->bind_output(n, t);
  }
  /// Drops the output requests and buffers; the input bindings stay.
  void clear_outputs() {
    outputs_bound_.clear();
    binding_ = std::make_unique<Binding>(session_->session());
    for (const auto& [n, v] : bound_inputs_) binding_->bind_input(n, v);
  }
  void run(const RunOptions* options) {
    nb::gil_scoped_release unlocked;
    if (options) session_->session().run(*binding_, *options);
    else session_->session().run(*binding_);
  }
  /// The bound outputs (every output when none was bound), in the order bound.
  std::vector<PyValue> outputs() const {
    std::vector<PyValue> out;
    if (binding_->outputs().empty()) return out;
    if (outputs_bound_.empty()) {
      const auto& outs = session_->session().outputs();
      for (size_t i = 0; i < outs.size(); ++i) out.push_back({binding_->outputs()[i], outs[i].name});
    } else {
      for (const auto& [n, t] : outputs_bound_) out.push_back({binding_->output(n), n});
    }
    return out;
  }

 private:
  void bind(const std::string& name, Value v) {
    binding_->bind_input(name, v);
    bound_inputs_[name] = std::move(v);
  }

  PySession* session_;
  std::unique_ptr<Binding> binding_;
  std::vector<std::pair<std::string, Tensor>> outputs_bound_;  // requested outputs; a buffer when given
  std::map<std::string, Value> bound_inputs_;
};

const char* source_name(EpRegistration::Source s) { return registration_source_name(s).data(); }
const char* outcome_name(EpRegistration::Outcome o) { return registration_outcome_name(o).data(); }

nb::dict io_dict(const IoInfo& i) {
  nb::dict d;
  d["name"] = i.name;
  d["type"] = i.onnx_type;
  d["type_string"] = i.type_string;
  d["has_default"] = i.has_default;
  if (i.has_shape) {
    nb::list shape;
    for (size_t k = 0; k < i.shape.size(); ++k) {
      if (i.shape[k] >= 0) shape.append(i.shape[k]);
      else if (k < i.dim_names.size() && !i.dim_names[k].empty()) shape.append(i.dim_names[k]);
      else shape.append(nb::none());
    }
    d["shape"] = shape;
  } else {
    d["shape"] = nb::none();
  }
  return d;
}

}  // namespace

/// onyx.register_custom_op: a custom op whose type inference and kernel are Python callables
/// (docs/custom-ops.md), called with the GIL held, from whichever thread runs the node. The op
/// cannot be unregistered: the onyx package keeps the callables alive (onyx._CUSTOM_OPS) until the
/// interpreter ends, and these are borrowed references to them.
void register_python_custom_op(const std::string& domain, const std::string& name, nb::object infer, nb::object compute,
                               int since_version) {
  if (!PyCallable_Check(compute.ptr())) fail(ErrorCode::kInvalidArgument, "register_custom_op: compute must be callable");
  if (!infer.is_none() && !PyCallable_Check(infer.ptr()))
    fail(ErrorCode::kInvalidArgument, "register_custom_op: infer must be callable or None");
  PyObject* infer_fn = infer.is_none() ? nullptr : infer.ptr();
  PyObject* compute_fn = compute.ptr();
  const std::string label = domain + "::" + name;
  CustomOp op;
  op.domain = domain;
  op.name = name;
  op.since_version = since_version;
  op.infer = [infer_fn, label](CustomOpInferContext& ctx) {
    if (!infer_fn) {  // every output like input 0
      if (ctx.num_inputs() == 0 || !ctx.has_input(0)) fail(ErrorCode::kInvalidGraph, label + ": no input 0 to take the outputs' type from");
      for (size_t o = 0; o < ctx.num_outputs(); ++o)
        if (ctx.input_has_shape(0)) ctx.set_output(o, ctx.input_dtype(0), ctx.input_shape(0));
        else ctx.set_output_unranked(o, ctx.input_dtype(0));
      return;
    }
    nb::gil_scoped_acquire gil;
    nb::list types;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) {
        types.append(nb::none());
        continue;
      }
      nb::object shape = nb::none();
      if (ctx.input_has_shape(i)) {
        nb::list dims;
        for (int64_t d : ctx.input_shape(i)) dims.append(d >= 0 ? nb::object(nb::int_(d)) : nb::none());
        shape = nb::tuple(dims);
      }
      types.append(nb::make_tuple(numpy_dtype(ctx.input_dtype(i), label), shape));
    }
    nb::object result;
    try {
      result = nb::handle(infer_fn)(types);
    } catch (const nb::python_error& e) {
      fail(ErrorCode::kInvalidGraph, label + ": infer raised " + e.what());
    }
    if (!nb::isinstance<nb::list>(result) && !nb::isinstance<nb::tuple>(result))
      fail(ErrorCode::kInvalidGraph, label + ": infer must return a list of (dtype, shape) per output");
    const size_t n = nb::len(result);
    if (n != ctx.num_outputs())
      fail(ErrorCode::kInvalidGraph, label + ": infer returned " + std::to_string(n) + " types for " +
                                         std::to_string(ctx.num_outputs()) + " outputs");
    for (size_t o = 0; o < n; ++o) {
      nb::object t = result[o];
      if (!nb::isinstance<nb::tuple>(t) || nb::len(t) != 2)
        fail(ErrorCode::kInvalidGraph, label + ": infer's entry " + std::to_string(o) + " is not a (dtype, shape) pair");
      const DType dt = dtype_from_numpy(t[0]);
      if (t[1].is_none()) {
        ctx.set_output_unranked(o, dt);
        continue;
      }
      std::vector<int64_t> dims;
      for (nb::handle d : nb::iter(t[1])) dims.push_back(d.is_none() ? -1 : nb::cast<int64_t>(d));
      ctx.set_output(o, dt, dims);
    }
  };
  op.compute = [compute_fn, label](CustomOpKernelContext& ctx) {
    nb::gil_scoped_acquire gil;
    nb::list args;
    for (size_t i = 0; i < ctx.num_inputs(); ++i)
      args.append(ctx.has_input(i) ? tensor_to_numpy(ctx.input(i), label) : nb::none());
    nb::object result;
    try {
      result = nb::handle(compute_fn)(*args);
    } catch (const nb::python_error& e) {
      fail(ErrorCode::kRuntime, ctx.node_name() + ": " + label + ": compute raised " + e.what());
    }
    const bool many = nb::isinstance<nb::list>(result) || nb::isinstance<nb::tuple>(result);
    const size_t n = many ? nb::len(result) : 1;
    if (n != ctx.num_outputs())
      fail(ErrorCode::kRuntime, ctx.node_name() + ": " + label + ": compute returned " + std::to_string(n) + " arrays for " +
                                    std::to_string(ctx.num_outputs()) + " outputs");
    for (size_t o = 0; o < n; ++o) {
      const Tensor t = tensor_from_python(many ? nb::object(result[o]) : result, DType::kUndefined, label + " output");
      if (t.dtype() == DType::kString) fail(ErrorCode::kNotImplemented, label + ": string outputs are not supported");
      Tensor& out = ctx.output(o, t.dtype(), t.shape().to_vector());
      if (t.nbytes()) std::memcpy(out.raw_data(), t.raw_data(), t.nbytes());
    }
  };
  register_custom_op(std::move(op));
}

}  // namespace onyx::py

NB_MODULE(_onyx, m) {
  using namespace onyx;
  using namespace onyx::py;
  m.doc() = "onyx's extension module (use the onyx package: import onyx)";
  install_error_translator();
  m.def("_register_errors", &register_error_classes);
  m.def("version", [] { return std::string(onyx::version()); });
  m.def("register_custom_op", &register_python_custom_op, nb::arg("domain"), nb::arg("name"), nb::arg("infer").none(),
        nb::arg("compute"), nb::arg("since_version") = 1);

  nb::class_<EpRequest>(m, "EpRequest")
      .def(nb::init<>())
      .def("__init__", [](EpRequest* r, std::string name, Options options, bool error_on_failure) {
        new (r) EpRequest{std::move(name), std::move(options), error_on_failure};
      }, nb::arg("name"), nb::arg("options"), nb::arg("error_on_failure"));

  nb::class_<RunOptions>(m, "RunOptions", nb::dynamic_attr())
      .def(nb::init<>())
      .def("_set_terminate", [](const RunOptions& r, bool on) { on ? r.terminate() : r.reset(); })
      .def("_terminated", &RunOptions::terminated);

  nb::class_<PyValue>(m, "Value")
      .def_static("from_object", [](nb::handle obj, nb::handle element_type) {
        PyValue v;
        const DType want = element_type.is_none() ? DType::kUndefined : dtype_from_numpy(element_type);
        v.value = Value(tensor_from_python(obj, want, "value"));
        return v;
      }, nb::arg("obj"), nb::arg("element_type").none())
      .def_static("empty", [](const std::vector<int64_t>& shape, nb::handle element_type) {
        PyValue v;
        v.value = Value(Tensor(dtype_from_numpy(element_type), Shape(shape)));
        return v;
      })
      .def("to_python", [](const PyValue& v) { return value_to_python(v.value, v.name); })
      .def_prop_ro("kind", [](const PyValue& v) {
        switch (v.value.kind()) {
          case Value::Kind::kTensor: return "tensor";
          case Value::Kind::kSequence: return "sequence";
          case Value::Kind::kOptional: return "optional";
          case Value::Kind::kMap: return "map";
          default: return "none";
        }
      })
      .def_prop_ro("shape", [](const PyValue& v) {
        return v.value.is_tensor() ? v.value.tensor().shape().to_vector() : std::vector<int64_t>{};
      })
      .def_prop_ro("onnx_type", [](const PyValue& v) { return onnx_type_of(v.value); })
      .def_prop_ro("data_ptr", [](const PyValue& v) {
        return v.value.is_tensor() ? reinterpret_cast<uintptr_t>(v.value.tensor().raw_data()) : uintptr_t{0};
      })
      .def_prop_ro("device", [](const PyValue& v) {
        return v.value.is_tensor() ? device_memory_name(v.value.tensor().memory()) : std::string("cpu");
      });

  nb::class_<PySession>(m, "Session")
      .def(nb::init<nb::object, nb::dict, const std::vector<EpRequest>&>(), nb::arg("model"), nb::arg("options"),
           nb::arg("providers"))
      .def("run", &PySession::run, nb::arg("output_names").none(), nb::arg("input_feed"),
           nb::arg("run_options").none() = nb::none())
      .def("inputs", [](const PySession& s) {
        nb::list l;
        for (const auto& i : s.session().inputs()) l.append(io_dict(i));
        return l;
      })
      .def("outputs", [](const PySession& s) {
        nb::list l;
        for (const auto& o : s.session().outputs()) l.append(io_dict(o));
        return l;
      })
      .def("metadata", [](const PySession& s) {
        const ModelMetadata md = s.session().metadata();
        nb::dict d;
        d["producer_name"] = md.producer_name;
        d["producer_version"] = md.producer_version;
        d["domain"] = md.domain;
        d["version"] = md.model_version;
        d["description"] = md.doc_string;
        d["graph_name"] = md.graph_name;
        d["graph_description"] = md.graph_doc_string;
        nb::dict custom;
        for (const auto& [k, v] : md.custom) custom[nb::str(k.c_str())] = v;
        d["custom_metadata_map"] = custom;
        d["ir_version"] = s.session().ir_version();
        d["opsets"] = s.session().opsets();
        return d;
      })
      .def("registration", [](const PySession& s) { return s.session().registration(); })
      .def("placement", [](const PySession& s) { return s.session().placement(); })
      .def("plan_count", [](const PySession& s) { return s.session().plan_count(); })
      .def("generate",
           [](const PySession& s, const std::vector<int64_t>& prompt, int64_t max_new_tokens, const std::vector<int64_t>& eos,
              bool share_buffer, int64_t max_length) {
             GenerationOptions o;
             o.max_new_tokens = max_new_tokens;
             o.eos_token_ids = eos;
             o.share_buffer = share_buffer;
             o.max_length = max_length;
             GenerationResult r;
             std::vector<std::pair<std::string, std::string>> cache;
             {
               nb::gil_scoped_release unlocked;
               const Generator g(s.session());
               r = g.generate(prompt, o);
               cache = g.cache();
             }
             nb::dict d;
             d["tokens"] = r.tokens;
             d["prompt_tokens"] = r.prompt_tokens;
             d["time_to_first_token_ms"] = r.prompt_ms;
             d["step_ms"] = r.step_ms;
             d["decode_tokens_per_s"] = r.tokens_per_second();
             d["cache_copy_bytes"] = r.cache_copy_bytes;
             d["cache"] = cache;
             return d;
           },
           nb::arg("prompt"), nb::arg("max_new_tokens"), nb::arg("eos"), nb::arg("share_buffer"), nb::arg("max_length"))
      .def("explain_text", [](const PySession& s, const std::string& model) { return explain_text(s.session(), model); })
      .def("set_profiling", &PySession::set_profiling)
      .def("take_profile", &PySession::take_profile);

  nb::class_<PyBinding>(m, "Binding")
      .def(nb::init<PySession&>(), nb::keep_alive<1, 2>())
      .def("bind_input", &PyBinding::bind_input)
      .def("bind_pointer", &PyBinding::bind_pointer)
      .def("bind_output", &PyBinding::bind_output, nb::arg("name"), nb::arg("into").none())
      .def("bind_output_pointer", &PyBinding::bind_output_pointer)
      .def("clear_inputs", &PyBinding::clear_inputs)
      .def("clear_outputs", &PyBinding::clear_outputs)
      .def("run", &PyBinding::run, nb::arg("run_options").none())
      .def("outputs", &PyBinding::outputs);

  nb::class_<EpRegistration>(m, "EpRegistration")
      .def_ro("name", &EpRegistration::name)
      .def_prop_ro("source", [](const EpRegistration& r) { return source_name(r.source); })
      .def_prop_ro("outcome", [](const EpRegistration& r) { return outcome_name(r.outcome); })
      .def_ro("reason", &EpRegistration::reason)
      .def_ro("priority", &EpRegistration::priority)
      .def_ro("version", &EpRegistration::version)
      .def_ro("device", &EpRegistration::device)
      .def_ro("module", &EpRegistration::module)
      .def_prop_ro("options", [](const EpRegistration& r) {
        nb::dict d;
        for (const auto& [k, v] : r.options) d[nb::str(k.c_str())] = v;
        return d;
      })
      .def_ro("error_on_failure", &EpRegistration::error_on_failure)
      .def("__repr__", [](const EpRegistration& r) {
        std::string s = "EpRegistration(" + r.name + ", " + outcome_name(r.outcome) + ", " + source_name(r.source);
        if (r.outcome == EpRegistration::Outcome::kRegistered) s += ", priority " + std::to_string(r.priority) + ", " + r.device;
        else s += ", " + r.reason;
        return s + ")";
      });

  nb::class_<Placement::Decline>(m, "Decline")
      .def_ro("ep", &Placement::Decline::ep)
      .def_ro("code", &Placement::Decline::code)
      .def_ro("message", &Placement::Decline::message)
      .def("__repr__", [](const Placement::Decline& d) { return "Decline(" + d.ep + ", " + d.code + ": " + d.message + ")"; });
  nb::class_<Placement::NodeInfo>(m, "NodePlacement")
      .def_ro("name", &Placement::NodeInfo::name)
      .def_ro("op_type", &Placement::NodeInfo::op_type)
      .def_ro("ep", &Placement::NodeInfo::ep)
      .def_ro("device", &Placement::NodeInfo::device)
      .def_ro("region", &Placement::NodeInfo::region)
      .def_ro("declined", &Placement::NodeInfo::declined)
      .def_ro("domain", &Placement::NodeInfo::domain)
      .def("__repr__", [](const Placement::NodeInfo& n) { return "NodePlacement(" + n.name + ", " + n.op_type + " on " + n.ep + ")"; });
  nb::class_<Placement::CopyInfo>(m, "CopyPlacement")
      .def_ro("value", &Placement::CopyInfo::value)
      .def_ro("source", &Placement::CopyInfo::from)
      .def_ro("destination", &Placement::CopyInfo::to)
      .def_ro("bytes", &Placement::CopyInfo::bytes)
      .def("__repr__", [](const Placement::CopyInfo& c) { return "Copy(" + c.value + ": " + c.from + " -> " + c.to + ")"; });
  nb::class_<Placement>(m, "Placement")
      .def_ro("nodes", &Placement::nodes)
      .def_ro("copies", &Placement::copies)
      .def_ro("summary", &Placement::summary)
      .def("__repr__", [](const Placement& p) { return "Placement(" + p.summary + ")"; });

  nb::class_<ep::OptionInfo>(m, "OptionInfo")
      .def_ro("key", &ep::OptionInfo::key)
      .def_ro("type", &ep::OptionInfo::type)
      .def_ro("default", &ep::OptionInfo::default_value)
      .def_ro("doc", &ep::OptionInfo::doc)
      .def("__repr__", [](const ep::OptionInfo& o) { return "OptionInfo(" + o.key + ": " + o.type + " = " + o.default_value + ")"; });
  nb::class_<ep::ProviderInfo>(m, "ProviderInfo")
      .def_ro("name", &ep::ProviderInfo::name)
      .def_ro("cmake_option", &ep::ProviderInfo::cmake_option)
      .def_prop_ro("built", [](const ep::ProviderInfo& p) { return p.availability.built; })
      .def_prop_ro("loadable", [](const ep::ProviderInfo& p) { return p.availability.loadable; })
      .def_prop_ro("usable", [](const ep::ProviderInfo& p) { return p.availability.usable; })
      .def_prop_ro("reason", [](const ep::ProviderInfo& p) { return p.availability.reason; })
      .def_prop_ro("version", [](const ep::ProviderInfo& p) { return p.availability.version; })
      .def_prop_ro("module", [](const ep::ProviderInfo& p) { return p.availability.module; })
      .def_ro("options", &ep::ProviderInfo::options)
      .def("__repr__", [](const ep::ProviderInfo& p) {
        return "ProviderInfo(" + p.name + ", " + (p.availability.usable ? "usable" : "not usable: " + p.availability.reason) + ")";
      });
  m.def("list_providers", [] { return ep::list_providers(); });
  m.def("set_environment_providers", [](const std::vector<EpRequest>& eps) {
    onyx::init().with_execution_providers(dispatches(eps)).commit();
  });
  m.def("set_log_level", [](int level) { set_log_level(static_cast<LogLevel>(level < 0 ? 0 : level > 4 ? 4 : level)); });
  m.def("log_level", [] { return static_cast<int>(log_level()); });
}
