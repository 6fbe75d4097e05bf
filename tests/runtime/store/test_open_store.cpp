// Opening a store by URI: each scheme gives its store, and a URI that
// names none, or a store that cannot be opened, is a typed error that says
// what is wrong.

#include "runtime/store/memory_store.hpp"
#include "runtime/store/open_store.hpp"
#include "runtime/store/postgres/postgres_store.hpp"
#include "runtime/store/sqlite/sqlite_store.hpp"
#include "support/store_cases.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::testing;

namespace {

// Both faces of a handle are one store, of the type the URI names.
template <class Store>
bool is_one(const store_handle& h) {
  auto* threads = dynamic_cast<Store*>(h.threads.get());
  return threads && threads == dynamic_cast<Store*>(h.conversations.get());
}

}  // namespace

TEST_CASE("open_store opens the store a URI names") {
  SECTION("memory: is a memory store, and so is no URI without a fallback") {
    auto named = open_store("memory:");
    REQUIRE(named.has_value());
    CHECK(is_one<memory_store>(*named));
    auto none = open_store("");
    REQUIRE(none.has_value());
    CHECK(is_one<memory_store>(*none));
  }
  SECTION("an empty URI takes the fallback") {
    auto fallen = open_store("", "memory:");
    REQUIRE(fallen.has_value());
    CHECK(is_one<memory_store>(*fallen));
  }
  SECTION("sqlite:PATH is that file, its directory created") {
    const auto dir = std::filesystem::temp_directory_path() / ("troupe-open-" + unique_suffix());
    const auto path = dir / "nested" / "troupe.db";
    {
      auto opened = open_store("sqlite:" + path.string());
      REQUIRE(opened.has_value());
      CHECK(is_one<sqlite_store>(*opened));
      thread t("t1", 1);
      sequential_ids ids;
      commit(*opened->threads, t, {note(1)}, 2, ids);
    }
    auto again = open_store("", "sqlite:" + path.string());
    REQUIRE(again.has_value());
    CHECK(again->threads->load("t1").has_value());
    again = store_handle{};
    std::filesystem::remove_all(dir);
  }
  SECTION("sqlite:PATH?sync=full is the file PATH, the option not part of its name") {
    const auto dir = std::filesystem::temp_directory_path() / ("troupe-open-" + unique_suffix());
    const auto path = dir / "synced.db";
    {
      auto opened = open_store("sqlite:" + path.string() + "?sync=full");
      REQUIRE(opened.has_value());
      thread t("t1", 1);
      sequential_ids ids;
      commit(*opened->threads, t, {note(1)}, 2, ids);
    }
    CHECK(std::filesystem::exists(path));
    std::filesystem::remove_all(dir);
  }
  SECTION("postgres:// and postgresql:// are the server they name") {
    postgres_backend server;
    REQUIRE_BACKEND(server);
    auto opened = open_store(server.uri());
    REQUIRE(opened.has_value());
    CHECK(is_one<postgres_store>(*opened));
    const std::string long_scheme = "postgresql://" + server.uri().substr(server.uri().find("://") + 3);
    auto also = open_store(long_scheme);
    REQUIRE(also.has_value());
    CHECK(is_one<postgres_store>(*also));
  }
}

TEST_CASE("open_store says why a URI gives no store") {
  SECTION("an unknown scheme is invalid, and the message lists the known ones") {
    auto r = open_store("mysql://x");
    REQUIRE(!r.has_value());
    CHECK(r.error().type == "invalid");
    CHECK_THAT(r.error().message, Catch::Contains("unknown store mysql://x") && Catch::Contains("sqlite:PATH"));
  }
  SECTION("sqlite: without a path is invalid") {
    auto r = open_store("sqlite:");
    REQUIRE(!r.has_value());
    CHECK(r.error().type == "invalid");
    CHECK_THAT(r.error().message, Catch::Contains("give a path"));
  }
  SECTION("an unknown SQLite option is invalid") {
    auto r = open_store("sqlite:/tmp/x.db?sync=sometimes");
    REQUIRE(!r.has_value());
    CHECK(r.error().type == "invalid");
    CHECK_THAT(r.error().message, Catch::Contains("sync=full"));
  }
  SECTION("a SQLite file that cannot be opened is io, with SQLite's reason") {
    auto r = open_store("sqlite:/proc/troupe-cannot-be-here/troupe.db");
    REQUIRE(!r.has_value());
    CHECK(r.error().type == "io");
    CHECK_THAT(r.error().message, Catch::Contains("cannot open the store"));
  }
  SECTION("a PostgreSQL server that does not answer is io, with libpq's reason") {
    auto r = open_store("postgres://troupe@127.0.0.1:1/x?connect_timeout=2");
    REQUIRE(!r.has_value());
    CHECK(r.error().type == "io");
    CHECK_THAT(r.error().message, Catch::Contains("cannot connect to PostgreSQL"));
  }
}
