// The ai.onnx.ml operators: what onnx's node tests for the domain leave out (LabelEncoder-1,
// NaN and signed-zero keys, the tree ensemble's aggregations and post-transforms, malformed
// attributes and out-of-range indices), with literals computed by hand.
#include <gtest/gtest.h>

#include "model/tensor_proto.hpp"
#include "one_node.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

/// One ai.onnx.ml node (domain version `ml`) over graph inputs `inputs`, one output of type `out`.
Tensor run_ml(const std::string& op, int64_t ml, const std::vector<In>& inputs, DType out, std::vector<AttrSpec> attrs) {
  GraphSpec g = one_node(op, inputs, {out}, std::move(attrs));
  g.nodes[0].domain = "ai.onnx.ml";
  const std::string m = encode_model(g, 21, 10, {{"ai.onnx.ml", ml}});
  Session s = Session::builder().with_intra_threads(1).commit_from_memory(m.data(), m.size());
  std::vector<std::pair<std::string, Value>> feeds;
  for (const auto& in : inputs)
    if (!in.initializer) feeds.emplace_back(in.name, Value(in.value));
  return s.run(feeds)[0].tensor();
}

std::vector<std::string> strings_of(const Tensor& t) { return {t.data<std::string>(), t.data<std::string>() + t.numel()}; }

/// A tree ensemble: one tree per root; `nodes` gives (feature, split, mode, true, true_is_leaf,
/// false, false_is_leaf) and `leaves` (target, weight).
struct Trees {
  std::vector<int64_t> feature, true_id, true_leaf, false_id, false_leaf, roots, leaf_target;
  std::vector<float> split, leaf_weight, members;
  std::vector<uint8_t> mode;
  int64_t targets = 1, aggregate = 1, post = 0;

  void node(int64_t f, float s, uint8_t m, int64_t t, bool tl, int64_t e, bool el) {
    feature.push_back(f), split.push_back(s), mode.push_back(m);
    true_id.push_back(t), true_leaf.push_back(tl), false_id.push_back(e), false_leaf.push_back(el);
  }
  void leaf(int64_t target, float w) { leaf_target.push_back(target), leaf_weight.push_back(w); }

  std::vector<AttrSpec> attrs() const {
    const auto n = static_cast<int64_t>(mode.size()), l = static_cast<int64_t>(leaf_weight.size());
    std::vector<AttrSpec> a{attr_ints("nodes_featureids", feature),
                            attr_tensor("nodes_splits", f32({n}, split)),
                            attr_tensor("nodes_modes", tensor<uint8_t>({n}, mode)),
                            attr_ints("nodes_truenodeids", true_id),
                            attr_ints("nodes_trueleafs", true_leaf),
                            attr_ints("nodes_falsenodeids", false_id),
                            attr_ints("nodes_falseleafs", false_leaf),
                            attr_ints("tree_roots", roots),
                            attr_ints("leaf_targetids", leaf_target),
                            attr_tensor("leaf_weights", f32({l}, leaf_weight)),
                            attr_int("n_targets", targets),
                            attr_int("aggregate_function", aggregate),
                            attr_int("post_transform", post)};
    if (!members.empty())
      a.push_back(attr_tensor("membership_values", f32({static_cast<int64_t>(members.size())}, members)));
    return a;
  }
};

/// Two stumps over feature 0: tree A gives 1 (x <= 0.5) or 3 to target 0, tree B gives 2 (x < 2)
/// or -4 to target `b_target`.
Trees two_stumps(int64_t b_target) {
  Trees t;
  t.targets = 2;
  t.node(0, 0.5f, 0, 0, true, 1, true);  // node 0: leaf 0 if x <= 0.5 else leaf 1
  t.node(0, 2.0f, 1, 2, true, 3, true);  // node 1: leaf 2 if x < 2 else leaf 3
  t.leaf(0, 1), t.leaf(0, 3), t.leaf(b_target, 2), t.leaf(b_target, -4);
  t.roots = {0, 1};
  return t;
}

/// All outputs of one ai.onnx.ml node with outputs of types `outs`.
std::vector<Tensor> run_ml_all(const std::string& op, const std::vector<In>& inputs, std::vector<DType> outs,
                               std::vector<AttrSpec> attrs) {
  GraphSpec g = one_node(op, inputs, outs, std::move(attrs));
  g.nodes[0].domain = "ai.onnx.ml";
  const std::string m = encode_model(g, 21, 10, {{"ai.onnx.ml", 3}});
  Session s = Session::builder().with_intra_threads(1).commit_from_memory(m.data(), m.size());
  std::vector<std::pair<std::string, Value>> feeds;
  for (const auto& in : inputs) feeds.emplace_back(in.name, Value(in.value));
  std::vector<Tensor> r;
  for (auto& v : s.run(feeds)) r.push_back(v.tensor());
  return r;
}

