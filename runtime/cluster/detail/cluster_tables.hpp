#pragma once
// The cluster's tables (made by the PostgreSQL store's migrations:
// troupe_cluster, troupe_nodes, troupe_shards), read and joined by the
// statements the membership and the status command share.

#include "runtime/cluster/cluster_options.hpp"
#include "runtime/cluster/cluster_status.hpp"
#include "runtime/store/postgres/detail/connection_pool.hpp"

#include <libpq-fe.h>

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

std::vector<node_info> read_nodes(PGconn* c);
std::vector<shard_info> read_shards(PGconn* c);

}  // namespace troupe::cluster
