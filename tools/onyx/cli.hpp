// Shared pieces of the onyx CLI: argument parsing, JSON output, inputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "onyx/onyx.hpp"

namespace onyx::cli {

/// Parsed command line: positional arguments and --options (repeatable).
struct Args {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> options;  // "--dim" -> "batch=2"
  bool has(const std::string& k) const { return options.count(k) > 0; }
  std::string get(const std::string& k, const std::string& dflt = "") const {
    auto it = options.find(k);
    return it == options.end() ? dflt : it->second;
  }
  std::vector<std::string> all(const std::string& k) const;
  int64_t get_int(const std::string& k, int64_t dflt) const;
};

/// Parses argv[first..]; `flags` are options without a value, `valued` take one.
Args parse_args(int argc, char** argv, int first, const std::vector<std::string>& flags,
                const std::vector<std::string>& valued);

/// Minimal JSON writer.
class Json {
 public:
  Json& begin_object();
  Json& end_object();
  Json& begin_array();
  Json& end_array();
  Json& key(const std::string& k);
  Json& value(const std::string& v);
  Json& value(const char* v) { return value(std::string(v)); }
  Json& value(double v);
  Json& value(int64_t v);
  Json& value(int v) { return value(static_cast<int64_t>(v)); }
  Json& value(size_t v) { return value(static_cast<int64_t>(v)); }
  Json& value(bool v);
  Json& null();
  const std::string& str() const { return out_; }

 private:
  void sep();
  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};
std::string json_escape(const std::string& s);

/// One --dim: NAME=N sets the symbolic dim NAME of every input that has it; INPUT:AXIS=N sets dim
/// AXIS of input INPUT (named or not).
struct DimSetting {
  std::string text;   // as given
  std::string name;   // NAME=N
  std::string input;  // INPUT:AXIS=N
  size_t axis = 0;
  int64_t value = 0;
  bool by_input() const { return !input.empty(); }
};

/// What the loader reads from a model file, without a session: nothing is optimised, placed on an
/// EP or prepared, and no kernel or EP needs to support the model's ops.
struct ModelInfo {
  int64_t ir_version = 0;
  std::string producer;
  std::vector<std::pair<std::string, int64_t>> opsets;     // "ai.onnx" -> 17
  std::vector<IoInfo> inputs;                              // as declared
  std::vector<IoInfo> outputs;                             // as declared, else inferred where possible
  std::vector<std::pair<std::string, int64_t>> op_counts;  // of the main graph as the file has it
};
/// Reads `path` with the loader alone. With `infer_outputs`, outputs the file declares no type for
/// get one from shape inference (best effort: left unknown past an op onyx does not know).
ModelInfo read_model_info(const std::string& path, bool infer_outputs);

/// Session options common to run/bench/explain: --threads, --dim, --ep, --require-ep, --strict,
/// --ep-option. The --dim names are checked against the inputs of the model at `path`.
SessionBuilder builder_from(const Args& a, const std::string& path);
/// EPs from --ep NAME[,NAME...] (error_on_failure with --require-ep; options from --ep-option; the
/// CPU EP's options apply to the CPU EP even when --ep does not list it).
std::vector<ep::ExecutionProviderDispatch> eps_from(const Args& a);
/// The --dim settings, checked against `inputs` (an unknown dim name or input name is an error
/// listing the known ones).
std::vector<DimSetting> dims_from(const Args& a, const std::vector<IoInfo>& inputs);

/// Random inputs for every input without an initializer. A dim the session leaves symbolic is 1,
/// with a note on stderr naming it and the --dim that sets it.
std::vector<std::pair<std::string, Value>> random_inputs(const Session& s, int64_t int_max, uint64_t seed);
/// Reads input_N.pb files of a backend-test data set directory.
std::vector<std::pair<std::string, Value>> read_inputs(const Session& s, const std::string& dir);
/// Writes output_N.pb for every output.
void save_outputs(const Session& s, const std::vector<Value>& outputs, const std::string& dir);
/// One-line summary of a value.
std::string summarize(const Value& v);

int cmd_info(const Args& a);
int cmd_run(const Args& a);
int cmd_bench(const Args& a);
int cmd_providers(const Args& a);
int cmd_ops(const Args& a);
int cmd_explain(const Args& a);
int cmd_generate(const Args& a);

}  // namespace onyx::cli
