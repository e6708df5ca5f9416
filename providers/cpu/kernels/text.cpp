// CPU kernels: text family (StringNormalizer, TfIdfVectorizer, StringConcat, StringSplit,
// RegexFullMatch).
#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"

namespace onyx::cpu {
namespace {

using namespace types;
constexpr TypeMask kStr = type_mask({DType::kString});

// =============================================================================================
// UTF-8 and case mapping
//
// Case mapping does not use the C/C++ locale machinery: the locales a machine has installed vary
// (std::locale("en_US.UTF-8") throws where it is missing), and results would differ between
// machines. Instead onyx maps, code point by code point, the simple (1:1) case pairs of
// ASCII, Latin-1 Supplement, Latin Extended-A, Greek and Coptic, and Cyrillic (+ Supplement).
// Other scripts, and mappings that change the length (German sharp s -> "SS"), are left as they
// are; the `locale` attribute is accepted and ignored (no Turkish dotless-i rules, for example).
// Bytes that are not valid UTF-8 are copied unchanged.
// =============================================================================================

/// Decodes the code point at s[i] (advancing i); returns false (consuming one byte) when the
/// bytes there are not a valid UTF-8 sequence.
bool utf8_next(std::string_view s, size_t& i, uint32_t& cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    cp = b0;
    ++i;
    return true;
  }
  int n;
  uint32_t min;
  if ((b0 & 0xE0) == 0xC0) {
    n = 1, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 2, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 3, cp = b0 & 0x07, min = 0x10000;
  } else {
    ++i;
    return false;
  }
  if (i + n >= s.size()) {
    ++i;
    return false;
  }
  for (int k = 1; k <= n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return false;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++i;
    return false;
  }
  i += n + 1;
  return true;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

inline bool in(uint32_t c, uint32_t lo, uint32_t hi) { return c >= lo && c <= hi; }
inline bool even(uint32_t c) { return (c & 1) == 0; }

uint32_t lower_cp(uint32_t c) {
  if (c < 0x80) return in(c, 'A', 'Z') ? c + 32 : c;
  if (c < 0x100) return (in(c, 0xC0, 0xDE) && c != 0xD7) ? c + 32 : c;
  if (c < 0x180) {  // Latin Extended-A
    if (c == 0x130) return 'i';
    if (c == 0x178) return 0xFF;
    if (in(c, 0x100, 0x137) || in(c, 0x14A, 0x177)) return even(c) ? c + 1 : c;
    if (in(c, 0x139, 0x148) || in(c, 0x179, 0x17E)) return even(c) ? c : c + 1;
    return c;
  }
  if (in(c, 0x370, 0x3FF)) {  // Greek and Coptic
    if (c == 0x370 || c == 0x372 || c == 0x376) return c + 1;
    if (c == 0x37F) return 0x3F3;
    if (c == 0x386) return 0x3AC;
    if (in(c, 0x388, 0x38A)) return c + 37;
    if (c == 0x38C) return 0x3CC;
    if (in(c, 0x38E, 0x38F)) return c + 63;
    if (in(c, 0x391, 0x3AB) && c != 0x3A2) return c + 32;
    if (c == 0x3CF) return 0x3D7;
    if (in(c, 0x3D8, 0x3EF)) return even(c) ? c + 1 : c;
    if (c == 0x3F4) return 0x3B8;
    if (c == 0x3F7 || c == 0x3FA) return c + 1;
    if (c == 0x3F9) return 0x3F2;
    if (in(c, 0x3FD, 0x3FF)) return c - 130;
    return c;
  }
  if (in(c, 0x400, 0x52F)) {  // Cyrillic, Cyrillic Supplement
    if (in(c, 0x400, 0x40F)) return c + 80;
    if (in(c, 0x410, 0x42F)) return c + 32;
    if (in(c, 0x460, 0x481) || in(c, 0x48A, 0x4BF) || in(c, 0x4D0, 0x52F)) return even(c) ? c + 1 : c;
    if (c == 0x4C0) return 0x4CF;
    if (in(c, 0x4C1, 0x4CE)) return even(c) ? c : c + 1;
    return c;
  }
  return c;
}

uint32_t upper_cp(uint32_t c) {
  if (c < 0x80) return in(c, 'a', 'z') ? c - 32 : c;
  if (c < 0x100) {
    if (c == 0xB5) return 0x39C;
    if (c == 0xFF) return 0x178;
    return (in(c, 0xE0, 0xFE) && c != 0xF7) ? c - 32 : c;
  }
  if (c < 0x180) {
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if (in(c, 0x100, 0x137) || in(c, 0x14A, 0x177)) return even(c) ? c : c - 1;
    if (in(c, 0x139, 0x148) || in(c, 0x179, 0x17E)) return even(c) ? c - 1 : c;
    return c;
  }
  if (in(c, 0x370, 0x3FF)) {
    if (c == 0x371 || c == 0x373 || c == 0x377) return c - 1;
    if (in(c, 0x37B, 0x37D)) return c + 130;
    if (c == 0x3AC) return 0x386;
    if (in(c, 0x3AD, 0x3AF)) return c - 37;
    if (c == 0x3C2) return 0x3A3;
    if (in(c, 0x3B1, 0x3CB)) return c - 32;
    if (c == 0x3CC) return 0x38C;
    if (in(c, 0x3CD, 0x3CE)) return c - 63;
    if (c == 0x3D0) return 0x392;
    if (c == 0x3D1) return 0x398;
    if (c == 0x3D5) return 0x3A6;
    if (c == 0x3D6) return 0x3A0;
    if (c == 0x3D7) return 0x3CF;
    if (in(c, 0x3D8, 0x3EF)) return even(c) ? c : c - 1;
    if (c == 0x3F0) return 0x39A;
    if (c == 0x3F1) return 0x3A1;
    if (c == 0x3F2) return 0x3F9;
    if (c == 0x3F3) return 0x37F;
    if (c == 0x3F5) return 0x395;
    if (c == 0x3F8 || c == 0x3FB) return c - 1;
    return c;
  }
  if (in(c, 0x400, 0x52F)) {
    if (in(c, 0x430, 0x44F)) return c - 32;
    if (in(c, 0x450, 0x45F)) return c - 80;
    if (in(c, 0x460, 0x481) || in(c, 0x48A, 0x4BF) || in(c, 0x4D0, 0x52F)) return even(c) ? c : c - 1;
    if (c == 0x4CF) return 0x4C0;
    if (in(c, 0x4C1, 0x4CE)) return even(c) ? c - 1 : c;
    return c;
  }
  return c;
}

std::string map_case(std::string_view s, bool upper) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    uint32_t cp;
    if (!utf8_next(s, i, cp)) {
      out.push_back(s[start]);
      continue;
    }
    utf8_append(out, upper ? upper_cp(cp) : lower_cp(cp));
  }
  return out;
}

