// One conformance suite for every thread_store.

#include "runtime/memory_thread_store.hpp"
#include "runtime/sqlite_thread_store.hpp"
#include "support/catch_decoded.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <unistd.h>

using namespace troupe;
namespace json = boost::json;

namespace {

struct memory_backend {
  memory_thread_store store;
  thread_store& get() { return store; }
};

struct sqlite_backend {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("troupe-store-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".db");
  std::unique_ptr<sqlite_thread_store> store = std::make_unique<sqlite_thread_store>(path.string());
  thread_store& get() { return *store; }
  // Closes the file and opens it again, as a restarted process would.
  void reopen() {
    store.reset();
    store = std::make_unique<sqlite_thread_store>(path.string());
  }
  ~sqlite_backend() {
    store.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  }
  static inline int counter = 0;
};

entry_draft note(int n, std::string text = "") {
  return {"note", {{"n", n}, {"text", text}}, {{"request_id", "r" + std::to_string(n)}}};
}

}  // namespace

TEMPLATE_TEST_CASE("a thread store keeps what was committed and refuses stale writers", "[store]", memory_backend,
                   sqlite_backend) {
  TestType backend;
  thread_store& store = backend.get();
  sequential_ids ids;
  thread t("t1", 5, json::object{{"user", "u1"}});
  t.append(note(1, "h\xC3\xA9llo \xF0\x9F\x98\x80 \"quoted\""), 10, ids);

  SECTION("a thread it never saw is not found") { CHECK(store.load("t1").error().type == "not_found"); }

  REQUIRE(store.append(t, 0));
  SECTION("a committed thread loads as it was") {
    auto loaded = store.load("t1");
    REQUIRE(loaded);
    CHECK(loaded->size() == 1);
    CHECK(loaded->rev() == 1);
    CHECK(loaded->created_at() == 5);
    CHECK(loaded->updated_at() == 10);
    CHECK(loaded->metadata().at("user") == "u1");
    CHECK(*loaded->at_seq(0) == *t.at_seq(0));
  }
  SECTION("later commits add only the new entries") {
    t.append({note(2), note(3)}, 11, ids);
    CHECK(*store.append(t, 1) == 3);
    auto loaded = store.load("t1");
    REQUIRE(loaded);
    CHECK(loaded->size() == 3);
    CHECK(loaded->last()->payload.at("n") == 3);
    CHECK(loaded->rev() == 3);
  }
  SECTION("a writer with a stale rev gets a conflict and nothing is written") {
    t.append(note(2), 11, ids);
    auto r = store.append(t, 0);
    REQUIRE(!r);
    CHECK(r.error().type == "conflict");
    CHECK(store.load("t1")->size() == 1);
  }
  SECTION("a loaded thread continues its numbering, and commits on top") {
    auto loaded = store.load("t1");
    REQUIRE(loaded);
    loaded->append(note(2), 12, ids);
    CHECK(loaded->last()->seq == 1);
    CHECK(store.append(*loaded, 1));
    CHECK(store.load("t1")->size() == 2);
  }
  SECTION("list and remove") {
    thread other("t0");
    other.append(note(9), 1, ids);
    REQUIRE(store.append(other, 0));
    CHECK(store.list() == std::vector<std::string>{"t0", "t1"});
    CHECK(store.remove("t1"));
    CHECK(!store.remove("t1"));
    CHECK(store.list() == std::vector<std::string>{"t0"});
    CHECK(store.load("t1").error().type == "not_found");
  }
}

TEST_CASE("the SQLite store survives a reopen, as after a restart") {
  sqlite_backend backend;
  sequential_ids ids;
  thread t("t1", 1);
  for (int i = 0; i < 50; ++i) {
    const std::uint64_t rev = t.rev();
    t.append(note(i), i, ids);
    REQUIRE(backend.get().append(t, rev));
  }
  backend.reopen();
  auto loaded = backend.get().load("t1");
  REQUIRE(loaded);
  CHECK(loaded->size() == 50);
  CHECK(loaded->rev() == 50);
  for (std::uint64_t i = 0; i < 50; ++i) CHECK(loaded->at_seq(i)->payload.at("n") == static_cast<std::int64_t>(i));
}

TEST_CASE("the SQLite store refuses a file it cannot use, with the reason") {
  CHECK_THROWS_WITH(sqlite_thread_store("/nonexistent-directory/troupe.db"), Catch::Contains("cannot open"));
}
