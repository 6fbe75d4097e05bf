// A SQLite file written by the entry code before entries were typed in
// memory (tests/fixtures/entries_v0.sqlite, commit 8b378c3) loads unchanged,
// and written again by today's code gives the same rows, byte for byte.

#include "runtime/store/sqlite/sqlite_store.hpp"
#include "support/fixtures.hpp"
#include "support/store_backends.hpp"
#include "thread/thread_json.hpp"

#include <sqlite3.h>
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

using namespace troupe;
using namespace troupe::testing;

namespace {

// Every entry row of a file, as text.
std::vector<std::string> entry_rows(const std::string& path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT seq, id, at, kind, payload, refs FROM entries ORDER BY seq", -1, &s,
                             nullptr) == SQLITE_OK);
  std::vector<std::string> rows;
  while (sqlite3_step(s) == SQLITE_ROW) {
    std::string row;
    for (int c = 0; c < 6; ++c) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, c));
      row += std::string(text ? text : "") + "|";
    }
    rows.push_back(row);
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return rows;
}

}  // namespace

TEST_CASE("a SQLite file written before entries were typed loads and writes back unchanged") {
  // A copy: opening the file may migrate it or leave a WAL beside it.
  const auto copy = std::filesystem::temp_directory_path() / ("troupe-entries-v0-" + unique_suffix() + ".db");
  std::filesystem::copy_file(std::string(TROUPE_FIXTURES_DIR) + "/entries_v0.sqlite", copy);
  std::string expected = fixture("entries_v0.json");
  while (!expected.empty() && expected.back() == '\n') expected.pop_back();

  sqlite_backend written;
  {
    sqlite_store old_file(copy.string());
    auto loaded = old_file.load("fixture-thread");
    REQUIRE(loaded.has_value());

    SECTION("it loads as the thread it was") { CHECK(boost::json::serialize(to_json(*loaded)) == expected); }

    SECTION("written to a new file, its rows are the rows it was read from") {
      REQUIRE(written.store->append(*loaded, 0).has_value());
      written.store.reset();
      const auto before = entry_rows(copy.string());
      REQUIRE(before.size() == 23);
      CHECK(entry_rows(written.path.string()) == before);
    }
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(copy.string() + suffix);
}
