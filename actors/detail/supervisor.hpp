#pragma once
// The supervisor starts and watches the runtime's agents. (Executors and
// brokers are supervised by their pools: actors/detail/actor_pool.hpp.)
//
// Agents are restarted as their restart_policy says, with their threads
// reloaded from the store, at most runtime_options::max_restarts times within
// restart_window per agent; past that the agent is given up on, its failure
// reported (telemetry agent.escalated) and asks to it are refused.
//
//   (spawn_atom, launches)     -> size_t          start agents (all or none)
//   (stop_atom, agent_id)      -> bool            stop one for good; answers once it is down
//   (drain_atom, agent_id, patience) -> bool      the same once it runs no request, or after patience
//   (shutdown_atom)            -> agents          stop supervising: the caller stops these
//   (done_atom)                -> bool            answered once they are all down
//   (all_down_atom)                               (its own: the last of them is down)
//
// The caller sends the stops from its own thread: sent by an actor, they
// would all queue on that actor's scheduler thread and reach the others
// one steal at a time (five times slower for 100,000 agents on two cores).

#include "actors/detail/runtime_context.hpp"
#include "strategy/react_config.hpp"

namespace troupe {

supervisor_actor spawn_supervisor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx);

}  // namespace troupe
