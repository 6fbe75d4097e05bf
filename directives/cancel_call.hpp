#pragma once
// "Stop this in-flight call": a model call, or with tool_call_id set, one tool
// execution of that model call. Whatever it still produces is dropped.

#include <string>

namespace troupe {

struct cancel_call {
  std::string call_id;
  std::string tool_call_id;  // empty: the model call itself

  friend bool operator==(const cancel_call&, const cancel_call&) = default;
};

}  // namespace troupe
