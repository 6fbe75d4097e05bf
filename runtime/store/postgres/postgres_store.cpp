#include "runtime/store/postgres/postgres_store.hpp"

#include "runtime/clock.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <libpq-fe.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace troupe {

namespace json = boost::json;

bool is_postgres_uri(const std::string& uri) {
  return uri.rfind("postgres://", 0) == 0 || uri.rfind("postgresql://", 0) == 0;
}

namespace {

// Each migration takes the database from the version before it to its own.
constexpr const char* migrations[] = {
    R"(
  CREATE TABLE threads (
    id text PRIMARY KEY,
    rev bigint NOT NULL,
    size bigint NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    metadata json NOT NULL
  );
  CREATE TABLE entries (
    thread_id text NOT NULL,
    seq bigint NOT NULL,
    id text NOT NULL,
    at bigint NOT NULL,
    kind text NOT NULL,
    payload json NOT NULL,
    refs json NOT NULL,
    PRIMARY KEY (thread_id, seq)
  );
  CREATE INDEX entries_messages ON entries (thread_id, seq) WHERE kind = 'message';
  CREATE TABLE conversations (
    id text PRIMARY KEY,
    user_id text NOT NULL,
    platform text NOT NULL,
    platform_identifier text NOT NULL,
    thread_id text NOT NULL UNIQUE,
    title text NOT NULL,
    metadata json NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    last_message_at bigint NOT NULL,
    archived boolean NOT NULL
  );
  CREATE UNIQUE INDEX conversations_active_key
    ON conversations (user_id, platform, platform_identifier) WHERE NOT archived;
  CREATE INDEX conversations_by_recency
    ON conversations (user_id, last_message_at DESC, created_at DESC) WHERE NOT archived;

  -- One commit in one round trip. Locks the thread's row only. Returns
  -- 'ok'; 'conflict' with the stored rev; or 'resend' with the stored size
  -- when the caller sent entries from the wrong seq.
  CREATE FUNCTION troupe_append(p_id text, p_expected bigint, p_rev bigint, p_size bigint, p_created bigint,
                                p_updated bigint, p_metadata json, p_first bigint, p_entries json,
                                p_last_message_at bigint, p_title text, p_now bigint)
  RETURNS TABLE (status text, stored_rev bigint, stored_size bigint)
  LANGUAGE plpgsql AS $$
  DECLARE
    cur_rev bigint;
    cur_size bigint;
  BEGIN
    SELECT t.rev, t.size INTO cur_rev, cur_size FROM threads t WHERE t.id = p_id FOR UPDATE;
    IF NOT FOUND THEN
      IF p_expected <> 0 THEN
        RETURN QUERY SELECT 'conflict'::text, 0::bigint, 0::bigint;
        RETURN;
      END IF;
      INSERT INTO threads AS t (id, rev, size, created_at, updated_at, metadata)
        VALUES (p_id, 0, 0, p_created, p_updated, p_metadata) ON CONFLICT (id) DO NOTHING;
      SELECT t.rev, t.size INTO cur_rev, cur_size FROM threads t WHERE t.id = p_id FOR UPDATE;
    END IF;
    IF cur_rev <> p_expected OR p_size < cur_size THEN
      RETURN QUERY SELECT 'conflict'::text, cur_rev, cur_size;
      RETURN;
    END IF;
    IF cur_size <> p_first THEN
      RETURN QUERY SELECT 'resend'::text, cur_rev, cur_size;
      RETURN;
    END IF;
    INSERT INTO entries (thread_id, seq, id, at, kind, payload, refs)
      SELECT p_id, e.seq, e.id, e.at, e.kind, e.payload::json, e.refs::json
      FROM json_to_recordset(p_entries) AS e(seq bigint, id text, at bigint, kind text, payload text, refs text);
    UPDATE threads t SET rev = p_rev, size = p_size, updated_at = p_updated, metadata = p_metadata
      WHERE t.id = p_id;
    IF p_last_message_at IS NOT NULL OR p_title IS NOT NULL THEN
      UPDATE conversations c
        SET last_message_at = GREATEST(c.last_message_at, COALESCE(p_last_message_at, 0)),
            title = CASE WHEN c.title = '' AND p_title IS NOT NULL THEN p_title ELSE c.title END,
            updated_at = p_now
        WHERE c.thread_id = p_id;
    END IF;
    RETURN QUERY SELECT 'ok'::text, p_rev, p_size;
  END
  $$;
)",
};
static_assert(std::size(migrations) == postgres_store::schema_version);

