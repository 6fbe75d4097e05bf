#pragma once
// Conversations tie a user's chat on some platform (cli, web_chat, telegram,
// whatsapp, …) to one persistent thread, as a bot front end needs: the same
// (user, platform, chat) always finds the same thread until the
// conversation is archived. Kept in the same database as the threads, so
// that a conversation and its thread are deleted together and a commit to
// the thread moves the conversation's last_message_at in the same
// transaction.

#include "runtime/store/thread_store.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct conversation_key {
  std::string user_id;
  std::string platform;             // "cli", "web_chat", "telegram", …
  std::string platform_identifier;  // the chat's id on that platform
};

struct conversation {
  std::string id;
  std::string user_id;
  std::string platform;
  std::string platform_identifier;
  std::string thread_id;  // chosen when the conversation is created, never changed
  std::string title;      // the start of the first user message, until set otherwise
  boost::json::object metadata;
  std::int64_t created_at = 0;  // Unix milliseconds
  std::int64_t updated_at = 0;
  std::int64_t last_message_at = 0;  // 0 until the thread has a message
  bool archived = false;

  friend bool operator==(const conversation&, const conversation&) = default;
};

boost::json::value to_json(const conversation& c);

struct conversation_totals {
  std::size_t entries = 0;
  std::size_t messages = 0;
  std::size_t user_messages = 0;
  std::size_t assistant_messages = 0;
  std::size_t tool_calls = 0;
  std::int64_t duration_ms = 0;  // first entry to last

  friend bool operator==(const conversation_totals&, const conversation_totals&) = default;
};

boost::json::value to_json(const conversation_totals& t);

conversation_totals totals_of(const thread_view& t);

struct conversation_trace {
  conversation about;
  thread log;  // every entry; empty while the conversation has none
  conversation_totals totals;
};

// What a commit's new entries change in the conversation that owns the
// thread: one function so that every store moves it the same way.
struct conversation_touch {
  std::optional<std::int64_t> last_message_at;  // the newest new message's time
  std::optional<std::string> title;             // from the first user message, for an untitled conversation
};
conversation_touch touch_from(entry_range new_entries);

store_error conversation_not_found(const std::string& conversation_id);

// A trace from a conversation and the store its thread is in: the part of
// trace() every store shares.
stored<conversation_trace> trace_of(stored<conversation> found, thread_store& threads);

class conversation_store {
 public:
  virtual ~conversation_store() = default;

  // The active conversation for the key, created (with a fresh thread id) if
  // there is none. Concurrent callers with one key get the same conversation.
  virtual stored<conversation> get_or_create_conversation(const conversation_key& key) = 0;
  virtual stored<conversation> find_conversation(const std::string& conversation_id) = 0;
  // The last `limit` messages of the conversation's thread, oldest first.
  virtual stored<std::vector<entry>> history(const std::string& conversation_id, std::size_t limit) = 0;
  virtual stored<conversation_trace> trace(const std::string& conversation_id) = 0;
  // The user's conversations that are not archived, newest last_message_at
  // first (then newest created).
  virtual stored<std::vector<conversation>> list_conversations(const std::string& user_id, std::size_t limit,
                                                               std::size_t offset) = 0;
  // Archived conversations stay readable; the key then opens a new one.
  virtual stored<conversation> archive_conversation(const std::string& conversation_id) = 0;
  // Replaces the conversation's metadata (a server keeps which agent
  // answers it there) and returns the conversation as it is now.
  virtual stored<conversation> set_conversation_metadata(const std::string& conversation_id,
                                                         const boost::json::object& metadata) = 0;
  // Sets metadata[key] = value unless the key is set already, in one atomic
  // step (of two servers claiming at once, one wins), and returns the
  // conversation as it is now: its metadata[key] says who holds the key.
  // A server binds a conversation to the agent that answers it this way.
  virtual stored<conversation> claim_conversation_metadata(const std::string& conversation_id, const std::string& key,
                                                           const boost::json::value& value) = 0;
  // Removes the conversation with its thread and every entry.
  virtual stored<void> delete_conversation(const std::string& conversation_id) = 0;
};

}  // namespace troupe
