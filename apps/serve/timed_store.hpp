#pragma once
// A thread store that times every commit it passes on, for the store commit
// latency metric; everything else goes straight to the store it wraps,
// which keeps its commit path (a queued store's commits are timed from
// hand-over to outcome, the wait for its writer included).

#include "runtime/store/thread_store.hpp"

#include <functional>
#include <memory>

namespace troupe::serve {

class timed_store final : public thread_store {
 public:
  using commit_observer = std::function<void(double seconds)>;
  timed_store(std::shared_ptr<thread_store> inner, commit_observer on_commit);

  commit_path path() const override { return inner_->path(); }
  std::optional<commit_batching> batching() const override { return inner_->batching(); }
  stored<thread> load(const std::string& thread_id) override { return inner_->load(thread_id); }
  stored<std::vector<entry>> request_entries(const std::string& thread_id, const std::string& request_id) override {
    return inner_->request_entries(thread_id, request_id);
  }
  stored<std::vector<open_pause>> open_pauses(const std::string& agent_id) override {
    return inner_->open_pauses(agent_id);
  }
  stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) override;
  stored<std::uint64_t> append_fenced(const thread_view& t, std::uint64_t expected_rev,
                                      const thread_lease& fence) override;
  void append_queued(thread_view t, std::uint64_t expected_rev, const thread_lease* fence, append_done done) override;
  stored<thread_lease> acquire_lease(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                                     std::chrono::milliseconds ttl) override;
  // Lease takes are not timed, but must queue as the inner store's do.
  bool queues_lease_takes() const override { return inner_->queues_lease_takes(); }
  void acquire_lease_queued(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                            std::chrono::milliseconds ttl, lease_done done) override {
    inner_->acquire_lease_queued(thread_id, owner, now_ms, ttl, std::move(done));
  }
  void release_lease(const std::string& thread_id, const thread_lease& held) override;
  void release_lease_queued(const std::string& thread_id, const thread_lease& held,
                            std::function<void()> done) override {
    inner_->release_lease_queued(thread_id, held, std::move(done));
  }
  std::vector<std::string> list() override { return inner_->list(); }
  bool remove(const std::string& thread_id) override { return inner_->remove(thread_id); }
  stored<thread> fork(const std::string& thread_id, std::uint64_t at_seq, const std::string& new_id,
                      std::int64_t now_ms) override;

 private:
  std::shared_ptr<thread_store> inner_;
  commit_observer on_commit_;
};

}  // namespace troupe::serve
