#pragma once
// A request to stop a running request.

#include <string>

namespace troupe {

struct cancel {
  std::string request_id;
  std::string reason;
  // The error the request ends with; empty: cancelled. A request stopped
  // because its agent stops ends with shutdown, which a caller may retry.
  std::string error_type{};
  // The canceller waits for the step's answer, a decision_answer without a
  // tool call: it cancels a request whose ask has ended (one paused for
  // decisions, or continued by an expiry), so no ask hears the request's end.
  bool answered = false;

  friend bool operator==(const cancel&, const cancel&) = default;
};

}  // namespace troupe