// =============================================================================================
// StringNormalizer
// =============================================================================================

struct NormalizerState {
  enum class Case { kNone, kLower, kUpper } action = Case::kNone;
  bool case_sensitive = false;
  std::unordered_set<std::string> stop;  // lowercased unless case_sensitive
};

void normalizer_compute(const NormalizerState& st, KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.rank() != 1 && !(X.rank() == 2 && X.dim(0) == 1))
    fail(ErrorCode::kInvalidArgument, "X must have shape [C] or [1, C], got ", X.shape().to_string());
  const std::string* x = X.data<std::string>();
  const int64_t n = X.numel();
  std::vector<const std::string*> kept;
  kept.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (!st.stop.empty()) {
      const bool hit = st.case_sensitive ? st.stop.count(x[i]) > 0 : st.stop.count(map_case(x[i], false)) > 0;
      if (hit) continue;
    }
    kept.push_back(&x[i]);
  }
  const int64_t k = std::max<int64_t>(1, static_cast<int64_t>(kept.size()));
  Tensor& Y = ctx.allocate_output(0, DType::kString, X.rank() == 1 ? Shape{k} : Shape{1, k});
  std::string* y = Y.data<std::string>();
  if (kept.empty()) {
    y[0].clear();
    return;
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    switch (st.action) {
      case NormalizerState::Case::kNone:
        y[i] = *kept[i];
        break;
      case NormalizerState::Case::kLower:
        y[i] = map_case(*kept[i], false);
        break;
      case NormalizerState::Case::kUpper:
        y[i] = map_case(*kept[i], true);
        break;
    }
  }
}

