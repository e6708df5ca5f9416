// CPU kernels: support vector machines of the ai.onnx.ml domain, SVMRegressor and SVMClassifier
// (version 1), as libsvm and scikit-learn's converters lay them out. The attributes are read and
// checked once, when the kernel is created: every count must fit the support vectors, the
// coefficients, rho and the pairwise probability parameters, so a malformed model is refused
// before it runs. Scores are computed in double.
//
// SVMClassifier has two modes. With support vectors (vectors_per_class), k classes give
// k (k - 1) / 2 one-against-one decisions; decision (i, j) is
//   sum over i's vectors v of coefficients[j - 1][v] K(x, v)
//   + sum over j's vectors v of coefficients[i][v] K(x, v) + rho[(i, j)],
// a vote for i when positive, else for j. The label is the first class of most votes. The scores
// are the decisions (two classes: [-d, d]) or, with prob_a / prob_b, the class probabilities that
// Platt's sigmoids of the decisions give after pairwise coupling (Wu, Lin and Weng's second
// method, as libsvm computes it). Without support vectors the classifier is linear: one row of
// coefficients per class, score x·w + rho[0], the label the first class of highest score.
#include <algorithm>
#include <cmath>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/ml_common.hpp"

namespace onyx::cpu {

namespace {

/// The kernel function: LINEAR x·v, POLY (gamma x·v + coef0)^degree, RBF exp(-gamma |x - v|^2),
/// SIGMOID tanh(gamma x·v + coef0), with kernel_params [gamma, coef0, degree].
struct SvmFunction {
  enum Type { kLinear, kPoly, kRbf, kSigmoid } type = kLinear;
  double gamma = 0, coef0 = 0, degree = 0;

  double operator()(const double* x, const double* v, int64_t f) const {
    double s = 0;
    if (type == kRbf) {
      for (int64_t i = 0; i < f; ++i) s += (x[i] - v[i]) * (x[i] - v[i]);
      return std::exp(-gamma * s);
    }
    for (int64_t i = 0; i < f; ++i) s += x[i] * v[i];
    switch (type) {
      case kPoly: return std::pow(gamma * s + coef0, degree);
      case kSigmoid: return std::tanh(gamma * s + coef0);
      default: return s;
    }
  }
};

SvmFunction svm_function(const Node& n) {
  SvmFunction k;
  const std::string t = n.attr_string("kernel_type", "LINEAR");
  if (t == "LINEAR") k.type = SvmFunction::kLinear;
  else if (t == "POLY") k.type = SvmFunction::kPoly;
  else if (t == "RBF") k.type = SvmFunction::kRbf;
  else if (t == "SIGMOID") k.type = SvmFunction::kSigmoid;
  else ml::bad_attributes(n, str("kernel_type '", t, "' (LINEAR, POLY, RBF or SIGMOID)"));
  const std::vector<double> p = ml::attr_doubles(n, "kernel_params");
  if (!p.empty() && p.size() != 3) ml::bad_attributes(n, str("kernel_params has ", p.size(), " values (gamma, coef0, degree)"));
  if (p.size() == 3) k.gamma = p[0], k.coef0 = p[1], k.degree = p[2];
  return k;
}

void check_features(const ml::Rows& r, int64_t features) {
  if (r.c != features) fail(ErrorCode::kInvalidArgument, "X has ", r.c, " features but the model has ", features);
}

// ---- SVMRegressor: one score per row, sum_v coefficients[v] K(x, v) + rho[0] (without support
// vectors: x·coefficients + rho[0]); one_class gives 1 where the score is positive, else -1.

class SvmRegressorKernel final : public Kernel {
 public:
  explicit SvmRegressorKernel(const Node& n)
      : fn_(svm_function(n)), coef_(ml::attr_doubles(n, "coefficients")), sv_(ml::attr_doubles(n, "support_vectors")),
        post_(ml::post_attr(n)), one_class_(n.attr_int("one_class", 0) != 0) {
    const std::vector<double> rho = ml::attr_doubles(n, "rho");
    if (rho.size() != 1) ml::bad_attributes(n, str("rho has ", rho.size(), " values, not 1"));
    rho_ = rho[0];
    vectors_ = n.attr_int("n_supports", 0);
    if (vectors_ < 0) ml::bad_attributes(n, str("n_supports is ", vectors_));
    if (vectors_ > 0) {
      if (sv_.empty() || sv_.size() % static_cast<size_t>(vectors_) != 0)
        ml::bad_attributes(n, str(sv_.size(), " support vector values do not make ", vectors_, " vectors"));
      if (coef_.size() != static_cast<size_t>(vectors_))
        ml::bad_attributes(n, str(coef_.size(), " coefficients for ", vectors_, " support vectors"));
      features_ = static_cast<int64_t>(sv_.size()) / vectors_;
    } else {
      if (coef_.empty()) ml::bad_attributes(n, "no coefficients");
      features_ = static_cast<int64_t>(coef_.size());
      fn_.type = SvmFunction::kLinear;
    }
  }

