#pragma once
// For each agent, N bounded lists (a feed, an inbox, ...): the newest
// `capacity` values pushed to each list (a ring), how many were pushed in
// all, and how many of those the agent has seen. A ring is allocated on its
// list's first push to the agent, so a million agents that receive nothing
// cost 12 bytes a list each, and one that does 4 * capacity more, with no
// allocation of its own. An agent's counters for all N lists sit side by
// side: a delivery and an observation read them with one cache miss.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace troupe {

template <std::size_t N>
class bounded_lists {
 public:
  bounded_lists() = default;
  bounded_lists(std::uint32_t agents, const std::array<std::uint32_t, N>& capacities)
      : cursors_(agents), capacity_(capacities) {}

  std::uint32_t capacity(std::size_t list) const { return capacity_[list]; }

  void push(std::size_t list, std::uint32_t agent, std::uint32_t value) {
    cursor& c = cursors_[agent][list];
    const std::uint32_t cap = capacity_[list];
    if (cap > 0) {
      if (c.block == no_block) {
        c.block = blocks_[list]++;
        values_[list].resize(values_[list].size() + cap);
      }
      values_[list][static_cast<std::size_t>(c.block) * cap + c.pushed % cap] = value;
    }
    ++c.pushed;
  }

  // Pushed since the agent last saw its list (counts wrap at 2^32 together,
  // so the difference holds).
  std::uint32_t unseen(std::size_t list, std::uint32_t agent) const {
    const cursor& c = cursors_[agent][list];
    return c.pushed - c.seen;
  }
  // Every list of the agent.
  void mark_seen(std::uint32_t agent) {
    for (cursor& c : cursors_[agent]) c.seen = c.pushed;
  }

  // The newest min(count, capacity) values, newest first.
  template <class F>
  void for_each_newest(std::size_t list, std::uint32_t agent, std::uint32_t count, F&& f) const {
    const cursor& c = cursors_[agent][list];
    const std::uint32_t cap = capacity_[list];
    if (cap == 0 || c.block == no_block) return;
    const std::uint32_t n = count < cap ? count : cap;
    const std::size_t base = static_cast<std::size_t>(c.block) * cap;
    for (std::uint32_t i = 1; i <= n; ++i) f(values_[list][base + (c.pushed - i) % cap]);
  }

  std::size_t memory_bytes() const {
    std::size_t bytes = cursors_.capacity() * sizeof(cursors_[0]);
    for (const auto& v : values_) bytes += v.capacity() * sizeof(std::uint32_t);
    return bytes;
  }

 private:
  static constexpr std::uint32_t no_block = 0xffffffffu;
  struct cursor {
    std::uint32_t block = no_block;  // the ring's place in values_, in rings
    std::uint32_t pushed = 0;
    std::uint32_t seen = 0;
  };
  std::vector<std::array<cursor, N>> cursors_;  // per agent
  std::array<std::vector<std::uint32_t>, N> values_{};
  std::array<std::uint32_t, N> capacity_{};
  std::array<std::uint32_t, N> blocks_{};
};

}  // namespace troupe
