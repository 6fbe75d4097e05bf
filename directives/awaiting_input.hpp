#pragma once
// A request paused for people: the tool calls of its model turn that wait for
// a decision. The request has not ended; it goes on when every one of them
// is decided (or expires).

#include "json/decode_error.hpp"
#include "signals/decision.hpp"
#include "signals/token_usage.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

// Where a call waits when it is another agent's: an agent used as a tool
// paused on a call of its own, and the call surfaces on the request that
// used it. A decision for it is passed down to that agent, whose thread
// holds the call, its pause and its decision.
struct inner_approval {
  std::string agent_id;
  std::string thread_id;
  std::string request_id;
  std::string tool_call_id;  // the call's id on that agent's thread

  friend bool operator==(const inner_approval&, const inner_approval&) = default;
};

// {"agent_id", "thread_id", "request_id", "tool_call_id"}.
boost::json::object to_json(const inner_approval& i);

// One tool call waiting for a decision, as its approval_request entry records it.
struct open_approval {
  std::string tool_call_id;
  std::string tool;
  boost::json::object arguments;
  std::string reason;
  std::int64_t expires_at = 0;  // Unix milliseconds
  // A question for the person (reason is the question): answered with a
  // decision's response, not approved.
  bool question = false;
  // For a call of another agent (see inner_approval); none for this agent's own.
  std::optional<inner_approval> inner{};
  // What the pause becomes at expires_at when nobody decided.
  verdict on_expiry = verdict::reject;

  friend bool operator==(const open_approval&, const open_approval&) = default;
};

// {"tool_call_id", "tool", "arguments", "reason", "expires_at", "on_expiry",
// "question"?, "inner"?}, and back; `path` names the value in errors.
boost::json::object to_json(const open_approval& a);
decoded<open_approval> decode_open_approval(const boost::json::value& v, std::string path);

struct awaiting_input {
  std::string request_id;
  std::vector<open_approval> pending;  // in the order the model asked for the calls
  token_usage usage;
  int iterations = 0;

  // The earliest deadline: when the owner should send an approval_tick.
  std::int64_t next_expiry() const {
    std::int64_t first = 0;
    for (const open_approval& a : pending)
      if (first == 0 || a.expires_at < first) first = a.expires_at;
    return first;
  }

  friend bool operator==(const awaiting_input&, const awaiting_input&) = default;
};

}  // namespace troupe
