#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <dirent.h>
#include <random>

#include "cli.hpp"
#include "core/common.hpp"
#include "model/loader.hpp"
#include "model/tensor_proto.hpp"
#include "session/infer.hpp"
#include "session/io_info.hpp"
#include "session/session_impl.hpp"

namespace onyx::cli {

std::vector<std::string> Args::all(const std::string& k) const {
  std::vector<std::string> r;
  auto range = options.equal_range(k);
  for (auto it = range.first; it != range.second; ++it) r.push_back(it->second);
  return r;
}

int64_t Args::get_int(const std::string& k, int64_t dflt) const {
  if (!has(k)) return dflt;
  const std::string v = get(k);
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end) fail(ErrorCode::kInvalidArgument, k, " expects an integer, got '", v, "'");
  return x;
}

Args parse_args(int argc, char** argv, int first, const std::vector<std::string>& flags,
                const std::vector<std::string>& valued) {
  Args a;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) == 0) {
      std::string key = s, val;
      const size_t eq = s.find('=');
      const bool inline_value = eq != std::string::npos;
      if (inline_value) {
        key = s.substr(0, eq);
        val = s.substr(eq + 1);
      }
      if (std::find(flags.begin(), flags.end(), key) != flags.end()) {
        if (inline_value) fail(ErrorCode::kInvalidArgument, key, " takes no value");
        a.options.emplace(key, "");
      } else if (std::find(valued.begin(), valued.end(), key) != valued.end()) {
        if (!inline_value) {
          if (i + 1 >= argc) fail(ErrorCode::kInvalidArgument, key, " needs a value");
          val = argv[++i];
        }
        a.options.emplace(key, val);
      } else {
        fail(ErrorCode::kInvalidArgument, "unknown option ", key);
      }
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

std::string json_escape(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

void Json::sep() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ",";
    first_.back() = false;
  }
}
Json& Json::begin_object() {
  sep();
  out_ += "{";
  first_.push_back(true);
  return *this;
}
Json& Json::end_object() {
  out_ += "}";
  first_.pop_back();
  return *this;
}
Json& Json::begin_array() {
  sep();
  out_ += "[";
  first_.push_back(true);
  return *this;
}
Json& Json::end_array() {
  out_ += "]";
  first_.pop_back();
  return *this;
}
Json& Json::key(const std::string& k) {
  sep();
  out_ += json_escape(k) + ":";
  after_key_ = true;
  return *this;
}
Json& Json::value(const std::string& v) {
  sep();
  out_ += json_escape(v);
  return *this;
}
Json& Json::value(double v) {
  sep();
  if (!std::isfinite(v)) {
    out_ += "null";
  } else {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.6g", v);
    out_ += buf;
  }
  return *this;
}
Json& Json::value(int64_t v) {
  sep();
  out_ += std::to_string(v);
  return *this;
}
Json& Json::value(bool v) {
  sep();
  out_ += v ? "true" : "false";
  return *this;
}
Json& Json::null() {
  sep();
  out_ += "null";
  return *this;
}