/// The older tree form (TreeEnsembleRegressor / TreeEnsembleClassifier): two trees over
/// [x0, x1]. Tree 0 sends x0 <= 0.5 to leaf 1, else leaf 2; tree 1 sends x1 < 2 to leaf 1,
/// else leaf 2. `votes` are (tree, leaf node, id, weight).
std::vector<AttrSpec> old_trees(const std::string& vote, const std::vector<std::tuple<int64_t, int64_t, int64_t, float>>& votes) {
  std::vector<int64_t> vt, vn, vid;
  std::vector<float> vw;
  for (const auto& [t, n, id, w] : votes) vt.push_back(t), vn.push_back(n), vid.push_back(id), vw.push_back(w);
  return {attr_ints("nodes_treeids", {0, 0, 0, 1, 1, 1}),
          attr_ints("nodes_nodeids", {0, 1, 2, 0, 1, 2}),
          attr_ints("nodes_featureids", {0, 0, 0, 1, 0, 0}),
          attr_floats("nodes_values", {0.5f, 0, 0, 2, 0, 0}),
          attr_strings("nodes_modes", {"BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LT", "LEAF", "LEAF"}),
          attr_ints("nodes_truenodeids", {1, 0, 0, 1, 0, 0}),
          attr_ints("nodes_falsenodeids", {2, 0, 0, 2, 0, 0}),
          attr_ints(vote + "_treeids", vt),
          attr_ints(vote + "_nodeids", vn),
          attr_ints(vote + "_ids", vid),
          attr_floats(vote + "_weights", vw)};
}

template <class... A>
std::vector<AttrSpec> with(std::vector<AttrSpec> a, A... more) {
  (a.push_back(more), ...);
  return a;
}

// Rows reaching (tree 0, tree 1) leaves: [0, 1] -> (1, 1), [1, 1] -> (2, 1), [1, 5] -> (2, 2).
const Tensor kOldX = f32({3, 2}, {0, 1, 1, 1, 1, 5});

Tensor run_trees(const Trees& t, const Tensor& x) { return run_ml("TreeEnsemble", 5, {{"X", x}}, DType::kFloat, t.attrs()); }

}  // namespace

TEST(MlOps, ArrayFeatureExtractor) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_near(run_ml("ArrayFeatureExtractor", 1, {{"X", x}, {"Y", i64({2}, {2, 0})}}, DType::kFloat, {}), {3, 1, 6, 4});
  // A vector is one row.
  const Tensor v = run_ml("ArrayFeatureExtractor", 1, {{"X", f32({3}, {7, 8, 9})}, {"Y", i64({1}, {1})}}, DType::kFloat, {});
  EXPECT_EQ(v.shape(), (Shape{1, 1}));
  expect_near(v, {8});
  expect_error([&] { run_ml("ArrayFeatureExtractor", 1, {{"X", x}, {"Y", i64({1}, {3})}}, DType::kFloat, {}); },
               "index 3 (Y[0]) is out of range");
}

TEST(MlOps, BinarizerSendsNanToZero) {
  expect_near(run_ml("Binarizer", 1, {{"X", f32({4}, {-1, 0.5f, 2, kNaN})}}, DType::kFloat, {attr_float("threshold", 0.5f)}),
              {0, 0, 1, 0});
  EXPECT_EQ(values<int64_t>(run_ml("Binarizer", 1, {{"X", i64({3}, {-2, 0, 5})}}, DType::kInt64, {})),
            (std::vector<int64_t>{0, 0, 1}));
}

TEST(MlOps, LabelEncoderVersion1) {
  const std::vector<AttrSpec> a{attr_strings("classes_strings", {"cat", "dog", "eel"}), attr_int("default_int64", 99),
                                attr_string("default_string", "none")};
  EXPECT_EQ(values<int64_t>(run_ml("LabelEncoder", 1, {{"X", strings({3}, {"eel", "cow", "cat"})}}, DType::kInt64, a)),
            (std::vector<int64_t>{2, 99, 0}));
  EXPECT_EQ(strings_of(run_ml("LabelEncoder", 1, {{"X", i64({3}, {1, 7, -1})}}, DType::kString, a)),
            (std::vector<std::string>{"dog", "none", "none"}));
}

TEST(MlOps, LabelEncoderFloatKeys) {
  // NaN matches NaN, -0 matches 0, the repeated key 2 maps to its last value, and unmatched
  // elements take the default (-0.0 for floats when not given; here default_string).
  const std::vector<AttrSpec> a{attr_floats("keys_floats", {kNaN, 0.0f, 2.0f, 2.0f}),
                                attr_strings("values_strings", {"nan", "zero", "two-first", "two-last"}),
                                attr_string("default_string", "?")};
  EXPECT_EQ(strings_of(run_ml("LabelEncoder", 2, {{"X", f32({5}, {-0.0f, kNaN, 2, 3, 0})}}, DType::kString, a)),
            (std::vector<std::string>{"zero", "nan", "two-last", "?", "zero"}));
  // int64 -> float with the float default (-0.0).
  const Tensor f = run_ml("LabelEncoder", 2, {{"X", i64({2}, {5, 6})}}, DType::kFloat,
                          {attr_ints("keys_int64s", {5}), attr_floats("values_floats", {1.5f})});
  EXPECT_EQ(values<float>(f)[0], 1.5f);
  EXPECT_TRUE(std::signbit(values<float>(f)[1]) && values<float>(f)[1] == 0.0f);
  // Keys of another type than the input, or two kinds of keys at once, are refused at load.
  expect_error([&] {
    run_ml("LabelEncoder", 2, {{"X", f32({1}, {1})}}, DType::kString, {attr_ints("keys_int64s", {1}), attr_strings("values_strings", {"a"})});
  }, "the input is float but the keys are int64");
  expect_error([&] {
    run_ml("LabelEncoder", 2, {{"X", i64({1}, {1})}}, DType::kString,
           {attr_ints("keys_int64s", {1}), attr_floats("keys_floats", {1}), attr_strings("values_strings", {"a"})});
  }, "exactly one of the keys_* attributes");
}

