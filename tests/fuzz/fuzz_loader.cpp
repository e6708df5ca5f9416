// Fuzz target for the model loader: any byte string must load cleanly or fail with onyx::Error,
// never crash, hang or allocate without bound. When a model loads, it is also run once with
// zero-filled inputs (symbolic dims 1) to exercise inference and planning on hostile graphs.
//
// Builds as a libFuzzer target (clang -fsanitize=fuzzer) or with fuzz_driver.cpp (any compiler).
#include <cstddef>
#include <cstdint>

#include "onyx/onyx.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    onyx::Session s = onyx::Session::builder().with_intra_threads(1).commit_from_memory(data, size);
    std::vector<std::pair<std::string, onyx::Value>> inputs;
    int64_t total = 0;
    for (const onyx::IoInfo& in : s.inputs()) {
      if (in.has_default || in.kind != onyx::Value::Kind::kTensor || in.dtype == onyx::DType::kUndefined) continue;
      onyx::Shape shape;
      for (int64_t d : in.shape) shape.push_back(d < 0 ? 1 : d);
      if (shape.numel() > (1 << 20) || (total += shape.numel()) > (1 << 22)) return 0;  // keep runs small
      inputs.emplace_back(in.name, onyx::Tensor(in.dtype, shape));
    }
    s.run(inputs);
  } catch (const onyx::Error&) {
    // A clear error is the expected outcome for garbage.
  }
  return 0;
}
