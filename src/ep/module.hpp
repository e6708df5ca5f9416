// Loading EP modules (libonyx_ep_<name>.so) on registration.
#pragma once

#include <string>
#include <vector>

#include "onyx/ep.hpp"

namespace onyx {

class EpFactory;

/// Finds and loads the module of EP `name` and returns its factory (cached; modules are never
/// unloaded). Search order: `module_path` (a file or a directory; when given, the only place
/// looked at), $ONYX_EP_PATH (colon-separated directories), the directory of libonyx, the
/// directory of the executable, then the system loader. On failure returns null and fills
/// `why` with every path tried and what went wrong there (missing file, missing dependency, ABI
/// or version mismatch).
const EpFactory* load_ep_module(const std::string& name, const std::string& module_path, ep::Availability* why);

/// For modules other than EPs (the image codecs): loads the first `file` on the EP module search
/// path (as load_ep_module looks without a module_path) that loads and exports `symbol`, and
/// returns that symbol (cached, success or not; modules are never unloaded). On failure returns
/// null and sets `why` to every path tried and what went wrong there.
void* load_module_symbol(const std::string& file, const char* symbol, std::string* why);

/// Names of the EPs whose modules lie in the directories searched without a module_path
/// ($ONYX_EP_PATH, beside libonyx, beside the executable) and are not in onyx's own table: the
/// third-party plugins `onyx providers` lists. Sorted.
std::vector<std::string> third_party_module_names();

/// File name of an EP's module: "libonyx_ep_<name>.so".
std::string ep_module_file(const std::string& name);

}  // namespace onyx