TEST(MlOps, TreeEnsembleAggregates) {
  const Tensor x = f32({3, 1}, {0, 1, 5});
  // Sum per target: x = 0 -> [1, 2], 1 -> [3, 2], 5 -> [3, -4].
  expect_near(run_trees(two_stumps(1), x), {1, 2, 3, 2, 3, -4});
  // Both trees on target 0: sum, average (each weight / 2), min, max.
  Trees t = two_stumps(0);
  expect_near(run_trees(t, x), {3, 0, 5, 0, -1, 0});
  t.aggregate = 0;
  expect_near(run_trees(t, x), {1.5f, 0, 2.5f, 0, -0.5f, 0});
  t.aggregate = 2;
  expect_near(run_trees(t, x), {1, std::numeric_limits<float>::max(), 2, std::numeric_limits<float>::max(), -4,
                                std::numeric_limits<float>::max()});
  t.aggregate = 3;
  expect_near(run_trees(t, x), {2, std::numeric_limits<float>::lowest(), 3, std::numeric_limits<float>::lowest(), 3,
                                std::numeric_limits<float>::lowest()});
}

TEST(MlOps, TreeEnsemblePostTransforms) {
  const Tensor x = f32({1, 1}, {0});  // scores [1, 2]
  Trees t = two_stumps(1);
  t.post = 1;  // softmax
  const double e = std::exp(1.0);
  expect_near(run_trees(t, x), {static_cast<float>(1 / (1 + e)), static_cast<float>(e / (1 + e))});
  t.post = 2;  // logistic
  expect_near(run_trees(t, x), {static_cast<float>(1 / (1 + std::exp(-1.0))), static_cast<float>(1 / (1 + std::exp(-2.0)))});
  // Probit of probabilities: a lone tree with weights 0.975 and 0.5 gives the normal quantiles.
  Trees p;
  p.node(0, 0.0f, 0, 0, true, 1, true);
  p.leaf(0, 0.975f), p.leaf(0, 0.5f);
  p.roots = {0};
  p.post = 4;
  expect_near(run_ml("TreeEnsemble", 5, {{"X", f32({2, 1}, {0, 1})}}, DType::kFloat, p.attrs()), {1.959964f, 0.0f}, 1e-4f);
}

TEST(MlOps, TreeEnsembleSetMembershipAndNan) {
  // Node 0: x in {1, 4} -> leaf 0 (10), else node 1; node 1: x in {7} -> leaf 1 (20), else leaf 2 (30).
  Trees t;
  t.node(0, 0, 6, 0, true, 1, false);
  t.node(0, 0, 6, 1, true, 2, true);
  t.leaf(0, 10), t.leaf(0, 20), t.leaf(0, 30);
  t.roots = {0};
  t.members = {1, 4, kNaN, 7};
  expect_near(run_trees(t, f32({4, 1}, {4, 7, 2, kNaN})), {10, 20, 30, 30});
  // A NaN feature follows the true branch where nodes_missing_value_tracks_true says so.
  std::vector<AttrSpec> a = t.attrs();
  a.push_back(attr_ints("nodes_missing_value_tracks_true", {0, 1}));
  expect_near(run_ml("TreeEnsemble", 5, {{"X", f32({1, 1}, {kNaN})}}, DType::kFloat, a), {20});
}

TEST(MlOps, TreeEnsembleRefusesMalformedTrees) {
  Trees cyc;  // node 0 -> node 1 -> node 0
  cyc.node(0, 0, 0, 1, false, 0, true);
  cyc.node(0, 0, 0, 0, false, 0, true);
  cyc.leaf(0, 1);
  cyc.roots = {0};
  expect_error([&] { run_trees(cyc, f32({1, 1}, {0})); }, "cycle");
  Trees far = two_stumps(1);
  far.true_id[0] = 9;  // leaf 9 of 4
  expect_error([&] { run_trees(far, f32({1, 1}, {0})); }, "leaf 9 is out of range");
  Trees wide = two_stumps(1);
  wide.feature[1] = 3;  // X has one feature
  expect_error([&] { run_trees(wide, f32({1, 1}, {0})); }, "the trees read feature 3 but X has 1 features");
  Trees members;
  members.node(0, 0, 6, 0, true, 0, true);
  members.leaf(0, 1);
  members.roots = {0};
  expect_error([&] { run_trees(members, f32({1, 1}, {0})); }, "membership_values has no set left");
}

