// CPU kernels: feature preparation of the ai.onnx.ml domain — Imputer, OneHotEncoder,
// CategoryMapper, FeatureVectorizer, and the operators of maps: ZipMap, CastMap and
// DictVectorizer (all version 1), with their attributes read and checked when the kernel is
// created.
#include <cmath>
#include <cstring>
#include <map>
#include <unordered_map>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/ml_common.hpp"

namespace onyx::cpu {

namespace {

using ml::KeyIndex;

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
      ml::bad_attributes(n, str("no ", floats_ ? "imputed_value_floats" : "imputed_value_int64s", " for a ", dtype_name(info.input_dtype(0)),
                       " input"));
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t C = ml::row_shape(x).second;
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
  explicit OneHotEncoderKernel(const KernelCreateInfo& info)
      : zeros_(info.node.attr_int("zeros", 1) != 0), cats_(info.node, "cats_int64s", "cats_strings") {
    if (cats_.strings != (info.input_dtype(0) == DType::kString))
      ml::bad_attributes(info.node, str("the categories are ", cats_.strings ? "strings" : "int64", " but the input is ",
                               dtype_name(info.input_dtype(0))));
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Shape s = x.shape();
    const int64_t count = cats_.size;
    s.push_back(count);
    Tensor& y = ctx.allocate_output(0, DType::kFloat, s);
    float* py = y.data<float>();
    std::fill(py, py + y.numel(), 0.0f);
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t at = -1;
      if (cats_.strings) {
        at = cats_.find(x.data<std::string>()[i]);
      } else {
        const double v = x.element_as_double(i);
        if (std::isfinite(v)) at = cats_.find(static_cast<int64_t>(v));
      }
      if (at < 0 && !zeros_)
        fail(ErrorCode::kInvalidArgument, "element ", i, " of X is in no category (and zeros = 0)");
      if (at >= 0) py[i * count + at] = 1.0f;
    }
  }

 private:
  bool zeros_;
  KeyIndex cats_;
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
      ml::bad_attributes(n, str("cats_int64s and cats_strings must pair up, they have ", ints.size(), " and ", strs.size(), " entries"));
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
      ml::bad_attributes(info.node, str("inputdimensions has ", dims_.size(), " entries for ", info.node.inputs.size(), " inputs"));
    for (int64_t d : dims_) {
      if (d < 0) ml::bad_attributes(info.node, str("inputdimensions has the width ", d));
      total_ += d;
    }
  }

  void compute(KernelContext& ctx) const override {
    int64_t N = -1;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const int64_t n = ml::row_shape(ctx.input(i)).first;
      if (N >= 0 && n != N) fail(ErrorCode::kInvalidArgument, "input ", i, " has ", n, " rows, input 0 has ", N);
      N = n;
    }
    Tensor& y = ctx.allocate_output(0, DType::kFloat, Shape{N, total_});
    float* py = y.data<float>();
    std::fill(py, py + y.numel(), 0.0f);
    int64_t col = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& x = ctx.input(i);
      const int64_t C = ml::row_shape(x).second, take = std::min(C, dims_[i]);
      for (int64_t r = 0; r < N; ++r)
        for (int64_t c = 0; c < take; ++c) py[r * total_ + col + c] = static_cast<float>(x.element_as_double(r * C + c));
      col += dims_[i];
    }
  }

 private:
  std::vector<int64_t> dims_;
  int64_t total_ = 0;
};

// ---- ZipMap: each row of X [N, C] (or one row [C]) becomes a map from the C class labels to the
// row's scores; the output is the sequence of the N maps.

class ZipMapKernel final : public Kernel {
 public:
  explicit ZipMapKernel(const KernelCreateInfo& info) {
    const KeyIndex labels(info.node, "classlabels_int64s", "classlabels_strings");
    labels_ = labels.strings ? Tensor::from_vector<std::string>(Shape{labels.size}, labels.strs)
                             : Tensor::from_vector<int64_t>(Shape{labels.size}, labels.ints);
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const auto [N, C] = ml::row_shape(x);
    if (C != labels_.numel()) fail(ErrorCode::kInvalidArgument, "X has ", C, " columns for ", labels_.numel(), " class labels");
    std::vector<Value> maps;
    maps.reserve(static_cast<size_t>(N));
    for (int64_t i = 0; i < N; ++i) {
      Tensor row(DType::kFloat, Shape{C});
      std::copy(x.data<float>() + i * C, x.data<float>() + (i + 1) * C, row.data<float>());
      maps.push_back(Value::map(labels_, std::move(row)));
    }
    ctx.set_output(0, Value::sequence_of_maps(std::move(maps), labels_.dtype(), DType::kFloat));
  }

 private:
  Tensor labels_;  // shared by every map (tensors are immutable once made)
};

/// The map input of CastMap / DictVectorizer.
const Value& map_input(KernelContext& ctx) {
  const Value& v = ctx.input_value(0);
  if (!v.is_map()) fail(ErrorCode::kInvalidArgument, "the input must be a map");
  return v;
}

// ---- CastMap: a map(int64, string or float) to a tensor [1, n] of float, int64 or string, the
// values in key order: every entry (DENSE), or positions 0 .. max_map - 1 with 0 ("0" for
// strings) where the map has no key (SPARSE). Strings are parsed as numbers; floats become
// strings as std::to_string writes them (as ONNX Runtime does).

