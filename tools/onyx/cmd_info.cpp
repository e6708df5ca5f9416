// onyx info MODEL [--json]: a model's metadata, read with the loader alone
#include <cstdio>

#include "cli.hpp"
#include "core/common.hpp"

namespace onyx::cli {

namespace {
void io_json(Json& j, const IoInfo& io, bool input) {
  j.begin_object();
  j.key("name").value(io.name);
  j.key("type").value(io.type_string);
  j.key("dtype").value(std::string(dtype_name(io.dtype)));
  j.key("kind").value(io.kind == Value::Kind::kTensor     ? "tensor"
                      : io.kind == Value::Kind::kSequence ? "sequence"
                      : io.kind == Value::Kind::kMap      ? "map"
                                                          : "optional");
  j.key("shape");
  if (io.has_shape) {
    j.begin_array();
    for (size_t k = 0; k < io.shape.size(); ++k) {
      if (io.shape[k] >= 0)
        j.value(io.shape[k]);
      else if (!io.dim_names[k].empty())
        j.value(io.dim_names[k]);
      else
        j.null();
    }
    j.end_array();
  } else {
    j.null();
  }
  if (input) j.key("has_initializer").value(io.has_default);
  j.end_object();
}
}  // namespace

int cmd_info(const Args& a) {
  if (a.positional.size() != 1) fail(ErrorCode::kInvalidArgument, "usage: onyx info MODEL [--json]");
  const std::string& path = a.positional[0];
  // The model as the loader reads it: no session (nothing optimised, placed or prepared, no weight
  // converted or packed), so op counts are those of the file and a model with an op no EP runs
  // still shows its metadata.
  const ModelInfo m = read_model_info(path, true);
  if (a.has("--json")) {
    Json j;
    j.begin_object();
    j.key("model").value(path);
    j.key("ir_version").value(m.ir_version);
    j.key("producer").value(m.producer);
    j.key("opsets").begin_object();
    for (auto& [d, v] : m.opsets) j.key(d).value(v);
    j.end_object();
    j.key("inputs").begin_array();
    for (const auto& in : m.inputs) io_json(j, in, true);
    j.end_array();
    j.key("outputs").begin_array();
    for (const auto& out : m.outputs) io_json(j, out, false);
    j.end_array();
    int64_t total = 0;
    j.key("op_counts").begin_object();
    for (auto& [op, n] : m.op_counts) {
      j.key(op).value(n);
      total += n;
    }
    j.end_object();
    j.key("nodes").value(total);
    j.end_object();
    std::printf("%s\n", j.str().c_str());
    return 0;
  }
  std::printf("model:    %s\n", path.c_str());
  std::printf("ir:       %lld    producer: %s\n", static_cast<long long>(m.ir_version), m.producer.c_str());
  std::printf("opsets:  ");
  for (auto& [d, v] : m.opsets) std::printf(" %s=%lld", d.c_str(), static_cast<long long>(v));
  std::printf("\ninputs:\n");
  for (const auto& in : m.inputs)
    std::printf("  %-24s %s%s\n", in.name.c_str(), in.type_string.c_str(), in.has_default ? "  (has initializer)" : "");
  std::printf("outputs:\n");
  for (const auto& out : m.outputs) std::printf("  %-24s %s\n", out.name.c_str(), out.type_string.c_str());
  int64_t total = 0;
  for (auto& [op, n] : m.op_counts) total += n;
  std::printf("ops (%lld nodes):\n", static_cast<long long>(total));
  for (auto& [op, n] : m.op_counts) std::printf("  %-24s %lld\n", op.c_str(), static_cast<long long>(n));
  return 0;
}

}  // namespace onyx::cli
