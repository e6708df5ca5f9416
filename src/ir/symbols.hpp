// Symbolic dimensions: a negative dim in a Shape is a symbol id; the table gives its name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace onyx {

class SymbolTable {
 public:
  /// The id of a named dimension ("batch"); the same name always gives the same id.
  int64_t intern(std::string_view name) {
    auto it = ids_.find(std::string(name));
    if (it != ids_.end()) return it->second;
    const int64_t id = make(std::string(name));
    ids_.emplace(std::string(name), id);
    return id;
  }
  /// A new, unnamed dimension (unknown size).
  int64_t fresh() { return make(std::string()); }
  /// Name of a symbolic dim ("" if unnamed); "" for a concrete dim.
  std::string name(int64_t dim) const {
    if (dim >= 0) return std::string();
    const size_t i = static_cast<size_t>(-dim - 1);
    return i < names_.size() ? names_[i] : std::string();
  }
  /// "batch", or "?" for unnamed symbols, or the number.
  std::string describe(int64_t dim) const {
    if (dim >= 0) return std::to_string(dim);
    std::string n = name(dim);
    return n.empty() ? "?" : n;
  }
  size_t size() const { return names_.size(); }

 private:
  int64_t make(std::string n) {
    names_.push_back(std::move(n));
    return -static_cast<int64_t>(names_.size());
  }
  std::vector<std::string> names_;
  std::unordered_map<std::string, int64_t> ids_;
};

}  // namespace onyx
