#pragma once
// What a caller who subscribed to a request sees while it runs.

#include "directives/awaiting_input.hpp"
#include "directives/reply.hpp"
#include "signals/tool_result.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace troupe {

// thread_seq: the seq of the request's newest entry in its thread when the
// event was sent, which places it among the thread's entries: a delta comes
// after that entry and before the message it is part of; a tool's start and
// end after its call's entry and before its result's. `troupe serve` makes
// its event ids of it, so that a turn told again from the store has the ids
// it had live.
struct delta_event {
  std::string request_id;
  std::string text;
  std::string thinking;
  std::uint64_t thread_seq = 0;
};

struct tool_started_event {
  std::string request_id;
  std::string tool_call_id;
  std::string tool_name;
  boost::json::object arguments;
  std::uint64_t thread_seq = 0;
};

struct tool_finished_event {
  std::string request_id;
  std::string tool_call_id;
  std::string tool_name;
  tool_outcome outcome;
  std::uint64_t thread_seq = 0;
};

// The request paused: its approval_request entries are committed, and these
// calls wait for a decision (in the order the model asked for them). The
// request_finished_event that follows carries the paused reply. thread_seq
// is the request's newest entry then: the last entry of the model's batch.
struct approval_requested_event {
  std::string request_id;
  std::vector<open_approval> pending;
  std::uint64_t thread_seq = 0;
};

// The last event of every request: completed when the reply has an answer,
// failed (or cancelled) when it carries an error.
struct request_finished_event {
  reply result;
};

// A new kind goes last: callers may tell the kinds apart by index.
using stream_event = std::variant<delta_event, tool_started_event, tool_finished_event, request_finished_event,
                                  approval_requested_event>;

}  // namespace troupe
