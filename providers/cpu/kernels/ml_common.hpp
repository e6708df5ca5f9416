// Helpers shared by the ai.onnx.ml kernels (ml.cpp, ml_trees.cpp): the score post-transforms.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

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

}  // namespace onyx::cpu::ml
