#pragma once
// What a caller who subscribed to a request sees while it runs.

#include "directives/reply.hpp"
#include "signals/tool_result.hpp"

#include <boost/json/object.hpp>

#include <string>
#include <variant>

namespace troupe {

struct delta_event {
  std::string request_id;
  std::string text;
  std::string thinking;
};

struct tool_started_event {
  std::string request_id;
  std::string tool_call_id;
  std::string tool_name;
  boost::json::object arguments;
};

struct tool_finished_event {
  std::string request_id;
  std::string tool_call_id;
  std::string tool_name;
  tool_outcome outcome;
};

// The last event of every request: completed when the reply has an answer,
// failed (or cancelled) when it carries an error.
struct request_finished_event {
  reply result;
};

using stream_event = std::variant<delta_event, tool_started_event, tool_finished_event, request_finished_event>;

}  // namespace troupe
