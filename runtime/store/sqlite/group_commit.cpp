#include "runtime/store/sqlite/group_commit.hpp"

#include "runtime/store/sqlite/connection.hpp"

namespace troupe::sqlite {

std::optional<store_error> group_commit::write(const write_work& work) {
  write_job job{&work};
  std::unique_lock lock(mutex_);
  queued_.push_back(&job);
  ++stats_.in_flight;
  // Wake only when this job is done, or when it is first in line and no
  // transaction is running: a hundred waiting writers are not all woken
  // for every transaction.
  job.wake.wait(lock, [&] { return job.done || (!leader_active_ && queued_.front() == &job); });
  if (job.done) return job.error;

  // Lead one transaction: everything queued so far, this job included.
  leader_active_ = true;
  std::vector<write_job*> batch;
  batch.swap(queued_);
  lock.unlock();
  run_(batch);
  lock.lock();
  ++stats_.transactions;
  stats_.commits += batch.size();
  stats_.in_flight -= batch.size();
  leader_active_ = false;
  for (write_job* j : batch) {
    j->done = true;
    if (j != &job) j->wake.notify_one();
  }
  if (!queued_.empty()) queued_.front()->wake.notify_one();  // the next leader
  return job.error;
}

commit_stats group_commit::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void run_in_one_transaction(connection& c, const std::vector<write_job*>& batch) {
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
    j->error = (*j->work)(c);
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

}  // namespace troupe::sqlite
