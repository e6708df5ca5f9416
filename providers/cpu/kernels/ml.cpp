// CPU kernels: traditional-ML family (domain ai.onnx.ml): ArrayFeatureExtractor, Binarizer,
// LabelEncoder and TreeEnsemble. The attributes are read once, when the kernel is created; the
// tree ensemble is checked there too (every child and leaf index in range, no cycles), so that a
// malformed model is refused before it runs and evaluation can never loop.
#include <cmath>
#include <limits>
#include <unordered_map>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {

namespace {

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
    if (x.dtype() == DType::kString) {
      const std::string* px = x.data<std::string>();
      std::string* pz = z.data<std::string>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < picked; ++j) pz[r * picked + j] = px[r * last + idx[j]];
      return;
    }
    const size_t es = dtype_size(x.dtype());
    const auto* px = static_cast<const unsigned char*>(x.raw_data());
    auto* pz = static_cast<unsigned char*>(z.raw_data());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < picked; ++j) std::memcpy(pz + (r * picked + j) * es, px + (r * last + idx[j]) * es, es);
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
      copy_one(k >= 0 ? t.values : t.fallback, k >= 0 ? k : 0, y, i);
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

  static void copy_one(const Tensor& from, int64_t i, Tensor& to, int64_t j) {
    if (from.dtype() == DType::kString) {
      to.data<std::string>()[j] = from.data<std::string>()[i];
      return;
    }
    const size_t es = dtype_size(from.dtype());
    std::memcpy(static_cast<unsigned char*>(to.raw_data()) + j * es, static_cast<const unsigned char*>(from.raw_data()) + i * es, es);
  }

  const Node& node_;
  LabelTable table_;
};

// ---------------------------------------------------------------------------------------------
// TreeEnsemble (version 5): every tree walked from its root by comparing one feature with the
// node's split (or set), to a leaf; the leaves' weights are aggregated per target (sum, average
// over the trees, min or max) in the input's precision, then post-transformed.

enum class Cmp : uint8_t { kLeq, kLt, kGte, kGt, kEq, kNeq, kMember };

struct TreeNode {
  Cmp mode;
  bool nan_true;     // a NaN feature takes the true branch
  int64_t feature;
  double split;      // or, for kMember, [member_begin, member_end) in TreeModel::members
  int64_t member_begin = 0, member_end = 0;
  int64_t child[2];  // [false, true]: a node index, or ~leaf for a leaf
};

struct TreeModel {
  std::vector<TreeNode> nodes;
  std::vector<int64_t> roots;        // node index, or ~leaf for a tree that is a leaf
  std::vector<double> leaf_weight;
  std::vector<int64_t> leaf_target;
  std::vector<double> members;
  int64_t targets = 0, max_feature = -1;
  int aggregate = 1, post = 0;
};

/// A double attribute tensor's values (float, double or float16).
std::vector<double> doubles_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.element_as_double(i);
  return v;
}

