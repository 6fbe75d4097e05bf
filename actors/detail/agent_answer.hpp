#pragma once
// What an agent used as a tool answered, as the tool call's result: its
// answer, its pause for a person (the calling agent's request waits on it
// too, strategy/inner_pause.hpp), or its error.

#include "directives/reply.hpp"
#include "signals/tool_result.hpp"
#include "strategy/inner_pause.hpp"

#include <string>

namespace troupe::detail {

inline tool_outcome agent_answer_outcome(const std::string& agent_id, const std::string& thread_id,
                                         const reply& answer) {
  if (answer.ok()) return boost::json::value(std::get<std::string>(answer.outcome));
  if (answer.paused()) return to_tool_result(inner_pause{agent_id, thread_id, answer.request_id, answer.pending});
  const auto& e = std::get<error_info>(answer.outcome);
  return error_info::of(e.type, "agent " + agent_id + " failed: " + e.message);
}

}  // namespace troupe::detail
