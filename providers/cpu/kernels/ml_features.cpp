// CPU kernels: feature preparation of the ai.onnx.ml domain — Imputer, OneHotEncoder,
// CategoryMapper and FeatureVectorizer (version 1), with their attributes read and checked when
// the kernel is created.
#include <cmath>
#include <unordered_map>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/ml_common.hpp"

namespace onyx::cpu {

namespace {

[[noreturn]] void bad_attrs(const Node& n, const std::string& what) { fail(ErrorCode::kInvalidGraph, n.label(), ": ", what); }

/// The last axis' size of X ([N, C] or [C]); X of another rank is refused.
int64_t feature_count(const Tensor& x) {
  if (x.rank() != 1 && x.rank() != 2)
    fail(ErrorCode::kInvalidArgument, "X must be [N, C] (or one row [C]), got ", x.shape().to_string());
  return x.dim(x.rank() - 1);
}

// ---- Imputer: elements equal to the replaced value (NaN matching NaN) take the imputed value of
// their feature (one value per feature, or one for all). Float inputs use the float attributes,
// integer inputs the int64 ones.

class ImputerKernel final : public Kernel {
 public:
  explicit ImputerKernel(const KernelCreateInfo& info) : floats_(info.input_dtype(0) == DType::kFloat || info.input_dtype(0) == DType::kDouble) {
    const Node& n = info.node;
    if (floats_) {
      for (float f : n.attr_floats("imputed_value_floats")) values_.push_back(f);
      replaced_ = n.attr_float("replaced_value_float", 0.0f);
    } else {
      for (int64_t v : n.attr_ints("imputed_value_int64s")) values_.push_back(static_cast<double>(v));
      replaced_ = static_cast<double>(n.attr_int("replaced_value_int64", 0));
    }
    if (values_.empty())
      bad_attrs(n, str("no ", floats_ ? "imputed_value_floats" : "imputed_value_int64s", " for a ", dtype_name(info.input_dtype(0)),
                       " input"));
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t C = feature_count(x);
    if (values_.size() != 1 && static_cast<int64_t>(values_.size()) != C)
      fail(ErrorCode::kInvalidArgument, values_.size(), " imputed values for ", C, " features (one per feature, or one for all)");
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    const bool nan = std::isnan(replaced_);
    auto impute = [&]<class T>() {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double v = static_cast<double>(px[i]);
        const bool hit = nan ? std::isnan(v) : v == replaced_;
        py[i] = hit ? static_cast<T>(values_[values_.size() == 1 ? 0 : i % C]) : px[i];
      }
    };
    switch (x.dtype()) {
      case DType::kFloat: impute.operator()<float>(); break;
      case DType::kDouble: impute.operator()<double>(); break;
      case DType::kInt64: impute.operator()<int64_t>(); break;
      default: impute.operator()<int32_t>(); break;
    }
  }

 private:
  bool floats_;
  std::vector<double> values_;
  double replaced_ = 0;
};

// ---- OneHotEncoder: each element becomes a row of float over the categories (1 where it is the
// category); numbers are matched as integers (truncated). An element of no category gives a row
// of zeros, or an error when zeros = 0.

class OneHotEncoderKernel final : public Kernel {
 public:
  explicit OneHotEncoderKernel(const KernelCreateInfo& info) : zeros_(info.node.attr_int("zeros", 1) != 0) {
    const Node& n = info.node;
    const std::vector<int64_t> ints = n.attr_ints("cats_int64s");
    const std::vector<std::string> strs = n.attr_strings("cats_strings");
    if (ints.empty() == strs.empty()) bad_attrs(n, "exactly one of cats_int64s and cats_strings must be set");
    strings_ = !strs.empty();
    if (strings_ != (info.input_dtype(0) == DType::kString))
      bad_attrs(n, str("the categories are ", strings_ ? "strings" : "int64", " but the input is ", dtype_name(info.input_dtype(0))));
    count_ = static_cast<int64_t>(strings_ ? strs.size() : ints.size());
    for (int64_t i = 0; i < count_; ++i) {
      if (strings_) str_at_.emplace(strs[i], i);
      else int_at_.emplace(ints[i], i);
    }
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Shape s = x.shape();
    s.push_back(count_);
    Tensor& y = ctx.allocate_output(0, DType::kFloat, s);
    float* py = y.data<float>();
    std::fill(py, py + y.numel(), 0.0f);
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t at = -1;
      if (strings_) {
        const auto it = str_at_.find(x.data<std::string>()[i]);
        if (it != str_at_.end()) at = it->second;
      } else {
        const double v = x.element_as_double(i);
        const auto it = std::isfinite(v) ? int_at_.find(static_cast<int64_t>(v)) : int_at_.end();
        if (it != int_at_.end()) at = it->second;
      }
      if (at < 0 && !zeros_)
        fail(ErrorCode::kInvalidArgument, "element ", i, " of X is in no category (and zeros = 0)");
      if (at >= 0) py[i * count_ + at] = 1.0f;
    }
  }

