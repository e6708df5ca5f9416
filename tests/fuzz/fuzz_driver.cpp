// A mutation driver for fuzz targets when libFuzzer is not available (GCC builds):
//
//   fuzz_driver [options] ITERATIONS SEED...
//     SEED                 a model file, or a folder searched recursively for *.onnx files
//     --seconds S          stop after S seconds even if ITERATIONS are not done (0: no bound)
//     --seed N             PRNG seed (default 12345): the same seed and seeds give the same inputs
//     --crash-dir DIR      where an input that crashes or hangs is written (default: .)
//     --timeout S          an input running longer than S seconds is a hang (default 20)
//     --max-seed-bytes N   skip seed files larger than N bytes (default 262144)
//     --corpus DIR         coverage-guided builds: seeds also from DIR, and every input that reaches
//                          new code is added to the seeds and written to DIR/cov-<hash>.onnx
//   fuzz_driver --replay FILE...   runs each file once, unmutated (the regression corpus)
//
// Coverage guidance (the CMake option ONYX_FUZZ_COVERAGE, `./dev fuzz`): libonyx is compiled with
// GCC's -fsanitize-coverage=trace-pc, which calls __sanitizer_cov_trace_pc() at every basic block;
// this driver then defines it, hashing each (previous block, block) edge into a 64 KiB map of hit
// counts. An input whose map has an edge not hit before, or a hit count in a bucket not seen before
// for its edge (1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+), joins the seeds, so later mutations
// start from the inputs that got furthest. Without the option the driver mutates its seeds alone.
//
// Each iteration takes a seed and either changes its protobuf structure (a field's value set to an
// edge case, a field deleted, duplicated, moved, renumbered or taken from another seed: the model
// still parses) or applies random byte flips, insertions, deletions, truncation, varint-length
// tampering or a splice with another seed; then it calls LLVMFuzzerTestOneInput.
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

#ifdef ONYX_FUZZ_COVERAGE
constexpr size_t kMapSize = size_t{1} << 16;
uint8_t g_hits[kMapSize];    // this input's edge hit counts (saturating)
uint8_t g_seen[kMapSize];    // every bucket bit seen so far, per edge
thread_local uintptr_t g_prev_block = 0;

/// AFL's buckets of a hit count, as one bit each.
uint8_t bucket(uint8_t n) {
  if (n == 0) return 0;
  if (n <= 3) return static_cast<uint8_t>(1u << (n - 1));
  if (n <= 7) return 8;
  if (n <= 15) return 16;
  if (n <= 31) return 32;
  if (n <= 127) return 64;
  return 128;
}

/// Whether the last input reached an edge, or an edge's count bucket, not seen before (and records
/// it); `edges` counts the edges ever reached.
bool new_coverage(size_t* edges) {
  bool fresh = false;
  for (size_t i = 0; i < kMapSize; ++i) {
    const uint8_t b = bucket(g_hits[i]);
    if (b & ~g_seen[i]) {
      fresh = true;
      if (!g_seen[i]) ++*edges;
      g_seen[i] |= b;
    }
  }
  return fresh;
}
#endif

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
  g_data = nullptr;
  signal(sig, SIG_DFL);
  raise(sig == SIGALRM ? SIGABRT : sig);
}

// Called by AddressSanitizer / UBSan before they exit on a report.
void on_sanitizer_death() {
  if (g_data) write_all(g_crash_path);
  g_data = nullptr;  // (the abort that follows must not write it again)
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
  } else if (fs::is_regular_file(p, ec)) {
    seeds.push_back(read_file(p));
  } else {
    std::fprintf(stderr, "fuzz_driver: no seed file or folder '%s' (skipped)\n", p.c_str());
  }
}

// ---------------------------------------------------------------------------------------------
// Structure-aware mutation. Models are protobuf: most random byte edits break the wire format
// and stop at the parser. This mutator parses the bytes generically (tag, wire type, value;
// length-delimited values that parse whole as messages are descended into), changes one field
// (a varint set to an edge value, a field deleted, duplicated or moved, a string swapped for one
// of the seeds' strings, a fixed32/64 set to NaN, infinity or a huge value, a field from another
// seed inserted) and re-encodes, so the model still parses and the change reaches the checks,
// shape inference and kernels.

