#pragma once
// What the cluster benchmarks that run several cluster_nodes in one process
// share: a node's options (a small cluster's timings, the same agents on
// every node, the model given) and a wait until the nodes share the shards.

#include "actors/cluster/cluster_node.hpp"
#include "runtime/cluster/cluster_membership.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace troupe::bench {

struct cluster_timings {
  std::size_t heartbeat_ms = 100;
  std::size_t dead_after_ms = 1000;
  std::uint32_t shards = 16;
};

inline std::string agent_name(std::size_t i) { return "agent-" + std::to_string(i); }

inline cluster_node_options cluster_bench_options(const std::string& conninfo, const std::string& id,
                                                  const cluster_timings& t, std::size_t agents,
                                                  std::shared_ptr<llm_provider> model) {
  cluster_node_options o;
  o.cluster.conninfo = conninfo;
  o.cluster.node_id = id;
  o.cluster.shards = t.shards;
  o.cluster.heartbeat_interval = std::chrono::milliseconds(t.heartbeat_ms);
  o.cluster.dead_after = std::chrono::milliseconds(t.dead_after_ms);
  o.cluster.shard_lease_ttl = std::chrono::milliseconds(t.dead_after_ms * 3 / 2);
  o.transport.secret = "cluster-bench";
  o.runtime.provider = std::move(model);
  o.runtime.telemetry = std::make_shared<log_sink>(false);
  for (std::size_t i = 0; i < agents; ++i) o.agents.push_back({.id = agent_name(i), .model = "m"});
  return o;
}

// Waits until every shard is held and each node holds its fair share (the
// counts differ by one at most), or exits after a minute.
inline void wait_until_shared(const std::vector<cluster_node*>& nodes, std::uint32_t shards) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    std::size_t total = 0, least = shards, most = 0;
    for (cluster_node* n : nodes) {
      const std::size_t held = n->membership().shards_held().size();
      total += held;
      least = std::min(least, held);
      most = std::max(most, held);
    }
    if (total == shards && most - least <= 1) return;
    if (std::chrono::steady_clock::now() > until) {
      std::fprintf(stderr, "the shards were not shared in time\n");
      std::exit(1);
    }
    nodes.front()->membership().wait_rounds(1, std::chrono::seconds(5));
  }
}

}  // namespace troupe::bench
