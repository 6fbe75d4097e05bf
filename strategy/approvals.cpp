#include "strategy/approvals.hpp"

#include "signals/error_info.hpp"
#include "signals/tool_result.hpp"
#include "strategy/inner_pause.hpp"
#include "strategy/recorded_request.hpp"

#include <algorithm>
#include <map>
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

std::optional<relayed_call> relayed_to(const entry& e) {
  const auto v = e.payload.value("inner");
  const auto* o = v ? v->if_object() : nullptr;
  if (!o) return std::nullopt;
  auto text = [&](std::string_view key) {
    const auto* s = o->if_contains(key);
    return s && s->is_string() ? std::string(s->as_string()) : std::string();
  };
  relayed_call r{{text("agent_id"), text("thread_id"), text("request_id"), text("tool_call_id")}, {}};
  const std::string_view id = e.refs.tool_call_id();
  if (id.size() <= r.inner.tool_call_id.size() || !id.ends_with("/" + r.inner.tool_call_id)) return std::nullopt;
  r.outer_tool_call_id = id.substr(0, id.size() - r.inner.tool_call_id.size() - 1);
  return r;
}

const entry* find_decision(const thread_view& t, std::string_view request_id, std::string_view tool_call_id,
                           std::string_view idempotency_key) {
  for (const entry* e : t.of_kind(entry_kind::decision)) {
    if (e->refs.request_id() != request_id || e->refs.tool_call_id() != tool_call_id) continue;
    if (idempotency_key.empty() || e->payload.string("idempotency_key") == idempotency_key) return e;
  }
  return nullptr;
}

bool allowed_on_thread(const thread_view& t, std::string_view tool) {
  // Another agent's sticky decision allows that agent's tool, on its thread.
  for (const entry* e : t.of_kind(entry_kind::decision))
    if (flag(*e, "sticky") && e->payload.string("tool") == tool && !e->payload.value("inner")) return true;
  return false;
}

std::optional<reply> end_after_expiry(const thread_view& t, std::string_view request_id,
                                      std::string_view tool_call_id) {
  const entry* decided = find_decision(t, request_id, tool_call_id);
  if (!decided || !flag(*decided, "expired")) return std::nullopt;
  const entry* last = newest_entry_of_request(t, request_id);
  return last ? recorded_end(*last, request_id) : std::nullopt;
}

std::vector<const entry*> open_approval_requests(const thread_view& t) {
  // Most threads never asked for a decision: they need no index of what is closed.
  const std::vector<const entry*> requests = t.of_kind(entry_kind::approval_request);
  if (requests.empty()) return {};
  std::set<call_key> closed;
  for (const entry* e : t.of_kinds({entry_kind::decision, entry_kind::tool_result})) closed.insert(key_of(*e));
  std::vector<const entry*> out;
  for (const entry* e : requests) {
    if (closed.count(key_of(*e))) continue;
    // Another agent's call is closed too once the call that asked it has its result.
    if (auto r = relayed_to(*e); r && closed.count({e->refs.call_id(), r->outer_tool_call_id})) continue;
    out.push_back(e);
  }
  return out;
}

std::vector<open_approval> pending_approvals(const thread_view& t, std::string_view request_id) {
  std::vector<open_approval> out;
  for (const entry* e : open_approval_requests(t)) {
    if (e->refs.request_id() != request_id) continue;
    const auto arguments = e->payload.value("arguments");
    open_approval a{std::string(e->refs.tool_call_id()),
                    std::string(e->payload.string("tool").value_or("")),
                    arguments && arguments->is_object() ? arguments->as_object() : boost::json::object{},
                    std::string(e->payload.string("reason").value_or("")),
                    e->payload.integer("expires_at").value_or(0),
                    flag(*e, "question")};
    if (auto r = relayed_to(*e)) a.inner = std::move(r->inner);
    a.on_expiry = parse_verdict(e->payload.string("on_expiry").value_or("")).value_or(verdict::reject);
    out.push_back(std::move(a));
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

  auto call_of = [&](std::string_view id) -> pending_tool_call* {
    for (pending_tool_call& p : s.tool_calls)
      if (p.call.id == id) return &p;
    return nullptr;
  };
  // Another agent's calls waiting under a call of this turn: their deadlines,
  // by their ids here, until a decision here passed one down.
  std::map<std::string, std::int64_t, std::less<>> relayed_open;
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
    if (auto r = relayed_to(e); r && e.kind != entry_kind::tool_result) {
      pending_tool_call* p = call_of(r->outer_tool_call_id);
      if (!p) return std::nullopt;
      if (e.kind == entry_kind::approval_request) {
        p->asked = true;
        relayed_open[std::string(e.refs.tool_call_id())] = e.payload.integer("expires_at").value_or(0);
      } else if (auto decided = relayed_open.find(e.refs.tool_call_id()); decided != relayed_open.end()) {
        relayed_open.erase(decided);
      }
      continue;
    }
    pending_tool_call* p = call_of(e.refs.tool_call_id());
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
  for (const auto& [id, expires_at] : relayed_open)
    for (pending_tool_call& p : s.tool_calls)
      if (!p.outcome && relayed_through(id, p.call.id))
        p.awaiting_until = p.awaiting_until ? std::min(p.awaiting_until, expires_at) : expires_at;
  // A call whose other agent went on after a decision passed down is not
  // followed any more: as a running call, it is interrupted.
  for (pending_tool_call& p : s.tool_calls)
    if (!p.outcome && !p.awaiting_until)
      p.outcome = error_info::of(error_type::interrupted, "the agent stopped before the tool finished");
  return s;
}

}  // namespace troupe
