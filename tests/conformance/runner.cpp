// Conformance runner over ONNX backend test data (model.onnx + test_data_set_N/{input,output}_K.pb).
//
//   onyx_conformance [--expect FILE] [--filter SUBSTR] [--jobs N] [--timeout SEC] [--verbose]
//                    [--list-failures] [--write-expect FILE] [--ep NAME] [--ep-option NAME.KEY=VALUE]...
//                    [--rtol R] [--atol A] DIR...
//
// Float outputs pass where |got - expected| <= atol + rtol |expected| (defaults 1e-3 and 1e-7,
// the ONNX backend's); `--rtol 0 --atol 0` asks for equality (the com.microsoft node tests).
// Other outputs are compared exactly.
// --ep-option sets an option of the EP under test (of the CPU EP without --ep: `--ep-option
// cpu.prefer_nhwc=false` runs the suite with the CPU EP channels-first).
// Each DIR is a test directory or a directory of tests. Every test runs in a child process
// (a crash or hang is reported, not fatal). With --expect, the run fails on an unexpected failure
// and on an unexpected pass, so the expectation file stays true. --expect may be given again:
// the later files' entries are added (lists that hold only on some CPUs, say).
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "model/tensor_proto.hpp"
#include "onyx/onyx.hpp"
#include "session/session_impl.hpp"

