#include "runtime/store/sqlite/sqlite_store.hpp"

#include "runtime/clock.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace troupe {

namespace json = boost::json;

// A connection with its prepared statements, each prepared once.
class sqlite_store::connection {
 public:
  connection(const std::string& path, int flags) {
    if (sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw std::runtime_error("cannot open the store " + path + ": " + why);
    }
    sqlite3_busy_timeout(db_, 5000);
  }
  ~connection() {
    for (auto& [_, s] : statements_) sqlite3_finalize(s);
    sqlite3_close(db_);
  }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  sqlite3* db() const { return db_; }
  bool exec(const char* sql) { return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) == SQLITE_OK; }
  sqlite3_stmt* prepared(const std::string& sql) {
    auto it = statements_.find(sql);
    if (it != statements_.end()) return it->second;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) return nullptr;
    statements_.emplace(sql, s);
    return s;
  }
  // A statement without results, prepared once: what transactions are made of.
  bool run(const std::string& sql) {
    sqlite3_stmt* s = prepared(sql);
    if (!s) return false;
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE || rc == SQLITE_ROW;
  }
  store_error io_error(const std::string& what) const { return store_error{"io", what + ": " + sqlite3_errmsg(db_)}; }

 private:
  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

namespace {

using connection = sqlite_store::connection;

// One use of a cached statement: bound, stepped, then reset for the next use.
class statement {
 public:
  statement(connection& c, const std::string& sql) : s_(c.prepared(sql)) {}
  ~statement() {
    if (s_) {
      sqlite3_reset(s_);
      sqlite3_clear_bindings(s_);
    }
  }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  explicit operator bool() const { return s_ != nullptr; }
  void bind(int i, std::string_view v) { sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(s_, i, v); }
  int step() { return sqlite3_step(s_); }
  void reset() { sqlite3_reset(s_); }
  std::int64_t int64(int col) const { return sqlite3_column_int64(s_, col); }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(s_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(s_, col)))
             : std::string();
  }

 private:
  sqlite3_stmt* s_ = nullptr;
};

// Each migration takes the file from the version before it to its own.
constexpr const char* migrations[] = {
    // 1: threads and their entries.
    R"(
  CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    rev INTEGER NOT NULL,
    size INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    metadata TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS entries (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    refs TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
  ) WITHOUT ROWID;
)",
    // 2: conversations, and the indexes their queries use.
    R"(
  CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    platform TEXT NOT NULL,
    platform_identifier TEXT NOT NULL,
    thread_id TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    last_message_at INTEGER NOT NULL,
    archived INTEGER NOT NULL
  );
  CREATE UNIQUE INDEX conversations_active_key
    ON conversations (user_id, platform, platform_identifier) WHERE archived = 0;
  CREATE INDEX conversations_by_recency
    ON conversations (user_id, last_message_at DESC, created_at DESC) WHERE archived = 0;
  CREATE INDEX entries_messages ON entries (thread_id, seq) WHERE kind = 'message';
)",
};
static_assert(std::size(migrations) == sqlite_store::schema_version);

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
  json::value metadata = json::parse(s.text(6), ec);
  if (ec || !metadata.is_object()) return store_error{"corrupt", "conversation " + c.id + ": metadata is not an object"};
  c.metadata = std::move(metadata.as_object());
  c.created_at = s.int64(7);
  c.updated_at = s.int64(8);
  c.last_message_at = s.int64(9);
  c.archived = s.int64(10) != 0;
  return c;
}

// Columns: seq, id, at, kind, payload, refs.
stored<entry> read_entry(const statement& s, const std::string& thread_id) {
  entry e;
  e.seq = static_cast<std::uint64_t>(s.int64(0));
  e.id = s.text(1);
  e.at = s.int64(2);
  e.kind = s.text(3);
  boost::system::error_code ec;
  json::value payload = json::parse(s.text(4), ec);
  json::value refs = ec ? json::value() : json::parse(s.text(5), ec);
  if (ec || !payload.is_object() || !refs.is_object())
    return store_error{"corrupt", "thread " + thread_id + ": entry " + std::to_string(e.seq) + " is not valid JSON"};
  e.payload = std::move(payload.as_object());
  e.refs = std::move(refs.as_object());
  e.tokens = estimate_tokens(e.kind, e.payload);
  return e;
}

// An entry as its row: serialised before the commit queues, so that the
// writer's transaction does no JSON work.
struct entry_row {
  const entry* e;
  std::string payload;
  std::string refs;
};

std::vector<entry_row> rows_of(entry_range entries) {
  std::vector<entry_row> rows;
  rows.reserve(entries.size());
  for (const entry& e : entries) rows.push_back({&e, json::serialize(e.payload), json::serialize(e.refs)});
  return rows;
}

}  // namespace

