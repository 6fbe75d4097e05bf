#include "runtime/llm/wire/anthropic_format.hpp"

#include "runtime/llm/llm_errors.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace troupe {

namespace json = boost::json;

namespace {

std::string_view str(const json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key))
    if (const auto* s = v->if_string()) return *s;
  return {};
}

const json::object* obj(const json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key)) return v->if_object();
  return nullptr;
}

std::optional<std::int64_t> integer(const json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key); v && v->is_number()) return v->to_number<std::int64_t>();
  return std::nullopt;
}

}  // namespace

json::object anthropic_request_body(const llm_stream& request, bool stream) {
  std::string system;
  json::array messages;
  for (const llm_message& m : request.messages) {
    if (m.role == "system") {
      system += (system.empty() ? "" : "\n\n") + m.content;
    } else if (m.role == "tool") {
      json::object result{{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", m.content}};
      if (m.content.rfind("{\"error\":", 0) == 0) result["is_error"] = true;
      // Results follow their assistant turn as one user message.
      if (!messages.empty() && messages.back().as_object().at("role") == "user" &&
          messages.back().as_object().at("content").is_array())
        messages.back().as_object()["content"].as_array().push_back(std::move(result));
      else
        messages.push_back(json::object{{"role", "user"}, {"content", json::array{std::move(result)}}});
    } else if (m.role == "assistant" && !m.tool_calls.empty()) {
      json::array blocks;
      if (!m.content.empty()) blocks.push_back(json::object{{"type", "text"}, {"text", m.content}});
      for (const tool_call& c : m.tool_calls)
        blocks.push_back(json::object{{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", c.arguments}});
      messages.push_back(json::object{{"role", "assistant"}, {"content", std::move(blocks)}});
    } else {
      messages.push_back(json::object{{"role", m.role}, {"content", m.content}});
    }
  }
  json::object body{{"model", request.model},
                    {"max_tokens", request.params.max_tokens.value_or(4096)},
                    {"messages", std::move(messages)}};
  if (!system.empty()) body["system"] = system;
  if (request.tools && !request.tools->empty()) {
    json::array tools;
    for (const tool_spec& t : *request.tools)
      tools.push_back(json::object{{"name", t.name}, {"description", t.description}, {"input_schema", t.parameters}});
    body["tools"] = std::move(tools);
  }
  // The same names as troupe's, but for stop sequences (max_tokens is set above).
  const json::value params = to_json(request.params);
  for (const auto& [key, value] : params.as_object())
    if (key != "max_tokens") body[key == "stop" ? std::string_view("stop_sequences") : std::string_view(key)] = value;
  if (stream) body["stream"] = true;
  return body;
}

void anthropic_stream_decoder::on_event(const sse_event& e) {
  if (done()) return;
  boost::system::error_code ec;
  const json::value v = json::parse(e.data, ec);
  if (ec || !v.is_object()) {
    malformed("an event's data is not a JSON object: " + e.data.substr(0, 200));
    return;
  }
  const json::object& o = v.as_object();
  // The data's own "type" names the event; the SSE event name repeats it.
  const std::string_view type = str(o, "type").empty() ? std::string_view(e.type) : str(o, "type");

  if (type == "message_start") {
    if (const auto* m = obj(o, "message"))
      if (const auto* u = obj(*m, "usage")) {
        token_usage t;
        t.input_tokens = integer(*u, "input_tokens").value_or(0) +
                         integer(*u, "cache_creation_input_tokens").value_or(0) +
                         integer(*u, "cache_read_input_tokens").value_or(0);
        t.output_tokens = integer(*u, "output_tokens").value_or(0);
        usage_ = t;
      }
  } else if (type == "content_block_start") {
    const auto* block = obj(o, "content_block");
    if (block && str(*block, "type") == "tool_use") {
      tool_blocks_.emplace_back(integer(o, "index").value_or(-1), tool_calls_.size());
      tool_calls_.push_back({std::string(str(*block, "id")), std::string(str(*block, "name")), {}});
    } else if (block && str(*block, "type") == "text") {
      text(str(*block, "text"));
    }
  } else if (type == "content_block_delta") {
    const auto* delta = obj(o, "delta");
    if (!delta) return;
    const std::string_view kind = str(*delta, "type");
    if (kind == "text_delta") {
      text(str(*delta, "text"));
    } else if (kind == "thinking_delta") {
      thinking(str(*delta, "thinking"));
    } else if (kind == "input_json_delta") {
      const std::int64_t index = integer(o, "index").value_or(-1);
      for (const auto& [block, call] : tool_blocks_)
        if (block == index) tool_calls_[call].arguments += str(*delta, "partial_json");
    }
  } else if (type == "message_delta") {
    if (const auto* delta = obj(o, "delta"))
      if (auto reason = str(*delta, "stop_reason"); !reason.empty()) finish_reason_ = reason;
    if (const auto* u = obj(o, "usage")) {
      // Cumulative: the latest count replaces the earlier ones.
      if (!usage_) usage_ = token_usage{};
      if (auto out = integer(*u, "output_tokens")) usage_->output_tokens = *out;
      if (auto in = integer(*u, "input_tokens")) usage_->input_tokens = *in;
    }
  } else if (type == "message_stop") {
    complete({});
  } else if (type == "error") {
    const json::value* err = o.if_contains("error");
    fail(classify_stream_error(err ? *err : json::value(nullptr)));
  }
  // ping, content_block_stop and events added later need nothing.
}

llm_result decode_anthropic_response(const std::string& call_id, std::string_view body) {
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec);
  if (ec || !v.is_object())
    return {call_id, error_info::of(error_type::malformed_response, "the response is not a JSON object", 1)};
  const json::object& o = v.as_object();
  if (str(o, "type") == "error") {
    const json::value* err = o.if_contains("error");
    return {call_id, classify_stream_error(err ? *err : json::value(nullptr))};
  }
  llm_completion c;
  if (const auto* content = o.if_contains("content"); content && content->is_array()) {
    for (const json::value& b : content->as_array()) {
      const json::object* block = b.if_object();
      if (!block) continue;
      if (str(*block, "type") == "text") c.text += str(*block, "text");
      else if (str(*block, "type") == "thinking") c.thinking += str(*block, "thinking");
      else if (str(*block, "type") == "tool_use") {
        const json::value* input = block->if_contains("input");
        c.tool_calls.push_back(assemble_tool_call(std::string(str(*block, "id")), std::string(str(*block, "name")),
                                                  input ? json::serialize(*input) : std::string()));
      }
    }
  }
  c.finish_reason = str(o, "stop_reason");
  if (const auto* u = obj(o, "usage"))
    c.usage = token_usage{integer(*u, "input_tokens").value_or(0), integer(*u, "output_tokens").value_or(0)};
  return {call_id, std::move(c)};
}

}  // namespace troupe