// Any 64-bit constant of our own: the advisory lock that serialises migrations.
constexpr const char* migration_lock = "SELECT pg_advisory_xact_lock(7423116301)";

using param = std::optional<std::string>;

class result {
 public:
  explicit result(PGresult* r) : r_(r) {}
  ~result() { PQclear(r_); }
  result(result&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
  result(const result&) = delete;
  result& operator=(const result&) = delete;

  bool ok() const {
    const auto s = PQresultStatus(r_);
    return s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK;
  }
  int rows() const { return PQntuples(r_); }
  std::string text(int row, int col) const {
    return std::string(PQgetvalue(r_, row, col), static_cast<std::size_t>(PQgetlength(r_, row, col)));
  }
  std::int64_t int64(int row, int col) const { return std::stoll(PQgetvalue(r_, row, col)); }
  bool boolean(int row, int col) const { return PQgetvalue(r_, row, col)[0] == 't'; }
  std::string affected() const { return PQcmdTuples(r_); }
  // The error as a store_error: unique violations are conflicts; the rest,
  // including a lost connection, are io.
  store_error error(PGconn* c, const std::string& what) const {
    const char* state = r_ ? PQresultErrorField(r_, PG_DIAG_SQLSTATE) : nullptr;
    std::string message = r_ ? PQresultErrorMessage(r_) : "";
    if (message.empty()) message = PQerrorMessage(c);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    if (state && std::string_view(state) == "23505") return store_error{"conflict", what + ": " + message};
    return store_error{"io", what + ": " + message};
  }

 private:
  PGresult* r_;
};

result run(PGconn* c, const char* sql, const std::vector<param>& params = {}) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const param& p : params) values.push_back(p ? p->c_str() : nullptr);
  return result(PQexecParams(c, sql, static_cast<int>(params.size()), nullptr, values.data(), nullptr, nullptr, 0));
}

stored<json::object> parse_object(const std::string& text, const std::string& what) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return store_error{"corrupt", what + " is not a JSON object"};
  return std::move(v.as_object());
}

// Columns: seq, id, at, kind, payload, refs.
constexpr const char* entry_columns = "seq, id, at, kind, payload::text, refs::text";

stored<entry> read_entry(const result& r, int row, const std::string& thread_id) {
  entry e;
  e.seq = static_cast<std::uint64_t>(r.int64(row, 0));
  e.id = r.text(row, 1);
  e.at = r.int64(row, 2);
  e.kind = r.text(row, 3);
  const std::string what = "thread " + thread_id + ": entry " + std::to_string(e.seq);
  auto payload = parse_object(r.text(row, 4), what + " payload");
  if (!payload) return payload.error();
  auto refs = parse_object(r.text(row, 5), what + " refs");
  if (!refs) return refs.error();
  e.payload = std::move(*payload);
  e.refs = std::move(*refs);
  e.tokens = estimate_tokens(e.kind, e.payload);
  return e;
}

constexpr const char* conversation_columns =
    "id, user_id, platform, platform_identifier, thread_id, title, metadata::text, created_at, updated_at, "
    "last_message_at, archived";

stored<conversation> read_conversation(const result& r, int row) {
  conversation c;
  c.id = r.text(row, 0);
  c.user_id = r.text(row, 1);
  c.platform = r.text(row, 2);
  c.platform_identifier = r.text(row, 3);
  c.thread_id = r.text(row, 4);
  c.title = r.text(row, 5);
  auto metadata = parse_object(r.text(row, 6), "conversation " + c.id + " metadata");
  if (!metadata) return metadata.error();
  c.metadata = std::move(*metadata);
  c.created_at = r.int64(row, 7);
  c.updated_at = r.int64(row, 8);
  c.last_message_at = r.int64(row, 9);
  c.archived = r.boolean(row, 10);
  return c;
}

