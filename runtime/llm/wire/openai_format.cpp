#include "runtime/llm/wire/detail/openai_format.hpp"

#include "json/json_parse.hpp"
#include "json/json_reader.hpp"
#include "json/json_text.hpp"
#include "runtime/detail/text.hpp"
#include "runtime/llm/llm_errors.hpp"

namespace troupe {

namespace json = boost::json;

namespace {

json::value text_or_null(const std::string& s) { return s.empty() ? json::value(nullptr) : json::value(s); }

// Null when the chunk carries no usage (or a problem was noted).
std::optional<token_usage> usage_of(const json_reader& chunk) {
  const auto u = chunk.nested("usage");
  if (!u) return std::nullopt;
  const auto in = u->integer<std::int64_t>("prompt_tokens", 0, max_token_count);
  const auto out = u->integer<std::int64_t>("completion_tokens", 0, max_token_count);
  // A usage object without either count says nothing: unknown, not zero.
  if (!in && !out) return std::nullopt;
  return token_usage{in.value_or(0), out.value_or(0)};
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
      tools.push_back(
          json::object{{"type", "function"},
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
  const json::value chunk = parse_json(e.data, ec);
  if (ec || !chunk.is_object()) {
    malformed("a stream chunk is not a JSON object: " + shortened(e.data, 200));
    return;
  }
  std::optional<decode_error> problem;
  read_chunk(json_reader(chunk.as_object(), "", problem));
  if (problem) malformed("a stream chunk is malformed: " + problem->describe());
}

void openai_stream_decoder::read_chunk(const json_reader& chunk) {
  if (const json::value* err = chunk.optional_value("error")) {
    fail(classify_stream_error(*err));
    return;
  }
  if (auto u = usage_of(chunk)) usage_ = u;
  name_response(chunk, "id", "model");
  const json::array* choices = chunk.find_array("choices");
  if (!choices || choices->empty()) return;
  const auto choice = chunk.element(*choices, "choices", 0);
  if (!choice) return;
  if (const auto delta = choice->nested("delta")) {
    text(delta->text("content"));
    thinking(delta->text("reasoning_content"));
    if (const json::array* calls = delta->find_array("tool_calls")) {
      for (std::size_t position = 0; position < calls->size(); ++position) {
        const auto call = delta->element(*calls, "tool_calls", position);
        if (!call) return;
        // By index; by position in this delta when a server leaves it out.
        const auto given = call->integer<std::size_t>("index", 0, max_tool_calls - 1);
        if (!given && call->optional_value("index")) return;  // noted as a problem
        const std::size_t index = given.value_or(position);
        if (index >= max_tool_calls) {
          call->fail("index", "more tool calls than " + std::to_string(max_tool_calls));
          return;
        }
        if (tool_calls_.size() <= index) tool_calls_.resize(index + 1);
        partial_tool_call& p = tool_calls_[index];
        // The id and the name come with the first fragment.
        if (p.id.empty()) p.id = call->text("id");
        if (const auto f = call->nested("function")) {
          if (p.name.empty()) p.name = f->text("name");
          p.arguments += f->text("arguments");
        }
      }
    }
  }
  // The finish reason comes before the usage chunk and [DONE]: remember it.
  if (auto reason = choice->text("finish_reason"); !reason.empty()) finish_reason_ = reason;
}

llm_result decode_openai_response(const std::string& call_id, std::string_view body) {
  openai_stream_decoder d(call_id, nullptr);
  boost::system::error_code ec;
  json::value v = parse_json(body, ec);
  if (ec || !v.is_object())
    return {call_id, error_info::of(error_type::malformed_response, "the response is not a JSON object", 1)};
  json::object& o = v.as_object();
  if (const auto* err = o.if_contains("error")) return {call_id, classify_stream_error(*err)};
  // A whole message reads like one chunk whose delta is the message.
  if (auto* choices = o.if_contains("choices"); choices && choices->is_array() && !choices->as_array().empty())
    if (auto* c = choices->as_array().front().if_object())
      if (const auto* m = c->if_contains("message")) {
        // Copied first: inserting "delta" may rehash the object and move the
        // message `m` points to (a fuzzer found the use after free).
        json::value message = *m;
        (*c)["delta"] = std::move(message);
      }
  d.on_event(sse_event{"message", json_text(o), ""});
  d.on_event(sse_event{"message", "[DONE]", ""});
  return d.finish();
}

}  // namespace troupe