std::unique_ptr<Kernel> make_normalizer(const KernelCreateInfo& info) {
  const Node& n = info.node;
  NormalizerState s;
  const std::string a = n.attr_string("case_change_action", "NONE");
  if (a == "LOWER")
    s.action = NormalizerState::Case::kLower;
  else if (a == "UPPER")
    s.action = NormalizerState::Case::kUpper;
  else if (a != "NONE")
    fail(ErrorCode::kInvalidGraph, n.label(), ": attribute 'case_change_action' is '", a,
         "'; expected NONE, LOWER or UPPER");
  s.case_sensitive = n.attr_int("is_case_sensitive", 0) != 0;
  for (const std::string& w : n.attr_strings("stopwords")) s.stop.insert(s.case_sensitive ? w : map_case(w, false));
  return make_fn_kernel(std::move(s), normalizer_compute);
}

// =============================================================================================
// TfIdfVectorizer
// =============================================================================================

/// A trie over the pool's n-grams; edges are (node, token) pairs in one hash map. String tokens
/// are views into the kernel's own copy of the pool, so lookups do not allocate.
class TfIdfKernel final : public Kernel {
 public:
  explicit TfIdfKernel(const Node& n) {
    const std::string mode = n.attr_string("mode", "");
    if (mode == "TF")
      mode_ = Mode::kTF;
    else if (mode == "IDF")
      mode_ = Mode::kIDF;
    else if (mode == "TFIDF")
      mode_ = Mode::kTFIDF;
    else
      fail(ErrorCode::kInvalidGraph, n.label(), ": attribute 'mode' is '", mode, "'; expected TF, IDF or TFIDF");
    min_n_ = n.attr_int("min_gram_length", -1);
    max_n_ = n.attr_int("max_gram_length", -1);
    max_skip_ = n.attr_int("max_skip_count", -1);
    if (min_n_ < 1 || max_n_ < min_n_ || max_skip_ < 0)
      fail(ErrorCode::kInvalidGraph, n.label(),
           ": need 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0 (got ", min_n_, ", ", max_n_, ", ",
           max_skip_, ")");
    const std::vector<int64_t> counts = n.attr_ints("ngram_counts");
    const std::vector<int64_t> indexes = n.attr_ints("ngram_indexes");
    if (counts.empty() || indexes.empty())
      fail(ErrorCode::kInvalidGraph, n.label(), ": attributes 'ngram_counts' and 'ngram_indexes' are required");
    for (int64_t v : indexes)
      if (v < 0) fail(ErrorCode::kInvalidGraph, n.label(), ": ngram_indexes has a negative entry (", v, ")");
    const int64_t top = *std::max_element(indexes.begin(), indexes.end());
    if (top >= (int64_t(1) << 60)) fail(ErrorCode::kInvalidGraph, n.label(), ": ngram_indexes value ", top, " is too large");
    out_size_ = top + 1;
    weights_ = n.attr_floats("weights");
    if (!weights_.empty() && static_cast<int64_t>(weights_.size()) < out_size_)
      fail(ErrorCode::kInvalidGraph, n.label(), ": weights has ", weights_.size(), " entries for ", out_size_,
           " outputs");
    strings_ = n.has_attr("pool_strings");
    std::vector<int64_t> pool_i;
    if (strings_) {
      pool_s_ = n.attr_strings("pool_strings");
      if (n.has_attr("pool_int64s"))
        fail(ErrorCode::kInvalidGraph, n.label(), ": only one of pool_strings and pool_int64s may be given");
    } else {
      pool_i = n.attr_ints("pool_int64s");
      if (!n.has_attr("pool_int64s"))
        fail(ErrorCode::kInvalidGraph, n.label(), ": one of pool_strings and pool_int64s is required");
    }
    const int64_t total = strings_ ? static_cast<int64_t>(pool_s_.size()) : static_cast<int64_t>(pool_i.size());
    cols_.push_back(-1);  // root
    int64_t id = 0;       // index of the n-gram in the pool (all sizes)
    for (size_t s = 0; s < counts.size(); ++s) {
      const int64_t len = static_cast<int64_t>(s) + 1;
      const int64_t b = counts[s], e = s + 1 < counts.size() ? counts[s + 1] : total;
      if (b < 0 || b > e || e > total)
        fail(ErrorCode::kInvalidGraph, n.label(), ": ngram_counts ", join(counts, ","), " do not fit a pool of ", total,
             " items");
      const int64_t k = (e - b) / len;
      for (int64_t g = 0; g < k; ++g, ++id) {
        if (len < min_n_ || len > max_n_) continue;
        if (id >= static_cast<int64_t>(indexes.size()))
          fail(ErrorCode::kInvalidGraph, n.label(), ": ngram_indexes has ", indexes.size(),
               " entries but the pool has more n-grams");
        int32_t node = 0;
        for (int64_t t = 0; t < len; ++t) {
          const int64_t pos = b + g * len + t;
          node = strings_ ? child_s(node, pool_s_[pos], true) : child_i(node, pool_i[pos], true);
        }
        cols_[node] = indexes[id];
      }
    }
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& X = ctx.input(0);
    if (X.rank() > 2) fail(ErrorCode::kInvalidArgument, "X must have shape [C] or [N, C], got ", X.shape().to_string());
    const bool is_str = X.dtype() == DType::kString;
    if (is_str != strings_)
      fail(ErrorCode::kInvalidArgument, "X has type ", dtype_name(X.dtype()), " but the pool holds ",
           strings_ ? "strings" : "integers");
    const int64_t rows = X.rank() == 2 ? X.dim(0) : 1;
    const int64_t len = X.rank() == 2 ? X.dim(1) : X.numel();
    Tensor& Y = ctx.allocate_output(0, DType::kFloat, X.rank() == 2 ? Shape{rows, out_size_} : Shape{out_size_});
    float* y = Y.data<float>();
    std::fill(y, y + Y.numel(), 0.0f);
    parallel_range(ctx.pool(), rows, work_of({len, std::min<int64_t>(max_skip_, len) + 1, max_n_}), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* out = y + r * out_size_;
        if (is_str)
          count_row(X.data<std::string>() + r * len, len, out);
        else if (X.dtype() == DType::kInt64)
          count_row(X.data<int64_t>() + r * len, len, out);
        else
          count_row(X.data<int32_t>() + r * len, len, out);
        finish_row(out);
      }
    });
  }

 private:
  enum class Mode { kTF, kIDF, kTFIDF };
  struct IntKey {
    int32_t node;
    int64_t tok;
    bool operator==(const IntKey& o) const { return node == o.node && tok == o.tok; }
  };
  struct StrKey {
    int32_t node;
    std::string_view tok;
    bool operator==(const StrKey& o) const { return node == o.node && tok == o.tok; }
  };
  struct Hash {
    size_t operator()(const IntKey& k) const { return std::hash<int64_t>()(k.tok) * 31 + static_cast<size_t>(k.node); }
    size_t operator()(const StrKey& k) const {
      return std::hash<std::string_view>()(k.tok) * 31 + static_cast<size_t>(k.node);
    }
  };

  int32_t add_node() {
    cols_.push_back(-1);
    return static_cast<int32_t>(cols_.size() - 1);
  }
  int32_t child_i(int32_t node, int64_t tok, bool create) {
    auto it = edges_i_.find({node, tok});
    if (it != edges_i_.end()) return it->second;
    if (!create) return -1;
    const int32_t c = add_node();
    edges_i_.emplace(IntKey{node, tok}, c);
    return c;
  }
  int32_t child_s(int32_t node, const std::string& tok, bool create) {
    auto it = edges_s_.find({node, tok});
    if (it != edges_s_.end()) return it->second;
    if (!create) return -1;
    const int32_t c = add_node();
    edges_s_.emplace(StrKey{node, tok}, c);  // views pool_s_, which is never modified after this
    return c;
  }
  int32_t find(int32_t node, int64_t tok) const {
    auto it = edges_i_.find({node, tok});
    return it == edges_i_.end() ? -1 : it->second;
  }
  int32_t find(int32_t node, int32_t tok) const { return find(node, static_cast<int64_t>(tok)); }
  int32_t find(int32_t node, const std::string& tok) const {
    auto it = edges_s_.find({node, std::string_view(tok)});
    return it == edges_s_.end() ? -1 : it->second;
  }

  // Counts the pool n-grams of one row: for every skip distance d (1 .. max_skip+1) and start,
  // the tokens start, start+d, ... of lengths min..max. Unigrams are counted once (d = 1 only).
  template <class T>
  void count_row(const T* x, int64_t len, float* out) const {
    int64_t start_n = min_n_;
    // Distances past the row's length find nothing (and a hostile max_skip_count may be 2^62).
    const int64_t d_max = std::min<int64_t>(max_skip_, std::max<int64_t>(len, 1)) + 1;
    for (int64_t d = 1; d <= d_max; ++d) {
      for (int64_t s = 0; s < len; ++s) {
        if (s + d * (start_n - 1) >= len) break;
        int32_t node = 0;
        for (int64_t k = 1, pos = s; k <= max_n_ && pos < len; ++k, pos += d) {
          node = find(node, x[pos]);
          if (node < 0) break;
          if (k >= start_n && cols_[node] >= 0) out[cols_[node]] += 1.0f;
        }
      }
      if (start_n == 1) {
        start_n = 2;
        if (start_n > max_n_) break;
      }
    }
  }

  void finish_row(float* out) const {
    const bool w = !weights_.empty();
    for (int64_t c = 0; c < out_size_; ++c) {
      switch (mode_) {
        case Mode::kTF:
          break;
        case Mode::kIDF:
          out[c] = out[c] > 0.0f ? (w ? weights_[c] : 1.0f) : 0.0f;
          break;
        case Mode::kTFIDF:
          if (w) out[c] *= weights_[c];
          break;
      }
    }
  }

  Mode mode_ = Mode::kTF;
  int64_t min_n_ = 1, max_n_ = 1, max_skip_ = 0, out_size_ = 0;
  std::vector<float> weights_;  // per output column (as onnxruntime and the ONNX reference index them)
  bool strings_ = false;
  std::vector<std::string> pool_s_;
  std::vector<int64_t> cols_;  // per trie node: output column, or -1
  std::unordered_map<IntKey, int32_t, Hash> edges_i_;
  std::unordered_map<StrKey, int32_t, Hash> edges_s_;
};

