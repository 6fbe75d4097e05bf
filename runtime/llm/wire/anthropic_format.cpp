#include "runtime/llm/wire/detail/anthropic_format.hpp"

#include "json/json_parse.hpp"
#include "json/json_reader.hpp"
#include "json/json_text.hpp"
#include "runtime/detail/text.hpp"
#include "runtime/llm/llm_errors.hpp"

namespace troupe {

namespace json = boost::json;

namespace {

// Anthropic counts cached input apart: all of it was read by the model.
std::optional<std::int64_t> input_tokens(const json_reader& usage) {
  const auto fresh = usage.integer<std::int64_t>("input_tokens", 0, max_token_count);
  const auto created = usage.integer<std::int64_t>("cache_creation_input_tokens", 0, max_token_count);
  const auto read = usage.integer<std::int64_t>("cache_read_input_tokens", 0, max_token_count);
  if (!fresh && !created && !read) return std::nullopt;
  return fresh.value_or(0) + created.value_or(0) + read.value_or(0);
}

// Null when the object has neither count: unknown, not zero.
std::optional<token_usage> usage_of(const json_reader& usage) {
  const auto in = input_tokens(usage);
  const auto out = usage.integer<std::int64_t>("output_tokens", 0, max_token_count);
  if (!in && !out) return std::nullopt;
  return token_usage{in.value_or(0), out.value_or(0)};
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
  const json::value v = parse_json(e.data, ec);
  if (ec || !v.is_object()) {
    malformed("an event's data is not a JSON object: " + shortened(e.data, 200));
    return;
  }
  std::optional<decode_error> problem;
  read_event(json_reader(v.as_object(), "", problem), e.type);
  if (problem) malformed("an event is malformed: " + problem->describe());
}

void anthropic_stream_decoder::read_event(const json_reader& o, std::string_view sse_type) {
  // The data's own "type" names the event; the SSE event name repeats it.
  const std::string_view type = o.text("type").empty() ? sse_type : o.text("type");

  if (type == "message_start") {
    if (const auto m = o.nested("message")) {
      if (const auto u = m->nested("usage")) usage_ = usage_of(*u);
      name_response(*m, "id", "model");
    }
  } else if (type == "content_block_start") {
    const auto block = o.nested("content_block");
    const std::string_view kind = block ? block->text("type") : std::string_view{};
    if (kind == "tool_use") {
      const auto index = o.integer<std::size_t>("index");
      if (!index) return o.fail("index", "a tool_use block needs its index");
      if (tool_calls_.size() >= max_tool_calls) return o.fail("index", "too many tool calls");
      tool_blocks_.emplace_back(*index, tool_calls_.size());
      tool_calls_.push_back({std::string(block->text("id")), std::string(block->text("name")), {}});
    } else if (kind == "text") {
      text(block->text("text"));
    }
  } else if (type == "content_block_delta") {
    const auto delta = o.nested("delta");
    if (!delta) return;
    const std::string_view kind = delta->text("type");
    if (kind == "text_delta") {
      text(delta->text("text"));
    } else if (kind == "thinking_delta") {
      thinking(delta->text("thinking"));
    } else if (kind == "input_json_delta") {
      const auto index = o.integer<std::size_t>("index");
      if (!index) return o.fail("index", "an input_json_delta needs its block's index");
      for (const auto& [block, call] : tool_blocks_)
        if (block == *index) tool_calls_[call].arguments += delta->text("partial_json");
    }
  } else if (type == "message_delta") {
    if (const auto delta = o.nested("delta"))
      if (auto reason = delta->text("stop_reason"); !reason.empty()) finish_reason_ = reason;
    if (const auto u = o.nested("usage")) {
      // Cumulative: the latest count replaces the earlier ones.
      const auto in = input_tokens(*u);
      const auto out = u->integer<std::int64_t>("output_tokens", 0, max_token_count);
      if ((in || out) && !usage_) usage_ = token_usage{};
      if (out) usage_->output_tokens = *out;
      if (in) usage_->input_tokens = *in;
    }
  } else if (type == "message_stop") {
    complete({});
  } else if (type == "error") {
    const json::value* err = o.optional_value("error");
    fail(classify_stream_error(err ? *err : json::value(nullptr)));
  }
  // ping, content_block_stop and events added later need nothing.
}

llm_result decode_anthropic_response(const std::string& call_id, std::string_view body) {
  boost::system::error_code ec;
  const json::value v = parse_json(body, ec);
  if (ec || !v.is_object())
    return {call_id, error_info::of(error_type::malformed_response, "the response is not a JSON object", 1)};
  std::optional<decode_error> problem;
  const json_reader o(v.as_object(), "", problem);
  if (o.text("type") == "error") {
    const json::value* err = o.optional_value("error");
    return {call_id, classify_stream_error(err ? *err : json::value(nullptr))};
  }
  llm_completion c;
  if (const json::array* content = o.find_array("content")) {
    for (std::size_t i = 0; i < content->size(); ++i) {
      const auto block = o.element(*content, "content", i);
      if (!block) break;
      const std::string_view kind = block->text("type");
      if (kind == "text")
        c.text += block->text("text");
      else if (kind == "thinking")
        c.thinking += block->text("thinking");
      else if (kind == "tool_use") {
        const json::value* input = block->optional_value("input");
        c.tool_calls.push_back(assemble_tool_call(std::string(block->text("id")), std::string(block->text("name")),
                                                  input ? json_text(*input) : std::string()));
      }
    }
  }
  c.finish_reason = o.text("stop_reason");
  c.response_id = response_label(o, "id");
  c.response_model = response_label(o, "model");
  if (const auto u = o.nested("usage")) c.usage = usage_of(*u);
  if (problem)
    return {call_id,
            error_info::of(error_type::malformed_response, "the response is malformed: " + problem->describe(), 1)};
  return {call_id, std::move(c)};
}

}  // namespace troupe
