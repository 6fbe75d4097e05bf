#pragma once
// A request paused for people: the tool calls of its model turn that wait for
// a decision. The request has not ended; it goes on when every one of them
// is decided (or expires).

#include "signals/token_usage.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

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

  friend bool operator==(const open_approval&, const open_approval&) = default;
};

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
