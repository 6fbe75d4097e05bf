#pragma once
// The asks of one thread: one runs, the others wait in arrival order, and at
// most `bound` may wait. Pure (no actors): the agent decides with it and
// acts on the decision. `Ask` has a `request_id()`.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

template <class Ask>
class request_queue {
 public:
  enum class admission { start_now, wait, full };

  explicit request_queue(std::size_t bound = 64) : bound_(bound) {}

  // Where a new ask goes; `wait` and `full` leave it to the caller (push it,
  // or refuse it).
  admission admit() const {
    if (running_.empty()) return admission::start_now;
    return waiting_.size() < bound_ ? admission::wait : admission::full;
  }
  void push(Ask a) { waiting_.push_back(std::move(a)); }

  void begin(std::string request_id) { running_ = std::move(request_id); }
  void end() { running_.clear(); }
  const std::string& running() const { return running_; }

  // The next ask to start, once nothing runs.
  std::optional<Ask> take_next() {
    if (!running_.empty() || waiting_.empty()) return std::nullopt;
    Ask next = std::move(waiting_.front());
    waiting_.erase(waiting_.begin());
    return next;
  }

  // A waiting ask, taken out (a cancel before it started).
  std::optional<Ask> remove(const std::string& request_id) {
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
      if (it->request_id() != request_id) continue;
      Ask a = std::move(*it);
      waiting_.erase(it);
      return a;
    }
    return std::nullopt;
  }

  std::vector<Ask> drain() {
    std::vector<Ask> out(std::make_move_iterator(waiting_.begin()), std::make_move_iterator(waiting_.end()));
    waiting_.clear();
    return out;
  }

  bool idle() const { return running_.empty() && waiting_.empty(); }
  std::size_t size() const { return waiting_.size() + (running_.empty() ? 0 : 1); }

 private:
  std::size_t bound_;
  std::string running_;  // empty: nothing runs
  // A vector, not a deque: an empty std::deque allocates about 600 bytes,
  // and most threads never have an ask waiting. Queues are short (bounded).
  std::vector<Ask> waiting_;
};

}  // namespace troupe
