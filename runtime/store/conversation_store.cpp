#include "runtime/store/conversation_store.hpp"

#include "runtime/detail/text.hpp"

namespace troupe {

namespace json = boost::json;

json::value to_json(const conversation& c) {
  return json::object{{"id", c.id},
                      {"user_id", c.user_id},
                      {"platform", c.platform},
                      {"platform_identifier", c.platform_identifier},
                      {"thread_id", c.thread_id},
                      {"title", c.title},
                      {"metadata", c.metadata},
                      {"created_at", c.created_at},
                      {"updated_at", c.updated_at},
                      {"last_message_at", c.last_message_at},
                      {"archived", c.archived}};
}

json::value to_json(const conversation_totals& t) {
  return json::object{{"entries", t.entries},
                      {"messages", t.messages},
                      {"user_messages", t.user_messages},
                      {"assistant_messages", t.assistant_messages},
                      {"tool_calls", t.tool_calls},
                      {"duration_ms", t.duration_ms}};
}

namespace {

std::string_view role_of(const entry& e) { return e.payload.string("role").value_or(""); }

// The first line of a message, cut at a character boundary: what a list of
// conversations shows until someone names it.
std::string title_from(std::string_view text) {
  constexpr std::size_t max_bytes = 80;
  while (!text.empty() && (text.front() == ' ' || text.front() == '\n' || text.front() == '\t')) text.remove_prefix(1);
  return shortened(text.substr(0, text.find('\n')), max_bytes);
}

}  // namespace

conversation_totals totals_of(const thread_view& t) {
  conversation_totals out;
  out.entries = t.size();
  for (const entry& e : t.slice(0, t.size())) {
    if (e.kind == entry_kind::message) {
      ++out.messages;
      const auto role = role_of(e);
      if (role == "user")
        ++out.user_messages;
      else if (role == "assistant")
        ++out.assistant_messages;
    } else if (e.kind == entry_kind::tool_call) {
      ++out.tool_calls;
    }
  }
  if (t.size() > 0) out.duration_ms = t.last()->at - t.at_seq(0)->at;
  return out;
}

conversation_touch touch_from(entry_range new_entries) {
  conversation_touch out;
  for (const entry& e : new_entries) {
    if (e.kind != entry_kind::message) continue;
    out.last_message_at = std::max(out.last_message_at.value_or(e.at), e.at);
    if (!out.title && role_of(e) == "user") {
      const auto content = e.payload.string("content");
      if (content && !content->empty()) out.title = title_from(*content);
    }
  }
  return out;
}

store_error conversation_not_found(const std::string& conversation_id) {
  return store_error{"not_found", "no conversation " + conversation_id};
}

stored<conversation_trace> trace_of(stored<conversation> found, thread_store& threads) {
  if (!found) return found.error();
  auto t = threads.load(found->thread_id);
  if (!t && t.error().type != "not_found") return t.error();
  thread log = t ? std::move(*t) : thread(found->thread_id, found->created_at);  // no entry yet
  const conversation_totals totals = totals_of(log);
  return conversation_trace{std::move(*found), std::move(log), totals};
}

}  // namespace troupe
