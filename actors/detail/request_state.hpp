#pragma once
// What a request handle shares with the broker that runs the request: the
// embedder's callbacks and, once it ends, the reply.

#include "actors/runtime.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace troupe {

struct request::state {
  std::string id;
  std::string agent_id;
  std::string thread_id;  // as asked (empty: the agent's default thread)
  std::function<void(const stream_event&)> on_event;
  std::function<void(const reply&)> on_reply;
  std::weak_ptr<agent::impl_ref> rt;
  std::chrono::milliseconds deadline{0};
  // Set for a request another node runs (actors/cluster/node.hpp): cancel
  // goes there instead of to a broker of this runtime.
  std::function<void(std::string reason)> cancel_elsewhere;

  // Runs the callbacks with the reply and publishes it; only the first call
  // does anything, unless it was a paused reply: the request's end (a
  // cancel's) then takes its place. A callback that throws does not escape: the reply becomes
  // callback_failed, and what it threw is returned for the caller to report.
  // After a final reply the callbacks are let go: the caller must hold the
  // state for the call (the last reference may have been in a callback).
  std::optional<std::string> settle(reply r);
  // Runs on_event for an event of the running request; what it threw, if anything.
  std::optional<std::string> notify(const stream_event& e);

  bool finished() const;
  std::optional<reply> wait(std::chrono::milliseconds timeout) const;

 private:
  std::atomic<bool> settled_{false};
  mutable std::mutex mutex_;
  mutable std::condition_variable finished_;
  std::optional<reply> result_;
};

}  // namespace troupe