std::unique_ptr<Kernel> make_tfidf(const KernelCreateInfo& info) { return std::make_unique<TfIdfKernel>(info.node); }

// =============================================================================================
// StringConcat
// =============================================================================================

void string_concat_compute(const int&, KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  const Shape& a = A.shape();
  const Shape& b = B.shape();
  const size_t r = std::max(a.size(), b.size());
  Shape out = Shape::filled(r, 1);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k < r - a.size() ? 1 : a[k - (r - a.size())];
    const int64_t db = k < r - b.size() ? 1 : b[k - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(ErrorCode::kInvalidArgument, "shapes ", a.to_string(), " and ", b.to_string(),
           " cannot be broadcast together");
    out[k] = da == 1 ? db : da;
  }
  Tensor& Y = ctx.allocate_output(0, DType::kString, out);
  if (Y.numel() == 0) return;
  const std::string* x = A.data<std::string>();
  const std::string* z = B.data<std::string>();
  std::string* y = Y.data<std::string>();
  const Broadcast<2> bc(out, {&a, &b});
  bc.run(ctx.pool(), Y.numel(), [&](int64_t o, std::array<int64_t, 2> off, int64_t n, std::array<int64_t, 2> st) {
    for (int64_t i = 0; i < n; ++i) {
      const std::string& l = x[off[0] + i * st[0]];
      const std::string& rr = z[off[1] + i * st[1]];
      std::string& d = y[o + i];
      d.reserve(l.size() + rr.size());
      d.assign(l);
      d.append(rr);
    }
  });
}

