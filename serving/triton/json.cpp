#include "json.hpp"

#include <cctype>
#include <cstdio>
#include <stdexcept>

namespace onyx::triton {

Json Json::boolean(bool v) {
  Json j;
  j.type_ = Type::kBool;
  j.text_ = v ? "true" : "false";
  return j;
}
Json Json::number(int64_t v) {
  Json j;
  j.type_ = Type::kNumber;
  j.text_ = std::to_string(v);
  return j;
}
Json Json::string(std::string v) {
  Json j;
  j.type_ = Type::kString;
  j.text_ = std::move(v);
  return j;
}
Json Json::array() {
  Json j;
  j.type_ = Type::kArray;
  return j;
}
Json Json::object() {
  Json j;
  j.type_ = Type::kObject;
  return j;
}

int64_t Json::as_int() const {
  if (type_ != Type::kNumber && type_ != Type::kString) throw std::runtime_error("expected a number");
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text_, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text_.size()) throw std::runtime_error("'" + text_ + "' is not an integer");
  return v;
}

const Json* Json::find(std::string_view key) const {
  for (const auto& [k, v] : members_)
    if (k == key) return &v;
  return nullptr;
}
Json* Json::find(std::string_view key) {
  for (auto& [k, v] : members_)
    if (k == key) return &v;
  return nullptr;
}
Json& Json::set(std::string key, Json v) {
  type_ = Type::kObject;
  if (Json* existing = find(key)) {
    *existing = std::move(v);
    return *existing;
  }
  members_.emplace_back(std::move(key), std::move(v));
  return members_.back().second;
}

class JsonParser {
 public:
  explicit JsonParser(std::string_view s) : s_(s) {}

  Json document() {
    Json v = value();
    skip();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(i_));
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  Json value() {
    if (++depth_ > 128) fail("nesting too deep");
    skip();
    if (i_ >= s_.size()) fail("unexpected end");
    Json v;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.type_ = Json::Type::kObject;
      if (!eat('}')) {
        do {
          skip();
          std::string key = string_body();
          expect(':');
          v.members_.emplace_back(std::move(key), value());
        } while (eat(','));
        expect('}');
      }
    } else if (c == '[') {
      ++i_;
      v.type_ = Json::Type::kArray;
      if (!eat(']')) {
        do v.items_.push_back(value());
        while (eat(','));
        expect(']');
      }
    } else if (c == '"') {
      v.type_ = Json::Type::kString;
      v.text_ = string_body();
    } else if (s_.substr(i_, 4) == "true" || s_.substr(i_, 5) == "false") {
      v.type_ = Json::Type::kBool;
      v.text_ = c == 't' ? "true" : "false";
      i_ += c == 't' ? 4 : 5;
    } else if (s_.substr(i_, 4) == "null") {
      i_ += 4;
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      const size_t b = i_++;
      while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' || s_[i_] == 'e' ||
                                s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-'))
        ++i_;
      v.type_ = Json::Type::kNumber;
      v.text_ = std::string(s_.substr(b, i_ - b));
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    --depth_;
    return v;
  }
  static void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  uint32_t hex4() {
    if (i_ + 4 > s_.size()) fail("short \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= h - '0';
      else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
      else fail("bad \\u escape");
    }
    return v;
  }
  std::string string_body() {
    if (i_ >= s_.size() || s_[i_] != '"') fail("expected a string");
    ++i_;
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(i_, 2) == "\\u") {
            i_ += 2;
            const uint32_t lo = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: fail(std::string("bad escape '\\") + e + "'");
      }
    }
    return out;
  }

  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
};

Json Json::parse(std::string_view text) { return JsonParser(text).document(); }

static void dump_string(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

static void dump_to(std::string& out, const Json& j) {
  switch (j.type()) {
    case Json::Type::kNull: out += "null"; break;
    case Json::Type::kBool:
    case Json::Type::kNumber: out += j.text(); break;
    case Json::Type::kString: dump_string(out, j.text()); break;
    case Json::Type::kArray: {
      out += '[';
      bool first = true;
      for (const auto& v : j.items()) {
        if (!first) out += ',';
        first = false;
        dump_to(out, v);
      }
      out += ']';
      break;
    }
    case Json::Type::kObject: {
      out += '{';
      bool first = true;
      for (const auto& [k, v] : j.members()) {
        if (!first) out += ',';
        first = false;
        dump_string(out, k);
        out += ':';
        dump_to(out, v);
      }
      out += '}';
      break;
    }
  }
}

std::string Json::dump() const {
  std::string out;
  dump_to(out, *this);
  return out;
}

}  // namespace onyx::triton
