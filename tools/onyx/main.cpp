// onyx: command-line interface. Exit code 0 on success, 1 on an error (message on stderr).
//
// Each command's options are declared once, in the table below: the parser accepts exactly those,
// and `onyx --help` / `onyx COMMAND --help` print them.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli.hpp"

namespace {

using onyx::cli::Args;

struct Option {
  const char* name;     // "--dim"
  const char* value;    // "NAME=N"; nullptr for a flag
  const char* help;
  bool repeatable = false;
};

struct Command {
  const char* name;
  const char* operands;  // "MODEL", or ""
  const char* summary;
  std::vector<Option> options;
  int (*run)(const Args&);
};

// Options that run, bench and explain share.
std::vector<Option> session_options(std::vector<Option> own) {
  const std::vector<Option> common = {
      {"--dim", "NAME=N", "set the symbolic dim NAME of every input that has it; a dim left unset is 1", true},
      {"--dim", "INPUT:AXIS=N", "set dim AXIS of input INPUT, named or not: float[?,3] takes --dim x:0=4", true},
      {"--threads", "N", "intra-op threads (default 0: one per core)"},
      {"--no-spin", nullptr, "intra-op threads sleep at once between kernels instead of spinning briefly (a busy machine)"},
      {"--memory-limit", "MB", "cap the host memory the session's runs hold (activations, outputs): OutOfMemory past it"},
      {"--ep", "NAME[,NAME...]", "execution providers in priority order (onyx providers lists them); the CPU EP is last"},
      {"--ep-option", "NAME.KEY=VALUE",
       "set an option of EP NAME, which --ep lists; cpu.* applies to the CPU EP in any case", true},
      {"--require-ep", nullptr, "every EP given with --ep must register (else: skipped, with a warning)"},
      {"--strict", nullptr, "no CPU fallback: a node no listed EP takes is an error"},
      {"--save-optimized", "FILE", "write the model as onyx runs it (after the optimizer) to FILE, as ONNX"},
  };
  own.insert(own.end(), common.begin(), common.end());
  return own;
}

int cmd_version(const Args&) {
  std::printf("onyx %s\n", onyx::version());
  return 0;
}

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"info", "MODEL", "inputs, outputs, opsets, op counts (read from the file: no session is built)",
       {{"--json", nullptr, "one JSON object"}},
       onyx::cli::cmd_info},
      {"run", "MODEL", "run the model (twice by default) and summarise the outputs, placement and latency",
       session_options({
           {"--inputs", "DIR", "read input_N.pb files (an ONNX backend-test data set) instead of random inputs"},
           {"--save", "DIR", "write every output as output_N.pb"},
           {"--runs", "N", "runs (default 2: the first plans for the input shapes, the later ones show steady-state latency)"},
           {"--int-max", "N", "random integer inputs are in [0, N) (default 10)"},
           {"--seed", "N", "seed of the random inputs (default 42)"},
           {"--json", nullptr, "one JSON object"},
           {"--quiet", nullptr, "no placement table"},
       }),
       onyx::cli::cmd_run},
      {"bench", "MODEL", "latency (median, p90, min), load time, peak memory",
       session_options({
           {"--runs", "N", "timed runs (default 50)"},
           {"--warmup", "N", "untimed runs first (default 5)"},
           {"--inputs", "DIR", "read input_N.pb files instead of random inputs"},
           {"--int-max", "N", "random integer inputs are in [0, N) (default 10)"},
           {"--json", nullptr, "one JSON object"},
           {"--no-progress", nullptr, "no progress bar"},
           {"--concurrent", "N", "N threads run the one session at once, --runs each; adds throughput (runs/s)"},
           {"--per-node", nullptr, "the slowest nodes and op types (medians of the profiled runs)"},
           {"--profile", "FILE", "write a Chrome trace of the profiled runs"},
           {"--profile-runs", "N", "profiled runs for --per-node and --profile (default 10)"},
       }),
       onyx::cli::cmd_bench},
      {"explain", "MODEL", "where every node runs and why, copies, summary",
       session_options({
           {"--json", nullptr, "one JSON object"},
           {"--dot", nullptr, "a Graphviz graph coloured by EP"},
       }),
       onyx::cli::cmd_explain},
      {"generate", "MODEL", "greedy decoding with a decoder LLM's key/value cache: tokens, time to first token, tokens/s",
       session_options({
           {"--prompt-ids", "IDS", "the prompt's token ids, comma-separated (required)"},
           {"--max-new-tokens", "N", "tokens to generate (default 32)"},
           {"--eos", "IDS", "stop after generating one of these token ids"},
           {"--share-buffer", nullptr, "past and present share one preallocated buffer per layer (GroupQueryAttention models)"},
           {"--max-length", "N", "with --share-buffer: the buffer's positions (default: prompt + new tokens)"},
           {"--runs", "N", "generate N times; timings are medians over the runs after the first (default 1)"},
           {"--json", nullptr, "one JSON object"},
       }),
       onyx::cli::cmd_generate},
      {"providers", "", "every execution provider: built, loadable, usable, options",
       {{"--json", nullptr, "a JSON list"}},
       onyx::cli::cmd_providers},
      {"ops", "", "every operator: its opset versions, the CPU EP's versions and types",
       {{"--json", nullptr, "a JSON list"}, {"--markdown", nullptr, "the table of docs/operators.md"}},
       onyx::cli::cmd_ops},
      {"version", "", "print the onyx version", {}, cmd_version},
  };
  return table;
}

