#include "strategy/inner_pause.hpp"

#include "json/json_reader.hpp"

namespace troupe {

namespace json = boost::json;

namespace {
constexpr std::string_view marker = "awaiting_input";
}

json::value to_tool_result(const inner_pause& p) {
  json::array pending;
  for (const open_approval& a : p.pending) pending.push_back(to_json(a));
  return json::object{{marker, json::object{{"agent_id", p.agent_id},
                                            {"thread_id", p.thread_id},
                                            {"request_id", p.request_id},
                                            {"pending", std::move(pending)}}}};
}

std::optional<inner_pause> read_inner_pause(const tool_outcome& outcome) {
  const auto* value = std::get_if<json::value>(&outcome);
  const auto* o = value ? value->if_object() : nullptr;
  const auto* body = o && o->size() == 1 ? o->if_contains(marker) : nullptr;
  if (!body || !body->is_object()) return std::nullopt;
  json_reader r(*body, std::string(marker));
  inner_pause p{r.string("agent_id"), r.string("thread_id"), r.string("request_id"), {}};
  if (const json::array* pending = r.find_array("pending"))
    for (std::size_t i = 0; i < pending->size(); ++i) {
      auto a = decode_open_approval((*pending)[i], r.field_path("pending"));
      if (!a) return std::nullopt;
      p.pending.push_back(std::move(*a));
    }
  if (!r.ok() || p.pending.empty()) return std::nullopt;
  return p;
}

std::string relayed_call_id(std::string_view outer_tool_call_id, std::string_view inner_tool_call_id) {
  std::string id;
  id.reserve(outer_tool_call_id.size() + 1 + inner_tool_call_id.size());
  id.append(outer_tool_call_id).append("/").append(inner_tool_call_id);
  return id;
}

bool relayed_through(std::string_view id, std::string_view outer_tool_call_id) {
  return id.size() > outer_tool_call_id.size() + 1 && id.starts_with(outer_tool_call_id) &&
         id[outer_tool_call_id.size()] == '/';
}

}  // namespace troupe
