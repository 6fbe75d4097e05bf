#pragma once
// The answer to a decision: taken (committed), or the typed reason it was
// not (not_found: no such request or call waits; already_decided; expired).

#include "directives/reply.hpp"
#include "signals/error_info.hpp"

#include <optional>
#include <string>

namespace troupe {

struct decision_answer {
  std::string request_id;
  std::string tool_call_id;
  std::string idempotency_key;
  std::optional<error_info> error;  // none: the decision is committed, now or before
  // Committed by this step (not a repeat answered as the first): the
  // request goes on from it, to its next pause or its end.
  bool taken = false;
  // A decision passed down at a deadline that a tick had taken, for a
  // request that has ended since: that end, which the decider hears.
  std::optional<reply> ended{};

  bool ok() const { return !error.has_value(); }
  friend bool operator==(const decision_answer&, const decision_answer&) = default;
};

}  // namespace troupe
