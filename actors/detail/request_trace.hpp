#pragma once
// The spans of a thread's running request: the request's own (invoke_agent)
// and those of its model call and tool calls in flight, which are its
// children. Made when the runtime records spans or the caller sent a trace
// context; otherwise inactive and empty. Plain data, kept by the agent.

#include "runtime/telemetry/trace_context.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

struct request_trace {
  span_context request;           // invalid: the request is not traced
  std::uint64_t parent_span = 0;  // the caller's span, if it sent one
  // Whether the request's spans are reported: the runtime records spans and
  // the caller, if it sent a context, sampled it. Otherwise the caller's
  // context is only passed on: calls made for the request carry its span id.
  bool record = false;
  std::string question;  // with message content only

  // The model call in flight:
  std::uint64_t model_span = 0;
  std::string model;
  std::int64_t first_chunk_us = -1;  // after the call's start; -1: no delta yet
  std::string model_input;           // with message content only
  int failed_calls = 0;              // model calls that failed: their tokens are not known

  struct tool_span {
    std::string tool_call_id;
    std::uint64_t span_id = 0;
    std::int64_t started_us = 0;
  };
  std::vector<tool_span> tools;  // running tool calls

  bool active() const { return request.valid(); }

  // A call's span context: its own span id when spans are recorded, else the
  // one the request passes on.
  span_context call(std::uint64_t span_id) const {
    span_context c = request;
    c.span_id = span_id;
    return c;
  }

  std::optional<tool_span> end_tool(std::string_view tool_call_id) {
    for (auto it = tools.begin(); it != tools.end(); ++it)
      if (it->tool_call_id == tool_call_id) {
        tool_span t = std::move(*it);
        tools.erase(it);
        return t;
      }
    return std::nullopt;
  }
};

// The trace of a request that starts now: in the caller's trace when
// `traceparent` parses, else a new one; inactive when spans are not recorded
// and the caller sent none.
inline request_trace start_request_trace(const std::string& traceparent, bool record_spans, random_ids& ids) {
  request_trace t;
  const std::optional<span_context> caller = traceparent.empty() ? std::nullopt : parse_traceparent(traceparent);
  if (!record_spans && !caller) return t;
  t.record = record_spans && (!caller || caller->sampled());
  t.parent_span = caller ? caller->span_id : 0;
  t.request = t.record ? child_span(caller.value_or(span_context{}), ids, true) : *caller;
  return t;
}

}  // namespace troupe
