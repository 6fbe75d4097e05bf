#pragma once
// How a node joins a cluster of troupe nodes kept in PostgreSQL
// (docs/cluster.md): where the database is, who this node is, and the
// timings of its heartbeats and shard leases. Every comparison of these
// timings with a heartbeat or a lease expiry is made by the database, on
// its clock (now()): the nodes' clocks need not agree.

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace troupe {

struct cluster_options {
  // Anything libpq accepts: postgres://user@host:port/db?…, or "host=… dbname=…".
  std::string conninfo;
  // Unique in the cluster. Empty: made up as runtime owner ids are
  // (host/pid/start/unique), so a restarted process is a new node.
  std::string node_id;
  // host:port where the other nodes reach this one (the transport's).
  std::string address;
  // Fixed for a cluster's life: the first node to join sets it, and a node
  // configured with another count is refused (cluster_error::shard_count).
  std::uint32_t shards = 64;
  std::chrono::milliseconds heartbeat_interval{1'000};
  // A node whose last heartbeat is older than this is declared dead by the
  // survivors, and its shards are taken at once.
  std::chrono::milliseconds dead_after{10'000};
  // A shard lease not renewed within this runs out; renewed every heartbeat.
  std::chrono::milliseconds shard_lease_ttl{15'000};
  // A drain that has not answered within this is taken as done: the shard
  // is given up all the same (the next grant revokes its thread leases, so
  // whatever still runs for it can commit nothing more).
  std::chrono::milliseconds drain_timeout{30'000};
  // A dead node's row is deleted this long after its last heartbeat.
  std::chrono::milliseconds forget_dead_after{std::chrono::hours(1)};
  // Recorded with the node; the transport refuses a peer of another build.
  std::string build_id;
  // The membership's own connection: a server that does not answer must not
  // stall heartbeats for longer than this per statement.
  std::chrono::seconds connect_timeout{5};
  std::chrono::milliseconds statement_timeout{5'000};
};

// Why a node could not join, or options that can never work.
class cluster_error : public std::runtime_error {
 public:
  enum class kind {
    invalid_options,  // cluster_options::validate's refusals
    connect,          // the database could not be reached or migrated
    shard_count,      // the cluster has another shard count than this node
    node_id_taken,    // a live node already has this id
    io,               // a statement failed
  };
  cluster_error(kind k, const std::string& message) : std::runtime_error(message), kind_(k) {}
  kind which() const { return kind_; }

 private:
  kind kind_;
};

// Throws cluster_error{invalid_options} naming the first option that cannot
// work: no conninfo, no shards, a heartbeat interval that is not positive,
// or a dead_after or shard_lease_ttl not longer than the heartbeat interval
// (a live node would be declared dead, or lose its shards, between beats).
void validate(const cluster_options& o);

// A node id made up as runtime owner ids are: host/pid/start/unique.
std::string made_up_node_id();

}  // namespace troupe
