// A mutation driver for fuzz targets when libFuzzer is not available (GCC builds):
//
//   fuzz_driver [options] ITERATIONS SEED...
//     SEED                 a model file, or a folder searched recursively for *.onnx files
//     --seconds S          stop after S seconds even if ITERATIONS are not done (0: no bound)
//     --seed N             PRNG seed (default 12345): the same seed and seeds give the same inputs
//     --crash-dir DIR      where an input that crashes or hangs is written (default: .)
//     --timeout S          an input running longer than S seconds is a hang (default 20)
//     --max-seed-bytes N   skip seed files larger than N bytes (default 262144)
//   fuzz_driver --replay FILE...   runs each file once, unmutated (the regression corpus)
//
// Each iteration takes a seed, applies random byte flips, insertions, deletions, truncation,
// varint-length tampering or a splice with another seed, and calls LLVMFuzzerTestOneInput.
// A crash (signal, sanitizer report) or a hang writes the input to DIR/crash-<hash>.onnx or
// DIR/hang-<hash>.onnx before the process dies, so it can be replayed and kept as a regression.
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The input being run, for the crash handlers (which may only use async-signal-safe calls).
const char* g_data = nullptr;
size_t g_size = 0;
char g_crash_path[4096];
char g_hang_path[4096];

uint64_t fnv1a(const char* d, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(d[i])) * 1099511628211ull;
  return h;
}

void write_all(const char* path) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  size_t off = 0;
  while (off < g_size) {
    const ssize_t w = write(fd, g_data + off, g_size - off);
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
  close(fd);
  const char msg[] = "\nfuzz_driver: the input was written to ";
  (void)!write(2, msg, sizeof msg - 1);
  (void)!write(2, path, strlen(path));
  (void)!write(2, "\n", 1);
}

void on_crash(int sig) {
  if (g_data) write_all(sig == SIGALRM ? g_hang_path : g_crash_path);
  signal(sig, SIG_DFL);
  raise(sig == SIGALRM ? SIGABRT : sig);
}

// Called by AddressSanitizer / UBSan before they exit on a report.
void on_sanitizer_death() {
  if (g_data) write_all(g_crash_path);
}

void set_current(const std::string& d, const std::string& dir) {
  g_data = d.data();
  g_size = d.size();
  const unsigned long long h = static_cast<unsigned long long>(fnv1a(d.data(), d.size()));
  std::snprintf(g_crash_path, sizeof g_crash_path, "%s/crash-%016llx.onnx", dir.c_str(), h);
  std::snprintf(g_hang_path, sizeof g_hang_path, "%s/hang-%016llx.onnx", dir.c_str(), h);
}

std::string read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void add_seeds(const std::string& p, size_t max_bytes, std::vector<std::string>& seeds) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    std::vector<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec))
      if (e.is_regular_file(ec) && e.path().extension() == ".onnx" && e.file_size(ec) <= max_bytes)
        files.push_back(e.path().string());
    std::sort(files.begin(), files.end());  // a stable order: the same run on every machine
    for (const auto& f : files) seeds.push_back(read_file(f));
  } else {
    seeds.push_back(read_file(p));
  }
}

}  // namespace

extern "C" void __sanitizer_set_death_callback(void (*)(void)) __attribute__((weak));

int main(int argc, char** argv) {
  double seconds = 0, timeout = 20;
  uint64_t prng_seed = 12345;
  size_t max_seed_bytes = 262144;
  std::string crash_dir = ".";
  bool replay = false;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "fuzz_driver: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seconds") seconds = std::atof(value().c_str());
    else if (a == "--seed") prng_seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--crash-dir") crash_dir = value();
    else if (a == "--timeout") timeout = std::atof(value().c_str());
    else if (a == "--max-seed-bytes") max_seed_bytes = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--replay") replay = true;
    else pos.push_back(a);
  }
  if (pos.size() < (replay ? 1u : 2u)) {
    std::fprintf(stderr, "usage: %s [--seconds S] [--seed N] [--crash-dir DIR] [--timeout S] ITERATIONS SEED...\n"
                 "       %s --replay FILE...\n", argv[0], argv[0]);
    return 2;
  }
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) std::signal(sig, on_crash);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_sanitizer_death);
  const unsigned alarm_s = timeout > 0 ? static_cast<unsigned>(timeout + 0.999) : 0;

  if (replay) {
    for (const auto& p : pos) {
      const std::string d = read_file(p);
      set_current(d, crash_dir);
      alarm(alarm_s);
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(d.data()), d.size());
      alarm(0);
      std::printf("ok   %s\n", p.c_str());
    }
    std::printf("%zu inputs replayed, no crash\n", pos.size());
    return 0;
  }

  const long iterations = std::atol(pos[0].c_str());
  std::vector<std::string> seeds;
  for (size_t i = 1; i < pos.size(); ++i) add_seeds(pos[i], max_seed_bytes, seeds);
  if (seeds.empty()) {
    std::fprintf(stderr, "fuzz_driver: no seed files\n");
    return 2;
  }
  std::mt19937_64 rng(prng_seed);
  const auto t0 = std::chrono::steady_clock::now();
  long it = 0;
  for (; it < iterations; ++it) {
    if (seconds > 0 && (it & 15) == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > seconds)
      break;
    std::string d = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !d.empty(); ++e) {
      const size_t at = rng() % d.size();
      switch (rng() % 7) {
        case 0: d[at] = static_cast<char>(rng()); break;                          // flip a byte
        case 1: d[at] = static_cast<char>(d[at] ^ (1 << (rng() % 8))); break;     // flip a bit
        case 2: d.insert(at, 1, static_cast<char>(rng())); break;                 // insert
        case 3: d.erase(at, 1 + rng() % 4); break;                                // delete
        case 4: d.resize(at); break;                                              // truncate
        case 5: d[at] = static_cast<char>(0x80 | (rng() & 0x7f)); break;          // lengthen a varint
        case 6: {                                                                 // splice another seed in
          const std::string& o = seeds[rng() % seeds.size()];
          if (o.empty()) break;
          const size_t from = rng() % o.size(), len = 1 + rng() % std::min<size_t>(64, o.size() - from);
          d.replace(at, std::min(len, d.size() - at), o, from, len);
          break;
        }
      }
    }
    set_current(d, crash_dir);
    alarm(alarm_s);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(d.data()), d.size());
    alarm(0);
  }
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%ld inputs from %zu seeds in %.0f s, no crash and no hang\n", it, seeds.size(), el);
  return 0;
}
