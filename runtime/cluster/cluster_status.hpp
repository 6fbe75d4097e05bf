#pragma once
// A cluster as its tables hold it (docs/cluster.md): the nodes, and who
// holds each shard. Ages and times left are the database's (now()).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

enum class node_state { joining, active, leaving, dead };
std::string_view to_string(node_state s);
std::optional<node_state> node_state_from(std::string_view text);

struct node_info {
  std::string id;
  std::string address;  // host:port of its transport
  std::string build_id;
  node_state state = node_state::joining;
  std::chrono::milliseconds heartbeat_age{0};  // since its last heartbeat
  std::chrono::milliseconds up_for{0};         // since it joined
  std::uint32_t shards_held = 0;               // under leases not run out
};

struct shard_info {
  std::uint32_t shard = 0;
  std::string holder;  // empty: free
  std::uint64_t epoch = 0;
  // 0: run out, free, or granted to an incarnation its node no longer has
  // (a process with its id joined since).
  std::chrono::milliseconds lease_left{0};
};

// Where an agent's shard is held, as a node last read it.
struct shard_location {
  std::uint32_t shard = 0;
  std::string node_id;
  std::string address;
  std::uint64_t epoch = 0;
};

struct cluster_status {
  std::uint32_t shards = 0;  // the cluster's fixed count
  std::vector<node_info> nodes;
  std::vector<shard_info> shard_table;
};

// Reads the cluster the database at `conninfo` holds; throws cluster_error
// (cluster_options.hpp) when it cannot connect, or no cluster was ever
// made there.
cluster_status read_cluster_status(const std::string& conninfo);

}  // namespace troupe
