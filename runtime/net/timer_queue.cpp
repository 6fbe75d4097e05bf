#include "runtime/net/timer_queue.hpp"

#include "runtime/detail/thrown_by.hpp"

namespace troupe {

timer_queue::timer_queue() : worker_([this] { run(); }) {}

timer_queue::~timer_queue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

std::uint64_t timer_queue::schedule(clock::duration delay, std::function<void()> fn, thrown_handler on_throw) {
  std::uint64_t id;
  {
    std::lock_guard lock(mutex_);
    id = next_id_++;
    due_.emplace(clock::now() + delay, timer{id, std::move(fn), std::move(on_throw)});
  }
  wake_.notify_all();
  return id;
}

bool timer_queue::cancel(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  for (auto it = due_.begin(); it != due_.end(); ++it)
    if (it->second.id == id) {
      due_.erase(it);
      return true;
    }
  return false;
}

void timer_queue::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (due_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const auto next = due_.begin()->first;
    if (clock::now() < next) {
      wake_.wait_until(lock, next);
      continue;
    }
    timer t = std::move(due_.begin()->second);
    due_.erase(due_.begin());
    lock.unlock();
    if (auto what = thrown_by(t.fn)) {
      thrown_.fetch_add(1, std::memory_order_relaxed);
      if (t.on_throw && thrown_by([&] { t.on_throw(*what); })) thrown_.fetch_add(1, std::memory_order_relaxed);
    }
    t = {};  // what the callback captured goes now, outside the lock
    lock.lock();
  }
}

}  // namespace troupe
