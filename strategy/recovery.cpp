#include "strategy/recovery.hpp"

#include "strategy/approvals.hpp"

#include "signals/error_info.hpp"
#include "signals/tool_result.hpp"

#include <algorithm>
#include <utility>

namespace troupe {

std::vector<entry_draft> interrupted_tool_results(const thread_view& t) {
  // A tool call is identified by its model call and its own id. Read back at
  // every load, a thread is scanned once for both kinds; the answered keys
  // are searched sorted, in one block.
  using key = std::pair<std::string_view, std::string_view>;
  auto key_of = [](const entry& e) { return key{e.refs.call_id(), e.refs.tool_call_id()}; };
  std::vector<const entry*> calls;
  std::vector<key> answered;
  for (const entry& e : t.entries()) {
    if (e.kind == entry_kind::tool_call)
      calls.push_back(&e);
    else if (e.kind == entry_kind::tool_result)
      answered.push_back(key_of(e));
  }
  if (calls.empty()) return {};
  // A call that waits for a decision has not run: it is paused, not interrupted.
  // So does a call whose agent (used as a tool) paused: it waits for the
  // decisions of that agent's calls, which point at it.
  for (const entry* e : open_approval_requests(t)) {
    answered.push_back(key_of(*e));
    if (const auto relayed = relayed_to(*e)) answered.push_back({e->refs.call_id(), relayed->outer_tool_call_id});
  }
  std::sort(answered.begin(), answered.end());

  std::vector<entry_draft> out;
  for (const entry* call : calls) {
    if (std::binary_search(answered.begin(), answered.end(), key_of(*call))) continue;
    const error_info why = error_info::of(error_type::interrupted, "the agent stopped before the tool finished");
    if (const auto name = call->payload.string("name")) {
      out.emplace_back(tool_result_payload::of(*name, why), call->refs);
    } else {
      // A call whose name is not a string: the result repeats it as it is.
      boost::json::object payload{{"name", call->payload.value("name").value_or("")}};
      put_tool_outcome(payload, why);
      out.emplace_back(std::string(entry_kind::tool_result), std::move(payload), call->refs);
    }
  }
  return out;
}

}  // namespace troupe
