#pragma once
// The supervisor starts and watches the runtime's agents and executors.
//
// Agents are restarted as their restart_policy says, with their threads
// reloaded from the store, at most runtime_options::max_restarts times within
// restart_window per agent; past that the agent is given up on, its failure
// reported (telemetry agent.escalated) and asks to it are refused. Executors
// are always restarted into their pool slot.
//
//   (spawn_atom, spec, config) -> caf::actor      start an agent
//   (stop_atom, agent_id)      -> bool            stop one for good; answers once it is down
//   (shutdown_atom)            -> bool            stop all agents, answer when they are down

#include "actors/runtime_context.hpp"
#include "strategy/react_config.hpp"

namespace troupe {


caf::actor spawn_supervisor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx,
                            std::size_t executors);

}  // namespace troupe
