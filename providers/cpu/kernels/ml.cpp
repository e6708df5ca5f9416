// CPU kernels: traditional-ML family (domain ai.onnx.ml): ArrayFeatureExtractor, Binarizer,
// LabelEncoder, Scaler, Normalizer, LinearRegressor and LinearClassifier, with their attributes
// read once, when the kernel is created. The tree ensembles are in ml_trees.cpp, the support
// vector machines in ml_svm.cpp.
#include <cmath>
#include <limits>
#include <unordered_map>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/ml_common.hpp"

namespace onyx::cpu {

namespace {

using ml::attr_doubles;
using ml::post_attr;
using ml::Rows;
using ml::rows_of;

// ---------------------------------------------------------------------------------------------
// ArrayFeatureExtractor: Z[..., j] = X[..., Y[j]] over the last axis (Y flattened).

class ArrayFeatureExtractorKernel final : public Kernel {
 public:
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    if (x.rank() == 0) fail(ErrorCode::kInvalidArgument, "X must have at least one dimension");
    const int64_t last = x.dim(static_cast<int>(x.rank()) - 1), rows = last ? x.numel() / last : 0, picked = y.numel();
    const int64_t* idx = y.data<int64_t>();
    for (int64_t j = 0; j < picked; ++j)
      if (idx[j] < 0 || idx[j] >= last)
        fail(ErrorCode::kInvalidArgument, "index ", idx[j], " (Y[", j, "]) is out of range for the last axis of X, of size ",
             last);
    Shape s = x.shape();
    if (x.rank() == 1)
      s = Shape{1, picked};
    else
      s[s.size() - 1] = picked;
    Tensor& z = ctx.allocate_output(0, x.dtype(), s);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < picked; ++j) copy_elements(x.dtype(), x.raw_data(), z.raw_data(), 1, r * last + idx[j], r * picked + j);
  }
};

// ---------------------------------------------------------------------------------------------
// Binarizer: 1 where x > threshold, else 0 (NaN included).

class BinarizerKernel final : public Kernel {
 public:
  explicit BinarizerKernel(const KernelCreateInfo& info) : threshold_(info.node.attr_float("threshold", 0.0f)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    auto run = [&]<class T>() {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      // The threshold is a float attribute: compared as a double, so that integers compare exactly.
      const double t = static_cast<double>(threshold_);
      for (int64_t i = 0; i < x.numel(); ++i) py[i] = static_cast<double>(px[i]) > t ? T(1) : T(0);
    };
    switch (x.dtype()) {
      case DType::kFloat: run.template operator()<float>(); break;
      case DType::kDouble: run.template operator()<double>(); break;
      case DType::kInt64: run.template operator()<int64_t>(); break;
      case DType::kInt32: run.template operator()<int32_t>(); break;
      default: unsupported_dtype("Binarizer", x.dtype());
    }
  }

 private:
  float threshold_;
};

// ---------------------------------------------------------------------------------------------
// LabelEncoder: each element looked up among the keys, replaced by the value at the same
// position, or the default. Keys are held by kind (strings, integers, floating point); a NaN key
// matches every NaN and, as in a Python dict, -0.0 and 0.0 are one key. A repeated key maps to
// its last value.

struct LabelTable {
  DType key_type = DType::kUndefined, value_type = DType::kUndefined;
  std::unordered_map<std::string, int64_t> by_string;
  std::unordered_map<int64_t, int64_t> by_int;
  std::unordered_map<double, int64_t> by_float;
  int64_t nan_value = -1;
  Tensor values;   // 1-D, value_type
  Tensor fallback; // one element, value_type
};

bool is_integer(DType t) { return t == DType::kInt64 || t == DType::kInt32 || t == DType::kInt16; }
bool is_floating(DType t) { return t == DType::kFloat || t == DType::kDouble; }

/// The keys or values of a LabelEncoder (side "keys" / "values") as a 1-D tensor.
Tensor label_side(const Node& n, const std::string& side) {
  if (n.has_attr(side + "_strings")) {
    const std::vector<std::string> v = n.attr_strings(side + "_strings");
    return Tensor::from_vector<std::string>(Shape{static_cast<int64_t>(v.size())}, v);
  }
  if (n.has_attr(side + "_int64s")) {
    const std::vector<int64_t> v = n.attr_ints(side + "_int64s");
    return Tensor::from_vector<int64_t>(Shape{static_cast<int64_t>(v.size())}, v);
  }
  if (n.has_attr(side + "_floats")) {
    const std::vector<float> v = n.attr_floats(side + "_floats");
    return Tensor::from_vector<float>(Shape{static_cast<int64_t>(v.size())}, v);
  }
  if (const Tensor* t = n.attr_tensor(side + "_tensor")) return t->clone();
  fail(ErrorCode::kInvalidGraph, n.label(), ": no ", side, "_* attribute");
}

