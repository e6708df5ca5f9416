// onyx: command-line interface. Exit code 0 on success, 1 on an error (message on stderr).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli.hpp"

namespace {

void usage(FILE* f) {
  std::fprintf(f,
               "usage: onyx <command> [options]\n"
               "\n"
               "commands:\n"
               "  info MODEL [--json]                 inputs, outputs, opsets, op counts\n"
               "  run MODEL [--inputs DIR] [--save DIR] [--dim NAME=N]... [--threads N] [--runs N] [--json]\n"
               "                                      run once and summarise the outputs\n"
               "  bench MODEL [--runs N] [--warmup N] [--threads N] [--dim NAME=N]... [--json]\n"
               "        [--per-node] [--profile FILE] [--profile-runs N]\n"
               "                                      latency (median, p90, min), load time, peak memory\n"
               "  explain MODEL [--ep LIST] [--json | --dot]\n"
               "                                      where every node runs and why, copies, summary\n"
               "  providers [--json]                  every execution provider: built, loadable, usable, options\n"
               "  ops [--json | --markdown]           every operator: its opset versions, the CPU EP's versions and types\n"
               "  version                             print the onyx version\n"
               "\n"
               "run, bench and explain take --ep NAME[,NAME...] (priority order), --require-ep (every listed\n"
               "EP must register), --strict (no CPU fallback) and --ep-option NAME.KEY=VALUE.\n");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace onyx;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "version" || cmd == "--version") {
      std::printf("onyx %s\n", onyx::version());
      return 0;
    }
    if (cmd == "info") return cli::cmd_info(cli::parse_args(argc, argv, 2, {"--json"}, {}));
    const std::vector<std::string> ep_flags = {"--require-ep", "--strict"};
    auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };
    if (cmd == "run")
      return cli::cmd_run(cli::parse_args(argc, argv, 2, with({"--json", "--quiet"}, ep_flags),
                                          {"--inputs", "--save", "--dim", "--threads", "--int-max", "--seed", "--ep", "--ep-option", "--runs"}));
    if (cmd == "bench")
      return cli::cmd_bench(cli::parse_args(argc, argv, 2, with({"--json", "--no-progress", "--per-node"}, ep_flags),
                                            {"--runs", "--warmup", "--threads", "--dim", "--inputs", "--int-max", "--ep",
                                             "--ep-option", "--profile", "--profile-runs"}));
    if (cmd == "explain")
      return cli::cmd_explain(cli::parse_args(argc, argv, 2, with({"--json", "--dot"}, ep_flags),
                                              {"--dim", "--threads", "--ep", "--ep-option"}));
    if (cmd == "providers") return cli::cmd_providers(cli::parse_args(argc, argv, 2, {"--json"}, {}));
    if (cmd == "ops") return cli::cmd_ops(cli::parse_args(argc, argv, 2, {"--json", "--markdown"}, {}));
    std::fprintf(stderr, "onyx: unknown command '%s'\n\n", cmd.c_str());
    usage(stderr);
    return 1;
  } catch (const onyx::Error& e) {
    std::fprintf(stderr, "onyx %s: error (%s): %s\n", cmd.c_str(), std::string(onyx::error_code_name(e.code())).c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onyx %s: error: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
