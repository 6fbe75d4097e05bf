// Thread leases taken by the holder of their shard, for a cluster of nodes.

#include "runtime/store/postgres/detail/connection_pool.hpp"
#include "runtime/store/postgres/detail/result.hpp"
#include "runtime/store/postgres/postgres_store.hpp"

namespace troupe {

stored<thread_lease> postgres_store::acquire_lease_in_shard(const std::string& thread_id, const std::string& owner,
                                                            const shard_lease& shard, std::int64_t now_ms,
                                                            std::chrono::milliseconds ttl) {
  postgres::connection_pool::lease l(*pool_);
  if (!l) return l.failure();
  PGconn* c = l.get();
  const std::int64_t until = now_ms + ttl.count();
  postgres::result r = postgres::run(
      c, "SELECT status, holder, held_epoch, held_until FROM troupe_take_lease_in_shard($1, $2, $3, $4, $5, $6, $7)",
      {thread_id, owner, std::to_string(shard.shard), shard.node_id, std::to_string(shard.epoch),
       std::to_string(now_ms), std::to_string(until)});
  if (!r.ok()) return r.error(c, "lease " + thread_id);
  const std::string status = r.text(0, 0);
  const thread_lease held{r.text(0, 1), static_cast<std::uint64_t>(r.int64(0, 2)), r.int64(0, 3)};
  if (status == "not_held")
    return store_error{"fenced", "thread " + thread_id + ": shard " + std::to_string(shard.shard) +
                                     " is not held by node " + shard.node_id + " at epoch " +
                                     std::to_string(shard.epoch) + " (its holder is " +
                                     (held.owner.empty() ? std::string("nobody") : held.owner) + " at epoch " +
                                     std::to_string(held.epoch) + ", or its lease has run out)"};
  if (status == "owned")
    return store_error{"owned", "thread " + thread_id + " is held by " + held.owner + " (epoch " +
                                    std::to_string(held.epoch) + ") under the same grant of shard " +
                                    std::to_string(shard.shard)};
  return held;
}

}  // namespace troupe
