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

/// Session options common to run/bench/explain: --threads, --dim, --ep, --require-ep, --strict,
/// --ep-option.
SessionBuilder builder_from(const Args& a);
/// EPs from --ep NAME[,NAME...] (error_on_failure with --require-ep; options from --ep-option).
std::vector<ep::ExecutionProviderDispatch> eps_from(const Args& a);
/// Dims given with --dim NAME=N.
std::map<std::string, int64_t> dims_from(const Args& a);

/// Random inputs for every input without an initializer (symbolic dims from `dims`, else 1).
std::vector<std::pair<std::string, Value>> random_inputs(const Session& s, const std::map<std::string, int64_t>& dims,
                                                         int64_t int_max, uint64_t seed);
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

}  // namespace onyx::cli
