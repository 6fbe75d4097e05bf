#include "runtime/llm/wire/openai_format.hpp"

#include "runtime/llm/llm_errors.hpp"
#include "signals/json_text.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace troupe {

namespace json = boost::json;

namespace {

json::value text_or_null(const std::string& s) { return s.empty() ? json::value(nullptr) : json::value(s); }

std::optional<token_usage> usage_of(const json::value* u) {
  if (!u || !u->is_object()) return std::nullopt;
  const json::object& o = u->as_object();
  token_usage t;
  if (const auto* p = o.if_contains("prompt_tokens"); p && p->is_number()) t.input_tokens = p->to_number<std::int64_t>();
  if (const auto* c = o.if_contains("completion_tokens"); c && c->is_number())
    t.output_tokens = c->to_number<std::int64_t>();
  return t;
}

std::string_view str(const json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key))
    if (const auto* s = v->if_string()) return *s;
  return {};
}

}  // namespace

json::object openai_request_body(const llm_stream& request, bool stream) {
  json::array messages;
  for (const llm_message& m : request.messages) {
    json::object o{{"role", m.role}};
    if (m.role == "assistant") {
      o["content"] = text_or_null(m.content);
      if (!m.tool_calls.empty()) {
        json::array calls;
        for (const tool_call& c : m.tool_calls)
          calls.push_back(json::object{{"id", c.id},
                                       {"type", "function"},
                                       {"function", {{"name", c.name}, {"arguments", json_text(c.arguments)}}}});
        o["tool_calls"] = std::move(calls);
      }
    } else if (m.role == "tool") {
      o["tool_call_id"] = m.tool_call_id;
      o["content"] = m.content;
    } else {
      o["content"] = m.content;
    }
    messages.push_back(std::move(o));
  }
  json::object body{{"model", request.model}, {"messages", std::move(messages)}};
  if (request.tools && !request.tools->empty()) {
    json::array tools;
    for (const tool_spec& t : *request.tools)
      tools.push_back(json::object{
          {"type", "function"},
          {"function", {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
    body["tools"] = std::move(tools);
  }
  // Troupe's parameter names are OpenAI's: max_tokens, temperature, top_p, stop.
  const json::value params = to_json(request.params);
  for (const auto& [key, value] : params.as_object()) body[key] = value;
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body;
}

void openai_stream_decoder::on_event(const sse_event& e) {
  if (done()) return;
  if (e.data == "[DONE]") {
    complete({});
    return;
  }
  boost::system::error_code ec;
  const json::value chunk = json::parse(e.data, ec);
  if (ec || !chunk.is_object()) {
    malformed("a stream chunk is not a JSON object: " + e.data.substr(0, 200));
    return;
  }
  const json::object& o = chunk.as_object();
  if (const auto* err = o.if_contains("error")) {
    fail(classify_stream_error(*err));
    return;
  }
  if (auto u = usage_of(o.if_contains("usage"))) usage_ = u;
  const json::value* choices = o.if_contains("choices");
  if (!choices || !choices->is_array() || choices->as_array().empty()) return;
  const json::value& first = choices->as_array().front();
  if (!first.is_object()) return;
  const json::object& choice = first.as_object();
  if (const auto* d = choice.if_contains("delta"); d && d->is_object()) {
    const json::object& delta = d->as_object();
    text(str(delta, "content"));
    thinking(str(delta, "reasoning_content"));
    if (const auto* calls = delta.if_contains("tool_calls"); calls && calls->is_array()) {
      const json::array& list = calls->as_array();
      for (std::size_t position = 0; position < list.size(); ++position) {
        if (!list[position].is_object()) continue;
        const json::object& call = list[position].as_object();
        // By index; by position in this delta when a server leaves it out.
        std::size_t index = position;
        if (const auto* i = call.if_contains("index"); i && i->is_number()) index = i->to_number<std::size_t>();
        if (index > 1024) {
          malformed("a tool call index out of range");
          return;
        }
        if (tool_calls_.size() <= index) tool_calls_.resize(index + 1);
        partial_tool_call& p = tool_calls_[index];
        // The id and the name come with the first fragment.
        if (p.id.empty()) p.id = str(call, "id");
        if (const auto* f = call.if_contains("function"); f && f->is_object()) {
          if (p.name.empty()) p.name = str(f->as_object(), "name");
          p.arguments += str(f->as_object(), "arguments");
        }
      }
    }
  }
  // The finish reason comes before the usage chunk and [DONE]: remember it.
  if (auto reason = str(choice, "finish_reason"); !reason.empty()) finish_reason_ = reason;
}

llm_result decode_openai_response(const std::string& call_id, std::string_view body) {
  openai_stream_decoder d(call_id, nullptr);
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return {call_id, error_info::of(error_type::malformed_response, "the response is not a JSON object", 1)};
  json::object& o = v.as_object();
  if (const auto* err = o.if_contains("error")) return {call_id, classify_stream_error(*err)};
  // A whole message reads like one chunk whose delta is the message.
  if (auto* choices = o.if_contains("choices"); choices && choices->is_array() && !choices->as_array().empty())
    if (auto* c = choices->as_array().front().if_object())
      if (auto* m = c->if_contains("message")) (*c)["delta"] = *m;
  d.on_event(sse_event{"message", json::serialize(o), ""});
  d.on_event(sse_event{"message", "[DONE]", ""});
  return d.finish();
}

}  // namespace troupe
