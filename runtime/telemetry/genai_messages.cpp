#include "runtime/telemetry/detail/genai_messages.hpp"

#include "json/json_text.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace troupe {

namespace json = boost::json;

namespace {

json::object text_part(const std::string& text) { return {{"type", "text"}, {"content", text}}; }

json::object call_part(const tool_call& c) {
  return {{"type", "tool_call"}, {"id", c.id}, {"name", c.name}, {"arguments", c.arguments}};
}

}  // namespace

std::string genai_input_messages(const message_list& messages) {
  json::array out;
  for (const llm_message& m : messages) {
    json::array parts;
    if (m.role == "tool") {
      parts.push_back(json::object{{"type", "tool_call_response"}, {"id", m.tool_call_id}, {"response", m.content}});
    } else {
      if (!m.content.empty()) parts.push_back(text_part(m.content));
      for (const auto& c : m.tool_calls) parts.push_back(call_part(c));
    }
    out.push_back(json::object{{"role", m.role}, {"parts", std::move(parts)}});
  }
  return json_text(out);
}

std::string genai_output_messages(const llm_completion& c) {
  json::array parts;
  if (!c.text.empty()) parts.push_back(text_part(c.text));
  for (const auto& call : c.tool_calls) parts.push_back(call_part(call));
  json::object m{{"role", "assistant"}, {"parts", std::move(parts)}};
  if (!c.finish_reason.empty()) m["finish_reason"] = c.finish_reason;
  return json_text(json::array{std::move(m)});
}

std::string genai_text_message(const std::string& role, const std::string& text) {
  return json_text(json::array{json::object{{"role", role}, {"parts", json::array{text_part(text)}}}});
}

}  // namespace troupe
