#include "runtime/random_ids.hpp"

#include <atomic>
#include <random>

namespace troupe {

namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t process_seed() {
  static const std::uint64_t seed = [] {
    std::random_device rd;
    return (std::uint64_t{rd()} << 32) ^ rd();
  }();
  return seed;
}

std::atomic<std::uint64_t> sources_created{0};

}  // namespace

random_ids::random_ids() : random_ids(process_seed() ^ (sources_created.fetch_add(1) * 0x9e37ULL)) {}

random_ids::random_ids(std::uint64_t seed) {
  for (auto& word : s_) word = splitmix64(seed);
}

std::uint64_t random_ids::next_u64() {
  const auto rotl = [](std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

std::string random_ids::next(std::string_view kind) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string id;
  id.reserve(kind.size() + 17);
  id.append(kind);
  id.push_back('_');
  std::uint64_t v = next_u64();
  for (int i = 0; i < 16; ++i, v >>= 4) id.push_back(hex[v & 15]);
  return id;
}

}  // namespace troupe
