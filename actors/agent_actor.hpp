#pragma once
// The agent actor: owns its threads, runs the ReAct strategy on every signal,
// commits before effect, and hands directives to the executors.

#include "actors/runtime_context.hpp"
#include "strategy/react_config.hpp"

namespace troupe {

// The strategy configuration for agents of this spec, shared by every
// incarnation (restarts) of the agent. Unknown tool names throw
// std::invalid_argument.
std::shared_ptr<const react_config> make_react_config(const agent_spec& spec, const tool_registry& tools);

agent_actor spawn_agent_actor(caf::actor_system& sys, std::shared_ptr<const agent_spec> spec,
                              std::shared_ptr<runtime_context> ctx, std::shared_ptr<const react_config> config);

}  // namespace troupe
