// The activations of the recurrent ops (RNN, GRU, LSTM and com.microsoft DynamicQuantizeLSTM):
// their names and alpha / beta parameters, and branch-free float exp / sigmoid / tanh that the
// compiler vectorises (sigmoid and tanh dominate a recurrence's element-wise work).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/common.hpp"
#include "ir/graph.hpp"

namespace onyx::cpu::rnn_act {


enum class ActKind : uint8_t {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus
};

struct Activation {
  ActKind kind = ActKind::kTanh;
  float alpha = 0, beta = 0;
};

/// Whose defaults an activation's alpha / beta take when the node's lists run out: the ONNX
/// operators' (RNN, GRU, LSTM), or ONNX Runtime's for com.microsoft DynamicQuantizeLSTM (0 where the
/// ONNX spec gives other values, except LeakyRelu 0.01, HardSigmoid 0.2 / 0.5 and Elu 1).
enum class ActDefaults { kOnnx, kOnnxRuntime };

/// Parses one activation name (case-insensitive); alpha / beta are taken from the lists in order
/// by the functions that use them, with `defaults` when a list runs out.
inline Activation parse_activation(const Node& n, const std::string& name, const std::vector<float>& alphas, size_t& ai,
                                   const std::vector<float>& betas, size_t& bi, ActDefaults defaults = ActDefaults::kOnnx) {
  std::string s;
  for (char c : name) s.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  Activation a;
  const float one = defaults == ActDefaults::kOnnx ? 1.0f : 0.0f;  // affine's alpha, thresholdedrelu's, scaledtanh's
  auto alpha = [&](float d) { a.alpha = ai < alphas.size() ? alphas[ai++] : d; };
  auto beta = [&](float d) { a.beta = bi < betas.size() ? betas[bi++] : d; };
  if (s == "relu") a.kind = ActKind::kRelu;
  else if (s == "tanh") a.kind = ActKind::kTanh;
  else if (s == "sigmoid") a.kind = ActKind::kSigmoid;
  else if (s == "affine") a.kind = ActKind::kAffine, alpha(one), beta(0.0f);
  else if (s == "leakyrelu") a.kind = ActKind::kLeakyRelu, alpha(0.01f);
  else if (s == "thresholdedrelu") a.kind = ActKind::kThresholdedRelu, alpha(one);
  else if (s == "scaledtanh") a.kind = ActKind::kScaledTanh, alpha(one), beta(one);
  else if (s == "hardsigmoid") a.kind = ActKind::kHardSigmoid, alpha(0.2f), beta(0.5f);
  else if (s == "elu") a.kind = ActKind::kElu, alpha(1.0f);
  else if (s == "softsign") a.kind = ActKind::kSoftsign;
  else if (s == "softplus") a.kind = ActKind::kSoftplus;
  else fail(ErrorCode::kInvalidGraph, n.label(), ": unsupported activation '", name, "'");
  return a;
}

template <class C>
inline C sigmoid(C x) {
  if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}

// Branch-free float exp / sigmoid / tanh (relative error ~3e-7), which the compiler vectorises:
// sigmoid and tanh dominate the recurrence's element-wise work.

/// exp(x) for x in [-87, 88]: x = n ln2 + r with n the nearest integer (by adding and taking off
/// 1.5 * 2^23: std::floor would keep GCC from vectorising), a degree-7 polynomial for exp(r), 2^n
/// from the exponent bits.
inline float exp_poly(float x) {
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

inline float sigmoid_fast(float x) {
  const bool nan = x != x;
  const float xc = nan ? 0.0f : std::min(87.0f, std::max(-87.0f, x));
  const float r = 1.0f / (1.0f + exp_poly(-xc));
  return nan ? x : r;
}

inline float tanh_fast(float x) {
  const bool nan = x != x;
  const float xs = nan ? 0.0f : x;
  const float a = std::min(std::fabs(xs), 9.0f);
  // Small |x|: odd Taylor series to x^9 (error < 1e-8 below 0.3); else (1 - e) / (1 + e), e = exp(-2|x|).
  const float x2 = xs * xs;
  const float small = xs * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f + x2 * (-17.0f / 315.0f + x2 * (62.0f / 2835.0f)))));
  const float e = exp_poly(-2.0f * a);
  const float big = std::copysign((1.0f - e) / (1.0f + e), xs);
  const float r = a < 0.3f ? small : big;
  return nan ? x : r;
}

/// Applies `a` to x[0, n) in place.
template <class C>
void activate(const Activation& a, C* x, int64_t n) {
  const C al = static_cast<C>(a.alpha), be = static_cast<C>(a.beta);
  switch (a.kind) {
    case ActKind::kRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] > C(0) ? x[i] : C(0);
      break;
    case ActKind::kTanh:
      if constexpr (std::is_same_v<C, float>)
        for (int64_t i = 0; i < n; ++i) x[i] = tanh_fast(x[i]);
      else
        for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
      break;
    case ActKind::kSigmoid:
      if constexpr (std::is_same_v<C, float>)
        for (int64_t i = 0; i < n; ++i) x[i] = sigmoid_fast(x[i]);
      else
        for (int64_t i = 0; i < n; ++i) x[i] = sigmoid(x[i]);
      break;
    case ActKind::kAffine:
      for (int64_t i = 0; i < n; ++i) x[i] = al * x[i] + be;
      break;
    case ActKind::kLeakyRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] < C(0) ? al * x[i] : x[i];
      break;
    case ActKind::kThresholdedRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] > al ? x[i] : C(0);
      break;
    case ActKind::kScaledTanh:
      if constexpr (std::is_same_v<C, float>)
        for (int64_t i = 0; i < n; ++i) x[i] = al * tanh_fast(be * x[i]);
      else
        for (int64_t i = 0; i < n; ++i) x[i] = al * std::tanh(be * x[i]);
      break;
    case ActKind::kHardSigmoid:
      for (int64_t i = 0; i < n; ++i) x[i] = std::max(C(0), std::min(C(1), al * x[i] + be));
      break;
    case ActKind::kElu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] < C(0) ? al * (std::exp(x[i]) - C(1)) : x[i];
      break;
    case ActKind::kSoftsign:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (C(1) + std::fabs(x[i]));
      break;
    case ActKind::kSoftplus:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] > C(30) ? x[i] : std::log1p(std::exp(x[i]));
      break;
  }
}

}  // namespace onyx::cpu::rnn_act