/// The default of a LabelEncoder whose values have type `t`.
Tensor label_default(const Node& n, DType t) {
  if (const Tensor* d = n.attr_tensor("default_tensor")) return d->clone();
  Tensor d(t, Shape{});
  switch (t) {
    case DType::kString: d.data<std::string>()[0] = n.attr_string("default_string", "_Unused"); break;
    case DType::kInt64: d.data<int64_t>()[0] = n.attr_int("default_int64", -1); break;
    case DType::kInt32: d.data<int32_t>()[0] = static_cast<int32_t>(n.attr_int("default_int64", -1)); break;
    case DType::kInt16: d.data<int16_t>()[0] = static_cast<int16_t>(n.attr_int("default_int64", -1)); break;
    case DType::kFloat: d.data<float>()[0] = n.attr_float("default_float", -0.0f); break;
    case DType::kDouble: d.data<double>()[0] = static_cast<double>(n.attr_float("default_float", -0.0f)); break;
    default: fail(ErrorCode::kInvalidGraph, n.label(), ": values of type ", dtype_name(t));
  }
  return d;
}

int64_t integer_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kInt64: return t.data<int64_t>()[i];
    case DType::kInt32: return t.data<int32_t>()[i];
    case DType::kInt16: return t.data<int16_t>()[i];
    default: fail(ErrorCode::kRuntime, "not an integer tensor");
  }
}