namespace {

using namespace onyx;

struct Test {
  std::string name;  // "node/test_abs"
  std::string dir;
};

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

std::vector<std::string> list_dir(const std::string& d) {
  std::vector<std::string> r;
  DIR* dp = opendir(d.c_str());
  if (!dp) return r;
  while (dirent* e = readdir(dp)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") r.push_back(n);
  }
  closedir(dp);
  std::sort(r.begin(), r.end());
  return r;
}

std::string base_name(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

void collect(const std::string& dir, std::vector<Test>& out) {
  if (exists(dir + "/model.onnx")) {
    const std::string parent = base_name(dir.substr(0, dir.find_last_of('/')));
    out.push_back({parent + "/" + base_name(dir), dir});
    return;
  }
  const std::string group = base_name(dir);
  for (const auto& n : list_dir(dir))
    if (is_dir(dir + "/" + n) && exists(dir + "/" + n + "/model.onnx")) out.push_back({group + "/" + n, dir + "/" + n});
}

// ---- comparison ----

std::string compare_tensor(const Tensor& got, const Tensor& exp, double rtol, double atol) {
  if (got.dtype() != exp.dtype())
    return str("dtype ", dtype_name(got.dtype()), ", expected ", dtype_name(exp.dtype()));
  if (!(got.shape() == exp.shape())) return str("shape ", got.shape().to_string(), ", expected ", exp.shape().to_string());
  const int64_t n = exp.numel();
  if (exp.dtype() == DType::kString) {
    for (int64_t i = 0; i < n; ++i) {
      const auto& a = got.data<std::string>()[i];
      const auto& b = exp.data<std::string>()[i];
      if (a != b) return str("element ", i, " is \"", a, "\", expected \"", b, "\"");
    }
    return "";
  }
  const bool fp = dtype_is_float(exp.dtype()) || exp.dtype() == DType::kComplex64 || exp.dtype() == DType::kComplex128;
  if (!fp) {
    if (got.nbytes() != exp.nbytes() || std::memcmp(got.raw_data(), exp.raw_data(), exp.nbytes()) != 0) {
      for (int64_t i = 0; i < n; ++i)
        if (got.element_as_double(i) != exp.element_as_double(i))
          return str("element ", i, " is ", got.element_as_double(i), ", expected ", exp.element_as_double(i));
      return "data differs";
    }
    return "";
  }
  int64_t bad = 0, first = -1;
  double worst = 0;
  auto check = [&](double a, double b, int64_t i) {
    if (std::isnan(a) && std::isnan(b)) return;
    if (std::isinf(b) && a == b) return;
    const double d = std::fabs(a - b);
    if (!(d <= atol + rtol * std::fabs(b))) {
      if (first < 0) first = i;
      ++bad;
      worst = std::max(worst, std::isnan(d) ? INFINITY : d);
    }
  };
  if (exp.dtype() == DType::kComplex64) {
    const float* a = static_cast<const float*>(got.raw_data());
    const float* b = static_cast<const float*>(exp.raw_data());
    for (int64_t i = 0; i < 2 * n; ++i) check(a[i], b[i], i / 2);
  } else if (exp.dtype() == DType::kComplex128) {
    const double* a = static_cast<const double*>(got.raw_data());
    const double* b = static_cast<const double*>(exp.raw_data());
    for (int64_t i = 0; i < 2 * n; ++i) check(a[i], b[i], i / 2);
  } else {
    for (int64_t i = 0; i < n; ++i) check(got.element_as_double(i), exp.element_as_double(i), i);
  }
  if (bad)
    return str(bad, " of ", n, " elements differ (first at ", first, ": ", got.element_as_double(first), " vs ",
               exp.element_as_double(first), "; max abs diff ", worst, ")");
  return "";
}

std::string compare_value(const Value& got, const Value& exp, double rtol, double atol) {
  if (exp.is_tensor()) {
    if (!got.is_tensor()) return "not a tensor";
    return compare_tensor(got.tensor(), exp.tensor(), rtol, atol);
  }
  if (exp.is_map()) {
    if (!got.is_map()) return "not a map";
    std::string m = compare_tensor(got.map_keys(), exp.map_keys(), 0, 0);
    if (!m.empty()) return "map keys: " + m;
    m = compare_tensor(got.map_values(), exp.map_values(), rtol, atol);
    return m.empty() ? m : "map values: " + m;
  }
  if (exp.is_sequence() && exp.sequence_of_maps()) {
    if (!got.is_sequence() || !got.sequence_of_maps()) return "not a sequence of maps";
    if (got.maps().size() != exp.maps().size()) return str("sequence of ", got.maps().size(), " maps, expected ", exp.maps().size());
    for (size_t i = 0; i < exp.maps().size(); ++i) {
      std::string m = compare_value(got.maps()[i], exp.maps()[i], rtol, atol);
      if (!m.empty()) return str("sequence item ", i, ": ", m);
    }
    return "";
  }
  if (exp.is_sequence()) {
    if (!got.is_sequence() || got.sequence_of_maps()) return "not a sequence of tensors";
    if (got.items().size() != exp.items().size())
      return str("sequence of ", got.items().size(), " tensors, expected ", exp.items().size());
    for (size_t i = 0; i < exp.items().size(); ++i) {
      std::string m = compare_tensor(got.items()[i], exp.items()[i], rtol, atol);
      if (!m.empty()) return str("sequence item ", i, ": ", m);
    }
    return "";
  }
  if (exp.is_optional()) {
    if (!got.is_optional()) return "not an optional";
    if (got.has_element() != exp.has_element()) return exp.has_element() ? "optional is empty" : "optional is not empty";
    if (!exp.has_element()) return "";
    return compare_value(got.element(), exp.element(), rtol, atol);
  }
  return "unsupported expected value";
}

// ---- one test, in the child ----

struct Outcome {
  char status = 'E';  // P pass, F fail (wrong values), E error (load/run), C crash, T timeout, B fallback
  std::string message;
  std::string ops;  // op types of the model as written, comma-separated (for reports)
};

// ---- random ops ----
//
// The expected outputs of a test with random ops are one draw of numpy's generator, so their
// values cannot match. Such outputs are checked instead by type and shape, by range (every
// Bernoulli output 0 or 1; every Dropout output 0 or x / (1 - ratio), its mask consistent), and by
// the fraction of ones / of kept elements, which must lie within 4 standard deviations (plus one
// element) of the binomial expectation.

enum class RandomKind { kNone, kBernoulli, kDropout };

struct RandomCheck {
  RandomKind kind = RandomKind::kNone;
  const Node* node = nullptr;  // the Bernoulli / RandomUniformLike / Dropout node
};

RandomCheck random_kind(const Graph& g) {
  RandomCheck r;
  for (const Node& n : g.nodes) {
    if (n.op_type == "Bernoulli" || n.op_type == "RandomUniformLike") r = {RandomKind::kBernoulli, &n};
    if (n.op_type == "Dropout" && n.has_input(2)) r = {RandomKind::kDropout, &n};
    if (n.op_type == "RandomUniform" || n.op_type == "RandomNormal" || n.op_type == "RandomNormalLike" ||
        n.op_type == "Multinomial")
      fail(ErrorCode::kNotImplemented, "the runner has no random check for ", n.op_type);
  }
  return r;
}

const Value* named(const std::vector<std::pair<std::string, Value>>& in, const std::string& name) {
  for (const auto& [n, v] : in)
    if (n == name) return &v;
  return nullptr;
}

std::string binomial_check(const char* what, double count, double expect_mean, double variance, int64_t n) {
  const double bound = 4.0 * std::sqrt(variance) + 1.0;
  if (std::fabs(count - expect_mean) > bound)
    return str(what, " ", count, " of ", n, ", expected ", expect_mean, " +- ", bound);
  return "";
}

/// Checks output k of a random test; returns a failure message, or "" with `note` set.
std::string check_random(const RandomCheck& rc, const Graph& g, size_t k, const std::vector<Value>& outputs,
                         const Value& exp, const std::vector<std::pair<std::string, Value>>& inputs, std::string* note) {
  const Value& got = outputs[k];
  if (!got.is_tensor() || !exp.is_tensor()) return "random output is not a tensor";
  const Tensor& y = got.tensor();
  const Tensor& e = exp.tensor();
  if (y.dtype() != e.dtype()) return str("dtype ", dtype_name(y.dtype()), ", expected ", dtype_name(e.dtype()));
  if (!(y.shape() == e.shape())) return str("shape ", y.shape().to_string(), ", expected ", e.shape().to_string());
  const int64_t n = y.numel();
  if (rc.kind == RandomKind::kBernoulli) {
    const Value* pv = named(inputs, g.values[g.inputs[0]].name);
    if (!pv || !pv->is_tensor() || pv->tensor().numel() != n) return "cannot find the Bernoulli probabilities";
    // The expanded form compares a uniform draw u with p: Greater(u, p) is 1 with probability 1 - p
    // (ONNX's function body for Bernoulli), Less(u, p) with probability p.
    bool complement = false;
    if (rc.node->op_type == "RandomUniformLike")
      for (const Node& c : g.nodes)
        for (size_t j = 0; j < c.inputs.size() && j < 2; ++j)
          if (c.inputs[j] == rc.node->outputs[0] && (c.op_type == "Greater" || c.op_type == "Less"))
            complement = (c.op_type == "Greater") == (j == 0);
    double ones = 0, mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = y.element_as_double(i), p0 = pv->tensor().element_as_double(i), p = complement ? 1 - p0 : p0;
      if (v != 0 && v != 1) return str("element ", i, " is ", v, ", not 0 or 1");
      ones += v;
      mean += p;
      var += p * (1 - p);
    }
    *note = str("ones ", ones, " of ", n, " (expected ", mean, ")");
    return binomial_check("ones", ones, mean, var, n);
  }
  // Dropout: output 0 is the data, output 1 the mask.
  const Node& d = *rc.node;
  const Value* xv = named(inputs, g.values[d.inputs[0]].name);
  const Value* rv = d.has_input(1) ? named(inputs, g.values[d.inputs[1]].name) : nullptr;
  const Value* tv = named(inputs, g.values[d.inputs[2]].name);
  if (!xv || !tv) return "cannot find Dropout's data and training_mode among the inputs";
  const double ratio = rv ? rv->tensor().element_as_double(0) : 0.5;
  const bool training = tv->tensor().element_as_double(0) != 0;
  const Tensor& x = xv->tensor();
  if (!training || ratio == 0) return compare_value(got, exp, 1e-3, 1e-7);  // deterministic
  if (x.numel() != n) return "Dropout output and data differ in size";
  const double scale = 1.0 / (1.0 - ratio);
  double kept = 0;
  if (k == 0) {
    for (int64_t i = 0; i < n; ++i) {
      const double v = y.element_as_double(i), want = x.element_as_double(i) * scale;
      const bool zero = v == 0, scaled = std::fabs(v - want) <= 1e-5 + 1e-5 * std::fabs(want);
      if (!zero && !scaled) return str("element ", i, " is ", v, ", neither 0 nor x / (1 - ratio) = ", want);
      kept += scaled && !(zero && want == 0) ? 1 : 0;
    }
  } else {
    // The mask: true exactly where the data output kept x (checked where x is not 0).
    const Tensor& y0 = outputs[0].tensor();
    for (int64_t i = 0; i < n; ++i) {
      const bool m = y.element_as_double(i) != 0;
      kept += m;
      if (x.element_as_double(i) != 0 && m != (y0.element_as_double(i) != 0))
        return str("mask element ", i, " is ", m, " but the output there is ", y0.element_as_double(i));
    }
  }
  *note = str(k == 0 ? "kept " : "mask true ", kept, " of ", n, " (expected ", n * (1 - ratio), ")");
  return binomial_check("kept", kept, n * (1 - ratio), n * ratio * (1 - ratio), n);
}

Outcome run_test(const Test& t, double rtol, double atol, const std::string& ep,
                 const std::vector<std::pair<std::string, std::string>>& ep_options) {
  Outcome o;
  try {
    SessionBuilder b;
    b.with_intra_threads(1);
    if (ep != "cpu" || !ep_options.empty()) {
      ep::Spec spec = ep::by_name(ep);
      for (const auto& [k, v] : ep_options) spec.set(k, v);
      b.with_execution_providers({spec.build().error_on_failure()});
    }
    Session s = b.commit_from_file(t.dir + "/model.onnx");
    for (const auto& [op, count] : s.op_counts())
      if (op != "Constant") o.ops += (o.ops.empty() ? "" : ",") + op;
    if (ep != "cpu") {
      // Strict placement: every node must run on the EP under test (Constants feeding other nodes
      // and the Copy nodes onyx inserts excepted).
      const auto placed = s.placement().nodes;
      bool others = false;
      for (const auto& n : placed) others |= n.op_type != "Constant" && n.op_type != "Copy";
      bool any_on_ep = false;
      for (const auto& n : placed) any_on_ep |= n.ep == ep && n.op_type != "Copy";
      if (!any_on_ep) {
        o.status = 'B';
        o.message = placed.empty() ? "no node is left to run (the graph folds to constants)" : str("no node runs on ", ep);
        if (!placed.empty())
          for (const auto& d : placed.front().declined)
            if (d.ep == ep) o.message += str(" (", placed.front().op_type, ": ", d.code, ": ", d.message, ")");
        return o;
      }
      for (const auto& n : placed) {
        if (n.ep == ep || n.op_type == "Copy" || (others && n.op_type == "Constant")) continue;
        o.status = 'B';
        std::string why = "no reason given";
        for (const auto& d : n.declined)
          if (d.ep == ep) why = d.code + ": " + d.message;
        o.message = str(n.op_type, " '", n.name, "' runs on ", n.ep, " (", ep, ": ", why, ")");
        return o;
      }
    }
    std::vector<std::string> sets;
    for (const auto& n : list_dir(t.dir))
      if (n.rfind("test_data_set_", 0) == 0 && is_dir(t.dir + "/" + n)) sets.push_back(n);
    if (sets.empty()) {
      o.status = 'E';
      o.message = "no test_data_set_* directory";
      return o;
    }
    const auto& impl = *s.impl();
    const Graph& g = *impl.model->graph;
    const RandomCheck rc = random_kind(g);
    for (const auto& set : sets) {
      const std::string dir = t.dir + "/" + set;
      const auto inputs = cli::read_inputs(s, dir);
      const auto outputs = s.run(inputs);
      for (size_t k = 0; k < outputs.size(); ++k) {
        const std::string path = dir + "/output_" + std::to_string(k) + ".pb";
        if (!exists(path)) continue;
        std::string name;
        const TypeInfo& type = g.values[g.outputs[k]].type;
        Value exp = read_value_file(path, &type, &name);
        // ONNX's bfloat16 test data stores the expected bits as uint16.
        if (exp.is_tensor() && exp.tensor().dtype() == DType::kUInt16 && type.elem_dtype() == DType::kBFloat16)
          exp = Value(Tensor::view(DType::kBFloat16, exp.tensor().shape(), exp.tensor().raw_data(), exp.tensor().storage()));
        std::string note;
        const std::string m = rc.kind != RandomKind::kNone ? check_random(rc, g, k, outputs, exp, inputs, &note)
                                                           : compare_value(outputs[k], exp, rtol, atol);
        if (!note.empty()) o.message += (o.message.empty() ? "random, checked by type, shape, range and fraction: " : "; ") + note;
        if (!m.empty()) {
          o.status = 'F';
          o.message = str(set, " output ", k, " ('", s.outputs()[k].name, "'): ", m);
          return o;
        }
      }
    }
    o.status = 'P';
  } catch (const Error& e) {
    o.status = 'E';
    o.message = str(error_code_name(e.code()), ": ", e.what());
  } catch (const std::exception& e) {
    o.status = 'E';
    o.message = e.what();
  }
  return o;
}

// ---- expectations ----

std::map<std::string, std::string> read_expectations(const std::string& path) {
  std::map<std::string, std::string> r;
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "cannot read expectation file %s\n", path.c_str());
    std::exit(2);
  }
  std::string line;
  while (std::getline(f, line)) {
    const size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    const size_t e = line.find_first_of(" \t", b);
    const std::string name = line.substr(b, e == std::string::npos ? std::string::npos : e - b);
    std::string reason = e == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", e));
    r[name] = reason;
  }
  return r;
}

