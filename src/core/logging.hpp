// Internal logging entry points.
#pragma once

#include <string_view>

#include "onyx/logging.hpp"

namespace onyx {

void log_message(LogLevel level, std::string_view message);
bool log_enabled(LogLevel level);

}  // namespace onyx
