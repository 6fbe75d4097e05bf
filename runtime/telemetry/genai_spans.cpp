#include "runtime/telemetry/detail/genai_spans.hpp"

namespace troupe {

namespace {

enum class span_of { none, request, model_call, tool_call, approval_wait };

span_of classify(telemetry_kind k) {
  switch (k) {
    case telemetry_kind::request_completed:
    case telemetry_kind::request_failed:
    case telemetry_kind::request_cancelled:
    case telemetry_kind::request_paused:
      return span_of::request;
    case telemetry_kind::llm_completed:
    case telemetry_kind::llm_error:
      return span_of::model_call;
    case telemetry_kind::tool_completed:
    case telemetry_kind::tool_error:
      return span_of::tool_call;
    case telemetry_kind::approval_decided:
      return span_of::approval_wait;
    default:
      return span_of::none;
  }
}

void put(span& s, std::string key, attribute_value v) { s.attributes.push_back({std::move(key), std::move(v)}); }

void put_if(span& s, std::string key, const std::string& v) {
  if (!v.empty()) put(s, std::move(key), v);
}

void put_usage(span& s, const std::optional<token_usage>& usage) {
  // A sum that misses some call's tokens is not the usage: better none than
  // a count that looks exact and is short (0 for a call that failed).
  if (!usage || usage->calls_without_usage > 0) return;
  put(s, "gen_ai.usage.input_tokens", usage->input_tokens);
  put(s, "gen_ai.usage.output_tokens", usage->output_tokens);
}

void put_failure(span& s, const telemetry_event& e) {
  // A span's error.type is required once it failed; "_OTHER" is the
  // conventions' value when nothing more specific is known.
  put(s, "error.type", e.error_type.empty() ? std::string("_OTHER") : e.error_type);
  s.status = span_status::error;
  s.status_message = e.detail;
}

}  // namespace

bool ends_span(telemetry_kind k) { return classify(k) != span_of::none; }

std::optional<span> genai_span(const telemetry_event& e) {
  const span_of what = classify(e.kind);
  if (what == span_of::none || !e.span.valid()) return std::nullopt;
  span s;
  s.attributes.reserve(16);
  s.context = e.span;
  s.parent_span_id = e.parent_span_id;
  s.end_unix_ns = e.end_unix_ns;
  s.start_unix_ns = e.end_unix_ns - e.duration_us * 1000;
  switch (what) {
    case span_of::request:
      s.name = "invoke_agent " + e.agent_id;
      s.kind = span_kind::internal;  // the agent runs in this process
      put(s, "gen_ai.operation.name", std::string("invoke_agent"));
      put_if(s, "gen_ai.provider.name", e.provider);
      put(s, "gen_ai.agent.name", e.agent_id);
      put(s, "gen_ai.agent.id", e.agent_id);
      put_if(s, "gen_ai.request.model", e.model);
      put(s, "gen_ai.conversation.id", e.thread_id);
      put_usage(s, e.usage);
      put(s, "troupe.request.id", e.request_id);
      put(s, "troupe.iterations", std::int64_t{e.iteration});
      if (e.kind == telemetry_kind::request_failed) put_failure(s, e);
      // A cancelled request did not fail: it was stopped, which the status leaves unset.
      if (e.kind == telemetry_kind::request_cancelled) put(s, "troupe.request.cancelled", true);
      // Nor did a paused one: it waits for a decision, and the one that
      // continues it is a request of its own.
      if (e.kind == telemetry_kind::request_paused) put(s, "troupe.request.paused", true);
      break;
    case span_of::model_call:
      s.name = "chat " + e.model;
      s.kind = span_kind::client;
      put(s, "gen_ai.operation.name", std::string("chat"));
      put_if(s, "gen_ai.provider.name", e.provider);
      put(s, "gen_ai.request.model", e.model);
      put(s, "gen_ai.conversation.id", e.thread_id);
      put_usage(s, e.usage);
      if (!e.finish_reason.empty()) put(s, "gen_ai.response.finish_reasons", std::vector<std::string>{e.finish_reason});
      put_if(s, "gen_ai.response.model", e.response_model);
      put_if(s, "gen_ai.response.id", e.response_id);
      if (e.first_chunk_us >= 0)
        put(s, "gen_ai.response.time_to_first_chunk", static_cast<double>(e.first_chunk_us) / 1e6);
      put(s, "troupe.call.id", e.call_id);
      put(s, "troupe.iteration", std::int64_t{e.iteration});
      if (e.kind == telemetry_kind::llm_error) put_failure(s, e);
      break;
    case span_of::tool_call:
      s.name = "execute_tool " + e.detail;
      s.kind = span_kind::internal;
      put(s, "gen_ai.operation.name", std::string("execute_tool"));
      put(s, "gen_ai.tool.name", e.detail);
      put(s, "gen_ai.tool.call.id", e.tool_call_id);
      put(s, "gen_ai.tool.type", std::string("function"));
      put(s, "gen_ai.conversation.id", e.thread_id);
      if (e.kind == telemetry_kind::tool_error) {
        put_failure(s, e);
        s.status_message = e.error_type;  // detail is the tool's name here
      }
      break;
    case span_of::approval_wait:
      // The conventions name no operation for a person's decision: troupe's
      // own attributes say what was decided, by whom, after how long.
      s.name = "await_approval " + e.detail;
      s.kind = span_kind::internal;
      put(s, "gen_ai.tool.name", e.detail);
      put(s, "gen_ai.tool.call.id", e.tool_call_id);
      put(s, "gen_ai.conversation.id", e.thread_id);
      put(s, "troupe.request.id", e.request_id);
      put(s, "troupe.approval.verdict", e.verdict);
      put_if(s, "troupe.approval.decided_by", e.decided_by);
      put(s, "troupe.approval.expired", e.expired);
      break;
    case span_of::none:
      break;
  }
  put_if(s, "gen_ai.input.messages", e.input_messages);
  put_if(s, "gen_ai.output.messages", e.output_messages);
  return s;
}

}  // namespace troupe
