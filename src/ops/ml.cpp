// Traditional-ML family (domain ai.onnx.ml): ArrayFeatureExtractor, Binarizer, LabelEncoder
// (versions 1, 2 and 4), TreeEnsemble (version 5), TreeEnsembleRegressor and
// TreeEnsembleClassifier (1 and 3), Scaler, Normalizer, LinearRegressor, LinearClassifier,
// SVMRegressor, SVMClassifier, Imputer, OneHotEncoder, CategoryMapper, FeatureVectorizer, ZipMap,
// CastMap and DictVectorizer.
// Their attributes are checked here, at load, so that a malformed
// model is refused with the attribute named rather than at run time.
#include "ops/families.hpp"
#include "ops/schema.hpp"

namespace onyx {

namespace {

/// Output 0: element type `dt`, input 0's shape (unranked when it is).
void output_like_input(InferContext& ctx, DType dt) {
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape)
    ctx.set_output(0, dt, x.shape);
  else
    ctx.set_output_unranked(0, dt);
}

void infer_array_feature_extractor(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32, DType::kString});
  ctx.require_dtype(1, {DType::kInt64});
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& y = ctx.input_type(1);
  if (!x.has_shape) {
    ctx.set_output_unranked(0, x.elem_dtype());
    return;
  }
  if (x.shape.size() == 0) ctx.fail_node("X must have at least one dimension");
  const int64_t picked = y.has_shape && y.shape.is_concrete() ? y.shape.numel() : ctx.fresh();
  Shape s;
  if (x.shape.size() == 1) {
    s = Shape{1, picked};
  } else {
    s = x.shape;
    s[s.size() - 1] = picked;
  }
  ctx.set_output(0, x.elem_dtype(), s);
}

void infer_binarizer(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32});
  ctx.propagate(0, 0);
}

/// The element type of LabelEncoder's keys or values ("keys" / "values"): from whichever
/// attribute of that kind is set; exactly one must be.
DType label_encoder_side(InferContext& ctx, const char* side) {
  const Node& n = ctx.node();
  const std::string p(side);
  std::vector<std::pair<std::string, DType>> set;
  if (n.has_attr(p + "_strings")) set.emplace_back(p + "_strings", DType::kString);
  if (n.has_attr(p + "_int64s")) set.emplace_back(p + "_int64s", DType::kInt64);
  if (n.has_attr(p + "_floats")) set.emplace_back(p + "_floats", DType::kFloat);
  if (n.opset >= 4 && n.has_attr(p + "_tensor")) {
    const Tensor* t = n.attr_tensor(p + "_tensor");
    if (!t) ctx.fail_node(p, "_tensor must be a tensor");
    set.emplace_back(p + "_tensor", t->dtype());
  }
  if (set.size() != 1) {
    std::string names;
    for (const auto& [name, dt] : set) names += (names.empty() ? "" : ", ") + name;
    ctx.fail_node("exactly one of the ", side, "_* attributes must be set, got ", set.empty() ? "none" : names);
  }
  const DType dt = set[0].second;
  if (dt != DType::kString && dt != DType::kInt64 && dt != DType::kFloat && dt != DType::kInt32 && dt != DType::kInt16 &&
      dt != DType::kDouble)
    ctx.fail_node(set[0].first, " has element type ", dtype_name(dt), " (string, int64, int32, int16, float or double)");
  return dt;
}

void infer_label_encoder(InferContext& ctx) {
  const Node& n = ctx.node();
  const DType in = ctx.input_dtype(0);
  if (n.opset < 2) {
    // Version 1: strings to their index in classes_strings, or int64 indices to the strings.
    if (in != DType::kString && in != DType::kInt64)
      ctx.fail_node("LabelEncoder-1 maps string to int64 or int64 to string, got ", dtype_name(in));
    output_like_input(ctx, in == DType::kString ? DType::kInt64 : DType::kString);
    return;
  }
  const DType keys = label_encoder_side(ctx, "keys");
  const DType values = label_encoder_side(ctx, "values");
  if (in != DType::kUndefined && in != keys)
    ctx.fail_node("the input is ", dtype_name(in), " but the keys are ", dtype_name(keys));
  if (const Tensor* d = n.attr_tensor("default_tensor")) {
    if (d->numel() != 1) ctx.fail_node("default_tensor must hold one value, it holds ", d->numel());
    if (d->dtype() != values)
      ctx.fail_node("default_tensor is ", dtype_name(d->dtype()), " but the values are ", dtype_name(values));
  }
  output_like_input(ctx, values);
}

