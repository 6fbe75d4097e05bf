#pragma once
// One model served by several endpoints: a provider that spreads its calls
// over member providers, each with its own cap on calls in flight.
//
// A call goes to the member with the most free capacity (ties in turn);
// when every member is at its cap (or paused), calls wait in one FIFO
// queue, bounded: past `max_queued` a call fails at once with queue_full.
//
// Retries belong to the pool, not to its members: a member that retried a
// 429 by itself would sleep on it while another endpoint stands idle, and
// the two layers would multiply the attempts. So members are built with
// their own retries off (see http_pool_members), and the pool handles an
// error that is_retryable() calls so and that came before any delta:
//  - rate_limited pauses that member for the server's Retry-After (at most
//    retry.max_backoff; without one, an exponential backoff growing with the
//    member's consecutive 429s); the call goes back to the head of the
//    queue and is sent to another member, or to the same one once its
//    pause ends;
//  - overloaded, server and network errors send the call back to the head
//    of the queue after a backoff, without pausing the member.
// Retries are bounded per call (`retry.max_retries`, and for 429s
// `max_rate_limit_retries`, which is larger: a 429 says "later", not "no").
// A call that already streamed text to its caller is never retried (the
// caller would see the text twice): its error goes to the caller as it
// came, the member paused all the same if it was a 429.

#include "runtime/llm/http_llm_provider.hpp"
#include "runtime/llm/llm_errors.hpp"
#include "runtime/llm/llm_provider.hpp"
#include "runtime/net/timer_queue.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace troupe {

struct pool_member {
  std::string name;  // how figures name it: its URL, say
  std::shared_ptr<llm_provider> provider;
  std::size_t max_concurrency = 16;  // at least 1
};

struct endpoint_pool_options {
  std::size_t max_queued = 100'000;  // calls waiting for a slot; one more fails with queue_full
  llm_retry_policy retry;            // max_retries for overloaded/server/network; backoffs for all
  int max_rate_limit_retries = 8;    // 429s one call may meet before its error goes to the caller
};

// What one member did so far, for a progress line.
struct endpoint_figures {
  std::string name;
  std::size_t max_concurrency = 0;
  std::uint64_t calls = 0;  // attempts sent to it
  std::size_t in_flight = 0;
  std::uint64_t rate_limited = 0;  // 429s it answered
  // Set while the member is paused after a 429.
  std::optional<std::chrono::steady_clock::time_point> paused_until;
};

class endpoint_pool final : public llm_provider {
 public:
  // Throws std::invalid_argument for no members, a null provider or a cap of 0.
  endpoint_pool(std::vector<pool_member> members, endpoint_pool_options options = {});
  ~endpoint_pool() override;  // cancels what is queued or in flight: no result comes after
  endpoint_pool(const endpoint_pool&) = delete;
  endpoint_pool& operator=(const endpoint_pool&) = delete;

  // The first member's: the members serve one model the same way.
  std::string_view name() const override;
  std::unique_ptr<llm_call> stream(const llm_stream& request, llm_callbacks callbacks) override;
  // The pool's own retries plus the members'.
  std::size_t retries() const override;

  std::vector<endpoint_figures> figures() const;
  std::size_t queued() const;

  struct pending;

 private:
  struct member_state {
    pool_member spec;
    std::size_t in_flight = 0;
    std::uint64_t calls = 0;
    std::uint64_t rate_limited = 0;
    int consecutive_rate_limits = 0;
    std::chrono::steady_clock::time_point paused_until{};
  };
  // An attempt chosen under the lock, to start outside it (a member may
  // answer inside stream(), and its callback takes the lock).
  struct launch {
    std::shared_ptr<pending> call;
    std::size_t member;
    std::uint64_t attempt;
  };
  using clock = std::chrono::steady_clock;

  // Under mutex_: the waiting calls that now have a member, each taking a slot.
  std::vector<launch> take_launches(clock::time_point now);
  // The member with the most free slots, not paused; `advance` moves the tie-break on.
  std::optional<std::size_t> pick_member(clock::time_point now, bool advance);
  void start(std::vector<launch> launches);
  void on_attempt_result(const std::shared_ptr<pending>& call, std::uint64_t attempt, llm_result result);
  void requeue_after(const std::shared_ptr<pending>& call, clock::duration delay);
  // Starts what waits once a paused member may take calls again.
  void resume_at(clock::time_point when, clock::time_point now);
  void cancel(const std::shared_ptr<pending>& call);
  void free_slot(std::size_t member, std::vector<launch>& launches);

  endpoint_pool_options options_;
  mutable std::mutex mutex_;
  std::vector<member_state> members_;
  std::deque<std::shared_ptr<pending>> queue_;
  // Every call not finished: cancelled when the pool goes.
  std::unordered_set<std::shared_ptr<pending>> live_;
  std::size_t next_member_ = 0;  // where the tie-break starts
  bool closing_ = false;         // the pool is going: nothing more starts
  std::uint64_t retries_ = 0;
  // Last: its thread stops before the state its callbacks touch goes.
  timer_queue timers_;

  friend class pool_call;
};

// The members for an OpenAI-compatible server at several URLs, built as
// `--base-url` builds one (http_options_for), with their own retries off:
// the pool retries. They share `client`, so one I/O thread serves them all.
struct http_endpoint {
  std::string base_url;
  std::string api_key;  // may be empty for a local server
  std::size_t max_concurrency = 16;
};
std::vector<pool_member> http_pool_members(const std::vector<http_endpoint>& endpoints, const http_settings& settings,
                                           std::shared_ptr<http_client> client);

}  // namespace troupe
