// Fuzz target for the model loader: any byte string must load cleanly or fail with onyx::Error,
// never crash, hang or allocate without bound. When a model loads, it is also run once with
// zero-filled inputs (symbolic dims 1) to exercise inference and planning on hostile graphs.
//
// Builds as a libFuzzer target (clang -fsanitize=fuzzer) or with fuzz_driver.cpp (any compiler).
#include <cstddef>
#include <cstdint>

#include "onyx/onyx.hpp"

// How far inputs got (fuzz_driver prints them: a campaign whose inputs never load tests only the
// parser).
extern "C" {
uint64_t onyx_fuzz_loaded = 0;
uint64_t onyx_fuzz_ran = 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    // The memory limit bounds what a run may allocate (outputs whose size comes from attributes,
    // loops that grow): past it a run ends with OutOfMemory instead of exhausting the machine.
    onyx::Session s =
        onyx::Session::builder().with_intra_threads(1).with_memory_limit(512u << 20).commit_from_memory(data, size);
    ++onyx_fuzz_loaded;
    std::vector<std::pair<std::string, onyx::Value>> inputs;
    int64_t total = 0;
    for (const onyx::IoInfo& in : s.inputs()) {
      if (in.has_default || in.kind != onyx::Value::Kind::kTensor || in.dtype == onyx::DType::kUndefined) continue;
      onyx::Shape shape;
      int64_t numel = 1;
      for (int64_t d : in.shape) {
        shape.push_back(d < 0 ? 1 : d);
        // Keep runs small: a mutated kernel over a large input is legitimate work that would
        // take minutes under the sanitizers and read as a hang.
        if (__builtin_mul_overflow(numel, d < 0 ? 1 : d, &numel) || numel > (1 << 16)) return 0;
      }
      if ((total += numel) > (1 << 18)) return 0;
      inputs.emplace_back(in.name, onyx::Tensor(in.dtype, shape));
    }
    s.run(inputs);
    ++onyx_fuzz_ran;
  } catch (const onyx::Error&) {
    // A clear error is the expected outcome for garbage.
  }
  return 0;
}