TEST(MlOps, TreeEnsembleRegressorSumsAndAverages) {
  const auto votes = old_trees("target", {{0, 1, 0, 1}, {0, 2, 0, 3}, {1, 1, 0, 2}, {1, 2, 0, -4}});
  // Sums 3, 5, -1; plus the base 0.5.
  expect_near(run_ml_all("TreeEnsembleRegressor", {{"X", kOldX}}, {DType::kFloat},
                         with(votes, attr_floats("base_values", {0.5f}), attr_int("n_targets", 1)))[0],
              {3.5f, 5.5f, -0.5f});
  expect_near(run_ml_all("TreeEnsembleRegressor", {{"X", kOldX}}, {DType::kFloat},
                         with(votes, attr_string("aggregate_function", "AVERAGE"), attr_int("n_targets", 1)))[0],
              {1.5f, 2.5f, -0.5f});
  // A tree whose node points at a node it does not have, a vote on an interior node.
  auto broken = with(votes, attr_int("n_targets", 1));
  broken[5] = attr_ints("nodes_truenodeids", {7, 0, 0, 1, 0, 0});
  expect_error([&] { run_ml_all("TreeEnsembleRegressor", {{"X", kOldX}}, {DType::kFloat}, broken); },
               "node 0 of tree 0 has true child 7, which the tree does not have");
  const auto interior = with(old_trees("target", {{0, 0, 0, 1}}), attr_int("n_targets", 1));
  expect_error([&] { run_ml_all("TreeEnsembleRegressor", {{"X", kOldX}}, {DType::kFloat}, interior); }, "which is not a leaf");
}

TEST(MlOps, TreeEnsembleClassifierBinaryForms) {
  // Probabilities (all weights >= 0) for the second label: 0.15, 0.45, 0.7.
  const auto probs = old_trees("class", {{0, 1, 0, 0.1f}, {0, 2, 0, 0.4f}, {1, 1, 0, 0.05f}, {1, 2, 0, 0.3f}});
  auto out = run_ml_all("TreeEnsembleClassifier", {{"X", kOldX}}, {DType::kInt64, DType::kFloat},
                        with(probs, attr_ints("classlabels_int64s", {0, 1})));
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{0, 0, 1}));
  expect_near(out[1], {0.85f, 0.15f, 0.55f, 0.45f, 0.3f, 0.7f});
  // Margins (weights of both signs) with a base value and LOGISTIC: -0.25, 2.75, -0.75.
  const auto margins = old_trees("class", {{0, 1, 0, -1}, {0, 2, 0, 2}, {1, 1, 0, 0.5f}, {1, 2, 0, -3}});
  out = run_ml_all("TreeEnsembleClassifier", {{"X", kOldX}}, {DType::kString, DType::kFloat},
                   with(margins, attr_strings("classlabels_strings", {"no", "yes"}), attr_floats("base_values", {0.25f}),
                        attr_string("post_transform", "LOGISTIC")));
  EXPECT_EQ(strings_of(out[0]), (std::vector<std::string>{"no", "yes", "no"}));
  expect_near(out[1], {0.5621765f, 0.4378235f, 0.0600867f, 0.9399133f, 0.6791787f, 0.3208213f});
}

TEST(MlOps, TreeEnsembleClassifierManyClasses) {
  // Scores [1, 0, 0.5], [0, 1, 0.5], [0, 1.5, 0]: the first class of highest score wins.
  const auto votes = old_trees("class", {{0, 1, 0, 1}, {0, 2, 1, 1}, {1, 1, 2, 0.5f}, {1, 2, 1, 0.5f}});
  auto out = run_ml_all("TreeEnsembleClassifier", {{"X", kOldX}}, {DType::kString, DType::kFloat},
                        with(votes, attr_strings("classlabels_strings", {"a", "b", "c"})));
  EXPECT_EQ(strings_of(out[0]), (std::vector<std::string>{"a", "b", "b"}));
  expect_near(out[1], {1, 0, 0.5f, 0, 1, 0.5f, 0, 1.5f, 0});
  out = run_ml_all("TreeEnsembleClassifier", {{"X", f32({1, 2}, {0, 1})}}, {DType::kInt64, DType::kFloat},
                   with(votes, attr_ints("classlabels_int64s", {7, 8, 9}), attr_string("post_transform", "SOFTMAX")));
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{7}));
  expect_near(out[1], {0.5064804f, 0.1863237f, 0.3071959f});
  // Labels of both kinds, or a vote for a class beyond the labels, are refused at load.
  expect_error([&] {
    run_ml_all("TreeEnsembleClassifier", {{"X", kOldX}}, {DType::kInt64, DType::kFloat},
               with(votes, attr_ints("classlabels_int64s", {1, 2, 3}), attr_strings("classlabels_strings", {"a", "b", "c"})));
  }, "exactly one of classlabels_int64s and classlabels_strings");
  expect_error([&] {
    run_ml_all("TreeEnsembleClassifier", {{"X", kOldX}}, {DType::kInt64, DType::kFloat},
               with(votes, attr_ints("classlabels_int64s", {1, 2})));
  }, "votes for target 2, outside [0, 2)");
}

