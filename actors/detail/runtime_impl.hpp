#pragma once
// The runtime facade's insides: the actor system and the actors it started.
// Included by the facade and by tests that need to reach an actor directly.

#include "actors/detail/runtime_context.hpp"
#include "actors/runtime.hpp"
#include "runtime/mcp/detail/server.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

namespace troupe {

struct runtime::impl {
  explicit impl(runtime_options options);
  ~impl();
  void shutdown();
  request ask(const std::string& agent_id, std::string question, ask_options options);
  request decide(const std::string& agent_id, decision d, ask_options options);
  broker_actor broker_for(const std::string& agent_id) const;

  runtime_options options;
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  std::shared_ptr<runtime_context> ctx;
  supervisor_actor supervisor;
  actor_pool<broker_actor> brokers;  // one per scheduler thread, by agent id
  std::atomic<bool> stopped{false};
  // Asks hold it shared while they check `stopped` and hand the request to
  // a broker; shutdown takes it to set `stopped`. So every ask either is
  // refused or reaches a broker before the brokers' shutdown, which ends it.
  std::shared_mutex accepting;
  std::weak_ptr<agent::impl_ref> self_ref;
  std::mutex mcp_mutex;
  std::vector<std::shared_ptr<mcp::server>> mcp_servers;  // stopped after the actors
};

// What agent and request handles hold: it outlives the runtime object, and is
// emptied when the runtime is destroyed. Handles may be used from any thread
// while that happens, so they take a reference of their own (atomically)
// for as long as a call lasts.
struct agent::impl_ref {
  std::atomic<std::shared_ptr<runtime::impl>> impl;
};

}  // namespace troupe