class LabelEncoderKernel final : public Kernel {
 public:
  explicit LabelEncoderKernel(const KernelCreateInfo& info) : node_(info.node) {
    const Node& n = info.node;
    LabelTable& t = table_;
    if (n.opset < 2) {
      // Version 1: string -> its index among classes_strings; int64 -> the class of that index.
      const std::vector<std::string> classes = n.attr_strings("classes_strings");
      const Tensor names = Tensor::from_vector<std::string>(Shape{static_cast<int64_t>(classes.size())}, classes);
      std::vector<int64_t> idx(classes.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
      const Tensor numbers = Tensor::from_vector<int64_t>(Shape{static_cast<int64_t>(idx.size())}, idx);
      const bool from_strings = info.input_dtype(0) == DType::kString;
      build(from_strings ? names : numbers, from_strings ? numbers : names);
      t.fallback = Tensor(t.value_type, Shape{});
      if (from_strings)
        t.fallback.data<int64_t>()[0] = n.attr_int("default_int64", -1);
      else
        t.fallback.data<std::string>()[0] = n.attr_string("default_string", "_Unused");
      return;
    }
    build(label_side(n, "keys"), label_side(n, "values"));
    t.fallback = label_default(n, t.value_type);
    if (t.fallback.dtype() != t.value_type || t.fallback.numel() != 1)
      fail(ErrorCode::kInvalidGraph, n.label(), ": the default must be one ", dtype_name(t.value_type));
  }

  void compute(KernelContext& ctx) const override {
    const LabelTable& t = table_;
    const Tensor& x = ctx.input(0);
    if (x.dtype() != t.key_type)
      fail(ErrorCode::kInvalidArgument, "the input is ", dtype_name(x.dtype()), " but the keys are ", dtype_name(t.key_type));
    Tensor& y = ctx.allocate_output(0, t.value_type, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t k = -1;
      if (x.dtype() == DType::kString) {
        const auto it = t.by_string.find(x.data<std::string>()[i]);
        if (it != t.by_string.end()) k = it->second;
      } else if (is_integer(x.dtype())) {
        const auto it = t.by_int.find(integer_at(x, i));
        if (it != t.by_int.end()) k = it->second;
      } else {
        const double v = x.element_as_double(i);
        if (std::isnan(v)) {
          k = t.nan_value;
        } else {
          const auto it = t.by_float.find(v);
          if (it != t.by_float.end()) k = it->second;
        }
      }
      const Tensor& from = k >= 0 ? t.values : t.fallback;
      copy_elements(from.dtype(), from.raw_data(), y.raw_data(), 1, k >= 0 ? k : 0, i);
    }
  }

 private:
  void build(const Tensor& keys, const Tensor& values) {
    LabelTable& t = table_;
    if (keys.rank() != 1 || values.rank() != 1 || keys.numel() != values.numel())
      fail(ErrorCode::kInvalidGraph, node_.label(), ": keys and values must be 1-D of one length, got ", keys.shape().to_string(),
           " and ", values.shape().to_string());
    t.key_type = keys.dtype();
    t.value_type = values.dtype();
    const bool known_key = keys.dtype() == DType::kString || is_integer(keys.dtype()) || is_floating(keys.dtype());
    const bool known_value = values.dtype() == DType::kString || is_integer(values.dtype()) || is_floating(values.dtype());
    if (!known_key || !known_value)
      fail(ErrorCode::kInvalidGraph, node_.label(), ": keys of type ", dtype_name(keys.dtype()), " and values of type ",
           dtype_name(values.dtype()), " (string, int64, int32, int16, float or double)");
    for (int64_t i = 0; i < keys.numel(); ++i) {
      if (keys.dtype() == DType::kString) {
        t.by_string[keys.data<std::string>()[i]] = i;
      } else if (is_integer(keys.dtype())) {
        t.by_int[integer_at(keys, i)] = i;
      } else {
        const double v = keys.element_as_double(i);
        if (std::isnan(v))
          t.nan_value = i;
        else
          t.by_float[v == 0.0 ? 0.0 : v] = i;
      }
    }
    t.values = values;
  }

  const Node& node_;
  LabelTable table_;
};

// ---------------------------------------------------------------------------------------------
// Scaler, Normalizer, LinearRegressor, LinearClassifier: row-wise maps of an [N, C] input (a 1-D
// input is one row) of float, double, int64 or int32 to float, computed in double.

class ScalerKernel final : public Kernel {
 public:
  explicit ScalerKernel(const KernelCreateInfo& info)
      : offset_(attr_doubles(info.node, "offset")), scale_(attr_doubles(info.node, "scale")) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Rows r = rows_of(x);
    for (const auto* a : {&offset_, &scale_})
      if (a->size() > 1 && static_cast<int64_t>(a->size()) != r.c)
        fail(ErrorCode::kInvalidArgument, a == &offset_ ? "offset" : "scale", " has ", a->size(), " values for ", r.c,
             " features (one per feature, or one for all)");
    Tensor& y = ctx.allocate_output(0, DType::kFloat, x.shape());
    float* py = y.data<float>();
    for (int64_t i = 0; i < r.n; ++i)
      for (int64_t j = 0; j < r.c; ++j) {
        const double o = offset_.empty() ? 0.0 : offset_[offset_.size() == 1 ? 0 : j];
        const double s = scale_.empty() ? 1.0 : scale_[scale_.size() == 1 ? 0 : j];
        py[i * r.c + j] = static_cast<float>((r.v[i * r.c + j] - o) * s);
      }
  }

 private:
  std::vector<double> offset_, scale_;
};

class NormalizerKernel final : public Kernel {
 public:
  explicit NormalizerKernel(const KernelCreateInfo& info) {
    const std::string norm = info.node.attr_string("norm", "MAX");
    if (norm == "MAX") norm_ = 0;
    else if (norm == "L1") norm_ = 1;
    else if (norm == "L2") norm_ = 2;
    else fail(ErrorCode::kInvalidGraph, info.node.label(), ": norm '", norm, "' (MAX, L1 or L2)");
  }

  /// Each row divided by its largest value (MAX), the sum of its magnitudes (L1) or its
  /// Euclidean length (L2); a row whose divisor is 0 stays 0, as in ONNX Runtime.
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Rows r = rows_of(x);
    Tensor& y = ctx.allocate_output(0, DType::kFloat, x.shape());
    float* py = y.data<float>();
    for (int64_t i = 0; i < r.n; ++i) {
      const double* row = r.v.data() + i * r.c;
      double d = norm_ == 0 ? -std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t j = 0; j < r.c; ++j)
        d = norm_ == 0 ? std::max(d, row[j]) : norm_ == 1 ? d + std::abs(row[j]) : d + row[j] * row[j];
      if (norm_ == 2) d = std::sqrt(d);
      for (int64_t j = 0; j < r.c; ++j) py[i * r.c + j] = d == 0 ? 0.0f : static_cast<float>(row[j] / d);
    }
  }

 private:
  int norm_ = 0;
};

