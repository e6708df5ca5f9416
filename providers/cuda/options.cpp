// The CUDA EP's options, named like ONNX Runtime's CUDA EP options.
#include <cstdlib>

#include "core/common.hpp"
#include "cuda_ep.hpp"

namespace onyx::cuda {

std::vector<ep::OptionInfo> option_schema() {
  return {
      {"device_id", "uint", "0", "CUDA device ordinal the session runs on"},
      {"gpu_mem_limit", "uint", "0",
       "most bytes the EP's caching allocator holds on the device (0 = no limit but the device's memory)"},
      {"arena_extend_strategy", "enum:kNextPowerOfTwo|kSameAsRequested", "kNextPowerOfTwo",
       "how the caching allocator sizes new device blocks: rounded up to a power of two (more reuse) or as requested (less waste)"},
      {"cudnn_conv_algo_search", "enum:EXHAUSTIVE|HEURISTIC|DEFAULT", "EXHAUSTIVE",
       "how Conv/ConvTranspose pick a cuDNN algorithm, once per input shape: benchmark all (EXHAUSTIVE), cuDNN's heuristics (HEURISTIC), "
       "or a fixed implicit-GEMM algorithm (DEFAULT)"},
      {"use_tf32", "bool", "false", "allow TF32 tensor-core math in cuBLAS and cuDNN for float32 (faster, ~1e-3 relative error)"},
      {"prefer_nhwc", "bool", "false",
       "run 2-d Conv, ConvTranspose, pooling and BatchNormalization channels-last (NHWC): the optimizer gives them to this EP in that "
       "layout and cancels the transposes between neighbours"},
      {"enable_cuda_graph", "bool", "false",
       "record a run whose shapes are all static and whose every node is this EP's (or a copy to or from it) into a CUDA graph, "
       "and replay it on later runs of the same shapes (per run context: the first run warms up, the second records)"},
  };
}

namespace {
std::string get(const OptionList& o, const char* key, const std::string& dflt) {
  for (const auto& [k, v] : o)
    if (k == key) return v;
  return dflt;
}
bool to_bool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  fail(ErrorCode::kInvalidArgument, "cuda: option '", key, "' must be true or false, got '", v, "'");
}
uint64_t to_uint(const std::string& key, const std::string& v) {
  char* end = nullptr;
  const unsigned long long x = v.empty() || v[0] == '-' ? 0 : std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || !end || *end != '\0')
    fail(ErrorCode::kInvalidArgument, "cuda: option '", key, "' must be a non-negative integer, got '", v, "'");
  return x;
}
}  // namespace

Options parse_options(const OptionList& o) {
  Options r;
  const uint64_t dev = to_uint("device_id", get(o, "device_id", "0"));
  if (dev > 1024) fail(ErrorCode::kInvalidArgument, "cuda: option 'device_id' is out of range: ", dev);
  r.device_id = static_cast<int>(dev);
  r.gpu_mem_limit = to_uint("gpu_mem_limit", get(o, "gpu_mem_limit", "0"));
  const std::string ext = get(o, "arena_extend_strategy", "kNextPowerOfTwo");
  if (ext == "kNextPowerOfTwo") r.arena_extend = ArenaExtend::kNextPowerOfTwo;
  else if (ext == "kSameAsRequested") r.arena_extend = ArenaExtend::kSameAsRequested;
  else fail(ErrorCode::kInvalidArgument, "cuda: option 'arena_extend_strategy' must be kNextPowerOfTwo or kSameAsRequested, got '", ext, "'");
  const std::string algo = get(o, "cudnn_conv_algo_search", "EXHAUSTIVE");
  if (algo == "EXHAUSTIVE") r.conv_algo_search = ConvAlgoSearch::kExhaustive;
  else if (algo == "HEURISTIC") r.conv_algo_search = ConvAlgoSearch::kHeuristic;
  else if (algo == "DEFAULT") r.conv_algo_search = ConvAlgoSearch::kDefault;
  else fail(ErrorCode::kInvalidArgument, "cuda: option 'cudnn_conv_algo_search' must be EXHAUSTIVE, HEURISTIC or DEFAULT, got '", algo, "'");
  r.use_tf32 = to_bool("use_tf32", get(o, "use_tf32", "false"));
  r.prefer_nhwc = to_bool("prefer_nhwc", get(o, "prefer_nhwc", "false"));
  r.enable_cuda_graph = to_bool("enable_cuda_graph", get(o, "enable_cuda_graph", "false"));
  return r;
}

}  // namespace onyx::cuda
