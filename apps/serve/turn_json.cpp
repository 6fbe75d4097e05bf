#include "apps/serve/turn_json.hpp"

#include "apps/serve/client_error.hpp"

namespace troupe::serve {

namespace json = boost::json;

json::object conversation_event(const turn_ids& ids) {
  return {{"conversation_id", ids.conversation_id}, {"thread_id", ids.thread_id}, {"request_id", ids.request_id}};
}

json::object event_data(const delta_event& e) {
  json::object o{{"text", e.text}};
  if (!e.thinking.empty()) o["thinking"] = e.thinking;
  return o;
}

json::object event_data(const tool_started_event& e) {
  return {{"tool_call_id", e.tool_call_id}, {"name", e.tool_name}, {"arguments", e.arguments}};
}

namespace {

// The wire's error object: type and message only (to_json(error_info) also
// carries attempts and the HTTP status, which are not the client's business).
json::object error_object(const error_info& e) {
  return {{"type", e.type}, {"message", client_message(e.type, e.message)}};
}

}  // namespace

json::object event_data(const tool_finished_event& e) {
  json::object o{{"tool_call_id", e.tool_call_id}, {"name", e.tool_name}};
  if (const auto* v = std::get_if<json::value>(&e.outcome)) {
    o["ok"] = true;
    o["content"] = *v;
  } else {
    o["ok"] = false;
    o["error"] = error_object(std::get<error_info>(e.outcome));
  }
  return o;
}

json::object event_data(const std::string& request_id, const open_approval& a) {
  json::object o{{"request_id", request_id}, {"tool_call_id", a.tool_call_id},
                 {"tool", a.tool},           {"arguments", a.arguments},
                 {"reason", a.reason},       {"expires_at", a.expires_at}};
  // A call of an agent used as a tool: where it waits. The decision is still
  // posted here, with tool_call_id as given.
  if (a.inner) o["inner"] = to_json(*a.inner);
  return o;
}

json::array pending_json(const reply& r) {
  json::array out;
  for (const open_approval& a : r.pending) out.push_back(event_data(r.request_id, a));
  return out;
}

json::object usage_json(const turn_result& r) {
  return {{"input_tokens", r.outcome.usage.input_tokens}, {"output_tokens", r.outcome.usage.output_tokens}};
}

namespace {

json::value usage_or_null(const turn_result& r) { return r.usage_known ? json::value(usage_json(r)) : nullptr; }

json::value entries_or_null(const turn_result& r) {
  return r.entries_appended ? json::value(*r.entries_appended) : json::value(nullptr);
}

}  // namespace

std::pair<std::string, json::object> final_event(const turn_result& r) {
  if (const auto* answer = std::get_if<std::string>(&r.outcome.outcome))
    return {"message.completed",
            {{"answer", *answer}, {"usage", usage_or_null(r)}, {"entries_appended", entries_or_null(r)}}};
  json::object data{{"error", error_object(std::get<error_info>(r.outcome.outcome))}};
  if (r.outcome.paused()) data["pending"] = pending_json(r.outcome);
  return {"error", std::move(data)};
}

http_response answer_response(const turn_ids& ids, const turn_result& r) {
  json::object body = conversation_event(ids);
  if (const auto* answer = std::get_if<std::string>(&r.outcome.outcome)) {
    body["answer"] = *answer;
    body["usage"] = usage_or_null(r);
    body["entries_appended"] = entries_or_null(r);
    return json_response(http::status::ok, body);
  }
  const auto& e = std::get<error_info>(r.outcome.outcome);
  body["error"] = error_object(e);
  // Not a failure: the turn waits for decisions (POST …/decisions).
  if (r.outcome.paused()) {
    body["pending"] = pending_json(r.outcome);
    return json_response(http::status::accepted, body);
  }
  http_response res = json_response(status_of_error(e.type), body);
  if (e.type == error_type::queue_full) res.set(http::field::retry_after, "1");
  return res;
}

}  // namespace troupe::serve