// =============================================================================================
// StringSplit
// =============================================================================================

/// Python's str.isspace() for the code point at s[i]; sets the byte length of it.
bool is_space_at(std::string_view s, size_t i, size_t& len) {
  const auto c = static_cast<unsigned char>(s[i]);
  len = 1;
  if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) return true;
  if (c < 0x80) return false;
  size_t j = i;
  uint32_t cp;
  if (!utf8_next(s, j, cp)) return false;
  len = j - i;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/// str.split(sep, maxsplit) (sep empty: split on whitespace runs); maxsplit < 0: no limit.
void split_one(std::string_view s, std::string_view sep, int64_t maxsplit, std::vector<std::string_view>& parts) {
  parts.clear();
  if (!sep.empty()) {
    size_t pos = 0;
    int64_t splits = 0;
    while (maxsplit < 0 || splits < maxsplit) {
      const size_t f = s.find(sep, pos);
      if (f == std::string_view::npos) break;
      parts.push_back(s.substr(pos, f - pos));
      pos = f + sep.size();
      ++splits;
    }
    parts.push_back(s.substr(pos));
    return;
  }
  size_t i = 0, len = 0;
  int64_t splits = 0;
  const size_t n = s.size();
  while (true) {
    while (i < n && is_space_at(s, i, len)) i += len;  // skip a whitespace run
    if (i >= n) return;
    if (maxsplit >= 0 && splits >= maxsplit) {
      parts.push_back(s.substr(i));  // the rest, trailing whitespace included
      return;
    }
    const size_t start = i;
    while (i < n && !is_space_at(s, i, len)) i += len;
    parts.push_back(s.substr(start, i - start));
    ++splits;
  }
}

