#pragma once
// Group commit for the one writer connection of a SQLite store. A commit
// queues its work; the first committer to find no batch running becomes the
// leader and runs everything queued in one transaction, then wakes the
// others. Under load, N concurrent commits cost one fsync-bound transaction
// instead of N.
//
// Agents commit without waiting (submit): their commits queue behind the
// running transaction and the store's own writer thread leads the next batch
// with all of them, so that a batch grows with the number of agents
// committing, not with the number of threads that can block in a commit.

#include "runtime/store/thread_store.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace troupe::sqlite {

class connection;

// A commit's statements, run on the writer connection inside a transaction;
// its error, if any, undoes only what it wrote.
using write_work = std::function<std::optional<store_error>(connection&)>;

// Called with a submitted commit's outcome, on the thread that ran its batch.
using write_done = std::function<void(std::optional<store_error>)>;

// One commit waiting for, or carried by, a batch. The batch runner sets
// `error`; the rest belongs to the queue.
struct write_job {
  const write_work* work;
  std::optional<store_error> error = std::nullopt;
  bool done = false;
  std::exception_ptr thrown = nullptr;  // what its batch's runner threw
  std::condition_variable wake = {};
  // A submitted commit owns its work and is answered through on_done; a
  // waiting writer's job lives on its stack and is woken instead.
  write_work owned = {};
  write_done on_done = {};
  std::chrono::steady_clock::time_point queued_at = {};
};

// Transactions the writer has run (failed ones too), and commits they
// carried: their ratio is the group commit's batching.
struct commit_stats {
  std::uint64_t transactions = 0;
  std::uint64_t commits = 0;
  std::uint64_t in_flight = 0;  // commits queued or in the running batch
};

// A leader that throws still hands the queue on: every commit of its batch
// that the runner left without an error gets an `internal` one, and the
// next writer in line leads. A runner that throws must have committed
// nothing of its batch.
class group_commit {
 public:
  // Runs one batch, setting each job's error; returns how many
  // transactions that took (the stats count each).
  using batch_runner = std::function<std::size_t(const std::vector<write_job*>&)>;

  // A submitted commit still queued after `max_wait` fails with a `timeout`
  // store error instead of running: its owner has a deadline to keep.
  explicit group_commit(batch_runner run, std::chrono::milliseconds max_wait = std::chrono::seconds(30))
      : run_(std::move(run)), max_wait_(max_wait) {}
  // Runs what is still queued, then stops the writer thread.
  ~group_commit();
  group_commit(const group_commit&) = delete;
  group_commit& operator=(const group_commit&) = delete;

  // Runs `work` in the next batch; its error, or its batch's.
  std::optional<store_error> write(const write_work& work);
  // Queues `work` for the next batch and returns at once; `done` gets its
  // outcome on the thread that ran the batch (the writer thread, or a
  // waiting writer leading it). What `done` throws is dropped.
  void submit(write_work work, write_done done);
  commit_stats stats() const;
  // Changes `max_wait`, for the commits already queued too.
  void set_max_wait(std::chrono::milliseconds max_wait);

 private:
  // Runs the queue's batch as its leader; `lock` is held on entry and exit.
  void lead(std::unique_lock<std::mutex>& lock, const write_job* own);
  void writer_loop();
  // Whoever should lead next: the first queued writer, or the writer thread.
  void wake_next_leader();

  batch_runner run_;
  std::chrono::milliseconds max_wait_;
  mutable std::mutex mutex_;
  std::vector<write_job*> queued_;  // in arrival order
  bool leader_active_ = false;
  bool stopping_ = false;
  commit_stats stats_;
  std::condition_variable writer_wake_;
  std::thread writer_;  // started by the first submit
};

// The batch runner of a store: one transaction on `c`. A job alone in it
// needs no savepoint (its failure rolls the transaction back). Jobs that
// share it run without savepoints as long as every job that fails has
// written nothing (sqlite3_total_changes64 tells), which is what a refused
// commit does: it checks before it writes. When a job fails after writing,
// the transaction is rolled back and the batch runs again with each job in
// a savepoint of its own, so that one writer's failure undoes nothing of
// another's. Jobs must therefore be safe to run twice. A job whose work throws fails with an `internal`
// error like any other failing job; anything else that throws rolls the
// whole transaction back before it leaves. Returns the transactions run: 2
// when the batch ran again with savepoints.
std::size_t run_in_one_transaction(connection& c, const std::vector<write_job*>& batch);

}  // namespace troupe::sqlite