  void compute(KernelContext& ctx) const override {
    const ml::Rows r = ml::rows_of(ctx.input(0));
    check_features(r, features_);
    Tensor& y = ctx.allocate_output(0, DType::kFloat, Shape{r.n, 1});
    for (int64_t i = 0; i < r.n; ++i) {
      const double* x = r.v.data() + i * r.c;
      double s = rho_;
      if (vectors_ > 0)
        for (int64_t v = 0; v < vectors_; ++v) s += coef_[v] * fn_(x, sv_.data() + v * features_, features_);
      else
        s += fn_(x, coef_.data(), features_);
      if (one_class_) s = s > 0 ? 1.0 : -1.0;
      else ml::post_transform(post_, &s, 1);
      y.data<float>()[i] = static_cast<float>(s);
    }
  }

 private:
  SvmFunction fn_;
  std::vector<double> coef_, sv_;
  ml::Post post_;
  bool one_class_;
  double rho_ = 0;
  int64_t vectors_ = 0, features_ = 0;
};

/// libsvm's pairwise coupling: the class probabilities p (size k) that best fit the pairwise
/// estimates r (k x k, r[i][j] the probability of i over j), by Wu, Lin and Weng's second method.
void couple(int64_t k, const std::vector<double>& r, double* p) {
  std::vector<double> q(static_cast<size_t>(k * k)), qp(static_cast<size_t>(k));
  for (int64_t t = 0; t < k; ++t) {
    p[t] = 1.0 / static_cast<double>(k);
    double diag = 0;
    for (int64_t j = 0; j < k; ++j) {
      if (j == t) continue;
      diag += r[j * k + t] * r[j * k + t];
      q[t * k + j] = -r[j * k + t] * r[t * k + j];
    }
    q[t * k + t] = diag;
  }
  const double eps = 0.005 / static_cast<double>(k);
  for (int64_t iter = 0; iter < std::max<int64_t>(100, k); ++iter) {
    double pqp = 0;
    for (int64_t t = 0; t < k; ++t) {
      qp[t] = 0;
      for (int64_t j = 0; j < k; ++j) qp[t] += q[t * k + j] * p[j];
      pqp += p[t] * qp[t];
    }
    double worst = 0;
    for (int64_t t = 0; t < k; ++t) worst = std::max(worst, std::abs(qp[t] - pqp));
    if (worst < eps) break;
    for (int64_t t = 0; t < k; ++t) {
      const double diff = (pqp - qp[t]) / q[t * k + t];
      p[t] += diff;
      pqp = (pqp + diff * (diff * q[t * k + t] + 2 * qp[t])) / ((1 + diff) * (1 + diff));
      for (int64_t j = 0; j < k; ++j) {
        qp[j] = (qp[j] + diff * q[t * k + j]) / (1 + diff);
        p[j] /= 1 + diff;
      }
    }
  }
}

class SvmClassifierKernel final : public Kernel {
 public:
  explicit SvmClassifierKernel(const Node& n)
      : fn_(svm_function(n)), coef_(ml::attr_doubles(n, "coefficients")), sv_(ml::attr_doubles(n, "support_vectors")),
        rho_(ml::attr_doubles(n, "rho")), prob_a_(ml::attr_doubles(n, "prob_a")), prob_b_(ml::attr_doubles(n, "prob_b")),
        post_(ml::post_attr(n)), classes_(n, "classlabels_ints", "classlabels_strings") {
    const int64_t k = classes_.size;
    const std::vector<int64_t> per_class = n.attr_ints("vectors_per_class");
    for (int64_t c : per_class) {
      if (c < 0) ml::bad_attributes(n, str("vectors_per_class has the count ", c));
      first_.push_back(vectors_);
      vectors_ += c;
    }
    if (coef_.empty()) ml::bad_attributes(n, "no coefficients");
    if (vectors_ > 0) {
      if (static_cast<int64_t>(per_class.size()) != k)
        ml::bad_attributes(n, str("vectors_per_class has ", per_class.size(), " counts for ", k, " classes"));
      if (k < 2) ml::bad_attributes(n, "a support vector classifier needs two classes or more");
      count_ = per_class;
      if (sv_.empty() || sv_.size() % static_cast<size_t>(vectors_) != 0)
        ml::bad_attributes(n, str(sv_.size(), " support vector values do not make ", vectors_, " vectors"));
      features_ = static_cast<int64_t>(sv_.size()) / vectors_;
      const int64_t pairs = k * (k - 1) / 2;
      if (static_cast<int64_t>(coef_.size()) != (k - 1) * vectors_)
        ml::bad_attributes(n, str(coef_.size(), " coefficients, not (classes - 1) x vectors = ", (k - 1) * vectors_));
      if (static_cast<int64_t>(rho_.size()) != pairs) ml::bad_attributes(n, str("rho has ", rho_.size(), " values for ", pairs, " class pairs"));
      if (prob_a_.size() != prob_b_.size() || (!prob_a_.empty() && static_cast<int64_t>(prob_a_.size()) != pairs))
        ml::bad_attributes(n, str("prob_a and prob_b have ", prob_a_.size(), " and ", prob_b_.size(), " values; both must have one per class pair (",
                       pairs, ") or none"));
    } else {
      if (coef_.size() % static_cast<size_t>(k) != 0)
        ml::bad_attributes(n, str(coef_.size(), " coefficients do not make a row per class (", k, ")"));
      if (rho_.empty()) ml::bad_attributes(n, "no rho");
      features_ = static_cast<int64_t>(coef_.size()) / k;
      fn_.type = SvmFunction::kLinear;
    }
  }

