#include "directives/directive.hpp"

#include "base/overloaded.hpp"
#include "json/json_reader.hpp"

#include <array>

namespace troupe {

namespace json = boost::json;

json::object to_json(const inner_approval& i) {
  return {{"agent_id", i.agent_id},
          {"thread_id", i.thread_id},
          {"request_id", i.request_id},
          {"tool_call_id", i.tool_call_id}};
}

json::object to_json(const open_approval& a) {
  json::object o{{"tool_call_id", a.tool_call_id},
                 {"tool", a.tool},
                 {"arguments", a.arguments},
                 {"reason", a.reason},
                 {"expires_at", a.expires_at}};
  if (a.on_expiry != verdict::reject) o["on_expiry"] = to_string(a.on_expiry);
  if (a.question) o["question"] = true;
  if (a.inner) o["inner"] = to_json(*a.inner);
  return o;
}

decoded<open_approval> decode_open_approval(const json::value& v, std::string path) {
  json_reader r(v, std::move(path));
  open_approval a;
  a.tool_call_id = r.string("tool_call_id");
  a.tool = r.string("tool");
  a.arguments = r.optional_object("arguments").value_or(json::object{});
  a.reason = r.optional_string("reason").value_or("");
  a.expires_at = r.optional_int64("expires_at").value_or(0);
  a.question = r.optional_boolean("question").value_or(false);
  if (auto v = r.optional_string("on_expiry")) {
    const auto parsed = parse_verdict(*v);
    if (!parsed) return decode_error{r.field_path("on_expiry"), "is not a verdict"};
    a.on_expiry = *parsed;
  }
  if (auto inner = r.nested("inner"))
    a.inner = inner_approval{inner->string("agent_id"), inner->string("thread_id"), inner->string("request_id"),
                             inner->string("tool_call_id")};
  if (!r.ok()) return r.error();
  return a;
}

json::value to_json(const llm_message& m) {
  json::object o{{"role", m.role}, {"content", m.content}};
  if (!m.tool_calls.empty()) {
    json::array calls;
    for (const auto& c : m.tool_calls) calls.push_back(to_json(c));
    o["tool_calls"] = std::move(calls);
  }
  if (!m.tool_call_id.empty()) o["tool_call_id"] = m.tool_call_id;
  if (!m.name.empty()) o["name"] = m.name;
  return o;
}

json::value to_json(const tool_spec& t) {
  return json::object{{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}};
}

json::value to_json(const context_meta& m) {
  json::object o{{"estimated_tokens", m.estimated_tokens},
                 {"budget", m.budget},
                 {"truncated", m.truncated},
                 {"oversized", m.oversized},
                 {"entries_included", m.entries_included},
                 {"entries_total", m.entries_total},
                 {"summary_used", m.summary_used},
                 {"basis_rev", m.basis_rev},
                 {"pending_count", m.pending_count},
                 {"needs_summary", m.needs_summary}};
  o["basis_last_seq"] = m.basis_last_seq ? json::value(*m.basis_last_seq) : json::value(nullptr);
  if (m.dropped_to_seq) o["dropped_to_seq"] = *m.dropped_to_seq;
  if (m.summarize_to_seq) o["summarize_to_seq"] = *m.summarize_to_seq;
  return o;
}

namespace {

json::array messages_json(const message_list& messages) {
  json::array out;
  for (const auto& m : messages) out.push_back(to_json(m));
  return out;
}

json::array pending_json(const std::vector<open_approval>& pending) {
  json::array out;
  for (const open_approval& a : pending) out.push_back(to_json(a));
  return out;
}

constexpr std::array<std::string_view, std::variant_size_v<directive>> type_names{
    "llm_stream", "tool_exec",      "reply",           "request_error", "cancel_call",
    "summarize",  "awaiting_input", "decision_answer", "pass_down"};

void put_fields(json::object& o, const llm_stream& d) {
  o["call_id"] = d.call_id;
  o["model"] = d.model;
  o["messages"] = messages_json(d.messages);
  json::array tools;
  if (d.tools)
    for (const auto& t : *d.tools) tools.push_back(to_json(t));
  o["tools"] = std::move(tools);
  o["params"] = to_json(d.params);
  o["request_id"] = d.request_id;
  o["iteration"] = d.iteration;
  o["context"] = to_json(d.context);
}

void put_fields(json::object& o, const tool_exec& d) {
  o["call_id"] = d.call_id;
  o["tool_call_id"] = d.tool_call_id;
  o["tool_name"] = d.tool_name;
  o["arguments"] = d.arguments;
  o["timeout_ms"] = d.timeout_ms;
  o["request_id"] = d.request_id;
  o["iteration"] = d.iteration;
}

void put_fields(json::object& o, const reply& d) {
  o["request_id"] = d.request_id;
  std::visit(overloaded{[&](const std::string& answer) { o["answer"] = answer; },
                        [&](const error_info& e) { o["error"] = to_json(e); }},
             d.outcome);
  o["usage"] = to_json(d.usage);
  o["iterations"] = d.iterations;
  if (d.paused()) o["pending"] = pending_json(d.pending);
}

void put_fields(json::object& o, const request_error& d) {
  o["request_id"] = d.request_id;
  o["reason"] = d.reason;
  o["message"] = d.message;
}

void put_fields(json::object& o, const summarize& d) {
  o["call_id"] = d.call_id;
  o["model"] = d.model;
  o["messages"] = messages_json(d.messages);
  o["from_seq"] = d.from_seq;
  o["to_seq"] = d.to_seq;
  o["params"] = to_json(d.params);
  o["request_id"] = d.request_id;
}

void put_fields(json::object& o, const cancel_call& d) {
  o["call_id"] = d.call_id;
  if (!d.tool_call_id.empty()) o["tool_call_id"] = d.tool_call_id;
}

void put_fields(json::object& o, const awaiting_input& d) {
  o["request_id"] = d.request_id;
  o["pending"] = pending_json(d.pending);
  o["usage"] = to_json(d.usage);
  o["iterations"] = d.iterations;
}

void put_fields(json::object& o, const decision_answer& d) {
  o["request_id"] = d.request_id;
  o["tool_call_id"] = d.tool_call_id;
  if (!d.idempotency_key.empty()) o["idempotency_key"] = d.idempotency_key;
  if (d.error) o["error"] = to_json(*d.error);
  if (d.taken) o["taken"] = true;
}

void put_fields(json::object& o, const pass_down& d) {
  o["agent_id"] = d.agent_id;
  o["thread_id"] = d.thread_id;
  o["call_id"] = d.call_id;
  o["tool_call_id"] = d.tool_call_id;
  o["tool_name"] = d.tool_name;
  std::visit(overloaded{[&](const decision& x) {
                          json::object down{{"request_id", x.request_id},
                                            {"tool_call_id", x.tool_call_id},
                                            {"verdict", to_string(x.answer)},
                                            {"decided_by", x.decided_by}};
                          if (x.expire) down["expire"] = true;
                          o["decision"] = std::move(down);
                        },
                        [&](const cancel& x) {
                          o["cancel"] = json::object{{"request_id", x.request_id}, {"reason", x.reason}};
                        }},
             d.what);
}

}  // namespace

std::string_view directive_type(const directive& d) { return type_names[d.index()]; }

json::value to_json(const directive& d) {
  json::object o{{"type", directive_type(d)}};
  std::visit([&](const auto& x) { put_fields(o, x); }, d);
  return o;
}

}  // namespace troupe
