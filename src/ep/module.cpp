#include "ep/module.hpp"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <filesystem>
#include <mutex>
#include <utility>
#include <vector>

#include "core/common.hpp"
#include "ep/factory.hpp"
#include "ep/module_abi.h"
#include "ep/plugin.hpp"
#include "onyx/version.hpp"

namespace onyx {

std::string ep_module_file(const std::string& name) { return "libonyx_ep_" + name + ".so"; }

namespace {

bool is_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// The directory of a file, normalised ("prefix/bin/../lib" becomes "prefix/lib") so that the
/// paths in a "could not be loaded" report read as the user would write them.
std::string dir_of(const std::string& p) {
  std::string d = std::filesystem::path(p).parent_path().lexically_normal().string();
  if (d.empty()) return ".";
  if (d.size() > 1 && d.back() == '/') d.pop_back();
  return d;
}

std::string libonyx_dir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&ep_module_file), &info) && info.dli_fname) return dir_of(info.dli_fname);
  return "";
}

std::string exe_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return dir_of(buf);
}

struct Loaded {
  const EpFactory* factory = nullptr;
  ep::Availability availability;
};

/// dlopen of a path (or, with `system`, a bare name for the system loader), or null with why in
/// `error`: "no such file", or dlerror's message less the path it starts with, so that what is
/// left names the missing dependency.
void* open_module(const std::string& path, bool system, std::string* error) {
  if (!system && !is_file(path)) {
    *error = "no such file";
    return nullptr;
  }
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  const char* e = ::dlerror();
  std::string msg = e ? e : "dlopen failed";
  if (msg.rfind(path + ": ", 0) == 0) msg = msg.substr(path.size() + 2);
  *error = msg;
  return nullptr;
}

/// Tries one candidate (a path, or a bare file name for the system loader).
const EpFactory* try_load(const std::string& name, const std::string& candidate, bool system, std::string* error,
                          std::string* version) {
  void* h = open_module(candidate, system, error);
  if (!h) return nullptr;
  using Entry = const OnyxEpModuleInfo* (*)();
  auto entry = reinterpret_cast<Entry>(::dlsym(h, "onyx_ep_module"));
  if (!entry) {
    // A plugin built against the C ABI (include/onyx/ep_c_api.h)?
    auto init = reinterpret_cast<OnyxEpPluginInitFn>(::dlsym(h, ONYX_EP_PLUGIN_ENTRY));
    if (!init) {
      *error = str("not an onyx EP plugin (no symbol ", ONYX_EP_PLUGIN_ENTRY, " or onyx_ep_module)");
      ::dlclose(h);
      return nullptr;
    }
    // (Once its entry point ran, the library may hold threads or state: it stays loaded.)
    return load_ep_plugin(name, system ? candidate + " (system loader)" : candidate, init, error, version);
  }
  const OnyxEpModuleInfo* info = entry();
  if (!info || info->abi_version != ONYX_EP_ABI_VERSION || info->struct_size < sizeof(OnyxEpModuleInfo)) {
    *error = str("EP module ABI version ", info ? info->abi_version : 0, " does not match onyx's ", ONYX_EP_ABI_VERSION);
    ::dlclose(h);
    return nullptr;
  }
  if (!info->name || name != info->name) {
    *error = str("the module implements EP '", info->name ? info->name : "?", "', not '", name, "'");
    ::dlclose(h);
    return nullptr;
  }
  if (!info->onyx_version || std::strcmp(info->onyx_version, onyx::version()) != 0) {
    *error = str("the module was built for onyx ", info->onyx_version ? info->onyx_version : "?", ", this is onyx ",
                 onyx::version());
    ::dlclose(h);
    return nullptr;
  }
  if (!info->build_id || std::strcmp(info->build_id, ONYX_EP_BUILD_ID) != 0) {
    *error = str("the module was built with another toolchain (", info->build_id ? info->build_id : "?", ", onyx: ",
                 ONYX_EP_BUILD_ID, ")");
    ::dlclose(h);
    return nullptr;
  }
  char err[512] = {};
  void* f = info->create_factory ? info->create_factory(err, sizeof(err)) : nullptr;
  if (!f) {
    *error = err[0] ? err : "the module could not create its factory";
    ::dlclose(h);
    return nullptr;
  }
  const auto* factory = static_cast<const EpFactory*>(f);
  *version = factory->version();
  return factory;  // the handle stays open for the life of the process
}