TEST(MlOps, LinearRegressorAndClassifier) {
  expect_near(run_ml_all("LinearRegressor", {{"X", f32({2, 2}, {1, 1, 0, 2})}}, {DType::kFloat},
                         {attr_floats("coefficients", {1, 2, 3, 4}), attr_floats("intercepts", {0.5f, -1}), attr_int("targets", 2)})[0],
              {3.5f, 6, 4.5f, 7});
  expect_error([&] {
    run_ml_all("LinearRegressor", {{"X", f32({1, 2}, {1, 1})}}, {DType::kFloat},
               {attr_floats("coefficients", {1, 2, 3}), attr_int("targets", 2)});
  }, "3 coefficients do not divide into 2 rows");
  expect_error([&] {
    run_ml_all("LinearRegressor", {{"X", f32({1, 3}, {1, 1, 1})}}, {DType::kFloat},
               {attr_floats("coefficients", {1, 2, 3, 4}), attr_int("targets", 2)});
  }, "X has 3 features but the coefficients are 2 rows of 2");
  // Three classes: scores [2, 1, 2] (a tie: the first wins) and [0, 3, 2].
  const std::vector<AttrSpec> three{attr_floats("coefficients", {1, 0, 0, 1, 1, 1}), attr_floats("intercepts", {0, 0, -1}),
                                    attr_strings("classlabels_strings", {"a", "b", "c"}), attr_string("post_transform", "SOFTMAX")};
  auto out = run_ml_all("LinearClassifier", {{"X", f32({2, 2}, {2, 1, 0, 3})}}, {DType::kString, DType::kFloat}, three);
  EXPECT_EQ(strings_of(out[0]), (std::vector<std::string>{"a", "b"}));
  expect_near(out[1], {0.4223188f, 0.1553624f, 0.4223188f, 0.0351190f, 0.7053845f, 0.2594965f});
  // Binary: one row of coefficients; s = -1.5 gives [1 - s, s], or with LOGISTIC p = logistic(s).
  std::vector<AttrSpec> two{attr_floats("coefficients", {1, -1}), attr_floats("intercepts", {0.5f}), attr_ints("classlabels_ints", {-1, 1})};
  out = run_ml_all("LinearClassifier", {{"X", f32({1, 2}, {1, 3})}}, {DType::kInt64, DType::kFloat}, two);
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{-1}));
  expect_near(out[1], {2.5f, -1.5f});
  two.push_back(attr_string("post_transform", "LOGISTIC"));
  out = run_ml_all("LinearClassifier", {{"X", f32({1, 2}, {1, 3})}}, {DType::kInt64, DType::kFloat}, two);
  expect_near(out[1], {0.8175745f, 0.1824255f});
  expect_error([&] {
    run_ml_all("LinearClassifier", {{"X", f32({1, 2}, {1, 3})}}, {DType::kInt64, DType::kFloat},
               {attr_floats("coefficients", {1, -1, 2, 2}), attr_floats("intercepts", {0, 0}), attr_ints("classlabels_ints", {1, 2, 3})});
  }, "2 rows of coefficients (intercepts) for 3 class labels");
}

TEST(MlOps, ScalerAndNormalizer) {
  // (x - offset) * scale with one scale for all features; int64 input gives float.
  expect_near(run_ml_all("Scaler", {{"X", i64({2, 2}, {3, 4, 1, 2})}}, {DType::kFloat},
                         {attr_floats("offset", {1, 2}), attr_floats("scale", {2})})[0],
              {4, 4, 0, 0});
  expect_error([&] {
    run_ml_all("Scaler", {{"X", f32({1, 2}, {3, 4})}}, {DType::kFloat}, {attr_floats("offset", {1, 2, 3})});
  }, "offset has 3 values for 2 features");
  const Tensor x = f32({3, 2}, {1, -3, 3, 4, 0, 0});
  expect_near(run_ml_all("Normalizer", {{"X", x}}, {DType::kFloat}, {attr_string("norm", "L1")})[0], {0.25f, -0.75f, 3 / 7.f, 4 / 7.f, 0, 0});
  expect_near(run_ml_all("Normalizer", {{"X", x}}, {DType::kFloat}, {attr_string("norm", "L2")})[0],
              {0.3162278f, -0.9486833f, 0.6f, 0.8f, 0, 0});
  expect_near(run_ml_all("Normalizer", {{"X", x}}, {DType::kFloat}, {attr_string("norm", "MAX")})[0], {1, -3, 0.75f, 1, 0, 0});
  expect_error([&] { run_ml_all("Normalizer", {{"X", x}}, {DType::kFloat}, {attr_string("norm", "L3")}); }, "norm 'L3' (MAX, L1 or L2)");
}

