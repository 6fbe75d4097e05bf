#pragma once
// The agent actor: owns its threads, runs the ReAct strategy on every signal,
// commits before effect, and hands directives to the executors.

#include "actors/detail/agent_launch.hpp"
#include "actors/detail/runtime_context.hpp"
#include "strategy/react_config.hpp"

namespace troupe {

// The strategy configuration for agents of this spec, shared by every
// incarnation (restarts) of the agent, offering `tools` (the registry's
// specs of spec.tools: tool_registry::specs, which throws
// std::invalid_argument for an unknown name). Its system prompt is empty:
// the agent holds its own (agent_launch).
std::shared_ptr<const react_config> make_react_config(const agent_spec& spec, tool_set tools);

agent_actor spawn_agent_actor(caf::actor_system& sys, const agent_launch& launch, std::shared_ptr<runtime_context> ctx);

}  // namespace troupe