void infer_tree_ensemble(InferContext& ctx) {
  const Node& n = ctx.node();
  ctx.require_dtype(0, {DType::kFloat, DType::kDouble, DType::kFloat16});
  const int64_t targets = n.attr_int("n_targets", 0);
  if (targets <= 0) ctx.fail_node("n_targets must be positive, got ", targets);
  for (const char* a : {"nodes_splits", "nodes_modes", "leaf_weights"})
    if (!n.attr_tensor(a)) ctx.fail_node("the tensor attribute ", a, " is required");
  const size_t nodes = n.attr_ints("nodes_featureids").size();
  for (const char* a : {"nodes_truenodeids", "nodes_falsenodeids", "nodes_trueleafs", "nodes_falseleafs"})
    if (n.attr_ints(a).size() != nodes) ctx.fail_node(a, " has ", n.attr_ints(a).size(), " entries for ", nodes, " nodes");
  if (static_cast<size_t>(n.attr_tensor("nodes_modes")->numel()) != nodes)
    ctx.fail_node("nodes_modes has ", n.attr_tensor("nodes_modes")->numel(), " entries for ", nodes, " nodes");
  if (n.attr_ints("leaf_targetids").size() != static_cast<size_t>(n.attr_tensor("leaf_weights")->numel()))
    ctx.fail_node("leaf_targetids and leaf_weights differ in length");
  const DType x = ctx.input_dtype(0);
  for (const char* a : {"nodes_splits", "leaf_weights", "membership_values"})
    if (const Tensor* t = n.attr_tensor(a); t && x != DType::kUndefined && t->dtype() != x)
      ctx.fail_node(a, " is ", dtype_name(t->dtype()), " but the input is ", dtype_name(x));
  const TypeInfo& in = ctx.input_type(0);
  if (in.has_shape && in.shape.size() != 2) ctx.fail_node("X must be 2-D [N, features], got ", in.shape.to_string());
  ctx.set_output(0, x, Shape{in.has_shape ? in.shape[0] : ctx.fresh(), targets});
}

// TreeEnsembleRegressor (1, 3): X [N, F] (or [F]) of float, double, int64 or int32 -> float
// [N, n_targets]. The trees themselves are checked when the kernel is built.
void infer_tree_regressor(InferContext& ctx) {
  const Node& n = ctx.node();
  ctx.require_dtype(0, {DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32});
  const int64_t targets = n.attr_int("n_targets", 0);
  if (targets <= 0) ctx.fail_node("n_targets must be positive, got ", targets);
  if (n.opset < 3)
    for (const char* a : {"base_values_as_tensor", "nodes_values_as_tensor", "target_weights_as_tensor", "nodes_hitrates_as_tensor"})
      if (n.has_attr(a)) ctx.fail_node("the attribute ", a, " came with version 3 of the operator; the model imports ai.onnx.ml ", n.opset);
  const TypeInfo& in = ctx.input_type(0);
  if (in.has_shape && in.shape.size() != 1 && in.shape.size() != 2)
    ctx.fail_node("X must be [N, features] or [features], got ", in.shape.to_string());
  const int64_t rows = !in.has_shape ? ctx.fresh() : in.shape.size() == 1 ? 1 : in.shape[0];
  ctx.set_output(0, DType::kFloat, Shape{rows, targets});
}

