// Text ops beyond the ONNX 1.12 conformance data: StringConcat, StringSplit and RegexFullMatch
// (opset 20), and StringNormalizer / TfIdfVectorizer cases the data lacks (UTF-8 case mapping,
// IDF / TFIDF weights, string pools, skip-grams).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "op_model.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

Tensor strings(Shape s, std::vector<std::string> v) {
  Tensor t(DType::kString, std::move(s));
  EXPECT_EQ(t.numel(), static_cast<int64_t>(v.size()));
  for (size_t i = 0; i < v.size(); ++i) t.data<std::string>()[i] = v[i];
  return t;
}
std::vector<std::string> strings_of(const Tensor& t) {
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + t.numel());
}
std::vector<bool> bools_of(const Tensor& t) { return std::vector<bool>(t.data<bool>(), t.data<bool>() + t.numel()); }
std::vector<float> floats_of(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

OpModel one_op(std::string type, const Tensor& x, std::vector<Attr> attrs, std::vector<std::string> outputs = {"y"}) {
  OpModel m;
  m.feeds = {{"x", x}};
  m.op = {std::move(type), {"x"}, std::move(attrs), std::move(outputs)};
  return m;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// StringConcat

TEST(TextStringConcat, Broadcasts) {
  OpModel m;
  m.feeds = {{"a", strings(Shape{2, 1}, {"a", "\xc3\xbc"})}, {"b", strings(Shape{3}, {"x", "yz", ""})}};
  m.op = {"StringConcat", {"a", "b"}, {}};
  const Tensor y = m.run1();
  ASSERT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(strings_of(y), (std::vector<std::string>{"ax", "ayz", "a", "\xc3\xbcx", "\xc3\xbcyz", "\xc3\xbc"}));
  m.feeds[1].second = strings(Shape{2}, {"x", "y"});
  m.feeds[0].second = strings(Shape{3}, {"a", "b", "c"});
  EXPECT_THROW(m.run1(), Error);
}

// ---------------------------------------------------------------------------------------------
// StringSplit

TEST(TextStringSplit, DelimiterKeepsEmptyPiecesAndPads) {
  const Tensor x = strings(Shape{2, 3}, {"1,2,3", "a,,b", "", ",", "1<>2", "x"});
  const auto out = one_op("StringSplit", x, {a_str("delimiter", ",")}, {"y", "z"}).run();
  const Tensor& y = out[0].tensor();
  const Tensor& z = out[1].tensor();
  ASSERT_EQ(y.shape(), (Shape{2, 3, 3}));
  ASSERT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(strings_of(y), (std::vector<std::string>{"1", "2", "3", "a", "", "b", "", "", "", "", "", "", "1<>2", "",
                                                     "", "x", "", ""}));
  EXPECT_EQ(std::vector<int64_t>(z.data<int64_t>(), z.data<int64_t>() + 6), (std::vector<int64_t>{3, 3, 1, 2, 1, 1}));
  // A multi-character delimiter, and maxsplit.
  const Tensor x2 = strings(Shape{2}, {"1<>2<><>3", "a<>b"});
  const auto o2 = one_op("StringSplit", x2, {a_str("delimiter", "<>"), a_int("maxsplit", 2)}, {"y", "z"}).run();
  EXPECT_EQ(strings_of(o2[0].tensor()), (std::vector<std::string>{"1", "2", "<>3", "a", "b", ""}));
}

TEST(TextStringSplit, WhitespaceRunsAndMaxsplit) {
  const Tensor x = strings(Shape{5}, {"  hello   world  ", "a\tb\nc", "", "   ",
                                      "a\xe3\x80\x80"
                                      "b"});
  const auto out = one_op("StringSplit", x, {}, {"y", "z"}).run();
  ASSERT_EQ(out[0].tensor().shape(), (Shape{5, 3}));
  EXPECT_EQ(strings_of(out[0].tensor()),
            (std::vector<std::string>{"hello", "world", "", "a", "b", "c", "", "", "", "", "", "", "a", "b", ""}));
  const Tensor& z = out[1].tensor();
  EXPECT_EQ(std::vector<int64_t>(z.data<int64_t>(), z.data<int64_t>() + 5), (std::vector<int64_t>{2, 3, 0, 0, 2}));
  // maxsplit: the rest keeps its inner and trailing whitespace (Python's str.split).
  const auto o2 = one_op("StringSplit", x, {a_int("maxsplit", 1)}, {"y", "z"}).run();
  EXPECT_EQ(strings_of(o2[0].tensor()),
            (std::vector<std::string>{"hello", "world  ", "a", "b\nc", "", "", "", "", "a", "b"}));
  // An empty tensor: the new dim is 0.
  const auto o3 = one_op("StringSplit", strings(Shape{0}, {}), {}, {"y", "z"}).run();
  EXPECT_EQ(o3[0].tensor().shape(), (Shape{0, 0}));
  EXPECT_EQ(o3[1].tensor().shape(), (Shape{0}));
}

// ---------------------------------------------------------------------------------------------
// RegexFullMatch

TEST(TextRegexFullMatch, MatchesWholeStrings) {
  const Tensor x = strings(Shape{3}, {"www.google.com", "www.facebook.com", "www.bbc.co.uk"});
  const Tensor y = one_op("RegexFullMatch", x, {a_str("pattern", R"(www\.[\w.-]+\.\bcom\b)")}).run1();
  ASSERT_EQ(y.dtype(), DType::kBool);
  EXPECT_EQ(bools_of(y), (std::vector<bool>{true, true, false}));
  const Tensor x2 = strings(Shape{2, 2}, {"abc", "ABC", "abcd", "xabc"});
  EXPECT_EQ(bools_of(one_op("RegexFullMatch", x2, {a_str("pattern", "a.c")}).run1()),
            (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(bools_of(one_op("RegexFullMatch", x2, {a_str("pattern", "(?i)a.c")}).run1()),
            (std::vector<bool>{true, true, false, false}));
  // RE2 named groups and \A ... \z.
  const Tensor x3 = strings(Shape{3}, {"aab", "b", "ab c"});
  EXPECT_EQ(bools_of(one_op("RegexFullMatch", x3, {a_str("pattern", R"(\A(?P<as>a+)b\z)")}).run1()),
            (std::vector<bool>{true, false, false}));
}

TEST(TextRegexFullMatch, LongInputsAndErrors) {
  std::string long_ab;
  for (int i = 0; i < 60000; ++i) long_ab += (i % 3 ? 'a' : 'b');
  const Tensor x = strings(Shape{3}, {long_ab, long_ab + "c", "ab"});
  EXPECT_EQ(bools_of(one_op("RegexFullMatch", x, {a_str("pattern", "((a|b)(c|d)?)*")}).run1()),
            (std::vector<bool>{true, true, true}));
  EXPECT_EQ(bools_of(one_op("RegexFullMatch", x, {a_str("pattern", "(a|b)*")}).run1()),
            (std::vector<bool>{true, false, true}));
  EXPECT_THROW(one_op("RegexFullMatch", x, {a_str("pattern", "(")}).session(), Error);
  try {
    one_op("RegexFullMatch", x, {a_str("pattern", R"(\pL+)")}).session();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotImplemented);
    EXPECT_NE(std::string(e.what()).find("\\p"), std::string::npos) << e.what();
  }
  const Tensor huge = strings(Shape{1}, {std::string(200000, 'a')});
  EXPECT_THROW(one_op("RegexFullMatch", huge, {a_str("pattern", "a*")}).run1(), Error);
}

// ---------------------------------------------------------------------------------------------
// StringNormalizer

TEST(TextStringNormalizer, Utf8CaseMappingWithoutLocales) {
  const Tensor x =
      strings(Shape{7}, {"stra\xc3\x9f"
                         "e",
                         "\xc3\xa9t\xc3\xa9", "\xce\xb1\xce\xb2\xce\xb3 \xcf\x82",
                         "\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82", "\xc4\xb0\xc4\xb1", "\xc3\xbf",
                         "bad\xff"
                         "byte"});
  const Tensor up =
      one_op("StringNormalizer", x, {a_str("case_change_action", "UPPER"), a_str("locale", "tr_TR.UTF-8")}).run1();
  EXPECT_EQ(strings_of(up),
            (std::vector<std::string>{"STRA\xc3\x9f"
                                      "E",
                                      "\xc3\x89T\xc3\x89", "\xce\x91\xce\x92\xce\x93 \xce\xa3",
                                      "\xd0\x9f\xd0\xa0\xd0\x98\xd0\x92\xd0\x95\xd0\xa2", "\xc4\xb0I", "\xc5\xb8",
                                      "BAD\xff"
                                      "BYTE"}));
  const Tensor x2 = strings(Shape{1, 4}, {"\xc3\x80\xc3\x89\xc3\x8e", "\xce\xa3\xce\x91\xce\xa3",
                                          "\xd0\x9f\xd0\xa0\xd0\x98\xd0\x92\xd0\x95\xd0\xa2", "\xc4\xb0\xc5\xb8"});
  const Tensor lo = one_op("StringNormalizer", x2, {a_str("case_change_action", "LOWER")}).run1();
  ASSERT_EQ(lo.shape(), (Shape{1, 4}));
  EXPECT_EQ(strings_of(lo),
            (std::vector<std::string>{"\xc3\xa0\xc3\xa9\xc3\xae", "\xcf\x83\xce\xb1\xcf\x83",
                                      "\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82", "i\xc3\xbf"}));
}

TEST(TextStringNormalizer, StopwordsCaseInsensitiveBeyondAscii) {
  const Tensor x = strings(Shape{1, 4}, {"\xc3\xa9t\xc3\xa9", "Hiver", "\xc3\x89T\xc3\x89", "printemps"});
  const Tensor y = one_op("StringNormalizer", x,
                          {a_strs("stopwords", {"\xc3\x89t\xc3\xa9", "hiver"}), a_str("case_change_action", "UPPER")})
                       .run1();
  ASSERT_EQ(y.shape(), (Shape{1, 1}));
  EXPECT_EQ(strings_of(y), (std::vector<std::string>{"PRINTEMPS"}));
  const Tensor z =
      one_op("StringNormalizer", x, {a_strs("stopwords", {"\xc3\xa9t\xc3\xa9"}), a_int("is_case_sensitive", 1)}).run1();
  EXPECT_EQ(strings_of(z), (std::vector<std::string>{"Hiver", "\xc3\x89T\xc3\x89", "printemps"}));
  // Everything dropped from a [1, C] input: one empty string of shape [1, 1].
  const Tensor e =
      one_op("StringNormalizer", x, {a_strs("stopwords", {"\xc3\xa9t\xc3\xa9", "hiver", "printemps"})}).run1();
  ASSERT_EQ(e.shape(), (Shape{1, 1}));
  EXPECT_EQ(strings_of(e), (std::vector<std::string>{""}));
  EXPECT_THROW(one_op("StringNormalizer", strings(Shape{2, 2}, {"a", "b", "c", "d"}), {}).run1(), Error);
}

// ---------------------------------------------------------------------------------------------
// TfIdfVectorizer

TEST(TextTfIdf, ModesWeightsAndStringPool) {
  const Tensor x = strings(Shape{2, 4}, {"a", "b", "c", "x", "b", "b", "c", "a"});
  auto model = [&](const char* mode) {
    return one_op(
        "TfIdfVectorizer", x,
        {a_str("mode", mode), a_int("min_gram_length", 1), a_int("max_gram_length", 2), a_int("max_skip_count", 0),
         a_ints("ngram_counts", {0, 3}), a_ints("ngram_indexes", {0, 1, 2, 3, 4}),
         a_strs("pool_strings", {"a", "b", "c", "a", "b", "b", "c"}), a_floats("weights", {0.5f, 1, 2, 3, 4})});
  };
  const Tensor tf = model("TF").run1();
  ASSERT_EQ(tf.shape(), (Shape{2, 5}));
  EXPECT_EQ(floats_of(tf), (std::vector<float>{1, 1, 1, 1, 1, 1, 2, 1, 0, 1}));
  EXPECT_EQ(floats_of(model("IDF").run1()), (std::vector<float>{0.5f, 1, 2, 3, 4, 0.5f, 1, 2, 0, 4}));
  EXPECT_EQ(floats_of(model("TFIDF").run1()), (std::vector<float>{0.5f, 1, 2, 3, 4, 0.5f, 2, 2, 0, 4}));
}

TEST(TextTfIdf, SkipGramsOnInt32) {
  // Only bigrams (1,2) and (2,1); skips of 0 and 1.
  const Tensor x = Tensor::from_vector<int32_t>(Shape{5}, {1, 2, 9, 1, 2});
  const Tensor y =
      one_op("TfIdfVectorizer", x,
             {a_str("mode", "TF"), a_int("min_gram_length", 2), a_int("max_gram_length", 2), a_int("max_skip_count", 1),
              a_ints("ngram_counts", {0, 0}), a_ints("ngram_indexes", {1, 0}), a_ints("pool_int64s", {1, 2, 2, 1})})
          .run1();
  ASSERT_EQ(y.shape(), (Shape{2}));
  // (1,2) twice at distance 1; (2,1) once at distance 2 (positions 1 and 3).
  EXPECT_EQ(floats_of(y), (std::vector<float>{1, 2}));
  // A pool of strings cannot count integers.
  EXPECT_THROW(
      one_op("TfIdfVectorizer", x,
             {a_str("mode", "TF"), a_int("min_gram_length", 1), a_int("max_gram_length", 1), a_int("max_skip_count", 0),
              a_ints("ngram_counts", {0}), a_ints("ngram_indexes", {0}), a_strs("pool_strings", {"a"})})
          .run1(),
      Error);
}
