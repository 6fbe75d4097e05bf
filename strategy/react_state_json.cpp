#include "json/json_reader.hpp"
#include "strategy/react_state.hpp"

#include <array>

namespace troupe {

namespace json = boost::json;

namespace {
constexpr std::array<std::string_view, 6> status_names{"idle",      "awaiting_llm", "awaiting_tools",
                                                       "completed", "error",        "awaiting_input"};
}

std::string_view to_string(react_status s) { return status_names[static_cast<std::size_t>(s)]; }

std::optional<react_status> parse_react_status(std::string_view s) {
  for (std::size_t i = 0; i < status_names.size(); ++i)
    if (status_names[i] == s) return static_cast<react_status>(i);
  return std::nullopt;
}

json::value to_json(const react_state& s) {
  json::array calls;
  for (const pending_tool_call& p : s.tool_calls) {
    json::object o{{"call", to_json(p.call)}};
    if (p.outcome) put_tool_outcome(o, *p.outcome);
    if (p.awaiting_until) o["awaiting_until"] = p.awaiting_until;
    if (p.asked) o["asked"] = true;
    if (p.result_committed) o["result_committed"] = true;
    calls.push_back(std::move(o));
  }
  json::object o{{"status", to_string(s.status)},
                 {"request_id", s.request_id.view()},
                 {"overrides", to_json(*s.overrides)},
                 {"request_started_at", s.request_started_at},
                 {"iteration", s.iteration},
                 {"call_id", s.call_id.view()},
                 {"streamed_text", s.streamed_text},
                 {"streamed_thinking", s.streamed_thinking},
                 {"tool_calls", std::move(calls)},
                 {"request_usage", to_json(s.request_usage)},
                 {"thread_usage", to_json(s.thread_usage)}};
  if (s.error) o["error"] = to_json(*s.error);
  if (!s.context->empty()) o["context"] = to_json(*s.context);
  if (!s.summary_call_id.empty()) {
    o["summary_call_id"] = s.summary_call_id.view();
    o["summary_to_seq"] = s.summary_to_seq;
  }
  return o;
}

decoded<react_state> decode_react_state(const json::value& v) {
  json_reader r(v, "");
  react_state s;
  const std::string status = r.string("status");
  s.request_id = r.string("request_id");
  s.request_started_at = r.int64("request_started_at");
  s.iteration = static_cast<int>(r.int64("iteration"));
  s.call_id = r.string("call_id");
  s.streamed_text = r.optional_string("streamed_text").value_or("");
  s.streamed_thinking = r.optional_string("streamed_thinking").value_or("");
  const json::array calls = r.optional_array("tool_calls").value_or(json::array{});
  const json::value& overrides = r.value("overrides");
  const json::value& request_usage = r.value("request_usage");
  const json::value& thread_usage = r.value("thread_usage");
  const json::value* error = r.optional_value("error");
  const json::value* context = r.optional_value("context");
  s.summary_call_id = r.optional_string("summary_call_id").value_or("");
  s.summary_to_seq = static_cast<std::uint64_t>(r.optional_int64("summary_to_seq").value_or(0));
  if (!r.ok()) return r.error();

  if (auto st = parse_react_status(status))
    s.status = *st;
  else
    return decode_error{"status", "unknown status \"" + status + "\""};
  auto ov = decode_query_overrides(overrides, "overrides");
  if (!ov) return ov.error();
  s.overrides = std::move(*ov);
  auto ru = decode_usage(request_usage, "request_usage");
  if (!ru) return ru.error();
  s.request_usage = *ru;
  auto tu = decode_usage(thread_usage, "thread_usage");
  if (!tu) return tu.error();
  s.thread_usage = *tu;
  if (context) {
    auto ov = decode_context_overrides(*context, "context");
    if (!ov) return ov.error();
    s.context = *ov;
  }
  if (error) {
    auto e = decode_error_info(*error, "error");
    if (!e) return e.error();
    s.error = std::move(*e);
  }
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::string path = element_path("tool_calls", i);
    json_reader item(calls[i], path);
    const json::value& call = item.value("call");
    const std::int64_t awaiting_until = item.optional_int64("awaiting_until").value_or(0);
    const bool asked = item.optional_boolean("asked").value_or(false);
    const bool result_committed = item.optional_boolean("result_committed").value_or(false);
    if (!item.ok()) return item.error();
    auto c = decode_tool_call(call, path + ".call");
    if (!c) return c.error();
    pending_tool_call p{std::move(*c), std::nullopt, awaiting_until, asked, result_committed};
    if (item.has("result") || item.has("error")) {
      auto outcome = decode_tool_outcome(*item.source(), path);
      if (!outcome) return outcome.error();
      p.outcome = std::move(*outcome);
    }
    s.tool_calls.push_back(std::move(p));
  }
  return s;
}

}  // namespace troupe
