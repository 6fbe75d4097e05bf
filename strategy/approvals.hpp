#pragma once
// Pauses for approval as the thread records them (approval_request and
// decision entries): what is still open, what was decided, and the state of
// a request that was paused when its agent stopped, rebuilt from the thread
// alone so that a decision after a restart continues it where it stood.

#include "directives/awaiting_input.hpp"
#include "directives/reply.hpp"
#include "strategy/react_state.hpp"
#include "thread/thread.hpp"

#include <optional>
#include <string_view>
#include <vector>

namespace troupe {

// The decision committed for a tool call of a request (with that idempotency
// key, when one is given), or nullptr.
const entry* find_decision(const thread_view& t, std::string_view request_id, std::string_view tool_call_id,
                           std::string_view idempotency_key = {});

// Whether a sticky decision on the thread allowed the tool ("always allow
// this tool here"): its later calls run without asking.
bool allowed_on_thread(const thread_view& t, std::string_view tool);

// For an approval_request or decision of another agent's call (an agent
// used as a tool paused on it): where that call waits, and the call of this
// thread that asked that agent. nullopt for this agent's own calls.
struct relayed_call {
  inner_approval inner;
  std::string_view outer_tool_call_id;  // into the entry's refs
};
std::optional<relayed_call> relayed_to(const entry& e);

// How a request ended, as its last entry says (its answer or its error),
// when its call `tool_call_id` took its default at the deadline; nullopt if
// the call did not expire or the request has not ended.
std::optional<reply> end_after_expiry(const thread_view& t, std::string_view request_id, std::string_view tool_call_id);

// The approval_request entries whose call has neither a decision nor a result.
std::vector<const entry*> open_approval_requests(const thread_view& t);

// The open approvals of a request, as its awaiting_input listed them.
std::vector<open_approval> pending_approvals(const thread_view& t, std::string_view request_id);

// The machine state of the thread's last request if the thread shows it
// paused: its last model turn asked for approvals, some are still open, and
// nothing was committed after the turn. The turn's calls carry the outcomes
// the thread holds; a call that was running when the agent stopped (decided,
// or needing no approval) is `interrupted` unless the thread holds its result.
// What the thread does not record (the query's overrides, token usage) starts
// from the defaults.
std::optional<react_state> paused_request(const thread_view& t);

}  // namespace troupe