// TreeEnsembleClassifier (1, 3): labels [N] (int64 or string) and scores float [N, classes].
void infer_tree_classifier(InferContext& ctx) {
  const Node& n = ctx.node();
  ctx.require_dtype(0, {DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32});
  const bool ints = n.has_attr("classlabels_int64s"), strings = n.has_attr("classlabels_strings");
  if (ints == strings) ctx.fail_node("exactly one of classlabels_int64s and classlabels_strings must be set");
  const int64_t classes = static_cast<int64_t>(ints ? n.attr_ints("classlabels_int64s").size() : n.attr_strings("classlabels_strings").size());
  if (classes == 0) ctx.fail_node("the class label list is empty");
  const TypeInfo& in = ctx.input_type(0);
  if (in.has_shape && in.shape.size() != 1 && in.shape.size() != 2)
    ctx.fail_node("X must be [N, features] or [features], got ", in.shape.to_string());
  const int64_t rows = !in.has_shape ? ctx.fresh() : in.shape.size() == 1 ? 1 : in.shape[0];
  ctx.set_output(0, ints ? DType::kInt64 : DType::kString, Shape{rows});
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) ctx.set_output(1, DType::kFloat, Shape{rows, classes});
}

/// Rows of an [N, C] (or [C]) feature input: N, or a fresh symbol when unknown.
int64_t feature_rows(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32});
  const TypeInfo& in = ctx.input_type(0);
  if (in.has_shape && in.shape.size() != 1 && in.shape.size() != 2)
    ctx.fail_node("X must be [N, C] or [C], got ", in.shape.to_string());
  return !in.has_shape ? ctx.fresh() : in.shape.size() == 1 ? 1 : in.shape[0];
}

/// Scaler, Normalizer: float of the input's shape.
void infer_feature_map(InferContext& ctx) {
  (void)feature_rows(ctx);
  output_like_input(ctx, DType::kFloat);
}

void infer_linear_regressor(InferContext& ctx) {
  const int64_t targets = ctx.node().attr_int("targets", 1);
  if (targets <= 0) ctx.fail_node("targets must be positive, got ", targets);
  ctx.set_output(0, DType::kFloat, Shape{feature_rows(ctx), targets});
}

/// A classifier's labels (output 0: [N], int64 or string by which of classlabels_ints /
/// classlabels_strings is set, exactly one); returns N and the number of labels.
std::pair<int64_t, int64_t> classifier_labels(InferContext& ctx) {
  const Node& n = ctx.node();
  const bool ints = n.has_attr("classlabels_ints"), strings = n.has_attr("classlabels_strings");
  if (ints == strings) ctx.fail_node("exactly one of classlabels_ints and classlabels_strings must be set");
  const int64_t rows = feature_rows(ctx);
  ctx.set_output(0, ints ? DType::kInt64 : DType::kString, Shape{rows});
  return {rows, static_cast<int64_t>(ints ? n.attr_ints("classlabels_ints").size() : n.attr_strings("classlabels_strings").size())};
}

void infer_linear_classifier(InferContext& ctx) {
  const auto [rows, labels] = classifier_labels(ctx);
  // One score per label (a binary classifier's one row of coefficients gives two).
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) ctx.set_output(1, DType::kFloat, Shape{rows, labels});
}

void infer_svm_regressor(InferContext& ctx) { ctx.set_output(0, DType::kFloat, Shape{feature_rows(ctx), 1}); }

// SVMClassifier: labels [N] and scores [N, columns]: one per class with probabilities (prob_a) or
// for the linear form, else one per class pair (two for two classes).
void infer_svm_classifier(InferContext& ctx) {
  const auto [rows, k] = classifier_labels(ctx);
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) {
    const Node& n = ctx.node();
    int64_t vectors = 0;
    for (int64_t c : n.attr_ints("vectors_per_class")) vectors += c;
    const int64_t cols = vectors == 0 || n.has_attr("prob_a") ? k : k == 2 ? 2 : k * (k - 1) / 2;
    ctx.set_output(1, DType::kFloat, Shape{rows, cols});
  }
}

