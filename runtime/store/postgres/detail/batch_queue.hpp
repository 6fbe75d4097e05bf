#pragma once
// Work from agents to PostgreSQL, queued and sent in batches: a writer thread
// takes everything queued and runs it as one call on one connection (one
// round trip, one transaction, one WAL flush), so that the rate grows with
// the number of agents waiting instead of being one round trip per item per
// connection. Commits go through one queue, lease takes through another.
// Several writers may each run a batch at once: one batch runs on one server
// backend, so with one writer the server's other cores sat idle while it
// worked. Batches running at once cannot hold one thread's commits in
// opposite orders as long as a thread has one commit in flight (what an
// agent does); if other callers make them deadlock, PostgreSQL fails one
// call and the runner writes its items one by one. How a batch is written,
// and what happens when it fails, is the runner's (postgres_store's).

#include "runtime/detail/thrown_by.hpp"
#include "runtime/store/thread_lease.hpp"
#include "runtime/store/thread_store.hpp"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace troupe::postgres {

// One commit waiting for its batch.
struct queued_append {
  thread_view t;
  std::uint64_t expected_rev = 0;
  std::optional<thread_lease> fence;
  append_done done;
  std::chrono::steady_clock::time_point queued_at;
};

// One lease take waiting for its batch.
struct queued_take {
  std::string thread_id;
  std::string owner;
  std::int64_t now_ms = 0;
  std::chrono::milliseconds ttl{0};
  lease_done done;
  std::chrono::steady_clock::time_point queued_at;
};

// One lease release waiting for its batch; `done` is called with its
// outcome (nothing, or why it was not given up).
struct queued_release {
  std::string thread_id;
  thread_lease held;
  std::function<void(std::optional<store_error>)> done;
  std::chrono::steady_clock::time_point queued_at;
};

// `Item` has a `done` callable with a store_error (cleared once called) and
// a `queued_at`.
template <class Item>
class batch_queue {
 public:
  // Runs a batch, answering every item of it (through its `done`, which it
  // then clears); returns the transactions it took.
  using batch_runner = std::function<std::size_t(std::vector<Item>&)>;

  // An item still queued after `max_wait` fails with a "timeout" instead of
  // being run; `what` names an item in that error ("commit").
  batch_queue(batch_runner run, std::string what, std::size_t max_batch, std::chrono::milliseconds max_wait,
              std::size_t writers = 1)
      : run_(std::move(run)),
        what_(std::move(what)),
        max_batch_(std::max<std::size_t>(1, max_batch)),
        writer_count_(std::max<std::size_t>(1, writers)),
        max_wait_(max_wait) {}

  // Runs what is queued, then stops the writer threads.
  ~batch_queue() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& w : writers_) w.join();
  }
  batch_queue(const batch_queue&) = delete;
  batch_queue& operator=(const batch_queue&) = delete;

  void submit(Item a) {
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

  void set_max_wait(std::chrono::milliseconds max_wait) {
    std::lock_guard lock(mutex_);
    max_wait_ = max_wait;
  }

  commit_batching stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }

 private:
  void writer_loop() {
    pthread_setname_np(pthread_self(), "troupe.pg");  // for perf and top
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
      if (queued_.empty()) return;  // stopping, and nothing is left
      // The oldest items, up to max_batch: one statement must not grow
      // without bound (statement_timeout applies to it as a whole).
      std::vector<Item> batch;
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
      std::vector<Item> expired;
      const auto now = std::chrono::steady_clock::now();
      std::erase_if(batch, [&](Item& a) {
        if (now - a.queued_at <= max_wait) return false;
        expired.push_back(std::move(a));
        return true;
      });
      for (Item& a : expired)
        thrown_by([&] {
          a.done(store_error{"timeout", "the " + what_ + " waited more than " + std::to_string(max_wait.count()) +
                                            " ms for the writer; nothing of it was written"});
        });
      const std::size_t n = batch.size();
      std::size_t transactions = 0;
      if (n > 0)
        if (auto thrown = thrown_by([&] { transactions = run_(batch); }))
          // The runner answers every item itself; one that threw before it
          // could have answered none, and what it answered it cleared.
          for (Item& a : batch)
            if (a.done) thrown_by([&] { a.done(store_error{"internal", "the " + what_ + " threw: " + *thrown}); });
      lock.lock();
      stats_.transactions += transactions;
      stats_.commits += n;
    }
  }

  batch_runner run_;
  std::string what_;
  std::size_t max_batch_;
  std::size_t writer_count_;
  std::chrono::milliseconds max_wait_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Item> queued_;
  bool stopping_ = false;
  commit_batching stats_;
  std::vector<std::thread> writers_;  // started by the first submit
};

using append_queue = batch_queue<queued_append>;
using lease_queue = batch_queue<queued_take>;

}  // namespace troupe::postgres
