#include "runtime/sqlite_thread_store.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <sqlite3.h>

#include <stdexcept>

namespace troupe {

namespace {

// A prepared statement that finalizes itself.
class statement {
 public:
  statement(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) s_ = nullptr;
  }
  ~statement() { sqlite3_finalize(s_); }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  explicit operator bool() const { return s_ != nullptr; }
  sqlite3_stmt* get() const { return s_; }
  void bind(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(s_, i, v); }
  int step() { return sqlite3_step(s_); }
  std::int64_t int64(int col) const { return sqlite3_column_int64(s_, col); }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(s_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(s_, col)))
             : std::string();
  }

 private:
  sqlite3_stmt* s_ = nullptr;
};

store_error io_error(sqlite3* db, const std::string& what) {
  return store_error{"io", what + ": " + sqlite3_errmsg(db)};
}

bool exec(sqlite3* db, const char* sql) { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK; }

constexpr const char* schema_v1 = R"(
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
)";

}  // namespace

sqlite_thread_store::sqlite_thread_store(const std::string& path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error("cannot open the thread store " + path + ": " + why);
  }
  sqlite3_busy_timeout(db_, 5000);
  exec(db_, "PRAGMA journal_mode=WAL");
  exec(db_, "PRAGMA synchronous=NORMAL");
  exec(db_, "PRAGMA foreign_keys=ON");

  // Migrations, by the file's user_version.
  int version = 0;
  {
    statement s(db_, "PRAGMA user_version");
    if (s && s.step() == SQLITE_ROW) version = static_cast<int>(s.int64(0));
  }
  if (version > schema_version) {
    sqlite3_close(db_);
    throw std::runtime_error("the thread store " + path + " has schema version " + std::to_string(version) +
                             ", newer than this troupe's " + std::to_string(schema_version));
  }
  if (version < 1) {
    if (!exec(db_, "BEGIN IMMEDIATE") || !exec(db_, schema_v1) || !exec(db_, "PRAGMA user_version = 1") ||
        !exec(db_, "COMMIT")) {
      const std::string why = sqlite3_errmsg(db_);
      sqlite3_close(db_);
      throw std::runtime_error("cannot create the schema of " + path + ": " + why);
    }
  }
}

sqlite_thread_store::~sqlite_thread_store() { sqlite3_close(db_); }

stored<thread> sqlite_thread_store::load(const std::string& thread_id) {
  std::lock_guard lock(mutex_);
  statement head(db_, "SELECT rev, created_at, updated_at, metadata FROM threads WHERE id = ?");
  if (!head) return io_error(db_, "load " + thread_id);
  head.bind(1, thread_id);
  const int rc = head.step();
  if (rc == SQLITE_DONE) return store_error{"not_found", "no thread " + thread_id};
  if (rc != SQLITE_ROW) return io_error(db_, "load " + thread_id);

  boost::system::error_code ec;
  boost::json::value metadata = boost::json::parse(head.text(3), ec);
  if (ec || !metadata.is_object()) return store_error{"corrupt", "thread " + thread_id + ": its metadata is not a JSON object"};

  statement rows(db_, "SELECT seq, id, at, kind, payload, refs FROM entries WHERE thread_id = ? ORDER BY seq");
  if (!rows) return io_error(db_, "load " + thread_id);
  rows.bind(1, thread_id);
  std::vector<entry> entries;
  int step;
  while ((step = rows.step()) == SQLITE_ROW) {
    entry e;
    e.seq = static_cast<std::uint64_t>(rows.int64(0));
    e.id = rows.text(1);
    e.at = rows.int64(2);
    e.kind = rows.text(3);
    boost::json::value payload = boost::json::parse(rows.text(4), ec);
    boost::json::value refs = ec ? boost::json::value() : boost::json::parse(rows.text(5), ec);
    if (ec || !payload.is_object() || !refs.is_object())
      return store_error{"corrupt", "thread " + thread_id + ": entry " + std::to_string(e.seq) + " is not valid JSON"};
    e.payload = std::move(payload.as_object());
    e.refs = std::move(refs.as_object());
    entries.push_back(std::move(e));
  }
  if (step != SQLITE_DONE) return io_error(db_, "load " + thread_id);
  auto t = thread::restore(thread_id, static_cast<std::uint64_t>(head.int64(0)), head.int64(1), head.int64(2),
                           std::move(metadata.as_object()), std::move(entries));
  if (!t) return store_error{"corrupt", "thread " + thread_id + ": " + t.error().describe()};
  return std::move(*t);
}

