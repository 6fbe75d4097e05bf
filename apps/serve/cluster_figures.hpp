#pragma once
// What a cluster node has done since it joined, as /metrics shows it: its
// membership's counters (cluster_membership::counters) and its routing's
// (cluster_node::route_counters), read at each scrape.

#include <cstddef>
#include <cstdint>
#include <string>

namespace troupe::serve {

struct cluster_figures {
  std::string node_id;
  std::size_t shards_held = 0;
  std::uint64_t rounds = 0, failed_rounds = 0;        // heartbeat rounds
  std::uint64_t acquired = 0, drained = 0, lost = 0;  // shards handed over to and from this node
  std::uint64_t local_asks = 0, remote_asks = 0, retries = 0;
};

}  // namespace troupe::serve