struct SplitState {
  std::string delimiter;
  int64_t maxsplit = -1;
};

void string_split_compute(const SplitState& st, KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const int64_t n = X.numel();
  const std::string* x = X.data<std::string>();
  std::vector<std::vector<std::string_view>> parts(static_cast<size_t>(n));
  int64_t width = 0;
  for (int64_t i = 0; i < n; ++i) {
    split_one(x[i], st.delimiter, st.maxsplit, parts[i]);
    width = std::max<int64_t>(width, static_cast<int64_t>(parts[i].size()));
  }
  Shape ys = X.shape();
  ys.push_back(width);
  Tensor& Y = ctx.allocate_output(0, DType::kString, ys);
  std::string* y = Y.data<std::string>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < width; ++k) {
      if (k < static_cast<int64_t>(parts[i].size()))
        y[i * width + k].assign(parts[i][k]);
      else
        y[i * width + k].clear();
    }
  if (ctx.has_output(1)) {
    Tensor& Z = ctx.allocate_output(1, DType::kInt64, X.shape());
    for (int64_t i = 0; i < n; ++i) Z.data<int64_t>()[i] = static_cast<int64_t>(parts[i].size());
  }
}

std::unique_ptr<Kernel> make_string_split(const KernelCreateInfo& info) {
  SplitState s;
  s.delimiter = info.node.attr_string("delimiter", "");
  if (info.node.has_attr("maxsplit")) s.maxsplit = info.node.attr_int("maxsplit", -1);
  return make_fn_kernel(std::move(s), string_split_compute);
}

// =============================================================================================
// RegexFullMatch
//
// ONNX specifies RE2 syntax; onyx matches with std::regex (ECMAScript grammar), which agrees on
// the common subset: literals, ., character classes (including [[:alpha:]]-style and \d \w \s),
// anchors, alternation, groups, (?:...), greedy and lazy quantifiers {m,n}. Differences:
//  - a leading RE2 flag group "(?i)" is translated to case-insensitive matching; other flag groups
//    ((?s), (?m), (?U), flags mid-pattern) are rejected;
//  - RE2 named groups (?P<name>re) and (?<name>re) are matched as plain groups;
//  - \A and \z are translated to ^ and $ (a full match is anchored anyway);
//  - RE2's Unicode classes (\pL, \p{Greek}) and \C are rejected;
//  - ECMAScript accepts back-references and lookahead, which RE2 rejects; onyx accepts them;
//  - matching is byte-oriented: '.' and [^...] match one byte, not one UTF-8 code point, and case
//    folding is ASCII-only;
//  - RE2 runs in linear time; std::regex backtracks (and recurses per input character), so
//    inputs longer than 1 KiB are matched on a helper thread with a large stack, and inputs over
//    128 KiB are rejected.
// =============================================================================================

std::string translate_re2(const std::string& p, bool& icase, const std::string& label) {
  std::string out;
  size_t i = 0;
  icase = false;
  if (p.compare(0, 4, "(?i)") == 0) {
    icase = true;
    i = 4;
  }
  bool in_class = false;
  for (; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (!in_class && e == 'A') {
        out += '^';
      } else if (!in_class && e == 'z') {
        out += '$';
      } else if (e == 'p' || e == 'P' || e == 'C') {
        fail(ErrorCode::kNotImplemented, label, ": the RE2 escape \\", e,
             " is not supported by onyx's std::regex matcher");
      } else {
        out += c;
        out += e;
      }
      ++i;
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a literal ']' first in the class
      continue;
    }
    if (c == '(' && i + 1 < p.size() && p[i + 1] == '?') {
      const std::string_view rest(p.data() + i + 2, p.size() - i - 2);
      if (rest.rfind("P<", 0) == 0 ||
          (rest.rfind("<", 0) == 0 && rest.rfind("<=", 0) != 0 && rest.rfind("<!", 0) != 0)) {
        const size_t close = p.find('>', i);
        if (close == std::string::npos) fail(ErrorCode::kInvalidGraph, label, ": unterminated group name in pattern");
        out += '(';
        i = close;
        continue;
      }
      if (!rest.empty() && rest[0] != ':' && rest[0] != '=' && rest[0] != '!')
        fail(ErrorCode::kNotImplemented, label, ": the RE2 group '(?", rest.substr(0, std::min<size_t>(rest.size(), 4)),
             "...' is not supported (only a leading (?i) flag)");
    }
    out += c;
  }
  return out;
}

