#pragma once
// An agent as the supervisor starts it: its id, what it is run with and its
// strategy configuration, taken apart from the spec it was asked with.

#include "actors/agent_spec.hpp"
#include "strategy/react_config.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace troupe {

// What an agent is run with besides its strategy configuration: the spec's
// limits and policies. Agents spawned together usually share them, so they
// share one of these rather than each holding a copy of its spec.
struct agent_profile {
  std::size_t max_queued_asks = 64;
  std::chrono::milliseconds request_deadline{};
  std::size_t max_loaded_threads = 10'000;
  std::chrono::milliseconds thread_idle_timeout{};
  std::size_t max_parallel_tools = 8;
  restart_policy restart = restart_policy::transient;
  std::shared_ptr<llm_provider> provider{};  // null: the runtime's

  explicit agent_profile(const agent_spec& spec)
      : max_queued_asks(spec.max_queued_asks),
        request_deadline(spec.request_deadline),
        max_loaded_threads(spec.max_loaded_threads),
        thread_idle_timeout(spec.thread_idle_timeout),
        max_parallel_tools(spec.max_parallel_tools),
        restart(spec.restart),
        provider(spec.provider) {}
  bool operator==(const agent_profile&) const = default;
};

// One agent for the supervisor to start.
struct agent_launch {
  std::string id;
  std::shared_ptr<const agent_profile> profile;
  // Without the system prompt, which is the agent's own: a simulation gives
  // each agent a persona of its own, and a config apiece (~380 bytes) was
  // the largest share of an idle agent after its CAF actor, thread and entries.
  std::shared_ptr<const react_config> config;
  std::shared_ptr<const std::string> system_prompt;  // null: none
};

}  // namespace troupe