TEST(MlOps, SvmRegressor) {
  // Linear form: x·[1, 2] + 0.5.
  expect_near(run_ml_all("SVMRegressor", {{"X", f32({2, 2}, {1, 1, 2, -1})}}, {DType::kFloat},
                         {attr_floats("coefficients", {1, 2}), attr_floats("rho", {0.5f})})[0],
              {3.5f, 0.5f});
  // RBF (gamma 1) over support vectors [0, 0] and [1, 1] with coefficients 1 and -1:
  // +-(1 - exp(-2)); one_class gives the signs.
  std::vector<AttrSpec> rbf{attr_floats("coefficients", {1, -1}),     attr_floats("rho", {0}),
                            attr_floats("support_vectors", {0, 0, 1, 1}), attr_int("n_supports", 2),
                            attr_string("kernel_type", "RBF"),         attr_floats("kernel_params", {1, 0, 0})};
  const Tensor x = f32({2, 2}, {0, 0, 1, 1});
  expect_near(run_ml_all("SVMRegressor", {{"X", x}}, {DType::kFloat}, rbf)[0], {0.8646647f, -0.8646647f});
  rbf.push_back(attr_int("one_class", 1));
  expect_near(run_ml_all("SVMRegressor", {{"X", x}}, {DType::kFloat}, rbf)[0], {1, -1});
  // POLY (gamma 1, coef0 1, degree 2): 2 (x·[1, 0] + 1)^2 - 1 at x = [1, 2] is 7.
  expect_near(run_ml_all("SVMRegressor", {{"X", f32({1, 2}, {1, 2})}}, {DType::kFloat},
                         {attr_floats("coefficients", {2}), attr_floats("rho", {-1}), attr_floats("support_vectors", {1, 0}),
                          attr_int("n_supports", 1), attr_string("kernel_type", "POLY"), attr_floats("kernel_params", {1, 1, 2})})[0],
              {7});
  expect_error([&] {
    run_ml_all("SVMRegressor", {{"X", x}}, {DType::kFloat},
               {attr_floats("coefficients", {1, -1, 2}), attr_floats("rho", {0}), attr_floats("support_vectors", {0, 0, 1, 1}),
                attr_int("n_supports", 2)});
  }, "3 coefficients for 2 support vectors");
  expect_error([&] {
    run_ml_all("SVMRegressor", {{"X", f32({1, 3}, {1, 2, 3})}}, {DType::kFloat}, {attr_floats("coefficients", {1, 2}), attr_floats("rho", {0})});
  }, "X has 3 features but the model has 2");
}

TEST(MlOps, SvmClassifierOneAgainstOne) {
  // Three classes, one support vector each (1, 2, 3), linear kernel. Decisions at x = 0.5:
  // (a, b) -0.5, (a, c) -1, (b, c) -0.5: votes 0, 1, 2. At x = -1: 1, 2, 1: votes 2, 1, 0.
  const std::vector<AttrSpec> three{attr_floats("coefficients", {1, -1, -1, 1, 1, -1}), attr_floats("rho", {0, 0, 0}),
                                    attr_floats("support_vectors", {1, 2, 3}), attr_ints("vectors_per_class", {1, 1, 1}),
                                    attr_strings("classlabels_strings", {"a", "b", "c"})};
  auto out = run_ml_all("SVMClassifier", {{"X", f32({2, 1}, {0.5f, -1})}}, {DType::kString, DType::kFloat}, three);
  EXPECT_EQ(strings_of(out[0]), (std::vector<std::string>{"c", "a"}));
  expect_near(out[1], {-0.5f, -1, -0.5f, 1, 2, 1});
  // Two classes: the decision d = x - 2x + 0.25 scores [-d, d]; d > 0 votes for the first class.
  std::vector<AttrSpec> two{attr_floats("coefficients", {1, -1}), attr_floats("rho", {0.25f}), attr_floats("support_vectors", {1, 2}),
                            attr_ints("vectors_per_class", {1, 1}), attr_ints("classlabels_ints", {4, 9})};
  const Tensor x = f32({2, 1}, {1, -1});
  out = run_ml_all("SVMClassifier", {{"X", x}}, {DType::kInt64, DType::kFloat}, two);
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{9, 4}));
  expect_near(out[1], {0.75f, -0.75f, -1.25f, 1.25f});
  // With Platt's sigmoid (A = -2, B = 0.5) the first class has 1 / (1 + exp(A d + B)), which
  // pairwise coupling (iterative, stopping within 0.005 / classes, as libsvm's) approaches.
  two.push_back(attr_floats("prob_a", {-2}));
  two.push_back(attr_floats("prob_b", {0.5f}));
  out = run_ml_all("SVMClassifier", {{"X", x}}, {DType::kInt64, DType::kFloat}, two);
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{9, 4}));
  expect_near(out[1], {0.1192029f, 0.8807971f, 0.8807971f, 0.1192029f}, 1e-3f);
  auto short_rho = three;
  short_rho[1] = attr_floats("rho", {0, 0});
  expect_error([&] { run_ml_all("SVMClassifier", {{"X", x}}, {DType::kString, DType::kFloat}, short_rho); },
               "rho has 2 values for 3 class pairs");
  auto cubic = three;
  cubic.push_back(attr_string("kernel_type", "CUBIC"));
  expect_error([&] { run_ml_all("SVMClassifier", {{"X", x}}, {DType::kString, DType::kFloat}, cubic); },
               "kernel_type 'CUBIC' (LINEAR, POLY, RBF or SIGMOID)");
}

