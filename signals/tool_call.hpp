#pragma once
// One tool call requested by a model.

#include "json/decode_error.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>

namespace troupe {

struct tool_call {
  std::string id;  // the model's tool_call id
  std::string name;
  boost::json::object arguments;
  // Set when the model's arguments were not a JSON object: the raw text and
  // why it was rejected. The call is then answered with an invalid_arguments
  // error result instead of being executed.
  std::optional<std::string> invalid_arguments;

  friend bool operator==(const tool_call&, const tool_call&) = default;
};

boost::json::value to_json(const tool_call& c);
decoded<tool_call> decode_tool_call(const boost::json::value& v, std::string path);

}  // namespace troupe
