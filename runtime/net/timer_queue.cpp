#include "runtime/net/timer_queue.hpp"

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

std::uint64_t timer_queue::schedule(clock::duration delay, std::function<void()> fn) {
  std::uint64_t id;
  {
    std::lock_guard lock(mutex_);
    id = next_id_++;
    due_.emplace(clock::now() + delay, std::make_pair(id, std::move(fn)));
  }
  wake_.notify_all();
  return id;
}

bool timer_queue::cancel(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  for (auto it = due_.begin(); it != due_.end(); ++it)
    if (it->second.first == id) {
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
    auto fn = std::move(due_.begin()->second.second);
    due_.erase(due_.begin());
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace troupe
