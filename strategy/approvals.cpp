#include "strategy/approvals.hpp"

#include "signals/error_info.hpp"
#include "signals/tool_result.hpp"

#include <algorithm>
#include <set>
#include <utility>

namespace troupe {

namespace {

// A tool call is identified by its model call and its own id.
using call_key = std::pair<std::string_view, std::string_view>;
call_key key_of(const entry& e) { return {e.refs.call_id(), e.refs.tool_call_id()}; }

// A payload's member that is true (absent or anything else: false).
bool flag(const entry& e, std::string_view key) {
  const auto v = e.payload.value(key);
  return v && v->is_bool() && v->as_bool();
}

bool is_turn_kind(std::string_view k) {
  return k == entry_kind::tool_call || k == entry_kind::tool_result || k == entry_kind::approval_request ||
         k == entry_kind::decision;
}

}  // namespace

const entry* find_decision(const thread_view& t, std::string_view request_id, std::string_view tool_call_id,
                           std::string_view idempotency_key) {
  for (const entry* e : t.of_kind(entry_kind::decision)) {
    if (e->refs.request_id() != request_id || e->refs.tool_call_id() != tool_call_id) continue;
    if (idempotency_key.empty() || e->payload.string("idempotency_key") == idempotency_key) return e;
  }
  return nullptr;
}

bool allowed_on_thread(const thread_view& t, std::string_view tool) {
  for (const entry* e : t.of_kind(entry_kind::decision))
    if (flag(*e, "sticky") && e->payload.string("tool") == tool) return true;
  return false;
}

std::vector<const entry*> open_approval_requests(const thread_view& t) {
  std::set<call_key> closed;
  for (const entry* e : t.of_kinds({entry_kind::decision, entry_kind::tool_result})) closed.insert(key_of(*e));
  std::vector<const entry*> out;
  for (const entry* e : t.of_kind(entry_kind::approval_request))
    if (!closed.count(key_of(*e))) out.push_back(e);
  return out;
}

std::vector<open_approval> pending_approvals(const thread_view& t, std::string_view request_id) {
  std::vector<open_approval> out;
  for (const entry* e : open_approval_requests(t)) {
    if (e->refs.request_id() != request_id) continue;
    const auto arguments = e->payload.value("arguments");
    out.push_back(open_approval{std::string(e->refs.tool_call_id()),
                                std::string(e->payload.string("tool").value_or("")),
                                arguments && arguments->is_object() ? arguments->as_object() : boost::json::object{},
                                std::string(e->payload.string("reason").value_or("")),
                                e->payload.integer("expires_at").value_or(0), flag(*e, "question")});
  }
  return out;
}

std::optional<react_state> paused_request(const thread_view& t) {
  const std::vector<const entry*> open = open_approval_requests(t);
  if (open.empty()) return std::nullopt;
  const entry& last_open = *open.back();
  const std::string_view call_id = last_open.refs.call_id(), request_id = last_open.refs.request_id();

  // The turn begins with its first tool call; anything after it that is not
  // of the turn (the next model call's entries, a request's end) means the
  // request went on.
  const entry_range all = t.entries();
  auto first = std::find_if(all.begin(), all.end(), [&](const entry& e) {
    return e.kind == entry_kind::tool_call && e.refs.call_id() == call_id;
  });
  if (first == all.end()) return std::nullopt;

  react_state s;
  s.status = react_status::awaiting_input;
  s.request_id = request_id;
  s.call_id = call_id;
  s.iteration = static_cast<int>(last_open.refs.iteration().value_or(1));
  for (const entry& e : all)
    if (e.refs.request_id() == request_id) {
      s.request_started_at = e.at;
      break;
    }

  auto call_of = [&](const entry& e) -> pending_tool_call* {
    for (pending_tool_call& p : s.tool_calls)
      if (p.call.id == e.refs.tool_call_id()) return &p;
    return nullptr;
  };
  for (auto it = first; it != all.end(); ++it) {
    const entry& e = *it;
    if (e.kind == entry_kind::summary) continue;
    if (!is_turn_kind(e.kind) || e.refs.call_id() != call_id) return std::nullopt;
    if (e.kind == entry_kind::tool_call) {
      const auto arguments = e.payload.value("arguments");
      s.tool_calls.push_back(pending_tool_call{
          tool_call{std::string(e.refs.tool_call_id()), std::string(e.payload.string("name").value_or("")),
                    arguments && arguments->is_object() ? arguments->as_object() : boost::json::object{}, std::nullopt},
          std::nullopt});
      continue;
    }
    pending_tool_call* p = call_of(e);
    if (!p) return std::nullopt;  // not a call of this turn: not a pause this machine made
    if (e.kind == entry_kind::approval_request) {
      p->asked = true;
      if (!p->outcome) p->awaiting_until = e.payload.integer("expires_at").value_or(0);
    } else if (e.kind == entry_kind::decision) {
      p->awaiting_until = 0;
    } else {
      auto outcome = decode_tool_outcome(e.payload.to_json(), "payload");
      p->outcome = outcome ? std::move(*outcome)
                           : tool_outcome(error_info::of(error_type::tool_failed, "the stored result is unreadable"));
      p->result_committed = true;
      p->awaiting_until = 0;
    }
  }
  for (pending_tool_call& p : s.tool_calls)
    if (!p.outcome && !p.awaiting_until)
      p.outcome = error_info::of(error_type::interrupted, "the agent stopped before the tool finished");
  return s;
}

}  // namespace troupe
