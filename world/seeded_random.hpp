#pragma once
// A seeded source of random numbers whose every output this file fixes
// (splitmix64, and draws built on it here, not std::uniform_*_distribution,
// whose results differ between standard libraries): a seed makes the same
// graph with any compiler. Eight bytes of state; not for secrets.

#include <cstdint>

namespace troupe {

class seeded_random {
 public:
  explicit seeded_random(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, bound), bound > 0. A plain `next() % bound` favours the
  // low values; the draws below 2^64 mod bound are thrown away instead, so
  // every value has the same number of draws left mapping to it.
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t threshold = (0 - bound) % bound;
    for (;;) {
      const std::uint64_t r = next();
      if (r >= threshold) return r % bound;
    }
  }

  // Uniform in [0, 1), with the 53 bits a double holds.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

}  // namespace troupe
