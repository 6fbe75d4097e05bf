#pragma once
// A queue between many producers that must never wait and one consumer that
// may: a push into a full queue drops the item and counts it, so a slow
// consumer costs producers nothing but the lost items. Producers hold the
// lock only to append; the consumer takes a whole batch at once.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <mutex>
#include <vector>

namespace troupe {

template <class T>
class bounded_queue {
 public:
  // `wake_at`: how many queued items wake a waiting consumer before its
  // time is up (a full batch), so producers do not signal on every push.
  bounded_queue(std::size_t capacity, std::size_t wake_at)
      : capacity_(capacity ? capacity : 1), wake_at_(std::max<std::size_t>(1, std::min(wake_at, capacity_))) {}

  // False, and counted as dropped, when the queue is full or closed.
  bool try_push(T item) {
    std::size_t size;
    {
      std::lock_guard lock(mutex_);
      if (closed_ || items_.size() >= capacity_) {
        ++dropped_;
        return false;
      }
      items_.push_back(std::move(item));
      size = items_.size();
    }
    if (size == wake_at_) ready_.notify_one();
    return true;
  }

  // Up to `max` items, oldest first, once `wake_at` items are queued, the
  // queue is woken or closed, or `until` has passed (then possibly none).
  std::vector<T> take(std::size_t max, std::chrono::steady_clock::time_point until) {
    std::unique_lock lock(mutex_);
    ready_.wait_until(lock, until, [&] { return closed_ || woken_ || items_.size() >= wake_at_; });
    woken_ = false;
    const auto n = static_cast<std::ptrdiff_t>(std::min(max, items_.size()));
    std::vector<T> out(std::make_move_iterator(items_.begin()), std::make_move_iterator(items_.begin() + n));
    items_.erase(items_.begin(), items_.begin() + n);  // a deque: only the taken items move
    return out;
  }

  // Makes a waiting take() return now, with whatever is queued.
  void wake() {
    {
      std::lock_guard lock(mutex_);
      woken_ = true;
    }
    ready_.notify_one();
  }
  // Refuses every later push (they count as dropped) and wakes the consumer.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_one();
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }
  std::uint64_t dropped() const {
    std::lock_guard lock(mutex_);
    return dropped_;
  }
  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }

 private:
  const std::size_t capacity_;
  const std::size_t wake_at_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<T> items_;
  std::uint64_t dropped_ = 0;
  bool closed_ = false;
  bool woken_ = false;
};

}  // namespace troupe
