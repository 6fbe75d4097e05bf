#pragma once
// The storage behind a thread: an append-only sequence whose elements never
// move once written. Elements live in segments that double in size every
// second segment (4, 4, 8, 8, 16, 16, …), addressed through a table whose
// entries are written once, so
//   - appending is O(1) and never copies earlier elements;
//   - a reader that knows the size it saw can keep reading elements below it
//     while the owner appends more: those elements and their segment pointers
//     are never written again;
//   - at most about 40% of the slots stand empty (doubling every segment
//     would leave up to half: a million agents' threads of 20 entries each
//     would hold 28 slots instead of 24).
//
// Small logs are the common case (a million agents hold a few entries each):
// the first segment is small and only the first segments' pointers live in
// the object; the rest of the table is allocated when a log first needs it.
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
  static constexpr std::size_t first_segment_size = 4;
  static constexpr std::size_t max_segments = 80;    // 8 × (2^40 − 1) elements
  static constexpr std::size_t inline_segments = 8;  // 120 elements before the table is allocated

  append_log() = default;
  append_log(const append_log&) = delete;
  append_log& operator=(const append_log&) = delete;

  ~append_log() {
    for (std::size_t i = 0; i < constructed_; ++i) std::destroy_at(&slot(i));
    std::allocator<T> alloc;
    for (std::size_t s = 0; s < max_segments && segment(s); ++s) alloc.deallocate(segment(s), segment_capacity(s));
  }

  // Slots allocated, filled or not (the owner's view: for figures and tests).
  std::size_t capacity() const {
    std::size_t n = 0;
    for (std::size_t s = 0; s < max_segments && segment(s); ++s) n += segment_capacity(s);
    return n;
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
  static std::size_t segment_capacity(std::size_t s) { return first_segment_size << (s / 2); }

  // Segments 2k and 2k + 1 hold first_segment_size × 2^k elements each, so
  // segment 2k starts at index 2 × first_segment_size × (2^k − 1).
  static std::pair<std::size_t, std::size_t> locate(std::size_t i) {
    constexpr std::size_t pair = 2 * first_segment_size;
    const std::size_t k = std::bit_width(i / pair + 1) - 1;
    const std::size_t offset = i - pair * ((std::size_t{1} << k) - 1);
    const std::size_t half = first_segment_size << k;
    if (offset < half) return {2 * k, offset};
    return {2 * k + 1, offset - half};
  }

  // Segment s, or null if it is not allocated yet.
  T* segment(std::size_t s) const {
    if (s < inline_segments) return inline_[s];
    return overflow_ ? overflow_[s - inline_segments] : nullptr;
  }
  // Where segment s's pointer is written, once (the table exists by then).
  T*& segment_entry(std::size_t s) { return s < inline_segments ? inline_[s] : overflow_[s - inline_segments]; }

  T& slot(std::size_t i) {
    const auto [s, offset] = locate(i);
    return segment(s)[offset];
  }

  void reserve(std::size_t size) {
    if (size == 0) return;
    std::allocator<T> alloc;
    const std::size_t last = locate(size - 1).first;
    if (last >= inline_segments && !overflow_)
      overflow_ = std::make_unique<T*[]>(max_segments - inline_segments);  // zeroed
    for (std::size_t s = 0; s <= last; ++s)
      if (!segment(s)) segment_entry(s) = alloc.allocate(segment_capacity(s));
  }

  std::array<T*, inline_segments> inline_{};
  std::unique_ptr<T*[]> overflow_;
  std::atomic<std::size_t> claimed_{0};
  std::size_t constructed_ = 0;  // written only by the owner that claimed the slots
};

}  // namespace troupe
