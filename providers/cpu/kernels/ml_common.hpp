// Helpers shared by the ai.onnx.ml kernels (ml.cpp, ml_trees.cpp, ml_svm.cpp): the score
// post-transforms, feature rows read as doubles, float attributes as doubles.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/common.hpp"

namespace onyx::cpu::ml {

enum class Post : int { kNone, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

/// The post_transform named `s` (NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT); false if unknown.
inline bool post_named(const std::string& s, Post* p) {
  static const char* const kNames[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
  for (int i = 0; i < 5; ++i)
    if (s == kNames[i]) {
      *p = static_cast<Post>(i);
      return true;
    }
  return false;
}

/// The standard normal quantile of p, sqrt(2) erfinv(2p - 1): Winitzki's closed-form estimate of
/// erfinv refined by Newton's method on erf. NaN outside [0, 1].
inline double probit(double p) {
  if (!(p >= 0 && p <= 1)) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0) return -std::numeric_limits<double>::infinity();
  if (p == 1) return std::numeric_limits<double>::infinity();
  const double y = 2 * p - 1, a = 0.147, pi = 3.14159265358979323846;
  const double l = std::log((1 - y) * (1 + y)), u = 2 / (pi * a) + l / 2;
  double x = std::copysign(std::sqrt(std::sqrt(u * u - l / a) - u), y);
  for (int i = 0; i < 8; ++i) {
    const double slope = 2 / std::sqrt(pi) * std::exp(-x * x);
    if (slope == 0) break;
    x -= (std::erf(x) - y) / slope;
  }
  return std::sqrt(2.0) * x;
}

inline double logistic(double v) { return 1 / (1 + std::exp(-v)); }

/// Applies a post-transform to one row of scores: softmax over the row (softmax_zero: zeros stay
/// zero and take no share), the logistic function or the probit of each score.
inline void post_transform(Post p, double* a, size_t n) {
  switch (p) {
    case Post::kSoftmax:
    case Post::kSoftmaxZero: {
      const bool skip_zero = p == Post::kSoftmaxZero;
      double mx = -std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < n; ++i)
        if (!(skip_zero && a[i] == 0)) mx = std::max(mx, a[i]);
      double sum = 0;
      for (size_t i = 0; i < n; ++i) {
        if (skip_zero && a[i] == 0) continue;
        a[i] = std::exp(a[i] - mx);
        sum += a[i];
      }
      for (size_t i = 0; i < n; ++i)
        if (!(skip_zero && a[i] == 0)) a[i] /= sum;
      break;
    }
    case Post::kLogistic:
      for (size_t i = 0; i < n; ++i) a[i] = logistic(a[i]);
      break;
    case Post::kProbit:
      for (size_t i = 0; i < n; ++i) a[i] = probit(a[i]);
      break;
    default: break;
  }
}

/// The input as rows of doubles: N rows of C.
struct Rows {
  int64_t n = 0, c = 0;
  std::vector<double> v;
};

/// X's rows and columns: [N, C], or one row [C]; X of another rank is refused.
inline std::pair<int64_t, int64_t> row_shape(const Tensor& x) {
  if (x.rank() != 1 && x.rank() != 2)
    fail(ErrorCode::kInvalidArgument, "X must be [N, C] (or one row [C]), got ", x.shape().to_string());
  return {x.rank() == 2 ? x.dim(0) : 1, x.dim(x.rank() - 1)};
}

/// X ([N, C], or one row [C]) as rows of doubles.
inline Rows rows_of(const Tensor& x) {
  Rows r;
  std::tie(r.n, r.c) = row_shape(x);
  r.v.resize(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) r.v[i] = x.element_as_double(i);
  return r;
}

/// Refuses a node whose attributes do not fit together (at kernel creation).
[[noreturn]] inline void bad_attributes(const Node& n, const std::string& what) {
  fail(ErrorCode::kInvalidGraph, n.label(), ": ", what);
}

inline std::vector<double> attr_doubles(const Node& n, const char* name) {
  std::vector<double> v;
  for (float f : n.attr_floats(name)) v.push_back(static_cast<double>(f));
  return v;
}

/// The node's post_transform attribute (NONE when absent); an unknown name is refused.
inline Post post_attr(const Node& n) {
  Post p;
  const std::string s = n.attr_string("post_transform", "NONE");
  if (!post_named(s, &p))
    fail(ErrorCode::kInvalidGraph, n.label(), ": post_transform '", s, "' (NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT)");
  return p;
}

/// A list of keys given as one of two attributes (int64 or string, exactly one set) — a
/// classifier's labels, a vocabulary, categories — with the position of each key.
struct KeyIndex {
  bool strings = false;
  int64_t size = 0;
  std::vector<int64_t> ints;
  std::vector<std::string> strs;
  std::unordered_map<std::string, int64_t> str_at;
  std::unordered_map<int64_t, int64_t> int_at;

  KeyIndex(const Node& n, const char* int_attr, const char* str_attr) : ints(n.attr_ints(int_attr)), strs(n.attr_strings(str_attr)) {
    if (ints.empty() == strs.empty()) bad_attributes(n, str("exactly one of ", int_attr, " and ", str_attr, " must be set"));
    strings = !strs.empty();
    size = static_cast<int64_t>(strings ? strs.size() : ints.size());
    for (int64_t i = 0; i < size; ++i) {
      if (strings) str_at.emplace(strs[i], i);
      else int_at.emplace(ints[i], i);
    }
  }
  /// The position of a key, or -1.
  int64_t find(const std::string& k) const {
    const auto it = str_at.find(k);
    return it == str_at.end() ? -1 : it->second;
  }
  int64_t find(int64_t k) const {
    const auto it = int_at.find(k);
    return it == int_at.end() ? -1 : it->second;
  }
  DType dtype() const { return strings ? DType::kString : DType::kInt64; }
};

/// A classifier's row i: label number `label` of `labels` into y, and the `cols` scores into z
/// (when z is requested).
inline void write_class(Tensor& y, Tensor* z, int64_t i, int64_t label, const KeyIndex& labels, const double* scores,
                        int64_t cols) {
  if (labels.strings)
    y.data<std::string>()[i] = labels.strs[label];
  else
    y.data<int64_t>()[i] = labels.ints[label];
  if (z)
    for (int64_t c = 0; c < cols; ++c) z->data<float>()[i * cols + c] = static_cast<float>(scores[c]);
}

}  // namespace onyx::cpu::ml