TEST(MlOps, ImputerAndOneHotEncoder) {
  // NaN replaced per feature; an int64 input uses the int64 attributes.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_near(run_ml_all("Imputer", {{"X", f32({2, 2}, {1, nan, nan, 4})}}, {DType::kFloat},
                         {attr_floats("imputed_value_floats", {9, 8}), attr_float("replaced_value_float", nan)})[0],
              {1, 8, 9, 4});
  EXPECT_EQ(values<int64_t>(run_ml_all("Imputer", {{"X", i64({3}, {-1, 2, -1})}}, {DType::kInt64},
                                       {attr_ints("imputed_value_int64s", {0}), attr_int("replaced_value_int64", -1)})[0]),
            (std::vector<int64_t>{0, 2, 0}));
  expect_error([&] {
    run_ml_all("Imputer", {{"X", f32({1, 3}, {1, 2, 3})}}, {DType::kFloat}, {attr_floats("imputed_value_floats", {9, 8})});
  }, "2 imputed values for 3 features");
  // A category per column; numbers match as integers (1.7 is 1); an unknown one is all zeros.
  expect_near(run_ml_all("OneHotEncoder", {{"X", f32({3}, {1.7f, 5, 7})}}, {DType::kFloat}, {attr_ints("cats_int64s", {7, 1, 3})})[0],
              {0, 1, 0, 0, 0, 0, 1, 0, 0});
  expect_near(run_ml_all("OneHotEncoder", {{"X", strings({2}, {"b", "a"})}}, {DType::kFloat}, {attr_strings("cats_strings", {"a", "b"})})[0],
              {0, 1, 1, 0});
  expect_error([&] {
    run_ml_all("OneHotEncoder", {{"X", strings({1}, {"q"})}}, {DType::kFloat}, {attr_strings("cats_strings", {"a"}), attr_int("zeros", 0)});
  }, "element 0 of X is in no category");
}

TEST(MlOps, CategoryMapperAndFeatureVectorizer) {
  const std::vector<AttrSpec> cats{attr_strings("cats_strings", {"a", "b"}), attr_ints("cats_int64s", {5, 6}),
                                   attr_string("default_string", "?")};
  EXPECT_EQ(values<int64_t>(run_ml_all("CategoryMapper", {{"X", strings({3}, {"b", "z", "a"})}}, {DType::kInt64}, cats)[0]),
            (std::vector<int64_t>{6, -1, 5}));
  EXPECT_EQ(strings_of(run_ml_all("CategoryMapper", {{"X", i64({2}, {5, 7})}}, {DType::kString}, cats)[0]),
            (std::vector<std::string>{"a", "?"}));
  // Widths 1 and 3: the first input's first column, the second's two columns and a zero.
  expect_near(run_ml_all("FeatureVectorizer", {{"A", f32({2, 2}, {1, 2, 3, 4})}, {"B", f32({2, 2}, {5, 6, 7, 8})}}, {DType::kFloat},
                         {attr_ints("inputdimensions", {1, 3})})[0],
              {1, 5, 6, 0, 3, 7, 8, 0});
  expect_error([&] {
    run_ml_all("FeatureVectorizer", {{"A", f32({2, 2}, {1, 2, 3, 4})}, {"B", f32({1, 2}, {5, 6})}}, {DType::kFloat},
               {attr_ints("inputdimensions", {2, 2})});
  }, "input 1 has 1 rows, input 0 has 2");
}

namespace {

/// One ai.onnx.ml node over a graph input `in` (its type as declared), one output `out`; runs it
/// on `feed`.
Value run_ml_value(const std::string& op, ValueSpec in, ValueSpec out, std::vector<AttrSpec> attrs, Value feed) {
  GraphSpec g;
  NodeSpec n{op, {in.name}, {out.name}, std::move(attrs), "node"};
  n.domain = "ai.onnx.ml";
  g.nodes.push_back(n);
  g.inputs.push_back(in);
  g.outputs.push_back(out);
  const std::string m = encode_model(g, 17, 8, {{"ai.onnx.ml", 1}});
  Session s = Session::builder().with_intra_threads(1).commit_from_memory(m.data(), m.size());
  return s.run({{in.name, std::move(feed)}})[0];
}

ValueSpec map_spec(const std::string& name, DType key, DType value) {
  ValueSpec v{name, value};
  v.no_shape = true;
  v.map_key = key;
  return v;
}

}  // namespace

TEST(MlOps, ZipMapMakesASequenceOfMaps) {
  ValueSpec out{"Z", DType::kFloat};
  out.no_shape = true;
  out.map_key = DType::kString;
  out.sequence = true;
  const Value z = run_ml_value("ZipMap", {"X", DType::kFloat, {2, 3}}, out, {attr_strings("classlabels_strings", {"a", "b", "c"})},
                               Value(f32({2, 3}, {0.1f, 0.2f, 0.7f, 0.5f, 0.5f, 0})));
  ASSERT_TRUE(z.is_sequence() && z.sequence_of_maps());
  ASSERT_EQ(z.maps().size(), 2u);
  EXPECT_EQ(strings_of(z.maps()[1].map_keys()), (std::vector<std::string>{"a", "b", "c"}));
  expect_near(z.maps()[1].map_values(), {0.5f, 0.5f, 0});
  expect_near(z.maps()[0].map_values(), {0.1f, 0.2f, 0.7f});
  // The session reports the output's type.
  GraphSpec g = one_node("ZipMap", {{"X", f32({1, 2}, {0, 1})}}, {DType::kFloat}, {attr_ints("classlabels_int64s", {4, 2})});
  g.nodes[0].domain = "ai.onnx.ml";
  g.outputs[0].map_key = DType::kInt64;
  g.outputs[0].sequence = true;
  g.inputs[0].no_shape = true;  // so that a row of 3 reaches the kernel
  const std::string m = encode_model(g, 17, 8, {{"ai.onnx.ml", 1}});
  Session s = Session::builder().commit_from_memory(m.data(), m.size());
  EXPECT_EQ(s.outputs()[0].type_string, "seq(map(int64, float))");
  expect_error([&] { s.run({{"X", Value(f32({1, 3}, {0, 1, 2}))}}); }, "X has 3 columns for 2 class labels");
}