class CastMapKernel final : public Kernel {
 public:
  explicit CastMapKernel(const KernelCreateInfo& info) {
    const Node& n = info.node;
    const std::string to = n.attr_string("cast_to", "TO_FLOAT"), form = n.attr_string("map_form", "DENSE");
    if (to == "TO_FLOAT") to_ = DType::kFloat;
    else if (to == "TO_INT64") to_ = DType::kInt64;
    else if (to == "TO_STRING") to_ = DType::kString;
    else ml::bad_attributes(n, str("cast_to '", to, "' (TO_FLOAT, TO_STRING or TO_INT64)"));
    if (form != "DENSE" && form != "SPARSE") ml::bad_attributes(n, str("map_form '", form, "' (DENSE or SPARSE)"));
    sparse_ = form == "SPARSE";
    max_map_ = n.attr_int("max_map", 1);
    if (sparse_ && max_map_ < 0) ml::bad_attributes(n, str("max_map is ", max_map_));
  }

  void compute(KernelContext& ctx) const override {
    const Value& m = map_input(ctx);
    const Tensor& keys = m.map_keys();
    const Tensor& vals = m.map_values();
    if (keys.dtype() != DType::kInt64 || (vals.dtype() != DType::kString && vals.dtype() != DType::kFloat))
      fail(ErrorCode::kInvalidArgument, "CastMap reads map(int64, string) or map(int64, float), got map(", dtype_name(keys.dtype()),
           ", ", dtype_name(vals.dtype()), ")");
    std::map<int64_t, int64_t> order;  // key -> entry
    for (int64_t i = 0; i < keys.numel(); ++i) order[keys.data<int64_t>()[i]] = i;
    const int64_t n = sparse_ ? max_map_ : static_cast<int64_t>(order.size());
    Tensor& y = ctx.allocate_output(0, to_, Shape{1, n});
    for (int64_t j = 0; j < n; ++j) put(y, j, -1, vals);
    int64_t j = 0;
    for (const auto& [key, entry] : order) {
      if (sparse_ && (key < 0 || key >= max_map_))
        fail(ErrorCode::kInvalidArgument, "key ", key, " is outside [0, max_map = ", max_map_, ")");
      put(y, sparse_ ? key : j++, entry, vals);
    }
  }

 private:
  /// y[j] = vals[entry] cast to the output type (entry -1: the pad value).
  void put(Tensor& y, int64_t j, int64_t entry, const Tensor& vals) const {
    if (to_ == DType::kString) {
      y.data<std::string>()[j] = entry < 0 ? "0"
                                 : vals.dtype() == DType::kString ? vals.data<std::string>()[entry]
                                                                   : std::to_string(vals.data<float>()[entry]);
      return;
    }
    double v = 0;
    if (entry >= 0 && vals.dtype() == DType::kString) {
      const std::string& s = vals.data<std::string>()[entry];
      char* end = nullptr;
      v = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size()) fail(ErrorCode::kInvalidArgument, "map value '", s, "' is not a number");
    } else if (entry >= 0) {
      v = vals.data<float>()[entry];
    }
    if (to_ == DType::kFloat)
      y.data<float>()[j] = static_cast<float>(v);
    else
      y.data<int64_t>()[j] = static_cast<int64_t>(v);
  }

  DType to_ = DType::kFloat;
  bool sparse_ = false;
  int64_t max_map_ = 1;
};

// ---- DictVectorizer: a map to a tensor [1, vocabulary] of its value type: position i holds the
// value of the vocabulary's i-th key, or 0 ("" for strings) where the map lacks it.

class DictVectorizerKernel final : public Kernel {
 public:
  explicit DictVectorizerKernel(const KernelCreateInfo& info) : vocab_(info.node, "int64_vocabulary", "string_vocabulary") {}

  void compute(KernelContext& ctx) const override {
    const Value& m = map_input(ctx);
    const Tensor& keys = m.map_keys();
    const Tensor& vals = m.map_values();
    if ((keys.dtype() == DType::kString) != vocab_.strings)
      fail(ErrorCode::kInvalidArgument, "the map's keys are ", dtype_name(keys.dtype()), " but the vocabulary is ",
           vocab_.strings ? "string" : "int64");
    Tensor& y = ctx.allocate_output(0, vals.dtype(), Shape{1, vocab_.size});
    if (vals.dtype() != DType::kString) std::memset(y.raw_data(), 0, y.nbytes());
    for (int64_t i = 0; i < keys.numel(); ++i) {
      const int64_t at = vocab_.strings ? vocab_.find(keys.data<std::string>()[i]) : vocab_.find(keys.data<int64_t>()[i]);
      if (at >= 0) copy_elements(vals.dtype(), vals.raw_data(), y.raw_data(), 1, i, at);
    }
  }

 private:
  KeyIndex vocab_;
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
    {"ai.onnx.ml", "ZipMap", 1, 99, {{0, type_mask({DType::kFloat})}}, make<ZipMapKernel>},
    {"ai.onnx.ml", "CastMap", 1, 99, {{0, type_mask({DType::kFloat, DType::kString})}}, make<CastMapKernel>},
    {"ai.onnx.ml", "DictVectorizer", 1, 99, {{0, kNumbers | type_mask({DType::kString})}}, make<DictVectorizerKernel>},
};

}  // namespace

std::span<const KernelDef> ml_feature_kernels() { return kDefs; }

}  // namespace onyx::cpu
