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

// Adds entries to a projection in progress. Reads only the fields each
// entry's kind needs.
class projector {
 public:
  explicit projector(projected_prefix& into) : p_(into) {}

  void add(std::string_view kind, const json::object& payload, const json::object& refs) {
    if (kind == entry_kind::message) {
      llm_message m;
      m.role = string_field(payload, "role").value_or("user");
      m.content = string_field(payload, "content").value_or("");
      // Tool calls of the same model call join this message.
      p_.open_call_id = m.role == "assistant" ? string_field(refs, "call_id").value_or("") : "";
      p_.messages.push_back(std::move(m));
    } else if (kind == entry_kind::tool_call) {
      const std::string_view call_id = string_field(refs, "call_id").value_or("");
      if (p_.open_call_id.empty() || p_.open_call_id != call_id) {
        p_.messages.push_back(llm_message{"assistant", "", {}, {}, {}});
        p_.open_call_id = call_id;
      }
      tool_call c;
      c.id = string_field(refs, "tool_call_id").value_or("");
      c.name = string_field(payload, "name").value_or("");
      if (const json::value* args = payload.if_contains("arguments"))
        if (const json::object* o = args->if_object()) c.arguments = *o;
      p_.messages.edit_back().tool_calls.push_back(std::move(c));
    } else if (kind == entry_kind::tool_result) {
      llm_message m;
      m.role = "tool";
      m.tool_call_id = string_field(refs, "tool_call_id").value_or("");
      m.name = string_field(payload, "name").value_or("");
      m.content = tool_result_text(payload);
      p_.messages.push_back(std::move(m));
      p_.open_call_id.clear();
    }
  }

 private:
  projected_prefix& p_;
};

}  // namespace

std::shared_ptr<const projected_prefix> project_prefix(std::shared_ptr<const projected_prefix> prefix,
                                                       std::string_view system_prompt,
                                                       const thread_view& t) {
  const bool usable = prefix && prefix->thread_id == t.id() && prefix->system_prompt == system_prompt &&
                      prefix->basis <= t.size();
  if (usable && prefix->basis == t.size()) return prefix;

  auto next = std::make_shared<projected_prefix>();
  if (usable) {
    *next = *prefix;
  } else {
    next->thread_id = t.id();
    next->system_prompt = system_prompt;
    if (!system_prompt.empty())
      next->messages.push_back(llm_message{"system", std::string(system_prompt), {}, {}, {}});
  }
  projector p(*next);
  for (const entry& e : t.slice(next->basis, t.size())) p.add(e.kind, e.payload, e.refs);
  next->basis = t.size();
  return next;
}

message_list with_pending(const projected_prefix& prefix, std::span<const entry_draft> pending) {
  projected_prefix all;
  all.messages = prefix.messages;
  all.open_call_id = prefix.open_call_id;
  projector p(all);
  for (const entry_draft& d : pending) p.add(d.kind, d.payload, d.refs);
  return std::move(all.messages);
}

message_list project_messages(std::string_view system_prompt, const thread_view& t,
                              std::span<const entry_draft> pending) {
  return with_pending(*project_prefix(nullptr, system_prompt, t), pending);
}

}  // namespace troupe
