#pragma once
// One message of the context sent to a model: the provider-neutral shape that
// a projection of the thread produces and each provider turns into its wire
// format.

#include "signals/tool_call.hpp"

#include <boost/json/value.hpp>

#include <string>
#include <vector>

namespace troupe {

struct llm_message {
  std::string role;                   // "system", "user", "assistant" or "tool"
  std::string content;
  std::vector<tool_call> tool_calls;  // assistant messages that call tools
  std::string tool_call_id;           // tool messages: the call they answer
  std::string name;                   // tool messages: the tool's name

  friend bool operator==(const llm_message&, const llm_message&) = default;
};

boost::json::value to_json(const llm_message& m);

}  // namespace troupe
