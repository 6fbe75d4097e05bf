#pragma once
// For another agent's request that a tool call of this request waits on (an
// agent used as a tool paused there): a decision taken here, passed down to
// the call it names there, or a cancel of that request. Its answer comes back
// as the tool call's result: the other agent's answer, or its next pause.

#include "signals/cancel.hpp"
#include "signals/decision.hpp"

#include <string>
#include <variant>

namespace troupe {

struct pass_down {
  std::string agent_id;
  std::string thread_id;
  std::string call_id;  // the model call of this request that asked the agent
  std::string tool_call_id;
  std::string tool_name;
  std::variant<decision, cancel> what;  // with the other agent's request and call ids

  friend bool operator==(const pass_down&, const pass_down&) = default;
};

}  // namespace troupe
