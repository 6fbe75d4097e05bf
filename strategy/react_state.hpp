#pragma once
// The ReAct machine's state for one thread: a plain value, built and compared
// in tests without any runtime, and serialisable so an agent can be traced or
// moved.

#include "context/projection.hpp"
#include "json/decode_error.hpp"
#include "signals/error_info.hpp"
#include "signals/query.hpp"
#include "signals/token_usage.hpp"
#include "signals/tool_call.hpp"
#include "signals/tool_result.hpp"
#include "strategy/shared_value.hpp"
#include "thread/small_string.hpp"

#include <boost/json/value.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace troupe {

//   idle → awaiting_llm ⇄ awaiting_tools → completed | error
//                 awaiting_tools ⇄ awaiting_input (calls wait for decisions)
// and a new query from completed or error continues the same thread.
enum class react_status { idle, awaiting_llm, awaiting_tools, completed, error, awaiting_input };

std::string_view to_string(react_status s);
std::optional<react_status> parse_react_status(std::string_view s);

// A tool call of the current iteration and, once it arrived, its outcome.
struct pending_tool_call {
  tool_call call;
  std::optional<tool_outcome> outcome;
  // While the call waits for a decision: its deadline (Unix ms); 0 otherwise.
  std::int64_t awaiting_until = 0;
  bool asked = false;             // an approval_request was committed for it
  bool result_committed = false;  // its tool_result is in the thread already

  friend bool operator==(const pending_tool_call&, const pending_tool_call&) = default;
};

// Data derived from the thread that the machine keeps so as not to compute it
// again. Never serialised, and never part of a state's identity: a state
// without it computes the same outputs.
template <class T>
struct derived_cache {
  std::shared_ptr<const T> value;
  friend bool operator==(const derived_cache&, const derived_cache&) { return true; }
};

struct react_state {
  react_status status = react_status::idle;
  int iteration = 0;  // of the current (or last) request; here, it fills the four bytes status leaves

  // The current (or last) request.
  small_string request_id;
  shared_value<query_overrides> overrides;
  std::int64_t request_started_at = 0;
  small_string call_id;       // the model call in flight, or the last one
  std::string streamed_text;  // deltas of the current call, not committed
  std::string streamed_thinking;
  std::vector<pending_tool_call> tool_calls;  // of the current iteration, in call order
  shared_optional<error_info> error;          // why the last request failed

  token_usage request_usage;
  token_usage thread_usage;  // the session total over every request

  // The agent's own changes to its context policy (below a request's).
  shared_value<context_overrides> context;
  // A summary being written (its model call), and the seq it will cover up to.
  small_string summary_call_id;
  std::uint64_t summary_to_seq = 0;

  derived_cache<unit_cache> projection;  // the units of the last model call's context

  // A paused request is still running: a new query waits for it to end.
  bool busy() const {
    return status == react_status::awaiting_llm || status == react_status::awaiting_tools ||
           status == react_status::awaiting_input;
  }
  friend bool operator==(const react_state&, const react_state&) = default;
};

boost::json::value to_json(const react_state& s);
decoded<react_state> decode_react_state(const boost::json::value& v);

}  // namespace troupe
