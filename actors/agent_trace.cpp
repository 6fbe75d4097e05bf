// The agent's tracing: a request's spans (its own, its model and tool
// calls'), the telemetry of what it does, and the stream events a
// subscribed caller sees.

#include "actors/detail/agent_state.hpp"
#include "base/overloaded.hpp"
#include "runtime/telemetry/detail/approval_waits.hpp"
#include "runtime/telemetry/detail/genai_messages.hpp"

namespace troupe::detail {

// A request's trace, when the runtime records spans or the caller sent a
// trace context.
void agent_logic::trace_request(thread_slot& slot, const query& q) {
  if (request_trace t = start_request_trace(q.traceparent, st_.ctx->record_spans, ids()); t.active()) {
    if (t.record && st_.ctx->record_content) t.question = q.text;
    slot.trace = std::make_unique<request_trace>(std::move(t));
  }
}

// A model call about to leave: its span, and the telemetry of its start.
void agent_logic::report_model_call(thread_slot& slot, llm_stream& x) {
  const std::string& thread_id = slot.conversation.history().id();
  slot.llm_started_us = steady_us();
  if (slot.trace) trace_model_call(*slot.trace, x);
  // Near the budget: a sign the policy or the conversation needs attention.
  if (x.context.budget > 0 && x.context.estimated_tokens * 10 >= x.context.budget * 9)
    st_.ctx->emit(telemetry_kind::context_warning, [&] {
      return telemetry_event{
          telemetry_kind::context_warning,
          st_.id,
          thread_id,
          x.request_id,
          x.call_id,
          {},
          x.iteration,
          0,
          std::to_string(x.context.estimated_tokens) + " of " + std::to_string(x.context.budget) + " tokens"};
    });
  st_.ctx->emit(telemetry_kind::llm_started, [&] {
    return telemetry_event{
        telemetry_kind::llm_started, st_.id, thread_id, x.request_id, x.call_id, {}, x.iteration, 0, x.model};
  });
}

// A tool call about to leave: its span, the telemetry of its start, and
// the event a subscribed caller sees.
void agent_logic::report_tool_call(thread_slot& slot, tool_exec& x) {
  const std::string& thread_id = slot.conversation.history().id();
  if (slot.trace) trace_tool_call(*slot.trace, x);
  st_.ctx->emit(telemetry_kind::tool_started, [&] {
    return telemetry_event{telemetry_kind::tool_started,
                           st_.id,
                           thread_id,
                           x.request_id,
                           x.call_id,
                           x.tool_call_id,
                           x.iteration,
                           0,
                           x.tool_name};
  });
  if (slot.running && slot.running->events)
    self_->send(slot.running->events, event_atom::value,
                stream_event{tool_started_event{x.request_id, x.tool_call_id, x.tool_name, x.arguments,
                                                newest_entry_of(slot.conversation.history(), x.request_id)}});
}

// The end of the running request: its telemetry, and its span when recorded.
void agent_logic::report_request_end(thread_slot& slot, const reply& r) {
  const std::string& thread_id = slot.conversation.history().id();
  const telemetry_kind kind = r.ok()       ? telemetry_kind::request_completed
                              : r.paused() ? telemetry_kind::request_paused
                              : std::get<error_info>(r.outcome).type == error_type::cancelled
                                  ? telemetry_kind::request_cancelled
                                  : telemetry_kind::request_failed;
  st_.ctx->emit(kind, [&] {
    telemetry_event e{
        kind,
        st_.id,
        thread_id,
        r.request_id,
        {},
        {},
        r.iterations,
        steady_us() - slot.running->started_us,
        r.ok() ? std::string{} : std::get<error_info>(r.outcome).type + ": " + std::get<error_info>(r.outcome).message};
    if (slot.trace && slot.trace->record) describe_request_span(e, *slot.trace, r);
    return e;
  });
}

// A model call's span is a child of its request's; with spans recorded it
// has an id of its own, else the call carries the caller's context on.
void agent_logic::trace_model_call(request_trace& t, llm_stream& x) {
  t.model_span = t.record ? new_span_id(ids()) : t.request.span_id;
  t.first_chunk_us = -1;
  if (t.record) {
    t.model = x.model;
    if (st_.ctx->record_content) t.model_input = genai_input_messages(x.messages);
  }
  x.traceparent = format_traceparent(t.call(t.model_span));
}

void agent_logic::trace_tool_call(request_trace& t, tool_exec& x) {
  const std::uint64_t id = t.record ? new_span_id(ids()) : t.request.span_id;
  if (t.record) t.tools.push_back({x.tool_call_id, id, steady_us()});
  x.traceparent = format_traceparent(t.call(id));
}

// The span a model or tool result ends, described on its event.
void agent_logic::describe_span(telemetry_event& e, const request_trace& t, const signal& s,
                                const std::optional<request_trace::tool_span>& tool) const {
  if (const auto* r = std::get_if<llm_result>(&s);
      r && (e.kind == telemetry_kind::llm_completed || e.kind == telemetry_kind::llm_error)) {
    e.span = t.call(t.model_span);
    e.model = t.model;
    e.provider = std::string(provider()->name());
    e.first_chunk_us = t.first_chunk_us;
    if (const auto* c = std::get_if<llm_completion>(&r->outcome)) {
      e.usage = c->usage;
      e.finish_reason = c->finish_reason;
      e.response_id = c->response_id;
      e.response_model = c->response_model;
      if (st_.ctx->record_content) {
        e.input_messages = t.model_input;
        e.output_messages = genai_output_messages(*c);
      }
    } else {
      e.error_type = std::get<error_info>(r->outcome).type;
    }
  } else if (const auto* r = std::get_if<tool_result>(&s); r && tool) {
    e.span = t.call(tool->span_id);
    e.duration_us = steady_us() - tool->started_us;
    if (!r->ok()) e.error_type = std::get<error_info>(r->outcome).type;
  } else {
    return;
  }
  e.parent_span_id = t.request.span_id;
  e.end_unix_ns = wall_clock_ns();
}

void agent_logic::report(thread_slot& slot, observation seen, const signal& s) {
  const react_state& state = slot.conversation.state();
  request_trace* trace = slot.trace && slot.trace->record ? slot.trace.get() : nullptr;
  if (trace && seen.kind == telemetry_kind::llm_delta && trace->first_chunk_us < 0)
    trace->first_chunk_us = steady_us() - slot.llm_started_us;
  if (trace && seen.kind == telemetry_kind::llm_error) ++trace->failed_calls;
  std::optional<request_trace::tool_span> tool;
  if (trace && (seen.kind == telemetry_kind::tool_completed || seen.kind == telemetry_kind::tool_error))
    tool = trace->end_tool(seen.tool_call_id);
  const std::int64_t took_us = seen.ends_model_call ? steady_us() - slot.llm_started_us : 0;
  st_.ctx->emit(seen.kind, [&] {
    telemetry_event e{seen.kind,
                      st_.id,
                      slot.conversation.history().id(),
                      state.request_id,
                      std::string(seen.call_id),
                      std::string(seen.tool_call_id),
                      seen.iteration,
                      took_us,
                      std::string(seen.detail)};
    if (trace)
      describe_span(e, *trace, s, tool);
    else if (seen.kind == telemetry_kind::llm_completed)
      e.usage = usage_of(s);  // cheap, and what metrics count tokens from
    return e;
  });
  if (seen.event && slot.running && slot.running->events) {
    const std::uint64_t seq = newest_entry_of(slot.conversation.history(), state.request_id);
    std::visit(
        overloaded{[&](delta_event& d) { d.thread_seq = seq; }, [&](tool_started_event& t) { t.thread_seq = seq; },
                   [&](tool_finished_event& t) { t.thread_seq = seq; }, [](auto&) {}},
        *seen.event);
    self_->send(slot.running->events, event_atom::value, std::move(*seen.event));
  }
}

std::optional<token_usage> agent_logic::usage_of(const signal& s) {
  if (const auto* r = std::get_if<llm_result>(&s))
    if (const auto* c = std::get_if<llm_completion>(&r->outcome)) return c->usage;
  return std::nullopt;
}

void agent_logic::report(telemetry_kind kind, const std::string& thread_id, const std::string& request_id) {
  st_.ctx->emit(kind, [&] { return telemetry_event{kind, st_.id, thread_id, request_id, {}, {}, 0, 0, {}}; });
}

void agent_logic::describe_request_span(telemetry_event& e, const request_trace& t, const reply& r) const {
  e.span = t.request;
  e.parent_span_id = t.parent_span;
  e.end_unix_ns = wall_clock_ns();
  e.provider = std::string(provider()->name());
  e.model = t.model;
  e.usage = r.usage;
  e.usage->calls_without_usage += t.failed_calls;
  if (!r.ok()) e.error_type = std::get<error_info>(r.outcome).type;
  if (st_.ctx->record_content) {
    e.input_messages = genai_text_message("user", t.question);
    if (r.ok()) e.output_messages = genai_text_message("assistant", std::get<std::string>(r.outcome));
  }
}

// A decision committed ends its call's wait for a person: a span of its own
// (the request's ended when it paused). `from` is the thread's size before
// the step's entries were adopted.
void agent_logic::report_approval_waits(thread_slot& slot, std::uint64_t from) {
  for (telemetry_event& e : approval_waits(slot.conversation.history(), from, st_.id)) {
    if (st_.ctx->record_spans) e.span = child_span(span_context{}, ids(), true);
    st_.ctx->emit(e.kind, [&] { return std::move(e); });
  }
}

}  // namespace troupe::detail
