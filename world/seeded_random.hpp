#pragma once
// Random numbers whose every output this file fixes (splitmix64, and draws
// built on it here, not std::uniform_*_distribution, whose results differ
// between standard libraries): a seed makes the same graph, and the same
// agent is activated in the same round, with any compiler. Not for secrets.
//
// Two forms: a sequence (seeded_random, for a generator that draws many
// numbers in a row) and a draw that is a pure function of its inputs
// (draw64: the seed, the round, the agent), for draws that must not depend
// on the order in which threads reached them.

#include <cstdint>

namespace troupe {

inline constexpr std::uint64_t golden_gamma = 0x9e3779b97f4a7c15ULL;

// splitmix64's output function: a bijection that spreads every input bit
// over the output.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += golden_gamma;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// 64 bits drawn for (seed, a, b, c): each input is mixed in turn, so (1, 2)
// and (2, 1) draw differently.
constexpr std::uint64_t draw64(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0) {
  return mix64(mix64(mix64(mix64(seed) ^ a) ^ b) ^ c);
}

// A number in [0, 1) from 64 drawn bits, with the 53 bits a double holds.
constexpr double unit_draw(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// A number in [0, n), n > 0, from 64 drawn bits, by multiply-shift: the bias
// is below n / 2^64, far under anything a simulation can see.
constexpr std::uint64_t bounded_draw(std::uint64_t bits, std::uint64_t n) {
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(bits) * n) >> 64);
}

class seeded_random {
 public:
  explicit seeded_random(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    const std::uint64_t x = state_;
    state_ += golden_gamma;
    return mix64(x);
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