stored<conversation> select_conversation(PGconn* c, const std::string& conversation_id) {
  const std::string sql = std::string("SELECT ") + conversation_columns + " FROM conversations WHERE id = $1";
  result r = run(c, sql.c_str(), {conversation_id});
  if (!r.ok()) return r.error(c, "read conversation " + conversation_id);
  if (r.rows() == 0) return conversation_not_found(conversation_id);
  return read_conversation(r, 0);
}

// The writer's new entries as the JSON array troupe_append expands. Payload
// and refs travel as strings holding their JSON text: json_to_recordset
// would unescape a nested object's strings, and PostgreSQL text cannot hold
// the \u0000 a payload may contain.
std::string entries_json(entry_range entries) {
  std::string out = "[";
  for (const entry& e : entries) {
    if (out.size() > 1) out += ',';
    out += "{\"seq\":" + std::to_string(e.seq) + ",\"id\":" + json::serialize(json::string(e.id)) +
           ",\"at\":" + std::to_string(e.at) + ",\"kind\":" + json::serialize(json::string(e.kind)) +
           ",\"payload\":" + json::serialize(json::string(json::serialize(e.payload))) +
           ",\"refs\":" + json::serialize(json::string(json::serialize(e.refs))) + "}";
  }
  return out + "]";
}

}  // namespace

// A pooled connection for the length of one call.
class postgres_store::lease {
 public:
  explicit lease(postgres_store& s) : store_(s), c_(s.checkout(why_)) {}
  ~lease() {
    if (c_) store_.checkin(c_);
  }
  lease(const lease&) = delete;
  lease& operator=(const lease&) = delete;
  explicit operator bool() const { return c_ != nullptr; }
  PGconn* get() const { return c_; }
  store_error failure() const { return store_error{"io", why_}; }

 private:
  postgres_store& store_;
  std::string why_;
  PGconn* c_;
};

// Runs a read. When it fails because its connection turned out to be
// dropped (a server restart, a failover), it runs once more on a fresh
// connection: a read changes nothing, so repeating it is safe.
template <class F>
auto postgres_store::read(F body) -> decltype(body(nullptr)) {
  for (int attempt = 0;; ++attempt) {
    lease l(*this);
    if (!l) return l.failure();
    auto out = body(l.get());
    if (out || attempt == 1 || PQstatus(l.get()) == CONNECTION_OK) return out;
  }
}

postgres_store::postgres_store(const std::string& conninfo, options o) : conninfo_(conninfo), options_(o) {
  if (options_.pool_size == 0) options_.pool_size = 1;
  std::string why;
  PGconn* c = checkout(why);
  if (!c) throw std::runtime_error("cannot connect to PostgreSQL: " + why);
  auto fail = [&](const std::string& what, const result& r) {
    const std::string message = r.error(c, what).message;
    run(c, "ROLLBACK");
    checkin(c);
    throw std::runtime_error(message);
  };
  {
    result r = run(c, "BEGIN");
    if (!r.ok()) fail("migrate", r);
  }
  for (const char* sql : {migration_lock, "CREATE TABLE IF NOT EXISTS troupe_schema (version integer NOT NULL)"}) {
    result r = run(c, sql);
    if (!r.ok()) fail("migrate", r);
  }
  int version = 0;
  {
    result r = run(c, "SELECT max(version) FROM troupe_schema");
    if (!r.ok()) fail("migrate", r);
    const std::string v = r.rows() == 1 ? r.text(0, 0) : "";
    version = v.empty() ? 0 : std::stoi(v);
  }
  if (version > schema_version) {
    run(c, "ROLLBACK");
    checkin(c);
    throw std::runtime_error("the PostgreSQL store has schema version " + std::to_string(version) +
                             ", newer than this troupe's " + std::to_string(schema_version));
  }
  for (; version < schema_version; ++version) {
    result r(PQexec(c, migrations[version]));  // several statements: the simple query protocol
    if (!r.ok()) fail("migrate to schema version " + std::to_string(version + 1), r);
    result bump = run(c, "INSERT INTO troupe_schema (version) VALUES ($1)", {std::to_string(version + 1)});
    if (!bump.ok()) fail("migrate", bump);
  }
  result r = run(c, "COMMIT");
  if (!r.ok()) fail("migrate", r);
  checkin(c);
}