namespace {

/// "x float[batch,?,4], mask int64[batch,seq]"
std::string describe_inputs(const std::vector<IoInfo>& inputs) {
  std::vector<std::string> parts;
  for (const auto& in : inputs) parts.push_back(in.name + " " + in.type_string);
  return parts.empty() ? std::string("none") : join(parts, ", ");
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

ModelInfo read_model_info(const std::string& path, bool infer_outputs) {
  const std::shared_ptr<Model> m = load_model_file(path);
  const Graph& g = *m->graph;
  SymbolTable& symbols = *m->symbols;
  ModelInfo r;
  r.ir_version = m->ir_version;
  r.producer = m->producer_version.empty() ? m->producer_name : m->producer_name + " " + m->producer_version;
  for (const auto& [d, v] : m->opsets) r.opsets.emplace_back(d.empty() ? "ai.onnx" : d, v);
  for (int in : g.inputs) r.inputs.push_back(io_info(g.values[in], g.values[in].type, symbols));
  // An output's declared type, or the inferred one where the file declares none (or no shape).
  auto wants_inferred = [](const TypeInfo& declared, const TypeInfo& inferred) {
    return declared.kind == TypeInfo::Kind::kUnknown || (declared.is_tensor() && !declared.has_shape && inferred.has_shape);
  };
  GraphFacts facts;
  bool need = false;
  for (int out : g.outputs) need |= g.values[out].type.kind == TypeInfo::Kind::kUnknown || !g.values[out].type.has_shape;
  if (infer_outputs && need) {
    try {
      facts = entry_facts(g, nullptr, false);
      infer_graph(g, facts, symbols, InferOptions{});
    } catch (const Error&) {
      // An op onyx does not know, or a type error: the outputs inferred before it keep their types.
    }
  }
  for (int out : g.outputs) {
    const TypeInfo& declared = g.values[out].type;
    const bool inferred = static_cast<size_t>(out) < facts.types.size() && wants_inferred(declared, facts.types[out]) &&
                          facts.types[out].kind != TypeInfo::Kind::kUnknown;
    r.outputs.push_back(io_info(g.values[out], inferred ? facts.types[out] : declared, symbols));
  }
  std::map<std::string, int64_t> counts;
  for (const Node& n : g.nodes) counts[n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type]++;
  r.op_counts.assign(counts.begin(), counts.end());
  return r;
}

std::vector<DimSetting> dims_from(const Args& a, const std::vector<IoInfo>& inputs) {
  std::vector<std::string> named;  // the inputs' symbolic dim names, in order of appearance
  for (const auto& in : inputs)
    for (size_t k = 0; k < in.shape.size(); ++k)
      if (in.shape[k] < 0 && !in.dim_names[k].empty() && std::find(named.begin(), named.end(), in.dim_names[k]) == named.end())
        named.push_back(in.dim_names[k]);
  std::vector<DimSetting> r;
  for (const auto& text : a.all("--dim")) {
    const size_t eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0) fail(ErrorCode::kInvalidArgument, "--dim expects NAME=N or INPUT:AXIS=N, got '", text, "'");
    DimSetting d;
    d.text = text;
    const std::string lhs = text.substr(0, eq), n = text.substr(eq + 1);
    if (!all_digits(n) || n.size() > 18) fail(ErrorCode::kInvalidArgument, "--dim ", text, ": N must be a non-negative integer");
    d.value = std::stoll(n);
    if (std::find(named.begin(), named.end(), lhs) != named.end()) {
      d.name = lhs;
      r.push_back(d);
      continue;
    }
    // INPUT:AXIS (the last ':' splits, so input names with a ':' of their own, "input:0", work too).
    const size_t colon = lhs.rfind(':');
    if (colon == std::string::npos || colon == 0 || !all_digits(lhs.substr(colon + 1)))
      fail(ErrorCode::kInvalidArgument, "--dim ", text, ": no input of the model has a dim named '", lhs, "' (",
           named.empty() ? std::string("the inputs have no named dims") : "named dims: " + join(named, ", "),
           "; inputs: ", describe_inputs(inputs), "; a dim without a name is set with --dim INPUT:AXIS=N)");
    d.input = lhs.substr(0, colon);
    const std::string axis = lhs.substr(colon + 1);
    auto it = std::find_if(inputs.begin(), inputs.end(), [&](const IoInfo& in) { return in.name == d.input; });
    if (it == inputs.end())
      fail(ErrorCode::kInvalidArgument, "--dim ", text, ": the model has no input named '", d.input, "' (inputs: ",
           describe_inputs(inputs), ")");
    if (!it->has_shape)
      fail(ErrorCode::kInvalidArgument, "--dim ", text, ": input '", d.input, "' (", it->type_string, ") has no declared shape");
    if (axis.size() > 9 || std::stoul(axis) >= it->shape.size())
      fail(ErrorCode::kInvalidArgument, "--dim ", text, ": input '", d.input, "' (", it->type_string, ") has rank ", it->shape.size(),
           it->shape.empty() ? std::string() : str(" (axes 0 to ", it->shape.size() - 1, ")"));
    d.axis = std::stoul(axis);
    if (it->shape[d.axis] >= 0 && it->shape[d.axis] != d.value)
      fail(ErrorCode::kInvalidArgument, "--dim ", text, ": dim ", d.axis, " of input '", d.input, "' (", it->type_string,
           ") is fixed at ", it->shape[d.axis], " by the model");
    r.push_back(d);
  }
  return r;
}

std::vector<ep::ExecutionProviderDispatch> eps_from(const Args& a) {
  const bool require = a.has("--require-ep");
  // --ep-option NAME.KEY=VALUE sets an option of EP NAME.
  struct EpOption {
    std::string text, ep, key, value;
  };
  std::vector<EpOption> opts;
  for (const auto& o : a.all("--ep-option")) {
    const size_t dot = o.find('.'), eq = o.find('=');
    if (dot == std::string::npos || eq == std::string::npos || eq < dot)
      fail(ErrorCode::kInvalidArgument, "--ep-option expects NAME.KEY=VALUE, got '", o, "'");
    opts.push_back({o, o.substr(0, dot), o.substr(dot + 1, eq - dot - 1), o.substr(eq + 1)});
  }
  std::vector<std::string> names;  // --ep, in priority order
  for (const auto& list : a.all("--ep")) {
    size_t b = 0;
    while (b <= list.size()) {
      const size_t e = list.find(',', b);
      std::string name = list.substr(b, e == std::string::npos ? std::string::npos : e - b);
      if (!name.empty()) names.push_back(name);
      if (e == std::string::npos) break;
      b = e + 1;
    }
  }
  if (require && names.empty()) fail(ErrorCode::kInvalidArgument, "--require-ep needs --ep NAME[,NAME...]");
  std::vector<ep::ExecutionProviderDispatch> eps;
  for (const auto& name : names) {
    // (A third-party plugin given by its path is taken by name; ep::by_name checks the others.)
    const bool plugin_path = std::any_of(opts.begin(), opts.end(), [&](const EpOption& o) { return o.ep == name && o.key == "module_path"; });
    ep::Spec spec = plugin_path ? ep::Spec(name) : ep::by_name(name);
    for (const auto& o : opts)
      if (o.ep == name) spec.set(o.key, o.value);
    eps.push_back(spec.build().error_on_failure(require));
  }
  // Options of an EP --ep does not list: the CPU EP is always there (last, unless listed), so its
  // options apply to it, listed where the session would add it; any other EP's are a mistake.
  ep::Spec cpu = ep::by_name("cpu");
  bool cpu_options = false;
  for (const auto& o : opts) {
    if (std::find(names.begin(), names.end(), o.ep) != names.end()) continue;
    if (o.ep != "cpu")
      fail(ErrorCode::kInvalidArgument, "--ep-option ", o.text, ": '", o.ep, "' is not one of the EPs given with --ep (",
           names.empty() ? std::string("none given") : join(names, ","), ")");
    if (a.has("--strict"))
      fail(ErrorCode::kInvalidArgument, "--ep-option ", o.text, ": with --strict no node may run on the CPU EP, so its options have no effect");
    cpu.set(o.key, o.value);
    cpu_options = true;
  }
  if (cpu_options) eps.push_back(cpu.build());
  return eps;
}

SessionBuilder builder_from(const Args& a, const std::string& path) {
  SessionBuilder b;
  b.with_intra_threads(static_cast<int>(a.get_int("--threads", 0)));
  if (a.has("--no-spin")) b.with_intra_op_spinning(false);
  if (a.has("--memory-limit")) {
    const int64_t mb = a.get_int("--memory-limit", 0);
    if (mb < 1 || mb > (int64_t(1) << 30))
      fail(ErrorCode::kInvalidArgument, "--memory-limit must be a number of MB in [1, 2^30], got ", mb);
    b.with_memory_limit(static_cast<uint64_t>(mb) << 20);
  }
  // --dim is checked against the inputs as the model declares them (the loader alone, only when
  // --dim is given), so a typo is an error that lists the names instead of a setting that is ignored.
  if (a.has("--dim"))
    for (const DimSetting& d : dims_from(a, read_model_info(path, false).inputs)) {
      if (d.by_input())
        b.with_input_dimension(d.input, d.axis, d.value);
      else
        b.with_dimension_override(d.name, d.value);
    }
  b.with_execution_providers(eps_from(a));
  if (a.has("--strict")) b.with_cpu_fallback(false);
  if (a.has("--save-optimized")) b.with_optimized_model_file(a.get("--save-optimized"));
  return b;
}

std::vector<std::pair<std::string, Value>> random_inputs(const Session& s, int64_t int_max, uint64_t seed) {
  // Dims the session leaves symbolic are 1, said before anything runs (a shape error deep in the
  // model is then understandable): one note per dim name (with the inputs that have it), or per
  // unnamed dim, in the order of the inputs.
  struct Unset {
    std::string name;                 // "" for an unnamed dim
    std::vector<std::string> inputs;  // quoted
    std::string note;                 // the whole note, for an unnamed dim
  };
  std::vector<Unset> unset;
  for (const IoInfo& in : s.inputs()) {
    if (in.has_default || in.kind != Value::Kind::kTensor) continue;
    for (size_t k = 0; k < in.shape.size(); ++k) {
      if (in.shape[k] >= 0) continue;
      const std::string& name = in.dim_names[k];
      if (name.empty()) {
        unset.push_back({"", {}, str("dim ", k, " of input '", in.name, "' (", in.type_string, ") not set (--dim ", in.name, ":", k, "=N)")});
        continue;
      }
      auto it = std::find_if(unset.begin(), unset.end(), [&](const Unset& u) { return u.name == name; });
      if (it == unset.end()) it = unset.insert(unset.end(), Unset{name, {}, ""});
      const std::string quoted = "'" + in.name + "'";
      if (std::find(it->inputs.begin(), it->inputs.end(), quoted) == it->inputs.end()) it->inputs.push_back(quoted);
    }
  }
  for (const Unset& u : unset) {
    const std::string note = u.name.empty() ? u.note
                                            : str("dim '", u.name, "' of input", u.inputs.size() == 1 ? " " : "s ", join(u.inputs, ", "),
                                                  " not set (--dim ", u.name, "=N)");
    std::fprintf(stderr, "note: %s; using 1\n", note.c_str());
  }
  std::mt19937_64 rng(seed);
  std::vector<std::pair<std::string, Value>> r;
  for (const IoInfo& in : s.inputs()) {
    if (in.has_default) continue;
    if (in.kind != Value::Kind::kTensor)
      fail(ErrorCode::kInvalidArgument, "input '", in.name, "' is a ", in.type_string,
           "; random values are only made for tensors (use --inputs)");
    Shape shape;
    for (size_t k = 0; k < in.shape.size(); ++k) shape.push_back(in.shape[k] >= 0 ? in.shape[k] : 1);
    Tensor t(in.dtype, shape);
    const bool mask = in.name.find("mask") != std::string::npos;
    std::uniform_real_distribution<double> uf(-1.0, 1.0);
    const int64_t n = t.numel();
    const int64_t hi = std::max<int64_t>(1, int_max);
    auto fill_int = [&]<class T>(T* p) {
      for (int64_t i = 0; i < n; ++i) p[i] = mask ? T(1) : static_cast<T>(rng() % static_cast<uint64_t>(hi));
    };
    switch (in.dtype) {
      case DType::kFloat:
        for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = mask ? 1.0f : static_cast<float>(uf(rng));
        break;
      case DType::kDouble:
        for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = mask ? 1.0 : uf(rng);
        break;
      case DType::kFloat16:
        for (int64_t i = 0; i < n; ++i) t.data<Float16>()[i] = Float16(mask ? 1.0f : static_cast<float>(uf(rng)));
        break;
      case DType::kBFloat16:
        for (int64_t i = 0; i < n; ++i) t.data<BFloat16>()[i] = BFloat16(mask ? 1.0f : static_cast<float>(uf(rng)));
        break;
      case DType::kInt64: fill_int(t.data<int64_t>()); break;
      case DType::kInt32: fill_int(t.data<int32_t>()); break;
      case DType::kInt16: fill_int(t.data<int16_t>()); break;
      case DType::kInt8: fill_int(t.data<int8_t>()); break;
      case DType::kUInt64: fill_int(t.data<uint64_t>()); break;
      case DType::kUInt32: fill_int(t.data<uint32_t>()); break;
      case DType::kUInt16: fill_int(t.data<uint16_t>()); break;
      case DType::kUInt8: fill_int(t.data<uint8_t>()); break;
      case DType::kBool:
        for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = mask ? true : (rng() & 1);
        break;
      case DType::kString:
        for (int64_t i = 0; i < n; ++i) t.data<std::string>()[i] = "s" + std::to_string(rng() % 100);
        break;
      default: fail(ErrorCode::kNotImplemented, "random values for ", dtype_name(in.dtype), " inputs are not supported");
    }
    r.emplace_back(in.name, Value(std::move(t)));
  }
  return r;
}

namespace {

const TypeInfo& input_type(const Session& s, size_t index) {
  const auto& impl = *s.impl();
  const Graph& g = *impl.model->graph;
  return g.values[g.inputs[index]].type;
}

}  // namespace

std::vector<std::pair<std::string, Value>> read_inputs(const Session& s, const std::string& dir) {
  std::vector<std::pair<int, std::string>> files;
  DIR* d = opendir(dir.c_str());
  if (!d) fail(ErrorCode::kIo, "cannot open input directory '", dir, "'");
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    int idx = -1;
    char tail = 0;
    if (std::sscanf(name.c_str(), "input_%d.p%c", &idx, &tail) == 2 && name.size() > 3 && name.substr(name.size() - 3) == ".pb")
      files.emplace_back(idx, dir + "/" + name);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  std::vector<size_t> positional;  // inputs without an initializer
  for (size_t i = 0; i < s.inputs().size(); ++i)
    if (!s.inputs()[i].has_default) positional.push_back(i);
  std::vector<std::pair<std::string, Value>> r;
  for (size_t k = 0; k < files.size(); ++k) {
    const std::string& path = files[k].second;
    // Parse with the type of the input at this position, then re-read if the stored name says otherwise.
    size_t target = k < positional.size() ? positional[k] : (k < s.inputs().size() ? k : s.inputs().size());
    if (target >= s.inputs().size())
      fail(ErrorCode::kInvalidArgument, path, ": the model has only ", s.inputs().size(), " inputs");
    std::string name;
    Value v = read_value_file(path, &input_type(s, target), &name);
    if (!name.empty() && name != s.inputs()[target].name) {
      for (size_t i = 0; i < s.inputs().size(); ++i)
        if (s.inputs()[i].name == name) {
          target = i;
          v = read_value_file(path, &input_type(s, target), &name);
          break;
        }
    }
    // ONNX's own bfloat16 test data stores the bits as uint16 tensors; take them as bfloat16.
    if (v.is_tensor() && v.tensor().dtype() == DType::kUInt16 && s.inputs()[target].dtype == DType::kBFloat16)
      v = Value(Tensor::view(DType::kBFloat16, v.tensor().shape(), v.tensor().raw_data(), v.tensor().storage()));
    r.emplace_back(s.inputs()[target].name, std::move(v));
  }
  return r;
}

void save_outputs(const Session& s, const std::vector<Value>& outputs, const std::string& dir) {
  ::mkdir(dir.c_str(), 0755);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) fail(ErrorCode::kIo, "cannot create directory '", dir, "'");
  for (size_t k = 0; k < outputs.size(); ++k)
    write_value_file(dir + "/output_" + std::to_string(k) + ".pb", outputs[k], s.outputs()[k].name);
}

