#include "apps/serve/thread_replay.hpp"

#include "apps/serve/turn_json.hpp"

#include <boost/json/parse.hpp>

namespace troupe::serve {

namespace json = boost::json;

bool cut_by_shutdown(const turn_result& r) {
  const auto* e = std::get_if<error_info>(&r.outcome.outcome);
  return e && e->type == error_type::shutdown;
}

std::optional<replayed_turn> replay_turn(const std::vector<entry>& entries, turn_ids ids) {
  if (entries.empty()) return std::nullopt;
  const std::string wanted = ids.request_id;
  replayed_turn out;
  auto add = [&](std::string name, const json::value& data) {
    out.events.push_back(make_event(out.events.size() + 1, std::move(name), data));
  };
  add("conversation", conversation_event(ids));
  std::optional<reply> ended;
  for (const entry& e : entries) {
    // Replays are rare (a reconnect after the turn): the JSON form keeps this
    // reader the same for every kind.
    const json::object p = e.payload.to_json();
    if (e.kind == entry_kind::message) {
      const auto role = string_field(p, "role");
      const std::string content(string_field(p, "content").value_or(""));
      if (role == "user") {
        // A request run again (its first run cut by a shutdown) starts over
        // at its question: the replay is of the last run.
        out.events.resize(1);
        ended.reset();
        out.content = content;
      } else if (role == "assistant") {
        delta_event d{wanted, content, std::string(string_field(p, "thinking").value_or(""))};
        if (!d.text.empty() || !d.thinking.empty()) add("message.delta", event_data(d));
        // The answer is the assistant message that ends the turn.
        ended = reply{wanted, content, {}, 0};
      }
    } else if (e.kind == entry_kind::tool_call) {
      ended.reset();
      tool_started_event s{wanted,
                           std::string(string_field(e.refs, "tool_call_id").value_or("")),
                           std::string(string_field(p, "name").value_or("")),
                           {}};
      if (const auto* args = p.if_contains("arguments"); args && args->is_object()) s.arguments = args->as_object();
      add("tool.started", event_data(s));
    } else if (e.kind == entry_kind::tool_result) {
      auto outcome = decode_tool_outcome(p, "payload");
      tool_finished_event f{wanted, std::string(string_field(e.refs, "tool_call_id").value_or("")),
                            std::string(string_field(p, "name").value_or("")),
                            outcome ? *outcome : tool_outcome{json::value(nullptr)}};
      add("tool.finished", event_data(f));
    } else if (e.kind == entry_kind::error) {
      auto err = decode_error_info(json::value(p), "payload");
      ended = reply{wanted, err ? *err : error_info::of("unknown", "an unreadable error entry"), {}, 0};
    }
  }
  if (ended) {
    out.result = turn_result{*ended, entries.size(), false};
    auto [name, data] = final_event(*out.result);
    add(std::move(name), data);
  }
  return out;
}

namespace {

// The request id of the conversation's last question: among its last
// messages, read by the messages' index, more of them until one is a user's.
std::optional<std::string> last_request_id(conversation_store& conversations, const std::string& conversation_id) {
  for (std::size_t limit = 8;; limit *= 8) {
    auto messages = conversations.history(conversation_id, limit);
    if (!messages) return std::nullopt;
    for (auto it = messages->rbegin(); it != messages->rend(); ++it)
      if (string_field(it->payload, "role") == "user") {
        auto id = string_field(it->refs, "request_id");
        return id ? std::optional<std::string>(*id) : std::nullopt;
      }
    if (messages->size() < limit) return std::nullopt;
  }
}

}  // namespace

std::optional<replayed_turn> stored_turn(const store_handle& store, const std::string& conversation_id, turn_ids ids) {
  if (ids.request_id.empty()) {
    auto last = last_request_id(*store.conversations, conversation_id);
    if (!last) return std::nullopt;
    ids.request_id = std::move(*last);
  }
  auto entries = store.threads->request_entries(ids.thread_id, ids.request_id);
  if (!entries) return std::nullopt;
  return replay_turn(*entries, std::move(ids));
}

std::shared_ptr<turn> finished_turn(const replayed_turn& r, turn_ids ids) {
  ids.content = r.content;
  auto t = std::make_shared<turn>(std::move(ids));
  for (std::size_t i = 0; i + 1 < r.events.size(); ++i) t->push(r.events[i].name, json::parse(r.events[i].data));
  t->finish(*r.result, r.events.back().name, json::parse(r.events.back().data));
  return t;
}

}  // namespace troupe::serve
