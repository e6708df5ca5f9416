// CPU kernels: tree ensembles of the ai.onnx.ml domain, TreeEnsemble (version 5),
// TreeEnsembleRegressor and TreeEnsembleClassifier (versions 1 and 3). All are read into one model when the kernel is
// created: interior nodes comparing one feature with a split (or a set), leaves holding votes
// (target, weight). Building checks every index (children, leaves, targets, membership sets) and
// that no path loops, so a malformed ensemble is refused before it runs and a walk always ends.
//
// Evaluation: each tree walked from its root to a leaf; the leaf's votes aggregated per target
// (sum, average over the trees, min or max) in the precision the operator computes in; base
// values added; then the post-transform. A target no vote reaches: for TreeEnsemble, 0 for sum
// and average and the type's largest (min) or lowest (max) finite value, plus the base, as onnx's
// reference computes it; for TreeEnsembleRegressor 0, without the base, as ONNX Runtime does.
#include <cmath>
#include <limits>
#include <algorithm>
#include <map>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/ml_common.hpp"

namespace onyx::cpu {

namespace {

enum class Cmp : uint8_t { kLeq, kLt, kGte, kGt, kEq, kNeq, kMember };

struct TreeNode {
  Cmp mode = Cmp::kLeq;
  bool nan_true = false;  // a NaN feature takes the true branch
  int64_t feature = 0;
  double split = 0;
  int64_t member_begin = 0, member_end = 0;  // kMember: the set, in TreeModel::members
  int64_t child[2] = {0, 0};                 // [false, true]: a node index, or ~leaf
};

struct Vote {
  int64_t target;
  double weight;
};

struct TreeModel {
  std::vector<TreeNode> nodes;
  std::vector<int64_t> roots;  // per tree: a node index, or ~leaf for a tree that is one leaf
  std::vector<std::vector<Vote>> leaves;
  std::vector<double> members;
  std::vector<double> base;  // per target, or empty
  int64_t targets = 0, max_feature = -1;
  enum Aggregate : int { kAverage, kSum, kMin, kMax } aggregate = kSum;
  ml::Post post = ml::Post::kNone;
  DType acc = DType::kFloat;  // the precision of the aggregation
  DType out = DType::kFloat;  // the output's element type
  bool average_per_vote = false;  // average: each weight / trees added (TreeEnsemble) vs sum / trees
  bool unreached_zero = false;    // a target no vote reaches is 0, base value or not (ONNX Runtime's regressor)
  bool classifier = false;        // TreeEnsembleClassifier: sums per class, finished by TreeClassifierKernel
};

std::vector<double> doubles_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.element_as_double(i);
  return v;
}

/// A float list attribute, or its double `_as_tensor` form (version 3); empty when neither is set.
std::vector<double> floats_or_tensor(const Node& n, const std::string& name, bool* as_tensor = nullptr) {
  if (const Tensor* t = n.attr_tensor(name + "_as_tensor")) {
    if (as_tensor) *as_tensor = true;
    return doubles_of(*t);
  }
  std::vector<double> v;
  for (float f : n.attr_floats(name)) v.push_back(static_cast<double>(f));
  return v;
}

/// Every path from a root ends at a leaf within as many steps as there are nodes: checked by a
/// depth-first search that refuses to meet a node already on the current path.
void check_acyclic(const Node& n, const TreeModel& m) {
  std::vector<uint8_t> state(m.nodes.size(), 0);  // 0 unseen, 1 on the path, 2 done
  for (int64_t r : m.roots) {
    if (r < 0 || state[r] == 2) continue;
    state[r] = 1;
    std::vector<std::pair<int64_t, int>> stack{{r, 0}};
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < 2) {
        const int64_t c = m.nodes[node].child[next++];
        if (c < 0 || state[c] == 2) continue;
        if (state[c] == 1) ml::bad_attributes(n, str("the trees have a cycle through node ", c));
        state[c] = 1;
        stack.emplace_back(c, 0);
        continue;
      }
      state[node] = 2;
      stack.pop_back();
    }
  }
}

void check_votes(const Node& n, const TreeModel& m) {
  for (size_t l = 0; l < m.leaves.size(); ++l)
    for (const Vote& v : m.leaves[l])
      if (v.target < 0 || v.target >= m.targets)
        ml::bad_attributes(n, str("leaf ", l, " votes for target ", v.target, ", outside [0, ", m.targets, ")"));
  if (!m.base.empty() && static_cast<int64_t>(m.base.size()) != m.targets && !(m.classifier && m.base.size() == 1))
    ml::bad_attributes(n, str("base_values has ", m.base.size(), " values for ", m.targets, " targets"));
}