std::string option_text(const Option& o) {
  std::string s = o.name;
  if (o.value) {
    s += ' ';
    s += o.value;
  }
  return s;
}

/// "run MODEL [--inputs DIR] ... [--dim NAME=N]...", wrapped at about 100 columns.
std::string synopsis(const Command& c) {
  std::string out = "  ";
  out += c.name;
  if (*c.operands) {
    out += ' ';
    out += c.operands;
  }
  size_t line = out.size();
  for (const Option& o : c.options) {
    std::string item = "[";
    item += option_text(o);
    item += o.repeatable ? "]..." : "]";
    if (line + 1 + item.size() > 100) {
      out += "\n       ";
      line = 7;
    }
    out += ' ';
    out += item;
    line += 1 + item.size();
  }
  return out;
}

void usage(FILE* f) {
  std::fprintf(f, "usage: onyx <command> [options]\n\ncommands:\n");
  for (const Command& c : commands()) std::fprintf(f, "%s\n      %s\n", synopsis(c).c_str(), c.summary);
  std::fprintf(f,
               "\n`onyx <command> --help` explains each option of a command. Every command exits 0 on success, 1 on\n"
               "an error (the message on stderr).\n");
}

void command_usage(const Command& c) {
  std::printf("usage: onyx %s%s%s%s\n\n%s\n", c.name, *c.operands ? " " : "", c.operands, c.options.empty() ? "" : " [options]",
              c.summary);
  if (c.options.empty()) return;
  std::printf("\noptions:\n");
  for (const Option& o : c.options) {
    const std::string t = option_text(o);
    std::printf("  %-28s %s%s\n", t.c_str(), o.help, o.repeatable ? " (repeatable)" : "");
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace onyx;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  std::string cmd = argv[1];
  if (cmd == "--version") cmd = "version";
  if (cmd == "help") {  // onyx help [COMMAND]
    if (argc < 3) {
      usage(stdout);
      return 0;
    }
    for (const Command& c : commands())
      if (argv[2] == std::string(c.name)) {
        command_usage(c);
        return 0;
      }
    std::fprintf(stderr, "onyx: unknown command '%s'\n\n", argv[2]);
    usage(stderr);
    return 1;
  }
  const Command* command = nullptr;
  for (const Command& c : commands())
    if (cmd == c.name) command = &c;
  if (!command) {
    std::fprintf(stderr, "onyx: unknown command '%s'\n\n", cmd.c_str());
    usage(stderr);
    return 1;
  }
  for (int i = 2; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      command_usage(*command);
      return 0;
    }
  try {
    std::vector<std::string> flags, valued;
    for (const Option& o : command->options) (o.value ? valued : flags).push_back(o.name);
    return command->run(cli::parse_args(argc, argv, 2, flags, valued));
  } catch (const onyx::Error& e) {
    std::fprintf(stderr, "onyx %s: error (%s): %s\n", cmd.c_str(), std::string(onyx::error_code_name(e.code())).c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onyx %s: error: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
