// The conversation_store part of the PostgreSQL store.

#include "runtime/store/postgres/postgres_store.hpp"

#include "json/json_text.hpp"
#include "runtime/clock.hpp"
#include "runtime/store/postgres/detail/connection_pool.hpp"
#include "runtime/store/postgres/detail/rows.hpp"

#include <algorithm>

namespace troupe {

using postgres::conversation_columns;
using postgres::entry_columns;
using lease = postgres::connection_pool::lease;
using postgres::param;
using postgres::read_conversation;
using postgres::read_entry;
using postgres::result;
using postgres::run;

namespace {

stored<conversation> select_conversation(PGconn* c, const std::string& conversation_id) {
  const std::string sql = std::string("SELECT ") + conversation_columns + " FROM conversations WHERE id = $1";
  result r = run(c, sql.c_str(), {conversation_id});
  if (!r.ok()) return r.error(c, "read conversation " + conversation_id);
  if (r.rows() == 0) return conversation_not_found(conversation_id);
  return read_conversation(r, 0);
}

}  // namespace

stored<conversation> postgres_store::get_or_create_conversation(const conversation_key& key) {
  lease l(*pool_);
  if (!l) return l.failure();
  PGconn* c = l.get();
  const std::string find = std::string("SELECT ") + conversation_columns +
                           " FROM conversations WHERE user_id = $1 AND platform = $2 AND platform_identifier = $3 "
                           "AND NOT archived";
  const std::vector<param> args{key.user_id, key.platform, key.platform_identifier};
  for (int attempt = 0; attempt < 2; ++attempt) {
    result r = run(c, find.c_str(), args);
    if (!r.ok()) return r.error(c, "find a conversation");
    if (r.rows() > 0) return read_conversation(r, 0);
    if (attempt == 1) break;
    std::string id, thread_id;
    {
      std::lock_guard lock(ids_mutex_);
      id = ids_.next("conv");
      thread_id = ids_.next("thread");
    }
    const std::string now = std::to_string(wall_clock_ms());
    result ins = run(c,
                     "INSERT INTO conversations (id, user_id, platform, platform_identifier, thread_id, title, "
                     "metadata, created_at, updated_at, last_message_at, archived) "
                     "VALUES ($1, $2, $3, $4, $5, '', '{}', $6, $6, 0, false) "
                     "ON CONFLICT (user_id, platform, platform_identifier) WHERE NOT archived DO NOTHING",
                     {id, key.user_id, key.platform, key.platform_identifier, thread_id, now});
    if (!ins.ok()) return ins.error(c, "create a conversation");
  }
  return store_error{"io", "the conversation was neither found nor created"};
}

stored<conversation> postgres_store::find_conversation(const std::string& conversation_id) {
  return pool_->read([&](PGconn* c) { return select_conversation(c, conversation_id); });
}

stored<std::vector<entry>> postgres_store::history(const std::string& conversation_id, std::size_t limit) {
  return pool_->read([&](PGconn* c) -> stored<std::vector<entry>> {
    auto conv = select_conversation(c, conversation_id);
    if (!conv) return conv.error();
    const std::string sql = std::string("SELECT ") + entry_columns +
                            " FROM entries WHERE thread_id = $1 AND kind = 'message' ORDER BY seq DESC LIMIT $2";
    result r = run(c, sql.c_str(), {conv->thread_id, std::to_string(std::min<std::size_t>(limit, INT64_MAX))});
    if (!r.ok()) return r.error(c, "history of " + conversation_id);
    std::vector<entry> out;
    for (int i = r.rows() - 1; i >= 0; --i) {
      auto e = read_entry(r, i, conv->thread_id);
      if (!e) return e.error();
      out.push_back(std::move(*e));
    }
    return out;
  });
}

stored<conversation_trace> postgres_store::trace(const std::string& conversation_id) {
  return trace_of(find_conversation(conversation_id), *this);
}

stored<std::vector<conversation>> postgres_store::list_conversations(const std::string& user_id, std::size_t limit,
                                                                     std::size_t offset) {
  return pool_->read([&](PGconn* c) -> stored<std::vector<conversation>> {
    const std::string sql = std::string("SELECT ") + conversation_columns +
                            " FROM conversations WHERE user_id = $1 AND NOT archived "
                            "ORDER BY last_message_at DESC, created_at DESC, opened DESC LIMIT $2 OFFSET $3";
    result r = run(c, sql.c_str(),
                   {user_id, std::to_string(std::min<std::size_t>(limit, INT64_MAX)),
                    std::to_string(std::min<std::size_t>(offset, INT64_MAX))});
    if (!r.ok()) return r.error(c, "list conversations");
    std::vector<conversation> out;
    for (int i = 0; i < r.rows(); ++i) {
      auto conv = read_conversation(r, i);
      if (!conv) return conv.error();
      out.push_back(std::move(*conv));
    }
    return out;
  });
}

stored<conversation> postgres_store::archive_conversation(const std::string& conversation_id) {
  lease l(*pool_);
  if (!l) return l.failure();
  PGconn* c = l.get();
  const std::string sql =
      std::string("UPDATE conversations SET archived = true, updated_at = $2 WHERE id = $1 RETURNING ") +
      conversation_columns;
  result r = run(c, sql.c_str(), {conversation_id, std::to_string(wall_clock_ms())});
  if (!r.ok()) return r.error(c, "archive " + conversation_id);
  if (r.rows() == 0) return conversation_not_found(conversation_id);
  return read_conversation(r, 0);
}

stored<conversation> postgres_store::set_conversation_metadata(const std::string& conversation_id,
                                                               const boost::json::object& metadata) {
  lease l(*pool_);
  if (!l) return l.failure();
  PGconn* c = l.get();
  const std::string sql =
      std::string("UPDATE conversations SET metadata = $2::json, updated_at = $3 WHERE id = $1 RETURNING ") +
      conversation_columns;
  result r = run(c, sql.c_str(), {conversation_id, json_text(metadata), std::to_string(wall_clock_ms())});
  if (!r.ok()) return r.error(c, "set the metadata of " + conversation_id);
  if (r.rows() == 0) return conversation_not_found(conversation_id);
  return read_conversation(r, 0);
}

stored<conversation> postgres_store::claim_conversation_metadata(const std::string& conversation_id,
                                                                 const std::string& key,
                                                                 const boost::json::value& value) {
  lease l(*pool_);
  if (!l) return l.failure();
  PGconn* c = l.get();
  // One statement: a claimer that loses the race re-reads the winner's row,
  // finds the key set and updates nothing. (The metadata passes through
  // jsonb to be merged: its keys come back in jsonb's order.)
  const std::string sql = std::string(
                              "UPDATE conversations SET metadata = (metadata::jsonb || jsonb_build_object($2::text, "
                              "$3::jsonb))::json, updated_at = $4 WHERE id = $1 AND NOT (metadata::jsonb ? $2) "
                              "RETURNING ") +
                          conversation_columns;
  result r = run(c, sql.c_str(), {conversation_id, key, json_text(value), std::to_string(wall_clock_ms())});
  if (!r.ok()) return r.error(c, "claim " + key + " of " + conversation_id);
  if (r.rows() == 1) return read_conversation(r, 0);
  return select_conversation(c, conversation_id);  // not there, or the key was held already
}

stored<void> postgres_store::delete_conversation(const std::string& conversation_id) {
  lease l(*pool_);
  if (!l) return l.failure();
  PGconn* c = l.get();
  result r = run(c,
                 "WITH c AS (DELETE FROM conversations WHERE id = $1 RETURNING thread_id), "
                 "e AS (DELETE FROM entries WHERE thread_id IN (SELECT thread_id FROM c)), "
                 "t AS (DELETE FROM threads WHERE id IN (SELECT thread_id FROM c)) "
                 "SELECT count(*) FROM c",
                 {conversation_id});
  if (!r.ok()) return r.error(c, "delete " + conversation_id);
  if (r.int64(0, 0) == 0) return conversation_not_found(conversation_id);
  return {};
}

}  // namespace troupe