// ---- TreeEnsemble (version 5) ----

TreeModel build_tree_ensemble(const Node& n, DType x) {
  TreeModel m;
  const std::vector<int64_t> features = n.attr_ints("nodes_featureids"), truec = n.attr_ints("nodes_truenodeids"),
                             falsec = n.attr_ints("nodes_falsenodeids"), trueleaf = n.attr_ints("nodes_trueleafs"),
                             falseleaf = n.attr_ints("nodes_falseleafs"), nan_true = n.attr_ints("nodes_missing_value_tracks_true");
  const Tensor* modes = n.attr_tensor("nodes_modes");
  const Tensor* splits = n.attr_tensor("nodes_splits");
  const Tensor* weights = n.attr_tensor("leaf_weights");
  if (!modes || !splits || !weights) ml::bad_attributes(n, "nodes_modes, nodes_splits and leaf_weights are required");
  const size_t count = features.size();
  if (truec.size() != count || falsec.size() != count || trueleaf.size() != count || falseleaf.size() != count ||
      static_cast<size_t>(modes->numel()) != count || static_cast<size_t>(splits->numel()) != count ||
      (!nan_true.empty() && nan_true.size() != count))
    ml::bad_attributes(n, "the nodes_* attributes differ in length");
  const std::vector<double> w = doubles_of(*weights);
  const std::vector<int64_t> targets = n.attr_ints("leaf_targetids");
  if (targets.size() != w.size()) ml::bad_attributes(n, "leaf_targetids and leaf_weights differ in length");
  for (size_t l = 0; l < w.size(); ++l) m.leaves.push_back({Vote{targets[l], w[l]}});
  m.targets = n.attr_int("n_targets", 0);
  const int64_t agg = n.attr_int("aggregate_function", 1), post = n.attr_int("post_transform", 0);
  if (agg < 0 || agg > 3) ml::bad_attributes(n, str("aggregate_function ", agg, " (0 average, 1 sum, 2 min, 3 max)"));
  if (post < 0 || post > 4) ml::bad_attributes(n, str("post_transform ", post, " (0 none, 1 softmax, 2 logistic, 3 softmax_zero, 4 probit)"));
  m.aggregate = static_cast<TreeModel::Aggregate>(agg);
  m.post = static_cast<ml::Post>(post);
  m.acc = m.out = x;
  m.average_per_vote = true;
  const std::vector<double> split = doubles_of(*splits);
  std::vector<double> members;
  if (const Tensor* mv = n.attr_tensor("membership_values")) members = doubles_of(*mv);
  size_t next_member = 0;  // sets follow the order of the BRANCH_MEMBER nodes, NaN-separated
  const int64_t leaves = static_cast<int64_t>(m.leaves.size());
  auto child_of = [&](size_t i, int64_t id, int64_t is_leaf, const char* which) -> int64_t {
    if (is_leaf) {
      if (id < 0 || id >= leaves) ml::bad_attributes(n, str("node ", i, "'s ", which, " leaf ", id, " is out of range (", leaves, " leaves)"));
      return ~id;
    }
    if (id < 0 || id >= static_cast<int64_t>(count))
      ml::bad_attributes(n, str("node ", i, "'s ", which, " node ", id, " is out of range (", count, " nodes)"));
    return id;
  };
  for (size_t i = 0; i < count; ++i) {
    TreeNode t;
    const int64_t mode = static_cast<int64_t>(modes->element_as_double(static_cast<int64_t>(i)));
    if (mode < 0 || mode > 6) ml::bad_attributes(n, str("node ", i, " has mode ", mode, " (0..6)"));
    t.mode = static_cast<Cmp>(mode);
    t.nan_true = !nan_true.empty() && nan_true[i] != 0;
    t.feature = features[i];
    t.split = split[i];
    if (t.mode == Cmp::kMember) {
      t.member_begin = static_cast<int64_t>(m.members.size());
      if (next_member >= members.size())
        ml::bad_attributes(n, str("node ", i, " tests set membership but membership_values has no set left for it"));
      while (next_member < members.size() && !std::isnan(members[next_member])) m.members.push_back(members[next_member++]);
      ++next_member;  // the NaN ending the set (or the end)
      t.member_end = static_cast<int64_t>(m.members.size());
    }
    t.child[0] = child_of(i, falsec[i], falseleaf[i], "false");
    t.child[1] = child_of(i, truec[i], trueleaf[i], "true");
    m.nodes.push_back(t);
  }
  for (int64_t r : n.attr_ints("tree_roots")) {
    if (r < 0 || r >= static_cast<int64_t>(count)) ml::bad_attributes(n, str("tree root ", r, " is out of range (", count, " nodes)"));
    m.roots.push_back(r);
  }
  return m;
}

