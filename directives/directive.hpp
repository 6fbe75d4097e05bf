#pragma once
// The closed set of effects the strategy asks for. The agent executes none of
// them itself: it hands them to its supervisor.

#include "directives/awaiting_input.hpp"
#include "directives/cancel_call.hpp"
#include "directives/decision_answer.hpp"
#include "directives/llm_stream.hpp"
#include "directives/pass_down.hpp"
#include "directives/reply.hpp"
#include "directives/request_error.hpp"
#include "directives/summarize.hpp"
#include "directives/tool_exec.hpp"

#include <boost/json/value.hpp>

#include <string_view>
#include <variant>

namespace troupe {

using directive = std::variant<llm_stream, tool_exec, reply, request_error, cancel_call, summarize, awaiting_input,
                               decision_answer, pass_down>;

// "llm_stream", "tool_exec", …
std::string_view directive_type(const directive& d);

// {"type": "llm_stream", ...fields}: for tracing, logs and determinism checks.
boost::json::value to_json(const directive& d);

}  // namespace troupe
