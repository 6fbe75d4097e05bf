#pragma once
// Commits from agents to PostgreSQL, queued and sent in batches: a writer
// thread takes everything queued and runs it as one call on one connection
// (one round trip, one transaction, one WAL flush), so that the rate of
// commits grows with the number of agents committing instead of being one
// round trip per commit per connection. Several writers may each run a
// batch at once: one batch runs on one server backend, so with one writer
// the server's other cores sat idle while it worked. Batches running at
// once cannot hold one thread's commits in opposite orders as long as a
// thread has one commit in flight (what an agent does); if other callers
// make them deadlock, PostgreSQL fails one call and the runner writes its
// commits one by one. How a batch is written, and what
// happens when it fails, is the runner's (postgres_store's).

#include "runtime/store/thread_lease.hpp"
#include "runtime/store/thread_store.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
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

class append_queue {
 public:
  // Writes a batch, answering every commit of it (through its `done`, which
  // it then clears); returns the transactions it took.
  using batch_runner = std::function<std::size_t(std::vector<queued_append>&)>;

  // A commit still queued after `max_wait` fails with a "timeout" instead of
  // being written.
  append_queue(batch_runner run, std::size_t max_batch, std::chrono::milliseconds max_wait, std::size_t writers = 1);
  // Writes what is queued, then stops the writer thread.
  ~append_queue();
  append_queue(const append_queue&) = delete;
  append_queue& operator=(const append_queue&) = delete;

  void submit(queued_append a);
  void set_max_wait(std::chrono::milliseconds max_wait);
  commit_batching stats() const;

 private:
  void writer_loop();

  batch_runner run_;
  std::size_t max_batch_;
  std::size_t writer_count_;
  std::chrono::milliseconds max_wait_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<queued_append> queued_;
  bool stopping_ = false;
  commit_batching stats_;
  std::vector<std::thread> writers_;  // started by the first submit
};

}  // namespace troupe::postgres