/// x W^T + b for E rows of coefficients over C features (b: one per row, one for all, or none).
void linear_scores(const Rows& r, const std::vector<double>& w, const std::vector<double>& b, int64_t E, std::vector<double>& out) {
  out.assign(static_cast<size_t>(r.n * E), 0.0);
  for (int64_t i = 0; i < r.n; ++i)
    for (int64_t e = 0; e < E; ++e) {
      double s = b.empty() ? 0.0 : b[b.size() == 1 ? 0 : e];
      for (int64_t j = 0; j < r.c; ++j) s += r.v[i * r.c + j] * w[e * r.c + j];
      out[i * E + e] = s;
    }
}

void check_linear(const Node& n, const std::vector<double>& w, const std::vector<double>& b, int64_t E) {
  if (E <= 0 || w.empty() || w.size() % static_cast<size_t>(E) != 0)
    fail(ErrorCode::kInvalidGraph, n.label(), ": ", w.size(), " coefficients do not divide into ", E, " rows");
  if (b.size() > 1 && static_cast<int64_t>(b.size()) != E)
    fail(ErrorCode::kInvalidGraph, n.label(), ": ", b.size(), " intercepts for ", E, " rows of coefficients");
}

void check_features(const Rows& r, const std::vector<double>& w, int64_t E) {
  if (static_cast<int64_t>(w.size()) != E * r.c)
    fail(ErrorCode::kInvalidArgument, "X has ", r.c, " features but the coefficients are ", E, " rows of ",
         static_cast<int64_t>(w.size()) / E);
}

class LinearRegressorKernel final : public Kernel {
 public:
  explicit LinearRegressorKernel(const KernelCreateInfo& info)
      : w_(attr_doubles(info.node, "coefficients")), b_(attr_doubles(info.node, "intercepts")),
        targets_(info.node.attr_int("targets", 1)), post_(post_attr(info.node)) {
    check_linear(info.node, w_, b_, targets_);
  }

  void compute(KernelContext& ctx) const override {
    const Rows r = rows_of(ctx.input(0));
    check_features(r, w_, targets_);
    std::vector<double> s;
    linear_scores(r, w_, b_, targets_, s);
    Tensor& y = ctx.allocate_output(0, DType::kFloat, Shape{r.n, targets_});
    for (int64_t i = 0; i < r.n; ++i) {
      ml::post_transform(post_, s.data() + i * targets_, static_cast<size_t>(targets_));
      for (int64_t e = 0; e < targets_; ++e) y.data<float>()[i * targets_ + e] = static_cast<float>(s[i * targets_ + e]);
    }
  }

 private:
  std::vector<double> w_, b_;
  int64_t targets_;
  ml::Post post_;
};

/// LinearClassifier: the class of the highest score, and the scores. One row of coefficients with
/// two labels is a binary classifier, scored as ONNX Runtime does: s = x w + b gives the scores
/// [1 - s, s] and the second label when s > 0; with LOGISTIC, p = logistic(s) gives [1 - p, p]
/// and the second label when p > 0.5 (SOFTMAX and SOFTMAX_ZERO leave a binary score as it is).
class LinearClassifierKernel final : public Kernel {
 public:
  explicit LinearClassifierKernel(const KernelCreateInfo& info)
      : w_(attr_doubles(info.node, "coefficients")), b_(attr_doubles(info.node, "intercepts")), post_(post_attr(info.node)),
        classes_(info.node, "classlabels_ints", "classlabels_strings") {
    const Node& n = info.node;
    if (!b_.empty()) {
      // One row of coefficients per intercept: one per label, or one for a binary classifier.
      const int64_t E = static_cast<int64_t>(b_.size());
      check_linear(n, w_, {}, E);
      if (!rows_fit(E))
        fail(ErrorCode::kInvalidGraph, n.label(), ": ", E, " rows of coefficients (intercepts) for ", classes_.size, " class labels");
    }
  }

  /// Whether E rows of coefficients fit the labels: one per label, or one for two labels (binary).
  bool rows_fit(int64_t E) const { return E == classes_.size || (E == 1 && classes_.size == 2); }

  /// The number of coefficient rows: one per intercept, else as many as the coefficients make
  /// over C features.
  int64_t rows_for(int64_t c) const {
    if (!b_.empty()) return static_cast<int64_t>(b_.size());
    if (c <= 0 || w_.size() % static_cast<size_t>(c) != 0)
      fail(ErrorCode::kInvalidArgument, w_.size(), " coefficients do not make rows of ", c, " features");
    const int64_t E = static_cast<int64_t>(w_.size()) / c;
    if (!rows_fit(E))
      fail(ErrorCode::kInvalidArgument, E, " rows of coefficients for ", classes_.size, " class labels");
    return E;
  }