stored<std::uint64_t> sqlite_thread_store::append(const thread_view& t, std::uint64_t expected_rev) {
  std::lock_guard lock(mutex_);
  if (!exec(db_, "BEGIN IMMEDIATE")) return io_error(db_, "append to " + t.id());
  auto fail = [&](store_error e) -> stored<std::uint64_t> {
    exec(db_, "ROLLBACK");
    return e;
  };

  std::uint64_t stored_rev = 0, stored_size = 0;
  {
    statement s(db_, "SELECT rev, size FROM threads WHERE id = ?");
    if (!s) return fail(io_error(db_, "append to " + t.id()));
    s.bind(1, t.id());
    const int rc = s.step();
    if (rc == SQLITE_ROW) {
      stored_rev = static_cast<std::uint64_t>(s.int64(0));
      stored_size = static_cast<std::uint64_t>(s.int64(1));
    } else if (rc != SQLITE_DONE) {
      return fail(io_error(db_, "append to " + t.id()));
    }
  }
  if (stored_rev != expected_rev)
    return fail(store_error{"conflict", "thread " + t.id() + " is at rev " + std::to_string(stored_rev) + ", not " +
                                            std::to_string(expected_rev)});
  if (t.size() < stored_size)
    return fail(store_error{"conflict", "thread " + t.id() + " has fewer entries than the stored one"});

  {
    statement ins(db_, "INSERT INTO entries (thread_id, seq, id, at, kind, payload, refs) VALUES (?, ?, ?, ?, ?, ?, ?)");
    if (!ins) return fail(io_error(db_, "append to " + t.id()));
    for (const entry& e : t.slice(stored_size, t.size())) {
      sqlite3_reset(ins.get());
      ins.bind(1, t.id());
      ins.bind(2, static_cast<std::int64_t>(e.seq));
      ins.bind(3, e.id);
      ins.bind(4, e.at);
      ins.bind(5, e.kind);
      ins.bind(6, boost::json::serialize(e.payload));
      ins.bind(7, boost::json::serialize(e.refs));
      if (ins.step() != SQLITE_DONE) return fail(io_error(db_, "append to " + t.id()));
    }
  }
  {
    statement up(db_,
                 "INSERT INTO threads (id, rev, size, created_at, updated_at, metadata) VALUES (?, ?, ?, ?, ?, ?) "
                 "ON CONFLICT(id) DO UPDATE SET rev = excluded.rev, size = excluded.size, "
                 "updated_at = excluded.updated_at, metadata = excluded.metadata");
    if (!up) return fail(io_error(db_, "append to " + t.id()));
    up.bind(1, t.id());
    up.bind(2, static_cast<std::int64_t>(t.rev()));
    up.bind(3, static_cast<std::int64_t>(t.size()));
    up.bind(4, t.created_at());
    up.bind(5, t.updated_at());
    up.bind(6, boost::json::serialize(t.metadata()));
    if (up.step() != SQLITE_DONE) return fail(io_error(db_, "append to " + t.id()));
  }
  if (!exec(db_, "COMMIT")) return fail(io_error(db_, "commit to " + t.id()));
  return t.rev();
}

std::vector<std::string> sqlite_thread_store::list() {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  statement s(db_, "SELECT id FROM threads ORDER BY id");
  while (s && s.step() == SQLITE_ROW) out.push_back(s.text(0));
  return out;
}

bool sqlite_thread_store::remove(const std::string& thread_id) {
  std::lock_guard lock(mutex_);
  if (!exec(db_, "BEGIN IMMEDIATE")) return false;
  statement e(db_, "DELETE FROM entries WHERE thread_id = ?");
  statement t(db_, "DELETE FROM threads WHERE id = ?");
  if (!e || !t) {
    exec(db_, "ROLLBACK");
    return false;
  }
  e.bind(1, thread_id);
  t.bind(1, thread_id);
  const bool ok = e.step() == SQLITE_DONE && t.step() == SQLITE_DONE;
  const bool existed = ok && sqlite3_changes(db_) > 0;
  exec(db_, ok ? "COMMIT" : "ROLLBACK");
  return existed;
}

}  // namespace troupe