// ---- TreeEnsembleRegressor (versions 1 and 3) ----

Cmp mode_named(const Node& n, const std::string& s, size_t i, bool* leaf) {
  *leaf = false;
  if (s == "BRANCH_LEQ") return Cmp::kLeq;
  if (s == "BRANCH_LT") return Cmp::kLt;
  if (s == "BRANCH_GTE") return Cmp::kGte;
  if (s == "BRANCH_GT") return Cmp::kGt;
  if (s == "BRANCH_EQ") return Cmp::kEq;
  if (s == "BRANCH_NEQ") return Cmp::kNeq;
  if (s == "LEAF") {
    *leaf = true;
    return Cmp::kLeq;
  }
  ml::bad_attributes(n, str("node ", i, " has mode '", s, "' (BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ or LEAF)"));
}

/// The trees of TreeEnsembleRegressor (votes from target_*) or TreeEnsembleClassifier (votes
/// from class_*, one target per class label: `classes`).
TreeModel build_tree_votes(const Node& n, bool classifier, int64_t classes) {
  TreeModel m;
  const std::string vote = classifier ? "class" : "target";
  const std::vector<int64_t> tree_ids = n.attr_ints("nodes_treeids"), node_ids = n.attr_ints("nodes_nodeids"),
                             features = n.attr_ints("nodes_featureids"), truec = n.attr_ints("nodes_truenodeids"),
                             falsec = n.attr_ints("nodes_falsenodeids"), nan_true = n.attr_ints("nodes_missing_value_tracks_true");
  const std::vector<std::string> modes = n.attr_strings("nodes_modes");
  bool double_splits = false, double_weights = false;
  const std::vector<double> splits = floats_or_tensor(n, "nodes_values", &double_splits);
  const size_t count = tree_ids.size();
  if (node_ids.size() != count || features.size() != count || modes.size() != count || truec.size() != count ||
      falsec.size() != count || splits.size() != count || (!nan_true.empty() && nan_true.size() != count))
    ml::bad_attributes(n, "the nodes_* attributes differ in length");
  if (count == 0) ml::bad_attributes(n, "the ensemble has no nodes");
  // (tree, node id) -> attribute position; leaves are numbered in the order they appear.
  std::map<std::pair<int64_t, int64_t>, size_t> at;
  std::vector<int64_t> leaf_of(count, -1);
  std::vector<int64_t> tree_order;
  for (size_t i = 0; i < count; ++i) {
    if (!at.emplace(std::pair{tree_ids[i], node_ids[i]}, i).second)
      ml::bad_attributes(n, str("tree ", tree_ids[i], " has node ", node_ids[i], " twice"));
    if (std::find(tree_order.begin(), tree_order.end(), tree_ids[i]) == tree_order.end()) tree_order.push_back(tree_ids[i]);
    bool leaf;
    (void)mode_named(n, modes[i], i, &leaf);
    if (leaf) {
      leaf_of[i] = static_cast<int64_t>(m.leaves.size());
      m.leaves.emplace_back();
    }
  }
  // Node indices for the interior nodes only.
  std::vector<int64_t> index_of(count, -1);
  for (size_t i = 0; i < count; ++i)
    if (leaf_of[i] < 0) index_of[i] = static_cast<int64_t>(m.nodes.size()), m.nodes.emplace_back();
  auto ref = [&](size_t i, int64_t child, const char* which) -> int64_t {
    const auto it = at.find({tree_ids[i], child});
    if (it == at.end())
      ml::bad_attributes(n, str("node ", node_ids[i], " of tree ", tree_ids[i], " has ", which, " child ", child, ", which the tree does not have"));
    return leaf_of[it->second] >= 0 ? ~leaf_of[it->second] : index_of[it->second];
  };
  for (size_t i = 0; i < count; ++i) {
    if (leaf_of[i] >= 0) continue;
    TreeNode& t = m.nodes[index_of[i]];
    bool leaf;
    t.mode = mode_named(n, modes[i], i, &leaf);
    t.nan_true = !nan_true.empty() && nan_true[i] != 0;
    t.feature = features[i];
    t.split = splits[i];
    t.child[0] = ref(i, falsec[i], "false");
    t.child[1] = ref(i, truec[i], "true");
  }
  for (int64_t tree : tree_order) {
    const auto it = at.find({tree, 0});
    if (it == at.end()) ml::bad_attributes(n, str("tree ", tree, " has no node 0 (its root)"));
    m.roots.push_back(leaf_of[it->second] >= 0 ? ~leaf_of[it->second] : index_of[it->second]);
  }
  // Votes.
  const std::vector<int64_t> vt = n.attr_ints(vote + "_treeids"), vn = n.attr_ints(vote + "_nodeids"),
                             vid = n.attr_ints(vote + "_ids");
  const std::vector<double> vw = floats_or_tensor(n, vote + "_weights", &double_weights);
  if (vn.size() != vt.size() || vid.size() != vt.size() || vw.size() != vt.size())
    ml::bad_attributes(n, str("the ", vote, "_* attributes differ in length"));
  for (size_t v = 0; v < vt.size(); ++v) {
    const auto it = at.find({vt[v], vn[v]});
    if (it == at.end() || leaf_of[it->second] < 0)
      ml::bad_attributes(n, str("vote ", v, " is for node ", vn[v], " of tree ", vt[v], ", which is not a leaf"));
    m.leaves[leaf_of[it->second]].push_back(Vote{vid[v], vw[v]});
  }
  m.targets = classifier ? classes : n.attr_int("n_targets", 0);
  if (m.targets <= 0) ml::bad_attributes(n, str(classifier ? "the class label count" : "n_targets", " must be positive, got ", m.targets));
  m.base = floats_or_tensor(n, "base_values");
  const std::string agg = classifier ? "SUM" : n.attr_string("aggregate_function", "SUM");
  if (agg == "AVERAGE") m.aggregate = TreeModel::kAverage;
  else if (agg == "SUM") m.aggregate = TreeModel::kSum;
  else if (agg == "MIN") m.aggregate = TreeModel::kMin;
  else if (agg == "MAX") m.aggregate = TreeModel::kMax;
  else ml::bad_attributes(n, str("aggregate_function '", agg, "' (AVERAGE, SUM, MIN or MAX)"));
  m.post = ml::post_attr(n);
  // Weights given as doubles are summed as doubles; the output is float either way.
  m.acc = double_splits || double_weights ? DType::kDouble : DType::kFloat;
  m.out = DType::kFloat;
  m.unreached_zero = true;
  m.classifier = classifier;
  return m;
}

