#pragma once
// Random draws that are a pure function of their inputs: the same seed,
// agent and round give the same draw on every machine and standard library
// (std::uniform_*_distribution differs between them), and no draw depends
// on the order threads reached it.

#include <cstdint>

namespace troupe {

// splitmix64's finalizer: a bijection that spreads every input bit over the output.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// 64 bits drawn for (seed, a, b, c): each input is mixed in turn, so
// (1, 2) and (2, 1) draw differently.
constexpr std::uint64_t draw64(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0) {
  return mix64(mix64(mix64(mix64(seed) ^ a) ^ b) ^ c);
}

// A number in [0, 1) with 53 random bits.
constexpr double unit_draw(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// A number in [0, n), n > 0, by Lemire's multiply-shift: the bias is below
// n / 2^64, far under anything a simulation can see.
constexpr std::uint64_t below(std::uint64_t bits, std::uint64_t n) {
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(bits) * n) >> 64);
}

}  // namespace troupe
