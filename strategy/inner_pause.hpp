#pragma once
// An agent used as a tool paused on calls that wait for a person. The tool
// call does not end: its result is this pause, which the calling agent's
// machine turns into approval requests of its own, each pointing at the
// other agent's call (inner_approval) rather than copying its state, so the
// decisions are passed down and that agent's thread stays the record.

#include "directives/awaiting_input.hpp"
#include "signals/tool_result.hpp"

#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

struct inner_pause {
  std::string agent_id;
  std::string thread_id;
  std::string request_id;
  std::vector<open_approval> pending;  // as that agent listed them

  friend bool operator==(const inner_pause&, const inner_pause&) = default;
};

// The tool call's result that carries the pause: {"awaiting_input": {...}}.
boost::json::value to_tool_result(const inner_pause& p);
// The pause a result carries, or nullopt for any other result. Only results
// of tools whose spec relays approvals are read this way.
std::optional<inner_pause> read_inner_pause(const tool_outcome& outcome);

// The id a call of another agent waits under here: the id of the call that
// asked that agent, a slash, and the call's id there (which may itself be
// such a pair, for an agent further down).
std::string relayed_call_id(std::string_view outer_tool_call_id, std::string_view inner_tool_call_id);
// Whether `id` is one relayed through the call `outer_tool_call_id`.
bool relayed_through(std::string_view id, std::string_view outer_tool_call_id);

}  // namespace troupe
