// onyx: logging levels and a user-installable sink.
#pragma once

#include <functional>
#include <string_view>

namespace onyx {

/// Severity of a log message.
enum class LogLevel { kVerbose = 0, kInfo = 1, kWarning = 2, kError = 3, kOff = 4 };

/// Messages below `level` are dropped. Default: kWarning (or ONYX_LOG_LEVEL=verbose|info|warning|error|off).
void set_log_level(LogLevel level);
LogLevel log_level();
/// Replace the sink (default: "onyx[warning] message" lines on stderr). An empty function restores
/// the default. The sink may be called from any thread; onyx serialises the calls.
void set_log_sink(std::function<void(LogLevel, std::string_view)> sink);

}  // namespace onyx
