#pragma once
// Runs a thread store's loads and commits for owners that must not block:
// agents, which run on the actor scheduler's few threads. One slow commit
// there (a PostgreSQL round trip, a SQLite busy wait, a reconnect) would
// freeze every agent of the process; here it holds one store thread, and
// only the thread whose commit it is waits for it.
//
// By the store's commit_path: `immediate` stores are called on the caller's
// thread, `queued` ones take commits without blocking (SQLite's group
// commit batches them across agents), `blocking` ones run on this
// executor's threads. Work that waited longer than the deadline for a
// thread is not run: its owner is told the store did not answer in time.

#include "runtime/store/thread_lease.hpp"
#include "runtime/store/thread_store.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace troupe {

struct store_executor_options {
  std::size_t threads = 4;  // blocking store calls at once (PostgreSQL: connections in use)
  std::chrono::milliseconds deadline{std::chrono::seconds(30)};
};

// Why a job is called: to run, or to report that it never will.
enum class store_job_status {
  run,
  late,      // it waited past the deadline
  stopping,  // the executor is shutting down
};

// The store error for a job that was not run.
store_error not_run(store_job_status why, std::chrono::milliseconds deadline);

class store_executor {
 public:
  using job = std::function<void(store_job_status)>;

  store_executor(std::shared_ptr<thread_store> store, store_executor_options options = {});
  // Runs what is queued (late work is told so), then stops: the last things
  // an owner hands over at shutdown, such as giving up its leases, still
  // reach the store.
  ~store_executor();
  store_executor(const store_executor&) = delete;
  store_executor& operator=(const store_executor&) = delete;

  thread_store& store() { return *store_; }
  const std::shared_ptr<thread_store>& shared_store() const { return store_; }
  // The store answers at once: commit inline, no round trip through a thread.
  bool immediate() const { return path_ == commit_path::immediate; }

  // Commits as thread_store::append does (append_fenced, given the lease it
  // holds); `done` gets the outcome on a store thread (or at once, for an
  // immediate store).
  void append(thread_view t, std::uint64_t expected_rev, std::optional<thread_lease> fence, append_done done);
  // An immediate store's commit, made on the caller's thread: what the store
  // throws comes back as an `internal` store error, as on the other paths.
  stored<std::uint64_t> append_now(const thread_view& t, std::uint64_t expected_rev);
  // Runs `j` on a store thread, exactly once: with `run`, or with why not
  // (`stopping` only for work handed over after the executor began to stop).
  void submit(job j);

  // Takes the lease of `thread_id` for `owner` (thread_store::acquire_lease,
  // from now for `ttl`), then runs `then` on a store thread, exactly once,
  // with the lease or why there is none. A store that queues lease takes
  // (SQLite) takes it in its next batch, so that loading many threads at
  // once does not hold a store thread per lease.
  // With `take` (runtime_options::take_lease), the lease is what it takes
  // (given the time), on a store thread, instead of the store's.
  using leased_job = std::function<void(store_job_status, stored<thread_lease>)>;
  using lease_taker = std::function<stored<thread_lease>(std::int64_t now_ms)>;
  void acquire_lease_then(std::string thread_id, std::string owner, std::chrono::milliseconds ttl, lease_taker take,
                          leased_job then);

  // Gives a lease up (thread_store::release_lease) without waiting: in the
  // store's next batch if it queues lease takes, else on a store thread;
  // either way before this executor's destructor returns. A lease not given
  // up expires all the same, so nothing answers.
  void release_lease(std::string thread_id, thread_lease held);

  std::size_t threads() const { return threads_.size(); }
  std::chrono::milliseconds deadline() const { return options_.deadline; }

 private:
  struct queued_job {
    job fn;
    std::chrono::steady_clock::time_point queued_at;
  };
  void loop();
  // A lease take or release a queued store was handed is answered: the
  // executor's end no longer waits for it.
  void lease_work_answered();

  std::shared_ptr<thread_store> store_;
  commit_path path_;
  store_executor_options options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<queued_job> queue_;
  bool stopping_ = false;
  std::size_t leases_queued_ = 0;  // lease takes and releases a queued store has not answered yet
  std::condition_variable leases_answered_;
  std::vector<std::thread> threads_;
};

}  // namespace troupe
