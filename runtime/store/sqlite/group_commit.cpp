#include "runtime/store/sqlite/group_commit.hpp"

#include "runtime/store/sqlite/detail/connection.hpp"

#include <pthread.h>

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

// How run_transaction keeps one job's failure from undoing another's.
enum class isolation {
  // None: a job that fails having written nothing (a refused commit checks
  // before it writes) needs no undo. One that fails after writing makes the
  // batch start over in `savepoints`.
  optimistic,
  savepoints,  // every job in a savepoint of its own
};

// The body of run_in_one_transaction, which undoes it when it throws. False
// when the batch must run again with savepoints; nothing of it is kept then.
bool run_transaction(connection& c, const std::vector<write_job*>& batch, isolation how) {
  if (!c.run("BEGIN IMMEDIATE")) {
    const store_error e = c.io_error("begin a transaction");
    for (write_job* j : batch) j->error = e;
    return true;
  }
  const bool shared = batch.size() > 1;
  const bool savepoints = shared && how == isolation::savepoints;
  std::optional<store_error> lost;  // set when the whole transaction is gone
  for (write_job* j : batch) {
    if (lost) {
      j->error = lost;
      continue;
    }
    if (savepoints) c.run("SAVEPOINT job");
    const auto changes_before = sqlite3_total_changes64(c.db());
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
    if (savepoints) {
      if (j->error) c.run("ROLLBACK TO job");
      c.run("RELEASE job");
    } else if (j->error && sqlite3_total_changes64(c.db()) != changes_before) {
      c.run("ROLLBACK");
      for (write_job* k : batch) k->error = std::nullopt;
      return false;
    }
  }
  if (!lost && c.run("COMMIT")) return true;
  if (!lost) lost = c.io_error("commit");
  if (c.in_transaction()) c.run("ROLLBACK");
  for (write_job* j : batch)
    if (!j->error) j->error = lost;
  return true;
}

}  // namespace

group_commit::~group_commit() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  writer_wake_.notify_all();
  if (writer_.joinable()) writer_.join();
}

std::optional<store_error> group_commit::write(const write_work& work) {
  write_job job{&work};
  std::unique_lock lock(mutex_);
  queued_.push_back(&job);
  ++stats_.in_flight;
  // Wake only when this job is done, or when it is first in line and no
  // transaction is running: a hundred waiting writers are not all woken
  // for every transaction.
  job.wake.wait(lock, [&] { return job.done || (!leader_active_ && queued_.front() == &job); });
  if (!job.done) lead(lock, &job);
  lock.unlock();
  return outcome_of(job);
}

void group_commit::submit(write_work work, write_done done) {
  auto job = std::make_unique<write_job>();
  job->owned = std::move(work);
  job->work = &job->owned;
  job->on_done = std::move(done);
  job->queued_at = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  if (!writer_.joinable()) writer_ = std::thread([this] { writer_loop(); });
  queued_.push_back(job.release());
  ++stats_.in_flight;
  if (!leader_active_ && queued_.size() == 1) writer_wake_.notify_one();
}

void group_commit::writer_loop() {
  pthread_setname_np(pthread_self(), "troupe.sqlite");  // for perf and top
  std::unique_lock lock(mutex_);
  for (;;) {
    // The writer thread leads when the first in line is a submitted commit;
    // a waiting writer first in line leads its own batch.
    writer_wake_.wait(lock, [&] {
      return (!leader_active_ && !queued_.empty() && queued_.front()->on_done) || (stopping_ && queued_.empty());
    });
    if (queued_.empty()) return;
    lead(lock, nullptr);
  }
}

void group_commit::wake_next_leader() {
  if (queued_.empty()) return;
  if (queued_.front()->on_done)
    writer_wake_.notify_one();
  else
    queued_.front()->wake.notify_one();
}

void group_commit::lead(std::unique_lock<std::mutex>& lock, const write_job* own) {
  // Everything queued so far, `own` included. Submitted commits that waited
  // past their deadline fail without running.
  leader_active_ = true;
  const std::chrono::milliseconds max_wait = max_wait_;
  std::vector<write_job*> batch, expired;
  batch.swap(queued_);
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(batch, [&](write_job* j) {
    if (!j->on_done || now - j->queued_at <= max_wait) return false;
    expired.push_back(j);
    return true;
  });
  lock.unlock();
  std::exception_ptr thrown;
  std::size_t transactions = 1;  // a runner that throws has begun one
  if (!batch.empty()) {
    try {
      transactions = run_(batch);
    } catch (...) {
      thrown = std::current_exception();
    }
  }
  for (write_job* j : expired)
    j->error = store_error{"timeout", "the commit waited more than " + std::to_string(max_wait.count()) +
                                          " ms for the writer; nothing of it was written"};
  lock.lock();
  if (!batch.empty()) {
    stats_.transactions += transactions;
    stats_.commits += batch.size();
  }
  stats_.in_flight -= batch.size() + expired.size();
  leader_active_ = false;
  std::vector<write_job*> answered;  // submitted commits, answered outside the lock
  for (write_job* j : batch) {
    j->thrown = thrown;
    j->done = true;
    if (j->on_done)
      answered.push_back(j);
    else if (j != own)
      j->wake.notify_one();
  }
  answered.insert(answered.end(), expired.begin(), expired.end());
  wake_next_leader();
  lock.unlock();
  for (write_job* j : answered) {
    std::unique_ptr<write_job> owned(j);
    try {
      j->on_done(outcome_of(*j));
    } catch (...) {  // the owner's to handle; the writer goes on
    }
  }
  lock.lock();
}

void group_commit::set_max_wait(std::chrono::milliseconds max_wait) {
  std::lock_guard lock(mutex_);
  max_wait_ = max_wait;
}

commit_stats group_commit::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::size_t run_in_one_transaction(connection& c, const std::vector<write_job*>& batch) {
  try {
    if (run_transaction(c, batch, isolation::optimistic)) return 1;
    run_transaction(c, batch, isolation::savepoints);
    return 2;
  } catch (...) {
    // Undone, so that the group commit may fail every job of the batch.
    if (c.in_transaction()) c.exec("ROLLBACK");
    throw;
  }
}

}  // namespace troupe::sqlite
