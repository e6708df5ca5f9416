// onyx generate MODEL --prompt-ids IDS [options] (onyx generate --help): greedy decoding with a
// decoder LLM's key/value cache (onyx::Generator, docs/transformers.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "core/common.hpp"

namespace onyx::cli {

namespace {

std::vector<int64_t> id_list(const std::string& text, const char* option) {
  std::vector<int64_t> ids;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0) throw std::invalid_argument(item);
      ids.push_back(v);
    } catch (const std::exception&) {
      fail(ErrorCode::kInvalidArgument, option, " takes comma-separated non-negative integers, got '", item, "'");
    }
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return ids;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int cmd_generate(const Args& a) {
  if (a.positional.size() != 1 || !a.has("--prompt-ids"))
    fail(ErrorCode::kInvalidArgument, "usage: onyx generate MODEL --prompt-ids IDS [options] (onyx generate --help lists them)");
  const std::string& path = a.positional[0];
  GenerationOptions opt;
  opt.max_new_tokens = a.get_int("--max-new-tokens", 32);
  if (a.has("--eos")) opt.eos_token_ids = id_list(a.get("--eos"), "--eos");
  opt.share_buffer = a.has("--share-buffer");
  opt.max_length = a.get_int("--max-length", 0);
  const int runs = static_cast<int>(a.get_int("--runs", 1));
  if (runs < 1) fail(ErrorCode::kInvalidArgument, "--runs must be >= 1");
  const std::vector<int64_t> prompt = id_list(a.get("--prompt-ids"), "--prompt-ids");
  const SessionBuilder builder = builder_from(a, path);
  const auto t0 = std::chrono::steady_clock::now();
  Generator gen(builder.commit_from_file(path));
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<GenerationResult> results;
  for (int r = 0; r < runs; ++r) {
    results.push_back(gen.generate(prompt, opt));
    if (results.back().tokens != results.front().tokens)
      fail(ErrorCode::kRuntime, "generation ", r + 1, " gave other tokens than the first (the model is not deterministic)");
  }
  // With several runs, the first (which plans for each new shape) is left out of the timings.
  const size_t first_timed = results.size() > 1 ? 1 : 0;
  std::vector<double> ttft, rate, step;
  for (size_t r = first_timed; r < results.size(); ++r) {
    ttft.push_back(results[r].prompt_ms);
    rate.push_back(results[r].tokens_per_second());
    step.push_back(median(results[r].step_ms));
  }
  const GenerationResult& g = results.back();
  if (a.has("--json")) {
    Json j;
    j.begin_object().key("model").value(path).key("prompt_ids").begin_array();
    for (int64_t t : prompt) j.value(t);
    j.end_array().key("tokens").begin_array();
    for (int64_t t : g.tokens) j.value(t);
    j.end_array();
    j.key("prompt_tokens").value(g.prompt_tokens).key("new_tokens").value(static_cast<int64_t>(g.tokens.size()));
    j.key("load_ms").value(load_ms).key("runs").value(runs).key("timed_runs").value(static_cast<int64_t>(ttft.size()));
    j.key("time_to_first_token_ms").value(median(ttft)).key("decode_tokens_per_s").value(median(rate));
    j.key("decode_step_ms").value(median(step)).key("share_buffer").value(opt.share_buffer);
    j.key("cache_copy_bytes").value(g.cache_copy_bytes);
    j.key("cache").begin_array();
    for (const auto& [past, present] : gen.cache()) j.begin_object().key("past").value(past).key("present").value(present).end_object();
    j.end_array().end_object();
    std::printf("%s\n", j.str().c_str());
    return 0;
  }
  std::printf("model: %s (loaded in %.1f ms; cache: %zu past inputs)\n", path.c_str(), load_ms, gen.cache().size());
  std::printf("prompt: %lld tokens\ngenerated %zu tokens:", static_cast<long long>(g.prompt_tokens), g.tokens.size());
  for (int64_t t : g.tokens) std::printf(" %lld", static_cast<long long>(t));
  std::printf("\ntime to first token: %.2f ms\n", median(ttft));
  if (!g.step_ms.empty()) std::printf("decode: %.1f tokens/s (median step %.2f ms)\n", median(rate), median(step));
  if (opt.share_buffer)
    std::printf("cache: one shared buffer per past input; %lld bytes copied between steps\n", static_cast<long long>(g.cache_copy_bytes));
  if (runs > 1) std::printf("(medians of %zu runs after a first untimed one)\n", ttft.size());
  return 0;
}

}  // namespace onyx::cli
