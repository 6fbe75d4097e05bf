#pragma once
// "Run this tool with these arguments", answered by a tool_result signal.

#include <boost/json/object.hpp>

#include <cstdint>
#include <string>

namespace troupe {

struct tool_exec {
  std::string call_id;  // the model call that asked for the tool
  std::string tool_call_id;
  std::string tool_name;
  boost::json::object arguments;
  std::int64_t timeout_ms = 0;
  std::string request_id;
  int iteration = 0;
  // The W3C traceparent of this tool call's span, set by the runtime when
  // the call is traced (the strategy leaves it empty); tools get it in their
  // tool_context.
  std::string traceparent{};

  friend bool operator==(const tool_exec&, const tool_exec&) = default;
};

}  // namespace troupe
