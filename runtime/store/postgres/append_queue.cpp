#include "runtime/store/postgres/append_queue.hpp"

#include "runtime/thrown_by.hpp"

#include <pthread.h>

namespace troupe::postgres {

append_queue::append_queue(batch_runner run, std::size_t max_batch, std::chrono::milliseconds max_wait,
                           std::size_t writers)
    : run_(std::move(run)),
      max_batch_(std::max<std::size_t>(1, max_batch)),
      writer_count_(std::max<std::size_t>(1, writers)),
      max_wait_(max_wait) {}

append_queue::~append_queue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& w : writers_) w.join();
}

void append_queue::submit(queued_append a) {
  a.queued_at = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  if (stopping_) {  // the store is being destroyed: its writer may be gone
    lock.unlock();
    a.done(store_error{"io", "the store is shutting down; nothing was written"});
    return;
  }
  while (writers_.size() < writer_count_) writers_.emplace_back([this] { writer_loop(); });
  queued_.push_back(std::move(a));
  if (queued_.size() == 1) wake_.notify_one();
}

void append_queue::set_max_wait(std::chrono::milliseconds max_wait) {
  std::lock_guard lock(mutex_);
  max_wait_ = max_wait;
}

commit_batching append_queue::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void append_queue::writer_loop() {
  pthread_setname_np(pthread_self(), "troupe.pg");  // for perf and top
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
    if (queued_.empty()) return;  // stopping, and nothing is left
    // The oldest commits, up to max_batch: one statement must not grow
    // without bound (statement_timeout applies to it as a whole).
    std::vector<queued_append> batch;
    if (queued_.size() <= max_batch_) {
      batch.swap(queued_);
    } else {
      const auto cut = queued_.begin() + static_cast<std::ptrdiff_t>(max_batch_);
      batch.assign(std::make_move_iterator(queued_.begin()), std::make_move_iterator(cut));
      queued_.erase(queued_.begin(), cut);
      wake_.notify_one();  // what is left is another writer's next batch
    }
    const std::chrono::milliseconds max_wait = max_wait_;
    lock.unlock();
    std::vector<queued_append> expired;
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(batch, [&](queued_append& a) {
      if (now - a.queued_at <= max_wait) return false;
      expired.push_back(std::move(a));
      return true;
    });
    for (queued_append& a : expired)
      thrown_by([&] {
        a.done(store_error{"timeout", "the commit waited more than " + std::to_string(max_wait.count()) +
                                          " ms for the writer; nothing of it was written"});
      });
    const std::size_t n = batch.size();
    std::size_t transactions = 0;
    if (n > 0)
      if (auto what = thrown_by([&] { transactions = run_(batch); }))
        // The runner answers every commit itself; one that threw before it
        // could have answered none, and what it answered it cleared.
        for (queued_append& a : batch)
          if (a.done) thrown_by([&] { a.done(store_error{"internal", "the commit threw: " + *what}); });
    lock.lock();
    stats_.transactions += transactions;
    stats_.commits += n;
  }
}

}  // namespace troupe::postgres