 private:
  bool zeros_, strings_ = false;
  int64_t count_ = 0;
  std::unordered_map<std::string, int64_t> str_at_;
  std::unordered_map<int64_t, int64_t> int_at_;
};

// ---- CategoryMapper: strings to int64 by the pairs (cats_strings[i], cats_int64s[i]), or int64
// to strings; an element of neither list takes default_int64 (-1) or default_string ("_Unused").

class CategoryMapperKernel final : public Kernel {
 public:
  explicit CategoryMapperKernel(const KernelCreateInfo& info)
      : default_int_(info.node.attr_int("default_int64", -1)), default_str_(info.node.attr_string("default_string", "_Unused")) {
    const Node& n = info.node;
    const std::vector<int64_t> ints = n.attr_ints("cats_int64s");
    const std::vector<std::string> strs = n.attr_strings("cats_strings");
    if (ints.size() != strs.size() || ints.empty())
      bad_attrs(n, str("cats_int64s and cats_strings must pair up, they have ", ints.size(), " and ", strs.size(), " entries"));
    for (size_t i = 0; i < ints.size(); ++i) {
      to_int_.emplace(strs[i], ints[i]);
      to_str_.emplace(ints[i], strs[i]);
    }
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() == DType::kString) {
      Tensor& y = ctx.allocate_output(0, DType::kInt64, x.shape());
      for (int64_t i = 0; i < x.numel(); ++i) {
        const auto it = to_int_.find(x.data<std::string>()[i]);
        y.data<int64_t>()[i] = it == to_int_.end() ? default_int_ : it->second;
      }
    } else {
      Tensor& y = ctx.allocate_output(0, DType::kString, x.shape());
      for (int64_t i = 0; i < x.numel(); ++i) {
        const auto it = to_str_.find(x.data<int64_t>()[i]);
        y.data<std::string>()[i] = it == to_str_.end() ? default_str_ : it->second;
      }
    }
  }

 private:
  int64_t default_int_;
  std::string default_str_;
  std::unordered_map<std::string, int64_t> to_int_;
  std::unordered_map<int64_t, std::string> to_str_;
};

// ---- FeatureVectorizer: the inputs' rows side by side, as float: input i gives
// inputdimensions[i] columns, its first columns (zeros past its own width).

class FeatureVectorizerKernel final : public Kernel {
 public:
  explicit FeatureVectorizerKernel(const KernelCreateInfo& info) : dims_(info.node.attr_ints("inputdimensions")) {
    if (dims_.size() != info.node.inputs.size())
      bad_attrs(info.node, str("inputdimensions has ", dims_.size(), " entries for ", info.node.inputs.size(), " inputs"));
    for (int64_t d : dims_) {
      if (d < 0) bad_attrs(info.node, str("inputdimensions has the width ", d));
      total_ += d;
    }
  }

  void compute(KernelContext& ctx) const override {
    int64_t N = -1;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& x = ctx.input(i);
      (void)feature_count(x);
      const int64_t n = x.rank() == 2 ? x.dim(0) : 1;
      if (N >= 0 && n != N) fail(ErrorCode::kInvalidArgument, "input ", i, " has ", n, " rows, input 0 has ", N);
      N = n;
    }
    Tensor& y = ctx.allocate_output(0, DType::kFloat, Shape{N, total_});
    float* py = y.data<float>();
    std::fill(py, py + y.numel(), 0.0f);
    int64_t col = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& x = ctx.input(i);
      const int64_t C = feature_count(x), take = std::min(C, dims_[i]);
      for (int64_t r = 0; r < N; ++r)
        for (int64_t c = 0; c < take; ++c) py[r * total_ + col + c] = static_cast<float>(x.element_as_double(r * C + c));
      col += dims_[i];
    }
  }

 private:
  std::vector<int64_t> dims_;
  int64_t total_ = 0;
};

template <class K>
std::unique_ptr<Kernel> make(const KernelCreateInfo& info) {
  return std::make_unique<K>(info);
}

constexpr TypeMask kNumbers = type_mask({DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32});

const KernelDef kDefs[] = {
    {"ai.onnx.ml", "Imputer", 1, 99, {{0, kNumbers}}, make<ImputerKernel>},
    {"ai.onnx.ml", "OneHotEncoder", 1, 99, {{0, kNumbers | type_mask({DType::kString})}}, make<OneHotEncoderKernel>},
    {"ai.onnx.ml", "CategoryMapper", 1, 99, {{0, type_mask({DType::kString, DType::kInt64})}}, make<CategoryMapperKernel>},
    {"ai.onnx.ml", "FeatureVectorizer", 1, 99, {{0, kNumbers}}, make<FeatureVectorizerKernel>},
};

}  // namespace

std::span<const KernelDef> ml_feature_kernels() { return kDefs; }

}  // namespace onyx::cpu
