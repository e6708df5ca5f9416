// Greedy generation over a session (include/onyx/generate.hpp): the prompt step, then one step per
// token, each step's present outputs bound as the next step's past inputs.
#include "onyx/generate.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <optional>

#include "core/common.hpp"

namespace onyx {

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

/// What a cache tensor's name says: its layer (the first number in it) and part ("key", "value", or
/// "" for both: ONNX Runtime's GPT-2 past_N holds keys and values together).
struct CacheKey {
  int64_t layer = -1;
  std::string part;
  bool operator==(const CacheKey&) const = default;
};

std::optional<CacheKey> cache_key(std::string_view name) {
  std::string n = lower(name);
  for (const char* word : {"past_key_values", "key_values"})
    for (size_t at; (at = n.find(word)) != std::string::npos;) n.erase(at, std::strlen(word));
  CacheKey k;
  const size_t d = n.find_first_of("0123456789");
  if (d == std::string::npos) return std::nullopt;
  k.layer = 0;
  for (size_t i = d; i < n.size() && std::isdigit(static_cast<unsigned char>(n[i])) && k.layer < (int64_t(1) << 40); ++i)
    k.layer = k.layer * 10 + (n[i] - '0');
  if (n.find("key") != std::string::npos)
    k.part = "key";
  else if (n.find("value") != std::string::npos)
    k.part = "value";
  return k;
}

int64_t argmax_last_row(const Tensor& logits) {
  if (logits.rank() != 3 || logits.dim(0) != 1 || logits.dim(1) < 1 || logits.dim(2) < 1)
    fail(ErrorCode::kInvalidArgument, "generate: logits ", logits.shape().to_string(), " are not [1, sequence, vocabulary]");
  const int64_t V = logits.dim(2), off = (logits.dim(1) - 1) * V;
  auto best = [&](auto get) {
    int64_t arg = 0;
    float top = get(off);
    for (int64_t j = 1; j < V; ++j) {
      const float v = get(off + j);
      if (v > top || (top != top && v == v)) top = v, arg = j;
    }
    return arg;
  };
  switch (logits.dtype()) {
    case DType::kFloat: {
      const float* p = logits.data<float>();
      return best([&](int64_t i) { return p[i]; });
    }
    case DType::kFloat16: {
      const auto* p = static_cast<const uint16_t*>(logits.raw_data());
      return best([&](int64_t i) { return Float16::to_float(p[i]); });
    }
    case DType::kBFloat16: {
      const auto* p = static_cast<const uint16_t*>(logits.raw_data());
      return best([&](int64_t i) { return BFloat16::to_float(p[i]); });
    }
    default: fail(ErrorCode::kInvalidArgument, "generate: logits of type ", dtype_name(logits.dtype()), " (expected a float type)");
  }
}

/// A [1, n] tensor of `dtype` holding values[i] (an integer or float type).
Tensor row_tensor(DType dtype, const std::vector<int64_t>& values) {
  const int64_t n = static_cast<int64_t>(values.size());
  Tensor t(dtype, Shape{1, n});
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::kInt64: t.data<int64_t>()[i] = values[i]; break;
      case DType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(values[i]); break;
      case DType::kFloat: t.data<float>()[i] = static_cast<float>(values[i]); break;
      case DType::kFloat16: static_cast<uint16_t*>(t.raw_data())[i] = Float16::from_float(static_cast<float>(values[i])); break;
      case DType::kBool: t.data<bool>()[i] = values[i] != 0; break;
      default: fail(ErrorCode::kInvalidArgument, "generate: an input of type ", dtype_name(dtype), " cannot hold token ids, positions or a mask");
    }
  }
  return t;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double GenerationResult::tokens_per_second() const {
  double total = 0;
  for (double s : step_ms) total += s;
  return total > 0 ? 1000.0 * static_cast<double>(step_ms.size()) / total : 0.0;
}

