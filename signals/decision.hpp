#pragma once
// A person's answer to a tool call that waits for approval, and the tick that
// lets a pause expire. Both are signals: the decision is committed to the
// thread before anything it allows runs.

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace troupe {

enum class verdict { approve, reject, edit };

std::string_view to_string(verdict v);
std::optional<verdict> parse_verdict(std::string_view s);

struct decision {
  std::string request_id;
  std::string tool_call_id;
  verdict answer = verdict::reject;
  std::string message;            // for reject: what the model reads as the tool's result
  boost::json::object arguments;  // for edit: the arguments the tool runs with instead
  std::string decided_by;
  // A decision sent again with the same key is answered as the first was,
  // and commits nothing more.
  std::string idempotency_key;
  // For a question (a call of a tool a person answers, as ask_human): the
  // answer the model reads as the call's result, with approve.
  std::string response{};
  // Approve or edit: every later call of the tool on this thread runs
  // without asking ("always allow this tool here").
  bool sticky = false;
  // Passed down at the call's deadline by the agent that used this one as a
  // tool: the call takes its rule's default, as at an approval_tick, and the
  // decider follows the request on from it (even when the default was taken
  // already, while the request still runs).
  bool expire = false;

  friend bool operator==(const decision&, const decision&) = default;
};

// Time has passed for a paused request: every approval of it whose deadline
// is behind the step's time is decided by its rule's default. The owner sends
// it; the strategy only compares the times it is given.
struct approval_tick {
  std::string request_id;

  friend bool operator==(const approval_tick&, const approval_tick&) = default;
};

}  // namespace troupe