  /// Columns of the scores: a probability per class, a decision per class pair (two for two
  /// classes), or a score per class (linear).
  int64_t score_columns() const {
    const int64_t k = classes_.size;
    if (vectors_ == 0 || !prob_a_.empty()) return k;
    return k == 2 ? 2 : k * (k - 1) / 2;
  }

  void compute(KernelContext& ctx) const override {
    const ml::Rows r = ml::rows_of(ctx.input(0));
    check_features(r, features_);
    const int64_t Z = score_columns(), k = classes_.size;
    Tensor& y = ctx.allocate_output(0, classes_.dtype(), Shape{r.n});
    Tensor* z = ctx.has_output(1) ? &ctx.allocate_output(1, DType::kFloat, Shape{r.n, Z}) : nullptr;
    std::vector<double> kv(static_cast<size_t>(vectors_)), scores(static_cast<size_t>(k * (k - 1) / 2)), out;
    std::vector<int64_t> votes(static_cast<size_t>(k));
    std::vector<double> pairwise(static_cast<size_t>(k * k));
    for (int64_t i = 0; i < r.n; ++i) {
      const double* x = r.v.data() + i * r.c;
      int64_t label = 0;
      if (vectors_ == 0) {
        out.resize(static_cast<size_t>(k));
        for (int64_t c = 0; c < k; ++c) out[c] = rho_[0] + fn_(x, coef_.data() + c * features_, features_);
        label = std::max_element(out.begin(), out.end()) - out.begin();
      } else {
        for (int64_t v = 0; v < vectors_; ++v) kv[v] = fn_(x, sv_.data() + v * features_, features_);
        std::fill(votes.begin(), votes.end(), 0);
        int64_t pair = 0;
        for (int64_t a = 0; a < k; ++a)
          for (int64_t b = a + 1; b < k; ++b, ++pair) {
            double d = rho_[pair];
            for (int64_t v = first_[a]; v < first_[a] + count_[a]; ++v) d += coef_[(b - 1) * vectors_ + v] * kv[v];
            for (int64_t v = first_[b]; v < first_[b] + count_[b]; ++v) d += coef_[a * vectors_ + v] * kv[v];
            scores[pair] = d;
            ++votes[d > 0 ? a : b];
          }
        label = std::max_element(votes.begin(), votes.end()) - votes.begin();
        if (!prob_a_.empty()) {
          for (int64_t a = 0, p = 0; a < k; ++a)
            for (int64_t b = a + 1; b < k; ++b, ++p) {
              const double s = std::clamp(1 / (1 + std::exp(scores[p] * prob_a_[p] + prob_b_[p])), 1e-7, 1 - 1e-7);
              pairwise[a * k + b] = s;
              pairwise[b * k + a] = 1 - s;
            }
          out.resize(static_cast<size_t>(k));
          couple(k, pairwise, out.data());
        } else if (k == 2) {
          out = {-scores[0], scores[0]};
        } else {
          out.assign(scores.begin(), scores.begin() + pair);
        }
      }
      ml::post_transform(post_, out.data(), out.size());
      ml::write_class(y, z, i, label, classes_, out.data(), Z);
    }
  }

 private:
  SvmFunction fn_;
  std::vector<double> coef_, sv_, rho_, prob_a_, prob_b_;
  ml::Post post_;
  ml::KeyIndex classes_;
  std::vector<int64_t> first_, count_;  // per class: its first support vector and how many
  int64_t vectors_ = 0, features_ = 0;
};

std::unique_ptr<Kernel> make_svm_regressor(const KernelCreateInfo& info) { return std::make_unique<SvmRegressorKernel>(info.node); }
std::unique_ptr<Kernel> make_svm_classifier(const KernelCreateInfo& info) { return std::make_unique<SvmClassifierKernel>(info.node); }

constexpr TypeMask kFeatures = type_mask({DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32});

const KernelDef kDefs[] = {
    {"ai.onnx.ml", "SVMRegressor", 1, 99, {{0, kFeatures}}, make_svm_regressor},
    {"ai.onnx.ml", "SVMClassifier", 1, 99, {{0, kFeatures}}, make_svm_classifier},
};

}  // namespace

std::span<const KernelDef> ml_svm_kernels() { return kDefs; }

}  // namespace onyx::cpu
