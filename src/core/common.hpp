// Internal helpers shared by every layer: message building, checks, checked arithmetic.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "onyx/error.hpp"
#include "onyx/shape.hpp"

namespace onyx {

namespace detail {
inline void append(std::ostringstream& os) { (void)os; }
template <class T, class... R>
void append(std::ostringstream& os, const T& v, const R&... rest) {
  os << v;
  append(os, rest...);
}
}  // namespace detail

/// Concatenate anything streamable into a string.
template <class... A>
std::string str(const A&... args) {
  std::ostringstream os;
  detail::append(os, args...);
  return os.str();
}

template <class... A>
[[noreturn]] void fail(ErrorCode code, const A&... args) {
  throw Error(code, str(args...));
}

#define ONYX_CHECK(cond, code, ...)             \
  do {                                          \
    if (!(cond)) ::onyx::fail(code, __VA_ARGS__); \
  } while (0)

/// a*b, or throws kInvalidModel/kInvalidArgument-coded overflow error naming `what`.
inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(ErrorCode::kInvalidArgument, "size overflow computing ", what);
  return r;
}

/// Number of elements of a concrete shape, with overflow and negative-dim checks.
int64_t checked_numel(const Shape& s, std::string_view what);

/// Join items with a separator.
template <class C>
std::string join(const C& items, std::string_view sep) {
  std::ostringstream os;
  bool first = true;
  for (const auto& x : items) {
    if (!first) os << sep;
    os << x;
    first = false;
  }
  return os.str();
}

/// Normalise an axis in [-rank, rank) to [0, rank), or throw naming `what`.
int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view what);

}  // namespace onyx
