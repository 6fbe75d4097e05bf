#include "strategy/recovery.hpp"

#include "signals/error_info.hpp"
#include "signals/tool_result.hpp"

#include <set>
#include <utility>

namespace troupe {

std::vector<entry_draft> interrupted_tool_results(const thread_view& t) {
  // A tool call is identified by its model call and its own id.
  using key = std::pair<std::string_view, std::string_view>;
  auto key_of = [](const entry& e) {
    return key{string_field(e.refs, "call_id").value_or(""), string_field(e.refs, "tool_call_id").value_or("")};
  };
  std::set<key> answered;
  for (const entry* e : t.of_kind(entry_kind::tool_result)) answered.insert(key_of(*e));

  std::vector<entry_draft> out;
  for (const entry* call : t.of_kind(entry_kind::tool_call)) {
    if (answered.count(key_of(*call))) continue;
    boost::json::object payload{{"name", call->payload.contains("name") ? call->payload.at("name") : ""}};
    put_tool_outcome(payload, error_info::of(error_type::interrupted, "the agent stopped before the tool finished"));
    out.push_back(entry_draft{std::string(entry_kind::tool_result), std::move(payload), call->refs});
  }
  return out;
}

}  // namespace troupe