TreeModel build_trees(const Node& n) {
  TreeModel m;
  const std::string where = n.label();
  auto bad = [&](auto&&... parts) { fail(ErrorCode::kInvalidGraph, where, ": ", parts...); };
  const std::vector<int64_t> features = n.attr_ints("nodes_featureids"), truec = n.attr_ints("nodes_truenodeids"),
                             falsec = n.attr_ints("nodes_falsenodeids"), trueleaf = n.attr_ints("nodes_trueleafs"),
                             falseleaf = n.attr_ints("nodes_falseleafs"), nan_true = n.attr_ints("nodes_missing_value_tracks_true");
  const Tensor* modes = n.attr_tensor("nodes_modes");
  const Tensor* splits = n.attr_tensor("nodes_splits");
  const Tensor* weights = n.attr_tensor("leaf_weights");
  if (!modes || !splits || !weights) bad("nodes_modes, nodes_splits and leaf_weights are required");
  const size_t count = features.size();
  if (truec.size() != count || falsec.size() != count || trueleaf.size() != count || falseleaf.size() != count ||
      static_cast<size_t>(modes->numel()) != count || static_cast<size_t>(splits->numel()) != count ||
      (!nan_true.empty() && nan_true.size() != count))
    bad("the nodes_* attributes differ in length");
  m.leaf_weight = doubles_of(*weights);
  m.leaf_target = n.attr_ints("leaf_targetids");
  if (m.leaf_target.size() != m.leaf_weight.size()) bad("leaf_targetids and leaf_weights differ in length");
  m.targets = n.attr_int("n_targets", 0);
  for (size_t l = 0; l < m.leaf_target.size(); ++l)
    if (m.leaf_target[l] < 0 || m.leaf_target[l] >= m.targets)
      bad("leaf ", l, " targets ", m.leaf_target[l], ", outside [0, n_targets = ", m.targets, ")");
  m.aggregate = static_cast<int>(n.attr_int("aggregate_function", 1));
  m.post = static_cast<int>(n.attr_int("post_transform", 0));
  if (m.aggregate < 0 || m.aggregate > 3) bad("aggregate_function ", m.aggregate, " (0 average, 1 sum, 2 min, 3 max)");
  if (m.post < 0 || m.post > 4) bad("post_transform ", m.post, " (0 none, 1 softmax, 2 logistic, 3 softmax_zero, 4 probit)");
  const std::vector<double> split = doubles_of(*splits);
  std::vector<double> members;
  if (const Tensor* mv = n.attr_tensor("membership_values")) members = doubles_of(*mv);
  size_t next_member = 0;  // member sets follow the order of the BRANCH_MEMBER nodes, NaN-separated
  const int64_t leaves = static_cast<int64_t>(m.leaf_weight.size());
  auto child_of = [&](size_t i, int64_t id, int64_t is_leaf, const char* which) -> int64_t {
    if (is_leaf) {
      if (id < 0 || id >= leaves) bad("node ", i, "'s ", which, " leaf ", id, " is out of range (", leaves, " leaves)");
      return ~id;
    }
    if (id < 0 || id >= static_cast<int64_t>(count)) bad("node ", i, "'s ", which, " node ", id, " is out of range (", count, " nodes)");
    return id;
  };
  for (size_t i = 0; i < count; ++i) {
    TreeNode t{};
    const int64_t mode = static_cast<int64_t>(modes->element_as_double(static_cast<int64_t>(i)));
    if (mode < 0 || mode > 6) bad("node ", i, " has mode ", mode, " (0..6)");
    t.mode = static_cast<Cmp>(mode);
    t.nan_true = !nan_true.empty() && nan_true[i] != 0;
    t.feature = features[i];
    if (t.feature < 0) bad("node ", i, " reads feature ", t.feature);
    m.max_feature = std::max(m.max_feature, t.feature);
    t.split = split[i];
    if (t.mode == Cmp::kMember) {
      t.member_begin = static_cast<int64_t>(m.members.size());
      if (next_member >= members.size()) bad("node ", i, " tests set membership but membership_values has no set left for it");
      while (next_member < members.size() && !std::isnan(members[next_member])) m.members.push_back(members[next_member++]);
      ++next_member;  // the NaN ending the set (or the end)
      t.member_end = static_cast<int64_t>(m.members.size());
    }
    t.child[0] = child_of(i, falsec[i], falseleaf[i], "false");
    t.child[1] = child_of(i, truec[i], trueleaf[i], "true");
    m.nodes.push_back(t);
  }
  for (int64_t r : n.attr_ints("tree_roots")) {
    if (r < 0 || r >= static_cast<int64_t>(count)) bad("tree root ", r, " is out of range (", count, " nodes)");
    m.roots.push_back(r);
  }
  if (m.roots.empty()) bad("tree_roots is empty");
  // No cycles: walking down from any root meets each node at most once per path, so a path is
  // at most `count` nodes long. Checked by depth-first search with colours.
  std::vector<uint8_t> state(count, 0);  // 0 unseen, 1 on the current path, 2 done
  for (int64_t r : m.roots) {
    std::vector<std::pair<int64_t, int>> stack{{r, 0}};
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next == 0) {
        if (state[node] == 1) bad("the trees have a cycle through node ", node);
        if (state[node] == 2) {
          stack.pop_back();
          continue;
        }
        state[node] = 1;
      }
      if (next < 2) {
        const int64_t c = m.nodes[node].child[next++];
        if (c >= 0) {
          if (state[c] == 1) bad("the trees have a cycle through node ", c);
          if (state[c] == 0) stack.emplace_back(c, 0);
        }
        continue;
      }
      state[node] = 2;
      stack.pop_back();
    }
  }
  return m;
}