struct RegexState {
  std::regex re;
};

constexpr size_t kInlineRegexInput = 1024;
constexpr size_t kMaxRegexInput = 128 * 1024;

struct LongMatchJob {
  const std::regex* re;
  const std::string* x;
  bool* y;
  const std::vector<int64_t>* items;
  std::exception_ptr error;
};

void* long_match_main(void* p) {
  auto* job = static_cast<LongMatchJob*>(p);
  try {
    for (int64_t i : *job->items) job->y[i] = std::regex_match(job->x[i], *job->re);
  } catch (...) {
    job->error = std::current_exception();
  }
  return nullptr;
}

void regex_compute(const RegexState& st, KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  Tensor& Y = ctx.allocate_output(0, DType::kBool, X.shape());
  const std::string* x = X.data<std::string>();
  bool* y = Y.data<bool>();
  const int64_t n = X.numel();
  std::vector<int64_t> long_items;
  size_t longest = 0;
  try {
    for (int64_t i = 0; i < n; ++i) {
      if (x[i].size() > kMaxRegexInput)
        fail(ErrorCode::kNotImplemented, "X[", i, "] has ", x[i].size(), " bytes; RegexFullMatch takes at most ",
             kMaxRegexInput);
      if (x[i].size() > kInlineRegexInput) {
        long_items.push_back(i);
        longest = std::max(longest, x[i].size());
        continue;
      }
      y[i] = std::regex_match(x[i], st.re);
    }
  } catch (const std::regex_error& e) {
    fail(ErrorCode::kRuntime, "regex matching failed: ", e.what());
  }
  if (long_items.empty()) return;
  // std::regex recurses per character: give it a stack sized for the longest input.
  LongMatchJob job{&st.re, x, y, &long_items, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, (16u << 20) + longest * 8192);
  pthread_t th;
  const int rc = pthread_create(&th, &attr, long_match_main, &job);
  pthread_attr_destroy(&attr);
  if (rc != 0) fail(ErrorCode::kRuntime, "cannot start a thread to match long inputs (error ", rc, ")");
  pthread_join(th, nullptr);
  if (job.error) {
    try {
      std::rethrow_exception(job.error);
    } catch (const std::regex_error& e) {
      fail(ErrorCode::kRuntime, "regex matching failed: ", e.what());
    }
  }
}

std::unique_ptr<Kernel> make_regex(const KernelCreateInfo& info) {
  const Node& n = info.node;
  if (!n.has_attr("pattern")) fail(ErrorCode::kInvalidGraph, n.label(), ": attribute 'pattern' is required");
  const std::string pattern = n.attr_string("pattern");
  bool icase = false;
  const std::string ecma = translate_re2(pattern, icase, n.label());
  RegexState s;
  try {
    auto flags = std::regex::ECMAScript;
    if (icase) flags |= std::regex::icase;
    s.re = std::regex(ecma, flags);
  } catch (const std::regex_error& e) {
    fail(ErrorCode::kInvalidGraph, n.label(), ": invalid pattern '", pattern, "': ", e.what());
  }
  return make_fn_kernel(std::move(s), regex_compute);
}

std::unique_ptr<Kernel> make_string_concat(const KernelCreateInfo&) { return make_fn_kernel(0, string_concat_compute); }

const KernelDef kDefs[] = {
    {"", "StringNormalizer", 10, 99, {{0, kStr}}, make_normalizer},
    {"", "TfIdfVectorizer", 9, 99, {{0, kStr | kIndex}}, make_tfidf},
    {"", "StringConcat", 20, 99, {{0, kStr}, {1, kStr}}, make_string_concat},
    {"", "StringSplit", 20, 99, {{0, kStr}}, make_string_split},
    {"", "RegexFullMatch", 20, 99, {{0, kStr}}, make_regex},
};

}  // namespace

std::span<const KernelDef> text_kernels() { return kDefs; }

}  // namespace onyx::cpu
