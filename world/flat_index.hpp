#pragma once
// A hash index of 32-bit positions (into a vector the caller owns), for
// finding an agent by id or a post by id in one or two memory reads where a
// binary search over a million entries takes twenty, each a cache miss.
// Open addressing, linear probing, at most half full: 8 to 16 bytes an entry.
// The caller gives each entry's hash and says which entry matches, so the
// keys are never copied into the index.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace troupe {

class flat_index {
 public:
  static constexpr std::uint32_t absent = 0xffffffffu;

  // The first position whose hash is `hash` and for which matches(position)
  // holds, or absent.
  template <class Matches>
  std::uint32_t find(std::uint64_t hash, Matches&& matches) const {
    if (slots_.empty()) return absent;
    for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const std::uint32_t s = slots_[i];
      if (s == 0) return absent;
      if (matches(s - 1)) return s - 1;
    }
  }

  // Adds a position (not there yet); hash_of(position) rehashes the ones
  // held when the table grows.
  template <class HashOf>
  void insert(std::uint64_t hash, std::uint32_t position, HashOf&& hash_of) {
    if (2 * (size_ + 1) > slots_.size()) {
      std::vector<std::uint32_t> old = std::move(slots_);
      slots_.assign(old.empty() ? 16 : old.size() * 2, 0);
      mask_ = slots_.size() - 1;
      for (const std::uint32_t s : old)
        if (s != 0) place(hash_of(s - 1), s);
    }
    place(hash, position + 1);
    ++size_;
  }

  // Room for n positions without growing.
  void reserve(std::size_t n) {
    std::size_t slots = 16;
    while (slots < 2 * n) slots *= 2;
    if (slots > slots_.size() && size_ == 0) {
      slots_.assign(slots, 0);
      mask_ = slots - 1;
    }
  }

  std::size_t memory_bytes() const { return slots_.capacity() * sizeof(std::uint32_t); }

 private:
  void place(std::uint64_t hash, std::uint32_t slot) {
    std::size_t i = hash & mask_;
    while (slots_[i] != 0) i = (i + 1) & mask_;
    slots_[i] = slot;
  }

  std::vector<std::uint32_t> slots_;  // position + 1; 0: empty
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace troupe