struct Running {
  pid_t pid;
  int fd;
  size_t index;
  std::chrono::steady_clock::time_point start;
  std::string buf;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> dirs;
  std::string expect_path, filter, write_expect, results_path, ep = "cpu";
  std::vector<std::string> more_expect;  // --expect given again: further lists merged into the first
  std::vector<std::string> ep_option_eps;  // the NAME of each --ep-option
  std::vector<std::pair<std::string, std::string>> ep_options;
  int jobs = 2;
  double timeout = 60, rtol = 1e-3, atol = 1e-7;
  bool verbose = false, list_failures = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--expect") (expect_path.empty() ? expect_path : more_expect.emplace_back()) = next();
    else if (a == "--filter") filter = next();
    else if (a == "--jobs") jobs = std::max(1, std::atoi(next().c_str()));
    else if (a == "--timeout") timeout = std::atof(next().c_str());
    else if (a == "--rtol" || a == "--atol") {
      const std::string v = next();
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(d >= 0)) {
        std::fprintf(stderr, "%s expects a number >= 0, got '%s'\n", a.c_str(), v.c_str());
        return 2;
      }
      (a == "--rtol" ? rtol : atol) = d;
    }
    else if (a == "--write-expect") write_expect = next();
    else if (a == "--results") results_path = next();
    else if (a == "--ep") ep = next();
    else if (a == "--ep-option") {
      const std::string o = next();
      const size_t dot = o.find('.'), eq = o.find('=');
      if (dot == std::string::npos || eq == std::string::npos || eq < dot) {
        std::fprintf(stderr, "--ep-option expects NAME.KEY=VALUE, got '%s'\n", o.c_str());
        return 2;
      }
      ep_option_eps.push_back(o.substr(0, dot));
      ep_options.emplace_back(o.substr(dot + 1, eq - dot - 1), o.substr(eq + 1));
    }
    else if (a == "--verbose") verbose = true;
    else if (a == "--list-failures") list_failures = true;
    else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    } else dirs.push_back(a);
  }
  for (const std::string& name : ep_option_eps)
    if (name != ep) {
      std::fprintf(stderr, "--ep-option %s.*: options are for the EP under test, %s\n", name.c_str(), ep.c_str());
      return 2;
    }
  if (ep != "cpu") {
    const ep::Availability a = ep::by_name(ep).availability();
    if (!a.usable) {
      std::fprintf(stderr, "--ep %s: not usable here: %s\n", ep.c_str(), a.reason.c_str());
      return 2;
    }
  }
  std::vector<Test> tests;
  for (const auto& d : dirs) collect(d, tests);
  if (!filter.empty())
    tests.erase(std::remove_if(tests.begin(), tests.end(), [&](const Test& t) { return t.name.find(filter) == std::string::npos; }),
                tests.end());
  if (tests.empty()) {
    std::fprintf(stderr, "no tests found\n");
    return 2;
  }
  std::map<std::string, std::string> expected;
  if (!expect_path.empty()) expected = read_expectations(expect_path);
  for (const std::string& p : more_expect)
    for (auto& [name, reason] : read_expectations(p)) expected[name] = reason;

  std::vector<Outcome> results(tests.size());
  std::vector<Running> running;
  size_t next_test = 0, done = 0;
  signal(SIGPIPE, SIG_IGN);
  while (done < tests.size()) {
    while (running.size() < static_cast<size_t>(jobs) && next_test < tests.size()) {
      int fds[2];
      if (pipe(fds) != 0) {
        std::perror("pipe");
        return 2;
      }
      const size_t idx = next_test++;
      std::fflush(stdout);
      const pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        set_log_level(LogLevel::kError);
        Outcome o = run_test(tests[idx], rtol, atol, ep, ep_options);
        std::string msg(1, o.status);
        msg += o.ops + "\n" + o.message;
        size_t off = 0;
        while (off < msg.size()) {
          const ssize_t w = write(fds[1], msg.data() + off, msg.size() - off);
          if (w <= 0) break;
          off += static_cast<size_t>(w);
        }
        _exit(0);
      }
      close(fds[1]);
      running.push_back({pid, fds[0], idx, std::chrono::steady_clock::now(), {}});
    }
    std::vector<pollfd> pfds;
    for (auto& r : running) pfds.push_back({r.fd, POLLIN, 0});
    poll(pfds.data(), pfds.size(), 100);
    for (size_t k = 0; k < running.size();) {
      Running& r = running[k];
      char buf[4096];
      bool closed = false;
      if (pfds.size() > k && (pfds[k].revents & (POLLIN | POLLHUP))) {
        const ssize_t n = read(r.fd, buf, sizeof(buf));
        if (n > 0) r.buf.append(buf, static_cast<size_t>(n));
        else closed = true;
      }
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
      if (!closed && elapsed > timeout) {
        kill(r.pid, SIGKILL);
        waitpid(r.pid, nullptr, 0);
        close(r.fd);
        results[r.index] = {'T', str("timed out after ", timeout, " s")};
        ++done;
        running.erase(running.begin() + k);
        pfds.erase(pfds.begin() + std::min(k, pfds.size()));
        continue;
      }
      if (closed) {
        int st = 0;
        waitpid(r.pid, &st, 0);
        close(r.fd);
        if (!r.buf.empty()) {
          const size_t nl = r.buf.find('\n');
          results[r.index] = {r.buf[0], nl == std::string::npos ? "" : r.buf.substr(nl + 1), r.buf.substr(1, nl == std::string::npos ? std::string::npos : nl - 1)};
        }
        else if (WIFSIGNALED(st)) results[r.index] = {'C', str("crashed with signal ", WTERMSIG(st), " (", strsignal(WTERMSIG(st)), ")")};
        else results[r.index] = {'C', str("exited with status ", WEXITSTATUS(st), " without a result")};
        ++done;
        running.erase(running.begin() + k);
        pfds.erase(pfds.begin() + std::min(k, pfds.size()));
        continue;
      }
      ++k;
    }
  }

  size_t passed = 0, failed = 0, fallback = 0, unexpected_fail = 0, unexpected_pass = 0, expected_fail = 0;
  std::map<std::string, std::pair<int, int>> per_group;
  for (size_t i = 0; i < tests.size(); ++i) {
    const Outcome& o = results[i];
    const bool pass = o.status == 'P';
    const std::string group = tests[i].name.substr(0, tests[i].name.find('/'));
    (pass ? per_group[group].first : per_group[group].second)++;
    pass ? ++passed : (o.status == 'B' ? ++fallback : ++failed);
    const bool listed = expected.count(tests[i].name) > 0;
    const char* kind = o.status == 'F'   ? "FAIL"
                       : o.status == 'E' ? "ERROR"
                       : o.status == 'C' ? "CRASH"
                       : o.status == 'T' ? "TIMEOUT"
                       : o.status == 'B' ? "FALLBACK"
                                         : "PASS";
    if (!expect_path.empty()) {
      if (pass && listed) {
        ++unexpected_pass;
        std::printf("UNEXPECTED PASS %s (listed: %s)\n", tests[i].name.c_str(), expected[tests[i].name].c_str());
      } else if (!pass && !listed) {
        ++unexpected_fail;
        std::printf("UNEXPECTED %s %s: %s\n", kind, tests[i].name.c_str(), o.message.c_str());
      } else if (!pass) {
        ++expected_fail;
        if (verbose) std::printf("expected %s %s: %s\n", kind, tests[i].name.c_str(), o.message.c_str());
      } else if (verbose) {
        std::printf("PASS %s%s%s\n", tests[i].name.c_str(), o.message.empty() ? "" : ": ", o.message.c_str());
      }
    } else if (!pass && (verbose || list_failures)) {
      std::printf("%s %s: %s\n", kind, tests[i].name.c_str(), o.message.c_str());
    } else if (verbose) {
      std::printf("PASS %s%s%s\n", tests[i].name.c_str(), o.message.empty() ? "" : ": ", o.message.c_str());
    }
  }
  // Tests with random ops pass on a statistical check, not on values: say which.
  size_t random_passed = 0;
  for (size_t i = 0; i < tests.size(); ++i)
    if (results[i].status == 'P' && results[i].message.rfind("random", 0) == 0) {
      ++random_passed;
      std::printf("RANDOM %s: %s\n", tests[i].name.c_str(), results[i].message.c_str());
    }
  if (!write_expect.empty()) {
    std::ofstream f(write_expect);
    f << "# Conformance tests not expected to pass on the " << ep << " EP, with the reason.\n";
    f << "# Format: <dir>/<test> <reason>. The runner fails on an unexpected failure and on an unexpected pass.\n";
    for (size_t i = 0; i < tests.size(); ++i) {
      if (results[i].status == 'P') continue;
      std::string m = results[i].message;
      std::replace(m.begin(), m.end(), '\n', ' ');
      if (m.size() > 300) m = m.substr(0, 300) + "...";
      f << tests[i].name << " " << m << "\n";
    }
  }
  if (!results_path.empty()) {
    // One line per test: name <TAB> status <TAB> ops <TAB> message.
    std::ofstream f(results_path);
    for (size_t i = 0; i < tests.size(); ++i) {
      std::string m = results[i].message;
      std::replace(m.begin(), m.end(), '\n', ' ');
      std::replace(m.begin(), m.end(), '\t', ' ');
      const char* status = results[i].status == 'P' ? "pass" : results[i].status == 'B' ? "fallback" : "fail";
      f << tests[i].name << "\t" << status << "\t" << results[i].ops << "\t" << m << "\n";
    }
  }
  for (auto& [g, pf] : per_group) std::printf("  %-20s %d passed, %d failed\n", g.c_str(), pf.first, pf.second);
  if (ep != "cpu")
    std::printf("%zu passed, %zu failed, %zu fallback (ep %s)\n", passed, failed, fallback, ep.c_str());
  else
    std::printf("%zu passed, %zu failed\n", passed, failed);
  if (random_passed)
    std::printf("(%zu of the passes have random outputs, checked by type, shape, range and fraction, not by value)\n",
                random_passed);
  if (!expect_path.empty()) {
    std::printf("%zu expected failures, %zu unexpected failures, %zu unexpected passes\n", expected_fail, unexpected_fail,
                unexpected_pass);
    return (unexpected_fail || unexpected_pass) ? 1 : 0;
  }
  return 0;
}
