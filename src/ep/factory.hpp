// Process-wide EP factories and the table of every EP onyx knows (DESIGN.md §3).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ep/provider.hpp"
#include "onyx/ep.hpp"

namespace onyx {

using OptionList = std::vector<std::pair<std::string, std::string>>;

/// The value of option `key` in `o`, or `dflt` when it is not there.
inline std::string option(const OptionList& o, const char* key, const char* dflt) {
  for (const auto& [k, v] : o)
    if (k == key) return v;
  return dflt;
}

/// Settings a factory gets when it creates an EP for a session.
struct EpCreateContext {
  OptionList options;  // effective: defaults overlaid with the user's values, validated
  int session_threads = 1;
  ThreadPool* pool = nullptr;  // the session's intra-op pool, for EPs that can share it
};

/// One EP implementation, process-wide (built in, or from a loaded module).
class EpFactory {
 public:
  virtual ~EpFactory() = default;
  virtual std::string name() const = 0;
  virtual std::string version() const = 0;
  virtual std::vector<ep::OptionInfo> options() const { return {}; }
  /// Whether a device / context really opens here (the "usable" level), with the reason if not.
  virtual bool probe(std::string* reason) const {
    (void)reason;
    return true;
  }
  /// A per-session instance. Throws onyx::Error on failure.
  virtual std::unique_ptr<ExecutionProvider> create(const EpCreateContext& ctx) const = 0;
};

/// A row of the EP table.
struct KnownEp {
  const char* name;          // "cuda"
  const char* cmake_option;  // "ONYX_EP_CUDA"
  bool module;               // built as a shared module libonyx_ep_<name>.so (else inside libonyx)
};
const std::vector<KnownEp>& known_eps();
const KnownEp* find_known_ep(const std::string& name);

/// The factory for `name`, loading its module on first use; null when unavailable, with `why`
/// describing each level. `module_path` (option "module_path") overrides the search.
const EpFactory* resolve_factory(const std::string& name, const std::string& module_path, ep::Availability* why);

/// Availability of `name` (built / loadable / usable), probing a device when loadable.
ep::Availability ep_availability(const std::string& name, const std::string& module_path = "");

/// Validates `given` against `schema` (unknown keys and bad values are errors naming the key) and
/// returns the effective options: every schema key with the user's value or the default.
/// The key "module_path" is accepted for every module EP.
OptionList effective_options(const std::string& ep, const std::vector<ep::OptionInfo>& schema, const OptionList& given);

/// Environment defaults (onyx::init()), captured by sessions at creation.
std::vector<ep::ExecutionProviderDispatch> environment_eps();

}  // namespace onyx