// ---- evaluation ----

double round_as(DType t, double v) {
  if (t == DType::kFloat) return static_cast<double>(static_cast<float>(v));
  if (t == DType::kFloat16) return static_cast<double>(static_cast<float>(Float16(static_cast<float>(v))));
  return v;
}

/// The leaf a row reaches from `node`.
int64_t walk(const TreeModel& m, int64_t node, const std::vector<double>& x) {
  while (node >= 0) {
    const TreeNode& t = m.nodes[node];
    const double v = x[t.feature];
    bool go;
    if (std::isnan(v) && t.nan_true) {
      go = true;
    } else {
      switch (t.mode) {
        case Cmp::kLeq: go = v <= t.split; break;
        case Cmp::kLt: go = v < t.split; break;
        case Cmp::kGte: go = v >= t.split; break;
        case Cmp::kGt: go = v > t.split; break;
        case Cmp::kEq: go = v == t.split; break;
        case Cmp::kNeq: go = v != t.split; break;
        default:
          go = false;
          for (int64_t i = t.member_begin; i < t.member_end; ++i) go |= v == m.members[i];
      }
    }
    node = t.child[go ? 1 : 0];
  }
  return ~node;
}

/// X's rows and features ([N, F], or one row [F]), checked against the features the trees read.
std::pair<int64_t, int64_t> rows_and_features(const Tensor& x, const TreeModel& m) {
  const auto [N, F] = ml::row_shape(x);
  if (m.max_feature >= F) fail(ErrorCode::kInvalidArgument, "the trees read feature ", m.max_feature, " but X has ", F, " features");
  return {N, F};
}

