#pragma once
// For each agent, the newest `capacity` values pushed to it (a ring), how
// many were pushed in all, and how many of those it has seen: a feed, an
// inbox. A ring is allocated on its agent's first push, so a million
// agents that receive nothing cost 12 bytes each, and one that does
// 4 * capacity more, with no allocation of its own.

#include <cstdint>
#include <limits>
#include <vector>

namespace troupe {

class bounded_lists {
 public:
  bounded_lists() = default;
  bounded_lists(std::uint32_t agents, std::uint32_t capacity)
      : capacity_(capacity), block_(agents, no_block), pushed_(agents, 0), seen_(agents, 0) {}

  std::uint32_t capacity() const { return capacity_; }

  void push(std::uint32_t agent, std::uint32_t value) {
    if (capacity_ > 0) {
      if (block_[agent] == no_block) {
        block_[agent] = blocks_++;
        values_.resize(values_.size() + capacity_);
      }
      values_[static_cast<std::size_t>(block_[agent]) * capacity_ + pushed_[agent] % capacity_] = value;
    }
    ++pushed_[agent];
  }

  // Pushed since the agent last saw its list (counts wrap at 2^32 together,
  // so the difference holds).
  std::uint32_t unseen(std::uint32_t agent) const { return pushed_[agent] - seen_[agent]; }
  void mark_seen(std::uint32_t agent) { seen_[agent] = pushed_[agent]; }

  // The newest min(count, capacity) values, newest first.
  template <class F>
  void for_each_newest(std::uint32_t agent, std::uint32_t count, F&& f) const {
    if (capacity_ == 0 || block_[agent] == no_block) return;
    const std::uint32_t n = count < capacity_ ? count : capacity_;
    const std::size_t base = static_cast<std::size_t>(block_[agent]) * capacity_;
    for (std::uint32_t i = 1; i <= n; ++i) f(values_[base + (pushed_[agent] - i) % capacity_]);
  }

  std::size_t memory_bytes() const {
    return (block_.capacity() + pushed_.capacity() + seen_.capacity() + values_.capacity()) * sizeof(std::uint32_t);
  }

 private:
  static constexpr std::uint32_t no_block = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t capacity_ = 0;
  std::uint32_t blocks_ = 0;
  std::vector<std::uint32_t> block_;   // per agent: its ring's place in values_, or no_block
  std::vector<std::uint32_t> pushed_;  // per agent
  std::vector<std::uint32_t> seen_;    // per agent
  std::vector<std::uint32_t> values_;
};

}  // namespace troupe
