#pragma once
// One writer per thread, across processes. An agent that loads a thread
// takes its lease: (owner, epoch, expiry). Every commit carries the lease,
// and a store refuses a commit whose owner and epoch are not the thread's
// current ones (fencing), in the same transaction as its revision check. A
// lease that expired may be taken by another owner, with the next epoch:
// from then on the old holder's commits are refused, so a process that was
// paused or cut off past its lease can never write again under it. Taking a
// lease always starts a new epoch, even for the same owner: a restarted
// process with the same owner id takes its threads back at once, and fences
// its previous incarnation.
//
// These are the rules; each store applies them where it keeps the lease
// (PostgreSQL in SQL, the same rules).

#include "runtime/store/thread_store.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace troupe {

struct thread_lease {
  std::string owner;
  std::uint64_t epoch = 0;
  std::int64_t expires_at_ms = 0;  // 0: released
  bool operator==(const thread_lease&) const = default;
};

// The lease `owner` gets on taking `thread_id`, whose current lease is
// `current` (none: never leased); or an "owned" error naming the live holder.
// A holder that has died on this host (lease_holder.hpp) does not count as live.
stored<thread_lease> lease_taken(const std::optional<thread_lease>& current, const std::string& thread_id,
                                 const std::string& owner, std::int64_t now_ms, std::chrono::milliseconds ttl);

// The clock a queued take (acquire_lease_queued) is judged at: its caller's
// `now_ms` plus the time it waited for its store, so that a lease that ran
// out meanwhile is free and the one granted runs its whole ttl.
inline std::int64_t now_after_wait(std::int64_t now_ms, std::chrono::steady_clock::time_point queued_at) {
  return now_ms +
         std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - queued_at).count();
}

// Why a commit under `fence` may not go in ("fenced"), or nothing. A commit
// that goes in renews the lease to fence.expires_at_ms (lease_renewed).
std::optional<store_error> fence_refusal(const std::optional<thread_lease>& current, const std::string& thread_id,
                                         const thread_lease& fence);
thread_lease lease_renewed(const thread_lease& current, const thread_lease& fence);

// The lease after its holder gives it up: unchanged if `held` is not it.
thread_lease lease_released(const thread_lease& current, const thread_lease& held);

}  // namespace troupe