Generator::Generator(Session session) : session_(std::move(session)) {
  const auto& ins = session_.inputs();
  const auto& outs = session_.outputs();
  std::vector<std::pair<size_t, CacheKey>> presents;
  for (size_t o = 0; o < outs.size(); ++o) {
    const std::string n = lower(outs[o].name);
    if (n.find("present") != std::string::npos) {
      const auto k = cache_key(outs[o].name);
      if (!k) fail(ErrorCode::kInvalidArgument, "generate: output '", outs[o].name, "' looks like a cache output but names no layer");
      presents.emplace_back(o, *k);
    } else if (n == "logits" || (logits_ < 0 && n.find("logits") != std::string::npos)) {
      logits_ = static_cast<int>(o);
    }
  }
  if (logits_ < 0)
    for (size_t o = 0; o < outs.size() && logits_ < 0; ++o)
      if (lower(outs[o].name).find("present") == std::string::npos) logits_ = static_cast<int>(o);
  if (logits_ < 0) fail(ErrorCode::kInvalidArgument, "generate: the model has no logits output");
  for (size_t i = 0; i < ins.size(); ++i) {
    const IoInfo& io = ins[i];
    const std::string n = lower(io.name);
    if (n == "input_ids") {
      ids_ = static_cast<int>(i);
    } else if (n == "attention_mask") {
      mask_ = static_cast<int>(i);
    } else if (n == "position_ids") {
      positions_ = static_cast<int>(i);
    } else if (n.find("past") != std::string::npos) {
      const auto k = cache_key(io.name);
      if (!k) fail(ErrorCode::kInvalidArgument, "generate: input '", io.name, "' looks like a cache input but names no layer");
      auto it = std::find_if(presents.begin(), presents.end(), [&](const auto& p) { return p.second == *k; });
      if (it == presents.end())
        fail(ErrorCode::kInvalidArgument, "generate: no present output pairs with the cache input '", io.name, "' (layer ", k->layer,
             k->part.empty() ? "" : ", " + k->part, ")");
      if (!io.has_shape || (io.shape.size() != 4 && io.shape.size() != 5))
        fail(ErrorCode::kInvalidArgument, "generate: the cache input '", io.name, "' must be 4-D [batch, heads, past, head size] or 5-D [2, batch, heads, past, head size]");
      CacheSlot s;
      s.input = i;
      s.output = it->first;
      s.dims = io.shape;
      s.seq_axis = io.shape.size() == 4 ? 2 : 3;
      s.dtype = io.dtype;
      const size_t batch_axis = io.shape.size() == 4 ? 0 : 1;
      s.dims[batch_axis] = 1;
      if (io.shape.size() == 5) s.dims[0] = 2;
      for (size_t d = 0; d < s.dims.size(); ++d)
        if (d != s.seq_axis && s.dims[d] < 0)
          fail(ErrorCode::kInvalidArgument, "generate: the cache input '", io.name, "' ", io.type_string, " must have known heads and head size");
      slots_.push_back(std::move(s));
      cache_names_.emplace_back(io.name, outs[it->first].name);
    } else if (!io.has_default) {
      fail(ErrorCode::kInvalidArgument, "generate: the model's input '", io.name,
           "' is none the generator fills (input_ids, attention_mask, position_ids, past...)");
    }
  }
  if (ids_ < 0) fail(ErrorCode::kInvalidArgument, "generate: the model has no input_ids input");
  if (slots_.empty()) fail(ErrorCode::kInvalidArgument, "generate: the model has no cache (past...) inputs");
}

