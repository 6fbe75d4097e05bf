#pragma once
// An agent of the deployment as the routes ask it: in this process's
// runtime, or, on a cluster node, wherever the cluster runs it (asks and
// decisions routed to the node that holds its shard, its threads read from
// the cluster's database). The routes are the same either way.

#include "actors/cluster/cluster_node.hpp"
#include "actors/runtime.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <variant>

namespace troupe::serve {

class agent_ref {
 public:
  explicit agent_ref(agent a) : target_(std::move(a)) {}
  explicit agent_ref(cluster_agent a) : target_(std::move(a)) {}

  // As agent::ask and agent::decide (actors/runtime.hpp).
  request ask(std::string question, ask_options options = {}) const;
  request decide(decision d, ask_options options = {}) const;
  // The thread as the agent holds it (in a cluster: as committed); nullopt
  // when it cannot be read within `timeout`.
  std::optional<thread_view> snapshot(const std::string& thread_id, std::chrono::milliseconds timeout) const;
  // Running here, or (in a cluster) on a live node that holds its shard.
  bool running() const;

 private:
  std::variant<agent, cluster_agent> target_;
};

}  // namespace troupe::serve
