// Example: load a model, run it on a test data set, compare with the expected outputs.
//
//   run_model MODEL [DATA_DIR]
//
// DATA_DIR holds input_N.pb (and optionally output_N.pb) files; without it the inputs are zeros
// (symbolic dims set to 1). Exits 1 when an output differs from the expected one.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "onyx/onyx.hpp"

namespace {

bool exists(const std::string& p) { return std::ifstream(p).good(); }

/// The largest element difference; infinite where the types differ, where a string differs, or
/// where one side is NaN and the other is not (NaN == NaN counts as equal).
double max_abs_diff(const onyx::Tensor& a, const onyx::Tensor& b) {
  if (a.dtype() != b.dtype()) return INFINITY;
  if (a.dtype() == onyx::DType::kString) {
    for (int64_t i = 0; i < a.numel(); ++i)
      if (a.data<std::string>()[i] != b.data<std::string>()[i]) return INFINITY;
    return 0;
  }
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.element_as_double(i), y = b.element_as_double(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return INFINITY;
      continue;
    }
    m = std::max(m, std::fabs(x - y));
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [DATA_DIR]\n", argv[0]);
    return 1;
  }
  const std::string dir = argc > 2 ? argv[2] : "";
  try {
    onyx::Session session = onyx::Session::builder().with_intra_threads(2).commit_from_file(argv[1]);

    std::vector<std::pair<std::string, onyx::Value>> inputs;
    size_t k = 0;
    for (const onyx::IoInfo& in : session.inputs()) {
      if (in.has_default) continue;  // an initializer supplies it
      std::printf("input  %-16s %s\n", in.name.c_str(), in.type_string.c_str());
      const std::string path = dir + "/input_" + std::to_string(k++) + ".pb";
      if (!dir.empty() && exists(path)) {
        inputs.emplace_back(in.name, onyx::load_tensor_pb(path));
      } else {
        onyx::Shape shape;
        for (int64_t d : in.shape) shape.push_back(d < 0 ? 1 : d);
        inputs.emplace_back(in.name, onyx::Tensor(in.dtype, shape));
      }
    }

    const std::vector<onyx::Value> outputs = session.run(inputs);

    int bad = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const onyx::Tensor& got = outputs[i].tensor();
      std::printf("output %-16s %s\n", session.outputs()[i].name.c_str(), got.summary().c_str());
      const std::string path = dir + "/output_" + std::to_string(i) + ".pb";
      if (dir.empty() || !exists(path)) continue;
      const onyx::Tensor want = onyx::load_tensor_pb(path);
      const double diff = want.shape() == got.shape() ? max_abs_diff(got, want) : INFINITY;
      std::printf("       max abs diff vs %s: %g\n", path.c_str(), diff);
      if (!(diff <= 1e-4)) ++bad;
    }
    for (const auto& p : session.placement().nodes) std::printf("node %-20s %-12s on %s\n", p.name.c_str(), p.op_type.c_str(), p.ep.c_str());
    return bad ? 1 : 0;
  } catch (const onyx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