class TreeKernel final : public Kernel {
 public:
  explicit TreeKernel(TreeModel m) : m_(std::move(m)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const auto [N, F] = rows_and_features(x, m_);
    const int64_t T = m_.targets;
    Tensor& y = ctx.allocate_output(0, m_.out, Shape{N, T});
    const DType a = m_.acc;
    const double top = a == DType::kDouble ? std::numeric_limits<double>::max()
                       : a == DType::kFloat ? static_cast<double>(std::numeric_limits<float>::max())
                                            : 65504.0;
    const double trees = static_cast<double>(m_.roots.size());
    std::vector<double> row(static_cast<size_t>(F)), acc(static_cast<size_t>(T));
    std::vector<char> reached(static_cast<size_t>(T));
    for (int64_t b = 0; b < N; ++b) {
      for (int64_t f = 0; f < F; ++f) row[f] = x.element_as_double(b * F + f);
      std::fill(acc.begin(), acc.end(), m_.aggregate == TreeModel::kMin ? top : m_.aggregate == TreeModel::kMax ? -top : 0.0);
      std::fill(reached.begin(), reached.end(), 0);
      for (int64_t root : m_.roots) {
        for (const Vote& v : m_.leaves[walk(m_, root, row)]) {
          reached[v.target] = 1;
          double& s = acc[v.target];
          switch (m_.aggregate) {
            case TreeModel::kAverage: s = m_.average_per_vote ? round_as(a, s + round_as(a, v.weight / trees)) : round_as(a, s + v.weight); break;
            case TreeModel::kSum: s = round_as(a, s + v.weight); break;
            case TreeModel::kMin: s = std::min(s, v.weight); break;
            case TreeModel::kMax: s = std::max(s, v.weight); break;
          }
        }
      }
      for (int64_t t = 0; t < T; ++t) {
        if (m_.unreached_zero && !reached[t]) {
          acc[t] = 0;
          continue;
        }
        if (m_.aggregate == TreeModel::kAverage && !m_.average_per_vote) acc[t] = round_as(a, acc[t] / trees);
        if (!m_.base.empty()) acc[t] = round_as(a, acc[t] + m_.base[t]);
      }
      ml::post_transform(m_.post, acc.data(), acc.size());
      for (int64_t t = 0; t < T; ++t) put(y, b * T + t, acc[t]);
    }
  }


 private:
  static void put(Tensor& y, int64_t i, double v) {
    switch (y.dtype()) {
      case DType::kFloat: y.data<float>()[i] = static_cast<float>(v); break;
      case DType::kDouble: y.data<double>()[i] = v; break;
      default: y.data<Float16>()[i] = Float16(static_cast<float>(v)); break;
    }
  }

  TreeModel m_;
};

