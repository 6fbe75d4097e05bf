#pragma once
// Executors run directives outside the agents. The model executor streams
// through an llm_provider, forwards deltas to the agent as signals and
// answers the agent's request with the result; the tool executor validates
// arguments, runs tools (blocking ones on the worker pool, asynchronous ones
// without holding a thread), enforces timeouts, retries retryable failures
// and answers with the tool's result. An executor that dies answers what it
// was running with executor_crashed. Each agent uses one of each, picked
// from a pool by its id.

#include "actors/detail/runtime_context.hpp"

namespace troupe {

llm_executor_actor spawn_llm_executor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx);
tool_executor_actor spawn_tool_executor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx);

}  // namespace troupe
