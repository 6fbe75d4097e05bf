// What only the PostgreSQL store does: getting over a connection the server
// dropped, and migrating a database an older troupe left. Skipped, visibly,
// without a server.

#include "runtime/store/postgres/migrations.hpp"
#include "runtime/store/postgres/result.hpp"
#include "support/store_cases.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::testing;

TEST_CASE("the PostgreSQL store gets over a dropped connection") {
  postgres_backend backend;
  REQUIRE_BACKEND(backend);
  sequential_ids ids;
  thread t("t1", 1);
  commit(backend.threads(), t, {note(1)}, 1, ids);

  SECTION("a read is repeated on a fresh connection") {
    backend.drop_connections();
    auto loaded = backend.threads().load("t1");
    REQUIRE(loaded);
    CHECK(loaded->size() == 1);
  }
  SECTION("a commit fails with io, is not repeated, and the next one goes through") {
    backend.drop_connections();
    t.append(note(2), 2, ids);
    auto first = backend.threads().append(t, 1);
    if (!first) {
      CHECK(first.error().type == "io");
      CHECK(backend.threads().append(t, 1));
    }
    CHECK(backend.threads().load("t1")->size() == 2);
  }
}

TEST_CASE("the PostgreSQL store migrates a schema-3 database and keeps its conversations") {
  postgres_backend backend({}, postgres_backend::opening::later);
  REQUIRE_BACKEND(backend);
  // Two conversations as a troupe of schema 3 left them, their last
  // messages in the same millisecond.
  backend.sql([](PGconn* c) {
    postgres::migrate(c, 3);
    postgres::result r = postgres::run(c,
                                       "INSERT INTO conversations (id, user_id, platform, platform_identifier, "
                                       "thread_id, title, metadata, created_at, updated_at, last_message_at, archived) "
                                       "VALUES ('conv-a', 'u1', 'web', 'a', 'thread-a', '', '{}', 5, 5, 9, false), "
                                       "('conv-b', 'u1', 'web', 'b', 'thread-b', '', '{}', 5, 5, 9, false)");
    REQUIRE(r.ok());
  });
  backend.reopen();

  backend.sql([](PGconn* c) {
    postgres::result r = postgres::run(c, "SELECT max(version) FROM troupe_schema");
    REQUIRE(r.ok());
    CHECK(r.text(0, 0) == std::to_string(postgres_store::schema_version));
  });
  auto listed = backend.conversations().list_conversations("u1", 10, 0);
  REQUIRE(listed);
  REQUIRE(listed->size() == 2);
  CHECK((*listed)[0].id == "conv-b");  // opened last
  CHECK((*listed)[1].id == "conv-a");

  sequential_ids ids;
  thread t("thread-a", 1);
  commit(backend.threads(), t, {said("user", "again")}, 10, ids);
  listed = backend.conversations().list_conversations("u1", 10, 0);
  REQUIRE(listed);
  CHECK((*listed)[0].id == "conv-a");
  CHECK((*listed)[0].title == "again");
}
