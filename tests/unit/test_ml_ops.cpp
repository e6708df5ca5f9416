// The ai.onnx.ml operators: what onnx's node tests for the domain leave out (LabelEncoder-1,
// NaN and signed-zero keys, the tree ensemble's aggregations and post-transforms, malformed
// attributes and out-of-range indices), with literals computed by hand.
#include <gtest/gtest.h>

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
