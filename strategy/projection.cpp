#include "strategy/projection.hpp"

#include <boost/json/serialize.hpp>

namespace troupe {

namespace json = boost::json;

std::string tool_result_text(const json::object& payload) {
  if (const json::value* error = payload.if_contains("error"))
    return json::serialize(json::object{{"error", *error}});
  const json::value* result = payload.if_contains("result");
  if (!result) return "null";
  if (const json::string* s = result->if_string()) return std::string(*s);
  return json::serialize(*result);
}

namespace {

class projector {
 public:
  projector(std::string_view system_prompt, std::size_t at_most) {
    messages_.reserve(at_most);
    if (!system_prompt.empty())
      messages_.push_back(llm_message{"system", std::string(system_prompt), {}, {}, {}});
  }

  // Runs for every entry of every model call: it reads only the fields the
  // entry's kind needs.
  void add(std::string_view kind, const json::object& payload, const json::object& refs) {
    if (kind == entry_kind::message) {
      llm_message& m = messages_.emplace_back();
      m.role = string_field(payload, "role").value_or("user");
      m.content = string_field(payload, "content").value_or("");
      // Tool calls of the same model call join this message.
      open_call_id_ = m.role == "assistant" ? string_field(refs, "call_id").value_or("") : std::string_view{};
    } else if (kind == entry_kind::tool_call) {
      const std::string_view call_id = string_field(refs, "call_id").value_or("");
      if (open_call_id_.empty() || open_call_id_ != call_id) {
        messages_.push_back(llm_message{"assistant", "", {}, {}, {}});
        open_call_id_ = call_id;
      }
      tool_call c;
      c.id = string_field(refs, "tool_call_id").value_or("");
      c.name = string_field(payload, "name").value_or("");
      if (const json::value* args = payload.if_contains("arguments"))
        if (const json::object* o = args->if_object()) c.arguments = *o;
      messages_.back().tool_calls.push_back(std::move(c));
    } else if (kind == entry_kind::tool_result) {
      llm_message& m = messages_.emplace_back();
      m.role = "tool";
      m.tool_call_id = string_field(refs, "tool_call_id").value_or("");
      m.name = string_field(payload, "name").value_or("");
      m.content = tool_result_text(payload);
      open_call_id_ = {};
    }
  }

  std::vector<llm_message> finish() && { return std::move(messages_); }

 private:
  std::vector<llm_message> messages_;
  // The model call whose assistant message is last and can take tool calls.
  std::string_view open_call_id_;
};

}  // namespace

std::vector<llm_message> project_messages(std::string_view system_prompt, const thread_view& t,
                                          std::span<const entry_draft> pending) {
  projector p(system_prompt, t.size() + pending.size() + 1);
  for (const entry& e : t.entries()) p.add(e.kind, e.payload, e.refs);
  for (const entry_draft& d : pending) p.add(d.kind, d.payload, d.refs);
  return std::move(p).finish();
}

}  // namespace troupe