postgres_store::~postgres_store() {
  for (PGconn* c : idle_) PQfinish(c);
}

// A caller waiting for a connection; served in arrival order, so that under
// load no caller waits much longer than the others.
struct postgres_store::waiter {
  std::condition_variable wake;
  pg_conn* handed = nullptr;
  bool may_open = false;  // a connection was closed: open a new one instead
};

PGconn* postgres_store::checkout(std::string& why) {
  std::unique_lock lock(pool_mutex_);
  PGconn* c = nullptr;
  if (waiters_.empty() && !idle_.empty()) {
    c = idle_.back();
    idle_.pop_back();
  } else if (waiters_.empty() && open_ < options_.pool_size) {
    ++open_;
  } else {
    waiter me;
    waiters_.push_back(&me);
    me.wake.wait(lock, [&] { return me.handed != nullptr || me.may_open; });
    c = me.handed;  // null when handed a slot to open
  }
  lock.unlock();

  if (c) {
    if (PQstatus(c) == CONNECTION_OK) return c;
    PQreset(c);  // the server went away between calls: nothing was in flight, reconnecting is safe
    if (PQstatus(c) == CONNECTION_OK) return c;
    why = std::string("lost the connection to PostgreSQL: ") + PQerrorMessage(c);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    discard(c);
    return nullptr;
  }
  c = PQconnectdb(conninfo_.c_str());
  if (PQstatus(c) == CONNECTION_OK) {
    run(c, "SET client_min_messages = warning");
    return c;
  }
  why = PQerrorMessage(c);
  while (!why.empty() && why.back() == '\n') why.pop_back();
  discard(c);
  return nullptr;
}

void postgres_store::checkin(PGconn* c) {
  if (PQstatus(c) != CONNECTION_OK) {
    discard(c);
    return;
  }
  if (PQtransactionStatus(c) != PQTRANS_IDLE) run(c, "ROLLBACK");
  std::lock_guard lock(pool_mutex_);
  if (!waiters_.empty()) {
    waiter* next = waiters_.front();
    waiters_.pop_front();
    next->handed = c;
    next->wake.notify_one();
    return;
  }
  idle_.push_back(c);
}

void postgres_store::discard(PGconn* c) {
  PQfinish(c);
  std::lock_guard lock(pool_mutex_);
  if (!waiters_.empty()) {  // the slot passes to the next in line, who opens a connection
    waiter* next = waiters_.front();
    waiters_.pop_front();
    next->may_open = true;
    next->wake.notify_one();
    return;
  }
  --open_;
}

// --- threads --------------------------------------------------------------