struct Field {
  uint32_t num = 0;
  int wt = 0;         // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
  uint64_t v = 0;     // varint / fixed value
  std::string bytes;  // wt 2 (when not a message)
  std::vector<Field> sub;
  bool msg = false;   // wt 2 holding a parsed message
};

bool read_varint(const std::string& d, size_t& p, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < d.size(); shift += 7) {
    const uint8_t b = static_cast<uint8_t>(d[p++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

bool parse_fields(const std::string& d, std::vector<Field>& out, int depth) {
  size_t p = 0;
  while (p < d.size()) {
    uint64_t tag;
    if (!read_varint(d, p, tag) || (tag >> 3) == 0 || (tag >> 3) > (1u << 29)) return false;
    Field f;
    f.num = static_cast<uint32_t>(tag >> 3);
    f.wt = static_cast<int>(tag & 7);
    if (f.wt == 0) {
      if (!read_varint(d, p, f.v)) return false;
    } else if (f.wt == 1 || f.wt == 5) {
      const size_t n = f.wt == 1 ? 8 : 4;
      if (d.size() - p < n) return false;
      std::memcpy(&f.v, d.data() + p, n);
      p += n;
    } else if (f.wt == 2) {
      uint64_t len;
      if (!read_varint(d, p, len) || len > d.size() - p) return false;
      f.bytes = d.substr(p, len);
      p += len;
      if (depth < 12 && !f.bytes.empty() && parse_fields(f.bytes, f.sub, depth + 1)) {
        f.msg = true;
        f.bytes.clear();
      } else {
        f.sub.clear();
      }
    } else {
      return false;
    }
    out.push_back(std::move(f));
  }
  return true;
}

void put_varint(std::string& o, uint64_t v) {
  while (v >= 0x80) {
    o += static_cast<char>(v | 0x80);
    v >>= 7;
  }
  o += static_cast<char>(v);
}

std::string encode_fields(const std::vector<Field>& fs) {
  std::string o;
  for (const Field& f : fs) {
    put_varint(o, (static_cast<uint64_t>(f.num) << 3) | static_cast<uint64_t>(f.wt));
    if (f.wt == 0) {
      put_varint(o, f.v);
    } else if (f.wt == 1 || f.wt == 5) {
      o.append(reinterpret_cast<const char*>(&f.v), f.wt == 1 ? 8 : 4);
    } else {
      const std::string b = f.msg ? encode_fields(f.sub) : f.bytes;
      put_varint(o, b.size());
      o += b;
    }
  }
  return o;
}

/// Every field of a tree, depth first, with the list it lives in (for delete / duplicate / move).
void collect(std::vector<Field>& fs, std::vector<std::pair<std::vector<Field>*, size_t>>& out) {
  for (size_t i = 0; i < fs.size(); ++i) {
    out.emplace_back(&fs, i);
    if (fs[i].msg) collect(fs[i].sub, out);
  }
}

struct Pools {
  std::vector<std::string> strings;  // string values of the seeds (op types, names, attribute names)
  std::vector<Field> fields;         // fields of the seeds, to insert elsewhere
};

void gather(const std::vector<Field>& fs, Pools& pools, std::mt19937_64& rng) {
  for (const Field& f : fs) {
    if (f.msg) gather(f.sub, pools, rng);
    else if (f.wt == 2 && f.bytes.size() <= 64) pools.strings.push_back(f.bytes);
    if (rng() % 8 == 0 && encode_fields({f}).size() <= 4096) pools.fields.push_back(f);
  }
}

uint64_t edge_varint(uint64_t old, std::mt19937_64& rng) {
  static const uint64_t edges[] = {0, 1, 2, 3, 7, 8, 16, 255, 256, 65535, 1u << 20, 0x7fffffffu, 0x80000000u,
                                   0xffffffffu, uint64_t(1) << 32, uint64_t(1) << 40, uint64_t(1) << 62,
                                   0x7fffffffffffffffull, 0x8000000000000000ull, ~uint64_t(0), ~uint64_t(0) - 1};
  switch (rng() % 4) {
    case 0: return old + 1;
    case 1: return old - 1;
    case 2: return rng() % 64;
    default: return edges[rng() % (sizeof edges / sizeof edges[0])];
  }
}

uint64_t edge_fixed(int wt, std::mt19937_64& rng) {
  if (wt == 5) {
    static const uint32_t f32[] = {0x7fc00000u, 0x7f800000u, 0xff800000u, 0x7f7fffffu, 0x00000001u, 0x80000000u,
                                   0x3f800000u, 0xbf800000u, 0x4f000000u, 0xcf000000u};
    return rng() % 3 ? f32[rng() % (sizeof f32 / sizeof f32[0])] : static_cast<uint32_t>(rng());
  }
  static const uint64_t f64[] = {0x7ff8000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull,
                                 0x7fefffffffffffffull, 1, 0x3ff0000000000000ull, 0x43e0000000000000ull};
  return rng() % 3 ? f64[rng() % (sizeof f64 / sizeof f64[0])] : rng();
}

/// One structural change to `d`; false when `d` does not parse as protobuf.
bool mutate_structure(std::string& d, const Pools& pools, std::mt19937_64& rng) {
  std::vector<Field> root;
  if (!parse_fields(d, root, 0) || root.empty()) return false;
  const int changes = 1 + static_cast<int>(rng() % 3);
  for (int c = 0; c < changes; ++c) {
    std::vector<std::pair<std::vector<Field>*, size_t>> all;
    collect(root, all);
    if (all.empty()) break;
    auto [list, i] = all[rng() % all.size()];
    Field& f = (*list)[i];
    switch (rng() % 6) {
      case 0:  // change a value
        if (f.wt == 0) f.v = edge_varint(f.v, rng);
        else if (f.wt == 1 || f.wt == 5) f.v = edge_fixed(f.wt, rng);
        else if (!f.msg && !pools.strings.empty()) f.bytes = pools.strings[rng() % pools.strings.size()];
        else if (!f.msg && !f.bytes.empty()) f.bytes[rng() % f.bytes.size()] = static_cast<char>(rng());
        break;
      case 1: list->erase(list->begin() + static_cast<std::ptrdiff_t>(i)); break;  // delete
      case 2: list->insert(list->begin() + static_cast<std::ptrdiff_t>(i), Field(f)); break;  // duplicate
      case 3: {  // move within its message
        const size_t j = rng() % list->size();
        std::swap((*list)[i], (*list)[j]);
        break;
      }
      case 4:  // insert a field of some seed here
        if (!pools.fields.empty())
          list->insert(list->begin() + static_cast<std::ptrdiff_t>(i), pools.fields[rng() % pools.fields.size()]);
        break;
      default:  // the field's number changed (another field of the same message)
        f.num = 1 + static_cast<uint32_t>(rng() % 16);
        break;
    }
  }
  d = encode_fields(root);
  return true;
}

}  // namespace

#ifdef ONYX_FUZZ_COVERAGE
// Called by every basic block of the code compiled with -fsanitize-coverage=trace-pc (libonyx).
// Worker threads race on the counters; a lost increment only blurs a count.
extern "C" __attribute__((visibility("default"))) void __sanitizer_cov_trace_pc() {
  const auto pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  const uintptr_t block = (pc ^ (pc >> 13)) & (kMapSize - 1);
  uint8_t& h = g_hits[block ^ g_prev_block];
  if (h != 255) ++h;
  g_prev_block = block >> 1;
}
#endif

extern "C" void __sanitizer_set_death_callback(void (*)(void)) __attribute__((weak));

// Sanitizer defaults (the environment's ASAN_OPTIONS / UBSAN_OPTIONS still override them): a report
// aborts, so that the SIGABRT handler writes the input even where the death callback is not
// called (GCC's UBSan runtime keeps its own).
extern "C" __attribute__((visibility("default"))) const char* __ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1:abort_on_error=1";
}
extern "C" __attribute__((visibility("default"))) const char* __asan_default_options() {
  return "abort_on_error=1:allocator_may_return_null=1";
}
// Counters a target may define (fuzz_loader.cpp does): inputs that loaded, and that also ran.
extern "C" uint64_t onyx_fuzz_loaded __attribute__((weak));
extern "C" uint64_t onyx_fuzz_ran __attribute__((weak));

int main(int argc, char** argv) {
  double seconds = 0, timeout = 20;
  uint64_t prng_seed = 12345;
  size_t max_seed_bytes = 262144;
  std::string crash_dir = ".";
  std::string corpus_dir;
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
    else if (a == "--corpus") corpus_dir = value();
    else pos.push_back(a);
  }
  if (pos.size() < (replay ? 1u : 2u)) {
    std::fprintf(stderr, "usage: %s [--seconds S] [--seed N] [--crash-dir DIR] [--timeout S] [--corpus DIR] ITERATIONS SEED...\n"
                 "       %s --replay FILE...\n", argv[0], argv[0]);
    return 2;
  }
  {
    std::error_code ec;
    std::filesystem::create_directories(crash_dir, ec);  // (the handlers can only write into it)
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
  [[maybe_unused]] size_t added = 0, edges = 0;
#ifdef ONYX_FUZZ_COVERAGE
  if (!corpus_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(corpus_dir, ec);
    add_seeds(corpus_dir, max_seed_bytes, seeds);
  }
  // The seeds' own coverage first, so that only what they do not reach counts as new.
  for (const auto& sd : seeds) {
    std::memset(g_hits, 0, sizeof g_hits);
    set_current(sd, crash_dir);
    alarm(alarm_s);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(sd.data()), sd.size());
    alarm(0);
    new_coverage(&edges);
  }
  std::printf("coverage: %zu seeds reach %zu edges\n", seeds.size(), edges);
  std::fflush(stdout);
#else
  if (!corpus_dir.empty()) add_seeds(corpus_dir, max_seed_bytes, seeds);
#endif
  if (seeds.empty()) {
    std::fprintf(stderr, "fuzz_driver: no seed files\n");
    return 2;
  }
  std::mt19937_64 rng(prng_seed);
  Pools pools;
  for (const auto& sd : seeds) {
    std::vector<Field> fs;
    if (parse_fields(sd, fs, 0)) gather(fs, pools, rng);
  }
  const auto t0 = std::chrono::steady_clock::now();
  long it = 0;
  for (; it < iterations; ++it) {
    if (seconds > 0 && (it & 15) == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > seconds)
      break;
    std::string d = seeds[rng() % seeds.size()];
    // Half the inputs get structural changes (still valid protobuf), half raw byte edits.
    const bool structural = rng() % 2 == 0 && mutate_structure(d, pools, rng);
    const int edits = structural ? 0 : 1 + static_cast<int>(rng() % 8);
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
#ifdef ONYX_FUZZ_COVERAGE
    std::memset(g_hits, 0, sizeof g_hits);
#endif
    alarm(alarm_s);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(d.data()), d.size());
    alarm(0);
#ifdef ONYX_FUZZ_COVERAGE
    if (new_coverage(&edges) && d.size() <= max_seed_bytes) {
      ++added;
      if (!corpus_dir.empty()) {
        char name[64];
        std::snprintf(name, sizeof name, "/cov-%016llx.onnx", static_cast<unsigned long long>(fnv1a(d.data(), d.size())));
        std::ofstream(corpus_dir + name, std::ios::binary).write(d.data(), static_cast<std::streamsize>(d.size()));
      }
      seeds.push_back(std::move(d));
    }
#endif
  }
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%ld inputs from %zu seeds in %.0f s, no crash and no hang", it, seeds.size() - added, el);
#ifdef ONYX_FUZZ_COVERAGE
  std::printf(" (coverage-guided: %zu edges, %zu inputs added to the seeds)", edges, added);
#endif
  if (&onyx_fuzz_loaded && &onyx_fuzz_ran)
    std::printf(" (%llu loaded, %llu also ran)", static_cast<unsigned long long>(onyx_fuzz_loaded),
                static_cast<unsigned long long>(onyx_fuzz_ran));
  std::printf("\n");
  return 0;
}
