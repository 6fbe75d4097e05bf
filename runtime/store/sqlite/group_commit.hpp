#pragma once
// Group commit for the one writer connection of a SQLite store. A commit
// queues its work; the first committer to find no batch running becomes the
// leader and runs everything queued in one transaction, then wakes the
// others. Under load, N concurrent commits cost one fsync-bound transaction
// instead of N.

#include "runtime/store/thread_store.hpp"

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

namespace troupe::sqlite {

class connection;

// A commit's statements, run on the writer connection inside a transaction;
// its error, if any, undoes only what it wrote.
using write_work = std::function<std::optional<store_error>(connection&)>;

// One commit waiting for, or carried by, a batch. The batch runner sets
// `error`; the rest belongs to the queue.
struct write_job {
  const write_work* work;
  std::optional<store_error> error = std::nullopt;
  bool done = false;
  std::exception_ptr thrown = nullptr;  // what its batch's runner threw
  std::condition_variable wake = {};
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
  // Runs one batch, setting each job's error.
  using batch_runner = std::function<void(const std::vector<write_job*>&)>;

  explicit group_commit(batch_runner run) : run_(std::move(run)) {}

  // Runs `work` in the next batch; its error, or its batch's.
  std::optional<store_error> write(const write_work& work);
  commit_stats stats() const;

 private:
  batch_runner run_;
  mutable std::mutex mutex_;
  std::vector<write_job*> queued_;  // in arrival order
  bool leader_active_ = false;
  commit_stats stats_;
};

// The batch runner of a store: one transaction on `c`. A job alone in it
// needs no savepoint (its failure rolls the transaction back); jobs that
// share it each run in a savepoint, so that one writer's conflict undoes
// nothing of another's. A job whose work throws fails with an `internal`
// error like any other failing job; anything else that throws rolls the
// whole transaction back before it leaves.
void run_in_one_transaction(connection& c, const std::vector<write_job*>& batch);

}  // namespace troupe::sqlite