/// The standard normal quantile of p, sqrt(2) erfinv(2p - 1): Winitzki's closed-form estimate of
/// erfinv refined by Newton's method on erf.
double probit(double p) {
  if (!(p > 0)) return p == 0 ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  if (p >= 1) return p == 1 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
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

class TreeEnsembleKernel final : public Kernel {
 public:
  explicit TreeEnsembleKernel(const KernelCreateInfo& info) : model_(build_trees(info.node)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() != 2) fail(ErrorCode::kInvalidArgument, "X must be 2-D [N, features], got ", x.shape().to_string());
    const int64_t N = x.dim(0), F = x.dim(1), T = model_.targets;
    if (model_.max_feature >= F)
      fail(ErrorCode::kInvalidArgument, "the trees read feature ", model_.max_feature, " but X has ", F, " features");
    Tensor& y = ctx.allocate_output(0, x.dtype(), Shape{N, T});
    const DType dt = x.dtype();
    // Rounds to the input's precision: the aggregation runs in it.
    auto rnd = [dt](double v) {
      if (dt == DType::kFloat) return static_cast<double>(static_cast<float>(v));
      if (dt == DType::kFloat16) return static_cast<double>(static_cast<float>(Float16(static_cast<float>(v))));
      return v;
    };
    const double lowest = dt == DType::kDouble ? std::numeric_limits<double>::lowest()
                          : dt == DType::kFloat ? static_cast<double>(std::numeric_limits<float>::lowest())
                                                : -65504.0;
    const double trees = static_cast<double>(model_.roots.size());
    std::vector<double> row(static_cast<size_t>(F)), acc(static_cast<size_t>(T));
    for (int64_t b = 0; b < N; ++b) {
      for (int64_t f = 0; f < F; ++f) row[f] = x.element_as_double(b * F + f);
      const int agg = model_.aggregate;
      std::fill(acc.begin(), acc.end(), agg == 2 ? -lowest : agg == 3 ? lowest : 0.0);
      for (int64_t root : model_.roots) {
        const int64_t leaf = walk(root, row);
        const double w = model_.leaf_weight[leaf];
        double& a = acc[model_.leaf_target[leaf]];
        switch (agg) {
          case 0: a = rnd(a + rnd(w / trees)); break;
          case 1: a = rnd(a + w); break;
          case 2: a = std::min(a, w); break;
          default: a = std::max(a, w); break;
        }
      }
      post_transform(acc);
      for (int64_t t = 0; t < T; ++t) put(y, b * T + t, acc[t]);
    }
  }

 private:
  int64_t walk(int64_t node, const std::vector<double>& x) const {
    while (true) {
      const TreeNode& t = model_.nodes[node];
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
            for (int64_t i = t.member_begin; i < t.member_end; ++i) go |= v == model_.members[i];
        }
      }
      const int64_t c = t.child[go ? 1 : 0];
      if (c < 0) return ~c;
      node = c;
    }
  }

  void post_transform(std::vector<double>& a) const {
    switch (model_.post) {
      case 1: case 3: {  // softmax (3: zeros stay zero and take no share)
        const bool skip_zero = model_.post == 3;
        double mx = -std::numeric_limits<double>::infinity();
        for (double v : a)
          if (!(skip_zero && v == 0)) mx = std::max(mx, v);
        double sum = 0;
        for (double& v : a) {
          if (skip_zero && v == 0) continue;
          v = std::exp(v - mx);
          sum += v;
        }
        for (double& v : a)
          if (!(skip_zero && v == 0)) v /= sum;
        break;
      }
      case 2:
        for (double& v : a) v = 1 / (1 + std::exp(-v));
        break;
      case 4:
        for (double& v : a) v = probit(v);
        break;
      default: break;
    }
  }

  static void put(Tensor& y, int64_t i, double v) {
    switch (y.dtype()) {
      case DType::kFloat: y.data<float>()[i] = static_cast<float>(v); break;
      case DType::kDouble: y.data<double>()[i] = v; break;
      default: y.data<Float16>()[i] = Float16(static_cast<float>(v)); break;
    }
  }

  TreeModel model_;
};

std::unique_ptr<Kernel> make_array_feature_extractor(const KernelCreateInfo&) {
  return std::make_unique<ArrayFeatureExtractorKernel>();
}
std::unique_ptr<Kernel> make_binarizer(const KernelCreateInfo& info) { return std::make_unique<BinarizerKernel>(info); }
std::unique_ptr<Kernel> make_label_encoder(const KernelCreateInfo& info) { return std::make_unique<LabelEncoderKernel>(info); }
std::unique_ptr<Kernel> make_tree_ensemble(const KernelCreateInfo& info) { return std::make_unique<TreeEnsembleKernel>(info); }

constexpr TypeMask kFeatureTypes =
    type_mask({DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32, DType::kString});
constexpr TypeMask kLabelTypes =
    type_mask({DType::kString, DType::kInt64, DType::kFloat, DType::kInt32, DType::kInt16, DType::kDouble});

const KernelDef kDefs[] = {
    {"ai.onnx.ml", "ArrayFeatureExtractor", 1, 99, {{0, kFeatureTypes}}, make_array_feature_extractor},
    {"ai.onnx.ml", "Binarizer", 1, 99, {{0, type_mask({DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32})}},
     make_binarizer},
    {"ai.onnx.ml", "LabelEncoder", 1, 99, {{0, kLabelTypes}}, make_label_encoder},
    {"ai.onnx.ml", "TreeEnsemble", 5, 99, {{0, type_mask({DType::kFloat, DType::kDouble, DType::kFloat16})}}, make_tree_ensemble},
};

}  // namespace

std::span<const KernelDef> ml_kernels() { return kDefs; }

}  // namespace onyx::cpu
