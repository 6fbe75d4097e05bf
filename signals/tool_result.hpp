#pragma once
// The outcome of one tool execution: the tool's JSON result, or a typed error
// that the model will see as the result.

#include "json/decode_error.hpp"
#include "signals/error_info.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <variant>

namespace troupe {

// What a tool produced: its JSON result, or the error the model will read.
using tool_outcome = std::variant<boost::json::value, error_info>;

// Writes the outcome into `o` as "result" or as "error".
void put_tool_outcome(boost::json::object& o, const tool_outcome& outcome);
// Reads "result" or "error" back from `o`; `path` names `o` in errors.
decoded<tool_outcome> decode_tool_outcome(const boost::json::object& o, std::string path);

struct tool_result {
  std::string call_id;  // the model call that asked for the tool
  std::string tool_call_id;
  std::string tool_name;
  tool_outcome outcome;

  bool ok() const { return std::holds_alternative<boost::json::value>(outcome); }
  friend bool operator==(const tool_result&, const tool_result&) = default;
};

}  // namespace troupe
