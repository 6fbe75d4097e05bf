#include "runtime/store/sqlite/group_commit.hpp"

#include "runtime/store/sqlite/connection.hpp"

namespace troupe::sqlite {

namespace {

store_error internal_error(const std::exception_ptr& thrown) {
  const std::string consequence = "; nothing of this commit was written";
  try {
    std::rethrow_exception(thrown);
  } catch (const std::exception& e) {
    return store_error{"internal", std::string("the commit threw ") + e.what() + consequence};
  } catch (...) {
    return store_error{"internal", "the commit threw something that is not a std::exception" + consequence};
  }
}

// A job's result, built on its own writer's thread: the leader's hand-off
// allocates nothing, so it cannot fail half-way.
std::optional<store_error> outcome_of(const write_job& job) {
  if (job.error || !job.thrown) return job.error;
  return internal_error(job.thrown);
}

// The body of run_in_one_transaction, which undoes it when it throws.
void run_transaction(connection& c, const std::vector<write_job*>& batch) {
  if (!c.run("BEGIN IMMEDIATE")) {
    const store_error e = c.io_error("begin a transaction");
    for (write_job* j : batch) j->error = e;
    return;
  }
  const bool shared = batch.size() > 1;
  std::optional<store_error> lost;  // set when the whole transaction is gone
  for (write_job* j : batch) {
    if (lost) {
      j->error = lost;
      continue;
    }
    if (shared) c.run("SAVEPOINT job");
    try {
      j->error = (*j->work)(c);
    } catch (...) {
      j->error = internal_error(std::current_exception());  // undone below, as any failed job is
    }
    if (!c.in_transaction()) {  // e.g. SQLITE_FULL: SQLite rolled it all back
      lost = j->error ? *j->error : c.io_error("the transaction was rolled back");
      j->error = lost;
      continue;
    }
    if (!shared) {
      if (j->error) lost = j->error;  // rolled back below
      continue;
    }
    if (j->error) c.run("ROLLBACK TO job");
    c.run("RELEASE job");
  }
  if (!lost && c.run("COMMIT")) return;
  if (!lost) lost = c.io_error("commit");
  if (c.in_transaction()) c.run("ROLLBACK");
  for (write_job* j : batch)
    if (!j->error) j->error = lost;
}

}  // namespace

std::optional<store_error> group_commit::write(const write_work& work) {
  write_job job{&work};
  std::unique_lock lock(mutex_);
  queued_.push_back(&job);
  ++stats_.in_flight;
  // Wake only when this job is done, or when it is first in line and no
  // transaction is running: a hundred waiting writers are not all woken
  // for every transaction.
  job.wake.wait(lock, [&] { return job.done || (!leader_active_ && queued_.front() == &job); });
  if (job.done) return outcome_of(job);

  // Lead one transaction: everything queued so far, this job included.
  leader_active_ = true;
  std::vector<write_job*> batch;
  batch.swap(queued_);
  lock.unlock();
  std::exception_ptr thrown;
  try {
    run_(batch);
  } catch (...) {
    thrown = std::current_exception();
  }
  lock.lock();
  ++stats_.transactions;
  stats_.commits += batch.size();
  stats_.in_flight -= batch.size();
  leader_active_ = false;
  for (write_job* j : batch) {
    j->thrown = thrown;
    j->done = true;
    if (j != &job) j->wake.notify_one();
  }
  if (!queued_.empty()) queued_.front()->wake.notify_one();  // the next leader
  lock.unlock();
  return outcome_of(job);
}

commit_stats group_commit::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void run_in_one_transaction(connection& c, const std::vector<write_job*>& batch) {
  try {
    run_transaction(c, batch);
  } catch (...) {
    // Undone, so that the group commit may fail every job of the batch.
    if (c.in_transaction()) c.exec("ROLLBACK");
    throw;
  }
}

}  // namespace troupe::sqlite
