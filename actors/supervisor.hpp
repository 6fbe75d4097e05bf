#pragma once
// The supervisor starts and watches the runtime's agents. (Executors and
// brokers are supervised by their pools: actors/actor_pool.hpp.)
//
// Agents are restarted as their restart_policy says, with their threads
// reloaded from the store, at most runtime_options::max_restarts times within
// restart_window per agent; past that the agent is given up on, its failure
// reported (telemetry agent.escalated) and asks to it are refused.
//
//   (spawn_atom, launches)     -> size_t          start agents (all or none)
//   (stop_atom, agent_id)      -> bool            stop one for good; answers once it is down
//   (shutdown_atom)            -> bool            stop all agents, answer when they are down

#include "actors/runtime_context.hpp"
#include "strategy/react_config.hpp"

namespace troupe {

supervisor_actor spawn_supervisor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx);

}  // namespace troupe
