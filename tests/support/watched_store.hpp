#pragma once
// A thread store that passes every call to another, counting the
// whole-thread loads of each thread; once told to, refusing every commit,
// as a process that died would write nothing more, or holding every commit
// until released, as a store that stalls would.

#include "runtime/store/thread_lease.hpp"
#include "runtime/store/thread_store.hpp"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace troupe::testing {

class watched_store final : public thread_store {
 public:
  explicit watched_store(std::shared_ptr<thread_store> inner) : inner_(std::move(inner)) {}
  std::atomic<bool> refuse_commits{false};
  std::size_t loads_of(const std::string& thread_id) {
    std::lock_guard lock(mutex_);
    return loads_[thread_id];
  }
  std::size_t total_loads() {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& [_, k] : loads_) n += k;
    return n;
  }

  stored<thread> load(const std::string& thread_id) override {
    {
      std::lock_guard lock(mutex_);
      ++loads_[thread_id];
    }
    return inner_->load(thread_id);
  }
  stored<std::vector<entry>> request_entries(const std::string& thread_id, const std::string& request_id) override {
    return inner_->request_entries(thread_id, request_id);
  }
  commit_path path() const override { return inner_->path(); }
  // From now on a commit waits (on the thread that commits) until release_commits().
  void hold_commits() {
    std::lock_guard lock(mutex_);
    holding_ = true;
  }
  std::size_t commits_held() {
    std::lock_guard lock(mutex_);
    return waiting_ + held_.size();
  }
  void release_commits() {
    std::vector<std::function<void()>> held;
    {
      std::lock_guard lock(mutex_);
      holding_ = false;
      held.swap(held_);
    }
    released_.notify_all();
    for (auto& commit : held) commit();
  }

  stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) override {
    wait_while_held();
    if (refuse_commits) return gone();
    return inner_->append(t, expected_rev);
  }
  stored<std::uint64_t> append_fenced(const thread_view& t, std::uint64_t expected_rev,
                                      const thread_lease& fence) override {
    wait_while_held();
    if (refuse_commits) return gone();
    return inner_->append_fenced(t, expected_rev, fence);
  }
  // Called on the committing actor's thread: a held commit is kept and
  // passed on at release, so that the actor goes on meanwhile.
  void append_queued(thread_view t, std::uint64_t expected_rev, const thread_lease* fence, append_done done) override {
    {
      std::lock_guard lock(mutex_);
      if (holding_) {
        held_.push_back([this, t = std::move(t), expected_rev, fence = fence ? std::optional(*fence) : std::nullopt,
                         done = std::move(done)]() mutable {
          append_queued(std::move(t), expected_rev, fence ? &*fence : nullptr, std::move(done));
        });
        return;
      }
    }
    if (refuse_commits) return done(gone());
    inner_->append_queued(std::move(t), expected_rev, fence, std::move(done));
  }
  void set_queue_deadline(std::chrono::milliseconds d) override { inner_->set_queue_deadline(d); }
  stored<thread_lease> acquire_lease(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                                     std::chrono::milliseconds ttl) override {
    return inner_->acquire_lease(thread_id, owner, now_ms, ttl);
  }
  bool queues_lease_takes() const override { return inner_->queues_lease_takes(); }
  void acquire_lease_queued(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                            std::chrono::milliseconds ttl, lease_done done) override {
    inner_->acquire_lease_queued(thread_id, owner, now_ms, ttl, std::move(done));
  }
  void release_lease(const std::string& thread_id, const thread_lease& held) override {
    inner_->release_lease(thread_id, held);
  }
  void release_lease_queued(const std::string& thread_id, const thread_lease& held,
                            std::function<void()> done) override {
    inner_->release_lease_queued(thread_id, held, std::move(done));
  }
  std::vector<std::string> list() override { return inner_->list(); }
  bool remove(const std::string& thread_id) override { return inner_->remove(thread_id); }

 private:
  static store_error gone() { return store_error{"io", "the process is gone"}; }
  void wait_while_held() {
    std::unique_lock lock(mutex_);
    if (!holding_) return;
    ++waiting_;
    released_.wait(lock, [&] { return !holding_; });
    --waiting_;
  }

  std::shared_ptr<thread_store> inner_;
  std::mutex mutex_;
  std::map<std::string, std::size_t> loads_;
  std::condition_variable released_;
  bool holding_ = false;
  std::size_t waiting_ = 0;
  std::vector<std::function<void()>> held_;  // append_queued calls, in order
};

}  // namespace troupe::testing
