#include "runtime/cluster/detail/cluster_tables.hpp"

#include "runtime/store/postgres/detail/migrations.hpp"
#include "runtime/store/postgres/detail/result.hpp"

#include <stdexcept>

namespace troupe::cluster {

using postgres::result;
using postgres::run;

namespace {

result checked(PGconn* c, result r, const std::string& what) {
  if (!r.ok()) throw cluster_error(cluster_error::kind::io, "cluster: " + r.error(c, what).message);
  return r;
}

}  // namespace

std::unique_ptr<postgres::connection_pool> open_pool(const std::string& conninfo, std::size_t size,
                                                     std::chrono::seconds connect_timeout,
                                                     std::chrono::milliseconds statement_timeout) {
  auto pool = std::make_unique<postgres::connection_pool>(
      size, postgres::connect_to(conninfo, connect_timeout, statement_timeout, statement_timeout,
                                 std::chrono::milliseconds(1'000)));
  postgres::connection_pool::lease l(*pool);
  if (!l)
    throw cluster_error(cluster_error::kind::connect, "cluster: cannot connect to PostgreSQL: " + l.failure().message);
  try {
    postgres::migrate(l.get());
  } catch (const std::runtime_error& e) {
    throw cluster_error(cluster_error::kind::connect, std::string("cluster: ") + e.what());
  }
  return pool;
}

std::optional<std::uint32_t> shard_count(PGconn* c) {
  result r = checked(c, run(c, "SELECT shards FROM troupe_cluster"), "read the shard count");
  if (r.rows() == 0) return std::nullopt;
  return static_cast<std::uint32_t>(r.int64(0, 0));
}

std::uint32_t make_cluster(PGconn* c, std::uint32_t shards) {
  // The shards' rows come with the cluster's, in one statement: a cluster
  // is never seen without them.
  checked(c,
          run(c,
              "WITH made AS (INSERT INTO troupe_cluster (shards) VALUES ($1) ON CONFLICT DO NOTHING "
              "RETURNING shards) "
              "INSERT INTO troupe_shards (shard) SELECT g FROM made, generate_series(0, made.shards - 1) g",
              {std::to_string(shards)}),
          "make the cluster");
  // Read in a statement of its own: one that started before a concurrent
  // maker committed would not see its row.
  const auto count = shard_count(c);
  if (!count) throw cluster_error(cluster_error::kind::io, "cluster: the cluster's row vanished as it was made");
  return *count;
}

std::vector<node_info> read_nodes(PGconn* c) {
  result r = checked(c,
                     run(c,
                         "SELECT n.id, n.address, n.build_id, n.state, "
                         "(extract(epoch FROM now() - n.heartbeat_at) * 1000)::bigint, "
                         "(extract(epoch FROM now() - n.started_at) * 1000)::bigint, "
                         "(SELECT count(*) FROM troupe_shards s WHERE s.holder = n.id AND s.lease_until > now() "
                         "  AND (n.incarnation = s.holder_incarnation OR n.incarnation = '')) "
                         "FROM troupe_nodes n ORDER BY n.id"),
                     "read the nodes");
  std::vector<node_info> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back(node_info{r.text(i, 0), r.text(i, 1), r.text(i, 2),
                            node_state_from(r.text(i, 3)).value_or(node_state::dead),
                            std::chrono::milliseconds(r.int64(i, 4)), std::chrono::milliseconds(r.int64(i, 5)),
                            static_cast<std::uint32_t>(r.int64(i, 6))});
  return out;
}

std::vector<shard_info> read_shards(PGconn* c) {
  result r = checked(c,
                     run(c,
                         "SELECT s.shard, COALESCE(s.holder, ''), s.epoch, "
                         "CASE WHEN s.lease_until > now() AND NOT EXISTS (SELECT 1 FROM troupe_nodes n "
                         "  WHERE n.id = s.holder AND n.incarnation <> '' AND n.incarnation <> s.holder_incarnation) "
                         "THEN (extract(epoch FROM s.lease_until - now()) * 1000)::bigint ELSE 0 END "
                         "FROM troupe_shards s ORDER BY s.shard"),
                     "read the shards");
  std::vector<shard_info> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back(shard_info{static_cast<std::uint32_t>(r.int64(i, 0)), r.text(i, 1),
                             static_cast<std::uint64_t>(r.int64(i, 2)), std::chrono::milliseconds(r.int64(i, 3))});
  return out;
}

std::optional<shard_taken> take_shard(PGconn* c, std::uint32_t shard, const std::string& node_id,
                                      const std::string& incarnation, std::uint64_t seen_epoch,
                                      std::chrono::milliseconds ttl) {
  result r = checked(
      c,
      run(c, "SELECT granted_epoch, revoked_leases FROM troupe_take_shard($1, $2, $3, $4, $5)",
          {std::to_string(shard), node_id, incarnation, std::to_string(seen_epoch), std::to_string(ttl.count())}),
      "take shard " + std::to_string(shard));
  if (r.rows() == 0) return std::nullopt;
  return shard_taken{static_cast<std::uint64_t>(r.int64(0, 0)), static_cast<std::uint64_t>(r.int64(0, 1))};
}

}  // namespace troupe::cluster

namespace troupe {

std::string_view to_string(node_state s) {
  switch (s) {
    case node_state::joining:
      return "joining";
    case node_state::active:
      return "active";
    case node_state::leaving:
      return "leaving";
    case node_state::dead:
      return "dead";
  }
  return "dead";
}

std::optional<node_state> node_state_from(std::string_view text) {
  for (node_state s : {node_state::joining, node_state::active, node_state::leaving, node_state::dead})
    if (to_string(s) == text) return s;
  return std::nullopt;
}

cluster_status read_cluster_status(const std::string& conninfo) {
  if (conninfo.empty()) throw cluster_error(cluster_error::kind::invalid_options, "cluster: no conninfo given");
  auto pool = cluster::open_pool(conninfo, 1, std::chrono::seconds(10), std::chrono::milliseconds(10'000));
  postgres::connection_pool::lease l(*pool);
  if (!l)
    throw cluster_error(cluster_error::kind::connect, "cluster: cannot connect to PostgreSQL: " + l.failure().message);
  const auto count = cluster::shard_count(l.get());
  if (!count)
    throw cluster_error(cluster_error::kind::io, "cluster: no cluster was ever made in this database (no node joined)");
  return cluster_status{*count, cluster::read_nodes(l.get()), cluster::read_shards(l.get())};
}

}  // namespace troupe
