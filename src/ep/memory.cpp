#include "ep/memory.hpp"

#include <mutex>
#include <vector>

namespace onyx {

namespace {
std::mutex& mu() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& names() {
  static std::vector<std::string> n = {"cpu"};
  return n;
}
}  // namespace

int register_device_memory(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu());
  auto& n = names();
  for (size_t i = 0; i < n.size(); ++i)
    if (n[i] == name) return static_cast<int>(i);
  n.push_back(name);
  return static_cast<int>(n.size() - 1);
}

std::string device_memory_name(int memory) {
  std::lock_guard<std::mutex> lock(mu());
  const auto& n = names();
  return memory >= 0 && static_cast<size_t>(memory) < n.size() ? n[memory] : "memory#" + std::to_string(memory);
}

}  // namespace onyx
