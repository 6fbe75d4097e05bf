#pragma once
// Executors run directives outside the agents. The model executor streams
// through an llm_provider and forwards deltas and the result to the agent as
// signals; the tool executor validates arguments, runs tools (blocking ones
// on the worker pool), enforces timeouts and retries retryable failures.
// Each agent uses one of each, picked from a fixed pool by its id.

#include "actors/runtime_context.hpp"

namespace troupe {

caf::actor spawn_llm_executor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx);
caf::actor spawn_tool_executor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx);

}  // namespace troupe
