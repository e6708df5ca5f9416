#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <dirent.h>
#include <random>

#include "cli.hpp"
#include "core/common.hpp"
#include "model/tensor_proto.hpp"
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

std::map<std::string, int64_t> dims_from(const Args& a) {
  std::map<std::string, int64_t> dims;
  for (const auto& d : a.all("--dim")) {
    const size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0) fail(ErrorCode::kInvalidArgument, "--dim expects NAME=N, got '", d, "'");
    char* end = nullptr;
    const long long v = std::strtoll(d.c_str() + eq + 1, &end, 10);
    if (*end || v < 0) fail(ErrorCode::kInvalidArgument, "--dim ", d, ": N must be a non-negative integer");
    dims[d.substr(0, eq)] = v;
  }
  return dims;
}

std::vector<ep::ExecutionProviderDispatch> eps_from(const Args& a) {
  std::vector<ep::ExecutionProviderDispatch> eps;
  const bool require = a.has("--require-ep");
  // --ep-option NAME.KEY=VALUE sets an option of EP NAME.
  std::vector<std::tuple<std::string, std::string, std::string>> opts;
  for (const auto& o : a.all("--ep-option")) {
    const size_t dot = o.find('.'), eq = o.find('=');
    if (dot == std::string::npos || eq == std::string::npos || eq < dot)
      fail(ErrorCode::kInvalidArgument, "--ep-option expects NAME.KEY=VALUE, got '", o, "'");
    opts.emplace_back(o.substr(0, dot), o.substr(dot + 1, eq - dot - 1), o.substr(eq + 1));
  }
  for (const auto& list : a.all("--ep")) {
    size_t b = 0;
    while (b <= list.size()) {
      const size_t e = list.find(',', b);
      std::string name = list.substr(b, e == std::string::npos ? std::string::npos : e - b);
      if (!name.empty()) {
        ep::Spec spec = ep::by_name(name);
        for (const auto& [n, k, v] : opts)
          if (n == name) spec.set(k, v);
        eps.push_back(spec.build().error_on_failure(require));
      }
      if (e == std::string::npos) break;
      b = e + 1;
    }
  }
  if (require && eps.empty()) fail(ErrorCode::kInvalidArgument, "--require-ep needs --ep NAME[,NAME...]");
  return eps;
}

SessionBuilder builder_from(const Args& a) {
  SessionBuilder b;
  b.with_intra_threads(static_cast<int>(a.get_int("--threads", 0)));
  for (auto& [k, v] : dims_from(a)) b.with_dimension_override(k, v);
  b.with_execution_providers(eps_from(a));
  if (a.has("--strict")) b.with_cpu_fallback(false);
  return b;
}

std::vector<std::pair<std::string, Value>> random_inputs(const Session& s, const std::map<std::string, int64_t>& dims,
                                                         int64_t int_max, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::pair<std::string, Value>> r;
  for (const IoInfo& in : s.inputs()) {
    if (in.has_default) continue;
    if (in.kind != Value::Kind::kTensor)
      fail(ErrorCode::kInvalidArgument, "input '", in.name, "' is a ", in.type_string,
           "; random values are only made for tensors (use --inputs)");
    Shape shape;
    for (size_t k = 0; k < in.shape.size(); ++k) {
      int64_t d = in.shape[k];
      if (d < 0) {
        auto it = dims.find(in.dim_names[k]);
        d = it != dims.end() ? it->second : 1;
      }
      shape.push_back(d);
    }
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