struct sqlite_store::write_job {
  const write_work* work;
  std::optional<store_error> error = std::nullopt;
  bool done = false;
  std::condition_variable wake = {};
};

// A reader connection for one read, returned to the pool afterwards. Reads
// of several statements run in one read transaction, so they see one
// committed state.
class sqlite_store::reader {
 public:
  explicit reader(sqlite_store& s) : store_(s), c_(s.take_reader()) {}
  ~reader() {
    if (in_transaction_) c_->exec("COMMIT");
    store_.give_back(std::move(c_));
  }
  connection& operator*() { return *c_; }
  bool begin() { return in_transaction_ = c_->exec("BEGIN"); }

 private:
  sqlite_store& store_;
  std::unique_ptr<connection> c_;
  bool in_transaction_ = false;
};

sqlite_store::sqlite_store(const std::string& path, sqlite_options options)
    : path_(path), writer_(std::make_unique<connection>(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) {
  connection& c = *writer_;
  c.exec("PRAGMA journal_mode=WAL");
  c.exec(options.sync_every_commit ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");

  int version = 0;
  {
    statement s(c, "PRAGMA user_version");
    if (s && s.step() == SQLITE_ROW) version = static_cast<int>(s.int64(0));
  }
  if (version > schema_version)
    throw std::runtime_error("the store " + path + " has schema version " + std::to_string(version) +
                             ", newer than this troupe's " + std::to_string(schema_version));
  for (; version < schema_version; ++version) {
    const std::string bump = "PRAGMA user_version = " + std::to_string(version + 1);
    if (!c.exec("BEGIN IMMEDIATE") || !c.exec(migrations[version]) || !c.exec(bump.c_str()) || !c.exec("COMMIT")) {
      const std::string why = sqlite3_errmsg(c.db());
      c.exec("ROLLBACK");
      throw std::runtime_error("cannot migrate " + path + " to schema version " + std::to_string(version + 1) + ": " +
                               why);
    }
  }
}

sqlite_store::~sqlite_store() = default;

std::unique_ptr<connection> sqlite_store::take_reader() {
  {
    std::lock_guard lock(readers_mutex_);
    if (!idle_readers_.empty()) {
      auto c = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return c;
    }
  }
  return std::make_unique<connection>(path_, SQLITE_OPEN_READONLY);
}

void sqlite_store::give_back(std::unique_ptr<connection> c) {
  std::lock_guard lock(readers_mutex_);
  idle_readers_.push_back(std::move(c));
}

// --- group commit ---------------------------------------------------------

std::optional<store_error> sqlite_store::write(const write_work& work) {
  write_job job{&work};
  std::unique_lock lock(commit_mutex_);
  queued_.push_back(&job);
  ++stats_.in_flight;
  // Wake only when this job is done, or when it is first in line and no
  // transaction is running: a hundred waiting writers are not all woken
  // for every transaction.
  job.wake.wait(lock, [&] { return job.done || (!leader_active_ && queued_.front() == &job); });
  if (job.done) return job.error;

  // Lead one transaction: everything queued so far, this job included.
  leader_active_ = true;
  std::vector<write_job*> batch;
  batch.swap(queued_);
  lock.unlock();
  run_batch(batch);
  lock.lock();
  ++stats_.transactions;
  stats_.commits += batch.size();
  stats_.in_flight -= batch.size();
  leader_active_ = false;
  for (write_job* j : batch) {
    j->done = true;
    if (j != &job) j->wake.notify_one();
  }
  if (!queued_.empty()) queued_.front()->wake.notify_one();  // the next leader
  return job.error;
}

void sqlite_store::run_batch(const std::vector<write_job*>& batch) {
  connection& c = *writer_;
  if (!c.run("BEGIN IMMEDIATE")) {
    const store_error e = c.io_error("begin a transaction");
    for (write_job* j : batch) j->error = e;
    return;
  }
  // Alone in its transaction, a job needs no savepoint: its failure rolls
  // the transaction back.
  const bool shared = batch.size() > 1;
  std::optional<store_error> lost;  // set when the whole transaction is gone
  for (write_job* j : batch) {
    if (lost) {
      j->error = lost;
      continue;
    }
    if (shared) c.run("SAVEPOINT job");
    j->error = (*j->work)(c);
    if (sqlite3_get_autocommit(c.db())) {  // e.g. SQLITE_FULL: SQLite rolled it all back
      lost = j->error ? *j->error : c.io_error("the transaction was rolled back");
      j->error = lost;
      continue;
    }
    if (!shared) {
      if (j->error) lost = j->error;  // rolled back below
      continue;
    }
    if (j->error) c.run("ROLLBACK TO job");
    c.run("RELEASE job");
  }
  if (!lost && c.run("COMMIT")) return;
  if (!lost) lost = c.io_error("commit");
  if (!sqlite3_get_autocommit(c.db())) c.run("ROLLBACK");
  for (write_job* j : batch)
    if (!j->error) j->error = lost;
}

sqlite_store::commit_stats sqlite_store::stats() const {
  std::lock_guard lock(commit_mutex_);
  return stats_;
}

// --- threads --------------------------------------------------------------

stored<thread> sqlite_store::load(const std::string& thread_id) {
  reader r(*this);
  connection& c = *r;
  if (!r.begin()) return c.io_error("load " + thread_id);
  statement head(c, "SELECT rev, created_at, updated_at, metadata FROM threads WHERE id = ?");
  if (!head) return c.io_error("load " + thread_id);
  head.bind(1, thread_id);
  const int rc = head.step();
  if (rc == SQLITE_DONE) return store_error{"not_found", "no thread " + thread_id};
  if (rc != SQLITE_ROW) return c.io_error("load " + thread_id);

  boost::system::error_code ec;
  json::value metadata = json::parse(head.text(3), ec);
  if (ec || !metadata.is_object()) return store_error{"corrupt", "thread " + thread_id + ": its metadata is not a JSON object"};

  statement rows(c, "SELECT seq, id, at, kind, payload, refs FROM entries WHERE thread_id = ? ORDER BY seq");
  if (!rows) return c.io_error("load " + thread_id);
  rows.bind(1, thread_id);
  std::vector<entry> entries;
  int step;
  while ((step = rows.step()) == SQLITE_ROW) {
    auto e = read_entry(rows, thread_id);
    if (!e) return e.error();
    entries.push_back(std::move(*e));
  }
  if (step != SQLITE_DONE) return c.io_error("load " + thread_id);
  auto t = thread::restore(thread_id, static_cast<std::uint64_t>(head.int64(0)), head.int64(1), head.int64(2),
                           std::move(metadata.as_object()), std::move(entries));
  if (!t) return store_error{"corrupt", "thread " + thread_id + ": " + t.error().describe()};
  return std::move(*t);
}

stored<std::uint64_t> sqlite_store::append(const thread_view& t, std::uint64_t expected_rev) {
  // rev grows by one per entry, so the writer's new entries are its last
  // (rev - expected_rev); serialise those outside the transaction. The
  // stored size is checked inside it all the same.
  const std::uint64_t grown = t.rev() >= expected_rev ? t.rev() - expected_rev : 0;
  const std::size_t first_new = grown <= t.size() ? t.size() - grown : 0;
  std::vector<entry_row> rows = rows_of(t.slice(first_new, t.size()));
  const conversation_touch touch = touch_from(t.slice(first_new, t.size()));
  const std::string metadata = json::serialize(t.metadata());

  const write_work work = [&](connection& c) -> std::optional<store_error> {
    const std::string what = "append to " + t.id();
    std::uint64_t stored_rev = 0, stored_size = 0;
    {
      statement s(c, "SELECT rev, size FROM threads WHERE id = ?");
      if (!s) return c.io_error(what);
      s.bind(1, t.id());
      const int rc = s.step();
      if (rc == SQLITE_ROW) {
        stored_rev = static_cast<std::uint64_t>(s.int64(0));
        stored_size = static_cast<std::uint64_t>(s.int64(1));
      } else if (rc != SQLITE_DONE) {
        return c.io_error(what);
      }
    }
    if (stored_rev != expected_rev)
      return store_error{"conflict", "thread " + t.id() + " is at rev " + std::to_string(stored_rev) + ", not " +
                                         std::to_string(expected_rev)};
    if (t.size() < stored_size)
      return store_error{"conflict", "thread " + t.id() + " has fewer entries than the stored one"};
    if (stored_size != first_new) rows = rows_of(t.slice(stored_size, t.size()));  // a thread restored with rev > size

    statement ins(c, "INSERT INTO entries (thread_id, seq, id, at, kind, payload, refs) VALUES (?, ?, ?, ?, ?, ?, ?)");
    if (!ins) return c.io_error(what);
    for (const entry_row& row : rows) {
      ins.bind(1, t.id());
      ins.bind(2, static_cast<std::int64_t>(row.e->seq));
      ins.bind(3, row.e->id);
      ins.bind(4, row.e->at);
      ins.bind(5, row.e->kind);
      ins.bind(6, row.payload);
      ins.bind(7, row.refs);
      if (ins.step() != SQLITE_DONE) return c.io_error(what);
      ins.reset();
    }
    statement up(c,
                 "INSERT INTO threads (id, rev, size, created_at, updated_at, metadata) VALUES (?, ?, ?, ?, ?, ?) "
                 "ON CONFLICT(id) DO UPDATE SET rev = excluded.rev, size = excluded.size, "
                 "updated_at = excluded.updated_at, metadata = excluded.metadata");
    if (!up) return c.io_error(what);
    up.bind(1, t.id());
    up.bind(2, static_cast<std::int64_t>(t.rev()));
    up.bind(3, static_cast<std::int64_t>(t.size()));
    up.bind(4, t.created_at());
    up.bind(5, t.updated_at());
    up.bind(6, metadata);
    if (up.step() != SQLITE_DONE) return c.io_error(what);

    if (touch.last_message_at || touch.title) {
      statement conv(c,
                     "UPDATE conversations SET last_message_at = max(last_message_at, ?1), "
                     "title = CASE WHEN title = '' THEN ?2 ELSE title END, updated_at = ?3 WHERE thread_id = ?4");
      if (!conv) return c.io_error(what);
      conv.bind(1, touch.last_message_at.value_or(0));
      conv.bind(2, touch.title.value_or(""));
      conv.bind(3, wall_clock_ms());
      conv.bind(4, t.id());
      if (conv.step() != SQLITE_DONE) return c.io_error(what);
    }
    return std::nullopt;
  };
  if (auto e = write(work)) return *e;
  return t.rev();
}

std::vector<std::string> sqlite_store::list() {
  reader r(*this);
  std::vector<std::string> out;
  statement s(*r, "SELECT id FROM threads ORDER BY id");
  while (s && s.step() == SQLITE_ROW) out.push_back(s.text(0));
  return out;
}

namespace {

// Deletes a thread, its entries and the conversation that owns it.
std::optional<store_error> delete_thread(connection& c, const std::string& thread_id, bool& existed) {
  statement e(c, "DELETE FROM entries WHERE thread_id = ?");
  statement t(c, "DELETE FROM threads WHERE id = ?");
  statement conv(c, "DELETE FROM conversations WHERE thread_id = ?");
  if (!e || !t || !conv) return c.io_error("delete " + thread_id);
  e.bind(1, thread_id);
  t.bind(1, thread_id);
  conv.bind(1, thread_id);
  if (e.step() != SQLITE_DONE || t.step() != SQLITE_DONE) return c.io_error("delete " + thread_id);
  existed = sqlite3_changes(c.db()) > 0;
  if (conv.step() != SQLITE_DONE) return c.io_error("delete " + thread_id);
  return std::nullopt;
}

}  // namespace

bool sqlite_store::remove(const std::string& thread_id) {
  bool existed = false;
  const auto e = write([&](connection& c) { return delete_thread(c, thread_id, existed); });
  return !e && existed;
}

// --- conversations --------------------------------------------------------

namespace {

stored<conversation> select_conversation(connection& c, const std::string& where, const std::vector<std::string>& args) {
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
    reader r(*this);
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
  reader r(*this);
  auto found = select_conversation(*r, "id = ?", {conversation_id});
  if (!found && found.error().type == "not_found") return conversation_not_found(conversation_id);
  return found;
}

stored<std::vector<entry>> sqlite_store::history(const std::string& conversation_id, std::size_t limit) {
  reader r(*this);
  connection& c = *r;
  if (!r.begin()) return c.io_error("history of " + conversation_id);
  auto conv = select_conversation(c, "id = ?", {conversation_id});
  if (!conv) return conv.error().type == "not_found" ? conversation_not_found(conversation_id) : conv.error();
  statement s(c,
              "SELECT seq, id, at, kind, payload, refs FROM entries WHERE thread_id = ? AND kind = 'message' "
              "ORDER BY seq DESC LIMIT ?");
  if (!s) return c.io_error("history of " + conversation_id);
  s.bind(1, conv->thread_id);
  s.bind(2, static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
  std::vector<entry> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    auto e = read_entry(s, conv->thread_id);
    if (!e) return e.error();
    out.push_back(std::move(*e));
  }
  if (rc != SQLITE_DONE) return c.io_error("history of " + conversation_id);
  std::reverse(out.begin(), out.end());
  return out;
}

stored<conversation_trace> sqlite_store::trace(const std::string& conversation_id) {
  return trace_of(find_conversation(conversation_id), *this);
}

stored<std::vector<conversation>> sqlite_store::list_conversations(const std::string& user_id, std::size_t limit,
                                                                   std::size_t offset) {
  reader r(*this);
  connection& c = *r;
  statement s(c, "SELECT " + conversation_columns +
                     " FROM conversations WHERE user_id = ? AND archived = 0 "
                     "ORDER BY last_message_at DESC, created_at DESC, id LIMIT ? OFFSET ?");
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

stored<void> sqlite_store::delete_conversation(const std::string& conversation_id) {
  const auto e = write([&](connection& c) -> std::optional<store_error> {
    auto conv = select_conversation(c, "id = ?", {conversation_id});
    if (!conv) return conv.error().type == "not_found" ? conversation_not_found(conversation_id) : conv.error();
    bool existed = false;
    return delete_thread(c, conv->thread_id, existed);
  });
  if (e) return *e;
  return {};
}

}  // namespace troupe
