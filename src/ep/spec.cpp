// The user-facing EP specs (include/onyx/ep.hpp).
#include "core/common.hpp"
#include "ep/factory.hpp"
#include "ep/module.hpp"
#include "onyx/session.hpp"

namespace onyx::ep {

namespace {
std::string module_path_of(const OptionList& options) {
  for (const auto& [k, v] : options)
    if (k == "module_path") return v;
  return "";
}
}  // namespace

Spec& Spec::set(std::string key, std::string value) {
  for (auto& [k, v] : options_)
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  options_.emplace_back(std::move(key), std::move(value));
  return *this;
}

Availability Spec::availability() const { return ep_availability(name_, module_path_of(options_)); }

std::vector<OptionInfo> Spec::option_schema() const {
  const EpFactory* f = resolve_factory(name_, module_path_of(options_), nullptr);
  return f ? f->options() : std::vector<OptionInfo>{};
}

void Spec::register_with(SessionBuilder& builder) const {
  Availability a = availability();
  if (!a.usable)
    fail(a.built ? ErrorCode::kEpFailure : ErrorCode::kNotAvailable, "cannot register execution provider '", name_,
         "': ", a.reason);
  const EpFactory* f = resolve_factory(name_, module_path_of(options_), nullptr);
  effective_options(name_, f->options(), options_);  // throws naming a bad key or value
  builder.add_execution_provider(ExecutionProviderDispatch(name_, options_).error_on_failure());
}

Spec by_name(const std::string& name) {
  // A third-party plugin (include/onyx/ep_c_api.h) counts when it is on the module search path.
  if (!find_known_ep(name) && !resolve_factory(name, "", nullptr)) {
    std::vector<std::string> names;
    for (const auto& k : known_eps()) names.push_back(k.name);
    fail(ErrorCode::kInvalidArgument, "unknown execution provider '", name, "' (known: ", join(names, ", "),
         "; no plugin ", ep_module_file(name), " is on $ONYX_EP_PATH, beside libonyx or the executable: a plugin elsewhere"
         " is given with the option module_path)");
  }
  return Spec(name);
}

std::vector<ProviderInfo> list_providers() {
  std::vector<ProviderInfo> r;
  for (const auto& k : known_eps()) {
    ProviderInfo p;
    p.name = k.name;
    p.cmake_option = k.cmake_option;
    p.availability = ep_availability(k.name);
    if (const EpFactory* f = resolve_factory(k.name, "", nullptr)) p.options = f->options();
    r.push_back(std::move(p));
  }
  // Third-party plugins found on the module search path.
  for (const std::string& name : third_party_module_names()) {
    ProviderInfo p;
    p.name = name;
    p.availability = ep_availability(name);
    if (const EpFactory* f = resolve_factory(name, "", nullptr)) p.options = f->options();
    r.push_back(std::move(p));
  }
  return r;
}

}  // namespace onyx::ep
