// The PostgreSQL store's connection pool: a slot is never lost, whoever
// throws while holding it, or the callers waiting for one wait forever.

#include "runtime/store/postgres/detail/connection_pool.hpp"
#include "runtime/store/postgres/detail/result.hpp"
#include "support/detached.hpp"
#include "support/store_cases.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

using namespace troupe;
using namespace troupe::postgres;
using namespace troupe::testing;

TEST_CASE("a connection that throws while it opens gives its slot back") {
  // One slot. Opening throws the first time, as an allocation failure
  // would, and is refused after that: no server is needed.
  auto opens = std::make_shared<std::atomic<int>>(0);
  auto pool = std::make_shared<connection_pool>(1, [opens](std::string& why) -> PGconn* {
    if ((*opens)++ == 0) throw std::runtime_error("out of memory");
    why = "connection refused";
    return nullptr;
  });
  CHECK_THROWS_WITH(connection_pool::lease(*pool), "out of memory");

  auto next = on_detached_thread([pool] { return connection_pool::lease(*pool).failure().message; });
  REQUIRE(finishes(next));
  CHECK(next.get() == "connection refused");
  CHECK(*opens == 2);
}

TEST_CASE("a holder that throws hands its connection to the next caller") {
  postgres_backend backend;
  REQUIRE_BACKEND(backend);
  auto pool = std::make_shared<connection_pool>(1, connect_to(backend.uri()));
  CHECK_THROWS_WITH(pool->read([](PGconn*) -> stored<int> { throw std::runtime_error("a bug in a read"); }),
                    "a bug in a read");

  auto next = on_detached_thread([pool] {
    return pool->read([](PGconn* c) -> stored<int> {
      postgres::result r = run(c, "SELECT 1");
      if (!r.ok()) return r.error(c, "select");
      return static_cast<int>(r.int64(0, 0));
    });
  });
  REQUIRE(finishes(next));
  auto one = next.get();
  REQUIRE(one.has_value());
  CHECK(*one == 1);
}

TEST_CASE("a connection made again by PQreset keeps its statement_timeout") {
  postgres_backend backend;
  REQUIRE_BACKEND(backend);
  std::string why;
  PGconn* c = connect_to(backend.uri(), std::chrono::seconds(10), std::chrono::milliseconds(100))(why);
  REQUIRE(c);
  PQreset(c);  // what checkout does with a connection the server dropped
  REQUIRE(PQstatus(c) == CONNECTION_OK);
  postgres::result r = run(c, "SELECT pg_sleep(3)");
  CHECK_FALSE(r.ok());
  CHECK(r.error(c, "sleep").type == "timeout");
  // The conninfo's own options (the test schema's search_path) survive too.
  postgres::result path = run(c, "SHOW search_path");
  REQUIRE(path.ok());
  CHECK(path.text(0, 0).rfind("troupe_test_", 0) == 0);
  PQfinish(c);
}

TEST_CASE("a conninfo without options of its own keeps those of PGOPTIONS beside the store's") {
  postgres_backend backend;  // for the skip; the server's own URI sets no options
  REQUIRE_BACKEND(backend);
  ::setenv("PGOPTIONS", "-c work_mem=1234kB", 1);
  std::string why;
  PGconn* c = connect_to(std::getenv("TROUPE_TEST_POSTGRES"))(why);
  ::unsetenv("PGOPTIONS");
  REQUIRE(c);
  for (const auto& [setting, value] : {std::pair{"work_mem", "1234kB"}, std::pair{"statement_timeout", "30s"}}) {
    postgres::result r = run(c, (std::string("SHOW ") + setting).c_str());
    REQUIRE(r.ok());
    CHECK(r.text(0, 0) == value);
  }
  PQfinish(c);
}
