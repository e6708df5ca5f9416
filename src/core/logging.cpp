#include "core/logging.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace onyx {
namespace {

LogLevel initial_level() {
  const char* env = std::getenv("ONYX_LOG_LEVEL");
  if (!env) return LogLevel::kWarning;
  if (!std::strcmp(env, "verbose")) return LogLevel::kVerbose;
  if (!std::strcmp(env, "info")) return LogLevel::kInfo;
  if (!std::strcmp(env, "error")) return LogLevel::kError;
  if (!std::strcmp(env, "off")) return LogLevel::kOff;
  return LogLevel::kWarning;
}

struct LogState {
  std::mutex mu;
  LogLevel level = initial_level();
  std::function<void(LogLevel, std::string_view)> sink;
};

LogState& state() {
  static LogState s;
  return s;
}

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kVerbose: return "verbose";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
    default: return "off";
  }
}

}  // namespace

void set_log_level(LogLevel level) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().level = level;
}

LogLevel log_level() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().level;
}

void set_log_sink(std::function<void(LogLevel, std::string_view)> sink) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().sink = std::move(sink);
}

void log_message(LogLevel level, std::string_view message) {
  LogState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (level < s.level || level == LogLevel::kOff) return;
  if (s.sink) {
    s.sink(level, message);
  } else {
    std::fprintf(stderr, "onyx[%s] %.*s\n", level_name(level), static_cast<int>(message.size()), message.data());
  }
}

bool log_enabled(LogLevel level) {
  std::lock_guard<std::mutex> lock(state().mu);
  return level >= state().level && level != LogLevel::kOff;
}

}  // namespace onyx
