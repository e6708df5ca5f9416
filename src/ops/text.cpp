// text family schemas: StringNormalizer, TfIdfVectorizer, StringConcat, StringSplit,
// RegexFullMatch.
#include <algorithm>
#include <string>

#include "ops/schema.hpp"

namespace onyx {

namespace {

void infer_string_normalizer(InferContext& ctx) {
  const Node& n = ctx.node();
  ctx.require_dtype(0, {DType::kString});
  const std::string action = n.attr_string("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    ctx.fail_node("attribute 'case_change_action' is '", action, "'; expected one of NONE, LOWER, UPPER");
  if (!ctx.input_has_shape(0)) return ctx.set_output_unranked(0, DType::kString);
  const Shape& in = ctx.input_shape(0);
  if (in.size() != 1 && in.size() != 2) ctx.fail_node("X must have shape [C] or [1, C], got rank ", in.size());
  if (in.size() == 2 && in[0] >= 0 && in[0] != 1)
    ctx.fail_node("X must have shape [C] or [1, C], got ", in.to_string());
  const int64_t c = in.back();
  int64_t out_c;
  if (!n.attr_strings("stopwords").empty() || c < 0)
    out_c = ctx.fresh();  // depends on the data
  else
    out_c = c == 0 ? 1 : c;  // nothing to drop; an empty result is one empty string
  ctx.set_output(0, DType::kString, in.size() == 1 ? Shape{out_c} : Shape{1, out_c});
}

void infer_tfidf(InferContext& ctx) {
  const Node& n = ctx.node();
  ctx.require_dtype(0, {DType::kString, DType::kInt32, DType::kInt64});
  const std::string mode = n.attr_string("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    ctx.fail_node("attribute 'mode' is '", mode, "'; expected one of TF, IDF, TFIDF");
  const std::vector<int64_t> idx = n.attr_ints("ngram_indexes");
  if (idx.empty()) ctx.fail_node("attribute 'ngram_indexes' is required");
  const int64_t c = ctx.checked_dim(__int128(*std::max_element(idx.begin(), idx.end())) + 1);
  if (!ctx.input_has_shape(0)) return ctx.set_output_unranked(0, DType::kFloat);
  const Shape& in = ctx.input_shape(0);
  if (in.size() > 2) ctx.fail_node("X must have shape [C] or [N, C], got rank ", in.size());
  ctx.set_output(0, DType::kFloat, in.size() == 2 ? Shape{in[0], c} : Shape{c});
}

void infer_string_concat(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kString});
  ctx.require_dtype(1, {DType::kString});
  Shape out;
  if (!shape_util::broadcast_inputs(ctx, 0, 2, out)) return ctx.set_output_unranked(0, DType::kString);
  ctx.set_output(0, DType::kString, out);
}

void infer_string_split(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kString});
  if (!ctx.input_has_shape(0)) {
    ctx.set_output_unranked(0, DType::kString);
    ctx.set_output_unranked(1, DType::kInt64);
    return;
  }
  const Shape& in = ctx.input_shape(0);
  Shape y = in;
  y.push_back(in.is_concrete() && in.numel() == 0 ? 0 : ctx.fresh());
  ctx.set_output(0, DType::kString, y);
  ctx.set_output(1, DType::kInt64, in);
}

void infer_regex_full_match(InferContext& ctx) {
  ctx.require_dtype(0, {DType::kString});
  if (!ctx.node().has_attr("pattern")) ctx.fail_node("attribute 'pattern' is required");
  if (!ctx.input_has_shape(0)) return ctx.set_output_unranked(0, DType::kBool);
  ctx.set_output(0, DType::kBool, ctx.input_shape(0));
}

}  // namespace

void register_text_ops(OpRegistry& r) {
  r.add("", "StringNormalizer", {10}, infer_string_normalizer);
  r.add("", "TfIdfVectorizer", {9}, infer_tfidf);
  r.add("", "StringConcat", {20}, infer_string_concat);
  r.add("", "StringSplit", {20}, infer_string_split);
  r.add("", "RegexFullMatch", {20}, infer_regex_full_match);
}

}  // namespace onyx
