#include "runtime/store/thread_lease.hpp"

#include "runtime/store/detail/lease_holder.hpp"

#include <algorithm>

namespace troupe {

stored<thread_lease> lease_taken(const std::optional<thread_lease>& current, const std::string& thread_id,
                                 const std::string& owner, std::int64_t now_ms, std::chrono::milliseconds ttl) {
  // A live lease whose holder died on this host is taken at once, not waited out.
  if (current && current->owner != owner && current->expires_at_ms > now_ms && !holder_is_gone(current->owner))
    return store_error{"owned", "thread " + thread_id + " is held by " + current->owner + " (epoch " +
                                    std::to_string(current->epoch) + ") for " +
                                    std::to_string(current->expires_at_ms - now_ms) + " ms more"};
  return thread_lease{owner, (current ? current->epoch : 0) + 1, now_ms + ttl.count()};
}

std::optional<store_error> fence_refusal(const std::optional<thread_lease>& current, const std::string& thread_id,
                                         const thread_lease& fence) {
  if (current && current->owner == fence.owner && current->epoch == fence.epoch) return std::nullopt;
  const std::string now_held =
      current ? "is now held by " + current->owner + " at epoch " + std::to_string(current->epoch) : "has no lease";
  return store_error{"fenced", "thread " + thread_id + " " + now_held + "; this writer's lease (" + fence.owner +
                                   ", epoch " + std::to_string(fence.epoch) + ") is gone, so nothing was written"};
}

thread_lease lease_renewed(const thread_lease& current, const thread_lease& fence) {
  thread_lease out = current;
  out.expires_at_ms = std::max(current.expires_at_ms, fence.expires_at_ms);
  return out;
}

thread_lease lease_released(const thread_lease& current, const thread_lease& held) {
  if (current.owner != held.owner || current.epoch != held.epoch) return current;
  thread_lease out = current;
  out.expires_at_ms = 0;
  return out;
}

}  // namespace troupe