// ---- TreeEnsembleClassifier ----
//
// Votes are summed per class (in float, or double for double weights).
// - Binary form: two labels and every vote names the same class id (scikit-learn, LightGBM and
//   XGBoost export binary trees so: the votes score the second label). s is the vote sum plus
//   the base value (the only one, or the one of that id). The scores before the post-transform
//   are [1 - s, s] when every weight is non-negative (probabilities) and the transform is not
//   LOGISTIC, else [-s, s] (margins); the label is the second one when s passes 0.5
//   (probabilities) or 0 (margins). This is what ONNX Runtime computes for NONE and LOGISTIC;
//   SOFTMAX, SOFTMAX_ZERO and PROBIT then run over both scores as the ONNX reference does (ONNX
//   Runtime leaves the scores unchanged under the softmaxes).
// - Otherwise: base values added (a class without votes takes its base value, or 0 without base
//   values), the post-transform runs over all the scores, and the label is the first class of
//   highest score among those with a vote or a base value.
class TreeClassifierKernel final : public Kernel {
 public:
  TreeClassifierKernel(TreeModel m, ml::KeyIndex classes, int64_t binary_id, bool all_positive)
      : m_(std::move(m)), classes_(std::move(classes)), binary_id_(binary_id), all_positive_(all_positive) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const auto [N, F] = rows_and_features(x, m_);
    const int64_t L = m_.targets;
    Tensor& y = ctx.allocate_output(0, classes_.dtype(), Shape{N});
    Tensor* z = ctx.has_output(1) ? &ctx.allocate_output(1, DType::kFloat, Shape{N, L}) : nullptr;
    std::vector<double> row(static_cast<size_t>(F)), s(static_cast<size_t>(L));
    std::vector<char> has(static_cast<size_t>(L));
    for (int64_t b = 0; b < N; ++b) {
      for (int64_t f = 0; f < F; ++f) row[f] = x.element_as_double(b * F + f);
      std::fill(s.begin(), s.end(), 0.0);
      std::fill(has.begin(), has.end(), 0);
      for (int64_t root : m_.roots)
        for (const Vote& v : m_.leaves[walk(m_, root, row)]) {
          s[v.target] = round_as(m_.acc, s[v.target] + v.weight);
          has[v.target] = 1;
        }
      const int64_t label = binary_id_ >= 0 ? finish_binary(s) : finish_many(s, has);
      ml::write_class(y, z, b, label, classes_, s.data(), L);
    }
  }

 private:
  int64_t finish_many(std::vector<double>& s, std::vector<char>& has) const {
    for (size_t k = 0; k < m_.base.size() && k < s.size(); ++k) {
      s[k] = has[k] ? round_as(m_.acc, s[k] + m_.base[k]) : m_.base[k];
      has[k] = 1;
    }
    int64_t best = -1;
    for (size_t c = 0; c < s.size(); ++c)
      if (has[c] && (best < 0 || s[c] > s[best])) best = static_cast<int64_t>(c);
    ml::post_transform(m_.post, s.data(), s.size());
    return best < 0 ? 0 : best;
  }

  int64_t finish_binary(std::vector<double>& s) const {
    double v = s[binary_id_];
    if (m_.base.size() == 1) v += m_.base[0];
    if (m_.base.size() == 2) v += m_.base[binary_id_];
    const bool probabilities = all_positive_ && m_.post != ml::Post::kLogistic;
    s = {probabilities ? 1 - v : -v, v};
    ml::post_transform(m_.post, s.data(), s.size());
    return (all_positive_ ? v > 0.5 : v > 0) ? 1 : 0;
  }

  TreeModel m_;
  ml::KeyIndex classes_;
  int64_t binary_id_;  // the class id of every vote in the binary form, else -1
  bool all_positive_;
};

/// A built model, checked (feature ids, votes, cycles), with max_feature set.
TreeModel checked(const Node& n, TreeModel m) {
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (m.nodes[i].feature < 0) ml::bad_attributes(n, str("a node reads feature ", m.nodes[i].feature));
    m.max_feature = std::max(m.max_feature, m.nodes[i].feature);
  }
  if (m.roots.empty()) ml::bad_attributes(n, "the ensemble has no trees");
  check_votes(n, m);
  check_acyclic(n, m);
  return m;
}

std::unique_ptr<Kernel> make_tree_ensemble(const KernelCreateInfo& info) {
  return std::make_unique<TreeKernel>(checked(info.node, build_tree_ensemble(info.node, info.input_dtype(0))));
}
std::unique_ptr<Kernel> make_tree_regressor(const KernelCreateInfo& info) {
  return std::make_unique<TreeKernel>(checked(info.node, build_tree_votes(info.node, false, 0)));
}
std::unique_ptr<Kernel> make_tree_classifier(const KernelCreateInfo& info) {
  const Node& n = info.node;
  ml::KeyIndex classes(n, "classlabels_int64s", "classlabels_strings");
  TreeModel m = checked(n, build_tree_votes(n, true, classes.size));
  // The binary form: two labels, every vote for one class id.
  const std::vector<int64_t> ids = n.attr_ints("class_ids");
  const bool one_id = !ids.empty() && std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return id == ids[0]; });
  const int64_t binary_id = classes.size == 2 && one_id ? ids[0] : -1;
  bool all_positive = true;
  for (const auto& leaf : m.leaves)
    for (const Vote& v : leaf) all_positive &= v.weight >= 0;
  return std::make_unique<TreeClassifierKernel>(std::move(m), std::move(classes), binary_id, all_positive);
}

const KernelDef kDefs[] = {
    {"ai.onnx.ml", "TreeEnsemble", 5, 99, {{0, type_mask({DType::kFloat, DType::kDouble, DType::kFloat16})}}, make_tree_ensemble},
    {"ai.onnx.ml", "TreeEnsembleRegressor", 1, 99,
     {{0, type_mask({DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32})}}, make_tree_regressor},
    {"ai.onnx.ml", "TreeEnsembleClassifier", 1, 99,
     {{0, type_mask({DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32})}}, make_tree_classifier},
};

}  // namespace

std::span<const KernelDef> ml_tree_kernels() { return kDefs; }

}  // namespace onyx::cpu
