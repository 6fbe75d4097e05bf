// What only the SQLite store does: its file, its migrations, its reader
// connections and its group commit, seen through the store.

#include "support/store_cases.hpp"

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <thread>

using namespace troupe;
using namespace troupe::testing;

TEST_CASE("the SQLite store refuses a file it cannot use, with the reason") {
  CHECK_THROWS_WITH(sqlite_store("/nonexistent-directory/troupe.db"), Catch::Contains("cannot open"));
}

TEST_CASE("a SQLite read that cannot open a reader connection is an io error, not an exception") {
  sqlite_backend backend;
  // The file goes away under the open store: the writer keeps its handle,
  // but a reader opened now finds nothing to open.
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(backend.path.string() + suffix);
  auto loaded = backend.store->load("t1");
  REQUIRE(!loaded.has_value());
  CHECK(loaded.error().type == "io");
  CHECK_THAT(loaded.error().message, Catch::Contains("cannot open the store " + backend.path.filename().string()));
  // Named by its name only: the error may reach a client of troupe serve.
  CHECK_THAT(loaded.error().message, !Catch::Contains(backend.path.parent_path().string()));
  auto found = backend.store->find_conversation("conv-1");
  REQUIRE(!found.has_value());
  CHECK(found.error().type == "io");
  CHECK(backend.store->list().empty());
}

// A process paused or stuck inside a write transaction holds the file's
// write lock: every writer on the file waits, then fails. The error must
// say which file and what to do, without the path a serve client must not see.
TEST_CASE("a SQLite file another process holds locked fails commits with an error naming the file and PostgreSQL") {
  sqlite_backend backend(sqlite_options{.busy_timeout = std::chrono::milliseconds(100)});
  sqlite3* other = nullptr;
  REQUIRE(sqlite3_open(backend.path.string().c_str(), &other) == SQLITE_OK);
  REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);

  sequential_ids ids;
  thread t("t1", 1);
  t.append(note(1), 1, ids);
  auto r = backend.threads().append(t, 0);
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().type == "io");
  CHECK_THAT(r.error().message, Catch::Contains("the store file " + backend.path.filename().string()));
  CHECK_THAT(r.error().message, Catch::Contains("database is locked"));
  CHECK_THAT(r.error().message, Catch::Contains("use PostgreSQL"));
  CHECK_THAT(r.error().message, !Catch::Contains(backend.path.parent_path().string()));
}

TEST_CASE("the SQLite store batches concurrent commits into shared transactions") {
  sqlite_backend backend;
  // Another connection holds the write lock, so the first commit's
  // transaction waits (within the busy timeout) while the others queue.
  sqlite3* other = nullptr;
  REQUIRE(sqlite3_open(backend.path.c_str(), &other) == SQLITE_OK);
  REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);

  constexpr int writers = 8;
  std::vector<std::thread> pool;
  std::atomic<int> failures{0};
  for (int w = 0; w < writers; ++w)
    pool.emplace_back([&, w] {
      sequential_ids ids;
      thread t("w" + std::to_string(w), 1);
      t.append(note(w), w, ids);
      if (!backend.store->append(t, 0)) ++failures;
    });
  while (backend.store->stats().in_flight < writers) std::this_thread::yield();  // every commit has arrived
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  for (auto& p : pool) p.join();

  CHECK(failures == 0);
  const auto stats = backend.store->stats();
  CHECK(stats.commits == writers);
  CHECK(stats.in_flight == 0);
  // The first transaction carries whoever had arrived when it began; the
  // next carries all the rest.
  CHECK(stats.transactions <= 2);
  for (int w = 0; w < writers; ++w) CHECK(backend.store->load("w" + std::to_string(w))->size() == 1);
}

