#pragma once
// A node of a test cluster: short timings (50 ms heartbeats, dead after
// 400 ms, 600 ms shard leases), so that the tests see deaths and handovers
// within a second, and an address made from its id.

#include "runtime/cluster/cluster_options.hpp"

#include <chrono>
#include <string>
#include <thread>

namespace troupe::testing {

inline cluster_options test_node(const std::string& conninfo, const std::string& id, std::uint32_t shards = 8) {
  using namespace std::chrono_literals;
  cluster_options o;
  o.conninfo = conninfo;
  o.node_id = id;
  o.address = id + ".test:7000";
  o.build_id = "test-build";
  o.shards = shards;
  o.heartbeat_interval = 50ms;
  o.dead_after = 400ms;
  o.shard_lease_ttl = 600ms;
  return o;
}

// Polls `done` until it holds or `timeout` passes (a condition, not a spell).
template <class F>
bool eventually(F done, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace troupe::testing
