#include "apps/serve/thread_replay.hpp"

#include "apps/serve/event_position.hpp"
#include "apps/serve/turn_json.hpp"
#include "strategy/react_machine.hpp"

#include <boost/json/parse.hpp>

#include <span>
#include <unordered_map>
#include <unordered_set>

namespace troupe::serve {

namespace json = boost::json;

bool cut_by_shutdown(const turn_result& r) {
  const auto* e = std::get_if<error_info>(&r.outcome.outcome);
  return e && e->type == error_type::shutdown;
}

namespace {

// The tool calls of `entries` that step() refused without running a tool
// (no tool event was sent for them live), by tool_call_id.
std::unordered_set<std::string> refused_calls(std::span<const entry> entries) {
  std::unordered_set<std::string> out;
  for (const entry& e : entries) {
    if (e.kind != entry_kind::tool_result) continue;
    const auto outcome = decode_tool_outcome(e.payload.to_json(), "payload");
    if (const auto* err = outcome ? std::get_if<error_info>(&*outcome) : nullptr; err && refused_without_running(*err))
      out.emplace(string_field(e.refs, "tool_call_id").value_or(""));
  }
  return out;
}

}  // namespace

std::optional<replayed_turn> replay_turn(const std::vector<entry>& entries, turn_ids ids) {
  if (entries.empty()) return std::nullopt;
  const std::string wanted = ids.request_id;
  // A request run again (its first run cut by a shutdown) starts over at its
  // question: the replay is of the last run.
  std::size_t from = 0;
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].kind == entry_kind::message && string_field(entries[i].payload, "role") == "user") from = i;
  const std::span<const entry> run(entries.begin() + static_cast<std::ptrdiff_t>(from), entries.end());
  const auto refused = refused_calls(run);

  // Each event's id is the one it had live (event_position.hpp): a delta is
  // placed after the request's entry before its message, a tool's start and
  // end after the last call of the model's batch. A batch's approval
  // requests follow the starts of its free calls, as they were sent live.
  // Nothing after a pause was sent live (a decision's continuation is told
  // from here): from the first approval request on, each result and
  // decision is placed after its own entry.
  replayed_turn out;
  out.request_id = wanted;
  auto add = [&](std::string name, const json::value& data, std::uint64_t id) {
    out.events.push_back(make_event(id, std::move(name), data));
  };
  auto in_batch = [&](std::size_t i) {
    return i < run.size() && (run[i].kind == entry_kind::tool_call || run[i].kind == entry_kind::approval_request);
  };
  add("conversation", conversation_event(ids), 0);
  std::optional<reply> ended;
  std::uint64_t batch_seq = 0, started = 0, finished = 0;
  bool after_pause = false;
  std::vector<open_approval> asked_in_batch;
  std::vector<open_approval> waiting;  // asked, neither decided nor answered
  std::unordered_set<std::string> asked;
  std::unordered_map<std::string, tool_started_event> calls;
  for (const entry& e : run)
    if (e.kind == entry_kind::approval_request) asked.emplace(string_field(e.refs, "tool_call_id").value_or(""));
  auto settle = [&](const std::string& tool_call_id) {
    std::erase_if(waiting, [&](const open_approval& a) { return a.tool_call_id == tool_call_id; });
  };
  for (std::size_t i = 0; i < run.size(); ++i) {
    const entry& e = run[i];
    // Replays are rare (a reconnect after the turn): the JSON form keeps this
    // reader the same for every kind.
    const json::object p = e.payload.to_json();
    const std::string tool_call_id(string_field(e.refs, "tool_call_id").value_or(""));
    if (e.kind == entry_kind::message) {
      const auto role = string_field(p, "role");
      const std::string content(string_field(p, "content").value_or(""));
      if (role == "user") {
        out.content = content;
      } else if (role == "assistant" && i > 0) {
        delta_event d{wanted, content, std::string(string_field(p, "thinking").value_or(""))};
        if (!d.text.empty() || !d.thinking.empty())
          add("message.delta", event_data(d), event_id(run[i - 1].seq, d.text.size() + d.thinking.size()));
        // The answer is the assistant message that ends the turn.
        ended = reply{wanted, content, {}, 0};
      }
    } else if (in_batch(i)) {
      if (i == 0 || !in_batch(i - 1)) {
        std::size_t last = i;
        while (in_batch(last + 1)) ++last;
        batch_seq = run[last].seq;
        started = finished = 0;
      }
      if (e.kind == entry_kind::tool_call) {
        ended.reset();
        tool_started_event s{wanted, tool_call_id, std::string(string_field(p, "name").value_or("")), {}};
        if (const auto* args = p.if_contains("arguments"); args && args->is_object()) s.arguments = args->as_object();
        calls[tool_call_id] = s;
        // A call that waits for a decision has not started.
        if (!refused.contains(tool_call_id) && !asked.contains(tool_call_id))
          add("tool.started", event_data(s), event_id(batch_seq, tool_offset(++started, finished)));
      } else {
        after_pause = true;
        open_approval a{tool_call_id,
                        std::string(string_field(p, "tool").value_or("")),
                        {},
                        std::string(string_field(p, "reason").value_or("")),
                        int_field(p, "expires_at").value_or(0)};
        if (const auto* args = p.if_contains("arguments"); args && args->is_object()) a.arguments = args->as_object();
        asked_in_batch.push_back(a);
        waiting.push_back(std::move(a));
      }
      if (!in_batch(i + 1)) {
        for (const open_approval& a : asked_in_batch)
          add("approval_request", event_data(wanted, a), event_id(batch_seq, tool_offset(++started, finished)));
        asked_in_batch.clear();
      }
    } else if (e.kind == entry_kind::decision) {
      settle(tool_call_id);
      json::object d{{"request_id", wanted}, {"tool_call_id", tool_call_id}};
      for (const char* key : {"verdict", "decided_by", "message", "arguments", "expired"})
        if (const auto* v = p.if_contains(key)) d[key] = *v;
      add("approval_decision", d, event_id(e.seq, 0));
      const auto verdict = string_field(p, "verdict");
      if (auto call = calls.find(tool_call_id); call != calls.end() && verdict != "reject") {
        tool_started_event s = call->second;
        if (const auto* args = p.if_contains("arguments"); verdict == "edit" && args && args->is_object())
          s.arguments = args->as_object();
        add("tool.started", event_data(s), event_id(e.seq, 1));
      }
    } else if (e.kind == entry_kind::tool_result) {
      settle(tool_call_id);
      auto outcome = decode_tool_outcome(p, "payload");
      tool_finished_event f{wanted, tool_call_id, std::string(string_field(p, "name").value_or("")),
                            outcome ? *outcome : tool_outcome{json::value(nullptr)}};
      if (refused.contains(f.tool_call_id)) continue;
      add("tool.finished", event_data(f),
          after_pause ? event_id(e.seq, 0) : event_id(batch_seq, tool_offset(started, ++finished)));
    } else if (e.kind == entry_kind::error) {
      auto err = decode_error_info(json::value(p), "payload");
      ended = reply{wanted, err ? *err : error_info::of("unknown", "an unreadable error entry"), {}, 0};
    }
  }
  if (ended) {
    out.result = turn_result{*ended, entries.size(), false};
    auto [name, data] = final_event(*out.result);
    add(std::move(name), data, event_id(entries.back().seq, 0));
  } else if (!waiting.empty()) {
    // Paused: the turn has ended for now, with the calls that wait.
    const std::string message =
        std::to_string(waiting.size()) + " tool call(s) of request " + wanted + " wait for a decision";
    out.result = turn_result{reply{wanted, error_info::of(error_type::awaiting_input, message), {}, 0, waiting},
                             entries.size(), false};
    auto [name, data] = final_event(*out.result);
    add(std::move(name), data, event_id(entries.back().seq, max_offset));
  }
  return out;
}