  void compute(KernelContext& ctx) const override {
    const Rows r = rows_of(ctx.input(0));
    const int64_t E = rows_for(r.c);
    const bool binary = E == 1 && classes_.size == 2;
    check_features(r, w_, E);
    std::vector<double> s;
    linear_scores(r, w_, b_, E, s);
    const int64_t Z = binary ? 2 : E;
    Tensor& labels = ctx.allocate_output(0, classes_.dtype(), Shape{r.n});
    Tensor* scores = ctx.has_output(1) ? &ctx.allocate_output(1, DType::kFloat, Shape{r.n, Z}) : nullptr;
    std::vector<double> z(static_cast<size_t>(Z));
    for (int64_t i = 0; i < r.n; ++i) {
      int64_t pick = 0;
      if (binary) {
        double v = s[i];
        bool positive;
        if (post_ == ml::Post::kLogistic) {
          v = ml::logistic(v);
          positive = v > 0.5;
        } else {
          positive = v > 0;
        }
        z[0] = 1 - v;
        z[1] = v;
        if (post_ == ml::Post::kProbit) z[0] = ml::probit(z[0]), z[1] = ml::probit(z[1]);
        pick = positive ? 1 : 0;
      } else {
        for (int64_t e = 0; e < E; ++e) z[e] = s[i * E + e];
        for (int64_t e = 1; e < E; ++e)
          if (z[e] > z[pick]) pick = e;
        ml::post_transform(post_, z.data(), z.size());
      }
      ml::write_class(labels, scores, i, pick, classes_, z.data(), Z);
    }
  }

 private:
  std::vector<double> w_, b_;
  ml::Post post_;
  ml::KeyIndex classes_;
};

std::unique_ptr<Kernel> make_array_feature_extractor(const KernelCreateInfo&) {
  return std::make_unique<ArrayFeatureExtractorKernel>();
}
std::unique_ptr<Kernel> make_scaler(const KernelCreateInfo& info) { return std::make_unique<ScalerKernel>(info); }
std::unique_ptr<Kernel> make_normalizer(const KernelCreateInfo& info) { return std::make_unique<NormalizerKernel>(info); }
std::unique_ptr<Kernel> make_linear_regressor(const KernelCreateInfo& info) { return std::make_unique<LinearRegressorKernel>(info); }
std::unique_ptr<Kernel> make_linear_classifier(const KernelCreateInfo& info) { return std::make_unique<LinearClassifierKernel>(info); }
std::unique_ptr<Kernel> make_binarizer(const KernelCreateInfo& info) { return std::make_unique<BinarizerKernel>(info); }
std::unique_ptr<Kernel> make_label_encoder(const KernelCreateInfo& info) { return std::make_unique<LabelEncoderKernel>(info); }

constexpr TypeMask kFeatureTypes =
    type_mask({DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32, DType::kString});
constexpr TypeMask kNumericFeatures = type_mask({DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32});
constexpr TypeMask kLabelTypes =
    type_mask({DType::kString, DType::kInt64, DType::kFloat, DType::kInt32, DType::kInt16, DType::kDouble});

const KernelDef kDefs[] = {
    {"ai.onnx.ml", "ArrayFeatureExtractor", 1, 99, {{0, kFeatureTypes}}, make_array_feature_extractor},
    {"ai.onnx.ml", "Binarizer", 1, 99, {{0, type_mask({DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32})}},
     make_binarizer},
    {"ai.onnx.ml", "LabelEncoder", 1, 99, {{0, kLabelTypes}}, make_label_encoder},
    {"ai.onnx.ml", "Scaler", 1, 99, {{0, kNumericFeatures}}, make_scaler},
    {"ai.onnx.ml", "Normalizer", 1, 99, {{0, kNumericFeatures}}, make_normalizer},
    {"ai.onnx.ml", "LinearRegressor", 1, 99, {{0, kNumericFeatures}}, make_linear_regressor},
    {"ai.onnx.ml", "LinearClassifier", 1, 99, {{0, kNumericFeatures}}, make_linear_classifier},
};

}  // namespace

std::span<const KernelDef> ml_kernels() { return kDefs; }

}  // namespace onyx::cpu