stored<thread> postgres_store::load(const std::string& thread_id) {
  return read([&](PGconn* c) -> stored<thread> {
    const std::string what = "load " + thread_id;
    // One snapshot for the head and the entries.
    result begin = run(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    if (!begin.ok()) return begin.error(c, what);
    result head = run(c, "SELECT rev, created_at, updated_at, metadata::text FROM threads WHERE id = $1", {thread_id});
    if (!head.ok()) return head.error(c, what);
    if (head.rows() == 0) return store_error{"not_found", "no thread " + thread_id};
    auto metadata = parse_object(head.text(0, 3), "thread " + thread_id + " metadata");
    if (!metadata) return metadata.error();
    const std::string sql = std::string("SELECT ") + entry_columns + " FROM entries WHERE thread_id = $1 ORDER BY seq";
    result rows = run(c, sql.c_str(), {thread_id});
    if (!rows.ok()) return rows.error(c, what);
    run(c, "COMMIT");
    std::vector<entry> entries;
    entries.reserve(static_cast<std::size_t>(rows.rows()));
    for (int i = 0; i < rows.rows(); ++i) {
      auto e = read_entry(rows, i, thread_id);
      if (!e) return e.error();
      entries.push_back(std::move(*e));
    }
    auto t = thread::restore(thread_id, static_cast<std::uint64_t>(head.int64(0, 0)), head.int64(0, 1),
                             head.int64(0, 2), std::move(*metadata), std::move(entries));
    if (!t) return store_error{"corrupt", "thread " + thread_id + ": " + t.error().describe()};
    return std::move(*t);
  });
}

stored<std::uint64_t> postgres_store::append(const thread_view& t, std::uint64_t expected_rev) {
  lease l(*this);
  if (!l) return l.failure();
  PGconn* c = l.get();
  // rev grows by one per entry, so the new entries are the last
  // (rev - expected_rev); the function checks that against the stored size
  // and asks for a resend from the right seq if they differ.
  const std::uint64_t grown = t.rev() >= expected_rev ? t.rev() - expected_rev : 0;
  std::size_t first = grown <= t.size() ? t.size() - grown : 0;
  const std::string metadata = json::serialize(t.metadata());
  for (int attempt = 0; attempt < 2; ++attempt) {
    const entry_range fresh = t.slice(first, t.size());
    const conversation_touch touch = touch_from(fresh);
    result r = run(c, "SELECT status, stored_rev, stored_size FROM troupe_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                   {t.id(), std::to_string(expected_rev), std::to_string(t.rev()), std::to_string(t.size()),
                    std::to_string(t.created_at()), std::to_string(t.updated_at()), metadata, std::to_string(first),
                    entries_json(fresh),
                    touch.last_message_at ? param(std::to_string(*touch.last_message_at)) : std::nullopt,
                    touch.title, std::to_string(wall_clock_ms())});
    if (!r.ok()) return r.error(c, "append to " + t.id());
    const std::string status = r.text(0, 0);
    if (status == "ok") return t.rev();
    if (status == "conflict")
      return store_error{"conflict", "thread " + t.id() + " is at rev " + r.text(0, 1) + ", not " +
                                         std::to_string(expected_rev)};
    first = static_cast<std::size_t>(r.int64(0, 2));  // resend
  }
  return store_error{"conflict", "thread " + t.id() + " changed while it was being written"};
}

std::vector<std::string> postgres_store::list() {
  lease l(*this);
  std::vector<std::string> out;
  if (!l) return out;
  result r = run(l.get(), "SELECT id FROM threads ORDER BY id");
  for (int i = 0; r.ok() && i < r.rows(); ++i) out.push_back(r.text(i, 0));
  return out;
}

bool postgres_store::remove(const std::string& thread_id) {
  lease l(*this);
  if (!l) return false;
  // One statement, so one transaction: entries, the owning conversation and the thread.
  result r = run(l.get(),
                 "WITH e AS (DELETE FROM entries WHERE thread_id = $1), "
                 "c AS (DELETE FROM conversations WHERE thread_id = $1) "
                 "DELETE FROM threads WHERE id = $1",
                 {thread_id});
  return r.ok() && r.affected() != "0";
}

// --- conversations --------------------------------------------------------

stored<conversation> postgres_store::get_or_create_conversation(const conversation_key& key) {
  lease l(*this);
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
  return read([&](PGconn* c) { return select_conversation(c, conversation_id); });
}

stored<std::vector<entry>> postgres_store::history(const std::string& conversation_id, std::size_t limit) {
  return read([&](PGconn* c) -> stored<std::vector<entry>> {
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
  return read([&](PGconn* c) -> stored<std::vector<conversation>> {
    const std::string sql = std::string("SELECT ") + conversation_columns +
                            " FROM conversations WHERE user_id = $1 AND NOT archived "
                            "ORDER BY last_message_at DESC, created_at DESC, id LIMIT $2 OFFSET $3";
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
  lease l(*this);
  if (!l) return l.failure();
  PGconn* c = l.get();
  const std::string sql = std::string("UPDATE conversations SET archived = true, updated_at = $2 WHERE id = $1 RETURNING ") +
                          conversation_columns;
  result r = run(c, sql.c_str(), {conversation_id, std::to_string(wall_clock_ms())});
  if (!r.ok()) return r.error(c, "archive " + conversation_id);
  if (r.rows() == 0) return conversation_not_found(conversation_id);
  return read_conversation(r, 0);
}

stored<void> postgres_store::delete_conversation(const std::string& conversation_id) {
  lease l(*this);
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