namespace {

// The request id of the conversation's last question at or before seq
// `until`: among its last messages, read by the messages' index, more of
// them until one is a user's.
std::optional<std::string> asking_request(conversation_store& conversations, const std::string& conversation_id,
                                          std::uint64_t until) {
  for (std::size_t limit = 8;; limit *= 8) {
    auto messages = conversations.history(conversation_id, limit);
    if (!messages) return std::nullopt;
    for (auto it = messages->rbegin(); it != messages->rend(); ++it)
      if (it->seq <= until && string_field(it->payload, "role") == "user") {
        auto id = string_field(it->refs, "request_id");
        return id ? std::optional<std::string>(*id) : std::nullopt;
      }
    if (messages->size() < limit) return std::nullopt;
  }
}

}  // namespace

std::optional<replayed_turn> stored_turn(const store_handle& store, const std::string& conversation_id, turn_ids ids) {
  if (ids.request_id.empty()) {
    auto last = asking_request(*store.conversations, conversation_id, UINT64_MAX);
    if (!last) return std::nullopt;
    ids.request_id = std::move(*last);
  }
  auto entries = store.threads->request_entries(ids.thread_id, ids.request_id);
  if (!entries) return std::nullopt;
  return replay_turn(*entries, std::move(ids));
}

std::optional<std::string> request_of_event(const store_handle& store, const std::string& conversation_id,
                                            std::uint64_t event) {
  if (event < event_id(0, 0)) return std::nullopt;
  return asking_request(*store.conversations, conversation_id, seq_of(event));
}

std::shared_ptr<turn> finished_turn(const replayed_turn& r, turn_ids ids) {
  ids.content = r.content;
  auto t = std::make_shared<turn>(std::move(ids));
  for (std::size_t i = 0; i + 1 < r.events.size(); ++i)
    t->push(r.events[i].name, json::parse(r.events[i].data), r.events[i].id);
  t->finish(*r.result, r.events.back().name, json::parse(r.events.back().data), r.events.back().id);
  return t;
}

}  // namespace troupe::serve
