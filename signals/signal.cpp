#include "signals/signal.hpp"

#include "base/overloaded.hpp"
#include "json/json_reader.hpp"
#include "json/utf8.hpp"

#include <array>
#include <initializer_list>

namespace troupe {

namespace json = boost::json;

namespace {

// Indexed like the alternatives of `signal`.
constexpr std::array<std::string_view, std::variant_size_v<signal>> type_names{
    "troupe.agent.query",  "troupe.llm.delta",      "troupe.llm.result",         "troupe.tool.result",
    "troupe.agent.cancel", "troupe.agent.decision", "troupe.agent.approval_tick"};

constexpr std::array<std::string_view, 3> verdict_names{"approve", "reject", "edit"};

json::value data_of(const query& q) {
  json::object o{{"request_id", q.request_id}, {"thread_id", q.thread_id}, {"text", q.text}};
  if (auto ov = to_json(q.overrides); !ov.as_object().empty()) o["overrides"] = std::move(ov);
  if (!q.traceparent.empty()) o["traceparent"] = q.traceparent;
  if (q.observation) o["observation"] = to_json(*q.observation);
  if (q.retry) o["retry"] = true;
  return o;
}

json::value data_of(const llm_delta& d) {
  json::object o{{"call_id", d.call_id}, {"text", d.text}};
  if (!d.thinking.empty()) o["thinking"] = d.thinking;
  return o;
}

json::value data_of(const llm_result& r) {
  json::object o{{"call_id", r.call_id}};
  std::visit(overloaded{[&](const llm_completion& c) {
                          o["text"] = c.text;
                          if (!c.thinking.empty()) o["thinking"] = c.thinking;
                          json::array calls;
                          for (const auto& call : c.tool_calls) calls.push_back(to_json(call));
                          o["tool_calls"] = std::move(calls);
                          o["usage"] = c.usage ? to_json(*c.usage) : json::value(nullptr);
                          o["finish_reason"] = c.finish_reason;
                          if (!c.response_id.empty()) o["response_id"] = c.response_id;
                          if (!c.response_model.empty()) o["response_model"] = c.response_model;
                        },
                        [&](const error_info& e) { o["error"] = to_json(e); }},
             r.outcome);
  return o;
}

json::value data_of(const tool_result& r) {
  json::object o{{"call_id", r.call_id}, {"tool_call_id", r.tool_call_id}, {"tool_name", r.tool_name}};
  put_tool_outcome(o, r.outcome);
  return o;
}

json::value data_of(const cancel& c) {
  json::object o{{"request_id", c.request_id}, {"reason", c.reason}};
  if (!c.error_type.empty()) o["error_type"] = c.error_type;
  if (c.answered) o["answered"] = true;
  return o;
}

json::value data_of(const decision& d) {
  json::object o{{"request_id", d.request_id}, {"tool_call_id", d.tool_call_id}, {"verdict", to_string(d.answer)}};
  if (!d.message.empty()) o["message"] = d.message;
  if (d.answer == verdict::edit) o["arguments"] = d.arguments;
  if (!d.decided_by.empty()) o["decided_by"] = d.decided_by;
  if (!d.idempotency_key.empty()) o["idempotency_key"] = d.idempotency_key;
  if (!d.response.empty()) o["response"] = d.response;
  if (d.sticky) o["sticky"] = true;
  if (d.expire) o["expire"] = true;
  return o;
}

json::value data_of(const approval_tick& t) { return json::object{{"request_id", t.request_id}}; }

// Required identifiers must be non-empty as well as present.
std::string required_id(json_reader& r, std::string_view key) {
  std::string s = r.string(key);
  if (r.ok() && s.empty()) r.fail(key, "must not be empty");
  return s;
}

decoded<signal> decode_query(json_reader& r) {
  query q;
  q.request_id = required_id(r, "request_id");
  q.thread_id = r.optional_string("thread_id").value_or("");
  q.text = r.string("text");
  if (const json::value* ov = r.optional_value("overrides")) {
    auto overrides = decode_query_overrides(*ov, r.field_path("overrides"));
    if (overrides)
      q.overrides = std::move(*overrides);
    else
      r.fail(overrides.error());
  }
  q.traceparent = r.optional_string("traceparent").value_or("");
  if (const json::value* ob = r.optional_value("observation")) {
    auto origin = decode_observation_origin(*ob, r.field_path("observation"));
    if (origin)
      q.observation = std::move(*origin);
    else
      r.fail(origin.error());
  }
  q.retry = r.optional_boolean("retry").value_or(false);
  if (!r.ok()) return r.error();
  return signal{std::move(q)};
}

decoded<signal> decode_delta(json_reader& r) {
  llm_delta d;
  d.call_id = required_id(r, "call_id");
  d.text = r.optional_string("text").value_or("");
  d.thinking = r.optional_string("thinking").value_or("");
  if (!r.ok()) return r.error();
  return signal{std::move(d)};
}

decoded<signal> decode_llm_result(json_reader& r) {
  llm_result res;
  res.call_id = required_id(r, "call_id");
  if (const json::value* e = r.optional_value("error")) {
    auto err = decode_error_info(*e, r.field_path("error"));
    if (!err) return err.error();
    res.outcome = *err;
  } else {
    llm_completion c;
    c.text = r.optional_string("text").value_or("");
    c.thinking = r.optional_string("thinking").value_or("");
    c.finish_reason = r.optional_string("finish_reason").value_or("");
    c.response_id = r.optional_string("response_id").value_or("");
    c.response_model = r.optional_string("response_model").value_or("");
    if (auto calls = r.optional_array("tool_calls")) {
      for (std::size_t i = 0; i < calls->size() && r.ok(); ++i) {
        auto call = decode_tool_call((*calls)[i], element_path(r.field_path("tool_calls"), i));
        if (call)
          c.tool_calls.push_back(std::move(*call));
        else
          r.fail(call.error());
      }
    }
    if (const json::value* u = r.optional_value("usage")) {
      auto parsed = decode_usage(*u, r.field_path("usage"));
      if (parsed)
        c.usage = *parsed;
      else
        r.fail(parsed.error());
    }
    res.outcome = std::move(c);
  }
  if (!r.ok()) return r.error();
  return signal{std::move(res)};
}

decoded<signal> decode_tool_result(json_reader& r) {
  tool_result res;
  res.call_id = required_id(r, "call_id");
  res.tool_call_id = required_id(r, "tool_call_id");
  res.tool_name = r.string("tool_name");
  if (!r.ok()) return r.error();
  auto outcome = decode_tool_outcome(*r.source(), r.path());
  if (!outcome) return outcome.error();
  res.outcome = std::move(*outcome);
  return signal{std::move(res)};
}

decoded<signal> decode_cancel(json_reader& r) {
  cancel c;
  c.request_id = required_id(r, "request_id");
  c.reason = r.optional_string("reason").value_or("");
  c.error_type = r.optional_string("error_type").value_or("");
  c.answered = r.optional_boolean("answered").value_or(false);
  if (!r.ok()) return r.error();
  return signal{std::move(c)};
}

decoded<signal> decode_decision(json_reader& r) {
  decision d;
  d.request_id = required_id(r, "request_id");
  d.tool_call_id = required_id(r, "tool_call_id");
  const std::string v = r.string("verdict");
  d.message = r.optional_string("message").value_or("");
  const std::optional<json::object> arguments = r.optional_object("arguments");
  d.decided_by = r.optional_string("decided_by").value_or("");
  d.idempotency_key = r.optional_string("idempotency_key").value_or("");
  d.response = r.optional_string("response").value_or("");
  d.sticky = r.optional_boolean("sticky").value_or(false);
  d.expire = r.optional_boolean("expire").value_or(false);
  if (!r.ok()) return r.error();
  const auto parsed = parse_verdict(v);
  if (!parsed) return decode_error{r.field_path("verdict"), "must be approve, reject or edit, not \"" + v + "\""};
  d.answer = *parsed;
  if (d.answer == verdict::edit && !arguments)
    return decode_error{r.field_path("arguments"), "an edit needs the arguments to run with"};
  if (arguments) d.arguments = *arguments;
  return signal{std::move(d)};
}

decoded<signal> decode_approval_tick(json_reader& r) {
  approval_tick t;
  t.request_id = required_id(r, "request_id");
  if (!r.ok()) return r.error();
  return signal{std::move(t)};
}

}  // namespace

std::string_view to_string(verdict v) { return verdict_names[static_cast<std::size_t>(v)]; }

std::optional<verdict> parse_verdict(std::string_view s) {
  for (std::size_t i = 0; i < verdict_names.size(); ++i)
    if (verdict_names[i] == s) return static_cast<verdict>(i);
  return std::nullopt;
}

std::string_view signal_type(const signal& s) { return type_names[s.index()]; }

json::value signal_data(const signal& s) {
  return std::visit([](const auto& x) { return data_of(x); }, s);
}

decoded<signal> decode_signal(std::string_view type, const json::value& data, std::string path) {
  using decoder = decoded<signal> (*)(json_reader&);
  constexpr std::array<decoder, std::variant_size_v<signal>> decoders{
      decode_query,  decode_delta,    decode_llm_result,   decode_tool_result,
      decode_cancel, decode_decision, decode_approval_tick};
  for (std::size_t i = 0; i < type_names.size(); ++i) {
    if (type_names[i] != type) continue;
    json_reader r(data, std::move(path));
    if (!r.ok()) return r.error();
    return decoders[i](r);
  }
  return decode_error{"type", "unknown signal type \"" + std::string(type) + "\""};
}

namespace {

bool repair_each(std::initializer_list<std::string*> texts) {
  bool repaired = false;
  for (std::string* t : texts) repaired |= repair_utf8(*t);
  return repaired;
}

bool repair_error(error_info& e) { return repair_each({&e.type, &e.message}); }

bool repair_call(tool_call& c) {
  bool repaired = repair_each({&c.id, &c.name});
  repaired |= repair_utf8(c.arguments);
  if (c.invalid_arguments) repaired |= repair_utf8(*c.invalid_arguments);
  return repaired;
}

}  // namespace

bool repair_utf8(query& q) {
  bool repaired = repair_utf8(q.text);
  if (q.overrides.model) repaired |= repair_utf8(*q.overrides.model);
  if (q.overrides.system_prompt) repaired |= repair_utf8(*q.overrides.system_prompt);
  for (std::string& stop : q.overrides.params.stop) repaired |= repair_utf8(stop);
  if (q.observation) repaired |= repair_utf8(q.observation->source);
  return repaired;
}

bool repair_utf8(signal& s) {
  return std::visit(overloaded{
                        [](query& q) { return repair_utf8(q); },
                        [](llm_delta& d) {
                          return repair_each({&d.call_id, &d.text, &d.thinking});
                        },
                        [](llm_result& r) {
                          bool repaired = repair_utf8(r.call_id);
                          std::visit(overloaded{[&](llm_completion& c) {
                                                  repaired |= repair_each({&c.text, &c.thinking, &c.finish_reason,
                                                                           &c.response_id, &c.response_model});
                                                  for (tool_call& call : c.tool_calls) repaired |= repair_call(call);
                                                },
                                                [&](error_info& e) { repaired |= repair_error(e); }},
                                     r.outcome);
                          return repaired;
                        },
                        [](tool_result& r) {
                          bool repaired = repair_each({&r.call_id, &r.tool_call_id, &r.tool_name});
                          std::visit(overloaded{[&](json::value& v) { repaired |= repair_utf8(v); },
                                                [&](error_info& e) { repaired |= repair_error(e); }},
                                     r.outcome);
                          return repaired;
                        },
                        [](cancel& c) {
                          return repair_each({&c.reason, &c.error_type});
                        },
                        [](decision& d) {
                          bool repaired = repair_each({&d.message, &d.decided_by, &d.response});
                          return repair_utf8(d.arguments) || repaired;
                        },
                        [](approval_tick&) { return false; },
                    },
                    s);
}

}  // namespace troupe
