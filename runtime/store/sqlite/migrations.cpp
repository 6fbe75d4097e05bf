#include "runtime/store/sqlite/detail/migrations.hpp"

#include <iterator>
#include <stdexcept>

namespace troupe::sqlite {

namespace {

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
    // 3: leases, one row per thread ever leased (thread_lease.hpp); a
    // released lease keeps its epoch, with expires_at 0.
    R"(
  CREATE TABLE leases (
    thread_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;
)",
    // 4: entries kept in the order they were committed, found by an index on
    // (thread_id, seq). Clustered by thread (WITHOUT ROWID, up to 3), a group
    // commit of agents on thousands of threads wrote a different leaf page
    // per commit, and with them most of the file at every transaction; now
    // the rows of one transaction share the pages at the table's end and
    // only the index, a few dozen bytes per entry, is written at random.
    // Reading a thread back costs a page per entry when its commits were far
    // apart, as in PostgreSQL's heap.
    R"(
  CREATE TABLE entries_in_commit_order (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    refs TEXT NOT NULL
  );
  INSERT INTO entries_in_commit_order (thread_id, seq, id, at, kind, payload, refs)
    SELECT thread_id, seq, id, at, kind, payload, refs FROM entries ORDER BY thread_id, seq;
  DROP TABLE entries;
  ALTER TABLE entries_in_commit_order RENAME TO entries;
  CREATE UNIQUE INDEX entries_by_thread ON entries (thread_id, seq);
  CREATE INDEX entries_messages ON entries (thread_id, seq) WHERE kind = 'message';
)",
    // 5: a request's entries found by its id (thread_store::request_entries:
    // a retried request, a replayed turn), without reading the thread. The
    // expression is the one the query names, word for word, so that SQLite
    // uses the index.
    R"(
  CREATE INDEX entries_by_request ON entries (thread_id, json_extract(refs, '$.request_id'), seq);
)",
    // 6: the approval requests, by the agent that asked (open_pauses: a
    // runtime started again finds the calls whose deadlines it must keep,
    // without reading every thread). Partial: approval requests are rare.
    R"(
  CREATE INDEX entries_approvals ON entries (json_extract(payload, '$.agent'), thread_id, seq)
    WHERE kind = 'approval_request';
)",
};
static_assert(std::size(migrations) == schema_version);

}  // namespace

void migrate(connection& c, const std::string& path) {
  // Each step reads the version inside its own write transaction: processes
  // that open a new file at once wait for each other, and each migration
  // runs once.
  for (;;) {
    auto fail = [&](const std::string& what) {
      const std::string why = sqlite3_errmsg(c.db());
      c.exec("ROLLBACK");
      throw std::runtime_error("cannot " + what + " " + path + ": " + why);
    };
    if (!c.exec("BEGIN IMMEDIATE")) fail("lock");
    int version = 0;
    {
      statement s(c, "PRAGMA user_version");
      if (!s || s.step() != SQLITE_ROW) fail("read the schema version of");
      version = static_cast<int>(s.int64(0));
    }
    if (version > schema_version) {
      c.exec("ROLLBACK");
      throw std::runtime_error("the store " + path + " has schema version " + std::to_string(version) +
                               ", newer than this troupe's " + std::to_string(schema_version));
    }
    if (version == schema_version) {
      if (!c.exec("COMMIT")) fail("finish opening");
      return;
    }
    const std::string bump = "PRAGMA user_version = " + std::to_string(version + 1);
    if (!c.exec(migrations[version]) || !c.exec(bump.c_str()) || !c.exec("COMMIT"))
      fail("migrate to schema version " + std::to_string(version + 1) + ":");
  }
}

}  // namespace troupe::sqlite
