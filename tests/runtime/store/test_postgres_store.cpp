// What only the PostgreSQL store does: getting over a connection the server
// dropped. Skipped, visibly, without a server.

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