/// Imputer: the input's type and shape; the imputed values of the input's kind must be given.
void infer_imputer(InferContext& ctx) {
  (void)feature_rows(ctx);
  const Node& n = ctx.node();
  const DType x = ctx.input_dtype(0);
  const bool floats = x == DType::kFloat || x == DType::kDouble;
  if (x != DType::kUndefined && (floats ? n.attr_floats("imputed_value_floats").empty() : n.attr_ints("imputed_value_int64s").empty()))
    ctx.fail_node("a ", dtype_name(x), " input needs ", floats ? "imputed_value_floats" : "imputed_value_int64s");
  ctx.propagate(0, 0);
}

/// OneHotEncoder: float of the input's shape plus an axis of the categories.
void infer_one_hot_encoder(InferContext& ctx) {
  const Node& n = ctx.node();
  ctx.require_dtype(0, {DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32, DType::kString});
  const bool ints = n.has_attr("cats_int64s"), strings = n.has_attr("cats_strings");
  if (ints == strings) ctx.fail_node("exactly one of cats_int64s and cats_strings must be set");
  const int64_t cats = static_cast<int64_t>(ints ? n.attr_ints("cats_int64s").size() : n.attr_strings("cats_strings").size());
  const TypeInfo& x = ctx.input_type(0);
  if (!x.has_shape) {
    ctx.set_output_unranked(0, DType::kFloat);
    return;
  }
  Shape s = x.shape;
  s.push_back(cats);
  ctx.set_output(0, DType::kFloat, s);
}

/// CategoryMapper: string to int64 or int64 to string, the input's shape.
void infer_category_mapper(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kString, DType::kInt64});
  const DType out = ctx.input_dtype(0) == DType::kString ? DType::kInt64 : DType::kString;
  output_like_input(ctx, out);
}

/// FeatureVectorizer: float [N, sum of inputdimensions].
void infer_feature_vectorizer(InferContext& ctx) {
  int64_t total = 0;
  for (int64_t d : ctx.node().attr_ints("inputdimensions")) total += d;
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.input_dtype(i) != DType::kUndefined && ctx.input_dtype(0) != DType::kUndefined && ctx.input_dtype(i) != ctx.input_dtype(0))
      ctx.fail_node("the inputs must have one element type: input 0 is ", dtype_name(ctx.input_dtype(0)), ", input ", i, " is ",
                    dtype_name(ctx.input_dtype(i)));
  ctx.set_output(0, DType::kFloat, Shape{feature_rows(ctx), total});
}

/// ZipMap: seq(map(int64 or string, float)), one map per row of X.
void infer_zip_map(InferContext& ctx) {
  const Node& n = ctx.node();
  ctx.require_dtype(0, {DType::kFloat});
  const bool ints = n.has_attr("classlabels_int64s"), strings = n.has_attr("classlabels_strings");
  if (ints == strings) ctx.fail_node("exactly one of classlabels_int64s and classlabels_strings must be set");
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape && x.shape.size() != 1 && x.shape.size() != 2) ctx.fail_node("X must be [N, C] or [C], got ", x.shape.to_string());
  ctx.set_output_type(0, TypeInfo::sequence_of(TypeInfo::map_of(ints ? DType::kInt64 : DType::kString, TypeInfo::tensor(DType::kFloat))));
}

/// The map type of input 0 (CastMap, DictVectorizer), checked: its key and value types.
const TypeInfo& map_input_type(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(0);
  if (t.kind != TypeInfo::Kind::kMap && t.kind != TypeInfo::Kind::kUnknown) ctx.fail_node("the input must be a map, got ", t.to_string());
  return t;
}

/// CastMap: float, int64 or string [1, n] from a map(int64, string or float).
void infer_cast_map(InferContext& ctx) {
  const Node& n = ctx.node();
  const TypeInfo& t = map_input_type(ctx);
  if (t.kind == TypeInfo::Kind::kMap && (t.dtype != DType::kInt64 || (t.elem_dtype() != DType::kString && t.elem_dtype() != DType::kFloat)))
    ctx.fail_node("the input must be map(int64, string) or map(int64, float), got ", t.to_string());
  const std::string to = n.attr_string("cast_to", "TO_FLOAT");
  const DType out = to == "TO_STRING" ? DType::kString : to == "TO_INT64" ? DType::kInt64 : DType::kFloat;
  if (to != "TO_FLOAT" && to != "TO_STRING" && to != "TO_INT64") ctx.fail_node("cast_to '", to, "' (TO_FLOAT, TO_STRING or TO_INT64)");
  const bool sparse = n.attr_string("map_form", "DENSE") == "SPARSE";
  ctx.set_output(0, out, Shape{1, sparse ? n.attr_int("max_map", 1) : ctx.fresh()});
}