/// Where a module file is looked for, in order (path, whether it is a bare name for the system
/// loader): `module_path` alone when given (a file or a directory), else each directory of
/// $ONYX_EP_PATH, the directory of libonyx, the directory of the executable, the system loader.
std::vector<std::pair<std::string, bool>> module_candidates(const std::string& file, const std::string& module_path) {
  std::vector<std::pair<std::string, bool>> candidates;  // path, via the system loader
  if (!module_path.empty()) {
    candidates.emplace_back(is_dir(module_path) ? module_path + "/" + file : module_path, false);
    return candidates;
  }
  if (const char* env = std::getenv("ONYX_EP_PATH")) {
    std::string s = env;
    size_t b = 0;
    while (b <= s.size()) {
      const size_t e = s.find(':', b);
      const std::string d = s.substr(b, e == std::string::npos ? std::string::npos : e - b);
      if (!d.empty()) candidates.emplace_back(d + "/" + file, false);
      if (e == std::string::npos) break;
      b = e + 1;
    }
  }
  const std::string ld = libonyx_dir(), xd = exe_dir();
  if (!ld.empty()) candidates.emplace_back(ld + "/" + file, false);
  if (!xd.empty() && xd != ld) candidates.emplace_back(xd + "/" + file, false);
  candidates.emplace_back(file, true);
  return candidates;
}

}  // namespace

void* load_module_symbol(const std::string& file, const char* symbol, std::string* why) {
  static std::mutex mu;
  static std::map<std::string, std::pair<void*, std::string>> cache;  // file -> symbol, or why not
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(file); it != cache.end()) {
    if (!it->second.first && why) *why = it->second.second;
    return it->second.first;
  }
  std::vector<std::string> tried;
  void* found = nullptr;
  for (const auto& [path, system] : module_candidates(file, "")) {
    const std::string where = system ? file + " via the system loader" : path;
    std::string error;
    void* h = open_module(path, system, &error);
    if (!h) {
      tried.push_back(where + ": " + error);
      continue;
    }
    found = ::dlsym(h, symbol);
    if (found) break;  // the handle stays open for the life of the process
    tried.push_back(str(where, ": no symbol ", symbol));
    ::dlclose(h);
  }
  std::string reason = found ? "" : str(file, " could not be loaded (tried ", join(tried, "; "), ")");
  if (!found && why) *why = reason;
  cache[file] = {found, reason};
  return found;
}

std::vector<std::string> third_party_module_names() {
  std::vector<std::string> names;
  const std::string prefix = "libonyx_ep_", suffix = ".so";
  for (const auto& [path, system] : module_candidates("x", "")) {
    if (system) continue;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir_of(path), ec)) {
      const std::string f = entry.path().filename().string();
      if (f.size() <= prefix.size() + suffix.size() || f.rfind(prefix, 0) != 0 ||
          f.compare(f.size() - suffix.size(), suffix.size(), suffix) != 0)
        continue;
      const std::string name = f.substr(prefix.size(), f.size() - prefix.size() - suffix.size());
      if (!find_known_ep(name) && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

const EpFactory* load_ep_module(const std::string& name, const std::string& module_path, ep::Availability* why) {
  static std::mutex mu;
  static std::map<std::string, Loaded> cache;
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = name + "\n" + module_path;
  if (auto it = cache.find(key); it != cache.end()) {
    if (why) *why = it->second.availability;
    return it->second.factory;
  }
  const std::string file = ep_module_file(name);
  const std::vector<std::pair<std::string, bool>> candidates = module_candidates(file, module_path);
  Loaded result;
  result.availability.built = true;
  std::vector<std::string> tried;
  for (const auto& [path, system] : candidates) {
    std::string error, version;
    const EpFactory* f = try_load(name, path, system, &error, &version);
    if (f) {
      result.factory = f;
      result.availability.loadable = true;
      result.availability.version = version;
      result.availability.module = system ? file + " (system loader)" : path;
      break;
    }
    tried.push_back((system ? file + " via the system loader" : path) + ": " + error);
  }
  if (!result.factory) result.availability.reason = str(file, " could not be loaded (tried ", join(tried, "; "), ")");
  cache[key] = result;
  if (why) *why = result.availability;
  return result.factory;
}

}  // namespace onyx
