// onyx bench MODEL [options] (onyx bench --help)
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "core/common.hpp"

namespace onyx::cli {

namespace {
double peak_rss_mb() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

void progress(const char* what, int i, int n, bool enabled) {
  if (!enabled || n <= 0) return;
  const int width = 30;
  const int filled = static_cast<int>(static_cast<double>(i) / n * width);
  std::fprintf(stderr, "\r%-7s [", what);
  for (int k = 0; k < width; ++k) std::fputc(k < filled ? '#' : '.', stderr);
  std::fprintf(stderr, "] %d/%d", i, n);
  if (i == n) std::fputc('\n', stderr);
  std::fflush(stderr);
}
}  // namespace

int cmd_bench(const Args& a) {
  if (a.positional.size() != 1)
    fail(ErrorCode::kInvalidArgument, "usage: onyx bench MODEL [options] (onyx bench --help lists them)");
  const std::string& path = a.positional[0];
  const int runs = static_cast<int>(a.get_int("--runs", 50));
  const int warmup = static_cast<int>(a.get_int("--warmup", 5));
  if (runs < 1 || warmup < 0) fail(ErrorCode::kInvalidArgument, "--runs must be >= 1 and --warmup >= 0");
  const int64_t concurrent = a.get_int("--concurrent", 1);
  if (concurrent < 1 || concurrent > 1024) fail(ErrorCode::kInvalidArgument, "--concurrent must be in [1, 1024], got ", concurrent);
  const bool show = !a.has("--no-progress") && isatty(STDERR_FILENO);
  const SessionBuilder builder = builder_from(a, path);
  auto t0 = std::chrono::steady_clock::now();
  Session s = builder.commit_from_file(path);
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto inputs = a.has("--inputs") ? read_inputs(s, a.get("--inputs"))
                                        : random_inputs(s, a.get_int("--int-max", 10), 42);
  Binding b(s);
  for (const auto& [name, v] : inputs) b.bind_input(name, v);
  for (int i = 0; i < warmup; ++i) {
    s.run(b);
    progress("warmup", i + 1, warmup, show);
  }
  std::vector<double> times;
  times.reserve(static_cast<size_t>(runs * concurrent));
  const auto w0 = std::chrono::steady_clock::now();
  if (concurrent == 1) {
    for (int i = 0; i < runs; ++i) {
      auto r0 = std::chrono::steady_clock::now();
      s.run(b);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r0).count());
      progress("bench", i + 1, runs, show);
    }
  } else {
    // --concurrent N: N threads share the session, each with its own binding, --runs runs each;
    // the latency figures are over every run of every thread.
    std::vector<std::vector<double>> per(static_cast<size_t>(concurrent));
    std::vector<std::string> errors(static_cast<size_t>(concurrent));
    std::vector<std::thread> threads;
    for (int64_t t = 0; t < concurrent; ++t)
      threads.emplace_back([&, t] {
        try {
          Binding mine(s);
          for (const auto& [name, v] : inputs) mine.bind_input(name, v);
          for (int i = 0; i < runs; ++i) {
            auto r0 = std::chrono::steady_clock::now();
            s.run(mine);
            per[t].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r0).count());
          }
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    for (auto& th : threads) th.join();
    for (int64_t t = 0; t < concurrent; ++t) {
      if (!errors[t].empty()) fail(ErrorCode::kRuntime, "bench thread ", t, ": ", errors[t]);
      times.insert(times.end(), per[t].begin(), per[t].end());
    }
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  const double throughput = static_cast<double>(times.size()) / std::max(wall_s, 1e-9);
  // --profile FILE / --per-node: --profile-runs more runs with node timing (kept out of the
  // latency figures). One profiled run says little on a noisy machine: the per-node figures are
  // medians over the runs, and the trace holds every run, one after another.
  if (a.has("--profile") || a.has("--per-node")) {
    const int prof_runs = static_cast<int>(a.get_int("--profile-runs", 10));
    if (prof_runs < 1) fail(ErrorCode::kInvalidArgument, "--profile-runs must be >= 1");
    b.enable_profiling();
    std::vector<std::vector<NodeTiming>> all;
    for (int i = 0; i < prof_runs; ++i) {
      s.run(b);
      all.push_back(b.profile());
    }
    if (a.has("--profile")) {
      // Chrome trace (chrome://tracing, Perfetto): one complete event per node and run, tagged
      // with EP/device; run k starts where run k - 1 ended.
      Json j;
      j.begin_object().key("traceEvents").begin_array();
      double base = 0;
      for (const auto& prof : all) {
        double end = 0;
        for (const auto& t : prof) {
          j.begin_object().key("name").value(t.node).key("cat").value(t.op_type).key("ph").value("X");
          j.key("ts").value(base + t.start_us).key("dur").value(t.duration_us).key("pid").value(1).key("tid").value(t.ep);
          j.key("args").begin_object().key("op_type").value(t.op_type).key("ep").value(t.ep).key("device").value(t.device);
          j.end_object().end_object();
          end = std::max(end, t.start_us + t.duration_us);
        }
        base += end;
      }
      j.end_array().key("displayTimeUnit").value("ms").end_object();
      std::ofstream f(a.get("--profile"));
      if (!f) fail(ErrorCode::kIo, "cannot write profile '", a.get("--profile"), "'");
      f << j.str() << "\n";
      if (!a.has("--json"))
        std::printf("profile:  %s (%zu nodes, %d runs)\n", a.get("--profile").c_str(), all.front().size(), prof_runs);
    }
    if (a.has("--per-node") && !a.has("--json")) {
      // Per node (the runs hold the same nodes in the same order): its median over the runs.
      std::vector<NodeTiming> med(all.front());
      std::vector<double> d(all.size());
      for (size_t k = 0; k < med.size(); ++k) {
        for (size_t r = 0; r < all.size(); ++r) d[r] = k < all[r].size() ? all[r][k].duration_us : 0.0;
        std::sort(d.begin(), d.end());
        med[k].duration_us = d.size() % 2 ? d[d.size() / 2] : 0.5 * (d[d.size() / 2 - 1] + d[d.size() / 2]);
      }
      std::vector<NodeTiming> sorted(med);
      std::sort(sorted.begin(), sorted.end(), [](const NodeTiming& x, const NodeTiming& y) { return x.duration_us > y.duration_us; });
      double total = 0;
      for (const auto& t : med) total += t.duration_us;
      std::map<std::string, double> per_op;
      for (const auto& t : med) per_op[t.op_type + " on " + t.ep] += t.duration_us;
      std::printf("slowest nodes (medians of %d profiled runs, %.3f ms in nodes):\n", prof_runs, total / 1000);
      for (size_t k = 0; k < std::min<size_t>(15, sorted.size()); ++k)
        std::printf("  %9.3f ms %5.1f%%  %-20s %-8s %s\n", sorted[k].duration_us / 1000, 100 * sorted[k].duration_us / total,
                    sorted[k].op_type.c_str(), sorted[k].ep.c_str(), sorted[k].node.c_str());
      std::vector<std::pair<double, std::string>> ops;
      for (auto& [k, v] : per_op) ops.emplace_back(v, k);
      std::sort(ops.rbegin(), ops.rend());
      std::printf("by op type:\n");
      for (size_t k = 0; k < std::min<size_t>(10, ops.size()); ++k)
        std::printf("  %9.3f ms %5.1f%%  %s\n", ops[k].first / 1000, 100 * ops[k].first / total, ops[k].second.c_str());
    }
  }
  std::sort(times.begin(), times.end());
  const double median = times.size() % 2 ? times[times.size() / 2] : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
  const double p90 = times[std::min(times.size() - 1, static_cast<size_t>(0.9 * static_cast<double>(times.size())))];
  const double mn = times.front();
  const double rss = peak_rss_mb();
  if (a.has("--json")) {
    Json j;
    j.begin_object();
    j.key("model").value(path);
    j.key("runs").value(runs);
    j.key("warmup").value(warmup);
    j.key("threads").value(static_cast<int64_t>(a.get_int("--threads", 0)));
    j.key("concurrent").value(concurrent);
    j.key("throughput_rps").value(throughput);
    j.key("median_ms").value(median);
    j.key("p90_ms").value(p90);
    j.key("min_ms").value(mn);
    j.key("load_ms").value(load_ms);
    j.key("peak_rss_mb").value(rss);
    j.end_object();
    std::printf("%s\n", j.str().c_str());
    return 0;
  }
  std::printf("model:    %s\n", path.c_str());
  if (concurrent > 1)
    std::printf("runs:     %d x %lld threads (after %d warm-up)\n", runs, static_cast<long long>(concurrent), warmup);
  else
    std::printf("runs:     %d (after %d warm-up)\n", runs, warmup);
  std::printf("median:   %.3f ms\n", median);
  std::printf("p90:      %.3f ms\n", p90);
  std::printf("min:      %.3f ms\n", mn);
  std::printf("rate:     %.1f runs/s\n", throughput);
  std::printf("load:     %.1f ms\n", load_ms);
  std::printf("peak RSS: %.1f MB\n", rss);
  return 0;
}

}  // namespace onyx::cli