/// DictVectorizer: [1, vocabulary] of the map's value type.
void infer_dict_vectorizer(InferContext& ctx) {
  const Node& n = ctx.node();
  const TypeInfo& t = map_input_type(ctx);
  const bool ints = n.has_attr("int64_vocabulary"), strings = n.has_attr("string_vocabulary");
  if (ints == strings) ctx.fail_node("exactly one of int64_vocabulary and string_vocabulary must be set");
  if (t.kind == TypeInfo::Kind::kMap && t.dtype != (ints ? DType::kInt64 : DType::kString))
    ctx.fail_node("the map's keys are ", dtype_name(t.dtype), " but the vocabulary is ", ints ? "int64" : "string");
  // The specification's pairs: string keys to int64, float or double; int64 keys to string,
  // float or double.
  if (t.kind == TypeInfo::Kind::kMap) {
    const DType v = t.elem_dtype();
    const bool ok = v == DType::kFloat || v == DType::kDouble || v == (ints ? DType::kString : DType::kInt64);
    if (!ok) ctx.fail_node("cannot read ", t.to_string(), " (string keys: int64, float or double values; int64 keys: string, float or double)");
  }
  const int64_t size = static_cast<int64_t>(ints ? n.attr_ints("int64_vocabulary").size() : n.attr_strings("string_vocabulary").size());
  const DType out = t.kind == TypeInfo::Kind::kMap ? t.elem_dtype() : DType::kUndefined;
  if (out == DType::kUndefined)
    ctx.set_output_unranked(0, DType::kFloat);
  else
    ctx.set_output(0, out, Shape{1, size});
}

}  // namespace

void register_ml_ops(OpRegistry& r) {
  r.add("ai.onnx.ml", "ArrayFeatureExtractor", {1}, infer_array_feature_extractor);
  r.add("ai.onnx.ml", "Binarizer", {1}, infer_binarizer);
  r.add("ai.onnx.ml", "LabelEncoder", {1, 2, 4}, infer_label_encoder);
  r.add("ai.onnx.ml", "TreeEnsemble", {5}, infer_tree_ensemble);
  r.add("ai.onnx.ml", "TreeEnsembleRegressor", {1, 3}, infer_tree_regressor);
  r.add("ai.onnx.ml", "TreeEnsembleClassifier", {1, 3}, infer_tree_classifier);
  r.add("ai.onnx.ml", "Scaler", {1}, infer_feature_map);
  r.add("ai.onnx.ml", "Normalizer", {1}, infer_feature_map);
  r.add("ai.onnx.ml", "LinearRegressor", {1}, infer_linear_regressor);
  r.add("ai.onnx.ml", "LinearClassifier", {1}, infer_linear_classifier);
  r.add("ai.onnx.ml", "SVMRegressor", {1}, infer_svm_regressor);
  r.add("ai.onnx.ml", "SVMClassifier", {1}, infer_svm_classifier);
  r.add("ai.onnx.ml", "Imputer", {1}, infer_imputer);
  r.add("ai.onnx.ml", "OneHotEncoder", {1}, infer_one_hot_encoder);
  r.add("ai.onnx.ml", "CategoryMapper", {1}, infer_category_mapper);
  r.add("ai.onnx.ml", "FeatureVectorizer", {1}, infer_feature_vectorizer);
  r.add("ai.onnx.ml", "ZipMap", {1}, infer_zip_map);
  r.add("ai.onnx.ml", "CastMap", {1}, infer_cast_map);
  r.add("ai.onnx.ml", "DictVectorizer", {1}, infer_dict_vectorizer);
}

}  // namespace onyx
