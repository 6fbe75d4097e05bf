// The conversation_store part of the SQLite store.

#include "runtime/store/sqlite/sqlite_store.hpp"

#include "json/json_parse.hpp"
#include "json/json_text.hpp"
#include "runtime/clock.hpp"
#include "runtime/store/sqlite/detail/connection.hpp"
#include "runtime/store/sqlite/detail/reader_pool.hpp"
#include "runtime/store/sqlite/detail/rows.hpp"

#include <algorithm>

namespace troupe {

namespace json = boost::json;
using sqlite::connection;
using sqlite::statement;

namespace {

const std::string conversation_columns =
    "id, user_id, platform, platform_identifier, thread_id, title, metadata, created_at, updated_at, "
    "last_message_at, archived";

stored<conversation> read_conversation(const statement& s) {
  conversation c;
  c.id = s.text(0);
  c.user_id = s.text(1);
  c.platform = s.text(2);
  c.platform_identifier = s.text(3);
  c.thread_id = s.text(4);
  c.title = s.text(5);
  boost::system::error_code ec;
  json::value metadata = parse_json(s.text(6), ec);
  if (ec || !metadata.is_object())
    return store_error{"corrupt", "conversation " + c.id + ": metadata is not an object"};
  c.metadata = std::move(metadata.as_object());
  c.created_at = s.int64(7);
  c.updated_at = s.int64(8);
  c.last_message_at = s.int64(9);
  c.archived = s.int64(10) != 0;
  return c;
}

stored<conversation> select_conversation(connection& c, const std::string& where,
                                         const std::vector<std::string>& args) {
  statement s(c, "SELECT " + conversation_columns + " FROM conversations WHERE " + where);
  if (!s) return c.io_error("read conversations");
  for (std::size_t i = 0; i < args.size(); ++i) s.bind(static_cast<int>(i + 1), args[i]);
  const int rc = s.step();
  if (rc == SQLITE_DONE) return store_error{"not_found", "no such conversation"};
  if (rc != SQLITE_ROW) return c.io_error("read conversations");
  return read_conversation(s);
}

const std::string active_key = "user_id = ? AND platform = ? AND platform_identifier = ? AND archived = 0";

}  // namespace

stored<conversation> sqlite_store::get_or_create_conversation(const conversation_key& key) {
  const std::vector<std::string> args{key.user_id, key.platform, key.platform_identifier};
  {
    sqlite::reader_pool::reader r(*readers_);
    if (!r) return r.failure();
    auto found = select_conversation(*r, active_key, args);
    if (found || found.error().type != "not_found") return found;
  }
  conversation fresh;
  {
    std::lock_guard lock(ids_mutex_);
    fresh.id = ids_.next("conv");
    fresh.thread_id = ids_.next("thread");
  }
  stored<conversation> out = store_error{"io", "not written"};
  const auto e = write([&](connection& c) -> std::optional<store_error> {
    statement ins(c, "INSERT INTO conversations (" + conversation_columns +
                         ") VALUES (?, ?, ?, ?, ?, '', '{}', ?, ?, 0, 0) "
                         "ON CONFLICT (user_id, platform, platform_identifier) WHERE archived = 0 DO NOTHING");
    if (!ins) return c.io_error("create a conversation");
    ins.bind(1, fresh.id);
    ins.bind(2, key.user_id);
    ins.bind(3, key.platform);
    ins.bind(4, key.platform_identifier);
    ins.bind(5, fresh.thread_id);
    const std::int64_t now = wall_clock_ms();
    ins.bind(6, now);
    ins.bind(7, now);
    if (ins.step() != SQLITE_DONE) return c.io_error("create a conversation");
    out = select_conversation(c, active_key, args);  // ours, or the one a concurrent caller created first
    return out ? std::nullopt : std::optional<store_error>(out.error());
  });
  if (e) return *e;
  return out;
}

stored<conversation> sqlite_store::find_conversation(const std::string& conversation_id) {
  sqlite::reader_pool::reader r(*readers_);
  if (!r) return r.failure();
  auto found = select_conversation(*r, "id = ?", {conversation_id});
  if (!found && found.error().type == "not_found") return conversation_not_found(conversation_id);
  return found;
}

stored<std::vector<entry>> sqlite_store::history(const std::string& conversation_id, std::size_t limit) {
  sqlite::reader_pool::reader r(*readers_);
  if (!r) return r.failure();
  connection& c = *r;
  if (!r.begin()) return c.io_error("history of " + conversation_id);
  auto conv = select_conversation(c, "id = ?", {conversation_id});
  if (!conv) return conv.error().type == "not_found" ? conversation_not_found(conversation_id) : conv.error();
  statement s(c, std::string("SELECT ") + sqlite::entry_columns +
                     " FROM entries WHERE thread_id = ? AND kind = 'message' ORDER BY seq DESC LIMIT ?");
  if (!s) return c.io_error("history of " + conversation_id);
  s.bind(1, conv->thread_id);
  s.bind(2, static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
  std::vector<entry> out;
  std::size_t repaired = 0;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    auto e = sqlite::read_entry(s, conv->thread_id, repaired);
    if (!e) return e.error();
    out.push_back(std::move(*e));
  }
  if (rc != SQLITE_DONE) return c.io_error("history of " + conversation_id);
  if (repaired) report_repair(conv->thread_id, sqlite::repaired_texts(repaired));
  std::reverse(out.begin(), out.end());
  return out;
}

stored<conversation_trace> sqlite_store::trace(const std::string& conversation_id) {
  return trace_of(find_conversation(conversation_id), *this);
}

stored<std::vector<conversation>> sqlite_store::list_conversations(const std::string& user_id, std::size_t limit,
                                                                   std::size_t offset) {
  sqlite::reader_pool::reader r(*readers_);
  if (!r) return r.failure();
  connection& c = *r;
  // rowid is the order conversations were opened in: it orders two whose
  // last messages share a millisecond.
  statement s(c, "SELECT " + conversation_columns +
                     " FROM conversations WHERE user_id = ? AND archived = 0 "
                     "ORDER BY last_message_at DESC, created_at DESC, rowid DESC LIMIT ? OFFSET ?");
  if (!s) return c.io_error("list conversations");
  s.bind(1, user_id);
  s.bind(2, static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
  s.bind(3, static_cast<std::int64_t>(std::min<std::size_t>(offset, INT64_MAX)));
  std::vector<conversation> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    auto conv = read_conversation(s);
    if (!conv) return conv.error();
    out.push_back(std::move(*conv));
  }
  if (rc != SQLITE_DONE) return c.io_error("list conversations");
  return out;
}

stored<conversation> sqlite_store::archive_conversation(const std::string& conversation_id) {
  stored<conversation> out = conversation_not_found(conversation_id);
  const auto e = write([&](connection& c) -> std::optional<store_error> {
    statement s(c, "UPDATE conversations SET archived = 1, updated_at = ? WHERE id = ?");
    if (!s) return c.io_error("archive " + conversation_id);
    s.bind(1, wall_clock_ms());
    s.bind(2, conversation_id);
    if (s.step() != SQLITE_DONE) return c.io_error("archive " + conversation_id);
    out = select_conversation(c, "id = ?", {conversation_id});
    return std::nullopt;
  });
  if (e) return *e;
  if (!out && out.error().type == "not_found") return conversation_not_found(conversation_id);
  return out;
}

stored<conversation> sqlite_store::set_conversation_metadata(const std::string& conversation_id,
                                                             const boost::json::object& metadata) {
  stored<conversation> out = conversation_not_found(conversation_id);
  const auto e = write([&](connection& c) -> std::optional<store_error> {
    statement s(c, "UPDATE conversations SET metadata = ?, updated_at = ? WHERE id = ?");
    if (!s) return c.io_error("set the metadata of " + conversation_id);
    s.bind(1, json_text(metadata));
    s.bind(2, wall_clock_ms());
    s.bind(3, conversation_id);
    if (s.step() != SQLITE_DONE) return c.io_error("set the metadata of " + conversation_id);
    out = select_conversation(c, "id = ?", {conversation_id});
    return std::nullopt;
  });
  if (e) return *e;
  if (!out && out.error().type == "not_found") return conversation_not_found(conversation_id);
  return out;
}

stored<conversation> sqlite_store::claim_conversation_metadata(const std::string& conversation_id,
                                                               const std::string& key,
                                                               const boost::json::value& value) {
  stored<conversation> out = conversation_not_found(conversation_id);
  // Read and written in one write transaction: no other writer comes between.
  const auto e = write([&](connection& c) -> std::optional<store_error> {
    out = select_conversation(c, "id = ?", {conversation_id});
    if (!out || out->metadata.contains(key)) return std::nullopt;
    out->metadata[key] = value;
    out->updated_at = wall_clock_ms();
    statement s(c, "UPDATE conversations SET metadata = ?, updated_at = ? WHERE id = ?");
    if (!s) return c.io_error("claim " + key + " of " + conversation_id);
    s.bind(1, json_text(out->metadata));
    s.bind(2, out->updated_at);
    s.bind(3, conversation_id);
    if (s.step() != SQLITE_DONE) return c.io_error("claim " + key + " of " + conversation_id);
    return std::nullopt;
  });
  if (e) return *e;
  if (!out && out.error().type == "not_found") return conversation_not_found(conversation_id);
  return out;
}

stored<void> sqlite_store::delete_conversation(const std::string& conversation_id) {
  const auto e = write([&](connection& c) -> std::optional<store_error> {
    auto conv = select_conversation(c, "id = ?", {conversation_id});
    if (!conv) return conv.error().type == "not_found" ? conversation_not_found(conversation_id) : conv.error();
    bool existed = false;
    return sqlite::delete_thread(c, conv->thread_id, existed);
  });
  if (e) return *e;
  return {};
}

}  // namespace troupe
