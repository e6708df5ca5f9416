// onyx: greedy text generation with a decoder LLM exported with its key/value cache
// (past_key_values), such as Hugging Face / Optimum exports and ONNX Runtime's GPT-2 and LLM tools
// write. See docs/transformers.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onyx/session.hpp"

namespace onyx {

struct GenerationOptions {
  /// Tokens to generate after the prompt (at most; fewer when an end token comes first).
  int64_t max_new_tokens = 32;
  /// Generation stops after producing one of these (it is part of the result).
  std::vector<int64_t> eos_token_ids;
  /// Past and present share one preallocated buffer of max_length positions per layer (ONNX
  /// Runtime's past_present_share_buffer): each step's new keys and values are written into it in
  /// place, and nothing is copied between steps. For models whose attention writes into the past
  /// buffer (com.microsoft GroupQueryAttention, whose present is as long as that buffer); any other
  /// model gives an error at the first step that says so.
  bool share_buffer = false;
  /// With share_buffer: the buffer's positions (0: the prompt's length + max_new_tokens).
  int64_t max_length = 0;
};

struct GenerationResult {
  std::vector<int64_t> tokens;  ///< the generated tokens (the prompt excluded)
  int64_t prompt_tokens = 0;
  double prompt_ms = 0;         ///< the prompt's step, which gives the first token (time to first token)
  std::vector<double> step_ms;  ///< each later step (one token each)
  /// Bytes of cache copied between steps: 0 when every present output was made in the buffer the
  /// next step reads (always without share_buffer: the present tensor itself is the next past).
  int64_t cache_copy_bytes = 0;
  /// Decode speed: tokens per second over the steps after the first token (0 without any).
  double tokens_per_second() const;
};

/// A session's generation interface, found from its input and output names:
///  - inputs: `input_ids` [batch, sequence] (int64 or int32); optionally `attention_mask`
///    [batch, past + sequence] and `position_ids` [batch, sequence]; and the cache: every input
///    whose name contains "past" (`past_key_values.N.key` / `.value` [batch, heads, past, head size],
///    or ONNX Runtime's GPT-2 form `past_N` [2, batch, heads, past, head size]);
///  - outputs: `logits` [batch, sequence, vocabulary] (else the first output that is not a
///    present), and per past input the output whose name says `present` with the same layer number
///    and key/value part.
/// Any other input without a default is an error naming it. Greedy: each step takes the most
/// likely token (the first of equal ones). Batch 1.
class Generator {
 public:
  explicit Generator(Session session);

  /// Runs the prompt, then one step per new token: the present outputs of a step are the past
  /// inputs of the next (the same tensors, not copies).
  GenerationResult generate(const std::vector<int64_t>& prompt, const GenerationOptions& options = {}) const;

  /// The cache: (past input, present output) pairs, in input order.
  const std::vector<std::pair<std::string, std::string>>& cache() const { return cache_names_; }

 private:
  struct CacheSlot {
    size_t input = 0, output = 0;
    std::vector<int64_t> dims;  // the past's shape; its sequence dim is `seq_axis`
    size_t seq_axis = 0;
    DType dtype = DType::kUndefined;
  };
  Session session_;
  int ids_ = -1, mask_ = -1, positions_ = -1, logits_ = -1;
  std::vector<CacheSlot> slots_;
  std::vector<std::pair<std::string, std::string>> cache_names_;
};

}  // namespace onyx