std::string summarize(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kTensor: return v.tensor().summary();
    case Value::Kind::kSequence: {
      if (v.sequence_of_maps()) {
        std::string s = "sequence of " + std::to_string(v.maps().size()) + " maps";
        for (size_t i = 0; i < std::min<size_t>(3, v.maps().size()); ++i) s += "\n    [" + std::to_string(i) + "] " + summarize(v.maps()[i]);
        return s;
      }
      std::string s = "sequence of " + std::to_string(v.items().size()) + " " + std::string(dtype_name(v.elem_dtype())) + " tensors";
      for (size_t i = 0; i < std::min<size_t>(3, v.items().size()); ++i) s += "\n    [" + std::to_string(i) + "] " + v.items()[i].summary();
      return s;
    }
    case Value::Kind::kOptional: return v.has_element() ? "optional: " + summarize(v.element()) : "optional: empty";
    case Value::Kind::kMap: {
      // {key: value, ...}, the first few entries.
      const Tensor& k = v.map_keys();
      const Tensor& x = v.map_values();
      std::string s = "map(" + std::string(dtype_name(k.dtype())) + ", " + std::string(dtype_name(x.dtype())) + ") of " +
                      std::to_string(k.numel()) + " {";
      for (int64_t i = 0; i < std::min<int64_t>(4, k.numel()); ++i) {
        s += i ? ", " : "";
        s += k.dtype() == DType::kString ? "'" + k.data<std::string>()[i] + "'" : std::to_string(k.data<int64_t>()[i]);
        s += ": ";
        if (x.dtype() == DType::kString) {
          s += "'" + x.data<std::string>()[i] + "'";
        } else {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%g", x.element_as_double(i));
          s += buf;
        }
      }
      return s + (k.numel() > 4 ? ", ...}" : "}");
    }
    default: return "none";
  }
}

}  // namespace onyx::cli