GenerationResult Generator::generate(const std::vector<int64_t>& prompt, const GenerationOptions& options) const {
  if (prompt.empty()) fail(ErrorCode::kInvalidArgument, "generate: the prompt is empty");
  if (options.max_new_tokens < 1) fail(ErrorCode::kInvalidArgument, "generate: max_new_tokens must be at least 1, got ", options.max_new_tokens);
  const auto& ins = session_.inputs();
  const auto& outs = session_.outputs();
  const int64_t S0 = static_cast<int64_t>(prompt.size());
  const int64_t capacity = options.max_length > 0 ? options.max_length : S0 + options.max_new_tokens;
  if (options.share_buffer && capacity < S0 + options.max_new_tokens - 1)
    fail(ErrorCode::kInvalidArgument, "generate: max_length ", capacity, " cannot hold the prompt (", S0, ") and ", options.max_new_tokens,
         " new tokens");
  Binding binding(session_);
  // The cache: empty pasts, or the shared buffers (zeros) that every step reads and writes.
  std::vector<Tensor> cache(slots_.size());
  for (size_t c = 0; c < slots_.size(); ++c) {
    Shape s;
    for (size_t d = 0; d < slots_[c].dims.size(); ++d) s.push_back(d == slots_[c].seq_axis ? (options.share_buffer ? capacity : 0) : slots_[c].dims[d]);
    cache[c] = Tensor(slots_[c].dtype, s);
  }
  GenerationResult r;
  r.prompt_tokens = S0;
  std::vector<int64_t> step_ids = prompt;
  int64_t past = 0;  // tokens already in the cache
  for (int64_t step = 0; step < options.max_new_tokens; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t S = static_cast<int64_t>(step_ids.size());
    binding.bind_input(static_cast<size_t>(ids_), row_tensor(ins[ids_].dtype, step_ids));
    if (mask_ >= 0) binding.bind_input(static_cast<size_t>(mask_), row_tensor(ins[mask_].dtype, std::vector<int64_t>(past + S, 1)));
    if (positions_ >= 0) {
      std::vector<int64_t> pos(S);
      for (int64_t i = 0; i < S; ++i) pos[i] = past + i;
      binding.bind_input(static_cast<size_t>(positions_), row_tensor(ins[positions_].dtype, pos));
    }
    for (size_t c = 0; c < slots_.size(); ++c) {
      binding.bind_input(slots_[c].input, cache[c]);
      if (options.share_buffer) binding.bind_output(outs[slots_[c].output].name, cache[c]);
    }
    if (options.share_buffer) {
      try {
        session_.run(binding);
      } catch (const Error& e) {
        throw Error(e.code(), std::string(e.what()) +
                                  " (generate with share_buffer: the past inputs are buffers of " + std::to_string(capacity) +
                                  " positions, which needs attention that writes into the past buffer, such as GroupQueryAttention)");
      }
    } else {
      session_.run(binding);
    }
    const std::vector<Value>& out = binding.outputs();
    const int64_t token = argmax_last_row(out[logits_].tensor());
    for (size_t c = 0; c < slots_.size(); ++c) {
      const Tensor& present = out[slots_[c].output].tensor();
      const int64_t want = options.share_buffer ? capacity : past + S;
      if (present.rank() != cache[c].rank() || present.dim(slots_[c].seq_axis) != want)
        fail(ErrorCode::kInvalidArgument, "generate: present output '", outs[slots_[c].output].name, "' is ", present.shape().to_string(),
             "; expected its past's shape with ", want, " positions",
             options.share_buffer ? " (share_buffer needs attention that writes into the past buffer, such as GroupQueryAttention)" : "");
      if (!options.share_buffer) {
        cache[c] = present;  // the next step's past: this tensor, not a copy
      } else if (present.raw_data() != cache[c].raw_data()) {
        // The session made the present elsewhere (its shape was not known when planning): copied
        // into the shared buffer, and counted.
        std::memcpy(cache[c].raw_data(), present.raw_data(), present.nbytes());
        r.cache_copy_bytes += static_cast<int64_t>(present.nbytes());
      }
    }
    past += S;
    r.tokens.push_back(token);
    const double ms = ms_since(t0);
    if (step == 0)
      r.prompt_ms = ms;
    else
      r.step_ms.push_back(ms);
    if (std::find(options.eos_token_ids.begin(), options.eos_token_ids.end(), token) != options.eos_token_ids.end()) break;
    step_ids.assign(1, token);
  }
  return r;
}

}  // namespace onyx
