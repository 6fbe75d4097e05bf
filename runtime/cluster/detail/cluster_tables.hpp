#pragma once
// The cluster's tables (made by the PostgreSQL store's migrations:
// troupe_cluster, troupe_nodes, troupe_shards), read and joined by the
// statements the membership and the status command share.

#include "runtime/cluster/cluster_options.hpp"
#include "runtime/cluster/cluster_status.hpp"
#include "runtime/store/postgres/detail/connection_pool.hpp"

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe::cluster {

// A pool of `size` connections to `conninfo`, the schema migrated; throws
// cluster_error{connect} when it cannot.
std::unique_ptr<postgres::connection_pool> open_pool(const std::string& conninfo, std::size_t size,
                                                     std::chrono::seconds connect_timeout,
                                                     std::chrono::milliseconds statement_timeout);

// The cluster's shard count; none if no node ever joined.
std::optional<std::uint32_t> shard_count(PGconn* c);
// Makes the cluster with `shards` shards unless it exists; returns the
// count the cluster has (which may be another).
std::uint32_t make_cluster(PGconn* c, std::uint32_t shards);

// A grant made to a node's incarnation that is no longer the node's (a
// process with its id joined since) is reported as run out: another node may
// take it at once, and nobody is sent to it.
std::vector<node_info> read_nodes(PGconn* c);
std::vector<shard_info> read_shards(PGconn* c);

// A shard taken (troupe_take_shard): its new epoch, and how many thread
// leases held under older epochs its grant revoked.
struct shard_taken {
  std::uint64_t epoch = 0;
  std::uint64_t revoked_leases = 0;
};
// The compare-and-set of `shard` seen at `seen_epoch`, for `node_id`'s
// incarnation `incarnation`; none when the shard was taken meanwhile, or
// is held by a live node's current incarnation.
std::optional<shard_taken> take_shard(PGconn* c, std::uint32_t shard, const std::string& node_id,
                                      const std::string& incarnation, std::uint64_t seen_epoch,
                                      std::chrono::milliseconds ttl);

}  // namespace troupe::cluster
