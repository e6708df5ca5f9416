// A small mutation driver for fuzz targets when libFuzzer is not available (GCC builds):
//   fuzz_driver ITERATIONS SEED_FILE...
// Each iteration takes a seed, applies random byte flips, insertions, deletions, truncation or
// varint-length tampering, and calls LLVMFuzzerTestOneInput. Deterministic (fixed PRNG seed).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ITERATIONS SEED_FILE...\n", argv[0]);
    return 2;
  }
  const long iterations = std::atol(argv[1]);
  std::vector<std::string> seeds;
  for (int i = 2; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    seeds.emplace_back((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  std::mt19937_64 rng(12345);
  for (long it = 0; it < iterations; ++it) {
    std::string d = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !d.empty(); ++e) {
      const size_t at = rng() % d.size();
      switch (rng() % 6) {
        case 0: d[at] = static_cast<char>(rng()); break;                          // flip a byte
        case 1: d[at] = static_cast<char>(d[at] ^ (1 << (rng() % 8))); break;     // flip a bit
        case 2: d.insert(at, 1, static_cast<char>(rng())); break;                 // insert
        case 3: d.erase(at, 1 + rng() % 4); break;                                // delete
        case 4: d.resize(at); break;                                              // truncate
        case 5: d[at] = static_cast<char>(0x80 | (rng() & 0x7f)); break;          // lengthen a varint
      }
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(d.data()), d.size());
  }
  std::printf("%ld inputs, no crash\n", iterations);
  return 0;
}
