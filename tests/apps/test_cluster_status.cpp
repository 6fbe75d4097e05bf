// troupe cluster status, against a cluster of two nodes kept in a throwaway
// PostgreSQL. Skipped, visibly, without a server.

#include "runtime/cluster/cluster_membership.hpp"
#include "support/cluster_nodes.hpp"
#include "support/store_backends.hpp"
#include "support/store_cases.hpp"
#include "support/troupe_command.hpp"

#include <boost/json.hpp>

#include <catch2/catch.hpp>

#include <set>
#include <thread>

using namespace troupe;
using namespace troupe::testing;
using namespace std::chrono_literals;

namespace {

cluster_options node(const postgres_backend& db, const std::string& id) {
  cluster_options o = test_node(db.uri(), id, 4);
  o.address = "127.0.0.1:" + std::string(id == "a" ? "7001" : "7002");
  o.build_id = "b1";
  return o;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace

TEST_CASE("troupe cluster status lists the nodes and who holds each shard") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  cluster_membership a(node(db, "a"));
  cluster_membership b(node(db, "b"));
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (a.shards_held().size() != 2 || b.shards_held().size() != 2) {
    REQUIRE(std::chrono::steady_clock::now() < until);
    std::this_thread::sleep_for(5ms);
  }

  SECTION("as JSON") {
    const run_result r = run_troupe("cluster status --json --cluster " + quoted(db.uri()));
    REQUIRE(r.exit_code == 0);
    const boost::json::object out = boost::json::parse(r.out).as_object();
    CHECK(out.at("shards").as_int64() == 4);
    const auto& nodes = out.at("nodes").as_array();
    REQUIRE(nodes.size() == 2);
    CHECK(nodes[0].at("id").as_string() == "a");
    CHECK(nodes[0].at("address").as_string() == "127.0.0.1:7001");
    CHECK(nodes[0].at("state").as_string() == "active");
    CHECK(nodes[0].at("shards_held").as_int64() == 2);
    CHECK(nodes[1].at("build_id").as_string() == "b1");
    const auto& shards = out.at("shard_table").as_array();
    REQUIRE(shards.size() == 4);
    std::set<std::string> holders;
    for (const auto& s : shards) {
      holders.insert(std::string(s.at("holder").as_string()));
      CHECK(s.at("epoch").as_int64() >= 1);
      CHECK(s.at("lease_left_ms").as_int64() > 0);
    }
    CHECK(holders == std::set<std::string>{"a", "b"});
  }
  SECTION("as text") {
    const run_result r = run_troupe("cluster status --cluster " + quoted(db.uri()));
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("2 node(s), 4 shards"));
    CHECK_THAT(r.out, Catch::Contains("127.0.0.1:7002"));
    CHECK_THAT(r.out, Catch::Contains("active"));
  }
}

TEST_CASE("troupe cluster status on a database without a cluster says so and fails") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  const run_result r = run_troupe("cluster status --cluster " + quoted(db.uri()), true);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("no cluster"));
}
