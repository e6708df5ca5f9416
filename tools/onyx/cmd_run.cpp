// onyx run MODEL [options] (onyx run --help)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "cli.hpp"
#include "core/common.hpp"

namespace onyx::cli {

int cmd_run(const Args& a) {
  if (a.positional.size() != 1) fail(ErrorCode::kInvalidArgument, "usage: onyx run MODEL [options] (onyx run --help lists them)");
  const std::string& path = a.positional[0];
  // Runs N times (default 2: the second shows the steady-state latency, the plan for these
  // shapes being cached); the outputs shown and saved are the last run's (with a CUDA graph the
  // third run is the first that only replays).
  const int64_t runs = a.get_int("--runs", 2);
  if (runs < 1 || runs > 1000000) fail(ErrorCode::kInvalidArgument, "--runs must be between 1 and 1000000, got ", runs);
  const SessionBuilder builder = builder_from(a, path);
  auto t0 = std::chrono::steady_clock::now();
  Session s = builder.commit_from_file(path);
  auto t1 = std::chrono::steady_clock::now();
  const auto inputs = a.has("--inputs") ? read_inputs(s, a.get("--inputs")) : random_inputs(s, a.get_int("--int-max", 10), a.get_int("--seed", 42));
  auto t2 = std::chrono::steady_clock::now();
  std::vector<Value> outputs = s.run(inputs);
  auto t3 = std::chrono::steady_clock::now();
  // Runs 2..N: each timed; the second alone, and their median.
  std::vector<double> later_ms;
  later_ms.reserve(static_cast<size_t>(runs - 1));
  for (int64_t k = 1; k < runs; ++k) {
    const auto r0 = std::chrono::steady_clock::now();
    outputs = s.run(inputs);
    later_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r0).count());
  }
  const double load_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const double run_ms = std::chrono::duration<double, std::milli>(t3 - t2).count();
  const double second_ms = later_ms.empty() ? 0.0 : later_ms.front();
  std::vector<double> sorted = later_ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t m = sorted.size();
  const double median_ms = m == 0 ? 0.0 : m % 2 ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);
  if (a.has("--save")) save_outputs(s, outputs, a.get("--save"));
  const Placement placement = s.placement();
  if (a.has("--json")) {
    Json j;
    j.begin_object();
    j.key("model").value(path);
    j.key("load_ms").value(load_ms);
    j.key("run_ms").value(run_ms);
    if (runs >= 2) {
      j.key("second_run_ms").value(second_ms);
      j.key("later_runs_median_ms").value(median_ms);  // runs 2..N
    }
    j.key("runs").value(runs);
    j.key("outputs").begin_array();
    for (size_t k = 0; k < outputs.size(); ++k) {
      const Value& v = outputs[k];
      j.begin_object().key("name").value(s.outputs()[k].name).key("summary").value(summarize(v));
      j.key("kind").value(v.is_tensor()                                   ? "tensor"
                          : v.is_sequence() && v.sequence_of_maps()       ? "sequence_of_maps"
                          : v.is_sequence()                               ? "sequence"
                          : v.is_map()                                    ? "map"
                          : v.is_optional()                               ? "optional"
                                                                          : "none");
      if (outputs[k].is_tensor()) {
        j.key("dtype").value(std::string(dtype_name(outputs[k].tensor().dtype())));
        j.key("shape").begin_array();
        for (int64_t d : outputs[k].tensor().shape()) j.value(d);
        j.end_array();
      }
      j.end_object();
    }
    j.end_array();
    j.key("placement").begin_array();
    for (const auto& p : placement.nodes)
      j.begin_object().key("node").value(p.name).key("op_type").value(p.op_type).key("ep").value(p.ep).key("device").value(p.device).end_object();
    j.end_array();
    j.end_object();
    std::printf("%s\n", j.str().c_str());
    return 0;
  }
  std::printf("model: %s (loaded in %.1f ms)\n", path.c_str(), load_ms);
  std::printf("inputs:\n");
  for (const auto& [name, v] : inputs) std::printf("  %-20s %s\n", name.c_str(), summarize(v).c_str());
  std::printf("outputs:\n");
  for (size_t k = 0; k < outputs.size(); ++k) std::printf("  %-20s %s\n", s.outputs()[k].name.c_str(), summarize(outputs[k]).c_str());
  if (!a.has("--quiet")) {
    std::map<std::string, int> per_ep;
    for (const auto& p : placement.nodes) per_ep[p.ep]++;
    std::printf("placement (%zu nodes): %s\n", placement.nodes.size(), placement.summary.c_str());
    if (placement.nodes.size() <= 40)
      for (const auto& p : placement.nodes) std::printf("  %-28s %-20s %s\n", p.name.c_str(), p.op_type.c_str(), p.ep.c_str());
  }
  if (runs == 1)
    std::printf("latency: %.3f ms (first run: plans for these input shapes)\n", run_ms);
  else if (runs == 2)
    std::printf("latency: %.3f ms first run (plans for these input shapes), %.3f ms second run\n", run_ms, second_ms);
  else
    std::printf("latency: %.3f ms first run (plans for these input shapes), %.3f ms median of the %lld runs after it (min %.3f ms)\n",
                run_ms, median_ms, static_cast<long long>(runs - 1), sorted.front());
  if (a.has("--save")) std::printf("saved %zu outputs to %s\n", outputs.size(), a.get("--save").c_str());
  return 0;
}

}  // namespace onyx::cli
