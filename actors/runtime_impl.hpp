#pragma once
// The runtime facade's insides: the actor system and the actors it started.
// Included by the facade and by tests that need to reach an actor directly.

#include "actors/runtime.hpp"
#include "actors/runtime_context.hpp"

#include <atomic>
#include <memory>
#include <vector>

namespace troupe {

struct runtime::impl {
  explicit impl(runtime_options options);
  ~impl();
  void shutdown();
  request ask(const std::string& agent_id, std::string question, ask_options options);
  const caf::actor& broker_for(const std::string& agent_id) const;

  runtime_options options;
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  std::shared_ptr<runtime_context> ctx;
  caf::actor supervisor;
  std::vector<caf::actor> brokers;  // one per scheduler thread, by agent id
  std::atomic<bool> stopped{false};
  std::weak_ptr<agent::impl_ref> self_ref;
};

// What agent and request handles hold: it outlives the runtime object, and is
// emptied when the runtime is destroyed.
struct agent::impl_ref {
  std::unique_ptr<runtime::impl> impl;
};

}  // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<troupe::request::state>)
