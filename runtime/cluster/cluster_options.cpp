#include "runtime/cluster/cluster_options.hpp"

#include "runtime/random_ids.hpp"
#include "runtime/store/detail/lease_holder.hpp"

#include <unistd.h>

namespace troupe {

void validate(const cluster_options& o) {
  auto refuse = [](const std::string& why) { throw cluster_error(cluster_error::kind::invalid_options, why); };
  if (o.conninfo.empty()) refuse("cluster: no PostgreSQL conninfo (postgres://…) given");
  if (o.shards == 0) refuse("cluster: the shard count must be positive");
  if (o.heartbeat_interval.count() <= 0) refuse("cluster: the heartbeat interval must be positive");
  if (o.dead_after <= o.heartbeat_interval)
    refuse("cluster: dead_after (" + std::to_string(o.dead_after.count()) +
           " ms) must be longer than the heartbeat interval (" + std::to_string(o.heartbeat_interval.count()) + " ms)");
  if (o.shard_lease_ttl <= o.heartbeat_interval)
    refuse("cluster: the shard lease ttl (" + std::to_string(o.shard_lease_ttl.count()) +
           " ms) must be longer than the heartbeat interval (" + std::to_string(o.heartbeat_interval.count()) + " ms)");
  if (o.drain_timeout.count() <= 0) refuse("cluster: the drain timeout must be positive");
  if (o.forget_dead_after < o.dead_after) refuse("cluster: forget_dead_after must not be shorter than dead_after");
  if (o.statement_timeout.count() <= 0) refuse("cluster: the statement timeout must be positive");
}

std::string made_up_node_id() { return process_owner_id(getpid(), random_ids().next("node")); }

}  // namespace troupe
