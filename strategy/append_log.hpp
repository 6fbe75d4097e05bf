#pragma once
// The storage behind a thread: an append-only sequence whose elements never
// move once written. Elements live in segments of doubling size (8, 16, 32, …)
// addressed through a fixed table, so
//   - appending is O(1) and never copies earlier elements;
//   - a reader that knows the size it saw can keep reading elements below it
//     while the owner appends more: those elements and their segment pointers
//     are never written again.
//
// Several thread values may share one log (copies and snapshots). Only one of
// them can extend it past a given size: try_append claims the slots with a
// compare-and-swap on the claimed size, and a loser must copy what it can see
// into a log of its own (copy-on-write at the point of divergence).

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

namespace troupe {

template <class T>
class append_log {
  static_assert(std::is_nothrow_move_constructible_v<T>);

 public:
  static constexpr std::size_t first_segment_size = 8;
  static constexpr std::size_t max_segments = 48;  // 8 × (2^48 − 1) elements

  append_log() = default;
  append_log(const append_log&) = delete;
  append_log& operator=(const append_log&) = delete;

  ~append_log() {
    for (std::size_t i = 0; i < constructed_; ++i) std::destroy_at(&slot(i));
    std::allocator<T> alloc;
    for (std::size_t s = 0; s < max_segments && segments_[s]; ++s) alloc.deallocate(segments_[s], segment_capacity(s));
  }

  // Only elements below a size the caller has observed may be read.
  const T& operator[](std::size_t i) const { return const_cast<append_log*>(this)->slot(i); }

  // Moves `items` to the end if the log holds exactly `expected_size` elements;
  // false (and nothing moved) if another owner already appended past it.
  bool try_append(std::size_t expected_size, std::span<T> items) {
    std::size_t claimed = expected_size;
    const std::size_t new_size = expected_size + items.size();
    if (!claimed_.compare_exchange_strong(claimed, new_size, std::memory_order_acq_rel)) return false;
    try {
      reserve(new_size);
    } catch (...) {
      // Nobody else can have claimed past our claim: hand the slots back.
      claimed_.store(expected_size, std::memory_order_release);
      throw;
    }
    for (std::size_t i = 0; i < items.size(); ++i) std::construct_at(&slot(expected_size + i), std::move(items[i]));
    constructed_ = new_size;
    return true;
  }

 private:
  static std::size_t segment_capacity(std::size_t s) { return first_segment_size << s; }

  // Segment s starts at index first_segment_size × (2^s − 1).
  static std::pair<std::size_t, std::size_t> locate(std::size_t i) {
    const std::size_t s = std::bit_width(i / first_segment_size + 1) - 1;
    return {s, i - first_segment_size * ((std::size_t{1} << s) - 1)};
  }

  T& slot(std::size_t i) {
    const auto [s, offset] = locate(i);
    return segments_[s][offset];
  }

  void reserve(std::size_t size) {
    if (size == 0) return;
    std::allocator<T> alloc;
    const std::size_t last = locate(size - 1).first;
    for (std::size_t s = 0; s <= last; ++s)
      if (!segments_[s]) segments_[s] = alloc.allocate(segment_capacity(s));
  }

  std::array<T*, max_segments> segments_{};
  std::atomic<std::size_t> claimed_{0};
  std::size_t constructed_ = 0;  // written only by the owner that claimed the slots
};

}  // namespace troupe