TEST_CASE("the SQLite store migrates a version-1 file and keeps its threads") {
  // A file as troupe wrote it before conversations existed.
  const auto path = std::filesystem::temp_directory_path() / ("troupe-v1-" + unique_suffix() + ".db");
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db,
                         "CREATE TABLE threads (id TEXT PRIMARY KEY, rev INTEGER NOT NULL, size INTEGER NOT NULL, "
                         "created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, metadata TEXT NOT NULL);"
                         "CREATE TABLE entries (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL, "
                         "at INTEGER NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, refs TEXT NOT NULL, "
                         "PRIMARY KEY (thread_id, seq)) WITHOUT ROWID;"
                         "INSERT INTO threads VALUES ('old', 1, 1, 5, 6, '{}');"
                         "INSERT INTO entries VALUES ('old', 0, 'e0', 6, 'note', '{\"n\":1}', '{}');"
                         "PRAGMA user_version = 1;",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  {
    sqlite_store store(path.string());
    auto old = store.load("old");
    REQUIRE(old);
    CHECK(old->at_seq(0)->payload.at("n") == 1);
    CHECK(store.get_or_create_conversation({"u", "cli", "x"}));
    REQUIRE(store.append(*old, 1).has_value());
    auto again = store.load("old");
    REQUIRE(again);
    CHECK(again->size() == 1);
  }
  // Entries moved to a table in commit order (version 4) keep (thread_id, seq) unique.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* version = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &version, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(version) == SQLITE_ROW);
  CHECK(sqlite3_column_int(version, 0) == sqlite_store::schema_version);
  sqlite3_finalize(version);
  CHECK(sqlite3_exec(db, "INSERT INTO entries VALUES ('old', 0, 'again', 7, 'note', '{}', '{}')", nullptr, nullptr,
                     nullptr) == SQLITE_CONSTRAINT);
  // A request's entries are found by an index (version 5), as request_entries() asks for them.
  sqlite3_stmt* plan = nullptr;
  REQUIRE(sqlite3_prepare_v2(db,
                             "EXPLAIN QUERY PLAN SELECT seq FROM entries WHERE thread_id = 'old' AND "
                             "json_extract(refs, '$.request_id') = 'r1' ORDER BY seq",
                             -1, &plan, nullptr) == SQLITE_OK);
  std::string steps;
  while (sqlite3_step(plan) == SQLITE_ROW) steps += reinterpret_cast<const char*>(sqlite3_column_text(plan, 3));
  sqlite3_finalize(plan);
  CHECK_THAT(steps, Catch::Contains("USING INDEX entries_by_request"));
  sqlite3_close(db);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
}

TEST_CASE("a stored thread holding bytes that are not UTF-8 loads mended, and the store says so once") {
  sqlite_backend backend;
  sequential_ids ids;
  thread t("t1", 1);
  commit(*backend.store, t, {said("user", "cafe au lait"), note(1, "plain")}, 1, ids);
  // Written by something else (troupe writes no such bytes): a Latin-1 é in
  // the message, a lone continuation byte in the note's refs.
  sqlite3* other = nullptr;
  REQUIRE(sqlite3_open(backend.path.c_str(), &other) == SQLITE_OK);
  REQUIRE(sqlite3_exec(other,
                       "UPDATE entries SET payload = replace(payload, 'cafe', 'caf' || CAST(X'E9' AS TEXT)) "
                       "WHERE seq = 0;"
                       "UPDATE entries SET refs = replace(refs, 'r1', 'r' || CAST(X'80' AS TEXT)) WHERE seq = 1",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(other);
  std::vector<std::string> said_of_threads;
  backend.store->set_repair_report([&](const std::string& thread_id, const std::string& what) {
    said_of_threads.push_back(thread_id + ": " + what);
  });

  auto loaded = backend.store->load("t1");
  REQUIRE(loaded.has_value());
  CHECK(loaded->size() == 2);
  CHECK(loaded->at_seq(0)->payload.at("content") == "caf\xEF\xBF\xBD au lait");
  CHECK(loaded->at_seq(1)->refs.at("request_id") == "r\xEF\xBF\xBD");
  REQUIRE(said_of_threads.size() == 1);
  CHECK_THAT(said_of_threads[0], Catch::StartsWith("t1: 2 stored records hold bytes that are not UTF-8"));

  SECTION("said once, however often the thread loads") {
    REQUIRE(backend.store->load("t1").has_value());
    CHECK(said_of_threads.size() == 1);
  }
  SECTION("the thread goes on: what is appended to it commits and loads") {
    thread more(*loaded);
    commit(*backend.store, more, {note(2, "after")}, 2, ids);
    auto again = backend.store->load("t1");
    REQUIRE(again.has_value());
    CHECK(again->size() == 3);
    CHECK(again->at_seq(2)->payload.at("text") == "after");
  }
}