TEST(MlOps, DictVectorizerAndCastMapReadMaps) {
  // Vocabulary [a, b, c]: c and a are present, z is not in the vocabulary.
  const Value m = Value::map(strings({3}, {"c", "a", "z"}), f32({3}, {3.5f, 1, 9}));
  expect_near(run_ml_value("DictVectorizer", map_spec("M", DType::kString, DType::kFloat), any_out("Y"),
                           {attr_strings("string_vocabulary", {"a", "b", "c"})}, m)
                  .tensor(),
              {1, 0, 3.5f});
  // CastMap: dense in key order, or sparse over [0, max_map) with zeros where a key is missing.
  const Value im = Value::map(i64({2}, {3, 1}), f32({2}, {1.5f, 2.5f}));
  const ValueSpec in = map_spec("M", DType::kInt64, DType::kFloat);
  expect_near(run_ml_value("CastMap", in, any_out("Y"), {}, im).tensor(), {2.5f, 1.5f});
  expect_near(run_ml_value("CastMap", in, any_out("Y"), {attr_string("map_form", "SPARSE"), attr_int("max_map", 5)}, im).tensor(),
              {0, 2.5f, 0, 1.5f, 0});
  const Value sm = Value::map(i64({2}, {3, 1}), strings({2}, {"7", "-2"}));
  EXPECT_EQ(values<int64_t>(run_ml_value("CastMap", map_spec("M", DType::kInt64, DType::kString), any_out("Y", DType::kInt64),
                                         {attr_string("cast_to", "TO_INT64")}, sm)
                                .tensor()),
            (std::vector<int64_t>{-2, 7}));
  // A value that is not a number, a key beyond max_map, a map of the wrong key type.
  expect_error([&] {
    run_ml_value("CastMap", map_spec("M", DType::kInt64, DType::kString), any_out("Y"), {},
                 Value::map(i64({1}, {0}), strings({1}, {"x1"})));
  }, "map value 'x1' is not a number");
  expect_error([&] {
    run_ml_value("CastMap", in, any_out("Y"), {attr_string("map_form", "SPARSE"), attr_int("max_map", 2)}, im);
  }, "key 3 is outside [0, max_map = 2)");
  expect_error([&] { run_ml_value("CastMap", in, any_out("Y"), {}, m); }, "must be a map(int64, float)");
  expect_error([&] { Value::map(i64({2}, {1, 2}), f32({3}, {1, 2, 3})); }, "must be 1-D of one length");
}

TEST(MlOps, MapsRoundTripThroughFiles) {
  // What `onyx run --save` writes and `--inputs` reads: a sequence of maps, and a map.
  const std::string dir = ::testing::TempDir();
  std::vector<Value> maps{Value::map(i64({2}, {4, 2}), f32({2}, {0.25f, 0.75f})), Value::map(i64({2}, {4, 2}), f32({2}, {1, 0}))};
  write_value_file(dir + "/seq.pb", Value::sequence_of_maps(maps, DType::kInt64, DType::kFloat), "probs");
  const TypeInfo seq_type = TypeInfo::sequence_of(TypeInfo::map_of(DType::kInt64, TypeInfo::tensor(DType::kFloat)));
  std::string name;
  const Value back = read_value_file(dir + "/seq.pb", &seq_type, &name);
  EXPECT_EQ(name, "probs");
  ASSERT_TRUE(back.sequence_of_maps());
  ASSERT_EQ(back.maps().size(), 2u);
  EXPECT_EQ(values<int64_t>(back.maps()[0].map_keys()), (std::vector<int64_t>{4, 2}));
  expect_near(back.maps()[0].map_values(), {0.25f, 0.75f});
  expect_near(back.maps()[1].map_values(), {1, 0});
  write_value_file(dir + "/map.pb", Value::map(strings({2}, {"a", "b"}), strings({2}, {"x", "y"})), "m");
  const TypeInfo map_type = TypeInfo::map_of(DType::kString, TypeInfo::tensor(DType::kString));
  const Value m = read_value_file(dir + "/map.pb", &map_type, nullptr);
  EXPECT_EQ(strings_of(m.map_values()), (std::vector<std::string>{"x", "y"}));
  // A map whose keys are not what the model declares is refused, naming both.
  const TypeInfo int_keys = TypeInfo::map_of(DType::kInt64, TypeInfo::tensor(DType::kString));
  expect_error([&] { read_value_file(dir + "/map.pb", &int_keys, nullptr); }, "the map's keys are string, the model expects int64");
}
