// A small JSON document model for Triton's model configuration (the server hands the backend its
// config.pbtxt as protobuf JSON, and takes an auto-completed one back in the same form).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onyx::triton {

class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Json() = default;
  static Json boolean(bool v);
  static Json number(int64_t v);
  static Json string(std::string v);
  static Json array();
  static Json object();

  /// Parses a whole document; throws std::runtime_error naming the offset of a syntax error.
  static Json parse(std::string_view text);
  /// Compact serialisation.
  std::string dump() const;

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }
  bool is_string() const { return type_ == Type::kString; }

  /// A string's text, a number's literal text, "true"/"false"; "" otherwise.
  const std::string& text() const { return text_; }
  /// A number, or a string holding one (protobuf JSON writes int64 as strings); throws otherwise.
  int64_t as_int() const;
  bool as_bool() const { return type_ == Type::kBool ? text_ == "true" : false; }

  // Arrays.
  const std::vector<Json>& items() const { return items_; }
  std::vector<Json>& items() { return items_; }
  void push_back(Json v) { items_.push_back(std::move(v)); }

  // Objects (members kept in order).
  const std::vector<std::pair<std::string, Json>>& members() const { return members_; }
  /// The member `key`, or nullptr.
  const Json* find(std::string_view key) const;
  Json* find(std::string_view key);
  /// Sets (replacing or appending) member `key`.
  Json& set(std::string key, Json v);

 private:
  Type type_ = Type::kNull;
  std::string text_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
  friend class JsonParser;
};

}  // namespace onyx::triton
