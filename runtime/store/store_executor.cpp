#include "runtime/store/detail/store_executor.hpp"

#include "runtime/clock.hpp"
#include "runtime/detail/thrown_by.hpp"

#include <pthread.h>

#include <optional>

namespace troupe {

store_error not_run(store_job_status why, std::chrono::milliseconds deadline) {
  if (why == store_job_status::stopping) return store_error{"io", "the store is shutting down; nothing was written"};
  return store_error{"timeout", "the store did not take the call within " + std::to_string(deadline.count()) +
                                    " ms; nothing was written"};
}

namespace {

// A store that throws (it should answer with an error) still answers.
stored<std::uint64_t> guarded_append(thread_store& store, const thread_view& t, std::uint64_t expected_rev,
                                     const std::optional<thread_lease>& fence) {
  std::optional<stored<std::uint64_t>> out;
  if (auto what = thrown_by(
          [&] { out = fence ? store.append_fenced(t, expected_rev, *fence) : store.append(t, expected_rev); }))
    return store_error{"internal", "the store threw: " + *what + "; nothing of this commit was written"};
  return std::move(*out);
}

}  // namespace

store_executor::store_executor(std::shared_ptr<thread_store> store, store_executor_options options)
    : store_(std::move(store)), path_(store_->path()), options_(options) {
  if (path_ == commit_path::queued) store_->set_queue_deadline(options_.deadline);
  // An immediate store never needs a thread; a queued one only for loads.
  const std::size_t n = path_ == commit_path::immediate ? 0 : std::max<std::size_t>(1, options_.threads);
  threads_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); });
}

store_executor::~store_executor() {
  {
    // What a lease take queued hands on to a store thread must still find
    // this executor running, and leases given up at shutdown are given up
    // when it ends.
    std::unique_lock lock(mutex_);
    leases_answered_.wait(lock, [&] { return leases_queued_ == 0; });
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

stored<std::uint64_t> store_executor::append_now(const thread_view& t, std::uint64_t expected_rev) {
  return guarded_append(*store_, t, expected_rev, std::nullopt);
}

void store_executor::append(thread_view t, std::uint64_t expected_rev, std::optional<thread_lease> fence,
                            append_done done) {
  switch (path_) {
    case commit_path::immediate:
      done(guarded_append(*store_, t, expected_rev, fence));
      return;
    case commit_path::queued:
      store_->append_queued(std::move(t), expected_rev, fence ? &*fence : nullptr, std::move(done));
      return;
    case commit_path::blocking:
      submit([this, t = std::move(t), expected_rev, fence = std::move(fence),
              done = std::move(done)](store_job_status why) {
        if (why != store_job_status::run) {
          done(not_run(why, options_.deadline));
          return;
        }
        done(guarded_append(*store_, t, expected_rev, fence));
      });
      return;
  }
}

void store_executor::acquire_lease_then(std::string thread_id, std::string owner, std::chrono::milliseconds ttl,
                                        lease_taker take, leased_job then) {
  if (take || !store_->queues_lease_takes()) {
    submit([this, thread_id = std::move(thread_id), owner = std::move(owner), ttl, take = std::move(take),
            then = std::move(then)](store_job_status why) {
      if (why != store_job_status::run) {
        then(why, not_run(why, options_.deadline));
        return;
      }
      std::optional<stored<thread_lease>> taken;
      if (auto what = thrown_by([&] {
            taken = take ? take(wall_clock_ms()) : store_->acquire_lease(thread_id, owner, wall_clock_ms(), ttl);
          }))
        taken = store_error{"internal", "the store threw: " + *what + "; no lease was taken"};
      then(why, std::move(*taken));
    });
    return;
  }
  {
    std::unique_lock lock(mutex_);
    if (stopping_) {
      lock.unlock();
      then(store_job_status::stopping, not_run(store_job_status::stopping, options_.deadline));
      return;
    }
    ++leases_queued_;
  }
  auto answered = [this, then = std::move(then)](stored<thread_lease> taken) mutable {
    submit([then = std::move(then), taken = std::move(taken)](store_job_status why) mutable {
      then(why, std::move(taken));
    });
    lease_work_answered();
  };
  // A store that throws (it should answer with an error) has queued nothing.
  if (auto what = thrown_by([&] { store_->acquire_lease_queued(thread_id, owner, wall_clock_ms(), ttl, answered); }))
    answered(store_error{"internal", "the store threw: " + *what + "; no lease was taken"});
}

void store_executor::release_lease(std::string thread_id, thread_lease held) {
  if (!store_->queues_lease_takes()) {
    submit([this, thread_id = std::move(thread_id), held = std::move(held)](store_job_status why) {
      if (why == store_job_status::run) thrown_by([&] { store_->release_lease(thread_id, held); });
    });
    return;
  }
  // Counted until the store says it is given up, so that this executor's
  // end, which an owner's shutdown waits for, comes after it.
  std::function<void()> given_up;
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      ++leases_queued_;
      given_up = [this] { lease_work_answered(); };
    }
  }
  // A store that throws has queued nothing.
  if (thrown_by([&] { store_->release_lease_queued(thread_id, held, given_up); }) && given_up) given_up();
}

void store_executor::lease_work_answered() {
  std::lock_guard lock(mutex_);
  if (--leases_queued_ == 0) leases_answered_.notify_all();
}

void store_executor::submit(job j) {
  if (threads_.empty()) {  // an immediate store: its calls do not block
    j(store_job_status::run);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      queue_.push_back(queued_job{std::move(j), std::chrono::steady_clock::now()});
      j = nullptr;
    }
  }
  if (j) {
    j(store_job_status::stopping);
    return;
  }
  wake_.notify_one();
}

void store_executor::loop() {
  pthread_setname_np(pthread_self(), "troupe.store");  // for perf and top
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing is left
    queued_job q = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    const bool late = std::chrono::steady_clock::now() - q.queued_at > options_.deadline;
    // A job that throws must not take the thread with it; jobs report their
    // own failures, so there is nothing left to tell.
    thrown_by([&] { q.fn(late ? store_job_status::late : store_job_status::run); });
    q = {};
    lock.lock();
  }
}

}  // namespace troupe
